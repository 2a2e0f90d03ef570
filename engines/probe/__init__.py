"""The probe (issue 44): before a run, sample the base model on training prompts through the engine's rollout, score
with the run's reward, and say what the run would meet — prompts never or always solved, groups without reward spread,
truncated completions, constant reward terms, unused tools, the time it would take — with the setting to change;
and filter the training set to the prompts the model solves sometimes. ``AgentTrainer.probe`` and
``aworld-train probe`` call :func:`probe_processor`."""

from .filtering import read_provenance, write_filtered
from .result import ProbeResult
from .run import probe_processor

__all__ = ["ProbeResult", "probe_processor", "read_provenance", "write_filtered"]
