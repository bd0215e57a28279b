"""``[tool.ttfg]``: the project's own defaults, read once and checked with the file and key named.

Why a file: every default used to be a flag or a ``TTFG_ASV_*`` variable, so a project's
selection lived in its CI scripts, three times over (gate, trend, asv), and ``ttfg run``
saved nothing without ``--out``. pytest-benchmark reads ``[tool.pytest]``, ruff
``[tool.ruff]``, asv its ``asv.conf.json``: one section in the project's own
``pyproject.toml`` (or a ``ttfg.toml`` beside it, whose keys are top level) is where a
maintainer looks.

Precedence, for every setting: a flag on the command line, else the file, else ttfg's
default. ``ttfg config`` prints each setting's value and where it came from.

Where the file is found: the nearest ``ttfg.toml``, or ``pyproject.toml`` with a
``[tool.ttfg]`` table, from the starting folder up to the root of its git repository
(never above it: a stray file in a parent folder is not this project's). A
``pyproject.toml`` without the table is passed over, as ruff does. ``--config FILE``
names one explicitly.

Bad input is refused before any work, naming the file and the key: a key ttfg does not
know (a typo would otherwise be a silently ignored setting), a value of the wrong type
(with the type expected), a value the option itself refuses (``budget = "ten"``), and a
selection that selects nothing (``models = []``).
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..errors import UsageError

#: The file names searched, nearest first; in ``ttfg.toml`` the keys are top level.
FILE_NAMES = ("ttfg.toml", "pyproject.toml")
#: ``ttfg run`` writes here when there is no ``--out`` and no ``output`` key.
DEFAULT_OUTPUT = "runs"


class ConfigError(UsageError):
    """The config file is broken: the message names the file and the key."""


@dataclass(frozen=True)
class Key:
    """One setting of ``[tool.ttfg]``: its TOML type, what it sets, and its default."""

    name: str
    #: ``strings`` (a list of non-empty strings), ``string``, ``number-or-string``, ``bool``, ``table``.
    kind: str
    help: str
    #: The default as ``ttfg config`` shows it (commands keep their own defaults).
    default: str
    #: Extra check of the value; returns an error text or None.
    check: Callable[[Any], str | None] | None = None
    #: The value's type, for a key commands read as more than the file's text: the file's value -> what the
    #: command takes (a budget's :class:`~ttfg.fmt.Duration`); a UsageError's text is the reason it is refused.
    parse: Callable[[Any], Any] | None = None


def _duration(value):
    """A duration key's value (``budget = "10m"`` or ``600``), parsed once here, as ``--budget`` is by argparse."""
    from ..fmt import Duration

    return Duration.parse(str(value), what="")


def _relative(value) -> str | None:
    path = Path(value.strip())
    if path.is_absolute():
        return "expected a folder relative to the config's folder, such as 'python', not an absolute path"
    return None


def _url(value) -> str | None:
    if not value.startswith(("https://", "http://")) or "{sha}" not in value:
        return "expected an http(s) URL with {sha}, e.g. 'https://github.com/OWNER/REPO/commit/{sha}'"
    return None


def _min_effect(value) -> str | None:
    text = str(value).strip()
    try:
        number = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        return f"expected a fraction such as 0.05 or '5%', got {value!r}"
    if not 0 < number <= 10:
        return f"expected a fraction in (0, 10], got {value!r}"
    return None


def _requirement(value) -> str | None:
    from .ttfg_source import NoSource, with_extra

    try:
        with_extra(value)
    except NoSource as exc:
        return str(exc).split(": ", 1)[-1]
    return None


def _strict_counters(value) -> str | None:
    from ..decide.tiers import strict_counters

    try:
        strict_counters(list(value))
    except UsageError as exc:
        return str(exc).replace("--strict-counters ", "", 1)
    return None


def _functions(value) -> str | None:
    for name, target in value.items():
        if not re.fullmatch(r"[A-Za-z0-9_.\-]+", name):
            return f"{name!r} is not a case name (letters, digits, _ . -)"
        module, colon, attr = target.partition(":") if isinstance(target, str) else ("", "", "")
        if not (colon and module.strip() and attr.strip()):
            return f"{name} = {target!r}: expected \"module:callable\""
    return None


KEYS: dict[str, Key] = {k.name: k for k in (
    Key("models", "strings", "models to measure (NAME or NAME:k=v), as --model", "resnet15 (run, gate, shards), "
        "all (check)"),
    Key("backends", "strings", "backends to measure, as --backend", "all (check, run, shards), jax.jit (gate)"),
    Key("variants", "strings", "variant selections (default, all, axis=value), as --variant", "default"),
    Key("budget", "number-or-string", "wall-clock budget of the gate's timing pairs and of `regressions --confirm` "
        "(seconds, or 90s, 10m, 1h)", "10m", parse=_duration),
    Key("min-effect", "number-or-string", "smallest relative effect a timing verdict counts (0.05 or '5%'), "
        "as --min-effect of gate and compare", "the metric's (0.05)", _min_effect),
    Key("cache", "string", "the gate's compile caches, as --cache: cold, warm (persistent caches populated by each "
        "side's revision) or both", "cold", lambda v: None if v in ("cold", "warm", "both")
        else f"expected cold, warm or both, got {v!r}"),
    Key("output", "string", "folder for results: ttfg run's files, the gate's gate/, studies, confirmations, "
        "bisect/, releases/ and report.html", DEFAULT_OUTPUT),
    Key("install-path", "string", "the folder of the Python project that the gate, `regressions --confirm` and "
        "`asv record` install at each revision, relative to the config's folder (a project in a subfolder of "
        "its repository)", "the config's folder; with no config, the repository's root", _relative),
    Key("commit-url", "string", "link commits in reports, and the gate summary's file:line of your code to the head's "
        "line: an http(s) URL with {sha}", "show_commit_url of "
        "asv.conf.json, else none", _url),
    Key("ttfg-requirement", "string", "the pip requirement CI installs ttfg with (`ttfg init` writes it into the "
        "workflows and asv.conf.json), e.g. 'ttfg @ git+https://github.com/OWNER/ttfg@COMMIT'",
        "where the running ttfg was installed from", _requirement),
    Key("functions", "table", "a library's own functions measured as cases, name = \"module:case\" (case() returns "
        "(fn, args)); each is the case NAME/function/default", "none", _functions),
    Key("strict-counters", "strings", "structural counters a change of any size fails the gate on, as "
        "--strict-counters (['none'] for none); any other counter that grew by less than the minimum effect is "
        "evidence, not a verdict", "backend_compiles, graphs, graph_breaks, recompiles", _strict_counters),
    Key("off-path", "string", "when none of the change's code files ran on the measured path, as the gate's "
        "--off-path: pass (the verdict stands, every output says so) or fail (exit 2)", "pass",
        lambda v: None if v in ("pass", "fail") else f"expected pass or fail, got {v!r}"),
)}

_TYPE_WORDS = {"strings": "a list of strings", "string": "a string", "number-or-string": "a number or a string",
               "bool": "true or false", "table": "a table"}


def _toml_type(value) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list",
            dict: "a table"}.get(type(value), type(value).__name__)


@dataclass
class Config:
    """The project's settings as the file gives them (only the keys it sets)."""

    #: The file, or None when no config was found (every setting is then ttfg's default).
    path: Path | None = None
    #: ``pyproject.toml``'s ``tool.ttfg`` or ``ttfg.toml``'s top level.
    section: str = ""
    values: dict[str, Any] = field(default_factory=dict)
    #: The keys with a type (``Key.parse``), as commands take them: ``{"budget": Duration(600.0, "10m")}``.
    typed: dict[str, Any] = field(default_factory=dict)
    #: Where the search started and stopped, for ``ttfg config`` when nothing was found.
    searched: tuple[Path, Path] | None = None

    def where(self, key: str) -> str:
        """``pyproject.toml:tool.ttfg.models``: the file and key a value came from."""
        return f"{self.path}:{self.section + '.' if self.section else ''}{key}"

    def get(self, key: str, default=None):
        """The key's value as commands take it: its type's (``Key.parse``), else the file's."""
        return self.typed[key] if key in self.typed else self.values.get(key, default)

    def __contains__(self, key: str) -> bool:
        return key in self.values

    @property
    def root(self) -> Path | None:
        """The folder holding the config: the project's root, where its relative paths start."""
        return self.path.parent if self.path else None

    def output(self) -> Path:
        """The results folder, relative paths taken from the config's folder."""
        out = Path(self.values.get("output", DEFAULT_OUTPUT))
        return out if out.is_absolute() or self.root is None else self.root / out

    def project_folder(self) -> Path | None:
        """The folder of the project each revision installs (``install-path``, else the config's own
        folder); None without a config (the repository's root is then the project's)."""
        if self.root is None:
            return None
        return (self.root / self.values.get("install-path", ".").strip()).resolve()

    def install_path_problem(self) -> str | None:
        """What is wrong with the folder ``install-path`` names, or None: outside the git repository, missing,
        a file, or a folder without a Python project."""
        if self.root is None or "install-path" not in self.values:
            return None
        folder = self.project_folder()
        top = _git_top(self.root.resolve())
        if top is not None and not folder.is_relative_to(top.resolve()):
            return f"{folder} is outside the git repository {top}; the project each revision installs must be inside it"
        if not folder.exists():
            return f"{folder} does not exist"
        if not folder.is_dir():
            return f"{folder} is a file, not a folder"
        if not any((folder / name).is_file() for name in ("pyproject.toml", "setup.py", "setup.cfg")):
            return f"{folder} holds no Python project (no pyproject.toml, setup.py or setup.cfg)"
        return None

    def output_problem(self) -> str | None:
        """What is wrong with the results folder ``output`` names, or None: it must not be a file."""
        if "output" not in self.values:
            return None
        out = self.output()
        return f"{out} is a file; output names the folder results are written to" if out.is_file() else None

    def selects(self) -> dict[str, list[str]]:
        """The selection keys the file sets: ``{"models": [...], ...}``."""
        return {k: list(self.values[k]) for k in ("models", "backends", "variants") if k in self.values}


def _validate(values: dict, path: Path, section: str) -> tuple[dict, dict]:
    """``(values, typed)``: the file's values, checked, and the typed keys' values (``Key.parse``)."""
    where = f"{path}: [{section}]" if section else f"{path}:"
    out, typed = {}, {}
    for key, value in values.items():
        info = KEYS.get(key)
        if info is None:
            near = _closest(key, KEYS)
            raise ConfigError(f"{where} unknown key {key!r}" + (f" (did you mean {near!r}?)" if near else "")
                              + f"; known keys: {', '.join(KEYS)}")
        expected = _TYPE_WORDS[info.kind]
        ok = {"strings": isinstance(value, list) and all(isinstance(v, str) and v.strip() for v in value),
              "string": isinstance(value, str) and bool(value.strip()),
              "number-or-string": isinstance(value, (int, float, str)) and not isinstance(value, bool),
              "bool": isinstance(value, bool),
              "table": isinstance(value, dict)}[info.kind]
        if not ok:
            got = _toml_type(value)
            if isinstance(value, list) and info.kind == "strings":
                got = "a list with an entry that is not a non-empty string"
            elif isinstance(value, str) and not value.strip():
                got = "an empty string"
            raise ConfigError(f"{where} {key}: expected {expected}, got {got} ({value!r})")
        if info.kind == "strings" and not value:
            raise ConfigError(f"{where} {key} = []: selects nothing; leave the key out for ttfg's default, or "
                              f"name at least one")
        if info.check is not None:
            problem = info.check(value)
            if problem:
                raise ConfigError(f"{where} {key} = {value!r}: {problem}")
        if info.parse is not None:
            try:
                typed[key] = info.parse(value)
            except UsageError as exc:
                raise ConfigError(f"{where} {key} = {value!r}: {exc}") from None
        out[key] = value
    return out, typed


def _closest(key: str, known) -> str | None:
    import difflib

    found = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
    return found[0] if found else None


def read(path: Path) -> Config:
    """Read and validate one config file (``ttfg.toml`` or a ``pyproject.toml`` with ``[tool.ttfg]``).

    Raises
    ------
    ConfigError
        For a file that cannot be read or parsed, an unknown key, a wrong type or a refused value.
    """
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the config: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    if path.name == "pyproject.toml":
        tool = data.get("tool", {})
        section = tool.get("ttfg") if isinstance(tool, dict) else None
        if section is None:
            raise ConfigError(f"{path}: has no [tool.ttfg] table")
        if not isinstance(section, dict):
            raise ConfigError(f"{path}: tool.ttfg: expected a table, got {_toml_type(section)}")
        return Config(path, "tool.ttfg", *_validate(section, path, "tool.ttfg"))
    return Config(path, "", *_validate(data, path, ""))


#: A line that means to open ``[tool.ttfg]`` (or a table under it), however malformed the rest of the file.
_TABLE_LINE = re.compile(r"^[ \t]*\[+[ \t]*[\"']?tool[\"']?[ \t]*\.[ \t]*[\"']?ttfg\b", re.M)


def _has_ttfg_table(pyproject: Path) -> bool:
    try:
        data = tomllib.loads(pyproject.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        # A pyproject.toml that does not parse but means to configure ttfg (``[tool.ttfg``,
        # ``[ tool.ttfg ]`` with a typo after it) is the config: read() then names the line
        # tomllib stopped at, instead of "none found" and every setting dropped.
        return bool(_TABLE_LINE.search(pyproject.read_text(errors="replace"))) if pyproject.is_file() else False
    return isinstance(data.get("tool"), dict) and "ttfg" in data["tool"]


def _git_top(start: Path) -> Path | None:
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return None


def find(start: str | os.PathLike = ".") -> Path | None:
    """The nearest config file from ``start`` up to its git repository's root (or ``start`` alone outside git)."""
    start = Path(start).resolve()
    top = _git_top(start) or start
    for folder in (start, *start.parents):
        found = [folder / name for name in FILE_NAMES
                 if (folder / name).is_file() and (name == "ttfg.toml" or _has_ttfg_table(folder / name))]
        if len(found) > 1:
            raise ConfigError(f"{folder}: both ttfg.toml and pyproject.toml's [tool.ttfg] configure ttfg; keep one "
                              "(or name it with --config FILE)")
        if found:
            return found[0]
        if folder == top:
            break
    return None


def load(start: str | os.PathLike = ".", explicit: str | os.PathLike | None = None) -> Config:
    """The config for a command run in ``start``: ``explicit`` when given, else the nearest one, else none."""
    if explicit is not None:
        return read(Path(explicit))
    found = find(start)
    if found is None:
        start = Path(start).resolve()
        return Config(searched=(start, _git_top(start) or start))
    return read(found)


__all__ = ["Config", "ConfigError", "DEFAULT_OUTPUT", "FILE_NAMES", "KEYS", "Key", "find", "load",
           "read"]
