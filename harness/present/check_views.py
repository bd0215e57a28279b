"""``ttfg check`` for people: the gradient check against the float64 reference, as a terminal table."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from .. import fmt
from .terminal import case_cells, case_layout, fitted, titled


def check_table(results, tolerance: float) -> Table:
    varying, fixed = case_layout([r.case_id for r in results])
    table = fitted(titled(f"gradient check vs float64 reference (tolerance {fmt.number(tolerance)})", fixed),
                   [(c, "left") for c in varying]
                   + [("status", "left"), ("loss", "right"), ("loss rel err", "right"), ("worst rel err", "right"),
                      ("worst tensor", "left"), ("time", "right")], label=len(varying))
    style = {"ok": "green", "mismatch": "red", "error": "red", "skipped": "dim", "unchecked": "yellow"}
    for r in results:
        cells = case_cells(r.case_id, varying)
        if r.status == "unchecked":  # a function case: it ran, with nothing to compare it with
            table.add_row(*cells, Text(r.status, style=style[r.status]), fmt.number(r.loss, 6), "", "", r.detail,
                          fmt.seconds(r.seconds))
            continue
        if r.status == "skipped" or r.status == "error" and r.worst_error is None:
            table.add_row(*cells, Text(r.status, style=style[r.status]), "", "", "", r.detail, "")
            continue
        table.add_row(
            *cells, Text(r.status, style=style[r.status]), fmt.number(r.loss, 6), fmt.number(r.loss_error, 2),
            fmt.number(r.worst_error, 2), r.worst_tensor, fmt.seconds(r.seconds),
        )
    return table


__all__ = ["check_table"]
