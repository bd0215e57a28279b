"""``gate.json`` on disk: read, checked, brought to today's shape, written.

The outcome it holds is typed in ``gate_outcome.py``; this module is the file: every
reader goes through :func:`load` (or :func:`load_gate` for the checked document), and
an older file is brought to today's shape by the migrations below before anything reads it.

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
from .gate_outcome import FORMAT, VERDICTS, VERSION, GateOutcome
from .validate import _Reader

__all__ = ["EXIT_CODES", "MAX_BYTES", "dumps", "gate_from_json", "load", "load_gate", "migrate", "save", "update_figures",
           "update_tiers"]

#: The exit codes a gate gives (the CLI's contract).
EXIT_CODES = (0, 1, 2)
#: gate.json is a summary: tens of kilobytes per case; anything near this is no gate's.
MAX_BYTES = 256 * 1024 * 1024

_VERDICT_NUMBERS = ("ratio", "ci_low", "ci_high", "p_value", "margin", "detectable", "detectable_high")
_SUMMARY_NUMBERS = ("median", "mean", "min", "max", "cv")


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
        for side in ("base", "head"):
            self.summary(self.key(raw, side, f"{where}."), f"{where}.{side}")
        failed = raw.get("failed")
        if failed is not None:
            failed = self.obj(failed, f"{where}.failed")
            for side in ("base", "head"):
                self.value(failed.get(side), f"{where}.failed.{side}", "count")
        errors = raw.get("first_error")
        if errors is not None:
            for k, v in self.obj(errors, f"{where}.first_error").items():
                self.text(v, f"{where}.first_error.{k}")
        for k in ("tiers", "changes"):
            for i, item in enumerate(self.seq(raw.get(k, []), f"{where}.{k}")):
                self.obj(item, f"{where}.{k}[{i}]")
        for k in ("failures", "attribution"):
            if raw.get(k) is not None:
                self.obj(raw[k], f"{where}.{k}")
        if raw.get("attribution") is not None:
            self.text(raw["attribution"].get("headline"), f"{where}.attribution.headline", optional=True)

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
        for k in ("passing_means",):
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


def load(path: str | os.PathLike) -> GateOutcome:
    """Read, check and migrate a ``gate.json`` into the typed outcome.

    Raises
    ------
    ResultsError
        Naming the file and the field, on anything :func:`load_gate` refuses.
    """
    path = Path(path)
    return GateOutcome.from_json(migrate(load_gate(path)), path)


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


def load_gate(path: str | os.PathLike) -> dict:
    """Read and check a ``gate.json``: strict JSON (``jsonfile``), then every field a reader uses."""
    path = Path(path)
    return gate_from_json(jsonfile.read(path, ResultsError, MAX_BYTES), path)
