#!/usr/bin/env python
"""How long the studio takes to answer ``/check`` for bad inputs that used to be slow or to hang (issue
#19): a 40 MB agent file (was ≈ 35 s), a YAML alias bomb (hung), a 1 MB prompt, a reward that forks
(stalled the check for its whole 60 s limit), and a demo check made while another page's check hangs
(waited up to 60 s behind it). The demo check is the baseline. Each through gradio_client against a
studio in a subprocess (upload included), ``--repeats`` times.

    python -m benchmarks.bad_input_latency [--repeats 3]

Writes benchmarks/results/bad_input_latency.json.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.results_file import write_result
from testing import bad_inputs as gen
from testing.studio import StudioProcess


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args(argv)
    from gradio_client import Client, handle_file

    base = Path(tempfile.mkdtemp(prefix="bad-input-bench-"))
    files = base / "files"
    files.mkdir()
    gen.big_agent(files / "big_agent.yaml")
    gen.alias_bomb(files / "bomb_agent.yaml")
    gen.big_prompt_jsonl(files / "big_prompt.jsonl")
    (files / "fork_reward.py").write_text(
        "import os, time\n\ndef score(completion, answer, **kw):\n    if os.fork() == 0:\n"
        "        time.sleep(600)\n        os._exit(0)\n    return 1.0 if completion == answer else 0.0\n"
    )
    (files / "hang_reward.py").write_text("import time\n\ndef score(completion, answer, **kw):\n    time.sleep(600)\n")
    app = StudioProcess(base / "runs", extra=["--check-timeout", "60"]).start(timeout_s=240)
    try:
        client = Client(app.url, verbose=False)
        client.predict(None, None, None, None, "", "", "trl", api_name="/check")  # warm the worker

        def check(agent=None, train=None, reward=None, rewards="", c=client) -> float:
            t0 = time.perf_counter()
            res = c.predict(
                agent and handle_file(str(agent)),
                train and handle_file(str(train)),
                None,
                reward and handle_file(str(reward)),
                rewards,
                "",
                "trl",
                api_name="/check",
            )
            assert "modules" in res, res
            return time.perf_counter() - t0

        def behind_a_hanging_check() -> float:
            other = Client(app.url, verbose=False)  # another page
            hanging = threading.Thread(
                target=lambda: check(reward=files / "hang_reward.py", rewards="hang_reward.py:score@1", c=other)
            )
            hanging.start()
            time.sleep(3)
            took = check()
            hanging.join()  # (it times out after 60 s)
            return took

        cases = {
            "demo (baseline)": lambda: check(),
            "40 MB agent file": lambda: check(agent=files / "big_agent.yaml"),
            "YAML alias bomb agent": lambda: check(agent=files / "bomb_agent.yaml"),
            "1 MB prompt in the train set": lambda: check(train=files / "big_prompt.jsonl"),
            "a reward that forks a child": lambda: check(
                reward=files / "fork_reward.py", rewards="fork_reward.py:score@1"
            ),
            "demo, while another page's check hangs": behind_a_hanging_check,
        }
        out = {}
        for name, fn in cases.items():
            times = [fn() for _ in range(a.repeats if "hangs" not in name else 1)]
            out[name] = {
                "median_s": round(statistics.median(times), 2),
                "max_s": round(max(times), 2),
                "runs": len(times),
            }
            print(f"{name:42s} median {out[name]['median_s']:6.2f} s   max {out[name]['max_s']:6.2f} s", flush=True)
    finally:
        app.stop()
    path = write_result(
        "bad_input_latency.json",
        {
            "checks": out,
            "repeats": a.repeats,
            "note": "wall time of /check through gradio_client, uploads included; studio --check-timeout 60",
        },
    )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
