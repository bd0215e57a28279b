"""``ttfg doctor``: machine facts from a fake /proc and /sys, exit codes, the calibration's arithmetic."""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from ttfg.decide import calibrate as cal
from ttfg.decide.stats import min_detectable_effect, sd_interval
from ttfg.fmt import Duration
from ttfg.measure import machine
from ttfg.measure.cases import Case
from ttfg.present import doctor as view

from .conftest import run_ttfg
from .test_cli import NO_FRAMEWORK


def write(root: Path, path: str, text: str) -> None:
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)


def by_item(findings) -> dict[str, machine.Finding]:
    return {f.item: f for f in findings}


def fake_machine(root: Path) -> None:
    """A noisy 2-core machine: powersave, turbo on, swap in use, a VM, a thread variable above the cores."""
    write(root, "/proc/loadavg", "1.90 1.20 0.80 3/200 4242\n")
    write(root, "/proc/meminfo", "MemTotal: 4000000 kB\nMemFree: 500000 kB\nMemAvailable: 1000000 kB\n"
                                 "SwapTotal: 2000000 kB\nSwapFree: 1000000 kB\n")
    write(root, "/proc/stat", "cpu  100 0 50 800 5 0 1 40 0 0\ncpu0 50 0 25 400 2 0 0 20 0 0\n")
    write(root, "/proc/123/stat", "123 (busy (one)) R 1 1 1 0 -1 0 0 0 0 0 500 100 0 0 20 0 1 0 1 0 0\n")
    write(root, "/proc/cpuinfo", "processor\t: 0\nflags\t\t: fpu sse2 hypervisor avx\n")
    write(root, "/proc/sys/kernel/perf_event_paranoid", "2\n")
    write(root, "/sys/devices/system/cpu/online", "0-1\n")
    for cpu in ("cpu0", "cpu1"):
        write(root, f"/sys/devices/system/cpu/{cpu}/cpufreq/scaling_governor", "powersave\n")
    write(root, "/sys/devices/system/cpu/intel_pstate/no_turbo", "0\n")
    write(root, "/sys/class/dmi/id/sys_vendor", "QEMU\n")
    write(root, "/sys/class/dmi/id/product_name", "Standard PC\n")


def test_fake_machine_findings(tmp_path):
    fake_machine(tmp_path)
    found = by_item(machine.examine(root=tmp_path, home=tmp_path, run=None, environ={"OMP_NUM_THREADS": "8"},
                                    window_s=0))
    assert found["load average"].verdict == "warn" and "1.90 1.20 0.80" in found["load average"].detail
    assert found["cores and threads"].verdict == "warn" and "OMP_NUM_THREADS" in found["cores and threads"].advice
    assert found["cpu governor"].verdict == "warn" and "powersave on 2 cpu(s)" in found["cpu governor"].detail
    assert found["turbo boost"].verdict == "warn" and "no_turbo=0" in found["turbo boost"].detail
    assert found["memory"].verdict == "warn" and "1.0 GiB available" in found["memory"].detail
    assert found["swap"].verdict == "warn" and "1.0 GiB of 1.9 GiB" in found["swap"].detail
    assert found["virtualization"].verdict == "warn"
    assert "hypervisor" in found["virtualization"].detail and "QEMU" in found["virtualization"].detail
    assert found["asv machine"].verdict == "warn"  # no .asv-machine.json in the fake home
    assert found["hardware counters"].verdict in ("ok", "missing", "warn", "unknown")
    assert all(f.verdict in machine.VERDICTS for f in found.values())


def test_quiet_machine_is_ok(tmp_path):
    fake_machine(tmp_path)
    write(tmp_path, "/proc/loadavg", "0.10 0.05 0.01 1/100 7\n")
    write(tmp_path, "/proc/meminfo", "MemTotal: 16000000 kB\nMemAvailable: 15000000 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n")
    for cpu in ("cpu0", "cpu1"):
        write(tmp_path, f"/sys/devices/system/cpu/{cpu}/cpufreq/scaling_governor", "performance\n")
    write(tmp_path, "/sys/devices/system/cpu/intel_pstate/no_turbo", "1\n")
    write(tmp_path, "/.asv-machine.json", json.dumps({"ci-2core": {"cpu": "x"}, "version": 1}))
    found = by_item(machine.examine(root=tmp_path, home=tmp_path, run=None, environ={}, window_s=0))
    for item in ("load average", "cores and threads", "cpu governor", "turbo boost", "memory", "swap"):
        assert found[item].verdict == "ok", found[item]
    assert found["asv machine"].verdict == "ok" and "ci-2core" in found["asv machine"].detail


def test_unreadable_entries_are_unknown_never_a_crash(tmp_path):
    """Every entry a directory (reading it fails) or garbage: each fact is unknown, nothing raises."""
    for path in ("/proc/loadavg", "/proc/meminfo", "/proc/stat", "/proc/cpuinfo", "/proc/1/cgroup",
                 "/proc/sys/kernel/perf_event_paranoid", "/sys/devices/system/cpu/online",
                 "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
                 "/sys/devices/system/cpu/intel_pstate/no_turbo", "/sys/class/dmi/id/sys_vendor",
                 "/.asv-machine.json"):
        (tmp_path / path.lstrip("/")).mkdir(parents=True)
    write(tmp_path, "/proc/77/stat", "garbage without a closing paren")
    found = by_item(machine.examine(root=tmp_path, home=tmp_path, run=None, environ={}, window_s=0))
    for item in ("load average", "cpu steal", "cores and threads", "cpu governor", "turbo boost", "memory", "swap",
                 "virtualization", "asv machine", "busy processes"):
        assert found[item].verdict == "unknown", found[item]
    (tmp_path / "proc/loadavg").rmdir()  # garbage content is unknown too
    write(tmp_path, "/proc/loadavg", "not numbers\n")
    assert machine.check_load(tmp_path, 2).verdict == "unknown"
    empty = tmp_path / "empty"
    empty.mkdir()
    found = by_item(machine.examine(root=empty, home=empty, run=None, environ={}, window_s=0))
    assert found["memory"].verdict == found["cpu governor"].verdict == found["load average"].verdict == "unknown"


def test_busy_processes_exclude_ourselves():
    before = machine.CpuSnapshot({1: ("idle", 10), 2: ("hog", 0), 3: ("me", 0)}, 1000, 5, at=0.0)
    after = machine.CpuSnapshot({1: ("idle", 10), 2: ("hog", 90), 3: ("me", 100), 4: ("new", 50)}, 1200, 45, at=1.0)
    hz = os.sysconf("SC_CLK_TCK")
    busy = machine.busy_processes(before, after, exclude={3})
    assert [(pid, name) for pid, name, _ in busy] == [(2, "hog")]
    assert busy[0][2] == pytest.approx(90 / hz)
    steal = machine.check_steal(before, after)
    assert steal.verdict == "warn" and "20 % of CPU time" in steal.detail  # the one formatter: "20 %", not "20.0%"


def test_perf_answers_are_read_not_assumed(tmp_path, monkeypatch):
    write(tmp_path, "/proc/sys/kernel/perf_event_paranoid", "3\n")
    monkeypatch.setattr(machine.shutil, "which", lambda name: f"/usr/bin/{name}")
    no_pmu = machine.check_pmu(tmp_path, lambda argv: (0, "", "<not supported>,,instructions,0,100.00,,\n"))
    assert no_pmu.verdict == "missing" and "perf_event_paranoid 3" in no_pmu.detail
    counts = machine.check_pmu(tmp_path, lambda argv: (0, "", "123456,,instructions,100,100.00,,\n"))
    assert counts.verdict == "ok"
    refused = machine.check_pmu(tmp_path, lambda argv: (255, "", "Error: Access to performance monitoring ...\n"))
    assert refused.verdict == "warn" and "perf_event_paranoid=2" in refused.advice
    assert machine.check_pmu(tmp_path, lambda argv: None).verdict == "unknown"


def test_tables_fit_80_columns_without_cutting(tmp_path):
    fake_machine(tmp_path)
    findings = machine.examine(root=tmp_path, home=tmp_path, run=None, environ={"OMP_NUM_THREADS": "8"}, window_s=0)
    out = Console(width=80, record=True, color_system=None)
    for table in view.findings_tables(findings):
        out.print(table)
    text = out.export_text()
    assert max(map(len, text.splitlines())) <= 80
    assert "…" not in text
    flat = " ".join(text.split())
    assert "cpupower frequency-set -g performance" in flat


# --------------------------------------------------------------------------- min_detectable_effect


def test_min_detectable_effect_matches_design_numbers_and_normal_limit():
    # DESIGN.md: at SD 0.087, 5 % needs about 56 pairs, 10 % about 14 (normal approximation).
    assert min_detectable_effect(0.087, 56) == pytest.approx(0.05, abs=0.003)
    assert 0.10 <= min_detectable_effect(0.087, 14) <= 0.125  # t quantiles at 13 df widen it
    z = 2.5758293035489 + 1.6448536269514722
    assert min_detectable_effect(0.1, 5000) == pytest.approx(math.expm1(z * 0.1 / math.sqrt(5000)), rel=2e-3)
    assert min_detectable_effect(0.0, 10) == 0.0
    assert min_detectable_effect(0.1, 10) < min_detectable_effect(0.1, 5) < min_detectable_effect(0.2, 5)
    for bad in ((-0.1, 10), (math.nan, 10), (0.1, 1), (0.1, 2.5)):
        with pytest.raises(ValueError):
            min_detectable_effect(*bad)
    with pytest.raises(ValueError):
        min_detectable_effect(0.1, 10, alpha=0.01, power=0.005)


def test_min_detectable_effect_power_by_seeded_simulation():
    """At the returned effect, the paired t-test on log ratios rejects in 95 % of simulated trials."""
    from scipy import special

    sd, n, trials = 0.12, 12, 20000
    delta = math.log1p(min_detectable_effect(sd, n))
    rng = np.random.default_rng(7)
    logs = rng.normal(delta, sd, size=(trials, n))
    t = logs.mean(axis=1) / (logs.std(axis=1, ddof=1) / math.sqrt(n))
    rejected = np.mean(np.abs(t) > special.stdtrit(n - 1, 1 - 0.01 / 2))
    assert rejected == pytest.approx(0.95, abs=0.01)


def test_sd_interval_brackets_the_estimate():
    low, high = sd_interval(0.1, 5)
    assert low < 0.1 < high and high / low > 3  # five pairs pin the SD down poorly
    assert all(math.isnan(v) for v in sd_interval(0.1, 1))


# --------------------------------------------------------------------------- calibration


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def fake_sampler(clock: FakeClock, seconds: float, values, calls: list | None = None):
    """A sampler that takes ``seconds`` of fake time and returns the next value for first_grad_s."""
    it = iter(values)

    def sample(case, index):
        clock.now += seconds
        if calls is not None:
            calls.append((case.backend, index))
        v = next(it)
        if isinstance(v, BaseException):
            raise v
        if v is None:
            return {"ok": False, "error": "probe exited with status 1"}
        return {"ok": True, "first_grad_s": v, "process_ttfg_s": 2 * v}

    return sample


CASE_A = Case("resnet15", "torch.eager", (("params", "closure"), ("chain", "unrolled")))
CASE_B = Case("resnet15", "jax.jit", (("params", "args"), ("chain", "unrolled")))


def test_calibration_arithmetic_with_a_fake_sampler():
    clock = FakeClock()
    rng = np.random.default_rng(3)
    values = np.exp(rng.normal(0, 0.1, size=100)).tolist()
    result = cal.calibrate([CASE_A], 30.0, fake_sampler(clock, 1.5, values), clock=clock)
    (case,) = result.cases
    assert case.attempted == 10 and case.seconds_per_pair == pytest.approx(3.0)
    assert result.elapsed_s == pytest.approx(30.0) and not result.interrupted
    # A B, then B A: the first sample of odd pairs is B.
    expected = [(values[2 * i], values[2 * i + 1]) if i % 2 == 0 else (values[2 * i + 1], values[2 * i])
                for i in range(10)]
    assert case.values["first_grad_s"] == expected
    noise = case.noise("first_grad_s")
    logs = [math.log(b / a) for a, b in expected]
    assert noise.sd == pytest.approx(statistics.stdev(logs))
    assert noise.pairs == 10
    # 5 min at 3 s per pair buys 100 pairs, capped at the gate's 60; 10 min likewise.
    assert noise.gates[300.0] == (60, pytest.approx(min_detectable_effect(noise.sd, 60)))
    assert case.noise("process_ttfg_s").sd == pytest.approx(noise.sd)  # 2x both sides: same log ratios


def test_calibration_budget_buys_pairs_from_the_measured_time():
    clock = FakeClock()
    result = cal.calibrate([CASE_A], 60.0, fake_sampler(clock, 10.0, [1.0, 1.1, 1.2, 1.0] * 10), clock=clock)
    noise = result.cases[0].noise("first_grad_s")
    assert result.cases[0].seconds_per_pair == pytest.approx(20.0)
    assert noise.gates[300.0][0] == 15 and noise.gates[600.0][0] == 30
    assert noise.gates[300.0][1] > noise.gates[600.0][1]


def test_calibration_alternates_cases_round_robin_and_keeps_pairs_on_ctrl_c():
    clock = FakeClock()
    calls = []
    values = [1.0] * 6 + [KeyboardInterrupt()] + [1.0] * 10
    result = cal.calibrate([CASE_A, CASE_B], 1000.0, fake_sampler(clock, 1.0, values, calls), clock=clock)
    assert result.interrupted
    assert [b for b, _ in calls] == ["torch.eager", "torch.eager", "jax.jit", "jax.jit", "torch.eager", "torch.eager",
                                     "jax.jit"]
    assert [c.attempted for c in result.cases] == [2, 1]
    assert result.to_json()["interrupted"] is True


def test_calibration_stops_a_failing_case_and_says_why():
    clock = FakeClock()
    result = cal.calibrate([CASE_A], 1000.0, fake_sampler(clock, 1.0, [1.0, None] * 10), clock=clock)
    (case,) = result.cases
    assert case.failed_pairs == 2 and "failed pairs in a row" in case.stop and "status 1" in case.stop
    noise = case.noise("first_grad_s")
    assert noise.sd is None and noise.gates[300.0] == (60, None)  # pairs bought are known, the effect is not
    assert view.effect_text(*reversed(noise.gates[300.0])) == "? (60)"


@pytest.mark.parametrize("budget", ["0", "-5", "0s", "nan", "inf", "9" * 400, "soon"])
def test_bad_budget_is_refused_before_any_work(budget, capsys, monkeypatch):
    from ttfg.cli import main

    with pytest.raises(cal.UsageError):
        Duration.parse(budget)
    monkeypatch.setattr(machine, "examine", lambda *a, **k: pytest.fail("examined the machine before the budget"))
    assert main(["doctor", "--calibrate", f"--budget={budget}"]) == 2
    captured = capsys.readouterr()
    assert "budget" in captured.err and captured.out == ""


def test_bad_budget_exits_2_from_the_command_line():
    out = run_ttfg("doctor", "--calibrate", "--budget", "-5", timeout=120)
    assert out.returncode == 2, out.stderr
    assert "budget '-5' is not a positive duration" in out.stderr and out.stdout == ""


def test_ctrl_c_during_calibration_prints_what_it_has(monkeypatch, capsys):
    from ttfg.cli import main

    clock_calls = iter([1.0, 1.0, 1.0, 1.0, KeyboardInterrupt()])

    def sampler(settings=None):
        def sample(case, index):
            v = next(clock_calls)
            if isinstance(v, BaseException):
                raise v
            return {"ok": True, "first_grad_s": v * (1 + index / 10), "process_ttfg_s": 3.0}
        return sample

    monkeypatch.setattr(cal, "cold_sampler", sampler)
    code = main(["doctor", "--calibrate", "--budget", "1h", "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 2 and data["exit_code"] == 2
    assert data["calibration"]["interrupted"] is True
    pairs = [c["pairs_attempted"] for c in data["calibration"]["cases"]]
    assert sum(pairs) == 2  # two finished pairs kept


# --------------------------------------------------------------------------- the real command


def test_doctor_runs_without_importing_a_framework():
    code = "exit_code = main(['doctor', '--format', 'json'])"
    run = subprocess.run([sys.executable, "-c", NO_FRAMEWORK.format(call=code)], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    items = {f["item"] for f in data["findings"]}
    assert {"git", "valgrind", "hardware counters", "chromium", "asv machine", "load average", "memory",
            "virtualization", "jax.jit"} <= items
    assert data["calibration"] is None and data["required_missing"] == []


def test_doctor_table_fits_80_columns():
    out = run_ttfg("doctor", env={"COLUMNS": "80"}, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "noise sources" in out.stdout and "load average" in out.stdout
    assert max(map(len, out.stdout.splitlines())) <= 80


def test_missing_git_exits_2(tmp_path):
    out = run_ttfg("doctor", "--format", "json", env={"PATH": str(tmp_path)}, timeout=120)
    assert out.returncode == 2, out.stderr
    data = json.loads(out.stdout)
    assert data["required_missing"] == ["git"] and data["exit_code"] == 2


def test_ctrl_c_during_calibration_prints_the_table_so_far(monkeypatch, capsys):
    """The table output, not only JSON: the pairs finished before Ctrl-C are shown, marked interrupted."""
    from ttfg.cli import main

    answers = iter([1.0, 1.1, 1.0, 1.2, 0.9, 1.0, KeyboardInterrupt()])

    def sampler(settings=None):
        def sample(case, index):
            v = next(answers)
            if isinstance(v, BaseException):
                raise v
            return {"ok": True, "first_grad_s": v, "process_ttfg_s": 2 * v}
        return sample

    monkeypatch.setattr(cal, "cold_sampler", sampler)
    code = main(["doctor", "--calibrate", "--budget", "1h"])
    out = capsys.readouterr().out
    assert code == 2
    assert "A/A noise calibration" in out and "interrupted" in out
    assert "pair 1: first gradient A 1 s, B 1.1 s" in out  # progress lines of the finished pairs


def test_a_calibration_is_quoted_to_the_digits_its_pairs_support():
    """4 pairs know an SD to about 41 %: one digit (0.9, 8 %), not three (0.904, 7.66 %); 60 pairs, two."""
    from types import SimpleNamespace

    from ttfg import fmt
    from ttfg.present import doctor as view

    few = SimpleNamespace(pairs=4, sd=0.9043, sd_low=0.4712, sd_high=5.68)
    assert view._sd_text(few) == "0.9" and view._ci_text(few) == "0.5-6"
    assert view.effect_text(0.0766, 60, fmt.supported_digits(few.pairs)) == "8 % (60)"
    many = SimpleNamespace(pairs=60, sd=0.08712, sd_low=0.0741, sd_high=0.1057)
    assert view._sd_text(many) == "0.087" and view._ci_text(many) == "0.074-0.11"
    assert view.effect_text(0.0612, 60, fmt.supported_digits(many.pairs)) == "6.1 % (60)"


def test_calibrate_measures_the_projects_cases_when_it_names_them(monkeypatch, capsys):
    """A project's calibration is of its own cases (--backend, or the config's backends), not resnet15/autograd."""
    from ttfg.cli import main
    from ttfg.decide import calibrate as cal

    seen = []

    def sampler(settings=None):
        def sample(case, index):
            seen.append(case.id)
            raise KeyboardInterrupt
        return sample

    monkeypatch.setattr(cal, "cold_sampler", sampler)
    main(["doctor", "--calibrate", "--budget", "1h", "--model", "resnet15:blocks=1", "--backend", "torch.eager",
          "--format", "json"])
    capsys.readouterr()
    assert seen and seen[0].startswith("resnet15:blocks=1/torch.eager/")
