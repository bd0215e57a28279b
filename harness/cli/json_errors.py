"""``--format json`` keeps its promise on errors too: one strict JSON document on stdout.

Why: a script that runs ``ttfg compare A B --format json | jq`` reads stdout. On bad
input (exit 2) ttfg printed its one-line error on stderr and nothing on stdout, so the
script saw an empty document instead of an error. Now, when ``--format json`` was
asked for and the command ends with exit 2 without having written its document, stdout
gets::

    {"format": "ttfg-error", "version": 1, "command": "ttfg compare", "exit_code": 2,
     "error": "ttfg compare: error: a.json: cannot read: No such file or directory"}

``error`` is the last line the command wrote on stderr (its one-line message: the one
a person reads), whatever produced it: a refused option (argparse), a bad file, an
interruption, an internal error, or a command that returned 2 after its own message.
Nothing is added when the command wrote anything on stdout (its document).
"""

from __future__ import annotations

import json
import sys

__all__ = ["Watch", "error_document", "requested"]

FORMAT, VERSION = "ttfg-error", 1


def requested(argv: list[str]) -> bool:
    """Whether ``argv`` asks for ``--format json`` (``--format json`` or ``--format=json``)."""
    return any(a == "--format=json" or (a == "--format" and i + 1 < len(argv) and argv[i + 1] == "json")
               for i, a in enumerate(argv))


def error_document(command: str, message: str) -> str:
    """The error document (strict JSON, one line) for ``command`` and its message."""
    return json.dumps({"format": FORMAT, "version": VERSION, "command": command, "exit_code": 2,
                       "error": message}, allow_nan=False) + "\n"


class _Tee:
    """A stream that passes everything on and remembers what it saw (written at all; the last line)."""

    def __init__(self, stream):
        self._stream = stream
        self.written = False
        self.last_line = ""

    def write(self, text: str) -> int:
        if text:
            self.written = True
            lines = [line.strip() for line in text.splitlines() if line.strip()]
            if lines:
                self.last_line = lines[-1]
        return self._stream.write(text)

    def __getattr__(self, name):  # flush, isatty, fileno, encoding ... of the real stream
        return getattr(self._stream, name)


class Watch:
    """Watches stdout and stderr during a command; :meth:`finish` adds the error document when due."""

    def __init__(self, active: bool, command: str):
        self.active, self.command = active, command
        self._saved = None

    def __enter__(self) -> "Watch":
        if self.active:
            self._saved = sys.stdout, sys.stderr
            sys.stdout, sys.stderr = _Tee(sys.stdout), _Tee(sys.stderr)
        return self

    def __exit__(self, *exc) -> None:
        if self._saved is not None:
            self.out, self.err = sys.stdout, sys.stderr
            sys.stdout, sys.stderr = self._saved
            self._saved = None

    def finish(self, code: int) -> int:
        if self.active and code == 2 and not self.out.written:
            sys.stdout.write(error_document(self.command, self.err.last_line or f"{self.command}: exit 2"))
            sys.stdout.flush()
        return code
