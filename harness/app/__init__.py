"""Use cases: one function per command that wires the stages below into one job.

Why a layer of its own: a command such as ``ttfg gate`` builds two sides, runs the tiers,
checks expectations, records the noise floor and writes ``gate.json`` and ``summary.md``.
That is orchestration, not argument parsing and not presentation. Held in ``cli/`` it
was untestable without a subprocess and every change to the gate touched the one file
every session edits. Here it is a plain function (``ttfg.app.gate.run(request, events)``)
that takes a request object, reports progress through an events object and returns a
report; ``cli/`` turns options into the request and prints the report.

Imports point down: ``cli -> app -> present -> decide / history -> measure -> ...``.
"""
