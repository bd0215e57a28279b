"""A results file that grows one sample at a time and is on disk after each.

Why: a run or a gate takes minutes to hours; Ctrl-C, a crash or a full disk must leave
every finished sample readable. Each append rewrites the whole file atomically
(``io.save``), which at a few hundred samples costs milliseconds.
"""

from __future__ import annotations

from pathlib import Path

from .model import Results, Sample

__all__ = ["ResultsWriter"]


class ResultsWriter:
    """Appends samples to ``results`` and saves it to ``out`` (when given) after each."""

    def __init__(self, results: Results, out: str | Path | None):
        self.results = results
        self.out = Path(out) if out is not None else None

    def save(self) -> None:
        if self.out is not None:
            self.results.save(self.out)

    def append(self, case_id: str, sample: Sample) -> None:
        case = self.results.case(case_id)
        if case is None:
            raise KeyError(f"no case {case_id!r} in these results")
        case.samples.append(sample)
        self.save()

    def finish(self, complete: bool = True) -> Results:
        """Mark the file complete (or not, after an interruption) and save it a last time."""
        self.results.complete = complete
        self.save()
        return self.results
