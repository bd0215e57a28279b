"""The example project (``examples/flaxlab``) as a new user's repository, with a git history made here.

The history is made by this fixture, never committed as a nested repository: ``shipped``
(the example as shipped), ``first`` (after the user's ``ttfg init``, when there is one),
from it ``comment`` (one comment, nothing else) and ``slow`` (a deliberate slowdown in
flaxlab's own layer code, traced once per convolution: a named pure-Python function, and
two more operations per convolution), then ``after`` (the README only). Dates are a day
apart in that order, so asv's history is ``first, comment, slow, after``: two commits on
each side of the step, what step detection needs.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from .conftest import GitRepo
from .user_project import layered_venv

#: Commit dates a day apart, in the order the commits are made: asv orders history by date, and
#: commits made within one second would tie.
_DAY = iter(range(1, 29))
#: Who flaxlab's commits are by.
FLAXLAB = ("flaxlab", "flaxlab@example.com")


def next_day() -> str:
    """The next day's date, for the next commit (author and committer)."""
    return f"2026-02-{next(_DAY):02d}T12:00:00+00:00"

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "flaxlab"
LAYERS = Path("src") / "flaxlab" / "layers.py"
#: The function the slow commit adds; the gate's attribution must name it.
SLOW_FUNCTION = "_flaxlab_slow_conv_check"

SLOW_LAYERS = f'''"""flaxlab's own layer code, called once per convolution when the model is traced."""


def {SLOW_FUNCTION}(n: int = 60_000) -> int:
    """A deliberate slowdown: pure-Python work each time a convolution is traced."""
    total = 0
    for i in range(n):
        total = (total * 31 + i) % 1_000_003
    return total


def conv_forward(conv, x):
    """One convolution of the network (an ``nnx.Conv`` on NHWC input)."""
    {SLOW_FUNCTION}()
    return conv(x) * 1.0 + 0.0
'''


def make_repository(root: Path, setup=None) -> dict:
    """The example in a git repository of its own; returns its path and the three commits.

    ``setup(repo)``, when given, runs after the shipped commit (a new user's install and
    ``ttfg init``); what it writes is committed, and that commit is ``first``.
    """
    repo = root / "flaxlab"
    shutil.copytree(EXAMPLE, repo, ignore=shutil.ignore_patterns("*.egg-info", "__pycache__", "build"))
    history = GitRepo.init(repo, identity=FLAXLAB)
    shipped = history.commit("flaxlab as shipped", when=next_day())
    if setup is not None:
        setup(repo)
        history.commit("ttfg init", when=next_day())
    first = history.head()
    layers = repo / LAYERS
    history.git("checkout", "-q", "-b", "comment")
    layers.write_text(layers.read_text().replace('    return conv(x)\n',
                                                 '    return conv(x)  # nnx.Conv takes NHWC, as the backend gives it\n'))
    comment = history.commit("a comment, nothing else", stage="tracked", when=next_day())
    history.git("checkout", "-q", "-b", "slow", first)
    layers.write_text(SLOW_LAYERS)
    slow = history.commit("check every convolution (slower)", stage="tracked", when=next_day())
    (repo / "README.md").write_text((repo / "README.md").read_text() + "\nConvolutions are checked as traced.\n")
    after = history.commit("README: say so", stage="tracked", when=next_day())
    history.git("checkout", "-q", "main")
    return {"repo": repo, "shipped": shipped, "first": first, "comment": comment, "slow": slow, "after": after}


def install(repo: Path, python: Path) -> None:
    """``pip install -e .`` of the example, with its pinned dependencies (Flax), into ``python``'s venv."""
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    "-c", str(ROOT / "constraints.txt"), "-e", str(repo)],
                   check=True, capture_output=True, text=True, timeout=900)


__all__ = ["EXAMPLE", "SLOW_FUNCTION", "install", "layered_venv", "make_repository"]
