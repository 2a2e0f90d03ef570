"""Runs INSIDE ms-swift's environment (``python env_helper.py``): the checks that need ms-swift itself.

It imports only the standard library and ms-swift (never this project, which is not installed there).
Requests arrive one JSON object per line on stdin: ``{"task": ..., "args": {...}}``; each gets one JSON line
back on the original stdout: ``{"ok": true, "result": ...}`` or ``{"ok": false, "error": ..., "kind": ...}``.
Everything else that prints (ms-swift's logging, warnings) goes to stderr, which the caller points at a file.
It exits when stdin closes (its caller ended).

Tasks: ``hello`` (versions), ``arg_names`` (ms-swift's argument dataclass fields), ``model`` (model type, the
ms-swift template that renders exactly like the model's own chat template, tools), ``render`` (a prompt as
training renders it), ``dry_run`` (the generated reward plugin's ORMs on sample rows), ``validate``
(ms-swift's own argument parsing of a command line).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import traceback

PROTOCOL_OUT = None
MULTIPLE = "Multiple possible types found: "


class ArgumentError(ValueError):
    """argparse's complaint (it would print usage and exit)."""


def _argparse_error(self, message):  # ms-swift's parser is an argparse parser: make its errors catchable
    raise ArgumentError(message)


argparse.ArgumentParser.error = _argparse_error


def _jsonable(value):
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return str(value)


# -- tasks -------------------------------------------------------------------------------------------
def hello() -> dict:
    import importlib.metadata as md

    out = {"python": sys.version.split()[0]}
    for dist in ("ms-swift", "torch", "transformers", "trl", "peft", "datasets"):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            out[dist] = None
    try:
        import torch

        out["cuda_devices"] = torch.cuda.device_count() if torch.cuda.is_available() else 0
    except Exception:  # noqa: BLE001
        out["cuda_devices"] = 0
    return out


def _args_class(command: str):
    from swift.arguments import RLHFArguments, SftArguments

    return RLHFArguments if command == "rlhf" else SftArguments


def arg_names(command: str) -> dict:
    """Every init field of ms-swift's argument dataclass for ``swift <command>``, with its default."""
    out = {}
    for f in dataclasses.fields(_args_class(command)):
        if not f.init:
            continue
        default = f.default if f.default is not dataclasses.MISSING else None
        out[f.name] = _jsonable(default)
    return out


def _model_info(model: str, model_type: str | None):
    """ms-swift's model info; a folder that fits several registered types gets its config.json's own type."""
    from swift.model import get_model_info_meta

    try:
        return get_model_info_meta(model, model_type=model_type)
    except ValueError as e:
        text = str(e)
        if model_type or MULTIPLE not in text:
            raise
        config_type = None
        try:
            with open(os.path.join(model, "config.json"), encoding="utf-8") as f:
                config_type = json.load(f).get("model_type")
        except (OSError, ValueError):
            pass
        choices = text.split(MULTIPLE, 1)[1].split("]", 1)[0] + "]"
        if config_type and f"'{config_type}'" in choices:
            return get_model_info_meta(model, model_type=config_type)
        raise


def _template(processor, name: str, system: str | None = None, agent_template: str | None = None):
    from swift.template import get_template

    kwargs = {}
    if system is not None:
        kwargs["default_system"] = system
    if agent_template:
        kwargs["agent_template"] = agent_template
    return get_template(processor, template_type=name, **kwargs)


def _render(template, processor, messages, tools=None, train: bool = False) -> str:
    template.set_mode("train" if train else "pt")
    inputs = {"messages": [dict(m) for m in messages]}
    if tools:
        inputs["tools"] = tools
    encoded = template.encode(inputs)
    return processor.decode(encoded["input_ids"])


def model(
    model: str,
    model_type: str | None = None,
    template: str | None = None,
    probes: list | None = None,
    tools: list | None = None,
    agent_template: str | None = None,
) -> dict:
    """The model's type and the ms-swift template to train it with: ``template`` when given, else the first
    candidate whose rendering of every probe conversation equals the model's own chat template's."""
    from swift.model import get_processor

    info, meta = _model_info(model, model_type)
    processor = get_processor(info.model_dir, model_type=info.model_type)
    tokenizer = getattr(processor, "tokenizer", processor)
    own = getattr(tokenizer, "chat_template", None)
    candidates = (
        [template]
        if template
        else list(dict.fromkeys([c for c in ([meta.template] + list(meta.candidate_templates or [])) if c]))
    )
    report = {
        "model_type": info.model_type,
        "model_dir": info.model_dir,
        "has_chat_template": bool(own),
        "candidates": candidates,
        "template": None,
        "matched": False,
        "mismatch": None,
        "max_model_len": info.max_model_len,
    }
    probes = probes or []
    for name in candidates:
        try:
            tpl = _template(processor, name, agent_template=agent_template)
        except Exception as e:  # noqa: BLE001 - a candidate that does not fit this processor
            report["mismatch"] = report["mismatch"] or f"{name}: {type(e).__name__}: {e}"
            continue
        if not own:
            report["template"] = name
            break
        same = True
        for conv in probes:
            train = conv[-1]["role"] == "assistant"
            want = tokenizer.apply_chat_template(conv, tokenize=False, add_generation_prompt=not train)
            got = _render(tpl, processor, conv, train=train)
            if got != want:
                same = False
                if report["mismatch"] is None:
                    report["mismatch"] = {"template": name, "swift": got, "model": want}
                break
        if same:
            report.update(template=name, matched=True)
            break
    if report["template"] is None and template:
        report["template"] = template
    if tools and report["template"]:
        tpl = _template(processor, report["template"], agent_template=agent_template)
        text = _render(tpl, processor, [{"role": "user", "content": "hi"}], tools=tools)
        names = [t.get("function", t).get("name", "") for t in tools]
        report["tools_rendered"] = all(n and n in text for n in names)
        report["agent_template"] = getattr(tpl.agent_template, "__class__", type(None)).__name__
    return report


def render(
    model: str,
    model_type: str,
    template: str,
    messages: list,
    tools: list | None = None,
    agent_template: str | None = None,
) -> dict:
    from swift.model import get_processor

    processor = get_processor(model, model_type=model_type)
    tpl = _template(processor, template, agent_template=agent_template)
    tpl.set_mode("pt")
    inputs = {"messages": [dict(m) for m in messages]}
    if tools:
        inputs["tools"] = tools
    ids = tpl.encode(inputs)["input_ids"]
    return {"text": processor.decode(ids), "tokens": len(ids)}


def dry_run(plugin: str, rewards: list, batch: dict, env: dict | None = None) -> dict:
    """Import the reward plugin as ms-swift does and call each of its ORMs on ``batch`` (completions +
    dataset columns): the values, or the first error. ``env``: variables the reward asks for by name (a
    judge's key), set for this call only."""
    saved = {k: os.environ.get(k) for k in env or {}}
    os.environ.update(env or {})
    try:
        return _dry_run(plugin, rewards, batch)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _dry_run(plugin: str, rewards: list, batch: dict) -> dict:
    from swift.rewards import orms

    name = "_aworld_dry_run_plugin"
    spec = importlib.util.spec_from_file_location(name, plugin)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    out, not_run = {}, {}
    for key in rewards:
        if key not in orms:
            raise KeyError(f"the plugin registered no reward named {key!r} (it has: {sorted(orms)})")
        try:
            out[key] = [float(v) for v in orms[key](args=None)(**batch)]
        except Exception as e:  # noqa: BLE001 - ms-swift's own ORMs: reported as not dry-run, with the reason
            if key.startswith("aworld_"):
                raise  # our reward's error is the check's error
            not_run[key] = f"{type(e).__name__}: {e}"[:300]  # some are built from the training arguments
    return {"values": out, "not_run": not_run}


def validate(command: str, argv: list) -> dict:
    """``swift <command> <argv>`` parsed by ms-swift's own argument classes (their ``__post_init__`` checks
    included), with ``--output_dir`` pointed at a scratch folder. Returns resolved values."""
    from swift.utils import parse_args

    scratch = tempfile.mkdtemp(prefix="aworld-swift-validate-")
    argv = list(argv)
    for flag in ("--output_dir", "--logging_dir"):
        if flag in argv:
            argv[argv.index(flag) + 1] = os.path.join(scratch, flag[2:])
    try:
        args, remaining = parse_args(_args_class(command), argv)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if remaining:
        raise ArgumentError(f"unrecognized arguments: {' '.join(remaining)}")
    from swift.arguments.base_args.base_args import get_supported_tuners
    from swift.tuner_plugin import tuners_map

    tuners = sorted(set(get_supported_tuners()) | set(tuners_map))
    if args.tuner_type not in tuners:
        raise ArgumentError(f"argument --tuner_type: invalid choice: {args.tuner_type!r} (choose from {tuners})")
    keys = (
        "model_type",
        "template",
        "tuner_type",
        "torch_dtype",
        "learning_rate",
        "max_steps",
        "num_train_epochs",
        "per_device_train_batch_size",
        "gradient_accumulation_steps",
        "num_generations",
        "generation_batch_size",
        "steps_per_generation",
        "max_completion_length",
        "temperature",
        "top_p",
        "beta",
        "save_steps",
        "logging_steps",
        "eval_strategy",
        "eval_steps",
        "lr_scheduler_type",
        "seed",
        "system",
        "agent_template",
        "max_length",
        "loss_type",
        "rlhf_type",
    )
    return {k: _jsonable(getattr(args, k)) for k in keys if hasattr(args, k)}


TASKS = {
    "hello": hello,
    "arg_names": arg_names,
    "model": model,
    "render": render,
    "dry_run": dry_run,
    "validate": validate,
}


def reply(obj: dict) -> None:
    PROTOCOL_OUT.write(json.dumps(obj, default=str) + "\n")
    PROTOCOL_OUT.flush()


def main() -> int:
    global PROTOCOL_OUT
    PROTOCOL_OUT = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # anything printed from here on (ms-swift's logging) goes to the log file, not the protocol
    sys.stdout = os.fdopen(1, "w", encoding="utf-8", buffering=1)
    try:  # the imports every task needs, paid once
        import swift.arguments  # noqa: F401
        import swift.model  # noqa: F401
        import swift.rewards  # noqa: F401
        import swift.template  # noqa: F401

        reply({"ok": True, "result": hello()})
    except BaseException as e:  # noqa: BLE001 - say why, then leave
        reply(
            {
                "ok": False,
                "error": f"{type(e).__name__}: {e}",
                "kind": "import",
                "traceback": traceback.format_exc()[-3000:],
            }
        )
        return 1
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
            result = TASKS[request["task"]](**(request.get("args") or {}))
            reply({"ok": True, "result": _jsonable(result)})
        except ArgumentError as e:
            reply({"ok": False, "error": str(e), "kind": "arguments"})
        except BaseException as e:  # noqa: BLE001 - every failure is the caller's to report
            reply(
                {
                    "ok": False,
                    "error": f"{type(e).__name__}: {e}",
                    "kind": "exception",
                    "traceback": traceback.format_exc()[-3000:],
                }
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
