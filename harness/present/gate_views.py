"""A gate's verdicts for people: one row per case, the same in the terminal, ``summary.md`` and the report page.

Why one module, and why from the typed outcome (``results.gate_outcome``): the three outputs
used to print numbers of different metrics beside one ratio ("base 42.5 ms, head 51.1 ms,
ratio 1.022×", the ratio being the instruction count's). A row here holds the numbers of
the metric that decided and nothing else: base, head, their ratio and its interval, all in
that metric's unit (instructions with instructions, seconds with seconds). Numbers of
other tiers are context, on a line of their own, labelled with their tier and what they
are. The terminal and ``summary.md`` build their rows from the gate's outcome, the report
page and a merged gate's summary from ``gate.json`` read back into the same types
(``gate_file.load``): one type, one function, so they agree number for number
(``tests/test_gate.py`` holds them to it).

``summary.md`` (:func:`gate_markdown`) and the words ``gate.json`` carries for people
(:func:`presented_document`: each verdict's label, each attribution's headline) are made
here too, from the same outcome.

The ten-second view of a regressed case (:func:`case_lines`) is the verdict, the
deciding numbers, the three largest phase changes and the five functions of the user's
and the framework's code whose cost grew most; the interpreter's own functions
(CPython's C files, the standard library, libc) are left out unless asked for.
"""

from __future__ import annotations

from rich.text import Text

import math
import re
from dataclasses import dataclass, field

from .. import fmt, metrics
from ..results.attribution_record import MIN_PAIRS, Attribution, FunctionDelta
from ..results.gate_document import document
from ..results.gate_outcome import CaseOutcome, Figure, GateOutcome
from .hidden_functions import hidden, interpreter_internal

#: The functions a default view lists, and the phases.
TOP_FUNCTIONS, TOP_PHASES = 5, 3


def revision_label(rev) -> str:
    """``main (3223193a1b)``, or the short commit alone when the revision was named by its hash."""
    return rev.short if rev.commit.startswith(rev.name) else f"{rev.name} ({rev.short})"


def environments_note(environments: dict) -> str | None:
    """``base ran in jax-0.4.38 (jax 0.4.38, jaxlib 0.4.38), head in jax-0.10.2 (...)``, when the sides'
    environments differ: an upgrade gate's two sides are one revision, so the revisions alone would
    read "HEAD vs HEAD" and hide what was compared. None when both ran in the same one."""
    base, head = environments.get("base") or {}, environments.get("head") or {}
    if not base or not head or (base.get("key"), base.get("versions")) == (head.get("key"), head.get("versions")):
        return None

    def side(env: dict) -> str:
        versions = ", ".join(f"{k} {v}" for k, v in (env.get("versions") or {}).items()
                             if v and k not in ("numpy", "scipy", "ml-dtypes"))
        return f"{env.get('name') or '?'}" + (f" ({versions})" if versions else "")

    differs = environments.get("differs") or []
    shown = "; packages that differ: " + ", ".join(differs[:6]) + (" ..." if len(differs) > 6 else "") if differs else ""
    return f"Environments: base ran in {side(base)}, head in {side(head)}{shown}."


def metric_label(metric: str | None) -> str:
    """``build``, ``instructions``, ``build instructions``, ``autograd primitives``: the registry's brief label."""
    if not metric:
        return "failures"
    known = metric in metrics.METRICS or metrics.is_counter(metric)
    return metrics.get(metric).brief if known else metric


def _number(metric: str, v) -> str:
    return fmt.metric_value(metric, v) if v is not None else fmt.MISSING


def _ratio(v) -> str:
    return fmt.factor(v) if v is not None else fmt.MISSING


def figure_cells(fig: Figure | None) -> tuple[str, str, str, str]:
    """``(base, head, ratio, interval)`` of a figure, each in its unit; dashes when nothing was measured."""
    if not fig:
        return (fmt.MISSING,) * 4
    m = fig.metric
    interval = (fmt.interval(fig.ci_low, fig.ci_high) if fig.ci_low is not None
                and fig.ci_high is not None and fig.ci_low != fig.ci_high else fmt.MISSING)
    return _number(m, fig.base), _number(m, fig.head), _ratio(fig.ratio), interval


def context_text(fig: Figure) -> str:
    """``first gradient (time tier, geometric mean of 1 pair): 42.5 ms -> 51.1 ms, 1.202×``."""
    base, head, ratio, _ = figure_cells(fig)
    return (f"{metric_label(fig.metric)} ({fig.tier} tier, {fig.statistic}): {base} -> {head}, {ratio}")


@dataclass
class VerdictRow:
    """One case's verdict and the numbers it rests on, formatted once for every output."""

    case: str
    word: str
    label: str
    tier: str
    #: The deciding metric's label and what base and head are.
    metric: str
    statistic: str
    base: str
    head: str
    ratio: str
    interval: str
    context: list[str] = field(default_factory=list)
    reason: str = ""

    @property
    def decided_by(self) -> str:
        """``time: build``, ``instructions: build``, ``structural: autograd primitives``."""
        what = self.metric
        if self.tier == "instructions":
            what = "first gradient" if what == "instructions" else what.removesuffix(" instructions")
        return f"{self.tier}: {what}"


def verdict_rows(cases: list[CaseOutcome]) -> list[VerdictRow]:
    """The rows of a gate's cases, in their order."""
    from .verdicts import verdict_label

    rows = []
    for c in cases:
        fig = c.figure
        label = verdict_label(c.verdict) + (f", accepted by {c.accepted.get('author')}" if c.accepted else "")
        # No metric and no failed sample: nothing decided it, and "failures" would blame what did not happen.
        settled_by = ("the same code" if c.tier == "source" and not c.metric else
                      metric_label(c.metric) if c.metric or any(c.failed.values()) else "nothing settled")
        rows.append(VerdictRow(c.case, c.verdict.verdict, label, c.tier or "time",
                               settled_by, fig.statistic or "" if fig else "",
                               *figure_cells(fig), [context_text(f) for f in c.context], c.verdict.reason or ""))
    return rows


ROW_HEADER = ("verdict", "decided by", "base", "head", "ratio", "interval")
#: The gate's decision by its exit code, as every output words it.
DECISIONS = {0: "no regression shown", 1: "regression", 2: "could not compare"}


def row_cells(r: VerdictRow) -> list[str]:
    return [r.label, r.decided_by, r.base, r.head, r.ratio, r.interval]


def verdict_table(rows: list[VerdictRow], title: str):
    """The verdict rows as one terminal table (the case split into its varying parts, as every table is)."""
    from .terminal import VERDICT_STYLE, case_cells, case_layout, fitted

    varying, fixed = case_layout([r.case for r in rows])
    table = fitted(f"{title}: {fixed}" if fixed else title,
                   [(c, "left") for c in varying] + [(c, "left" if c in ("verdict", "decided by") else "right")
                                                    for c in ROW_HEADER], label=len(varying))
    for r in rows:
        cells = row_cells(r)
        style = VERDICT_STYLE.get(r.word)
        cells[0] = Text(cells[0], style=style) if style else cells[0]
        table.add_row(*case_cells(r.case, varying), *cells)
    return table


def presented_document(outcome: GateOutcome, check=None, exit_code: int | None = None, **fields) -> dict:
    """``gate.json``'s document: the outcome (``gate_document.document``), then ``fields`` (what the gate adds: noise,
    passing_means, footer, environments, ...), then the words for people that ``gate.json`` has always carried.

    The one place presenter-made text enters ``gate.json``: each case's ``verdict.label``
    (:func:`verdicts.verdict_label`) and each attribution's ``headline``
    (``attribution_views.headline``). The outcome itself holds none of them; they are added
    here, at serialisation, so that the file stays byte-identical to what earlier gates wrote.
    """
    from .attribution_views import headline
    from .verdicts import verdict_label

    doc = document(outcome, check, exit_code, **fields)
    for data, case in zip(doc["cases"], outcome.cases):
        data["verdict"]["label"] = verdict_label(case.verdict)
        if case.attribution is not None:
            data["attribution"] = {**data["attribution"], "headline": headline(case.attribution)}
    return doc


#: First line of the gate's summary.md: a PR comment that carries it is the gate's, and is updated in place.
GATE_MARKER = "<!-- ttfg-perf-gate -->"


#: Rows of the verdict table shown above the fold; the rest (all unchanged) go into the details.
VISIBLE_ROWS = 8


def which_counts_decided(step) -> str | None:
    """The count tier's account of its counts (``decide/steadiness.py``): which decided and why each other did not,
    e.g. ``decided: instructions (base and head agree within the margin); evidence only: allocations (its process
    ran a multithreaded runtime ...)``; None for a step without that account (another tier, an older gate.json)."""
    found = [e for e in step.evidence if e.get("steadiness")]
    if not found:
        return None
    label = lambda e: metrics.get(e["metric"]).brief if e["metric"] in metrics.METRICS else e["metric"]  # noqa: E731
    decided = [f"{label(e)} ({e['steadiness']})" for e in found if not e.get("evidence_only")]
    other = [f"{label(e)} ({e['steadiness']})" for e in found if e.get("evidence_only")]
    return "; ".join(filter(None, [f"decided: {', '.join(decided)}" if decided else "",
                                   f"evidence only: {', '.join(other)}" if other else ""]))


def baseline_words(record: dict | None) -> str:
    """A case's baseline in one line for the summary and the terminal."""
    if not record:
        return ""
    status = record.get("status")
    if status == "stored":
        text = f"stored, verified: from {record.get('from')}; {record.get('verified')}"
        if record.get("counted_now"):
            text += f" (counted now: {'; '.join(record['counted_now'])})"
        return text
    kept = f"; kept {record['kept']} count(s) for the next gate" if record.get("kept") else ""
    if status == "counted":
        return f"counted now: {record.get('why')}{kept}"
    if status == "off":
        return f"counted now, the store off ({record.get('why')})"
    return f"{record.get('why') or 'none'}{kept}"


def screen_and_cost(case: CaseOutcome) -> str:
    """What the time tier's screen did (``decide/time_screen.py``) and what the case cost, in one line of the details:
    ``screen of process TTFG, import: short, 2 pairs, not escalated (a pair escalates beyond +10 %); cost: structural
    2 processes 19.6 s, instructions 4 processes 579 s, time 2 processes 15.9 s``."""
    parts = []
    sc = case.screen
    if sc is not None:
        kind = "short" if sc.short else "full"
        limit = f" (a pair escalates beyond +{fmt.percent(sc.threshold)})" if sc.threshold is not None else ""
        state = ("escalated to the full screen" if sc.escalated else "not escalated") if sc.short else sc.why
        parts.append(f"screen of {', '.join(metric_label(m) for m in sc.metrics)}: {kind}, {sc.pairs} pairs, "
                     f"{state}{limit}")
    if case.cost:
        spent = ", ".join(f"{tier} {e.get('processes', 0)} processes {fmt.seconds(e.get('seconds'))}"
                          + (f" (+{e['stored']} stored)" if e.get("stored") else "") for tier, e in case.cost.items())
        parts.append(f"cost: {spent}")
    return "; ".join(parts)


def where_it_went(a, link=None) -> str:
    """One visible line for a regressed case: its largest phase change, then, under it, the Python functions called
    more (the project's five, the frameworks' three, each with its file:line), the model lines whose compiled code
    grew, and the functions of the user's and the framework's code whose own sampled time or instructions grew most
    (without call counts or lines, these stay on the first line); the full attribution is in the details.
    Deterministic counts of the user's own source come first: one sampled process's noise can rank a framework's
    function above the project's. ``link`` (``present/source_links.Linker``): the project's file:line as a link
    to that line of the head commit, where it gives one."""
    from .markdown_table import cell
    from .untrusted import md, md_code

    def place(where: str, code: str = "project") -> str:
        url = link(where) if link is not None and code == "project" else None
        return f"[{md_code(where)}]({url})" if url else md_code(where)

    parts = phase_lines(a, top=1, findings=True)
    if not parts and any(p.delta for p in a.phases):
        parts = [f"no phase change from {MIN_PAIRS} or more pairs or from counts, so none is shown as a finding"]
    measured = [f"{title}: " + ", ".join(" ".join(line.split()) for line in found)
                for title, found in function_lines(a, top=3)[:1]]
    from .attribution_views import CODE_WORDS, count_delta

    # Deterministic Python call counts (one process a side): the project's functions first, with file:line.
    calls = [f"  - Python functions called more in {CODE_WORDS[code]}: "
             + ", ".join(f"{md_code(c.fn)} ({place(c.where, c.code)}) {count_delta(c.delta)}" for c in grown)
             for code, n in (("project", 5), ("framework", 3)) if (grown := a.grown_calls(code, n))]
    from ..decide.source_lines import grown as grown_lines, line_text

    # Compiled code per model line (jaxpr equations, FX nodes, graph breaks with their reason).
    found = grown_lines(a.lines)
    if found:
        calls.append("  - Compiled code that grew, by model line: " + "; ".join(
            line_text(c, md_code, md, where=lambda w, c=c: place(w, c.code)) for c in found))
    if calls:  # the deterministic counts of the user's own source first, the sampled or counted functions after
        calls += [f"  - {cell(md(m))}" for m in measured]
    else:
        parts += measured
    return "\n".join([f"**Where it went**, {md_code(a.case)}: "
                      + cell(md("; ".join(parts)) or "no phase or function data"), *calls])


def gate_footer(outcome: GateOutcome) -> str:
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
    from ..decide import tiers  # their registered order; a tier the registry no longer holds goes last

    order = [t for t in dict.fromkeys((*tiers.names(), *ran)) if t in ran]
    names = [t + (" (callgrind)" if t == "instructions" and counted else
                  " (not counted here)" if t == "instructions" else "") for t in order]
    guard = list(s.guard)
    labels = ", ".join(metrics.get(g).brief for g in guard)
    level = f"alpha {s.alpha:g}" + (f" over all {len(guard)} (Bonferroni)" if len(guard) > 1 else "")
    timed = (f"the time tier guarded {labels} at {level}, minimum effect {fmt.percent(s.min_effect)}" if "time" in order
             else "the head runs the base's program (the source tier), so nothing was counted or timed (one pair ran "
                  "for the counters)" if outcome.cases and all(c.tier == "source" for c in outcome.cases)
             else "the counts decided every case, so no timing was tested (one pair was taken for the counters)")
    pairs = sum(c.attempted for c in outcome.cases)
    return (f"Gate that ran: {' → '.join(names) or 'no tier'}; {timed}; {len(outcome.cases)} case(s), {pairs} "
            f"pair(s) of processes, {fmt.seconds(outcome.elapsed_s)} (time budget {fmt.seconds(s.budget_s)}); "
            f"base {outcome.base.short}, head {outcome.head.short}.") + warm_note(s.data)


def warm_note(settings: dict) -> str:
    """A warm gate's words for the footer (nothing for a cold one): how its caches were populated, which
    cases were measured cold instead, and why."""
    if settings.get("cache") != "warm":
        return ""
    cold = settings.get("measured_cold") or {}
    return (" Warm start: each side's persistent compile caches were populated by one unrecorded process of its "
            "own revision, then every process started from them; their misses were compared exactly."
            + "".join(f" Measured cold: {case}: {why}." for case, why in cold.items()))


def gate_markdown(outcome: GateOutcome, check=None, attributions=None, noise: str | None = None,
                  notes: list[str] | None = None, link=None) -> str:
    """The gate's decision as Markdown for ``$GITHUB_STEP_SUMMARY`` or a PR comment.

    Parameters
    ----------
    outcome : GateOutcome
    check : expect.ExpectationCheck or None
        Appended when the gate checked expectations.
    attributions : list of Attribution or None
        Default: those the gate made for its regressed cases.
    noise : str or None
        The noise floor's sentence, for the details.
    notes : list of str or None
        What a reader must see whatever the verdict (a dependency change not measured), above the fold.
    link : present.source_links.Linker or None
        The project's file:line to a URL of that line at the head commit (``commit-url`` set), else None.

    Returns
    -------
    str
        Starts with :data:`GATE_MARKER` (hidden when rendered), then the verdict table
        (the numbers of the metric that decided each case, :func:`verdict_rows`),
        one sentence on what passing means, a line per regression on where it went, the
        details folded away, and a footer on the gate that ran: at most 15 visible lines
        on a failure with up to a few regressed cases.
    """
    from .attribution_views import attribution_markdown
    from .compare_views import counter_changes
    from .markdown import ORDER, expectations_markdown
    from .markdown_table import cell, table, verdict
    from .untrusted import md, md_code
    from .verdicts import accepted_decision, failures_note, passing_means

    code = outcome.exit_code()
    if check is not None and check.failures() and code == 0:
        code = 1
    decision = DECISIONS[code]
    if outcome.accepted():
        n = len(outcome.accepted())
        decision = f"{accepted_decision(n)}, see below" if code == 0 else \
            f"{decision} ({n} accepted regression(s), see below)"
    s = outcome.settings
    shard = getattr(outcome, "shard", None)
    where = f" (shard {shard.label}, {len(shard.cases)} case(s); `ttfg merge gate` joins the shards)" if shard else ""
    rows = verdict_rows(outcome.cases)
    header = ["case", "verdict", "decided by", "base", "head", "ratio", "interval"]

    failed = {c.case: failures_note(c.failed, c.attempted, c.first_error) for c in outcome.cases}

    def cells(r):
        return [md_code(r.case), verdict(r.word, r.label) + failed.get(r.case, ""), r.decided_by, r.base, r.head,
                r.ratio, r.interval]

    order = sorted(rows, key=lambda r: ORDER.get(r.word, 9))
    visible = order if len(order) <= VISIBLE_ROWS else [r for r in order if r.word != "unchanged"][:VISIBLE_ROWS]
    lines = [GATE_MARKER, f"## ttfg gate{where}: {decision}", ""]
    lines += table(header, [cells(r) for r in visible]) if rows else ["No case was gated."]
    if len(visible) < len(rows):
        lines.append(f"{len(rows) - len(visible)} more case(s) in the details.")
    lines += ["", f"_{passing_means(outcome, check)}_", ""]
    for note in notes or ():  # a blank line after each quote, or the next paragraph joins it (lazy continuation)
        lines += [f"> {note}", ""]
    if attributions is None:
        attributions = [c.attribution for c in outcome.cases if c.attribution is not None]
    regressed = {c.case for c in outcome.cases if c.verdict.verdict == "regressed"}
    for a in [a for a in attributions if a.case in regressed][:3]:
        lines.append(where_it_went(a, link))
    if check is not None and check.failures():
        lines.append(f"**{len(check.failures())} expectation(s) violated** (details below).")
    lines += ["", "<details><summary>Details: each case's numbers and tiers, where changes went, noise</summary>",
              "", f"base {revision_label(outcome.base)} vs head {revision_label(outcome.head)}; gated metric "
              f"`{s.metric}`, paired and interleaved.", ""]
    lines += table(["case", *header[1:], "base and head are", "pairs", "wall", "stopped"],
                    [[*cells(r), md(r.statistic) or fmt.MISSING, f"{c.pairs}/{c.attempted}", fmt.seconds(c.wall_s),
                      md(c.stop)] for r, c in zip(rows, outcome.cases)]) + [""]
    for r, c in zip(rows, outcome.cases):
        lines.append(f"- {md_code(c.case)} ({md(r.label)}, decided by the {md(c.tier)} tier on {md(r.metric)}): "
                     f"{cell(md(c.verdict.reason))}")
        lines += [f"  - context, not decided on: {cell(md(text))}" for text in r.context]
        lines += [f"  - {t.tier} tier: {t.verdict}{' (settled)' if t.settled else ''}: {cell(md(t.reason))}"
                  for t in c.trail if not t.settled]
        lines += [f"  - counts: {cell(md(text))}" for t in c.trail if (text := which_counts_decided(t))]
        if c.screen is not None or c.cost:
            lines.append(f"  - {cell(md(screen_and_cost(c)))}")
        if c.baseline is not None:
            lines.append(f"  - base counts: {cell(md(baseline_words(c.baseline)))}")
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


# ---------------------------------------------------------------------------- which functions a person sees

def _grew(f: FunctionDelta) -> float:
    """What a function's own cost grew by (its self change), else its inclusive change."""
    return f.delta_self if f.delta_self is not None else (f.delta_incl or 0)


def shown_functions(functions: list[FunctionDelta], unit: str, top: int = TOP_FUNCTIONS,
                    internals: bool = False) -> list[FunctionDelta]:
    """The ``top`` functions of one unit whose own cost grew most (a wrapper's inclusive change repeats its
    callee's); the interpreter's and ttfg's measuring code left out unless asked."""
    mine = [f for f in functions if f.unit == unit and _grew(f) > 0
            and (internals or not hidden(f))]
    return sorted(mine, key=lambda f: -_grew(f))[:top]


def _signed(metric_unit: str, v) -> str:
    text = fmt.seconds(v) if metric_unit == "s" else fmt.count(v)
    return f"+{text}" if v is not None and v > 0 else text


def phase_lines(attribution: Attribution, top: int = TOP_PHASES, findings: bool = False) -> list[str]:
    """The ``top`` phases that changed most, one line each, largest first: by counted instructions when the
    phases were counted (deterministic), else by time (paired medians); see ``Attribution.largest_phase``.
    ``findings``: only the changes that may be shown as where it went (``PhaseDelta.finding``), inside the gated
    metric (a build phase's +638 instructions was once "where" a first gradient's +25,000,000 went)."""
    inside = attribution.phases_inside()
    phases = [p for p in attribution.phases if p.delta is not None
              and (not findings or (p.finding and p.phase in inside))]
    if any(p.instructions_delta for p in phases):
        phases.sort(key=lambda p: -abs(p.instructions_delta or 0))
    else:
        phases.sort(key=lambda p: -abs(p.delta))
    out = []
    for p in phases[:top]:
        ratio = fmt.factor(p.ratio) if math.isfinite(p.ratio) else fmt.MISSING
        instr = f", instructions {_signed('count', p.instructions_delta)}" if p.instructions_delta is not None else ""
        out.append(f"{p.phase}: {fmt.seconds(p.base)} -> {fmt.seconds(p.head)} ({_signed('s', p.delta)}, {ratio}){instr}")
    return out


def function_lines(attribution: Attribution, top: int = TOP_FUNCTIONS,
                   internals: bool = False) -> list[tuple[str, list[str]]]:
    """Per unit (instructions, sampled time): a title and the functions whose cost grew most, one line each."""
    from .attribution_views import UNIT_WORDS

    out = []
    functions = attribution.functions
    for unit in dict.fromkeys(f.unit for f in functions):
        shown = shown_functions(functions, unit, top, internals)
        if not shown:
            continue
        bound = {"head only": "≥ ", "base only": "≤ "}
        lines = [f"{bound.get(f.presence, '')}{_signed(unit, _grew(f))}  {f.fn} ({f.where})" for f in shown]
        out.append((f"functions whose own {UNIT_WORDS[unit][0]} grew most"
                    + ("" if internals else ", your and the framework's code"), lines))
    return out


def glue_units(text: str) -> str:
    """A number and its unit joined by a no-break space, so that wrapping never parts them."""
    return re.sub(r"(\d)[ ](%|ms|µs|ns|s|B|KiB|MiB|GiB|×)(?=[\s,;:)\]]|$)", "\\1\u00a0\\2", text)


def wrapped(text: str, width: int, indent: str = "") -> list[str]:
    """``text`` wrapped at ``width`` at spaces, never between a number and its unit, never inside a word."""
    import textwrap

    lines = textwrap.wrap(glue_units(text), width, initial_indent=indent, subsequent_indent=indent + "  ",
                          break_long_words=False, break_on_hyphens=False) or [indent]
    return [line.replace("\u00a0", " ") for line in lines]


def case_lines(case: CaseOutcome, row: VerdictRow, width: int = 80, internals: bool = False) -> list[str]:
    """The ten-second view of one case that did not pass unchanged: verdict and numbers, context, and for a
    regression the top phase changes and functions."""
    if row.statistic:
        lines = wrapped(f"{row.label}: {row.case}: {row.metric} {row.base} -> {row.head}, {row.ratio}"
                        + (f" {row.interval}" if row.interval != fmt.MISSING else "")
                        + f" ({row.tier} tier, {row.statistic})", width)
    else:  # decided by failures, or nothing measured: the reason is the finding
        lines = wrapped(f"{row.label}: {row.case}: {row.reason}", width)
    for text in row.context:
        lines += wrapped(f"context, not decided on: {text}", width, "  ")
    a = case.attribution
    if row.word != "regressed" or not a:
        return lines
    phases = phase_lines(a)
    if phases:
        n = max((p.n or 0 for p in a.phases), default=0)
        how = (f"paired medians of {n} pair{'s' if n != 1 else ''}" if a.paired else
               f"medians, {n} sample{'s' if n != 1 else ''} a side")
        lines.append(f"  largest phase changes ({how}):")
        for text in phases:
            lines += wrapped(text, width, "    ")
    from .attribution_views import calls_lines

    from .attribution_views import source_line_lines

    # The deterministic counts of the user's own source first (as in summary.md), the measured functions after.
    for title, found in calls_lines(a) + source_line_lines(a) + function_lines(a, internals=internals)[:1]:
        lines.append(f"  {title}:")
        for text in found:
            lines += wrapped(text, width, "    ")
    return lines


def gate_table(outcome):
    """Per case: the verdict, the tier and metric that decided it, and that metric's base, head, ratio and interval."""
    rows = verdict_rows(outcome.cases)
    return verdict_table(rows, f"gate verdicts, base {revision_label(outcome.base)} vs head "
                               f"{revision_label(outcome.head)}")


def gate_detail_table(outcome):
    """``--verbose``: per case the pairs, failures, wall time, why sampling stopped and the counters that changed."""
    from .compare_views import counter_changes
    from .terminal import case_cells, case_layout, fitted, titled

    varying, fixed = case_layout([c.case for c in outcome.cases])
    table = fitted(titled("gate, how each case was sampled", fixed),
                   [(c, "left") for c in varying]
                   + [("pairs", "right"), ("failed b/h", "right"), ("wall", "right"), ("stopped", "left"),
                      ("counters changed", "left")], label=len(varying))
    for c in outcome.cases:
        table.add_row(*case_cells(c.case, varying), f"{c.pairs}/{c.attempted}", f"{c.failed['base']}/{c.failed['head']}",
                      fmt.seconds(c.wall_s), c.stop, counter_changes(c.changes))
    return table


__all__ = ["gate_detail_table", "gate_table", "DECISIONS", "GATE_MARKER", "ROW_HEADER", "VISIBLE_ROWS", "VerdictRow", "case_lines", "warm_note",
           "context_text", "environments_note", "figure_cells", "function_lines", "gate_footer", "gate_markdown",
           "presented_document", "revision_label", "verdict_table", "where_it_went",
           "glue_units", "interpreter_internal", "metric_label", "phase_lines", "row_cells", "shown_functions",
           "verdict_rows", "wrapped"]
