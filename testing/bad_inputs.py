"""The bad-input corpus (tests/bad_inputs/*.yaml): loading its cases, writing their files, and the
generators for inputs too large or too binary to keep in YAML.

A case::

    - id: agent-unclosed-quote            # unique
      issue: 12                           # the item of issue #19 it covers (or "more")
      files: {agent.yaml: "name: a\\n..."}  # written into the case's folder; {models}, {assets}, {case}, {pids}
      generated: {agent.yaml: big_agent}  # or made by a generator below
      inputs: {agent: agent.yaml, train: ..., test: ..., reward: "r.py:fn" | exact_match, config: c.yaml}
      engines: [trl]                      # default [trl]
      via: [studio, api, cli]             # default [studio, api]
      expect: {module: agent, status: error, says: ["agent.yaml", "line 3"], within_s: 40}
      # `says`: in the message on every channel ({timeout}: the check's time limit there); `file: agent.yaml`:
      # the input file the message also names where the check gets a path (the Python API, the CLI; the
      # studio's config is editor text)

Omitted inputs are the shipped letters demo's (the test set only when the train set is omitted too).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import yaml

REPO_ROOT = Path(__file__).resolve().parent.parent
ASSETS = REPO_ROOT / "assets"
CASES_DIR = REPO_ROOT / "tests" / "bad_inputs"
MODEL = ASSETS / "models" / "tiny-letters"
DEMO = {
    "agent": ASSETS / "agents" / "letters_agent.yaml",
    "train": ASSETS / "datasets" / "letters_train.jsonl",
    "test": ASSETS / "datasets" / "letters_test.jsonl",
    "reward": f"{ASSETS / 'rewards' / 'letter_reward.py'}:letter_reward",
}
CHANNELS = ("studio", "api", "cli")


@dataclass
class Case:
    id: str
    issue: Any
    files: dict[str, str] = field(default_factory=dict)
    generated: dict[str, str] = field(default_factory=dict)
    inputs: dict[str, Any] = field(default_factory=dict)
    engines: list[str] = field(default_factory=lambda: ["trl"])
    via: list[str] = field(default_factory=lambda: ["studio", "api"])
    expect: dict[str, Any] = field(default_factory=dict)
    source: str = ""

    @property
    def module(self) -> str:
        return self.expect["module"]

    @property
    def status(self) -> str:
        return self.expect.get("status", "error")

    @property
    def says(self) -> list[str]:
        """What the message says; ``{timeout}`` is the check's time limit on the channel (:meth:`timeout_s`)."""
        return list(self.expect.get("says") or [])

    @property
    def hangs(self) -> bool:
        """The case runs into the check's time limit (a reward or a tool that loops, sleeps or waits)."""
        return any("timed out" in s for s in self.says)

    def timeout_s(self, via: str, default: float, hang: float) -> float:
        """The check's time limit for this case on channel ``via``: a hanging case gets the short ``hang`` limit
        where the limit is the call's own (the Python API and the CLI), the studio's ``--check-timeout``
        (``default``) otherwise."""
        return hang if self.hangs and via != "studio" else default

    @property
    def file(self) -> str | None:
        return self.expect.get("file")

    @property
    def within_s(self) -> float:
        return float(self.expect.get("within_s", 40))


def load_cases(folder: Path = CASES_DIR) -> list[Case]:
    cases: list[Case] = []
    for path in sorted(folder.glob("*.yaml")):
        for raw in yaml.safe_load(path.read_text(encoding="utf-8")) or []:
            cases.append(Case(source=path.name, **raw))
    ids = [c.id for c in cases]
    dupes = {i for i in ids if ids.count(i) > 1}
    assert not dupes, f"duplicate case ids: {dupes}"
    return cases


def write_case(case: Case, root: Path) -> Path:
    """The case's files under ``root/<id>/`` (placeholders filled); returns that folder."""
    folder = root / case.id
    folder.mkdir(parents=True, exist_ok=True)
    pids = root / "pids"
    pids.mkdir(exist_ok=True)
    subst = {"{models}": str(ASSETS / "models"), "{assets}": str(ASSETS), "{case}": str(folder), "{pids}": str(pids)}
    for name, text in case.files.items():
        for k, v in subst.items():
            text = text.replace(k, v)
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    for name, gen in case.generated.items():
        GENERATORS[gen](folder / name)
    return folder


def resolve_inputs(case: Case, folder: Path) -> dict[str, Any]:
    """Absolute paths and references of the case's inputs, the demo's where it names none."""
    given = dict(case.inputs)

    def path(v: Any) -> Any:
        if isinstance(v, str) and (folder / v).exists():
            return str(folder / v)
        return v

    out: dict[str, Any] = {}
    out["agent"] = path(given["agent"]) if "agent" in given else str(DEMO["agent"])
    if "train" in given:
        out["train"] = path(given["train"])
        out["test"] = path(given.get("test")) if given.get("test") else None
    else:
        out["train"] = str(DEMO["train"])
        out["test"] = path(given["test"]) if "test" in given else str(DEMO["test"])
    reward = given.get("reward", DEMO["reward"])
    refs = reward if isinstance(reward, list) else [reward]
    resolved = []
    for r in refs:
        if isinstance(r, str) and ".py:" in r:
            file, _, fn = r.rpartition(":")
            r = f"{path(file)}:{fn}"
        resolved.append(r)
    out["reward"] = resolved
    out["config"] = path(given.get("config")) if given.get("config") else None
    out["columns"] = given.get("columns")
    return out


# -- generators ---------------------------------------------------------------------------------------
def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def big_agent(path: Path) -> None:
    """A 40 MB agent file (a system prompt pasted 40 MB long)."""
    head = f"name: huge\nmodel: {MODEL}\nsystem_prompt: ".encode()
    _write(path, head + b"x" * (40 << 20) + b"\n")


def png_bytes(path: Path) -> None:
    _write(path, b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 8)


def zip_bytes(path: Path) -> None:
    _write(path, b"PK\x03\x04" + bytes(range(256)) * 8)


def random_bytes(path: Path) -> None:
    import random

    rng = random.Random(19)
    _write(path, bytes(rng.randrange(256) for _ in range(4096)) + b"\x00")


def latin1_agent(path: Path) -> None:
    _write(path, f"name: cafe\nmodel: {MODEL}\nsystem_prompt: Répondez en une lettre.\n".encode("latin-1"))


def latin1_config(path: Path) -> None:
    _write(path, "max_steps: 10\n# réglages\nlearning_rate: 0.001\n".encode("latin-1"))


def latin1_csv(path: Path) -> None:
    _write(path, "prompt,answer\nSay the letter A:,A\nDites la lettre É:,É\n".encode("latin-1"))


def latin1_reward(path: Path) -> None:
    _write(
        path,
        "def score(completion, answer, **kw):\n    # the French word for reward:\n    label = 'récompense'\n"
        "    return 1.0\n".encode("latin-1"),
    )


def alias_bomb(path: Path) -> None:
    """A "billion laughs" YAML: 9 levels of 9 aliases each (9^9 values once expanded)."""
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 9):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]")
    lines.append(f"model: {MODEL}")
    lines.append("system_prompt: [" + ",".join(["*a8"] * 9) + "]")
    _write(path, ("\n".join(lines) + "\n").encode())


def alias_bomb_config(path: Path) -> None:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 9):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]")
    _write(path, ("\n".join(lines) + "\n").encode())


def deep_flow(path: Path) -> None:
    """100,000 nested '[' (libyaml's composer recurses in C: it would crash the process)."""
    _write(path, f"model: {MODEL}\nsystem_prompt: ".encode() + b"[" * 100_000 + b"]" * 100_000 + b"\n")


def big_config(path: Path) -> None:
    _write(path, b"max_steps: 10\n# " + b"x" * (3 << 20) + b"\n")


def big_prompt_jsonl(path: Path) -> None:
    """The demo rows with a 1 MB prompt on line 2."""
    rows = [json.loads(line) for line in DEMO["train"].read_text().splitlines() if line.strip()]
    rows.insert(1, {"prompt": "Say the letter A: " + "please " * (150_000), "answer": "A"})
    _write(path, ("\n".join(json.dumps(r) for r in rows) + "\n").encode())


def not_parquet(path: Path) -> None:
    _write(path, b'{"prompt": "a", "answer": "b"}\n')


def corrupt_parquet(path: Path) -> None:
    _write(path, b"PAR1" + bytes(range(200)) * 4 + b"PAR1")


def parquet_bomb(path: Path) -> None:
    """20 million rows of one short prompt in a ~140 KB parquet (dictionary-encoded, compressed)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = 20_000_000
    table = pa.table({"prompt": pa.repeat(pa.scalar("Say the letter A:"), rows), "answer": pa.repeat("A", rows)})
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, str(path), row_group_size=1 << 20, compression="zstd")


def big_reward(path: Path) -> None:
    _write(path, b"def score(completion, answer, **kw):\n    return 1.0\n# " + b"x" * (3 << 20) + b"\n")


def _model_copy(path: Path, drop: Callable[[str], bool]) -> None:
    path.mkdir(parents=True, exist_ok=True)
    for f in MODEL.iterdir():
        if f.is_file() and not drop(f.name):
            shutil.copyfile(f, path / f.name)


def model_without_weights(path: Path) -> None:
    _model_copy(path, lambda n: n.endswith(".safetensors"))


def model_without_config(path: Path) -> None:
    _model_copy(path, lambda n: n == "config.json")


def model_without_tokenizer(path: Path) -> None:
    _model_copy(path, lambda n: n.startswith("tokenizer") or n == "chat_template.jinja")


def model_bad_config(path: Path) -> None:
    _model_copy(path, lambda n: n == "config.json")
    (path / "config.json").write_text('{"model_type": "qwen2",\n "vocab_size": 153,,\n}\n')


def empty_dir(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)


def save_to_disk_missing_arrow(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    (path / "dataset_info.json").write_text("{}")
    (path / "state.json").write_text('{"_data_files": [{"filename": "data-00000-of-00001.arrow"}]}')


GENERATORS: dict[str, Callable[[Path], None]] = {
    f.__name__: f
    for f in (
        big_agent,
        png_bytes,
        zip_bytes,
        random_bytes,
        latin1_agent,
        latin1_config,
        latin1_csv,
        latin1_reward,
        alias_bomb,
        alias_bomb_config,
        deep_flow,
        big_config,
        big_prompt_jsonl,
        not_parquet,
        corrupt_parquet,
        parquet_bomb,
        big_reward,
        model_without_weights,
        model_without_config,
        model_without_tokenizer,
        model_bad_config,
        empty_dir,
        save_to_disk_missing_arrow,
    )
}


def pid_files_alive(pids_dir: Path) -> list[int]:
    """Processes that corpus code recorded (``{pids}/*.pid``) and that are still alive."""
    import psutil

    alive = []
    for f in pids_dir.glob("*.pid"):
        try:
            pid = int(f.read_text().strip() or 0)
        except (OSError, ValueError):
            continue
        try:
            if pid and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                alive.append(pid)
        except psutil.Error:
            pass
    return alive
