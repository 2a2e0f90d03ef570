"""The ``trl`` engine's settings as the studio lists them: the engine's own keys first (the short
main form uses those marked ``main``), then every TRL field of GRPOConfig / SFTConfig / ModelConfig
with TRL's own help text, its type, default and valid values, and the modes it applies to."""

from __future__ import annotations

from typing import Any

from .config import ALIASES, ENGINE_KEYS, FIELDS
from .settings import GRPO, MODEL_CONFIG, OWNED, SFT, trl_fields


def describe() -> list[dict[str, Any]]:
    grpo, sft = trl_fields(GRPO), trl_fields(SFT)
    out: list[dict[str, Any]] = []
    for f in FIELDS:
        d = f.describe()
        theirs = grpo.get(f.name) or sft.get(f.name)
        d.update(
            group="engine",
            source="engine",
            modes=[GRPO, SFT],
            alias_of=ALIASES.get(f.name),
            trl_help=theirs.help if theirs is not None else None,
            trl_default=theirs.describe()["default"] if theirs is not None else None,
        )
        out.append(d)
    names = list(dict.fromkeys([*grpo, *sft]))
    for name in names:
        if name in ENGINE_KEYS or name in OWNED:
            continue
        f = grpo.get(name) or sft[name]
        d = f.describe()
        if name in grpo and name in sft and grpo[name].help != sft[name].help:
            d["help"] = f"GRPO: {grpo[name].help} — SFT: {sft[name].help}"
        d.update(
            group="model" if f.source == MODEL_CONFIG else "trl",
            main=False,
            modes=[m for m, fields in ((GRPO, grpo), (SFT, sft)) if name in fields],
            source=f.source
            if f.source == MODEL_CONFIG
            else "/".join(c for c, fields in (("GRPOConfig", grpo), ("SFTConfig", sft)) if name in fields),
        )
        out.append(d)
    return out
