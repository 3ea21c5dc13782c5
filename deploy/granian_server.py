"""granian for egis, the faster server behind the same nginx (`bench.ingest.servers`):

    python deploy/granian_server.py [granian options]

This is granian's own command line (`python -m granian`: its options, its GRANIAN_* variables)
serving egis's WSGI app, with egis's defaults where granian's differ. An option given here, or
its variable set in the environment, wins over them:

- GRANIAN_WORKERS, one process per core and one more; GRANIAN_BLOCKING_THREADS, 4 app threads
  each (the shape of deploy/gunicorn.conf.py). Bound to GRANIAN_HOST:GRANIAN_PORT, granian's
  own default 127.0.0.1:8000: like gunicorn, egis is exposed only behind the shipped nginx
  (deploy/nginx.conf), which reads each request whole before granian sees it.
- Or bound to a Unix socket (GRANIAN_UDS) that any local user may connect to, like gunicorn's.
- HTTP/1.1 only (what nginx speaks to it); a worker that dies is replaced; on SIGTERM the
  workers finish the requests they hold, for at most 20 s; SIGHUP replaces them one by one.
- No access log (egis writes its own request lines); `--access-log` turns granian's on, in a
  format without the client address.
- PROMETHEUS_MULTIPROC_DIR as deploy/gunicorn.conf.py sets it: emptied at start; when not
  given, a fresh directory of this server's own, removed when it exits.
- The app is imported once, and frozen for the collector, before the workers are forked (as
  deploy/gunicorn.conf.py does); each worker compiles the crawler list before its first request.
  SIGHUP's new workers run the code loaded at start, as gunicorn's do with preload: a new
  version of egis needs a restart.
"""
import gc
import multiprocessing
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

DEFAULTS = {
    "GRANIAN_WORKERS": str(multiprocessing.cpu_count() + 1),  # as deploy/gunicorn.conf.py
    "GRANIAN_BLOCKING_THREADS": "4",
    "GRANIAN_HTTP": "1",
    "GRANIAN_RESPAWN_FAILED_WORKERS": "true",
    "GRANIAN_WORKERS_KILL_TIMEOUT": "20",
    # On a Unix socket (GRANIAN_UDS), nginx's user must be able to connect, as to gunicorn's
    # socket (its umask 0) or to 127.0.0.1:8000: granian would apply the process's umask.
    "GRANIAN_UDS_PERMISSIONS": "0666",
    # No client address, no query string: what was asked and how it went.
    "GRANIAN_LOG_ACCESS_FMT":
        '[%(time)s] "%(method)s %(path)s %(protocol)s" %(status)d %(dt_ms).1fms',
}
# What is served, and how: last on the command line, so that no option given replaces them.
APP_ARGUMENTS = ("--interface", "wsgi", "--no-ws", "--factory", "granian_server:warmed_up_app")


def warmed_up_app():
    """egis's WSGI app, built in each worker, with the crawler list compiled before the first
    request rather than during it."""
    # Until granian sets the worker's own handlers, after this returns, a SIGTERM would reach
    # the handler inherited from the main process and be lost: the worker would run on until
    # the kill timeout. A worker that serves nothing yet may as well simply exit.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    from app.crawlers import user_agents
    from wsgi import app

    user_agents.warm_up()
    return app


def empty_metrics_dir() -> str | None:
    """Point PROMETHEUS_MULTIPROC_DIR at an empty directory (a previous run's values would be
    added to this one's); the directory when it is this server's own, to remove at exit."""
    own = None
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        own = tempfile.mkdtemp(prefix="egis-metrics-")
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = own
    directory = os.environ["PROMETHEUS_MULTIPROC_DIR"]
    os.makedirs(directory, exist_ok=True)
    for name in os.listdir(directory):
        if name.endswith(".db"):
            os.remove(os.path.join(directory, name))
    return own


def preload() -> None:
    """Import the app once, here, before granian forks its workers (gunicorn's preload_app):
    their pages of it stay this process's until a worker writes to them (bench/README.md,
    "Memory per worker"). No database connection is opened yet."""
    sys.path.insert(0, str(ROOT))  # wsgi.py and app/, from whatever directory this is started
    # Forked explicitly: Python 3.14's default (forkserver) would make granian spawn workers
    # that import it all again.
    multiprocessing.set_start_method("fork")
    import wsgi  # noqa: F401

    # Its objects go where the collector never looks: a worker's full collection would write
    # to each of them and so copy every page they share with this process.
    gc.freeze()


def main() -> None:
    for name, value in DEFAULTS.items():
        os.environ.setdefault(name, value)
    own_metrics_dir = empty_metrics_dir()
    preload()
    sys.argv = [sys.argv[0], *sys.argv[1:], *APP_ARGUMENTS]
    from granian.cli import entrypoint

    try:
        entrypoint()
    finally:
        if own_metrics_dir:
            shutil.rmtree(own_metrics_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
