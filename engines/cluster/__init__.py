"""Runs on a Ray cluster: any engine's run submitted as a Ray job and mirrored back into its run directory
(docs/CLUSTER.md).

* :mod:`.ray_jobs` — Ray's ``JobSubmissionClient`` for one job: submit, status, live log lines, stop.
* :mod:`.mirror` — what the job writes into its copy of the run directory, carried back through the job's log.
* :mod:`.job_main` — the job's entry point on the cluster: the run, trained there, with its mirror.
* :mod:`.ray_run` — this machine's side: submit the run directory, apply the mirror, forward Stop.
"""
