"""AWorld's own agents as inputs: an ``aworld`` ``Agent`` object, or AWorld's agent YAML read by AWorld's loader.

* :func:`is_aworld_agent` — whether an object is one of AWorld's agents (a class from the ``aworld`` package
  in its MRO); nothing of ``aworld`` is imported to tell.
* :func:`from_aworld_agent` — the agent's settings in the flat form :func:`engines.agents.agent_spec.load_agent` reads,
  with where each came from (``origins``): ``AgentConfig.llm_config.llm_model_name`` → ``model`` and so on.
* :func:`load_aworld_yaml` — an ``agents:`` YAML through ``aworld.config.agent_loader.load_agents_from_yaml``
  when ``aworld`` is installed (its ``${VAR}`` and ``${vars.KEY}`` substitution, its Agent classes); None
  when it is not, and the YAML is then read as before (same keys, our own substitution).

What AWorld's Agent holds that training cannot use is said, not dropped silently: AWorld's registered
tools (``tool_names``) are its runtime's, not Python functions or MCP servers, and are left out with a
warning. AWorld substitutes ``${VAR}`` in ``mcp_config`` when the Agent is built, so its secrets arrive
as values: they are masked in everything written (run.yaml), as literal secrets are.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Iterator

FORM = "AWorld form"
#: ModelConfig field → our flat key
LLM_FIELDS = {
    "llm_model_name": "model",
    "llm_temperature": "temperature",
    "llm_base_url": "llm_base_url",
    "llm_api_key": "api_key",
}
MCP_FIELDS = ("mcp_config", "mcp_servers", "black_tool_actions")


#: AWorld's llm_config keys → the agent's own (None: read and dropped)
LLM_CONFIG_KEYS = {
    "llm_model_name": "model",
    "llm_temperature": "temperature",
    "llm_top_p": "top_p",
    "llm_max_tokens": "max_tokens",
    "max_tokens": "max_tokens",
    "llm_base_url": "llm_base_url",
    "llm_api_key": "api_key",
    "llm_provider": None,
}


def is_aworld_agent(obj: Any) -> bool:
    """An object of one of ``aworld``'s agent classes (or a subclass of one)."""
    return any(
        getattr(c, "__module__", "").split(".")[0] == "aworld" and c.__name__.endswith("Agent")
        for c in type(obj).__mro__
    )


def _get(obj: Any, key: str) -> Any:
    if isinstance(obj, dict):
        return obj.get(key)
    return getattr(obj, key, None)


def from_aworld_agent(agent: Any, where: str = "Agent object") -> tuple[dict[str, Any], dict[str, str], list[str]]:
    """(flat settings, origins, warnings) of an AWorld ``Agent``; ``where`` names how it came (shown)."""
    flat: dict[str, Any] = {}
    origins: dict[str, str] = {}
    warnings: list[str] = []
    name = agent.name() if callable(getattr(agent, "name", None)) else _get(agent, "name")
    if name:
        flat["name"], origins["name"] = str(name), "Agent(name=...)"
    conf = _get(agent, "conf")
    llm = _get(conf, "llm_config") if conf is not None else None
    if llm is not None:
        for field, key in LLM_FIELDS.items():
            value = _get(llm, field)
            if value not in (None, ""):
                flat[key], origins[key] = value, f"AgentConfig.llm_config.{field}"
        params = _get(llm, "params") or {}
        for key in ("max_tokens", "top_p"):
            if isinstance(params, dict) and params.get(key) is not None:
                flat[key], origins[key] = params[key], f"AgentConfig.llm_config.params.{key}"
    prompt = _get(agent, "system_prompt") or (_get(conf, "system_prompt") if conf is not None else None)
    if prompt:
        flat["system_prompt"] = prompt
        origins["system_prompt"] = (
            "Agent(system_prompt=...)" if _get(agent, "system_prompt") else "AgentConfig.system_prompt"
        )
    steps = _get(conf, "max_steps") if conf is not None else None
    if steps and steps != _default_max_steps():  # AWorld's default (10) is its loop's, not a choice made here
        flat["max_steps"], origins["max_turns"] = steps, "AgentConfig.max_steps"
    for key in MCP_FIELDS:
        value = _get(agent, key)
        if value:
            flat[key], origins[key] = (dict(value) if isinstance(value, dict) else value), f"Agent({key}=...)"
    tool_names = [t for t in (_get(agent, "tool_names") or []) if isinstance(t, str)]
    if tool_names:
        warnings.append(
            f"AWorld tools {', '.join(tool_names)} (tool_names) are AWorld runtime tools, not Python "
            "functions or MCP servers: not used in training — serve them through an MCP server "
            "(mcp_config) or give Python tools as `tools: [file.py:function]`"
        )
    return flat, {k: f"{v} ({FORM}: {where})" for k, v in origins.items()}, warnings


def _default_max_steps() -> Any:
    try:
        from aworld.config.conf import AgentConfig

        return AgentConfig.model_fields["max_steps"].default
    except Exception:  # noqa: BLE001
        return None


def load_aworld_yaml(path: Path, data: dict) -> tuple[dict[str, Any], dict[str, str], list[str]] | None:
    """An ``agents:`` YAML through AWorld's own loader, when ``aworld`` is installed; None otherwise, when the
    YAML is not in AWorld's multi-agent form, or when AWorld's loader cannot read it (then it is read in this
    project's form, and a warning says so).

    The Agent AWorld builds gives the settings; what AWorld substitutes at build time and must stay a
    ``${VAR}`` reference here (secrets in ``mcp_config``, ``llm_api_key``) is taken as written, after
    AWorld's own ``${vars.KEY}`` replacement."""
    if not isinstance(data.get("agents"), dict) or not data["agents"]:
        return None
    try:
        from aworld.config.agent_loader import _replace_internal_vars, load_agents_from_yaml
    except ImportError:
        return None
    try:
        # AWorld logs each ${VAR} it substitutes, with its value: a secret would leak; in a studio it substitutes none
        with _aworld_quiet(), _no_aworld_substitution():
            agents = load_agents_from_yaml(str(path))
    except Exception as e:  # noqa: BLE001 - AWorld's loader raises what it raises
        return (
            None
            if _warn_later(
                data,
                f"AWorld's agent loader could not read {path.name} ({type(e).__name__}: "
                f"{e}); it is read in this project's agent form",
            )
            else None
        )
    if not agents:
        return None
    name, agent = next(iter(agents.items()))
    via = f"{path.name} read by aworld.config.agent_loader"
    flat, origins, warnings = from_aworld_agent(agent, via)
    written = _replace_internal_vars(data, data.get("vars") or {})["agents"].get(name) or {}
    conf = written.get("config") if isinstance(written.get("config"), dict) else {}
    if flat.get("max_steps") == _default_max_steps() and "max_steps" not in conf:
        flat.pop("max_steps"), origins.pop("max_turns", None)  # AWorld's default, not the writer's choice
    # what the YAML writes wins, as written: a ${VAR} stays a reference (substituted, and masked, by the check)
    for where, llm in (("config.llm_config", conf.get("llm_config")), ("llm_config", written.get("llm_config"))):
        if not isinstance(llm, dict):
            continue
        for field, key in LLM_CONFIG_KEYS.items():
            if key and field in llm:
                flat[key] = llm[field]
                origins[key] = f"agents.{name}.{where}.{field} ({FORM}: {via})"
    for key in (
        *MCP_FIELDS,
        "system_prompt",
        "tools",
        "max_turns",
        "max_steps",
        "mcp_tool_prefix",
        "temperature",
        "top_p",
        "max_tokens",
    ):
        if key in written:
            flat[key] = written[key]
            origins[key if key != "max_steps" else "max_turns"] = f"agents.{name}.{key} ({FORM}: {via})"
    if len(agents) > 1:
        warnings.append(
            f"{len(agents)} agents defined; training '{name}' (the first). Others: {', '.join(list(agents)[1:])}"
        )
    return flat, origins, warnings


@contextlib.contextmanager
def _no_aworld_substitution() -> Iterator[None]:
    """In a studio (:func:`~engines.env_values.env_invitation.invited`), AWorld's loader and Agent substitute no
    ``${VAR}`` for the block: every one is left as written, for :func:`engines.agents.agent_spec.load_agent` to allow
    only where secrets and endpoints go, and only when invited. AWorld's own substitution takes any name, anywhere —
    the eighth probe had ``vars: {K: ${OPENAI_API_KEY}}`` and ``config: {system_prompt: "Key is ${vars.K}"}`` show the
    invited key in the rendered prompt, and a ``${NAME}`` not invited (an ``AWORLD_*`` setting) in the model path's
    error, past the invitation's check (which saw the values only once AWorld had substituted them)."""
    from ..env_values.env_invitation import invited

    if invited() is None:
        yield
        return
    import importlib

    kept = []
    for name in ("aworld.config.agent_loader", "aworld.core.agent.base"):
        module = importlib.import_module(name)
        if hasattr(module, "replace_env_variables"):
            kept.append((module, module.replace_env_variables))
            module.replace_env_variables = _as_written
    try:
        yield
    finally:
        for module, fn in kept:
            module.replace_env_variables = fn


def _as_written(config: Any) -> Any:
    return config


def _warn_later(data: dict, message: str) -> bool:
    """Leave ``message`` for the agent check to show (it reads the YAML in its own form next)."""
    data.setdefault("__aworld_warnings__", []).append(message)
    return True


@contextlib.contextmanager
def _aworld_quiet() -> Iterator[None]:
    """AWorld's log records (loguru) off for the block."""
    try:
        from loguru import logger
    except ImportError:
        yield
        return
    logger.disable("aworld")
    try:
        yield
    finally:
        logger.enable("aworld")
