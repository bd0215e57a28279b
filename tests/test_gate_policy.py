"""The gate's loop and policy, driven by an in-process sampler with known answers.

``run_gate`` takes its samples through a ``sampler`` (by default ``run_sample``, a cold
process). Here a fake one answers instantly from a script per side and advances a fake
clock by a fixed wall time per sample, so the stopping rules, the budget, the final
look, failure handling and Ctrl-C bookkeeping are checked in milliseconds and exactly.
The real processes, worktrees and a real regression are in test_gate.py.
"""

from __future__ import annotations

import math
import sys

import pytest

from ttfg.decide import gate_loop
from ttfg.decide.gate_loop import run_gate
from ttfg.decide.gate_settings import GUARDED, GateSettings, refuse_unreported
from ttfg.errors import UsageError
from ttfg.measure.sides import Side
from ttfg.results import gate_outcome
from ttfg.measure.cases import select
from ttfg.provision.worktrees import Revision
from ttfg.results import record
from ttfg.results.model import Sample

MODEL = "resnet15:blocks=2"


def good(index: int, value: float | None) -> Sample:
    """A complete good timing sample whose first gradient took ``value`` seconds."""
    parts = None if value is None else value / 4
    return Sample(**{"kind": "timing", "ok": True, "index": index, "cache": "cold", "error": None, "stderr_tail": None,
            "started_at": "2026-12-02T00:00:00+00:00", "process_wall_s": 1.0, "import_s": 0.5, "build_s": 0.01,
            "first_grad_s": value, "second_grad_s": 0.001, "trace_s": parts, "lower_s": parts, "compile_s": None,
            "execute_s": parts, "process_ttfg_s": 1.0, "cpu_s": 1.0, "peak_rss_bytes": 10**8,
            "compile_share": 0.0, "loss": 1.0, "counters": {"autograd_nodes": 100}, "cold_evidence": None})


def profile_sample(role: str, index: int) -> Sample:
    """Sampled stacks in which head spends 40 ms more in ``slow_helper``, called by ``trace``."""
    extra = 0.04 if role == "head" else 0.0
    top = [{"fn": "first_gradient", "file": "harness/engines/x.py", "line": 10, "incl": 0.5 + extra, "self": 0.0},
           {"fn": "trace", "file": "jax/_src/api.py", "line": 200, "incl": 0.2 + extra, "self": 0.1},
           {"fn": "slow_helper", "file": "models/spec.py", "line": 77, "incl": 0.05 + extra, "self": 0.05 + extra},
           {"fn": "compile", "file": "jax/_src/compiler.py", "line": 300, "incl": 0.3, "self": 0.3}]
    return Sample(kind="profile", ok=True, index=index, cache="cold", started_at="2026-12-02T00:00:00+00:00",
                  process_wall_s=1.0, profile_top=top, profile_tool="pyinstrument (fake)")


def calls_sample(role: str, index: int) -> Sample:
    """Python call counts in which head calls the project's ``_scale_step`` 20,000 times (base: never) and a
    framework's ``vspace`` 1,000 times more; paths are under each side's own folder, as installs are."""
    root, site = f"/installs/{role}", f"/envs/{role}/lib/python3.11/site-packages"
    extra = 1 if role == "head" else 0
    top = [{"fn": "vspace", "file": f"{site}/autograd/core.py", "line": 288, "incl": 4780 + 1000 * extra,
            "self": 4780 + 1000 * extra},
           {"fn": "MylabEngine.__init__.<locals>.loss", "file": f"{root}/mylab/ttfg_plugin.py", "line": 33, "incl": 1,
            "self": 1},
           {"fn": "scale", "file": f"{root}/mylab/ops.py", "line": 9 if extra else 4, "incl": 1, "self": 1}]
    if extra:
        top.insert(0, {"fn": "_scale_step", "file": f"{root}/mylab/ops.py", "line": 4, "incl": 20_000,
                       "self": 20_000})
    return Sample(kind="calls", ok=True, index=index, cache="cold", started_at="2026-12-02T00:00:00+00:00",
                  process_wall_s=1.0, calls_top=top, calls_tool="cProfile call counts (fake)")


def gate_with_a_grown_model_line(gate_with, monkeypatch):
    """A regressed gate whose calls samples also carry a model line that grew: ``mylab/layers.py:42`` (``block``),
    30 jaxpr equations on the base and 42 on the head, under each side's own install. Returns the outcome."""
    from ttfg.decide import python_calls

    module = sys.modules[__name__]
    plain = module.calls_sample

    def calls(role, index):
        s = plain(role, index)
        s.source_lines = [{"kind": "jaxpr_eqns", "file": f"/installs/{role}/mylab/layers.py", "line": 42, "fn": "block",
                           "n": 30 + (12 if role == "head" else 0)}]
        return s

    monkeypatch.setattr(module, "calls_sample", calls)
    monkeypatch.setattr(python_calls, "roots", lambda side: [f"/installs/{side.role}"])
    outcome, _ = gate_with(noisy(1.0), noisy(1.2, shift=3), profiles=1)
    return outcome


def failed(index: int, error: str) -> Sample:
    return Sample(kind="timing", ok=False, index=index, cache="cold", error=error, stderr_tail="",
                  started_at="2026-12-02T00:00:00+00:00", process_wall_s=1.0)


class FakeSampler:
    """Answers ``script[role](index)``: a number of seconds, None (metric missing) or an error text.

    Each sample advances the clock by ``wall_s``; ``interrupt_at`` raises KeyboardInterrupt
    instead of that sample (a Ctrl-C while a process runs).
    """

    def __init__(self, sides: dict[str, Side], base, head, wall_s: float = 10.0, interrupt_at: int | None = None):
        self.role = {str(side.source): role for role, side in sides.items()}
        self.script = {"base": base, "head": head}
        self.wall_s = wall_s
        self.interrupt_at = interrupt_at
        self.now = 0.0
        self.calls: list[tuple[str, str, int]] = []
        self.profiles: list[tuple[str, str, int]] = []
        self.profile = profile_sample
        self.counted: list[tuple[str, str, int]] = []
        self.call_counts = calls_sample

    def monotonic(self) -> float:
        return self.now

    def __call__(self, case, kind, cache, index, run) -> dict:
        if self.interrupt_at is not None and len(self.calls) == self.interrupt_at:
            raise KeyboardInterrupt
        role = self.role[str(run.target.source)]
        if kind == "profile":  # sampled stacks, after the decision: outside the clock and the pair calls
            self.profiles.append((case.id, role, index))
            return self.profile(role, index)
        if kind == "calls":  # Python call counts, after the decision, with the stacks
            self.counted.append((case.id, role, index))
            return self.call_counts(role, index)
        self.calls.append((case.id, role, index))
        self.now += self.wall_s
        answer = self.script[role](index)
        if isinstance(answer, Sample):
            answer.index = index
            return answer
        return failed(index, answer) if isinstance(answer, str) else good(index, answer)


@pytest.fixture
def sides(tmp_path) -> dict[str, Side]:
    made = {}
    for role, commit in (("base", "a" * 40), ("head", "b" * 40)):
        (tmp_path / role).mkdir()
        made[role] = Side(role, Revision(role, commit, f"{role} subject"), tmp_path / role)
    return made


@pytest.fixture
def gate_with(sides, tmp_path, monkeypatch):
    """Run the gate over the given backends with a FakeSampler and its clock."""

    def run(base, head, backends=("autograd",), wall_s=10.0, interrupt_at=None, **settings):
        fake = FakeSampler(sides, base, head, wall_s, interrupt_at)
        cases, skipped = select([MODEL], list(backends), None, check_availability=False)
        outcome = run_gate(cases, skipped, sides["base"], sides["head"], GateSettings(**settings),
                           tmp_path / "out", sampler=fake, clock=fake.monotonic)
        return outcome, fake

    return run


def noisy(level: float, spread: float = 0.02, shift: int = 0):
    """Deterministic timings around ``level``: a repeating pattern of up to +-``spread`` in
    log; give head another ``shift`` than base, so that the pair ratios vary too."""
    pattern = (0.0, 1.0, -1.0, 0.5, -0.5, 0.8, -0.8, 0.2)
    return lambda i: level * math.exp(spread * pattern[(i + shift) % len(pattern)])


def test_a_gross_regression_stops_at_min_pairs_and_alternates_the_order(gate_with):
    outcome, fake = gate_with(noisy(1.0), noisy(2.0, shift=3), min_pairs=5)
    (case,) = outcome.cases
    assert case.stop == gate_outcome.DECIDED and case.pairs == case.attempted == 5
    assert case.verdict.verdict == "regressed" and 1.9 < case.verdict.ratio < 2.1
    assert outcome.exit_code() == 1 and outcome.regressions() == [case]
    roles = [role for _, role, _ in fake.calls]
    assert roles[:8] == ["base", "head", "head", "base", "base", "head", "head", "base"]
    assert [index for _, _, index in fake.calls][:4] == [0, 0, 1, 1]


def test_identical_sides_pass(gate_with):
    outcome, _ = gate_with(noisy(1.0), noisy(1.0, shift=3), max_pairs=20)
    (case,) = outcome.cases
    assert case.verdict.verdict == "unchanged" and case.stop == gate_outcome.DECIDED
    assert outcome.exit_code() == 0


def test_max_pairs_ends_an_undecidable_case(gate_with):
    """A 4 % shift with 10 % noise cannot be decided against a 5 % effect in 6 pairs."""
    outcome, _ = gate_with(noisy(1.0, 0.1), noisy(1.04, 0.1, shift=3), min_pairs=3, max_pairs=6)
    (case,) = outcome.cases
    assert case.stop == gate_outcome.MAX_PAIRS and case.attempted == 6
    assert case.verdict.verdict == "inconclusive"


def test_budget_ends_sampling_and_the_final_look_decides(gate_with):
    """20 s per pair, 100 s budget: five pairs. A 25 % slowdown with 5 % noise is not yet
    decided by the interim looks' small levels at five pairs (they would take nine), but is
    at the level reserved for the last look."""
    outcome, fake = gate_with(noisy(1.0, 0.05), noisy(1.25, 0.05, shift=3), budget_s=100, min_pairs=5, max_pairs=60)
    (case,) = outcome.cases
    assert case.stop == gate_outcome.BUDGET and case.attempted == 5 and len(fake.calls) == 10
    assert case.verdict.verdict == "regressed"
    assert "final look" in case.verdict.method
    assert "the time budget ran out after 5 of at most 60 pairs" in case.verdict.reason
    assert outcome.exit_code() == 1


def test_budget_is_shared_round_robin_and_a_decided_case_stops(gate_with):
    """Two cases, one pair each per round; the decided one leaves the budget to the other."""
    outcome, fake = gate_with(noisy(1.0), noisy(2.0, shift=3), backends=("autograd", "jax.jit"), budget_s=400, min_pairs=5,
                              max_pairs=60)
    first, second = outcome.cases
    order = [case for case, role, _ in fake.calls if role == "base"]
    assert order[:4] == [first.case, second.case, first.case, second.case]
    assert first.stop == second.stop == gate_outcome.DECIDED and first.attempted == second.attempted == 5


def test_budget_too_short_for_two_pairs_is_inconclusive(gate_with):
    outcome, _ = gate_with(noisy(1.0), noisy(3.0, shift=3), budget_s=15)
    (case,) = outcome.cases
    assert case.stop == gate_outcome.BUDGET and case.attempted == 1
    assert case.verdict.verdict == "inconclusive" and "at least 2 are needed" in case.verdict.reason
    assert outcome.exit_code() == 0


def test_a_base_that_never_runs_exits_2(gate_with):
    outcome, fake = gate_with(lambda i: "RuntimeError: broken model", noisy(1.0), max_failures=2)
    (case,) = outcome.cases
    assert case.stop == gate_outcome.BASE_BROKEN and case.attempted == 2 and case.failed == {"base": 2, "head": 0}
    assert case.verdict.verdict == "inconclusive" and "RuntimeError: broken model" in case.verdict.reason
    assert outcome.exit_code() == 2 and outcome.base_broken() == [case]


def test_a_head_that_never_runs_is_a_regression(gate_with):
    outcome, _ = gate_with(noisy(1.0), lambda i: "ImportError: gone", max_failures=3)
    (case,) = outcome.cases
    assert case.stop == gate_outcome.HEAD_BROKEN and case.attempted == 3
    assert case.verdict.verdict == "regressed" and "head cannot run" in case.verdict.reason
    assert outcome.exit_code() == 1


def test_failures_after_good_samples_stop_the_case_and_drop_incomplete_pairs(gate_with):
    head = lambda i: noisy(1.0, shift=3)(i) if i < 3 else "flaky"  # noqa: E731
    outcome, _ = gate_with(noisy(1.0), head, max_failures=2)
    (case,) = outcome.cases
    assert case.attempted == 5 and case.pairs == 3
    assert case.failed == {"base": 0, "head": 2}
    assert "sampling stopped after repeated failures after 3 of at most" in case.verdict.reason
    # 3 complete pairs are fewer than --min-pairs (5), and only head failed: not a pass (issue 25, class 4).
    assert case.stop == gate_outcome.HEAD_FAILING and case.verdict.verdict == "inconclusive" and outcome.exit_code() == 2


def test_a_metric_the_backend_does_not_report_stops_at_once(gate_with):
    outcome, _ = gate_with(lambda i: 1.0, lambda i: 1.0, metric="compile_s")  # good samples, no compile phase
    (case,) = outcome.cases
    assert case.stop == gate_outcome.NO_METRIC and case.attempted == 1
    assert case.verdict.verdict == "inconclusive" and "does not report compile_s" in case.verdict.reason


def test_a_guarded_phase_a_backend_does_not_split_is_said_per_case_and_not_waited_for(gate_with):
    """Issue 29, class 19: ``--guard compile_s`` over autograd (one phase) and jax.jit (split) guards jax.jit's
    compile phase and says autograd does not split one, instead of sampling autograd to the end for a
    compile phase that never comes and reporting "0 complete pairs"."""
    notes = []
    base, head = noisy(1.0), noisy(1.0, shift=3)

    def sample(role):
        def answer(i):
            s = good(i, (base if role == "base" else head)(i))
            s.compile_s = s.first_grad_s / 4
            return s
        return answer

    outcome, fake = gate_with(noisy(1.0), noisy(1.0, shift=3), backends=("autograd",), guard=("compile_s",),
                              max_pairs=20)
    (case,) = outcome.cases
    assert case.stop == gate_outcome.DECIDED and case.verdict.verdict == "unchanged"
    assert [g.metric for g in case.guards] == ["first_grad_s"]
    assert "0 complete pair" not in case.verdict.reason
    assert "not guarded: autograd does not split a compile phase off its first gradient (it reports execute only)" \
        in case.verdict.reason
    outcome, _ = gate_with(sample("base"), sample("head"), backends=("autograd", "jax.jit"), guard=("compile_s",),
                           max_pairs=20)
    by_backend = {c.case.split("/")[1]: c for c in outcome.cases}
    assert [g.metric for g in by_backend["jax.jit"].guards] == ["first_grad_s", "compile_s"]
    assert "not guarded" not in by_backend["jax.jit"].verdict.reason
    assert [g.metric for g in by_backend["autograd"].guards] == ["first_grad_s"]
    assert "autograd does not split a compile phase" in by_backend["autograd"].verdict.reason


def test_a_guard_no_selected_case_reports_is_refused_naming_the_phases_reported():
    cases, _ = select([MODEL], ["autograd", "torch.compile"], None, check_availability=False)
    with pytest.raises(UsageError, match=r"--guard lower_s: no selected case can report it: autograd does not split "
                                         r"a lower phase .*\(it reports execute only\).*; torch.compile does not "
                                         r"split a lower phase .*\(it reports trace, compile, execute\)"):
        refuse_unreported(GateSettings(guard=("lower_s",)), cases)
    with pytest.raises(UsageError, match="--metric compile_s: no selected case"):
        refuse_unreported(GateSettings(metric="compile_s"), cases[:1])
    refuse_unreported(GateSettings(guard=("compile_s",)), cases)  # torch.compile reports it: guarded there
    refuse_unreported(GateSettings(), cases)  # the default guard: every backend reports every phase a process pays


def test_ctrl_c_keeps_finished_samples_in_files_marked_incomplete(gate_with, tmp_path):
    with pytest.raises(KeyboardInterrupt):
        gate_with(noisy(1.0), noisy(1.1, shift=3), interrupt_at=5)
    # Five samples were taken before the interrupt: pairs 0 and 1, then pair 2's base.
    for role, kept in (("base", 3), ("head", 2)):
        saved = record.load(tmp_path / "out" / f"{role}.json")
        assert not saved.complete
        assert len(saved.cases[0].good()) == kept


# --------------------------------------------------------------------------- failures are evidence


def test_a_head_that_fails_every_other_process_is_a_regression(gate_with):
    """The pairs that complete look fine (identical times), and no streak reaches max_failures:
    only the failure counts show the change broke something."""
    head = lambda i: noisy(1.0, shift=3)(i) if i % 2 == 0 else "RuntimeError: flaky"  # noqa: E731
    outcome, _ = gate_with(noisy(1.0), head, max_failures=3, max_pairs=20)
    (case,) = outcome.cases
    assert case.failed == {"base": 0, "head": case.attempted // 2}
    assert case.verdict.verdict == "regressed" and case.verdict.method == "fisher-failures"
    assert "head fails more often" in case.verdict.reason and "RuntimeError: flaky" in case.verdict.reason
    assert case.failures is not None and case.failures.regressed
    assert outcome.exit_code() == 1 and outcome.regressions() == [case]
    assert outcome.to_json()["cases"][0]["failures"]["head_failed"] == case.failed["head"]


def test_one_flaky_failure_does_not_fail_the_gate(gate_with):
    head = lambda i: "TimeoutError" if i == 7 else noisy(1.0, shift=3)(i)  # noqa: E731
    outcome, _ = gate_with(noisy(1.0), head, min_pairs=12, max_pairs=20)
    (case,) = outcome.cases
    assert case.failed["head"] == 1 and not case.failures.regressed
    assert case.verdict.verdict != "regressed" and outcome.exit_code() == 0


# --------------------------------------------------------------------------- attribution and the summary


def phased(index: int, trace: float) -> Sample:
    """A good sample whose trace phase is ``trace`` seconds on top of fixed other phases."""
    s = good(index, 0.5 + trace)
    s.trace_s, s.lower_s, s.compile_s, s.execute_s = trace, 0.1, 0.3, 0.1
    return s


def test_a_regression_is_attributed_to_the_phase_that_grew(gate_with):
    outcome, _ = gate_with(lambda i: phased(i, 0.1 * noisy(1.0)(i)), lambda i: phased(i, 0.6 * noisy(1.0, shift=3)(i)),
                           profiles=0)
    (case,) = outcome.cases
    assert case.verdict.verdict == "regressed" and case.attribution is not None
    a = case.attribution  # the Attribution the gate computed, kept on the case (one type, written and read back)
    assert outcome.attributions == {case.case: a}
    assert a.paired and a.largest_phase().phase == "trace"
    assert a.largest_phase().delta == pytest.approx(0.5, rel=0.05)
    assert {p.phase for p in a.phases} >= {"import", "build", "trace", "lower", "compile", "execute"}
    assert a.functions == [] and any("no function-level data" in n for n in a.notes)
    data = outcome.to_json()["cases"][0]["attribution"]
    assert data["largest_phase"] == "trace" and data["paired"] is True


def test_an_unchanged_case_is_not_attributed(gate_with):
    outcome, _ = gate_with(noisy(1.0), noisy(1.0, shift=3), max_pairs=20)
    assert outcome.cases[0].attribution is None


def test_summary_states_what_passing_means_and_where_a_regression_went(gate_with):
    from ttfg.present.gate_views import GATE_MARKER, gate_markdown
    from ttfg.present.verdicts import passing_means

    outcome, _ = gate_with(lambda i: phased(i, 0.1 * noisy(1.0)(i)), lambda i: phased(i, 0.6 * noisy(1.0, shift=3)(i)))
    text = gate_markdown(outcome)
    assert text.startswith(GATE_MARKER + "\n## ttfg gate: regression")
    meaning = passing_means(outcome)
    assert meaning in text and meaning.startswith("Passing means: ") and meaning.count(". ") == 0
    assert "5 %" in meaning and "alpha 0.01" in meaning and "two one-sided tests" in meaning
    assert "**Where it went**" in text and "largest phase change: trace +" in text

    aa, _ = gate_with(noisy(1.0), noisy(1.0, shift=3), max_pairs=20)
    assert "unchanged (within ±5 %)" in gate_markdown(aa)


def test_a_regressed_case_gets_sampled_stacks_and_names_the_function_that_grew(gate_with, tmp_path):
    outcome, fake = gate_with(noisy(1.0), noisy(1.2, shift=3), profiles=2)
    (case,) = outcome.cases
    assert case.verdict.verdict == "regressed"
    assert sorted(fake.profiles) == sorted([(case.case, "base", 0), (case.case, "head", 0), (case.case, "base", 1),
                                            (case.case, "head", 1)])
    top = outcome.attributions[case.case].top_function("s")
    assert (top.fn, top.where) == ("slow_helper", "models/spec.py:77") and top.delta_self == pytest.approx(0.04)
    assert outcome.attributions[case.case].function_samples == {"s": {"base": 2, "head": 2}}
    saved = record.load(tmp_path / "out" / "head.json")
    assert len([s for s in saved.cases[0].samples if s.kind == "profile"]) == 2 and saved.complete


def test_no_profiles_for_a_case_that_did_not_regress_or_when_switched_off(gate_with):
    _, fake = gate_with(noisy(1.0), noisy(1.0, shift=3), max_pairs=20)
    assert fake.profiles == []
    outcome, fake = gate_with(noisy(1.0), noisy(2.0, shift=3), profiles=0)
    assert fake.profiles == [] and outcome.cases[0].attribution.functions == []


def test_a_failing_profile_costs_only_the_function_list(gate_with, monkeypatch):
    def broken(role, index):
        return failed(index, "ModuleNotFoundError: No module named 'pyinstrument' (in phase profile)")

    monkeypatch.setattr("tests.test_gate_policy.profile_sample", broken)
    outcome, _ = gate_with(noisy(1.0), noisy(2.0, shift=3))
    (case,) = outcome.cases
    assert case.verdict.verdict == "regressed" and outcome.exit_code() == 1
    assert case.attribution.functions == [] and case.failed == {"base": 0, "head": 0}


# --------------------------------------------------------------------------- every phase a cold start pays


def built_in(build_s: float, first: float = 1.0, shift: int = 0):
    """Samples whose build takes ``build_s`` (with 10 % noise) and whose first gradient does not change."""
    def answer(i: int) -> Sample:
        s = good(i, noisy(first, shift=shift)(i))
        s.build_s = noisy(build_s, 0.1, shift=shift)(i)
        return s

    return answer


def test_a_build_38_times_slower_fails_the_gate_and_is_named(gate_with):
    """The experiment of issue 24: 0.8 ms -> 30.9 ms of build, the first gradient unchanged."""
    outcome, _ = gate_with(built_in(0.0008), built_in(0.0309, shift=3), profiles=0)
    (case,) = outcome.cases
    assert case.verdict.verdict == "regressed" and outcome.exit_code() == 1
    assert case.metric == "build_s" and case.tier == "time" and case.verdict.reason.startswith("build: ")
    assert case.figure.ratio == pytest.approx(38.6, rel=0.1)
    assert case.figure.head / case.figure.base == pytest.approx(case.figure.ratio)  # its own ratio, nothing else's
    assert [g.metric for g in case.guards] == ["first_grad_s", "process_ttfg_s", "import_s", "build_s"]
    assert {g.metric: g.verdict.verdict for g in case.guards}["build_s"] == "regressed"
    data = outcome.to_json()["cases"][0]
    assert data["metric"] == "build_s" and data["figure"]["tier"] == "time" and len(data["guards"]) == 4


def test_the_guarded_timings_share_one_alpha(gate_with):
    """Bonferroni over the guard: each timing's test runs at alpha / 4, so the case's false-alarm rate stays
    at most alpha; a guard of one timing is the old gate, at the whole alpha."""
    settings = GateSettings()
    assert settings.guard == GUARDED and settings.guard_alpha == pytest.approx(0.01 / 4)
    assert GateSettings(metric="first_grad_cpu_s").guard == ("first_grad_cpu_s", "process_ttfg_s", "import_s",
                                                               "build_s")
    assert GateSettings(guard=("first_grad_s",)).guard_alpha == 0.01
    assert GateSettings(guard=("build_s",)).guard == ("first_grad_s", "build_s")  # the gated metric is always in
    outcome, _ = gate_with(noisy(1.0), noisy(1.0, shift=3), max_pairs=20)
    tests = gate_loop._new_tests(GateSettings(), GUARDED)
    assert {t.alpha for t in tests.values()} == {0.0025}
    assert outcome.cases[0].verdict.verdict == "unchanged" and len(outcome.cases[0].guards) == 4


def test_a_guard_that_is_not_a_timing_is_refused():
    from ttfg.errors import UsageError

    with pytest.raises(UsageError, match="--guard alloc_count is not a timing"):
        GateSettings(guard=("alloc_count",))
