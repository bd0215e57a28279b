"""``ttfg run`` as one use case: cases -> environments -> cold processes -> results file -> noise floor -> exit code.

Two steps, because the CLI draws a progress bar around the second: :func:`prepare` builds
the ``--env`` environments (every case once per environment), checks that instruction
counts can be had, and schedules the processes; :func:`measure` runs them, saving the
results file after every sample, and adds the noise floor (the stored calibration, else
an in-run estimate). Ctrl-C and a write error stop the run and keep what is on disk.
What came out, and the exit code, is the returned :class:`RunReport`; the CLI prints it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

#: What a finished run can say happened (the CLI prints a line for each but OK and EMPTY_SHARD).
OK, INTERRUPTED, WRITE_ERROR, EMPTY_SHARD, SHARD_SKIPPED, NOTHING_MEASURED, SOME_FAILED = (
    "ok", "interrupted", "write error", "empty shard", "shard skipped", "nothing measured", "some failed")

CACHES = {"cold": ("cold",), "warm": ("warm",), "both": ("cold", "warm")}


@dataclass
class RunRequest:
    """Everything one run needs: the cases (already cut to the shard), how to measure them, where to write."""

    cases: list
    skipped: list
    out: Path | None
    repeat: int = 5
    timeout_s: float = 600.0
    threads: int = 1
    #: ``--cache``: cold, warm or both.
    cache: str = "cold"
    allocations: bool = False
    alloc_repeat: int = 1
    python_allocators: bool = False
    instructions: bool = False
    profiles: int = 0
    #: ``--shard I/N``: the part of the selection this run measures (``results.model.ShardSection``).
    shard: object = None
    #: ``--env``: the environments to run every case in (requirement texts), none for this interpreter.
    envs: list[str] = field(default_factory=list)
    #: The user's project folder (the config's install-path), installed into the built environments; None:
    #: no config names one (the plugins are then linked in as this interpreter has them).
    project_folder: Path | None = None
    #: ``--snapshot-limit``: the most bytes of uncommitted files a snapshot of the project takes (None: the default).
    snapshot_limit: int | None = None


class RunEvents:
    """What the run tells while it prepares and runs. Each method does nothing here; the CLI overrides them."""

    def note(self, text: str) -> None:
        """A line of progress (an environment being built, and which one it is)."""

    def no_instructions(self, why: str) -> None:
        """``--instructions`` cannot be had here: said once, and the run goes on without them."""


@dataclass
class Prepared:
    """A run ready to start: its cases (once per environment), the runner and how many processes it will start."""

    request: RunRequest
    cases: list
    skipped: list
    envs: dict
    runner: object = None
    steps: int = 0
    #: Why the stored calibration cannot be the noise floor ("" when it can, or there is none to explain).
    why_no_floor: str = ""

    @property
    def nothing(self) -> bool:
        """With ``--env``: no environment has the selected backends' frameworks, so nothing can run."""
        return self.runner is None


@dataclass
class RunReport:
    """What one run came to; ``code`` is the exit code (0 pass, 1 a case without a good sample, 2 broken)."""

    results: object
    code: int
    status: str
    interrupted: bool = False
    write_error: OSError | None = None
    #: The cases that ran but gave no good timing sample.
    bad: list[str] = field(default_factory=list)


def prepare(request: RunRequest, events: RunEvents | None = None) -> Prepared:
    """The environments built, every case tagged with each, and the processes scheduled; nothing measured yet."""
    from ..decide import noise
    from ..measure.runner import RunSettings, Runner
    from ..measure.cases import cases_in
    from .environments import build_all, project_for

    events = events or RunEvents()
    cases, skipped = request.cases, request.skipped
    envs = build_all(request.envs, events.note)
    project = project_for(any(not env.current for env in envs.values()), cases, request.project_folder, events.note,
                          request.snapshot_limit)
    if envs:  # the environment is part of the case: every case once per environment
        cases, skipped = cases_in(envs, cases, skipped)
        if not cases:
            return Prepared(request, cases, skipped, envs)
    instructions = request.instructions
    if instructions:
        from ..measure import instructions as callgrind

        usable, why = callgrind.availability()
        if not usable:  # said once, not once per case
            events.no_instructions(why)
            instructions = False
    settings = RunSettings(
        repeat=request.repeat, timeout_s=request.timeout_s, threads=request.threads, caches=CACHES[request.cache],
        allocations=request.allocations, alloc_repeat=request.alloc_repeat,
        python_allocators=request.python_allocators, instructions=instructions, profiles=request.profiles,
    )
    runner = Runner(cases, skipped, settings, request.out, envs=envs, project=project)
    runner.results.shard = _in_envs(request.shard, envs)
    calibration, why_not = noise.stored(noise.keys_of(cases, settings, envs=envs))
    runner.results.noise = calibration  # None: an in-run estimate is recorded at the end
    return Prepared(request, cases, skipped, envs, runner, len(runner.steps), why_not)


def _in_envs(shard, envs: dict):
    """A shard's section with its case ids as this run measures them: each case once per environment
    (``model/backend/variant/env``, in ``cases_in``'s order), so ``ttfg merge results`` finds every one
    (it said "lost 1 case" of a ``--shard I/N --env`` run)."""
    if shard is None or not envs:
        return shard
    from dataclasses import replace

    def tagged(ids: list[str]) -> list[str]:
        return [f"{case_id}/{name}" for name in envs for case_id in ids]

    return replace(shard, cases=tagged(shard.cases), all_cases=tagged(shard.all_cases))


def measure(prepared: Prepared, on_sample: Callable | None = None) -> RunReport:
    """Run the prepared processes (``on_sample(done, total, case, sample)`` after each); the noise floor added."""
    from ..decide import noise
    from ..measure.runner import failed_cases
    from ..results.writer import save_again

    runner = prepared.runner
    interrupted = False
    write_error: OSError | None = None
    try:
        results = runner.run(on_sample)
    except KeyboardInterrupt:
        interrupted = True
        results = runner.results
    except OSError as exc:  # a full disk or a vanished folder: stop, keep what is on disk
        write_error = exc
        results = runner.results
    if results.noise is None:
        results.noise = noise.in_run(results)
        if prepared.why_no_floor:
            results.noise.note = "; ".join(filter(None, [results.noise.note, prepared.why_no_floor]))
        if write_error is None:
            try:  # the finished results file once more (its noise floor), as its one writer again
                save_again(results, prepared.request.out)
            except OSError as exc:
                write_error = exc
    bad = failed_cases(results)
    code, status = _outcome(prepared, results, interrupted, write_error, bad)
    return RunReport(results, code, status, interrupted, write_error, bad)


def _outcome(prepared: Prepared, results, interrupted: bool, write_error, bad: list[str]) -> tuple[int, str]:
    shard = prepared.request.shard
    if interrupted:
        return 2, INTERRUPTED
    if write_error is not None:
        return 2, WRITE_ERROR
    if shard is not None and not shard.cases:
        return 0, EMPTY_SHARD
    if not prepared.cases:
        return 2, SHARD_SKIPPED
    if bad and len(bad) == len(results.cases) - sum(1 for c in results.cases if c.skipped):
        return 2, NOTHING_MEASURED
    if bad:
        return 1, SOME_FAILED
    return 0, OK


__all__ = ["CACHES", "EMPTY_SHARD", "INTERRUPTED", "NOTHING_MEASURED", "OK", "Prepared", "RunEvents", "RunReport",
           "RunRequest", "SHARD_SKIPPED", "SOME_FAILED", "WRITE_ERROR", "measure", "prepare"]
