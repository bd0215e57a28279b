"""The runner: decides how many cold processes, spawns them, collects their reports.

Every sample is a fresh ``python -m ttfg.measure.probe`` process with fresh, empty compile
cache folders (removed afterwards), fixed thread counts and ``PYTHONHASHSEED=0``.
Cases are interleaved round-robin (all cases once, then all again ...) so that the
machine's drift hits every case alike. A sample that crashes, hangs past its timeout
or reports garbage is recorded as failed with its stderr tail, and the run goes on.
The results file is rewritten atomically after every sample, so an interruption
keeps every finished sample.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Mapping

from . import instructions, metadata
from .cases import Case, Skipped
from .run_settings import RunSettings
from .schedule import Step, schedule
from ..provision.target import ProbeTarget, child_environ
from ..results.format import COMMON_FIELDS, PHASES, SAMPLE_FIELDS, now_iso
from ..results.model import CaseResult, ColdEvidence, Results, Sample
from ..results.runtimes import Runtimes
from ..results.validate import sample_problem
from ..results.writer import ResultsWriter

if TYPE_CHECKING:
    from ..provision.environments import Environment
    from ..provision.project_source import ProjectSource

CACHE_MODES = ("cold", "warm")
STDERR_TAIL_CHARS = 2000


def probe_env(settings: RunSettings, cache_dir: Path, cache: str, backend: str | None = None) -> dict[str, str]:
    """The child's environment for ``settings`` (``target.child_environ``, the one place it is built); ``backend``: the
    case's, whose declared persistent caches it pins beside the built-in ones."""
    return child_environ(settings.target, settings.threads, cache_dir, cache, backend=backend)


def count_files(folder: Path) -> int:
    return sum(len(files) for _, _, files in os.walk(folder)) if folder.exists() else 0


def tail(path: Path, chars: int = STDERR_TAIL_CHARS) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return text[-chars:]


def run_sample(case: Case, kind: str, cache: str, index: int, settings: RunSettings,
               cache_dir: Path | None = None) -> Sample:
    """Spawn one probe process and turn its report into a :class:`Sample`."""
    fields = _run_sample(case, kind, cache, index, settings, cache_dir)
    if isinstance(fields.get("runtimes"), dict):
        fields["runtimes"] = Runtimes.from_json(fields["runtimes"])
    return Sample(**fields)


def _run_sample(case: Case, kind: str, cache: str, index: int, settings: RunSettings,
                cache_dir: Path | None) -> dict:
    workdir = Path(tempfile.mkdtemp(prefix="ttfg-sample-"))
    own_cache = cache_dir is None
    cache_dir = cache_dir or workdir / "cache"
    cache_dir.mkdir(parents=True, exist_ok=True)
    report, out_log, err_log = workdir / "report.json", workdir / "stdout.log", workdir / "stderr.log"
    cmd = [settings.target.python, "-m", "ttfg.measure.probe", "--case", json.dumps(case.to_json()), "--kind", kind,
           "--report", str(report)]
    if settings.python_allocators and kind == "allocations":
        cmd.append("--python-allocators")
    sample: dict = {"kind": kind, "ok": False, "index": index, "cache": cache, "error": None, "stderr_tail": None,
                    "started_at": now_iso(), "process_wall_s": None}
    env = probe_env(settings, cache_dir, cache, case.backend)
    cpu = None
    if kind == "instructions":
        usable, why = instructions.availability()
        if not usable:
            sample.update(error=f"instruction counting unavailable: {why}", instructions_note=why)
            shutil.rmtree(workdir, ignore_errors=True)
            return sample
        cpu = instructions.next_cpu()
        cmd = instructions.command(workdir, cpu) + cmd
        env = instructions.probe_env(env)
    entries_before = count_files(cache_dir)
    try:
        with open(out_log, "wb") as out_fh, open(err_log, "wb") as err_fh:
            spawned = time.monotonic()
            proc = subprocess.Popen(cmd, stdout=out_fh, stderr=err_fh, stdin=subprocess.DEVNULL,
                                    env=env, cwd=workdir,
                                    start_new_session=True)
            _RUNNING.add(proc)
            try:
                status, usage, timed_out = wait_with_timeout(proc, settings.timeout_s)
            finally:
                _RUNNING.discard(proc)
            ended = time.monotonic()
        sample["process_wall_s"] = ended - spawned
        stderr = tail(err_log)
        if timed_out:
            sample.update(error=f"timed out after {settings.timeout_s:g} s", stderr_tail=stderr)
            return sample
        try:
            data = json.loads(report.read_text())
            if not isinstance(data, dict):
                raise ValueError("report is not a JSON object")
        except (OSError, ValueError) as exc:
            code = os.waitstatus_to_exitcode(status)
            sample.update(error=f"probe exited with status {code} and no valid report ({exc.__class__.__name__})",
                          stderr_tail=stderr)
            return sample
        if not data.get("ok"):
            sample.update(error=f"{data.get('error')} (in phase {data.get('phase')})", stderr_tail=stderr)
            return sample
        if kind == "timing":
            sample.update(timing_fields(data, spawned, usage, cache, entries_before))
        elif kind in ("allocations", "profile", "calls"):
            sample.update({k: data.get(k) for k in SAMPLE_FIELDS[kind]})
        else:
            try:
                sample.update(instruction_fields(workdir, data, usage))
                if cpu is not None:
                    sample["instructions_note"] += f"; {instructions.PINNED}"
            except (instructions.CountingError, ValueError, OSError) as exc:
                sample.update(error=f"callgrind: {exc}", stderr_tail=stderr)
                return sample
        problem = garbage(sample)
        if problem:  # keep what says what went wrong, drop the impossible measurements
            sample = {k: sample[k] for k in COMMON_FIELDS if k in sample}
            sample.update(error=f"probe reported garbage: {problem}", stderr_tail=stderr)
            return sample
        sample["ok"] = True
        return sample
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        if own_cache:
            shutil.rmtree(cache_dir, ignore_errors=True)


def wait_with_timeout(proc: subprocess.Popen, timeout_s: float):
    """Wait for the child with ``wait4`` (its whole reaped process tree's CPU and peak RSS)."""
    deadline = time.monotonic() + timeout_s
    delay = 0.002
    try:
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                proc.returncode = os.waitstatus_to_exitcode(status)
                return status, usage, False
            if time.monotonic() > deadline:
                kill_group(proc)
                _, status, usage = os.wait4(proc.pid, 0)
                proc.returncode = os.waitstatus_to_exitcode(status)
                return status, usage, True
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
    except BaseException:
        kill_group(proc)
        try:
            os.wait4(proc.pid, 0)
        except ChildProcessError:
            pass
        proc.returncode = -9
        raise


#: Probes running now, from any thread (the gate's count tier runs base and head at once).
_RUNNING: set[subprocess.Popen] = set()


def stop_running_probes() -> None:
    """Kill every probe this process is waiting for (its own children, by process group).

    A probe runs in its own session, so Ctrl-C reaches only the parent; the thread that
    waits for a probe then sees it end and records a failed sample.
    """
    for proc in list(_RUNNING):
        kill_group(proc)


def kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def timing_fields(data: dict, spawned: float, usage: resource.struct_rusage, cache: str, entries_before: int) -> dict:
    fields = {k: data.get(k) for k in SAMPLE_FIELDS["timing"] if k in data}
    fields["process_ttfg_s"] = data["first_grad_end_monotonic"] - spawned
    fields["cpu_s"] = usage.ru_utime + usage.ru_stime  # the probe and every child it reaped
    fields["peak_rss_bytes"] = int(max(usage.ru_maxrss * 1024, data.get("self_peak_rss_bytes") or 0))
    fields["cold_evidence"] = ColdEvidence.observe(data.get("counters") or {}, cache, entries_before,
                                                  data.get("cache_lookups"))
    return fields


def instruction_fields(workdir: Path, data: dict, usage: resource.struct_rusage) -> dict:
    """An instruction sample's fields from the callgrind dumps the probe left in ``workdir``.

    ``instructions`` is the first-gradient window alone; the build's dump (a probe since the
    build was counted) is the phase ``build`` of ``instructions_phases``, beside the gradient's
    phases where the backend splits them. The top functions are of every dump, the build's too.
    """
    window = instructions.read_window(workdir)
    gradient = {p: n for p, n in window.phases.items() if p != instructions.BUILD}
    build = window.phases.get(instructions.BUILD)
    phases = {**({instructions.BUILD: build} if build is not None else {}), **(gradient if len(gradient) > 1 else {})}
    return {"instructions": sum(gradient.values()), "instructions_tool": "callgrind",
            "instructions_scope": "first-gradient window" + ("; the build counted apart" if build is not None else ""),
            "instructions_phases": phases or None,
            "instructions_top": [f.to_json() for f in window.top],
            "instructions_note": instructions.NOT_COUNTED,
            "instructions_window_s": data.get("window_wall_s"), "runtimes": data.get("runtimes"),
            "instructions_cpu_s": usage.ru_utime + usage.ru_stime}


def garbage(sample: dict) -> str | None:
    """Why a reported sample cannot be true, or ``None``: what a results file would refuse to hold."""
    return sample_problem({**sample, "ok": True})


def new_results(cases: list[Case], skipped: Iterable[Skipped], settings: RunSettings,
                envs: "Mapping[str, Environment] | None" = None, project: "ProjectSource | None" = None) -> Results:
    """An empty results file for ``cases``: this machine's metadata, ``settings``, one entry per case.

    ``envs`` are the environments the probes run in, by name (a gate side's one, or the ones
    ``ttfg run --env`` cases name in ``Case.env``), recorded the same way on every route:
    ``environment.envs`` maps each name to what was read inside it (interpreter, key, every
    package's version). When every probe runs in one built environment, its versions replace
    this interpreter's in ``packages`` and the fingerprint: they are what was measured. ``project``, the
    user's project as the built environments' probes import it, is recorded as ``environment.project``:
    the commit installed, or the working tree's snapshot and the files that differ from ``HEAD``.
    """
    env_settings = {k: v for k, v in probe_env(settings, Path("<cache>"), "cold").items()
                    if k in metadata.THREAD_VARS}
    collected = metadata.collect(env_settings)
    fingerprint = metadata.fingerprint(env_settings)
    envs = dict(envs or {})
    if envs:
        collected["envs"] = {name: e.to_json() for name, e in envs.items()}
    if project is not None:
        collected["project"] = project.to_json()
    if len(envs) == 1:
        (env,) = envs.values()
        if not env.current:
            collected["packages"] = {**{name: env.version(name) for name in metadata.PACKAGES},
                                     "ttfg": collected["packages"].get("ttfg")}
            collected["python_executable"] = env.python
            fingerprint.packages = {**fingerprint.packages, **collected["packages"]}
    results = Results(collected, settings.to_json(), fingerprint=fingerprint)
    for case in cases:
        results.cases.append(CaseResult(case.id, case.model, case.backend, case.variant_dict))
    for skip in skipped:
        results.cases.append(CaseResult(skip.id, skip.model, skip.backend, {}, skipped=skip.reason))
    return results


class Runner:
    """Runs ``steps`` (default: :func:`~ttfg.measure.schedule.schedule`), saving to ``out`` after every sample."""

    def __init__(self, cases: list[Case], skipped: Iterable[Skipped], settings: RunSettings, out: Path | None,
                 steps: list[Step] | None = None, envs: "dict[str, Environment] | None" = None,
                 project: "ProjectSource | None" = None):
        self.cases, self.settings, self.out = cases, settings, out
        #: The environments named by the cases (``Case.env``): each case's probes run in its own.
        self.envs = dict(envs or {})
        #: The user's project, installed for the built environments (``project_source.py``); None: no config
        #: names one, and the plugins are linked in as this interpreter has them.
        self.project = project
        self.results = new_results(cases, skipped, settings, envs=self.envs, project=project)
        self.writer = ResultsWriter(self.results, out)
        self.steps = list(steps) if steps is not None else schedule(cases, settings)
        #: A built environment's import roots, made on first use: (the project or the plugins, ttfg's overlay).
        self._roots: tuple[Path | None, Path | None] | None = None

    def settings_for(self, case: Case) -> RunSettings:
        """The settings a case's probes run with: the target of the environment it names (``Case.env``)."""
        env = self.envs.get(case.env) if case.env else None
        if env is None or env.current:
            return self.settings
        if self._roots is None:
            from .cases import plugin_entry_points
            from ..provision.sources import plugins_overlay, ttfg_overlay

            # The user's project as installed from its install-path (else the library's plugins as this
            # interpreter has them), then ttfg by the sides' rule (``ttfg_overlay``): the library's own backend and
            # model run in the environment (the parent's path is not on a built environment's).
            if self.project is not None:
                self._roots = (self.project.root, ttfg_overlay(not env.current, self.project.installed.packages))
            else:
                self._roots = (plugins_overlay(plugin_entry_points(self.cases)), ttfg_overlay(not env.current))
        source, overlay = self._roots
        return replace(self.settings, target=ProbeTarget.of(env, source=source, overlay=overlay))

    def run(self, on_sample: Callable[[int, int, Case, Sample], None] | None = None) -> Results:
        """Run every step; on Ctrl-C the finished samples stay in the file and it is re-raised."""
        warm_dirs: dict[str, Path] = {}
        try:
            self.writer.save()  # inside: a first save that fails (a full disk) gives the file's lock up too
            if "warm" in self.settings.caches:
                for case in self.cases:  # populate persistent caches with one unrecorded run
                    warm_dirs[case.id] = Path(tempfile.mkdtemp(prefix="ttfg-warm-"))
                    run_sample(case, "timing", "warm", -1, self.settings_for(case), warm_dirs[case.id])
            for n, step in enumerate(self.steps):
                sample = run_sample(step.case, step.kind, step.cache, step.round, self.settings_for(step.case),
                                    warm_dirs.get(step.case.id) if step.cache == "warm" else None)
                self.writer.append(step.case.id, sample)
                if on_sample:
                    on_sample(n + 1, len(self.steps), step.case, sample)
            return self.writer.finish()
        finally:
            self.writer.close()  # an interruption or a crash gives the file up too
            for folder in warm_dirs.values():
                shutil.rmtree(folder, ignore_errors=True)


def failed_cases(results: Results) -> list[str]:
    """Cases that ran but produced no good timing sample."""
    return [c.id for c in results.cases if not c.skipped and not c.good("timing")]


__all__ = ["CACHE_MODES", "PHASES", "RunSettings", "Runner", "failed_cases", "new_results", "run_sample"]
