"""Shared fixtures and small model sizes that keep the suite fast."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Small but structurally complete versions of each model, for behaviour tests.
SMALL_MODELS = {
    "resnet15": "resnet15:blocks=3",
    "convnext_tiny": "convnext_tiny:depths=1x1x2x1,widths=8x16x16x32",
}


def run_ttfg(*args: str, env: dict | None = None, timeout: float = 600, cwd: Path | None = None):
    """Run the CLI in a fresh interpreter, as a user would."""
    return subprocess.run(
        [sys.executable, "-m", "harness", *args], capture_output=True, text=True,
        env={**os.environ, **(env or {})}, timeout=timeout, cwd=cwd or ROOT,
    )


@pytest.fixture
def ttfg():
    return run_ttfg


def default_sigint() -> None:
    """``preexec_fn`` for children that a test interrupts: a shell's background job starts
    with SIGINT ignored, and Python then never raises KeyboardInterrupt; restore it."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
