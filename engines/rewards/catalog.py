"""The reward registry: the studio's built-ins beside the ecosystem's rewards, each with its source, the
packages it needs, the arguments a factory takes, and (verl) the ``data_source`` values it serves.

* TRL: every name ``trl.rewards`` exports (read from the installed TRL, so a new TRL adds entries).
* verl: ``default_compute_score`` and the per-source scorers it dispatches to, read from the source of
  the installed ``verl.utils.reward_score`` (its ``data_source`` branches) without importing verl.
* more sources: :func:`register_source` (the swift engine registers ms-swift's own ORMs, ``swift:<name>``).

Each entry is plain data (the studio shows it without importing reward code)::

    {"key": "trl.rewards:accuracy_reward", "label": ..., "source": "trl", "description": ...,
     "requires": ["math-verify"], "missing": [], "factory": False, "args": {}, "data_sources": [],
     "example": "\\boxed{{answer}}"}
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import inspect
from typing import Any, Callable

from .builtins import BUILTIN_REWARDS, builtin_descriptions
from .requirements import missing_requirements, pip_name, requirements_of

BOXED = "The answer is \\boxed{{answer}}"
THINK = "<think>\nreasoning\n</think>\n{answer}"
#: how a correct completion looks to a reward (its reference completion in the dry run)
EXAMPLES: dict[str, str] = {
    "answer_format": "<answer>{answer}</answer>",
    "trl.rewards:accuracy_reward": BOXED,
    "trl.rewards:get_cosine_scaled_reward": BOXED,
    "trl.rewards:reasoning_accuracy_reward": "<think>\nreasoning\n</think>\n" + BOXED,
    "trl.rewards:think_format_reward": THINK,
    "gsm8k": "#### {answer}",
    "math_reward": BOXED,
    "math_dapo": BOXED,
    "prime_math": BOXED,
    "geo3k": BOXED,
    "math_verify": BOXED,
    "search_r1_like_qa_em": "<answer>{answer}</answer>",
}
#: what a reward scores when it does not score the answer (the dry run does not expect it to prefer
#: the reference answer over a wrong one in the same format)
ASPECTS: dict[str, str] = {
    "answer_format": "format",
    "length_penalty": "length",
    "trl.rewards:think_format_reward": "format",
    "trl.rewards:get_soft_overlong_punishment": "length",
    "trl.rewards:get_repetition_penalty_reward": "length",
}
#: example arguments of factories (the studio fills them in when one is picked)
FACTORY_ARGS: dict[str, dict[str, Any]] = {
    "trl.rewards:get_soft_overlong_punishment": {"max_completion_len": 512, "soft_punish_cache": 64},
    "trl.rewards:get_cosine_scaled_reward": {"max_len": 512},
    "trl.rewards:get_repetition_penalty_reward": {"ngram_size": 3, "max_penalty": -1.0},
}
VERL_SCORE = "verl.utils.reward_score"
#: scorers that need a service to run (verl's sandbox for code)
VERL_NOTES = {
    "sandbox_fusion": "needs a Sandbox Fusion service (sandbox_fusion_url)",
    "prime_code": "runs the completion's code against test cases",
}

_SOURCES: dict[str, Callable[[], list[dict[str, Any]]]] = {}


def register_source(name: str, entries: Callable[[], list[dict[str, Any]]]) -> None:
    """Add a source of catalog entries (called when the catalog is built; errors are reported, not raised)."""
    _SOURCES[name] = entries


def builtin_names() -> list[str]:
    return list(BUILTIN_REWARDS)


def _doc(obj: Any) -> str:
    doc = inspect.getdoc(obj) or ""
    first = doc.split("\n\n")[0]
    return " ".join(first.split())


def _entry(key: str, source: str, description: str, **extra: Any) -> dict[str, Any]:
    requires = [pip_name(m) for m in requirements_of(key)] + [pip_name(m) for m in extra.pop("needs", ())]
    missing = [p for p, _ in missing_requirements(key)] + extra.pop("missing", [])
    label = extra.pop("label", None) or key
    return {
        "key": key,
        "label": label,
        "source": source,
        "description": description,
        "requires": requires,
        "missing": sorted(set(missing)),
        "factory": False,
        "args": {},
        "data_sources": [],
        "example": EXAMPLES.get(key),
        "aspect": ASPECTS.get(key, "answer"),
        **extra,
    }


def builtin_entries() -> list[dict[str, Any]]:
    return [_entry(name, "aworld", desc, label=name) for name, desc in builtin_descriptions().items()]


def trl_entries() -> list[dict[str, Any]]:
    import trl
    import trl.rewards as rewards

    out = []
    for name in [n for n in getattr(rewards, "__all__", []) if not n.endswith("_rewards")]:
        key = f"trl.rewards:{name}"
        try:
            fn = getattr(rewards, name)
        except Exception as e:  # noqa: BLE001 - a TRL submodule that fails to import
            out.append(_entry(key, "trl", f"cannot be imported: {type(e).__name__}: {e}", label=f"TRL · {name}"))
            continue
        factory = name.startswith("get_")
        args = FACTORY_ARGS.get(key, {}) if factory else {}
        if factory and not args:
            params = inspect.signature(fn).parameters.items()
            args = {n: (None if p.default is p.empty else p.default) for n, p in params}
        out.append(_entry(key, f"trl {trl.__version__}", _doc(fn), label=f"TRL · {name}", factory=factory, args=args))
    return out


@functools.lru_cache(maxsize=1)
def verl_source_map() -> dict[str, list[str]]:
    """{scorer module: [data_source values]} read from ``default_compute_score``'s branches (its source
    file, parsed, not imported); ``"aime*"`` stands for a prefix."""
    spec = importlib.util.find_spec(VERL_SCORE)
    if spec is None or not spec.origin:
        return {}
    tree = ast.parse(open(spec.origin, encoding="utf-8").read())
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "default_compute_score"), None)
    if fn is None:
        return {}
    out: dict[str, list[str]] = {}
    branch = next((n for n in fn.body if isinstance(n, ast.If)), None)
    while isinstance(branch, ast.If):
        sources = _sources(branch.test)
        modules = [
            a.name
            for n in ast.walk(ast.Module(body=branch.body, type_ignores=[]))
            if isinstance(n, ast.ImportFrom) and n.level == 1
            for a in n.names
        ]
        for m in modules:
            out.setdefault(m, []).extend(s for s in sources if s not in out[m])
        branch = branch.orelse[0] if len(branch.orelse) == 1 and isinstance(branch.orelse[0], ast.If) else None
    return out


def _sources(test: ast.AST) -> list[str]:
    if isinstance(test, ast.BoolOp):
        return [s for v in test.values for s in _sources(v)]
    if isinstance(test, ast.Compare) and len(test.comparators) == 1:
        right = test.comparators[0]
        if isinstance(right, ast.Constant) and isinstance(right.value, str):
            return [right.value]
        if isinstance(right, (ast.List, ast.Tuple, ast.Set)):
            return [e.value for e in right.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    if isinstance(test, ast.Call) and getattr(test.func, "attr", "") == "startswith" and test.args:
        arg = test.args[0]
        if isinstance(arg, ast.Constant):
            return [f"{arg.value}*"]
    return []


def verl_module_for(data_source: str, source_map: dict[str, list[str]] | None = None) -> str | None:
    """The scorer module verl's default_compute_score uses for ``data_source``."""
    for module, sources in (verl_source_map() if source_map is None else source_map).items():
        for s in sources:
            if s == data_source or (s.endswith("*") and data_source.startswith(s[:-1])):
                return module
    return None


def verl_entries() -> list[dict[str, Any]]:
    try:
        import importlib.metadata as md

        version = md.version("verl")
    except Exception:  # noqa: BLE001
        return []
    source_map = verl_source_map()
    out = [
        _entry(
            f"{VERL_SCORE}:default_compute_score",
            f"verl {version}",
            "verl's default: picks the scorer by each row's data_source (raises for a source it does not know)",
            label="verl · default_compute_score (by data_source)",
            data_sources=sorted({s for v in source_map.values() for s in v}),
        )
    ]
    for module, sources in source_map.items():
        key = f"{VERL_SCORE}.{module}:compute_score"
        note = VERL_NOTES.get(module)
        desc = f"verl's scorer for data_source {', '.join(sources)}" + (f"; {note}" if note else "")
        out.append(
            _entry(
                key,
                f"verl {version}",
                desc,
                label=f"verl · {module}",
                data_sources=sources,
                example=EXAMPLES.get(module),
            )
        )
    return out


def catalog() -> list[dict[str, Any]]:
    """Every reward the picker offers: built-ins, TRL's, verl's, then registered sources."""
    entries = builtin_entries()
    for name, build in [("trl", trl_entries), ("verl", verl_entries), *_SOURCES.items()]:
        try:
            entries += build()
        except Exception as e:  # noqa: BLE001 - one source failing leaves the others listed
            entries.append(
                {
                    "key": f"error:{name}",
                    "label": f"{name} rewards unavailable",
                    "source": name,
                    "description": f"{type(e).__name__}: {e}",
                    "requires": [],
                    "missing": [],
                    "factory": False,
                    "args": {},
                    "data_sources": [],
                    "example": None,
                    "aspect": None,
                    "error": True,
                }
            )
    return entries


def example_for(key: str | None, data_source: str | None = None) -> str | None:
    """The completion template (with ``{answer}``) a catalog reward scores as correct."""
    if not key:
        return None
    if key in EXAMPLES:
        return EXAMPLES[key]
    if key.startswith(VERL_SCORE):
        module = key.rpartition(":")[0][len(VERL_SCORE) + 1 :]
        if not module and data_source:
            module = verl_module_for(data_source) or ""
        return EXAMPLES.get(module)
    return None


def aspect_of(key: str | None) -> str:
    """``answer`` (scores correctness: user functions too), ``format`` or ``length``."""
    return ASPECTS.get(key or "", "answer")
