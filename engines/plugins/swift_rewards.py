"""The ms-swift plugin of a run (``--external_plugins <run>/swift/aworld_plugin.py``, installed by
:func:`engines.swift.plugin.write_plugin`), started in ms-swift's own environment. It registers:

* one ORM per reward term, ``aworld_<term>`` (``--reward_funcs``), each calling the studio's reward code from the
  snapshot beside the plugin with the dataset's columns; the class is named after the term, so ms-swift logs
  ``rewards/<term>/mean``;
* the callback ``aworld_run`` (``--callbacks``): ends training at a step boundary, with a checkpoint, when the run
  directory's STOP file appears or the run process that launched ms-swift is gone; rollouts never sample the pad
  token (:func:`never_sample_pad`).

Parameters (``aworld_plugin.json``): ``spec`` (Reward.to_spec() entries, files relative to the plugin's folder),
``names`` (the terms), ``columns`` (the dataset's columns a reward may ask for), ``callback``.
"""

from __future__ import annotations

import os
from typing import Any

from ..rewards import RewardError, load_reward
from .files import resolved

ORM_PREFIX = "aworld_"
CALLBACK = "aworld_run"
WATCH_PID_ENV = "AWORLD_WATCH_PID"
RUN_DIR_ENV = "AWORLD_RUN_DIR"


def prompt_of(messages: list | None) -> list | None:
    """The prompt's messages (without the completion ms-swift may have appended)."""
    msgs = [dict(m) for m in (messages or []) if isinstance(m, dict)]
    if msgs and msgs[-1].get("role") == "assistant":
        msgs = msgs[:-1]
    return msgs or None


class Rewards:
    """The studio's Reward of the spec, loaded on first use (ms-swift applies the weights)."""

    def __init__(self, folder: str, spec: list[dict], columns: list[str]):
        self.folder, self.spec, self.columns, self._reward = folder, spec, columns, None

    @property
    def reward(self):
        if self._reward is None:
            self._reward = load_reward([resolved(i, self.folder) for i in self.spec])
        return self._reward

    def score(self, index: int, completions: list, kwargs: dict) -> list[float]:
        """Term ``index`` on each completion, with the answer (``solution``), the prompt and the row's columns."""
        term = self.reward.terms[index]
        n = len(completions)
        answers = kwargs.get("solution") or [None] * n
        messages = kwargs.get("messages") or [None] * n
        cols = {k: kwargs[k] for k in self.columns if isinstance(kwargs.get(k), list) and len(kwargs[k]) == n}
        out = []
        for i, completion in enumerate(completions):
            answer = answers[i]
            row = {k: v[i] for k, v in cols.items()}
            try:
                out.append(
                    float(term(completion, None if answer is None else str(answer), prompt_of(messages[i]), **row))
                )
            except Exception as e:
                raise RewardError(f"reward function '{term.name}' raised {type(e).__name__}: {e}") from e
        return out


class Term:
    """One term as an ms-swift ORM (mixed into ``swift.rewards.ORM`` by :func:`start`)."""

    rewards: Rewards
    index = 0

    def __call__(self, completions, **kwargs):
        return self.rewards.score(self.index, completions, kwargs)


def launcher_gone(env: dict | os._Environ = os.environ) -> bool:
    """Whether the run process that launched ms-swift (``AWORLD_WATCH_PID``) has ended."""
    pid = int(env.get(WATCH_PID_ENV) or 0)
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def everyone_agrees(flag: bool, args: Any) -> bool:
    """With several processes (NPROC_PER_NODE, NNODES) all stop at the same step: any one's stop counts."""
    try:
        import torch
        import torch.distributed as dist
    except ImportError:
        return flag
    if not (dist.is_available() and dist.is_initialized()):
        return flag
    t = torch.tensor([1.0 if flag else 0.0], device=getattr(args, "device", None))
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return bool(t.item())


def _eos_ids(*sources) -> set[int]:
    ids: set[int] = set()
    for value in sources:
        if isinstance(value, int):
            ids.add(value)
        elif isinstance(value, (list, tuple)):
            ids.update(v for v in value if isinstance(v, int))
    return ids


def never_sample_pad(model, tokenizer) -> int | None:
    """Keep the pad token out of rollouts (ms-swift 4.6's transformers engine drops generated pad ids, and a
    completion made only of them fails its GRPO step: 'Size does not match at dimension 1'). The rollout
    engine shares the model's generation config, so the token is suppressed there, in place. ms-swift lists
    the pad token among the generation's end tokens too; only a pad token that is the tokenizer's own end
    token (pad = eos) is left alone, since suppressing it would stop completions from ending."""
    config = getattr(model, "generation_config", None)
    pad = getattr(tokenizer, "pad_token_id", None)
    if pad is None and config is not None:
        pad = config.pad_token_id
    if config is None or not isinstance(pad, int):
        return None
    model_config = getattr(model, "config", None)
    if pad in _eos_ids(getattr(tokenizer, "eos_token_id", None), getattr(model_config, "eos_token_id", None)):
        return None
    suppressed = list(config.suppress_tokens or [])
    if pad not in suppressed:
        config.suppress_tokens = suppressed + [pad]
    return pad


class StopRequests:
    """Stop requests at a step boundary: training ends after this step and saves a checkpoint (mixed into
    ms-swift's ``TrainerCallback`` by :func:`start`). Rollouts never sample the pad token."""

    run_dir = ""

    def on_train_begin(self, args, state, control, **kwargs):
        tokenizer = kwargs.get("processing_class") or kwargs.get("tokenizer")
        pad = never_sample_pad(kwargs.get("model"), tokenizer)
        if pad is not None:
            print(
                f"[aworld] rollouts never sample the pad token (id {pad}): ms-swift drops it from completions",
                flush=True,
            )
        return control

    def on_step_end(self, args, state, control, **kwargs):
        wanted = os.path.exists(os.path.join(self.run_dir, "STOP")) or launcher_gone()
        if everyone_agrees(wanted, args) and not control.should_training_stop:
            control.should_training_stop = True
            control.should_save = True
            print(f"[aworld] stop requested: ending after step {state.global_step} with a checkpoint", flush=True)
        return control


def start(folder: str, params: dict[str, Any]) -> dict[str, Any]:
    """Register the ORMs and the callback with ms-swift; ``folder`` holds the plugin. Exports nothing."""
    from swift.callbacks import TrainerCallback, callbacks_map
    from swift.rewards import ORM, orms

    rewards = Rewards(folder, params["spec"], params["columns"])
    for i, name in enumerate(params["names"]):
        orms[ORM_PREFIX + name] = type(name, (Term, ORM), {"index": i, "rewards": rewards})
    run_dir = os.environ.get(RUN_DIR_ENV) or os.path.dirname(folder)
    callbacks_map[params["callback"]] = type("AworldRunCallback", (StopRequests, TrainerCallback), {"run_dir": run_dir})
    return {}
