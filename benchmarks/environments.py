"""What environments cost here: building, reusing, disk for many releases, an upgrade gate's time to a verdict.

The figures of issue 23's goals, measured on this machine (nothing is simulated):

* building a jax environment the first time (a fresh ttfg cache; uv's package cache as it
  is, so "first time" means ttfg's first build, downloads included when uv lacks them);
* reusing it (a second ``environments.build`` of the same request);
* the disk that N jax releases take: each environment counted alone (what ``du`` says of
  one folder), and all of them together, each hard-linked file counted once (their files
  are hard links into uv's cache, which holds other packages too and is given apart);
* an upgrade gate jax 0.4.38 -> 0.10.2 on jax.jit resnet15 (``ttfg gate --base-env ...
  --head-env ...``), environments cached: the wall time to its verdict, its tier, ratio and
  interval.

Usage (the ttfg repository, its .venv)::

    .venv/bin/python benchmarks/environments.py                       # build, reuse, disk (10 releases), gate
    .venv/bin/python benchmarks/environments.py --releases 3 --no-gate  # a quick look
    .venv/bin/python benchmarks/environments.py --json runs/envs.json

The release sweep's own time is in its ``releases.json`` (``wall_s``, ``load``).
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


def _load() -> float:
    return os.getloadavg()[0]


def measure_build(version: str) -> dict:
    """Build ``jax[cpu]==version`` in a fresh ttfg cache (uv's cache as it is), then reuse it."""
    from ttfg.provision import environments

    request = environments.Request(f"jax-{version}", (f"jax[cpu]=={version}",), "benchmark")
    load = _load()
    started = time.monotonic()
    env = environments.build(request)
    first = time.monotonic() - started
    started = time.monotonic()
    again = environments.build(request)
    reuse = time.monotonic() - started
    return {"release": version, "first_build_s": round(first, 2), "reuse_s": round(reuse, 3), "cached": again.cached,
            "load": round(load, 2), "env_bytes": _du([env.path])}


def _du(paths) -> int:
    """Bytes on disk under every folder of ``paths`` together, each hard-linked file counted once."""
    seen, total = set(), 0
    for folder in paths:
        for dirpath, _, files in os.walk(folder):
            for name in files:
                try:
                    st = os.lstat(os.path.join(dirpath, name))
                except OSError:
                    continue
                if (st.st_dev, st.st_ino) not in seen:
                    seen.add((st.st_dev, st.st_ino))
                    total += st.st_blocks * 512
    return total


def measure_disk(versions: list[str]) -> dict:
    """Build each release (cached ones are reused) and count the disk: apart, and together with uv's cache."""
    from ttfg.provision import environments

    envs = []
    for v in versions:
        envs.append(environments.build(environments.Request(f"jax-{v}", (f"jax[cpu]=={v}",), "benchmark")))
        print(f"  built jax {v} ({envs[-1].seconds:.1f} s)", file=sys.stderr, flush=True)
    from ttfg.provision.sources import uv_binary

    uv_dir = subprocess.run([uv_binary(), "cache", "dir"], capture_output=True, text=True).stdout.strip()
    apart = sum(_du([e.path]) for e in envs)
    together = _du([e.path for e in envs])  # every file once: what deleting uv's cache would leave
    return {"releases": versions, "apart_bytes": apart, "together_bytes": together,
            "uv_cache_bytes": _du([uv_dir]) if uv_dir else None}


def measure_gate(base: str, head: str, budget: str, cwd: Path) -> dict:
    """``ttfg gate --base-env jax==BASE --head-env jax==HEAD`` on jax.jit resnet15: time to the verdict."""
    out_dir = Path(tempfile.mkdtemp(prefix="ttfg-upgrade-"))
    cmd = [sys.executable, "-m", "ttfg", "gate", "--allow-dirty", "--base-env", f"jax[cpu]=={base}",
           "--head-env", f"jax[cpu]=={head}", "--backend", "jax.jit", "--model", "resnet15", "--budget", budget,
           "--out-dir", str(out_dir)]
    load = _load()
    started = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
    wall = time.monotonic() - started
    doc = json.loads((out_dir / "gate.json").read_text()) if (out_dir / "gate.json").exists() else {}
    case = (doc.get("cases") or [{}])[0]
    verdict = case.get("verdict") or {}
    return {"base": base, "head": head, "exit_code": proc.returncode, "wall_s": round(wall, 1),
            "load_start": round(load, 2), "load_end": round(_load(), 2), "tier": case.get("tier"),
            "verdict": verdict.get("verdict"), "ratio": verdict.get("ratio"), "ci": [verdict.get("ci_low"),
                                                                                    verdict.get("ci_high")],
            "reason": verdict.get("reason"), "out_dir": str(out_dir),
            "stderr_tail": proc.stderr[-2000:] if proc.returncode == 2 else None}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build-release", default="0.6.2", help="the release built fresh (default: 0.6.2)")
    p.add_argument("--releases", type=int, default=10, help="how many jax releases for the disk figure (default 10)")
    p.add_argument("--no-gate", action="store_true", help="skip the upgrade gate")
    p.add_argument("--gate-budget", default="3m", help="the upgrade gate's --budget (default: 3m)")
    p.add_argument("--json", metavar="FILE", help="also write the figures here")
    args = p.parse_args(argv)
    if args.releases < 1:
        p.error("--releases must be >= 1")
    root = Path(__file__).resolve().parents[1]
    figures = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    commit = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    figures["commit"] = commit
    with tempfile.TemporaryDirectory(prefix="ttfg-bench-cache-") as fresh:
        os.environ["TTFG_CACHE_DIR"] = fresh  # ttfg's first build of this release, uv's cache as it is
        figures["build"] = measure_build(args.build_release)
    print(json.dumps(figures["build"]), flush=True)
    from ttfg.provision.releases import registry_releases, in_range

    versions = in_range(registry_releases("jax"), "0.4.30", "0.10.2")[-args.releases:]
    os.environ.pop("TTFG_CACHE_DIR", None)  # the user's cache: what a sweep reuses
    figures["disk"] = measure_disk(versions)
    print(json.dumps(figures["disk"]), flush=True)
    if not args.no_gate:
        figures["gate"] = measure_gate("0.4.38", "0.10.2", args.gate_budget, root)
        print(json.dumps(figures["gate"]), flush=True)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(figures, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
