"""The results format, version 2: typed classes, strict reading and writing, version-1 migration.

tests/data/results_v1.json is a real ``ttfg run`` file written by version 1 (resnet15:blocks=3,
torch.eager and autograd, 2 repeats, allocations); tests/data/gate_v1/ a real A/A gate's output.
"""

import json
import math
import os
import stat
from pathlib import Path

import pytest

from ttfg.files import atomic_write_text
from ttfg.results import record
from ttfg.results.record import ColdEvidence, ResultsError, Sample
from ttfg.results.io import save

DATA = Path(__file__).parent / "data"
TORCH = "resnet15:blocks=3/torch.eager/params=closure,chain=unrolled"
AUTOGRAD = "resnet15:blocks=3/autograd/params=args,chain=unrolled"


def test_version_1_run_file_loads_with_its_values():
    raw = json.loads((DATA / "results_v1.json").read_text())
    assert raw["version"] == 1
    res = record.load(DATA / "results_v1.json")
    assert res.complete and res.gate is None and res.study is None
    assert [c.id for c in res.cases] == [TORCH, AUTOGRAD]
    assert res.environment["git"]["commit"] == raw["environment"]["git"]["commit"]
    for case, raw_case in zip(res.cases, raw["cases"]):
        assert case.variant == raw_case["variant"] and len(case.samples) == len(raw_case["samples"]) == 3
        for s, r in zip(case.samples, raw_case["samples"]):
            assert isinstance(s, Sample) and s.kind == r["kind"] and s.ok is r["ok"] and s.pair is None
            for key in record.SAMPLE_FIELDS[s.kind]:
                if key == "cold_evidence":
                    assert isinstance(s.cold_evidence, ColdEvidence) and s.cold_evidence.text == r[key]
                else:
                    assert getattr(s, key) == r.get(key), key  # a field added since reads as None
    torch = res.case(TORCH)
    assert torch.values("first_grad_s") == [s["first_grad_s"] for s in raw["cases"][0]["samples"][:2]]
    assert torch.good("allocations")[0].alloc_count == raw["cases"][0]["samples"][2]["alloc_count"]
    assert torch.samples[0].cold_evidence.files_at_start == 0 and torch.samples[0].cold_evidence.cache == "cold"
    assert set(res.frame()["case"]) == {TORCH, AUTOGRAD}


def test_version_1_gate_and_study_sections_move_to_their_own_places():
    head = record.load(DATA / "gate_v1" / "head.json")
    raw = json.loads((DATA / "gate_v1" / "head.json").read_text())
    assert head.gate.role == "head" and head.gate.commit == raw["environment"]["gate"]["commit"]
    assert head.gate.settings == raw["settings"]["gate"]
    assert "gate" not in head.environment and "gate" not in head.settings
    timing = head.cases[0].good()
    assert [s.pair for s in timing] == [s["pair"] for s in raw["cases"][0]["samples"][:3]] == [0, 1, 2]
    assert [s.pair_position for s in timing] == [1, 0, 1]
    depth = record.load(DATA / "study-depth.json")
    raw = json.loads((DATA / "study-depth.json").read_text())["settings"]["study"]
    assert depth.study.study == "depth" and "study" not in depth.settings
    assert depth.study.depth[0].fit.k == raw["depth"][0]["fit"]["k"]
    assert depth.study.depth[0].points == [tuple(p) for p in raw["depth"][0]["points"]]


@pytest.mark.parametrize("name", ["results_v1.json", "study-chain.json", "study-depth.json", "gate_v1/base.json"])
def test_saved_version_2_reads_back_identically(tmp_path, name):
    res = record.load(DATA / name)
    out = save(res, tmp_path / "v2.json")
    text = out.read_text()
    assert json.loads(text)["version"] == 2 and "NaN" not in text
    assert record.load(out).to_json() == res.to_json()


def test_migration_is_a_function_of_the_document():
    raw = json.loads((DATA / "gate_v1" / "base.json").read_text())
    before = json.dumps(raw)
    v2 = record.migrate_v1_to_v2(raw)
    assert json.dumps(raw) == before, "the version-1 document is left alone"
    assert v2["version"] == 2 and v2["gate"]["role"] == "base" and v2["study"] is None
    assert v2["cases"][0]["samples"][0]["cold_evidence"]["files_at_start"] == 0
    record.validate(v2)


def _doc():
    return record.load(DATA / "results_v1.json").to_json()


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d["cases"][1]["samples"][0].update(first_grad_s="abc"),
     "cases[1].samples[0].first_grad_s: expected a positive number of seconds, got the string 'abc'"),
    (lambda d: d["cases"][0]["samples"][1].update(import_s=0),
     "cases[0].samples[1].import_s: expected a positive number of seconds, got the number 0"),
    (lambda d: d["cases"][0]["samples"][1].update(cpu_s=-1.5),
     "cases[0].samples[1].cpu_s: expected a positive number of seconds, got the number -1.5"),
    (lambda d: d["cases"][0]["samples"][2].update(alloc_count=True),
     "cases[0].samples[2].alloc_count: expected a whole number >= 0, got the boolean true"),
    (lambda d: d["cases"][0]["samples"][0].update(counters=None, loss=[1]),
     "cases[0].samples[0].loss: expected a number, got a list"),
    (lambda d: d["cases"][0]["samples"][0]["counters"].update(autograd_nodes="many"),
     "cases[0].samples[0].counters.autograd_nodes: expected a number, got the string 'many'"),
    (lambda d: d.update(environment=None), "environment: expected an object, got null"),
    (lambda d: d["cases"][0].update(variant=None), "cases[0].variant: expected an object, got null"),
    (lambda d: d["cases"][0]["samples"][0].update(speed=1.0), "cases[0].samples[0].speed: not a field of a timing"),
    (lambda d: d.update(gate={"role": "middle"}), "gate.role: expected 'base' or 'head', got the string 'middle'"),
    (lambda d: d.update(study={"study": "colour"}), "study.study: expected one of params, chain, depth"),
])
def test_errors_name_the_file_and_the_field_in_words(tmp_path, mutate, message):
    doc = _doc()
    mutate(doc)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ResultsError) as info:
        record.load(path)
    assert str(info.value).startswith(f"{path}: ") and message in str(info.value), str(info.value)
    assert "<class" not in str(info.value)


def test_non_finite_numbers_and_bad_bytes_are_refused(tmp_path):
    doc = _doc()
    doc["cases"][0]["samples"][0]["first_grad_s"] = math.nan
    path = tmp_path / "nan.json"
    path.write_text(json.dumps(doc))  # Python writes NaN, which is not JSON
    with pytest.raises(ResultsError, match=r"nan.json: cases\[0\].samples\[0\].first_grad_s: not strict JSON: NaN is not a "
                                           "JSON number"):
        record.load(path)
    (tmp_path / "latin1.json").write_bytes(b'{"format": "ttfg-r\xe9sults"}')
    with pytest.raises(ResultsError, match="latin1.json: not UTF-8 text"):
        record.load(tmp_path / "latin1.json")
    res = record.load(DATA / "results_v1.json")
    res.cases[0].samples[0].first_grad_s = math.inf
    with pytest.raises(ResultsError, match=r"inf.json: cases\[0\].samples\[0\].first_grad_s: expected a positive"):
        save(res, tmp_path / "inf.json")
    assert not (tmp_path / "inf.json").exists()
    res = record.load(DATA / "results_v1.json")
    res.settings["odd"] = math.nan
    with pytest.raises(ResultsError, match="cannot be written as strict JSON"):
        save(res, tmp_path / "odd.json")


def test_the_runner_refuses_what_the_file_would_refuse():
    from ttfg.measure.runner import garbage

    good = {"kind": "timing", "ok": False, "index": 0, "cache": "cold", "error": None, "stderr_tail": None,
            "started_at": "t", "process_wall_s": 1.0, "import_s": 1.0, "build_s": 0.1, "first_grad_s": 0.2,
            "second_grad_s": 0.01, "loss": 2.0, "cold_evidence": ColdEvidence("cold", 0)}
    assert garbage(good) is None
    assert garbage({**good, "first_grad_s": math.nan}) == ("first_grad_s: expected a positive number of seconds, "
                                                          "got the non-finite number nan")
    assert "second_grad_s: missing from a good timing sample" in garbage({**good, "second_grad_s": None})


def test_atomic_writer_keeps_the_mode_and_the_umask(tmp_path):
    old = os.umask(0o027)
    try:
        new = atomic_write_text(tmp_path / "new.txt", "a")
        assert stat.S_IMODE(new.stat().st_mode) == 0o640
        res = record.load(DATA / "results_v1.json")
        saved = save(res, tmp_path / "r.json")
        assert stat.S_IMODE(saved.stat().st_mode) == 0o640, "not forced to 0600"
    finally:
        os.umask(old)
    os.chmod(saved, 0o664)
    save(res, saved)
    assert stat.S_IMODE(saved.stat().st_mode) == 0o664
    assert not list(tmp_path.glob(".*.tmp"))


def test_schedule_names_its_steps_and_studies_alternate_rounds():
    from ttfg.measure.cases import Case
    from ttfg.measure.runner import RunSettings
    from ttfg.measure.schedule import alternate_rounds, schedule

    a, b = Case("resnet15", "autograd", ()), Case("resnet15", "torch.eager", ())
    steps = schedule([a, b], RunSettings(repeat=3, allocations=True))
    assert [(s.case, s.kind, s.round) for s in steps] == [
        (a, "timing", 0), (b, "timing", 0), (a, "timing", 1), (b, "timing", 1), (a, "timing", 2), (b, "timing", 2),
        (a, "allocations", 0), (b, "allocations", 0)]
    assert [(s.case, s.round) for s in alternate_rounds(steps)][:6] == [(a, 0), (b, 0), (a, 0), (b, 0), (b, 1), (a, 1)]
