"""One key for every stored fact (``results/fact_key.py``, built by ``measure/fact_keys.py``), and an environment's
identity that follows the bytes of its editable and local installs (``provision/local_installs.py``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ttfg.app import bisect as use_case
from ttfg.measure import fact_keys
from ttfg.measure.cases import select
from ttfg.measure.runner import RunSettings
from ttfg.provision import environments
from ttfg.results.fact_key import FactKey, FactKeyError, not_here

from tests.fake_sides import FolderSides
from tests.test_bisect_counts import CULPRIT, Commits, request
from tests.test_bisect_search import repo  # noqa: F401 (the fixture, shared)

CASE = select(["resnet15:blocks=2"], ["autograd"], None, check_availability=False)[0][0]


def editable_venv(root: Path) -> tuple[str, Path]:
    """A virtual environment (no pip) holding ``fakegrad`` 1.0 installed editable from ``root/src``, laid out as
    pip writes a PEP 660 install (a ``.pth`` naming the source folder, ``direct_url.json`` with ``editable``)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / "venv")], check=True)
    source = root / "src"
    (source / "fakegrad").mkdir(parents=True)
    (source / "fakegrad" / "__init__.py").write_text("def grad(f):\n    return f\n")
    site = next((root / "venv" / "lib").glob("python*/site-packages"))
    info = site / "fakegrad-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fakegrad\nVersion: 1.0\n")
    (info / "direct_url.json").write_text(json.dumps({"url": source.as_uri(), "dir_info": {"editable": True}}))
    (info / "RECORD").write_text("__editable__.fakegrad-1.0.pth,,\n")
    (site / "__editable__.fakegrad-1.0.pth").write_text(str(source) + "\n")
    return str(root / "venv" / "bin" / "python"), source / "fakegrad" / "__init__.py"


def test_an_editable_install_edited_in_place_changes_the_environment_and_every_key_and_says_which(tmp_path):
    python, module = editable_venv(tmp_path)
    before = environments.current(python)
    assert before.version("fakegrad") == "1.0" and before.local["fakegrad"]["editable"]
    run = RunSettings(repeat=1)
    first = fact_keys.key(CASE, before, run, counted=True)
    module.write_text("def grad(f):\n    return lambda x: f(x)\n")  # same version, other bytes
    after = environments.current(python)
    assert after.packages == before.packages  # what a name-and-version identity saw: nothing
    assert after.digest != before.digest
    second = fact_keys.key(CASE, after, run, counted=True)
    assert first != second and first.digest != second.digest
    assert second.differences(first) == ["the files of the editable or local install fakegrad"]
    # The recorded environments of two results files say it too.
    from ttfg.results.identity import package_changes

    assert package_changes(before.to_json(), after.to_json()) == [
        "fakegrad (editable or local install): its files changed"]
    # Bytecode and caches are no part of the bytes: a run that writes __pycache__ changes nothing.
    (module.parent / "__pycache__").mkdir()
    (module.parent / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\0")
    assert environments.current(python).digest == after.digest



def test_the_measured_projects_own_editable_install_is_no_part_of_a_sides_count_key(tmp_path):
    """Issue 39: a gate's side imports its own checkout, never the project's editable install (the working tree, in CI
    each push's head); with that install's files in the key, the next push of a pull request never found the base's
    stored counts ("stored under other conditions (the files of the editable or local install torchlab)") and
    counted the base again. Another editable install still keys, as before."""
    python, module = editable_venv(tmp_path)
    run = RunSettings(repeat=1)
    before = environments.current(python)
    module.write_text("def grad(f):\n    return lambda x: f(x)\n")  # the next push's head, in the working tree
    after = environments.current(python)
    assert after.digest != before.digest
    assert fact_keys.key(CASE, before, run, True, measured="FakeGrad") == fact_keys.key(CASE, after, run, True,
                                                                                         measured="fakegrad")
    assert "fakegrad" not in fact_keys.key(CASE, after, run, True, measured="fakegrad").local
    assert fact_keys.key(CASE, before, run, True, measured="otherlab") != fact_keys.key(CASE, after, run, True,
                                                                                        measured="otherlab")
    assert fact_keys.key(CASE, before, run, True) != fact_keys.key(CASE, after, run, True)  # none named: as before

def test_an_environment_without_editable_installs_keeps_the_digest_it_always_had():
    import hashlib

    env = environments.Environment("x", sys.executable, {"numpy": "2.2.6"}, "3.11.7")
    old = hashlib.sha256(json.dumps(["3.11.7", [["numpy", "2.2.6"]]]).encode()).hexdigest()[:16]
    assert env.digest == old  # results files recorded before editable installs were digested compare as before


def test_an_install_too_large_to_digest_is_never_reused_and_says_why(tmp_path, monkeypatch):
    from ttfg.provision import local_installs

    monkeypatch.setattr(local_installs, "MAX_FILES", 1)
    python, module = editable_venv(tmp_path)
    (module.parent / "extra.py").write_text("")
    env = environments.current(python)
    assert env.local["fakegrad"]["tree"] is None
    assert "more than 1 files" in fact_keys.unreusable(env)
    run = RunSettings(repeat=1)
    assert fact_keys.key(CASE, env, run, True) != fact_keys.key(CASE, env, run, True)  # a key of its own each time


def test_a_key_round_trips_and_a_hand_edited_one_is_refused_naming_the_field():
    key = fact_keys.key(CASE, None, RunSettings(repeat=1), counted=True)
    assert FactKey.from_json(json.loads(json.dumps(key.to_json()))) == key
    assert key.valgrind is not None and "hostname" not in key.machine
    timed = fact_keys.key(CASE, None, RunSettings(repeat=1), counted=False)
    assert timed.valgrind is None and "hostname" in timed.machine and timed != key
    for part, bad, says in (("machine", {"cpu": "x", "cpu_count": 0}, "machine.cpu_count: expected a whole number"),
                            ("environment", 3, "environment: expected text"),
                            ("case", {"model": "m"}, "case.backend: expected text")):
        with pytest.raises(FactKeyError, match=says):
            FactKey.from_json({**key.to_json(), part: bad})
    other_cpu = FactKey.from_json({**key.to_json(), "machine": {**key.machine, "cpu": "another CPU"}})
    threads = fact_keys.key(CASE, None, RunSettings(repeat=1, threads=2), counted=True)
    assert not_here(key, [other_cpu, threads], "margin", "ttfg doctor --calibrate-counts").startswith(
        "not calibrated here: the stored margin of this case differs in the machine (cpu)")
    other_case = fact_keys.key(select(["resnet15:blocks=2"], ["torch.eager"], None, check_availability=False)[0][0],
                               None, RunSettings(repeat=1), counted=True)
    assert not_here(key, [other_case], "margin", "how") == "not calibrated here: no margin of this case (how)"
    assert not_here(key, [], "margin", "how") == "this case is not calibrated (how)"


@pytest.fixture
def editable_sides(tmp_path, monkeypatch):
    """A bisect's sides as in ``test_bisect_counts``, run in an environment holding an editable install; the
    environment is read anew (``environments.current``) at every opening, as a real run reads it. The editable
    module, and the opener."""
    from ttfg.measure import instructions as counting

    python, module = editable_venv(tmp_path / "env")
    monkeypatch.setattr(counting, "availability", lambda: (True, "callgrind"))
    return module, FolderSides(lambda rev: tmp_path / "trees" / rev.commit, env=lambda: environments.current(python))


@pytest.mark.full  # a real bisect, resumed: make test-all and CI run it
def test_a_resumed_bisect_counts_anew_after_an_editable_install_was_edited_and_says_why(repo, tmp_path,
                                                                                          editable_sides):
    root, shas = repo
    module, opener = editable_sides
    first = Commits(shas)
    stopped = use_case.run(request(root, shas, tmp_path / "out", total_budget_s=150), clock=first.clock,
                           sampler=first, opener=opener)
    assert stopped.status == use_case.STOPPED and first.counted()
    module.write_text("# edited in place, the version still 1.0\n")
    notes: list[str] = []
    events = use_case.BisectEvents()
    events.note = notes.append
    second = Commits(shas)
    done = use_case.run(request(root, shas, tmp_path / "out"), events, clock=second.clock, sampler=second,
                        opener=opener)
    # Without the edit a resumed bisect counts nothing the first run counted (test_bisect_counts); after it, the
    # commits the first run counted and the resumed one compares again are counted again.
    assert set(first.counted()) & set(second.counted())
    said = [n for n in notes if "were taken under other conditions" in n]
    assert said and said[0].startswith("stored counts of ")
    assert "(the files of the editable or local install fakegrad): counted anew" in said[0]
    fresh = use_case.run(request(root, shas, tmp_path / "fresh"), clock=Commits(shas).clock, sampler=Commits(shas),
                         opener=opener)
    assert done.document["culprit"]["commit"] == fresh.document["culprit"]["commit"] == shas[CULPRIT]
