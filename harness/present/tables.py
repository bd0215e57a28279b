"""The gate's terminal tables: its verdicts, and (``--verbose``) how each case was sampled.

They sit apart from ``gate_views.py`` (the gate's rows, its Markdown pieces and its
page) only while that module is reworked; they belong beside it.
"""

from __future__ import annotations

from rich.table import Table

from .. import fmt
from .compare_views import counter_changes
from .terminal import case_cells, case_layout, fitted, titled


def gate_table(outcome) -> Table:
    """Per case: the verdict, the tier and metric that decided it, and that metric's base, head, ratio and interval."""
    from .gate_views import revision_label, verdict_rows, verdict_table

    rows = verdict_rows([c.to_json() for c in outcome.cases])
    return verdict_table(rows, f"gate verdicts, base {revision_label(outcome.base)} vs head "
                               f"{revision_label(outcome.head)}")


def gate_detail_table(outcome) -> Table:
    """``--verbose``: per case the pairs, failures, wall time, why sampling stopped and the counters that changed."""
    varying, fixed = case_layout([c.case for c in outcome.cases])
    table = fitted(titled("gate, how each case was sampled", fixed),
                   [(c, "left") for c in varying]
                   + [("pairs", "right"), ("failed b/h", "right"), ("wall", "right"), ("stopped", "left"),
                      ("counters changed", "left")], label=len(varying))
    for c in outcome.cases:
        table.add_row(*case_cells(c.case, varying), f"{c.pairs}/{c.attempted}", f"{c.failed['base']}/{c.failed['head']}",
                      fmt.seconds(c.wall_s), c.stop, counter_changes(c.changes))
    return table


__all__ = ["gate_detail_table", "gate_table"]
