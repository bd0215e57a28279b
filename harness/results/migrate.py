"""Older results files, brought up to the current version when they are read.

Format history (``"format": "ttfg-results"``):

* version 2, addition of 2026-12-06 (optional; earlier files read with it null): timing,
  allocation and instruction samples carry ``runtimes``, what the probe's process had
  loaded after its first gradient, read from the process (``{"modules", "libraries",
  "threads"}``, ``results/runtimes.py``). Steadiness rules read it; a sample without it is
  judged by what its backend declares, as before.

* version 2, change of 2026-12-04: every route records the environments its probes ran
  in the same way, ``environment.envs`` (name -> interpreter, key, requested lines,
  versions, packages, read inside the environment). A gate side's files wrote
  ``environment.env`` (one object) before, ``ttfg run --env`` wrote ``envs``; nothing
  reads the older ``env`` key, so those files read unchanged.
* version 2, addition of 2026-12-03 (optional; earlier files read with it null): timing
  samples carry ``first_grad_cpu_s``, the CPU time of the first gradient (every thread
  of the probe), which a busier machine moves less than the wall time.
* version 2, additions (2026-12-03; optional fields, so version-2 files written before
  read unchanged): instruction samples may carry ``instructions_phases`` (phase ->
  count), ``instructions_top`` (the first-gradient window's top functions, a list of
  ``{"fn", "file", "line", "incl", "self"}`` in instructions) and ``instructions_note``;
  a new sample kind ``profile`` holds sampled Python stacks of the first gradient
  (``profile_top``, the same list in seconds, and ``profile_tool``).
* version 2, additions of 2026-12-03 (optional, so every earlier version-2 file still
  reads): ``environment.fingerprint`` (the machine: CPU model, architecture and flags,
  cores, memory, kernel, Python, package versions, thread settings; files are only
  compared, merged or reported together when it matches) and a top-level ``shard``
  object (index, count, the shard's case ids, a digest of the whole partition, every case
  of the partition in the selection's order) in the
  output of ``--shard I/N``; null otherwise.
* version 2 (2026-12-02): the file owns its sections. The gate's side
  (``environment["gate"]`` and ``settings["gate"]`` in version 1) is the top-level
  ``gate`` object (role, rev, commit, subject, settings); a study's analysis
  (``settings["study"]``) is the top-level ``study`` object. Both are null otherwise.
  Every sample has ``pair`` and ``pair_position`` (null outside a gate).
  ``cold_evidence`` is an object (cache, files_at_start, backend_compiles,
  persistent_cache_hits, fxgraph_cache_misses, fxgraph_cache_hits) instead of a line
  of text. Strict JSON: no NaN or Infinity (a value that could not be estimated is
  null), and impossible values (a zero or negative time, a negative count) are
  refused on reading and on writing.
  Since 2026-12-03 ``environment.noise`` may hold the noise floor (source
  ``calibration`` or ``in-run``, method, measured_at, age_s, machine, alpha, power,
  entries of case, metric, n, log_ratio_sd, sd_ci95, seconds_per_pair and gates of
  budget_s, pairs, min_detectable_effect); it is optional, so older version-2 files
  read unchanged.
* version 1 (2026-12-01): first version. NaN allowed; samples as free-form objects
  checked field by field; gate and study data stored inside ``environment`` and
  ``settings``.

Reading never writes: a version-1 file stays version 1 on disk until it is saved.
"""

from __future__ import annotations

import copy
import os
from typing import Any, Callable

from .format import ResultsError, VERSION, strict_json
from .model import ColdEvidence

__all__ = ["MIGRATIONS", "migrate_v1_to_v2", "upgrade"]


def _cold_evidence(value: Any) -> Any:
    if not isinstance(value, str):
        return value  # null, or something validation will name
    parsed = ColdEvidence.parse(value)
    if parsed is None:
        raise ValueError(f"cold_evidence: cannot read version 1's line {value!r}")
    return parsed.to_json()


def migrate_v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    """A version-1 document as version 2 (a new dict; ``data`` is left alone).

    Raises
    ------
    ValueError
        With the field, when version 1's data cannot be carried over.
    """
    out = strict_json(copy.deepcopy(data))
    out["version"] = 2
    env = out.get("environment") if isinstance(out.get("environment"), dict) else {}
    settings = out.get("settings") if isinstance(out.get("settings"), dict) else {}
    side, gate_settings = env.pop("gate", None), settings.pop("gate", None)
    if side is not None or gate_settings is not None:
        side = side if isinstance(side, dict) else {}
        out["gate"] = {**{k: side.get(k) for k in ("role", "rev", "commit", "subject")},
                       "settings": gate_settings}
    else:
        out["gate"] = None
    out["study"] = settings.pop("study", None)
    for i, case in enumerate(out.get("cases") or []):
        if not isinstance(case, dict):
            continue
        for j, sample in enumerate(case.get("samples") or []):
            if not isinstance(sample, dict):
                continue
            sample.setdefault("pair", None)
            sample.setdefault("pair_position", None)
            if "cold_evidence" in sample:
                try:
                    sample["cold_evidence"] = _cold_evidence(sample["cold_evidence"])
                except ValueError as exc:
                    raise ValueError(f"cases[{i}].samples[{j}].{exc}") from None
    return out


#: version -> the function that brings a document of that version one step up.
MIGRATIONS: dict[int, Callable[[dict], dict]] = {1: migrate_v1_to_v2}


def upgrade(data: Any, path: str | os.PathLike = "<results>") -> Any:
    """``data`` migrated to the current version (unchanged when it is current, or not a results document)."""
    if not isinstance(data, dict):
        return data
    version = data.get("version")
    if version == VERSION or data.get("format") != "ttfg-results":
        return data
    if isinstance(version, bool) or not isinstance(version, int) or version not in MIGRATIONS:
        raise ResultsError(f"{path}: version: unsupported version {version!r}; "
                           f"this ttfg reads versions 1 to {VERSION}")
    while data.get("version") != VERSION:
        try:
            data = MIGRATIONS[data["version"]](data)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise ResultsError(f"{path}: {exc} (while reading version {version})") from None
    return data
