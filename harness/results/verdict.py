"""A comparison's outcome as data: the :class:`Verdict`, both sides' :class:`Summary`, the :class:`FailureTest`
and a compared :class:`Row`, each written by ``to_json`` and read back by ``from_json``.

Why here, below ``decide/``: the statistics (``decide/stats``) compute these, and ``gate.json`` holds them. The
gate's outcome (``gate_outcome.py``, in this layer) used to keep a plain copy of each (``VerdictData``,
``SummaryData``, ``FailureData``, ``ChangeData``) with the same fields and the same JSON, because ``results/``
may not import ``decide/``; two definitions of one record drift apart. Now there is one, here: ``decide/stats``
and ``decide/compare`` build these same classes, and a verdict read back from ``gate.json`` is the type the
gate decided with.

A number that could not be estimated is NaN in memory and ``null`` in the file (``format.strict_json``);
:func:`record` reads ``null`` back as NaN, so a record read and written again gives the same JSON.
"""

from __future__ import annotations

import math
from dataclasses import MISSING, asdict, dataclass, fields
from typing import Any, ClassVar

from .format import strict_json

__all__ = ["FailureTest", "Record", "Row", "Summary", "VERDICTS", "Verdict", "record", "to_json"]

#: The four verdicts of a comparison.
VERDICTS = ("regressed", "improved", "unchanged", "inconclusive")

#: What a field the file lacks reads as, by its declared type (a version-1 ``gate.json`` wrote fewer fields).
_ABSENT = {"float": math.nan, "int": 0, "bool": False, "str": ""}


def to_json(obj) -> dict:
    """A record's fields as plain JSON: NaN becomes ``None``."""
    return {k: strict_json(v) for k, v in asdict(obj).items()}


def record(cls, data: dict | None, **absent):
    """A record of ``cls`` from its JSON (checked by the file's reader): a float's ``null`` as NaN, a field the
    file lacks as its default (``absent``, else the field's own, else by its type: NaN, 0, False, "")."""
    data = data or {}
    kwargs = {}
    for f in fields(cls):
        if f.name in data:
            value = data[f.name]
            kwargs[f.name] = math.nan if value is None and f.type == "float" else value
        elif f.name in absent:
            kwargs[f.name] = absent[f.name]
        elif f.default is MISSING and f.default_factory is MISSING:
            kwargs[f.name] = _ABSENT.get(str(f.type))
    return cls(**kwargs)


class Record:
    """A dataclass written as its fields (:func:`to_json`) and read back by :func:`record`; ``ABSENT`` names what a
    field the file lacks reads as, where its type's default would be wrong."""

    ABSENT: ClassVar[dict[str, Any]] = {}

    def to_json(self) -> dict:
        """Plain dict for result files; NaN becomes ``None``."""
        return to_json(self)

    @classmethod
    def from_json(cls, data: dict | None):
        return record(cls, data, **cls.ABSENT)


@dataclass
class Summary(Record):
    """Descriptive statistics of one sample set (NaN samples ignored).

    ``cv`` is ``std(ddof=1) / mean``, NaN when fewer than two samples remain; with
    no samples every float field is NaN.
    """

    n: int
    median: float
    mean: float
    min: float
    max: float
    cv: float


@dataclass
class Verdict(Record):
    """The outcome of one base/head comparison.

    ``ratio`` is head over base (geometric), so ``ratio > 1`` means head is slower
    or bigger; ``ci_low``/``ci_high`` bound it at ``1 - alpha`` (two-sided).
    ``p_value`` is NaN for counters. For paired comparisons ``n_base == n_head`` is
    the number of complete pairs. ``reason`` says in one sentence why.

    The fields after ``reason`` exist for timing tests (NaN / False elsewhere):
    ``margin`` is the minimum effect ``m`` that applied; ``eq_low``/``eq_high`` the
    ``1 - 2 alpha`` interval the two one-sided tests amount to and ``tost_p`` their
    p-value (the larger of the two); ``equivalent`` is True when they showed the
    ratio within ``[1/(1+m), 1+m]``. ``detectable`` is, for an inconclusive verdict
    at the end of its test, the smallest slowdown (0.05 = 5 %) this test would have
    flagged as regressed with 95 % power at the noise it measured, and
    ``detectable_high`` the same at the upper end of the noise's 95 % interval.
    """

    verdict: str
    ratio: float
    ci_low: float
    ci_high: float
    p_value: float
    n_base: int
    n_head: int
    method: str
    reason: str
    margin: float = math.nan
    eq_low: float = math.nan
    eq_high: float = math.nan
    tost_p: float = math.nan
    equivalent: bool = False
    detectable: float = math.nan
    detectable_high: float = math.nan
    #: The words a file stored beside the verdict (``present/verdicts.verdict_label`` of the ttfg that wrote
    #: ``gate.json``), kept so that the file is written back as it was read; None for a verdict just computed,
    #: and then not written (the gate's presenter adds the label when it writes ``gate.json``).
    label: str | None = None

    ABSENT: ClassVar[dict[str, Any]] = {"verdict": "inconclusive"}

    def to_json(self) -> dict:
        """Plain dict for result files; NaN becomes ``None``; the label only where one was read."""
        data = to_json(self)
        if self.label is None:
            del data["label"]
        return data


@dataclass(frozen=True)
class FailureTest(Record):
    """Did head fail significantly more often than base? (Fisher's exact test, one-sided.)"""

    base_failed: int
    base_total: int
    head_failed: int
    head_total: int
    p_value: float
    regressed: bool
    reason: str


@dataclass
class Row:
    """One case and metric compared: both sides summarised and the verdict (``decide/compare.py`` makes them; a
    gate keeps those of its counters that changed)."""

    case: str
    metric: str
    #: ``timing`` (test + minimum effect), ``counter`` (threshold) or ``failure`` (a side has no good sample).
    compared_as: str
    #: The minimum effect (timing) or threshold (counter) that applied.
    limit: Any
    base: Summary
    head: Summary
    verdict: Verdict

    def to_json(self) -> dict:
        return {"case": self.case, "metric": self.metric, "compared_as": self.compared_as, "limit": self.limit,
                "base": self.base.to_json(), "head": self.head.to_json(), "verdict": self.verdict.to_json()}

    @classmethod
    def from_json(cls, data: dict) -> "Row":
        return cls(data.get("case") or "", data.get("metric") or "", data.get("compared_as") or "", data.get("limit"),
                   Summary.from_json(data.get("base")), Summary.from_json(data.get("head")),
                   Verdict.from_json(data.get("verdict")))
