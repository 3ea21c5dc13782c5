"""The visit context through HTTP: a browser request's events carry it, a backend's do not;
every event has its path and host, page views their acquisition values; hostile headers are
stored as nulls, never refused (both endpoints, both backends)."""
from pathlib import Path

import orjson
import pytest

from app.context.request import RequestContext
from app.tracking import store
from models import Event
from tests.fixtures.context import (
    GERMAN_ADDRESS,
    ORIGIN,
    PHONE_CONTEXT,
    PHONE_HEADERS,
    SAFARI_IPAD,
    write_mmdb,
)
from tests.fixtures.database import BACKEND
from tests.fixtures.helpers import db
from tests.fixtures.tracking import batch, event, goal, store_rows, stored_events

CONTEXT_COLUMNS = ("country", "device", "browser", "browser_version", "os", "os_version",
                   "language", "screen")
ACQUISITION_COLUMNS = ("source", "channel", "referrer_url", "utm_source", "utm_medium",
                       "utm_campaign", "utm_content", "utm_term")


def post(client, path: str, body: dict, key: str, headers: dict[str, str] | None = None,
         address: str = GERMAN_ADDRESS, environ: dict[str, str] | None = None):
    return client.post(path, data=orjson.dumps(body), content_type="application/json",
                       headers={"X-API-Key": key, **(headers or {})},
                       environ_base={"REMOTE_ADDR": address, **(environ or {})})


def context_of(row: Event) -> tuple:
    return tuple(getattr(row, name) for name in CONTEXT_COLUMNS)


def acquisition_of(row: Event) -> tuple:
    return tuple(getattr(row, name) for name in ACQUISITION_COLUMNS)


def landing_batch(**fields) -> dict:
    """A page view from a Google ad with every UTM tag and a click id, then a click."""
    return batch([
        event("pageview", pageUrl="https://www.std.example/pricing?utm_source=google"
              "&utm_medium=cpc&utm_campaign=spring&utm_content=hero&utm_term=shoes"
              "&gclid=CLICK-ID-VALUE#plans",
              referrer="https://www.google.com/search?q=shoes"),
        event("click", pageUrl="https://www.std.example/pricing?utm_source=google",
              referrer="https://www.google.com/"),
    ], **fields)


def test_a_browser_batch_carries_the_request_context(client, app, std_site):
    body = landing_batch(fingerprint={"screenWidth": 412, "canvas": "ignored"})
    response = post(client, "/api/events", body, std_site.write_key,
                    {"Origin": ORIGIN, **PHONE_HEADERS})
    assert response.status_code == 200, response.get_data()
    pageview, click = stored_events(app)
    assert context_of(pageview) == context_of(click) == PHONE_CONTEXT
    assert (pageview.path, pageview.hostname) == (click.path, click.hostname) == (
        "/pricing", "std.example")
    assert acquisition_of(pageview) == ("google", "Paid Search", "https://www.google.com/search",
                                        "google", "cpc", "spring", "hero", "shoes")
    assert acquisition_of(click) == (None,) * len(ACQUISITION_COLUMNS)
    assert pageview.page_url == body["events"][0]["pageUrl"]  # stored as sent


def test_a_backend_batch_has_no_request_context_but_its_pages(client, app, std_site):
    body = landing_batch(fingerprint={"screenWidth": 412})
    response = post(client, "/api/events", body, std_site.write_key, PHONE_HEADERS)
    assert response.status_code == 200
    pageview, click = stored_events(app)
    assert context_of(pageview) == context_of(click) == (None,) * len(CONTEXT_COLUMNS)
    assert (pageview.path, pageview.hostname, click.path) == ("/pricing", "std.example",
                                                              "/pricing")
    assert (pageview.source, pageview.channel) == ("google", "Paid Search")
    assert click.source is None


def test_a_browser_goal_carries_the_request_context(client, app, std_site):
    body = goal(page_url="https://shop.std.example/thanks?utm_source=x", referrer=ORIGIN + "/")
    response = post(client, "/api/goals", body, std_site.write_key,
                    {"Origin": ORIGIN, "User-Agent": SAFARI_IPAD, "Accept-Language": "fr-CA"})
    assert response.status_code == 200, response.get_data()
    (row,) = stored_events(app)
    # A goal has no fingerprint: no screen class. Not a page view: no acquisition values.
    assert context_of(row) == ("DE", "Tablet", "Safari", "18", "iOS", "18", "fr", None)
    assert (row.path, row.hostname) == ("/thanks", "shop.std.example")
    assert acquisition_of(row) == (None,) * len(ACQUISITION_COLUMNS)


def test_a_backend_goal_has_none(client, app, std_site):
    response = post(client, "/api/goals", goal(page_url="/checkout"), std_site.write_key,
                    PHONE_HEADERS)
    assert response.status_code == 200
    (row,) = stored_events(app)
    assert context_of(row) == (None,) * len(CONTEXT_COLUMNS)
    assert (row.path, row.hostname) == ("/checkout", None)


def test_the_client_address_is_taken_after_the_trusted_proxies(make_app, std_site):
    client = make_app(TRUSTED_PROXIES=1).test_client()
    post(client, "/api/events", batch(1), std_site.write_key,
         {"Origin": ORIGIN, "X-Forwarded-For": f"8.8.8.8, {GERMAN_ADDRESS}"},
         address="127.0.0.1")
    post(client, "/api/events", batch(1), std_site.write_key, {"Origin": ORIGIN},
         address="127.0.0.1")  # no header: the proxy's own address, loopback
    first, second = stored_events(client.application)
    assert (first.country, second.country) == ("DE", None)


def test_an_operators_geoip_file_names_the_country(make_app, std_site, tmp_path: Path):
    path = write_mmdb(tmp_path / "dbip.mmdb", {"193.99.144.0/24": {"country": {"iso_code": "AT"}}})
    client = make_app(GEOIP_DB=str(path)).test_client()
    post(client, "/api/events", batch(1), std_site.write_key, {"Origin": ORIGIN})
    (row,) = stored_events(client.application)
    assert row.country == "AT"


def test_page_views_in_one_batch_each_have_their_own_acquisition(client, app, std_site):
    body = batch([
        event("pageview", pageUrl="https://std.example/?utm_source=newsletter&utm_medium=email"),
        event("pageview", pageUrl="https://std.example/docs", referrer="https://std.example/"),
        event("pageview", pageUrl="https://std.example/blog", referrer="https://chatgpt.com/"),
    ])
    post(client, "/api/events", body, std_site.write_key, {"Origin": ORIGIN})
    rows = stored_events(app)
    assert [(row.path, row.source, row.channel, row.referrer_url) for row in rows] == [
        ("/", "newsletter", "Email", None),
        ("/docs", "(direct)", "Direct", None),
        ("/blog", "ChatGPT", "AI Assistants", "https://chatgpt.com/"),
    ]


@pytest.mark.skipif(BACKEND != "postgres", reason="group commit is PostgreSQL's")
def test_the_group_statement_stores_each_batchs_own_context(app, std_site):
    phone = RequestContext(*PHONE_CONTEXT)
    tablet = RequestContext(None, "Tablet", "Safari", "18", "iOS", "18", None, "medium")
    rows = [store_rows(std_site.site.id, "g-1", events=2), store_rows(std_site.site.id, "g-2")]
    rows = [store.BatchRows(**{**vars_of(rows[0]), "context": phone}),
            store.BatchRows(**{**vars_of(rows[1]), "context": tablet})]
    with db(app):
        outcomes = store.store_group(rows)
    assert [outcome.stored for outcome in outcomes] == [True, True]
    assert [context_of(row) for row in stored_events(app)] == (
        [PHONE_CONTEXT] * 2 + [(None, "Tablet", "Safari", "18", "iOS", "18", None, "medium")] * 2)


def vars_of(rows: store.BatchRows) -> dict:
    return {name: getattr(rows, name) for name in store.BatchRows.__dataclass_fields__}


# --- bad input: never a 4xx for a header, never a 500 ------------------------------------------

HOSTILE_USER_AGENTS = [
    "x" * 8192,
    "Mozilla/5.0 " + "(Windows NT 10.0; Win64; x64) " * 280,  # 8 KB that starts like a browser
    "Mozilla/5.0 (Windows NT 10.0)\x00Chrome/131.0.0.0",
    # A WSGI environ carries header bytes as latin-1 text (PEP 3333): a lone surrogate's
    # UTF-8 bytes, an emoji's, and an emoji written as a surrogate pair (CESU-8), as they arrive.
    "Mozilla/5.0 (iPhone) \xed\xa0\x80 Safari",
    "Mozilla/5.0 (Linux; Android 14) \xf0\x9f\x98\x80 Chrome/131.0 Mobile",
    "\xed\xa0\xbd\xed\xb8\x80" * 100,
]


@pytest.mark.parametrize("user_agent", HOSTILE_USER_AGENTS)
@pytest.mark.parametrize("path", ["/api/events", "/api/goals"])
def test_a_hostile_user_agent_is_stored_as_what_can_be_read(client, app, std_site, user_agent,
                                                            path):
    body = batch(1) if path == "/api/events" else goal()
    response = post(client, path, body, std_site.write_key, {"Origin": ORIGIN},
                    environ={"HTTP_USER_AGENT": user_agent})
    assert response.status_code == 200, response.get_data()
    (row,) = stored_events(app)
    assert row.country == "DE"
    for name in ("browser", "browser_version", "os", "os_version"):
        value = getattr(row, name)
        assert value is None or (value.isprintable() and len(value) <= 64), (name, value)


@pytest.mark.parametrize("forwarded", [
    ", ".join(f"10.0.{i // 256}.{i % 256}" for i in range(199)) + ", garbage",
    ", ".join(["8.8.8.8"] * 199) + ", fe80::1%eth0",
    "not an address at all",
    "::1%lo, [2001:4860::1]",
    "\x00",
    ", , ,",
    "2001:4860:4860::8888%25eth0",
    ", ".join(["999.999.999.999"] * 200),
])
@pytest.mark.parametrize("path", ["/api/events", "/api/goals"])
def test_an_absurd_forwarded_for_gives_no_country(make_app, std_site, forwarded, path):
    client = make_app(TRUSTED_PROXIES=1).test_client()
    body = batch(1) if path == "/api/events" else goal()
    response = post(client, path, body, std_site.write_key,
                    {"Origin": ORIGIN, "X-Forwarded-For": forwarded}, address="127.0.0.1")
    assert response.status_code == 200, response.get_data()
    (row,) = stored_events(client.application)
    assert row.country is None


def test_the_last_of_200_forwarded_addresses_counts(make_app, std_site):
    client = make_app(TRUSTED_PROXIES=1).test_client()
    forwarded = ", ".join(["garbage"] * 199 + [GERMAN_ADDRESS])
    post(client, "/api/events", batch(1), std_site.write_key,
         {"Origin": ORIGIN, "X-Forwarded-For": forwarded}, address="127.0.0.1")
    (row,) = stored_events(client.application)
    assert row.country == "DE"


@pytest.mark.parametrize(("accept_language", "expected"), [
    ("x" * 10_240, None),
    ("pt-BR," + ",".join(["en;q=0.1"] * 1100), "pt"),
    ("*", None),
    ("\xed\xa0\x80de", None),
])
@pytest.mark.parametrize("path", ["/api/events", "/api/goals"])
def test_a_huge_or_strange_accept_language(client, app, std_site, accept_language, expected,
                                           path):
    body = batch(1) if path == "/api/events" else goal()
    response = post(client, path, body, std_site.write_key, {"Origin": ORIGIN},
                    environ={"HTTP_ACCEPT_LANGUAGE": accept_language})
    assert response.status_code == 200, response.get_data()
    (row,) = stored_events(app)
    assert row.language == expected


@pytest.mark.parametrize("fingerprint", [
    {"screenWidth": -5}, {"screenWidth": "wide"}, {"screenWidth": 1e308},
    {"screenWidth": {"nested": [1, 2]}}, {"other": "x"}, None])
def test_a_strange_fingerprint_is_no_error(client, app, std_site, fingerprint):
    response = post(client, "/api/events", batch(1, fingerprint=fingerprint), std_site.write_key,
                    {"Origin": ORIGIN})
    assert response.status_code == 200, response.get_data()
    (row,) = stored_events(app)
    assert row.screen == ("xlarge" if fingerprint == {"screenWidth": 1e308} else None)


@pytest.mark.parametrize("page_url", [
    "https://std.example/?utm_source=%00&utm_campaign=a%00b",
    "https://std.example/?utm_source=%ED%A0%80",
    "http://[::1/x?utm_source=a",
    "https://" + "a" * 300 + "/x",
])
def test_a_strange_page_url_is_stored_with_nulls(client, app, std_site, page_url):
    body = batch([event("pageview", pageUrl=page_url, referrer="http://[broken")])
    response = post(client, "/api/events", body, std_site.write_key, {"Origin": ORIGIN})
    assert response.status_code == 200, response.get_data()
    (row,) = stored_events(app)
    assert row.page_url == page_url
    assert row.utm_campaign is None and row.referrer_url is None
