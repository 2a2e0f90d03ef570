"""A user file a reward or tool spec names, found on the machine that runs the program: the original where this
machine has it, else the copy the run directory carries (what Ray ships to another node)."""

from __future__ import annotations

import os
from typing import Any


def found(target: str, copy: str | None, base: str) -> str:
    """``target`` when it is a file here, else ``base/copy``; FileNotFoundError when neither is."""
    if os.path.isfile(target):
        return target
    if copy and os.path.isfile(os.path.join(base, copy)):
        return os.path.join(base, copy)
    raise FileNotFoundError(f"{target} is not on this machine and has no copy in {base}")


def resolved(item: dict[str, Any], base: str) -> dict[str, Any]:
    """A Reward.to_spec() entry with its files found under ``base`` (the folder its relative names start from): a
    relative pickle joined to it, a user file's ``ref`` pointed at the original or the copy (``copy``/``attr`` gone)."""
    item = dict(item)
    if "pickle" in item and not os.path.isabs(item["pickle"]):
        item["pickle"] = os.path.join(base, item["pickle"])
    if "copy" in item or "attr" in item:
        target, _, attr = item["ref"].rpartition(":")
        item["ref"] = found(target, item.pop("copy", None), base) + ":" + item.pop("attr", attr)
    return item
