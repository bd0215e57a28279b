"""The gate as one use case: revisions -> sides -> tiers -> expectations -> noise -> outputs.

``run(request, events)`` does everything ``ttfg gate`` does except parse options and
print: it resolves the revisions, warns when the budget cannot detect the minimum
effect, opens both sides (``measure.sides.SideOpener``, the one way sides are opened; a
test passes one whose sides are folders), measures and decides
(``decide.gate_loop.run_gate``), checks the head against expectations, records the
noise floor in both results files, and writes ``gate.json``, ``summary.md`` and the
GitHub step summary. What happens on the way is told to ``events`` (the CLI prints it);
what came out is the returned :class:`GateReport`.

Interruptions: Ctrl-C, and SIGTERM (a CI cancellation, turned into the same
``KeyboardInterrupt`` while the sides exist), end the measurement, remove the worktrees
and return a report with ``status == "interrupted"`` and exit code 2; the finished
samples stay in the results files, marked incomplete.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from ..decide.gate_loop import PairEvent, Sampler, run_gate
from ..decide.gate_settings import GateSettings, checked_guard, checked_tiers, refuse_unreported
from ..decide.tiers import DEFAULT_TIERS, strict_counters
from ..files import append_step_summary, replace_together
from ..measure.runner import run_sample
from ..measure.sides import EnvPlan, Side, SideOpener, environments_differ
from ..provision.worktrees import Revision, pruned_note, repo_root, revisions
from ..results.gate_outcome import GateOutcome

if TYPE_CHECKING:
    from ..decide.expect import ExpectationCheck
    from ..measure.coverage import PathCheck
    from ..measure.cases import Case, Skipped
    from ..results.model import NoiseFloor, ShardSection

def settings(*, timeout_s: float, threads: int, **gate) -> GateSettings:
    """The gate's settings from the command line's values: sampling in one probe a side per pair
    (``RunSettings(repeat=1)``), everything else as ``GateSettings`` takes it, validated once there."""
    from ..measure.runner import RunSettings

    return GateSettings(run=RunSettings(repeat=1, timeout_s=timeout_s, threads=threads), **gate)


#: What a finished report can say happened.
DECIDED, SAME_COMMIT, INTERRUPTED = "decided", "same commit", "interrupted"


@dataclass
class GateRequest:
    """Everything one gate needs: the repository and revisions, the cases, how to decide, where to write.

    The sides are opened from ``repo``, ``base``, ``head``, the environments and ``settings.run`` by
    :func:`build_sides` alone; what a side needs later (an environment per side) is added here.
    """

    repo: Path
    #: The base revision; None for an upgrade gate (one revision, two environments): base is head.
    base: str | None
    cases: "list[Case]"
    settings: GateSettings
    out_dir: Path
    head: str = "HEAD"
    skipped: "list[Skipped]" = field(default_factory=list)
    allow_dirty: bool = False
    #: ``--shard I/N``: the part of the selection this gate measures, None for all of it.
    shard: "ShardSection | None" = None
    #: An expectations CSV checked against the head's counters, and where to write the updated file.
    expectations: str | None = None
    write_suggested: str | None = None
    #: Append ``summary.md`` here (``$GITHUB_STEP_SUMMARY``), when set.
    step_summary: str | None = None
    #: Each side's environment (``--base-env``/``--head-env``: requirement lines, NAME=REQS, NAME=@FILE,
    #: ``current``), or how to choose them from the revisions (``--envs``: auto, declared, current).
    base_env: str | None = None
    head_env: str | None = None
    envs: str = "auto"
    #: The project's folder inside the repository (the config's ``install-path``), "" for its root.
    project_dir: str = ""
    #: When the change touches project code that never runs on the measured path: "pass" (the default: the
    #: verdict stands and every output says the measurement could not see the change) or "fail" (exit 2).
    off_path: str = "pass"
    #: Read and fill the count store (``app/gate_baseline.py``); False: ``--no-count-store``, every base counted.
    count_store: bool = True
    #: A commit page's URL template (``--commit-url``, the config's ``commit-url``, else asv.conf.json's): the
    #: project's file:line in summary.md links to that line at the head (``present/source_links.py``).
    commit_url: str | None = None


class GateEvents:
    """What the gate tells while it runs. Each method does nothing here; the CLI overrides them."""

    def started(self, request: GateRequest, base: Revision, head: Revision) -> None:
        """Both revisions are resolved and differ; nothing is measured yet."""

    def warning(self, text: str) -> None:
        """Something the user should know before the result (a budget too small for the minimum effect)."""

    def note(self, text: str) -> None:
        """A line of progress: a side installed, a tier's finding, a count sample."""

    def pair(self, event: PairEvent) -> None:
        """A timing pair finished."""


@dataclass
class GateReport:
    """What one gate run came to; ``code`` is the exit code (0 pass, 1 a finding, 2 broken)."""

    code: int
    status: str
    base: Revision | None = None
    head: Revision | None = None
    #: Each side's environment, and what the choice leaves unmeasured.
    plan: "EnvPlan | None" = None
    outcome: GateOutcome | None = None
    check: "ExpectationCheck | None" = None
    floor: "NoiseFloor | None" = None
    budget_warnings: list[dict] = field(default_factory=list)
    #: The one sentence on what passing means, the Markdown summary and gate.json's document.
    passing_means: str = ""
    summary: str = ""
    document: dict = field(default_factory=dict)
    #: The files written: base, head, gate, summary.
    files: dict[str, Path] = field(default_factory=dict)
    #: Which of the change's code files ran on the measured path (None: not checked, no code changed).
    path: "PathCheck | None" = None
    #: Cases the head adds (its revision provides their backend or model, the base's does not), each measured
    #: on the head alone: ``{case, samples, first_grad_s, process_ttfg_s, error}``; and the ids the head removes.
    new_cases: list[dict] = field(default_factory=list)
    removed_cases: list[str] = field(default_factory=list)
    #: ``--cache both``: the warm set's report (its files in OUT-DIR/warm); this one is the cold set's.
    warm: "GateReport | None" = None


def _run_both(request: GateRequest, events: GateEvents, opener: SideOpener, sampler: Sampler) -> GateReport:
    """``--cache both``: the cold gate, then the warm gate, as two guarded sets with their own files (the warm
    set's in OUT-DIR/warm). The exit code is the worse of the two: a regression in either, else broken input."""
    from dataclasses import replace

    cold = run(replace(request, settings=replace(request.settings, cache="cold")), events, opener, sampler)
    if cold.status != DECIDED:
        return cold
    events.note("warm set: each side's persistent caches populated by its own revision, then paired warm processes")
    warm = run(replace(request, settings=replace(request.settings, cache="warm"), out_dir=request.out_dir / "warm"),
               events, opener, sampler)
    cold.warm = warm
    codes = {cold.code, warm.code}
    cold.code = 1 if 1 in codes else max(codes)
    return cold


def build_sides(request: GateRequest, base: Revision, head: Revision, plan: "EnvPlan", events: GateEvents,
                opener: SideOpener, defer_base: bool = False):
    """Both sides of the gate, checked out, installed, located and shown to import different code (a context
    manager: ``opener.open``, the one way sides are opened), each in the environment ``plan`` chose.

    ``defer_base``: the head runs the base's program (the source tier's proof) and the count store is on, so the
    base's stored first process may stand in for the base's: the base is checked out and installed only when one of
    its processes must run (``SideOpener.open(defer=...)``; on a fresh runner, where both sides were installed in
    every gate, a second comment-only gate then takes 0.56-0.60x of the first: docs/measurements.md).

    Raises
    ------
    SameCode, InstallError
        Before any sample of a side, naming the files or the build log.
    """
    if defer_base:
        events.note(f"base: {base.short} not checked out yet: the head runs the base's program (source tier), and "
                    "the base's stored first process may stand in for it; checked out if a base process must run")
    return opener.open(request.repo, {"base": base, "head": head}, request.cases, request.settings.run,
                       plan.requests, on_note=events.note, project_dir=request.project_dir,
                       defer=("base",) if defer_base else ())


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM (a CI cancellation) cleans up like Ctrl-C; only the main thread can set a handler."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run(request: GateRequest, events: GateEvents | None = None, opener: SideOpener | None = None,
        sampler: Sampler = run_sample) -> GateReport:
    """Measure and decide one gate; write its outputs.

    ``opener`` opens the sides (default: ``SideOpener``, worktrees and installs); ``sampler`` takes every sample
    (default: ``run_sample``, a cold process). Tests pass a fake of each, as the bisect's do.

    Raises
    ------
    TtfgError
        Broken input (a guarded timing no selected case reports, a missing revision, a dirty tree, an
        unreadable expectations file, sides that would import the same code): nothing was measured.
    """
    from ..decide import expect

    events = events or GateEvents()
    opener = opener or SideOpener()
    refuse_unreported(request.settings, request.cases)  # before any checkout: a guard no case can report
    if request.settings.cache == "both":
        return _run_both(request, events, opener, sampler)
    expectations = expect.load(request.expectations) if request.expectations else None  # before minutes of sampling
    store, store_off = _count_store(request)  # a bad TTFG_COUNT_STORE_MAX_MB is refused before any checkout
    repo = repo_root(request.repo)
    base_rev, head_rev = revisions(repo, request.base or request.head, request.head, request.allow_dirty)
    if (pruned := pruned_note(repo)) is not None:  # an earlier gate or bisect killed outright left its worktrees
        events.note(pruned)
    plan = opener.plan(repo, base_rev, head_rev, request.base_env, request.head_env, request.envs,
                       request.project_dir)
    if base_rev.commit == head_rev.commit and plan.requests["base"] == plan.requests["head"]:
        if request.base_env or request.head_env:  # an upgrade gate asked to compare one environment with itself
            from ..errors import UsageError

            raise UsageError(f"--base-env and --head-env name the same environment ({plan.requests['base'].name}) "
                             f"for one revision ({base_rev.short}): nothing would differ between the sides")
        return GateReport(0, SAME_COMMIT, base_rev, head_rev, plan)
    request.repo = repo
    events.started(request, base_rev, head_rev)
    events.note(f"environments: {plan.describe()}")
    if plan.unmeasured:
        events.warning(plan.unmeasured)
    if plan.same_packages:
        events.warning(plan.same_packages)
    settings = request.settings
    floor, why_no_floor, budget_warnings = None, "", []
    one_env = plan.requests["base"] == plan.requests["head"]
    try:
        # One environment request for both sides is one environment: the proof needs no side opened, and when it
        # holds with the count store on, the base's checkout can wait for a base process (none, when its first
        # process is stored).
        proof = _source_proof(request, base_rev, head_rev, True, events) if one_env else None
        defer_base = store is not None and proof is not None and proof.proven
        with _sigterm_as_interrupt(), build_sides(request, base_rev, head_rev, plan, events, opener,
                                                  defer_base) as sides:
            if not one_env:
                proof = _source_proof(request, base_rev, head_rev, not environments_differ(sides), events)
            floor, why_no_floor, budget_warnings = _budget_check(request, sides, events,
                                                                 proof is not None and proof.proven)
            path = None if proof is not None and proof.proven else measured_path(request, base_rev, head_rev, sides,
                                                                                events)
            cases, new, removed = _split_cases(request.cases, sides, events)
            new_cases = [_measure_new(case, sides["head"], settings, events, sampler) for case in new]
            baseline = None
            if store is not None:
                from .gate_baseline import GateBaseline

                baseline = GateBaseline(store, sides["base"], settings.run, head_rev.commit, note=events.note,
                                        head=sides["head"])
            outcome = run_gate(cases, request.skipped, sides["base"], sides["head"], settings,
                               request.out_dir, on_pair=events.pair, on_note=events.note, sampler=sampler,
                               shard=request.shard, baseline=baseline, source=proof)
            if baseline is None:
                from .gate_baseline import off

                for case in outcome.cases:
                    case.baseline = off(store_off)
    except KeyboardInterrupt:
        return GateReport(2, INTERRUPTED, base_rev, head_rev, plan, budget_warnings=budget_warnings)
    _accept(outcome, repo, base_rev.commit, head_rev.commit, events)
    check = None
    if expectations is not None:
        check = expect.check(expectations, [outcome.results["head"]], path=request.expectations)
        if request.write_suggested:
            expect.save(request.write_suggested, check.suggested)
    code = outcome.exit_code()
    if check is not None and check.failures() and code == 0:
        code = 1
    if not cases and (new or removed):  # only new or removed cases: nothing to compare is no failure
        code = 2 if any(n["error"] for n in new_cases) else 1 if code == 1 else 0
    if path is not None and path.off_path and request.off_path == "fail" and code == 0:
        code = 2  # the measurement could not see the change: neither "passed" nor "unchanged"
    floor = _record_noise(outcome, settings, floor, why_no_floor)
    report = GateReport(code, DECIDED, base_rev, head_rev, plan, outcome, check, floor, budget_warnings, path=path,
                        new_cases=new_cases, removed_cases=[c.id for c in removed])
    _write_outputs(report, request, events)
    return report


def _count_store(request: GateRequest):
    """``(store, None)`` when this gate reads and fills the count store, else ``(None, why not)``
    (``gate_baseline.open_store``).

    Raises
    ------
    UsageError
        A ``TTFG_COUNT_STORE_MAX_MB`` that is no positive number.
    """
    from .gate_baseline import open_store

    if not request.count_store:
        return None, "--no-count-store"
    return open_store(request.settings)


#: Cold processes that measure a new case on the head alone (a first look, not a verdict).
NEW_CASE_SAMPLES = 3


def _split_cases(cases: "list[Case]", sides: dict[str, Side], events: GateEvents):
    """``(common, new, removed)``: the cases both revisions provide, those only the head provides (a pull
    request that adds a backend or a model) and those only the base does. A new case made the base's
    probes fail ("base cannot run ... unknown backend", exit 2); it is a new case, measured and shown."""
    from ..measure.sides import split_cases

    common, new, removed = split_cases(cases, sides["base"], sides["head"])
    for case in new:
        events.note(f"new case {case.id}: the head adds it (the base provides no {case.backend} or "
                    f"{case.model.split(':')[0]}); measured on the head alone")
    for case in removed:
        events.note(f"removed case {case.id}: the head no longer provides it")
    return common, new, removed


def _measure_new(case: "Case", head: Side, settings: GateSettings, events: GateEvents, sampler: Sampler) -> dict:
    """A new case on the head alone: a few cold processes, their medians (a first look, not a verdict)."""
    import statistics

    run = head.run_settings(settings.run)
    samples = [sampler(case, "timing", "cold", i, run) for i in range(NEW_CASE_SAMPLES)]
    good = [s for s in samples if s.ok]
    first = statistics.median(s.first_grad_s for s in good) if good else None
    process = statistics.median(s.process_ttfg_s for s in good if s.process_ttfg_s) if good else None
    error = None if good else (samples[-1].error or "no good sample")
    events.note(f"new case {case.id}: " + (f"first gradient {first:.3g} s (median of {len(good)})" if good
                                              else f"cannot run on the head: {error}"))
    return {"case": case.id, "samples": len(good), "first_grad_s": first, "process_ttfg_s": process,
            "error": error}


def _source_proof(request: GateRequest, base: Revision, head: Revision, one_environment: bool,
                  events: GateEvents):
    """Whether the head runs the base's program (``decide/source_proof.py``) in ``one_environment``, for the source
    tier; None when that tier is not selected or the sides are one commit (an upgrade gate: the packages differ,
    not the code). When proven, the measured path is not traced: there is no changed code for it to look for."""
    from ..decide import source_proof, tiers

    if tiers.SOURCE not in request.settings.tiers or base.commit == head.commit:
        return None
    proof = source_proof.between(request.repo, base.commit, head.commit, one_environment)
    events.note(f"source: {'proven' if proof.proven else 'not proven'}: {proof.why}"
                + ("; the measured path is not traced" if proof.proven else ""))
    return proof


def measured_path(request: GateRequest, base: Revision, head: Revision, sides: dict[str, Side],
                  events: GateEvents) -> "PathCheck | None":
    """Which of the change's code files ran on the measured path: every case traced once on each side that
    provides it, in a process of its own (``measure/coverage.py``; both sides, so a module the head deletes that
    the base ran counts). The head is traced first; when every changed code file ran on it and none of its traces
    failed, the base is not traced: a base trace can only add files that ran, and there is none left to add (on a
    comment-only pull request of jax.jit resnet15 that trace was a process of resnet15 on the critical path). None
    when base and head are one commit (an upgrade gate) or a side has no install (a test's fake sides)."""
    from ..measure import coverage
    from ..measure.sides import provides
    from ..provision.worktrees import git

    if base.commit == head.commit or any(s.installed is None for s in sides.values()):
        return None
    folder = request.project_dir.strip("/") or "."
    changed = git(request.repo, "diff", "--name-only", "--no-renames", base.commit, head.commit, "--",
                  folder).stdout.split()
    if not any(coverage.kind(c) in ("python", "extension") for c in changed):
        found = coverage.check(changed, set())
        if found.stubs or found.unseen:
            events.note(f"measured path: {found.describe()}")
        return found
    sources = {c for c in changed if coverage.kind(c) == "extension"}
    ran, extensions, failed = set(), set(), {}
    for role in ("head", "base"):
        if role == "base" and not failed and not coverage.check(changed, ran, {}, extensions).not_ran:
            # the base can only add files that ran: with every changed code file run on the head, nothing to add
            events.note("measured path: the base side not traced: every changed code file ran on the head")
            break
        cases = [c for c in request.cases if provides(sides[role], c)]
        events.note(f"measured path: tracing each case once on the {role} side ({len(cases)} process(es))")
        r, e, f = coverage.side_ran(sides[role], cases, request.settings.run, folder, sources)
        ran, extensions = ran | r, extensions | e
        failed.update({f"{case} ({role})": why for case, why in f.items()})
    found = coverage.check(changed, ran, failed, extensions)
    if found.off_path:
        events.warning(f"measured path: {found.describe()}"
                       + (" (exit 2: --off-path fail)" if request.off_path == "fail"
                          else " (the verdict stands; --off-path fail makes this exit 2)"))
    else:
        events.note(f"measured path: {found.describe()}")
    return found


def _accept(outcome: GateOutcome, repo: Path, base: str, head: str, events: GateEvents) -> None:
    """The head's ``Ttfg-Accept`` trailers (``decide/accept.py``) applied to the outcome; an unused one is warned of."""
    from ..decide import accept

    found = accept.read(repo, base, head)
    accept.apply(outcome.cases, found)
    outcome.acceptances = [a.to_json() for a in found]
    for a in found:
        for case, why in a.refused.items():
            events.warning(f"{accept.TRAILER} '{a.case} {a.metric} {a.reason}' ({a.commit[:10]}) does not accept "
                           f"{case}: {why}; a trailer accepts a measured change, never a failure")
        if a.also_matched:
            events.note(f"{accept.TRAILER} '{a.case} {a.metric} {a.reason}' ({a.commit[:10]}) also matched "
                        f"{', '.join(a.also_matched)} (accepted by an earlier trailer)")
        if not (a.used_by or a.also_matched or a.refused):
            events.warning(f"{accept.TRAILER} '{a.case} {a.metric} {a.reason}' ({a.commit[:10]}) is unused: "
                           + (a.problem or "it matched no regression"))


def _budget_check(request: GateRequest, sides: dict[str, Side], events: GateEvents, proven: bool = False):
    """Before any sampling: warn when --min-effect is below what the budget can detect here (a note, not a warning,
    when the source tier's proof holds: the time tier then runs only for a case whose first pair disagrees).

    Returns the stored calibration of the cases calibrated under both sides' keys (or None), why the others have
    none, and the warnings' facts (for gate.json).
    """
    from ..decide import noise
    from ..present.noise_views import budget_warning_lines

    s = request.settings
    floor, why_not = noise.stored(noise.keys_of(request.cases, s.run, sides))
    warnings = noise.budget_warning([c.id for c in request.cases], s.metric, s.min_effect, s.budget_s,
                                    s.max_pairs, floor, why_not, alpha=s.guard_alpha)
    for line in budget_warning_lines(warnings, s.metric, s.min_effect, s.budget_s, s.tiers, proven):
        (events.note if proven else events.warning)(line)
    return floor, why_not, warnings


def _record_noise(outcome: GateOutcome, settings: GateSettings, floor, why_no_floor: str):
    """The noise floor in both results files (the gate's own, held in memory): the stored calibration, else the
    gate's own pairs."""
    from ..decide import noise
    from ..results.writer import save_again

    if set(outcome.results) != {"base", "head"}:  # nothing was measured
        return floor
    if floor is None:
        floor = noise.in_gate(outcome.results["base"], outcome.results["head"], settings.metric, settings.max_pairs)
        if why_no_floor:
            floor.note = "; ".join(filter(None, [floor.note, why_no_floor]))
    for role in ("base", "head"):
        outcome.results[role].noise = floor
        save_again(outcome.results[role], outcome.files[role])
    return floor


def _environments(plan: "EnvPlan | None", outcome: GateOutcome) -> dict:
    """``gate.json``'s ``environments``: each side's, as its results file recorded it (name, versions),
    and the files whose declared dependencies differ between base and head."""
    from ..results.identity import package_changes

    sides, full = {}, {}
    for role, results in outcome.results.items():
        envs = results.environment.get("envs") or {}
        env = next(iter(envs.values())) if len(envs) == 1 else {}  # a gate side runs in one environment
        sides[role] = {k: env.get(k) for k in ("name", "origin", "interpreter", "versions", "key")}
        full[role] = env
    # The packages that differ, every one (not only the frameworks a record names): a bump of numpy
    # read as "torch 2.13.0 vs torch 2.13.0" when only the frameworks were shown.
    differs = package_changes(full["base"], full["head"]) if set(full) == {"base", "head"} else []
    return {**sides, "changed": plan.changed if plan else [], "differs": differs}


def _source_linker(request: GateRequest, outcome: GateOutcome):
    """summary.md's links from the project's file:line to the head's line (``present/source_links.py``), None without
    ``commit_url``. The head's tracked files locate an install's ``mylab/ops.py`` as ``src/mylab/ops.py``."""
    if not request.commit_url:
        return None
    from ..present.source_links import linker
    from ..provision.worktrees import GitError, git

    try:
        files = git(request.repo, "ls-tree", "-r", "--name-only", outcome.head.commit).stdout.splitlines()
    except GitError:  # the head is known to have been checked out; a repository gone since links nothing
        return None
    return linker(request.commit_url, outcome.head.commit, files)


def _write_outputs(report: GateReport, request: GateRequest, events: GateEvents) -> None:
    """``summary.md``, ``gate.json`` and the step summary, from the report (fills its text fields).

    ``gate.json`` is strict JSON (a NaN in it made it unreadable to ``ttfg merge gate``);
    the two files replace the old pair as one set; a step summary that cannot be
    appended to is a warning, never a change of the exit code. The words for people that
    ``gate.json`` carries are added by the presenter (``gate_views.presented_document``),
    never written into the outcome."""
    from ..present import noise_views
    from ..present.gate_views import environments_note, gate_footer, gate_markdown, presented_document
    from .. import fmt
    from ..present.untrusted import md, md_code
    from ..present.verdicts import passing_means
    from ..results.format import strict_json
    from ..results.gate_file import dumps

    outcome, check, floor, metric = report.outcome, report.check, report.floor, request.settings.metric
    report.passing_means = passing_means(outcome, check)
    notes = [f"**Not measured:** {report.plan.unmeasured}"] if report.plan is not None and report.plan.unmeasured \
        else []
    environments = _environments(report.plan, outcome)
    sides = environments_note(environments)
    if sides:
        notes.insert(0, md(sides))
    if report.plan is not None and report.plan.same_packages:
        notes.append(f"**Dependencies:** {md(report.plan.same_packages)}")
    if report.path is not None and report.path.off_path:
        notes.insert(0, f"**Not on the measured path:** {md(report.path.describe())}")
    elif report.path is not None and (report.path.unseen or report.path.stubs):
        notes.append(f"**Measured path:** {md(report.path.describe())}")
    for new in report.new_cases:
        notes.append(f"**New case** {md_code(new['case'])}: " + (
            f"first gradient {fmt.seconds(new['first_grad_s'])} on the head (median of {new['samples']}; "
            "nothing to compare it with)" if not new["error"] else f"cannot run on the head: {md(new['error'])}"))
    if report.removed_cases:
        notes.append("**Removed case(s):** " + ", ".join(md_code(c) for c in report.removed_cases))
    report.summary = gate_markdown(outcome, check, noise=md(noise_views.headline(floor, metric)), notes=notes,
                                   link=_source_linker(request, outcome))
    document = presented_document(outcome, check, report.code, noise=floor.to_json() if floor else None,
                                  budget_warnings=report.budget_warnings, passing_means=report.passing_means,
                                  footer=gate_footer(outcome), environments=environments,
                                  unmeasured=report.plan.unmeasured if report.plan else None,
                                  same_packages=report.plan.same_packages if report.plan else None,
                                  new_cases=report.new_cases, removed_cases=report.removed_cases,
                                  measured_path=report.path.to_json() if report.path else None)
    report.document = document = strict_json(document)
    out_dir = request.out_dir
    report.files = {"base": Path(outcome.files["base"]), "head": Path(outcome.files["head"]),
                    "gate": out_dir / "gate.json", "summary": out_dir / "summary.md"}
    replace_together({report.files["gate"]: dumps(document), report.files["summary"]: report.summary})
    warning = append_step_summary(request.step_summary, report.summary)
    if warning:
        events.warning(warning)


__all__ = ["DEFAULT_TIERS", "checked_guard", "checked_tiers", "settings", "strict_counters", "DECIDED", "GateEvents", "GateReport", "GateRequest", "INTERRUPTED", "SAME_COMMIT", "build_sides", "run"]
