"""The check worker: the studio's side, the pre-imported zygote, and the tasks it runs."""
