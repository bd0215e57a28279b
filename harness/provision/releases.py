"""Which releases of a framework exist, which this machine can install, and how to ask for each.

Why: a framework release moves time to first gradient more than most code changes, and
nobody publishes the curve. ``ttfg releases jax --from 0.4.30 --to 0.10.2`` measures it:
one environment per release (``environments.py``), adjacent releases gated as pairs.
This module only decides *what* to build:

- the releases in a range, from the registry's JSON API (yanked and pre-releases left
  out), or an explicit list;
- which of them to sweep: by default the last patch of each minor version, plus both
  ends of the range (``--every minor``), or every release (``--every release``);
- each release's requirement lines, with its companions, as the measuring backend declares
  them (``Backend.release_requirements``): ``jax[cpu]==V`` (the extra pins
  the jaxlib that release was made for: jax 0.4.37 runs on jaxlib 0.4.36, and jax 0.5.2
  on jaxlib 0.5.1, which the extra knows and a ``jaxlib==V`` pin would not), ``autograd``
  with ``scipy`` (ttfg's autograd backend uses ``autograd.scipy``);
- for torch, what can be had here at all: the CPU wheels in the ``PIP_FIND_LINKS``
  folders. Every other torch release on the registry is a CUDA build of several GB;
  ttfg says so instead of downloading one.
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError

#: The backends that measure each package's releases by default; the first one says what an
#: environment with a release holds (``Backend.release_requirements``).
BACKENDS = {"jax": ("jax.jit",), "autograd": ("autograd",), "torch": ("torch.eager",)}
#: What the gradient check needs in every release's environment: the float64 reference is computed
#: with HIPS autograd (and its scipy). A sweep checks each release's gradients before it times them:
#: jaxlib 0.5.3 to 0.8.1 compute a wrong gradient for jax.jit with params=closure,chain=unrolled.
CHECKING = ("autograd", "scipy")
EVERY = ("minor", "release")
REGISTRY = os.environ.get("TTFG_PYPI_JSON", "https://pypi.org/pypi/{package}/json")


@dataclass(frozen=True)
class Release:
    """One release to measure: the package, its version, and the lines its environment is built from."""

    package: str
    version: str
    requirements: tuple[str, ...]

    @property
    def name(self) -> str:
        return f"{self.package}-{self.version}"


def requirements(package: str, version: str) -> tuple[str, ...]:
    """The requirement lines of an environment with release ``version`` of ``package``.

    The backend that measures the package declares them, beside the framework code that
    needs them (``jax[cpu]==V`` for jaxlib, ``scipy`` beside autograd); loading the backend
    class imports no framework.
    """
    from .. import engines

    return engines.get(BACKENDS[package][0]).requirements_for(version)


def _key(version: str):
    from packaging.version import Version

    return Version(version)


def registry_releases(package: str, timeout: float = 30.0) -> list[str]:
    """Every final, unyanked release of ``package`` on the registry, oldest first.

    Raises
    ------
    UsageError
        When the registry cannot be reached (no network) or does not know the package.
    """
    from packaging.version import InvalidVersion, Version

    url = REGISTRY.format(package=package)
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            data = json.load(response)
    except urllib.error.HTTPError as exc:
        raise UsageError(f"the registry does not know {package!r} ({url}: HTTP {exc.code})") from None
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        raise UsageError(f"no network: cannot list {package}'s releases from {url} ({getattr(exc, 'reason', exc)}); "
                         "name them instead with --versions") from None
    out = []
    for version, files in (data.get("releases") or {}).items():
        try:
            parsed = Version(version)
        except InvalidVersion:
            continue
        if files and not parsed.is_prerelease and not all(f.get("yanked") for f in files):
            out.append(version)
    return sorted(out, key=_key)


def local_wheels(package: str) -> list[str]:
    """Versions of ``package`` lying as wheels in the folders pip finds links in (``PIP_FIND_LINKS`` and pip's
    configuration: this machine's own files)."""
    from .uv import find_links

    found = set()
    pattern = re.compile(rf"^{re.escape(package)}-([0-9][^-]*)-", re.I)
    for folder in find_links():
        path = Path(folder)
        if path.is_dir():
            for wheel in path.glob("*.whl"):
                match = pattern.match(wheel.name)
                if match:
                    found.add(match.group(1).split("+")[0])
    return sorted(found, key=_key)


def in_range(versions: list[str], low: str | None, high: str | None) -> list[str]:
    """The versions between ``low`` and ``high``, both included."""
    return [v for v in versions if (low is None or _key(v) >= _key(low)) and (high is None or _key(v) <= _key(high))]


def thin(versions: list[str], every: str) -> list[str]:
    """``minor``: the last release of each minor version, plus the first of the range; ``release``: all."""
    if every not in EVERY:
        raise UsageError(f"--every {every!r}: choose one of {', '.join(EVERY)}")
    if every == "release" or len(versions) <= 2:
        return list(versions)
    last: dict[tuple, str] = {}
    for v in versions:
        last[_key(v).release[:2]] = v
    return sorted({versions[0], *last.values()}, key=_key)


def _distinct(versions: list[str], notes: list[str]) -> list[str]:
    """The versions as releases: each checked (PEP 440), one per release (``1.7`` and ``1.7.0`` are one
    release, measured once: gating it against itself would report a difference between a thing and itself).

    Raises
    ------
    UsageError
        For an empty list or a string that is not a version, naming it.
    """
    from packaging.version import InvalidVersion

    seen: dict = {}
    for text in versions:
        text = text.strip()
        if not text:
            continue
        try:
            key = _key(text)
        except InvalidVersion:
            raise UsageError(f"--versions: {text!r} is not a version (write e.g. 0.4.38)") from None
        if key in seen and seen[key] != text:
            notes.append(f"{seen[key]} and {text} are one release: measured once")
        seen.setdefault(key, text)
    if not seen:
        raise UsageError("--versions names no version (write e.g. --versions 0.4.38,0.10.2)")
    return [seen[k] for k in sorted(seen)]


def plan(package: str, versions: list[str] | None = None, low: str | None = None, high: str | None = None,
         every: str = "minor", extra: tuple[str, ...] = ()) -> tuple[list[Release], list[str]]:
    """The releases to sweep, and notes on those that cannot be had here.

    Parameters
    ----------
    package : str
        ``jax``, ``autograd`` or ``torch``.
    versions : list of str, optional
        An explicit list (checked against nothing: a version that does not exist fails its
        cell with the resolver's message).
    low, high : str, optional
        The range, when ``versions`` is not given (from the registry).
    every : str
        How to thin the range (:func:`thin`).
    extra : tuple of str
        Requirement lines added to every release's environment (``--with numpy==2.4.6``).

    Raises
    ------
    UsageError
        For an unknown package, an empty selection, or a registry that cannot be reached.
    """
    if package not in BACKENDS:
        raise UsageError(f"ttfg releases {package!r}: known packages are {', '.join(BACKENDS)}")
    notes = []
    if versions is not None:
        chosen = _distinct(versions, notes)
    elif package == "torch":
        local = in_range(local_wheels("torch"), low, high)
        notes.append("torch: this machine can install " + (", ".join(local) if local else "no release")
                     + " (CPU wheels in the folders pip finds links in); every other torch release on the registry is a "
                     "CUDA build of several GB, not tried")
        chosen = local
    else:
        chosen = thin(in_range(registry_releases(package), low, high), every)
    if not chosen:
        raise UsageError(f"no {package} release between {low or 'the first'} and {high or 'the last'}"
                         + (f" ({notes[0]})" if notes else ""))
    if len(chosen) < 2:
        notes.append(f"only one release ({chosen[0]}): nothing to pair")
    releases = [Release(package, v, tuple(dict.fromkeys(requirements(package, v) + CHECKING + tuple(extra))))
                for v in chosen]
    return releases, notes


__all__ = ["BACKENDS", "EVERY", "Release", "in_range", "local_wheels", "plan", "registry_releases",
           "requirements", "thin"]
