"""app.context.screen: the viewport width's class, and nothing for what is not a width."""
import pytest

from app.context.screen import screen_class


@pytest.mark.parametrize(("width", "expected"), [
    (1, "small"), (320, "small"), (575, "small"), (575.9, "small"),
    (576, "medium"), (768, "medium"), (991, "medium"), (991.5, "medium"),
    (992, "large"), (1280, "large"), (1439, "large"),
    (1440, "xlarge"), (1920, "xlarge"), (10**400, "xlarge"), (1e308, "xlarge"),
])
def test_the_class_of_a_positive_width(width, expected):
    assert screen_class({"screenWidth": width}) == expected


@pytest.mark.parametrize("fingerprint", [
    None, {}, [], "1280", {"screenWidth": 0}, {"screenWidth": -1}, {"screenWidth": -0.0},
    {"screenWidth": float("nan")}, {"screenWidth": float("inf")}, {"screenWidth": "1280"},
    {"screenWidth": True}, {"screenWidth": None}, {"screenWidth": [1280]},
    {"screenWidth": {"px": 1280}}, {"screen_width": 1280}, {"width": 1280},
])
def test_anything_else_is_ignored(fingerprint):
    assert screen_class(fingerprint) is None


def test_other_fingerprint_keys_do_not_matter():
    assert screen_class({"screenWidth": 800, "canvas": "x" * 1000, "fonts": [1, 2]}) == "medium"
