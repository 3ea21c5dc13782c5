"""Tracking: the write key's path, from a browser's or backend's batch to stored events.

- gate.py: what every tracking endpoint does first (key, Origin, rate limits, bot filter)
- ingest.py: the ingest rules (plan gates, stripping, clock skew, sampling) for batches and goals
- quota.py: monthly usage read cheaply, and whole-session sampling over the quota
- pipeline.py: each tracking endpoint's steps in order, with one receive time (`ingest_events`)
- store.py: a batch stored once, atomically (one statement on PostgreSQL)
"""
