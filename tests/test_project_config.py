"""``[tool.ttfg]`` / ``ttfg.toml``, ``ttfg config``, ``ttfg show`` and ``ttfg init``, with their bad input.

In-process (``ttfg.cli.main``) where a command measures nothing, so the whole file costs a
few seconds; one ``ttfg run`` of the cheapest case proves the default results folder and
``show``. The end-to-end run on the example project is ``test_example_project.py``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

from ttfg.cli import main

from .example_project import make_repository
from .conftest import GitRepo

#: Where the CI files install ttfg from (this checkout has no remote a runner could reach).
REQ = ["--ttfg-requirement", "ttfg @ git+https://example.com/ttfg.git@0123456789abcdef0123456789abcdef01234567"]


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A git repository with a pyproject.toml and nothing else, as the current folder."""
    repo = tmp_path / "proj"
    (repo / "src" / "proj").mkdir(parents=True)
    (repo / "src" / "proj" / "__init__.py").write_text('"""proj"""\n')
    (repo / "pyproject.toml").write_text('[build-system]\nrequires = ["setuptools>=64"]\n'
                                         'build-backend = "setuptools.build_meta"\n\n'
                                         '[project]\nname = "proj"\nversion = "0.1.0"\n\n'
                                         '[tool.setuptools.packages.find]\nwhere = ["src"]\n')
    GitRepo.init(repo).commit("first")
    monkeypatch.chdir(repo)
    return repo


def config_table(repo, text: str, name: str = "pyproject.toml"):
    if name == "pyproject.toml":
        base = (repo / name).read_text().split("\n[tool.ttfg]")[0]
        (repo / name).write_text(base + "\n[tool.ttfg]\n" + text)
    else:
        (repo / name).write_text(text)


def test_config_shows_each_settings_origin_and_flags_win(project, capsys):
    config_table(project, 'models = ["resnet15:blocks=2"]\nbackends = ["autograd"]\nbudget = "2m"\n')
    assert main(["config", "--budget", "30s"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"{project / 'pyproject.toml'}:tool.ttfg.models" in out.replace(" ", "") or "tool.ttfg.models" in out
    assert "flag --budget" in out and "30s" in out
    assert "1 case(s) to measure here" in out


#: A valid value, not the default, for every key of the config: a key added without a row here fails the test below.
EVERY_KEY = {"models": ('["resnet15:blocks=2"]', "resnet15:blocks=2"), "backends": ('["autograd"]', "autograd"),
             "variants": ('["all"]', "all"), "budget": ('"2m"', "2m"), "min-effect": ("0.2", "0.2"),
             "cache": ('"warm"', "warm"), "output": ('"elsewhere"', "elsewhere"), "install-path": ('"py"', "py"),
             "commit-url": ('"https://example.com/c/{sha}"', "https://example.com/c/{sha}"),
             "ttfg-requirement": ('"ttfg==9.9"', "ttfg==9.9"), "strict-counters": ('["graphs"]', "graphs"),
             "off-path": ('"fail"', "fail"), "functions": ('{ mylab_step = "mylab_cases:case" }', "mylab_cases:case")}


def test_config_shows_every_key_with_its_value_and_the_file_as_origin(project, capsys):
    """``ttfg config`` with every key set in ttfg.toml: each row holds the file's value and names the file and key
    (install-path was printed as "the config's folder ... default" while ttfg.toml set it)."""
    from ttfg.project.config import KEYS

    assert set(EVERY_KEY) == set(KEYS), "a config key without a row in EVERY_KEY"
    (project / "py").mkdir()
    (project / "py" / "setup.py").write_text("from setuptools import setup\nsetup(name='py')\n")
    config_table(project, "".join(f"{k} = {text}\n" for k, (text, _) in EVERY_KEY.items()), "ttfg.toml")
    assert main(["config"]) == 0
    # The narrow terminal's form of the table: "- KEY: value VALUE, from ORIGIN", folded where a long path or
    # value meets the edge (anywhere in a word); compared with every blank taken out.
    printed = "".join(capsys.readouterr().out.split())
    for key, (_, shown) in EVERY_KEY.items():
        found = re.search(rf"-{re.escape(key)}:value(.*?),from(.*?ttfg\.toml:{re.escape(key)})", printed)
        assert found, (key, printed)
        assert found.group(1).endswith("".join(shown.split())), (key, found.group(0))
        assert ":value" not in found.group(2), (key, found.group(0))  # the origin is this row's


@pytest.mark.parametrize("text, words", [
    ('modles = ["resnet15"]\n', ["unknown key 'modles'", "did you mean 'models'", "pyproject.toml"]),
    ('models = "resnet15"\n', ["models: expected a list of strings, got a string"]),
    ('budget = true\n', ["budget: expected a number or a string, got a boolean"]),
    ('budget = "ten minutes"\n', ["budget = 'ten minutes'", "not a positive duration"]),
    ('min-effect = 50\n', ["min-effect = 50", "(0, 10]"]),
    ('commit-url = "https://x.org/c/"\n', ["commit-url", "{sha}"]),
    ('models = []\n', ["models = []: selects nothing"]),
    ('backends = ["nope"]\n', ["tool.ttfg.backends", "unknown backend 'nope'"]),
    ('strict-counters = ["instructions"]\n', ["strict-counters", "not a structural counter"]),
])
def test_bad_config_is_refused_naming_file_key_and_type(project, capsys, text, words):
    config_table(project, text)
    assert main(["check"]) == 2
    err = capsys.readouterr().err
    assert "ttfg check: error:" in err and str(project / "pyproject.toml") in err
    for word in words:
        assert word in err, err


def test_strict_counters_of_the_config_reach_the_gate_and_a_flag_wins(project):
    from ttfg.cli import build_parser
    from ttfg.cli.config import apply

    config_table(project, 'strict-counters = ["hlo_ops"]\n')
    parser = build_parser()  # its config-backed defaults marked (cli/config.py mark_defaults)
    args = parser.parse_args(["gate", "--base", "HEAD"])
    apply(args)
    assert list(args.strict_counters) == ["hlo_ops"]
    args = parser.parse_args(["gate", "--base", "HEAD", "--strict-counters", "none"])
    apply(args)
    assert args.strict_counters == ()


def test_commit_url_of_the_config_reaches_the_gate_and_a_flag_wins(project):
    """The gate links summary.md's file:line of your code through commit-url (issue 41 item 3)."""
    from ttfg.cli import build_parser
    from ttfg.cli.config import apply

    config_table(project, 'commit-url = "https://github.com/o/r/commit/{sha}"\n')
    parser = build_parser()
    args = parser.parse_args(["gate", "--base", "HEAD"])
    apply(args)
    assert args.commit_url == "https://github.com/o/r/commit/{sha}"
    args = parser.parse_args(["gate", "--base", "HEAD", "--commit-url", "https://gitlab.com/o/r/-/commit/{sha}"])
    apply(args)
    assert args.commit_url == "https://gitlab.com/o/r/-/commit/{sha}"


def test_two_configs_in_one_folder_are_refused(project, capsys):
    config_table(project, 'backends = ["autograd"]\n')
    config_table(project, 'backends = ["jax.jit"]\n', name="ttfg.toml")
    assert main(["config"]) == 2
    assert "both ttfg.toml and pyproject.toml" in capsys.readouterr().err


def test_a_config_above_the_git_root_is_not_this_projects(project, capsys):
    (project.parent / "ttfg.toml").write_text('models = ["nope"]\n')
    assert main(["config"]) == 0
    assert "none found" in capsys.readouterr().out


@pytest.mark.slow
def test_run_without_out_writes_to_the_configured_folder_and_show_prints_it(project, capsys):
    config_table(project, 'models = ["resnet15:blocks=2"]\nbackends = ["autograd"]\noutput = "measured"\n')
    os.chdir(project / "src")  # the config's folder, not the current one, anchors "output"
    assert main(["run", "--repeat", "1"]) == 0
    out = "".join(capsys.readouterr().out.split())  # the console wraps long paths
    saved = list((project / "measured").glob("run-*.json"))
    assert len(saved) == 1 and f"results:{saved[0]}" in out and "no--out" in out
    assert main(["show", str(saved[0])]) == 0
    shown = capsys.readouterr().out
    assert "autograd" in shown and "1/1" in shown
    assert main(["show", str(project / "pyproject.toml")]) == 2


def test_init_writes_the_files_a_project_needs_and_refuses_to_overwrite(project, capsys):
    assert main(["init", *REQ]) == 0
    out = capsys.readouterr().out
    for name in ("ttfg.toml", "asv.conf.json", ".ttfg/ttfg_suites/ttfg.py", ".github/workflows/ttfg-perf-gate.yml",
                 ".github/workflows/ttfg-trend.yml", "src/proj/ttfg_cases.py"):
        assert (project / name).is_file() and name in out
    assert "ttfg run" in out and "ttfg gate --base HEAD~1" in out and "pip install -e ." in out
    # The starter's entry point, appended, and the config names its function case.
    import tomllib

    pyproject = tomllib.loads((project / "pyproject.toml").read_text())
    assert pyproject["project"]["entry-points"] == {"ttfg.functions": {"proj_loss": "proj.ttfg_cases:case"}}
    config = tomllib.loads((project / "ttfg.toml").read_text())
    assert config["models"] == ["proj_loss"] and config["backends"] == ["function"]
    # asv reads the config as asv 0.6.6 does; it builds this project and installs ttfg with it.
    from asv import util

    conf = util.load_json(str(project / "asv.conf.json"), js_comments=True)
    assert conf["project"] == "proj" and conf["benchmark_dir"] == ".ttfg/ttfg_suites" and conf["branches"] == ["main"]
    assert "--no-deps" in conf["build_command"][0] and "{wheel_file}" in conf["install_command"][0]
    assert "ttfg.history.asv_tracks import *" in (project / ".ttfg" / "ttfg_suites" / "ttfg.py").read_text()
    # The workflows parse and gate from the config; a second init refuses, writing nothing.
    import yaml

    gate = yaml.safe_load((project / ".github/workflows/ttfg-perf-gate.yml").read_text())
    runs = " ".join(step.get("run", "") for step in gate["jobs"]["gate"]["steps"])
    assert "ttfg gate --base" in runs and "pip install -e ." in runs
    before = (project / "pyproject.toml").read_text()
    assert main(["init", *REQ]) == 2
    assert "would overwrite asv.conf.json" in capsys.readouterr().err
    assert (project / "pyproject.toml").read_text() == before
    assert main(["init", "--force", *REQ]) == 0  # the plugin is declared now: no second starter, no second append
    assert (project / "pyproject.toml").read_text() == before


def test_the_starter_plugin_passes_check(project, tmp_path):
    """What ``init --starter backend`` writes is a working plugin: installed, ttfg finds its model and backend and
    checks them."""
    import sys

    from .user_project import layered_venv

    assert main(["init", "--starter", "backend", *REQ]) == 0
    python = layered_venv(tmp_path / "venv")
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "-e",
                    str(project)], check=True, capture_output=True, timeout=300)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([str(python), "-m", "ttfg", "check"], cwd=project, env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "proj.autograd  ok" in out.stdout, out.stdout
    assert sys.executable != str(python)


def test_init_refuses_outside_git_and_outside_a_python_project(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert main(["init", *REQ]) == 2
    assert "not a git repository" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pyproject.toml"]
    (tmp_path / "pyproject.toml").unlink()
    GitRepo.init(tmp_path)
    assert main(["init", *REQ]) == 2
    assert "not a Python project: no pyproject.toml" in capsys.readouterr().err
    (tmp_path / "pyproject.toml").write_text('[tool.black]\nline-length = 100\n')
    assert main(["init", *REQ]) == 2
    assert "no [project] table" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == [".git", "pyproject.toml"]


def test_init_in_the_example_keeps_its_own_plugins(tmp_path, capsys):
    made = make_repository(tmp_path)
    assert main(["init", "--repo", str(made["repo"]), *REQ]) == 0
    out = capsys.readouterr().out
    assert "flaxlab_resnet x flaxlab.nnx (the project's own plugins)" in " ".join(out.split())
    assert not (made["repo"] / "src" / "flaxlab" / "ttfg_plugin.py").exists()


def test_gate_repo_without_a_plugin_is_refused_before_any_work(project, tmp_path, capsys):
    assert main(["gate", "--base", "HEAD", "--repo", str(project), "--out-dir", str(tmp_path / "g")]) == 2
    err = capsys.readouterr().err
    assert "declares no ttfg plugin" in err and "ttfg init" in err
    assert not (tmp_path / "g").exists()
    # The command it advises works as written (for a monorepo's subfolder too, see test_init_fits).
    import re
    import shlex

    advised = shlex.split(re.search(r"`ttfg (init [^`]*)`", " ".join(err.split())).group(1))
    assert main([*advised, *REQ]) == 0


def test_asv_record_gets_the_configs_selection(project, monkeypatch):
    """The asv suite reads TTFG_ASV_*; the config fills them for `ttfg asv record` (a set variable wins)."""
    from ttfg.cli import build_parser
    from ttfg.cli.config import apply

    config_table(project, 'models = ["resnet15:blocks=2"]\nbackends = ["autograd", "torch.eager"]\n')
    # Empty counts as unset, and monkeypatch puts back what was there before: the value apply() writes
    # must not leak into later tests on this worker (a delenv of an absent variable records nothing to
    # undo, so TTFG_ASV_MODELS=resnet15:blocks=2 once reached the example project's asv test).
    monkeypatch.setenv("TTFG_ASV_MODELS", "")
    monkeypatch.setenv("TTFG_ASV_BACKENDS", "jax.jit")
    parser = build_parser()
    apply(parser.parse_args(["asv", "record", "HEAD"]))
    assert os.environ["TTFG_ASV_MODELS"] == "resnet15:blocks=2" and os.environ["TTFG_ASV_BACKENDS"] == "jax.jit"


def test_gate_json_not_a_results_file_in_show(tmp_path, capsys):
    bad = tmp_path / "gate.json"
    bad.write_text(json.dumps({"format": "ttfg-gate", "version": 1}))
    assert main(["show", str(bad)]) == 2
    assert str(bad) in capsys.readouterr().err


def test_install_path_names_the_project_folder_inside_the_repository(tmp_path):
    """``install-path`` (relative to the config's folder) is what the gate, confirm and asv record install;
    a folder outside the repository, or one with no project, is refused naming the key."""
    import argparse

    from ttfg.cli.config import project_dir
    from ttfg.project import config as project_config

    repo = tmp_path / "mono"
    (repo / "python").mkdir(parents=True)
    GitRepo.init(repo)
    (repo / "python" / "pyproject.toml").write_text('[project]\nname = "lab"\nversion = "1"\n\n[tool.ttfg]\n')
    # A pyproject.toml with [tool.ttfg] in the subfolder: its own folder is the project.
    args = argparse.Namespace(project_config=project_config.load(repo / "python"))
    assert project_dir(args, repo / "python") == "python"
    # A ttfg.toml at the root naming the subfolder; the same from the root; and the root itself.
    (repo / "ttfg.toml").write_text('install-path = "python"\n')
    args.project_config = project_config.read(repo / "ttfg.toml")
    assert project_dir(args, repo) == "python"
    (repo / "ttfg.toml").write_text('install-path = "."\n')
    args.project_config = project_config.read(repo / "ttfg.toml")
    with pytest.raises(project_config.ConfigError, match=r"ttfg.toml:install-path: .* holds no Python project"):
        project_dir(args, repo)
    (repo / "ttfg.toml").write_text('install-path = "../elsewhere"\n')
    args.project_config = project_config.read(repo / "ttfg.toml")
    with pytest.raises(project_config.ConfigError, match="outside the git repository"):
        project_dir(args, repo)
    (repo / "ttfg.toml").write_text('install-path = "/abs"\n')
    with pytest.raises(project_config.ConfigError, match="relative to the config's folder"):
        project_config.read(repo / "ttfg.toml")
    # No config: each command keeps its own default (the repository's root).
    assert project_dir(argparse.Namespace(project_config=project_config.Config()), repo) is None


def test_config_checks_install_path_and_output(project, capsys):
    """``ttfg config`` shows ``install-path`` and names what is wrong with it (exit 2): outside the
    repository, a file, a missing folder; ``output`` naming a file is refused the same way."""
    (project / "afile").write_text("x")
    (project / "empty").mkdir()
    for value, words in (("../outside", "outside the git repository"), ("afile", "is a file, not a folder"),
                         ("missing", "does not exist"), ("empty", "holds no Python project")):
        config_table(project, f'install-path = "{value}"\n')
        assert main(["config"]) == 2, value
        err = " ".join(capsys.readouterr().err.split())
        assert "tool.ttfg.install-path" in err.replace(" ", "") and words in err, err
    config_table(project, 'install-path = "."\n')
    assert main(["config"]) == 0
    assert "install-path" in capsys.readouterr().out
    config_table(project, 'output = "afile"\n')
    assert main(["config"]) == 2
    assert "is a file; output names the folder" in " ".join(capsys.readouterr().err.split())


def test_a_ttfg_requirement_that_names_no_ttfg_is_refused(project, capsys):
    config_table(project, 'ttfg-requirement = "numpy>=2"\n')
    assert main(["config"]) == 2
    assert "ttfg-requirement = 'numpy>=2'" in capsys.readouterr().err


def test_config_budget_flag_is_checked(project, capsys):
    assert main(["config", "--budget", "ten"]) == 2
    err = capsys.readouterr().err
    assert "--budget 'ten'" in err and "not a positive duration" in err


@pytest.mark.parametrize("header", ["[tool.ttfg", "[ tool.ttfg ]]", "[tool . ttfg]\nbudget = ", "[[tool.ttfg]"])
def test_a_malformed_tool_ttfg_header_is_an_error_naming_the_line(project, capsys, header):
    base = (project / "pyproject.toml").read_text()
    (project / "pyproject.toml").write_text(base + f"\n{header}\nmodels = [\"resnet15\"]\n")
    assert main(["config"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "pyproject.toml: not valid TOML" in err and "(at line" in err, err
    assert "none found" not in err
