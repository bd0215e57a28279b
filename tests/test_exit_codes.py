"""The exit-code contract CI relies on: 0 pass, 1 regression, 2 anything broken; never a traceback.

Everything here runs ``main`` in-process (milliseconds); the option checks must refuse
bad numbers before any work starts, so no probe is ever spawned.
"""

from __future__ import annotations

import pytest

from ttfg.cli import listing as listing_cli, main, run as run_cli

from .conftest import command_parsers

BAD_NUMBERS = [
    ("run", "--timeout", "nan"), ("run", "--timeout", "0"), ("run", "--timeout", "-5"), ("run", "--timeout", "inf"),
    ("run", "--repeat", "0"), ("run", "--repeat", "1e8"), ("run", "--repeat", "2.5"), ("run", "--repeat", "100001"),
    ("run", "--threads", "-2"), ("run", "--threads", "0"), ("run", "--alloc-repeat", "0"),
    ("check", "--tolerance", "nan"), ("check", "--tolerance", "-1"), ("check", "--tolerance", "1.5"),
    ("study", "params", "--repeat", "0"), ("study", "params", "--timeout", "nan"), ("study", "params", "--threads", "-1"),
    ("gate", "--base", "HEAD", "--alpha", "nan"), ("gate", "--base", "HEAD", "--alpha", "0"),
    ("gate", "--base", "HEAD", "--alpha", "1.5"), ("gate", "--base", "HEAD", "--min-effect", "-0.1"),
    ("gate", "--base", "HEAD", "--min-effect", "nan"), ("gate", "--base", "HEAD", "--min-pairs", "1"),
    ("gate", "--base", "HEAD", "--max-pairs", "0"), ("gate", "--base", "HEAD", "--max-failures", "0"),
    ("gate", "--base", "HEAD", "--timeout", "nan"), ("gate", "--base", "HEAD", "--threads", "-2"),
    ("compare", "a.json", "b.json", "--alpha", "nan"),
    ("report", "--threshold", "nan"), ("report", "--threshold", "-1"), ("report", "--last", "0"),
    ("report", "--back", "-3"), ("regressions", "--threshold", "inf"),
]


@pytest.mark.parametrize("argv", BAD_NUMBERS, ids=lambda a: " ".join(a))
def test_bad_numbers_exit_2_before_any_work(argv, capsys, monkeypatch):
    def no_work(*a, **k):  # the command must never start
        raise AssertionError("a command ran with an invalid option")

    for name in ("cmd_run", "cmd_check", "cmd_study"):
        monkeypatch.setattr(run_cli, name, no_work)
    assert main(list(argv)) == 2
    err = capsys.readouterr().err
    flag = [a for a in argv if a.startswith("--")][-1]
    assert f"argument {flag}:" in err and "Traceback" not in err, err
    assert "<class" not in err


def test_percent_and_plain_fractions_agree():
    from ttfg.cli import options

    assert options.min_effect("5%") == pytest.approx(0.05) == options.min_effect("0.05")


@pytest.mark.parametrize("exc", [OverflowError("math range error"), OSError(28, "No space left on device", "runs/r.json"),
                                 UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"),
                                 RuntimeError("boom")])
def test_unexpected_errors_exit_2_with_one_line(exc, capsys, monkeypatch):
    def explode(args):
        raise exc

    monkeypatch.setattr(listing_cli, "cmd_list", explode)
    assert main(["list"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("ttfg list: error:") and "--debug" in err, err
    assert "Traceback" not in err
    if isinstance(exc, OSError):
        assert "No space left on device: runs/r.json" in err


def test_debug_shows_the_traceback_and_still_exits_2(capsys, monkeypatch):
    monkeypatch.setattr(listing_cli, "cmd_list", lambda args: 1 / 0)
    assert main(["--debug", "list"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and "ZeroDivisionError" in err


def test_interrupt_exits_2(capsys, monkeypatch):
    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(listing_cli, "cmd_list", interrupted)
    assert main(["list"]) == 2
    assert "interrupted" in capsys.readouterr().err


def test_a_stray_exit_code_becomes_2(capsys, monkeypatch):
    monkeypatch.setattr(listing_cli, "cmd_list", lambda args: 130)
    assert main(["list"]) == 2
    assert "internal error" in capsys.readouterr().err


def test_help_exits_0_and_usage_errors_2(capsys):
    assert main(["--help"]) == 0
    assert main(["no-such-command"]) == 2
    assert main([]) == 2


@pytest.mark.parametrize("text, same", [("resnet15:", "resnet15"), ("resnet15:blocks=15", "resnet15"),
                                        ("convnext_tiny:depths=3x3x9x3", "convnext_tiny"),
                                        ("resnet15:blocks=30", "resnet15:blocks=30")])
def test_model_ids_are_normalised(text, same):
    from ttfg.measure.cases import normalize_model, select

    assert normalize_model(text) == same
    cases, _ = select([text, same], ["autograd"], check_availability=False)
    assert [c.model for c in cases] == [same]  # one model, one id


@pytest.mark.parametrize("command", ["run", "check", "study"])
@pytest.mark.parametrize("model, message", [("resnet15:blocks=0", "blocks must be >= 1"),
                                            ("resnet15:blocks=2,blocks=3", "given twice"),
                                            ("bogus", "unknown model 'bogus'")])
def test_bad_models_are_refused_by_every_command_before_any_process(command, model, message, capsys, monkeypatch):
    from ttfg.measure import runner

    def no_process(*a, **k):
        raise AssertionError("a probe was spawned for an invalid model")

    monkeypatch.setattr(runner, "run_sample", no_process)
    argv = [command, *(["params"] if command == "study" else []), "--model", model]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err, err


def test_a_run_where_nothing_was_measured_exits_2(capsys, monkeypatch, tmp_path):
    """Every process failed: that is a broken run (2), not a finding about a case (1)."""
    from ttfg.measure import runner

    from ttfg.results.model import Sample

    def failing(case, kind, cache, index, settings, *a, **k):
        return Sample(kind, ok=False, index=index, cache=cache, error="deliberate")

    monkeypatch.setattr(runner, "run_sample", failing)
    code = main(["run", "--model", "resnet15:blocks=2", "--backend", "autograd", "--repeat", "1",
                 "--out", str(tmp_path / "r.json")])
    assert code == 2 and "nothing measured" in capsys.readouterr().out


def _outputs_cases(tmp_path):
    folder = tmp_path / "a-folder"
    folder.mkdir()
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    return [
        (["run", "--out", str(folder)], "is a folder"),
        (["run", "--out", str(a_file / "r.json")], "is a file, not a folder"),
        (["study", "params", "--json", str(tmp_path / "missing" / "x.json")], "does not exist"),
        (["study", "params", "--out", str(folder)], "is a folder"),
        (["report", "--out", str(folder)], "is a folder"),
        (["compare", "a.json", "b.json", "--output", str(tmp_path / "nope" / "c.md")], "does not exist"),
        (["gate", "--base", "HEAD", "--out-dir", str(a_file)], "is a file, not a folder"),
        (["gate", "--base", "HEAD", "--expectations", "e.csv", "--write-suggested", str(folder)], "is a folder"),
        (["expect", "update", "--runs", "r.json", "--out", str(folder)], "is a folder"),
        (["expect", "check", "e.csv", "--runs", "r.json", "--write-suggested", str(tmp_path / "no" / "e.csv")],
         "does not exist"),
    ]


def test_bad_output_paths_exit_2_before_any_work(tmp_path, capsys, monkeypatch):
    from ttfg.measure import runner

    monkeypatch.setattr(runner, "run_sample", lambda *a, **k: (_ for _ in ()).throw(AssertionError("measured")))
    for argv, message in _outputs_cases(tmp_path):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err, (argv, err)


def test_a_read_only_filesystem_is_caught_before_work(tmp_path, monkeypatch):
    """As root, os.access says yes everywhere; the check really tries to create a file."""
    import tempfile

    from ttfg.cli import outputs
    from ttfg.errors import UsageError

    def read_only(*a, **k):
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(tempfile, "NamedTemporaryFile", read_only)
    with pytest.raises(UsageError, match="Read-only file system"):
        outputs.output_file(tmp_path / "r.json", "--out")


def test_report_links_from_user_paths_are_relative_paths_never_a_scheme(tmp_path):
    from ttfg.present.report import asv_link_for

    site = tmp_path / "javascript:alert(1)"
    site.mkdir()
    (site / "index.html").write_text("<html></html>")
    link = asv_link_for(tmp_path / "index.html", site)
    assert link.startswith("./") and "javascript:" not in link
    assert asv_link_for(tmp_path / "out" / "index.html", site).startswith("../")


def test_a_gate_out_dir_given_to_runs_skips_the_gate_outputs_by_kind(tmp_path, capsys, monkeypatch):
    from .synthetic_results import CASE, results, save, timing_run

    folder = tmp_path / "gate"
    folder.mkdir()
    for side in ("base", "head"):
        save(results({CASE: timing_run([1.0, 1.1, 0.9])}), folder / f"{side}.json")
    (folder / "gate.json").write_text('{"format": "ttfg-gate", "version": 1, "cases": []}')
    (folder / "compare.json").write_text('{"format": "ttfg-comparison", "version": 1, "rows": []}')
    monkeypatch.chdir(tmp_path)  # no results/ here: trends come from the two results files
    assert main(["regressions", "--runs", str(folder)]) == 0
    err = capsys.readouterr().err
    assert "gate.json: a gate outcome, not a results file; skipped" in err
    assert "compare.json: a comparison" in err and "Traceback" not in err


def test_every_help_text_reads_cleanly():
    """No doubled percent signs or escapes leak into --help (study's said '95%% intervals')."""
    from ttfg.cli import build_parser

    for path, parser in command_parsers(build_parser()):
        text = parser.format_help()
        assert "%%" not in text and "\\n" not in text, f"ttfg {' '.join(path)} --help: {text}"


def test_one_results_file_has_one_writer(tmp_path):
    """A second writer of the same file is refused before it writes; the first keeps its samples."""
    from ttfg.errors import UsageError
    from ttfg.results import io
    from ttfg.results.model import Sample
    from ttfg.results.writer import ResultsWriter
    from ttfg.measure.runner import RunSettings, new_results
    from ttfg.measure.cases import select

    out = tmp_path / "r.json"
    cases, skipped = select(["resnet15:blocks=2"], ["autograd"])
    first = ResultsWriter(new_results(cases, skipped, RunSettings()), out)
    first.save()
    with pytest.raises(UsageError, match=r"being written by another ttfg process \(pid \d+\)"):
        ResultsWriter(new_results(cases, skipped, RunSettings()), out)
    first.append(cases[0].id, Sample("timing", ok=False, index=0, cache="cold", error="kept"))
    first.finish()
    assert not (tmp_path / ".r.json.lock").exists()  # released and removed
    assert len(io.load(out).cases[0].samples) == 1
    again = ResultsWriter(new_results(cases, skipped, RunSettings()), out)  # free again
    again.close()


def test_a_second_run_on_the_same_out_is_refused_before_it_measures(tmp_path):
    """Two processes, one ``--out``: the later one exits 2 naming the file, and spawns no probe."""
    import subprocess
    import sys

    from ttfg.files import OneWriter

    out = tmp_path / "r.json"
    out.write_text("{}")
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom ttfg.files import OneWriter\n"
                               f"OneWriter({str(out)!r}).acquire()\nprint('held', flush=True)\ntime.sleep(60)"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        run = subprocess.run([sys.executable, "-m", "ttfg", "run", "--model", "resnet15:blocks=2", "--backend",
                              "autograd", "--repeat", "1", "--out", str(out)], capture_output=True, text=True,
                             timeout=120)
    finally:
        holder.kill()
        holder.wait()
    assert run.returncode == 2, run.stdout + run.stderr
    assert f"{out} is being written by another ttfg process (pid {holder.pid})" in run.stdout + run.stderr
    assert "Traceback" not in run.stderr and "cold process" not in run.stdout
    assert out.read_text() == "{}"  # untouched
    with OneWriter(out):  # the kernel dropped the dead holder's lock
        pass


def test_a_full_disk_mid_run_stops_with_exit_2_and_keeps_the_saved_samples(tmp_path, capsys, monkeypatch):
    """ENOSPC on the third save: the run stops at once, names the file, and the file on disk is the
    last complete one (the samples before), never half written, with no temporary file left."""
    import errno
    import os as _os

    from ttfg import files
    from ttfg.measure import runner
    from ttfg.results import io
    from ttfg.results.model import Sample

    calls = {"n": 0, "probes": 0}

    def sample(case, kind, cache, index, settings, *a, **k):
        calls["probes"] += 1
        return Sample(kind, ok=False, index=index, cache=cache, error=f"sample {index}")

    real_fsync = _os.fsync

    def fsync(fd):
        calls["n"] += 1
        if calls["n"] >= 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(runner, "run_sample", sample)
    monkeypatch.setattr(files.os, "fsync", fsync)
    out = tmp_path / "r.json"
    code = main(["run", "--model", "resnet15:blocks=2", "--backend", "autograd", "--repeat", "5", "--out", str(out)])
    printed = capsys.readouterr().out
    assert code == 2
    assert f"cannot write {out}: No space left on device" in " ".join(printed.split())
    assert calls["probes"] == 2  # stopped at the first failed save, did not measure on into the void
    saved = io.load(out)  # the first sample's save is intact: old file or new file, never half
    assert [s.error for s in saved.cases[0].samples] == ["sample 0"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]  # no temporary file, lock released
