"""Splitting a case list over N CI runners so that they finish at about the same time.

Why: the full matrix does not fit on one runner (Inductor alone takes 20 s to 101 s per
cold process), and CI systems run N jobs side by side. Every runner computes the
partition itself from the same case list, so it must be a pure function of
``(case ids, N, costs)``: no clock, no host name, no randomness. It is the classic
longest-processing-time-first greedy (each case, most expensive first, goes to the
shard with the least work so far), which is within 4/3 of the best possible finish
time; ties are broken by case id and then by the lowest shard index.

A case is the unit: base and head of a case always land on the same runner (the gate
pairs them inside one process tree), and a case's repeats are never split. So no
partition can finish sooner than the most expensive case alone.

Costs are seconds per cold process, per case id: measured (``--costs FILE``, read by
``ttfg.history.shard_costs``) or, for a case without a measurement, the built-in
estimate :func:`estimate_s`, from the medians measured on the 2-core VM this project
was built on, which each backend declares (``Backend.costs``, read through ``engines.facts``).
Only their ratios matter for the partition; the absolute numbers only feed the printed expectation.
"""

from __future__ import annotations

import hashlib
import json
import statistics
from dataclasses import dataclass, field
from typing import Iterable, Mapping

from ..errors import UsageError
from ..results.model import MAX_SHARDS

__all__ = ["Partition", "ShardPlan", "ShardSpec", "estimate_s", "parse_spec",
           "partition", "select_shard"]

@dataclass(frozen=True, order=True)
class ShardSpec:
    """``--shard I/N``: the I-th of N shards, counted from 1."""

    index: int
    count: int

    @property
    def label(self) -> str:
        return f"{self.index}/{self.count}"


def parse_spec(text: str) -> ShardSpec:
    """``"2/4"`` -> ``ShardSpec(2, 4)``.

    Raises
    ------
    UsageError
        Unless ``text`` is ``I/N`` with whole numbers, ``N >= 1`` and ``1 <= I <= N``.
    """
    index, slash, count = str(text).strip().partition("/")
    try:
        i, n = int(index), int(count)
    except ValueError:
        raise UsageError(f"shard {text!r} is not I/N (the I-th of N shards, e.g. 2/4)") from None
    if not slash:
        raise UsageError(f"shard {text!r} is not I/N (the I-th of N shards, e.g. 2/4)")
    if not 1 <= n <= MAX_SHARDS:
        raise UsageError(f"shard {text!r}: the number of shards must be at least 1 and at most {MAX_SHARDS}, got {n}")
    if not 1 <= i <= n:
        raise UsageError(f"shard {text!r}: the index must lie between 1 and {n}, got {i}")
    return ShardSpec(i, n)


def estimate_s(case_id: str) -> float:
    """Seconds one cold process of ``case_id`` is expected to take, without a measurement.

    The cost its backend declares for the model's default size (``Backend.costs``: process
    TTFG medians on the 2-core VM); the first-gradient part scaled by the ratio of parameter
    tensors for a sized model (``resnet15:blocks=30``: about twice the work). A model no
    built-in backend declares a cost for is treated as resnet15 scaled by its size; a backend
    without a cost for the model as the median of the built-in backends' for it.
    """
    from .. import engines

    model_text, backend, _ = (case_id.split("/") + ["", ""])[:3]
    model = model_text.partition(":")[0]
    own = engines.facts(backend).costs
    table = _builtin_costs()
    known = model if model in table or model in own else "resnet15"
    if known in own:
        process, grad = own[known].process_s, own[known].first_grad_s
    else:
        row = table[known]
        process = statistics.median(c.process_s for c in row)
        grad = statistics.median(c.first_grad_s for c in row)
    if known != model:
        ratio = _tensors(model_text, _tensors("resnet15", 1)) / _tensors("resnet15", 1)
    elif ":" in model_text:
        ratio = _tensors(model_text, _tensors(model, 1)) / _tensors(model, 1)
    else:
        ratio = 1.0
    return (process - grad) + grad * ratio


def _builtin_costs() -> dict[str, list]:
    """Model name -> the costs the built-in backends declare for it (``Backend.costs``)."""
    from .. import engines

    table: dict[str, list] = {}
    for name in engines.BUILTIN:
        for model, cost in engines.facts(name).costs.items():
            table.setdefault(model, []).append(cost)
    return table


def _tensors(model_text: str, default: int) -> int:
    """Parameter tensors of a (sized) model: a proxy for its graph's size; ``default`` when it cannot be built."""
    from .cases import load_model

    try:
        return len(load_model(model_text).param_specs()) or default
    except Exception:  # noqa: BLE001 (a broken plugin model: its cases are skipped anyway)
        return default


@dataclass
class ShardPlan:
    """One shard: its cases (in the order given) and their expected seconds per round of processes."""

    spec: ShardSpec
    cases: list[str] = field(default_factory=list)
    cost_s: float = 0.0

    def to_json(self) -> dict:
        return {"shard": self.spec.label, "index": self.spec.index, "count": self.spec.count,
                "cases": list(self.cases), "expected_s": self.cost_s}


@dataclass
class Partition:
    """Every shard of one split, and where each case's cost came from."""

    shards: list[ShardPlan]
    costs: dict[str, float]
    #: case id -> ``measured`` or ``estimate``.
    sources: dict[str, str]

    @property
    def count(self) -> int:
        return len(self.shards)

    @property
    def digest(self) -> str:
        """A short hash of which case goes where: equal on every runner that cut the same partition."""
        text = json.dumps([sorted(s.cases) for s in self.shards], separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @property
    def makespan_s(self) -> float:
        """The expected seconds of the busiest shard: the whole run's wall time, per round."""
        return max((s.cost_s for s in self.shards), default=0.0)

    @property
    def total_s(self) -> float:
        return sum(s.cost_s for s in self.shards)

    def shard(self, spec: ShardSpec) -> ShardPlan:
        if spec.count != self.count:
            raise UsageError(f"shard {spec.label} does not belong to a partition into {self.count} shards")
        return self.shards[spec.index - 1]

    def matrix(self) -> dict:
        """A GitHub Actions ``strategy.matrix``: one job per shard, with its label, index and case count."""
        return {"include": [{"shard": s.spec.label, "index": s.spec.index, "cases": len(s.cases)}
                            for s in self.shards]}

    def to_json(self) -> dict:
        return {"format": "ttfg-shards", "version": 1, "count": self.count, "partition": self.digest,
                "expected_total_s": self.total_s, "expected_wall_s": self.makespan_s,
                "shards": [s.to_json() for s in self.shards], "matrix": self.matrix(),
                "sources": {k: self.sources[k] for k in sorted(self.sources)}}


def partition(case_ids: Iterable[str], count: int, costs: Mapping[str, float] | None = None) -> Partition:
    """Split ``case_ids`` into ``count`` shards by expected cost (longest processing time first).

    Parameters
    ----------
    case_ids : iterable of str
        The cases to split; the order does not matter (the result is the same for any order).
    count : int
        Number of shards, at least 1. More shards than cases leaves some empty.
    costs : mapping of str to float, or None
        Measured seconds per cold process by case id; cases missing from it (or with a
        value that is not a positive number) get :func:`estimate_s`.

    Returns
    -------
    Partition
        Each shard's cases in the order of ``case_ids``.
    """
    if not 1 <= count <= MAX_SHARDS:
        raise UsageError(f"the number of shards must be at least 1 and at most {MAX_SHARDS}, got {count}")
    ids = list(dict.fromkeys(case_ids))
    measured = dict(costs or {})
    cost, sources = {}, {}
    for cid in ids:
        value = measured.get(cid)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 and value != float("inf"):
            cost[cid], sources[cid] = float(value), "measured"
        else:
            cost[cid], sources[cid] = estimate_s(cid), "estimate"
    shards = [ShardPlan(ShardSpec(i + 1, count)) for i in range(count)]
    members: list[set[str]] = [set() for _ in range(count)]
    for cid in sorted(ids, key=lambda c: (-cost[c], c)):
        target = min(range(count), key=lambda i: (shards[i].cost_s, i))
        shards[target].cost_s += cost[cid]
        members[target].add(cid)
    for plan, chosen in zip(shards, members):
        plan.cases = [c for c in ids if c in chosen]
    return Partition(shards, cost, sources)


def select_shard(universe: Iterable[str], cases: list, skipped: list, spec: ShardSpec,
                 costs: Mapping[str, float] | None = None) -> tuple[list, list, Partition]:
    """The cases and skips of shard ``spec``, and the partition they come from.

    Parameters
    ----------
    universe : iterable of str
        Every case id of the selection, whether or not its backend is available on this
        runner (``select(..., check_availability=False)``): every runner must cut the
        same partition, and a runner without jax must not shift jax's cases elsewhere.
    cases, skipped : list
        The selection on this runner (``ttfg.measure.cases.select``).
    spec : ShardSpec
    costs : mapping or None
        Measured seconds per case id.

    Returns
    -------
    (cases, skipped, partition)
        The shard's runnable cases; its skips (its cases unavailable here, and on shard 1
        only, the combinations no backend supports, so that they are listed once).
    """
    ids = list(universe)
    plan = partition(ids, spec.count, costs)
    mine = set(plan.shard(spec).cases)
    known = set(ids)
    shard_cases = [c for c in cases if c.id in mine]
    shard_skipped = [s for s in skipped if s.id in mine or (s.id not in known and spec.index == 1)]
    return shard_cases, shard_skipped, plan
