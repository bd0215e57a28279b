"""Backends and models from other packages, through entry points (``ttfg.backends``, ``ttfg.models``).

The plugin packages live in ``tests/plugins/`` and are pip-installed into a temporary
folder once per session (``conftest.plugin_site``): ``ttfg-test-backends`` adds a
working backend (``test.autograd``), a model (``test_mlp``) and the deliberately failing
backends the runner tests use; ``ttfg-broken-plugin`` breaks the contract in every way
we know of. The CLI runs in fresh processes with the folder on PYTHONPATH, as a user's
installed plugin would be found.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ttfg import engines
from ttfg.errors import BrokenPlugin
from ttfg.measure.cases import select
from ttfg.measure.check import run_check

from .conftest import ROOT

PLUGIN = "ttfg-test-backends 0.1.0"
BROKEN = "ttfg-broken-plugin 0.2.0"
#: backend or model -> what its reason must say
BROKEN_REASONS = {
    "broken.missing_module": "cannot import ttfg_broken_plugin.not_there: ModuleNotFoundError",
    "broken.import_error": "RuntimeError: this plugin module fails when imported",
    "broken.missing_attr": "ttfg_broken_plugin has no attribute 'NoSuchBackend'",
    "broken.not_a_backend": "is not a subclass of ttfg.engines.Backend",
    "broken.no_build": "does not implement build()",
    "broken_model": "the builder returned a NoneType, not a ttfg.models.spec.ModelSpec",
}


def rows(text: str, name: str) -> list[str]:
    """Table rows (``│ name │ ...``) of ``ttfg list`` whose first cell is ``name``, each cell with its
    wrapped continuation lines (first cell empty) joined back, as ``│ cell │ cell │``."""
    found, current = [], None
    for line in text.splitlines():
        cells = line.split("│")[1:-1]
        if not cells:
            current = None
            continue
        if cells[0].strip():
            current = [c.strip() for c in cells] if cells[0].strip() == name else None
            if current is not None:
                found.append(current)
        elif current is not None and len(cells) == len(current):
            for i, c in enumerate(cells):
                current[i] = " ".join(filter(None, [current[i], c.strip()]))
    return ["│ " + " │ ".join(cells) + " │" for cells in found]


def test_a_plugin_backend_and_model_are_listed_checked_and_run(plugins, ttfg, tmp_path):
    listed = ttfg("list")
    assert listed.returncode == 0, listed.stderr
    assert "Traceback" not in listed.stdout + listed.stderr
    [backend] = rows(listed.stdout, "test.autograd")
    assert "yes" in backend and PLUGIN in backend
    [model] = rows(listed.stdout, "test_mlp")
    assert "58" in model and "1x4" in model and PLUGIN in model and "Two dense layers" in model
    [builtin] = rows(listed.stdout, "jax.jit")
    assert "built in" in builtin

    checked = ttfg("check", "--model", "test_mlp", "--backend", "test.autograd")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "checked test_mlp/test.autograd/params=args,chain=unrolled" in checked.stdout
    assert "test.autograd  ok" in checked.stdout  # the table holds the result

    out = tmp_path / "r.json"
    ran = ttfg("run", "--model", "test_mlp:width=3", "--backend", "test.autograd", "--repeat", "2", "--out", str(out))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    saved = json.loads(out.read_text())
    assert saved["environment"]["packages"]["ttfg-test-backends"] == "0.1.0"  # the plugin's version is recorded
    [case] = saved["cases"]
    assert case["id"] == "test_mlp:width=3/test.autograd/params=args,chain=unrolled"
    assert [s["ok"] for s in case["samples"]] == [True, True]
    assert all(s["first_grad_s"] > 0 and s["counters"]["autograd_primitives"] > 0 for s in case["samples"])


def test_broken_plugins_are_named_and_skipped_and_the_rest_runs(plugins, ttfg, tmp_path):
    listed = ttfg("list")
    assert listed.returncode == 0 and "Traceback" not in listed.stdout + listed.stderr, listed.stderr
    lines = listed.stdout.splitlines()
    for name, reason in BROKEN_REASONS.items():
        [row] = rows(listed.stdout, name)
        assert "broken plugin, skipped" in row and BROKEN in row, row
        assert any(line.startswith(f"  '{name}' (ttfg.") and reason in line for line in lines), (name, reason)
    # A plugin may not take a built-in name: the built-in stays, the plugin entry is reported.
    assert any(line.startswith("  'autograd' (ttfg.backends entry point of ttfg-broken-plugin")
               and "name already used by built in" in line for line in lines)

    backends = [a for b in [*BROKEN_REASONS, "test.autograd"] if b != "broken_model" for a in ("--backend", b)]
    models = ["--model", "test_mlp", "--model", "broken_model"]
    checked = ttfg("check", *models, *backends)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "Traceback" not in checked.stdout + checked.stderr
    assert "checking 1 case " in checked.stdout and "checked test_mlp/test.autograd/" in checked.stdout

    out = tmp_path / "r.json"
    ran = ttfg("run", *models, *backends, "--repeat", "1", "--out", str(out))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "Traceback" not in ran.stdout + ran.stderr
    cases = {c["id"]: c for c in json.loads(out.read_text())["cases"]}
    good = cases.pop("test_mlp/test.autograd/params=args,chain=unrolled")
    assert good["samples"][0]["ok"]
    for case in cases.values():
        name = case["model"] if case["model"] == "broken_model" else case["backend"]
        assert BROKEN_REASONS[name] in case["skipped"] and not case["samples"], case
    assert len(cases) == 5 + 6  # test_mlp x five broken backends; broken_model x every backend


def test_broken_plugins_in_process(plugins):
    """The same rules without a subprocess: the registry raises BrokenPlugin, selection skips, check goes on."""
    assert {"test.autograd", *[b for b in BROKEN_REASONS if b.startswith("broken.")]} <= set(engines.names())
    assert engines.entry("test.autograd").origin == PLUGIN and engines.entry("jax.jit").builtin
    for name in ("broken.no_build", "broken.missing_attr"):
        with pytest.raises(BrokenPlugin, match=BROKEN_REASONS[name].replace("(", r"\(").replace(")", r"\)")):
            engines.get(name)
    cases, skipped = select(["test_mlp"], ["broken.no_build", "test.autograd"], ["all"])
    assert [c.id for c in cases] == ["test_mlp/test.autograd/params=args,chain=unrolled"]
    assert [s.id for s in skipped if s.backend == "broken.no_build"] == ["test_mlp/broken.no_build/all"]
    results = run_check(cases, skipped)
    assert [r.status for r in results].count("ok") == 1
    assert any(r.status == "skipped" and "does not implement build()" in r.detail for r in results)


def test_a_backend_declares_the_phases_its_first_gradient_reports():
    """``Backend.phases`` (issue 29, class 19): the gate refuses a guard of a phase no backend splits from it,
    so a plugin's declaration is checked like its other attributes."""
    from ttfg.engines.autograd_numpy import AutogradBackend

    assert engines.get("autograd").phases == ("execute",) and engines.get("jax.jit").phases[-1] == "execute"
    assert engines.contract_problem(AutogradBackend, "autograd") is None
    for bad in ((), ("link",), "execute"):
        odd = type("Odd", (AutogradBackend,), {"phases": bad})
        assert "'phases' must list some of trace, lower, compile, execute" in engines.contract_problem(odd, "autograd")


def test_a_backends_facts_are_declared_on_its_class_and_checked(plugins):
    """Persistent caches, costs and colour are class attributes with defaults (none, none, a spare colour); a
    declaration that cannot be used is refused when the class is loaded, naming the attribute."""
    from ttfg.engines import caches
    from ttfg.engines.autograd_numpy import AutogradBackend
    from ttfg.engines.declared import Cost, PersistentCache

    assert engines.facts("jax.jit").caches == engines.facts("jax.eager").caches == (caches.JAX,)
    assert engines.facts("torch.compile").caches == (caches.INDUCTOR,) and not engines.facts("autograd").caches
    assert engines.facts("test.warm").caches[0].what == "the test plugin's gradient cache"  # a plugin's own
    assert not engines.facts("test.autograd").caches and engines.facts("test.autograd").color is None
    assert not engines.facts("no.such").known and engines.facts("no.such").caches == ()
    bad = {
        "persistent_caches": [("jax",), "'persistent_caches' must be a tuple of ttfg.engines.declared.PersistentCache"],
        "costs": [{"resnet15": (1.0, 0.5)}, "'costs' must map model names to ttfg.engines.declared.Cost"],
        "color": ["blue", "'color' must be None or a colour like '#1f5fa8'"],
    }
    for attribute, (value, message) in bad.items():
        odd = type("Odd", (AutogradBackend,), {attribute: value})
        assert message in engines.contract_problem(odd, "autograd"), attribute
    for value, message in [(PersistentCache("a cache"), "sets no variable when warm"),
                           (PersistentCache("a cache", warm={"NOT A NAME": "1"}), "'warm' must map environment"),
                           (Cost(1.0, 2.0), "longer than its process"), (Cost(0.0, 0.0), "must be positive seconds")]:
        attribute = "costs" if isinstance(value, Cost) else "persistent_caches"
        odd = type("Odd", (AutogradBackend,), {attribute: {"resnet15": value} if attribute == "costs" else (value,)})
        assert message in engines.contract_problem(odd, "autograd"), value


def test_listing_names_imports_no_plugin(plugins):
    """Names and origins come from distribution metadata alone; no plugin module is imported."""
    code = ("import sys; from ttfg import engines, models; "
            "names = engines.names() + models.names(); origins = [engines.entry(n).origin for n in engines.names()]; "
            "assert 'test.autograd' in names and 'test_mlp' in names, names; "
            "loaded = [m for m in sys.modules if m.startswith('ttfg_') or m in ('jax', 'torch', 'autograd')]; "
            "assert not loaded, loaded")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr


def test_a_plugins_import_is_timed_in_the_import_phase(plugins):
    """A library whose package takes 0.4 s to import (its ``__init__`` pulls in scipy, torch): that time
    is the import phase's. Loaded before the clock started, such a library showed an import of 0.2 ms
    and its import regression was billed to build and compile."""
    from ttfg.measure.cases import select
    from ttfg.measure.runner import RunSettings, run_sample

    case = select(["test_slow_import"], ["autograd"], None)[0][0]
    sample = run_sample(case, "timing", "cold", 0, RunSettings(repeat=1, timeout_s=120))
    assert sample.ok, sample.error
    assert sample.import_s >= 0.4 and sample.build_s < 0.4, (sample.import_s, sample.build_s)


def test_which_of_a_librarys_files_ran_on_the_measured_path(plugins):
    """The proof a gate needs before calling a change "unchanged": did the changed files run at all?"""
    from ttfg.measure import coverage
    from ttfg.measure.cases import select
    from ttfg.measure.runner import RunSettings

    case = select(["test_mlp"], ["test.autograd"], None)[0][0]
    installed = coverage.package_paths(coverage.executed(case, RunSettings(repeat=1, timeout_s=120)), plugins)
    assert {"ttfg_test_backends/models.py", "ttfg_test_backends/backends.py"} <= installed
    assert "ttfg_test_backends/slow_import.py" not in installed  # another model's module: never imported here
    # Mapped back to the repository's files they were installed from (the plugin's source tree here).
    folder = "tests/plugins/ttfg_test_backends"
    python = {p for p in installed if p.endswith(".py")}
    mapped, _ = coverage.source_paths(coverage.digests(plugins, python),
                                      coverage.tree_digests(ROOT, folder, {p.rsplit("/", 1)[-1] for p in python}))
    ran = set(mapped.values())
    models = f"{folder}/ttfg_test_backends/models.py"
    on = coverage.check([models, "README.md"], ran)
    assert on.changed == [models] and on.ran == on.changed and not on.off_path
    off = coverage.check([f"{folder}/ttfg_test_backends/slow_import.py", "docs/x.md"], ran)
    assert off.off_path and off.not_ran == [f"{folder}/ttfg_test_backends/slow_import.py"]
    assert "cannot see this change" in off.describe()
    assert not coverage.check(["README.md"], ran).off_path  # no code changed: nothing to prove
