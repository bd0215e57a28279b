"""Whose numbers may be compared: the one rule, used by compare, merge and the report.

Why a rule at all: a timing measured on a 2-core AMD VM and one from an 8-core Intel
runner differ by the machine, not by the code. Comparing them, or merging them into
one results file, reports the machine as a regression. So timings are compared only
between files whose machine fingerprints match (every field of
``format.TIMING_FIELDS``); instruction and structural counts follow the code path, so
they only need the same CPU architecture, Python and package versions
(``format.COUNT_FIELDS``). ``force`` compares anyway, and the notes returned say so, so
the output can never hide it.

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
                   action: str = "compare") -> list[str]:
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

    Returns
    -------
    list of str
        Notes for the output: files without a fingerprint, and with ``force`` the differences.

    Raises
    ------
    MachineMismatch
        Naming both files and every differing field, unless ``force``.
    """
    names = FIELDS[what]
    files = list(files)
    notes = [f"{name} has no machine fingerprint (written before ttfg recorded one): its machine cannot be "
             "checked" for name, fp in files if fp is None]
    known = [(name, fp) for name, fp in files if fp is not None]
    problems = []
    if known:
        first_name, first = known[0]
        for name, fp in known[1:]:
            diffs = first.differences(fp, names)
            if diffs:
                problems.append(f"{first_name} vs {name}: " + "; ".join(diffs))
    if problems and not force:
        hint = (" (instruction and structural counts can still be compared across machines with the same CPU "
                "architecture, Python and packages: --metric 'counters.*')" if what == "timings" else "")
        raise MachineMismatch(f"cannot {action} {what} measured on different machines: " + " | ".join(problems)
                              + f"; --force to {action} anyway{hint}")
    notes += [f"--force: {what} from different machines, {p}" for p in problems]
    return notes
