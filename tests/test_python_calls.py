"""Python call counts per function, base against head: the project's functions named first, with file:line.

In-process: the gate runs with the fake sampler of test_gate_policy.py, whose calls processes say head calls the
project's ``_scale_step`` (``mylab/ops.py:4``) 20,000 times and a framework's ``vspace`` 1,000 times more; the
diff, gate.json (written and read back through its strict reader) and summary.md must all name them, in that order.
One real gate (slow) does the same with real processes on a user's project.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from ttfg.decide import python_calls
from ttfg.present.gate_views import gate_markdown
from ttfg.results import gate_file
from ttfg.results.attribution_record import Attribution
from ttfg.results.format import ResultsError
from ttfg.results.gate_document import document

from tests.conftest import GitRepo
from tests.test_gate_policy import calls_sample, gate_with, noisy, sides  # noqa: F401  (fixtures)


def test_a_file_is_the_projects_under_its_install_and_a_frameworks_inside_site_packages_or_the_stdlib():
    assert python_calls.locate("/installs/head/mylab/ops.py", ["/installs/head"]) == ("project", "mylab/ops.py")
    assert python_calls.locate("/envs/x/lib/python3.11/site-packages/autograd/core.py", ["/installs/head"]) \
        == ("framework", "autograd/core.py")
    assert python_calls.locate("/usr/lib/python3.11/functools.py", []) == ("framework", "functools.py")
    assert python_calls.roots(SimpleNamespace(installed=SimpleNamespace(root=Path("/installs/base")))) \
        == ["/installs/base"]
    assert python_calls.roots(SimpleNamespace(installed=None)) == []


def test_the_diff_matches_functions_across_two_install_folders_and_lists_the_projects_first():
    base, head = calls_sample("base", 0).calls_top, calls_sample("head", 0).calls_top
    out = python_calls.diff(base, head, ["/installs/base"], ["/installs/head"])
    assert [(c.code, c.fn, c.where, c.base, c.head) for c in out] == [
        ("project", "_scale_step", "mylab/ops.py:4", 0, 20_000),
        ("framework", "vspace", "autograd/core.py:288", 4780, 5780)]
    # scale moved from line 4 to 9 and is called once on both sides: matched by name and file, not a change.
    assert not any(c.fn == "scale" for c in out)
    # Without the install folders nothing is the project's, and nothing is lost either.
    assert {c.code for c in python_calls.diff(base, head, [], [])} == {"framework"}


def test_two_functions_of_one_name_in_one_file_are_kept_apart_by_their_line():
    base = [{"fn": "<lambda>", "file": "/i/b/m.py", "line": 3, "incl": 5, "self": 5},
            {"fn": "<lambda>", "file": "/i/b/m.py", "line": 7, "incl": 2, "self": 2}]
    head = [{"fn": "<lambda>", "file": "/i/h/m.py", "line": 3, "incl": 5, "self": 5},
            {"fn": "<lambda>", "file": "/i/h/m.py", "line": 7, "incl": 9, "self": 9}]
    (only,) = python_calls.diff(base, head, ["/i/b"], ["/i/h"])
    assert (only.where, only.delta) == ("m.py:7", 7)


def test_a_regressed_gate_counts_calls_once_a_side_and_summary_md_names_the_projects_function_first(
        gate_with, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.setattr(python_calls, "roots", lambda side: [f"/installs/{side.role}"])
    outcome, fake = gate_with(noisy(1.0), noisy(1.2, shift=3), profiles=1)
    (case,) = outcome.cases
    assert case.verdict.verdict == "regressed"
    assert sorted(fake.counted) == [(case.case, "base", 0), (case.case, "head", 0)]
    a = outcome.attributions[case.case]
    assert [(c.fn, c.where, c.delta) for c in a.grown_calls("project")] == [("_scale_step", "mylab/ops.py:4", 20_000)]
    assert "one process a side" in a.calls_note
    text = gate_markdown(outcome)
    where = text.splitlines().index(next(ln for ln in text.splitlines() if ln.startswith("**Where it went**")))
    project, framework = text.splitlines()[where + 1: where + 3]
    assert project == ("  - Python functions called more in your code: `_scale_step` (`mylab/ops.py:4`) +20,000")
    assert framework.startswith("  - Python functions called more in the frameworks' code: `vspace` "
                                "(`autograd/core.py:288`) +1,000")
    # gate.json keeps the diff, and its one reader gives it back as the same records.
    (tmp_path / "g").mkdir()
    path = tmp_path / "g" / "gate.json"
    path.write_text(gate_file.dumps(document(outcome)))
    back = gate_file.load(path).outcome.attributions[case.case]
    assert [(c.code, c.fn, c.where, c.base, c.head) for c in back.calls] == \
        [(c.code, c.fn, c.where, c.base, c.head) for c in a.calls]
    assert back.calls_note == a.calls_note


def test_a_gate_json_without_call_counts_reads_as_before_and_a_broken_entry_is_refused(gate_with, tmp_path):  # noqa: F811
    outcome, _ = gate_with(noisy(1.0), noisy(1.2, shift=3), profiles=1)
    raw = json.loads(gate_file.dumps(document(outcome)))
    attribution = raw["cases"][0]["attribution"]
    for key in ("calls", "calls_note"):
        attribution.pop(key)
    old = tmp_path / "old.json"
    old.write_text(json.dumps(raw))
    back = gate_file.load(old).outcome.attributions[outcome.cases[0].case]
    assert back.calls == [] and back.calls_note is None
    assert Attribution.from_json({"case": "c"}).calls == []
    attribution["calls"] = [{"fn": "f", "file": "m.py", "line": 3, "base": "many", "head": 2, "code": "project"}]
    old.write_text(json.dumps(raw))
    with pytest.raises(ResultsError, match=r"calls\[0\]\.base"):
        gate_file.load(old)
    attribution["calls"] = [{"fn": "f", "file": "m.py", "line": 3, "base": 1, "head": 2, "code": "theirs"}]
    old.write_text(json.dumps(raw))
    with pytest.raises(ResultsError, match=r"calls\[0\]\.code"):
        gate_file.load(old)


# ---------------------------------------------------------------------------- callgrind: folded frames, self <= incl


def callgrind(user_self: int, helper_self: int, pool_self: int) -> str:
    """A hand-made callgrind dump: ``main`` -> the eval loop <-> ``_PyFunction_Vectorcall`` (a recursion); the eval
    loop -> ``user_work`` and ``shrinking`` -> ``helper_big``; ``PyCell_New``; XLA's pool on a thread of its own,
    started by ``start_thread`` -> ``clone``."""
    return "\n".join([
        "# callgrind format", "version: 1", "creator: callgrind-3.19.0", "pid: 7", "cmd: python", "part: 1", "",
        "desc: Trigger: Client Request: ttfg:first_gradient", "positions: line", "events: Ir", "",
        "ob=python", "fl=x.c", "fn=main", "1 10",
        "cfl=Python/ceval.c", "cfn=_PyEval_EvalFrameDefault", "calls=1 1", f"1 {250 + user_self + 5 + helper_self}",
        "", "fl=Python/ceval.c", "fn=_PyEval_EvalFrameDefault", "100 100",
        "cfl=Objects/call.c", "cfn=_PyFunction_Vectorcall", "calls=3 1", "100 120",
        "cfl=mylib.c", "cfn=user_work", "calls=1 1", f"101 {user_self}",
        "cfl=mylib.c", "cfn=shrinking", "calls=1 1", f"102 {5 + helper_self}", "",
        "fl=Objects/call.c", "fn=_PyFunction_Vectorcall", "5 20",
        "cfl=Python/ceval.c", "cfn=_PyEval_EvalFrameDefault", "calls=3 1", "6 100", "",
        "fl=Objects/cellobject.c", "fn=PyCell_New", "9 30", "",
        "fl=mylib.c", "fn=user_work", f"20 {user_self}", "",
        "fn=shrinking", "40 5", "cfn=helper_big", "calls=1 1", f"41 {helper_self}", "",
        "fn=helper_big", f"60 {helper_self}", "",
        "fl=tsl/platform/threadpool.cc", "fn=tsl::thread::EigenEnvironment::CreateThread()::{lambda()#1}::operator()",
        f"70 {pool_self}", "",
        "fl=???", "fn=start_thread", "0 3", "cfn=clone", "calls=1 0", "0 4", "fn=clone", "0 4", ""])


def test_callgrind_lists_fold_dispatch_and_pool_frames_and_never_show_a_self_change_above_the_inclusive(tmp_path):
    """Base: ``user_work`` 50, ``shrinking`` 5 calling ``helper_big`` 295; head: ``user_work`` 500, ``helper_big`` 95.
    Each side keeps its 5 largest functions, so ``shrinking`` is in base's list only: the old bound made its self
    change "<= +495" against an inclusive "<= +200" and named it as what grew."""
    from ttfg.decide.attribution import function_deltas
    from ttfg.measure import instructions

    lists = {}
    for role, args in (("base", (50, 295, 900)), ("head", (500, 95, 1000))):
        path = tmp_path / f"callgrind.out.{role}"
        path.write_text(callgrind(*args))
        prof = instructions.parse_file(path)
        for c in prof.functions.values():
            assert c.self <= c.incl, (role, c)
        # The recursion through the eval loop and vectorcall is counted once: its members' selves and calls out.
        loop = prof.functions[("_PyEval_EvalFrameDefault", "Python/ceval.c")]
        assert loop.incl == 100 + 20 + args[0] + 5 + args[1] and loop.incl <= prof.total
        lists[role] = [c.to_json() for c in instructions.merge([prof], top=5).top]
    rows = function_deltas([lists["base"]], [lists["head"]])
    assert {r.fn for r in rows} == {"main", "user_work", "shrinking"}  # dispatch, cells, pool, threads folded
    for r in rows:
        assert r.delta_self is None or r.delta_self <= r.delta_incl, r
    shrinking = next(r for r in rows if r.fn == "shrinking")
    assert shrinking.presence == "base only" and shrinking.delta_self is None
    a = Attribution("c", "first_grad_s", False, None, functions=rows)
    top = a.top_function("instructions")
    assert (top.fn, top.where, top.delta_self) == ("user_work", "mylib.c:20", 200)


# ---------------------------------------------------------------------------- one real gate

#: mylab's scale calling a helper of its own 20,000 times: pure-Python work in the first gradient, on line 4.
CALLS_OPS = '''"""The lab's own operations, called in every forward pass."""


def _mylab_scale_step(i: int) -> int:
    """One step of a needless checksum."""
    return (i * 31) % 1_000_003


def scale(x):
    """The lab's output scaling, after a needless checksum."""
    total = 0
    for i in range(20_000):
        total += _mylab_scale_step(i)
    return x * 1.0
'''


@pytest.mark.slow
@pytest.mark.full  # a real gate/run of tens of seconds: make test-all and CI run it
def test_a_real_gate_names_the_projects_function_called_more_first_with_its_file_and_line(tmp_path):
    """mylab (tests/user_project.py) at a head that is deeper (the structural tier flags it) and whose ``scale``
    calls ``_mylab_scale_step`` 20,000 times: the gate's calls processes (one a side) name that function and
    ``mylab/ops.py:4`` first under summary.md's "where it went", before any framework's function."""
    from tests.test_user_project import gate
    from tests.user_project import make_mylab, write_project

    lab = make_mylab(tmp_path)
    history = GitRepo(lab["repo"])
    history.git("checkout", "-q", "-b", "calls", lab["first"])
    write_project(lab["repo"], depth=8)
    (lab["repo"] / "src" / "mylab" / "ops.py").write_text(CALLS_OPS)
    head = history.commit("deeper, and a scale that calls a helper 20,000 times", stage="tracked")
    history.git("checkout", "-q", "main")
    out = gate(lab, "--base", lab["first"], "--head", head, "--model", "mylab_mlp", "--backend", "mylab.autograd",
               "--tiers", "structural", "--profiles", "1", "--out-dir", str(tmp_path / "out"))
    assert out.returncode == 1, out.stdout + out.stderr
    lines = (tmp_path / "out" / "summary.md").read_text().splitlines()
    where = next(i for i, line in enumerate(lines) if line.startswith("**Where it went**"))
    assert lines[where + 1].startswith("  - Python functions called more in your code: `_mylab_scale_step` "
                                       "(`mylab/ops.py:4`) +20,000"), lines[where:where + 3]
    assert lines[where + 2].startswith("  - Python functions called more in the frameworks' code: ")
    doc = gate_file.load(tmp_path / "out" / "gate.json")
    (a,) = doc.outcome.attributions.values()
    first = a.calls[0]
    assert (first.code, first.fn, first.where, first.base, first.head) == \
        ("project", "_mylab_scale_step", "mylab/ops.py:4", 0, 20_000)
    # ttfg explain on the gate's folder: the same function first in its call-count table.
    import os
    import re
    import subprocess

    shown = subprocess.run([str(lab["python"]), "-m", "ttfg", "explain", str(tmp_path / "out")], capture_output=True,
                           text=True, timeout=300, env={**os.environ, "COLUMNS": "120"}, cwd=lab["repo"])
    lines = shown.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if "calls head" in line)  # the call-count table's header
    rows = lines[header + 2:]
    assert re.match(r"_mylab_scale_step\s+your code\s+\+20,000\s+20,000$", rows[0].strip()), shown.stdout[-2000:]
    assert rows[1].strip() == "mylab/ops.py:4"


def test_explain_and_the_headline_name_the_projects_function_first_and_leave_cpythons_c_code_out():
    """What callgrind counted for a pure-Python change (CPython's ``PyLong_FromLong``, ``type_call``, an address in
    ``???``) is never the function named as what grew: the headline names the project's function called more with its
    file:line before any other, ``ttfg explain``'s tables list the call counts first and leave the interpreter's code
    out (a note counts it), and ``--internals`` shows it again."""
    from rich.console import Console

    from ttfg.present.attribution_views import attribution_markdown, headline, print_attribution
    from ttfg.results.attribution_record import CallDelta, FunctionDelta

    build = "/tmp/python-build.1/Python-3.11.7/"

    def fn(name, file, delta):
        return FunctionDelta(name, file, 61, 1e6, 1e6 + delta, 1e5, 1e5 + delta, delta, delta)

    a = Attribution("c", "first_grad_s", False, None, functions=[
        fn("PyLong_FromLong", build + "Objects/longobject.c", 861_543), fn("type_call", build + "Objects/typeobject.c",
                                                                           25_000_000),
        fn("0x0000000004936718", "???", 700_000), fn("user_kernel", "mylab/_native.c", 1_000)],
        calls=[CallDelta("vspace", "autograd/core.py", 288, 10, 1_010),
               CallDelta("_mylab_scale_step", "mylab/ops.py", 4, 0, 20_000, "project")])
    said = headline(a)
    assert said.index("_mylab_scale_step (mylab/ops.py:4) +20,000 calls") < said.index("user_kernel")
    assert "PyLong_FromLong" not in said and "type_call" not in said
    console = Console(record=True, width=120)
    print_attribution(console, a)
    text = console.export_text()
    assert text.index("_mylab_scale_step") < text.index("user_kernel") and "PyLong_FromLong" not in text
    assert "3 functions of the interpreter's and ttfg's own code left out of the instructions table" in text
    assert "PyLong_FromLong" not in attribution_markdown(a)
    console = Console(record=True, width=120)
    print_attribution(console, a, internals=True)
    assert "PyLong_FromLong" in console.export_text() and "left out" not in console.export_text()


def test_where_it_went_names_no_phase_outside_the_gated_metric():
    """The held-out gate's first line once read "build: 361 µs -> 273 µs, instructions +638" for a first gradient
    that grew by 25,000,000 instructions: build is outside first_grad_s, so it is no finding there; a counted trace
    phase is, and a process-wide metric keeps build."""
    from ttfg.present.gate_views import where_it_went
    from ttfg.results.attribution_record import CallDelta, PhaseDelta

    build = PhaseDelta("build", "build_s", 361e-6, 273e-6, -88e-6, 0.757, n=1, base_instructions=640_953,
                       head_instructions=641_591)
    execute = PhaseDelta("execute", "execute_s", 0.0111, 0.0123, 0.00114, 1.102, n=1)
    calls = [CallDelta("_mylab_scale_step", "mylab/ops.py", 4, 0, 20_000, "project")]
    shown = where_it_went(Attribution("c", "first_grad_s", False, None, phases=[build, execute], calls=calls))
    first = shown.splitlines()[0]
    assert "build" not in first and "no phase change from 3 or more pairs or from counts" in first, first
    trace = PhaseDelta("trace", "trace_s", 0.1, 0.2, 0.1, 2.0, n=1, base_instructions=1e6, head_instructions=3e6)
    first = where_it_went(Attribution("c", "first_grad_s", False, None, phases=[build, trace])).splitlines()[0]
    assert "trace: 100 ms -&gt; 200 ms" in first and "build" not in first, first
    first = where_it_went(Attribution("c", "process_ttfg_s", False, None, phases=[build, execute])).splitlines()[0]
    assert "build: 361 µs -&gt; 273 µs" in first, first
