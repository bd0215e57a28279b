"""One comparison of a bisect: a gate of two commits turned into the search's record, and one step of the search.

Why a module of its own: ``app/bisect.py`` walks the range, keeps the state and writes the outputs; what a
comparison measures and how its outcome reads (a verdict per case, the culprit's attribution, a step's two
comparisons in tier order) is this module's job, and the bisect's tests fake it as a whole (``Compare``).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ..decide import bisect as search
from ..decide.gate_loop import run_gate
from ..measure.sides import SameCode, SideOpener
from ..measure.runner import run_sample
from ..provision.sources import InstallError
from ..provision.environments import EnvError
from ..provision.worktrees import Revision
from ..results.gate_outcome import BASE_BROKEN, COUNT_BROKEN, HEAD_BROKEN, HEAD_FAILING
from .bisect_counts import CountStore, origin_label
from .gate_baseline import for_comparison

if TYPE_CHECKING:
    from ..decide.gate_loop import Sampler
    from ..measure.cases import Case
    from ..results.gate_outcome import GateOutcome

#: A step's stop reasons that make a commit untestable (skipped).
_UNTESTABLE = (BASE_BROKEN, HEAD_BROKEN, HEAD_FAILING, COUNT_BROKEN)


# ---------------------------------------------------------------------------- one comparison


def _case_record(c, metric: str) -> dict:
    fig = c.figure
    guard = next((g for g in c.guards if g.metric == metric), None)
    return {"case": c.case, "verdict": c.verdict.verdict, "tier": c.tier, "metric": c.metric,
            "metric_verdict": guard.verdict.verdict if guard is not None else None,
            "ratio": fig.ratio if fig else None, "ci_low": fig.ci_low if fig else None,
            "ci_high": fig.ci_high if fig else None, "base": fig.base if fig else None,
            "head": fig.head if fig else None, "statistic": fig.statistic if fig else "", "pairs": c.pairs,
            "stop": c.stop, "reason": c.verdict.reason, "first_error": dict(c.first_error),
            "counters_fell": counters_only_fell(c)}


def counters_only_fell(c) -> bool:
    """Whether a case nothing settled had structural counters that only fell (the structural tier's unsettled
    "improved"), with no tier finding it grew: for the bisect a step the other way (a turn's evidence)."""
    if c.verdict.verdict != search.INCONCLUSIVE:
        return False
    steps = list(getattr(c, "trail", None) or [])
    return (any(t.tier == "structural" and t.verdict == search.IMPROVED for t in steps)
            and not any(t.verdict == search.REGRESSED for t in steps))


def _verdict(outcome: "GateOutcome", step_cases: set[str] | None) -> tuple[str, list[dict]]:
    from ..decide.unmeasured import side_of

    chosen = [c for c in outcome.cases if step_cases is None or c.case in step_cases]
    records = [_case_record(c, outcome.settings.metric) for c in chosen]
    # A side with no good sample (``decide/unmeasured.py``) is never "unchanged": the commit is untestable.
    verdicts = [search.BROKEN if r["stop"] in _UNTESTABLE or side_of(c)
                else search.IMPROVED if step_cases is not None and r["counters_fell"] else r["verdict"]
                for r, c in zip(records, chosen)]
    return search.combined(verdicts), records


class _Comparer:
    """Runs one comparison (a gate of two commits) and turns it into the search's record.

    Its samples go through ``counts`` (``app/bisect_counts.py``): a commit's count taken by an
    earlier comparison is reused, and the record says how many count processes each side had
    and which came from where (``counts``). ``request`` and ``events`` are the bisect's
    (``app.bisect.BisectRequest`` and ``BisectEvents``: not imported, the bisect imports this module).
    """

    def __init__(self, request, repo: Path, events, clock, counts: CountStore,
                 sampler: "Sampler" = run_sample, opener: SideOpener | None = None, store=None):
        #: The count store shared with the gate (``results/count_store.py``), None when off.
        self.store = store
        self.request, self.repo, self.events, self.clock = request, repo, events, clock
        self.counts, self.sampler, self.opener = counts, sampler, opener or SideOpener()

    def __call__(self, older: Revision, newer: Revision, against: str, folder: Path, cases: "list[Case]",
                 step_cases: set[str] | None, profiles: bool = False, tiers: tuple[str, ...] | None = None) -> dict:
        """One gate of ``older`` (base) and ``newer`` (head), swapped with ``--improvement``; sampled stacks
        only when ``profiles`` (the culprit's attribution), never on the search's steps."""
        from ..results.gate_file import save
        from ..results.gate_document import document

        r = self.request
        settings = r.settings if profiles else replace(r.settings, profiles=0)
        if tiers is not None:
            settings = replace(settings, tiers=tiers)
        base, head = (newer, older) if r.improvement else (older, newer)
        started = self.clock()
        record = {"against": against, "base": base.commit, "head": head.commit, "folder": str(folder)}
        taking = baseline = None
        try:
            plan = self.opener.plan(self.repo, base, head, None, None, r.envs, r.project_dir)
            with self.opener.open(self.repo, {"base": base, "head": head}, cases, settings.run, plan.requests,
                                  on_note=self.events.note, prefix="ttfg-bisect-", project_dir=r.project_dir) as sides:
                common, missing = self._provided(cases, sides, older, newer, against, record)
                if missing:
                    return {**record, "verdict": search.BROKEN, "error": missing, "cases": [],
                            "elapsed_s": self.clock() - started}
                label = origin_label(folder, r.out_dir)
                taking = self.counts.sampler(self.sampler, sides, label, self.events.note)
                baseline = for_comparison(self.store, sides["base"], sides["head"], settings.run, self.events.note,
                                          f"bisect ({label})")
                outcome = run_gate(common, [], sides["base"], sides["head"], settings, folder,
                                   on_note=self.events.note, sampler=taking, clock=self.clock, baseline=baseline)
            save(folder / "gate.json", document(outcome))  # ttfg explain reads the comparison from it
        except (InstallError, EnvError, SameCode) as exc:
            return {**record, "verdict": search.BROKEN, "error": str(exc).split("\n")[0][:500], "cases": [],
                    "elapsed_s": self.clock() - started}
        if taking is not None and (counted := taking.record()) is not None:
            record["counts"] = counted
        if baseline is not None and baseline.used_samples:  # base counts the gate's store gave, verified by the head
            counts = record.setdefault("counts", {role: {"taken": 0, "reused": 0, "from": []}
                                                  for role in ("base", "head")})
            counts["base"]["reused"] += baseline.used_samples
            counts["base"]["from"] += [f"the count store ({origin})" for origin in baseline.used_from]
        verdict, records = _verdict(outcome, step_cases)
        error = next((f"{x['case']}: {x['stop']}: " + "; ".join(f"{k}: {v}" for k, v in x["first_error"].items())
                      for x in records if x["stop"] in _UNTESTABLE), None)
        return {**record, "verdict": verdict, "error": error, "cases": records, "elapsed_s": self.clock() - started,
                "attribution": _attribution(outcome, step_cases)}


    def _provided(self, cases: "list[Case]", sides: dict, older: Revision, newer: Revision, against: str,
                  record: dict) -> "tuple[list[Case], str | None]":
        """The cases both commits provide (``measure.sides.split_cases``: a plugin's model or backend from each
        commit's own install, so a case the bad end declares is resolved from its install), and why the comparison
        cannot be made, or None. At the ends a case only one end provides has no step to search: it is left out
        and named (``record``'s ``new_cases``/``removed_cases``); at a step, a case the commit lacks makes it
        untestable (skipped, as a commit that does not install)."""
        from ..measure.sides import split_cases

        swap = self.request.improvement  # the comparison's base is the newer commit
        older_side, newer_side = (sides["head"], sides["base"]) if swap else (sides["base"], sides["head"])
        common, only_newer, only_older = split_cases(cases, older_side, newer_side)
        if against == "ends":
            for case in only_newer:
                self.events.note(f"case {case.id}: only the bad end ({newer.short}) provides it: not bisected "
                                 "(the good end has nothing to compare it with)")
            for case in only_older:
                self.events.note(f"case {case.id}: the bad end ({newer.short}) no longer provides it: not bisected")
            record["new_cases"] = [c.id for c in only_newer]
            record["removed_cases"] = [c.id for c in only_older]
            if not common:
                return common, ("no selected case is provided by both ends: "
                                + ", ".join(c.id for c in only_newer + only_older))
            return common, None
        lacking = [(c, older if c in only_newer else newer) for c in only_newer + only_older]
        if lacking:
            return common, "; ".join(f"{rev.short} does not provide case {c.id}" for c, rev in lacking)
        return common, None


def _attribution(outcome: "GateOutcome", step_cases: set[str] | None) -> list[dict]:
    """Per regressed case: the phase that moved most, the Python functions called more (the project's first, each
    with its file:line, from the deterministic call counts), the model lines whose compiled code grew, the counters,
    and the native or sampled functions that grew most in their own cost (the gate's attribution).

    The functions are the ones the gate's summary shows (``present/gate_views.shown_functions``): the interpreter's
    dispatch and C code, libc and ttfg's own measuring code are left out, so a culprit that adds pure-Python work is
    never explained by ``_PyFunction_Vectorcall`` or ``PyObject_Call``."""
    from ..decide.source_lines import grown as grown_lines
    from ..present.gate_views import shown_functions

    out = []
    for case, a in outcome.attributions.items():
        if step_cases is not None and case not in step_cases:
            continue
        phase = a.largest_phase()
        def own(f):  # a function's own (self) change where known: wrappers' inclusive change names no culprit
            return f.delta_self if f.delta_self is not None and f.delta_self == f.delta_self else f.delta_incl

        grew = [f for unit in a.units() for f in shown_functions(a.functions, unit, 5)][:5]
        calls = a.grown_calls("project", 5) + a.grown_calls("framework", 3)
        out.append({"case": case, "metric": a.metric,
                    "phase": None if phase is None else {"phase": phase.phase, "delta_s": phase.delta,
                                                         "ratio": phase.ratio,
                                                         "instructions_delta": phase.instructions_delta},
                    "calls": [{"fn": c.fn, "file": c.file, "line": c.line, "base": c.base, "head": c.head,
                               "code": c.code} for c in calls],
                    "lines": [{"kind": c.kind, "file": c.file, "line": c.line, "fn": c.fn, "base": c.base,
                               "head": c.head, "code": c.code, "reason": c.reason} for c in grown_lines(a.lines)],
                    "counters": [{"metric": c.metric, "base": c.base, "head": c.head} for c in a.counters
                                 if c.verdict == "regressed"][:5],
                    "functions": [{"fn": f.fn, "file": f.file, "line": f.line, "delta": own(f),
                                   "unit": f.unit, "presence": f.presence} for f in grew]})
    return out


def _step(compare: Compare, tiers: tuple[str, ...], lo: Revision, commit: Revision, hi: Revision, folder: Path,
          cases: "list[Case]", step_cases: set[str]):
    """One step: ``commit`` against the bracket's good end ``lo`` and bad end ``hi``; its state and evidence.

    The tiers decide in order across the step, not only within a comparison: first both
    comparisons with the counting tiers alone (one pair a side for the structural one), and
    wall time only when those leave the commit unknown; otherwise a comment-only commit's
    comparison with the good end (counters equal, nothing settled) would spend its whole
    time budget before the one with the bad end settled it in one pair.
    """
    evidence = []
    counting = tuple(t for t in tiers if t != "time")
    if counting and len(counting) < len(tiers):
        vs_good = compare(lo, commit, "good", folder / "vs-good-counts", cases, step_cases, tiers=counting)
        vs_bad = compare(commit, hi, "bad", folder / "vs-bad-counts", cases, step_cases, tiers=counting)
        evidence += [vs_good, vs_bad]
        state = search.classify(vs_good["verdict"], vs_bad["verdict"])
        if state != search.UNKNOWN:
            return state, evidence, vs_good, vs_bad
    vs_good = compare(lo, commit, "good", folder / "vs-good", cases, step_cases)
    evidence.append(vs_good)
    vs_bad = None
    if search.needs_bad_side(vs_good["verdict"]):
        vs_bad = compare(commit, hi, "bad", folder / "vs-bad", cases, step_cases)
        evidence.append(vs_bad)
    return search.classify(vs_good["verdict"], vs_bad["verdict"] if vs_bad else None), evidence, vs_good, vs_bad


def _ratio(evidence: dict) -> float | None:
    ratios = [c["ratio"] for c in evidence.get("cases", []) if c.get("verdict") == "regressed" and c.get("ratio")]
    return max(ratios) if ratios else None


#: Runs one comparison: ``(older, newer, against, folder, cases, step_cases, profiles=, tiers=)`` -> its record
#: (``verdict``, ``cases``, ``error``, ...), ``older`` and ``newer`` the walk's Revisions. The default gates real
#: processes (:class:`_Comparer`); tests of the search's bookkeeping (state, resuming, skips) pass a fake one, as
#: the gate's tests pass a fake sampler.
Compare = Callable[..., dict]
