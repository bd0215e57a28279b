"""asv integration: config pins, the thin suites, and real asv history for two commits.

The slow test runs the real asv 0.6.6 in a temporary clone (no reliance on the home
folder's ~/.asv-machine.json: HOME points into tmp_path) and reads its output back with
ttfg.history.asv_results; nothing here is hand-written asv JSON.
"""

from __future__ import annotations

import importlib
import inspect
import itertools
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ttfg import metrics
from ttfg.history import asv_suite as asv_bench, asv_results
from ttfg.results.record import CaseResult, Sample

from .conftest import GitRepo, copy_working_tree, git

ROOT = Path(__file__).resolve().parents[1]
SELECTED = [("resnet15", "torch.eager", "params=closure,chain=unrolled"),
            ("resnet15", "autograd", "params=args,chain=unrolled")]
UNSUPPORTED = ("resnet15", "torch.eager", "params=args,chain=unrolled")  # torch.eager has no params=args
UNSELECTED = ("resnet15", "jax.jit", "params=args,chain=unrolled")


def suite_module():
    sys.path.insert(0, str(ROOT))
    try:
        return importlib.import_module("suites.ttfg")
    finally:
        sys.path.remove(str(ROOT))


def tracks():
    module = suite_module()
    return {name: fn for name, fn in vars(module).items() if name.startswith("track_")}


def test_conf_pins_match_constraints_and_default_is_one_environment():
    from asv import util

    conf = util.load_json(str(ROOT / "asv.conf.json"), js_comments=True)
    pins = dict(line.split("==") for line in (ROOT / "constraints.txt").read_text().splitlines()
                if "==" in line and not line.startswith("#"))
    req = conf["matrix"]["req"]
    assert {"torch", "jax", "jaxlib", "autograd"} <= set(req)
    for name, versions in req.items():
        assert versions == [pins[name]], f"asv.conf.json matrix {name} {versions} != constraints.txt {pins[name]}"
    assert conf["repo"] == "." and conf["benchmark_dir"] == "suites"
    assert conf["results_dir"] == "results" and conf["html_dir"] == "reports/asv"
    assert conf["environment_type"] == "virtualenv" and len(conf["pythons"]) == 1
    assert "{build_dir}/constraints.txt" in " ".join(conf["install_command"])


def test_suite_functions_are_one_liners_with_units_and_the_full_matrix():
    found = tracks()
    assert len(found) == len(asv_bench.METRICS)
    used = set()
    for name, fn in found.items():
        body = inspect.getsource(fn).strip().splitlines()
        assert len(body) == 2, f"{name} must stay a one-line call into ttfg.history.asv_suite"
        metric = re.search(r'asv_bench\.value\(cache, "([^"]+)", model, backend, variant\)', body[1]).group(1)
        used.add(metric)
        assert fn.unit == metrics.get(metric).asv_unit, name
        assert fn.param_names == ["model", "backend", "variant"]
        assert fn.params == asv_bench.params()
    assert used == set(asv_bench.METRICS)
    models_, backends, labels = asv_bench.params()
    assert "resnet15" in models_ and "convnext_tiny" in models_ and len(backends) == 7 and len(labels) == 4


def test_value_is_nan_unless_measured_and_median_of_good_samples():
    case = CaseResult("resnet15/jax.jit/params=args,chain=unrolled", "resnet15", "jax.jit", {})
    good = {"kind": "timing", "ok": True, "cache": "cold", "trace_s": 0.1, "lower_s": 0.2, "compile_s": 0.3}
    case.samples = [
        Sample(**good, first_grad_s=1.0, counters={"hlo_ops": 7}),
        Sample(**good, first_grad_s=3.0, counters={"hlo_ops": 7}),
        Sample(**good, first_grad_s=2.0, counters={"hlo_ops": 7}),
        Sample("timing", ok=False, cache="cold", first_grad_s=99.0),
    ]
    assert asv_bench.aggregate(case, "first_grad_s") == 2.0
    assert asv_bench.aggregate(case, "first_grad_compile_s") == pytest.approx(0.6)
    assert asv_bench.aggregate(case, "counters.hlo_ops") == 7
    assert math.isnan(asv_bench.aggregate(case, "alloc_count"))  # no allocation sample
    cache = {"values": {case.id: {"first_grad_s": 2.0, "alloc_count": math.nan}}}
    assert asv_bench.value(cache, "first_grad_s", "resnet15", "jax.jit", "params=args,chain=unrolled") == 2.0
    assert math.isnan(asv_bench.value(cache, "alloc_count", "resnet15", "jax.jit", "params=args,chain=unrolled"))
    assert math.isnan(asv_bench.value(cache, "first_grad_s", "resnet15", "autograd", "params=args,chain=unrolled"))
    with pytest.raises(KeyError):
        asv_bench.value(cache, "no_such_metric", "resnet15", "jax.jit", "params=args,chain=unrolled")
    # With the samples kept by measure(): timings go to asv as its timing shape (asv takes the
    # median and stores every sample with --record-samples); counters stay one number.
    cache["samples"] = {case.id: {"first_grad_s": [1.0, 3.0, 2.0]}}
    cache["values"][case.id]["counters.hlo_ops"] = 7.0
    assert asv_bench.value(cache, "first_grad_s", "resnet15", "jax.jit", "params=args,chain=unrolled") == {
        "samples": [1.0, 3.0, 2.0], "number": 1}
    assert asv_bench.value(cache, "counters.hlo_ops", "resnet15", "jax.jit", "params=args,chain=unrolled") == 7.0
    assert "counters.hlo_ops" not in asv_bench.SAMPLED and "first_grad_s" in asv_bench.SAMPLED


def test_selection_from_env_and_bench_patterns(monkeypatch):
    monkeypatch.setenv("TTFG_ASV_BACKENDS", "torch.eager,autograd")
    monkeypatch.setenv("TTFG_ASV_MODELS", "resnet15,resnet15:blocks=3")
    monkeypatch.setenv("TTFG_ASV_REPEAT", "1")
    monkeypatch.setenv("TTFG_ASV_ALLOCATIONS", "0")
    sel = asv_bench.Selection.from_env()
    assert sel.repeat == 1 and not sel.allocations and sel.backends == ("torch.eager", "autograd")
    assert asv_bench.params()[0] == ["resnet15", "convnext_tiny", "transformer_tiny", "resnet15:blocks=3"]
    patterns = asv_bench.bench_patterns(sel)
    assert len(patterns) == 4
    names = [f"ttfg.track_first_grad_seconds({', '.join(repr(p) for p in combo)})"
             for combo in (*SELECTED, UNSUPPORTED, UNSELECTED)]
    matched = [n for n in names if any(re.search(p, n) for p in patterns)]
    assert matched == names[:2]
    monkeypatch.setenv("TTFG_ASV_REPEAT", "zero")
    with pytest.raises(Exception, match="TTFG_ASV_REPEAT"):
        asv_bench.Selection.from_env()


def test_load_of_an_empty_results_folder(tmp_path):
    frame = asv_results.load(tmp_path / "nothing")
    assert list(frame.columns) == asv_results.COLUMNS and frame.empty


# --- real asv -----------------------------------------------------------------------------


def clone_with_two_commits(dest: Path) -> tuple[str, str]:
    """A clone of this repository whose first commit is the working tree under test, plus one more commit."""
    git(ROOT, "clone", "--quiet", "--no-hardlinks", str(ROOT), str(dest))
    repo = GitRepo(dest).identify()
    copy_working_tree(dest)  # the working tree as it is now, uncommitted edits included
    repo.git("add", "-A")
    if repo.git("status", "--porcelain"):
        repo.commit("working tree under test")
    first = repo.head()
    # asv resolves the configured branches ("main") even for an existing environment; the
    # second commit goes on a PR-like branch (the clone may have main checked out).
    repo.git("checkout", "--quiet", "-B", "pr-under-test")
    repo.git("branch", "--force", "main", first)
    with open(dest / "README.md", "a") as fh:
        fh.write("\nA second commit for the asv history test.\n")
    return first, repo.commit("second commit", stage="tracked")


def run(cmd, cwd, env, timeout=600):
    out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, f"{cmd}\n{out.stdout[-4000:]}\n{out.stderr[-4000:]}"
    return out


def stored(result_file: Path, benchmark: str, combo) -> float:
    data = json.loads(result_file.read_text())
    columns = data["result_columns"]
    row = dict(zip(columns, data["results"][benchmark]))
    names = [", ".join(c) for c in itertools.product(*row["params"])]
    return row["result"][names.index(", ".join(repr(p) for p in combo))]


@pytest.mark.slow
@pytest.mark.full  # a real gate/run of tens of seconds: make test-all and CI run it
def test_asv_history_for_two_commits_then_publish_and_load(tmp_path):
    clone = tmp_path / "clone"
    first, second = clone_with_two_commits(clone)
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith(("TTFG_ASV_", "ASV"))}
    env.update(HOME=str(home), TTFG_ASV_MODELS="resnet15", TTFG_ASV_BACKENDS="torch.eager,autograd",
               TTFG_ASV_REPEAT="1", TTFG_ASV_ALLOCATIONS="0")
    asv = [sys.executable, "-m", "asv"]
    run(asv + ["machine", "--yes", "--machine", "testbox"], clone, env)

    # Commit 1, with plain asv at a checkout of it. -b: the two selected cases, plus one
    # combination torch.eager does not support and one that is not selected (both NaN).
    git(clone, "checkout", "--quiet", first)
    patterns = [re.escape(f"({', '.join(repr(p) for p in combo)})") for combo in (*SELECTED, UNSUPPORTED, UNSELECTED)]
    cmd = asv + ["run", "--environment", f"existing:{sys.executable}", "--set-commit-hash", first,
                 "--machine", "testbox"]
    for pattern in patterns:
        cmd += ["-b", pattern]
    run(cmd, clone, env)
    git(clone, "checkout", "--quiet", "-")

    # Commits 2 and 3, through `ttfg asv record` (a worktree of each, its project installed
    # apart, the same asv run, then asv publish), this time with the allocation process.
    # Commit 3 doubles resnet15's default depth: each commit's own code must be measured.
    edit = clone / "models" / "resnet15.py"
    edit.write_text(edit.read_text().replace("def build(blocks: int = 15,", "def build(blocks: int = 30,"))
    third = GitRepo(clone).commit("third commit: 30 blocks", stage="tracked")
    out = run([sys.executable, "-m", "ttfg", "asv", "record", second, third, "--machine", "testbox"], clone,
              {**env, "TTFG_ASV_ALLOCATIONS": "1"})
    assert f"measuring ttfg installed in" in out.stdout

    results = clone / "results" / "testbox"
    assert (results / "machine.json").exists()  # asv files the machine beside its results
    files = {sha: next(results.glob(f"{sha[:8]}-existing-*.json")) for sha in (first, second)}
    for sha, path in files.items():
        for combo in SELECTED:
            value = stored(path, "ttfg.track_first_grad_seconds", combo)
            assert isinstance(value, float) and math.isfinite(value) and value > 0, (sha, combo, value)
            assert stored(path, "ttfg.track_import_seconds", combo) > 0
    assert math.isnan(stored(files[first], "ttfg.track_first_grad_seconds", UNSUPPORTED))
    assert math.isnan(stored(files[first], "ttfg.track_first_grad_seconds", UNSELECTED))
    assert math.isnan(stored(files[first], "ttfg.track_alloc_count", SELECTED[0]))  # allocations off
    assert stored(files[second], "ttfg.track_alloc_count", SELECTED[0]) > 0
    assert stored(files[second], "ttfg.track_autograd_nodes", SELECTED[0]) > 0
    deeper = stored(next(results.glob(f"{third[:8]}-existing-*.json")), "ttfg.track_autograd_nodes", SELECTED[0])
    assert deeper > stored(files[second], "ttfg.track_autograd_nodes", SELECTED[0]), "each commit's code measured"
    assert (clone / "reports" / "asv" / "index.html").exists()

    everything = asv_results.load(clone / "results")
    assert "testbox" in set(everything["machine"])
    # The repository's own committed history (other machines) rides along in the clone.
    frame = everything[everything["machine"] == "testbox"]
    assert list(frame.columns)[:len(asv_results.COLUMNS)] == asv_results.COLUMNS
    assert {"model", "backend", "variant"} <= set(frame.columns)
    assert set(frame["commit"]) == {first, second, third}
    assert str(frame["date"].dtype).startswith("datetime64") and frame["date"].notna().all()
    fg = frame[(frame["benchmark"] == "ttfg.track_first_grad_seconds") & frame["value"].notna()]
    assert sorted(fg["params"].unique()) == [
        "model=resnet15, backend=autograd, variant=params=args,chain=unrolled",
        "model=resnet15, backend=torch.eager, variant=params=closure,chain=unrolled",
    ]
    assert len(fg) == 6 and (fg["unit"] == "seconds").all() and set(fg["commit"]) == {first, second, third}
    allocs = frame[(frame["benchmark"] == "ttfg.track_alloc_bytes") & frame["value"].notna()]
    assert set(allocs["commit"]) == {second, third} and (allocs["unit"] == "bytes").all()
    # Timings keep their samples when recorded with --record-samples (ttfg asv record passes it): one
    # cold process here, whose value is the median; plain `asv run` above kept the median alone.
    kept = fg.set_index("commit")["samples"]
    assert all(s is None for s in fg[fg["commit"] == first]["samples"])
    assert all(len(s) == 1 and s[0] == v for s, v in zip(fg[fg["commit"] == second]["samples"],
                                                           fg[fg["commit"] == second]["value"])), kept
    counters = frame[(frame["benchmark"] == "ttfg.track_autograd_nodes") & frame["value"].notna()]
    assert all(s is None for s in counters["samples"])  # deterministic: one number
    assert len(asv_results.load(clone / "results", dropna=True)) == everything["value"].notna().sum()
    meta = asv_results.benchmarks(clone / "results")
    assert set(meta["benchmark"]) == {f"ttfg.{name}" for name in tracks()}


def test_every_suite_benchmark_maps_to_the_metric_it_reads():
    """The report reads asv history through the registry's asv_benchmark names; they must match the suites' code."""

    from ttfg.history.points import metric_from_benchmark

    suite = (ROOT / "harness" / "history" / "asv_tracks.py").read_text()
    reads = dict(re.findall(r"def (track_\w+)\(.*?\):\n\s+return asv_bench\.value\(cache, \"([\w.]+)\"", suite))
    assert reads and reads == {m.asv_benchmark: m.name for m in metrics.entries() if m.asv_benchmark}
    assert metric_from_benchmark("ttfg.track_first_grad_seconds", {}) == "first_grad_s"
    assert metric_from_benchmark("ttfg.track_hlo_ops", {}) == "counters.hlo_ops"

