"""The count store (``results/count_store.py``): what it keeps, and every way a stored entry can lie.

Each hostile entry (edited by hand, truncated, of another environment, of another CPU model, a field of the wrong
type, copied under another name) must be refused, named, moved aside to ``corrupt/`` and never returned.
"""

from __future__ import annotations

import json
import os
import time

import pytest

from ttfg.errors import UsageError
from ttfg.results import count_store as cs
from ttfg.results.fact_key import FactKey
from tests.test_gate_tiers import count, timing


def conditions(**changes) -> FactKey:
    parts = dict(case={"model": "resnet15", "backend": "jax.jit"}, environment="env-a", python="/py",
                 python_version="3.12.1", ttfg={"version": "1", "source": "abc"}, probe={"threads": 1},
                 machine={"cpu": "Xeon A", "cpu_count": 2, "flags": "f"}, valgrind={"version": "3.22"})
    parts.update(changes)
    return FactKey(**parts)


def key_for(fact: FactKey, index: int = 0, kind: str = "instructions", sources: str = "tree:" + "a" * 40):
    return cs.EntryKey(sources, "jax.jit:resnet15", kind, "cold", index, fact.digest)


def entry(fact: FactKey | None = None, value: int = 10**9, **key) -> cs.Entry:
    fact = fact or conditions()
    k = key_for(fact, **key)
    return cs.Entry(k, fact, count(k.kind, k.index, value), {"run": "gate", "commit": "c" * 40, "at": "2026-12-06"})


@pytest.fixture
def store(tmp_path):
    return cs.CountStore(tmp_path / "counts", limit=10 * 1024 * 1024)


def test_a_kept_count_reads_back_verified_without_wall_time(store):
    e = entry()
    path = store.put(e)
    found = store.get(e.key, e.conditions)
    assert found.entry is not None and found.refused is None
    assert found.entry.sample.instructions == 10**9
    assert found.entry.sample.instructions_top == e.sample.instructions_top
    # timing is never stored: the callgrind process's wall time and window are emptied before writing
    assert found.entry.sample.process_wall_s is None and found.entry.sample.instructions_window_s is None
    assert json.loads(path.read_text())["entry"]["sample"]["process_wall_s"] is None
    assert found.entry.from_words() == f"the gate of {'c' * 10} at 2026-12-06"


def test_a_timing_sample_is_never_kept(store):
    fact = conditions()
    k = cs.EntryKey("tree:x", "c", "timing", "cold", 0, fact.digest)
    with pytest.raises(UsageError, match="keeps good count samples"):
        store.put(cs.Entry(k, fact, timing(0, 1.0, {}), {}))
    assert not store.entries.exists() or not list(store.entries.iterdir())


def refused(store, e, match):
    found = store.get(e.key, e.conditions)
    assert found.entry is None
    assert found.refused is not None and match in found.refused, found.refused
    assert not store.path(e.key).exists()  # set aside, never read again
    assert len(list(store.corrupt.iterdir())) == 1
    return found.refused


def test_an_entry_edited_by_hand_is_refused_and_set_aside(store):
    e = entry()
    path = store.put(e)
    path.write_text(path.read_text().replace(str(10**9), str(9 * 10**8)))  # another count, the digest left
    why = refused(store, e, "SHA-256 does not match")
    assert path.name in why and "corrupt" in why


def resealed(store, e, path: list, value) -> None:
    """Edit one field of ``e``'s stored entry (``path`` of keys under ``entry``) and recompute its SHA-256, as a hand
    edit that knows the format would: the digest then holds, and only the store's other checks can refuse it."""
    file = store.put(e)
    doc = json.loads(file.read_text())
    *inner, last = path
    target = doc["entry"]
    for k in inner:
        target = target[k]
    target[last] = value
    doc["sha256"] = cs._sha(doc["entry"])
    file.write_text(json.dumps(doc))


def test_an_entry_edited_with_its_digest_recomputed_under_another_key_is_refused(store):
    e = entry()
    resealed(store, e, ["key", "index"], 1)  # the count of another index, re-digested by hand
    refused(store, e, "filed under another key (index differ)")


def test_a_truncated_entry_is_refused(store):
    e = entry()
    path = store.put(e)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    refused(store, e, "refused")


@pytest.mark.parametrize("field,value,words", [
    ("index", "0", "'entry.key.index' must be an integer, got str"),
    ("index", True, "'entry.key.index' must be an integer, got bool"),
    ("case", 3, "'entry.key.case' must be a string, got int"),
])
def test_a_key_field_of_the_wrong_type_is_refused(store, field, value, words):
    e = entry()
    resealed(store, e, ["key", field], value)
    refused(store, e, words)


def test_a_sample_of_the_wrong_type_is_refused(store):
    e = entry()
    resealed(store, e, ["sample", "instructions"], "1000000000")
    refused(store, e, "entry.sample.instructions")


def test_a_sample_holding_wall_time_is_refused(store):
    e = entry()
    resealed(store, e, ["sample", "process_wall_s"], 30.0)
    refused(store, e, "holds wall time")


def test_conditions_that_do_not_digest_to_the_key_are_refused(store):
    e = entry()
    resealed(store, e, ["conditions", "machine", "cpu"], "Xeon B")
    refused(store, e, "do not digest")


@pytest.mark.parametrize("changes,words", [
    ({"environment": "env-b"}, "the environment"),
    ({"machine": {"cpu": "EPYC B", "cpu_count": 2, "flags": "f"}}, "the machine (cpu)"),
])
def test_another_environment_or_cpu_is_not_found_and_says_what_differs(store, changes, words):
    theirs = entry(conditions(**changes))
    store.put(theirs)
    mine = key_for(conditions())
    found = store.get(mine, conditions())
    assert found.entry is None and found.refused is None
    assert found.other is not None and words in found.other
    assert store.path(theirs.key).exists()  # valid for its own conditions: kept


@pytest.mark.parametrize("changes", [{"environment": "env-b"}, {"machine": {"cpu": "EPYC B", "cpu_count": 2,
                                                                          "flags": "f"}}])
def test_another_conditions_entry_renamed_to_this_key_is_refused(store, changes):
    theirs = entry(conditions(**changes))
    path = store.put(theirs)
    mine = entry()
    path.rename(store.path(mine.key))
    refused(store, mine, "filed under another key (conditions differ)")


def test_a_copy_under_another_address_is_refused(store):
    e = entry()
    path = store.put(e)
    # a valid entry whose key the file's name does not match: check by reading it under its own key via a copy
    other = store.entries / ("f" * 24 + "-" + e.key.conditions + ".json")
    other.write_bytes(path.read_bytes())
    with pytest.raises(cs.CorruptEntry, match="name is not its key's address"):
        store._read(other, None)


def test_the_cap_evicts_the_oldest_entries_first(tmp_path):
    store = cs.CountStore(tmp_path / "counts", limit=10**9)
    paths = [store.put(entry(index=i)) for i in range(4)]
    size = paths[0].stat().st_size
    for age, path in enumerate(reversed(paths)):  # paths[0] oldest
        then = time.time() - 1000 * (age + 1)
        os.utime(path, (then, then))
    store.get(entry(index=1).key)  # used now: kept
    store.limit = 2 * size + size // 2
    gone = store.evict()
    assert sorted(p.name for p in gone) == sorted([paths[0].name, paths[2].name])
    assert store.size() <= store.limit


def test_prune_removes_all_or_what_is_older(store):
    old, new = store.put(entry(index=0)), store.put(entry(index=1))
    then = time.time() - 10 * 86400
    os.utime(old, (then, then))
    assert store.prune(older_s=86400) == [old]
    assert new.exists()
    assert store.prune() == [new]


@pytest.mark.parametrize("raw", ["0", "-3", "lots", "nan", "inf"])
def test_a_bad_cap_is_refused_naming_the_variable(monkeypatch, raw):
    monkeypatch.setenv(cs.ENV_MAX_MB, raw)
    with pytest.raises(UsageError, match="TTFG_COUNT_STORE_MAX_MB"):
        cs.max_bytes()


def test_the_folder_and_cap_come_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(cs.ENV_DIR, str(tmp_path / "elsewhere"))
    monkeypatch.setenv(cs.ENV_MAX_MB, "0.5")
    store = cs.CountStore.default(tmp_path / "cache")
    assert store.root == tmp_path / "elsewhere" and store.limit == 512 * 1024
    monkeypatch.delenv(cs.ENV_DIR)
    monkeypatch.delenv(cs.ENV_MAX_MB)
    monkeypatch.setenv("TTFG_CACHE_DIR", str(tmp_path / "cache"))
    assert cs.folder(tmp_path / "cache") == tmp_path / "cache" / "counts" and cs.max_bytes() == 128 * 1024 * 1024


@pytest.mark.slow
def test_env_prune_counts_removes_the_store_and_refuses_names(tmp_path):
    from tests.conftest import run_ttfg

    store = cs.CountStore(tmp_path / "counts")
    old, new = store.put(entry(index=0)), store.put(entry(index=1))
    then = time.time() - 10 * 86400
    os.utime(old, (then, then))
    env = {cs.ENV_DIR: str(store.root)}
    out = run_ttfg("env", "prune", "--counts", "--older-than", "168h", env=env)
    assert out.returncode == 0 and "removed 1 stored count(s)" in out.stdout, out.stderr
    assert not old.exists() and new.exists()
    bad = run_ttfg("env", "prune", "--counts", "some-name", env=env)
    assert bad.returncode == 2 and "takes no names" in bad.stderr and new.exists()
    bad = run_ttfg("env", "prune", "--counts", env={**env, cs.ENV_MAX_MB: "-1"})
    assert bad.returncode == 2 and "TTFG_COUNT_STORE_MAX_MB='-1'" in bad.stderr and new.exists()
    out = run_ttfg("env", "prune", "--counts", env=env)
    assert out.returncode == 0 and not new.exists()
