"""The gate's PR comment (summary.md) as GitHub shows it, and the terminal's ten-second view.

The outcomes come from the in-process sampler of test_gate_tiers.py (no processes); the
Markdown is rendered by markdown-it-py with GitHub's tables, and once by headless Chromium
into a screenshot, so that what a reviewer sees is checked, not only the source text.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from ttfg.present.gate_views import interpreter_internal, shown_functions, wrapped
from ttfg.results.attribution_record import FunctionDelta
from ttfg.present.gate_views import GATE_MARKER, gate_markdown

from tests.test_gate_policy import sides  # noqa: F401  (the fixture)
from tests.test_gate_tiers import Side_, gate_with  # noqa: F401  (the fixture)

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def visible_lines(markdown: str) -> list[str]:
    """The source lines GitHub shows before anyone clicks: outside every <details>, not blank, not comments."""
    shown, depth = [], 0
    for line in markdown.splitlines():
        opens, closes = line.count("<details"), line.count("</details>")
        if depth == 0 and not opens and line.strip() and not line.startswith("<!--"):
            shown.append(line)
        depth += opens - closes
    return shown


def render(markdown: str) -> str:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": True}).enable("table").render(markdown)


@pytest.fixture
def regressed(gate_with):  # noqa: F811
    outcome, _, _ = gate_with(Side_(), Side_(build=190_000_000), profiles=0)
    return outcome


def test_the_comment_leads_with_the_verdict_table_then_one_sentence(regressed):
    from markdown_it import MarkdownIt

    text = gate_markdown(regressed, noise="noise floor: not estimated")
    assert text.startswith(GATE_MARKER + "\n## ttfg gate: regression\n")
    tokens = [t.type for t in MarkdownIt("commonmark", {"html": True}).enable("table").parse(text)
              if t.type in ("heading_open", "table_open", "paragraph_open", "html_block")]
    assert tokens[:4] == ["html_block", "heading_open", "table_open", "paragraph_open"]
    passing = next(line for line in text.splitlines() if line.startswith("_Passing means: "))
    assert passing.count(". ") == 0 and passing.endswith("._")
    (row,) = [line for line in text.splitlines() if line.startswith("| `resnet15")][:1]
    assert "**regressed**" in row and "instructions: build" in row and "| 38× |" in row


def test_the_details_are_collapsed_and_a_failure_shows_at_most_15_lines(regressed):
    text = gate_markdown(regressed, noise="noise floor: not estimated")
    assert "<details open" not in text and text.count("<details>") == text.count("</details>") >= 1
    shown = visible_lines(text)
    assert len(shown) <= 15, "\n".join(shown)
    assert shown[-1].startswith("<sub>Gate that ran: ")


def test_the_footer_describes_the_gate_that_ran(gate_with):  # noqa: F811
    counted, _, _ = gate_with(Side_(), Side_(instructions=10_050_000))
    footer = gate_markdown(counted).rstrip().splitlines()[-1]
    assert "structural → instructions (callgrind) → time" in footer  # the time tier screened the import
    assert "the time tier guarded first gradient, process TTFG, import, build at alpha 0.01 over all 4" in footer
    timed, _, _ = gate_with(Side_(), Side_(), tiers=("time",), max_pairs=20)
    footer = gate_markdown(timed).rstrip().splitlines()[-1]
    assert footer.startswith("<sub>Gate that ran: time;") and "structural" not in footer
    uncounted, _, _ = gate_with(Side_(), Side_(), valgrind=False, max_pairs=20)
    assert "instructions (not counted here)" in gate_markdown(uncounted)


def test_the_comment_renders_as_github_markdown(regressed):
    html = render(gate_markdown(regressed, noise="noise floor: not estimated"))
    assert html.index("<h2>") < html.index("<table>") < html.index("<p><em>Passing means: ")
    assert "<details><summary>" in html and "<strong>regressed</strong>" in html
    assert not re.search(r"\|\s*---", html), "a table GitHub would show as text"


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed: the rendered comment is not screenshotted")
def test_the_rendered_comment_screenshot_is_short_and_not_blank(regressed, tmp_path):
    """Headless Chromium draws the comment at a PR's width; collapsed, a failure fits about one screen."""
    from PIL import Image

    page = tmp_path / "comment.html"
    page.write_text("<!doctype html><meta charset='utf-8'><style>body{font:14px -apple-system,Segoe UI,sans-serif;"
                    "width:860px;margin:16px}table{border-collapse:collapse}td,th{border:1px solid #d0d7de;"
                    "padding:4px 8px}</style>" + render(gate_markdown(regressed, noise="noise floor: not estimated")))
    shot = tmp_path / "comment.png"
    subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--window-size=900,1400", f"--screenshot={shot}", page.as_uri()],
                   capture_output=True, timeout=120, check=False)
    import numpy as np

    ink = np.asarray(Image.open(shot).convert("L")) < 200
    rows = np.flatnonzero(ink.any(axis=1))
    assert rows.size, "nothing was drawn"
    assert rows[-1] < 700, f"the collapsed comment is {rows[-1]} px tall at 900 px wide"


def test_interpreter_internals_are_left_out_unless_asked():
    assert interpreter_internal("_PyEval_EvalFrameDefault", "/tmp/python-build.1/Python-3.11.7/Python/ceval.c:1630")
    assert interpreter_internal("_PyFunction_Vectorcall", "./Include/internal/pycore_pystate.h:76")
    assert interpreter_internal("malloc", "/build/glibc-abc/malloc/malloc.c:3287")
    assert interpreter_internal("0x0000000004936718", "???:0")
    assert interpreter_internal("Thread.run", "threading.py:975")
    assert interpreter_internal("_find_and_load", "<frozen importlib._bootstrap>:1165")
    assert not interpreter_internal("AutogradBackend.build", "ttfg/engines/autograd_numpy.py:81")
    assert not interpreter_internal("f_wrapped", "autograd/tracer.py:50")
    assert not interpreter_internal("xla::cpu::CpuCompiler::RunBackend",
                                    "/usr/lib/python3.11/site-packages/jaxlib/xla_extension.so")
    functions = [FunctionDelta(fn, where.rsplit(":")[0], int(where.rsplit(":")[1]), None, None, None, None, incl, own,
                               unit="s")
                 for fn, where, incl, own in (("build", "ttfg/engines/autograd_numpy.py:81", 0.03, 0.03),
                                              ("profile", "ttfg/measure/probe.py:188", 0.08, 0.0),
                                              ("Thread.run", "threading.py:975", 0.05, 0.05))]
    assert [f.fn for f in shown_functions(functions, "s")] == ["build"]
    assert [f.fn for f in shown_functions(functions, "s", internals=True)] == ["Thread.run", "build"]


def test_a_number_never_wraps_away_from_its_unit():
    text = "the build took 22.9 ms more, 38.6× its base of 802 µs, and import 1.5 %"
    for width in range(12, 60):
        for line in wrapped(text, width):
            assert not re.match(r"^\s*(ms|µs|×|%)", line), (width, line)
