"""``${ENV}`` substitution and secret masking, written once for every place a config holds values a
user may keep in the environment: an agent's ``api_key``, an MCP server's ``env`` and ``headers``.

The rule everywhere: a value is used substituted, but shown and written in its *public form*: the
text as written when it references environment variables (``${TOKEN}``, ``Bearer ${TOKEN}``: the
secret lives in the environment, not in the text), ``"****"`` when a secret was written literally.
"""

from __future__ import annotations

import os
import re
from typing import Any, Mapping

from .env_invitation import ENV_RE, check_name

# "token" only as a whole word or a suffix (hf_token, access_token): max_tokens is no secret;
# authorization/cookie: HTTP headers that carry credentials
SECRET_RE = re.compile(
    r"(api[_-]?key|secret|password|passwd|(^|[_-])token$|^authorization$|"
    r"^proxy-authorization$|^cookie$)",
    re.I,
)
MASK = "****"
# scheme://user:password@ — the password part (up to the last @ before the host's end); linear: the
# classes exclude what ends them, and no group repeats another
URL_PASSWORD_RE = re.compile(
    r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]{0,31}://[^\s/@:'\"]{0,256}:)(?P<pw>[^\s/@'\"]{1,1024})@"
)


def is_secret_key(key: Any) -> bool:
    """Whether a setting of this name holds a credential."""
    return bool(SECRET_RE.search(str(key)))


def references_env(value: Any) -> bool:
    """Whether ``value`` is text with at least one ``${VAR}`` in it."""
    return isinstance(value, str) and ENV_RE.search(value) is not None


def env_reference(value: Any) -> str | None:
    """``"${VAR}"`` when the whole value is one reference, else None (``api_key``'s historic form)."""
    if isinstance(value, str):
        m = ENV_RE.fullmatch(value.strip())
        if m:
            return m.group(0)
    return None


def public_value(key: Any, raw: Any) -> Any:
    """What may be shown or written for the setting ``key`` written as ``raw`` (before substitution)."""
    if raw in (None, "") or references_env(raw) or not is_secret_key(key):
        return mask_url_passwords(raw)  # postgres://u:pw@h is a secret whatever the key is called
    return MASK


def public_mapping(raw: dict[str, Any] | None) -> dict[str, Any]:
    """:func:`public_value` for each entry of a mapping such as an MCP server's ``env`` or ``headers``."""
    return {k: public_value(k, v) for k, v in (raw or {}).items()}


def literal_secrets(raw: dict[str, Any] | None) -> list[str]:
    """Keys of ``raw`` whose secret is written literally (their public form is the mask)."""
    return [k for k, v in (raw or {}).items() if public_value(k, v) == MASK and v != MASK]


def public_url(raw: Any) -> Any:
    """A URL as written, with a literal password (``user:pw@host``) or a secret-named query value
    (``?api_key=...``) masked; ``${VAR}`` references stay."""
    if not isinstance(raw, str) or "://" not in raw:
        return raw
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    parts = urlsplit(raw)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        user, sep, password = userinfo.partition(":")
        if sep and password and not references_env(password):
            netloc = f"{user}:{MASK}@{host}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        masked = [(k, public_value(k, v)) for k, v in pairs]
        if masked != pairs:
            query = urlencode(masked, safe="*${}:")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def mask_url_passwords(text: Any) -> Any:
    """Every ``scheme://user:password@`` in a text with the password masked (``${VAR}`` kept): for
    values, files and messages alike (an error that quotes a URL must not quote its password)."""
    if not isinstance(text, str) or "://" not in text or "@" not in text:
        return text

    def repl(m: re.Match) -> str:
        pw = m.group("pw")
        return m.group(0) if pw == MASK or references_env(pw) else f"{m.group('head')}{MASK}@"

    return URL_PASSWORD_RE.sub(repl, text)


def mask_url_passwords_deep(obj: Any) -> Any:
    """:func:`mask_url_passwords` on every text of a nested structure (dicts, lists, tuples)."""
    if isinstance(obj, dict):
        return {k: mask_url_passwords_deep(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(mask_url_passwords_deep(v) for v in obj)
    return mask_url_passwords(obj)


def mask_secrets(obj: Any) -> Any:
    """Every secret-named entry of a nested structure masked (for values whose source is unknown), and
    every URL's password."""
    if isinstance(obj, dict):
        return {
            k: (MASK if is_secret_key(k) and v not in (None, "") and not references_env(v) else mask_secrets(v))
            for k, v in obj.items()
        }
    if isinstance(obj, list):
        return [mask_secrets(v) for v in obj]
    return mask_url_passwords(obj)


def substitute_env(value: Any, missing: list[str], env: Mapping[str, str] | None = None) -> Any:
    """``${VAR}`` and ``${VAR:-default}`` replaced from ``env`` (the environment by default); unset names go
    to ``missing``. In a studio, a name its operator did not invite raises
    :class:`~engines.env_values.env_invitation.NotInvited` (its default is not used either: whether a variable is set
    is the environment's too)."""
    env = os.environ if env is None else env
    if isinstance(value, str):

        def repl(m: re.Match) -> str:
            var, default = m.group(1), m.group(2)
            check_name(var)
            if var in env:
                return env[var]
            if default is not None:
                return default
            missing.append(var)
            return ""

        return ENV_RE.sub(repl, value)
    if isinstance(value, dict):
        return {k: substitute_env(v, missing, env) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute_env(v, missing, env) for v in value]
    return value
