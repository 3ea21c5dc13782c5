"""The process's machinery, under every other package: work done behind the requests
(background), the Prometheus metrics, the request log, the ingest tally's counters."""
