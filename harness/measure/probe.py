"""The probe: one fresh process, one first gradient, measured. It only measures.

Run by the runner as ``python -m ttfg.measure.probe --case JSON --kind KIND --report FILE``.
The parent decides how many processes, spawns them and collects (``runner.py``);
this side does the work and writes exactly one JSON object to ``--report`` (never to
stdout: frameworks print). The object is::

    {"ok": true, "import_s", "build_s", "first_grad_s", "first_grad_cpu_s", "trace_s", "lower_s",
     "compile_s", "execute_s", "second_grad_s", "loss", "counters": {...},
     "first_grad_end_monotonic", "self_cpu_s", "self_peak_rss_bytes", "runtimes",
     "cache_lookups": {"jax_lookups", ...}}                                       (timing)
    {"ok": true, "alloc_count", "alloc_bytes", "alloc_peak_bytes", "alloc_tool",
     "python_allocators", "runtimes"}                                            (allocations)
    {"ok": true, "phases": [...], "window_wall_s", "window_cpu_s", "loss",
     "runtimes"}                                                                 (instructions)

``runtimes`` is what the process had loaded after its first gradient, read from the process
(``measure/runtimes.py``: ``{"modules", "libraries", "threads"}``).
    {"ok": true, "profile_top": [{"fn", "file", "line", "incl", "self"}, ...],
     "profile_tool"}                                                             (profile)
    {"ok": true, "calls_top": [{"fn", "file", "line", "incl", "self"}, ...],
     "calls_tool", "source_lines": [{"kind", "file", "line", "fn", "n", "reason"?}, ...],
     "source_lines_note"?}                  (calls: each Python function's call count, first gradient, and the
                                             compiled code per model line: engines/source_lines.py)
    {"ok": true, "files": [...], "extensions": [...]}  (coverage: the source files that ran, import to first
                                      gradient, and the extension modules loaded)
    {"ok": false, "error": "Type: message", "phase": "build"}                    (any failure)

``first_grad_end_monotonic`` is ``time.monotonic()`` when the first gradient returned;
the parent's spawn time is on the same system-wide clock, giving the process TTFG.
Phases not split by a backend are ``null``; ``execute_s`` is the whole first gradient
for backends that cannot tell compilation from execution.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import sys
import time
import traceback
from pathlib import Path

import numpy  # noqa: F401  (imported before any clock starts, so never billed to a phase)

from .. import engines, metrics
from . import runtimes
from .cache_watch import CacheWatch
from .cases import Case
from ..engines.base import GRADIENT_PHASES

COMPILE_PHASES = ("trace", "lower", "compile")


def timing(case: Case, out: dict) -> dict:
    """Fill ``out`` as the phases pass (``out["phase"]`` names the one running)."""
    clock = time.perf_counter
    if case.is_function:
        return _function_timing(case, out)
    out["phase"] = "import"
    t0 = clock()
    # Imports are measured where they happen: a plugin's model and backend live in the library's own
    # package, and importing it (with whatever its __init__ imports: torch, scipy) is import time.
    # Loaded before this clock, a library that imports torch showed a 0.2 ms import phase.
    _import_plugins(case)
    impl = engines.get(case.backend)()
    impl.import_framework()
    t1 = clock()
    caches = CacheWatch()  # the frameworks' cache counters, read here whatever the backend reports
    caches.listen()
    spec = case.spec  # the spec and its weights are NumPy data, made outside every phase
    weights, x = spec.init(0), spec.example_input(0)
    out["phase"] = "build"
    t1b = clock()
    engine = impl.build(spec, weights, x, case.variant_dict)
    t2 = clock()
    out["phase"] = "first_gradient"
    caches.start()
    cpu2 = time.process_time()
    result, phases = engine.first_gradient()
    t3 = clock()
    first_cpu = time.process_time() - cpu2
    out["first_grad_end_monotonic"] = time.monotonic()
    out["phase"] = "second_gradient"
    engine.gradient()
    t4 = clock()
    out["runtimes"] = runtimes.observe().to_json()  # after the clocks: reading /proc is no phase's time
    out["phase"] = "counters"
    loss, _ = engine.to_numpy(result)
    counters = caches.window(engine.counters())
    out["cache_lookups"] = caches.lookups()
    first = t3 - t2
    split = {p: phases.get(p) for p in GRADIENT_PHASES}
    if not phases:
        split["execute"] = first
    return _timed(out, t1 - t0, t2 - t1b, first, first_cpu, t4 - t3, split, loss, counters)


def _timed(out: dict, import_s, build_s, first, first_cpu, second, split, loss, counters) -> dict:
    """The timing report's fields, once the clocks have stopped (every case's, functions' too)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    out.update({
        "import_s": import_s, "build_s": build_s, "first_grad_s": first, "first_grad_cpu_s": first_cpu,
        "second_grad_s": second,
        **{f"{p}_s": split[p] for p in GRADIENT_PHASES},
    })
    out.update({
        "compile_share": metrics.derive("compile_share", out),  # the registry's definition
        "loss": loss, "counters": counters,
        "self_cpu_s": usage.ru_utime + usage.ru_stime,
        "self_peak_rss_bytes": usage.ru_maxrss * 1024,
    })
    if loss is None:  # a function whose result has no scalar: nothing to check, nothing recorded
        out.pop("loss")
    elif not math.isfinite(loss):
        raise FloatingPointError(f"first gradient's loss is {loss}")
    return out


def _function_timing(case: Case, out: dict) -> dict:
    """A library's own function (``engines/function.py``): the same phases, clocks and cache watch as a model's.

    ``import`` imports the function's module (and whatever it imports: the framework), ``build``
    calls ``case()``, the first gradient is the first ``fn(*args)`` with its result ready
    (one ``execute`` phase); the framework's counters are read after the clocks.
    """
    from ..engines import function

    clock = time.perf_counter
    out["phase"] = "import"
    t0 = clock()
    make = function.load(case.model)
    t1 = clock()
    caches = CacheWatch()
    caches.listen()
    out["phase"] = "build"
    engine = function.build(case.model, make)
    t2 = clock()
    caches.listen()  # a case() that imported jax itself: listen before the first call
    out["phase"] = "first_gradient"
    caches.start()
    cpu2 = time.process_time()
    result = engine.gradient()
    t3 = clock()
    first_cpu = time.process_time() - cpu2
    out["first_grad_end_monotonic"] = time.monotonic()
    engine.first_done(result)  # torch's counters of the first call, before a second can add to them
    out["phase"] = "second_gradient"
    t3b = clock()  # the counters just read are no call's time
    engine.gradient()
    second = clock() - t3b
    out["runtimes"] = runtimes.observe().to_json()
    out["phase"] = "counters"
    loss, _ = engine.to_numpy(result)
    counters = caches.window(engine.counters())
    out["cache_lookups"] = caches.lookups()
    split = {p: None for p in GRADIENT_PHASES}
    split["execute"] = t3 - t2
    return _timed(out, t1 - t0, t2 - t1, t3 - t2, first_cpu, second, split, loss, counters)


def _import_plugins(case: Case) -> None:
    """Import the modules that define the case's model and backend (a plugin's package, and what it imports).

    A model that cannot be loaded fails here, in the import phase, with the same error
    ``case.spec`` gives.
    """
    from ttfg import models

    from .cases import parse_model

    if case.is_function:  # its module is imported by _built_engine, in its import phase
        return
    try:
        models.builder(parse_model(case.model)[0])
    except Exception:  # the spec, loaded next, raises the user-facing error (unknown model, broken plugin)
        case.spec
        raise


def _built_engine(case: Case, out: dict, window=None):
    """Import the framework and build the case's engine, untimed (``out["phase"]`` says where a failure was).

    The counting probes (allocations, profile) measure the first gradient alone; the
    timing probe times import and build itself. ``window`` (the instruction probe's, or the
    profile's): switched on for the build and told its end, so the build is counted too.
    """
    if case.is_function:
        from ..engines import function

        out["phase"] = "import"
        make = function.load(case.model)
        build = lambda: function.build(case.model, make)  # noqa: E731
    else:
        spec = case.spec
        weights, x = spec.init(0), spec.example_input(0)
        impl = engines.get(case.backend)()
        out["phase"] = "import"
        impl.import_framework()
        build = lambda: impl.build(spec, weights, x, case.variant_dict)  # noqa: E731
    out["phase"] = "build"
    if window is None:
        return build()
    from .instructions import BUILD

    window.start()
    engine = build()
    window.phase_end(BUILD)
    return engine


def allocations(case: Case, workdir: Path, python_allocators: bool, out: dict) -> dict:
    """Allocations during the first gradient only (memray; tracemalloc when memray is missing)."""
    engine = _built_engine(case, out)
    out["phase"] = "first_gradient"
    try:
        import memray
    except ImportError:
        memray = None
    if memray is None:
        import tracemalloc

        tracemalloc.start()
        engine.first_gradient()
        out["runtimes"] = runtimes.observe().to_json()
        snapshot = tracemalloc.take_snapshot()
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        stats = snapshot.statistics("filename")
        out.update({"alloc_tool": "tracemalloc (Python objects only; live blocks at the end, not allocations)",
                    "alloc_count": sum(s.count for s in stats), "alloc_bytes": sum(s.size for s in stats),
                    "alloc_peak_bytes": peak, "python_allocators": True})
        return out
    capture = workdir / "first_gradient.memray"
    with memray.Tracker(capture, native_traces=False, trace_python_allocators=python_allocators):
        engine.first_gradient()
    out["runtimes"] = runtimes.observe().to_json()  # the tracker stopped: its own threads are gone
    out["phase"] = "read_allocations"
    frees = {memray.AllocatorType.FREE, memray.AllocatorType.MUNMAP, memray.AllocatorType.PYMALLOC_FREE}
    count = size = 0
    reader = memray.FileReader(capture)
    for record in reader.get_allocation_records():
        if record.allocator not in frees:  # count allocations, not frees
            count += 1
            size += record.size
    out.update({"alloc_tool": "memray",
                "alloc_count": count, "alloc_bytes": size, "alloc_peak_bytes": int(reader.metadata.peak_memory),
                "python_allocators": python_allocators})
    reader.close()
    capture.unlink(missing_ok=True)
    return out


def instructions(case: Case, out: dict) -> dict:
    """The build and the first gradient with callgrind counting only them (the runner reads the dumps).

    Runs under ``valgrind --tool=callgrind --instr-atstart=no`` (``instructions.command``):
    the import runs uninstrumented; the build is counted and dumped as ``build``; the
    first-gradient window dumps once per phase the backend marks (``Engine.on_phase_end``)
    and once at its end. Each dump zeroes callgrind's counters, so the window's dumps hold
    the first gradient alone (and the two statements between build and first gradient).
    """
    from .instructions import WHOLE, Window

    window = Window()
    engine = _built_engine(case, out, window)
    out["phase"] = "first_gradient"
    built = len(window.phases)
    engine.on_phase_end = window.phase_end
    cpu0, wall0 = time.process_time(), time.perf_counter()
    result, phases = engine.first_gradient()
    window.stop("execute" if len(window.phases) > built else WHOLE)
    out.update(window_wall_s=time.perf_counter() - wall0, window_cpu_s=time.process_time() - cpu0,
               phases=list(window.phases), runtimes=runtimes.observe().to_json())
    out["phase"] = "counters"
    loss, _ = engine.to_numpy(result)
    if loss is not None and not math.isfinite(loss):
        raise FloatingPointError(f"first gradient's loss is {loss}")
    if loss is not None:
        out["loss"] = loss
    return out


#: Sampling interval of the stack profiler, and how many functions a profile keeps.
PROFILE_INTERVAL_S = 0.001
PROFILE_TOP_INCLUSIVE = 150
PROFILE_TOP_SELF = 50


def profile(case: Case, out: dict) -> dict:
    """Sampled Python stacks of the first gradient (pyinstrument), as per-function seconds.

    Why: instruction counts name C functions (the interpreter's eval loop, XLA); a change in
    Python code during tracing shows up by name only in Python stacks. Sampling perturbs
    time, so these are separate processes, like allocations. Each function (name, file,
    first line) gets its inclusive time (counted once where it recurses) and its self time;
    the ``PROFILE_TOP_INCLUSIVE`` largest by inclusive time and the ``PROFILE_TOP_SELF``
    largest by self time are kept. The build is sampled too (the profiler starts before it), so
    that a build that grew is named by its functions like a first gradient that did.
    """
    import pyinstrument
    from pyinstrument import Profiler

    profiler = Profiler(interval=PROFILE_INTERVAL_S)

    class Sampled:  # the window _built_engine switches on for the build; sampling goes on through the gradient
        start = profiler.start

        @staticmethod
        def phase_end(name: str) -> None:
            pass

    engine = _built_engine(case, out, Sampled)
    out["phase"] = "profile"
    engine.first_gradient()
    profiler.stop()
    out["phase"] = "read_profile"
    totals: dict[tuple, dict] = {}

    def walk(frame, on_path: frozenset) -> None:
        if frame.is_synthetic:
            return
        name = f"{frame.class_name}.{frame.function}" if frame.class_name else frame.function
        key = (name, frame.file_path_short or frame.file_path or "?", frame.line_no)
        entry = totals.setdefault(key, {"fn": key[0], "file": key[1], "line": key[2], "incl": 0.0, "self": 0.0})
        if key not in on_path:  # a recursive call's time is already in its outer call's
            entry["incl"] += frame.time
        entry["self"] += frame.total_self_time
        for child in frame.children:
            walk(child, on_path | {key})

    root = profiler.last_session.root_frame()
    if root is not None:
        walk(root, frozenset())
    entries = list(totals.values())
    keep = sorted(entries, key=lambda e: -e["incl"])[:PROFILE_TOP_INCLUSIVE]
    keep += [e for e in sorted(entries, key=lambda e: -e["self"])[:PROFILE_TOP_SELF] if e not in keep]
    out.update({"profile_top": [{**e, "line": e["line"] if isinstance(e["line"], int) and e["line"] >= 0 else None}
                                for e in keep],
                "profile_tool": f"pyinstrument {pyinstrument.__version__}, sampled every "
                                f"{PROFILE_INTERVAL_S * 1000:g} ms"})
    return out


#: How many Python functions a calls probe keeps (by call count): jax.jit resnet15 calls about 3,000.
CALLS_TOP = 5000


def calls(case: Case, out: dict) -> dict:
    """How many times each Python function was called during the first gradient (cProfile), one entry per function.

    Why call counts, and why cProfile: a count of calls repeats exactly for the same code and inputs (its times do
    not and are dropped), so one process a side diffs cleanly, where sampled stacks need several and callgrind names
    the interpreter's C functions. cProfile's hooks are C, so the process costs a fraction of the trace a
    ``sys.settrace`` callback would; it sees the thread that runs the first gradient (where tracing, autograd's
    graph and Dynamo run), not a runtime's worker threads. Built-in functions are left out: they have no file or
    line of anyone's source. ``incl`` and ``self`` are both the call count (``ncalls``, recursive calls included).
    """
    import cProfile

    engine = _built_engine(case, out)
    out["phase"] = "calls"
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        engine.first_gradient()
    finally:
        profiler.disable()
    out["phase"] = "read_calls"
    counts: dict[tuple, int] = {}
    for entry in profiler.getstats():
        code = entry.code
        if isinstance(code, str):  # a built-in: "<built-in method ...>", no source
            continue
        key = (getattr(code, "co_qualname", code.co_name), code.co_filename, code.co_firstlineno)
        counts[key] = counts.get(key, 0) + entry.callcount
    keep = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:CALLS_TOP]
    out.update({"calls_top": [{"fn": fn, "file": file, "line": line if line > 0 else None, "incl": n, "self": n}
                              for (fn, file, line), n in keep],
                "calls_tool": f"cProfile call counts (Python {sys.version.split()[0]}), first gradient, "
                              f"{len(counts)} Python functions"})
    # The compiled code per model line (jaxpr equations, FX nodes, graph breaks), read after the profile: a
    # compiler that cannot say leaves the call counts standing, and says why.
    out["phase"] = "read_source_lines"
    try:
        out["source_lines"] = engine.source_lines()
    except Exception as exc:  # noqa: BLE001 (the measured code, traced again outside the window)
        out["source_lines_note"] = f"no source lines: {type(exc).__name__}: {exc}"[:500]
    return out


def coverage(case: Case, out: dict) -> dict:
    """Which source files ran from the import to the end of the first gradient (their functions or module code).

    Why: a pull request that changes files the measured path never runs cannot move the
    measurement, and a gate that calls it "unchanged" says something it never tested. The
    trace costs time (a Python call per function call), so it runs in a process of its own,
    never in a timed one. ``sys.settrace``'s global function sees each new frame once
    ("call") and returns None, so no line is traced.
    """
    import threading

    seen: set[str] = set()

    def tracer(frame, event, arg):
        seen.add(frame.f_code.co_filename)
        return None

    threading.settrace(tracer)
    sys.settrace(tracer)
    try:
        out["phase"] = "import"
        _import_plugins(case)
        engine = _built_engine(case, out)
        out["phase"] = "first_gradient"
        engine.first_gradient()
    finally:
        sys.settrace(None)
        threading.settrace(None)
    out["files"] = sorted(f for f in seen if not f.startswith("<"))
    # Extension modules run no Python frame: the files of those loaded say which compiled code could have run.
    from importlib.machinery import EXTENSION_SUFFIXES

    out["extensions"] = sorted({f for m in list(sys.modules.values())
                                if isinstance(f := getattr(m, "__file__", None), str) and f.endswith(tuple(EXTENSION_SUFFIXES))})
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ttfg.measure.probe", description=__doc__.split("\n")[0])
    parser.add_argument("--case", required=True, help="case as JSON: {model, backend, variant}")
    parser.add_argument("--kind", choices=("timing", "allocations", "instructions", "profile", "calls", "coverage"),
                        default="timing")
    parser.add_argument("--report", required=True, help="file to write the result object to")
    parser.add_argument("--python-allocators", action="store_true", help="memray: trace pymalloc too")
    args = parser.parse_args(argv)
    report = Path(args.report)
    out: dict = {"phase": "setup"}
    try:
        case = Case.from_json(json.loads(args.case))
        if args.kind == "allocations":
            allocations(case, report.parent, args.python_allocators, out)
        elif args.kind == "instructions":
            instructions(case, out)
        elif args.kind == "profile":
            profile(case, out)
        elif args.kind == "calls":
            calls(case, out)
        elif args.kind == "coverage":
            coverage(case, out)
        else:
            timing(case, out)
        out["ok"] = True
        code = 0
    except BaseException as exc:  # report every failure, including SystemExit from a framework
        out = {"ok": False, "phase": out.get("phase"),
               "error": traceback.format_exception_only(type(exc), exc)[-1].strip()}
        traceback.print_exc()
        code = 1
    if out["ok"]:
        out.pop("phase", None)
    report.write_text(json.dumps(out, allow_nan=True))
    sys.stdout.flush()
    sys.stderr.flush()
    return code


if __name__ == "__main__":
    sys.exit(main())
