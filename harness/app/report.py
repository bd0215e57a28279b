"""``ttfg report`` and ``ttfg regressions`` as use cases: load the inputs, analyse the trends, confirm steps.

Why here and not in the page: finding the steps in a history (``history.trends.analyse``)
and marking them confirmed or not reproduced (``history.confirm``) is analysis; the HTML
page (``present/report.py``) and the regressions table only show what this module hands
them, a :class:`~ttfg.present.report.Prepared`. ``cli/report.py`` parses the options,
calls :func:`report` or :func:`regressions` (and :func:`confirm_steps` for
``--confirm``), and prints.

History comes from asv results through ``ttfg.history.asv_results.load`` when the
results folder exists; it may be missing, and the commands then say so and work from
results files alone.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable

from .. import fmt
from ..errors import UsageError
from ..files import atomic_write_text
from ..history.asv_conf import load_config
from ..history.steps import DEFAULT_MIN_CHANGE
from ..provision.worktrees import repo_root
from ..present import study_views
from ..results.jsonfile import sniff_format
from ..results.machines import check_machines
from ..results.record import load

if TYPE_CHECKING:  # pandas and what builds on it load when a command runs, not when ``ttfg`` starts
    import pandas as pd

    from ..present.report import Prepared
    from ..present.report_sections import GateAttributions
    from ..results.gate_document import GateDocument

DEFAULT_RESULTS = "results"


@dataclass
class Inputs:
    """What both commands read: results files, the asv history and how to cut and analyse it."""

    runs: list[str] = field(default_factory=list)   # results files or folders of them (``--runs``)
    results: str | None = None                      # the asv results folder (``--results``)
    last: int | None = None
    threshold: float = DEFAULT_MIN_CHANGE
    machine: str | None = None
    environment: str | None = None
    confirmations: str | None = None                # the confirmations file (``--confirmations``)
    force: bool = False
    skip_bad_history: bool = False


@dataclass
class Analysed:
    """The analysed inputs for the page or the table; ``gap``: unreadable history files were left out (exit 2)."""

    prepared: Prepared
    gap: bool
    with_history: bool
    notes: list[str]                # what loading said (``ttfg report`` has them in ``prepared.notes``)
    stored_path: Path               # the confirmations file: ``--confirm`` saves there


def prepare(history_df: pd.DataFrame | None = None, runs: Iterable = (), *, last: int | None = None,
            threshold: float = DEFAULT_MIN_CHANGE, machine: str | None = None,
            confirmations: dict | None = None, gate: GateDocument | None = None,
            environment: str | None = None) -> Prepared:
    """Points and detected steps from asv history when given, else from the results files.

    ``confirmations``: stored re-measurements of timing steps (``ttfg.history.confirm``),
    by step key; they mark the steps confirmed or not reproduced.

    Results files of ``ttfg study`` feed the Studies section only. Their cases are
    sweeps and arms of one experiment (``resnet15:blocks=60``, ``chain=scan``) under the
    study's own settings, not a commit's regular measurement: as trend points they
    would add a one-point "model" per depth and mix a study's arms into the history, and
    as the "latest run" they would replace the run the phase and cache sections are about.
    """
    from ..history import confirm
    from ..history.points import ReportInputError, from_history, from_runs, keep_last
    from ..history.steps import measured_runs_on
    from ..history.trends import analyse
    from ..present.report import Prepared

    runs, studies = study_views.split_runs(runs)
    notes: list[str] = []
    if studies:
        notes.append(f"{len(studies)} study file(s) shown under Studies only, not in the trends or latest-run sections")
    history = None
    if history_df is not None and len(history_df):
        history = from_history(history_df, machine=machine, environment=environment)
        notes += history.notes
    if history is not None and len(history.points):
        points, source = history.points, "asv history"
        if runs:
            notes.append("trends come from the asv history, shown apart below this run")
    else:
        if history_df is not None:
            notes.append("the asv history holds no results; trends come from the results files")
        points, source = from_runs(runs), "results files"
    if not len(points) and not runs and not studies and not gate:
        raise ReportInputError("nothing to report: no asv history and no results files "
                               "(pass --runs FILE from `ttfg run --out FILE`, or point --results at asv results)")
    if last is not None and last < 1:
        raise ReportInputError(f"--last must be >= 1, got {last}")
    points = keep_last(points, last)
    # What the cases' processes loaded, as the results files recorded it: it tells which counts repeat.
    trends = analyse(points, threshold, runs_on=measured_runs_on(runs))
    if confirmations:
        trends = confirm.apply(trends, confirmations)
    if trends.dismissed:
        notes.append(f"{trends.dismissed} timing step(s) proposed by the commits' levels were left out: the samples on "
                     "their two sides do not differ significantly")
    return Prepared(points, trends, history, runs, notes, source, studies, gate)


def report(inputs: Inputs) -> Analysed:
    """``ttfg report``: the results files (a gate's folder: its outcome too) and, when asked, the history, analysed.

    The default ``results/`` is read only with ``--results`` when ``--runs`` are given: the
    page is about the run, and a history from another machine would be mixed in.
    """
    from ..history import confirm

    notes: list[str] = []
    gates: list[Path] = []
    history, runs, gap = load_inputs(inputs, notes, gates, history_with_runs=False)
    gate = newest_gate(gates)
    stored_path = confirmations_path(inputs)
    prepared = prepare(history, runs, last=inputs.last, threshold=inputs.threshold, machine=inputs.machine,
                       confirmations=confirm.load(stored_path), gate=gate, environment=inputs.environment)
    prepared.notes[:0] = notes
    return Analysed(prepared, gap, history is not None, notes, stored_path)


def regressions(inputs: Inputs, confirming: bool = False) -> Analysed:
    """``ttfg regressions``: the history (``results/`` by default) and the results files, analysed.

    ``confirming``: ``--confirm`` was asked; a gap in the history (unreadable files) says it will not be.
    """
    from ..history import confirm

    notes: list[str] = []
    history, runs, gap = load_inputs(inputs, notes)
    if gap and confirming:
        notes.append("not confirming: re-measuring steps next to a missing commit could confirm the gap")
    stored_path = confirmations_path(inputs)
    prepared = prepare(history, runs, last=inputs.last, threshold=inputs.threshold, machine=inputs.machine,
                       confirmations=confirm.load(stored_path), environment=inputs.environment)
    return Analysed(prepared, gap, history is not None, notes, stored_path)


def write_page(prepared: Prepared, out: str | os.PathLike, asv_html: str | os.PathLike | None = None, *,
               back: int = 10, threshold: float = DEFAULT_MIN_CHANGE, commit_url: str | None = None) -> Path:
    """Hand the analysed data to the page and write it to ``out`` atomically; the path written."""
    from ..present.report import asv_link_for, render

    out = Path(out)
    html = render(prepared, asv_link=asv_link_for(out, asv_html), back=back, threshold=threshold,
                  commit_url=commit_url, attribution=gate_attributions(prepared.runs, prepared.gate))
    return atomic_write_text(out, html)  # readers see the old page or the new one, never half


def gate_pair(runs: list):
    """The newest gate's base and head results files among ``runs`` (same folder preferred), or None."""
    heads = [r for r in runs if r.gate is not None and r.gate.role == "head"]
    bases = [r for r in runs if r.gate is not None and r.gate.role == "base"]
    if not heads or not bases:
        return None
    head = max(heads, key=lambda r: r.created)
    folder = Path(head.path).parent if head.path else None
    near = [b for b in bases if folder is not None and b.path and Path(b.path).parent == folder]
    return max(near or bases, key=lambda r: r.created), head


def gate_attributions(runs: list, gate: GateDocument | None = None) -> GateAttributions | None:
    """Where the change went between a gate's base and head among ``runs`` (None when there is no such pair).

    The attributions the gate made (its regressed cases', in ``gate.json`` when that gate's outcome was given)
    are taken as they are, never made again: a warm gate's, for one, came from its warm samples, which a second
    attribution from the cold ones would contradict. Every other case common to both files is attributed
    from its samples, by the gated timing.
    """
    from .. import metrics
    from ..decide.attribution import attribute_results
    from ..present.report_sections import GateAttributions
    from .explain import stored_base_said

    pair = gate_pair(runs)
    if pair is None:
        return None
    base, head = pair
    labels = f"{base.gate.rev} ({base.gate.commit[:10]})", f"{head.gate.rev} ({head.gate.commit[:10]})"
    metric = (base.gate.settings or {}).get("metric")
    if not isinstance(metric, str) or metric not in metrics.METRICS or metrics.get(metric).deterministic:
        metric = "first_grad_s"
    held, outcome = {}, None
    if gate is not None and (gate.outcome.base.commit, gate.outcome.head.commit) == (base.gate.commit,
                                                                                     head.gate.commit):
        held, outcome = gate.outcome.attributions, gate.outcome
    try:
        found = attribute_results(base, head, metric=metric, held=held)
        return GateAttributions(*labels, [stored_base_said(a, outcome) for a in found])
    except UsageError as exc:
        return GateAttributions(*labels, note=str(exc))


def repository(path: str | os.PathLike) -> Path:
    """The git repository of the history's commits (``--repo``), checked before anything is measured."""
    return repo_root(path)


@dataclass
class BisectRange:
    """A counted regression step whose two commits are more than one commit apart: what ``ttfg bisect`` narrows."""

    case: str
    metric: str
    label_before: str
    label_after: str
    good: str
    bad: str
    #: Commits after ``good`` up to ``bad`` on bad's first-parent line.
    commits: int
    model: str
    backend: str
    variant: str


def bisect_ranges(prepared: Prepared, path: str | os.PathLike) -> list[BisectRange]:
    """Each counted regression step whose ends are more than one first-parent commit apart in the repository at
    ``path`` (steps whose commits the repository does not have, or no repository at all, are left out)."""
    from ..provision.worktrees import GitError, git

    steps = prepared.trends.counted()
    if not len(steps):
        return []
    try:
        repo = repo_root(path)
    except GitError:
        return []
    out = []
    for r in steps[steps["kind"] == "regression"].itertuples(index=False):
        before, after = str(r.commit_before or ""), str(r.commit_after or "")
        if not before or not after:
            continue
        counted = git(repo, "rev-list", "--count", "--first-parent", f"{before}..{after}", check=False)
        if counted.returncode != 0 or not counted.stdout.strip().isdigit():
            continue
        n = int(counted.stdout.strip())
        if n > 1:
            out.append(BisectRange(r.case, r.metric, str(r.label_before), str(r.label_after), before, after, n,
                                   str(r.model), str(r.backend), str(r.variant)))
    return out


@dataclass
class Confirmed:
    """What ``--confirm`` did: the steps re-measured, the entries now stored and where, the commits missing."""

    found: list
    entries: dict
    path: Path
    missing: list[str]


def confirm_steps(prepared: Prepared, repo: Path, budget_s: float, out_dir: str | os.PathLike, stored_path: Path, *,
                  redo: bool, max_steps: int | None, project_dir: Callable[[], str],
                  on_note: Callable[[str], None]) -> Confirmed:
    """Re-measure the unconfirmed timing steps with the gate, saving the outcomes after each gate run, and
    re-apply them to ``prepared.trends``.

    The caller holds the confirmations file's one-writer lock around this call: the entries
    are read here, under it, so they are the latest on disk. ``project_dir``: the project's
    folder in the repository, asked for once the file is read.
    """
    from ..history import confirm

    missing: list[str] = []

    def note(text: str) -> None:
        on_note(text)
        if text.startswith("cannot confirm"):
            missing.append(text)

    saved = {"entries": confirm.load(stored_path), "path": stored_path}

    def save(new: list) -> None:
        saved["entries"] = confirm.merge(saved["entries"], new)
        saved["path"] = confirm.save(stored_path, saved["entries"])

    found = confirm.confirm(prepared.trends, repo, budget_s, out_dir, redo=redo, max_steps=max_steps, on_note=note,
                            on_done=save, project_dir=project_dir())
    if found:
        confirm.apply(prepared.trends, saved["entries"])
    return Confirmed(found, saved["entries"], saved["path"], missing)


def confirmations_path(inputs: Inputs) -> Path:
    """``--confirmations``, else ``confirmations.json`` in the history's folder."""
    from ..history import confirm

    return (Path(inputs.confirmations) if inputs.confirmations
            else confirm.path_for(inputs.results or default_results()))


#: What ttfg writes besides results files, by the ``format`` field; a folder given to
#: ``--runs`` (a gate's ``--out-dir``) holds these beside base.json and head.json.
OTHER_OUTPUTS = {"ttfg-gate": "a gate outcome", "ttfg-comparison": "a comparison",
                 "ttfg-expectations-check": "an expectations check", "ttfg-explain": "an attribution (ttfg explain)"}


def _output_kind(path: Path) -> str | None:
    """The kind of a ttfg output that is not a results file, read from its first bytes."""
    return OTHER_OUTPUTS.get(sniff_format(path))


GATE_KIND = OTHER_OUTPUTS["ttfg-gate"]


def run_files(paths: list[str], notes: list[str] | None = None, gates: list[Path] | None = None) -> list[Path]:
    """Results files named directly or found in folders; a folder's other ttfg outputs
    (gate.json and the like) are skipped by kind, with a note. A gate's outcome goes to
    ``gates`` when given (the report states its verdict), else it is skipped like the others."""
    files: list[Path] = []
    for name in paths:
        path = Path(name)
        if path.is_dir():
            found = []
            for candidate in sorted(path.glob("*.json")):
                kind = _output_kind(candidate)
                if kind == GATE_KIND and gates is not None:
                    gates.append(candidate)
                elif kind:
                    if notes is not None:
                        notes.append(f"{candidate}: {kind}, not a results file; skipped")
                    continue
                else:
                    found.append(candidate)
            if not found:
                raise UsageError(f"{path}: folder holds no results files (*.json)")
            files += found
        elif gates is not None and path.is_file() and _output_kind(path) == GATE_KIND:
            gates.append(path)
        else:
            files.append(path)  # a missing file is reported by record.load, by name
    return files


def newest_gate(paths: list[Path]) -> GateDocument | None:
    """The newest gate outcome among ``paths`` (``gate.json``), read by its one reader (``gate_file.load``:
    checked, older files migrated); bad input names the file and the field."""
    from ..results import gate_file

    docs = [(path.stat().st_mtime, gate_file.load(path)) for path in paths]
    return max(docs, key=lambda d: d[0])[1] if docs else None


def load_inputs(inputs: Inputs, notes: list[str], gates: list[Path] | None = None, history_with_runs: bool = True):
    """``(history frame or None, [Results], gap)`` from the command's inputs; notes say what was skipped.

    ``gap``: asv result files that could not be read were left out without ``--skip-bad-history``;
    the caller still reports the rest and exits 2. ``gates``: receives the gate outcomes found
    among ``--runs``. ``history_with_runs``: read the default ``results/`` even when ``--runs``
    were given (``ttfg regressions``); the report reads it then only when ``--results`` asks.
    """
    from ..history import asv_results

    runs = [load(path) for path in run_files(inputs.runs, notes, gates)]
    measured = [r for r in runs if r.study is None]  # a study's file only feeds its own section
    if len(measured) > 1:
        notes += check_machines([(str(r.path), r.fingerprint) for r in measured], "timings",
                                inputs.force, action="report")
    folder = Path(inputs.results or default_results())
    if not inputs.results and inputs.runs and not history_with_runs:
        if folder.is_dir():
            notes.append(f"the asv history in {folder}/ is not shown (it may come from another machine): "
                         f"--results {folder} adds it, in a part of its own below the run")
        return None, runs, False
    if not folder.is_dir():
        if inputs.results:
            raise UsageError(f"--results {folder}: no such folder")
        notes.append(f"no asv history ({folder}/ does not exist); trends come from the results files")
        return None, runs, False
    history = asv_results.load(folder, dropna=True, skip_bad=True)  # n/a values make no point
    skipped = history.attrs.get("skipped_files", [])
    for bad in skipped:
        notes.append(f"left out an unreadable history file, its commit missing from these trends: {bad}")
    gap = bool(skipped) and not inputs.skip_bad_history
    if gap:
        notes.append(f"exit 2: {fmt.plural(len(skipped), 'history file')} in {folder}/ cannot be read; repair or remove them "
                     "(--skip-bad-history accepts the gap)")
    if not len(history):
        if skipped and not runs:  # nothing left to report: the files left out are the whole story
            raise asv_results.HistoryError(f"nothing to report: every history file in {folder}/ was left out: "
                                           + "; ".join(skipped))
        notes.append(f"asv history in {folder}/ is empty")
        return None, runs, gap
    return history, runs, gap


def default_results() -> str:
    """The asv results folder when ``--results`` is not given: ``results_dir`` of ./asv.conf.json (what
    ``ttfg init`` writes says ``.asv/results``), else ``results``."""
    conf = Path("asv.conf.json")
    if conf.is_file():
        try:
            folder = load_config(conf).get("results_dir")
        except UsageError:
            folder = None
        if isinstance(folder, str) and folder:
            return folder
    return DEFAULT_RESULTS


def commit_url(template: str | None) -> str | None:
    """``--commit-url`` (``template``), checked; else asv.conf.json's ``show_commit_url`` (hash appended)."""
    if template:
        if not template.startswith(("https://", "http://")) or "{sha}" not in template:
            raise UsageError(f"--commit-url {template!r}: expected an http(s) URL with {{sha}}, e.g. "
                             "'https://github.com/OWNER/REPO/commit/{sha}'")
        return template
    conf = Path("asv.conf.json")
    if conf.is_file():
        try:
            url = load_config(conf).get("show_commit_url")
        except UsageError:
            return None
        if isinstance(url, str) and url.startswith(("https://", "http://")):
            return url
    return None


def build_report(history_df: pd.DataFrame | None = None, runs: Iterable = (), out: str | os.PathLike = "reports/index.html",
                 asv_html: str | os.PathLike | None = None, *, last: int | None = None, back: int = 10,
                 threshold: float = DEFAULT_MIN_CHANGE, machine: str | None = None,
                 confirmations: dict | None = None, commit_url: str | None = None) -> Path:
    """Write the report to ``out`` (one self-contained HTML file) and return its path.

    ``history_df``: asv history in ``ttfg.history.asv_results.load``'s schema, or None.
    ``runs``: loaded ``Results``; they make the trends when there is no history and
    always feed the environment, phase and cold/warm sections. ``last``: newest N
    commits only. ``back``: the summary's second comparison, N commits back.
    ``threshold``: smallest relative step reported (counters use 1 %).
    """
    prepared = prepare(history_df, runs, last=last, threshold=threshold, machine=machine, confirmations=confirmations)
    return write_page(prepared, out, asv_html, back=back, threshold=threshold, commit_url=commit_url)


__all__ = ["BisectRange", "bisect_ranges", "Analysed", "Confirmed", "DEFAULT_RESULTS", "Inputs", "build_report", "commit_url", "confirm_steps",
           "gate_attributions", "gate_pair",
           "confirmations_path", "default_results", "load_inputs", "newest_gate", "prepare", "regressions", "report",
           "repository", "run_files", "write_page"]
