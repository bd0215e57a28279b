"""Editable and local installs: the packages of an environment whose bytes no version number names.

Why: an environment's identity was its interpreter and its ``{name: version}`` list. An editable
install (``pip install -e ../autograd``) keeps its version while its files change under it: a
bisect interrupted, the editable autograd edited in place (still 1.9.1), and the resumed bisect
reused counts taken before the edit beside counts taken after, reported a step between two commits
that differed in a notes file, then "undecided". A local install (``pip install ./autograd``, a
wheel from a folder) is the same risk: reinstalled from other files, same version.

So each such install is found inside the environment (PEP 610's ``direct_url.json``: a ``file:``
URL; a legacy ``setup.py develop`` egg-info outside the interpreter's prefix) and its files are
digested: an editable install's source tree (what its import finder reads), a local install's
installed files (its ``RECORD``). The digests enter the environment's identity
(``results.identity.digest``), so every key built on it (``results/fact_key.py``) changes with
the bytes.

Left out: the measured code. ttfg itself (the key names its source apart) and a distribution that
provides ttfg backends or models (entry points ``ttfg.backends``/``ttfg.models``): a side imports
those from its own revision's install, first on the path, so the environment's copy is shadowed;
and their bytes change with every commit measured, which is what a calibration is reused across.

A tree too large to read in a moment (:data:`MAX_FILES`, :data:`MAX_BYTES`) is not digested; its
entry says why, and every key built on the environment is then unique (``fact_keys``): nothing
stored is reused for it, and that is said.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from urllib.parse import unquote, urlparse

#: Run inside the environment's interpreter (``environments._installed``): one JSON line,
#: ``[{name: version}, python version, {name: {url, editable, plugin, files}}]``.
CHILD = r"""
import importlib.metadata as m, json, os, platform, sys
packages, local = {}, {}
prefixes = tuple(os.path.realpath(p) + os.sep for p in {sys.prefix, sys.base_prefix, sys.exec_prefix})
for d in m.distributions():
    name = d.metadata['Name']
    if not name:
        continue
    packages[name] = d.version
    try:
        info = json.loads(d.read_text('direct_url.json') or 'null') or {}
    except ValueError:
        info = {}
    url = info.get('url') or ''
    where = os.path.realpath(str(getattr(d, '_path', '') or ''))
    legacy = where.endswith('.egg-info') and not where.startswith(prefixes)
    if not (url.startswith('file:') or legacy):
        continue
    editable = bool((info.get('dir_info') or {}).get('editable')) or legacy
    groups = {e.group for e in d.entry_points}
    local[name] = {'url': url or 'file://' + os.path.dirname(where), 'editable': editable,
                   'plugin': bool(groups & {'ttfg.backends', 'ttfg.models'}),
                   'files': [] if editable else sorted(str(d.locate_file(f)) for f in (d.files or []))}
print(json.dumps([packages, platform.python_version(), local]))
"""

#: Folders never part of a source tree's bytes: version control, caches, virtual environments, bytecode.
SKIPPED = frozenset({".git", ".hg", ".svn", "__pycache__", ".tox", ".nox", ".venv", "venv", "node_modules",
                     ".mypy_cache", ".pytest_cache", ".ruff_cache", ".eggs", ".ipynb_checkpoints"})
#: A tree beyond these is not read (an editable torch checkout with its build holds ~10^5 files, GBs):
#: digesting 20,000 files of 512 MB takes about a second.
MAX_FILES = 20_000
MAX_BYTES = 512 * 1024 * 1024


class TooLarge(Exception):
    """The files of an install are beyond what is digested at every run."""


def _tree_files(root: Path) -> list[Path]:
    out = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED and not (Path(folder) / d / "pyvenv.cfg").exists())
        out += [Path(folder) / f for f in sorted(files) if not f.endswith((".pyc", ".pyo"))]
        if len(out) > MAX_FILES:
            raise TooLarge(f"more than {MAX_FILES:,} files under {root}")
    return out


def digest_files(paths: list[Path], root: Path | None = None) -> str:
    """A digest of the files' names (relative to ``root``) and bytes; a file that vanished counts as absent.

    Raises
    ------
    TooLarge
        Beyond :data:`MAX_FILES` or :data:`MAX_BYTES`.
    """
    if len(paths) > MAX_FILES:
        raise TooLarge(f"{len(paths):,} files, more than {MAX_FILES:,}")
    found, total = hashlib.sha256(), 0
    for path in paths:
        name = str(path.relative_to(root)) if root is not None else str(path)
        try:
            data = path.read_bytes()
        except OSError:
            data = b"\0absent"
        total += len(data)
        if total > MAX_BYTES:
            raise TooLarge(f"more than {MAX_BYTES // 2 ** 20:,} MB of files")
        found.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    return found.hexdigest()[:16]


def path_of(url: str) -> Path:
    """The folder or file a ``file:`` URL names."""
    return Path(unquote(urlparse(url).path))


def digested(raw: dict[str, dict]) -> dict[str, dict]:
    """The child's report (:data:`CHILD`) with each install's files digested: ``{name: {url, editable, tree}}``,
    ``tree`` None with ``why`` for files too many to read; the measured code (ttfg, a plugin) is left out."""
    out = {}
    for name, info in sorted(raw.items()):
        if info.get("plugin") or name.lower() == "ttfg":
            continue
        entry = {"url": str(info.get("url") or ""), "editable": bool(info.get("editable"))}
        try:
            if entry["editable"]:
                root = path_of(entry["url"])
                entry["tree"] = digest_files(_tree_files(root), root) if root.is_dir() else "absent"
            else:
                entry["tree"] = digest_files([Path(p) for p in info.get("files") or []])
        except TooLarge as exc:
            entry.update(tree=None, why=f"not digested: {exc}")
        out[name] = entry
    return out


def undigested(local: dict[str, dict]) -> dict[str, str]:
    """``{name: why}`` of the installs whose bytes an identity cannot cover (too many to read at every run)."""
    return {n: str(e.get("why") or "not digested") for n, e in local.items() if e.get("tree") is None}


__all__ = ["CHILD", "MAX_BYTES", "MAX_FILES", "SKIPPED", "TooLarge", "digest_files", "digested", "path_of",
           "undigested"]
