"""Try the CLI with the bad inputs a careless CI script, a new user or a hostile file would give it.

Why: exit codes are the contract with CI (0 pass, 1 regression, 2 broken input or internal error).
This script runs each input as a real ``ttfg`` process in a scratch folder and prints a Markdown
table: the input, the exit code, and the first line of the message. Most rows expect exit 2; a row
that expects something else says so (a merge whose step summary cannot be written keeps its
verdict's exit code; ``COLUMNS=0`` still prints). A row whose exit code is not the expected one,
whose output has a traceback, or whose own check fails (a file that must not change, a device that
must stay a device) is marked ``WRONG`` and makes the script exit 1.

    python benchmarks/bad_inputs.py                # the table on stdout
    python benchmarks/bad_inputs.py --only "env "  # the rows whose first column starts so (repeatable)
    python benchmarks/bad_inputs.py --only bisect --only "report --bisect"

The rows ``env N`` are issue 29's 19 classes, at least one row each (environments told apart by content,
dependencies read as uv reads them, hostile sweeps, the environment cache, ``init`` and ``config`` on
scratch projects made here, a guard of a phase the backend does not split). None builds an
environment: a broken cache entry is faked under a scratch ``TTFG_CACHE_DIR``; class 2's gate lets uv
resolve two revisions' declarations of a scratch repository (seconds from uv's cache) and is refused
there; class 12 runs two one-process probes in this interpreter (``--env current``) and merges them.
The rows after the first 33 are issue 25's 21 classes (``class N`` in the first column), each as a
real process, then issue 29's, then issue 32's ``ttfg bisect`` refusals (and its one row that is no refusal: ``--good`` and
``--bad`` the same commit is "no step", exit 0) and ``ttfg report --bisect``'s, then issue 45's
(``init 45.N``, in ``bad_inputs_user_projects.py``: a flat layout that must still build, a submodule
that cannot be fetched, a snapshot over its limit, a project declaring two frameworks). Class 4 (a head that times
out in 2 of 3 processes) needs a real gate of two revisions and is tested in process
(``tests/test_reliability.py``); class 5 runs a real 45-second ``ttfg doctor --calibrate``. The rows ``keys N``
(issue 44's items, and issue 46's item 2) and their files are in ``bad_inputs_facts.py``; the rows ``layouts N``
and ``confirm 40.N`` (issue 40's layouts, cases, config and ``regressions --confirm``, issue 43's measured path) in
``bad_inputs_layouts.py``; issue 47's ``fn N``
rows in ``bad_inputs_functions.py``; issue 41's ``profile N`` rows in ``bad_inputs_profile.py``. The whole table (108 rows, before the rows of issues 40, 43, 46 and 47) took
1 min 52 s on the 2-core VM at load average 2.0-3.5, the cores shared with other engineers' work (each row is a
fresh interpreter; five rows run probes).
"""

from __future__ import annotations

import json
import os
import resource
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import bad_inputs_user_projects as user_projects  # issue 45's rows, beside this script

ROOT = Path(__file__).resolve().parents[1]
TINY = ["--model", "resnet15:blocks=2", "--backend", "autograd"]
CASES = ["resnet15:blocks=2/autograd/params=args,chain=unrolled",
         "resnet15:blocks=2/torch.eager/params=closure,chain=unrolled"]


@dataclass
class Row:
    """One input: the arguments, the exit code it must give, and what else must hold afterwards."""

    what: str
    argv: list[str]
    expect: int = 2
    env: dict = field(default_factory=dict)
    #: Returns why the outcome is wrong (given the finished process: ``stdout``, ``stderr``), or None.
    check: Callable[[subprocess.CompletedProcess], str | None] | None = None
    #: Runs in the child before exec (a resource limit).
    limit: Callable[[], None] | None = None
    #: The folder it runs in (a scratch project, for ``ttfg config``); None: the repository's root.
    cwd: Path | None = None
    #: Seconds it may run (a row that counts jax's instructions under callgrind needs more than most).
    timeout: int = 300


# --------------------------------------------------------------------------- files the rows read


def _write(path: Path, doc) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return path


def _results(cases: list[str], shard: dict | None = None, gate: dict | None = None) -> dict:
    """A minimal valid results file (version 2) holding ``cases`` without samples."""
    return {"format": "ttfg-results", "version": 2, "created": "2026-12-03T00:00:00+00:00", "complete": True,
            "environment": {"git": {"commit": "c" * 40}}, "settings": {}, "shard": shard, "gate": gate,
            "cases": [{"id": c, "model": c.split("/")[0], "backend": c.split("/")[1], "variant": {},
                       "samples": []} for c in cases]}


def _verdict_case(case: str, verdict: str = "unchanged", stop: str = "decided", reason: str = "within ±5 %") -> dict:
    summary = {"n": 5, "median": 1.0, "mean": 1.0, "min": 0.9, "max": 1.1, "cv": 0.05}
    return {"case": case, "verdict": {"verdict": verdict, "ratio": 1.0, "ci_low": 0.98, "ci_high": 1.02,
                                      "reason": reason}, "stop": stop, "pairs": 5, "attempted": 5,
            "failed": {"base": 0, "head": 0}, "wall_s": 10.0, "base": summary, "head": summary}


def _gate_doc(index: int | None, cases: list[dict], exit_code: int = 0, all_cases=CASES) -> dict:
    shard = None if index is None else {"index": index, "count": 2, "cases": [all_cases[index - 1]],
                                         "partition": "0123456789abcdef", "all_cases": list(all_cases)}
    return {"format": "ttfg-gate", "version": 1, "exit_code": exit_code,
            "base": {"rev": "main", "commit": "a" * 40, "subject": "base"},
            "head": {"rev": "HEAD", "commit": "b" * 40, "subject": "head"},
            "settings": {"metric": "first_grad_s", "min_effect": 0.05, "alpha": 0.01},
            "elapsed_s": 10.0, "files": {}, "cases": cases, "skipped": [], "shard": shard, "fingerprint": None}


def _gate_shards(d: Path, name: str, exit_code=0, verdict="unchanged", stop="decided", reason="within ±5 %",
                 edit: Callable[[dict], None] | None = None) -> list[str]:
    """Two shard folders of a gate (gate.json only), each with one case; ``edit`` changes shard 1's document."""
    folders = []
    for index in (1, 2):
        doc = _gate_doc(index, [_verdict_case(CASES[index - 1], verdict, stop, reason)], exit_code)
        if edit is not None and index == 1:
            edit(doc)
        folders.append(str(_write(d / name / f"g{index}" / "gate.json", doc).parent))
    return folders


def _gate_folder(folder: Path, head_commit: str = "b" * 40) -> Path:
    """An unsharded gate's folder: gate.json, and base.json and head.json (the head's commit as given)."""
    for role, commit in (("base", "a" * 40), ("head", head_commit)):
        _write(folder / f"{role}.json", _results(CASES[:1], gate={"role": role, "rev": role, "commit": commit,
                                                                  "subject": role, "settings": {}}))
    _write(folder / "gate.json", {**_gate_doc(None, [_verdict_case(CASES[0])]),
                                  "files": {"base": "runs/gate/base.json", "head": "runs/gate/head.json"}})
    return folder


def _asv_pair(d: Path, name: str, edit: Callable[[dict, dict], None]) -> list[str]:
    """A committed asv result file split in two shards (every value in one of them); ``edit(first, second)``."""
    source = next((ROOT / "results" / "ttfg-dev-2core").glob("38d2f481*.json"))
    docs = []
    for k in (0, 1):
        doc = json.loads(source.read_text(), parse_constant=float)
        for row in doc["results"].values():
            row[0] = [v if i % 2 == k else float("nan") for i, v in enumerate(row[0])]
        docs.append(doc)
    edit(*docs)
    paths = []
    for k, doc in enumerate(docs):
        folder = d / name / f"shard{k}" / "ttfg-dev-2core"
        _write(folder / "machine.json", (source.parent / "machine.json").read_text())
        paths.append(str(_write(folder / source.name, json.dumps(doc))))
    return paths


def _history(d: Path, name: str, edit: Callable[[Path], None]) -> str:
    """A copy of the repository's asv history with ``edit`` applied to its folder."""
    import shutil

    folder = d / name
    shutil.copytree(ROOT / "results", folder)
    edit(folder / "ttfg-dev-2core")
    return str(folder)


def _bad_sample(folder: Path) -> None:
    victim = sorted(folder.glob("3*.json"))[0]
    doc = json.loads(victim.read_text(), parse_constant=float)
    row = doc["results"]["ttfg.track_first_grad_seconds"]
    next(s for s in row[doc["result_columns"].index("samples")] if s)[0] = -1
    victim.write_text(json.dumps(doc))


def _twin(folder: Path) -> None:
    one = sorted(folder.glob("3*.json"))[0]
    (folder / ("zz-copy-" + one.name)).write_bytes(one.read_bytes())


def _calibration(folder: Path, pairs: int) -> Path:
    """A stored calibration of this machine, made now, of ``pairs`` pairs per case (the doctor's file), each case
    under its key in this interpreter (``bad_inputs_facts.calibration``)."""
    from bad_inputs_facts import calibration

    return calibration(folder / "ttfg" / "calibration.json", pairs)


def _files(d: Path) -> dict:
    """The scratch folder: broken results files and histories, and one good results file; what the rows use."""
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
    made = {"good": str(ROOT / "tests" / "data" / "results_v1.json")}
    shard = lambda i, held: _results(held, {"index": i, "count": 2, "cases": [CASES[i - 1]],  # noqa: E731
                                            "partition": "0123456789abcdef"})
    made["s1"] = str(_write(d / "s1.json", shard(1, CASES[:1])))
    made["s2"] = str(_write(d / "s2.json", shard(2, CASES[1:])))
    made["lost"] = str(_write(d / "lost.json", shard(1, [])))  # shard 1 lost its case; no all_cases
    made["victim"] = str(_write(d / "victim.json", (ROOT / "tests" / "data" / "results_v1.json").read_text()))
    made["held-gate"] = d / "held-gate"
    _write(made["held-gate"] / "base.json", "{}")
    made["artifact"] = _gate_folder(d / "artifact")
    made["stale"] = _gate_folder(d / "stale", head_commit="e" * 40)
    _write(d / "runs" / "gate" / "base.json", _results(CASES[1:]))  # where the artifact's relative paths point
    os.mkfifo(d / "pipe")
    made["device"] = None
    try:
        os.mknod(d / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        made["device"] = d / "null"
    except OSError:
        pass
    from ttfg.history.trends import step_key

    made["confirmations"] = _write(d / "confirmations.json", {"format": "ttfg-confirmations", "version": 1, "steps": {
        step_key("m/b/v", "first_grad_s", "a" * 40, "b" * 40): {"status": "confirmed"}}})
    made.update(_environment_files(d))
    made.update(_bisect_files(d))
    made.update(user_projects.projects(d, _project, _git))
    made["cal-good"] = d / "cache-good"
    _calibration(made["cal-good"], 40)
    made["cal-deep"] = d / "cache-deep"
    _write(made["cal-deep"] / "ttfg" / "calibration.json", "[" * 100_000 + "]" * 100_000)
    from bad_inputs_facts import files as fact_files

    made.update(fact_files(d))
    from bad_inputs_bisect import files as bisect_files  # issue 40's bisect state rows, beside this script

    made.update(bisect_files(d, TINY))
    from bad_inputs_count_store import files as store_files  # issue 42's count store

    made.update(store_files(d))
    from bad_inputs_layouts import files as layout_files  # issues 40 and 43's layouts and measured path

    made.update(layout_files(d))
    made["bad-sample"] = _history(d, "history-bad-sample", _bad_sample)
    made["twin"] = _history(d, "history-twin", _twin)
    made["confirm-history"] = _history(d, "history-confirm", lambda folder: None)
    return made


def _sweep(**edits) -> dict:
    """A small valid release sweep (``releases.json``) with one step decided by counts."""
    doc = {"format": "ttfg-releases", "version": 1, "package": "autograd", "cases": ["c"], "notes": [],
           "releases": [{"version": v, "name": f"autograd-{v}", "requirements": [], "env": None, "error": None,
                         "cells": {}} for v in ("1.7.0", "1.9.1")],
           "pairs": [{"base": "1.7.0", "head": "1.9.1", "case": "c", "verdict": "regressed", "tier": "instructions",
                      "pairs": 1, "wall_s": 9.0, "wall": {"verdict": "inconclusive", "ratio": 1.01}}],
           "complete": True, "exit_code": 1}
    doc.update(edits)
    return doc


def _environment_files(d: Path) -> dict:
    """Sweeps and results files for issue 29's rows: environments told apart by content, hostile sweeps."""
    made = {"sweep": str(_write(d / "sweep" / "releases.json", _sweep())),
            "sweep-incomplete": str(_write(d / "sweep-incomplete.json", _sweep(pairs=[], complete=False)))}
    headless = _sweep()
    del headless["pairs"][0]["head"]
    made["sweep-headless"] = str(_write(d / "sweep-headless.json", headless))
    wall = _sweep()
    wall["pairs"][0]["wall"] = "fast"
    made["sweep-wall"] = str(_write(d / "sweep-wall.json", wall))
    whole = _sweep()
    whole["releases"][0]["version"] = 17
    made["sweep-int"] = str(_write(d / "sweep-int.json", whole))
    escape = _sweep()
    escape["releases"][1]["name"] = "autograd-1.9.1\x1b]0;owned\x07"
    made["sweep-escape"] = str(_write(d / "sweep-escape.json", escape))

    def with_envs(envs: dict, labels: list[str]) -> dict:
        doc = _results([f"{CASES[0]}/{label}" for label in labels])
        doc["environment"]["envs"] = envs
        return doc

    old = {"interpreter": "3.11.7", "packages": {"autograd": "1.7.0", "numpy": "2.4.6"}}
    other = {"interpreter": "3.11.7", "packages": {"autograd": "1.9.1", "numpy": "2.4.6"}}
    current = {"interpreter": "3.11.7", "packages": {"autograd": "1.9.1", "numpy": "2.4.6", "jax": "0.10.2"}}
    made["env-old"] = str(_write(d / "env-old.json", with_envs({"old": old}, ["old"])))
    made["env-other"] = str(_write(d / "env-other.json", with_envs({"old": other}, ["old"])))
    made["env-both"] = str(_write(d / "env-both.json", with_envs({"old": old, "current": current}, ["old", "current"])))
    made.update(_scratch_projects(d))
    broken = d / "cache-broken" / "envs" / "0badc0ffee"  # a finished entry whose record was emptied
    _write(broken / "ttfg-env.json", "")
    _write(broken / ".ttfg-complete", "2026-12-03T00:00:00Z\n")
    made["cache-broken"] = d / "cache-broken"
    return made


#: The ``[project]`` of a scratch project (a ``src/`` layout), as ``ttfg init`` and ``ttfg config`` read it.
PROJECT = ('[build-system]\nrequires = ["setuptools>=64"]\nbuild-backend = "setuptools.build_meta"\n\n'
           '[project]\nname = "{name}"\nversion = "0.1.0"\ndependencies = {deps}\n')
#: Where CI would install ttfg from (``ttfg init`` asks; a scratch checkout has no remote).
TTFG_REQUIREMENT = "ttfg @ git+https://example.com/ttfg.git@0123456789abcdef0123456789abcdef01234567"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=bad-inputs", "-c", "user.email=b@example.com",
                           *args], check=True, capture_output=True, text=True).stdout.strip()


def _project(folder: Path, name: str, files: dict[str, str] | None = None, deps=("numpy",), top: Path | None = None,
             tail: str = "") -> Path:
    """A Python project committed to a new git repository (at ``top``, its root, when given); ``tail`` is appended
    to its pyproject.toml after the commit (uncommitted, as a user editing it)."""
    _write(folder / "src" / name / "__init__.py", f'"""{name}"""\n')
    _write(folder / "pyproject.toml", PROJECT.format(name=name, deps=json.dumps(list(deps))))
    for path, text in (files or {}).items():
        _write(folder / path, text)
    top = top or folder
    _git(top, "init", "-q", "-b", "main")
    _git(top, "add", "-A")
    _git(top, "commit", "-q", "-m", "first")
    if tail:
        with open(folder / "pyproject.toml", "a") as f:
            f.write(tail)
    return folder


def _scratch_projects(d: Path) -> dict:
    """Issue 29's user projects: a pin bumped in pyproject.toml only, projects for init and config."""
    made = {}
    # Class 2: requirements.txt pins autograd 1.9.1 on both sides; the head's pyproject.toml pins 1.7.0. Before,
    # only requirements.txt was read: both sides the same, a pass. uv reads both: the head cannot be resolved.
    plugin = '\n[project.entry-points."ttfg.backends"]\n"bump.autograd" = "bump:Backend"\n'
    bump = _project(d / "bump", "bump", {"requirements.txt": "autograd==1.9.1\n"}, deps=("autograd==1.9.1",))
    (bump / "pyproject.toml").write_text((bump / "pyproject.toml").read_text() + plugin)
    _git(bump, "commit", "-q", "-am", "a backend plugin")
    _git(bump, "checkout", "-q", "-b", "bump")
    (bump / "pyproject.toml").write_text((bump / "pyproject.toml").read_text().replace("1.9.1", "1.7.0"))
    _git(bump, "commit", "-q", "-am", "pin autograd 1.7.0 in pyproject.toml only")
    _git(bump, "checkout", "-q", "main")
    made["bump"] = bump
    # Class 5: dependencies declared beside pyproject.toml, which init's workflow filter must watch.
    made["init-deps"] = _project(d / "init-deps", "deps", {"requirements-dev.txt": "-r requirements/base.txt\n",
                                                           "requirements/base.txt": "numpy\n",
                                                           "constraints.txt": "numpy<3\n"})
    # Class 16: a monorepo, the project in python/.
    (d / "mono").mkdir()
    _write(d / "mono" / "README.md", "the lab\n")
    made["mono"] = _project(d / "mono" / "python", "lab", top=d / "mono").parent
    # Classes 6 and 15: hostile [tool.ttfg] tables, each in a project of its own (uncommitted edits).
    for key, tail in (("outside", '\n[tool.ttfg]\ninstall-path = "../outside"\n'),
                      ("a-file", '\n[tool.ttfg]\ninstall-path = "README.md"\n'),
                      ("output-file", '\n[tool.ttfg]\noutput = "README.md"\n'),
                      ("header", '\n[ tool.ttfg\nmodels = ["resnet15"]\n'),
                      ("plain", "")):
        made[f"config-{key}"] = _project(d / f"config-{key}", "cfg", {"README.md": "x\n"}, tail=tail)
    return made


def _bisect_files(d: Path) -> dict:
    """Issue 32's inputs: a repository whose checked-out end has an uncommitted change, and bisect.json files."""
    repo = d / "bisect-dirty-repo"
    repo.mkdir()
    git = lambda *a: subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c",  # noqa: E731
                                     "user.email=t@example.com", *a], check=True, capture_output=True)
    git("init", "-q", "-b", "main")
    for n in (1, 2):
        (repo / "model.py").write_text(f"DEPTH = {n}\n")
        git("add", "model.py")
        git("commit", "-q", "-m", f"depth {n}")
    (repo / "model.py").write_text("DEPTH = 3\n")  # uncommitted
    return {"bisect-dirty-repo": repo, "bisect-cut": _write(d / "bisect-cut" / "bisect.json",
                                                            '{"format": "ttfg-bisect", "version": 1, "status": "fo'),
            "bisect-found": _write(d / "bisect-found" / "bisect.json", _bisect_doc())}


def _bisect_doc() -> dict:
    """A small finished bisect.json: the culprit found in one step (what ``ttfg bisect`` writes, abridged)."""
    commits = ["a" * 40, "b" * 40, "c" * 40]
    info = lambda c, subject: {"commit": c, "short": c[:10], "subject": subject,  # noqa: E731
                               "author": "t <t@example.com>", "date": "2026-12-04T00:00:00+00:00"}
    compare = lambda against, base, head, verdict: {  # noqa: E731
        "against": against, "base": base, "head": head, "verdict": verdict, "error": None, "folder": "steps/x",
        "cases": [{"case": "m/b/v", "verdict": verdict, "tier": "structural", "metric": "counters.x", "ratio": 1.5,
                   "base": 2.0, "head": 3.0, "pairs": 1, "stop": "decided", "reason": ""}]}
    return {"format": "ttfg-bisect", "version": 1, "status": "found", "exit_code": 1, "good": info(commits[0], "good"),
            "bad": info(commits[2], "bad"), "commits": commits, "merges": [], "cases": ["m/b/v"],
            "ends": compare("ends", commits[0], commits[2], "regressed"),
            "probes": [{"commit": commits[1], "state": "good", "attempts": 1, "counts_as": "good", "reason": "",
                        "evidence": [compare("good", commits[0], commits[1], "unchanged")]}],
            "culprit": {**info(commits[2], "slower"), "parent": commits[1]},
            "culprit_evidence": compare("parent", commits[1], commits[2], "regressed"),
            "repro": f"ttfg gate --base {commits[1][:12]} --head {commits[2][:12]}", "elapsed_s": 1.0}


# --------------------------------------------------------------------------- checks after a row


Check = Callable[[subprocess.CompletedProcess], "str | None"]


def _unchanged(path: Path) -> Check:
    before = Path(path).read_bytes()
    return lambda proc: None if Path(path).read_bytes() == before else f"{path} was changed"


def _is(path: Path, test: Callable[[int], bool], kind: str) -> Check:
    return lambda proc: None if test(os.stat(path).st_mode) else f"{path} is no longer {kind}"


def _contains(text: str) -> Check:
    return lambda proc: (None if text in " ".join((proc.stdout + proc.stderr).split())
                         else f"the output lacks {text!r}")


def _json_error(proc) -> str | None:
    try:
        return None if json.loads(proc.stdout)["format"] == "ttfg-error" else "not an error document"
    except (ValueError, KeyError, TypeError):
        return "stdout holds no JSON error document"


def _all(*checks) -> Check:
    return lambda proc: next((why for why in (c(proc) for c in checks) if why), None)


def _file_limit() -> None:
    """Files this process writes may not grow beyond 1 KiB: a results file's first save fails (EFBIG; Python
    ignores SIGXFSZ), as on a full disk."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))


# --------------------------------------------------------------------------- the rows


def _cases(d: Path, m: dict) -> list[Row]:
    tiny = TINY
    rows = [Row(what, argv) for what, argv in [
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
        ("gate: `--cache lukewarm`", ["gate", "--base", "HEAD", "--cache", "lukewarm"]),
        ("gate: `--tiers source` alone (it measures nothing a code change moves)",
         ["gate", "--base", "HEAD", "--tiers", "source"]),
        ("gate: `--cache warm --cache-dir` a file", ["gate", "--base", "HEAD", "--cache", "warm", "--cache-dir",
                                                     str(d / "truncated.json")]),
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
    ]]
    out = lambda name: str(d / "out" / name)  # noqa: E731
    nan_shards = _gate_shards(d, "nan", edit=lambda doc: doc.update(elapsed_s=float("nan")))
    rows += [
        # 1. A shard that did not pass never merges into a pass.
        Row("class 1: merge gate of shards that exited 2 (counting failed)",
            ["merge", "gate", *_gate_shards(d, "c1", 2, "inconclusive", "counting failed"), "--out-dir", out("c1")]),
        Row("class 1: merge gate, a shard's `\"exit_code\": \"0\"`",
            ["merge", "gate", *_gate_shards(d, "c1s", edit=lambda doc: doc.update(exit_code="0")),
             "--out-dir", out("c1s")]),
        Row("class 1: merge gate, a shard's own exit 1 and no regressed row", expect=1,
            argv=["merge", "gate", *_gate_shards(d, "c1f", edit=lambda doc: doc.update(exit_code=1)),
                  "--out-dir", out("c1f")]),
        # 2. Lost cases.
        Row("class 2: merge results, a shard that lost one of its cases", ["merge", "results", m["lost"], m["s2"],
                                                                            "--out", out("c2.json")]),
        Row("class 2: merge gate, a shard's `\"cases\": []`",
            ["merge", "gate", *_gate_shards(d, "c2", edit=lambda doc: doc.update(cases=[])), "--out-dir", out("c2")]),
        # 3. A benchmark whose every combination failed in the first shard keeps the other shard's values.
        Row("class 3: merge asv, `\"result\": null` in the first file (values kept)", expect=0,
            argv=["merge", "asv", *reversed(_asv_pair(d, "c3", lambda a, b: b["results"][
                "ttfg.track_first_grad_seconds"].__setitem__(0, None))), "--out", out("c3.json")],
            check=lambda p: None if sum(1 for v in json.loads(Path(out("c3.json")).read_text(), parse_constant=float)[
                "results"]["ttfg.track_first_grad_seconds"][0] if v == v) == 2 else "values were dropped"),
        # 5. A smaller calibration never replaces a better stored one (a real 20 s calibration).
        Row("class 5: doctor --calibrate --budget 45s over a 40-pair calibration", expect=0,
            argv=["doctor", "--calibrate", "--budget", "45s"], env={"XDG_CACHE_HOME": str(m["cal-good"])},
            check=_all(_unchanged(m["cal-good"] / "ttfg" / "calibration.json"), _contains("calibration not stored"))),
        # 6. Side files are validated.
        Row("class 6: confirmations.json entry of only a status",
            ["regressions", "--results", m["confirm-history"], "--confirmations", str(m["confirmations"])]),
        Row("class 6: gate.json of version 2",
            ["merge", "gate", *_gate_shards(d, "c6", edit=lambda doc: doc.update(version=2)), "--out-dir", out("c6")]),
        Row("class 6: two history files claiming one commit", ["regressions", "--results", m["twin"]]),
        # 7. Only regular files are replaced.
        Row("class 7: compare `--output` a FIFO", ["compare", m["good"], m["good"], "--format", "json", "--output",
                                                  str(d / "pipe")],
            check=_is(d / "pipe", stat.S_ISFIFO, "a FIFO")),
        *([Row("class 7: report `--out` a device node (as /dev/null)",
               ["report", "--runs", m["good"], "--out", str(m["device"])],
               check=_is(m["device"], stat.S_ISCHR, "a device"))] if m["device"] else []),
        # 8. Outputs that are inputs, or held by a running gate.
        Row("class 8: merge results `--out` one of its inputs", ["merge", "results", m["s1"], m["s2"], "--out", m["s1"]],
            check=_unchanged(Path(m["s1"]))),
        Row("class 8: merge gate `--out-dir` one of its inputs",
            ["merge", "gate", *(g := _gate_shards(d, "c8")), "--out-dir", g[0]],
            check=_unchanged(Path(g[0]) / "gate.json")),
        Row("class 8: compare `--output` its base", ["compare", m["victim"], m["good"], "--format", "json",
                                                     "--output", m["victim"]],
            check=_unchanged(Path(m["victim"]))),
        Row("class 8: merge gate into a folder a running gate writes",
            ["merge", "gate", *_gate_shards(d, "c8h"), "--out-dir", str(m["held-gate"])],
            check=lambda p: None if sorted(f.name for f in m["held-gate"].iterdir()) == [".base.json.lock",
                                                                                        "base.json"]
            else "the held folder was written"),
        # 9. The merged set is validated before anything is written.
        Row("class 9: merge gate, NaN in a shard's gate.json", ["merge", "gate", *nan_shards, "--out-dir", out("c9")],
            check=lambda p: None if not Path(out("c9")).exists() else "outputs were written"),
        # 10. One writer of confirmations.json.
        Row("class 10: regressions --confirm while another holds confirmations.json",
            ["regressions", "--results", m["confirm-history"], "--confirm", "--budget", "1m", "--max-steps", "1"]),
        # 11. explain reads its own files.
        Row("class 11: explain, the files beside gate.json (its recorded paths point elsewhere)", expect=0,
            argv=["explain", str(m["artifact"])],
            check=_contains(str(m["artifact"] / "base.json"))),
        Row("class 11: explain, a head.json of another gate beside gate.json", ["explain", str(m["stale"])]),
        # 12. A machine name is one folder name.
        Row("class 12: merge asv --results-dir, machine `../../escaped`",
            ["merge", "asv", *_asv_pair(d, "c12", lambda a, b: [x["params"].update(machine="../../escaped")
                                                                  for x in (a, b)]),
             "--results-dir", str(d / "c12" / "out" / "results")],
            check=lambda p: None if not (d / "c12" / "escaped").exists() else "wrote outside --results-dir"),
        # 13. Markup in user text is text.
        Row("class 13: merge results `--out 'out[/x].json'`", expect=0,
            argv=["merge", "results", m["s1"], m["s2"], "--out", str(d / "out[" / "x].json")],
            check=_contains("x].json")),
        # 14. Untrusted text in summary.md is escaped and clipped.
        Row("class 14: merge gate, a 200 kB reason with a link, HTML and a comment opener", expect=0,
            argv=["merge", "gate", *_gate_shards(d, "c14", reason="<!-- [x](https://e.example) <b>"
                                                 + "y" * 200_000), "--out-dir", out("c14")],
            check=lambda p: None if (len(s := Path(out("c14"), "summary.md").read_text()) < 20_000
                                     and s.count("<!--") == 1 and "<b>" not in s) else "summary.md is raw"),
        # 15. One bound on the shard count.
        Row("class 15: run `--shard 1/1000000000`", ["run", *tiny, "--shard", "1/1000000000"]),
        Row("class 15: gate `--shard 1/1000000000`", ["gate", "--base", "HEAD", *tiny, "--shard", "1/1000000000"]),
        # 16. An impossible history value leaves its file out, named.
        Row("class 16: regressions, a sample of -1 s in a history file", ["regressions", "--results", m["bad-sample"]],
            check=_contains("is not a measurement of this benchmark")),
        Row("class 16: the same with `--skip-bad-history`", expect=0,
            argv=["regressions", "--results", m["bad-sample"], "--skip-bad-history"]),
        # 17. An unwritable step summary keeps the verdict's exit code.
        Row("class 17: merge gate with an unwritable $GITHUB_STEP_SUMMARY", expect=0,
            argv=["merge", "gate", *_gate_shards(d, "c17"), "--out-dir", out("c17")],
            env={"GITHUB_STEP_SUMMARY": str(d / "no" / "such" / "folder")}, check=_contains("cannot append")),
        # 18. COLUMNS=0 still prints.
        Row("class 18: compare with COLUMNS=0", expect=0, argv=["compare", m["good"], m["good"]],
            env={"COLUMNS": "0"}, check=_contains("no regression")),
        # 19. Valid but hostile JSON.
        Row("class 19: merge gate, gate.json nested 100,000 deep",
            ["merge", "gate", *_gate_shards(d, "c19"), "--out-dir", out("c19")]),
        Row("class 19: run with a deeply nested calibration.json (set aside)", expect=0,
            argv=["run", *tiny, "--repeat", "1", "--out", out("c19.json")], env={"XDG_CACHE_HOME": str(m["cal-deep"])},
            check=_contains("nested too deeply")),
        # 20. --format json prints an error document.
        Row("class 20: compare, missing file, `--format json`", ["compare", str(d / "missing.json"), m["good"],
                                                                 "--format", "json"], check=_json_error),
        # 21. A run whose first save fails leaves no lock.
        Row("class 21: run whose first save fails (files limited to 1 KiB)",
            ["run", *tiny, "--repeat", "1", "--out", out("c21.json")], limit=_file_limit,
            check=lambda p: None if not (d / "out" / ".c21.json.lock").exists() else "the .lock sidecar was left"),
        # Issue 29's classes (environments you can trust): each a real process; none builds an environment (class 2
        # lets uv resolve two revisions' declarations, class 12 runs two probes in this interpreter).
        Row("env 1: regressions --releases, a step decided by counts (`regressed (instructions)`)", expect=0,
            argv=["regressions", "--releases", m["sweep"], "--format", "json"],
            check=lambda p: None if '"verdict": "regressed (instructions)"' in p.stdout else "the step was not listed"),
        Row("env 2: gate, a pin bumped in pyproject.toml only (requirements.txt unchanged)",
            ["gate", "--repo", str(m["bump"]), "--base", "main", "--head", "bump", *tiny, "--out-dir", out("env2")],
            check=_all(_contains("head side's dependencies cannot be resolved"), _contains("pyproject.toml"))),
        Row("env 3: compare, one environment name holding other packages in each file",
            ["compare", m["env-old"], m["env-other"], "--metric", "counters.*"], check=_contains("autograd 1.7.0 -> 1.9.1")),
        Row("env 3: compare a file of two environments with itself, `--across-envs`",
            ["compare", m["env-both"], m["env-both"], "--across-envs", "--metric", "counters.*"],
            check=_contains("in 2 environments")),
        Row("env 4: releases `--versions ','`", ["releases", "autograd", "--versions", ","]),
        Row("env 4: releases `--versions foo`", ["releases", "autograd", "--versions", "foo"],
            check=_contains("'foo' is not a version")),
        Row("env 5: init, its workflow's `paths:` and the project's requirements/constraints files", expect=0,
            argv=["init", "--repo", str(m["init-deps"]), "--ttfg-requirement", TTFG_REQUIREMENT],
            check=lambda p: next((f"the workflow does not watch {w}" for w in ("requirements*.txt", "requirements/**",
                                                                               "constraints*.txt")
                                  if f'"{w}"' not in (m["init-deps"] / ".github" / "workflows"
                                                      / "ttfg-perf-gate.yml").read_text()), None)),
        Row("env 6: config, `install-path = \"../outside\"`", ["config"], cwd=m["config-outside"],
            check=_contains("is outside the git repository")),
        Row("env 6: config, `install-path` a file", ["config"], cwd=m["config-a-file"],
            check=_contains("is a file, not a folder")),
        Row("env 6: config shows `install-path`", expect=0, argv=["config"], cwd=m["config-plain"],
            check=_contains("install-path")),
        Row("env 7: regressions --releases of a sweep stopped before any pair", ["regressions", "--releases",
                                                                                m["sweep-incomplete"]],
            check=_contains("incomplete")),
        Row("env 8: env list, a cached entry whose ttfg-env.json was emptied", expect=0, argv=["env", "list"],
            env={"TTFG_CACHE_DIR": str(m["cache-broken"])}, check=_contains("ttfg-env.json cannot be read")),
        Row("env 8: env prune of that broken entry by its key", expect=0, argv=["env", "prune", "0badc0ffee"],
            env={"TTFG_CACHE_DIR": str(m["cache-broken"])},
            check=lambda p: None if not (m["cache-broken"] / "envs" / "0badc0ffee").exists() else "it was kept"),
        Row("env 9: report `--releases X --out X`", ["report", "--releases", m["sweep"], "--out", m["sweep"]],
            check=lambda p: None if json.loads(Path(m["sweep"]).read_text())["format"] == "ttfg-releases"
            else "the sweep was overwritten"),
        Row("env 10: gate `--base-env current --head-env current` (one environment, one revision)",
            ["gate", "--base-env", "current", "--head-env", "current", *tiny, "--allow-dirty", "--out-dir", out("env10")],
            check=_contains("name the same environment")),
        Row("env 11: gate `--base HEAD --format json` (the same commit: still one JSON document)", expect=0,
            argv=["gate", "--base", "HEAD", *tiny, "--format", "json", "--allow-dirty", "--out-dir", out("env11")],
            check=lambda p: None if json.loads(p.stdout or "null") and json.loads(p.stdout)["status"] == "same commit"
            else "stdout holds no gate document"),
        *[Row(f"env 12: run `--shard {i}/2 --env current` (then merged below)", expect=0,
              argv=["run", "--model", "resnet15:blocks=1", "--model", "resnet15:blocks=2", "--backend", "autograd",
                    "--repeat", "1", "--env", "current", "--shard", f"{i}/2", "--out", out(f"env12-{i}.json")])
          for i in (1, 2)],
        Row("env 12: merge results of those two shards", expect=0,
            argv=["merge", "results", out("env12-1.json"), out("env12-2.json"), "--out", out("env12.json")],
            check=lambda p: None if len(json.loads(Path(out("env12.json")).read_text())["cases"]) == 2
            else "a case was lost"),
        Row("env 13: releases `--versions` with `--from`", ["releases", "autograd", "--versions", "1.7.0,1.9.1",
                                                            "--from", "1.7.0", *tiny, "--out-dir", out("env13")],
            check=_contains("give one or the other")),
        Row("env 13: releases `--with '--index-url=...'`", ["releases", "autograd", "--versions", "1.7.0,1.9.1",
                                                           "--with=--index-url=http://127.0.0.1:9/simple", *tiny,
                                                           "--out-dir", out("env13w")],
            check=_contains("is a pip option")),
        Row("env 13: gate `--envs declared` with `--head-env`", ["gate", "--base", "HEAD~1", "--envs", "declared",
                                                                 "--head-env", "new=autograd==1.9.1", *tiny,
                                                                 "--allow-dirty", "--out-dir", out("env13g")],
            check=_contains("give one or the other")),
        Row("env 13: regressions `--releases` with `--confirm`", ["regressions", "--releases", m["sweep"], "--confirm"],
            check=_contains("give one or the other")),
        Row("env 14: regressions --releases, a pair without `head`", ["regressions", "--releases", m["sweep-headless"]],
            check=_contains("pairs[0].head: missing")),
        Row("env 14: regressions --releases, `\"wall\": \"fast\"`", ["regressions", "--releases", m["sweep-wall"]],
            check=_contains("pairs[0].wall")),
        Row("env 14: regressions --releases, an integer version", ["regressions", "--releases", m["sweep-int"]],
            check=_contains("releases[0].version")),
        Row("env 14: env list with TTFG_CACHE_DIR a file", ["env", "list"],
            env={"TTFG_CACHE_DIR": str(d / "plain.json")}, check=_contains("is not a folder")),
        Row("env 14: env build with TTFG_CACHE_DIR a file", ["env", "build", "autograd==1.7.0"],
            env={"TTFG_CACHE_DIR": str(d / "plain.json")}, check=_contains("cannot be written")),
        Row("env 15: config, `output` a file", ["config"], cwd=m["config-output-file"],
            check=_contains("output names the folder")),
        Row("env 15: config `--budget ten`", ["config", "--budget", "ten"], cwd=m["config-plain"],
            check=_contains("not a positive duration")),
        Row("env 15: config, a malformed `[ tool.ttfg` header", ["config"], cwd=m["config-header"],
            check=_contains("not valid TOML")),
        Row("env 16: init in a monorepo's python/ (advises a command that works)",
            ["init", "--repo", str(m["mono"] / "python"), "--ttfg-requirement", TTFG_REQUIREMENT],
            check=_contains(f"ttfg init --repo {m['mono']} --project-dir python")),
        Row("env 16: init at the monorepo's root", expect=0,
            argv=["init", "--repo", str(m["mono"]), "--ttfg-requirement", TTFG_REQUIREMENT],
            check=lambda p: None if 'install-path = "python"' in (m["mono"] / "ttfg.toml").read_text()
            else "ttfg.toml has no install-path"),
        Row("env 17: env prune of a name nothing has", ["env", "prune", "no-such-env"],
            env={"TTFG_CACHE_DIR": str(d / "empty-cache")}, check=_contains("no cached environment is named")),
        Row("env 18: regressions --releases, control characters in a release name", expect=0,
            argv=["regressions", "--releases", m["sweep-escape"]],
            check=lambda p: None if "\x1b" not in p.stdout else "an escape sequence reached the terminal"),
        Row("env 19: env prune `--older-than 0` (a duration, not a budget)", ["env", "prune", "--older-than", "0"],
            env={"TTFG_CACHE_DIR": str(d / "empty-cache")}, check=_contains("--older-than '0' is not a positive")),
        Row("env 19: gate `--guard compile_s` on autograd (no compile phase of its own)",
            ["gate", "--base", "HEAD~1", *tiny, "--guard", "compile_s", "--out-dir", out("env19")],
            check=_all(_contains("autograd does not split a compile phase"), _contains("it reports execute only"))),
        # issue 32: ttfg bisect, each refused before anything is measured (--allow-dirty: a working copy under
        # edit must not change which refusal a row sees).
        Row("bisect: revisions that do not exist", ["bisect", "--good", "no-such-rev", "--bad", "nor-this", *tiny,
                                                    "--out-dir", out("bisect-missing")],
            check=_all(_contains("no-such-rev"), _contains("nor-this"))),
        Row("bisect: good and bad in the wrong order", ["bisect", "--good", "HEAD", "--bad", "HEAD~1", *tiny,
                                                        "--allow-dirty", "--out-dir", out("bisect-order")],
            check=_contains("swap them")),
        Row("bisect: a corrupt state file", ["bisect", "--good", "HEAD~1", "--bad", "HEAD", *tiny, "--allow-dirty",
                                             "--out-dir", str(d / "bisect-corrupt")],
            check=_all(_unchanged(_write(d / "bisect-corrupt" / "bisect.json", "{not json")),
                       _contains("bisect.json"))),
        Row("bisect: `--retries -1`", ["bisect", "--good", "HEAD~1", "--bad", "HEAD", "--retries", "-1"]),
        Row("bisect: `--total-budget soon`", ["bisect", "--good", "HEAD~1", "--bad", "HEAD", *tiny,
                                              "--total-budget", "soon", "--out-dir", out("bisect-budget")]),
        Row("bisect: `--budget soon` (per comparison)", ["bisect", "--good", "HEAD~1", "--bad", "HEAD", *tiny,
                                                         "--budget", "soon", "--out-dir", out("bisect-budget")]),
        Row("bisect: an uncommitted change at the checked-out end",
            ["bisect", "--good", "HEAD~1", "--bad", "HEAD", *tiny, "--repo", str(m["bisect-dirty-repo"]),
             "--out-dir", out("bisect-dirty")],
            check=_all(_contains("uncommitted changes"), _contains("model.py"),
                       _unchanged(m["bisect-dirty-repo"] / "model.py"))),
        Row("bisect: `--out-dir` a file", ["bisect", "--good", "HEAD~1", "--bad", "HEAD", *tiny, "--allow-dirty",
                                           "--out-dir", str(d / "plain.json")],
            check=_all(_contains("is a file"), _unchanged(d / "plain.json"))),
        Row("bisect: good and bad the same commit (no step: nothing to bisect)", expect=0,
            argv=["bisect", "--good", "HEAD", "--bad", "HEAD", *tiny, "--allow-dirty", "--out-dir", out("bisect-same")],
            check=_contains("the same commit")),
        Row("report --bisect: a bisect.json cut short", ["report", "--bisect", str(m["bisect-cut"]),
                                                         "--out", out("bisect-cut.html")],
            check=_all(_contains("not valid JSON"), _contains(str(m["bisect-cut"])))),
        Row("report --bisect: `--out` the bisect.json itself", ["report", "--bisect", str(m["bisect-found"]),
                                                                "--out", str(m["bisect-found"])],
            check=_unchanged(m["bisect-found"])),
        Row("report --bisect with `--releases`", ["report", "--bisect", str(m["bisect-found"]), "--releases",
                                                  m["sweep"], "--out", out("bisect-both.html")],
            check=_contains("give one or the other")),
        Row("report --bisect: a finished bisect drawn", expect=0,
            argv=["report", "--bisect", str(m["bisect-found"]), "--out", out("bisect.html")],
            check=lambda p: None if "ccccccccccccccccccccccccccccccccccccccc" in Path(out("bisect.html")).read_text()
            else "the page lacks the culprit"),
        # issue 45: init, the gate's worktrees and run --env's snapshots never break the user's project.
        *[Row(**row) for row in user_projects.rows(d, m, TTFG_REQUIREMENT, _contains, _all, out)],
    ]
    from bad_inputs_facts import rows as fact_rows

    rows += fact_rows(d, m, out, tiny)
    from bad_inputs_bisect import rows as bisect_rows

    rows += bisect_rows(d, m, out, tiny)
    from bad_inputs_outcomes import rows as outcome_rows  # issue 46.1 and 43.2: outcomes that never pass

    rows += outcome_rows(d, out)
    from bad_inputs_layouts import rows as layout_rows

    rows += layout_rows(d, m, out)
    from bad_inputs_count_store import rows as store_rows  # issue 42's count store

    rows += store_rows(d, m, out, tiny)
    from bad_inputs_functions import rows as function_rows  # issue 47: a library's own function as a case

    rows += function_rows(d, out)
    from bad_inputs_profile import rows as profile_rows  # issue 41 item 4: explain's profile files

    rows += profile_rows(d, m, out)
    # class 19's gate.json is made hostile here (after the shards were written valid).
    (d / "c19" / "g1" / "gate.json").write_text('{"format": "ttfg-gate", "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    # class 9: the NaN is written by json (allow_nan), as the gate wrote gate.json before the fix.
    return rows


def _message(text: str) -> str:
    """The line that says what happened: the error line, else a refusal or warning, else the last line."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for words in (("error:",), ("refused", "cannot", "not stored", "left out", "shard(s) merged:", "explain: base",
                                "no regression")):
        for ln in lines:
            if any(w in ln.lower() for w in words) and "fingerprint" not in ln:
                return ln
    return lines[-1] if lines else ""


def _holders(d: Path, m: dict) -> list[subprocess.Popen]:
    """Processes that hold one-writer locks for the rows that need them (a running run, gate, --confirm)."""
    held = [d / "locked.json", m["held-gate"] / "base.json", Path(m["confirm-history"]) / "confirmations.json"]
    procs = []
    for path in held:
        proc = subprocess.Popen([sys.executable, "-c", "import time\nfrom ttfg.files import OneWriter\n"
                                 f"OneWriter({str(path)!r}).acquire()\nprint('held', flush=True)\ntime.sleep(900)"],
                                stdout=subprocess.PIPE, text=True, cwd=ROOT)
        proc.stdout.readline()
        procs.append(proc)
    return procs


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="Run the CLI with bad inputs; print a Markdown table.")
    parser.add_argument("--only", metavar="PREFIX", action="append",
                        help="only the rows whose first column starts with PREFIX (repeatable), e.g. 'env '")
    args = parser.parse_args(argv)
    wrong = 0
    with tempfile.TemporaryDirectory(prefix="ttfg-bad-inputs-") as tmp:
        d = Path(tmp)
        m = _files(d)
        (d / "out").mkdir()
        rows = [row for row in _cases(d, m) if not args.only or row.what.startswith(tuple(args.only))]
        holders = _holders(d, m)
        try:
            print("| bad input | exit (expected) | message |\n| --- | --- | --- |")
            for row in rows:
                proc = subprocess.run([sys.executable, "-m", "ttfg", *row.argv], capture_output=True, text=True,
                                      cwd=row.cwd or ROOT, timeout=row.timeout, env={**os.environ, "COLUMNS": "200", **row.env},
                                      preexec_fn=row.limit)
                text = proc.stderr + proc.stdout
                why = row.check(proc) if row.check else None
                bad = proc.returncode != row.expect or "Traceback" in text or why is not None
                wrong += bad
                msg = (why or _message(text)).replace(tmp, "$TMP").replace("|", "\\|")
                flag = " **WRONG**" if bad else ""
                shown = f"{proc.returncode}" + ("" if row.expect == 2 else f" ({row.expect})")
                print(f"| {row.what} | {shown}{flag} | {msg[:160]} |", flush=True)
        finally:
            for proc in holders:
                proc.kill()
                proc.wait()
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
