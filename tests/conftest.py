"""Shared fixtures and small model sizes that keep the suite fast."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# pytest-xdist's workers start with COLUMNS=80 and LINES=24 set (a plain run has neither): the CLI
# reads COLUMNS, so every worker is given the plain run's environment; a test that wants a width sets it.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.pop("COLUMNS", None)
    os.environ.pop("LINES", None)

# uv's package cache (hard-linked into every environment and install ttfg builds) is shared by
# the whole session, although each test gets its own empty user cache folder below: a test
# that builds something should pay for building, not for downloading setuptools again.
os.environ.setdefault("UV_CACHE_DIR", str(Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "uv"))

#: Small but structurally complete versions of each model, for behaviour tests.
SMALL_MODELS = {
    "resnet15": "resnet15:blocks=3",
    "convnext_tiny": "convnext_tiny:depths=1x1x2x1,widths=8x16x16x32",
    "transformer_tiny": "transformer_tiny:blocks=1,width=16,heads=2,seq=8",
}


def run_ttfg(*args: str, env: dict | None = None, timeout: float = 600, cwd: Path | None = None):
    """Run the CLI in a fresh interpreter, as a user would."""
    return subprocess.run(
        [sys.executable, "-m", "ttfg", *args], capture_output=True, text=True,
        env={**os.environ, **(env or {})}, timeout=timeout, cwd=cwd or ROOT,
    )


@pytest.fixture(autouse=True)
def private_user_cache(tmp_path_factory, monkeypatch) -> Path:
    """Tests never read or write the user's cache folder (the doctor's stored calibration lives there),
    in this process or in the CLI processes they start: each test gets an empty one."""
    folder = tmp_path_factory.mktemp("user-cache")
    monkeypatch.setenv("XDG_CACHE_HOME", str(folder))
    return folder


@pytest.fixture(autouse=True, scope="session")
def git_identity(tmp_path_factory):
    """Every git the tests run (theirs and ttfg's) reads a global config of the tests' own that names who commits:
    a CI machine may have no identity configured, and a submodule's checkout has no config of its own. A
    repository's own identity (``GitRepo.init``) still wins over it, as a repository's config always does."""
    config = tmp_path_factory.mktemp("git") / "config"
    config.write_text(f"[user]\n\tname = {GIT_IDENTITY[0]}\n\temail = {GIT_IDENTITY[1]}\n")
    previous = os.environ.get("GIT_CONFIG_GLOBAL")
    os.environ["GIT_CONFIG_GLOBAL"] = str(config)
    yield config
    if previous is None:
        os.environ.pop("GIT_CONFIG_GLOBAL", None)
    else:
        os.environ["GIT_CONFIG_GLOBAL"] = previous


@pytest.fixture(autouse=True)
def no_leaked_ttfg_variables():
    """Every TTFG_* variable is as it was before each test: the CLI's in-process config writes
    TTFG_ASV_* into os.environ, and one leaked value changed what a later test on the same xdist
    worker measured (its asv suite ran resnet15:blocks=2 instead of the project's model)."""
    before = {k: v for k, v in os.environ.items() if k.startswith("TTFG_")}
    yield
    for key in [k for k in os.environ if k.startswith("TTFG_") and k not in before]:
        del os.environ[key]
    os.environ.update(before)


@pytest.fixture
def ttfg():
    return run_ttfg


#: Who the scratch repositories' commits are by, unless a test names someone (a user project's ``mylab``).
GIT_IDENTITY = ("ttfg test", "test@ttfg.example")


def git(cwd: Path, *args: str, when: int | str | None = None) -> str:
    """``git -C cwd ARGS``, its output stripped; a failure raises. ``when``: the author and committer date
    (seconds since the epoch, or an ISO date), for histories ordered by date as asv orders them."""
    env = None
    if when is not None:
        date = f"@{when} +0000" if isinstance(when, int) else when
        env = {**os.environ, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


class GitRepo:
    """A scratch git repository for a test: made on a branch, with an identity of its own in its config
    (its commits never depend on the machine's git config, and a test's later ``git commit`` there is by
    the same person), and commits made in one call.

    The one way the tests make repositories (``GitRepo.init``, or :meth:`identify` on a clone);
    :func:`git` runs anything else in them.
    """

    def __init__(self, path: Path):
        self.path = Path(path)

    @classmethod
    def init(cls, path: Path, branch: str = "main", identity: tuple[str, str] = GIT_IDENTITY) -> "GitRepo":
        """A new repository in ``path`` (made when missing; files already there stay untracked)."""
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        git(path, "init", "-q", "-b", branch)
        return cls(path).identify(identity)

    def identify(self, identity: tuple[str, str] = GIT_IDENTITY) -> "GitRepo":
        """Commits here are by ``identity`` (name, email): for a repository made another way (a clone)."""
        self.git("config", "user.name", identity[0])
        self.git("config", "user.email", identity[1])
        return self

    def git(self, *args: str, when: int | str | None = None) -> str:
        return git(self.path, *args, when=when)

    def commit(self, message: str, files: dict[str, str] | None = None, *, stage: str = "all",
               when: int | str | None = None) -> str:
        """``files`` (path -> text) written and staged, and what ``stage`` says besides: ``"all"`` every change
        (``git add -A``), ``"tracked"`` changes to tracked files only (``git commit -a``: an untracked build
        folder stays out), ``"files"`` nothing else; then committed (an empty commit is allowed). Its hash."""
        for name, text in (files or {}).items():
            target = self.path / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        if files:
            self.git("add", "--", *files)
        if stage != "files":
            self.git("add", "-A" if stage == "all" else "-u")
        self.git("commit", "-q", "--allow-empty", "-m", message, when=when)
        return self.head()

    def head(self) -> str:
        return self.git("rev-parse", "HEAD")


def copy_working_tree(dest: Path) -> None:
    """This checkout's files as they are now (tracked and untracked, ignored ones left out, uncommitted edits
    included) copied into ``dest``: the code under test, for a repository a gate or asv measures."""
    import shutil

    for name in filter(None, git(ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")):
        src = ROOT / name
        if src.is_file():  # a file deleted but not yet committed is listed and absent
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)



def command_parsers(parser, path: tuple[str, ...] = ()):
    """``(path, parser)`` for ``parser`` and every command under it: ``()``, ``("env",)``, ``("env", "prune")`` ...

    The one place the tests read argparse's internals (its subparsers action): argparse has no public
    way to list a parser's commands once they are added, and these tests walk every ``--help``.
    """
    import argparse

    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from command_parsers(sub, (*path, name))


def interruptible(*args: str) -> list[str]:
    """The command line of ``python -m ttfg ARGS`` for a child that a test interrupts.

    A shell's background job starts with SIGINT ignored, and Python then never raises
    KeyboardInterrupt; the child restores Ctrl-C itself, first thing. (A ``preexec_fn`` did
    it before, but a ``preexec_fn`` makes subprocess run Python's at-fork hooks, and with JAX
    imported in the test process JAX's hook warned "os.fork() was called ... will likely
    lead to a deadlock" in every ``make test``.)
    """
    code = ("import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
            "sys.argv[0] = 'ttfg'; runpy.run_module('ttfg', run_name='__main__', alter_sys=True)")
    return [sys.executable, "-c", code, *args]


#: Installable plugin packages that add backends and models through entry points.
PLUGIN_PACKAGES = ROOT / "tests" / "plugins"


@pytest.fixture(scope="session")
def plugin_site(tmp_path_factory) -> Path:
    """The test plugin packages, pip-installed into a temporary folder (never into the shared venv).

    Copied first, so the build leaves no egg-info or build folder in the source tree;
    one pip call for both, without dependencies or build isolation (a few seconds).
    """
    import shutil

    root = tmp_path_factory.mktemp("plugins")
    sources = [shutil.copytree(pkg, root / pkg.name) for pkg in sorted(PLUGIN_PACKAGES.iterdir())
               if (pkg / "pyproject.toml").is_file()]
    site = root / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--disable-pip-version-check", "--target", str(site), *map(str, sources)],
                   check=True, capture_output=True, text=True, timeout=300)
    return site


@pytest.fixture
def plugins(plugin_site, monkeypatch) -> Path:
    """The test plugins visible to this process and to every child (CLI, probes) it starts."""
    from ttfg import models
    from ttfg import engines

    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(plugin_site), os.environ.get("PYTHONPATH")])))
    monkeypatch.syspath_prepend(str(plugin_site))
    engines.refresh()
    models.refresh()
    yield plugin_site
    monkeypatch.undo()
    engines.refresh()
    models.refresh()
