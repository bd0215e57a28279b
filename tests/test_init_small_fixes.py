"""Three small wording and layout fixes of issue 30's list: a revision named once, a quote that ends
where its note ends, and progress lines kept whole (wrapped) in a log."""

from __future__ import annotations

import io

import pytest

from ttfg.provision.worktrees import GitError, resolve
from ttfg.present.gate_views import gate_markdown

from tests.test_gate_policy import sides  # noqa: F401  (the fixture)
from tests.test_gate_summary import render
from tests.test_gate_tiers import Side_, gate_with  # noqa: F401  (the fixture)

from .conftest import GitRepo


def test_a_missing_revision_is_named_once(tmp_path):
    GitRepo.init(tmp_path).commit("x", {"f": "x"})
    with pytest.raises(GitError) as err:
        resolve(tmp_path, "HEAD~2")
    assert "revision revision" not in str(err.value) and "revision 'HEAD~2' not found" in str(err.value)
    with pytest.raises(GitError, match="base revision 'nope' not found"):
        resolve(tmp_path, "nope", "base")


def test_a_note_quote_does_not_swallow_the_next_paragraph(gate_with):  # noqa: F811
    outcome, _, _ = gate_with(Side_(), Side_(build=190_000_000), profiles=0)
    note = "Environments: base ran in old (jax 0.4.38), head in new (jax 0.10.2)."
    text = gate_markdown(outcome, notes=[note, "**Not measured:** something"])
    html = render(text)
    quotes = html.split("<blockquote>")[1:]
    assert len(quotes) >= 2
    assert quotes[0].split("</blockquote>")[0].strip() == f"<p>{note}</p>"
    assert quotes[1].split("</blockquote>")[0].strip() == "<p><strong>Not measured:</strong> something</p>"


def test_progress_lines_are_whole_when_output_is_not_a_terminal():
    from rich.console import Console

    from ttfg.cli.gate import _PrintedEvents

    line = "pair 3: " + " ".join(f"word{i}" for i in range(40)) + " END"
    piped = io.StringIO()
    _PrintedEvents(Console(file=piped, width=80, force_terminal=False), verbose=False).note(line)
    assert "…" not in piped.getvalue() and " ".join(piped.getvalue().split()) == line
    assert all(len(shown) <= 80 for shown in piped.getvalue().splitlines())
    tty = io.StringIO()
    _PrintedEvents(Console(file=tty, width=80, force_terminal=True, color_system=None), verbose=False).note(line)
    assert tty.getvalue().rstrip().endswith("…") and len(tty.getvalue().rstrip()) <= 80
