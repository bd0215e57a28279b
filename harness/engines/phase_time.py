"""Phases from a compiler's nested timers, each second counted once, so that a first gradient's phases add up.

Why: torch.compile's compile phase was ``call_user_compiler`` plus ``bw_compiler`` from
Dynamo's cumulative totals, and those timers can nest (the backward compiled inside the
forward's backend call); a fresh clone's ``make test`` at load 3.4 saw phases summing to
37.5 s inside a 23.3 s first gradient. From intervals instead (start, end of every timed
call), nested or repeated timers cover each second once (the union of their intervals),
trace is the tracing time no compile interval covers, and execute the rest of the window.
Pure: intervals in, seconds out.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence

Interval = tuple[float, float]

__all__ = ["Interval", "capped", "covered", "phases_from_intervals"]


def covered(intervals: Iterable[Interval], window: Interval | None = None) -> float:
    """Seconds covered by the union of ``intervals`` (clipped to ``window`` when given): nested or overlapping
    intervals count once."""
    spans = sorted((max(s, window[0]), min(e, window[1])) if window else (s, e) for s, e in intervals)
    total, end = 0.0, None
    start = None
    for s, e in spans:
        if e <= s:
            continue
        if end is None or s > end:
            if end is not None:
                total += end - start
            start, end = s, e
        else:
            end = max(end, e)
    if end is not None:
        total += end - start
    return total


def phases_from_intervals(timers: Mapping[str, Sequence[Interval]], window: Interval, trace: Sequence[str],
                          compile_: Sequence[str]) -> dict[str, float]:
    """``trace``, ``compile`` and ``execute`` seconds of a first gradient timed over ``window`` from its timers'
    intervals: compile the union of the ``compile_`` timers, trace the union of the ``trace`` timers less what a
    compile interval covers, execute the window less both. They sum to the window's length, never more."""
    comp = [i for name in compile_ for i in timers.get(name, ())]
    both = comp + [i for name in trace for i in timers.get(name, ())]
    compile_s = covered(comp, window)
    busy = covered(both, window)
    return {"trace": busy - compile_s, "compile": compile_s, "execute": max(window[1] - window[0] - busy, 0.0)}


def capped(phases: Mapping[str, float], total: float, order: Sequence[str] = ("compile", "trace")) -> dict[str, float]:
    """``phases`` (seconds, ``execute`` the remainder) made to fit in ``total``: each of ``order`` at most what the ones
    before it left, and ``execute`` what is left after them. For timers read as totals, where nesting is not seen."""
    out, left = dict(phases), total
    for name in order:
        out[name] = min(max(out.get(name) or 0.0, 0.0), left)
        left -= out[name]
    out["execute"] = max(left, 0.0)
    return out
