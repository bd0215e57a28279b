"""A dependency change is seen however it is declared, because uv reads the declarations.

Each case here was a silent pass before (the hostile user's findings): a bump inside a
``-r`` include, a pin changed in ``pyproject.toml`` beside a ``requirements.txt``, a range
narrowed in ``constraints.txt``, a valid requirement ttfg's own reader rejected. Every
test makes a real repository and lets uv resolve against the package registry (cached
after the first run), as the gate does.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ttfg.errors import UsageError
from ttfg.provision.dependencies import changed_declarations, is_declaration, resolve, resolve_at
from ttfg.measure.sides import plan_environments
from ttfg.provision.worktrees import Revision

from .conftest import GitRepo

PYPROJECT = '[project]\nname = "lib"\nversion = "1"\ndependencies = [{deps}]\n'


def _rev(repo: Path, commit: str) -> Revision:
    return Revision(commit, commit, "subject")


@pytest.fixture
def repo(tmp_path):
    return GitRepo.init(tmp_path).path


def _plan(repo: Path, base: str, head: str, **kw):
    return plan_environments(repo, _rev(repo, base), _rev(repo, head), **kw)


def test_a_bump_inside_an_included_file_is_resolved_and_measured(repo):
    base = GitRepo(repo).commit("base", {"requirements.txt": "-r requirements/base.txt\n",
                                         "requirements/base.txt": "autograd==1.7.0\n", "lib.py": ""})
    head = GitRepo(repo).commit("bump inside the include", {"requirements/base.txt": "autograd==1.9.1\n"})
    assert changed_declarations(repo, base, head) == ["requirements/base.txt"]
    plan = _plan(repo, base, head)
    assert plan.differences["autograd"] == ("==1.7.0", "==1.9.1")
    assert "autograd==1.9.1" in plan.requests["head"].requirements
    assert "autograd==1.7.0" in plan.requests["base"].requirements
    assert not plan.requests["base"].current and not plan.requests["head"].current


def test_a_pin_changed_in_pyproject_beside_requirements_is_seen(repo):
    base = GitRepo(repo).commit("base", {"requirements.txt": "autograd\n",
                                         "pyproject.toml": PYPROJECT.format(deps='"autograd==1.7.0"')})
    head = GitRepo(repo).commit("bump in pyproject only",
                                {"pyproject.toml": PYPROJECT.format(deps='"autograd==1.9.1"')})
    plan = _plan(repo, base, head)
    assert plan.differences["autograd"] == ("==1.7.0", "==1.9.1")
    assert "requirements.txt + pyproject.toml" in plan.requests["head"].origin


def test_declarations_that_contradict_each_other_are_refused_quoting_uv(repo):
    base = GitRepo(repo).commit("base", {"requirements.txt": "autograd==1.9.1\n",
                                         "pyproject.toml": PYPROJECT.format(deps='"autograd==1.9.1"')})
    head = GitRepo(repo).commit("pyproject disagrees", {"pyproject.toml": PYPROJECT.format(deps='"autograd==1.7.0"')})
    with pytest.raises(UsageError, match="head side's dependencies cannot be resolved"):
        _plan(repo, base, head)


def test_a_range_narrowed_in_constraints_is_kept(repo):
    base = GitRepo(repo).commit("base", {"constraints.txt": "numpy<2.5\n"})
    head = GitRepo(repo).commit("narrow the range", {"constraints.txt": "numpy<2.3\n"})
    plan = _plan(repo, base, head)
    base_numpy, head_numpy = plan.differences["numpy"]
    assert base_numpy != head_numpy and head_numpy.startswith("==2.2"), plan.differences


def test_a_change_that_resolves_to_the_same_packages_is_measured_once_and_said(repo):
    base = GitRepo(repo).commit("base", {"requirements.txt": "autograd==1.7.0\n"})
    head = GitRepo(repo).commit("comment and spaces",
                                {"requirements.txt": "# pinned for the release\nautograd == 1.7.0\n"})
    plan = _plan(repo, base, head)
    assert all(r.current for r in plan.requests.values())
    assert plan.same_packages and "resolve to the same packages" in plan.same_packages
    assert "resolve to the same packages" in plan.describe()
    assert plan.unmeasured is None


def test_requirements_pip_reads_are_read(tmp_path):
    """Markers, spaces around operators, ranges with commas and line continuations: all valid for pip."""
    (tmp_path / "requirements.txt").write_text(
        'autograd == 1.7.0 ; python_version >= "3"\n'
        "numpy>=1.26,<3 \\\n"
        "  # a continued line\n"
        "scipy; sys_platform == 'win32'\n")
    got = resolve(tmp_path)
    assert "autograd==1.7.0" in got.lines and any(line.startswith("numpy==") for line in got.lines)
    assert not any(line.startswith("scipy") for line in got.lines)  # its marker excludes this machine
    assert got.files == ("requirements.txt",)


def test_the_project_itself_is_never_a_requirement(tmp_path):
    (tmp_path / "requirements.txt").write_text("-e .\nautograd==1.7.0\n")
    (tmp_path / "pyproject.toml").write_text(PYPROJECT.format(deps='"autograd>=1.7"'))
    assert all("lib" not in line and "file:" not in line for line in resolve(tmp_path).lines)


def test_what_counts_as_a_declaration_file():
    for path in ("pyproject.toml", "requirements.txt", "requirements-dev.txt", "requirements/base.txt",
                 "python/requirements/gpu.in", "constraints.txt", "uv.lock", "sub/poetry.lock", "setup.cfg"):
        assert is_declaration(path), path
    for path in ("README.md", "lib/model.py", "docs/notes.txt"):
        assert not is_declaration(path), path


def test_the_project_folder_is_where_declarations_are_read(repo):
    commit = GitRepo(repo).commit("monorepo", {"python/requirements.txt": "autograd==1.7.0\n"})
    assert "autograd==1.7.0" in resolve_at(repo, commit, "python").lines
    assert resolve_at(repo, commit).lines == ()


def test_a_changed_lock_that_uv_cannot_read_is_refused_naming_it(repo):
    base = GitRepo(repo).commit("base", {"poetry.lock": "a\n", "requirements.txt": "autograd==1.7.0\n"})
    head = GitRepo(repo).commit("lock changed", {"poetry.lock": "b\n"})
    with pytest.raises(UsageError, match="poetry.lock changed"):
        _plan(repo, base, head)


def test_naming_environments_and_choosing_them_from_declarations_are_not_mixed(repo):
    commit = GitRepo(repo).commit("base", {"requirements.txt": "autograd==1.7.0\n"})
    with pytest.raises(UsageError, match="give one or the other"):
        _plan(repo, commit, commit, head_env="autograd==1.9.1", mode="declared")


def test_one_commit_of_two_projects_installs_two_things(repo, tmp_path, monkeypatch):
    """The source cache is keyed by commit and the project's folder: a monorepo's two projects at one
    commit were one cache entry, and the second project's gate measured the first one's install."""
    from ttfg.provision.sources import install

    monkeypatch.setenv("TTFG_CACHE_DIR", str(tmp_path / "cache"))
    for name in ("one", "two"):
        (repo / name / name).mkdir(parents=True)
        (repo / name / name / "__init__.py").write_text("")
        (repo / name / "pyproject.toml").write_text(f'[project]\nname = "{name}"\nversion = "1"\n'
                                                    '[build-system]\nrequires = ["setuptools>=64"]\n'
                                                    'build-backend = "setuptools.build_meta"\n')
    commit = GitRepo(repo).commit("two projects", {})
    a = install(repo / "one", commit, folder="one")
    b = install(repo / "two", commit, folder="two")
    assert a.root != b.root and a.project == "one" and b.project == "two"


LOCKED = ('[project]\nname = "lib"\nversion = "1"\nrequires-python = ">=3.11"\ndependencies = [{deps}]\n')
DYNAMIC = ('[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n'
           '[project]\nname = "lib"\nversion = "1"\ndynamic = ["dependencies"]\n'
           '[tool.setuptools]\npackages = ["lib"]\n'
           '[tool.setuptools.dynamic]\ndependencies = {{file = [{files}]}}\n')


def test_a_lock_that_no_longer_matches_its_pyproject_is_refused_naming_both(repo):
    """The finding: the head bumped autograd 1.9.1 -> 1.8.0 in pyproject.toml without relocking; uv.lock was read
    as the truth ("resolve to the same packages on both sides: measured once", exit 0)."""
    from ttfg.provision.uv import run_uv

    GitRepo(repo).commit("base", {"pyproject.toml": LOCKED.format(deps='"autograd==1.9.1"'), "lib.py": ""})
    out = run_uv(["lock", "--directory", str(repo)], "test", 300)
    assert out.returncode == 0, out.stderr
    base = GitRepo(repo).commit("locked", {})
    head = GitRepo(repo).commit("bump without relocking", {"pyproject.toml": LOCKED.format(deps='"autograd==1.8.0"')})
    with pytest.raises(UsageError) as refused:
        _plan(repo, base, head)
    text = str(refused.value)
    assert "head side's dependencies cannot be resolved" in text and head[:7] in text
    assert "uv.lock does not match pyproject.toml (`uv lock --check` fails" in text
    assert "needs to be updated" in text  # uv's own words, quoted
    assert "autograd==1.9.1" in resolve_at(repo, base).lines  # a lock that matches is read as before


def test_a_pin_bumped_in_a_dynamic_dependencies_file_is_measured_in_two_environments(repo):
    """The finding: ``dynamic = ["dependencies"]`` read from deps.in; a head that bumped a pin there was gated in one
    interpreter, nothing said. The build backend's metadata is what uv resolves; deps.in counts as a declaration."""
    base = GitRepo(repo).commit("base", {"pyproject.toml": DYNAMIC.format(files='"deps.in"'),
                                         "deps.in": "autograd==1.7.0\n", "lib/__init__.py": ""})
    head = GitRepo(repo).commit("bump in deps.in", {"deps.in": "autograd==1.9.1\n"})
    assert changed_declarations(repo, base, head) == ["deps.in"]
    plan = _plan(repo, base, head)
    assert plan.differences["autograd"] == ("==1.7.0", "==1.9.1")
    assert "pyproject.toml + deps.in at" in plan.requests["head"].origin


def test_the_files_dynamic_dependencies_are_read_from():
    from ttfg.provision.dependencies import dynamic_files

    assert dynamic_files(DYNAMIC.format(files='"deps.in", "extra.in"')) == ["deps.in", "extra.in"]
    hatch = ('[project]\nname = "x"\nversion = "1"\ndynamic = ["dependencies", "optional-dependencies"]\n'
             '[tool.hatch.metadata.hooks.requirements_txt]\nfiles = ["requirements/run.txt"]\n'
             '[tool.hatch.metadata.hooks.requirements_txt.optional-dependencies]\ngpu = ["requirements/gpu.txt"]\n')
    assert dynamic_files(hatch) == ["requirements/gpu.txt", "requirements/run.txt"]
    hook = '[project]\nname = "x"\nversion = "1"\ndynamic = ["dependencies"]\n[tool.pdm.build]\nrun-setuptools = true\n'
    assert dynamic_files(hook) is None  # computed by a build hook: any file may feed it
    assert dynamic_files(PYPROJECT.format(deps='"autograd"')) == []


def test_dynamic_dependencies_no_table_names_make_every_changed_file_a_declaration(repo):
    hook = ('[build-system]\nrequires = ["pdm-backend"]\nbuild-backend = "pdm.backend"\n'
            '[project]\nname = "lib"\nversion = "1"\ndynamic = ["dependencies"]\n')
    base = GitRepo(repo).commit("base", {"pyproject.toml": hook, "pdm_build.py": "", "pins.cfg": "a\n"})
    head = GitRepo(repo).commit("a file the hook may read", {"pins.cfg": "b\n"})
    assert changed_declarations(repo, base, head) == ["pins.cfg"]


def test_inits_workflow_watches_the_files_dynamic_dependencies_are_read_from(tmp_path):
    from ttfg.project.declarations import watched_paths

    (tmp_path / "lib").mkdir()
    (tmp_path / "pyproject.toml").write_text(DYNAMIC.format(files='"deps.in"'))
    paths = watched_paths(tmp_path, tmp_path, tmp_path / "lib")
    assert "deps.in" in paths and "lib/**" in paths
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "1"\ndynamic = ["dependencies"]\n')
    assert watched_paths(tmp_path, tmp_path, tmp_path / "lib") == []  # a build hook: every pull request is gated


def test_uvs_own_error_comes_first_and_the_registry_is_blamed_only_when_its_host_does_not_answer():
    """The finding: "package registry cannot be reached" came before uv's message for a 404 from an index that
    exists and for a host that does not; now uv is quoted first and the host is asked."""
    import socket

    from ttfg.provision.uv import resolver_message

    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        answered = resolver_message(f"error: Failed to fetch: `http://127.0.0.1:{port}/simple/autograd/`\n"
                                    "  Caused by: HTTP status client error (404 Not Found)")
    assert answered.startswith("error: Failed to fetch") and "404 Not Found" in answered
    assert answered.endswith(f"(127.0.0.1:{port} answers: what uv says above is the cause)")
    assert "cannot be reached" not in answered
    refused = resolver_message("error: Request failed after 3 retries\n  cause: Failed to fetch: "
                               "http://127.0.0.1:9/simple/autograd/\n  cause: Connection refused (os error 111)")
    assert refused.startswith("error: Request failed")
    assert refused.endswith("(127.0.0.1:9 does not answer: the package registry cannot be reached)")
    plain = resolver_message("error: No solution found when resolving dependencies:\n  autograd==99 is unavailable")
    assert plain == "error: No solution found when resolving dependencies:\n  autograd==99 is unavailable"
