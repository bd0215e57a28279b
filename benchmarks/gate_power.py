"""The gate's power: does ``ttfg gate`` flag real regressions of known size, how fast, and why?

Why: a gate is only as useful as what it catches and what it leaves alone. This script
measures both with real gates on real commits. It clones this repository into a
temporary folder (``git clone --local --no-hardlinks``, at the current commit), commits
one injected regression on top (``benchmarks/gate_injections.py``: Python work while
tracing, an extra op per block, C work after XLA's compile; each sized to a fraction of
a measured base), and runs ``python -m ttfg gate --repo CLONE --base HEAD~1 --head
HEAD`` in a fresh process, as CI would. The gate checks both revisions out as worktrees
of the clone, so the head's probes import the injected code. The gate itself runs from a
second clone at the same commit, so editing this checkout during a run changes nothing.

Per regression it records: detected or not (the gate exits 1), the verdict, the wall
time to it, the tier that decided (when the gate has tiers), the change the injection
actually made (phase seconds, structural counters, instructions, from the gate's own
results files) and whether the attribution (gate.json, summary.md and ``ttfg explain``
when it exists) named the injected function. Then A/A trials (an empty commit over the
same base): on the deterministic tiers (structural and instruction counts; without
``--tiers``, a two-pair gate whose structural counter comparison is what is checked),
any regressed or improved verdict is a false alarm; on the time tier, a verdict other
than unchanged or inconclusive is one.

    python benchmarks/gate_power.py --backend autograd --sizes 5,10 --trials 5 --budget 90s
    python benchmarks/gate_power.py --out runs/power.json      # jax.jit resnet15, 2/5/10 %, 20 A/A trials

It prints a Markdown table with the load average around every gate; ``--out`` keeps the
raw results (rewritten after every gate, so an interrupted run keeps what it did).
Exit codes: 0 done, 1 an A/A trial raised a false alarm, 2 bad input or a broken run.
A full default run takes hours of one core (every jax.jit time gate up to --budget,
callgrind samples about two minutes of CPU each); start small.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

import gate_injections as injections  # noqa: E402
from ttfg import fmt  # noqa: E402
from ttfg.present.markdown_table import table  # noqa: E402

#: What an A/A trial on the deterministic tiers runs, when the gate has tiers.
DETERMINISTIC_TIERS = "structural,instructions"
#: The structural counter an extra op per block grows, per framework family.
PRIMARY_COUNTER = {"jax": "jaxpr_eqns", "autograd": "autograd_primitives", "torch": "autograd_nodes"}
FALSE_ALARMS = ("regressed", "improved")


class BenchError(Exception):
    """The benchmark cannot go on: a failed clone, calibration or gate start."""


# ---------------------------------------------------------------------------- arguments


def _sizes(text: str) -> list[float]:
    try:
        values = [float(part.strip().rstrip("%")) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected percentages such as 2,5,10") from None
    if not values or any(not 0 < v <= 100 for v in values):
        raise argparse.ArgumentTypeError(f"{text!r}: every size must be a percentage in (0, 100]")
    return values


def _kinds(text: str) -> list[str]:
    kinds = [k.strip() for k in text.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in injections.KINDS]
    if not kinds or unknown:
        raise argparse.ArgumentTypeError(f"unknown kind(s) {', '.join(unknown) or text!r}; "
                                         f"known: {', '.join(injections.KINDS)}")
    return kinds


def _count(low: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not low <= value <= 1000:
            raise argparse.ArgumentTypeError(f"{value} is not in [{low}, 1000]")
        return value

    return parse


def _duration(text: str) -> str:
    """``--budget``, checked as ``ttfg gate`` checks it (``cli/options.duration``) and kept as typed: each gate
    process is given the text, and the summary shows it."""
    from ttfg.cli.options import duration

    return str(duration("--budget")(text))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="gate_power.py", description=__doc__.split("\n\n")[0],
                                epilog="exit codes: 0 done, 1 an A/A false alarm, 2 bad input or a broken run")
    p.add_argument("--backend", default="jax.jit", help="the gated backend (default: jax.jit)")
    p.add_argument("--model", default="resnet15", help="the gated model (default: resnet15)")
    p.add_argument("--kinds", type=_kinds, default=list(injections.KINDS),
                   help=f"injected regressions, comma-separated (default: {','.join(injections.KINDS)})")
    p.add_argument("--sizes", type=_sizes, default=[2.0, 5.0, 10.0],
                   help="regression sizes in percent (default: 2,5,10)")
    p.add_argument("--relative-to", choices=("first_grad", "phase"), default="first_grad",
                   help="what a size is a fraction of: the base's first gradient (the gated metric; default) or "
                        "the phase the work lands in (trace, compile)")
    p.add_argument("--trials", type=_count(0), default=20,
                   help="A/A trials on the deterministic tiers (default: 20)")
    p.add_argument("--time-trials", type=_count(0), default=2, help="A/A gates on the time tier (default: 2)")
    p.add_argument("--budget", type=_duration, default="5m", help="each gate's --budget (default: 5m)")
    p.add_argument("--tiers", default=None,
                   help="--tiers for the regression gates (default: the gate's own default; ignored by a gate "
                        "without tiers)")
    p.add_argument("--calibrate-repeat", type=_count(1), default=3,
                   help="fresh base processes that size the injections (default: 3)")
    p.add_argument("--gate-arg", action="append", default=[], metavar="ARG",
                   help="extra argument for every gate, e.g. --gate-arg=--min-effect=0.02 (repeatable)")
    p.add_argument("--out", metavar="FILE", help="raw results as JSON (rewritten after each gate)")
    p.add_argument("--keep", action="store_true", help="keep the temporary clone and gate folders")
    p.add_argument("--render", action="append", metavar="FILE",
                   help="print the tables of an earlier --out file instead of running (repeatable)")
    args = p.parse_args(argv)
    from ttfg import engines
    from ttfg.errors import TtfgError
    from ttfg.measure.cases import load_model

    if args.backend not in engines.names():
        p.error(f"--backend {args.backend}: unknown; known: {', '.join(engines.names())}")
    try:
        load_model(args.model)
    except TtfgError as exc:
        p.error(f"--model {args.model}: {exc}")
    if args.out:
        out = Path(args.out)
        if out.is_dir() or not out.parent.is_dir():
            p.error(f"--out {args.out}: {'is a folder' if out.is_dir() else 'its folder does not exist'}")
    return args


# ---------------------------------------------------------------------------- processes


def _env(pythonpath: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(pythonpath), os.environ.get("PYTHONPATH")]))}


def _git(repo: Path, *args: str) -> str:
    out = subprocess.run(["git", "-C", str(repo), "-c", "user.name=ttfg gate_power", "-c",
                          "user.email=gate-power@localhost", *args], capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise BenchError(f"git {' '.join(args)} in {repo}: {out.stderr.strip() or out.stdout.strip()}")
    return out.stdout.strip()


def ttfg(*args: str, cwd: Path, pythonpath: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    """``python -m ttfg ARGS``: this interpreter, with ``pythonpath`` first on the path."""
    return subprocess.run([sys.executable, "-m", "ttfg", *args], capture_output=True, text=True, cwd=cwd,
                          env=_env(pythonpath), timeout=timeout)


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def _uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, timeout=10).stdout.strip()
    except OSError:
        return f"load average {os.getloadavg()}"


# ---------------------------------------------------------------------------- calibration


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def calibrate(clone: Path, work: Path, args) -> dict:
    """The base's phases and counters, from ``ttfg run`` of the clone's base commit."""
    from ttfg.results import record

    out = work / "calibration.json"
    ran = ttfg("run", "--model", args.model, "--backend", args.backend, "--repeat", str(args.calibrate_repeat),
               "--out", str(out), cwd=clone, pythonpath=clone, timeout=1800)
    if ran.returncode != 0 or not out.is_file():
        raise BenchError(f"calibration run failed (exit {ran.returncode}): {(ran.stderr or ran.stdout)[-600:]}")
    case = record.load(out).cases[0]
    phases = {m: _median(case.values(m)) for m in ("first_grad_s", "trace_s", "lower_s", "compile_s", "execute_s")}
    counters = {}
    for s in case.good("timing"):
        for k, v in (s.counters or {}).items():
            counters.setdefault(k, v)
    return {"case": case.id, "samples": len(case.good("timing")), "phases": phases, "counters": counters}


def _repeat_nodes(model: str) -> tuple[int, int]:
    """``(Repeat nodes, repeated blocks)`` of the model: the python work runs once per node."""
    from ttfg.engines.interpret import repeats
    from ttfg.measure.cases import load_model

    found = [layer for _, layer in repeats(load_model(model).network)]
    return len(found), sum(layer.count for layer in found)


_PER_ITERATION: dict[str, float] = {}


def _per_iteration(kind: str) -> float:
    """Measured once per kind and run, so the sizes of one kind are exact multiples of each other."""
    if kind not in _PER_ITERATION:
        _PER_ITERATION[kind] = injections.seconds_per_iteration(kind, 200_000 if kind == "python" else 200)
    return _PER_ITERATION[kind]


def plan(kind: str, size: float, calib: dict, args) -> dict:
    """How much to inject for ``size`` percent, and what that should cost."""
    spec = injections.KINDS[kind]
    phase = spec.phase(args.backend)
    nodes, blocks = _repeat_nodes(args.model)
    if kind == "extra-op":
        family = args.backend.split(".")[0]
        counter = PRIMARY_COUNTER.get(family) or next(iter(calib["counters"]), None)
        base = calib["counters"].get(counter)
        ops = max(1, round(size / 100 * base / blocks)) if base else 1
        return {"amount": ops, "unit": spec.unit, "counter": counter, "counter_base": base,
                "expected": f"+{ops * blocks} {counter}" + (f" (+{fmt.percent(ops * blocks / base)})" if base else "")}
    reference = calib["phases"]["first_grad_s" if args.relative_to == "first_grad" else f"{phase}_s"]
    if not reference:
        raise BenchError(f"the base reports no {phase} phase for {args.backend}; use --relative-to first_grad")
    per_iteration = _per_iteration(kind)
    target = size / 100 * reference
    total = max(1, round(target / per_iteration))
    amount = max(1, round(total / nodes)) if kind == "python" else total
    return {"amount": amount, "unit": spec.unit, "per_iteration_s": per_iteration, "target_s": target,
            "phase": phase, "reference_s": reference,
            "expected": f"+{fmt.seconds(target)} in {phase} (+{fmt.percent(target / calib['phases']['first_grad_s'])} "
                        "of the first gradient)"}


# ---------------------------------------------------------------------------- one gate


def _find(doc, key: str):
    """The first value under ``key`` anywhere in a JSON document (tier and attribution fields move)."""
    if isinstance(doc, dict):
        if key in doc and doc[key] not in (None, "", [], {}):
            return doc[key]
        doc = list(doc.values())
    if isinstance(doc, list):
        for item in doc:
            found = _find(item, key)
            if found is not None:
                return found
    return None


def _tier(case: dict, has_tiers: bool) -> str | None:
    for holder in (case, case.get("verdict") or {}):
        for key in ("tier", "decided_by", "decided_tier"):
            if isinstance(holder.get(key), str):
                return holder[key]
    return None if has_tiers else "time"


def _measured_change(out_dir: Path, kind: str, plan_: dict) -> dict:
    """What the head really changed, from the gate's own results files.

    Phase seconds are the median of paired differences (head - base within a pair);
    instructions the ratio of medians less one; a counter the difference of medians.
    """
    from ttfg.results import record

    change: dict = {}
    try:
        sides = {role: record.load(out_dir / f"{role}.json").cases[0] for role in ("base", "head")}
    except Exception as exc:  # a gate that stopped early has no files; the row says so
        return {"error": f"{type(exc).__name__}: {exc}"}
    by_pair = {r: {s.pair: s for s in sides[r].good("timing") if s.pair is not None} for r in ("base", "head")}
    common = sorted(set(by_pair["base"]) & set(by_pair["head"]))
    for metric in ("first_grad_s", "trace_s", "compile_s", "execute_s"):
        diffs = [by_pair["head"][i].value(metric) - by_pair["base"][i].value(metric) for i in common
                 if by_pair["head"][i].value(metric) is not None and by_pair["base"][i].value(metric) is not None]
        if diffs:
            change[metric] = statistics.median(diffs)  # paired: the pair's drift cancels
    base_first = _median(sides["base"].values("first_grad_s"))
    phase = plan_.get("phase")
    if base_first and phase and f"{phase}_s" in change:
        change["realized"] = change[f"{phase}_s"] / base_first  # the injection's share of this gate's first gradient
    values = {r: _median([v for k in record.KINDS for v in sides[r].values("instructions", kind=k, cache=None)])
              for r in ("base", "head")}
    if values["base"] and values["head"]:
        change["instructions"] = values["head"] / values["base"] - 1
    counter = plan_.get("counter")
    if counter:
        b, h = (_median(sides[r].values(f"counters.{counter}")) for r in ("base", "head"))
        if b is not None and h is not None:
            change[f"counters.{counter}"] = h - b
    return change


def run_timed(cmd: list[str], cwd: Path, env: dict, limit: float) -> dict:
    """One gate process, stopped (SIGTERM: the gate removes its worktrees) after ``limit`` seconds: its exit code,
    wall time, the load average around it and its output's tail."""
    load_before = _load()
    started = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=cwd, env=env)
    try:
        output, _ = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        proc.terminate()
        output, _ = proc.communicate(timeout=120)
        output += f"\n(stopped after {limit:.0f} s)"
    return {"exit_code": proc.returncode, "wall_s": time.monotonic() - started, "load_before": load_before,
            "load_after": _load(), "output_tail": output[-3000:]}


def run_gate(clone: Path, tool: Path, base: str, head: str, out_dir: Path, args, tiers: str | None, caps: dict,
             extra: tuple[str, ...] = ()) -> dict:
    """One real ``ttfg gate`` in a fresh process; its verdict, timing and attribution."""
    from ttfg.fmt import Duration

    cmd = ["gate", "--repo", str(clone), "--base", base, "--head", head, "--model", args.model, "--backend",
           args.backend, "--budget", args.budget, "--out-dir", str(out_dir), *extra, *args.gate_arg]
    if tiers and caps["tiers"]:
        cmd += ["--tiers", tiers]
    row = {"command": "ttfg " + " ".join(cmd), **run_timed([sys.executable, "-m", "ttfg", *cmd], out_dir.parent,
                                                          _env(tool), 3 * Duration.parse(args.budget).seconds + 1800)}
    gate_json = out_dir / "gate.json"
    if not gate_json.is_file():
        row.update(verdict="no verdict", detected=False)
        return row
    doc = json.loads(gate_json.read_text())
    case = (doc.get("cases") or [{}])[0]
    verdict = (case.get("verdict") or {})
    row.update(verdict=verdict.get("verdict", "no verdict"), ratio=verdict.get("ratio"), reason=verdict.get("reason"),
               ci=[verdict.get("ci_low"), verdict.get("ci_high")], pairs=case.get("pairs"), case_wall_s=case.get("wall_s"),
               tier=_tier(case, caps["tiers"]), counters_changed=[c.get("metric") for c in case.get("changes") or []],
               detected=row["exit_code"] == 1)
    top = _find(case, "top_function")
    row["top_function"] = top.get("fn") if isinstance(top, dict) else top
    texts = [gate_json.read_text()]
    if (out_dir / "summary.md").is_file():
        texts.append((out_dir / "summary.md").read_text())
    if caps["explain"]:
        explained = ttfg("explain", str(out_dir), cwd=out_dir.parent, pythonpath=tool, timeout=600)
        row["explain_exit_code"] = explained.returncode
        texts.append(explained.stdout)
    row["attribution_text"] = "\n".join(texts)
    return row


# ---------------------------------------------------------------------------- the run


def capabilities(work: Path, tool: Path) -> dict:
    """What the gate under test can do: tiers, ``ttfg explain``."""
    gate_help = ttfg("gate", "--help", cwd=work, pythonpath=tool)
    return {"tiers": "--tiers" in gate_help.stdout,
            "explain": ttfg("explain", "--help", cwd=work, pythonpath=tool).returncode == 0}


def _commit_injection(clone: Path, base: str, message: str, kind: str | None = None, amount: int = 0) -> str:
    _git(clone, "checkout", "--quiet", "--force", "--detach", base)
    if kind is None:
        _git(clone, "commit", "--quiet", "--allow-empty", "-m", message)
    else:
        injections.apply(clone, kind, amount)
        _git(clone, "commit", "--quiet", "-a", "-m", message)
    return _git(clone, "rev-parse", "HEAD")


def _save(doc: dict, path: str | None) -> None:
    if path:
        from ttfg.files import atomic_write_text

        slim = json.loads(json.dumps(doc))
        for row in slim["regressions"] + slim["aa"]:
            row.pop("attribution_text", None)
        atomic_write_text(path, json.dumps(slim, indent=1) + "\n")


def _log(text: str) -> None:
    print(f"[{datetime.now(timezone.utc):%H:%M:%S}] {text}", file=sys.stderr, flush=True)


def run(args) -> dict:
    work = Path(tempfile.mkdtemp(prefix="ttfg-power-"))
    clone, tool = work / "clone", work / "tool"
    base = _git(ROOT, "rev-parse", "HEAD")
    doc = {"format": "ttfg-gate-power", "version": 1, "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
           "uptime_start": _uptime(), "commit": base, "dirty": bool(_git(ROOT, "status", "--porcelain", "--",
                                                                         "harness", "models")),
           "python": platform.python_version(), "cpus": os.cpu_count(), "settings": {
               k: v for k, v in vars(args).items() if k != "out"}, "regressions": [], "aa": [], "not_run": []}
    try:
        _log(f"cloning {ROOT} at {base[:10]} into {clone} (measured) and {tool} (the gate's own code)")
        for folder in (clone, tool):
            subprocess.run(["git", "clone", "--quiet", "--local", "--no-hardlinks", str(ROOT), str(folder)],
                           check=True, capture_output=True, timeout=300)
            _git(folder, "checkout", "--quiet", "--detach", base)
        doc["capabilities"] = caps = capabilities(work, tool)
        doc["valgrind"] = shutil.which("valgrind")
        _log(f"gate capabilities: {caps}; calibrating {args.backend} {args.model} ({args.calibrate_repeat} processes)")
        doc["calibration"] = calib = calibrate(clone, work, args)
        _log(f"base: {json.dumps(calib['phases'])}")
        for kind in args.kinds:
            if not injections.KINDS[kind].applies_to(args.backend):
                doc["not_run"].append(f"{kind}: {injections.KINDS[kind].description}; not applicable to {args.backend}")
                continue
            for size in args.sizes:
                p = plan(kind, size, calib, args)
                head = _commit_injection(clone, base, f"inject {kind} {size:g} %", kind, p["amount"])
                out_dir = work / "gates" / f"{kind}-{size:g}"
                out_dir.mkdir(parents=True)
                _log(f"gate {kind} {size:g} %: {p['amount']} {p['unit']}, expected {p['expected']}")
                row = {"kind": kind, "size_percent": size, "function": injections.KINDS[kind].function, **p,
                       **run_gate(clone, tool, base, head, out_dir, args, args.tiers, caps)}
                row["attribution_named"] = row["function"] in row.get("attribution_text", "")
                row["measured"] = _measured_change(out_dir, kind, p)
                _log(f"  -> {row['verdict']} (exit {row['exit_code']}) in {row['wall_s']:.0f} s, tier {row.get('tier')}")
                doc["regressions"].append(row)
                _save(doc, args.out)
        aa_plan = [("deterministic", DETERMINISTIC_TIERS if caps["tiers"] else None, i) for i in range(args.trials)]
        aa_plan += [("time", "time" if caps["tiers"] else None, i) for i in range(args.time_trials)]
        if args.trials and not caps["tiers"]:
            doc["not_run"].append("A/A on structural + instruction tiers: this gate has no --tiers; each deterministic "
                                  "trial is a two-pair gate whose structural counter comparison is checked")
        if args.trials and caps["tiers"] and not doc["valgrind"]:
            doc["not_run"].append("instruction tier: valgrind is missing, the A/A trials count structural counters only")
        for family, tiers, i in aa_plan:
            head = _commit_injection(clone, base, f"A/A {family} {i}")
            out_dir = work / "gates" / f"aa-{family}-{i}"
            out_dir.mkdir(parents=True)
            extra = ("--min-pairs", "2", "--max-pairs", "2") if family == "deterministic" and not caps["tiers"] else ()
            row = {"family": family, "trial": i, **run_gate(clone, tool, base, head, out_dir, args, tiers, caps, extra)}
            if family == "deterministic":
                row["false_alarm"] = row["verdict"] in FALSE_ALARMS if caps["tiers"] else bool(
                    [m for m in row.get("counters_changed", []) if m and m.startswith("counters.")])
            else:
                row["false_alarm"] = row["verdict"] in FALSE_ALARMS
            _log(f"A/A {family} {i}: {row['verdict']} in {row['wall_s']:.0f} s, tier {row.get('tier')}, "
                 f"false alarm: {row['false_alarm']}")
            doc["aa"].append(row)
            _save(doc, args.out)
    finally:
        doc["uptime_end"] = _uptime()
        doc["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        _save(doc, args.out)
        if args.keep:
            _log(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return doc


# ---------------------------------------------------------------------------- the table


def _verdict_cell(row: dict) -> str:
    ratio = f" {fmt.factor(row['ratio'])}" if row.get("ratio") is not None else ""
    return f"{row['verdict']}{ratio}"


def _measured_cell(row: dict) -> str:
    m = row.get("measured") or {}
    parts = []
    phase = row.get("phase")
    if phase and f"{phase}_s" in m:
        realized = f" ({fmt.change(m['realized'])} of first grad)" if "realized" in m else ""
        parts.append(f"{phase} {'+' if m[f'{phase}_s'] >= 0 else ''}{fmt.seconds(m[f'{phase}_s'])}{realized}")
    if "first_grad_s" in m and phase != "execute":
        parts.append(f"first grad {'+' if m['first_grad_s'] >= 0 else ''}{fmt.seconds(m['first_grad_s'])}")
    for k, v in m.items():
        if k.startswith("counters."):
            parts.append(f"{k[9:]} {v:+,.0f}")
    if "instructions" in m:
        parts.append(f"instructions {fmt.change(m['instructions'])}")
    return "; ".join(parts) or fmt.MISSING


def _short(name: str, width: int = 40) -> str:
    """A function name for a table cell: C++ symbols run to hundreds of characters."""
    return name if len(name) <= width else name[: width - 1] + "…"


def _capabilities_text(doc: dict) -> str:
    caps = doc.get("capabilities") or {}
    tiers = f"gate tiers {doc['settings'].get('tiers') or 'default'}" if caps.get("tiers") else "a gate without tiers (time only)"
    return f"{tiers}, {'with' if caps.get('explain') else 'no'} `ttfg explain`, valgrind {'present' if doc.get('valgrind') else 'missing'}"


def markdown(doc: dict) -> str:
    lines = [f"gate power: `{doc['settings']['backend']}` `{doc['settings']['model']}`, commit "
             f"{doc['commit'][:10]}, budget {doc['settings']['budget']} per gate, sizes relative to "
             f"{doc['settings']['relative_to'].replace('_', ' ')}; {_capabilities_text(doc)}", "",
             f"- start: `{doc['uptime_start']}`", f"- end: `{doc.get('uptime_end', '')}`", ""]
    rows = []
    for r in doc["regressions"]:
        rows.append([r["kind"], f"{r['size_percent']:g} %", f"{r['amount']:,} {r['unit']}", r["expected"],
                     _measured_cell(r), "yes" if r["detected"] else "no", _verdict_cell(r), r.get("tier") or fmt.MISSING,
                     fmt.seconds(r["wall_s"]), r.get("pairs", fmt.MISSING),
                     ", ".join(m for m in r.get("counters_changed", []) if m) or fmt.MISSING,
                     ("yes" if r["attribution_named"] else "no") + (f" (top: `{_short(r['top_function'])}`)"
                                                                   if r.get("top_function") else ""),
                     f"{r['load_before']:.1f}–{r['load_after']:.1f}"])
    if rows:
        lines += table(["kind", "size", "injected", "expected", "measured (head − base)", "detected", "verdict",
                        "tier", "time to verdict", "pairs", "counters changed", "attribution named it", "load"],
                       rows) + [""]
    aa_rows = []
    for family in ("deterministic", "time"):
        trials = [r for r in doc["aa"] if r["family"] == family]
        if not trials:
            continue
        verdicts: dict[str, int] = {}
        for r in trials:
            verdicts[r["verdict"]] = verdicts.get(r["verdict"], 0) + 1
        loads = [r["load_before"] for r in trials] + [r["load_after"] for r in trials]
        tiers = sorted({r.get("tier") or fmt.MISSING for r in trials})
        label = {"time": "time tier"}.get(family) or (
            "structural + instructions" if (doc.get("capabilities") or {}).get("tiers")
            else "structural counters (of a 2-pair gate; its time verdict is not judged)")
        aa_rows.append([label, len(trials), sum(r["false_alarm"] for r in trials),
                        ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items())), ", ".join(tiers),
                        fmt.seconds(statistics.median(r["wall_s"] for r in trials)),
                        f"{min(loads):.1f}–{max(loads):.1f}"])
    if aa_rows:
        lines += table(["A/A", "trials", "false alarms", "verdicts", "tier", "median time", "load"], aa_rows) + [""]
    lines += [f"- not run: {why}" for why in doc["not_run"]]
    return "\n".join(lines).rstrip() + "\n"


def render(paths: list[str]) -> int:
    for path in paths:
        try:
            doc = json.loads(Path(path).read_text(encoding="utf-8"))
            if not isinstance(doc, dict) or doc.get("format") != "ttfg-gate-power":
                raise ValueError("not a gate_power.py --out file")
            print(f"### {path}\n\n{markdown(doc)}")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            print(f"gate_power.py: error: {path}: {exc}", file=sys.stderr)
            return 2
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.render:
        return render(args.render)
    try:
        doc = run(args)
    except KeyboardInterrupt:
        print("interrupted; --out holds the finished gates", file=sys.stderr)
        return 2
    except (BenchError, injections.PatchError, subprocess.SubprocessError, OSError) as exc:
        print(f"gate_power.py: error: {exc}", file=sys.stderr)
        return 2
    print(markdown(doc))
    return 1 if any(r["false_alarm"] for r in doc["aa"]) else 0


if __name__ == "__main__":
    sys.exit(main())
