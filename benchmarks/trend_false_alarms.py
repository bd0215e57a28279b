"""Does the trend report cry wolf, and does it find real steps? Measured, on this machine.

Not a test: a measurement to run by hand and quote (docs/measurements.md, "Does the trend report cry wolf?"). It works
in a throwaway clone of this repository (committed HEAD), so nothing here is touched:

1. **A/A**: ``--aa`` commits of identical code (each only appends a line to a text file),
   each recorded with ``ttfg asv record`` (real cold processes, ``--repeat`` samples per
   commit, one commit at a time, whatever else the machine is doing; the load average is
   kept per commit). Then ``ttfg regressions --confirm`` on that history: every timing
   step it proposes is a false candidate, every confirmed regression a false alarm.
2. **Injected steps**, one trial each: a branch from the last A/A commit whose first
   commit adds real CPU work to the first gradient (``gate_injections``' ``python`` kind:
   a pure-Python loop in ``interpret.forward``, what a slower Python path costs, never a
   sleep), sized to SIZE % of the A/A history's median first-gradient CPU time, then
   ``--after`` commits recorded in all. The trial's history is the A/A commits plus its
   own, in a results folder of its own (asv keeps one file per commit), with the A/A
   analysis's confirmations; ``ttfg regressions --confirm`` on it. Is the injected step
   proposed (at its commit), confirmed by the paired re-run, and is anything else
   confirmed (a false alarm)? Each trial's commits are recorded later than the A/A part,
   so the drift between recordings is the real one.

``--busy-aa 8-14`` records those A/A commits beside processes that keep CPUs busy (load that
rises and comes back), ``--busy-trials N`` every N-th trial. Measured on this 2-core VM
(docs/measurements.md, runs 4 and 5): one or two such processes raised the load to 1.6-2.2 but moved none
of the first gradient's CPU time; the drift that hid steps in run 3 came at load 2.7-4.8
from other cold-process benchmarks.

For the first gradient's CPU time (``first_grad_cpu_s``) and its wall time
(``first_grad_s``) alike. The cheapest backend keeps it affordable: autograd on resnet15
(one case), allocation processes off. Prints a table and writes everything it measured as
JSON (``--out``, rewritten after every trial).

    .venv/bin/python benchmarks/trend_false_alarms.py                        # 20 A/A + 25 trials: ~1.5 h here
    .venv/bin/python benchmarks/trend_false_alarms.py --aa 6 --step 10:2 --repeat 3   # a quick look
    .venv/bin/python benchmarks/trend_false_alarms.py --busy-aa 8-14                  # with a busy stretch
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

import gate_injections as injections  # noqa: E402
from gate_power import _log as log, _repeat_nodes  # noqa: E402
from ttfg import fmt  # noqa: E402

CASE = ("resnet15", "autograd")
MACHINE = "bench-trend"
METRICS = ("first_grad_cpu_s", "first_grad_s")
KIND = "python"


def sh(cmd: list[str], cwd: Path, env: dict | None = None, check: bool = True) -> subprocess.CompletedProcess:
    out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if check and out.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    return out


def git(clone: Path, *args: str, env: dict | None = None) -> str:
    return sh(["git", "-c", "user.name=ttfg bench", "-c", "user.email=bench@ttfg", *args], clone,
              env=env).stdout.strip()


#: Commit dates a minute apart: history is ordered by commit date, and commits made within one
#: second would tie (the injected commit could sort after the next one).
_DATES = iter(range(int(time.time()), 2**31, 60))


def bench_env(home: Path, code: Path, repeat: int) -> dict:
    """The environment of every ttfg command here: its own HOME, ``code``'s harness, the one case."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TTFG_ASV_", "ASV"))}
    env.update(HOME=str(home), PYTHONPATH=str(code), TTFG_ASV_MODELS=CASE[0], TTFG_ASV_BACKENDS=CASE[1],
               TTFG_ASV_REPEAT=str(repeat), TTFG_ASV_ALLOCATIONS="0")
    return env


def load_average() -> float:
    return os.getloadavg()[0]


def save(out: dict, path: str | os.PathLike) -> None:
    """Write the run's document (atomically: a crash leaves the previous one)."""
    from ttfg.files import atomic_write_text

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(out, indent=1, default=str) + "\n")


def trial_row(trial: dict, analysis: dict) -> dict:
    """One trial's outcome: ``trial`` (number, size, amount, injected commit, loads) and what ``analysis`` found."""
    return {**trial, **{m: outcome(analysis, trial["commit"], m) for m in METRICS},
            "false_alarms": false_alarms(analysis, trial["commit"]), "candidates": len(analysis["timing_steps"]),
            "seconds": analysis["seconds"], "analysis": analysis}


def commit(clone: Path, note: str, amount: int = 0) -> str:
    """One commit: a note line, and on the first commit of a trial the injected work (``amount`` iterations)."""
    changed = ["BENCH_NOTES.txt"]
    if amount:
        changed.append(str(injections.apply(clone, KIND, amount).relative_to(clone)))
    with open(clone / "BENCH_NOTES.txt", "a") as fh:
        fh.write(note + "\n")
    # Only the code and the note: the history recorded so far is not committed (a checkout of
    # the next trial's branch would delete the result files this trial's commits held).
    git(clone, "add", "--", *changed)
    date = f"@{next(_DATES)} +0000"
    git(clone, "commit", "-qm", note, env={**os.environ, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date})
    return git(clone, "rev-parse", "HEAD")


def record(clone: Path, sha: str, env: dict, busy: int = 0) -> dict:
    """``ttfg asv record`` of one commit; ``busy``: beside that many processes that each keep a CPU busy."""
    before = load_average()
    started = time.monotonic()
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
    try:
        sh([sys.executable, "-m", "ttfg", "asv", "record", sha, "--machine", MACHINE, "--no-publish"], clone, env)
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
    return {"commit": sha, "load_before": before, "load_after": load_average(),
            "seconds": round(time.monotonic() - started, 1), "busy": busy}


def results_file(clone: Path, sha: str) -> Path:
    found = list((clone / "results" / MACHINE).glob(f"{sha[:8]}-*.json"))
    if len(found) != 1:
        raise SystemExit(f"expected one asv result file for {sha[:8]}, found {len(found)}")
    return found[0]


def trial_folder(clone: Path, name: str, shas: list[str]) -> Path:
    """A results folder holding only ``shas`` (asv files are one per commit), with the A/A confirmations."""
    folder = clone / "trials" / name
    machine = folder / MACHINE
    machine.mkdir(parents=True)
    shutil.copy(clone / "results" / "benchmarks.json", folder / "benchmarks.json")
    shutil.copy(clone / "results" / MACHINE / "machine.json", machine / "machine.json")
    for sha in shas:
        src = results_file(clone, sha)
        shutil.copy(src, machine / src.name)
    stored = clone / "results" / "confirmations.json"
    if stored.exists():
        shutil.copy(stored, folder / "confirmations.json")
    return folder


def analyse(clone: Path, env: dict, results: Path, budget: str, confirm_dir: str, code: Path | None = None) -> dict:
    """``ttfg regressions --confirm`` on ``results``; then the timing steps as the report sees them.

    ``code``: the checkout whose ttfg analyses (default: the clone's own); ``python -m``
    puts the working folder first on the path, so the command runs from there.
    """
    started, load = time.monotonic(), load_average()
    proc = sh([sys.executable, "-m", "ttfg", "regressions", "--results", str(results), "--confirm", "--budget",
               budget, "--confirm-dir", str(clone / confirm_dir), "--repo", str(clone)], code or clone, env,
              check=False)
    from ttfg.history import asv_results, confirm as confirmations
    from ttfg.app.report import prepare

    prepared = prepare(asv_results.load(results, dropna=True), [],
                       confirmations=confirmations.load(results / confirmations.FILE_NAME))
    steps = prepared.trends.steps
    timing = steps[~steps["deterministic"].astype(bool)] if len(steps) else steps
    rows = []
    for r in timing.itertuples(index=False):
        conf = r.confirmation if isinstance(r.confirmation, dict) else {}
        verdict = conf.get("verdict") or {}
        rows.append({"metric": r.metric, "commit_before": r.commit_before, "commit_after": r.commit_after,
                     "kind": r.kind, "change": r.change, "status": r.status, "p": r.p_value,
                     "confirmation": conf.get("reason"), "pairs": conf.get("pairs"),
                     "confirmed_ratio": verdict.get("ratio")})
    return {"exit": proc.returncode, "seconds": round(time.monotonic() - started, 1), "load_before": load,
            "dismissed": prepared.trends.dismissed, "timing_steps": rows, "output": proc.stdout[-2000:]}


def median_cpu(clone: Path) -> float:
    from ttfg.history import asv_results

    df = asv_results.load(clone / "results", dropna=True)
    rows = df[(df["benchmark"] == "ttfg.track_first_grad_cpu_seconds") & (df["backend"] == CASE[1])]
    return statistics.median(v for s in rows["samples"] if s for v in s)


def false_alarms(analysis: dict, injected: str | None = None) -> list[dict]:
    """Confirmed timing regressions anywhere but at the injected commit."""
    return [r for r in analysis["timing_steps"]
            if r["status"] == "confirmed" and r["kind"] == "regression" and r["commit_after"] != injected]


def outcome(analysis: dict, injected: str, metric: str) -> dict:
    """What the analysis said of the injected step, for one metric."""
    hits = [r for r in analysis["timing_steps"] if r["metric"] == metric and r["commit_after"] == injected]
    if not hits:
        return {"proposed": False, "status": "not proposed"}
    r = hits[0]
    return {"proposed": True, "status": r["status"], "kind": r["kind"], "change": r["change"], "p": r["p"],
            "pairs": r["pairs"], "confirmed_ratio": r["confirmed_ratio"]}


def _step(text: str) -> tuple[float, int]:
    try:
        size, trials = text.split(":")
        size_f, trials_i = float(size), int(trials)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected SIZE:TRIALS (percent:count), e.g. 10:20, got {text!r}") from None
    if not (0 < size_f <= 500) or trials_i < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: size must be in (0, 500] percent and trials >= 0")
    return size_f, trials_i


def _range(text: str) -> tuple[int, int]:
    try:
        first, last = (int(x) for x in text.split("-"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected FIRST-LAST, for example 8-14") from None
    if not 1 <= first <= last:
        raise argparse.ArgumentTypeError(f"{text!r}: expected 1 <= FIRST <= LAST")
    return first, last


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--aa", type=int, default=20, help="A/A commits (default: 20)")
    parser.add_argument("--step", type=_step, action="append", metavar="SIZE:TRIALS",
                        help="injected steps: SIZE percent of the first gradient's CPU time, TRIALS of them "
                             "(repeatable; default: 10:20 and 25:5)")
    parser.add_argument("--after", type=int, default=2,
                        help="commits recorded in each trial, the injected one first (default: 2, the fewest a "
                             "step is tested with)")
    parser.add_argument("--repeat", type=int, default=5, help="cold processes per commit (default: 5)")
    parser.add_argument("--busy-aa", type=_range, default=(0, 0), metavar="FIRST-LAST",
                        help="record A/A commits FIRST to LAST (counted from 1) beside --busy-procs processes that "
                             "each keep a CPU busy: load that rises and comes back (default: none)")
    parser.add_argument("--busy-trials", type=int, default=0, metavar="N",
                        help="record every N-th trial beside those busy processes (default: 0, none)")
    parser.add_argument("--busy-procs", type=int, default=os.cpu_count() or 1, metavar="N",
                        help="busy processes (default: one per CPU)")
    parser.add_argument("--aa-budget", default="10m", help="--confirm budget of the A/A analysis (default: 10m)")
    parser.add_argument("--budget", default="4m", help="--confirm budget of each trial (default: 4m)")
    parser.add_argument("--out", default="runs/trend-false-alarms.json")
    parser.add_argument("--keep", metavar="DIR", help="keep the clone here (default: a temporary folder, removed)")
    parser.add_argument("--render", metavar="FILE", help="print the tables of an earlier --out file instead of running")
    parser.add_argument("--reanalyse", metavar="DIR",
                        help="analyse and confirm the histories a run kept (--keep DIR, its --out) again with this "
                             "checkout's code; the measured histories stay as recorded (stored as 'reanalysis')")
    args = parser.parse_args(argv)
    if args.render:
        out = json.loads(Path(args.render).read_text())
        print(summary(out))
        if "reanalysis" in out:
            redo = out["reanalysis"]
            print(f"\nanalysed again with {redo['code'][:10]}:\n"
                  + summary({**out, "aa": redo["aa"], "trials": redo["trials"]}))
        return 0
    if args.reanalyse:
        return reanalyse(Path(args.reanalyse), Path(args.out), args.budget, args.aa_budget)
    steps = args.step or [(10.0, 20), (25.0, 5)]
    if args.after < 2:
        parser.error("--after must be at least 2: a step needs two commits on each side")

    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="ttfg-trend-bench-"))
    clone = work / "clone"
    home = work / "home"
    home.mkdir(parents=True, exist_ok=True)
    sh(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(clone)], ROOT)
    shutil.rmtree(clone / "results", ignore_errors=True)  # the shipped history is not this experiment's
    git(clone, "checkout", "-q", "-B", "main")
    env = bench_env(home, clone, args.repeat)
    sh([sys.executable, "-m", "asv", "machine", "--yes", "--machine", MACHINE], clone, env)
    out: dict = {"case": "/".join(CASE), "repeat": args.repeat, "aa_commits": args.aa, "after": args.after,
                 "commit": git(ROOT, "rev-parse", "HEAD"), "host": os.uname().nodename, "cpus": os.cpu_count(),
                 "busy_aa": list(args.busy_aa), "busy_trials": args.busy_trials, "busy_procs": args.busy_procs,
                 "recorded": [], "trials": []}
    try:
        aa = []
        for i in range(args.aa):
            sha = commit(clone, f"A/A commit {i + 1}: identical code")
            aa.append(sha)
            busy = args.busy_procs if args.busy_aa[0] <= i + 1 <= args.busy_aa[1] else 0
            out["recorded"].append({**record(clone, sha, env, busy), "phase": "A/A"})
            log(f"A/A {i + 1}/{args.aa}: {sha[:8]} load {out['recorded'][-1]['load_before']:.1f}")
        out["aa"] = analyse(clone, env, clone / "results", args.aa_budget, "runs/confirm-aa")
        log(f"A/A analysis: {len(out['aa']['timing_steps'])} timing candidate(s), "
            f"{len(false_alarms(out['aa']))} confirmed regression(s)")
        save(out, args.out)
        base_cpu = median_cpu(clone)
        per_iteration = injections.seconds_per_iteration(KIND, 200_000, clock="process_time")
        nodes, _ = _repeat_nodes(CASE[0])
        out.update(base_first_grad_cpu_s=base_cpu, cpu_s_per_iteration=per_iteration, repeat_nodes=nodes)
        tip = aa[-1]
        n = 0
        for size, trials in steps:
            amount = max(1, round(size / 100 * base_cpu / per_iteration / nodes))
            for t in range(trials):
                n += 1
                git(clone, "checkout", "-q", "-B", f"trial-{n}", tip)
                shas = [commit(clone, f"trial {n}: +{size:g} % ({amount} iterations per Repeat node), commit {j + 1}",
                               amount if j == 0 else 0) for j in range(args.after)]
                busy = args.busy_procs if args.busy_trials and n % args.busy_trials == 0 else 0
                recorded = [{**record(clone, sha, env, busy), "phase": f"trial {n}"} for sha in shas]
                out["recorded"] += recorded
                analysis = analyse(clone, env, trial_folder(clone, f"t{n}", aa + shas), args.budget,
                                   f"runs/confirm-t{n}")
                row = trial_row({"trial": n, "size_percent": size, "amount": amount, "commit": shas[0],
                                 "loads": [r["load_before"] for r in recorded], "busy": busy}, analysis)
                out["trials"].append(row)
                save(out, args.out)
                cpu, wall = row["first_grad_cpu_s"], row["first_grad_s"]
                log(f"trial {n} (+{size:g} %): CPU {cpu['status']}"
                    + (f" ({fmt.change(cpu['change'])})" if cpu.get("change") is not None else "")
                    + f"; wall {wall['status']}; {len(row['false_alarms'])} false alarm(s); "
                      f"load {max(row['loads']):.1f}")
    finally:
        save(out, args.out)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(summary(out))
    print(f"details: {args.out}")
    return 0


def reanalyse(work: Path, path: Path, budget: str, aa_budget: str) -> int:
    """Analyse and confirm a kept run's histories again with this checkout's code (new candidates only)."""
    out = json.loads(path.read_text())
    clone = work / "clone"
    env = bench_env(work / "home", ROOT, out["repeat"])
    aa = [r["commit"] for r in out["recorded"] if r["phase"] == "A/A"]
    redo: dict = {"code": git(ROOT, "rev-parse", "HEAD"), "trials": []}
    shutil.rmtree(clone / "trials" / "aa-again", ignore_errors=True)
    redo["aa"] = analyse(clone, env, trial_folder(clone, "aa-again", aa), aa_budget, "runs/confirm-aa-again", ROOT)
    for t in out["trials"]:
        folder = clone / "trials" / f"t{t['trial']}"
        # Start from the A/A analysis's confirmations, as the trial did: its own are re-measured.
        shutil.copy(clone / "results" / "confirmations.json", folder / "confirmations.json")
        analysis = analyse(clone, env, folder, budget, f"runs/confirm-t{t['trial']}-again", ROOT)
        row = trial_row({k: t[k] for k in ("trial", "size_percent", "amount", "commit", "loads")}, analysis)
        redo["trials"].append(row)
        log(f"trial {t['trial']} (+{t['size_percent']:g} %) again: CPU {row['first_grad_cpu_s']['status']}; "
            f"wall {row['first_grad_s']['status']}; {len(row['false_alarms'])} false alarm(s)")
        out["reanalysis"] = redo
        save(out, path)
    print(summary({**out, "aa": redo["aa"], "trials": redo["trials"]}))
    return 0


def summary(out: dict) -> str:
    """The table for docs/measurements.md, from an ``--out`` document."""
    loads = [r["load_before"] for r in out["recorded"]]
    aa = out.get("aa", {})
    lines = [f"recorded {len(out['recorded'])} commits, {out['repeat']} cold processes each; load average "
             f"{min(loads):.1f}-{max(loads):.1f} (median {statistics.median(loads):.1f})",
             f"A/A ({out['aa_commits']} commits): {len(aa.get('timing_steps', []))} timing candidate(s) "
             f"({', '.join(sorted({r['metric'] for r in aa.get('timing_steps', [])})) or 'none'}), "
             f"{len(false_alarms(aa)) if aa else 0} confirmed regression(s)",
             "", "| step | metric | trials | proposed | confirmed | false confirmed regressions | median change seen |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for size in sorted({t["size_percent"] for t in out["trials"]}):
        rows = [t for t in out["trials"] if t["size_percent"] == size]
        for metric in METRICS:
            seen = [t[metric]["change"] for t in rows if t[metric].get("change") is not None]
            lines.append(f"| +{size:g} % | `{metric}` | {len(rows)} | {sum(t[metric]['proposed'] for t in rows)} | "
                         f"{sum(t[metric]['status'] == 'confirmed' for t in rows)} | "
                         f"{sum(len(t['false_alarms']) for t in rows)} | "
                         + (fmt.change(statistics.median(seen)) if seen else "–") + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
