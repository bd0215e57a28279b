"""The build-loop experiment, as a new user would see it: a 30 ms busy loop in the autograd backend's
``build()`` (38 times the build) must fail the default gate naming ``build``, in a result a person
reads in ten seconds, with the terminal, ``summary.md`` and the report page agreeing number for
number. Its own file, so the suite's workers share the gate tests evenly (``make test``).
"""

import json
import re
import subprocess
import sys
from types import SimpleNamespace

import pytest

from .test_gate import AUTOGRAD, BUILD, BUILD_LOOP, edit, gate, git, repo  # noqa: F401  (repo: the fixture)


@pytest.fixture(scope="module")
def build_loop(repo, tmp_path_factory):
    """The default gate (every tier) of a head whose build got 38 times slower, at 80 columns, and its report page."""
    out_dir = tmp_path_factory.mktemp("build-loop") / "gate"
    out = gate(repo, "--base", repo.first, "--head", repo.build_loop, "--backend", "autograd", "--profiles", "1",
               "--out-dir", str(out_dir), columns=80)
    page = out_dir.parent / "page.html"
    report = subprocess.run([sys.executable, "-m", "ttfg", "report", "--runs", str(out_dir), "--out", str(page)],
                            cwd=repo.path, capture_output=True, text=True, timeout=300)
    return SimpleNamespace(out=out, dir=out_dir, doc=json.loads((out_dir / "gate.json").read_text()),
                           summary=(out_dir / "summary.md").read_text(), report=report,
                           page=page.read_text() if page.exists() else "")


@pytest.mark.slow
@pytest.mark.full  # a real gate/run of tens of seconds: make test-all and CI run it
def test_a_build_38_times_slower_fails_the_default_gate_naming_build(build_loop):
    out, doc = build_loop.out, build_loop.doc
    assert out.returncode == 1, out.stdout + out.stderr
    (case,) = doc["cases"]
    assert case["verdict"]["verdict"] == "regressed" and "build" in case["metric"], case["metric"]
    # With valgrind the instructions tier settles it on the build's own count; without, the time tier's build_s.
    assert (case["tier"], case["metric"]) in (("instructions", "instructions_build"), ("time", "build_s"))
    assert case["figure"]["ratio"] > 1.1 and case["figure"]["head"] > case["figure"]["base"]
    assert "build" in out.stdout and "gate failed" in out.stdout


@pytest.mark.slow
@pytest.mark.full  # a real gate/run of tens of seconds: make test-all and CI run it
def test_a_regressed_case_reads_in_ten_seconds(build_loop):
    """At most 25 lines at 80 columns from the verdict table on; no line wider; no CPython internals."""
    lines = build_loop.out.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("gate verdicts, base "))
    result = lines[start:]
    assert len(result) <= 25, "\n".join(result)
    assert all(len(line) <= 80 for line in lines), [line for line in lines if len(line) > 80]
    assert not re.search(r"Python/ceval\.c|Objects/\w+\.c|_PyEval_", build_loop.out.stdout)
    assert not re.search(r"\d\n\s*(ms|µs|s|%|×)\b", build_loop.out.stdout)  # a number never wraps from its unit


@pytest.mark.slow
@pytest.mark.full  # a real gate/run of tens of seconds: make test-all and CI run it
def test_terminal_summary_and_report_page_agree_number_for_number(build_loop):
    import html as html_module

    from ttfg.present.gate_views import phase_lines, verdict_rows
    from ttfg.results import gate_file

    assert build_loop.report.returncode in (0, 2), build_loop.report.stdout + build_loop.report.stderr
    terminal, summary = build_loop.out.stdout, build_loop.summary
    page = html_module.unescape(re.sub(r"<[^>]+>", " ", build_loop.page))
    page = " ".join(page.split())
    doc = gate_file.load(build_loop.dir / "gate.json")
    (row,) = verdict_rows(doc.outcome.cases)
    numbers = [row.base, row.head, row.ratio] + ([row.interval] if row.interval != "–" else [])
    assert all(n != "–" for n in numbers[:3])
    for where, text in (("terminal", " ".join(terminal.split())), ("summary.md", summary), ("report page", page)):
        missing = [n for n in numbers if n not in text]
        assert not missing, f"{where} lacks {missing}"
        assert row.decided_by in text or row.metric in text, where
    # The largest phase change: the same base, head and change everywhere.
    attribution = build_loop.doc["cases"][0]["attribution"]
    top = max(attribution["phases"], key=lambda p: abs(p["delta"] or 0))
    from ttfg import fmt

    for value in (fmt.seconds(top["base"]), fmt.seconds(top["head"])):
        for where, text in (("terminal", terminal), ("summary.md", summary), ("report page", page)):
            assert value in text, f"{where} lacks the {top['phase']} phase's {value}"
    assert any(line.startswith(f"{top['phase']}:") for line in phase_lines(doc.outcome.cases[0].attribution))
    assert "ttfg gate failed: regression in 1 case of 1" in page and "Verdict per case" in page
