"""Live training diagnoses ("why isn't it learning?"), engine-neutral: they read the run directory the
engine writes and append ``diagnosis`` events to events.jsonl (docs/DIAGNOSTICS.md).

- :mod:`.thresholds` every threshold, overridable under the run config's ``diagnostics:`` key
- :mod:`.rules`      one pure function per code, on the logged metric rows
- :mod:`.advice`     each code's plain-words title, advice and the setting to change
- :mod:`.watcher`    the thread in the training process that applies them and writes the events
- :mod:`.reading`    the active diagnoses of a run, for the studio and the CLI
"""

from .advice import ADVICE, CODES

__all__ = ["ADVICE", "CODES"]
