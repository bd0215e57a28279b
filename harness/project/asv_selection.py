"""The config's selection for a plain ``asv run``: what the suites file ``ttfg init`` writes calls first.

Why: asv imports the suites file in its own processes, which read the selection from
``TTFG_ASV_*`` only; ``ttfg asv record`` sets those from the config, but a plain
``asv run`` did not, and measured ttfg's own resnet15 over every backend while the suite
said the selection came from ``ttfg.toml``. So the suite calls :func:`select` before it
imports the benchmarks: the config's models, backends and variants become the variables
(a variable already set wins), and a repository whose config names no models or backends
is refused loudly instead of measuring something else.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import UsageError
from . import config as project_config

#: ``(config key, variable, separator)``.
VARIABLES = (("models", "TTFG_ASV_MODELS", ","), ("backends", "TTFG_ASV_BACKENDS", ","),
             ("variants", "TTFG_ASV_VARIANTS", ";"))


class NoSelection(UsageError):
    """The repository's config names no models or backends for asv to measure."""


def select(root: Path, environ=os.environ) -> dict[str, str]:
    """Set ``TTFG_ASV_*`` from the config found at ``root`` (the asv.conf.json's folder); returns what it set.

    Raises
    ------
    NoSelection
        When no config is found, or it sets neither models nor backends, and the variables are unset.
    """
    unset = [var for _, var, _ in VARIABLES[:2] if not environ.get(var, "").strip()]
    cfg = project_config.load(root)
    if unset and (cfg.path is None or not ({"models", "backends"} & set(cfg.values))):
        where = cfg.path or f"{root} (no ttfg.toml or [tool.ttfg])"
        raise NoSelection(f"ttfg's asv suite: {where} names no models or backends to measure; run `ttfg init`, set "
                          f"models and backends in the config, or set {' and '.join(unset)}")
    done = {}
    for key, var, sep in VARIABLES:
        if key in cfg and not environ.get(var, "").strip():
            environ[var] = done[var] = sep.join(cfg.get(key))
    return done


__all__ = ["NoSelection", "VARIABLES", "select"]
