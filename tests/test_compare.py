"""ttfg compare on synthetic results files: verdicts, thresholds, formats, exit codes (fast)."""

import json

import pytest

from ttfg.cli import main
from ttfg.decide.compare import Thresholds, compare_results, expand_metrics
from ttfg.fmt import metric_value
from ttfg.errors import UsageError
from ttfg.results.io import save

from .synthetic_results import CASE, OTHER, lognormal, results, timing_run, timing_sample


def one(cmp, metric, case=CASE):
    rows = [r for r in cmp.rows if r.metric == metric and r.case == case]
    assert len(rows) == 1, [(r.case, r.metric) for r in cmp.rows]
    return rows[0]


def pair(base_times, head_times, base_counters=None, head_counters=None, base_allocs=None, head_allocs=None):
    return (results({CASE: timing_run(base_times, base_counters, base_allocs)}),
            results({CASE: timing_run(head_times, head_counters, head_allocs)}))


@pytest.mark.parametrize("head_median, sd, n, expected", [
    (1.30, 0.05, 15, "regressed"),
    (0.70, 0.05, 15, "improved"),
    (1.00, 0.01, 20, "unchanged"),
    (1.15, 0.25, 3, "inconclusive"),
])
def test_timing_verdicts(head_median, sd, n, expected):
    base, head = pair(lognormal(1.0, n, sd, 1), lognormal(head_median, n, sd, 2))
    row = one(compare_results(base, head, metrics=["first_grad_s"]), "first_grad_s")
    assert row.compared_as == "timing" and row.verdict.method == "mann-whitney-hl"
    assert row.verdict.verdict == expected, row.verdict.reason
    assert row.base.n == n and row.head.n == n
    if expected in ("regressed", "improved"):
        assert row.verdict.ci_low < row.verdict.ratio < row.verdict.ci_high
        assert row.verdict.ratio == pytest.approx(head_median, rel=0.05)


def test_min_effect_global_and_per_metric():
    base, head = pair(lognormal(1.0, 20, 0.01, 1), lognormal(1.08, 20, 0.01, 2))
    assert one(compare_results(base, head, metrics=["first_grad_s"]), "first_grad_s").verdict.verdict == "regressed"
    loose = Thresholds.parse(["first_grad_s=0.10"], 0.05, "--min-effect")
    row = one(compare_results(base, head, metrics=["first_grad_s", "compile_s"], min_effect=loose), "first_grad_s")
    assert row.verdict.verdict == "unchanged" and row.limit == 0.10
    # compile_s still uses the global 5 %.
    assert one(compare_results(base, head, metrics=["compile_s"], min_effect=loose), "compile_s").verdict.verdict == "regressed"
    assert Thresholds.parse(["10%"], 0.05, "x").get("first_grad_s") == pytest.approx(0.10)


def test_counters_use_a_relative_threshold():
    base, head = pair([1.0] * 5, [1.0] * 5, {"jaxpr_eqns": 300, "hlo_ops": 371}, {"jaxpr_eqns": 306, "hlo_ops": 372})
    cmp = compare_results(base, head, metrics=["counters.*"])
    eqns, hlo = one(cmp, "counters.jaxpr_eqns"), one(cmp, "counters.hlo_ops")
    assert eqns.compared_as == "counter" and eqns.verdict.method == "counter-threshold"
    assert eqns.verdict.verdict == "regressed" and eqns.verdict.ratio == pytest.approx(1.02)
    assert hlo.verdict.verdict == "unchanged"  # +0.27 % is inside 1 %
    loose = Thresholds.parse(["counters.jaxpr_eqns=0.05"], 0.01, "--threshold")
    assert one(compare_results(base, head, metrics=["counters.*"], threshold=loose),
               "counters.jaxpr_eqns").verdict.verdict == "unchanged"
    exact = Thresholds.parse(["counters.*=0"], 0.01, "--threshold")
    assert one(compare_results(base, head, metrics=["counters.*"], threshold=exact),
               "counters.hlo_ops").verdict.verdict == "regressed"


def test_allocations_are_counters_and_absent_metrics_are_skipped():
    base, head = pair([1.0] * 3, [1.0] * 3, base_allocs=[4009, 4009], head_allocs=[3000])
    cmp = compare_results(base, head)
    assert one(cmp, "alloc_count").verdict.verdict == "improved"
    metrics = {r.metric for r in cmp.rows}
    assert "instructions" not in metrics  # in the defaults, measured by neither side
    base_only, head_plain = pair([1.0] * 3, [1.0] * 3, base_allocs=[4009])
    assert "alloc_count" not in {r.metric for r in compare_results(base_only, head_plain).rows}


def test_head_that_cannot_run_is_a_regression_and_base_failure_is_not():
    good = [timing_sample(i, 1.0) for i in range(3)]
    bad = [timing_sample(i, 0, ok=False) for i in range(3)]
    cmp = compare_results(results({CASE: good}), results({CASE: bad}))
    assert [(r.metric, r.verdict.verdict) for r in cmp.rows] == [("failures", "regressed")]
    assert "head never produced a good sample" in cmp.rows[0].verdict.reason and cmp.exit_code() == 1
    from ttfg.present.markdown import comparison_markdown
    from ttfg.present.compare_views import compare_table

    assert compare_table(cmp).row_count == 1 and "**regressed**" in comparison_markdown(cmp)  # a row, not a metric
    cmp = compare_results(results({CASE: bad}), results({CASE: good}))
    assert cmp.rows[0].verdict.verdict == "inconclusive" and cmp.exit_code() == 0


def test_a_head_that_fails_more_often_is_a_regression_even_when_its_good_samples_look_fine():
    """The reported repro: head failed 3 of 4 processes, base 0 of 4; compare said 'no regression'."""
    base = [timing_sample(i, 1.0) for i in range(4)]
    head = [timing_sample(0, 1.0)] + [timing_sample(i, 0, ok=False) for i in range(1, 4)]
    cmp = compare_results(results({CASE: base}), results({CASE: head}))
    row = one(cmp, "failures")
    assert row.verdict.verdict == "regressed" and "head failed 3 of 4" in row.verdict.reason
    assert cmp.exit_code() == 1
    # One flaky process in many is not evidence.
    base = [timing_sample(i, 1.0) for i in range(20)]
    head = [timing_sample(i, 1.0) for i in range(19)] + [timing_sample(19, 0, ok=False)]
    cmp = compare_results(results({CASE: base}), results({CASE: head}))
    assert "failures" not in {r.metric for r in cmp.rows} and cmp.exit_code() == 0


def test_notes_name_one_sided_cases_and_different_conditions():
    base = results({CASE: timing_run([1.0] * 3), OTHER: timing_run([0.01] * 3)}, {"hostname": "a", "python": "3.11.7"})
    head = results({CASE: timing_run([1.0] * 3)}, {"hostname": "b", "python": "3.11.7"})
    cmp = compare_results(base, head)
    assert any("only in base" in n and OTHER in n for n in cmp.notes)
    assert any("hostname: a vs b" in n for n in cmp.notes)
    assert not any("python" in n for n in cmp.notes)


def test_metric_expansion_and_unknown_metrics():
    base, head = pair([1.0] * 3, [1.0] * 3)
    names = expand_metrics(["first_grad_s,counters.*", "first_grad_s"], base, head)
    assert names == ["first_grad_s", "counters.hlo_ops", "counters.jaxpr_eqns"]
    with pytest.raises(UsageError, match="unknown metric 'first_grad'"):
        expand_metrics(["first_grad"], base, head)
    assert metric_value("first_grad_s", 0.0042) == "4.2 ms" and metric_value("alloc_bytes", 2.5 * 2**20) == "2.5 MiB"


@pytest.fixture
def files(tmp_path):
    def write(name, res):
        return str(save(res, tmp_path / name))

    base, head = pair(lognormal(1.0, 12, 0.05, 1), lognormal(1.4, 12, 0.05, 2),
                      {"jaxpr_eqns": 304}, {"jaxpr_eqns": 608})
    same_base, same_head = pair(lognormal(1.0, 20, 0.01, 3), lognormal(1.0, 20, 0.01, 4))
    other = results({OTHER: timing_run([0.01] * 3)})
    return {"base": write("base.json", base), "head": write("head.json", head),
            "same_base": write("same_base.json", same_base), "same_head": write("same_head.json", same_head),
            "other": write("other.json", other), "dir": tmp_path}


def test_cli_exit_codes_and_table(files, capsys):
    assert main(["compare", files["base"], files["head"]]) == 1
    out = capsys.readouterr().out
    assert "regressed" in out and "counters.jaxpr_eqns" in out and "regression" in out
    assert main(["compare", files["same_base"], files["same_head"], "--metric", "first_grad_s"]) == 0
    assert "no regression" in capsys.readouterr().out
    assert main(["compare", files["base"], files["head"], "--metric", "first_grad_s", "--min-effect",
                 "first_grad_s=0.5"]) == 0
    capsys.readouterr()


def test_cli_markdown_and_json(files, capsys):
    assert main(["compare", files["base"], files["head"], "--format", "markdown"]) == 1
    md = capsys.readouterr().out
    assert md.startswith("### ttfg compare: ") and "| case | metric |" in md and "**regressed**" in md
    out_path = files["dir"] / "cmp.json"
    assert main(["compare", files["base"], files["head"], "--format", "json", "--output", str(out_path)]) == 1
    data = json.loads(out_path.read_text())
    assert data["format"] == "ttfg-comparison" and data["exit_code"] == 1
    first = next(r for r in data["rows"] if r["metric"] == "first_grad_s")
    assert first["verdict"]["verdict"] == "regressed" and first["base"]["n"] == 12
    assert first["verdict"]["ratio"] == pytest.approx(1.4, rel=0.08)


def test_cli_broken_input_exits_2_naming_the_file(files, capsys):
    missing = str(files["dir"] / "nope.json")
    assert main(["compare", files["base"], missing]) == 2
    assert "nope.json: cannot read" in capsys.readouterr().err
    junk = files["dir"] / "junk.json"
    junk.write_text('{"format": "ttfg-results", "version": 1}')
    assert main(["compare", str(junk), files["head"]]) == 2
    assert "junk.json: environment: missing" in capsys.readouterr().err
    assert main(["compare", files["base"], files["other"]]) == 2  # no common case
    assert "nothing comparable" in capsys.readouterr().out
    assert main(["compare", files["base"], files["head"], "--metric", "first_grad"]) == 2
    assert "unknown metric" in capsys.readouterr().err
    assert main(["compare", files["base"], files["head"], "--min-effect", "lots"]) == 2
    assert "--min-effect" in capsys.readouterr().err


def test_help_documents_exit_codes(capsys):
    assert main(["compare", "--help"]) == 0
    text = capsys.readouterr().out
    assert "exit codes:" in text and "1  regression" in text and "2  nothing comparable" in text
