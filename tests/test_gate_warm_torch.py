"""The warm gate's held-out experiment on a torch library's own ``torch.compile``d step (issue 43, its torch half).

``torchlab`` declares its training step as a function case, compiled with Inductor as its users write it. The
head adds a per-process constant to the loss (the process id): the same gradient up to a constant, the same graph
and op counts, but a different FX graph cache key in every process, so every warm start compiles again. The cold
set must pass it; the warm set must fail it, naming the cache misses it read from Inductor in the case's process.
``--cache both`` measures both sets in one gate (one install of each revision).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from .conftest import GitRepo
from .user_project import function_project, layered_venv

PROJECT = function_project("torchlab", "torchlab_step", "torchlab.cases:case")

STEP = '''\
"""torchlab's own training step, torch.compile'd as its users write it."""

import torch

OFFSET = 0.0


def loss(w, x):
    return ((x @ w).tanh() ** 2).sum() + OFFSET


def step(w, x):
    value = loss(w, x)
    value.backward()
    return value.detach(), w.grad


compiled_step = torch.compile(step)
'''

#: The head: a constant per process, baked into the traced graph (Dynamo reads module globals as constants).
PID_OFFSET = "import os\n\nOFFSET = float(os.getpid() % 9973 + 1)"

CASES = '''\
"""torchlab's function case for ttfg."""

import torch

from torchlab import step


def case():
    w = torch.randn(8, 8, requires_grad=True, generator=torch.Generator().manual_seed(0))
    return step.compiled_step, (w, torch.ones(4, 8))
'''


def write_torchlab(root: Path, step: str = STEP) -> None:
    files = {**PROJECT, "src/torchlab/__init__.py": '"""torchlab."""\n',
             "src/torchlab/step.py": step, "src/torchlab/cases.py": CASES}
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


@pytest.mark.slow
@pytest.mark.full  # one gate of two sets with Inductor compiles (minutes on two cores): make test-all and CI run it
def test_a_per_process_constant_in_a_compiled_torch_step_passes_cold_and_fails_warm_naming_the_misses(tmp_path):
    pytest.importorskip("torch")
    repo = tmp_path / "torchlab"
    write_torchlab(repo)
    history = GitRepo.init(repo)
    base = history.commit("torchlab")
    write_torchlab(repo, STEP.replace("OFFSET = 0.0", PID_OFFSET))
    head = history.commit("the loss adds the process id")
    python = layered_venv(tmp_path / "venv")
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--disable-pip-version-check", "-e", str(repo)], check=True, capture_output=True, timeout=300)
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_STEP_SUMMARY", "PYTHONPATH")}
    out = tmp_path / "out"
    done = subprocess.run([str(python), "-m", "ttfg", "gate", "--base", base, "--head", head, "--tiers", "structural",
                           "--profiles", "0", "--cache", "both", "--out-dir", str(out), "--format", "json"],
                          cwd=repo, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 1, done.stdout + done.stderr
    document = json.loads(done.stdout)
    assert document["cold"]["exit_code"] == 0, document["cold"]  # the cold set: same graph, same counters
    (cold,) = document["cold"]["cases"]
    assert cold["case"] == "torchlab_step/function/default" and cold["verdict"]["verdict"] != "regressed"
    warm = document["warm"]
    assert warm["exit_code"] == 1 and not warm["settings"].get("measured_cold")
    (words,) = warm["settings"]["warm_evidence"].values()
    assert words.startswith("its process used a persistent compile cache (base: Inductor cache"), words
    (case,) = warm["cases"]
    assert case["tier"] == "structural" and case["verdict"]["verdict"] == "regressed", case
    reason = case["verdict"]["reason"]
    assert reason.startswith("persistent cache misses 0 -> ") and "compile cache key changes between processes" \
        in reason, reason
