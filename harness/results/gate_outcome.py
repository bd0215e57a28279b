"""The gate's outcome as one typed document: what ``gate.json`` holds, in memory and as JSON.

Why one type: the gate writes this document, and ``ttfg explain``, ``ttfg merge gate``,
the report page and the terminal read it. Each used to read its own dict (and two parsed
verdicts back into objects); here the outcome is typed once (:class:`GateOutcome`,
:class:`CaseOutcome`, :class:`Figure`, :class:`Guard`), written by ``to_json`` and read
by ``from_json``. Reading a file, checking it and bringing an older one to today's shape
is ``gate_file.py``'s job, and the whole file's type (this outcome and what its writer added) is
``gate_document.GateDocument``.

Why the statistics' own records: this module sits in ``results/``, below the ``decide/``
layer that computes verdicts, so the records a case holds are defined at this layer and
``decide/`` builds them: the verdict, summaries and failure test (``verdict.py``), the
counters that changed (``verdict.Row``) and each tier's finding (:class:`TierStep`). A
fresh outcome and a loaded one are one type, with one JSON.
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, field

from .attribution_record import Attribution
from .count_store import STRUCTURAL
from .model import Fingerprint, Results, ShardSection
from .validate import fingerprint_from_json, shard_from_json
from .verdict import VERDICTS, FailureTest, Row, Summary, Verdict

FORMAT, VERSION = "ttfg-gate", 1
#: Why a case stopped sampling (``CaseOutcome.stop``).
DECIDED, MAX_PAIRS, BUDGET = "decided", "max pairs", "budget"
BASE_BROKEN, HEAD_BROKEN, FAILING, NO_METRIC = "base cannot run", "head cannot run", "repeated failures", "metric missing"
NOT_SETTLED, COUNT_BROKEN = "not settled", "counting failed"
#: A head that failed with too few complete pairs left (``decide/head_failures.py``): exit 2, never a pass.
HEAD_FAILING = "head failing"



# ---------------------------------------------------------------------------- the typed document


def _finite_or_none(v):
    return v if isinstance(v, (int, float)) and math.isfinite(v) else None


def _nan(v) -> float:
    """A number as the document keeps it in memory: null (not estimable) is NaN, as the statistics wrote it."""
    return math.nan if v is None else v


@dataclass
class TierStep:
    """What one tier (``decide/tiers.py``) found for one case."""

    tier: str
    #: True when this tier decided the case.
    settled: bool
    #: regressed, improved, unchanged, inconclusive (what the evidence says, settled or not).
    verdict: str
    reason: str
    #: Per metric: base and head values (medians), ratio, margin, verdict.
    evidence: list[dict] = field(default_factory=list)
    #: The first error of a sample this tier needed and could not get (a valgrind failure), else None.
    broken: str | None = None
    #: A count landed at the edge of its margin (``count_margins.judge``): one more count a side may settle it.
    #: In memory only: the tiers' loop acts on it, and ``gate.json`` does not keep it.
    edge: bool = False
    #: Sample kinds whose count moved beyond an uncalibrated margin on one base count (``decide/steadiness.py``): a
    #: second base count shows whether it repeats. In memory only, like ``edge``.
    recount_base: tuple[str, ...] = ()

    def to_json(self) -> dict:
        return {"tier": self.tier, "settled": self.settled, "verdict": self.verdict, "reason": self.reason,
                "broken": self.broken,
                "evidence": [{k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                              for k, v in e.items()} for e in self.evidence]}

    @classmethod
    def from_json(cls, data: dict) -> "TierStep":
        return cls(data.get("tier") or "", bool(data.get("settled")), data.get("verdict") or "inconclusive",
                   data.get("reason") or "", list(data.get("evidence") or []), data.get("broken"))


@dataclass
class Screen:
    """What the time tier's screen did for a case a count settled (``decide/time_screen.py``): the guarded timings no
    count covers, screened short (a few pairs looking only for a gross slowdown) or in full (one look at
    ``--min-pairs`` pairs), and why."""

    #: The guarded timings screened (no count covers them: the import, the whole process; or a phase whose count
    #: was evidence only).
    metrics: list[str]
    #: True when the short rule applied (every guarded timing a count can cover was covered).
    short: bool
    #: Complete pairs the screen looked at, the structural tier's first pair included.
    pairs: int
    #: True when a short screen's pair looked slow beyond ``threshold`` (or a pair was missing) and the full
    #: screen decided.
    escalated: bool
    #: The slowdown of one pair's head over its base that escalates a short screen (0.10: +10 %); None when the
    #: screen was full from the start.
    threshold: float | None
    why: str

    def to_json(self) -> dict:
        return {"metrics": list(self.metrics), "short": self.short, "pairs": self.pairs, "escalated": self.escalated,
                "threshold": self.threshold, "why": self.why}

    @classmethod
    def from_json(cls, data: dict) -> "Screen":
        return cls(list(data.get("metrics") or []), bool(data.get("short")), int(data.get("pairs") or 0),
                   bool(data.get("escalated")), data.get("threshold"), data.get("why") or "")


@dataclass(frozen=True)
class RevisionData:
    """A side's revision as the gate recorded it (``provision.worktrees.Revision``'s fields and JSON)."""

    name: str
    commit: str
    subject: str = ""

    @property
    def short(self) -> str:
        return self.commit[:10]

    @classmethod
    def of(cls, rev) -> "RevisionData":
        return cls(rev.name, rev.commit, rev.subject)

    def to_json(self) -> dict:
        return {"rev": self.name, "commit": self.commit, "subject": self.subject}

    @classmethod
    def from_json(cls, data: dict) -> "RevisionData":
        return cls(data["rev"], data["commit"], data.get("subject") or "")


@dataclass(frozen=True)
class SkipData:
    """A case not measured, and why."""

    id: str
    reason: str

    def to_json(self) -> dict:
        return {"case": self.id, "reason": self.reason}


@dataclass
class SettingsData:
    """How the gate sampled and decided, as ``decide.gate_settings.GateSettings.to_json`` wrote it.

    The whole dict is kept (it is written back as it came); the fields readers use are named.
    """

    data: dict

    @property
    def metric(self) -> str:
        return self.data.get("metric") or "first_grad_s"

    @property
    def min_effect(self) -> float:
        return self.data["min_effect"]

    @property
    def alpha(self) -> float:
        return self.data["alpha"]

    @property
    def budget_s(self) -> float:
        return _nan(self.data.get("budget_s"))

    @property
    def max_pairs(self) -> int:
        return self.data.get("max_pairs") or 0

    @property
    def guard(self) -> tuple[str, ...]:
        """The guarded timings (gates before the guard: the gated metric alone)."""
        return tuple(self.data.get("guard") or (self.metric,))

    @property
    def tiers(self) -> tuple[str, ...]:
        """The tiers that could decide (gates before tiers: the time tier alone)."""
        return tuple(self.data.get("tiers") or ("time",))

    @property
    def guard_alpha(self) -> float:
        return self.alpha / len(self.guard)

    def to_json(self) -> dict:
        return self.data


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
    verdict: Verdict
    base: float
    head: float
    pairs: int

    def figure(self) -> Figure:
        v = self.verdict
        return Figure(self.metric, "time", _finite_or_none(self.base), _finite_or_none(self.head),
                      _finite_or_none(v.ratio), _finite_or_none(v.ci_low), _finite_or_none(v.ci_high),
                      f"geometric mean of {self.pairs} pair{'s' if self.pairs != 1 else ''}", self.pairs)

    def to_json(self) -> dict:
        return {"metric": self.metric, "verdict": self.verdict.to_json(), "base": _finite_or_none(self.base),
                "head": _finite_or_none(self.head), "pairs": self.pairs}

    @classmethod
    def from_json(cls, data: dict) -> "Guard":
        return cls(data["metric"], Verdict.from_json(data.get("verdict")), _nan(data.get("base")),
                   _nan(data.get("head")), data.get("pairs") or 0)


@dataclass
class CaseOutcome:
    """The gate's decision for one case."""

    case: str
    verdict: Verdict
    #: Complete pairs (both samples good) the verdict rests on.
    pairs: int
    attempted: int
    failed: dict[str, int]
    wall_s: float
    stop: str
    #: The gated metric over the complete pairs.
    base: Summary
    head: Summary
    #: Counter comparisons whose verdict is not "unchanged": what changed structurally.
    changes: list[Row] = field(default_factory=list)
    #: Did head fail significantly more often than base? (None when no side failed.)
    failures: FailureTest | None = None
    #: Where the change went (phases, counters, functions), for a case where anything regressed.
    attribution: Attribution | None = None
    #: The tier that decided (``decide/tiers.py``: structural, source, instructions, time) and every tier's finding.
    tier: str = "time"
    trail: list[TierStep] = field(default_factory=list)
    #: The first error of each side that failed (for the summary's row).
    first_error: dict[str, str] = field(default_factory=dict)
    #: The numbers of the metric that decided (None when a failure decided), in its unit.
    figure: Figure | None = None
    #: Numbers of other tiers, shown beside the deciding ones and labelled as context.
    context: list[Figure] = field(default_factory=list)
    #: The time tier's test of each guarded timing (empty when the time tier did not run).
    guards: list[Guard] = field(default_factory=list)
    #: The shard that measured the case (a merged gate's cases only).
    shard: str | None = None
    #: What the case cost, by tier: ``{tier: {"processes": N, "seconds": S}}`` over both sides (``seconds``: the
    #: processes' own wall time summed; base and head count at the same time, so a tier's wall time is less). The
    #: structural tier's processes are the first timing pair, which the time tier goes on from. None in older files.
    cost: dict | None = None
    #: A regression a ``Ttfg-Accept`` commit trailer accepted (``decide/accept.py``): pattern, metric, reason,
    #: author, commit; None when not accepted. An accepted case does not fail the gate.
    accepted: dict | None = None
    #: Good samples of every kind per side (``base``, ``head``); None in a document written before it was kept
    #: (``decide/unmeasured.py`` then estimates it). A side with none is never "unchanged" or "passed".
    good: dict[str, int] | None = None
    #: What the time tier's screen did (short or full, its pairs, escalated or not, why); None when the case was
    #: not screened (no count settled it, it regressed, the time tier was not selected) and in older files.
    screen: Screen | None = None
    #: Where the base's counts came from (``app/gate_baseline.py``): ``{"status": "stored", "from", "kinds",
    #: "verified"}``, ``{"status": "counted" | "off" | "none", "why"}``, with ``kept`` (counts written to the count
    #: store); None in older files.
    baseline: dict | None = None

    @property
    def base_first_stored(self) -> bool:
        """The base's first process was the count store's (``decide/stored_first.py``): no base process ran, and the
        base's results file holds no sample of the case."""
        record = self.baseline or {}
        return record.get("status") == "stored" and record.get("kinds") == [STRUCTURAL]

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
                "attribution": None if self.attribution is None else self.attribution.to_json(),
                **({"accepted": self.accepted} if self.accepted else {}),
                **({"good": dict(self.good)} if self.good is not None else {}),
                **({"cost": self.cost} if self.cost is not None else {}),
                **({"screen": self.screen.to_json()} if self.screen is not None else {}),
                **({"baseline": dict(self.baseline)} if self.baseline is not None else {}),
                **({"shard": self.shard} if self.shard is not None else {})}

    @classmethod
    def from_json(cls, data: dict) -> "CaseOutcome":
        """A case of a (migrated) document; see :func:`migrate`."""
        fig = data.get("figure")
        return cls(data["case"], Verdict.from_json(data.get("verdict")), data.get("pairs") or 0,
                   data.get("attempted") or 0, dict(data.get("failed") or {"base": 0, "head": 0}),
                   _nan(data.get("wall_s")), data.get("stop") or "", Summary.from_json(data.get("base")),
                   Summary.from_json(data.get("head")),
                   [Row.from_json(r) for r in data.get("changes") or []],
                   None if data.get("failures") is None else FailureTest.from_json(data["failures"]),
                   None if data.get("attribution") is None else Attribution.from_json(data["attribution"]),
                   data.get("tier") or "time",
                   [TierStep.from_json(t) for t in data.get("tiers") or []], dict(data.get("first_error") or {}),
                   None if fig is None else Figure.from_json(fig),
                   [Figure.from_json(f) for f in data.get("context") or []],
                   [Guard.from_json(g) for g in data.get("guards") or []], data.get("shard"),
                   cost=data.get("cost") if isinstance(data.get("cost"), dict) else None, accepted=data.get("accepted"),
                   good=None if data.get("good") is None else {k: int(v) for k, v in data["good"].items()},
                   screen=Screen.from_json(data["screen"]) if isinstance(data.get("screen"), dict) else None,
                   baseline=dict(data["baseline"]) if isinstance(data.get("baseline"), dict) else None)


@dataclass
class GateOutcome:
    """Everything the gate decided, and where its results files are."""

    base: RevisionData
    head: RevisionData
    settings: SettingsData
    cases: list[CaseOutcome]
    skipped: list[SkipData]
    elapsed_s: float
    files: dict[str, str]
    #: The shard this gate measured (``--shard I/N``), None for the whole selection.
    shard: ShardSection | None = None
    #: The machine both sides ran on.
    fingerprint: Fingerprint | None = None
    #: In memory only, never written: both sides' results as the gate held them when it ended (the same as
    #: ``files`` on disk), so that the use case need not read back what it just wrote; empty for a loaded file.
    results: dict[str, Results] = field(default_factory=dict, repr=False, compare=False)
    #: Every ``Ttfg-Accept`` trailer of the head's commits (``decide/accept.py``), with the cases each accepted
    #: (``used_by``, empty: unused) or why it cannot be used (``problem``); written only when there is one.
    acceptances: list[dict] = field(default_factory=list)
    #: Whether the head runs the base's program (``decide/source_proof.py``: ``proven``, ``why``, ``files``), as
    #: the source tier read it; written only when the gate asked.
    source: dict | None = None

    @property
    def attributions(self) -> dict[str, Attribution]:
        """Each attributed case's attribution, by case."""
        return {c.case: c.attribution for c in self.cases if c.attribution is not None}

    def regressions(self) -> list[CaseOutcome]:
        """The regressed cases that fail the gate (an accepted one does not)."""
        return [c for c in self.cases if c.verdict.verdict == "regressed" and not c.accepted]

    def accepted(self) -> list[CaseOutcome]:
        """The regressed cases a ``Ttfg-Accept`` trailer accepted."""
        return [c for c in self.cases if c.verdict.verdict == "regressed" and c.accepted]

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
        return {"format": FORMAT, "version": VERSION, "base": self.base.to_json(), "head": self.head.to_json(),
                "settings": self.settings.to_json(), "elapsed_s": self.elapsed_s, "exit_code": self.exit_code(),
                "files": self.files, "cases": [c.to_json() for c in self.cases],
                "skipped": [s.to_json() for s in self.skipped],
                "shard": None if self.shard is None else self.shard.to_json(),
                "fingerprint": None if self.fingerprint is None else self.fingerprint.to_json(),
                **({"acceptances": self.acceptances} if self.acceptances else {}),
                **({"source": self.source} if self.source is not None else {})}

    @classmethod
    def from_json(cls, data: dict, path: str | os.PathLike = "gate.json") -> "GateOutcome":
        """A checked, migrated document (:func:`load`) as the typed outcome."""
        return cls(RevisionData.from_json(data["base"]), RevisionData.from_json(data["head"]),
                   SettingsData(data["settings"]), [CaseOutcome.from_json(c) for c in data["cases"]],
                   [SkipData(s["case"], s["reason"]) for s in data.get("skipped") or []], _nan(data.get("elapsed_s")),
                   dict(data.get("files") or {}), shard_from_json(data.get("shard"), path),
                   fingerprint_from_json(data.get("fingerprint"), path),
                   acceptances=list(data.get("acceptances") or []),
                   source=data["source"] if isinstance(data.get("source"), dict) else None)


__all__ = ["BASE_BROKEN", "BUDGET", "COUNT_BROKEN", "CaseOutcome", "DECIDED", "FAILING", "FORMAT", "Figure", "GateOutcome",
           "Guard", "HEAD_BROKEN", "HEAD_FAILING", "MAX_PAIRS", "NOT_SETTLED", "NO_METRIC", "RevisionData", "Screen", "SettingsData",
           "SkipData", "TierStep", "VERDICTS", "VERSION"]
