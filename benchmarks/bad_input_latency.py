#!/usr/bin/env python
"""How long the studio takes to answer ``/check`` for bad inputs that used to be slow or to hang (issue
#19): a 40 MB agent file (was ≈ 35 s), a YAML alias bomb (hung), a 1 MB prompt, a reward that forks
(stalled the check for its whole 60 s limit), and a demo check made while another page's check hangs
(waited up to 60 s behind it). Issue #29 adds: the rewards field ``","*80000`` (froze the whole studio
38 s) and 80,000 × ``exact_match@1,`` (1.1 MB, 506 s), a 200 MB upload over the 100 MB cap (refused after
51 s while the studio grew from 237 to 974 MB), the parquet bomb (20M rows in a small file: 61.6 s) and a
reward that forks 300 children in sessions of their own (took the check worker down: 72.7 s). The demo
check is the baseline. Each through gradio_client against a studio in a subprocess (upload included),
``--repeats`` times (the #29 cases once: each is its own stress). While each case runs, a thread asks the
studio for ``/gradio_api/info`` every 0.25 s (the goal: within 1 s, i.e. the studio is not frozen) and the
studio process's resident memory is sampled (its peak).

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
import urllib.request
from pathlib import Path

import psutil

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
    (files / "fork300_reward.py").write_text(
        "import os, time\n\nforked = False\n\ndef score(completion, answer, **kw):\n    global forked\n"
        "    if not forked:\n        forked = True\n        for _ in range(300):\n            if os.fork() == 0:\n"
        "                os.setsid()\n                time.sleep(600)\n                os._exit(0)\n"
        "    return 1.0 if completion == answer else 0.0\n"
    )
    gen.parquet_bomb(files / "bomb.parquet")
    with open(files / "huge_agent.yaml", "wb") as f:  # 200 MB (sparse: it costs the disk nothing)
        f.truncate(200 << 20)
    app = StudioProcess(base / "runs", extra=["--check-timeout", "60"]).start(timeout_s=240)
    try:
        client = Client(app.url, verbose=False)
        client.predict(None, None, None, None, "", "", "trl", api_name="/check")  # warm the worker

        studio = psutil.Process(app.proc.pid)

        def check(agent=None, train=None, reward=None, rewards="", c=client, refused=False) -> float:
            t0 = time.perf_counter()
            if refused:  # straight to /gradio_api/upload (gradio_client refuses it itself, before sending)
                import httpx

                with open(agent, "rb") as f:
                    r = httpx.post(app.url + "gradio_api/upload", files={"files": (agent.name, f)}, timeout=300)
                took = time.perf_counter() - t0
                assert r.status_code == 413, (r.status_code, r.text[:300])
                return took
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

        def watched(fn):
            """fn() while /gradio_api/info is asked for every 0.25 s and the studio's memory sampled:
            (fn's time, the slowest /gradio_api/info answer, the studio's peak RSS in MB)."""
            done, slowest, peak = threading.Event(), [0.0], [studio.memory_info().rss]

            def poll():
                while not done.is_set():
                    t0 = time.perf_counter()
                    try:
                        with urllib.request.urlopen(app.url + "gradio_api/info", timeout=120) as r:
                            r.read()
                    except OSError:
                        pass
                    slowest[0] = max(slowest[0], time.perf_counter() - t0)
                    peak[0] = max(peak[0], studio.memory_info().rss)
                    done.wait(0.25)

            t = threading.Thread(target=poll, daemon=True)
            t.start()
            try:
                took = fn()
            finally:
                done.set()
                t.join()
            return took, slowest[0], peak[0] / 2**20

        left_after_forks = None

        def forking_check() -> float:
            """The check, then how many processes forked meanwhile from the studio's tree still live 3 s later."""
            nonlocal left_after_forks
            cmdlines = {tuple(c.cmdline()) for c in studio.children(recursive=True)}
            t0 = time.time()
            took = check(reward=files / "fork300_reward.py", rewards="fork300_reward.py:score@1")
            time.sleep(3)
            left = []
            for proc in psutil.process_iter(["cmdline", "create_time"]):
                if (proc.info["create_time"] or 0) >= t0 and tuple(proc.info["cmdline"] or ()) in cmdlines:
                    left.append(proc.pid)
            left_after_forks = len(left)
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
            # issue #29: once each
            'rewards field ","*80000 (ReDoS)': lambda: check(rewards="," * 80000),
            "rewards field 80,000 x exact_match@1, (1.1 MB)": lambda: check(rewards="exact_match@1," * 80000),
            "200 MB upload (cap 100 MB)": lambda: check(agent=files / "huge_agent.yaml", refused=True),
            "parquet bomb (20M rows) as the train set": lambda: check(train=files / "bomb.parquet"),
            "a reward that forks 300 children (setsid)": lambda: forking_check(),
            "demo, after the #29 cases": lambda: check(),
        }
        once = ("hangs", "ReDoS", "exact_match", "upload", "parquet", "300 children", "after")
        out = {}
        for name, fn in cases.items():
            measured = [watched(fn) for _ in range(1 if any(w in name for w in once) else a.repeats)]
            times = [m[0] for m in measured]
            out[name] = {
                "median_s": round(statistics.median(times), 2),
                "max_s": round(max(times), 2),
                "runs": len(times),
                "info_max_s": round(max(m[1] for m in measured), 2),
                "studio_peak_rss_mb": round(max(m[2] for m in measured)),
            }
            print(
                f"{name:48s} median {out[name]['median_s']:6.2f} s   max {out[name]['max_s']:6.2f} s   "
                f"/gradio_api/info max {out[name]['info_max_s']:5.2f} s   studio peak {out[name]['studio_peak_rss_mb']} MB",
                flush=True,
            )
        out["forked children alive 3 s after the fork case"] = left_after_forks
    finally:
        app.stop()
    path = write_result(
        "bad_input_latency.json",
        {
            "checks": out,
            "repeats": a.repeats,
            "note": "wall time of /check through gradio_client, uploads included; studio --check-timeout 60; "
            "info_max_s: the slowest /gradio_api/info asked every 0.25 s during the case (goal ≤ 1 s); "
            "studio_peak_rss_mb: the studio process's peak resident memory sampled meanwhile",
        },
    )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
