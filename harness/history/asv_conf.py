"""asv.conf.json, read as asv reads it (JSON5: comments and trailing commas allowed).

Why a module of its own: recording history, ordering its commits (``git_order.py``) and
the report all read the config; held in ``asv_record.py`` it made the history modules
import each other in a circle.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import UsageError


def load_config(path: Path) -> dict:
    """The asv config as asv reads it (JSON5: comments and trailing commas allowed)."""
    from asv import util

    try:
        return util.load_json(str(path), js_comments=True)
    except (OSError, util.UserError) as exc:
        raise UsageError(f"cannot read asv config {path}: {exc}") from None


__all__ = ["load_config"]
