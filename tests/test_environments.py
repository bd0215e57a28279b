"""Environments built with uv and cached, the build cache's rules, and what revisions declare.

One real environment is built (HIPS autograd 1.7.0 and numpy, plus ttfg's probe tools:
a few seconds from a warm uv cache) and a real probe runs in it; the cache's rules
(half-built entries, one builder at a time, interruptions, unwritable folders) are tested
on the cache itself with builders that fail on purpose.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ttfg.errors import UsageError
from ttfg.measure import cache, environments
from ttfg.measure.cases import select
from ttfg.measure.dependencies import buildable, declared
from ttfg.measure.runner import RunSettings, run_sample
from ttfg.measure.sources import self_overlay

from .conftest import run_ttfg


@pytest.fixture
def ttfg_cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("TTFG_CACHE_DIR", str(folder))
    return folder


# ---------------------------------------------------------------------------- requests


@pytest.mark.parametrize("text, name, requirements", [
    ("current", "current", None),
    ("jax==0.4.38 jaxlib==0.4.38", "jax-0.4.38", ("jax==0.4.38", "jaxlib==0.4.38")),
    ("old=jax==0.4.38 jaxlib==0.4.38", "old", ("jax==0.4.38", "jaxlib==0.4.38")),
    ("autograd>=1.7,<1.8", "autograd", ("autograd>=1.7,<1.8",)),
])
def test_requests_parse(text, name, requirements):
    request = environments.parse(text)
    assert (request.name, request.requirements) == (name, requirements)


@pytest.mark.parametrize("text, says", [
    ("", "no requirement"), ("x=", "no requirement"), ("-r reqs.txt", "pip option"), ("jax=0.4", "is a version"),
    ("current=jax==1", "choose another name"), ("jax===", "not a requirement"), ("old=@/no/such/file", "cannot read"),
])
def test_bad_requests_are_refused_naming_the_problem(text, says):
    with pytest.raises(UsageError, match=says):
        environments.parse(text)


def test_a_request_from_a_requirements_file(tmp_path):
    path = tmp_path / "reqs.txt"
    path.write_text("# pinned\nautograd==1.7.0  # the old one\n\nnumpy==2.4.6\n")
    request = environments.parse(f"old=@{path}")
    assert request.name == "old" and request.requirements == ("autograd==1.7.0", "numpy==2.4.6")
    assert request.origin == str(path)


# ---------------------------------------------------------------------------- the cache's rules


def test_a_half_built_entry_is_never_used_and_is_rebuilt(ttfg_cache):
    calls = []

    def build(folder):
        calls.append(folder)
        (folder / "made").write_text("ok")

    leftover = ttfg_cache / "things" / "k1"
    leftover.mkdir(parents=True)
    (leftover / "half").write_text("a build that was killed")  # no marker: not finished
    entry = cache.get("things", "k1", build)
    assert not entry.cached and len(calls) == 1 and (entry.path / "made").exists()
    assert not (entry.path / "half").exists()
    assert cache.get("things", "k1", build).cached and len(calls) == 1


@pytest.mark.parametrize("error", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_a_failed_or_interrupted_build_leaves_nothing(ttfg_cache, error):
    def build(folder):
        (folder / "partial").write_text("x" * 1000)
        raise error

    with pytest.raises(type(error)):
        cache.get("things", "k2", build)
    assert not (ttfg_cache / "things" / "k2").exists()
    assert cache.entries("things") == []


def test_two_builders_of_one_key_build_once(ttfg_cache):
    calls, seen = [], []

    def build(folder):
        calls.append(1)
        time.sleep(0.5)
        (folder / "made").write_text("ok")

    def use():
        seen.append(cache.get("things", "k3", build))

    threads = [threading.Thread(target=use) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and sorted(e.cached for e in seen) == [False, True]


def test_an_unwritable_cache_folder_is_named(tmp_path, monkeypatch):
    if os.geteuid() == 0:
        blocked = tmp_path / "file"  # root writes anywhere: a file where the folder should be
        blocked.write_text("")
        monkeypatch.setenv("TTFG_CACHE_DIR", str(blocked / "sub"))
    else:
        blocked = tmp_path / "ro"
        blocked.mkdir(mode=0o500)
        monkeypatch.setenv("TTFG_CACHE_DIR", str(blocked))
    with pytest.raises(cache.CacheError, match="cannot be written.*TTFG_CACHE_DIR"):
        cache.get("things", "k4", lambda folder: None)


# ---------------------------------------------------------------------------- real environments


@pytest.mark.slow
def test_an_environment_is_built_once_reused_and_runs_a_probe(ttfg_cache):
    request = environments.parse("autograd==1.7.0 scipy")  # ttfg's autograd backend uses autograd.scipy
    env = environments.build(request)
    assert not env.cached and env.version("autograd") == "1.7.0" and env.version("numpy") and env.version("scipy")
    assert Path(env.python).is_file() and env.version("memray")  # the probe tools are in
    again = environments.build(request)
    assert again.cached and again.key == env.key and again.seconds < 1.0
    assert [e.key for e in environments.cached()] == [env.key]
    # A real probe in it: numpy, autograd 1.7.0 and the running ttfg (from its overlay), nothing else.
    case = select(["resnet15:blocks=2"], ["autograd"], None)[0][0]
    run = RunSettings(repeat=1, timeout_s=120, python=env.python,
                      extra_env={"PYTHONPATH": str(self_overlay())})
    sample = run_sample(case, "timing", "cold", 0, run)
    assert sample.ok, sample.error
    assert sample.counters["autograd_primitives"] > 0
    removed = environments.prune([env.name])
    assert [e.key for e in removed] == [env.key] and environments.cached() == []


@pytest.mark.slow
def test_resolver_refusals_quote_the_resolver(ttfg_cache):
    with pytest.raises(environments.EnvError, match=r"cannot resolve autograd==99\.0(.|\n)*no version of autograd"):
        environments.build(environments.parse("autograd==99.0"))
    with pytest.raises(environments.EnvError, match="conflicts with ttfg's own needs"):
        environments.build(environments.parse("pyinstrument==4.6.0"))
    assert environments.cached() == []


@pytest.mark.slow
def test_an_environment_that_cannot_import_its_framework_is_not_kept(ttfg_cache, monkeypatch):
    monkeypatch.setitem(environments.FRAMEWORK_MODULES, "autograd", "autograd_is_not_a_module")
    with pytest.raises(environments.EnvError, match="builds but cannot import autograd_is_not_a_module"):
        environments.build(environments.parse("autograd==1.7.0"))
    assert environments.cached() == []


@pytest.mark.slow
def test_env_command_lists_builds_and_prunes(ttfg_cache):
    env = {"TTFG_CACHE_DIR": str(ttfg_cache)}
    out = run_ttfg("env", "build", "old=autograd==1.7.0", env=env)
    assert out.returncode == 0 and "autograd 1.7.0" in out.stdout, out.stderr
    out = run_ttfg("env", "list", env=env)
    assert out.returncode == 0 and "old" in out.stdout and "autograd 1.7.0" in out.stdout
    out = run_ttfg("env", "build", "autograd==99.0", env=env)
    assert out.returncode == 2 and "cannot resolve autograd==99.0" in out.stderr
    out = run_ttfg("env", "prune", "old", env=env)
    assert out.returncode == 0 and "removed old" in out.stdout
    assert run_ttfg("env", "prune", env=env).returncode == 2


# ---------------------------------------------------------------------------- declared dependencies


def test_what_a_revision_declares(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for tree in (a, b):
        tree.mkdir()
        (tree / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "1"\ndependencies = ["autograd>=1.7"]\n'
                                             '[tool.other]\nx = 1\n')
    assert declared(a).requirements == ("autograd>=1.7",) and declared(a).source == "pyproject.toml"
    (b / "pyproject.toml").write_text((b / "pyproject.toml").read_text().replace("x = 1", "x = 2"))
    assert declared(a).differs(declared(b)) == []  # other tables are not dependencies
    (b / "requirements.txt").write_text("-e .\nautograd==1.7.0\n")
    assert declared(b).requirements == ("autograd==1.7.0",) and declared(a).differs(declared(b)) == ["requirements.txt"]
    (b / "constraints.txt").write_text("autograd==1.7.0\nnumpy==2.4.6\n# a comment\nscipy>=1\n")
    assert declared(b).requirements == ("autograd==1.7.0", "numpy==2.4.6") and declared(b).source == "constraints.txt"
    (b / "uv.lock").write_text("version = 1\n")
    assert "uv.lock" in buildable(declared(b), declared(a).differs(declared(b)))
    assert buildable(declared(b), ["constraints.txt"]) is None
