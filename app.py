#!/usr/bin/env python
"""``python app.py``: the same as the ``aworld-studio`` command (see aworld_gui/web/serve.py)."""

import sys

from aworld_gui.web.serve import main

if __name__ == "__main__":
    sys.exit(main())
