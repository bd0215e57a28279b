"""Markdown summaries for pull-request comments and ``$GITHUB_STEP_SUMMARY``.

Why separate from the terminal tables: a PR comment is read by someone who did not
run anything, so it leads with the decision, shows what changed, and folds the
unchanged rows away (``<details>``) instead of listing dozens of identical counters.
"""

from __future__ import annotations

from .. import fmt, metrics
from .compare_views import counter_changes, row_change, row_values
from .markdown_table import table, verdict
# The gate summary below keeps its private names until it moves to gate_views.py (drop this line then).
from .markdown_table import cell as _cell, table as _table, verdict as _verdict
from .untrusted import md, md_code
from ..decide.compare import Comparison

ORDER = {"regressed": 0, "improved": 1, "inconclusive": 2, "unchanged": 3}


def _labelled(v) -> str:
    """A verdict cell: the word in bold when it is a finding, with what it rests on."""
    from .verdicts import verdict_label

    return verdict(v.verdict, verdict_label(v))


def comparison_markdown(cmp: Comparison, title: str = "ttfg compare") -> str:
    """The comparison as Markdown: decision, notable rows, unchanged rows folded.

    Parameters
    ----------
    cmp : Comparison
    title : str
        Heading.

    Returns
    -------
    str
    """
    counts = cmp.counts()
    code = cmp.exit_code()
    decision = {0: "no regression", 1: f"{counts['regressed']} regression(s)", 2: "nothing comparable"}[code]
    lines = [f"### {title}: {decision}", "",
             f"base {md_code(cmp.base_label)} vs head {md_code(cmp.head_label)}: "
             + ", ".join(f"{n} {v}" for v, n in counts.items() if n) if cmp.rows else "no rows", ""]
    header = ["case", "metric", "base", "head", "ratio", "interval", "verdict"]

    def row(r):
        return [md(r.case), md(r.metric), *row_values(r), fmt.factor(r.verdict.ratio),
                fmt.interval(r.verdict.ci_low, r.verdict.ci_high), _labelled(r.verdict)]

    notable = sorted((r for r in cmp.rows if r.verdict.verdict != "unchanged"), key=lambda r: ORDER[r.verdict.verdict])
    same = [r for r in cmp.rows if r.verdict.verdict == "unchanged"]
    if notable:
        lines += table(header, [row(r) for r in notable]) + [""]
        lines += [f"- {md_code(r.case)} {md(r.metric)}{row_change(r)}: {md(r.verdict.reason)}"
                  for r in notable if r.verdict.verdict != "inconclusive"]
        detect = [r for r in notable if r.verdict.verdict == "inconclusive" and r.compared_as == "timing"]
        if detect:
            lines.append(f"- {len(detect)} inconclusive timing row(s): no regression was shown, and none was ruled "
                         "out beyond the size each states it could detect")
        lines.append("")
    if cmp.attributions:
        from .attribution_views import attribution_markdown

        lines += [attribution_markdown(a) for a in cmp.attributions]
    if same:
        lines += ["<details><summary>" + f"{len(same)} unchanged</summary>", ""]
        lines += table(header, [row(r) for r in same]) + ["", "</details>", ""]
    lines += [f"> {md(note)}" for note in cmp.notes]
    return "\n".join(lines).rstrip() + "\n"


def expectations_markdown(check) -> str:
    """An expectations check as Markdown: failures first, with the fix.

    Parameters
    ----------
    check : expect.ExpectationCheck

    Returns
    -------
    str
    """
    fails = check.failures()
    counts: dict[str, int] = {}
    for r in check.rows:
        counts[r.status] = counts.get(r.status, 0) + 1
    head = "expectations hold" if check.exit_code() == 0 else (
        f"{len(fails)} expectation(s) violated" if fails else "no expectation could be checked")
    lines = [f"### expectations `{check.path}`: {head}", "",
             ", ".join(f"{n} {s}" for s, n in counts.items()) + (f"; {check.not_run} row(s) for cases not run"
                                                                 if check.not_run else ""), ""]
    shown = [r for r in check.rows if r.status != "ok"]
    if shown:
        lines += table(["case", "metric", "expected", "margin", "measured", "status"],
                       [[r.case, r.metric, fmt.metric_value(r.metric, r.expected), fmt.percent(r.margin),
                         fmt.metric_value(r.metric, r.measured), verdict(r.status)] for r in shown]) + [""]
    if fails:
        lines.append("Both regressions and unexpected improvements fail, so that wins are locked in: if the change "
                     f"is intended, update `{check.path}` (`ttfg expect update --runs HEAD.json --out {check.path}`, "
                     "or commit the suggested file from the artifacts).")
    return "\n".join(lines).rstrip() + "\n"


#: First line of the gate's summary.md: a PR comment that carries it is the gate's, and is updated in place.
GATE_MARKER = "<!-- ttfg-perf-gate -->"


#: Rows of the verdict table shown above the fold; the rest (all unchanged) go into the details.
VISIBLE_ROWS = 8


def where_it_went(a) -> str:
    """One visible line for a regressed case: its largest phase change and the functions of the user's and the
    framework's code whose own cost grew most (the full attribution is in the details)."""
    from .gate_views import function_lines, phase_lines

    data = a.to_json()
    parts = phase_lines(data, top=1)
    for title, found in function_lines(data, top=3)[:1]:
        parts.append(f"{title}: " + ", ".join(" ".join(line.split()) for line in found))
    return f"**Where it went**, {md_code(a.case)}: " + _cell(md("; ".join(parts)) or "no phase or function data")


def gate_footer(outcome) -> str:
    """One line on the gate that actually ran: its tiers (and whether instructions were counted), the guarded
    timings and their level, the pairs and time it took, the revisions."""
    s = outcome.settings
    ran: list[str] = []
    counted = None
    for c in outcome.cases:
        for step in c.trail:
            ran.append(step.tier)
            if step.tier == "instructions":
                counted = counted or any(e["metric"] == "instructions" for e in step.evidence)
        if c.guards or c.tier == "time":
            ran.append("time")
    order = [t for t in ("structural", "instructions", "time") if t in ran]
    names = [t + (" (callgrind)" if t == "instructions" and counted else
                  " (not counted here)" if t == "instructions" else "") for t in order]
    guard = list(getattr(s, "guard", None) or [s.metric])
    labels = ", ".join(metrics.get(g).brief for g in guard)
    level = f"alpha {s.alpha:g}" + (f" over all {len(guard)} (Bonferroni)" if len(guard) > 1 else "")
    timed = (f"the time tier guarded {labels} at {level}, minimum effect {fmt.percent(s.min_effect)}" if "time" in order
             else "the counts decided every case, so no timing was tested (one pair was taken for the counters)")
    pairs = sum(c.attempted for c in outcome.cases)
    return (f"Gate that ran: {' → '.join(names) or 'no tier'}; {timed}; {len(outcome.cases)} case(s), {pairs} "
            f"pair(s) of processes, {fmt.seconds(outcome.elapsed_s)} (time budget {fmt.seconds(s.budget_s)}); "
            f"base {outcome.base.short}, head {outcome.head.short}.")


def gate_markdown(outcome, check=None, attributions=None, noise: str | None = None,
                  notes: list[str] | None = None) -> str:
    """The gate's decision as Markdown for ``$GITHUB_STEP_SUMMARY`` or a PR comment.

    Parameters
    ----------
    outcome : gate.GateOutcome
    check : expect.ExpectationCheck or None
        Appended when the gate checked expectations.
    attributions : list of Attribution or None
        Default: those the gate made for its regressed cases.
    noise : str or None
        The noise floor's sentence, for the details.
    notes : list of str or None
        What a reader must see whatever the verdict (a dependency change not measured), above the fold.

    Returns
    -------
    str
        Starts with :data:`GATE_MARKER` (hidden when rendered), then the verdict table
        (the numbers of the metric that decided each case, ``gate_views.verdict_rows``),
        one sentence on what passing means, a line per regression on where it went, the
        details folded away, and a footer on the gate that ran: at most 15 visible lines
        on a failure with up to a few regressed cases.
    """
    from .attribution_views import attribution_markdown
    from .gate_views import DECISIONS, revision_label, verdict_rows
    from .verdicts import failures_note, passing_means

    code = outcome.exit_code()
    if check is not None and check.failures() and code == 0:
        code = 1
    decision = DECISIONS[code]
    s = outcome.settings
    shard = getattr(outcome, "shard", None)
    where = f" (shard {shard.label}, {len(shard.cases)} case(s); `ttfg merge gate` joins the shards)" if shard else ""
    cases = [c.to_json() for c in outcome.cases]
    rows = verdict_rows(cases)
    header = ["case", "verdict", "decided by", "base", "head", "ratio", "interval"]

    failed = {c.case: failures_note(c.failed, c.attempted, c.first_error) for c in outcome.cases}

    def cells(r):
        return [md_code(r.case), _verdict(r.word, r.label) + failed.get(r.case, ""), r.decided_by, r.base, r.head,
                r.ratio, r.interval]

    order = sorted(rows, key=lambda r: ORDER.get(r.word, 9))
    visible = order if len(order) <= VISIBLE_ROWS else [r for r in order if r.word != "unchanged"][:VISIBLE_ROWS]
    lines = [GATE_MARKER, f"## ttfg gate{where}: {decision}", ""]
    lines += _table(header, [cells(r) for r in visible]) if rows else ["No case was gated."]
    if len(visible) < len(rows):
        lines.append(f"{len(rows) - len(visible)} more case(s) in the details.")
    lines += ["", f"_{passing_means(outcome, check)}_", ""]
    lines += [f"> {note}" for note in notes or ()]
    if attributions is None:
        attributions = [c.attribution for c in outcome.cases if c.attribution is not None]
    regressed = {c.case for c in outcome.cases if c.verdict.verdict == "regressed"}
    for a in [a for a in attributions if a.case in regressed][:3]:
        lines.append(where_it_went(a))
    if check is not None and check.failures():
        lines.append(f"**{len(check.failures())} expectation(s) violated** (details below).")
    lines += ["", "<details><summary>Details: each case's numbers and tiers, where changes went, noise</summary>",
              "", f"base {revision_label(outcome.base)} vs head {revision_label(outcome.head)}; gated metric "
              f"`{s.metric}`, paired and interleaved.", ""]
    lines += _table(["case", *header[1:], "base and head are", "pairs", "wall", "stopped"],
                    [[*cells(r), md(r.statistic) or fmt.MISSING, f"{c.pairs}/{c.attempted}", fmt.seconds(c.wall_s),
                      md(c.stop)] for r, c in zip(rows, outcome.cases)]) + [""]
    for r, c in zip(rows, outcome.cases):
        lines.append(f"- {md_code(c.case)} ({md(r.label)}, decided by the {md(c.tier)} tier on {md(r.metric)}): "
                     f"{_cell(md(c.verdict.reason))}")
        lines += [f"  - context, not decided on: {_cell(md(text))}" for text in r.context]
        lines += [f"  - {t.tier} tier: {t.verdict}{' (settled)' if t.settled else ''}: {_cell(md(t.reason))}"
                  for t in c.trail if not t.settled]
        if c.changes:
            lines.append(f"  - counters changed: {counter_changes(c.changes)}")
    lines += [f"- skipped {md_code(sk.id)}: {md(sk.reason)}" for sk in outcome.skipped]
    lines.append("")
    for a in attributions:
        lines.append(attribution_markdown(a, open_=False))
    if check is not None:
        lines.append(expectations_markdown(check))
    if noise:
        lines += [f"> {noise}", ""]
    lines += ["</details>", "", f"<sub>{gate_footer(outcome)}</sub>"]
    return "\n".join(lines).rstrip() + "\n"
