"""Every JSON file ttfg reads goes through one strict reader (``results/jsonfile.py``): NaN, Infinity and numbers
beyond a float are refused in results files, ``gate.json``, ``bisect.json``, ``counts.json`` and ``releases.json``
alike, each refusal naming the file and the field (exit 2 at the command line).

``bisect.json``, ``counts.json`` and ``releases.json`` used to be parsed by ``json.loads``, which takes ``NaN``
and ``Infinity`` as numbers: a hand-edited ``"ratio": NaN`` was drawn into a page as a number.
"""

from __future__ import annotations

import pytest

from ttfg.errors import TtfgError
from ttfg.results import bisect_counts_file, bisect_file, gate_file, record, sweep_file

#: Each file kind: its reader and its format name and version (the header a real file opens with).
READERS = {
    "gate.json": (gate_file.load, "ttfg-gate", 1),
    "bisect.json": (bisect_file.load_bisect, "ttfg-bisect", 1),
    "counts.json": (bisect_counts_file.load_counts, "ttfg-bisect-counts", 1),
    "releases.json": (sweep_file.load_sweep, "ttfg-releases", 1),
    "results.json": (record.load, "ttfg-results", 2),
}


@pytest.mark.parametrize("name", sorted(READERS))
@pytest.mark.parametrize("number, says", [("NaN", "NaN is not a JSON number"), ("-Infinity", "-Infinity is not"),
                                          ("1e400", "too large for a float")])
def test_a_number_json_does_not_have_is_refused_naming_the_file_and_the_field(tmp_path, name, number, says):
    read, format_, version = READERS[name]
    path = tmp_path / name
    path.write_text(f'{{"format": "{format_}", "version": {version}, "cases": [{{"verdict": {{"ratio": {number}}}}}]}}')
    with pytest.raises(TtfgError) as refused:
        read(path)
    assert str(refused.value).startswith(f"{path}: cases[0].verdict.ratio: not strict JSON: ")
    assert says in str(refused.value)


@pytest.mark.parametrize("name", sorted(READERS))
def test_a_file_cut_short_is_refused_naming_the_file(tmp_path, name):
    read, format_, version = READERS[name]
    path = tmp_path / name
    path.write_text(f'{{"format": "{format_}", "version": {version}, "cases": [')
    with pytest.raises(TtfgError, match=rf"^{path}: not valid JSON \(line 1"):
        read(path)
