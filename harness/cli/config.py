"""The project's config applied to the command line, once, for every command; and ``ttfg config``.

Why here and only here: if each command read ``[tool.ttfg]`` itself, every command module
would grow the same config code and they would drift. Instead ``main`` parses the flags,
then :func:`apply` fills each option the user did not type from the config file, and a
command sees one ``args`` whatever their origin. To tell "not typed" from "typed the
default", :func:`mark_defaults` wraps the defaults of config-backed options in
:class:`Default` before parsing (``set_defaults``, argparse's public way); what is still
wrapped afterwards was not on the command line. A config-backed option's default is
therefore its value already (a :class:`~ttfg.fmt.Duration`, not a text for its ``type`` to
parse): argparse passes a default through ``type`` only when it is a string, and a wrapped
one is not.

The mapping from config keys to options is :data:`TARGETS`; ``ttfg config`` prints every
key's effective value and where it came from (``default``, ``FILE:tool.ttfg.KEY``,
``flag --X``).
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ..errors import UsageError
from ..project import config as project_config

#: Which option of which command each config key sets: ``{key: {command: dest}}``.
SELECTING = ("check", "run", "gate", "bisect", "shards", "releases", "doctor", "config")
TARGETS: dict[str, dict[str, str]] = {
    "models": {c: "model" for c in SELECTING},
    "backends": {c: "backend" for c in SELECTING},
    "variants": {c: "variant" for c in SELECTING},
    "budget": {"gate": "budget", "bisect": "budget", "regressions": "budget", "config": "budget"},
    "min-effect": {"gate": "min_effect", "bisect": "min_effect", "compare": "min_effect", "releases": "min_effect",
                   "config": "min_effect"},
    "cache": {"gate": "cache"},
    "output": {"run": "out", "gate": "out_dir", "study": "out", "regressions": "confirm_dir", "bisect": "out_dir",
               "releases": "out_dir", "report": "out", "config": "output"},
    "commit-url": {"report": "commit_url", "gate": "commit_url", "config": "commit_url"},
    "strict-counters": {"gate": "strict_counters"},
    "off-path": {"gate": "off_path"},
    "functions": {},  # no option: declared to the function registry by apply(), shown by ``ttfg config``
}
#: The flag that sets each dest, for "where it came from".
FLAGS = {"model": "--model", "backend": "--backend", "variant": "--variant", "budget": "--budget",
         "min_effect": "--min-effect", "out": "--out", "out_dir": "--out-dir", "confirm_dir": "--confirm-dir",
         "commit_url": "--commit-url", "output": "--output", "cache": "--cache",
         "strict_counters": "--strict-counters", "off_path": "--off-path"}


class Default:
    """An option's default, wrapped so that :func:`apply` can tell it was not typed."""

    def __init__(self, value: Any):
        self.value = value

    def __repr__(self) -> str:  # argparse's %(default)s
        return repr(self.value)


def mark_defaults(commands: Mapping[str, argparse.ArgumentParser]) -> None:
    """Wrap the defaults of every config-backed option, so that typed values can be told apart. ``commands``:
    ``{name: parser}``, the ``choices`` of the action ``add_subparsers`` returned (``build_parser`` keeps it).

    A None default is left as it is: a typed value is never None, so None already says "not typed"
    (and an append option's None must stay a None to append to)."""
    for targets in TARGETS.values():
        for command, dest in targets.items():
            sub = commands.get(command)
            default = sub.get_default(dest) if sub is not None else None
            if default is not None and not isinstance(default, Default):
                sub.set_defaults(**{dest: Default(default)})


@dataclass
class Setting:
    """One key's effective value and its origin, as ``ttfg config`` prints it."""

    key: str
    value: Any
    source: str


def _start(args) -> Path:
    """Where the config search starts: the gate's or regressions' ``--repo`` when typed, else here."""
    repo = getattr(args, "repo", None)
    if repo is not None and str(repo) != ".":
        return Path(repo)
    return Path(".")


def _unwrap(args) -> set[str]:
    """Replace every :class:`Default` in ``args`` by its value; returns the dests that were typed (a None was not)."""
    typed = set()
    for dest, value in list(vars(args).items()):
        if isinstance(value, Default):
            setattr(args, dest, value.value)
        elif value is not None:
            typed.add(dest)
    return typed


def _run_file(folder: Path) -> Path:
    """``runs/run-YYYYmmdd-HHMMSS.json``, never an existing file."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = folder / f"run-{stamp}.json"
    n = 2
    while path.exists():
        path = folder / f"run-{stamp}-{n}.json"
        n += 1
    return path


def _from_config(key: str, command: str, dest: str, value: Any, args, cfg) -> Any:
    """The config's value in the form the command's option takes."""
    if key in ("models", "backends", "variants"):
        return list(value)
    if key == "min-effect":
        from . import options

        number = options.min_effect(str(value))
        return [str(value)] if command == "compare" else number
    return value


def _output_value(command: str, args, folder: Path):
    if command == "run":
        return str(_run_file(folder))
    if command == "gate":
        return str(folder / "gate")
    if command == "study":
        return str(folder / f"study-{args.study}.json")
    if command == "regressions":
        return str(folder / "confirm")
    if command in ("bisect", "releases"):
        return str(folder / command)
    if command == "report":
        return str(folder / "report.html")
    return str(folder)


def apply(args) -> list[Setting]:
    """Fill every option the user did not type from the project's config; returns the effective settings.

    Raises
    ------
    ConfigError
        For a broken config file (its name and the key are in the message), or a config
        whose selection names nothing that exists.
    """
    command = getattr(args, "command", None)
    typed = _unwrap(args)
    args.typed = typed
    cfg = project_config.load(_start(args), getattr(args, "ttfg_config", None))
    args.project_config = cfg
    from ..app.selection import declare_functions

    declare_functions(cfg)
    settings = []
    from_file = set()
    for key in project_config.KEYS:  # every key, one a command takes as an option or not (install-path)
        dest = TARGETS.get(key, {}).get(command)
        if dest is None:
            if key in cfg:
                settings.append(Setting(key, cfg.get(key), cfg.where(key)))
            continue
        if dest in typed and getattr(args, dest) is not None:
            settings.append(Setting(key, getattr(args, dest), f"flag {FLAGS.get(dest, dest)}"))
            continue
        if key == "output":
            problem = cfg.output_problem()
            if problem:
                raise project_config.ConfigError(f"{cfg.where(key)}: {problem}")
            folder = cfg.output()
            source = cfg.where(key) if key in cfg else "default"
            if command == "run" or key in cfg or command == "config":
                setattr(args, dest, _output_value(command, args, folder))
            settings.append(Setting(key, getattr(args, dest), source))
            continue
        if key in cfg:
            setattr(args, dest, _from_config(key, command, dest, cfg.get(key), args, cfg))
            from_file.add(key)
            settings.append(Setting(key, cfg.get(key), cfg.where(key)))
        else:
            settings.append(Setting(key, getattr(args, dest), "default"))
    if (command == "gate" or getattr(args, "confirm", False)) and str(getattr(args, "repo", ".")) != ".":
        from ..app.workspace import check_repo_has_plugin

        check_repo_has_plugin(Path(args.repo), cfg.project_folder())
    if command in SELECTING and from_file & {"models", "backends", "variants"}:
        _check_selection(args, cfg, from_file)
    if command == "asv" and getattr(args, "asv_command", None) == "record":
        _asv_selection(cfg)
    return settings


def _check_selection(args, cfg, from_file: set[str]) -> None:
    """A config whose selection names nothing that exists, or selects no case, is refused naming the file."""
    from ..app.selection import cases_for

    keys = sorted(from_file & {"models", "backends", "variants"})
    where = ", ".join(cfg.where(k) for k in keys)
    try:
        # The gate, bisect and regressions --confirm resolve a model they do not know here from the revisions'
        # installs (a head that adds one).
        cases, skipped = cases_for(args.model or [getattr(args, "default_model", "all")], args.backend, args.variant,
                                   pending_models=getattr(args, "command", None) in ("gate", "bisect", "regressions"))
    except UsageError as exc:
        raise project_config.ConfigError(f"{where}: {exc}") from None
    if not cases and not skipped:
        raise project_config.ConfigError(f"{where}: selects nothing (no model x backend x variant case)")


def project_dir(args, repo: Path) -> str | None:
    """``app.workspace.project_dir`` for the config the command line read (``args.project_config``)."""
    from ..app.workspace import project_dir as configured_folder

    return configured_folder(getattr(args, "project_config", None), repo)


def project_folder(args) -> Path | None:
    """``app.workspace.project_folder`` for the config the command line read (``args.project_config``)."""
    from ..app.workspace import project_folder as configured_project

    return configured_project(getattr(args, "project_config", None))


def _asv_selection(cfg) -> None:
    """``ttfg asv record``: the config's selection reaches the asv suite as ``TTFG_ASV_*`` (a set variable wins)."""
    for key, var, sep in (("models", "TTFG_ASV_MODELS", ","), ("backends", "TTFG_ASV_BACKENDS", ","),
                          ("variants", "TTFG_ASV_VARIANTS", ";")):
        if key in cfg and not os.environ.get(var, "").strip():
            os.environ[var] = sep.join(cfg.get(key))


def _shown(value: Any) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, list):
        return ", ".join(map(str, value))
    if isinstance(value, dict):  # a table ([functions]): its entries as the file writes them
        return ", ".join(f"{k} = {v}" for k, v in value.items())
    return str(value)


def cmd_config(args) -> int:
    """Print the effective settings, each with its origin."""
    from ..present.terminal import console as make_console, fitted

    cfg = args.project_config
    problem = cfg.install_path_problem()
    if problem:
        raise project_config.ConfigError(f"{cfg.where('install-path')}: {problem}")
    console = make_console()
    if cfg.path is not None:
        console.print(f"config: {cfg.path} ({cfg.section or 'top level'})", highlight=False, markup=False)
    else:
        start, top = cfg.searched
        console.print(f"config: none found (looked for ttfg.toml, or pyproject.toml with [tool.ttfg], from {start} "
                      f"up to {top}); every setting is ttfg's default. `ttfg init` writes one.", highlight=False,
                      markup=False)
    table = fitted("effective settings (a flag wins over the file, the file over the default)",
                   [("key", "left"), ("value", "left"), ("from", "left")], boxed=True)
    by_key = {s.key: s for s in args.settings}
    for key, info in project_config.KEYS.items():
        s = by_key.get(key)
        if s is None or s.source == "default":
            value = _shown(s.value) if s is not None and s.value is not None else info.default
            table.add_row(key, value, "default")
        else:
            table.add_row(key, _shown(s.value), s.source)
    console.print(table)
    if cfg.selects() or any(getattr(args, d) for d in ("model", "backend", "variant")):
        from ..app.selection import cases_for

        cases, skipped = cases_for(args.model or ["resnet15"], args.backend, args.variant)
        console.print(f"the selection gives {len(cases)} case(s) to measure here, {len(skipped)} skipped"
                      + (f": {', '.join(c.id for c in cases[:6])}" + (" ..." if len(cases) > 6 else "")
                         if cases else ""), highlight=False)
    return 0


def add_config_commands(sub) -> None:
    """Register ``config`` on the ``ttfg`` subparsers."""
    from . import options
    from .common_args import add_selection

    p = sub.add_parser("config", help="print the effective settings and where each comes from",
                       description="Print every setting of [tool.ttfg] (pyproject.toml) or ttfg.toml as the "
                                   "commands here would use it, and where each value comes from: a flag, the file "
                                   "and key, or ttfg's default. The flags below show how they would override the "
                                   "file. Exit 2 when the config file is broken (the file and key are named).")
    add_selection(p, default_model="resnet15")
    p.add_argument("--budget", type=options.duration("--budget"), metavar="DURATION", help="as ttfg gate --budget")
    p.add_argument("--min-effect", type=options.min_effect, metavar="FRACTION", help="as ttfg gate --min-effect")
    p.add_argument("--output", metavar="DIR", help="the results folder")
    p.add_argument("--commit-url", metavar="TEMPLATE", help="as ttfg report --commit-url")
    p.set_defaults(func=cmd_config)


__all__ = ["Default", "Setting", "TARGETS", "add_config_commands", "apply", "cmd_config", "mark_defaults",
           "project_dir"]
