"""ttfg's harness: the gradient-engine contract, backends, measurement, decisions, reports.

Importing ``harness`` imports no AD framework; each backend imports its own lazily.
"""

from __future__ import annotations

from .engines import names as backends
from .engines.contract import gradient

__all__ = ["backends", "gradient"]
