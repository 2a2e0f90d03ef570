"""``python -m engines ...``: the command line (see :mod:`engines.cli`)."""

import sys

from .cli import main

sys.exit(main())
