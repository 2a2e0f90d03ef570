"""The eighth probe's findings (docs/probes/probe8.md): user code run as root, without capabilities, inside its mount
namespace, hunting for what lies outside it — ``/dev``, the machine's Unix sockets. Each test names its finding; a test
that cannot apply here (not root) is skipped."""

from __future__ import annotations

import errno
import os
import socket
import stat
import sys
import tempfile
import threading

import pytest

from engines.isolation.read_only_files import bound_socket_paths
from engines.isolation.sandbox import run_isolated

sys.path.insert(0, os.path.dirname(__file__))
from test_read_only_files import root_only  # noqa: E402


def attempt(fn) -> str:
    """``fn()`` in the isolated call: "DONE", or the errno name it failed with."""
    try:
        fn()
        return "DONE"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))


def _touch_dev(node: str) -> dict[str, str]:
    """In the isolated call: replace ``node`` (a device node made outside) with a regular file, make a file, a folder
    and a link in /dev; each attempt's errno name or what it did. /dev/null and /dev/shm stay usable."""

    def replace() -> None:
        os.unlink(node)
        with open(node, "w") as f:
            f.write("what user code wants the machine to read from this device\n")

    made = node + "-made"
    out = {
        "replace the node": attempt(replace),
        "make a file": attempt(lambda: open(made, "w").close()),
        "make a folder": attempt(lambda: os.mkdir(made + "-dir")),
        "make a link": attempt(lambda: os.symlink("/etc/hostname", made + "-link")),
    }
    with open("/dev/null", "w") as f:
        f.write("still a sink")
    fd, shm = tempfile.mkstemp(dir="/dev/shm") if os.path.isdir("/dev/shm") else (None, None)
    if fd is not None:
        os.close(fd)
        os.unlink(shm)
    return out


@root_only
def test_finding1_user_code_cannot_replace_or_add_device_nodes(tmp_path):
    """HIGH. /dev (devtmpfs, one instance for the whole machine) was "left as it is", writable: a reward unlinked a
    device node made outside and put a regular file of its own in its place, for every process on the machine (done to
    ``/dev/null``, what every process then writes there user code reads back, and what they read is its text), and
    made files, folders and links there that outlived the call. Now /dev is read-only to user code; its nodes, /dev/null
    and /dev/shm work as before."""
    node = f"/dev/aworld-probe8-{os.getpid()}"
    os.mknod(node, 0o644 | stat.S_IFCHR, os.makedev(1, 3))  # a second /dev/null
    try:
        out = run_isolated(_touch_dev, {"node": node}, timeout_s=30)
        assert out.ok, out
        assert {k: v for k, v in out.value.items() if v != "EROFS"} == {}
        assert stat.S_ISCHR(os.lstat(node).st_mode)
    finally:
        for p in (node, node + "-made", node + "-made-link"):
            if os.path.lexists(p):
                os.unlink(p)
        if os.path.isdir(node + "-made-dir"):
            os.rmdir(node + "-made-dir")


def _connect(path: str) -> str:
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(5)
    try:
        s.connect(path)
        return "CONNECTED: " + s.recv(100).decode()
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
    finally:
        s.close()


@root_only
def test_finding2_user_code_cannot_connect_to_the_machines_unix_sockets():
    """HIGH (critical where such a daemon runs). A read-only mount does not stop ``connect()`` to a Unix socket: a
    reward reached a socket a process outside its namespace listened on (every capability, the machine's mount
    namespace), which saw a peer of uid 0 — what systemd's ``/run/systemd/private``, ``docker.sock`` or root's tmux
    server trust to run anything asked for. Now every socket bound to a path outside the call's folders has
    /dev/null in its place."""
    folder = tempfile.mkdtemp(prefix="aworld-probe8-", dir="/run" if os.access("/run", os.W_OK) else "/var/tmp")
    path = os.path.join(folder, "daemon.sock")
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    server.listen(4)
    server.settimeout(10)

    def serve() -> None:
        try:
            while True:
                conn, _ = server.accept()
                conn.sendall(b"a daemon outside, with every capability")
                conn.close()
        except OSError:
            pass

    threading.Thread(target=serve, daemon=True).start()
    try:
        assert _connect(path).startswith("CONNECTED")  # (outside it can be reached)
        assert path in bound_socket_paths()
        out = run_isolated(_connect, {"path": path}, timeout_s=30)
        assert out.ok, out
        assert out.value == "ECONNREFUSED"
    finally:
        server.close()
        os.unlink(path)
        os.rmdir(folder)


def test_bound_socket_paths_reads_proc_net_unix():
    text = (
        "Num       RefCount Protocol Flags    Type St Inode Path\n"
        "0000000000000000: 00000002 00000000 00010000 0001 01 1234 /run/systemd/private\n"
        "0000000000000000: 00000002 00000000 00000000 0001 03 1235 /run/systemd/private\n"
        "0000000000000000: 00000002 00000000 00010000 0001 01 1236 @abstract\n"
        "0000000000000000: 00000002 00000000 00000000 0002 01 1237\n"
        "0000000000000000: 00000002 00000000 00010000 0001 01 1238 /tmp/a folder/with spaces.sock\n"
    )
    assert bound_socket_paths(text) == ["/run/systemd/private", "/tmp/a folder/with spaces.sock"]


def _aworld_agent(tmp_path, prompt: str, model: str, key: str = "sk-none") -> str:
    path = tmp_path / "agent.yaml"
    path.write_text(
        "vars:\n"
        "  K: ${AWORLD_PROBE8_SETTING}\n"
        "  KEY: ${PROBE8_INVITED_KEY}\n"
        "agents:\n"
        "  probe-agent:\n"
        "    config:\n"
        f"      system_prompt: {prompt!r}\n"
        f"      llm_model_name: {model!r}\n"
        f"      llm_api_key: {key!r}\n"
    )
    return str(path)


def test_finding3_aworld_form_vars_substitute_nothing_the_studio_would_not(tmp_path, monkeypatch):
    """MEDIUM. An agent in AWorld's form is read by AWorld's loader, which substitutes every ``${NAME}`` anywhere
    before the studio's invitation check saw the values: ``vars: {K: ${OPENAI_API_KEY}}`` with ``config:
    {system_prompt: "Key is ${vars.K}"}`` showed the invited key in the check's rendered prompt, ``llm_model_name:
    /nope/${vars.K}`` a variable never invited (an ``AWORLD_*`` setting) in the model folder's error. In a studio
    AWorld now substitutes nothing: the reference reaches the check as written, refused outside ``api_key`` and
    ``llm_base_url``, substituted there only when invited."""
    pytest.importorskip("aworld.config.agent_loader")
    from engines.agents.agent_spec import load_agent
    from engines.env_values.env_invitation import INVITED_ENV
    from engines.results.check_result import CheckError

    monkeypatch.setenv(INVITED_ENV, "PROBE8_INVITED_KEY")
    monkeypatch.setenv("PROBE8_INVITED_KEY", "sk-invited-probe8-value")
    monkeypatch.setenv("AWORLD_PROBE8_SETTING", "uninvited-probe8-value")
    model = os.path.join(os.path.dirname(__file__), "..", "assets", "models", "tiny-letters")
    for prompt, model_path in (("Key is ${vars.KEY}", model), ("hi", "/nope/${vars.K}"), ("Key is ${vars.K}", model)):
        with pytest.raises(CheckError) as e:
            load_agent(_aworld_agent(tmp_path, prompt, model_path))
        assert "probe8-value" not in str(e.value)
        assert "is not substituted" in str(e.value) or "never in text it shows" in str(e.value)
    spec = load_agent(_aworld_agent(tmp_path, "hi", model, key="${vars.KEY}"))  # where keys go, invited: substituted
    assert spec.api_key == "sk-invited-probe8-value"
    assert "probe8-value" not in spec.system_prompt


def _start_a_process_and_wait(marker: str, seconds: float) -> int:
    """In one isolated call (a run, say): a process it executes (dumpable again after ``execve``, no capability),
    holding a value in its environment; the call waits while another tries it."""
    import subprocess

    child = subprocess.Popen(
        [sys.executable, "-c", f"import time; time.sleep({seconds})"], env={"PROBE8_VALUE": marker, "PATH": "/usr/bin"}
    )
    child.wait()
    return child.pid


def _reach(pid: int) -> dict[str, str]:
    """In another isolated call (a check): what it gets of ``pid``."""
    import ctypes

    out = {}
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            out["environ"] = f.read().decode(errors="replace")
    except OSError as e:
        out["environ"] = errno.errorcode.get(e.errno, str(e.errno))
    try:
        os.close(os.open(f"/proc/{pid}/mem", os.O_RDWR))
        out["mem"] = "OPENED"
    except OSError as e:
        out["mem"] = errno.errorcode.get(e.errno, str(e.errno))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
    seized = libc.ptrace(0x4206, pid, None, None) == 0  # PTRACE_SEIZE: does not stop it; the exit detaches
    out["ptrace"] = "ATTACHED" if seized else errno.errorcode.get(ctypes.get_errno(), "?")
    return out


@root_only
def test_finding4_one_call_cannot_reach_the_processes_another_call_executes():
    """MEDIUM. Every process user code executes is dumpable again (``execve`` resets it) and holds no capability, as
    every other call's user code: one isolated call (a check's reward, 60 s, nothing writable) attached with ptrace
    to, and opened ``/proc/<pid>/mem`` read-write of, a process another call (a run: its environment, its writable
    folders, its hours) had started, and read its ``environ``. Now each call is in a user namespace of its own: the
    kernel asks ``CAP_SYS_PTRACE`` in the target's namespace, which no call holds."""
    from engines.isolation.sandbox import IsolatedCall

    marker = f"probe8-victim-{os.getpid()}"
    victim = IsolatedCall(_start_a_process_and_wait, {"marker": marker, "seconds": 12}, timeout_s=40)
    try:
        pid = None
        for _ in range(100):
            for name in os.listdir("/proc"):
                if name.isdigit():
                    try:
                        with open(f"/proc/{name}/environ", "rb") as f:  # (this test holds every capability)
                            if marker.encode() in f.read():
                                pid = int(name)
                    except OSError:
                        pass
            if pid:
                break
            threading.Event().wait(0.1)
        assert pid, "the victim process did not start"
        out = run_isolated(_reach, {"pid": pid}, timeout_s=30)
        assert out.ok, out
        assert marker not in out.value["environ"]
        assert out.value["mem"] == "EACCES" and out.value["ptrace"] == "EPERM", out.value
    finally:
        victim.stop()
        victim.wait()


def _signal_and_connect(target: int, abstract: str) -> dict[str, str]:
    """In the isolated call: signal 0 to ``target`` (a process outside), connect to the abstract socket ``abstract``
    bound outside; and the same within its own tree (a child it started, a socket it bound)."""
    import signal
    import subprocess

    def connect(name: str) -> None:
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(5)
        try:
            s.connect("\0" + name)
        finally:
            s.close()

    own = socket.socket(socket.AF_UNIX)
    own.bind(f"\0{abstract}-inside")
    own.listen(1)
    child = subprocess.Popen(["sleep", "30"])
    out = {
        "signal outside": attempt(lambda: os.kill(target, 0)),
        "abstract socket outside": attempt(lambda: connect(abstract)),
        "signal its child": attempt(lambda: os.kill(child.pid, signal.SIGTERM)),
        "its own abstract socket": attempt(lambda: connect(f"{abstract}-inside")),
    }
    child.wait()
    own.close()
    return out


def test_finding5_user_code_neither_signals_nor_reaches_abstract_sockets_outside_its_tree():
    """MEDIUM (a documented limit until now). User code keeps its uid, and the kernel lets a process signal every
    process of its uid and connect to any abstract Unix socket (``@name``: no file, which no mount hides): a reward
    could stop or kill the studio (SIGSTOP froze it), its check worker or another run, and talk to a root daemon's
    abstract socket (containerd's shims, CVE-2020-15257). Now a Landlock domain scopes both to the user code's own
    tree (kernels with Landlock ABI 6: 6.12 on); within it, nothing changes."""
    from engines.isolation.scoped import SCOPES_ABI, scope_to_own_tree
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    scoped = libc.syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1)) >= SCOPES_ABI
    if not scoped:  # an older kernel: the sandbox says why (here, where it restricts nothing) and the limit stands
        assert scope_to_own_tree().startswith("landlock scopes: ")
    refused = "EPERM" if scoped else "DONE"
    name = f"aworld-probe8-{os.getpid()}"
    server = socket.socket(socket.AF_UNIX)
    server.bind("\0" + name)
    server.listen(4)
    try:
        out = run_isolated(_signal_and_connect, {"target": os.getpid(), "abstract": name}, timeout_s=30)
        assert out.ok, out
        assert out.value == {
            "signal outside": refused,
            "abstract socket outside": refused,
            "signal its child": "DONE",
            "its own abstract socket": "DONE",
        }
    finally:
        server.close()
