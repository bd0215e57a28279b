"""``ttfg doctor`` as one use case: the machine examined, optionally calibrated, the calibration stored.

Facts come from ``measure/machine.py``, the A/A calibration from ``decide/calibrate.py``;
the CLI prints the findings (``present/doctor.py``) and passes progress lines through.
"""

from __future__ import annotations

from typing import Callable


def examine_machine() -> tuple[list, list]:
    """``(findings, missing)``: every check of tools and noise sources, and the required ones that are missing;
    then what is stored in the cache folder (:func:`stored_facts`)."""
    from ..measure import machine

    findings = machine.examine() + stored_facts()
    return findings, machine.required_missing(findings)


def stored_facts() -> list:
    """The stored noise calibration and count margins as findings: where they are, how many entries they hold, and
    every entry set aside on reading (a margin out of range, a field of the wrong type), named -- a stored fact that
    is never applied should not stay unseen."""
    from ..decide import count_margins, noise
    from ..measure.machine import Finding

    out = []
    for item, store, how in (("noise calibration", noise.load(), "ttfg doctor --calibrate"),
                             ("count margins", count_margins.load(), "ttfg doctor --calibrate-counts N")):
        if store.problem:
            out.append(Finding("stored facts", item, "warn", store.problem, f"calibrate again: {how}"))
        elif store.set_aside:
            out.append(Finding("stored facts", item, "warn",
                               f"{len(store.entries)} entr{'y' if len(store.entries) == 1 else 'ies'} usable in "
                               f"{store.path}; set aside: " + "; ".join(store.set_aside),
                               f"calibrate again ({how}) to replace what was set aside"))
        elif store.entries:
            out.append(Finding("stored facts", item, "ok",
                               f"{len(store.entries)} entr{'y' if len(store.entries) == 1 else 'ies'} in {store.path}, "
                               "each applied only to its own case, environment, interpreter, ttfg and machine"))
    return out


def cases_to_calibrate() -> tuple[list, list[str]]:
    """``(cases, notes)``: what the calibration measures here, and why others are left out."""
    from ..decide.calibrate import calibration_cases

    return calibration_cases()


def run_calibration(cases: list, budget_s: float, on_pair: Callable):
    """Paired A/A cold processes within ``budget_s``; ``on_pair(case, a, b)`` after each pair."""
    from ..decide.calibrate import calibrate

    return calibrate(cases, budget_s, on_pair=on_pair)


def store(calibration, note: Callable[[str], None]):
    """Keep the calibration for ``ttfg run`` and ``ttfg gate`` (their noise floor and the gate's check), each case
    under its key (this interpreter with its packages and editable installs, ttfg, the machine); where it was
    stored, or None (``note`` says why not)."""
    from ..decide import noise
    from ..measure.runner import RunSettings

    floor = noise.from_calibration(calibration)
    if not any(e.log_ratio_sd is not None for e in floor.entries):
        note("calibration not stored: no case has two good pairs")
        return None
    keys = {case: found[0] for case, found in noise.keys_of([c.case for c in calibration.cases],
                                                              RunSettings(repeat=1)).items()}
    try:
        path, kept = noise.save(floor, keys, interrupted=calibration.interrupted)
    except OSError as exc:
        note(f"calibration not stored: {exc.strerror or exc}: {exc.filename or ''}")
        return None
    for line in kept:
        note(f"calibration not stored for {line}")
    if len(kept) >= len({e.case for e in floor.entries}):
        return None
    note(f"calibration stored in {path}: ttfg run and ttfg gate use it for these cases, in this environment on this "
         f"machine, for {noise.MAX_AGE_S / 3600:g} hours")
    return path


def calibrate_counts(cases: list, processes: int, on_line: Callable[[str], None]) -> list[str]:
    """Each case's count margins from ``processes`` count processes of the same code, kept in the user cache folder
    beside the time calibration (``decide/count_margins.py``, with PyTorch's hysteresis)."""
    from ..decide.count_margins import calibrate_counts as calibrate

    return calibrate(cases, processes, on_line=on_line)


__all__ = ["calibrate_counts", "cases_to_calibrate", "examine_machine", "run_calibration", "store", "stored_facts"]
