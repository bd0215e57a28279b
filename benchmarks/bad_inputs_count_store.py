"""``bad_inputs.py``'s rows for the count store (issue 42), and their files.

Kept beside ``bad_inputs.py`` (which imports it) so that the table's rows for one issue live in one place. Each
row is a real ``ttfg`` process in the scratch folder; none starts a probe (a gate refused for a bad store cap is
refused before any checkout):

- ``store 1``: ``env prune --counts`` with a name, with ``--sources``, with ``--older-than 0``: refused, the store
  left as it is;
- ``store 2``: a ``TTFG_COUNT_STORE_MAX_MB`` that is no positive number: ``gate`` and ``env prune --counts`` refuse
  it naming the variable, the gate before any checkout and without an output folder;
- ``store 3``: ``env prune --counts`` of a store holding a truncated entry and a set-aside one: both removed.
"""

from __future__ import annotations

from pathlib import Path


def files(d: Path) -> dict:
    """A count store with one truncated entry and one set aside as corrupt."""
    store = d / "count-store"
    (store / "entries").mkdir(parents=True)
    (store / "corrupt").mkdir()
    (store / "entries" / ("a" * 24 + "-" + "b" * 16 + ".json")).write_text('{"format": "ttfg-count-entry", "vers')
    (store / "corrupt" / ("c" * 24 + "-" + "d" * 16 + ".20261206T000000.json")).write_text("{}")
    return {"count-store": store}


def rows(d: Path, m: dict, out, tiny: list[str]) -> list:
    """The rows (``bad_inputs.Row``), in the order of the docstring."""
    from bad_inputs import Row, _all, _contains, _unchanged

    store = m["count-store"]
    entry = next((store / "entries").iterdir())
    env = {"TTFG_COUNT_STORE_DIR": str(store)}
    return [
        Row("store 1: env prune --counts with a name (refused, the store left)", ["env", "prune", "--counts", "x"],
            env=env, check=_all(_contains("takes no names"), _unchanged(entry))),
        Row("store 1: env prune --counts --sources (one or the other)", ["env", "prune", "--counts", "--sources"],
            env=env, check=_all(_contains("--counts removes the stored count samples"), _unchanged(entry))),
        Row("store 1: env prune --counts --older-than 0 (a duration)", ["env", "prune", "--counts", "--older-than",
                                                                         "0"], env=env, check=_unchanged(entry)),
        Row("store 2: gate, TTFG_COUNT_STORE_MAX_MB=lots (refused before any checkout)",
            ["gate", "--base", "HEAD~1", "--head", "HEAD", *tiny, "--out-dir", out("store2-gate")],
            env={**env, "TTFG_COUNT_STORE_MAX_MB": "lots"},
            check=_all(_contains("TTFG_COUNT_STORE_MAX_MB='lots': expected a positive number of megabytes"),
                       lambda p: "an output folder was made" if Path(out("store2-gate")).exists() else None)),
        Row("store 2: env prune --counts, TTFG_COUNT_STORE_MAX_MB=-1", ["env", "prune", "--counts"],
            env={**env, "TTFG_COUNT_STORE_MAX_MB": "-1"},
            check=_all(_contains("TTFG_COUNT_STORE_MAX_MB='-1'"), _unchanged(entry))),
        Row("store 3: env prune --counts of a truncated entry and a set-aside one (both removed)", expect=0,
            argv=["env", "prune", "--counts"], env=env,
            check=_all(_contains("removed 2 stored count(s)"),
                       lambda p: "an entry is left" if any(store.rglob("*.json")) else None)),
    ]
