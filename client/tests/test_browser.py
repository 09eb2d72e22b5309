"""The report page in headless Chromium (bookworm's chromium and
chromium-driver, driven by selenium with the driver's path given, so nothing
is downloaded): no console error, every chart drawn with the series and
points the report embeds, a screenshot that is not blank."""

from __future__ import annotations

import io
import os
import pathlib
import time

import matplotlib.image
import pytest

from pg_chronicle import cli as pg_chronicle_cli

import report_runs
from conftest import Server

# What this checks does not depend on the server's version: tools/test.sh
# runs it against the newest one only.
pytestmark = pytest.mark.one_version

CHROMIUM = os.environ.get("PG_CHRONICLE_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("PG_CHRONICLE_CHROMEDRIVER", "/usr/bin/chromedriver")

webdriver = pytest.importorskip("selenium.webdriver")
if not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)):
    pytest.skip(f"no {CHROMIUM} and {CHROMEDRIVER} (apt-get install chromium chromium-driver)",
                allow_module_level=True)


@pytest.fixture(scope="module")
def runs(server: Server, tmp_path_factory: pytest.TempPathFactory) -> report_runs.ReportRuns:
    return report_runs.get(server, tmp_path_factory.mktemp("report"))


@pytest.fixture(scope="module")
def browser():
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1400,1800", "--hide-scrollbars"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    yield d
    d.quit()


def _open(browser, index: pathlib.Path) -> list[dict]:
    browser.get(index.as_uri())
    deadline = time.monotonic() + 30
    while not browser.execute_script("return window.__ready === true"):
        assert time.monotonic() < deadline, "the page never finished drawing"
        time.sleep(0.1)
    return browser.execute_script("return window.__charts")


def _check_page(browser, index: pathlib.Path) -> None:
    charts = _open(browser, index)
    logs = browser.get_log("browser")
    assert [e for e in logs if e["level"] in ("SEVERE", "WARNING")] == [], logs
    assert browser.execute_script("return window.__errors") == []
    data = report_runs.report_data(index)
    want = {c["id"]: c for p in data["panels"] for c in p["charts"]}
    assert [c["id"] for c in charts] == list(want), "every chart of the data is on the page"
    for c in charts:
        w = want[c["id"]]
        # what uPlot holds is what the report embeds
        assert c["uSeries"] == len(w["series"]), c["id"]
        assert c["uPoints"] == len(w["x"]), c["id"]
        assert c["nonnull"] == [sum(v is not None for v in s["values"]) for s in w["series"]]
        assert c["draws"] >= 1 and c["width"] > 300 and c["height"] > 100, c
    shot = matplotlib.image.imread(io.BytesIO(browser.get_screenshot_as_png()), format="png")
    assert float(shot[..., :3].std()) > 0.05, "the screenshot is not blank"


def test_single_run_page(browser, server: Server, runs: report_runs.ReportRuns) -> None:
    _check_page(browser, runs.report_a / "index.html")
    n = report_runs.intervals_of(server, runs.a)
    charts = browser.execute_script("return window.__charts")
    assert all(c["uPoints"] == n for c in charts if c["kind"] == "time")
    # the slowest intervals shaded: those that stand out (the table's marked rows), no other
    slow = next(t for p in report_runs.report_data(runs.report_a / "index.html")["panels"]
                for t in p["tables"] if t["id"] == "slowest.table")
    shaded = browser.execute_script("return window.__slow")
    assert [(s["x0"], s["x1"], s["rank"]) for s in shaded] == \
        [(slow["x_start"][i], slow["x"][i], slow["rows"][i][0]) for i in slow["marked"]]


def test_page_without_pgbench_log(browser, runs: report_runs.ReportRuns) -> None:
    _check_page(browser, runs.report_nolog / "index.html")
    # a query text that is markup is shown as text, never run
    text = browser.execute_script(
        "return document.getElementById('table-statements.top').textContent")
    assert report_runs.MARKUP in text
    assert browser.execute_script("return document.getElementsByTagName('img').length") == 0
    assert browser.execute_script("return window.__pwned === undefined")


def test_comparison_page(browser, runs: report_runs.ReportRuns) -> None:
    _check_page(browser, runs.report_vs / "index.html")


def test_pages_of_untrusted_text(browser, server: Server, tmp_path_factory: pytest.TempPathFactory,
                                 tmp_path: pathlib.Path) -> None:
    """Markup, "<!--<script", the page's placeholders and control characters
    in a run's label, meta, settings and statements: every panel is on the
    page, the text shown as it is."""
    runs = report_runs.untrusted(server, tmp_path_factory.mktemp("untrusted"))
    for d, h1 in ((runs.report, runs.a), (runs.report_vs, f"{runs.a}  vs  {runs.b}")):
        _check_page(browser, d / "index.html")
        panels = report_runs.report_data(d / "index.html")["panels"]
        assert browser.execute_script("return document.querySelectorAll('main > section').length") \
            == len(panels)
        assert browser.execute_script("return document.querySelector('h1').textContent") \
            == f"pg_chronicle: {h1}"
    # the mark's text shows when the cursor is on its line, as text
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    _open(browser, runs.report / "index.html")
    data = report_runs.report_data(runs.report / "index.html")
    mark = next(m for p in data["panels"] for c in p["charts"] if c["id"] == "throughput.tps"
                for m in c["marks"] if m["kind"] == "mark")
    over = browser.find_element(By.CSS_SELECTOR, "#chart-throughput\\.tps .u-over")
    x = browser.execute_script("return window.__xpos['throughput.tps'](arguments[0])", mark["x"])
    ActionChains(browser).move_to_element_with_offset(over, int(x - over.size["width"] / 2), 0).perform()
    tip = browser.find_element(By.CSS_SELECTOR, "#chart-throughput\\.tps .mark-tip")
    assert tip.is_displayed() and tip.get_attribute("textContent") == report_runs.UNTRUSTED
    assert browser.execute_script("return window.__pwned === undefined")
    # a panel whose picture could not be drawn says so
    with report_runs.failing_picture("waits"):
        assert pg_chronicle_cli.main(["-d", server.conninfo, "report", runs.a,
                                      "-o", str(tmp_path)]) == 0
    _open(browser, tmp_path / "index.html")
    text = browser.execute_script("return document.getElementById('panel-waits').textContent")
    assert ("The picture of this panel (waits.png, waits.svg) could not be drawn: "
            + report_runs.PICTURE_FAILURE) in text
