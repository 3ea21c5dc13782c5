"""The servers the benchmarks start: gunicorn or granian as deployed, serving this checkout (or
another tree), in the bench environment, with Debian's nginx in front when asked; free ports
for them; each worker's memory."""
import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.harness import ROOT


def free_ports(count: int) -> list[int]:
    """`count` distinct TCP ports that nothing listens on at 127.0.0.1 now: a fixed port would
    collide with whatever else runs on the machine, another benchmark included."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


# nginx's and its upstream's, for nginx_in_front (bench.ingest.servers, bench.ingest.slow_loris)
UPSTREAM_PORT, NGINX_PORT = free_ports(2)


def bench_env(db_url: str, port: int, workers: int, threads: int) -> dict[str, str]:
    """The server's environment: the bench database, rate limits out of the load's reach, one
    trusted proxy hop (the browser requests' X-Forwarded-For is their client address)."""
    return {**os.environ, "DATABASE_URL": db_url, "FLASK_APP": "wsgi.py",
            "EGIS_TRUSTED_PROXIES": "1",
            "EGIS_RATE_LIMIT_KEY": '"100000000/minute"',
            "EGIS_RATE_LIMIT_IP": '"100000000/minute"',
            "GUNICORN_BIND": f"127.0.0.1:{port}", "GUNICORN_WORKERS": str(workers),
            "GUNICORN_THREADS": str(threads), "GUNICORN_LOGLEVEL": "warning"}


def flask(*args: str, env: dict[str, str], root: Path = ROOT) -> str:
    """The `flask` CLI of the tree at `root`."""
    return subprocess.run([sys.executable, "-m", "flask", *args], cwd=root, env=env, check=True,
                          capture_output=True, text=True).stdout


def wait_for(url: str) -> None:
    """Poll `url` until it answers (30 s at most)."""
    for _ in range(150):
        try:
            urllib.request.urlopen(url, timeout=1)
            return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer")


@contextmanager
def serving(server: subprocess.Popen) -> Iterator[subprocess.Popen]:
    """The server, stopped (SIGTERM, then waited for) when the block ends, however it ends."""
    try:
        yield server
    finally:
        server.terminate()
        server.wait(timeout=30)


def start_gunicorn(env: dict[str, str], port: int, root: Path = ROOT) -> subprocess.Popen:
    """gunicorn with deploy/gunicorn.conf.py (GUNICORN_BIND in `env`) serving the code in
    `root` (this checkout, or another tree of the project: bench.ingest.visit), once it
    answers."""
    server = subprocess.Popen([sys.executable, "-m", "gunicorn", "-c", "deploy/gunicorn.conf.py",
                               "--no-control-socket", "wsgi:app"], cwd=root, env=env)
    wait_for(f"http://127.0.0.1:{port}/healthz")
    return server


def start_granian(env: dict[str, str], port: int, workers: int, threads: int,
                  scratch: str) -> subprocess.Popen:
    """granian as deployed (deploy/granian_server.py), `workers` x `threads`, once it answers."""
    server = subprocess.Popen(
        [sys.executable, "deploy/granian_server.py", "--log-level", "warning"], cwd=ROOT,
        env={**env, "GRANIAN_HOST": "127.0.0.1", "GRANIAN_PORT": str(port),
             "GRANIAN_WORKERS": str(workers), "GRANIAN_BLOCKING_THREADS": str(threads),
             "PROMETHEUS_MULTIPROC_DIR": tempfile.mkdtemp(prefix="metrics-", dir=scratch)})
    wait_for(f"http://127.0.0.1:{port}/healthz")
    return server


def start_server(name: str, env: dict[str, str], port: int, args: argparse.Namespace,
                 scratch: str) -> subprocess.Popen:
    """gunicorn or granian (`name`) on `port`, args.workers x args.worker_threads, once it
    answers."""
    if name == "gunicorn":
        return start_gunicorn(env, port)  # its shape is in `env` (bench_env)
    return start_granian(env, port, args.workers, args.worker_threads, scratch)


def worker_memory_mib(master_pid: int) -> list[dict[str, float]]:
    """Each worker's (the master's children's) memory in MiB: peak resident set (`VmHWM`, shared
    pages of the preloaded app included), and now its proportional (`Pss`: shared pages divided
    among the processes that share them) and unique set (`Private_*`: what stopping it frees)."""
    workers = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/status") as status:
                fields = dict(line.split(":", 1) for line in status if ":" in line)
            if int(fields["PPid"]) != master_pid or "VmHWM" not in fields:
                continue
            with open(f"/proc/{pid}/smaps_rollup") as rollup:
                sizes = {name: int(value.split()[0]) for name, value in
                         (line.split(":", 1) for line in rollup if line.endswith("kB\n"))}
        except OSError:
            continue
        workers.append({"peak_rss": int(fields["VmHWM"].split()[0]) / 1024,
                        "pss": sizes["Pss"] / 1024,
                        "uss": (sizes["Private_Clean"] + sizes["Private_Dirty"]) / 1024})
    return sorted(workers, key=lambda worker: worker["peak_rss"])


def nginx_config(directory: Path) -> Path:
    """deploy/nginx.conf in an http block of its own, listening on NGINX_PORT."""
    site = (ROOT / "deploy" / "nginx.conf").read_text()
    for shipped, here in (("listen 80;", f"listen 127.0.0.1:{NGINX_PORT};"),
                          ("server 127.0.0.1:8000;", f"server 127.0.0.1:{UPSTREAM_PORT};"),
                          ("/var/cache/nginx/egis", str(directory / "cache")),
                          ("/var/log/nginx/egis.access.log", str(directory / "access.log"))):
        site = site.replace(shipped, here)
    temp_paths = "".join(f"{kind}_temp_path {directory / kind};"
                         for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    config = directory / "nginx.conf"
    config.write_text(f"""{"user root;" if os.geteuid() == 0 else ""}
worker_processes auto;
error_log {directory / "error.log"};
pid {directory / "nginx.pid"};
events {{ worker_connections 1024; }}
http {{ {temp_paths}
{site}
}}
""")
    return config


@contextmanager
def nginx_in_front(prefix: str) -> Iterator[str]:
    """Debian's nginx with nginx_config() in a scratch directory of its own (named `prefix`...,
    yielded for the run's other files), stopped and the directory removed when the block ends,
    however it ends."""
    scratch = tempfile.mkdtemp(prefix=prefix)
    nginx = subprocess.Popen(["nginx", "-p", scratch, "-c", str(nginx_config(Path(scratch))),
                              "-g", "daemon off;"], stderr=subprocess.DEVNULL)
    try:
        yield scratch
    finally:
        nginx.terminate()
        nginx.wait(timeout=10)
        shutil.rmtree(scratch, ignore_errors=True)
