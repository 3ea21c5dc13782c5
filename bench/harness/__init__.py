"""What the benchmarks share: their databases (database), the servers they start (servers),
wrk and the batches it sends (load, batches), the trees they compare (trees) and the seeded
traffic of the analytics benchmarks (visits, seed)."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the checkout: its deploy/, wsgi.py, app/
