"""Shards' results files into one, as if one runner had measured every case.

Why strict: a merged file is read later as one run, by compare, the report and
expectations. A case measured twice, a shard missing, shards of different commits or
partitions, or shards measured on different machines would each make it claim
something no run measured. So every such input is refused with the files named
(:class:`MergeError`, exit 2) before anything is written; different machines may be
merged with ``force``, and the merged file then says so and carries no fingerprint.

What must agree between shards: the partition (count and digest: the same selection,
N and costs), the revision (the checkout's commit for ``ttfg run``; role and commit
for a gate's base.json or head.json), the settings (the checkout's path aside), and
the machine fingerprint. Each shard must be complete (an interrupted shard has lost
cases), hold every case of its own shard (checked against the shard's own list: the
partition's ``all_cases`` is optional, and a check against it alone passed a shard
that lost one of its cases) and only those, and together they must hold every case of
the partition. The merged cases keep the selection's order.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import TtfgError
from .format import differing
from .machines import check_machines
from .model import Results

__all__ = ["MergeError", "merge_results", "shard_problems"]

#: Settings that legitimately differ between runners: where the checkout and the interpreter are.
LOCAL_SETTINGS = ("source", "python")


class MergeError(TtfgError):
    """Shard outputs that cannot be merged into one; the message names the files (exit 2)."""


def _name(res: Results) -> str:
    return str(res.path) if res.path else "<results>"


def _revision(res: Results) -> tuple:
    if res.gate is not None:
        return (res.gate.role, res.gate.commit)
    git = res.environment.get("git") or {}
    return ("checkout", git.get("commit"))


def _settings(res: Results) -> dict:
    return {k: v for k, v in res.settings.items() if k not in LOCAL_SETTINGS}


def shard_problems(labelled: list[tuple[str, "object"]]) -> tuple[list[str], int | None, list[int]]:
    """Partition checks shared by every kind of merge.

    Parameters
    ----------
    labelled : list of (file name, ShardSection or None)

    Returns
    -------
    (problems, count, missing)
        Problems that make the inputs unmergeable (files named), the shard count, and
        the shard indexes no input covers.
    """
    problems: list[str] = []
    for name, shard in labelled:
        if shard is None:
            problems.append(f"{name} is not a shard's output (it has no shard section: measure with --shard I/N)")
    shards = [(name, s) for name, s in labelled if s is not None]
    if not shards:
        return problems, None, []
    first_name, first = shards[0]
    for name, s in shards[1:]:
        if (s.count, s.partition) != (first.count, first.partition):
            problems.append(f"{first_name} is shard {first.label} of partition {first.partition} but {name} is "
                            f"shard {s.label} of partition {s.partition}: cut from different selections, shard "
                            "counts or --costs")
    seen: dict[int, str] = {}
    for name, s in shards:
        if s.index in seen:
            problems.append(f"{seen[s.index]} and {name} are both shard {s.label}")
        seen.setdefault(s.index, name)
    missing = [i for i in range(1, first.count + 1) if i not in seen]
    return problems, first.count, missing


def merge_results(files: list[Results], force: bool = False) -> tuple[Results, list[str]]:
    """One results file from every shard's file.

    Parameters
    ----------
    files : list of Results
        Loaded shard files (``record.load``), one per shard, any order.
    force : bool
        Merge files from different machines; the notes (and the merged environment) say so.

    Returns
    -------
    (Results, notes)
        The merged results (no shard section, the shards listed in
        ``environment["shards"]``) and notes for the output.

    Raises
    ------
    MergeError
        Naming the files: not shard outputs, different partitions, duplicate or missing
        shards, incomplete shards, a case in two files or outside its shard, different
        revisions or settings. ``MachineMismatch`` for different machines (unless ``force``).
    """
    if not files:
        raise MergeError("nothing to merge: no results files given")
    problems, count, missing = shard_problems([(_name(r), r.shard) for r in files])
    if problems:
        raise MergeError("; ".join(problems))
    files = sorted(files, key=lambda r: r.shard.index)
    if missing:
        have = ", ".join(f"{_name(r)} ({r.shard.label})" for r in files)
        raise MergeError(f"shard(s) {', '.join(f'{i}/{count}' for i in missing)} missing; given: {have}")
    first = files[0]
    for res in files[1:]:
        if _revision(res) != _revision(first):
            raise MergeError(f"{_name(first)} measured {'/'.join(map(str, _revision(first)))} but {_name(res)} "
                             f"measured {'/'.join(map(str, _revision(res)))}: shards of different revisions")
        diffs = differing(_settings(first), _settings(res))
        if diffs:
            raise MergeError(f"{_name(first)} and {_name(res)} were measured with different settings: "
                             + ", ".join(diffs))
    for res in files:
        if not res.complete:
            raise MergeError(f"{_name(res)} (shard {res.shard.label}) is incomplete: its run was interrupted or "
                             "is still going, so some of its cases are missing")
    for res in files:  # each shard's own list of cases is its promise, whether or not all_cases was written
        held = {c.id for c in res.cases}
        lost = [cid for cid in res.shard.cases if cid not in held]
        if lost:
            raise MergeError(f"{_name(res)} (shard {res.shard.label}) lost {len(lost)} case(s) of its shard: "
                             f"{', '.join(lost)}")
    notes = check_machines([(_name(r), r.fingerprint) for r in files], "timings", force, action="merge")
    owner: dict[str, str] = {}
    merged_cases = []
    for res in files:
        mine = set(res.shard.cases)
        for case in res.cases:
            if case.id in owner:
                raise MergeError(f"case {case.id} is in both {owner[case.id]} and {_name(res)}")
            if not case.skipped and case.id not in mine:
                raise MergeError(f"{_name(res)} (shard {res.shard.label}) holds case {case.id}, which is not one "
                                 "of its shard's cases")
            owner[case.id] = _name(res)
            merged_cases.append(case)
    universe = next((r.shard.all_cases for r in files if r.shard.all_cases), [])
    if universe:
        lost = [cid for cid in universe if cid not in owner]
        if lost:
            raise MergeError(f"the shards {', '.join(_name(r) for r in files)} lack case(s) of their partition: "
                             + ", ".join(lost))
    place = {cid: i for i, cid in enumerate(universe)}
    # In the selection's order, measured cases first, as one unsharded run writes them.
    merged_cases.sort(key=lambda c: (c.skipped is not None, place.get(c.id, len(place))))
    environment = dict(first.environment)
    environment["shards"] = [{"shard": r.shard.label, "file": _name(r), "hostname": r.environment.get("hostname"),
                              "collected": r.environment.get("collected"),
                              "loadavg_start": r.environment.get("loadavg_start")} for r in files]
    if notes and force:
        environment["merged_across_machines"] = notes
    forced = any(n.startswith("--force") for n in notes)
    merged = Results(environment, dict(first.settings), merged_cases, min(r.created for r in files), True, None,
                     first.gate, first.study, None, None if forced else first.fingerprint,
                     noise=merged_noise([r.noise for r in files]))
    return merged, notes


def merged_noise(floors: list):
    """The shards' noise floors as one: their per-case entries together (each shard estimated its own
    cases; one calibration shared by every shard is kept once). None unless every shard has a floor of
    the same source."""
    if not floors or any(f is None for f in floors) or len({f.source for f in floors}) > 1:
        return None
    entries = {}
    for floor in floors:
        for e in floor.entries:
            entries.setdefault((e.case, e.metric), e)
    notes = list(dict.fromkeys(f.note for f in floors if f.note))
    return replace(floors[0], entries=list(entries.values()), note="; ".join(notes))
