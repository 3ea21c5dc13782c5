"""Discovery (RFC 9728 at both paths, RFC 8414), read with the MCP SDK's own models; PUBLIC from
the request, from EGIS_PUBLIC_URL or through a trusted proxy; the 401 challenge of /api/mcp and
when it says invalid_token; CORS on the documents and the three POST endpoints."""
import pytest
from mcp.shared.auth import OAuthMetadata, ProtectedResourceMetadata

from tests.fixtures.oauth import connect_code, in_process

RESOURCE_PATHS = ("/.well-known/oauth-protected-resource/api/mcp",
                  "/.well-known/oauth-protected-resource")
SERVER_PATH = "/.well-known/oauth-authorization-server"
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


def metadata(client, base: str = "http://localhost", **headers: str) -> tuple[dict, dict]:
    documents = [client.get(path, headers=headers) for path in RESOURCE_PATHS]
    assert [answer.status_code for answer in documents] == [200, 200]
    assert documents[0].get_json() == documents[1].get_json()
    resource = documents[0].get_json()
    server = client.get(SERVER_PATH, headers=headers).get_json()
    ProtectedResourceMetadata.model_validate(resource)
    OAuthMetadata.model_validate(server)
    assert resource == {"resource": f"{base}/api/mcp", "authorization_servers": [base],
                        "scopes_supported": ["stats:read"], "bearer_methods_supported": ["header"],
                        "resource_name": "egis"}
    return resource, server


def test_the_documents_say_where_everything_is(client):
    _resource, server = metadata(client)
    assert server == {
        "issuer": "http://localhost",
        "authorization_endpoint": "http://localhost/oauth/authorize",
        "token_endpoint": "http://localhost/oauth/token",
        "registration_endpoint": "http://localhost/oauth/register",
        "revocation_endpoint": "http://localhost/oauth/revoke",
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
        "revocation_endpoint_auth_methods_supported": ["none"],
        "scopes_supported": ["stats:read"],
        "client_id_metadata_document_supported": True,
        "authorization_response_iss_parameter_supported": True,
    }


def test_public_is_the_configured_url_or_what_a_trusted_proxy_says(make_app):
    configured = make_app(PUBLIC_URL="https://Analytics.Example.com/").test_client()
    _resource, server = metadata(configured, "https://analytics.example.com")
    assert server["token_endpoint"] == "https://analytics.example.com/oauth/token"
    challenged = configured.post("/api/mcp", json=PING)
    assert challenged.headers["WWW-Authenticate"] == (
        'Bearer resource_metadata="https://analytics.example.com/.well-known/'
        'oauth-protected-resource/api/mcp", scope="stats:read"')
    proxied = make_app(TRUSTED_PROXIES=1).test_client()
    metadata(proxied, "https://egis.example.org", **{
        "X-Forwarded-For": "203.0.113.9", "X-Forwarded-Proto": "https",
        "X-Forwarded-Host": "egis.example.org:443"})
    untrusted = make_app().test_client()  # the headers of an untrusted client are not read
    metadata(untrusted, **{"X-Forwarded-Proto": "https", "X-Forwarded-Host": "evil.example"})


def test_oauth_needs_https_beyond_loopback(app, make_app, make_site):
    make_site("std.example", "standard")
    with in_process(app) as make:  # on localhost, http is fine (RFC 8252)
        assert make().register().tokens(connect_code(app, "std.example"))["access_token"]
    plain = make_app(PUBLIC_URL="http://analytics.example.com").test_client()
    token = plain.post("/oauth/token", data={"grant_type": "refresh_token", "client_id": "x",
                                             "refresh_token": "y"})
    assert token.status_code == 400 and token.get_json()["error"] == "invalid_request"
    assert "OAuth needs HTTPS" in token.get_json()["error_description"]
    page = plain.get("/oauth/authorize", query_string={"client_id": "x"})
    assert page.status_code == 400 and "OAuth needs HTTPS" in page.get_data(as_text=True)
    assert plain.post("/oauth/revoke", data={"token": "x"}).status_code == 200


def challenge_of(answer) -> str:
    assert answer.status_code == 401, answer.data
    assert set(answer.get_json()) == {"error"}
    return answer.headers["WWW-Authenticate"]


PLAIN = ('Bearer resource_metadata="http://localhost/.well-known/oauth-protected-resource/'
         'api/mcp", scope="stats:read"')


def test_the_challenge_comes_only_without_valid_credentials(app, client, std_site):
    accepted = client.post("/api/mcp", json=PING, headers=std_site.server_headers())
    assert accepted.status_code == 200 and "WWW-Authenticate" not in accepted.headers
    assert challenge_of(client.post("/api/mcp", json=PING)) == PLAIN
    assert challenge_of(client.post("/api/mcp", json=PING, headers={
        "X-API-Key": std_site.server_key})) == PLAIN
    for token in ("egisat_unknown", "egisr_unknown", "egiss_unknown", "anything"):
        answer = client.post("/api/mcp", json=PING, headers={"Authorization": f"Bearer {token}"})
        assert challenge_of(answer) == PLAIN + ', error="invalid_token"', token
    wrong_kind = client.post("/api/mcp", json=PING, headers={
        "Authorization": f"Bearer {std_site.write_key}"})
    assert wrong_kind.status_code == 403 and "WWW-Authenticate" not in wrong_kind.headers


CORS_REQUESTS = [("GET", path, None) for path in (*RESOURCE_PATHS, SERVER_PATH)] + [
    ("POST", "/oauth/register", {"json": {"redirect_uris": ["http://127.0.0.1:1/cb"]}}),
    ("POST", "/oauth/token", {"data": {"grant_type": "refresh_token"}}),
    ("POST", "/oauth/revoke", {"data": {"token": "x"}})]


@pytest.mark.parametrize(("method", "path", "body"), CORS_REQUESTS)
def test_cors_for_any_origin_on_the_documents_and_the_post_endpoints(client, method, path, body):
    origin = {"Origin": "https://inspector.example"}
    answer = client.open(path, method=method, headers=origin, **(body or {}))
    assert answer.status_code < 500
    assert answer.headers["Access-Control-Allow-Origin"] == "*"
    assert "Access-Control-Allow-Credentials" not in answer.headers
    preflight = client.options(path, headers={
        **origin, "Access-Control-Request-Method": method,
        "Access-Control-Request-Headers": "content-type, mcp-protocol-version"})
    assert preflight.status_code == 200
    assert preflight.headers["Access-Control-Allow-Origin"] == "*"
    allowed = preflight.headers["Access-Control-Allow-Headers"].lower()
    assert "content-type" in allowed and "mcp-protocol-version" in allowed
    assert method in preflight.headers["Access-Control-Allow-Methods"]


def test_the_consent_page_answers_no_cors(client):
    page = client.get("/oauth/authorize", headers={"Origin": "https://inspector.example"})
    assert page.status_code == 400 and "Access-Control-Allow-Origin" not in page.headers
