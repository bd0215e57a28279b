"""``ttfg init`` on projects that are not ttfg-shaped: the framework they declare, a config they already
have, a monorepo, a feature branch, a failure halfway; and where CI installs ttfg from.

In-process (``ttfg.cli.main``) and without measuring anything, except the starters: each
framework's starter backend, rendered and imported here, gives the float64 reference's
gradient (flax and equinox only compile where they are not installed).
"""

from __future__ import annotations

import importlib.util
import json
import tomllib

import numpy as np
import pytest

from ttfg.cli import main
from ttfg.project import declarations, scaffold, ttfg_source
from ttfg.project.pyproject import read as read_project

from .conftest import GitRepo, git

REQ = "ttfg @ git+https://example.com/ttfg.git@0123456789abcdef0123456789abcdef01234567"


def make_project(root, deps=(), branch="main", name="lib", layout="src", top=None):
    package = root / "src" / name if layout == "src" else root / name
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(f'"""{name}"""\n')
    (root / "pyproject.toml").write_text('[build-system]\nrequires = ["setuptools>=64"]\n'
                                         'build-backend = "setuptools.build_meta"\n\n'
                                         f'[project]\nname = "{name}"\nversion = "0.1.0"\n'
                                         f'dependencies = {json.dumps(list(deps))}\n')
    top = top or root
    (GitRepo(top) if (top / ".git").exists() else GitRepo.init(top, branch)).commit("first")
    return root


@pytest.mark.parametrize("deps, framework", [
    (["torch>=2"], "torch"), (["jax[cpu]>=0.4", "numpy"], "jax"), (["flax>=0.10"], "flax"),
    (["equinox", "jax"], "equinox"), (["numpy"], "autograd"), ([], "autograd"),
])
def test_the_starter_is_a_library_backend_for_the_declared_framework(tmp_path, deps, framework):
    """Not always autograd: the framework the project declares; the starter builds the model itself
    (``library_loss``), and where the framework is installed its gradient is the reference's."""
    repo = make_project(tmp_path / "lib", deps)
    assert declarations.framework(repo) == framework
    assert main(["init", "--repo", str(repo), "--ttfg-requirement", REQ, "--starter", "backend"]) == 0
    plugin = repo / "src" / "lib" / "ttfg_plugin.py"
    text = plugin.read_text()
    assert "def library_loss(spec, weights, x)" in text and "AutogradBackend" not in text
    assert json.loads((repo / "ttfg.toml").read_text().split("backends = ")[1].split("\n")[0]) == [f"lib.{framework}"]
    compile(text, str(plugin), "exec")
    if any(importlib.util.find_spec(m) is None for m in declarations.MODULES[framework]):
        return
    spec_ = importlib.util.spec_from_file_location(f"starter_{framework}", plugin)
    module = importlib.util.module_from_spec(spec_)
    spec_.loader.exec_module(module)
    from ttfg.engines.reference import reference_gradient, worst_error

    spec = module.build_model(depth=2, width=8)
    weights, x = spec.init(0), spec.example_input(0)
    backend = module.StarterBackend()
    assert backend.modules[-1] == "lib" and backend.framework == framework
    from ttfg import engines
    from ttfg.engines import caches

    assert engines.contract_problem(module.StarterBackend, f"lib.{framework}") is None
    on_jax = framework in ("jax", "flax", "equinox")  # jax's persistent cache declared, so a warm gate runs it warm
    assert backend.persistent_caches == ((caches.JAX,) if on_jax else ())
    engine = backend.build(spec, weights, x, backend.default_variant())
    result, _ = engine.first_gradient()
    if on_jax:  # the counts a warm gate compares: one backend compile, no cache (none is set up here)
        assert engine.counters() == {"backend_compiles": 1, "persistent_cache_hits": 0}
    loss, grads = engine.to_numpy(result)
    ref_loss, ref = reference_gradient(spec, weights, x)
    assert abs(loss - ref_loss) <= 1e-4 * max(1.0, abs(ref_loss))
    assert sorted(grads) == sorted(ref) and all(grads[k].shape == ref[k].shape for k in ref)
    assert worst_error(grads, ref)[0] < 1e-4


def test_the_ttfg_requirement_comes_from_where_ttfg_came_from(tmp_path):
    """Never ``ttfg==0.1.0`` from an index that does not have it; never a path on this machine."""
    detected = ttfg_source.detected
    assert detected(None, "0.3.0", None) == "ttfg[instructions]==0.3.0"
    vcs = {"url": "https://github.com/o/ttfg.git", "vcs_info": {"vcs": "git", "commit_id": "abc123"}}
    assert detected(vcs, "0.1.0", None) == "ttfg[instructions] @ git+https://github.com/o/ttfg.git@abc123"
    with pytest.raises(ttfg_source.NoSource, match="--ttfg-requirement"):
        detected({"url": "file:///somewhere/ttfg", "vcs_info": {"vcs": "git", "commit_id": "abc"}}, "0.1.0", None)
    # An editable install from a git checkout: its remote at its HEAD commit (no credentials, scp-style made a URL).
    checkout = tmp_path / "ttfg"
    head = GitRepo.init(checkout).commit("x", {"f": "x"})
    editable = {"url": f"file://{checkout}", "dir_info": {"editable": True}}
    with pytest.raises(ttfg_source.NoSource, match="has no remote.origin.url.*--ttfg-requirement"):
        detected(editable, "0.1.0", checkout)
    git(checkout, "remote", "add", "origin", str(tmp_path / "elsewhere"))
    with pytest.raises(ttfg_source.NoSource, match="a path on this machine"):
        detected(editable, "0.1.0", checkout)
    git(checkout, "remote", "set-url", "origin", "https://user:token@github.com/o/ttfg.git")
    assert detected(editable, "0.1.0", checkout) == f"ttfg[instructions] @ git+https://github.com/o/ttfg.git@{head}"
    git(checkout, "remote", "set-url", "origin", "git@github.com:o/ttfg.git")
    assert detected(editable, "0.1.0", checkout) == f"ttfg[instructions] @ git+ssh://git@github.com/o/ttfg.git@{head}"
    # A configured requirement gets the extra; one that names no ttfg is refused.
    assert ttfg_source.requirement("ttfg==0.2") == "ttfg[instructions]==0.2"
    with pytest.raises(ttfg_source.NoSource, match="not ttfg"):
        ttfg_source.requirement("numpy")


def test_init_on_a_feature_branch_names_the_default_branch_and_no_local_path(tmp_path, capsys):
    repo = make_project(tmp_path / "lib", ["torch"], branch="main")
    git(repo, "checkout", "-q", "-b", "feature/x")
    assert main(["init", "--repo", str(repo), "--ttfg-requirement", REQ]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "default branch: main" in out
    from asv import util
    import yaml

    conf = util.load_json(str(repo / "asv.conf.json"), js_comments=True)
    assert conf["branches"] == ["main"] and conf["repo"] == "."
    trend = yaml.safe_load((repo / ".github/workflows/ttfg-trend.yml").read_text())
    assert trend[True]["push"]["branches"] == ["main"]
    for path in [repo / "asv.conf.json", *sorted((repo / ".github").rglob("*.yml")), repo / "ttfg.toml"]:
        assert str(tmp_path) not in path.read_text(), path
    gate = yaml.safe_load((repo / ".github/workflows/ttfg-perf-gate.yml").read_text())
    steps = " ".join(step.get("run", "") for step in gate["jobs"]["gate"]["steps"])
    assert "apt-get install -y valgrind" in steps and "'ttfg[instructions] @ git+https://example.com/" in steps
    assert "ttfg[instructions] @ git+https://example.com/" in conf["install_command"][0]
    assert (repo / ".gitignore").read_text().splitlines().count("runs/") == 1


def test_default_branch_from_origin_else_asked_for(tmp_path, capsys):
    origin = make_project(tmp_path / "origin", branch="trunk")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    git(clone, "checkout", "-q", "-b", "topic")
    assert main(["init", "--repo", str(clone), "--ttfg-requirement", REQ]) == 0
    assert "branches: [trunk]" in (clone / ".github/workflows/ttfg-trend.yml").read_text()
    lone = make_project(tmp_path / "lone", branch="topic")
    assert main(["init", "--repo", str(lone), "--ttfg-requirement", REQ]) == 2
    err = capsys.readouterr().err
    assert "cannot tell the repository's default branch" in err and "--default-branch" in err
    assert sorted(p.name for p in lone.iterdir()) == [".git", "pyproject.toml", "src"]
    assert main(["init", "--repo", str(lone), "--ttfg-requirement", REQ, "--default-branch", "develop"]) == 0
    assert '"branches": ["develop"]' in (lone / "asv.conf.json").read_text()


def test_gitignore_lines_are_added_once(tmp_path):
    repo = make_project(tmp_path / "lib")
    (repo / ".gitignore").write_text("__pycache__/\nruns\n")
    assert main(["init", "--repo", str(repo), "--ttfg-requirement", REQ]) == 0
    text = (repo / ".gitignore").read_text()
    assert text.startswith("__pycache__/\nruns\n") and ".asv/" in text and "reports/" in text
    assert [line.strip("/") for line in text.splitlines()].count("runs") == 1 and ".ttfg/runs/" in text
    assert main(["init", "--repo", str(repo), "--ttfg-requirement", REQ, "--force"]) == 0
    assert (repo / ".gitignore").read_text() == text


def test_an_existing_tool_ttfg_is_completed_never_duplicated_or_clobbered(tmp_path, capsys):
    repo = make_project(tmp_path / "lib", ["torch"])
    pyproject = repo / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + '\n[tool.ttfg]\nbudget = "2m"\nmodels = ["resnet15"]\n\n'
                         '[tool.other]\nx = 1\n')
    assert main(["init", "--repo", str(repo), "--ttfg-requirement", REQ]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert not (repo / "ttfg.toml").exists()
    data = tomllib.loads(pyproject.read_text())
    assert data["tool"]["ttfg"]["budget"] == "2m" and data["tool"]["ttfg"]["models"] == ["resnet15"]
    assert data["tool"]["ttfg"]["backends"] and data["tool"]["other"] == {"x": 1}
    assert "kept the config's budget = '2m'" in out and "kept the config's models" in out
    assert pyproject.read_text().count("[tool.ttfg]") == 1
    assert main(["config"], ) in (0, 2)  # one config, found (no "both ttfg.toml and pyproject.toml")
    assert "both ttfg.toml" not in capsys.readouterr().err


def test_init_writes_everything_or_nothing(tmp_path, monkeypatch):
    repo = make_project(tmp_path / "lib")
    before = sorted(p.relative_to(repo).as_posix() for p in repo.rglob("*") if ".git" not in p.parts)
    from ttfg import files

    real = files._write_temporary
    calls = []

    def failing(path, data):
        calls.append(path)
        if len(calls) == 4:
            raise OSError(28, "No space left on device")
        return real(path, data)

    monkeypatch.setattr(files, "_write_temporary", failing)
    with pytest.raises(OSError):
        scaffold_init(repo)
    after = sorted(p.relative_to(repo).as_posix() for p in repo.rglob("*") if ".git" not in p.parts)
    assert after == before and len(calls) == 4


def scaffold_init(repo):
    from ttfg.app.init import init

    return init(str(repo), ttfg_requirement=REQ)


def test_monorepo_init_at_the_root_writes_install_path(tmp_path, capsys):
    root = tmp_path / "mono"
    (root / "python").mkdir(parents=True)
    (root / "README.md").write_text("x\n")
    GitRepo.init(root)
    make_project(root / "python", ["jax"], name="lab", top=root)
    (root / "python" / "requirements-dev.txt").write_text("-r ../shared/base.txt\npytest\n")
    (root / "shared").mkdir()
    (root / "shared" / "base.txt").write_text("jax==0.4.30\n")
    # Inside the subfolder: the advice names a command that works.
    assert main(["init", "--repo", str(root / "python"), "--ttfg-requirement", REQ]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"ttfg init --repo {root} --project-dir python" in err
    assert main(["init", "--repo", str(root), "--ttfg-requirement", REQ]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "the project is in python/" in out
    assert 'install-path = "python"' in (root / "ttfg.toml").read_text()
    assert "import jax" in (root / "python" / "src" / "lab" / "ttfg_cases.py").read_text()
    assert tomllib.loads((root / "python" / "pyproject.toml").read_text())["project"]["entry-points"][
        "ttfg.functions"] == {"lab_loss": "lab.ttfg_cases:case"}
    import yaml

    gate = yaml.safe_load((root / ".github/workflows/ttfg-perf-gate.yml").read_text())
    paths = gate[True]["pull_request"]["paths"]
    for wanted in ("python/**", "requirements*.txt", "requirements/**", "constraints*.txt", "pyproject.toml",
                   "*.lock", "shared/base.txt"):
        assert wanted in paths, (wanted, paths)
    runs = " ".join(step.get("run", "") for step in gate["jobs"]["gate"]["steps"])
    assert "pip install -e ./python" in runs
    from asv import util

    assert util.load_json(str(root / "asv.conf.json"), js_comments=True)["repo_subdir"] == "python"
    # Several projects and no choice: refused, nothing written; --project-dir chooses.
    other = tmp_path / "two"
    (other / "a").mkdir(parents=True)
    GitRepo.init(other)
    make_project(other / "a", name="a", top=other)
    (other / "b").mkdir()
    make_project(other / "b", name="b", top=other)
    assert main(["init", "--repo", str(other), "--ttfg-requirement", REQ]) == 2
    assert "--project-dir" in capsys.readouterr().err
    assert not (other / "ttfg.toml").exists()
    assert main(["init", "--repo", str(other), "--project-dir", "b", "--ttfg-requirement", REQ]) == 0
    assert 'install-path = "b"' in (other / "ttfg.toml").read_text()


def test_pull_request_paths_cover_every_dependency_declaration(tmp_path):
    repo = make_project(tmp_path / "lib", ["torch"])
    project = read_project(repo)
    paths = declarations.watched_paths(repo, repo, project.package_dir)
    for wanted in ("src/lib/**", "pyproject.toml", "requirements*.txt", "requirements/**", "constraints*.txt",
                   "*.lock", "pylock*.toml", "ttfg.toml"):
        assert wanted in paths
    # Where the code's folder cannot be told, no filter: every pull request is gated.
    assert declarations.watched_paths(repo, repo, None) == []


def test_plain_asv_run_measures_the_configs_selection_or_refuses(tmp_path):
    from ttfg.project.asv_selection import NoSelection, select

    (tmp_path / "ttfg.toml").write_text('models = ["lib_model"]\nbackends = ["lib.torch"]\n')
    env = {}
    assert select(tmp_path, env) == {"TTFG_ASV_MODELS": "lib_model", "TTFG_ASV_BACKENDS": "lib.torch"}
    env = {"TTFG_ASV_MODELS": "resnet15"}
    select(tmp_path, env)
    assert env["TTFG_ASV_MODELS"] == "resnet15" and env["TTFG_ASV_BACKENDS"] == "lib.torch"
    (tmp_path / "ttfg.toml").write_text('budget = "2m"\n')
    with pytest.raises(NoSelection, match="names no models or backends"):
        select(tmp_path, {})
    assert np  # the numpy import is the starters'


def test_the_generated_suite_reads_the_config_before_the_benchmarks(tmp_path, monkeypatch):
    """The suites file asv imports sets the selection from the config first, or refuses to load."""
    import runpy

    from ttfg.project.asv_selection import NoSelection

    repo = make_project(tmp_path / "lib")
    assert main(["init", "--repo", str(repo), "--ttfg-requirement", REQ]) == 0
    for var in ("TTFG_ASV_MODELS", "TTFG_ASV_BACKENDS", "TTFG_ASV_VARIANTS"):
        monkeypatch.setenv(var, "")
    suite = repo / ".ttfg" / "ttfg_suites" / "ttfg.py"
    (repo / "ttfg.toml").write_text('budget = "2m"\n')
    with pytest.raises(NoSelection, match="names no models or backends"):
        runpy.run_path(str(suite))
    (repo / "ttfg.toml").write_text('models = ["lib_model"]\nbackends = ["lib.autograd"]\n')
    namespace = runpy.run_path(str(suite))
    assert "track_first_grad_seconds" in namespace
    import os

    assert os.environ["TTFG_ASV_MODELS"] == "lib_model" and os.environ["TTFG_ASV_BACKENDS"] == "lib.autograd"
