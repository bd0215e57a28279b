"""The key a stored fact is kept under: everything that makes it true, and nothing a label could fake.

Why one type: ttfg keeps facts between runs -- a case's noise on this machine (``ttfg doctor
--calibrate``), a case's count margin (``--calibrate-counts``), a commit's instruction count
(a bisect's reuse, and the stored baseline that builds on it). Each was keyed its own way, and
the gaps were findings: a calibration of another project's case was applied to this one; count
margins were keyed by case id alone, so a dependency-bump gate applied a margin calibrated in
another environment to both sides, and a cache copied from another machine applied that
machine's margins; a resumed bisect reused counts taken before an editable install was edited in
place. A fact is now stored under a :class:`FactKey`, and a fact under another key is not applied
("not calibrated here", with :meth:`FactKey.differences` saying what differs).

What a key holds (each part compared exactly; :attr:`FactKey.digest` is over all of them):

- ``case``: the case's full description (``Case.to_json()``: model, backend, variant, environment label);
- ``environment``: the environment's digest (``Environment.digest``: its interpreter, its exact
  packages, and the bytes of its editable and local installs), and ``local``, the digest of each
  of those installs' files, kept apart so that a difference can name the install that changed;
- ``python`` and ``python_version``: the interpreter that runs the probes;
- ``ttfg``: the measuring ttfg's version and the digest of its source (the probe is code too);
- ``probe``: the probe's settings (threads, allocator, the inherited variables' digest, import path);
- ``valgrind``: callgrind's command, variables, CPU pinning and version, for counted facts (None for
  facts about wall time, which no valgrind setting changes);
- ``machine``: the CPU model, the CPU count and the CPU flags' digest (and the host name for facts
  about wall time, which the neighbours' load changes; counts do not depend on it).

A key is computed by ``measure/fact_keys.py`` from what a side runs in; this module only holds,
reads, compares and digests it, so that every file format below ``measure/`` can store one.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Mapping

#: Each part of a key, in order, and how a difference in it is said.
PARTS = {
    "case": "the case",
    "environment": "the environment (its packages, or the files of an editable or local install)",
    "python": "the interpreter",
    "python_version": "the interpreter's version",
    "ttfg": "the measuring ttfg (version or source)",
    "probe": "the probe's settings",
    "valgrind": "valgrind's settings",
    "machine": "the machine",
}


class FactKeyError(ValueError):
    """A stored key that is not one (a field missing or of the wrong type); the message names the field."""


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


@dataclass(frozen=True, eq=False)
class FactKey:
    """What makes a stored fact true (see the module's docstring); equal keys have equal digests."""

    case: Mapping[str, Any]
    environment: str
    python: str
    python_version: str | None
    ttfg: Mapping[str, Any]
    probe: Mapping[str, Any]
    machine: Mapping[str, Any]
    valgrind: Mapping[str, Any] | None = None
    #: ``{distribution: digest of its files}`` of the environment's editable and local installs (already inside
    #: ``environment``; kept to name the one that changed).
    local: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"case": dict(self.case), "environment": self.environment, "local": dict(sorted(self.local.items())),
                "python": self.python, "python_version": self.python_version, "ttfg": dict(self.ttfg),
                "probe": dict(self.probe), "valgrind": None if self.valgrind is None else dict(self.valgrind),
                "machine": dict(self.machine)}

    @property
    def digest(self) -> str:
        """A digest of every part: the name a fact is filed under."""
        return hashlib.sha256(_canonical(self.to_json()).encode()).hexdigest()[:16]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FactKey) and self.digest == other.digest

    def __hash__(self) -> int:
        return hash(self.digest)

    def same_case(self, other: "FactKey") -> bool:
        return _canonical(self.case) == _canonical(other.case)

    def differences(self, other: "FactKey") -> list[str]:
        """What differs between two keys, in words, most telling first: the editable or local install whose files
        changed (by name), the parts of the probe, valgrind or machine that differ (by field)."""
        mine, theirs = self.to_json(), other.to_json()
        out = []
        for part, words in PARTS.items():
            a, b = mine[part], theirs[part]
            if _canonical(a) == _canonical(b):
                continue
            if part == "environment":
                changed = [name for name in sorted(set(self.local) | set(other.local))
                           if self.local.get(name) != other.local.get(name)]
                if changed:
                    words = (f"the files of the editable or local install{'s' if len(changed) > 1 else ''} "
                             f"{', '.join(changed)}")
            elif isinstance(a, dict) and isinstance(b, dict) and part != "case":
                fields = [k for k in sorted(set(a) | set(b)) if _canonical(a.get(k)) != _canonical(b.get(k))]
                words = f"{words} ({', '.join(fields)})"
            out.append(words)
        return out

    @classmethod
    def from_json(cls, data: Any, where: str = "key") -> "FactKey":
        """A key as :meth:`to_json` wrote it, every part checked.

        Raises
        ------
        FactKeyError
            Naming the part (``key.machine.cpu_count: expected a whole number > 0, got 'x'``).
        """

        def fail(name: str, expected: str, value: Any) -> FactKeyError:
            shown = repr(value) if not isinstance(value, (dict, list)) else type(value).__name__
            return FactKeyError(f"{where}.{name}: expected {expected}, got {shown[:80]}")

        if not isinstance(data, dict):
            raise fail("", "an object", data)
        missing = [k for k in PARTS if k not in data]
        if missing:
            raise FactKeyError(f"{where}: {', '.join(missing)} missing")

        def obj(name: str, optional: bool = False) -> dict | None:
            value = data.get(name)
            if value is None and optional:
                return None
            if not isinstance(value, dict):
                raise fail(name, "an object", value)
            return value

        case = obj("case")
        for name in ("model", "backend"):
            if not isinstance(case.get(name), str):
                raise fail(f"case.{name}", "text", case.get(name))
        for name in ("environment", "python"):
            if not isinstance(data[name], str) or not data[name]:
                raise fail(name, "text", data[name])
        if data["python_version"] is not None and not isinstance(data["python_version"], str):
            raise fail("python_version", "text or null", data["python_version"])
        local = data.get("local") or {}
        if not isinstance(local, dict) or not all(isinstance(v, str) for v in local.values()):
            raise fail("local", "an object of digests", local)
        ttfg = obj("ttfg")
        if not isinstance(ttfg.get("source"), str):
            raise fail("ttfg.source", "text", ttfg.get("source"))
        machine = obj("machine")
        if not isinstance(machine.get("cpu"), str):
            raise fail("machine.cpu", "text", machine.get("cpu"))
        count = machine.get("cpu_count")
        if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
            raise fail("machine.cpu_count", "a whole number > 0", count)
        return cls(case, data["environment"], data["python"], data["python_version"], ttfg, obj("probe"), machine,
                   obj("valgrind", optional=True), local)


def nearest(wanted: FactKey, stored: list[FactKey]) -> FactKey | None:
    """The stored key of ``wanted``'s case that differs from it in the fewest parts (None: none of its case)."""
    mine = [k for k in stored if wanted.same_case(k)]
    return min(mine, key=lambda k: len(k.differences(wanted)), default=None)


def not_here(wanted: FactKey, stored: list[FactKey], what: str, how: str) -> str:
    """Why nothing stored applies to ``wanted``, in one phrase: ``not calibrated here: the stored calibration of this
    case differs in the environment (...)``, or ``this case is not calibrated (ttfg doctor --calibrate-counts)``
    when nothing at all is stored."""
    near = nearest(wanted, stored)
    if near is None:
        return f"this case is not calibrated ({how})" if not stored else \
            f"not calibrated here: no {what} of this case ({how})"
    return f"not calibrated here: the stored {what} of this case differs in {', '.join(near.differences(wanted))}"


__all__ = ["FactKey", "FactKeyError", "PARTS", "nearest", "not_here"]
