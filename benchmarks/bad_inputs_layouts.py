"""``bad_inputs.py``'s rows for project layouts, head-declared cases, ``ttfg config`` and the measured path (issue 40
items 1, 2, 3 and 7, issue 43 item 3), and their files.

One scratch repository, ``lablib`` in a flat layout (its package at the root, setuptools, ``requirements.txt`` holding
``-r requirements/base.txt``, the backend listing ``lablib`` among its modules as ``ttfg init``'s starter does),
written by ``tests/layout_projects.py``, with branches made here from its first commit:

- ``layouts 40.1``: a bump of the pin in ``requirements/base.txt`` gates (two environments built with uv, seconds
  from uv's cache after the first run), where it was refused "would import lablib from .../sources/..., outside it";
  a code change gated with the repository's root itself on the path (``PYTHONPATH``, the ``lablib.egg-info``
  setuptools wrote there giving the entry points: a package importable from the repository's root, never
  installed) imports each side's ``lablib`` from the side's own install, never from the working tree;
- ``layouts 40.2``: a head that adds a model and its line in ttfg.toml gates without a reinstall (a new case); a
  model no revision provides is refused naming it;
- ``layouts 40.2`` (bisect): a bisect whose bad end adds a model (run from that checkout) names it "not bisected"
  instead of refusing it; a model neither end provides is refused naming it;
- ``confirm 40.2``: ``regressions --confirm`` of a timing step whose later commit removes the model (its entry
  point), a model this interpreter does not know: resolved from each commit's install, the step unconfirmed saying
  that the later commit no longer provides the case (nothing sampled), in the terminal and in
  ``confirmations.json``, never "unknown model";
- ``confirm 40.6``: the same, on a repository holding a worktree a ``kill -9``'d ttfg left: removed, saying so;
- ``layouts 40.3``: ``ttfg config`` shows ``install-path`` with the file as its origin;
- ``layouts 40.7`` / ``43.3``: a head that adds a module no case imports passes saying so (exit 0), and exits 2
  with ``--off-path fail`` or ``off-path = "fail"`` in the head's ttfg.toml (run from its checkout); a value other
  than pass or fail is refused, on the command line and in a config; ``bisect`` takes no ``--off-path`` (it traces
  no path: its revisions are known to differ in what is measured); a head that changes only ``tests/__init__.py``
  is not "run" because ``lablib/__init__.py`` was; a head that deletes a module the base imported is on the path
  (the base's trace).

The rows see lablib's entry points through ``PYTHONPATH`` (its first commit installed into a folder here), as a
user's environment has the library installed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _repository(repo: Path):
    """``(git, commit)`` for the scratch repository ``repo``: ``git(*args)`` its output, ``commit(message, texts)``
    the files written, everything staged and committed, its hash."""

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(repo), "-c", "user.name=bad-inputs", "-c", "user.email=b@example.com",
                               *args], check=True, capture_output=True, text=True).stdout.strip()

    def commit(message: str, texts: dict[str, str]) -> str:
        for name, text in texts.items():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            (repo / name).write_text(text)
        git("add", "-A")
        git("commit", "-q", "-m", message)
        return git("rev-parse", "HEAD")

    return git, commit


def _deep(plain: dict[str, str]) -> dict[str, str]:
    """lablib's pyproject.toml and plugin (of ``plain``, the flat layout's files) declaring a second model,
    ``lablib_deep``."""
    return {"pyproject.toml": plain["pyproject.toml"].replace(
                'lablib_mlp = "lablib.ttfg_plugin:build_mlp"',
                'lablib_mlp = "lablib.ttfg_plugin:build_mlp"\nlablib_deep = "lablib.ttfg_plugin:build_deep"'),
            "lablib/ttfg_plugin.py": plain["lablib/ttfg_plugin.py"]
            + "\n\ndef build_deep() -> ModelSpec:\n    return build_mlp(5)\n"}


def files(d: Path) -> dict:
    """The scratch repository, its branches and the folder its first commit is installed in."""
    sys.path.insert(0, str(ROOT))
    from tests.layout_projects import _files

    repo = d / "lablib"
    repo.mkdir()

    git, commit = _repository(repo)

    git("init", "-q", "-b", "main")
    commit("first", _files("flat", "autograd==1.7.0"))
    git("checkout", "-q", "-b", "bump")
    commit("bump autograd", {"requirements/base.txt": "autograd==1.9.1\nscipy\n"})
    git("checkout", "-q", "-b", "offpath", "main")
    commit("a command line no case imports", {"lablib/cli.py": "def main():\n    return sum(range(10))\n"})
    git("checkout", "-q", "-b", "offpath-config")
    commit("the project asks for strictness", {"ttfg.toml": 'off-path = "fail"\n'})
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
    commit("a deeper model, named in ttfg.toml", {**_deep(_files("flat", "autograd==1.7.0")),
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
    offpath_config = d / "lablib-offpath-config"
    git("worktree", "add", "-q", str(offpath_config), "offpath-config")
    # The repository's root as an import root: setuptools' egg_info leaves lablib.egg-info there (kept out of git's
    # status, as a .gitignore would), the entry points of a package imported from the root.
    (repo / ".git" / "info" / "exclude").write_text("*.egg-info/\n")
    subprocess.run([sys.executable, "-c", "import setuptools; setuptools.setup()", "egg_info"], cwd=repo, check=True,
                   capture_output=True, timeout=300)
    bad_config = d / "offpath-bad-config"
    bad_config.mkdir()
    (bad_config / "ttfg.toml").write_text('off-path = "sometimes"\n')
    made = _history(d)
    # A monorepo whose ttfg.toml names the project's folder.
    mono = d / "layouts-mono"  # bad_inputs.py has a "mono" of its own
    (mono / "py").mkdir(parents=True)
    (mono / "py" / "setup.py").write_text("from setuptools import setup\nsetup(name='py')\n")
    (mono / "ttfg.toml").write_text('install-path = "py"\n')
    subprocess.run(["git", "init", "-q", str(mono)], check=True, capture_output=True)
    return {"lablib": repo, "lablib-site": site, "lablib-deep": deep, "layouts-mono": mono,
            "lablib-offpath-config": offpath_config, "offpath-bad-config": bad_config, **made}


def _history(d: Path) -> dict:
    """``lablib-history``: ten commits of lablib (flat), the first declaring a second model, ``lablib_deep``, the
    sixth removing it; two asv histories of its commits (``asv.results`` through ``ttfg.history.synthetic``) where
    ``lablib_deep/autograd`` takes twice as long from the sixth on; a worktree a ``kill -9``'d ttfg left there."""
    from bad_inputs_bisect import _killed_worktree
    from tests.layout_projects import _files
    from ttfg.history.synthetic import write_history

    repo = d / "lablib-history"
    repo.mkdir()

    git, commit = _repository(repo)

    git("init", "-q", "-b", "main")
    plain = _files("flat", "autograd==1.7.0")
    deep = _deep(plain)
    shas = [commit("first, with lablib_deep", {**plain, **deep})]
    shas += [commit(f"notes {i}", {"NOTES.md": f"{i}\n"}) for i in range(2, 6)]
    shas.append(commit("lablib_deep removed", {name: plain[name] for name in deep}))
    shas += [commit(f"notes {i}", {"NOTES.md": f"{i}\n"}) for i in range(7, 11)]
    case = ("lablib_deep", "autograd", "params=args,chain=unrolled")
    made = {"lablib-history": repo}
    for name in ("history-deep", "history-deep-pruned"):
        write_history(d / name, len(shas), case_list=[case], commits=shas, steps_per_case=0, seed=1,
                      plant=[("/".join(case), "first_grad_s", 5, 2.0)], machine="lab")
        made[name] = d / name
    made["history-left"] = _killed_worktree(repo)
    return made


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

    def own_installs(folder: str) -> callable:
        """Each side imported lablib from its own install of the revision, never from the working tree."""
        def check(proc) -> str | None:
            for role in ("base", "head"):
                side = json.loads((Path(out(folder)) / f"{role}.json").read_text())["environment"]["side"]
                origins = [o for mod, o in side["imports"]["modules"].items() if mod.split(".")[0] == "lablib" and o]
                if not origins:
                    return f"{role}: lablib's origin not recorded"
                strays = [o for o in origins if not o.startswith(side["install"]["root"])
                          or o.startswith(str(m["lablib"]))]
                if strays:
                    return f"{role} imported {strays[0]}"
            return None
        return check

    return [
        Row("layouts 40.1: gate, a package importable from the repository's root (the root on PYTHONPATH, a code "
            "change)", expect=0, argv=["gate", "--repo", str(m["lablib"]), "--base", "main", "--head",
                                       "with-extra~1", *lab, "--out-dir", out("layouts-root")],
            env={"PYTHONPATH": str(m["lablib"])},
            check=_all(_lacks("not from its own install"), own_installs("layouts-root"),
                       gate_json("layouts-root", lambda doc: None if "lablib/extra.py" in doc["measured_path"]["ran"]
                                 else f"measured_path: {doc['measured_path']}"))),
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
        Row("confirm 40.6: regressions --confirm, a worktree a kill -9'd ttfg left in the repository", expect=0,
            argv=["regressions", "--results", str(m["history-deep-pruned"]), "--repo", str(m["lablib-history"]),
                  "--confirm", "--budget", "2m", "--confirm-dir", out("confirm-pruned")],
            check=_all(_contains("removed 1 worktree left in"),
                       lambda proc: "the killed run's worktree is still there" if m["history-left"].exists()
                       or str(m["history-left"]) in subprocess.run(
                           ["git", "-C", str(m["lablib-history"]), "worktree", "list"], capture_output=True,
                           text=True).stdout else None)),
        Row("confirm 40.2: regressions --confirm, a step whose later commit removes the model (unknown here)",
            expect=0, argv=["regressions", "--results", str(m["history-deep"]), "--repo", str(m["lablib-history"]),
                            "--confirm", "--budget", "2m", "--confirm-dir", out("confirm-deep")],
            check=_all(_lacks("unknown model"), _contains("1 step: 1 unconfirmed"),
                       _contains("unconfirmed, not re-measured: the later commit"), confirmed_why(
                m["history-deep"], "not re-measured: the later commit", "no longer provides lablib_deep/autograd"))),
        Row("layouts 40.3: config, install-path set in ttfg.toml (shown, the file its origin)", expect=0,
            argv=["config"], cwd=m["layouts-mono"], check=_contains("ttfg.toml:install-path")),
        Row("layouts 40.7: gate, the head adds a module no case imports (a pass that says so)", expect=0,
            argv=["gate", "--repo", str(m["lablib"]), "--base", "main", "--head", "offpath", *lab, "--out-dir",
                  out("layouts-off")], env=env,
            check=_all(_contains("could not see the change"),
                       gate_json("layouts-off", lambda doc: None if doc["measured_path"]["off_path"]
                                 else "gate.json does not say it"))),
        Row("layouts 40.7: gate --off-path fail, the same head",
            ["gate", "--repo", str(m["lablib"]), "--base", "main", "--head", "offpath", *lab, "--off-path", "fail",
             "--out-dir", out("layouts-off-fail")], env=env, check=_contains("could not see the change")),
        Row("layouts 40.7: gate, off-path = \"fail\" in the head's ttfg.toml (run from its checkout)",
            ["gate", "--base", "main", "--head", "offpath-config", *lab, "--out-dir", out("layouts-off-config")],
            env=env, cwd=m["lablib-offpath-config"],
            check=_all(_contains("could not see the change"), _contains("--off-path fail asked for exit 2"))),
        Row("layouts 40.7: gate --off-path sometimes", ["gate", "--off-path", "sometimes", *lab],
            check=_contains("expected pass or fail, got 'sometimes'")),
        Row("layouts 40.7: config, off-path = \"sometimes\" in ttfg.toml", ["config"], cwd=m["offpath-bad-config"],
            check=_all(_contains("off-path"), _contains("expected pass or fail, got 'sometimes'"))),
        Row("layouts 40.7: bisect --off-path fail (bisect traces no path)",
            ["bisect", "--good", "HEAD", "--bad", "HEAD", "--off-path", "fail", *lab],
            check=_contains("unrecognized arguments: --off-path")),
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


def confirmed_why(history: Path, *words: str):
    """The stored confirmation's reason holds ``words``."""
    def check(proc) -> str | None:
        steps = json.loads((history / "confirmations.json").read_text())["steps"]
        reasons = [step["reason"] or "" for step in steps.values()]
        return None if any(all(w in r for w in words) for r in reasons) else f"reasons: {reasons}"
    return check


def _lacks(words: str):
    def check(proc) -> str | None:
        return f"says {words!r}" if words in proc.stdout + proc.stderr else None
    return check


__all__ = ["files", "rows"]
