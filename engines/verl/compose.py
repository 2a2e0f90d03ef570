"""Compose verl's own Hydra config (``ppo_trainer``) with the user's settings and the studio's
derived values, then run verl's own checks on it.

Order of precedence, highest first:

1. what the user wrote (a nested verl YAML/dict, dotted keys, or the studio's short aliases);
2. values the studio derives from the agent, the datasets and the reward (model path, data files,
   reward bridge, tools, sampling, batch sizes that fit the data) — only where the user left the
   key empty (absent, ``null`` or ``""``);
3. verl's own defaults.

Always set, whatever the user wrote: ``trainer.logger`` contains ``console`` and ``file``
(wandb is never switched on by default) and a rollout backend name. verl's rules are never
re-implemented: the result goes through ``verl.utils.config.validate_config`` and verl's
dataclass conversion, and any error comes back as a :class:`CheckError` naming the keys involved.

Importing this module is cheap; Hydra, OmegaConf and verl are imported inside the functions.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import re
import warnings as _warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ..results.check_result import CheckError, did_you_mean

CONFIG_NAME = "ppo_trainer"
REWARD_KEY = "reward.custom_reward_function"  # verl >= 0.6 (0.9.1 reads only this one)
LEGACY_REWARD_KEY = "custom_reward_function"  # verl <= 0.5; still in 0.9.1's config, ignored by main_ppo
ROLLOUT_BACKENDS = ("vllm", "sglang")  # what a GPU machine may have installed, in order of preference

#: adapter settings that are not verl keys
ADAPTER_KEYS = {
    "ray_address": "a Ray cluster to submit to (http://<head>:8265); RAY_ADDRESS works too",
    "env_vars": "environment variables for the verl process / Ray job (a mapping)",
    "verl_python": "the Python that runs verl locally (an environment with verl[vllm]); AWORLD_VERL_PYTHON works too",
}
#: the studio's short names → verl keys
ALIASES = {
    "algorithm": "algorithm.adv_estimator",
    "learning_rate": "actor_rollout_ref.actor.optim.lr",
    "epochs": "trainer.total_epochs",
    "total_steps": "trainer.total_training_steps",
    "batch_size": "data.train_batch_size",
    "num_generations": "actor_rollout_ref.rollout.n",
    "max_completion_length": "data.max_response_length",
    "max_prompt_length": "data.max_prompt_length",
    "n_gpus_per_node": "trainer.n_gpus_per_node",
    "nnodes": "trainer.nnodes",
    "rollout": "actor_rollout_ref.rollout.name",
    "save_freq": "trainer.save_freq",
    "test_freq": "trainer.test_freq",
}
#: verl messages that name no key, and the keys they are about
MESSAGE_KEYS = {
    "real_train_batch_size": (
        "data.train_batch_size",
        "actor_rollout_ref.rollout.n",
        "trainer.n_gpus_per_node",
        "trainer.nnodes",
    ),
    "minimal possible batch size": ("trainer.n_gpus_per_node", "trainer.nnodes"),
    "n_gpus": ("trainer.n_gpus_per_node", "trainer.nnodes"),
}
#: dict nodes that take free-form keys (verl's ``+key=value`` places)
_OPEN_SUFFIXES = ("_kwargs", "kwargs", "override_config", "runtime_env", "env_vars", "ray_init")
#: default micro batch per GPU the studio fills when the user set none (verl requires one)
MICRO_BATCH_PER_GPU = 4
GROUP_SIZE = 8  # rollout.n for critic-free estimators when the user left it empty


def verl_config_dir() -> Path:
    spec = importlib.util.find_spec("verl")
    if spec is None or not spec.submodule_search_locations:
        raise CheckError("config", "verl is not installed", "pip install verl (see docs/VERL.md)")
    return Path(list(spec.submodule_search_locations)[0]) / "trainer" / "config"


# -- dotted paths ------------------------------------------------------------------------------
def is_empty(value: Any) -> bool:
    return value is None or (isinstance(value, str) and (not value.strip() or value.strip() == "???"))


def set_path(d: dict, path: str, value: Any) -> None:
    """``d[a][b][c] = value`` for ``"a.b.c"``; a mapping is merged into a mapping already there."""
    parts = path.split(".")
    for p in parts[:-1]:
        if not isinstance(d.get(p), dict):
            d[p] = {}
        d = d[p]
    old = d.get(parts[-1])
    d[parts[-1]] = _deep_merge(old, value) if isinstance(old, dict) and isinstance(value, dict) else value


def leaf_paths(d: dict, prefix: str = "") -> dict[str, Any]:
    """Dotted path → value for every non-dict leaf (dicts are walked, empty dicts kept as leaves)."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        path = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out.update(leaf_paths(v, path + "."))
        else:
            out[path] = v
    return out


def drop_empty(d: dict) -> dict:
    """The user's dict without the keys left empty (None / "" / "???" / {})."""
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            sub = drop_empty(v)
            if sub:
                out[k] = sub
        elif not is_empty(v):
            out[k] = v
    return out


# -- the user's input ---------------------------------------------------------------------------
@dataclass
class UserConfig:
    nested: dict[str, Any]  # verl keys, empty values removed
    groups: list[str]  # Hydra group overrides from a `defaults:` list, e.g. "model_engine=megatron"
    adapter: dict[str, Any]
    raw: dict[str, Any]  # what the user gave (for run.yaml), aliases expanded
    warnings: list[str] = field(default_factory=list)

    @property
    def paths(self) -> dict[str, Any]:
        return leaf_paths(self.nested)

    def sets(self, path: str) -> bool:
        """Did the user set ``path`` (or something inside it)?"""
        for p in self.paths:
            if p == path or p.startswith(path + ".") or path.startswith(p + "."):
                return True
        return False


def split_user_config(raw: dict[str, Any], verl_roots: Iterable[str]) -> UserConfig:
    """The user's settings → verl keys (short names and dotted keys expanded), Hydra group choices from a
    ``defaults:`` list, and the adapter's own keys. Unknown top-level keys are a check error."""
    import copy

    roots = set(verl_roots)
    nested: dict[str, Any] = {}
    groups: list[str] = []
    adapter: dict[str, Any] = {}
    warnings: list[str] = []
    unknown: list[str] = []
    for key, value in raw.items():
        key = str(key)
        if key == "defaults":
            for item in value or []:
                if isinstance(item, dict):
                    groups += [f"{str(g).replace('override ', '').strip()}={option}" for g, option in item.items()]
                elif item not in (CONFIG_NAME, "_self_"):
                    warnings.append(f"defaults entry '{item}' ignored (the base is verl's {CONFIG_NAME})")
        elif key == "hydra":
            warnings.append("the `hydra:` section is ignored (the run directory decides where outputs go)")
        elif key in ADAPTER_KEYS:
            adapter[key] = value
        elif key in ALIASES and not (
            key in roots and isinstance(value, dict)
        ):  # `algorithm: grpo` vs `algorithm: {..}`
            set_path(nested, ALIASES[key], value)
        elif key in roots or ("." in key and key.split(".")[0] in roots):
            set_path(nested, key, value)
        else:
            unknown.append(key)
    if unknown:
        names = sorted(roots | set(ALIASES) | set(ADAPTER_KEYS))
        raise CheckError(
            "config",
            "unknown config key(s): " + ", ".join(f"'{k}'{did_you_mean(k, names)}" for k in unknown),
            f"verl sections: {', '.join(sorted(roots))}; short names: {', '.join(sorted(ALIASES))}; "
            f"also {', '.join(sorted(ADAPTER_KEYS))}",
            keys=unknown,
        )
    kept = {**copy.deepcopy(nested), **adapter, **({"defaults": raw["defaults"]} if "defaults" in raw else {})}
    return UserConfig(nested=drop_empty(nested), groups=groups, adapter=adapter, raw=kept, warnings=warnings)


def _deep_merge(a: dict, b: dict) -> dict:
    out = dict(a)
    for k, v in b.items():
        out[k] = _deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


# -- composing -----------------------------------------------------------------------------------
_BASE_CACHE: dict[tuple[str, ...], Any] = {}


def compose_base(groups: list[str] | None = None):
    """verl's ``ppo_trainer`` through Hydra's compose API (struct mode, verl's defaults); a fresh copy
    each call, composed once per process and group choice."""
    import copy

    key = tuple(groups or [])
    if key not in _BASE_CACHE:
        _BASE_CACHE[key] = _compose(list(key))
    return copy.deepcopy(_BASE_CACHE[key])


def _compose(groups: list[str]):
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import HydraException

    if GlobalHydra.instance().is_initialized():
        GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(verl_config_dir()), version_base=None):
            return compose(config_name=CONFIG_NAME, overrides=groups)
    except HydraException as e:
        first = str(e).strip().splitlines()[0]
        options = [ln.strip() for ln in str(e).splitlines() if ln.startswith("\t")]
        raise CheckError(
            "config",
            f"verl's config has no such option: {first}",
            "fix the `defaults:` entry" + (f" (options: {', '.join(options)})" if options else ""),
            keys=[g.split("=")[0] for g in groups],
        )


def root_keys() -> list[str]:
    """verl's top-level config sections (cheap: read from ppo_trainer.yaml's defaults and body)."""
    import yaml

    text = (verl_config_dir() / f"{CONFIG_NAME}.yaml").read_text(encoding="utf-8")
    data = yaml.safe_load(text) or {}
    roots = {k for k in data if k != "defaults"}
    for item in data.get("defaults") or []:
        if isinstance(item, dict):
            for k in item:
                target = str(k).split("@")[-1] if "@" in str(k) else str(k)
                roots.add(target.split(".")[0])
        elif isinstance(item, str) and item != "_self_":
            sub = verl_config_dir() / f"{item}.yaml"
            if sub.is_file():
                roots.update(k for k in (yaml.safe_load(sub.read_text(encoding="utf-8")) or {}) if k != "defaults")
    return sorted(roots)


def _is_open(node: Any, name: str) -> bool:
    from omegaconf import DictConfig

    if node is None:
        return True
    if isinstance(node, DictConfig):
        return len(node) == 0 or name.endswith(_OPEN_SUFFIXES)
    return False


def unknown_keys(user: dict, base: Any, prefix: str = "") -> list[tuple[str, str]]:
    """(dotted key, " (did you mean ...)") for each key the user set that verl's config does not have —
    the keys Hydra would reject as overrides."""
    from omegaconf import DictConfig

    found: list[tuple[str, str]] = []
    if not isinstance(base, DictConfig):
        return found
    for key, value in user.items():
        path = f"{prefix}{key}"
        if key not in base.keys():  # (`in` is False for a ??? value)
            if not (_is_open(base, prefix.rstrip(".").split(".")[-1]) or str(key).endswith("_kwargs")):
                found.append((path, did_you_mean(str(key), [str(k) for k in base.keys()])))
            continue
        node = base._get_node(key)
        if isinstance(value, dict) and isinstance(node, DictConfig) and not node._is_none():
            found += unknown_keys(value, base[key], path + ".")
    return found


def merge_user(base, user: UserConfig):
    from omegaconf import OmegaConf

    cfg = base.copy()
    OmegaConf.set_struct(cfg, False)
    try:
        cfg = OmegaConf.merge(cfg, user.nested)
    except Exception as e:  # a value of the wrong shape, e.g. a mapping where verl has a list
        key = getattr(e, "full_key", None) or ""
        raise CheckError(
            "config",
            f"cannot apply the setting {key or ''}: {e}".strip(),
            "compare the value's shape with verl's default",
            keys=[key] if key else [],
        )
    OmegaConf.set_struct(cfg, True)
    return cfg


def set_value(cfg, path: str, value: Any) -> None:
    from omegaconf import OmegaConf, open_dict

    with open_dict(cfg):
        OmegaConf.update(cfg, path, value, merge=False, force_add=True)


def select(cfg, path: str, default: Any = None) -> Any:
    from omegaconf import OmegaConf

    try:
        return OmegaConf.select(cfg, path, default=default, throw_on_missing=False)
    except Exception:
        return default


def reward_function_key(cfg) -> str:
    """Where this verl version reads the custom reward function from."""
    from omegaconf import DictConfig

    return REWARD_KEY if isinstance(select(cfg, REWARD_KEY), DictConfig) else LEGACY_REWARD_KEY


def migrate_reward_key(cfg, user: UserConfig) -> list[str]:
    """A reward function set under the key of another verl version moves to the live key."""
    live = reward_function_key(cfg)
    other = LEGACY_REWARD_KEY if live == REWARD_KEY else REWARD_KEY
    if not user.sets(f"{other}.path"):
        return []
    moved = select(cfg, other)
    from omegaconf import OmegaConf

    values = OmegaConf.to_container(moved, resolve=False) if moved is not None else {}
    for k, v in (values or {}).items():
        if not is_empty(v) and not user.sets(f"{live}.{k}"):
            set_value(cfg, f"{live}.{k}", v)
            set_path(user.nested, f"{live}.{k}", v)
    if live == REWARD_KEY:
        for k in ("path", "name"):
            set_value(cfg, f"{LEGACY_REWARD_KEY}.{k}", None)
    return [f"`{other}` is not read by this verl version; its settings moved to `{live}`"]


# -- explaining verl's errors --------------------------------------------------------------------
_TOKEN_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


def config_paths(cfg) -> list[str]:
    from omegaconf import OmegaConf

    try:
        data = OmegaConf.to_container(cfg, resolve=False, throw_on_missing=False)
    except Exception:
        return []
    return list(leaf_paths(data))


def keys_in_message(text: str, cfg, scope: str | None = None) -> list[str]:
    """Config keys a verl error message talks about, as full dotted paths."""
    paths = config_paths(cfg)
    pathset = set(paths)
    found: list[str] = []

    def add(p: str) -> None:
        if p not in found:
            found.append(p)

    for phrase, keys in MESSAGE_KEYS.items():
        if phrase in text:
            for k in keys:
                add(k)
    for token in _TOKEN_RE.findall(text):
        if "_" not in token and "." not in token:
            continue
        if token in pathset:
            add(token)
            continue
        matches = [p for p in paths if p.endswith("." + token)]
        if scope:
            scoped = [p for p in matches if p.startswith(scope.rsplit(".", 1)[0] + ".")]
            matches = scoped or matches
        if 0 < len(matches) <= 2:
            for m in matches:
                add(m)
    return found


def verl_error(e: BaseException, cfg, what: str = "verl rejects the config") -> CheckError:
    text = str(e)
    scope = None
    m = re.search(r"full_key:\s*(\S+)", text)
    if m:
        scope = m.group(1)
    inner = text
    m2 = re.search(r"\n(\w+(?:Error|Exception)\((.*)\))\s*(?:\n|$)", text, re.S)
    if m2:
        inner = m2.group(2).strip("'\"")
    inner = re.sub(r"\s*full_key:.*", "", inner, flags=re.S).strip()
    keys = keys_in_message(text, cfg, scope)
    if scope and scope not in keys and not keys:
        keys.append(scope)
    shown = ", ".join(f"{k}={_short(select(cfg, k))}" for k in keys[:6])
    hint = f"check {shown}" if shown else "fix the setting verl names"
    return CheckError("config", f"{what}: {type(e).__name__}: {inner}", hint, keys=keys)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) < 60 else text[:57] + "..."


# -- verl's own checks ---------------------------------------------------------------------------
def run_verl_checks(cfg) -> list[str]:
    """verl's validate_config + its rollout/algorithm dataclasses; returns verl's printed notices."""
    from omegaconf import OmegaConf

    missing = [k for k in OmegaConf.missing_keys(cfg) if not _in_disabled_section(cfg, k)]
    if missing:
        raise CheckError(
            "config",
            f"required verl setting(s) not set: {', '.join(sorted(missing))}",
            "set them in the config YAML",
            keys=sorted(missing),
        )
    try:
        OmegaConf.to_container(cfg, resolve=True, throw_on_missing=False)
    except Exception as e:
        raise verl_error(e, cfg, "a ${...} reference in the config cannot be resolved")

    from verl.workers.rollout.base import _ROLLOUT_REGISTRY

    name = select(cfg, "actor_rollout_ref.rollout.name")
    names = sorted({n for n, _ in _ROLLOUT_REGISTRY})
    if name not in names:
        raise CheckError(
            "config",
            f"actor_rollout_ref.rollout.name={name!r} is not a verl rollout backend{did_you_mean(str(name), names)}",
            f"use one of {', '.join(names)}",
            keys=["actor_rollout_ref.rollout.name"],
        )

    from verl.trainer.ppo.core_algos import get_adv_estimator_fn

    est = select(cfg, "algorithm.adv_estimator")
    try:
        get_adv_estimator_fn(est)
    except ValueError:
        from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY

        raise CheckError(
            "config",
            f"algorithm.adv_estimator={est!r} is not a verl advantage estimator"
            f"{did_you_mean(str(est), ADV_ESTIMATOR_REGISTRY)}",
            f"use one of {', '.join(sorted(ADV_ESTIMATOR_REGISTRY))}",
            keys=["algorithm.adv_estimator"],
        )

    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import omega_conf_to_dataclass, validate_config

    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), _warnings.catch_warnings():
            _warnings.simplefilter("ignore")
            validate_config(config=cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
            omega_conf_to_dataclass(cfg.actor_rollout_ref.rollout)
            omega_conf_to_dataclass(cfg.algorithm)
    except Exception as e:
        raise verl_error(e, cfg)
    notes = [
        ln.strip() for ln in out.getvalue().splitlines() if ln.strip() and "All configuration checks passed" not in ln
    ]
    return notes


def _in_disabled_section(cfg, key: str) -> bool:
    """``reward.reward_model.rollout.name`` is ``???`` in verl's defaults but unused while disabled."""
    parts = key.split(".")
    for i in range(len(parts) - 1, 0, -1):
        enable = select(cfg, ".".join(parts[:i]) + ".enable")
        if enable is False:
            return True
    return False


def save_config(cfg, path: Path) -> Path:
    from omegaconf import OmegaConf

    path.parent.mkdir(parents=True, exist_ok=True)
    OmegaConf.save(cfg, str(path), resolve=False)
    return path
