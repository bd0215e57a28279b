"""A command's ``--model``/``--backend``/``--variant`` turned into cases, and what to say when none can run.

Shared by ``run``, ``check``, ``gate`` and ``releases``; the selecting itself is ``app/selection.py``.
"""

from __future__ import annotations

from rich.text import Text


def selection(args):
    """The selection's ``(cases, skipped)``."""
    from ..app.selection import cases_for

    # With --env, a backend's framework is looked for in each environment, not in this interpreter.
    # A command that installs each revision (the gate) lets the head's install resolve a model it adds.
    return cases_for(args.model or [args.default_model], args.backend, args.variant,
                     check_availability=not getattr(args, "env", None),
                     pending_models=getattr(args, "pending_models", False))


def runnable_selection(args, console, what: str):
    """The selection's cases and skips; when every case is skipped, says why and gives no cases."""
    cases, skipped = selection(args)
    if not cases:
        for s in skipped:
            console.print(f"skipped {s.id}: {s.reason}", highlight=False)
        console.print(Text.assemble((f"nothing to {what}", "red"), ": every selected case was skipped"))
    return cases, skipped


__all__ = ["runnable_selection", "selection"]
