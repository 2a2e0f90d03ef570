"""Run directories and run processes: the run-directory contract, preparing a run, spawning and stopping runs, TensorBoard and experiment trackers."""
