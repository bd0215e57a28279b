"""Attribution (``decide/attribution.py``) for people: a headline sentence, terminal tables,
Markdown for ``summary.md`` and rows for the HTML report.

The headline leads, because it is what a reviewer reads in a PR comment: how much the
gated time changed, which phase carried the change, which counters moved and which
function's own instructions grew most. Tables follow for whoever digs. Every number goes
through ``fmt``.
"""

from __future__ import annotations

import math

from rich.table import Table
from rich.text import Text

from .. import fmt
from ..fmt import _finite
from .. import metrics
from ..results.attribution_record import FUNCTION_SOURCES, Attribution, CounterDelta, FunctionDelta, PhaseDelta
from .hidden_functions import hidden
from .markdown_table import table
from .untrusted import md, md_code


def _signed(text: str, v) -> str:
    return f"+{text}" if _finite(v) and v > 0 else text


def seconds_delta(v) -> str:
    """``+52.0 ms``, ``-1.2 s``."""
    return _signed(fmt.seconds(v), v)


def count_delta(v) -> str:
    """``+1,234,567``."""
    return _signed(fmt.count(v), v)


def _ratio(p: PhaseDelta) -> str:
    text = fmt.factor(p.ratio)
    interval = fmt.interval(p.ci_low, p.ci_high)
    return text if interval == fmt.MISSING else f"{text} {interval}"


def _counter_name(c: CounterDelta) -> str:
    return c.metric.removeprefix(metrics.COUNTER_PREFIX)


def _amount(f: FunctionDelta, value) -> str:
    """A function's cost in its unit: ``1,234,567`` instructions or ``52 ms``."""
    return fmt.seconds(value) if f.unit == "s" else fmt.count(value)


def _function_delta(f: FunctionDelta, value=None) -> str:
    """A function's change in its unit, marked as a bound when it is in one side's list only."""
    value = f.delta_incl if value is None else value
    text = seconds_delta(value) if f.unit == "s" else count_delta(value)
    return {"head only": f"≥ {text}", "base only": f"≤ {text}"}.get(f.presence, text)


#: How each unit's function list is named in titles and the headline.
UNIT_WORDS = {"instructions": ("instructions", "inclusive instruction change"),
              "s": ("sampled time", "inclusive sampled-time change")}


def function_name(f: FunctionDelta) -> str:
    return f"{f.fn} ({f.where})"


#: Whose code each kind of call-count row is, as a reader is told.
CODE_WORDS = {"project": "your code", "framework": "the frameworks' code"}


def calls_lines(a: Attribution, top: int = 5) -> list[tuple[str, list[str]]]:
    """Per kind of code (the project's first, then the frameworks'): a title and the ``top`` Python functions whose
    call count in the first gradient grew most, one ``+N calls  fn (file:line)`` line each; kinds with none left out."""
    out = []
    for code, words in CODE_WORDS.items():
        grown = a.grown_calls(code, top)
        if grown:
            out.append((f"Python functions called more in {words}",
                        [f"{count_delta(c.delta)} calls  {c.fn} ({c.where})" for c in grown]))
    return out


def source_line_lines(a: Attribution, top: int = 5) -> list[tuple[str, list[str]]]:
    """The compiled code that grew, by model line: every new graph break (line and reason), then the ``top``
    lines whose jaxpr equations or FX nodes grew most, the project's first; one title, none when nothing grew."""
    from ..decide.source_lines import grown, line_text

    found = grown(a.lines, top)
    return [("Compiled code that grew, by model line", [line_text(c) for c in found])] if found else []


LINES_HEADER = ["kind", "file:line", "function", "code", "base", "head", "change"]


def lines_rows(a: Attribution) -> list[list[str]]:
    from ..decide.source_lines import KIND_WORDS

    return [[KIND_WORDS.get(c.kind, c.kind) + (f": {c.reason}" if c.reason else ""), c.where, c.fn,
             CODE_WORDS.get(c.code, c.code), fmt.count(c.base), fmt.count(c.head), count_delta(c.delta)]
            for c in a.lines]


CALLS_HEADER = ["function", "file:line", "code", "calls base", "calls head", "change"]


def calls_rows(a: Attribution) -> list[list[str]]:
    return [[c.fn, c.where, CODE_WORDS.get(c.code, c.code), fmt.count(c.base), fmt.count(c.head),
             count_delta(c.delta)] for c in a.calls]


def headline(a: Attribution) -> str:
    """One sentence: the total change, the phase that carried it, counters, the function to look at."""
    parts = []
    t = a.total
    if t is None and not a.phases and not a.counters and a.notes:  # nothing measured to compare: the note says why
        return f"{a.case}: {a.notes[0]}"
    if t is not None and t.delta is not None:
        label = metrics.get(a.metric).brief
        how = fmt.plural(t.n, "pair") if t.paired else f"{fmt.plural(t.n, 'sample')} each"
        parts.append(f"{label} {seconds_delta(t.delta)} ({_ratio(t)}, {how})")
    big = a.largest_phase()
    if big is not None:
        share = (f", {fmt.percent(big.delta / t.delta)} of the change"
                 if t is not None and t.delta and big.phase != t.phase and abs(big.delta / t.delta) <= 10 else "")
        instr = (f", {count_delta(big.instructions_delta)} instructions"
                 if big.instructions_delta is not None else "")
        parts.append(f"largest phase change: {big.phase} {seconds_delta(big.delta)}{share}{instr}")
    changed = a.changed_counters()
    if changed:
        parts.append("counters changed: " + "; ".join(
            f"{_counter_name(c)} {fmt.metric_value(c.metric, c.base)} -> {fmt.metric_value(c.metric, c.head)}"
            for c in changed[:4]) + (f" and {len(changed) - 4} more" if len(changed) > 4 else ""))
    elif a.counters:
        parts.append("no counter changed")
    # The deterministic evidence in the user's own source first: the project's Python function called more, the
    # model line whose compiled code grew (a graph break first), each with its file:line.
    own = a.grown_calls("project", 1)
    if own:
        parts.append(f"Python function called more in your code: {own[0].fn} ({own[0].where}) "
                     f"{count_delta(own[0].delta)} calls")
    from ..decide.source_lines import grown, line_text

    lines = grown(a.lines, 1)
    if lines:
        parts.append(f"compiled code that grew by model line: {line_text(lines[0])}")
    lead = a.headline_function(hidden)
    first = [lead[0]] if lead else []
    for unit in first + [u for u in a.units() if u not in first]:  # the function to look at first, first
        top = a.top_function(unit, hidden)
        if top is None:
            if a.functions_in(unit):
                parts.append(f"its own {UNIT_WORDS[unit][0]} changed in the interpreter's and ttfg's code only")
            continue
        word = UNIT_WORDS[unit][0]
        if top.delta_self:
            rel = f" ({fmt.change(top.delta_self / top.base_self)})" if top.base_self else ""
            verb = "grew" if top.delta_self > 0 else "shrank"
            noise = "" if top.clear or not math.isfinite(top.self_t) else ", within the samples' noise"
            parts.append(f"{verb} most in its own {word}: {function_name(top)}, self "
                         f"{_function_delta(top, top.delta_self)}{rel}, inclusive {_function_delta(top)}{noise}")
        else:
            parts.append(f"largest inclusive change in {word}: {function_name(top)} {_function_delta(top)}")
    if not a.functions:
        parts.append("no function-level data")
    return f"{a.case}: " + "; ".join(parts) if parts else f"{a.case}: nothing to attribute"


# ---------------------------------------------------------------------------- terminal


def phase_rows(a: Attribution) -> list[list[str]]:
    """Rows of the phase table (shared by the terminal, Markdown and HTML)."""
    rows = []
    for p in ([a.total] if a.total else []) + a.phases:
        rows.append([p.phase, fmt.seconds(p.base), fmt.seconds(p.head),
                     seconds_delta(p.delta), _ratio(p),
                     fmt.count(p.base_instructions), fmt.count(p.head_instructions), count_delta(p.instructions_delta)])
    return rows


PHASE_HEADER = ["phase", "base", "head", "change", "ratio [95 %]", "instr. base", "instr. head", "instr. change"]
COUNTER_HEADER = ["counter", "base", "head", "change", "verdict"]
FUNCTION_HEADER = ["function", "file:line", "incl. base", "incl. head", "incl. change", "self change"]


def counter_rows(a: Attribution, changed_only: bool = False) -> list[list[str]]:
    return [[_counter_name(c), fmt.metric_value(c.metric, c.base), fmt.metric_value(c.metric, c.head),
             fmt.change(c.head / c.base - 1) if c.base and c.head is not None else fmt.MISSING, c.verdict]
            for c in a.counters if c.changed or not changed_only]


def function_rows(a: Attribution, unit: str, internals: bool = False) -> list[list[str]]:
    """The function table of ``unit``; without ``internals``, the functions :func:`hidden` names left out."""
    return [[f.fn, f.where, _amount(f, f.base_incl), _amount(f, f.head_incl), _function_delta(f),
             _function_delta(f, f.delta_self) if f.delta_self is not None else fmt.MISSING]
            for f in a.functions_in(unit) if internals or not hidden(f)]


def hidden_note(a: Attribution, unit: str) -> str | None:
    """``12 of the interpreter's and ttfg's own functions left out (--internals lists them)``; None for none."""
    n = sum(1 for f in a.functions_in(unit) if hidden(f))
    return (f"{fmt.plural(n, 'function')} of the interpreter's and ttfg's own code left out of the "
            f"{UNIT_WORDS[unit][0]} table (ttfg explain --internals lists them)") if n else None


def function_title(a: Attribution, unit: str) -> str:
    """``first-gradient window, top functions by inclusive instruction change (2 base + 2 head samples)``."""
    n = a.function_samples.get(unit, {})
    source = next(what for _, u, what in FUNCTION_SOURCES if u == unit)
    return (f"build and first gradient, top functions by {UNIT_WORDS[unit][1]}, from {source}, {n.get('base', 0)} base + "
            f"{n.get('head', 0)} head samples")


def _has_instructions(a: Attribution) -> bool:
    return any(p.base_instructions is not None or p.head_instructions is not None for p in a.phases)


def _rich_table(title: str, header: list[str], rows: list[list[str]]) -> Table:
    """A table in the one style every terminal table has (``terminal.fitted``'s: a rule under the header)."""
    from rich import box

    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
                  collapse_padding=True)
    for i, col in enumerate(header):
        names = col in ("function", "file:line", "phase", "counter")  # long identifiers fold, never cut
        table.add_column(col, justify="left" if i == 0 or col in ("file:line", "verdict") else "right",
                         no_wrap=not names, overflow="fold" if names else "ellipsis")
    for row in rows:
        table.add_row(*row)
    return table


def print_attribution(console, a: Attribution, internals: bool = False) -> None:
    """The headline, then the phase and counter tables, the Python call counts and model lines (the user's own
    source, deterministic), then the function tables (``internals``: the interpreter's code kept), on a rich
    console."""
    said = headline(a)
    console.print(Text.assemble(("where it went", "bold"), f" {said}"), highlight=False)
    header, rows = PHASE_HEADER, phase_rows(a)
    if not _has_instructions(a):
        header, rows = header[:5], [r[:5] for r in rows]
    how = "paired by the gate's pairs" if a.paired else "medians of the two files' samples"
    if rows:
        console.print(_rich_table(f"{a.case}: phases ({how}; 95 % intervals, descriptive)", header, rows))
    if a.counters:
        console.print(_rich_table(f"{a.case}: counters", COUNTER_HEADER, counter_rows(a)))
    if a.calls:
        rows = [[f"{r[0]}\n  {r[1]}", r[2], r[5], r[4]] for r in calls_rows(a)]
        console.print(_rich_table(f"{a.case}: Python call counts of the first gradient, your code first",
                                  ["function", "code", "change", "calls head"], rows))
    if a.lines:
        rows = [[f"{r[0]}\n  {r[1]} ({r[2]})", r[3], r[6], r[5]] for r in lines_rows(a)]
        console.print(_rich_table(f"{a.case}: compiled code per model line, graph breaks first",
                                  ["line", "code", "change", "head"], rows))
    left_out = []
    for unit in a.units():
        # The terminal keeps the change columns and puts file:line under the name, so that 80
        # columns hold it; Markdown and HTML show every column.
        rows = [[f"{r[0]}\n  {r[1]}", r[4], r[5], r[3]] for r in function_rows(a, unit, internals)]
        if rows:
            console.print(_rich_table(f"{a.case}: {function_title(a, unit)}",
                                      ["function", "incl. change", "self change", "incl. head"], rows))
        if not internals and (note := hidden_note(a, unit)):
            left_out.append(note)
    for note in a.function_notes + a.notes + [n for n in (a.calls_note, a.lines_note) if n] + left_out:
        if note in said:
            continue
        console.print(Text.assemble(("note", "yellow"), f": {note}"), highlight=False)


# ---------------------------------------------------------------------------- Markdown


def attribution_markdown(a: Attribution, open_: bool = True, internals: bool = False) -> str:
    """The headline as a bullet, the tables folded in ``<details>`` (open for a regression): phases, counters, the
    Python call counts and model lines, then the function tables (``internals``: the interpreter's code kept)."""
    header, rows = PHASE_HEADER, phase_rows(a)
    if not _has_instructions(a):
        header, rows = header[:5], [r[:5] for r in rows]
    said = headline(a)
    lines = [f"**Where it went**: {md(said)}", "",
             f"<details{' open' if open_ else ''}><summary>{md(a.case)}: phases, counters, functions</summary>", ""]
    lines += table(header, rows) + [""] if rows else []
    changed = counter_rows(a, changed_only=True)
    if changed:
        lines += table(COUNTER_HEADER, changed) + [""]
    elif a.counters:
        lines += [f"{len(a.counters)} counters, none changed.", ""]
    if a.calls:
        lines += ["Python call counts of the first gradient (one process a side), your code first:", ""]
        lines += table(CALLS_HEADER, [[md_code(r[0]), md_code(r[1]), *r[2:]] for r in calls_rows(a)]) + [""]
    if a.lines:
        lines += ["Compiled code per model line (one process a side), graph breaks first:", ""]
        lines += table(LINES_HEADER, [[md(r[0]), md_code(r[1]), md_code(r[2]), *r[3:]] for r in lines_rows(a)]) + [""]
    left_out = []
    for unit in a.units():
        rows = function_rows(a, unit, internals)
        if rows:
            title = function_title(a, unit)
            lines += [f"{title[0].upper()}{title[1:]}:", ""]
            lines += table(FUNCTION_HEADER, [[md_code(r[0]), md_code(r[1]), *r[2:]] for r in rows]) + [""]
        if not internals and (note := hidden_note(a, unit)):
            left_out.append(note)
    lines += [f"> {md(note)}" for note in a.function_notes + a.notes + [n for n in (a.calls_note, a.lines_note) if n]
              + left_out if note not in said]
    lines += ["", "</details>", ""]
    return "\n".join(lines)


# ---------------------------------------------------------------------------- HTML


def attribution_context(a: Attribution) -> dict:
    """What ``report.html.j2`` draws for one attribution (plain strings; the template escapes)."""
    from .icicle import icicles

    header, rows = PHASE_HEADER, phase_rows(a)
    if not _has_instructions(a):
        header, rows = header[:5], [r[:5] for r in rows]
    said = headline(a)
    notes = a.function_notes + a.notes + [n for u in a.units() if (n := hidden_note(a, u))]
    return {"case": a.case, "headline": said, "phase_header": header, "phase_rows": rows,
            "counter_header": COUNTER_HEADER, "counter_rows": counter_rows(a),
            "function_header": FUNCTION_HEADER,
            "function_tables": [{"title": function_title(a, u), "rows": rows} for u in a.units()
                                if (rows := function_rows(a, u))],
            "lines_header": LINES_HEADER, "lines_rows": lines_rows(a), "icicles": icicles(a),
            "notes": [n for n in notes if n not in said]}


__all__ = ["LINES_HEADER", "lines_rows", "source_line_lines", "CALLS_HEADER", "CODE_WORDS", "attribution_context", "attribution_markdown", "calls_lines", "calls_rows",
           "count_delta", "function_name", "headline",
           "print_attribution", "seconds_delta"]
