"""Environments built with uv and cached, the build cache's rules, and what revisions declare.

One real environment is built (HIPS autograd 1.7.0 and numpy, plus ttfg's probe tools:
a few seconds from a warm uv cache) and a real probe runs in it; the cache's rules
(half-built entries, one builder at a time, interruptions, unwritable folders) are tested
on the cache itself with builders that fail on purpose.
"""

from __future__ import annotations

import re

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ttfg.errors import UsageError
from ttfg.provision import cache, env_cache, environments
from ttfg.measure.cases import select
from ttfg.measure.runner import RunSettings, run_sample
from ttfg.provision.target import ProbeTarget
from ttfg.provision.sources import self_overlay

from .conftest import run_ttfg


@pytest.fixture
def ttfg_cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("TTFG_CACHE_DIR", str(folder))
    return folder


@pytest.fixture(scope="module")
def shared_folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("env-cache")


@pytest.fixture
def shared_cache(shared_folder, monkeypatch) -> Path:
    """One cache for the tests that use the real autograd 1.7.0 environment: it is built once here."""
    monkeypatch.setenv("TTFG_CACHE_DIR", str(shared_folder))
    return shared_folder


OLD = "old=autograd==1.7.0 scipy"  # ttfg's autograd backend uses autograd.scipy


# ---------------------------------------------------------------------------- requests


@pytest.mark.parametrize("text, name, requirements", [
    ("current", "current", None),
    ("jax==0.4.38 jaxlib==0.4.38", "jax-0.4.38", ("jax==0.4.38", "jaxlib==0.4.38")),
    ("old=jax==0.4.38 jaxlib==0.4.38", "old", ("jax==0.4.38", "jaxlib==0.4.38")),
    ("autograd>=1.7,<1.8", "autograd", ("autograd>=1.7,<1.8",)),
    # PEP 508 allows spaces around operators and commas: one requirement each, as pip reads them.
    ("autograd == 1.7.0", "autograd-1.7.0", ("autograd==1.7.0",)),
    ("old=numpy >= 1.26, < 3 autograd==1.7.0", "old", ("numpy>=1.26,<3", "autograd==1.7.0")),
    ('autograd==1.7.0; python_version >= "3"', "autograd-1.7.0", ('autograd==1.7.0; python_version >= "3"',)),
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
    """The file is read by uv, includes and all, and stands for what it resolves to."""
    (tmp_path / "base.txt").write_text("numpy==2.4.6\n")
    path = tmp_path / "reqs.txt"
    path.write_text("# pinned\nautograd == 1.7.0  # the old one\n\n-r base.txt\n")
    request = environments.parse(f"old=@{path}")
    assert request.name == "old" and request.requirements == ("autograd==1.7.0", "numpy==2.4.6")
    assert request.origin == str(path)
    assert environments.parse(f"@{path}").name == "reqs"  # unnamed: the file's stem


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
def test_an_environment_is_built_once_reused_and_runs_a_probe(shared_cache):
    request = environments.parse(OLD)
    env = environments.build(request)
    assert env.version("autograd") == "1.7.0" and env.version("numpy") and env.version("scipy")
    assert Path(env.python).is_file() and env.version("memray")  # the probe tools are in
    again = environments.build(request)
    assert again.cached and again.key == env.key and again.seconds < 1.0
    assert [e.key for e in env_cache.cached()] == [env.key]
    # A real probe in it: numpy, autograd 1.7.0 and the running ttfg (from its overlay), nothing else.
    case = select(["resnet15:blocks=2"], ["autograd"], None)[0][0]
    run = RunSettings(repeat=1, timeout_s=120, target=ProbeTarget.of(env, overlay=self_overlay()))
    sample = run_sample(case, "timing", "cold", 0, run)
    assert sample.ok, sample.error
    assert sample.counters["autograd_primitives"] > 0


def test_prune_removes_by_name_or_age_and_lists_what_it_removed(ttfg_cache):
    import json

    for key, name in (("k-a", "a"), ("k-b", "b")):
        cache.get("envs", key, lambda folder, name=name: (folder / "ttfg-env.json").write_text(
            json.dumps({"name": name, "packages": {"autograd": "1.7.0"}, "interpreter": "3.11"})))
    assert sorted(e.name for e in env_cache.cached(sizes=False)) == ["a", "b"]
    assert [e.name for e in env_cache.prune(["a"])] == ["a"]
    assert env_cache.prune(older_than_s=3600) == []  # b is seconds old
    assert [e.name for e in env_cache.prune()] == ["b"] and env_cache.cached() == []


def test_prune_filters_all_hold_and_an_environment_in_use_is_kept(ttfg_cache):
    import json
    import subprocess
    import sys

    for key, name in (("k-a", "a"), ("k-b", "b")):
        cache.get("envs", key, lambda folder, name=name: (folder / "ttfg-env.json").write_text(
            json.dumps({"name": name, "packages": {}, "interpreter": "3.11"})))
    assert env_cache.prune(["a"], older_than_s=3600) == []  # a, and only if older than an hour: it is not
    # Another process uses b (a running gate): pruning everything keeps it, and says so.
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from pathlib import Path; "
                               "from ttfg.provision import cache; cache.hold(Path(sys.argv[1])); print('held', flush=True); "
                               "time.sleep(60)", str(ttfg_cache / "envs" / "k-b")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        notes = []
        assert [e.name for e in env_cache.prune(on_note=notes.append)] == ["a"]
        assert notes and "kept b" in notes[0] and "running" in notes[0]
    finally:
        holder.kill()
        holder.wait()
    assert [e.name for e in env_cache.prune()] == ["b"]


@pytest.mark.slow
def test_a_broken_cached_environment_is_listed_and_built_again(shared_cache):
    """An emptied ``ttfg-env.json`` hid the entry and failed every build with a bare JSONDecodeError; a
    truncated lock built an environment without what it was asked for. Neither is trusted now."""
    request = environments.parse(OLD)
    env = environments.build(request)
    (env.path / "ttfg-env.json").write_text("")
    listed = {e.key: e for e in env_cache.cached(sizes=False)}
    assert listed[env.key].problem and "ttfg-env.json cannot be read" in listed[env.key].problem
    notes = []
    again = environments.build(request, on_note=notes.append)
    assert again.version("scipy") and any("broken" in n for n in notes)
    assert env_cache.cached(sizes=False)[0].problem is None
    # A cached lock cut short (scipy gone) is resolved again, not built without scipy.
    for lock in (shared_cache / "locks").glob("*.txt"):
        lock.write_text("\n".join(line for line in lock.read_text().splitlines() if not line.startswith("scipy")))
    assert environments.build(request).version("scipy")


@pytest.mark.slow
def test_resolver_refusals_quote_the_resolver(ttfg_cache):
    with pytest.raises(environments.EnvError, match=r"cannot resolve autograd==99\.0(.|\n)*no version of autograd"):
        environments.build(environments.parse("autograd==99.0"))
    with pytest.raises(environments.EnvError, match="conflicts with ttfg's own needs"):
        environments.build(environments.parse("pyinstrument==4.6.0"))
    assert env_cache.cached() == []


@pytest.mark.slow
def test_no_network_is_said_and_nothing_is_kept(ttfg_cache, tmp_path, monkeypatch):
    """A registry that cannot be reached (a closed port; an empty uv cache, so nothing resolves from it)."""
    monkeypatch.setenv("UV_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv"))
    monkeypatch.setenv("PIP_FIND_LINKS", "")
    monkeypatch.setenv("UV_HTTP_RETRIES", "0")  # the same message, without uv's three retries' 5 s of backoff
    with pytest.raises(environments.EnvError) as refused:
        environments.build(environments.parse("autograd==1.7.0"))
    # uv's own words first, then what the host did: it does not answer, so the registry cannot be reached.
    assert re.search(r"cannot resolve autograd==1\.7\.0:\n.*(error|Error)", str(refused.value)), refused.value
    assert str(refused.value).endswith("(127.0.0.1:9 does not answer: the package registry cannot be reached)")
    assert env_cache.cached() == []


@pytest.mark.slow
def test_an_environment_that_cannot_import_its_framework_is_not_kept(ttfg_cache, monkeypatch):
    monkeypatch.setitem(environments.FRAMEWORK_MODULES, "autograd", "autograd_is_not_a_module")
    with pytest.raises(environments.EnvError, match="builds but cannot import autograd_is_not_a_module"):
        environments.build(environments.parse("autograd==1.7.0"))
    assert env_cache.cached() == []


@pytest.mark.slow
def test_env_command_lists_builds_and_prunes(shared_cache):
    env = {"TTFG_CACHE_DIR": str(shared_cache)}
    out = run_ttfg("env", "build", OLD, env=env)
    assert out.returncode == 0 and "autograd 1.7.0" in out.stdout, out.stderr
    out = run_ttfg("env", "list", env=env)
    assert out.returncode == 0 and "old" in out.stdout and "autograd 1.7.0" in out.stdout
    out = run_ttfg("env", "build", "autograd==99.0", env=env)
    assert out.returncode == 2 and "cannot resolve autograd==99.0" in out.stderr
    out = run_ttfg("env", "prune", "no-such-env", env=env)  # a typo is not "nothing matched", exit 0
    assert out.returncode == 2 and "no cached environment is named 'no-such-env'" in out.stdout + out.stderr
    assert run_ttfg("env", "prune", env=env).returncode == 2  # says what to remove


# ---------------------------------------------------------------------------- the environment axis


def test_a_case_names_its_environment_in_its_id():
    from ttfg.measure.cases import Case
    from ttfg.present.terminal import case_cells, case_layout

    case = Case("resnet15", "jax.jit", (("params", "args"), ("chain", "unrolled")))
    assert case.id == "resnet15/jax.jit/params=args,chain=unrolled" and case.env is None
    old = case.in_env("jax-0.4.38")
    assert old.id == case.id + "/jax-0.4.38" and old.plain_id == case.id
    assert Case.from_id(old.id) == old and Case.from_json(old.to_json()) == old
    assert "env" not in case.to_json()  # an old probe reads a case without an environment unchanged
    varying, fixed = case_layout([old.id, case.in_env("current").id])
    assert varying == ("env",) and "model resnet15" in fixed
    assert case_cells(old.id, varying) == ["jax-0.4.38"]
    assert "env jax-0.4.38" in case_layout([old.id])[1]


@pytest.mark.slow
@pytest.mark.full  # a real gate/run of tens of seconds: make test-all and CI run it
def test_run_over_two_environments_then_compare_only_when_asked(shared_cache, tmp_path):
    env = {"TTFG_CACHE_DIR": str(shared_cache)}
    selection = ("--model", "resnet15:blocks=2", "--backend", "autograd", "--repeat", "2")
    out = run_ttfg("run", *selection, "--env", "current", "--env", OLD,
                   "--out", str(tmp_path / "both.json"), env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    from ttfg.results import record

    both = record.load(tmp_path / "both.json")
    ids = sorted(c.id for c in both.cases)
    assert ids == ["resnet15:blocks=2/autograd/params=args,chain=unrolled/current",
                   "resnet15:blocks=2/autograd/params=args,chain=unrolled/old"]
    assert both.environment["envs"]["old"]["versions"]["autograd"] == "1.7.0"
    assert "current" in out.stdout and "old" in out.stdout  # the env column
    for name in ("old", "current"):
        spec = OLD if name == "old" else "current"
        assert run_ttfg("run", *selection, "--env", spec, "--out", str(tmp_path / f"{name}.json"),
                        env=env).returncode == 0
    refused = run_ttfg("compare", str(tmp_path / "old.json"), str(tmp_path / "current.json"), env=env)
    assert refused.returncode == 2 and "--across-envs" in refused.stdout + refused.stderr
    paired = run_ttfg("compare", str(tmp_path / "old.json"), str(tmp_path / "current.json"), "--across-envs",
                      "--metric", "counters.*", env=env)
    assert paired.returncode == 0 and "autograd_primitives" in paired.stdout, paired.stdout + paired.stderr
    # Environments are their contents. A file with two environments compared with itself across
    # environments would pair old with current and report a difference from itself: refused.
    itself = run_ttfg("compare", str(tmp_path / "both.json"), str(tmp_path / "both.json"), "--across-envs",
                      "--metric", "counters.*", env=env)
    assert itself.returncode == 2 and "in 2 environments (current, old)" in itself.stdout + itself.stderr
    # One name, other packages: refused naming the package, not compared as "old" against "old".
    doc = json.loads((tmp_path / "old.json").read_text())
    doc["environment"]["envs"]["old"]["packages"]["autograd"] = "1.9.1"
    (tmp_path / "other.json").write_text(json.dumps(doc))
    renamed = run_ttfg("compare", str(tmp_path / "old.json"), str(tmp_path / "other.json"), "--metric", "counters.*",
                       env=env)
    assert renamed.returncode == 2 and "autograd 1.7.0 -> 1.9.1" in renamed.stdout + renamed.stderr
    # The single environment's own packages are what the file records, not this interpreter's.
    assert record.load(tmp_path / "old.json").environment["packages"]["autograd"] == "1.7.0"


def test_an_upgrade_gates_summary_names_both_environments():
    """One revision on both sides: "HEAD vs HEAD" alone would hide what was compared."""
    from ttfg.present.gate_views import environments_note

    base = {"name": "jax-0.4.38", "key": "k1", "versions": {"jax": "0.4.38", "jaxlib": "0.4.38", "torch": None,
                                                          "numpy": "2.4.6"}}
    head = {"name": "jax-0.10.2", "key": "k2", "versions": {"jax": "0.10.2", "jaxlib": "0.10.2", "torch": None,
                                                          "numpy": "2.4.6"}}
    assert environments_note({"base": base, "head": head}) == (
        "Environments: base ran in jax-0.4.38 (jax 0.4.38, jaxlib 0.4.38), head in jax-0.10.2 (jax 0.10.2, "
        "jaxlib 0.10.2).")
    assert environments_note({"base": base, "head": dict(base)}) is None
    assert environments_note({"changed": []}) is None


def test_two_names_for_one_environment_are_refused():
    """``study env`` and ``run --env`` with two names for the same packages would measure one thing twice."""
    def env(name, autograd):
        return environments.Environment(name, "/py", {"autograd": autograd, "numpy": "2.4.6"}, "3.11.7", key="k")

    environments.check_distinct({"old": env("old", "1.7.0"), "new": env("new", "1.9.1")})
    with pytest.raises(UsageError, match="old and again are the same environment"):
        environments.check_distinct({"old": env("old", "1.7.0"), "again": env("again", "1.7.0")})


def test_a_dependency_bump_names_the_package_that_changed():
    """A numpy bump read as "torch 2.13.0 vs torch 2.13.0" when only the frameworks were named."""
    from ttfg.present.gate_views import environments_note

    base = {"name": "base-1", "key": "k1", "versions": {"torch": "2.13.0", "numpy": "2.4.6"}}
    head = {"name": "head-2", "key": "k2", "versions": {"torch": "2.13.0", "numpy": "2.2.6"}}
    note = environments_note({"base": base, "head": head, "differs": ["numpy 2.4.6 -> 2.2.6"]})
    assert note.endswith("packages that differ: numpy 2.4.6 -> 2.2.6.")


@pytest.mark.full  # a built environment and a run in it: make test-all and CI run it
def test_a_librarys_plugin_runs_inside_a_built_environment(shared_cache, plugins, tmp_path):
    """``run --env`` ran a built environment with ttfg on its path and nothing else: a library's own backend
    and model were "unknown" there. Now the library's packages and entry points go with it."""
    out = run_ttfg("run", "--model", "test_mlp", "--backend", "test.autograd", "--repeat", "1", "--env", OLD,
                   "--out", str(tmp_path / "r.json"), env={"TTFG_CACHE_DIR": str(shared_cache)})
    assert out.returncode == 0, out.stdout + out.stderr
    doc = json.loads((tmp_path / "r.json").read_text())
    (case,) = [c for c in doc["cases"] if not c.get("skipped")]
    assert case["id"].endswith("/old") and case["samples"][0]["ok"], case["samples"][0].get("error")
    assert doc["environment"]["envs"]["old"]["versions"]["autograd"] == "1.7.0"


def test_installed_revisions_can_be_pruned(ttfg_cache):
    """The gate's source cache (one installed project per commit and folder) is cleared by
    ``env prune --sources``; names are refused there (they are environments')."""
    cache.get("sources", "abc-py311-r1", lambda folder: (folder / "x").write_text("1"))
    out = run_ttfg("env", "prune", "--sources", "old", env={"TTFG_CACHE_DIR": str(ttfg_cache)})
    assert out.returncode == 2 and "--sources" in out.stdout + out.stderr
    out = run_ttfg("env", "prune", "--sources", env={"TTFG_CACHE_DIR": str(ttfg_cache)})
    assert out.returncode == 0 and "removed installed revision abc-py311-r1" in out.stdout
    assert cache.entries("sources") == []
