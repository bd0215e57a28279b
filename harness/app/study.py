"""``ttfg study`` as one use case: the ``--env`` environments built, then the study measured and analysed.

The study itself (its arms, cases, paired effects or depth fits) is ``decide/study.py``;
this wires the environments into it and gives the CLI the ``StudyResult`` it prints.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable


@dataclass
class StudyRequest:
    """One study: which, on what model and backends, how many processes, where the samples go."""

    study: str
    model: str
    backends: list[str] | None
    out: Path
    repeat: int = 5
    timeout_s: float = 600.0
    threads: int = 1
    #: ``--env``: requirement texts; the env study compares two, the others run in at most one.
    envs: list[str] = field(default_factory=list)


def run(request: StudyRequest, on_note: Callable[[str], None], on_sample: Callable | None = None):
    """Build the environments (``on_note`` tells), measure and analyse; the ``decide.study.StudyResult``.

    Raises
    ------
    KeyboardInterrupt
        The finished samples are kept in ``request.out``.
    """
    from ..decide.study import run_study
    from ..measure.runner import RunSettings
    from .environments import build_all

    settings = RunSettings(repeat=request.repeat, timeout_s=request.timeout_s, threads=request.threads)
    return run_study(request.study, request.model, request.backends, settings, request.out, on_sample,
                     envs=build_all(request.envs, on_note))


__all__ = ["StudyRequest", "run"]
