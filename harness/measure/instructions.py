"""Instruction counts of the first-gradient window: callgrind switched on for the window only.

Why a window: a whole process under valgrind spends most of its time importing the
framework (minutes for jax), and those instructions say nothing about the change under
test. The probe runs under ``valgrind --tool=callgrind --instr-atstart=no``, so the
import runs at valgrind's uninstrumented speed; around ``first_gradient()`` it issues
callgrind client requests through the hooks pytest-codspeed ships
(``pytest_codspeed.instruments.hooks.dist_instrument_hooks``: zero the counters and
start instrumentation, dump the counters at each phase end, stop instrumentation).
Each dump is a callgrind file holding the instructions since the previous one, so a
backend that splits its first gradient into phases (jax.jit: trace, lower, compile,
execute) gets one count per phase, and their sum is the window.

What is counted: every thread of the probe (``--separate-threads=no`` sums them, so
XLA's compile threads and Inductor's in-process compile count). Valgrind runs one thread
at a time; ``--fair-sched=yes`` hands the CPU over in a fixed order instead of to
whichever thread the kernel wakes first. Without it, XLA's compiler (which creates MLIR
compiler instances as its threads happen to run) did different amounts of work in
identical processes: jax.jit resnet15 spread 1.55 % over 30 samples, and 0.91 % over 50
with it (at most 0.44 % between the two sides of a gate). Each counted probe also runs on one CPU
(``taskset -c N``, :func:`next_cpu` taking the CPUs in turn so that a gate's two sides run side by
side): XLA sizes its compile thread pool by the CPUs a process may use, and its fusion compiler
creates a new MLIR context whenever every context it made is still busy on a pool thread, so how
many it creates (and how much each fusion's first compile on a fresh context costs) followed the
threads' interleaving. The per-function diff put 76 % of jax.jit resnet15's compile variance under
``ParallelFusionEmitter::CompileFusion`` and 21 % under ``PjRtCpuClient::CompileInternal``; on one
CPU the spread over 10 processes went from 0.46 % to 0.16 % (one switch of one context, about
10 M instructions, is left); the flaxlab example's compile still moves 2.2 % on one CPU, so an uncalibrated
case on jaxlib takes a wider margin (``decide/count_margins.py``). The count is then about 0.6 % higher than on two CPUs (a smaller pool,
not another compiled program); each sample's note says so (:data:`PINNED`). What is not: child
processes (``--trace-children=no``): the C++ compiler Inductor starts, and compile
workers, which the runner turns off for instruction samples
(``TORCHINDUCTOR_COMPILE_THREADS=1``). Each sample's ``instructions_note`` says so.

Hardware counters (``perf_event``) would be faster, but this VM exposes no PMU and no
maintained Python library counts every thread of a window with them (cirron counts the
calling thread only, so XLA's compile threads would be missed); where valgrind is
missing, instruction samples fail with one clear reason and the gate falls back to
wall time (see :func:`availability`).

This module has three parts: the probe's side (:class:`Window`), the runner's side
(:func:`command`, :func:`read_window`) and the callgrind file parser
(:func:`parse_file`), which gives per-function inclusive and self counts with file and
line, computed as ``callgrind_annotate --inclusive=yes`` does (keyed by function and its
file, where callgrind_annotate splits the lines inlined from other files).
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

#: The prefix of every dump the probe asks for; the rest is the phase's name.
DUMP_PREFIX = "ttfg:"
#: Name of a window that is not split into phases.
WHOLE = "first_gradient"
#: The build's dump: counted before the first-gradient window, never part of its total.
BUILD = "build"
#: How many functions a sample keeps (by inclusive count).
TOP_FUNCTIONS = 200
OUT_NAME = "callgrind.out"
#: Environment for instruction samples: what makes the counted work the same work every time.
#: Inductor compiles in this process (no worker pool whose instructions would go uncounted) and
#: emits code valgrind can run: AVX2 kernels (its ISA check runs natively in a child process and
#: would pick AVX-512) compiled for x86-64-v3 instead of ``-march=native`` (gcc auto-vectorizes
#: plain loops with AVX-512 there); with the first alone the code still died with SIGILL under
#: valgrind 3.19, in an auto-vectorized loop of ATen's vec_base.h.
PROBE_ENV = {"TORCHINDUCTOR_COMPILE_THREADS": "1", "ATEN_CPU_CAPABILITY": "avx2",
             "TORCHINDUCTOR_CPP_MARCH": "x86-64-v3"}
#: No XLA flag is added. ``--xla_cpu_parallel_codegen_split_count=1`` was, but it followed the
#: runner's ``intra_op_parallelism_threads=1``, at which XLA stops reading XLA_FLAGS, so it never took
#: effect (the 0.29 % vs 0.13 % spread once quoted for it was two samples' noise); every instruction
#: count ttfg has stored was taken without it, and jaxlib 0.4.30 and 0.4.31 abort on it.
XLA_FLAGS = ""


def probe_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` (the runner's probe environment) adjusted for an instruction sample."""
    return {**env, **PROBE_ENV}
#: What an instruction sample does not count, stated in every sample's note.
NOT_COUNTED = ("child processes are not counted (Inductor's C++ compiler runs natively; its compile "
               "workers are off: TORCHINDUCTOR_COMPILE_THREADS=1)")


class CountingError(RuntimeError):
    """The window could not be counted (no callgrind around the probe, hooks missing)."""


# ---------------------------------------------------------------------------- the probe's side


class Window:
    """Switches callgrind's instrumentation on for the first gradient and dumps per phase.

    ``start()`` zeroes the counters and turns instrumentation on; ``phase_end(name)``
    dumps the counts since the last dump under ``ttfg:NAME``; ``stop(name)`` dumps the
    last part and turns instrumentation off. Raises :class:`CountingError` when the
    process does not run under callgrind (nothing would be counted).
    """

    def __init__(self):
        try:
            from pytest_codspeed.instruments.hooks import dist_instrument_hooks as hooks
        except ImportError as exc:
            raise CountingError(f"pytest-codspeed's instrument hooks are missing ({exc}); "
                                "pip install 'ttfg[instructions]'") from None
        self._hooks = hooks
        self._instance = hooks.instrument_hooks_init()
        if self._instance is None or not hooks.instrument_hooks_is_instrumented(self._instance):
            raise CountingError("the probe is not running under valgrind --tool=callgrind")
        self._pid = os.getpid()
        self.phases: list[str] = []

    def start(self) -> None:
        self._hooks.instrument_hooks_start_benchmark(self._instance)

    def phase_end(self, name: str) -> None:
        self.phases.append(name)
        self._hooks.instrument_hooks_set_executed_benchmark(self._instance, self._pid,
                                                            f"{DUMP_PREFIX}{name}".encode("ascii"))

    def stop(self, name: str) -> None:
        self._hooks.instrument_hooks_stop_benchmark(self._instance)
        self.phase_end(name)


# ---------------------------------------------------------------------------- the runner's side


def availability() -> tuple[bool, str]:
    """Whether windowed counting works here, and a line saying what is used or what is missing."""
    if shutil.which("valgrind") is None:
        return False, ("valgrind is not installed, so instructions cannot be counted here (hardware counters "
                       "are not used: see harness/measure/instructions.py); decisions fall back to wall time. "
                       "Install valgrind (apt-get install valgrind) for instruction counts")
    try:
        import pytest_codspeed.instruments.hooks.dist_instrument_hooks  # noqa: F401
    except ImportError:
        return False, ("pytest-codspeed's instrument hooks are not installed (pip install 'ttfg[instructions]'), "
                       "so instructions cannot be counted here; decisions fall back to wall time")
    return True, "callgrind, instrumentation on for the first-gradient window only"


#: Said in every pinned sample's note: the setting changes the count's level, not what is compiled.
PINNED = ("counted on one CPU (taskset -c): XLA sizes its compile thread pool by the CPUs a process may use, "
          "and the pool's interleaving moved the count; on one CPU the count is steadier and about 0.6 % higher "
          "for jax.jit than on two")
_turn = itertools.count()
_turn_lock = threading.Lock()


def usable_cpus() -> list[int]:
    """The CPUs this process may run on (its affinity); none where they cannot be read."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return []


def _cpus() -> list[int]:
    """The CPUs a counted probe may be pinned to; none where they cannot be read or ``taskset`` is missing."""
    return usable_cpus() if shutil.which("taskset") else []


def pins() -> bool:
    """Whether counted probes run on one CPU here (:data:`PINNED`)."""
    return bool(_cpus())


def next_cpu() -> int | None:
    """The CPU the next counted probe runs on: this process's CPUs in turn (a gate's two sides, counted side by
    side, land on two), or None where it cannot pin (then unpinned, and the note does not say pinned)."""
    cpus = _cpus()
    if not cpus:
        return None
    with _turn_lock:
        return cpus[next(_turn) % len(cpus)]


def command(out_dir: Path, cpu: int | None = None) -> list[str]:
    """The valgrind command line to put before ``python -m ttfg.measure.probe ...``; with ``cpu``, run on that one
    CPU (see :data:`PINNED`)."""
    pin = ["taskset", "-c", str(cpu)] if cpu is not None else []
    return pin + ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--separate-threads=no", "--trace-children=no",
            "--fair-sched=yes", "--dump-instr=no", "--compress-pos=no", f"--callgrind-out-file={out_dir / OUT_NAME}.%p"]


@dataclass
class FunctionCost:
    """One function's instructions in a window: its own, and with everything it called."""

    fn: str
    file: str
    line: int
    incl: int
    self: int

    def to_json(self) -> dict:
        return {"fn": self.fn, "file": self.file, "line": self.line, "incl": self.incl, "self": self.self}


@dataclass
class Profile:
    """One callgrind dump: its trigger, total and per-function costs."""

    trigger: str
    total: int
    functions: dict[tuple[str, str], FunctionCost] = field(default_factory=dict)


@dataclass
class WindowCounts:
    """What a sample stores: the window's total, its phases, its top functions."""

    total: int
    phases: dict[str, int]
    top: list[FunctionCost]


_TRIGGER = re.compile(r"desc:\s*Trigger:\s*(.*)$")
_NAMED = re.compile(r"^\((\d+)\)(?:\s(.*))?$")


class _Names:
    """callgrind's name compression: ``(12) name`` defines id 12, a later ``(12)`` refers to it."""

    def __init__(self):
        self.known: dict[str, str] = {}

    def __call__(self, text: str) -> str:
        text = text.strip()
        m = _NAMED.match(text)
        if not m:
            return text
        if m.group(2) is not None:
            self.known[m.group(1)] = m.group(2)
            return m.group(2)
        return self.known.get(m.group(1), f"({m.group(1)})")


def _position(token: str, last: int) -> int:
    """A position (line) field: absolute, or relative (``+N``, ``-N``, ``*``) when compressed."""
    if token == "*":
        return last
    if token[0] in "+-":
        return last + int(token)
    return int(token)


def parse_file(path: str | os.PathLike) -> Profile:
    """Parse one callgrind output file (format version 1, event ``Ir``).

    Self cost is the sum of a function's own cost lines. Inclusive cost adds the
    cost of its calls (the line after ``calls=``) to functions outside its own
    recursion: the functions that call each other in a cycle (a strongly connected
    component of the call graph, such as the interpreter's eval loop and the C
    functions it recurses through) share one inclusive cost, the selves of the
    cycle plus its calls out of it. Summing every call instead, as
    ``callgrind_annotate --inclusive=yes`` does, counts a recursive function's
    inner activations again and can exceed the total. A function's line is the
    lowest line with cost in its own file. Objects (``ob=``) are not told apart: the
    key is (function, file).

    Raises
    ------
    ValueError
        Naming the file and line, when the file is not a callgrind profile.
    """
    path = Path(path)
    files, fns = _Names(), _Names()
    trigger, total, ir = "", None, 0
    selfs: dict[tuple[str, str], list[int]] = {}          # key -> [self, line]
    calls: dict[tuple[str, str], dict[tuple[str, str], int]] = {}
    fl = fi = fn = ""
    callee: tuple[str, str] | None = None
    pending: tuple[str, str] = ("", "")
    cfl = ""
    current: list | None = None
    key_now: tuple[str, str] = ("", "")
    last_line = 0
    summed = 0
    with open(path, errors="replace") as fh:
        for number, raw in enumerate(fh, 1):
            line = raw.rstrip("\n")
            if not line or line[0] == "#":
                continue
            head = line[0]
            if head.isdigit() or head in "+-*":
                parts = line.split()
                try:
                    pos = _position(parts[0], last_line)
                    cost = int(parts[1 + ir]) if len(parts) > 1 + ir else 0
                except (ValueError, IndexError):
                    raise ValueError(f"{path}:{number}: not a callgrind cost line: {line[:80]!r}") from None
                last_line = pos
                if current is None:
                    raise ValueError(f"{path}:{number}: cost before any fn= line")
                if callee is not None:
                    out = calls.setdefault(key_now, {})
                    out[callee] = out.get(callee, 0) + cost
                    callee = None
                else:
                    current[0] += cost
                    summed += cost
                    if fi == fl and pos > 0:
                        current[1] = pos if current[1] == 0 else min(current[1], pos)
                continue
            key, _, value = line.partition("=")
            if key == "fl":
                fl = fi = files(value)
            elif key in ("fi", "fe"):
                fi = files(value)
            elif key == "fn":
                fn = fns(value)
                fi = cfl = fl
                key_now = (fn, fl)
                current = selfs.setdefault(key_now, [0, 0])
            elif key in ("cfl", "cfi"):
                cfl = files(value)
            elif key == "cfn":
                cfn = fns(value)
                pending = (cfn, cfl)
            elif key == "calls":
                callee = pending
                cfl = fl
            elif key in ("ob", "cob", "jump", "jcnd", "jfi", "jfn"):
                continue  # objects are not told apart; jumps are not collected
            elif line.startswith("events:"):
                events = line.split(":", 1)[1].split()
                if "Ir" not in events:
                    raise ValueError(f"{path}: events {events} do not include Ir (instructions)")
                ir = events.index("Ir")
            elif line.startswith(("summary:", "totals:")):
                values = line.split(":", 1)[1].split()
                total = int(values[ir]) if len(values) > ir else 0
            elif line.startswith("desc:"):
                m = _TRIGGER.match(line)
                if m:
                    trigger = m.group(1).strip()
            elif number == 1 and not line.startswith(("version:", "# callgrind")) and ":" not in line:
                raise ValueError(f"{path}: not a callgrind output file")
    if total is None:
        if not selfs:
            raise ValueError(f"{path}: not a callgrind output file (no summary, no functions)")
        total = summed
    incl = _inclusive(selfs, calls)
    costs = {k: FunctionCost(k[0], k[1], v[1], incl[k], v[0]) for k, v in selfs.items()}
    return Profile(trigger, total, costs)


def _inclusive(selfs: dict[tuple[str, str], list[int]],
               calls: dict[tuple[str, str], dict[tuple[str, str], int]]) -> dict[tuple[str, str], int]:
    """Inclusive cost per function, one value per strongly connected component (Tarjan, iterative)."""
    for key in [c for out in calls.values() for c in out if c not in selfs]:
        selfs[key] = [0, 0]  # a callee that has no cost lines of its own
    graph = {k: list(calls.get(k, {})) for k in selfs}
    index: dict = {}
    low: dict = {}
    comp: dict = {}
    stack: list = []
    on_stack: set = set()
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            succ = graph[node]
            if i < len(succ):
                work.append((node, i + 1))
                nxt = succ[i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    comp[member] = node
                    if member == node:
                        break
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    inner: dict = {}
    for key, (own, _) in selfs.items():
        inner[comp[key]] = inner.get(comp[key], 0) + own
    for key, out in calls.items():
        for callee, cost in out.items():
            if comp[callee] != comp[key]:
                inner[comp[key]] = inner[comp[key]] + cost
    return {key: inner[comp[key]] for key in selfs}


def _phase_of(trigger: str) -> str | None:
    """``Client Request: ttfg:trace`` -> ``trace``; None for dumps the probe did not ask for."""
    _, _, rest = trigger.partition(DUMP_PREFIX)
    return rest.strip() or None if DUMP_PREFIX in trigger else None


def dump_files(out_dir: Path) -> list[Path]:
    """The callgrind files of a run, in the order they were written (``callgrind.out.PID.N``, then ``.PID``)."""

    def order(p: Path) -> tuple:
        parts = p.name[len(OUT_NAME) + 1:].split(".")
        return (int(parts[0]) if parts[0].isdigit() else 0,
                int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 1 << 30)

    return sorted(out_dir.glob(f"{OUT_NAME}.*"), key=order)


def merge(profiles: Iterable[Profile], top: int = TOP_FUNCTIONS) -> WindowCounts:
    """The window from its dumps: total, per-phase totals, top functions by inclusive count."""
    phases: dict[str, int] = {}
    merged: dict[tuple[str, str], FunctionCost] = {}
    for prof in profiles:
        phase = _phase_of(prof.trigger)
        if phase is None:
            continue
        phases[phase] = phases.get(phase, 0) + prof.total
        for key, c in prof.functions.items():
            m = merged.get(key)
            if m is None:
                merged[key] = FunctionCost(c.fn, c.file, c.line, c.incl, c.self)
            else:
                m.incl += c.incl
                m.self += c.self
                m.line = min(x for x in (m.line, c.line) if x) if (m.line or c.line) else 0
    ranked = sorted(merged.values(), key=lambda c: (-c.incl, -c.self, c.fn))[:top]
    return WindowCounts(sum(phases.values()), phases, ranked)


def read_window(out_dir: Path) -> WindowCounts:
    """Parse every dump the probe left in ``out_dir``.

    Raises
    ------
    CountingError
        When no dump of the window is there (the probe never reached it, or callgrind
        wrote nothing).
    """
    files = dump_files(out_dir)
    window = merge(parse_file(f) for f in files)
    if not window.phases:
        raise CountingError(f"callgrind wrote no dump of the first-gradient window ({len(files)} file(s) in "
                            f"{out_dir})")
    return window


__all__ = ["BUILD", "CountingError", "FunctionCost", "NOT_COUNTED", "PINNED", "PROBE_ENV", "XLA_FLAGS", "next_cpu", "pins", "probe_env", "usable_cpus", "Profile", "Window", "WindowCounts",
           "availability", "command", "dump_files", "merge", "parse_file", "read_window"]
