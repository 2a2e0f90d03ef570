"""engines.isolation.sandbox (user code in a supervised, time-limited child) and engines.isolation.user_env (what it sees)."""

from __future__ import annotations

import os
import pickle
import time

import psutil
import pytest

from engines.isolation.call_result import load_result
from engines.isolation.sandbox import IsolatedCall, describe, report_progress, run_isolated
from engines.results.check_result import CheckResult
from engines.isolation.user_env import is_credential, referenced_names, user_code_env
from testing.waiting import processes_marked, wait_for


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _pid_from(path) -> int:
    wait_for(lambda: path.exists() and path.read_text().strip(), 10, f"{path.name} to be written")
    return int(path.read_text())


# functions the calls run (module level: a fork inherits them)
def double(x):
    report_progress("reward")
    return 2 * x


def fork_and_return(pidfile):
    """A child that would outlive the call, holding the result pipe (the old reader waited for its EOF)."""
    if os.fork() == 0:
        with open(pidfile, "w") as f:
            f.write(str(os.getpid()))
        time.sleep(300)
        os._exit(0)
    return "returned"


def escape_and_return(pidfile):
    """A grandchild in a session of its own (out of the call's process group), then return."""
    import subprocess

    p = subprocess.Popen(["sleep", "300"], start_new_session=True)
    with open(pidfile, "w") as f:
        f.write(str(p.pid))
    return "returned"


def fork_and_hang(pidfile):
    if os.fork() == 0:
        os.setsid()
        with open(pidfile, "w") as f:
            f.write(str(os.getpid()))
        time.sleep(300)
    report_progress("reward")
    time.sleep(300)


def exit_hard(code):
    report_progress("reward")
    os._exit(code)


def segfault():
    import ctypes

    report_progress("agent")
    ctypes.string_at(0)


def raise_value_error():
    raise ValueError("bad value")


def call_sys_exit():
    raise SystemExit(3)


def read_stdin():
    return input()


def environment():
    return dict(os.environ)


def forge_result(marker):
    """What a reward can do in its check (issue 41's probe): write its own result frame to the pipe the result goes
    back through (the lowest pipe among its descriptors), one that runs code when it is unpickled, then exit
    before the real result is sent."""
    import pickle
    import struct

    class Payload:
        def __reduce__(self):
            return (exec, (f"open({marker!r}, 'w').write(str(__import__('os').getpid()))",))

    def is_pipe(fd: str) -> bool:
        try:
            return os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:")
        except OSError:  # the descriptor listdir itself read /proc/self/fd through, closed since
            return False

    pipes = sorted(int(fd) for fd in os.listdir("/proc/self/fd") if is_pipe(fd))
    frame = pickle.dumps((True, Payload()))
    os.write(pipes[0], struct.pack(">Q", len(frame)) + frame)
    os._exit(0)


def test_a_result_comes_back_with_the_last_stage():
    out = run_isolated(double, {"x": 21}, timeout_s=30)
    assert out.ok and out.value == 42 and out.stage == "reward"


def test_a_child_that_outlives_the_call_neither_stalls_it_nor_survives(tmp_path):
    """The old fork runner read the result until EOF: a child holding the pipe stalled it for the whole
    time limit, and was left running."""
    t0 = time.monotonic()
    out = run_isolated(fork_and_return, {"pidfile": str(tmp_path / "child.pid")}, timeout_s=60)
    assert out.ok and out.value == "returned"
    assert time.monotonic() - t0 < 20  # not the 60 s limit
    pid = _pid_from(tmp_path / "child.pid")
    wait_for(lambda: not _alive(pid), 10, "the call's child to be killed")


def test_a_process_that_left_the_call_s_group_is_killed_too(tmp_path):
    out = run_isolated(escape_and_return, {"pidfile": str(tmp_path / "escaped.pid")}, timeout_s=60)
    assert out.ok
    pid = _pid_from(tmp_path / "escaped.pid")
    wait_for(lambda: not _alive(pid), 10, "the escaped grandchild to be killed")


def test_a_timeout_kills_the_whole_tree_and_names_the_stage(tmp_path):
    # this process's other children (an earlier file's studio or Ray head, still ending) are not the call's
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    t0 = time.monotonic()
    out = run_isolated(fork_and_hang, {"pidfile": str(tmp_path / "hang.pid")}, timeout_s=3)
    assert time.monotonic() - t0 < 15
    assert not out.ok and out.kind == "timeout" and out.stage == "reward"
    assert describe(out).startswith("the reward check timed out after 3 s")
    pid = _pid_from(tmp_path / "hang.pid")
    wait_for(lambda: not _alive(pid), 10, "the hanging grandchild (own session) to be killed")
    assert [p for p in psutil.Process().children(recursive=True) if p.pid not in before] == []


@pytest.mark.parametrize(
    "fn, kwargs, kind, says",
    [
        (exit_hard, {"code": 1}, "exit", "the reward module's code exited with status 1 (os._exit"),
        (segfault, {}, "crash", "the agent module's code was killed by signal 11 (SIGSEGV)"),
        (call_sys_exit, {}, "exit", "called sys.exit(3)"),
        (raise_value_error, {}, "exception", "ValueError: bad value"),
        (read_stdin, {}, "exception", "EOFError"),
    ],
)
def test_how_a_call_ended_is_said(fn, kwargs, kind, says):
    out = run_isolated(fn, kwargs, timeout_s=30)
    assert not out.ok and out.kind == kind
    assert says in describe(out)


def test_calls_run_side_by_side_and_one_can_be_cancelled(tmp_path):
    slow = IsolatedCall(fork_and_hang, {"pidfile": str(tmp_path / "slow.pid")}, timeout_s=120)
    t0 = time.monotonic()
    quick = IsolatedCall(double, {"x": 1}, timeout_s=30).wait()
    assert quick.ok and time.monotonic() - t0 < 20
    pid = _pid_from(tmp_path / "slow.pid")
    slow.stop("cancelled", "a newer check replaced it")
    out = slow.finish()
    assert out.kind == "cancelled" and "a newer check replaced it" in out.error
    wait_for(lambda: not _alive(pid), 10, "the cancelled call's grandchild to be killed")


def test_user_code_gets_the_environment_it_is_given(monkeypatch):
    monkeypatch.setenv("AWORLD_STUDIO_AUTH", "admin:pw")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("HF_TOKEN", "hf_x")
    # the probe's uninvited secrets, and a setting nobody asked for
    monkeypatch.setenv("PGPASSWORD", "pg-pw")
    monkeypatch.setenv("REDIS_URL", "redis://:redis-pw@cache:6379/0")
    monkeypatch.setenv("GITHUB_PAT", "ghp_x")
    monkeypatch.setenv("DJANGO_SECRETKEY", "dj")
    monkeypatch.setenv("MY_APP_SETTING", "plain")
    env = user_code_env(allow=["OPENAI_API_KEY", "AWORLD_STUDIO_AUTH"])
    seen = run_isolated(environment, env=env, timeout_s=30).value
    assert "AWORLD_STUDIO_AUTH" not in seen  # never, even when asked for
    assert seen["OPENAI_API_KEY"] == "sk-test"  # asked for by name
    assert "HF_TOKEN" not in seen and seen["PATH"] == os.environ["PATH"]
    leaked = {"PGPASSWORD", "REDIS_URL", "GITHUB_PAT", "DJANGO_SECRETKEY", "MY_APP_SETTING"} & set(seen)
    assert not leaked


RUNTIME = {
    "PATH": "/usr/bin",
    "HOME": "/root",
    "USER": "root",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "TZ": "UTC",
    "TMPDIR": "/tmp",
    "VIRTUAL_ENV": "/venv",
    "PYTHONPATH": "/src",
    "LD_LIBRARY_PATH": "/usr/local/cuda/lib64",
    "CUDA_VISIBLE_DEVICES": "0",
    "NVIDIA_VISIBLE_DEVICES": "all",
    "NCCL_SOCKET_IFNAME": "eth0",
    "OMP_NUM_THREADS": "4",
    "MKL_NUM_THREADS": "4",
    "TORCH_HOME": "/cache/torch",
    "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
    "HF_HOME": "/cache/hf",
    "HF_ENDPOINT": "https://hf-mirror.example",
    "TRANSFORMERS_VERBOSITY": "error",
    "TOKENIZERS_PARALLELISM": "false",
    "DATASETS_CACHE": "/cache/ds",
    "https_proxy": "http://proxy:3128",
    "AWORLD_ENV_INVITED": "",
}
UNINVITED = {
    "MY_APP_SETTING": "plain",  # no credential, but nobody asked for it
    "PGPASSWORD": "pw",
    "REDIS_URL": "redis://:pw@cache:6379/0",
    "GITHUB_PAT": "ghp_x",
    "DJANGO_SECRETKEY": "dj",
    "BACKUP_PASSPHRASE": "pp",
    "OPENAI_KEYS": "sk-a,sk-b",
    "HFTOKEN": "hf_x",
    "SENTRY_DSN": "https://abc123@o1.ingest.sentry.io/1",
    "SLACK_URL": "https://hooks.slack.com/services/T0/B0/xyz",
    "AWORLD_STUDIO_AUTH": "admin:pw",
    # credential-like within the runtime prefixes
    "HF_TOKEN": "hf_x",
    "HUGGING_FACE_HUB_TOKEN": "hf_x",
    "WANDB_API_KEY": "w",
    "HF_HUB_URL": "https://user:pw@hf-mirror.example",
    "RAY_ADDRESS": "ray://tok@head:10001",
    "TORCH_HUB_MIRROR": "https://m.example/?password=pw",
    "PYTHONSTARTUP": "/root/.pythonrc",  # an interactive interpreter's hook: user code runs none
}


def test_user_code_env_is_an_allowlist(monkeypatch):
    """Issue 41 ("environment values by invitation only"): user code gets what a Python/ML process needs, less
    anything credential-like, plus the names asked for (in a studio, the invited ones) — nothing else."""
    monkeypatch.delenv("AWORLD_ENV_INVITED", raising=False)
    monkeypatch.delenv("AWORLD_USER_ENV_ALLOW", raising=False)
    base = {**RUNTIME, **UNINVITED}
    assert user_code_env(base=base) == RUNTIME
    # the CLI: a name asked for by ${NAME} is handed on, credential or not
    asked = user_code_env(allow=["MY_APP_SETTING", "PGPASSWORD"], base=base)
    assert asked == {**RUNTIME, "MY_APP_SETTING": "plain", "PGPASSWORD": "pw"}
    # a studio: only the invited ones among those asked for; its own variables never
    monkeypatch.setenv("AWORLD_ENV_INVITED", "MY_APP_SETTING,AWORLD_STUDIO_AUTH")
    studio = user_code_env(allow=["MY_APP_SETTING", "PGPASSWORD", "AWORLD_STUDIO_AUTH"], base=base)
    assert studio == {**RUNTIME, "MY_APP_SETTING": "plain"}
    # the operator's own allowlist
    monkeypatch.setenv("AWORLD_USER_ENV_ALLOW", "SENTRY_DSN")
    assert user_code_env(base=base) == {**RUNTIME, "SENTRY_DSN": UNINVITED["SENTRY_DSN"]}


@pytest.mark.parametrize(
    "name, value, secret",
    [
        ("OPENAI_API_KEY", "sk", True),
        ("HF_TOKEN", "x", True),
        ("AWS_SECRET_ACCESS_KEY", "x", True),
        ("DB_PASSWORD", "x", True),
        ("GOOGLE_APPLICATION_CREDENTIALS", "/k.json", True),
        ("SSH_AUTH_SOCK", "/s", True),
        ("AWORLD_STUDIO_HOST", "0.0.0.0", True),
        ("DATABASE_URL", "postgres://u:pw@db/x", True),
        # the fifth probe's: compound names, and values that carry a secret under a plain name
        ("PGPASSWORD", "x", True),
        ("MYSQL_PWD", "x", True),
        ("GITHUB_PAT", "x", True),
        ("DJANGO_SECRETKEY", "x", True),
        ("BACKUP_PASSPHRASE", "x", True),
        ("OPENAI_KEYS", "x", True),
        ("SSHKEY", "x", True),
        ("HFTOKEN", "x", True),
        ("SENTRY_DSN", "x", True),
        ("OAUTH_CLIENT", "x", True),
        ("REDIS_URL", "redis://:pw@cache:6379/0", True),
        ("ERROR_REPORTING", "https://abc123@o1.ingest.sentry.io/1", True),
        ("DB", "postgres://db/x?sslmode=require&password=pw", True),
        ("FEED", "https://api.example/v1?token=abc", True),
        ("BLOB", "https://acct.blob.example/c/f?sv=2020&sig=abc", True),
        ("NOTIFY", "https://hooks.slack.com/services/T0/B0/xyz", True),
        ("DB", "postgres://db/x?sslmode=require", False),
        ("HF_ENDPOINT", "https://hf-mirror.com", False),
        ("NCCL_SOCKET_IFNAME", "eth0", False),
        ("OLDPWD", "/w", False),
        ("GIT_AUTHOR_NAME", "me", False),
        ("PATH", "/usr/bin", False),
        ("TOKENIZERS_PARALLELISM", "false", False),
        ("HF_HOME", "/h", False),
        ("CUDA_VISIBLE_DEVICES", "0", False),
        ("HTTP_PROXY", "http://proxy:3128", False),
        ("PWD", "/w", False),
    ],
)
def test_what_counts_as_a_credential(name, value, secret):
    assert is_credential(name, value) is secret


def test_names_asked_for_in_configs(tmp_path):
    agent = tmp_path / "agent.yaml"
    agent.write_text("model: m\napi_key: ${OPENAI_API_KEY}\nllm_base_url: ${BASE:-http://x}\n")
    cfg = "env_vars:\n  WANDB_API_KEY: ${oc.env:WANDB_API_KEY}\n"
    assert referenced_names(str(agent), cfg, {"a": ["${JUDGE_KEY}"]}) == {
        "OPENAI_API_KEY",
        "BASE",
        "WANDB_API_KEY",
        "JUDGE_KEY",
    }


def test_a_judges_key_variable_is_asked_for_by_name(tmp_path):
    rewards = tmp_path / "rewards.yaml"
    rewards.write_text("- judge:\n    url: http://127.0.0.1:9/v1\n    api_key_env: MY_JUDGE_KEY\n")
    assert referenced_names(str(rewards)) == {"MY_JUDGE_KEY"}
    assert referenced_names([{"judge": {"url": "u", "api_key_env": "OTHER_KEY"}}, "exact_match"]) == {"OTHER_KEY"}
    assert referenced_names({"judge": {"url": "u"}}) == {"OPENAI_API_KEY"}  # the judge's default variable
    assert referenced_names({"reward_model": "/m"}) == set()


TORCH_AFTER_FORK = """
import torch
from engines.isolation.sandbox import run_isolated
x = torch.randn(256, 256)
(x @ x).sum()  # this process has now run torch's intra-op (OpenMP) thread pool


def forward():
    y = torch.randn(256, 256)
    return float(torch.softmax(y @ y, -1).sum())


out = run_isolated(forward, timeout_s=30)
print("RESULT", out.ok, round(out.value) if out.ok else out.error)
"""


def test_torch_works_in_a_call_from_a_process_that_already_used_torch(tmp_path):
    """AgentTrainer in a notebook that has run a model: the reward model's dry run forks from it."""
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "PYTHONPATH": root, "OMP_NUM_THREADS": "2"}
    out = subprocess.run(
        [sys.executable, "-c", TORCH_AFTER_FORK], capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr[-2000:]
    result = out.stdout.split("RESULT", 1)[1]
    assert result.split() == ["True", "256"], result  # each softmax row sums to 1


def fork_many(n, marker, deaf=False):
    """Fork ``n`` children that leave the call's session (setsid) and sleep as ``marker``; ``deaf``: ignore
    the signal that raises the process limit's error, and go on forking."""
    import signal

    report_progress("reward")
    if deaf:
        signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    for _ in range(n):
        if os.fork() == 0:
            os.setsid()
            os.execv("/bin/sleep", [marker, "600"])
    return "forked"


def test_a_call_that_forks_past_the_process_limit_gets_an_error_and_leaves_nothing(monkeypatch):
    """Issue 29 item 8: 300 forks that setsid() away; root ignores RLIMIT_NPROC, so the supervisor counts."""
    monkeypatch.setenv("AWORLD_USER_CODE_MAX_PROCESSES", "40")
    marker = f"aworld-forkbomb-{os.getpid()}-a"
    t0 = time.monotonic()
    out = run_isolated(fork_many, {"n": 300, "marker": marker}, timeout_s=60)
    assert time.monotonic() - t0 < 20
    assert not out.ok and out.kind == "exception", out
    assert "TooManyProcesses: started" in out.error and "more than the limit of 40" in out.error
    assert "AWORLD_USER_CODE_MAX_PROCESSES" in out.error
    wait_for(lambda: not processes_marked(marker), 10, "every forked process to be killed")


def test_a_call_deaf_to_the_process_limit_error_is_killed(monkeypatch):
    monkeypatch.setenv("AWORLD_USER_CODE_MAX_PROCESSES", "20")
    marker = f"aworld-forkbomb-{os.getpid()}-b"
    out = run_isolated(fork_many, {"n": 3000, "marker": marker, "deaf": True}, timeout_s=60)
    assert not out.ok and out.kind == "processes", out
    assert describe(out).startswith("the reward module's code started ")
    assert "it went on after 3 such errors, so it was killed" in out.error
    wait_for(lambda: not processes_marked(marker), 10, "every forked process to be killed")


def test_a_call_under_the_process_limit_runs_as_before(monkeypatch):
    monkeypatch.setenv("AWORLD_USER_CODE_MAX_PROCESSES", "20")
    marker = f"aworld-forkbomb-{os.getpid()}-c"
    out = run_isolated(fork_many, {"n": 10, "marker": marker}, timeout_s=60)
    assert out.ok and out.value == "forked", out
    wait_for(lambda: not processes_marked(marker), 10, "the call's processes to be killed when it ended")


def test_a_forged_result_frame_runs_nothing_in_the_caller(tmp_path):
    """A result is rebuilt from plain data and the classes a result holds (sandbox.RESULT_CLASSES), never by a
    bare ``pickle.loads``: a frame naming ``exec`` ran the user's code in the check worker, with its capabilities
    (the probe read the studio's memory so). The call fails, saying why; nothing ran in this process."""
    marker = tmp_path / "ran-in-the-caller"
    out = run_isolated(forge_result, {"marker": str(marker)}, timeout_s=30)
    assert not marker.exists(), f"the forged frame ran in pid {marker.read_text()} (this process is {os.getpid()})"
    assert not out.ok and out.kind == "forged", out
    assert "builtins.exec, which a result never holds" in out.error, out.error
    # what a result does hold still comes back
    assert load_result(pickle.dumps([CheckResult("reward", "ok", "fine"), {"a": (1, 2.0, None)}])) == [
        CheckResult("reward", "ok", "fine"),
        {"a": (1, 2.0, None)},
    ]
