"""Whether a pull request changed the code at all: the head's Python is the base's, comments and layout aside.

Why: a comment-only pull request of a small jax library cost 92-310 s to gate, most of it one callgrind count of
the head (114-127 s of CPU on a 2-core runner) that can only find what is not there. When every file the pull
request changed is a Python file whose syntax tree (``ast.dump`` without positions) is the base's, and both sides
run in one environment, the interpreter runs the same program on both sides: comments, blank lines, line breaks
inside brackets and the spacing between tokens are not in the tree. That is a proof read from the two trees, not
a count, so no margin or repeat applies to it; the source tier (``tier_source.py``) still runs one process a side,
which must give a first gradient with equal structural counters, so a gate never passes on the proof alone.

What the tree keeps, and so breaks the proof (the gate then measures as usual): any other file (``README.md``,
``pyproject.toml``, a lock, a C source, a submodule), an added, deleted or renamed file, a docstring (it is
``__doc__`` at run time), a string or number, an import, a decorator, a name, a syntax error on either side.
A type comment (``# type: (Tensor) -> Tensor``) is a comment to ``ast`` but code to TorchScript, which reads it
from the source: each file's type comments are compared as well (:func:`_type_comments`), ``# type: ignore`` aside.
What it cannot see: a program that reads its own source text or line numbers (``inspect.getsource``, a
traceback parsed at run time); for such a program leave this tier out (``--tiers structural,instructions,time``).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterable

if TYPE_CHECKING:
    from ..provision.source_diff import Change

#: The suffixes of the files whose syntax tree is compared (anything else changed breaks the proof).
PYTHON_SUFFIXES = (".py",)
#: A proof is refused past this many changed files: a pull request of that size is not comment-only in practice,
#: and reading each file's two versions would cost more than it saves.
MAX_FILES = 200


@dataclass(frozen=True)
class SourceProof:
    """The verdict of :func:`prove`: ``proven`` (the head runs the base's program) or why not."""

    proven: bool
    #: Why the code cannot be called the same (the first reason found), or what was proven.
    why: str
    #: The changed files that were compared (all of them when proven).
    files: tuple[str, ...] = field(default_factory=tuple)

    def to_json(self) -> dict:
        return {"proven": self.proven, "why": self.why, "files": list(self.files)}


#: A type comment that is read as code (TorchScript's signatures and annotations); ``# type: ignore`` only silences a
#: type checker.
_TYPE_COMMENT = re.compile(r"#\s*type:(?!\s*ignore\b)")


def _type_comments(data: bytes) -> list[str]:
    """A file's type comments, in order, as written (tokenized: a ``# type:`` inside a string is no comment)."""
    tokens = tokenize.tokenize(io.BytesIO(data).readline)
    return [t.string.strip() for t in tokens if t.type == tokenize.COMMENT and _TYPE_COMMENT.match(t.string)]


def _tree(data: bytes, path: str) -> tuple[str, list[str]]:
    """The syntax tree of a Python file's bytes, without positions (the encoding cookie is honoured by ``ast``), and
    its type comments."""
    return ast.dump(ast.parse(data, filename=path), include_attributes=False), _type_comments(data)


def _short(files: Iterable[str], limit: int = 5) -> str:
    files = list(files)
    shown = ", ".join(files[:limit])
    return shown + (f" and {len(files) - limit} more" if len(files) > limit else "")


def prove(changes: "list[Change]", read: Callable[[str, str], bytes], same_environment: bool = True) -> SourceProof:
    """Whether ``changes`` leave the program as it was.

    Parameters
    ----------
    changes : list of Change
        Every path that differs between the base and the head (``provision.source_diff.changes``).
    read : callable
        ``(role, path) -> bytes``: the file's content on the ``"base"`` or ``"head"`` side.
    same_environment : bool
        Both sides run with the same packages; else the program differs whatever the files say.
    """
    from ..provision.source_diff import FILE_MODES

    if not same_environment:
        return SourceProof(False, "the sides run in different environments (their packages differ)")
    if not changes:
        return SourceProof(False, "no file differs between the sides")
    if len(changes) > MAX_FILES:
        return SourceProof(False, f"{len(changes)} files changed (the source tier compares at most {MAX_FILES})")
    for c in changes:
        if c.status != "M":
            word = {"A": "added", "D": "deleted", "T": "changed type", "U": "unmerged"}.get(c.status, "changed")
            return SourceProof(False, f"{c.path} is {word}")
        if not c.path.endswith(PYTHON_SUFFIXES):
            return SourceProof(False, f"{c.path} changed and is not a Python file")
        if c.base_mode not in FILE_MODES or c.head_mode not in FILE_MODES:
            return SourceProof(False, f"{c.path} is not a plain file on both sides (modes {c.base_mode}, "
                                      f"{c.head_mode})")
    for c in changes:
        try:
            trees = [_tree(read(role, c.path), c.path) for role in ("base", "head")]
        except (SyntaxError, ValueError, RecursionError, tokenize.TokenError) as exc:
            return SourceProof(False, f"{c.path} does not parse on both sides ({type(exc).__name__}: {exc})")
        if trees[0][0] != trees[1][0]:
            return SourceProof(False, f"{c.path}'s code changed (its syntax tree differs, not only its comments "
                                      "and layout)")
        if trees[0][1] != trees[1][1]:
            return SourceProof(False, f"{c.path}'s type comments changed (TorchScript reads them as code)")
    files = tuple(c.path for c in changes)
    return SourceProof(True, f"the changed files differ in comments and layout only (equal syntax trees: "
                             f"{_short(files)}), in one environment", files)


def between(repo, base: str, head: str, same_environment: bool) -> SourceProof:
    """:func:`prove` for two commits of ``repo``, read by git (``provision/source_diff.py``); a git failure is no
    proof, said."""
    from ..provision import source_diff
    from ..provision.worktrees import GitError

    commits = {"base": base, "head": head}
    try:
        found = source_diff.changes(repo, base, head)
        return prove(found, lambda role, path: source_diff.content(repo, commits[role], path), same_environment)
    except GitError as exc:
        return SourceProof(False, f"git could not compare the sides ({exc})")


__all__ = ["MAX_FILES", "SourceProof", "between", "prove"]
