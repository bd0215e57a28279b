"""Terminal tables (rich), one builder per report kind; every number goes through ``fmt``."""

from __future__ import annotations

import sys

from rich.console import Console
from rich.table import Table

from . import fmt
from .. import metrics


def console(stderr: bool = False) -> Console:
    """A console that does not squeeze tables to 80 columns when output is piped or logged."""
    stream = sys.stderr if stderr else sys.stdout
    return Console(stderr=stderr, width=None if stream.isatty() else 200)


def check_table(results, tolerance: float) -> Table:
    table = Table(title=f"gradient check vs float64 reference (tolerance {tolerance:g})", title_justify="left")
    for col, justify in (("case", "left"), ("status", "left"), ("loss", "right"), ("loss rel err", "right"),
                         ("worst rel err", "right"), ("worst tensor", "left"), ("time", "right")):
        table.add_column(col, justify=justify)
    style = {"ok": "green", "mismatch": "red", "error": "red", "skipped": "dim"}
    for r in results:
        if r.status == "skipped" or r.status == "error" and r.worst_error is None:
            table.add_row(r.case_id, f"[{style[r.status]}]{r.status}[/]", "", "", "", r.detail, "")
            continue
        table.add_row(
            r.case_id, f"[{style[r.status]}]{r.status}[/]", f"{r.loss:.6g}", f"{r.loss_error:.1e}",
            f"{r.worst_error:.1e}", r.worst_tensor, fmt.seconds(r.seconds),
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


def run_table(results) -> Table:
    """Per case and cache mode: medians of the cold-process samples, with spread and counters."""
    table = Table(title="time to first gradient (median over fresh processes)", title_justify="left")
    columns = ("case", "cache", "ok", "first grad", "min-max", "CV", "process", "import", "build",
               "trace/lower/compile/execute", "second", "allocs", "counters")
    for col in columns:
        table.add_column(col, justify="left" if col in ("case", "cache", "counters", "trace/lower/compile/execute") else "right",
                         no_wrap=col != "counters")
    for case in results.cases:
        if case.skipped:
            table.add_row(case.id, "", "skip", "", "", "", "", "", "", f"[dim]{case.skipped}[/]", "", "", "")
            continue
        caches = sorted({s.cache for s in case.samples if s.kind == "timing"}) or ["cold"]
        for cache in caches:
            timing = [s for s in case.samples if s.kind == "timing" and s.cache == cache]
            good = case.good("timing", cache)
            first = metrics.case_values(case, "first_grad_s", cache)
            med = _median(first)
            shares = []
            for phase in metrics.GRADIENT_PHASES:
                values = metrics.case_values(case, f"{phase}_s", cache)
                shares.append(fmt.percent(_median(values) / med) if values and med else fmt.MISSING)
            cv = _cv(first)
            allocs = metrics.case_values(case, "alloc_count")
            counters = good[-1].get("counters", {}) if good else {}
            counter_text = " ".join(f"{k}={fmt.metric_value(f'counters.{k}', v)}" for k, v in counters.items()
                                    if v is not None)
            instructions = metrics.case_values(case, "instructions")
            if instructions:
                counter_text = (f"instructions={fmt.metric_value('instructions', _median(instructions))} "
                                "(whole process) " + counter_text)
            status = f"{len(good)}/{len(timing)}"
            if len(good) < len(timing):
                status = f"[red]{status}[/]"
            table.add_row(
                case.id, cache, status, fmt.seconds(med),
                f"{fmt.seconds(min(first))} – {fmt.seconds(max(first))}" if first else fmt.MISSING,
                fmt.percent(cv),
                *(fmt.seconds(_median(metrics.case_values(case, m, cache))) for m in ("process_ttfg_s", "import_s",
                                                                                     "build_s")),
                "/".join(shares),
                fmt.seconds(_median(metrics.case_values(case, "second_grad_s", cache))),
                fmt.count(_median(allocs)),
                counter_text,
            )
    return table


def failures_table(results) -> Table | None:
    rows = [(c.id, s) for c in results.cases for s in c.samples if not s.ok]
    if not rows:
        return None
    table = Table(title="failed samples", title_justify="left")
    for col in ("case", "kind", "#", "error", "stderr (last line)"):
        table.add_column(col)
    for case_id, s in rows:
        last = (s.stderr_tail or "").strip().splitlines()[-1:] or [""]
        table.add_row(case_id, s.kind, str(s.index), s.error or "", last[0][:160])
    return table


def effects_table(study) -> Table:
    axis = {"params": "params", "chain": "chain"}[study.study]
    table = Table(title=f"{study.study} study on {study.model}: effect = treatment / control, "
                        f"paired cold processes, 95% interval", title_justify="left")
    for col in ("backend", "metric", f"{axis}: control -> treatment", "effect", "pairs", "p", "note"):
        table.add_column(col, no_wrap=col != "note")
    for row in study.effects:
        e = row.effect
        effect = f"{fmt.factor(e.ratio)} {fmt.interval(e.ci_low, e.ci_high)}" if e else fmt.MISSING
        table.add_row(row.backend, row.metric, f"{row.control} -> {row.treatment}", effect,
                      str(e.n) if e else fmt.MISSING, fmt.p_value(e.p_value) if e else fmt.MISSING, row.note)
    return table


def depth_table(study) -> Table:
    table = Table(title=f"depth study on {study.model}: t = a + b * depth^k, 95% interval for k",
                  title_justify="left")
    for col in ("backend", "metric", "k", "growth", "a", "b", "median by depth", "note"):
        table.add_column(col, no_wrap=col not in ("note", "median by depth"))
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


def _styled(word: str) -> str:
    style = VERDICT_STYLE.get(word)
    return f"[{style}]{word}[/]" if style else word


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
    table = Table(title=f"compare: base {cmp.base_label} vs head {cmp.head_label}", title_justify="left")
    for col, justify in (("case", "left"), ("metric", "left"), ("base", "right"), ("head", "right"),
                         ("n", "right"), ("CV b/h", "right"), ("ratio", "right"), ("interval", "right"),
                         ("p", "right"), ("verdict", "left")):
        table.add_column(col, justify=justify, no_wrap=col != "case")
    for r in cmp.rows:
        cvs = "/".join(fmt.percent(s.cv) for s in (r.base, r.head))
        table.add_row(r.case, r.metric, *row_values(r), f"{r.verdict.n_base}/{r.verdict.n_head}",
                      cvs if r.compared_as == "timing" else "", fmt.factor(r.verdict.ratio),
                      fmt.interval(r.verdict.ci_low, r.verdict.ci_high), fmt.p_value(r.verdict.p_value),
                      _styled(r.verdict.verdict))
    return table


def gate_table(outcome) -> Table:
    """Per case: the gated metric's medians, paired ratio with interval, verdict, pairs, wall time."""
    s = outcome.settings
    table = Table(title=f"gate: base {outcome.base.name} ({outcome.base.short}) vs head {outcome.head.name} "
                        f"({outcome.head.short}), {s.metric}, paired", title_justify="left")
    for col, justify in (("case", "left"), ("base", "right"), ("head", "right"), ("ratio", "right"),
                         ("interval", "right"), ("verdict", "left"), ("tier", "left"), ("pairs", "right"),
                         ("failed b/h", "right"), ("wall", "right"), ("stopped", "left"), ("counters changed", "left")):
        table.add_column(col, justify=justify, no_wrap=col not in ("case", "counters changed"))
    for c in outcome.cases:
        table.add_row(c.case, fmt.metric_value(s.metric, c.base.median), fmt.metric_value(s.metric, c.head.median),
                      fmt.factor(c.verdict.ratio), fmt.interval(c.verdict.ci_low, c.verdict.ci_high),
                      _styled(c.verdict.verdict), c.tier, f"{c.pairs}/{c.attempted}",
                      f"{c.failed['base']}/{c.failed['head']}",
                      fmt.seconds(c.wall_s), c.stop, counter_changes(c.changes))
    return table


def expectations_table(check) -> Table:
    """Per expectation row that ran: expected, margin, measured, status."""
    table = Table(title=f"expectations: {check.path}", title_justify="left")
    for col, justify in (("case", "left"), ("metric", "left"), ("expected", "right"), ("margin", "right"),
                         ("measured", "right"), ("n", "right"), ("status", "left")):
        table.add_column(col, justify=justify, no_wrap=col != "case")
    order = {"regressed": 0, "vanished": 1, "improved": 2, "new": 3, "not measured": 4, "ok": 5}
    for r in sorted(check.rows, key=lambda r: order.get(r.status, 5)):
        table.add_row(r.case, r.metric, fmt.metric_value(r.metric, r.expected), fmt.percent(r.margin),
                      fmt.metric_value(r.metric, r.measured), str(r.n), _styled(r.status))
    return table
