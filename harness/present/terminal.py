"""Terminal primitives every view builds on: the console, tables that fit any width, the case columns, verdict colours.

Why a module of its own: each subject's view (a run, a study, a comparison, the gate...)
prints rich tables the same way, so the way a table fits the console's width, how a case
id is split into columns and which colour a verdict word gets are defined once, here,
below all views. Every table fits the console's width, 80 columns included, and cuts
nothing: a case is split into model, backend and variant columns, and a part that is the
same on every row moves into the title; every column may wrap (at spaces) or fold, so
rich never needs an ellipsis.
"""

from __future__ import annotations

import sys

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

#: Width when output is piped or logged and ``COLUMNS`` is not set: wide enough for the
#: tables to stay on one line per row in a CI log, narrow enough to read there.
PIPED_WIDTH = 100


def console(stderr: bool = False, width: int | None = None) -> Console:
    """The terminal's width on a terminal; ``COLUMNS`` when set; else :data:`PIPED_WIDTH` when piped.

    Console markup is off (``untrusted.py`` says why): styled text is built as ``rich.text.Text``.
    """
    from .untrusted import console_width

    stream = sys.stderr if stderr else sys.stdout
    return Console(stderr=stderr, width=width or console_width(stream, PIPED_WIDTH), markup=False)


CASE_PARTS = ("model", "backend", "variant")


def case_parts(case_id: str) -> tuple[str, str, str]:
    """``model/backend/params=args,chain=scan`` -> model, backend, ``args scan``.

    The variant shows its values only (each value belongs to one axis, named in the
    title by :func:`case_layout`), so a variant column is as narrow as its longest value.
    """
    parts = case_id.split("/", 3)[:3] + ["", ""]
    values = [kv.partition("=")[2] or kv for kv in parts[2].split(",") if kv]
    return parts[0], parts[1], " ".join(values)


def case_env(case_id: str) -> str:
    """The environment a case ran in (its id's fourth part, ``ttfg run --env``); empty for the current one."""
    parts = case_id.split("/", 3)
    return parts[3] if len(parts) == 4 else ""


def _axes(case_ids) -> str:
    """``params chain``: the variant axes, in the order the values are shown."""
    for case_id in case_ids:
        variant = case_id.split("/", 2)[2:] or [""]
        names = [kv.partition("=")[0] for kv in variant[0].split(",") if "=" in kv]
        if names:
            return " ".join(names)
    return ""


def case_layout(case_ids) -> tuple[tuple[str, ...], str]:
    """The case parts that vary over these rows (their columns), and the constant ones for the title."""
    case_ids = list(case_ids)
    split = [case_parts(c) for c in case_ids]
    varying = tuple(name for i, name in enumerate(CASE_PARTS) if len({p[i] for p in split}) > 1)
    envs = [case_env(c) for c in case_ids]
    if not varying and split and len(set(envs)) < 2:
        varying = ("backend",)  # a row needs a name
    fixed = [f"{name} {split[0][i]}" for i, name in enumerate(CASE_PARTS)
             if split and name not in varying and split[0][i]]
    axes = _axes(case_ids)
    if axes:
        if "variant" in varying:
            fixed.append(f"variant = {axes}")
        elif fixed and fixed[-1].startswith("variant "):
            fixed[-1] = f"variant {split[0][2]} ({axes})"
    if len(set(envs)) > 1:
        varying += ("env",)  # the environment is a dimension of the table, like the backend
    elif envs and envs[0]:
        fixed.append(f"env {envs[0]}")
    return varying, ", ".join(fixed)


def case_cells(case_id: str, varying: tuple[str, ...]) -> list[str]:
    from .untrusted import plain  # a case id read from a file another runner (or a hostile user) wrote

    parts = {**dict(zip(CASE_PARTS, case_parts(case_id))), "env": case_env(case_id)}
    return [plain(parts[name]) for name in varying]


#: Cells up to this wide are never broken (a value and its unit).
SHORT, SHORT_HEADER = 8, 13


class Fitted:
    """A table whose layout is chosen at print time for the console's width.

    Why: rich, when a table is too wide, shrinks the widest columns first down to equal
    widths, which folds short unbreakable words (``torch.eager`` -> ``torch.eage`` /
    ``r``) while long text columns still have room to wrap. Here every column first
    gets its longest word (a value with its unit, a short header, kept whole), and the
    room left goes to the columns that have more to show, in proportion to what they
    lack. When even the longest words do not fit side by side, the rows are printed as
    records instead, one paragraph per row: the row's name (its first ``label``
    cells), then ``column value`` pairs, wrapped at the width. Nothing is ever cut.
    """

    def __init__(self, table: Table, label: int = 1):
        self.table = table
        self.label = label

    def __getattr__(self, name):  # add_row, columns, title, row_count ... of the table
        return getattr(self.table, name)

    def _measure(self, console, options):
        from rich.measure import Measurement

        mins, maxs = [], []
        for column in self.table.columns:
            column.width = None
            cells = [column.header, *column.cells]
            sizes = [Measurement.get(console, options, c) for c in cells]
            mins.append(max((m.maximum if m.maximum <= (SHORT_HEADER if i == 0 else SHORT) else m.minimum
                             for i, m in enumerate(sizes)), default=1))
            maxs.append(max((m.maximum for m in sizes), default=1))
        return mins, maxs

    def __rich_console__(self, console, options):
        table = self.table
        pads = [table._get_padding_width(i) for i in range(len(table.columns))]
        avail = options.max_width - sum(pads) - table._extra_width
        mins, maxs = self._measure(console, options)
        if sum(maxs) <= avail:
            yield table
        elif sum(mins) <= avail:
            spare, lack = avail - sum(mins), [hi - lo for lo, hi in zip(mins, maxs)]
            total = sum(lack) or 1
            widths = [lo + spare * d // total for lo, d in zip(mins, lack)]
            for i in sorted(range(len(widths)), key=lambda i: widths[i] - maxs[i])[:avail - sum(widths)]:
                widths[i] += 1
            for column, width in zip(table.columns, widths):
                column.width = max(width, 1)
            yield table
        else:
            yield from self.records()

    def records(self):
        """The rows as paragraphs: ``name: column value, column value, ...``."""
        def text(cell) -> Text:
            t = cell.copy() if isinstance(cell, Text) else Text(str(cell))
            return Text(" ").join(t.split("\n"))

        columns = self.table.columns
        if self.table.title:
            yield Text(str(self.table.title), style="italic")
        for row in range(self.table.row_count):
            cells = [text(list(c.cells)[row]) for c in columns]
            name = Text(" ").join(c for c in cells[:self.label] if c.plain)
            name.stylize("bold")
            line = Text("- ").append(name)
            parts = [Text(f"{col.header} ").append(cell) for col, cell in zip(columns[self.label:], cells[self.label:])
                     if cell.plain]
            line.append(": ").append(Text(", ").join(parts))
            line.overflow = "fold"
            yield line

    def __rich_measure__(self, console, options):
        from rich.measure import Measurement

        return Measurement.get(console, options, self.table)


def fitted(title: str, columns, label: int = 1, boxed: bool = False) -> Fitted:
    """A table that fits any width without cutting (see :class:`Fitted`); ``columns``: ``(name, justify)``.

    ``label``: how many leading columns name a row (the case's parts), for the record layout.
    ``boxed``: rich's default box with rules between columns (``ttfg list``), instead of none.
    """
    table = (Table(title=title, title_justify="left") if boxed else
             Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
                   collapse_padding=True))
    for name, justify in columns:
        table.add_column(name, justify=justify, overflow="fold")
    return Fitted(table, label)


def titled(text: str, fixed: str) -> str:
    """A table's title with the case parts that are the same on every row (``case_layout``'s ``fixed``)."""
    return f"{text}: {fixed}" if fixed else text


#: A verdict's or status's colour, the same in every table.
VERDICT_STYLE = {"regressed": "red", "improved": "green", "unchanged": "dim", "inconclusive": "yellow",
                 "ok": "green", "not measured": "dim", "new": "cyan", "vanished": "red"}


def styled(word: str, label: str | None = None) -> Text:
    """A verdict word (or ``label``, what it rests on) coloured by the word."""
    style = VERDICT_STYLE.get(word)
    text = label or word
    return Text(text, style=style or "")

