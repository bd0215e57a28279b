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

from .format import (COMMON_FIELDS, FINGERPRINT_FIELDS, FORMAT, KINDS, REQUIRED_WHEN_OK, SAMPLE_FIELDS,
                     STUDY_KINDS, VERSION, ZERO_ALLOWED, ResultsError, describe, is_number)
from .runtimes import Runtimes
from .model import (MAX_SHARDS, NOISE_SOURCES, CaseResult, ColdEvidence, DepthEntry, EffectEntry, Fingerprint, Fit, GateSection,
                    NoiseEntry, NoiseFloor, Results, Sample, ShardSection, StudySection)

__all__ = ["fingerprint_from_json", "noise_from_json", "results_from_json", "sample_problem", "shard_from_json",
           "validate"]

_EXPECTED = {
    "text": "text", "bool": "true or false", "int": "a whole number", "count": "a whole number >= 0",
    "number": "a number", "bytes": "a whole number of bytes >= 0", "seconds": "a positive number of seconds",
    "seconds0": "a number of seconds >= 0", "nonneg": "a number >= 0",
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

    def header(self, doc: Any, format_: str, version: int, what: str) -> dict:
        """The document as an object whose ``format`` and ``version`` are this reader's (``what`` names the kind)."""
        doc = self.obj(doc, "the document")
        if doc.get("format") != format_:
            raise self.fail("format", f"not {what} (expected {format_!r}, got {doc.get('format')!r})")
        if doc.get("version") != version:
            raise self.fail("version", f"version {doc.get('version')!r}; this ttfg reads version {version}")
        return doc

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
        if kind in ("number", "seconds", "seconds0", "nonneg"):
            if not is_number(value):
                raise self.expect(where, _EXPECTED[kind], value)
            if kind == "seconds" and value <= 0 or kind in ("seconds0", "nonneg") and value < 0:
                raise self.expect(where, _EXPECTED[kind], value)
            return value
        raise AssertionError(f"unknown field type {kind!r}")

    # ------------------------------------------------------------------ samples

    def counters(self, value: Any, where: str) -> dict | None:
        if value is None:
            return None
        return {self.text(k, f"{where} key"): self.value(v, f"{where}.{k}", "number", optional=False)
                for k, v in self.obj(value, where).items()}

    def phase_counts(self, value: Any, where: str) -> dict | None:
        """``{phase: instructions}``: whole numbers >= 0."""
        if value is None:
            return None
        return {self.text(k, f"{where} key"): self.value(v, f"{where}.{k}", "count", optional=False)
                for k, v in self.obj(value, where).items()}

    def entries(self, value: Any, where: str, fields: set[str], what: str):
        """``(where, object)`` of each item of the list ``value``, each an object of no field but ``fields``."""
        for i, raw in enumerate(self.seq(value, where)):
            at = f"{where}[{i}]"
            raw = self.obj(raw, at)
            extra = sorted(set(raw) - fields)
            if extra:
                raise self.fail(f"{at}.{extra[0]}", f"not a field of {what}")
            yield at, raw

    def calls_and_lines(self, raw: dict, where: str) -> None:
        """An attribution's ``calls`` (Python call counts per function) and ``lines`` (compiled code per source
        line), each absent before it was recorded: read alike in gate.json and bisect.json."""
        from ..engines.source_lines import KINDS as LINE_KINDS
        from .attribution_record import CODE_KINDS

        def counted(c: dict, at: str, names: tuple[str, ...]) -> None:
            for k in names:
                self.text(self.key(c, k, f"{at}."), f"{at}.{k}")
            self.value(c.get("line"), f"{at}.line", "count")
            for k in ("base", "head"):
                self.value(self.key(c, k, f"{at}."), f"{at}.{k}", "count", optional=False)
            if c.get("code") is not None and c["code"] not in CODE_KINDS:
                raise self.expect(f"{at}.code", "one of " + ", ".join(CODE_KINDS), c["code"])

        for i, c in enumerate(self.seq(raw.get("calls") or [], f"{where}.calls")):
            counted(self.obj(c, f"{where}.calls[{i}]"), f"{where}.calls[{i}]", ("fn", "file"))
        for i, c in enumerate(self.seq(raw.get("lines") or [], f"{where}.lines")):
            at = f"{where}.lines[{i}]"
            c = self.obj(c, at)
            counted(c, at, ("kind", "file", "fn"))
            if c["kind"] not in LINE_KINDS:
                raise self.expect(f"{at}.kind", "one of " + ", ".join(LINE_KINDS), c["kind"])
            self.text(c.get("reason"), f"{at}.reason", optional=True)

    def functions(self, value: Any, where: str, unit: str = "count") -> list | None:
        """A list of ``{"fn", "file", "line", "incl", "self"}``: text, text or null, line or null,
        and inclusive and self counts (``unit`` "count") or seconds >= 0 (``unit`` "seconds0")."""
        if value is None:
            return None
        out = []
        for at, raw in self.entries(value, where, {"fn", "file", "line", "incl", "self"}, "a function entry"):
            out.append({"fn": self.text(self.key(raw, "fn", f"{at}."), f"{at}.fn"),
                        "file": self.text(raw.get("file"), f"{at}.file", optional=True),
                        "line": self.value(raw.get("line"), f"{at}.line", "count"),
                        "incl": self.value(self.key(raw, "incl", f"{at}."), f"{at}.incl", unit, optional=False),
                        "self": self.value(self.key(raw, "self", f"{at}."), f"{at}.self", unit, optional=False)})
        return out

    def source_lines(self, value: Any, where: str) -> list | None:
        """A list of ``{"kind", "file", "line", "fn", "n"}`` (a graph break also ``"reason"``): a kind of
        ``measure/source_lines.KINDS``, text, a line or null, text, a count."""
        from ..engines.source_lines import KINDS

        if value is None:
            return None
        out = []
        for at, raw in self.entries(value, where, {"kind", "file", "line", "fn", "n", "reason"}, "a source-line entry"):
            kind = self.text(self.key(raw, "kind", f"{at}."), f"{at}.kind")
            if kind not in KINDS:
                raise self.expect(f"{at}.kind", "one of " + ", ".join(KINDS), kind)
            entry = {"kind": kind, "file": self.text(self.key(raw, "file", f"{at}."), f"{at}.file"),
                     "line": self.value(raw.get("line"), f"{at}.line", "count"),
                     "fn": self.text(self.key(raw, "fn", f"{at}."), f"{at}.fn"),
                     "n": self.value(self.key(raw, "n", f"{at}."), f"{at}.n", "count", optional=False)}
            if "reason" in raw:
                entry["reason"] = self.text(raw["reason"], f"{at}.reason")
            out.append(entry)
        return out

    def cold_evidence(self, value: Any, where: str) -> ColdEvidence | None:
        if value is None:
            return None
        raw = self.obj(value, where)
        known = {"cache", "files_at_start", "backend_compiles", "persistent_cache_hits", "fxgraph_cache_misses",
                 "fxgraph_cache_hits", "lookups"}
        extra = sorted(set(raw) - known)
        if extra:
            raise self.fail(f"{where}.{extra[0]}", "not a field of the cold evidence")
        return ColdEvidence(self.text(self.key(raw, "cache", f"{where}."), f"{where}.cache"),
                            self.value(self.key(raw, "files_at_start", f"{where}."), f"{where}.files_at_start",
                                       "count", optional=False),
                            *(self.value(raw.get(k), f"{where}.{k}", "count") for k in
                              ("backend_compiles", "persistent_cache_hits", "fxgraph_cache_misses",
                               "fxgraph_cache_hits")),
                            lookups=self.phase_counts(raw.get("lookups"), f"{where}.lookups"))

    def runtimes(self, value: Any, where: str) -> Runtimes | None:
        """``{"modules": [text], "libraries": [text], "threads": count >= 1, "threads_at_start": count or null}``
        (``results/runtimes.py``), or null."""
        if value is None:
            return None
        raw = self.obj(value, where)
        extra = sorted(set(raw) - {"modules", "libraries", "threads", "threads_at_start"})
        if extra:
            raise self.fail(f"{where}.{extra[0]}", "not a field of the runtimes record")
        names = {k: tuple(self.text(x, f"{where}.{k}[{i}]") for i, x in
                          enumerate(self.seq(self.key(raw, k, f"{where}."), f"{where}.{k}")))
                 for k in ("modules", "libraries")}
        threads = self.value(self.key(raw, "threads", f"{where}."), f"{where}.threads", "count", optional=False)
        if threads < 1:
            raise self.fail(f"{where}.threads", f"a process has at least one thread, got {threads}")
        return Runtimes(names["modules"], names["libraries"], threads,
                        self.value(raw.get("threads_at_start"), f"{where}.threads_at_start", "count"))

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
            elif ftype == "runtimes":
                values[name] = self.runtimes(v, at(name))
            elif ftype == "phase_counts":
                values[name] = self.phase_counts(v, at(name))
            elif ftype == "source_lines":
                values[name] = self.source_lines(v, at(name))
            elif ftype in ("functions", "functions_s"):
                values[name] = self.functions(v, at(name), "count" if ftype == "functions" else "seconds0")
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

    def noise_entry(self, raw: Any, where: str) -> NoiseEntry:
        raw = self.obj(raw, where)
        text = lambda k: self.text(self.key(raw, k, f"{where}."), f"{where}.{k}")  # noqa: E731
        ci = self.seq(raw.get("sd_ci95", [None, None]), f"{where}.sd_ci95")
        if len(ci) != 2:
            raise self.expect(f"{where}.sd_ci95", "[low, high]", ci)
        low, high = (self.value(v, f"{where}.sd_ci95[{i}]", "nonneg") for i, v in enumerate(ci))
        gates = []
        for i, g in enumerate(self.seq(raw.get("gates", []), f"{where}.gates")):
            g = self.obj(g, f"{where}.gates[{i}]")
            gates.append((self.value(self.key(g, "budget_s", f"{where}.gates[{i}]."), f"{where}.gates[{i}].budget_s",
                                     "seconds", optional=False),
                          self.value(self.key(g, "pairs", f"{where}.gates[{i}]."), f"{where}.gates[{i}].pairs",
                                     "count", optional=False),
                          self.value(g.get("min_detectable_effect"), f"{where}.gates[{i}].min_detectable_effect",
                                     "nonneg")))
        return NoiseEntry(text("case"), text("metric"),
                          self.value(self.key(raw, "n", f"{where}."), f"{where}.n", "count", optional=False),
                          self.value(raw.get("log_ratio_sd"), f"{where}.log_ratio_sd", "nonneg"), low, high,
                          self.value(raw.get("seconds_per_pair"), f"{where}.seconds_per_pair", "seconds"), gates)

    def noise(self, raw: Any, where: str = "environment.noise") -> NoiseFloor | None:
        """The noise floor (``environment.noise``): SDs and effects are numbers >= 0, or null when unknown."""
        if raw is None:
            return None
        raw = self.obj(raw, where)
        source = self.text(self.key(raw, "source", f"{where}."), f"{where}.source")
        if source not in NOISE_SOURCES:
            raise self.expect(f"{where}.source", f"one of {', '.join(NOISE_SOURCES)}", source)
        alpha, power = (self.value(self.key(raw, k, f"{where}."), f"{where}.{k}", "number", optional=False)
                        for k in ("alpha", "power"))
        for k, v in (("alpha", alpha), ("power", power)):
            if not 0 < v < 1:
                raise self.expect(f"{where}.{k}", "a number between 0 and 1", v)
        entries = [self.noise_entry(e, f"{where}.entries[{i}]")
                   for i, e in enumerate(self.seq(raw.get("entries", []), f"{where}.entries"))]
        return NoiseFloor(source, self.text(self.key(raw, "method", f"{where}."), f"{where}.method"),
                          self.text(self.key(raw, "measured_at", f"{where}."), f"{where}.measured_at"),
                          self.value(raw.get("age_s"), f"{where}.age_s", "seconds0"),
                          dict(self.obj(raw.get("machine", {}), f"{where}.machine")), alpha, power, entries,
                          self.text(raw.get("note", ""), f"{where}.note"))

    def shard(self, raw: Any, where: str = "shard") -> ShardSection | None:
        if raw is None:
            return None
        raw = self.obj(raw, where)
        get = lambda k: self.key(raw, k, f"{where}.")  # noqa: E731
        count = self.value(get("count"), f"{where}.count", "count", optional=False)
        index = self.value(get("index"), f"{where}.index", "count", optional=False)
        if not 1 <= count <= MAX_SHARDS:
            raise self.expect(f"{where}.count", f"a number of shards from 1 to {MAX_SHARDS}", count)
        if not 1 <= index <= count:
            raise self.expect(f"{where}.index", f"a shard index from 1 to {count}", index)
        texts = lambda key, raw_list: [self.text(c, f"{where}.{key}[{i}]")  # noqa: E731
                                       for i, c in enumerate(self.seq(raw_list, f"{where}.{key}"))]
        return ShardSection(index, count, texts("cases", get("cases")),
                            self.text(get("partition"), f"{where}.partition"), texts("all_cases", raw.get("all_cases", [])))

    def fingerprint(self, raw: Any, where: str = "environment.fingerprint") -> Fingerprint | None:
        if raw is None:
            return None
        raw = self.obj(raw, where)
        extra = sorted(set(raw) - set(FINGERPRINT_FIELDS))
        if extra:
            raise self.fail(f"{where}.{extra[0]}", "not a field of the machine fingerprint")
        values = {}
        for name, kind in FINGERPRINT_FIELDS.items():
            at = f"{where}.{name}"
            v = self.key(raw, name, f"{where}.")
            if kind == "texts":
                values[name] = [self.text(x, f"{at}[{i}]") for i, x in enumerate(self.seq(v, at))]
            elif kind in ("versions", "texts_by_name"):
                values[name] = {self.text(k, f"{at} key"): self.text(x, f"{at}.{k}", optional=kind == "versions")
                                for k, x in self.obj(v, at).items()}
            else:
                values[name] = self.value(v, at, kind, optional=name == "memory_bytes")
        return Fingerprint(**values)

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
    fingerprint = r.fingerprint(environment.pop("fingerprint", None))
    noise = r.noise(environment.pop("noise", None))
    settings = dict(r.obj(get("settings"), "settings"))
    raw_cases = r.seq(get("cases"), "cases")
    created = r.text(get("created"), "created")
    complete = r.value(data.get("complete", False), "complete", "bool", optional=False)
    cases = [r.case(c, f"cases[{i}]") for i, c in enumerate(raw_cases)]
    return Results(environment, settings, cases, created, complete,
                   Path(path) if str(path) != "<results>" else None,
                   r.gate(data.get("gate")), r.study(data.get("study")), r.shard(data.get("shard")), fingerprint,
                   noise=noise)


def shard_from_json(raw: Any, path: str | os.PathLike, where: str = "shard") -> ShardSection | None:
    """A ``shard`` object (of a results file or a gate's ``gate.json``), checked; None for null."""
    return _Reader(path).shard(raw, where)


def fingerprint_from_json(raw: Any, path: str | os.PathLike, where: str = "fingerprint") -> Fingerprint | None:
    """A machine fingerprint object, checked; None for null."""
    return _Reader(path).fingerprint(raw, where)


def noise_from_json(data: Any, path: str | os.PathLike = "<noise>", where: str = "noise") -> NoiseFloor | None:
    """A stored noise floor (the doctor's ``calibration.json``, a gate's), checked by the rule of
    ``environment.noise``; ``where``: its field in the file."""
    return _Reader(path).noise(data, where)


def sample_problem(raw: dict) -> str | None:
    """Why ``raw`` (a sample's fields, cold evidence typed or not) could not be stored, or None.

    The runner asks this of every probe report, so a sample is refused by the same rule
    that a results file is.
    """
    raw = {k: v.to_json() if isinstance(v, (ColdEvidence, Runtimes)) else v for k, v in raw.items()}
    try:
        _Reader("").sample(raw, "")
    except ResultsError as exc:
        return str(exc).removeprefix(": ")
    return None


def validate(data: Any, path: str | os.PathLike = "<results>") -> None:
    """Raise :class:`ResultsError` naming the file and the first offending field of a version-2 document."""
    results_from_json(data, path)
