"""uv, as ttfg calls it: the one place its command line, its environment and its errors are made.

Why a module of its own: resolving a revision's declarations (``dependencies.py``) and building
an environment (``environments.py``) both run uv with the same local wheel folders, the same
environment and the same reading of its failures; in either module the other imported it back.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from .sources import LOG_TAIL_CHARS, uv_binary, uv_environ
from ..errors import TtfgError


class EnvError(TtfgError):
    """An environment cannot be resolved, built or used; the message says which and why."""


#: pip's configured find-links, by the settings that decide them (asked of pip once per setting).
_PIP_FIND_LINKS: dict[tuple, list[str]] = {}


def find_links() -> list[str]:
    """The local wheel folders pip is told about: ``PIP_FIND_LINKS`` and pip's own configuration
    (``pip config list``: a ``find-links`` in ``/etc/xdg/pip/pip.conf`` or the user's). uv gets them too.

    Why pip's configuration is read by pip: ttfg said "can install no torch release" while the local
    CPU wheel lay in the folder pip.conf names; pip knows where its configuration lives and how it is
    written, ttfg does not.
    """
    import shlex

    env = os.environ.get("PIP_FIND_LINKS", "")
    folders = [p for p in env.split() if p]
    key = (env, os.environ.get("PIP_CONFIG_FILE"), os.environ.get("HOME"))
    if key not in _PIP_FIND_LINKS:
        configured: list[str] = []
        try:
            out = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                                 timeout=60, stdin=subprocess.DEVNULL)
            for line in out.stdout.splitlines():
                name, eq, value = line.partition("=")
                if eq and name.strip().endswith(".find-links"):
                    configured += shlex.split(value.strip().strip("'\""))
        except (OSError, subprocess.TimeoutExpired, ValueError):
            configured = []  # no pip here: the environment variable alone
        _PIP_FIND_LINKS[key] = configured
    return list(dict.fromkeys(folders + [p for p in _PIP_FIND_LINKS[key] if p.startswith("/") or "://" not in p]))


def run_uv(args: list[str], what: str, timeout: float, cwd: Path | None = None) -> subprocess.CompletedProcess:
    cmd = [uv_binary(), *args]
    if args[0] == "pip":
        for folder in find_links():
            cmd += ["--find-links", folder]
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd, env=uv_environ(),
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise EnvError(f"{what}: uv took over {timeout:.0f} s") from None


def resolver_message(text: str) -> str:
    text = "\n".join(line for line in text.strip().splitlines() if line.strip())
    if re.search(r"git (clone|fetch|checkout)|Git operation failed|git\+|\.git\b", text, re.I):
        text = "a git requirement cannot be fetched (its repository, not the package registry): " + text
    elif re.search(r"dns error|failed to lookup|Connection refused|network|timed out|Failed to fetch", text, re.I):
        text = "no network (the package registry cannot be reached): " + text
    return text[-LOG_TAIL_CHARS:]


__all__ = ["EnvError", "find_links", "resolver_message", "run_uv"]
