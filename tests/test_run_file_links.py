"""No link leaves the runs folder (issue 41, item 2): user code can find the runs folder and plant links in a run
(``train.log -> /some/secret``, ``checkpoints/checkpoint-1/leak.txt -> /some/secret``). The studio reads a run's
files without following a link in their place — the log view says so, the metrics, samples, events and status are
read as missing — and a checkpoint's zip leaves links (to files or folders) out."""

from __future__ import annotations

import json
import os
import threading
import zipfile
from pathlib import Path

import pytest

from aworld_gui.core.run_cache import RunCache
from aworld_gui.core.studio import Studio
from engines.runs.no_links import LINK_NOTICE
from testing.swap_race import exchange
from engines.runs.rundir import RunDir

SECRET = "the-secret-outside-the-runs-folder-0066"


class NoWorker:
    def start(self):
        pass

    def close(self):
        pass


def planted(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET + "\n")
    (outside / "secret.jsonl").write_text(json.dumps({"step": 1, "time": 1.0, "reward": 0.5, "note": SECRET}) + "\n")
    (outside / "status.json").write_text(json.dumps({"state": "finished", "note": SECRET}))
    runs = tmp_path / "runs"
    run = RunDir.create(runs, "trl")
    run.write_spec({"engine": "trl"})
    run.write_status(state="running", step=0)
    return run, runs, outside


def test_a_runs_log_and_records_are_not_read_through_a_link(tmp_path):
    run, runs, outside = planted(tmp_path)
    run.file("train.log").symlink_to(outside / "secret.txt")
    for name in ("metrics.jsonl", "samples.jsonl", "events.jsonl"):
        run.file(name).symlink_to(outside / "secret.jsonl")
    studio = Studio(runs, worker=NoWorker(), cache=RunCache())
    state = studio.state(run.run_id)
    assert state.log_text() == LINK_NOTICE
    assert state.rows == 0 and SECRET not in json.dumps(state.latest)
    assert run.read_jsonl("samples.jsonl") == [] and run.read_jsonl("events.jsonl") == []
    # the link replaced by the file: read as usual
    run.file("train.log").unlink()
    run.file("train.log").write_text("step 1\n")
    studio.cache.refresh(run.path, force=True)
    assert studio.state(run.run_id).log_text() == "step 1"


def test_a_status_that_is_a_link_is_read_as_missing(tmp_path):
    run, _, outside = planted(tmp_path)
    run.file("status.json").unlink()
    run.file("status.json").symlink_to(outside / "status.json")
    assert run.read_status() == {}


def test_a_checkpoints_zip_leaves_links_out(tmp_path):
    run, runs, outside = planted(tmp_path)
    checkpoint = run.checkpoints_dir / "checkpoint-1"
    (checkpoint / "sub").mkdir(parents=True)
    (checkpoint / "model.safetensors").write_bytes(b"weights")
    (checkpoint / "sub" / "part.json").write_text("{}")
    (checkpoint / "leak.txt").symlink_to(outside / "secret.txt")
    (checkpoint / "linked-folder").symlink_to(outside, target_is_directory=True)
    run.write_status(state="finished", step=1)
    studio = Studio(runs, worker=NoWorker(), cache=RunCache())
    with zipfile.ZipFile(studio.checkpoint_zip(run.run_id, "checkpoint-1")) as z:
        names = sorted(z.namelist())
        assert names == ["checkpoint-1/model.safetensors", "checkpoint-1/sub/part.json"]
        assert all(SECRET.encode() not in z.read(n) for n in names)


def test_a_checkpoint_user_code_inflated_is_refused_before_it_fills_the_disk(tmp_path, monkeypatch):
    """Issue 41: user code can write into its run's checkpoints. A sparse file of a terabyte made the Runs tab's zip
    read a terabyte of zeros onto the disk, and a file the code keeps appending to made a zip that never ended.
    A zip reads at most what the disk can take beside its reserve: past that it is refused at once, with what to do,
    and leaves no file behind; a checkpoint that fits is zipped whole."""
    from engines.runs.no_links import ZipTooLarge, zip_plain_files

    run, runs, _outside = planted(tmp_path)
    checkpoint = run.checkpoints_dir / "checkpoint-1"
    checkpoint.mkdir(parents=True)
    (checkpoint / "model.safetensors").write_bytes(b"w" * 4096)
    run.write_status(state="finished", step=1)
    studio = Studio(runs, worker=NoWorker(), cache=RunCache())
    with zipfile.ZipFile(studio.checkpoint_zip(run.run_id, "checkpoint-1")) as z:
        assert z.read("checkpoint-1/model.safetensors") == b"w" * 4096
    with open(checkpoint / "optimizer.pt", "wb") as f:  # sparse: a terabyte that takes no room
        f.truncate(1 << 40)
    os.utime(checkpoint, None)
    exports = runs / ".exports"
    before = sorted(p.name for p in exports.iterdir())
    with pytest.raises(ZipTooLarge, match="come to more than .* free some space, or copy the folder itself"):
        studio.checkpoint_zip(run.run_id, "checkpoint-1")
    assert sorted(p.name for p in exports.iterdir()) == before  # nothing half-written left, the old zip kept
    (checkpoint / "optimizer.pt").unlink()
    # a file that grows while it is read (user code appending to it): the limit is on what is read, not on the size
    # seen when it was opened — that size is made the one seen before it grew
    (checkpoint / "log.bin").write_bytes(b"x" * (8 << 20))
    real_fstat = os.fstat

    def seen_before_it_grew(fd):
        st = real_fstat(fd)
        return os.stat_result((*st[:6], min(st.st_size, 1 << 20), *st[7:]))

    monkeypatch.setattr("engines.runs.no_links.os.fstat", seen_before_it_grew)
    with pytest.raises(ZipTooLarge):
        zip_plain_files(checkpoint, tmp_path / "grown.zip", "checkpoint-1", max_bytes=4 << 20)
    assert not (tmp_path / "grown.zip").exists() and not list(tmp_path.glob(".grown.zip.*"))


def test_a_checkpoints_folder_or_a_checkpoint_that_is_a_link_lists_nothing_and_zips_nothing(tmp_path):
    """Issue 41's third probe: a reward made ``runs/<id>/checkpoints -> /``; the Runs tab listed every folder of
    the machine as a checkpoint and zipped ``/root`` (2 GB) for download. A link is no checkpoints folder and no
    checkpoint, whether it replaces the folder, stands in it, or is where status.json says a cluster run's are."""
    run, runs, outside = planted(tmp_path)
    (outside / "checkpoint-7").mkdir()
    (outside / "checkpoint-7" / "secret.txt").write_text(SECRET)
    run.checkpoints_dir.symlink_to(outside, target_is_directory=True)
    run.write_status(state="finished", step=1)
    studio = Studio(runs, worker=NoWorker(), cache=RunCache())
    assert run.checkpoints() == []
    for name in ("checkpoint-7", "secret.txt"):
        try:
            studio.checkpoint_zip(run.run_id, name)
        except ValueError as e:
            assert "no checkpoint" in str(e)
        else:
            raise AssertionError(f"{name} was zipped through the link")
    run.checkpoints_dir.unlink()
    run.checkpoints_dir.mkdir()
    (run.checkpoints_dir / "checkpoint-7").symlink_to(outside / "checkpoint-7", target_is_directory=True)
    assert run.checkpoints() == []
    try:
        studio.checkpoint_zip(run.run_id, "checkpoint-7")
    except ValueError as e:
        assert "no checkpoint" in str(e)
    else:
        raise AssertionError("a checkpoint that is a link was zipped")
    # status.json naming a cluster folder that is a link (user code can write status.json)
    (run.checkpoints_dir / "checkpoint-7").unlink()
    (tmp_path / "cluster").mkdir()
    (tmp_path / "cluster" / "checkpoints").symlink_to(outside, target_is_directory=True)
    run.write_status(ray_run_dir=f"node:{tmp_path / 'cluster'}")
    assert run.checkpoints() == [] and not list(runs.glob(".exports/*.zip"))


def test_a_checkpoints_zip_takes_what_it_checked_while_user_code_swaps_a_file_for_a_link(tmp_path):
    """The fourth probe: a check of a path, then an open by path, is a race — user code swapping ``weights.bin`` and a
    link to a secret (``renameat2(RENAME_EXCHANGE)``) in a loop got the secret into zips built by the studio (which
    reads as root, with every capability). Each file is now opened once, without following a link, and that
    descriptor is zipped. Hard links, pipes and the link are left out; a link planted at the zip's own name, or at
    the old fixed temporary name, is replaced, never written through."""
    run, runs, outside = planted(tmp_path)
    checkpoint = run.checkpoints_dir / "checkpoint-1"
    checkpoint.mkdir(parents=True)
    (checkpoint / "weights.bin").write_bytes(b"w" * 4096)
    (checkpoint / "alt").symlink_to(outside / "secret.txt")
    os.link(outside / "secret.txt", checkpoint / "hard.txt")  # a second name of a file from elsewhere
    os.mkfifo(checkpoint / "pipe")  # opened, it would hang a reader that waits for a writer
    run.write_status(state="finished", step=1)
    studio = Studio(runs, worker=NoWorker(), cache=RunCache())
    exports = runs / ".exports"
    exports.mkdir()
    victim = outside / "victim.txt"
    victim.write_text("kept")
    for name in (f"{run.run_id}-checkpoint-1.zip.tmp", f"{run.run_id}.run.yaml"):
        (exports / name).symlink_to(victim)  # the studio's writes there used to follow it
    studio.export_spec(run.run_id)
    assert victim.read_text() == "kept" and not (exports / f"{run.run_id}.run.yaml").is_symlink()

    stop, swaps = threading.Event(), [0]

    def swap():
        while not stop.is_set():
            exchange(checkpoint / "weights.bin", checkpoint / "alt")
            swaps[0] += 1

    swapper = threading.Thread(target=swap, daemon=True)
    swapper.start()
    try:
        seen = []
        for _ in range(60):
            (exports / f"{run.run_id}-checkpoint-1.zip").unlink(missing_ok=True)
            with zipfile.ZipFile(studio.checkpoint_zip(run.run_id, "checkpoint-1")) as z:
                seen.append({n: z.read(n) for n in z.namelist()})
    finally:
        stop.set()
        swapper.join()
    assert swaps[0] > 100, swaps
    assert victim.read_text() == "kept"
    for files in seen:
        assert all(SECRET.encode() not in data for data in files.values()), files.keys()
        assert set(files) <= {"checkpoint-1/weights.bin", "checkpoint-1/alt"}  # the plain one, by either name
        assert all(data == b"w" * 4096 for data in files.values())
    assert any(files for files in seen), "the race left the zip empty every time"


def test_a_pipe_or_a_linked_folder_in_a_runs_place_hangs_and_leaks_nothing(tmp_path):
    """A pipe planted as ``status.json``, ``events.jsonl`` or ``samples.jsonl`` held the reader for ever (an open
    waits for a writer): the Runs list and the Monitor hung on it. A run's files are now opened without waiting and
    only a plain file is read; one opened from a run folder swapped for a link is refused as well."""
    run, runs, outside = planted(tmp_path)
    for name in ("status.json", "events.jsonl", "samples.jsonl"):
        run.file(name).unlink(missing_ok=True)
        os.mkfifo(run.file(name))
    studio = Studio(runs, worker=NoWorker(), cache=RunCache())
    done = {}

    def read():
        done["status"] = run.read_status()
        done["events"] = run.read_jsonl("events.jsonl") + run.read_jsonl("samples.jsonl")
        done["listed"] = studio.run_ids()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(20)
    assert not reader.is_alive(), "a reader waits on a pipe in a run's folder"
    assert done["status"] == {} and done["events"] == [] and run.run_id in done["listed"]
    # the run's folder swapped for a link to a folder that holds a status.json: read as missing
    (outside / "run").mkdir()
    (outside / "run" / "status.json").write_text(json.dumps({"state": "finished", "note": SECRET}))
    path = run.path
    os.rename(path, tmp_path / "moved-away")
    path.symlink_to(outside / "run", target_is_directory=True)
    from engines.runs.json_lines import read_json_object

    assert read_json_object(path / "status.json") == {}


def test_a_run_file_is_never_written_through_a_link_at_its_temporary_name(tmp_path):
    """Every run file is written beside itself and renamed (engines.runs.rundir.atomic_write_text); its temporary name
    was ``.<name>.<pid>.<thread>.tmp`` and opened following a link: user code that planted a link there had the
    writer — the studio, root with every capability, when it records a stop — write through it. The temporary file is
    now made under a name nobody knows beforehand with O_EXCL."""
    run, _, outside = planted(tmp_path)
    victim = outside / "victim.txt"
    victim.write_text("kept")
    predictable = run.file(f".status.json.{os.getpid()}.{threading.get_ident()}.tmp")
    predictable.symlink_to(victim)
    run.write_status(state="stopped")
    assert victim.read_text() == "kept" and run.read_status()["state"] == "stopped"
    assert predictable.is_symlink() and not [
        p for p in run.path.iterdir() if p.name.endswith(".tmp") and p != predictable
    ]


def test_links_planted_in_the_runs_folder_are_never_written_through(tmp_path):
    """Issue 41, fifth probe: user code can write into the runs folder, and the studio (as root, every capability)
    followed what it planted there: ``.slot.lock -> victim`` truncated the victim and wrote a pid into it (a hard link
    too), ``.uploads/<digest> -> folder`` had an upload written into that folder, ``.fallback -> folder`` had a run's
    deletion remove that folder's entry of the run's name, ``<run>/.lock -> path`` created the file at ``path``. Each
    is now refused or replaced, never followed."""
    from aworld_gui.core.inputs import store_upload
    from engines.runs.lifecycle import Slot, delete_run
    from engines.runs.no_links import LinkRefused

    run, runs, outside = planted(tmp_path)
    victim = outside / "victim.txt"
    victim.write_text("keep me")
    (runs / ".slot.lock").symlink_to(victim)
    slot = Slot(runs)
    assert slot.try_acquire()
    slot.release()
    assert victim.read_text() == "keep me" and not (runs / ".slot.lock").is_symlink()
    (runs / ".slot.lock").unlink()
    os.link(victim, runs / ".slot.lock")  # a hard link to a file elsewhere
    assert slot.try_acquire()
    slot.release()
    assert victim.read_text() == "keep me" and os.stat(victim).st_nlink == 1

    upload = tmp_path / "authorized_keys"
    upload.write_text("ssh-ed25519 AAAA attacker")
    import hashlib

    digest = hashlib.sha1(upload.read_bytes()).hexdigest()[:12]
    (runs / ".uploads").mkdir()
    (runs / ".uploads" / digest).symlink_to(outside, target_is_directory=True)
    with pytest.raises(LinkRefused):
        store_upload(str(upload), runs)
    assert not (outside / "authorized_keys").exists()
    (runs / ".uploads" / digest).unlink()
    stored = store_upload(str(upload), runs)
    assert Path(stored).read_text() == "ssh-ed25519 AAAA attacker" and Path(stored).parent.name == digest

    (outside / run.run_id).mkdir()
    (outside / run.run_id / "theirs.txt").write_text("keep")
    (runs / ".fallback").symlink_to(outside, target_is_directory=True)
    run.write_status(state="finished", pid=None)
    delete_run(run.path)
    assert (outside / run.run_id / "theirs.txt").read_text() == "keep" and not run.path.exists()

    other = RunDir.create(runs, "trl")
    (other.path / ".lock").symlink_to(outside / "created-by-the-studio")
    with pytest.raises(OSError):
        other.write_status(state="queued")
    assert not (outside / "created-by-the-studio").exists()
