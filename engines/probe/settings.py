"""The settings a probe reads from a checked run's effective config, whatever the engine calls them: the group size,
the completion budget, sampling, the run's length and evaluation cadence, and which generation path the probe takes
for this engine (said in the report)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

#: engine → config key of each setting (dotted: a nested key, verl's Hydra config); the first one present wins
KEYS: dict[str, dict[str, tuple[str, ...]]] = {
    "verl": {
        "num_generations": ("actor_rollout_ref.rollout.n",),
        "max_completion_length": ("data.max_response_length",),
        "temperature": ("actor_rollout_ref.rollout.temperature",),
        "top_p": ("actor_rollout_ref.rollout.top_p",),
        "max_steps": ("trainer.total_training_steps",),
        "eval_steps": ("trainer.test_freq",),
        "prompts_per_step": ("data.train_batch_size",),
        "beta": ("actor_rollout_ref.actor.kl_loss_coef",),
    },
}
DEFAULT_KEYS: dict[str, tuple[str, ...]] = {
    "num_generations": ("num_generations",),
    "max_completion_length": ("max_completion_length",),
    "temperature": ("temperature",),
    "top_p": ("top_p",),
    "max_steps": ("max_steps",),
    "eval_steps": ("eval_steps",),
    "eval_samples": ("eval_samples",),
    "prompts_per_step": ("prompts_per_step",),
    "beta": ("beta",),
    "mode": ("mode",),
}
#: how the probe generates for each engine (the report says it)
GENERATION = {
    "trl": "the trl engine's generation: its sampling settings and chat template, tool calls parsed as TRL's "
    "GRPOTrainer parses them, tools run up to the agent's max turns (engines/inference/rollout.py)",
}
OWN_ROLLOUT = (
    "this project's own rollout on the base model (engines/inference/rollout.py: the same chat template, "
    "system prompt and tools), not {engine}'s own generation"
)


@dataclass(frozen=True)
class ProbeSettings:
    engine: str
    mode: str
    model: str
    num_generations: int
    max_completion_length: int
    temperature: float
    top_p: float
    max_steps: int | None
    eval_steps: int | None
    eval_samples: int | None
    prompts_per_step: int | None
    beta: float
    max_turns: int
    has_tools: bool

    @property
    def generation(self) -> str:
        return GENERATION.get(self.engine) or OWN_ROLLOUT.format(engine=self.engine)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "generation": self.generation}


def lookup(config: dict[str, Any], dotted: str) -> Any:
    value: Any = config
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def _number(value: Any, kind: type, default: Any) -> Any:
    try:
        return kind(value) if value is not None and value != "" else default
    except (TypeError, ValueError):
        return default


def probe_settings(engine: str, effective: dict[str, Any] | None, agent: Any) -> ProbeSettings:
    """What the probe samples with: the engine's effective config, the agent's values where the config has none."""
    cfg = dict(effective or {})
    keys = {**DEFAULT_KEYS, **KEYS.get(engine, {})}

    def get(name: str) -> Any:
        return next((v for k in keys.get(name, ()) if (v := lookup(cfg, k)) is not None), None)

    group = _number(get("num_generations"), int, 8)
    eval_steps = _number(get("eval_steps"), int, None)
    return ProbeSettings(
        engine=engine,
        mode=str(get("mode") or "grpo"),
        model=str(cfg.get("model") or agent.model),
        num_generations=max(1, group),
        max_completion_length=max(1, _number(get("max_completion_length"), int, int(agent.max_tokens or 256))),
        temperature=_number(get("temperature"), float, float(agent.temperature)),
        top_p=_number(get("top_p"), float, float(getattr(agent, "top_p", None) or 1.0)),
        max_steps=_number(get("max_steps"), int, None),
        eval_steps=eval_steps if eval_steps and eval_steps > 0 else None,
        eval_samples=_number(get("eval_samples"), int, None),
        prompts_per_step=_number(get("prompts_per_step"), int, None),
        beta=_number(get("beta"), float, 0.0),
        max_turns=max(1, int(agent.max_steps or 1)),
        has_tools=bool(agent.has_tools),
    )
