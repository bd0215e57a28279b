"""The persistent compile caches of the frameworks ttfg's backends run on, declared once for every backend on them.

A backend lists the ones its processes read in ``Backend.persistent_caches``: both jax backends,
and a plugin on jax (``examples/flaxlab``, the starter ``ttfg init`` writes for a jax, Flax or
Equinox library), name :data:`JAX`; torch.compile with Inductor names :data:`INDUCTOR`. What
each variable does, and why a warm start sets it, is said beside it. Nothing here imports a
framework: the parent reads these to build a probe's environment.
"""

from __future__ import annotations

from dataclasses import dataclass

from .declared import PersistentCache


@dataclass(frozen=True)
class JaxCompilationCache(PersistentCache):
    """JAX's cache: whether the installed jax can name the function whose key changed is read from its source."""

    def miss_reasons(self) -> str:
        version = _jax_explains_misses()
        if version:
            return (f"to name the function, run the head's case with JAX_EXPLAIN_CACHE_MISSES=1: jax {version}'s "
                    "jax_explain_cache_misses logs 'PERSISTENT COMPILATION CACHE MISS for <function>' with its key")
        return "the installed jax cannot name the function (its jax_explain_cache_misses does not log persistent misses)"


def _jax_explains_misses() -> str | None:
    """The installed jax's version when its ``jax_explain_cache_misses`` also names persistent-cache misses (read
    from its source files, without importing jax), else None."""
    from importlib import metadata
    from pathlib import Path

    try:
        dist = metadata.distribution("jax")
        text = Path(str(dist.locate_file("jax/_src/compiler.py"))).read_text()
    except (metadata.PackageNotFoundError, OSError, ValueError):
        return None
    return dist.version if "PERSISTENT COMPILATION CACHE MISS" in text else None


#: JAX's persistent compilation cache: off when cold; when warm on in ``{dir}/jax``, and every compile looked up
#: (no minimum compile time or entry size, so a small function's key is checked too). JAX's backend compile event
#: spans the whole compile-or-read (jax 0.10.2: ``pxla`` times ``compile_or_get_cached``), so its count is every
#: lookup and the misses are that count less the hits.
JAX = JaxCompilationCache(
    "the JAX persistent compilation cache",
    warm={"JAX_ENABLE_COMPILATION_CACHE": "true", "JAX_COMPILATION_CACHE_DIR": "{dir}/jax",
          "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0", "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0"},
    cold={"JAX_ENABLE_COMPILATION_CACHE": "false"},
    misses="backend_compiles", hits="persistent_cache_hits", lookups=True)

#: Inductor's FX graph and AOTAutograd caches, and Triton's, in the sample's folder (fresh and empty when cold);
#: when warm the FX graph and AOTAutograd caches are on. Inductor counts its misses itself.
INDUCTOR = PersistentCache(
    "Inductor's FX graph and AOTAutograd caches",
    environ={"TORCHINDUCTOR_CACHE_DIR": "{dir}/inductor", "TRITON_CACHE_DIR": "{dir}/triton"},
    warm={"TORCHINDUCTOR_FX_GRAPH_CACHE": "1", "TORCHINDUCTOR_AUTOGRAD_CACHE": "1"},
    misses="fxgraph_cache_misses", hits="fxgraph_cache_hits",
    explain=("Inductor's cache-miss reasons are not available here (the probe does not collect them; "
             "TORCH_LOGS=+torch._inductor.codecache logs each FX graph's cache key details)"))

__all__ = ["INDUCTOR", "JAX", "JaxCompilationCache"]
