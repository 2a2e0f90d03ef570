"""Sweeps: many runs of one setup, searched with Optuna (docs/SWEEPS.md).

``spec`` (sweep.yaml in Optuna's terms), ``check`` (every param's range through the engine's own config
check), ``sweep_dir`` (``<runs>/sweeps/<id>/``), ``driver`` (the detached process that asks, runs, prunes
and tells), ``summary`` (summary.json, importances), ``launch`` (prepare, start, stop, resume), ``api``
(:class:`AgentSweep`), ``cli`` (``aworld-train sweep`` ...). Optuna is imported only when a sweep is used.
"""

from .api import AgentSweep

__all__ = ["AgentSweep"]
