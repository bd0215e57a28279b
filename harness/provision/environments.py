"""Environments: an interpreter plus an exact set of installed packages, built with uv and cached.

Why: most changes to a user's time to first gradient come from outside their code -- a
new jax, torch or autograd release, a dependency bump in a pull request. A gate that runs
both sides in the current interpreter measures the same packages twice and says
"unchanged" about a change it never measured. So an environment is a value: asked for by
requirement lines (``jax==0.4.38 jaxlib==0.4.38``), by a revision's own lock
(``constraints.txt``) or by a requirements file; resolved to exact versions; built once;
recorded with every result it measures.

How, and what it costs here (2-core VM, uv 0.13.8, warm uv cache):

- **Resolve** with ``uv pip compile`` (0.36 s online, 0.04 s offline); the resolution is
  cached by the request, so a second use asks no registry at all. ttfg's own probe tools
  (memray for allocations, pytest-codspeed's callgrind hooks for instruction counts,
  pyinstrument for sampled stacks) are added at the versions this interpreter has, so
  every tier runs in every environment; a request that conflicts with them is refused,
  naming them.
- **Build** with ``uv venv`` plus ``uv pip install --no-deps`` of the resolved lock, files
  hard-linked from uv's shared cache: jax 0.4.38 took 4.6 s the first time (downloads)
  and 0.57 s from a warm cache; ten jax releases share every unchanged file.
- **Cache** in the user cache folder (``cache.py``: a marker makes an entry valid, one
  builder at a time, half-built entries removed), keyed by the interpreter and a hash of
  the resolved lock. A cached environment costs a directory lookup.
- **Check** before it is cached: the environment must import every framework it was
  asked for (an environment that builds but cannot import jax is refused, not used).

The torch CPU wheel that ``make install`` finds through ``PIP_FIND_LINKS`` is found the
same way: every ``PIP_FIND_LINKS`` folder is passed to uv as ``--find-links`` (uv picks
``torch==2.13.0+cpu`` from this disk for ``torch==2.13.0``).

ttfg itself is not installed into an environment: a probe imports the measured project
from its side's install folder, and ttfg from a folder that maps the running ttfg
(``sources.self_overlay``); the probe needs only numpy and the framework.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from . import cache
from .sources import interpreter_tag
from .uv import EnvError, find_links, resolver_message, run_uv
from .target import Environment, ProbeTarget, normalised, tool_environ
from ..errors import UsageError

CURRENT = "current"
#: ttfg's tools that run inside a probe, added to every environment at this interpreter's versions.
PROBE_TOOLS = ("memray", "pytest-codspeed", "pyinstrument")
#: Requirement names whose import is checked after a build (distribution -> module).
FRAMEWORK_MODULES = {"jax": "jax", "jaxlib": "jaxlib", "torch": "torch", "autograd": "autograd", "numpy": "numpy",
                     "flax": "flax"}
RESOLVE_TIMEOUT_S = 300
#: How an environment is built (uv venv, --no-deps install of the lock, bytecode compiled), part of
#: every cache key: an environment built another way is never reused for this one.
BUILD_RECIPE = "r2"
BUILD_TIMEOUT_S = 1800
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$")


@dataclass(frozen=True)
class Request:
    """What an environment is asked to hold.

    ``requirements`` None means the current interpreter as it is (nothing is built).
    """

    name: str
    requirements: tuple[str, ...] | None
    #: Where the request came from (``--env``, ``constraints.txt at abc1234``): for messages and records.
    origin: str = "--env"
    python: str = sys.executable

    @property
    def current(self) -> bool:
        return self.requirements is None

    def to_json(self) -> dict:
        return {"name": self.name, "requirements": None if self.requirements is None else list(self.requirements),
                "origin": self.origin}


#: Spaces around a version operator or a comma are allowed by PEP 508 (``autograd == 1.7.0``,
#: ``numpy >= 1.26, < 3``); they are closed up before an option's value is split into requirements.
OPERATOR_SPACES = re.compile(r"\s*(===|==|!=|~=|>=|<=|>|<|,)\s*")


def requirement_lines(text: str, where: str) -> tuple[str, ...]:
    """Requirement lines from an option's value, each checked by ``packaging`` (PEP 508).

    Requirements are separated by whitespace or new lines (``jax==0.4.38 jaxlib==0.4.38``);
    spaces around operators and commas belong to one requirement (``autograd == 1.7.0``,
    ``numpy>=1.26,<3``); a line with a marker (``;``) is one requirement. pip options
    (``-r``, ``--index-url`` ...) are refused: a file is given as ``@FILE`` and read by uv.

    Raises
    ------
    UsageError
        Naming the bad requirement.
    """
    from packaging.requirements import InvalidRequirement, Requirement

    lines = []
    pieces = []
    for raw in text.splitlines():
        raw = raw.split(" #", 1)[0].strip() if not raw.lstrip().startswith("#") else ""
        pieces += [raw] if ";" in raw else OPERATOR_SPACES.sub(r"\1", raw).split()
    for line in pieces:
        line = line.strip()
        if not line:
            continue
        if line.startswith("-"):
            raise UsageError(f"{where}: {line!r} is a pip option; give requirement lines (name==version), "
                             "or a requirements file as NAME=@FILE")
        try:
            name = Requirement(line).name
        except InvalidRequirement as exc:
            raise UsageError(f"{where}: {line!r} is not a requirement ({exc})") from None
        if re.fullmatch(r"[0-9.]+", name):
            raise UsageError(f"{where}: {line!r} is a version, not a requirement (write e.g. NAME=jax==0.4.38)")
        lines.append(line)
    if not lines:
        raise UsageError(f"{where}: no requirement given")
    return tuple(lines)


def _default_name(lines: tuple[str, ...]) -> str:
    """``jax==0.4.38 jaxlib==0.4.38`` -> ``jax-0.4.38``: the first pinned requirement names it."""
    from packaging.requirements import Requirement

    first = Requirement(lines[0])
    pins = [s.version for s in first.specifier if s.operator in ("==", "===")]
    return f"{first.name}-{pins[0]}" if pins else first.name


def parse(text: str, what: str = "--env") -> Request:
    """``current``, ``NAME=REQS``, ``NAME=@FILE`` or bare ``REQS`` (named after its first pin).

    Raises
    ------
    UsageError
        For an empty request, a bad name, a missing file or a bad requirement line.
    """
    text = text.strip()
    if text == CURRENT:
        return Request(CURRENT, None, "this interpreter")
    name, eq, value = text.partition("=")
    if eq and NAME_RE.match(name.strip()) and not value.startswith("="):
        name, value = name.strip(), value.strip()
    else:
        name, value = "", text
    if value.startswith("@"):
        # A requirements file is read by uv, as pip reads it (includes, continuations, hashes, markers),
        # and stands for what it resolves to: exact pins of everything it installs.
        from .dependencies import DeclarationError, resolve_file

        path = Path(value[1:]).expanduser()
        try:
            path.read_bytes()
        except OSError as exc:
            raise UsageError(f"{what} {text!r}: cannot read {path}: {exc.strerror or exc}") from None
        try:
            lines = resolve_file(path).lines
        except DeclarationError as exc:
            raise UsageError(f"{what} {text!r}: {exc}") from None
        if not lines:
            raise UsageError(f"{what} {path}: no requirement given")
        origin = str(path)
        name = name or re.sub(r"[^A-Za-z0-9._+-]", "-", path.stem)[:64]
    else:
        lines = requirement_lines(value, f"{what} {text!r}")
        origin = what
    if name == CURRENT:
        raise UsageError(f"{what} {text!r}: the name 'current' is this interpreter; choose another name")
    return Request(name or _default_name(lines), lines, origin)


def _requirement_name(line: str) -> str:
    from packaging.requirements import Requirement

    return normalised(Requirement(line).name)


def _installed(python: str) -> tuple[dict[str, str], str, dict[str, dict]]:
    """``({distribution: version}, "3.11.7", {distribution: editable or local install})`` of an interpreter, asked
    of the interpreter itself; each editable or local install's files digested (``local_installs.py``)."""
    from .local_installs import CHILD, digested

    out = subprocess.run([python, "-c", CHILD], capture_output=True, text=True, timeout=120,
                         env=ProbeTarget(python, isolated=True).asking_environ())
    if out.returncode != 0:
        raise EnvError(f"{python} cannot list its packages: {out.stderr.strip()[-500:]}")
    packages, version, local = json.loads(out.stdout.strip().splitlines()[-1])
    return ({normalised(k): v for k, v in packages.items()}, version,
            {normalised(k): v for k, v in digested(local).items()})


def current(python: str = sys.executable) -> Environment:
    """This interpreter, as it is: nothing is built."""
    packages, version, local = _installed(python)
    return Environment(CURRENT, python, packages, version, origin="this interpreter", local=local)


def check_distinct(envs: "dict[str, Environment]", what: str = "--env") -> None:
    """Refuse two names for one environment: measured against itself, it would report noise as effects.

    Raises
    ------
    UsageError
        Naming the environments that hold the same interpreter and packages.
    """
    seen: dict[str, str] = {}
    for name, env in envs.items():
        other = seen.setdefault(env.digest, name)
        if other != name:
            raise UsageError(f"{what}: {other} and {name} are the same environment (the same interpreter and "
                             f"packages: {', '.join(f'{k} {v}' for k, v in env.recorded().items() if v)}); "
                             "comparing it with itself would measure one thing twice")


def probe_tools() -> list[str]:
    """``memray==1.20.0 ...``: ttfg's in-probe tools at the versions this interpreter has."""
    from importlib.metadata import PackageNotFoundError, version

    pins = []
    for name in PROBE_TOOLS:
        try:
            pins.append(f"{name}=={version(name)}")
        except PackageNotFoundError:
            continue
    return pins


def resolve(request: Request, tag: str) -> tuple[list[str], bool]:
    """The request's exact lock lines (its own lines, ttfg's probe tools, and everything they need).

    Cached by the request, the interpreter and the find-links folders; returns ``(lines, cached)``.

    Raises
    ------
    EnvError
        Quoting the resolver: a version the registry does not have, no network, a conflict
        (with ttfg's own needs, named as such).
    """
    tools = probe_tools()
    wanted = sorted(set(request.requirements or ()) | set(tools))
    digest = hashlib.sha256(json.dumps([tag, wanted, find_links()]).encode()).hexdigest()[:20]
    folder = cache.folder("locks")
    lock = folder / f"{digest}.txt"
    if lock.is_file():
        lines = [line for line in lock.read_text(errors="replace").splitlines() if line and not line.startswith("#")]
        if not _missing(wanted, _lock_versions(lines)):
            return lines, True
        lock.unlink(missing_ok=True)  # a truncated or edited lock: resolved again, never trusted
    what = f"environment {request.name!r} ({request.origin})"
    spec = folder / f".{digest}.{os.getpid()}.in"
    spec.write_text("\n".join(wanted) + "\n")
    try:
        out = run_uv(["pip", "compile", str(spec), "--python", request.python, "--quiet", "--no-header",
                   "--no-annotate"], what, RESOLVE_TIMEOUT_S)
        if out.returncode != 0:
            message = resolver_message(out.stderr + out.stdout)
            alone = None
            if tools:
                spec.write_text("\n".join(request.requirements or ()) + "\n")
                alone = run_uv(["pip", "compile", str(spec), "--python", request.python, "--quiet"], what,
                            RESOLVE_TIMEOUT_S)
            if alone is not None and alone.returncode == 0:
                raise EnvError(f"{what}: {' '.join(request.requirements or ())} conflicts with ttfg's own "
                                        f"needs inside a probe ({', '.join(tools)}):\n{message}")
            raise EnvError(f"{what}: cannot resolve {' '.join(request.requirements or ())}:\n{message}")
    finally:
        spec.unlink(missing_ok=True)
    lines = [line.strip() for line in out.stdout.splitlines() if line.strip() and not line.startswith(("#", " "))]
    tmp = lock.with_name(f".{lock.name}.{os.getpid()}")
    tmp.write_text(f"# {request.name}: {' '.join(request.requirements or ())}\n" + "\n".join(lines) + "\n")
    os.replace(tmp, lock)
    return lines, False


def _build_into(folder: Path, request: Request, lock: list[str], what: str) -> None:
    venv = folder / "venv"
    out = run_uv(["venv", "--quiet", "--python", request.python, str(venv)], what, BUILD_TIMEOUT_S)
    if out.returncode != 0:
        raise EnvError(f"{what}: uv venv failed:\n{resolver_message(out.stderr)}")
    lock_file = folder / "lock.txt"
    lock_file.write_text("\n".join(lock) + "\n")
    # --compile-bytecode: a fresh environment has no .pyc files, and the first processes would otherwise
    # bill bytecode compilation to the framework's import (measured: 4.85 s against 2.02 s for autograd).
    out = run_uv(["pip", "install", "--quiet", "--no-deps", "--compile-bytecode", "--python", str(venv / "bin" / "python"),
               "-r", str(lock_file)], what, BUILD_TIMEOUT_S)
    if out.returncode != 0:
        text = out.stderr + out.stdout
        if re.search(r"No space left on device", text):
            raise EnvError(f"{what}: the disk filled while installing (the partial environment was "
                                    f"removed): {text.strip()[-500:]}")
        raise EnvError(f"{what}: installing the resolved packages failed:\n{resolver_message(text)}")
    python = str(venv / "bin" / "python")
    modules = sorted({FRAMEWORK_MODULES[name] for name in map(_requirement_name, request.requirements or ())
                      if name in FRAMEWORK_MODULES})
    if modules:
        check = subprocess.run([python, "-c", "import " + ", ".join(modules)], capture_output=True, text=True,
                               timeout=600, env=tool_environ())
        if check.returncode != 0:
            raise EnvError(f"{what} builds but cannot import {', '.join(modules)}: "
                                    f"{check.stderr.strip().splitlines()[-1] if check.stderr.strip() else 'no message'}")
    packages, version, _ = _installed(python)
    missing = _missing(list(request.requirements or ()), packages)
    if missing:
        raise EnvError(f"{what} builds but lacks {', '.join(missing)}: the resolved lock did not install "
                       f"{'it' if len(missing) == 1 else 'them'}")
    (folder / "ttfg-env.json").write_text(json.dumps({
        "name": request.name, "requested": list(request.requirements or ()), "origin": request.origin,
        "interpreter": version, "packages": packages, "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }, indent=1) + "\n")


def build(request: Request, on_note=None) -> Environment:
    """The environment ``request`` asks for: the current one, or built (once) and cached.

    Raises
    ------
    EnvError
        When it cannot be resolved, built or imported (nothing half-built is kept).
    CacheError
        When the cache folder cannot be written.
    """
    note = on_note or (lambda text: None)
    if request.current:
        env = current(request.python)
        env.name = request.name
        return env
    started = time.monotonic()
    tag = interpreter_tag(request.python)
    lock, _ = resolve(request, tag)
    key = f"{tag}-{hashlib.sha256(chr(10).join(sorted(lock)).encode()).hexdigest()[:16]}-{BUILD_RECIPE}"
    what = f"environment {request.name!r} ({request.origin})"
    if not cache.complete(cache.root() / "envs" / key):
        note(f"building {what}: {' '.join(request.requirements or ())} ({len(lock)} packages)")
    entry = cache.get("envs", key, lambda folder: _build_into(folder, request, lock, what))
    info, problem = entry_problem(entry.path, lock)
    if problem:  # a cached entry damaged after it was finished: removed and built once more
        note(f"{what}: the cached environment {key} is broken ({problem}); building it again")
        cache.remove(entry.path)
        entry = cache.get("envs", key, lambda folder: _build_into(folder, request, lock, what))
        info, problem = entry_problem(entry.path, lock)
        if problem:
            raise EnvError(f"{what}: the environment built in {entry.path} is broken: {problem}")
    cache.hold(entry.path)  # ttfg env prune in another process leaves it alone while this one measures
    _remember_name(entry.path, info, request.name)
    python = str(entry.path / "venv" / "bin" / "python")
    # A lock line from a folder or a file (``name @ file:///...``) is a local install: its bytes are read each time.
    local = _installed(python)[2] if any("file:" in line for line in lock) else {}
    return Environment(request.name, python, info["packages"], info["interpreter"], key, entry.path,
                       tuple(request.requirements or ()), request.origin, entry.cached, time.monotonic() - started,
                       local=local)


def _lock_versions(lines: list[str]) -> dict[str, str]:
    """``{name: version}`` of exact lock lines (``name==version``); other lines are ignored."""
    out = {}
    for line in lines:
        name, sep, version = line.partition("==")
        if sep:
            out[normalised(name.split("[")[0].strip())] = version.split(";")[0].strip()
    return out


def _missing(wanted: list[str], installed: dict[str, str]) -> list[str]:
    """The requirements ``installed`` (``{name: version}``) does not satisfy, each as written."""
    from packaging.requirements import InvalidRequirement, Requirement

    out = []
    for line in wanted:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if req.marker is not None and not req.marker.evaluate():
            continue
        version = installed.get(normalised(req.name))
        if version is None or (req.specifier and not req.specifier.contains(version.split("+")[0], prereleases=True)
                               and not req.specifier.contains(version, prereleases=True)):
            out.append(line)
    return out


def entry_problem(path: Path, lock: list[str]) -> tuple[dict, str | None]:
    """An entry's ``ttfg-env.json`` and why the entry cannot be used (None when it can): the record must
    read, and every locked package must be installed at its locked version."""
    record = path / "ttfg-env.json"
    try:
        info = json.loads(record.read_text())
        packages = info["packages"]
        info["interpreter"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return {}, f"{record.name} cannot be read ({type(exc).__name__})"
    if not isinstance(packages, dict):
        return {}, f"{record.name} holds no package list"
    if not (path / "venv" / "bin" / "python").exists():
        return info, "its interpreter is missing"
    locked = _lock_versions(lock)
    wrong = [f"{n}=={v}" for n, v in locked.items() if packages.get(n) not in (v, None) or n not in packages]
    if wrong:
        return info, f"{', '.join(wrong[:5])} {'is' if len(wrong) == 1 else 'are'} not installed as locked"
    return info, None


def _remember_name(path: Path, info: dict, name: str) -> None:
    """Add ``name`` to the entry's names: two requests for the same packages are one environment with two names."""
    names = list(info.get("names") or [info.get("name")])
    if name in names:
        return
    info["names"] = [*filter(None, names), name]
    record = path / "ttfg-env.json"
    tmp = record.with_name(f".{record.name}.{os.getpid()}")
    try:
        tmp.write_text(json.dumps(info, indent=1) + "\n")
        os.replace(tmp, record)
    except OSError:
        tmp.unlink(missing_ok=True)  # a read-only cache: the name is only not remembered


__all__ = ["CURRENT", "EnvError", "Environment", "Request", "build", "check_distinct", "current",
           "entry_problem", "parse", "probe_tools", "requirement_lines", "resolve", "resolver_message", "run_uv"]
