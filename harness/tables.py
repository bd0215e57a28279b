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
