"""What ``gate.json`` holds, as one type: a gate's outcome and what its writer added, or a merged gate's shards.

Why a type for the whole file and not only the outcome (``gate_outcome.GateOutcome``): the readers of
``gate.json`` (``ttfg merge gate``, ``ttfg explain``, the report page) need more than the outcome: the exit
code the gate gave (an expectations check can make it 1), the noise floor, the sentence on what passing
means, and for a merged gate the table of its shards. Each reader used to take those from the parsed dict,
and two of them ran the format's migrations themselves. Here the file is read once into a
:class:`GateDocument` (``gate_file.load``, which checks and migrates it first), and every reader takes the
type; :meth:`GateDocument.to_json` writes it back, the same text it was read from.

Three writers, three layouts, one type:

* the gate (``app/gate.py``): the outcome, the expectations check and the exit code, then what it adds
  (``added``: noise, budget warnings, passing means, footer, environments, ...), in the order it adds them;
* a bisect's comparison (``app/bisect.py``): the outcome, the expectations (none) and the exit code;
* ``ttfg merge gate`` (``decide/merge_gate.py``): the merged outcome around the shards' table
  (:class:`MergedShards`), in the order that has always had.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from .gate_outcome import FORMAT, VERSION, GateOutcome
from .model import NoiseFloor
from .validate import noise_from_json

__all__ = ["GateDocument", "MergedShards", "ShardRow", "document"]

#: The merged gate's own keys.
MERGED_KEYS = ("merged", "count", "partition", "shards", "notes")
#: The keys the outcome and the document write; every other key is one the writer added (``GateDocument.added``).
OWN_KEYS = frozenset({"format", "version", "base", "head", "settings", "elapsed_s", "exit_code", "files", "cases",
                      "skipped", "shard", "fingerprint", "acceptances", "expectations", *MERGED_KEYS})


@dataclass
class ShardRow:
    """One shard of a merged gate: where its output was, and whether it finished."""

    #: ``2/3``
    shard: str
    file: str | None
    cases: int | None
    #: ``ok`` (exit 0 or 1), ``failed`` (exit 2, or the gate did not finish) or ``missing`` (no output given).
    status: str
    detail: str
    exit_code: int | None
    #: A shard whose gate finished: its time, its violated expectations and its runner's noise floor.
    finished: bool = False
    elapsed_s: float | None = None
    expectation_failures: list[dict] = field(default_factory=list)
    noise: NoiseFloor | None = None

    def to_json(self) -> dict:
        out = {"shard": self.shard, "file": self.file, "cases": self.cases, "status": self.status,
               "detail": self.detail, "exit_code": self.exit_code}
        if self.finished:
            out.update(elapsed_s=self.elapsed_s, expectation_failures=list(self.expectation_failures),
                       noise=None if self.noise is None else self.noise.to_json())
        return out

    @classmethod
    def from_json(cls, data: dict, path: str | os.PathLike, where: str) -> "ShardRow":
        finished = "expectation_failures" in data
        return cls(data["shard"], data.get("file"), data.get("cases"), data["status"], data.get("detail") or "",
                   data.get("exit_code"), finished, data.get("elapsed_s"), list(data.get("expectation_failures") or []),
                   noise_from_json(data.get("noise"), path, f"{where}.noise"))


@dataclass
class MergedShards:
    """What a merged gate holds besides the merged outcome: the partition, each shard's row, the merge's notes."""

    count: int
    partition: str
    shards: list[ShardRow]
    notes: list[str] = field(default_factory=list)


@dataclass
class GateDocument:
    """Everything one ``gate.json`` holds."""

    #: None only in a merged gate none of whose shards finished: there is no outcome, only the shards' table.
    outcome: GateOutcome | None
    #: The exit code the gate gave: the outcome's, or 1 for a violated expectation, or the merge's worst.
    exit_code: int
    #: The expectations check (``decide/expect.ExpectationCheck.to_json``), None when none ran.
    expectations: dict | None = None
    #: What the writer added after the outcome, by name and in its order (``noise``, ``passing_means``,
    #: ``footer``, ``environments``, ...), kept as written; ``noise`` is read back as a :class:`NoiseFloor`.
    added: dict[str, Any] = field(default_factory=dict)
    #: A merged gate's shards (``ttfg merge gate``), None for one gate's.
    merged: MergedShards | None = None

    @property
    def noise(self) -> NoiseFloor | None:
        """The noise floor the gate recorded, None when it recorded none."""
        return self.added.get("noise")

    @property
    def passing_means(self) -> str:
        return self.added.get("passing_means") or ""

    def to_json(self) -> dict:
        added = {k: v.to_json() if isinstance(v, NoiseFloor) else v for k, v in self.added.items()}
        if self.merged is None:
            return {**self.outcome.to_json(), "expectations": self.expectations, "exit_code": self.exit_code,
                    **added}
        out = self.outcome.to_json() if self.outcome is not None else {}
        m = self.merged
        return {"format": FORMAT, "version": VERSION, "merged": True, "count": m.count, "partition": m.partition,
                "base": out.get("base"), "head": out.get("head"), "settings": out.get("settings"),
                "exit_code": self.exit_code, "elapsed_s": out.get("elapsed_s", 0.0),
                "shards": [s.to_json() for s in m.shards], "cases": out.get("cases", []),
                "skipped": out.get("skipped", []), "expectations": self.expectations,
                "fingerprint": out.get("fingerprint"), "notes": list(m.notes), "files": out.get("files", {}),
                **({"acceptances": out["acceptances"]} if "acceptances" in out else {}), **added}

    @classmethod
    def from_json(cls, data: dict, path: str | os.PathLike = "gate.json") -> "GateDocument":
        """A checked, migrated document (``gate_file.load``) as its type."""
        merged = None
        if data.get("merged"):
            merged = MergedShards(data["count"], data["partition"],
                                  [ShardRow.from_json(s, path, f"shards[{i}]") for i, s in enumerate(data["shards"])],
                                  list(data.get("notes") or []))
        added = {k: v for k, v in data.items() if k not in OWN_KEYS}
        if "noise" in added:
            added["noise"] = noise_from_json(added["noise"], path)
        return cls(GateOutcome.from_json(data, path), data["exit_code"], data.get("expectations"), added, merged)


def document(outcome: GateOutcome, check=None, exit_code: int | None = None, **added) -> dict:
    """``gate.json``'s document: the outcome, the expectations check (or None), the exit code the gate gave (the
    outcome's by default) and what the writer adds (``added``, in its order)."""
    return GateDocument(outcome, outcome.exit_code() if exit_code is None else exit_code,
                        None if check is None else check.to_json(), added).to_json()
