"""Environments as the commands use them: ``run --env`` / ``study --env`` and ``ttfg env list|build|prune``.

Why a use case: building an environment (uv, the cache, the notes on the way) is
orchestration; the CLI only says which ones and prints what comes back. The gate's
per-side environments are built by ``app/gate.py``; a later step unifies the two routes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable


def build_all(texts: Iterable[str] | None, on_note: Callable[[str], None]) -> dict:
    """``--env`` (repeatable): each environment built (or found cached) before any sample; ``{name: Environment}``.

    ``on_note`` gets uv's progress and, per environment, one line naming it, its frameworks and
    whether it was cached or built (and how long that took).
    """
    from ..errors import UsageError
    from ..provision import environments

    envs = {}
    for text in texts or ():
        request = environments.parse(text, "--env")
        if request.name in envs:
            raise UsageError(f"--env {text!r}: the name {request.name!r} is given twice; name them: NAME=REQS")
        env = environments.build(request, on_note=on_note)
        on_note(f"environment {env.name}: " + ", ".join(f"{k} {v}" for k, v in env.recorded().items() if v)
                + ("" if env.current else " (cached)" if env.cached else f" (built in {env.seconds:.1f} s)"))
        envs[env.name] = env
    # Two names for the same interpreter and packages would measure one thing twice (study env reported
    # effects with intervals between them): refused, naming them.
    environments.check_distinct(envs)
    return envs


def project_for(built: bool, cases: Iterable, project_folder: Path | None, on_note: Callable[[str], None],
                snapshot_limit: int | None = None):
    """The user's project (the config's install-path) installed for built environments
    (``provision/project_source.py``), when it declares every plugin backend and model the ``cases`` use.

    None, and the plugins are linked in as this interpreter has them (``sources.plugins_overlay``): when no
    environment is ``built``, no config names a project, no case uses a plugin (nothing of the project runs),
    or a plugin comes from another distribution than the project (said in a note). ``snapshot_limit``: the
    most bytes a snapshot of a working tree with uncommitted changes takes (None: ``project_source``'s default).
    """
    from ..measure.cases import plugin_entry_points
    from ..project import pyproject

    if project_folder is None or not built:
        return None
    wanted = plugin_entry_points(list(cases))
    if not wanted:
        return None
    declared = pyproject.read(project_folder).plugins
    elsewhere = sorted(name for group, names in wanted.items() for name in names if name not in declared.get(group, {}))
    if elsewhere:
        on_note(f"{', '.join(elsewhere)}: not declared by the project at {project_folder}; its plugins are linked "
                "into the built environments as this interpreter has them")
        return None
    from ..provision.project_source import install_project

    if snapshot_limit is None:
        return install_project(project_folder, on_note)
    return install_project(project_folder, on_note, snapshot_limit)


@dataclass
class Listing:
    """``ttfg env list``: the cached environments, each one's age in words, and uv's package cache size."""

    envs: list
    ages: list[str]
    uv_cache_bytes: int


def listing() -> Listing:
    from ..decide.noise import describe_age
    from ..provision import env_cache

    envs = env_cache.cached(sizes=True)
    return Listing(envs, [describe_age(e.age_s) for e in envs], env_cache.uv_cache_size())


def build_one(text: str, on_note: Callable[[str], None]):
    """``ttfg env build REQS``: the environment built (or found); None for ``current`` (nothing to build)."""
    from ..provision import environments

    request = environments.parse(text, "ttfg env build")
    if request.current:
        return None
    return environments.build(request, on_note=on_note)


def prune(names: list[str] | None, older_than_s: float | None, everything: bool,
          on_note: Callable[[str], None] | None = None) -> list[tuple[object, str]]:
    """``ttfg env prune``: the environments removed, each with its age in words; an environment a running
    ttfg uses is kept and told to ``on_note``."""
    from ..decide.noise import describe_age
    from ..provision import env_cache

    removed = env_cache.prune(names or None, older_than_s, on_note) if not everything else env_cache.prune(on_note=on_note)
    return [(e, describe_age(e.age_s)) for e in removed]


def prune_sources(older_than_s: float | None, on_note: Callable[[str], None] | None = None) -> list[tuple[str, str]]:
    """``ttfg env prune --sources``: installed revisions removed, each with its age in words."""
    from ..decide.noise import describe_age
    from ..provision import env_cache

    return [(key, describe_age(age)) for key, age in env_cache.prune_sources(older_than_s, on_note)]


def prune_counts(older_than_s: float | None) -> tuple[Path, int, int]:
    """``ttfg env prune --counts``: the count store's files removed (all, or those older than ``older_than_s``),
    as ``(its folder, files removed, bytes freed)``.

    Raises
    ------
    UsageError
        A ``TTFG_COUNT_STORE_MAX_MB`` that is no positive number.
    """
    from ..provision import cache
    from ..results.count_store import CountStore

    store = CountStore.default(cache.root())
    before = store.size()
    gone = store.prune(older_than_s)
    return store.root, len(gone), before - store.size()


__all__ = ["Listing", "build_all", "build_one", "listing", "prune", "prune_counts", "prune_sources"]
