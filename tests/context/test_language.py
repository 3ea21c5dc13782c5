"""app.context.language: the primary subtag of the first Accept-Language entry, ISO 639-1 only."""
import pytest
from babel import Locale

from app.context.language import ISO_639_1, language


@pytest.mark.parametrize(("header", "code"), [
    ("de-CH,de;q=0.9,en;q=0.8", "de"),
    ("en-US,en;q=0.9", "en"),
    ("fr", "fr"),
    ("PT-br", "pt"),
    ("zh-Hant-TW,zh;q=0.9", "zh"),
    ("en_GB", "en"),
    ("  ja ; q=1.0 , en", "ja"),
    ("nb-NO,no;q=0.9", "nb"),
    ("en;q=0.1,de;q=0.9", "en"),  # the first entry, whatever its quality value
])
def test_the_first_entrys_primary_subtag(header, code):
    assert language(header) == code


@pytest.mark.parametrize("header", [
    None, "", "*", "*,de;q=0.5", "xx", "gsw-CH", "und", "i-klingon", "english", "e", ",de",
    ";q=1", "de\x00", "\ud800e", "d\u0435",  # a Cyrillic e
    "x" * 10_240, ",".join(["de"] * 2000)[1:],
])
def test_anything_else_is_null(header):
    assert language(header) is None


def test_a_10_kb_header_is_read_up_to_its_first_entry():
    assert language("fi," + ",".join(["de;q=0.5"] * 1200)) == "fi"
    assert language("en-" + "a" * 10_240) == "en"


def test_the_code_list_is_cldrs_two_letter_languages():
    assert {code for code in Locale("en").languages
                         if len(code) == 2 and code.isalpha()} == ISO_639_1
    assert len(ISO_639_1) == 184 and {"de", "en", "zh", "he", "yi"} <= ISO_639_1
