"""Cases: model x backend x variant, and turning command-line selections into them.

A model selection is a name with optional size options, ``resnet15`` or
``resnet15:blocks=30`` or ``convnext_tiny:depths=1x1x3x1``. A variant selection is
``default`` (each backend's own default), ``all`` (every supported combination) or a
partial assignment such as ``chain=scan`` applied over each backend's default.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from typing import TYPE_CHECKING

from ttfg import models

from .. import engines

from ..engines import function, variants
from ..errors import BrokenPlugin, Unsupported, UsageError

if TYPE_CHECKING:
    from ..provision.environments import Environment


def parse_model(text: str) -> tuple[str, dict]:
    """``"resnet15:blocks=30"`` -> ``("resnet15", {"blocks": 30})``; ``AxB`` parses as a tuple."""
    name, _, rest = text.partition(":")
    try:
        models.entry(name)
    except KeyError:
        raise UsageError(f"unknown model {name!r}; known models: {', '.join(models.names())}") from None
    options: dict = {}
    for part in filter(None, rest.split(",")):
        key, eq, value = part.partition("=")
        if not eq or not key:
            raise UsageError(f"model option {part!r} in {text!r} is not key=value")
        if key in options:
            raise UsageError(f"model option {key!r} is given twice in {text!r}")
        try:
            options[key] = tuple(int(v) for v in value.split("x")) if "x" in value else int(value)
        except ValueError:
            raise UsageError(f"model option {part!r} in {text!r}: value must be an integer or AxBxC") from None
    return name, options


def load_model(text: str):
    """The spec of ``text``; :class:`UsageError` for bad options, :class:`BrokenPlugin` for a broken plugin model."""
    name, options = parse_model(text)
    try:
        return models.load(name, **options)
    except models.PluginError as exc:
        raise BrokenPlugin(str(exc)) from None
    except (KeyError, ValueError) as exc:
        raise UsageError(str(exc).strip("'\"")) from None


def _option_text(value) -> str:
    return "x".join(str(v) for v in value) if isinstance(value, (tuple, list)) else str(value)


def normalize_model(text: str) -> str:
    """The one id of a sized model: validated by the model itself, defaults left out.

    ``resnet15:``, ``resnet15`` and ``resnet15:blocks=15`` all mean ``resnet15``;
    ``resnet15:blocks=0`` is refused here, by the model's own check, before any process
    is spawned (``run`` used to spawn probes for it that ``check`` rejected). A case id
    therefore names one model one way, so results, history and expectations agree.

    Raises
    ------
    UsageError
        For an unknown model, a malformed or repeated option, or a size the model refuses.
    """
    name, options = parse_model(text)
    load_model(text)
    defaults = models.defaults(name)
    kept = {k: v for k, v in options.items() if _option_text(v) != _option_text(defaults.get(k))}
    return name + (":" + ",".join(f"{k}={_option_text(v)}" for k, v in kept.items()) if kept else "")


def known_model(text: str) -> bool:
    """Whether this interpreter knows the model ``text`` names (built in, or a plugin's entry point here)."""
    try:
        models.entry(text.partition(":")[0])
    except KeyError:
        return False
    return True


def model_problem(text: str) -> str | None:
    """Why a plugin model cannot be built (``None`` for built-in models and working plugins).

    A plugin's builder is the plugin author's code: any exception it raises makes the
    model's cases skipped with the reason, not a crash of the whole selection. Bad
    options stay a :class:`UsageError`, as for built-in models.
    """
    name, _ = parse_model(text)
    if models.entry(name).builtin:
        return None
    try:
        load_model(text)
    except UsageError:
        raise
    except BrokenPlugin as exc:
        return str(exc)
    except Exception as exc:  # noqa: BLE001 (the plugin's own failure, reported by name)
        return f"{models.entry(name).describe()}: building {text!r} failed: {type(exc).__name__}: {exc}"
    return None


@dataclass(frozen=True)
class Case:
    """One measurable configuration. ``variant`` is fully resolved for the backend.

    ``env`` names the environment the case runs in (``ttfg run --env``), part of the
    case's key and its id (``model/backend/variant/env``); None: the interpreter that
    runs ttfg, and the id has three parts, as before environments existed.
    """

    model: str
    backend: str
    variant: tuple[tuple[str, str], ...]
    env: str | None = None

    @property
    def variant_dict(self) -> dict[str, str]:
        return dict(self.variant)

    @property
    def id(self) -> str:
        return self.plain_id + (f"/{self.env}" if self.env else "")

    @property
    def plain_id(self) -> str:
        """The id without the environment: what two environments' cases have in common."""
        return f"{self.model}/{self.backend}/{self.variant_label}"

    @property
    def variant_label(self) -> str:
        """The variant's text; ``default`` for a function case, which has no variant axes."""
        if self.is_function:
            return function.VARIANT
        return variants.label(self.variant_dict)

    @property
    def is_function(self) -> bool:
        """A library's own function (``engines/function.py``), not a model interpreted by a backend."""
        return self.backend == function.NAME

    def in_env(self, env: str | None) -> "Case":
        """The same case, run in environment ``env``."""
        return replace(self, env=env)

    @cached_property
    def spec(self):
        return load_model(self.model)

    def to_json(self) -> dict:
        data = {"model": self.model, "backend": self.backend, "variant": self.variant_dict}
        if self.env:
            data["env"] = self.env
        return data

    @classmethod
    def from_json(cls, data: dict) -> "Case":
        return cls(data["model"], data["backend"], tuple((a, data["variant"][a]) for a in variants.AXES
                                                         if a in data["variant"]), data.get("env"))

    @classmethod
    def from_id(cls, text: str) -> "Case":
        parts = text.split("/")
        if len(parts) not in (3, 4):
            raise UsageError(f"case id {text!r} is not model/backend/variant[/env]")
        if parts[1] == function.NAME:
            if parts[2] != function.VARIANT:
                raise UsageError(f"case id {text!r}: a function case's variant is {function.VARIANT!r}")
            return cls(parts[0], parts[1], (), parts[3] if len(parts) == 4 else None)
        return cls(parts[0], parts[1], tuple(variants.parse(parts[2]).items()), parts[3] if len(parts) == 4 else None)


@dataclass(frozen=True)
class Skipped:
    model: str
    backend: str
    variant: str
    reason: str

    @property
    def id(self) -> str:
        return f"{self.model}/{self.backend}/{self.variant}"


def _expand(name: str, all_names: list[str]) -> list[str]:
    return list(all_names) if name == "all" else [name]


def select(
    model_sel: list[str] | None = None,
    backend_sel: list[str] | None = None,
    variant_sel: list[str] | None = None,
    check_availability: bool = True,
    pending_models: bool = False,
) -> tuple[list[Case], list[Skipped]]:
    """Expand selections into runnable cases and skips (each with its reason).

    Unknown names raise :class:`UsageError`; unsupported or unavailable combinations,
    and every case of a broken plugin (backend or model), become :class:`Skipped` with
    the reason. Order: model, then backend, then variant.

    ``pending_models``: a model this interpreter does not know is kept as named (its options unchecked), for a
    command that installs each revision (the gate): a pull request that adds a model (its entry point and its
    line in ttfg.toml) declares a case the head's install resolves, and the gate refuses the name only when
    neither revision provides it (``app/gate.py``). Before, it was "unknown model" until the user reinstalled.
    """
    model_texts = [m for sel in (model_sel or ["all"]) for m in _expand(sel, models.names())]
    # A library's own function is a model and a backend at once: named as a model, it is its one case,
    # whatever backends are selected (``all`` models take every function too, after the models).
    functions = [m for sel in (model_sel or ["all"])
                 for m in (function.names() if sel == "all" else [sel] if _is_function(sel) else [])]
    _refuse_model_names([*functions, *(function.names() if function.NAME in (backend_sel or []) else []),
                         *(m for m in (model_sel or []) if function.is_function(m))])
    model_texts = [m for m in model_texts if m not in functions]
    backend_names = [b for sel in (backend_sel or ["all"]) for b in _expand(sel, engines.names())]
    if function.NAME in backend_names:  # ``--backend function``: the functions, never a model run by one
        backend_names = [b for b in backend_names if b != function.NAME]
        if model_sel is None:
            functions, model_texts = function.names(), []
    broken_models: dict[str, str | None] = {}
    for text in model_texts:
        if pending_models and not known_model(text):
            broken_models[text] = None
            continue
        problem = model_problem(text)
        broken_models[text if problem else normalize_model(text)] = problem
    model_texts = list(broken_models)
    classes, broken = {}, {}
    for name in dict.fromkeys(backend_names):
        try:
            classes[name] = engines.get(name)
        except BrokenPlugin as exc:
            broken[name] = str(exc)
    variant_sel = variant_sel or ["default"]
    requests: list[dict[str, str] | str] = []
    for sel in variant_sel:
        requests.append(sel if sel in ("default", "all") else variants.parse(sel))
    cases: list[Case] = []
    skipped: list[Skipped] = []
    seen: set[str] = set()
    for model in model_texts:
        for name in dict.fromkeys(backend_names):
            reason = broken_models[model] or broken.get(name)
            if reason:  # one skip per requested variant selection: the plugin's variants are unknown
                for sel in variant_sel:
                    skip = Skipped(model, name, sel, reason)
                    if skip.id not in seen:
                        seen.add(skip.id)
                        skipped.append(skip)
                continue
            cls = classes[name]
            unavailable = cls.availability() if check_availability else None
            for req in requests:
                if req == "all":
                    wanted = cls.supported_variants()
                elif req == "default":
                    wanted = [cls.default_variant()]
                else:
                    wanted = [req]
                for want in wanted:
                    try:
                        resolved = cls.resolve_variant(want)
                    except Unsupported as exc:
                        skip = Skipped(model, name, variants.label(want), str(exc))
                        if skip.id not in seen:
                            seen.add(skip.id)
                            skipped.append(skip)
                        continue
                    case = Case(model, name, tuple(resolved.items()))
                    if case.id in seen:
                        continue
                    seen.add(case.id)
                    if unavailable:
                        skipped.append(Skipped(model, name, variants.label(resolved), f"{name}: {unavailable}"))
                    else:
                        cases.append(case)
    for name in dict.fromkeys(functions):
        case = Case(name, function.NAME, ())
        if case.id not in seen:
            seen.add(case.id)
            cases.append(case)
    return cases, skipped


def _refuse_model_names(names: list[str]) -> None:
    """A function case named like a model is refused: ``--model NAME`` would measure one of two things, and which
    one would depend on what is installed."""
    for name in dict.fromkeys(names):
        try:
            found = models.entry(name)
        except KeyError:
            continue
        where = f"ttfg's built-in model {name!r}" if found.builtin else f"the model {found.describe()}"
        raise UsageError(f"function {function.entry(name).describe()} has the name of {where}; a function "
                         "case must not take a model's name: rename the function")


def _is_function(name: str) -> bool:
    """A registered function that is not a model's name (a model of the same name wins)."""
    try:
        models.entry(name)
        return False
    except KeyError:
        return function.is_function(name)


def plugin_entry_points(cases: list["Case"]) -> dict[str, list[str]]:
    """``{group: [name, ...]}``: the plugin backends and models (not built in) the cases name."""
    out: dict[str, set] = {"ttfg.backends": set(), "ttfg.models": set()}
    for case in cases:
        for registry, group, name in ((engines, "ttfg.backends", case.backend),
                                      (models, "ttfg.models", case.model.split(":")[0])):
            try:
                entry = registry.entry(name)
            except (KeyError, UsageError):
                continue
            if not entry.builtin:
                out[group].add(name)
    return {group: sorted(names) for group, names in out.items() if names}


def cases_in(envs: "dict[str, Environment]", cases: list, skipped: list) -> tuple[list, list]:
    """Every case once per environment (``Case.env``), and a skip for each case whose framework an
    environment lacks (asked of its interpreter, nothing imported here)."""
    from ..provision.sources import whence
    from ..provision.target import ProbeTarget

    out, skips = [], list(skipped)
    for name, env in envs.items():
        modules = sorted({m for c in cases for m in _backend_modules(c.backend)})
        found = whence(env.python, ProbeTarget.of(env).asking_environ(), modules, {}).modules \
            if modules else {}
        for case in cases:
            missing = [m for m in _backend_modules(case.backend) if not found.get(m)]
            if missing:
                # The skip keeps the case's id in that environment (``model/backend/variant/env``): a shard's
                # list of cases and a merge find it under the same id as a measured one.
                skips.append(Skipped(case.model, case.backend, f"{case.plain_id.split('/')[2]}/{name}",
                                     f"{', '.join(missing)} is not installed in environment {name}"))
            else:
                out.append(case.in_env(name))
    return out, skips


def _backend_modules(backend: str) -> tuple[str, ...]:
    try:
        return tuple(engines.get(backend).modules)
    except Exception:  # a plugin that cannot load: its probes say why
        return ()
