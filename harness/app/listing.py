"""``ttfg list``: the models and backends installed here, what each supports, and the plugins that cannot be used.

Why a use case: it walks both plugin registries and asks every backend whether its framework
is available (imports nothing heavy: ``ttfg list`` must not import torch or jax); the CLI
lays the answer out as tables.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ModelRow:
    """A model; ``broken`` is set (and the numbers empty) for a plugin that cannot be used."""

    name: str
    origin: str
    parameters: str = ""
    input: str = ""
    description: str = ""
    broken: str = ""  # "broken plugin, skipped" or "ignored plugin"


@dataclass
class BackendRow:
    """A backend; ``available`` is "yes", "no: WHY", or for a plugin that cannot be used its ``broken`` label."""

    name: str
    origin: str
    available: str = ""
    axes: list[str] = field(default_factory=list)
    broken: str = ""  # "no: broken plugin, skipped" or "no: ignored plugin"


@dataclass
class FunctionRow:
    """A library's own function (``engines/function.py``), listed from its declaration: nothing is imported."""

    name: str
    case: str
    target: str
    origin: str


@dataclass
class Catalog:
    models: list[ModelRow]
    backends: list[BackendRow]
    #: The variant axes and their values (the first per backend is its default).
    axes: dict
    #: "  NAME: what it does", per usable backend.
    described: list[str]
    #: Unsupported variants, "NAME AXIS=VALUE: why".
    notes: list[str]
    #: Why each unusable plugin cannot be used (too long for a cell).
    broken: list[str]
    #: The functions measured as cases (``ttfg.functions`` entry points, the config's ``[functions]``).
    functions: list[FunctionRow] = field(default_factory=list)


def catalog() -> Catalog:
    from ttfg import models

    from .. import engines
    from ..engines import variants
    from ..errors import BrokenPlugin, UsageError
    from ..measure.cases import model_problem

    broken = []
    model_rows = []
    for name in models.names():
        origin = models.entry(name).origin
        try:
            problem = model_problem(name)
        except UsageError as exc:  # a plugin builder that rejects its own defaults
            problem = f"{models.entry(name).describe()}: {exc}"
        if problem:
            model_rows.append(ModelRow(name, origin, broken="broken plugin, skipped"))
            broken.append(problem)
            continue
        spec = models.load(name)
        model_rows.append(ModelRow(name, origin, f"{spec.parameter_count():,}", "x".join(map(str, spec.input_shape)),
                                   models.description(name)))
    for entry in models.shadowed():
        model_rows.append(ModelRow(entry.name, entry.origin, broken="ignored plugin"))
        broken.append(f"{entry.describe()}: {entry.problem}")
    backend_rows = []
    described = []
    notes = []
    for name in engines.names():
        origin = engines.entry(name).origin
        try:
            cls = engines.get(name)
        except BrokenPlugin as exc:
            backend_rows.append(BackendRow(name, origin, broken="no: broken plugin, skipped"))
            broken.append(str(exc))
            continue
        why = cls.availability()
        axes = [" ".join(cls.supports[a]) for a in variants.AXES]
        backend_rows.append(BackendRow(name, origin, "yes" if not why else f"no: {why}", axes))
        described.append(f"  {name}: {cls.description}")
        for key, reason in cls.why_not.items():
            notes.append(f"{name} {key}: {reason}")
        combo = cls.unsupported_combination({"params": "closure", "chain": "scan"})
        if combo and all(v in cls.supports[a] for a, v in (("params", "closure"), ("chain", "scan"))):
            notes.append(f"{name} params=closure,chain=scan: {combo}")
    for entry in engines.shadowed():
        backend_rows.append(BackendRow(entry.name, entry.origin, broken="no: ignored plugin"))
        broken.append(f"{entry.describe()}: {entry.problem}")
    from ..engines import function
    from ..measure.cases import Case

    function_rows = []
    for name in function.names():
        found = function.entry(name)
        if name in models.names():  # a model of that name wins the selection: the function is never measured
            broken.append(f"function {name!r} ({found.origin}): the name of a model; rename it to measure it")
            continue
        function_rows.append(FunctionRow(name, Case(name, function.NAME, ()).id, found.target, found.origin))
    return Catalog(model_rows, backend_rows, dict(variants.AXES), described, notes, broken, function_rows)


__all__ = ["BackendRow", "Catalog", "FunctionRow", "ModelRow", "catalog"]
