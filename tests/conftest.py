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
