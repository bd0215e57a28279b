"""Shards and merges as people read them: the partition table, the merged gate's summary.

Why here: a merged gate is read in a pull request like any gate, so its Markdown
leads with the decision and uses the same formatter (``fmt``) and table helper as
``markdown.gate_markdown``; the difference is that it is rebuilt from the shards'
``gate.json`` documents and says which shard each case ran on, and which shards are
missing or failed.
"""

from __future__ import annotations

from .. import fmt
from .markdown import _table, _verdict
from .tables import Fitted, fitted

__all__ = ["merged_gate_markdown", "partition_table"]


def partition_table(plan, repeat: int) -> Fitted:
    """One row per shard: its cases, and the expected seconds for ``repeat`` rounds of processes."""
    measured = sum(1 for v in plan.sources.values() if v == "measured")
    title = (f"{plan.count} shard(s), partition {plan.digest}; costs: {measured} measured, "
             f"{len(plan.sources) - measured} estimated; expected wall time "
             f"{fmt.seconds(plan.makespan_s * repeat)} for {repeat} process(es) per case "
             f"(one runner: {fmt.seconds(plan.total_s * repeat)})")
    # Fits the terminal without cutting a case id (see tables.Fitted).
    table = fitted(title, (("shard", "left"), ("cases", "right"), ("expected", "right"), ("case ids", "left")),
                   boxed=True)
    for s in plan.shards:
        table.add_row(s.spec.label, str(len(s.cases)), fmt.seconds(s.cost_s * repeat) if s.cases else fmt.MISSING,
                      "\n".join(s.cases) or "(empty)")
    return table


def _noise_headline(shard: dict, metric: str) -> str:
    """What the shard's runner could detect (its gate.json's noise floor): runners differ."""
    from ..results.format import ResultsError
    from ..results.validate import noise_from_json
    from .noise import headline

    try:
        floor = noise_from_json(shard.get("noise"), shard.get("file") or "gate.json")
    except ResultsError as exc:
        return f"noise floor: unreadable ({exc})"
    return headline(floor, metric)


def merged_gate_markdown(merged: dict) -> str:
    """A merged gate document (``ttfg.decide.merge_gate``) as Markdown for ``$GITHUB_STEP_SUMMARY``.

    Like ``markdown.gate_markdown``: the verdict table first (each case's deciding numbers, from
    ``gate_views.verdict_rows``, and its shard), one sentence on passing, the shards that are missing or
    failed, and the rest folded into details.
    """
    from .gate_views import DECISIONS, verdict_rows
    from .markdown import GATE_MARKER

    code = merged["exit_code"]
    decision = DECISIONS[code]
    settings = merged.get("settings") or {}
    metric = settings.get("metric", "first_grad_s")
    base, head = merged.get("base") or {}, merged.get("head") or {}
    shards = merged["shards"]
    present = [s for s in shards if s["status"] != "missing"]
    cases = merged["cases"]
    rows = verdict_rows(cases)
    lines = [GATE_MARKER, f"## ttfg gate, {len(present)} of {merged['count']} shard(s) merged: {decision}", ""]
    lines += _table(["case", "shard", "verdict", "decided by", "base", "head", "ratio", "interval"],
                    [[f"`{r.case}`", c["shard"], _verdict(r.word, r.label), r.decided_by, r.base, r.head, r.ratio,
                      r.interval] for r, c in zip(rows, cases)]) + [""]
    if merged.get("passing_means"):
        lines += [f"_{merged['passing_means']}_", ""]
    problems = [s for s in shards if s["status"] in ("missing", "failed")]
    if problems:
        lines += [f"- **shard {s['shard']} {s['status']}**: {s['detail']}" for s in problems] + [""]
    failed_expectations = [f for s in shards for f in (s.get("expectation_failures") or [])]
    if failed_expectations:
        lines += [f"**{len(failed_expectations)} expectation(s) violated** (details below).", ""]
    lines += ["<details><summary>Details: each case's tiers and reasons, shards, noise</summary>", "",
              f"base `{base.get('rev', '?')}` ({(base.get('commit') or '?')[:10]}) vs head `{head.get('rev', '?')}` "
              f"({(head.get('commit') or '?')[:10]}); gated metric `{metric}`, minimum effect "
              f"{fmt.percent(settings.get('min_effect'))}, alpha {settings.get('alpha', '?')}, each case paired and "
              "interleaved on its shard's runner", ""]
    lines += _table(["case", "base and head are", "pairs", "wall", "stopped"],
                    [[f"`{r.case}`", r.statistic or fmt.MISSING, str(c["pairs"]), fmt.seconds(c.get("wall_s")),
                      c["stop"]] for r, c in zip(rows, cases)]) + [""]
    for r, c in zip(rows, cases):
        lines.append(f"- `{r.case}` (decided by the {r.tier} tier on {r.metric}): {r.reason}")
        lines += [f"  - context, not decided on: {text}" for text in r.context]
    where = [(c["case"], (c.get("attribution") or {}).get("headline")) for c in cases if c.get("attribution")]
    lines += [f"- **Where it went**: {text or case} (tables: `ttfg explain` on the merged gate folder)"
              for case, text in where]
    lines += [f"- skipped `{s['case']}`: {s['reason']}" for s in merged.get("skipped", [])]
    if failed_expectations:
        lines += ["", f"{len(failed_expectations)} expectation(s) violated:"]
        lines += [f"- `{f['case']}` {f['metric']}: {f['status']}" for f in failed_expectations]
    lines += [""] + [f"> {note}" for note in merged.get("notes", [])]
    lines += [f"> shard {s['shard']}: {_noise_headline(s, metric)}" for s in present if s["status"] == "ok"]
    lines += ["", "</details>"]
    return "\n".join(lines).rstrip() + "\n"
