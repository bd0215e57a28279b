"""Proof that a change was on the measured path: which of the project's files ran, per side.

Why: a library's pull request that slowed a file its measured path never ran (the guide's
model-only plugin ran ttfg's interpreter, not the library) was gated for 544 s and
passed, "inconclusive". A measurement can only see code that runs inside it. So before
any verdict, each side runs every case it provides once in a process of its own under a
cheap trace (``probe.coverage``: which source files ran from the import to the end of the
first gradient, and which extension modules were loaded), and the gate asks: of the
project files this change touched, did any run, on either side?

Files are compared by their repository paths, exactly. A side's project is installed into a
folder of its own (``sources.py``), so ``src/mylab/layers.py`` runs as
``<install>/mylab/layers.py``; each file that ran is mapped back to the one file of the
side's own checkout that it was installed from (:func:`source_paths`: same name and the same
bytes, an ambiguous match settled by the folder the package was installed from). Matching
by path tails called ``tests/__init__.py`` "ran" because ``mylab/__init__.py`` did.

Both sides are traced: a module the head deletes, or stops importing, ran on the base, and
its removal changes what is measured. Extension sources (``.c``, ``.cpp``, ``.rs``,
``.pyx`` ...) never appear in a Python trace: one is on the path when a loaded extension
module has its folder and name (``src/mylab/_fast.c`` and ``mylab/_fast.cpython-311-*.so``),
and is otherwise said plainly as not seen. Stubs (``.pyi``) never run, and are said.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Iterable, Mapping

from .runner import probe_env

if TYPE_CHECKING:
    from .cases import Case
    from .runner import RunSettings

#: Python source a case's process can run.
PYTHON_SUFFIXES = (".py",)
#: Type stubs: code files that never run.
STUB_SUFFIXES = (".pyi",)
#: Sources compiled into extension modules: a Python trace never sees them run.
EXTENSION_SOURCE_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".h", ".hpp", ".rs", ".pyx", ".pxd", ".cu")
#: Every file a change can carry code in (anything else, a README or a workflow, is not code on any path).
CODE_SUFFIXES = PYTHON_SUFFIXES + STUB_SUFFIXES + EXTENSION_SOURCE_SUFFIXES
#: Loaded extension modules, as the trace reports them.
EXTENSION_MODULE_SUFFIXES = (".so", ".pyd")


def kind(path: str) -> str | None:
    """``"python"``, ``"stub"``, ``"extension"`` (a compiled source) or None (not code, or a dependency
    declaration: ``setup.py`` declares, and a bump of its ``install_requires`` is measured by the environments)."""
    from ..provision.dependencies import is_declaration

    suffix = PurePosixPath(path).suffix
    if suffix not in CODE_SUFFIXES or is_declaration(path):
        return None
    return "python" if suffix in PYTHON_SUFFIXES else "stub" if suffix in STUB_SUFFIXES else "extension"


def is_code(path: str) -> bool:
    """Whether a changed repository file is code (:func:`kind`)."""
    return kind(path) is not None


@dataclass
class PathCheck:
    """Which changed code files of the project ran on the measured path (on either side), and which did not."""

    #: Changed files a case can run: Python sources and extension sources (repository paths).
    changed: list[str] = field(default_factory=list)
    ran: list[str] = field(default_factory=list)
    #: Cases whose traced process failed (their files are unknown): the check cannot clear them.
    failed: dict[str, str] = field(default_factory=dict)
    #: Changed stubs (never run) and extension sources no loaded extension module matched (the trace cannot see them).
    stubs: list[str] = field(default_factory=list)
    unseen: list[str] = field(default_factory=list)

    @property
    def not_ran(self) -> list[str]:
        return [f for f in self.changed if f not in self.ran]

    @property
    def off_path(self) -> bool:
        """True when the change touched project code and none of it ran (and every case was traced)."""
        return bool(self.changed) and not self.ran and not self.failed

    def to_json(self) -> dict:
        return {"changed": self.changed, "ran": self.ran, "not_ran": self.not_ran, "failed": self.failed,
                "stubs": self.stubs, "unseen": self.unseen, "off_path": self.off_path, "said": self.describe()}

    def describe(self) -> str:
        extra = []
        if self.unseen:
            extra.append(f"{_names(self.unseen)}: extension source(s), not seen by the Python trace (no extension "
                         "module the cases loaded has that folder and name)")
        if self.stubs:
            extra.append(f"{_names(self.stubs)}: stub(s), which never run")
        tail = "; " + "; ".join(extra) if extra else ""
        if not self.changed:
            return ("the change touches no code file of the project" if not self.stubs
                    else "the change touches no code a case runs") + tail
        if self.off_path:
            return (f"none of the {len(self.changed)} changed code file(s) ran on the measured path of either side "
                    f"({_names(self.not_ran)}): the measurement cannot see this change" + tail)
        return f"{len(self.ran)} of {len(self.changed)} changed code file(s) ran on the measured path" + tail


def _names(paths: list[str]) -> str:
    return ", ".join(paths[:5]) + (" ..." if len(paths) > 5 else "")


def executed(case: "Case", run: "RunSettings") -> set[str]:
    """The source files that ran in one traced process of ``case`` (``run.target`` says where), and the files of
    the extension modules it loaded (a trace of Python calls never sees their code run).

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
        return set(data.get("files") or []) | set(data.get("extensions") or [])
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


def digests(root: Path, paths: Iterable[str]) -> dict[str, str]:
    """``{path: sha256 of its bytes}`` for the files ``paths`` (relative to ``root``) that can be read."""
    out = {}
    for rel in paths:
        try:
            out[rel] = hashlib.sha256((root / rel).read_bytes()).hexdigest()
        except OSError:
            continue
    return out


def tree_digests(tree: Path, folder: str, names: set[str]) -> dict[str, str]:
    """The digests of the files git tracks under ``tree/folder`` named one of ``names``, keyed by their path in
    ``tree`` (the repository's path: ``tree`` is a checkout of the whole repository).

    Tracked files only: a change is made of them, and the install's own build leaves copies in the checkout
    (setuptools' ``build/lib/lablib/ops.py``) that made every file ambiguous, so nothing was found to have run."""
    from ..provision.worktrees import git

    where = folder.strip("/") or "."
    out = git(tree, "ls-files", "-z", "--", where, check=False)
    tracked = [p for p in out.stdout.split("\0") if p and PurePosixPath(p).name in names] if out.returncode == 0 \
        else []
    return digests(tree, tracked)


def source_paths(ran: Mapping[str, str], tree: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """Each installed file that ran, mapped to the one repository file it was installed from.

    ``ran`` is ``{installed path: digest}`` (relative to the install folder), ``tree`` is
    ``{repository path: digest}`` of the side's checkout. A file matches a repository file of the same name
    and the same bytes; where several match (empty ``__init__.py`` files), the one in the folder the package
    was installed from (learnt from the files that matched once) or, failing that, the one whose path ends
    with the installed path; otherwise none (a file is never claimed to have run on a guess).

    Returns ``({installed: repository}, {installed folder: repository folder})``.
    """
    by_content: dict[tuple[str, str], list[str]] = {}
    for path, digest in tree.items():
        by_content.setdefault((PurePosixPath(path).name, digest), []).append(path)
    mapped: dict[str, str] = {}
    folders: dict[str, str] = {}
    ambiguous = []
    for installed, digest in sorted(ran.items()):
        found = by_content.get((PurePosixPath(installed).name, digest), [])
        if len(found) == 1:
            mapped[installed] = found[0]
            folders.setdefault(str(PurePosixPath(installed).parent), str(PurePosixPath(found[0]).parent))
        elif found:
            ambiguous.append((installed, found))
    for installed, found in ambiguous:
        folder = folders.get(str(PurePosixPath(installed).parent))
        pick = [f for f in found if str(PurePosixPath(f).parent) == folder] if folder is not None else []
        pick = pick or [f for f in found if f == installed] or [f for f in found if f.endswith("/" + installed)]
        if len(pick) == 1:
            mapped[installed] = pick[0]
            folders.setdefault(str(PurePosixPath(installed).parent), str(PurePosixPath(pick[0]).parent))
    return mapped, folders


def extension_sources(sources: Iterable[str], loaded: Iterable[str], folders: Mapping[str, str]) -> set[str]:
    """The extension sources (repository paths) that a loaded extension module (installed path,
    ``mylab/_fast.cpython-311-x86_64-linux-gnu.so``) was built from, by folder and name: the module's folder
    mapped to the repository (``folders``, from :func:`source_paths`) and the source's stem equal to the
    module's name (``src/mylab/_fast.c``, ``src/mylab/_fast.pyx``)."""
    wanted = set()
    for module in loaded:
        path = PurePosixPath(module)
        folder = folders.get(str(path.parent))
        if folder is not None:
            wanted.add((folder, path.name.split(".")[0]))
    return {s for s in sources if (str(PurePosixPath(s).parent), PurePosixPath(s).name.split(".")[0]) in wanted}


def check(changed: Iterable[str], ran: set[str], failed: dict[str, str] | None = None,
          extensions: set[str] = frozenset()) -> PathCheck:
    """Which ``changed`` repository files (posix paths) ran: ``ran`` holds the repository paths of the Python
    files that ran on either side (:func:`source_paths`), ``extensions`` the extension sources a loaded module
    was built from (:func:`extension_sources`). Compared exactly: a path runs only when it is that path."""
    kinds = {c: kind(c) for c in changed}
    code = sorted(c for c, k in kinds.items() if k in ("python", "extension"))
    stubs = sorted(c for c, k in kinds.items() if k == "stub")
    hit = [c for c in code if (c in ran if kinds[c] == "python" else c in extensions)]
    unseen = [c for c in code if kinds[c] == "extension" and c not in extensions]
    return PathCheck(code, hit, dict(failed or {}), stubs, unseen)


def side_ran(side, cases: "list[Case]", run: "RunSettings", folder: str, names: set[str]):
    """``(ran, extensions, failed)`` of one side: the repository paths of its Python files that ran in a traced
    process of each case, the extension sources (among ``names``' paths) a loaded module was built from, and the
    cases whose traced process failed. ``folder`` is the project's folder in the repository."""
    installed: set[str] = set()
    failed: dict[str, str] = {}
    for case in cases:
        try:
            installed |= package_paths(executed(case, side.run_settings(run)), side.installed.root)
        except RuntimeError as exc:
            failed[case.id] = str(exc)
    python = {p for p in installed if PurePosixPath(p).suffix in PYTHON_SUFFIXES}
    loaded = {p for p in installed if PurePosixPath(p).suffix in EXTENSION_MODULE_SUFFIXES}
    ran_digests = digests(side.installed.root, python)
    tree = tree_digests(side.tree, folder, {PurePosixPath(p).name for p in python})
    mapped, folders = source_paths(ran_digests, tree)
    return set(mapped.values()), extension_sources(names, loaded, folders), failed


__all__ = ["CODE_SUFFIXES", "PathCheck", "check", "digests", "executed", "extension_sources", "is_code", "kind",
           "package_paths", "side_ran", "source_paths", "tree_digests"]
