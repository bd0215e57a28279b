"""A dependency bump gated in every common layout: flat, src, setup.py-only, a namespace package, a monorepo's
subfolder and a package importable from the repository's root, each a real gate.

Why: a flat-layout library (its package at the repository's root, the layout most projects
have) whose backend lists its own package among its modules, as ``ttfg init``'s starter
writes it, could not gate a dependency bump: the project was held to the environment
("would import lablib from .../sources/.../lablib/__init__.py, outside it"), exit 2. A
``setup.py``-only project declared "nothing", so a bump of its ``install_requires`` ran both
sides in one environment. A package importable from the repository's root (the root itself on the user's
path) is the working tree in the user's interpreter: each side must still import its own revision's install.
Each row here is the table in docs/how-to/environments.md.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from .layout_projects import LAYOUTS, declaration, make_layout

CASE = "lablib_mlp/lablib.autograd/params=args,chain=unrolled"


def gate(project, out, *args, head: str = "bump"):
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_STEP_SUMMARY", "PYTHONPATH")}
    return subprocess.run([str(project["python"]), "-m", "ttfg", "gate", "--base", project["first"], "--head",
                           project[head], "--model", "lablib_mlp", "--backend", "lablib.autograd", "--tiers",
                           "structural", "--out-dir", str(out), *args], cwd=project["repo"], env=env,
                          capture_output=True, text=True, timeout=900)


@pytest.mark.slow
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.full  # a real gate/run of tens of seconds: make test-all and CI run it
def test_a_dependency_bump_is_gated_in_each_layout(layout, tmp_path):
    project = make_layout(tmp_path, layout)
    if layout == "root":  # the user's interpreter imports the working tree's package and sees its entry points
        here = subprocess.run([str(project["python"]), "-c", "import importlib.metadata as md, lablib; "
                               "print(lablib.__file__); print(md.distribution('lablib')._path)"], cwd=tmp_path,
                              check=True, capture_output=True, text=True).stdout.split()
        assert all(p.startswith(str(project["repo"])) for p in here), here
    out = gate(project, tmp_path / "out")
    assert out.returncode in (0, 1), out.stdout + out.stderr
    assert "outside it" not in out.stdout + out.stderr
    doc = json.loads((tmp_path / "out" / "gate.json").read_text())
    envs = doc["environments"]
    assert envs["changed"] == [declaration(layout)], envs
    assert (envs["base"]["versions"]["autograd"], envs["head"]["versions"]["autograd"]) == ("1.7.0", "1.9.1")
    assert [c["case"] for c in doc["cases"]] == [CASE]
    for role in ("base", "head"):  # each side imported the project from its own revision's install
        side = json.loads((tmp_path / "out" / f"{role}.json").read_text())["environment"]["side"]
        assert project["top"] in side["install"]["packages"]  # read from the install's RECORD (a namespace too)
        origins = [o for m, o in side["imports"]["modules"].items() if m.split(".")[0] == project["top"] and o]
        assert origins, side["imports"]
        for origin in origins:
            assert origin.startswith(side["install"]["root"]) and not origin.startswith(str(project["repo"]))
    # A code change in the same layout: measured (the deeper model's counters grew), and the changed file is
    # proven to have run under its own repository path.
    out = gate(project, tmp_path / "code", head="code")
    assert out.returncode == 1, out.stdout + out.stderr
    doc = json.loads((tmp_path / "code" / "gate.json").read_text())
    assert doc["cases"][0]["verdict"]["verdict"] == "regressed"
    assert doc["measured_path"]["ran"] == [project["plugin"]] and not doc["measured_path"]["off_path"]


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["flat", pytest.param("root", marks=pytest.mark.full)])  # one in make test
def test_a_project_imported_from_the_working_tree_is_still_refused(tmp_path, layout):
    """The check that the project comes from the revision's install still bites: a ``.pth`` that puts the
    working tree first (the user's checkout, not the revision) makes both sides import the same files. In the
    ``root`` layout the working tree is on the path already, after the side's install (measured, above); put
    first, it is refused the same way."""
    project = make_layout(tmp_path, layout)
    site = subprocess.run([str(project["python"]), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    with open(os.path.join(site, "zz_worktree_first.pth"), "w") as f:
        f.write(f"import sys; sys.path.insert(0, {str(project['repo'])!r})\n")
    out = gate(project, tmp_path / "out", "--envs", "current")
    assert out.returncode == 2, out.stdout + out.stderr
    assert "not from its own install" in out.stdout + out.stderr and str(project["repo"]) in out.stdout + out.stderr
