"""Comparing two results files: per case and metric, a ratio with an interval and a verdict.

Why two kinds of comparison: timings (``first_grad_s``, ``compile_s``, ...) are noisy
(one cold sample's CV is 11-25 % here), so a change only counts when a test finds it
significant *and* its estimate reaches a minimum effect (``stats.compare_unpaired``).
Deterministic counters (allocations, instructions, structural counters such as
``counters.jaxpr_eqns``) repeat exactly or within 0.5 %, so a tight relative threshold
decides (``stats.compare_counter``); a doubled jaxpr explains a slower compile without
any timing noise.

Two results files measured at different times cannot tell machine drift from a code
change; that is what ``ttfg gate`` (paired, interleaved) is for. The comparison says so
in its notes when the two files were measured under different conditions.

Which metrics exist, their kinds and default thresholds come from the registry
(``ttfg.metrics``). This module holds the logic only; the command line is in
``cli/gate.py``, terminal tables in ``present/compare_views.py`` and Markdown in
``present/markdown.py``, all numbers formatted by ``harness/fmt.py``.
"""

from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass, field
from typing import Iterable

from .. import metrics as registry
from ..errors import UsageError
from ..metrics import COUNTER_PREFIX
from ..results.machines import check_machines
from ..results.model import Results
# One case and metric compared: a record of the layer below, where gate.json reads a gate's changed counters back.
from ..results.verdict import Row

#: What ``ttfg compare`` looks at unless told otherwise (the registry's choice); absent metrics are skipped.
DEFAULT_METRICS = (*registry.by_sample_kind(lambda m: m.compared_by_default), "counters.*")
DEFAULT_ALPHA = 0.01
#: Environment fields that change what a timing means; a difference becomes a note.
CONDITIONS = ("hostname", "cpu", "cpu_count", "python", "packages", "probe_env")


@dataclass(frozen=True)
class Metric:
    """Where a metric lives in a results file and how it is compared."""

    name: str
    #: The sample kind holding it: ``timing``, ``allocations`` or ``instructions``.
    kind: str
    #: Cache mode to select (only timing samples have one).
    cache: str | None
    #: True for counters: compared by a relative threshold, not by a test.
    deterministic: bool


def metric_info(name: str, cache: str = "cold") -> Metric:
    """Classify a metric name (from the registry, ``ttfg.metrics``).

    Parameters
    ----------
    name : str
        A sample field (``first_grad_s``, ``alloc_count``, ``instructions``), a derived
        metric (``first_grad_compile_s``) or ``counters.NAME``.
    cache : str
        Cache mode of the timing samples to compare (``cold`` or ``warm``).

    Returns
    -------
    Metric

    Raises
    ------
    UsageError
        When the name is not a metric of the results format.
    """
    info = registry.get(name)
    return Metric(name, info.sample, cache if info.cache_applies else None, info.deterministic)


def is_pattern(text: str) -> bool:
    return any(ch in text for ch in "*?[")


def available_metrics(results: Results) -> list[str]:
    """Metrics with at least one value in some good sample of ``results``, in a stable order."""
    found: set[str] = set()
    counters: set[str] = set()
    listed = registry.by_sample_kind(lambda m: not registry.is_counter(m.name))
    for case in results.cases:
        for s in case.samples:
            if not s.ok:
                continue
            found.update(name for name in listed
                         if registry.get(name).sample == s["kind"] and registry.sample_value(s, name) is not None)
            for key, value in (s.get("counters") or {}).items():
                if registry.raw(s, COUNTER_PREFIX + key) is not None:
                    counters.add(COUNTER_PREFIX + key)
    return [m for m in listed if m in found] + sorted(counters)


def expand_metrics(patterns: Iterable[str] | None, *results: Results) -> list[str]:
    """Turn ``--metric`` values (names, globs, comma lists) into metric names.

    Parameters
    ----------
    patterns : iterable of str or None
        Names or glob patterns; ``None`` means :data:`DEFAULT_METRICS`.
    *results : Results
        Files whose metrics the patterns are matched against.

    Returns
    -------
    list of str
        Names in the order asked, without duplicates. A plain name is kept even
        when no file has it (the comparison then skips it); a pattern yields only
        metrics some file has.

    Raises
    ------
    UsageError
        For a plain name that is not a metric.
    """
    patterns = [p.strip() for text in (patterns or DEFAULT_METRICS) for p in text.split(",") if p.strip()]
    available: list[str] = []
    for res in results:
        available += [m for m in available_metrics(res) if m not in available]
    out: list[str] = []
    for pattern in patterns:
        if is_pattern(pattern):
            out += [m for m in available if fnmatch.fnmatchcase(m, pattern) and m not in out]
        else:
            metric_info(pattern)
            if pattern not in out:
                out.append(pattern)
    return out


def parse_fraction(text: str, what: str) -> float:
    """``"0.05"`` or ``"5%"`` -> 0.05; must be finite and non-negative."""
    raw = text.strip()
    try:
        value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        raise UsageError(f"{what}: {text!r} is not a number or a percentage such as 0.05 or 5%") from None
    if not math.isfinite(value) or value < 0:
        raise UsageError(f"{what}: {text!r} must be a finite, non-negative fraction")
    return value


@dataclass
class Thresholds:
    """A global relative limit plus per-metric overrides (names or glob patterns).

    Built from command-line values such as ``0.05`` (global) and
    ``first_grad_s=0.10`` or ``counters.*=0`` (per metric). An exact name wins over a
    pattern, a pattern over the global value, the global value over the registry's
    ``threshold`` of the metric (``default`` None: the registry decides).
    """

    default: float | None = None
    per_metric: dict[str, float] = field(default_factory=dict)

    @classmethod
    def parse(cls, texts: Iterable[str] | None, default: float | None, what: str) -> "Thresholds":
        """Parse repeated ``VALUE`` / ``METRIC=VALUE`` options.

        Parameters
        ----------
        texts : iterable of str or None
            Option values as given on the command line.
        default : float or None
            The global value when no bare ``VALUE`` is given (None: each metric's
            registry threshold).
        what : str
            The option's name, for error messages.

        Returns
        -------
        Thresholds

        Raises
        ------
        UsageError
            On a malformed value or an unknown metric name.
        """
        out = cls(default)
        for text in texts or ():
            key, eq, value = text.partition("=")
            if not eq:
                out.default = parse_fraction(text, what)
                continue
            key = key.strip()
            if not is_pattern(key):
                metric_info(key)
            out.per_metric[key] = parse_fraction(value, f"{what} {key}")
        return out

    def get(self, metric: str) -> float:
        if metric in self.per_metric:
            return self.per_metric[metric]
        for key, value in self.per_metric.items():
            if is_pattern(key) and fnmatch.fnmatchcase(metric, key):
                return value
        return registry.get(metric).threshold if self.default is None else self.default


def _thresholds(value: "Thresholds | float | None") -> Thresholds:
    if isinstance(value, Thresholds):
        return value
    return Thresholds(None if value is None else float(value))


@dataclass
class Comparison:
    """Every row of a comparison, plus notes a reader needs to trust it."""

    base_label: str
    head_label: str
    alpha: float
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: Where the change went, for every case with a regressed row (``attribution.attribute``).
    attributions: list = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        from .stats import VERDICTS

        out = dict.fromkeys(VERDICTS, 0)
        for row in self.rows:
            out[row.verdict.verdict] = out.get(row.verdict.verdict, 0) + 1
        return out

    def with_verdict(self, *verdicts: str) -> list[Row]:
        return [r for r in self.rows if r.verdict.verdict in verdicts]

    def exit_code(self) -> int:
        """0 no regression, 1 a regression, 2 nothing was comparable."""
        if not self.rows:
            return 2
        return 1 if self.with_verdict("regressed") else 0

    def to_json(self) -> dict:
        return {"format": "ttfg-comparison", "version": 1, "base": self.base_label, "head": self.head_label,
                "alpha": self.alpha, "counts": self.counts(), "exit_code": self.exit_code(),
                "notes": self.notes, "rows": [r.to_json() for r in self.rows],
                "attributions": [a.to_json() for a in self.attributions]}


def condition_notes(base: Results, head: Results) -> list[str]:
    """Differences in measuring conditions (host, CPU, versions, threads) between two files."""
    notes = []
    for key in CONDITIONS:
        b, h = base.environment.get(key), head.environment.get(key)
        if b is None or h is None or b == h:
            continue
        if isinstance(b, dict) and isinstance(h, dict):
            diffs = [f"{k} {b.get(k)} vs {h.get(k)}" for k in sorted(set(b) | set(h)) if b.get(k) != h.get(k)]
            detail = "; ".join(diffs)
        else:
            detail = f"{b} vs {h}"
        notes.append(f"measured under different conditions, {key}: {detail}; timing verdicts may reflect that, "
                     "not the code")
    for label, res in (("base", base), ("head", head)):
        if not res.complete:
            where = f" {res.path}" if res.path else ""
            notes.append(f"{label} results{where} are incomplete (the run was interrupted or is still going)")
    return notes


def _failure_row(case_id: str, base_case, head_case) -> tuple[Row | None, bool]:
    """Failures are evidence: ``(row or None, whether the metrics can still be compared)``.

    A head that fails significantly more often than its base is a regression
    (:func:`stats.compare_failures`), even when its few good samples look fine: the
    reported repro (head failed 3 of 4 processes, base 0 of 4) used to pass as
    "inconclusive". A side with no good sample at all leaves nothing to compare.
    """
    from .stats import Verdict, compare_failures, summarize

    b_ok, h_ok = len(base_case.good("timing")), len(head_case.good("timing"))
    b_bad = [s for s in base_case.samples if s.kind == "timing" and not s.ok]
    h_bad = [s for s in head_case.samples if s.kind == "timing" and not s.ok]
    nan = math.nan
    test = compare_failures(len(b_bad), b_ok + len(b_bad), len(h_bad), h_ok + len(h_bad))
    comparable = bool(b_ok and h_ok)
    if test.regressed:
        example = f"; e.g. {h_bad[0].get('error')}" if h_bad else ""
        return (Row(case_id, "failures", "failure", 0.0, summarize([]), summarize([]),
                    Verdict("regressed", nan, nan, nan, test.p_value, b_ok, h_ok, "fisher-failures",
                            test.reason + example)), comparable)
    if h_ok and not b_ok and b_bad:
        reason = (f"base has no good timing sample ({len(b_bad)} failed, e.g. {b_bad[0].get('error')}); "
                  "nothing to compare head against")
        return (Row(case_id, "failures", "failure", 0.0, summarize([]), summarize([]),
                    Verdict("inconclusive", nan, nan, nan, nan, 0, h_ok, "failure", reason)), False)
    return None, comparable


def compare_results(base: Results, head: Results, metrics: Iterable[str] | None = None,
                    min_effect: "Thresholds | float | None" = None, threshold: "Thresholds | float | None" = None,
                    alpha: float = DEFAULT_ALPHA, cache: str = "cold",
                    base_label: str | None = None, head_label: str | None = None, force: bool = False,
                    across_envs: bool = False) -> Comparison:
    """Compare every case present in both files, metric by metric.

    Parameters
    ----------
    base, head : Results
        Loaded results files (``record.load``).
    metrics : iterable of str or None
        Names or glob patterns (:func:`expand_metrics`); default :data:`DEFAULT_METRICS`.
    min_effect : Thresholds or float or None
        Minimum relative effect for timing metrics (default: the registry's, 5 %).
    threshold : Thresholds or float or None
        Relative threshold for deterministic counters (default: the registry's, 1 %).
    alpha : float
        Significance level of the timing tests.
    cache : str
        Which timing samples to compare: ``cold`` or ``warm``.
    base_label, head_label : str or None
        Names for the two sides in notes and output (default: their paths).
    force : bool
        Compare even when the two files' machine fingerprints differ (the notes say so).
    across_envs : bool
        Compare files measured in different environments (package versions differ; the
        notes name them). The gate passes it: it paired its sides on purpose.

    Returns
    -------
    Comparison
        One row per case and metric with values on both sides (others are skipped),
        plus a ``failure`` row for a case that one side could not run at all, and
        notes on cases present on one side only and on differing conditions; an
        attribution for every case with a regressed row.

    Raises
    ------
    MachineMismatch
        When the machines differ where it matters (``ttfg.results.machines``): any
        timing metric needs the same fingerprint, counters the same architecture,
        Python and packages; unless ``force``.
    """
    from .stats import compare_counter, compare_unpaired, summarize

    effects = _thresholds(min_effect)
    limits = _thresholds(threshold)
    names = expand_metrics(metrics, base, head)
    out = Comparison(base_label or str(base.path or "base"), head_label or str(head.path or "head"), alpha)
    timings = any(not metric_info(n, cache).deterministic for n in names)
    out.notes += check_machines([(out.base_label, base.fingerprint), (out.head_label, head.fingerprint)],
                                "timings" if timings else "counts", force, across_envs=across_envs)
    out.notes += condition_notes(base, head)
    out.notes += _environment_notes(base, head, out, across_envs)
    # A case's id names its environment (``model/backend/variant/env``, ``ttfg run --env``): cases of
    # different environments pair only when asked, by the id without the environment.
    key = plain_id if across_envs else (lambda case_id: case_id)
    head_by = {key(c.id): c for c in head.cases}
    base_keys = {key(c.id) for c in base.cases}
    only_base = [c.id for c in base.cases if key(c.id) not in head_by and not c.skipped]
    only_head = [c.id for c in head.cases if key(c.id) not in base_keys and not c.skipped]
    if only_base:
        out.notes.append(f"only in base (not compared): {', '.join(only_base)}")
    if only_head:
        out.notes.append(f"only in head (not compared): {', '.join(only_head)}")
    if not across_envs and {plain_id(i) for i in only_base} & {plain_id(i) for i in only_head}:
        out.notes.append("base and head hold the same cases in different environments: --across-envs pairs them")
    pairs: dict[str, tuple] = {}
    for base_case in base.cases:
        head_case = head_by.get(key(base_case.id))
        if head_case is None:
            continue
        pairs[base_case.id] = (base_case, head_case)
        if base_case.skipped or head_case.skipped:
            out.notes.append(f"{base_case.id}: skipped on {'base' if base_case.skipped else 'head'} "
                             f"({base_case.skipped or head_case.skipped}); not compared")
            continue
        failure, comparable = _failure_row(base_case.id, base_case, head_case)
        if failure:
            out.rows.append(failure)
        if not comparable:
            continue
        for name in names:
            info = metric_info(name, cache)
            b = registry.case_values(base_case, name, cache)
            h = registry.case_values(head_case, name, cache)
            if not b or not h:
                continue  # absent on either side: nothing to compare
            if info.deterministic:
                limit = limits.get(name)
                verdict = compare_counter(b, h, threshold=limit)
            else:
                limit = effects.get(name)
                verdict = compare_unpaired(b, h, min_effect=limit, alpha=alpha)
            out.rows.append(Row(base_case.id, name, "counter" if info.deterministic else "timing", limit,
                                summarize(b), summarize(h), verdict))
    from .attribution import attribute

    regressed = dict.fromkeys(r.case for r in out.rows if r.verdict.verdict == "regressed")
    headline = next((n for n in names if not metric_info(n).deterministic), "first_grad_s")
    out.attributions = [a for case in regressed
                        if (a := attribute(*pairs[case], headline, cache)) is not None]
    return out


def _environment_notes(base: Results, head: Results, out: "Comparison", across_envs: bool) -> list[str]:
    """Check that the pairing compares environments by content, never by name; notes for what it crosses.

    Raises
    ------
    EnvironmentMismatch
        When both files name an environment alike but hold different packages in it (the
        packages named; ``--across-envs`` pairs them on purpose), or when ``--across-envs``
        would pair one case of one file with several environments of the other.
    """
    from ..results import identity

    notes = []
    differing = identity.same_named(base, head)
    for name, changes in differing.items():
        if not across_envs:
            raise identity.EnvironmentMismatch(
                f"{out.base_label} and {out.head_label} both name an environment {name!r}, but it holds different "
                f"packages ({'; '.join(changes[:8])}{' ...' if len(changes) > 8 else ''}): a name is a label, not "
                "an environment. --across-envs compares them as two environments")
        notes.append(f"environment {name!r} differs between the files: {'; '.join(changes)}")
    if across_envs:
        for results, label in ((base, out.base_label), (head, out.head_label)):
            by_plain: dict[str, set] = {}
            for case in results.cases:
                if not case.skipped:
                    by_plain.setdefault(plain_id(case.id), set()).add(identity.label(case.id))
            several = {p: sorted(filter(None, envs)) for p, envs in by_plain.items() if len(envs) > 1}
            if several:
                case, envs = next(iter(several.items()))
                raise identity.EnvironmentMismatch(
                    f"{label} holds {case} in {len(envs)} environments ({', '.join(envs)}): --across-envs pairs one "
                    "environment a side, so the pairing would be a guess. Compare files of one environment each "
                    "(ttfg run --env NAME=... per file), or drop --across-envs to pair environments by name")
    return notes


def plain_id(case_id: str) -> str:
    """A case id without its environment (the first three parts: model/backend/variant)."""
    return "/".join(case_id.split("/")[:3])
