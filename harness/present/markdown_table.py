"""Markdown primitives every summary builds on: a table, its escaped cells, a verdict word.

Why a module of its own: the compare, expectations, gate, shard and attribution summaries
all write GitHub-flavoured Markdown tables; one cell escape (a ``|`` or a line break in a
case name must not break the table) and one way of marking a finding in bold, here,
below all of them. Escaping of untrusted text itself (``md``, ``md_code``) is
``untrusted.py``'s.
"""

from __future__ import annotations


def cell(text) -> str:
    """A table cell's text: ``|`` escaped, line breaks as spaces."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def table(header: list[str], rows: list[list]) -> list[str]:
    """A Markdown table's lines: the header, its rule, one line per row (cells escaped)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return lines


def verdict(word: str, label: str | None = None) -> str:
    """A verdict word (or ``label``, what it rests on), in bold when it is a finding (regressed, improved)."""
    text = label or word
    return f"**{text}**" if word in ("regressed", "improved") else text


__all__ = ["cell", "table", "verdict"]
