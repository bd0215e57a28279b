"""``bad_inputs.py``'s rows for ``ttfg explain --format pprof|speedscope --output DIR`` (issue 41 item 4).

Each row is a real ``ttfg`` process on the table's gate folder (``m["artifact"]``: a gate whose results files
hold timings only, no call counts, source lines or function lists):

- ``profile 1``: an unknown ``--format`` is refused by the parser, naming the choices;
- ``profile 2``: a profile format without ``--output`` is refused (it writes files, never stdout);
- ``profile 3``: ``--output`` that is a file is refused, the file left as it was;
- ``profile 4``: ``--output`` on a read-only file system is refused before anything is explained;
- ``profile 5``: a gate with nothing below its phases has nothing to write: refused, the folder not made;
- ``profile 6``: the gate's ``--commit-url`` (summary.md's links to your code's lines) without ``{sha}`` is refused
  before anything is measured, its ``--out-dir`` not made;
- ``profile 7``: explain's ``--internals`` (the interpreter's own functions kept in the tables) is a flag: a value
  given to it is refused by the parser.
"""

from __future__ import annotations

from pathlib import Path


def rows(d: Path, m: dict, out) -> list:
    """The rows (``bad_inputs.Row``)."""
    from bad_inputs import Row, _all, _contains

    folder = d / "profile"
    folder.mkdir(parents=True, exist_ok=True)
    a_file = folder / "a_file"
    a_file.write_text("kept\n")
    gate = str(m["artifact"])

    def untouched(proc) -> str | None:
        return None if a_file.read_text() == "kept\n" else "the file given as --output was replaced"

    def not_made(path: Path):
        return lambda proc: None if not path.exists() else f"{path} was made"

    return [
        Row("profile 1: explain --format flame (unknown)", ["explain", gate, "--format", "flame"],
            check=_contains("invalid choice: 'flame'")),
        Row("profile 2: explain --format pprof without --output", ["explain", gate, "--format", "pprof"],
            check=_contains("give --output DIR")),
        Row("profile 3: explain --format speedscope --output a file",
            ["explain", gate, "--format", "speedscope", "--output", str(a_file)],
            check=_all(_contains("is a file, not a folder"), untouched)),
        # /proc: read-only for every user, root included (a chmod'ed folder is writable to root).
        Row("profile 4: explain --format pprof --output on a read-only file system",
            ["explain", gate, "--format", "pprof", "--output", "/proc/ttfg-profiles"],
            check=_all(_contains("is not writable"), not_made(Path("/proc/ttfg-profiles")))),
        Row("profile 5: explain --format pprof of a gate without call counts or source lines",
            ["explain", gate, "--format", "pprof", "--output", str(folder / "empty")],
            check=_all(_contains("nothing to write as pprof"), not_made(folder / "empty"))),
        Row("profile 6: gate --commit-url without {sha}",
            ["gate", "--base", "HEAD", "--commit-url", "https://example.com/o/r/commit/", "--out-dir",
             str(folder / "gate")],
            check=_all(_contains("expected an http(s) URL with {sha}"), not_made(folder / "gate"))),
        Row("profile 7: explain --internals=yes (a flag)", ["explain", gate, "--internals=yes"],
            check=_contains("ignored explicit argument 'yes'")),
    ]
