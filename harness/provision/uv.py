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


#: uv's words when a request did not get an answer (it names the URL it asked).
NO_ANSWER = re.compile(r"dns error|failed to lookup|Connection refused|error sending request|tcp connect|timed out|"
                       r"Failed to fetch", re.I)
URL = re.compile(r"https?://[^\s`'\")]+")
#: How long a host is given to accept a connection before it is said not to answer.
ANSWER_TIMEOUT_S = 5.0


def answers(url: str, timeout: float = ANSWER_TIMEOUT_S) -> bool:
    """Whether the host of ``url`` accepts a TCP connection (its name resolves, its port is open)."""
    import socket
    from urllib.parse import urlparse

    parsed = urlparse(url)
    if not parsed.hostname:
        return False
    try:
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
        with socket.create_connection((parsed.hostname, port), timeout=timeout):
            return True
    except (OSError, ValueError):
        return False


def resolver_message(text: str) -> str:
    """uv's own error, quoted first, then what ttfg found out about it.

    Why this order, and why ask the host: every network error used to be blamed on the registry
    ("no network (the package registry cannot be reached): ..."), a 404 from an index that exists
    included, before uv's words. Now the registry is said to be unreachable only when the host uv
    names does not accept a connection; a host that answers is said to answer, so that uv's message
    (a 404, a missing version) is read as the cause.
    """
    text = "\n".join(line for line in text.strip().splitlines() if line.strip())
    hint = ""
    if re.search(r"git (clone|fetch|checkout)|Git operation failed|git\+|\.git\b", text, re.I):
        hint = "(a git requirement cannot be fetched: its repository, not the package registry)"
    elif NO_ANSWER.search(text) and (found := URL.search(text)):
        url = found.group(0).rstrip(".,:;")
        host = url.split("/")[2]
        hint = (f"({host} answers: what uv says above is the cause)" if answers(url) else
                f"({host} does not answer: the package registry cannot be reached)")
    room = LOG_TAIL_CHARS - len(hint) - 5
    quoted = text if len(text) <= room else text[:room] + " ..."
    return quoted + (f"\n{hint}" if hint else "")


__all__ = ["EnvError", "answers", "find_links", "resolver_message", "run_uv"]
