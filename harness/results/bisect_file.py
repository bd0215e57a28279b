"""``bisect.json`` (a bisect's state and report) read back for drawing: every field a view uses is checked here.

Why: ``ttfg report --bisect FILE`` draws a page from a document that may arrive as a CI
artifact, be cut short by a full disk, or be edited by hand. Trusted as it was, a probe
without ``state`` or a comparison with ``"cases": "x"`` ended in a bare ``KeyError`` or
``TypeError`` that named no file. A refusal here names the file and the field
(:class:`~ttfg.results.format.ResultsError`, exit 2), like a release sweep's.

Commit hashes must be hexadecimal: they are drawn into the page's plot and its links,
where a hash is assumed to be nothing but a hash. Subjects, authors, reasons and errors are
text the page escapes (``present/untrusted.py``).

The document is written by ``app/bisect.py``; the words below are the ones it writes.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from . import jsonfile
from .format import ResultsError
from .validate import _Reader

#: The document's format name and the version written.
FORMAT, VERSION = "ttfg-bisect", 1
#: How a bisect ended (``status``), or that it has not yet.
STATUSES = ("found", "range", "no step", "swapped", "undecided", "end cannot run", "stopped", "running",
            "interrupted", "turn")
#: What a tested commit is (a probe's ``state``).
STATES = ("good", "bad", "between", "unknown", "skipped", "turn")
#: A turn's shape (``turns[].shape``): worse than both ends, or better than both.
SHAPES = ("peak", "dip")
#: What one comparison said (the gate's verdicts, and "broken": a side that could not be measured).
VERDICTS = ("regressed", "unchanged", "improved", "inconclusive", "broken")
#: What a comparison compared a commit with.
AGAINST = ("good", "bad", "ends", "parent")
EXIT_CODES = (0, 1, 2)
#: The exit code each ending has (``app/bisect.py`` writes it beside the status): a culprit or the few commits that
#: hide it is a finding, no step passes, the rest is broken input or no answer yet. A state whose ``exit_code``
#: disagrees with its ``status`` is refused: "found" with exit 0 would pass a CI job that found a culprit.
EXIT = {"found": 1, "turn": 1, "range": 1, "no step": 0, "swapped": 2, "undecided": 2, "end cannot run": 2, "stopped": 2,
        "running": 2, "interrupted": 2}
#: A bisect's document is a summary: kilobytes per step; anything near this is no bisect.
MAX_BYTES = 64 * 1024 * 1024

_HEX = re.compile(r"[0-9a-f]{7,64}")


class _BisectReader(_Reader):
    def commit(self, value: Any, where: str) -> str:
        value = self.text(value, where)
        if not _HEX.fullmatch(value):
            raise self.expect(where, "a commit hash (hexadecimal)", value)
        return value

    def word(self, value: Any, where: str, words: tuple) -> str:
        if value not in words:
            raise self.expect(where, "one of " + ", ".join(words), value)
        return value

    def commits(self, value: Any, where: str) -> list[str]:
        return [self.commit(c, f"{where}[{i}]") for i, c in enumerate(self.seq(value, where))]

    def texts(self, value: Any, where: str) -> list[str]:
        return [self.text(t, f"{where}[{i}]") for i, t in enumerate(self.seq(value, where))]

    def commit_info(self, raw: Any, where: str) -> dict:
        raw = self.obj(raw, where)
        self.commit(self.key(raw, "commit", f"{where}."), f"{where}.commit")
        for k in ("short", "subject", "author", "date"):
            self.text(self.key(raw, k, f"{where}."), f"{where}.{k}")
        self.text(raw.get("rev"), f"{where}.rev", optional=True)
        if raw.get("parent") is not None:
            self.commit(raw["parent"], f"{where}.parent")
        return raw

    def case_record(self, raw: Any, where: str) -> None:
        raw = self.obj(raw, where)
        self.text(self.key(raw, "case", f"{where}."), f"{where}.case")
        self.text(self.key(raw, "verdict", f"{where}."), f"{where}.verdict")
        for k in ("tier", "metric", "metric_verdict", "statistic", "stop", "reason"):
            self.text(raw.get(k), f"{where}.{k}", optional=True)
        for k in ("ratio", "ci_low", "ci_high", "base", "head"):
            self.value(raw.get(k), f"{where}.{k}", "number")
        self.value(raw.get("pairs"), f"{where}.pairs", "count")
        self.value(raw.get("counters_fell"), f"{where}.counters_fell", "bool")
        for k, v in self.obj(raw.get("first_error") or {}, f"{where}.first_error").items():
            self.text(v, f"{where}.first_error.{k}", optional=True)

    def attribution(self, raw: Any, where: str) -> None:
        raw = self.obj(raw, where)
        self.text(raw.get("case"), f"{where}.case", optional=True)
        self.text(raw.get("metric"), f"{where}.metric", optional=True)
        phase = raw.get("phase")
        if phase is not None:
            phase = self.obj(phase, f"{where}.phase")
            self.text(self.key(phase, "phase", f"{where}.phase."), f"{where}.phase.phase")
            self.value(phase.get("delta_s"), f"{where}.phase.delta_s", "number")
            self.value(phase.get("ratio"), f"{where}.phase.ratio", "number")
            self.value(phase.get("instructions_delta"), f"{where}.phase.instructions_delta", "number")
        for i, c in enumerate(self.seq(raw.get("counters") or [], f"{where}.counters")):
            at = f"{where}.counters[{i}]"
            c = self.obj(c, at)
            self.text(self.key(c, "metric", f"{at}."), f"{at}.metric")
            for k in ("base", "head"):
                self.value(c.get(k), f"{at}.{k}", "number")
        for i, f in enumerate(self.seq(raw.get("functions") or [], f"{where}.functions")):
            at = f"{where}.functions[{i}]"
            f = self.obj(f, at)
            self.text(self.key(f, "fn", f"{at}."), f"{at}.fn")
            self.text(f.get("file"), f"{at}.file", optional=True)
            self.value(f.get("line"), f"{at}.line", "count")
            self.value(self.key(f, "delta", f"{at}."), f"{at}.delta", "number", optional=False)
            self.text(f.get("unit"), f"{at}.unit", optional=True)
        self.calls_and_lines(raw, where)  # absent before issue 41

    def comparison(self, raw: Any, where: str) -> None:
        raw = self.obj(raw, where)
        self.word(self.key(raw, "against", f"{where}."), f"{where}.against", AGAINST)
        for k in ("base", "head"):
            self.commit(self.key(raw, k, f"{where}."), f"{where}.{k}")
        self.word(self.key(raw, "verdict", f"{where}."), f"{where}.verdict", VERDICTS)
        self.text(raw.get("folder"), f"{where}.folder", optional=True)
        self.text(raw.get("error"), f"{where}.error", optional=True)
        self.value(raw.get("elapsed_s"), f"{where}.elapsed_s", "nonneg")
        self.value(raw.get("reverse"), f"{where}.reverse", "bool")
        for k in ("new_cases", "removed_cases"):  # at the ends: cases only one end provides (not bisected)
            self.texts(raw.get(k) or [], f"{where}.{k}")
        for i, c in enumerate(self.seq(raw.get("cases") or [], f"{where}.cases")):
            self.case_record(c, f"{where}.cases[{i}]")
        for i, a in enumerate(self.seq(raw.get("attribution") or [], f"{where}.attribution")):
            self.attribution(a, f"{where}.attribution[{i}]")
        if raw.get("counts") is not None:
            self.counts(raw["counts"], f"{where}.counts")

    def counts(self, raw: Any, where: str) -> None:
        """A comparison's count processes per side: taken, reused from an earlier comparison, and from which."""
        raw = self.obj(raw, where)
        for role, c in raw.items():
            if role not in ("base", "head"):
                raise self.fail(f"{where}.{role}", "not a side (base or head)")
            c = self.obj(c, f"{where}.{role}")
            for k in ("taken", "reused"):
                self.value(self.key(c, k, f"{where}.{role}."), f"{where}.{role}.{k}", "count", optional=False)
            self.texts(c.get("from") or [], f"{where}.{role}.from")

    def probe(self, raw: Any, where: str, commits: set[str]) -> None:
        raw = self.obj(raw, where)
        commit = self.commit(self.key(raw, "commit", f"{where}."), f"{where}.commit")
        if commit not in commits:
            raise self.fail(f"{where}.commit", f"{commit[:12]} is not one of the range's commits")
        self.word(self.key(raw, "state", f"{where}."), f"{where}.state", STATES)
        attempts = self.value(raw.get("attempts"), f"{where}.attempts", "count")
        if attempts == 0:
            raise self.expect(f"{where}.attempts", "a whole number >= 1", attempts)
        if raw.get("counts_as") is not None:
            self.word(raw["counts_as"], f"{where}.counts_as", ("good", "bad"))
        for i, e in enumerate(self.seq(raw.get("evidence") or [], f"{where}.evidence")):
            self.comparison(e, f"{where}.evidence[{i}]")
        self.text(raw.get("reason"), f"{where}.reason", optional=True)

    def answer(self, raw: Any, commits: set[str], where: str = "answer") -> None:
        raw = self.obj(raw, where)
        self.text(raw.get("status"), f"{where}.status", optional=True)
        for k in ("candidates", "skipped", "unknown"):
            for i, c in enumerate(self.commits(raw.get(k) or [], f"{where}.{k}")):
                if c not in commits:
                    raise self.fail(f"{where}.{k}[{i}]", f"{c[:12]} is not one of the range's commits")
        for k in ("good", "bad"):
            if raw.get(k) is not None:
                self.commit(raw[k], f"{where}.{k}")
        for i, pair in enumerate(self.seq(raw.get("others") or [], f"{where}.others")):
            if len(self.commits(pair, f"{where}.others[{i}]")) != 2:
                raise self.expect(f"{where}.others[{i}]", "two commits", pair)

    def turn(self, raw: Any, where: str, commits: list[str], probed: dict[str, str]) -> None:
        """A turn: a commit found to differ from both ends the opposite ways, its shape, the side searched the
        other way (its ends, in range order, the turn one of them) and that search's probes and answer."""
        raw = self.obj(raw, where)
        shape = self.word(self.key(raw, "shape", f"{where}."), f"{where}.shape", SHAPES)
        at = self.commit(self.key(raw, "commit", f"{where}."), f"{where}.commit")
        if probed.get(at) != "turn":
            raise self.fail(f"{where}.commit", f"{at[:12]} is no probe found to be a turn")
        good, bad = (self.commit(self.key(raw, k, f"{where}."), f"{where}.{k}") for k in ("good", "bad"))
        index = {c: i for i, c in enumerate(commits)}
        for k, c in (("good", good), ("bad", bad)):
            if c not in index:
                raise self.fail(f"{where}.{k}", f"{c[:12]} is not one of the range's commits")
        if index[good] >= index[bad] or at != (good if shape == "peak" else bad):
            raise self.fail(where, "expected the turn's other side: from a peak to a later commit, or from an "
                                   "earlier commit to a dip")
        side = set(commits[index[good]:index[bad] + 1])
        for i, p in enumerate(self.seq(raw.get("probes") or [], f"{where}.probes")):
            self.probe(p, f"{where}.probes[{i}]", side)
        if raw.get("answer") is not None:
            self.answer(raw["answer"], side, f"{where}.answer")
        for k in ("repro", "command"):
            self.text(raw.get(k), f"{where}.{k}", optional=True)
        if raw.get("step") is not None:
            self.commit_info(raw["step"], f"{where}.step")
        for i, c in enumerate(self.seq(raw.get("candidates") or [], f"{where}.candidates")):
            self.commit_info(c, f"{where}.candidates[{i}]")


def bisect_from_json(doc: Any, path: str | Path) -> dict:
    """``doc`` (a parsed ``bisect.json``) checked field by field; returned as it is.

    Raises
    ------
    ResultsError
        Naming the file and the field.
    """
    r = _BisectReader(path)
    doc = r.header(doc, FORMAT, VERSION, "a ttfg bisect")
    status = r.word(r.key(doc, "status", ""), "status", STATUSES)
    code = r.key(doc, "exit_code", "")
    if type(code) is not int or code not in EXIT_CODES:  # 1.0 == 1 and True == 1: neither is an exit code
        raise r.expect("exit_code", "0, 1 or 2 (a whole number)", code)
    if code != EXIT[status]:
        raise r.fail("exit_code", f"{code} disagrees with status {status!r}, whose exit code is {EXIT[status]}")
    if doc.get("key") is not None:  # what a rerun must match (``app/bisect_state.py``); absent before issue 40
        key = r.obj(doc["key"], "key")
        if key.get("settings") is not None:
            r.obj(key["settings"], "key.settings")
    good, bad = (r.commit_info(r.key(doc, k, ""), k) for k in ("good", "bad"))
    commits = r.commits(r.key(doc, "commits", ""), "commits")
    if not commits or commits[0] != good["commit"] or commits[-1] != bad["commit"]:
        raise r.fail("commits", "expected the range from the good end to the bad end")
    in_range = set(commits)
    for i, m in enumerate(r.commits(doc.get("merges") or [], "merges")):
        if m not in in_range:
            raise r.fail(f"merges[{i}]", f"{m[:12]} is not one of the range's commits")
    r.value(doc.get("improvement"), "improvement", "bool")
    r.texts(doc.get("cases") or [], "cases")
    for i, s in enumerate(r.seq(doc.get("skipped_cases") or [], "skipped_cases")):
        s = r.obj(s, f"skipped_cases[{i}]")
        r.text(s.get("case"), f"skipped_cases[{i}].case")
        r.text(s.get("reason"), f"skipped_cases[{i}].reason", optional=True)
    settings = r.obj(doc.get("settings") or {}, "settings")
    r.texts(settings.get("tiers") or [], "settings.tiers")
    for k in ("budget_s", "total_budget_s"):
        r.value(settings.get(k), f"settings.{k}", "nonneg")
    r.value(settings.get("retries"), "settings.retries", "count")
    r.texts(doc.get("repro_args") or [], "repro_args")
    if doc.get("step_cases") is not None:
        r.texts(doc["step_cases"], "step_cases")
    for k in ("ends", "culprit_evidence"):
        if doc.get(k) is not None:
            r.comparison(doc[k], k)
    for i, p in enumerate(r.seq(doc.get("probes") or [], "probes")):
        r.probe(p, f"probes[{i}]", in_range)
    probed = {p["commit"]: p["state"] for p in doc.get("probes") or []}
    for i, t in enumerate(r.seq(doc.get("turns") or [], "turns")):
        r.turn(t, f"turns[{i}]", commits, probed)
    r.value(doc.get("more_time"), "more_time", "bool")
    r.value(doc.get("elapsed_s"), "elapsed_s", "nonneg")
    if doc.get("answer") is not None:
        r.answer(doc["answer"], in_range)
    for k in ("why", "repro"):
        r.text(doc.get(k), k, optional=True)
    if doc.get("culprit") is not None:
        r.commit_info(doc["culprit"], "culprit")
    for i, c in enumerate(r.seq(doc.get("candidates") or [], "candidates")):
        r.commit_info(c, f"candidates[{i}]")
    for i, o in enumerate(r.seq(doc.get("others") or [], "others")):
        o = r.obj(o, f"others[{i}]")
        for k in ("good", "bad"):
            r.commit(r.key(o, k, f"others[{i}]."), f"others[{i}].{k}")
        r.text(r.key(o, "command", f"others[{i}]."), f"others[{i}].command")
    if status == "turn" and not doc.get("turns"):
        raise r.fail("turns", "status 'turn' names no turn")
    if status in ("found", "turn"):  # what the conclusion names
        r.obj(r.key(doc, "culprit", ""), "culprit")
        r.text(r.key(doc, "repro", ""), "repro")
    if status == "range":
        if not r.seq(r.key(doc, "candidates", ""), "candidates"):
            raise r.expect("candidates", "the commits the culprit can be", [])
        r.text(r.key(doc, "repro", ""), "repro")
    return doc


def load_bisect(path: str | Path) -> dict:
    """A ``bisect.json`` written by ``ttfg bisect``, checked (:func:`bisect_from_json`).

    Raises
    ------
    ResultsError
        When it cannot be read, is not strict JSON (``jsonfile``: NaN and Infinity are refused), or a field is
        wrong, naming the file and the field.
    """
    path = Path(path)
    return bisect_from_json(jsonfile.read(path, ResultsError, MAX_BYTES), path)


__all__ = ["AGAINST", "EXIT", "EXIT_CODES", "FORMAT", "SHAPES", "STATES", "STATUSES", "VERDICTS", "VERSION", "bisect_from_json",
           "load_bisect"]
