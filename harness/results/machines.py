"""Whose numbers may be compared: the one rule, used by compare, merge and the report.

Why a rule at all: a timing measured on a 2-core AMD VM and one from an 8-core Intel
runner differ by the machine, not by the code. Comparing them, or merging them into
one results file, reports the machine as a regression. So timings are compared only
between files whose machine fingerprints match (every field of
``format.TIMING_FIELDS``); instruction and structural counts follow the code path, so
they only need the same CPU architecture, Python and package versions
(``format.COUNT_FIELDS``). ``force`` compares anyway, and the notes returned say so, so
the output can never hide it. Files from different environments on one machine differ in
package versions only; they are compared when asked (``across_envs``, as an upgrade gate
does by construction), with the versions named in the notes.

A file written before fingerprints existed has none: it is compared with a note that
the machines could not be checked.
"""

from __future__ import annotations

from typing import Iterable

from ..errors import TtfgError
from .format import COUNT_FIELDS, TIMING_FIELDS
from .model import Fingerprint

__all__ = ["MachineMismatch", "check_machines"]

#: What is being compared -> the fingerprint fields that must match for it.
FIELDS = {"timings": TIMING_FIELDS, "counts": COUNT_FIELDS}


class MachineMismatch(TtfgError):
    """Files measured on different machines where the numbers would not be comparable (exit 2)."""


def check_machines(files: Iterable[tuple[str, Fingerprint | None]], what: str = "timings", force: bool = False,
                   action: str = "compare", across_envs: bool = False) -> list[str]:
    """Notes about the machines of ``files``; raises :class:`MachineMismatch` when they differ.

    Parameters
    ----------
    files : iterable of (name, fingerprint or None)
        Each file's name (as the message shows it) and its fingerprint.
    what : str
        ``"timings"`` (every field must match) or ``"counts"`` (architecture, Python, packages).
    force : bool
        Go ahead despite differences; the returned notes name them.
    action : str
        The verb in the message: ``compare``, ``merge``, ``report``.
    across_envs : bool
        The files were measured in different environments on purpose (an upgrade gate,
        ``--across-envs``): package versions may differ, and the notes name them.

    Returns
    -------
    list of str
        Notes for the output: files without a fingerprint, and with ``force`` the differences.

    Raises
    ------
    MachineMismatch
        Naming both files and every differing field, unless ``force``.
    """
    names = tuple(n for n in FIELDS[what] if not (across_envs and n == "packages"))
    files = list(files)
    notes = [f"{name} has no machine fingerprint (written before ttfg recorded one): its machine cannot be "
             "checked" for name, fp in files if fp is None]
    known = [(name, fp) for name, fp in files if fp is not None]
    problems, env_only = [], True
    if known:
        first_name, first = known[0]
        for name, fp in known[1:]:
            diffs = first.differences(fp, names)
            if diffs:
                problems.append(f"{first_name} vs {name}: " + "; ".join(diffs))
                env_only &= all(d.startswith("packages ") for d in diffs)
    if across_envs and len(known) > 1:
        versions = known[0][1].differences(known[1][1], ("packages",))
        notes += [f"across environments: {known[0][0]} vs {known[1][0]}: {v}" for v in versions]
    if problems and not force and env_only:
        raise MachineMismatch(f"cannot {action} {what} measured in different environments: " + " | ".join(problems)
                              + f"; --across-envs to {action} them (the output says so)")
    if problems and not force:
        hint = (" (instruction and structural counts can still be compared across machines with the same CPU "
                "architecture, Python and packages: --metric 'counters.*')" if what == "timings" else "")
        raise MachineMismatch(f"cannot {action} {what} measured on different machines: " + " | ".join(problems)
                              + f"; --force to {action} anyway{hint}")
    notes += [f"--force: {what} from different machines, {p}" for p in problems]
    return notes
