"""Expectations files: both-direction checks, margins, suggestions, update, CLI (fast, synthetic)."""

import json

import pytest

from ttfg.decide import expect
from ttfg.cli import main
from ttfg.decide.expect import Expectation, ExpectationsError
from ttfg.results.io import save

from .synthetic_results import CASE, OTHER, results, timing_run

HEADER = "case,metric,expected,margin\n"
Q = f'"{CASE}"'  # case ids contain commas: quoted in CSV


def run(eqns=304, hlo=371, allocs=(4009, 4009)):
    return results({CASE: timing_run([1.0, 1.1], {"jaxpr_eqns": eqns, "hlo_ops": hlo}, list(allocs))})


def write(tmp_path, text, name="expected.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_update_creates_rows_with_default_margins(tmp_path):
    rows = expect.update([], [run()])
    by_metric = {r.metric: r for r in rows}
    assert set(by_metric) == {"counters.jaxpr_eqns", "counters.hlo_ops", "alloc_count"}
    assert by_metric["counters.jaxpr_eqns"] == Expectation(CASE, "counters.jaxpr_eqns", 304, 0.0)
    assert by_metric["alloc_count"].margin == 0.02
    path = expect.save(tmp_path / "e.csv", rows)
    assert path.read_text().splitlines()[0] == "case,metric,expected,margin"
    assert f'"{CASE}",counters.jaxpr_eqns,304,0' in path.read_text()
    assert expect.load(path) == sorted(rows, key=lambda r: (r.case, r.metric))


def test_margin_widens_to_observed_spread():
    assert expect.default_margin("alloc_count", [1000, 1010]) == pytest.approx(0.02)
    assert expect.default_margin("alloc_count", [1000, 1020]) == pytest.approx(0.04)
    assert expect.default_margin("counters.jaxpr_eqns", [304, 304]) == 0.0


@pytest.mark.parametrize("eqns, status", [(304, "ok"), (400, "regressed"), (250, "improved")])
def test_check_fails_in_both_directions(eqns, status):
    file_rows = [Expectation(CASE, "counters.jaxpr_eqns", 304, 0.0), Expectation(CASE, "alloc_count", 4000, 0.02)]
    check = expect.check(file_rows, [run(eqns=eqns)], path="ci/expectations.csv")
    row = next(r for r in check.rows if r.metric == "counters.jaxpr_eqns")
    assert row.status == status and row.measured == eqns
    assert next(r for r in check.rows if r.metric == "alloc_count").status == "ok"  # 4009 within 2 %
    assert check.exit_code() == (0 if status == "ok" else 1)
    if status == "improved":
        assert "lock the win in" in row.message and "ci/expectations.csv" in row.message
    # hlo_ops is tracked (counters.*) but not in the file: a new row, not a failure.
    new = next(r for r in check.rows if r.metric == "counters.hlo_ops")
    assert new.status == "new"
    suggested = {(r.metric): r for r in check.suggested}
    assert suggested["counters.jaxpr_eqns"].expected == eqns and suggested["counters.hlo_ops"].expected == 371
    assert suggested["alloc_count"].margin == 0.02 and suggested["alloc_count"].expected == 4009


def test_rows_for_cases_not_run_and_metrics_not_measured():
    file_rows = [Expectation(OTHER, "counters.autograd_nodes", 60, 0.0), Expectation(CASE, "instructions", 1e9, 0.015)]
    check = expect.check(file_rows, [run()])
    assert check.not_run == 1
    assert [r.status for r in check.rows if r.metric == "instructions"] == ["not measured"]
    assert check.exit_code() == 2  # nothing could be checked
    # The suggestion keeps rows it could not measure.
    assert Expectation(OTHER, "counters.autograd_nodes", 60, 0.0) in check.suggested


def test_a_locked_counter_that_vanished_fails():
    """The case ran and its timing samples carry counters, but not this one: a failure, not a pass."""
    file_rows = [Expectation(CASE, "counters.jaxpr_eqns", 304, 0.0), Expectation(CASE, "counters.renamed", 7, 0.0)]
    check = expect.check(file_rows, [run()], path="ci/expectations.csv")
    row = next(r for r in check.rows if r.metric == "counters.renamed")
    assert row.status == "vanished" and "cannot be checked" in row.message and "ci/expectations.csv" in row.message
    assert check.exit_code() == 1


def test_cli_exits_1_when_a_locked_counter_vanished(tmp_path, capsys):
    runs = tmp_path / "head.json"
    save(run(), runs)
    csv = write(tmp_path, HEADER + f"{Q},counters.renamed,7,0\n")
    assert main(["expect", "check", str(csv), "--runs", str(runs)]) == 1
    assert "vanished" in capsys.readouterr().out


@pytest.mark.parametrize("text, message", [
    ("case,metric,value\n", "expected the header case,metric,expected,margin"),
    (HEADER + f"{Q},counters.jaxpr_eqns,many,0\n", "expected.csv:2: expected: 'many' is not a number"),
    (HEADER + f"{Q},first_grad_s,1.0,0.1\n", "first_grad_s is a timing"),
    (HEADER + f"{Q},jaxpr,1,0\n", "unknown metric 'jaxpr'"),
    (HEADER + f"{Q},counters.x,1,0\n{Q},counters.x,2,0\n", "duplicate row"),
    (HEADER + f"{Q},counters.x,1\n", "expected 4 columns"),
    ("", "empty"),
])
def test_malformed_files_are_named(tmp_path, text, message):
    with pytest.raises(ExpectationsError, match="expected.csv") as info:
        expect.load(write(tmp_path, text))
    assert message in str(info.value)


def test_comments_and_blank_lines_are_ignored(tmp_path):
    rows = expect.load(write(tmp_path, f"# counters\n{HEADER}\n{Q},counters.jaxpr_eqns,304,0\n"))
    assert rows == [Expectation(CASE, "counters.jaxpr_eqns", 304.0, 0.0)]


def test_cli_check_update_and_suggested(tmp_path, capsys):
    runs = str(save(run(eqns=290), tmp_path / "head.json"))
    file = write(tmp_path, HEADER + f"{Q},counters.jaxpr_eqns,304,0\n{Q},alloc_count,4009,0.02\n")
    suggested = tmp_path / "suggested.csv"
    assert main(["expect", "check", str(file), "--runs", runs, "--write-suggested", str(suggested)]) == 1
    out = capsys.readouterr().out
    assert "improved" in out and "lock the win in" in out
    assert f'"{CASE}",counters.jaxpr_eqns,290,0' in suggested.read_text()
    assert main(["expect", "check", str(suggested), "--runs", runs]) == 0
    capsys.readouterr()
    assert main(["expect", "check", str(file), "--runs", runs, "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["exit_code"] == 1 and {r["status"] for r in data["rows"]} >= {"improved", "ok", "new"}
    assert main(["expect", "check", str(file), "--runs", runs, "--format", "markdown"]) == 1
    assert "expectation(s) violated" in capsys.readouterr().out
    # update keeps margins of existing rows and adds new ones.
    assert main(["expect", "update", "--runs", runs, "--out", str(file), "--margin", "counters.hlo_ops=0.5"]) == 0
    rows = {r.metric: r for r in expect.load(file)}
    assert rows["counters.jaxpr_eqns"].expected == 290 and rows["alloc_count"].margin == 0.02
    assert rows["counters.hlo_ops"].margin == 0.5
    assert main(["expect", "check", str(tmp_path / "missing.csv"), "--runs", runs]) == 2
    assert "missing.csv: cannot read" in capsys.readouterr().err
    assert main(["expect", "update", "--runs", runs, "--out", str(file), "--metric", "first_grad_s"]) == 2
    assert "is a timing" in capsys.readouterr().err
