"""``bad_inputs.py``'s rows for project layouts, head-declared cases, ``ttfg config`` and the measured path (issue 40
items 1, 2, 3 and 7, issue 43 item 3), and their files.

One scratch repository, ``lablib`` in a flat layout (its package at the root, setuptools, ``requirements.txt`` holding
``-r requirements/base.txt``, the backend listing ``lablib`` among its modules as ``ttfg init``'s starter does),
written by ``tests/layout_projects.py``, with branches made here from its first commit:

- ``layouts 40.1``: a bump of the pin in ``requirements/base.txt`` gates (two environments built with uv, seconds
  from uv's cache after the first run), where it was refused "would import lablib from .../sources/..., outside it";
- ``layouts 40.2``: a head that adds a model and its line in ttfg.toml gates without a reinstall (a new case); a
  model no revision provides is refused naming it;
- ``layouts 40.2`` (bisect): a bisect whose bad end adds a model (run from that checkout) names it "not bisected"
  instead of refusing it; a model neither end provides is refused naming it;
- ``layouts 40.3``: ``ttfg config`` shows ``install-path`` with the file as its origin;
- ``layouts 40.7`` / ``43.3``: a head that adds a module no case imports passes saying so (exit 0), and exits 2
  with ``--off-path fail``; a head that changes only ``tests/__init__.py`` is not "run" because
  ``lablib/__init__.py`` was; a head that deletes a module the base imported is on the path (the base's trace).

The rows see lablib's entry points through ``PYTHONPATH`` (its first commit installed into a folder here), as a
user's environment has the library installed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def files(d: Path) -> dict:
    """The scratch repository, its branches and the folder its first commit is installed in."""
    sys.path.insert(0, str(ROOT))
    from tests.layout_projects import _files

    repo = d / "lablib"
    repo.mkdir()

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(repo), "-c", "user.name=bad-inputs", "-c", "user.email=b@example.com",
                               *args], check=True, capture_output=True, text=True).stdout.strip()

    def commit(message: str, texts: dict[str, str]) -> None:
        for name, text in texts.items():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            (repo / name).write_text(text)
        git("add", "-A")
        git("commit", "-q", "-m", message)

    git("init", "-q", "-b", "main")
    commit("first", _files("flat", "autograd==1.7.0"))
    git("checkout", "-q", "-b", "bump")
    commit("bump autograd", {"requirements/base.txt": "autograd==1.9.1\nscipy\n"})
    git("checkout", "-q", "-b", "offpath", "main")
    commit("a command line no case imports", {"lablib/cli.py": "def main():\n    return sum(range(10))\n"})
    git("checkout", "-q", "-b", "tests-init", "main")
    commit("the tests' package marker", {"tests/__init__.py": "# the tests\n"})
    git("checkout", "-q", "-b", "with-extra", "main")
    plugin_text = (repo / "lablib" / "ttfg_plugin.py").read_text()
    commit("an extra module the plugin imports", {"lablib/extra.py": "EXTRA = 1\n",
                                                  "lablib/ttfg_plugin.py": plugin_text.replace(
                                                      "from . import ops\n", "from . import extra, ops\n")})
    git("rm", "-q", "lablib/extra.py")
    commit("the extra module deleted", {"lablib/ttfg_plugin.py": plugin_text})
    git("checkout", "-q", "-b", "deep", "main")
    pyproject = (repo / "pyproject.toml").read_text().replace(
        'lablib_mlp = "lablib.ttfg_plugin:build_mlp"',
        'lablib_mlp = "lablib.ttfg_plugin:build_mlp"\nlablib_deep = "lablib.ttfg_plugin:build_deep"')
    plugin = (repo / "lablib" / "ttfg_plugin.py").read_text() + "\n\ndef build_deep() -> ModelSpec:\n    return build_mlp(5)\n"
    commit("a deeper model, named in ttfg.toml", {"pyproject.toml": pyproject, "lablib/ttfg_plugin.py": plugin,
                                                  "ttfg.toml": 'models = ["lablib_mlp", "lablib_deep"]\n'
                                                               'backends = ["lablib.autograd"]\n'})
    git("checkout", "-q", "main")
    site = d / "lablib-site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--disable-pip-version-check", "--target", str(site), str(repo)], check=True, capture_output=True,
                   timeout=300)
    # A checkout of the head that adds the model, for the gate run from it (its ttfg.toml names the model).
    deep = d / "lablib-deep"
    git("worktree", "add", "-q", str(deep), "deep")
    # A monorepo whose ttfg.toml names the project's folder.
    mono = d / "mono"
    (mono / "py").mkdir(parents=True)
    (mono / "py" / "setup.py").write_text("from setuptools import setup\nsetup(name='py')\n")
    (mono / "ttfg.toml").write_text('install-path = "py"\n')
    subprocess.run(["git", "init", "-q", str(mono)], check=True, capture_output=True)
    return {"lablib": repo, "lablib-site": site, "lablib-deep": deep, "mono": mono}


def rows(d: Path, m: dict, out) -> list:
    """The rows (``bad_inputs.Row``), in the order of the issues' items."""
    from bad_inputs import Row, _all, _contains

    env = {"PYTHONPATH": str(m["lablib-site"])}
    lab = ["--model", "lablib_mlp", "--backend", "lablib.autograd", "--tiers", "structural"]

    def gate_json(folder: str, want) -> callable:
        def check(proc) -> str | None:
            doc = json.loads((Path(out(folder)) / "gate.json").read_text())
            return want(doc)
        return check

    return [
        Row("layouts 40.1: gate, a flat layout's pin bumped in requirements/base.txt (-r from requirements.txt)",
            expect=0, argv=["gate", "--repo", str(m["lablib"]), "--base", "main", "--head", "bump", *lab,
                            "--out-dir", out("layouts-flat")], env=env,
            check=_all(_contains("environments: base in base-"), _lacks("outside it"),
                       gate_json("layouts-flat", lambda doc: None if doc["environments"]["changed"]
                                 == ["requirements/base.txt"] else f"changed: {doc['environments']['changed']}"))),
        Row("layouts 40.2: gate, a model the head adds with its line in ttfg.toml (not installed here)", expect=0,
            argv=["gate", "--base", "main", "--head", "deep", "--tiers", "structural", "--out-dir",
                  out("layouts-new")], env=env, cwd=m["lablib-deep"],
            check=_all(_contains("new case lablib_deep/lablib.autograd"), _lacks("unknown model"))),
        Row("layouts 40.2: gate, a model no revision provides",
            ["gate", "--repo", str(m["lablib"]), "--base", "main", "--head", "deep", "--model", "lablib_nowhere",
             "--backend", "lablib.autograd", "--out-dir", out("layouts-nowhere")], env=env,
            check=_contains("unknown model 'lablib_nowhere': neither this interpreter nor")),
        Row("layouts 40.2: bisect, a model the bad end adds with its line in ttfg.toml (not installed here)",
            expect=2, argv=["bisect", "--good", "main", "--bad", "deep", "--tiers", "structural", "--out-dir",
                            out("layouts-bisect-new")], env=env, cwd=m["lablib-deep"],
            # the common case is the same at both ends and counters alone settle nothing: undecided, exit 2,
            # saying that more time would not decide it (issue 40 item 5)
            check=_all(_contains("only the bad end"), _contains("not bisected"), _lacks("unknown model"),
                       _contains("more time would not decide it"))),
        Row("layouts 40.2: bisect, a model neither end provides",
            ["bisect", "--repo", str(m["lablib"]), "--good", "main", "--bad", "deep", "--model", "lablib_nowhere",
             "--backend", "lablib.autograd", "--out-dir", out("layouts-bisect-nowhere")], env=env,
            check=_all(_contains("unknown model 'lablib_nowhere': neither this interpreter nor"),
                       lambda proc: "bisect.json written" if (Path(out("layouts-bisect-nowhere")) / "bisect.json")
                       .exists() else None)),
        Row("layouts 40.3: config, install-path set in ttfg.toml (shown, the file its origin)", expect=0,
            argv=["config"], cwd=m["mono"], check=_contains("ttfg.toml:install-path")),
        Row("layouts 40.7: gate, the head adds a module no case imports (a pass that says so)", expect=0,
            argv=["gate", "--repo", str(m["lablib"]), "--base", "main", "--head", "offpath", *lab, "--out-dir",
                  out("layouts-off")], env=env,
            check=_all(_contains("could not see the change"),
                       gate_json("layouts-off", lambda doc: None if doc["measured_path"]["off_path"]
                                 else "gate.json does not say it"))),
        Row("layouts 40.7: gate --off-path fail, the same head",
            ["gate", "--repo", str(m["lablib"]), "--base", "main", "--head", "offpath", *lab, "--off-path", "fail",
             "--out-dir", out("layouts-off-fail")], env=env, check=_contains("could not see the change")),
        Row("layouts 43.3: gate, the head changes only tests/__init__.py (not run because lablib/__init__.py was)",
            expect=0, argv=["gate", "--repo", str(m["lablib"]), "--base", "main", "--head", "tests-init", *lab,
                            "--out-dir", out("layouts-tests")], env=env,
            check=gate_json("layouts-tests", lambda doc: None if doc["measured_path"]["not_ran"]
                            == ["tests/__init__.py"] and not doc["measured_path"]["ran"]
                            else f"measured_path: {doc['measured_path']}")),
        Row("layouts 43.3: gate, the head deletes a module the base imported (on the path: the base ran it)",
            expect=0, argv=["gate", "--repo", str(m["lablib"]), "--base", "with-extra~1", "--head", "with-extra",
                            *lab, "--out-dir", out("layouts-deleted")], env=env,
            check=gate_json("layouts-deleted", lambda doc: None if "lablib/extra.py" in doc["measured_path"]["ran"]
                            and not doc["measured_path"]["off_path"] else f"measured_path: {doc['measured_path']}")),
    ]


def _lacks(words: str):
    def check(proc) -> str | None:
        return f"says {words!r}" if words in proc.stdout + proc.stderr else None
    return check


__all__ = ["files", "rows"]
