"""A model whose module takes 0.4 s to import, as a library whose ``__init__`` imports scipy.stats would.

The sleep stands for that import's cost so the test can say exactly where it must land:
in the import phase of the first gradient, not in build or before any clock.
"""

from __future__ import annotations

import time

time.sleep(0.4)

from .models import build  # noqa: E402  (the same two-layer model)

__all__ = ["build"]
