"""How the gate samples and decides: :class:`GateSettings`, checked once, and the guard's defaults.

Why a module of its own: the command line, the release sweep, a confirmation of a
trend step and the calibration all build settings, and each used to check some of
them again. ``GateSettings.__post_init__`` is the one check; it raises the
user-facing errors (``UsageError``, exit 2) naming the option that was wrong.

Why every phase a cold start pays is guarded: a user waits for the import, the build
and the first gradient, and a process pays them all (``process_ttfg_s``). A gate that
decided on the first gradient alone passed a build made 38 times slower (0.82 ms ->
30.9 ms, issue 24). So each timing of ``GateSettings.guard`` (the registry's
``Metric.guarded``) gets its own sequential test at ``alpha / k`` (Bonferroni; see
``gate_loop.py``).

Why ``cache`` (``--cache``): most processes in production start with a persistent compile
cache, and a change that makes a cache key unstable (a constant that differs from process to
process) turns every warm start into a cold one while passing a cold gate. ``warm`` measures
warm starts (each side's caches populated by its own revision, ``gate_loop.py``); ``both``
runs the cold and the warm gate as two guarded sets (``app/gate.py``).
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import asdict, dataclass, field, replace

from .. import metrics
from ..errors import UsageError
from ..measure.run_settings import RunSettings
from . import tiers as tiering

__all__ = ["CACHES", "DEFAULT_INTERIM_SHARE", "EXPLAIN_METRICS", "GATE_OUTPUTS", "GUARDED", "GateSettings",
           "checked_guard", "checked_tiers", "guarded_metrics", "not_split", "refuse_unreported"]

#: What a gate writes at its end, beside base.json and head.json; removed when a gate starts in the folder.
GATE_OUTPUTS = ("gate.json", "summary.md")
#: The phases a cold start pays, each guarded by the time tier (``Metric.guarded``): the first gradient,
#: the whole process (spawn to first gradient, which also holds the interpreter's start and the
#: project's own imports), the framework's import and the model's build.
GUARDED = metrics.names(lambda m: m.guarded)
#: Counters compared alongside the gated timing, to explain a change.
EXPLAIN_METRICS = ("counters.*", *metrics.by_sample_kind(lambda m: m.deterministic and m.compared_by_default))
#: ``--cache``: cold (fresh, empty caches per process), warm (persistent caches populated by each side's own
#: revision), both (the cold and the warm gate, as two guarded sets).
CACHES = ("cold", "warm", "both")
#: The test's documented default share of alpha for interim looks (stats.SequentialPairedTest).
DEFAULT_INTERIM_SHARE = 0.1


def guarded_metrics(metric: str = "first_grad_s") -> tuple[str, ...]:
    """The default guard: :data:`GUARDED`, with ``metric`` in the first gradient's place."""
    return tuple(dict.fromkeys(metric if m == "first_grad_s" else m for m in GUARDED))


def checked_guard(names) -> tuple[str, ...]:
    """``names`` as a guard, once each, when every one is a timing of the probe (the one check of ``--guard``).

    Raises
    ------
    UsageError
        For an unknown metric (the registry's message) or one that is not a timing.
    """
    names = tuple(dict.fromkeys(names))
    for name in names:
        info = metrics.get(name)
        if info.deterministic or info.sample != "timing":
            raise UsageError(f"--guard {name} is not a timing of the probe (counters are compared by the "
                             "structural and instructions tiers)")
    return names


def not_split(guard, backend: str) -> dict[str, str]:
    """The timings of ``guard`` that ``backend`` never reports, each with why: a phase its first gradient does not
    split (``Backend.phases``, ``Metric.phases``). Autograd's first gradient is one phase, so its ``compile_s`` is
    never measured: a test of it would wait for pairs that never come. A backend that cannot be loaded is left to
    the case's skip record (nothing here)."""
    from .. import engines

    found = engines.facts(backend)
    if not found.known:
        return {}
    split = found.phases
    reported = ", ".join(split) + (" only" if len(split) == 1 else "")
    out = {}
    for name in guard:
        info = metrics.get(name)
        if not info.split_by(split):
            wanted = " or ".join(info.phases)
            out[name] = (f"{backend} does not split a {wanted} phase off its first gradient "
                         f"(it reports {reported}), so its {info.brief} is not measured")
    return out


def refuse_unreported(settings: "GateSettings", cases) -> None:
    """Before any work: a guarded timing (or ``--metric``) that no selected case's backend reports is refused.

    Raises
    ------
    UsageError
        Naming the timing, each backend selected and the phases it does report.
    """
    if not cases:
        return
    backends = list(dict.fromkeys(c.backend for c in cases))
    for name in settings.guard:
        whys = [not_split((name,), b).get(name) for b in backends]
        if all(whys):
            option = "--metric" if name == settings.metric else "--guard"
            raise UsageError(f"{option} {name}: no selected case can report it: " + "; ".join(whys))


def checked_tiers(tiers) -> tuple[str, ...]:
    """The tiers named in ``tiers`` (a comma-separated text or names), in run order (the one check of ``--tiers``).

    Raises
    ------
    UsageError
        Naming the known tiers, for an unknown or empty list.
    """
    return tiering.parse_tiers(tiers if isinstance(tiers, str) else ",".join(tiers))


@dataclass
class GateSettings:
    """How the gate samples and decides."""

    #: The timing the gate decides on (a timing metric of the probe).
    metric: str = "first_grad_s"
    #: Minimum relative effect; None: the metric's registry threshold (5 % for timings).
    min_effect: float | None = None
    alpha: float = 0.01
    min_pairs: int = 5
    max_pairs: int = 60
    #: Wall-clock seconds for the timing pairs, over all cases.
    budget_s: float = 600.0
    #: Consecutive failed samples on one side before its case stops.
    max_failures: int = 3
    #: Also count allocations: ``alloc_repeat`` memray processes per side and case, after the budget, those the
    #: instructions tier took (or the count store gave) included.
    allocations: bool = False
    alloc_repeat: int = 1
    #: For each case that regressed: sampled-stack processes per side (pyinstrument), for attribution.
    profiles: int = 3
    run: RunSettings = field(default_factory=lambda: RunSettings(repeat=1))
    #: Which tiers decide (``tiers.py`` runs them), in run order; the command line's default is ``tiers.DEFAULT_TIERS``.
    tiers: tuple[str, ...] = (tiering.TIME,)
    #: Count-tier processes per side, kind and case.
    count_repeat: int = 1
    #: The timings the time tier guards, each with its own paired sequential test at ``alpha / len(guard)``;
    #: None: :func:`guarded_metrics` of ``metric`` (every phase a cold start pays). ``metric`` is always in it.
    guard: tuple[str, ...] | None = None
    #: ``--cache``: one of :data:`CACHES`.
    cache: str = "cold"
    #: ``--cache-dir``: where each side's persistent caches go with a warm cache (a folder of its own per gate,
    #: side and case, removed afterwards); None: the system's temporary folder.
    cache_dir: str | None = None
    #: Cases measured cold although the cache is warm (their populating processes looked no persistent cache up), why;
    #: filled by the gate's loop, recorded in the results files and gate.json (never silently cold).
    measured_cold: dict[str, str] = field(default_factory=dict)
    #: Cases measured warm, with what their populating processes showed of the caches (``warm_evidence.decide``).
    warm_evidence: dict[str, str] = field(default_factory=dict)
    #: Structural counters a change of any size settles (:func:`strict_counters`); None: the registry's
    #: discrete ones. Any other counter that grew by less than ``min_effect`` is evidence, not a verdict.
    strict_counters: tuple[str, ...] | None = None
    #: More counts a side, one at a time, for a case whose count landed at its margin's edge before the
    #: case goes to the time tier (``decide/count_margins.py``).
    recount: int = 1

    def __post_init__(self):
        from .compare import metric_info

        info = metric_info(self.metric)
        if info.deterministic:
            raise UsageError(f"--metric {self.metric} is a counter; the gate decides on a timing "
                             "(counters are compared alongside, and checked by --expectations)")
        guard = guarded_metrics(self.metric) if self.guard is None else checked_guard(self.guard)
        self.guard = tuple(dict.fromkeys((self.metric, *guard) if self.metric not in guard else guard))
        if self.min_effect is None:
            self.min_effect = metrics.get(self.metric).threshold
        if not 2 <= self.min_pairs <= self.max_pairs:
            raise UsageError(f"need 2 <= --min-pairs <= --max-pairs, got {self.min_pairs} and {self.max_pairs}")
        if self.max_failures < 1:
            raise UsageError(f"--max-failures must be >= 1, got {self.max_failures}")
        if self.alloc_repeat < 1:
            raise UsageError(f"--alloc-repeat must be >= 1, got {self.alloc_repeat}")
        if self.count_repeat < 1:
            raise UsageError(f"--count-repeat must be >= 1, got {self.count_repeat}")
        self.tiers = checked_tiers(self.tiers)
        self.strict_counters = tiering.strict_counters(self.strict_counters)
        if not 0 <= self.recount <= 5:
            raise UsageError(f"--recount must be between 0 and 5, got {self.recount}")
        if self.profiles < 0:
            raise UsageError(f"--profiles must be >= 0, got {self.profiles}")
        if not 0 < self.alpha < 1 or not self.min_effect > 0:
            raise UsageError(f"need 0 < --alpha < 1 and --min-effect > 0, got {self.alpha} and {self.min_effect}")
        self._check_cache()

    def _check_cache(self) -> None:
        """``--cache`` is one of :data:`CACHES`; a warm cache's folder can be written (checked before any install)."""
        if self.cache not in CACHES:
            raise UsageError(f"--cache {self.cache!r}: expected one of {', '.join(CACHES)}")
        if self.cache == "warm" and "warm" not in self.run.caches:
            self.run = replace(self.run, caches=("warm",))  # the results files say which samples they hold
        if self.cache != "cold" and self.cache_dir is not None:
            folder = os.path.abspath(os.path.expanduser(self.cache_dir))
            try:
                os.makedirs(folder, exist_ok=True)
                tempfile.TemporaryDirectory(prefix="ttfg-write-check-", dir=folder).cleanup()
            except OSError as exc:
                raise UsageError(f"--cache-dir {self.cache_dir}: cannot write there, so no persistent cache can be "
                                 f"populated ({exc.strerror or exc})") from None

    @property
    def guard_alpha(self) -> float:
        """Each guarded timing's level: Bonferroni over the guard, so that the case's false-alarm rate stays
        at most ``alpha`` (Holm's first step; its later steps would only matter once a case has regressed)."""
        return self.alpha / len(self.guard)

    def to_json(self) -> dict:
        data = asdict(self)
        data["run"] = self.run.to_json()
        data["run"].pop("source", None)  # each side has its own; see the results files
        for key, default in (("cache", "cold"), ("cache_dir", None), ("measured_cold", {}), ("warm_evidence", {})):
            if data[key] == default:  # a cold gate's files stay as they were before warm gates existed
                del data[key]
        return data
