"""The gate on a user's own project: each revision's code is measured, whatever its layout.

The last round's experiment, redone: ``mylab`` (``tests/user_project.py``) has a ``src/``
layout, is installed editable into its own environment, and has its own top-level
``models`` package. Before, the gate measured the editable install (the working tree) on
both sides and said "unchanged"; now each side installs its own revision, reports where it
imports mylab from, and the gate decides on what each revision really does.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from ttfg.results import record

from .conftest import GitRepo, git
from .user_project import MYLAB, dependency_bump, make_mylab

CASE = "mylab_mlp/mylab.autograd/params=args,chain=unrolled"


@pytest.fixture(scope="module")
def mylab(tmp_path_factory):
    return make_mylab(tmp_path_factory.mktemp("user"))


def gate(mylab, *args, timeout=600, **more_env):
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_STEP_SUMMARY", "PYTHONPATH")} | more_env
    return subprocess.run([str(mylab["python"]), "-m", "ttfg", "gate", *args], cwd=mylab["repo"], env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_a_slower_revision_of_a_src_layout_editable_project_is_flagged_and_named(mylab, tmp_path):
    out = gate(mylab, "--base", mylab["first"], "--head", mylab["slow"], "--model", "mylab_mlp",
               "--backend", "mylab.autograd", "--out-dir", str(tmp_path))
    assert out.returncode == 1, out.stdout + out.stderr
    assert "regressed" in out.stdout and "_mylab_slow_scale_work" in out.stdout
    doc = json.loads((tmp_path / "gate.json").read_text())
    case = doc["cases"][0]
    assert case["case"] == CASE and case["verdict"]["verdict"] == "regressed" and case["tier"] == "structural"
    assert "_mylab_slow_scale_work" in json.dumps(case["attribution"])
    # Each side measured its own revision: 4 hidden layers against 8, imported from its own install.
    base, head = record.load(tmp_path / "base.json"), record.load(tmp_path / "head.json")
    primitives = [r.case(CASE).good()[0].counters["autograd_primitives"] for r in (base, head)]
    assert primitives[1] > primitives[0]
    for results, commit in ((base, mylab["first"]), (head, mylab["slow"])):
        side = results.environment["side"]
        assert side["install"]["project"] == "mylab" and side["install"]["commit"] == commit
        assert set(side["install"]["packages"]) == {"models", "mylab"}
        plugin = side["imports"]["modules"]["mylab.ttfg_plugin"]
        assert plugin.startswith(side["install"]["root"]) and not plugin.startswith(str(mylab["repo"]))


@pytest.mark.slow
@pytest.mark.full  # a real gate/run of tens of seconds: make test-all and CI run it
def test_a_change_the_measured_path_never_runs_passes_saying_so(mylab, tmp_path):
    """The change is a module no case imports: the gate could not see it. By default a pass that says so in
    the terminal, summary.md and gate.json (a pull request touching code no case runs cannot move what is
    measured); --off-path fail exits 2."""
    args = ("--model", "mylab_mlp", "--backend", "mylab.autograd", "--tiers", "structural")
    out = gate(mylab, "--base", mylab["first"], "--head", mylab["offpath"], *args, "--out-dir", str(tmp_path / "a"))
    assert out.returncode == 0, out.stdout + out.stderr
    said = " ".join(out.stdout.split())
    assert "could not see the change" in said and "src/mylab/cli.py" in said
    doc = json.loads((tmp_path / "a" / "gate.json").read_text())
    assert doc["measured_path"]["off_path"] and doc["measured_path"]["not_ran"] == ["src/mylab/cli.py"]
    assert "cannot see this change" in doc["measured_path"]["said"]
    assert "Not on the measured path" in (tmp_path / "a" / "summary.md").read_text()
    out = gate(mylab, "--base", mylab["first"], "--head", mylab["offpath"], *args, "--off-path", "fail",
               "--out-dir", str(tmp_path / "f"))
    assert out.returncode == 2, out.stdout + out.stderr
    assert "could not see the change" in " ".join(out.stdout.split())
    # A change on the path (a comment in ops.py, which every forward pass runs) is proven to have run.
    out = gate(mylab, "--base", mylab["first"], "--head", mylab["comment"], *args, "--out-dir", str(tmp_path / "c"))
    doc = json.loads((tmp_path / "c" / "gate.json").read_text())
    assert doc["measured_path"]["ran"] == ["src/mylab/ops.py"] and not doc["measured_path"]["off_path"]


@pytest.mark.slow  # one pair a side since the source tier (7 s here): make test runs it
def test_a_comment_only_change_is_unchanged(mylab, tmp_path):
    """Issue 39: the comment is proven no change of code (the source tier), and the one pair a side ran: no count,
    no screen, no allocation process, no trace of the measured path."""
    out = gate(mylab, "--base", mylab["first"], "--head", mylab["comment"], "--model", "mylab_mlp",
               "--backend", "mylab.autograd", "--allocations", "--out-dir", str(tmp_path))
    assert out.returncode == 0, out.stdout + out.stderr
    doc = json.loads((tmp_path / "gate.json").read_text())
    case = doc["cases"][0]
    assert case["verdict"]["verdict"] == "unchanged" and case["tier"] == "source", case
    assert doc["source"]["proven"] and doc["source"]["files"] == ["src/mylab/ops.py"], doc["source"]
    assert set(case["cost"]) == {"structural"} and case["cost"]["structural"]["processes"] == 2, case["cost"]
    assert "measured_path" not in doc or not doc["measured_path"], doc.get("measured_path")
    said = " ".join(out.stdout.split())
    assert "source: proven" in said and "not counted: the head runs the base's program" in said
    assert "decided by the source tier" in (tmp_path / "summary.md").read_text()


@pytest.mark.slow
def test_a_second_comment_only_gate_of_one_base_never_checks_the_base_out(mylab, tmp_path):
    """Issue 42: the first comment-only gate keeps the base's first process in the count store; the second runs the
    head's alone and never checks out, installs or locates the base (its stored first process stood in). A store
    whose base entry was resealed with another counter: the head disagrees, and the base is checked out in the middle
    of the gate and run afresh, with the verdict of a gate without a store."""
    from ttfg.results import count_store as cs

    store = tmp_path / "counts"
    args = ("--base", mylab["first"], "--head", mylab["comment"], "--model", "mylab_mlp", "--backend",
            "mylab.autograd")
    first = gate(mylab, *args, "--out-dir", str(tmp_path / "one"), TTFG_COUNT_STORE_DIR=str(store))
    assert first.returncode == 0, first.stdout + first.stderr
    said = " ".join(first.stdout.split())
    assert "not checked out yet" in said and "checking " in said and "out now" in said  # none stored: opened
    second = gate(mylab, *args, "--out-dir", str(tmp_path / "two"), TTFG_COUNT_STORE_DIR=str(store))
    assert second.returncode == 0, second.stdout + second.stderr
    said = " ".join(second.stdout.split())
    assert "not checked out yet" in said
    assert "out now" not in said and "base: mylab at" not in said, said  # never checked out nor installed
    assert "warning" not in said.lower(), said  # the time tier's budget is a note under the proof
    case = json.loads((tmp_path / "two" / "gate.json").read_text())["cases"][0]
    assert case["verdict"]["verdict"] == "unchanged" and case["tier"] == "source", case
    assert case["baseline"]["status"] == "stored", case["baseline"]
    side = record.load(tmp_path / "two" / "base.json").environment["side"]
    assert side["deferred"] and side["install"] is None and side["imports"] is None
    tree = git(mylab["repo"], "rev-parse", f"{mylab['first']}^{{tree}}").strip()
    resealed = 0
    for path in (store / "entries").glob("*.json"):
        doc = json.loads(path.read_text())
        if doc["entry"]["key"]["kind"] == cs.STRUCTURAL and doc["entry"]["key"]["sources"] == f"tree:{tree}":
            counters = doc["entry"]["sample"]["counters"]
            name = sorted(counters)[0]
            counters[name] += 1
            doc["sha256"] = cs._sha(doc["entry"])
            path.write_text(json.dumps(doc))
            resealed += 1
    assert resealed == 1
    third = gate(mylab, *args, "--out-dir", str(tmp_path / "three"), TTFG_COUNT_STORE_DIR=str(store))
    assert third.returncode == 0, third.stdout + third.stderr
    said = " ".join(third.stdout.split())
    assert f"stored first process not used (the head's structural counters differ from the stored base's: {name}" \
        in said and "out now" in said and "base: mylab at" in said, said
    case = json.loads((tmp_path / "three" / "gate.json").read_text())["cases"][0]
    assert case["verdict"]["verdict"] == "unchanged" and case["tier"] == "source", case
    side = record.load(tmp_path / "three" / "base.json").environment["side"]
    assert "deferred" not in side and side["install"]["commit"] == mylab["first"], side
    assert record.load(tmp_path / "three" / "base.json").environment["git"]["commit"] == mylab["first"]


def test_uncommitted_edits_anywhere_in_the_project_are_refused(mylab, tmp_path):
    ops = mylab["repo"] / "src" / "mylab" / "ops.py"
    original = ops.read_text()
    try:
        ops.write_text(original + "\n# an edit not committed\n")
        out = gate(mylab, "--base", mylab["first"], "--model", "mylab_mlp", "--backend", "mylab.autograd",
                   "--out-dir", str(tmp_path))
    finally:
        ops.write_text(original)
    assert out.returncode == 2 and "uncommitted changes" in out.stderr and "src/mylab/ops.py" in out.stderr
    assert not (tmp_path / "gate.json").exists()


def test_cases_that_run_none_of_the_projects_code_are_refused(mylab, tmp_path):
    """Gating ttfg's built-in model and backend from mylab's repository would time the same
    installed code on both sides: refused, naming why, before any sample."""
    out = gate(mylab, "--base", mylab["first"], "--head", mylab["slow"], "--model", "resnet15:blocks=2",
               "--backend", "autograd", "--out-dir", str(tmp_path))
    assert out.returncode == 2, out.stdout + out.stderr
    assert "run none of mylab's code" in out.stderr
    assert not (tmp_path / "head.json").exists()


def test_a_revision_is_installed_once_and_then_taken_from_the_cache(mylab, tmp_path):
    """A second gate on the same base installs only the head: each revision's install is cached by commit."""
    from ttfg.provision.sources import install
    from ttfg.provision.worktrees import Revision, worktrees

    with worktrees(mylab["repo"], {"base": Revision("base", mylab["first"], mylab["first"][:10])}) as trees:
        first = install(trees["base"], mylab["first"], str(mylab["python"]))
        again = install(trees["base"], mylab["first"], str(mylab["python"]))
    assert not first.cached and again.cached and again.root == first.root and again.seconds < 1.0
    assert first.project == "mylab" and set(first.packages) == {"models", "mylab"}


@pytest.mark.slow
@pytest.mark.full  # a real gate/run of tens of seconds: make test-all and CI run it
def test_a_plugin_that_cannot_be_imported_at_one_revision_shows_that_error(mylab, tmp_path):
    repo = mylab["repo"]
    git(repo, "checkout", "-q", "-b", "broken", mylab["first"])
    plugin = repo / "src" / "mylab" / "ttfg_plugin.py"
    plugin.write_text(plugin.read_text().replace("import numpy as np\n", "import numpy as np\n\n"
                                                 'raise ImportError("mylab needs widgets 2, found 1")\n'))
    broken = GitRepo(repo).commit("a plugin that cannot be imported", stage="tracked")
    git(repo, "checkout", "-q", "main")
    out = gate(mylab, "--base", broken, "--head", mylab["first"], "--model", "mylab_mlp", "--backend",
               "mylab.autograd", "--tiers", "time", "--max-failures", "2", "--out-dir", str(tmp_path))
    assert out.returncode == 2, out.stdout + out.stderr
    assert "mylab needs widgets 2, found 1" in out.stdout + out.stderr


@pytest.mark.full
def test_a_dependency_bump_is_measured_in_the_environments_each_revision_declares(mylab, tmp_path):
    """Only requirements.txt changes (autograd 1.7.0 -> 1.9.1): with defaults, each side runs in the
    environment its own revision declares, built with uv, and the records say which."""
    old, new = dependency_bump(mylab["repo"], mylab["first"], "autograd==1.7.0", "autograd==1.9.1")
    out = gate(mylab, "--base", old, "--head", new, "--model", "mylab_mlp", "--backend", "mylab.autograd",
               "--out-dir", str(tmp_path / "auto"))
    assert out.returncode in (0, 1), out.stdout + out.stderr
    assert "environments: base in base-" in out.stdout and "requirements.txt at" in out.stdout
    doc = json.loads((tmp_path / "auto" / "gate.json").read_text())
    envs = doc["environments"]
    assert envs["changed"] == ["requirements.txt"] and doc["unmeasured"] is None
    assert (envs["base"]["versions"]["autograd"], envs["head"]["versions"]["autograd"]) == ("1.7.0", "1.9.1")
    case = doc["cases"][0]
    assert case["tier"] in ("structural", "instructions"), case  # counts, not noise, decided it
    base, head = (record.load(tmp_path / "auto" / f"{role}.json") for role in ("base", "head"))
    assert base.environment["packages"]["autograd"] == "1.7.0" and head.environment["packages"]["autograd"] == "1.9.1"
    instructions = [r.case(CASE).good("instructions")[0].instructions for r in (base, head)]
    assert instructions[0] != instructions[1]  # different code ran: not one interpreter measured twice
    # Forcing this interpreter measures the code alone, and every output says the bump was not measured.
    out = gate(mylab, "--base", old, "--head", new, "--model", "mylab_mlp", "--backend", "mylab.autograd",
               "--envs", "current", "--tiers", "structural", "--out-dir", str(tmp_path / "current"))
    assert "not measured" in out.stdout and "requirements.txt" in out.stdout, out.stdout + out.stderr
    doc = json.loads((tmp_path / "current" / "gate.json").read_text())
    assert "was not measured" in doc["unmeasured"]
    assert "Not measured" in (tmp_path / "current" / "summary.md").read_text()


@pytest.mark.full  # make test gates mylab at the root above; this is the same gate, its project in a subfolder
def test_a_project_in_a_subfolder_of_its_repository_is_installed_from_install_path(mylab, tmp_path):
    """A monorepo: mylab in ``python/``, ``ttfg.toml`` at the root with ``install-path = "python"``.
    Without the key each side would try to install the repository's root, which is no project."""
    import shutil

    from .user_project import layered_venv, write_project

    repo = tmp_path / "mono"
    write_project(repo / "python")
    (repo / "ttfg.toml").write_text('install-path = "python"\nmodels = ["mylab_mlp"]\nbackends = ["mylab.autograd"]\n')
    (repo / "README.md").write_text("A repository whose Python project lives in python/.\n")
    history = GitRepo.init(repo, identity=MYLAB)
    history.commit("first")
    write_project(repo / "python", depth=8, slow=True)
    history.commit("deeper, and a slower scale", stage="tracked")
    python = layered_venv(tmp_path / "venv")
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--disable-pip-version-check", "-e", str(repo / "python")], check=True, capture_output=True,
                   timeout=300)
    out = gate({**mylab, "repo": repo, "python": python}, "--base", "HEAD~1", "--out-dir", str(tmp_path / "out"))
    assert out.returncode == 1, out.stdout + out.stderr
    assert "_mylab_slow_scale_work" in out.stdout
    head = record.load(tmp_path / "out" / "head.json").environment["side"]
    assert head["install"]["project"] == "mylab" and set(head["install"]["packages"]) == {"models", "mylab"}
    shutil.rmtree(tmp_path / "out")


@pytest.mark.full  # a repository and an editable install of its own (about 30 s): make test-all and CI run it
def test_a_pull_request_that_adds_a_backend_reports_a_new_case(tmp_path):
    """The head adds a backend: its case is new (measured on the head, shown, exit 0), never "base cannot
    run ... unknown backend", exit 2, which broke CI for every pull request that adds a case."""
    (tmp_path / "lab").mkdir()
    lab = make_mylab(tmp_path / "lab")
    repo = lab["repo"]
    pyproject = (repo / "pyproject.toml").read_text().replace(
        '"mylab.autograd" = "mylab.ttfg_plugin:MylabAutograd"',
        '"mylab.autograd" = "mylab.ttfg_plugin:MylabAutograd"\n"mylab.fast" = "mylab.ttfg_plugin:MylabFast"')
    (repo / "pyproject.toml").write_text(pyproject)
    plugin = repo / "src" / "mylab" / "ttfg_plugin.py"
    plugin.write_text(plugin.read_text() + '\n\nclass MylabFast(MylabAutograd):\n    name = "mylab.fast"\n'
                      '    description = "the same backend under a second name"\n')
    GitRepo(repo).commit("a second backend", stage="tracked")
    subprocess.run([str(lab["python"]), "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--disable-pip-version-check", "-e", str(repo)], check=True, capture_output=True, timeout=300)
    out = gate(lab, "--base", lab["first"], "--head", "HEAD", "--model", "mylab_mlp", "--backend", "mylab.autograd",
               "--backend", "mylab.fast", "--tiers", "structural", "--out-dir", str(tmp_path / "g"))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "new case mylab_mlp/mylab.fast" in out.stdout and "base cannot run" not in out.stdout
    doc = json.loads((tmp_path / "g" / "gate.json").read_text())
    assert [n["case"] for n in doc["new_cases"]] == ["mylab_mlp/mylab.fast/params=args,chain=unrolled"]
    assert doc["new_cases"][0]["first_grad_s"] > 0 and [c["case"] for c in doc["cases"]] == [CASE]
    assert "**New case**" in (tmp_path / "g" / "summary.md").read_text()
