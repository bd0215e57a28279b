"""A count decides only when its steadiness was shown for this case on this machine (harness/decide/steadiness.py).

In-process: the rule on plain numbers, then the count tier with a fake sampler whose samples carry the runtimes
record the probe measures (harness/measure/runtimes.py). The Haiku-like case is the issue's: a jax library set up
by ``ttfg init`` declares ``modules = ["jax", "<package>"]``, never jaxlib, and its allocation count moved +4.9 %
on a comment-only pull request while its instructions moved 0.2 %: it must not decide "regressed".
"""

from __future__ import annotations

import pytest

from ttfg import engines
from ttfg.decide import steadiness, tiers
from ttfg.decide.count_margins import Margin, default_margin
from ttfg.decide.tier_instructions import _count_case
from ttfg.decide.tier_step import TierContext
from ttfg.engines import Facts
from ttfg.measure.cases import select
from ttfg.results.model import Sample
from ttfg.results.runtimes import Runtimes
from tests.test_gate_tiers import count, gate_with  # noqa: F401  (a fixture)
from tests.test_gate_policy import sides  # noqa: F401  (the fixture gate_with uses)

UNCALIBRATED = Margin(0.025, why="this case is not calibrated")
CALIBRATED = Margin(0.01, "2026-12-05T00:00:00+00:00", 10, False, 1e9)
XLA = Runtimes(("jaxlib",), ("libjax_common.so",), 17, 2)
PLAIN = Runtimes((), (), 3, 2)


def test_a_calibrated_margin_decides():
    got = steadiness.standing("alloc_count", CALIBRATED, [100.0], [110.0], XLA.multithreaded)
    assert got.decides and "calibrated on this machine" in got.why


def test_uncalibrated_allocations_of_a_multithreaded_runtime_never_decide():
    got = steadiness.standing("alloc_count", UNCALIBRATED, [100.0, 100.0], [104.9], XLA.multithreaded)
    assert not got.decides and got.noise and not got.recount_base
    assert "multithreaded runtime (jaxlib" in got.why
    # Instructions of the same process are not allocation counts: the rule of the margin applies to them.
    assert steadiness.standing("instructions", UNCALIBRATED, [100.0], [100.2], XLA.multithreaded).decides


def test_base_and_head_within_the_margin_decide():
    got = steadiness.standing("instructions", UNCALIBRATED, [100.0], [101.0])
    assert got.decides and got.why == "base and head agree within the margin"


def test_beyond_the_margin_on_one_base_count_asks_for_a_second():
    got = steadiness.standing("instructions", UNCALIBRATED, [100.0], [103.0])
    assert not got.decides and got.recount_base and not got.noise


def test_two_base_counts_that_agree_let_it_decide_and_two_that_do_not_make_it_evidence():
    agree = steadiness.standing("instructions", UNCALIBRATED, [100.0, 100.5], [103.0])
    assert agree.decides and "2 base counts agree" in agree.why
    apart = steadiness.standing("instructions", UNCALIBRATED, [100.0, 104.0], [107.0])
    assert not apart.decides and not apart.recount_base and "not shown steady" in apart.why


def test_a_count_the_registry_knows_unsteady_is_noise():
    got = steadiness.standing("alloc_count", UNCALIBRATED, [100.0], [110.0], unsteady="XLA's pool")
    assert not got.decides and got.noise and got.why.startswith("not repeatable")


class Sampler:
    """Count samples of a script per role and kind, carrying a runtimes record; records every call."""

    def __init__(self, values: dict, record: Runtimes | None):
        self.values, self.record, self.calls = values, record, []

    def __call__(self, case, kind, index, role) -> Sample:
        self.calls.append((role, kind))
        sample = count(kind, index, self.values[role][kind])
        sample.runtimes = self.record
        return sample


@pytest.fixture
def haiku_like(monkeypatch):
    """``autograd`` as a jax library's starter backend declares it: framework "haikulib", modules jax and itself."""
    declared = Facts("autograd", True, "haikulib", ("jax", "haikulib"))
    monkeypatch.setattr(engines, "facts", lambda name: declared)
    (case,), _ = select(["resnet15:blocks=2"], ["autograd"], None, check_availability=False)
    return case


def context(sampler) -> TierContext:
    return TierContext(take_pair=None, take_sample=sampler, selected=("instructions", "time"), repeat=1, recount=1,
                       margins=lambda case: {m: default_margin(m, frozenset({"jax", "haikulib"}), "not calibrated")
                                             for m in tiers.tier_metrics(tiers.INSTRUCTIONS)})


def values(alloc_head: int, instr_head: int) -> dict:
    return {"base": {"instructions": 8_800_000_000, "allocations": 2_000_000},
            "head": {"instructions": instr_head, "allocations": alloc_head}}


def test_the_haiku_like_case_does_not_decide_regressed_on_its_allocations(haiku_like):
    """Allocations +4.9 % (beyond the 2.5 % default), instructions +0.2 %: measured on jaxlib, the allocations are
    evidence and the instructions decide "unchanged"; nothing was declared about jaxlib."""
    sampler = Sampler(values(2_098_000, 8_817_600_000), XLA)
    step = _count_case(haiku_like, ["instructions", "allocations"], _Pool(), context(sampler), None)
    assert step.verdict == "unchanged" and step.settled
    assert "multithreaded runtime (jaxlib" in step.reason and "allocations +4.9 %" in step.reason
    alloc = next(e for e in step.evidence if e["metric"] == "alloc_count")
    assert alloc["evidence_only"] and alloc["unsteady"]
    # Measured on jaxlib, the uncalibrated margins take jaxlib's floor, though nothing declared it.
    assert next(e for e in step.evidence if e["metric"] == "instructions")["margin"] == pytest.approx(0.045)


def test_without_a_record_the_declared_modules_decide_as_before(haiku_like):
    """An older sample (no record): what the backend declares decides, as the gate did before; a second base count
    that agrees is then what lets +4.9 % decide."""
    sampler = Sampler(values(2_098_000, 8_817_600_000), None)
    step = _count_case(haiku_like, ["instructions", "allocations"], _Pool(), context(sampler), None)
    assert sampler.calls.count(("base", "allocations")) == 2  # one more process, of the base side only
    assert step.verdict == "regressed"


def test_an_uncalibrated_count_whose_base_does_not_repeat_is_evidence_and_time_decides(haiku_like):
    sampler = Sampler(values(2_000_000, 9_400_000_000), PLAIN)
    base = iter([8_800_000_000, 9_200_000_000])
    plain = sampler.__call__

    def moving(case, kind, index, role):
        sample = plain(case, kind, index, role)
        if role == "base" and kind == "instructions":
            sample.instructions = next(base)
        return sample

    step = _count_case(haiku_like, ["instructions", "allocations"], _Pool(), context(moving), None)
    assert not step.settled and "not shown steady" in step.reason and step.verdict != "regressed"


class _Pool:
    """A ThreadPoolExecutor's ``submit`` that runs at once (the tier's two sides, in order)."""

    def submit(self, fn, *args):
        class Done:
            def __init__(self, value):
                self.value = value

            def result(self):
                return self.value

        return Done(fn(*args))


def test_the_summary_says_which_counts_decided_and_why_the_others_did_not(gate_with):
    """Allocations +40 % beyond the default margin: a second base count repeats the first, so the count decides, and
    the summary names each count and why it could decide."""
    from ttfg.present.gate_views import gate_markdown
    from tests.test_gate_tiers import Side_

    outcome, fake, _ = gate_with(Side_(), Side_(allocs=7_000))
    text = gate_markdown(outcome)
    assert "counts: decided: allocations (2 base counts agree within the margin" in text  # the fake base repeats
    assert "instructions (base and head agree within the margin)" in text
    assert len([c for c in fake.calls if c[1:] == ("base", "allocations")]) == 2
    assert outcome.cases[0].verdict.verdict == "regressed"


def test_gate_json_says_what_each_case_cost_by_tier(gate_with, tmp_path):
    """Processes and their seconds per tier, over both sides: the count tier's four processes (two kinds a side), the
    structural tier's first pair, the time tier's screen."""
    import json

    from tests.test_gate_tiers import Side_
    from ttfg.results.gate_outcome import CaseOutcome

    outcome, fake, _ = gate_with(Side_(), Side_())
    cost = outcome.cases[0].cost
    assert cost["instructions"]["processes"] == 4 and cost["structural"]["processes"] == 2
    assert sum(e["processes"] for e in cost.values()) == len(fake.calls)
    assert CaseOutcome.from_json(json.loads(json.dumps(outcome.cases[0].to_json()))).cost == cost
