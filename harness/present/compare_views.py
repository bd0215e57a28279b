"""A comparison (``decide/compare.py``) for people: its rows' values and changes in words, and its terminal table.

Why a module of its own: the terminal table (``ttfg compare``), the Markdown summary
(``markdown.comparison_markdown``) and the gate's explanation rows say a row's base and
head values and its counter changes the same way; those phrasings live here, once.
"""

from __future__ import annotations

from rich.table import Table

from .. import fmt
from .. import metrics
from .terminal import case_cells, case_layout, fitted, styled, titled


def styled_verdict(v) -> str:
    """A verdict with what it rests on (``verdicts.verdict_label``), coloured by its word."""
    from .verdicts import verdict_label

    return styled(v.verdict, verdict_label(v))


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


def compare_table(cmp) -> Table:
    """Per case and metric: base and head medians, ratio with interval, verdict."""
    varying, fixed = case_layout([r.case for r in cmp.rows])
    table = fitted(titled(f"compare: base {cmp.base_label} vs head {cmp.head_label}", fixed),
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


__all__ = ["compare_table", "counter_changes", "row_change", "row_values", "styled_verdict"]
