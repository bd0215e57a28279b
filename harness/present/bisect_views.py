"""``ttfg bisect`` for people: the search path as a terminal table, the conclusion's lines, ``summary.md``.

Why from the document: ``bisect.json`` is the bisect's state and its report at once, so a
finished bisect is shown again from it without measuring; every view here reads only that
document (``app/bisect.py`` writes it), the terminal and the Markdown alike.
"""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from .. import fmt
from .untrusted import md, plain

#: How each tested commit's state reads.
STATE_WORDS = {"good": "same as good", "bad": "same as bad", "between": "differs from both ends (two steps)",
               "unknown": "not yet known", "skipped": "skipped (cannot be measured)",
               "turn": "differs from both ends the opposite ways (a turn)"}


#: How each ending reads as a heading (``summary.md``'s and the page's).
HEADINGS = {"found": "culprit found", "range": "culprit narrowed to a range", "no step": "no step",
            "swapped": "good and bad swapped", "undecided": "undecided", "end cannot run": "an end cannot run",
            "stopped": "stopped", "interrupted": "interrupted", "running": "running",
            "turn": "a turn: the step into it and the step out of it"}


def deciding_case(e: dict) -> dict | None:
    """The case record a comparison's verdict rests on: the first whose verdict is the comparison's, else the
    first; None when no case was compared (a side could not be measured)."""
    deciding = [c for c in e.get("cases", []) if c.get("verdict") == e["verdict"]] or e.get("cases", [])
    return deciding[0] if deciding else None


def comparison_text(e: dict) -> str:
    """One comparison in a line: ``vs good 0123456789: regressed (structural tier, counters.x 1.50x, 1 pair)``."""
    if e is None:
        return ""
    label = {"good": "vs good", "bad": "vs bad", "ends": "good vs bad", "parent": "vs its parent"}[e["against"]]
    if e["against"] == "bad":
        other = e["head"]
    if e["against"] == "good":
        other = min(e["base"], e["head"], key=lambda c: 0)  # the good end is the base (the head, --improvement)
    text = f"{label}: {e['verdict']}"
    if e.get("reverse"):  # a turn's other side: the commits swapped, "regressed" is a step the other way
        text = f"{label} (swapped: base {e['base'][:10]}, head {e['head'][:10]}): {e['verdict']}"
    c = deciding_case(e)
    if c is not None:
        figure = ""
        if c.get("ratio") is not None and c.get("metric"):
            interval = fmt.interval(c.get("ci_low"), c.get("ci_high"))
            figure = f", {c['metric']} {fmt.factor(c['ratio'])}" + (f" {interval}" if interval != fmt.MISSING else "")
        text += f" ({c.get('tier')} tier{figure}, {fmt.plural(c.get('pairs') or 0, 'pair')})"
        if c.get("counters_fell") and c.get("verdict") != e["verdict"]:
            text += " (structural counters only fell: a step the other way)"
    if e.get("error"):
        text += f": {e['error']}"
    return text + counts_text(e)


def counts_text(e: dict) -> str:
    """A comparison's count processes a side, and which were reused from an earlier comparison:
    ``; count processes: 1 a side, count of 0123456789 reused from step 2 (vs good)``; empty without counts."""
    counts = e.get("counts")
    if not counts:
        return ""
    n = {role: c["taken"] + c["reused"] for role, c in counts.items()}
    parts = [f"{n['base']} a side" if n.get("base") == n.get("head")
             else ", ".join(f"{role} {n[role]}" for role in ("base", "head") if role in n)]
    parts += [f"count of {e[role][:10]} reused from {', '.join(c['from']) or 'an earlier comparison'}"
              for role, c in counts.items() if c["reused"]]
    return "; count processes: " + ", ".join(parts)


def _calls_line(code: str, calls: list[dict]) -> str | None:
    """``Python functions called more in your code: _scale_step (mylab/ops.py:4) +20,000``; None without any."""
    mine = [c for c in calls if c.get("code", "framework") == code]
    if not mine:
        return None
    from .attribution_views import CODE_WORDS  # the gate's words for whose code it is

    return (f"Python functions called more in {CODE_WORDS[code]}: "
            + ", ".join(f"{c['fn']} ({c['file']}{':' + str(c['line']) if c.get('line') else ''}) "
                        f"+{fmt.count(c['head'] - c['base'])}" for c in mine))


def _line_text(c: dict) -> str:
    """A model line whose compiled code grew (``decide/source_lines.line_text``'s words, from the stored dict)."""
    from ..decide.source_lines import line_text
    from ..results.attribution_record import LineDelta

    return line_text(LineDelta.from_json(c))


def attribution_lines(evidence: dict) -> list[str]:
    """The phase that moved, then what grew in the user's own source: the Python functions of the project called
    more (deterministic call counts, each with its file:line) and the model lines whose compiled code grew; then the
    counters, the frameworks' functions called more, and the functions that grew in their own cost (callgrind or
    sampled stacks, interpreter internals left out when the comparison was made), per case."""
    lines = []
    for a in evidence.get("attribution") or []:
        phase = a.get("phase")
        if phase and phase.get("instructions_delta"):  # counted: the deterministic evidence ranks the phases
            lines.append(f"phase that moved most: {phase['phase']} {phase['instructions_delta']:+,.0f} instructions"
                         + (f" (its time {'+' if phase['delta_s'] >= 0 else ''}{fmt.seconds(phase['delta_s'])}, "
                            "from the few profiled processes)" if phase.get("delta_s") is not None else ""))
        elif phase and phase.get("delta_s") is not None:
            lines.append(f"phase that moved most: {phase['phase']} {'+' if phase['delta_s'] >= 0 else ''}"
                         f"{fmt.seconds(phase['delta_s'])}" + (f" ({fmt.factor(phase['ratio'])})"
                                                               if phase.get("ratio") == phase.get("ratio") else ""))
        calls = a.get("calls") or []
        if (own := _calls_line("project", calls)) is not None:
            lines.append(own)
        if a.get("lines"):
            lines.append("compiled code that grew, by model line: " + "; ".join(_line_text(c) for c in a["lines"]))
        for c in a.get("counters") or []:
            lines.append(f"counter grew: {c['metric']} {fmt.number(c['base'])} -> {fmt.number(c['head'])}")
        if (theirs := _calls_line("framework", calls)) is not None:
            lines.append(theirs)
        for f in a.get("functions") or []:
            size = fmt.seconds(f["delta"]) if f.get("unit") == "s" else f"{fmt.number(f['delta'])} instructions"
            where = f"{f['file']}:{f['line']}" if f.get("line") else f.get("file") or ""
            lines.append(f"function grew in its own time: {f['fn']} +{size} ({where})")
    return lines


def path_rows(doc: dict) -> list[tuple[str, str, str, str]]:
    """The search path: (step, commit, what it is, the evidence), the ends' comparison first."""
    rows = []
    if doc.get("ends"):
        rows.append(("ends", f"{doc['good']['short']}..{doc['bad']['short']}", "", comparison_text(doc["ends"])))
    for n, p in enumerate(doc.get("probes", []), 1):
        what = STATE_WORDS.get(p["state"], p["state"])
        if p["state"] == "between":
            what += "; the search keeps the larger: " + ("before it" if p.get("counts_as") == "bad" else "after it")
        if p.get("attempts", 1) > 1:
            what += f" (try {p['attempts']})"
        rows.append((str(n), p["commit"][:10], what, "; ".join(comparison_text(e) for e in p.get("evidence", []))))
    for t in doc.get("turns") or []:  # each turn's other side, searched the other way
        side = {"good": "same as the turn", "bad": "same as the bad end"} if t["shape"] == "peak" else \
            {"good": "same as the good end", "bad": "same as the turn"}
        for n, p in enumerate(t["probes"], 1):
            what = side.get(p["state"]) or STATE_WORDS.get(p["state"], p["state"])
            if p.get("attempts", 1) > 1:
                what += f" (try {p['attempts']})"
            rows.append((f"turn {t['commit'][:7]}: {n}", p["commit"][:10], what,
                         "; ".join(comparison_text(e) for e in p.get("evidence", []))))
    return rows


def turn_probes(doc: dict) -> list[dict]:
    """The probes in :func:`path_rows`'s order after the ends: the search's, then each turn's other side's."""
    return list(doc.get("probes") or []) + [p for t in doc.get("turns") or [] for p in t["probes"]]


def turn_lines(doc: dict) -> list[str]:
    """What each turn is: its shape in the gated timing's words, the step into it and the step out of it, each
    with its command (a gate for a step found, a bisect for a side left as a range)."""
    worse, better = ("faster", "slower") if doc.get("improvement") else ("slower", "faster")
    lines = []
    for t in doc.get("turns") or []:
        at, culprit = t["commit"][:10], (doc.get("culprit") or {}).get("short")
        probe = next((p for p in doc.get("probes") or [] if p["commit"] == t["commit"]), {})
        figures = "; ".join(comparison_text(e) for e in probe.get("evidence", [])[-2:])
        if t["shape"] == "peak":
            lines.append(f"a turn at {at}: {worse} than both ends (a peak; {figures})")
        else:
            lines.append(f"a turn at {at}: {better} than both ends (a dip; {figures})")
        ours = (f"the step into it: the culprit {culprit}" if t["shape"] == "peak"
                else f"the step out of it: the culprit {culprit}") if culprit else None
        other = "the step out of it" if t["shape"] == "peak" else "the step into it"
        other_way = better  # a turn's other step goes the other way, whatever its shape
        if ours:
            lines.append(f"{ours} ({worse}), reproduce: {doc.get('repro')}")
        step = t.get("step")
        if step:
            lines.append(f"{other}: {step['short']} \"{step['subject']}\" ({other_way}), reproduce: {t['repro']}")
        elif t.get("candidates"):
            lines.append(f"{other} ({other_way}) is one of: " + ", ".join(c["short"] for c in t["candidates"])
                         + (f"; narrow it: {t['command']}" if t.get("command") else ""))
        else:
            lines.append(f"{other} ({other_way}) is not searched yet: rerun the same command to continue")
    return lines


def path_table(doc: dict) -> Table:
    """The search path as a rich table."""
    table = Table(title=f"bisect {doc['good']['short']} (good) .. {doc['bad']['short']} (bad): "
                        f"{fmt.plural(len(doc['commits']) - 1, 'commit')}", title_justify="left")
    for name in ("step", "commit", "found", "evidence"):
        table.add_column(name, overflow="fold")
    for row in path_rows(doc):
        table.add_row(*map(plain, row))  # subjects, errors and reasons come from git and from files
    return table


def range_line(doc: dict) -> str:
    """The range as the terminal's first line: both ends with their subjects (the summary's opening words)."""
    return (f"between {doc['good']['short']} (good, {doc['good']['subject']}) and {doc['bad']['short']} "
            f"(bad, {doc['bad']['subject']}), first-parent")


def conclusion_lines(doc: dict) -> list[str]:
    """What the bisect came to, in the lines the terminal and the summary share."""
    status, lines = doc["status"], []
    if doc.get("merges"):
        lines.append(f"the range crosses {fmt.plural(len(doc['merges']), 'merge')}: walked first-parent (each merge "
                     "tested as one commit, its branch's commits not tested)")
    if status in ("found", "turn"):
        c = doc["culprit"]
        lines.append(f"culprit: {c['short']} \"{c['subject']}\" by {c['author']} ({c['date'][:10]})")
        evidence = doc.get("culprit_evidence")
        if evidence is not None:
            lines.append("evidence: " + comparison_text(evidence))
            lines += attribution_lines(evidence)
            if evidence["verdict"] == "regressed":
                lines.append(f"all of it (phases, counters, functions): ttfg explain {evidence['folder']}")
        lines.append(f"reproduce: {doc['repro']}")
    elif status == "range":
        lines.append(f"the culprit is one of {fmt.plural(len(doc['candidates']), 'commit')} (the others could not "
                     "be measured): " + ", ".join(f"{c['short']} \"{c['subject']}\"" for c in doc["candidates"]))
        lines.append(f"reproduce the range: {doc['repro']}")
    elif status == "no step":
        lines.append(f"no step between these commits ({doc.get('why', '')}): nothing to bisect")
    elif status == "swapped":
        if doc.get("improvement"):
            lines.append("the ends are the other way round: the \"bad\" end is slower, a regression; search for it "
                         "without --improvement")
        else:
            lines.append("good and bad look swapped: the \"bad\" end is faster than the \"good\" one; to find the "
                         "commit that made it faster, rerun with --improvement")
    elif status == "undecided":
        if doc.get("more_time", True):
            lines.append(f"undecided: {doc.get('why', '')}; raise --budget (per comparison) or --total-budget and "
                         "rerun (the steps done are kept)")
        else:  # the cases stopped short of a verdict for another reason than time: say what would decide them
            lines.append(f"undecided: {doc.get('why', '')}; more time would not decide it: add the time tier "
                         "(--tiers) or raise --max-pairs, and rerun (the steps done are kept)")
        if doc.get("candidates"):
            lines.append("the culprit is one of: " + ", ".join(c["short"] for c in doc["candidates"]))
    elif status == "end cannot run":
        lines.append(f"an end of the range cannot be measured: {doc.get('why', '')}")
    elif status == "stopped":
        lines.append(f"stopped: {doc.get('why') or 'the total budget is spent'}; the steps done are kept, rerun the "
                     "same command to continue")
    elif status == "interrupted":  # ``why`` names the signal ("interrupted by SIGTERM"); older states have none
        lines.append(f"{doc.get('why') or 'interrupted'}; the steps done are kept, rerun the same command to "
                     "continue")
    for c in (doc.get("answer") or {}).get("skipped", []):
        probe = next((p for p in doc["probes"] if p["commit"] == c), {})
        lines.append(f"skipped {c[:10]}: {probe.get('reason') or 'could not be measured'}")
    for c in (doc.get("answer") or {}).get("unknown", []):
        lines.append(f"not decided within its budget: {c[:10]}")
    lines += turn_lines(doc)
    ends = doc.get("ends") or {}
    for c in ends.get("new_cases") or []:
        lines.append(f"not bisected: {c} (only the bad end provides it)")
    for c in ends.get("removed_cases") or []:
        lines.append(f"not bisected: {c} (the bad end no longer provides it)")
    for o in doc.get("others") or []:
        lines.append(f"another step between {o['good'][:10]} and {o['bad'][:10]} (not searched): {o['command']}")
    steps = len(turn_probes(doc))
    lines.append(f"{fmt.plural(steps, 'step')} over {fmt.plural(len(doc['commits']) - 1, 'commit')} in "
                 f"{fmt.seconds(doc.get('elapsed_s'))}")
    return lines


def bisect_markdown(doc: dict) -> str:
    """``summary.md``: the conclusion, then the search path as a table."""
    head = HEADINGS.get(doc["status"], doc["status"])
    out = [f"## ttfg bisect: {head}", "",
           f"Between {md(doc['good']['short'])} (good, {md(doc['good']['subject'])}) and "
           f"{md(doc['bad']['short'])} (bad, {md(doc['bad']['subject'])}), first-parent.", ""]
    out += [f"- {md(line)}" for line in conclusion_lines(doc)]
    out += ["", "| step | commit | found | evidence |", "|---|---|---|---|"]
    out += [f"| {' | '.join(md(cell) for cell in row)} |" for row in path_rows(doc)]
    return "\n".join(out) + "\n"


def step_line(commit: str, probe, index: int, expected: int) -> Text:
    """A progress line after each step."""
    words = STATE_WORDS.get(probe.state, probe.state)
    style = {"good": "green", "bad": "red", "skipped": "yellow", "unknown": "yellow"}.get(probe.state)
    return Text.assemble(f"step {index} (about {expected} expected): {plain(commit[:10])}: ", (words, style or ""))


__all__ = ["HEADINGS", "STATE_WORDS", "attribution_lines", "bisect_markdown", "comparison_text", "conclusion_lines",
           "counts_text",
           "deciding_case", "path_rows", "path_table",
           "range_line", "step_line", "turn_lines", "turn_probes"]
