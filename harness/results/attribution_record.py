"""An attribution as data: where one case's change went, phase by phase, counter by counter, function by function.

Why here, below ``decide/``: ``decide/attribution.py`` computes these from both sides' samples, and ``gate.json``
keeps each regressed case's attribution. Kept there as a plain dict, every reader (the report page, ``ttfg
explain``, the summary's "where it went") either worked on the dict or attributed the results files again, so the
page could show an attribution other than the one the gate made (a warm gate's, computed from its cold samples).
One type at this layer serves the gate that computes it and every reader of ``gate.json``; :meth:`Attribution.to_json`
writes it and :meth:`Attribution.from_json` reads it back (what ``to_json`` derives is derived again).
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field

from .. import metrics
from ..engines.base import GRADIENT_PHASES
from .format import strict_json
from .verdict import Record

__all__ = ["Attribution", "CLEAR_T", "CallDelta", "CODE_KINDS", "CounterDelta", "FUNCTION_SOURCES", "FunctionDelta", "LineDelta", "MIN_PAIRS", "PHASES",
           "PhaseDelta", "not_a_cause"]

#: The phases attributed, in process order (the registry's).
PHASES = metrics.PROCESS_PHASES
#: Where function lists come from: (sample field, unit, what it is), in the order shown.
FUNCTION_SOURCES = (("instructions_top", "instructions", "callgrind instruction counts"),
                    ("profile_top", "s", "sampled Python stacks (pyinstrument)"))
#: |t| of a self change at which it counts as clear of the samples' noise.
CLEAR_T = 3.0
#: A timed phase change from fewer pairs than this is no finding (``PhaseDelta.finding``).
MIN_PAIRS = 3
#: Functions that run whatever work is handed to them: a native runtime's thread pool (XLA's Eigen pool, its
#: workers' loops, thread start) and the interpreter's dispatch (the eval loop, call slots, vectorcall, frames and
#: cells, reference counting, generators resumed). Their cost grows with any change, so they name no cause and are
#: never the headline function (an XLA pool frame and CPython's ``_PyEval_EvalFrameDefault`` were listed as where a
#: comment-only pull request's time went; ``_PyFunction_Vectorcall``, ``PyCell_New`` and ``gen_iternext`` as where a
#: pure-Python change to autograd's first gradient went).
_NOT_A_CAUSE = re.compile(
    r"ThreadPool|WorkerLoop|EigenEnvironment|tsl::thread|tsl::Env|std::thread|start_thread|thread_start|^clone3?$"
    r"|^_Py|^Py\w*_(Call|Vectorcall)|^PyEval_|^PyCell_|^PyFrame_|^PyObject_Vectorcall|^PyObject_Call"
    r"|slot_tp_call|cfunction_call|cfunction_vectorcall|method_vectorcall|vectorcall|^gen_(iternext|send_ex)"
    r"|^frame_dealloc|^func_dealloc|^cell_dealloc|^call_function|^do_call_core")
#: The interpreter's dispatch by source file (callgrind names CPython's C files by their path in its build tree).
_DISPATCH_FILES = re.compile(r"(^|/)Python/ceval[^/]*\.[ch]$|(^|/)Objects/(call|frameobject|cellobject)\.c$"
                             r"|(^|/)Include/(internal/)?pycore_(ceval|call|frame|pystate)\.h$")


def not_a_cause(fn: str, file: str = "") -> bool:
    """Whether ``fn`` (in ``file``) is a runtime's thread-pool or the interpreter's dispatch (:data:`_NOT_A_CAUSE`):
    folded, never listed as the function that grew."""
    return bool(_NOT_A_CAUSE.search(fn or "") or _DISPATCH_FILES.search(file or ""))


@dataclass
class PhaseDelta(Record):
    """One phase (or the gated total) on both sides."""

    phase: str
    metric: str
    #: Medians in seconds (None when the backend does not report the phase).
    base: float | None
    head: float | None
    #: Head minus base in seconds: median of per-pair differences when paired, else of medians.
    delta: float | None
    ratio: float = math.nan
    ci_low: float = math.nan
    ci_high: float = math.nan
    #: Pairs (paired) or the smaller side's sample count.
    n: int = 0
    paired: bool = False
    #: Instruction counts of the phase (medians), where samples carry ``instructions_phases``.
    base_instructions: float | None = None
    head_instructions: float | None = None

    @property
    def instructions_delta(self) -> float | None:
        if self.base_instructions is None or self.head_instructions is None:
            return None
        return self.head_instructions - self.base_instructions

    @property
    def finding(self) -> bool:
        """Whether this phase's change may be shown as where a change went: counted (instructions are deterministic),
        or timed over at least :data:`MIN_PAIRS` pairs. One pair's "build 181 ms -> 79.3 ms (0.439×)" was noise."""
        return bool(self.instructions_delta) or self.n >= MIN_PAIRS

    def to_json(self) -> dict:
        out = {k: strict_json(v) for k, v in asdict(self).items()}
        out["instructions_delta"] = self.instructions_delta
        return out


@dataclass
class CounterDelta(Record):
    """A deterministic count on both sides (medians)."""

    metric: str
    base: float | None
    head: float | None
    #: "regressed", "improved", "unchanged" by the registry's threshold; "absent" on one side.
    verdict: str
    threshold: float

    @property
    def delta(self) -> float | None:
        return None if self.base is None or self.head is None else self.head - self.base

    @property
    def changed(self) -> bool:
        return self.verdict in ("regressed", "improved", "absent")

    def to_json(self) -> dict:
        return {**{k: strict_json(v) for k, v in asdict(self).items()}, "delta": self.delta}


@dataclass
class FunctionDelta(Record):
    """One function of the first-gradient window: inclusive and self instructions on both sides."""

    fn: str
    file: str
    line: int | None
    base_incl: float | None
    head_incl: float | None
    base_self: float | None
    head_self: float | None
    #: Head minus base; bounds when the function is in one side's list only (see ``presence``).
    delta_incl: float
    delta_self: float | None
    #: "both", "head only" (delta is at least this), "base only" (delta is at most this).
    presence: str = "both"
    #: "instructions" (callgrind) or "s" (sampled stacks).
    unit: str = "instructions"
    #: Welch's t of the self change over the samples (NaN with one sample a side): how clear of noise it is.
    self_t: float = math.nan

    @property
    def clear(self) -> bool:
        """The self change stands out of the samples' noise (``|t| >= 3``; deterministic counts always do)."""
        return math.isfinite(self.self_t) and abs(self.self_t) >= CLEAR_T

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.line is not None else self.file

    @property
    def relative(self) -> float | None:
        """Inclusive change relative to base (None when base is absent or zero)."""
        return self.delta_incl / self.base_incl if self.base_incl else None

    def to_json(self) -> dict:
        return {**{k: strict_json(v) for k, v in asdict(self).items()}, "where": self.where, "relative": self.relative,
                "clear": self.clear}


#: Whose code a Python function is: the measured project's (its install of the revision) or anyone else's (the
#: frameworks, ttfg when the project is not ttfg, the standard library), in the order they are listed.
CODE_KINDS = ("project", "framework")


class _CountDelta(Record):
    """What a call's and a line's count on both sides share: the change and where it is (``file:line``).

    Not a dataclass: the fields below are each subclass's own (declared in its order); they are named here
    for the properties that read them."""

    file: str
    line: int | None
    base: int
    head: int

    @property
    def delta(self) -> int:
        return self.head - self.base

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.line is not None else self.file

    def to_json(self) -> dict:
        return {**asdict(self), "delta": self.delta, "where": self.where}


@dataclass
class CallDelta(_CountDelta):
    """One Python function's call count in the first gradient on both sides (cProfile, one process a side).

    ``file`` is the path inside the side's install (``mylab/ops.py``) for the project's code, and inside
    ``site-packages`` or the standard library for the rest, so that one function matches across two sides that are
    installed in two folders. Counts are exact: a function one side never called has a count of 0 there."""

    fn: str
    file: str
    line: int | None
    base: int
    head: int
    #: One of :data:`CODE_KINDS`.
    code: str = "framework"


@dataclass
class LineDelta(_CountDelta):
    """One model source line's compiled code on both sides (``engines/source_lines.py``: one process a side).

    ``kind`` is ``jaxpr_eqns`` (jax's equations), ``fx_nodes`` (Dynamo's FX nodes) or ``graph_break`` (Dynamo cut
    its graph there, for ``reason``); ``file`` is located as a :class:`CallDelta`'s is. Lines are matched by file
    and line number: an edit above a line moves it, and then it shows as one line gone and one new."""

    kind: str
    file: str
    line: int | None
    fn: str
    base: int
    head: int
    code: str = "framework"
    reason: str | None = None

    @classmethod
    def from_json(cls, c: dict) -> "LineDelta":
        return cls(c["kind"], c["file"], c.get("line"), c.get("fn") or "?", int(c["base"]), int(c["head"]),
                   c.get("code") or "framework", c.get("reason"))


@dataclass
class Attribution:
    """Where one case's change went."""

    case: str
    #: The gated (or headline) timing metric.
    metric: str
    paired: bool
    #: The metric itself first, then each phase either side reports.
    total: PhaseDelta | None
    phases: list[PhaseDelta] = field(default_factory=list)
    counters: list[CounterDelta] = field(default_factory=list)
    functions: list[FunctionDelta] = field(default_factory=list)
    #: Per unit ("instructions", "s"): samples that carried function lists, per side.
    function_samples: dict[str, dict[str, int]] = field(default_factory=dict)
    #: Notes that came with the function lists (``instructions_note``, the profiler's name).
    function_notes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: The sentence a file stored beside the attribution (``present/attribution_views.headline`` of the ttfg that
    #: wrote ``gate.json``), kept so that the file is written back as it was read; None for one just computed, and
    #: then not written (the gate's presenter adds it).
    headline: str | None = None
    #: Python functions whose call count in the first gradient changed (``decide/python_calls.py``): the project's
    #: first, then the frameworks', each by the size of the change; empty where no calls process ran on both sides.
    calls: list[CallDelta] = field(default_factory=list)
    #: What the call counts came from, or why there are none (one line), where a calls process was asked for.
    calls_note: str | None = None
    #: Compiled code per model line whose count changed (``decide/source_lines.py``): graph breaks first, then
    #: the project's lines, then the frameworks'; empty where no calls process recorded lines on both sides.
    lines: list[LineDelta] = field(default_factory=list)
    #: What the line counts came from, or why there are none.
    lines_note: str | None = None

    def grown_calls(self, code: str = "project", top: int = 5) -> list[CallDelta]:
        """The ``top`` functions of ``code`` (one of :data:`CODE_KINDS`) whose call count grew most."""
        return sorted((c for c in self.calls if c.code == code and c.delta > 0), key=lambda c: -c.delta)[:top]

    def phases_inside(self) -> tuple[str, ...]:
        """The phases the gated metric holds: every phase for one that spans the process (``process_ttfg_s``,
        ``cpu_s``), else the first gradient's (trace, lower, compile, execute)."""
        return PHASES if self.metric in ("process_ttfg_s", "cpu_s") else GRADIENT_PHASES

    def largest_phase(self) -> PhaseDelta | None:
        """The phase inside the metric that changed most: by its counted instructions when the phases were
        counted, else by its time in absolute seconds (same sign as the total).

        Counts first: they are deterministic evidence, where the paired medians of the few profiled
        processes an attribution takes are not (a bisect's culprit, decided by the trace's count at
        1.147x, had its compile phase "move most" by 10 ms of noise). The first gradient holds trace,
        lower, compile and execute; import and build count only for a metric that spans the process
        (``process_ttfg_s``), else their noise would "explain" a first gradient they are not part of."""
        inside = self.phases_inside()
        counted = [p for p in self.phases if p.instructions_delta and p.phase in inside]
        if counted:
            return max(counted, key=lambda p: abs(p.instructions_delta))
        # A timed phase from fewer than MIN_PAIRS pairs is noise, never where it went (PhaseDelta.finding).
        known = [p for p in self.phases if p.delta is not None and p.delta != 0 and p.phase in inside and p.finding]
        if self.total is not None and self.total.delta:
            same = [p for p in known if (p.delta > 0) == (self.total.delta > 0)]
            known = same or known
        return max(known, key=lambda p: abs(p.delta), default=None)

    def units(self) -> list[str]:
        """The units of the function lists present, in :data:`FUNCTION_SOURCES` order."""
        return [u for _, u, _ in FUNCTION_SOURCES if any(f.unit == u for f in self.functions)]

    def functions_in(self, unit: str) -> list[FunctionDelta]:
        return [f for f in self.functions if f.unit == unit]

    def top_function(self, unit: str | None = None, exclude=None) -> FunctionDelta | None:
        """The function that grew (or shrank) most in its *own* cost: where to look first.

        Inclusive changes repeat down a call chain (every caller of the function that grew
        grows by as much), so the self change names the function itself. ``unit`` None:
        the first source present. ``exclude(f)``: functions never named besides the dispatch (a reader's view
        leaves out the interpreter's C code, ``present/gate_views.interpreter_internal``).
        """
        units = self.units()
        if not units:
            return None
        mine = [f for f in self.functions_in(unit or units[0]) if not not_a_cause(f.fn, f.file)
                and not (exclude is not None and exclude(f))]
        known = [f for f in mine if f.delta_self is not None and f.delta_self != 0]
        clear = [f for f in known if f.clear or not math.isfinite(f.self_t)]
        if clear or known:
            return max(clear or known, key=lambda f: abs(f.delta_self))
        return mine[0] if mine else None

    def headline_function(self, exclude=None) -> tuple[str, FunctionDelta] | None:
        """``(unit, function)`` to look at first: the sampled stacks' top when its change is clear of
        their noise, else the first source's top.

        Why the stacks first: callgrind sees the interpreter's C functions, so a Python
        function that grew shows up in instruction counts as ``slot_tp_call`` or a thread-pool
        invoker; the sampled stacks name it, with its file and line.
        """
        tops = [(u, t) for u in self.units() if (t := self.top_function(u, exclude)) is not None]
        clear_stack = [(u, t) for u, t in tops if u == "s" and t.delta_self and t.clear]
        return (clear_stack or tops or [None])[0]

    def changed_counters(self) -> list[CounterDelta]:
        return [c for c in self.counters if c.changed]

    def to_json(self) -> dict:
        largest = self.largest_phase()
        tops = {u: self.top_function(u) for u in self.units()}
        headline = self.headline_function()
        return {"case": self.case, "metric": self.metric, "paired": self.paired,
                "total": None if self.total is None else self.total.to_json(),
                "phases": [p.to_json() for p in self.phases],
                "largest_phase": None if largest is None else largest.phase,
                "counters": [c.to_json() for c in self.counters],
                "functions": [f.to_json() for f in self.functions],
                # The function to look at first (headline_function), and each source's top.
                "top_function": None if headline is None else {
                    "fn": headline[1].fn, "where": headline[1].where, "unit": headline[0],
                    "delta_self": strict_json(headline[1].delta_self)},
                "top_functions": {u: {"fn": t.fn, "where": t.where, "delta_self": strict_json(t.delta_self)}
                                  for u, t in tops.items() if t is not None},
                "function_samples": dict(self.function_samples), "function_notes": list(self.function_notes),
                "notes": list(self.notes), "calls": [c.to_json() for c in self.calls], "calls_note": self.calls_note,
                "lines": [c.to_json() for c in self.lines], "lines_note": self.lines_note,
                # last: the presenter adds it to a just-computed attribution (gate_views.presented_document)
                **({} if self.headline is None else {"headline": self.headline})}

    @classmethod
    def from_json(cls, data: dict) -> "Attribution":
        """An attribution as ``gate.json`` holds it (what ``to_json`` derives, such as ``largest_phase``, is derived
        again, never read)."""
        total = data.get("total")
        return cls(data.get("case") or "", data.get("metric") or "first_grad_s", bool(data.get("paired")),
                   None if total is None else PhaseDelta.from_json(total),
                   [PhaseDelta.from_json(p) for p in data.get("phases") or []],
                   [CounterDelta.from_json(c) for c in data.get("counters") or []],
                   [FunctionDelta.from_json(f) for f in data.get("functions") or []],
                   dict(data.get("function_samples") or {}), list(data.get("function_notes") or []),
                   list(data.get("notes") or []), data.get("headline"),
                   # A file written before call counts existed has neither key: no calls, as before.
                   [CallDelta(c["fn"], c["file"], c.get("line"), int(c["base"]), int(c["head"]),
                              c.get("code") or "framework") for c in data.get("calls") or []],
                   data.get("calls_note"),
                   # A file written before line counts existed has neither key: none, as before.
                   [LineDelta.from_json(c) for c in data.get("lines") or []], data.get("lines_note"))
