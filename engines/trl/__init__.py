"""Engine ``trl``: GRPO and SFT with Hugging Face TRL on one machine (CPU or CUDA GPU)."""

from .processor import TrlProcessor

__all__ = ["TrlProcessor"]
