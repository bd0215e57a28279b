"""The asv benchmark functions themselves, for any project's suites file to import.

A suites file (``suites/ttfg.py`` here, the one ``ttfg init`` writes in a user's
repository) is a single ``from ttfg.history.asv_tracks import *``: asv discovers the
functions in that module's namespace and names them after it (``ttfg.track_...``), so a
project never copies them, and a new metric reaches it with the next ttfg.

asv keys a benchmark's history by a hash of its source text (the ``track_*`` function and
``setup_cache``), wherever the file lies: the functions below are byte for byte the ones
``suites/ttfg.py`` held, so the histories recorded before they moved here keep their keys.
Every function is a one-line call into ``ttfg.history.asv_suite``; change behaviour there,
never here. ``setup_cache`` runs the cold processes once per environment; each ``track_*``
reads one metric from it. A combination that was not measured returns NaN (asv: n/a).
"""

from . import asv_suite as asv_bench


def setup_cache():
    return asv_bench.measure()


def track_first_grad_seconds(cache, model, backend, variant):
    return asv_bench.value(cache, "first_grad_s", model, backend, variant)


def track_first_grad_cpu_seconds(cache, model, backend, variant):
    return asv_bench.value(cache, "first_grad_cpu_s", model, backend, variant)


def track_process_ttfg_seconds(cache, model, backend, variant):
    return asv_bench.value(cache, "process_ttfg_s", model, backend, variant)


def track_compile_seconds(cache, model, backend, variant):
    return asv_bench.value(cache, "first_grad_compile_s", model, backend, variant)


def track_import_seconds(cache, model, backend, variant):
    return asv_bench.value(cache, "import_s", model, backend, variant)


def track_second_grad_seconds(cache, model, backend, variant):
    return asv_bench.value(cache, "second_grad_s", model, backend, variant)


def track_peak_rss_bytes(cache, model, backend, variant):
    return asv_bench.value(cache, "peak_rss_bytes", model, backend, variant)


def track_alloc_count(cache, model, backend, variant):
    return asv_bench.value(cache, "alloc_count", model, backend, variant)


def track_alloc_bytes(cache, model, backend, variant):
    return asv_bench.value(cache, "alloc_bytes", model, backend, variant)


def track_jaxpr_eqns(cache, model, backend, variant):
    return asv_bench.value(cache, "counters.jaxpr_eqns", model, backend, variant)


def track_hlo_ops(cache, model, backend, variant):
    return asv_bench.value(cache, "counters.hlo_ops", model, backend, variant)


def track_backend_compiles(cache, model, backend, variant):
    return asv_bench.value(cache, "counters.backend_compiles", model, backend, variant)


def track_graphs(cache, model, backend, variant):
    return asv_bench.value(cache, "counters.graphs", model, backend, variant)


def track_graph_breaks(cache, model, backend, variant):
    return asv_bench.value(cache, "counters.graph_breaks", model, backend, variant)


def track_recompiles(cache, model, backend, variant):
    return asv_bench.value(cache, "counters.recompiles", model, backend, variant)


def track_fx_nodes(cache, model, backend, variant):
    return asv_bench.value(cache, "counters.fx_nodes", model, backend, variant)


def track_autograd_nodes(cache, model, backend, variant):
    return asv_bench.value(cache, "counters.autograd_nodes", model, backend, variant)


def track_autograd_primitives(cache, model, backend, variant):
    return asv_bench.value(cache, "counters.autograd_primitives", model, backend, variant)


# Attributes are not part of asv's code hash; each unit comes from the metric registry.
setup_cache.timeout = asv_bench.setup_timeout_s()
for _name, _track in list(globals().items()):
    if _name.startswith("track_"):
        _track.unit = asv_bench.unit(_name)
        _track.params = asv_bench.params()
        _track.param_names = asv_bench.PARAM_NAMES
del _name, _track


__all__ = ["setup_cache", *sorted(name for name in globals() if name.startswith("track_"))]
