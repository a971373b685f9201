"""The report's pages as a person sees them, in headless Chromium, opened from file:// with
every other request aborted: no console error, every image decoded, the leaderboard sorted by
a click, payloads shown as text and never run, no horizontal scroll at 390 and 1280 px."""

from __future__ import annotations

import csv
import io
import shutil

import pytest

from mixlab.league import calibration
from tests.report.conftest import open_page, screenshot
from tests.report.fixtures import PAYLOADS, hostile_run, mixlab, tiny_league, toy_run

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """league.html of a tiny league (written by mixlab league), and the report of a run, of a
    hostile run, of a sweep-like comparison and of a league whose table holds payloads."""
    root = tmp_path_factory.mktemp("report")
    league = tiny_league(root / "league")
    hostile = hostile_run(root / "hostile")
    run_a, run_b = toy_run(root / "a"), toy_run(root / "b", step=2.0)
    mixlab("report", run_a, "-o", root / "run.html")
    mixlab("report", hostile, "-o", root / "hostile.html")
    mixlab("report", run_a, run_b, "-o", root / "compare.html")
    bad = root / "bad-league"           # the league's files, its sampler names replaced
    bad.mkdir()
    for name in ("league.json", "league.png"):
        shutil.copy(league / name, bad / name)
    rows = list(csv.DictReader(io.StringIO((league / "league.csv").read_text())))
    for r, p in zip(rows, [PAYLOADS["script"], PAYLOADS["onerror"]] * len(rows)):
        r["sampler"], r["note"] = p, p
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)
    (bad / "league.csv").write_text(buf.getvalue())
    mixlab("report", bad, "-o", root / "bad-league.html")
    long = root / "long-league"         # one target, 80 samplers: longer than a screen
    long.mkdir()
    for name in ("league.json", "league.png"):
        shutil.copy(league / name, long / name)
    rows = [{**rows[0], "sampler": f"sampler-{i:02d}", "time_rank": str(i + 1)}
            for i in range(80)]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)
    (long / "league.csv").write_text(buf.getvalue())
    mixlab("report", long, "-o", root / "long-league.html")
    cal = root / "calibration-league"   # the league's files and a calibration table whose
    cal.mkdir()                         # sampler labels are payloads
    for name in ("league.json", "league.png", "league.csv"):
        shutil.copy(league / name, cal / name)
    (cal / "calibration.csv").write_text(calibration.csv_text(
        [(t, 6, 1, 5, 0, 5, 2, 3, 0, PAYLOADS["script"], PAYLOADS["onerror"] + " (not mixed)")
         for t in dict.fromkeys(r["target"] for r in csv.DictReader(
             io.StringIO((league / "league.csv").read_text())))]))
    mixlab("report", cal, "-o", root / "calibration-league.html")
    return {"long-league": root / "long-league.html", "league": league / "league.html",
            "run": root / "run.html", "hostile": root / "hostile.html",
            "compare": root / "compare.html", "bad-league": root / "bad-league.html",
            "calibration-league": root / "calibration-league.html"}


@pytest.mark.parametrize("name", ["league", "run", "hostile", "compare", "bad-league",
                                  "calibration-league"])
def test_no_console_error_no_fetch_and_every_image_decoded(browser, pages, name):
    o = open_page(browser, pages[name])
    try:
        images = o.page.evaluate("Array.from(document.images).map(i => [i.complete, "
                                 "i.naturalWidth, i.alt])")
        assert images or name == "hostile", "the page shows no figure"
        assert all(done and w > 0 and alt for done, w, alt in images), images
        assert o.errors == [] and o.blocked == [] and o.dialogs == []
    finally:
        o.page.close()


def _column(page, table: int, col: int) -> list[str]:
    return page.evaluate(
        f"Array.from(document.querySelectorAll('table.sortable')[{table}].tBodies[0].rows)"
        f".map(r => r.cells[{col}].textContent.trim())")


def test_clicking_a_header_sorts_the_leaderboard(browser, pages):
    o = open_page(browser, pages["league"])
    try:
        page = o.page
        heads = page.locator("table.sortable").first.locator("thead th button")
        names = [t.strip() for t in heads.all_inner_texts()]
        sampler, error = names.index("sampler"), names.index("error @ equal time")
        heads.nth(sampler).click()
        assert _column(page, 0, sampler) == sorted(_column(page, 0, sampler))
        heads.nth(sampler).click()
        assert _column(page, 0, sampler) == sorted(_column(page, 0, sampler), reverse=True)
        heads.nth(error).click()                     # numbers, by their data-sort value
        values = [float(v.split()[0]) for v in _column(page, 0, error)]
        assert values == sorted(values) and len(values) == 2
        heads.nth(error).click()
        values = [float(v.split()[0]) for v in _column(page, 0, error)]
        assert values == sorted(values, reverse=True)
        assert page.locator("table.sortable").first.locator("th[aria-sort]").count() == 1
        assert o.errors == []
    finally:
        o.page.close()


@pytest.mark.parametrize("name", ["hostile", "bad-league", "calibration-league"])
def test_payloads_show_as_text_and_never_run(browser, pages, name):
    o = open_page(browser, pages[name])
    try:
        page = o.page
        text = page.inner_text("body")
        for payload in PAYLOADS.values():
            assert payload in text or payload.replace("/", "|") in text
        assert page.evaluate("window.__pwned") is None
        assert page.locator("img[src=x]").count() == 0
        assert page.locator("script").count() == 1          # the page's own sorter
        assert o.dialogs == [] and o.errors == []
        if name == "hostile":                               # a long value says where it was cut
            assert "[cut: 3,000 more characters]" in text
    finally:
        o.page.close()


@pytest.mark.parametrize("name", ["league", "run", "compare", "calibration-league"])
@pytest.mark.parametrize("width", [390, 1280])
def test_no_horizontal_scroll_of_the_body(browser, pages, name, width):
    o = open_page(browser, pages[name], width=width)
    try:
        scroll, inner = o.page.evaluate(
            "[document.documentElement.scrollWidth, window.innerWidth]")
        screenshot(o, f"{name}-{width}")
        assert scroll <= inner, f"{name} at {width} px scrolls sideways ({scroll} px)"
        sticky = o.page.evaluate("getComputedStyle(document.querySelector('thead th'))"
                                 ".position")
        assert sticky == "sticky"
    finally:
        o.page.close()


def test_a_table_longer_than_a_screen_keeps_its_header_in_view(browser, pages):
    o = open_page(browser, pages["long-league"], width=390, height=700)
    try:
        page = o.page
        box = page.locator(".scroll.tall").first
        assert box.evaluate("b => b.scrollHeight > b.clientHeight + 1000")  # it does scroll
        box.evaluate("b => { b.scrollIntoView(); b.scrollTop = 1500; }")
        top = box.evaluate("b => b.getBoundingClientRect().top")
        head = page.locator("table.sortable thead th").first
        assert abs(head.evaluate("h => h.getBoundingClientRect().top") - top) <= 2
        first_row = page.locator("table.sortable tbody tr").first
        assert first_row.evaluate("r => r.getBoundingClientRect().bottom") < top  # scrolled by
        assert o.errors == []
    finally:
        o.page.close()


def test_a_calibration_league_shows_its_calibration_table_first(browser, pages):
    """The false alarms and misses of a calibration league, above the leaderboards, with the
    sentence summing them over the targets."""
    o = open_page(browser, pages["calibration-league"])
    try:
        page = o.page
        assert page.locator("h2").first.inner_text() == "Calibration"
        n = page.locator("h2[id^=target-]").count()                 # the leaderboards
        assert n >= 1
        table = page.locator("table.sortable").first
        assert table.locator("thead th").all_inner_texts()[4] == "correct biased (false)"
        assert table.locator("tbody tr").count() == n                # one row per target
        assert (f"All targets: 0 of {6 * n} correct-sampler cells biased; {2 * n} of {5 * n} "
                f"wrong-sampler cells biased, {3 * n} not mixed, 0 ok.") in page.inner_text("body")
        assert o.errors == []
    finally:
        o.page.close()
