"""The HTML trend report, checked the way a person meets it: rendered in a browser.

Real results files come from ``ttfg run`` on the cheap backends (torch.eager and
HIPS autograd, a 3-block resnet: seconds per process); trends across commits come
from synthetic asv result files with planted steps (``ttfg.history.synthetic``),
read through the same loader as real history (``ttfg.history.asv_results``). The browser
test needs Debian's Chromium (``/usr/bin/chromium``) and is skipped without it.
``tests/data/study-*.json`` are real ``ttfg study`` outputs (``study chain --backend
autograd --backend jax.jit --repeat 2``; ``study depth --backend autograd --backend
torch.eager --repeat 2``) for the Studies section.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ttfg import fmt

from ttfg.history import asv_results, points
from ttfg.results.record import load
from ttfg.app.report import build_report, prepare
from ttfg.history.steps import detect_steps
from ttfg.history.synthetic import SyntheticHistory, cases, write_history

from .conftest import ROOT, run_ttfg

CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
EVIL = "<script>alert('x')</script>"
MODEL = "resnet15:blocks=3"
STUDY_DATA = ROOT / "tests" / "data"


# ---------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def real_run(tmp_path_factory) -> Path:
    """One real results file: two cheap backends, cold and warm cache, allocations."""
    out = tmp_path_factory.mktemp("runs") / "run.json"
    proc = run_ttfg("run", "--model", MODEL, "--backend", "torch.eager", "--backend", "autograd", "--repeat", "1",
                    "--cache", "both", "--allocations", "--out", str(out), timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


@pytest.fixture(scope="module")
def second_run(real_run, tmp_path_factory) -> Path:
    """The same run as if made a day later at another commit (trends from results files alone)."""
    data = json.loads(real_run.read_text())
    data["environment"]["git"]["commit"] = "f" * 40
    data["environment"]["git"]["dirty"] = False
    data["created"] = "2099-01-01T00:00:00+00:00"
    out = tmp_path_factory.mktemp("runs2") / "later.json"
    out.write_text(json.dumps(data))
    return out


@pytest.fixture(scope="module")
def asv_history(tmp_path_factory) -> SyntheticHistory:
    """asv result files: 60 commits x 12 cases, plus one case whose model name is an HTML injection attempt."""
    folder = tmp_path_factory.mktemp("asv") / "results"
    return write_history(folder, 60, seed=3, case_list=cases(12) + [(EVIL, "jax.jit", "params=args,chain=unrolled")])


@pytest.fixture(scope="module")
def history(asv_history) -> pd.DataFrame:
    """The synthetic history as ``ttfg report`` reads it."""
    return asv_results.load(asv_history.folder, dropna=True)


class Page(HTMLParser):
    """The report's structure: per section id, its images, inline SVGs and table rows."""

    def __init__(self):
        super().__init__()
        self.section = None
        self.imgs: dict[str, list[dict]] = {}
        self.svgs: dict[str, int] = {}
        self.rows: dict[str, list[str]] = {}
        self.tags: set[str] = set()
        self.scripts: list[dict] = []
        self.urls: list[str] = []
        self.in_tbody = False
        #: Rows marked ``data-row`` (study tables): key -> text of each cell.
        self.cells: dict[str, list[str]] = {}
        self.row = None
        self.cell = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.add(tag)
        if tag == "section":
            self.section = attrs.get("id")
        if tag == "script":
            self.scripts.append(attrs)
        for key in ("src", "href"):
            if attrs.get(key):
                self.urls.append(attrs[key])
        if tag == "img":
            self.imgs.setdefault(self.section, []).append(attrs)
        if tag == "svg":
            self.svgs[self.section] = self.svgs.get(self.section, 0) + 1
        if tag == "tbody":
            self.in_tbody = True
        if tag == "tr" and self.in_tbody and "data-case" in attrs:
            self.rows.setdefault(self.section, []).append(attrs["data-case"])
        if tag == "tr" and self.in_tbody and "data-row" in attrs:
            self.row = self.cells[attrs["data-row"]] = []
        if tag == "td" and self.row is not None:
            self.cell = []

    def handle_data(self, data):
        if self.cell is not None:
            self.cell.append(data)

    def handle_endtag(self, tag):
        if tag == "td" and self.cell is not None:
            self.row.append(" ".join("".join(self.cell).split()))
            self.cell = None
        if tag == "tr":
            self.row = None
        if tag == "tbody":
            self.in_tbody = False
        if tag == "section":
            self.section = None


def parse(html: str) -> Page:
    page = Page()
    page.feed(html)
    return page


def chromium_flags(tmp_path: Path, profile: str = "profile") -> list[str]:
    return ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--hide-scrollbars", f"--user-data-dir={tmp_path / profile}",
            "--enable-logging=stderr", "--v=0"]


def screenshot(html_path: Path, tmp_path: Path, height: int = 2000, expect=("Summary", 'id="regressions"'),
               width: int = 1280) -> tuple[Path, str]:
    """Render in headless Chromium; return the PNG and the browser's log.

    Headless windows are at least 500 px wide, so a phone's width is a frame of that width
    in a page of its own (:func:`framed`); the PNG is cut to it.
    """
    png = tmp_path / f"shot-{width}.png"
    flags = chromium_flags(tmp_path)
    target = framed(html_path, width, height, tmp_path) if width < 500 else html_path
    shot = subprocess.run([CHROMIUM, *flags, f"--screenshot={png}", f"--window-size={max(width, 500)},{height}",
                           target.as_uri()], capture_output=True, text=True, timeout=120)
    dom = subprocess.run([CHROMIUM, *flags, "--dump-dom", html_path.as_uri()], capture_output=True, text=True,
                         timeout=120)
    assert png.exists(), shot.stderr[-2000:]
    assert all(e in dom.stdout for e in expect), dom.stderr[-2000:]
    if width < 500:
        from PIL import Image

        Image.open(png).crop((0, 0, width, height)).save(png)
    return png, shot.stderr + dom.stderr


def framed(html_path: Path, width: int, height: int, tmp_path: Path, fragment: str = "") -> Path:
    """A page holding the report in a frame ``width`` CSS px wide: the report's viewport is the phone's."""
    page = tmp_path / f"frame-{width}.html"
    page.write_text(f'<!doctype html><html><body style="margin:0"><iframe src="{html_path.as_uri()}{fragment}" '
                    f'style="width:{width}px;height:{height}px;border:0;display:block"></iframe><script>'
                    'window.addEventListener("message", function (e) { document.body.setAttribute("data-selftest", e.data); });'
                    '</script></body></html>')
    return page


def selftest(html_path: Path, width: int, tmp_path: Path) -> dict:
    """What the page's ``#selftest`` saw at ``width``: its scroll width, the images shown, a tap's answer."""
    target = framed(html_path, width, 2400, tmp_path, "#selftest") if width < 500 else None
    uri = target.as_uri() if target else html_path.as_uri() + "#selftest"
    dom = subprocess.run([CHROMIUM, *chromium_flags(tmp_path, f"p{width}"), f"--window-size={max(width, 500)},2400",
                          "--virtual-time-budget=5000", "--dump-dom", uri], capture_output=True, text=True, timeout=120)
    found = re.search(r'data-selftest="([^"]*)"', dom.stdout)
    assert found, dom.stderr[-2000:]
    return json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))


# ---------------------------------------------------------------------------- steps


def test_step_detector_finds_planted_steps_like_asv_does():
    from asv.step_detect import detect_steps as asv_detect

    rng = np.random.default_rng(0)
    y = np.r_[np.full(30, 1.0), np.full(30, 1.5), np.full(30, 1.1)] * np.exp(0.03 * rng.standard_normal(90))
    ours = [s.index for s in detect_steps(y)]
    theirs = [left for left, *_ in asv_detect(list(y))][1:]
    assert ours == [30, 60]
    assert all(abs(a - b) <= 1 for a, b in zip(ours, theirs)) and len(theirs) == 2
    first = detect_steps(y)[0]
    assert first.regression and 0.4 < first.change < 0.6


def test_step_detector_is_quiet_on_noise_and_ignores_outliers():
    rng = np.random.default_rng(1)
    noisy = sum(bool(detect_steps(np.exp(0.12 * rng.standard_normal(200)))) for _ in range(200))
    assert noisy <= 4  # measured false-step rate at n=200 is ~0.5 %
    y = np.ones(50)
    y[25] = 5.0  # one outlier is not a step
    assert detect_steps(y) == []
    counter = np.r_[np.full(20, 304.0), np.full(20, 310.0)]  # a 2 % change in a deterministic counter
    assert [s.index for s in detect_steps(counter, min_change=0.01)] == [20]
    assert detect_steps([1.0, None, float("nan"), 1.0]) == []


def test_step_detector_sees_a_step_at_the_tip_behind_drift_that_came_back():
    # First-gradient CPU levels (ms) of a recorded history (benchmarks/trend_false_alarms.py, run 3):
    # 20 commits of identical code whose middle read 7 % high under load, then a 10 % step.
    recorded = [23.5, 23.5, 25.1, 25.6, 25.0, 24.7, 26.1, 25.3, 25.7, 25.2, 25.0, 25.1, 26.3, 24.7, 23.6, 23.5,
                24.1, 23.5, 23.4, 23.7, 26.2, 25.1, 25.6]
    assert [s.index for s in detect_steps(recorded)] == [2, 14, 20]  # binary segmentation found none
    rng = np.random.default_rng(3)
    shape = np.r_[np.full(2, 1.0), np.full(12, 1.07), np.full(6, 1.0), np.full(3, 1.1)]
    found = sum(any(s.index == 20 and s.regression for s in detect_steps(shape * np.exp(0.015 * rng.standard_normal(23))))
                for _ in range(30))
    assert found >= 26  # 28 here; binary segmentation: 17


def test_history_is_normalised_from_the_loaders_schema(tmp_path):
    assert points.parse_params("model='resnet15', backend=jax.jit, variant=params=args,chain=scan") == {
        "model": "resnet15", "backend": "jax.jit", "variant": "params=args,chain=scan"}
    assert points.metric_from_benchmark("suites.benchmarks.track_first_grad_s", {}) == "first_grad_s"
    assert points.metric_from_benchmark("suites.x.track_counters", {"counter": "hlo_ops"}) == "counters.hlo_ops"
    assert points.metric_from_benchmark("track_counters_jaxpr_eqns", {}) == "counters.jaxpr_eqns"
    write_history(tmp_path / "results", 8, 2, seed=0)
    write_history(tmp_path / "results", 8, 2, seed=5, machine="other-box")
    df = asv_results.load(tmp_path / "results", dropna=True)
    hist = points.from_history(df)
    assert hist.machine in ("ttfg-synthetic", "other-box") and len(hist.notes) == 2
    assert hist.notes[0].startswith("ordered by date: ")  # synthetic commits: no repository knows them
    assert sorted(hist.points["pos"].unique()) == list(range(8))
    assert set(hist.points["case"]) == {"resnet15/jax.jit/params=args,chain=unrolled",
                                        "resnet15/jax.eager/params=args,chain=unrolled"}
    with pytest.raises(points.ReportInputError, match="missing column"):
        points.from_history(df.drop(columns=["benchmark"]))


def test_synthetic_history_is_what_asv_run_writes(asv_history):
    """Same files, keys, columns, benchmark names and parameter names as the real history in results/."""
    real_dir = ROOT / "results"
    # The newest recording: older ones predate benchmarks added to the suite since.
    real_file = max((json.loads(p.read_text()) for p in (real_dir / "ttfg-dev-2core").glob("*-*.json")),
                    key=lambda doc: doc["date"])
    files = sorted((asv_history.folder / asv_history.machine).glob("*-*.json"))
    assert len(files) == 60 and (asv_history.folder / asv_history.machine / "machine.json").is_file()
    ours = json.loads(files[0].read_text())
    assert list(ours) == list(real_file) and ours["result_columns"] == real_file["result_columns"]
    assert sorted(ours["results"]) == sorted(real_file["results"])
    columns = real_file["result_columns"]
    for name, row in ours["results"].items():
        real_row = real_file["results"][name]
        # asv drops a row's trailing empty columns (a benchmark with no measured value has no
        # stats and no samples), so compare the columns both rows have; timings keep samples in both.
        assert [type(v) for v in row[:len(real_row)]] == [type(v) for v in real_row[:len(row)]], name
        if len(row) == len(columns) and len(real_row) == len(columns):
            assert isinstance(row[columns.index("samples")], list), name
        assert [len(axis) for axis in row[1]][1:] == [len(axis) for axis in real_row[1]][1:]  # backends, variants
    real_meta = json.loads((real_dir / "benchmarks.json").read_text())
    meta = json.loads((asv_history.folder / "benchmarks.json").read_text())
    assert sorted(meta) == sorted(real_meta)
    for name, bench in real_meta.items():
        if name != "version":
            assert sorted(meta[name]) == sorted(bench) and meta[name]["unit"] == bench["unit"]
            assert meta[name]["param_names"] == bench["param_names"]
    # asv itself reads every file back.
    from asv.results import iter_results

    assert len(list(iter_results(str(asv_history.folder)))) == 60
    # The recorded history keeps every cold process's timing, like the synthetic one.
    first_grad = dict(zip(columns, real_file["results"]["ttfg.track_first_grad_seconds"]))
    assert any(isinstance(s, list) and len(s) >= 5 for s in first_grad["samples"])


def test_planted_steps_are_found(asv_history, history):
    """Every clear planted step (x1.4, x2, x0.7; x1.25 can hide in 10 % noise) is detected within two commits.

    A timing step also needs enough commits after it for its samples to outweigh the drift
    between commits (the synthetic history's commits share 6 % drift): three are not enough.
    """
    found = prepare(history, []).trends.steps
    n = len(asv_history.commits)
    clear = [(case, metric, pos) for case, metric, pos, factor in asv_history.steps
             if factor != 1.25 and (points.metric(metric).deterministic or pos <= n - 5)]
    assert len(clear) >= 3
    for case, metric, pos in clear:
        hits = found[(found["case"] == case) & (found["metric"] == metric)]
        assert any(abs(int(p) - pos) <= 2 for p in hits["pos"]), (case, metric, pos, hits)


# ---------------------------------------------------------------------------- the report


def test_report_renders_in_a_browser_with_every_plot(real_run, history, tmp_path):
    run = load(real_run)
    (tmp_path / "asv").mkdir()
    (tmp_path / "asv" / "index.html").write_text("<html>asv</html>")
    out = build_report(history, [run], out=tmp_path / "index.html")
    html = out.read_text()
    page = parse(html)
    prepared = prepare(history, [run])
    cases = {c for c, *_ in prepared.trends.cases()}

    # Self-contained: no stylesheet link, no script file, every image embedded; the asv site linked.
    # One small inline script answers a pointer over the plots from an inline JSON block.
    assert "link" not in page.tags and page.scripts == [{"type": "application/octet-stream", "id": "hover-data",
                                                          "data-encoding": "gzip+base64"}, {}]
    # Small: pointer and tap answers, a phone's plot geometry, and the #selftest hook a test reads.
    assert len(html.split("<script>")[1].split("</script>")[0]) < 8000
    assert all(u.startswith(("data:image/png;base64,", "#")) or u == "./asv/index.html" for u in page.urls), page.urls
    assert 'href="./asv/index.html"' in html
    # Names are escaped, never markup.
    assert EVIL not in html and "&lt;script&gt;alert(" in html
    # One summary row per case, with a sparkline each; the steps table lists planted steps.
    assert sorted(page.rows["summary"]) == sorted(cases)
    assert page.svgs["summary"] == len(cases)
    assert len(prepared.trends.steps) >= 3 and "regression" in set(prepared.trends.steps["kind"])
    # Counted steps (deterministic, confirmed) apart from the timing candidates, each row with its status.
    trends = prepared.trends
    assert len(trends.counted()) and len(trends.candidates())
    assert len(page.rows["regressions"]) == len(trends.counted())
    assert len(page.rows["candidates"]) == len(trends.candidates())
    assert fmt.plural(trends.n_regressions(), "regression") in html and f"{len(trends.candidates())} unconfirmed" in html
    # A trend plot per model and metric, in the section of its group.
    by_group: dict[str, set] = {}
    for s in prepared.trends.series.values():
        group = points.metric(s.metric).group
        if group == "counters" or s.metric in points.TREND_METRICS:
            by_group.setdefault(group, set()).add((s.model, s.metric))
    for group, expected in by_group.items():
        assert len(page.imgs[f"trends-{group}"]) == len(expected), group
    models = {m for m, _ in by_group["time"]}
    assert len(models) == 3 and EVIL in models
    # The latest run's phase breakdown (one model) and the cold/warm comparison.
    assert len(page.imgs["phases"]) == 1
    assert len(page.imgs["cache"]) == 1 and f"{MODEL}/torch.eager/" in html

    if not CHROMIUM:
        pytest.skip("Chromium is not installed (apt-get install -y chromium); structure checked, rendering not")
    png, log = screenshot(out, tmp_path)
    from PIL import Image

    image = Image.open(png).convert("RGB")
    assert image.size == (1280, 2000)
    pixels = np.asarray(image)
    non_white = float((pixels.min(axis=2) < 235).mean())
    colours = len(image.getcolors(maxcolors=1 << 20) or [])
    assert non_white > 0.05 and colours > 50, (non_white, colours)
    console = [line for line in log.splitlines() if "CONSOLE" in line or "Uncaught" in line]
    assert not console, console
    # A pointer over the first point of the first plot: its series, commit, date, value, samples and spread.
    dom = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={tmp_path / 'p2'}",
                          "--virtual-time-budget=5000",  # the data is unpacked asynchronously
                          "--dump-dom", out.as_uri() + "#hover-selftest"], capture_output=True, text=True, timeout=120)
    answer = re.search(r'data-hover-selftest="([^"]*)"', dom.stdout)
    assert answer and re.search(r"commit \w{8}, \d{4}-\d\d-\d\d \d\d:\d\d.* \(3 samples, .*–", answer.group(1)), \
        (answer and answer.group(1), dom.stderr[-1000:])


def test_report_from_results_files_alone(real_run, second_run, tmp_path):
    out = build_report(None, [load(real_run), load(second_run)], out=tmp_path / "r.html")
    page = parse(out.read_text())
    assert len(page.rows["summary"]) == 2
    # first gradient, its CPU time, process TTFG, import, second gradient (eager backends have no compile phase)
    assert len(page.imgs["trends-time"]) == 5
    assert len(page.imgs["trends-memory"]) == 3 and len(page.imgs["trends-counters"]) >= 2
    assert len(page.imgs["phases"]) == 1 and len(page.imgs["cache"]) == 1
    assert "ffffffff" in out.read_text() and "later.json" in out.read_text()


def test_the_report_leads_with_the_run_and_keeps_history_apart(real_run, history, tmp_path):
    """After ``make bench``: the first screen is the run just measured; asv history (often another
    machine's) only when given, below it, headed by the machine that recorded it."""
    run = load(real_run)
    alone = build_report(None, [run], out=tmp_path / "run.html").read_text()
    sections = re.findall(r'<section id="([^"]+)"', alone)
    assert sections[:2] == ["run", "phases"] and "history" not in alone.split("<main>")[1][:200]
    assert "<h1>Your run: run.json</h1>" in alone and 'id="history"' not in alone and "asv machine" not in alone
    host = run.environment["hostname"]
    assert f"measured on {host}" in alone.split("</header>")[0]
    # The run's table holds the terminal's very cells (one precision per column).
    from ttfg.present.run_views import run_rows

    page = parse(alone)
    for row in run_rows(run):
        cells = page.cells[f"run/{row['case']}/{row['cache']}"]
        assert row["first gradient"] in cells and row["process TTFG"] in cells, (row, cells)

    both = build_report(history, [run], out=tmp_path / "both.html").read_text()
    assert both.index('id="run"') < both.index('id="history"') < both.index('id="summary"')
    machine = history["machine"].iloc[-1]
    assert f"recorded on asv machine {machine}" in both
    assert f"not by the run above (host {host})" in both
    environment = both.split('id="environment"')[1].split("</section>")[0]
    assert "asv machine" not in environment and host in environment  # the asv machine is not this host


def test_a_gate_page_states_its_verdict_in_the_header(tmp_path):
    """``ttfg report --runs runs/gate/``: the decision in the header, never "0 regression(s)"."""
    from ttfg.cli import main

    gate = tmp_path / "gate"
    shutil.copytree(ROOT / "tests" / "data" / "gate_v1", gate)
    assert main(["report", "--runs", str(gate), "--out", str(tmp_path / "pass.html")]) == 0
    html = (tmp_path / "pass.html").read_text()
    assert "<h1>ttfg gate passed: no regression shown (1 case)</h1>" in html
    assert "regression(s)" not in html and 'id="history"' not in html
    assert re.findall(r'<section id="([^"]+)"', html)[:2] == ["gate", "run"]
    doc = json.loads((gate / "gate.json").read_text())
    case = doc["cases"][0]
    row = parse(html).cells[f"gate/{case['case']}"]
    assert row[1] == case["verdict"]["verdict"] + row[1][len(case["verdict"]["verdict"]):]  # the verdict's label
    assert row[5] == fmt.factor(case["verdict"]["ratio"])
    doc["exit_code"] = 1
    doc["cases"][0]["verdict"].update(verdict="regressed", label="regressed")
    (gate / "gate.json").write_text(json.dumps(doc))
    assert main(["report", "--runs", str(gate), "--out", str(tmp_path / "fail.html")]) == 0
    assert "<h1>ttfg gate failed: regression in 1 case of 1</h1>" in (tmp_path / "fail.html").read_text()


def test_the_report_reads_at_1280_and_390_px(real_run, history, tmp_path):
    """Headless Chromium at a desktop's and a phone's width: nothing wider than the screen, the
    phone's narrow plot renditions shown there, and a tap on a trend plot answers like a pointer."""
    out = build_report(history, [load(real_run)], out=tmp_path / "index.html")
    html = out.read_text()
    assert html.count("<picture><source") == html.count('<source media="(max-width: 640px)"') > 3  # phone renditions
    if not CHROMIUM:
        pytest.skip("Chromium is not installed (apt-get install -y chromium); structure checked, rendering not")
    from PIL import Image

    for width in (1280, 390):
        png, log = screenshot(out, tmp_path, width=width)
        image = Image.open(png).convert("RGB")
        assert image.size == (width, 2000)
        pixels = np.asarray(image)
        assert float((pixels.min(axis=2) < 235).mean()) > 0.05
        assert not [line for line in log.splitlines() if "Uncaught" in line]
        seen = selftest(out, width, tmp_path)
        assert seen["viewport"] == width and seen["width"] <= width, seen  # no sideways scrolling of the page
        if width == 390:
            assert max(seen["images"]) <= 400, seen  # every plot in its phone rendition, text at its own size
        else:
            assert min(seen["images"]) > 1000, seen
        assert re.search(r"commit \w{8}, \d{4}-\d\d-\d\d", seen.get("tap", "")), seen  # a tap answers


def test_cli_report_regressions_and_bad_input(real_run, tmp_path):
    """Run from an empty folder (no results/ there), as a user with only results files would."""
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}

    def ttfg(*args):
        return run_ttfg(*args, env=env, cwd=tmp_path)

    out = tmp_path / "reports" / "index.html"
    proc = ttfg("report", "--runs", str(real_run), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(out) and out.exists()
    assert "Your run: run.json" in out.read_text() and 'id="history"' not in out.read_text()
    before = out.read_bytes()

    proc = ttfg("regressions", "--runs", str(real_run))
    assert proc.returncode == 0 and "0 regressions" in proc.stdout

    missing = tmp_path / "nope.json"
    proc = ttfg("report", "--runs", str(missing), "--out", str(out))
    assert proc.returncode == 2 and str(missing) in proc.stderr and "cannot read" in proc.stderr
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "ttfg-results", "version": 1, "created": "x", "environment": {},
                               "settings": {}, "cases": [{"id": 1}]}))
    proc = ttfg("report", "--runs", str(bad), "--out", str(out))
    assert proc.returncode == 2 and str(bad) in proc.stderr and "cases[0]" in proc.stderr
    proc = ttfg("report", "--out", str(tmp_path / "empty.html"))
    assert proc.returncode == 2 and "nothing to report" in proc.stderr
    assert out.read_bytes() == before and not (tmp_path / "empty.html").exists()
    assert not [p for p in out.parent.iterdir() if p.name.endswith(".tmp")]


def test_cli_reads_asv_history_through_the_loader(asv_history, history, real_run, tmp_path, monkeypatch, capsys):
    """History comes from the asv result files in results/; regressions prints the steps the report finds."""
    from ttfg.cli import main

    shutil.copytree(asv_history.folder, tmp_path / "results")
    monkeypatch.chdir(tmp_path)
    assert main(["regressions", "--runs", str(real_run)]) == 0
    text = capsys.readouterr().out
    trends = prepare(history, [load(real_run)]).trends
    n_reg = trends.n_regressions()
    assert n_reg and fmt.plural(n_reg, "regression") in text
    assert fmt.plural(len(trends.candidates()), "unconfirmed timing candidate") in text
    # The report with --runs leads with the run; results/ (perhaps another machine's) only when asked.
    assert main(["report", "--runs", str(real_run), "--out", "out/run.html"]) == 0
    assert "is not shown" in capsys.readouterr().err
    assert 'id="history"' not in (tmp_path / "out" / "run.html").read_text()
    assert main(["report", "--runs", str(real_run), "--results", "results", "--last", "20", "--out", "out/index.html"]) == 0
    assert "history: 20 commits" in capsys.readouterr().err
    assert 'id="history"' in (tmp_path / "out" / "index.html").read_text()


def test_report_code_imports_no_framework(real_run, tmp_path):
    code = (f"import sys; from ttfg.cli import main; "
            f"rc = main(['report', '--runs', {str(real_run)!r}, '--out', {str(tmp_path / 'x.html')!r}]); "
            f"bad = {{'torch', 'jax', 'jaxlib', 'autograd'}} & set(sys.modules); assert rc == 0 and not bad, bad")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr


def test_plots_are_downsampled_for_long_histories():
    from ttfg.present.plots import MAX_POINTS, downsample, sparkline_svg

    x = np.arange(5000, dtype=float)
    dx, dy, lo, hi = downsample(x, np.sin(x))
    assert len(dx) <= MAX_POINTS and lo is not None and np.all(lo <= dy) and np.all(dy <= hi)
    assert downsample(x[:50], x[:50])[2] is None
    assert re.fullmatch(r"<svg .*</svg>", sparkline_svg([1, 2, 3], "#123456"))


# ---------------------------------------------------------------------------- studies


def _x(v: float) -> str:
    return fmt.factor(v)


def test_studies_section_shows_the_stored_analysis(real_run, tmp_path):
    run, chain, depth = load(real_run), load(STUDY_DATA / "study-chain.json"), load(STUDY_DATA / "study-depth.json")
    out = build_report(None, [chain, run, depth], out=tmp_path / "studies.html")
    html = out.read_text()
    page = parse(html)
    assert 'href="#studies"' in html and "2 studies" in html
    # One effect chart and one depth figure (a panel per phase inside).
    assert len(page.imgs["studies"]) == 2
    assert all(i["src"].startswith("data:image/png;base64,") for i in page.imgs["studies"])

    effects = chain.study.to_json()["effects"]
    fits = depth.study.to_json()["depth"]
    study_rows = {k for k in page.cells if not k.startswith("run/")}
    assert study_rows == ({f"{e['backend']}/{e['metric']}" for e in effects} | {f"{d['backend']}/{d['metric']}" for d in fits})
    assert len(study_rows) == len(effects) + len(fits) == 7
    for e in effects:  # backend, metric, control -> treatment, ratio, interval, reading, pairs, p
        cells, eff = page.cells[f"{e['backend']}/{e['metric']}"], e["effect"]
        assert cells[3] == _x(eff["ratio"]) and cells[4] == f"[{_x(eff['ci_low'])}, {_x(eff['ci_high'])}]"
        assert cells[6] == str(eff["n"]) and cells[7] == fmt.p_value(eff["p_value"])
        assert cells[2].startswith("unrolled ") and " → scan " in cells[2]
    first = page.cells["jax.jit/first_grad_s"]
    # The arms' medians come from the paired samples of the same file.
    samples = {c.variant["chain"]: c.values("first_grad_s") for c in chain.cases}
    assert first[2] == (f"unrolled {fmt.seconds(float(np.median(samples['unrolled'])))} → "
                        f"scan {fmt.seconds(float(np.median(samples['scan'])))}")
    ratio = next(e["effect"]["ratio"] for e in effects if (e["backend"], e["metric"]) == ("jax.jit", "first_grad_s"))
    assert first[5] == f"scan {fmt.factor(1 / ratio)} faster" and first[5].startswith("scan 3.7")
    for d in fits:  # backend, metric, k, interval, growth, a, b, span, depths
        cells, fit = page.cells[f"{d['backend']}/{d['metric']}"], d["fit"]
        assert cells[2] == f"{fit['k']:.2f}" and cells[3] == f"[{fit['k_ci_low']:.2f}, {fit['k_ci_high']:.2f}]"
        assert cells[4] == d["growth"] and cells[5] == fmt.seconds(fit["a"]) and cells[6] == fmt.seconds(fit["b"])
        assert cells[8] == str(len(d["points"]))
    assert page.cells["autograd/first_grad_s"][4] == "super-linear"
    # Skipped backends are listed.
    assert "autograd: does not support both chain=unrolled and chain=scan" in html

    # Study files stay out of the trends and the run's sections, and are listed as files.
    assert {k.split("/", 1)[1].rsplit("/", 1)[0] for k in page.cells if k.startswith("run/")} == {c.id for c in run.cases}
    assert len(page.imgs["phases"]) == 1 and "blocks=60" not in "".join(page.rows.get("phases", []))
    assert "study-depth.json" in html and "shown under Studies only" in html


def test_study_views_read_the_typed_section(tmp_path):
    from ttfg.present import study_views
    from ttfg.results.record import EffectEntry, ResultsError

    chain, depth = load(STUDY_DATA / "study-chain.json"), load(STUDY_DATA / "study-depth.json")
    studies = study_views.read_studies([depth, chain])
    assert [s.kind for s in studies] == ["chain", "depth"]  # oldest first
    assert studies[1].depth_metrics() == ["first_grad_s", "execute_s"]
    series = studies[1].depth[0]
    assert series.points == [tuple(p) for p in depth.study.depth[0].points]
    assert series.fit.curve([1])[0] == pytest.approx(series.fit.a + series.fit.b)
    assert study_views.split_runs([chain, depth]) == ([], [chain, depth])
    # A broken analysis is refused when the file is read, naming the file and the field.
    raw = json.loads((STUDY_DATA / "study-depth.json").read_text())
    raw["settings"]["study"]["depth"][1]["points"] = [[1, "fast"]]
    broken = tmp_path / "broken-study.json"
    broken.write_text(json.dumps(raw))
    with pytest.raises(ResultsError, match=r"broken-study.json: study.depth\[1\].points\[0\]\[1\]: expected a "
                                           r"positive number of seconds, got the string 'fast'"):
        load(broken)
    # An effect without an estimate is a table row with its note, not a bar; a fit without
    # an interval shows none.
    e = chain.study.effects[1]
    chain.study.effects[1] = EffectEntry(e.backend, e.metric, e.control, e.treatment,
                                         note="1 complete pair(s); need at least 2")
    depth.study.depth[2].fit.k_ci_low = None
    out = build_report(None, [chain, depth], out=tmp_path / "partial.html")
    page = parse(out.read_text())
    assert len(page.imgs["studies"]) == 2
    missing = page.cells["jax.jit/process_ttfg_s"]
    assert missing[3] == "–" and missing[-1].startswith("1 complete")
    assert page.cells["torch.eager/first_grad_s"][3] == ""


def test_study_report_renders_in_a_browser(tmp_path):
    """Study files alone make a report: no trends, a Studies section that Chromium draws without errors."""
    runs = [load(STUDY_DATA / "study-chain.json"), load(STUDY_DATA / "study-depth.json")]
    out = build_report(None, runs, out=tmp_path / "index.html")
    page = parse(out.read_text())
    assert len(page.imgs["studies"]) == 2 and not page.rows.get("summary")
    if not CHROMIUM:
        pytest.skip("Chromium is not installed (apt-get install -y chromium); structure checked, rendering not")
    png, log = screenshot(out, tmp_path, height=3000, expect=('id="studies"',))
    from PIL import Image

    pixels = np.asarray(Image.open(png).convert("RGB"))
    teal = np.all(np.abs(pixels.astype(int) - (0x1a, 0x9e, 0x9e)) < 12, axis=2)  # autograd's line
    assert teal.sum() > 500, "the depth plot is not on screen"
    console = [line for line in log.splitlines() if "CONSOLE" in line or "Uncaught" in line]
    assert not console, console
