"""The gate's tiers (harness/decide/tiers.py), driven by an in-process sampler with known answers.

Like test_gate_policy.py, a fake sampler answers instantly from a script per side and
kind and advances a fake clock; here it also answers instruction and allocation
samples, so which tier settles a case, what each tier spends, and the trail each case
keeps are checked exactly. Real instruction counts are in test_instructions.py.
"""

from __future__ import annotations

import json
import threading

import pytest

from ttfg.decide import tiers
from ttfg.decide.gate_loop import run_gate
from ttfg.decide.gate_settings import GateSettings
from ttfg.measure.sides import Side
from ttfg.results import gate_outcome
from ttfg.errors import UsageError
from ttfg.measure import instructions as counting
from ttfg.measure.cases import select
from ttfg.results import record
from ttfg.results.model import Sample
from tests.test_gate_policy import sides  # noqa: F401  (the fixture: base and head folders)

MODEL = "resnet15:blocks=2"
STARTED = "2026-12-03T00:00:00+00:00"


def timing(index: int, seconds: float, counters: dict, import_s: float = 0.5) -> Sample:
    return Sample(kind="timing", ok=True, index=index, started_at=STARTED, process_wall_s=1.0, import_s=import_s,
                  build_s=0.01, first_grad_s=seconds, second_grad_s=0.001, execute_s=seconds, process_ttfg_s=1.0,
                  cpu_s=1.0, peak_rss_bytes=10**8, compile_share=0.0, loss=1.0, counters=dict(counters))


def count(kind: str, index: int, value: int | str, phases: dict | None = None, build: int | None = None) -> Sample:
    """A count sample; an instruction sample counts the build apart (phase ``build``) when ``build`` is given."""
    if isinstance(value, str):
        return Sample(kind=kind, ok=False, index=index, started_at=STARTED, error=value, process_wall_s=1.0)
    if kind == "instructions":
        phases = {**({"build": build} if build is not None else {}), **(phases or {})} or None
        return Sample(kind=kind, ok=True, index=index, started_at=STARTED, process_wall_s=30.0, instructions=value,
                      instructions_tool="callgrind", instructions_scope="first-gradient window",
                      instructions_phases=phases, instructions_note=counting.NOT_COUNTED,
                      instructions_top=[{"fn": "main", "file": "x.c", "line": 3, "incl": value, "self": 10}],
                      instructions_window_s=20.0, instructions_cpu_s=29.0)
    return Sample(kind=kind, ok=True, index=index, started_at=STARTED, process_wall_s=2.0, alloc_count=value,
                  alloc_bytes=value * 100, alloc_peak_bytes=value * 10, alloc_tool="memray", python_allocators=False)


class Side_:
    """One side's script: a timing level, counters, an instruction and an allocation count."""

    def __init__(self, seconds=1.0, counters=None, instructions=10_000_000, allocs=5_000, spread=0.02, phases=None,
                 build=5_000_000, import_s=0.5):
        self.seconds, self.counters, self.phases = seconds, counters or {"autograd_nodes": 100}, phases
        self.instructions, self.allocs, self.spread, self.build = instructions, allocs, spread, build
        self.import_s = import_s

    def timing(self, i: int) -> float:
        pattern = (0.0, 1.0, -1.0, 0.5, -0.5, 0.8, -0.8, 0.2)
        return self.seconds * (1 + self.spread * pattern[i % len(pattern)])


class FakeSampler:
    """Answers by kind from each side's script; records every call; advances a fake clock."""

    def __init__(self, sides: dict[str, Side], scripts: dict[str, Side_], wall_s=10.0, barrier=None):
        self.role = {str(side.source): role for role, side in sides.items()}
        self.scripts, self.wall_s, self.barrier = scripts, wall_s, barrier
        self.now = 0.0
        self.calls: list[tuple[str, str, str]] = []
        self.lock = threading.Lock()

    def monotonic(self) -> float:
        return self.now

    def __call__(self, case, kind, cache, index, run) -> Sample:
        role = self.role[str(run.target.source)]
        script = self.scripts[role]
        if kind != "timing" and self.barrier is not None:
            self.barrier.wait(timeout=5)  # both sides must be in flight at once
        with self.lock:
            self.calls.append((case.id, role, kind))
            self.now += self.wall_s
        if kind == "timing":
            shift = 3 if role == "head" else 0
            return timing(index, script.timing(index + shift), script.counters, script.import_s)
        return count(kind, index, script.instructions if kind == "instructions" else script.allocs, script.phases,
                     script.build)


@pytest.fixture
def gate_with(sides, tmp_path, monkeypatch):
    """Run the gate with scripted sides; ``valgrind`` says whether instructions can be counted."""

    def run(base: Side_, head: Side_, backends=("autograd",), valgrind=True, barrier=None, **settings):
        fake = FakeSampler(sides, {"base": base, "head": head}, barrier=barrier)
        monkeypatch.setattr(counting, "availability", lambda: (True, "callgrind") if valgrind else
                            (False, "valgrind is not installed; decisions fall back to wall time"))
        notes: list[str] = []
        cases, skipped = select([MODEL], list(backends), None, check_availability=False)
        settings.setdefault("tiers", tiers.DEFAULT_TIERS)
        settings.setdefault("profiles", 0)  # sampled stacks after a regression: tests/test_gate_policy.py
        outcome = run_gate(cases, skipped, sides["base"], sides["head"], GateSettings(**settings),
                           tmp_path / "out", on_note=notes.append, sampler=fake, clock=fake.monotonic)
        return outcome, fake, notes

    return run


def kinds(fake: FakeSampler) -> dict[str, int]:
    out: dict[str, int] = {}
    for _, _, kind in fake.calls:
        out[kind] = out.get(kind, 0) + 1
    return out


def test_a_grown_structural_counter_settles_the_case_with_one_pair(gate_with):
    """A counter that grew by at least the minimum effect (a doubled model) decides at once."""
    outcome, fake, notes = gate_with(Side_(), Side_(counters={"autograd_nodes": 200}))
    (case,) = outcome.cases
    assert case.tier == "structural" and case.verdict.verdict == "regressed"
    assert "autograd_nodes 100 -> 200" in case.verdict.reason
    assert kinds(fake) == {"timing": 2}  # one pair, no counts, no further pairs
    assert outcome.exit_code() == 1
    assert case.to_json()["tier"] == "structural" and case.to_json()["tiers"][0]["settled"] is True


def test_counts_within_their_margins_settle_unchanged_and_time_screens_only_what_they_miss(gate_with):
    """Build and first gradient are counted; the import and the whole process are not, so the time
    tier screens those two for gross slowdowns, short (decide/time_screen.py): two pairs, the structural
    pair the first, and neither slow, so the case stays the instructions tier's."""
    outcome, fake, _ = gate_with(Side_(), Side_(instructions=10_050_000, allocs=5_010))  # +0.5 %, +0.2 %
    (case,) = outcome.cases
    assert case.tier == "instructions" and case.verdict.verdict == "unchanged"
    assert kinds(fake) == {"timing": 4, "instructions": 2, "allocations": 2}
    assert [t.tier for t in case.trail] == ["structural", "instructions", "time"]
    assert case.trail[0].verdict == "unchanged" and not case.trail[0].settled
    screen = case.trail[2]
    assert not screen.settled and "import" in screen.reason and "process TTFG" in screen.reason
    assert "build" not in screen.reason and screen.reason.startswith("short screen, 2 pairs")
    assert case.screen.metrics == ["process_ttfg_s", "import_s"] and case.screen.short
    assert case.screen.pairs == 2 and not case.screen.escalated and case.guards == []
    assert case.metric == "instructions" and case.figure.ratio == pytest.approx(1.005)
    assert case.figure.base == 10_000_000 and case.figure.head == 10_050_000
    assert [f.metric for f in case.context] == ["first_grad_s"] and case.context[0].tier == "time"
    assert outcome.exit_code() == 0


def test_a_build_that_grew_is_settled_by_its_instructions_and_named(gate_with):
    outcome, fake, _ = gate_with(Side_(), Side_(build=190_000_000))  # the build 38 times its instructions
    (case,) = outcome.cases
    assert case.tier == "instructions" and case.verdict.verdict == "regressed" and outcome.exit_code() == 1
    assert case.metric == "instructions_build" and case.figure.ratio == pytest.approx(38)
    assert case.verdict.reason.startswith("beyond the margin: build instructions +")
    assert kinds(fake)["timing"] == 2  # a regression settles: no screen


def test_the_screen_catches_an_import_that_doubled(gate_with):
    outcome, fake, _ = gate_with(Side_(), Side_(import_s=1.0))
    (case,) = outcome.cases
    assert case.verdict.verdict == "regressed" and case.tier == "time" and case.metric == "import_s"
    assert case.verdict.reason.startswith("import: ") and case.figure.ratio == pytest.approx(2.0)
    assert [f.metric for f in case.context] == ["instructions"]  # what the counts said, as context


def test_a_base_without_build_counts_leaves_the_build_to_wall_time(gate_with):
    """A base measured by an older probe (no build dump): the build is not covered, so it is screened."""
    outcome, _, _ = gate_with(Side_(build=None), Side_(), max_pairs=20)
    (case,) = outcome.cases
    assert case.tier == "time" and not case.trail[1].settled
    assert "instructions_build: measured on one side only" in case.trail[1].reason
    assert [g.metric for g in case.guards] == ["first_grad_s", "process_ttfg_s", "import_s", "build_s"]


def calibrate_case(case, margin: float = 0.0132, processes: int = 10, bimodal: bool = False) -> None:
    """Store a calibrated margin for every count metric of ``case`` under the key its gate sides have (this
    interpreter, the gate's sampling settings), in the test's private user cache."""
    from ttfg.decide import count_margins
    from ttfg.measure import fact_keys
    from ttfg.measure.runner import RunSettings

    entry = count_margins.Margin(margin, "2026-12-04T10:00:00+00:00", processes, bimodal, 10_000_000.0)
    key = fact_keys.key(case, None, RunSettings(repeat=1), counted=True)
    count_margins.save({key: {m: entry for m in tiers.tier_metrics("instructions")}})


def test_two_percent_more_instructions_is_a_regression(gate_with):
    """A calibrated case: its own margin (±1.32 %, from 10 processes) decides, and the verdict says so."""
    calibrate_case(select([MODEL], ["autograd"], None, check_availability=False)[0][0])
    outcome, _, _ = gate_with(Side_(), Side_(instructions=10_200_000))
    (case,) = outcome.cases
    assert case.tier == "instructions" and case.verdict.verdict == "regressed"
    assert case.verdict.ratio == pytest.approx(1.02)
    assert "instructions +2.0 %" in case.verdict.reason and outcome.exit_code() == 1
    assert "margin ±1.32 %, calibrated 2026-12-04 from 10 processes" in case.verdict.reason
    assert case.figure.statistic == "1 sample, margin ±1.32 % (calibrated 2026-12-04 from 10 processes)"
    evidence = case.to_json()["tiers"][1]["evidence"]
    assert {e["metric"]: e["margin_source"] for e in evidence}["instructions"] == \
        "calibrated 2026-12-04 from 10 processes"


def test_an_uncalibrated_case_says_its_margin_is_the_default(gate_with):
    outcome, _, _ = gate_with(Side_(), Side_(instructions=10_300_000))  # +3 %, beyond the 2.5 % default
    (case,) = outcome.cases
    assert case.tier == "instructions" and case.verdict.verdict == "regressed"
    assert "margin ±2.5 %, default: this case is not calibrated" in case.verdict.reason
    # Uncalibrated and beyond the margin: a second base count showed the count repeats before it decided.
    assert case.figure.statistic == "median of 2 samples, margin ±2.5 % (default)"


def test_a_count_at_its_margins_edge_is_counted_again_then_goes_to_the_time_tier(gate_with):
    """The flaxlab example: a comment-only change moved XLA's compile instructions +1.6 %. Uncalibrated (±2.5 %),
    that is at the margin's edge: one more count a side, still there, so the time tier decides (unchanged times)."""
    outcome, fake, _ = gate_with(Side_(), Side_(instructions=10_160_000), max_pairs=10)
    (case,) = outcome.cases
    assert kinds(fake)["instructions"] == 4  # one count a side, then one more
    step = case.trail[1]
    assert step.tier == "instructions" and not step.settled and step.verdict == "inconclusive"
    assert "at the edge of the margin after 2 count(s) a side" in step.reason
    assert "after 1 more count(s) a side: the time tier decides" in step.reason
    assert case.tier == "time" and outcome.exit_code() != 1


def test_recount_0_hands_an_edge_count_to_the_time_tier_at_once(gate_with):
    outcome, fake, _ = gate_with(Side_(), Side_(instructions=10_160_000), max_pairs=10, recount=0)
    (case,) = outcome.cases
    assert kinds(fake)["instructions"] == 2
    assert "no more counts allowed (--recount 0): the time tier decides" in case.trail[1].reason


def test_a_bimodal_case_counted_once_is_not_settled_within_its_margin(gate_with):
    """jax.jit resnet15's compile switches between two values 0.42 % apart: one count a side inside the margin
    is no verdict, a second one a side is."""
    calibrate_case(select([MODEL], ["autograd"], None, check_availability=False)[0][0], margin=0.02,
                   bimodal=True)
    outcome, fake, _ = gate_with(Side_(), Side_(instructions=10_060_000))  # +0.6 %: beyond a quarter of ±2 %
    (case,) = outcome.cases
    assert kinds(fake)["instructions"] == 4
    assert case.tier == "instructions" and case.verdict.verdict == "unchanged"
    assert "two modes" in case.verdict.reason


def test_the_three_op_refactor_passes_and_is_reported(gate_with):
    """503 -> 506 HLO ops (+0.6 %) with counts and time unchanged: evidence, not a verdict; exit 0."""
    outcome, fake, _ = gate_with(Side_(counters={"hlo_ops": 503}), Side_(counters={"hlo_ops": 506}))
    (case,) = outcome.cases
    assert outcome.exit_code() == 0 and case.tier == "instructions" and case.verdict.verdict == "unchanged"
    structural = case.trail[0]
    assert structural.verdict == "regressed" and not structural.settled
    assert "hlo_ops 503 -> 506 (+0.6 %)" in structural.reason and "evidence, not a verdict" in structural.reason
    from ttfg.present.verdicts import passing_means

    assert "hlo_ops 503 -> 506" in passing_means(outcome)


def test_a_doubled_model_still_fails_on_its_counters(gate_with):
    outcome, fake, _ = gate_with(Side_(counters={"hlo_ops": 503}), Side_(counters={"hlo_ops": 1006}))
    (case,) = outcome.cases
    assert outcome.exit_code() == 1 and case.tier == "structural" and kinds(fake) == {"timing": 2}


def test_strict_counters_fail_on_any_change(gate_with):
    outcome, _, _ = gate_with(Side_(counters={"hlo_ops": 503}), Side_(counters={"hlo_ops": 506}),
                              strict_counters=("hlo_ops",))
    assert outcome.exit_code() == 1 and outcome.cases[0].tier == "structural"
    assert "hlo_ops 503 -> 506 (strict counter)" in outcome.cases[0].verdict.reason


def test_discrete_counters_are_strict_by_default():
    base, head = timing(0, 1.0, {"graphs": 30, "fx_nodes": 300}), timing(0, 1.0, {"graphs": 31, "fx_nodes": 303})
    step = tiers.structural_step(base, head, min_effect=0.05)
    assert step.settled and "graphs 30 -> 31 (strict counter)" in step.reason and "fx_nodes 300 -> 303" in step.reason
    assert tiers.strict_counters() == ("counters.backend_compiles", "counters.graphs", "counters.graph_breaks",
                                       "counters.recompiles")
    assert tiers.strict_counters("none") == () and tiers.strict_counters("hlo_ops") == ("counters.hlo_ops",)
    with pytest.raises(UsageError, match="not a structural counter"):
        GateSettings(strict_counters=("instructions",))


def test_a_short_phase_that_grew_is_evidence_not_a_verdict():
    """A phase of about 10 ms (here 20 M instructions) grew 10 %: shown, and the whole window decides."""
    phases = {"trace": 20_000_000, "compile": 8_000_000_000}
    base = {"instructions": [count("instructions", 0, 8_020_000_000, phases)]}
    head = {"instructions": [count("instructions", 0, 8_022_000_000, {**phases, "trace": 22_000_000})]}
    step = tiers.count_step(base, head, None)
    assert step.settled and step.verdict == "unchanged"
    assert "trace instructions +10.0 %" in step.reason and "evidence, not a verdict" in step.reason


def test_a_phase_that_grew_is_a_regression_though_the_total_hardly_moved(gate_with):
    """jax.jit: XLA's compile is 94 % of the window, so 5 % more tracing moves the total by 0.2 %."""
    base = {"trace": 320_000_000, "lower": 74_000_000, "compile": 8_290_000_000, "execute": 123_000_000}
    head = {**base, "trace": 336_000_000}
    outcome, _, _ = gate_with(Side_(instructions=sum(base.values()), phases=base),
                              Side_(instructions=sum(head.values()), phases=head), backends=("jax.jit",))
    (case,) = outcome.cases
    assert case.tier == "instructions" and case.verdict.verdict == "regressed"
    assert case.verdict.ratio == pytest.approx(1.05)
    assert "trace instructions +5.0 %" in case.verdict.reason and "instructions +0.2 %" in case.verdict.reason


def test_base_and_head_count_samples_run_at_the_same_time(gate_with):
    barrier = threading.Barrier(2)  # times out (and fails the sample) unless both sides are in flight
    outcome, fake, _ = gate_with(Side_(), Side_(), barrier=barrier)
    assert outcome.cases[0].tier == "instructions" and not barrier.broken


def test_uncounted_work_leaves_unchanged_counts_to_wall_time(gate_with):
    """Inductor compiles C++ in child processes: unchanged instructions do not settle it; time does."""
    outcome, fake, _ = gate_with(Side_(), Side_(seconds=2.0), backends=("torch.compile",), min_pairs=5)
    (case,) = outcome.cases
    assert case.tier == "time" and case.verdict.verdict == "regressed"
    assert "child processes" in case.trail[1].reason and not case.trail[1].settled
    assert kinds(fake)["timing"] == 10  # the structural pair is the time tier's first


def test_without_valgrind_the_tier_says_so_once_and_time_decides(gate_with):
    outcome, fake, notes = gate_with(Side_(), Side_(), backends=("autograd", "jax.jit"), valgrind=False,
                                     max_pairs=20)
    assert [n for n in notes if "valgrind is not installed" in n] == [
        "instructions tier: valgrind is not installed; decisions fall back to wall time"]
    assert "instructions" not in kinds(fake)
    for case in outcome.cases:
        assert case.tier == "time" and case.verdict.verdict == "unchanged"
        assert "instructions not counted" in case.trail[1].reason


def test_more_allocations_alone_settle_a_regression_without_valgrind(gate_with):
    outcome, _, _ = gate_with(Side_(), Side_(allocs=5_500), valgrind=False)
    (case,) = outcome.cases
    assert case.tier == "instructions" and case.verdict.verdict == "regressed"
    assert "allocations" in case.verdict.reason


def test_the_budget_goes_to_the_cases_the_counts_left(gate_with):
    """autograd is settled by its counts; torch.compile's are not enough, so wall time takes the budget."""
    outcome, fake, _ = gate_with(Side_(), Side_(seconds=1.03), backends=("autograd", "torch.compile"), budget_s=200,
                                 max_pairs=60)
    settled = [c for c in outcome.cases if c.tier == "instructions"]
    timed = [c for c in outcome.cases if c.tier == "time"]
    assert len(settled) == len(timed) == 1 and settled[0].attempted == 2 and timed[0].attempted > 5  # a short screen
    pairs = [case for case, role, kind in fake.calls if kind == "timing" and role == "base"]
    assert pairs.count(timed[0].case) == timed[0].attempted
    assert timed[0].stop == gate_outcome.BUDGET


def test_a_failed_count_sample_does_not_settle(gate_with):
    head = Side_(instructions="callgrind: SIGILL in the probe")
    outcome, _, _ = gate_with(Side_(), head, max_pairs=20)
    (case,) = outcome.cases
    assert case.tier == "time"
    assert "SIGILL" in case.trail[1].reason


def test_time_alone_is_the_old_gate(gate_with):
    outcome, fake, _ = gate_with(Side_(), Side_(counters={"autograd_nodes": 104}), tiers=("time",), max_pairs=20)
    (case,) = outcome.cases
    assert case.tier == "time" and case.trail == [] and set(kinds(fake)) == {"timing"}


def test_without_the_time_tier_an_unsettled_case_is_inconclusive(gate_with):
    outcome, fake, _ = gate_with(Side_(), Side_(), backends=("torch.compile",), tiers=("structural", "instructions"))
    (case,) = outcome.cases
    assert case.verdict.verdict == "inconclusive" and case.tier == "instructions"
    assert "time tier was not selected" in case.verdict.reason and outcome.exit_code() == 0
    assert kinds(fake)["timing"] == 2


def test_files_hold_every_tier_sample_and_validate(gate_with, tmp_path):
    outcome, _, _ = gate_with(Side_(), Side_())
    for role in ("base", "head"):
        res = record.load(outcome.files[role])
        kinds_in_file = sorted({s.kind for s in res.cases[0].samples})
        assert kinds_in_file == ["allocations", "instructions", "timing"]
    data = json.loads(json.dumps(outcome.to_json()))
    assert data["cases"][0]["tier"] == "instructions"
    assert [t["tier"] for t in data["cases"][0]["tiers"]] == ["structural", "instructions", "time"]


def test_the_summary_and_table_name_the_tier(gate_with):
    from ttfg.present.gate_views import gate_markdown
    from rich.console import Console

    from ttfg.present.gate_views import gate_table

    outcome, _, _ = gate_with(Side_(), Side_(instructions=10_300_000))
    text = gate_markdown(outcome)
    assert "| decided by |" in text and "| instructions: first gradient |" in text
    assert "decided by the instructions tier on instructions" in text
    assert "structural tier: unchanged" in text
    con = Console(width=200, record=True)
    con.print(gate_table(outcome))
    assert "instructions" in con.export_text()


@pytest.mark.parametrize("text, expected", [
    ("time", ("time",)), ("time,structural", ("structural", "time")),
    (" Instructions , time ", ("instructions", "time")), (None, tiers.DEFAULT_TIERS)])
def test_parse_tiers(text, expected):
    assert tiers.parse_tiers(text) == expected


@pytest.mark.parametrize("text", ["", "walltime", "structural,,bogus"])
def test_parse_tiers_refuses_unknown_names(text):
    with pytest.raises(UsageError, match="structural, source, instructions, time"):
        tiers.parse_tiers(text)


def test_tier_margins_come_from_the_registry():
    from ttfg import metrics

    assert tiers.tier_metrics("instructions") == ("alloc_count", "instructions", "instructions_build", "instructions_trace",
                                                  "instructions_lower", "instructions_compile", "instructions_execute")
    for name in tiers.tier_metrics("instructions"):
        info = metrics.get(name)
        assert info.tier_margin == max(info.threshold, 2 * info.spread)
    assert metrics.get("counters.jaxpr_eqns").tier == "structural"


@pytest.mark.parametrize("value", ["bogus", "", "time,walltime"])
def test_an_unknown_tier_exits_2_before_any_work(value, capsys):
    from ttfg.cli import main

    assert main(["gate", "--base", "HEAD", "--tiers", value]) == 2
    err = capsys.readouterr().err
    assert "argument --tiers:" in err and "structural, source, instructions, time" in err and "Traceback" not in err


def test_ctrl_c_in_the_count_tier_ends_the_probes_in_flight_and_keeps_finished_samples(sides, tmp_path, monkeypatch):
    from ttfg.measure import runner

    stopped = []
    monkeypatch.setattr(runner, "stop_running_probes", lambda: stopped.append(True))
    monkeypatch.setattr(counting, "availability", lambda: (True, "callgrind"))
    fake = FakeSampler(sides, {"base": Side_(), "head": Side_()})

    def sampler(case, kind, cache, index, run):
        if kind == "instructions" and fake.role[str(run.target.source)] == "head":
            raise KeyboardInterrupt
        return fake(case, kind, cache, index, run)

    cases, skipped = select([MODEL], ["autograd"], None, check_availability=False)
    with pytest.raises(KeyboardInterrupt):
        run_gate(cases, skipped, sides["base"], sides["head"], GateSettings(tiers=tiers.DEFAULT_TIERS, profiles=0),
                 tmp_path / "out", sampler=sampler, clock=fake.monotonic)
    assert stopped == [True]
    base = record.load(tmp_path / "out" / "base.json")
    assert not base.complete and [s.kind for s in base.cases[0].samples][:1] == ["timing"]


def test_a_valgrind_failure_without_the_time_tier_exits_2_and_keeps_the_samples(gate_with):
    outcome, _, _ = gate_with(Side_(), Side_(instructions="probe exited with status 1 and no valid report (valgrind: "
                                             "failed to start tool 'callgrind')"), tiers=("structural", "instructions"))
    (case,) = outcome.cases
    assert case.stop == gate_outcome.COUNT_BROKEN and case.verdict.verdict == "inconclusive"
    assert "failed to start tool" in case.verdict.reason and outcome.exit_code() == 2
    head = record.load(outcome.files["head"])
    assert [s.kind for s in head.cases[0].samples if not s.ok] == ["instructions"]
    assert outcome.to_json()["cases"][0]["tiers"][1]["broken"].startswith("probe exited")


def test_an_unsteady_allocation_count_is_shown_but_never_settles():
    """jax's allocation counts vary between identical processes (XLA's thread pool): +7.4 % in an
    A/A power trial raised a false alarm. Declared unsteady for jax in the registry, they are
    evidence only, and the instruction counts decide."""
    base = {"instructions": [count("instructions", 0, 8_800_000_000)], "allocations": [count("allocations", 0, 2_191_746)]}
    head = {"instructions": [count("instructions", 0, 8_807_000_000)], "allocations": [count("allocations", 0, 2_354_081)]}
    strict = tiers.count_step(base, head, None)  # what the power benchmark's A/A trial saw decided "regressed"
    assert not strict.settled and strict.recount_base == ("allocations",)  # now: one base count shows no steadiness
    assert "allocations +7.4 % is evidence, not a verdict" in strict.reason
    unsteady = tiers.unsteady_counts("jax.jit")
    assert set(unsteady) == {"alloc_count"} and tiers.unsteady_counts("autograd") == {}
    step = tiers.count_step(base, head, None, unsteady=unsteady)
    assert step.verdict == "unchanged" and step.settled  # instructions agree; the allocations are set aside
    assert "alloc_count: not repeatable for this backend" in step.reason
    assert any(e["metric"] == "alloc_count" for e in step.evidence)


def test_a_library_on_jax_is_unsteady_as_jax_is_whatever_its_framework_is_named(monkeypatch):
    """The flaxlab example's backend (framework "flax") runs XLA's pool too: its allocation counts moved +4.0 % and
    +7.1 % in A/A gates whose instruction counts agreed to 0.2 %, and failed them. What decides is what the
    backend runs on (its modules: jaxlib), not the name of its framework."""
    from ttfg import engines
    from ttfg.engines import Facts

    nnx = Facts("flaxlab.nnx", True, "flax", ("flax", "jax", "jaxlib"))
    other = Facts("mylib.np", True, "mylib", ("mylib", "numpy"))
    real = engines.facts
    monkeypatch.setattr(engines, "facts", lambda name: {"flaxlab.nnx": nnx, "mylib.np": other}.get(name) or real(name))
    assert "jaxlib" in engines.runs_on("jax.eager") and engines.runs_on("flaxlab.nnx") >= {"flax", "jaxlib"}
    assert set(tiers.unsteady_counts("flaxlab.nnx")) == {"alloc_count"}
    assert tiers.unsteady_counts("mylib.np") == {}


def test_structural_counters_of_different_framework_releases_are_evidence_only():
    """Across environments (an upgrade gate, a dependency bump) a counter of another release's compiler
    does not settle: jax 0.4.38 against 0.10.2 differ by one HLO op while their work differs by a third."""
    base, head = timing(0, 1.0, {"hlo_ops": 370}), timing(0, 1.0, {"hlo_ops": 371})
    same_env = tiers.structural_step(base, head)
    assert same_env.settled and same_env.verdict == "regressed"
    across = tiers.structural_step(base, head, across_envs=True)
    assert not across.settled and across.verdict == "regressed" and "evidence, not a verdict" in across.reason
    assert across.evidence == same_env.evidence


def test_an_unknown_strict_counter_exits_2_before_any_work(capsys):
    from ttfg.cli import main

    assert main(["gate", "--base", "HEAD", "--strict-counters", "instructions"]) == 2
    err = capsys.readouterr().err
    assert "argument --strict-counters:" in err and "not a structural counter" in err and "hlo_ops" in err


def test_a_short_build_that_moved_is_screened_by_the_time_tier(gate_with):
    """autograd resnet15's build is 0.67 M instructions: a build 30 times its count (20 M, about 5 ms) is under the
    phase floor, so its count is evidence only, and the time tier screens the build with the import and the process."""
    outcome, _, _ = gate_with(Side_(build=670_000), Side_(build=20_000_000))
    (case,) = outcome.cases
    assert case.tier == "instructions" and case.verdict.verdict == "unchanged"
    assert "build instructions +" in case.trail[1].reason and "evidence, not a verdict" in case.trail[1].reason
    assert [g.metric for g in case.guards] == ["process_ttfg_s", "import_s", "build_s"]
    assert not case.screen.short and case.screen.pairs == case.attempted == 5  # a count could have covered the build
    assert "a count could cover build and did not decide it" in case.screen.why


class RatioTier:
    """A tier a test adds (``tier_step.Tier``): one more timing pair per case not yet settled, whose first gradient
    settles the case as regressed when the head took at least twice the base's, and tells the rest to go on."""

    name = "ratio"
    needs = ("timing",)

    def run(self, cases, trails, ctx):
        from ttfg.decide.stats import compare_counter
        from ttfg.decide.tier_step import TierStep, metric_evidence

        for case in cases:
            if trails[case.id].settled:
                continue
            pair = ctx.take_pair(case)
            base, head = pair["base"].first_grad_s, pair["head"].first_grad_s
            verdict = compare_counter([base], [head], threshold=1.0)
            found = metric_evidence("first_grad_s", verdict, 1.0, [base], [head])
            doubled = head >= 2 * base
            yield case, TierStep(self.name, doubled, found["verdict"] if doubled else "inconclusive",
                                 f"first gradient {base:g} s -> {head:g} s", [found])


def test_a_tier_is_one_object_registered_in_order(gate_with, monkeypatch):
    """Adding a tier is its object and its place in ``tiers.REGISTERED`` (docs/reference/layout.md): --tiers knows it,
    the one loop runs it between the counts and the time, its step is on every case's trail and in gate.json, and
    the footer names it in its place."""
    from ttfg.present.gate_views import gate_footer

    monkeypatch.setattr(tiers, "REGISTERED", [*tiers.REGISTERED[:-1], RatioTier(), tiers.REGISTERED[-1]])
    assert tiers.parse_tiers("time, ratio,structural") == ("structural", "ratio", "time")
    with pytest.raises(UsageError, match="expected a comma-separated list of structural, source, instructions, ratio, time"):
        tiers.parse_tiers("nope")
    chosen = ("structural", "ratio", "time")
    outcome, fake, notes = gate_with(Side_(), Side_(seconds=3.0), tiers=chosen)
    (case,) = outcome.cases
    assert case.tier == "ratio" and case.verdict.verdict == "regressed" and outcome.exit_code() == 1
    assert [t.tier for t in case.trail] == ["structural", "ratio"] and case.attempted == 2  # its pair and tier a's
    assert [t["tier"] for t in case.to_json()["tiers"]] == ["structural", "ratio"]
    assert any(n.startswith("ratio tier: ") and "regressed (settled): first gradient 1.02 s -> 2.97 s" in n for n in notes)
    assert "Gate that ran: structural → ratio;" in gate_footer(outcome)
    same, _, _ = gate_with(Side_(), Side_(), tiers=chosen, max_pairs=12)
    (case,) = same.cases
    assert [t.tier for t in case.trail][:2] == ["structural", "ratio"] and case.tier == "time"  # left to the time
    assert "Gate that ran: structural → ratio → time;" in gate_footer(same)


@pytest.mark.parametrize("on_jaxlib", [True, False])
def test_an_allocation_count_the_processes_do_not_repeat_calls_for_no_attribution(sides, tmp_path, monkeypatch,
                                                                                 on_jaxlib):
    """Issue 42 item 1: a comment-only gate of jax.jit resnet15 settled "unchanged" by its instructions, then took
    sampled stacks and call counts (eight processes) because jax's allocation count, which varies between processes
    of one commit, moved +2.4 %. The change is now said as evidence, and no attribution is taken; where the processes
    ran no runtime that makes it vary, the same move still calls for one."""
    from dataclasses import replace

    from ttfg.results.runtimes import Runtimes

    class OnRuntime(FakeSampler):
        def __call__(self, case, kind, cache, index, run):
            if kind in ("profile", "calls"):
                self.calls.append((case.id, self.role[str(run.target.source)], kind))
                return count(kind, index, "no profiler here")
            sample = super().__call__(case, kind, cache, index, run)
            if kind == "allocations":  # the count alone moves, as on jax.jit (the bytes held within 1 %)
                sample = replace(sample, alloc_bytes=500_000, alloc_peak_bytes=50_000)
            if on_jaxlib and kind in ("instructions", "allocations") and sample.ok:
                sample = replace(sample, runtimes=Runtimes(modules=("jaxlib",)))
            return sample

    monkeypatch.setattr(counting, "availability", lambda: (True, "callgrind"))
    fake = OnRuntime(sides, {"base": Side_(allocs=5_000), "head": Side_(allocs=5_250)})  # +5 % allocations
    cases, skipped = select([MODEL], ["autograd"], None, check_availability=False)
    outcome = run_gate(cases, skipped, sides["base"], sides["head"], GateSettings(tiers=tiers.DEFAULT_TIERS,
                                                                                  profiles=3),
                       tmp_path / "out", sampler=fake, clock=fake.monotonic)
    (case,) = outcome.cases
    (change,) = [r for r in case.changes if r.metric == "alloc_count"]
    attributed = [kind for _, _, kind in fake.calls if kind in ("profile", "calls")]
    if on_jaxlib:
        assert change.verdict.verdict == "inconclusive" and "not repeatable here (XLA's thread pool" in \
            change.verdict.reason
        assert attributed == [] and not case.regressed_anything()
        assert case.verdict.verdict == "unchanged" and outcome.exit_code() == 0
    else:  # steady here: the count tier itself calls it a regression, explained
        assert change.verdict.verdict == case.verdict.verdict == "regressed" and sorted(set(attributed)) == \
            ["calls", "profile"]
        # gate.json's cost counts them: they ran after the verdict, and they are this gate's processes too
        assert case.cost["attribution"]["processes"] == len(attributed)


def test_allocations_after_the_tiers_count_only_what_the_instructions_tier_did_not(gate_with):
    """Issue 39: ``--allocations`` (the CI kit passes it) counted allocations again after the tiers, though the
    instructions tier had counted them on both sides: two more processes that decided nothing. Now it takes only
    the rest of ``--alloc-repeat``, and all of it where no count tier ran."""
    outcome, fake, notes = gate_with(Side_(), Side_(instructions=10_050_000, allocs=5_010), allocations=True)
    assert outcome.cases[0].verdict.verdict == "unchanged"
    assert kinds(fake) == {"timing": 4, "instructions": 2, "allocations": 2}  # before: 4 allocation processes
    assert not any(n.startswith("allocations ") for n in notes)
    _, fake, _ = gate_with(Side_(), Side_(), allocations=True, alloc_repeat=3)
    assert kinds(fake)["allocations"] == 6  # 1 a side by the tier, then 2 more a side
    _, fake, notes = gate_with(Side_(), Side_(), allocations=True, tiers=("structural", "time"))
    assert kinds(fake)["allocations"] == 2 and sum(n.startswith("allocations ") for n in notes) == 2


def test_a_count_within_the_cases_margin_calls_for_no_attribution(gate_with):
    """A build count +1.1 % is beyond the registry's 1 % but inside the case's margin: the instructions tier settles
    "unchanged", and the explanation's row of that count is not a change either, so no attribution (before, the row
    said "regressed" and the gate took 8 processes of stacks and calls after an A/A gate of a jax library)."""
    outcome, fake, _ = gate_with(Side_(), Side_(build=5_055_000))
    (case,) = outcome.cases
    assert case.tier == "instructions" and case.verdict.verdict == "unchanged" and outcome.exit_code() == 0
    row = next(r for r in case.changes if r.metric == "instructions_build")
    assert row.verdict.verdict == "inconclusive" and "by the instructions tier: not a change" in row.verdict.reason
    assert not case.regressed_anything() and case.attribution is None
