"""The cold-process measurement: phases, failures, timeouts, files, interruption, isolation."""

import json
import signal
import subprocess
import sys
import time

import pytest

from ttfg.results import record
from ttfg.measure.cases import select
from ttfg.results.record import ResultsError
from ttfg.measure.runner import RunSettings, Runner, failed_cases, run_sample
from ttfg.results.io import save

from .conftest import ROOT, interruptible

TINY = "resnet15:blocks=2"
#: The backends this repository ships (plugins may add more).
BUILT_IN = ["jax.jit", "jax.eager", "torch.eager", "torch.func", "torch.compile", "torch.compile.aot_eager", "autograd"]


@pytest.fixture
def broken(plugins):
    """The deliberately failing backends (test.crash, test.hang, ...) of the ttfg-test-backends plugin."""
    return plugins


def one(backend, variant=None, model=TINY):
    cases, _ = select([model], [backend], [variant] if variant else None)
    return cases[0]


@pytest.mark.slow
def test_every_backend_in_a_cold_process_and_phases_add_up(tmp_path):
    """The real path of ``ttfg run``: one cold process per backend on a small model."""
    cases, skipped = select(["resnet15:blocks=1"], BUILT_IN, ["default"])
    assert [c.backend for c in cases] == BUILT_IN and not skipped
    results = Runner(cases, skipped, RunSettings(repeat=1, timeout_s=300), tmp_path / "r.json").run()
    assert failed_cases(results) == [] and record.load(tmp_path / "r.json").complete
    for case in results.cases:
        (sample,) = case.samples
        assert sample["ok"], sample
        parts = sum(sample[f"{p}_s"] or 0.0 for p in ("trace", "lower", "compile", "execute"))
        assert parts == pytest.approx(sample["first_grad_s"], rel=0.05), (case.id, sample)
        # The process TTFG contains interpreter start, import, build and the first gradient.
        assert sample["process_ttfg_s"] > sample["import_s"] + sample["build_s"] + sample["first_grad_s"]
        assert sample["process_wall_s"] >= sample["process_ttfg_s"]
        assert sample["cpu_s"] > 0 and sample["peak_rss_bytes"] > 0
    cold = {case.backend: case.samples[0] for case in results.cases}
    for backend in ("jax.jit", "torch.compile", "torch.compile.aot_eager"):
        sample = cold[backend]
        assert sample["compile_s"] > 0 and sample["trace_s"] > 0, backend
        assert 0 < sample["compile_share"] <= 1 and sample["peak_rss_bytes"] > 50e6
    # Cold means cold: Inductor compiled from an empty cache, jax hit no persistent cache.
    inductor, jit = cold["torch.compile"], cold["jax.jit"]
    assert inductor["counters"]["fxgraph_cache_misses"] > 0 and inductor["counters"]["fxgraph_cache_hits"] == 0
    assert inductor.cold_evidence.files_at_start == 0 and "0 files in the cache folder at start" in inductor.cold_evidence.text
    assert jit["counters"]["backend_compiles"] >= 1 and jit["counters"]["persistent_cache_hits"] == 0


def test_eager_backend_has_execute_only_and_known_sleep(broken):
    sample = run_sample(one("test.slow"), "timing", "cold", 0, RunSettings())
    assert sample["ok"], sample
    assert sample["first_grad_s"] >= 0.3
    assert sample["execute_s"] == sample["first_grad_s"]
    assert sample["trace_s"] is None and sample["compile_s"] is None
    assert sample["compile_share"] == 0
    assert sample["counters"]["autograd_primitives"] > 0


@pytest.mark.parametrize("backend, error", [
    ("test.crash", "RuntimeError: deliberate failure in build (in phase build)"),
    ("test.garbage", "FloatingPointError"),
    ("test.die", "probe exited with status 3 and no valid report"),
])
def test_failures_are_recorded_with_stderr(broken, backend, error):
    sample = run_sample(one(backend), "timing", "cold", 0, RunSettings())
    assert not sample["ok"]
    assert error in sample["error"]
    assert sample["stderr_tail"]


def test_timeout_kills_the_process_group_and_records_it(broken):
    start = time.monotonic()  # 8 s: the probe must reach the hang even on a loaded machine
    sample = run_sample(one("test.hang"), "timing", "cold", 0, RunSettings(timeout_s=8))
    assert time.monotonic() - start < 60
    assert not sample["ok"] and sample["error"] == "timed out after 8 s"
    assert "hanging in the first gradient" in sample["stderr_tail"]


def test_run_goes_on_after_failures_and_reports_the_failed_case(broken, tmp_path):
    cases, skipped = select([TINY], ["test.crash", "autograd"], None)
    out = tmp_path / "r.json"
    results = Runner(cases, skipped, RunSettings(repeat=2), out).run()
    assert failed_cases(results) == [f"{TINY}/test.crash/params=args,chain=unrolled"]
    loaded = record.load(out)
    assert loaded.complete
    good = loaded.case(f"{TINY}/autograd/params=args,chain=unrolled")
    assert len(good.good()) == 2 and [s["index"] for s in good.samples] == [0, 1]
    frame = loaded.frame()
    assert {"case", "first_grad_s", "counters.autograd_primitives"} <= set(frame.columns)
    assert len(frame) == 4


def test_cli_run_exit_codes(broken, tmp_path, ttfg):
    out = ttfg("run", "--model", TINY, "--backend", "test.crash", "--backend", "autograd", "--repeat", "1",
               "--out", str(tmp_path / "r.json"), timeout=300)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "have no good sample" in out.stdout and "deliberate failure in build" in out.stdout
    ok = ttfg("run", "--model", TINY, "--backend", "autograd", "--repeat", "2", "--out", str(tmp_path / "ok.json"))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "time to first gradient" in ok.stdout
    # Not a terminal (a CI log): a progress line per finished sample, not minutes of silence.
    progress = [line for line in ok.stdout.splitlines() if line.startswith("[")]
    assert [line.split()[0] for line in progress] == ["[1/2]", "[2/2]"], ok.stdout
    assert all("timing #" in line and "first gradient" in line for line in progress), progress
    bad = ttfg("run", "--model", TINY, "--repeat", "0")
    assert bad.returncode == 2 and "argument --repeat" in bad.stderr


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_run_keeps_finished_samples(tmp_path, stop):
    out = tmp_path / "r.json"
    proc = subprocess.Popen(interruptible("run", "--model", TINY, "--backend", "autograd", "--repeat", "50",
                                          "--out", str(out)), cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if out.exists() and record.load(out).cases[0].samples:
            break
        time.sleep(0.2)
    proc.send_signal(stop)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 2, stdout + stderr
    assert "interrupted" in stdout
    loaded = record.load(out)
    assert not loaded.complete
    assert 1 <= len(loaded.cases[0].good()) < 50
    assert not list(tmp_path.glob(".r.json.*.tmp")), "no temporary file left behind"


def test_atomic_write_leaves_old_file_when_writing_fails(tmp_path):
    results = record.Results({"hostname": "x"}, {"repeat": 1})
    path = save(results, tmp_path / "r.json")
    before = path.read_text()
    results.settings["bad"] = object()  # not JSON-serialisable: the write fails midway
    with pytest.raises(TypeError):
        save(results, path)
    assert path.read_text() == before
    assert not list(tmp_path.glob(".r.json.*.tmp"))


def good_document():
    return {"format": "ttfg-results", "version": 1, "created": "2026-12-02T00:00:00+00:00", "complete": True,
            "environment": {}, "settings": {},
            "cases": [{"id": "m/b/v", "model": "m", "backend": "b", "variant": {}, "samples": [
                {"kind": "timing", "ok": False, "index": 0, "cache": "cold", "error": "x", "stderr_tail": "",
                 "started_at": "t", "process_wall_s": 1.0}]}]}


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.update(format="other"), "format: expected 'ttfg-results'"),
    (lambda d: d.update(version=99), "version: unsupported version 99"),
    (lambda d: d.pop("cases"), "cases: missing"),
    (lambda d: d["cases"][0].pop("backend"), "cases[0].backend: missing"),
    (lambda d: d["cases"][0]["samples"][0].update(kind="speed"), "cases[0].samples[0].kind: expected one of"),
    (lambda d: d["cases"][0]["samples"][0].update(process_wall_s="fast"), "cases[0].samples[0].process_wall_s: expected"),
    (lambda d: d["cases"][0]["samples"][0].update(ok=True), "cases[0].samples[0].import_s: missing from a good timing sample"),
])
def test_schema_validation_names_file_and_field(tmp_path, mutate, message):
    doc = good_document()
    record.from_json(doc)  # the unmutated document is valid
    mutate(doc)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ResultsError) as info:
        record.load(path)
    assert str(path) in str(info.value) and message in str(info.value)


def test_unreadable_files_are_named(tmp_path):
    with pytest.raises(ResultsError, match="cannot read"):
        record.load(tmp_path / "missing.json")
    (tmp_path / "junk.json").write_text("{not json")
    with pytest.raises(ResultsError, match="junk.json: not valid JSON"):
        record.load(tmp_path / "junk.json")


@pytest.mark.slow
@pytest.mark.full
def test_consecutive_samples_are_both_cold_and_warm_cache_hits(tmp_path):
    """Fresh caches per sample: two Inductor samples in a row both miss; a warm run hits."""
    cases, _ = select(["resnet15:blocks=1"], ["torch.compile", "jax.jit"], None)
    results = Runner(cases, [], RunSettings(repeat=2, caches=("cold", "warm")), tmp_path / "r.json").run()
    inductor, jit = results.cases
    cold = inductor.good("timing", "cold")
    assert len(cold) == 2
    for s in cold:
        assert s["counters"]["fxgraph_cache_misses"] > 0 and s["counters"]["fxgraph_cache_hits"] == 0
        assert s.cold_evidence.files_at_start == 0 and "0 files in the cache folder at start" in s.cold_evidence.text
    for s in jit.good("timing", "cold"):
        assert s["counters"]["backend_compiles"] >= 1 and s["counters"]["persistent_cache_hits"] == 0
    for s in inductor.good("timing", "warm"):
        assert s["counters"]["fxgraph_cache_hits"] > 0
    for s in jit.good("timing", "warm"):
        assert s["counters"]["persistent_cache_hits"] >= 1


def test_allocations_repeat_for_torch_eager():
    settings = RunSettings()
    counts = [run_sample(one("torch.eager"), "allocations", "cold", i, settings) for i in range(2)]
    assert all(s["ok"] for s in counts), counts
    assert counts[0]["alloc_tool"] == "memray"
    assert counts[0]["alloc_count"] > 100 and counts[0]["alloc_bytes"] > 0
    assert counts[0]["alloc_count"] == counts[1]["alloc_count"]
