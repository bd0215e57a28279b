"""An expectations check (``decide/expect.py``) for people: each checked row in words, and the terminal table.

The Markdown summary of the same check is ``markdown.expectations_markdown``.
"""

from __future__ import annotations

from rich.table import Table

from .. import fmt
from .terminal import case_cells, case_layout, fitted, styled, titled


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


def expectations_table(check) -> Table:
    """Per expectation row that ran: expected, margin, measured, status."""
    varying, fixed = case_layout([r.case for r in check.rows])
    table = fitted(titled(f"expectations: {check.path}", fixed),
                   [(c, "left") for c in varying]
                   + [("metric", "left"), ("expected", "right"), ("margin", "right"), ("measured", "right"),
                      ("n", "right"), ("status", "left")], label=len(varying))
    order = {"regressed": 0, "vanished": 1, "improved": 2, "new": 3, "not measured": 4, "ok": 5}
    for r in sorted(check.rows, key=lambda r: order.get(r.status, 5)):
        table.add_row(*case_cells(r.case, varying), r.metric, fmt.metric_value(r.metric, r.expected), fmt.percent(r.margin),
                      fmt.metric_value(r.metric, r.measured), str(r.n), styled(r.status))
    return table


__all__ = ["expectation_line", "expectations_table"]
