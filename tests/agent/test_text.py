"""app.agent.text: the text a tool answers beside its structured content."""
from app.agent.text import render_describe

SUMMARY = {"site": "shop.example", "from": "2026-03-01", "to": "2026-03-31",
           "timezone": "Europe/Berlin", "estimated": False, "first_event": None,
           "last_event": None, "events_by_type": {"pageview": 1200, "goal": 40},
           "metrics": ["visitors"], "dimensions": ["visit:source"]}


def test_describe_lists_names_and_keys_with_their_counts():
    text = render_describe({
        **SUMMARY,
        "goals": [{"name": "Signup", "count": 40}], "goals_total": 1,
        "custom_events": [], "custom_events_total": 0,
        "properties": [{"key": "plan", "count": 1840, "event_names": ["Signup", "Upgrade"],
                        "event_types": ["goal"], "count_by_name": {}}],
        "properties_total": 1})
    assert text.splitlines()[2:5] == ["Goals: Signup (40)", "Custom events: none",
                                      "Property keys: plan (1,840, on Signup, Upgrade)"]


def test_describe_says_how_many_a_capped_list_leaves_out():
    text = render_describe({
        **SUMMARY, "goals": [{"name": "Signup", "count": 40}, {"name": "Trial", "count": 9}],
        "goals_total": 130, "custom_events": [], "custom_events_total": 0, "properties": [],
        "properties_total": 0})
    assert "Goals: Signup (40); Trial (9); the 2 most used of 130" in text.splitlines()
