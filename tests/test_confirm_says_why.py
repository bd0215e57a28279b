"""``regressions --confirm`` says in the terminal why a step stayed unconfirmed (issue 40 item 2).

Why: a step into a commit that removed its case (or added it) is left unconfirmed "saying so", but the reason was
written only to ``confirmations.json``; the terminal said "1 step: 1 unconfirmed" and nothing else, so a user saw
no difference between a step that lacked budget and one that no longer exists. The real path is
``benchmarks/bad_inputs_layouts.py``'s ``confirm 40.2`` row (two revisions installed, the later one without the
model).
"""

from __future__ import annotations

import io
from types import SimpleNamespace

from rich.console import Console

from ttfg.history.confirm import Confirmation
from ttfg.history.trends import CONFIRMED, UNCONFIRMED


def test_each_unconfirmed_steps_reason_is_printed_escaped(tmp_path, monkeypatch):
    import ttfg.app.report as app_report
    from ttfg.cli import report as cli_report

    before, after = "a" * 40, "b" * 40
    gone = Confirmation("k1", "lablib_deep/autograd/params=args,chain=unrolled", "first_grad_s", before, after,
                        "regression", UNCONFIRMED, f"not re-measured: the later commit {after[:10]} no longer provides "
                        "lablib_deep/autograd/params=args,chain=unrolled")
    hostile = Confirmation("k2", "evil\x1b]0;owned\x07/autograd/v", "first_grad_s", before, after, "regression",
                           UNCONFIRMED, "no budget left \x1b[2J")
    fine = Confirmation("k3", "m/autograd/v", "first_grad_s", before, after, "regression", CONFIRMED, "slower: 2.0x")
    stored = tmp_path / "confirmations.json"
    monkeypatch.setattr(app_report, "repository", lambda path: tmp_path)
    monkeypatch.setattr(app_report, "confirm_steps", lambda *a, **kw: app_report.Confirmed(
        [gone, hostile, fine], {}, stored, []))
    args = SimpleNamespace(confirm_dir=str(tmp_path / "runs"), repo=str(tmp_path), reconfirm=False, max_steps=None)
    shown = io.StringIO()
    code = cli_report._confirm(args, None, stored, 60.0, Console(file=shown, width=400, color_system=None))
    text = shown.getvalue()
    assert code == 0
    assert "confirm: 3 steps: 1 confirmed, 2 unconfirmed" in text
    assert (f"confirm: lablib_deep/autograd/params=args,chain=unrolled (first_grad_s), {before[:10]} -> "
            f"{after[:10]}: unconfirmed, not re-measured: the later commit {after[:10]} no longer provides "
            "lablib_deep/autograd/params=args,chain=unrolled") in text
    assert "evil\\x1b]0;owned\\x07/autograd/v" in text and "no budget left \\x1b[2J" in text
    assert "\x1b" not in text and "\x07" not in text
    assert "slower: 2.0x" not in text  # a decided step's reason is the table's, not repeated here
