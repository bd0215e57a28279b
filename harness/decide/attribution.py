"""Attribution: where a change between a base and a head went, phase by phase and function by function.

Why: a verdict says *that* the first gradient got 5 % slower; the person who has to fix it
needs *where*. Three views, from the samples both sides already hold, each as far as the
samples allow:

* **Phases** (import, build, trace, lower, compile, execute): each phase's median on both
  sides and the change in seconds, with the ratio's 95 % interval. Samples from a gate
  carry their pair index, so the change is the median of the per-pair differences and
  the interval a paired one (drift cancels); otherwise the medians are compared
  (Hodges-Lehmann interval). Where samples carry ``instructions_phases`` (instruction
  counts per phase), those are compared too: they do not depend on the machine's load.
* **Counters**: structural counters, allocation and instruction counts, base median
  against head median; those past the registry's threshold are marked changed.
* **Functions**: the functions of the first-gradient window whose inclusive cost changed
  most, with their self cost, from two sources, each shown where both sides have it:
  ``instructions_top`` (callgrind's per-function instruction counts: deterministic, but
  Python code appears as the interpreter's C functions) and ``profile_top`` (sampled
  Python stacks, pyinstrument, in seconds: names the Python function that grew). Both are
  lists of ``{"fn", "file", "line", "incl", "self"}``. A function in one side's list only is
  compared against the smallest value that list holds (it was below that on the other
  side), so its change is a bound, marked as such. Functions are matched by name and file,
  not by line, because an edit above a function moves its line.

All three are descriptive (95 % intervals, no decision): the gate decides, attribution
explains. Every field is read defensively: a sample without phase or function data
simply adds none, and the result says what was missing. The terminal, Markdown and
HTML views are ``present/attribution_views.py``; the command is ``ttfg explain``.
"""

from __future__ import annotations

import math
import statistics

from .. import metrics
from ..errors import UsageError
# The attribution's records (one type for the gate that computes them and every reader of gate.json).
from ..results.attribution_record import (FUNCTION_SOURCES, PHASES, Attribution, CounterDelta, FunctionDelta,
                                          PhaseDelta, not_a_cause)
from ..results.format import is_number
from ..results.model import CaseResult, Results, Sample

#: Level of the descriptive intervals.
ALPHA = 0.05
#: Functions listed by default (by inclusive change), plus up to SELF_EXTRA more by self change.
TOP = 12
SELF_EXTRA = 5
#: Deterministic metrics compared besides the structural counters.
COUNTS = tuple(m for m in metrics.by_sample_kind(lambda m: m.deterministic and not metrics.is_counter(m.name)))


def _number(value) -> float | None:
    return float(value) if is_number(value) else None


# ---------------------------------------------------------------------------- reading samples


def _median(values: list[float]) -> float | None:
    return float(statistics.median(values)) if values else None


def _timing(case: CaseResult, cache: str) -> list[Sample]:
    return case.good("timing", cache)


def _by_pair(samples: list[Sample]) -> dict[int, Sample]:
    return {s.pair: s for s in samples if s.pair is not None}


def _phase_instructions(sample: Sample) -> dict[str, float]:
    """``instructions_phases`` as ``{phase: count}``; keys ``trace`` and ``trace_s`` both accepted."""
    raw = getattr(sample, "instructions_phases", None)
    if not isinstance(raw, dict):
        return {}
    out = {}
    for key, value in raw.items():
        if isinstance(key, str) and _number(value) is not None:
            out[key.removesuffix("_s")] = float(value)
    return out


def _phase_delta(phase: str, metric: str, base: list[Sample], head: list[Sample], instr: dict[str, list],
                 ) -> PhaseDelta | None:
    from .stats import compare_paired, compare_unpaired

    bv = [v for s in base if (v := metrics.sample_value(s, metric)) is not None]
    hv = [v for s in head if (v := metrics.sample_value(s, metric)) is not None]
    bi, hi = _median(instr["base"].get(phase, [])), _median(instr["head"].get(phase, []))
    if not bv and not hv and bi is None and hi is None:
        return None
    out = PhaseDelta(phase, metric, _median(bv), _median(hv), None, base_instructions=bi, head_instructions=hi)
    pb, ph = _by_pair(base), _by_pair(head)
    pairs = [(metrics.sample_value(pb[i], metric), metrics.sample_value(ph[i], metric)) for i in sorted(set(pb) & set(ph))]
    pairs = [(b, h) for b, h in pairs if b is not None and h is not None]
    threshold = metrics.get(metric).threshold
    if len(pairs) >= 2:
        out.paired, out.n = True, len(pairs)
        out.delta = float(statistics.median(h - b for b, h in pairs))
        positive = [(b, h) for b, h in pairs if b > 0 and h > 0]
        if len(positive) >= 2:
            v = compare_paired([b for b, _ in positive], [h for _, h in positive], min_effect=threshold, alpha=ALPHA)
            out.ratio, out.ci_low, out.ci_high = v.ratio, v.ci_low, v.ci_high
    elif bv and hv:
        out.n = min(len(bv), len(hv))
        out.delta = out.head - out.base
        b_pos, h_pos = [v for v in bv if v > 0], [v for v in hv if v > 0]
        if len(b_pos) >= 2 and len(h_pos) >= 2:
            v = compare_unpaired(b_pos, h_pos, min_effect=threshold, alpha=ALPHA)
            out.ratio, out.ci_low, out.ci_high = v.ratio, v.ci_low, v.ci_high
        elif out.base and out.head:
            out.ratio = out.head / out.base
    return out


def _counter_deltas(base: CaseResult, head: CaseResult, cache: str) -> list[CounterDelta]:
    from .stats import compare_counter

    names: list[str] = []
    for case in (base, head):
        for s in case.good("timing", cache):
            for key in s.counters or {}:
                name = metrics.COUNTER_PREFIX + key
                if name not in names:
                    names.append(name)
    out = []
    for name in [*COUNTS, *sorted(names)]:
        b = metrics.case_values(base, name, cache)
        h = metrics.case_values(head, name, cache)
        if not b and not h:
            continue
        threshold = metrics.get(name).threshold
        if not b or not h:
            out.append(CounterDelta(name, _median(b), _median(h), "absent", threshold))
            continue
        out.append(CounterDelta(name, _median(b), _median(h), compare_counter(b, h, threshold).verdict, threshold))
    order = {"regressed": 0, "improved": 1, "absent": 2, "unchanged": 3}
    return sorted(out, key=lambda c: order[c.verdict])


def _function_lists(case: CaseResult, field_name: str) -> tuple[list[list[dict]], list[str]]:
    """Every good sample's function list in ``field_name`` (valid entries only) and the notes
    that came with it (``instructions_note``; the profiler's name)."""
    lists, notes = [], []
    note_field = {"instructions_top": "instructions_note", "profile_top": "profile_tool"}.get(field_name)
    for s in case.samples:
        if not s.ok:
            continue
        raw = getattr(s, field_name, None)
        note = getattr(s, note_field, None) if note_field else None
        if isinstance(note, str) and note.strip() and note.strip() not in notes:
            notes.append(note.strip())
        if not isinstance(raw, list):
            continue
        entries = [e for e in raw if isinstance(e, dict) and isinstance(e.get("fn"), str)
                   and _number(e.get("incl")) is not None]
        if entries:
            lists.append(entries)
    return lists, notes


def _keyed(entries: list[dict]) -> dict[tuple, dict]:
    """Entries keyed by (fn, file), or (fn, file, line) where one list holds a name twice in a file."""
    seen: dict[tuple, int] = {}
    for e in entries:
        seen[(e["fn"], str(e.get("file") or "?"))] = seen.get((e["fn"], str(e.get("file") or "?")), 0) + 1
    out = {}
    for e in entries:
        key = (e["fn"], str(e.get("file") or "?"))
        if seen[key] > 1:
            key = (*key, e.get("line"))
        out.setdefault(key, e)
    return out


def _side_functions(lists: list[list[dict]]) -> tuple[dict[tuple, dict], float | None]:
    """Per function the median inclusive and self counts over the lists that hold it, and the
    side's floor: the largest of the lists' smallest inclusive counts (what "not listed" bounds)."""
    per: dict[tuple, dict[str, list]] = {}
    floors = []
    for entries in lists:
        keyed = _keyed(entries)
        floors.append(min(float(e["incl"]) for e in entries))
        for key, e in keyed.items():
            slot = per.setdefault(key, {"incl": [], "self": [], "line": e.get("line"), "fn": e["fn"],
                                        "file": str(e.get("file") or "?")})
            slot["incl"].append(float(e["incl"]))
            if _number(e.get("self")) is not None:
                slot["self"].append(min(float(e["self"]), float(e["incl"])))
    n = len(lists)
    # Self never exceeds inclusive (a list's entry whose self does is clamped: its own cost is inside the inclusive).
    out = {key: {"fn": v["fn"], "file": v["file"], "line": v["line"] if isinstance(v["line"], int) else None,
                 "incl": _median(v["incl"]),
                 "self": None if not v["self"] else min(_median(v["self"]), _median(v["incl"])),
                 # One self value per list, 0 where the list lacks the function (it was below the list's end).
                 "self_values": v["self"] + [0.0] * (n - len(v["self"]))} for key, v in per.items()}
    return out, (max(floors) if floors else None)


#: The smallest difference each unit can show: one sample of a 1 ms profiler, one instruction.
RESOLUTION = {"s": 1e-3, "instructions": 1.0}


def _self_t(base_values: list[float], head_values: list[float], unit: str) -> float:
    """Welch's t of the self change, with the unit's resolution as a floor on its standard error."""
    nb, nh = len(base_values), len(head_values)
    if not nb or not nh:
        return math.nan
    mb, mh = sum(base_values) / nb, sum(head_values) / nh
    vb = statistics.variance(base_values) if nb > 1 else 0.0
    vh = statistics.variance(head_values) if nh > 1 else 0.0
    se = math.sqrt(vb / nb + vh / nh + RESOLUTION.get(unit, 0.0) ** 2 / min(nb, nh))
    return (mh - mb) / se if se > 0 else math.nan


def fold(lists: list[list[dict]]) -> list[list[dict]]:
    """Each list without the interpreter's dispatch and the runtimes' worker-thread frames (``not_a_cause``).

    Why: their cost is the cost of whatever ran through them (the eval loop holds every Python function; XLA's
    pool every compile task), so their inclusive counts repeat the change and their self counts are the
    interpreter's overhead of it; listed, they were named as "the function that grew". The Python function that
    called into them is named by the call counts and sampled stacks of the same attribution."""
    out = []
    for entries in lists:
        kept = [e for e in entries if not not_a_cause(e["fn"], str(e.get("file") or ""))]
        if kept:
            out.append(kept)
    return out


def function_deltas(base_lists: list[list[dict]], head_lists: list[list[dict]], top: int = TOP,
                    unit: str = "instructions") -> list[FunctionDelta]:
    """The ``top`` functions whose inclusive cost changed most between the sides, and up to
    :data:`SELF_EXTRA` more whose own (self) cost changed most, clear of the samples' noise.

    Parameters
    ----------
    base_lists, head_lists : list of list of dict
        Each sample's function list (``fn``, ``file``, ``line``, ``incl``, ``self``).
    top : int
        How many functions to return.
    unit : str
        What the numbers are: "instructions" or "s".

    Returns
    -------
    list of FunctionDelta
        Sorted by the size of the inclusive change, largest first; empty when either
        side has no list.
    """
    if not base_lists or not head_lists:
        return []
    base_lists, head_lists = fold(base_lists), fold(head_lists)
    if not base_lists or not head_lists:
        return []
    base, base_floor = _side_functions(base_lists)
    head, head_floor = _side_functions(head_lists)
    out = []
    for key in [*base, *(k for k in head if k not in base)]:
        b, h = base.get(key), head.get(key)
        ref = h or b
        line = (h or {}).get("line") if h and h.get("line") is not None else ref.get("line")
        t = _self_t(b["self_values"] if b else [0.0] * len(base_lists),
                    h["self_values"] if h else [0.0] * len(head_lists), unit)
        if b and h:
            d_self = None if b["self"] is None or h["self"] is None else h["self"] - b["self"]
            out.append(FunctionDelta(ref["fn"], ref["file"], line, b["incl"], h["incl"], b["self"], h["self"],
                                     h["incl"] - b["incl"], d_self, unit=unit, self_t=t))
        elif h:
            # Not in base's lists: its base counts (self <= inclusive) are below base's floor, so it grew by at
            # least this much (self's bound is never above inclusive's: h.self <= h.incl).
            floor = base_floor or 0.0
            out.append(FunctionDelta(ref["fn"], ref["file"], line, None, h["incl"], None, h["self"],
                                     h["incl"] - floor, None if h["self"] is None else h["self"] - floor,
                                     "head only", unit, t))
        else:
            # Not in head's lists: its head inclusive count is below head's floor, so it shrank by at least
            # ``b.incl - floor`` when that is positive. Its head self count is unknown below that floor: the
            # old bound ``floor - b.self`` read "self <= +500,170,986 (+1,282,489,708 %), inclusive <= +287,110,442"
            # and was taken for the function that grew most.
            floor = head_floor or 0.0
            d_self = None if b["self"] is None else floor - b["self"]
            out.append(FunctionDelta(ref["fn"], ref["file"], line, b["incl"], None, b["self"], None,
                                     floor - b["incl"], d_self if d_self is not None and d_self < 0 else None,
                                     "base only", unit, t))
    out = [f for f in out if f.delta_incl != 0 or f.presence != "both"]
    out.sort(key=lambda f: (-abs(f.delta_incl), -abs(f.delta_self or 0.0)))
    shown = out[:top]
    # Inclusive changes repeat up a call chain, which can fill the list with one chain: the
    # functions whose own cost changed most, clear of noise, are always shown too.
    own = sorted((f for f in out[top:] if f.delta_self and f.clear), key=lambda f: -abs(f.delta_self))
    return shown + own[:SELF_EXTRA]


# ---------------------------------------------------------------------------- entry points


def attribute(base: CaseResult | None, head: CaseResult | None, metric: str = "first_grad_s", cache: str = "cold",
              top: int = TOP) -> Attribution | None:
    """Where one case's change went, from both sides' samples.

    Parameters
    ----------
    base, head : CaseResult or None
        The case on each side (None: nothing to attribute).
    metric : str
        The headline timing (the gate's metric).
    cache : str
        Which timing samples (cold or warm).
    top : int
        Functions to list.

    Returns
    -------
    Attribution or None
        None when either side lacks the case.
    """
    if base is None or head is None:
        return None
    b_t, h_t = _timing(base, cache), _timing(head, cache)
    instr: dict[str, dict[str, list]] = {"base": {}, "head": {}}
    for role, case in (("base", base), ("head", head)):
        for s in case.samples:
            if s.ok:
                for phase, value in _phase_instructions(s).items():
                    instr[role].setdefault(phase, []).append(value)
    total = _phase_delta(f"{metrics.get(metric).brief} (total)", metric, b_t, h_t, instr)
    phases = [p for phase in PHASES if (p := _phase_delta(phase, f"{phase}_s", b_t, h_t, instr)) is not None]
    out = Attribution(base.id, metric, bool(total and total.paired), total, phases, _counter_deltas(base, head, cache))
    for field_name, unit, what in FUNCTION_SOURCES:
        b_lists, b_notes = _function_lists(base, field_name)
        h_lists, h_notes = _function_lists(head, field_name)
        if not b_lists and not h_lists:
            continue
        out.function_samples[unit] = {"base": len(b_lists), "head": len(h_lists)}
        out.function_notes += [n for n in dict.fromkeys(b_notes + h_notes) if n not in out.function_notes]
        if b_lists and h_lists:
            out.functions += function_deltas(b_lists, h_lists, top, unit)
            folded = {e["fn"] for entries in b_lists + h_lists for e in entries
                      if not_a_cause(e["fn"], str(e.get("file") or ""))}
            if folded:
                out.notes.append(f"{what}: {len(folded)} interpreter-dispatch and worker-thread functions folded "
                                 f"(never listed as what grew; their cost is their callers' work), such as "
                                 + ", ".join(sorted(folded)[:3]))
        else:
            out.notes.append(f"{what} on {'head' if h_lists else 'base'} only: no function-level diff from them")
    if not out.functions:
        out.notes.append("no function-level data: no sample on both sides carries per-function counts of the "
                         "first-gradient window (instructions_top from callgrind, or profile_top from sampled "
                         "stacks: ttfg run --profiles N, or a gate's --profiles for a regressed case)")
    if not b_t or not h_t:
        out.notes.append("no good cold timing sample on " + ("base" if not b_t else "head") + ": no phase times")
    return out


def attribute_results(base: Results, head: Results, case: str | None = None, metric: str = "first_grad_s",
                      cache: str = "cold", top: int = TOP, held: dict[str, Attribution] | None = None) -> list[Attribution]:
    """Attributions for every case both files hold, or for the cases matching ``case``.

    Parameters
    ----------
    base, head : Results
    case : str or None
        A case id or a glob pattern (``*jax.jit*``); None: every common case.
    held : dict of str to Attribution, or None
        Attributions already made, by case (a gate's, read back from its ``gate.json``): taken as they are,
        never made again from the samples.

    Raises
    ------
    UsageError
        When no case is common to both files, or none matches ``case`` (the message
        lists the common ones).
    """
    import fnmatch

    head_ids = {c.id for c in head.cases if not c.skipped}
    common = [c.id for c in base.cases if c.id in head_ids and not c.skipped]
    if not common:
        raise UsageError(f"{base.path or 'base'} and {head.path or 'head'} have no measured case in common")
    chosen = common if case is None else [c for c in common if c == case or fnmatch.fnmatchcase(c, case)]
    if not chosen:
        raise UsageError(f"no case {case!r} in both files; cases in both: {', '.join(common)}")
    from .python_calls import attribute_calls, recorded_roots
    from .source_lines import attribute_lines

    held = held or {}
    out = []
    for c in chosen:
        a = held.get(c)
        if a is None and (a := attribute(base.case(c), head.case(c), metric, cache, top)) is not None:
            # The gate's calls samples, where the files hold them (a gate's base.json and head.json).
            calls, note = attribute_calls(base.case(c), head.case(c), recorded_roots(base), recorded_roots(head))
            if calls or any(s.kind == "calls" for s in base.case(c).samples + head.case(c).samples):
                a.calls, a.calls_note = calls, note
            a.lines, a.lines_note = attribute_lines(base.case(c), head.case(c), recorded_roots(base),
                                                    recorded_roots(head))
        if a is not None:
            out.append(a)
    return out


__all__ = ["ALPHA", "Attribution", "FUNCTION_SOURCES", "CounterDelta", "FunctionDelta", "PHASES", "PhaseDelta", "TOP", "attribute",
           "attribute_results", "function_deltas"]
