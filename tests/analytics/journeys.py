"""Nine weeks of visits, placed by hand for the `retention` and `paths` tests (the tests work
their figures out from the comments here). Weeks are counted back from the current one (0) in
the site's zone, Europe/Berlin; every visit lies at the current week's time of week, 20 minutes
before now, so week 0's visits have happened and each lies in its week.

  A  first visit week -7, back every week to 0; "/" each time, and in week -4
     "/", "/pricing", "/signup", goal Signup
  B  first visit week -6 ("/blog", "/"), never back
  C  first visit week -8, before the default range: "/"; back in weeks -5 ("/docs") and -3
     ("/docs", "/docs/install")
  D  first visit week -5 from DE: "/", "/" (a reload), "/pricing", "/docs", "/pricing" (twice
     with a page between), goal Signup; back in week -3: "/pricing", "/signup"
  E  first visit week -2: "/blog"; back in week -1: "/blog", "/pricing", goal Signup

WEIGHTED, stored beside them by the tests of weights, each event weighing 2 (a site sampled at
1 in 2):
  F  first visit week -1: "/pricing", "/docs"; back in week 0: "/"
"""
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from models import Site
from tests.analytics.test_funnel import row, store

ZONE = "Europe/Berlin"
# visitor -> [(week, [(kind, page or goal name), ...])]
VISITS: dict[str, list[tuple[int, list[tuple[str, str]]]]] = {
    "A": [(week, [("pageview", "/")]) for week in (-7, -6, -5, -3, -2, -1, 0)]
    + [(-4, [("pageview", "/"), ("pageview", "/pricing"), ("pageview", "/signup"),
             ("goal", "Signup")])],
    "B": [(-6, [("pageview", "/blog"), ("pageview", "/")])],
    "C": [(-8, [("pageview", "/")]), (-5, [("pageview", "/docs")]),
          (-3, [("pageview", "/docs"), ("pageview", "/docs/install")])],
    "D": [(-5, [("pageview", "/"), ("pageview", "/"), ("pageview", "/pricing"),
                ("pageview", "/docs"), ("pageview", "/pricing"), ("goal", "Signup")]),
          (-3, [("pageview", "/pricing"), ("pageview", "/signup")])],
    "E": [(-2, [("pageview", "/blog")]),
          (-1, [("pageview", "/blog"), ("pageview", "/pricing"), ("goal", "Signup")])],
}

WEIGHTED = {"F": [(-1, [("pageview", "/pricing"), ("pageview", "/docs")]),
                  (0, [("pageview", "/")])]}


def today() -> date:
    return datetime.now(UTC).astimezone(ZoneInfo(ZONE)).date()


def week_start(weeks_back: int) -> str:
    """The Monday (YYYY-MM-DD) of the week `weeks_back` before the current one, local."""
    return (today() - timedelta(days=today().weekday(), weeks=weeks_back)).isoformat()


def place(site: Site, visits: dict[str, Any] | None = None, weight: float = 1.0) -> None:
    """Store `visits` (VISITS) for `site` (its zone set to ZONE), each event of `weight`, and
    merge them into the rollups."""
    now = datetime.now(UTC).astimezone(ZoneInfo(ZONE))
    since_monday = now - now.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(
        days=now.weekday())
    if since_monday < timedelta(minutes=30):
        pytest.skip("the week began less than 30 minutes ago: week 0 has no past to place in")
    site.timezone = ZONE
    site.save()
    rows: list[dict[str, Any]] = []
    for visitor, placed in (VISITS if visits is None else visits).items():
        for week, nodes in placed:
            # the same wall-clock time of week, `week` weeks back (local, across DST)
            local = (now + timedelta(weeks=week) - timedelta(minutes=20)).replace(tzinfo=None)
            start = local.replace(tzinfo=ZoneInfo(ZONE)).astimezone(UTC).replace(tzinfo=None)
            session = f"{visitor}{week}"
            country = "DE" if (visitor, week) == ("D", -5) else None
            for index, (kind, value) in enumerate(nodes):
                at = start + timedelta(minutes=index)
                rows.append(row(site, session, visitor, kind, at, path=value, country=country,
                                weight=weight)
                            if kind == "pageview" else
                            row(site, session, visitor, kind, at, path="/", name=value,
                                country=country, weight=weight))
    store(rows)
