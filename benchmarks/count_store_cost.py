"""What the count store saves: two pull requests off one base that move no count, gated one after the other.

Why: ``ttfg gate`` keeps the base counts it takes (``results/count_store.py``), and a second gate of the same base
uses them once the head's fresh count agrees (``decide/stored_baseline.py``). This script measures what that is
worth and checks it costs nothing in power: it clones this repository (``git clone --local``, at the current
commit) into a temporary folder, commits two changes to ``harness/engines/jax_jit.py`` off the same base
(``--change code``, the default: an unused constant, code that moves no count; ``--change comment``: a comment,
which the source tier settles with one pair a side, nothing counted), and gates them one after the other with an
empty count store of its own (``TTFG_COUNT_STORE_DIR``), each in a fresh ``python -m ttfg gate`` process of a
frozen copy of the base's ttfg, as CI would. With ``--regression 5`` it then gates the held-out Python-work trace
regression of ``gate_injections.py`` sized to 5 % of the base's first gradient, with the store present, and
reports whether it is still caught; ``--no-store-too`` first gates a third pull request of the same change
without the store (``--no-count-store``), for the cost at the same load.

    python benchmarks/count_store_cost.py                        # jax.jit resnet15, default tiers
    python benchmarks/count_store_cost.py --regression 5 --out runs/count_store.json
    python benchmarks/count_store_cost.py --change comment --fresh-cache   # as on fresh CI runners

Per gate: exit code, wall time, the load average before and after, each case's ``baseline`` record and ``cost`` from
gate.json, the store's size after it, and ``timeline``: each line the gate printed with the second it came at (where
the wall time went). Exit codes: 0 done (both pull requests' gates passed, a regression asked for was caught),
1 otherwise, 2 bad input or a broken run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import subprocess
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

import gate_injections as injections  # noqa: E402
import gate_power as power  # noqa: E402

EDITED = "harness/engines/jax_jit.py"


#: What each pull request adds to ``EDITED``: a comment (the source tier proves it no change of code and settles it
#: with one pair a side, so nothing is counted or stored), or code that moves no count (an unused constant: a new
#: syntax tree, so the counts decide and the store is read).
CHANGES = {"comment": "\n# a comment-only change ({n}): the count store's measurement\n",
           "code": "\n_COUNT_STORE_MEASUREMENT_{n} = {n}  # code that moves no count: the count store's measurement\n"}


def _change_commit(clone: Path, base: str, n: int, change: str) -> str:
    power._git(clone, "checkout", "--quiet", "--force", "--detach", base)
    with (clone / EDITED).open("a", encoding="utf-8") as fh:
        fh.write(CHANGES[change].format(n=n))
    power._git(clone, "commit", "--quiet", "-a", "-m", f"{change} change {n}")
    return power._git(clone, "rev-parse", "HEAD")


def _freeze_tool(clone: Path, tool: Path) -> None:
    """The gates' own ttfg: a copy of the clone's package at the base (``tool/ttfg``, with ``ttfg.models``), first on
    their path. Without it ``import ttfg`` found the editable install of the working tree, so an edit there between
    two gates changed the measuring ttfg's source digest, part of every stored count's key, and the second gate
    found its base "stored under other conditions"."""
    shutil.copytree(clone / "harness", tool / "ttfg", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(clone / "models", tool / "ttfg" / "models", ignore=shutil.ignore_patterns("__pycache__"))


def _store_size(folder: Path) -> tuple[int, int]:
    files = [p for p in folder.rglob("*.json") if p.is_file()] if folder.is_dir() else []
    return len(files), sum(p.stat().st_size for p in files)


def _run_stamped(cmd: list[str], cwd: Path, env: dict, limit: float) -> dict:
    """``gate_power.run_timed``'s row, plus ``timeline``: each output line with the seconds since the start at which
    it came (where the wall time goes: the measured-path trace, each tier, the screen)."""
    load_before = power._load()
    started = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=cwd, env=env)
    timeline = []
    assert proc.stdout is not None
    for line in proc.stdout:
        timeline.append([round(time.monotonic() - started, 1), line.rstrip()])
        if time.monotonic() - started > limit:
            proc.terminate()
            timeline.append([round(time.monotonic() - started, 1), f"(stopped after {limit:.0f} s)"])
            break
    proc.wait()
    return {"exit_code": proc.returncode, "wall_s": time.monotonic() - started, "load_before": load_before,
            "load_after": power._load(), "timeline": timeline,
            "output_tail": "\n".join(text for _, text in timeline)[-3000:]}


def _gate(clone: Path, base: str, head: str, out: Path, args, store: Path, extra=()) -> dict:
    cmd = [sys.executable, "-m", "ttfg", "gate", "--repo", str(clone), "--base", base, "--head", head, "--model",
           args.model, "--backend", args.backend, "--out-dir", str(out), *extra,
           *(["--budget", args.budget] if args.budget else [])]
    env = {**power._env(clone.parent / "tool"), "TTFG_COUNT_STORE_DIR": str(store)}
    if args.fresh_cache:  # a fresh runner: nothing installed or calibrated; the store is the CI cache's
        env["TTFG_CACHE_DIR"] = str(out.parent / f"cache-{out.name}")
    row = _run_stamped(cmd, clone, env, args.limit)
    row["command"] = "ttfg " + " ".join(cmd[3:])
    gate_json = out / "gate.json"
    if gate_json.is_file():
        doc = json.loads(gate_json.read_text())
        row["cases"] = [{"case": c.get("case"), "verdict": (c.get("verdict") or {}).get("verdict"),
                         "tier": c.get("tier"), "baseline": c.get("baseline"), "cost": c.get("cost")}
                        for c in doc.get("cases") or []]
    row["store_files"], row["store_bytes"] = _store_size(store)
    power._log(f"{head[:10]} {' '.join(extra)}: exit {row['exit_code']} in {row['wall_s']:.1f} s, load "
               f"{row['load_before']} -> {row['load_after']}; "
               + "; ".join(f"{c['case']}: {c['verdict']}, baseline {(c['baseline'] or {}).get('status')}"
                           for c in row.get("cases", [])))
    return row


def _first_grad(out: Path) -> float | None:
    from ttfg.results.io import load

    values = [s.first_grad_s for c in load(out / "base.json").cases for s in c.samples
              if s.kind == "timing" and s.ok and s.first_grad_s]
    return statistics.median(values) if values else None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="resnet15")
    p.add_argument("--backend", default="jax.jit")
    p.add_argument("--budget", help="the gate's --budget (default: the gate's own)")
    p.add_argument("--limit", type=float, default=3600, help="seconds before a gate is stopped (default 3600)")
    p.add_argument("--regression", type=float, default=0.0, metavar="PERCENT",
                   help="also gate a trace regression of this size with the store present (e.g. 5)")
    p.add_argument("--no-store-too", action="store_true",
                   help="also gate a third pull request off the same base with --no-count-store, for the cost at the "
                        "same load")
    p.add_argument("--fresh-cache", action="store_true",
                   help="give each gate an empty ttfg cache folder (TTFG_CACHE_DIR), as on a fresh CI runner whose "
                        "count store alone is restored: both sides are installed in every gate that checks them out "
                        "(default: one cache, so the base is installed by the first gate only)")
    p.add_argument("--change", choices=sorted(CHANGES), default="code",
                   help="what each pull request changes: code that moves no count (default: the counts decide and "
                        "the store is read) or a comment (the source tier settles it: nothing counted or stored)")
    p.add_argument("--out", help="write the raw rows here (JSON)")
    p.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = p.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="ttfg-count-store-"))
    doc = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "uptime": power._uptime(),
           "model": args.model, "backend": args.backend, "change": args.change, "fresh_cache": args.fresh_cache,
           "gates": []}
    try:
        clone = work / "repo"
        power._git(ROOT, "clone", "--quiet", "--local", "--no-hardlinks", str(ROOT), str(clone))
        base = power._git(clone, "rev-parse", "HEAD")
        _freeze_tool(clone, work / "tool")
        # --no-store-too gates a third pull request of its own: a head installed afresh, as the second's is (gating
        # the second's head again would find it installed: 1.3-1.9 s a side in 37 installs, of a 5-8 s gate).
        heads = [_change_commit(clone, base, n, args.change) for n in (1, 2, 3)[:3 if args.no_store_too else 2]]
        power._git(clone, "checkout", "--quiet", "--force", "--detach", base)  # the measuring ttfg is the base's
        store = work / "counts"
        for n, head in enumerate(heads[:2], 1):
            doc["gates"].append({"name": f"{args.change} PR {n}", **_gate(clone, base, head, work / f"gate-{n}",
                                                                         args, store)})
        if args.no_store_too:
            doc["gates"].append({"name": f"{args.change} PR 3, --no-count-store",
                                 **_gate(clone, base, heads[2], work / "gate-3-off", args, store,
                                         ("--no-count-store",))})
        if args.regression:
            first = _first_grad(work / "gate-1")
            per = injections.seconds_per_iteration("python", 200_000)
            nodes, _ = power._repeat_nodes(args.model)
            amount = max(1, round(args.regression / 100 * first / per / nodes))
            power._git(clone, "checkout", "--quiet", "--force", "--detach", base)
            injections.apply(clone, "python", amount)
            power._git(clone, "commit", "--quiet", "-a", "-m", f"trace regression {args.regression:g} %")
            regressed = power._git(clone, "rev-parse", "HEAD")
            power._git(clone, "checkout", "--quiet", "--force", "--detach", base)
            row = _gate(clone, base, regressed, work / "gate-regression", args, store)
            row.update(amount=amount, per_iteration_s=per, base_first_grad_s=first)
            doc["gates"].append({"name": f"trace regression {args.regression:g} % (store present)", **row})
        doc["uptime_after"] = power._uptime()
    finally:
        if args.out:
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            Path(args.out).write_text(json.dumps(doc, indent=1) + "\n")
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(json.dumps({g["name"]: {k: g.get(k) for k in ("exit_code", "wall_s", "load_before", "load_after",
                                                           "store_files", "store_bytes")} for g in doc["gates"]},
                     indent=1))
    gates = doc["gates"]
    ok = all(g["exit_code"] == 0 for g in gates[:2])
    if args.regression:
        ok = ok and gates[-1]["exit_code"] == 1
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
