"""Machine facts for ``ttfg doctor``: which tools exist and what makes this machine noisy.

Why: a cold sample here varies by 11-25 % and the machine drifts 30-50 % within
minutes. A user should learn what is missing and what adds noise *before* a gate ends
"inconclusive" ten minutes later. Each check returns one :class:`Finding` with a verdict:

* ``ok``: nothing to do.
* ``warn``: works, but adds noise or loses a feature; the advice says what to do.
* ``missing``: a tool or backend is absent. Only ``required`` ones (git, and at least
  one backend) make ``ttfg doctor`` exit 2.
* ``unknown``: the fact could not be read (a VM without cpufreq, a container without
  ``/sys/class/dmi``, a permission error). Never a crash.

Every reader takes the file-system ``root`` (``/`` normally; a fake tree in tests) and
the commands it runs go through one ``run`` callable, so tests can replace both. Nothing
here writes anywhere: the doctor describes settings, it never changes them.
Backends' availability is read from the registry without importing a framework.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from .. import engines, fmt

OK, WARN, MISSING, UNKNOWN = "ok", "warn", "missing", "unknown"
VERDICTS = (OK, WARN, MISSING, UNKNOWN)
TOOLS, BACKENDS, NOISE = "tools", "backends", "noise sources"
#: Thread variables of the frameworks; the runner sets them per probe from ``--threads``.
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "XLA_FLAGS")
#: Another process using more than this share of one core during the sampling window is "busy".
BUSY_SHARE = 0.10
#: Load average per core above which other work is likely to disturb cold samples.
LOAD_PER_CORE = 0.25
#: Less available memory than this risks paging during the bigger cases (Inductor, ConvNeXt).
LOW_MEMORY_BYTES = 2 * 1024**3

#: ``run(argv) -> (returncode, stdout, stderr)``, or ``None`` when the program cannot be started.
CommandRunner = Callable[[list[str]], "tuple[int, str, str] | None"]


@dataclass
class Finding:
    """One line of the doctor's report."""

    section: str
    item: str
    verdict: str
    detail: str
    advice: str = ""
    #: A ``missing`` required item makes the doctor exit 2.
    required: bool = False

    def to_json(self) -> dict:
        return asdict(self)


def run_command(argv: list[str], timeout: float = 10.0) -> tuple[int, str, str] | None:
    """Run a short diagnostic command; ``None`` when it is absent, cannot start or hangs."""
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.returncode, out.stdout, out.stderr


def read_text(root: Path, path: str) -> str | None:
    """The file under ``root`` (``path`` is absolute, as on the real machine), or ``None`` if unreadable."""
    try:
        return (root / path.lstrip("/")).read_text(errors="replace")
    except (OSError, ValueError):
        return None


# --------------------------------------------------------------------------- tools


def check_git() -> Finding:
    path = shutil.which("git")
    if path:
        return Finding(TOOLS, "git", OK, f"found at {path}", required=True)
    return Finding(TOOLS, "git", MISSING, "git is not on PATH",
                   "install git: results record the commit, and the gate and asv check out revisions", required=True)


def check_valgrind() -> Finding:
    from .instructions import availability

    path = shutil.which("valgrind")
    usable, why = availability()
    if path and usable:
        return Finding(TOOLS, "valgrind", OK, f"found at {path}; counts the first gradient's instructions "
                       "(`ttfg run --instructions`, the gate's instructions tier)")
    if path:
        return Finding(TOOLS, "valgrind", MISSING, f"found at {path}, but {why.split(', so ')[0]}",
                       "pip install 'ttfg[instructions]'")
    return Finding(TOOLS, "valgrind", MISSING, "valgrind is not on PATH",
                   "apt-get install valgrind: `ttfg run --instructions` and the gate's instructions tier count with "
                   "callgrind; without it the gate decides on wall time")


def check_pmu(root: Path, run: CommandRunner) -> Finding:
    """Hardware instruction counting: perf's answer where perf exists, else the kernel's PMU list."""
    text = read_text(root, "/proc/sys/kernel/perf_event_paranoid")
    paranoid = int(text.strip()) if text and text.strip().lstrip("-").isdigit() else None
    para = f"perf_event_paranoid {paranoid}" if paranoid is not None else "perf_event_paranoid unreadable"
    if shutil.which("perf"):
        result = run(["perf", "stat", "-x,", "-e", "instructions", "true"])
        if result is None:
            return Finding(TOOLS, "hardware counters", UNKNOWN, f"perf did not answer; {para}")
        code, _, err = result
        if code == 0 and "<not" not in err and "not supported" not in err:
            return Finding(TOOLS, "hardware counters", OK, f"perf counts instructions; {para} (ttfg counts the "
                           "first gradient with callgrind all the same: it sees every thread of the window)")
        if "<not supported>" in err or "not supported" in err:
            return Finding(TOOLS, "hardware counters", MISSING,
                           f"perf: instructions <not supported> (no PMU exposed, usual in a VM); {para}",
                           "instruction counts use callgrind (valgrind), exact without hardware counters")
        return Finding(TOOLS, "hardware counters", WARN, f"perf refused to count ({err.strip()[:120] or code}); {para}",
                       "a paranoid level above 2 blocks unprivileged counting: `sysctl kernel.perf_event_paranoid=2`"
                       " (doctor changes nothing)" if paranoid is not None and paranoid > 2 else
                       "instruction counts use callgrind (valgrind), exact without hardware counters")
    devices = root / "sys/bus/event_source/devices"
    try:
        names = {p.name for p in devices.iterdir()}
    except OSError:
        return Finding(TOOLS, "hardware counters", UNKNOWN, f"perf is not installed and {devices} is unreadable; {para}",
                       "apt-get install linux-perf to find out")
    if {"cpu", "cpu_core", "armv8_pmuv3_0"} & names:
        return Finding(TOOLS, "hardware counters", WARN, f"the kernel lists a CPU PMU but perf is not installed; {para}",
                       "apt-get install linux-perf for fast exact instruction counts")
    return Finding(TOOLS, "hardware counters", MISSING, f"no CPU PMU in {devices} (usual in a VM); {para}",
                   "instruction counts use callgrind (valgrind), exact without hardware counters")


def chromium_path() -> str | None:
    """The browser the report's rendering test uses (tests/test_report.py looks the same way)."""
    for name in ("chromium", "chromium-browser"):
        if shutil.which(name):
            return shutil.which(name)
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None


def check_chromium() -> Finding:
    path = chromium_path()
    if path:
        return Finding(TOOLS, "chromium", OK, f"found at {path}; the report test renders in it")
    return Finding(TOOLS, "chromium", MISSING, "no chromium on PATH",
                   "apt-get install -y chromium, else the report test checks structure only")


def check_asv_machine(home: Path) -> Finding:
    """Whether asv knows this machine (``asv machine`` writes ``~/.asv-machine.json``)."""
    path = home / ".asv-machine.json"
    advice = "`ttfg asv record` registers it, or run `asv machine --yes --machine NAME`"
    try:
        text = path.read_text()
    except FileNotFoundError:
        return Finding(TOOLS, "asv machine", WARN, f"{path} does not exist: asv does not know this machine", advice)
    except OSError as exc:
        return Finding(TOOLS, "asv machine", UNKNOWN, f"{path} unreadable ({exc.strerror})")
    try:
        data = json.loads(text)
        names = sorted(k for k, v in data.items() if isinstance(v, dict))
    except (ValueError, AttributeError):
        return Finding(TOOLS, "asv machine", WARN, f"{path} is not a JSON object", advice)
    if not names:
        return Finding(TOOLS, "asv machine", WARN, f"{path} names no machine", advice)
    return Finding(TOOLS, "asv machine", OK, f"{path}: {', '.join(names)}")


def check_backends() -> list[Finding]:
    """One finding per registered backend (find_spec only), and a required one when none is usable."""
    out = []
    for name in engines.names():
        why = engines.get(name).availability()
        out.append(Finding(BACKENDS, name, MISSING if why else OK, why or "available",
                           "" if not why else "optional: the other backends still run"))
    if all(f.verdict == MISSING for f in out):
        out.append(Finding(BACKENDS, "any backend", MISSING, "no backend is available", "pip install 'ttfg[all]'",
                           required=True))
    return out


# --------------------------------------------------------------------------- noise sources


def cpu_count(root: Path) -> int | None:
    """Online CPUs from ``/sys/devices/system/cpu/online`` ("0-3,6"), else ``os.cpu_count()`` on the real root."""
    text = read_text(root, "/sys/devices/system/cpu/online")
    if text and text.strip():
        try:
            total = 0
            for part in text.strip().split(","):
                lo, _, hi = part.partition("-")
                total += int(hi or lo) - int(lo) + 1
            return total
        except ValueError:
            pass
    return os.cpu_count() if root == Path("/") else None


def cgroup_cpu_limit(root: Path) -> float | None:
    """CPUs this container may use (cgroup v2 ``cpu.max`` or v1 CFS quota), ``None`` when unlimited or unknown."""
    text = read_text(root, "/sys/fs/cgroup/cpu.max")
    if text and text.split():
        quota, *period = text.split()
        try:
            return int(quota) / int(period[0]) if quota != "max" and period else None
        except ValueError:
            return None
    quota = read_text(root, "/sys/fs/cgroup/cpu/cpu.cfs_quota_us")
    period = read_text(root, "/sys/fs/cgroup/cpu/cpu.cfs_period_us")
    try:
        if quota and period and int(quota) > 0:
            return int(quota) / int(period)
    except ValueError:
        pass
    return None


@dataclass
class CpuSnapshot:
    """CPU ticks per process and the machine's steal ticks, at one moment."""

    processes: dict[int, tuple[str, int]]
    total: int | None
    steal: int | None
    at: float


def snapshot(root: Path) -> CpuSnapshot:
    procs: dict[int, tuple[str, int]] = {}
    try:
        entries = [p for p in (root / "proc").iterdir() if p.name.isdigit()]
    except OSError:
        entries = []
    for entry in entries:
        text = read_text(root, f"/proc/{entry.name}/stat")
        if not text or ")" not in text:
            continue
        name = text[text.find("(") + 1:text.rfind(")")]
        rest = text[text.rfind(")") + 2:].split()
        try:
            procs[int(entry.name)] = (name, int(rest[11]) + int(rest[12]))  # utime + stime
        except (IndexError, ValueError):
            continue
    total = steal = None
    text = read_text(root, "/proc/stat")
    if text:
        for line in text.splitlines():
            if line.startswith("cpu "):
                try:
                    ticks = [int(v) for v in line.split()[1:]]
                    total, steal = sum(ticks[:8]), (ticks[7] if len(ticks) > 7 else None)
                except ValueError:
                    pass
                break
    return CpuSnapshot(procs, total, steal, time.monotonic())


def busy_processes(before: CpuSnapshot, after: CpuSnapshot, exclude: set[int]) -> list[tuple[int, str, float]]:
    """``(pid, name, share of one core)`` of processes that used CPU between the snapshots, busiest first."""
    hz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    seconds = max(after.at - before.at, 1e-3)
    out = []
    for pid, (name, ticks) in after.processes.items():
        if pid in exclude or pid not in before.processes:
            continue
        share = (ticks - before.processes[pid][1]) / hz / seconds
        if share > 0:
            out.append((pid, name, share))
    return sorted(out, key=lambda row: -row[2])


def check_load(root: Path, cores: int | None) -> Finding:
    text = read_text(root, "/proc/loadavg")
    try:
        load = [float(v) for v in text.split()[:3]] if text else None
    except ValueError:
        load = None
    if not load:
        return Finding(NOISE, "load average", UNKNOWN, "/proc/loadavg unreadable")
    shown = " ".join(f"{v:.2f}" for v in load)
    if cores is None:
        return Finding(NOISE, "load average", UNKNOWN, f"{shown} (1, 5, 15 min); core count unknown")
    detail = f"{shown} (1, 5, 15 min) on {cores} core(s)"
    if load[0] > LOAD_PER_CORE * cores:
        return Finding(NOISE, "load average", WARN, detail,
                       "other work competes with the probes: measure when the machine is idle, or rely on "
                       "the gate's pairing, which cancels slow drift but not bursts")
    return Finding(NOISE, "load average", OK, detail)


def check_busy(before: CpuSnapshot, after: CpuSnapshot, exclude: set[int]) -> Finding:
    if not before.processes and not after.processes:
        return Finding(NOISE, "busy processes", UNKNOWN, "/proc/<pid>/stat unreadable")
    busy = [b for b in busy_processes(before, after, exclude) if b[2] >= BUSY_SHARE]
    window = f"over {fmt.seconds(after.at - before.at)}"
    if not busy:
        return Finding(NOISE, "busy processes", OK, f"none above {fmt.percent(BUSY_SHARE)} of a core {window}")
    shown = ", ".join(f"{name} ({pid}) {fmt.percent(round(share, 2))}" for pid, name, share in busy[:4])
    return Finding(NOISE, "busy processes", WARN, f"{shown} of a core {window}",
                   "stop them or wait: each steals CPU from the cold processes")


def check_steal(before: CpuSnapshot, after: CpuSnapshot) -> Finding:
    if None in (before.total, after.total, before.steal, after.steal):
        return Finding(NOISE, "cpu steal", UNKNOWN, "/proc/stat unreadable or without a steal column")
    elapsed = after.total - before.total
    if elapsed <= 0:
        return Finding(NOISE, "cpu steal", UNKNOWN, "/proc/stat did not advance")
    share = (after.steal - before.steal) / elapsed
    detail = f"{fmt.percent(share)} of CPU time taken by the hypervisor over {fmt.seconds(after.at - before.at)}"
    if share > 0.02:
        return Finding(NOISE, "cpu steal", WARN, detail, "neighbouring VMs are busy: expect drift, gate with pairs")
    return Finding(NOISE, "cpu steal", OK, detail)


def check_threads(root: Path, cores: int | None, environ: dict[str, str]) -> Finding:
    limit = cgroup_cpu_limit(root)
    try:
        affinity = len(os.sched_getaffinity(0)) if root == Path("/") else None
    except (AttributeError, OSError):
        affinity = None
    usable = [c for c in (cores, affinity, limit) if c is not None]
    if not usable:
        return Finding(NOISE, "cores and threads", UNKNOWN, "core count unreadable")
    cpus = min(usable)
    parts = [f"{cores if cores is not None else '?'} core(s) online"]
    if affinity is not None and affinity != cores:
        parts.append(f"{affinity} in this process's affinity")
    if limit is not None:
        parts.append(f"cgroup limit {limit:g}")
    set_vars = {k: environ[k] for k in THREAD_VARS if k in environ}
    parts.append("thread variables: " + (", ".join(f"{k}={v}" for k, v in set_vars.items()) if set_vars else "none set"))
    detail = "; ".join(parts) + "; ttfg runs each probe with 1 thread by default (--threads)"
    too_many = [k for k, v in set_vars.items() if k != "XLA_FLAGS" and v.isdigit() and int(v) > cpus]
    if cpus < 2:
        return Finding(NOISE, "cores and threads", WARN, detail,
                       "one core: the probe, the parent and everything else share it; use a machine with 2 or more")
    if too_many:
        return Finding(NOISE, "cores and threads", WARN, detail,
                       f"{', '.join(too_many)} exceed the {cpus:g} usable core(s); the probes override them, "
                       "but anything else you run oversubscribes")
    return Finding(NOISE, "cores and threads", OK, detail)


def check_governor(root: Path) -> Finding:
    base = root / "sys/devices/system/cpu"
    try:
        files = sorted(base.glob("cpu[0-9]*/cpufreq/scaling_governor"))
    except OSError:
        files = []
    values = {}
    for path in files:
        text = read_text(root, "/" + str(path.relative_to(root)))
        if text is not None:
            values[path.parts[-3]] = text.strip()
    if not values:
        return Finding(NOISE, "cpu governor", UNKNOWN, "no cpufreq governor readable (usual in a VM: the host decides)")
    kinds = sorted(set(values.values()))
    detail = f"{', '.join(kinds)} on {len(values)} cpu(s)"
    if kinds == ["performance"]:
        return Finding(NOISE, "cpu governor", OK, detail)
    return Finding(NOISE, "cpu governor", WARN, detail,
                   "frequency scaling adds noise: `cpupower frequency-set -g performance` as root "
                   "(doctor changes nothing)")


def check_turbo(root: Path) -> Finding:
    no_turbo = read_text(root, "/sys/devices/system/cpu/intel_pstate/no_turbo")
    boost = read_text(root, "/sys/devices/system/cpu/cpufreq/boost")
    advice = ("turbo makes speed depend on temperature and load: "
              "`echo {} > {}` as root to switch it off while measuring (doctor changes nothing)")
    if no_turbo is not None and no_turbo.strip() in ("0", "1"):
        if no_turbo.strip() == "1":
            return Finding(NOISE, "turbo boost", OK, "off (intel_pstate no_turbo=1)")
        return Finding(NOISE, "turbo boost", WARN, "on (intel_pstate no_turbo=0)",
                       advice.format(1, "/sys/devices/system/cpu/intel_pstate/no_turbo"))
    if boost is not None and boost.strip() in ("0", "1"):
        if boost.strip() == "0":
            return Finding(NOISE, "turbo boost", OK, "off (cpufreq boost=0)")
        return Finding(NOISE, "turbo boost", WARN, "on (cpufreq boost=1)",
                       advice.format(0, "/sys/devices/system/cpu/cpufreq/boost"))
    return Finding(NOISE, "turbo boost", UNKNOWN, "neither intel_pstate/no_turbo nor cpufreq/boost is readable")


def meminfo(root: Path) -> dict[str, int] | None:
    text = read_text(root, "/proc/meminfo")
    if text is None:
        return None
    out = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        parts = value.split()
        if parts and parts[0].isdigit():
            out[key.strip()] = int(parts[0]) * (1024 if parts[1:2] == ["kB"] else 1)
    return out


def _gib(n: int) -> str:
    return f"{n / 1024**3:.1f} GiB"


def check_memory(root: Path) -> list[Finding]:
    info = meminfo(root)
    if not info or "MemTotal" not in info:
        return [Finding(NOISE, "memory", UNKNOWN, "/proc/meminfo unreadable"),
                Finding(NOISE, "swap", UNKNOWN, "/proc/meminfo unreadable")]
    available = info.get("MemAvailable", info.get("MemFree"))
    if available is None:
        mem = Finding(NOISE, "memory", UNKNOWN, f"{_gib(info['MemTotal'])} total; available unknown")
    elif available < LOW_MEMORY_BYTES:
        mem = Finding(NOISE, "memory", WARN, f"{_gib(available)} available of {_gib(info['MemTotal'])}",
                      "the larger cases (Inductor, convnext_tiny) may page or be killed: free memory first")
    else:
        mem = Finding(NOISE, "memory", OK, f"{_gib(available)} available of {_gib(info['MemTotal'])}")
    total, free = info.get("SwapTotal"), info.get("SwapFree")
    if total is None or free is None:
        swap = Finding(NOISE, "swap", UNKNOWN, "SwapTotal/SwapFree missing from /proc/meminfo")
    elif total == 0:
        swap = Finding(NOISE, "swap", OK, "no swap: nothing can be paged out")
    elif total - free > 0:
        swap = Finding(NOISE, "swap", WARN, f"{_gib(total - free)} of {_gib(total)} swap in use",
                       "swapped pages make cold starts slower at random: free memory, or `swapoff -a` as root")
    else:
        swap = Finding(NOISE, "swap", OK, f"{_gib(total)} swap, none in use")
    return [mem, swap]


VM_VENDORS = ("kvm", "qemu", "vmware", "virtualbox", "xen", "microsoft", "amazon ec2", "google", "openstack",
              "bochs", "parallels", "hyper-v", "cloud hypervisor")


def check_virtualization(root: Path, run: CommandRunner | None) -> Finding:
    """VM or container, from every independent clue that can be read."""
    clues, unread = [], []
    cpuinfo = read_text(root, "/proc/cpuinfo")
    if cpuinfo is None:
        unread.append("/proc/cpuinfo")
    elif any(line.startswith("flags") and "hypervisor" in line.split() for line in cpuinfo.splitlines()):
        clues.append("cpu flag hypervisor")
    dmi = " ".join(filter(None, (read_text(root, f"/sys/class/dmi/id/{f}") for f in ("sys_vendor", "product_name"))))
    if not dmi:
        unread.append("/sys/class/dmi/id")
    elif any(v in dmi.lower() for v in VM_VENDORS):
        clues.append(f"dmi {' '.join(dmi.split())}")
    if (root / ".dockerenv").exists():
        clues.append("/.dockerenv")
    if (root / "run/.containerenv").exists():
        clues.append("/run/.containerenv")
    cgroup = read_text(root, "/proc/1/cgroup")
    if cgroup and any(word in cgroup for word in ("docker", "kubepods", "lxc", "containerd", "libpod")):
        clues.append("container cgroup")
    if run is not None and shutil.which("systemd-detect-virt"):
        result = run(["systemd-detect-virt"])
        if result and result[1].strip() and result[1].strip() != "none":
            clues.append(f"systemd-detect-virt: {result[1].strip()}")
    if clues:
        return Finding(NOISE, "virtualization", WARN, "VM or container: " + "; ".join(clues),
                       "neighbours share the host: expect drift and steal; gate with pairs, and compare "
                       "absolute numbers only within one machine")
    if unread:
        return Finding(NOISE, "virtualization", UNKNOWN, f"no clue found, and {', '.join(unread)} unreadable")
    return Finding(NOISE, "virtualization", OK, "bare metal as far as /proc and /sys tell")


# --------------------------------------------------------------------------- all together


def examine(root: Path = Path("/"), home: Path | None = None, run: CommandRunner | None = run_command,
            environ: dict[str, str] | None = None, window_s: float = 0.5, exclude: set[int] | None = None
            ) -> list[Finding]:
    """Every check, tools first, then noise sources.

    Parameters
    ----------
    root : Path
        File-system root that ``/proc`` and ``/sys`` are read under.
    home : Path or None
        Where asv keeps ``.asv-machine.json`` (default: the user's home).
    run : callable or None
        Runs diagnostic commands (perf, systemd-detect-virt); ``None`` runs none.
    environ : dict or None
        Environment whose thread variables are reported (default: this process's).
    window_s : float
        How long CPU use of other processes and steal are sampled.
    exclude : set of int or None
        Process ids not counted as busy (default: this process).
    """
    environ = dict(os.environ if environ is None else environ)
    runner = run or (lambda argv: None)
    before = snapshot(root)
    found = [check_git(), check_valgrind(), check_pmu(root, runner), check_chromium(),
             check_asv_machine(home or Path.home()), *check_backends()]
    cores = cpu_count(root)
    elapsed = time.monotonic() - before.at
    if elapsed < window_s:
        time.sleep(window_s - elapsed)
    after = snapshot(root)
    found += [check_load(root, cores), check_busy(before, after, exclude or {os.getpid()}), check_steal(before, after),
              check_threads(root, cores, environ), check_governor(root), check_turbo(root), *check_memory(root),
              check_virtualization(root, run)]
    return found


def required_missing(findings: list[Finding]) -> list[Finding]:
    """The findings that make the doctor exit 2."""
    return [f for f in findings if f.required and f.verdict == MISSING]


__all__ = ["Finding", "VERDICTS", "examine", "required_missing", "read_text", "run_command"]
