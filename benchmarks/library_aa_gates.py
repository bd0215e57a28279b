"""A/A gates of small libraries set up the documented way: no false alarm on a comment-only pull request?

Why (issue 39): a Haiku library's comment-only pull requests failed CI 2 times in 3, and one cost 92-181 s;
ttfg's own models gated A/A (``aa_gates.py``) say nothing of a library a new user sets up. This script makes
the libraries as that user does (``tests/function_libraries.py``, the builders the gate tests use: a ``src/``
package, ``ttfg init``'s default function starter, the stand-in replaced by the library's own call,
``pip install -e .`` into a venv of its own, committed: the base), then for each trial a pull request of one
commit on the base that adds a comment to the library's module (``--change code``: an unused constant, which the
counts and the clock must call unchanged), and gates it as the CI workflow ``init``
writes does: ``ttfg gate --base BASE --head HEAD --allocations --out-dir DIR`` in the repository, with the
count store (``TTFG_COUNT_STORE_DIR``) kept across the gates of one library as the workflow's cache keeps
it, and a fresh cache folder for each gate (a fresh runner: no calibration).

Libraries: ``jax`` (plain jax), ``equinox``, ``haiku``, ``torch`` (``torch.compile``). Trials run round
robin (trial 0 of every library, then trial 1, ...), so a run cut short still covers every library.

``--slowdowns`` adds real slowdowns, each its own pull request gated the same way, which must exit 1 naming
the phase: 6 extra scaling pairs per block (``ops``), pure-Python work on every call (``work``; the torch
library's step, the jax libraries' blocks while traced), ``time.sleep(0.4)`` at import (``import``).

    python benchmarks/library_aa_gates.py --trials 6 --out runs/library-aa.json
    python benchmarks/library_aa_gates.py --library haiku --trials 2 --slowdowns ops
    python benchmarks/library_aa_gates.py --render runs/library-aa.json

It prints a Markdown table (library, trial, verdict, exit, the deciding tier, the gate's reason, wall time,
the load average before and after, where the base's counts came from, what the gate spent per tier) and the
median wall time of the A/A gates. Exit codes: 0 no false alarm and every slowdown caught, 1 a false alarm or
a slowdown passed, 2 bad input or a broken run (a gate that ended in neither 0 nor 1).
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
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from aa_gates import _save  # noqa: E402  (the raw rows written as aa_gates.py writes them)
from gate_power import BenchError, _git, _log, _uptime, run_timed  # noqa: E402  (the same process helpers)

#: The slowdowns ``--slowdowns`` may ask for: the keyword arguments of ``function_libraries.source``.
SLOWDOWNS = {"ops": {"extra": 6}, "work": {"work": 200_000}, "import": {"import_sleep": 0.4}}
#: Which libraries each slowdown is gated on (the issue's list: ops on the jax family, work on torch, import on all).
SLOWDOWN_LIBRARIES = {"ops": ("jax", "equinox", "haiku", "torch"), "work": ("torch", "jax"),
                      "import": ("jax", "equinox", "haiku", "torch")}
FALSE_ALARMS = ("regressed", "improved")
#: What each A/A pull request adds to the library's module (``--change``): a comment (the source tier proves the
#: code unchanged and settles it with one pair a side), or code that moves no count (an unused constant: a new
#: syntax tree, so the counts and the clock decide, as for any refactor that changes nothing measured).
CHANGES = {"comment": "# A comment, nothing else: pull request {n} of an A/A set (benchmarks/library_aa_gates.py).\n",
           "code": "_AA_PULL_REQUEST_{n} = {n}  # code that moves no count: an A/A set (benchmarks/library_aa_gates.py)\n"}


def _libraries():
    from tests import function_libraries

    return function_libraries


def _cost(case: dict) -> str:
    """What the gate spent on the case, per tier: ``tier N×S s`` (processes, seconds)."""
    parts = []
    for tier, spent in (case.get("cost") or {}).items():
        stored = f", {spent['stored']} stored" if spent.get("stored") else ""
        parts.append(f"{tier} {spent.get('processes', 0)}×{float(spent.get('seconds') or 0):.0f} s{stored}")
    return "; ".join(parts)


def gate_row(made: dict, head: str, out_dir: Path, cache: Path, store: Path, args) -> dict:
    """One gate of ``head`` against the library's base, in a fresh process, as CI runs it; its row."""
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_STEP_SUMMARY", "PYTHONPATH", "TTFG_CACHE_DIR")}
    env.update(TTFG_COUNT_STORE_DIR=str(store), TTFG_CACHE_DIR=str(cache))
    cmd = [str(made["python"]), "-m", "ttfg", "gate", "--base", made["base"], "--head", head, "--allocations",
           "--out-dir", str(out_dir), *args.gate_arg]
    row = run_timed(cmd, made["repo"], env, args.timeout)
    row["wall_s"] = round(row["wall_s"], 1)
    gate_json = out_dir / "gate.json"
    if not gate_json.is_file():
        return {**row, "verdict": "no verdict"}
    doc = json.loads(gate_json.read_text())
    [case] = doc.get("cases") or [{}]
    verdict = case.get("verdict") or {}
    return {**row, "case": case.get("case"), "verdict": verdict.get("verdict", "no verdict"),
            "reason": verdict.get("reason"), "tier": case.get("tier"), "pairs": case.get("pairs"),
            "baseline": (case.get("baseline") or {}).get("status"), "cost": case.get("cost"),
            "cost_text": _cost(case), "elapsed_s": doc.get("elapsed_s")}


def set_up(work: Path, keys: list[str]) -> dict:
    made = {}
    libs = _libraries()
    for key in keys:
        _log(f"setting up {libs.LIBRARIES[key].name}: a package, ttfg init, the starter calling it, pip install -e")
        made[key] = libs.set_up_base(work, libs.LIBRARIES[key])
    return made


def run(args) -> dict:
    work = Path(tempfile.mkdtemp(prefix="ttfg-library-aa-"))
    doc = {"format": "ttfg-library-aa-gates", "version": 1,
           "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
           "commit": _git(ROOT, "rev-parse", "HEAD"), "cpus": os.cpu_count(), "uptime_before": _uptime(),
           "settings": {k: v for k, v in vars(args).items() if k not in ("out", "render")}, "rows": []}
    libs = _libraries()
    try:
        made = set_up(work, args.library)
        plan = [("aa", n, key, {}) for n in range(args.trials) for key in args.library]
        plan += [("slowdown", name, key, SLOWDOWNS[name]) for name in args.slowdowns
                 for key in args.library if key in SLOWDOWN_LIBRARIES[name]]
        for kind, n, key, slowdown in plan:
            m, lib = made[key], libs.LIBRARIES[key]
            text = libs.source(lib, **slowdown)
            if kind == "aa":
                text += "\n" + CHANGES[args.change].format(n=n)
            head = libs.commit_head(m, f"{kind} {n}", text, branch=f"{kind}-{n}")
            label = f"{lib.name}-{kind}-{n}"
            row = {"library": lib.name, "framework": lib.framework, "kind": kind, "trial": n,
                   **gate_row(m, head, work / "out" / label, work / "cache" / label, m["repo"] / ".ttfg-counts", args)}
            row["broken"] = row["exit_code"] not in (0, 1)
            if kind == "aa":
                row["false_alarm"] = row["verdict"] in FALSE_ALARMS or row["exit_code"] == 1
            else:
                row["missed"] = row["exit_code"] != 1
            _log(f"{label}: {row['verdict']} (exit {row['exit_code']}) in {row['wall_s']:.0f} s, "
                 f"tier {row.get('tier')}, base counts {row.get('baseline')}; "
                 f"load {row['load_before']}-{row['load_after']}; {row.get('cost_text')}")
            doc["rows"].append(row)
            _save(doc, args.out)
    finally:
        doc["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        doc["uptime_after"] = _uptime()
        _save(doc, args.out)
        if args.keep:
            _log(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return doc


def render(docs: list[dict]) -> tuple[list[str], int]:
    rows, alarms, missed, broken, walls = [], 0, 0, 0, []
    for doc in docs:
        for r in doc["rows"]:
            alarms += bool(r.get("false_alarm"))
            missed += bool(r.get("missed"))
            broken += bool(r.get("broken"))
            if r["kind"] == "aa":
                walls.append(r["wall_s"])
            reason = " ".join(str(r.get("reason") or "").split()).replace("|", "/")
            trial = r["trial"] if r["kind"] == "aa" else f"slowdown: {r['trial']}"
            flag = "**false alarm**" if r.get("false_alarm") else "**missed**" if r.get("missed") else ""
            rows.append([r["library"], trial, r["verdict"] + (f" {flag}" if flag else ""), r["exit_code"],
                         r.get("tier") or "–", reason[:200] or "–", f"{r['wall_s']:.0f}",
                         f"{r['load_before']}-{r['load_after']}", r.get("baseline") or "–",
                         (r.get("cost_text") or "–").replace("|", "/")])
    head = ["library", "trial", "verdict", "exit", "tier", "reason (the gate's words)", "wall s", "load",
            "base counts", "cost by tier (processes×s)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    lines.append("")
    aa = sum(r["kind"] == "aa" for d in docs for r in d["rows"])
    median = f"{statistics.median(walls):.0f} s" if walls else "–"
    lines.append(f"{aa} A/A gates: {alarms} false alarm(s), median wall {median}; "
                 f"{len(rows) - aa} slowdown gates: {missed} missed; {broken} broken.")
    for d in docs:
        lines.append(f"commit {d.get('commit', '?')[:10]}, {d.get('started')} to {d.get('finished')} UTC; "
                     f"before: {d.get('uptime_before')}; after: {d.get('uptime_after')}")
    return lines, (2 if broken else 1 if alarms or missed else 0)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="library_aa_gates.py", description=__doc__.split("\n\n")[0],
                                epilog="exit codes: 0 no false alarm and every slowdown caught, 1 a false alarm or "
                                       "a missed slowdown, 2 bad input or a broken run")
    p.add_argument("--library", action="append", choices=["jax", "equinox", "haiku", "torch"],
                   help="a library to gate (repeatable; default: all four)")
    p.add_argument("--trials", type=int, default=6, help="comment-only pull requests per library (default: 6)")
    p.add_argument("--change", choices=sorted(CHANGES), default="comment",
                   help="what each A/A pull request adds: a comment (default; the source tier settles it) or code "
                        "that moves no count (an unused constant: the counts and the clock decide)")
    p.add_argument("--slowdowns", action="append", default=[], choices=sorted(SLOWDOWNS),
                   help="also gate this real slowdown, which must exit 1 (repeatable)")
    p.add_argument("--timeout", type=float, default=1800, help="seconds a gate may take (default: 1800)")
    p.add_argument("--gate-arg", action="append", default=[], metavar="ARG",
                   help="extra argument for every gate, e.g. --gate-arg=--profiles=0 (repeatable)")
    p.add_argument("--keep", action="store_true", help="keep the scratch folder (libraries, gate folders)")
    p.add_argument("--out", metavar="FILE", help="raw rows as JSON (rewritten after each gate)")
    p.add_argument("--render", action="append", metavar="FILE",
                   help="print the table of earlier --out files (repeatable)")
    args = p.parse_args(argv)
    if args.render and (args.library or args.slowdowns):
        p.error("--render prints earlier runs: it takes no --library or --slowdowns")
    if not 0 <= args.trials <= 1000:
        p.error(f"--trials must be in [0, 1000], not {args.trials}")
    if not args.timeout > 0:
        p.error(f"--timeout must be above 0 seconds, not {args.timeout:g}")
    if not args.render and args.trials == 0 and not args.slowdowns:
        p.error("--trials 0 and no --slowdowns: nothing to gate")
    args.library = list(dict.fromkeys(args.library or ["jax", "equinox", "haiku", "torch"]))
    args.slowdowns = list(dict.fromkeys(args.slowdowns))
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        if args.render:
            docs = []
            for f in args.render:
                doc = json.loads(Path(f).read_text())
                if not isinstance(doc, dict) or doc.get("format") != "ttfg-library-aa-gates":
                    raise BenchError(f"--render {f}: not a library_aa_gates.py --out file")
                docs.append(doc)
        else:
            docs = [run(args)]
    except (BenchError, OSError, ValueError, KeyError, RuntimeError, subprocess.SubprocessError) as exc:
        print(f"library_aa_gates: {exc}", file=sys.stderr)
        return 2
    lines, code = render(docs)
    print("\n".join(lines))
    return code


if __name__ == "__main__":
    sys.exit(main())
