"""Output that fits: every terminal table at 80 columns, nothing cut, and ``--format json`` for scripts.

A table "fits" when no printed line is wider than the terminal and rich needed no
ellipsis; "nothing cut" is checked by finding every word of every value whole in the
text (a cell may wrap at its spaces; a table too wide for its words becomes records).
"""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest
from rich.console import Console

from ttfg.decide import noise
from ttfg import fmt
from ttfg.present import compare_views, gate_views, noise_views, run_views, study_views, terminal
from ttfg.results.model import EffectEntry, Sample

from .synthetic_results import alloc_sample, results, timing_sample

LONG = {  # the longest names a run has: every backend kind, both models, counters and allocations
    "convnext_tiny:depths=1x1x2x1/torch.compile.aot_eager/params=closure,chain=unrolled": 2.65,
    "convnext_tiny:depths=1x1x2x1/jax.jit/params=args,chain=scan": 1.78,
    "resnet15/torch.compile/params=closure,chain=unrolled": 19.1,
    "resnet15/autograd/params=args,chain=unrolled": 0.0694,
}
COUNTERS = {"jaxpr_eqns": 304, "hlo_ops": 371, "persistent_cache_hits": 0, "dynamo_graph_breaks": 0,
            "fx_nodes": 1234, "xla_compiles": 3}


def render(*renderables, width: int = 80) -> str:
    console = Console(width=width, record=True, color_system=None, force_terminal=False)
    for r in renderables:
        console.print(r)
    return console.export_text()


def assert_fits(text: str, width: int = 80) -> None:
    widest = max(map(len, text.splitlines()))
    assert widest <= width, f"a line of {widest} columns:\n{text}"
    assert "…" not in text, text


def reachable(text: str, *values: str) -> None:
    """Every word of every value is printed whole (a wrapped cell goes on below, beside its neighbours)."""
    missing = [w for v in values for w in v.split() if w not in text]
    assert not missing, f"cut or missing: {missing}\n{text}"


def a_run():
    res = results({case: [timing_sample(i, t * (1 + i / 20), COUNTERS) for i in range(3)]
                   + [alloc_sample(i, 2_425_943) for i in range(2)] for case, t in LONG.items()},
                  environment={"hostname": "ci", "cpu": "x", "cpu_count": 2})
    res.cases[-1].samples.append(Sample(**timing_sample(9, 0.07, COUNTERS, cache="warm")))
    res.noise = noise.in_run(res)
    return res


@pytest.mark.parametrize("width", [80, 120])
def test_run_tables_fit_and_keep_every_value(width):
    res = a_run()
    text = render(*run_views.run_tables(res), noise_views.table(res.noise), width=width)
    assert_fits(text, width)
    for case in res.cases:
        model, backend, variant = terminal.case_parts(case.id)
        reachable(text, model, backend, variant)
    reachable(text, *(f"{k}={fmt.count(v)}" for k, v in COUNTERS.items()), "2,425,943", "warm")
    reachable(text, fmt.seconds(19.1), fmt.seconds(19.1 * 1.1), "variant = params chain")
    # The case is split into columns: no line holds a whole case id.
    assert not any(case.id in line for case in res.cases for line in text.splitlines())


def test_wide_run_table_is_one_table_with_every_column():
    res = a_run()
    (table,) = [run_views.run_table(res)]
    text = render(table, width=400)
    header = next(line for line in text.splitlines() if "backend" in line)
    for column in ("first gradient", "import", "compile", "execute", "allocations", "counters"):
        assert column in header
    assert all(f"{k}={fmt.count(v)}" in text for k, v in COUNTERS.items())


def test_compare_gate_expectation_and_study_tables_fit_80_columns():
    from ttfg.decide.compare import compare_results
    from ttfg.decide.gate_settings import GateSettings
    from ttfg.results.gate_outcome import CaseOutcome, GateOutcome, RevisionData, SettingsData
    from ttfg.decide.stats import compare_paired, summarize

    base, head = a_run(), a_run()
    for case in head.cases:
        for s in case.samples:
            if s.first_grad_s:
                s.first_grad_s *= 1.3
    cmp = compare_results(base, head, base_label="runs/base-with-a-long-name.json", head_label="runs/head.json")
    text = render(compare_views.compare_table(cmp))
    assert_fits(text)
    reachable(text, "counters.persistent_cache_hits", "torch.compile.aot_eager", "inconclusive", "3.62 s")

    b, h = [1.0, 1.1, 0.9, 1.05, 1.0], [1.3, 1.4, 1.2, 1.35, 1.3]
    cases = [CaseOutcome(case.id, compare_paired(b, h), 5, 5, {"base": 0, "head": 1}, 12.5,
                         "decided", summarize(b), summarize(h), [])
             for case in base.cases]
    outcome = GateOutcome(RevisionData("origin/main", "a" * 40, "base"), RevisionData("HEAD", "b" * 40, "head"),
                          SettingsData(GateSettings().to_json()), cases, [], 60.0, {})
    text = render(gate_views.gate_table(outcome))
    assert_fits(text)
    reachable(text, "torch.compile.aot_eager", "convnext_tiny:depths=1x1x2x1", "decided", "regressed")

    effects = SimpleNamespace(study="chain", model="resnet15", effects=[
        EffectEntry("torch.compile.aot_eager", "process_ttfg_s", "unrolled", "scan", 0.29, 0.26, 0.33, 5.5e-06, 5,
                    "a note long enough to need wrapping in a narrow terminal")])
    fit = SimpleNamespace(k=1.02, k_ci_low=0.94, k_ci_high=1.10, a=0.04, b=0.011)
    depth = SimpleNamespace(model="resnet15", depth=[SimpleNamespace(
        backend="torch.compile.aot_eager", metric="first_grad_s", fit=fit, growth="super-linear",
        points=[(d, 0.1 * d) for d in (1, 2, 4, 8, 15, 30, 60)], note="")])
    text = render(study_views.effects_table(effects), study_views.depth_table(depth))
    assert_fits(text)
    reachable(text, "torch.compile.aot_eager", "0.290× [0.260×, 0.330×]", "60:6 s", "k = 1.02 [0.94, 1.10]",
              "wrapping in a narrow terminal")


def test_regressions_table_and_json(tmp_path, monkeypatch, capsys):
    from ttfg.cli import main
    from ttfg.history.synthetic import cases, write_history

    folder = tmp_path / "results"
    write_history(folder, 40, seed=3, case_list=cases(6))
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.chdir(tmp_path)
    assert main(["regressions", "--results", str(folder)]) == 0
    text = capsys.readouterr().out
    assert_fits(text)
    assert main(["regressions", "--results", str(folder), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["format"] == "ttfg-regressions" and data["exit_code"] == 0 and data["commits"] == 40
    # Every step is listed; the counts split findings (deterministic, confirmed) from timing candidates.
    assert data["regressions"] + data["improvements"] + data["candidates"] == len(data["steps"]) > 0
    assert {s["status"] for s in data["steps"]} <= {"deterministic", "confirmed", "not reproduced", "unconfirmed"}
    assert f"{fmt.plural(data['regressions'], 'regression')}, {fmt.plural(data['improvements'], 'improvement')}" in text
    step = data["steps"][0]
    assert {"case", "model", "backend", "variant", "metric", "before", "after", "change", "kind", "unit"} <= set(step)
    assert step["after"] == pytest.approx(step["before"] * (1 + step["change"]), rel=1e-6)
    for s in data["steps"]:
        reachable(text, s["backend"], fmt.change(s["change"]))


def test_piped_output_respects_columns(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    assert terminal.console().width == terminal.PIPED_WIDTH  # pytest captures stdout: piped
    monkeypatch.setenv("COLUMNS", "80")
    assert terminal.console().width == 80


def test_every_help_text_fits_80_columns(monkeypatch):
    from ttfg.cli import build_parser

    from .conftest import command_parsers

    monkeypatch.setenv("COLUMNS", "80")
    for path, parser in command_parsers(build_parser()):
        text = parser.format_help()
        wide = [line for line in text.splitlines() if len(line) > 80]
        assert not wide, f"ttfg {' '.join(path)} --help: {wide}"
        assert "%%" not in text and "\\n" not in text


@pytest.mark.slow
def test_run_at_80_columns_and_as_json(ttfg, tmp_path):
    """A real run: tables on stderr fit 80 columns; stdout is a JSON document with the values and the floor."""
    out = tmp_path / "r.json"
    proc = ttfg("run", "--model", "resnet15:blocks=2", "--backend", "autograd", "--backend", "torch.eager",
                "--repeat", "3", "--out", str(out), "--format", "json", env={"COLUMNS": "80"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert_fits(proc.stderr)
    assert "time to first gradient" in proc.stderr and "on this machine a 10-minute gate sees" in proc.stderr
    data = json.loads(proc.stdout)
    assert data["format"] == "ttfg-run" and data["exit_code"] == 0 and data["file"] == str(out)
    saved = json.loads(out.read_text())
    assert data["noise"] == saved["environment"]["noise"] and data["noise"]["source"] == "in-run"
    for case in data["cases"]:
        assert case["ok"] == case["samples"] == 3 and case["cache"] == "cold"
        first = case["metrics"]["first_grad_s"]
        values = [s["first_grad_s"] for c in saved["cases"] if c["id"] == case["case"] for s in c["samples"]]
        assert first["median"] == pytest.approx(sorted(values)[1]) and first["n"] == 3
        assert math.isfinite(first["cv"]) and case["counters"]


def test_list_fits_80_columns(monkeypatch, capsys):
    from ttfg import engines
    from ttfg.cli import main

    monkeypatch.setenv("COLUMNS", "80")
    assert main(["list"]) == 0
    text = capsys.readouterr().out
    assert_fits(text)
    for name in engines.names():  # every backend's name and description, whole words
        reachable(text, name, engines.get(name).description)
