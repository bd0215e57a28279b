"""The noise floor: how noisy this machine is, and so what a gate can detect on it.

Why: a result without its noise invites over-reading ("2 % slower!") on a machine
where a 10-minute gate cannot see less than 8 %. Every results file of ``ttfg run``
and ``ttfg gate`` therefore records a :class:`~ttfg.results.model.NoiseFloor` in
``environment.noise``, from the best evidence at hand:

* ``calibration``: the A/A pairs of ``ttfg doctor --calibrate`` of the case (stored in
  the cache folder, ``$TTFG_CACHE_DIR`` or the platform's, ``calibration.json``), when it
  is at most :data:`MAX_AGE_S` old and was stored under the case's own key
  (``results/fact_key.py``: the case, its environment with the files of editable
  installs, the interpreter, ttfg, the probe's settings, the host, CPU model and count);
* ``in-run``: otherwise an estimate from the run's own samples. A gate's base/head
  pairs give the paired log-ratio SD directly (a true change shifts the ratios, it
  does not widen them). ``ttfg run`` has no pairs: ``sqrt(2)`` times the SD of a
  case's log times is what two independent processes would show; it is an upper
  bound of the paired SD, since pairing back-to-back processes cancels the drift
  they share.

From an SD and the seconds a pair takes, :func:`reach` gives the pairs a gate budget
buys and the smallest effect it detects (``stats.min_detectable_effect``, alpha 0.01,
95 % power, at most the gate's ``--max-pairs``). :func:`budget_warning` is the gate's
check before it starts; it takes the upper end of the SD's 95 % interval, so a
calibration of a few pairs (whose SD may be far too low by chance) cannot quiet it.

The stored calibration is a side file, read as one (``stored``): strict and bounded
JSON (a deeply nested file blocked every run; a 100 MB note was copied into every
results file), every field checked, and any problem makes it unusable with a note,
never an error. It holds one floor per key: a gate of ``mylab.autograd`` said "a 10-minute
gate sees >= 17 % on hklab.jax", another user's calibration of another library, because a
case without an entry borrowed one of the same backend or the noisiest of the file. A case
now uses its own key's entry or none, and the note says "not calibrated here" and why.
A new calibration replaces a usable stored one of its key only when it is no worse
(:func:`save`): an interrupted ``ttfg doctor --calibrate`` of two pairs replaced a good
one, and the gate's budget warning went quiet for a day.
"""

from __future__ import annotations

import math
import os
import socket
import statistics
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from . import stats
from ..results.format import now_iso
from ..results.model import NoiseEntry, NoiseFloor, Results

if TYPE_CHECKING:
    from ..results.fact_key import FactKey

#: Gate budgets a floor states the detectable effect for (seconds): 5 and 10 minutes.
GATE_BUDGETS_S = (300.0, 600.0)
ALPHA, POWER = 0.01, 0.95
#: The gate's default --max-pairs (``GateSettings.max_pairs``; repeated to keep this module
#: free of the gate's imports).
MAX_PAIRS = 60
#: A stored calibration older than this is not used: load and neighbours change in hours.
MAX_AGE_S = 24 * 3600.0
#: An in-run estimate needs this many good samples (or pairs) of a case.
MIN_VALUES = 3
#: Without a calibration, the gate's check states this SD: jax.jit resnet15, one thread, paired
#: A/A on the 2-core VM ttfg was designed on (DESIGN.md). Other machines differ: calibrate.
DEFAULT_SD = 0.087
DEFAULT_SD_SOURCE = "the design reference for jax.jit resnet15 single-threaded on a 2-core VM"
STORE_NAME = "calibration.json"
#: A stored calibration is a few kilobytes; larger is no calibration ttfg wrote.
STORE_MAX_BYTES = 1024 * 1024
#: Its note is copied into every results file: longer is refused.
STORE_MAX_NOTE = 4000


# --------------------------------------------------------------------------- arithmetic


def reach(sd: float | None, seconds_per_pair: float | None, budget_s: float, max_pairs: int = MAX_PAIRS,
          cases: int = 1, alpha: float = ALPHA, power: float = POWER) -> tuple[int, float | None]:
    """``(pairs, smallest detectable effect)`` of a gate of ``budget_s`` shared round-robin by ``cases``.

    Without a pair time the gate is assumed to reach ``max_pairs``; the effect is None
    when the SD is unknown or fewer than 2 pairs fit.
    """
    if seconds_per_pair:
        pairs = min(int(budget_s // (seconds_per_pair * cases)), max_pairs)
    else:
        pairs = max_pairs
    if sd is None or pairs < 2:
        return pairs, None
    return pairs, stats.min_detectable_effect(sd, pairs, alpha, power)


def pairs_needed(sd: float, min_effect: float, alpha: float = ALPHA, power: float = POWER,
                 limit: int = 100_000) -> int | None:
    """The fewest pairs whose detectable effect is at most ``min_effect`` (None beyond ``limit``)."""
    if stats.min_detectable_effect(sd, limit, alpha, power) > min_effect:
        return None
    low, high = 2, limit
    while low < high:
        mid = (low + high) // 2
        if stats.min_detectable_effect(sd, mid, alpha, power) <= min_effect:
            high = mid
        else:
            low = mid + 1
    return low


def _entry(case: str, metric: str, logs: list[float], seconds_per_pair: float | None, scale: float = 1.0,
           budgets=GATE_BUDGETS_S, max_pairs: int = MAX_PAIRS) -> NoiseEntry:
    """An entry from log values whose SD, times ``scale``, is the paired log-ratio SD."""
    sd = scale * statistics.stdev(logs) if len(logs) >= 2 else None
    low, high = stats.sd_interval(sd, len(logs)) if sd is not None else (None, None)
    finite = lambda v: v if v is not None and math.isfinite(v) else None  # noqa: E731
    gates = [(b, *reach(sd, seconds_per_pair, b, max_pairs)) for b in budgets]
    return NoiseEntry(case, metric, len(logs), sd, finite(low), finite(high), seconds_per_pair, gates)


def machine_facts() -> dict:
    """What identifies the machine a calibration belongs to (the results environment's own fields)."""
    from ..measure.metadata import cpu_model

    return {"hostname": socket.gethostname(), "cpu": cpu_model(), "cpu_count": os.cpu_count()}


def _machine_of(results: Results) -> dict:
    env = results.environment
    return {k: env.get(k) for k in ("hostname", "cpu", "cpu_count")}


# --------------------------------------------------------------------------- the three sources


def from_calibration(calibration, machine: dict | None = None) -> NoiseFloor:
    """A doctor's calibration (``calibrate.Calibration``) as a floor: one entry per case and metric."""
    entries = []
    for case in calibration.cases:
        for metric, pairs in case.values.items():
            logs = [math.log(b / a) for a, b in pairs]
            entries.append(_entry(case.case.id, metric, logs, case.seconds_per_pair))
    state = ", interrupted" if calibration.interrupted else ""
    return NoiseFloor("calibration", f"A/A pairs of cold processes over {calibration.elapsed_s:.0f} s{state}",
                      now_iso(), 0.0, machine or machine_facts(), ALPHA, POWER, entries,
                      "; ".join(calibration.notes))


def in_run(results: Results, metric: str = "first_grad_s") -> NoiseFloor:
    """``ttfg run``: per case, sqrt(2) x the SD of log times of its good cold samples (see the module doc)."""
    entries = []
    for case in results.cases:
        if case.skipped:
            continue
        values = [v for v in case.values(metric, cache="cold") if v > 0]
        if len(values) < MIN_VALUES:
            continue
        walls = [s.process_wall_s for s in case.good("timing", "cold") if s.process_wall_s]
        per_pair = 2 * statistics.median(walls) if walls else None
        entries.append(_entry(case.id, metric, [math.log(v) for v in values], per_pair, scale=math.sqrt(2)))
    note = "" if entries else f"no case has {MIN_VALUES} good cold samples: no estimate (use --repeat {MIN_VALUES} or more)"
    return NoiseFloor("in-run", f"sqrt(2) x SD of log {metric} over each case's cold processes (unpaired: "
                                "an upper bound of what a paired gate sees)",
                      results.created, None, _machine_of(results), ALPHA, POWER, entries, note)


def in_gate(base: Results, head: Results, metric: str, max_pairs: int = MAX_PAIRS) -> NoiseFloor:
    """A gate's own floor: per case, the SD of its complete pairs' ``log(head/base)``."""
    entries = []
    for case in base.cases:
        other = head.case(case.id)
        if case.skipped or other is None:
            continue
        by_pair = {}
        for role, res_case in (("base", case), ("head", other)):
            for s in res_case.good("timing", "cold"):
                v = s.value(metric)
                if s.pair is not None and v and v > 0:
                    by_pair.setdefault(s.pair, {})[role] = (v, s.process_wall_s)
        pairs = [p for p in by_pair.values() if len(p) == 2]
        if len(pairs) < MIN_VALUES:
            continue
        walls = [p["base"][1] + p["head"][1] for p in pairs if p["base"][1] and p["head"][1]]
        logs = [math.log(p["head"][0] / p["base"][0]) for p in pairs]
        entries.append(_entry(case.id, metric, logs, statistics.median(walls) if walls else None,
                              max_pairs=max_pairs))
    note = "" if entries else f"no case has {MIN_VALUES} complete pairs: no estimate"
    return NoiseFloor("in-run", f"SD of log(head/base) over the gate's complete pairs of {metric}",
                      base.created, None, _machine_of(base), ALPHA, POWER, entries, note)


# --------------------------------------------------------------------------- the stored calibration

FORMAT = "ttfg-calibration"


def store_path() -> Path:
    """Where the doctor keeps its calibrations: the cache folder (``$TTFG_CACHE_DIR``, else the platform's)."""
    from ..provision import cache

    return cache.root() / STORE_NAME


def _read_floor(raw, where: str) -> NoiseFloor:
    """One key's stored floor, every field checked (``results.validate.noise_from_json``); ValueError naming it."""
    from ..results.format import ResultsError
    from ..results.validate import noise_from_json

    try:
        floor = noise_from_json(raw, where)
    except ResultsError as exc:
        raise ValueError(str(exc)) from None
    if floor is None or floor.source != "calibration":
        raise ValueError(f"{where}: holds no calibration")
    if len(floor.note) > STORE_MAX_NOTE:
        raise ValueError(f"{where}: noise.note: {len(floor.note):,} characters, more than a calibration's note")
    if _parse_time(floor.measured_at) is None:
        raise ValueError(f"{where}: noise.measured_at: {floor.measured_at!r} is no date")
    return floor


def load(path: Path | None = None):
    """The stored calibrations, every entry checked (``results/fact_store.py``)."""
    from ..results import fact_store

    return fact_store.read(path or store_path(), FORMAT, _read_floor, STORE_MAX_BYTES)


def _of_case(floor: NoiseFloor, case_id: str) -> NoiseFloor:
    """``floor`` with the entries of one case."""
    from dataclasses import replace

    return replace(floor, entries=[e for e in floor.entries if e.case == case_id])


def _age(floor: NoiseFloor, now: datetime) -> float:
    return (now - _parse_time(floor.measured_at)).total_seconds()


def save(floor: NoiseFloor, keys: "dict[str, FactKey]", path: Path | None = None,
         interrupted: bool = False) -> tuple[Path, list[str]]:
    """Store ``floor`` case by case, each under its key (``keys``: case id -> key), keeping every other key's entry.

    A usable stored entry (of the key, at most :data:`MAX_AGE_S` old) stays when the new one was ``interrupted``
    or rests on fewer pairs: a calibration is only replaced by one at least as good. Returns the path and, per
    case kept, why.
    """
    from ..results import fact_store

    path = path or store_path()
    kept: list[str] = []
    now = datetime.now(timezone.utc)

    def change(store) -> dict:
        out = {}
        for case_id, key in keys.items():
            new = _of_case(floor, case_id)
            if not new.entries:
                continue
            old = store.get(key)
            if old is not None and 0 <= _age(old, now) <= MAX_AGE_S and any(
                    e.log_ratio_sd is not None for e in old.entries):
                age = describe_age(_age(old, now))
                if interrupted:
                    kept.append(f"{case_id}: an interrupted calibration is not stored over the usable one from "
                                f"{age} ago")
                    continue
                if pairs_of(new) < pairs_of(old):
                    kept.append(f"{case_id}: this calibration rests on {pairs_of(new)} pair(s), the stored one from "
                                f"{age} ago on {pairs_of(old)}; it stays (calibrate with a budget at least as long to "
                                "replace it)")
                    continue
            out[key.digest] = (key, new)
        return out

    fact_store.update(path, FORMAT, _read_floor, lambda f: f.to_json(), change, STORE_MAX_BYTES)
    return path, kept


def _parse_time(text: str) -> datetime | None:
    try:
        when = datetime.fromisoformat(text)
    except (TypeError, ValueError):
        return None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def stored(keys: "dict[str, list[FactKey]]", now: datetime | None = None, path: Path | None = None,
           max_age_s: float = MAX_AGE_S) -> tuple[NoiseFloor | None, str]:
    """The stored calibration of the cases that have one here, with ``age_s`` set; else None; and why the others
    (or all) have none.

    ``keys``: case id -> the keys it is measured under (a gate's two sides; a calibration of one environment applies
    only when both sides run in it). A case's floor is its key's entry, at most ``max_age_s`` old, or nothing.
    """
    from ..results.fact_key import not_here

    store = load(path)
    if store.problem:
        return None, f"stored calibration unusable ({store.problem[:240]})"
    if not store.entries:
        found = "; ".join(store.set_aside)[:400]
        return None, (f"stored calibration set aside ({found})" if found
                      else "no stored calibration (run `ttfg doctor --calibrate`)")
    now = now or datetime.now(timezone.utc)
    floors, why = [], []
    for case_id, case_keys in keys.items():
        unique = list({k.digest: k for k in case_keys}.values())
        if len(unique) != 1:
            why.append(f"{case_id}: not calibrated here: its sides run in different environments, and an A/A "
                       "calibration holds for one")
            continue
        floor = store.get(unique[0])
        if floor is None:
            why.append(f"{case_id}: {not_here(unique[0], store.keys(), 'calibration', 'ttfg doctor --calibrate')}")
            continue
        age = _age(floor, now)
        if age > max_age_s or age < -60:
            why.append(f"{case_id}: its stored calibration is {describe_age(age)} old (used up to "
                       f"{describe_age(max_age_s)})")
            continue
        if not any(e.log_ratio_sd is not None for e in floor.entries):
            why.append(f"{case_id}: its stored calibration has no SD (too few pairs)")
            continue
        floors.append((age, floor))
    if store.set_aside:
        why.append("set aside: " + "; ".join(store.set_aside)[:400])
    if not floors:
        return None, "; ".join(why)
    from dataclasses import replace

    oldest_age, first = max(floors, key=lambda f: f[0])
    merged = replace(first, entries=[e for _, f in floors for e in f.entries], age_s=max(oldest_age, 0.0),
                     measured_at=min((f for _, f in floors), key=lambda f: _parse_time(f.measured_at)).measured_at,
                     note="; ".join(filter(None, [first.note, *why])))
    return merged, "; ".join(why)


def keys_of(cases, run, sides=None, envs=None) -> "dict[str, list[FactKey]]":
    """Each case's keys for a fact about wall time (``measure/fact_keys.py``): under each side of a gate
    (``sides``: ``{role: Side}``), else in the environment its id names (``envs[case.env]``; none: this
    interpreter) with ``run``'s settings."""
    from dataclasses import replace

    from ..measure import fact_keys
    from ..provision.target import ProbeTarget

    if sides is not None:
        return {c.id: [fact_keys.key(c, s.env, s.run_settings(run, opening=False), counted=False)
                       for s in sides.values()] for c in cases}
    out = {}
    for c in cases:
        env = (envs or {}).get(c.env) if c.env else None
        out[c.id] = [fact_keys.key(c, env, replace(run, target=ProbeTarget.of(env)) if env is not None else run,
                                   counted=False)]
    return out


def pairs_of(floor: NoiseFloor) -> int:
    """All the pairs a floor's entries rest on (one per case and metric; the metrics share their pairs)."""
    by_case: dict[str, int] = {}
    for e in floor.entries:
        by_case[e.case] = max(by_case.get(e.case, 0), e.n)
    return sum(by_case.values())


def describe_age(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = abs(seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit}"
    return f"{seconds:.0f} s"


# --------------------------------------------------------------------------- using a floor


def entry_for(floor: NoiseFloor | None, case_id: str, metric: str) -> NoiseEntry | None:
    """The floor's entry for this case and metric, or None: another case's entry never stands in for it (a gate of
    ``mylab.autograd`` quoted another user's calibration of ``hklab.jax``)."""
    if floor is None:
        return None
    return next((e for e in floor.entries if e.case == case_id and e.metric == metric
                 and e.log_ratio_sd is not None), None)


def budget_warning(cases: list[str], metric: str, min_effect: float, budget_s: float, max_pairs: int,
                   floor: NoiseFloor | None, why_no_floor: str = "", alpha: float = ALPHA) -> list[dict]:
    """Per case whose requested ``min_effect`` is below what the budget can detect here: the facts of the warning.

    ``alpha``: the level of one guarded timing's test (the gate's alpha shared by its guard).

    Each dict: case, sd, sd_source, pairs (the budget buys), effect (it detects),
    needed_pairs (for ``min_effect``; None when out of reach), needed_budget_s (None when
    the pair time is unknown). An empty list: the budget suffices (or nothing is known).
    """
    out = []
    entries = {c: entry_for(floor, c, metric) for c in cases}
    known = [e.seconds_per_pair for e in entries.values() if e is not None and e.seconds_per_pair]
    per_round = None
    if known:  # round-robin: every case takes one pair per round; an uncalibrated case costs the median
        fill = statistics.median(known)
        per_round = sum((e.seconds_per_pair if e is not None and e.seconds_per_pair else fill)
                        for e in entries.values())
    for case in cases:
        entry = entries[case]
        if entry is not None:
            # The upper end of the SD's 95 % interval: an SD from few pairs may be far too low by chance.
            sd = entry.sd_high if entry.sd_high is not None else entry.log_ratio_sd
            source = (f"calibrated {describe_age(floor.age_s)} ago" if floor.source == "calibration"
                      else "in-run estimate")
            if entry.sd_high is not None:
                source += f", the upper end of the 95 % interval of SD {entry.log_ratio_sd:.3f} from {entry.n} pairs"
        else:
            mine = [w for w in why_no_floor.split("; ") if w.startswith(f"{case}: ")] if why_no_floor else []
            why = mine[0].removeprefix(f"{case}: ") if mine else why_no_floor
            sd, source = DEFAULT_SD, f"default SD: {DEFAULT_SD_SOURCE}" + (f"; {why}" if why else "")
        pairs = min(int(budget_s // per_round), max_pairs) if per_round else max_pairs
        effect = stats.min_detectable_effect(sd, pairs, alpha, POWER) if pairs >= 2 else None
        if effect is not None and effect <= min_effect:
            continue
        needed = pairs_needed(sd, min_effect, alpha)
        out.append({"case": case, "sd": sd, "sd_source": source, "pairs": pairs, "effect": effect,
                    "needed_pairs": needed,
                    "needed_budget_s": needed * per_round if needed is not None and per_round else None})
    return out


__all__ = ["ALPHA", "DEFAULT_SD", "FORMAT", "GATE_BUDGETS_S", "MAX_AGE_S", "POWER", "budget_warning", "describe_age",
           "entry_for", "from_calibration", "in_gate", "in_run", "keys_of", "load", "machine_facts", "pairs_needed", "pairs_of",
           "reach", "save", "store_path", "stored"]
