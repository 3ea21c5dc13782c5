"""The chart apps drawn in Chromium from real egis results, hosted by the official AppBridge.

Each case loads an app from egis's `resources/read` into the spec's double iframe (host page,
sandbox proxy on a second origin under the spec's CSP, the app inside), hands it a real result of
the live egis, and reads what a screen reader gets (the chart's accessible table and label); no
console error may appear in any frame, and a screenshot of each case is kept in the test's
temporary directory (tmp_path/screenshots).
"""
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Frame, Page

from tests.fixtures.charts import DAY, DAYS, DOMAIN, Egis, app_frame, screenshot_dir, table_of

pytestmark = pytest.mark.slow

FROM, TO = DAY.isoformat(), (DAY + timedelta(days=DAYS - 1)).isoformat()
BEFORE = (DAY - timedelta(days=DAYS)).isoformat(), (DAY - timedelta(days=1)).isoformat()
LIGHT = {"theme": "light", "locale": "en-US", "platform": "web", "displayMode": "inline"}


class Hosted:
    """The host page in Chromium with one app shown; what the test reads from it."""

    def __init__(self, page: Page, errors: list[str], shots: Path) -> None:
        self.page, self.errors, self.shots = page, errors, shots

    @property
    def app(self) -> Frame:
        return app_frame(self.page)

    def table(self) -> list[list[str]]:
        return table_of(self.app)

    def accessible(self) -> str:
        return self.app.locator("main").aria_snapshot()

    def shot(self, name: str) -> Path:
        path = self.shots / f"{name}.png"
        self.page.locator("#host").screenshot(path=str(path))
        return path


@pytest.fixture
def show(browser: Browser, hosting, egis: Egis, tmp_path: Path) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 800, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda message: message.type == "error" and errors.append(message.text))
    page.on("pageerror", lambda error: errors.append(str(error)))
    calls: list[tuple[str, dict[str, Any]]] = []

    answered: list[dict[str, Any]] = []

    def call_tool(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        calls.append((name, arguments))
        answered.append(egis.call(name, arguments))
        return answered[-1]

    page.expose_function("egisCallTool", call_tool)

    def open_app(uri: str, tool: str, arguments: dict[str, Any],
                 host_context: dict[str, Any] = LIGHT, width: int = 720) -> Hosted:
        served = hosting(uri)
        result = egis.call(tool, arguments)
        page.goto(served["host"])
        app_info = page.evaluate("(options) => window.egisHost.show(options)", {
            "sandboxUrl": served["sandbox"], "html": served["html"], "csp": served["csp"],
            "args": arguments, "result": result, "hostContext": host_context, "width": width})
        assert app_info["name"] == f"egis-{tool}-chart"
        hosted = Hosted(page, errors, screenshot_dir(tmp_path))
        hosted.result, hosted.calls = result["structuredContent"], calls
        hosted.calls_answered = answered
        hosted.app.wait_for_selector("main header")
        return hosted

    yield open_app
    context.close()


def figure(value: Any) -> str:
    return "–" if value is None else f"{value:,}"


def change(value: float | None, unit: str = "%", before: float | None = None) -> str:
    if value is None:
        return "no change to compute from 0" if before == 0 else "no change to compute"
    sign = "+" if value > 0 else "−" if value < 0 else "±"
    return f"{sign}{abs(value):.1f}{unit}"


def no_errors(hosted: Hosted) -> None:
    hosted.app.evaluate("() => new Promise(requestAnimationFrame)")
    assert hosted.errors == []


def test_console_errors_of_the_app_frame_are_seen(show):
    """The check the other tests rely on: an error logged inside the app reaches the test."""
    hosted = show("ui://egis/query", "query", {"metrics": ["visitors"], "from": FROM, "to": TO})
    no_errors(hosted)
    hosted.app.evaluate("() => console.error('probe')")
    hosted.page.wait_for_timeout(50)
    assert hosted.errors == ["probe"]


def test_time_series_with_comparison(show):
    hosted = show("ui://egis/query", "query", {
        "metrics": ["visitors", "pageviews"], "dimensions": ["time:day"], "from": FROM,
        "to": TO, "compare": "previous_period"})
    result = hosted.result
    assert len(result["results"]) == DAYS
    assert (result["comparison"]["from"], result["comparison"]["to"]) == BEFORE
    header, *rows = hosted.table()
    assert header == ["Day", "Visitors", "Comparison", "Change"]
    assert rows == [[row["dimensions"][0], figure(row["metrics"][0]),
                     figure(row["comparison"]["metrics"][0]),
                     change(row["comparison"]["change"][0])] for row in result["results"]]
    text = hosted.accessible()
    assert (f"Line chart: Visitors per day, {FROM} to {TO}, the comparison period {BEFORE[0]} "
            f"to {BEFORE[1]} dashed.") in text
    total, before = result["totals"][0], result["comparison"]["totals"][0]
    headline = hosted.app.locator("header .headline").inner_text()
    assert headline == (f"Visitors {total:,}, against {before:,} in {BEFORE[0]} to {BEFORE[1]}"
                        f" ({change(round((total - before) / before * 100, 1))})")
    assert hosted.app.locator("polyline.before").count() >= 1  # the comparison, dashed
    assert hosted.app.locator("polyline.before").first.evaluate(
        "(line) => getComputedStyle(line).strokeDasharray") != "none"
    hosted.shot("time-series-comparison")
    assert hosted.page.evaluate("() => window.egisHost.teardown()") == {}  # answered, as asked
    no_errors(hosted)


def test_two_metrics_switched(show):
    hosted = show("ui://egis/query", "query", {
        "metrics": ["visitors", "pageviews"], "dimensions": ["time:day"], "from": FROM,
        "to": TO})
    assert hosted.table()[0] == ["Day", "Visitors"]
    hosted.app.get_by_role("button", name="Pageviews").click()
    header, *rows = hosted.table()
    assert header == ["Day", "Pageviews"]
    assert rows == [[row["dimensions"][0], figure(row["metrics"][1])]
                    for row in hosted.result["results"]]
    assert hosted.app.get_by_role("button", name="Pageviews").get_attribute(
        "aria-pressed") == "true"
    assert "Line chart: Pageviews per day" in hosted.accessible()
    hosted.shot("metric-switched")
    no_errors(hosted)


def test_breakdown_top_rows_and_the_rest(show):
    hosted = show("ui://egis/query", "query", {
        "metrics": ["visits"], "dimensions": ["visit:source"], "from": FROM, "to": TO})
    result = hosted.result
    assert len(result["results"]) == 11
    ordered = sorted(result["results"], key=lambda row: -row["metrics"][0])
    header, *rows = hosted.table()
    assert header == ["Source", "Visits"]
    assert rows[:8] == [[row["dimensions"][0], figure(row["metrics"][0])]
                        for row in ordered[:8]]
    assert rows[8] == ["Other (3)", figure(sum(row["metrics"][0] for row in ordered[8:]))]
    assert f"Bar chart: Visits by Source, {FROM} to {TO}." in hosted.accessible()
    assert hosted.app.locator("rect.bar").count() == 9
    hosted.shot("breakdown")
    no_errors(hosted)


def test_funnel_steps_and_dropoff(show):
    hosted = show("ui://egis/funnel", "funnel", {
        "steps": [{"page": "/", "label": "Home"}, {"page": "/pricing", "label": "Pricing"},
                  {"goal": "Signup"}], "from": FROM, "to": TO})
    steps = hosted.result["steps"]
    assert steps[0]["count"] > steps[1]["count"] > steps[2]["count"] > 0
    header, *rows = hosted.table()
    assert header == ["Step", "Visits", "Of step 1", "Of the step before", "Dropped off"]
    assert rows == [[f"{i + 1}. {step['label']}", figure(step["count"]),
                     f"{step['conversion_rate']:.1f}%",
                     f"{step['step_conversion_rate']:.1f}%" if i else "",
                     figure(step["dropoff"]) if i else ""] for i, step in enumerate(steps)]
    assert (f"Funnel chart of 3 steps, {FROM} to {TO}: {steps[0]['count']} visits at step 1, "
            f"{steps[2]['count']} ({steps[2]['conversion_rate']:.1f}%) reached the last.") \
        in hosted.accessible()
    hosted.shot("funnel")
    no_errors(hosted)


def test_no_rows_is_said(show):
    hosted = show("ui://egis/query", "query", {
        "metrics": ["visitors"], "dimensions": ["time:day"], "from": "2025-01-01",
        "to": "2025-01-31"})
    assert hosted.result["results"] == []
    assert (f"No data for {DOMAIN} from 2025-01-01 to 2025-01-31 matches this query."
            in hosted.accessible())
    assert hosted.app.locator("svg").count() == 0
    hosted.shot("no-rows")
    no_errors(hosted)


def background(hosted: Hosted) -> str:
    return hosted.app.evaluate("() => getComputedStyle(document.body).backgroundColor")


def test_dark_theme_and_a_change_of_theme(show):
    hosted = show("ui://egis/query", "query", {
        "metrics": ["visits"], "dimensions": ["visit:source"], "from": FROM, "to": TO},
        host_context={**LIGHT, "theme": "dark"})
    assert background(hosted) == "rgb(13, 17, 23)"
    hosted.shot("dark")
    hosted.page.evaluate("() => window.egisHost.setTheme('light')")
    hosted.app.wait_for_function("() => document.documentElement.dataset.theme === 'light'")
    assert background(hosted) == "rgb(255, 255, 255)"
    no_errors(hosted)


@pytest.mark.parametrize(("uri", "tool", "arguments"), [
    ("ui://egis/query", "query", {"metrics": ["visitors", "pageviews", "bounce_rate"],
                                  "dimensions": ["time:day"], "compare": "previous_period"}),
    ("ui://egis/query", "query", {"metrics": ["visits"], "dimensions": ["visit:source"]}),
    ("ui://egis/funnel", "funnel", {"steps": [{"page": "/", "label": "Home page"},
                                              {"page": "/pricing"}, {"goal": "Signup"}]}),
], ids=["line", "bars", "funnel"])
def test_a_360_pixel_container_scrolls_nothing_sideways(show, uri, tool, arguments):
    hosted = show(uri, tool, {**arguments, "from": FROM, "to": TO}, width=360)
    overflow = hosted.app.evaluate("""() => ({
        document: document.documentElement.scrollWidth, view: innerWidth,
        widest: Math.max(...[...document.querySelectorAll('main *')]
            .filter((node) => !node.closest('table'))
            .map((node) => node.getBoundingClientRect().right))})""")
    assert overflow["view"] == 360
    assert overflow["document"] <= 360 and overflow["widest"] <= 360, overflow
    hosted.page.wait_for_function("() => window.egisHost.sizes.length > 0")
    hosted.shot(f"narrow-{tool}-{arguments.get('dimensions', ['steps'])[0].replace(':', '-')}")
    no_errors(hosted)


def test_the_app_asks_query_again_through_the_host(show):
    hosted = show("ui://egis/query", "query", {
        "metrics": ["visitors"], "dimensions": ["time:day"], "from": FROM, "to": TO})
    assert hosted.calls == []
    hosted.app.get_by_role("button", name="30 days").click()
    hosted.app.locator("button[aria-pressed=true]", has_text="30 days").wait_for()
    assert hosted.calls == [("query", {"metrics": ["visitors"], "dimensions": ["time:day"],
                                       "period": "30d"})]
    again = hosted.calls_answered[0]["structuredContent"]
    header, *rows = hosted.table()
    assert header == ["Day", "Visitors"] and len(rows) == 30
    drawn = dict((row[0], row[1]) for row in rows)
    assert again["results"] and all(drawn[row["dimensions"][0]] == figure(row["metrics"][0])
                                    for row in again["results"])
    assert hosted.app.locator(".range").inner_text().endswith(
        f"{again['from']} to {again['to']} · UTC")
    hosted.shot("asked-again")
    no_errors(hosted)


def test_retention_cohort_table_from_a_real_result(show):
    hosted = show("ui://egis/retention", "retention", {
        "interval": "day", "cohort": "any_visit", "intervals": 7, "from": FROM, "to": TO})
    cohorts = hosted.result["cohorts"]
    assert len(cohorts) == DAYS and all(row["visitors"] > 0 for row in cohorts)
    header, *rows = [row for row in hosted.table() if row[0] != "Step"]
    assert header[:3] == ["Cohort", "Visitors", "Day 0"] and len(header) == 2 + 8
    assert [row[:2] for row in rows[:-1]] == [[row["cohort"], figure(row["visitors"])]
                                              for row in cohorts]
    assert rows[-1][0] == "Average"
    # every begun cell says its rate and count, a cell not begun says so
    for row, cohort in zip(rows, cohorts, strict=False):
        begun = [f"{rate:.1f}% ({figure(count)})" for rate, count
                 in zip(cohort["retention_rate"], cohort["retained"], strict=True)]
        assert [cell.replace(", today so far", "") for cell in row[2:2 + len(begun)]] == begun
        assert set(row[2 + len(begun):]) <= {"not started"}
    assert f"Retention table of {DAYS} " in hosted.accessible()
    hosted.shot("retention")
    no_errors(hosted)


def test_paths_steps_and_links_from_a_real_result(show):
    hosted = show("ui://egis/paths", "paths", {"steps": 2, "from": FROM, "to": TO})
    result = hosted.result
    assert result["anchor"] == "(entry)" and result["visits"] > 0
    tables = hosted.table()
    links_at = tables.index(["Step", "From", "To", "Visits"])
    values, links = tables[:links_at], tables[links_at + 1:]
    assert values[0] == ["Step", "Page or goal", "Visits", "Share"]
    shown = {(row[0], row[2]) for row in values[1:]}
    for step in result["steps"]:
        for value in step["values"]:
            assert (f"Step {step['step']}", figure(value["visits"])) in shown
    assert sorted(row[3] for row in links) == sorted(figure(link["visits"])
                                                     for link in result["links"])
    assert f"Paths chart: {figure(result['visits'])} visits" in hosted.accessible()
    hosted.shot("paths")
    no_errors(hosted)
