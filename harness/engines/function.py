"""A library's own function as a case: ``def case(): return fn, args``, measured as users call it.

Why: a backend built from ttfg's layer spec measures ttfg's interpreter (or a library made to
fit it), never the library's own ``loss_and_grad``. A function case is the library's call as it
stands: ``case()`` returns ``(fn, args)``, ``fn`` being whatever the library's users call (jitted
or not); the probe times importing its module (``import``), calling ``case()`` (``build``) and
the first ``fn(*args)`` with its result ready (``execute``: jax's asynchronous arrays are waited
for), cold, as for every other case; then, outside every phase, reads the framework's counters of
``fn`` (:func:`framework_counters`: jaxpr equations and HLO ops for jax, with the same counting
functions as the jax backends).

Functions are registered by name, from two places (the names are case ids' first part,
``NAME/function/default``; a case id's backend is always ``function``):

- the ``ttfg.functions`` entry-point group of an installed package (``name = "module:case"``);
- the ``[functions]`` table of the project's ``ttfg.toml`` (``[tool.ttfg.functions]``), declared
  here by the command line (:func:`declare`) and handed to probes in the ``TTFG_FUNCTIONS``
  variable (``provision/target.py``), since a probe runs in a scratch folder and reads no config.

A declared name wins over an entry point of the same name. Listing names imports nothing.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from ttfg.models import plugins
from ttfg.models.plugins import Entry, PluginError

from .base import Backend, Engine

NAME = "function"
GROUP = "ttfg.functions"
#: The probe's copy of the declared table (``{name: "module:callable"}``, JSON).
ENV = "TTFG_FUNCTIONS"
#: The group of a function declared in a config (``Entry.describe``: "'NAME' (config entry point of FILE:functions)").
CONFIG = "config"
#: A function case's variant label: it has no variant axes.
VARIANT = "default"

_REGISTRY = plugins.Registry(GROUP, {}, "function")
_declared: dict[str, Entry] = {}


def declare(table: dict[str, str], origin: str) -> None:
    """Register the ``[functions]`` table of a config (``origin`` names the file and key)."""
    for name, target in table.items():
        _declared[name] = Entry(name, target, origin, CONFIG)


def declared_table() -> dict[str, dict[str, str]]:
    """``{name: {"target", "from"}}`` of the declared functions, for a probe's ``TTFG_FUNCTIONS``."""
    return {name: {"target": e.target, "from": e.origin} for name, e in sorted(_declared.items())}


def _from_environment() -> dict[str, Entry]:
    text = os.environ.get(ENV)
    if not text:
        return {}
    try:
        table = json.loads(text)
    except ValueError:
        return {}
    if not isinstance(table, dict):
        return {}
    return {n: Entry(n, str(e.get("target")), str(e.get("from")), CONFIG) for n, e in table.items()
            if isinstance(e, dict)}


def _entries() -> dict[str, Entry]:
    found = {n: _REGISTRY.entry(n) for n in _REGISTRY.names()}  # scanned once per process
    return {**found, **_from_environment(), **_declared}


def refresh() -> None:
    """Read the installed entry points again (tests)."""
    _REGISTRY.refresh()


def names() -> list[str]:
    """Every registered function's name: declared ones first, then entry points."""
    return list(dict.fromkeys([*_declared, *_from_environment(), *sorted(_entries())]))


def entry(name: str) -> Entry:
    """Where function ``name`` comes from; ``KeyError`` naming the known ones."""
    found = _entries()
    if name not in found:
        raise KeyError(f"unknown function {name!r}; known functions: {', '.join(names()) or 'none'}")
    return found[name]


def is_function(name: str) -> bool:
    """Whether ``name`` is a registered function (reads metadata and the declared table, imports nothing)."""
    return name in _entries()


def load(name: str):
    """The ``case`` callable of function ``name``; importing its module is the import phase's work.

    Raises :class:`PluginError` naming the entry when it cannot be imported or is not callable.
    """
    found = entry(name)
    target = plugins.load(found)
    if not callable(target):
        raise PluginError(f"{found.describe()}: {found.target} is a {type(target).__name__}, not a callable "
                          "returning (fn, args)")
    return target


def build(name: str, case) -> "FunctionEngine":
    """Call ``case()`` (the build phase) and check that it returned ``(fn, args)`` or ``(fn, args, reference)``.

    ``reference``, optional, is the library's trusted call with ``fn``'s signature (for instance the same loss
    and gradient in float64, not jitted): ``ttfg check`` compares ``fn(*args)`` with ``reference(*args)``
    leaf by leaf. It is never called in a measured phase.
    """
    made = case()
    if not (isinstance(made, tuple) and len(made) in (2, 3) and callable(made[0])
            and isinstance(made[1], (tuple, list)) and (len(made) == 2 or callable(made[2]))):
        got = _what_was_returned(made)
        raise PluginError(f"{entry(name).describe()}: {entry(name).target}() must return (fn, args) or "
                          f"(fn, args, reference) with fn and reference callable and args a tuple, got {got}")
    return FunctionEngine(made[0], tuple(made[1]), made[2] if len(made) == 3 else None)


def _what_was_returned(made) -> str:
    """What ``case()`` returned instead, in words: the wrong part of a pair or triple, else the type."""
    if not isinstance(made, tuple):
        return f"a {type(made).__name__}"
    if len(made) not in (2, 3):
        return f"a {len(made)}-tuple"
    if not callable(made[0]):
        return f"a tuple whose fn is a {type(made[0]).__name__}"
    if not isinstance(made[1], (tuple, list)):
        return f"a tuple whose args is a {type(made[1]).__name__}"
    return f"a tuple whose reference is a {type(made[2]).__name__}"


def numeric_leaves(value) -> dict[str, Any]:
    """``{path: float64 array}`` of every numeric leaf of a result (jax pytrees, torch tensors, NumPy, nested
    dicts, lists and tuples), keyed by its path in the structure, so two results are compared leaf by leaf."""
    import numpy as np

    out: dict[str, Any] = {}

    def visit(path: str, leaf) -> None:
        if isinstance(leaf, dict):
            for k in leaf:
                visit(f"{path}[{k!r}]", leaf[k])
            return
        if isinstance(leaf, (tuple, list)):
            for i, v in enumerate(leaf):
                visit(f"{path}[{i}]", v)
            return
        detach = getattr(leaf, "detach", None)  # a torch tensor
        if callable(detach):
            leaf = detach().cpu().double().numpy()
        if isinstance(leaf, (bool, str, bytes)) or leaf is None:
            return
        try:
            array = np.asarray(leaf, np.float64)
        except (TypeError, ValueError):
            return
        out[path or "result"] = array

    if "jax" in sys.modules:
        import jax

        for keys, leaf in jax.tree_util.tree_flatten_with_path(value)[0]:
            visit(jax.tree_util.keystr(keys), leaf)
        return out
    visit("", value)
    return out


def _leaves(value) -> list:
    if "jax" in sys.modules:
        import jax

        return jax.tree_util.tree_leaves(value)
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, (tuple, list)):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


def ready(value):
    """``value`` with every asynchronous array in it computed (jax's dispatch returns before the work ends)."""
    for leaf in _leaves(value):
        wait = getattr(leaf, "block_until_ready", None)
        if callable(wait):
            wait()
    return value


def first_scalar(value) -> float | None:
    """The result's first one-element leaf as a float (the loss, for a loss-and-gradient call), else None."""
    for leaf in _leaves(value):
        try:
            numel = getattr(leaf, "numel", None)  # a torch tensor's size is a method: its numel() counts
            if (numel() if callable(numel) else getattr(leaf, "size", 1)) == 1 and not isinstance(leaf, (str, bytes)):
                item = getattr(leaf, "item", None)
                return float(item() if callable(item) else leaf)
        except (TypeError, ValueError):
            continue
    return None


def _uses_jax(value) -> bool:
    """Whether ``value`` (the arguments and the first result) holds a jax array: NumPy arguments to a jitted
    function still give jax arrays back."""
    if "jax" not in sys.modules:
        return False
    import jax

    return any(isinstance(leaf, jax.Array) for leaf in jax.tree_util.tree_leaves(value))


def _array_leaves(fn, args):
    """``(g, leaves)``: ``fn`` as a function of the array leaves of ``args`` alone, the rest held fixed.

    Why: a library's arguments are pytrees whose leaves are not all arrays (an Equinox module holds its
    activation function, a Flax NNX module its graph), which ``jax.make_jaxpr(fn)`` and ``jax.jit(fn)`` refuse
    ("not a valid JAX type"). Tracing ``g`` over the array leaves is what ``eqx.filter_jit`` does: the
    counts are the same call's, its arrays abstract and everything else static.
    """
    import jax
    import numpy as np

    flat, tree = jax.tree_util.tree_flatten(args)
    where = [i for i, leaf in enumerate(flat) if isinstance(leaf, (jax.Array, np.ndarray, np.generic))]

    def g(*leaves):
        full = list(flat)
        for i, leaf in zip(where, leaves):
            full[i] = leaf
        return fn(*jax.tree_util.tree_unflatten(tree, full))

    return g, [flat[i] for i in where]


def jax_counters(fn, args) -> dict[str, int]:
    """jaxpr equations (sub-jaxprs included) and StableHLO ops of ``fn(*args)``, traced again outside the phases.

    The counting functions are the jax backends' (``jax_common``), so a function case's counts and
    jax.jit's mean the same. A jitted ``fn`` is lowered by its own ``lower``; anything else through
    ``jax.jit(fn)``. Arguments jax cannot trace as they are (a module with non-array leaves: Equinox,
    Flax NNX) are traced over their array leaves (:func:`_array_leaves`), as the library's filtered jit does.
    """
    import jax

    from . import jax_common

    try:
        jaxpr = jax.make_jaxpr(fn)(*args)
    except TypeError:  # a leaf that is no jax type: trace the array leaves, the rest static
        g, leaves = _array_leaves(fn, args)
        jaxpr, lowered = jax.make_jaxpr(g)(*leaves), jax.jit(g).lower(*leaves)
    else:
        lower = getattr(fn, "lower", None)
        lowered = lower(*args) if callable(lower) else jax.jit(fn).lower(*args)
    return {"jaxpr_eqns": jax_common.jaxpr_equations(jaxpr), "hlo_ops": jax_common.hlo_ops(lowered.as_text())}


def _uses_torch(args) -> bool:
    if "torch" not in sys.modules:
        return False
    import torch

    return any(isinstance(leaf, torch.Tensor) for leaf in _leaves(args))


def torch_counters(result) -> dict[str, int]:
    """What torch shows of ``fn``'s first call: Dynamo's own counters when it compiled anything, else the
    autograd graph behind the result's first tensor that has one (an eager step).

    Dynamo's counters are the process's, read after the first call (``FunctionEngine.first_done``):
    ``graphs`` (its unique graphs), ``graph_breaks``, ``recompiles`` (guard failures) and
    ``captured_ops`` (the calls it captured into its FX graphs, ``counters["stats"]["calls_captured"]``:
    not ``fx_nodes``, which the torch.compile backend counts from its own graphs' nodes). A function
    that is not ``torch.compile``'d leaves them at zero and is counted as eager.
    """
    from collections import Counter

    utils = sys.modules.get("torch._dynamo.utils")
    stats = utils.counters.get("stats", {}) if utils is not None else {}
    if stats.get("unique_graphs"):
        return {"graphs": int(stats["unique_graphs"]),
                "graph_breaks": int(sum(utils.counters.get("graph_break", Counter()).values())),
                "recompiles": int(sum(len(v) for v in utils.guard_failures.values())),
                "captured_ops": int(stats.get("calls_captured", 0))}
    from . import torch_common

    for leaf in _leaves(result):
        if getattr(leaf, "grad_fn", None) is not None:
            return {"autograd_nodes": torch_common.autograd_nodes(leaf)}
    return {}


def framework_counters(fn, args, result=None) -> dict[str, int]:
    """The structural counters of the framework ``fn`` runs on; ``{}`` when none applies or they cannot be read.

    A function jax cannot trace again (side effects, a host callback it refuses) keeps its
    timings; it has no structural counters, so the gate's structural tier leaves it to the
    instruction and time tiers rather than deciding on a partial count.
    """
    if _uses_jax((args, result)):
        try:
            return jax_counters(fn, args)
        except Exception:  # noqa: BLE001 (the user's function, traced outside the measured call)
            return {}
    return {}


class FunctionEngine(Engine):
    """``fn(*args)``: its first call is the first gradient (one indivisible ``execute`` phase)."""

    def __init__(self, fn, args: tuple, reference=None):
        self.fn, self.args, self.reference = fn, args, reference
        self.first: dict[str, int] = {}
        self.result = None

    def gradient(self) -> Any:
        return ready(self.fn(*self.args))

    def first_done(self, result) -> None:
        """Called by the probe after the first call's clock: what must be read before a second call changes it
        (torch's process-wide Dynamo counters, the result's autograd graph)."""
        self.result = result
        if _uses_torch((self.args, result)):
            try:
                self.first = torch_counters(result)
            except Exception:  # noqa: BLE001 (a torch without these counters: none, rather than a wrong one)
                self.first = {}

    def to_numpy(self, result):
        return first_scalar(result), {}

    def counters(self) -> dict[str, Any]:
        return {**framework_counters(self.fn, self.args, self.result), **self.first}

    def source_lines(self) -> list[dict[str, Any]]:
        """The compiled code per source line of ``fn``, after its first call (the calls probe: outside every phase):
        jaxpr equations of a jax function, traced again; for a ``torch.compile``'d function, FX nodes and graph
        breaks (:func:`torch_source_lines`); none for anything else."""
        if _uses_torch((self.args, self.result)):
            return torch_source_lines(self.fn, self.args)
        if not _uses_jax((self.args, self.result)):
            return []
        import jax

        from .source_lines import jaxpr_lines

        return jaxpr_lines(jax.make_jaxpr(self.fn)(*self.args))


def torch_source_lines(fn, args: tuple) -> list[dict[str, Any]]:
    """FX nodes per line and graph breaks (line and reason) of a ``torch.compile``'d ``fn``, compiled once more.

    Why again: the library chose its backend (``aot_eager``, Inductor), which keeps no graph a reader can reach, and
    Dynamo's process-wide counters hold graph breaks without their line. So Dynamo's caches are reset and the
    function ``torch.compile`` wrapped is compiled again with the counting backend of ``engines/torch_compile.py``
    (Dynamo's capture, graphs and breaks, are the backend's input: the same whichever backend follows), and called
    on the same arguments. A function that is not ``torch.compile``'d has no compiled code: none."""
    orig = getattr(fn, "_torchdynamo_orig_callable", None)
    if orig is None:
        return []
    import torch

    from .source_lines import fx_lines
    from .torch_compile import CompileStats

    torch._dynamo.reset()
    stats = CompileStats()
    torch.compile(orig, backend=stats.compiler("eager"))(*args)
    return fx_lines(stats.modules)


class FunctionBackend(Backend):
    """The backend every function case names: it imports nothing itself (the function's module does)."""

    name = NAME
    framework = "python"
    modules = ()
    supports = {"params": ("args",), "chain": ("unrolled",)}
    description = "a library's own function: case() -> (fn, args), first call of fn(*args)"


__all__ = ["ENV", "GROUP", "NAME", "VARIANT", "FunctionBackend", "FunctionEngine", "build", "declare",
           "declared_table", "entry", "framework_counters", "is_function", "load", "names", "numeric_leaves",
           "ready", "torch_source_lines"]
