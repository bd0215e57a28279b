"""``ttfg report --bisect FILE``: a bisect's page, drawn from its ``bisect.json`` alone, and hostile documents.

The documents are real: ``app/bisect.py`` runs over a git history of empty commits with a
fake comparison (``test_bisect_search.Levels``, here also giving each side's value of the
metric, as a gate's case record does), so the page reads what a bisect writes. Hostile
ones are those documents edited: cut short, a field of the wrong type, a hash that is
markup, subjects and authors with HTML and terminal escapes.
"""

from __future__ import annotations

import json

import pytest
from markupsafe import escape  # the page's own escaping (its jinja2 environment's): &#34; where html.escape has &quot;

from ttfg.app import bisect as use_case
from ttfg.present.bisect_page import bisect_page, plot_points
from ttfg.present.bisect_views import conclusion_lines
from ttfg.results.bisect_file import STATUSES, load_bisect
from ttfg.results.format import ResultsError

from .conftest import run_ttfg
from .test_bisect_search import CASE, Levels, repo, request  # noqa: F401 (repo: the fixture, shared)


class Valued(Levels):
    """The fake comparison, with each side's value of the metric in its case record (a count: 1000 per level)."""

    def __call__(self, older, newer, against, folder, cases, step_cases, profiles=False, tiers=None):
        record = super().__call__(older, newer, against, folder, cases, step_cases, profiles, tiers)
        for c in record["cases"]:
            c["base"], c["head"] = 1000.0 * (1 + self.level[older.commit]), 1000.0 * (1 + self.level[newer.commit])
            c["reason"] = f"counters.x {c['ratio']:.2f}x (margin ±1 %)"
        if profiles:  # the culprit against its parent: the gate's attribution
            record["attribution"] = [{"case": CASE, "metric": "first_grad_s",
                                      "phase": {"phase": "trace", "delta_s": 0.25, "ratio": 1.5},
                                      "counters": [{"metric": "counters.x", "base": 1000.0, "head": 2000.0}],
                                      "calls": [{"fn": "_scale_step", "file": "mylab/ops.py", "line": 4, "base": 0,
                                                 "head": 20_000, "code": "project"}],
                                      "lines": [{"kind": "jaxpr_eqns", "file": "mylab/layers.py", "line": 42,
                                                 "fn": "block", "base": 30, "head": 42, "code": "project",
                                                 "reason": None}],
                                      "functions": [{"fn": "<b>scale</b>", "file": "ops.py", "line": 7, "delta": 0.2,
                                                     "unit": "s", "presence": "both"}]}]
        return record


def _bisect(repo, out_dir, levels, asked=None, **kw) -> dict:
    root, shas = repo
    use_case.run(request(root, shas, out_dir, **(asked or {})), compare=Valued(shas, levels, **kw))
    return load_bisect(out_dir / "bisect.json")


def test_the_page_shows_the_search_the_culprit_and_the_repro_from_the_document_alone(repo, tmp_path):
    root, shas = repo
    doc = _bisect(repo, tmp_path / "b", [0] * 5 + [1] * 4, broken=[4])
    assert doc["status"] == "range"  # the skipped commit 4 hides whether 4 or 5 is the culprit
    doc = _bisect(repo, tmp_path / "f", [0] * 6 + [1] * 3)
    assert doc["status"] == "found"
    page = bisect_page(doc)
    for line in conclusion_lines(doc):  # the terminal's wording, escaped, not a second one
        assert escape(line) in page
    assert doc["culprit"]["commit"] in page and "commit 6" in page and "mylab" in page
    assert escape(doc["repro"]) in page
    for p in doc["probes"]:
        assert p["commit"][:10] in page
    assert "same as good" in page and "same as bad" in page
    assert "margin ±1 %" in page  # a count's margin, from the comparison's reason
    assert "phase that moved most: trace" in page and "function grew in its own time: &lt;b&gt;scale" in page
    assert "data:image/png;base64," in page and "<script" not in page
    metric, points = plot_points(doc)
    assert metric == "counters.x"
    assert [p.state for p in sorted(points, key=lambda p: p.x)][0] == "good end"
    assert [p.x for p in points if p.culprit] == [6]
    assert all(p.value is not None for p in points)  # every tested commit has its value


def test_every_ending_says_what_the_terminal_says(repo, tmp_path):
    for name, levels, kw, status in (("same", [0] * 9, {}, "no step"),
                                     ("range", [0] * 5 + [1] * 4, {"broken": [4]}, "range"),
                                     ("two", [0, 0, 1, 1, 1, 1, 5, 5, 5], {}, "found"),
                                     ("undecided", [0] * 5 + [1] * 4, {"unknown": [4]}, "undecided"),
                                     ("stopped", [0] * 5 + [1] * 4, {"asked": {"total_budget_s": 0}}, "stopped"),
                                     ("swapped", [1] * 5 + [0] * 4, {}, "swapped")):
        doc = _bisect(repo, tmp_path / name, levels, **kw)
        assert doc["status"] == status
        page = bisect_page(doc)
        for line in conclusion_lines(doc):
            assert escape(line) in page, (name, line)
    assert "no step between these commits" in bisect_page(_bisect(repo, tmp_path / "same", [0] * 9))
    two = bisect_page(_bisect(repo, tmp_path / "two", [0, 0, 1, 1, 1, 1, 5, 5, 5]))
    assert "another step between" in two and "ttfg bisect --good" in two
    ranged = bisect_page(_bisect(repo, tmp_path / "range", [0] * 5 + [1] * 4, broken=[4]))
    assert "Commits set aside" in ranged and "cannot import mylab" in ranged


def test_untrusted_text_is_escaped_on_the_page_and_in_the_terminal_words(repo, tmp_path):
    doc = _bisect(repo, tmp_path / "f", [0] * 6 + [1] * 3)
    doc["culprit"]["subject"] = "fix <script>alert(1)</script> \x1b]0;owned\x07"
    doc["culprit"]["author"] = "<img src=x onerror=alert(1)> \x1b[2J"
    doc["probes"][0]["evidence"][0]["cases"][0]["reason"] = "</td><script>x()</script>"
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(doc))
    out = run_ttfg("report", "--bisect", str(path), "--out", str(tmp_path / "page.html"))
    assert out.returncode == 0, out.stderr
    page = (tmp_path / "page.html").read_text()
    assert "<script" not in page and "<img src=x" not in page and "\x1b" not in page and "\x07" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "\\x1b]0;owned" in page


@pytest.mark.parametrize("edit, field", [
    (lambda d: d["probes"][0].pop("state"), "probes[0].state: missing"),
    (lambda d: d["probes"][0].update(state="maybe"), "probes[0].state: expected one of"),
    (lambda d: d["probes"][0]["evidence"][0].update(cases="x"), "probes[0].evidence[0].cases: expected a list"),
    (lambda d: d["commits"].__setitem__(1, "<script>"), "commits[1]: expected a commit hash"),
    (lambda d: d["culprit"].update(subject=None), "culprit.subject: expected text"),
    (lambda d: d.pop("culprit"), "culprit: missing"),
    (lambda d: d.update(status="done"), "status: expected one of"),
    (lambda d: d.update(exit_code="1"), "exit_code"),
    (lambda d: d["ends"]["cases"][0].update(ratio="fast"), "ends.cases[0].ratio: expected a number"),
    (lambda d: d.update(format="ttfg-releases"), "not a ttfg bisect"),
    (lambda d: d.update(version=2), "version 2"),
    (lambda d: d["culprit_evidence"]["attribution"][0]["calls"][0].update(head=-1),
     "culprit_evidence.attribution[0].calls[0].head: expected"),
    (lambda d: d["culprit_evidence"]["attribution"][0]["calls"][0].pop("fn"),
     "culprit_evidence.attribution[0].calls[0].fn: missing"),
    (lambda d: d["culprit_evidence"]["attribution"][0]["lines"][0].update(kind="hlo_ops"),
     "culprit_evidence.attribution[0].lines[0].kind: expected one of"),
])
def test_a_hostile_or_partial_document_is_refused_naming_the_file_and_field(repo, tmp_path, edit, field):
    doc = _bisect(repo, tmp_path / "f", [0] * 6 + [1] * 3)
    path = tmp_path / "edited.json"
    edit(doc)
    path.write_text(json.dumps(doc))
    with pytest.raises(ResultsError, match=field.replace("[", r"\[").replace("]", r"\]")) as caught:
        load_bisect(path)
    assert str(path) in str(caught.value)


def test_the_command_refuses_a_corrupt_file_its_own_input_as_out_and_options_of_other_pages(repo, tmp_path):
    doc = _bisect(repo, tmp_path / "f", [0] * 6 + [1] * 3)
    state = tmp_path / "f" / "bisect.json"
    before = state.read_bytes()
    out = run_ttfg("report", "--bisect", str(state), "--out", str(state))
    assert out.returncode == 2 and "also an input" in out.stderr and state.read_bytes() == before
    out = run_ttfg("report", "--bisect", str(state), "--releases", str(state), "--last", "3",
                   "--out", str(tmp_path / "p.html"))
    assert out.returncode == 2 and "--releases, --last" in out.stderr and not (tmp_path / "p.html").exists()
    cut = tmp_path / "cut.json"
    cut.write_text(json.dumps(doc)[:500])  # a disk that filled up mid-write
    out = run_ttfg("report", "--bisect", str(cut), "--out", str(tmp_path / "p.html"))
    assert out.returncode == 2 and str(cut) in out.stderr and "not valid JSON" in out.stderr
    assert "Traceback" not in out.stderr and not (tmp_path / "p.html").exists()


def test_the_reader_knows_every_status_the_bisect_writes():
    assert set(STATUSES) == set(use_case.EXIT)


def test_a_counted_phase_is_named_by_its_count_not_by_the_profiled_times():
    """A culprit decided by the trace's instruction count names the trace, with its count, as the phase that
    moved (the few profiled processes' times are said beside it, not ranked on)."""
    from ttfg.present.bisect_views import attribution_lines

    evidence = {"attribution": [{"case": "c", "metric": "instructions_trace", "counters": [], "functions": [],
                                 "phase": {"phase": "trace", "delta_s": 0.0004, "ratio": 1.03,
                                           "instructions_delta": 10_050_814}}]}
    assert attribution_lines(evidence)[0] == ("phase that moved most: trace +10,050,814 instructions (its time "
                                              "+400 µs, from the few profiled processes)")
    evidence["attribution"][0]["phase"]["instructions_delta"] = None
    assert attribution_lines(evidence)[0] == "phase that moved most: trace +400 µs (1.030×)"


def test_the_culprits_lines_name_the_projects_function_and_model_line_first_and_no_interpreter_internal(repo, tmp_path):
    """The culprit's attribution (what ``app/bisect.py`` keeps of the confirming gate's): the phase, then the
    project's Python function called more with its file:line, then the model line, before counters and any native
    function; CPython's dispatch (once "function grew in its own time: _PyFunction_Vectorcall") is not kept."""
    from types import SimpleNamespace

    from ttfg.results.attribution_record import Attribution, CallDelta, FunctionDelta, LineDelta

    def fn(name, file, delta):
        return FunctionDelta(name, file, 1, 1e6, 1e6 + delta, 1e5, 1e5 + delta, delta, delta)

    a = Attribution(CASE, "first_grad_s", False, None, functions=[
        fn("_PyFunction_Vectorcall", "Include/internal/pycore_pystate.h", 500_000_000),
        fn("PyObject_Call", "Objects/call.c", 400_000_000), fn("long_add", "Objects/longobject.c", 300_000_000),
        fn("user_work", "mylab/native.c", 1_000)],
        calls=[CallDelta("vspace", "autograd/core.py", 288, 10, 1_010),
               CallDelta("_scale_step", "mylab/ops.py", 4, 0, 20_000, "project")],
        lines=[LineDelta("jaxpr_eqns", "mylab/layers.py", 42, "block", 30, 42, "project")])
    (kept,) = use_case._attribution(SimpleNamespace(attributions={CASE: a}), None)
    assert [f["fn"] for f in kept["functions"]] == ["user_work"]
    from ttfg.present.bisect_views import attribution_lines

    assert attribution_lines({"attribution": [kept]}) == [
        "Python functions called more in your code: _scale_step (mylab/ops.py:4) +20,000",
        "compiled code that grew, by model line: +12 jaxpr equations at mylab/layers.py:42 (block)",
        "Python functions called more in the frameworks' code: vspace (autograd/core.py:288) +1,000",
        "function grew in its own time: user_work +1,000 instructions (mylab/native.c:1)"]
    doc = _bisect(repo, tmp_path / "f", [0] * 6 + [1] * 3)  # what a bisect writes reads back and is shown
    shown = conclusion_lines(doc)
    culprit = next(i for i, line in enumerate(shown) if line.startswith("culprit: "))
    assert shown[culprit + 3] == "Python functions called more in your code: _scale_step (mylab/ops.py:4) +20,000"
    assert shown[culprit + 4] == ("compiled code that grew, by model line: +12 jaxpr equations at mylab/layers.py:42 "
                                  "(block)")
