"""An LLM judge on an OpenAI-compatible chat-completions endpoint, as a reward.

Spec (``{judge: {...}}``)::

    url: http://127.0.0.1:8000/v1       # the API base (…/v1)
    model: judge-model
    prompt: "Question: {prompt}\\nReference: {answer}\\nReply: {completion}\\nScore 0-10:"
    api_key_env: OPENAI_API_KEY          # the key is read from this variable, never written anywhere
    score_pattern: "-?\\d+(?:\\.\\d+)?"   # the first match (or its first group) is the score
    scale: 10                            # the score is divided by this (0-10 → 0-1); null: as is
    concurrency: 4                       # requests in flight per batch
    timeout: 30                          # seconds per request
    retries: 2                           # extra tries on timeouts, connection errors, 429 and 5xx
    temperature: 0.0
    max_tokens: 16
    system: null                         # an optional system message
    name: judge

Each training step logs the judge's cost through TRL's ``log_metric``: ``judge/<name>/calls``,
``…/latency_mean_s``, ``…/latency_max_s`` and ``…/seconds`` (the batch's wall time). A judge that
cannot be reached, times out or replies without a score raises :class:`JudgeError` (a reward error
in a run, a check error in the dry run), with the key masked.
"""

from __future__ import annotations

import os
import re
import string
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..results.check_result import CheckError, did_you_mean
from ..isolation.user_env import JUDGE_DEFAULT_KEY_ENV as DEFAULT_KEY_ENV
from ..env_values.env_invitation import how_to_invite, invited
from .calling import Batch, is_messages, message_text

PLACEHOLDERS = ("prompt", "completion", "answer")
DEFAULTS: dict[str, Any] = {
    "url": None,
    "model": None,
    "prompt": None,
    "api_key_env": DEFAULT_KEY_ENV,
    "score_pattern": r"-?\d+(?:\.\d+)?",
    "scale": None,
    "concurrency": 4,
    "timeout": 30.0,
    "retries": 2,
    "temperature": 0.0,
    "max_tokens": 16,
    "system": None,
    "name": "judge",
}


class JudgeError(RuntimeError):
    """The judge failed on a completion (unreachable, timed out, error status, reply without a score)."""

    hint = "check the judge's url, model, timeout and key, and that its prompt asks for a score it can parse"


def mask(text: str, secret: str | None) -> str:
    return text.replace(secret, "***") if secret and len(secret) >= 4 else text


class JudgeScorer:
    def __init__(self, **options: Any):
        for k, v in {**DEFAULTS, **options}.items():
            setattr(self, k, v)
        self._client = None

    @classmethod
    def from_spec(cls, spec: Any) -> "JudgeScorer":
        if not isinstance(spec, dict):
            raise CheckError("reward", f"judge must be a mapping (url, model, prompt, ...), got {spec!r}")
        if "api_key" in spec:
            raise CheckError(
                "reward",
                "the judge's api_key is given in the spec: it would be written into run.yaml",
                "put the key in an environment variable and name it: api_key_env: MY_JUDGE_KEY",
            )
        unknown = [k for k in spec if k not in DEFAULTS]
        if unknown:
            raise CheckError(
                "reward",
                f"unknown judge option '{unknown[0]}'{did_you_mean(unknown[0], DEFAULTS)}",
                f"options: {', '.join(DEFAULTS)}",
            )
        for key in ("url", "model", "prompt"):
            if not spec.get(key):
                raise CheckError("reward", f"the judge needs `{key}`", "give url (…/v1), model and prompt")
        fields = {f for _, f, _, _ in string.Formatter().parse(spec["prompt"]) if f}
        bad = sorted(fields - set(PLACEHOLDERS))
        if bad:
            raise CheckError(
                "reward",
                f"the judge prompt has an unknown placeholder {{{bad[0]}}}",
                "use {prompt}, {completion} and {answer} (double other braces: {{ }})",
            )
        if "completion" not in fields:
            raise CheckError("reward", "the judge prompt never shows the completion", "put {completion} in it")
        try:
            re.compile(spec.get("score_pattern") or DEFAULTS["score_pattern"])
        except re.error as e:
            raise CheckError("reward", f"the judge's score_pattern is not a regular expression: {e}")
        for key, low in (("concurrency", 1), ("retries", 0), ("timeout", 0.001), ("max_tokens", 1)):
            value = spec.get(key, DEFAULTS[key])
            if not isinstance(value, (int, float)) or value < low:
                raise CheckError("reward", f"judge {key}={value!r} must be a number ≥ {low:g}")
        env = spec.get("api_key_env") or DEFAULT_KEY_ENV
        if spec.get("api_key_env") and env not in os.environ:
            allowed = invited()  # in a studio, only the variables its operator invites reach user code
            if allowed is not None and env not in allowed:
                raise CheckError(
                    "reward",
                    f"the judge's key variable {env} is not one this studio hands to rewards (it invites "
                    f"{', '.join(sorted(allowed)) or 'none'})",
                    f"{how_to_invite(env)}; the key is never written to the run",
                )
            raise CheckError(
                "reward",
                f"the judge's key variable {env} is not set",
                f"export {env}=<key> before starting (the key is never written to the run)",
            )
        return cls(**spec)

    def to_spec(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in DEFAULTS}

    # -- calling --------------------------------------------------------------------------------------
    def _key(self) -> str | None:
        return os.environ.get(self.api_key_env or DEFAULT_KEY_ENV)

    def _client_for(self):
        if self._client is None:
            try:
                from openai import OpenAI
            except ImportError:
                raise CheckError(
                    "reward", "the LLM judge needs the openai package, which is not installed", "pip install openai"
                )
            self._client = OpenAI(
                base_url=self.url,
                api_key=self._key() or "EMPTY",
                timeout=float(self.timeout),
                max_retries=int(self.retries),
            )
        return self._client

    def messages(self, prompt: Any, completion: Any, answer: Any) -> list[dict[str, str]]:
        if is_messages(prompt):
            users = [m.get("content", "") for m in prompt if m.get("role") == "user"]
            prompt = users[-1] if users else message_text(prompt)
        text = self.prompt.format(
            prompt=prompt or "", completion=message_text(completion), answer="" if answer is None else answer
        )
        out = [{"role": "system", "content": self.system}] if self.system else []
        return out + [{"role": "user", "content": text}]

    def parse(self, reply: str) -> float:
        m = re.search(self.score_pattern, reply or "")
        if m is None:
            raise JudgeError(f"judge reply {reply[:120]!r} has no score (score_pattern {self.score_pattern!r})")
        try:
            value = float(m.group(1) if m.groups() else m.group(0))
        except (TypeError, ValueError):
            raise JudgeError(f"judge reply {reply[:120]!r}: {m.group(0)!r} is not a number")
        return value / float(self.scale) if self.scale else value

    def _ask(self, messages: list[dict[str, str]]) -> tuple[float, float]:
        import openai

        t0 = time.perf_counter()
        where = f"judge {self.model} at {self.url}"
        tries = int(self.retries) + 1
        try:
            resp = self._client_for().chat.completions.create(
                model=self.model, messages=messages, temperature=self.temperature, max_tokens=int(self.max_tokens)
            )
        except openai.APITimeoutError:
            raise JudgeError(f"{where} timed out ({float(self.timeout):g} s per request, {tries} tries)")
        except openai.APIConnectionError as e:
            raise JudgeError(mask(f"cannot reach {where} ({tries} tries): {e}", self._key()))
        except openai.APIStatusError as e:
            raise JudgeError(mask(f"{where} answered HTTP {e.status_code}: {str(e)[:200]}", self._key()))
        latency = time.perf_counter() - t0
        try:
            reply = resp.choices[0].message.content or ""
        except (AttributeError, IndexError, TypeError):
            raise JudgeError(f"{where} sent a reply without choices: {str(resp)[:120]!r}")
        return self.parse(reply), latency

    def describe_inputs(self, batch: Batch) -> dict[str, Any]:
        first = self.messages(batch.prompt_list()[0], batch.completions[0], batch.answers[0])
        key = self._key()
        return {
            "messages": f"list[{len(batch)}] of [{{role, content}}], e.g. {first[-1]['content'][:80]!r}",
            "endpoint": f"{self.url} model={self.model}",
            "api_key": f"${self.api_key_env} ({'set, ***' if key else 'not set'})",
        }

    def score_batch(self, batch: Batch) -> list[float]:
        requests = [self.messages(p, c, a) for p, c, a in zip(batch.prompt_list(), batch.completions, batch.answers)]
        t0 = time.perf_counter()
        with ThreadPoolExecutor(max_workers=int(self.concurrency), thread_name_prefix="aworld-judge") as pool:
            results = list(pool.map(self._ask, requests))
        wall = time.perf_counter() - t0
        log_metric = batch.extras.get("log_metric")
        if log_metric is not None and results:
            latencies = [lat for _, lat in results]
            prefix = f"judge/{self.name}"
            log_metric(f"{prefix}/calls", float(len(results)))
            log_metric(f"{prefix}/latency_mean_s", sum(latencies) / len(latencies))
            log_metric(f"{prefix}/latency_max_s", max(latencies))
            log_metric(f"{prefix}/seconds", wall)
        return [score for score, _ in results]
