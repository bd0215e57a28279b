"""asv benchmark suites for ttfg; asv imports this package from ``benchmark_dir``.

Which code gets measured: in environments asv builds (``virtualenv``), asv installs each
commit's project, so ``import ttfg`` is that commit's. ``ttfg asv record`` (an existing
environment) installs each commit's project into a folder of its own and puts it first
on ``PYTHONPATH`` for asv and for every probe, so there too the results filed under a
commit measure that commit.
"""
