"""The metric registry (harness/metrics.py) is the one table of metric facts, and the
formatter (harness/fmt.py) the one way a number is printed.

(a) The registry agrees with the things it describes: the asv suites' ``track_*``
functions and the results format's number fields. (b) No other module keeps its own
table of metric names (read from the source, AST). (c) A value prints the same in a
terminal table, the Markdown summary and the HTML report.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import sys
from pathlib import Path

import pytest

from ttfg import metrics
from ttfg.errors import UsageError
from ttfg import fmt

ROOT = Path(__file__).resolve().parents[1]

#: Modules allowed to keep a table of metric names for now, and why. Each is owned by a
#: parallel piece of issue 10; the note says what replaces the table.
ALLOWED = {
    "harness/metrics.py": "the registry itself",
    "harness/results/record.py": "SAMPLE_FIELDS: the results-format rewrite (issue 10 item 3) takes the number "
                                 "fields from metrics.fields_of_kind(kind)",
    "harness/history/synthetic.py": "a noise model per benchmark for fake history; rewritten to the real asv "
                                    "schema under issue 10 item 7",
}


# ---------------------------------------------------------------------------- (a) consistency


def _suite():
    sys.path.insert(0, str(ROOT))
    try:
        return importlib.import_module("suites.ttfg")
    finally:
        sys.path.remove(str(ROOT))


def test_every_asv_track_function_maps_to_a_registry_entry_with_its_unit():
    suite = _suite()
    tracks = {name: fn for name, fn in vars(suite).items() if name.startswith("track_")}
    assert tracks
    for name, fn in tracks.items():
        info = metrics.by_benchmark(name)
        assert info is not None, f"suites/ttfg.py:{name} has no registry entry (asv_benchmark)"
        called = re.search(r'asv_bench\.value\(cache, "([^"]+)"', inspect.getsource(fn)).group(1)
        assert called == info.name, f"{name} reads {called} but the registry says it tracks {info.name}"
        assert fn.unit == info.asv_unit == {"s": "seconds", "bytes": "bytes", "count": "count"}[info.unit]
    # ...and every entry that names a benchmark has one.
    assert {m.asv_benchmark for m in metrics.entries() if m.asv_benchmark} == set(tracks)


def test_every_number_field_of_the_results_format_is_in_the_registry():
    from ttfg.results import format as fmt_module

    number_types = {"seconds", "bytes", "count", "number"}
    for kind, fields in fmt_module.SAMPLE_FIELDS.items():
        numbers = {k for k, t in fields.items() if t in number_types}
        unlisted = numbers - set(metrics.METRICS) - set(metrics.NOT_METRICS)
        assert not unlisted, f"{kind} sample fields not in harness/metrics.py: {sorted(unlisted)}"
        # The results format takes its measured fields from the registry.
        for name in metrics.fields_of_kind(kind):
            assert fields[name] == fmt_module.UNIT_TYPES[metrics.get(name).unit], f"{kind}.{name}"
        for name in numbers - set(metrics.NOT_METRICS):
            assert metrics.get(name).sample == kind, f"{name}: registry puts it in {metrics.get(name).sample} samples"


def test_entries_are_complete_and_consistent():
    for m in metrics.entries():
        assert m.unit in metrics.UNITS and m.sample in metrics.SAMPLE_KINDS and m.group in metrics.GROUPS, m.name
        assert 0 <= m.threshold < 1, m.name
        assert (m.expect_margin is not None) == m.deterministic, f"{m.name}: expectations hold deterministic metrics"
        assert m.stored or m.derive is not None, f"{m.name}: neither stored nor derived"
        suffix = {"s": "_s", "bytes": "_bytes"}.get(m.unit)
        if suffix:
            assert m.name.endswith(suffix), f"{m.name}: the unit belongs in the name"
    # One meaning of "compile": the phase alone, and a separately named, labelled total.
    assert "alone" in metrics.get("compile_s").label
    total = metrics.get("first_grad_compile_s")
    assert "trace + lower + compile" in total.label and total.asv_benchmark == "track_compile_seconds"
    assert metrics.get("alloc_bytes").deterministic and metrics.get("alloc_bytes").threshold == 0.01


def test_lookup_and_unlisted_counters():
    info = metrics.get("counters.some_new_counter")
    assert (info.unit, info.deterministic, info.expect_margin, info.threshold) == ("count", True, 0.0, 0.01)
    assert info.asv_benchmark is None and info.label == "some new counter"
    with pytest.raises(UsageError, match="unknown metric 'first_grad'.*known metrics: first_grad_s"):
        metrics.get("first_grad")


def test_derived_compile_total_from_a_sample():
    sample = {"trace_s": 0.1, "lower_s": 0.2, "compile_s": 0.3, "execute_s": 0.4, "first_grad_s": 1.0}
    assert metrics.sample_value(sample, "first_grad_compile_s") == pytest.approx(0.6)
    assert metrics.sample_value({**sample, "lower_s": None}, "first_grad_compile_s") == pytest.approx(0.4)
    assert metrics.sample_value({"execute_s": 1.0, "first_grad_s": 1.0}, "first_grad_compile_s") is None
    assert metrics.derive("compile_share", sample) == pytest.approx(0.6)
    assert metrics.derive("compile_share", {"execute_s": 1.0, "first_grad_s": 1.0}) == 0
    assert metrics.sample_value({"compile_share": 0.5, **sample}, "compile_share") == 0.5  # stored wins


def test_steps_compare_expect_and_gate_take_the_registrys_margins():
    from ttfg.decide import compare, expect, gate_settings
    from ttfg.history import steps

    for name in ("alloc_bytes", "alloc_count", "counters.jaxpr_eqns", "instructions", "first_grad_s"):
        info = metrics.get(name)
        assert compare.Thresholds().get(name) == info.threshold
        # A deterministic metric's step needs its registry threshold, and never less than twice the spread
        # cold processes of the same code show (``Metric.spread``).
        assert steps.min_change_for(name) == (max(min(steps.DEFAULT_MIN_CHANGE, info.threshold), 2 * (info.spread or 0))
                                              if info.deterministic else steps.DEFAULT_MIN_CHANGE)
        assert compare.metric_info(name).deterministic == info.deterministic
    assert expect.default_margin("alloc_bytes", [100.0]) == metrics.get("alloc_bytes").expect_margin
    assert expect.default_margin("counters.hlo_ops", [7.0]) == 0
    assert gate_settings.GateSettings().min_effect == metrics.get("first_grad_s").threshold


# ---------------------------------------------------------------------------- (b) no other table


def _metric_like(text: str) -> bool:
    return text in metrics.METRICS or metrics.is_counter(text) or text == "counters.*"


def _strings(node: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _tables(path: Path):
    """Module-level names bound to a literal dict / tuple / list / set holding 2+ metric names."""
    tree = ast.parse(path.read_text(), str(path))
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if not isinstance(value, (ast.Dict, ast.Tuple, ast.List, ast.Set, ast.Call)):
            continue
        found = sorted({s for s in _strings(value) if _metric_like(s)})
        if len(found) >= 2:
            names = ", ".join(ast.unparse(t) for t in targets)
            yield f"{path.relative_to(ROOT)}:{node.lineno} {names} lists {', '.join(found[:4])}"


def test_no_module_but_the_registry_keeps_a_table_of_metrics():
    sources = [*sorted((ROOT / "harness").rglob("*.py")), ROOT / "suites" / "ttfg.py"]
    found = [t for p in sources if str(p.relative_to(ROOT)) not in ALLOWED for t in _tables(p)]
    assert not found, "per-metric tables outside harness/metrics.py:\n" + "\n".join(found)


def test_the_table_check_would_notice_one(tmp_path):
    bad = ROOT / "harness" / "_probe_table_check.py"
    try:
        bad.write_text('UNITS = {"first_grad_s": "seconds", "alloc_count": "count"}\n')
        assert list(_tables(bad))
    finally:
        bad.unlink()


# ---------------------------------------------------------------------------- (c) one formatter


def test_one_rule_per_unit():
    assert [fmt.seconds(v) for v in (2.54, 0.254, 4.2e-5, 153.2)] == ["2.54 s", "254 ms", "42 µs", "153 s"]
    assert [fmt.bytes_(v) for v in (851.9e6, 2.5 * 2**30, 512)] == ["812 MiB", "2.5 GiB", "512 B"]
    assert [fmt.count(v) for v in (4027, 4027.5, 12_345_678)] == ["4,027", "4,027.5", "12,345,678"]
    assert [fmt.change(v) for v in (0.052, -0.12, 0.0)] == ["+5.2 %", "-12.0 %", "±0 %"]
    assert [fmt.percent(v) for v in (0.015, 0.97)] == ["1.5 %", "97 %"]
    assert [fmt.factor(v) for v in (1.0523, 0.95, 0.27, 3.704, 12.53, 120.0)] == [
        "1.052×", "0.950×", "0.270×", "3.704×", "12.5×", "120×"]
    assert fmt.interval(0.95, 1.1) == "[0.950×, 1.100×]" and fmt.seconds(None) == fmt.MISSING
    for m in metrics.entries():
        assert fmt.metric_value(m.name, 1234.5) == fmt.value(1234.5, m.unit)
    assert fmt.metric_value("ok_samples", float("nan")) == fmt.MISSING  # a failure row, not a metric


def _comparison():
    from ttfg.decide.compare import compare_results
    from tests.synthetic_results import alloc_sample, results, timing_run

    case = "resnet15/jax.jit/params=args,chain=unrolled"
    samples = [*timing_run([2.54, 2.55, 2.53]), *(alloc_sample(i, 4027, size=851_900_000) for i in range(3))]
    return compare_results(results({case: samples}), results({case: samples}), metrics=["first_grad_s", "alloc_bytes"])


def test_the_same_value_prints_the_same_in_terminal_markdown_and_report(tmp_path):
    from rich.console import Console

    from ttfg.present.markdown import comparison_markdown
    from ttfg.app.report import build_report
    from ttfg.present.compare_views import compare_table

    cmp = _comparison()
    console = Console(width=250, record=True)
    console.print(compare_table(cmp))
    terminal = console.export_text()
    markdown = comparison_markdown(cmp)
    from tests.synthetic_results import results, timing_run

    run = results({"resnet15/jax.jit/params=args,chain=unrolled": timing_run([2.54, 2.55, 2.53])})
    html = build_report(None, [run], out=tmp_path / "r.html").read_text()
    seconds = fmt.seconds(2.54)
    assert seconds == "2.54 s"
    for where, text in (("terminal", terminal), ("markdown", markdown), ("report", html)):
        assert seconds in text, f"{where} does not print 2.54 s as {seconds}"
    mib = fmt.bytes_(851_900_000)
    for where, text in (("terminal", terminal), ("markdown", markdown)):
        assert mib in text and "MB" not in text.replace("MiB", ""), f"{where} prints bytes differently"
