"""Markdown summaries for pull-request comments and ``$GITHUB_STEP_SUMMARY``.

Why separate from the terminal tables: a PR comment is read by someone who did not
run anything, so it leads with the decision, shows what changed, and folds the
unchanged rows away (``<details>``) instead of listing dozens of identical counters.
"""

from __future__ import annotations

from .. import fmt
from .compare_views import row_change, row_values
from .markdown_table import table, verdict
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
