"""A revision's install names its top-level packages from the distribution's record, not a folder scan (issue 40
item 1: the namespace-package layout).

Before, only folders holding an ``__init__.py`` counted: a namespace package (``labco/lablib/``, ``labco``
without one) was no package of the project, so a side's import check did not know where the project came from.
"""

from __future__ import annotations

from importlib.metadata import PathDistribution

from ttfg.provision.sources import _installed_names, top_level_names


def _install(root, record: list[str]):
    info = root / "lablib-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: lablib\nVersion: 0.1.0\n")
    for path in record:
        if not path.startswith(("..", "lablib-0.1.0.dist-info")):
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text("")
    (info / "RECORD").write_text("".join(f"{p},,\n" for p in [*record, "lablib-0.1.0.dist-info/RECORD"]))
    return info


def test_a_namespace_package_a_module_and_an_extension_are_named_and_nothing_else(tmp_path):
    record = ["labco/lablib/__init__.py", "labco/lablib/ops.py", "lab_single.py", "_labfast.cpython-311-x86_64.so",
              "lablib-0.1.0.dist-info/METADATA", "bin/labtool", "../../share/lab.txt", "__pycache__/x.pyc"]
    _install(tmp_path, record)
    assert _installed_names(tmp_path) == ("lablib", ("_labfast", "lab_single", "labco"))


def test_a_folder_the_distribution_did_not_install_is_not_its_package(tmp_path):
    info = _install(tmp_path, ["lablib/__init__.py"])
    (tmp_path / "stray").mkdir()
    (tmp_path / "stray" / "__init__.py").write_text("")  # left by someone else, not in the record
    assert top_level_names(PathDistribution(info), tmp_path) == ("lablib",)
