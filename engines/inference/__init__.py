"""Using a trained model: checkpoints, the agent's rollout loop, evaluation, the chat server, export."""
