"""What `flask data prune` deletes from the OAuth tables (app/oauth/expiry.py), by a test clock:
for each kind of row the live variant stays and the spent one goes; reuse detection still
works after a prune; a grant ended long ago goes whole; `flask agents list` keeps showing the
live grants; a client that went registers again (or, known by its document, is fetched again).
"""
import secrets
from datetime import datetime, timedelta

import pytest

from app.oauth import grants
from app.oauth.server import REPLAYED_CODE, REPLAYED_REFRESH
from models import ConnectCode, OAuthClient, OAuthCode, OAuthGrant, OAuthToken
from models.oauth_client import DOCUMENT, REGISTERED
from tests.fixtures.helpers import db
from tests.fixtures.oauth import Clock, connect_code, in_process
from tests.fixtures.retention import OAUTH_TABLES, run, table_lines

CALLBACK = "http://127.0.0.1:1/callback"


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    return Clock(monkeypatch)


def prune(app) -> dict[str, int]:
    """`flask data prune` as the timer runs it: the OAuth tables' lines of its output."""
    lines = table_lines(run(app, "data", "prune", "--older-than", "13"))
    return {table: lines[table] for table in OAUTH_TABLES}


def pruned(**deleted: int) -> dict[str, int]:
    return {**dict.fromkeys(OAUTH_TABLES, 0), **deleted}


# --- Each kind of row, made by hand at the clock's moments ---------------------------------------

class Rows:
    """Rows of every OAuth table for one site, dated relative to the clock's now."""

    def __init__(self, site_id: int, now: datetime) -> None:
        self.site_id, self.now = site_id, now

    def ago(self, **by: float) -> datetime:
        return self.now - timedelta(**by)

    def client(self, registered: datetime | None = None, fetched_until: datetime | None = None
               ) -> int:
        document = fetched_until is not None
        return OAuthClient.create(
            client_id=(f"https://client.test/{secrets.token_hex(4)}.json" if document
                       else secrets.token_urlsafe(24)),
            kind=DOCUMENT if document else REGISTERED, redirect_uris=[CALLBACK],
            grant_types=["authorization_code"], metadata={},
            created_at=registered or self.ago(days=90), fetched_until=fetched_until).id

    def code(self, client_id: int, made: datetime, used: bool = False,
             grant_id: int | None = None) -> int:
        return OAuthCode.create(
            code_hash=secrets.token_hex(32), site=self.site_id, client=client_id,
            redirect_uri=CALLBACK, scope="stats:read", resource="http://localhost/api/mcp",
            code_challenge="x" * 43, code_challenge_method="S256", created_at=made,
            expires_at=made + grants.CODE_LIFETIME, used_at=made if used else None,
            grant=grant_id).id

    def grant(self, client_id: int, made: datetime, revoked: datetime | None = None) -> int:
        """A grant made from a code at `made` (the code's row too)."""
        grant_id = OAuthGrant.create(site=self.site_id, client=client_id, redirect_uri=CALLBACK,
                                     scope="stats:read", resource="http://localhost/api/mcp",
                                     created_at=made, last_used_at=made, revoked_at=revoked).id
        self.code(client_id, made, used=True, grant_id=grant_id)
        return grant_id

    def token(self, grant_id: int, made: datetime, rotated: datetime | None = None) -> int:
        return OAuthToken.create(
            grant=grant_id, access_hash=secrets.token_hex(32), refresh_hash=secrets.token_hex(32),
            created_at=made, access_expires_at=made + grants.ACCESS_LIFETIME,
            refresh_expires_at=made + grants.REFRESH_LIFETIME, refreshed_at=rotated).id

    def chain(self, grant_id: int, *made: datetime) -> list[int]:
        """A grant's tokens, each rotated when the next was made; the last one not."""
        return [self.token(grant_id, moment, rotated=following)
                for moment, following in zip(made, (*made[1:], None), strict=True)]

    def connect_code(self, made: datetime, used: datetime | None = None) -> int:
        return ConnectCode.create(site=self.site_id, code_hash=secrets.token_hex(32),
                                  created_at=made, expires_at=made + timedelta(minutes=15),
                                  used_at=used).id


def ids(model) -> set[int]:
    return {row_id for (row_id,) in model.select(model.id).tuples()}


def codes_of(grant_ids: set[int]) -> set[int]:
    return {code_id for (code_id,) in OAuthCode.select(OAuthCode.id)
            .where(OAuthCode.grant.in_(list(grant_ids))).tuples()}


def test_the_live_rows_stay_and_the_spent_ones_go(app, std_site, clock):
    keep: dict[type, set[int]] = {model: set() for model in
                                  (OAuthCode, OAuthToken, OAuthGrant, OAuthClient, ConnectCode)}
    with db(app):
        rows = Rows(std_site.site.id, clock.now)
        # Connect codes: unused and valid; used an hour ago; expired 23 hours ago: kept.
        keep[ConnectCode] |= {rows.connect_code(rows.ago(minutes=5)),
                              rows.connect_code(rows.ago(hours=1), used=rows.ago(minutes=55)),
                              rows.connect_code(rows.ago(hours=23, minutes=15))}
        # ... expired a day ago, unused or used: gone.
        rows.connect_code(rows.ago(days=1, minutes=16))
        rows.connect_code(rows.ago(days=3), used=rows.ago(days=3))

        host = rows.client()  # registered 90 days ago, with grants in use: kept
        # A grant in use for 90 days, refreshed every 29: the code it was made from and every
        # refresh token rotated away stay with it (reuse detection), and it stays.
        live = rows.grant(host, rows.ago(days=90))
        keep[OAuthToken] |= set(rows.chain(live, rows.ago(days=90), rows.ago(days=61),
                                           rows.ago(days=32), rows.ago(days=3)))
        # Ended less than 30 days ago (revoked; lapsed): kept whole.
        revoked_lately = rows.grant(host, rows.ago(days=40), revoked=rows.ago(days=29))
        keep[OAuthToken] |= set(rows.chain(revoked_lately, rows.ago(days=40), rows.ago(days=35)))
        lapsed_lately = rows.grant(host, rows.ago(days=80))
        keep[OAuthToken] |= set(rows.chain(lapsed_lately, rows.ago(days=80), rows.ago(days=59)))
        just_made = rows.grant(host, rows.ago(seconds=1))  # its tokens are being saved
        keep[OAuthGrant] |= {live, revoked_lately, lapsed_lately, just_made}
        # Ended more than 30 days ago (revoked; lapsed; never got its tokens): gone whole.
        revoked_long_ago = rows.grant(host, rows.ago(days=50), revoked=rows.ago(days=31))
        rows.chain(revoked_long_ago, rows.ago(days=50), rows.ago(days=40))
        lapsed_long_ago = rows.grant(host, rows.ago(days=90))
        rows.chain(lapsed_long_ago, rows.ago(days=90), rows.ago(days=61, minutes=1))
        rows.grant(host, rows.ago(days=31))
        # Codes that made no grant: valid, or expired within a day: kept; a day after: gone.
        keep[OAuthCode] |= {rows.code(host, rows.ago(minutes=1)),
                            rows.code(host, rows.ago(hours=23))}
        rows.code(host, rows.ago(days=1, minutes=11))
        rows.code(host, rows.ago(days=2), used=True)  # claimed, its grant never made

        # Registered clients: registered 23 hours ago; 31 days ago with a code in flight, or
        # with a grant that ended 29 days ago: kept. 25 hours or 31 days ago and never used:
        # gone; with a grant that goes now: goes with it.
        pending = rows.client(rows.ago(days=31))
        keep[OAuthCode].add(rows.code(pending, rows.ago(minutes=2)))
        recent_end = rows.client(rows.ago(days=31))
        ended_lately = rows.grant(recent_end, rows.ago(days=59))
        keep[OAuthToken].add(rows.token(ended_lately, rows.ago(days=59)))
        keep[OAuthGrant].add(ended_lately)
        keep[OAuthClient] |= {host, rows.client(rows.ago(hours=23)), pending, recent_end}
        rows.client(rows.ago(hours=25))
        rows.client(rows.ago(days=31))
        old_grant_only = rows.client(rows.ago(days=200))
        rows.token(rows.grant(old_grant_only, rows.ago(days=100)), rows.ago(days=100))
        # Clients known by their document: cached until 23 hours ago, or with a grant: kept;
        # cached until more than a day ago, nothing else: gone.
        cached = rows.client(fetched_until=rows.ago(hours=23))
        documented = rows.client(fetched_until=rows.ago(days=20))
        documented_grant = rows.grant(documented, rows.ago(days=10))
        keep[OAuthToken].add(rows.token(documented_grant, rows.ago(days=10)))
        keep[OAuthGrant].add(documented_grant)
        keep[OAuthClient] |= {cached, documented}
        rows.client(fetched_until=rows.ago(days=1, seconds=1))
        keep[OAuthCode] |= codes_of(keep[OAuthGrant])

        gone = {model: len(ids(model) - kept) for model, kept in keep.items()}
    assert gone == {OAuthCode: 6, OAuthToken: 5, OAuthGrant: 4, OAuthClient: 4, ConnectCode: 2}
    assert prune(app) == pruned(oauth_code=6, oauth_token=5, oauth_grant=4, oauth_client=4,
                                connect_code=2)
    with db(app):
        assert {model: ids(model) for model in keep} == keep
    assert prune(app) == pruned()  # nothing more, the same day


# --- Through the flow: reuse detection, a grant ended long ago, agents list -------------------

@pytest.fixture
def make(app, make_site):
    make_site("std.example", "standard")
    with in_process(app) as make:
        yield make


@pytest.fixture
def me(make):
    return make(CALLBACK).register()


def works_on_mcp(me, access_token: str) -> bool:
    return me.call(access_token, method="ping").status_code == 200


def refused(answer, error: str, sentence: str) -> bool:
    body = answer.json()
    return (answer.status_code, body["error"]) == (400, error) and sentence in body[
        "error_description"]


def test_a_rotated_refresh_token_replayed_after_prunes_still_revokes_the_grant(app, me, clock):
    first = me.tokens(connect_code(app, "std.example"))
    chain = [first]
    for _ in range(3):  # in use for 87 days: refreshed every 29
        clock.advance(days=29)
        answer = me.refresh(chain[-1]["refresh_token"])
        assert answer.status_code == 200, answer.text
        chain.append(answer.json())
    assert prune(app) == pruned(connect_code=1)  # the connect code, used 87 days ago
    assert works_on_mcp(me, chain[-1]["access_token"])  # the grant is live
    # The first refresh token, rotated away 87 days ago, presented again: a replay.
    assert refused(me.refresh(first["refresh_token"]), "invalid_grant", REPLAYED_REFRESH)
    assert not works_on_mcp(me, chain[-1]["access_token"])
    assert refused(me.refresh(chain[-1]["refresh_token"]), "invalid_grant", "revoked")


def test_the_code_replayed_after_prunes_still_revokes_the_grant(app, me, clock):
    code = me.authorize(connect_code(app, "std.example"))["code"]
    tokens = me.exchange(code).json()
    for _ in range(2):
        clock.advance(days=29)
        tokens = me.refresh(tokens["refresh_token"]).json()
    assert prune(app) == pruned(connect_code=1)  # the connect code, used 58 days ago
    assert works_on_mcp(me, tokens["access_token"])
    assert refused(me.exchange(code), "invalid_grant", REPLAYED_CODE)
    assert not works_on_mcp(me, tokens["access_token"])


def test_a_grant_revoked_long_ago_goes_with_its_tokens_and_codes_and_client(app, me, clock):
    first = me.tokens(connect_code(app, "std.example"))
    second = me.refresh(first["refresh_token"]).json()
    with db(app):
        grant_id = OAuthGrant.get().id
    assert run(app, "agents", "revoke", str(grant_id))[0].startswith(f"Revoked grant {grant_id}")
    clock.advance(days=30)
    assert prune(app) == pruned(connect_code=1)  # revoked 30 days ago: kept
    for token in (first, second):  # refused by name: the grant was revoked
        assert refused(me.refresh(token["refresh_token"]), "invalid_grant", "revoked")
    clock.advance(seconds=1)
    assert prune(app) == pruned(oauth_code=1, oauth_token=2, oauth_grant=1, oauth_client=1)
    with db(app):
        assert [model.select().count() for model in (OAuthCode, OAuthToken, OAuthGrant,
                                                     OAuthClient)] == [0, 0, 0, 0]
    assert run(app, "agents", "list", "std.example") == ["No agent is connected to std.example."]
    # The host's tokens and client_id are unknown now: it registers again and connects anew.
    forgotten = me.refresh(second["refresh_token"])
    assert forgotten.status_code == 401 and forgotten.json()["error"] == "invalid_client"
    page = me.http.get("/oauth/authorize", params=me.authorization())
    assert page.status_code == 400 and "This app cannot connect" in page.text
    assert "Location" not in page.headers
    again = me.register().tokens(connect_code(app, "std.example"))
    assert works_on_mcp(me, again["access_token"])


def test_a_registered_client_no_owner_allowed_goes_a_day_after(app, make, clock):
    allowed, stranger = make(CALLBACK).register("Allowed"), make(CALLBACK).register("Stranger")
    tokens = allowed.tokens(connect_code(app, "std.example"))
    for each in (allowed, stranger):
        assert each.http.get("/oauth/authorize", params=each.authorization()).status_code == 200
    clock.advance(hours=23, minutes=59)
    assert prune(app) == pruned()  # the day is not over
    clock.advance(minutes=2)
    assert prune(app) == pruned(oauth_client=1)  # the stranger
    page = stranger.http.get("/oauth/authorize", params=stranger.authorization())
    assert page.status_code == 400 and "This app cannot connect" in page.text
    forgotten = stranger.exchange("no-such-code")
    assert (forgotten.status_code, forgotten.json()["error"]) == (401, "invalid_client")
    # The client an owner allowed stays with its grant, and goes on working.
    assert allowed.http.get("/oauth/authorize", params=allowed.authorization()).status_code == 200
    assert works_on_mcp(allowed, allowed.refresh(tokens["refresh_token"]).json()["access_token"])
    with db(app):
        assert [client.client_name for client in OAuthClient.select()] == ["Allowed"]


def test_agents_list_shows_the_same_live_grants_after_a_prune(app, me, clock):
    in_use = me.tokens(connect_code(app, "std.example"))
    idle = me.tokens(connect_code(app, "std.example"))
    me.tokens(connect_code(app, "std.example"))
    with db(app):
        ended_id = OAuthGrant.select().order_by(OAuthGrant.id.desc()).get().id
    run(app, "agents", "revoke", str(ended_id))
    clock.advance(days=29)
    assert me.refresh(in_use["refresh_token"]).status_code == 200
    clock.advance(days=2)  # `idle` has not been used for 31 days: lapsed a day ago
    before = run(app, "agents", "list", "std.example")
    assert len(before) == 2 and all("\tTest agent\t127.0.0.1" in line for line in before)
    assert prune(app) == pruned(oauth_code=1, oauth_token=1, oauth_grant=1, connect_code=3)
    assert run(app, "agents", "list", "std.example") == before
    assert refused(me.refresh(idle["refresh_token"]), "invalid_grant", "30 days unused")


def test_a_client_known_by_its_document_goes_and_is_fetched_again(
        trusted, make_app, make_site, document_server, clock):
    app = make_app(OAUTH_PRIVATE_CLIENT_URLS=True)
    make_site("std.example", "standard")
    with in_process(app) as make:
        me = make(CALLBACK)
        me.client_id = document_server.serve_client("/expiry.json", [CALLBACK], "Doc client")
        tokens = me.tokens(connect_code(app, "std.example"))
        clock.advance(days=2)  # its cache ended a day ago: kept, it has a grant
        assert prune(app) == pruned(connect_code=1)
        assert me.refresh(tokens["refresh_token"]).status_code == 200
        with db(app):
            grant_id = OAuthGrant.get().id
        run(app, "agents", "revoke", str(grant_id))
        clock.advance(days=30, seconds=1)
        assert prune(app) == pruned(oauth_code=1, oauth_token=2, oauth_grant=1, oauth_client=1)
        fetched = document_server.hits["/expiry.json"]
        again = me.tokens(connect_code(app, "std.example"))
        assert works_on_mcp(me, again["access_token"])
        assert document_server.hits["/expiry.json"] == fetched + 1
