"""Dynamic registration (RFC 7591): public clients only, the redirect URI rules, the answer as
the MCP SDK reads it; and /api/openapi.json states the same rule (every case below is judged
alike by the server and by the document's schema)."""
import jsonschema_rs
import pytest
from mcp.shared.auth import OAuthClientInformationFull

ALLOWED = ["https://claude.ai/api/mcp/auth_callback", "https://chatgpt.com/connector_platform"
           "_oauth_redirect", "http://127.0.0.1:33418/callback", "http://localhost/cb",
           "http://[::1]:6274/oauth/callback", "https://[2001:db8::1]:8443/cb?x=1&y=%20",
           "cursor://anysphere.cursor-retrieval/oauth/user-abc/callback",
           "vscode://vscode.github-authentication/did-authenticate?windowid=1",
           "com.example.app:/oauth2redirect"]
REFUSED = ["http://example.com/callback", "http://127.0.0.1.example.com/cb",
           "http://localhost.example.com/cb", "https://claude.ai/cb#fragment", "https://",
           "javascript:alert(1)", "JavaScript:alert(1)", "data:text/html,<b>x</b>",
           "file:///etc/passwd", "about:blank", "HTTPS://claude.ai/cb", "https://claude.ai/c b",
           "https://claude.ai/é", "ftp://example.com/", "/relative", "", "x" * 2001]


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
    assert register(client, {"redirect_uris": [ALLOWED[0]]}).status_code == 201
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
