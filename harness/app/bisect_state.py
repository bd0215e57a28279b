"""What a ``bisect.json`` answers, and whether a rerun may take it as its own.

Why: the state is the bisect's answer and is shown again without measuring. Keyed only by
the revisions, cases, direction and tiers, a rerun with ``--metric import_s --min-effect 0.9
--alpha 0.2`` printed the stored culprit of a ``first_grad_s`` bisect, with the old repro
command and exit 1, and a rerun with the default metric after an import-time bisect said
"no step", exit 0, where a fresh folder said "undecided": another command's answer as this
one's, the worst outcome there is. So the key holds every setting that can change an answer
(:func:`decision_settings`), and a rerun whose settings differ is refused, naming each one
(stored and asked) and how to go on.

Three settings only say how long to try, not what is decided: ``budget_s`` (per comparison),
``total_budget_s`` and ``retries``. A state that has no answer yet (running, stopped,
interrupted, undecided, an end that could not run) continues under new values of these: that
is how "undecided: raise --budget and rerun" goes on from the steps done. A finished state
(found, range, no step, swapped) is refused for them too: a larger budget may decide what a
smaller one left as it was.

A ``bisect.json`` written before the settings were recorded (its key has no ``settings``) is
refused as a state to continue, naming the settings it lacks: nothing says which metric,
effect or alpha its answer is for. ``ttfg report --bisect`` still draws it (the page reader
does not need the key).
"""

from __future__ import annotations

from pathlib import Path

from ..errors import UsageError

#: Settings that bound the effort, not the question: an unfinished state continues under new values.
EFFORT = ("budget_s", "total_budget_s", "retries")
#: The settings a bisect's answer depends on, in the order a refusal names them (``EFFORT`` among them).
SETTINGS = ("metric", "min_effect", "alpha", "guard", "strict_counters", "min_pairs", "max_pairs", "max_failures",
            "count_repeat", "recount", "cache", "repeat", "timeout_s", "threads", "envs", "project_dir",
            *EFFORT)
#: The flag each setting is given by, for the refusal.
FLAGS = {"metric": "--metric", "min_effect": "--min-effect", "alpha": "--alpha", "guard": "--guard",
         "min_pairs": "--min-pairs", "max_pairs": "--max-pairs", "max_failures": "--max-failures",
         "count_repeat": "--count-repeat", "cache": "--cache", "repeat": "--repeat", "timeout_s": "--timeout",
         "threads": "--threads", "envs": "--envs", "project_dir": "the project folder", "budget_s": "--budget",
         "total_budget_s": "--total-budget", "retries": "--retries", "tiers": "--tiers",
         "cases": "the cases (--model/--backend/--variant)", "improvement": "--improvement",
         "strict_counters": "strict counters", "recount": "recount"}
#: What a state that has no answer yet can be (``bisect.json``'s ``status``).
UNFINISHED = ("running", "stopped", "interrupted", "undecided", "end cannot run")


def decision_settings(request) -> dict:
    """Every setting of ``request`` (``app.bisect.BisectRequest``) that can change the answer (cases, tiers and direction are the key's own)."""
    s = request.settings
    run = s.run
    return {"metric": s.metric, "min_effect": s.min_effect, "alpha": s.alpha,
            "guard": None if s.guard is None else list(s.guard),
            "strict_counters": None if s.strict_counters is None else list(s.strict_counters),
            "min_pairs": s.min_pairs, "max_pairs": s.max_pairs, "max_failures": s.max_failures,
            "count_repeat": s.count_repeat, "recount": s.recount, "cache": s.cache,
            "repeat": run.repeat, "timeout_s": run.timeout_s, "threads": run.threads, "envs": request.envs, "project_dir": request.project_dir,
            "budget_s": s.budget_s, "total_budget_s": request.total_budget_s, "retries": request.retries}


def key(request, good: str, bad: str) -> dict:
    """What a state must match to be continued or shown: the two commits, the cases, the direction, the tiers, and
    every decision setting (:func:`decision_settings`)."""
    return {"good": good, "bad": bad, "cases": sorted(c.id for c in request.cases),
            "improvement": request.improvement, "tiers": list(request.settings.tiers),
            "settings": decision_settings(request)}


def counts_key(k: dict) -> dict:
    """The key ``counts.json`` is kept under: the state's without the effort settings (a count taken under a
    smaller ``--budget`` is the same count)."""
    return {**k, "settings": {n: v for n, v in (k.get("settings") or {}).items() if n not in EFFORT}}


def _shown(value) -> str:
    if value is None:
        return "none"
    if isinstance(value, list):
        return ",".join(map(str, value)) or "none"
    return str(value)


def differences(stored: dict, asked: dict, unfinished: bool) -> list[str]:
    """Each setting that differs between a stored key and this command's, as ``--metric: stored first_grad_s,
    asked import_s``; the effort settings only when the state is finished."""
    out = []
    for name in ("tiers", "cases", "improvement"):
        if stored.get(name) != asked.get(name):
            out.append(f"{FLAGS[name]}: stored {_shown(stored.get(name))}, asked {_shown(asked.get(name))}")
    then, now = stored.get("settings") or {}, asked["settings"]
    for name in SETTINGS:
        if unfinished and name in EFFORT:
            continue
        if then.get(name) != now.get(name):
            out.append(f"{FLAGS[name]}: stored {_shown(then.get(name))}, asked {_shown(now.get(name))}")
    return out


def check(path: Path, doc: dict, asked: dict) -> list[str]:
    """Refuse a state that answers another command; the notes for the effort settings that changed.

    Raises
    ------
    UsageError
        A state of other revisions; one written before the settings were recorded (naming those it lacks); one
        whose settings differ, naming each (stored and asked). Each says how to go on; the file is left as it is.
    """
    stored = doc["key"]
    go_on = ("; it was left as it is: choose another --out-dir, or move bisect.json and counts.json away to "
             "start afresh")
    if stored.get("good") != asked["good"] or stored.get("bad") != asked["bad"]:
        raise UsageError(f"{path} holds a bisect of other revisions (good {str(stored.get('good'))[:10]}, bad "
                         f"{str(stored.get('bad'))[:10]}; asked {asked['good'][:10]}..{asked['bad'][:10]}){go_on}")
    if not isinstance(stored.get("settings"), dict):
        raise UsageError(f"{path} was written by an older ttfg that did not record its decision settings "
                         f"({', '.join(FLAGS[n] for n in SETTINGS)}): nothing says its answer is this command's{go_on}")
    unfinished = doc.get("status") in UNFINISHED
    differ = differences(stored, asked, unfinished)
    if differ:
        raise UsageError(f"{path} holds a bisect with other settings than this command's: " + "; ".join(differ)
                         + go_on + " (or rerun with the stored settings)")
    then = stored["settings"]
    return [f"{FLAGS[n]} {_shown(asked['settings'].get(n))} (the state's was {_shown(then.get(n))}): the steps done "
            "are kept, what they left undecided is tried under the new value"
            for n in EFFORT if then.get(n) != asked["settings"].get(n)]


__all__ = ["EFFORT", "SETTINGS", "UNFINISHED", "check", "counts_key", "decision_settings", "differences", "key"]
