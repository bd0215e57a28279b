"""``ttfg explain --format pprof|speedscope --output DIR``: files read back by their owners' rules.

pprof: each side's file is gunzipped and parsed by protobuf into pprof's ``Profile`` message, and its samples are
resolved through the string, function and location tables to the function, file:line and value written; base and
head hold the same sample types in the same order (``pprof -diff_base`` requires it). Speedscope: the JSON is
checked against ``file-format-spec.ts``'s rules (every frame index in range, one weight per sample, endValue the
weights' sum, a known unit). Bad input (no --output, a file as the folder, a gate with nothing below its phases)
exits 2 with nothing written.
"""

from __future__ import annotations

import gzip
import json

import pytest

from ttfg.cli import main
from ttfg.present import profile_files
from ttfg.results.attribution_record import Attribution, CallDelta, FunctionDelta, LineDelta, PhaseDelta

from tests.test_gate_policy import gate_with, noisy, sides  # noqa: F401  (fixtures)


def attribution() -> Attribution:
    return Attribution(
        "resnet15/jax.jit/args-unrolled", "first_grad_s", True, None,
        phases=[PhaseDelta("trace", "trace_s", 0.5, 0.75, 0.25)],
        functions=[FunctionDelta("conv", "mylib/ops.c", 12, 100.0, 160.0, 40.0, 90.0, 60.0, 50.0)],
        calls=[CallDelta("_scale_step", "mylib/ops.py", 4, 0, 20_000, "project"),
               CallDelta("vspace", "autograd/core.py", 288, 4780, 5780)],
        lines=[LineDelta("graph_break", "mylib/model.py", 6, "step", 0, 1, "project", "Call to graph_break()"),
               LineDelta("jaxpr_eqns", "mylib/layers.py", 42, "block", 30, 150, "project")])


def read_pprof(data: bytes) -> tuple[list[tuple[str, str]], list[tuple[list[tuple[str, str, int]], list[int]]]]:
    """``(sample types, samples)`` of a gzipped profile, each sample's stack (leaf first) as (name, file, line)."""
    prof = profile_files.profile_class().FromString(gzip.decompress(data))
    st = list(prof.string_table)
    assert st[0] == ""  # pprof's rule: the string table starts with the empty string
    functions = {f.id: f for f in prof.function}
    locations = {loc.id: loc for loc in prof.location}
    types = [(st[t.type], st[t.unit]) for t in prof.sample_type]
    samples = []
    for s in prof.sample:
        assert len(s.value) == len(types)
        stack = []
        for lid in s.location_id:
            (line,) = locations[lid].line
            f = functions[line.function_id]
            stack.append((st[f.name], st[f.filename], line.line))
        samples.append((stack, list(s.value)))
    return types, samples


def test_pprof_files_read_back_through_protobuf_name_each_row_with_its_value_on_its_side():
    files = profile_files.files([attribution()], "pprof", "base.json", "head.json")
    assert sorted(files) == ["resnet15_jax.jit_args-unrolled.base.pb.gz", "resnet15_jax.jit_args-unrolled.head.pb.gz"]
    base_types, base = read_pprof(files["resnet15_jax.jit_args-unrolled.base.pb.gz"])
    head_types, head = read_pprof(files["resnet15_jax.jit_args-unrolled.head.pb.gz"])
    assert base_types == head_types == [("phase_time", "nanoseconds"), ("calls", "count"), ("jaxpr_eqns", "count"),
                                        ("graph_break", "count"), ("instructions", "count")]
    k = [t for t, _ in head_types]

    def value(samples, name, kind):
        return sum(v[k.index(kind)] for stack, v in samples if stack[0][0] == name)

    assert value(head, "_scale_step", "calls") == 20_000 and value(base, "_scale_step", "calls") == 0
    (stack, _), = [(st, v) for st, v in head if st[0][0] == "_scale_step"]
    assert stack == [("_scale_step", "mylib/ops.py", 4), ("your code", "", 0)]  # leaf first, under its code
    assert (value(base, "block", "jaxpr_eqns"), value(head, "block", "jaxpr_eqns")) == (30, 150)
    assert value(head, "step: Call to graph_break()", "graph_break") == 1
    assert (value(base, "trace", "phase_time"), value(head, "trace", "phase_time")) == (500_000_000, 750_000_000)
    assert (value(base, "conv", "instructions"), value(head, "conv", "instructions")) == (40, 90)


def test_a_speedscope_file_follows_the_file_format_spec():
    (text,) = profile_files.files([attribution()], "speedscope", "base.json", "head.json").values()
    doc = json.loads(text)
    assert doc["$schema"] == "https://www.speedscope.app/file-format-schema.json"
    frames = doc["shared"]["frames"]
    assert all(isinstance(f["name"], str) and isinstance(f.get("line", 1), int) for f in frames)
    names = [p["name"] for p in doc["profiles"]]
    assert names[:4] == ["resnet15/jax.jit/args-unrolled: phase_time, base", "resnet15/jax.jit/args-unrolled: "
                         "phase_time, head", "resnet15/jax.jit/args-unrolled: calls, base",
                         "resnet15/jax.jit/args-unrolled: calls, head"]
    for p in doc["profiles"]:
        assert p["type"] == "sampled" and p["unit"] in ("none", "nanoseconds", "microseconds", "milliseconds",
                                                        "seconds", "bytes")
        assert len(p["samples"]) == len(p["weights"]) and p["startValue"] == 0
        assert p["endValue"] == sum(p["weights"]) and all(w > 0 for w in p["weights"])
        assert all(0 <= i < len(frames) for stack in p["samples"] for i in stack)
    calls_head = doc["profiles"][3]
    top = [[frames[i] for i in stack] for stack in calls_head["samples"]]
    assert top[0] == [{"name": "your code"}, {"name": "_scale_step", "file": "mylib/ops.py", "line": 4}]
    assert calls_head["weights"][0] == 20_000


def _gate_files(gate_with, tmp_path):  # noqa: F811
    outcome, _ = gate_with(noisy(1.0), noisy(1.2, shift=3), profiles=1)
    return outcome.files["base"], outcome.files["head"]


def test_explain_writes_both_formats_into_a_folder_it_makes(gate_with, tmp_path, capsys):  # noqa: F811
    base, head = _gate_files(gate_with, tmp_path)
    out = tmp_path / "profiles" / "new"
    assert main(["explain", base, head, "--format", "pprof", "--output", str(out)]) == 0
    written = sorted(p.name for p in out.iterdir())
    assert len(written) == 2 and written[0].endswith(".base.pb.gz") and written[1].endswith(".head.pb.gz")
    types, samples = read_pprof((out / written[1]).read_bytes())
    assert any(stack[0][0] == "_scale_step" and v[[t for t, _ in types].index("calls")] == 20_000
               for stack, v in samples)
    assert main(["explain", base, head, "--format", "speedscope", "--output", str(out)]) == 0
    assert len(list(out.glob("*.speedscope.json"))) == 1
    assert "pprof -diff_base" in capsys.readouterr().err


def test_explain_profile_formats_refuse_bad_output_and_nothing_to_write(gate_with, tmp_path, capsys):  # noqa: F811
    base, head = _gate_files(gate_with, tmp_path)
    assert main(["explain", base, head, "--format", "pprof"]) == 2
    assert "give --output DIR" in capsys.readouterr().err
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    assert main(["explain", base, head, "--format", "speedscope", "--output", str(a_file)]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err
    assert a_file.read_text() == "x"
    assert main(["explain", base, head, "--format", "flame", "--output", str(tmp_path / "x")]) == 2
    assert "invalid choice: 'flame'" in capsys.readouterr().err and not (tmp_path / "x").exists()
    # The same files without their calls samples: phases only, nothing to write.
    for path in (base, head):
        raw = json.loads(open(path).read())
        for c in raw["cases"]:
            c["samples"] = [s for s in c["samples"] if s["kind"] == "timing"]
        with open(path, "w") as f:
            json.dump(raw, f)
    out = tmp_path / "empty"
    assert main(["explain", base, head, "--format", "pprof", "--output", str(out)]) == 2
    assert "nothing to write as pprof" in capsys.readouterr().err and not out.exists()


@pytest.mark.slow
def test_the_icicles_draw_base_against_head_and_the_report_fits_390_px(gate_with, tmp_path, monkeypatch):  # noqa: F811
    """A gate whose head calls ``_scale_step`` 20,000 times and traces 12 more equations at ``mylab/layers.py:42``:
    the report's icicles hold those cells in red, under their code and under ``trace``; at a phone's 390 px the
    page does not scroll sideways (headless Chromium, where installed)."""
    from tests import test_gate_policy
    from tests.test_report import CHROMIUM, selftest
    from ttfg.app.report import build_report
    from ttfg.present.icicle import icicles
    from ttfg.results import record

    outcome = test_gate_policy.gate_with_a_grown_model_line(gate_with, monkeypatch)
    a = outcome.attributions[outcome.cases[0].case]
    phases, called = icicles(a)
    trace = next(c for c in phases["rows"][1] if c["label"] == "trace")
    (line,) = phases["rows"][2]
    assert (line["left"], line["width"]) == (trace["left"], trace["width"])  # the model's lines sit under trace
    assert line["title"] == "block (mylab/layers.py:42, jaxpr equations): base 30, head 42, +12"
    assert line["color"].startswith("hsl(0,")  # red: it grew
    step = next(c for c in called["rows"][1] if c["label"] == "_scale_step")
    assert step["title"].endswith("base 0, head 20,000, +20,000") and step["color"] == "hsl(0, 75%, 50%)"
    out = build_report(None, [record.load(outcome.files["base"]), record.load(outcome.files["head"])],
                       tmp_path / "r.html")
    html = out.read_text()
    assert 'class="icicle"' in html and "base 0, head 20,000, +20,000" in html
    if not CHROMIUM:
        return
    seen = selftest(out, 390, tmp_path)
    assert seen["viewport"] == 390 and seen["width"] <= 390, seen


def test_your_codes_calls_keep_their_own_cell_beside_far_more_of_the_frameworks():
    """20,000 calls of the project's function beside 5,000,000 more of the frameworks': "your code" is not folded
    into "others", and the function is drawn under it, named with its line."""
    from ttfg.present.icicle import calls_icicle
    from ttfg.results.attribution_record import Attribution, CallDelta

    a = Attribution("c", "first_grad_s", False, None, calls=[
        CallDelta("_scale_step", "mylab/ops.py", 4, 0, 20_000, "project"),
        CallDelta("vspace", "autograd/core.py", 288, 1_000_000, 6_000_000)])
    level1, level2 = calls_icicle(a)["rows"]
    assert [c["label"] for c in level1] == ["your code", "the frameworks' code"]
    step = next(c for c in level2 if c["label"] == "_scale_step")
    assert step["title"] == "_scale_step (mylab/ops.py:4): base 0, head 20,000, +20,000"
    assert (step["left"], step["width"]) == (level1[0]["left"], level1[0]["width"])
