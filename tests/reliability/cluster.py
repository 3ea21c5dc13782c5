"""A throwaway PostgreSQL cluster of our own, to crash, freeze or replicate without touching the
shared one.

`initdb` in a temporary directory (as the `postgres` user when we are root: initdb refuses
root), the server on a free loopback port with its socket in that directory, with `settings`
of the test's (`-c name=value`); `crash()` is `pg_ctl stop -m immediate`, `freeze()`/`thaw()`
SIGSTOP/SIGCONT the postmaster and every backend. `Cluster(standby_of=primary)` is a hot
standby of a running cluster instead: `pg_basebackup -R` (streaming replication, as
initdb's default settings allow on loopback). `destroy()` always leaves nothing running and
nothing on disk.
"""
import contextlib
import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

from tests.conftest import SiteKeys, create_site, free_port


def _bin_dir() -> Path:
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                      key=lambda path: int(Path(path).parent.name))
    if versions:
        return Path(versions[-1])
    found = shutil.which("pg_ctl")
    if found is None:
        raise RuntimeError("PostgreSQL's server binaries (pg_ctl, initdb) are not installed")
    return Path(found).resolve().parent


def children(pid: int) -> list[int]:
    """The PIDs of a process's children (Linux /proc)."""
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(child) for child in text.split()]


class Cluster:
    def __init__(self, settings: dict[str, str] | None = None,
                 standby_of: "Cluster | None" = None) -> None:
        self.bin = _bin_dir()
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="egis-chaos-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.settings = settings or {}
        self.as_owner: list[str] = []
        if os.geteuid() == 0:
            owner = pwd.getpwnam("postgres")
            os.chown(self.root, owner.pw_uid, owner.pw_gid)
            self.as_owner = ["runuser", "-u", "postgres", "--"]
        if standby_of is None:
            self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust",
                      "--no-sync", "--no-instructions")
        else:
            self._run("pg_basebackup", "-h", "127.0.0.1", "-p", str(standby_of.port), "-U",
                      "postgres", "-D", str(self.data), "-R", "-X", "stream", "-c", "fast")
        self.frozen: list[int] = []

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, tool: str, *arguments: str, timeout: float = 60) -> None:
        subprocess.run([*self.as_owner, str(self.bin / tool), *arguments], check=True,
                       capture_output=True, timeout=timeout)

    def url_of(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def start(self) -> None:
        options = (f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 "
                   "-c max_connections=50"
                   + "".join(f" -c {name}={value}" for name, value in self.settings.items()))
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options, "-w",
                  "start")

    def stop(self) -> None:
        """A clean shutdown (`-m fast`: sessions are ended, nothing is lost)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def crash(self) -> None:
        """Stop without a checkpoint, as a power cut would: recovery replays the WAL on start."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def postmaster_pid(self) -> int | None:
        try:
            return int((self.data / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def _is_ours(self, pid: int) -> bool:
        try:
            return str(self.data) in Path(f"/proc/{pid}/cmdline").read_text()
        except OSError:
            return False

    def freeze(self) -> None:
        """SIGSTOP the postmaster and its backends: connections stay open and nothing answers."""
        postmaster = self.postmaster_pid()
        assert postmaster is not None, "the cluster is not running"
        self.frozen = [postmaster, *children(postmaster)]
        for pid in self.frozen:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)

    def thaw(self) -> None:
        for pid in self.frozen:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        self.frozen = []

    def destroy(self) -> None:
        self.thaw()
        postmaster = self.postmaster_pid()
        if postmaster is not None:
            with contextlib.suppress(subprocess.SubprocessError):
                self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop",
                          timeout=20)
            if self._is_ours(postmaster):  # pg_ctl could not stop it: by its PID
                os.kill(postmaster, signal.SIGKILL)
        shutil.rmtree(self.root, ignore_errors=True)


def migrated_site(url: str) -> SiteKeys:
    """The schema on the database at `url` (`flask db upgrade`'s), and a standard site there
    with its keys; the pool released after."""
    from app import create_app
    from app.cli import upgrade_schema
    from app.storage.db import release_connections

    app = create_app({"DATABASE_URL": url})
    upgrade_schema()
    site = create_site(app, "std.example", "standard")
    release_connections()
    return site
