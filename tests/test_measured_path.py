"""The changed-files proof, as the pure functions it is: installed files mapped back to repository paths, exactly.

Why: the proof matched paths by their tails, so ``tests/__init__.py`` "ran" because
``mylab/__init__.py`` did and ``tools/ops.py`` (a script never imported) because
``mylab/ops.py`` did; it traced the head only, so a module the head deletes was "not on the
path"; and an extension source was "no code file", passed silently. Each case below is one
of those, from the traced file lists a gate gets (no process runs here).
"""

from __future__ import annotations

import hashlib

from ttfg.measure import coverage


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


#: A src-layout checkout: its files and their bytes (``tests/__init__.py`` and ``mylab/__init__.py`` both empty,
#: ``tools/ops.py`` a copy of ``mylab/ops.py``).
TREE = {"src/mylab/__init__.py": "", "src/mylab/ops.py": "def scale(x):\n    return x\n",
        "src/mylab/layers.py": "LAYERS = 1\n", "tests/__init__.py": "", "tests/test_ops.py": "def test(): pass\n",
        "tools/ops.py": "def scale(x):\n    return x\n", "src/mylab/_fast.c": "int f(void) { return 1; }\n",
        "src/mylab/_slow.c": "int g(void) { return 2; }\n", "rust/src/lib.rs": "fn f() {}\n",
        "src/mylab/ops.pyi": "def scale(x: float) -> float: ...\n"}


def ran_in(installed: dict[str, str], tree: dict[str, str] = TREE) -> tuple[set[str], dict[str, str]]:
    """The repository paths of ``installed`` (path -> text, relative to the install folder) and the folder map."""
    mapped, folders = coverage.source_paths({p: digest(t) for p, t in installed.items()},
                                            {p: digest(t) for p, t in tree.items()})
    return set(mapped.values()), folders


HEAD_RAN = {"mylab/__init__.py": "", "mylab/ops.py": TREE["src/mylab/ops.py"]}


def test_an_empty_init_of_the_tests_never_runs_because_the_packages_did():
    ran, _ = ran_in(HEAD_RAN)
    assert ran == {"src/mylab/__init__.py", "src/mylab/ops.py"}
    found = coverage.check(["tests/__init__.py"], ran)
    assert found.changed == ["tests/__init__.py"] and found.ran == [] and found.off_path


def test_a_script_with_the_same_name_and_bytes_as_a_module_that_ran_did_not_run():
    ran, _ = ran_in(HEAD_RAN)
    found = coverage.check(["tools/ops.py", "src/mylab/ops.py"], ran)
    assert found.ran == ["src/mylab/ops.py"] and found.not_ran == ["tools/ops.py"] and not found.off_path


def test_a_module_the_head_deletes_ran_on_the_base_and_is_on_the_path():
    """The head deletes ``src/mylab/layers.py``: only the base's trace has it; the union of both sides is the path."""
    base, _ = ran_in({**HEAD_RAN, "mylab/layers.py": TREE["src/mylab/layers.py"]})
    head_tree = {p: t for p, t in TREE.items() if p != "src/mylab/layers.py"}
    head, _ = ran_in(HEAD_RAN, head_tree)
    assert coverage.check(["src/mylab/layers.py"], head).off_path  # the head alone cannot see it
    both = coverage.check(["src/mylab/layers.py"], base | head)
    assert both.ran == ["src/mylab/layers.py"] and not both.off_path


def test_a_renamed_package_folder_maps_by_content():
    """ttfg's own build installs ``harness/`` as ``ttfg/``: the installed files still map to their sources."""
    tree = {"harness/__init__.py": "", "harness/gate.py": "G = 1\n", "tests/__init__.py": "", "tests/gate.py": "T\n"}
    ran, folders = ran_in({"ttfg/__init__.py": "", "ttfg/gate.py": "G = 1\n"}, tree)
    assert ran == {"harness/__init__.py", "harness/gate.py"} and folders["ttfg"] == "harness"


def test_an_extension_source_is_on_the_path_when_its_module_loaded_and_said_unseen_otherwise():
    _, folders = ran_in(HEAD_RAN)
    loaded = ["mylab/_fast.cpython-311-x86_64-linux-gnu.so"]
    sources = {"src/mylab/_fast.c", "src/mylab/_slow.c", "rust/src/lib.rs"}
    matched = coverage.extension_sources(sources, loaded, folders)
    assert matched == {"src/mylab/_fast.c"}
    found = coverage.check(sorted(sources), set(), extensions=matched)
    assert found.ran == ["src/mylab/_fast.c"] and not found.off_path
    assert found.unseen == ["rust/src/lib.rs", "src/mylab/_slow.c"]
    assert "not seen by the Python trace" in found.describe() and "src/mylab/_slow.c" in found.describe()
    # Alone, an extension source no loaded module matches is off the path, and said plainly.
    alone = coverage.check(["src/mylab/_slow.c"], set(), extensions=matched)
    assert alone.off_path and alone.unseen == ["src/mylab/_slow.c"] and "_slow.c: extension" in alone.describe()


def test_stub_only_and_declaration_only_changes_are_said_not_refused():
    stubs = coverage.check(["src/mylab/ops.pyi"], set())
    assert stubs.changed == [] and stubs.stubs == ["src/mylab/ops.pyi"] and not stubs.off_path
    assert "stub(s), which never run" in stubs.describe()
    declared = coverage.check(["setup.py", "requirements/base.txt", "README.md"], set())
    assert declared.changed == [] and not declared.off_path
    assert declared.describe() == "the change touches no code file of the project"


def test_the_proof_in_gate_json_carries_its_sentence():
    found = coverage.check(["src/mylab/cli.py"], {"src/mylab/ops.py"})
    data = found.to_json()
    assert data["off_path"] and data["not_ran"] == ["src/mylab/cli.py"] and "cannot see this change" in data["said"]


def test_a_build_folder_left_in_the_checkout_is_not_the_source(tmp_path):
    """A fresh install's setuptools build leaves ``build/lib/lablib/*.py`` in the checkout, byte for byte the
    package's files: untracked, they are not the repository's files (every file was ambiguous, and a gate said
    that none of the changed files ran)."""
    from .conftest import GitRepo

    repo = GitRepo.init(tmp_path / "repo")
    repo.commit("first", {"lablib/__init__.py": "", "lablib/ops.py": "X = 1\n", "tests/__init__.py": ""})
    (tmp_path / "repo" / "build" / "lib" / "lablib").mkdir(parents=True)
    (tmp_path / "repo" / "build" / "lib" / "lablib" / "ops.py").write_text("X = 1\n")
    (tmp_path / "repo" / "build" / "lib" / "lablib" / "__init__.py").write_text("")
    tree = coverage.tree_digests(tmp_path / "repo", ".", {"ops.py", "__init__.py"})
    assert set(tree) == {"lablib/__init__.py", "lablib/ops.py", "tests/__init__.py"}
    mapped, _ = coverage.source_paths({"lablib/ops.py": digest("X = 1\n"), "lablib/__init__.py": digest("")}, tree)
    assert mapped == {"lablib/ops.py": "lablib/ops.py", "lablib/__init__.py": "lablib/__init__.py"}
    # Even where such copies are tracked, the file at the installed path itself is the source.
    both = {**tree, "build/lib/lablib/ops.py": digest("X = 1\n")}
    assert coverage.source_paths({"lablib/ops.py": digest("X = 1\n")}, both)[0] == {"lablib/ops.py": "lablib/ops.py"}


def _path_check(tmp_path, monkeypatch, head_ran: set[str], change: dict[str, str]):
    """``app.gate.measured_path`` over a real two-commit repository, each side's trace faked: which sides it traced,
    what it found, what it said."""
    from types import SimpleNamespace

    from ttfg.app import gate as use_case
    from ttfg.measure import sides as sides_module
    from ttfg.provision.worktrees import Revision
    from tests.conftest import GitRepo

    repo = GitRepo.init(tmp_path / "repo")
    base = repo.commit("base", {"src/mylab/ops.py": "X = 1\n", "src/mylab/cli.py": "Y = 1\n"})
    head = repo.commit("head", change)
    traced: list[str] = []

    def side_ran(side, cases, run, folder, names):
        traced.append(side.role)
        return (head_ran if side.role == "head" else {"src/mylab/ops.py", "src/mylab/cli.py"}), set(), {}

    monkeypatch.setattr(coverage, "side_ran", side_ran)
    monkeypatch.setattr(sides_module, "provides", lambda side, case: True)
    sides = {role: SimpleNamespace(role=role, installed=object()) for role in ("base", "head")}
    request = SimpleNamespace(project_dir="", repo=repo.path, cases=["case"], settings=SimpleNamespace(run=None))
    notes: list[str] = []
    events = SimpleNamespace(note=notes.append, warning=notes.append)
    found = use_case.measured_path(request, Revision("b", base, ""), Revision("h", head, ""), sides, events)
    return found, traced, notes


def test_the_base_is_not_traced_when_every_changed_file_ran_on_the_head(tmp_path, monkeypatch):
    """Issue 42: a comment-only change of a file the head runs is on the path whatever the base runs, so the base's
    traced process (a whole first gradient, on the gate's critical path) is not spent."""
    found, traced, notes = _path_check(tmp_path, monkeypatch, {"src/mylab/ops.py"},
                                       {"src/mylab/ops.py": "X = 1  # a comment\n"})
    assert traced == ["head"]
    assert found.ran == ["src/mylab/ops.py"] and not found.off_path
    assert "measured path: the base side not traced: every changed code file ran on the head" in notes


def test_the_base_is_still_traced_when_the_head_did_not_run_a_changed_file(tmp_path, monkeypatch):
    """A module the head stops running ran on the base: only the base's trace puts it on the path."""
    found, traced, _ = _path_check(tmp_path, monkeypatch, {"src/mylab/ops.py"},
                                   {"src/mylab/ops.py": "X = 2\n", "src/mylab/cli.py": "Y = 2\n"})
    assert traced == ["head", "base"]
    assert found.ran == ["src/mylab/cli.py", "src/mylab/ops.py"] and not found.off_path
