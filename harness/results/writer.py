"""A results file that grows one sample at a time and is on disk after each.

Why: a run or a gate takes minutes to hours; Ctrl-C, a crash or a full disk must leave
every finished sample readable. Each append rewrites the whole file atomically
(``io.save``), which at a few hundred samples costs milliseconds.

One results file has one writer: the writer holds :class:`~ttfg.files.OneWriter` on
its file from creation until :meth:`ResultsWriter.finish` or :meth:`ResultsWriter.close`,
and a second writer of the same file is refused (:class:`~ttfg.errors.UsageError`,
exit 2) before it measures anything.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import UsageError
from ..files import FileBusy, OneWriter
from .format import MAX_ERROR_CHARS, clip
from .io import save
from .model import Results, Sample

__all__ = ["ResultsWriter", "save_again"]


class ResultsWriter:
    """Appends samples to ``results`` and saves it to ``out`` (when given) after each."""

    def __init__(self, results: Results, out: str | Path | None):
        self.results = results
        self.out = Path(out) if out is not None else None
        self._lock = OneWriter(self.out) if self.out is not None else None
        if self._lock is not None:
            try:
                self._lock.acquire()
            except FileBusy as exc:
                raise UsageError(f"results file {exc}") from None

    def save(self) -> None:
        if self.out is not None:
            save(self.results, self.out)

    def append(self, case_id: str, sample: Sample) -> None:
        """Add ``sample`` (its error text clipped to ``MAX_ERROR_CHARS``: the measured code writes it) and save."""
        case = self.results.case(case_id)
        if case is None:
            raise KeyError(f"no case {case_id!r} in these results")
        if sample.error:
            sample.error = clip(sample.error, MAX_ERROR_CHARS)
        case.samples.append(sample)
        self.save()

    def finish(self, complete: bool = True) -> Results:
        """Mark the file complete (or not, after an interruption) and save it a last time."""
        self.results.complete = complete
        try:
            self.save()
        finally:
            self.close()
        return self.results

    def close(self) -> None:
        """Give up the file (idempotent); the samples saved so far stay on disk."""
        if self._lock is not None:
            self._lock.release()


def save_again(results: Results, out: str | Path | None) -> None:
    """Save a finished results file once more (a noise floor added afterwards), as its one writer again."""
    if out is None:
        return
    writer = ResultsWriter(results, out)
    try:
        writer.save()
    finally:
        writer.close()
