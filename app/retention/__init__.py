"""Retention and erasure: deleting what is older than the operator keeps (`flask data prune`),
or one person's data (`flask data erase`), beside live ingest, with the rollups kept whole."""
