"""The noise floor in words: one sentence for summaries, a table for the terminal, rows for the report.

Why one module: the run's terminal output, the gate's terminal and Markdown summaries
and the HTML report must say the same thing the same way: "on this machine a
10-minute gate sees >= 6.1 %", with where the number comes from.
"""

from __future__ import annotations

from .. import fmt
from .terminal import Fitted, case_cells, case_layout, case_parts, fitted

#: The gate budget the headline speaks of (the gate's default, 10 minutes).
HEADLINE_BUDGET_S = 600.0


def _minutes(budget_s: float) -> str:
    return f"{budget_s / 60:g}-minute"


def source_text(floor) -> str:
    """Where the numbers come from, with the calibration's age."""
    from ..decide.noise import describe_age

    if floor.source == "calibration":
        return f"from `ttfg doctor --calibrate` {describe_age(floor.age_s)} before this run ({floor.method})"
    return f"in-run estimate: {floor.method}"


def _effect(effect: float | None, digits: int = 3) -> str:
    if effect is None:
        return "?"
    return "> 100 %" if effect > 1 else fmt.percent(effect, digits)


def _sd(e) -> str:
    """The log-ratio SD to the digits its pairs support (``fmt.supported_digits``)."""
    return fmt.MISSING if e.log_ratio_sd is None else fmt.number(e.log_ratio_sd, fmt.supported_digits(e.n))


def _sd_interval(e, dash: str = "–") -> str:
    if e.sd_low is None or e.sd_high is None:
        return fmt.MISSING
    digits = fmt.supported_digits(e.n)
    return f"{fmt.number(e.sd_low, digits)}{dash}{fmt.number(e.sd_high, digits)}"


def headline(floor, metric: str = "first_grad_s", budget_s: float = HEADLINE_BUDGET_S) -> str:
    """One sentence: what a gate of ``budget_s`` on each case alone detects here, and where that comes from."""
    if floor is None:
        return "noise floor: not recorded"
    entries = [e for e in floor.entries if e.metric == metric and e.effect_at(budget_s) is not None]
    if not entries:
        why = f" ({floor.note})" if floor.note else ""
        return f"noise floor: not estimated{why}"
    entries.sort(key=lambda e: e.effect_at(budget_s))
    backends = [case_parts(e.case)[1] for e in entries]
    models = {case_parts(e.case)[0] for e in entries}

    def label(e) -> str:  # the backend, with model and variant only where they tell cases apart
        model, backend, variant = case_parts(e.case)
        return " ".join(filter(None, [model if len(models) > 1 else "", backend,
                                      f"({variant})" if backends.count(backend) > 1 else ""]))

    reach = ", ".join(f"{_at_least(e.effect_at(budget_s), fmt.supported_digits(e.n))} on {label(e)}" for e in entries)
    return f"on this machine a {_minutes(budget_s)} gate sees {reach} ({metric}; {source_text(floor)})"


def _at_least(effect: float, digits: int = 3) -> str:
    return "nothing below 100 %" if effect > 1 else f">= {fmt.percent(effect, digits)}"


def table(floor, metric: str = "first_grad_s") -> Fitted | None:
    """Per case: the paired log-ratio SD with its interval, seconds per pair, what 5- and 10-minute gates see."""
    entries = [e for e in (floor.entries if floor else []) if e.metric == metric]
    if not entries:
        return None
    budgets = sorted({b for e in entries for b, _, _ in e.gates})
    varying, fixed = case_layout([e.case for e in entries])
    title = f"noise floor ({floor.source}), {metric}"
    t = fitted(f"{title}: {fixed}" if fixed else title,
               [(c, "left") for c in varying]
               + [(c, "right") for c in ("n", "log-ratio SD", "95 % CI", "s/pair",
                                         *(f"{b / 60:g}-min gate" for b in budgets))], label=len(varying))
    for e in entries:
        digits = fmt.supported_digits(e.n)
        t.add_row(*case_cells(e.case, varying), str(e.n), _sd(e), _sd_interval(e, "-"),
                  fmt.seconds(e.seconds_per_pair),
                  *(f"{_effect(ef, digits)} ({p})" for b in budgets for bb, p, ef in e.gates if bb == b))
    return t


def report_rows(floor, metric: str = "first_grad_s") -> list[dict]:
    """The report's rows: case parts, SD, interval, and each gate's reach."""
    rows = []
    for e in (floor.entries if floor else []):
        if e.metric != metric:
            continue
        model, backend, variant = case_parts(e.case)
        digits = fmt.supported_digits(e.n)
        rows.append({"model": model, "backend": backend, "variant": variant, "n": e.n, "sd": _sd(e),
                     "ci": _sd_interval(e), "per_pair": fmt.seconds(e.seconds_per_pair),
                     "gates": [f"{_effect(ef, digits)} ({fmt.plural(p, 'pair')})" for _, p, ef in sorted(e.gates)]})
    return rows


def budget_warning_lines(warnings: list[dict], metric: str, min_effect: float, budget_s: float,
                         tiers=("time",), proven: bool = False) -> list[str]:
    """The gate's warning before it starts, one line per case, with the budget that would do.

    It speaks of the time tier alone, and says so: with the deterministic tiers before it, most
    cases are decided by counts and never spend the budget. ``proven``: the source tier's proof holds (the head
    runs the base's program), so the time tier runs only for a case whose first pair disagrees; the lines are then
    notes of what it could detect if it ran, not warnings (the gate prints them as notes).
    """
    counts = [t for t in tiers if t in ("structural", "instructions")]
    scope = (f"; the {' and '.join(counts)} tier{'s' if len(counts) > 1 else ''} before it decide most cases "
             "first, without the budget" if counts else "")
    lines = []
    for w in warnings:
        sees = (("could detect only changes over 100 %" if w["effect"] > 1 else f"could detect >= {_effect(w['effect'])}")
                if w["effect"] is not None
                else "buys fewer than 2 pairs and could detect nothing")
        lead = "if the time tier runs (the source tier's proof holds: only for a case whose first pair disagrees): " \
            if proven else "warning: "
        text = (f"{lead}{w['case']}: the time tier alone, at log-ratio SD {w['sd']:.3f} ({w['sd_source']}), "
                f"{sees} of {metric} in a {fmt.seconds(budget_s)} budget (about {w['pairs']} pairs), above "
                f"--min-effect {fmt.percent(min_effect)}{scope}. ")
        if w["needed_pairs"] is None:
            text += f"{fmt.percent(min_effect)} is out of reach here: use a quieter machine or a larger --min-effect"
        elif w["needed_budget_s"] is not None:
            text += (f"Detecting {fmt.percent(min_effect)} needs about {w['needed_pairs']} pairs: "
                     f"--budget {_duration(w['needed_budget_s'])} --max-pairs {w['needed_pairs']}, "
                     "or a quieter machine")
        else:
            text += (f"Detecting {fmt.percent(min_effect)} needs about {w['needed_pairs']} pairs "
                     f"(--max-pairs {w['needed_pairs']} and the budget they take), or a quieter machine")
        lines.append(text)
    return lines


def _duration(seconds: float) -> str:
    """A --budget value a user can paste: whole minutes, rounded up."""
    import math

    return f"{max(1, math.ceil(seconds / 60))}m"


__all__ = ["budget_warning_lines", "headline", "report_rows", "source_text", "table"]
