"""Engine ``verl``: the studio's agent, data, reward and config as a verl job (local GPUs or a Ray cluster).

Importing this package imports neither verl, torch nor ray (the registry and the studio stay light).
"""

from .processor import VerlProcessor

__all__ = ["VerlProcessor"]
