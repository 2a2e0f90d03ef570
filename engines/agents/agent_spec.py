"""Load and check an agent: a YAML path, a dict, or an agent object.

Two YAML forms are accepted:

* AWorld's multi-agent form::

      agents:
        solver:
          system_prompt: ...
          llm_config: {llm_model_name: ${MODEL}, llm_temperature: 0.7, llm_base_url: ..., llm_api_key: ${KEY}}
          tools: [calculator.py:add]

* a flat form: ``name, model, system_prompt, temperature, top_p, max_tokens, tools, max_turns``.

``max_turns`` is how many model turns one rollout may take (a tool call and its result make one turn
more); AWorld's name for it, ``max_steps``, is accepted too. It is not the trainer's optimizer steps.

Either form may use MCP servers as tools, as AWorld agents do (``mcp_config`` + ``mcp_servers``, see
:mod:`engines.tools.mcp_servers`); their tools are listed by the check and join the Python tools in
:meth:`AgentSpec.tool_callables` and :attr:`AgentSpec.tool_schemas`.

``${VAR}`` and ``${VAR:-default}`` are substituted from the environment. Secrets never leave
this module unmasked (:mod:`engines.env_values.secret_values`): :meth:`AgentSpec.to_dict` writes the ``${VAR}``
a secret came from, or ``"****"`` when it was written literally.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .aworld_agents import LLM_CONFIG_KEYS, from_aworld_agent, is_aworld_agent, load_aworld_yaml
from ..results.check_result import CheckError, CheckResult, did_you_mean
from ..env_values.env_invitation import AGENT_FIELDS, NotInvited, check_fields
from ..inputs.loading import ReferenceError_, load_object, resolve_path
from ..tools.mcp_servers import AGENT_KEYS as MCP_KEYS
from ..tools.mcp_servers import McpSelection, parse_mcp
from ..tools.tool_schema import check_tool
from ..env_values.secret_values import (
    ENV_RE,
    MASK,
    env_reference,
    mask_secrets,
    mask_url_passwords,  # noqa: F401
    substitute_env,
)
from ..files.yaml_input import load_user_file

FLAT_KEYS = {
    "name",
    "model",
    "system_prompt",
    "temperature",
    "top_p",
    "max_tokens",
    "max_steps",
    "max_turns",
    "tools",
    "llm_base_url",
    "api_key",
    "description",
    "tool_names",
    *MCP_KEYS,
}


@dataclass
class AgentSpec:
    """The engine-neutral agent: what the policy is and how it is prompted and sampled."""

    name: str = "agent"
    model: str = ""
    system_prompt: str = ""
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 256
    max_steps: int = 1
    tools: list[str] = field(default_factory=list)
    llm_base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)  # never in repr/logs
    source: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    # where each secret came from: field -> "${VAR}" (or None when written literally)
    secret_refs: dict[str, str | None] = field(default_factory=dict)
    # what the check found (not part of the serialized spec)
    warnings: list[str] = field(default_factory=list, repr=False)
    tool_schemas: list[dict] = field(default_factory=list, repr=False)
    # MCP servers (AWorld's mcp_config/mcp_servers) and the tools the check listed from them
    mcp: McpSelection | None = field(default=None, repr=False)
    mcp_tools: list = field(default_factory=list, repr=False)
    # where each setting came from when it was not written in our own form (AWorld's Agent, its YAML loader)
    origins: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def has_tools(self) -> bool:
        """Whether the agent calls tools (Python functions or MCP servers)."""
        return bool(self.tools or self.mcp)

    @property
    def tool_servers(self) -> dict[str, str]:
        """Tool name → the MCP server it comes from (Python tools are not in it)."""
        return {t.name: t.server for t in self.mcp_tools}

    def to_dict(self) -> dict[str, Any]:
        """Serializable and safe to show or write: secrets masked."""
        d = {
            "name": self.name,
            "model": self.model,
            "system_prompt": self.system_prompt,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
            "max_steps": self.max_steps,
            "tools": list(self.tools),
        }
        if self.llm_base_url:
            d["llm_base_url"] = mask_url_passwords(self.llm_base_url)
        if self.api_key:
            d["api_key"] = self.secret_refs.get("api_key") or MASK
        if self.extra:
            d["extra"] = mask_secrets(self.extra)
        if self.mcp is not None:
            d.update(self.mcp.to_dict())
        return d

    def tool_callables(self) -> list[Callable]:
        """Python tools, then MCP tools: callables with a name, a Google-style docstring and annotations;
        an MCP tool's has ``mcp_server`` (the server's name) and calls that server when called."""
        out = [load_object(ref) for ref in self.tools]
        if self.mcp_tools:
            from ..tools.mcp_tools import callables

            out += callables(self.mcp_tools, self.mcp)
        return out


# Exported under the spec's name: `from engines import Agent`.
Agent = AgentSpec


def _read_yaml(path: Path) -> dict:
    data = load_user_file(path, module="agent", role="agent file")  # size, encoding, syntax, aliases
    if data is None:
        raise CheckError("agent", f"agent file {path.name} is empty", "write at least `model:` and `system_prompt:`")
    if not isinstance(data, dict):
        raise CheckError(
            "agent",
            f"agent file {path.name} must hold a mapping, not a {type(data).__name__}",
            "write keys like `name:`, `model:`, `system_prompt:`",
        )
    return data


def _from_object(obj: Any) -> dict:
    """Duck-typed AWorld Agent (or anything with similar attributes)."""
    d: dict[str, Any] = {}
    for key in ("name", "system_prompt", "model", "temperature", "max_tokens", "max_steps", "tools", *MCP_KEYS):
        val = getattr(obj, key, None)
        if callable(val) and key == "name":
            val = val()
        if val is not None:
            d[key] = val
    conf = getattr(obj, "conf", None) or getattr(obj, "config", None)
    llm = getattr(conf, "llm_config", None) if conf is not None else None
    if llm is not None:
        llm_d = llm if isinstance(llm, dict) else {k: getattr(llm, k) for k in dir(llm) if k.startswith("llm_")}
        d["llm_config"] = llm_d
    if isinstance(conf, dict):
        d.update({k: v for k, v in conf.items() if k not in d})
    if not d:
        raise CheckError(
            "agent",
            f"cannot read an agent from a {type(obj).__name__} object",
            "pass a YAML path, a dict, or an object with system_prompt and a model",
        )
    return d


def _select_agent(data: dict, warnings: list[str]) -> dict:
    agents = data.get("agents")
    if agents is None:  # flat form (an AWorld agent object or a single agent may still carry llm_config)
        return _flatten(data, data.get("name"))
    if isinstance(agents, list):
        agents = {a.get("name", f"agent{i}"): a for i, a in enumerate(agents) if isinstance(a, dict)}
    if not isinstance(agents, dict) or not agents:
        raise CheckError("agent", "`agents:` is empty", "define one agent under `agents:` (name → settings)")
    name, conf = next(iter(agents.items()))
    if len(agents) > 1:
        warnings.append(
            f"{len(agents)} agents defined; training '{name}' (the first). Others: {', '.join(list(agents)[1:])}"
        )
    if not isinstance(conf, dict):
        raise CheckError("agent", f"agent '{name}' must be a mapping of settings")
    return _flatten(conf, name)


def _flatten(conf: dict, name: Any) -> dict:
    """One agent's settings with its ``llm_config`` mapped onto the flat keys (flat keys win)."""
    llm = conf.get("llm_config") or {}
    if not isinstance(llm, dict):
        raise CheckError(
            "agent",
            f"`llm_config` must be a mapping, not {type(llm).__name__}",
            "write llm_config: {llm_model_name: ..., llm_temperature: ...}",
        )
    flat = {"name": name} if name is not None else {}
    for key, target in LLM_CONFIG_KEYS.items():
        if target and key in llm:
            flat[target] = llm[key]
    for key, value in conf.items():
        if key != "llm_config":
            flat[key] = value
    return flat


def _number(data: dict, key: str, kind: type, default: Any, lo: float, hi: float) -> Any:
    value = data.get(key, default)
    if value is None or value == "":
        return default
    try:
        cast = kind(value)
        if kind is int and float(value) != cast:
            raise ValueError
    except (TypeError, ValueError):
        raise CheckError("agent", f"`{key}` must be {'an integer' if kind is int else 'a number'}, got {value!r}")
    if not lo <= cast <= hi:
        raise CheckError("agent", f"`{key}` = {cast} is out of range", f"use a value between {lo} and {hi}")
    return cast


def _max_turns(flat: dict, default: int) -> int:
    """``max_turns`` (or AWorld's ``max_steps``): model turns per rollout."""
    given = {k: flat[k] for k in ("max_turns", "max_steps") if flat.get(k) not in (None, "")}
    if len(given) == 2 and str(given["max_turns"]) != str(given["max_steps"]):
        raise CheckError(
            "agent",
            f"`max_turns` ({given['max_turns']}) and `max_steps` ({given['max_steps']}) disagree",
            "they are the same setting (model turns per rollout): keep one",
        )
    key = "max_turns" if "max_turns" in given else "max_steps"
    return _number(flat, key, int, default, 1, 1000)


def _no_model(raw: dict, missing: list[str], unknown: list[str]) -> None:
    """The agent names no model: say why (an unset ${VAR}, a misspelt key, a wrong type)."""
    written = raw.get("model")
    unset = sorted({m.group(1) for m in ENV_RE.finditer(written)} & set(missing)) if isinstance(written, str) else []
    if unset:
        raise CheckError(
            "agent",
            f"the agent's model is `{written}`, but the environment variable(s) {', '.join(unset)} are not set",
            f"export {unset[0]}=<model folder or id> before starting, or write the model's path",
            key="model",
        )
    if written not in (None, "") and not isinstance(written, str):
        raise CheckError(
            "agent", f"`model` must be text (a folder or a model id), not a {type(written).__name__}", key="model"
        )
    close = [k for k in unknown if did_you_mean(k, ["model", "llm_model_name"])]
    hint = f" (the key '{close[0]}'{did_you_mean(close[0], ['model', 'llm_model_name'])})" if close else ""
    raise CheckError(
        "agent",
        f"the agent names no model{hint}",
        "set `model:` (a local folder or a model id) or `llm_config.llm_model_name`",
        key="model",
    )


def load_agent(agent: Any, load_tools: bool = True) -> AgentSpec:
    """Parse, substitute, validate. Raises :class:`CheckError` with a fix-it message."""
    warnings: list[str] = []
    base_dir: Path | None = None
    source = None
    origins: dict[str, str] = {}
    if isinstance(agent, AgentSpec):
        # keep the ${VAR} a key came from, so the re-checked spec still writes the reference
        data = agent.to_dict() | {"api_key": agent.secret_refs.get("api_key") or agent.api_key}
        if agent.mcp is not None:  # secrets as written, not masked: this is the same agent, re-checked
            data.update(agent.mcp.raw_dict())
        source = agent.source
    elif isinstance(agent, (str, os.PathLike)):
        path = Path(os.path.expanduser(str(agent)))
        if not path.exists():
            raise CheckError(
                "agent",
                f"agent file '{agent}' does not exist",
                "give the path of an agent YAML (e.g. assets/agents/letters_agent.yaml)",
            )
        if path.is_dir():
            raise CheckError("agent", f"'{agent}' is a folder, not an agent YAML file")
        data = _read_yaml(path)
        base_dir = path.resolve().parent
        source = str(path.resolve())
        aworld_form = load_aworld_yaml(path, data)  # AWorld's own loader, when aworld is installed
        warnings += data.pop("__aworld_warnings__", [])
        if aworld_form is not None:
            data, origins, more = aworld_form
            warnings += more
    elif isinstance(agent, dict):
        data = dict(agent)
    elif is_aworld_agent(agent):
        data, origins, more = from_aworld_agent(agent)
        warnings += more
    else:
        data = _from_object(agent)

    raw = _select_agent(data, warnings)
    missing: list[str] = []
    secret_refs: dict[str, str | None] = {}
    if isinstance(raw.get("api_key"), str):
        secret_refs["api_key"] = env_reference(raw["api_key"])
        if secret_refs["api_key"] is None and raw["api_key"] not in ("", MASK):
            warnings.append("an API key is written literally in the agent config; use ${ENV_VAR} instead")
        elif raw["api_key"] == MASK:
            warnings.append(
                "api_key is '****': a key written literally is never stored (uploads are masked); "
                "pass it as api_key: ${ENV_VAR} (docs/SECURITY.md)"
            )
    own = {k: v for k, v in raw.items() if k not in MCP_KEYS}
    try:
        check_fields(own, AGENT_FIELDS, "the agent")  # in a studio: ${NAME} only where secrets and endpoints go
        mcp = parse_mcp(raw, base_dir, warnings, missing)  # substitutes its own values, keeps what was written
        flat = substitute_env(own, missing)
    except NotInvited as e:
        raise CheckError("agent", str(e)) from None
    if missing:
        warnings.append(f"environment variable(s) not set: {', '.join(sorted(set(missing)))}")

    unknown = [k for k in flat if k not in FLAT_KEYS and k not in ("extra", "source", "secret_refs")]
    for k in unknown:
        warnings.append(f"unknown agent key '{k}'{did_you_mean(k, FLAT_KEYS)} — ignored")

    model = flat.get("model") or ""
    if not isinstance(model, str) or not model.strip():
        _no_model(raw, missing, unknown)
    model = model.strip()
    local = resolve_path(model, base_dir)
    if local.exists():
        model = str(local)
    elif model.startswith((".", "/", "~")):
        looked = (base_dir / model).resolve() if base_dir is not None else local
        raise CheckError(
            "agent",
            f"model folder '{model}' does not exist (looked at {looked})",
            "fix the path; relative paths are resolved against the agent YAML's folder",
        )
    else:
        warnings.append(
            f"model '{model}' is not a local folder; it will be loaded by id (needs a hub connection or a local cache)"
        )

    system_prompt = flat.get("system_prompt") or ""
    if not isinstance(system_prompt, str):
        raise CheckError("agent", "`system_prompt` must be text")
    if not system_prompt.strip():
        warnings.append("no system prompt: prompts go to the model without one")

    tools = flat.get("tools") or []
    if isinstance(tools, str):
        tools = [tools]
    if not isinstance(tools, list):
        raise CheckError("agent", "`tools` must be a list of 'file.py:function' or 'module:function' references")
    tool_refs: list[str] = []
    schemas: list[dict] = []
    for t in tools:
        if callable(t):
            from ..inputs.loading import object_ref

            ref = object_ref(t)
            if ref is None:
                raise CheckError(
                    "agent", f"tool {t!r} is not importable by reference", "define tools at module level in a .py file"
                )
            fn = t
        else:
            if not isinstance(t, str) or ":" not in t:
                raise CheckError(
                    "agent",
                    f"tool {t!r} is not a reference",
                    "write 'path/to/tools.py:function' or 'package.module:function'",
                )
            target, _, attr = t.rpartition(":")
            if target.endswith(".py"):
                ref = f"{resolve_path(target, base_dir)}:{attr}"
            else:
                ref = t
            fn = None
        if load_tools:
            if fn is None:
                try:
                    fn = load_object(ref)
                except ReferenceError_ as e:
                    raise CheckError("agent", f"tool '{t}' cannot be loaded: {e}")
            schemas.append(check_tool(fn, ref))
        tool_refs.append(ref)
    mcp_tools = []
    if mcp is not None and load_tools:
        from ..tools.mcp_tools import discover

        mcp_tools, mcp_schemas = discover(mcp, [s["function"]["name"] for s in schemas], warnings)
        schemas += mcp_schemas

    spec = AgentSpec(
        name=str(flat.get("name") or "agent"),
        model=model,
        system_prompt=system_prompt,
        temperature=_number(flat, "temperature", float, 1.0, 0.0, 5.0),
        top_p=_number(flat, "top_p", float, 1.0, 0.0, 1.0),
        max_tokens=_number(flat, "max_tokens", int, 256, 1, 1_000_000),
        max_steps=_max_turns(flat, 3 if tool_refs or mcp else 1),
        tools=tool_refs,
        llm_base_url=flat.get("llm_base_url"),
        api_key=flat.get("api_key") or None,
        source=source,
        secret_refs=secret_refs,
        warnings=warnings,
        tool_schemas=schemas,
        mcp=mcp,
        mcp_tools=mcp_tools,
        origins=origins,
    )
    return spec


def agent_result(spec: AgentSpec) -> CheckResult:
    warnings, schemas = list(spec.warnings), list(spec.tool_schemas)
    servers = spec.tool_servers
    tools = (
        ", ".join(
            f"{n} ({servers[n]})" if n in servers else n
            for n in (s.get("function", {}).get("name", "?") for s in schemas)
        )
        or "none"
    )
    msg = f"'{spec.name}' on {Path(spec.model).name or spec.model}; tools: {tools}; max turns {spec.max_steps}"
    details: dict[str, Any] = {"spec": spec.to_dict(), "tool_schemas": schemas}
    if spec.origins:
        details["origins"] = dict(spec.origins)
        forms = sorted(
            {m.group(1) for v in spec.origins.values() for m in [re.search(r"\((AWorld form[^)]*)\)", v)] if m}
        )
        msg += f" — {'; '.join(forms)}" if forms else ""
    if spec.mcp is not None:
        details["tool_servers"] = servers
        details["mcp_servers"] = [
            {
                "name": s.name,
                "transport": s.transport,
                "target": s.target(),
                "tools": [t.name for t in spec.mcp_tools if t.server == s.name],
                **({"cwd": s.cwd} if s.cwd else {}),
                **({"cwd_note": s.cwd_note} if s.cwd_note else {}),
                **({"session_timeout": s.session_timeout} if s.session_timeout else {}),
            }
            for s in spec.mcp.servers
        ]
    return CheckResult("agent", "warning" if warnings else "ok", msg, details=details, warnings=warnings)
