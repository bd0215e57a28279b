"""The example project (``examples/flaxlab``) as a new user's repository, with a git history made here.

The history is made by this fixture, never committed as a nested repository: ``first`` (the
example as shipped), ``slow`` (a deliberate slowdown in flaxlab's own layer code, traced
once per convolution: a named pure-Python function, and two more operations per
convolution) and, from ``first``, ``comment`` (one comment, nothing else).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from .user_project import git, layered_venv

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
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "flaxlab as shipped")
    shipped = git(repo, "rev-parse", "HEAD")
    if setup is not None:
        setup(repo)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "ttfg init")
    first = git(repo, "rev-parse", "HEAD")
    layers = repo / LAYERS
    git(repo, "checkout", "-q", "-b", "comment")
    # At the end of a line: a comment on a line of its own moves every line below it, and jax
    # writes source lines into the lowered module's metadata, so XLA's compile then ran 1.5 %
    # more instructions here (beyond the instructions tier's 1.38 % margin): a real change in
    # the work, not a comment-only one.
    layers.write_text(layers.read_text().replace('    return conv(x)\n',
                                                 '    return conv(x)  # nnx.Conv takes NHWC, as the backend gives it\n'))
    git(repo, "commit", "-q", "-am", "a comment, nothing else")
    comment = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "-b", "slow", first)
    layers.write_text(SLOW_LAYERS)
    git(repo, "commit", "-q", "-am", "check every convolution (slower)")
    slow = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "main")
    return {"repo": repo, "shipped": shipped, "first": first, "comment": comment, "slow": slow}


def install(repo: Path, python: Path) -> None:
    """``pip install -e .`` of the example, with its pinned dependencies (Flax), into ``python``'s venv."""
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    "-c", str(ROOT / "constraints.txt"), "-e", str(repo)],
                   check=True, capture_output=True, text=True, timeout=900)


__all__ = ["EXAMPLE", "SLOW_FUNCTION", "install", "layered_venv", "make_repository"]
