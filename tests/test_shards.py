"""Sharding the matrix over runners and merging it back: the partition, the bad inputs, the proof.

The partition and every merge refusal are checked on files built here (milliseconds);
the gate's merge on outcomes of the real gate loop driven by an in-process sampler
(test_gate_policy's pattern); the proof that three real shards of ``ttfg run`` merge into
what one unsharded run measures spawns real autograd processes on small resnets.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from ttfg.decide.gate_loop import run_gate
from ttfg.decide.gate_settings import GateSettings
from ttfg.measure.sides import Side
from ttfg.results import gate_outcome
from ttfg.results.gate_document import document
from ttfg.decide.merge_gate import load_shard, merge_gates
from ttfg.errors import TtfgError, UsageError
from ttfg.measure import metadata
from ttfg.measure.cases import select
from ttfg.measure.shard import ShardSpec, estimate_s, parse_spec, partition, select_shard
from ttfg.provision.worktrees import Revision
from ttfg.results import record
from ttfg.results.machines import MachineMismatch, check_machines
from ttfg.results.model import ShardSection
from ttfg.results.io import save

from .conftest import ROOT
from .synthetic_results import results as synthetic, timing_run
from .test_gate_policy import good, noisy

@pytest.fixture
def cli(capsys):
    """The command line in this process (``ttfg.cli.main``): what a user's process does, in milliseconds."""
    from ttfg.cli import main

    def run(*argv: str) -> SimpleNamespace:
        code = main(list(argv))
        captured = capsys.readouterr()
        return SimpleNamespace(returncode=code, stdout=captured.out, stderr=captured.err)

    return run


FULL = [c.id for c in select(["all"], ["all"], ["all"], check_availability=False)[0]]
MODELS = ["resnet15:blocks=2", "resnet15:blocks=3", "resnet15:blocks=4"]


# --------------------------------------------------------------------------- the partition


@pytest.mark.parametrize("count", [1, 2, 3, 4, 8, 40])
def test_partition_covers_every_case_once_whatever_the_input_order(count):
    plan = partition(FULL, count)
    assert plan.count == count
    placed = [c for s in plan.shards for c in s.cases]
    assert sorted(placed) == sorted(FULL) and len(placed) == len(set(placed))
    shuffled = FULL[:]
    random.Random(count).shuffle(shuffled)
    again = partition(shuffled, count)
    assert [sorted(s.cases) for s in again.shards] == [sorted(s.cases) for s in plan.shards]
    assert again.digest == plan.digest
    if count > len(FULL):
        assert sum(1 for s in plan.shards if not s.cases) == count - len(FULL)


def test_partition_is_longest_processing_time_first_with_ties_by_case_id():
    costs = {"m/a/x": 10.0, "m/b/x": 6.0, "m/c/x": 5.0, "m/d/x": 5.0, "m/e/x": 4.0}
    plan = partition(costs, 2, costs)
    # a -> 1 (10); b -> 2 (6); c -> 2 (11); d -> 1 (15); e -> 2 (15)
    assert [sorted(s.cases) for s in plan.shards] == [["m/a/x", "m/d/x"], ["m/b/x", "m/c/x", "m/e/x"]]
    assert plan.makespan_s == 15.0 and plan.total_s == 30.0
    tied = partition(["m/z/x", "m/y/x"], 2, {"m/z/x": 1.0, "m/y/x": 1.0})
    assert tied.shards[0].cases == ["m/y/x"]  # equal cost: the smaller id goes first, to shard 1


def test_a_case_is_never_split_so_the_busiest_case_bounds_the_wall_time():
    plan = partition(FULL, 64)
    assert plan.makespan_s == max(plan.costs.values())


def test_costs_come_from_measurements_where_given_else_from_estimates():
    case = FULL[0]
    plan = partition(FULL, 3, {case: 123.0, FULL[1]: float("nan"), FULL[2]: -1})
    assert plan.costs[case] == 123.0 and plan.sources[case] == "measured"
    assert plan.sources[FULL[1]] == plan.sources[FULL[2]] == "estimate"
    assert partition(FULL, 3, {case: 123.0}).digest != partition(FULL, 3).digest


def test_estimates_follow_backend_and_model_size():
    inductor = estimate_s("convnext_tiny/torch.compile/params=closure,chain=unrolled")
    assert inductor > estimate_s("resnet15/torch.compile/params=closure,chain=unrolled") > \
        estimate_s("resnet15/autograd/params=args,chain=unrolled")
    small, big = (estimate_s(f"resnet15:blocks={n}/jax.jit/params=args,chain=unrolled") for n in (2, 60))
    assert big > estimate_s("resnet15/jax.jit/params=args,chain=unrolled") > small
    assert estimate_s("resnet15/some.plugin/params=args,chain=unrolled") > 0
    # transformer_tiny's own measured costs (Inductor 54 s a process), not resnet15's scaled (27 s)
    assert estimate_s("transformer_tiny/torch.compile/params=closure,chain=unrolled") == pytest.approx(54.2)
    assert estimate_s("transformer_tiny:blocks=8/jax.jit/params=args,chain=unrolled") > \
        estimate_s("transformer_tiny/jax.jit/params=args,chain=unrolled")


@pytest.mark.parametrize("text, problem", [("0/3", "between 1 and 3"), ("4/3", "between 1 and 3"),
                                           ("1/0", "at least 1"), ("a/b", "not I/N"), ("3", "not I/N"),
                                           ("-1/2", "between 1 and 2")])
def test_bad_shard_specs_are_refused(text, problem):
    with pytest.raises(UsageError, match=problem):
        parse_spec(text)
    assert parse_spec("2/4") == ShardSpec(2, 4)


@pytest.mark.parametrize("argv", [["run", "--shard", "4/3"], ["check", "--shard", "0/2"], ["gate", "--base", "HEAD",
                                  "--shard", "1/0"], ["asv", "record", "--shard", "x"], ["shards", "0"]])
def test_the_commands_refuse_a_bad_shard_with_exit_2(cli, argv):
    out = cli(*argv)
    assert out.returncode == 2, out.stdout + out.stderr
    assert "shard" in out.stderr


def test_shards_command_prints_the_partition_as_table_and_json(cli):
    argv = ["shards", "3", "--model", "all", "--backend", "all", "--variant", "all"]
    table = cli(*argv)
    assert table.returncode == 0, table.stderr
    assert "1/3" in table.stdout and "3/3" in table.stdout and "expected wall time" in table.stdout
    out = cli(*argv, "--format", "json", "--compact")
    doc = json.loads(out.stdout)
    assert len(out.stdout.strip().splitlines()) == 1
    assert [job["shard"] for job in doc["matrix"]["include"]] == ["1/3", "2/3", "3/3"]
    matrix = cli(*argv, "--format", "matrix")
    assert json.loads(matrix.stdout) == doc["matrix"] and len(matrix.stdout.strip().splitlines()) == 1
    assert sorted(c for s in doc["shards"] for c in s["cases"]) == sorted(FULL)
    assert doc["partition"] == partition(FULL, 3).digest


def test_check_and_run_take_their_shard_and_an_empty_shard_passes(cli, tmp_path):
    selection = ["--model", "resnet15:blocks=2", "--backend", "autograd", "--backend", "torch.eager"]
    check = cli("check", *selection, "--shard", "2/2")
    assert check.returncode == 0 and "checking 1 case " in check.stdout, check.stdout + check.stderr
    empty = cli("check", *selection, "--shard", "3/3")
    assert empty.returncode == 0 and "shard 3/3 has no case" in empty.stdout
    run = cli("run", *selection, "--shard", "3/3", "--out", str(tmp_path / "empty.json"))
    assert run.returncode == 0 and "has no case" in run.stdout, run.stdout + run.stderr
    res = record.load(tmp_path / "empty.json")
    assert res.shard.label == "3/3" and res.shard.cases == [] and not res.cases and res.complete


def test_shard_selection_keeps_unsupported_skips_on_shard_one_only():
    cases, skipped = select(["resnet15"], ["autograd", "torch.eager"], ["chain=scan", "default"],
                            check_availability=False)
    universe = [c.id for c in cases]
    mine = [select_shard(universe, cases, skipped, ShardSpec(i, 2)) for i in (1, 2)]
    assert sorted(c.id for m in mine for c in m[0]) == sorted(universe)
    assert [len(m[1]) for m in mine] == [len(skipped), 0] and skipped


def test_costs_file_from_a_results_file_and_from_asv_history(tmp_path):
    from ttfg.history.shard_costs import load_costs

    res = synthetic({"resnet15/jax.jit/params=args,chain=unrolled": timing_run([1.0, 2.0, 3.0])})
    costs = load_costs(save(res, tmp_path / "r.json"))
    assert costs == {"resnet15/jax.jit/params=args,chain=unrolled": 4.5}  # median process_wall_s
    history = load_costs(ROOT / "results")  # the shipped history: median process TTFG over its commits
    assert history["resnet15/autograd/params=args,chain=unrolled"] == pytest.approx(2.253942544)
    one = next((ROOT / "results" / "ttfg-dev-2core").glob(f"{SHIPPED}*.json"))
    assert load_costs(one)["resnet15/autograd/params=args,chain=unrolled"] == pytest.approx(2.631915)
    (tmp_path / "x.json").write_text("[]")
    for bad in (tmp_path / "x.json", tmp_path / "nope.json"):
        with pytest.raises(UsageError, match=str(bad)):
            load_costs(bad)


# --------------------------------------------------------------------------- fingerprints


def test_fingerprint_is_in_every_new_results_file_and_reads_back(tmp_path):
    from ttfg.measure.runner import RunSettings, new_results

    cases, skipped = select(["resnet15:blocks=2"], ["autograd"], None, check_availability=False)
    res = new_results(cases, skipped, RunSettings(repeat=1))
    fp = res.fingerprint
    assert fp.cpu_arch and fp.cores >= 1 and fp.python.split()[-1].count(".") == 2
    assert fp.threads["OMP_NUM_THREADS"] == "1" and "numpy" in fp.packages
    back = record.load(save(res, tmp_path / "r.json"))
    assert back.fingerprint == fp and "fingerprint" not in back.environment
    raw = json.loads((tmp_path / "r.json").read_text())
    assert raw["environment"]["fingerprint"]["cpu_model"] == fp.cpu_model and raw["shard"] is None


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d["environment"]["fingerprint"].update(cores=-1), "environment.fingerprint.cores: expected a whole"),
    (lambda d: d["environment"]["fingerprint"].pop("kernel"), "environment.fingerprint.kernel: missing"),
    (lambda d: d["environment"]["fingerprint"].update(gpu="x"), "environment.fingerprint.gpu: not a field"),
    (lambda d: d["environment"]["fingerprint"].update(cpu_flags="avx"), "environment.fingerprint.cpu_flags: expected a list"),
    (lambda d: d.update(shard={"index": 4, "count": 3, "cases": [], "partition": "x"}), "shard.index: expected a shard index"),
    (lambda d: d.update(shard={"index": 1, "count": 0, "cases": [], "partition": "x"}), "shard.count"),
    (lambda d: d.update(shard={"index": 1, "count": 2, "partition": "x"}), "shard.cases: missing"),
])
def test_bad_fingerprint_or_shard_sections_are_named(tmp_path, mutate, message):
    res = synthetic({"resnet15/jax.jit/params=args,chain=unrolled": timing_run([1.0])})
    res.fingerprint = metadata.fingerprint({})
    data = res.to_json()
    mutate(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(record.ResultsError, match=message.replace(".", r"\.")):
        record.load(path)


def test_machine_differences_are_named_and_counts_need_only_arch_and_versions():
    fp = metadata.fingerprint({})
    other = replace(fp, cores=fp.cores + 6, cpu_model="Other CPU", cpu_flags=fp.cpu_flags + ["zzz_flag"],
                    memory_bytes=(fp.memory_bytes or 0) + 1024**2)
    diffs = fp.differences(other)
    assert any(d.startswith("cores ") for d in diffs) and any("Other CPU" in d for d in diffs)
    assert any("zzz_flag" in d for d in diffs) and not any(d.startswith("memory") for d in diffs)  # within 2 %
    with pytest.raises(MachineMismatch, match="cores .* vs .*--force"):
        check_machines([("a.json", fp), ("b.json", other)])
    assert check_machines([("a.json", fp), ("b.json", other)], "counts") == []
    notes = check_machines([("a.json", fp), ("b.json", other)], force=True)
    assert notes and notes[0].startswith("--force")
    newer = replace(fp, packages={**fp.packages, "numpy": "0.0.1"})
    with pytest.raises(MachineMismatch, match="numpy"):
        check_machines([("a.json", fp), ("b.json", newer)], "counts")


def test_compare_refuses_timings_across_machines_unless_forced(cli, tmp_path):
    case = "resnet15/jax.jit/params=args,chain=unrolled"
    base = synthetic({case: timing_run([1.0, 1.01, 0.99, 1.0, 1.02])})
    head = synthetic({case: timing_run([1.0, 1.01, 0.99, 1.0, 1.02])})
    base.fingerprint = metadata.fingerprint({})
    head.fingerprint = replace(base.fingerprint, cores=base.fingerprint.cores + 6)
    b, h = save(base, tmp_path / "base.json"), save(head, tmp_path / "head.json")
    out = cli("compare", str(b), str(h))
    assert out.returncode == 2 and "different machines" in out.stderr and "cores" in out.stderr
    assert str(b) in out.stderr and str(h) in out.stderr
    forced = cli("compare", str(b), str(h), "--force")
    assert forced.returncode == 0 and "--force: timings from different machines" in forced.stdout
    counters = cli("compare", str(b), str(h), "--metric", "counters.*")
    assert counters.returncode == 0, counters.stderr


def test_report_refuses_runs_from_different_machines_unless_forced(cli, tmp_path):
    case = "resnet15/jax.jit/params=args,chain=unrolled"
    files = []
    for i, cores in enumerate((2, 8)):
        res = synthetic({case: timing_run([1.0, 1.1])},
                        environment={"hostname": "ci", "git": {"commit": str(i) * 40, "dirty": False}})
        res.fingerprint = replace(metadata.fingerprint({}), cores=cores)
        files.append(str(save(res, tmp_path / f"r{i}.json")))
    argv = ["report", "--runs", *files, "--results", str(tmp_path / "none"), "--out", str(tmp_path / "r.html")]
    (tmp_path / "none").mkdir()
    out = cli(*argv)
    assert out.returncode == 2 and "cannot report timings measured on different machines" in out.stderr
    assert "cores 2 vs 8" in out.stderr and not (tmp_path / "r.html").exists()
    forced = cli(*argv, "--force")
    assert forced.returncode == 0, forced.stderr
    assert "--force: timings from different machines" in forced.stderr


# --------------------------------------------------------------------------- merging results files


def shard_files(tmp_path: Path, count: int = 3, fingerprint=None, name="s") -> list[Path]:
    """One synthetic results file per shard of three cases (the partition's real split)."""
    cases = {f"{m}/autograd/params=args,chain=unrolled": timing_run([0.01 * (i + 1)] * 2)
             for i, m in enumerate(MODELS)}
    plan = partition(cases, count)
    fp = fingerprint or metadata.fingerprint({})
    paths = []
    for s in plan.shards:
        res = synthetic({cid: cases[cid] for cid in s.cases},
                        environment={"hostname": f"runner-{s.spec.index}", "git": {"commit": "c" * 40}})
        res.shard = ShardSection(s.spec.index, count, s.cases, plan.digest, list(cases))
        res.fingerprint = fp
        paths.append(save(res, tmp_path / f"{name}{s.spec.index}.json"))
    return paths


def test_merge_results_gives_every_case_once(cli, tmp_path):
    paths = shard_files(tmp_path)
    out = cli("merge", "results", *map(str, reversed(paths)), "--out", str(tmp_path / "m.json"))
    assert out.returncode == 0, out.stderr
    merged = record.load(tmp_path / "m.json")
    assert [c.id for c in merged.cases] == [f"{m}/autograd/params=args,chain=unrolled" for m in MODELS]  # in order
    assert merged.shard is None and merged.complete and merged.fingerprint == record.load(paths[0]).fingerprint
    assert [s["shard"] for s in merged.environment["shards"]] == ["1/3", "2/3", "3/3"]


def _edit(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


BAD_INPUTS = {
    "missing shard": (lambda p: [p[0], p[1]], "shard(s) 3/3 missing"),
    "duplicate shard": (lambda p: [p[0], p[0], p[1], p[2]], "are both shard 1/3"),
    "different revisions": (lambda p: (_edit(p[1], lambda d: d["environment"]["git"].update(commit="d" * 40)), p)[1],
                            "shards of different revisions"),
    "different machines": (lambda p: (_edit(p[2], lambda d: d["environment"]["fingerprint"].update(cores=999)), p)[1],
                           "cannot merge timings measured on different machines"),
    "not a shard": (lambda p: (_edit(p[0], lambda d: d.update(shard=None)), p)[1], "is not a shard's output"),
    "other partition": (lambda p: (_edit(p[1], lambda d: d["shard"].update(partition="0" * 16)), p)[1],
                        "cut from different selections"),
    "overlap": (lambda p: (_edit(p[1], lambda d: d["cases"].append(json.loads(p[0].read_text())["cases"][0])), p)[1],
                "is in both"),
    "incomplete": (lambda p: (_edit(p[0], lambda d: d.update(complete=False)), p)[1], "is incomplete"),
    "lost case": (lambda p: (_edit(p[0], lambda d: (d["cases"].clear(), d["shard"]["cases"].clear())), p)[1],
                  "lack case(s) of their partition"),
    "other settings": (lambda p: (_edit(p[2], lambda d: d["settings"].update(repeat=9)), p)[1],
                       "different settings: repeat"),
}


@pytest.mark.parametrize("kind", BAD_INPUTS)
def test_merge_refuses_bad_shard_inputs_naming_the_files_and_writes_nothing(cli, tmp_path, kind):
    paths = shard_files(tmp_path)
    pick, message = BAD_INPUTS[kind]
    given = pick(paths)
    out = cli("merge", "results", *map(str, given), "--out", str(tmp_path / "m.json"))
    assert out.returncode == 2, out.stdout + out.stderr
    assert message in out.stderr
    assert any(str(p) in out.stderr for p in given)
    assert not (tmp_path / "m.json").exists()


def test_merge_of_different_machines_with_force_says_so(cli, tmp_path):
    paths = shard_files(tmp_path)
    _edit(paths[2], lambda d: d["environment"]["fingerprint"].update(cores=999))
    out = cli("merge", "results", *map(str, paths), "--out", str(tmp_path / "m.json"), "--force")
    assert out.returncode == 0 and "--force" in out.stdout and "cores" in out.stdout
    merged = record.load(tmp_path / "m.json")
    assert merged.fingerprint is None and merged.environment["merged_across_machines"]


# --------------------------------------------------------------------------- merging gates


def _sides(tmp_path) -> dict[str, Side]:
    made = {}
    for role, commit in (("base", "a" * 40), ("head", "b" * 40)):
        (tmp_path / role).mkdir(exist_ok=True)
        made[role] = Side(role, Revision(role, commit, f"{role} subject"), tmp_path / role)
    return made


class CaseSampler:
    """Deterministic timings per case and side: the head of ``slow`` is twice as slow."""

    def __init__(self, sides, slow: str):
        self.role = {str(side.source): role for role, side in sides.items()}
        self.slow = slow

    def __call__(self, case, kind, cache, index, run):
        role = self.role[str(run.target.source)]
        factor = 2.0 if role == "head" and case.id == self.slow else 1.0
        return good(index, noisy(1.0, shift=3 if role == "head" else 0)(index) * factor)


def _gate(tmp_path, cases, skipped, out, shard=None, slow=None):
    sides = _sides(tmp_path)
    outcome = run_gate(cases, skipped, sides["base"], sides["head"], GateSettings(max_pairs=20), out,
                       sampler=CaseSampler(sides, slow), shard=shard, clock=lambda: 0.0)
    (out / "gate.json").write_text(json.dumps(document(outcome), indent=1))
    return outcome


@pytest.fixture
def sharded_gates(tmp_path):
    """An unsharded gate and three shard gates of the same four cases, one of them regressed."""
    return build_sharded_gates(tmp_path)


def build_sharded_gates(tmp_path: Path):
    """:func:`sharded_gates` in ``tmp_path``: ``(the unsharded outcome, [g1, g2, g3], the slow case)``,
    measured at a clock that stands still."""
    cases, skipped = select(["resnet15:blocks=2"], ["autograd", "jax.jit", "torch.eager", "torch.func"], None,
                            check_availability=False)
    slow = cases[1].id
    whole = _gate(tmp_path, cases, skipped, tmp_path / "whole", slow=slow)
    dirs = []
    for i in (1, 2, 3):
        spec = ShardSpec(i, 3)
        mine, mine_skipped, plan = select_shard([c.id for c in cases], cases, skipped, spec)
        section = ShardSection(i, 3, plan.shard(spec).cases, plan.digest, [c.id for c in cases])
        _gate(tmp_path, mine, mine_skipped, tmp_path / f"g{i}", shard=section, slow=slow)
        dirs.append(tmp_path / f"g{i}")
    return whole, dirs, slow


def test_merged_gate_equals_the_unsharded_gate(sharded_gates, cli, tmp_path):
    whole, dirs, slow = sharded_gates
    merged = merge_gates([load_shard(d) for d in reversed(dirs)])
    verdicts = {c.case: c.verdict.verdict for c in merged.doc.outcome.cases}
    assert verdicts == {c.case: c.verdict.verdict for c in whole.cases}
    assert [c.case for c in merged.doc.outcome.cases] == [c.case for c in whole.cases]
    assert verdicts[slow] == "regressed" and len(merged.doc.outcome.cases) == len(whole.cases)
    assert merged.exit_code == whole.exit_code() == 1
    doc = merged.doc.to_json()
    assert doc["fingerprint"] == json.loads((dirs[0] / "gate.json").read_text())["fingerprint"] is not None
    out = cli("merge", "gate", *map(str, dirs), "--out-dir", str(tmp_path / "merged"))
    assert out.returncode == 1, out.stdout + out.stderr
    summary = (tmp_path / "merged" / "summary.md").read_text()
    assert "3 of 3 shard(s) merged: regression" in summary and slow in summary
    # Like one gate's: the PR comment's marker, what passing means, verdicts with what they rest on.
    from ttfg.present.gate_views import GATE_MARKER

    merged_doc = json.loads((tmp_path / "merged" / "gate.json").read_text())
    assert summary.startswith(GATE_MARKER + "\n") and merged_doc["passing_means"] in summary
    assert merged_doc["passing_means"].startswith("Passing means: ") and "**regressed**" in summary
    assert {c.id for c in record.load(tmp_path / "merged" / "head.json").cases} == {c.case for c in whole.cases}


def test_the_merged_summary_states_each_shards_noise_floor(sharded_gates, tmp_path):
    """Shards run on different runners, so each one's noise floor (in its gate.json, as the gate
    command writes it) is stated; a shard without one says so."""
    from ttfg.decide import noise
    from ttfg.present.shard_views import merged_gate_markdown

    _, dirs, _ = sharded_gates
    for d in dirs[:2]:
        floor = noise.in_gate(record.load(d / "base.json"), record.load(d / "head.json"), "first_grad_s", 20)
        _edit(d / "gate.json", lambda doc, floor=floor: doc.update(noise=floor.to_json()))
    summary = merged_gate_markdown(merge_gates([load_shard(d) for d in dirs]).doc)
    lines = {line.split(":")[0]: line for line in summary.splitlines() if line.startswith("> shard ")}
    assert set(lines) == {"> shard 1/3", "> shard 2/3", "> shard 3/3"}, summary
    assert "gate sees" in lines["> shard 1/3"] and "first\\_grad\\_s" in lines["> shard 1/3"]
    assert "gate sees" in lines["> shard 2/3"]
    assert lines["> shard 3/3"].endswith("noise floor: not recorded")
    # A noise floor that is not one is refused like any other bad field of gate.json, naming it.
    _edit(dirs[1] / "gate.json", lambda doc: doc["noise"].update(entries="not a list"))
    with pytest.raises(TtfgError, match=r"g2/gate.json: noise.entries: expected a list"):
        load_shard(dirs[1])


def test_a_missing_or_unfinished_shard_fails_the_merged_gate_with_exit_2(sharded_gates, cli, tmp_path):
    _, dirs, _ = sharded_gates
    out = cli("merge", "gate", str(dirs[0]), str(dirs[2]), "--out-dir", str(tmp_path / "m1"))
    assert out.returncode == 2 and "shard 2/3 missing" in (tmp_path / "m1" / "summary.md").read_text()
    assert json.loads((tmp_path / "m1" / "gate.json").read_text())["exit_code"] == 2
    (dirs[1] / "gate.json").unlink()  # the job was killed before the gate finished
    out = cli("merge", "gate", *map(str, dirs), "--out-dir", str(tmp_path / "m2"))
    assert out.returncode == 2 and "shard 2/3 failed" in (tmp_path / "m2" / "summary.md").read_text()


def test_gate_merge_refuses_contradicting_shards(sharded_gates, cli, tmp_path):
    _, dirs, _ = sharded_gates
    _edit(dirs[1] / "gate.json", lambda d: d["head"].update(commit="f" * 40))
    # gate.json alone edited: its head.json is not the one it gated (a stale or swapped file).
    out = cli("merge", "gate", *map(str, dirs), "--out-dir", str(tmp_path / "m"))
    assert out.returncode == 2 and f"so it is not the head.json of {dirs[1] / 'gate.json'}" in out.stderr, out.stderr
    _edit(dirs[1] / "head.json", lambda d: d["gate"].update(commit="f" * 40))
    out = cli("merge", "gate", *map(str, dirs), "--out-dir", str(tmp_path / "m"))
    assert out.returncode == 2 and "shards of different revisions" in out.stderr and str(dirs[1]) in out.stderr
    assert not (tmp_path / "m").exists()
    out = cli("merge", "gate", str(dirs[0]), str(dirs[0]), "--out-dir", str(tmp_path / "m"))
    assert out.returncode == 2 and "are both shard 1/3" in out.stderr


# --------------------------------------------------------------------------- merging asv results

#: A commit of the shipped history in results/ (its file is split into shards below).
SHIPPED = "38d2f481"


def _asv_shards(tmp_path) -> tuple[dict, list[Path]]:
    """A committed asv result file split in two: every measured value in exactly one shard."""
    source = next((ROOT / "results" / "ttfg-dev-2core").glob(f"{SHIPPED}*.json"))
    original = json.loads(source.read_text())
    paths = []
    for k in (0, 1):
        doc = json.loads(source.read_text())
        for name, row in doc["results"].items():
            row[0] = [v if (i % 2 == k) else math.nan for i, v in enumerate(row[0])]
        folder = tmp_path / f"shard{k}" / "ttfg-dev-2core"
        folder.mkdir(parents=True)
        (folder / "machine.json").write_text((source.parent / "machine.json").read_text())
        path = folder / source.name
        path.write_text(json.dumps(doc))
        paths.append(path)
    return original, paths


def test_asv_shards_merge_into_the_original_history_entry(cli, tmp_path):
    from ttfg.history import asv_results

    original, paths = _asv_shards(tmp_path)
    out = cli("merge", "asv", *map(str, paths), "--results-dir", str(tmp_path / "results"))
    assert out.returncode == 0, out.stderr
    merged_path = tmp_path / "results" / "ttfg-dev-2core" / paths[0].name
    merged = json.loads(merged_path.read_text())
    for name, row in original["results"].items():
        got = merged["results"][name][0]
        assert [None if math.isnan(v) else v for v in got] == [None if math.isnan(v) else v for v in row[0]]
    assert (tmp_path / "results" / "ttfg-dev-2core" / "machine.json").exists()
    frame = asv_results.load(tmp_path / "results", dropna=True)
    assert len(frame) == len(asv_results.load_file(
        next((ROOT / "results" / "ttfg-dev-2core").glob(f"{SHIPPED}*.json")), dropna=True))


def test_asv_merge_reports_conflicts_and_other_commits(cli, tmp_path):
    original, paths = _asv_shards(tmp_path)
    measured = original["results"]["ttfg.track_alloc_count"][0]
    i = next(j for j, v in enumerate(measured) if v is not None and v == v)  # a value one shard holds
    _edit(paths[1 - i % 2], lambda d: d["results"]["ttfg.track_alloc_count"][0].__setitem__(i, 1.0))
    out = cli("merge", "asv", *map(str, paths), "--out", str(tmp_path / "m.json"))
    assert out.returncode == 2 and "conflicting values" in out.stderr and "ttfg.track_alloc_count" in out.stderr
    assert str(paths[0]) in out.stderr and str(paths[1]) in out.stderr and not (tmp_path / "m.json").exists()
    _edit(paths[1], lambda d: d.update(commit_hash="e" * 40))
    out = cli("merge", "asv", *map(str, paths), "--out", str(tmp_path / "m.json"))
    assert out.returncode == 2 and "commit_hash" in out.stderr


# --------------------------------------------------------------------------- the proof with real processes


@pytest.mark.slow
@pytest.mark.full  # three real runs and one unsharded: make test-all and CI run it
def test_three_real_shards_merge_into_what_one_unsharded_run_measures(cli, tmp_path):
    """3 shards of `ttfg run` (autograd on three small resnets, one process per case) and
    one unsharded run: the merged case set equals the unsharded one, no case twice, none
    lost, and every case's verdict (its structural counters, compared) is unchanged."""
    selection = [a for m in MODELS for a in ("--model", m)] + ["--backend", "autograd", "--repeat", "1"]
    whole = cli("run", *selection, "--out", str(tmp_path / "whole.json"))
    assert whole.returncode == 0, whole.stdout + whole.stderr
    shards = []
    for i in (1, 2, 3):
        out = cli("run", *selection, "--shard", f"{i}/3", "--out", str(tmp_path / f"shard{i}.json"))
        assert out.returncode == 0 and f"shard {i}/3: 1 of 3 case(s)" in out.stdout, out.stdout + out.stderr
        shards.append(str(tmp_path / f"shard{i}.json"))
    assert cli("merge", "results", *shards[:2], "--out", str(tmp_path / "partial.json")).returncode == 2
    merged = cli("merge", "results", *shards, "--out", str(tmp_path / "merged.json"))
    assert merged.returncode == 0, merged.stderr
    a, b = record.load(tmp_path / "whole.json"), record.load(tmp_path / "merged.json")
    ids = [c.id for c in b.cases]
    assert len(ids) == len(set(ids)) and ids == [c.id for c in a.cases]  # same cases, same order
    assert all(c.good() for c in b.cases)
    cmp = cli("compare", str(tmp_path / "whole.json"), str(tmp_path / "merged.json"), "--metric", "counters.*",
               "--format", "json")
    assert cmp.returncode == 0, cmp.stderr
    rows = json.loads(cmp.stdout)["rows"]
    assert {r["case"] for r in rows} == set(ids) and {r["verdict"]["verdict"] for r in rows} == {"unchanged"}


# --------------------------------------------------------------------------- asv record --shard


def test_asv_selection_takes_its_shard_from_the_environment(monkeypatch):
    from ttfg.history import asv_suite

    monkeypatch.setenv("TTFG_ASV_MODELS", ",".join(MODELS))
    monkeypatch.setenv("TTFG_ASV_BACKENDS", "autograd,torch.eager")
    whole = asv_suite.Selection.from_env()
    all_ids = {c.id for c in whole.cases()[0]}
    got = []
    for i in (1, 2, 3):
        monkeypatch.setenv("TTFG_ASV_SHARD", f"{i}/3")
        sel = asv_suite.Selection.from_env()
        cases = sel.cases()[0]
        assert len(asv_suite.bench_patterns(sel)) == len(cases)
        got += [c.id for c in cases]
    assert sorted(got) == sorted(all_ids) and len(got) == len(set(got))
    monkeypatch.setenv("TTFG_ASV_SHARD", "5/3")
    with pytest.raises(UsageError, match="between 1 and 3"):
        asv_suite.Selection.from_env().cases()


@pytest.mark.full
def test_real_asv_record_in_two_shards_merges_into_one_history_entry(tmp_path):
    """Two clones, one per runner, each `ttfg asv record --shard I/2` of the same commit;
    `ttfg merge asv` joins their result files into the entry one unsharded record writes."""
    import os
    import subprocess
    import sys

    from ttfg.history import asv_results

    from .conftest import git
    from .test_asv import clone_with_two_commits, run

    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith(("TTFG_ASV_", "ASV"))}
    env.update(TTFG_ASV_MODELS="resnet15", TTFG_ASV_BACKENDS="torch.eager,autograd", TTFG_ASV_REPEAT="1",
               TTFG_ASV_ALLOCATIONS="0")
    files = []
    first, _ = clone_with_two_commits(tmp_path / "runner1")
    git(tmp_path, "clone", "--quiet", "--no-hardlinks", str(tmp_path / "runner1"), str(tmp_path / "runner2"))
    for i in (1, 2):
        clone, home = tmp_path / f"runner{i}", tmp_path / f"home{i}"
        home.mkdir()
        run([sys.executable, "-m", "ttfg", "asv", "record", first, "--machine", "testbox", "--no-publish",
             "--shard", f"{i}/2"], clone, {**env, "HOME": str(home)})
        files.append(next((clone / "results" / "testbox").glob(f"{first[:8]}-existing-*.json")))
    out = subprocess.run([sys.executable, "-m", "ttfg", "merge", "asv", *map(str, files), "--results-dir",
                          str(tmp_path / "results")], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    frame = asv_results.load(tmp_path / "results", dropna=True)
    fg = frame[frame.benchmark == "ttfg.track_first_grad_seconds"]
    assert sorted(fg["backend"]) == ["autograd", "torch.eager"]
    per_shard = [asv_results.load_file(f, dropna=True) for f in files]
    assert [sorted(set(p[p.benchmark == "ttfg.track_first_grad_seconds"]["backend"])) for p in per_shard] in (
        [["autograd"], ["torch.eager"]], [["torch.eager"], ["autograd"]])


def test_a_gate_of_one_shard_gates_only_its_cases_and_records_it(tmp_path):
    """The wiring of `ttfg gate --shard`: the shard's cases (cut as ``cli/shards.shard_selection`` cuts them) reach
    the gate loop, and gate.json names the shard and the machine (the sides are folders, the samples in-process)."""
    from ttfg.app import gate as use_case
    from ttfg.app.selection import cut_shard

    from .fake_sides import FolderSides, two_commits

    cases, skipped = select(MODELS, ["autograd"], None, check_availability=False)
    ids = [c.id for c in cases]
    cut = cut_shard(MODELS, ["autograd"], None, None, ShardSpec(2, 3), cases, skipped)
    sampled = set()

    def sampler(case, kind, cache, index, run):
        sampled.add(case.id)
        return good(index, noisy(1.0)(index))

    request = use_case.GateRequest(two_commits(tmp_path / "repo"), "HEAD~1", cut.cases,
                                   GateSettings(max_pairs=20), tmp_path / "g", skipped=cut.skipped, shard=cut.section)
    report = use_case.run(request, opener=FolderSides(lambda rev: tmp_path / "sides" / rev.commit), sampler=sampler)
    assert sampled == set(partition(ids, 3).shards[1].cases) and cut.section.label == "2/3"
    assert [c.case for c in report.outcome.cases] == partition(ids, 3).shards[1].cases
    doc = json.loads((tmp_path / "g" / "gate.json").read_text())
    assert doc["shard"]["index"] == 2 and doc["shard"]["all_cases"] == ids and doc["fingerprint"]["cpu_arch"]
    assert report.code == doc["exit_code"] == 0  # the one case gated, unchanged
    assert "shard 2/3" in (tmp_path / "g" / "summary.md").read_text()


@pytest.mark.slow
@pytest.mark.full  # a real gate/run of tens of seconds: make test-all and CI run it
def test_shards_of_a_run_over_environments_merge(tmp_path):
    """``--shard I/N --env``: each shard's section names its cases as measured, once per environment, so the
    merge finds every one (it said "lost 1 case")."""
    from .conftest import run_ttfg

    selection = ("--model", "resnet15:blocks=1", "--model", "resnet15:blocks=2", "--backend", "autograd",
                 "--repeat", "1", "--env", "current")
    for i in (1, 2):
        out = run_ttfg("run", *selection, "--shard", f"{i}/2", "--out", str(tmp_path / f"s{i}.json"))
        assert out.returncode == 0, out.stdout + out.stderr
    merged = run_ttfg("merge", "results", str(tmp_path / "s1.json"), str(tmp_path / "s2.json"),
                      "--out", str(tmp_path / "all.json"))
    assert merged.returncode == 0, merged.stdout + merged.stderr
    ids = [c["id"] for c in json.loads((tmp_path / "all.json").read_text())["cases"]]
    assert sorted(ids) == ["resnet15:blocks=1/autograd/params=args,chain=unrolled/current",
                           "resnet15:blocks=2/autograd/params=args,chain=unrolled/current"]


def test_an_accepted_regression_stays_accepted_when_the_shards_merge(sharded_gates, cli, tmp_path):
    """A ``Ttfg-Accept`` trailer that accepted a regression in its shard passes the merged gate too, and the
    merged outputs say who accepted it and why; a trailer no shard used is reported unused, once."""
    _, dirs, slow = sharded_gates
    trailers = [{"case": slow, "metric": "*", "reason": "the model grew on purpose", "author": "Ada <a@b>",
                 "commit": "c" * 40, "used_by": [], "problem": None},
                {"case": "nothing/*", "metric": "*", "reason": "matches nothing", "author": "Bob <b@c>",
                 "commit": "c" * 40, "used_by": [], "problem": None}]
    for d in dirs:
        def accept(doc):
            mine = [c for c in doc["cases"] if c["case"] == slow]
            for c in mine:
                c["accepted"] = {k: trailers[0][k] for k in ("case", "metric", "reason", "author", "commit")}
                doc["exit_code"] = 0
            doc["acceptances"] = [{**trailers[0], "used_by": [c["case"] for c in mine]}, dict(trailers[1])]
        _edit(d / "gate.json", accept)
    out = cli("merge", "gate", *map(str, dirs), "--out-dir", str(tmp_path / "merged"))
    assert out.returncode == 0, out.stdout + out.stderr
    doc = json.loads((tmp_path / "merged" / "gate.json").read_text())
    assert doc["exit_code"] == 0
    assert [(a["reason"], a["used_by"]) for a in doc["acceptances"]] == [
        ("the model grew on purpose", [slow]), ("matches nothing", [])]
    summary = (tmp_path / "merged" / "summary.md").read_text()
    assert "passed with 1 accepted regression(s), see below" in summary.splitlines()[1]
    assert "Accepted, so not failing:" in doc["passing_means"] and "Ada" in summary
    assert "Unused Ttfg-Accept trailer(s): 'nothing/* * matches nothing'" in doc["passing_means"]
    assert summary.count("Unused Ttfg-Accept trailer(s)") == 1


def test_the_merged_gate_keeps_the_shards_source_record(sharded_gates, tmp_path):
    """Every shard gates one base and head, so their source records agree and the merge keeps it; shards that
    disagree keep none."""
    import shutil

    _, dirs, _ = sharded_gates
    record = {"proven": False, "why": "README.md changed and is not a Python file", "files": []}
    copies = []
    for d in dirs:
        copy = tmp_path / "copies" / d.name
        shutil.copytree(d, copy)
        doc = json.loads((copy / "gate.json").read_text())
        doc["source"] = record
        (copy / "gate.json").write_text(json.dumps(doc))
        copies.append(copy)
    assert merge_gates([load_shard(d) for d in copies]).doc.outcome.source == record
    doc = json.loads((copies[0] / "gate.json").read_text())
    doc["source"] = {**record, "why": "pyproject.toml changed and is not a Python file"}
    (copies[0] / "gate.json").write_text(json.dumps(doc))
    assert merge_gates([load_shard(d) for d in copies]).doc.outcome.source is None
