"""The user's project inside a built environment: installed from its install-path, and named in the results.

Issue 29, item 3: ``run --env``, ``releases --backend <plugin>`` and ``study env`` linked the
library's plugin in *as this interpreter had it* (an editable install points at the working
tree), so the results could not say which code was measured. Now the project is installed from
its install-path like a gate side's revision: ``HEAD`` when the folder is clean, else a snapshot
of the working tree (untracked files too) that leaves the user's index and working tree alone.

No registry build: the "built" environment is a layered virtual environment (``user_project.py``)
that sees this run's packages but not ``mylab``, so the plugin can only come from the project
ttfg installed. The project's install (setuptools, isolated) is the one uv build each state costs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from ttfg.app.environments import project_for
from ttfg.provision import environments
from ttfg.measure.cases import Case
from ttfg.provision.project_source import SnapshotTooLarge, changed_files, install_project
from ttfg.measure.runner import RunSettings, Runner
from ttfg.results import record

from .conftest import git
from .user_project import committed_project, layered_venv

CASE = Case("mylab_mlp", "mylab.autograd", (("params", "args"), ("chain", "unrolled")), "built")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """mylab committed in a repository of its own (not installed anywhere), and a built-looking environment."""
    root = tmp_path_factory.mktemp("lab")
    repo = root / "mylab"
    head = committed_project(repo)
    python = layered_venv(root / "venv")
    env = environments.Environment("built", str(python), {"numpy": "x", "autograd": "x"}, "3", key="fake-built")
    return {"repo": repo, "env": env, "head": head}


def measure(lab, project, tmp_path) -> dict:
    """One timing sample of mylab's case in the environment, with ``project`` on its path; the results file."""
    out = tmp_path / "r.json"
    Runner([CASE], [], RunSettings(repeat=1), out, envs={"built": lab["env"]}, project=project).run()
    assert record.load(out).environment["project"]["commit"] == project.commit  # a results file that reads back
    return json.loads(out.read_text())


def _state(repo) -> tuple[str, ...]:
    """Everything of the user's that the snapshot must not touch: status, index, HEAD, stashes, refs."""
    return (git(repo, "status", "--porcelain", "--untracked-files=all"), git(repo, "diff", "--cached"),
            git(repo, "rev-parse", "HEAD"), git(repo, "stash", "list"), git(repo, "for-each-ref"))


def test_a_clean_project_is_installed_from_head_and_the_results_name_the_commit(lab, tmp_path):
    project = install_project(lab["repo"])
    assert project.snapshot is None and project.commit == lab["head"] and project.changed == ()
    assert "mylab" in project.installed.packages
    doc = measure(lab, project, tmp_path)
    sample = doc["cases"][0]["samples"][0]
    assert sample["ok"], sample.get("error")
    assert doc["environment"]["project"] == {"project": "mylab", "install_path": ".", "commit": lab["head"],
                                             "head": lab["head"], "snapshot": None, "changed": [],
                                             "snapshot_bytes": None}
    assert install_project(lab["repo"]).installed.cached  # the same cached install as a gate of HEAD


def test_uncommitted_changes_are_measured_as_a_named_snapshot_and_left_alone(lab, tmp_path):
    repo = lab["repo"]
    clean = measure(lab, install_project(repo), tmp_path / "clean")["cases"][0]["samples"][0]["loss"]
    ops = repo / "src" / "mylab" / "ops.py"
    original = ops.read_text()
    try:
        # A tracked change that imports an untracked module: the loss doubles only if both are installed.
        (repo / "src" / "mylab" / "factor.py").write_text("FACTOR = 2.0\n")
        ops.write_text(original.replace("return x * 1.0", "from .factor import FACTOR\n    return x * FACTOR"))
        git(repo, "add", "src/mylab/ops.py")  # staged, as a user may have it
        before = _state(repo)
        assert changed_files(repo, "") == ["src/mylab/factor.py", "src/mylab/ops.py"]
        project = install_project(repo)
        assert _state(repo) == before  # the index, the working tree, HEAD, stashes and refs as they were
        assert project.snapshot and project.snapshot != lab["head"] and project.head == lab["head"]
        assert not git_ok(repo, "cat-file", "-e", project.snapshot)  # its objects never reached the user's .git
        assert project.snapshot_bytes == sum((repo / f).stat().st_size for f in project.changed)
        doc = measure(lab, project, tmp_path / "dirty")
        sample = doc["cases"][0]["samples"][0]
        assert sample["ok"], sample.get("error")
        assert sample["loss"] == pytest.approx(2 * clean)  # the working tree's code ran, not HEAD's
        recorded = doc["environment"]["project"]
        assert recorded["snapshot"] == project.snapshot and recorded["head"] == lab["head"]
        assert recorded["changed"] == ["src/mylab/factor.py", "src/mylab/ops.py"]
        assert recorded["snapshot_bytes"] == project.snapshot_bytes
        again = install_project(repo)  # the same files: the same snapshot, and its install is cached
        assert again.snapshot == project.snapshot and again.installed.cached
    finally:
        git(repo, "reset", "-q", "--", "src/mylab/ops.py")
        ops.write_text(original)
        (repo / "src" / "mylab" / "factor.py").unlink(missing_ok=True)
    assert install_project(repo).snapshot is None


def git_ok(repo, *args) -> bool:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True).returncode == 0


def git_dir_size(repo) -> tuple[int, int]:
    """``(files, bytes)`` under the repository's ``.git``: what a snapshot must leave as it was."""
    files = [p for p in (repo / ".git").rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def test_a_large_untracked_file_never_reaches_the_users_git_and_its_size_is_said(lab, tmp_path):
    """Issue 45, item 3: a 300 MB untracked file made ``run --env`` write a 293 MB blob into ``.git``; now the
    snapshot's objects live in a private store, its size is said, and over the limit it is refused first."""
    repo = lab["repo"]
    big = repo / "src" / "mylab" / "weights.bin"
    big.write_bytes(os.urandom(12 * 2**20))  # random: git cannot compress it away
    before = git_dir_size(repo)
    notes = []
    try:
        project = install_project(repo, notes.append)
        assert git_dir_size(repo) == before  # byte for byte: no object, no index refresh, no worktree left
        assert project.changed == ("src/mylab/weights.bin",) and project.snapshot_bytes == 12 * 2**20
        assert "1 file(s), 12 MiB copied" in notes[-1]
        with pytest.raises(SnapshotTooLarge) as refused:
            install_project(repo, notes.append, snapshot_limit=2**20)
        message = str(refused.value)
        assert "src/mylab/weights.bin (12 MiB)" in message and "--snapshot-limit 13MiB" in message
        assert git_dir_size(repo) == before
    finally:
        big.unlink()


def test_interpreter_caches_neither_make_the_tree_dirty_nor_enter_a_snapshot(lab):
    repo = lab["repo"]
    cache = repo / "src" / "mylab" / "__pycache__"
    cache.mkdir(exist_ok=True)
    (cache / "ops.cpython-311.pyc").write_bytes(b"\x00" * 64)
    (repo / "src" / "mylab" / "stray.pyc").write_bytes(b"\x00" * 8)
    try:
        assert changed_files(repo, "") == []
        assert install_project(repo).snapshot is None  # HEAD itself, the cached install of a gate of HEAD
        (repo / "src" / "mylab" / "extra.py").write_text("X = 1\n")
        project = install_project(repo)
        assert project.changed == ("src/mylab/extra.py",)
        assert not list(project.root.rglob("stray.pyc"))
    finally:
        shutil.rmtree(cache)
        (repo / "src" / "mylab" / "stray.pyc").unlink()
        (repo / "src" / "mylab" / "extra.py").unlink(missing_ok=True)


def test_the_project_is_installed_only_for_built_environments_running_its_plugins(lab, monkeypatch):
    from ttfg.measure import cases

    plugins = {"mylab.autograd": "ttfg.backends", "mylab_mlp": "ttfg.models", "other.autograd": "ttfg.backends"}

    def entry_points(selected):  # as this interpreter would list them with mylab (and another library) installed
        found = {}
        for case in selected:
            for name in (case.backend, case.model):
                if name in plugins:
                    found.setdefault(plugins[name], []).append(name)
        return found

    monkeypatch.setattr(cases, "plugin_entry_points", entry_points)
    notes = []
    assert project_for(False, [CASE], lab["repo"], notes.append) is None  # this interpreter: nothing to install
    assert project_for(True, [CASE], None, notes.append) is None  # no config names a project
    builtin = Case("resnet15", "autograd", (("params", "args"), ("chain", "unrolled")), "built")
    assert project_for(True, [builtin], lab["repo"], notes.append) is None  # nothing of the project runs
    other = Case("mylab_mlp", "other.autograd", (("params", "args"), ("chain", "unrolled")), "built")
    assert project_for(True, [other], lab["repo"], notes.append) is None and not notes[:-1]
    assert "other.autograd: not declared by the project" in notes[-1]  # another library's: linked in as before
    assert project_for(True, [CASE], lab["repo"], notes.append).installed.project == "mylab"


def test_the_configs_install_path_names_the_project(lab, tmp_path):
    """What ``run``, ``study`` and ``releases`` install: the config's install-path; nothing without a config."""
    from ttfg.app.workspace import project_folder
    from ttfg.project import config as project_config

    config = lab["repo"] / "ttfg.toml"
    config.write_text('install-path = "."\n')
    try:
        assert project_folder(project_config.load(lab["repo"])) == lab["repo"].resolve()
    finally:
        config.unlink()
    assert project_folder(project_config.load(tmp_path)) is None


def test_snapshot_limit_sizes_are_read_with_their_units():
    import argparse

    from ttfg.cli.options import size

    assert [size(t) for t in ("100MiB", "250MB", "1.5GiB", "5000000", "2 gb", "64k")] == \
        [100 * 2**20, 250 * 10**6, int(1.5 * 2**30), 5_000_000, 2 * 10**9, 64 * 2**10]
    for bad in ("ten", "0", "-1MB", "5 parsecs", "MiB", "nan"):
        with pytest.raises(argparse.ArgumentTypeError):
            size(bad)
