"""Proof that a change was on the measured path: which of the project's files ran, per side.

Why: a library's pull request that slowed a file its measured path never ran (the guide's
model-only plugin ran ttfg's interpreter, not the library) was gated for 544 s and
passed, "inconclusive". A measurement can only see code that runs inside it. So before
any verdict, each side runs every case once in a process of its own under a cheap trace
(``probe.coverage``: which source files ran from the import to the end of the first
gradient), and the gate asks: of the project files this change touched, did any run?

Files are matched by their path inside the package: a side's project is installed into a
folder of its own (``sources.py``), so ``src/mylab/layers.py`` in the repository runs as
``<install>/mylab/layers.py``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Iterable

from .runner import probe_env

if TYPE_CHECKING:
    from .cases import Case
    from .runner import RunSettings

#: Source files a change can run (anything else, a README or a workflow, is not code on any path).
CODE_SUFFIXES = (".py", ".pyx", ".pyi")


def is_code(path: str) -> bool:
    """Whether a changed repository file is code a case can run: a source file that is not a dependency
    declaration (``setup.py`` declares; a bump of its ``install_requires`` is measured by the environments)."""
    from ..provision.dependencies import is_declaration

    return PurePosixPath(path).suffix in CODE_SUFFIXES and not is_declaration(path)


@dataclass
class PathCheck:
    """Which changed code files of the project ran on the measured path, and which did not."""

    changed: list[str] = field(default_factory=list)
    ran: list[str] = field(default_factory=list)
    #: Cases whose traced process failed (their files are unknown): the check cannot clear them.
    failed: dict[str, str] = field(default_factory=dict)

    @property
    def not_ran(self) -> list[str]:
        return [f for f in self.changed if f not in self.ran]

    @property
    def off_path(self) -> bool:
        """True when the change touched project code and none of it ran (and every case was traced)."""
        return bool(self.changed) and not self.ran and not self.failed

    def to_json(self) -> dict:
        return {"changed": self.changed, "ran": self.ran, "not_ran": self.not_ran, "failed": self.failed,
                "off_path": self.off_path}

    def describe(self) -> str:
        if not self.changed:
            return "the change touches no code file of the project"
        if self.off_path:
            return (f"none of the {len(self.changed)} changed code file(s) ran on the measured path "
                    f"({', '.join(self.changed[:5])}{' ...' if len(self.changed) > 5 else ''}): the measurement "
                    "cannot see this change")
        return f"{len(self.ran)} of {len(self.changed)} changed code file(s) ran on the measured path"


def executed(case: "Case", run: "RunSettings") -> set[str]:
    """The source files that ran in one traced process of ``case`` (``run.target`` says where).

    Raises
    ------
    RuntimeError
        When the process fails, with its error.
    """
    workdir = Path(tempfile.mkdtemp(prefix="ttfg-coverage-"))
    report = workdir / "report.json"
    try:
        env = probe_env(run, workdir / "cache", "cold", case.backend)
        cmd = [run.target.python, "-m", "ttfg.measure.probe", "--case", json.dumps(case.to_json()), "--kind",
               "coverage", "--report", str(report)]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=workdir, timeout=run.timeout_s * 3,
                              stdin=subprocess.DEVNULL)
        try:
            data = json.loads(report.read_text())
        except (OSError, ValueError):
            raise RuntimeError(f"the traced process exited {proc.returncode} with no report: "
                               f"{proc.stderr.strip()[-300:]}") from None
        if not data.get("ok"):
            raise RuntimeError(f"{data.get('error')} (in phase {data.get('phase')})")
        return set(data.get("files") or [])
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"the traced process took over {run.timeout_s * 3:g} s") from None
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def package_paths(files: Iterable[str], root: Path) -> set[str]:
    """``files`` under ``root`` (a side's install folder), as posix paths relative to it."""
    root = root.resolve()
    out = set()
    for f in files:
        try:
            out.add(Path(f).resolve().relative_to(root).as_posix())
        except (ValueError, OSError):
            continue
    return out


def check(changed: Iterable[str], ran_relative: set[str], failed: dict[str, str] | None = None) -> PathCheck:
    """Which ``changed`` repository files (posix paths) ran, matched by their path inside the package.

    ``ran_relative`` are the files that ran, relative to the install folder (``mylab/layers.py``);
    a changed ``src/mylab/layers.py`` ran when it ends with one of them.
    """
    code = sorted(c for c in changed if is_code(c))
    ran = [c for c in code if any(_same_file(c, r) for r in ran_relative)]
    return PathCheck(code, ran, dict(failed or {}))


def _same_file(changed: str, installed: str) -> bool:
    """Whether a repository path is the source of an installed one.

    ``src/mylab/layers.py`` installs as ``mylab/layers.py`` (the path ends with it). A build that
    maps a folder to another package name (``package-dir``: ``harness/`` installed as ``ttfg/``)
    keeps the depth and renames the top folder only: ``harness/decide/x.py`` is ``ttfg/decide/x.py``;
    a folder mapped into a subpackage (``models/`` as ``ttfg.models``) ends the installed path.
    """
    if changed == installed or changed.endswith("/" + installed) or installed.endswith("/" + changed):
        return True
    c, i = changed.split("/"), installed.split("/")
    return len(c) == len(i) > 1 and c[1:] == i[1:]


__all__ = ["CODE_SUFFIXES", "PathCheck", "check", "executed", "package_paths"]
