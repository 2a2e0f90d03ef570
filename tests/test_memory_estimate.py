"""The memory estimate: parameter counts from the model's config alone (meta device, no weights), the
parts of a training process, and the verdict against the machine (a warning near the limit, an error
over it — shown by the config check). benchmarks/memory_estimate.py compares it with measured peaks."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from engines.core.modules import Modules
from engines import AgentTrainer, CheckError
from engines.fit.memory_estimate import GB, CPU_RUNTIME_BYTES, count_parameters, estimate, judge, shape_of

ROOT = Path(__file__).resolve().parent.parent
AGENT = str(ROOT / "assets/agents/letters_agent.yaml")
TRAIN = str(ROOT / "assets/datasets/letters_train.jsonl")
REWARD = str(ROOT / "assets/rewards/letter_reward.py") + ":letter_reward"


def qwen25_05b():
    """Qwen2.5-0.5B-Instruct's published config (no download: the numbers from its config.json)."""
    from transformers import Qwen2Config

    return Qwen2Config(
        vocab_size=151936,
        hidden_size=896,
        intermediate_size=4864,
        num_hidden_layers=24,
        num_attention_heads=14,
        num_key_value_heads=2,
        tie_word_embeddings=True,
        max_position_embeddings=32768,
    )


def test_parameters_are_counted_from_the_config_alone():
    counts = count_parameters(qwen25_05b())
    assert counts.total == 494_032_768  # the model card's 0.49B (tied embeddings counted once)
    assert counts.trainable == counts.total and counts.adapters == 0
    from peft import LoraConfig

    lora = count_parameters(
        qwen25_05b(), LoraConfig(r=16, lora_alpha=32, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM")
    )
    # 24 layers × r 16 × ((896 + 896) q_proj + (896 + 128) v_proj)
    assert lora.trainable == lora.adapters == 24 * 16 * ((896 + 896) + (896 + 128))
    assert lora.total == counts.total


def test_the_parts_follow_the_settings():
    counts = count_parameters(qwen25_05b())
    base = dict(
        mode="grpo",
        weight_bytes=2.0,
        compute_bytes=2.0,
        train_batch=8,
        generation_batch=8,
        prompt_tokens=128,
        completion_tokens=256,
        device="cuda",
    )
    full = estimate(counts, shape_of(qwen25_05b(), **base))
    assert full["weights"] == counts.total * 2 and full["gradients"] == counts.total * 2
    assert full["optimizer"] == counts.total * 4  # two Adam moments in bf16
    assert full["reference_model"] == 0  # beta 0: no reference model
    # KV cache: 8 sequences × 384 tokens × 24 layers × K and V × 2 KV heads × 64 dims × 2 bytes
    assert full["kv_cache"] == 8 * 384 * 24 * 2 * 2 * 64 * 2
    with_kl = estimate(counts, shape_of(qwen25_05b(), **base, beta=0.04))
    assert with_kl["reference_model"] == counts.total * 2
    zero3 = estimate(counts, shape_of(qwen25_05b(), **base, num_processes=4, shard="zero3"))
    assert zero3["weights"] == pytest.approx(full["weights"] / 4, rel=1e-6)
    checkpointed = estimate(counts, shape_of(qwen25_05b(), **base, gradient_checkpointing=True))
    assert checkpointed["activations"] < full["activations"] / 5
    vllm = estimate(counts, shape_of(qwen25_05b(), **base, vllm="colocate", vllm_fraction=0.3, gpu_bytes=80 * GB))
    assert vllm["kv_cache"] == 0 and vllm["vllm"] == int(0.3 * 80 * GB)
    quantized = estimate(counts, shape_of(qwen25_05b(), **base, quant_bits=4))
    assert quantized["weights"] < full["weights"] / 2


def test_the_verdict_against_the_machine():
    parts = {"weights": 3 * GB, "runtime": CPU_RUNTIME_BYTES}
    assert judge(parts, 1, "cpu", limit=(100 * GB, "available RAM")).status == "ok"
    near = judge(parts, 1, "cpu", limit=(int(3.9 * GB), "available RAM"))
    assert near.status == "warning" and "largest parts: weights 3.00 GB" in near.notes[0]
    assert judge(parts, 1, "cpu", limit=(3 * GB, "available RAM")).status == "error"
    # processes on one CPU share the RAM; on GPUs each has its own
    assert judge(parts, 4, "cpu", limit=(10 * GB, "available RAM")).status == "error"
    assert judge(parts, 4, "cuda", limit=(10 * GB, "free on each GPU (H100)")).status == "ok"


def test_a_run_that_does_not_fit_is_a_config_error_with_the_estimate(tmp_path):
    """A 32B-parameter config (tokenizer of the demo, no weights at all): the check says it cannot
    fit in this machine's RAM, and carries the estimate for the studio to show."""
    big = tmp_path / "big-model"
    big.mkdir()
    for f in (ROOT / "assets/models/tiny-letters").iterdir():
        if f.name != "model.safetensors":
            shutil.copy(f, big / f.name)
    cfg = json.loads((big / "config.json").read_text())
    cfg.update(
        hidden_size=5120,
        intermediate_size=27648,
        num_hidden_layers=64,
        num_attention_heads=40,
        num_key_value_heads=8,
        head_dim=128,
    )
    cfg.pop("layer_types", None)  # per-layer attention kinds: derived again for 64 layers
    (big / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(CheckError) as err:
        AgentTrainer(
            AGENT,
            TRAIN,
            None,
            REWARD,
            {"model": str(big), "max_steps": 2},
            run_path=str(tmp_path / "runs"),
            train_engine_name="trl",
        )
    msg = str(err.value)
    assert "the run would not fit in memory: ≈ " in msg
    assert "GB available RAM" in msg and "use_peft: true (LoRA)" in msg
    memory = err.value.result.details["memory"]
    assert memory["status"] == "error" and memory["total_params"] > 25e9
    assert memory["parts"]["optimizer"] == 2 * memory["parts"]["weights"]  # fp32 Adam: 8 bytes vs 4


def test_no_estimate_and_no_hub_lookup_when_the_agent_check_failed(tmp_path, monkeypatch):
    """A broken agent leaves no model: the config check still runs (every module is reported), without an
    estimate — it used to ask the hub for a model named 'None' and retried for 23 s, past the check's limit."""
    import transformers

    from engines.core.checks import check_all

    asked = []
    real = transformers.AutoConfig.from_pretrained
    monkeypatch.setattr(
        transformers.AutoConfig,
        "from_pretrained",
        lambda name, *a, **k: asked.append((str(name), k)) or real(name, *a, **k),
    )
    agent = tmp_path / "agent.yaml"
    agent.write_text("model: " + str(ROOT / "assets/models/tiny-letters") + '\nsystem_prompt: "unclosed\n')
    results = {
        r.module: r
        for r in check_all(
            Modules(
                agent=str(agent),
                train_dataset=TRAIN,
                test_dataset=None,
                reward_func=REWARD,
                config={"max_steps": 2},
                train_engine_name="trl",
            ),
            run_path=str(tmp_path / "runs"),
        )
    }
    assert results["agent"].status == "error" and "never closed" in results["agent"].message
    assert results["config"].status in ("ok", "warning") and "memory" not in results["config"].details
    assert asked == []
