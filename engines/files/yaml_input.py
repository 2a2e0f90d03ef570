"""The one safe YAML (and JSON) loader for what users write: agent files, configs, the studio's
config box.

* libyaml's C loader where present (``yaml.CSafeLoader``), the document parsed once;
* caps before anything is built: the text size, the nesting depth, and the number of values after
  aliases are expanded (a "billion laughs" document of nested ``&anchor``/``*alias`` is refused
  instead of expanding exponentially); recursive aliases are refused;
* a key written twice in one mapping is an error (YAML would keep the last silently);
* a syntax error names where the problem is *and* where the construct it is in started ("the
  quoted text opened on line 3, column 16 is never closed (the file ends at line 6)").
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import yaml

from ..results.check_result import CheckError
from .user_files import MB, read_user_text

Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
MAX_BYTES = 1 * MB
MAX_DEPTH = 100
MAX_VALUES = 1_000_000
#: unbalanced '[' / '{' counted over the raw text: a cheap bound taken before libyaml sees it
#: (its composer recurses in C and crashes on very deep flow nesting)
MAX_RAW_BRACKETS = 500
SYNTAX_HINT = (
    "fix the YAML at the line named: indent with spaces, close every quote and bracket, put a space after each ':'"
)


def _where(line: int, col: int) -> str:
    return f"line {line}, column {col}"


def describe_yaml_error(e: yaml.YAMLError, text: str = "") -> str:
    """A YAML syntax error in words, with both places: where it went wrong and where the construct started."""
    if isinstance(e, yaml.reader.ReaderError):  # a character YAML never accepts (NUL, other controls)
        line = text.count("\n", 0, e.position) + 1 if text else None
        col = e.position - (text.rfind("\n", 0, e.position) + 1) + 1 if text else None
        code = e.character if isinstance(e.character, int) else ord(str(e.character)[:1] or "\0")
        name = "a NUL character (U+0000)" if code == 0 else f"the control character U+{code:04X}"
        at = _where(line, col) if line else f"character {e.position + 1}"
        return f"{name} at {at}: YAML text cannot hold it — remove it (was a binary file pasted or uploaded?)"
    problem = (getattr(e, "problem", None) or str(e)).strip()
    pm0 = getattr(e, "problem_mark", None)
    if pm0 is not None and text and 0 <= pm0.index < len(text) and text[pm0.index] == "\t":
        problem = "found a tab character"
    context = (getattr(e, "context", None) or "").strip()
    pm, cm = getattr(e, "problem_mark", None), getattr(e, "context_mark", None)
    at = _where(pm.line + 1, pm.column + 1) if pm else "an unknown place"
    started = _where(cm.line + 1, cm.column + 1) if cm else None
    if "quoted scalar" in context and started:
        end = "the file ends" if "end of stream" in problem else problem
        return f"the quoted text opened on {started} is never closed ({end} at {at})"
    if problem == "found a tab character" or "'\\t'" in problem or "\\t" in problem:
        return f"a tab character at {at}: YAML indents with spaces, never tabs"
    for kind, opener in (("flow sequence", "'['"), ("flow mapping", "'{'")):
        if kind in context and started:
            return f"the {opener} opened on {started} is not closed where expected ({problem} at {at})"
    if "mapping values are not allowed" in problem:
        return (
            f"a ':' at {at} where no key can start: a line there does not line up with the ones above "
            f"(indentation), the line before has no ':', or a value needs quotes"
        )
    if "simple key" in context and started:
        return f"the line starting at {started} has no ':' after its key ({problem} at {at})"
    if "single document" in context:
        return f"it holds more than one document ('---' at {at}); keep one"
    if context and started:
        return f"{problem} at {at} ({context} that starts on {started})"
    return f"{problem} at {at}"


def _raw_bracket_depth(text: str) -> int:
    depth = deepest = 0
    for ch in text:
        if ch in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
        elif ch in "]}" and depth:
            depth -= 1
    return deepest


def _check_graph(node: yaml.Node, where: str, module: str) -> None:
    """Depth, size after alias expansion, recursive aliases, duplicate keys — without building anything."""
    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, int, bool]] = [(node, 1, False)]
    while stack:
        n, depth, done = stack.pop()
        key = id(n)
        if done:
            on_path.discard(key)
            children = _children(n)
            sizes[key] = 1 + sum(sizes[id(c)] for c in children)
            if sizes[key] > MAX_VALUES:
                raise CheckError(
                    module,
                    f"{where} expands to more than {MAX_VALUES:,} values through its aliases "
                    "(*name repeating &name): refused before expanding",
                    "write the values out, or use fewer nested aliases",
                )
            continue
        if key in sizes:
            continue
        if key in on_path:
            mark = n.start_mark
            raise CheckError(
                module,
                f"{where} has a recursive alias at {_where(mark.line + 1, mark.column + 1)} "
                "(an &anchor that contains its own *alias)",
                "remove the alias",
            )
        if depth > MAX_DEPTH:
            mark = n.start_mark
            raise CheckError(
                module,
                f"{where} is nested more than {MAX_DEPTH} levels deep (at {_where(mark.line + 1, mark.column + 1)})",
                "flatten it",
            )
        if isinstance(n, yaml.MappingNode):
            _check_duplicate_keys(n, where, module)
        on_path.add(key)
        stack.append((n, depth, True))
        for c in _children(n):
            if id(c) not in sizes:
                stack.append((c, depth + 1, False))


def _children(n: yaml.Node) -> list[yaml.Node]:
    if isinstance(n, yaml.SequenceNode):
        return list(n.value)
    if isinstance(n, yaml.MappingNode):
        return [x for kv in n.value for x in kv]
    return []


def _check_duplicate_keys(n: yaml.MappingNode, where: str, module: str) -> None:
    seen: dict[str, int] = {}
    for k, _ in n.value:
        if not isinstance(k, yaml.ScalarNode) or k.tag == "tag:yaml.org,2002:merge":
            continue
        line = k.start_mark.line + 1
        if k.value in seen:
            raise CheckError(
                module,
                f"{where}: the key '{k.value}' is written twice (line {seen[k.value]} and line "
                f"{line}); YAML would silently keep the second",
                "keep one of them",
                key=k.value,
                line=line,
            )
        seen[k.value] = line


def _guard(text: str, module: str, where: str) -> None:
    """What must hold before libyaml sees the text at all."""
    if len(text) > MAX_BYTES * 4:
        raise CheckError(module, f"{where} is {len(text) / MB:.1f} MB of text; at most {MAX_BYTES // MB} MB is read")
    if _raw_bracket_depth(text) > MAX_RAW_BRACKETS:
        raise CheckError(
            module,
            f"{where} opens more than {MAX_RAW_BRACKETS} '[' / '{{' without closing them (nested too deep to read)",
            "flatten it",
        )


def compose_yaml_text(text: str, *, module: str, where: str) -> yaml.Node | None:
    """The node graph of user YAML (nothing built), with every check of :func:`load_yaml_text`: the only
    way user text may reach libyaml's composer (e.g. to find where a value is written)."""
    _guard(text, module, where)
    loader = Loader(text)
    try:
        return _compose(loader, text, module, where)
    finally:
        loader.dispose()


def _compose(loader: Any, text: str, module: str, where: str) -> yaml.Node | None:
    try:
        node = loader.get_single_node()
    except yaml.YAMLError as e:
        raise CheckError(module, f"{where} is not valid YAML: {describe_yaml_error(e, text)}", SYNTAX_HINT)
    if node is not None:
        _check_graph(node, where, module)
    return node


def load_yaml_text(text: str, *, module: str, where: str) -> Any:
    """Parse user YAML safely (see the module docstring); a CheckError with the place of any problem."""
    _guard(text, module, where)
    loader = Loader(text)
    try:
        node = _compose(loader, text, module, where)
        if node is None:
            return None
        try:
            return loader.construct_document(node)
        except yaml.YAMLError as e:
            raise CheckError(module, f"{where} has a value YAML cannot build: {describe_yaml_error(e)}", SYNTAX_HINT)
        except (ValueError, TypeError, OverflowError) as e:  # e.g. a timestamp out of range
            raise CheckError(module, f"{where} has a value YAML cannot build: {e}", SYNTAX_HINT)
    finally:
        loader.dispose()


def load_json_text(text: str, *, module: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise CheckError(
            module,
            f"{where} is not valid JSON: {e.msg} at {_where(e.lineno, e.colno)}",
            "fix the JSON syntax (double quotes, no trailing commas)",
        )
    except RecursionError:
        raise CheckError(module, f"{where} is nested too deep to read", "flatten it")


def load_user_file(path: str | os.PathLike, *, module: str, role: str, max_bytes: int = MAX_BYTES) -> Any:
    """A user's YAML (or ``.json``) file: size, text and syntax checked, parsed once."""
    p = Path(path)
    where = f"{role} '{p.name}'"
    text = read_user_text(p, module, where, max_bytes)
    if p.suffix.lower() == ".json":
        return load_json_text(text, module=module, where=where)
    return load_yaml_text(text, module=module, where=where)


def try_load_yaml(text: str, default: Any = None) -> Any:
    """For the studio's own use (forms, previews): the parsed text, or ``default`` when it is not safe
    YAML (the check says why)."""
    try:
        return load_yaml_text(text or "", module="config", where="the text")
    except CheckError:
        return default
