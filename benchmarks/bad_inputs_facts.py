"""``bad_inputs.py``'s rows for stored facts and declarations (issue 44, and issue 46's item 2), and their files.

Kept beside ``bad_inputs.py`` (which imports it) so that the table's rows for one issue live in one place. Each
row is a real ``ttfg`` process in the scratch folder:

- ``keys 1``: another project's calibration in ``TTFG_CACHE_DIR`` is not applied (the run says "not calibrated
  here"), and the count store moves with ``TTFG_CACHE_DIR`` too;
- ``keys 2``: a count margin of 10.0 written by hand is named by ``ttfg doctor`` and set aside; fewer than 3
  calibrating processes are refused;
- ``keys 3``: a ``uv.lock`` that no longer matches its ``pyproject.toml`` is refused naming both; a pin bumped in a
  dynamic-dependencies file (``deps.in``) is read through the build backend (here to a version that does not
  exist: refused, naming ``deps.in``); ``init``'s workflow watches ``deps.in``;
- ``keys 4``: uv's own error first; "cannot be reached" only for a host that does not answer (a closed port), not
  for an index that answers 404;
- ``keys 46.2``: two results files whose environment "current" holds the same versions but an editable install
  whose files changed are refused as different environments.

The rows that resolve (``keys 3``) ask uv, which answers from its cache after the first run; ``keys 4`` asks a
closed port and a local HTTP server started here, with an empty uv cache.
"""

from __future__ import annotations

import json
import subprocess
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

#: The doctor's default calibration cases (``decide/calibrate.calibration_cases``) and another project's case.
CALIBRATED = ("resnet15/autograd/params=args,chain=unrolled", "resnet15/jax.jit/params=args,chain=unrolled",
              "resnet15/torch.eager/params=closure,chain=unrolled")
OTHER_PROJECTS = ("resnet15/torch.eager/params=closure,chain=unrolled",)
TINY_CASE = "resnet15:blocks=2/autograd/params=args,chain=unrolled"


def calibration(path: Path, pairs: int, case_ids=CALIBRATED) -> Path:
    """A stored calibration, made now, of ``pairs`` pairs per case, each under its key in this interpreter (as the
    doctor stores one): ``ttfg`` processes started from here have the same key."""
    from datetime import datetime, timezone

    from ttfg.decide import noise
    from ttfg.measure.cases import Case
    from ttfg.measure.runner import RunSettings
    from ttfg.results.validate import noise_from_json

    entries = [{"case": c, "metric": "first_grad_s", "n": pairs, "log_ratio_sd": 0.1, "sd_ci95": [0.08, 0.13],
                "seconds_per_pair": 4.0, "gates": []} for c in case_ids]
    doc = {"source": "calibration", "method": "A/A pairs", "measured_at": datetime.now(timezone.utc).isoformat(),
           "age_s": None, "machine": noise.machine_facts(), "alpha": 0.01, "power": 0.95, "entries": entries,
           "note": ""}
    keys = {c: found[0] for c, found in noise.keys_of([Case.from_id(c) for c in case_ids],
                                                        RunSettings(repeat=1)).items()}
    path.parent.mkdir(parents=True, exist_ok=True)
    noise.save(noise_from_json(doc, str(path)), keys, path)
    return path


def _margins_of_ten(path: Path) -> Path:
    """A count margin of 10.0 (±1,000 %), written by hand under the tiny case's key in this interpreter."""
    from ttfg.decide import count_margins
    from ttfg.measure import fact_keys
    from ttfg.measure.cases import Case
    from ttfg.measure.runner import RunSettings

    key = fact_keys.key(Case.from_id(TINY_CASE), None, RunSettings(repeat=1), counted=True)
    margin = {"margin": 10.0, "date": "2026-12-04T10:00:00+00:00", "processes": 10, "bimodal": False, "median": 1e7}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"format": count_margins.FORMAT, "version": 2, "entries": [
        {"key": key.to_json(), "fact": {"metrics": {"instructions": margin}}}]}))
    return path


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=bad-inputs", "-c", "user.email=b@example.com", *args],
                   check=True, capture_output=True, text=True)


def _repo(folder: Path, files: dict[str, str], head: dict[str, str], message: str, before_commit=None) -> Path:
    """A repository whose ``main`` holds ``files`` and whose branch ``bump`` changes ``head``."""
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    _git(folder, "init", "-q", "-b", "main")
    if before_commit:
        before_commit(folder)
    _git(folder, "add", "-A")
    _git(folder, "commit", "-q", "-m", "base")
    _git(folder, "checkout", "-q", "-b", "bump")
    for name, text in head.items():
        (folder / name).write_text(text)
    _git(folder, "commit", "-q", "-am", message)
    _git(folder, "checkout", "-q", "main")
    return folder


#: A backend plugin: a gate refuses a project that declares none (no case would run its code).
PLUGIN = '\n[project.entry-points."ttfg.backends"]\n"lab.autograd" = "lab:Backend"\n'
LOCKED = ('[project]\nname = "lab"\nversion = "0.1.0"\nrequires-python = ">=3.11"\ndependencies = ["{pin}"]\n'
          + PLUGIN)
DYNAMIC = ('[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n\n'
           '[project]\nname = "lab"\nversion = "0.1.0"\ndynamic = ["dependencies"]\n\n'
           '[tool.setuptools]\npackages = ["lab"]\n\n[tool.setuptools.dynamic]\ndependencies = {file = ["deps.in"]}\n'
           + PLUGIN)


def _lock(folder: Path) -> None:
    from ttfg.provision.uv import run_uv

    out = run_uv(["lock", "--directory", str(folder)], "bad inputs", 300)
    if out.returncode != 0:
        raise SystemExit(f"uv lock failed in {folder}: {out.stderr}")


def _results_with_editable(path: Path, tree: str) -> str:
    """A results file whose environment "current" holds autograd 1.9.1 installed editable, its files' digest
    ``tree``."""
    env = {"interpreter": "3.11.7", "packages": {"autograd": "1.9.1", "numpy": "2.4.6"},
           "local": {"autograd": {"url": "file:///src/autograd", "editable": True, "tree": tree}}}
    from bad_inputs import CASES, _results, _write  # noqa: E402  (the table's own helpers)

    doc = _results([f"{CASES[0]}/current"])
    doc["environment"]["envs"] = {"current": env}
    return str(_write(path, doc))


def files(d: Path) -> dict:
    """Every file and repository the rows below read."""
    made = {"cal-other": d / "cache-other-project", "margins-ten": d / "cache-margin-ten"}
    calibration(made["cal-other"] / "calibration.json", 40, OTHER_PROJECTS)
    _margins_of_ten(made["margins-ten"] / "count_margins.json")
    made["stale-lock"] = _repo(d / "stale-lock", {"pyproject.toml": LOCKED.format(pin="autograd==1.9.1"),
                                                  "lab.py": ""},
                               {"pyproject.toml": LOCKED.format(pin="autograd==1.8.0")},
                               "bump autograd in pyproject.toml without relocking", before_commit=_lock)
    made["dynamic"] = _repo(d / "dynamic", {"pyproject.toml": DYNAMIC, "deps.in": "autograd==1.9.1\n",
                                            "lab/__init__.py": ""},
                            {"deps.in": "autograd==99.0\n"}, "bump autograd in deps.in")
    made["dynamic-init"] = d / "dynamic-init"
    for name, text in (("pyproject.toml", DYNAMIC), ("deps.in", "numpy\n"), ("lab/__init__.py", "")):
        (made["dynamic-init"] / name).parent.mkdir(parents=True, exist_ok=True)
        (made["dynamic-init"] / name).write_text(text)
    _git(made["dynamic-init"], "init", "-q", "-b", "main")
    _git(made["dynamic-init"], "add", "-A")
    _git(made["dynamic-init"], "commit", "-q", "-m", "first")
    made["editable-before"] = _results_with_editable(d / "editable-before.json", "0123456789abcdef")
    made["editable-after"] = _results_with_editable(d / "editable-after.json", "fedcba9876543210")
    (d / "http-root").mkdir()
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(d / "http-root")))
    threading.Thread(target=server.serve_forever, daemon=True).start()  # every path answers 404
    made["index-404"] = f"http://127.0.0.1:{server.server_address[1]}/simple"
    return made


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # the table is the output
        pass


def _lacks(text: str):
    return lambda proc: None if text not in proc.stdout + proc.stderr else f"the output says {text!r}"


def rows(d: Path, m: dict, out, tiny: list[str]) -> list:
    """The rows (``bad_inputs.Row``), in the order of the issue's items."""
    from bad_inputs import Row, _all, _contains, _unchanged

    no_index = {"UV_CACHE_DIR": str(d / "uv-empty"), "PIP_FIND_LINKS": "", "UV_HTTP_RETRIES": "0",
                "TTFG_CACHE_DIR": str(d / "cache-net")}
    return [
        Row("keys 1: run, another project's calibration in TTFG_CACHE_DIR (not applied, said)", expect=0,
            argv=["run", *tiny, "--repeat", "1", "--out", out("keys1.json")],
            env={"TTFG_CACHE_DIR": str(m["cal-other"])},
            check=_all(_contains("not calibrated here: no calibration of this case"),
                       _unchanged(m["cal-other"] / "calibration.json"))),
        Row("keys 2: doctor, a count margin of 10.0 written by hand (named, set aside)", expect=0,
            argv=["doctor"], env={"TTFG_CACHE_DIR": str(m["margins-ten"])},
            check=_contains("margin: 10.0 (±1,000 %) is outside 0.05 %-10 %: set aside")),
        Row("keys 2: doctor --calibrate-counts 2 (a margin needs 3 processes)",
            ["doctor", "--calibrate-counts", "2"], check=_contains("between 3 and 100")),
        Row("keys 3: gate, the head bumps pyproject.toml without relocking uv.lock",
            ["gate", "--repo", str(m["stale-lock"]), "--base", "main", "--head", "bump", *tiny,
             "--out-dir", out("keys3-lock")],
            check=_all(_contains("uv.lock does not match pyproject.toml"), _contains("needs to be updated"))),
        Row("keys 3: gate, the head bumps a pin in deps.in (`dynamic = [\"dependencies\"]`)",
            ["gate", "--repo", str(m["dynamic"]), "--base", "main", "--head", "bump", *tiny,
             "--out-dir", out("keys3-dynamic")],
            check=_all(_contains("head side's dependencies cannot be resolved"), _contains("pyproject.toml + deps.in"),
                       _contains("autograd==99.0"))),
        Row("keys 3: init, a project whose dependencies come from deps.in", expect=0,
            argv=["init", "--repo", str(m["dynamic-init"]), "--ttfg-requirement", "ttfg==0.1.0"],
            check=lambda p: None if "deps.in" in (m["dynamic-init"] / ".github" / "workflows" /
                                                  "ttfg-perf-gate.yml").read_text()
            else "the workflow does not watch deps.in"),
        Row("keys 4: run --env, a registry whose host does not answer (closed port)",
            ["run", *tiny, "--env", "x=autograd==1.7.0", "--out", out("keys4.json")],
            env={**no_index, "UV_INDEX_URL": "http://127.0.0.1:9/simple"},
            check=_contains("(127.0.0.1:9 does not answer: the package registry cannot be reached)")),
        Row("keys 4: run --env, an index that answers 404 (uv's words, no blame on the network)",
            ["run", *tiny, "--env", "x=autograd==1.7.0", "--out", out("keys4b.json")],
            env={**no_index, "UV_INDEX_URL": m["index-404"]},
            check=_all(_contains("not found in the package registry"), _lacks("cannot be reached"))),
        Row("keys 46.2: compare, environment 'current' whose editable autograd was edited (same version)",
            ["compare", m["editable-before"], m["editable-after"], "--metric", "counters.*"],
            check=_contains("autograd (editable or local install): its files changed")),
    ]


__all__ = ["calibration", "files", "rows"]
