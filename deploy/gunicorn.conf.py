"""gunicorn settings for egis (`gunicorn -c deploy/gunicorn.conf.py wsgi:app`).

Each value can be overridden from the environment (GUNICORN_*), the usual gunicorn way.

egis is exposed only behind the shipped nginx (deploy/nginx.conf), never to clients directly:
each of gunicorn's threads reads a request's headers itself, so a few clients that send theirs
a line at a time (slow loris) hold every thread and ingest stops; nginx reads each request whole
before passing it on. So gunicorn listens on 127.0.0.1 or a Unix socket, and says so loudly at
start when GUNICORN_BIND names an address other hosts can reach.
"""
import gc
import ipaddress
import json
import multiprocessing
import os
import shutil
import ssl
import tempfile

from gunicorn import util
from gunicorn.http import errors as http_errors
from gunicorn.workers.gthread import ThreadWorker

# Loopback or a Unix socket only, nginx in front (above).
bind = os.environ.get("GUNICORN_BIND", "127.0.0.1:8000")
# One process per core and one more, a few threads each: the work is CPU-bound Python plus one
# database round trip, and the threads keep a core busy while others wait on the commit; with
# one process per core, all of a core's threads were sometimes waiting at once (the cores 10-15 %
# idle under small batches; the extra process: 1-event batches up to 15 % faster, 25 MiB more).
# gthread also keeps client (or nginx upstream) connections alive. bench/README.md, "Workers".
workers = int(os.environ.get("GUNICORN_WORKERS", multiprocessing.cpu_count() + 1))
# worker_class: GthreadJsonRefusals below (gthread, with JSON refusals).
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
# No client address (%(h)s), no query string, no referrer: what was asked and how it went.
access_log_format = '%(t)s "%(m)s %(U)s %(H)s" %(s)s %(b)s %(M)sms "%(a)s"'
errorlog = "-"
loglevel = os.environ.get("GUNICORN_LOGLEVEL", "info")
# gunicorn's control socket defaults to one path per user, which a second instance on the same
# host would take over: off unless GUNICORN_CONTROL_SOCKET names this instance's own path.
control_socket = os.environ.get("GUNICORN_CONTROL_SOCKET", "")
control_socket_disable = not control_socket

# /metrics adds up every worker's counters through files in this directory (app/runtime/metrics.py).
# Set here, before the app (and prometheus_client) is imported. Without PROMETHEUS_MULTIPROC_DIR
# from the environment, a fresh directory of this server's own, removed when it exits.
OWN_METRICS_DIR = "GUNICORN_OWN_METRICS_DIR"  # survives gunicorn re-reading this file on HUP
if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="egis-metrics-")
    os.environ[OWN_METRICS_DIR] = os.environ["PROMETHEUS_MULTIPROC_DIR"]


def reachable_from_other_hosts(address) -> bool:
    """Whether gunicorn's listening `address` (host, port), or a Unix socket's path, takes
    connections from other hosts: anything but a loopback address or a socket file."""
    if not isinstance(address, tuple):
        return False  # a Unix socket (a path), or an inherited file descriptor
    host = address[0].strip("[]")
    if host == "localhost":
        return False
    try:
        return not ipaddress.ip_address(host).is_loopback
    except ValueError:
        return True  # a host name: whatever it resolves to, maybe not loopback


def when_ready(server):
    exposed = [f"{address[0]}:{address[1]}" for address in server.cfg.address
               if reachable_from_other_hosts(address)]
    if exposed:
        server.log.warning(
            "egis listens on %s, which other hosts can reach: egis is exposed only behind the "
            "shipped nginx (deploy/nginx.conf), which reads each request whole; reached "
            "directly, a few slow clients hold all of gunicorn's threads. Bind 127.0.0.1 or a "
            "Unix socket (GUNICORN_BIND).", ", ".join(exposed))


def on_starting(server):
    # Values left by a previous run would be added to this one's: start from none.
    directory = os.environ["PROMETHEUS_MULTIPROC_DIR"]
    os.makedirs(directory, exist_ok=True)
    for name in os.listdir(directory):
        if name.endswith(".db"):
            os.remove(os.path.join(directory, name))


def pre_fork(server, worker):
    # The preloaded app's objects go where the collector never looks: a worker's full collection
    # would write to each of them and so copy every page they share with the master.
    gc.freeze()


def on_exit(server):
    own = os.environ.get(OWN_METRICS_DIR)
    if own:
        shutil.rmtree(own, ignore_errors=True)


# Requests gunicorn refuses before the app sees them (bad request line or headers, a header over
# 8 KiB) answer JSON like every other error, with a fixed sentence: gunicorn's own answer is HTML,
# and its log line and text carry the client address and the offending header. First match wins.
REFUSALS = (  # (exception classes, status, reason, message)
    ((http_errors.InvalidResponseHeader, http_errors.InvalidResponseHeaderName,
      http_errors.ConfigurationProblem), 500, "Internal Server Error",
     "Internal server error; the request was not stored, retry later."),
    ((http_errors.LimitRequestHeaders,), 431, "Request Header Fields Too Large",
     "A request header is too large (at most 8190 bytes), or there are too many."),
    ((http_errors.LimitRequestLine,), 414, "URI Too Long", "The request line is too long."),
    ((http_errors.UnsupportedTransferCoding,), 501, "Not Implemented",
     "This Transfer-Encoding is not supported: send chunked or a Content-Length."),
    ((http_errors.ExpectationFailed,), 417, "Expectation Failed",
     "Only Expect: 100-continue is supported."),
    ((http_errors.ForbiddenProxyRequest, ssl.SSLError), 403, "Forbidden",
     "This request is not allowed."),
    ((http_errors.ParseException,), 400, "Bad Request",
     "The request is not valid HTTP: check the request line and the header names and values."),
)


def refusal_for(error: BaseException) -> tuple[int, str, str]:
    for classes, status, reason, message in REFUSALS:
        if isinstance(error, classes):
            return status, reason, message
    return REFUSALS[0][1:]


class GthreadJsonRefusals(ThreadWorker):
    """gthread, with JSON refusals that log neither the client address nor the request's text."""

    def handle_error(self, req, client, addr, exc):
        status, reason, message = refusal_for(exc)
        if status >= 500:
            self.log.exception("error handling a request")
        else:
            self.log.warning("refused a request that is not valid HTTP: %s %s", status,
                             type(exc).__name__)
        body = json.dumps({"error": message}).encode()
        head = (f"HTTP/1.1 {status} {reason}\r\nConnection: close\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n")
        try:
            util.write_nonblock(client, head.encode() + body)
        except OSError:
            self.log.debug("could not send the refusal")


worker_class = GthreadJsonRefusals


def post_worker_init(worker):
    # Compile the crawler list's regexes before the first request, not during it.
    from app.crawlers import user_agents

    user_agents.warm_up()


def child_exit(server, worker):
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)
