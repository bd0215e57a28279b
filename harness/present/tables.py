"""Terminal tables (rich), one builder per report kind."""

from __future__ import annotations

import sys

from rich.console import Console
from rich.table import Table


def console(stderr: bool = False) -> Console:
    """A console that does not squeeze tables to 80 columns when output is piped or logged."""
    stream = sys.stderr if stderr else sys.stdout
    return Console(stderr=stderr, width=None if stream.isatty() else 200)


def check_table(results, tolerance: float) -> Table:
    table = Table(title=f"gradient check vs float64 reference (tolerance {tolerance:g})", title_justify="left")
    for col, justify in (("case", "left"), ("status", "left"), ("loss", "right"), ("loss rel err", "right"),
                         ("worst rel err", "right"), ("worst tensor", "left"), ("time s", "right")):
        table.add_column(col, justify=justify)
    style = {"ok": "green", "mismatch": "red", "error": "red", "skipped": "dim"}
    for r in results:
        if r.status == "skipped" or r.status == "error" and r.worst_error is None:
            table.add_row(r.case_id, f"[{style[r.status]}]{r.status}[/]", "", "", "", r.detail, "")
            continue
        table.add_row(
            r.case_id, f"[{style[r.status]}]{r.status}[/]", f"{r.loss:.6g}", f"{r.loss_error:.1e}",
            f"{r.worst_error:.1e}", r.worst_tensor, f"{r.seconds:.2f}",
        )
    return table


def _fmt_s(v) -> str:
    if v is None or v != v:
        return "-"
    return f"{v * 1000:.1f}ms" if v < 0.1 else f"{v:.2f}s"


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
    from ..results.record import GRADIENT_PHASES

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
            first = case.values("first_grad_s", cache=cache)
            med = _median(first)
            shares = []
            for phase in GRADIENT_PHASES:
                values = case.values(f"{phase}_s", cache=cache)
                shares.append(f"{100 * _median(values) / med:.0f}%" if values and med else "-")
            cv = _cv(first)
            allocs = case.values("alloc_count", kind="allocations", cache=None)
            counters = good[-1].get("counters", {}) if good else {}
            counter_text = " ".join(f"{k}={v}" for k, v in counters.items() if v is not None)
            instructions = case.values("instructions", kind="instructions", cache=None)
            if instructions:
                counter_text = f"instructions={_median(instructions) / 1e9:.2f}G (whole process) " + counter_text
            status = f"{len(good)}/{len(timing)}"
            if len(good) < len(timing):
                status = f"[red]{status}[/]"
            table.add_row(
                case.id, cache, status, _fmt_s(med),
                f"{_fmt_s(min(first))}-{_fmt_s(max(first))}" if first else "-",
                f"{100 * cv:.0f}%" if cv is not None else "-",
                _fmt_s(_median(case.values("process_ttfg_s", cache=cache))),
                _fmt_s(_median(case.values("import_s", cache=cache))),
                _fmt_s(_median(case.values("build_s", cache=cache))),
                "/".join(shares),
                _fmt_s(_median(case.values("second_grad_s", cache=cache))),
                f"{_median(allocs):,.0f}" if allocs else "-",
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
    from ..decide.study import effect_text

    axis = {"params": "params", "chain": "chain"}[study.study]
    table = Table(title=f"{study.study} study on {study.model}: effect = treatment / control, "
                        f"paired cold processes, 95% interval", title_justify="left")
    for col in ("backend", "metric", f"{axis}: control -> treatment", "effect", "pairs", "p", "note"):
        table.add_column(col, no_wrap=col != "note")
    for row in study.effects:
        e = row.effect
        table.add_row(row.backend, row.metric, f"{row.control} -> {row.treatment}", effect_text(e),
                      str(e.n) if e else "-", f"{e.p_value:.3g}" if e else "-", row.note)
    return table


def depth_table(study) -> Table:
    from ..decide.study import growth_text

    table = Table(title=f"depth study on {study.model}: t = a + b * depth^k, 95% interval for k",
                  title_justify="left")
    for col in ("backend", "metric", "k", "growth", "a", "b", "median by depth", "note"):
        table.add_column(col, no_wrap=col not in ("note", "median by depth"))
    for row in study.depth:
        points = " ".join(f"{d}:{_fmt_s(v)}" for d, v in row.points)
        fit = row.fit
        table.add_row(row.backend, row.metric, growth_text(row), row.growth,
                      _fmt_s(fit.a) if fit else "-", f"{fit.b:.3g}" if fit else "-", points, row.note)
    return table


VERDICT_STYLE = {"regressed": "red", "improved": "green", "unchanged": "dim", "inconclusive": "yellow",
                 "ok": "green", "not measured": "dim", "new": "cyan", "vanished": "red"}


def _styled(word: str) -> str:
    style = VERDICT_STYLE.get(word)
    return f"[{style}]{word}[/]" if style else word


def compare_table(cmp) -> Table:
    """Per case and metric: base and head medians, ratio with interval, verdict."""
    from ..decide.compare import format_interval, format_ratio, format_value

    table = Table(title=f"compare: base {cmp.base_label} vs head {cmp.head_label}", title_justify="left")
    for col, justify in (("case", "left"), ("metric", "left"), ("base", "right"), ("head", "right"),
                         ("n", "right"), ("CV b/h", "right"), ("ratio", "right"), ("interval", "right"),
                         ("p", "right"), ("verdict", "left")):
        table.add_column(col, justify=justify, no_wrap=col != "case")
    for r in cmp.rows:
        cvs = "/".join("-" if s.cv != s.cv else f"{100 * s.cv:.0f}%" for s in (r.base, r.head))
        p = r.verdict.p_value
        table.add_row(r.case, r.metric, format_value(r.metric, r.base.median), format_value(r.metric, r.head.median),
                      f"{r.verdict.n_base}/{r.verdict.n_head}", cvs if r.compared_as == "timing" else "",
                      format_ratio(r.verdict), format_interval(r.verdict),
                      "-" if p is None or p != p else f"{p:.2g}", _styled(r.verdict.verdict))
    return table


def gate_table(outcome) -> Table:
    """Per case: the gated metric's medians, paired ratio with interval, verdict, pairs, wall time."""
    from ..decide.compare import format_interval, format_ratio, format_value

    s = outcome.settings
    table = Table(title=f"gate: base {outcome.base.name} ({outcome.base.short}) vs head {outcome.head.name} "
                        f"({outcome.head.short}), {s.metric}, paired", title_justify="left")
    for col, justify in (("case", "left"), ("base", "right"), ("head", "right"), ("ratio", "right"),
                         ("interval", "right"), ("verdict", "left"), ("pairs", "right"), ("failed b/h", "right"),
                         ("wall", "right"), ("stopped", "left"), ("counters changed", "left")):
        table.add_column(col, justify=justify, no_wrap=col not in ("case", "counters changed"))
    for c in outcome.cases:
        changes = "; ".join(f"{r.metric.removeprefix('counters.')} {format_value(r.metric, r.base.median)}"
                            f"->{format_value(r.metric, r.head.median)}" for r in c.changes)
        table.add_row(c.case, format_value(s.metric, c.base.median), format_value(s.metric, c.head.median),
                      format_ratio(c.verdict), format_interval(c.verdict), _styled(c.verdict.verdict),
                      f"{c.pairs}/{c.attempted}", f"{c.failed['base']}/{c.failed['head']}", f"{c.wall_s:.0f}s",
                      c.stop, changes or "-")
    return table


def expectations_table(check) -> Table:
    """Per expectation row that ran: expected, margin, measured, status."""
    from ..decide.compare import format_value

    table = Table(title=f"expectations: {check.path}", title_justify="left")
    for col, justify in (("case", "left"), ("metric", "left"), ("expected", "right"), ("margin", "right"),
                         ("measured", "right"), ("n", "right"), ("status", "left")):
        table.add_column(col, justify=justify, no_wrap=col != "case")
    order = {"regressed": 0, "vanished": 1, "improved": 2, "new": 3, "not measured": 4, "ok": 5}
    for r in sorted(check.rows, key=lambda r: order.get(r.status, 5)):
        table.add_row(r.case, r.metric, format_value(r.metric, r.expected),
                      "-" if r.margin is None else f"{r.margin * 100:g}%", format_value(r.metric, r.measured),
                      str(r.n), _styled(r.status))
    return table
