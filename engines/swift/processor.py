"""SwiftProcessor: the spec's checks and ``train`` with ms-swift, which lives in an environment of its own.

* ``check_agent`` — the agent's system prompt and sampling settings (carried into the data and the command
  line); the model's type and the ms-swift template that renders exactly like the model's own chat template
  (or the ``template`` named in the config); its tools in ms-swift's agent format.
* ``check_dataset`` — every accepted input → ms-swift ``messages`` JSONL (``<run>/swift/train.jsonl``,
  ``test.jsonl``), the answer in ``solution``, the other columns passed to the rewards by name.
* ``check_reward`` — the reward → ``<run>/swift/aworld_plugin.py`` (ms-swift ORMs calling our reward code,
  copied into the run dir), dry-run here and in ms-swift's environment; ms-swift's own rewards
  (``swift:<name>``, :mod:`.orms`) go to ms-swift by name beside them.
* ``check_config`` — the settings under ms-swift's argument names (and :mod:`.arguments`' friendly keys),
  parsed by ms-swift's own argument classes in its environment; GRPO → ``swift rlhf``, SFT → ``swift sft``.
* ``train`` — :class:`.launch.SwiftJob`.

The swift-side checks go through one :class:`.session.SwiftHelper` per processor, their answers cached.
Importing this module imports neither torch nor ms-swift.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..agents.agent_spec import AgentSpec
from ..results.check_result import CheckError, CheckResult
from ..inputs.config import load_config_input
from ..inputs.data import DataBundle, row_answer
from ..rewards import Reward
from ..rewards.catalog import register_source
from ..rewards.native import split_native
from ..rewards.requirements import install_hint
from ..rewards.spec import entry_weight
from ..core.standard import StandardProcessor
from ..isolation.user_env import referenced_names
from . import arguments as A
from . import environment, orms
from .dataset import SOLUTION, first_messages, passed_columns, write_split
from .plugin import CALLBACK, ORM_PREFIX, params_file, write_plugin
from .reward_env import refuse_unrunnable
from .session import SwiftEnvError, SwiftHelper, file_digest, shared_helper, shutdown

SWIFT_DIR = "swift"
DRY_RUN_ROWS = 2

register_source("ms-swift", orms.catalog_entries)  # the reward catalog lists ms-swift's own rewards


class SwiftProcessor(StandardProcessor):
    engine_name = "swift"
    description = (
        "ms-swift in its own environment (python -m engines setup swift): GRPO via swift rlhf, SFT via "
        "swift sft; several GPUs or nodes through NPROC_PER_NODE / NNODES"
    )
    config_fields = A.FIELDS
    reward_required = False  # SFT trains without one; check_config requires it for GRPO

    def __init__(self, run_path: str = "runs"):
        super().__init__(run_path)
        self.python = environment.swift_python()
        self._helper: SwiftHelper | None = None
        self.env_problem: str | None = None
        self.model_report: dict[str, Any] | None = None
        self.data_files: dict[str, Path] = {}
        self.plugin_path: Path | None = None
        self.reward_names: list[str] = []
        self.native_orms: list[dict[str, Any]] = []  # ms-swift's own rewards: {"name", "class", "weight"}
        self.reward_columns: list[str] = []
        self.command: str | None = None
        self.args: dict[str, Any] = {}
        self.env_vars: dict[str, str] = {}
        self.resolved: dict[str, Any] = {}

    # -- the swift environment ---------------------------------------------------------------------------
    @classmethod
    def availability(cls) -> tuple[bool, str]:
        return environment.availability()

    @classmethod
    def environment_files(cls) -> list[str]:
        return environment.environment_files()

    @classmethod
    def setup_environment(cls, argv: list[str]) -> int:
        """``python -m engines setup swift``: see :func:`.environment.setup`."""
        return environment.setup_command_line(argv)

    def cluster_job_env(self) -> dict[str, str]:
        return {environment.PYTHON_ENV: environment.swift_python()}  # at the same path there (docs/CLUSTER.md)

    @property
    def swift_dir(self) -> Path:
        d = self.run.path / SWIFT_DIR
        d.mkdir(parents=True, exist_ok=True)
        return d

    @property
    def helper(self) -> SwiftHelper:
        if self._helper is None:
            self._helper = shared_helper(self.python)
        return self._helper

    def close(self) -> None:
        """The checks are done: the helper ends soon unless another check (another processor) asks first."""
        if self._helper is not None:
            self._helper.release()

    def _ask(self, task: str, cache_key: Any, **args: Any) -> Any:
        """The swift environment's answer; None (and :attr:`env_problem` set) when it cannot answer at all."""
        if self.env_problem:
            return None
        try:
            return self.helper.call(task, cache_key=cache_key, **args)
        except SwiftEnvError as e:
            if e.kind in ("import", "crash", "timeout"):
                ok, reason = environment.availability()
                # the short cause ("setup did not finish"); the engine's own line has the details
                self.env_problem = reason.split(" — ")[0] if not ok else str(e)
                return None
            raise

    # -- agent -------------------------------------------------------------------------------------------
    def convert_agent(self, spec: AgentSpec) -> None:
        self.model_report = None
        if not Path(spec.model).is_dir():
            spec.warnings.append(
                f"model '{spec.model}' is not a local folder: ms-swift downloads it (ModelScope by "
                "default; env USE_HF=1 for the Hugging Face Hub) and picks its template itself"
            )
            return
        system = spec.system_prompt or None
        head = [{"role": "system", "content": system}] if system else []
        probes = [
            head + [{"role": "user", "content": "Say the letter A:"}],
            head + [{"role": "user", "content": "Say the letter A:"}, {"role": "assistant", "content": "A"}],
        ]
        tools = list(spec.tool_schemas) or None
        try:
            report = self._ask(
                "model",
                [file_digest(spec.model), spec.model, probes, tools],
                model=spec.model,
                probes=probes,
                tools=tools,
            )
        except SwiftEnvError as e:
            raise CheckError(
                "agent",
                f"ms-swift cannot load the model '{spec.model}': {e}",
                "point `model:` at a folder ms-swift supports (config.json, tokenizer files)",
            )
        if report is None:
            spec.warnings.append(f"not checked against ms-swift: its environment — {self.env_problem}")
            return
        self.model_report = report
        if not report.get("template"):
            spec.warnings.append(
                f"ms-swift has no template for model type {report.get('model_type')}: set "
                "`template:` in the config to a named ms-swift template"
            )
        elif report.get("has_chat_template") and not report.get("matched"):
            diff = report.get("mismatch") or {}
            spec.warnings.append(
                f"no ms-swift template renders exactly like the model's own chat template "
                f"(tried {', '.join(report.get('candidates') or [])}; first difference with "
                f"{diff.get('template') if isinstance(diff, dict) else diff}); training uses "
                f"'{report['template']}' — set `template:` in the config to choose another"
            )
        if tools:
            if not report.get("tools_rendered"):
                spec.warnings.append(
                    "the ms-swift template does not show the tool list to the model (set "
                    "`agent_template:` in the config, e.g. hermes)"
                )
            if spec.max_steps > 1:
                spec.warnings.append(
                    "tools reach the model as ms-swift's `tools` column; tool calls are not executed "
                    "during rollouts unless the config sets ms-swift's multi_turn_scheduler "
                    "(which needs vLLM)"
                )

    # -- datasets ----------------------------------------------------------------------------------------
    def _tools_column(self) -> list[dict] | None:
        """The dataset's ``tools`` column: the schemas of all the agent's tools, Python and MCP alike."""
        agent = self.agent_spec
        return (list(agent.tool_schemas) or None) if agent is not None and agent.has_tools else None

    def convert_dataset(self, bundle: DataBundle) -> dict | None:
        agent = self.agent_spec
        system = agent.system_prompt if agent else None
        tools = self._tools_column()
        details: dict[str, Any] = {}
        self.data_files = {}
        for split, ds in (("train", bundle.train), ("test", bundle.test)):
            if ds is None:
                continue
            path = self.swift_dir / f"{split}.jsonl"
            details[f"swift_{split}"] = write_split(ds, path, bundle.columns, system, tools)
            self.data_files[split] = path
        keep, dropped = passed_columns(list(bundle.train.column_names), bundle.columns)
        self.reward_columns = [SOLUTION, *keep]
        if dropped:
            bundle.warnings.append(
                f"column(s) {', '.join(dropped)} are not passed to the rewards: ms-swift reserves these names"
            )
        if "test" not in self.data_files:
            details["swift_test"] = "none: no validation set (--val_dataset)"
        report = self.model_report
        if report and report.get("template"):
            messages = first_messages(self.data_files["train"])
            rendered = self._ask(
                "render",
                [file_digest(agent.model), report["template"], messages, tools],
                model=report["model_dir"],
                model_type=report["model_type"],
                template=report["template"],
                messages=messages,
                tools=tools,
            )
            if rendered:
                details.update(rendered_prompt=rendered["text"], prompt_tokens=rendered["tokens"])
        return details

    # -- reward ------------------------------------------------------------------------------------------
    def check_reward(self, reward_func: Any = None) -> Reward | None:
        ours, natives = split_native(reward_func)
        try:
            refuse_unrunnable(ours)
            self.native_orms = [
                orms.resolve(name, entry_weight(item) if isinstance(item, dict) else 1.0, self.python)
                for name, item in natives
            ]
        except CheckError as e:
            self._fail(e)
        reward = super().check_reward(ours if ours or not natives else None)
        try:
            self.reward_names = list(reward.names) if reward else []
            self.plugin_path = write_plugin(
                self.swift_dir, self.spec.get("reward") or [], self.reward_names, self.reward_columns
            )
            result = next(r for r in self.check_results if r.module == "reward")
            if natives:  # ms-swift's own: by name in the run spec, run by ms-swift beside the plugin's
                self.spec["reward"] = [
                    *self.spec["reward"],
                    *({"ref": orms.PREFIX + o["name"], "weight": o["weight"]} for o in self.native_orms),
                ]
                names = ", ".join(f"{orms.PREFIX}{o['name']}×{o['weight']:g}" for o in self.native_orms)
                result.message = "; ".join(
                    n for n in (result.message if reward else "", f"ms-swift's own: {names}") if n
                )
                if reward is None:
                    result.status, result.warnings = "ok", []
            result.details["swift_plugin"] = {
                "path": str(self.plugin_path),
                "reward_funcs": self.reward_funcs,
                "callback": CALLBACK,
            }
            if self.reward_funcs and self.data is not None:
                self._dry_run_in_swift(reward, result)
        except CheckError as e:
            self._fail(e)
        return reward

    @property
    def reward_funcs(self) -> list[str]:
        """ms-swift's ``--reward_funcs``: the plugin's ORMs (ours), then ms-swift's own by name."""
        return [ORM_PREFIX + n for n in self.reward_names] + [o["name"] for o in self.native_orms]

    @property
    def term_names(self) -> list[str]:
        """The reward columns ms-swift logs, in ``reward_funcs`` order (an ORM's class name)."""
        return list(self.reward_names) + [o["class"] for o in self.native_orms]

    @property
    def reward_weights(self) -> list[float]:
        return (list(self.reward.weights) if self.reward else []) + [o["weight"] for o in self.native_orms]

    def _dry_run_in_swift(self, reward: Reward | None, result: CheckResult) -> None:
        """The plugin's ORMs, in ms-swift's environment, on the first rows: the reference answer and a wrong one."""
        ds, cols = self.data.train, self.data.columns
        rows = [ds[i] for i in range(min(DRY_RUN_ROWS, len(ds)))]
        answers = [row_answer(r, cols) for r in rows]
        wrong = next(
            (a for a in (row_answer(ds[i], cols) for i in range(min(len(ds), 50))) if a and a not in answers),
            "a wrong answer",
        )
        lines = []
        with open(self.data_files["train"], encoding="utf-8") as f:
            for _ in rows:
                lines.append(json.loads(f.readline()))
        batch: dict[str, list] = {"completions": []}
        for line, answer in zip(lines, answers):
            for completion in (answer or "", wrong):
                batch["completions"].append(completion)
                batch.setdefault("messages", []).append(
                    line["messages"] + [{"role": "assistant", "content": completion}]
                )
                for c in self.reward_columns:
                    batch.setdefault(c, []).append(line.get(c))
        # the variables the reward asks for by name (a judge's api_key_env): the helper process was started
        # before them, maybe by an earlier check, so they go with the request (over its pipe, never to disk);
        # the answer's cache key holds which of them are set, never their values
        names = sorted(referenced_names(reward.to_spec() if reward is not None else None))
        env = {n: os.environ[n] for n in names if n in os.environ}
        key = [
            file_digest(self.plugin_path),
            file_digest(params_file(self.plugin_path)),
            file_digest(self.swift_dir / "aworld_engines"),
            file_digest(self.swift_dir / "reward_files"),
            self.reward_funcs,
            batch,
            {n: n in env for n in names},
        ]
        try:
            answer = self._ask(
                "dry_run", key, plugin=str(self.plugin_path), rewards=self.reward_funcs, batch=batch, env=env
            )
        except SwiftEnvError as e:
            package = (install_hint(str(e)) or "").removeprefix("pip install ")
            raise CheckError(
                "reward",
                f"the reward fails in ms-swift's environment: {e}",
                f"install it there: {self.python} -m pip install {package}"
                if package
                else "fix the function (or install what it imports into ms-swift's environment)",
            )
        if answer is None:
            result.warnings.append(f"not dry-run in ms-swift's environment — {self.env_problem}")
            return
        values = answer["values"]
        result.details["swift_dry_run"] = {"completions": batch["completions"], "values": values}
        for name, why in (answer.get("not_run") or {}).items():
            result.warnings.append(
                f"ms-swift's reward '{name}' was not dry-run: {why} (ms-swift builds it from "
                "the training arguments when the run starts)"
            )
        if reward is None:
            if result.warnings and result.status == "ok":
                result.status = "warning"
            return
        here = {t.name: [] for t in reward.terms}
        for i, completion in enumerate(batch["completions"]):
            row = {c: batch[c][i] for c in self.reward_columns if c in batch}
            _, parts = reward.score(completion, batch[SOLUTION][i], batch["messages"][i][:-1], **row)
            for name, v in parts.items():
                here[name].append(v)
        for name in self.reward_names:
            theirs = values.get(f"aworld_{name}") or []
            if any(abs(a - b) > 1e-6 for a, b in zip(theirs, here[name])):
                result.warnings.append(
                    f"reward '{name}' scores differently in ms-swift's environment "
                    f"({theirs} there, {here[name]} here): check the libraries it imports"
                )
        if result.warnings and result.status == "ok":
            result.status = "warning"

    # -- config ------------------------------------------------------------------------------------------
    def check_config(self, config: Any = None) -> dict[str, Any]:
        try:
            self._check_config(config)
        except CheckError as e:
            self.close()
            self._fail(e)
        self.close()
        return self.effective_config

    def _check_config(self, config: Any) -> None:
        run_settings, config = self.take_run_settings(config)  # the diagnoses' thresholds: the watcher's
        user = load_config_input(config)
        where = (
            f"config file {Path(str(config)).name}"
            if isinstance(config, (str, os.PathLike)) and Path(str(config)).is_file()
            else "the config"
        )
        mode = user.get("mode", A.GRPO)
        if mode not in (A.GRPO, A.SFT):
            A.split_config({"mode": mode}, {}, where)  # the standard "not one of" message
        command = A.command_of(mode)
        known = self._ask("arg_names", [command], command=command)
        if known is None:
            raise CheckError(
                "config",
                f"not checked against ms-swift: its environment — {self.env_problem}",
                f"run: {environment.SETUP_COMMAND}",
            )
        split = A.split_config(user, known, where)
        ours = split.ours
        if mode == A.GRPO and self.reward is None and not self.native_orms:
            raise CheckError("config", "GRPO needs a reward function", "pick a reward, or set mode: sft")
        if mode == A.SFT and self.data is not None and not self.data.columns.answer:
            raise CheckError(
                "config",
                "SFT needs a reference-answer column to learn from",
                "add an answer/solution column, or use mode: grpo",
            )
        ckpt = split.swift.get("resume_from_checkpoint")
        if ckpt and not (Path(str(ckpt)) / "trainer_state.json").is_file():
            raise CheckError(
                "config",
                f"resume_from_checkpoint '{ckpt}' in {where} is not a checkpoint folder",
                "point at a checkpoints/checkpoint-<step> folder of an earlier run",
            )
        if (
            self.model_report is None
            and not ours.get("template")
            and "template" not in split.swift
            and self.agent_spec is not None
            and Path(self.agent_spec.model).is_dir()
        ):
            raise CheckError(
                "config",
                "no ms-swift template is known for the model",
                "set `template:` to a named ms-swift template (e.g. qwen2_5)",
            )
        args = self._derive_args(mode, ours, split.swift)
        self.command, self.args = command, args
        self.env_vars = {k: str(v) for k, v in (ours.get("env") or {}).items()}
        argv = A.argv_of(args)
        self.resolved = self._validate(command, argv, split, args)
        self.uses_local_slot = True
        effective = {**ours, **split.swift}
        effective.update(
            {
                k: v
                for k, v in self.resolved.items()
                if k in ("template", "model_type", "tuner_type", "learning_rate", "max_steps")
            }
        )
        effective.update(run_settings)
        cluster_warnings = self.adopt_cluster(effective)
        run_settings.update({k: effective[k] for k in ("ray_address",) if effective.get(k)})  # run.yaml: where
        self.effective_config = effective
        self.spec["config"] = json.loads(json.dumps({**split.raw, **run_settings}, default=str))
        env, address = ", ".join(f"{k}={v}" for k, v in self.env_vars.items()), effective.get("ray_address")
        where_msg = f"on the Ray cluster at {address}" if address else "on this machine"
        where_msg += f" with {env}" if env else ""
        r = self.resolved
        msg = (
            f"{mode} via swift {command}{' --rlhf_type grpo' if mode == A.GRPO else ''}: template "
            f"{r.get('template')}, tuner {r.get('tuner_type')}, lr {r.get('learning_rate')}, "
            f"{'max_steps ' + str(r.get('max_steps')) if (r.get('max_steps') or -1) > 0 else 'epochs ' + str(r.get('num_train_epochs'))}, "
            f"batch {r.get('per_device_train_batch_size')}; {where_msg}; ms-swift's argument parser accepted it"
        )
        warnings = list(split.warnings) + cluster_warnings
        if self.env_vars.get("NNODES", "1") != "1":
            warnings.append(
                f"NNODES={self.env_vars['NNODES']}: start the other nodes with {SWIFT_DIR}/command.sh "
                "(written at launch) and their NODE_RANK"
            )
        self.record(
            CheckResult(
                "config",
                "warning" if warnings else "ok",
                msg,
                details={
                    "effective": effective,
                    "command": ["swift", command, *argv],
                    "resolved": self.resolved,
                    "env": self.env_vars,
                },
                warnings=warnings,
            )
        )

    def _derive_args(self, mode: str, ours: dict[str, Any], theirs: dict[str, Any]) -> dict[str, Any]:
        """ms-swift's arguments: the run's paths, what the agent and the checks give, the user's settings."""
        agent, report = self.agent_spec, self.model_report or {}
        run = self.run
        args: dict[str, Any] = {"model": agent.model if agent else None}
        if report.get("model_type"):
            args["model_type"] = report["model_type"]
        if report.get("template"):
            args["template"] = report["template"]
        sft = mode == A.SFT
        if sft and self.data is not None:
            for split, ds in (("train", self.data.train), ("test", self.data.test)):
                if ds is not None:
                    path = self.swift_dir / f"{split}_sft.jsonl"
                    write_split(
                        ds,
                        path,
                        self.data.columns,
                        agent.system_prompt if agent else None,
                        self._tools_column(),
                        sft=True,
                    )
                    self.data_files[f"{split}_sft"] = path
        train = self.data_files.get("train_sft" if sft else "train")
        test = self.data_files.get("test_sft" if sft else "test")
        args.update(
            dataset=str(train) if train else None,
            val_dataset=str(test) if test else None,
            external_plugins=str(self.plugin_path) if self.plugin_path else None,
            output_dir=str(run.checkpoints_dir),
            add_version=False,
            check_model=False,
            report_to="none",
            logging_steps=1,
            dataset_num_proc=1,
            dataloader_num_workers=0,
        )
        user_callbacks = theirs.get("callbacks") or []
        args["callbacks"] = [*([user_callbacks] if isinstance(user_callbacks, str) else user_callbacks), CALLBACK]
        for key in A.PASSED:
            if ours.get(key) is not None and (not sft or key not in A.GRPO_ONLY):
                args[key] = ours[key]
        if ours.get("epochs") is not None:
            args["num_train_epochs"] = ours["epochs"]
        if sft:
            args["per_device_train_batch_size"] = ours["prompts_per_step"]
        else:
            generations = theirs.get("num_generations") or ours.get("num_generations") or 8
            args.update(
                rlhf_type="grpo",
                reward_funcs=self.reward_funcs,
                reward_weights=self.reward_weights or None,
                per_device_train_batch_size=ours["prompts_per_step"] * generations,
                log_completions=True,
                max_completion_length=ours.get("max_completion_length") or (agent.max_tokens if agent else None),
                temperature=agent.temperature if agent else None,
                top_p=agent.top_p if agent else None,
            )
            if test:  # ms-swift scores the test set in groups of num_generations too
                args["per_device_eval_batch_size"] = args["per_device_train_batch_size"]
        args.update({k: v for k, v in theirs.items() if k != "callbacks"})
        return {k: v for k, v in args.items() if v is not None}

    def _validate(self, command: str, argv: list[str], split: A.SplitConfig, args: dict[str, Any]) -> dict:
        root = str(self.run.path)
        normalized = [a.replace(root, "<RUN>") for a in argv]
        key = [
            command,
            normalized,
            file_digest(self.plugin_path) if self.plugin_path else None,
            file_digest(params_file(self.plugin_path)) if self.plugin_path else None,
            file_digest(self.agent_spec.model) if self.agent_spec and Path(self.agent_spec.model).is_dir() else None,
        ]
        try:
            resolved = self._ask("validate", key, command=command, argv=argv)
        except SwiftEnvError as e:
            error = str(e)
            blamed = A.blame(
                error,
                list(args),
                [k for k in split.swift] + [A.ALIASES.get(k, k) for k in split.ours if k in split.raw],
            )
            if blamed is None:
                raise CheckError(
                    "config",
                    f"ms-swift rejects the settings in {split.where}: {error}",
                    "see ms-swift's argument documentation (swift rlhf --help)",
                )
            user_key = split.key_for(blamed)
            value = split.raw.get(user_key, args.get(blamed))
            raise CheckError(
                "config",
                f"ms-swift rejects `{user_key}` = {value!r} in {split.where}: {error}{A.choices_hint(error, value)}",
                f"fix `{user_key}`" + (f" (it sets ms-swift's {blamed})" if user_key != blamed else ""),
            )
        if resolved is None:
            raise CheckError(
                "config",
                f"not checked against ms-swift: its environment — {self.env_problem}",
                f"run: {environment.SETUP_COMMAND}",
            )
        return resolved

    # -- training ----------------------------------------------------------------------------------------
    def _train(self) -> str:
        if self.command is None:
            raise CheckError("config", "check_config() has not run", "run the checks before train()")
        from ..runs.tensorboard_log import ScalarWriter
        from .launch import SwiftJob, SwiftWatcher, resumed_step

        shutdown()  # the checks' helper: training needs the memory and the cores
        run = self.run
        max_steps = self.resolved.get("max_steps") or -1
        total = max_steps if max_steps > 0 else None
        resumed_at = resumed_step(self.args.get("resume_from_checkpoint"))
        run.write_status(engine="swift", step=resumed_at, total_steps=total, mode=self.effective_config.get("mode"))
        tensorboard = ScalarWriter(run.tensorboard_dir)
        terms = list(zip(self.term_names, self.reward_weights))
        watcher = SwiftWatcher(
            run,
            run.checkpoints_dir,
            reward_terms=terms,
            samples_per_step=self.effective_config.get("samples_per_step", 2),
            group_size=int(self.effective_config.get("num_generations") or 0) if self.command == "rlhf" else 0,
            total_steps=total,
            dataset_path=self.data_files.get("train"),
            tensorboard=tensorboard,
            resumed_at=resumed_at,
        )
        job = SwiftJob(run, self.python, self.command, A.argv_of(self.args), self.env_vars, watcher)
        job.write_command_file(self.swift_dir / "command.sh")
        try:
            return job.train()
        finally:
            tensorboard.close()
