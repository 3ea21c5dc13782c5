"""Who is asking: API keys (keys) and the authentication of each request with them (auth)."""
