"""Short when settled (harness/decide/time_screen.py): a case its counts settled gets two timing pairs, not five,
unless a pair looks slow, and then the full screen decides as before.

The rule is pure and tested on numbers first; then the gate runs in-process (tests/test_gate_tiers.py's fake
sampler, with an import time that varies from pair to pair as a real one does) and shows what it costs, that a
+0.4 s import on a 1.5 s import is still a regression naming the import, and what gate.json and summary.md say.
"""

from __future__ import annotations

import json

import pytest

from ttfg.decide import tiers, time_screen
from ttfg.decide.gate_loop import run_gate
from ttfg.decide.gate_settings import GateSettings
from ttfg.results.format import ResultsError
from ttfg.measure import instructions as counting
from ttfg.measure.cases import select
from ttfg.present.gate_views import gate_markdown, presented_document
from ttfg.results import gate_file
from tests.test_gate_policy import sides  # noqa: F401  (the fixture: base and head folders)
from tests.test_gate_tiers import MODEL, FakeSampler, Side_, kinds

SCREENED = ("process_ttfg_s", "import_s")


# ---------------------------------------------------------------------------- the rule on numbers

def test_the_short_screen_stands_for_the_full_one_only_where_no_count_could_cover():
    assert time_screen.short_applies(SCREENED) and time_screen.short_applies(("import_s",))
    assert not time_screen.short_applies(("process_ttfg_s", "import_s", "build_s"))  # the build has a count
    assert not time_screen.short_applies(())


def test_pairs_within_the_threshold_do_not_escalate():
    call = time_screen.judge({"import_s": ([1.50, 1.62], [1.58, 1.55]), "process_ttfg_s": ([4.0, 4.2], [4.1, 4.0])},
                             attempted=2)
    assert not call.escalated and call.short and call.pairs == 2 and call.threshold == time_screen.SLOWDOWN
    assert call.why.startswith("short screen, 2 pairs: no head slower than its base by more than +10 %")
    assert "import 1.053×, 0.957×" in call.why


def test_one_slow_pair_escalates_and_names_the_timing_and_the_pair():
    """+0.4 s on a 1.5 s import is +27 %: the first pair hid it (a slow base process), the second shows it."""
    call = time_screen.judge({"import_s": ([1.95, 1.50], [1.92, 1.90]), "process_ttfg_s": ([4.0, 4.0], [4.1, 4.3])},
                             attempted=2)
    assert call.escalated and "import 1.267× in pair 2" in call.why and "process TTFG" not in call.why.split(",")[0]
    assert call.why.endswith("a sequential test of them decides")


def test_a_missing_pair_escalates():
    """A failed process leaves its pair incomplete: two looks were not taken, so the full screen decides."""
    call = time_screen.judge({"import_s": ([1.5], [1.5]), "process_ttfg_s": ([4.0], [4.0])}, attempted=2)
    assert call.escalated and call.pairs == 1 and "missing from 1 of 2 pair(s)" in call.why


# ---------------------------------------------------------------------------- the rule in the gate

class ImportSampler(FakeSampler):
    """The tiers' fake sampler, with each side's import seconds per pair (a real import varies by a few per cent
    between processes) and a whole process of that import plus 2 s."""

    def __init__(self, sides, scripts, imports: dict[str, list[float]]):
        super().__init__(sides, scripts)
        self.imports = imports

    def __call__(self, case, kind, cache, index, run):
        sample = super().__call__(case, kind, cache, index, run)
        if kind == "timing" and sample.ok:
            role = self.role[str(run.target.source)]
            sample.import_s = self.imports[role][index % len(self.imports[role])]
            sample.process_ttfg_s = sample.import_s + 2.0
        return sample


#: An import of 1.5 s varying by up to 5 % between processes, differently on each side.
NOISE = (0.0, 0.04, -0.03, 0.05, -0.05, 0.02, -0.02, 0.03)


def imports(base_s: float, extra_s: float = 0.0) -> dict[str, list[float]]:
    return {"base": [base_s * (1 + n) for n in NOISE], "head": [base_s * (1 + n) + extra_s for n in NOISE[3:] + NOISE[:3]]}


@pytest.fixture
def gate(sides, tmp_path, monkeypatch):  # noqa: F811
    def run(imported: dict[str, list[float]], **settings):
        fake = ImportSampler(sides, {"base": Side_(), "head": Side_()}, imported)
        monkeypatch.setattr(counting, "availability", lambda: (True, "callgrind"))
        cases, skipped = select([MODEL], ["autograd"], None, check_availability=False)
        settings.setdefault("tiers", tiers.DEFAULT_TIERS)
        settings.setdefault("profiles", 0)
        outcome = run_gate(cases, skipped, sides["base"], sides["head"], GateSettings(**settings), tmp_path / "out",
                           sampler=fake, clock=fake.monotonic)
        return outcome, fake

    return run


def test_a_comment_only_change_costs_two_pairs_and_says_what_its_screen_did(gate, tmp_path):
    outcome, fake = gate(imports(1.5))
    (case,) = outcome.cases
    assert outcome.exit_code() == 0 and case.tier == "instructions" and case.verdict.verdict == "unchanged"
    assert kinds(fake)["timing"] == 4 and case.attempted == 2  # was 10 processes: one look at --min-pairs 5
    assert case.screen.short and not case.screen.escalated and case.screen.pairs == 2
    assert case.trail[-1].tier == "time" and case.trail[-1].reason == case.screen.why
    path = tmp_path / "gate.json"
    path.write_text(gate_file.dumps(presented_document(outcome, None, outcome.exit_code())))
    saved = json.loads(path.read_text())["cases"][0]
    assert saved["screen"] == {"metrics": list(SCREENED), "short": True, "pairs": 2, "escalated": False,
                               "threshold": 0.1, "why": case.screen.why}
    assert saved["cost"]["time"]["processes"] == 2 and saved["cost"]["structural"]["processes"] == 2
    assert gate_file.load(path).outcome.cases[0].screen == case.screen  # the one reader gives the same record back
    text = gate_markdown(outcome)
    assert ("screen of process TTFG, import: short, 2 pairs, not escalated (a pair escalates beyond +10 %); "
            "cost: structural 2 processes") in text


def test_an_import_slower_by_0_4_s_escalates_and_still_regresses_naming_the_import(gate):
    """+0.4 s on an import of 1.5 s (+27 %, a pair varying by 5 %): the short screen escalates, and the escalated
    screen (two looks: at --min-pairs pairs and at three times as many, the short screen's counted) decides."""
    outcome, fake = gate(imports(1.5, extra_s=0.4))
    (case,) = outcome.cases
    assert outcome.exit_code() == 1 and case.verdict.verdict == "regressed"
    assert case.tier == "time" and case.metric == "import_s" and case.verdict.reason.startswith("import: ")
    assert case.screen.short and case.screen.escalated and case.screen.pairs == case.attempted
    assert case.attempted in (5, 15)
    assert "beyond +10 % of its base" in case.screen.why and "import" in case.screen.why


def test_a_heavy_import_slowed_by_0_4_s_is_caught_by_the_escalated_screens_second_look(gate):
    """+0.4 s on a 4.5 s import (+9 %): one look at 5 pairs misses it (as it missed +0.4 s at a Haiku and a torch
    library's noisy imports, 2026-12-06); the escalated screen's second look, at 15 pairs, sees it."""
    outcome, _ = gate(imports(4.5, extra_s=0.4))
    (case,) = outcome.cases
    assert outcome.exit_code() == 1 and case.metric == "import_s" and case.screen.escalated
    assert case.attempted == 15 and "look 2 of 2, 15 pairs" in case.verdict.reason


def test_a_smaller_import_of_1_s_slowed_by_0_4_s_is_caught_too(gate):
    outcome, _ = gate(imports(1.0, extra_s=0.4))
    (case,) = outcome.cases
    assert outcome.exit_code() == 1 and case.metric == "import_s" and case.screen.escalated


def test_a_gate_file_with_a_broken_screen_is_refused_naming_the_field(gate, tmp_path):
    outcome, _ = gate(imports(1.5))
    doc = presented_document(outcome, None, outcome.exit_code())
    doc["cases"][0]["screen"]["escalated"] = "no"
    path = tmp_path / "gate.json"
    path.write_text(gate_file.dumps(doc))
    with pytest.raises(ResultsError, match=r"cases\[0\]\.screen\.escalated"):
        gate_file.load(path)
