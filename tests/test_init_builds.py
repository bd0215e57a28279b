"""What ``ttfg init`` writes never changes how the user's project builds or what its wheel ships.

Issue 45, item 1: ``init`` wrote ``ttfg_suites/`` (a package) at the repository's root. A
flat-layout setuptools project with automatic discovery then refused to build ("Multiple
top-level packages discovered in a flat-layout: ['jlib', 'ttfg_suites']"): ``pip install -e .``
failed, and so did every revision the gate installed; pdm-backend, which ships every root folder
holding an ``__init__.py``, put ``ttfg_suites`` into the wheel. Each project here is built before
and after ``init`` with its own backend (``python -m build --wheel --no-isolation``: the backends
are test extras, so no index is asked), and the wheels must hold the same files but the starter
``init`` writes into the package on purpose (``ttfg_cases.py``, found by its entry point).
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from ttfg.cli import main

from .conftest import git

REQ = "ttfg @ git+https://example.com/ttfg.git@0123456789abcdef0123456789abcdef01234567"

#: ``[build-system]`` of each backend, as its documentation writes it.
BACKENDS = {
    "setuptools": '[build-system]\nrequires = ["setuptools>=64"]\nbuild-backend = "setuptools.build_meta"\n',
    "hatchling": '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n',
    "flit": '[build-system]\nrequires = ["flit_core>=3.4"]\nbuild-backend = "flit_core.buildapi"\n',
    "pdm": '[build-system]\nrequires = ["pdm-backend"]\nbuild-backend = "pdm.backend"\n',
}
#: ``(backend, layout)``: setuptools with automatic discovery in both layouts (the flat one is the issue's),
#: the others in the flat layout, where a root folder is most at risk of being taken for a package.
PROJECTS = [("setuptools", "flat"), ("setuptools", "src"), ("hatchling", "flat"), ("flit", "flat"), ("pdm", "flat")]


def jlib(root: Path, backend: str, layout: str) -> Path:
    """``jlib``: a package of two modules, no explicit package list (each backend's own discovery), committed."""
    package = root / ("src/jlib" if layout == "src" else "jlib")
    package.mkdir(parents=True)
    (package / "__init__.py").write_text('"""jlib: a small library."""\n')
    (package / "ops.py").write_text("def scale(x):\n    return x * 1.0\n")
    (root / "pyproject.toml").write_text(BACKENDS[backend] + '\n[project]\nname = "jlib"\nversion = "0.1.0"\n'
                                         'description = "a small library"\ndependencies = ["numpy"]\n')
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "first")
    return root


def wheel_files(project: Path, out: Path) -> set[str]:
    """The files of the project's wheel, built by its own backend (without its dist-info folder)."""
    done = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out),
                           str(project)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    wheel, = out.glob("*.whl")
    with zipfile.ZipFile(wheel) as zf:
        return {name for name in zf.namelist() if ".dist-info/" not in name}


@pytest.mark.slow
@pytest.mark.parametrize("backend, layout", [  # make test builds one; each other build backend is make test-all's
    pytest.param(b, layout, id=f"{b}-{layout}", marks=() if (b, layout) == ("setuptools", "flat") else pytest.mark.full)
    for b, layout in PROJECTS])
def test_the_project_builds_the_same_wheel_after_init(tmp_path, backend, layout):
    repo = jlib(tmp_path / "jlib", backend, layout)
    before = wheel_files(repo, tmp_path / "before")
    assert main(["init", "--repo", str(repo), "--ttfg-requirement", REQ]) == 0
    assert (repo / ".ttfg" / "ttfg_suites" / "ttfg.py").is_file() and not (repo / "ttfg_suites").exists()
    after = wheel_files(repo, tmp_path / "after")
    assert after - before == {"jlib/ttfg_cases.py"} and before <= after  # the starter, in the package on purpose
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "ttfg init")
    assert wheel_files(repo, tmp_path / "committed") == after  # what a gate's worktree of the commit builds


def test_init_says_when_an_earlier_inits_suites_package_is_still_at_the_root(tmp_path, capsys):
    """A project set up by an earlier ``init`` keeps its ``ttfg_suites/`` until the user removes it: said."""
    repo = jlib(tmp_path / "jlib", "setuptools", "flat")
    (repo / "ttfg_suites").mkdir()
    (repo / "ttfg_suites" / "__init__.py").write_text("")
    assert main(["init", "--repo", str(repo), "--ttfg-requirement", REQ]) == 0
    out = capsys.readouterr().out
    assert "ttfg_suites/ is an earlier ttfg init's suites package" in out and "git rm -r ttfg_suites" in out


@pytest.mark.slow
def test_results_go_where_the_flat_layout_still_builds(tmp_path, monkeypatch):
    """``runs/`` at the root (a gate's results) broke the build as ``ttfg_suites/`` did (['jlib', 'runs']); the
    config ``init`` writes keeps every command's results in ``.ttfg/runs``, and the project still builds."""

    from ttfg.cli import build_parser
    from ttfg.cli.config import apply

    repo = jlib(tmp_path / "jlib", "setuptools", "flat")
    assert main(["init", "--repo", str(repo), "--ttfg-requirement", REQ, "--starter", "backend"]) == 0
    config = repo / "ttfg.toml"  # ttfg's own case: the starter's entry points are not installed here
    config.write_text(config.read_text().replace('["jlib_model"]', '["resnet15"]').replace('["jlib.autograd"]',
                                                                                         '["autograd"]'))
    monkeypatch.chdir(repo)
    parser = build_parser()
    wanted = {("gate", "--base", "HEAD"): ("out_dir", "gate"), ("bisect", "--good", "A", "--bad", "B"):
              ("out_dir", "bisect"), ("releases", "jax"): ("out_dir", "releases"), ("report",): ("out", "report.html")}
    for argv, (dest, where) in wanted.items():
        args = parser.parse_args(list(argv))
        apply(args)
        assert Path(getattr(args, dest)).resolve() == (repo / ".ttfg" / "runs" / where).resolve(), argv
    (repo / ".ttfg" / "runs" / "gate").mkdir(parents=True)  # what a gate leaves
    (repo / ".ttfg" / "runs" / "gate" / "gate.json").write_text("{}")
    assert isinstance(wheel_files(repo, tmp_path / "wheel"), set)
    assert git(repo, "status", "--porcelain", "--", ".ttfg/runs") == ""  # ignored: never committed by accident


@pytest.mark.slow
@pytest.mark.full  # a real gate/run of tens of seconds: make test-all and CI run it
def test_after_init_the_flat_project_installs_editable_and_a_gate_measures_both_sides(tmp_path):
    """Issue 45's done-criterion: ``init`` on a flat-layout setuptools project with automatic discovery, then
    ``pip install -e .`` (which failed: "Multiple top-level packages"), then a real ``ttfg gate`` of a change to
    the library's code: both revisions installed and measured, no side that "cannot run"."""
    import json
    import os

    from .user_project import layered_venv

    repo = jlib(tmp_path / "jlib", "setuptools", "flat")
    python = layered_venv(tmp_path / "venv")
    assert main(["init", "--repo", str(repo), "--ttfg-requirement", REQ, "--starter", "backend"]) == 0
    plugin = repo / "jlib" / "ttfg_plugin.py"  # the library's own code in the loss, as the guide asks
    plugin.write_text(plugin.read_text().replace("        return anp.sum(h)", "        from jlib.ops import scale\n\n"
                                                 "        return scale(anp.sum(h))"))
    editable = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                               "--disable-pip-version-check", "-e", str(repo)], capture_output=True, text=True,
                              timeout=300)
    assert editable.returncode == 0, editable.stderr[-2000:]
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "ttfg init, the starter calling jlib")
    ops = repo / "jlib" / "ops.py"
    ops.write_text("def scale(x):\n    total = 0\n    for i in range(200_000):\n        total += i\n"
                   "    return x * 1.0\n")
    git(repo, "commit", "-q", "-am", "scale: more work")
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_STEP_SUMMARY", "PYTHONPATH")}
    out = subprocess.run([str(python), "-m", "ttfg", "gate", "--base", "HEAD~1", "--tiers", "structural,time",
                          "--budget", "40s", "--max-pairs", "8"], cwd=repo, env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode in (0, 1), out.stdout[-3000:] + out.stderr[-3000:]
    assert "cannot run" not in out.stdout + out.stderr
    gate_dir = repo / ".ttfg" / "runs" / "gate"  # the config's output, beside no package
    doc = json.loads((gate_dir / "gate.json").read_text())
    assert [c["case"] for c in doc["cases"]] == ["jlib_model/jlib.autograd/params=args,chain=unrolled"]
    for side in ("base", "head"):
        results = json.loads((gate_dir / f"{side}.json").read_text())
        assert results["environment"]["side"]["install"]["project"] == "jlib"
        assert all(s["ok"] for case in results["cases"] for s in case["samples"]), side
        assert any(case["samples"] for case in results["cases"]), side
