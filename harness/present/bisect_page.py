"""``ttfg report --bisect FILE``: a bisect drawn as one self-contained HTML page, from its ``bisect.json`` only.

Why a page: the terminal and ``summary.md`` say what a bisect came to; a page also shows
the search as it went -- every tested commit in range order with each comparison's
evidence, and the deciding metric plotted across the range -- so a reader can check the
culprit rather than take it. Nothing is measured: ``bisect.json`` is the bisect's state and
its report, checked field by field on loading (``results/bisect_file.py``).

One wording: the conclusion's lines (culprit, evidence, what moved, skipped commits,
"no step", a range, two steps) are ``bisect_views.conclusion_lines``, the terminal's and
the summary's own, never a second rendering of them.

Commit subjects, authors, reasons and errors come from the repository and the measured
code: each is shown with its control characters as escapes (``untrusted.plain``) and
HTML-escaped; hashes are hexadecimal by then (the loader checks them).
"""

from __future__ import annotations

import html

from .. import fmt
from .bisect_views import HEADINGS, STATE_WORDS, comparison_text, conclusion_lines, deciding_case, path_rows
from .untrusted import plain

_CSS = ("body{font-family:system-ui,sans-serif;margin:1rem;max-width:1200px;line-height:1.4}"
        "table{border-collapse:collapse;font-size:.9rem;display:block;overflow-x:auto}"
        "td,th{border:1px solid #ccc;padding:.25rem .5rem;text-align:left;vertical-align:top}"
        "img{max-width:100%;height:auto}code,pre{font-family:ui-monospace,monospace}"
        "pre{background:#f6f6f6;padding:.5rem;overflow-x:auto;white-space:pre-wrap;word-break:break-all}"
        "ul.evidence{margin:0;padding-left:1rem}.why{color:#555;font-size:.85rem}"
        ".good{color:#070}.bad{color:#b00}.between{color:#b60}.unknown,.skipped{color:#775}"
        ".conclusion li:first-child{font-weight:bold}")


def _h(text) -> str:
    """Untrusted text for the page: control characters as escapes, then HTML-escaped."""
    return html.escape(plain(text))


def _commit(sha: str, commit_url: str | None, text: str | None = None) -> str:
    """A commit's short hash (or ``text``), linked to its page when a URL template is given."""
    from .report import commit_link

    shown = f"<code>{_h(text or sha[:10])}</code>"
    url = commit_link(commit_url, sha)
    return f"<a href='{html.escape(url)}'>{shown}</a>" if url else shown


def comparisons(doc: dict) -> list[dict]:
    """Every comparison the bisect ran: the ends, each step's, the culprit against its parent."""
    found = [doc["ends"]] if doc.get("ends") else []
    found += [e for p in doc.get("probes") or [] for e in p.get("evidence") or []]
    return found + ([doc["culprit_evidence"]] if doc.get("culprit_evidence") else [])


def deciding_metric(doc: dict) -> tuple[str, str] | None:
    """The case and metric the search followed: the ends' deciding ones (else the first comparison's)."""
    for e in comparisons(doc):
        c = deciding_case(e)
        if c is not None and c.get("metric"):
            return c["case"], c["metric"]
    return None


def commit_values(doc: dict, case: str, metric: str) -> dict[str, float]:
    """Each commit's value of ``case``'s ``metric``, from the first comparison that measured it."""
    values: dict[str, float] = {}
    for e in comparisons(doc):
        for c in e.get("cases") or []:
            if c.get("case") == case and c.get("metric") == metric:
                for role in ("base", "head"):
                    if c.get(role) is not None:
                        values.setdefault(e[role], c[role])
    return values


def plot_points(doc: dict) -> tuple[str, list] | None:
    """The deciding metric and one point per tested commit (the ends included), or None with nothing to plot."""
    from .plots import BisectPoint

    chosen = deciding_metric(doc)
    commits = doc["commits"]
    if chosen is None or len(commits) < 2:
        return None
    case, metric = chosen
    values = commit_values(doc, case, metric)
    culprit = (doc.get("culprit") or {}).get("commit") if doc["status"] == "found" else None
    states = {commits[0]: "good end", commits[-1]: "bad end"}
    for p in doc.get("probes") or []:
        states[p["commit"]] = p["state"]  # a commit tried again: its latest state
    if culprit is not None and culprit not in states:
        states[culprit] = "bad"
    index = {c: i for i, c in enumerate(commits)}
    points = [BisectPoint(index[c], c[:7], values.get(c), state, c == culprit)
              for c, state in states.items() if c in index]
    return metric, points


def _plot(doc: dict) -> str:
    found = plot_points(doc)
    if found is None:
        return "<p>Nothing to plot: no comparison measured a metric.</p>"
    from .plots import bisect_plot

    metric, points = found
    image = bisect_plot(points, len(doc["commits"]), "".join(ch for ch in metric if ch.isprintable()),
                        fmt.metric_unit(metric), "each tested commit in range order")
    return (f"<img alt='{_h(metric)} of each tested commit across the range' src='{image}'>"
            f"<p class='why'>{_h(metric)}: each value from the first comparison that measured the commit (counts are "
            "the same in every process; timings are one comparison's and vary between them). A cross on the "
            "bottom edge: a commit tested without this metric (skipped, or settled by another tier).</p>")


def _evidence(e: dict) -> str:
    """One comparison: the terminal's line, then why its verdict (the gate's reason: a count's margin)."""
    line = f"<li>{_h(comparison_text(e))}"
    c = deciding_case(e)
    if c is not None and (c.get("base") is not None or c.get("head") is not None):
        unit = fmt.metric_unit(c.get("metric") or "")
        line += (f" <span class='why'>{_h(c.get('metric') or '')}: {_h(fmt.value(c.get('base'), unit))} → "
                 f"{_h(fmt.value(c.get('head'), unit))}</span>")
    if c is not None and c.get("reason"):
        line += f"<br><span class='why'>{_h(c['reason'])}</span>"
    return line + "</li>"


def _path(doc: dict, commit_url: str | None) -> str:
    """The search path: the ends' comparison, then every step in the order it ran."""
    rows = path_rows(doc)
    records = ([("", doc["ends"])] if doc.get("ends") else []) + [(p, None) for p in doc.get("probes") or []]
    out = ["<table><tr><th>step</th><th>commit</th><th>found</th><th>evidence (each comparison)</th></tr>"]
    for (step, shown, found, _), (probe, ends) in zip(rows, records):
        if ends is not None:
            commit = (f"{_commit(doc['good']['commit'], commit_url)}..{_commit(doc['bad']['commit'], commit_url)}")
            evidence, state = [ends], ""
        else:
            commit, evidence, state = _commit(probe["commit"], commit_url), probe.get("evidence") or [], probe["state"]
        items = "".join(_evidence(e) for e in evidence)
        reason = f"<br><span class='why'>{_h(probe['reason'])}</span>" if probe and probe.get("reason") else ""
        out.append(f"<tr><td>{_h(step)}</td><td>{commit}</td><td class='{state}'>{_h(found)}{reason}</td>"
                   f"<td><ul class='evidence'>{items}</ul></td></tr>")
    return "".join(out) + "</table>"


def _culprit(doc: dict, commit_url: str | None) -> str:
    """The culprit's identity and its effect against its parent, case by case."""
    c = doc["culprit"]
    parts = ["<h2>The culprit</h2><table>",
             f"<tr><th>commit</th><td>{_commit(c['commit'], commit_url, c['commit'])}</td></tr>",
             f"<tr><th>subject</th><td>{_h(c['subject'])}</td></tr>",
             f"<tr><th>author</th><td>{_h(c['author'])}</td></tr>",
             f"<tr><th>date</th><td>{_h(c['date'])}</td></tr>"]
    if c.get("parent"):
        parts.append(f"<tr><th>parent</th><td>{_commit(c['parent'], commit_url)}</td></tr>")
    parts.append("</table>")
    evidence = doc.get("culprit_evidence")
    if evidence and evidence.get("cases"):
        parts.append("<h3>Its effect, against its parent</h3><table><tr><th>case</th><th>verdict</th><th>tier</th>"
                     "<th>metric</th><th>parent</th><th>culprit</th><th>ratio [interval]</th><th>pairs</th>"
                     "<th>why (a count's margin)</th></tr>")
        for r in evidence["cases"]:
            unit = fmt.metric_unit(r.get("metric") or "")
            interval = fmt.interval(r.get("ci_low"), r.get("ci_high"))
            ratio = fmt.factor(r.get("ratio")) + (f" {interval}" if interval != fmt.MISSING else "")
            cells = (r["case"], r["verdict"], r.get("tier") or "", r.get("metric") or "",
                     fmt.value(r.get("base"), unit), fmt.value(r.get("head"), unit), ratio, str(r.get("pairs") or 0),
                     r.get("reason") or "")
            parts.append("<tr>" + "".join(f"<td>{_h(x)}</td>" for x in cells) + "</tr>")
        parts.append("</table>")
    return "".join(parts)


def _skipped(doc: dict, commit_url: str | None) -> str:
    """The commits set aside: untestable (skipped, as git bisect skip) and not decided within their budget."""
    rows = [p for p in doc.get("probes") or [] if p["state"] in ("skipped", "unknown")]
    if not rows:
        return ""
    out = ["<h2>Commits set aside</h2><table><tr><th>commit</th><th>found</th><th>tries</th><th>why</th></tr>"]
    for p in rows:
        why = p.get("reason") or next((e.get("error") for e in p.get("evidence") or [] if e.get("error")), "") or ""
        out.append(f"<tr><td>{_commit(p['commit'], commit_url)}</td><td>{_h(STATE_WORDS[p['state']])}</td>"
                   f"<td>{p.get('attempts') or 1}</td><td>{_h(why)}</td></tr>")
    return "".join(out) + "</table>"


def _settings(doc: dict) -> str:
    s = doc.get("settings") or {}
    total = s.get("total_budget_s")
    lines = [f"cases: {', '.join(doc.get('cases') or []) or fmt.MISSING}",
             f"tiers in order: {', '.join(s.get('tiers') or []) or fmt.MISSING}",
             f"budget per comparison: {fmt.seconds(s.get('budget_s'))}; for the whole search: "
             + (fmt.seconds(total) if total is not None else "none"),
             f"retries of a commit not yet known: {s.get('retries', fmt.MISSING)}"]
    lines += [f"case not run: {x['case']}: {x.get('reason') or ''}" for x in doc.get("skipped_cases") or []]
    return "<h2>Settings</h2><ul>" + "".join(f"<li>{_h(x)}</li>" for x in lines) + "</ul>"


def bisect_page(doc: dict, commit_url: str | None = None) -> str:
    """A self-contained HTML page (the plot embedded, no scripts) of a checked ``bisect.json`` document.

    ``commit_url``: a commit page's URL template (``{sha}``), or None for plain hashes.
    """
    good, bad = doc["good"], doc["bad"]
    head = HEADINGS.get(doc["status"], doc["status"])
    direction = " (searching for the commit that made it faster)" if doc.get("improvement") else ""
    parts = ["<!doctype html><html lang='en'><head><meta charset='utf-8'>"
             "<meta name='viewport' content='width=device-width, initial-scale=1'>"
             f"<title>ttfg bisect: {_h(head)}</title><style>{_CSS}</style></head><body>",
             f"<h1>ttfg bisect: {_h(head)}</h1>",
             f"<p>Between {_commit(good['commit'], commit_url)} (good, {_h(good['subject'])}) and "
             f"{_commit(bad['commit'], commit_url)} (bad, {_h(bad['subject'])}), first-parent{direction}: "
             f"{fmt.plural(len(doc['commits']) - 1, 'commit')}, {fmt.plural(len(doc.get('probes') or []), 'step')}."
             "</p>",
             "<h2>Conclusion</h2><ul class='conclusion'>"
             + "".join(f"<li>{_h(line)}</li>" for line in conclusion_lines(doc)) + "</ul>"]
    if doc["status"] == "found" and doc.get("culprit"):
        parts.append(_culprit(doc, commit_url))
    if doc.get("repro"):
        parts.append(f"<h2>Reproduce</h2><pre><code>{_h(doc['repro'])}</code></pre>")
    parts.append(f"<h2>The deciding metric across the range</h2>{_plot(doc)}")
    parts.append(f"<h2>Search path</h2>{_path(doc, commit_url)}")
    parts.append(_skipped(doc, commit_url))
    parts.append(_settings(doc))
    parts.append("</body></html>\n")
    return "".join(parts)


__all__ = ["bisect_page", "commit_values", "comparisons", "deciding_metric", "plot_points"]
