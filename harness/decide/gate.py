"""The gate: base and head measured interleaved and paired, decided sequentially.

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

Why every phase a cold start pays: a user waits for the import, the build and the first
gradient, and a process pays them all (``process_ttfg_s``). A gate that decided on the
first gradient alone passed a build made 38 times slower (0.82 ms -> 30.9 ms, issue 24).
So each timing of ``GateSettings.guard`` (the registry's ``Metric.guarded``: first
gradient, process TTFG, import, build) gets its own sequential test, each at
``alpha / k`` (Bonferroni: the chance that any of the k tests raises a false alarm stays at
most ``alpha``; it is Holm's first step, and Holm's later steps would only tell which
further timings regressed once one already has). A case regresses when any guarded
timing does, and its verdict names that timing; it is unchanged only when every one is;
else inconclusive, quoting the guard that could see least. When the count tier settled
a case (its counts cover the build and the first gradient), the timings no count covers
(``Metric.counted_by``: the import and the whole process) are screened by one look at
``min_pairs`` pairs, which catches gross regressions at the cost of a few pairs.

Why a final look at the budget: the test reserves most of ``alpha``,
``(1 - interim_share) * alpha``, for its last look at ``max_pairs``. When the time
budget runs out first, that last look has not happened and its level is unspent, so
the gate takes it then, on the pairs it has (``stats.compare_paired`` at that level).
The interim looks spent at most ``interim_share * alpha`` and this one the rest, so
the Bonferroni bound the test relies on still holds: the stopping time depends on the
clock, not on the ratios. A case still inconclusive then is reported as such.

Failures: a sample that fails leaves its pair incomplete (dropped by the test). After
``max_failures`` consecutive failures on one side the case stops: a base that never
ran means there is nothing to compare against (exit 2); a head that never ran while
the base did is a regression (the change broke the case). Failures are evidence in
their own right, as in ``ttfg compare``: when sampling ends, a head that failed
significantly more often than its base (``stats.compare_failures``, one-sided Fisher
at 10 %) is a regression, whatever its good samples' times say; a head failing every
other process would otherwise pass on the pairs that happened to complete.

Attribution: every case whose verdict or one of whose counters regressed gets an
``attribution.Attribution`` (phase deltas, counter deltas, the function-level diff of
the first-gradient window when the samples carry it), shown by every output.

The git side (revisions, worktrees, the dirty-tree check) is ``worktrees.py``; the
command line is ``gate_cli.py``.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from .. import fmt, metrics
from . import head_failures
from . import tiers as tiering
from ..measure.cases import Case, Skipped
from ..errors import UsageError
from ..measure.runner import RunSettings, new_results, run_sample
from ..measure.sides import Side, environments_differ
from ..measure.worktrees import GitError, Revision, dirty_files, resolve
from ..results.model import Fingerprint, GateSection, Sample, ShardSection
from ..results.writer import ResultsWriter

if TYPE_CHECKING:
    from .attribution import Attribution
    from .compare import Row
    from .stats import FailureTest, SequentialPairedTest, Summary, Verdict

#: Why a case stopped sampling.
DECIDED, MAX_PAIRS, BUDGET = "decided", "max pairs", "budget"
BASE_BROKEN, HEAD_BROKEN, FAILING, NO_METRIC = "base cannot run", "head cannot run", "repeated failures", "metric missing"
NOT_SETTLED, COUNT_BROKEN = "not settled", "counting failed"
#: A head that failed with too few complete pairs left (``head_failures.py``): exit 2, never a pass.
HEAD_FAILING = head_failures.HEAD_FAILING
#: What a gate writes at its end, beside base.json and head.json; removed when a gate starts in the folder.
GATE_OUTPUTS = ("gate.json", "summary.md")
#: The phases a cold start pays, each guarded by the time tier (``Metric.guarded``): the first gradient,
#: the whole process (spawn to first gradient, which also holds the interpreter's start and the
#: project's own imports), the framework's import and the model's build.
GUARDED = metrics.names(lambda m: m.guarded)
#: Counters compared alongside the gated timing, to explain a change.
EXPLAIN_METRICS = ("counters.*", *metrics.by_sample_kind(lambda m: m.deterministic and m.compared_by_default))
#: The test's documented default share of alpha for interim looks (stats.SequentialPairedTest).
DEFAULT_INTERIM_SHARE = 0.1
DURATION_RE = re.compile(r"(\d+(?:\.\d+)?)\s*([smh]?)")
#: Takes one sample: ``(case, kind, cache, index, run)`` -> sample dict, where ``run.target.source``
#: is the side's checkout. The gate's default is ``run_sample``, a cold child process; tests
#: of the loop's policy (stopping rules, budget, final look) pass an in-process one.
Sampler = Callable[[Case, str, str, int, RunSettings], Sample]


def guarded_metrics(metric: str = "first_grad_s") -> tuple[str, ...]:
    """The default guard: :data:`GUARDED`, with ``metric`` in the first gradient's place."""
    return tuple(dict.fromkeys(metric if m == "first_grad_s" else m for m in GUARDED))


def parse_duration(text: str) -> float:
    """``"90"``, ``"90s"``, ``"10m"``, ``"1h"``, ``"1m30s"`` -> seconds.

    Raises
    ------
    UsageError
        On anything else, or a duration that is not positive.
    """
    raw = text.strip().lower()
    pos, total = 0, 0.0
    for match in DURATION_RE.finditer(raw):
        if match.start() != pos:
            break
        total += float(match.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[match.group(2)]
        pos = match.end()
    if not raw or pos != len(raw) or total <= 0:
        raise UsageError(f"budget {text!r} is not a positive duration such as 600, 90s, 10m, 1h or 1m30s")
    return total


@dataclass
class GateSettings:
    """How the gate samples and decides."""

    #: The timing the gate decides on (a timing metric of the probe).
    metric: str = "first_grad_s"
    #: Minimum relative effect; None: the metric's registry threshold (5 % for timings).
    min_effect: float | None = None
    alpha: float = 0.01
    min_pairs: int = 5
    max_pairs: int = 60
    #: Wall-clock seconds for the timing pairs, over all cases.
    budget_s: float = 600.0
    #: Consecutive failed samples on one side before its case stops.
    max_failures: int = 3
    #: Also count allocations: ``alloc_repeat`` memray processes per side and case, after the budget.
    allocations: bool = False
    alloc_repeat: int = 1
    #: For each case that regressed: sampled-stack processes per side (pyinstrument), for attribution.
    profiles: int = 3
    run: RunSettings = field(default_factory=lambda: RunSettings(repeat=1))
    #: Which tiers decide (``tiers.py``), in run order; the command line's default is ``tiers.DEFAULT_TIERS``.
    tiers: tuple[str, ...] = (tiering.TIME,)
    #: Count-tier processes per side, kind and case.
    count_repeat: int = 1
    #: The timings the time tier guards, each with its own paired sequential test at ``alpha / len(guard)``;
    #: None: :func:`guarded_metrics` of ``metric`` (every phase a cold start pays). ``metric`` is always in it.
    guard: tuple[str, ...] | None = None

    def __post_init__(self):
        from .compare import metric_info

        info = metric_info(self.metric)
        if info.deterministic:
            raise UsageError(f"--metric {self.metric} is a counter; the gate decides on a timing "
                             "(counters are compared alongside, and checked by --expectations)")
        guard = guarded_metrics(self.metric) if self.guard is None else tuple(self.guard)
        for name in guard:
            if metric_info(name).deterministic or metrics.get(name).sample != "timing":
                raise UsageError(f"--guard {name} is not a timing of the probe; the time tier guards timings such "
                                 f"as {', '.join(GUARDED)}")
        self.guard = tuple(dict.fromkeys((self.metric, *guard) if self.metric not in guard else guard))
        if self.min_effect is None:
            self.min_effect = metrics.get(self.metric).threshold
        if not 2 <= self.min_pairs <= self.max_pairs:
            raise UsageError(f"need 2 <= --min-pairs <= --max-pairs, got {self.min_pairs} and {self.max_pairs}")
        if self.max_failures < 1:
            raise UsageError(f"--max-failures must be >= 1, got {self.max_failures}")
        if self.alloc_repeat < 1:
            raise UsageError(f"--alloc-repeat must be >= 1, got {self.alloc_repeat}")
        if self.count_repeat < 1:
            raise UsageError(f"--count-repeat must be >= 1, got {self.count_repeat}")
        self.tiers = tiering.parse_tiers(",".join(self.tiers))
        if self.profiles < 0:
            raise UsageError(f"--profiles must be >= 0, got {self.profiles}")
        if not 0 < self.alpha < 1 or not self.min_effect > 0:
            raise UsageError(f"need 0 < --alpha < 1 and --min-effect > 0, got {self.alpha} and {self.min_effect}")

    @property
    def guard_alpha(self) -> float:
        """Each guarded timing's level: Bonferroni over the guard, so that the case's false-alarm rate stays
        at most ``alpha`` (Holm's first step; its later steps would only matter once a case has regressed)."""
        return self.alpha / len(self.guard)

    def to_json(self) -> dict:
        data = asdict(self)
        data["run"] = self.run.to_json()
        data["run"].pop("source", None)  # each side has its own; see the results files
        return data


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


@dataclass
class _CaseState:
    case: Case
    #: The gated metric (progress lines, the noise floor).
    metric: str
    #: One sequential test per guarded timing still tested (all of the guard, or the screen's part).
    tests: "dict[str, SequentialPairedTest]"
    #: Per guarded timing and side, every attempted pair's value (NaN: failed, or not reported).
    values: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    pair_wall_s: list[float] = field(default_factory=list)
    ok: dict[str, int] = field(default_factory=lambda: {"base": 0, "head": 0})
    failed: dict[str, int] = field(default_factory=lambda: {"base": 0, "head": 0})
    streak: dict[str, int] = field(default_factory=lambda: {"base": 0, "head": 0})
    first_error: dict[str, str] = field(default_factory=dict)
    stop: str | None = None
    #: True when the count tier settled the case and the time tier screens what the counts do not cover.
    screened: bool = False

    @property
    def attempted(self) -> int:
        return len(self.pair_wall_s)

    @property
    def test(self) -> "SequentialPairedTest":
        """The gated metric's test (the first one tested when it is not screened)."""
        return self.tests.get(self.metric) or next(iter(self.tests.values()))

    def complete(self, metric: str | None = None) -> tuple[list[float], list[float]]:
        """The complete pairs (both values there) of ``metric`` (default: the gated one)."""
        found = self.values.get(metric or self.metric, {"base": [], "head": []})
        pairs = [(b, h) for b, h in zip(found["base"], found["head"]) if not (math.isnan(b) or math.isnan(h))]
        return [b for b, _ in pairs], [h for _, h in pairs]

    def regressed(self) -> bool:
        return any(t.done() and t.verdict().verdict == "regressed" for t in self.tests.values())

    def decided(self) -> bool:
        """A guarded timing regressed (that settles the case), or every test is done."""
        return self.regressed() or all(t.done() for t in self.tests.values())

    def fits(self, elapsed: float, budget: float) -> bool:
        """Whether one more pair is expected to end within the budget."""
        if elapsed >= budget:
            return False
        recent = sorted(self.pair_wall_s[-5:])
        estimate = recent[len(recent) // 2] if recent else 0.0
        return elapsed + estimate <= budget


def _finite_or_none(v):
    return v if isinstance(v, (int, float)) and math.isfinite(v) else None


@dataclass
class Figure:
    """The numbers a verdict rests on, all of one metric in its one unit: base, head, their ratio, its interval.

    ``ratio`` is ``head / base`` of exactly the two values shown: for paired timings they are
    the geometric means over the complete pairs (the paired test's ratio is the geometric
    mean of the pair ratios, which is their quotient), for counts the medians. None where
    nothing was measured; never a placeholder.
    """

    metric: str
    tier: str
    base: float | None
    head: float | None
    ratio: float | None
    ci_low: float | None
    ci_high: float | None
    #: What base and head are: "geometric mean of 12 pairs", "median of 3 samples", "1 sample".
    statistic: str
    n: int

    def to_json(self) -> dict:
        return {k: _finite_or_none(v) if isinstance(v, float) else v for k, v in asdict(self).items()}

    @classmethod
    def from_json(cls, data: dict) -> "Figure":
        return cls(**{k: data.get(k) for k in ("metric", "tier", "base", "head", "ratio", "ci_low", "ci_high",
                                                "statistic", "n")})


@dataclass
class Guard:
    """One guarded timing's paired test: its verdict and the geometric means whose quotient is its ratio."""

    metric: str
    verdict: "Verdict"
    base: float
    head: float
    pairs: int

    def figure(self) -> Figure:
        v = self.verdict
        return Figure(self.metric, tiering.TIME, _finite_or_none(self.base), _finite_or_none(self.head),
                      _finite_or_none(v.ratio), _finite_or_none(v.ci_low), _finite_or_none(v.ci_high),
                      f"geometric mean of {self.pairs} pair{'s' if self.pairs != 1 else ''}", self.pairs)

    def to_json(self) -> dict:
        return {"metric": self.metric, "verdict": self.verdict.to_json(), "base": _finite_or_none(self.base),
                "head": _finite_or_none(self.head), "pairs": self.pairs}


def evidence_figure(tier: str, e: dict) -> Figure:
    """A count tier's evidence for one metric as a :class:`Figure` (medians, their ratio, the samples' range)."""
    n = max(e.get("n_base") or 0, e.get("n_head") or 0)
    statistic = "1 sample" if n == 1 else f"median of {n} samples"
    return Figure(e["metric"], tier, e.get("base"), e.get("head"), e.get("ratio"), e.get("ci_low"), e.get("ci_high"),
                  statistic, n)


@dataclass
class CaseOutcome:
    """The gate's decision for one case."""

    case: str
    verdict: "Verdict"
    #: Complete pairs (both samples good) the verdict rests on.
    pairs: int
    attempted: int
    failed: dict[str, int]
    wall_s: float
    stop: str
    #: The gated metric over the complete pairs.
    base: "Summary"
    head: "Summary"
    #: Counter comparisons whose verdict is not "unchanged": what changed structurally.
    changes: "list[Row]" = field(default_factory=list)
    #: Did head fail significantly more often than base? (None when no side failed.)
    failures: "FailureTest | None" = None
    #: Where the change went (phases, counters, functions), for a case where anything regressed.
    attribution: "Attribution | None" = None
    #: The tier that decided (``tiers.py``: structural, instructions, time) and every tier's finding.
    tier: str = tiering.TIME
    trail: "list[tiering.TierStep]" = field(default_factory=list)
    #: The first error of each side that failed (for the summary's row).
    first_error: dict[str, str] = field(default_factory=dict)
    #: The numbers of the metric that decided (None when a failure decided), in its unit.
    figure: Figure | None = None
    #: Numbers of other tiers, shown beside the deciding ones and labelled as context.
    context: list[Figure] = field(default_factory=list)
    #: The time tier's test of each guarded timing (empty when the time tier did not run).
    guards: list[Guard] = field(default_factory=list)

    @property
    def metric(self) -> str | None:
        """The metric that decided the verdict (None when a failure did)."""
        return self.figure.metric if self.figure is not None else None

    def regressed_anything(self) -> bool:
        """The gated verdict or a compared counter regressed: what attribution is computed for."""
        return self.verdict.verdict == "regressed" or any(r.verdict.verdict == "regressed" for r in self.changes)

    def to_json(self) -> dict:
        return {"case": self.case, "verdict": self.verdict.to_json(), "tier": self.tier, "metric": self.metric,
                "figure": None if self.figure is None else self.figure.to_json(),
                "context": [f.to_json() for f in self.context], "guards": [g.to_json() for g in self.guards],
                "tiers": [t.to_json() for t in self.trail], "pairs": self.pairs, "attempted": self.attempted,
                "failed": self.failed, "wall_s": self.wall_s, "stop": self.stop, "base": self.base.to_json(),
                "head": self.head.to_json(), "changes": [r.to_json() for r in self.changes],
                "failures": None if self.failures is None else self.failures.to_json(),
                "first_error": self.first_error,
                "attribution": None if self.attribution is None else self.attribution.to_json()}


@dataclass
class GateOutcome:
    """Everything the gate decided, and where its results files are."""

    base: Revision
    head: Revision
    settings: GateSettings
    cases: list[CaseOutcome]
    skipped: list[Skipped]
    elapsed_s: float
    files: dict[str, str]
    #: The shard this gate measured (``--shard I/N``), None for the whole selection.
    shard: ShardSection | None = None
    #: The machine both sides ran on.
    fingerprint: Fingerprint | None = None

    def regressions(self) -> list[CaseOutcome]:
        return [c for c in self.cases if c.verdict.verdict == "regressed"]

    def base_broken(self) -> list[CaseOutcome]:
        return [c for c in self.cases if c.stop == BASE_BROKEN]

    def exit_code(self) -> int:
        """1 on a regression; else 2 when a base could not run, a count failed with no time tier to fall back
        on (or nothing ran); else 0.

        A shard with no case of the selection (more shards than cases) passes: the
        merged gate decides whether anything ran at all.
        """
        if self.regressions():
            return 1
        if self.base_broken() or any(c.stop in (COUNT_BROKEN, HEAD_FAILING) for c in self.cases) \
                or not self.cases and not (self.shard is not None and not self.shard.cases):
            return 2
        return 0

    def to_json(self) -> dict:
        return {"format": "ttfg-gate", "version": 1, "base": self.base.to_json(), "head": self.head.to_json(),
                "settings": self.settings.to_json(), "elapsed_s": self.elapsed_s, "exit_code": self.exit_code(),
                "files": self.files, "cases": [c.to_json() for c in self.cases],
                "skipped": [{"case": s.id, "reason": s.reason} for s in self.skipped],
                "shard": None if self.shard is None else self.shard.to_json(),
                "fingerprint": None if self.fingerprint is None else self.fingerprint.to_json()}


def gate_document(outcome: GateOutcome, check=None, exit_code: int | None = None) -> dict:
    """``gate.json``: the outcome, the expectations check (or None) and the exit code the gate gave."""
    return {**outcome.to_json(), "expectations": check.to_json() if check is not None else None,
            "exit_code": outcome.exit_code() if exit_code is None else exit_code}


def revisions(repo: Path, base: str, head: str = "HEAD", allow_dirty: bool = False) -> tuple[Revision, Revision]:
    """Resolve base and head, refusing a dirty tree when head is the checked-out commit.

    Parameters
    ----------
    repo : Path
        Repository root.
    base, head : str
        Revision names.
    allow_dirty : bool
        Measure the committed head even though the working tree has uncommitted
        changes to tracked files (anywhere in the repository: the whole project is installed).

    Returns
    -------
    tuple of Revision

    Raises
    ------
    GitError
        A revision that does not exist, or a dirty tree where it matters: head is
        measured from its commit, so uncommitted changes would silently not be.
    """
    base_rev = resolve(repo, base, "base")
    head_rev = resolve(repo, head, "head")
    checked_out = resolve(repo, "HEAD", "checked-out")
    if head_rev.commit == checked_out.commit and not allow_dirty:
        dirty = dirty_files(repo, ())
        if dirty:
            shown = ", ".join(dirty[:8]) + (f" and {len(dirty) - 8} more" if len(dirty) > 8 else "")
            raise GitError(f"uncommitted changes to tracked files ({shown}) would not be "
                           f"measured: head is the committed {head!r} ({head_rev.short}). Commit them, or pass "
                           "--allow-dirty to measure the commit without them")
    return base_rev, head_rev


def _new_tests(settings: GateSettings, names: tuple[str, ...], max_pairs: int | None = None):
    """One sequential test per guarded timing, each at the guard's share of alpha."""
    from .stats import SequentialPairedTest

    return {m: SequentialPairedTest(min_effect=settings.min_effect, alpha=settings.guard_alpha,
                                    min_pairs=min(settings.min_pairs, max_pairs or settings.max_pairs),
                                    max_pairs=max_pairs or settings.max_pairs) for m in names}


def _new_state(case: Case, settings: GateSettings) -> _CaseState:
    return _CaseState(case, settings.metric, _new_tests(settings, settings.guard),
                      {m: {"base": [], "head": []} for m in settings.guard})


def _screen(st: _CaseState, settings: GateSettings, names: tuple[str, ...]) -> None:
    """After the count tier settled the case: test only ``names`` (what the counts did not cover), in one look
    at ``min_pairs`` pairs (a screen for gross regressions), counting the pairs already taken."""
    st.tests = _new_tests(settings, names, max_pairs=settings.min_pairs)
    st.screened = True
    for m, test in st.tests.items():
        for b, h in zip(*st.complete(m)):
            if not test.done():
                test.add(b, h)


def _writer(cases: list[Case], skipped: list[Skipped], side: Side, settings: GateSettings,
            out: Path, shard: ShardSection | None = None) -> ResultsWriter:
    """One side's results file: this side's source and git state, and the gate section."""
    from ..measure import metadata

    results = new_results(cases, skipped, side.run_settings(settings.run), envs={side.env.name: side.env} if side.env else None)
    results.environment["git"] = metadata.git_state(side.tree)
    results.environment["side"] = side.to_json()
    rev = side.revision
    results.gate = GateSection(side.role, rev.name, rev.commit, rev.subject, settings.to_json())
    results.shard = shard
    return ResultsWriter(results, out)


def _value(sample: Sample, metric: str) -> float | None:
    """The metric of a good sample; NaN for a failed one; None when a good sample lacks it."""
    if not sample.ok:
        return math.nan
    value = metrics.sample_value(sample, metric)
    return value if value is not None and value > 0 else None


def _failure_verdict(verdict: str, reason: str, st: _CaseState):
    from .stats import Verdict

    nan = math.nan
    return Verdict(verdict, nan, nan, nan, nan, st.ok["base"], st.ok["head"], "failure", reason)


def _broken_verdict(st: _CaseState, settings: GateSettings):
    """The verdict of a case that stopped for a side that cannot run or a metric not reported; else None."""
    if st.stop == BASE_BROKEN:
        return _failure_verdict("inconclusive", f"base cannot run: its first {st.failed['base']} sample(s) failed "
                                f"({st.first_error.get('base')}); nothing to compare head against", st)
    if st.stop == HEAD_BROKEN:
        return _failure_verdict("regressed", f"head cannot run: its first {st.failed['head']} sample(s) failed "
                                f"({st.first_error.get('head')}) while base ran", st)
    if st.stop == NO_METRIC:
        return _failure_verdict("inconclusive", f"this backend does not report {settings.metric}", st)
    return None


def _metric_verdict(st: _CaseState, metric: str, settings: GateSettings):
    """One guarded timing's verdict: its test's, or a final look at the level the test reserved for it."""
    from .stats import compare_paired

    test = st.tests[metric]
    if test.done():
        return test.verdict()
    base, head = st.complete(metric)
    why = {BUDGET: "the time budget ran out", FAILING: "sampling stopped after repeated failures"}.get(st.stop, st.stop)
    level = test.look_alphas[-1] if hasattr(test, "look_alphas") else settings.guard_alpha * (1 - DEFAULT_INTERIM_SHARE)
    if len(base) < 2:
        verdict = test.verdict()
        return replace(verdict, verdict="inconclusive",
                       reason=f"{why} after {len(base)} complete pair(s); at least 2 are needed")
    verdict = compare_paired(base, head, min_effect=settings.min_effect, alpha=level)
    return replace(verdict, method=f"{getattr(test, 'method', 'sequential')}, final look",
                   reason=f"{why} after {len(base)} of at most {test.max_pairs} pairs; final look at the level "
                          f"reserved for it (alpha {level:.3g}): {verdict.reason}")


def _geometric_mean(values: list[float]) -> float:
    return math.exp(math.fsum(math.log(v) for v in values) / len(values)) if values else math.nan


def _guards(st: _CaseState, settings: GateSettings) -> list[Guard]:
    out = []
    for m in st.tests:
        base, head = st.complete(m)
        out.append(Guard(m, _metric_verdict(st, m, settings), _geometric_mean(base), _geometric_mean(head), len(base)))
    return out


def _brief(metric: str) -> str:
    return metrics.get(metric).brief


def _leading(guards: list[Guard], metric: str) -> Guard:
    """The guard whose verdict stands for the case: a regression (the largest), else the weakest
    inconclusive one (it bounds what the case rules out), else an improvement, else the gated metric."""
    def worst(values):
        return max(values, key=lambda v: v if math.isfinite(v) else -math.inf)

    by_word: dict[str, list[Guard]] = {}
    for g in guards:
        by_word.setdefault(g.verdict.verdict, []).append(g)
    if "regressed" in by_word:
        return max(by_word["regressed"], key=lambda g: worst([g.verdict.ratio]))
    if "inconclusive" in by_word:
        return max(by_word["inconclusive"], key=lambda g: worst([g.verdict.detectable]))
    if "improved" in by_word:
        return min(by_word["improved"], key=lambda g: g.verdict.ratio)
    return next((g for g in guards if g.metric == metric), guards[0])


def _combined_verdict(guards: list[Guard], metric: str):
    """The case's verdict over its guarded timings, naming the one that decided and what the others found."""
    lead = _leading(guards, metric)
    others = "; ".join(f"{_brief(g.metric)} {g.verdict.verdict} ({fmt.factor(g.verdict.ratio)})"
                       for g in guards if g is not lead)
    tail = f" (other guarded timings: {others})" if others else ""
    return lead, replace(lead.verdict, reason=f"{_brief(lead.metric)}: {lead.verdict.reason}{tail}")


def _failure_test(st: _CaseState):
    """Fisher's test on the timing samples' failures; None when neither side failed."""
    from .stats import compare_failures

    if not (st.failed["base"] or st.failed["head"]):
        return None
    return compare_failures(st.failed["base"], st.ok["base"] + st.failed["base"], st.failed["head"],
                            st.ok["head"] + st.failed["head"])


def _with_failures(verdict, test, st: _CaseState):
    """A head that fails significantly more often than its base regressed, whatever its times say."""
    if test is None or not test.regressed or verdict.verdict == "regressed" or st.stop in (BASE_BROKEN, HEAD_BROKEN):
        return verdict
    example = st.first_error.get("head")
    return replace(verdict, verdict="regressed", p_value=test.p_value, method="fisher-failures",
                   equivalent=False, detectable=math.nan, detectable_high=math.nan,
                   reason=f"{test.reason}" + (f"; e.g. {example}" if example else "")
                          + f" (the times of the complete pairs alone: {verdict.verdict}, {verdict.reason})")


def _stop_after_pair(st: _CaseState, settings: GateSettings, values: dict[str, float | None]) -> None:
    for role in ("base", "head"):
        if values[role] is None:
            st.stop = NO_METRIC
            return
    for role, broken in (("base", BASE_BROKEN), ("head", HEAD_BROKEN)):
        if st.streak[role] >= settings.max_failures:
            st.stop = broken if st.ok[role] == 0 else FAILING
            return
    if st.decided():
        ended = not st.regressed() and any(t.verdict().verdict == "inconclusive" for t in st.tests.values())
        st.stop = MAX_PAIRS if ended else DECIDED
    elif len(st.complete()[0]) >= max(t.max_pairs for t in st.tests.values()):
        st.stop = MAX_PAIRS  # a guarded timing missing from some pairs: its test ends here, with a final look


def _run_pair(st: _CaseState, sides: dict[str, Side], writers: dict[str, ResultsWriter],
              settings: GateSettings, sampler: Sampler) -> dict[str, Sample]:
    """One base and one head process back to back; the order alternates A B, B A, ..."""
    index = st.attempted
    order = ("base", "head") if index % 2 == 0 else ("head", "base")
    samples = {}
    started = time.monotonic()
    for position, role in enumerate(order):
        run = sides[role].run_settings(settings.run)
        sample = sampler(st.case, "timing", "cold", index, run)
        sample.pair, sample.pair_position = index, position
        writers[role].append(st.case.id, sample)
        samples[role] = sample
    st.pair_wall_s.append(time.monotonic() - started)
    return samples


def _count_sampler(sides: dict[str, Side], writers: dict[str, ResultsWriter], settings: GateSettings,
                   sampler: Sampler) -> "tiering.TakeSample":
    """The count tier's sampler: one sample of a kind on a side, recorded in that side's file."""

    def take(case: Case, kind: str, index: int, role: str) -> Sample:
        sample = sampler(case, kind, "cold", index, sides[role].run_settings(settings.run))
        writers[role].append(case.id, sample)
        return sample

    return take


def _uncounted(backend: str) -> str | None:
    from .. import engines

    try:
        return engines.get(backend).uncounted
    except Exception:  # a plugin that cannot load: nothing known about it
        return None


def _unsteady(backend: str) -> dict[str, str]:
    """The count-tier metrics this backend's framework does not repeat (registry ``Metric.unsteady``)."""
    from .. import engines

    try:
        framework = engines.get(backend).framework
    except Exception:  # a plugin that cannot load: nothing known about it
        return {}
    found = {m: metrics.get(m).unsteady_for(framework) for m in tiering.tier_metrics(tiering.INSTRUCTIONS)}
    return {m: why for m, why in found.items() if why}


def _not_settled_verdict(trail: "tiering.CaseTrail", st: _CaseState):
    """Inconclusive: the selected tiers did not settle the case and the time tier was not selected."""
    found = "; ".join(f"{t.tier}: {t.verdict} ({t.reason})" for t in trail.steps) or "no tier ran"
    return _failure_verdict("inconclusive", f"not settled by the selected tiers, and the time tier was not "
                            f"selected: {found}", st)


def run_gate(cases: list[Case], skipped: list[Skipped], base: Side, head: Side, settings: GateSettings,
             out_dir: Path, on_pair: Callable[[PairEvent], None] | None = None,
             on_note: Callable[[str], None] | None = None, sampler: Sampler = run_sample,
             shard: ShardSection | None = None) -> GateOutcome:
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

    Returns
    -------
    GateOutcome

    Raises
    ------
    KeyboardInterrupt
        Re-raised after saving the finished samples (files marked incomplete).
    """
    from .attribution import attribute

    out_dir.mkdir(parents=True, exist_ok=True)
    sides = {"base": base, "head": head}
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
    for stale in GATE_OUTPUTS:  # now this gate's: a previous verdict must not sit beside new, unfinished files
        (out_dir / stale).unlink(missing_ok=True)
    states = [_new_state(case, settings) for case in cases]
    by_id = {st.case.id: st for st in states}
    start = began = time.monotonic()
    finished = False

    def take_pair(st: _CaseState) -> dict[str, Sample]:
        samples = _run_pair(st, sides, writers, settings, sampler)
        for role in sides:
            if samples[role].ok:
                st.ok[role] += 1
                st.streak[role] = 0
            else:
                st.failed[role] += 1
                st.streak[role] += 1
                st.first_error.setdefault(role, samples[role].error or "unknown error")
        for m in settings.guard:
            found = {role: _value(samples[role], m) for role in sides}
            for role in sides:
                st.values[m][role].append(math.nan if found[role] is None else found[role])
            b, h = st.values[m]["base"][-1], st.values[m]["head"][-1]
            test = st.tests.get(m)
            if test is not None and not test.done() and not (math.isnan(b) or math.isnan(h)):
                test.add(b, h)
        _stop_after_pair(st, settings, {role: _value(samples[role], settings.metric) for role in sides})
        if on_pair:
            on_pair(PairEvent(st.case.id, st.attempted - 1, samples["base"], samples["head"], settings.metric,
                              st.test.verdict(), len(st.complete()[0]), time.monotonic() - start,
                              settings.budget_s))
        return samples

    try:
        trails = tiering.run_tiers(cases, settings.tiers, lambda case: take_pair(by_id[case.id]),
                                   _count_sampler(sides, writers, settings, sampler), settings.count_repeat,
                                   _uncounted, on_note, _unsteady, across_envs=environments_differ(sides))
        for st in states:
            settled = trails[st.case.id].settled
            if settled:
                rest = tiering.uncounted_guards(settings.guard, settled.step) if settled.step else ()
                if (st.stop is None and rest and tiering.TIME in settings.tiers
                        and settled.verdict.verdict != "regressed"):
                    _screen(st, settings, rest)
                else:
                    st.stop = st.stop or DECIDED
            elif tiering.TIME not in settings.tiers:
                broken = any(t.broken for t in trails[st.case.id].steps)
                st.stop = st.stop or (COUNT_BROKEN if broken else NOT_SETTLED)
        start = time.monotonic()  # the budget is the time tier's
        while True:
            active = [st for st in states if st.stop is None]
            if not active:
                break
            for st in active:
                if not st.fits(time.monotonic() - start, settings.budget_s):
                    st.stop = BUDGET
                    continue
                take_pair(st)
        if settings.allocations:
            for st in states:
                if st.stop in (BASE_BROKEN, HEAD_BROKEN):
                    continue
                for i in range(settings.alloc_repeat):
                    for role in ("base", "head") if i % 2 == 0 else ("head", "base"):
                        sample = sampler(st.case, "allocations", "cold", i,
                                         sides[role].run_settings(settings.run))
                        writers[role].append(st.case.id, sample)
                        if on_note:
                            state = "ok" if sample.ok else f"failed: {sample.error}"
                            on_note(f"allocations {role} {st.case.id}: "
                                    + (f"{sample.alloc_count:,} allocations" if sample.ok else state))
        outcomes = _outcomes(states, writers, settings, trails)
        if settings.profiles:
            _profile_regressions(outcomes, states, sides, writers, settings, sampler, on_note)
        finished = True
    finally:
        for writer in writers.values():
            writer.finish(finished)
    elapsed = time.monotonic() - began
    results = {role: w.results for role, w in writers.items()}
    for outcome in outcomes:
        if outcome.regressed_anything():
            outcome.attribution = attribute(results["base"].case(outcome.case), results["head"].case(outcome.case),
                                            metric=settings.metric)
    files = {role: str(w.out) for role, w in writers.items()}
    return GateOutcome(base.revision, head.revision, settings, outcomes, list(skipped), elapsed, files, shard,
                       writers["head"].results.fingerprint)


def _outcomes(states: list[_CaseState], writers: dict[str, ResultsWriter], settings: GateSettings,
              trails: "dict[str, tiering.CaseTrail]") -> list[CaseOutcome]:
    """Each case's decision from its tiers, its pairs, its failures and its counters (no attribution yet)."""
    from .compare import compare_results
    from .stats import summarize

    explain = compare_results(writers["base"].results, writers["head"].results, metrics=EXPLAIN_METRICS,
                              across_envs=True)  # the gate paired its sides on purpose, environments and all
    outcomes = []
    for st in states:
        b, h = st.complete()
        changes = [r for r in explain.rows if r.case == st.case.id and r.verdict.verdict != "unchanged"]
        failures = _failure_test(st)
        trail = trails[st.case.id]
        figure, context, guards = None, [], []
        broken = _broken_verdict(st, settings)
        if trail.settled:
            verdict, tier = trail.settled.verdict, trail.settled.tier
            evidence = trail.settled.evidence
            figure = evidence_figure(tier, evidence) if evidence else None
            verdict, tier, figure, context, guards = _settled_and_screened(st, settings, trail, verdict, tier, figure)
        elif st.stop in (NOT_SETTLED, COUNT_BROKEN):
            verdict, tier = _not_settled_verdict(trail, st), trail.steps[-1].tier if trail.steps else tiering.TIME
        elif broken is not None:
            verdict, tier = broken, tiering.TIME
        else:
            guards = _guards(st, settings)
            lead, verdict = _combined_verdict(guards, settings.metric)
            tier, figure = tiering.TIME, lead.figure()
            context = _count_context(trail)
        verdict = _with_failures(verdict, failures, st)
        stop = st.stop or BUDGET
        held = head_failures.held_for_head_failures(verdict, st.failed, st.attempted, len(b), settings.min_pairs,
                                                    st.first_error)
        if held is not None:
            verdict, stop = held, HEAD_FAILING
        if verdict.method == "fisher-failures" or held is not None:
            figure = None
        outcomes.append(CaseOutcome(st.case.id, verdict, len(b), st.attempted, dict(st.failed), sum(st.pair_wall_s),
                                    stop, summarize(b), summarize(h), changes, failures,
                                    tier=tier, trail=trail.steps, first_error=dict(st.first_error), figure=figure,
                                    context=context, guards=guards))
    return outcomes


def _time_context(st: _CaseState) -> list[Figure]:
    """The gated timing over the pairs taken so far, as context for a verdict of a count tier."""
    base, head = st.complete()
    if not base:
        return []
    gb, gh = _geometric_mean(base), _geometric_mean(head)
    return [Figure(st.metric, tiering.TIME, gb, gh, gh / gb, None, None,
                   f"geometric mean of {len(base)} pair{'s' if len(base) != 1 else ''}", len(base))]


def _count_context(trail: "tiering.CaseTrail") -> list[Figure]:
    """The first-gradient window's instruction count, as context for a verdict of the time tier."""
    for step in trail.steps:
        for e in step.evidence:
            if step.tier == tiering.INSTRUCTIONS and e["metric"] == "instructions":
                return [evidence_figure(step.tier, e)]
    return []


def _settled_and_screened(st: _CaseState, settings: GateSettings, trail: "tiering.CaseTrail", verdict, tier: str,
                          figure: Figure | None):
    """A case a count tier settled: its verdict stands unless the time tier's screen of the timings the counts
    do not cover found a regression. Either way the trail says what guarded those timings."""
    context = _time_context(st)
    if not st.screened:
        rest = tiering.uncounted_guards(settings.guard, trail.settled.step) if trail.settled.step else ()
        if rest and verdict.verdict != "regressed" and tiering.TIME not in settings.tiers:
            names = ", ".join(_brief(m) for m in rest)
            trail.steps.append(tiering.TierStep(tiering.TIME, False, "inconclusive",
                                                f"not run: {names} are not counted by the tiers before it, and the "
                                                "time tier was not selected, so they were not guarded"))
        return verdict, tier, figure, context, []
    guards = _guards(st, settings)
    lead, screened = _combined_verdict(guards, settings.metric)
    if screened.verdict == "regressed":
        return screened, tiering.TIME, lead.figure(), [figure] if figure else [], guards
    names = ", ".join(_brief(g.metric) for g in guards)
    found = "; ".join(f"{_brief(g.metric)} {verdict_words(g.verdict)}" for g in guards)
    trail.steps.append(tiering.TierStep(
        tiering.TIME, False, screened.verdict,
        f"screen of what the counts do not cover ({names}), {lead.pairs} pairs, one look for gross regressions: "
        f"{found}"))
    return verdict, tier, figure, context, guards


def verdict_words(v) -> str:
    """``inconclusive (could detect ≥ 52 %)``, ``unchanged (1.003×)``: a guard's verdict in a few words."""
    if v.verdict == "inconclusive" and math.isfinite(v.detectable):
        return f"no regression shown (could detect ≥ {fmt.percent(v.detectable)})"
    return f"{v.verdict} ({fmt.factor(v.ratio)})"


def _profile_regressions(outcomes: list[CaseOutcome], states: list[_CaseState], sides: dict[str, Side],
                         writers: dict[str, ResultsWriter], settings: GateSettings, sampler: Sampler,
                         on_note: Callable[[str], None] | None) -> None:
    """Sampled stacks of every regressed case, ``settings.profiles`` processes per side, alternating.

    After the decision and outside the budget: they are only taken when there is a regression
    to explain, and a profile failing (an older base without the profile probe) costs the
    attribution its function list, never the verdict.
    """
    by_id = {st.case.id: st for st in states}
    for outcome in outcomes:
        st = by_id[outcome.case]
        if not outcome.regressed_anything() or st.stop in (BASE_BROKEN, HEAD_BROKEN):
            continue
        for i in range(settings.profiles):
            for role in ("base", "head") if i % 2 == 0 else ("head", "base"):
                sample = sampler(st.case, "profile", "cold", i, sides[role].run_settings(settings.run))
                writers[role].append(st.case.id, sample)
                if on_note:
                    on_note(f"profile {role} {st.case.id}: "
                            + (f"{len(sample.profile_top or [])} functions" if sample.ok else f"failed: {sample.error}"))
