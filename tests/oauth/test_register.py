"""Dynamic registration (RFC 7591): public clients only, the redirect URI rules (the schemes a
browser handles itself refused, 1,000 characters at most), the client name without control,
direction or invisible characters, the answer as the MCP SDK reads it; and /api/openapi.json
states the same redirect URI rule (every case below is judged alike by the server and by the
document's schema). The caps on registrations: tests/oauth/test_registration.py."""
import sys
import unicodedata

import jsonschema_rs
import pytest
from mcp.shared.auth import OAuthClientInformationFull

from app.oauth import metadata

ALLOWED = ["https://claude.ai/api/mcp/auth_callback", "https://chatgpt.com/connector_platform"
           "_oauth_redirect", "http://127.0.0.1:33418/callback", "http://localhost/cb",
           "http://[::1]:6274/oauth/callback", "https://[2001:db8::1]:8443/cb?x=1&y=%20",
           "cursor://anysphere.cursor-retrieval/oauth/user-abc/callback",
           "vscode://vscode.github-authentication/did-authenticate?windowid=1",
           "com.example.app:/oauth2redirect", "https://claude.ai/" + "x" * 982]
REFUSED = ["http://example.com/callback", "http://127.0.0.1.example.com/cb",
           "http://localhost.example.com/cb", "https://claude.ai/cb#fragment", "https://",
           "javascript:alert(1)", "JavaScript:alert(1)", "data:text/html,<b>x</b>",
           "file:///etc/passwd", "about:blank", "HTTPS://claude.ai/cb", "https://claude.ai/c b",
           "https://claude.ai/é", "ftp://example.com/", "/relative", "", "x" * 2001,
           "https://claude.ai/" + "x" * 983,  # 1,001 characters
           # Schemes a browser handles itself: it would open them in place of an app.
           "view-source:https://claude.ai/cb", "jar:https://claude.ai/a.jar!/cb", "chrome://settings",
           "vbscript:msgbox(1)", "blob:https://claude.ai/0b3f", "filesystem:https://claude.ai/t/x",
           "chrome-extension://abcdef/cb.html", "moz-extension://abcdef/cb", "edge://settings",
           "intent://cb/", "resource://gre/cb", "ws://127.0.0.1/cb", "wss://claude.ai/cb"]
VALID_KINDS = ["https://claude.ai/api/mcp/auth_callback", "http://127.0.0.1:33418/callback",
               "cursor://anysphere.cursor-retrieval/oauth/callback"]


def register(client, body):
    return client.post("/oauth/register", json=body)


@pytest.fixture
def schema(client) -> jsonschema_rs.Validator:
    document = client.get("/api/openapi.json").get_json()
    operation = document["paths"]["/oauth/register"]["post"]
    body = operation["requestBody"]["content"]["application/json"]["schema"]
    return jsonschema_rs.validator_for({"$schema": "https://json-schema.org/draft/2020-12/schema",
                                        **body, "components": document["components"]})


def test_a_public_client_registers(client, schema):
    body = {"redirect_uris": ["http://127.0.0.1:9/cb"], "client_name": "Claude",
            "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
            "scope": "stats:read offline_access", "application_type": "native",
            "logo_uri": "not even a URL: ignored"}
    assert schema.is_valid(body)
    answer = register(client, body)
    assert answer.status_code == 201 and answer.headers["Access-Control-Allow-Origin"] == "*"
    registered = answer.get_json()
    assert set(registered) == {"client_id", "client_id_issued_at", "redirect_uris", "client_name",
                               "token_endpoint_auth_method", "grant_types", "response_types",
                               "scope"}
    info = OAuthClientInformationFull.model_validate(registered)
    assert (info.token_endpoint_auth_method, info.scope, info.client_secret) == (
        "none", "stats:read", None)
    assert register(client, body).get_json()["client_id"] != info.client_id


@pytest.mark.parametrize("uri", ALLOWED)
def test_allowed_redirect_uris(client, schema, uri):
    body = {"redirect_uris": [uri]}
    assert schema.is_valid(body)
    assert register(client, body).status_code == 201


@pytest.mark.parametrize("uri", REFUSED)
def test_refused_redirect_uris(client, schema, uri):
    for valid in VALID_KINDS:  # https, loopback, a native app's scheme
        assert register(client, {"redirect_uris": [valid]}).status_code == 201
    body = {"redirect_uris": [ALLOWED[0], uri]}
    assert not schema.is_valid(body)
    answer = register(client, body)
    assert answer.status_code == 400
    assert answer.get_json()["error"] == "invalid_redirect_uri"
    assert answer.get_json()["error_description"].startswith("redirect_uris: ")


@pytest.mark.parametrize(("body", "error"), [
    ({"redirect_uris": []}, "invalid_redirect_uri"),
    ({"redirect_uris": [ALLOWED[0]] * 11}, "invalid_redirect_uri"),
    ({"client_name": "no URIs"}, "invalid_redirect_uri"),
    ({"redirect_uris": ALLOWED[0]}, "invalid_redirect_uri"),  # a string, not a list
    ({"redirect_uris": [ALLOWED[0]], "token_endpoint_auth_method": "client_secret_basic"},
     "invalid_client_metadata"),
    ({"redirect_uris": [ALLOWED[0]], "token_endpoint_auth_method": "private_key_jwt"},
     "invalid_client_metadata"),
    ({"redirect_uris": [ALLOWED[0]], "grant_types": ["client_credentials"]},
     "invalid_client_metadata"),
    ({"redirect_uris": [ALLOWED[0]], "response_types": ["token"]}, "invalid_client_metadata"),
    ({"redirect_uris": [ALLOWED[0]], "client_name": "nul\x00"}, "invalid_client_metadata"),
    ({"redirect_uris": [ALLOWED[0]], "client_name": "x" * 201}, "invalid_client_metadata"),
    (["not", "an", "object"], "invalid_client_metadata"),
])
def test_refused_metadata(client, schema, body, error):
    assert register(client, {"redirect_uris": [ALLOWED[0]],
                             "token_endpoint_auth_method": "none"}).status_code == 201
    assert not schema.is_valid(body)
    answer = register(client, body)
    assert (answer.status_code, answer.get_json()["error"]) == (400, error)
    assert answer.get_json()["error_description"]


def test_a_body_that_is_not_json(client):
    assert register(client, {"redirect_uris": [ALLOWED[0]]}).status_code == 201
    broken = client.post("/oauth/register", data=b"{", content_type="application/json")
    assert (broken.status_code, broken.get_json()["error"]) == (400, "invalid_client_metadata")
    assert client.post("/oauth/register", data=b"redirect_uris=x").status_code == 415


VISIBLE_NAMES = ["Claude", "Café ☕", "日本語のアプリ", "Emoji ❤\ufe0f", "Non\u00a0breaking",
                 "Private use \ue000", "x" * 200]
HIDDEN_NAMES = [
    "Good \u202eevil", "\u202aembedded", "\u202bx", "\u202cx", "\u202dx", "\u2066x\u2069",
    "\u2067x", "\u2068x", "mark\u200e", "mark\u200f", "arabic\u061c", "Cla\u200bude",
    "Cla\u200cude", "Cla\u200dude", "word\u2060joiner", "\ufeffbom", "soft\u00adhyphen",
    "tag\U000e0041", "tab\there", "line\nfeed", "del\x7f", "nul\x00", "c1\x85",
    "line\u2028separator", "para\u2029", "filler\u3164", "\u115fhangul", "braille\u2800",
    "cgj\u034f", "khmer\u17b4", "halfwidth\uffa0"]


@pytest.mark.parametrize("name", HIDDEN_NAMES)
def test_a_name_that_hides_characters_is_refused(client, schema, name):
    for visible in VISIBLE_NAMES:
        body = {"redirect_uris": [ALLOWED[0]], "client_name": visible}
        assert schema.is_valid(body)
        answer = register(client, body)
        assert (answer.status_code, answer.get_json()["client_name"]) == (201, visible)
    body = {"redirect_uris": [ALLOWED[0]], "client_name": name}
    assert not schema.is_valid(body)  # the document says so too
    answer = register(client, body)
    assert (answer.status_code, answer.get_json()["error"]) == (400, "invalid_client_metadata")
    assert answer.get_json()["error_description"].startswith(
        "client_name: Not allowed: no control, direction or invisible characters (it holds U+")


def test_a_name_of_spaces_is_no_name(client):
    answer = register(client, {"redirect_uris": [ALLOWED[0]], "client_name": "   "})
    assert answer.status_code == 201 and "client_name" not in answer.get_json()


def test_the_hidden_characters_are_every_control_format_and_separator_this_python_knows():
    """metadata.FORMATTING lists them as ranges (its pattern is the document's): exactly the
    characters of those categories in this Python's Unicode tables; BLANK's are letters and
    marks."""
    def listed(ranges):
        return {code for first, last in ranges for code in range(first, last + 1)}

    assert listed(metadata.FORMATTING) == {
        code for code in range(sys.maxunicode + 1)
        if unicodedata.category(chr(code)) in metadata.HIDDEN_CATEGORIES}
    assert {unicodedata.category(chr(code))[0] for code in listed(metadata.BLANK)} == {"L", "M",
                                                                                       "S"}
