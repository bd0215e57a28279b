"""Regressions of known kind and size, injected into a copy of the sources for ``gate_power.py``.

Why: the gate's power (does it flag a real 2 %, 5 %, 10 % regression, how fast, which
tier decides, does the attribution find it) can only be measured on regressions whose
size and place are known. Each kind here edits one source file of a throwaway clone by
an exact anchor (a patch that no longer applies raises :class:`PatchError` naming the
file and anchor, and ``tests/test_gate_power.py`` checks every patch against the
current sources), and puts its work in a function with a name attribution can find:

* ``python``: pure-Python work during tracing, ``_injected_python_work`` in
  ``harness/engines/interpret.py``, called once per ``Repeat`` node from ``forward()``
  (so during jax.jit's trace phase; in an eager backend, in the first gradient). It
  changes no structural counter.
* ``extra-op``: ``x = x + 0.0`` after every repeated block (``_injected_extra_op``,
  unrolled chains only), ``ops`` times per block: one more equation, HLO op or tape
  primitive per block and op, so the structural counters change while the gradient
  does not.
* ``compile``: C-level work (zlib at level 9 on fixed pseudo-random bytes) right after
  ``lowered.compile()`` in ``harness/engines/jax_jit.py`` (``_injected_compile_work``),
  so it lands in jax.jit's compile phase, as a slower XLA compile would. jax.jit only.

The amount of work is an iteration count (never a duration): a regression must cost
the same instructions under callgrind as outside it. :func:`seconds_per_iteration`
times the same function source in a fresh interpreter, so the caller can size the
count to a fraction of a measured phase.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

INTERPRET = "harness/engines/interpret.py"
JAX_JIT = "harness/engines/jax_jit.py"


class PatchError(RuntimeError):
    """An injection's anchor is not in the source (exactly once): the source moved on."""


#: The work functions, as source text: the same text is patched in and timed.
PYTHON_WORK = '''\
def _injected_python_work(n: int = {amount}) -> int:
    """Injected by benchmarks/gate_power.py: pure-Python work while the model is traced."""
    total = 0
    for i in range(n):
        total = (total * 31 + i) % 1_000_003
    return total
'''

EXTRA_OP = '''\
def _injected_extra_op(x):
    """Injected by benchmarks/gate_power.py: one more operation per repeated block."""
    return x + 0.0
'''

COMPILE_WORK = '''\
def _injected_compile_work(n: int = {amount}) -> int:
    """Injected by benchmarks/gate_power.py: C-level work in jax.jit's compile phase."""
    import random
    import zlib

    payload = random.Random(0).randbytes(4096)
    size = 0
    for _ in range(n):
        size += len(zlib.compress(payload, 9))
    return size
'''


@dataclass(frozen=True)
class Kind:
    """One kind of injected regression."""

    name: str
    #: The function that grows; attribution is checked for this name.
    function: str
    #: The file it edits, relative to the repository root.
    file: str
    #: What ``amount`` counts.
    unit: str
    #: Backends it applies to (None: every backend).
    backends: tuple[str, ...] | None
    description: str

    def applies_to(self, backend: str) -> bool:
        return self.backends is None or backend in self.backends

    def phase(self, backend: str) -> str:
        """The first-gradient phase its time lands in for ``backend``."""
        if self.name == "compile":
            return "compile"
        return "trace" if backend in ("jax.jit", "torch.compile", "torch.compile.aot_eager") else "execute"


KINDS = {
    "python": Kind("python", "_injected_python_work", INTERPRET, "loop iterations", None,
                   "pure-Python work during tracing (interpret.forward, per Repeat node)"),
    "extra-op": Kind("extra-op", "_injected_extra_op", INTERPRET, "ops per block", None,
                     "x + 0.0 after every repeated block (structural counters change)"),
    "compile": Kind("compile", "_injected_compile_work", JAX_JIT, "zlib calls", ("jax.jit",),
                    "C-level work after lowered.compile() (jax.jit compile phase)"),
}


def _replace_once(text: str, anchor: str, new: str, path: str) -> str:
    count = text.count(anchor)
    if count != 1:
        raise PatchError(f"{path}: expected the anchor {anchor.strip()!r} exactly once, found it {count} times; "
                         "the source changed, update benchmarks/gate_injections.py")
    return text.replace(anchor, new)


def _indent_of(anchor: str) -> str:
    line = anchor.splitlines()[0]
    return line[: len(line) - len(line.lstrip())]


def _patch_python(text: str, amount: int, path: str) -> str:
    anchor = "def forward(layer: Layer,"
    text = _replace_once(text, anchor, PYTHON_WORK.format(amount=amount) + "\n\n" + anchor, path)
    call = "    if kind is Repeat:\n        return ops.repeat(layer, params, x, prefix)\n"
    return _replace_once(text, call, "    if kind is Repeat:\n        _injected_python_work()\n"
                                     "        return ops.repeat(layer, params, x, prefix)\n", path)


def _patch_extra_op(text: str, amount: int, path: str) -> str:
    anchor = "def forward(layer: Layer,"
    text = _replace_once(text, anchor, EXTRA_OP + "\n\n" + anchor, path)
    step = "            x = forward(layer.block, params, x, ops, join(prefix, str(i)))\n"
    pad = _indent_of(step)
    return _replace_once(text, step, step + f"{pad}for _ in range({amount}):\n{pad}    x = _injected_extra_op(x)\n",
                         path)


def _patch_compile(text: str, amount: int, path: str) -> str:
    anchor = "class JaxJitEngine(Engine):"
    text = _replace_once(text, anchor, COMPILE_WORK.format(amount=amount) + "\n\n" + anchor, path)
    step = "        self.compiled = self.lowered.compile()\n"
    return _replace_once(text, step, step + f"{_indent_of(step)}_injected_compile_work()\n", path)


PATCHES = {"python": _patch_python, "extra-op": _patch_extra_op, "compile": _patch_compile}


def apply(root: str | Path, kind: str, amount: int) -> Path:
    """Inject ``kind`` with ``amount`` (iterations, or ops per block) into the sources under ``root``.

    Returns
    -------
    Path
        The file it changed.

    Raises
    ------
    PatchError
        When the source no longer has the anchor the patch needs.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; known: {', '.join(KINDS)}")
    if amount < 1:
        raise ValueError(f"{kind}: amount must be >= 1, got {amount}")
    path = Path(root) / KINDS[kind].file
    text = path.read_text(encoding="utf-8")
    path.write_text(PATCHES[kind](text, amount, KINDS[kind].file), encoding="utf-8")
    return path


def seconds_per_iteration(kind: str, iterations: int, repeat: int = 7, python: str = sys.executable,
                          clock: str = "perf_counter") -> float:
    """Seconds one iteration of ``kind``'s work takes in a fresh interpreter (the median of ``repeat`` runs).

    Only ``python`` and ``compile`` do timed work. The median, not the fastest run: the
    phase the work is sized against is a median of samples taken under the same load,
    so both are slowed alike and the ratio holds. ``clock``: ``perf_counter`` (wall time)
    or ``process_time`` (CPU time, for work sized against a CPU-time metric).
    """
    if clock not in ("perf_counter", "process_time"):
        raise ValueError(f"clock must be perf_counter or process_time, got {clock!r}")
    source = {"python": PYTHON_WORK, "compile": COMPILE_WORK}[kind].format(amount=iterations)
    name = KINDS[kind].function
    code = (f"{source}\nimport statistics, time\n{name}(1)\ntimes = []\n"
            f"for _ in range({repeat}):\n    t = time.{clock}(); {name}(); times.append(time.{clock}() - t)\n"
            "print(statistics.median(times))\n")
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True, timeout=600)
    return float(out.stdout.strip()) / iterations
