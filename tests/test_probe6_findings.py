"""The sixth probe's findings (docs/probes/probe6.md): user code run as root, without capabilities, inside its mount
namespace. Each test names its finding; a test that cannot apply here (not root, no such file) is skipped."""

from __future__ import annotations

import errno
import json
import os
import stat
import sys

import pytest

from engines.isolation.sandbox import run_isolated

sys.path.insert(0, os.path.dirname(__file__))
from test_read_only_files import root_only  # noqa: E402


def _open_for_writing(paths: list[str]) -> dict[str, str]:
    """In the isolated call: which of ``paths`` the kernel lets user code open for writing (nothing is written); a
    ``/dev/null`` bound in a device's place is no device."""
    null = os.stat("/dev/null").st_rdev
    out = {}
    for p in paths:
        try:
            fd = os.open(p, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as e:
            out[p] = errno.errorcode.get(e.errno, str(e.errno))
        else:
            st = os.fstat(fd)
            os.close(fd)
            out[p] = "null in its place" if stat.S_ISCHR(st.st_mode) and st.st_rdev == null else "OPENED"
    return out


def _existing(paths):
    return [p for p in paths if os.path.exists(p)]


@root_only
def test_finding1_user_code_cannot_write_the_kernels_settings():
    """CRITICAL. /proc/sys is writable by uid 0 without any capability (the kernel checks the file's mode, not a
    capability): a reward wrote ``|<its temp folder>/x.sh`` into /proc/sys/kernel/core_pattern, crashed a child it
    had exec'd (dumpable again), and the kernel ran x.sh as root with every capability, in the machine's mount
    namespace, outside the process tree (it wrote /tmp, read-only to the reward). Nothing is written here: the test
    only opens the files for writing."""
    knobs = _existing(
        [
            "/proc/sys/kernel/core_pattern",
            "/proc/sys/kernel/modprobe",
            "/proc/sys/vm/drop_caches",
            "/proc/sys/kernel/pid_max",
            "/proc/sysrq-trigger",
        ]
    )
    assert knobs
    out = run_isolated(_open_for_writing, {"paths": knobs}, timeout_s=30)
    assert out.ok, out
    assert {p: r for p, r in out.value.items() if r == "OPENED"} == {}


@root_only
def test_finding2_user_code_cannot_write_cgroup_files():
    """HIGH. The cgroup v1 hierarchies under /sys/fs/cgroup are left writable ("the kernel's own file systems are
    left as they are"): user code writes its pid into the root ``pids`` cgroup's ``cgroup.procs`` and leaves the
    call's ``pids.max`` (the kernel's cap on a fork burst), or freezes another process (the studio) through
    ``freezer``, or leaves its memory cgroup."""
    files = _existing(
        [f"/sys/fs/cgroup/{h}/cgroup.procs" for h in ("pids", "freezer", "memory", "cpu", "devices")]
        + [
            "/sys/fs/cgroup/cgroup.procs",
            "/sys/fs/cgroup/unified/cgroup.procs",
            "/sys/kernel/mm/transparent_hugepage/enabled",
        ]
    )
    if not files:
        pytest.skip("no cgroup file here")
    out = run_isolated(_open_for_writing, {"paths": files}, timeout_s=30)
    assert out.ok, out
    assert {p: r for p, r in out.value.items() if r == "OPENED"} == {}


def _block_and_control_devices() -> list[str]:
    found = []
    for name in sorted(os.listdir("/dev")):
        p = os.path.join("/dev", name)
        try:
            st = os.lstat(p)
        except OSError:
            continue
        if stat.S_ISBLK(st.st_mode) or name in ("loop-control", "fuse", "btrfs-control"):
            found.append(p)
    return found


@root_only
def test_finding3_user_code_cannot_open_block_devices_for_writing():
    """HIGH. /dev is left as it is: a block device (``/dev/loop0``, ``/dev/zram0`` here; a disk where the devices
    cgroup allows it) opens read-write for uid 0 without capabilities, beneath every read-only mount: a write there
    is a write to the file system's blocks (a loop device's backing file, a swap device holding other processes'
    pages). ``/dev/loop-control`` and ``/dev/fuse`` open too. Nothing is written: only opened."""
    devices = _block_and_control_devices()
    if not devices:
        pytest.skip("no block device here")
    out = run_isolated(_open_for_writing, {"paths": devices}, timeout_s=30)
    assert out.ok, out
    assert {p: r for p, r in out.value.items() if r == "OPENED"} == {}


def _other_calls_temp_folders(neighbour: str) -> dict:
    import tempfile

    root = os.path.dirname(tempfile.gettempdir())
    out = {}
    for where in (root, neighbour):
        try:
            with open(os.path.join(where, "planted-by-another-call"), "w") as f:
                f.write("x")
            out[where] = "WROTE"
        except OSError as e:
            out[where] = errno.errorcode.get(e.errno, str(e.errno))
    return out


@root_only
def test_finding4_a_call_writes_no_other_calls_temp_folder():
    """MEDIUM. Every user-code process got ``/tmp/aworld-user-code`` (the folder of all temporary folders) writable,
    not only its own folder in it: it wrote into every other call's and run's temporary folder (another run's
    ``TMPDIR``, its torch/triton caches moved there: code the other run loads) and beside them (all are uid 0's:
    mode 0700 keeps nothing out). Reading them is root's, as every file is (docs/SECURITY.md)."""
    import tempfile

    from engines.isolation.read_only_files import temp_root

    neighbour = tempfile.mkdtemp(dir=temp_root())  # another call's folder, present while this one runs
    try:
        out = run_isolated(_other_calls_temp_folders, {"neighbour": neighbour}, timeout_s=30)
        assert out.ok, out
        assert {w: r for w, r in out.value.items() if r == "WROTE"} == {}
    finally:
        for where in (temp_root(), neighbour):
            try:
                os.unlink(os.path.join(where, "planted-by-another-call"))
            except OSError:
                pass
        os.rmdir(neighbour)


def test_finding5_a_stored_probe_report_names_its_own_file(tmp_path):
    """LOW. A run's user code can write ``<runs>/.probes/<key>.json`` (the runs folder is writable to a run): a forged
    report for a key the studio will look up (the key is a digest of the setup, which the uploader knows) is read back
    with the ``path`` it carries, which the studio then hands to the filter (``probe_filter(report_path=...)``) and
    shows. The stored report's ``path`` is where it was read from, whatever the file says."""
    from engines.probe.store import probe_path, read_stored

    key = "0123456789abcdef0123"
    p = probe_path(tmp_path, key)
    p.parent.mkdir(parents=True)
    p.write_text(json.dumps({"key": key, "path": "/etc/passwd"}))
    report = read_stored(tmp_path, key)
    assert report is not None and report["path"] == str(p)
