"""``ttfg merge gate|asv`` as use cases: shards' outputs merged into one set and written.

The merging is ``decide/merge_gate.py`` (gate outcomes) and ``history/asv_merge.py`` (asv
result files); the merged gate's summary is ``present/shard_views.py``. Every output is
built before any is written, then the set replaces the old one as a whole. (Results files
merge through ``results/merge.py``, which the CLI reaches directly.)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..results.gate_document import GateDocument


@dataclass
class MergedGate:
    """The merged gate: its document (as written to gate.json), summary and exit code, and the step-summary
    warning when ``$GITHUB_STEP_SUMMARY`` could not be appended to."""

    doc: GateDocument
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
    from ..present.verdicts import passing_means
    from ..results.gate_file import dumps as gate_text
    from ..results.io import dumps

    merged = merge_gates([load_shard(p) for p in dirs], force=force)
    doc = merged.doc
    texts = {name: dumps(res, out_dir / f"{name}.json") for name, res in merged.sides.items()}
    if doc.outcome is not None:
        doc.outcome.files = {name: str(out_dir / f"{name}.json") for name in texts}
        doc.added["passing_means"] = passing_means(doc.outcome)
    summary = merged_gate_markdown(doc)
    # Every output is built before any is written; then the set replaces the old one as a whole
    # (a results file this merge has none for is removed: it belonged to an older outcome).
    replace_together({out_dir / "base.json": texts.get("base"), out_dir / "head.json": texts.get("head"),
                      out_dir / "gate.json": gate_text(doc.to_json()), out_dir / "summary.md": summary})
    return MergedGate(doc, summary, merged.exit_code, append_step_summary(step_summary, summary))


def merge_asv(files: list[str], out: Path | None, results_dir: Path | None) -> tuple[Path, list[str]]:
    """Merge the shards' asv result files of one commit; ``(the file written, notes)``."""
    from ..history.asv_merge import merge_asv_files

    return merge_asv_files(files, out, results_dir)


__all__ = ["MergedGate", "merge_asv", "merge_gate"]
