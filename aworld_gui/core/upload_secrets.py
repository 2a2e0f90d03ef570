"""Secrets written literally in an uploaded config never reach the disk or a served file.

An uploaded agent YAML may hold ``api_key: sk-...`` written out. The studio stores uploads under
``<runs>/.uploads`` and Gradio keeps its own copy in its upload cache (served to whoever has its
path), so before either is kept the text is rewritten with every literal secret replaced by
``"****"`` — only the value, in place, so the file keeps its lines, comments and line numbers.
A secret given as ``${NAME}`` is kept as written: its value lives in the environment (see
docs/SECURITY.md), and the run gets it from there.
"""

from __future__ import annotations

import re

import yaml

from engines.env_values.secret_values import MASK, SECRET_RE, URL_PASSWORD_RE, mask_url_passwords
from engines.results.check_result import CheckError
from engines.files.yaml_input import compose_yaml_text

#: keys whose values are credentials: the agents' rule, plus HTTP headers that carry them
SECRET_KEY = re.compile(SECRET_RE.pattern + r"|^authorization$|^proxy-authorization$|^cookie$", re.I)
_ENV = re.compile(r"\$\{[^}]+\}")
_LINE = re.compile(
    r"""^(?P<head>\s*(?:-\s+)?["']?(?P<key>[A-Za-z0-9_.-]+)["']?\s*:[ \t]*)(?P<value>[^#\n]*?)(?P<tail>[ \t]*(?:#.*)?)$""",
    re.M,
)


def _literal(value: str) -> bool:
    v = value.strip().strip("'\"")
    return bool(v) and v != MASK and not _ENV.search(v)


def _spans(text: str) -> list[tuple[int, int, str, int]] | None:
    """(start, end, key, line) of each literal secret value, from the YAML's own node marks; None when
    the text is not YAML the safe loader reads."""
    try:
        root = compose_yaml_text(text, module="agent", where="the upload")  # guarded: never raw libyaml
    except (CheckError, UnicodeError):  # (bytes that are not UTF-8 reach here as surrogates)
        return None
    if root is None:
        return []
    out, stack, seen = [], [root], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if (
                    isinstance(k, yaml.ScalarNode)
                    and SECRET_KEY.search(str(k.value))
                    and isinstance(v, yaml.ScalarNode)
                    and _literal(str(v.value))
                ):
                    out.append((v.start_mark.index, v.end_mark.index, str(k.value), v.start_mark.line + 1))
                else:
                    stack.append(v)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    return out


def mask_text(text: str) -> tuple[str, list[str]]:
    """``text`` with every literally written secret value replaced by ``"****"`` and every URL's password
    (``postgres://u:pw@h``, anywhere, comments included); and what was masked (``"api_key (line 4)"``)."""
    url_notes = [
        f"url password (line {text.count(chr(10), 0, m.start()) + 1})"
        for m in URL_PASSWORD_RE.finditer(text)
        if mask_url_passwords(m.group(0)) != m.group(0)
    ]
    text = mask_url_passwords(text)
    masked, notes = _mask_values(text)
    return masked, sorted(notes + url_notes, key=lambda n: int(n.rsplit("line ", 1)[1].rstrip(")")))


def _mask_values(text: str) -> tuple[str, list[str]]:
    spans = _spans(text)
    notes: list[str] = []
    if spans is not None:
        for start, end, key, line in sorted(spans, reverse=True):
            text = text[:start] + f'"{MASK}"' + text[end:]
            notes.append(f"{key} (line {line})")
        return text, sorted(notes, key=lambda n: int(n.rsplit("line ", 1)[1].rstrip(")")))

    def repl(m: re.Match) -> str:  # not YAML the loader reads: mask line by line
        if SECRET_KEY.search(m.group("key")) and _literal(m.group("value")):
            line = text.count("\n", 0, m.start()) + 1
            notes.append(f"{m.group('key')} (line {line})")
            return f'{m.group("head")}"{MASK}"{m.group("tail")}'
        return m.group(0)

    return _LINE.sub(repl, text), notes


def mask_bytes(data: bytes) -> tuple[bytes, list[str]]:
    """:func:`mask_text` on a file's bytes (bytes that are not UTF-8 are kept as they are)."""
    text = data.decode("utf-8", errors="surrogateescape")
    masked, notes = mask_text(text)
    return (masked.encode("utf-8", errors="surrogateescape") if notes else data), notes
