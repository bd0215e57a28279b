"""Studies: three questions about cold-start cost, each one command with an honest answer.

* ``params``: does passing weights as arguments instead of capturing them change TTFG?
  Effect = closure / args per backend, from paired cold processes.
* ``chain``: does a homogeneous chain (scan / regional compilation) compile faster
  than an unrolled one? Effect = scan / unrolled per backend.
* ``env``: does another environment (a framework release, a dependency bump) change
  TTFG? Effect = second ``--env`` / first ``--env`` per backend, from paired cold
  processes, one in each environment.
* ``depth``: how does the first gradient grow with depth? Sweeps resnet blocks
  (1, 2, 4, 8, 15, 30, 60), ConvNeXt stage-depth multipliers or transformer blocks
  (1, 2, 4, 8, at the default width, heads and sequence), and fits
  ``t = a + b * depth**k`` per backend and phase, with an interval for ``k``.

All samples are cold processes from the runner, interleaved round-robin (effects: the
two arms alternate A B B A within each round), and every sample lands in an ordinary
results file, so a study can be re-analysed, compared and reported like any run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .. import engines, metrics

from . import stats
from ..measure.cases import Case, parse_model
from ..errors import UsageError
from ..results.writer import save_again
from ..results.format import is_number
from ..results.model import CaseResult, DepthEntry, EffectEntry, Fit, Results, StudySection
from ..measure.runner import RunSettings, Runner
from ..measure.schedule import alternate_rounds, schedule

STUDIES = ("params", "chain", "depth", "env")
#: For each effect study: the axis, the control value and the treatment value (the env study's are its two
#: environments' names).
ARMS = {"params": ("params", "args", "closure"), "chain": ("chain", "unrolled", "scan")}
RESNET_DEPTHS = (1, 2, 4, 8, 15, 30, 60)
CONVNEXT_MULTIPLIERS = (1, 2, 3)  # stage depths (1, 1, 3, 1) x m; m = 3 is ConvNeXt-T
TRANSFORMER_DEPTHS = (1, 2, 4, 8)  # pre-norm blocks; 4 is transformer_tiny's default
DEFAULT_BACKENDS = {
    "params": ("jax.jit", "torch.compile", "torch.compile.aot_eager"),
    "chain": ("jax.jit", "jax.eager", "torch.compile", "torch.compile.aot_eager"),
    "depth": ("jax.jit", "jax.eager", "torch.eager", "torch.func", "torch.compile.aot_eager", "autograd"),
    "env": ("jax.jit",),
}
#: Metrics a depth fit is made for: the first gradient and each of its phases (the registry's list).
DEPTH_METRICS = metrics.DEPTH_METRICS


def depth_models(model: str) -> list[tuple[str, int]]:
    """``(model selection, depth)`` pairs swept by the depth study."""
    name, options = parse_model(model)
    if options:
        raise UsageError(f"the depth study sets the depth itself; give the bare model name, not {model!r}")
    if name == "resnet15":
        return [(f"resnet15:blocks={d}", d) for d in RESNET_DEPTHS]
    if name == "convnext_tiny":
        return [(f"convnext_tiny:depths={m}x{m}x{3 * m}x{m}", 6 * m) for m in CONVNEXT_MULTIPLIERS]
    if name == "transformer_tiny":
        return [(f"transformer_tiny:blocks={d}", d) for d in TRANSFORMER_DEPTHS]
    raise UsageError(f"no depth sweep is defined for model {name!r}")


def effect_entry(backend: str, metric: str, control: str, treatment: str, effect: "stats.Effect | None",
                 note: str = "") -> EffectEntry:
    """One backend x metric of an effect study as the results file's study section holds it (the paired effect's
    numbers, one that could not be estimated None): the one record of an effect, written and read back."""
    entry = EffectEntry(backend, metric, control, treatment, note=note)
    if effect is not None:
        entry.ratio, entry.ci_low, entry.ci_high, entry.p_value = (_finite(getattr(effect, k))
                                                                   for k in ("ratio", "ci_low", "ci_high", "p_value"))
        entry.n = int(effect.n)
    return entry


@dataclass
class DepthRow:
    backend: str
    metric: str
    fit: stats.PowerLawFit | None
    growth: str
    points: list[tuple[int, float]] = field(default_factory=list)
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return self.entry().to_json()

    def entry(self) -> DepthEntry:
        """As the results file's study section holds it (a number that could not be estimated is None)."""
        fit = None
        if self.fit is not None:
            fit = Fit(*(_finite(getattr(self.fit, k)) for k in ("a", "b", "k", "k_ci_low", "k_ci_high")),
                      int(self.fit.n), self.fit.method)
        return DepthEntry(self.backend, self.metric, self.growth, fit, [(d, t) for d, t in self.points], self.note)


def _finite(value) -> float | None:
    return float(value) if is_number(value) else None


def study_arms(study: str, envs: list[str] | None = None) -> tuple[str, str, str]:
    """``(axis, control, treatment)`` of an effect study; the env study's arms are its two environments."""
    if study == "env":
        if not envs or len(envs) != 2:
            raise UsageError("the env study compares two environments: give --env twice (e.g. --env current "
                             "--env 'jax==0.4.38 jaxlib==0.4.38')")
        return "env", envs[0], envs[1]
    return ARMS[study]


def effect_cases(study: str, model: str, backends: list[str],
                 envs: list[str] | None = None) -> tuple[list[tuple[str, Case, Case]], list[str]]:
    """Per backend, the (control, treatment) case pair; backends lacking either arm are noted."""
    axis, control, treatment = study_arms(study, envs)
    pairs, notes = [], []
    for name in backends:
        cls = engines.get(name)
        if study == "env":  # the same case in two environments (whose frameworks the probes find)
            variant = tuple(cls.default_variant().items())
            pairs.append((name, Case(model, name, variant, control), Case(model, name, variant, treatment)))
            continue
        if cls.availability():
            notes.append(f"{name}: {cls.availability()}")
            continue
        if control not in cls.supports[axis] or treatment not in cls.supports[axis]:
            notes.append(f"{name}: does not support both {axis}={control} and {axis}={treatment}")
            continue
        arms = [Case(model, name, tuple(cls.resolve_variant({axis: value}).items())) for value in (control, treatment)]
        pairs.append((name, arms[0], arms[1]))
    return pairs, notes


def paired_values(control: CaseResult, treatment: CaseResult, metric: str) -> tuple[list[float], list[float]]:
    """Values of both arms matched by sample index (a pair is one round of the interleaving)."""
    def by_index(case: CaseResult) -> dict[int, float]:
        return {s["index"]: v for s in case.good() if (v := metrics.sample_value(s, metric)) is not None and v > 0}

    a, b = by_index(control), by_index(treatment)
    common = sorted(set(a) & set(b))
    return [a[i] for i in common], [b[i] for i in common]


def analyse_effects(study: str, results: Results, pairs: list[tuple[str, Case, Case]],
                    names=metrics.EFFECT_METRICS) -> list[EffectEntry]:
    axis, control, treatment = (("env", pairs[0][1].env, pairs[0][2].env) if study == "env" and pairs
                                else ARMS.get(study, ("env", "", "")))
    rows = []
    for backend, c_case, t_case in pairs:
        c_res, t_res = results.case(c_case.id), results.case(t_case.id)
        for metric in names:
            ctrl, trt = paired_values(c_res, t_res, metric)
            if len(ctrl) < 2:
                rows.append(effect_entry(backend, metric, control, treatment, None,
                                         f"{len(ctrl)} complete pair(s); need at least 2"))
                continue
            rows.append(effect_entry(backend, metric, control, treatment, stats.paired_effect(ctrl, trt)))
    return rows


def analyse_depth(results: Results, sweep: list[tuple[str, int]], backends: list[str]) -> list[DepthRow]:
    depth_of = dict(sweep)
    rows = []
    for backend in backends:
        for metric in DEPTH_METRICS:
            xs, ys, points = [], [], []
            for case in results.cases:
                if case.backend != backend or case.model not in depth_of or case.skipped:
                    continue
                values = [v for v in metrics.case_values(case, metric) if v > 0]
                for v in values:
                    xs.append(depth_of[case.model])
                    ys.append(v)
                if values:
                    points.append((depth_of[case.model], sorted(values)[len(values) // 2]))
            if len(set(xs)) < 3:
                if metric == "first_grad_s" or xs:
                    rows.append(DepthRow(backend, metric, None, "undetermined", sorted(points),
                                         "fewer than 3 depths with good samples"))
                continue
            fit = stats.fit_power_law(xs, ys)
            rows.append(DepthRow(backend, metric, fit, stats.linearity(fit), sorted(points)))
    return rows


@dataclass
class StudyResult:
    study: str
    model: str
    results: Results
    effects: list[EffectEntry] = field(default_factory=list)
    depth: list[DepthRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def section(self) -> StudySection:
        """The analysis as the results file's typed study section."""
        return StudySection(self.study, self.model, list(self.notes), list(self.effects),
                            [d.entry() for d in self.depth])

    def to_json(self) -> dict[str, Any]:
        return self.section().to_json()


def run_study(study: str, model: str, backends: list[str] | None, settings: RunSettings, out: Path | None,
              on_sample: Callable | None = None, envs: "dict | None" = None, project=None) -> StudyResult:
    """Measure and analyse one study; the samples are saved to ``out`` as they arrive.

    ``envs`` (``{name: Environment}``, ``--env``): the env study's two environments; for the
    other studies at most one, which every case runs in. ``project``: the user's project as the built
    environments' probes import it (``provision.project_source.ProjectSource``), recorded in the results.
    """
    envs = dict(envs or {})
    if study != "env" and len(envs) > 1:
        raise UsageError(f"the {study} study runs in one environment; give --env once (the env study compares two)")
    one_env = next(iter(envs)) if study != "env" and envs else None
    if study not in STUDIES:
        raise UsageError(f"unknown study {study!r}; choose one of: {', '.join(STUDIES)}")
    backends = list(backends or DEFAULT_BACKENDS[study])
    for name in backends:
        engines.get(name)  # unknown names fail before anything runs
    if study == "depth":
        sweep = depth_models(model)
        cases, notes = [], []
        for name in backends:
            cls = engines.get(name)
            if cls.availability():
                notes.append(f"{name}: {cls.availability()}")
                continue
            cases += [Case(m, name, tuple(cls.default_variant().items()), one_env) for m, _ in sweep]
        results = Runner(cases, [], settings, out, envs=envs, project=project).run(on_sample)
        ran = [b for b in backends if any(c.backend == b for c in cases)]
        res = StudyResult(study, model, results, depth=analyse_depth(results, sweep, ran), notes=notes)
    else:
        pairs, notes = effect_cases(study, model, backends, list(envs) if study == "env" else None)
        if one_env:
            pairs = [(name, c.in_env(one_env), t.in_env(one_env)) for name, c, t in pairs]
        cases = []
        for i, (_, control, treatment) in enumerate(pairs):
            cases += [control, treatment] if i % 2 == 0 else [treatment, control]
        if not cases:
            raise UsageError(f"no selected backend supports both arms of the {study} study: {'; '.join(notes)}")
        # A B B A: alternate the order of the two arms from round to round so order effects cancel.
        runner = Runner(cases, [], settings, out, steps=alternate_rounds(schedule(cases, settings)), envs=envs,
                        project=project)
        results = runner.run(on_sample)
        res = StudyResult(study, model, results, effects=analyse_effects(study, results, pairs), notes=notes)
    results.study = res.section()
    if out:  # the analysis added, saved through the one-writer lock every writer of a results file takes
        save_again(results, out)
    return res


__all__ = ["STUDIES", "StudyResult", "depth_models", "run_study"]
