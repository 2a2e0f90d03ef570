"""User code kept apart: the supervised sandbox fork, the environment user code sees, process control."""
