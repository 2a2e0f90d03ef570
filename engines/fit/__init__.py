"""Settings against the model and the data: the model folder, where a model comes from, what the data supports, the memory estimate."""
