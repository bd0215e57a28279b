"""Accepting an intended regression: ``Ttfg-Accept`` commit trailers, read from the head's commits.

Why: a refactor that makes the compile bigger on purpose (a model that grew, a new check)
failed CI with no way to say "this is intended". PyTorch updates its expectations file in
the pull request; CodSpeed lets a person acknowledge a regression. Here a commit of the pull
request carries a trailer::

    Ttfg-Accept: resnet15*/jax.jit/* instructions* the new check costs 2 % of the compile

``<case-glob> <metric-glob> <reason>``: a case id is ``model/backend/variant`` (``ttfg list``
shows them; a model's parameters are part of its name, ``resnet15:blocks=2``), so ``resnet15*/jax.jit/*``
names every variant of resnet15, at every size, under jax.jit, and
``instructions*`` the window's instruction count and each phase's (the metric that grew most
decides a regression, often a phase: ``instructions_trace``). A regressed
case whose id and deciding metric (``instructions``, ``counters.hlo_ops`` or ``hlo_ops``,
``first_grad_s``, ...) match is *accepted*: the gate exits 0 for it, and every output shows it as
accepted, with the commit's author and the reason. Never silent: a trailer that matches no
regression is reported as unused, one that cannot be read (fewer than three fields) as such, and
one that matched a regression another trailer accepted first as "also matched".

Only a measured change is accepted. A case that rests on a failure -- a head that cannot run
(no good sample: ``unmeasured.py``), a failed sample, a wrong gradient (its sample fails) -- has no
metric a trailer can name, so no trailer accepts it, a wildcard ``* *`` included; the trailer
records it as refused, and the gate still exits 1 or 2.

Which commits: those of the head since its merge base with the base
(``git log base...head``, the head's side only), so a trailer on the base branch accepts nothing.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from pathlib import Path

from .. import metrics
from ..provision.worktrees import git

__all__ = ["TRAILER", "Acceptance", "apply", "parse", "read", "refusal"]

TRAILER = "Ttfg-Accept"
_FIELD, _RECORD = "\x1f", "\x1e"


@dataclass
class Acceptance:
    """One ``Ttfg-Accept`` trailer and the cases it accepted."""

    case: str
    metric: str
    reason: str
    author: str
    commit: str
    used_by: list[str] = field(default_factory=list)
    #: Why the trailer cannot be used (malformed), else None.
    problem: str | None = None
    #: Regressed cases it matched that an earlier trailer accepted first.
    also_matched: list[str] = field(default_factory=list)
    #: Cases it matched that no trailer may accept (a failure, not a measured change), with why.
    refused: dict[str, str] = field(default_factory=dict)

    def matches(self, case_id: str, metric: str | None) -> bool:
        if self.problem or not fnmatch.fnmatchcase(case_id, self.case):
            return False
        if metric is None:
            return self.metric == "*"
        short = metric.removeprefix(metrics.COUNTER_PREFIX)
        return fnmatch.fnmatchcase(metric, self.metric) or fnmatch.fnmatchcase(short, self.metric)

    def to_json(self) -> dict:
        return {"case": self.case, "metric": self.metric, "reason": self.reason, "author": self.author,
                "commit": self.commit, "used_by": list(self.used_by), "problem": self.problem,
                **({"also_matched": list(self.also_matched)} if self.also_matched else {}),
                **({"refused": dict(self.refused)} if self.refused else {})}

    def describe(self) -> str:
        return f"accepted by {self.author} ({self.commit[:10]}): {self.reason}"


def parse(value: str, author: str, commit: str) -> Acceptance:
    """One trailer's value; a value of fewer than three fields is kept with its ``problem`` (reported, never used)."""
    parts = value.strip().split(None, 2)
    if len(parts) < 3:
        return Acceptance(*(parts + ["", "", ""])[:3], author, commit,
                          problem=f"{TRAILER}: {value.strip()!r} needs <case-glob> <metric> <reason>")
    return Acceptance(parts[0], parts[1], parts[2].strip(), author, commit)


def read(repo: str | Path, base: str, head: str) -> list[Acceptance]:
    """Every ``Ttfg-Accept`` trailer of the head's commits since the merge base, oldest first; empty when git cannot
    tell (no common history)."""
    fmt = f"%H{_FIELD}%an <%ae>{_FIELD}%(trailers:key={TRAILER},valueonly,separator=%x1d){_RECORD}"
    done = git(repo, "log", "--reverse", f"--format={fmt}", f"{base}..{head}", check=False)
    if done.returncode != 0:
        return []
    found = []
    for record in done.stdout.split(_RECORD):
        parts = record.strip("\n").split(_FIELD)
        if len(parts) != 3 or not parts[2].strip():
            continue
        commit, author, values = parts
        found += [parse(v, author, commit) for v in values.strip().split("\x1d") if v.strip()]
    return found


def refusal(case) -> str | None:
    """Why no trailer may accept a regressed case (``gate_outcome.CaseOutcome``): it rests on a failure, not on a
    measured change of a metric; None when it may be accepted."""
    from ..results.gate_outcome import BASE_BROKEN, COUNT_BROKEN, HEAD_BROKEN, HEAD_FAILING
    from .unmeasured import side_of

    side = side_of(case)
    if side is not None:
        return f"{side} cannot run (no good sample)"
    if case.stop in (BASE_BROKEN, HEAD_BROKEN, HEAD_FAILING, COUNT_BROKEN):
        return case.stop
    if case.verdict.method in ("failure", "fisher-failures") or case.metric is None:
        return "it regressed by failing, not by a measured metric"
    return None


def apply(cases, acceptances: list[Acceptance]) -> None:
    """Mark each regressed case (``gate_outcome.CaseOutcome``) that a trailer matches as accepted (the first match;
    later matches record it as ``also_matched``); a case that failed (:func:`refusal`) is accepted by none, and
    every trailer whose case glob names it records it as ``refused``."""
    for c in cases:
        if c.verdict.verdict != "regressed":
            continue
        why = refusal(c)
        if why is not None:
            for a in acceptances:
                if not a.problem and fnmatch.fnmatchcase(c.case, a.case):
                    a.refused[c.case] = why
            continue
        matched = [a for a in acceptances if a.matches(c.case, c.metric)]
        if matched:
            first = matched[0]
            first.used_by.append(c.case)
            for a in matched[1:]:
                a.also_matched.append(c.case)
            c.accepted = {k: v for k, v in first.to_json().items()
                          if k not in ("used_by", "problem", "also_matched", "refused")}
