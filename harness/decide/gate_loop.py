"""The gate's loop: base and head measured interleaved and paired, decided sequentially.

Why paired and interleaved: on a small CI machine one cold sample's CV is 11-25 % and
the machine's speed drifts by tens of percent within minutes, for every process alike.
Two results files measured ten minutes apart therefore differ by drift as much as by
code. The gate runs one base process and one head process back to back, in the order
A B, B A, A B, ... (so neither side is always first), with the same Python, the same
installed frameworks and fresh compile caches, and tests the *pair* log-ratios
``log(head / base)``: the drift both processes shared cancels.

Why sequential: a 2x regression is obvious after a handful of pairs, a 5 % one needs
about 56. ``stats.SequentialPairedTest`` looks after every pair with alpha-spending
that keeps the overall false-alarm rate at ``alpha``, so the gate stops as soon as a
case is decided and spends the rest of the budget on the cases still inconclusive
(cases are sampled round-robin, one pair each per round).

Every phase a cold start pays is guarded (``gate_settings.py``), each timing by its own
test at ``alpha / k``. A case regresses when any guarded timing does; it is unchanged
only when every one is; else inconclusive, quoting the guard that could see least. When
the count tier settled a case, the timings no count covers are screened by one look at
``min_pairs`` pairs. When the time budget runs out, each test's last look is taken on the
pairs there are. These rules are ``gate_policy.py``; this module samples, keeps the
state, and asks them.

Failures: a sample that fails leaves its pair incomplete (dropped by the test). After
``max_failures`` consecutive failures on one side the case stops: a base that never
ran means there is nothing to compare against (exit 2); a head that never ran while
the base did is a regression (the change broke the case).

Attribution: every case whose verdict or one of whose counters regressed gets an
``attribution.Attribution`` (phase deltas, counter deltas, the function-level diff of
the first-gradient window when the samples carry it), shown by every output.

The clock is an argument (``clock``, ``time.monotonic`` by default), as in
``history.confirm.confirm``: the budget and the progress lines read it, and tests of the
stopping rules pass a fake one. The git side (revisions, worktrees, the dirty-tree check)
is ``provision/worktrees.py``; the outcome, ``results/gate_outcome.py``, and its file, ``results/gate_file.py``.

Warm starts (``settings.cache == "warm"``): before the first pair, each side populates a
persistent-cache folder of its own per case with one unrecorded process of its own
revision (:func:`_populate`); every sample of the case on that side then starts with
that cache (``run_sample``'s ``cache_dir``), so the tiers guard the warm first gradient
as they guard the cold one, and the caches' hit and miss counts are structural evidence
(``tiers.cache_step``). Every case is populated, whatever its backend, with every known framework
cache turned on (``engines.probe_caches``), and what its populating processes showed decides
(``warm_evidence.decide``, from the counters the probe reads in every process): a case whose
process looked a persistent cache up is measured warm, one whose processes looked none up is
measured cold, said in a note and recorded in ``settings.measured_cold``, never silently; what
each case's processes showed is ``settings.warm_evidence``. A backend's declared caches
(``Backend.persistent_caches``) are a hint, read only where no process could say.
"""

from __future__ import annotations

import math
import shutil
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from . import explain_runs
from . import gate_policy as policy
from .gate_policy import CaseState
from . import head_failures
from . import python_calls
from . import source_lines
from . import unmeasured
from . import tiers
from . import time_screen
from .gate_cost import allocations_taken, case_cost
from . import warm_evidence
from .gate_settings import EXPLAIN_METRICS, GATE_OUTPUTS, GateSettings, not_split
from .. import metrics
from ..measure.cases import Case, Skipped
from ..measure.runner import RunSettings, new_results, run_sample
from ..measure.sides import Side, environments_differ
from ..results.gate_outcome import BASE_BROKEN, BUDGET, COUNT_BROKEN, DECIDED, HEAD_BROKEN, HEAD_FAILING, NOT_SETTLED, CaseOutcome, GateOutcome, RevisionData, SettingsData, SkipData
from ..results.model import GateSection, Results, Sample, ShardSection
from ..results.writer import ResultsWriter

if TYPE_CHECKING:
    from .source_proof import SourceProof
    from .stored_baseline import Baseline
    from ..engines import PersistentCache
    from .stats import Verdict

__all__ = ["CaseState", "Clock", "PairEvent", "Sampler", "known_caches", "run_gate"]

#: Takes one sample: ``(case, kind, cache, index, run)`` -> sample dict, where ``run.target.source``
#: is the side's checkout; with a warm cache also the side's cache folder, ``(..., run, cache_dir)``.
#: The gate's default is ``run_sample``, a cold child process; tests of the loop's policy (stopping
#: rules, budget, final look) pass an in-process one.
Sampler = Callable[..., Sample]
#: Where each (role, case id) keeps its warm persistent caches.
WarmDirs = dict[tuple[str, str], Path]
#: Seconds from an arbitrary start that never go back (``time.monotonic``; a fake one in tests).
Clock = Callable[[], float]


@dataclass
class PairEvent:
    """What the progress line shows after each pair."""

    case: str
    pair: int
    base: Sample
    head: Sample
    metric: str
    #: The sequential test's latest look (before the first look: the running ratio only).
    verdict: "Verdict"
    complete_pairs: int
    elapsed_s: float
    budget_s: float


def _new_tests(settings: GateSettings, names: tuple[str, ...], max_pairs: int | None = None, **looks):
    """One sequential test per guarded timing, each at the guard's share of alpha (``looks``: the test's
    ``look_every`` and ``interim_share``, where they are not the defaults)."""
    from .stats import SequentialPairedTest

    return {m: SequentialPairedTest(min_effect=settings.min_effect, alpha=settings.guard_alpha,
                                    min_pairs=min(settings.min_pairs, max_pairs or settings.max_pairs),
                                    max_pairs=max_pairs or settings.max_pairs, **looks) for m in names}


def _new_state(case: Case, settings: GateSettings) -> CaseState:
    """A case's state, testing the guarded timings its backend reports (the gated one always: a backend that
    does not report it stops the case at once, ``policy.stop_after_pair``)."""
    unsplit = {m: why for m, why in not_split(settings.guard, case.backend).items() if m != settings.metric}
    tested = tuple(m for m in settings.guard if m not in unsplit)
    return CaseState(case, settings.metric, _new_tests(settings, tested),
                     {m: {"base": [], "head": []} for m in settings.guard}, not_split=unsplit)


def _test_anew(st: CaseState, tests: dict) -> None:
    """The case's sequential tests replaced by ``tests``, each given the complete pairs already taken."""
    st.tests = tests
    for m, test in tests.items():
        for b, h in zip(*st.complete(m)):
            if not test.done():
                test.add(b, h)


def _screen(st: CaseState, settings: GateSettings, names: tuple[str, ...]) -> None:
    """After the count tier settled the case: test only ``names`` (what the counts did not cover), in one look
    at ``min_pairs`` pairs (a screen for gross regressions), counting the pairs already taken. When no count could
    cover any of them (``time_screen.short_applies``), a short screen looks first and only escalates to this one
    when a pair looks slow (:func:`_look_short`)."""
    _test_anew(st, _new_tests(settings, names, max_pairs=settings.min_pairs))
    st.screened = True
    if time_screen.short_applies(names):
        st.short = names
        _look_short(st, settings)
    else:
        counted = ", ".join(metrics.get(m).brief for m in names if metrics.get(m).counted_by is not None)
        st.screen = time_screen.full(names, 0, f"full screen from the start: a count could cover {counted} and "
                                               "did not decide it")


def _look_short(st: CaseState, settings: GateSettings) -> None:
    """The short screen's look, once its pairs are taken (``time_screen.judge``): nothing gross ends the case with
    its count tier's verdict; a slow pair escalates to a sequential test of the screened timings, up to
    ``time_screen.escalated_pairs`` pairs (the pairs taken counted)."""
    if not st.short or st.stop is not None or st.attempted < time_screen.SHORT_PAIRS:
        return
    names, st.short = st.short, ()
    st.screen = time_screen.judge({m: st.complete(m) for m in names}, st.attempted)
    if not st.screen.escalated:
        st.stop = DECIDED
        return
    most = time_screen.escalated_pairs(settings.min_pairs, settings.max_pairs)
    _test_anew(st, _new_tests(settings, names, max_pairs=most, **time_screen.escalated_looks(settings.min_pairs, most)))


def _writer(cases: list[Case], skipped: list[Skipped], side: Side, settings: GateSettings,
            out: Path, shard: ShardSection | None = None) -> ResultsWriter:
    """One side's results file: this side's source and git state, and the gate section."""
    results = new_results(cases, skipped, side.run_settings(settings.run, opening=False),
                          envs={side.env.name: side.env} if side.env else None)
    _record_side(results, side)
    rev = side.revision
    results.gate = GateSection(side.role, rev.name, rev.commit, rev.subject, settings.to_json())
    results.shard = shard
    return ResultsWriter(results, out)


def _record_side(results: Results, side: Side) -> None:
    """What a side's results file says of its checkout and install, and its git state. Said again when the gate ends
    for a deferred side (``SideOpener.open(defer=...)``) that a process of the gate opened."""
    from ..measure import metadata

    # a deferred side's tree is the repository until it is opened: its revision is what it will check out
    results.environment["git"] = ({"commit": side.revision.commit, "branch": None, "dirty": False} if side.deferred
                                  else metadata.git_state(side.tree))
    results.environment["side"] = side.to_json()


def known_caches(backend: str) -> "tuple[tuple[PersistentCache, ...], tuple[PersistentCache, ...]]":
    """The caches ``backend`` declares (``Backend.persistent_caches``, a hint), and those among them that are not a
    framework's the probe reads in every process (a plugin's own, read through the counters it names)."""
    from .. import engines

    declared = engines.facts(backend).caches
    frameworks = engines.probe_caches()
    return declared, tuple(c for c in declared if c not in frameworks)


def _sample(sampler: Sampler, case: Case, kind: str, index: int, run: RunSettings, warm: Path | None) -> Sample:
    """One sample: cold, or warm from the side's populated cache folder ``warm``."""
    if warm is None:
        return sampler(case, kind, "cold", index, run)
    return sampler(case, kind, "warm", index, run, warm)


def _warm_root(settings: GateSettings) -> Path:
    """This gate's folder of persistent caches (under ``--cache-dir``, else the temporary folder)."""
    from ..errors import UsageError

    parent = settings.cache_dir
    try:
        return Path(tempfile.mkdtemp(prefix="ttfg-gate-warm-", dir=parent))
    except OSError as exc:
        raise UsageError(f"cannot make a persistent-cache folder in {parent or tempfile.gettempdir()} "
                         f"({exc.strerror or exc}): the warm gate has nowhere to populate its caches") from None


def _populate(cases: list[Case], sides: dict[str, Side], settings: GateSettings, sampler: Sampler, root: Path,
              on_note: Callable[[str], None] | None) -> tuple[WarmDirs, dict[str, "warm_evidence.WarmCall"]]:
    """Each side's persistent caches, populated by its own revision: one unrecorded process per case and side,
    in a folder of that side (``root/<role>/<n>``), with every known cache on. Returns the folders of the cases
    measured warm, and each case's decision from what its populating processes showed."""
    warm: WarmDirs = {}
    calls = {}
    for n, case in enumerate(cases):
        populated = {}
        for role, side in sides.items():
            folder = root / role / str(n)
            folder.mkdir(parents=True, exist_ok=True)
            populated[role] = sample = sampler(case, "timing", "warm", -1, side.run_settings(settings.run), folder)
            warm[role, case.id] = folder
            if on_note:
                state = "ok" if sample.ok else f"failed: {sample.error}"
                on_note(f"warm cache {role} {case.id}: populated by its own revision ({state})")
        calls[case.id] = call = warm_evidence.decide(case.backend, populated, *known_caches(case.backend))
        if not call.warm:
            for role in sides:
                del warm[role, case.id]
        if on_note:
            on_note(f"warm cache: {case.id}: " + (f"measured warm: {call.words}" if call.warm else
                                                   f"{call.words} (marked in gate.json and the results files)"))
    return warm, calls


def _run_pair(st: CaseState, sides: dict[str, Side], writers: dict[str, ResultsWriter],
              settings: GateSettings, sampler: Sampler, clock: Clock, warm: WarmDirs) -> dict[str, Sample]:
    """One base and one head process back to back; the order alternates A B, B A, ..."""
    index = st.attempted
    order = ("base", "head") if index % 2 == 0 else ("head", "base")
    samples = {}
    started = clock()
    for position, role in enumerate(order):
        run = sides[role].run_settings(settings.run)
        sample = _sample(sampler, st.case, "timing", index, run, warm.get((role, st.case.id)))
        sample.pair, sample.pair_position = index, position
        writers[role].append(st.case.id, sample)
        samples[role] = sample
    st.pair_wall_s.append(clock() - started)
    return samples


def _count_sampler(sides: dict[str, Side], writers: dict[str, ResultsWriter], settings: GateSettings,
                   sampler: Sampler, warm: WarmDirs, baseline: "Baseline | None" = None) -> "tiers.TakeSample":
    """The count tier's sampler: one sample of a kind on a side, recorded in that side's file (and a cold base count
    kept in the count store, ``baseline``, for the next gate of this base)."""

    def take(case: Case, kind: str, index: int, role: str) -> Sample:
        folder = warm.get((role, case.id))
        sample = _sample(sampler, case, kind, index, sides[role].run_settings(settings.run), folder)
        writers[role].append(case.id, sample)
        if baseline is not None and folder is None:
            baseline.keep(case, kind, index, sample, role)
        return sample

    return take


def _margins(sides: dict[str, Side], settings: GateSettings):
    """Case -> its count margins under both sides' keys (``count_margins.for_sides``), the store read once."""
    if tiers.INSTRUCTIONS not in settings.tiers:
        return None
    from . import count_margins

    store = count_margins.load()
    return lambda case: count_margins.for_sides(case, sides, settings.run, store)


def run_gate(cases: list[Case], skipped: list[Skipped], base: Side, head: Side, settings: GateSettings,
             out_dir: Path, on_pair: Callable[[PairEvent], None] | None = None,
             on_note: Callable[[str], None] | None = None, sampler: Sampler = run_sample,
             shard: ShardSection | None = None, clock: Clock = time.monotonic,
             baseline: "Baseline | None" = None, source: "SourceProof | None" = None) -> GateOutcome:
    """Measure base and head interleaved and paired until every case is decided or the budget is spent.

    Parameters
    ----------
    cases : list of Case
        What to measure; each case gets its own sequential test.
    skipped : list of Skipped
        Recorded in both results files.
    base, head : Side
        The two revisions and the folders they are checked out in.
    settings : GateSettings
    out_dir : Path
        Receives ``base.json`` and ``head.json`` (the normal results format, every
        sample with its ``pair`` index), rewritten after every sample.
    on_pair : callable or None
        Called with a :class:`PairEvent` after each pair (progress output).
    on_note : callable or None
        Called with a line of text for other events (allocation runs).
    sampler : Sampler
        Takes each sample; by default a cold process (``run_sample``).
    shard : ShardSection or None
        With ``--shard I/N``: recorded in both results files and the outcome, for ``ttfg merge gate``.
    clock : Clock
        Reads the time for the budget, the pairs' wall time and the progress lines (``time.monotonic``).
    baseline : stored_baseline.Baseline or None
        The stored base counts (``app/gate_baseline.py``): looked up by the count tier, verified by the head's
        fresh counts, the base's fresh counts kept; each case's ``baseline`` record in the outcome. None: none.
    source : source_proof.SourceProof or None
        Whether the head runs the base's program (read from git by ``app/gate.py``), for the source tier; a case
        it settles takes no allocation counts either (the same program's). None: not asked.

    Returns
    -------
    GateOutcome
        With both sides' results in memory (``results``) and each regressed case's attribution.

    Raises
    ------
    KeyboardInterrupt
        Re-raised after saving the finished samples (files marked incomplete).
    """
    from .attribution import attribute

    out_dir.mkdir(parents=True, exist_ok=True)
    sides = {"base": base, "head": head}
    warm_root = None
    writers: dict[str, ResultsWriter] = {}
    try:  # a second writer refused, or a first save that fails (a full disk), gives up every lock taken
        for role, side in sides.items():
            writers[role] = _writer(cases, skipped, side, settings, out_dir / f"{role}.json", shard)
        for writer in writers.values():
            writer.save()
    except BaseException:
        for writer in writers.values():
            writer.close()
        raise
    if baseline is not None:  # stored samples used go into the base's file like the counts taken
        baseline.append = writers["base"].append
    for stale in GATE_OUTPUTS:  # now this gate's: a previous verdict must not sit beside new, unfinished files
        (out_dir / stale).unlink(missing_ok=True)
    states = [_new_state(case, settings) for case in cases]
    by_id = {st.case.id: st for st in states}
    for st in states:
        for why in st.not_split.values():
            if on_note:
                on_note(f"{st.case.id}: {why}: not guarded for this case")
    start = began = clock()
    finished = False
    warm: WarmDirs = {}

    def take_pair(st: CaseState) -> dict[str, Sample]:
        samples = _run_pair(st, sides, writers, settings, sampler, clock, warm)
        for role in sides:
            if samples[role].ok:
                st.ok[role] += 1
                st.streak[role] = 0
            else:
                st.failed[role] += 1
                st.streak[role] += 1
                st.first_error.setdefault(role, samples[role].error or "unknown error")
        for m in settings.guard:
            found = {role: policy.value(samples[role], m) for role in sides}
            for role in sides:
                st.values[m][role].append(math.nan if found[role] is None else found[role])
            b, h = st.values[m]["base"][-1], st.values[m]["head"][-1]
            test = st.tests.get(m)
            if test is not None and not test.done() and not (math.isnan(b) or math.isnan(h)):
                test.add(b, h)
        policy.stop_after_pair(st, settings, {role: policy.value(samples[role], settings.metric) for role in sides})
        if on_pair:
            on_pair(PairEvent(st.case.id, st.attempted - 1, samples["base"], samples["head"], settings.metric,
                              st.test.verdict(), len(st.complete()[0]), clock() - start,
                              settings.budget_s))
        return samples

    def timed(tier_cases: list[Case], trails: "dict[str, tiers.CaseTrail]") -> None:
        """The time tier: a case a count settled is screened for the guarded timings no count covers (or decided),
        then pairs round-robin, one each per round, until every case stopped or the budget is spent."""
        nonlocal start
        mine = [by_id[case.id] for case in tier_cases]
        for st in mine:
            settled = trails[st.case.id].settled
            if settled:
                rest = tiers.uncounted_guards(settings.guard, settled.step) if settled.step else ()
                rest = tuple(m for m in rest if m not in st.not_split)
                if st.stop is None and rest and settled.verdict.verdict != "regressed":
                    _screen(st, settings, rest)
                else:
                    st.stop = st.stop or DECIDED
        start = clock()  # the budget is the time tier's
        while True:
            active = [st for st in mine if st.stop is None]
            if not active:
                break
            for st in active:
                if not st.fits(clock() - start, settings.budget_s):
                    st.stop = BUDGET
                    continue
                take_pair(st)
                _look_short(st, settings)

    try:
        if settings.cache == "warm":  # inside: the folder is removed however the gate ends
            warm_root = _warm_root(settings)
            folders, calls = _populate(cases, sides, settings, sampler, warm_root, on_note)
            warm.update(folders)
            # recorded in both files before any sample: which cases start warm, which cold, and what was seen
            settings = replace(settings, measured_cold={c: call.words for c, call in calls.items() if not call.warm},
                               warm_evidence={c: call.words for c, call in calls.items() if call.warm})
            for writer in writers.values():
                writer.results.gate.settings = settings.to_json()
                writer.save()
        context = tiers.TierContext(lambda case: take_pair(by_id[case.id]),
                                    _count_sampler(sides, writers, settings, sampler, warm, baseline),
                                    selected=settings.tiers,
                                    repeat=settings.count_repeat, min_effect=settings.min_effect,
                                    strict=settings.strict_counters, recount=settings.recount,
                                    across_envs=environments_differ(sides), note=on_note or (lambda text: None),
                                    timed=timed, margins=_margins(sides, settings), baseline=baseline,
                                    source=source)
        trails = tiers.run_tiers(cases, context)
        for st in states:  # what no time tier took on (it was not selected): settled by the counts, or not at all
            if st.stop is None:
                broken = any(t.broken for t in trails[st.case.id].steps)
                st.stop = DECIDED if trails[st.case.id].settled else COUNT_BROKEN if broken else NOT_SETTLED
        if settings.allocations:
            for st in states:
                if st.stop in (BASE_BROKEN, HEAD_BROKEN):
                    continue
                if trails[st.case.id].tier == tiers.SOURCE:
                    if on_note:
                        on_note(f"allocations {st.case.id}: not counted: the head runs the base's program (source tier)")
                    continue
                for i in range(allocations_taken(st.case.id, writers), settings.alloc_repeat):
                    for role in ("base", "head") if i % 2 == 0 else ("head", "base"):
                        sample = _sample(sampler, st.case, "allocations", i, sides[role].run_settings(settings.run),
                                         warm.get((role, st.case.id)))
                        writers[role].append(st.case.id, sample)
                        if on_note:
                            state = "ok" if sample.ok else f"failed: {sample.error}"
                            on_note(f"allocations {role} {st.case.id}: "
                                    + (f"{sample.alloc_count:,} allocations" if sample.ok else state))
        outcomes = _outcomes(states, writers, settings, trails)
        for outcome in outcomes if baseline is not None else ():
            outcome.baseline = baseline.record(outcome.case)
        if settings.profiles:
            def take(case: Case, kind: str, index: int, role: str) -> Sample:
                return _sample(sampler, case, kind, index, sides[role].run_settings(settings.run),
                               warm.get((role, case.id)))

            explain_runs.profile_regressions(outcomes, states, writers, settings.profiles, take, on_note)
            explain_runs.count_calls(outcomes, states, sides, writers, take, on_note)
            for outcome in outcomes:  # the stacks and calls just taken are this gate's processes too
                outcome.cost = case_cost(outcome.case, writers)
        finished = True
    finally:
        for role, writer in writers.items():
            if writer.results.environment.get("side", {}).get("deferred") and not sides[role].deferred:
                # opened by a process of the gate: its probes' target is now its install
                writer.results.settings = sides[role].run_settings(settings.run, opening=False).to_json()
                _record_side(writer.results, sides[role])
            writer.finish(finished)
        if warm_root is not None:
            shutil.rmtree(warm_root, ignore_errors=True)
    elapsed = clock() - began
    results = {role: w.results for role, w in writers.items()}
    for outcome in outcomes:
        if outcome.regressed_anything():
            outcome.attribution = attribute(results["base"].case(outcome.case), results["head"].case(outcome.case),
                                            metric=settings.metric, cache=_measured_cache(settings, outcome.case))
            if outcome.attribution is not None:
                outcome.attribution.calls, outcome.attribution.calls_note = python_calls.attribute_calls(
                    results["base"].case(outcome.case), results["head"].case(outcome.case),
                    python_calls.roots(base), python_calls.roots(head))
                outcome.attribution.lines, outcome.attribution.lines_note = source_lines.attribute_lines(
                    results["base"].case(outcome.case), results["head"].case(outcome.case),
                    python_calls.roots(base), python_calls.roots(head))
    files = {role: str(w.out) for role, w in writers.items()}
    return GateOutcome(RevisionData.of(base.revision), RevisionData.of(head.revision), SettingsData(settings.to_json()),
                       outcomes, [SkipData(s.id, s.reason) for s in skipped], elapsed, files, shard,
                       writers["head"].results.fingerprint, results=results,
                       source=None if source is None else source.to_json())


def _measured_cache(settings: GateSettings, case_id: str) -> str:
    """Which timing samples a case's explanation reads: warm in a warm gate, unless the case was measured cold."""
    return "warm" if settings.cache == "warm" and case_id not in settings.measured_cold else "cold"


def _steady_changes(case: Case, writers: dict[str, ResultsWriter], changes: list) -> list:
    """The counters that changed, those the case's processes do not repeat (``Metric.unsteady``: jax's allocation
    count moves by a few per cent between processes of one commit) made ``inconclusive``, so they never call for
    an attribution (sampled stacks and call counts, eight processes of the case on jax.jit resnet15, were taken
    after a comment-only gate settled "unchanged", for an allocation count +2.4 % that the count tier had set aside
    as evidence).

    What the processes ran decides (their measured ``runtimes``), else what the backend declares."""
    from .. import engines
    from ..results.runtimes import merged, runs_on

    samples = [s for w in writers.values() for c in w.results.cases if c.id == case.id for s in c.samples if s.ok]
    on = runs_on(merged(s.runtimes for s in samples), engines.runs_on(case.backend))
    out = []
    for row in changes:
        why = metrics.get(row.metric).unsteady_for(on) if row.compared_as == "counter" else None
        if why and row.verdict.verdict in ("regressed", "improved"):
            row = replace(row, verdict=replace(row.verdict, verdict="inconclusive",
                                               reason=f"{row.verdict.reason}; not repeatable here ({why}): "
                                                      "evidence, not a change"))
        out.append(row)
    return out


def _outcomes(states: list[CaseState], writers: dict[str, ResultsWriter], settings: GateSettings,
              trails: "dict[str, tiers.CaseTrail]") -> list[CaseOutcome]:
    """Each case's decision from its tiers, its pairs, its failures and its counters (no attribution yet)."""
    from .compare import compare_results
    from .stats import summarize

    caches = {st.case.id: _measured_cache(settings, st.case.id) for st in states}
    explains = {cache: compare_results(writers["base"].results, writers["head"].results, metrics=EXPLAIN_METRICS,
                                       cache=cache, across_envs=True)  # paired on purpose, environments and all
                for cache in sorted(set(caches.values()))}
    outcomes = []
    for st in states:
        b, h = st.complete()
        trail = trails[st.case.id]
        changes = policy.within_margins(_steady_changes(st.case, writers, [
            r for r in explains[caches[st.case.id]].rows if r.case == st.case.id and r.verdict.verdict != "unchanged"]),
            trail)
        failures = policy.failure_test(st)
        figure, context, guards = None, [], []
        broken = policy.broken_verdict(st, settings)
        if trail.settled:
            verdict, tier = trail.settled.verdict, trail.settled.tier
            evidence = trail.settled.evidence
            figure = policy.evidence_figure(tier, evidence) if evidence else None
            verdict, tier, figure, context, guards = policy.settled_and_screened(st, settings, trail, verdict, tier,
                                                                                 figure)
        elif st.stop in (NOT_SETTLED, COUNT_BROKEN):
            verdict, tier = policy.not_settled_verdict(trail, st), trail.steps[-1].tier if trail.steps else tiers.TIME
        elif broken is not None:
            verdict, tier = broken, tiers.TIME
        else:
            guards = policy.guards_of(st, settings)
            lead, verdict = policy.combined_verdict(guards, settings.metric)
            tier, figure = tiers.TIME, lead.figure()
            context = policy.count_context(trail)
        verdict = policy.with_not_split(policy.with_failures(verdict, failures, st), st)
        stop = st.stop or BUDGET
        held = head_failures.held_for_head_failures(verdict, st.failed, st.attempted, len(b), settings.min_pairs,
                                                    st.first_error)
        if held is not None:
            verdict, stop = held, HEAD_FAILING
        good, failed_any, errors = unmeasured.good_counts({r: w.results for r, w in writers.items()}, st.case.id)
        good["base"] += trail.base_stored  # the base's first process, from the count store (stored_first.py)
        errors = {**errors, **st.first_error}
        never = unmeasured.held_verdict(verdict, stop, good, failed_any, errors)  # whatever the tiers and budget
        if never is not None:
            verdict, stop = never
        if verdict.method in ("fisher-failures", "failure") or held is not None:
            figure = None
        outcomes.append(CaseOutcome(st.case.id, verdict, len(b), st.attempted, dict(st.failed),
                                    sum(st.pair_wall_s), stop, summarize(b), summarize(h), list(changes), failures,
                                    tier=tier, trail=list(trail.steps), first_error=errors,
                                    figure=figure, context=context, guards=guards, good=good,
                                    cost=case_cost(st.case.id, writers), screen=_screen_record(st, len(b))))
    return outcomes


def _screen_record(st: CaseState, pairs: int):
    """What the screen did, for ``gate.json``: a full or escalated screen's pairs are those the case ended with."""
    if st.screen is None or (st.screen.short and not st.screen.escalated):
        return st.screen
    return replace(st.screen, pairs=pairs)
