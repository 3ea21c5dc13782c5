"""Ingest benchmarks: POST /api/events through real servers, and its parts in process."""
