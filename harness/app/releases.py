"""TTFG across real releases: one environment per release, adjacent releases gated as pairs.

Why pairs and not medians: a step between two releases read off two medians measured
minutes apart is drift as much as code. Each adjacent pair of releases is measured the way
the gate measures a base and a head: interleaved cold processes, paired, sequential test,
an interval on the ratio. What is measured, per pair and case:

- **wall time** of the first gradient, the gate's time tier;
- **CPU time** of the first gradient, from the same processes, paired the same way: on
  a 2-core machine newer XLA compiles in parallel threads, so wall and CPU can move in
  opposite directions;
- **instructions** in the first-gradient window (callgrind, one process per release,
  reused by both pairs it is in), with the per-phase split (trace, lower, compile,
  execute) where the backend splits phases, against the count tier's margin;
- the **phases** (trace, lower, compile, execute) of the timing processes, paired.

Each pair's verdict is decided as the gate's tiers decide: an instruction count beyond its
margin settles it (regressed or improved), else the wall-time verdict does; CPU time is
shown beside them, never hidden. A release whose environment cannot be built, or that
cannot run a case, is a failed cell with its error; the sweep goes on, pairing the releases
on either side of it. The exit code is 1 when a pair's verdict is a regression, else 2 when
a cell could not be measured, else 0.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from .. import fmt, metrics
from ..decide.gate_loop import run_gate
from ..decide.gate_settings import GateSettings
from ..errors import TtfgError
from ..files import atomic_write_text
from ..provision import environments
from ..provision.releases import Release
from ..measure.runner import run_sample
from ..measure.sides import Side, SideOpener
from ..measure.cases import plugin_entry_points
from ..provision.sources import plugins_overlay, self_overlay
from ..provision.worktrees import Revision
from .environments import project_for
from ..results.format import strict_json
from ..results.sweep_file import FORMAT, VERSION

PHASES = ("trace", "lower", "compile", "execute")


@dataclass
class SweepRequest:
    """What to sweep: the releases (``provision.releases.plan``), the cases, and how to gate each pair."""

    releases: list[Release]
    cases: list
    out_dir: Path
    #: The gate's settings for each pair (``budget_s`` is per pair; tiers are the time tier).
    settings: GateSettings
    instructions: bool = True
    notes: list[str] = field(default_factory=list)
    #: The user's project folder (the config's install-path), installed into every release's environment when
    #: it declares the plugins the cases use (``app.environments.project_for``).
    project_folder: Path | None = None
    #: ``--snapshot-limit``: the most bytes of uncommitted files a snapshot of the project takes (None: the default).
    snapshot_limit: int | None = None


class SweepEvents:
    """What the sweep tells while it runs; the CLI prints it."""

    def note(self, text: str) -> None:
        """A line of progress."""

    def pair(self, event) -> None:
        """A timing pair of the current gate finished (``decide.gate_loop.PairEvent``)."""


def _median(values):
    values = [v for v in values if v is not None and math.isfinite(v)]
    return statistics.median(values) if values else None


def _revision(release: Release) -> Revision:
    return Revision(release.name, "0" * 40, f"{release.package} {release.version}")


def _cell_from_samples(samples) -> dict:
    """A release's medians for one case, from its good timing samples (every gate it was in)."""
    good = [s for s in samples if s.ok and s.kind == "timing"]
    cell = {"samples": len(good)}
    for name in ("first_grad_s", "first_grad_cpu_s", "process_ttfg_s", "import_s", "build_s"):
        cell[name] = _median([s.value(name) for s in good])
    cell["phases"] = {p: _median([getattr(s, f"{p}_s", None) for s in good]) for p in PHASES}
    counters = {}
    for s in good:
        for k, v in (s.counters or {}).items():
            counters.setdefault(k, []).append(v)
    cell["counters"] = {k: _median(v) for k, v in counters.items() if all(isinstance(x, (int, float)) for x in v)}
    return cell


def _paired(base_samples, head_samples, metric: str) -> tuple[list[float], list[float]]:
    by_pair = {}
    for role, samples in (("base", base_samples), ("head", head_samples)):
        for s in samples:
            if s.ok and s.kind == "timing" and s.pair is not None:
                v = s.value(metric)
                if v is not None and v > 0:
                    by_pair.setdefault(s.pair, {})[role] = v
    pairs = [p for _, p in sorted(by_pair.items()) if len(p) == 2]
    return [p["base"] for p in pairs], [p["head"] for p in pairs]


def _verdict_json(verdict) -> dict:
    return strict_json(verdict.to_json())


def _instruction_json(base: dict | None, head: dict | None, min_effect: float = 0.0, case_id: str | None = None,
                      margins: dict | None = None) -> dict | None:
    """One count per release compared, total and per phase, by the gate's per-case rule (``decide/count_margins``).

    The case's own margin decides (``margins``: calibrated under both releases' keys, ``count_margins.for_sides``;
    else the default for what it runs on, each entry saying which and why), with the
    gate's band: a change at the margin's edge is no count verdict (``inconclusive``: wall time decides the
    pair). ``min_effect`` stays the floor a *step* between releases needs: a change beyond the margin but
    under it is ``unchanged``, and says so (XLA's compile count moves ~1.6 % between processes of one
    release; a sweep on 2026-12-04 called a +1.7 % move on 0.8.3 -> 0.9.2 a step).
    """
    from ..decide import count_margins
    from ..decide.stats import compare_counter

    if not base or not head or not base.get("instructions") or not head.get("instructions"):
        return None
    names = ("instructions", *(f"instructions_{p}" for p in PHASES))
    from .. import engines
    from ..results.runtimes import Runtimes, merged, runs_on as measured_or_declared

    declared = engines.runs_on(case_id.split("/")[1]) if case_id and case_id.count("/") >= 1 else frozenset()
    # What the two count processes loaded (their ``runtimes``), not what the backend declares, sets an uncalibrated
    # margin's floor: a plugin on jax that declares only its own package still gets jaxlib's wider one.
    measured = merged(Runtimes.from_json(side["runtimes"]) for side in (base, head)
                      if isinstance(side.get("runtimes"), dict))
    on = measured_or_declared(measured, frozenset(declared))
    margins = {n: m if m is not None and m.calibrated else count_margins.default_margin(n, on, m.why if m else None)
               for n in names for m in [(margins or {}).get(n)]}
    out = {}
    for name, b, h in [("instructions", base["instructions"], head["instructions"]),
                       *((f"instructions_{p}", (base.get("phases") or {}).get(p), (head.get("phases") or {}).get(p))
                         for p in PHASES)]:
        if not b or not h:
            continue
        margin = margins[name]
        v = compare_counter([b], [h], threshold=margin.value)
        judged = count_margins.judge(v.ratio, margin, 1)
        entry = {"base": b, "head": h, "ratio": h / b, "margin": margin.value, "margin_source": margin.source(),
                 "min_effect": min_effect}
        if judged == "edge":
            entry["verdict"], entry["why"] = "inconclusive", "at the edge of its margin: wall time decides"
        elif judged in ("regressed", "improved") and abs(h / b - 1) < min_effect:
            entry["verdict"], entry["why"] = "unchanged", "beyond its margin, under the minimum effect a step needs"
        else:
            entry["verdict"] = judged
        out[name] = entry
    return out


def check_gradient(side: Side, case, run) -> dict:
    """``ttfg check`` of one case in the side's environment: ``{"status": ok|mismatch|error, "detail"}``."""
    import subprocess

    from ..measure.runner import probe_env

    settings = side.run_settings(run)
    env = probe_env(settings, Path(os.environ.get("TMPDIR", "/tmp")), "cold")
    variant = ",".join(f"{k}={v}" for k, v in case.variant)
    cmd = [settings.target.python, "-m", "ttfg", "check", "--model", case.model, "--backend", case.backend,
           "--variant", variant, "--format", "json"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=run.timeout_s,
                             stdin=subprocess.DEVNULL, cwd=env.get("TMPDIR") or "/tmp")
    except subprocess.TimeoutExpired:
        return {"status": "error", "detail": f"the gradient check took over {run.timeout_s:g} s"}
    status = {0: "ok", 1: "mismatch"}.get(out.returncode, "error")
    try:
        row = json.loads(out.stdout)["results"][0]
    except (ValueError, LookupError, TypeError):  # it never got to check: say what it printed last
        lines = [line.strip() for line in (out.stdout + out.stderr).splitlines() if line.strip()]
        return {"status": "error" if status == "ok" else status, "detail": (lines[-1] if lines else "")[-500:]}
    if row["status"] == "error":
        status = "error"
    detail = row["detail"] or (f"worst rel err {row['worst_error']:.2g} on {row['worst_tensor']}"
                               if row["worst_error"] is not None else "")
    return {"status": status, "detail": detail[-500:]}


def pair_decision(decided, instructions: dict | None) -> tuple[str, str, bool]:
    """A pair's verdict, the tier that decided it, and whether a side could not run, from the gate's case
    (``gate_outcome.CaseOutcome``) and the releases' instruction counts (``_instruction_json``).

    As the gate's tiers decide, a count beyond its margin settles the pair before wall time; but a side with
    no good sample in the pair's gate (``decide/unmeasured.py``) keeps the gate's verdict (head cannot run:
    regressed; base cannot run: inconclusive), whatever a count says: it is never "unchanged" or "improved".
    """
    from ..decide.unmeasured import side_of
    from ..results.gate_outcome import BASE_BROKEN, HEAD_BROKEN

    unmeasured = side_of(decided)
    counted = (instructions or {}).get("instructions")
    broken = decided.stop in (BASE_BROKEN, HEAD_BROKEN) or unmeasured is not None
    if unmeasured is None and counted and counted["verdict"] in ("regressed", "improved"):
        return counted["verdict"], "instructions", broken
    return decided.verdict.verdict, decided.tier, broken


def run(request: SweepRequest, events: SweepEvents | None = None, opener: SideOpener | None = None) -> dict:
    """Build every release's environment, count instructions once per release, gate each adjacent pair.

    Each release is a side opened by ``opener`` (default: ``measure.sides.SideOpener``, the gate's): its
    environment built, ttfg and the plugins on its path, located and checked to import its framework from itself.

    Returns the sweep document (also written to ``OUT/releases.json``, after every pair).

    Raises
    ------
    TtfgError
        Only for broken input before anything is measured; a release that fails is a cell.
    KeyboardInterrupt
        After writing what was finished (marked incomplete).
    """
    from ..measure import instructions as callgrind
    from ..measure.metadata import fingerprint

    events = events or SweepEvents()
    opener = opener or SideOpener()
    out_dir = request.out_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    settings = request.settings
    overlay = self_overlay()
    # A library's plugin backend or model runs in each release's environment: the project installed from its
    # install-path (the state recorded in the sweep), else as installed here (its packages and entry points);
    # either after ttfg on the path.
    project = project_for(True, request.cases, request.project_folder, events.note, request.snapshot_limit)
    plugins = project.root if project is not None else plugins_overlay(plugin_entry_points(request.cases))
    started = time.time()
    doc = {"format": FORMAT, "version": VERSION, "package": request.releases[0].package,
           "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)), "complete": False,
           "cases": [c.id for c in request.cases], "notes": list(request.notes),
           "settings": {**settings.to_json(), "budget_per_pair_s": settings.budget_s,
                        "instructions": request.instructions},
           "machine": fingerprint().to_json(), "load": {"start": list(os.getloadavg())},
           "releases": [], "pairs": [], "exit_code": None}
    if project is not None:
        doc["project"] = project.to_json()
    path = out_dir / "releases.json"

    def save():
        atomic_write_text(path, json.dumps(strict_json(doc), indent=1) + "\n")

    # 1. environments, each checked to import its framework from itself
    sides: dict[str, Side] = {}
    for release in request.releases:
        entry = {"version": release.version, "name": release.name, "requirements": list(release.requirements),
                 "env": None, "error": None, "cells": {}}
        doc["releases"].append(entry)
        try:
            side = opener.environment(_revision(release), environments.Request(
                release.name, release.requirements, f"ttfg releases {release.package}"), request.cases, settings.run,
                source=overlay, overlay=plugins, on_note=events.note)
        except TtfgError as exc:
            entry["error"] = str(exc)
            events.note(f"{release.name}: cannot be measured here: {exc}")
            continue
        env = side.env
        entry["env"] = {k: v for k, v in env.to_json().items() if k != "packages"}
        entry["env"]["packages"] = env.packages
        entry["imports"] = side.whence.to_json()
        sides[release.version] = side
        events.note(f"{release.name}: " + ", ".join(f"{k} {v}" for k, v in env.recorded().items() if v)
                    + (" (cached)" if env.cached else f" (built in {env.seconds:.1f} s)"))
    save()

    # 2. per release and case: is its gradient right (against the float64 reference, in its own
    #    environment), and can one cold process run it? A wrong gradient is never timed.
    samples: dict[tuple[str, str], list] = {}
    runs: dict[str, list[str]] = {}
    cells, done = len(request.cases) * len(sides), 0
    for case in request.cases:
        for version, side in sides.items():
            done += 1
            entry = next(e for e in doc["releases"] if e["version"] == version)
            checked = check_gradient(side, case, settings.run)
            entry["cells"].setdefault(case.id, {})["check"] = checked
            if checked["status"] != "ok":
                entry["cells"][case.id]["error"] = f"gradient check: {checked['status']}: {checked['detail']}"
                events.note(f"{side.revision.name} {case.id}: gradient check {checked['status']}: {checked['detail']}")
                continue
            sample = run_sample(case, "timing", "cold", -1, side.run_settings(settings.run))
            samples.setdefault((version, case.id), []).append(sample)
            entry["cells"][case.id].update(_cell_from_samples([sample]))
            if sample.ok:
                runs.setdefault(case.id, []).append(version)
                events.note(f"[{done}/{cells}] {side.revision.name} {case.id}: gradient ok, a cold run "
                            f"{fmt.seconds(sample.first_grad_s)} to the first gradient")
            else:
                entry["cells"][case.id]["error"] = sample.error
                events.note(f"{side.revision.name} cannot run {case.id}: {sample.error}")
    save()

    # 3. one instruction count per release and case (two at a time: load does not move counts)
    counts: dict[tuple[str, str], dict] = {}
    usable, why = callgrind.availability()
    if request.instructions and not usable:
        doc["notes"].append(f"instruction counts skipped: {why}")
        events.note(f"instruction counts skipped: {why}")
    elif request.instructions:
        jobs = [(v, case) for case in request.cases for v in runs.get(case.id, [])]
        events.note(f"counting instructions: {len(jobs)} callgrind process(es), two at a time")

        def count(job):
            version, case = job
            run = sides[version].run_settings(settings.run)
            return job, run_sample(case, "instructions", "cold", 0, run)

        with ThreadPoolExecutor(max_workers=2) as pool:
            for (version, case), sample in pool.map(count, jobs):
                counts[(version, case.id)] = ({"instructions": sample.instructions,
                                               "phases": sample.instructions_phases,
                                               **({"runtimes": sample.runtimes.to_json()} if sample.runtimes else {})}
                                              if sample.ok else {"error": sample.error})
                events.note(f"  {version} {case.id}: " + (f"{sample.instructions:,} instructions" if sample.ok
                                                           else f"failed: {sample.error}"))
        for entry in doc["releases"]:
            for case in request.cases:
                if (entry["version"], case.id) in counts:
                    entry["cells"].setdefault(case.id, {})["instructions"] = counts[(entry["version"], case.id)]
        save()

    # 4. adjacent pairs, gated; a release that cannot run a case drops out of that case's chain
    from ..decide import count_margins

    margin_store = count_margins.load()
    broken = any(len(runs.get(c.id, [])) < len(sides) for c in request.cases)
    regression = False
    for case in request.cases:
        chain = runs.get(case.id, [])
        for a, b in zip(chain, chain[1:]):
            pair_dir = out_dir / "pairs" / f"{case.id.replace('/', '_')}" / f"{a}..{b}"
            base, head = replace(sides[a], role="base"), replace(sides[b], role="head")
            events.note(f"gating {case.id}: {sides[a].revision.name} -> {sides[b].revision.name} "
                        f"(budget {settings.budget_s:.0f} s)")
            outcome = run_gate([case], [], base, head, settings, pair_dir, on_pair=events.pair,
                               on_note=events.note)
            from ..results import record

            files = {role: record.load(outcome.files[role]) for role in ("base", "head")}
            taken = {role: files[role].case(case.id).samples for role in files}
            samples.setdefault((a, case.id), []).extend(taken["base"])
            samples.setdefault((b, case.id), []).extend(taken["head"])
            decided = outcome.cases[0]
            pair = {"base": a, "head": b, "case": case.id, "verdict": decided.verdict.verdict, "tier": decided.tier,
                    "stop": decided.stop, "pairs": decided.pairs, "wall_s": round(decided.wall_s, 1),
                    "wall": _verdict_json(decided.verdict), "files": {k: str(v) for k, v in outcome.files.items()}}
            cpu = _paired(taken["base"], taken["head"], "first_grad_cpu_s")
            if len(cpu[0]) >= 2:
                from ..decide.stats import compare_paired

                pair["cpu"] = _verdict_json(compare_paired(*cpu, min_effect=settings.min_effect, alpha=settings.alpha))
            pair["phases"] = {}
            for p in PHASES:
                bp, hp = _paired(taken["base"], taken["head"], f"{p}_s")
                if len(bp) >= 2:
                    pair["phases"][p] = {"base": _median(bp), "head": _median(hp),
                                         "ratio": math.exp(statistics.fmean(math.log(h / x) for x, h in zip(bp, hp)))}
            pair["instructions"] = _instruction_json(counts.get((a, case.id)), counts.get((b, case.id)),
                                                     settings.min_effect, case.id,
                                                     count_margins.for_sides(case, {"base": base, "head": head},
                                                                             settings.run, margin_store))
            pair["verdict"], pair["tier"], cannot_run = pair_decision(decided, pair["instructions"])
            doc["pairs"].append(pair)
            regression |= pair["verdict"] == "regressed"
            broken |= cannot_run
            for version in (a, b):
                entry = next(e for e in doc["releases"] if e["version"] == version)
                entry["cells"].setdefault(case.id, {}).update(_cell_from_samples(samples[(version, case.id)]))
            save()
    broken |= any(e["error"] for e in doc["releases"]) or len(sides) < 2
    doc["complete"] = True
    doc["load"]["end"] = list(os.getloadavg())
    doc["wall_s"] = round(time.time() - started, 1)
    # A wrong gradient is a finding, as in ``ttfg check`` (exit 1), not an input that could not be measured.
    mismatch = any((cell.get("check") or {}).get("status") == "mismatch"
                   for e in doc["releases"] for cell in (e.get("cells") or {}).values())
    doc["exit_code"] = 1 if regression or mismatch else 2 if broken else 0
    save()
    return doc


__all__ = ["FORMAT", "SweepEvents", "SweepRequest", "pair_decision", "run"]
