"""``bad_inputs.py``'s rows for outcomes that must never pass (issue 46's item 1, issue 43's item 2), and their repos.

Kept beside ``bad_inputs.py`` (which imports it) so that one issue's rows live in one place. Each row is a real
``ttfg gate`` on a scratch clone of this repository (its committed HEAD), whose commits break or grow one backend:

- ``outcomes 46.1``: ``--tiers structural`` with the autograd backend failing to import (a SyntaxError) on base and
  head: every process failed, and the gate said "gate passed: no regression shown", exit 0; now "base cannot run",
  exit 2;
- ``outcomes 43.2`` (wildcard): the head's backend has a SyntaxError and its commit says ``Ttfg-Accept: * *
  anything goes``: the gate said "accepted", exit 0; now "head cannot run", the trailer refused, exit 1;
- ``outcomes 43.2`` (the docs' example): the trailer of ``docs/reference/gate.md``, read from the page, on a head
  whose jax.jit first gradient does more work (instructions beyond their margin): accepted, exit 0, and the last
  line says "gate passed with 1 accepted regression(s)". The old example (``jax.jit/resnet15*``) matched nothing.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: A line no Python parses, appended to a backend's module: its processes fail at import, as a broken plugin's do.
SYNTAX_ERROR = "\n\ndef broken(:\n"
#: Python work added to jax.jit's first-gradient window (before tracing): instructions grow beyond their margin.
GROWTH = ("        t0 = clock()\n",
          "        t0 = clock()\n        sum(i * i for i in range(300_000))  # a new shape check\n")


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=bad-inputs", "-c", "user.email=b@example.com", *args],
                   check=True, capture_output=True, text=True)


def _clone(folder: Path) -> Path:
    """This repository's committed HEAD, cloned (sharing its objects) into ``folder``, on a branch ``main``."""
    subprocess.run(["git", "clone", "-q", "--shared", str(ROOT), str(folder)], check=True, capture_output=True)
    _git(folder, "checkout", "-q", "-B", "main")
    return folder


def _commit(repo: Path, path: str, change, message: str) -> None:
    target = repo / path
    target.write_text(change(target.read_text()))
    _git(repo, "commit", "-q", "-am", message)


def docs_example() -> str:
    """The ``Ttfg-Accept:`` line of ``docs/reference/gate.md``'s example, as a user would copy it."""
    text = (ROOT / "docs" / "reference" / "gate.md").read_text()
    return next(ln.strip() for ln in text.splitlines() if ln.strip().startswith("Ttfg-Accept:"))


def repos(d: Path) -> dict[str, Path]:
    """The three scratch clones: ``broken-both``, ``broken-head`` (with the wildcard trailer), ``grown``."""
    made = {}
    autograd = "harness/engines/autograd_numpy.py"
    made["broken-both"] = _clone(d / "outcomes-broken-both")
    _commit(made["broken-both"], autograd, lambda t: t + SYNTAX_ERROR, "base: the backend does not import")
    _commit(made["broken-both"], autograd, lambda t: t + "# still broken\n", "head: still broken")
    made["broken-head"] = _clone(d / "outcomes-broken-head")
    _commit(made["broken-head"], "README.md", lambda t: t + "\n", "base: runs")
    _commit(made["broken-head"], autograd, lambda t: t + SYNTAX_ERROR,
            "head: the backend does not import\n\nTtfg-Accept: * * anything goes")
    made["grown"] = _clone(d / "outcomes-grown")
    _commit(made["grown"], "README.md", lambda t: t + "\n", "base: as it was")
    _commit(made["grown"], "harness/engines/jax_jit.py", lambda t: t.replace(*GROWTH),
            f"head: a new shape check in the first gradient\n\n{docs_example()}")
    return made


def rows(d: Path, out) -> list:
    """The rows (``bad_inputs.Row``), in the order of the issues' items; their repositories are made here."""
    from bad_inputs import Row, _all, _contains

    m = repos(d)
    gate = ["gate", "--base", "HEAD~1", "--head", "HEAD", "--model", "resnet15:blocks=2"]

    def lacks(text: str):
        return lambda proc: None if text not in proc.stdout + proc.stderr else f"the output says {text!r}"

    def last_line(text: str):
        def check(proc):
            lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
            return None if lines and lines[-1].startswith(text) else f"the last line is not {text!r}"
        return check

    return [
        Row("outcomes 46.1: gate --tiers structural, the backend cannot import on base and head (SyntaxError)",
            [*gate, "--repo", str(m["broken-both"]), "--backend", "autograd", "--tiers", "structural", "--out-dir",
             out("outcomes-structural")],
            check=_all(_contains("base cannot run"), _contains("SyntaxError"), lacks("gate passed"))),
        Row("outcomes 43.2: gate, `Ttfg-Accept: * * anything goes` on a head that cannot import", expect=1,
            argv=[*gate, "--repo", str(m["broken-head"]), "--backend", "autograd", "--tiers", "structural",
                  "--out-dir", out("outcomes-wildcard")],
            check=_all(_contains("head cannot run"), _contains("does not accept"), lacks("gate passed"))),
        Row("outcomes 43.2: gate, the docs' example trailer on a jax.jit head with more instructions", expect=0,
            argv=[*gate, "--repo", str(m["grown"]), "--backend", "jax.jit", "--tiers", "instructions",
                  "--out-dir", out("outcomes-docs-example")],
            check=_all(last_line("gate passed with 1 accepted regression(s)"), lacks("unused")), timeout=1200),
    ]
