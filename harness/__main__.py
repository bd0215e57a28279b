"""``python -m ttfg``: the same as the ``ttfg`` console script."""

import sys

from .cli import main

sys.exit(main())
