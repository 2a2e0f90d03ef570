"""What engines say, in Chinese (merged into aworld_gui/rendering/i18n_zh.py's ZH): the words of
aworld_gui/rendering/engine_text.py's templates, the engines' descriptions and their own settings' help. TRL's own
help of its fields (the config editor's "TRL:" lines) is TRL's documentation and stays as TRL wrote it."""

ZH_ENGINES = {
    # -- engine_text.TEMPLATES: a config's values and their fixes --------------------------------------
    "problems in the config": "个配置问题",
    "must not be empty": "不能为空",
    "must be": "必须是",
    "got": "实际为",
    "is not one of": "不在可选值中:",
    "did you mean": "是否想写",
    "is not a finite number": "不是有限数值",
    "is below its minimum": "低于最小值",
    "is above its maximum": "高于最大值",
    "unknown config key": "未知的配置项",
    "set it, e.g.": "请设置,例如",
    "e.g.": "例如",
    "set": "将",
    "to one of:": "设为以下之一:",
    "use a value between": "请使用此范围内的值:",
    "and": "到",
    "use a value of at least": "请使用不小于此值的数:",
    "use a value of at most": "请使用不大于此值的数:",
    "use a finite number": "请使用有限数值",
    "known keys:": "已知的配置项:",
    "the training set has": "训练集有",
    "usable row(s) but one optimizer step takes": "行可用,但一个优化步需要",
    "prompts": "个提示词",
    ": training would run 0 steps": ":训练将运行 0 步",
    "lower": "请调低",
    "so one step takes at most": ",使一步最多使用",
    "prompt(s), or add rows": "个提示词,或增加数据行",
    # -- engine_text.TEMPLATES: check summaries --------------------------------------------------------
    "on": "使用模型",
    "tools:": "工具:",
    "rows": "行",
    "test": "测试",
    "text": "文本",
    "messages": "对话消息",
    "no answer column": "无答案列",
    "dry run on": "试运行",
    "row(s)": "行",
    "reference": "参考答案",
    "wrong": "错误答案",
    "peak per process": "每个进程的峰值",
    "peak per process of": "每个进程的峰值 / 总",
    "for": "用于",
    "processes of": "个进程 / 总",
    "available RAM": "可用内存",
    "free on each GPU": "每个 GPU 的空闲显存",
    "no CUDA GPU found": "未找到 CUDA GPU",
    "small models only": "仅适合小模型",
    "no rollout backend (vllm or sglang) importable": "无法导入 rollout 后端(vllm 或 sglang)",
    "verl's trainer dependencies are missing": "缺少 verl 训练器的依赖",
    "verl is not installed in": "verl 未安装在",
    "extra": "可选依赖组",
    "on a CUDA machine, in an environment of its own:": "在有 CUDA 的机器上,用独立的环境:",
    ", then": ",然后",
    "see": "见",
    "or set": "或设置",
    "to a Ray cluster that has them": "指向已装好这些依赖的 Ray 集群",
    "not set up": "未安装",
    "setup did not finish": "安装未完成",
    "set up with other versions": "安装的版本不同",
    "run:": "运行:",
    "builds ms-swift's environment in": "在此创建 ms-swift 的环境:",
    "ms-swift's environment": "ms-swift 的环境",
    "is incomplete": "不完整",
    "to a Python that has ms-swift": "指向装有 ms-swift 的 Python",
    # -- the memory estimate's parts (engines/fit/memory_estimate.py) -----------------------------------
    "weights": "权重",
    "gradients": "梯度",
    "optimizer": "优化器",
    "reference model": "参考模型",
    "kv cache": "KV 缓存",
    "logits": "logits",
    "activations": "激活值",
    "runtime": "运行时",
    # -- the engines' descriptions -------------------------------------------------------------------------
    "Hugging Face TRL on this machine (CPU, or one or several CUDA GPUs through accelerate): GRPO and SFT, every "
    "TRL setting, LoRA/QLoRA, tool-using agents": "在本机运行 Hugging Face TRL(CPU,或通过 accelerate 使用一块或多块 CUDA GPU):"
    "GRPO 与 SFT、TRL 的全部设置、LoRA/QLoRA、使用工具的智能体",
    "ms-swift in its own environment (python -m engines setup swift): GRPO via swift rlhf, SFT via swift sft; "
    "several GPUs or nodes through NPROC_PER_NODE / NNODES": "在独立环境中运行 ms-swift(python -m engines setup swift):"
    "GRPO 通过 swift rlhf,SFT 通过 swift sft;通过 NPROC_PER_NODE / NNODES 使用多块 GPU 或多个节点",
    "verl on Ray: GRPO/PPO across GPUs and nodes (vLLM or SGLang rollouts), local or on a cluster": "基于 Ray 的 verl:"
    "跨 GPU 与节点的 GRPO/PPO(vLLM 或 SGLang rollout),本地或集群",
    # -- trl's own settings (engines/trl/config.py) ----------------------------------------------------
    "grpo (reinforcement learning) or sft (supervised fine-tuning)": "grpo(强化学习)或 sft(监督微调)",
    "a local model folder or a Hugging Face hub id found in the local cache; overrides the agent's model (AWorld's "
    "form)": "本地模型文件夹,或本地缓存中的 Hugging Face Hub ID;覆盖智能体的模型(AWorld 的写法)",
    "optimizer steps to train": "训练的优化步数",
    "peak learning rate": "峰值学习率",
    "prompts per device per micro-batch; TRL's per_device_train_batch_size = prompts_per_step × num_generations in "
    "GRPO (TRL counts completions)": "每个设备每个微批次的提示词数;GRPO 中 TRL 的 per_device_train_batch_size = "
    "prompts_per_step × num_generations(TRL 按回答计数)",
    "GRPO: completions sampled per prompt (the group)": "GRPO:每个提示词采样的回答数(即一组)",
    "GRPO: KL coefficient (0 = no reference model)": "GRPO:KL 系数(0 = 不加载参考模型)",
    "tokens per completion (defaults to the agent's max_tokens)": "每个回答的词元数(默认取智能体的 max_tokens)",
    "train LoRA adapters instead of every weight (lora_r, lora_alpha, ...: TRL's ModelConfig)": "训练 LoRA 适配器,"
    "而不是全部权重(lora_r、lora_alpha……:TRL 的 ModelConfig)",
    "training processes on this machine, started through `accelerate launch`; auto = one per visible GPU": "本机上的训练进程数,"
    "通过 `accelerate launch` 启动;auto = 每块可见 GPU 一个",
    "sampling temperature (defaults to the agent's)": "采样温度(默认取智能体的)",
    "nucleus sampling (defaults to the agent's)": "核采样(默认取智能体的)",
    "learning-rate schedule": "学习率调度",
    "learning-rate warmup steps": "学习率预热步数",
    "micro-batches per optimizer step": "每个优化步的微批次数",
    "AdamW weight decay": "AdamW 权重衰减",
    "gradient clipping": "梯度裁剪",
    "random seed": "随机种子",
    "auto (CUDA if present), cpu or cuda (TRL: use_cpu)": "auto(有 CUDA 则用 CUDA)、cpu 或 cuda(TRL:use_cpu)",
    "auto (bf16 on a GPU that has it, else fp32), fp32, bf16 or fp16 (TRL: bf16 / fp16)": "auto(GPU 支持 bf16 时用 bf16,"
    "否则 fp32)、fp32、bf16 或 fp16(TRL:bf16 / fp16)",
    "trade compute for memory on large models": "大模型上以计算换内存",
    "log metrics every N steps": "每 N 步记录一次指标",
    "checkpoint every N steps (and always at the end or on stop)": "每 N 步保存检查点(结束或停止时总会保存)",
    "checkpoints kept": "保留的检查点数",
    "prompt groups written whole to samples.jsonl per step (each: num_generations rows, with advantages)": "每步完整写入 "
    "samples.jsonl 的提示组数(每组 num_generations 行,含优势值)",
    "score the test set with the reward at step 0, every N steps and at the end (0 = at step 0 and the end only); the "
    "engine's evaluation, not TRL's eval loop": "在第 0 步、每 N 步和结束时用奖励给测试集打分(0 = 只在第 0 步和结束时);"
    "这是引擎自己的评估,不是 TRL 的评估循环",
    "test prompts scored per evaluation": "每次评估打分的测试提示词数",
    "a checkpoint folder (of this or another run) to resume": "从中恢复训练的检查点文件夹(本次或其他运行的)",
    "GRPO: turn dropout off (recommended for RL)": "GRPO:关闭 dropout(强化学习推荐)",
    "GRPO: no loss on completions cut at the length limit": "GRPO:被长度上限截断的回答不计损失",
    "how several processes share the work: ddp (each holds the model), or TRL's accelerate presets zero1/zero2/zero3 "
    "(DeepSpeed) and fsdp1/fsdp2 (GPUs only)": "多个进程如何分担工作:ddp(每个进程持有完整模型),或 TRL 的 accelerate 预设 "
    "zero1/zero2/zero3(DeepSpeed)与 fsdp1/fsdp2(仅 GPU)",
    "trackers: tensorboard (always written to the run directory), wandb, mlflow, swanlab — a name or a list": "实验跟踪:"
    "tensorboard(总会写入运行目录)、wandb、mlflow、swanlab — 一个名称或一个列表",
    "project (wandb, swanlab) or experiment (mlflow) name; default aworld-trainer": "项目(wandb、swanlab)或实验(mlflow)"
    "名称;默认 aworld-trainer",
    "online, or offline (wandb/swanlab write locally to sync later; mlflow writes to the run directory)": "online 或 offline"
    "(wandb/swanlab 先写到本地、之后同步;mlflow 写入运行目录)",
    # -- swift's own settings (engines/swift/) ------------------------------------------------------------
    "grpo (swift rlhf --rlhf_type grpo) or sft (swift sft)": "grpo(swift rlhf --rlhf_type grpo)或 sft(swift sft)",
    "optimizer steps (ms-swift's max_steps; empty: num_train_epochs decides)": "优化步数(ms-swift 的 max_steps;"
    "留空:由 num_train_epochs 决定)",
    "peak learning rate (empty: ms-swift's 1e-5 full / 1e-4 LoRA)": "峰值学习率(留空:ms-swift 的 1e-5 全量 / 1e-4 LoRA)",
    "prompts per device and step (per_device_train_batch_size = this × num_generations in GRPO)": "每个设备每步的提示词数"
    "(GRPO 中 per_device_train_batch_size = 此值 × num_generations)",
    "GRPO: completions per prompt (ms-swift's default 8)": "GRPO:每个提示词的回答数(ms-swift 默认 8)",
    "GRPO: KL coefficient (ms-swift's default 0.04)": "GRPO:KL 系数(ms-swift 默认 0.04)",
    "GRPO: tokens per completion (the agent's max_tokens when empty)": "GRPO:每个回答的词元数(留空时取智能体的 max_tokens)",
    "full (fine-tune every weight) or an adapter: lora, adalora, longlora, llamapro, adapter, vera, boft, fourierft, "
    "reft, bone (ms-swift checks the name)": "full(微调全部权重)或一种适配器:lora、adalora、longlora、llamapro、adapter、"
    "vera、boft、fourierft、reft、bone(由 ms-swift 检查名称)",
    # -- verl's own settings (engines/verl/) --------------------------------------------------------------
    "advantage estimator (algorithm.adv_estimator): grpo, rloo, gae (PPO with a critic), reinforce_plus_plus, ...": "优势估计器"
    "(algorithm.adv_estimator):grpo、rloo、gae(带 critic 的 PPO)、reinforce_plus_plus……",
    "passes over the training set (trainer.total_epochs; verl's default 30)": "遍历训练集的轮数(trainer.total_epochs;"
    "verl 默认 30)",
    "stop after this many steps (trainer.total_training_steps)": "训练这么多步后停止(trainer.total_training_steps)",
    "prompts per step (data.train_batch_size; fitted to the data when empty)": "每步的提示词数(data.train_batch_size;"
    "留空时按数据自动确定)",
    "rollouts per prompt (actor_rollout_ref.rollout.n; 8 for GRPO when empty)": "每个提示词的 rollout 数"
    "(actor_rollout_ref.rollout.n;留空时 GRPO 取 8)",
    "actor learning rate (actor_rollout_ref.actor.optim.lr; verl's default 1e-6)": "actor 学习率"
    "(actor_rollout_ref.actor.optim.lr;verl 默认 1e-6)",
    "GPUs per node (trainer.n_gpus_per_node; this machine's count when empty)": "每个节点的 GPU 数"
    "(trainer.n_gpus_per_node;留空时取本机数量)",
    "submit to this Ray cluster (http://<head>:8265); RAY_ADDRESS works too": "提交到此 Ray 集群(http://<head>:8265);"
    "也可用 RAY_ADDRESS",
    "a named ms-swift chat template (empty: the one that renders exactly like the model's own chat template)": "ms-swift "
    "的具名对话模板(留空:渲染结果与模型自带对话模板完全一致的那个)",
    "passes over the training set (num_train_epochs)": "遍历训练集的轮数(num_train_epochs)",
    "GRPO: prompt groups copied whole to samples.jsonl per step": "GRPO:每步完整复制到 samples.jsonl 的提示组数",
    "ms-swift's environment variables: NPROC_PER_NODE, NNODES, NODE_RANK, MASTER_ADDR, MASTER_PORT, "
    "CUDA_VISIBLE_DEVICES, ...": "ms-swift 的环境变量:NPROC_PER_NODE、NNODES、NODE_RANK、MASTER_ADDR、MASTER_PORT、"
    "CUDA_VISIBLE_DEVICES……",
    "response tokens (data.max_response_length; the agent's max_tokens when empty)": "回答词元数(data.max_response_length;"
    "留空时取智能体的 max_tokens)",
    "prompt tokens (data.max_prompt_length)": "提示词词元数(data.max_prompt_length)",
    "nodes (trainer.nnodes)": "节点数(trainer.nnodes)",
    "rollout backend (actor_rollout_ref.rollout.name): vllm or sglang": "rollout 后端(actor_rollout_ref.rollout.name):"
    "vllm 或 sglang",
    "checkpoint every N steps (trainer.save_freq; -1 = never)": "每 N 步保存检查点(trainer.save_freq;-1 = 从不)",
    "validate every N steps (trainer.test_freq; -1 = never)": "每 N 步验证一次(trainer.test_freq;-1 = 从不)",
    "environment variables for the verl job": "verl 任务的环境变量",
    "the Python of an environment with verl[vllm] ($AWORLD_VERL_PYTHON works too); this one when empty": "装有 verl[vllm] "
    "的环境中的 Python(也可用 $AWORLD_VERL_PYTHON);留空时用当前这个",
    # -- Setup: the dataset's columns, the reward card, the prompt ------------------------------------------
    "detected:": "检测到:",
    "(auto-detect)": "(自动检测)",
    "(none)": "(无)",
    "What each reward received and returned": "每个奖励函数收到和返回了什么",
    "on the sample rows (reference and wrong completions, in the call its framework makes).": "在样例行上(参考答案与错误答案,"
    "按其框架的调用方式)。",
    "What each reward receives and returns on the sample rows appears here after the check.": "检查后,这里显示每个奖励函数"
    "在样例行上收到和返回的内容。",
    "received": "收到",
    "returned": "返回",
    "convention": "调用约定",
    "per sample": "逐样本",
    "Logged:": "已记录:",
    "Sample completions written as": "样例回答写成",
    "(the format these rewards expect).": "(这些奖励函数期望的格式)。",
    "not called": "未被调用",
    "of": "每项为",
    "more": "更多",
    "(the agent's model)": "(智能体的模型)",
}
