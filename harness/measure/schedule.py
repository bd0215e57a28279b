"""The order in which a run's cold processes are spawned.

Cases are interleaved round-robin (every case once, then every case again, ...) so
the machine's drift hits all of them alike; allocation, instruction and profile
processes come after the timings, since they perturb time. A schedule is a list of named
:class:`Step` s; a caller that needs another order (a study alternating its two arms
A B, B A) reorders it with a function here rather than by reaching into tuples.
"""

from __future__ import annotations

from dataclasses import dataclass

from .cases import Case
from .run_settings import RunSettings

__all__ = ["Step", "alternate_rounds", "schedule"]


@dataclass(frozen=True)
class Step:
    """One cold process to spawn: which case, which kind of sample, which cache mode, which round."""

    case: Case
    kind: str
    cache: str
    #: The round (0, 1, ...): samples of one round are comparable side by side (a study pairs by it).
    round: int


def schedule(cases: list[Case], settings: RunSettings) -> list[Step]:
    """Timings round-robin over ``settings.repeat`` rounds, then allocations, instructions, profiles."""
    steps = [Step(case, "timing", cache, i)
             for i in range(settings.repeat) for case in cases for cache in settings.caches]
    if settings.allocations:
        steps += [Step(case, "allocations", "cold", i) for i in range(settings.alloc_repeat) for case in cases]
    if settings.instructions:
        steps += [Step(case, "instructions", "cold", 0) for case in cases]
    steps += [Step(case, "profile", "cold", i) for i in range(getattr(settings, "profiles", 0)) for case in cases]
    return steps


def alternate_rounds(steps: list[Step]) -> list[Step]:
    """Every odd round in reverse order (A B, B A, A B, ...), so order effects cancel over pairs of rounds.

    Rounds are kept in ascending order; within a round the steps keep their relative
    order (even rounds) or are reversed (odd rounds).
    """
    rounds: dict[int, list[Step]] = {}
    for step in steps:
        rounds.setdefault(step.round, []).append(step)
    return [s for i in sorted(rounds) for s in (rounds[i] if i % 2 == 0 else rounds[i][::-1])]
