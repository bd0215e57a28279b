"""``ttfg doctor``'s output: the findings and the calibration as tables that fit 80 columns, or JSON.

The tables have no vertical rules and put the finding and its advice in one wrapping
column, so an 80-column terminal (``COLUMNS=80``) shows every word without cutting.
"""

from __future__ import annotations

import math

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from .. import fmt

STYLE = {"ok": "green", "warn": "yellow", "missing": "red", "unknown": "dim"}
FORMAT_VERSION = 1

MEANING = (
    "log-ratio SD: spread of log(B/A) between two identical cold processes run back to back "
    "(design reference on a 2-core VM: 0.13-0.15 by default, 0.087 for jax.jit resnet15). "
    "'5-min gate', '10-min gate': the smallest true slowdown a gate of that --budget on this case "
    "alone flags 95 % of the time at alpha 0.01, from the pairs it buys (in brackets; at most the "
    "gate's --max-pairs). Smaller changes need a longer budget or a quieter machine."
)


def console(stderr: bool = False) -> Console:
    """Rich's own width: the terminal's, ``COLUMNS`` when set (and usable), 80 when piped; markup off
    (``untrusted.py``: findings and errors carry text from outside ttfg)."""
    import sys

    from .untrusted import console_width

    return Console(stderr=stderr, width=console_width(sys.stderr if stderr else sys.stdout, 80), markup=False)


def findings_tables(findings) -> list[Table]:
    """One table per section (tools, noise sources): item, verdict, finding and what to do."""
    tables = []
    for section in dict.fromkeys(f.section for f in findings):
        table = Table(title=section, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
        table.add_column("item", no_wrap=True)
        table.add_column("verdict", no_wrap=True)
        table.add_column("finding, and what to do", overflow="fold", ratio=1)
        for f in findings:
            if f.section != section:
                continue
            cell = Text(f.detail)
            if f.advice:
                cell.append("\n-> " + f.advice, style="italic")
            verdict = f.verdict + (" (required)" if f.required and f.verdict == "missing" else "")
            table.add_row(f.item, Text(verdict, style=STYLE.get(f.verdict, "")), cell)
        tables.append(table)
    return tables


def summary_line(findings, missing_required) -> Text:
    counts = {v: sum(f.verdict == v for f in findings) for v in STYLE}
    text = Text(", ".join(f"{n} {v}" for v, n in counts.items()))
    if missing_required:
        text.append(f"; exit 2: required {', '.join(f.item for f in missing_required)} missing", style="red")
    return text


def effect_text(effect: float | None, pairs: int, digits: int = 3) -> str:
    """``5.2 % (56)``: the detectable effect and the pairs bought; ``? (21)`` when the SD is unknown.

    Printed by the one formatter (``fmt.percent``), as the noise floor and the gate print it, to the
    ``digits`` the calibration's pairs support (``fmt.supported_digits``: 4 pairs give one).
    """
    if effect is None:
        return f"? ({pairs})"
    shown = "> 100 %" if effect > 1 else fmt.percent(effect, digits)
    return f"{shown} ({pairs})"


def _sd_text(noise) -> str:
    if noise.sd is None:
        return "-"
    return fmt.number(noise.sd, fmt.supported_digits(noise.pairs))


def _ci_text(noise) -> str:
    if noise.sd is None or noise.sd_low is None or not math.isfinite(noise.sd_low):
        return "-"
    digits = fmt.supported_digits(noise.pairs)
    high = fmt.number(noise.sd_high, digits) if math.isfinite(noise.sd_high) else "∞"
    return f"{fmt.number(noise.sd_low, digits)}-{high}"


#: The metric the table shows (the gate's default); JSON has every calibrated metric.
TABLE_METRIC = "first_grad_s"
#: Below this many pairs the SD's interval is too wide to plan a gate on.
FEW_PAIRS = 5


def calibration_table(calibration, metric: str = TABLE_METRIC) -> Table:
    """Per case: pairs, seconds per pair, log-ratio SD with its 95 % interval, what 5- and 10-minute gates see."""
    noises = [(case, case.noise(metric)) for case in calibration.cases]
    budgets = sorted({b for _, n in noises for b in n.gates})
    model = calibration.cases[0].case.model if calibration.cases else ""
    state = "interrupted, " if calibration.interrupted else ""
    table = Table(title=f"A/A noise calibration: {model}, {metric} ({state}{fmt.seconds(calibration.elapsed_s)})",
                  title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for col in ("backend", "pairs", "s/pair", "log-ratio SD", "95 % CI", *(f"{b / 60:g}-min gate" for b in budgets)):
        table.add_column(col, justify="left" if col == "backend" else "right", overflow="fold")
    for case, noise in noises:
        per_pair = case.seconds_per_pair
        table.add_row(case.case.backend, str(noise.pairs), "-" if per_pair is None else fmt.seconds(per_pair),
                      _sd_text(noise), _ci_text(noise),
                      *(effect_text(*reversed(noise.gates.get(b, (0, None))), fmt.supported_digits(noise.pairs))
                        for b in budgets))
    return table


def print_calibration(out: Console, calibration) -> None:
    if calibration.cases:
        out.print(calibration_table(calibration))
        others = [m for m in calibration.cases[0].values if m != TABLE_METRIC]
        for metric in others:
            shown = ", ".join(f"{c.case.backend} {_sd_text(c.noise(metric))}" for c in calibration.cases)
            out.print(f"{metric} log-ratio SD: {shown}", highlight=False)
    for case in calibration.cases:
        if case.failed_pairs:
            out.print(f"{case.case.id}: {case.failed_pairs} pair(s) failed ({case.first_error})", highlight=False)
    if any(c.noise(TABLE_METRIC).pairs < FEW_PAIRS for c in calibration.cases):
        out.print(Text.assemble(("few pairs", "yellow"), f": under {FEW_PAIRS} the SD is barely known (see its "
                                "interval); a longer --budget, such as 5m, gives a firmer number"), highlight=False)
    for note in calibration.notes:
        out.print(f"not calibrated: {note}", highlight=False)
    out.print(Text(MEANING, style="dim"))
    if calibration.interrupted:
        out.print(Text.assemble(("interrupted", "yellow"), ": the numbers above use the pairs finished so far"))


def pair_line(case, a: dict, b: dict) -> str:
    """One progress line per A/A pair."""
    n = case.attempted
    if not (a.get("ok") and b.get("ok")):
        bad = a if not a.get("ok") else b
        return f"  {case.case.backend} pair {n}: failed ({bad.get('error')})"
    fa, fb = a.get("first_grad_s"), b.get("first_grad_s")
    return (f"  {case.case.backend} pair {n}: first gradient A {fmt.seconds(fa)}, B {fmt.seconds(fb)}, "
            f"log(B/A) {math.log(fb / fa):+.3f}; {fmt.seconds(case.pair_wall_s[-1])}")


def doctor_json(findings, missing_required, calibration, exit_code: int) -> dict:
    return {"format": "ttfg-doctor", "version": FORMAT_VERSION, "exit_code": exit_code,
            "required_missing": [f.item for f in missing_required],
            "findings": [f.to_json() for f in findings],
            "calibration": None if calibration is None else calibration.to_json()}


__all__ = ["calibration_table", "console", "doctor_json", "findings_tables", "pair_line", "print_calibration",
           "summary_line"]
