"""``gate.json`` on disk: read, checked, brought to today's shape, written.

What it holds is typed in ``gate_document.py`` (the outcome: ``gate_outcome.py``); this
module is the file: every reader goes through :func:`load`, which checks the file, brings an
older one to today's shape by the migrations below (here and nowhere else) and returns the
:class:`~ttfg.results.gate_document.GateDocument`; nothing downstream reads the JSON again.

Versions: the format has been ``"version": 1`` while fields were added, so each
migration (``update_*``, in the spirit of asv's ``results.update_to_2``) recognises the
older shape by what it lacks, and the document is written as it always was:

* before figures: a case without ``figure`` gets one from its medians and its verdict's ratio
  and interval (those were the time tier's, in the gated timing's unit);
* before tiers: a case without ``tier`` was decided by the time tier;
* before the guard: settings without ``guard`` guarded the gated metric alone.

Checked like a results file before anything trusts it. Why: ``ttfg merge gate`` and ``ttfg
explain`` read ``gate.json`` files that arrive as CI artifacts, written by another runner,
another ttfg version, or edited. Trusted as they were, a shard whose ``exit_code`` was the
string ``"0"`` was shown as failed and still passed, ``"cases": []`` made a case disappear,
and a wrong type surfaced as an internal error naming no file. Every field a reader uses is
checked here, once: the format and its version, the exit code (0, 1 or 2, a whole number),
the revisions, the settings, each case's verdict, its summaries and counts, the skips, the
expectations, the shard, the fingerprint and the noise floor. A refusal names the file and
the field, like a results file's (:class:`~ttfg.results.format.ResultsError`, exit 2).

Fields a gate of this version may lack (older gates wrote no ``tier``, no ``shard``,
no ``noise``) are checked when present.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from . import jsonfile
from .format import ResultsError, describe, strict_json
from .gate_document import GateDocument
from .gate_outcome import FORMAT, VERDICTS, VERSION
from .validate import _Reader

__all__ = ["EXIT_CODES", "MAX_BYTES", "SHARD_STATUSES", "dumps", "gate_from_json", "load", "migrate", "save",
           "update_figures", "update_tiers"]

#: The exit codes a gate gives (the CLI's contract).
EXIT_CODES = (0, 1, 2)
#: gate.json is a summary: tens of kilobytes per case; anything near this is no gate's.
MAX_BYTES = 256 * 1024 * 1024

#: A merged gate's shard: finished (exit 0 or 1), failed (exit 2, or unfinished), or missing from the inputs.
SHARD_STATUSES = ("ok", "failed", "missing")

_VERDICT_NUMBERS = ("ratio", "ci_low", "ci_high", "p_value", "margin", "detectable", "detectable_high")
_SUMMARY_NUMBERS = ("median", "mean", "min", "max", "cv")
_FIGURE_NUMBERS = ("base", "head", "ratio", "ci_low", "ci_high")
_PHASE_NUMBERS = ("base", "head", "delta", "ratio", "ci_low", "ci_high", "base_instructions", "head_instructions")
_FUNCTION_NUMBERS = ("base_incl", "head_incl", "base_self", "head_self", "delta_incl", "delta_self", "self_t")


class _GateReader(_Reader):
    def whole(self, value: Any, where: str, allowed: tuple[int, ...]) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value not in allowed:
            raise self.expect(where, "one of " + ", ".join(map(str, allowed)) + " (a whole number)", value)
        return value

    def revision(self, raw: Any, where: str) -> None:
        raw = self.obj(raw, where)
        for k in ("rev", "commit"):
            self.text(self.key(raw, k, f"{where}."), f"{where}.{k}")
        self.text(raw.get("subject"), f"{where}.subject", optional=True)

    def settings(self, raw: Any, where: str = "settings") -> None:
        raw = self.obj(raw, where)
        self.text(self.key(raw, "metric", f"{where}."), f"{where}.metric")
        effect = self.value(self.key(raw, "min_effect", f"{where}."), f"{where}.min_effect", "number", optional=False)
        alpha = self.value(self.key(raw, "alpha", f"{where}."), f"{where}.alpha", "number", optional=False)
        if not effect > 0:
            raise self.expect(f"{where}.min_effect", "a number above 0", effect)
        if not 0 < alpha < 1:
            raise self.expect(f"{where}.alpha", "a number between 0 and 1", alpha)
        for k in ("min_pairs", "max_pairs"):
            self.value(raw.get(k), f"{where}.{k}", "count")
        self.value(raw.get("budget_s"), f"{where}.budget_s", "nonneg")
        if "run" in raw and raw["run"] is not None:
            self.obj(raw["run"], f"{where}.run")

    def verdict(self, raw: Any, where: str) -> None:
        raw = self.obj(raw, where)
        word = self.key(raw, "verdict", f"{where}.")
        if word not in VERDICTS:
            raise self.expect(f"{where}.verdict", "one of " + ", ".join(VERDICTS), word)
        for k in _VERDICT_NUMBERS:
            self.value(raw.get(k), f"{where}.{k}", "number")
        for k in ("n_base", "n_head"):
            self.value(raw.get(k), f"{where}.{k}", "count")
        for k in ("method", "reason", "label"):
            self.text(raw.get(k), f"{where}.{k}", optional=True)
        self.value(raw.get("equivalent"), f"{where}.equivalent", "bool")

    def summary(self, raw: Any, where: str) -> None:
        raw = self.obj(raw, where)
        self.value(raw.get("n"), f"{where}.n", "count")
        for k in _SUMMARY_NUMBERS:
            self.value(raw.get(k), f"{where}.{k}", "number")

    def case(self, raw: Any, where: str) -> None:
        raw = self.obj(raw, where)
        self.text(self.key(raw, "case", f"{where}."), f"{where}.case")
        self.verdict(self.key(raw, "verdict", f"{where}."), f"{where}.verdict")
        self.text(self.key(raw, "stop", f"{where}."), f"{where}.stop")
        self.value(self.key(raw, "pairs", f"{where}."), f"{where}.pairs", "count", optional=False)
        self.value(raw.get("attempted"), f"{where}.attempted", "count")
        self.value(raw.get("wall_s"), f"{where}.wall_s", "nonneg")
        self.text(raw.get("tier"), f"{where}.tier", optional=True)
        self.text(raw.get("shard"), f"{where}.shard", optional=True)
        if raw.get("cost") is not None:  # per tier, processes and their seconds (gates since 2026-12-06)
            for tier, spent in self.obj(raw["cost"], f"{where}.cost").items():
                spent = self.obj(spent, f"{where}.cost.{tier}")
                self.value(spent.get("processes"), f"{where}.cost.{tier}.processes", "count")
                self.value(spent.get("seconds"), f"{where}.cost.{tier}.seconds", "nonneg")
                self.value(spent.get("stored"), f"{where}.cost.{tier}.stored", "count")
        if raw.get("screen") is not None:  # what the time tier's screen did (gates since 2026-12-06)
            self.screen(raw["screen"], f"{where}.screen")
        if raw.get("baseline") is not None:  # where the base's counts came from (gates since 2026-12-06)
            baseline = self.obj(raw["baseline"], f"{where}.baseline")
            if baseline.get("status") not in ("stored", "counted", "off", "none"):
                raise self.fail(f"{where}.baseline.status", "expected stored, counted, off or none, got "
                                f"{baseline.get('status')!r}")
            for k in ("from", "verified", "why"):
                self.text(baseline.get(k), f"{where}.baseline.{k}", optional=True)
            self.value(baseline.get("kept"), f"{where}.baseline.kept", "count")
        for side in ("base", "head"):
            self.summary(self.key(raw, side, f"{where}."), f"{where}.{side}")
        failed = raw.get("failed")
        if failed is not None:
            failed = self.obj(failed, f"{where}.failed")
            for side in ("base", "head"):
                self.value(failed.get(side), f"{where}.failed.{side}", "count")
        good = raw.get("good")
        if good is not None:
            good = self.obj(good, f"{where}.good")
            for side in ("base", "head"):
                self.value(good.get(side), f"{where}.good.{side}", "count", optional=False)
        errors = raw.get("first_error")
        if errors is not None:
            for k, v in self.obj(errors, f"{where}.first_error").items():
                self.text(v, f"{where}.first_error.{k}")
        for i, item in enumerate(self.seq(raw.get("tiers", []), f"{where}.tiers")):
            item = self.obj(item, f"{where}.tiers[{i}]")
            for k in ("tier", "verdict", "reason", "broken"):
                self.text(item.get(k), f"{where}.tiers[{i}].{k}", optional=True)
            for j, e in enumerate(self.seq(item.get("evidence", []), f"{where}.tiers[{i}].evidence")):
                self.obj(e, f"{where}.tiers[{i}].evidence[{j}]")
        for i, item in enumerate(self.seq(raw.get("changes", []), f"{where}.changes")):
            at = f"{where}.changes[{i}]"
            item = self.obj(item, at)
            self.verdict(self.key(item, "verdict", f"{at}."), f"{at}.verdict")
            for side in ("base", "head"):
                self.summary(self.key(item, side, f"{at}."), f"{at}.{side}")
        if raw.get("failures") is not None:
            self.obj(raw["failures"], f"{where}.failures")
        if raw.get("figure") is not None:
            self.figure(raw["figure"], f"{where}.figure")
        self.each(raw, "context", where, self.figure)
        self.each(raw, "guards", where, self.guard)
        if raw.get("attribution") is not None:
            self.attribution(raw["attribution"], f"{where}.attribution")
        if raw.get("accepted") is not None:
            self.obj(raw["accepted"], f"{where}.accepted")

    def screen(self, raw: Any, where: str) -> None:
        """A case's screen (``Screen``): what was screened, short or not, its pairs, escalated or not, and why."""
        raw = self.obj(raw, where)
        for i, name in enumerate(self.seq(self.key(raw, "metrics", f"{where}."), f"{where}.metrics")):
            self.text(name, f"{where}.metrics[{i}]")
        for k in ("short", "escalated"):
            self.value(self.key(raw, k, f"{where}."), f"{where}.{k}", "bool", optional=False)
        self.value(self.key(raw, "pairs", f"{where}."), f"{where}.pairs", "count", optional=False)
        self.value(raw.get("threshold"), f"{where}.threshold", "nonneg")
        self.text(self.key(raw, "why", f"{where}."), f"{where}.why")

    def each(self, raw: dict, key: str, where: str, check) -> None:
        """``check`` of every item of the list ``raw[key]`` (absent: none), each named ``where.key[i]``."""
        for i, item in enumerate(self.seq(raw.get(key, []), f"{where}.{key}")):
            check(item, f"{where}.{key}[{i}]")

    def guard(self, raw: Any, where: str) -> None:
        raw = self.obj(raw, where)
        self.text(self.key(raw, "metric", f"{where}."), f"{where}.metric")
        self.verdict(self.key(raw, "verdict", f"{where}."), f"{where}.verdict")
        for k in ("base", "head"):
            self.value(raw.get(k), f"{where}.{k}", "number")
        self.value(raw.get("pairs"), f"{where}.pairs", "count")

    def figure(self, raw: Any, where: str) -> None:
        raw = self.obj(raw, where)
        for k in ("metric", "tier", "statistic"):
            self.text(raw.get(k), f"{where}.{k}", optional=True)
        for k in _FIGURE_NUMBERS:
            self.value(raw.get(k), f"{where}.{k}", "number")
        self.value(raw.get("n"), f"{where}.n", "count")

    def phase(self, raw: Any, where: str) -> None:
        raw = self.obj(raw, where)
        self.text(self.key(raw, "phase", f"{where}."), f"{where}.phase")
        self.text(raw.get("metric"), f"{where}.metric", optional=True)
        for k in _PHASE_NUMBERS:
            self.value(raw.get(k), f"{where}.{k}", "number")
        self.value(raw.get("n"), f"{where}.n", "count")
        self.value(raw.get("paired"), f"{where}.paired", "bool")

    def attribution(self, raw: Any, where: str) -> None:
        """Every field ``attribution_record.Attribution.from_json`` reads."""
        raw = self.obj(raw, where)
        for k in ("case", "metric", "headline"):
            self.text(raw.get(k), f"{where}.{k}", optional=True)
        self.value(raw.get("paired"), f"{where}.paired", "bool")
        if raw.get("total") is not None:
            self.phase(raw["total"], f"{where}.total")
        self.each(raw, "phases", where, self.phase)
        for i, c in enumerate(self.seq(raw.get("counters", []), f"{where}.counters")):
            at = f"{where}.counters[{i}]"
            c = self.obj(c, at)
            for k in ("metric", "verdict"):
                self.text(self.key(c, k, f"{at}."), f"{at}.{k}")
            for k in ("base", "head", "threshold"):
                self.value(c.get(k), f"{at}.{k}", "number")
        for i, f in enumerate(self.seq(raw.get("functions", []), f"{where}.functions")):
            at = f"{where}.functions[{i}]"
            f = self.obj(f, at)
            for k in ("fn", "file"):
                self.text(self.key(f, k, f"{at}."), f"{at}.{k}")
            for k in ("presence", "unit"):
                self.text(f.get(k), f"{at}.{k}", optional=True)
            self.value(f.get("line"), f"{at}.line", "count")
            for k in _FUNCTION_NUMBERS:
                self.value(f.get(k), f"{at}.{k}", "number")
        for k, v in self.obj(raw.get("function_samples") or {}, f"{where}.function_samples").items():
            for side, n in self.obj(v, f"{where}.function_samples.{k}").items():
                self.value(n, f"{where}.function_samples.{k}.{side}", "count")
        for k in ("function_notes", "notes"):
            for i, note in enumerate(self.seq(raw.get(k, []), f"{where}.{k}")):
                self.text(note, f"{where}.{k}[{i}]")
        self.text(raw.get("calls_note"), f"{where}.calls_note", optional=True)
        self.text(raw.get("lines_note"), f"{where}.lines_note", optional=True)
        self.calls_and_lines(raw, where)

    def shards(self, data: dict) -> None:
        """A merged gate's own fields (``ttfg merge gate``)."""
        self.value(data["merged"], "merged", "bool")
        self.value(self.key(data, "count", ""), "count", "count", optional=False)
        self.text(self.key(data, "partition", ""), "partition")
        for i, row in enumerate(self.seq(self.key(data, "shards", ""), "shards")):
            at = f"shards[{i}]"
            row = self.obj(row, at)
            for k in ("shard", "status"):
                self.text(self.key(row, k, f"{at}."), f"{at}.{k}")
            if row["status"] not in SHARD_STATUSES:
                raise self.expect(f"{at}.status", "one of " + ", ".join(SHARD_STATUSES), row["status"])
            for k in ("file", "detail"):
                self.text(row.get(k), f"{at}.{k}", optional=True)
            self.value(row.get("cases"), f"{at}.cases", "count")
            if row.get("exit_code") is not None:
                self.whole(row["exit_code"], f"{at}.exit_code", EXIT_CODES)
            self.value(row.get("elapsed_s"), f"{at}.elapsed_s", "nonneg")
            for j, f in enumerate(self.seq(row.get("expectation_failures") or [], f"{at}.expectation_failures")):
                self.obj(f, f"{at}.expectation_failures[{j}]")
            self.noise(row.get("noise"), f"{at}.noise")
        for i, note in enumerate(self.seq(data.get("notes") or [], "notes")):
            self.text(note, f"notes[{i}]")

    def expectations(self, raw: Any, where: str = "expectations") -> None:
        if raw is None:
            return
        raw = self.obj(raw, where)
        for i, row in enumerate(self.seq(raw.get("rows", []), f"{where}.rows")):
            at = f"{where}.rows[{i}]"
            row = self.obj(row, at)
            for k in ("case", "metric", "status"):
                self.text(self.key(row, k, f"{at}."), f"{at}.{k}")

    def skipped(self, raw: Any, where: str = "skipped") -> None:
        for i, item in enumerate(self.seq(raw, where)):
            item = self.obj(item, f"{where}[{i}]")
            for k in ("case", "reason"):
                self.text(self.key(item, k, f"{where}[{i}]."), f"{where}[{i}].{k}")

    def document(self, data: Any) -> dict:
        if not isinstance(data, dict):
            raise self.fail("top level", f"expected a JSON object, got {describe(data)}")
        if data.get("format") != FORMAT:
            raise self.fail("format", f"expected {FORMAT!r}, got {describe(data.get('format'))} (not a ttfg gate "
                                      "outcome)")
        version = data.get("version")
        if isinstance(version, bool) or version != VERSION:
            raise self.fail("version", f"unsupported version {describe(version)}; this ttfg reads version {VERSION}")
        self.whole(self.key(data, "exit_code", ""), "exit_code", EXIT_CODES)
        for side in ("base", "head"):
            self.revision(self.key(data, side, ""), side)
        self.settings(self.key(data, "settings", ""))
        self.value(data.get("elapsed_s"), "elapsed_s", "nonneg")
        files = data.get("files")
        if files is not None:
            for k, v in self.obj(files, "files").items():
                self.text(v, f"files.{k}")
        for i, case in enumerate(self.seq(self.key(data, "cases", ""), "cases")):
            self.case(case, f"cases[{i}]")
        self.skipped(data.get("skipped", []))
        self.expectations(data.get("expectations"))
        self.shard(data.get("shard"))
        self.fingerprint(data.get("fingerprint"), "fingerprint")
        self.noise(data.get("noise"), "noise")
        for i, a in enumerate(self.seq(data.get("acceptances") or [], "acceptances")):
            self.obj(a, f"acceptances[{i}]")
        if data.get("merged") is not None:
            self.shards(data)
        for k in ("passing_means", "footer"):
            self.text(data.get(k), k, optional=True)
        return data


# ---------------------------------------------------------------------------- migrations of older files


def update_figures(doc: dict) -> dict:
    """A ``gate.json`` written before each case named its deciding numbers: the gated timing's medians and the
    verdict's ratio and interval (which then were the time tier's, in that timing's unit)."""
    for case in doc.get("cases") or []:
        if "figure" in case:
            continue
        verdict = case.get("verdict") or {}
        case["figure"] = None if verdict.get("ratio") is None else {
            "metric": case.get("metric") or "first_grad_s", "tier": case.get("tier") or "time",
            "statistic": "median", "base": (case.get("base") or {}).get("median"),
            "head": (case.get("head") or {}).get("median"), "ratio": verdict.get("ratio"),
            "ci_low": verdict.get("ci_low"), "ci_high": verdict.get("ci_high"), "n": None}
    return doc


def update_tiers(doc: dict) -> dict:
    """A ``gate.json`` written before the tiers: every case was decided by the time tier."""
    for case in doc.get("cases") or []:
        case.setdefault("tier", "time")
    return doc


#: Every migration, oldest shape first; each leaves a document it does not apply to as it is.
MIGRATIONS = (update_tiers, update_figures)


def migrate(doc: dict) -> dict:
    """A checked document brought to today's shape (in place; returned)."""
    for update in MIGRATIONS:
        doc = update(doc)
    return doc


def load(path: str | os.PathLike) -> GateDocument:
    """Read a ``gate.json`` (strict JSON, ``jsonfile``), check every field a reader uses, bring an older file to
    today's shape (:data:`MIGRATIONS`) and return it as its type: the one way ttfg reads a ``gate.json``.

    Raises
    ------
    ResultsError
        Naming the file and the field: not strict JSON, a field missing or of the wrong type, another format or
        a newer version.
    """
    path = Path(path)
    return GateDocument.from_json(migrate(gate_from_json(jsonfile.read(path, ResultsError, MAX_BYTES), path)), path)


def dumps(doc: dict) -> str:
    """A ``gate.json`` document as its file's text: strict JSON (a NaN in it made it unreadable to ``ttfg merge
    gate``), indented by one."""
    import json

    return json.dumps(strict_json(doc), indent=1, allow_nan=False) + "\n"


def save(path: str | os.PathLike, doc: dict) -> None:
    """Write a ``gate.json`` document atomically (the gate writes it together with summary.md instead)."""
    from ..files import atomic_write_text

    atomic_write_text(path, dumps(doc))


def gate_from_json(data: Any, path: str | os.PathLike) -> dict:
    """A parsed ``gate.json`` document, checked (see the module docstring); returned as it is."""
    return _GateReader(path).document(data)
