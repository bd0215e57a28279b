"""The CI kit stays in step with the code: workflows parse, every command they run exists."""

import re
import shlex

import pytest
import yaml

from ttfg.decide import expect
from ttfg.measure.cases import select
from ttfg.cli import build_parser

from .conftest import ROOT, command_parsers

WORKFLOWS = sorted((ROOT / "ci" / "workflows").glob("*.yml"))


def load(path):
    return yaml.safe_load(path.read_text())


def triggers(doc):
    return doc.get("on", doc.get(True))  # YAML 1.1 reads a bare `on` key as True


def run_scripts(doc):
    for job in doc["jobs"].values():
        for step in job["steps"]:
            if "run" in step:
                yield step["run"]


#: What a shell variable stands for when a workflow's command line is parsed: a value of the
#: kind the workflow gives it (a shard label, a shard count), else a plain word.
PLACEHOLDERS = {"SHARD": "1/4", "SHARDS": "4"}


def commands(tool: str):
    """Every ``tool ...`` command line in the workflows' run scripts, with shell syntax neutralised.

    Commands inside ``$(...)`` count too (``echo "matrix=$(ttfg shards ...)"``); a variable
    becomes its :data:`PLACEHOLDERS` value, so a typed option (``--shard "$SHARD"``) is
    checked with a value of its kind.
    """
    out = []
    for path in WORKFLOWS:
        for script in run_scripts(load(path)):
            joined = script.replace("\\\n", " ")
            for line in joined.splitlines():
                pieces = re.findall(r"\$\(([^)]*)\)", line) + [re.sub(r"\$\([^)]*\)", "X", line)]
                for piece in pieces:
                    piece = re.sub(r"\$\{?(\w+)\}?", lambda m: PLACEHOLDERS.get(m.group(1), "X"), piece)
                    for match in re.finditer(rf"(?:^|[\s/]){tool}\s+(.*)", piece):
                        rest = re.split(r"\s(?:\||&&|;|>>?)\s", match.group(1))[0]
                        out.append((path.name, shlex.split(rest)))
    return out


def test_workflows_exist_and_parse():
    names = {p.name for p in WORKFLOWS}
    assert {"perf-gate.yml", "trend.yml", "perf-gate-sharded.yml", "trend-sharded.yml"} <= names
    for path in WORKFLOWS:
        doc = load(path)
        assert doc["name"] and doc["jobs"] and triggers(doc), path


def test_perf_gate_workflow_shape():
    doc = load(ROOT / "ci" / "workflows" / "perf-gate.yml")
    assert "pull_request" in triggers(doc)
    steps = [s for job in doc["jobs"].values() for s in job["steps"]]
    checkout = next(s for s in steps if s.get("uses", "").startswith("actions/checkout@"))
    assert checkout["with"]["fetch-depth"] == 0
    python = next(s for s in steps if s.get("uses", "").startswith("actions/setup-python@"))
    assert str(python["with"]["python-version"]) == "3.11"
    gate = next(s for s in steps if "ttfg gate" in s.get("run", ""))
    assert '--base "origin/$BASE_REF"' in gate["run"] and "github.base_ref" in gate["env"]["BASE_REF"]
    assert "--expectations ci/expectations.csv" in gate["run"]
    upload = next(s for s in steps if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["if"] == "always()" and "runs/gate" in upload["with"]["path"]


def test_trend_workflow_shape():
    doc = load(ROOT / "ci" / "workflows" / "trend.yml")
    assert triggers(doc)["push"]["branches"] == ["main"]
    scripts = "\n".join(run_scripts(doc))
    assert "ttfg run" in scripts and "ttfg report" in scripts
    # ttfg asv record runs asv in the existing environment with --set-commit-hash, then publishes.
    assert "ttfg asv record HEAD" in scripts
    assert "git push --quiet origin HEAD:perf-history" in scripts
    # New timing steps are confirmed by paired re-runs, within a budget, before the history is
    # saved (the confirmations travel with it) and before the report reads them.
    steps = [s for job in doc["jobs"].values() for s in job["steps"]]
    runs = [s.get("run", "") for s in steps]
    confirm = next(i for i, r in enumerate(runs) if "ttfg regressions" in r)
    assert "--confirm" in runs[confirm] and "--budget" in runs[confirm]
    record = next(i for i, r in enumerate(runs) if "ttfg asv record" in r)
    save = next(i for i, r in enumerate(runs) if "perf-history" in r and "git push" in r)
    report = next(i for i, r in enumerate(runs) if "ttfg report" in r)
    assert record < confirm < save < report
    assert "--commit-url" in runs[report] and "{sha}" in runs[report]


def _steps(job):
    return job.get("steps", [])


def _script(job) -> str:
    return "\n".join(s.get("run", "") for s in _steps(job))


@pytest.mark.parametrize("name, shard_job, measure", [("perf-gate-sharded.yml", "gate", "ttfg gate"),
                                                      ("trend-sharded.yml", "measure", "ttfg run")])
def test_sharded_workflows_split_measure_and_combine(name, shard_job, measure):
    doc = load(ROOT / "ci" / "workflows" / name)
    inputs = triggers(doc)["workflow_dispatch"]["inputs"]
    assert inputs["shards"]["type"] == "number" and "inputs.shards" in doc["env"]["SHARDS"]
    jobs = doc["jobs"]
    setup, shard, combine = jobs["setup"], jobs[shard_job], jobs["combine"]
    # setup: the matrix is computed by ttfg shards, as the job's output
    split = next(s for s in _steps(setup) if s.get("id") == "split")
    assert 'ttfg shards "$SHARDS"' in split["run"] and "--format matrix" in split["run"]
    assert "GITHUB_OUTPUT" in split["run"] and setup["outputs"]["matrix"] == "${{ steps.split.outputs.matrix }}"
    # shard jobs: one per matrix entry, each measuring its shard and uploading it, even on failure
    assert shard["needs"] == "setup" and shard["strategy"]["fail-fast"] is False
    assert shard["strategy"]["matrix"] == "${{ fromJSON(needs.setup.outputs.matrix) }}"
    script = _script(shard)
    assert measure in script and '--shard "$SHARD"' in script
    shard_env = {**shard.get("env", {}), **{k: v for s in _steps(shard) for k, v in s.get("env", {}).items()}}
    assert shard_env["SHARD"] == "${{ matrix.shard }}"
    upload = next(s for s in _steps(shard) if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["if"] == "always()" and "matrix.index" in upload["with"]["name"]
    # combine: after every shard, even failed ones; downloads them all and merges
    assert set(combine["needs"]) == {"setup", shard_job} and combine["if"].startswith("always()")
    download = next(s for s in _steps(combine) if s.get("uses", "").startswith("actions/download-artifact@"))
    assert download["with"]["pattern"].endswith("-shard-*")
    assert "ttfg merge" in _script(combine)


def test_sharded_gate_merges_into_one_verdict_and_comments_it():
    combine = load(ROOT / "ci" / "workflows" / "perf-gate-sharded.yml")["jobs"]["combine"]
    script = _script(combine)
    assert "ttfg merge gate shards/*" in script and "gh pr comment" not in script
    comment = next(s for s in _steps(combine) if s.get("uses", "").startswith("marocchino/sticky-pull-request-comment@"))
    assert comment["with"] == {"header": "ttfg-perf-gate", "path": "runs/gate/summary.md"}


def test_sharded_trend_merges_results_and_asv_and_publishes_on_main():
    doc = load(ROOT / "ci" / "workflows" / "trend-sharded.yml")
    assert triggers(doc)["push"]["branches"] == ["main"]
    measure = _script(doc["jobs"]["measure"])
    assert "ttfg check" in measure and 'ttfg asv record HEAD --machine "$MACHINE" --no-publish --shard' in measure
    steps = _steps(doc["jobs"]["combine"])
    script = _script(doc["jobs"]["combine"])
    assert "ttfg merge results shards/*/runs/trend/shard.json" in script
    assert "ttfg merge asv" in script and "--results-dir results" in script
    on_main = [s for s in steps if s.get("if") == "github.ref == 'refs/heads/main'"]
    assert any("git push --quiet origin HEAD:perf-history" in s["run"] for s in on_main)
    assert any("asv publish" in s["run"] and "ttfg report" in s["run"] for s in on_main)


@pytest.mark.parametrize("workflow, argv", commands("ttfg"), ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_every_ttfg_command_parses(workflow, argv):
    parser = build_parser()
    assert (argv[0],) in dict(command_parsers(parser)), f"{workflow}: ttfg {argv[0]} is not a subcommand"
    try:
        parser.parse_args(argv)
    except SystemExit as exc:  # argparse reports the bad option on stderr
        pytest.fail(f"{workflow}: `ttfg {' '.join(argv)}` does not parse (exit {exc.code})")


def test_every_make_target_exists():
    targets = set(re.findall(r"^([\w.-]+)\s*:(?!=)", (ROOT / "Makefile").read_text(), re.M))
    used = commands("make")
    assert used, "the workflows install with make"
    for workflow, argv in used:
        for target in (a for a in argv if not a.startswith("-") and "=" not in a):
            assert target in targets, f"{workflow}: make {target} is not a Makefile target"


def test_readme_explains_copying():
    text = (ROOT / "ci" / "README.md").read_text()
    assert ".github/workflows" in text and "expectations.csv" in text


def test_committed_expectations_are_valid_and_name_real_cases():
    rows = expect.load(ROOT / "ci" / "expectations.csv")
    cases, _ = select(["resnet15"], ["jax.jit", "torch.eager", "autograd"], None, check_availability=False)
    ids = {c.id for c in cases}
    assert {r.case for r in rows} == ids
    metrics = {r.metric for r in rows}
    assert {"counters.jaxpr_eqns", "counters.hlo_ops", "counters.autograd_nodes", "alloc_count"} <= metrics


def test_make_test_leaves_out_full_tests_and_ci_runs_them_all():
    import tomllib

    recipes = dict(re.findall(r"^([\w.-]+)\s*:.*\n\t(.*)", (ROOT / "Makefile").read_text(), re.M))
    assert "pytest" in recipes["test"] and '-m "not full"' in recipes["test"]
    assert "pytest" in recipes["test-all"] and " -m " not in recipes["test-all"].split("pytest", 1)[1]
    assert re.search(r"^make test-all$", (ROOT / ".ci" / "run").read_text(), re.M)
    pytest_ini = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert any(m.startswith("full:") for m in pytest_ini["markers"])
    assert "--durations=15" in pytest_ini["addopts"]


def _gate_step(steps):
    return next(s for s in steps if "ttfg gate" in s.get("run", ""))


def test_perf_gate_posts_summary_as_one_updated_pull_request_comment():
    """The summary the gate writes is what the comment posts, by a maintained action that
    edits its earlier comment (found by a hidden marker) instead of adding one per push."""
    from ttfg.present.gate_views import GATE_MARKER

    doc = load(ROOT / "ci" / "workflows" / "perf-gate.yml")
    assert doc["permissions"]["pull-requests"] == "write"
    steps = [s for job in doc["jobs"].values() for s in job["steps"]]
    gate = _gate_step(steps)
    argv = next(a for w, a in commands("ttfg") if w == "perf-gate.yml" and a[0] == "gate")
    out_dir = build_parser().parse_args(argv).out_dir
    comment = next(s for s in steps if s.get("uses", "").startswith("marocchino/sticky-pull-request-comment@"))
    assert steps.index(comment) > steps.index(gate)
    assert comment["with"]["path"] == f"{out_dir.rstrip('/')}/summary.md"
    assert comment["with"]["header"], "the header names the comment that later pushes update"
    assert "always()" in comment["if"] and "summary.md" in comment["if"], "post also when the gate fails"
    assert comment.get("continue-on-error") is True, "a fork's read-only token must not fail the job"
    assert GATE_MARKER.startswith("<!--") and GATE_MARKER.endswith("-->")


def test_no_workflow_adds_a_new_comment_per_push():
    """Every pull-request comment goes through the sticky action under one header: one comment, updated."""
    for path in WORKFLOWS:
        doc = load(path)
        for script in run_scripts(doc):
            assert "gh pr comment" not in script and "createComment" not in script, path.name
        headers = {s["with"]["header"] for job in doc["jobs"].values() for s in job["steps"]
                   if s.get("uses", "").startswith("marocchino/sticky-pull-request-comment@")}
        assert headers <= {"ttfg-perf-gate"}, path.name


def test_every_action_is_pinned_to_a_release():
    """Actions in a subfolder of their repository (``actions/cache/restore@v4``) are pinned the same way."""
    for path in WORKFLOWS:
        for job in load(path)["jobs"].values():
            for step in job["steps"]:
                if "uses" in step:
                    assert re.fullmatch(r"[\w.-]+/[\w.-]+(/[\w.-]+)*@(v\d+(\.\d+)*|[0-9a-f]{40})", step["uses"]), \
                        f"{path.name}: {step['uses']} is not pinned to a release tag or commit"


def test_every_venv_program_the_workflows_run_is_installed_by_the_project():
    """``.venv/bin/NAME`` must be a console script of pyproject.toml (or the venv's python/pip)."""
    import tomllib

    scripts = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"])
    named = {m for path in WORKFLOWS for script in run_scripts(load(path))
             for m in re.findall(r"\.venv/bin/([\w.-]+)", script)}
    assert "ttfg" in named
    assert named <= scripts | {"python", "pip"}, f"not installed by the project: {sorted(named - scripts)}"


@pytest.mark.slow
@pytest.mark.full  # a real gate/run of tens of seconds: make test-all and CI run it
def test_init_workflows_install_and_list_in_a_fresh_clone_and_virtualenv(tmp_path, capsys):
    """What ``ttfg init`` writes works on a runner that is not this machine: the perf-gate workflow's
    install and settings steps, run as written in a fresh clone and a fresh virtualenv, install ttfg
    (from a git URL, with the instructions extra) and the project, and ``ttfg config`` finds the
    project's starter case. The frameworks come from this run's site-packages (offline)."""
    import os
    import subprocess

    from ttfg.cli import main

    from .conftest import GitRepo, git
    from .user_project import layered_venv

    # ttfg as a runner sees it: a git repository at a commit (this checkout's HEAD; file://localhost/...: the
    # pip 23.2 refuses a git+file URL without a host).
    source = tmp_path / "ttfg-src"
    git(tmp_path, "clone", "-q", "--no-hardlinks", str(ROOT), str(source))
    sha = git(source, "rev-parse", "HEAD")
    # The user's project, initialised on a feature branch, pushed, then cloned as actions/checkout does.
    origin = tmp_path / "lib"
    (origin / "src" / "lib").mkdir(parents=True)
    (origin / "src" / "lib" / "__init__.py").write_text('"""lib"""\n')
    (origin / "pyproject.toml").write_text('[build-system]\nrequires = ["setuptools>=64"]\n'
                                           'build-backend = "setuptools.build_meta"\n\n'
                                           '[project]\nname = "lib"\nversion = "0.1.0"\ndependencies = ["numpy"]\n')
    lib = GitRepo.init(origin)
    lib.commit("first")
    lib.git("checkout", "-q", "-b", "add-ttfg")
    assert main(["init", "--repo", str(origin), "--ttfg-requirement", f"ttfg @ git+file://localhost{source}@{sha}"]) == 0
    capsys.readouterr()
    lib.commit("ttfg init")
    runner = tmp_path / "runner"
    git(tmp_path, "clone", "-q", "--branch", "add-ttfg", str(origin), str(runner))
    for name in ("asv.conf.json", ".github/workflows/ttfg-perf-gate.yml", ".github/workflows/ttfg-trend.yml"):
        assert str(origin) not in (runner / name).read_text() and "add-ttfg" not in (runner / name).read_text()
    gate = load(runner / ".github/workflows/ttfg-perf-gate.yml")
    steps = {step["name"]: step["run"] for step in gate["jobs"]["gate"]["steps"] if "run" in step}
    install = next(run for name, run in steps.items() if name.startswith("Install ttfg"))
    listing = next(run for name, run in steps.items() if name.startswith("Show the settings"))
    python = layered_venv(tmp_path / "venv")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(PATH=f"{python.parent}{os.pathsep}{env['PATH']}", PIP_NO_INDEX="1", PIP_NO_BUILD_ISOLATION="0",
               PIP_DISABLE_PIP_VERSION_CHECK="1")
    for script in (install, listing):
        out = subprocess.run(["bash", "-eo", "pipefail", "-c", script], cwd=runner, env=env, capture_output=True,
                             text=True, timeout=600)
        assert out.returncode == 0, script + "\n" + out.stdout[-3000:] + out.stderr[-3000:]
    shown = " ".join(out.stdout.split())
    assert "lib_loss" in shown and "function" in shown and "1 case(s) to measure here" in shown, shown
    installed = subprocess.run([str(python), "-c", "import ttfg, sys; print(ttfg.__file__)"], env=env,
                               capture_output=True, text=True, check=True).stdout
    assert str(tmp_path / "venv") in installed, installed  # the ttfg the workflow installed, not this checkout
    extra = subprocess.run([str(python), "-m", "pip", "show", "pytest-codspeed"], env=env, capture_output=True)
    assert extra.returncode == 0  # the instructions extra's package is there


def test_the_gate_workflows_restore_and_save_the_count_store_keyed_by_the_base_commit():
    """The pull-request gates restore the count store under the base commit's key and point the gate at it; the
    trend workflow on the default branch fills it under its own commit (the base of the next pull requests)."""
    for name in ("perf-gate.yml", "perf-gate-sharded.yml"):
        steps = [s for job in load(ROOT / "ci" / "workflows" / name)["jobs"].values() for s in job["steps"]]
        restore = next(s for s in steps if s.get("uses") == "actions/cache/restore@v4")
        assert "steps.base.outputs.sha" in restore["with"]["key"] and restore["with"]["path"] == ".ttfg-counts"
        gate = next(s for s in steps if "ttfg gate" in s.get("run", ""))
        assert gate["env"]["TTFG_COUNT_STORE_DIR"].endswith("/.ttfg-counts")
        assert any(s.get("uses") == "actions/cache/save@v4" for s in steps)
    steps = [s for job in load(ROOT / "ci" / "workflows" / "trend.yml")["jobs"].values() for s in job["steps"]]
    save = next(s for s in steps if s.get("uses") == "actions/cache/save@v4")
    assert "github.sha" in save["with"]["key"]
    fill = next(s for s in steps if "gate --base HEAD~1 --head HEAD" in s.get("run", ""))
    assert fill["continue-on-error"] is True and fill["env"]["TTFG_COUNT_STORE_DIR"].endswith("/.ttfg-counts")
