"""What a run samples and where its probes run: :class:`RunSettings`, apart from the runner that spawns them.

Why a module of its own: the runner (``runner.py``) spawns what the schedule (``schedule.py``)
orders, and both read these settings; kept in the runner, the schedule needed the runner for
its one type, and the two modules imported each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from ..provision.target import ProbeTarget


@dataclass
class RunSettings:
    repeat: int = 5
    timeout_s: float = 600.0
    threads: int = 1
    caches: tuple[str, ...] = ("cold",)
    allocations: bool = False
    alloc_repeat: int = 1
    python_allocators: bool = False
    instructions: bool = False
    #: Sampled-stack processes (pyinstrument) per case, after the timings: the function-level attribution.
    profiles: int = 0
    #: Where the probes run (``target.py``): the interpreter and the import roots first on its path
    #: (a gate side's installed revision, ttfg's overlay in a built environment). What to sample is
    #: everything above; where is this one field, built by ``ProbeTarget.of`` alone.
    target: ProbeTarget = field(default_factory=ProbeTarget)

    def to_json(self) -> dict:
        """The settings as results files record them. The target is written as the three keys files have
        always held (``python``, ``source``: the project's import root, ``extra_env``: a built environment's
        whole ``PYTHONPATH``), so files before and after this field compare and merge alike."""
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "target"}
        data["caches"] = list(self.caches)
        data["python"] = self.target.python
        data["source"] = None if self.target.source is None else str(self.target.source)
        data["extra_env"] = ({"PYTHONPATH": self.target.pythonpath(None)} if self.target.isolated else {})
        return data


__all__ = ["RunSettings"]
