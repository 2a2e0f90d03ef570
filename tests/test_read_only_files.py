"""Issue 41, the fifth probe's critical finding: user code run as root (without capabilities) wrote into
site-packages — a ``.pth`` file there runs its code in the next interpreter the studio starts, before it gives up its
capabilities. User code now sees every file read-only but the folders its work writes into
(engines/isolation/read_only_files.py): an isolated call (a check, a launch's preparation), a run, an evaluation and a
chat model alike."""

from __future__ import annotations

import ctypes
import os
import shutil
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

from engines.isolation import read_only_files
from engines.isolation.read_only_files import Mount, mounts, to_make_read_only
from engines.isolation.sandbox import run_isolated

ROOT = Path(__file__).resolve().parent.parent
CAP_SYS_ADMIN = 21


def _may_confine() -> bool:
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        return False
    with open("/proc/self/status") as f:
        eff = next(int(line.split()[1], 16) for line in f if line.startswith("CapEff:"))
    return bool(eff >> CAP_SYS_ADMIN & 1)


root_only = pytest.mark.skipif(not _may_confine(), reason="a mount namespace needs root with CAP_SYS_ADMIN")


def test_mountinfo_is_read_with_its_escapes_and_the_kernels_mounts_are_left_alone():
    text = (
        "22 1 253:1 / / rw,relatime - ext4 /dev/vda rw\n"
        "23 22 0:5 / /proc rw,nosuid,nodev,noexec - proc proc rw\n"
        "24 22 0:6 / /dev/shm rw,nosuid,nodev - tmpfs tmpfs rw\n"
        "25 22 253:2 / /data/my\\040runs rw,nosuid,noatime - xfs /dev/vdb rw\n"
        "26 25 253:2 /x /data/my\\040runs/run-1 rw - xfs /dev/vdb rw\n"
        "27 22 253:3 / /opt/models ro,nodev - ext4 /dev/vdc ro\n"
        "28 22 253:1 /usr /usr rw - ext4 /dev/vda rw\n"
        "29 22 253:1 /usr /usr rw - ext4 /dev/vda rw\n"  # stacked on the same point: remounted once
    )
    ms = mounts(text)
    assert [m.point for m in ms][:4] == ["/", "/proc", "/dev/shm", "/data/my runs"]
    assert ms[3].flags() == read_only_files.MS_NOSUID | read_only_files.MS_NOATIME  # kept on the remount
    chosen = [m.point for m in to_make_read_only(ms, ["/data/my runs/run-1"])]
    assert chosen == ["/", "/data/my runs", "/opt/models", "/usr"]
    assert to_make_read_only([Mount("/data/my runs/run-1", "rw", "xfs")], ["/data/my runs"]) == []


def _try_writes(given: str, other: str, source: str, site: str) -> dict:
    """In the isolated call: which writes the kernel takes, and whether the namespace can be undone."""
    out: dict = {"temp": tempfile.gettempdir(), "datasets_cache": str(read_only_files.datasets_cache())}
    targets = {
        "given": os.path.join(given, "x.txt"),
        "temp": os.path.join(tempfile.gettempdir(), "y.txt"),
        "datasets_cache": os.path.join(out["datasets_cache"], "aworld-probe.lock"),
        "other": os.path.join(other, "z.txt"),
        "source": os.path.join(source, "_planted_by_user_code.py"),
        "site_packages": os.path.join(site, "zz_planted_by_user_code.pth"),
    }
    for name, path in targets.items():
        try:
            with open(path, "w") as f:
                f.write("import os; os.system('touch /tmp/pwned')\n")
            out[name] = "written"
        except OSError as e:
            out[name] = e.strerror
    libc = ctypes.CDLL(None, use_errno=True)
    flags = read_only_files.MS_BIND | read_only_files.MS_REMOUNT
    out["remount"] = os.strerror(ctypes.get_errno()) if libc.mount(None, b"/", None, flags, None) else "remounted"
    out["unshare"] = os.strerror(ctypes.get_errno()) if libc.unshare(read_only_files.CLONE_NEWNS) else "unshared"
    return out


@root_only
def test_an_isolated_call_writes_its_folders_only_and_cannot_undo_that(tmp_path):
    given = tmp_path / "run"
    given.mkdir()
    other = Path(tempfile.mkdtemp(prefix="not-given-", dir="/var/tmp"))  # outside the tests' writable folder
    site = sysconfig.get_paths()["purelib"]
    try:
        out = run_isolated(
            _try_writes,
            {"given": str(given), "other": str(other), "source": str(ROOT / "engines"), "site": site},
            writable=[given],
            timeout_s=60,
        )
        assert out.ok, out.error
        seen = out.value
        assert seen["given"] == seen["temp"] == seen["datasets_cache"] == "written", seen
        for refused in ("other", "source", "site_packages"):
            assert seen[refused] == "Read-only file system", (refused, seen)
        assert seen["remount"] == seen["unshare"] == "Operation not permitted", seen
        assert (given / "x.txt").is_file()
        assert not (other / "z.txt").exists() and not (ROOT / "engines" / "_planted_by_user_code.py").exists()
        assert not Path(site, "zz_planted_by_user_code.pth").exists()
        # the call's temporary folder is its own, and gone with it; the datasets cache it wrote was a scratch copy
        assert seen["temp"] != tempfile.gettempdir() and not os.path.exists(seen["temp"])
        assert not Path(seen["datasets_cache"], "aworld-probe.lock").exists()
    finally:
        shutil.rmtree(other, ignore_errors=True)


@root_only
def test_a_whole_life_process_is_confined_and_its_temporary_folder_removed(tmp_path):
    """A run, an evaluation and a chat model (cli.py) confine themselves with ``without_privileges``."""
    other = Path(tempfile.mkdtemp(prefix="not-given-", dir="/var/tmp"))
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(r)
        code = 1
        try:
            from engines.isolation.privileges import without_privileges

            with without_privileges([tmp_path]) as problems:
                temp = tempfile.gettempdir()
                seen = _try_writes(str(tmp_path), str(other), str(ROOT / "engines"), sysconfig.get_paths()["purelib"])
            os.write(w, repr((problems, temp, seen)).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    with os.fdopen(r) as f:
        problems, temp, seen = eval(f.read())  # noqa: S307 - our own child's repr of plain values
    os.waitpid(pid, 0)
    shutil.rmtree(other, ignore_errors=True)
    assert problems == [], problems
    assert seen["given"] == seen["temp"] == "written"
    assert seen["site_packages"] == seen["source"] == seen["other"] == "Read-only file system", seen
    assert not os.path.exists(temp)
