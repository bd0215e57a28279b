"""ttfg gate end to end, in a throwaway git repository made from this checkout.

The repository gets three commits: ``first`` (this code), ``second`` (resnet15's
default depth doubled from 15 to 30 blocks: a real regression of the first gradient,
its compile for jax.jit, the eager tape for autograd) and, on a side branch, ``broken`` (a model that raises: a base that cannot
run). The gate runs as a user would run it: a subprocess in that repository, whose
own ``harness`` runs the parent (cwd and PYTHONPATH) and, from the two worktrees it
creates, the probes.

``make test`` runs the refusals, which stop before measuring; the real gates (autograd's
and jax.jit's regression, Ctrl-C, a base that cannot run, the long A/A gate) are ``full``
(``make test-all``, CI), and ``make test`` keeps one real gate in test_user_project.py. The loop's policy is
tested in milliseconds with a fake sampler in test_gate_policy.py.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from ttfg.results import record
from ttfg.fmt import Duration
from ttfg.errors import UsageError

from .conftest import GitRepo, copy_working_tree, git, interruptible

JIT = "resnet15/jax.jit/params=args,chain=unrolled"
AUTOGRAD = "resnet15/autograd/params=args,chain=unrolled"


#: Issue 24's experiment: a 30 ms busy loop in AutogradBackend.build() (build_s 0.82 ms -> 30.9 ms), which
#: the gate that decided on the first gradient alone passed.
BUILD = "        return AutogradEngine(spec, weights, x)"
BUILD_LOOP = """        import time

        until = time.perf_counter() + 0.030
        while time.perf_counter() < until:
            pass
        return AutogradEngine(spec, weights, x)"""


def edit(path, old, new):
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new))


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    root = tmp_path_factory.mktemp("gate-repo")
    copy_working_tree(root)
    history = GitRepo.init(root, "trunk", identity=("gate test", "gate-test@example.com"))
    first = history.commit("first")
    history.git("checkout", "-q", "-b", "empty")
    empty = history.commit("no change at all (an A/A pair of commits)")
    history.git("checkout", "-q", "-b", "broken", first)
    edit(root / "models/resnet15.py", '    if blocks < 1:', '    raise RuntimeError("deliberately broken model")\n    if blocks < 1:')
    history.commit("broken model", stage="tracked")
    history.git("checkout", "-q", "-b", "build-loop", first)
    edit(root / "harness/engines/autograd_numpy.py", BUILD, BUILD_LOOP)
    build_loop = history.commit("a 30 ms busy loop in the autograd build (issue 24's experiment)", stage="tracked")
    history.git("checkout", "-q", "trunk")
    edit(root / "models/resnet15.py", "def build(blocks: int = 15,", "def build(blocks: int = 30,")
    second = history.commit("second: 30 blocks", stage="tracked")
    return SimpleNamespace(path=root, first=first, empty=empty, second=second, build_loop=build_loop)


def gate(repo, *args, timeout=420, summary=None, columns=None):
    env = dict(os.environ)
    env.pop("GITHUB_STEP_SUMMARY", None)
    if columns:
        env["COLUMNS"] = str(columns)
    if summary:
        env["GITHUB_STEP_SUMMARY"] = str(summary)
    return subprocess.run([sys.executable, "-m", "ttfg", "gate", *args], cwd=repo.path, env=env,
                          capture_output=True, text=True, timeout=timeout)


def worktrees(repo) -> list[str]:
    return [line for line in git(repo.path, "worktree", "list", "--porcelain").splitlines() if line.startswith("worktree ")]


def test_parse_duration():
    durations = [Duration.parse(t) for t in ("90", "90s", "10m", "1h", "1m30s", "2.5m")]
    assert [d.seconds for d in durations] == [90, 90, 600, 3600, 90, 150]
    assert [str(d) for d in durations] == ["90", "90s", "10m", "1h", "1m30s", "2.5m"]  # shown as typed
    for bad in ("", "0", "10x", "m", "-5s", "9" * 400):
        with pytest.raises(UsageError):
            Duration.parse(bad)


def test_refusals_exit_2_before_measuring(repo):
    out = gate(repo, "--base", "no-such-branch")
    assert out.returncode == 2 and "base revision 'no-such-branch' not found" in out.stderr
    out = gate(repo, "--base", repo.first, "--head", "deadbeef")
    assert out.returncode == 2 and "head revision 'deadbeef' not found" in out.stderr
    # Issue 29, class 19: autograd's first gradient is one phase; a compile guard ran 4 pairs, then "0 complete pairs".
    out = gate(repo, "--base", repo.first, "--backend", "autograd", "--guard", "compile_s")
    assert out.returncode == 2, out.stdout + out.stderr
    assert "--guard compile_s: no selected case can report it: autograd does not split a compile phase" in out.stderr
    assert "(it reports execute only)" in out.stderr and "pair" not in out.stdout + out.stderr
    target = repo.path / "harness" / "decide" / "gate_loop.py"
    original = target.read_text()
    try:
        target.write_text(original + "\n# local change\n")
        out = gate(repo, "--base", repo.first)
        assert out.returncode == 2, out.stdout + out.stderr
        assert "uncommitted changes" in out.stderr and "harness/decide/gate_loop.py" in out.stderr and "--allow-dirty" in out.stderr
    finally:
        target.write_text(original)
    assert len(worktrees(repo)) == 1


@pytest.mark.slow
@pytest.mark.full  # a real gate/run of tens of seconds: make test-all and CI run it
def test_base_that_cannot_run_exits_2(repo, tmp_path):
    out = gate(repo, "--base", "broken", "--head", repo.first, "--backend", "autograd", "--budget", "60s",
               "--max-failures", "2", "--tiers", "time", "--out-dir", str(tmp_path / "out"))
    assert out.returncode == 2, out.stdout + out.stderr
    assert "base cannot run" in out.stdout and "deliberately broken model" in out.stdout
    verdicts = json.loads((tmp_path / "out" / "gate.json").read_text())
    assert verdicts["cases"][0]["stop"] == "base cannot run"
    assert len(worktrees(repo)) == 1


@pytest.mark.slow
@pytest.mark.full  # a real gate/run of tens of seconds: make test-all and CI run it
def test_ctrl_c_removes_worktrees_and_keeps_finished_samples(repo, tmp_path):
    out_dir = tmp_path / "out"
    env = dict(os.environ)
    env.pop("GITHUB_STEP_SUMMARY", None)
    proc = subprocess.Popen(interruptible("gate", "--base", repo.first, "--head", repo.second,
                                          "--backend", "autograd", "--budget", "10m", "--tiers", "time",
                                          "--out-dir", str(out_dir)),
                            cwd=repo.path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if (out_dir / "head.json").exists() and record.load(out_dir / "head.json").cases[0].samples:
            break
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 2, stdout + stderr
    assert "interrupted" in stdout and "worktrees removed" in stdout
    assert len(worktrees(repo)) == 1
    head = record.load(out_dir / "head.json")
    assert not head.complete and head.case(AUTOGRAD).samples
    assert not os.path.exists(head.environment["side"]["tree"]), "the temporary worktree folder is gone"
    assert head.settings["source"] == head.environment["side"]["install"]["root"], "probes imported the install"


@pytest.mark.slow
@pytest.mark.parametrize("backend, case_id, counter, budget", [
    pytest.param("autograd", AUTOGRAD, "counters.autograd_primitives", "90s", id="autograd"),
    pytest.param("jax.jit", JIT, "counters.jaxpr_eqns", "3m", id="jax.jit", marks=pytest.mark.full),
])
@pytest.mark.full  # a real gate of tens of seconds: make test-all and CI run it
def test_gate_flags_a_deliberately_slower_head(repo, tmp_path, backend, case_id, counter, budget):
    """15 -> 30 blocks roughly doubles the first gradient: exit 1, regressed, ratio > 1.2.

    autograd's pairs take about 3 s; a quiet machine decides in well under its budget,
    a loaded one decides at the final look when the budget runs out."""
    summary = tmp_path / "step-summary.md"
    summary.write_text("earlier step\n")
    out_dir = tmp_path / "out"
    out = gate(repo, "--base", repo.first, "--head", repo.second, "--model", "resnet15", "--backend", backend,
               "--budget", budget, "--tiers", "time", "--out-dir", str(out_dir), "--format", "json", "--profiles", "1",
               summary=summary)
    assert out.returncode == 1, out.stdout + out.stderr
    # --format json: stdout is gate.json's document alone; progress and tables go to stderr.
    assert "gate failed" in out.stderr and " pair 0: " in out.stderr  # progress lines
    result = json.loads((out_dir / "gate.json").read_text())
    assert json.loads(out.stdout) == result
    # No stored calibration here (the tests' private cache folder): a noise floor from the gate's own pairs,
    # in both results files, gate.json and the summary.
    assert result["noise"]["source"] == "in-run" and "log(head/base)" in result["noise"]["method"]
    case = result["cases"][0]
    assert case["case"] == case_id and case["verdict"]["verdict"] == "regressed", case
    assert case["verdict"]["ratio"] > 1.2 and case["verdict"]["ci_low"] > 1.0
    assert result["head"]["commit"] == repo.second and result["exit_code"] == 1
    # The structural counters explain the regression.
    changed = {c["metric"]: c for c in case["changes"]}
    assert changed[counter]["verdict"]["ratio"] > 1.5
    # Both results files are normal results files; each sample knows its pair, and the order alternates.
    base, head = record.load(out_dir / "base.json"), record.load(out_dir / "head.json")
    assert base.complete and head.complete
    assert base.environment["git"]["commit"] == repo.first and head.gate.role == "head"
    assert base.settings["source"] != head.settings["source"]
    b, h = base.case(case_id).good(), head.case(case_id).good()
    assert [s.pair for s in b] == list(range(len(b))) == [s.pair for s in h]
    assert [s.pair_position for s in b[:4]] == [0, 1, 0, 1]
    assert head.gate.commit == repo.second and head.gate.settings["metric"] == "first_grad_s"
    assert base.noise == head.noise and base.noise.to_json() == result["noise"]
    text = summary.read_text()
    assert text.startswith("earlier step\n") and "## ttfg gate: regression" in text and "**regressed**" in text
    assert "on this machine a 10-minute gate sees" in text or "noise floor: not estimated" in text
    # What passing means, and where the regression went, in every output.
    assert result["passing_means"].startswith("Passing means: ") and result["passing_means"] in text
    assert "largest phase changes" in out.stderr  # the ten-second view: a failure's numbers, not the fine print
    attribution = case["attribution"]
    assert attribution["paired"] and attribution["total"]["delta"] > 0 and attribution["headline"]
    assert {p["phase"] for p in attribution["phases"]} >= {"import", "build", "execute"}
    assert any(c["metric"] == counter and c["verdict"] == "regressed" for c in attribution["counters"])
    assert "**Where it went**" in text
    # One profile process per side after the decision: the function-level diff names Python functions.
    assert attribution["function_samples"] == {"s": {"base": 1, "head": 1}}
    assert attribution["functions"] and attribution["top_functions"]["s"]["where"]
    assert attribution["top_function"]["unit"] == "s" and attribution["top_function"]["fn"]
    assert len(worktrees(repo)) == 1


@pytest.mark.slow
@pytest.mark.full
def test_a_a_gate_passes(repo, tmp_path):
    # Two commits with the same code (the same commit twice is "nothing to gate", tested below).
    out = gate(repo, "--base", repo.first, "--head", repo.empty, "--backend", "jax.jit", "--budget", "60s",
               "--tiers", "time", "--out-dir", str(tmp_path / "out"))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "regressed" not in out.stdout and "gate passed" in out.stdout
    case = json.loads((tmp_path / "out" / "gate.json").read_text())["cases"][0]
    assert case["verdict"]["verdict"] in ("unchanged", "inconclusive") and case["changes"] == []
    # Honest either way: equivalence shown by two one-sided tests, or the slowdown it could have caught.
    assert case["verdict"]["verdict"] == "unchanged" or case["verdict"]["detectable"] > 0
    assert case["attribution"] is None
    assert len(worktrees(repo)) == 1


@pytest.mark.full  # in make test, tests/test_user_project.py's slower revision is settled the same way
def test_tiered_gate_settles_a_structural_regression_with_one_pair(repo, tmp_path):
    """The default tiers: 15 -> 30 blocks grows autograd's counters, so one pair decides."""
    out = gate(repo, "--base", repo.first, "--head", repo.second, "--backend", "autograd",
               "--out-dir", str(tmp_path / "out"))
    assert out.returncode == 1, out.stdout + out.stderr
    assert "structural: autograd primitives" in out.stdout and "(structural tier, 1 sample)" in out.stdout
    case = json.loads((tmp_path / "out" / "gate.json").read_text())["cases"][0]
    assert case["tier"] == "structural" and case["verdict"]["verdict"] == "regressed" and case["attempted"] == 1
    assert "autograd_primitives" in case["verdict"]["reason"]
    assert "decided by the structural tier on autograd primitives" in (tmp_path / "out" / "summary.md").read_text()


@pytest.mark.full  # in make test, tests/test_user_project.py gates a comment-only change through the same tier
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed: the instructions tier "
                    "cannot count here (the gate falls back to wall time)")
def test_tiered_a_a_gate_is_settled_unchanged_by_instruction_counts(repo, tmp_path):
    out = gate(repo, "--base", repo.first, "--head", repo.empty, "--backend", "autograd",
               "--out-dir", str(tmp_path / "out"))
    assert out.returncode == 0, out.stdout + out.stderr
    case = json.loads((tmp_path / "out" / "gate.json").read_text())["cases"][0]
    assert case["tier"] == "instructions" and case["verdict"]["verdict"] == "unchanged", case
    # The counts cover the build and the first gradient; the import and the whole process were screened, short
    # (2 pairs) unless a pair looked more than 10 % slower on one of them (then the escalated screen, looks at 5, 15).
    assert [t["tier"] for t in case["tiers"]] == ["structural", "instructions", "time"]
    screen = case["screen"]
    assert screen["metrics"] == ["process_ttfg_s", "import_s"] and screen["short"], screen
    assert [g["metric"] for g in case["guards"]] == (["process_ttfg_s", "import_s"] if screen["escalated"] else [])
    # escalated: looks at 5 pairs and at 15 (decided at the first or the second)
    assert case["attempted"] == screen["pairs"] and case["attempted"] in ((5, 15) if screen["escalated"] else (2,)), case
    head = record.load(tmp_path / "out" / "head.json")
    counted = head.case(AUTOGRAD).good("instructions")
    assert len(counted) == 1 and counted[0].instructions > 0 and counted[0].instructions_top
    assert len(worktrees(repo)) == 1


def test_the_same_commit_twice_is_said_and_not_measured(repo, tmp_path):
    out = gate(repo, "--base", "trunk", "--head", repo.second, "--backend", "autograd", "--out-dir", str(tmp_path))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "same commit" in out.stdout and "nothing was measured" in out.stdout
    assert not (tmp_path / "head.json").exists()


# --------------------------------------------------------------------------- the build-loop experiment (issue 24)
