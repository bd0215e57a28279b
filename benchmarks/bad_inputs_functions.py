"""``bad_inputs.py``'s rows for function cases (issue 47: a library's own ``case() -> (fn, args)``), and their files.

Each row is a real ``ttfg`` process, its functions declared in a scratch config named with ``--config``:

- ``fn 1``: a ``[functions]`` target that is not ``module:callable`` is refused naming the file and key;
- ``fn 2``: a function whose module cannot be imported is a failed sample in its import phase, and a run that
  measured nothing exits 2;
- ``fn 3``: a ``case`` that does not return ``(fn, args)`` fails in its build phase, saying what it must return;
- ``fn 4``: ``check`` on a function that runs says it was not compared (no reference), and exits 0;
- ``fn 9``-``fn 11``: a function with a reference (``(fn, args, reference)``): one that agrees is ``ok``, exit 0;
  one that disagrees is a ``mismatch`` naming the leaf, exit 1; a reference that is not callable is refused
  in the build phase, saying what ``case()`` must return;
- ``fn 5``: a function named like a model (``resnet15``) is refused, naming both, never shadowed by the model;
- ``fn 6``-``fn 8``: ``init --starter`` (item 3): an unknown starter is refused by the parser; ``--starter
  backend`` for Haiku (no spec-built starter for it) is refused, nothing written; the default function starter
  on the same project writes ``ttfg_cases.py`` and its ``ttfg.functions`` entry point.
"""

from __future__ import annotations

from pathlib import Path

CASES = '''\
"""Scratch function cases for bad_inputs_functions.py."""


def not_a_pair():
    return "a string"


def sums():
    return (lambda x: (sum(v * v for v in x), [2 * v for v in x])), ([1.0, 2.0],)


def _loss_and_grad(x):
    return sum(v * v for v in x), [2 * v for v in x]


def checked():
    return _loss_and_grad, ([1.0, 2.0],), _loss_and_grad


def wrong():
    return _loss_and_grad, ([1.0, 2.0],), lambda x: (sum(v * v for v in x), [3 * v for v in x])


def not_callable():
    return _loss_and_grad, ([1.0, 2.0],), "float64"
'''


def rows(d: Path, out) -> list:
    """The rows (``bad_inputs.Row``)."""
    from bad_inputs import TTFG_REQUIREMENT, Row, _all, _contains, _project

    folder = d / "functions"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "fnbad_cases.py").write_text(CASES)
    (folder / "bad.toml").write_text('[functions]\nbad = "fnbad_cases.not_a_pair"\n')
    (folder / "fn.toml").write_text('[functions]\nmissing = "fnbad_not_a_module:case"\n'
                                    'notpair = "fnbad_cases:not_a_pair"\nsums = "fnbad_cases:sums"\n'
                                    'checked = "fnbad_cases:checked"\nwrong = "fnbad_cases:wrong"\n'
                                    'uncallable = "fnbad_cases:not_callable"\n')
    (folder / "shadow.toml").write_text('[functions]\nresnet15 = "fnbad_cases:sums"\n')
    hk = _project(d / "fn-haiku", "hklab", deps=("dm-haiku", "jax"))
    hk_other = _project(d / "fn-haiku-default", "hklab", deps=("dm-haiku", "jax"))

    def nothing_written(proc):
        return "init wrote ttfg.toml" if (hk / "ttfg.toml").exists() else None

    def the_function_starter(proc):
        cases = hk_other / "src" / "hklab" / "ttfg_cases.py"
        if not cases.is_file() or "hk.transform(forward)" not in cases.read_text():
            return "no Haiku function starter in src/hklab/ttfg_cases.py"
        if '"hklab_loss" = "hklab.ttfg_cases:case"' not in (hk_other / "pyproject.toml").read_text():
            return "no ttfg.functions entry point"
        return None

    init = ["init", "--ttfg-requirement", TTFG_REQUIREMENT]
    env = {"PYTHONPATH": str(folder)}
    config = ["--config", str(folder / "fn.toml")]
    return [
        Row("fn 1: [functions] target without module:callable", ["--config", str(folder / "bad.toml"), "list"],
            check=_contains('expected "module:callable"')),
        Row("fn 2: run, a function whose module cannot be imported",
            [*config, "run", "--model", "missing", "--repeat", "1", "--out", out("fn2.json")], env=env,
            check=_all(_contains("No module named 'fnbad_not_a_module'"), _contains("in phase import"))),
        Row("fn 3: run, a case() that returns no (fn, args)",
            [*config, "run", "--model", "notpair", "--repeat", "1", "--out", out("fn3.json")], env=env,
            check=_all(_contains("must return (fn, args)"), _contains("in phase build"))),
        Row("fn 4: check, a function that runs (not compared: no reference)", [*config, "check", "--model", "sums"],
            expect=0, env=env, check=_contains("unchecked")),
        Row("fn 5: a function named like a model", ["--config", str(folder / "shadow.toml"), "check", "--model",
                                                   "resnet15"], env=env,
            check=_all(_contains("has the name of ttfg's built-in model 'resnet15'"),
                       _contains("rename the function"))),
        Row("fn 6: init --starter with an unknown starter", [*init, "--repo", str(hk), "--starter", "model"],
            check=_all(_contains("invalid choice: 'model'"), nothing_written)),
        Row("fn 7: init --starter backend for a Haiku library", [*init, "--repo", str(hk), "--starter", "backend"],
            check=_all(_contains("--starter backend: no starter library backend for haiku"), nothing_written)),
        Row("fn 8: init's default function starter for the same Haiku library", [*init, "--repo", str(hk_other)],
            expect=0, check=_all(_contains("a starter function case (hklab_loss, haiku)"), the_function_starter)),
        Row("fn 9: check, a function whose reference agrees", [*config, "check", "--model", "checked"],
            expect=0, env=env, check=_contains("ok")),
        Row("fn 10: check, a function whose reference disagrees", [*config, "check", "--model", "wrong"],
            expect=1, env=env, check=_all(_contains("mismatch"), _contains("[1][0]"))),
        Row("fn 11: run, a case() whose reference is not callable",
            [*config, "run", "--model", "uncallable", "--repeat", "1", "--out", out("fn11.json")], env=env,
            check=_all(_contains("(fn, args, reference)"), _contains("reference is a str"), _contains("in phase build"))),
    ]
