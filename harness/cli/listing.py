"""``ttfg list``: the catalog (``app/listing.py``) as tables.

``ttfg list`` imports no AD framework (a test holds us to that).
"""

from __future__ import annotations

from rich.text import Text


def cmd_list(args) -> int:
    from ..app.listing import catalog
    from ..present.terminal import console as make_console, fitted

    found = catalog()
    console = make_console()
    mt = fitted("models", [(col, "left") for col in ("model", "parameters", "input", "description", "from")],
                boxed=True)
    for m in found.models:
        if m.broken:
            mt.add_row(m.name, "", "", Text.assemble((m.broken, "red"), " (below)"), m.origin)
        else:
            mt.add_row(m.name, m.parameters, m.input, m.description, m.origin)
    console.print(mt)
    # The descriptions go below the table, one line each: the table keeps to what fits a row.
    bt = fitted("backends", [(col, "left") for col in ("backend", "available", *found.axes, "from")], boxed=True)
    for b in found.backends:
        if b.broken:
            bt.add_row(b.name, Text.assemble((b.broken, "red"), " (below)"), *("" for _ in found.axes), b.origin)
        else:
            bt.add_row(b.name, b.available, *b.axes, b.origin)
    console.print(bt)
    if found.functions:
        ft = fitted("functions (a library's own case() -> (fn, args), measured as it is)",
                    [(col, "left") for col in ("function", "case", "target", "from")], boxed=True)
        for f in found.functions:
            ft.add_row(f.name, f.case, f.target, f.origin)
        console.print(ft)
    console.print("what each backend does:")
    for line in found.described:
        console.print(line, highlight=False)
    console.print("variant axes: " + "; ".join(f"{a} = {' | '.join(v)}" for a, v in found.axes.items())
                  + " (first listed per backend is its default)")
    if found.notes:
        console.print("unsupported variants:")
        for note in found.notes:
            console.print(f"  {note}", highlight=False)
    if found.broken:
        console.print(Text.assemble(("plugins that cannot be used", "red"),
                                    " (their cases are skipped; everything else runs):"))
        for reason in found.broken:
            console.print(f"  {reason}", highlight=False, soft_wrap=True)
    return 0


def add_list_command(sub) -> None:
    """Register ``list`` on the ``ttfg`` subparsers."""
    p = sub.add_parser("list", help="show models, backends and variants, with availability")
    p.set_defaults(func=cmd_list)


__all__ = ["add_list_command", "cmd_list"]
