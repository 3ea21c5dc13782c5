"""POST /api/crawl/report: who crawls the site, without ever keeping the client's address."""
import json
import logging
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from app.crawlers import user_agents
from models import CrawlHit
from tests.fixtures.dns_server import DNSServer
from tests.fixtures.helpers import assert_json_error, cors_headers, database_bytes, post_json, rows

PATH = "/api/crawl/report"

CHROME = ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
          "Chrome/124.0.0.0 Safari/537.36")
CHROME_FULL = ("Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) "
               "SamsungBrowser/24.0 Chrome/117.0.0.0 Mobile Safari/537.36")
GOOGLEBOT = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
BINGBOT = "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)"
GPTBOT = ("Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; "
          "+https://openai.com/gptbot)")
HEADLESS = ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
            "HeadlessChrome/124.0.0.0 Safari/537.36")

# Addresses chosen so their text cannot occur by chance in anything else the tests store.
IPV4 = "198.51.100.173"
IPV6 = "2001:db8:4f2a:1c::7e1"
IPV6_EXPLODED = "2001:0db8:4f2a:001c:0000:0000:0000:07e1"
GOOGLEBOT_IP = "66.249.66.1"
GOOGLEBOT_HOST = "crawl-66-249-66-1.googlebot.com"
BINGBOT_IP = "157.55.39.21"
BINGBOT_HOST = "msnbot-157-55-39-21.search.msn.com"
SPOOFER_IP = "203.0.113.77"


def post(client, site, body, **kwargs):
    return post_json(client, PATH, body, site.server_headers(), **kwargs)


def report(**fields) -> dict:
    built = {"path": "/docs/start", "userAgent": GOOGLEBOT, **fields}
    return {k: v for k, v in built.items() if v is not ...}


def hits(app) -> list[CrawlHit]:
    return rows(app, CrawlHit)


def assert_no_content(response) -> None:
    assert response.status_code == 204, response.get_data()[:300]
    assert response.data == b""
    assert "Content-Type" not in response.headers


# --- recording -----------------------------------------------------------------------------


def test_report_is_recorded_and_answered_204(client, app, std_site):
    body = report(path="/docs/start?utm=x", host="std.example", ip=IPV4,
                  secFetchDest="document", secFetchMode="navigate")
    assert_no_content(post(client, std_site, body))
    (hit,) = hits(app)
    assert hit.site_id == std_site.site.id
    assert (hit.path, hit.host, hit.user_agent) == ("/docs/start", "std.example", GOOGLEBOT)
    assert (hit.crawler, hit.category) == ("Googlebot", "search_engine")
    assert hit.network == "198.51.100.0/24"
    assert (hit.verified, hit.spoofed) == (None, False)  # verification is off by default
    assert (hit.sec_fetch_dest, hit.sec_fetch_mode) == ("document", "navigate")
    assert hit.received_at is not None


def test_only_required_fields(client, app, std_site):
    assert_no_content(post(client, std_site, {"path": "/", "userAgent": GPTBOT}))
    (hit,) = hits(app)
    assert (hit.host, hit.network, hit.sec_fetch_dest, hit.sec_fetch_mode) == (
        None, None, None, None)


def test_free_plan_may_report(client, app, free_site):
    assert_no_content(post(client, free_site, report()))
    assert len(hits(app)) == 1


def test_no_cors_headers(client, std_site):
    response = post_json(client, PATH, report(),
                         std_site.server_headers(Origin="https://std.example"))
    assert_no_content(response)
    assert cors_headers(response) == []


@pytest.mark.parametrize(("sent", "kept"), [
    ("/a?b=1", "/a"),
    ("/a#frag", "/a"),
    ("/a#frag?x=1", "/a"),
    ("/a?x=1#frag", "/a"),
    ("/a/?", "/a/"),
    ("?x=1", "/"),
    ("#top", "/"),
    ("/", "/"),
    ("/ünï/cødé", "/ünï/cødé"),
    ("/search%3Fq", "/search%3Fq"),  # an encoded ? is part of the path
    ("https://std.example/p?q=1", "https://std.example/p"),
])
def test_query_and_fragment_are_cut(client, app, std_site, sent, kept):
    assert_no_content(post(client, std_site, report(path=sent)))
    assert hits(app)[0].path == kept


@pytest.mark.parametrize(("user_agent", "name", "category"), [
    (GOOGLEBOT, "Googlebot", user_agents.SEARCH_ENGINE),
    (BINGBOT, "BingBot", user_agents.SEARCH_ENGINE),
    (GPTBOT, "GPTBot", user_agents.AI_TRAINING),
    ("Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)", "aHrefs Bot",
     user_agents.SEO),
    ("Mozilla/5.0+(compatible; UptimeRobot/2.0; http://www.uptimerobot.com/)", "UptimeRobot",
     user_agents.MONITOR),
    ("python-requests/2.31.0", "Python Requests", user_agents.UNKNOWN),
    (HEADLESS, "HeadlessChrome", user_agents.UNKNOWN),
    ("", None, user_agents.UNKNOWN),
    (CHROME, None, user_agents.UNKNOWN),  # a browser UA the edge found bot-like: who it is unknown
])
def test_crawler_name_and_category(client, app, std_site, user_agent, name, category):
    assert_no_content(post(client, std_site, report(userAgent=user_agent)))
    (hit,) = hits(app)
    assert (hit.crawler, hit.category) == (name, category)
    assert hit.category in user_agents.BOT_CATEGORIES


@pytest.mark.parametrize(("ip", "network"), [
    (IPV4, "198.51.100.0/24"),
    (IPV6, "2001:db8:4f2a::/48"),
    ("::ffff:" + IPV4, "198.51.100.0/24"),
    ("fe80::1%eth0", "fe80::/48"),
    (GOOGLEBOT_IP, "Google"),
    (BINGBOT_IP, "Microsoft"),
    ("17.58.101.9", "Apple"),
    (None, None),
])
def test_network_is_named_from_the_ip(client, app, std_site, ip, network):
    assert_no_content(post(client, std_site, report(ip=ip)))
    assert hits(app)[0].network == network


# --- the navigation rule -------------------------------------------------------------------

@pytest.mark.parametrize(("user_agent", "mode", "dest"), [
    (CHROME, "navigate", "document"),
    (CHROME, "Navigate", "DOCUMENT"),
    (CHROME, " navigate ", "document"),
    (CHROME_FULL, "navigate", "document"),
])
def test_ordinary_browser_navigation_is_ignored(client, app, std_site, user_agent, mode, dest):
    body = report(userAgent=user_agent, secFetchMode=mode, secFetchDest=dest, ip=IPV4)
    assert_no_content(post(client, std_site, body))
    assert hits(app) == []


@pytest.mark.parametrize(("user_agent", "mode", "dest"), [
    (CHROME, "", ""),
    (CHROME, ..., ...),
    (CHROME, None, None),
    (CHROME, "navigate", ""),
    (CHROME, "", "document"),
    (CHROME, "navigate", "iframe"),
    (CHROME, "no-cors", "document"),
    (CHROME, "cors", "empty"),
    (GOOGLEBOT, "navigate", "document"),
    (HEADLESS, "navigate", "document"),
    ("python-requests/2.31.0", "navigate", "document"),
    ("", "navigate", "document"),
])
def test_anything_else_is_recorded(client, app, std_site, user_agent, mode, dest):
    body = report(userAgent=user_agent, secFetchMode=mode, secFetchDest=dest)
    assert_no_content(post(client, std_site, body))
    (hit,) = hits(app)
    stored_mode = mode.strip().lower() or None if isinstance(mode, str) else None
    stored_dest = dest.strip().lower() or None if isinstance(dest, str) else None
    assert (hit.sec_fetch_mode, hit.sec_fetch_dest) == (stored_mode, stored_dest)


# --- field rules ---------------------------------------------------------------------------


def test_bounds_at_n_and_n_plus_one(client, app, std_site):
    accepted = [
        report(path="/" + "p" * 2047),
        report(userAgent=GOOGLEBOT + " " + "x" * (1024 - len(GOOGLEBOT) - 1)),
        report(host="h" * 253),
        report(secFetchDest="d" * 32, secFetchMode="m" * 32),
    ]
    for body in accepted:
        assert_no_content(post(client, std_site, body))
    refused = [
        (report(path="/" + "p" * 2048), "path: Length must be between 1 and 2048."),
        (report(path=""), "path: Length must be between 1 and 2048."),
        (report(userAgent=GOOGLEBOT + " " + "x" * (1025 - len(GOOGLEBOT) - 1)),
         "userAgent: Longer than maximum length 1024."),
        (report(host="h" * 254), "host: Length must be between 1 and 253."),
        (report(host=""), "host: Length must be between 1 and 253."),
        (report(secFetchDest="d" * 33), "secFetchDest: Longer than maximum length 32."),
        (report(secFetchMode="m" * 33), "secFetchMode: Longer than maximum length 32."),
    ]
    for body, error in refused:
        assert_json_error(post(client, std_site, body), 400, error)
    assert len(hits(app)) == len(accepted)


def test_user_agent_is_stored_cut_to_512_and_classified_whole(client, app, std_site):
    user_agent = "x" * 700 + " " + GOOGLEBOT
    assert_no_content(post(client, std_site, report(userAgent=user_agent)))
    (hit,) = hits(app)
    assert hit.user_agent == user_agent[:512]
    assert hit.crawler == "Googlebot"


@pytest.mark.parametrize("field", ["path", "userAgent"])
def test_path_and_user_agent_are_required(client, app, std_site, field):
    assert_json_error(post(client, std_site, report(**{field: ...})), 400,
                      f"{field}: Missing data for required field.")
    assert_json_error(post(client, std_site, report(**{field: None})), 400,
                      f"{field}: Field may not be null.")
    assert hits(app) == []


@pytest.mark.parametrize("field", ["path", "userAgent", "host", "secFetchDest", "secFetchMode"])
@pytest.mark.parametrize("value", [5, True, ["/"], {"a": 1}])
def test_text_fields_must_be_strings(client, app, std_site, field, value):
    assert_json_error(post(client, std_site, report(**{field: value})), 400,
                      f"{field}: Not a valid string.")
    assert hits(app) == []


@pytest.mark.parametrize("ip", ["", "not-an-ip", "198.51.100.300", " " + IPV4, IPV4 + "\n",
                                IPV4 + "/24", "1.2.3", "2001:db8::g", 3325256877, True, [IPV4],
                                {"ip": IPV4}, "x" * 10_000])
def test_ip_must_be_an_address_and_is_not_echoed(client, app, std_site, ip):
    response = post(client, std_site, report(ip=ip))
    assert_json_error(response, 400, "ip: Not a valid IP address.")
    assert IPV4.encode() not in response.data
    assert b"198.51.100.300" not in response.data
    assert hits(app) == []


def test_a_valid_ip_is_not_echoed_by_other_errors(client, app, std_site):
    response = post(client, std_site, report(ip=IPV4, path=...))
    assert_json_error(response, 400, "path: Missing data for required field.")
    assert IPV4.encode() not in response.data


NASTY_BODIES = [
    b"",
    b"not json",
    b"[]",
    b'[{"path": "/", "userAgent": "x"}]',
    b"null",
    b'"/"',
    b'{"path": "/\\u0000", "userAgent": "x"}',
    b'{"path": "/", "userAgent": "Googlebot\\u0000"}',
    b'{"path": "/\\ud800", "userAgent": "x"}',
    b'{"path": "/", "userAgent": "x", "host": "\\udc00"}',
    b'{"path": "/", "userAgent": "\xc3\x28"}',
    b"[" * 5000 + b"]" * 5000,
    b'{"path": "/", "userAgent": "x", "extra": ' + b"[" * 5000 + b"]" * 5000 + b"}",
    b'{"path": "/", "userAgent": "x", "extra": 1e999}',
    b'{"path": "/", "userAgent": "x", "extra": 1E+999999}',
    b'{"path": "/", "userAgent": "x", "extra": NaN}',
    b'{"path": "/", "userAgent": "x",}',
]


@pytest.mark.parametrize("body", NASTY_BODIES, ids=lambda b: repr(b[:40]))
def test_nasty_bodies_are_a_json_400(client, app, std_site, body):
    assert_json_error(post(client, std_site, body), 400)
    assert hits(app) == []


def test_not_json_content_type_is_415(client, app, std_site):
    assert_json_error(post(client, std_site, json.dumps(report()), content_type="text/plain"),
                      415)
    assert hits(app) == []


# --- keys ----------------------------------------------------------------------------------


def test_missing_key_is_401(client, app):
    assert_json_error(post_json(client, PATH, report()), 401,
                      "Missing API key: send it as Authorization: Bearer <key>.")
    assert hits(app) == []


def test_unknown_key_is_401(client, app, std_site):
    headers = {"Authorization": "Bearer egiss_" + "B" * 43}
    assert_json_error(post_json(client, PATH, report(), headers), 401,
                      "Invalid API key: unknown or revoked.")


def test_write_key_is_403(client, app, std_site):
    headers = {"Authorization": f"Bearer {std_site.write_key}"}
    assert_json_error(post_json(client, PATH, report(), headers), 403,
                      "This endpoint takes a server key; a write (tracking) key was given.")
    assert hits(app) == []


@pytest.mark.parametrize("kind", ["write", "server"])
def test_x_api_key_header_is_not_read(client, app, std_site, kind):
    key = std_site.write_key if kind == "write" else std_site.server_key
    assert_json_error(post_json(client, PATH, report(), {"X-API-Key": key}), 401)
    assert hits(app) == []


def test_rate_limit_is_shared_with_server_events(make_app, std_site):
    client = make_app(RATE_LIMIT_KEY="3/minute").test_client()
    assert_no_content(post(client, std_site, report()))
    assert post_json(client, "/api/server/events", {"eventName": "x"},
                     std_site.server_headers()).status_code == 200
    assert_no_content(post(client, std_site, report()))
    response = post(client, std_site, report())
    assert_json_error(response, 429)
    assert response.headers["Retry-After"]


# --- verification --------------------------------------------------------------------------


@pytest.fixture
def dns_server() -> Iterator[DNSServer]:
    server = DNSServer()
    server.add_ptr(GOOGLEBOT_IP, GOOGLEBOT_HOST)
    server.add_address(GOOGLEBOT_HOST, GOOGLEBOT_IP)
    server.add_ptr(BINGBOT_IP, BINGBOT_HOST)
    server.add_address(BINGBOT_HOST, BINGBOT_IP)
    with server:
        yield server


@pytest.fixture
def verifying_client(make_app, dns_server):
    app = make_app(VERIFY_CRAWLERS=True, DNS_SERVER=f"{dns_server.host}:{dns_server.port}",
                   DNS_TIMEOUT=0.3)
    return app.test_client()


def test_googlebot_from_its_network_is_verified(verifying_client, app, std_site, dns_server):
    assert_no_content(post(verifying_client, std_site, report(ip=GOOGLEBOT_IP)))
    (hit,) = hits(app)
    assert (hit.verified, hit.spoofed, hit.network) == (True, False, "Google")
    assert dns_server.queries == [("1.66.249.66.in-addr.arpa.", "PTR"),
                                  (GOOGLEBOT_HOST + ".", "A")]


def test_bingbot_is_verified(verifying_client, app, std_site):
    assert_no_content(post(verifying_client, std_site, report(userAgent=BINGBOT, ip=BINGBOT_IP)))
    assert (hits(app)[0].verified, hits(app)[0].spoofed) == (True, False)


def test_googlebot_without_ptr_is_spoofed(verifying_client, app, std_site):
    assert_no_content(post(verifying_client, std_site, report(ip=SPOOFER_IP)))
    (hit,) = hits(app)
    assert (hit.crawler, hit.verified, hit.spoofed) == ("Googlebot", False, True)
    assert hit.network == "203.0.113.0/24"


def test_ptr_outside_the_crawler_domains_is_spoofed(verifying_client, app, std_site,
                                                    dns_server):
    dns_server.add_ptr(SPOOFER_IP, "googlebot.com.evil.example")
    dns_server.add_address("googlebot.com.evil.example", SPOOFER_IP)
    assert_no_content(post(verifying_client, std_site, report(ip=SPOOFER_IP)))
    assert (hits(app)[0].verified, hits(app)[0].spoofed) == (False, True)


def test_ptr_without_forward_confirmation_is_spoofed(verifying_client, app, std_site,
                                                     dns_server):
    dns_server.add_ptr(SPOOFER_IP, "crawl-fake.googlebot.com")  # anyone can write their PTR
    dns_server.add_address("crawl-fake.googlebot.com", GOOGLEBOT_IP)
    assert_no_content(post(verifying_client, std_site, report(ip=SPOOFER_IP)))
    assert (hits(app)[0].verified, hits(app)[0].spoofed) == (False, True)


def test_dns_timeout_accuses_nobody(verifying_client, app, std_site, dns_server):
    dns_server.silent = True
    assert_no_content(post(verifying_client, std_site, report(ip=GOOGLEBOT_IP)))
    (hit,) = hits(app)
    assert (hit.verified, hit.spoofed) == (None, False)


def test_dns_server_failure_accuses_nobody(verifying_client, app, std_site, dns_server):
    dns_server.servfail.add("1.66.249.66.in-addr.arpa.")
    assert_no_content(post(verifying_client, std_site, report(ip=GOOGLEBOT_IP)))
    assert (hits(app)[0].verified, hits(app)[0].spoofed) == (None, False)


def test_results_are_cached(verifying_client, app, std_site, dns_server):
    for _ in range(3):
        assert_no_content(post(verifying_client, std_site, report(ip=GOOGLEBOT_IP)))
    assert dns_server.query_count == 2
    assert [h.verified for h in hits(app)] == [True, True, True]


@pytest.mark.parametrize("body", [report(userAgent=GPTBOT, ip=SPOOFER_IP),
                                  report(userAgent="python-requests/2.31.0", ip=SPOOFER_IP),
                                  report(userAgent=CHROME, ip=SPOOFER_IP),
                                  report(ip=None)])
def test_unverifiable_reports_are_not_checked(verifying_client, app, std_site, dns_server,
                                              body):
    assert_no_content(post(verifying_client, std_site, body))
    assert (hits(app)[0].verified, hits(app)[0].spoofed) == (None, False)
    assert dns_server.query_count == 0


def test_verification_is_off_unless_switched_on(make_app, std_site, dns_server, app):
    client = make_app(DNS_SERVER=f"{dns_server.host}:{dns_server.port}").test_client()
    assert_no_content(post(client, std_site, report(ip=SPOOFER_IP)))
    assert (hits(app)[0].verified, hits(app)[0].spoofed) == (None, False)
    assert dns_server.query_count == 0


def test_a_bad_dns_server_setting_fails_at_startup(make_app):
    with pytest.raises(ValueError, match="invalid DNS server setting"):
        make_app(VERIFY_CRAWLERS=True, DNS_SERVER="dns.example")


# --- the address is never kept -------------------------------------------------------------

SECRET_IPS = (IPV4, IPV6, IPV6_EXPLODED, GOOGLEBOT_IP, SPOOFER_IP)


def assert_no_address_in(data: bytes | str, where: str) -> None:
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    for ip in SECRET_IPS:
        assert ip not in text, f"{ip} found in {where}"


def reports_with_addresses() -> list[dict]:
    return [report(ip=IPV4, host="std.example"), report(ip=IPV6), report(ip=GOOGLEBOT_IP),
            report(ip=SPOOFER_IP), report(userAgent=GPTBOT, ip="::ffff:" + IPV4),
            report(ip=IPV4, path=...), report(ip=IPV6, host="")]


def test_ip_is_not_stored_logged_or_echoed(verifying_client, app, std_site, caplog):
    caplog.set_level(logging.DEBUG)  # every logger, Peewee's SQL log included
    for body in reports_with_addresses():
        response = post(verifying_client, std_site, body)
        assert response.status_code in (204, 400)
        assert_no_address_in(response.data, "a response")
        assert_no_address_in(str(response.headers), "response headers")
    stored = hits(app)
    assert {h.network for h in stored} == {"198.51.100.0/24", "2001:db8:4f2a::/48", "Google",
                                           "203.0.113.0/24"}
    assert 'INSERT INTO "crawl_hit"' in caplog.text  # the SQL log was captured
    assert_no_address_in(caplog.text, "the logs")
    dump = database_bytes(app.config["DATABASE_URL"])
    assert b"203.0.113.0/24" in dump and GOOGLEBOT.encode() in dump  # the dump holds the rows
    assert_no_address_in(dump, "the database")


@pytest.mark.slow
def test_live_server_never_logs_or_stores_the_ip(start_server, app, std_site, dns_server):
    server = start_server(workers=2, env={
        "EGIS_VERIFY_CRAWLERS": "true", "EGIS_DNS_SERVER": f"{dns_server.host}:{dns_server.port}",
        "EGIS_DNS_TIMEOUT": "0.3", "GUNICORN_CMD_ARGS": "--log-level debug"})
    statuses = []
    for body in reports_with_addresses():
        request = urllib.request.Request(
            server.url + PATH, data=json.dumps(body).encode(), method="POST",
            headers={"Content-Type": "application/json", **std_site.server_headers()})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                statuses.append(response.status)
                assert_no_address_in(response.read(), "a response")
        except urllib.error.HTTPError as error:
            statuses.append(error.code)
            assert_no_address_in(error.read(), "an error response")
    assert statuses == [204, 204, 204, 204, 204, 400, 400]
    assert [h.verified for h in hits(app)] == [False, False, True, False, None]
    log = server.log()
    assert PATH in log  # the access log was written
    assert_no_address_in(log, "the server log")
    assert_no_address_in(database_bytes(app.config["DATABASE_URL"]), "the database")


# --- documentation -------------------------------------------------------------------------


def test_documented_in_openapi(client):
    document = client.get("/api/openapi.json").get_json()
    operation = document["paths"][PATH]["post"]
    assert operation["security"] == [{"bearerKey": []}]
    assert "content" not in operation["responses"]["204"]
    assert {"204", "400", "401", "403", "429"} <= set(operation["responses"])
    schemas = document["components"]["schemas"]
    request = schemas[operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
                      .rsplit("/", 1)[1]]
    assert sorted(request["required"]) == ["path", "userAgent"]
    assert request["properties"]["path"]["maxLength"] == 2048
    assert request["properties"]["userAgent"]["maxLength"] == 1024
    assert set(request["properties"]) == {"path", "userAgent", "host", "ip", "secFetchDest",
                                          "secFetchMode"}
