"""Why a dimension has no value for most of the visitors of an answer (the row whose value is
null, or `(direct)` for visit:source), said in `warnings` from what the database holds.

- utm_*: the visit's entry page had no such parameter in its URL.
- referrer, source: the visit came without a referrer from another site.
- country and the browser's context (device, browser, OS, language, screen): how many of those
  visitors' visits came without a browser's context at all (no device: a request without an
  Origin header, from a backend or curl, or without a User-Agent), read from the visits; the
  others came from browsers, whose address had no country (private, reserved or unknown:
  typically a local network, or egis behind a proxy whose hops EGIS_TRUSTED_PROXIES does not
  trust) or which did not send what the value is read from.
"""
from typing import Any

from app.analytics.filters import parse_filters
from app.analytics.numbers import percent
from app.analytics.period import Period
from app.analytics.query.arguments import Query
from app.analytics.query.figures import Figures, read_figures
from app.analytics.vocabulary import DIRECT, Dimension
from models import Site

NO_BROWSER = "visit:device"  # null exactly when a visit's first page view had no browser context


def _empty_value(d: Dimension) -> str | None:
    return DIRECT if d.name == "visit:source" else None


def _visitors(site: Site, period: Period, query: Query, extra: list[Any]) -> float:
    """The visitors of the query's filters and `extra` ones, without dimensions."""
    found = read_figures(site, period, Query(
        ("visitors",), (), (*query.filters, *parse_filters(extra))))
    return found.totals["sums"]["visitors"]


def _shares(site: Site, period: Period, query: Query, main: Figures, at: int,
            d: Dimension) -> tuple[float, float]:
    """(the visitors without a value of `d`, all visitors of the query). With `visitors` among
    the metrics, the rows without a value say it (one dimension), or bound it from above (a
    visitor may be in several of them): no statement unless that bound is most of them."""
    empty = _empty_value(d)
    if "visitors" in query.metrics:
        everyone = main.totals["sums"]["visitors"]
        at_most = sum(row["sums"]["visitors"] for row in main.rows if row["key"][at] == empty)
        if len(query.dimensions) == 1 or at_most * 2 <= everyone:
            return at_most, everyone
        return _visitors(site, period, query, [["is", d.name, [empty]]]), everyone
    return (_visitors(site, period, query, [["is", d.name, [empty]]]),
            _visitors(site, period, query, []))


def _reason(site: Site, period: Period, query: Query, d: Dimension, without: float) -> str:
    if d.missing == "utm":
        return f"their visit's entry page had no {d.column} parameter in its URL"
    if d.missing == "referrer":
        return ("their visits came without a referrer from another site (none was sent, or "
                "it was a page of the site itself)")
    backend = without if d.name == NO_BROWSER else _visitors(
        site, period, query, [["is", d.name, [None]], ["is", NO_BROWSER, [None]]])
    browsers = max(0, round(without) - round(backend))
    from_browsers = ("an address of no country: private or reserved (a local network, or a "
                     "proxy whose hops EGIS_TRUSTED_PROXIES does not trust) or unknown"
                     if d.missing == "address" else "no value for it (what it is read from "
                     "was not sent: User-Agent, Accept-Language, the tracker's screen width)")
    return (f"{round(backend):,} came without a browser's context (requests without an "
            f"Origin header, from a backend or curl, or without a User-Agent), {browsers:,} "
            f"from browsers with {from_browsers}")


def null_row_warnings(site: Site, period: Period, query: Query, main: Figures) -> list[str]:
    """A sentence per dimension whose empty value holds most of the query's visitors."""
    warnings = []
    for at, d in enumerate(query.dimensions):
        empty = _empty_value(d)
        if d.missing is None or not any(row["key"][at] == empty for row in main.rows):
            continue
        without, everyone = _shares(site, period, query, main, at, d)
        if not everyone or without * 2 <= everyone:
            continue
        shown = "(direct)" if empty else "null"
        warnings.append(f"{d.name} is {shown} for {round(without):,} of {round(everyone):,} "
                        f"visitors ({percent(without, everyone)} %): "
                        f"{_reason(site, period, query, d, without)}.")
    return warnings
