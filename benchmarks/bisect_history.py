"""Real ``ttfg bisect`` runs on generated histories of this repository, timed, beside ``asv find``.

Why: the bisect's claim is "the culprit in about log2 N steps, in minutes, and no culprit
where there is no step"; that is only true of real processes on real commits. The script
clones this repository (``git clone --local --no-hardlinks``, the current commit) and, per
history, commits N changes on a branch from that commit: comment-only and unrelated ones,
and at one position an injection from ``gate_injections.py`` (``extra-op``: one more
operation per repeated block; ``python``: pure-Python work during jax.jit's trace, which no
structural counter sees). A history with ``--culprits 0`` has no injection at all. Then it
runs ``ttfg bisect --repo CLONE --good BASE --bad TIP`` in a fresh process and records what
it found, its steps, its comparisons and its wall time, with the load; with ``--asv-find``
it runs ``asv find BASE..TIP <benchmark>`` on the same history (asv builds its own
virtualenv once, from ``asv.conf.json``, and installs each commit it tests), and records what
asv named, how many commits it measured and its wall time.

    python benchmarks/bisect_history.py --commits 24 --culprits 17                 # one structural step, ~5 min
    python benchmarks/bisect_history.py --commits 32 --kind python --size 4 \\
        --culprits 5,11,17,23,29,0,0,0 --asv-find --out runs/bisect-history.json    # the issue's protocol
    python benchmarks/bisect_history.py --render runs/bisect-history.json         # its table again

``--size P`` sizes the ``python`` work to P % of the case's trace phase (``--relative-to
first_grad``: of its first gradient; measured here
with ``ttfg run`` on the base, and the work's cost per iteration timed in a fresh
interpreter), the way ``gate_power.py`` does. ``--out`` is rewritten after every history,
so an interrupted run keeps what it did. Exit code: 0 when every bisect named its injected
commit (or said "no step", exit 0, on a history without one), 1 otherwise, 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import gate_injections as injections  # noqa: E402


def _git(repo: Path, *args: str) -> str:
    out = subprocess.run(["git", "-C", str(repo), "-c", "user.name=ttfg bisect_history", "-c",
                          "user.email=bisect-history@localhost", *args], capture_output=True, text=True, timeout=300,
                         check=True)
    return out.stdout.strip()


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def make_history(clone: Path, branch: str, base: str, commits: int, culprit: int, kind: str,
                 amount: int) -> list[str]:
    """``commits`` commits on a new branch from ``base``; the one at ``culprit`` (1-based; 0: none) injects."""
    _git(clone, "checkout", "--quiet", "-B", branch, base)
    shas = [_git(clone, "rev-parse", "HEAD")]
    for n in range(1, commits + 1):
        if n == culprit:
            injections.apply(clone, kind, amount)
            message = f"inject {kind} ({amount})"
        elif n % 2:
            path = clone / "harness" / "fmt.py"
            path.write_text(path.read_text() + f"# note {n} of {branch}: a comment, nothing else\n")
            message = f"note {n} in fmt.py"
        else:
            path = clone / "docs" / "changelog.md"
            path.write_text(path.read_text() + f"\n<!-- note {n} of {branch} -->\n")
            message = f"note {n} in the changelog"
        _git(clone, "commit", "--quiet", "-a", "-m", message)
        shas.append(_git(clone, "rev-parse", "HEAD"))
    return shas


def size_python_work(clone: Path, model: str, backend: str, size: float, phase: str, work: Path) -> dict:
    """The ``python`` work's loop count for ``size`` % of the base's ``phase`` (median of 3 cold processes)."""
    out = work / "calibration.json"
    subprocess.run([sys.executable, "-m", "ttfg", "run", "--model", model, "--backend", backend, "--repeat", "3",
                    "--out", str(out)], cwd=clone, capture_output=True, text=True, timeout=1800, check=True)
    doc = json.loads(out.read_text())
    samples = [s for s in doc["cases"][0]["samples"] if s["kind"] == "timing" and s["ok"]]
    reference = statistics.median(s[f"{phase}_s"] for s in samples)
    per_iteration = injections.seconds_per_iteration("python", 200_000)
    amount = max(1, round(size / 100 * reference / per_iteration))  # once per Repeat node: resnet15 has one
    return {"phase": phase, f"{phase}_s": reference, "first_grad_s": statistics.median(s["first_grad_s"] for s in samples),
            "per_iteration_s": per_iteration, "amount": amount}


def run_bisect(clone: Path, out_dir: Path, shas: list[str], args) -> dict:
    cmd = [sys.executable, "-m", "ttfg", "bisect", "--repo", str(clone), "--good", shas[0], "--bad", shas[-1],
           "--model", args.model, "--backend", args.backend, "--budget", args.budget, "--out-dir", str(out_dir)]
    before, started = _uptime(), time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=out_dir.parent, timeout=3600,
                          env={**os.environ, "COLUMNS": "120"})
    wall = time.monotonic() - started
    state = out_dir / "bisect.json"
    doc = json.loads(state.read_text()) if state.exists() else {}
    probes = doc.get("probes", [])
    every = [doc.get("ends"), *(e for p in probes for e in p["evidence"]), doc.get("culprit_evidence")]
    counts = [side for e in every if e for side in (e.get("counts") or {}).values()]
    return {"found": (doc.get("culprit") or {}).get("commit"), "status": doc.get("status"),
            "exit_code": proc.returncode, "steps": len(probes),
            "comparisons": sum(len(p["evidence"]) for p in probes) + (1 if doc.get("ends") else 0)
            + (1 if doc.get("culprit_evidence") else 0),
            # count processes (all comparisons, both sides): started, and taken from an earlier comparison instead
            "counts_taken": sum(c["taken"] for c in counts), "counts_reused": sum(c["reused"] for c in counts),
            "wall_s": round(wall, 1), "uptime_before": before, "uptime_after": _uptime(),
            "stdout_tail": proc.stdout[-3000:], "stderr_tail": proc.stderr[-1500:]}


def run_asv_find(clone: Path, shas: list[str], args) -> dict:
    """``asv find BASE..TIP BENCH`` on the clone, the case selected as ``ttfg asv`` selects it."""
    env = {**os.environ, "TTFG_ASV_MODELS": args.model, "TTFG_ASV_BACKENDS": args.backend,
           "TTFG_ASV_VARIANTS": "default", "TTFG_ASV_ALLOCATIONS": "0"}
    asv = [sys.executable, "-m", "asv"]
    subprocess.run([*asv, "machine", "--yes", "--machine", "bisect-history"], cwd=clone, env=env,
                   capture_output=True, text=True, timeout=300, check=True)
    before, started = _uptime(), time.monotonic()
    proc = subprocess.run([*asv, "find", "--machine", "bisect-history", "--skip-save", f"{shas[0]}..{shas[-1]}",
                           args.asv_bench], cwd=clone, env=env, capture_output=True, text=True, timeout=7200)
    wall = time.monotonic() - started
    text = proc.stdout + proc.stderr
    found = re.search(r"Greatest regression found: ([0-9a-f]{8})", text)
    measured = len(re.findall(r"For ttfg commit", text))
    return {"found": found.group(1) if found else None, "exit_code": proc.returncode, "commits_measured": measured,
            "wall_s": round(wall, 1), "uptime_before": before, "uptime_after": _uptime(), "tail": text[-2000:]}


def _load_average(uptime: str | None) -> str:
    found = re.search(r"load average: ([0-9.]+)", uptime or "")
    return found.group(1) if found else "?"


def markdown(doc: dict) -> str:
    """The histories as the Markdown table ``docs/measurements.md`` shows: what ttfg bisect and asv find named."""
    def at(row, short):  # a named commit's position in its history (1-based; the good end is 0)
        return next((i for i, sha in enumerate(row["shas"]) if short and sha.startswith(short)), None)

    lines = ["| history | step at | ttfg bisect | steps | comparisons | wall | load (1-min, before → after) "
             "| asv find named | commits asv measured | asv wall |", "|" + " --- |" * 10]
    for row in doc["histories"]:
        b, a = row["bisect"], row.get("asv_find")
        right = " (right)" if row["right"] else " (**wrong**)"
        said = f"commit {at(row, b['found'])}{right}" if b["found"] else f"{b['status']}, exit {b['exit_code']}{right}"
        asv = "– | – | –"
        if a:
            named = at(row, a["found"])
            verdict = "" if named is None else " (right)" if named == row["culprit_at"] else " (wrong)"
            asv = f"commit {named}{verdict} | {a['commits_measured']} | {a['wall_s'] / 60:.1f} min"
        lines.append(f"| {row['history'] + 1} | {row['culprit_at'] or 'none'} | {said} | {b['steps']} | "
                     f"{b['comparisons']} | {b['wall_s'] / 60:.1f} min | {_load_average(b['uptime_before'])} → "
                     f"{_load_average(b['uptime_after'])} | {asv} |")
    return "\n".join(lines)


def _positions(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise SystemExit(f"error: --culprits takes comma-separated positions (0: no injection), got {text!r}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--commits", type=int, default=24)
    p.add_argument("--culprits", type=_positions, default=[17],
                   help="comma-separated culprit positions, one history each; 0 is a history without a step")
    p.add_argument("--kind", default="extra-op", choices=sorted(injections.KINDS))
    p.add_argument("--amount", type=int, default=1, help="the injection's amount (ops, or loop iterations)")
    p.add_argument("--size", type=float, help="python only: size the work to this %% of --relative-to")
    p.add_argument("--relative-to", choices=("trace", "first_grad"), default="trace",
                   help="the phase --size is a share of (default: trace, the phase the work runs in)")
    p.add_argument("--model", default="resnet15:blocks=2")
    p.add_argument("--backend", default="jax.jit")
    p.add_argument("--budget", default="2m", help="per comparison (the gate's --budget)")
    p.add_argument("--asv-find", action="store_true", help="also run asv find on each history")
    p.add_argument("--asv-bench", default="track_first_grad_seconds", help="the benchmark asv find bisects")
    p.add_argument("--out", metavar="FILE", help="the results as JSON, rewritten after each history")
    p.add_argument("--render", metavar="FILE", help="print the Markdown table of a saved --out file, run nothing")
    args = p.parse_args(argv)
    if args.render:
        print(markdown(json.loads(Path(args.render).read_text())))
        return 0
    if any(c < 0 or c > args.commits for c in args.culprits):
        p.error(f"--culprits must lie in 0..{args.commits}")
    if args.size is not None and args.kind != "python":
        p.error("--size sizes the python work only")
    work = Path(tempfile.mkdtemp(prefix="ttfg-bisect-history-"))
    clone = work / "clone"
    subprocess.run(["git", "clone", "--quiet", "--local", "--no-hardlinks", str(ROOT), str(clone)], check=True,
                   capture_output=True, timeout=300)
    base = _git(ROOT, "rev-parse", "HEAD")
    doc = {"base_commit": base, "commits": args.commits, "kind": args.kind, "model": args.model,
           "backend": args.backend, "budget": args.budget, "histories": []}
    amount = args.amount
    if args.size is not None:
        doc["sizing"] = size_python_work(clone, args.model, args.backend, args.size, args.relative_to, work)
        amount = doc["sizing"]["amount"]
        print(f"python work sized to {args.size} % of {args.relative_to}: {doc['sizing']}", flush=True)
    doc["amount"] = amount
    ok = True
    for index, culprit in enumerate(args.culprits):
        shas = make_history(clone, f"history-{index}", base, args.commits, culprit, args.kind, amount)
        row = {"history": index, "culprit_at": culprit, "expected": shas[culprit] if culprit else None, "shas": shas}
        row["bisect"] = run_bisect(clone, work / f"bisect-{index}", shas, args)
        if args.asv_find:
            row["asv_find"] = run_asv_find(clone, shas, args)
        right = (row["bisect"]["found"] == row["expected"] if culprit
                 else row["bisect"]["status"] == "no step" and row["bisect"]["exit_code"] == 0)
        row["right"] = right
        ok &= right
        doc["histories"].append(row)
        if args.out:
            Path(args.out).write_text(json.dumps(doc, indent=1) + "\n")
        b = row["bisect"]
        print(f"history {index}: culprit at {culprit or 'none'}: bisect {b['status']} exit {b['exit_code']}, "
              f"{b['steps']} steps, {b['comparisons']} comparisons, count processes {b['counts_taken']} taken and "
              f"{b['counts_reused']} reused, {b['wall_s']} s, right: {right}"
              + (f"; asv find named {row['asv_find']['found']} (injected {(row['expected'] or '-')[:8]}), "
                 f"{row['asv_find']['commits_measured']} commits, {row['asv_find']['wall_s']} s" if args.asv_find else ""),
              flush=True)
    print(markdown(doc))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
