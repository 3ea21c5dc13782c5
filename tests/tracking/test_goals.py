"""POST /api/goals: a goal becomes an event of type `goal`; bounds, money, client time (at most
400 days ago), e-mail addresses in disguise, bots."""
from datetime import UTC, datetime, timedelta

import pytest

from app.ingest.privacy import EMAIL_IN_ID
from app.web.schema import MAX_JSON_DEPTH, MAX_PROPERTIES_BYTES, TOO_LONG_AGO
from models import Batch
from models.site import utcnow
from tests.fixtures.helpers import EMAIL_DISGUISES, assert_nowhere_in_the_database
from tests.fixtures.tracking import (
    GOOGLEBOT_UA,
    NOTHING,
    assert_json_error,
    db,
    dumps,
    goal,
    post_json,
    stored_counts,
    stored_events,
    tallies,
)


def post(client, site, body, **headers):
    return post_json(client, "/api/goals", body, site.write_headers(**headers))


def utc(*args: int) -> datetime:
    return datetime(*args)  # naive UTC, as stored


def ms(moment: datetime) -> int:
    return int(moment.replace(tzinfo=UTC).timestamp() * 1000)


def test_a_goal_is_stored_as_a_goal_event(client, app, std_site):
    body = goal(goal_name="signup", metadata={"plan": "pro", "step": 3},
                anonymous_id="a-1", session_id="s-1", page_url="https://std.example/join",
                page_title="Join", referrer="https://ref.example/", unknown="ignored")
    response = post(client, std_site, body)
    assert response.status_code == 200
    assert response.get_json() == {"success": True}
    (row,) = stored_events(app)
    assert (row.site_id, row.type, row.name) == (std_site.site.id, "goal", "signup")
    assert (row.session_id, row.anonymous_id, row.user_id) == ("s-1", "a-1", None)
    assert (row.page_url, row.page_title, row.referrer) == (
        "https://std.example/join", "Join", "https://ref.example/")
    assert row.properties == {"plan": "pro", "step": 3}
    assert (row.batch_id, row.sent_ts, row.client_ts, row.client_time_raw) == (
        None, None, None, None)
    assert row.occurred_at == row.received_at
    assert row.weight == 1.0
    assert stored_counts(app) == {"events": 1, "batches": 0, "usage": 1}
    assert tallies(app) == {}


def test_only_goal_name_is_required(client, app, free_site):
    assert post(client, free_site, {"goal_name": "g"}).get_json() == {"success": True}
    (row,) = stored_events(app)
    assert (row.name, row.session_id, row.anonymous_id, row.page_url, row.properties) == (
        "g", None, None, None, None)


def test_bearer_key_is_accepted(client, app, std_site):
    response = post_json(client, "/api/goals", goal(),
                         {"Authorization": f"Bearer {std_site.write_key}"})
    assert response.get_json() == {"success": True}


def test_goals_are_not_idempotent_records(client, app, std_site):
    """Goals have no id: two posts are two conversions, and no batch row is written."""
    post(client, std_site, goal())
    post(client, std_site, goal())
    assert stored_counts(app) == {"events": 2, "batches": 0, "usage": 2}
    with db(app):
        assert Batch.select().count() == 0


def sized(size: int) -> dict:
    value = {"p": "x" * (size - len(b'{"p":""}'))}
    assert len(dumps(value)) == size
    return value


def nested(depth: int) -> dict:
    value: dict = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


EDGE_CASES = [
    ("goal_name", goal(goal_name="g" * 64), goal(goal_name="g" * 65),
     "goal_name: Length must be between 1 and 64."),
    ("goal_name-empty", goal(goal_name="g"), goal(goal_name=""),
     "goal_name: Length must be between 1 and 64."),
    ("anonymous_id", goal(anonymous_id="a" * 128), goal(anonymous_id="a" * 129),
     "anonymous_id: Longer than maximum length 128."),
    ("session_id", goal(session_id="s" * 128), goal(session_id="s" * 129),
     "session_id: Longer than maximum length 128."),
    ("page_url", goal(page_url="u" * 2048), goal(page_url="u" * 2049),
     "page_url: Longer than maximum length 2048."),
    ("page_title", goal(page_title="t" * 1024), goal(page_title="t" * 1025),
     "page_title: Longer than maximum length 1024."),
    ("referrer", goal(referrer="r" * 2048), goal(referrer="r" * 2049),
     "referrer: Longer than maximum length 2048."),
    ("client_timestamp", goal(client_timestamp="1" * 64), goal(client_timestamp="1" * 65),
     "client_timestamp: Longer than maximum length 64."),
    ("metadata-size", goal(metadata=sized(MAX_PROPERTIES_BYTES)),
     goal(metadata=sized(MAX_PROPERTIES_BYTES + 1)),
     "metadata: Too large: at most 16384 bytes as JSON, got 16385."),
    ("metadata-depth", goal(metadata=nested(MAX_JSON_DEPTH)),
     goal(metadata=nested(MAX_JSON_DEPTH + 1)),
     "metadata: Nested too deeply: at most 64 levels of objects and arrays."),
]


@pytest.mark.parametrize(("at_limit", "over_limit", "message"),
                         [case[1:] for case in EDGE_CASES], ids=[case[0] for case in EDGE_CASES])
def test_bound_at_its_edge(client, app, std_site, at_limit, over_limit, message):
    body = assert_json_error(post(client, std_site, over_limit), 400)
    assert body["error"] == message
    assert stored_counts(app) == NOTHING
    assert tallies(app) == {"rejected_400": 1}
    assert post(client, std_site, at_limit).get_json() == {"success": True}
    assert stored_counts(app)["events"] == 1


# Noon UTC 30 days ago: a goal's own time must lie within the last 400 days.
NOON = (utcnow() - timedelta(days=30)).replace(hour=12, minute=0, second=0, microsecond=0)
DAY = f"{NOON:%Y-%m-%d}"


@pytest.mark.parametrize(("raw", "client_ts"), [
    (f"{DAY}T12:00:00Z", ms(NOON)),
    (f"{DAY}T14:00:00+02:00", ms(NOON)),
    (f"{DAY}T07:30:00-04:30", ms(NOON)),
    (f"{DAY}T12:00:00", ms(NOON)),  # no zone: UTC
    (f"{DAY}T12:00:00.250Z", ms(NOON) + 250),
    (DAY, ms(NOON.replace(hour=0))),
    (str(ms(NOON)), ms(NOON)),
    (f" {ms(NOON)} ", ms(NOON)),
])
def test_client_timestamp_is_parsed(client, app, std_site, raw, client_ts):
    assert post(client, std_site, goal(client_timestamp=raw)).get_json() == {"success": True}
    (row,) = stored_events(app)
    assert (row.client_ts, row.client_time_raw) == (client_ts, raw)
    assert row.occurred_at == datetime.fromtimestamp(client_ts / 1000, UTC).replace(tzinfo=None)


@pytest.mark.parametrize("raw", [
    "yesterday", "", "2024-13-01T00:00:00Z", "1714564800000.5", "-1714564800000",
    "0x1F", "²", "١٧١٤٥٦٤٨٠٠٠٠٠",  # Unicode digits: isdigit() yet not epoch ms
    "9" * 64,  # beyond any bigint
    "0001-01-01T00:00:00+00:00",  # before 1970
    "4102444800001",  # after 2100, the bound events are held to
])
def test_unparseable_client_timestamp_is_kept_raw(client, app, std_site, raw):
    assert post(client, std_site, goal(client_timestamp=raw)).get_json() == {"success": True}
    (row,) = stored_events(app)
    assert (row.client_ts, row.client_time_raw) == (None, raw)
    assert row.occurred_at == row.received_at


def test_a_future_client_timestamp_is_clamped_to_arrival(client, app, std_site):
    post(client, std_site, goal(client_timestamp="2099-01-01T00:00:00Z"))
    (row,) = stored_events(app)
    assert row.client_ts == ms(utc(2099, 1, 1))
    assert row.occurred_at == row.received_at


def test_a_client_timestamp_more_than_400_days_ago_is_refused(client, app, std_site):
    """Before: "0" stored the goal in 1970."""
    now = utcnow()
    for days in (1, 399):
        raw = f"{now - timedelta(days=days):%Y-%m-%dT%H:%M:%S}Z"
        assert post(client, std_site, goal(client_timestamp=raw)).get_json() == {"success": True}
    assert [round((row.received_at - row.occurred_at) / timedelta(days=1))
            for row in stored_events(app)] == [1, 399]
    before = stored_counts(app)
    for raw in (f"{now - timedelta(days=401):%Y-%m-%d}", "0", str(ms(now) - 401 * 86_400_000)):
        refused = post(client, std_site, goal(client_timestamp=raw))
        assert assert_json_error(refused, 400)["error"] == f"client_timestamp: {TOO_LONG_AGO}"
    assert stored_counts(app) == before
    assert tallies(app) == {"rejected_400": 3}


def test_an_email_address_in_any_disguise_is_refused_as_the_anonymous_id(client, app,
                                                                         std_site):
    for valid, disguised in EMAIL_DISGUISES:
        accepted = post(client, std_site, goal(anonymous_id=valid))
        assert accepted.get_json() == {"success": True}
        before = stored_counts(app)
        refused = post(client, std_site, goal(anonymous_id=disguised))
        assert assert_json_error(refused, 400)["error"] == f"anonymous_id: {EMAIL_IN_ID}"
        assert stored_counts(app) == before
    assert [row.anonymous_id for row in stored_events(app)] == [
        valid for valid, _ in EMAIL_DISGUISES]
    assert tallies(app) == {"rejected_400": len(EMAIL_DISGUISES)}
    assert_nowhere_in_the_database(app, *(disguised for _, disguised in EMAIL_DISGUISES))


def test_money_is_stripped_from_metadata(client, app, std_site):
    metadata = {"Amount": 49, "REVENUE": 49, "revenue_cents": 4900, "currency": "EUR",
                "CURRENCY": "USD", "plan": "pro", "amounts": [2]}
    post(client, std_site, goal(metadata=metadata))
    post(client, std_site, goal(goal_name="only-money", metadata={"amount": 1, "Currency": "X"}))
    first, second = stored_events(app)
    assert first.properties == {"plan": "pro", "amounts": [2]}
    assert second.properties is None


def test_money_is_stripped_from_metadata_at_every_depth(client, app, std_site):
    """At depth 1 and 3, and in objects within a list; their siblings stay."""
    metadata = {"plan": {"name": "pro", "Amount": 49},
                "a": {"b": {"c": {"currency": "EUR", "kept": 1}}},
                "seats": [{"revenue": 10, "who": "ann"}, {"revenue_cents": 1000, "who": "bo"}]}
    assert post(client, std_site, goal(metadata=metadata)).get_json() == {"success": True}
    (row,) = stored_events(app)
    assert row.properties == {"plan": {"name": "pro"}, "a": {"b": {"c": {"kept": 1}}},
                              "seats": [{"who": "ann"}, {"who": "bo"}]}


def test_goal_types_are_strict(client, app, std_site):
    for body, message in (
            ({"goal_name": 1}, "goal_name: Not a valid string."),
            ({"goal_name": None}, "goal_name: Field may not be null."),
            ({}, "goal_name: Missing data for required field."),
            (goal(metadata=[1]), "metadata: Not a valid mapping type."),
            (goal(client_timestamp=1714564800000), "client_timestamp: Not a valid string."),
            (goal(session_id=True), "session_id: Not a valid string."),
            (goal(goal_name="a\u0000b"), "goal_name: NUL characters are not allowed."),
            (goal(metadata={"k": ["a\u0000"]}), "metadata: NUL characters are not allowed.")):
        assert assert_json_error(post(client, std_site, body), 400)["error"] == message
    assert stored_counts(app) == NOTHING
    assert tallies(app) == {"rejected_400": 8}


def test_a_bot_goal_is_not_stored(client, app, std_site):
    response = post(client, std_site, goal(), Origin="https://std.example",
                    **{"User-Agent": GOOGLEBOT_UA})
    assert response.status_code == 200
    assert response.get_json() == {"success": True, "bot": True}
    assert stored_counts(app) == NOTHING
    assert tallies(app) == {"bot": 1}


def test_a_backend_goal_is_never_bot_filtered(client, app, std_site):
    response = post(client, std_site, goal(), **{"User-Agent": "python-requests/2.32.3"})
    assert response.get_json() == {"success": True}
    assert stored_counts(app)["events"] == 1


def test_goals_are_free_on_every_plan(client, app, free_site):
    assert post(client, free_site, goal()).get_json() == {"success": True}
