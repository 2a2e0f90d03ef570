#!/usr/bin/env python
"""``python app.py``: the same as the ``aworld-studio`` command (see aworld_gui/serve.py)."""
import sys

from aworld_gui.serve import main

if __name__ == "__main__":
    sys.exit(main())
