"""Issue 41's done-means, end to end: pure-Python work added to a backend's first gradient is explained by that
Python function and its file:line first, wherever a person looks, and no interpreter internal is named as what grew.

The history is mylab's (``tests/user_project.py``): its first commit, a note, the commit that makes ``scale`` (which
every first gradient of ``mylab.autograd`` runs) call ``_mylab_scale_step`` 20,000 times, model unchanged, and
another note. No counter of the structural tier moves; the instructions tier (callgrind) decides. Then, in real
processes: ``ttfg bisect`` over the four commits (the culprit's lines in the terminal, ``bisect.json`` and the
bisect's ``summary.md``), ``ttfg gate`` of the culprit against its parent (``summary.md``), ``ttfg explain`` on that
gate's folder and ``ttfg report`` of it (the call-count icicle). Each must name ``_mylab_scale_step`` at
``mylab/ops.py:4`` before any other function, and none may name CPython's dispatch (``_PyFunction_Vectorcall``,
``PyObject_Call``, ``_PyEval_Vector``, ``cfunction_call``...) or its C files.
"""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

from tests.conftest import GitRepo
from tests.test_python_calls import CALLS_OPS
from tests.user_project import make_mylab

#: What the held-out commit adds, where: the helper's ``def`` is line 4 of ``src/mylab/ops.py``.
FN, WHERE = "_mylab_scale_step", "mylab/ops.py:4"
#: Names of CPython's dispatch and C files that were once listed as "the function that grew".
INTERNALS = re.compile(r"_PyFunction_Vectorcall|PyObject_Call|_PyEval_Vector|_PyObject_Call|cfunction_call|PyCell_New"
                       r"|gen_iternext|_Py_Dealloc|pycore_\w+\.h|Python/ceval\.c|Objects/call\.c")


def _run(lab, *args, timeout=900):
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_STEP_SUMMARY", "PYTHONPATH")}
    return subprocess.run([str(lab["python"]), "-m", "ttfg", *args], cwd=lab["repo"], capture_output=True, text=True,
                          timeout=timeout, env={**env, "COLUMNS": "120"})


def _note(repo, n: int) -> str:
    notes = repo / "src" / "mylab" / "notes.py"
    notes.write_text(notes.read_text() + f"# note {n}\n" if notes.exists() else f'"""Notes."""\n# note {n}\n')
    return GitRepo(repo).commit(f"note {n}, nothing else")


@pytest.mark.slow
@pytest.mark.full  # a bisect and a gate counted by callgrind (minutes): make test-all and CI run it
def test_pure_python_work_in_the_first_gradient_is_named_by_its_function_and_line_first_everywhere(tmp_path):
    lab = make_mylab(tmp_path)
    repo, history = lab["repo"], GitRepo(lab["repo"])
    history.git("checkout", "-q", "-b", "held-out", lab["first"])
    _note(repo, 1)
    (repo / "src" / "mylab" / "ops.py").write_text(CALLS_OPS)
    culprit = history.commit("scale runs a checksum first", stage="tracked")
    bad = _note(repo, 2)
    history.git("checkout", "-q", "main")
    counted = ("--model", "mylab_mlp", "--backend", "mylab.autograd", "--tiers", "structural,instructions",
               "--profiles", "1")

    # bisect: the culprit, then what it adds, the project's function and its line first.
    out = _run(lab, "bisect", "--good", lab["first"], "--bad", bad, *counted, "--out-dir", str(tmp_path / "b"))
    text = out.stdout + out.stderr
    assert out.returncode == 1, text[-4000:]
    doc = json.loads((tmp_path / "b" / "bisect.json").read_text())
    assert doc["status"] == "found" and doc["culprit"]["commit"] == culprit, text[-4000:]
    (a,) = doc["culprit_evidence"]["attribution"]
    assert (a["calls"][0]["fn"], a["calls"][0]["file"], a["calls"][0]["line"], a["calls"][0]["code"],
            a["calls"][0]["head"] - a["calls"][0]["base"]) == (FN, "mylab/ops.py", 4, "project", 20_000), a
    assert not any(INTERNALS.search(f"{f['fn']} {f['file']}") for f in a["functions"]), a["functions"]
    markdown = (tmp_path / "b" / "summary.md").read_text().replace("\\_", "_")  # Markdown's escapes undone
    for shown in (" ".join(out.stdout.split()), markdown):
        after = shown[shown.index("culprit: "):]
        named = re.findall(r"(?:Python functions called more in [^:]*|function grew in its own time): (\S+)", after)
        assert named[0] == FN, after[:2000]
        assert f"{FN} ({WHERE}) +20,000" in shown
        assert not INTERNALS.search(after[:after.find("reproduce")]), after[:2000]

    # gate: summary.md names the function and its line first under "where it went".
    gate = tmp_path / "g"
    out = _run(lab, "gate", "--base", f"{culprit}~1", "--head", culprit, *counted, "--out-dir", str(gate))
    assert out.returncode == 1, (out.stdout + out.stderr)[-4000:]
    said = " ".join(out.stdout.split())  # the terminal: the call counts before the sampled functions
    at, measured = said.index(f"Python functions called more in your code: +20,000 calls {FN} ({WHERE})"), \
        said.find("functions whose own")
    assert measured == -1 or at < measured, said[-3000:]
    summary = (gate / "summary.md").read_text()
    lines = summary.splitlines()
    where = next(i for i, line in enumerate(lines) if line.startswith("**Where it went**"))
    functions = re.findall(r"`([^`]+)` \(`([^`]+)`\)", "\n".join(lines[where:where + 4]))
    assert functions[0] == (FN.replace("_", "\\_"), WHERE) or functions[0] == (FN, WHERE), lines[where:where + 4]
    assert not INTERNALS.search("\n".join(lines[where:where + 4])), lines[where:where + 4]

    # explain: the call-count table's first row.
    shown = _run(lab, "explain", str(gate), timeout=300)
    assert shown.returncode == 0, shown.stderr[-2000:]
    rows = shown.stdout.splitlines()
    header = next(i for i, line in enumerate(rows) if "calls head" in line)
    assert re.match(rf"{FN}\s+your code\s+\+20,000\s+20,000$", rows[header + 2].strip()), shown.stdout[-3000:]
    assert rows[header + 3].strip() == WHERE
    tables = shown.stdout[:shown.stdout.index("\nnote: ")]  # the notes name what was folded, as folded
    assert not INTERNALS.search(tables), tables[-3000:]
    assert "left out of the instructions table (ttfg explain --internals lists them)" in " ".join(shown.stdout.split())

    # report: the call-count icicle's first cell under "your code" is the function, with its line, red.
    page = tmp_path / "r.html"
    out = _run(lab, "report", "--runs", str(gate), "--out", str(page), timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    html = page.read_text()
    icicle = html[html.index("Python call counts that changed"):]
    cells = re.findall(r'title="([^"]+)"', icicle)
    assert cells[0].startswith("your code:"), cells[:3]
    assert cells[cells.index(next(c for c in cells if not c.startswith(("your code", "the frameworks"))))] \
        == f"{FN} ({WHERE}): base 0, head 20,000, +20,000", cells[:6]
