"""summary.md's file:line of the user's code links to that line at the head commit when ``commit-url`` is set.

In-process: the URL made from a commit page's template (GitHub's, GitLab's, asv's ``show_commit_url``) and refused
for any other; the install's ``mylab/ops.py`` found as the repository's ``src/mylab/ops.py`` among a real commit's
files (``app/gate._source_linker``); the fake gate's summary.md (``tests/test_gate_policy.py``) linking the project's
function and model line, never the frameworks', and with no template nothing linked. ``--commit-url`` without
``{sha}`` is refused before anything is made (a real process).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from ttfg.present.gate_views import gate_markdown
from ttfg.present.source_links import blob_url, linker

from tests import test_gate_policy
from tests.conftest import GitRepo
from tests.test_gate_policy import gate_with, noisy, sides  # noqa: F401  (fixtures)

SHA = "0123456789abcdef0123456789abcdef01234567"


def test_a_commit_page_template_gives_the_lines_url_and_any_other_template_none():
    assert blob_url("https://github.com/o/r/commit/{sha}", SHA, "src/my lab/ops.py", 4) == \
        f"https://github.com/o/r/blob/{SHA}/src/my%20lab/ops.py#L4"
    assert blob_url("https://gitlab.com/o/r/-/commit/{sha}", SHA, "ops.py", None) == \
        f"https://gitlab.com/o/r/-/blob/{SHA}/ops.py"
    assert blob_url("https://github.com/o/r/commit/", SHA, "ops.py", 7) == \
        f"https://github.com/o/r/blob/{SHA}/ops.py#L7"  # asv's show_commit_url: the hash appended
    assert blob_url("https://example.com/show?c={sha}", SHA, "ops.py", 7) is None  # no commit page: no guess
    assert blob_url("https://github.com/o/r/commit/{sha}", "HEAD", "ops.py", 7) is None
    assert blob_url(None, SHA, "ops.py", 7) is None


def test_the_installs_file_is_found_among_the_head_commits_files_once_or_not_linked(tmp_path):
    from ttfg.app.gate import GateRequest, _source_linker
    from ttfg.decide.gate_settings import GateSettings

    repo = tmp_path / "lab"
    repo.mkdir()
    head = GitRepo.init(repo).commit("first", {"src/mylab/ops.py": "x = 1\n", "src/mylab/a/util.py": "",
                                               "tools/a/util.py": ""})
    outcome = SimpleNamespace(head=SimpleNamespace(commit=head))
    request = GateRequest(repo=repo, base=None, cases=[], settings=GateSettings(), out_dir=tmp_path / "g",
                          commit_url="https://github.com/o/r/commit/{sha}")
    link = _source_linker(request, outcome)
    assert link("mylab/ops.py:4") == f"https://github.com/o/r/blob/{head}/src/mylab/ops.py#L4"
    assert link("a/util.py:1") is None  # two files end so: no guess
    assert link("autograd/core.py:288") is None
    request.commit_url = None
    assert _source_linker(request, outcome) is None


def test_summary_md_links_the_projects_function_and_model_line_and_never_the_frameworks(gate_with, monkeypatch):  # noqa: F811
    outcome = test_gate_policy.gate_with_a_grown_model_line(gate_with, monkeypatch)
    link = linker("https://github.com/o/r/commit/{sha}", SHA, ["src/mylab/ops.py", "src/mylab/layers.py"])
    lines = gate_markdown(outcome, link=link).splitlines()
    where = next(i for i, line in enumerate(lines) if line.startswith("**Where it went**"))
    project, framework, compiled = lines[where + 1:where + 4]
    assert project == ("  - Python functions called more in your code: `_scale_step` "
                       f"([`mylab/ops.py:4`](https://github.com/o/r/blob/{SHA}/src/mylab/ops.py#L4)) +20,000")
    assert framework.startswith("  - Python functions called more in the frameworks' code: `vspace` "
                                "(`autograd/core.py:288`) +1,000")
    assert compiled == ("  - Compiled code that grew, by model line: +12 jaxpr equations at "
                        f"[`mylab/layers.py:42`](https://github.com/o/r/blob/{SHA}/src/mylab/layers.py#L42) (`block`)")
    plain_lines = gate_markdown(outcome).splitlines()  # no commit-url: the same words, no link
    assert plain_lines[where + 1] == "  - Python functions called more in your code: `_scale_step` (`mylab/ops.py:4`) " \
                                     "+20,000"


@pytest.mark.slow
def test_a_commit_url_without_sha_is_refused_before_anything_is_made(tmp_path):
    out = subprocess.run([sys.executable, "-m", "ttfg", "gate", "--base", "HEAD", "--commit-url",
                          "https://example.com/o/r/commit/", "--out-dir", str(tmp_path / "g")], capture_output=True,
                         text=True, timeout=120, cwd=Path(__file__).parent.parent)
    assert out.returncode == 2 and "--commit-url 'https://example.com/o/r/commit/': expected an http(s) URL with " \
        "{sha}" in out.stderr, out.stderr
    assert not (tmp_path / "g").exists()
