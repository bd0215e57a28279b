"""Issue 40 item 6 in the gate: the worktrees a killed ttfg left are removed by the next gate, saying how many, and
the gate's progress lines show control characters as escapes.

Why: bisect's tests (``test_bisect_state.py``) and ``regressions --confirm``'s (``test_prune_elsewhere.py``) hold
their own commands to the rule; the gate had the same two changes with no test of its own. Before them, a gate
killed with SIGKILL left its worktrees registered in the user's repository for good, and a commit subject's escape
sequences reached the terminal raw in the gate's first line (a colour, a window title).
"""

from __future__ import annotations

import io

import pytest

from ttfg.provision.worktrees import Revision

from .conftest import git


@pytest.mark.slow  # a ttfg process is killed inside its worktree
def test_a_gate_removes_the_worktrees_a_killed_run_left_and_says_how_many(tmp_path):
    from ttfg.app import gate as use_case
    from ttfg.measure.cases import select

    from .fake_sides import FolderSides, two_commits
    from .test_bisect_state import _killed_worktree

    repo = two_commits(tmp_path / "repo")
    left = _killed_worktree(repo)
    git(repo, "worktree", "add", "--detach", str(tmp_path / "mine"), "HEAD~1")  # the user's own: no marker
    notes: list[str] = []

    class Events(use_case.GateEvents):
        def note(self, text):
            notes.append(text)

    def stop(*args, **kwargs):  # nothing need be measured: the leftovers are removed before the sides open
        raise KeyboardInterrupt

    cases, _ = select(["resnet15:blocks=2"], ["autograd"], None, check_availability=False)
    settings = use_case.settings(timeout_s=600, threads=1, budget_s=60, tiers=("structural",))
    request = use_case.GateRequest(repo, "HEAD~1", cases, settings, tmp_path / "out")
    report = use_case.run(request, Events(), opener=FolderSides(lambda rev: tmp_path / rev.commit), sampler=stop)
    assert report.status == use_case.INTERRUPTED
    said = [n for n in notes if n.startswith("removed 1 worktree left in")]
    assert said and "killed" in said[0] and str(repo) in said[0], notes
    listed = git(repo, "worktree", "list", "--porcelain")
    assert str(left) not in listed and not left.exists()
    assert str(tmp_path / "mine") in listed and (tmp_path / "mine").is_dir()


def test_the_gates_progress_lines_show_control_characters_as_escapes(tmp_path):
    from types import SimpleNamespace

    from rich.console import Console

    from ttfg.cli.gate import _PrintedEvents
    from ttfg.decide.gate_settings import GateSettings

    rev = Revision("HEAD", "b" * 40, "speed up \x1b[31mred\x1b[0m \x1b]0;owned\x07")
    request = SimpleNamespace(settings=GateSettings(), cases=[], out_dir=tmp_path)
    for terminal in (False, True):
        shown = io.StringIO()
        events = _PrintedEvents(Console(file=shown, width=200, force_terminal=terminal, color_system=None),
                                verbose=False)
        events.started(request, rev, rev)
        events.note("installing head: uv said \x1b[2J\x00 cleared")
        events.warning("a side's path /tmp/\x1b]8;;https://evil.example\x07x")
        text = shown.getvalue()
        assert not any(c in text for c in ("\x1b", "\x00", "\x07")), repr(text)
        assert "speed up \\x1b[31mred\\x1b[0m" in text and "\\x1b[2J\\x00 cleared" in text
        assert "\\x1b]8;;https://evil.example\\x07x" in text
