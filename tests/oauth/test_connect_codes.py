"""One-time connect codes (app.oauth.connect_codes): 80 bits in four groups of Crockford's
base32, read back whatever the case, dashes or look-alike letters, valid 15 minutes and once."""
from datetime import timedelta

import pytest

from app.access.keys import hash_key
from app.oauth import connect_codes
from app.oauth.connect_codes import ALPHABET, EXPIRED, USED, WRONG, issue, normalize, redeem
from models import ConnectCode, Site, database
from models.site import utcnow


@pytest.fixture
def site(app, std_site):
    with app.app_context(), database.connection_context():
        yield Site.get_by_id(std_site.site.id)


def test_an_issued_code_reads_out_in_four_groups_and_only_its_digest_is_stored(site):
    code = issue(site)
    groups = code.split("-")
    assert [len(group) for group in groups] == [4, 4, 4, 4]
    assert set("".join(groups)) <= set(ALPHABET)
    stored = ConnectCode.get()
    assert stored.code_hash == hash_key("".join(groups))
    assert stored.expires_at - stored.created_at == connect_codes.LIFETIME


def test_case_dashes_spaces_and_look_alikes_do_not_matter():
    assert normalize("k7qf 9xmb-2rtd wp4h") == "K7QF9XMB2RTDWP4H"
    assert normalize("IL0O-0000-0000-0000") == "1100000000000000"
    assert normalize("K7QF-9XMB-2RTD-WP4") is None  # 15 characters
    assert normalize("K7QF-9XMB-2RTD-WP4U") is None  # no U in the alphabet
    assert normalize("") is None


def test_a_code_names_its_site_once(site):
    code = issue(site)
    assert redeem(code.lower()).site.id == site.id
    assert redeem(code) == connect_codes.Redeemed(refusal=USED)


def test_a_wrong_or_expired_code_names_no_site(site):
    code = issue(site)
    assert redeem("0000-0000-0000-0000").refusal == WRONG
    assert redeem("not a code").refusal == WRONG
    ConnectCode.update(expires_at=utcnow() - timedelta(seconds=1)).execute()
    assert redeem(code) == connect_codes.Redeemed(refusal=EXPIRED)
