"""``regressions --confirm`` and ``ttfg asv record`` remove the worktrees an earlier, killed ttfg left (issue 40 item
6, bisect's and the gate's rule: ``provision.worktrees.pruned_note``, only worktrees ttfg marked as its own).

Before, a confirmation or an asv record killed with SIGKILL left its worktrees registered in the user's repository for
good: neither command pruned them, only a later gate or bisect did.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ttfg.history import asv_record, confirm
from ttfg.history.trends import CONFIRMED
from ttfg.measure.runner import RunSettings

from .conftest import GitRepo, git
from .fake_sides import PlainWorktrees
from .test_bisect_state import _killed_worktree
from .test_trends import CASE, MarkerSampler, drifting, history


def _repo(root: Path) -> tuple[Path, list[str]]:
    lab = GitRepo.init(root)
    shas = [lab.commit(name, {"note.txt": name, **({"slow": "1"} if slow else {})})
            for name, slow in (("a", False), ("b", True))]
    return lab.path, shas


def test_confirm_removes_a_killed_runs_worktrees_and_keeps_the_users(tmp_path):
    root, (a, b) = _repo(tmp_path / "repo")
    left = _killed_worktree(root)
    git(root, "worktree", "add", "--detach", str(tmp_path / "mine"), a)  # the user's own: no marker
    commits = [f"{i:040x}" for i in range(1, 5)] + [a, b] + [f"{i:040x}" for i in range(5, 9)]
    values = drifting(np.random.default_rng(3), 10, 5, step_at=5, factor=1.5, drift=0.01, noise=0.01)
    notes = []
    from ttfg.history.trends import analyse

    found = confirm.confirm(analyse(history((CASE, "first_grad_s", commits, values))), root, 300, tmp_path / "runs",
                            opener=PlainWorktrees(), sampler=MarkerSampler(), run_settings=RunSettings(repeat=1),
                            on_note=notes.append)
    assert [f.status for f in found] == [CONFIRMED]
    assert any(n.startswith("removed 1 worktree left in") and "killed" in n for n in notes), notes
    listed = git(root, "worktree", "list", "--porcelain")
    assert str(left) not in listed and not left.exists() and str(tmp_path / "mine") in listed


def test_asv_record_removes_a_killed_runs_worktrees_before_adding_its_own(tmp_path, monkeypatch, capsys):
    root, (a, _) = _repo(tmp_path / "repo")
    (root / "asv.conf.json").write_text(json.dumps({"version": 1, "project": "lab", "repo": "."}))
    left = _killed_worktree(root)
    monkeypatch.setattr(asv_record, "ensure_machine", lambda name: "testbox")
    # the revision has no asv suites: recorded as a failure at once, after the leftovers are pruned
    assert asv_record.record([a], root / "asv.conf.json", None, "python", True, False, []) == 1
    err = capsys.readouterr().err
    assert "ttfg asv: removed 1 worktree left in" in err and "has no asv suites" in err
    assert str(left) not in git(root, "worktree", "list", "--porcelain") and not left.exists()
