"""The ``gate`` subcommand: argument parsing and output only (``compare`` and ``expect`` are ``compare.py``).

The use case is ``app/gate.py``; this module turns options into a request and the report
into tables, Markdown, JSON and exit codes. Like the rest of the CLI, nothing here imports
an AD framework.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from rich.text import Text

from . import options
from .compare import print_expectations
from .help_text import exit_codes, fill, formatter
from .. import fmt, metrics


GATE_HELP = fill("""\
Measure a base and a head revision interleaved and paired, and decide per case.

Both revisions are checked out as temporary git worktrees (removed on exit and on
Ctrl-C), and each one's project is installed into a folder of its own (cached by
commit) that its probes import first; before the first pair each side reports where
it imports the measured code from, and a gate whose sides would import the same files
is refused (exit 2). Base and head processes alternate
(A B, B A, A B, ...) so the machine's drift cancels in each pair's log-ratio; a
sequential test (alpha-spending, overall false-alarm rate <= --alpha) looks after
every pair, stops a case once it is decided, and keeps sampling undecided cases,
round-robin, until --budget runs out or --max-pairs is reached. A case still
undecided when the budget ends gets one final look at the level the test reserved for
it, and is reported inconclusive if that does not decide either.

Every phase a cold start pays is guarded (--guard, default first_grad_s,
process_ttfg_s, import_s, build_s): each gets its own paired sequential test, at
--alpha divided among them (Bonferroni), so a 38x slower build fails the gate like a
slower first gradient; every verdict names the metric that decided it.

Tiers (--tiers, default structural,source,instructions,time): a case is settled by
the first tier that can: (a) structural counters of one timing pair, exactly (a counter
that grew is a regression); (source) when every changed file is Python whose syntax
tree is the base's (comments and layout only) and both sides share one environment,
the head runs the base's program: once that pair ran on both sides with equal
counters the case is unchanged, with no count or timing taken; (b) instructions of the build and of the first-gradient
window (callgrind) and allocation counts (memray), base and head at once, within
margins derived from their measured repeatability; (c) wall time as above, spending
the budget only on the cases (a) and (b) left. When (b) settles a case, the timings
no count covers (the import, the whole process) are still screened by (c) for gross
regressions: two pairs (the first is (a)'s), and only when a pair's head is more than
10 % slower than its base, one look at --min-pairs pairs. Without valgrind the instructions
tier says so once and wall time decides.

Verdicts say what they rest on: "unchanged (within ±5 %)" when two one-sided tests
put the ratio inside ±--min-effect; "inconclusive (could detect ≥ X %)" with the
smallest slowdown the run would have caught. A head that fails significantly more
often than its base regressed. Every regressed case is attributed (phase, counter and
function deltas; also on demand: ttfg explain OUT-DIR), and the summary ends with one
sentence on what passing means.

Defaults: --model resnet15 --backend jax.jit (the case where compile time dominates
and a first gradient takes about a second), head = HEAD (the committed revision; a
working tree with uncommitted changes to tracked files is refused unless
--allow-dirty), metric first_grad_s, budget 10m, results in runs/gate/ (base.json and
head.json in the normal results format, gate.json, summary.md). The Markdown summary is
appended to $GITHUB_STEP_SUMMARY when that is set.

Before it starts, the gate checks its budget against this machine's noise (the
last `ttfg doctor --calibrate`, else a stated default SD) and warns, naming the
budget that would do, when --min-effect is below what the budget can detect.
Afterwards the results files and the summary state the noise floor.
""")

def _progress_line(event) -> str:
    from .. import metrics
    from .. import fmt

    def side(sample):
        if not sample["ok"]:
            return f"FAILED ({(sample.get('error') or '')[:80]})"
        return fmt.metric_value(event.metric, metrics.sample_value(sample, event.metric))

    b, h = event.base, event.head
    pair_ratio = ""
    bv = metrics.sample_value(b, event.metric) if b["ok"] else None
    hv = metrics.sample_value(h, event.metric) if h["ok"] else None
    if bv and hv:
        pair_ratio = f" {fmt.factor(hv / bv)}"
    v = event.verdict
    interval = fmt.interval(v.ci_low, v.ci_high)
    return (f"[{event.elapsed_s:5.0f}s/{event.budget_s:.0f}s] {event.case} pair {event.pair}: base {side(b)} "
            f"head {side(h)}{pair_ratio} | {event.complete_pairs} pairs: ratio {fmt.factor(v.ratio)}"
            + (f" {interval}" if interval != fmt.MISSING else "") + f" {v.verdict}")


class _PrintedEvents:
    """The gate's events, printed as they come (``app.gate.GateEvents``): one line each, cut at the
    terminal's width, unless ``verbose`` (then whole, wrapped). The result repeats what matters."""

    def __init__(self, console, verbose: bool = False):
        self.console = console
        self.verbose = verbose

    def _line(self, text: str, style: str | None = None) -> None:
        from ..present.untrusted import plain

        text = plain(text)  # an install's error, a side's path, a subject: control characters escaped
        if not self.console.is_terminal:  # a log (CI, a pipe) keeps every word: wrapped, never cut with "…"
            from ..present.gate_views import wrapped

            for line in wrapped(text, self.console.width):
                self.console.print(line, style=style, highlight=False, markup=False, soft_wrap=True)
        elif self.verbose:
            self.console.print(text, style=style, highlight=False, markup=False)
        else:
            self.console.print(text, style=style, highlight=False, markup=False, no_wrap=True, overflow="ellipsis")

    def started(self, request, base, head) -> None:
        from ..present.gate_views import revision_label, wrapped
        from ..present.untrusted import plain

        s = request.settings
        text = plain(f"gate: base {revision_label(base)} \"{base.subject[:40]}\" vs head {revision_label(head)} "
                f"\"{head.subject[:40]}\"; {len(request.cases)} case(s), tiers {', '.join(s.tiers)}, time budget "
                f"{fmt.seconds(s.budget_s)}; results in {request.out_dir}")
        for line in wrapped(text, self.console.width):
            self.console.print(line, highlight=False, markup=False, soft_wrap=True)

    def warning(self, text: str) -> None:
        from ..present.gate_views import wrapped
        from ..present.untrusted import plain

        for line in wrapped(plain(text), self.console.width):  # a warning is read whole
            self.console.print(line, style="yellow", highlight=False, markup=False, soft_wrap=True)

    def note(self, text: str) -> None:
        self._line(text)

    def pair(self, event) -> None:
        self._line(_progress_line(event))


def decision_settings(args, **gate_only):
    """The gate's settings from the options every comparison takes (``ttfg gate``, each step of ``ttfg bisect``),
    plus ``gate_only``: what one command adds or fixes (the warm cache, allocations)."""
    from ..app import gate

    return gate.settings(metric=args.metric, min_effect=args.min_effect, alpha=args.alpha, min_pairs=args.min_pairs,
                         max_pairs=args.max_pairs, budget_s=args.budget.seconds,
                         max_failures=args.max_failures, profiles=args.profiles, timeout_s=args.timeout,
                         threads=args.threads, tiers=args.tiers, count_repeat=args.count_repeat, guard=args.guard,
                         **gate_only)


def cmd_gate(args) -> int:
    from .selection import runnable_selection
    from .config import project_dir
    from ..app import gate
    from ..errors import UsageError
    from ..present.terminal import console as make_console

    from .outputs import not_an_input, output_dir, output_file
    from .shards import shard_selection

    if args.base is None and not (args.base_env or args.head_env):
        raise UsageError("--base REV is required (or --base-env/--head-env for an upgrade gate of one revision)")
    as_data = args.format != "table"
    console = make_console(stderr=as_data)  # with --format json/markdown, stdout holds only the document
    if args.write_suggested and not args.expectations:
        raise UsageError("--write-suggested needs --expectations FILE")
    from ..app.report import commit_url

    url = commit_url(args.commit_url)  # checked before anything is made or measured
    output_dir(args.out_dir, "--out-dir", files=("base.json", "head.json", "gate.json", "summary.md"))
    output_file(args.write_suggested, "--write-suggested")
    not_an_input(args.write_suggested, "--write-suggested", [args.expectations])
    settings = decision_settings(args, allocations=args.allocations, alloc_repeat=args.alloc_repeat,
                                 cache=args.cache, cache_dir=args.cache_dir, strict_counters=args.strict_counters,
                                 recount=args.recount)
    if args.backend is None:
        args.backend = ["jax.jit"]
    args.pending_models = True  # a model the head adds is resolved from the head's install (app/gate.py)
    cases, skipped = runnable_selection(args, console, "gate")
    if not cases:
        return 2
    cases, skipped, shard = shard_selection(args, cases, skipped, console)
    if shard is not None and shard.cases and not cases:
        for s in skipped:
            console.print(f"skipped {s.id}: {s.reason}", highlight=False)
        console.print(Text.assemble(("nothing to gate", "red"), f": every case of shard {shard.label} is skipped here"),
                      highlight=False)
        return 2
    request = gate.GateRequest(
        repo=Path(args.repo), base=args.base, head=args.head, cases=cases, skipped=skipped, settings=settings,
        out_dir=Path(args.out_dir), allow_dirty=args.allow_dirty, shard=shard, expectations=args.expectations,
        write_suggested=args.write_suggested, step_summary=os.environ.get("GITHUB_STEP_SUMMARY") or None,
        base_env=args.base_env, head_env=args.head_env, envs=args.envs,
        project_dir=project_dir(args, Path(args.repo)) or "", off_path=args.off_path,
        count_store=not args.no_count_store, commit_url=url)
    report = gate.run(request, _PrintedEvents(console, args.verbose))
    if report.status == gate.SAME_COMMIT:
        said = (f"nothing to gate: base {report.base.name} and head {report.head.name} are the same commit "
                f"({report.base.short}), so they hold the same code; nothing was measured")
        console.print(said, highlight=False)
        if args.format == "json":  # the contract of --format json: one document on stdout, whatever happened
            sys.stdout.write(json.dumps({"format": "ttfg-gate", "status": "same commit", "exit_code": report.code,
                                         "base": report.base.to_json(), "head": report.head.to_json(),
                                         "note": said, "cases": []}, indent=1) + "\n")
        elif args.format == "markdown":
            sys.stdout.write(f"## ttfg gate: nothing to gate\n\n{said}.\n")
        return report.code
    if report.status == gate.INTERRUPTED:
        console.print(Text.assemble(("interrupted", "yellow"), f": worktrees removed; finished samples are in "
                                    f"{request.out_dir} (marked incomplete)"))
        return report.code
    _print_gate(console, report, args.write_suggested, args.verbose)
    if report.warm is not None:  # --cache both: the warm set, in OUT-DIR/warm
        console.print(f"warm set (persistent caches populated by each side's revision; {report.warm.status}):",
                      highlight=False)
        _print_gate(console, report.warm, args.write_suggested, args.verbose)
    if args.format == "json":
        document = report.document if report.warm is None else {"cold": report.document,
                                                                 "warm": report.warm.document}
        sys.stdout.write(json.dumps(document, indent=1) + "\n")
    elif args.format == "markdown":
        sys.stdout.write(report.summary + ("" if report.warm is None else report.warm.summary))
    return report.code


def _print_gate(console, report, write_suggested, verbose: bool = False) -> None:
    """The gate's result: by default what a person reads in ten seconds (at most 25 lines for a regressed case
    at 80 columns: the verdict table, the deciding numbers, the top phase changes and functions); ``verbose``
    adds every tier's finding, the sampling table and the full attribution (as ``ttfg explain`` shows it)."""
    from ..present import noise_views
    from ..present.attribution_views import print_attribution
    from ..present.gate_views import case_lines, verdict_rows, wrapped
    from ..present.gate_views import gate_detail_table, gate_table
    from ..results.gate_outcome import COUNT_BROKEN, HEAD_FAILING
    from ..present.verdicts import accepted_decision
    from ..present.gate_views import baseline_words

    outcome, check, code, shard = report.outcome, report.check, report.code, report.outcome.shard
    width = console.width
    say = lambda text, indent="": [console.print(line, highlight=False, markup=False, soft_wrap=True)  # noqa: E731
                                   for line in wrapped(text, width, indent)]
    console.print(gate_table(outcome))
    for case, row in zip(outcome.cases, verdict_rows(outcome.cases)):
        if verbose:
            say(f"{row.label} (decided by the {row.tier} tier, {row.metric}): {row.case}: {row.reason}")
            for step in case.trail:
                if not step.settled:
                    say(f"{step.tier} tier: {step.verdict}: {step.reason}", "  ")
        elif row.word != "unchanged":
            for line in case_lines(case, row, width):
                console.print(line, highlight=False, markup=False, soft_wrap=True)
    for s in outcome.skipped:
        say(f"skipped {s.id}: {s.reason}")
    for c in outcome.cases:  # where each case's base counts came from: stored and verified, or counted now
        if c.baseline is not None and (verbose or c.baseline.get("status") != "off"):
            say(f"baseline {c.case}: {baseline_words(c.baseline)}")
    if verbose:
        console.print(gate_detail_table(outcome))
        for c in outcome.cases:
            if c.case in outcome.attributions:
                print_attribution(console, outcome.attributions[c.case])
    if check is not None and (verbose or check.failures()):
        print_expectations(console, check, write_suggested, "cases not gated")
    if verbose or code != 1:  # what passing means, and what this machine lets a gate see: for a pass
        say(report.passing_means)
        say(noise_views.headline(report.floor, outcome.settings.metric))
    if report.plan is not None and report.plan.unmeasured:
        say(f"not measured: {report.plan.unmeasured}")
    if report.plan is not None and report.plan.same_packages:
        say(f"dependencies: {report.plan.same_packages}")
    off_path = report.path is not None and report.path.off_path
    if off_path:
        say(f"not on the measured path: {report.path.describe()}")
    elif report.path is not None and (report.path.unseen or report.path.stubs):
        say(f"measured path: {report.path.describe()}")
    for new in report.new_cases:
        say(f"new case {new['case']}: " + (f"first gradient {fmt.seconds(new['first_grad_s'])} on the head (median "
                                           f"of {new['samples']}; nothing to compare it with)" if not new["error"]
                                           else f"cannot run on the head: {new['error']}"))
    if report.removed_cases:
        say(f"removed case(s), not in the head: {', '.join(report.removed_cases)}")
    folder = report.files["gate"].parent
    say(f"results in {folder}/" + ("" if verbose else f"; all of it: ttfg explain {folder}, or --verbose"))
    if outcome.base_broken():
        names = ", ".join(c.case for c in outcome.base_broken())
        console.print(Text.assemble(("base cannot run", "red"), f" {names}: nothing to compare against"), highlight=False)
    if code == 1:
        what = [f"{len(outcome.regressions())} regressed case(s)"] if outcome.regressions() else []
        if check is not None and check.failures():
            what.append(f"{len(check.failures())} expectation(s) violated")
        console.print(Text.assemble(("gate failed", "red"), f": {', '.join(what)}"), highlight=False)
    elif code == 2 and off_path and outcome.exit_code() == 0:
        console.print(Text.assemble(("gate could not see the change", "red"),
                                    ": none of its code ran on the measured path (say which case runs it: --model/"
                                    "--backend, or a library backend; --off-path fail asked for exit 2)"),
                      highlight=False)
    elif code == 2 and not outcome.base_broken():
        stuck = [f"{c.case} ({c.stop})" for c in outcome.cases if c.stop in (COUNT_BROKEN, HEAD_FAILING)]
        console.print(Text.assemble(("gate could not compare", "red"), f": {', '.join(stuck) or 'no case'}"),
                      highlight=False)
    elif code == 0 and shard is not None and not shard.cases:
        console.print(f"gate passed: shard {shard.label} has no case (more shards than cases)", highlight=False)
    elif code == 0 and not outcome.cases and (report.new_cases or report.removed_cases):
        console.print("gate passed: no case to compare, only new or removed ones (said above)", highlight=False)
    elif code == 0 and off_path:
        console.print("gate passed: none of the changed code ran on the measured path, so the measurement could not "
                      "see the change (said above; --off-path fail makes this exit 2)", highlight=False)
    elif code == 0 and outcome.accepted():
        console.print(f"gate {accepted_decision(len(outcome.accepted()))} (which trailer accepted what is said above)",
                      highlight=False)
    elif code == 0:
        console.print("gate passed: no regression shown (what that rules out is said above)", highlight=False)


def _off_path(text: str) -> str:
    """``--off-path``: pass or fail; ``warn``, its older spelling, is pass."""
    import argparse

    if text == "warn":
        return "pass"
    if text not in ("pass", "fail"):
        raise argparse.ArgumentTypeError(f"expected pass or fail, got {text!r}")
    return text


def add_gate_commands(sub) -> None:
    """Register ``compare``, ``gate`` and ``expect`` on the ``ttfg`` subparsers.

    Parameters
    ----------
    sub
        The action ``build_parser`` got from ``add_subparsers``.
    """
    from .common_args import COMPARED_BACKEND, add_decision, add_environments, add_revisions, add_selection
    from .compare import add_compare_command, add_expect_command

    add_compare_command(sub)

    p = sub.add_parser("gate", help="interleaved, paired base/head measurement with a sequential verdict",
                       description=GATE_HELP, formatter_class=formatter,
                       epilog=exit_codes(extra=": a case regressed, a head cannot run a case the base runs "
                                                      "or fails significantly more often, or --expectations are "
                                                      "violated",
                                                extra2="; also a missing revision, a dirty tree (see --allow-dirty) "
                                                       "or a base that cannot run"))
    p.add_argument("--base", metavar="REV", help="base revision: branch, tag, SHA, origin/main (required unless "
                                                  "--base-env/--head-env make an upgrade gate of one revision)")
    p.add_argument("--head", default="HEAD", metavar="REV", help="head revision (default: HEAD, the committed one)")
    add_revisions(p)
    add_environments(p, sides=True)
    p.add_argument("--off-path", type=_off_path, default="pass", metavar="{pass,fail}",
                   help="when none of the change's code files ran on the measured path (each case traced once on "
                        "each side): 'pass' keeps the verdict and every output says the measurement could not see "
                        "the change (default: a pull request that touches code no case runs cannot move what is "
                        "measured); 'fail' exits 2. Config key: off-path")
    add_selection(p, default_model="resnet15", backend_help=COMPARED_BACKEND)
    add_decision(p)
    p.add_argument("--allocations", action="store_true",
                   help="after the timing pairs, count allocations (memray) once per side and case, unless the "
                        "instructions tier already counted them")
    p.add_argument("--alloc-repeat", type=options.repeat, default=1,
                   help="allocation processes per side and case, the instructions tier's included (default: 1)")
    p.add_argument("--cache", choices=("cold", "warm", "both"), default="cold",
                   help="cold: fresh, empty compile caches per process (default); warm: each side's persistent "
                        "caches (JAX compilation cache, Inductor FX graph cache) populated by its own revision, then "
                        "paired warm processes, whose cache misses are structural evidence; both: the cold and the "
                        "warm gate as two guarded sets (the warm one's files in OUT-DIR/warm; exit code the worse). "
                        "A case whose populating processes looked no persistent cache up (read from jax and "
                        "Inductor in the process, whatever the backend) is measured cold, and said so with what was "
                        "seen")
    p.add_argument("--cache-dir", metavar="DIR", default=None,
                   help="with --cache warm/both: where each side's persistent caches go (a folder of their own, "
                        "removed afterwards; default: the temporary folder); refused when not writable")
    p.add_argument("--strict-counters", type=options.strict_counters, default=None, metavar="LIST",
                   help="structural counters that fail the gate on a change of any size, comma-separated, or none; "
                        "any other counter that grew by less than --min-effect is evidence, not a verdict "
                        "(default: backend_compiles,graphs,graph_breaks,recompiles: discrete by nature)")
    p.add_argument("--recount", type=options.count(0, 5, "--recount"), default=1, metavar="N",
                   help="more counts a side, one at a time, for a case whose count lands at the edge of its margin, "
                        "before the time tier decides it (default: 1)")
    p.add_argument("--no-count-store", action="store_true",
                   help="count the base afresh: neither read nor fill the count store (by default a stored base "
                        "count of the exact key is used once the head's fresh count agrees with it, and the base "
                        "counts taken are kept; $TTFG_COUNT_STORE_DIR, else counts/ in the cache folder)")
    p.add_argument("--out-dir", default="runs/gate", metavar="DIR", help="where results go (default: runs/gate)")
    p.add_argument("--commit-url", metavar="TEMPLATE", default=None,
                   help="a commit page's URL with {sha}, e.g. 'https://github.com/OWNER/REPO/commit/{sha}': "
                        "summary.md links your code's file:line where it went to that line at the head "
                        "(.../blob/SHA/PATH#L4; default: the config's commit-url, else show_commit_url of "
                        "asv.conf.json, else no links)")
    p.add_argument("--expectations", metavar="FILE", help="also check head's counters against this expectations CSV")
    p.add_argument("--write-suggested", metavar="PATH", help="with --expectations: write the updated file here")
    p.add_argument("--format", choices=("table", "markdown", "json"), default="table",
                   help="what stdout gets at the end: tables (default), the Markdown summary, or gate.json's document "
                        "(progress then goes to stderr)")
    p.add_argument("--verbose", action="store_true",
                   help="every tier's finding, how each case was sampled and the full attribution, interpreter "
                        "internals included (by default: the verdicts, their numbers, the top phase changes and "
                        "functions; ttfg explain OUT-DIR shows the rest afterwards)")
    from .shards import add_shard_options

    add_shard_options(p)
    p.set_defaults(func=cmd_gate)
    add_expect_command(sub)
