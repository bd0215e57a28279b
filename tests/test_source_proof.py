"""The source tier (issue 39 item 3): a pull request that changed comments and layout only is settled by one process
a side, proven from git (harness/decide/source_proof.py, harness/decide/tier_source.py).

A silent wrong answer is the worst outcome, so most of these are the changes that must NOT be proven: every one
the syntax tree keeps (a docstring, a string, a number, an import), every file that is not Python, a file added,
deleted or renamed, a syntax error, another environment; and a proof that still needs its measured pair.
"""

from __future__ import annotations

import json

import pytest

from ttfg.decide import source_proof, tiers
from ttfg.decide.gate_loop import run_gate
from ttfg.decide.gate_settings import GateSettings
from ttfg.decide.source_proof import SourceProof
from ttfg.measure import instructions as counting
from ttfg.measure.cases import select
from ttfg.provision.source_diff import Change
from tests.conftest import GitRepo
from tests.test_gate_policy import sides  # noqa: F401  (the fixture: base and head folders)
from tests.test_gate_tiers import MODEL, FakeSampler, Side_, kinds

CODE = '''"""The lab's operations."""

import math


def scale(x, factor=2.0):
    """Scale ``x``."""
    return [v * factor + math.pi for v in x]
'''


def prove_texts(base: str, head: str, path: str = "src/lab/ops.py", status: str = "M",
                modes: tuple[str, str] = ("100644", "100644"), same_environment: bool = True) -> SourceProof:
    texts = {"base": base.encode() if isinstance(base, str) else base,
             "head": head.encode() if isinstance(head, str) else head}
    return source_proof.prove([Change(path, status, *modes)], lambda role, p: texts[role], same_environment)


@pytest.mark.parametrize("head", [
    CODE + "# a comment at the end\n",
    CODE.replace("import math\n", "import math  # pi below\n"),
    CODE.replace("\n\ndef scale", "\n\n\n\n# spaced out\ndef scale"),
    CODE.replace("[v * factor + math.pi for v in x]", "[v*factor+math.pi\n            for v in x]"),
    CODE.replace("def scale(x, factor=2.0):", "def scale(x,  factor = 2.0):  # type: ignore"),
], ids=["comment at the end", "trailing comment", "blank lines", "line break in brackets", "spacing"])
def test_comments_and_layout_are_proven_the_same_program(head):
    proof = prove_texts(CODE, head)
    assert proof.proven, proof.why
    assert proof.files == ("src/lab/ops.py",) and "comments and layout only" in proof.why


@pytest.mark.parametrize("head, said", [
    (CODE.replace('"""Scale ``x``."""', '"""Scale ``x`` up."""'), "syntax tree differs"),  # __doc__ at run time
    (CODE.replace("factor=2.0", "factor=2.5"), "syntax tree differs"),
    (CODE.replace("math.pi", "math.e"), "syntax tree differs"),
    (CODE.replace("import math\n", "import math\nimport os\n"), "syntax tree differs"),
    (CODE.replace("    return", "    x = list(x)\n    return"), "syntax tree differs"),
    (CODE.replace("for v in x]", "for v in x"), "does not parse"),
    (b"x = 1\0\n", "does not parse"),
], ids=["docstring", "number", "name", "import", "statement", "syntax error", "NUL byte"])
def test_any_change_the_syntax_tree_keeps_is_not_proven(head, said):
    proof = prove_texts(CODE, head)
    assert not proof.proven and said in proof.why and "src/lab/ops.py" in proof.why


TYPED = 'def scale(x, factor):\n    # type: (Tensor, float) -> Tensor\n    return x * factor\n'


@pytest.mark.parametrize("head, said", [
    (TYPED.replace("(Tensor, float)", "(Tensor, int)"), "type comments changed"),  # another TorchScript signature
    (TYPED.replace("    # type: (Tensor, float) -> Tensor\n", ""), "type comments changed"),
    (TYPED.replace("x * factor\n", "x * factor  # type: ignore[operator]\n"), None),  # a checker's, not code
    (TYPED.replace("(Tensor, float)", "(Tensor,  float)").replace("    return", "    # why\n    return"),
     "type comments changed"),
    (TYPED + "S = '# type: int'  \n", "syntax tree differs"),  # a string, not a comment
    (TYPED + "\n# a comment\n", None),
], ids=["signature", "removed", "type ignore", "respaced", "in a string", "other comment"])
def test_type_comments_are_code_to_torchscript(head, said):
    """``ast`` drops type comments, TorchScript reads them from the source: changing one is a change of code."""
    proof = prove_texts(TYPED, head)
    assert proof.proven is (said is None), proof.why
    assert said is None or said in proof.why


@pytest.mark.parametrize("kwargs, said", [
    ({"path": "README.md"}, "README.md changed and is not a Python file"),
    ({"path": "pyproject.toml"}, "not a Python file"),
    ({"path": "src/lab/_ops.c"}, "not a Python file"),
    ({"status": "A"}, "src/lab/ops.py is added"),
    ({"status": "D"}, "src/lab/ops.py is deleted"),
    ({"status": "T"}, "changed type"),
    ({"modes": ("160000", "160000"), "path": "vendor/lib.py"}, "not a plain file"),  # a submodule named like a module
    ({"same_environment": False}, "different environments"),
])
def test_what_is_not_a_python_file_of_both_sides_is_not_proven(kwargs, said):
    proof = prove_texts(CODE, CODE + "# x\n", **kwargs)
    assert not proof.proven and said in proof.why


def test_one_code_change_among_comment_changes_is_found_and_nothing_is_read_past_a_non_python_file():
    read: list[tuple[str, str]] = []
    texts = {"a.py": (CODE, CODE + "# x\n"), "b.py": (CODE, CODE.replace("2.0", "3.0"))}

    def reader(role, path):
        read.append((role, path))
        return texts[path][role == "head"].encode()

    proof = source_proof.prove([Change("a.py", "M", "100644", "100644"), Change("b.py", "M", "100644", "100644")],
                               reader)
    assert not proof.proven and "b.py's code changed" in proof.why
    read.clear()
    proof = source_proof.prove([Change("a.py", "M", "100644", "100644"), Change("notes.txt", "M", "100644", "100644")],
                               reader)
    assert not proof.proven and "notes.txt" in proof.why and read == []  # refused before reading any file
    assert not source_proof.prove([], reader).proven
    many = [Change(f"m{i}.py", "M", "100644", "100644") for i in range(source_proof.MAX_FILES + 1)]
    assert "files changed" in source_proof.prove(many, reader).why


def test_between_reads_the_two_commits_from_git(tmp_path):
    """Renames off (a renamed module is one deleted and one added), the whole repository, an encoding cookie honoured,
    a mode change alone proven, and a commit git does not have said, not raised."""
    repo = GitRepo.init(tmp_path / "repo")
    latin = "# -*- coding: latin-1 -*-\nNAME = 'caf\xe9'\n"
    (repo.path / "src").mkdir()
    (repo.path / "src" / "enc.py").write_bytes(latin.encode("latin-1"))
    base = repo.commit("base", {"src/ops.py": CODE, "docs/index.md": "# Lab\n"})
    (repo.path / "src" / "enc.py").write_bytes((latin + "# caf\xe9 au lait\n").encode("latin-1"))
    comment = repo.commit("comments", {"src/ops.py": CODE + "# a comment\n"})
    proof = source_proof.between(repo.path, base, comment, same_environment=True)
    assert proof.proven and proof.files == ("src/enc.py", "src/ops.py"), proof.why
    repo.git("mv", "src/ops.py", "src/ops2.py")
    renamed = repo.commit("renamed")
    why = source_proof.between(repo.path, comment, renamed, True).why
    assert "is deleted" in why or "is added" in why
    docs = repo.commit("docs", {"docs/index.md": "# Lab, documented\n"})
    assert "docs/index.md changed and is not a Python file" in source_proof.between(repo.path, renamed, docs, True).why
    repo.git("update-index", "--chmod=+x", "src/ops2.py")
    mode = repo.commit("executable", stage="files")
    assert source_proof.between(repo.path, docs, mode, True).proven
    broken = source_proof.between(repo.path, base, "0" * 40, True)
    assert not broken.proven and "git could not compare the sides" in broken.why


@pytest.fixture
def gate_proven(sides, tmp_path, monkeypatch):  # noqa: F811
    """The gate loop with scripted sides and a proof handed in, as ``app/gate.py`` hands it."""

    def run(proof: SourceProof | None, base=None, head=None, **settings):
        fake = FakeSampler(sides, {"base": base or Side_(), "head": head or Side_()})
        monkeypatch.setattr(counting, "availability", lambda: (True, "callgrind"))
        notes: list[str] = []
        cases, skipped = select([MODEL], ["autograd"], None, check_availability=False)
        settings.setdefault("tiers", tiers.DEFAULT_TIERS)
        settings.setdefault("profiles", 0)
        outcome = run_gate(cases, skipped, sides["base"], sides["head"], GateSettings(**settings), tmp_path / "out",
                           on_note=notes.append, sampler=fake, clock=fake.monotonic, source=proof)
        return outcome, fake, notes

    return run


PROVEN = SourceProof(True, "the changed files differ in comments and layout only (equal syntax trees: "
                           "src/lab/ops.py), in one environment", ("src/lab/ops.py",))


def test_a_proven_change_is_settled_by_one_pair_with_no_count_no_screen_and_no_allocations(gate_proven):
    outcome, fake, notes = gate_proven(PROVEN, allocations=True)
    (case,) = outcome.cases
    assert outcome.exit_code() == 0 and case.tier == "source" and case.verdict.verdict == "unchanged"
    assert kinds(fake) == {"timing": 2}  # the structural tier's pair, nothing else: no callgrind, memray or screen
    assert [t.tier for t in case.trail] == ["structural", "source"] and case.trail[1].settled
    assert "the head runs the base's program" in case.verdict.reason and "1 structural counters equal" in \
        case.verdict.reason
    assert case.cost["structural"]["processes"] == 2 and set(case.cost) == {"structural"}
    assert any("allocations" in n and "not counted" in n and "source tier" in n for n in notes)
    doc = outcome.to_json()
    assert doc["source"] == PROVEN.to_json() and doc["cases"][0]["tier"] == "source"
    from ttfg.present.gate_views import gate_footer

    assert "Gate that ran: structural → source;" in gate_footer(outcome)
    assert "the head runs the base's program (the source tier), so nothing was counted or timed" in gate_footer(outcome)
    assert json.loads(json.dumps(doc))["source"]["proven"] is True
    from ttfg.present.gate_views import gate_markdown

    text = gate_markdown(outcome)
    assert "| unchanged | source: the same code |" in text and "context, not decided on" not in text
    assert "Every case was settled by the source tier: every changed file is Python with the base's syntax tree" in text


def test_a_proof_without_a_first_gradient_on_both_sides_settles_nothing(gate_proven, monkeypatch):
    """A head that cannot run is never "unchanged" on the proof: the tiers after it measure, and the failure decides."""
    from tests.test_gate_tiers import count

    real = FakeSampler.__call__

    def head_fails(self, case, kind, cache, index, run):
        sample = real(self, case, kind, cache, index, run)
        return count(kind, index, "Traceback: ImportError") if self.role[str(run.target.source)] == "head" else sample

    monkeypatch.setattr(FakeSampler, "__call__", head_fails)
    outcome, fake, _ = gate_proven(PROVEN, max_pairs=6)
    (case,) = outcome.cases
    assert case.tier != "source" and case.verdict.verdict != "unchanged"
    step = next(t for t in case.trail if t.tier == "source")
    assert not step.settled and "the head side's first process gave no first gradient" in step.reason


def test_counters_that_moved_under_a_proof_leave_the_case_to_the_counts(gate_proven):
    """The same program with other counters means the counters are not what the proof assumed: no settling on it."""
    outcome, fake, _ = gate_proven(PROVEN, head=Side_(counters={"autograd_nodes": 101}))
    (case,) = outcome.cases
    assert case.tier != "source" and kinds(fake).get("instructions") == 2
    assert not any(t.tier == "source" and t.settled for t in case.trail)
    step = next(t for t in case.trail if t.tier == "source")
    assert "structural evidence moved" in step.reason


def test_no_proof_measures_as_before_and_says_why_in_gate_json(gate_proven):
    not_proven = SourceProof(False, "README.md changed and is not a Python file")
    outcome, fake, _ = gate_proven(not_proven)
    (case,) = outcome.cases
    assert case.tier == "instructions" and [t.tier for t in case.trail] == ["structural", "instructions", "time"]
    assert outcome.to_json()["source"] == {"proven": False, "why": "README.md changed and is not a Python file",
                                           "files": []}
    unasked, _, _ = gate_proven(None)
    assert "source" not in unasked.to_json() and unasked.cases[0].tier == "instructions"


def test_the_source_tier_without_the_structural_tier_takes_its_own_pair(gate_proven):
    outcome, fake, _ = gate_proven(PROVEN, tiers=("source", "time"))
    (case,) = outcome.cases
    assert case.tier == "source" and kinds(fake) == {"timing": 2} and [t.tier for t in case.trail] == ["source"]


@pytest.mark.parametrize("text", ["source", " Source ", "source,source"])
def test_the_source_tier_alone_is_refused_it_measures_nothing_that_changed(text):
    from ttfg.errors import UsageError

    with pytest.raises(UsageError, match="only settles a pull request that changed no code; name a tier that "
                                         "measures the others beside it \\(structural, instructions, time\\)"):
        tiers.parse_tiers(text)
    assert tiers.parse_tiers("source,time") == ("source", "time")
