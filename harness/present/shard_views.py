"""Shards and merges as people read them: the partition table, the merged gate's summary.

Why here: a merged gate is read in a pull request like any gate, so its Markdown
leads with the decision and uses the same formatter (``fmt``) and table helper as
``gate_views.gate_markdown``; the difference is that it is rebuilt from the shards'
``gate.json`` documents and says which shard each case ran on, and which shards are
missing or failed.
"""

from __future__ import annotations

from .. import fmt
from .markdown_table import table, verdict
from ..results.gate_document import GateDocument
from .terminal import Fitted, fitted

__all__ = ["merged_gate_markdown", "partition_table"]


def partition_table(plan, repeat: int) -> Fitted:
    """One row per shard: its cases, and the expected seconds for ``repeat`` rounds of processes."""
    measured = sum(1 for v in plan.sources.values() if v == "measured")
    title = (f"{plan.count} shard(s), partition {plan.digest}; costs: {measured} measured, "
             f"{len(plan.sources) - measured} estimated; expected wall time "
             f"{fmt.seconds(plan.makespan_s * repeat)} for {repeat} process(es) per case "
             f"(one runner: {fmt.seconds(plan.total_s * repeat)})")
    # Fits the terminal without cutting a case id (see terminal.Fitted).
    table = fitted(title, (("shard", "left"), ("cases", "right"), ("expected", "right"), ("case ids", "left")),
                   boxed=True)
    for s in plan.shards:
        table.add_row(s.spec.label, str(len(s.cases)), fmt.seconds(s.cost_s * repeat) if s.cases else fmt.MISSING,
                      "\n".join(s.cases) or "(empty)")
    return table


def merged_gate_markdown(doc: GateDocument) -> str:
    """A merged gate (``ttfg.decide.merge_gate``) as Markdown for ``$GITHUB_STEP_SUMMARY``.

    Like ``gate_views.gate_markdown``: the verdict table first (each case's deciding numbers, from
    ``gate_views.verdict_rows``, and its shard), one sentence on passing, the shards that are missing or
    failed, and the rest folded into details. Every text that came from a shard's files (case ids,
    revisions, reasons, errors, notes, paths) is escaped or fenced and clipped (``untrusted``): a
    pull request's code wrote some of it, and this summary is posted as the pull-request comment.
    """
    from .gate_views import DECISIONS, GATE_MARKER, verdict_rows
    from .noise_views import headline
    from .untrusted import md, md_code
    from .verdicts import accepted_decision, failures_note

    outcome, merged = doc.outcome, doc.merged
    cases = outcome.cases if outcome is not None else []
    decision = DECISIONS[doc.exit_code]
    accepted = [c for c in cases if c.verdict.verdict == "regressed" and c.accepted]
    if accepted:
        decision = f"{accepted_decision(len(accepted))}, see below" if doc.exit_code == 0 else \
            f"{decision} ({len(accepted)} accepted regression(s), see below)"
    settings = outcome.settings.data if outcome is not None else {}
    metric = settings.get("metric", "first_grad_s")
    shards = merged.shards
    present = [s for s in shards if s.status != "missing"]
    rows = verdict_rows(cases)
    lines = [GATE_MARKER, f"## ttfg gate, {len(present)} of {merged.count} shard(s) merged: {decision}", ""]
    lines += table(["case", "shard", "verdict", "decided by", "base", "head", "ratio", "interval"],
                   [[md_code(r.case), c.shard, verdict(r.word, md(r.label))
                     + failures_note(c.failed, c.attempted, c.first_error), r.decided_by,
                     r.base, r.head, r.ratio, r.interval] for r, c in zip(rows, cases)]) + [""]
    if doc.passing_means:
        lines += [f"_{md(doc.passing_means, 2000)}_", ""]
    problems = [s for s in shards if s.status in ("missing", "failed")]
    if problems:
        lines += [f"- **shard {s.shard} {s.status}**: {md(s.detail)}" for s in problems] + [""]
    failed_expectations = [f for s in shards for f in s.expectation_failures]
    if failed_expectations:
        lines += [f"**{len(failed_expectations)} expectation(s) violated** (details below).", ""]
    base, head = (outcome.base, outcome.head) if outcome is not None else (None, None)

    def revision(rev) -> str:
        return f"{md_code(rev.name if rev else '?')} ({md((rev.commit if rev else '?')[:10])})"

    lines += ["<details><summary>Details: each case's tiers and reasons, shards, noise</summary>", "",
              f"base {revision(base)} vs head {revision(head)}; gated metric {md_code(metric)}, minimum effect "
              f"{fmt.percent(settings.get('min_effect'))}, alpha {md(settings.get('alpha', '?'))}, each case paired and "
              "interleaved on its shard's runner", ""]
    lines += table(["case", "base and head are", "pairs", "wall", "stopped"],
                   [[md_code(r.case), md(r.statistic) or fmt.MISSING, str(c.pairs), fmt.seconds(c.wall_s),
                     md(c.stop)] for r, c in zip(rows, cases)]) + [""]
    for r, c in zip(rows, cases):
        lines.append(f"- {md_code(r.case)} (decided by the {md(r.tier)} tier on {md(r.metric)}): {md(r.reason)}")
        lines += [f"  - context, not decided on: {md(text)}" for text in r.context]
    lines += [f"- **Where it went**: {md(c.attribution.headline or c.case)} (tables: `ttfg explain` on the merged "
              "gate folder)" for c in cases if c.attribution is not None]
    lines += [f"- skipped {md_code(s.id)}: {md(s.reason)}" for s in (outcome.skipped if outcome is not None else [])]
    if failed_expectations:
        lines += ["", f"{len(failed_expectations)} expectation(s) violated:"]
        lines += [f"- {md_code(f['case'])} {md(f['metric'])}: {md(f['status'])}" for f in failed_expectations]
    lines += [""] + [f"> {md(note)}" for note in merged.notes]
    # What each shard's runner could detect (its gate.json's noise floor): runners differ.
    lines += [f"> shard {s.shard}: {md(headline(s.noise, metric))}" for s in present if s.status == "ok"]
    lines += ["", "</details>"]
    return "\n".join(lines).rstrip() + "\n"
