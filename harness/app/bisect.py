"""``ttfg bisect`` as one use case: two revisions -> the first-parent range -> paired steps -> the culprit.

Why: the trend report and a release sweep find a step between two commits; the next
question is which commit. This module resolves the range (``git rev-list --first-parent
good..bad``), compares the ends once (a range whose ends do not differ has no culprit),
then runs the search of ``decide/bisect.py``: each step compares one commit with the
bracket's good end and, when needed, its bad end, each comparison a gate
(``decide.gate_loop.run_gate``: the tiers in order, so a structural counter settles a
step in one pair a side). Sides are opened by the gate's own ``measure.sides.SideOpener``
(its cached path: a commit's install and environment are built once, whatever the number of
comparisons it takes part in).

Revisions: ``--good`` and ``--bad`` are resolved once into ``Revision`` values (name,
commit, subject, author, date), and every commit of the range gets one from the same
``git rev-list``; each comparison, its ``gate.json`` and the report take those values, so
the good end keeps the name the user gave it and every commit its subject.

Counts: the comparisons share one store of count samples (``app/bisect_counts.py``), so a
commit's instruction count is taken once and reused by every later comparison involving
it (the ends take part in every step); each comparison's record says how many count
processes each side had and which came from where. The store is ``counts.json`` beside
the state, so a resumed bisect reuses them too. Across runs, each comparison reads and
fills the gate's count store (``app/gate_baseline.py``, under the gate's key): a base
count kept by an earlier bisect or gate is used only once the head's fresh count agrees
with it, as in the gate (``decide/stored_baseline.py``), so it never decides a step alone.

State: ``bisect.json`` in the output folder is the state and the report; it is replaced
atomically after every step, so Ctrl-C loses at most the step running, a rerun with the
same arguments continues, and a finished bisect is shown again from it without
measuring. It is read back with the page's strict reader (``results.bisect_file``): a
hand-edited or truncated state is refused naming the file and the field. A state of other
revisions, cases, direction or decision settings is refused naming each that differs
(``app/bisect_state.py``: the key, and why a budget may change only before an answer); the
file is never overwritten; so is a ``counts.json`` of another bisect.

Turns: a commit that differs from both ends the opposite ways (slower than the good end,
faster than the bad one: a peak; or the reverse, a dip) is no budget problem. The search
goes on on the side whose step goes its way, and the turn's other side is searched too,
each comparison with its commits swapped (``decide/bisect.py``); the answer is "turn",
exit 1, naming the step into the turn and the step out of it, each with its ``ttfg gate``
command. A case whose structural counters only fell (the gate leaves it to later tiers)
counts as a step the other way here: that is what tells a turn from an undecided commit
when only the counting tiers ran.

Interrupts: Ctrl-C, or SIGTERM (raised as ``errors.Interrupted`` by the CLI's handler),
writes both files, ``summary.md`` too, with status "interrupted" and the signal named; the
worktrees of an earlier run killed outright are removed first (``worktrees.pruned_note``).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ..decide import bisect as search
from ..decide.gate_settings import GateSettings, refuse_unreported
from ..errors import UsageError, signal_name, signals_deferred
from ..files import atomic_write_text, replace_together
from ..measure.sides import SideOpener
from ..measure.runner import run_sample
from ..provision.worktrees import (LOG_FORMAT, GitError, Revision, check_clean, from_log, git, pruned_note,
                                   repo_root, resolve)
from ..results.bisect_file import EXIT, FORMAT, VERSION, load_bisect
from ..results.format import ResultsError, strict_json
from . import bisect_state
from .bisect_compare import (Compare, _Comparer, _attribution, _ratio, _step, _verdict,  # noqa: F401 (tests read
                             counters_only_fell)  # the comparison's pieces here, where the bisect uses them)
from .bisect_counts import CountStore
from .gate_baseline import open_store

if TYPE_CHECKING:
    from ..decide.gate_loop import Sampler
    from ..measure.cases import Case, Skipped

STATE = "bisect.json"
SUMMARY = "summary.md"
#: How a bisect ended (``BisectReport.status``; ``bisect.json``'s ``status``).
FOUND, RANGE, NO_STEP, SWAPPED, UNDECIDED, BROKEN_END, STOPPED, RUNNING, INTERRUPTED, TURN = (
    "found", "range", "no step", "swapped", "undecided", "end cannot run", "stopped", "running", "interrupted", "turn")
# Each status's exit code is ``results.bisect_file.EXIT`` (imported above), where the reader checks a state's
# ``exit_code`` against its status: a culprit (or the commits that hide it) is a finding; no step passes; the rest
# is broken input.


@dataclass
class BisectRequest:
    """Everything one bisect needs; ``settings`` is the gate's, used for every comparison (its budget per one)."""

    repo: Path
    good: str
    bad: str
    cases: "list[Case]"
    settings: GateSettings
    out_dir: Path
    skipped: "list[Skipped]" = field(default_factory=list)
    allow_dirty: bool = False
    envs: str = "auto"
    project_dir: str = ""
    #: Wall time for the whole search, None for no limit (each comparison keeps its own budget).
    total_budget_s: float | None = None
    #: How many more times an unknown commit is compared before it is set aside.
    retries: int = 1
    #: Search for the commit that made things faster (the "good" end slower, the "bad" one faster).
    improvement: bool = False
    #: The words used to repeat the command (``ttfg gate ...`` and ``ttfg bisect ...``): the selection and budget.
    repro_args: list[str] = field(default_factory=list)
    #: Read and fill the count store the gate keeps (``app/gate_baseline.py``): each comparison's base counts are
    #: looked up there under the gate's key and verified by its head's fresh count, and its fresh counts kept.
    count_store: bool = True


class BisectEvents:
    """What the bisect tells while it runs; the CLI prints it."""

    def note(self, text: str) -> None:
        """A line of progress (a side installed, a tier's finding)."""

    def step(self, commit: str, probe: search.Probe, index: int, total: int) -> None:
        """A commit was classified."""


@dataclass
class BisectReport:
    """What the bisect came to: ``document`` is ``bisect.json``'s, ``summary`` is ``summary.md``."""

    code: int
    status: str
    document: dict
    summary: str = ""
    files: dict[str, Path] = field(default_factory=dict)
    #: True when the answer was read from a finished state, nothing measured.
    from_state: bool = False


# ---------------------------------------------------------------------------- git


def _resolve_both(repo: Path, good: str, bad: str) -> tuple[Revision, Revision]:
    """Both revisions, or one error naming every one that does not exist."""
    found, missing = {}, []
    for role, name in (("--good", good), ("--bad", bad)):
        try:
            found[role] = resolve(repo, name, role)
        except GitError:
            missing.append(f"{role} {name!r}")
    if missing:
        raise GitError(f"revision{'s' if len(missing) > 1 else ''} not found in {repo}: {', '.join(missing)} "
                       "(fetch them first, or check the spelling; a shallow clone needs its full history)")
    return found["--good"], found["--bad"]


def _refuse_dirty(repo: Path, revs: tuple[Revision, Revision], allow_dirty: bool) -> None:
    """As the gate refuses it: a checked-out end with uncommitted changes would be measured without them."""
    if allow_dirty:
        return
    checked_out = resolve(repo, "HEAD", "checked-out")
    if any(r.commit == checked_out.commit for r in revs):
        check_clean(repo, f"an end of the range is the checked-out commit ({checked_out.short})")


@dataclass
class Range:
    """The commits a bisect walks: the good end first, then bad's first-parent line back to it, each a Revision
    (the ends as the user named them, the others by their short hash, every one with its subject)."""

    revisions: list[Revision]
    #: Merge commits on the line (each tested as one commit; its branch is not walked).
    merges: list[str]

    @property
    def commits(self) -> list[str]:
        """The commits alone, in order: what the search (``decide/bisect.py``) and ``bisect.json`` hold."""
        return [r.commit for r in self.revisions]

    def revision(self, commit: str) -> Revision:
        """The walk's Revision of ``commit``."""
        return next(r for r in self.revisions if r.commit == commit)


def first_parent_range(repo: Path, good: Revision, bad: Revision) -> Range:
    """``good`` then ``git rev-list --first-parent --reverse good..bad``, ending with ``bad`` itself.

    Raises
    ------
    UsageError
        When ``good`` is not an ancestor of ``bad`` (naming which way round they are).
    """
    if good.commit == bad.commit:
        return Range([good], [])
    if git(repo, "merge-base", "--is-ancestor", good.commit, bad.commit, check=False).returncode != 0:
        other = git(repo, "merge-base", "--is-ancestor", bad.commit, good.commit, check=False).returncode == 0
        raise UsageError(f"--good {good.name} ({good.short}) is not an ancestor of --bad {bad.name} ({bad.short})"
                         + ("; --bad is the older one: swap them (to find where it got faster, --improvement)"
                            if other else ": they are on different lines of history"))
    # Two lines a commit: "commit HASH PARENT..." (a merge has more than one parent), then its subject, author, date.
    lines = git(repo, "rev-list", "--first-parent", "--reverse", "--parents", f"--format={LOG_FORMAT}",
                f"{good.commit}..{bad.commit}").stdout.split("\n")
    revisions, merges = [good], []
    for header, text in zip(lines[0::2], lines[1::2]):
        parts = header.split()[1:]
        revisions.append(from_log(parts[0][:10], parts[0], text))
        if len(parts) > 2:
            merges.append(parts[0])
    revisions[-1] = bad
    return Range(revisions, merges)


# ---------------------------------------------------------------------------- state


def load_state(path: Path) -> dict | None:
    """The saved state, None when there is none; read with ``bisect.json``'s strict reader (``load_bisect``).

    Raises
    ------
    ResultsError
        A state that cannot be read, or a field that is wrong (a hand-edited or truncated file), naming the file and
        the field; it is left as it is.
    """
    if not path.exists():
        return None
    left = "; it was left as it is: move it away, or choose another --out-dir"
    try:
        doc = load_bisect(path)
    except ResultsError as exc:
        raise ResultsError(f"{exc}{left}") from None
    if not isinstance(doc.get("key"), dict):
        raise ResultsError(f"{path}: key: expected the bisect's key (an object), got "
                           f"{type(doc.get('key')).__name__ if 'key' in doc else 'nothing'}{left}")
    for i, p in enumerate(doc.get("probes") or []):
        try:
            search.Probe.from_json(p)
        except (KeyError, TypeError, ValueError) as exc:
            raise ResultsError(f"{path}: probes[{i}]: not a step ({type(exc).__name__}: {exc}){left}") from None
    return doc


def _save(out_dir: Path, doc: dict, summary: str | None = None) -> dict[str, Path]:
    doc = strict_json(doc)
    files = {"state": out_dir / STATE}
    text = json.dumps(doc, indent=1, allow_nan=False) + "\n"
    if summary is None:
        atomic_write_text(files["state"], text)
    else:
        files["summary"] = out_dir / SUMMARY
        replace_together({files["state"]: text, files["summary"]: summary})
    return files


def run(request: BisectRequest, events: BisectEvents | None = None, clock: Callable[[], float] = time.monotonic,
        compare: Compare | None = None, sampler: "Sampler" = run_sample,
        opener: SideOpener | None = None) -> BisectReport:
    """Find the commit where the step between ``request.good`` and ``request.bad`` happened; write the outputs.

    ``sampler`` takes the default comparison's samples (``run_sample``; a fake one in tests of the count reuse); the
    counts go through the bisect's store (``app/bisect_counts.py``), kept in ``counts.json`` for a rerun. ``opener``
    opens each comparison's sides (default: ``SideOpener``; a test's has folders for sides).

    Raises
    ------
    TtfgError
        Broken input, before anything is measured: a guarded timing no selected case reports, a revision that
        does not exist (all are named), a dirty tree, ends in the wrong order, an unreadable or foreign state
        file (``bisect.json``, ``counts.json``).
    """
    events = events or BisectEvents()
    refuse_unreported(request.settings, request.cases)
    repo = repo_root(request.repo)
    good, bad = _resolve_both(repo, request.good, request.bad)
    _refuse_dirty(repo, (good, bad), request.allow_dirty)
    walk = first_parent_range(repo, good, bad)
    request.out_dir.mkdir(parents=True, exist_ok=True)
    path = request.out_dir / STATE
    key = bisect_state.key(request, good.commit, bad.commit)
    doc = load_state(path)
    effort_notes = [] if doc is None else bisect_state.check(path, doc, key)
    if doc is not None and doc.get("status") not in bisect_state.UNFINISHED:
        return BisectReport(EXIT[doc["status"]], doc["status"], doc, _summary(doc),
                            {"state": path, "summary": request.out_dir / SUMMARY}, from_state=True)
    for line in effort_notes:
        events.note(line)
    if (pruned := pruned_note(repo)) is not None:  # an earlier run killed outright left its worktrees
        events.note(pruned)
    store = open_store(request.settings)[0] if request.count_store else None  # a bad cap: refused before any count
    counts_key = bisect_state.counts_key(key)
    counts = (CountStore.fresh(request.out_dir, counts_key) if doc is None
              else CountStore.resume(request.out_dir, counts_key))
    if doc is None:
        doc = {"format": FORMAT, "version": VERSION, "key": key, "status": RUNNING, "exit_code": 2,
               "good": {**good.described(), "rev": good.name},
               "bad": {**bad.described(), "rev": bad.name},
               "improvement": request.improvement, "first_parent": True,
               "commits": walk.commits, "merges": walk.merges, "cases": [c.id for c in request.cases],
               "skipped_cases": [{"case": s.id, "reason": s.reason} for s in request.skipped],
               "settings": {"tiers": list(request.settings.tiers), "budget_s": request.settings.budget_s,
                            "total_budget_s": request.total_budget_s, "retries": request.retries},
               "repro_args": request.repro_args, "ends": None, "step_cases": None, "probes": [], "turns": [],
               "elapsed_s": 0.0}
    if doc.get("status") in (UNDECIDED, BROKEN_END):  # a rerun (more budget, a fixed end) tries again
        if doc["ends"] is not None and search.ends(doc["ends"]["verdict"]) == search.ENDS_UNKNOWN:
            doc.setdefault("set_aside", []).append(doc["ends"])
            doc["ends"] = None
        doc.setdefault("set_aside", []).extend(p for p in doc["probes"] if p["state"] == search.UNKNOWN)
        doc["probes"] = [p for p in doc["probes"] if p["state"] != search.UNKNOWN]
        for turn in doc.get("turns") or []:
            doc["set_aside"].extend(p for p in turn["probes"] if p["state"] == search.UNKNOWN)
            turn["probes"] = [p for p in turn["probes"] if p["state"] != search.UNKNOWN]
            for stale in ("answer", "step", "candidates", "repro", "command"):
                turn.pop(stale, None)
        for stale in ("answer", "culprit", "candidates", "repro", "others", "why", "more_time"):
            doc.pop(stale, None)
    doc["key"] = key  # the effort settings a rerun may change (bisect_state.EFFORT) are this run's
    doc["settings"] = {"tiers": list(request.settings.tiers), "budget_s": request.settings.budget_s,
                       "total_budget_s": request.total_budget_s, "retries": request.retries}
    doc["resumed"] = bool(doc["probes"]) or doc["ends"] is not None
    started, spent_before = clock(), float(doc.get("elapsed_s") or 0.0)
    compare = compare or _Comparer(request, repo, events, clock, counts, sampler, opener, store)
    cases_by_id = {c.id: c for c in request.cases}

    def save(final: bool = False) -> None:
        doc["elapsed_s"] = spent_before + clock() - started
        _save(request.out_dir, doc, _summary(doc) if final else None)

    try:
        if len(walk.commits) < 2:
            return _finish(doc, NO_STEP, request, walk, save, "--good and --bad are the same commit")
        if doc["ends"] is None:
            events.note(f"comparing the ends: {good.short} (good) and {bad.short} (bad), "
                        f"{len(walk.commits) - 1} commit(s) apart")
            doc["ends"] = compare(good, bad, "ends", request.out_dir / "steps" / "ends", request.cases, None)
            save()
        ends = doc["ends"]
        meaning = search.ends(ends["verdict"])
        if meaning == search.ENDS_UNKNOWN and ends["cases"] and all(
                c.get("metric_verdict") == search.IMPROVED for c in ends["cases"]):
            meaning = search.ENDS_SWAPPED  # the gated timing is faster though another guard is not yet known
        if ends["verdict"] == search.BROKEN:
            return _finish(doc, BROKEN_END, request, walk, save, ends.get("error") or "an end could not be measured")
        if meaning == search.ENDS_SAME:
            return _finish(doc, NO_STEP, request, walk, save, "the ends do not differ")
        if meaning == search.ENDS_SWAPPED:
            return _finish(doc, SWAPPED, request, walk, save, "the bad end is faster than the good one")
        if meaning == search.ENDS_UNKNOWN:
            doc["more_time"] = search.more_time_helps([c.get("stop") or "" for c in ends["cases"]
                                                       if c.get("verdict") not in (search.REGRESSED, search.UNCHANGED)])
            return _finish(doc, UNDECIDED, request, walk, save,
                           "the budget could not tell whether the ends differ" if doc["more_time"]
                           else "the selected tiers could not tell whether the ends differ")
        if doc["step_cases"] is None:
            doc["step_cases"] = [c["case"] for c in ends["cases"] if c["verdict"] == search.REGRESSED]
        step_cases = set(doc["step_cases"])
        cases = [cases_by_id[c] for c in doc["step_cases"] if c in cases_by_id]
        probes = {p.commit: p for p in map(search.Probe.from_json, doc["probes"])}
        while (commit := search.next_commit(walk.commits, probes, request.retries)) is not None:
            if request.total_budget_s is not None and clock() - started >= request.total_budget_s:  # this run's
                return _finish(doc, STOPPED, request, walk, save, "the total budget is spent; rerun to continue")
            b = search.bracket(walk.commits, probes)
            lo, hi = walk.revisions[b.lo], walk.revisions[b.hi]
            previous = probes.get(commit)
            attempt = previous.attempts + 1 if previous else 1
            n = len(doc["probes"]) + 1
            folder = request.out_dir / "steps" / f"{n + len(doc.get('set_aside', [])):02d}-{commit[:10]}"
            state, evidence, vs_good, vs_bad = _step(compare, request.settings.tiers, lo, walk.revision(commit), hi,
                                                     folder, cases, step_cases)
            counts_as = None
            if state == search.BETWEEN:
                counts_as = search.larger_side(_ratio(vs_good), _ratio(vs_bad))
            if state == search.TURN:
                shape = search.turn_shape(vs_good["verdict"])
                counts_as = search.turn_counts_as(shape)
                at = walk.commits.index(commit)
                side = search.turn_range(walk.commits, at, b.lo, b.hi, shape)
                doc.setdefault("turns", []).append({"commit": commit, "shape": shape, "good": side[0],
                                                    "bad": side[-1], "probes": []})
            reason = next((e["error"] for e in evidence if e.get("error")), "") if state == search.SKIPPED else ""
            probe = search.Probe(commit, state, attempt, counts_as, evidence, reason)
            probes[commit] = probe
            doc["probes"].append(probe.to_json())
            events.step(commit, probe, n, search.most_steps(len(walk.commits)))
            save()
        for turn in doc.get("turns") or []:  # each turn's other step: a reverse search over its other side
            if turn.get("answer") is None and _reverse_search(turn, doc, request, walk, compare, cases, step_cases,
                                                              events, clock, started, save):
                return _finish(doc, STOPPED, request, walk, save, "the total budget is spent; rerun to continue")
        answer = search.answer(walk.commits, probes, request.retries)
        doc["answer"] = {"status": answer.status, "candidates": answer.candidates, "good": answer.good,
                         "bad": answer.bad, "others": [list(o) for o in answer.others], "skipped": answer.skipped,
                         "unknown": answer.unknown}
        if answer.status == search.FOUND:
            if doc.get("culprit_evidence") is None:
                at = walk.commits.index(answer.culprit)
                parent, culprit = walk.revisions[at - 1], walk.revisions[at]
                events.note(f"the culprit {culprit.short} against its parent {parent.short}, with the attribution")
                doc["culprit_evidence"] = compare(parent, culprit, "parent", request.out_dir / "steps" / "culprit",
                                                  cases, step_cases, profiles=True)
                save()
            return _finish(doc, TURN if doc.get("turns") else FOUND, request, walk, save, "")
        if set(answer.candidates) & set(answer.unknown):
            doc["more_time"] = _more_time_helps(doc, answer.unknown)
            return _finish(doc, UNDECIDED, request, walk, save,
                           "the per-step budget could not decide every commit the culprit can be" if doc["more_time"]
                           else "the selected tiers left a commit the culprit can be unsettled, and a larger budget "
                                "would not settle it")
        return _finish(doc, RANGE, request, walk, save, "untestable commits hide the culprit")
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (cli/__init__.py raises Interrupted for it)
        with signals_deferred():  # a second signal does not cut the two files short
            doc["status"], doc["exit_code"] = INTERRUPTED, EXIT[INTERRUPTED]
            doc["why"] = f"interrupted by {signal_name(exc)}"
            save(final=True)
        return BisectReport(EXIT[INTERRUPTED], INTERRUPTED, doc, _summary(doc),
                            {"state": path, "summary": request.out_dir / SUMMARY})


def _finish(doc: dict, status: str, request: BisectRequest, walk: Range, save, why: str) -> BisectReport:
    """Record the end (the culprit's details, from the walk's Revisions, and the repro command when there is one),
    save both files."""
    doc["status"], doc["exit_code"], doc["why"] = status, EXIT[status], why
    answer = doc.get("answer")
    if status in (FOUND, TURN, RANGE, UNDECIDED) and answer:
        commits = doc["commits"]
        culprit = answer["candidates"][-1] if status == RANGE else answer["candidates"][0]
        first = answer["candidates"][0]
        parent = commits[commits.index(first) - 1]
        doc["culprit"] = ({**walk.revision(culprit).described(), "parent": parent} if status in (FOUND, TURN)
                          else None)
        doc["candidates"] = [walk.revision(c).described() for c in answer["candidates"]]
        args = " ".join(doc.get("repro_args") or [])
        doc["repro"] = f"ttfg gate --base {parent[:12]} --head {culprit[:12]}" + (f" {args}" if args else "")
        doc["others"] = [{"good": g, "bad": b, "command": _bisect_command(g, b, doc)} for g, b in answer["others"]]
    save(final=True)
    return BisectReport(doc["exit_code"], status, doc, _summary(doc),
                        {"state": request.out_dir / STATE, "summary": request.out_dir / SUMMARY})


def _bisect_command(good: str, bad: str, doc: dict, reverse: bool = False) -> str:
    """The ``ttfg bisect`` command of a range; ``reverse``: of a step the other way (``--improvement`` toggled)."""
    args = [a for a in doc.get("repro_args") or [] if not (reverse and a == "--improvement")]
    if reverse and not doc.get("improvement"):
        args.append("--improvement")
    return f"ttfg bisect --good {good[:12]} --bad {bad[:12]}" + (f" {' '.join(args)}" if args else "")


def _more_time_helps(doc: dict, unknown: list[str]) -> bool:
    """Whether a larger budget can decide the unknown commits: one of their comparisons' cases stopped on its
    budget (``decide.bisect.more_time_helps``); a case the selected tiers left unsettled, or that reached
    ``--max-pairs``, is not decided by more time."""
    stops = [c.get("stop") or "" for p in doc["probes"] + [q for t in doc.get("turns") or [] for q in t["probes"]]
             if p["commit"] in unknown and p["state"] == search.UNKNOWN
             for e in p.get("evidence") or [] for c in e.get("cases") or []
             if c.get("verdict") not in (search.REGRESSED, search.UNCHANGED)]
    return search.more_time_helps(stops)


def _swapped(compare: Compare) -> Compare:
    """A comparison with its two commits swapped: a reverse search's "regressed" is a step the other way."""
    def reverse(older, newer, against, folder, cases, step_cases, profiles=False, tiers=None):
        record = compare(newer, older, against, folder, cases, step_cases, profiles=profiles, tiers=tiers)
        return {**record, "reverse": True}
    return reverse


def _reverse_search(turn: dict, doc: dict, request: BisectRequest, walk: Range, compare: Compare, cases,
                    step_cases: set[str], events: BisectEvents, clock, started: float, save) -> bool:
    """A turn's other step: the search over ``turn['good']..turn['bad']`` with swapped comparisons, its probes in the
    turn's record; then its answer (the step, or the commits it can be, with the command). True when the total
    budget stopped it (a rerun continues it)."""
    rng = walk.commits[walk.commits.index(turn["good"]):walk.commits.index(turn["bad"]) + 1]
    probes = {p.commit: p for p in map(search.Probe.from_json, turn["probes"])}
    reverse = _swapped(compare)
    while (commit := search.next_commit(rng, probes, request.retries)) is not None:
        if request.total_budget_s is not None and clock() - started >= request.total_budget_s:
            return True
        b = search.bracket(rng, probes)
        lo, hi = walk.revision(rng[b.lo]), walk.revision(rng[b.hi])
        previous = probes.get(commit)
        n = len(turn["probes"]) + 1
        folder = request.out_dir / "steps" / f"turn-{turn['commit'][:10]}-{n:02d}-{commit[:10]}"
        state, evidence, vs_good, vs_bad = _step(reverse, request.settings.tiers, lo, walk.revision(commit), hi,
                                                 folder, cases, step_cases)
        counts_as, reason = None, ""
        if state == search.BETWEEN:
            counts_as = search.larger_side(_ratio(vs_good), _ratio(vs_bad))
        if state == search.TURN:  # a turn inside a turn's side: kept on its side, not searched further
            counts_as = search.turn_counts_as(search.turn_shape(vs_good["verdict"]))
            reason = "another turn inside this one's side: not searched"
        if state == search.SKIPPED:
            reason = next((e["error"] for e in evidence if e.get("error")), "")
        probe = search.Probe(commit, state, previous.attempts + 1 if previous else 1, counts_as, evidence, reason)
        probes[commit] = probe
        turn["probes"].append(probe.to_json())
        events.step(commit, probe, n, search.most_steps(len(rng)))
        save()
    answer = search.answer(rng, probes, request.retries)
    turn["answer"] = {"status": answer.status, "candidates": answer.candidates, "good": answer.good,
                      "bad": answer.bad, "skipped": answer.skipped, "unknown": answer.unknown}
    first, last = answer.candidates[0], answer.candidates[-1]
    parent = rng[rng.index(first) - 1]
    args = " ".join(doc.get("repro_args") or [])
    turn["repro"] = f"ttfg gate --base {parent[:12]} --head {last[:12]}" + (f" {args}" if args else "")
    turn["candidates"] = [walk.revision(c).described() for c in answer.candidates]
    turn["step"] = ({**walk.revision(first).described(), "parent": parent} if answer.status == search.FOUND
                    else None)
    if answer.status != search.FOUND:
        turn["command"] = _bisect_command(parent, last, doc, reverse=True)
    save()
    return False


def _summary(doc: dict) -> str:
    from ..present.bisect_views import bisect_markdown

    return bisect_markdown(doc)


__all__ = ["BROKEN_END", "BisectEvents", "BisectReport", "BisectRequest", "Compare", "EXIT", "FOUND", "INTERRUPTED",
           "NO_STEP", "RANGE", "Range", "STATE", "STOPPED", "SUMMARY", "SWAPPED", "TURN", "UNDECIDED",
           "counters_only_fell", "first_parent_range", "load_state", "run"]
