import subprocess
import sys

NO_FRAMEWORK = "import sys; from ttfg.cli import main; {call}; bad = {{'torch', 'jax', 'jaxlib', 'autograd'}} & set(sys.modules); assert not bad, bad"


def test_help_and_list_import_no_framework():
    subprocess.run([sys.executable, "-c", NO_FRAMEWORK.format(call="main(['list'])")], check=True, capture_output=True)
    help_run = subprocess.run(
        [sys.executable, "-c", NO_FRAMEWORK.format(call="exec('try:\\n main([\"--help\"])\\nexcept SystemExit: pass')")],
        capture_output=True, text=True,
    )
    assert help_run.returncode == 0, help_run.stderr
    assert "time to first gradient" in help_run.stdout.lower()


def test_list_shows_models_backends_and_reasons(ttfg):
    out = ttfg("list")
    assert out.returncode == 0
    for word in ("resnet15", "convnext_tiny", "jax.jit", "torch.compile.aot_eager", "autograd", "chain=scan"):
        assert word in out.stdout
    assert "autograd has no scan primitive" in out.stdout


def test_check_passes_and_prints_a_table(ttfg):
    out = ttfg("check", "--model", "resnet15:blocks=2", "--backend", "autograd", "--backend", "torch.eager")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "resnet15:blocks=2/torch.eager/params=closure,chain=unrolled" in out.stdout
    assert "worst rel err" in out.stdout
    # Piped: one progress line per case as it finishes, then each result once, in the table (it was
    # printed twice: a result line per case, then the table again).
    lines = out.stdout.splitlines()
    assert [line.split()[0] for line in lines if line.startswith("[")] == ["[1/2]", "[2/2]"]
    assert sum(" ok " in f" {line} " for line in lines) == 2, out.stdout
    assert "e-0" not in out.stdout and "× 10⁻" in out.stdout  # relative errors without an exponent's e


def test_check_json_is_one_document_whatever_the_terminal_width(ttfg):
    """Scripts (``ttfg releases``' per-release check, CI) read the rows, not a table that wraps at 80 columns."""
    import json

    out = ttfg("check", "--model", "resnet15:blocks=2", "--backend", "torch.eager", "--tolerance", "0",
               "--format", "json")
    assert out.returncode == 1
    doc = json.loads(out.stdout)
    assert doc["format"] == "ttfg-check" and doc["exit_code"] == 1 and doc["tolerance"] == 0
    [row] = doc["results"]
    assert row["case_id"] == "resnet15:blocks=2/torch.eager/params=closure,chain=unrolled"
    assert row["status"] == "mismatch" and row["worst_error"] > 0 and row["worst_tensor"]
    assert "mismatch" in out.stderr  # the table still reaches a person, on stderr
    nothing = ttfg("check", "--model", "resnet15", "--backend", "torch.eager", "--variant", "chain=scan",
                   "--format", "json")
    assert nothing.returncode == 2 and json.loads(nothing.stdout)["results"][0]["status"] == "skipped"


def test_version_names_the_installed_distribution(ttfg):
    from importlib.metadata import version

    out = ttfg("--version")
    assert out.returncode == 0 and out.stdout.strip() == f"ttfg {version('ttfg')}"


def test_check_exit_2_when_nothing_runs(ttfg):
    out = ttfg("check", "--model", "resnet15", "--backend", "torch.eager", "--variant", "chain=scan")
    assert out.returncode == 2
    assert "nothing could run" in out.stdout


def test_check_exit_1_on_tolerance_violation(ttfg):
    out = ttfg("check", "--model", "resnet15:blocks=2", "--backend", "torch.eager", "--tolerance", "0")
    assert out.returncode == 1
    assert "mismatch" in out.stdout


def test_bad_input_exits_2_with_a_named_problem(ttfg):
    out = ttfg("check", "--model", "resnet99")
    assert out.returncode == 2 and "unknown model 'resnet99'" in out.stderr
    out = ttfg("check", "--model", "resnet15", "--backend", "nope")
    assert out.returncode == 2 and "unknown backend 'nope'" in out.stderr
    out = ttfg("check", "--model", "resnet15", "--variant", "chain=loop")
    assert out.returncode == 2 and "unknown value 'loop'" in out.stderr
