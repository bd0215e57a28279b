"""What a probe's process ran on is measured, never declared (harness/measure/runtimes.py, harness/results/runtimes.py).

In-process: reading the mapped shared objects from a maps text, the record's judgement (which runtimes, whether
multithreaded), its place in results files (written, read back, refused when impossible; older files read without
it). One real probe per runtime shows the record is read from the process (jax.jit: jaxlib and XLA's pool; autograd:
no native runtime).
"""

from __future__ import annotations

import json
import sys
import types

import pytest

from ttfg.measure import runtimes as probe_runtimes
from ttfg.measure.cases import select
from ttfg.measure.runner import RunSettings, run_sample
from ttfg.results import io
from ttfg.results.format import ResultsError
from ttfg.results.runtimes import Runtimes, merged, runs_on
from tests.synthetic_results import CASE, alloc_sample, results

MAPS = """\
7f00-7f01 r-xp 00000000 08:01 1 /venv/lib/python3.11/site-packages/jaxlib/libjax_common.so
7f01-7f02 r--p 00000000 08:01 2 /venv/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so
7f02-7f03 r--p 00000000 08:01 3 /usr/lib/x86_64-linux-gnu/libc.so.6
7f03-7f04 rw-p 00000000 00:00 0 [heap]
7f04-7f05 r-xp 00000000 08:01 1 /venv/lib/python3.11/site-packages/jaxlib/libjax_common.so
"""


def test_the_known_runtimes_shared_objects_are_read_from_the_maps_once_each():
    assert probe_runtimes.mapped_libraries(MAPS) == ["libjax_common.so", "libtorch_cpu.so"]


def test_a_library_alone_names_its_runtime_and_a_pool_of_threads_makes_it_multithreaded():
    xla = Runtimes((), ("libjax_common.so",), 17, 2)
    assert xla.names == {"jaxlib"} and "jaxlib, with 15 thread(s)" in xla.multithreaded
    # One helper thread (autograd and torch eager start one too) is no pool; no runtime, no multithreaded runtime.
    assert Runtimes(("torch",), ("libtorch.so",), 3, 2).multithreaded is None
    assert Runtimes((), (), 40, 2).multithreaded is None


def test_observe_reads_this_process(monkeypatch):
    monkeypatch.setitem(sys.modules, "jaxlib", types.ModuleType("jaxlib"))
    record = probe_runtimes.observe()
    assert "jaxlib" in record.modules and record.threads >= 1 and record.threads_at_start >= 1


def test_the_measured_record_replaces_the_declared_modules_and_none_keeps_them():
    declared = frozenset({"jax", "haikulib"})
    assert runs_on(Runtimes(("jaxlib",), (), 17, 2), declared) == {"jaxlib"}
    assert runs_on(None, declared) == declared
    both = merged([Runtimes((), (), 3, 2), None, Runtimes(("jaxlib",), ("libjax_common.so",), 17, 2)])
    assert both.names == {"jaxlib"} and both.threads == 17
    assert merged([None, None]) is None


def test_results_files_carry_the_record_and_older_files_read_without_it(tmp_path):
    record = Runtimes(("jaxlib",), ("libjax_common.so",), 17, 2)
    res = results({CASE: [alloc_sample(0, 2_000_000), {**alloc_sample(1, 2_000_000), "runtimes": record}]})
    path = io.save(res, tmp_path / "r.json")
    old, new = io.load(path).cases[0].samples
    assert old.runtimes is None and new.runtimes == record
    data = json.loads(path.read_text())
    data["cases"][0]["samples"][1]["runtimes"]["threads"] = 0
    with pytest.raises(ResultsError, match=r"samples\[1\]\.runtimes\.threads"):
        io.loads(json.dumps(data), "r.json")


def one(backend):
    cases, _ = select(["resnet15:blocks=1"], [backend], ["default"])
    return cases[0]


@pytest.mark.parametrize("backend, names, pool", [("jax.jit", {"jaxlib"}, True), ("autograd", set(), False)])
def test_the_probe_records_what_its_process_loaded(backend, names, pool):
    """Real processes: the allocation probe (the counts whose steadiness depends on it) records the runtimes."""
    sample = run_sample(one(backend), "allocations", "cold", 0, RunSettings())
    assert sample.ok, sample.error
    assert sample.runtimes.names == names
    assert (sample.runtimes.multithreaded is not None) == pool
