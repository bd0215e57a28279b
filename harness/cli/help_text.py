"""Help texts of the deciding commands: paragraphs wrapped to the terminal, and the exit-code epilog.

Why one module: ``compare``, ``gate``, ``expect`` and ``releases`` share the wording of
their exit codes (the product's contract with CI) and the way their help is wrapped.
"""

from __future__ import annotations

import argparse


def fill(text: str) -> str:
    """Help text re-wrapped to 78 columns, paragraph by paragraph (the formatter keeps our line breaks)."""
    import textwrap

    return "\n\n".join(textwrap.fill(" ".join(p.split()), 78, break_on_hyphens=False)
                       for p in text.strip().split("\n\n")) + "\n"


def exit_codes(extra: str = "", extra2: str = "") -> str:
    """The epilog every deciding command shows, wrapped to 80 columns."""
    import textwrap

    lines = ["exit codes:"]
    for code, text in (("0", "no regression (inconclusive results do not fail: nothing was proven)"),
                       ("1", f"regression{extra}"),
                       ("2", "nothing comparable, broken input (a missing or invalid file is named), an "
                             f"interruption (finished samples are kept) or an internal error{extra2}")):
        lines += textwrap.wrap(text, 78, initial_indent=f"  {code}  ", subsequent_indent="     ",
                               break_on_hyphens=False)
    return "\n".join(lines) + "\n"


def formatter(prog):
    """Help that keeps our line breaks, options aligned at column 32."""
    return argparse.RawDescriptionHelpFormatter(prog, max_help_position=32)


__all__ = ["exit_codes", "fill", "formatter"]
