"""The ingest contract shared by tracking, revenue and crawlers: what is stripped or refused for
privacy (privacy), the replay guard of an Idempotency-Key (idempotency) and what a site's plan
lets it send (plans)."""
