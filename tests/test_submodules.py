"""Worktrees and source installs carry git submodules, at the commits each revision records, recursively.

Issue 45, item 2: ``mylab`` vendors a library as a git submodule (``src/mylab/_vendor``, imported
by ``ops.py``). ``git worktree add`` checked out the superproject only, so ``run --env`` failed "No
module named 'mylab._vendor'", and a gate whose head added the submodule reported "regressed: head
cannot run", exit 1: a false finding. The repositories here are real and local (a second and a
third git repository, added with ``git -c protocol.file.allow=always submodule add``); a submodule
whose recorded commit exists nowhere is refused, exit 2, naming it.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from ttfg.provision.project_source import install_project
from ttfg.provision.submodules import SubmoduleError
from ttfg.provision.worktrees import Revision, worktrees

from .conftest import git
from .user_project import committed_project, layered_venv

VENDORED_OPS = '''\
"""The lab's own operations, scaled by the vendored library's factor."""

from ._vendor import FACTOR


def scale(x):
    """The lab's output scaling."""
    return x * FACTOR
'''


def repository(path: Path, files: dict[str, str]) -> Path:
    path.mkdir(parents=True)
    for name, text in files.items():
        (path / name).write_text(text)
    git(path, "init", "-q", "-b", "main")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "first")
    return path


def add_submodule(repo: Path, url: Path, where: str) -> None:
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(url), where)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """mylab at ``first``; ``vendored``: its ops import ``mylab._vendor``, a submodule that has a submodule."""
    root = tmp_path_factory.mktemp("sub")
    deep = repository(root / "deep", {"__init__.py": "DEPTH = 1\n"})
    vendor = repository(root / "vendor", {"__init__.py": "from .deep import DEPTH\n\nFACTOR = 1.0 * DEPTH\n"})
    add_submodule(vendor, deep, "deep")
    git(vendor, "commit", "-q", "-m", "the deep submodule")
    recorded = git(vendor, "rev-parse", "HEAD")
    repo = root / "mylab"
    first = committed_project(repo)
    add_submodule(repo, vendor, "src/mylab/_vendor")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "update", "-q", "--init", "--recursive")
    (repo / "src" / "mylab" / "ops.py").write_text(VENDORED_OPS)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "vendor a library as a submodule")
    vendored = git(repo, "rev-parse", "HEAD")
    # The vendored library moves on after the commit mylab records: the worktree must not take its tip.
    (vendor / "__init__.py").write_text("raise ImportError('the tip, not the recorded commit')\n")
    git(vendor, "commit", "-q", "-am", "a later commit mylab does not record")
    python = layered_venv(root / "venv")  # mylab installed editable, as its user has it: its entry points
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--disable-pip-version-check", "-e", str(repo)], check=True, capture_output=True, timeout=300)
    return {"root": root, "repo": repo, "first": first, "vendored": vendored, "recorded": recorded,
            "vendor": vendor, "python": python}


def test_a_worktree_has_its_submodules_at_the_recorded_commits_recursively(lab):
    with worktrees(lab["repo"], {"head": Revision("head", lab["vendored"], "")}) as trees:
        vendored = trees["head"] / "src" / "mylab" / "_vendor"
        assert git(vendored, "rev-parse", "HEAD") == lab["recorded"]  # not the vendor's later tip
        assert "FACTOR" in (vendored / "__init__.py").read_text()
        assert (vendored / "deep" / "__init__.py").read_text() == "DEPTH = 1\n"  # the submodule's own submodule
    assert git(lab["repo"], "worktree", "list").count("\n") == 0  # only the user's own worktree is left


def test_a_submodule_is_taken_from_the_users_checkout_when_its_url_is_gone(lab, tmp_path):
    """Offline, or a commit not pushed yet: the user's checkout of the submodule holds the recorded commit."""
    moved = tmp_path / "vendor-moved"
    lab["vendor"].rename(moved)
    try:
        with worktrees(lab["repo"], {"head": Revision("head", lab["vendored"], "")}) as trees:
            assert (trees["head"] / "src" / "mylab" / "_vendor" / "deep" / "__init__.py").is_file()
    finally:
        moved.rename(lab["vendor"])


def test_the_installed_revision_imports_its_vendored_code(lab):
    """What ``run --env`` installs (``provision/project_source.py``) imports the submodule's code."""
    project = install_project(lab["repo"])
    assert project.commit == lab["vendored"] and project.snapshot is None
    done = subprocess.run([str(lab["python"]), "-c", "import mylab.ops, mylab._vendor as v; print(v.__file__, "
                           "mylab.ops.scale(2.0))"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(project.root)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(project.root / "mylab" / "_vendor" / "__init__.py"), "2.0"]


@pytest.mark.slow
@pytest.mark.full  # a real gate/run of tens of seconds: make test-all and CI run it
def test_a_gate_whose_head_adds_a_submodule_measures_both_sides(lab, tmp_path):
    out = gate(lab, "--base", lab["first"], "--head", lab["vendored"], "--out-dir", str(tmp_path))
    assert out.returncode in (0, 1), out.stdout + out.stderr
    assert "cannot run" not in out.stdout + out.stderr and "_vendor" not in out.stderr
    import json

    doc = json.loads((tmp_path / "gate.json").read_text())
    assert doc["cases"][0]["verdict"]["verdict"] != "regressed", doc["cases"][0]["verdict"]  # the same loss, code


def test_a_submodule_commit_that_exists_nowhere_is_refused_naming_it(lab, tmp_path):
    repo = lab["repo"]
    git(repo, "checkout", "-q", "-b", "lost", lab["vendored"])
    try:
        git(repo, "update-index", "--cacheinfo", f"160000,{'e' * 40},src/mylab/_vendor")
        git(repo, "commit", "-q", "-m", "record a submodule commit nobody has")
        lost = git(repo, "rev-parse", "HEAD")
    finally:
        git(repo, "checkout", "-q", "-f", "main")
        git(repo, "-c", "protocol.file.allow=always", "submodule", "update", "-q", "--init", "--recursive")
    with pytest.raises(SubmoduleError, match=r"submodule src/mylab/_vendor: its recorded commit eeeeeeeeee"):
        with worktrees(repo, {"head": Revision("head", lost, "")}):
            pass
    assert git(repo, "worktree", "list").count("\n") == 0
    out = gate(lab, "--base", lab["vendored"], "--head", lost, "--out-dir", str(tmp_path))
    assert out.returncode == 2, out.stdout + out.stderr
    assert "submodule src/mylab/_vendor" in out.stderr and "eeeeeeeeee" in out.stderr


def gate(lab, *args):
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_STEP_SUMMARY", "PYTHONPATH")}
    return subprocess.run([str(lab["python"]), "-m", "ttfg", "gate", "--model", "mylab_mlp", "--backend",
                           "mylab.autograd", "--tiers", "structural", *args], cwd=lab["repo"], env=env,
                          capture_output=True, text=True, timeout=600)


def test_a_snapshot_refuses_a_submodule_with_changes_of_its_own_and_takes_one_at_another_commit(lab):
    """``run --env`` on a dirty tree: a submodule edited in place is refused, naming it (a snapshot takes a
    submodule by its commit); one checked out at a later commit is installed at that commit; caches inside it
    make nothing dirty."""
    from ttfg.provision.project_source import DirtySubmodule

    repo, vendored = lab["repo"], lab["repo"] / "src" / "mylab" / "_vendor"
    (vendored / "__pycache__").mkdir(exist_ok=True)
    (vendored / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\0")
    assert install_project(repo).snapshot is None
    init = vendored / "__init__.py"
    original = init.read_text()
    init.write_text(original.replace("FACTOR = 1.0 * DEPTH", "FACTOR = 3.0 * DEPTH"))
    try:
        with pytest.raises(DirtySubmodule, match=r"submodule src/mylab/_vendor has uncommitted changes of its own "
                                                 r"\(__init__.py\)"):
            install_project(repo)
        git(vendored, "commit", "-q", "-am", "a factor of three, committed in the submodule only")
        project = install_project(repo)
        assert project.changed == ("src/mylab/_vendor",) and project.snapshot
        assert "3.0" in (project.root / "mylab" / "_vendor" / "__init__.py").read_text()
        assert (project.root / "mylab" / "_vendor" / "deep" / "__init__.py").is_file()
    finally:
        git(vendored, "checkout", "-q", "-f", lab["recorded"])
        git(vendored, "clean", "-qfdx")
