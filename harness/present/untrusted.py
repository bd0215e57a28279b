"""Text that ttfg did not write, shown safely: in the terminal and in Markdown.

Commit subjects, paths, model names, error texts, and every text read from a file
another runner wrote (a shard's notes, a history's labels) come from outside ttfg;
a pull request controls some of them (its commit subjects, the exception its code
raises). Two places interpret text:

* **the terminal** (rich): with console markup on, ``[/red]`` in a commit subject made
  ``ttfg gate`` exit 2 before measuring, ``run --out 'r[/x].json'`` exited 2, ``merge
  results --out 'out[/x].json'`` wrote its file and then exited 2, and ``[link=...]``
  became a terminal hyperlink. So every console ttfg makes has markup off
  (``terminal.console``); styled output is built as ``rich.text.Text``
  (``Text.assemble(("failed", "red"), " ", error)``), whose plain parts are never parsed.
* **Markdown** (``summary.md``, posted as the pull-request comment): a head's exception
  reached it with Markdown links, raw HTML and comment openers intact, and a 2 MB
  exception made a 2 MB summary, over the comment size limit, so the old comment stayed.
  :func:`md` escapes what Markdown and HTML would interpret and clips to a bound,
  stating what was cut; :func:`md_code` shows text as an inline code span.
"""

from __future__ import annotations

import html
import os
import re

from ..results.format import clip

__all__ = ["MD_CHARS", "console_width", "md", "md_code", "plain"]

#: Untrusted text in a Markdown summary is clipped to this many characters (an error's first lines
#: say what failed; the results file keeps the sample's stderr tail).
MD_CHARS = 600
#: ``COLUMNS`` beyond this is not a terminal: the default width is used.
MAX_COLUMNS = 10_000

#: Characters that start Markdown constructs anywhere in a line (links, images, emphasis, code,
#: strikethrough); ``&``, ``<`` and ``>`` become HTML entities, so no tag or comment opens. A table
#: cell's ``|`` is escaped by the table writer (``markdown._cell``).
_MD_SPECIAL = re.compile(r"([\\`*_\[\]~!#])")


def console_width(stream, default: int) -> int | None:
    """The width for a console on ``stream``: ``COLUMNS`` when it is a usable number of columns,
    else the terminal's own width on a terminal (None: rich asks it), else ``default``.

    Why not rich's own reading: it takes ``COLUMNS=0`` at its word, and a console 0
    columns wide prints nothing (``COLUMNS=0 ttfg compare`` was silent).
    """
    text = os.environ.get("COLUMNS", "").strip()
    if text.isdigit() and 1 <= int(text) <= MAX_COLUMNS:
        return int(text)
    try:
        if stream.isatty():
            return os.get_terminal_size(stream.fileno()).columns or default
    except (AttributeError, OSError, ValueError):
        pass
    return default


#: Control characters a terminal would act on (ESC starts colour, cursor and title sequences; the C1 range
#: holds CSI): everything below a space but tab and newline, DEL, and U+0080-U+009F. rich strips only
#: a few of them (bell, backspace, carriage return...), not ESC.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def plain(text) -> str:
    """Untrusted text for the terminal: every control character shown as its escape (``\\x1b``), never acted on.

    Why: a hostile ``releases.json`` or results file put ``\\x1b]0;...`` and colour sequences
    into names that ``ttfg show`` and ``ttfg regressions --releases`` printed raw.
    """
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode(), str(text))


def md(text, limit: int = MD_CHARS) -> str:
    """``text`` as inert Markdown on one line: clipped to ``limit`` characters (saying how much was
    cut), HTML escaped, Markdown's special characters backslash-escaped, line breaks made spaces, control
    characters shown as their escapes (:func:`plain`: a commit subject's ESC or NUL reached summary.md raw)."""
    one_line = plain(" ".join(clip(str(text), limit).split()))
    return _MD_SPECIAL.sub(r"\\\1", html.escape(one_line, quote=False))


def md_code(text, limit: int = MD_CHARS) -> str:
    """``text`` as an inline code span (clipped, on one line), fenced with more backticks than it holds."""
    one_line = plain(" ".join(clip(str(text), limit).split()))
    longest = max((len(run) for run in re.findall(r"`+", one_line)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if one_line.startswith("`") or one_line.endswith("`") or not one_line else ""
    return f"{fence}{pad}{one_line}{pad}{fence}"
