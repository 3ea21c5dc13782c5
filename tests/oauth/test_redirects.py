"""Which redirect URIs a client may have (app.oauth.redirects): https: anywhere, http: to a
loopback host, a native app's own scheme; the server's rule and the OpenAPI document's agree."""
import jsonschema
import pytest

from app.oauth.redirects import JSON_SCHEMA, MAX_LENGTH, destination, is_allowed

ALLOWED = ["https://claude.ai/api/mcp/auth_callback", "https://[2001:db8::1]:8443/cb?x=1",
           "http://127.0.0.1:33418/callback", "http://localhost/cb", "http://[::1]:9/",
           "cursor://anysphere.cursor-retrieval/oauth/callback", "com.example.app:/oauth2redirect"]
REFUSED = ["http://example.com/callback", "https://claude.ai/cb#fragment",
           "javascript:alert(1)", "JavaScript:alert(1)", "data:text/html,hi", "file:///etc/passwd",
           "view-source:https://a.example", "chrome-extension://abc/cb", "intent://x#Intent;end",
           "ftp://files.example/", "https://claude.ai/cb<script>", "http://127.0.0.2/cb",
           "https://a.example/" + "a" * MAX_LENGTH, "", "no-scheme"]


@pytest.mark.parametrize("uri", ALLOWED)
def test_an_allowed_uri_passes_the_server_and_the_schema(uri):
    assert is_allowed(uri)
    jsonschema.validate(uri, {"type": "string", **JSON_SCHEMA})


@pytest.mark.parametrize("uri", [uri for uri in REFUSED if len(uri) <= MAX_LENGTH])
def test_a_refused_uri_fails_the_server_and_the_schema(uri):
    assert not is_allowed(uri)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(uri, JSON_SCHEMA)


def test_a_uri_over_the_length_is_refused_though_its_pattern_matches():
    long_uri = "https://a.example/" + "a" * MAX_LENGTH
    assert not is_allowed(long_uri)
    assert is_allowed(long_uri[:MAX_LENGTH])


def test_the_destination_is_the_web_host_or_the_apps_scheme_and_name():
    assert destination("https://claude.ai/api/mcp/auth_callback") == "claude.ai"
    assert destination("http://127.0.0.1:33418/callback") == "127.0.0.1:33418"
    assert destination("cursor://anysphere.cursor-retrieval/cb") == \
        "cursor://anysphere.cursor-retrieval"
    assert destination("com.example.app:/oauth2redirect") == "com.example.app:"
