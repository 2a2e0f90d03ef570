"""Settings of the run itself, taken by every engine beside the engine's own config: the live diagnoses'
thresholds and the best checkpoint / early stopping (docs/DIAGNOSTICS.md). Split off the config before the
engine checks the rest."""

from __future__ import annotations

import os
from typing import Any

from ..cluster.job_main import IN_RAY_JOB
from ..diagnostics.thresholds import thresholds
from ..results.check_result import CheckError
from ..inputs.config import ConfigField, load_config_input, validate_config

#: settings of the run itself, taken by every engine (beside the engine's own config): the live diagnoses
#: and the best checkpoint / early stopping (docs/DIAGNOSTICS.md)
RUN_FIELDS: list[ConfigField] = [
    ConfigField(
        "diagnostics",
        dict,
        None,
        "thresholds of the live diagnoses, e.g. {zero_spread_fraction: 0.9}, "
        "or {enabled: false} (docs/DIAGNOSTICS.md lists them)",
        nullable=True,
    ),
    ConfigField(
        "early_stopping_patience",
        int,
        None,
        "stop after this many evaluations without a better metric_for_best (cause early_stopped); empty = never",
        min=1,
        max=1_000_000,
        nullable=True,
    ),
    ConfigField(
        "metric_for_best",
        str,
        None,
        "the metric that picks the best checkpoint (default: the held-out "
        "reward, eval/reward); TRL's metric_for_best_model is the same",
        nullable=True,
    ),
]
#: where the run trains: this machine, or a Ray cluster the run is submitted to as a job (docs/CLUSTER.md)
CLUSTER_FIELDS: list[ConfigField] = [
    ConfigField(
        "ray_address",
        str,
        None,
        "train this run as a job on the Ray cluster at this address "
        "(http://<head>:8265); RAY_ADDRESS works too; empty = on this machine",
        nullable=True,
    ),
    ConfigField(
        "ray_resources",
        dict,
        None,
        "what the job asks of the cluster: {num_cpus: 1, num_gpus: 1, memory: <bytes>} (default: 1 CPU)",
        nullable=True,
    ),
    ConfigField(
        "ray_storage",
        str,
        None,
        "the folder on the cluster's node where the job keeps its run "
        "directory and checkpoints (default: ~/aworld-runs there)",
        nullable=True,
    ),
]
CLUSTER_KEYS = frozenset(f.name for f in CLUSTER_FIELDS)
RESOURCE_KEYS = ("num_cpus", "num_gpus", "memory")
RUN_FIELDS += CLUSTER_FIELDS
RUN_KEYS = {f.name for f in RUN_FIELDS}


def split_run_settings(config: Any) -> tuple[dict[str, Any], Any]:
    """(the run settings the user gave, checked; the engine's config). Without run settings the config
    goes on unchanged (a path stays a path)."""
    user = load_config_input(config)
    if not RUN_KEYS & set(user):
        return {}, config
    given = {k: v for k, v in user.items() if k in RUN_KEYS}
    checked, _ = validate_config(given, RUN_FIELDS)
    if checked.get("diagnostics") is not None:
        thresholds(checked["diagnostics"])  # its keys and values, named when wrong
    if checked.get("ray_resources") is not None:
        check_resources(checked["ray_resources"])
    return {k: checked[k] for k in given}, {k: v for k, v in user.items() if k not in RUN_KEYS}


#: why an engine may not act on a run setting (the check's refusal says it)
BEST_CHECKPOINT_WHY = "the best checkpoint and early stopping follow the trl engine's evaluations; docs/DIAGNOSTICS.md"
REFUSED_WHY = {
    "ray_resources": "verl asks Ray for its workers itself: trainer.n_gpus_per_node, trainer.nnodes; docs/CLUSTER.md",
    "ray_storage": "verl keeps checkpoints where trainer.default_local_dir says; docs/CLUSTER.md",
}


def check_resources(resources: dict[str, Any]) -> None:
    """``ray_resources``: Ray's entrypoint resources, each a number >= 0."""
    for key, value in resources.items():
        if key not in RESOURCE_KEYS:
            raise CheckError(
                "config",
                f"ray_resources: unknown key {key!r}",
                f"use {', '.join(RESOURCE_KEYS)}",
                keys=["ray_resources"],
            )
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise CheckError(
                "config",
                f"ray_resources.{key} must be a number >= 0, not {value!r}",
                f"e.g. ray_resources: {{{key}: 1}}",
                keys=["ray_resources"],
            )


def cluster_address(settings: dict[str, Any]) -> str | None:
    """The Ray cluster a checked run trains on (its ``ray_address``); None inside the cluster job itself (the
    job trains where it is) and when it is not set."""
    return None if os.environ.get(IN_RAY_JOB) else settings.get("ray_address") or None


def environment_cluster_address() -> str | None:
    """``RAY_ADDRESS`` of the process that checks a run, when a run without ``ray_address`` should go there."""
    return None if os.environ.get(IN_RAY_JOB) else os.environ.get("RAY_ADDRESS") or None
