"""Expected values of deterministic counters, committed with the code, with per-row margins.

Why: timings need many cold processes and a statistical test to say anything; a
structural counter (``counters.jaxpr_eqns``, ``counters.hlo_ops``, ``counters.fx_nodes``)
or an allocation count says the same thing exactly, in one process. Following PyTorch's
compile-time PR benchmarks (``expected_results.csv`` with a noise margin per row), the
expected value of each (case, metric) is committed; a change outside the margin fails
in *both* directions. A regression fails for the obvious reason; an unexpected
improvement fails so that the win is locked in: the author updates the file (the check
writes a suggested one), and a later change cannot silently give the win back.

The file is CSV with a header row::

    case,metric,expected,margin
    "resnet15/jax.jit/params=args,chain=unrolled",counters.jaxpr_eqns,304,0
    "resnet15/torch.eager/params=closure,chain=unrolled",alloc_count,4027,0.02

Case ids contain commas, so they are quoted (standard CSV). ``margin`` is relative: the row passes when ``expected * (1 - margin) <= measured <=
expected * (1 + margin)``, ``measured`` being the median over the good samples of the
results files given. Blank lines and lines starting with ``#`` are ignored.
"""

from __future__ import annotations

import csv
import io
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from .. import metrics as registry
from .compare import expand_metrics, metric_info
from ..errors import TtfgError, UsageError
from ..files import atomic_write_text
from ..results.record import Results

HEADER = ("case", "metric", "expected", "margin")
#: Metrics an expectations file tracks unless told otherwise (the registry's choice).
DEFAULT_METRICS = ("counters.*", *registry.names(lambda m: m.expected_by_default))
#: Check statuses; the first three fail. ``vanished``: the case ran and produced samples of
#: the metric's kind, but none carries the metric (a counter was renamed or dropped), so
#: the expectation cannot be checked; passing it would let a locked counter disappear
#: silently. ``not measured``: no sample of that kind was taken (e.g. no --allocations).
FAILING = ("regressed", "improved", "vanished")
STATUSES = (*FAILING, "ok", "not measured", "new")


class ExpectationsError(TtfgError):
    """An expectations file that cannot be read or is malformed; names file and line."""


@dataclass(frozen=True)
class Expectation:
    """One committed expectation: ``expected`` within a relative ``margin``."""

    case: str
    metric: str
    expected: float
    margin: float

    @property
    def lower(self) -> float:
        return self.expected * (1 - self.margin)

    @property
    def upper(self) -> float:
        return self.expected * (1 + self.margin)


def _number(text: str, path, line: int, column: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ExpectationsError(f"{path}:{line}: {column}: {text!r} is not a number") from None
    if not math.isfinite(value) or value < 0:
        raise ExpectationsError(f"{path}:{line}: {column}: {text!r} must be finite and non-negative")
    return value


def load(path: str | os.PathLike) -> list[Expectation]:
    """Read and validate an expectations file.

    Parameters
    ----------
    path : path-like
        The CSV file.

    Returns
    -------
    list of Expectation
        In file order.

    Raises
    ------
    ExpectationsError
        Naming the file and line: unreadable file, wrong header, a bad number, an
        unknown or non-deterministic metric, a duplicate row.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ExpectationsError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ExpectationsError(f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason})") from None
    rows: list[Expectation] = []
    seen: dict[tuple[str, str], int] = {}
    header_seen = False
    try:
        lines = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as exc:
        raise ExpectationsError(f"{path}: not a CSV file: {exc}") from None
    for line_no, fields in enumerate(lines, start=1):
        if not fields or not "".join(fields).strip() or fields[0].lstrip().startswith("#"):
            continue
        fields = [f.strip() for f in fields]
        if not header_seen:
            if tuple(fields) != HEADER:
                raise ExpectationsError(f"{path}:{line_no}: expected the header {','.join(HEADER)}, got {','.join(fields)}")
            header_seen = True
            continue
        if len(fields) != len(HEADER):
            hint = "; quote the case id, it contains commas" if len(fields) > len(HEADER) else ""
            raise ExpectationsError(f"{path}:{line_no}: expected {len(HEADER)} columns ({','.join(HEADER)}), "
                                    f"got {len(fields)}{hint}")
        case, metric, expected, margin = fields
        try:
            info = metric_info(metric)
        except UsageError as exc:
            raise ExpectationsError(f"{path}:{line_no}: metric: {exc}") from None
        if not info.deterministic:
            raise ExpectationsError(f"{path}:{line_no}: metric: {metric} is a timing; expectations hold "
                                    "deterministic counters only (use ttfg gate for timings)")
        key = (case, metric)
        if key in seen:
            raise ExpectationsError(f"{path}:{line_no}: duplicate row for {case} {metric} (first on line {seen[key]})")
        seen[key] = line_no
        rows.append(Expectation(case, metric, _number(expected, path, line_no, "expected"),
                                _number(margin, path, line_no, "margin")))
    if not header_seen:
        raise ExpectationsError(f"{path}: empty; expected the header {','.join(HEADER)}")
    return rows


def _csv_number(value: float) -> str:
    """A value as the CSV stores it (data, not presentation: exact, no unit, no separators)."""
    return str(int(value)) if float(value).is_integer() else f"{value:.6g}"


def save(path: str | os.PathLike, rows: Iterable[Expectation]) -> Path:
    """Write rows sorted by case and metric, atomically (temporary file, then rename).

    Parameters
    ----------
    path : path-like
        Destination; its folder is created.
    rows : iterable of Expectation

    Returns
    -------
    Path
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(HEADER)
    for row in sorted(rows, key=lambda r: (r.case, r.metric)):
        writer.writerow((row.case, row.metric, _csv_number(row.expected), _csv_number(row.margin)))
    return atomic_write_text(path, buf.getvalue())


def measured_values(results: Iterable[Results], metrics: Iterable[str] | None = None) -> dict[tuple[str, str], list[float]]:
    """Values of deterministic metrics per (case, metric), pooled over results files.

    Parameters
    ----------
    results : iterable of Results
        E.g. a timing run and an allocation run of the same code.
    metrics : iterable of str or None
        Names or glob patterns; default :data:`DEFAULT_METRICS`.

    Returns
    -------
    dict
        ``{(case id, metric): [values]}`` for pairs with at least one value.

    Raises
    ------
    UsageError
        When a metric asked for is a timing.
    """
    results = list(results)
    names = expand_metrics(list(metrics or DEFAULT_METRICS), *results)
    infos = [metric_info(n) for n in names]
    timing = [i.name for i in infos if not i.deterministic]
    if timing:
        raise UsageError(f"expectations hold deterministic counters only; {', '.join(timing)} "
                         f"{'is a timing' if len(timing) == 1 else 'are timings'} (use ttfg gate for timings)")
    out: dict[tuple[str, str], list[float]] = {}
    for res in results:
        for case in res.cases:
            if case.skipped:
                continue
            for info in infos:
                values = registry.case_values(case, info.name, info.cache)
                if values:
                    out.setdefault((case.id, info.name), []).extend(values)
    return out


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def default_margin(metric: str, values: list[float]) -> float:
    """A margin for a new row: the registry's ``expect_margin``, widened to twice the spread observed.

    Parameters
    ----------
    metric : str
    values : list of float
        The measured values the row is created from.

    Returns
    -------
    float
        Relative margin, rounded up to 0.001.
    """
    margin = registry.get(metric).expect_margin or 0.0
    median = _median(values)
    if median > 0 and len(values) > 1:
        spread = (max(values) - min(values)) / median
        margin = max(margin, 2 * spread)
    return math.ceil(margin * 1000 - 1e-9) / 1000


@dataclass
class CheckRow:
    """One (case, metric): what was expected, what was measured, and the status."""

    case: str
    metric: str
    expected: float | None
    margin: float | None
    measured: float | None
    n: int
    #: One of :data:`STATUSES`.
    status: str
    #: What to do about it (the numbers are the fields above; ``present`` words them).
    message: str

    def to_json(self) -> dict:
        return dict(self.__dict__)


@dataclass
class ExpectationCheck:
    """The outcome of checking results against an expectations file."""

    path: str
    rows: list[CheckRow] = field(default_factory=list)
    #: The file as it would be with the measured values (for ``--write-suggested``).
    suggested: list[Expectation] = field(default_factory=list)
    #: Rows whose case was not in the results at all (not a failure: a subset was run).
    not_run: int = 0

    def failures(self) -> list[CheckRow]:
        return [r for r in self.rows if r.status in FAILING]

    def checked(self) -> list[CheckRow]:
        return [r for r in self.rows if r.status in (*FAILING, "ok")]

    def exit_code(self) -> int:
        """1 on a regression or unexpected improvement, 2 when no row could be checked, else 0."""
        if self.failures():
            return 1
        return 0 if self.checked() else 2

    def to_json(self) -> dict:
        return {"format": "ttfg-expectations-check", "version": 1, "path": self.path, "exit_code": self.exit_code(),
                "not_run": self.not_run, "rows": [r.to_json() for r in self.rows]}


def _rounded(value: float) -> float:
    return float(round(value)) if abs(value - round(value)) < 1e-9 else value


def check(expectations: list[Expectation], results: Iterable[Results], path: str = "expectations",
          metrics: Iterable[str] | None = None) -> ExpectationCheck:
    """Check measured counters against expectations, in both directions.

    Parameters
    ----------
    expectations : list of Expectation
        From :func:`load`.
    results : iterable of Results
        The head's results files; values are pooled.
    path : str
        The expectations file's name, for messages.
    metrics : iterable of str or None
        Metrics that count as tracked for ``new`` rows (default :data:`DEFAULT_METRICS`
        plus every metric the file names).

    Returns
    -------
    ExpectationCheck
        Rows for every expectation whose case ran (``ok``, ``regressed``, ``improved``
        or ``not measured``) and for tracked metrics measured but not in the file
        (``new``), plus the suggested file.
    """
    results = list(results)
    tracked = list(dict.fromkeys([*(metrics or DEFAULT_METRICS), *(e.metric for e in expectations)]))
    values = measured_values(results, tracked)
    ran = {c.id for res in results for c in res.cases if not c.skipped}
    out = ExpectationCheck(str(path))
    update_hint = (f"update {path} if this is intended: ttfg expect update --runs HEAD.json --out {path}, "
                   "or commit the suggested file")
    for exp in expectations:
        if exp.case not in ran:
            out.not_run += 1
            continue
        got = values.get((exp.case, exp.metric))
        if not got:
            kind = metric_info(exp.metric).kind
            n_kind = sum(len(c.good(kind, None)) for res in results for c in res.cases if c.id == exp.case)
            if n_kind:
                out.rows.append(CheckRow(exp.case, exp.metric, exp.expected, exp.margin, None, 0, "vanished",
                                         f"{n_kind} good {kind} sample(s) of this case carry no number for "
                                         f"{exp.metric}: the expectation cannot be checked (renamed or dropped "
                                         f"counter?); {update_hint}"))
            else:
                out.rows.append(CheckRow(exp.case, exp.metric, exp.expected, exp.margin, None, 0, "not measured",
                                         f"the case ran but took no {kind} sample"))
            continue
        m = _median(got)
        # The numbers are in the row; present/ words them (one formatter). The message is the advice.
        if m > exp.upper:
            status, msg = "regressed", update_hint
        elif m < exp.lower:
            status, msg = "improved", f"better than expected; lock the win in: {update_hint}"
        else:
            status, msg = "ok", ""
        out.rows.append(CheckRow(exp.case, exp.metric, exp.expected, exp.margin, m, len(got), status, msg))
    known = {(e.case, e.metric) for e in expectations}
    for (case, metric), got in sorted(values.items()):
        if (case, metric) not in known:
            out.rows.append(CheckRow(case, metric, None, None, _median(got), len(got), "new",
                                     "measured but not in the file; the suggested file adds it"))
    out.suggested = suggest(expectations, values)
    return out


def suggest(expectations: list[Expectation], values: dict[tuple[str, str], list[float]]) -> list[Expectation]:
    """The expectations updated to the measured medians.

    Parameters
    ----------
    expectations : list of Expectation
        Existing rows: their margins are kept; rows not measured are kept as they are.
    values : dict
        ``{(case, metric): values}`` from :func:`measured_values`.

    Returns
    -------
    list of Expectation
        Existing rows with new expected values, plus new rows with
        :func:`default_margin`.
    """
    out = []
    for exp in expectations:
        got = values.get((exp.case, exp.metric))
        out.append(Expectation(exp.case, exp.metric, _rounded(_median(got)), exp.margin) if got else exp)
    known = {(e.case, e.metric) for e in expectations}
    for (case, metric), got in sorted(values.items()):
        if (case, metric) not in known:
            out.append(Expectation(case, metric, _rounded(_median(got)), default_margin(metric, got)))
    return out


def update(existing: list[Expectation], results: Iterable[Results], metrics: Iterable[str] | None = None,
           margins: "dict[str, float] | None" = None) -> list[Expectation]:
    """Create or refresh an expectations file's rows from results files.

    Parameters
    ----------
    existing : list of Expectation
        Current rows (empty to create a file); their margins are kept.
    results : iterable of Results
    metrics : iterable of str or None
        Names or glob patterns of deterministic metrics (default :data:`DEFAULT_METRICS`).
    margins : dict or None
        ``{metric or glob: margin}`` overriding :func:`default_margin` for new rows
        and the kept margin for existing ones.

    Returns
    -------
    list of Expectation
    """
    from .compare import Thresholds

    values = measured_values(results, metrics)
    rows = suggest(existing, values)
    if margins:
        override = Thresholds(math.nan, dict(margins))
        rows = [Expectation(r.case, r.metric, r.expected, m if not math.isnan(m := override.get(r.metric)) else r.margin)
                for r in rows]
    return rows
