"""engines/isolation/forking.py: a fork's child leaves what its parent had to the reference counts, not to the
garbage collector (whose full collection in the child copied every page of a preloaded parent: benchmarks/fork_gc.py),
and the parent collects its own garbage as before. In an interpreter of its own: the collections here must not walk
a test worker's heap (millions of objects once the suite has imported everything)."""

from __future__ import annotations

import json
import subprocess
import sys

SCRIPT = r"""
import gc, json, os
from engines.isolation import forking


class Cycle:
    def __init__(self):
        self.me = self


gc.collect()
inherited = [Cycle() for _ in range(1000)]
r, w = os.pipe()
pid = forking.fork()
if pid == 0:  # the child: the parent's objects are frozen, its own are collected
    os.close(r)
    frozen = gc.get_freeze_count()
    del inherited[:]  # the parent's cycles: out of the collector's reach here
    for _ in range(500):
        Cycle()
    found = gc.collect()
    os.write(w, json.dumps({"frozen": frozen, "found": found}).encode())
    os._exit(0)
os.close(w)
with os.fdopen(r) as f:
    child = json.loads(f.read())
os.waitpid(pid, 0)
parent_frozen = gc.get_freeze_count()
del inherited[:]
print(json.dumps({"child": child, "parent_frozen": parent_frozen, "parent_found": gc.collect()}))
"""


def test_the_child_collects_only_its_own_objects_and_the_parent_everything():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60, check=True)
    seen = json.loads(out.stdout)
    child = seen["child"]
    assert child["frozen"] >= 1000 + 1, seen  # everything the parent had, the list and its cycles included
    assert 500 <= child["found"] < 1000, seen  # the child's 500 cycles, none of the parent's 1000
    assert seen["parent_frozen"] == 0, seen  # the parent took its objects back
    assert seen["parent_found"] >= 1000, seen  # and collects them
