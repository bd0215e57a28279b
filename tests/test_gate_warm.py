"""The gate on warm starts (``ttfg gate --cache warm|both``): each side's persistent caches populated by its own
revision, then paired warm processes whose cache misses are structural evidence.

The loop and the cache check are driven in process (a fake sampler that knows each side's
cache counts, and what each populating process showed of the caches); the held-out experiment
is a real gate (``slow``): a head whose jitted loss closes over ``os.getpid()`` as a constant
computes the same gradient and the same counters as its base, so the cold gate passes it, and
the warm gate fails it naming the misses, for ttfg's jax.jit and for a plugin backend on jax
that declares no cache (the probe reads jax's cache events whatever the backend).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from ttfg import engines
from ttfg.decide import tiers
from ttfg.decide import warm_evidence
from ttfg.decide.gate_loop import run_gate
from ttfg.decide.gate_settings import GateSettings
from ttfg.errors import UsageError
from ttfg.measure.cases import select
from ttfg.results import record
from ttfg.results.model import ColdEvidence
from tests.test_gate_policy import sides  # noqa: F401  (the fixture: base and head folders)
from tests.test_gate_tiers import FakeSampler, Side_, timing

from .conftest import GitRepo, copy_working_tree

JIT_CASE = "transformer_tiny:blocks=1,width=16,heads=2,seq=8"


def warm_timing(index: int, cache: str, misses: int, hits: int) -> "timing":
    counters = {"jaxpr_eqns": 40, "hlo_ops": 60}
    if cache == "warm":
        counters.update(backend_compiles=misses + hits, persistent_cache_hits=hits)  # jax times every lookup
    else:
        counters.update(backend_compiles=1, persistent_cache_hits=0)
    sample = timing(index, 1.0, counters)
    sample.cache = cache
    return sample


#: What a process that looked jax's persistent cache up once shows (``ColdEvidence.lookups``, read by the probe).
JAX_LOOKED_UP = {"jax_lookups": 1, "jax_hits": 0}


class WarmSampler(FakeSampler):
    """Answers warm samples with each side's cache counts and what its process showed of the caches (``seen``: role
    -> ``ColdEvidence.lookups``; None, a probe that did not read them); records the cache folder of every call."""

    def __init__(self, sides, misses: dict[str, int], seen: dict | None = None):
        super().__init__(sides, {"base": Side_(), "head": Side_()})
        self.misses = misses
        self.seen = seen if seen is not None else {"base": JAX_LOOKED_UP, "head": JAX_LOOKED_UP}
        self.folders: list[tuple[str, int, Path | None]] = []

    def __call__(self, case, kind, cache, index, run, cache_dir=None):
        role = self.role[str(run.target.source)]
        self.folders.append((role, index, cache_dir))
        if kind != "timing":
            return super().__call__(case, kind, cache, index, run)
        self.calls.append((case.id, role, kind))
        self.now += self.wall_s
        misses = self.misses[role]
        sample = warm_timing(index, cache, misses, 1 - misses if misses <= 1 else 0)
        sample.cold_evidence = ColdEvidence(cache, 0, lookups=self.seen[role])
        return sample


def gate(sides, tmp_path, misses, backends=("jax.jit",), seen=None, **settings):
    fake = WarmSampler(sides, misses, seen)
    notes: list[str] = []
    cases, skipped = select(["resnet15:blocks=2"], list(backends), None, check_availability=False)
    settings = {"tiers": ("structural",), "profiles": 0, **settings}
    outcome = run_gate(cases, skipped, sides["base"], sides["head"], GateSettings(**settings), tmp_path / "out",
                       on_note=notes.append, sampler=fake, clock=fake.monotonic)
    return outcome, fake, notes


def test_a_head_that_misses_where_the_base_hits_is_decided_at_once(sides, tmp_path):
    outcome, fake, notes = gate(sides, tmp_path, {"base": 0, "head": 1}, cache="warm", cache_dir=str(tmp_path / "c"))
    (case,) = outcome.cases
    assert outcome.exit_code() == 1 and case.tier == "structural" and case.verdict.verdict == "regressed"
    assert case.attempted == 1
    reason = case.verdict.reason
    assert reason.startswith("persistent cache misses 0 -> 1 (hits 1 -> 0): the head's compile cache key changes "
                             "between processes")
    assert "JAX_EXPLAIN_CACHE_MISSES" in reason or "cannot name the function" in reason
    # Each side populated its own folder with one unrecorded process (index -1), then sampled warm from it.
    populated = [(role, folder) for role, index, folder in fake.folders if index == -1]
    assert sorted(role for role, _ in populated) == ["base", "head"]
    assert len({folder for _, folder in populated}) == 2
    measured = {role: folder for role, index, folder in fake.folders if index >= 0}
    assert dict(populated) == measured
    assert any("populated by its own revision" in n for n in notes)
    assert not any(Path(tmp_path / "c").iterdir())  # the gate's cache folders are removed afterwards
    head = record.load(outcome.files["head"])
    assert head.settings["caches"] == ["warm"] and head.gate.settings["cache"] == "warm"
    assert [s.cache for s in head.cases[0].samples] == ["warm"]


def test_equal_misses_settle_nothing_and_cold_samples_skip_the_check(sides, tmp_path):
    outcome, _, _ = gate(sides, tmp_path, {"base": 0, "head": 0}, cache="warm")
    (case,) = outcome.cases
    assert outcome.exit_code() == 0 and case.verdict.verdict != "regressed"
    assert [s.tier for s in case.trail] == ["structural", "structural"]
    assert "both warm starts read their caches alike" in case.trail[-1].reason
    cold, _, _ = gate(sides, tmp_path / "cold", {"base": 0, "head": 1})
    assert cold.exit_code() == 0 and len(cold.cases[0].trail) == 1  # the cold gate's trail is as before
    assert "cache" not in cold.settings.data


NO_FRAMEWORK = {"base": {}, "head": {}}  # processes that loaded neither jax nor Inductor


def test_a_case_whose_processes_used_no_cache_is_measured_cold_and_said_so(sides, tmp_path):
    """Every case is populated; one whose populating processes looked no cache up is measured cold, with what they
    showed, in the notes, gate.json's settings, both results files and the footer."""
    outcome, fake, notes = gate(sides, tmp_path, {"base": 0, "head": 0}, backends=("autograd",), seen=NO_FRAMEWORK,
                                cache="warm")
    (case_id,) = [c.case for c in outcome.cases]
    why = outcome.settings.data["measured_cold"][case_id]
    assert why.startswith("no persistent compile cache was used by its process: no jax or Inductor cache lookups "
                          "(base: neither jax nor torch's Inductor was loaded; head: neither")
    assert why.endswith("so it is measured cold") and "warm_evidence" not in outcome.settings.data
    populated = sorted(role for role, index, folder in fake.folders if index == -1 and folder is not None)
    assert populated == ["base", "head"]  # populated like any case, then decided from what was seen
    assert all(folder is None for _, index, folder in fake.folders if index >= 0)  # every measured sample cold
    assert f"warm cache: {case_id}: {why} (marked in gate.json and the results files)" in notes
    head = record.load(outcome.files["head"])
    assert head.gate.settings["measured_cold"] == {case_id: why}
    assert [s.cache for s in head.cases[0].samples] == ["cold"]
    assert len(outcome.cases[0].trail) == 1  # cold samples: no cache comparison
    from ttfg.present.gate_views import gate_footer

    assert f"Measured cold: {case_id}: {why}." in gate_footer(outcome)
    assert "Warm start" not in gate_footer(gate(sides, tmp_path / "cold", {"base": 0, "head": 0})[0])


def test_a_backend_that_declares_no_cache_is_gated_warm_when_its_process_used_jaxs(sides, tmp_path):
    """autograd declares no persistent cache; a process of it that looked jax's cache up (as a plugin on jax does) is
    measured warm, and a head that misses where the base hits is regressed, named by jax's cache."""
    outcome, fake, notes = gate(sides, tmp_path, {"base": 0, "head": 1}, backends=("autograd",), cache="warm")
    (case,) = outcome.cases
    assert not outcome.settings.data.get("measured_cold")
    assert outcome.settings.data["warm_evidence"] == {case.case: (
        "its process used a persistent compile cache (base: jax cache 1 lookup(s), 0 hit(s); head: jax cache "
        "1 lookup(s), 0 hit(s))")}
    assert any(n.startswith(f"warm cache: {case.case}: measured warm: its process used") for n in notes)
    assert outcome.exit_code() == 1 and case.tier == "structural" and case.verdict.verdict == "regressed"
    assert case.verdict.reason.startswith("persistent cache misses 0 -> 1 (hits 1 -> 0)")
    assert all(folder is not None for _, _, folder in fake.folders)
    head = record.load(outcome.files["head"])
    assert head.gate.settings["warm_evidence"] == outcome.settings.data["warm_evidence"]


def test_a_declared_cache_its_process_never_looked_up_is_measured_cold(sides, tmp_path):
    """jax.jit declares jax's cache; processes that loaded jax and looked nothing up (a library that turns the cache
    off) are measured cold, the declaration named; a probe that cannot say (an older ttfg) leaves the declaration
    to decide."""
    unused = {"base": {"jax_lookups": 0, "jax_hits": 0}, "head": {"jax_lookups": 0, "jax_hits": 0}}
    outcome, _, _ = gate(sides, tmp_path, {"base": 0, "head": 0}, seen=unused, cache="warm")
    (why,) = outcome.settings.data["measured_cold"].values()
    assert "(base: jax cache 0 lookup(s), 0 hit(s); head: jax cache 0 lookup(s), 0 hit(s)); jax.jit declares " \
           "the JAX persistent compilation cache, which its process never looked up, so it is measured cold" in why
    unknown = {"base": None, "head": None}
    trusted, _, _ = gate(sides, tmp_path / "old", {"base": 0, "head": 1}, seen=unknown, cache="warm")
    (words,) = trusted.settings.data["warm_evidence"].values()
    assert words.startswith("no process could say which caches it used (base: its probe did not read")
    assert trusted.exit_code() == 1  # measured warm, the misses compared
    cold, _, _ = gate(sides, tmp_path / "old-autograd", {"base": 0, "head": 0}, backends=("autograd",), seen=unknown,
                      cache="warm")
    (why,) = cold.settings.data["measured_cold"].values()
    assert why.endswith("and autograd declares no persistent compile cache, so it is measured cold")


def test_the_warm_decision_reads_either_side_and_a_plugins_own_counters():
    """Pure rules: a head that stopped using the cache the base used is still measured warm (its misses show it); a
    failed populating process says nothing; a plugin's own cache is read through the counters it names."""

    def populated(lookups=None, ok=True, counters=None):
        sample = timing(-1, 1.0, counters or {}) if ok else SimpleNamespace(ok=False, error="boom")
        if ok:
            sample.cold_evidence = ColdEvidence("warm", 0, lookups=lookups)
        return sample

    jax_cache = engines.facts("jax.jit").caches
    call = warm_evidence.decide("x", {"base": populated(JAX_LOOKED_UP), "head": populated({"jax_lookups": 0})},
                                jax_cache)
    assert call.warm and "head: jax cache 0 lookup(s), 0 hit(s)" in call.words
    call = warm_evidence.decide("x", {"base": populated(ok=False), "head": populated({})}, ())
    assert not call.warm and "base: its populating process failed (boom)" in call.words
    own = warm_evidence.decide("test.warm", {"base": populated({}, counters={"test_cache_misses": 1,
                                                                              "test_cache_hits": 0})}, (), (
        SimpleNamespace(what="a gradient cache", counts=lambda c: (c["test_cache_misses"], c["test_cache_hits"])),))
    assert own.warm and "a gradient cache 1 lookup(s), 0 hit(s)" in own.words


def test_a_plugin_backend_that_declares_a_cache_is_gated_warm(plugins, sides, tmp_path):
    """Adding a backend with a warm cache is its class and its entry point (docs/reference/layout.md): the
    ttfg-test-backends plugin's test.warm declares a cache of its own (a folder its variable names, the counters of
    its lookups) and nothing in ttfg names it. In real processes, the warm gate populates each side's folder with one
    process of that side, and the measured one finds its entry there; a cold gate's fresh folders miss it."""
    cases, skipped = select(["test_mlp"], ["test.warm"], None)
    notes: list[str] = []
    settings = GateSettings(tiers=("structural",), profiles=0, cache="warm", cache_dir=str(tmp_path / "caches"))
    outcome = run_gate(cases, skipped, sides["base"], sides["head"], settings, tmp_path / "warm", on_note=notes.append)
    assert not outcome.settings.data.get("measured_cold")
    (words,) = outcome.settings.data["warm_evidence"].values()
    assert "the test plugin's gradient cache 1 lookup(s), 0 hit(s)" in words  # its own counters, read as evidence
    assert sum("populated by its own revision (ok)" in n for n in notes) == 2
    (case,) = outcome.cases
    assert [s.tier for s in case.trail] == ["structural", "structural"]
    assert case.trail[-1].reason == "persistent cache misses 0 -> 0 (hits 1 -> 1): both warm starts read their caches alike"
    for role in ("base", "head"):
        (sample,) = record.load(outcome.files[role]).cases[0].samples
        assert sample.ok and sample.cache == "warm", sample.error
        assert (sample.counters["test_cache_misses"], sample.counters["test_cache_hits"]) == (0, 1)
    cold = run_gate(cases, skipped, sides["base"], sides["head"], GateSettings(tiers=("structural",), profiles=0),
                    tmp_path / "cold")
    (sample,) = record.load(cold.files["head"]).cases[0].samples
    assert sample.ok and sample.cache == "cold" and sample.counters["test_cache_misses"] == 1
    assert len(cold.cases[0].trail) == 1  # a cold pair's caches are not compared


def test_cache_step_reads_inductors_counters_and_ignores_cold_samples():
    def sample(cache, misses, hits):
        s = timing(0, 1.0, {"graphs": 1, "fxgraph_cache_misses": misses, "fxgraph_cache_hits": hits})
        s.cache = cache
        return s

    inductor = engines.facts("torch.compile").caches  # what torch.compile declares (Backend.persistent_caches)
    step = tiers.cache_step(sample("warm", 0, 3), sample("warm", 3, 0), inductor)
    assert step.settled and step.verdict == "regressed" and "misses 0 -> 3" in step.reason
    assert "Inductor's cache-miss reasons are not available here" in step.reason
    assert tiers.cache_step(sample("cold", 3, 0), sample("cold", 3, 0), inductor) is None
    assert tiers.cache_step(sample("warm", 0, 3), sample("warm", 3, 0), engines.facts("jax.jit").caches) is None
    improved = tiers.cache_step(sample("warm", 2, 1), sample("warm", 0, 3), inductor)
    assert not improved.settled and improved.verdict == "improved"


def test_bad_cache_settings_are_refused(tmp_path):
    with pytest.raises(UsageError, match="--cache 'lukewarm': expected one of cold, warm, both"):
        GateSettings(cache="lukewarm")
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(UsageError, match="--cache-dir .*cannot write there"):
        GateSettings(cache="warm", cache_dir=str(blocker / "caches"))
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir()
        locked.chmod(0o500)
        try:
            with pytest.raises(UsageError, match="cannot write there"):
                GateSettings(cache="both", cache_dir=str(locked))
        finally:
            locked.chmod(0o700)
    assert GateSettings(cache="cold", cache_dir=str(blocker)).cache == "cold"  # a cold gate writes no cache


def test_the_cli_refuses_other_cache_values_with_exit_2():
    out = subprocess.run([sys.executable, "-m", "ttfg", "gate", "--base", "HEAD", "--cache", "lukewarm"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "invalid choice: 'lukewarm'" in out.stderr


# --- the held-out experiment: a per-process constant in the traced function ---------------------------------

LOSS = "        return jnp.sum(forward(spec.network, params, x, ops))"
BASE_LOSS = "        return jnp.sum(forward(spec.network, params, x, ops)) + np.float32(0.0)"
#: Same gradient (a constant added to the loss), same jaxpr and HLO counts, a different cache key per process.
HEAD_LOSS = ("        import os\n\n"
             "        return jnp.sum(forward(spec.network, params, x, ops)) + np.float32(os.getpid() % 9973 + 1)")


@pytest.fixture(scope="module")
def pid_repo(tmp_path_factory):
    root = tmp_path_factory.mktemp("warm-repo")
    copy_working_tree(root)
    loss = root / "harness" / "engines" / "jax_common.py"
    history = GitRepo.init(root, "trunk", identity=("warm test", "warm-test@example.com"))
    loss.write_text(loss.read_text().replace(LOSS, BASE_LOSS))
    base = history.commit("base: a constant added to the loss")
    loss.write_text(loss.read_text().replace(BASE_LOSS, HEAD_LOSS))
    return SimpleNamespace(path=root, base=base, head=history.commit("head: the constant is the process id",
                                                                     stage="tracked"))


def run_gate_cli(repo, out: Path, cache: str, backend: str = "jax.jit"):
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    return subprocess.run([sys.executable, "-m", "ttfg", "gate", "--base", repo.base, "--head", repo.head,
                           "--model", JIT_CASE, "--backend", backend, "--tiers", "structural", "--profiles", "0",
                           "--cache", cache, "--out-dir", str(out)],
                          cwd=repo.path, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
@pytest.mark.full  # a real gate/run of tens of seconds: make test-all and CI run it
def test_a_per_process_constant_passes_the_cold_gate_and_fails_the_warm_one(pid_repo, tmp_path):
    cold = run_gate_cli(pid_repo, tmp_path / "cold", "cold")
    assert cold.returncode == 0, cold.stdout + cold.stderr
    doc = json.loads((tmp_path / "cold" / "gate.json").read_text())
    assert doc["cases"][0]["verdict"]["verdict"] != "regressed"
    (step,) = doc["cases"][0]["tiers"]
    assert step["reason"].startswith("all structural counters are equal")  # the same jaxpr, HLO and compiles
    warm = run_gate_cli(pid_repo, tmp_path / "warm", "warm")
    assert warm.returncode == 1, warm.stdout + warm.stderr
    case = json.loads((tmp_path / "warm" / "gate.json").read_text())["cases"][0]
    assert case["tier"] == "structural" and case["verdict"]["verdict"] == "regressed"
    reason = case["verdict"]["reason"]
    assert reason.startswith("persistent cache misses 0 -> ") and "compile cache key changes between processes" \
        in reason, reason
    assert "persistent cache misses 0 -> " in warm.stdout and "gate failed" in warm.stdout


@pytest.mark.slow
@pytest.mark.full  # a real gate/run of tens of seconds: make test-all and CI run it
def test_a_plugin_on_jax_that_declares_no_cache_is_gated_warm_from_its_process(plugins, pid_repo, tmp_path):
    """The held-out experiment on a library's own backend: test.jax (the test plugin) runs jax.jit on ttfg's jax loss,
    declares no persistent cache and counts nothing. The probe reads jax's cache events in its processes, so the
    warm gate measures it warm and fails the per-process constant naming the misses; the cold gate passes it."""
    from ttfg import engines

    assert engines.facts("test.jax").known and not engines.facts("test.jax").caches
    cold = run_gate_cli(pid_repo, tmp_path / "cold", "cold", backend="test.jax")
    assert cold.returncode == 0, cold.stdout + cold.stderr
    (step,) = json.loads((tmp_path / "cold" / "gate.json").read_text())["cases"][0]["tiers"]
    assert step["reason"].startswith("all structural counters are equal"), step  # the probe's backend_compiles
    warm = run_gate_cli(pid_repo, tmp_path / "warm", "warm", backend="test.jax")
    assert warm.returncode == 1, warm.stdout + warm.stderr
    doc = json.loads((tmp_path / "warm" / "gate.json").read_text())
    assert not doc["settings"].get("measured_cold") and "measured cold" not in warm.stdout + warm.stderr
    (words,) = doc["settings"]["warm_evidence"].values()
    assert words.startswith("its process used a persistent compile cache (base: jax cache ") and "head: jax" in words
    case = doc["cases"][0]
    assert case["tier"] == "structural" and case["verdict"]["verdict"] == "regressed"
    assert case["verdict"]["reason"].startswith("persistent cache misses 0 -> "), case["verdict"]["reason"]
    assert "compile cache key changes between processes" in case["verdict"]["reason"]
    for role in ("base", "head"):  # the probe's counters and evidence, in both results files
        (sample,) = record.load(tmp_path / "warm" / f"{role}.json").cases[0].samples
        assert sample.cache == "warm" and sample.counters["backend_compiles"] >= 1, sample.counters
        assert sample.cold_evidence.lookups["jax_lookups"] >= 1, sample.cold_evidence


@pytest.mark.full  # two gates, cold and warm (about 28 s)
def test_cache_both_reports_the_cold_and_the_warm_set_apart(pid_repo, tmp_path):
    out = tmp_path / "both"
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    done = subprocess.run([sys.executable, "-m", "ttfg", "gate", "--base", pid_repo.base, "--head", pid_repo.head,
                           "--model", JIT_CASE, "--backend", "jax.jit", "--tiers", "structural", "--profiles", "0",
                           "--cache", "both", "--out-dir", str(out), "--format", "json"],
                          cwd=pid_repo.path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr  # the warm set regressed
    document = json.loads(done.stdout)
    assert set(document) == {"cold", "warm"}
    assert document["cold"] == json.loads((out / "gate.json").read_text()) and document["cold"]["exit_code"] == 0
    assert document["warm"] == json.loads((out / "warm" / "gate.json").read_text())
    assert document["warm"]["exit_code"] == 1 and document["warm"]["settings"]["cache"] == "warm"
    assert "cache" not in document["cold"]["settings"]
    assert "warm set (persistent caches populated by each side's revision" in done.stderr
    summary = (out / "warm" / "summary.md").read_text()
    assert summary.count("Warm start: each side's persistent") == 1
    # One pair a side (--tiers structural): a timed phase change from fewer than 3 pairs is noise, not where it went
    # (issue 39.4); the misses the structural tier compared exactly are the finding.
    assert "`: compile: " not in summary and "no phase change from 3 or more pairs" in summary, summary


def test_warm_shards_merge_with_every_shards_per_case_evidence(sides, tmp_path):
    """measured_cold and warm_evidence are per case, so a warm gate's shards hold different ones: merging them is not
    refused as "different settings", and the merged gate holds every shard's (before: any two warm shards whose cases
    differed in being measured cold could not merge)."""
    from ttfg.decide.merge_gate import load_shard, merge_gates
    from ttfg.measure.shard import ShardSpec, select_shard
    from ttfg.results.gate_document import document
    from ttfg.results.model import ShardSection

    cases, skipped = select(["resnet15:blocks=2"], ["autograd", "jax.jit"], None, check_availability=False)
    seen = {"autograd": NO_FRAMEWORK}
    folders = []
    for i in (1, 2):
        spec = ShardSpec(i, 2)
        mine, mine_skipped, plan = select_shard([c.id for c in cases], cases, skipped, spec)
        section = ShardSection(i, 2, plan.shard(spec).cases, plan.digest, [c.id for c in cases])
        fake = WarmSampler(sides, {"base": 0, "head": 0}, seen.get(mine[0].backend))
        out = tmp_path / f"g{i}"
        outcome = run_gate(mine, mine_skipped, sides["base"], sides["head"],
                           GateSettings(tiers=("structural",), profiles=0, cache="warm"), out, sampler=fake,
                           clock=fake.monotonic, shard=section)
        (out / "gate.json").write_text(json.dumps(document(outcome)))
        folders.append(out)
    merged = merge_gates([load_shard(f) for f in folders])
    settings = merged.doc.outcome.settings.data
    by_backend = {c.backend: c.id for c in cases}
    assert list(settings["measured_cold"]) == [by_backend["autograd"]]
    assert list(settings["warm_evidence"]) == [by_backend["jax.jit"]]
    for role in ("base", "head"):
        assert merged.sides[role].gate.settings["measured_cold"] == settings["measured_cold"]
        assert merged.sides[role].gate.settings["warm_evidence"] == settings["warm_evidence"]
