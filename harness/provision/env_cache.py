"""The environment cache as a user sees it: what is cached, how big, and removing entries (``ttfg env``).

Why apart from ``environments.py``: building an environment and looking after the cache
of built ones are two jobs; ``ttfg env list`` and ``prune`` need the second only. A broken
entry (a record that does not read, a package missing) is listed with its problem so it
can be pruned; an entry another process is measuring in is never removed under it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from . import cache
from .environments import entry_problem
from .target import RECORDED
from .uv import run_uv
from ..errors import UsageError


@dataclass
class CachedEnv:
    """One cache entry, for ``ttfg env list`` and ``prune``."""

    key: str
    path: Path
    name: str
    requested: list[str]
    interpreter: str
    versions: dict[str, str | None]
    size_bytes: int
    age_s: float
    #: Every name it was asked for under (one environment, several labels).
    names: list[str] = field(default_factory=list)
    #: Why the entry cannot be used (listed so that ``prune`` can remove it); None when it can.
    problem: str | None = None

    def to_json(self) -> dict:
        return {"key": self.key, "path": str(self.path), "name": self.name, "names": self.names,
                "requested": self.requested, "interpreter": self.interpreter, "versions": self.versions,
                "size_bytes": self.size_bytes, "age_s": round(self.age_s, 1), "problem": self.problem}


def cached(sizes: bool = True) -> list[CachedEnv]:
    """Every finished environment in the cache, newest first; a broken one is listed with its problem."""
    out = []
    for path in cache.entries("envs"):
        lock_file = path / "lock.txt"
        lock = lock_file.read_text(errors="replace").splitlines() if lock_file.is_file() else []
        info, problem = entry_problem(path, lock)
        packages = info.get("packages") if isinstance(info.get("packages"), dict) else {}
        try:
            age = time.time() - (path / cache.MARKER).stat().st_mtime
        except OSError:
            continue  # removed meanwhile
        names = [n for n in (info.get("names") or [info.get("name")]) if isinstance(n, str)]
        out.append(CachedEnv(path.name, path, names[0] if names else "(broken)", list(info.get("requested") or []),
                             str(info.get("interpreter", "?")),
                             {p: packages.get(p) for p in RECORDED if packages.get(p)},
                             cache.size_bytes(path) if sizes else 0, age, names, problem))
    return sorted(out, key=lambda e: e.age_s)


def prune(keys: list[str] | None = None, older_than_s: float | None = None,
          on_note=None) -> list[CachedEnv]:
    """Remove cached environments and return them.

    Every filter given must hold (NAME and ``--older-than``: that name, and only if older);
    none given removes all. An environment another process is using is kept, and said.

    Raises
    ------
    UsageError
        For a name or key that matches no cached environment (a typo would otherwise say
        "nothing matched" and exit 0).
    """
    note = on_note or (lambda text: None)
    envs = cached(sizes=False)
    if keys:
        known = {k for e in envs for k in (e.key, *e.names)}
        unknown = [k for k in keys if k not in known]
        if unknown:
            raise UsageError(f"no cached environment is named {', '.join(map(repr, unknown))}; "
                             "ttfg env list shows the names and keys")
    removed = []
    for env in envs:
        if keys and not (env.key in keys or set(env.names) & set(keys)):
            continue
        if older_than_s is not None and env.age_s <= older_than_s:
            continue
        if cache.in_use(env.path):
            note(f"kept {env.name} ({env.key}): a running ttfg is measuring in it")
            continue
        cache.remove(env.path)
        removed.append(env)
    return removed


def uv_cache_size() -> int:
    """Bytes of uv's shared package cache (what the environments' files are hard-linked from)."""
    out = run_uv(["cache", "dir"], "uv cache dir", 60)
    folder = Path(out.stdout.strip()) if out.returncode == 0 else None
    return cache.size_bytes(folder) if folder and folder.is_dir() else 0


def prune_sources(older_than_s: float | None = None, on_note=None) -> list[tuple[str, float]]:
    """Remove installed revisions (the gate's source cache, ``sources.install``): all, or those older than a
    duration; one another process holds is kept and said. Returns ``[(key, age_s)]`` of those removed."""
    note = on_note or (lambda text: None)
    removed = []
    for path in cache.entries("sources"):
        try:
            age = time.time() - (path / cache.MARKER).stat().st_mtime
        except OSError:
            continue
        if older_than_s is not None and age <= older_than_s:
            continue
        if cache.in_use(path):
            note(f"kept installed revision {path.name}: a running ttfg is measuring it")
            continue
        cache.remove(path)
        removed.append((path.name, age))
    return removed


__all__ = ["CachedEnv", "cached", "prune", "prune_sources", "uv_cache_size"]
