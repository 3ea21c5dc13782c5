"""Contract fuzzing: schemathesis (its CLI, every phase) generates requests for every operation
of the live /api/openapi.json, valid ones and the invalid ones its negative phases derive from
the document, and sends them to the deployed server with a valid key of the operation's kind
(/api/validate: once with each kind). Every check must pass: no 500, status codes, content
types, headers and bodies as documented, documented-valid bodies accepted and documented-invalid
ones refused, auth not ignored; plus ours (contract_hooks.py): every error is `{"error": ...}`.

Bounded and deterministic: a fixed number of examples per operation, a fixed seed, no example
database and no crash cache. On a failure the assertion shows schemathesis's report, with a
curl line to replay each case.
"""
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from models.api_key import SERVER, WRITE
from tests.conftest import ROOT
from tests.reliability.conftest import Deployment, deployment

pytestmark = pytest.mark.slow

EXAMPLES = 150
SEED = 20261123
TIME_LIMIT_SECONDS = 240
# The key each operation is called with (operations not named here need none).
KEY_KINDS = {"/api/events": WRITE, "/api/goals": WRITE, "/api/validate": WRITE,
             "/api/server/events": SERVER, "/api/crawl/report": SERVER, "/api/mcp": SERVER}


@pytest.fixture(scope="module")
def live(migrated: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    env = {f"EGIS_RATE_LIMIT_{name}": "1000000/minute" for name in ("KEY", "IP", "VALIDATE",
                                                                      "MCP")}
    with deployment(migrated, tmp_path_factory.mktemp("contract"), env) as running:
        yield running


def config(live: Deployment, key_kinds: dict[str, str]) -> str:
    """schemathesis.toml: generation settings, and each operation's key."""
    keys = {WRITE: live.std.write_key, SERVER: live.std.server_key}
    lines = [f"seed = {SEED}", 'hooks = "tests.reliability.contract_hooks"',
             "[cache]", "enabled = false",  # no crashes replayed from an earlier run
             "[generation]", f"max-examples = {EXAMPLES}", "deterministic = true",
             'database = "none"']
    for path, kind in key_kinds.items():
        lines += ["[[operations]]", f'include-path = "{path}"',
                  f'headers = {{ Authorization = "Bearer {keys[kind]}" }}']
    return "\n".join(lines) + "\n"


def run_schemathesis(live: Deployment, workdir: Path, key_kinds: dict[str, str],
                     *options: str) -> None:
    config_file = workdir / "schemathesis.toml"
    config_file.write_text(config(live, key_kinds))
    command = [sys.executable, "-m", "schemathesis.cli", "--config-file", str(config_file),
               "run", f"{live.url}/api/openapi.json", "--checks", "all", "--workers", "1",
               "--no-color", *options]
    # Run from the test's own directory, so that nothing lands in the checkout.
    done = subprocess.run(command, cwd=workdir, capture_output=True, text=True,
                          timeout=TIME_LIMIT_SECONDS, env={**os.environ, "PYTHONPATH": str(ROOT)})
    report = done.stdout + done.stderr
    assert done.returncode == 0, report[-20000:]
    assert "Traceback" not in live.server.log()


def test_every_operation_keeps_the_contract(live, tmp_path):
    run_schemathesis(live, tmp_path, KEY_KINDS)


def test_validate_keeps_the_contract_with_a_server_key(live, tmp_path):
    run_schemathesis(live, tmp_path, {"/api/validate": SERVER}, "--include-path",
                     "/api/validate")
