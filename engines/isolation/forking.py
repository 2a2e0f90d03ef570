"""``os.fork()`` for a process that imported much (torch, Transformers, datasets): its objects frozen in the child.

A forked child shares its parent's memory until it writes to it, and CPython's garbage collector writes to every
object it examines (the count it keeps in the object's header). The child's first full collection — one that an
allocating call triggers, and the one the interpreter's exit runs — therefore copies every page that holds an
object the parent had: for the check worker's preload (about 540,000 objects) that is 0.34 CPU-s and 37,000 page
faults, in every check the studio runs, and in every run the fork server starts (``benchmarks/fork_gc.py``).

:func:`fork` moves the parent's objects into the collector's permanent generation just before the fork
(``gc.freeze``, the Python documentation's advice for a fork without exec): the child's collections skip them and
only what the child itself allocates is examined. The parent takes them back at once (``gc.unfreeze``, a list
splice): its own garbage is collected as before. What the child inherited stays frozen for its life; an inherited
object the child drops is still freed by its reference count, only a reference cycle among them is not.
"""

from __future__ import annotations

import gc
import os

#: False: a plain os.fork() (benchmarks/fork_gc.py compares the two)
FREEZE = True


def fork() -> int:
    """``os.fork()``; in the child, every object the parent had is out of the garbage collector's reach."""
    if not FREEZE:
        return os.fork()
    gc.freeze()
    try:
        pid = os.fork()
    except BaseException:
        gc.unfreeze()
        raise
    if pid != 0:
        gc.unfreeze()
    return pid
