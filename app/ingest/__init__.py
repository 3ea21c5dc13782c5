"""The ingest contract shared by tracking, revenue and crawlers: what is stripped or refused for
privacy (privacy) and the replay guard of an Idempotency-Key (idempotency)."""
