"""One real ``ttfg bisect`` on a generated history of this repository, timed, for ``docs/measurements.md``.

Why: the bisect's claim is "the culprit in about log2 N steps, in minutes"; that is only
true of real processes on real commits. The script clones this repository (``git clone
--local --no-hardlinks``, the current commit) and commits N changes on top: comment-only
and unrelated ones, and at one position an injection from ``gate_injections.py`` (by
default ``extra-op``: one more operation per repeated block, which jax.jit traces into one
more jaxpr equation each). Then it runs ``ttfg bisect --repo CLONE --good BASE --bad TIP``
in a fresh process and prints what it found, its steps and its wall time, with the load.

    python benchmarks/bisect_history.py --commits 24 --culprit 17       # about 5 min on 2 cores
    python benchmarks/bisect_history.py --kind python --amount 20000    # needs instructions or time: far longer
"""

from __future__ import annotations

import argparse
import json
import os
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


def make_history(clone: Path, commits: int, culprit: int, kind: str, amount: int) -> list[str]:
    """``commits`` commits on top of the clone's HEAD; the one at ``culprit`` (1-based) injects the regression."""
    shas = [_git(clone, "rev-parse", "HEAD")]
    for n in range(1, commits + 1):
        if n == culprit:
            injections.apply(clone, kind, amount)
            message = f"inject {kind} ({amount})"
        elif n % 2:
            path = clone / "harness" / "fmt.py"
            path.write_text(path.read_text() + f"# note {n}: a comment, nothing else\n")
            message = f"note {n} in fmt.py"
        else:
            path = clone / "docs" / "changelog.md"
            path.write_text(path.read_text() + f"\n<!-- note {n} -->\n")
            message = f"note {n} in the changelog"
        _git(clone, "commit", "--quiet", "-a", "-m", message)
        shas.append(_git(clone, "rev-parse", "HEAD"))
    return shas


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--commits", type=int, default=24)
    p.add_argument("--culprit", type=int, default=17)
    p.add_argument("--kind", default="extra-op", choices=sorted(injections.KINDS))
    p.add_argument("--amount", type=int, default=1)
    p.add_argument("--model", default="resnet15:blocks=2")
    p.add_argument("--backend", default="jax.jit")
    p.add_argument("--budget", default="2m", help="per comparison (the gate's --budget)")
    args = p.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="ttfg-bisect-history-"))
    clone = work / "clone"
    subprocess.run(["git", "clone", "--quiet", "--local", "--no-hardlinks", str(ROOT), str(clone)], check=True,
                   capture_output=True, timeout=300)
    base = _git(ROOT, "rev-parse", "HEAD")
    _git(clone, "checkout", "--quiet", "-B", "history", base)
    shas = make_history(clone, args.commits, args.culprit, args.kind, args.amount)
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    started = time.monotonic()
    out_dir = work / "bisect"
    cmd = [sys.executable, "-m", "ttfg", "bisect", "--repo", str(clone), "--good", shas[0], "--bad", shas[-1],
           "--model", args.model, "--backend", args.backend, "--budget", args.budget, "--out-dir", str(out_dir)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=work, timeout=3600,
                          env={**os.environ, "COLUMNS": "120"})
    wall = time.monotonic() - started
    doc = json.loads((out_dir / "bisect.json").read_text()) if (out_dir / "bisect.json").exists() else {}
    result = {"base_commit": base, "commits": args.commits, "culprit_at": args.culprit, "kind": args.kind,
              "amount": args.amount, "expected": shas[args.culprit], "found": (doc.get("culprit") or {}).get("commit"),
              "status": doc.get("status"), "exit_code": proc.returncode, "steps": len(doc.get("probes", [])),
              "comparisons": sum(len(p["evidence"]) for p in doc.get("probes", []))
              + (1 if doc.get("ends") else 0) + (1 if doc.get("culprit_evidence") else 0),
              "wall_s": round(wall, 1), "uptime_before": uptime,
              "uptime_after": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()}
    print(proc.stdout[-6000:])
    print(proc.stderr[-2000:], file=sys.stderr)
    print(json.dumps(result, indent=1))
    return 0 if result["found"] == result["expected"] else 1


if __name__ == "__main__":
    sys.exit(main())
