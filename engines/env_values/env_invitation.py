"""Which environment variables a ``${NAME}`` may name, and where: by invitation in the studio.

The CLI and the Python API run as their user, who is the operator of their own environment: every ``${NAME}`` is
substituted, wherever it is written. The studio serves whoever can reach its page, and everything it substitutes
can come back to that person (a name or a prompt is shown, a model path is quoted in its error, a key goes to the
user's own code). So a studio substitutes

* only the names its operator invites — ``aworld-studio --env-allow OPENAI_API_KEY,HF_TOKEN`` or
  ``AWORLD_STUDIO_ENV_ALLOW``; none by default — a refused ``${NAME}`` is an error that names the setting, never
  the value;
* only in the values meant for secrets and endpoints (:data:`AGENT_FIELDS`: an agent's ``api_key`` and
  ``llm_base_url``; an MCP server's ``env``, ``headers`` and ``url``; an engine config's ``env_vars``), never in
  text it shows or echoes (a name, a prompt, a model path, a server's command line).

The studio states its invitation in :data:`INVITED_ENV` in its own environment, so every process it starts — its
check worker, the isolated checks, the fork server, runs and evaluations — applies the same rule; without it (the
CLI, the API) nothing is refused.
"""

from __future__ import annotations

import os
import re
from typing import Any, Iterable

#: a ``${NAME}`` or ``${NAME:-default}`` (group 1 the name, group 2 the default)
ENV_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")

#: the invited names (comma-separated), set by the studio for itself and everything it starts; unset: all names
INVITED_ENV = "AWORLD_ENV_INVITED"
#: the operator's setting (``aworld-studio --env-allow``)
STUDIO_ALLOW_ENV = "AWORLD_STUDIO_ENV_ALLOW"
ALLOW_OPTION = "--env-allow"
#: the agent's values a ``${NAME}`` may be written in, in a studio
AGENT_FIELDS = ("api_key", "llm_base_url")
#: an MCP server's settings a ``${NAME}`` may be written in, in a studio
SERVER_FIELDS = ("env", "headers", "url")


class NotInvited(ValueError):
    """A ``${NAME}`` the studio does not substitute: the message names the setting, never a value."""


def parse_names(text: str | None) -> list[str]:
    return sorted({n.strip() for n in (text or "").split(",") if n.strip()})


def invite(names: Iterable[str]) -> None:
    """This process and every process it starts substitute only ``names`` (the studio, at its start)."""
    os.environ[INVITED_ENV] = ",".join(sorted(set(names)))


def invited() -> frozenset[str] | None:
    """The names that may be substituted here; None when every name may (no studio started this process)."""
    value = os.environ.get(INVITED_ENV)
    return None if value is None else frozenset(parse_names(value))


def how_to_invite(name: str) -> str:
    """The fix for a variable the studio does not hand on: its operator's setting, spelled for ``name``."""
    return (
        f"whoever starts the studio adds it with `aworld-studio {ALLOW_OPTION} {name}` (or {STUDIO_ALLOW_ENV}={name})"
    )


def check_name(name: str) -> None:
    """Raise :class:`NotInvited` unless ``${name}`` may be substituted here."""
    allowed = invited()
    if allowed is not None and name not in allowed:
        raise NotInvited(
            f"${{{name}}} is not substituted: this studio substitutes only the environment variables its operator "
            f"invites ({', '.join(sorted(allowed)) or 'none'}) — {how_to_invite(name)}"
        )


def _references(value: Any) -> list[str]:
    if isinstance(value, str):
        return [m.group(0) for m in ENV_RE.finditer(value)]
    if isinstance(value, dict):
        return [r for k, v in value.items() for r in (*_references(k), *_references(v))]
    if isinstance(value, (list, tuple)):
        return [r for v in value for r in _references(v)]
    return []


def check_fields(values: dict[str, Any], allowed_fields: Iterable[str], where: str) -> None:
    """In a studio, raise :class:`NotInvited` for a ``${NAME}`` written outside ``allowed_fields`` of ``values``
    (``where``: what the values are, e.g. "the agent", "MCP server 'calc'")."""
    if invited() is None:
        return
    allowed_fields = tuple(allowed_fields)
    for key, value in values.items():
        refs = _references(value)
        if key not in allowed_fields and refs:
            raise NotInvited(
                f"{refs[0]} in {where}'s `{key}`: this studio substitutes environment variables only in "
                f"{', '.join(f'`{f}`' for f in allowed_fields)}, never in text it shows — write `{key}` itself"
            )
