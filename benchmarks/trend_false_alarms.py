"""Does the trend report cry wolf, and does it find real steps? Measured, on this machine.

Not a test: a measurement to run by hand and quote (README, "Trends that don't cry wolf").
It works in a throwaway clone of this repository (committed HEAD), so nothing here is
touched:

1. **A/A**: ``--aa`` commits of identical code (each only appends a line to a text file),
   each recorded with ``ttfg asv record`` (real cold processes, ``--repeat`` samples per
   commit, recorded one commit at a time, whatever else the machine is doing; the load
   average is kept per commit). Then ``ttfg regressions --confirm`` on that history:
   every timing step it proposes is a false candidate, every confirmed one a false alarm.
2. **Injected steps**: the history goes on with ``--per-level`` commits each at +10 %,
   back at the base, and at +25 %, where the step is a real ``time.sleep`` added to the
   autograd backend's first gradient, sized from the A/A history's median first
   gradient. ``ttfg regressions --confirm`` again: is each injected step proposed
   (within one commit), and confirmed?

The cheapest backend keeps it affordable: autograd on resnet15 (one case), allocation
processes off. Prints a table and writes everything it measured as JSON (``--out``).

    PYTHONPATH=. python benchmarks/trend_false_alarms.py                      # ~35 commits, ~30 min here
    PYTHONPATH=. python benchmarks/trend_false_alarms.py --aa 6 --per-level 3 --repeat 3   # a quick look
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
sys.path.insert(0, str(ROOT))

CASE = ("resnet15", "autograd")
MACHINE = "bench-trend"
ENGINE = "harness/engines/autograd_numpy.py"
ANCHOR = "    def gradient(self):\n        return self.fn(self.params, self.x)\n"


def sh(cmd: list[str], cwd: Path, env: dict | None = None, check: bool = True) -> subprocess.CompletedProcess:
    out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if check and out.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    return out


def git(clone: Path, *args: str) -> str:
    return sh(["git", "-c", "user.name=ttfg bench", "-c", "user.email=bench@ttfg", *args], clone).stdout.strip()


def load_average() -> float:
    return os.getloadavg()[0]


def commit(clone: Path, sleep_s: float, note: str) -> str:
    """One commit: the engine with ``sleep_s`` injected into its first gradient (0: none), plus a note line."""
    engine = clone / ENGINE
    text = engine.read_text()
    start = text.find("    def first_gradient(self):  # injected by benchmarks/trend_false_alarms.py")
    if start >= 0:
        end = text.index("\n\n", start) + 2
        text = text[:start] + text[end:]
    if sleep_s > 0:
        text = text.replace(ANCHOR, ANCHOR + (
            "\n    def first_gradient(self):  # injected by benchmarks/trend_false_alarms.py\n"
            f"        import time\n        time.sleep({sleep_s!r})\n        return super().first_gradient()\n\n"), 1)
        assert "injected by" in text, "the autograd engine changed shape; update ANCHOR"
    engine.write_text(text)
    with open(clone / "BENCH_NOTES.txt", "a") as fh:
        fh.write(note + "\n")
    git(clone, "add", "-A")
    git(clone, "commit", "-qm", note)
    return git(clone, "rev-parse", "HEAD")


def record(clone: Path, sha: str, env: dict) -> dict:
    before = load_average()
    started = time.monotonic()
    sh([sys.executable, "-m", "harness", "asv", "record", sha, "--machine", MACHINE, "--no-publish"], clone, env)
    return {"commit": sha, "load_before": before, "load_after": load_average(),
            "seconds": round(time.monotonic() - started, 1)}


def confirm(clone: Path, env: dict, budget: str) -> dict:
    """``ttfg regressions --confirm`` in the clone; then the steps as the report sees them."""
    started, load = time.monotonic(), load_average()
    proc = sh([sys.executable, "-m", "harness", "regressions", "--results", "results", "--confirm", "--budget", budget,
               "--confirm-dir", "runs/confirm"], clone, env, check=False)
    from harness.history import asv_results, confirm as confirmations
    from harness.present.report import prepare

    prepared = prepare(asv_results.load(clone / "results", dropna=True), [],
                       confirmations=confirmations.load(clone / "results" / confirmations.FILE_NAME))
    steps = prepared.trends.steps
    timing = steps[~steps["deterministic"].astype(bool)] if len(steps) else steps
    rows = [{"metric": r.metric, "case": r.case, "commit_after": r.commit_after, "kind": r.kind,
             "change": r.change, "status": r.status, "p": r.p_value,
             "confirmation": (r.confirmation or {}).get("reason") if isinstance(r.confirmation, dict) else None}
            for r in timing.itertuples(index=False)]
    return {"exit": proc.returncode, "seconds": round(time.monotonic() - started, 1), "load_before": load,
            "dismissed": prepared.trends.dismissed, "timing_steps": rows, "output": proc.stdout[-3000:]}


def median_first_grad(clone: Path) -> float:
    from harness.history import asv_results

    df = asv_results.load(clone / "results", dropna=True)
    fg = df[(df["benchmark"] == "ttfg.track_first_grad_seconds") & (df["backend"] == CASE[1])]
    samples = [v for s in fg["samples"] if s for v in s]
    return statistics.median(samples)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--aa", type=int, default=20, help="A/A commits (default: 20)")
    parser.add_argument("--per-level", type=int, default=5, help="commits per level after the A/A part (default: 5)")
    parser.add_argument("--repeat", type=int, default=5, help="cold processes per commit (default: 5)")
    parser.add_argument("--budget", default="12m", help="ttfg regressions --confirm budget per phase (default: 12m)")
    parser.add_argument("--out", default="runs/trend-false-alarms.json")
    parser.add_argument("--keep", metavar="DIR", help="keep the clone here (default: a temporary folder, removed)")
    args = parser.parse_args(argv)

    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="ttfg-trend-bench-"))
    clone = work / "clone"
    home = work / "home"
    home.mkdir(parents=True, exist_ok=True)
    sh(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(clone)], ROOT)
    shutil.rmtree(clone / "results", ignore_errors=True)  # the shipped history is not this experiment's
    git(clone, "checkout", "-q", "-B", "main")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TTFG_ASV_", "ASV"))}
    env.update(HOME=str(home), PYTHONPATH=str(clone), TTFG_ASV_MODELS=CASE[0], TTFG_ASV_BACKENDS=CASE[1],
               TTFG_ASV_REPEAT=str(args.repeat), TTFG_ASV_ALLOCATIONS="0")
    sh([sys.executable, "-m", "asv", "machine", "--yes", "--machine", MACHINE], clone, env)
    out: dict = {"case": "/".join(CASE), "repeat": args.repeat, "aa_commits": args.aa, "per_level": args.per_level,
                 "host": os.uname().nodename, "cpus": os.cpu_count(), "recorded": []}
    try:
        aa = []
        for i in range(args.aa):
            sha = commit(clone, 0.0, f"A/A commit {i + 1}: identical code")
            aa.append(sha)
            out["recorded"].append({**record(clone, sha, env), "phase": "A/A"})
            print(f"A/A {i + 1}/{args.aa}: {sha[:8]} load {out['recorded'][-1]['load_before']:.1f}", flush=True)
        out["aa"] = confirm(clone, env, args.budget)
        base = median_first_grad(clone)
        out["base_first_grad_s"] = base
        injected = []
        for label, factor in (("+10 %", 1.10), ("base", 1.0), ("+25 %", 1.25)):
            sleep_s = round(base * (factor - 1), 6)
            for j in range(args.per_level):
                sha = commit(clone, sleep_s, f"level {label} ({sleep_s * 1e3:.2f} ms sleep), commit {j + 1}")
                if j == 0:
                    injected.append({"level": label, "factor": factor, "sleep_s": sleep_s, "commit": sha})
                out["recorded"].append({**record(clone, sha, env), "phase": label})
                print(f"{label} {j + 1}/{args.per_level}: {sha[:8]} load {out['recorded'][-1]['load_before']:.1f}",
                      flush=True)
        out["injected_phase"] = confirm(clone, env, args.budget)
        found = out["injected_phase"]["timing_steps"]
        order = [r["commit"] for r in out["recorded"]]
        for inj in injected:
            at = order.index(inj["commit"])
            near = {order[k] for k in range(max(0, at - 1), min(len(order), at + 2))}
            hits = [r for r in found if r["metric"] == "first_grad_s" and r["commit_after"] in near]
            inj["proposed"] = bool(hits)
            inj["status"] = hits[0]["status"] if hits else "not proposed"
            inj["change"] = hits[0]["change"] if hits else None
        out["injected"] = injected
    finally:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(out, indent=1, default=str))
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    aa_rows = out.get("aa", {}).get("timing_steps", [])
    loads = [r["load_before"] for r in out["recorded"]]
    print(f"\nrecorded {len(out['recorded'])} commits, {args.repeat} cold processes each; load average "
          f"{min(loads):.1f}-{max(loads):.1f} (median {statistics.median(loads):.1f})")
    print(f"A/A ({args.aa} commits): {len(aa_rows)} timing candidate(s), "
          f"{sum(r['status'] == 'confirmed' and r['kind'] == 'regression' for r in aa_rows)} confirmed regression(s), "
          f"{out.get('aa', {}).get('dismissed')} median step(s) dismissed by the sample test")
    for inj in out.get("injected", []):
        print(f"injected {inj['level']} (sleep {inj['sleep_s'] * 1e3:.2f} ms): proposed {inj['proposed']}, "
              f"{inj['status']}" + (f", measured {inj['change']:+.1%}" if inj["change"] is not None else ""))
    print(f"details: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
