"""The signed Mcp-Session-Id (app.agent.session): what a client declared, read back only from an
id this installation signed."""
import pytest

from app.agent.session import NOTHING_DECLARED, Declaration, SessionIds

ids = SessionIds(lambda: b"s" * 32)


@pytest.mark.parametrize("declaration", [Declaration(apps=True), NOTHING_DECLARED])
def test_an_issued_id_reads_back_as_its_declaration(declaration):
    session_id = ids.issue(declaration)
    assert ids.read(session_id) == declaration
    assert session_id.startswith("e1.") and session_id.isascii() and session_id.isprintable()


def test_two_ids_of_one_declaration_differ():
    assert ids.issue(Declaration(apps=True)) != ids.issue(Declaration(apps=True))


def test_a_tampered_truncated_or_foreign_id_is_not_read():
    session_id = ids.issue(Declaration(apps=True))
    prefix, payload, mac = session_id.split(".")
    flipped = payload[:-1] + ("A" if payload[-1] != "A" else "B")
    assert ids.read(f"{prefix}.{flipped}.{mac}") is None
    assert ids.read(session_id[:-1]) is None
    assert ids.read(f"e2.{payload}.{mac}") is None
    assert SessionIds(lambda: b"t" * 32).read(session_id) is None  # another installation's
    assert ids.read("not-an-egis-id") is None
    assert ids.read(session_id + "x" * 600) is None
    assert ids.read("e1.\ud800.x") is None

