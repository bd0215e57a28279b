"""``ttfg asv record`` as a use case: commits measured with asv in clean worktrees, then published.

The recording is ``history/asv_record.py``; the CLI turns its options into this request.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class RecordRequest:
    """Which commits, with which asv config, machine and interpreter; what else to pass to ``asv run``."""

    revs: list[str]
    config: Path
    machine: str | None
    python: str
    all_params: bool = False
    publish: bool = True
    asv_args: list[str] = field(default_factory=list)
    #: ``--shard I/N`` (a ``ShardSpec``) and ``--costs``: only that shard of the selection.
    shard: object = None
    costs: str | None = None
    #: The project's folder inside the repository (the config's ``install-path``); None: asv.conf.json's folder.
    project_dir: str | None = None


def record(request: RecordRequest) -> int:
    """Measure and publish; the exit code (1 when asv reported a failure for some commit)."""
    from ..history import asv_record

    return asv_record.record(request.revs, request.config, request.machine, request.python, request.all_params,
                             request.publish, request.asv_args, shard=request.shard, costs=request.costs,
                             project_dir=request.project_dir)


__all__ = ["RecordRequest", "record"]
