"""Entry points: how another package adds a model (here) or a backend (``ttfg.engines``).

A plugin distribution declares ``[project.entry-points."ttfg.models"]`` or
``[project.entry-points."ttfg.backends"]``; each entry is ``name = "module:attr"``.
Discovery reads only the installed distributions' metadata
(``importlib.metadata.entry_points``) and records the target as text, so listing names
imports no plugin and no framework; :func:`load` imports a target when it is used.

A plugin that cannot be used (its module fails to import, the attribute is missing,
the object does not implement the contract, its name is taken) raises
:class:`PluginError`, whose message names the plugin and says why; callers report it
and skip that entry, so one broken plugin never stops the others. This module sits in
``models`` because it is the lowest layer that needs it and imports nothing of ours.
"""

from __future__ import annotations

import importlib
import traceback
from dataclasses import dataclass

BUILT_IN = "built in"


class PluginError(Exception):
    """A model or backend from a plugin that cannot be used; the message names it and why."""


@dataclass(frozen=True)
class Entry:
    """One registered name: where it points (``module:attr``) and where it came from."""

    name: str
    target: str
    #: ``"built in"``, or the plugin's distribution name and version (``"ttfg-extra 0.3"``).
    origin: str = BUILT_IN
    group: str = ""
    #: Set when the entry is unusable before anything is imported (a name already taken).
    problem: str | None = None

    @property
    def builtin(self) -> bool:
        return self.origin == BUILT_IN

    def describe(self) -> str:
        """``'name' (ttfg.backends entry point of ttfg-extra 0.3)``: how errors name a plugin."""
        if self.builtin:
            return repr(self.name)
        return f"{self.name!r} ({self.group} entry point of {self.origin})"


def discover(group: str) -> list[Entry]:
    """Every installed entry point of ``group``, unloaded, in a stable order (distribution, name)."""
    from importlib.metadata import entry_points

    out = []
    for ep in entry_points(group=group):
        dist = getattr(ep, "dist", None)
        origin = f"{dist.name} {dist.version}" if dist is not None else "an unknown distribution"
        out.append(Entry(ep.name, ep.value, origin, group))
    return sorted(out, key=lambda e: (e.origin, e.name))


def distributions(groups: tuple[str, ...]) -> dict[str, str]:
    """``{distribution: version}`` of every installed plugin in ``groups``: results record them, since a
    plugin backend's numbers depend on its version as much as on the framework's."""
    from importlib.metadata import entry_points

    out = {}
    for group in groups:
        for ep in entry_points(group=group):
            dist = getattr(ep, "dist", None)
            if dist is not None:
                out[dist.name] = dist.version
    return dict(sorted(out.items()))


class Registry:
    """One entry-point group's names: built-ins first, then plugins; scanned once, on first use.

    Built-in names never read the installed distributions' metadata (built-ins win over
    plugins anyway), so a probe of a built-in backend or model pays nothing for discovery.
    A plugin whose name is taken is kept apart (:meth:`shadowed`), with its problem.
    """

    def __init__(self, group: str, builtins: dict[str, str], what: str):
        self.group, self.builtins, self.what = group, dict(builtins), what
        self._scan: tuple[dict[str, Entry], list[Entry]] | None = None

    def _entries(self) -> tuple[dict[str, Entry], list[Entry]]:
        if self._scan is None:
            entries = {name: Entry(name, target) for name, target in self.builtins.items()}
            shadowed = []
            for entry in discover(self.group):
                if entry.name in entries:
                    taken = entries[entry.name]
                    shadowed.append(Entry(entry.name, entry.target, entry.origin, self.group,
                                          f"name already used by {taken.origin}; this entry is ignored"))
                else:
                    entries[entry.name] = entry
            self._scan = entries, shadowed
        return self._scan

    def refresh(self) -> None:
        """Read the installed entry points again (after ``sys.path`` changed, in tests)."""
        self._scan = None

    def names(self) -> list[str]:
        """Every registered name: built in first, then plugins (broken ones included)."""
        return list(self._entries()[0])

    def entry(self, name: str) -> Entry:
        """Where ``name`` comes from; ``KeyError`` naming the known ones for an unknown name."""
        if name in self.builtins:
            return Entry(name, self.builtins[name])
        try:
            return self._entries()[0][name]
        except KeyError:
            raise KeyError(f"unknown {self.what} {name!r}; known {self.what}s: {', '.join(self.names())}") from None

    def shadowed(self) -> list[Entry]:
        """Plugin entries ignored because their name was taken, each with its ``problem``."""
        return list(self._entries()[1])


def load(entry: Entry):
    """Import the entry's target; :class:`PluginError` naming the plugin when that fails."""
    if entry.problem:
        raise PluginError(f"{entry.describe()}: {entry.problem}")
    module_name, colon, attr = entry.target.partition(":")
    if not colon or not module_name or not attr:
        raise PluginError(f"{entry.describe()}: target {entry.target!r} is not 'module:attribute'")
    try:
        obj = importlib.import_module(module_name)
    except Exception as exc:  # a plugin's import may fail in any way; report it, never crash
        raise PluginError(f"{entry.describe()}: cannot import {module_name}: {_one_line(exc)}") from None
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise PluginError(f"{entry.describe()}: {module_name} has no attribute {attr!r}") from None
    return obj


def _one_line(exc: BaseException) -> str:
    return traceback.format_exception_only(type(exc), exc)[-1].strip()


__all__ = ["BUILT_IN", "Entry", "PluginError", "Registry", "discover", "distributions", "load"]
