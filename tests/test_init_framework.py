"""The starter's framework: what the project declared, which one ``init`` chose and why, and one order.

Issue 45, item 4: a project declaring both torch and jax got a jax starter without a word that
torch was declared, and the guide listed the preference "torch, jax, flax, equinox" while the
code preferred flax, equinox, jax, torch. Now ``init`` prints what was declared and why it chose,
a required dependency wins over one only in an extra, ``--framework`` chooses by hand, and the
order the docs state is the code's (:data:`declarations.FRAMEWORKS`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ttfg.cli import main
from ttfg.project import declarations

from .test_init_fits import REQ, make_project

ROOT = Path(__file__).resolve().parents[1]


def pyproject_with_extra(repo: Path, extra: str, deps: list[str]) -> None:
    path = repo / "pyproject.toml"
    path.write_text(path.read_text() + f"\n[project.optional-dependencies]\n{extra} = {json.dumps(deps)}\n")


def starter(repo: Path) -> str:
    """The framework the function starter was written for (its docstring's first line says it)."""
    return (repo / "src/lib/ttfg_cases.py").read_text().split("`ttfg init`, for ")[1].split(")")[0]


def test_a_project_declaring_torch_and_jax_is_told_what_was_declared_and_why_jax(tmp_path, capsys):
    repo = make_project(tmp_path / "lib", ["torch>=2", "jax>=0.4"])
    assert main(["init", "--repo", str(repo), "--ttfg-requirement", REQ]) == 0
    out = " ".join(capsys.readouterr().out.split())  # the console wraps long lines
    assert starter(repo) == "jax"
    assert "starter framework jax: declared jax (dependencies), torch (dependencies)" in out
    assert "the first required one in ttfg's order (flax, equinox, haiku, jax, torch" in out
    assert "--framework torch writes a torch starter instead" in out


def test_a_required_framework_wins_over_one_in_an_extra(tmp_path, capsys):
    """A torch library that lists jax in a benchmark extra is a torch library."""
    repo = make_project(tmp_path / "lib", ["torch>=2"])
    pyproject_with_extra(repo, "bench", ["jax>=0.4", "flax"])
    choice = declarations.choose(repo)
    assert choice.framework == "torch"
    assert choice.declared == {"flax": ["extra 'bench'"], "jax": ["extra 'bench'"], "torch": ["dependencies"]}
    pyproject_with_extra(make_project(tmp_path / "hk", ["jax"], name="hk"), "nets", ["dm-haiku"])
    assert declarations.choose(tmp_path / "hk").declared == {"haiku": ["extra 'nets'"], "jax": ["dependencies"]}
    assert main(["init", "--repo", str(repo), "--ttfg-requirement", REQ]) == 0
    assert starter(repo) == "torch" and "import torch" in (repo / "src/lib/ttfg_cases.py").read_text()
    out = " ".join(capsys.readouterr().out.split())
    assert "the one it requires ([project] dependencies); the others are optional" in out


def test_framework_chooses_by_hand_and_an_unknown_one_is_refused(tmp_path, capsys):
    repo = make_project(tmp_path / "lib", ["torch>=2", "jax>=0.4"])
    assert main(["init", "--repo", str(repo), "--ttfg-requirement", REQ, "--framework", "torch"]) == 0
    assert starter(repo) == "torch"
    assert "starter framework torch: declared jax (dependencies), torch (dependencies); chosen with --framework" in \
        " ".join(capsys.readouterr().out.split())
    other = make_project(tmp_path / "other", ["numpy"])
    assert main(["init", "--repo", str(other), "--ttfg-requirement", REQ, "--framework", "mxnet"]) == 2
    assert not (other / "ttfg.toml").exists()


def test_no_framework_declared_is_said_too(tmp_path, capsys):
    repo = make_project(tmp_path / "lib", ["numpy"])
    assert main(["init", "--repo", str(repo), "--ttfg-requirement", REQ]) == 0
    assert "starter framework autograd: the project declares none of flax, equinox, haiku, jax, torch" in \
        " ".join(capsys.readouterr().out.split())


def test_the_docs_state_the_order_the_code_prefers():
    """Every page that lists the preference lists :data:`declarations.FRAMEWORKS` in its order, and none the old."""
    order = ", ".join(declarations.FRAMEWORKS[:-1])
    assert order == "flax, equinox, haiku, jax, torch"
    pages = [ROOT / "docs/how-to/guard-your-project.md", ROOT / "docs/how-to/plugins.md"]
    for page in pages:
        text = " ".join(page.read_text().split())
        assert order in text, page
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        assert not re.search(r"torch, jax, flax, equinox", " ".join(page.read_text().split())), page
