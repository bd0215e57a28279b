"""``ttfg explain`` as one use case: which two measurements to compare, and where the change between them went.

The inputs are two results files, or a gate's output (its folder or ``gate.json``) whose
``base.json`` and ``head.json`` beside it must be the sides that gate measured; the
attribution itself is ``decide/attribution.py``. The CLI prints what comes back.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..results.gate_document import GateDocument


def _gate_pair(path: Path) -> tuple[Path, Path, GateDocument | None] | None:
    """``(base, head, gate.json's document)`` when ``path`` is a gate's folder or gate.json, else None.

    The results files are the ones beside ``gate.json``, never the paths it recorded:
    those are relative to wherever the gate ran, so a downloaded artifact was explained
    with the local ``runs/gate/`` of another gate. Each must be the side the gate
    measured (its role and commit), or the folder is refused: an interrupted gate can
    leave new results files beside an older ``gate.json``.
    """
    from ..decide.merge_gate import side_mismatch
    from ..errors import UsageError
    from ..results import gate_file
    from ..results.jsonfile import sniff_format
    from ..results.record import load

    if path.is_dir():
        doc_path = path / "gate.json"
        if not doc_path.is_file():
            if (path / "base.json").is_file() and (path / "head.json").is_file():
                return path / "base.json", path / "head.json", None
            raise UsageError(f"{path}: a folder without gate.json or base.json and head.json")
    else:
        doc_path = path
        if path.suffix != ".json" or not path.is_file() or sniff_format(path) != "ttfg-gate":
            return None
    doc = gate_file.load(doc_path)
    found = []
    for role in ("base", "head"):
        candidate = doc_path.parent / f"{role}.json"
        if not candidate.is_file():
            raise UsageError(f"{doc_path}: no {role}.json beside it (a gate writes base.json and head.json in its "
                             "folder; give BASE HEAD to explain other files)")
        problem = side_mismatch(doc, role, load(candidate))
        if problem:
            raise UsageError(f"{candidate}: {problem}, so it does not belong to {doc_path} (a later gate, "
                             "interrupted, may have written it); give BASE HEAD to explain it anyway")
        found.append(candidate)
    return found[0], found[1], doc


def resolve_inputs(paths: list[str]) -> tuple[Path, Path, str | None, GateDocument | None]:
    """``(base, head, case, gate document)`` from the positional arguments.

    Raises
    ------
    UsageError
        On a wrong number of arguments or an unusable gate output.
    """
    from ..errors import UsageError

    if not 1 <= len(paths) <= 3:
        raise UsageError("expected BASE HEAD [CASE] or GATE [CASE]")
    gate = _gate_pair(Path(paths[0]))
    if gate is not None:
        if len(paths) > 2:
            raise UsageError(f"{paths[0]} is a gate's output: give at most a CASE after it, got {paths[1:]}")
        return gate[0], gate[1], (paths[1] if len(paths) == 2 else None), gate[2]
    if len(paths) == 1:
        raise UsageError(f"{paths[0]} is not a gate's output (a folder with gate.json, or gate.json): give BASE HEAD")
    return Path(paths[0]), Path(paths[1]), (paths[2] if len(paths) == 3 else None), None


@dataclass
class Explained:
    """The attributions of every matching case, and the two files they come from."""

    base: Path
    head: Path
    metric: str
    attributions: list


def explain(base_path: Path, head_path: Path, case: str | None, metric: str, cache: str, top: int,
            gate: GateDocument | None = None) -> Explained:
    """Where the change of ``metric`` between the two results files went, per case (``case``: an id or a glob);
    ``gate``: the document of the gate that wrote them, whose cases settled on the base's stored first process
    (``decide/stored_first.py``) have no base sample to compare: each is said in a note, not read as "absent".

    Raises
    ------
    UsageError
        For a counter (its change is always listed), a missing or invalid file, no common case.
    """
    from .. import metrics
    from ..decide.attribution import attribute_results
    from ..errors import UsageError
    from ..results import record

    if metrics.get(metric).deterministic:
        raise UsageError(f"--metric {metric} is a counter; explain a timing (counters are always listed)")
    base, head = record.load(base_path), record.load(head_path)
    found = attribute_results(base, head, case, metric=metric, cache=cache, top=top)
    outcome = gate.outcome if gate is not None else None
    return Explained(base_path, head_path, metric, [stored_base_said(a, outcome) for a in found])


def stored_base_said(found, outcome):
    """``found`` (an ``Attribution``), or, for a case the gate (its ``GateOutcome``, or None) settled with the base's
    stored first process, one that says so: base.json holds no base sample of it, and a comparison with nothing
    would list every counter as changed (``ttfg explain`` and the report of a gate's folder)."""
    case = next((c for c in outcome.cases if c.case == found.case), None) if outcome else None
    if case is None or not case.base_first_stored:
        return found
    from ..results.attribution_record import Attribution

    record = case.baseline
    return Attribution(found.case, found.metric, False, None, notes=[
        f"the gate ran no base process: the base's first process came from the count store ({record.get('from')}); "
        f"{record.get('verified')}; the head runs the base's program (the source tier), so there is nothing to "
        "attribute"])


__all__ = ["Explained", "explain", "resolve_inputs", "stored_base_said"]
