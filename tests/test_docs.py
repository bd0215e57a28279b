"""The README fits a screen and the documentation builds: what a newcomer reads first is checked.

The README is the first ten minutes (at most 250 lines: what ttfg is, two commands, a
five-minute tour, guarding your own project, links); ``docs/`` is the rest, built with
MkDocs in strict mode (a broken link or anchor, or a page missing from the navigation,
fails the build). Dated figures live in ``docs/measurements.md``, each section stating its
date, load and commit.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys

import pytest

from .conftest import ROOT

README = ROOT / "README.md"
DOCS = ROOT / "docs"
MAX_README_LINES = 250


def test_readme_fits_a_screen_and_says_how_to_run_without_activating():
    text = README.read_text()
    assert len(text.splitlines()) <= MAX_README_LINES, len(text.splitlines())
    for command in ("make bench", "make test", ".venv/bin/ttfg", "ttfg doctor", "ttfg run", "ttfg gate",
                    "ttfg explain", "ttfg report"):
        assert command in text, command
    assert "## Guard your own project" in text and "docs/how-to/guard-your-project.md" in text
    assert "docs/measurements.md" in text


def test_every_relative_link_of_the_readme_and_the_docs_resolves():
    pages = [README, *DOCS.rglob("*.md")]
    broken = []
    for page in pages:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if re.match(r"[a-z]+:", target):
                continue  # a URL
            if not (page.parent / target).resolve().exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert not broken, broken


def test_every_measurement_states_its_date_load_and_commit():
    text = (DOCS / "measurements.md").read_text()
    sections = re.split(r"^## ", text, flags=re.M)[1:]
    assert len(sections) >= 8
    for section in sections:
        title, _, body = section.partition("\n")
        line = next((l for l in body.splitlines() if l.startswith("*Measured*")), "")
        assert re.search(r"\*Measured\* \d{4}-\d\d-\d\d", line), title
        assert "*load* " in line and re.search(r"\*commit\* [0-9a-f]{7}", line), title


@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None,
                    reason="MkDocs is not installed (make docs installs the docs extra; .ci/run builds the docs)")
def test_docs_build_strictly(tmp_path):
    """The same build as ``make docs``: any warning fails it."""
    out = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert (tmp_path / "site" / "measurements" / "index.html").exists()
