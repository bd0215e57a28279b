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
    #: The user's project folder (the config's install-path), installed into the built environments.
    project_folder: Path | None = None
    #: ``--snapshot-limit``: the most bytes of uncommitted files a snapshot of the project takes (None: the default).
    snapshot_limit: int | None = None


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
    envs = build_all(request.envs, on_note)
    return run_study(request.study, request.model, request.backends, settings, request.out, on_sample,
                     envs=envs, project=_project(envs, request, on_note))


def _project(envs: dict, request: StudyRequest, on_note: Callable[[str], None]):
    """The user's project for the built environments, when a selected backend or the model is its plugin."""
    from ..measure.cases import Case
    from .environments import project_for

    cases = [Case(request.model, backend, ()) for backend in request.backends or [""]]  # "": the model alone
    return project_for(any(not env.current for env in envs.values()), cases, request.project_folder, on_note,
                       request.snapshot_limit)


__all__ = ["StudyRequest", "run"]
