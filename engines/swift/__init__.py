"""Engine ``swift``: GRPO and SFT with ms-swift, which lives in a virtualenv of its own (``python -m engines setup
swift``) and is only ever run as a process.

Importing this package imports neither ms-swift nor torch (the registry and the studio stay light).
"""

from .processor import SwiftProcessor

__all__ = ["SwiftProcessor"]
