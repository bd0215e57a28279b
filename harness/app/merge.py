"""``ttfg merge gate|asv`` as use cases: shards' outputs merged into one set and written.

The merging is ``decide/merge_gate.py`` (gate outcomes) and ``history/asv_merge.py`` (asv
result files); the merged gate's summary is ``present/shard_views.py``. Every output is
built before any is written, then the set replaces the old one as a whole. (Results files
merge through ``results/merge.py``, which the CLI reaches directly.)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass
class MergedGate:
    """The merged gate: its document (as written to gate.json), summary and exit code, and the step-summary
    warning when ``$GITHUB_STEP_SUMMARY`` could not be appended to."""

    doc: dict
    summary: str
    exit_code: int
    warning: str | None = None


def merge_gate(dirs: list[str], out_dir: Path, force: bool = False, step_summary: str | None = None) -> MergedGate:
    """Merge the shards' gate outputs in ``dirs`` and write base.json, head.json, gate.json and summary.md.

    Raises
    ------
    UsageError
        Shards that cannot be merged (named); nothing is written.
    """
    from ..decide.merge_gate import load_shard, merge_gates
    from ..files import append_step_summary, replace_together
    from ..present.shard_views import merged_gate_markdown
    from ..present.gate_views import cases_of
    from ..present.verdicts import acceptance_note, evidence_note, passing_sentence
    from ..results.format import strict_json
    from ..results.io import dumps

    merged = merge_gates([load_shard(p) for p in dirs], force=force)
    texts = {name: dumps(res, out_dir / f"{name}.json") for name, res in merged.sides.items()}
    merged.doc["files"] = {name: str(out_dir / f"{name}.json") for name in texts}
    settings = merged.doc.get("settings") or {}
    if settings.get("min_effect") is not None and settings.get("alpha") is not None:
        merged.doc["passing_means"] = passing_sentence(
            settings.get("metric", "first_grad_s"), settings["min_effect"], settings["alpha"],
            [c["verdict"].get("detectable") for c in merged.doc["cases"]
             if c["verdict"].get("verdict") == "inconclusive"],
            guard=settings.get("guard"), tiers=settings.get("tiers"))
        cases = cases_of(merged.doc["cases"])
        notes = [n for n in (acceptance_note(cases, merged.doc.get("acceptances")), evidence_note(cases)) if n]
        merged.doc["passing_means"] = " ".join([merged.doc["passing_means"], *notes])
    summary = merged_gate_markdown(merged.doc)
    document = json.dumps(strict_json(merged.doc), indent=1, allow_nan=False) + "\n"
    # Every output is built before any is written; then the set replaces the old one as a whole
    # (a results file this merge has none for is removed: it belonged to an older outcome).
    replace_together({out_dir / "base.json": texts.get("base"), out_dir / "head.json": texts.get("head"),
                      out_dir / "gate.json": document, out_dir / "summary.md": summary})
    return MergedGate(merged.doc, summary, merged.exit_code, append_step_summary(step_summary, summary))


def merge_asv(files: list[str], out: Path | None, results_dir: Path | None) -> tuple[Path, list[str]]:
    """Merge the shards' asv result files of one commit; ``(the file written, notes)``."""
    from ..history.asv_merge import merge_asv_files

    return merge_asv_files(files, out, results_dir)


__all__ = ["MergedGate", "merge_asv", "merge_gate"]
