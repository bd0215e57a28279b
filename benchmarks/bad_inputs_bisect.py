"""``bad_inputs.py``'s rows for a bisect's state (issue 40, items 4 and 6), and their files.

Kept beside ``bad_inputs.py`` (which imports it) so that the rows of one issue live in one place. Each row is a real
``ttfg`` process in the scratch folder, on a small repository made here (two commits; the second's subject holds
colour and window-title escape sequences):

- ``bisect 40.4``: a rerun on an out-dir whose state was made under other settings (``--metric``, ``--min-effect``,
  ``--alpha``) is refused naming each, stored and asked; a state written before the settings were recorded
  (``tests/data/bisect_v1_no_settings.json``, its commits made this repository's) is refused naming what it lacks;
  an interrupted state whose ``counts.json`` belongs to another bisect is refused on resuming, both files left;
  a state whose ``exit_code`` is 1.0, or 0 beside status "found", is refused naming the file and the field, by
  ``bisect`` and by ``report --bisect``;
- ``bisect 40.5``: a state whose status is "turn" with no turn, or a turn whose commit is no probe found to be a
  turn, or whose shape is neither peak nor dip, is refused naming the file and the field, by ``bisect`` and by
  ``report --bisect``, and left as it is;
- ``bisect 40.6``: control characters in a commit subject are shown as escapes in the terminal and in summary.md,
  and so are those in a stored state's text (its ``why``, an author) when a finished bisect is shown from it; a
  bisect given SIGTERM, or SIGINT (Ctrl-C), inside its first comparison (a ``git`` on PATH sends the signal to
  its parent from ``worktree add``) writes the ``summary.md`` it names, names the signal and leaves no worktree; the
  worktree a ``kill -9``'d ttfg left registered in a repository is removed by the next bisect, saying so, and the
  user's own worktree stays.

The state the settings row reads is made in :func:`files` by a real ``ttfg bisect`` whose two ends are the same
commit ("no step", nothing measured, about a second).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUBJECT = "speed up \x1b[31mred\x1b[0m \x1b]0;owned\x07"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=bad-inputs", "-c", "user.email=b@example.com",
                           *args], check=True, capture_output=True, text=True).stdout.strip()


def _state(folder: Path, doc: dict) -> Path:
    folder.mkdir(parents=True)
    (folder / "bisect.json").write_text(json.dumps(doc, indent=1) + "\n")
    return folder


def _signalling_git(folder: Path, sig: str) -> Path:
    """A folder holding a ``git`` that sends ``sig`` to its parent (the ttfg running it) from ``worktree add``, then
    waits to be stopped: a bisect interrupted inside its first comparison, where a real one installs and measures."""
    real = shutil.which("git")
    folder.mkdir()
    (folder / "git").write_text(f'#!/bin/sh\ncase " $* " in *" worktree add "*) kill -{sig} $PPID; sleep 60;; '
                                f'esac\nexec "{real}" "$@"\n')
    (folder / "git").chmod(0o755)
    return folder


def _killed_worktree(repo: Path) -> Path:
    """A worktree of ``repo`` made by a ttfg process killed with SIGKILL inside it (ttfg's marker, never removed)."""
    code = ("import sys, time\nfrom pathlib import Path\nfrom ttfg.provision.worktrees import resolve, worktrees\n"
            "with worktrees(Path(sys.argv[1]), {'base': resolve(sys.argv[1], 'HEAD')}, prefix='ttfg-bisect-') as w:\n"
            "    print(w['base'], flush=True)\n    time.sleep(120)\n")
    proc = subprocess.Popen([sys.executable, "-c", code, str(repo)], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    folder = Path(proc.stdout.readline().strip())
    proc.kill()
    proc.wait()
    proc.stdout.close()
    return folder


def files(d: Path, tiny: list[str]) -> dict:
    """The repository, a state made under the default settings, and the hand-edited states."""
    repo = d / "bisect-state-repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "README").write_text("state\n")
    _git(repo, "add", "README")
    _git(repo, "commit", "-q", "-m", "first")
    (d / "bisect-subject").write_text(SUBJECT + "\n")
    _git(repo, "commit", "-q", "--allow-empty", "-F", str(d / "bisect-subject"))
    first, second = _git(repo, "rev-parse", "HEAD~1"), _git(repo, "rev-parse", "HEAD")
    made = {"bisect-state-repo": repo, "bisect-defaults": d / "bisect-defaults"}
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    subprocess.run([sys.executable, "-m", "ttfg", "bisect", "--good", "HEAD", "--bad", "HEAD", "--repo", str(repo),
                    *tiny, "--out-dir", str(made["bisect-defaults"])], check=True, capture_output=True, cwd=ROOT,
                   env=env, timeout=300)
    text = (ROOT / "tests" / "data" / "bisect_v1_no_settings.json").read_text()
    old = json.loads(text)
    for was, now in zip((old["commits"][0], old["commits"][-1]), (first, second)):
        text = text.replace(was, now)
    old = json.loads(text)
    old["commits"] = [first, second]  # the range of this repository: the old probe's commit is not in it
    old["probes"], old["answer"]["good"], old["answer"]["candidates"] = [], first, [second]
    old["culprit"]["parent"] = first
    made["bisect-old"] = _state(d / "bisect-old", old)
    made["bisect-float"] = _state(d / "bisect-float", {**old, "exit_code": 1.0})
    made["bisect-found-0"] = _state(d / "bisect-found-0", {**old, "exit_code": 0})
    made["bisect-turn-none"] = _state(d / "bisect-turn-none", {**old, "status": "turn", "turns": []})
    turn = {"commit": second, "shape": "dip", "good": first, "bad": second, "probes": []}
    made["bisect-turn-stray"] = _state(d / "bisect-turn-stray", {**old, "status": "turn", "turns": [turn]})
    made["bisect-turn-shape"] = _state(d / "bisect-turn-shape", {**old, "status": "turn",
                                                                  "turns": [{**turn, "shape": "valley"}]})
    # A finished state ("no step") whose stored text holds control characters, as a hostile or damaged file has it.
    shown = json.loads((made["bisect-defaults"] / "bisect.json").read_text())
    shown["why"] = "the same commit \x1b[2J\x00 cleared"
    shown["good"]["author"] = "someone \x1b]0;owned\x07"
    made["bisect-escaped"] = _state(d / "bisect-escaped", shown)
    made["git-term"] = _signalling_git(d / "git-term", "TERM")
    made["git-int"] = _signalling_git(d / "git-int", "INT")
    # An interrupted bisect (SIGTERM in its first comparison: a state a rerun resumes) beside a counts.json that
    # belongs to another bisect.
    made["bisect-foreign"] = d / "bisect-foreign"
    subprocess.run([sys.executable, "-m", "ttfg", "bisect", "--good", "HEAD~1", "--bad", "HEAD", "--repo", str(repo),
                    *tiny, "--out-dir", str(made["bisect-foreign"])], capture_output=True, cwd=ROOT, timeout=300,
                   env={**env, "PATH": f"{made['git-term']}{os.pathsep}{env['PATH']}"})
    (made["bisect-foreign"] / "counts.json").write_text(json.dumps(
        {"format": "ttfg-bisect-counts", "version": 2, "bisect": {"good": "another", "bad": "bisect"},
         "conditions": {}, "samples": []}))
    # A repository of its own with a worktree a killed ttfg left, and the user's own worktree beside it.
    kill = d / "bisect-kill-repo"
    kill.mkdir()
    _git(kill, "init", "-q", "-b", "main")
    _git(kill, "commit", "-q", "--allow-empty", "-m", "first")
    made["bisect-kill-repo"], made["bisect-left"] = kill, _killed_worktree(kill)
    made["bisect-mine"] = d / "bisect-mine"
    _git(kill, "worktree", "add", "-q", "--detach", str(made["bisect-mine"]), "HEAD")
    return made


def rows(d: Path, m: dict, out, tiny: list[str]) -> list:
    """The rows (``bad_inputs.Row``), in the order of the issue's items."""
    from bad_inputs import Row, _all, _contains, _unchanged

    repo = str(m["bisect-state-repo"])
    same = ["bisect", "--good", "HEAD", "--bad", "HEAD", "--repo", repo, *tiny]
    ends = ["bisect", "--good", "HEAD~1", "--bad", "HEAD", "--repo", repo, *tiny]

    def escaped(proc) -> str | None:
        summary = (Path(out("bisect-40-6")) / "summary.md").read_text()
        if "\x1b" in proc.stdout + proc.stderr or "\x1b" in summary or "\x07" in summary:
            return "a raw control character reached the output"
        return None if "\\x1b[31mred" in proc.stdout and "x1b" in summary else "the escapes are not shown"

    def interrupted(folder: str, named: str, never: str | None) -> callable:
        def check(proc) -> str | None:
            summary = Path(out(folder)) / "summary.md"
            if not summary.is_file():
                return "summary.md was named but not written"
            text = summary.read_text()
            state = json.loads((Path(out(folder)) / "bisect.json").read_text())
            if named not in text or state.get("why") != named or state.get("status") != "interrupted":
                return f"the signal is not named as {named!r}"
            if never is not None and never in proc.stdout + proc.stderr + text:
                return f"says {never!r}"
            left = _git(m["bisect-state-repo"], "worktree", "list").splitlines()
            return None if len(left) == 1 else f"worktrees left registered: {left[1:]}"
        return check

    def pruned(proc) -> str | None:
        listed = _git(m["bisect-kill-repo"], "worktree", "list", "--porcelain")
        if str(m["bisect-left"]) in listed or m["bisect-left"].exists():
            return "the killed run's worktree is still there"
        return None if str(m["bisect-mine"]) in listed and m["bisect-mine"].is_dir() else "the user's worktree is gone"

    def shown_escaped(proc) -> str | None:
        text = proc.stdout + proc.stderr
        if any(c in text for c in ("\x1b", "\x00", "\x07")):
            return "a raw control character reached the terminal"
        return None if "\\x1b[2J\\x00 cleared" in text else "the stored text is not shown escaped"

    path = os.environ["PATH"]
    return [
        Row("bisect 40.4: a rerun on a state of other settings (--metric, --min-effect, --alpha)",
            [*same, "--metric", "import_s", "--min-effect", "0.9", "--alpha", "0.2",
             "--out-dir", str(m["bisect-defaults"])],
            check=_all(_contains("--metric: stored first_grad_s, asked import_s"),
                       _contains("--min-effect: stored 0.05, asked 0.9"), _contains("--alpha: stored 0.01, asked 0.2"),
                       _contains("another --out-dir"), _unchanged(m["bisect-defaults"] / "bisect.json"))),
        Row("bisect 40.4: a state written before its settings were recorded",
            [*ends, "--out-dir", str(m["bisect-old"])],
            check=_all(_contains("did not record its decision settings"), _contains("--metric"),
                       _unchanged(m["bisect-old"] / "bisect.json"))),
        Row("bisect 40.4: a counts.json of another bisect beside an interrupted state (resumed)",
            [*ends, "--out-dir", str(m["bisect-foreign"])],
            check=_all(_contains("counts.json holds the counts of another bisect"),
                       _unchanged(m["bisect-foreign"] / "counts.json"),
                       _unchanged(m["bisect-foreign"] / "bisect.json"))),
        Row("bisect 40.4: a state whose exit_code is 1.0", [*ends, "--out-dir", str(m["bisect-float"])],
            check=_all(_contains("exit_code: expected 0, 1 or 2 (a whole number), got"),
                       _unchanged(m["bisect-float"] / "bisect.json"))),
        Row("bisect 40.4: a state \"found\" with exit_code 0", [*ends, "--out-dir", str(m["bisect-found-0"])],
            check=_contains("exit_code: 0 disagrees with status 'found', whose exit code is 1")),
        Row("report --bisect 40.4: exit_code 1.0", ["report", "--bisect", str(m["bisect-float"] / "bisect.json"),
                                                     "--out", out("bisect-float.html")],
            check=_contains("exit_code: expected 0, 1 or 2 (a whole number), got")),
        Row("bisect 40.5: a state \"turn\" that names no turn", [*ends, "--out-dir", str(m["bisect-turn-none"])],
            check=_all(_contains("turns: status 'turn' names no turn"),
                       _unchanged(m["bisect-turn-none"] / "bisect.json"))),
        Row("report --bisect 40.5: a turn whose commit no probe found to be a turn",
            ["report", "--bisect", str(m["bisect-turn-stray"] / "bisect.json"), "--out", out("bisect-turn.html")],
            check=_all(_contains("turns[0].commit"), _contains("is no probe found to be a turn"),
                       lambda proc: "a page was written" if Path(out("bisect-turn.html")).exists() else None)),
        Row("bisect 40.5: a turn whose shape is neither peak nor dip", [*ends, "--out-dir", str(m["bisect-turn-shape"])],
            check=_all(_contains("turns[0].shape"), _unchanged(m["bisect-turn-shape"] / "bisect.json"))),
        Row("bisect 40.6: control characters in a commit subject (terminal and summary.md)", expect=0,
            argv=[*same, "--out-dir", out("bisect-40-6")], check=escaped),
        Row("bisect 40.6: control characters in a finished state's stored text (shown from bisect.json)", expect=0,
            argv=[*same, "--out-dir", str(m["bisect-escaped"])], check=_all(
                _contains("finished before: shown from"), shown_escaped)),
        Row("bisect 40.6: SIGTERM inside the first comparison", [*ends, "--out-dir", out("bisect-term")],
            env={"PATH": f"{m['git-term']}{os.pathsep}{path}"},
            check=_all(_contains("interrupted by SIGTERM"), _contains("summary.md"),
                       interrupted("bisect-term", "interrupted by SIGTERM", "Ctrl-C"))),
        Row("bisect 40.6: SIGINT (Ctrl-C) inside the first comparison", [*ends, "--out-dir", out("bisect-int")],
            env={"PATH": f"{m['git-int']}{os.pathsep}{path}"},
            check=_all(_contains("interrupted by SIGINT (Ctrl-C)"),
                       interrupted("bisect-int", "interrupted by SIGINT (Ctrl-C)", None))),
        Row("bisect 40.6: the worktree a kill -9'd ttfg left, on the next bisect (removed, the user's kept)", expect=0,
            argv=["bisect", "--good", "HEAD", "--bad", "HEAD", "--repo", str(m["bisect-kill-repo"]), *tiny,
                  "--out-dir", out("bisect-pruned")],
            check=_all(_contains("removed 1 worktree left in"), pruned)),
    ]


__all__ = ["files", "rows"]
