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
code: each is shown with its control characters as escapes (``untrusted.plain``), and the
template (``templates/bisect.html.j2``, through ``pages.render``) HTML-escapes every value;
hashes are hexadecimal by then (the loader checks them).
"""

from __future__ import annotations

from .. import fmt
from .bisect_views import (HEADINGS, STATE_WORDS, comparison_text, conclusion_lines, deciding_case, path_rows,
                           turn_probes)
from .untrusted import plain

#: The page's template (``templates/``, rendered by ``pages.render``: every value escaped).
TEMPLATE = "bisect.html.j2"


def _commit(sha: str, commit_url: str | None, text: str | None = None) -> dict:
    """A commit as the page shows it: its short hash (or ``text``), and its page when a URL template is given."""
    from .report import commit_link

    return {"text": plain(text or sha[:10]), "url": commit_link(commit_url, sha)}


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
    culprit = (doc.get("culprit") or {}).get("commit") if doc["status"] in ("found", "turn") else None
    states = {commits[0]: "good end", commits[-1]: "bad end"}
    for p in turn_probes(doc):
        states[p["commit"]] = p["state"]  # a commit tried again: its latest state
    if culprit is not None and culprit not in states:
        states[culprit] = "bad"
    index = {c: i for i, c in enumerate(commits)}
    points = [BisectPoint(index[c], c[:7], values.get(c), state, c == culprit)
              for c, state in states.items() if c in index]
    return metric, points


def _plot(doc: dict) -> dict | None:
    """The deciding metric's plot: its name and the image (a data URI), or None with nothing to plot."""
    found = plot_points(doc)
    if found is None:
        return None
    from .plots import bisect_plot

    metric, points = found
    image = bisect_plot(points, len(doc["commits"]), "".join(ch for ch in metric if ch.isprintable()),
                        fmt.metric_unit(metric), "each tested commit in range order")
    return {"metric": plain(metric), "image": image}


def _evidence(e: dict) -> dict:
    """One comparison: the terminal's line, the deciding metric's two values, and why its verdict (the gate's
    reason: a count's margin)."""
    c = deciding_case(e)
    moved = None
    if c is not None and (c.get("base") is not None or c.get("head") is not None):
        unit = fmt.metric_unit(c.get("metric") or "")
        moved = f"{c.get('metric') or ''}: {fmt.value(c.get('base'), unit)} → {fmt.value(c.get('head'), unit)}"
    return {"text": plain(comparison_text(e)), "moved": plain(moved) if moved else None,
            "reason": plain(c["reason"]) if c is not None and c.get("reason") else None}


def _path(doc: dict, commit_url: str | None) -> list[dict]:
    """The search path: the ends' comparison, then every step in the order it ran."""
    rows = path_rows(doc)
    records = ([("", doc["ends"])] if doc.get("ends") else []) + [(p, None) for p in turn_probes(doc)]
    out = []
    for (step, shown, found, _), (probe, ends) in zip(rows, records):
        if ends is not None:
            commits = [_commit(doc["good"]["commit"], commit_url), _commit(doc["bad"]["commit"], commit_url)]
            evidence, state = [ends], ""
        else:
            commits, evidence = [_commit(probe["commit"], commit_url)], probe.get("evidence") or []
            state = probe["state"]
        out.append({"step": plain(step), "commits": commits, "state": state, "found": plain(found),
                    "reason": plain(probe["reason"]) if probe and probe.get("reason") else None,
                    "evidence": [_evidence(e) for e in evidence]})
    return out


def _culprit(doc: dict, commit_url: str | None) -> dict | None:
    """The culprit's identity and its effect against its parent, case by case (None unless one was found)."""
    c = doc.get("culprit")
    if doc["status"] not in ("found", "turn") or not c:
        return None
    rows = []
    evidence = doc.get("culprit_evidence")
    for r in (evidence.get("cases") or []) if evidence else []:
        unit = fmt.metric_unit(r.get("metric") or "")
        interval = fmt.interval(r.get("ci_low"), r.get("ci_high"))
        ratio = fmt.factor(r.get("ratio")) + (f" {interval}" if interval != fmt.MISSING else "")
        rows.append([plain(x) for x in (r["case"], r["verdict"], r.get("tier") or "", r.get("metric") or "",
                                        fmt.value(r.get("base"), unit), fmt.value(r.get("head"), unit), ratio,
                                        str(r.get("pairs") or 0), r.get("reason") or "")])
    return {"commit": _commit(c["commit"], commit_url, c["commit"]), "subject": plain(c["subject"]),
            "author": plain(c["author"]), "date": plain(c["date"]),
            "parent": _commit(c["parent"], commit_url) if c.get("parent") else None, "effect": rows}


def _skipped(doc: dict, commit_url: str | None) -> list[dict]:
    """The commits set aside: untestable (skipped, as git bisect skip) and not decided within their budget."""
    out = []
    for p in doc.get("probes") or []:
        if p["state"] in ("skipped", "unknown"):
            why = p.get("reason") or next((e.get("error") for e in p.get("evidence") or [] if e.get("error")), "") or ""
            out.append({"commit": _commit(p["commit"], commit_url), "found": plain(STATE_WORDS[p["state"]]),
                        "tries": p.get("attempts") or 1, "why": plain(why)})
    return out


def _settings(doc: dict) -> list[str]:
    s = doc.get("settings") or {}
    total = s.get("total_budget_s")
    lines = [f"cases: {', '.join(doc.get('cases') or []) or fmt.MISSING}",
             f"tiers in order: {', '.join(s.get('tiers') or []) or fmt.MISSING}",
             f"budget per comparison: {fmt.seconds(s.get('budget_s'))}; for the whole search: "
             + (fmt.seconds(total) if total is not None else "none"),
             f"retries of a commit not yet known: {s.get('retries', fmt.MISSING)}"]
    lines += [f"case not run: {x['case']}: {x.get('reason') or ''}" for x in doc.get("skipped_cases") or []]
    return [plain(x) for x in lines]


def bisect_page(doc: dict, commit_url: str | None = None) -> str:
    """A self-contained HTML page (the plot embedded, no scripts) of a checked ``bisect.json`` document.

    ``commit_url``: a commit page's URL template (``{sha}``), or None for plain hashes.
    """
    from .pages import render

    good, bad = doc["good"], doc["bad"]
    direction = " (searching for the commit that made it faster)" if doc.get("improvement") else ""
    return render(TEMPLATE, heading=plain(HEADINGS.get(doc["status"], doc["status"])),
                  good=_commit(good["commit"], commit_url), good_subject=plain(good["subject"]),
                  bad=_commit(bad["commit"], commit_url), bad_subject=plain(bad["subject"]),
                  span=f"first-parent{direction}: {fmt.plural(len(doc['commits']) - 1, 'commit')}, "
                       f"{fmt.plural(len(doc.get('probes') or []), 'step')}.",
                  conclusion=[plain(line) for line in conclusion_lines(doc)], culprit=_culprit(doc, commit_url),
                  repro=plain(doc["repro"]) if doc.get("repro") else None, plot=_plot(doc),
                  path=_path(doc, commit_url), skipped=_skipped(doc, commit_url), settings=_settings(doc))


__all__ = ["bisect_page", "commit_values", "comparisons", "deciding_metric", "plot_points"]
