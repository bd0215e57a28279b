"""Reading a version-2 results document into the typed classes, checking every field on the way.

Errors name the file and the field and say what was expected and what was found, in
words a person reads: ``runs/r.json: cases[2].samples[0].first_grad_s: expected a
positive number of seconds, got the string 'abc'``. Impossible values are refused
here, once, for every reader: times that are zero or negative where a process must
have taken time, negative counts, non-finite numbers, null where an object belongs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .format import (COMMON_FIELDS, FORMAT, FUNCTION_FIELDS, KINDS, REQUIRED_WHEN_OK, SAMPLE_FIELDS, STUDY_KINDS,
                     VERSION, ZERO_ALLOWED,
                     ResultsError, describe, is_number)
from .model import (CaseResult, ColdEvidence, DepthEntry, EffectEntry, Fit, GateSection, Results, Sample,
                    StudySection)

__all__ = ["results_from_json", "sample_problem", "validate"]

_EXPECTED = {
    "text": "text", "bool": "true or false", "int": "a whole number", "count": "a whole number >= 0",
    "number": "a number", "bytes": "a whole number of bytes >= 0", "seconds": "a positive number of seconds",
    "seconds0": "a number of seconds >= 0",
}


class _Reader:
    """Field checks that know which file they read."""

    def __init__(self, path):
        self.path = path

    def fail(self, where: str, problem: str) -> ResultsError:
        return ResultsError(f"{self.path}: {where}: {problem}")

    def expect(self, where: str, expected: str, value: Any) -> ResultsError:
        return self.fail(where, f"expected {expected}, got {describe(value)}")

    def obj(self, value: Any, where: str) -> dict:
        if not isinstance(value, dict):
            raise self.expect(where, "an object", value)
        return value

    def seq(self, value: Any, where: str) -> list:
        if not isinstance(value, list):
            raise self.expect(where, "a list", value)
        return value

    def key(self, data: dict, key: str, where: str) -> Any:
        if key not in data:
            raise self.fail(f"{where}{key}", "missing")
        return data[key]

    def text(self, value: Any, where: str, optional: bool = False) -> str | None:
        if value is None and optional:
            return None
        if not isinstance(value, str):
            raise self.expect(where, "text", value)
        return value

    def value(self, value: Any, where: str, kind: str, optional: bool = True) -> Any:
        """``value`` checked against one of ``format``'s field types; null passes when ``optional``."""
        if value is None:
            if optional:
                return None
            raise self.expect(where, _EXPECTED.get(kind, kind), value)
        if kind == "text":
            return self.text(value, where)
        if kind == "bool":
            if not isinstance(value, bool):
                raise self.expect(where, "true or false", value)
            return value
        if kind in ("int", "count", "bytes"):
            if not is_number(value) or value != int(value):
                raise self.expect(where, _EXPECTED[kind], value)
            if kind != "int" and value < 0:
                raise self.expect(where, _EXPECTED[kind], value)
            return int(value)
        if kind in ("number", "seconds", "seconds0"):
            if not is_number(value):
                raise self.expect(where, _EXPECTED[kind], value)
            if kind == "seconds" and value <= 0 or kind == "seconds0" and value < 0:
                raise self.expect(where, _EXPECTED[kind], value)
            return value
        raise AssertionError(f"unknown field type {kind!r}")

    # ------------------------------------------------------------------ samples

    def counters(self, value: Any, where: str) -> dict | None:
        if value is None:
            return None
        return {self.text(k, f"{where} key"): self.value(v, f"{where}.{k}", "number", optional=False)
                for k, v in self.obj(value, where).items()}

    def phase_counts(self, value: Any, where: str) -> dict[str, int] | None:
        """``{phase: count}`` (instructions per phase)."""
        if value is None:
            return None
        return {self.text(k, f"{where} key"): self.value(v, f"{where}.{k}", "count", optional=False)
                for k, v in self.obj(value, where).items()}

    def functions(self, value: Any, where: str) -> list[dict[str, Any]] | None:
        """A list of ``{fn, file, line, incl, self}`` (a window's top functions)."""
        if value is None:
            return None
        out = []
        for i, raw in enumerate(self.seq(value, where)):
            at = f"{where}[{i}]"
            raw = self.obj(raw, at)
            extra = sorted(set(raw) - set(FUNCTION_FIELDS))
            if extra:
                raise self.fail(f"{at}.{extra[0]}", "not a field of a function entry")
            out.append({k: self.value(self.key(raw, k, f"{at}."), f"{at}.{k}", t, optional=False)
                        for k, t in FUNCTION_FIELDS.items()})
        return out

    def cold_evidence(self, value: Any, where: str) -> ColdEvidence | None:
        if value is None:
            return None
        raw = self.obj(value, where)
        known = {"cache", "files_at_start", "backend_compiles", "persistent_cache_hits", "fxgraph_cache_misses",
                 "fxgraph_cache_hits"}
        extra = sorted(set(raw) - known)
        if extra:
            raise self.fail(f"{where}.{extra[0]}", "not a field of the cold evidence")
        return ColdEvidence(self.text(self.key(raw, "cache", f"{where}."), f"{where}.cache"),
                            self.value(self.key(raw, "files_at_start", f"{where}."), f"{where}.files_at_start",
                                       "count", optional=False),
                            *(self.value(raw.get(k), f"{where}.{k}", "count") for k in
                              ("backend_compiles", "persistent_cache_hits", "fxgraph_cache_misses",
                               "fxgraph_cache_hits")))

    def sample(self, raw: Any, where: str) -> Sample:
        raw = self.obj(raw, where)
        at = lambda name: f"{where}.{name}" if where else name  # noqa: E731
        kind = raw.get("kind")
        if kind not in SAMPLE_FIELDS:
            raise self.fail(at("kind"), f"expected one of {', '.join(KINDS)}, got {describe(kind)}")
        allowed = {**COMMON_FIELDS, **SAMPLE_FIELDS[kind]}
        extra = sorted(set(raw) - set(allowed))
        if extra:
            raise self.fail(at(extra[0]), f"not a field of a {kind} sample")
        values: dict[str, Any] = {}
        for name, ftype in allowed.items():
            if name not in raw:
                if name in COMMON_FIELDS and name not in ("pair", "pair_position"):
                    raise self.fail(at(name), "missing")
                continue
            v = raw[name]
            if ftype == "counters":
                values[name] = self.counters(v, at(name))
            elif ftype == "cold_evidence":
                values[name] = self.cold_evidence(v, at(name))
            elif ftype == "phase_counts":
                values[name] = self.phase_counts(v, at(name))
            elif ftype == "functions":
                values[name] = self.functions(v, at(name))
            else:
                if ftype == "seconds" and name in ZERO_ALLOWED:
                    ftype = "seconds0"
                values[name] = self.value(v, at(name), ftype, optional=name != "kind" and name != "ok")
        if values["ok"]:
            for name in REQUIRED_WHEN_OK[kind]:
                if values.get(name) is None:
                    raise self.fail(at(name), f"missing from a good {kind} sample")
        return Sample(**values)

    def case(self, raw: Any, where: str) -> CaseResult:
        raw = self.obj(raw, where)
        get = lambda k: self.key(raw, k, f"{where}.")  # noqa: E731
        variant = self.obj(get("variant"), f"{where}.variant")
        for k, v in variant.items():
            self.text(v, f"{where}.variant.{k}")
        samples = [self.sample(s, f"{where}.samples[{j}]") for j, s in enumerate(self.seq(get("samples"),
                                                                                          f"{where}.samples"))]
        return CaseResult(self.text(get("id"), f"{where}.id"), self.text(get("model"), f"{where}.model"),
                          self.text(get("backend"), f"{where}.backend"), dict(variant),
                          self.text(raw.get("skipped"), f"{where}.skipped", optional=True), samples)

    # ------------------------------------------------------------------ sections

    def gate(self, raw: Any, where: str = "gate") -> GateSection | None:
        if raw is None:
            return None
        raw = self.obj(raw, where)
        role = self.text(self.key(raw, "role", f"{where}."), f"{where}.role")
        if role not in ("base", "head"):
            raise self.expect(f"{where}.role", "'base' or 'head'", role)
        return GateSection(role, *(self.text(self.key(raw, k, f"{where}."), f"{where}.{k}")
                                   for k in ("rev", "commit", "subject")),
                           dict(self.obj(self.key(raw, "settings", f"{where}."), f"{where}.settings")))

    def fit(self, raw: Any, where: str) -> Fit | None:
        if raw is None:
            return None
        raw = self.obj(raw, where)
        nums = [self.value(raw.get(k), f"{where}.{k}", "number") for k in ("a", "b", "k", "k_ci_low", "k_ci_high")]
        return Fit(*nums, self.value(raw.get("n"), f"{where}.n", "count") or 0,
                   self.text(raw.get("method", ""), f"{where}.method"))

    def depth_entry(self, raw: Any, where: str) -> DepthEntry:
        raw = self.obj(raw, where)
        points = []
        for j, p in enumerate(self.seq(raw.get("points", []), f"{where}.points")):
            if not isinstance(p, list) or len(p) != 2:
                raise self.expect(f"{where}.points[{j}]", "[depth, seconds]", p)
            points.append((self.value(p[0], f"{where}.points[{j}][0]", "number", optional=False),
                           self.value(p[1], f"{where}.points[{j}][1]", "seconds", optional=False)))
        return DepthEntry(self.text(self.key(raw, "backend", f"{where}."), f"{where}.backend"),
                          self.text(self.key(raw, "metric", f"{where}."), f"{where}.metric"),
                          self.text(raw.get("growth", "undetermined"), f"{where}.growth"),
                          self.fit(raw.get("fit"), f"{where}.fit"), points,
                          self.text(raw.get("note", ""), f"{where}.note"))

    def effect_entry(self, raw: Any, where: str) -> EffectEntry:
        raw = self.obj(raw, where)
        names = [self.text(self.key(raw, k, f"{where}."), f"{where}.{k}")
                 for k in ("backend", "metric", "control", "treatment")]
        entry = EffectEntry(*names, note=self.text(raw.get("note", ""), f"{where}.note"))
        eff = raw.get("effect")
        if eff is not None:
            eff = self.obj(eff, f"{where}.effect")
            entry.ratio = self.value(eff.get("ratio"), f"{where}.effect.ratio", "number")
            entry.ci_low, entry.ci_high, entry.p_value = (self.value(eff.get(k), f"{where}.effect.{k}", "number")
                                                          for k in ("ci_low", "ci_high", "p_value"))
            entry.n = self.value(eff.get("n"), f"{where}.effect.n", "count")
        return entry

    def study(self, raw: Any, where: str = "study") -> StudySection | None:
        if raw is None:
            return None
        raw = self.obj(raw, where)
        kind = self.text(self.key(raw, "study", f"{where}."), f"{where}.study")
        if kind not in STUDY_KINDS:
            raise self.expect(f"{where}.study", f"one of {', '.join(STUDY_KINDS)}", kind)
        notes = [self.text(n, f"{where}.notes[{i}]") for i, n in enumerate(self.seq(raw.get("notes", []),
                                                                                    f"{where}.notes"))]
        return StudySection(kind, self.text(raw.get("model", "?"), f"{where}.model"), notes,
                            [self.effect_entry(e, f"{where}.effects[{i}]")
                             for i, e in enumerate(self.seq(raw.get("effects", []), f"{where}.effects"))],
                            [self.depth_entry(d, f"{where}.depth[{i}]")
                             for i, d in enumerate(self.seq(raw.get("depth", []), f"{where}.depth"))])


def results_from_json(data: Any, path: str | os.PathLike = "<results>") -> Results:
    """A version-2 document as :class:`Results`; raises :class:`ResultsError` at the first bad field."""
    r = _Reader(path)
    if not isinstance(data, dict):
        raise r.fail("top level", f"expected a JSON object, got {describe(data)}")
    if data.get("format") != FORMAT:
        raise r.fail("format", f"expected {FORMAT!r}, got {describe(data.get('format'))} (not a ttfg results file)")
    if data.get("version") != VERSION:
        raise r.fail("version", f"unsupported version {data.get('version')!r}; this ttfg reads versions 1 to {VERSION}")
    get = lambda k: r.key(data, k, "")  # noqa: E731
    environment = dict(r.obj(get("environment"), "environment"))
    settings = dict(r.obj(get("settings"), "settings"))
    raw_cases = r.seq(get("cases"), "cases")
    created = r.text(get("created"), "created")
    complete = r.value(data.get("complete", False), "complete", "bool", optional=False)
    cases = [r.case(c, f"cases[{i}]") for i, c in enumerate(raw_cases)]
    return Results(environment, settings, cases, created, complete,
                   Path(path) if str(path) != "<results>" else None,
                   r.gate(data.get("gate")), r.study(data.get("study")))


def sample_problem(raw: dict) -> str | None:
    """Why ``raw`` (a sample's fields, cold evidence typed or not) could not be stored, or None.

    The runner asks this of every probe report, so a sample is refused by the same rule
    that a results file is.
    """
    raw = {k: v.to_json() if isinstance(v, ColdEvidence) else v for k, v in raw.items()}
    try:
        _Reader("").sample(raw, "")
    except ResultsError as exc:
        return str(exc).removeprefix(": ")
    return None


def validate(data: Any, path: str | os.PathLike = "<results>") -> None:
    """Raise :class:`ResultsError` naming the file and the first offending field of a version-2 document."""
    results_from_json(data, path)
