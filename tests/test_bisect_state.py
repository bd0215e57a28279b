"""Issue 40, items 4 and 6: a bisect's state answers only the command it was made for, and an interrupt or a kill
leaves what it names.

In process with the fake comparison of ``test_bisect_search.py`` (a git history of empty commits, levels per
commit) where that is enough; real processes for what only a process shows: a SIGTERM on a running ``ttfg bisect``
(held inside its first comparison by a ``git`` on PATH that waits in ``worktree add``), and a ``kill -9`` that leaves
a worktree registered in the repository.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from ttfg.app import bisect as use_case
from ttfg.cli import main
from ttfg.decide.gate_settings import GateSettings
from ttfg.errors import UsageError
from ttfg.present.bisect_views import bisect_markdown
from ttfg.present.untrusted import md, md_code
from ttfg.provision import worktrees as trees
from ttfg.provision.worktrees import resolve, worktrees
from ttfg.results.bisect_file import load_bisect
from ttfg.results.format import ResultsError
from ttfg.results.sweep_file import sweep_from_json

from .conftest import GitRepo, git
from .test_bisect_search import Levels, repo, request  # noqa: F401 (repo: the fixture, shared)

DATA = Path(__file__).parent / "data"
LEVELS = [0] * 6 + [1] * 3  # the culprit is the 7th commit


def _found(root, shas, out):
    """A finished bisect in ``out`` (the culprit found), under the default settings of ``request``."""
    done = use_case.run(request(root, shas, out), compare=Levels(shas, LEVELS))
    assert done.status == use_case.FOUND and done.code == 1
    return (out / "bisect.json").read_text()


# ---------------------------------------------------------------------------- item 4: state keyed by its settings


def test_a_rerun_with_other_settings_is_refused_naming_each_stored_and_asked(repo, tmp_path):
    """Before: the stored culprit was shown as this command's answer (exit 1), settings never compared."""
    root, shas = repo
    state = _found(root, shas, tmp_path)
    other = replace(GateSettings(tiers=("structural",)), metric="import_s", min_effect=0.9, alpha=0.2)
    never = Levels(shas, LEVELS, stop_after=0)  # any comparison raises: nothing may be measured
    with pytest.raises(UsageError) as refused:
        use_case.run(replace(request(root, shas, tmp_path), settings=other), compare=never)
    text = str(refused.value)
    for said in ("--metric: stored first_grad_s, asked import_s", "--min-effect: stored 0.05, asked 0.9",
                 "--alpha: stored 0.01, asked 0.2", "another --out-dir", str(tmp_path / "bisect.json")):
        assert said in text, text
    assert (tmp_path / "bisect.json").read_text() == state and not never.calls


def test_a_finished_state_refuses_another_budget_an_unfinished_one_continues_under_it(repo, tmp_path):
    """The budget bounds the effort: an undecided bisect reruns with a larger one (the advice it gives), a finished
    one is not shown as the answer of a command with another budget."""
    root, shas = repo
    _found(root, shas, tmp_path / "found")
    larger = replace(GateSettings(tiers=("structural",)), budget_s=1200.0)
    with pytest.raises(UsageError, match="--budget: stored 600.0, asked 1200.0"):
        use_case.run(replace(request(root, shas, tmp_path / "found"), settings=larger), compare=Levels(shas, LEVELS))
    undecided = use_case.run(request(root, shas, tmp_path / "u"), compare=Levels(shas, LEVELS, unknown=(6,)))
    assert undecided.status == use_case.UNDECIDED
    notes = []

    class Events(use_case.BisectEvents):
        def note(self, text):
            notes.append(text)

    done = use_case.run(replace(request(root, shas, tmp_path / "u"), settings=larger), Events(), compare=Levels(shas, LEVELS))
    assert done.status == use_case.FOUND and done.document["key"]["settings"]["budget_s"] == 1200.0
    assert any("--budget 1200.0 (the state's was 600.0)" in n for n in notes), notes


def test_an_older_state_without_settings_is_refused_naming_them_and_still_drawn(repo, tmp_path):
    """``tests/data/bisect_v1_no_settings.json``: a finished bisect as ttfg wrote it before issue 40 (its key has
    no settings). Continued, it is refused naming the settings it lacks; the page's reader still reads it."""
    root, shas = repo
    text = (DATA / "bisect_v1_no_settings.json").read_text()
    fixture = json.loads(text)
    commits = fixture["commits"]
    for old, new in zip(commits, [shas[0], shas[3], shas[-1]]):
        text = text.replace(old, new)
    state = tmp_path / "bisect.json"
    state.write_text(text)
    with pytest.raises(UsageError) as refused:
        use_case.run(request(root, shas, tmp_path), compare=Levels(shas, LEVELS, stop_after=0))
    assert "did not record its decision settings" in str(refused.value)
    assert "--metric" in str(refused.value) and "--min-effect" in str(refused.value)
    assert state.read_text() == text
    assert load_bisect(DATA / "bisect_v1_no_settings.json")["status"] == "found"  # ttfg report --bisect draws it


@pytest.mark.parametrize("edit, field", [
    ({"exit_code": 1.0}, "exit_code: expected 0, 1 or 2 (a whole number), got"),
    ({"exit_code": 0}, "exit_code: 0 disagrees with status 'found', whose exit code is 1"),
    ({"status": "no step"}, "exit_code: 1 disagrees with status 'no step', whose exit code is 0"),
])
def test_the_reader_refuses_an_exit_code_of_the_wrong_type_or_disagreeing_with_the_status(tmp_path, edit, field):
    """Before: 1.0 was taken (stderr printed a stray "1.0"), and "found" with exit 0 passed a CI job."""
    doc = {**json.loads((DATA / "bisect_v1_no_settings.json").read_text()), **edit}
    path = tmp_path / "bisect.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ResultsError, match=f"{path}: {field}".replace("(", r"\(").replace(")", r"\)")):
        load_bisect(path)


def test_a_sweeps_exit_code_must_be_a_whole_number():
    """``releases.json`` is written afresh by every sweep (no state is continued), but its reader had the same hole."""
    with pytest.raises(ResultsError, match=r"x.json: exit_code: expected 0, 1 or 2 \(a whole number\)"):
        sweep_from_json({"format": "ttfg-releases", "version": 1, "package": "p", "cases": [], "releases": [], "pairs": [],
                         "exit_code": 1.0}, "x.json")


# ---------------------------------------------------------------------------- item 6: interrupts and kills


@pytest.mark.parametrize("sig, named", [("SIGTERM", "interrupted by SIGTERM"),
                                         (None, "interrupted by SIGINT (Ctrl-C)")])
def test_an_interrupt_writes_both_files_naming_the_signal_and_a_rerun_continues(repo, tmp_path, sig, named):
    """Before: only bisect.json was written, no summary.md, and every signal was called Ctrl-C."""
    import ttfg.errors

    root, shas = repo
    raised = ttfg.errors.Interrupted(sig) if sig else KeyboardInterrupt()  # SIGTERM: as cli/__init__.py raises it

    class Stops(Levels):
        def __call__(self, *args, **kw):
            if len(self.calls) >= 3:
                raise raised
            return super().__call__(*args, **kw)

    stopped = use_case.run(request(root, shas, tmp_path), compare=Stops(shas, LEVELS))
    assert stopped.status == use_case.INTERRUPTED and stopped.code == 2
    doc = load_bisect(tmp_path / "bisect.json")
    assert doc["status"] == "interrupted" and doc["why"] == named
    summary = (tmp_path / "summary.md").read_text()
    assert "ttfg bisect: interrupted" in summary and named in summary and "rerun the same command" in summary
    if sig:
        assert "Ctrl-C" not in summary
    done = use_case.run(request(root, shas, tmp_path), compare=Levels(shas, LEVELS))
    assert done.status == use_case.FOUND and done.document["culprit"]["commit"] == shas[6]


def _killed_worktree(root: Path) -> Path:
    """A ttfg process that added a worktree of ``root`` and was killed with SIGKILL inside it; the folder."""
    code = ("import sys, time\nfrom pathlib import Path\n"
            "from ttfg.provision.worktrees import resolve, worktrees\n"
            "with worktrees(Path(sys.argv[1]), {'base': resolve(sys.argv[1], 'HEAD')}, prefix='ttfg-bisect-') as w:\n"
            "    print(w['base'], flush=True)\n    time.sleep(120)\n")
    proc = subprocess.Popen([sys.executable, "-c", code, str(root)], stdout=subprocess.PIPE, text=True)
    folder = Path(proc.stdout.readline().strip())
    proc.kill()
    proc.wait()
    proc.stdout.close()
    assert folder.is_dir()
    return folder


def test_worktrees_a_killed_ttfg_left_are_pruned_never_the_users_nor_a_running_ones(repo, tmp_path):
    """Before: kill -9 left ttfg's worktrees registered in the user's repository for good."""
    root, shas = repo
    left = _killed_worktree(root)
    git(root, "worktree", "add", "--detach", str(tmp_path / "mine"), shas[2])  # the user's own: no marker
    with worktrees(root, {"base": resolve(root, shas[1])}) as running:  # this process's: alive
        assert trees.prune_leftovers(root) == 1
        listed = git(root, "worktree", "list", "--porcelain")
        assert str(left) not in listed and not left.exists() and not left.parent.exists()
        assert str(tmp_path / "mine") in listed and str(running["base"]) in listed
        assert (Path(git(running["base"], "rev-parse", "--absolute-git-dir").strip()) / trees.MARKER).is_file()
    assert trees.prune_leftovers(root) == 0 and (tmp_path / "mine").is_dir()


def test_a_bisect_says_how_many_leftover_worktrees_it_removed(repo, tmp_path):
    root, shas = repo
    _killed_worktree(root)
    notes = []

    class Events(use_case.BisectEvents):
        def note(self, text):
            notes.append(text)

    use_case.run(request(root, shas, tmp_path / "out"), Events(), compare=Levels(shas, LEVELS))
    assert any(n.startswith("removed 1 worktree left in") and "killed" in n for n in notes), notes


def _git_waiting_in_worktree_add(folder: Path) -> dict:
    """The environment of a ``ttfg`` whose ``git worktree add`` waits (a file says it started): a bisect held
    inside its first comparison, where a real one installs and measures."""
    real = subprocess.run(["which", "git"], capture_output=True, text=True, check=True).stdout.strip()
    folder.mkdir()
    (folder / "git").write_text(f'#!/bin/sh\ncase " $* " in *" worktree add "*) touch "{folder}/waiting"; '
                                f'sleep 60;; esac\nexec "{real}" "$@"\n')
    (folder / "git").chmod(0o755)
    return {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}", "COLUMNS": "200"}


def test_sigterm_on_a_running_bisect_writes_the_summary_and_names_the_signal(repo, tmp_path):
    """A real ``ttfg bisect`` process given SIGTERM in its first comparison (about 10 s)."""
    root, shas = repo
    env = _git_waiting_in_worktree_add(tmp_path / "bin")
    env.pop("PYTHONPATH", None)
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "ttfg", "bisect", "--good", shas[0], "--bad", shas[-1],
                             "--model", "resnet15:blocks=2", "--backend", "autograd", "--tiers", "structural",
                             "--out-dir", str(out)], cwd=root, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(1200):
            if (tmp_path / "bin" / "waiting").exists() or proc.poll() is not None:
                break
            time.sleep(0.05)
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 2, stdout + stderr
    summary = (out / "summary.md").read_text()
    assert "interrupted by SIGTERM" in summary and "Ctrl-C" not in summary
    assert load_bisect(out / "bisect.json")["why"] == "interrupted by SIGTERM"
    assert "interrupted by SIGTERM" in stdout and "summary.md" in stdout
    assert len(git(root, "worktree", "list").splitlines()) == 1  # its worktrees removed on the way out


# ---------------------------------------------------------------------------- item 6: control characters


def test_control_characters_are_escaped_in_markdown():
    """Before: ``md`` joined whitespace and escaped Markdown, but ESC and NUL reached summary.md raw."""
    for escape in (md, md_code):
        shown = escape("fix \x1b[31mred\x1b[0m and \x00 nul\x07")
        assert "\x1b" not in shown and "\x00" not in shown and "\x07" not in shown
        assert "x1b" in shown and "x00" in shown
    doc = json.loads((DATA / "bisect_v1_no_settings.json").read_text())
    doc["culprit"]["subject"] = doc["good"]["subject"] = "speed up \x1b]0;owned\x07 \x00"
    doc["ends"]["error"] = "cannot import \x1b[2J"
    summary = bisect_markdown(doc)
    assert not any(ch in summary for ch in "\x1b\x00\x07") and "x1b" in summary


def test_control_characters_in_a_subject_are_escaped_in_the_terminal(tmp_path, capsys):
    """``ttfg bisect`` in process, on a commit whose subject holds colour and title sequences: the terminal and
    summary.md show the escapes (the two ends the same commit: "no step", nothing measured)."""
    history = GitRepo.init(tmp_path / "repo")
    message = tmp_path / "message"
    message.write_text("speed up \x1b[31mred\x1b[0m \x1b]0;owned\x07\n")
    history.commit("first")
    git(history.path, "commit", "-q", "--allow-empty", "-F", str(message))
    code = main(["bisect", "--good", "HEAD", "--bad", "HEAD", "--repo", str(history.path), "--model",
                 "resnet15:blocks=2", "--backend", "autograd", "--out-dir", str(tmp_path / "out")])
    printed = capsys.readouterr()
    assert code == 0, printed
    assert "\\x1b[31mred" in printed.out and "\x1b" not in printed.out + printed.err
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "x1b" in summary and "\x1b" not in summary and "\x07" not in summary
