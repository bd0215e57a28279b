"""A/A gates: does ``ttfg gate`` leave an unchanged pull request alone, case by case?

Why: a gate that cries wolf on a comment-only pull request gets switched off, and one
lucky A/A gate proves nothing; the count tier's margins are per case, so each case needs
its own set. This script runs ``--trials`` real gates of one case, each in a fresh
process as CI runs it, where the head changes a comment only, and records every verdict,
the tier that gave it, the margin that decided (the gate's own words) and the wall time.
A *false alarm* is a verdict of regressed or improved, or exit 1.

Two sources of the pull request:

- ttfg's own reference models (default): this repository is cloned at HEAD (the gate runs
  from a second clone, so editing this checkout during a run changes nothing) and one
  commit on top adds a comment to the model's module (``models/MODEL.py``), a file the case
  imports, so the gate's check that the change ran passes as it would on a real one.
- a user's repository (``--repo DIR --base REV --head REV``, with ``--python`` the project's
  interpreter): the gate runs there as the project's CI would, reading its ttfg.toml; the
  flaxlab example's comment commit is such a pull request.

    python benchmarks/aa_gates.py --backend jax.jit --model resnet15 --trials 5 --out runs/aa-jit.json
    python benchmarks/aa_gates.py --repo ../flaxlab --base first --head comment --python ../venv/bin/python --trials 5
    python benchmarks/aa_gates.py --render runs/aa-jit.json --render runs/aa-flax.json

It prints a Markdown table with the load average around each gate; ``--out`` keeps the raw
rows (rewritten after every gate). Exit codes: 0 no false alarm, 1 a false alarm, 2 bad
input or a broken run (a gate that ended in neither 0 nor 1 is reported and counts as
broken, not as a pass).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from gate_power import BenchError, _git, _log, run_timed  # noqa: E402  (the same clone, log and gate-process helpers)
from ttfg import fmt  # noqa: E402
from ttfg.present.markdown_table import table  # noqa: E402

FALSE_ALARMS = ("regressed", "improved")
COMMENT = "# A comment, nothing else: an A/A pull request (benchmarks/aa_gates.py).\n"


def own_pull_request(work: Path, model: str) -> tuple[Path, str, str]:
    """Clones of this repository (measured, and the gate's code, importable from ``work/importable``) and a
    comment-only commit on the model's module: the measured clone, the base and the head."""
    clone, tool = work / "clone", work / "tool"
    commit = _git(ROOT, "rev-parse", "HEAD")
    for folder in (clone, tool):
        subprocess.run(["git", "clone", "--quiet", "--local", "--no-hardlinks", str(ROOT), str(folder)],
                       check=True, capture_output=True, timeout=300)
        _git(folder, "checkout", "--quiet", "--detach", commit)
    # The gate's code importable as ``ttfg`` from the second clone (the package maps harness/ and models/):
    # a folder holding only a ``ttfg`` link, put first on the gate's PYTHONPATH.
    (tool / "harness" / "models").symlink_to(Path("..") / "models")
    (work / "importable").mkdir()
    (work / "importable" / "ttfg").symlink_to(tool / "harness")
    module = clone / "models" / f"{model.split(':', 1)[0]}.py"
    if not module.is_file():
        raise BenchError(f"--model {model}: no models/{module.name} to add a comment to")
    module.write_text(module.read_text() + "\n" + COMMENT)
    _git(clone, "commit", "--quiet", "-a", "-m", "A/A: a comment only")
    return clone, commit, _git(clone, "rev-parse", "HEAD")


def counts(out_dir: Path) -> dict[str, list[dict]]:
    """Every instruction count the gate took, per side (its results files): an A/A set's same-code processes,
    for the noise audit."""
    found: dict[str, list[dict]] = {}
    for path in sorted(out_dir.glob("*.json")):
        if path.name == "gate.json":
            continue
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        for case in doc.get("cases") or []:
            for s in case.get("samples") or []:
                if s.get("kind") == "instructions" and s.get("ok"):
                    found.setdefault(path.stem, []).append({"instructions": s.get("instructions"),
                                                            "phases": s.get("instructions_phases"),
                                                            "note": s.get("instructions_note")})
    return found


def gate_row(cmd: list[str], cwd: Path, env: dict, out_dir: Path, timeout: float) -> dict:
    row = run_timed(cmd, cwd, env, timeout)
    row["wall_s"] = round(row["wall_s"], 1)
    row["counts"] = counts(out_dir)
    gate_json = out_dir / "gate.json"
    if not gate_json.is_file():
        return {**row, "verdict": "no verdict"}
    doc = json.loads(gate_json.read_text())
    case = (doc.get("cases") or [{}])[0]
    verdict = case.get("verdict") or {}
    return {**row, "case": case.get("case"), "verdict": verdict.get("verdict", "no verdict"),
            "ratio": verdict.get("ratio"), "reason": verdict.get("reason"), "tier": case.get("tier"),
            "pairs": case.get("pairs"), "elapsed_s": doc.get("elapsed_s")}


def run(args) -> dict:
    work = Path(tempfile.mkdtemp(prefix="ttfg-aa-"))
    doc = {"format": "ttfg-aa-gates", "version": 1, "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
           "commit": _git(ROOT, "rev-parse", "HEAD"), "cpus": os.cpu_count(),
           "settings": {k: v for k, v in vars(args).items() if k not in ("out", "render")}, "rows": []}
    try:
        if args.repo:
            repo = Path(args.repo).resolve()
            base, head = _git(repo, "rev-parse", args.base), _git(repo, "rev-parse", args.head)
            python, cwd, env = args.python or sys.executable, repo, dict(os.environ)
            selection: list[str] = []
            doc["pull_request"] = f"{repo.name} {base[:10]}..{head[:10]}"
        else:
            _log(f"cloning {ROOT} into {work}; a comment-only commit on models/{args.model.split(':')[0]}.py")
            repo, base, head = own_pull_request(work, args.model)
            python, cwd = sys.executable, work
            importable = work / "importable"
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(importable),
                                                                            os.environ.get("PYTHONPATH")]))}
            selection = ["--repo", str(repo), "--model", args.model, "--backend", args.backend]
            doc["pull_request"] = f"ttfg {base[:10]} + a comment in models/{args.model.split(':')[0]}.py"
        for i in range(args.trials):
            out_dir = work / f"gate-{i}"
            out_dir.mkdir()
            cmd = [python, "-m", "ttfg", "gate", "--base", base, "--head", head, *selection, "--out-dir", str(out_dir),
                   *args.gate_arg]
            row = {"trial": i, **gate_row(cmd, cwd, env, out_dir, args.timeout)}
            row["false_alarm"] = row["verdict"] in FALSE_ALARMS or row["exit_code"] == 1
            row["broken"] = row["exit_code"] not in (0, 1)
            _log(f"A/A {i}: {row['verdict']} (exit {row['exit_code']}) in {row['wall_s']:.0f} s, tier {row.get('tier')}; "
                 f"load {row['load_before']}-{row['load_after']}")
            doc["rows"].append(row)
            _save(doc, args.out)
    finally:
        doc["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        _save(doc, args.out)
        shutil.rmtree(work, ignore_errors=True)
    return doc


def _save(doc: dict, path: str | None) -> None:
    if path:
        from ttfg.files import atomic_write_text

        atomic_write_text(path, json.dumps(doc, indent=1) + "\n")


def render(docs: list[dict]) -> tuple[list[str], int]:
    rows, alarms, broken = [], 0, 0
    for doc in docs:
        for r in doc["rows"]:
            alarms += bool(r.get("false_alarm"))
            broken += bool(r.get("broken"))
            reason = " ".join(str(r.get("reason") or "").split())
            rows.append([r.get("case") or doc.get("pull_request"), r["trial"], r["verdict"], r["exit_code"],
                         r.get("tier") or fmt.MISSING, fmt.seconds(r["wall_s"]), f"{r['load_before']}-{r['load_after']}",
                         "**yes**" if r.get("false_alarm") else "no", reason[:160]])
    lines = table(["case", "trial", "verdict", "exit", "tier", "wall", "load", "false alarm", "why (the gate's words)"], rows)
    lines.append("")
    lines.append(f"{len(rows)} A/A gates: {alarms} false alarm(s), {broken} broken.")
    return lines, (2 if broken else 1 if alarms else 0)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="aa_gates.py", description=__doc__.split("\n\n")[0],
                                epilog="exit codes: 0 no false alarm, 1 a false alarm, 2 bad input or a broken run")
    p.add_argument("--backend", default="jax.jit", help="the gated backend, for ttfg's own models (default: jax.jit)")
    p.add_argument("--model", default="resnet15", help="the gated model, for ttfg's own models (default: resnet15)")
    p.add_argument("--repo", help="a user's repository to gate instead (with --base, --head; its ttfg.toml selects)")
    p.add_argument("--base", help="with --repo: the base revision")
    p.add_argument("--head", help="with --repo: the comment-only head revision")
    p.add_argument("--python", help="with --repo: the project's interpreter (default: this one)")
    p.add_argument("--trials", type=int, default=5, help="A/A gates (default: 5)")
    p.add_argument("--timeout", type=float, default=1800, help="seconds a gate may take (default: 1800)")
    p.add_argument("--gate-arg", action="append", default=[], metavar="ARG",
                   help="extra argument for every gate, e.g. --gate-arg=--profiles=0 (repeatable)")
    p.add_argument("--out", metavar="FILE", help="raw rows as JSON (rewritten after each gate)")
    p.add_argument("--render", action="append", metavar="FILE", help="print the table of earlier --out files (repeatable)")
    args = p.parse_args(argv)
    try:
        if args.render:
            docs = [json.loads(Path(f).read_text()) for f in args.render]
        else:
            if args.repo and not (args.base and args.head):
                p.error("--repo needs --base and --head")
            if not args.repo and (args.base or args.head or args.python):
                p.error("--base, --head and --python go with --repo")
            if not 1 <= args.trials <= 1000:
                p.error("--trials must be in [1, 1000]")
            docs = [run(args)]
    except (BenchError, OSError, ValueError, KeyError, subprocess.SubprocessError) as exc:
        print(f"aa_gates: {exc}", file=sys.stderr)
        return 2
    lines, code = render(docs)
    print("\n".join(lines))
    return code


if __name__ == "__main__":
    sys.exit(main())
