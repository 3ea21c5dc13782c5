"""Who is asking: API keys (keys) and the authentication of each request with them, or with
another issuer's bearer token on the agent endpoint (auth)."""
