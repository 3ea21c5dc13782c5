"""What the OAuth machinery adds to a worker's memory, loaded on its first OAuth request.

Each round is a fresh interpreter: the app (SQLite, schema made), then RSS; then a token
request (Authlib and app.oauth.server), then a consent page request (app.oauth.consent, its
templates): RSS and the Python allocations still held (tracemalloc) after each. A worker that
ingests only never pays either part (tests/test_worker_imports.py checks the imports).
`python -m bench.read.oauth_memory [--rounds 3]`.
"""
import argparse
import json
import subprocess
import sys
import tempfile

from bench.harness import ROOT

ROUND = """
import json
import tracemalloc

from app import create_app
from app.cli import upgrade_schema


def rss_mib():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024


app = create_app({"DATABASE_URL": "sqlite:///" + __import__("sys").argv[1]})
with app.app_context():
    upgrade_schema()
client = app.test_client()
client.get("/healthz")
app_only = rss_mib()
tracemalloc.start()
client.post("/oauth/token", data={"grant_type": "refresh_token", "client_id": "x"})
token_bytes = tracemalloc.get_traced_memory()[0]
after_token = rss_mib()
client.get("/oauth/authorize", query_string={"client_id": "x"})
page_bytes = tracemalloc.get_traced_memory()[0]
after_page = rss_mib()
print(json.dumps([app_only, after_token, after_page, token_bytes / 2**20, page_bytes / 2**20]))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    rounds = parser.parse_args().rounds
    for number in range(1, rounds + 1):
        with tempfile.TemporaryDirectory() as directory:
            done = subprocess.run([sys.executable, "-c", ROUND, f"{directory}/egis.sqlite3"],
                                  cwd=ROOT, capture_output=True, text=True, check=True)
        app_only, after_token, after_page, token, page = json.loads(
            done.stdout.splitlines()[-1])
        print(f"round {number}: app RSS {app_only:.1f} MiB; first token request: RSS "
              f"+{after_token - app_only:.1f} MiB, Python allocations +{token:.2f} MiB; first "
              f"consent page: RSS +{after_page - after_token:.1f} MiB, allocations "
              f"+{page - token:.2f} MiB")


if __name__ == "__main__":
    main()
