"""Which cases a command measures: the selection, its shard, and the split over N runners.

Why a use case: ``run``, ``check``, ``gate``, ``releases``, ``config`` and ``shards``
all turn the same ``--model``/``--backend``/``--variant`` (and ``--shard``/``--costs``)
into cases; the CLI prints what comes back and imports no stage below ``app/`` for it.
"""

from __future__ import annotations

from dataclasses import dataclass


def cases_for(models: list[str], backends: list[str] | None, variants: list[str] | None, *,
              check_availability: bool = True, pending_models: bool = False):
    """``(cases, skipped)`` of a selection (``measure.cases.select``; ``pending_models``: a model unknown here is
    kept for the revisions' installs to resolve)."""
    from ..measure.cases import select

    return select(models, backends, variants, check_availability=check_availability, pending_models=pending_models)


def declare_functions(cfg) -> None:
    """Register the config's ``[functions]`` (``engines.function.declare``): cases by name in this process, and
    handed to every probe it spawns."""
    from ..engines import function

    if "functions" in cfg:
        function.declare(dict(cfg.get("functions")), cfg.where("functions"))


def normalized_model(text: str) -> str:
    """A model with its options in one spelling (``measure.cases.normalize_model``)."""
    from ..measure.cases import normalize_model

    return normalize_model(text)


def parse_shard(text: str):
    """``--shard I/N`` as a ``ShardSpec``; UsageError saying what a valid value looks like."""
    from ..measure.shard import parse_spec

    return parse_spec(text)


def universe(models: list[str], backends: list[str] | None, variants: list[str] | None,
             costs: str | None, pending_models: bool = False) -> tuple[list[str], dict | None]:
    """``(case ids, costs)``: every case of the selection, available here or not, and ``--costs``."""
    from ..history.shard_costs import load_costs

    everything, _ = cases_for(models, backends, variants, check_availability=False, pending_models=pending_models)
    return [c.id for c in everything], load_costs(costs)


@dataclass
class ShardCut:
    """One shard of a selection: its cases and skips, the section its results file records, and the split."""

    cases: list
    skipped: list
    section: object
    #: How many cases the selection has in all, the shard's expected cost per round, the busiest shard's.
    total: int
    cost_s: float
    makespan_s: float
    digest: str


def cut_shard(models, backends, variants, costs: str | None, spec, cases: list, skipped: list,
              pending_models: bool = False) -> ShardCut:
    """The part of ``cases`` (and ``skipped``) that shard ``spec`` measures."""
    from ..measure.shard import select_shard
    from ..results.model import ShardSection

    ids, cost_table = universe(models, backends, variants, costs, pending_models)
    mine, mine_skipped, plan = select_shard(ids, cases, skipped, spec, cost_table)
    section = ShardSection(spec.index, spec.count, plan.shard(spec).cases, plan.digest, ids)
    return ShardCut(mine, mine_skipped, section, len(ids), plan.shard(spec).cost_s, plan.makespan_s, plan.digest)


def split(models, backends, variants, costs: str | None, count: int):
    """The selection split over ``count`` runners (``measure.shard.Partition``); None when it has no case."""
    from ..measure.shard import partition

    ids, cost_table = universe(models, backends, variants, costs)
    return partition(ids, count, cost_table) if ids else None


__all__ = ["ShardCut", "cases_for", "cut_shard", "normalized_model", "parse_shard", "split", "universe"]
