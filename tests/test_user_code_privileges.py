"""Issue 29, item 1: with the studio (or the CLI) run as root, user code reads neither the login nor any
credential it did not ask for, by any route: ``/proc/<pid>/environ`` and ``cmdline`` of every process,
``/proc/<pid>/mem`` and ptrace of its ancestors, inherited file descriptors (testing/proc_probe.py tries
them all). The studio is started as root with ``--auth`` on its command line and a token in its
environment; the reward that probes runs in its check worker and in the CLI's check."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from engines.isolation.sandbox import run_isolated
from testing.proc_probe import probe, reward_source
from testing.studio import StudioProcess

ROOT = Path(__file__).resolve().parent.parent
LOGIN = ("admin", "root-studio-login-7f3a9")
TOKEN = "ghp_canaryTokenInTheStudioEnv0451"
AUTH_FILE_LOGIN = ("alice", "from-the-auth-file-5521")
CAP_SYS_PTRACE = 19
CAP_SYS_RESOURCE = 24

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and capabilities are Linux's")


def _caps(pid: int) -> dict[str, int]:
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("Cap"):
                k, _, v = line.partition(":")
                out[k] = int(v.strip(), 16)
    return out


def _held_as_root() -> bool:
    return os.geteuid() == 0 and bool(_caps(os.getpid())["CapEff"] >> CAP_SYS_PTRACE & 1)


def test_an_isolated_call_holds_no_capability_and_no_inherited_fd(tmp_path):
    extra = open(tmp_path / "held-open.txt", "w")  # a descriptor the caller has open
    try:
        out = run_isolated(probe, {"secrets": []}, timeout_s=30)
    finally:
        extra.close()
    assert out.ok, out.error
    caps = out.value["caps"]
    assert caps["CapEff"] == caps["CapPrm"] == caps["CapInh"] == caps["CapAmb"] == 0, caps
    if os.geteuid() == 0:
        assert caps["CapBnd"] == 0, caps  # an exec of a root program gets nothing back
    fds = out.value["fds"]
    assert len(fds) <= 2 and all(t.startswith("pipe:") for t in fds.values()), fds  # its result and progress
    assert not out.value["found"]


def _oom_score_adj() -> dict:
    """What an isolated call's process has for the OOM killer, and whether it can lower it."""
    adj = int(Path("/proc/self/oom_score_adj").read_text())
    try:
        Path("/proc/self/oom_score_adj").write_text("0")
        lowered = int(Path("/proc/self/oom_score_adj").read_text()) == 0
    except OSError:
        lowered = False
    return {"adj": adj, "lowered": lowered}


def test_user_code_is_the_first_the_oom_killer_ends_and_cannot_change_that():
    """User code that takes the machine's memory (there is no memory limit a check could set that a reward model
    would not need) ends itself, never the studio or the CLI: its process is the OOM killer's first choice, and where
    the caller held CAP_SYS_RESOURCE when it was set (root outside a container that withholds it; this machine's
    does) it cannot lower that again: the kernel keeps the value as its floor."""
    out = run_isolated(_oom_score_adj, {}, timeout_s=30)
    assert out.ok, out.error
    assert out.value["adj"] == 1000
    assert out.value["lowered"] is not bool(_caps(os.getpid())["CapEff"] >> CAP_SYS_RESOURCE & 1)
    assert int(Path("/proc/self/oom_score_adj").read_text()) < 1000  # the caller's own is untouched


def test_the_cli_check_run_as_root_leaks_nothing_to_its_reward(tmp_path, demo):
    if not _held_as_root():
        pytest.skip("the case of the issue is root with CAP_SYS_PTRACE")
    report = tmp_path / "probe.json"
    reward = tmp_path / "probe_reward.py"
    reward.write_text(reward_source([TOKEN], report))
    env = {**os.environ, "GITHUB_TOKEN": TOKEN}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "engines",
            "check",
            "--agent",
            demo["agent"],
            "--train",
            demo["train"],
            "--reward",
            f"{reward}:probe_reward",
            "--engine",
            "trl",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert report.exists(), proc.stdout + proc.stderr
    seen = json.loads(report.read_text())
    assert seen["ancestors"], seen  # the probe saw its parents (the supervisor, the CLI, ...)
    assert seen["found"] == [], seen["found"]
    assert seen["caps"]["CapEff"] == 0


@pytest.fixture(scope="module")
def root_studio(tmp_path_factory):
    base = tmp_path_factory.mktemp("root-studio")
    saved = dict(os.environ)
    os.environ.update({"GITHUB_TOKEN": TOKEN, "GRADIO_TEMP_DIR": str(base / "gradio-cache")})
    try:
        app = StudioProcess(base / "runs", extra=["--auth", ":".join(LOGIN)]).start(timeout_s=240)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    from gradio_client import Client

    client = Client(app.url, verbose=False, auth=LOGIN)
    yield app, client, base
    app.stop()


def test_the_studio_keeps_no_secret_in_its_environment_or_command_line(root_studio):
    app = root_studio[0]
    pid = app.proc.pid
    assert psutil.Process(pid).is_running()
    for part in ("environ", "cmdline"):
        data = Path(f"/proc/{pid}/{part}").read_bytes()
        assert LOGIN[1].encode() not in data and TOKEN.encode() not in data, part
    assert b"AWORLD_STUDIO_AUTH" not in Path(f"/proc/{pid}/environ").read_bytes()


def test_a_reward_in_the_root_studio_reads_no_secret_by_any_route(root_studio, tmp_path):
    if not _held_as_root():
        pytest.skip("the case of the issue is root with CAP_SYS_PTRACE")
    from gradio_client import handle_file

    app, client, _ = root_studio
    report = tmp_path / "probe.json"
    reward = tmp_path / "probe_reward.py"
    reward.write_text(reward_source([LOGIN[1], TOKEN], report))
    for _attempt in range(2):  # the second check too (a warm worker, a fresh fork)
        report.unlink(missing_ok=True)
        res = client.predict(
            None, None, None, handle_file(str(reward)), "probe_reward.py:probe_reward@1", "", "trl", api_name="/check"
        )
        assert report.exists(), res
        seen = json.loads(report.read_text())
        assert app.proc.pid in seen["ancestors"], seen  # the studio is among the processes it tried
        assert seen["found"] == [], seen["found"]
        assert seen["caps"]["CapEff"] == 0 and seen["caps"]["CapBnd"] == 0
        fds = {fd: t for fd, t in seen["fds"].items() if t != str(report)}  # (the probe writing its report)
        assert len(fds) <= 2 and all(t.startswith("pipe:") for t in fds.values()), fds  # not the worker's pipes


def test_the_login_comes_from_a_file_and_appears_nowhere(tmp_path):
    auth = tmp_path / "login.txt"
    auth.write_text(":".join(AUTH_FILE_LOGIN) + "\n")
    app = StudioProcess(tmp_path / "runs", extra=["--auth-file", str(auth)]).start(timeout_s=240)
    try:
        import httpx

        assert httpx.post(
            app.url + "login", data={"username": AUTH_FILE_LOGIN[0], "password": "wrong"}
        ).status_code in (400, 401)
        ok = httpx.post(app.url + "login", data={"username": AUTH_FILE_LOGIN[0], "password": AUTH_FILE_LOGIN[1]})
        assert ok.status_code == 200, ok.text
        for part in ("environ", "cmdline"):
            assert AUTH_FILE_LOGIN[1].encode() not in Path(f"/proc/{app.proc.pid}/{part}").read_bytes()
    finally:
        app.stop()
