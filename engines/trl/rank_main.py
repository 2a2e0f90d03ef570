"""One rank of a launched ``trl`` run: ``accelerate launch ... -m engines.trl.rank_main <run_dir>``.

Rebuilds the run from its ``run.yaml`` (the same checks the run process made) and trains with
:meth:`TrlProcessor.train_here`. SIGTERM asks for a stop (the ranks agree on it at the next step
boundary). A rank that fails records the cause as a ``rank_failed`` event before it exits, so the
run process can report it.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import traceback

from pathlib import Path

from ..isolation import server_env
from ..isolation.privileges import set_parent_death_signal
from ..core.prepare import trainer_from_run_dir
from ..runs.rundir import RunDir
from ..core.standard import failure_cause
from .launch import LAUNCHER, RANK_FAILED


def die_with_the_launcher() -> None:
    """End with the launcher that started this rank: SIGKILLed by the kernel when it ends, and gone at once if it
    ended already (this rank then belongs to init or a subreaper). A rank is started in a session of its own (torch's
    elastic agent), so a kill of the run's process group does not reach it: without this, the ranks of a killed run
    trained on in its run directory — beside the resumed run."""
    set_parent_death_signal(signal.SIGKILL)
    try:
        parent = Path(f"/proc/{os.getppid()}/cmdline").read_bytes().split(b"\0")
    except OSError:
        parent = []
    if LAUNCHER.encode() not in parent:
        print(f"rank {os.environ.get('RANK', '?')}: its launcher is gone; ending", file=sys.stderr)
        os._exit(1)


def main(argv: list[str] | None = None) -> int:
    die_with_the_launcher()
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: accelerate launch ... -m engines.trl.rank_main <run_dir>", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=logging.INFO, format=f"%(asctime)s rank{os.environ.get('RANK', '0')} %(levelname)s %(name)s: %(message)s"
    )
    server_env.receive()  # its MCP servers' variables, from the run process, before any user code
    run = RunDir(argv[0])
    signal.signal(signal.SIGTERM, lambda signum, frame: run.request_stop("SIGTERM"))
    try:
        # the run process checked the spec in an isolated child before it launched the ranks; a rank's
        # own forked check would build TRL's config there, which joins the ranks' process group
        # (init_process_group) from the child: the other ranks then connect to an address that is gone
        trainer = trainer_from_run_dir(run.path, isolated_checks=False)
        trainer.train_processor.train_here()
    except BaseException as e:  # noqa: BLE001 - recorded for the run process, then re-raised
        run.event(
            RANK_FAILED,
            rank=int(os.environ.get("RANK", "0")),
            cause=failure_cause(e),
            message=f"{type(e).__name__}: {e}",
            traceback="".join(traceback.format_exception(type(e), e, e.__traceback__))[-4000:],
        )
        raise
    return 0


if __name__ == "__main__":
    sys.exit(main())
