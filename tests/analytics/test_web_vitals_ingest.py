"""get_web_vitals reads performance events in spec.md's shape, whichever client sent them.

spec.md lists a performance event's properties as `lcp, inp, cls, fcp, ttfb`: here a plain HTTP
client (no tracker) posts them through /api/events, all five in one event or one per event, and
the tool counts every one of them.
"""
from typing import Any

from tests.fixtures.helpers import call_tool
from tests.fixtures.tracking import batch, event, now_ms, post_json

PAGE = "https://std.example/pricing?utm_source=x"


def _post(client, keys, *properties: dict[str, Any]) -> None:
    events = [event("performance", pageUrl=PAGE, timestamp=now_ms(), properties=props)
              for props in properties]
    response = post_json(client, "/api/events", batch(events), keys.write_headers())
    assert response.status_code == 200, response.data
    assert response.get_json()["count"] == len(properties)


def _web_vitals(client, keys) -> dict[str, Any]:
    return call_tool(client, keys.server_key, "get_web_vitals")


def test_all_five_metrics_in_one_event_are_counted(client, std_site):
    _post(client, std_site, {"lcp": 2400.5, "inp": 120, "cls": 0.05, "fcp": 900, "ttfb": 300})
    vitals = _web_vitals(client, std_site)["site_vitals"]
    assert vitals == {
        "lcp": {"p75": 2400.5, "samples": 1, "rating": "good"},
        "inp": {"p75": 120.0, "samples": 1, "rating": "good"},
        "cls": {"p75": 0.05, "samples": 1, "rating": "good"},
        "fcp": {"p75": 900.0, "samples": 1, "rating": "good"},
        "ttfb": {"p75": 300.0, "samples": 1, "rating": "good"},
    }


def test_one_metric_per_event_and_mixed_events_add_up(client, std_site):
    _post(client, std_site, {"lcp": 1000}, {"lcp": 2000}, {"lcp": 3000, "cls": 0.3},
          {"lcp": 5000, "inp": 600})
    result = _web_vitals(client, std_site)
    vitals = result["site_vitals"]
    # percentile_cont(0.75) of 1000, 2000, 3000, 5000: position 2.25 -> 3000 + 0.25 x 2000.
    assert vitals["lcp"] == {"p75": 3500.0, "samples": 4, "rating": "needs improvement"}
    assert vitals["cls"] == {"p75": 0.3, "samples": 1, "rating": "poor"}
    assert vitals["inp"] == {"p75": 600.0, "samples": 1, "rating": "poor"}
    assert vitals["fcp"] is None and vitals["ttfb"] is None
    assert result["pages"] == [{"page": "/pricing", "samples": 6, "lcp": 3500.0, "inp": 600.0,
                                "cls": 0.3, "fcp": None, "ttfb": None}]


def test_values_that_are_not_numbers_and_other_keys_are_no_samples(client, std_site):
    _post(client, std_site, {"lcp": "slow", "inp": True, "cls": None, "fid": 12},
          {"metric": "lcp", "value": 1200}, {"ttfb": [1], "fcp": {"v": 1}})
    vitals = _web_vitals(client, std_site)["site_vitals"]
    assert vitals == dict.fromkeys(("lcp", "inp", "cls", "fcp", "ttfb"))
