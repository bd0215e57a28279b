"""The gate's power, measured: inject regressions into throwaway clones and gate them.

For each kind of regression and size, this clones the repository (the committed HEAD),
commits an injected slowdown on top, and runs ``ttfg gate --base HEAD~1 --head HEAD`` in
the clone, in a fresh process, exactly as CI would. Then it reports whether the gate
flagged it, how long the verdict took, which tier or test decided, and whether the
attribution named the function that grew. A/A trials (base = head) count false alarms.

Kinds (sizes are a share of the base's first gradient, calibrated on this machine):

* ``python``: Python work during tracing: ``_ttfg_injected_trace_work`` runs a loop at
  every convolution the interpreter traces (``harness/engines/interpret.py``). No
  structural counter changes.
* ``op``: an extra operation per residual block (``* 1.0`` after each skip connection,
  repeated SIZE times: here the size is a count of operations, not a share). The
  structural counters change (jaxpr equations, HLO ops).
* ``lower``: Python work in jax.jit's lowering phase (``_ttfg_injected_lower_work``
  before ``traced.lower()`` in ``harness/engines/jax_jit.py``; jax.jit only).

Usage (from the repository root; every run is real and takes minutes)::

    python benchmarks/gate_power.py --kinds python --sizes 5 --budget 5m
    python benchmarks/gate_power.py --aa 20 --kinds none --tiers counters,instructions
    python benchmarks/gate_power.py --out runs/power        # everything: 9 injections + 20 A/A

Writes ``OUT/power.json`` (every trial's gate.json summary) and prints a Markdown table.
``--tiers`` is passed to ``ttfg gate`` only when this ttfg's gate has that option. The
load average is recorded with each trial: wall times on a shared machine are only
comparable at similar load.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INJECTED = {"python": "_ttfg_injected_trace_work", "lower": "_ttfg_injected_lower_work", "op": None}
WORK = '''

def {name}(n):
    """Injected by benchmarks/gate_power.py: n iterations of pure Python arithmetic."""
    s = 0
    for i in range(n):
        s += i * i
    return s
'''


def _run(cmd, cwd, **kw):
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, **kw)


def _git(clone: Path, *args: str) -> str:
    out = _run(["git", *args], clone)
    if out.returncode != 0:
        raise SystemExit(f"git {' '.join(args)} failed in {clone}: {out.stderr.strip()}")
    return out.stdout.strip()


def seconds_per_iteration() -> float:
    """Best of five: the time of one iteration of the injected loop, in this interpreter."""
    namespace: dict = {}
    exec(WORK.format(name="work"), namespace)
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        namespace["work"](200_000)
        best = min(best, (time.perf_counter() - t0) / 200_000)
    return best


def base_first_gradient(model: str, backend: str, repeat: int = 3) -> float:
    """Median first gradient of the committed code, from ``ttfg run`` (fresh processes)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.json"
        run = _run([sys.executable, "-m", "harness", "run", "--model", model, "--backend", backend,
                    "--repeat", str(repeat), "--out", str(out)], ROOT)
        if run.returncode != 0:
            raise SystemExit(f"calibration run failed: {run.stdout[-2000:]}{run.stderr[-2000:]}")
        samples = json.loads(out.read_text())["cases"][0]["samples"]
        values = sorted(s["first_grad_s"] for s in samples if s["ok"])
        return values[len(values) // 2]


def conv_calls(model: str) -> int:
    """How many convolutions one trace of the model interprets (the python kind's call sites)."""
    sys.path.insert(0, str(ROOT))
    from harness.measure.cases import select
    from models.spec import Conv

    (case,), _ = select([model], ["autograd"], None, check_availability=False)

    def count(layer) -> int:
        if isinstance(layer, Conv):
            return 1
        children = [c for _, c in getattr(layer, "layers", ())]
        for attr in ("inner", "block"):
            if hasattr(layer, attr):
                children.append(getattr(layer, attr))
        total = sum(count(c) for c in children)
        return total * getattr(layer, "count", 1) if hasattr(layer, "block") else total

    return count(case.spec.network)


def inject(clone: Path, kind: str, iterations: int, ops: int) -> str:
    """Edit the clone's files for ``kind``; returns what was done, in words."""
    if kind == "python":
        path = clone / "harness/engines/interpret.py"
        text = path.read_text()
        text = text.replace("    if kind is Conv:\n",
                            f"    if kind is Conv:\n        {INJECTED['python']}({iterations})\n", 1)
        path.write_text(text + WORK.format(name=INJECTED["python"]))
        return f"{iterations:,} loop iterations at every traced convolution"
    if kind == "lower":
        path = clone / "harness/engines/jax_jit.py"
        text = path.read_text()
        old = "        self.lowered = self.traced.lower()\n"
        if old not in text:
            raise SystemExit("the lower injection point moved: update benchmarks/gate_power.py")
        text = text.replace(old, f"        {INJECTED['lower']}({iterations})\n" + old, 1)
        path.write_text(text + WORK.format(name=INJECTED["lower"]))
        return f"{iterations:,} loop iterations before traced.lower()"
    if kind == "op":
        path = clone / "harness/engines/interpret.py"
        text = path.read_text()
        old = "    if kind is Skip:\n        return x + forward(layer.inner, params, x, ops, prefix)\n"
        if old not in text:
            raise SystemExit("the op injection point moved: update benchmarks/gate_power.py")
        new = ("    if kind is Skip:\n        y = x + forward(layer.inner, params, x, ops, prefix)\n"
               f"        for _ in range({ops}):\n            y = y * 1.0\n        return y\n")
        path.write_text(text.replace(old, new, 1))
        return f"{ops} extra multiplication(s) after every skip connection"
    raise SystemExit(f"unknown kind {kind!r}")


def gate_options() -> str:
    return _run([sys.executable, "-m", "harness", "gate", "--help"], ROOT).stdout


def trial(label: str, kind: str | None, size, iterations: int, ops: int, args, workdir: Path) -> dict:
    """One clone, one (optional) injection, one ``ttfg gate``: the row of the table."""
    clone = workdir / label
    _git(workdir, "clone", "--quiet", "--no-hardlinks", str(ROOT), str(clone))
    what = "A/A: base and head are the same commit"
    if kind is not None:
        what = inject(clone, kind, iterations, ops)
        _git(clone, "-c", "user.name=gate power", "-c", "user.email=power@example.invalid", "commit", "--quiet",
             "-am", f"inject {kind} {size}")
    base = "HEAD~1" if kind is not None else "HEAD"
    out_dir = workdir / f"{label}-out"
    cmd = [sys.executable, "-m", "harness", "gate", "--repo", str(clone), "--base", base, "--head", "HEAD",
           "--model", args.model, "--backend", args.backend, "--budget", args.budget if kind else args.aa_budget,
           "--profiles", str(args.profiles if kind else 0), "--out-dir", str(out_dir)]
    if args.tiers and "--tiers" in gate_options():
        cmd += ["--tiers", args.tiers]
    load = os.getloadavg()[0]
    started = time.monotonic()
    run = _run(cmd, ROOT, timeout=args.trial_timeout)
    wall = time.monotonic() - started
    row = {"label": label, "kind": kind or "A/A", "size": size, "injected": what, "exit": run.returncode,
           "wall_s": round(wall, 1), "load_at_start": round(load, 2)}
    gate_json = out_dir / "gate.json"
    if not gate_json.is_file():
        row["error"] = (run.stderr.strip().splitlines() or ["no gate.json"])[-1]
        return row
    doc = json.loads(gate_json.read_text())
    (case,) = doc["cases"][:1] or [None]
    verdict = case["verdict"] if case else {}
    row.update({"verdict": verdict.get("label") or verdict.get("verdict"), "ratio": verdict.get("ratio"),
                "pairs": case.get("pairs") if case else None, "gate_elapsed_s": doc.get("elapsed_s"),
                "decided_by": case.get("tier") or verdict.get("tier") or verdict.get("method") if case else None,
                "counters_changed": [c["metric"] for c in (case or {}).get("changes", [])],
                "detected": run.returncode == 1})
    attribution = (case or {}).get("attribution") or {}
    name = INJECTED.get(kind or "op")
    named = "n/a"
    if name:
        tops = attribution.get("top_function") or {}
        listed = [f["fn"] for f in attribution.get("functions", [])]
        named = ("top" if any(t.get("fn") == name for t in tops.values())
                 else "listed" if name in listed else "no")
        row["attribution_top"] = {u: f"{t['fn']} ({t['where']})" for u, t in tops.items()}
    row["named_function"] = named
    row["headline"] = attribution.get("headline")
    if not args.keep:
        shutil.rmtree(clone, ignore_errors=True)
    return row


def table(rows: list[dict]) -> str:
    head = ["trial", "injected", "detected", "verdict", "decided by", "time to verdict", "pairs",
            "named the function", "counters changed", "load"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(" --- " for _ in head) + "|"]
    for r in rows:
        lines.append("| " + " | ".join(str(c) for c in (
            f"{r['kind']} {r['size'] if r['size'] is not None else ''}".strip(), r["injected"],
            "yes" if r.get("detected") else ("error" if "error" in r else "no"), r.get("verdict", r.get("error", "")),
            r.get("decided_by", ""), f"{r['wall_s']:.0f} s", r.get("pairs", ""), r.get("named_function", ""),
            ", ".join(m.removeprefix("counters.") for m in r.get("counters_changed", [])) or "–",
            r["load_at_start"])) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="resnet15")
    p.add_argument("--backend", default="jax.jit")
    p.add_argument("--kinds", default="python,op,lower", help="comma-separated: python, op, lower; 'none' for A/A only")
    p.add_argument("--sizes", default="2,5,10", help="percent of the first gradient (python, lower)")
    p.add_argument("--ops", default="1,2,4", help="extra operations per block for the op kind, one per size")
    p.add_argument("--budget", default="5m", help="each injected gate's budget (default 5m)")
    p.add_argument("--aa", type=int, default=0, help="A/A trials (default 0)")
    p.add_argument("--aa-budget", default="2m")
    p.add_argument("--tiers", default=None, help="passed to ttfg gate --tiers when it has that option")
    p.add_argument("--profiles", type=int, default=3)
    p.add_argument("--first-grad-s", type=float, default=None, help="skip calibration: the base's first gradient")
    p.add_argument("--trial-timeout", type=float, default=3600)
    p.add_argument("--out", default="runs/power")
    p.add_argument("--keep", action="store_true", help="keep the clones")
    args = p.parse_args(argv)
    kinds = [k for k in args.kinds.split(",") if k and k != "none"]
    if "lower" in kinds and args.backend != "jax.jit":
        kinds.remove("lower")
    sizes = [float(s) for s in args.sizes.split(",")]
    ops = [int(o) for o in args.ops.split(",")]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    first = args.first_grad_s or (base_first_gradient(args.model, args.backend) if kinds else 0.0)
    per_iter = seconds_per_iteration()
    convs = conv_calls(args.model)
    print(f"base first gradient {first:.3f} s; one loop iteration {per_iter * 1e9:.1f} ns; {convs} convolutions per "
          f"trace; load average {os.getloadavg()[0]:.2f}", flush=True)
    rows = []
    workdir = Path(tempfile.mkdtemp(prefix="ttfg-power-"))
    try:
        for kind in kinds:
            for i, size in enumerate(sizes):
                total = int(size / 100 * first / per_iter)
                iterations = max(1, total // convs) if kind == "python" else total
                n_ops = ops[min(i, len(ops) - 1)]
                label = f"{kind}-{n_ops if kind == 'op' else size:g}"
                row = trial(label, kind, n_ops if kind == "op" else f"{size:g} %", iterations, n_ops, args, workdir)
                rows.append(row)
                print(json.dumps(row), flush=True)
                (out / "power.json").write_text(json.dumps({"rows": rows}, indent=1) + "\n")
        for k in range(args.aa):
            row = trial(f"aa-{k}", None, None, 0, 0, args, workdir)
            rows.append(row)
            print(json.dumps(row), flush=True)
            (out / "power.json").write_text(json.dumps({"rows": rows}, indent=1) + "\n")
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    aa = [r for r in rows if r["kind"] == "A/A"]
    print(table(rows))
    if aa:
        alarms = sum(1 for r in aa if r.get("exit") == 1)
        print(f"\nA/A: {alarms} false alarm(s) in {len(aa)} trials; verdicts: "
              + ", ".join(sorted({str(r.get('verdict')) for r in aa})))
    (out / "power.md").write_text(table(rows) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
