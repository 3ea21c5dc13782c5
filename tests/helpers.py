"""Shared by the tests: posting raw JSON, reading rows, dumping the database, ids that hide an
e-mail address, seeding a site's events and visits, calling an MCP tool, racing threads, polling
for a condition, running a script in a fresh interpreter, the examples of a doc."""
import gzip
import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from flask import Flask

from app.rollups import merging
from models import Event, Site, database

ROOT = Path(__file__).resolve().parent.parent
JSON = "application/json"
T = TypeVar("T")


def post_json(client, path: str, body: Any, headers: dict[str, str] | None = None,
              content_type: str = JSON, gzipped: bool = False):
    """POST `body`: a str/bytes sent as is (exact JSON text), anything else json.dumps'ed."""
    data = body if isinstance(body, (str, bytes)) else json.dumps(body)
    data = data.encode() if isinstance(data, str) else data
    all_headers = dict(headers or {})
    if gzipped:
        data = gzip.compress(data)
        all_headers["Content-Encoding"] = "gzip"
    return client.post(path, data=data, headers=all_headers, content_type=content_type)


@contextmanager
def db(app: Flask) -> Iterator[None]:
    with app.app_context(), database.connection_context():
        yield


def rows(app: Flask, model: Any) -> list[Any]:
    with db(app):
        return list(model.select().order_by(model.id))


def assert_json_error(response, status: int, error: str | None = None) -> dict[str, Any]:
    """A JSON error body with `status`; `error`, when given, is the exact message."""
    assert response.status_code == status, (response.status_code, response.get_data()[:500])
    assert response.mimetype == JSON
    body = response.get_json()
    assert isinstance(body, dict) and isinstance(body.get("error"), str) and body["error"]
    if error is not None:
        assert body["error"] == error
    return body


def cors_headers(response) -> list[str]:
    return [name for name, _ in response.headers if name.lower().startswith("access-control")]


def database_bytes(database_url: str) -> bytes:
    """Everything the database holds, as bytes: pg_dump's output, or the SQLite files."""
    scheme, _, rest = database_url.partition("://")
    if scheme.startswith("sqlite"):
        path = Path(rest[1:] if rest.startswith("/") else rest)
        files = [path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")]
        return b"".join(f.read_bytes() for f in files if f.exists())
    url = urlsplit(database_url)
    command = ["pg_dump", "-h", url.hostname or "127.0.0.1", "-p", str(url.port or 5432),
               "-U", url.username or "postgres", url.path.lstrip("/")]
    return subprocess.run(command, check=True, capture_output=True, timeout=60).stdout


# Ids a hostile client may send: an e-mail address in each of its disguises (app.ingest.privacy,
# may_hold_email), after the id that is the same but for its at sign, which is accepted.
EMAIL_DISGUISES = (("<alice.example.com>", "<alice@example.com>"),
                   ("alice%20example.com", "alice%40example.com"),
                   ("alice.example.com", "alice\uff20example.com"),
                   ("alice-example.com", "alice\ufe6bexample.com"))


def assert_nowhere_in_the_database(app: Flask, *texts: str) -> None:
    """None of `texts` is anywhere in the database (its dump: rows, tallies, everything)."""
    dump = database_bytes(app.config["DATABASE_URL"])
    for text in texts:
        assert text.encode() not in dump, text


def in_fresh_interpreter(script: str, *arguments: str) -> Any:
    """Run `script` in a new Python process at the project root; the JSON its last line prints."""
    run = subprocess.run([sys.executable, "-c", script, *arguments], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.splitlines()[-1])


def site_with_events(app: Flask, make_site: Callable[..., Any], domain: str,
                     events: Callable[[int, int], list[dict[str, Any]]],
                     timezone: str = "Europe/Berlin") -> Any:
    """A site of `domain` in `timezone` beside another site, holding the event rows
    `events(site id, other site id)` and the visits they make; the site's keys."""
    keys = make_site(domain, "standard")
    other = make_site("other.example", "standard")
    with db(app):
        Site.update(timezone=timezone).where(Site.id == keys.site.id).execute()
        Event.insert_many(events(keys.site.id, other.site.id)).execute()
        merging.rebuild()  # rows written beside the store path
    return keys


def tool_result(client, headers: dict[str, str], tool: str,
                arguments: dict[str, Any]) -> dict[str, Any]:
    """An MCP tools/call through /api/mcp; its result (isError, content, structuredContent)."""
    response = client.post("/api/mcp", headers=headers, json={
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments}})
    assert response.status_code == 200, response.data
    return response.get_json()["result"]


def call_tool(client, server_key: str, tool: str, **arguments: Any) -> dict[str, Any]:
    """An MCP tools/call with a server key; the tool's structured result."""
    result = tool_result(client, {
        "Authorization": f"Bearer {server_key}", "MCP-Protocol-Version": "2025-11-25",
        "Accept": "application/json"}, tool, arguments)
    assert not result.get("isError"), result
    return result["structuredContent"]


def race(count: int, work: Callable[[int], T], timeout: float = 60) -> list[T]:
    """Run `work(index)` in `count` threads released at the same moment; their results in
    index order. An exception in a thread fails the caller, not just the thread."""
    barrier = threading.Barrier(count)
    results: list[Any] = [None] * count
    errors: list[BaseException] = []

    def run(index: int) -> None:
        try:
            barrier.wait(timeout=timeout)
            results[index] = work(index)
        except BaseException as error:  # reported by the caller, not lost in the thread
            errors.append(error)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=timeout)
    assert not errors, errors[:3]
    assert not any(thread.is_alive() for thread in threads), "a thread is still running"
    return results


def wait_for(condition: Callable[[], Any], timeout: float = 15, what: str = "",
             seen: Callable[[], Any] | None = None) -> Any:
    """Poll `condition` until it returns something truthy; fail after `timeout` seconds,
    saying what was `seen` by then."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or condition}"
                                 + (f"; seen: {seen()}" if seen else ""))
        time.sleep(0.05)


def doc_example(doc: Path, name: str, replace: dict[str, str] | None = None) -> str:
    """The fenced code block right after `<!-- example: NAME -->` in `doc` (indented under a
    list item or not), as written, with each of `replace`'s placeholders (which must each occur
    exactly once) swapped for what the test runs against."""
    found = re.findall(rf"^( *)<!-- example: {re.escape(name)} -->\n\1```[^\n]*\n(.*?)\n\1```$",
                       doc.read_text(), re.M | re.S)
    assert len(found) == 1, f"{doc.name} has no single example {name!r}"
    indent, block = found[0]
    body = "".join(line.removeprefix(indent) + "\n" for line in block.split("\n"))
    for placeholder, value in (replace or {}).items():
        assert body.count(placeholder) == 1, f"{name}: {placeholder!r} is not there once"
        body = body.replace(placeholder, value)
    return body
