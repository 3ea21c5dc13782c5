"""The one rule a derived text value passes before it is stored (app.context.values)."""
import pytest

from app.context.values import storable


def test_printable_text_within_the_length_is_kept_as_it_is():
    assert storable("Mozilla/5.0 (X11)", 17) == "Mozilla/5.0 (X11)"
    assert storable("münchen.example", 100) == "münchen.example"


def test_one_character_over_the_length_is_dropped():
    assert storable("a" * 10, 10) == "a" * 10
    assert storable("a" * 11, 10) is None


@pytest.mark.parametrize("character", ["\x00", "\t", "\n", "\x07", "\x7f", "\ud800"])
def test_what_a_database_refuses_or_nobody_wrote_by_hand_is_dropped(character):
    assert storable("text around", 100) == "text around"
    assert storable(f"text{character}around", 100) is None


@pytest.mark.parametrize("value", [None, ""])
def test_nothing_stays_nothing(value):
    assert storable(value, 100) is None
