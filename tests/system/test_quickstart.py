"""deploy/quickstart.sh, as the README's "Two commands" runs it, past the installation (the
tests run in the project's virtualenv: --skip-install): on a free port, on a SQLite file and a
PID/log directory of the test's own. It returns once egis answers (the terminal is free for the
README's next lines), prints the keys once and the command to try them, which works; a second
run says how to list and make keys instead; --stop and the PID file stop it.

The quickstart always starts gunicorn on SQLite: run in the SQLite pass only, and not again
under EGIS_TEST_WSGI=granian."""
import contextlib
import os
import re
import shlex
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from tests.fixtures import ROOT
from tests.fixtures.database import BACKEND
from tests.fixtures.servers import WSGI_SERVER, free_port

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(BACKEND != "sqlite" or WSGI_SERVER != "gunicorn",
                                 reason="the quickstart runs gunicorn on SQLite")]

SCRIPT = ROOT / "deploy" / "quickstart.sh"
KEY_HELP = ["keys list localhost", "keys create localhost --kind write",
            "keys create localhost --kind read", "agents connect localhost"]


@pytest.fixture
def run_dir(tmp_path: Path) -> Iterator[Path]:
    """The quickstart's database, PID file and log; whatever server is left is stopped by the
    PID in its file."""
    yield tmp_path
    pid_file = tmp_path / "egis.pid"
    if pid_file.exists():
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid_file.read_text()), signal.SIGTERM)


def environment(run_dir: Path, **env: str) -> dict[str, str]:
    """The test's environment, with the quickstart's database and run directory the test's."""
    found = {key: value for key, value in os.environ.items()
             if key not in ("PORT", "GUNICORN_BIND", "DATABASE_URL")}
    found.update(DATABASE_URL=f"sqlite:///{run_dir / 'egis.sqlite3'}",
                 EGIS_QUICKSTART_DIR=str(run_dir), GUNICORN_WORKERS="1", **env)
    return found


def quickstart(run_dir: Path, *arguments: str, **env: str) -> str:
    """Run the script; its output (it must succeed, and return: it does not hold the terminal)."""
    done = subprocess.run(["bash", str(SCRIPT), "--skip-install", *arguments], cwd=run_dir,
                          env=environment(run_dir, **env), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "WARNING" not in done.stderr  # on 127.0.0.1: nothing to warn about
    return done.stdout


def printed_command(run_dir: Path, output: str, words: str) -> str:
    """Run the command line of `output` that holds `words` as printed (from the repository,
    where the quickstart runs it); the last line it prints."""
    [line] = [line.strip() for line in output.splitlines() if words in line]
    done = subprocess.run(shlex.split(line), cwd=ROOT, env=environment(run_dir),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.strip().splitlines()[-1]


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}),
                                timeout=10) as response:
        return response.status, response.read()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def wait_until_gone(pid: int) -> None:
    deadline = time.monotonic() + 30
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(pid)


def server_pid(run_dir: Path, output: str) -> int:
    pid = int((run_dir / "egis.pid").read_text())
    assert f"(PID {pid}, in {run_dir / 'egis.pid'}; log: {run_dir / 'egis.log'})" in output
    assert alive(pid)
    return pid


def test_the_first_run_serves_in_the_background_and_says_how_to_try_and_stop_it(run_dir):
    port = free_port()
    output = quickstart(run_dir, "--port", str(port))
    url = f"http://127.0.0.1:{port}"
    assert f"egis is running on {url} " in output
    write_key = re.search(r"^write key:  (egis_\S+)$", output, re.M).group(1)
    assert re.search(r"^server key: egiss_\S+$", output, re.M)
    assert all(line in output for line in KEY_HELP)
    pid = server_pid(run_dir, output)
    assert get(f"{url}/healthz")[0] == 200

    # The command it prints (the README's smoke test) works as printed, and stores nothing.
    [try_it] = [line.split("Try it:", 1)[1] for line in output.splitlines() if "Try it:" in line]
    words = shlex.split(try_it)
    assert words[:3] == ["curl", "-s", f"{url}/api/validate"] and words[3] == "-H"
    assert words[4] == f"X-API-Key: {write_key}"
    status, body = get(words[2], {"X-API-Key": write_key})
    assert (status, orjson.loads(body)["valid"]) == (200, True)
    assert orjson.loads(body)["quota"]["used"] == 0

    # The agents' commands work as printed: a read key that reads and cannot track, and a
    # connect code for the consent page.
    read_key = printed_command(run_dir, output, "--kind read")
    assert read_key.startswith("egisr_")
    status, body = get(f"{url}/api/validate", {"X-API-Key": read_key})
    assert (status, orjson.loads(body)["valid"], orjson.loads(body)["canTrack"]) == (
        200, True, False)
    assert re.fullmatch(r"[0-9A-Z]{4}(?:-[0-9A-Z]{4}){3}",
                        printed_command(run_dir, output, "agents connect localhost"))

    assert "bash deploy/quickstart.sh --stop" in output
    stopped = quickstart(run_dir, "--stop")
    assert stopped.strip() == f"egis (PID {pid}) stopped."
    assert not alive(pid) and not (run_dir / "egis.pid").exists()
    assert "not running" in quickstart(run_dir, "--stop")


def test_a_second_run_says_how_to_list_and_make_keys_and_port_comes_from_the_env(run_dir):
    first = quickstart(run_dir, "--port", str(free_port()))
    first_pid = server_pid(run_dir, first)
    quickstart(run_dir, "--stop")
    wait_until_gone(first_pid)

    port = free_port()
    second = quickstart(run_dir, PORT=str(port))
    assert "Schema is up to date." in second
    assert "write key:" not in second and "egiss_" not in second
    assert "already set up; its keys were printed when they were made" in second
    assert all(line in second for line in KEY_HELP)
    assert f"egis is running on http://127.0.0.1:{port} " in second
    assert "<the write key>" in second
    pid = server_pid(run_dir, second)
    assert get(f"http://127.0.0.1:{port}/healthz")[0] == 200

    again = quickstart(run_dir, PORT=str(free_port()))  # while it runs: no second server
    assert f"egis is already running (PID {pid}" in again
    assert int((run_dir / "egis.pid").read_text()) == pid

    os.kill(pid, signal.SIGTERM)  # what the output offers besides --stop: kill PID
    wait_until_gone(pid)
    assert not (run_dir / "egis.pid").exists()  # gunicorn removes its PID file


def test_an_address_other_hosts_can_reach_is_warned_about_loudly(run_dir):
    """egis is exposed only behind nginx: a GUNICORN_BIND that is neither loopback nor a Unix
    socket gets a warning before gunicorn starts (192.0.2.1, a documentation address no host
    has: gunicorn then cannot bind it and the script says so)."""
    bind = f"192.0.2.1:{free_port()}"
    done = subprocess.run(["bash", str(SCRIPT), "--skip-install"], cwd=run_dir,
                          env=environment(run_dir, GUNICORN_BIND=bind), capture_output=True,
                          text=True, timeout=120)
    warning = [line for line in done.stderr.splitlines() if line.startswith("!!!")]
    assert warning[0] == f"!!! WARNING: egis is to listen on {bind}, which other hosts can reach."
    assert "egis is exposed only behind the shipped nginx (deploy/nginx.conf)" in " ".join(
        line.removeprefix("!!!").strip() for line in warning)
    assert done.returncode == 1 and "egis did not start" in done.stderr
    help_text = subprocess.run(["bash", str(SCRIPT), "--help"], capture_output=True, text=True)
    assert "egis is exposed only behind the shipped nginx" in help_text.stderr
