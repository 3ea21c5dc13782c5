"""gunicorn settings for egis (`gunicorn -c deploy/gunicorn.conf.py wsgi:app`).

Each value can be overridden from the environment (GUNICORN_*), the usual gunicorn way.
"""
import multiprocessing
import os
import shutil
import tempfile

bind = os.environ.get("GUNICORN_BIND", "127.0.0.1:8000")
# One process per core, a few threads each: the work is CPU-bound Python plus one database
# round trip, and the threads keep a core busy while others wait on the commit. gthread also
# keeps client (or nginx upstream) connections alive. bench/README.md has the measurements.
workers = int(os.environ.get("GUNICORN_WORKERS", multiprocessing.cpu_count()))
worker_class = "gthread"
threads = int(os.environ.get("GUNICORN_THREADS", "4"))
backlog = 2048
timeout = 30
graceful_timeout = 20
keepalive = 5
max_requests = int(os.environ.get("GUNICORN_MAX_REQUESTS", "0"))
max_requests_jitter = 50
# The app is imported once in the master; no database connection is opened before the fork.
preload_app = True
accesslog = os.environ.get("GUNICORN_ACCESSLOG") or None
errorlog = "-"
loglevel = os.environ.get("GUNICORN_LOGLEVEL", "info")
# gunicorn's control socket defaults to one path per user, which a second instance on the same
# host would take over: off unless GUNICORN_CONTROL_SOCKET names this instance's own path.
control_socket = os.environ.get("GUNICORN_CONTROL_SOCKET", "")
control_socket_disable = not control_socket

# /metrics adds up every worker's counters through files in this directory (app/metrics.py).
# Set here, before the app (and prometheus_client) is imported. Without PROMETHEUS_MULTIPROC_DIR
# from the environment, a fresh directory of this server's own, removed when it exits.
OWN_METRICS_DIR = "GUNICORN_OWN_METRICS_DIR"  # survives gunicorn re-reading this file on HUP
if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="egis-metrics-")
    os.environ[OWN_METRICS_DIR] = os.environ["PROMETHEUS_MULTIPROC_DIR"]


def on_starting(server):
    # Values left by a previous run would be added to this one's: start from none.
    directory = os.environ["PROMETHEUS_MULTIPROC_DIR"]
    os.makedirs(directory, exist_ok=True)
    for name in os.listdir(directory):
        if name.endswith(".db"):
            os.remove(os.path.join(directory, name))


def on_exit(server):
    own = os.environ.get(OWN_METRICS_DIR)
    if own:
        shutil.rmtree(own, ignore_errors=True)


def post_worker_init(worker):
    # Compile the crawler list's regexes before the first request, not during it.
    from app.crawlers import user_agents

    user_agents.warm_up()


def child_exit(server, worker):
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)
