"""Terminal tables (rich), one builder per report kind; every number goes through ``fmt``.

Every table fits the console's width, 80 columns included, and cuts nothing: a case is
split into model, backend and variant columns, and a part that is the same on every row
moves into the title; every column may wrap (at spaces) or fold, so rich never needs an
ellipsis. The run's counters have their own table (``ttfg run --wide``: one wide table).
"""

from __future__ import annotations

import sys

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from .. import fmt
from .. import metrics

#: Width when output is piped or logged and ``COLUMNS`` is not set: wide enough for the
#: tables to stay on one line per row in a CI log, narrow enough to read there.
PIPED_WIDTH = 100


def console(stderr: bool = False, width: int | None = None) -> Console:
    """The terminal's width on a terminal; ``COLUMNS`` when set; else :data:`PIPED_WIDTH` when piped.

    Console markup is off (``untrusted.py`` says why): styled text is built as ``rich.text.Text``.
    """
    from .untrusted import console_width

    stream = sys.stderr if stderr else sys.stdout
    return Console(stderr=stderr, width=width or console_width(stream, PIPED_WIDTH), markup=False)


CASE_PARTS = ("model", "backend", "variant")


def case_parts(case_id: str) -> tuple[str, str, str]:
    """``model/backend/params=args,chain=scan`` -> model, backend, ``args scan``.

    The variant shows its values only (each value belongs to one axis, named in the
    title by :func:`case_layout`), so a variant column is as narrow as its longest value.
    """
    parts = case_id.split("/", 3)[:3] + ["", ""]
    values = [kv.partition("=")[2] or kv for kv in parts[2].split(",") if kv]
    return parts[0], parts[1], " ".join(values)


def case_env(case_id: str) -> str:
    """The environment a case ran in (its id's fourth part, ``ttfg run --env``); empty for the current one."""
    parts = case_id.split("/", 3)
    return parts[3] if len(parts) == 4 else ""


def _axes(case_ids) -> str:
    """``params chain``: the variant axes, in the order the values are shown."""
    for case_id in case_ids:
        variant = case_id.split("/", 2)[2:] or [""]
        names = [kv.partition("=")[0] for kv in variant[0].split(",") if "=" in kv]
        if names:
            return " ".join(names)
    return ""


def case_layout(case_ids) -> tuple[tuple[str, ...], str]:
    """The case parts that vary over these rows (their columns), and the constant ones for the title."""
    case_ids = list(case_ids)
    split = [case_parts(c) for c in case_ids]
    varying = tuple(name for i, name in enumerate(CASE_PARTS) if len({p[i] for p in split}) > 1)
    envs = [case_env(c) for c in case_ids]
    if not varying and split and len(set(envs)) < 2:
        varying = ("backend",)  # a row needs a name
    fixed = [f"{name} {split[0][i]}" for i, name in enumerate(CASE_PARTS)
             if split and name not in varying and split[0][i]]
    axes = _axes(case_ids)
    if axes:
        if "variant" in varying:
            fixed.append(f"variant = {axes}")
        elif fixed and fixed[-1].startswith("variant "):
            fixed[-1] = f"variant {split[0][2]} ({axes})"
    if len(set(envs)) > 1:
        varying += ("env",)  # the environment is a dimension of the table, like the backend
    elif envs and envs[0]:
        fixed.append(f"env {envs[0]}")
    return varying, ", ".join(fixed)


def case_cells(case_id: str, varying: tuple[str, ...]) -> list[str]:
    parts = {**dict(zip(CASE_PARTS, case_parts(case_id))), "env": case_env(case_id)}
    return [parts[name] for name in varying]


#: Cells up to this wide are never broken (a value and its unit).
SHORT, SHORT_HEADER = 8, 13


class Fitted:
    """A table whose layout is chosen at print time for the console's width.

    Why: rich, when a table is too wide, shrinks the widest columns first down to equal
    widths, which folds short unbreakable words (``torch.eager`` -> ``torch.eage`` /
    ``r``) while long text columns still have room to wrap. Here every column first
    gets its longest word (a value with its unit, a short header, kept whole), and the
    room left goes to the columns that have more to show, in proportion to what they
    lack. When even the longest words do not fit side by side, the rows are printed as
    records instead, one paragraph per row: the row's name (its first ``label``
    cells), then ``column value`` pairs, wrapped at the width. Nothing is ever cut.
    """

    def __init__(self, table: Table, label: int = 1):
        self.table = table
        self.label = label

    def __getattr__(self, name):  # add_row, columns, title, row_count ... of the table
        return getattr(self.table, name)

    def _measure(self, console, options):
        from rich.measure import Measurement

        mins, maxs = [], []
        for column in self.table.columns:
            column.width = None
            cells = [column.header, *column.cells]
            sizes = [Measurement.get(console, options, c) for c in cells]
            mins.append(max((m.maximum if m.maximum <= (SHORT_HEADER if i == 0 else SHORT) else m.minimum
                             for i, m in enumerate(sizes)), default=1))
            maxs.append(max((m.maximum for m in sizes), default=1))
        return mins, maxs

    def __rich_console__(self, console, options):
        table = self.table
        pads = [table._get_padding_width(i) for i in range(len(table.columns))]
        avail = options.max_width - sum(pads) - table._extra_width
        mins, maxs = self._measure(console, options)
        if sum(maxs) <= avail:
            yield table
        elif sum(mins) <= avail:
            spare, lack = avail - sum(mins), [hi - lo for lo, hi in zip(mins, maxs)]
            total = sum(lack) or 1
            widths = [lo + spare * d // total for lo, d in zip(mins, lack)]
            for i in sorted(range(len(widths)), key=lambda i: widths[i] - maxs[i])[:avail - sum(widths)]:
                widths[i] += 1
            for column, width in zip(table.columns, widths):
                column.width = max(width, 1)
            yield table
        else:
            yield from self.records()

    def records(self):
        """The rows as paragraphs: ``name: column value, column value, ...``."""
        def text(cell) -> Text:
            t = cell.copy() if isinstance(cell, Text) else Text(str(cell))
            return Text(" ").join(t.split("\n"))

        columns = self.table.columns
        if self.table.title:
            yield Text(str(self.table.title), style="italic")
        for row in range(self.table.row_count):
            cells = [text(list(c.cells)[row]) for c in columns]
            name = Text(" ").join(c for c in cells[:self.label] if c.plain)
            name.stylize("bold")
            line = Text("- ").append(name)
            parts = [Text(f"{col.header} ").append(cell) for col, cell in zip(columns[self.label:], cells[self.label:])
                     if cell.plain]
            line.append(": ").append(Text(", ").join(parts))
            line.overflow = "fold"
            yield line

    def __rich_measure__(self, console, options):
        from rich.measure import Measurement

        return Measurement.get(console, options, self.table)


def fitted(title: str, columns, label: int = 1, boxed: bool = False) -> Fitted:
    """A table that fits any width without cutting (see :class:`Fitted`); ``columns``: ``(name, justify)``.

    ``label``: how many leading columns name a row (the case's parts), for the record layout.
    ``boxed``: rich's default box with rules between columns (``ttfg list``), instead of none.
    """
    table = (Table(title=title, title_justify="left") if boxed else
             Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
                   collapse_padding=True))
    for name, justify in columns:
        table.add_column(name, justify=justify, overflow="fold")
    return Fitted(table, label)


def _title(text: str, fixed: str) -> str:
    return f"{text}: {fixed}" if fixed else text


def check_table(results, tolerance: float) -> Table:
    varying, fixed = case_layout([r.case_id for r in results])
    table = fitted(_title(f"gradient check vs float64 reference (tolerance {fmt.number(tolerance)})", fixed),
                   [(c, "left") for c in varying]
                   + [("status", "left"), ("loss", "right"), ("loss rel err", "right"), ("worst rel err", "right"),
                      ("worst tensor", "left"), ("time", "right")], label=len(varying))
    style = {"ok": "green", "mismatch": "red", "error": "red", "skipped": "dim"}
    for r in results:
        cells = case_cells(r.case_id, varying)
        if r.status == "skipped" or r.status == "error" and r.worst_error is None:
            table.add_row(*cells, Text(r.status, style=style[r.status]), "", "", "", r.detail, "")
            continue
        table.add_row(
            *cells, Text(r.status, style=style[r.status]), fmt.number(r.loss, 6), fmt.number(r.loss_error, 2),
            fmt.number(r.worst_error, 2), r.worst_tensor, fmt.seconds(r.seconds),
        )
    return table


def _median(values):
    import statistics

    return statistics.median(values) if values else None


def _cv(values):
    import statistics

    if len(values) < 2:
        return None
    mean = statistics.fmean(values)
    return statistics.stdev(values) / mean if mean else None


def _brief(name: str) -> str:
    """A column's heading: the registry's short label of the metric."""
    return metrics.get(name).brief


#: Column headings of the run's tables, from the registry's labels.
FIRST = _brief("first_grad_s")
PROCESS = _brief("process_ttfg_s")
SECOND = _brief("second_grad_s")
ALLOCS = _brief("alloc_count")
IMPORT = _brief("import_s")
BUILD = _brief("build_s")
RANGE, CV, OK = "min–max", "CV", "ok"
PHASES_COLUMN = " / ".join(_brief(f"{p}_s") for p in metrics.GRADIENT_PHASES)


def _run_values(results):
    """Per case and cache mode: the medians and spreads the run tables show, unformatted."""
    for case in results.cases:
        if case.skipped:
            continue
        caches = sorted({s.cache for s in case.samples if s.kind == "timing"}) or ["cold"]
        for cache in caches:
            timing = [s for s in case.samples if s.kind == "timing" and s.cache == cache]
            good = case.good("timing", cache)
            first = metrics.case_values(case, "first_grad_s", cache)
            med = lambda m: _median(metrics.case_values(case, m, cache))  # noqa: E731
            counters = good[-1].get("counters", {}) if good else {}
            counter_text = " ".join(f"{k}={fmt.metric_value(f'counters.{k}', v)}" for k, v in counters.items()
                                    if v is not None)
            instructions = metrics.case_values(case, "instructions")
            if instructions:
                counter_text = (f"instructions={fmt.metric_value('instructions', _median(instructions))} "
                                "(whole process) " + counter_text)
            yield {"case": case.id, "cache": cache, "good": len(good), "samples": len(timing),
                   "first": _median(first), "min": min(first) if first else None, "max": max(first) if first else None,
                   "cv": _cv(first), "process": med("process_ttfg_s"), "import": med("import_s"),
                   "build": med("build_s"), **{p: med(f"{p}_s") for p in metrics.GRADIENT_PHASES},
                   "second": med("second_grad_s"), "allocs": _median(metrics.case_values(case, "alloc_count")),
                   "counters": counter_text}


def _run_rows(results):
    """Per case and cache mode: every run table's cells, each column formatted with one precision
    (``fmt.column``), so the terminal and the report print the same text."""
    rows = list(_run_values(results))
    col = lambda key, unit="s": fmt.column([r[key] for r in rows], unit)  # noqa: E731
    ranges = fmt.column([r["min"] for r in rows] + [r["max"] for r in rows], "s")
    lows, highs = ranges[:len(rows)], ranges[len(rows):]
    cells = {key: col(key) for key in ("first", "process", "import", "build", "second", *metrics.GRADIENT_PHASES)}
    cvs, allocs = col("cv", "ratio"), col("allocs", "count")
    for i, r in enumerate(rows):
        status = f"{r['good']}/{r['samples']}"
        phases = {p: cells[p][i] for p in metrics.GRADIENT_PHASES}
        yield {
            "case": r["case"], "cache": r["cache"], OK: status, FIRST: cells["first"][i],
            RANGE: f"{lows[i]} – {highs[i]}" if r["min"] is not None else fmt.MISSING,
            CV: cvs[i], PROCESS: cells["process"][i], IMPORT: cells["import"][i], BUILD: cells["build"][i],
            **{_brief(f"{p}_s"): v for p, v in phases.items()}, PHASES_COLUMN: " / ".join(phases.values()),
            SECOND: cells["second"][i], ALLOCS: allocs[i], "counters": r["counters"],
            "short": r["good"] < r["samples"],
        }


def run_rows(results) -> list[dict]:
    """The run tables' rows as plain text (no markup), for the HTML report: the terminal's very cells."""
    return list(_run_rows(results))


#: The run's tables: title and columns (besides the case's parts). ``ttfg run --wide`` shows one table.
RUN_TABLES = (
    ("time to first gradient (median over fresh processes)", (OK, FIRST, RANGE, CV, PROCESS)),
    ("where a cold process spends its time (medians)", (IMPORT, BUILD, PHASES_COLUMN, SECOND)),
    ("allocations and structural counters (counters: last good sample)", (ALLOCS, "counters")),
)
#: ``--wide``: one table, the phases in columns of their own.
WIDE_COLUMNS = (OK, FIRST, RANGE, CV, PROCESS, IMPORT, BUILD, *(_brief(f"{p}_s") for p in metrics.GRADIENT_PHASES),
                SECOND, ALLOCS, "counters")
LEFT = {"counters", "cache"}


def run_tables(results, wide: bool = False) -> list[Table]:
    """The run's tables: times, phases and counters, each with the case split into model, backend, variant.

    ``wide``: one table with every column (for a wide terminal or ``less -S``).
    """
    rows = list(_run_rows(results))
    varying, fixed = case_layout([r["case"] for r in rows])
    cache = ("cache",) if len({r["cache"] for r in rows}) > 1 else ()
    groups = ((RUN_TABLES[0][0], WIDE_COLUMNS),) if wide else RUN_TABLES
    tables = []
    for title, columns in groups:
        if title != RUN_TABLES[0][0]:  # a column nothing was measured for says nothing: left out
            columns = tuple(c for c in columns if any(r[c] not in ("", fmt.MISSING) for r in rows))
        shown = rows if title == RUN_TABLES[0][0] else [
            r for r in rows if any(r[c] not in ("", fmt.MISSING) for c in columns)]
        if not shown or not columns:
            continue
        table = fitted(_title(title, fixed), [(c, "left") for c in (*varying, *cache)]
                       + [(c, "left" if c in LEFT else "right") for c in columns], label=len(varying) + len(cache))
        for r in shown:
            cells = [Text(r[c], style="red") if c == OK and r["short"] else r[c] for c in columns]
            table.add_row(*case_cells(r["case"], varying), *(r[c] for c in cache), *cells)
        tables.append(table)
    return tables


def run_table(results) -> Table:
    """All of the run in one table (``--wide``); the default output is :func:`run_tables`."""
    return run_tables(results, wide=True)[0] if any(not c.skipped for c in results.cases) else fitted(
        RUN_TABLES[0][0], [("case", "left")])


def skipped_lines(results) -> list[str]:
    """One line per skipped case, its reason whole."""
    return [f"skipped {c.id}: {c.skipped}" for c in results.cases if c.skipped]


def failures_table(results) -> Table | None:
    rows = [(c.id, s) for c in results.cases for s in c.samples if not s.ok]
    if not rows:
        return None
    varying, fixed = case_layout([case_id for case_id, _ in rows])
    table = fitted(_title("failed samples (the results file keeps each one's stderr tail)", fixed),
                   [(c, "left") for c in varying]
                   + [("kind", "left"), ("#", "right"), ("error", "left"), ("stderr (last line)", "left")],
                   label=len(varying))
    for case_id, s in rows:
        last = (s.stderr_tail or "").strip().splitlines()[-1:] or [""]
        table.add_row(*case_cells(case_id, varying), s.kind, str(s.index), s.error or "", last[0])
    return table


def effects_table(study) -> Table:
    axis = {"params": "params", "chain": "chain", "env": "env"}[study.study]
    table = fitted(f"{study.study} study on {study.model}: effect = treatment / control, "
                   f"paired cold processes, 95 % interval",
                   [(col, "right" if col in ("pairs", "p") else "left")
                    for col in ("backend", "metric", f"{axis}: control -> treatment", "effect", "pairs", "p", "note")],
                   label=2)
    for row in study.effects:
        e = row.effect
        effect = f"{fmt.factor(e.ratio)} {fmt.interval(e.ci_low, e.ci_high)}" if e else fmt.MISSING
        table.add_row(row.backend, row.metric, f"{row.control} -> {row.treatment}", effect,
                      str(e.n) if e else fmt.MISSING, fmt.p_value(e.p_value) if e else fmt.MISSING, row.note)
    return table


def depth_table(study) -> Table:
    table = fitted(f"depth study on {study.model}: t = a + b * depth^k, 95 % interval for k",
                   [(col, "right" if col in ("a", "b") else "left")
                    for col in ("backend", "metric", "k", "growth", "a", "b", "median by depth", "note")], label=2)
    for row in study.depth:
        points = " ".join(f"{d}:{fmt.seconds(v)}" for d, v in row.points)
        fit = row.fit
        growth = fmt.exponent(fit.k, fit.k_ci_low, fit.k_ci_high) if fit else fmt.MISSING
        table.add_row(row.backend, row.metric, growth, row.growth,
                      fmt.seconds(fit.a) if fit else fmt.MISSING, fmt.seconds(fit.b) if fit else fmt.MISSING, points,
                      row.note)
    return table


VERDICT_STYLE = {"regressed": "red", "improved": "green", "unchanged": "dim", "inconclusive": "yellow",
                 "ok": "green", "not measured": "dim", "new": "cyan", "vanished": "red"}


def _styled(word: str, label: str | None = None) -> str:
    style = VERDICT_STYLE.get(word)
    text = label or word
    return Text(text, style=style or "")


def styled_verdict(v) -> str:
    """A verdict with what it rests on (``verdicts.verdict_label``), coloured by its word."""
    from .verdicts import verdict_label

    return _styled(v.verdict, verdict_label(v))


def row_values(r) -> tuple[str, str]:
    """A comparison row's base and head medians in the metric's unit (shared with the Markdown summary)."""
    return fmt.metric_value(r.metric, r.base.median), fmt.metric_value(r.metric, r.head.median)


def row_change(r) -> str:
    """`` 4,027 -> 4,100`` for a verdict line; empty for a failure row (no values)."""
    return "" if r.compared_as == "failure" else " " + " -> ".join(row_values(r))


def counter_changes(rows) -> str:
    """``jaxpr_eqns 304 -> 310; alloc_count 4,027 -> 4,100`` for the gate's explanation rows."""
    return "; ".join(f"{r.metric.removeprefix(metrics.COUNTER_PREFIX)} {fmt.metric_value(r.metric, r.base.median)}"
                     f" -> {fmt.metric_value(r.metric, r.head.median)}" for r in rows) or fmt.MISSING


def expectation_line(r) -> str:
    """One checked expectation in words: measured against the band, then what to do."""
    value = lambda v: fmt.metric_value(r.metric, v)  # noqa: E731
    if r.measured is None or r.expected is None:
        return r.message
    band = f"{value(r.expected)} ± {fmt.percent(r.margin)}"
    if r.status == "regressed":
        text = f"measured {value(r.measured)} above {band} (upper {value(r.expected * (1 + r.margin))})"
    elif r.status == "improved":
        text = f"measured {value(r.measured)} below {band} (lower {value(r.expected * (1 - r.margin))})"
    else:
        text = f"measured {value(r.measured)} within {band}"
    return f"{text}; {r.message}" if r.message else text


def compare_table(cmp) -> Table:
    """Per case and metric: base and head medians, ratio with interval, verdict."""
    varying, fixed = case_layout([r.case for r in cmp.rows])
    table = fitted(_title(f"compare: base {cmp.base_label} vs head {cmp.head_label}", fixed),
                   [(c, "left") for c in varying]
                   + [("metric", "left"), ("base", "right"), ("head", "right"), ("n", "right"), ("CV b/h", "right"),
                      ("ratio", "right"), ("interval", "right"), ("p", "right"), ("verdict", "left")],
                   label=len(varying))
    for r in cmp.rows:
        cvs = "/".join(fmt.percent(s.cv) for s in (r.base, r.head))
        table.add_row(*case_cells(r.case, varying), r.metric, *row_values(r), f"{r.verdict.n_base}/{r.verdict.n_head}",
                      cvs if r.compared_as == "timing" else "", fmt.factor(r.verdict.ratio),
                      fmt.interval(r.verdict.ci_low, r.verdict.ci_high), fmt.p_value(r.verdict.p_value),
                      styled_verdict(r.verdict))
    return table


def gate_table(outcome) -> Table:
    """Per case: the verdict, the tier and metric that decided it, and that metric's base, head, ratio and interval."""
    from .gate_views import revision_label, verdict_rows, verdict_table

    rows = verdict_rows(outcome.cases)
    return verdict_table(rows, f"gate verdicts, base {revision_label(outcome.base)} vs head "
                               f"{revision_label(outcome.head)}")


def gate_detail_table(outcome) -> Table:
    """``--verbose``: per case the pairs, failures, wall time, why sampling stopped and the counters that changed."""
    varying, fixed = case_layout([c.case for c in outcome.cases])
    table = fitted(_title("gate, how each case was sampled", fixed),
                   [(c, "left") for c in varying]
                   + [("pairs", "right"), ("failed b/h", "right"), ("wall", "right"), ("stopped", "left"),
                      ("counters changed", "left")], label=len(varying))
    for c in outcome.cases:
        table.add_row(*case_cells(c.case, varying), f"{c.pairs}/{c.attempted}", f"{c.failed['base']}/{c.failed['head']}",
                      fmt.seconds(c.wall_s), c.stop, counter_changes(c.changes))
    return table


def expectations_table(check) -> Table:
    """Per expectation row that ran: expected, margin, measured, status."""
    varying, fixed = case_layout([r.case for r in check.rows])
    table = fitted(_title(f"expectations: {check.path}", fixed),
                   [(c, "left") for c in varying]
                   + [("metric", "left"), ("expected", "right"), ("margin", "right"), ("measured", "right"),
                      ("n", "right"), ("status", "left")], label=len(varying))
    order = {"regressed": 0, "vanished": 1, "improved": 2, "new": 3, "not measured": 4, "ok": 5}
    for r in sorted(check.rows, key=lambda r: order.get(r.status, 5)):
        table.add_row(*case_cells(r.case, varying), r.metric, fmt.metric_value(r.metric, r.expected), fmt.percent(r.margin),
                      fmt.metric_value(r.metric, r.measured), str(r.n), _styled(r.status))
    return table
