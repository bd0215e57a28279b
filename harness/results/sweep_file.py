"""``releases.json`` (a release sweep) read back: every field a reader uses is checked here, once.

Why: ``ttfg regressions --releases`` and ``ttfg report --releases`` read sweeps that arrive
as CI artifacts or are edited by hand. Trusted as they were, a pair lacking ``head``
ended in a bare ``KeyError``, ``"wall": "fast"`` or ``"pairs": [1, 2]`` in an
``AttributeError``, and an integer version was taken as a release: internal errors that
named no file, exit codes that broke the contract. A refusal here names the file and the
field (:class:`~ttfg.results.format.ResultsError`, exit 2), like a results file's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import jsonfile
from .format import ResultsError
from .validate import _Reader

#: The sweep document's format name and the version written.
FORMAT, VERSION = "ttfg-releases", 1
VERDICTS = ("regressed", "improved", "unchanged", "inconclusive")
EXIT_CODES = (0, 1, 2)
#: A sweep is a summary: kilobytes per release; anything near this is no sweep.
MAX_BYTES = 64 * 1024 * 1024


class _SweepReader(_Reader):
    def numbers(self, raw: Any, where: str, keys: tuple[str, ...], kind: str = "number") -> None:
        raw = self.obj(raw, where)
        for k in keys:
            self.value(raw.get(k), f"{where}.{k}", kind)

    def verdict(self, raw: Any, where: str) -> None:
        if raw is None:
            return
        raw = self.obj(raw, where)
        word = raw.get("verdict")
        if word is not None and word not in VERDICTS:
            raise self.expect(f"{where}.verdict", "one of " + ", ".join(VERDICTS), word)
        for k in ("ratio", "ci_low", "ci_high", "p_value", "margin", "detectable", "detectable_high", "base", "head"):
            self.value(raw.get(k), f"{where}.{k}", "number")

    def release(self, raw: Any, where: str) -> str:
        raw = self.obj(raw, where)
        version = self.text(self.key(raw, "version", f"{where}."), f"{where}.version")
        self.text(self.key(raw, "name", f"{where}."), f"{where}.name")
        for i, line in enumerate(self.seq(raw.get("requirements") or [], f"{where}.requirements")):
            self.text(line, f"{where}.requirements[{i}]")
        self.text(raw.get("error"), f"{where}.error", optional=True)
        env = raw.get("env")
        if env is not None:
            env = self.obj(env, f"{where}.env")
            for name, v in self.obj(env.get("versions") or {}, f"{where}.env.versions").items():
                self.text(v, f"{where}.env.versions.{name}", optional=True)
        for case, cell in self.obj(raw.get("cells") or {}, f"{where}.cells").items():
            at = f"{where}.cells.{case}"
            cell = self.obj(cell, at)
            self.value(cell.get("samples"), f"{at}.samples", "count")
            self.numbers(cell, at, ("first_grad_s", "first_grad_cpu_s", "process_ttfg_s", "import_s", "build_s"),
                         "nonneg")
            self.numbers(cell.get("phases") or {}, f"{at}.phases", tuple((cell.get("phases") or {})), "nonneg")
            self.numbers(cell.get("counters") or {}, f"{at}.counters", tuple((cell.get("counters") or {})))
        return version

    def pair(self, raw: Any, where: str, versions: set[str], cases: set[str]) -> None:
        raw = self.obj(raw, where)
        for role in ("base", "head"):
            version = self.text(self.key(raw, role, f"{where}."), f"{where}.{role}")
            if version not in versions:
                raise self.fail(f"{where}.{role}", f"{version!r} is not one of the sweep's releases")
        case = self.text(self.key(raw, "case", f"{where}."), f"{where}.case")
        if case not in cases:
            raise self.fail(f"{where}.case", f"{case!r} is not one of the sweep's cases")
        word = self.key(raw, "verdict", f"{where}.")
        if word not in VERDICTS:
            raise self.expect(f"{where}.verdict", "one of " + ", ".join(VERDICTS), word)
        for k in ("tier", "stop"):
            self.text(raw.get(k), f"{where}.{k}", optional=True)
        self.value(raw.get("pairs"), f"{where}.pairs", "count")
        self.value(raw.get("wall_s"), f"{where}.wall_s", "nonneg")
        self.verdict(raw.get("wall"), f"{where}.wall")
        self.verdict(raw.get("cpu"), f"{where}.cpu")
        for phase, moved in self.obj(raw.get("phases") or {}, f"{where}.phases").items():
            self.numbers(moved, f"{where}.phases.{phase}", ("base", "head", "ratio"), "nonneg")
        counted = raw.get("instructions")
        if counted is not None:
            for name, v in self.obj(counted, f"{where}.instructions").items():
                self.verdict(v, f"{where}.instructions.{name}")


def sweep_from_json(doc: Any, path: str | Path) -> dict:
    """``doc`` (a parsed ``releases.json``) checked field by field; returned as it is.

    Raises
    ------
    ResultsError
        Naming the file and the field.
    """
    r = _SweepReader(path)
    doc = r.header(doc, FORMAT, VERSION, "a release sweep")
    r.text(r.key(doc, "package", ""), "package")
    cases = {r.text(c, f"cases[{i}]") for i, c in enumerate(r.seq(r.key(doc, "cases", ""), "cases"))}
    versions = {r.release(e, f"releases[{i}]") for i, e in enumerate(r.seq(r.key(doc, "releases", ""), "releases"))}
    for i, p in enumerate(r.seq(r.key(doc, "pairs", ""), "pairs")):
        r.pair(p, f"pairs[{i}]", versions, cases)
    for i, note in enumerate(r.seq(doc.get("notes") or [], "notes")):
        r.text(note, f"notes[{i}]")
    settings = r.obj(doc.get("settings") or {}, "settings")
    r.value(settings.get("budget_per_pair_s"), "settings.budget_per_pair_s", "nonneg")
    load = r.obj(doc.get("load") or {}, "load")
    for k in ("start", "end"):
        for i, v in enumerate(r.seq(load.get(k) or [], f"load.{k}")):
            r.value(v, f"load.{k}[{i}]", "nonneg")
    r.value(doc.get("wall_s"), "wall_s", "nonneg")
    r.value(doc.get("complete"), "complete", "bool")
    code = doc.get("exit_code")
    if code is not None and (type(code) is not int or code not in EXIT_CODES):  # 1.0 == 1, True == 1: no exit codes
        raise r.expect("exit_code", "0, 1 or 2 (a whole number)", code)
    return doc


def load_sweep(path: str | Path) -> dict:
    """A ``releases.json`` written by ``ttfg releases``, checked (:func:`sweep_from_json`).

    Raises
    ------
    ResultsError
        When it cannot be read, is not strict JSON (``jsonfile``: NaN and Infinity are refused), or a field is
        wrong, naming the file and the field.
    """
    path = Path(path)
    return sweep_from_json(jsonfile.read(path, ResultsError, MAX_BYTES), path)


__all__ = ["FORMAT", "VERSION", "load_sweep", "sweep_from_json"]
