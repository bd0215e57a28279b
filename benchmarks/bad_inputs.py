"""Try the CLI with the bad inputs a careless CI script or a new user would give it.

Why: exit codes are the contract with CI (0 pass, 1 regression, 2 broken input or
internal error). This script runs each bad input as a real ``ttfg`` process in a
scratch folder and prints a Markdown table: the input, the exit code, and the first
line of the message. A row whose exit code is not 2, or whose output has a traceback,
is marked ``WRONG`` and makes the script exit 1.

    python benchmarks/bad_inputs.py            # the table on stdout

None of the inputs measures anything; the whole table takes under 10 s here
(each row is a fresh interpreter).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _files(d: Path) -> None:
    """The scratch folder: broken results files and histories, and one good results file."""
    (d / "a-folder").mkdir()
    (d / "truncated.json").write_text('{"format": "ttfg-results", "version": 2, "cases": [')
    (d / "latin1.json").write_bytes(b'{"comment": "caf\xe9"}')
    (d / "nan.json").write_text('{"format": "ttfg-results", "version": 2, "cases": NaN}')
    (d / "list.json").write_text("[1, 2, 3]")
    hist = d / "history" / "machine"
    hist.mkdir(parents=True)
    (hist / "machine.json").write_text(json.dumps({"machine": "machine", "version": 1}))
    (hist / "0123abcd-env.json").write_text('{"commit_hash": "0123abcd", "results": {')
    (d / "bad.csv").write_bytes(b"case,metric,expected,margin\nresnet15/autograd,caf\xe9,1,0\n")
    (d / "locked.json").write_text("{}")
    (d / "plain.json").write_text(json.dumps({"format": "ttfg-results", "version": 2, "created": "2026-12-03",
                                              "complete": True, "environment": {}, "settings": {}, "cases": []}))


def _cases(d: Path) -> list[tuple[str, list[str]]]:
    tiny = ["--model", "resnet15:blocks=2", "--backend", "autograd"]
    return [
        ("unknown command", ["frobnicate"]),
        ("`--timeout nan`", ["run", *tiny, "--timeout", "nan"]),
        ("`--repeat 1e8`", ["run", *tiny, "--repeat", "1e8"]),
        ("`--threads -2`", ["run", *tiny, "--threads", "-2"]),
        ("model too small: `resnet15:blocks=0`", ["run", "--model", "resnet15:blocks=0", "--backend", "autograd"]),
        ("repeated model key", ["run", "--model", "resnet15:blocks=2,blocks=3", "--backend", "autograd"]),
        ("unknown backend", ["run", "--model", "resnet15", "--backend", "nosuch"]),
        ("`--out` is a folder", ["run", *tiny, "--out", str(d / "a-folder")]),
        ("`--out` under a file", ["run", *tiny, "--out", str(d / "truncated.json" / "r.json")]),
        ("`--out` on a read-only file system", ["run", *tiny, "--out", "/proc/ttfg.json"]),
        ("`--out` held by another run", ["run", *tiny, "--out", str(d / "locked.json")]),
        ("compare: missing file", ["compare", str(d / "missing.json"), str(d / "missing.json")]),
        ("compare: truncated results file", ["compare", str(d / "truncated.json"), str(d / "truncated.json")]),
        ("compare: not UTF-8", ["compare", str(d / "latin1.json"), str(d / "latin1.json")]),
        ("compare: NaN in a results file", ["compare", str(d / "nan.json"), str(d / "nan.json")]),
        ("compare: a list, not a results file", ["compare", str(d / "list.json"), str(d / "list.json")]),
        ("compare: `--alpha nan`", ["compare", "a.json", "b.json", "--alpha", "nan"]),
        ("regressions: truncated asv file", ["regressions", "--results", str(d / "history")]),
        ("report: `--threshold nan`", ["report", "--threshold", "nan"]),
        ("expect check: not UTF-8 CSV", ["expect", "check", str(d / "bad.csv"), "--runs", str(d / "list.json")]),
        ("gate: unknown base revision", ["gate", "--base", "no-such-rev", *tiny, "--out-dir", str(d / "gate")]),
        ("gate: `--alpha 1.5`", ["gate", "--base", "HEAD", "--alpha", "1.5"]),
        ("gate: `--min-pairs 1`", ["gate", "--base", "HEAD", "--min-pairs", "1"]),
        ("study of an unknown model", ["study", "chain", "--model", "bogus"]),
        ("check: `--tolerance -1`", ["check", "--tolerance", "-1"]),
        ("doctor: `--calibrate --budget 0`", ["doctor", "--calibrate", "--budget", "0"]),
        ("`--shard 4/3`", ["run", *tiny, "--shard", "4/3"]),
        ("gate: `--shard 1/0`", ["gate", "--base", "HEAD", *tiny, "--shard", "1/0"]),
        ("`ttfg shards 0`", ["shards", "0"]),
        ("merge: a results file that is no shard", ["merge", "results", str(d / "plain.json"), "--out",
                                                     str(d / "merged.json")]),
        ("merge: truncated results file", ["merge", "results", str(d / "truncated.json"), "--out",
                                           str(d / "merged.json")]),
        ("merge gate: a folder with no gate output", ["merge", "gate", str(d / "a-folder"), "--out-dir",
                                                      str(d / "merged-gate")]),
        ("merge asv: a list, not an asv result file", ["merge", "asv", str(d / "list.json"), "--out",
                                                        str(d / "merged-asv.json")]),
    ]


def _message(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in lines:
        if "error" in ln.lower() or "refused" in ln.lower() or "cannot" in ln.lower():
            return ln
    return lines[-1] if lines else ""


def main() -> int:
    wrong = 0
    with tempfile.TemporaryDirectory(prefix="ttfg-bad-inputs-") as tmp:
        d = Path(tmp)
        _files(d)
        holder = subprocess.Popen([sys.executable, "-c", "import time\nfrom ttfg.files import OneWriter\n"
                                   f"OneWriter({str(d / 'locked.json')!r}).acquire()\nprint('held', flush=True)\n"
                                   "time.sleep(600)"], stdout=subprocess.PIPE, text=True, cwd=ROOT)
        try:
            holder.stdout.readline()
            print("| bad input | exit | message |\n| --- | --- | --- |")
            for what, argv in _cases(d):
                proc = subprocess.run([sys.executable, "-m", "ttfg", *argv], capture_output=True, text=True,
                                      cwd=ROOT, timeout=300, env={**os.environ, "COLUMNS": "200"})
                text = proc.stderr + proc.stdout
                bad = proc.returncode != 2 or "Traceback" in text
                wrong += bad
                msg = _message(text).replace(tmp, "$TMP").replace("|", "\\|")
                flag = " **WRONG**" if bad else ""
                print(f"| {what} | {proc.returncode}{flag} | {msg[:160]} |", flush=True)
        finally:
            holder.kill()
            holder.wait()
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
