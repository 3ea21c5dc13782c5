"""A PostgreSQL cluster kept available by Patroni, of the tests' own: 3 etcd members, 3 Patroni
nodes (PostgreSQL 15, synchronous_mode), HAProxy's write address (/primary) and read address
(/replica), all from Debian's packages and rendered from deploy/cluster/'s files, on free
loopback ports under one temporary directory.

Every process is ours and stopped by its PID: Patroni and PostgreSQL run as the `postgres`
user (`runuser`; the directory is chowned to it), etcd and HAProxy as we are. `kill_node`,
`kill_postmaster`, `kill_patroni` and `kill_etcd_quorum` are the failures the tests cause;
`heal` brings every piece back and waits until the cluster is whole again (a leader, a
synchronous standby, every node streaming), so one cluster serves a whole module.
"""
import contextlib
import json
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from string import Template
from typing import Any

from tests.conftest import ROOT, free_port
from tests.reliability.cluster import _bin_dir, children

DEPLOY = ROOT / "deploy" / "cluster"
BINARIES = ("patroni", "etcd", "haproxy", "pgbouncer")
SCOPE = "egis"


def missing_binaries() -> list[str]:
    """The Debian binaries the cluster needs that are not installed."""
    found = [name for name in BINARIES
             if shutil.which(name) is None and not Path(f"/usr/sbin/{name}").exists()]
    try:
        _bin_dir()
    except RuntimeError:
        found.append("postgresql")
    return found


def _binary(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


def render(template: str, values: dict[str, Any]) -> str:
    """deploy/cluster/`template` with its ${...} values filled in (as envsubst would)."""
    return Template((DEPLOY / template).read_text()).substitute(
        {name: str(value) for name, value in values.items()})


def wait_until(condition: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = condition()
        if found:
            return found
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.2)


def _alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _kill(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@dataclass
class Node:
    name: str
    pg_port: int
    rest_port: int
    data: Path
    config: Path
    log: Path
    process: subprocess.Popen | None = None

    def patroni_pid(self) -> int | None:
        """Patroni's own PID: `runuser` forks it and waits."""
        if self.process is None or self.process.poll() is not None:
            return None
        found = children(self.process.pid)
        return found[0] if found else None

    def postmaster_pid(self) -> int | None:
        try:
            pid = int((self.data / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None
        try:
            ours = str(self.data) in Path(f"/proc/{pid}/cmdline").read_text()
        except OSError:
            return None
        return pid if ours else None

    def postgres_pids(self) -> list[int]:
        postmaster = self.postmaster_pid()
        return [] if postmaster is None else [postmaster, *children(postmaster)]

    def rest(self, path: str = "/patroni") -> tuple[int, dict[str, Any]]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.rest_port}{path}",
                                        timeout=1) as answer:
                return answer.status, json.loads(answer.read() or b"{}")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"{}")
        except (OSError, ValueError):
            return 0, {}

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.pg_port}/{SCOPE}"


@dataclass
class EtcdMember:
    name: str
    client_port: int
    peer_port: int
    data: Path
    log: Path
    process: subprocess.Popen | None = None


@dataclass
class PatroniCluster:
    root: Path
    nodes: list[Node] = field(default_factory=list)
    etcd: list[EtcdMember] = field(default_factory=list)
    write_port: int = 0
    read_port: int = 0
    haproxy: subprocess.Popen | None = None
    as_postgres: list[str] = field(default_factory=list)

    # --- building -----------------------------------------------------------------------
    @classmethod
    def build(cls, root: Path | None = None) -> "PatroniCluster":
        root = root or Path(tempfile.mkdtemp(prefix="egis-patroni-"))
        cluster = cls(root=root)
        if os.geteuid() == 0:
            owner = pwd.getpwnam("postgres")
            os.chown(root, owner.pw_uid, owner.pw_gid)
            cluster.as_postgres = ["runuser", "-u", "postgres", "--"]
        try:
            cluster._start_etcd()
            cluster._start_nodes()
            cluster._start_haproxy()
            cluster.wait_whole(timeout=90)
            cluster._create_database()
        except BaseException:
            cluster.destroy()
            raise
        return cluster

    def _start_etcd(self) -> None:
        for number in (1, 2, 3):
            self.etcd.append(EtcdMember(f"etcd{number}", free_port(), free_port(),
                                        self.root / f"etcd{number}",
                                        self.root / f"etcd{number}.log"))
        initial = ",".join(f"{m.name}=http://127.0.0.1:{m.peer_port}" for m in self.etcd)
        for member in self.etcd:
            member.env = {  # type: ignore[attr-defined]
                line.split("=", 1)[0]: line.split("=", 1)[1]
                for line in render("etcd.env", {
                    "ETCD_MEMBER_NAME": member.name, "ETCD_DATA_DIR": member.data,
                    "ETCD_MEMBER_HOST": "127.0.0.1", "ETCD_CLIENT_PORT": member.client_port,
                    "ETCD_PEER_PORT": member.peer_port, "ETCD_INITIAL_CLUSTER": initial,
                    "CLUSTER_NAME": SCOPE}).splitlines()
                if line and not line.startswith("#")}
            self.start_etcd_member(member)
        wait_until(lambda: self._etcd_healthy(self.etcd[0]), 30, "etcd to elect a leader")

    def start_etcd_member(self, member: EtcdMember) -> None:
        with member.log.open("ab") as log:
            member.process = subprocess.Popen(
                [_binary("etcd")], env={"PATH": os.environ.get("PATH", ""),
                                        **member.env},  # type: ignore[attr-defined]
                stdout=log, stderr=subprocess.STDOUT)

    @staticmethod
    def _etcd_healthy(member: EtcdMember) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{member.client_port}/health",
                                        timeout=1) as answer:
                return json.loads(answer.read()).get("health") == "true"
        except (OSError, ValueError):
            return False

    def _start_nodes(self) -> None:
        hosts = ",".join(f"127.0.0.1:{m.client_port}" for m in self.etcd)
        for number in (1, 2, 3):
            name = f"node{number}"
            node = Node(name, free_port(), free_port(), self.root / name / "data",
                        self.root / f"{name}.yml", self.root / f"{name}.log")
            (self.root / name).mkdir()
            node.config.write_text(render("patroni.yml", {
                "CLUSTER_NAME": SCOPE, "NODE_NAME": name, "NODE_HOST": "127.0.0.1",
                "NODE_REST_PORT": node.rest_port, "NODE_PG_PORT": node.pg_port,
                "ETCD_HOSTS": hosts, "MAX_CONNECTIONS": 100, "DATA_DIR": node.data,
                "PG_BIN_DIR": _bin_dir(), "SUPERUSER_PASSWORD": "egis-test",
                "REPLICATION_PASSWORD": "egis-test", "REWIND_PASSWORD": "egis-test",
                "CLIENT_NETWORK": "127.0.0.1/32", "AUTH_METHOD": "trust",
                "SOCKET_DIR": self.root / name}))
            self._chown(self.root / name, node.config)
            self.nodes.append(node)
        for node in self.nodes:
            self.start_patroni(node)
            if node is self.nodes[0]:  # the first bootstraps; the others clone from it
                wait_until(lambda: self.leader() is not None, 60, "the first leader")

    def _chown(self, *paths: Path) -> None:
        if self.as_postgres:
            owner = pwd.getpwnam("postgres")
            for path in paths:
                os.chown(path, owner.pw_uid, owner.pw_gid)

    def start_patroni(self, node: Node) -> None:
        with node.log.open("ab") as log:
            node.process = subprocess.Popen(
                [*self.as_postgres, _binary("patroni"), str(node.config)],
                stdout=log, stderr=subprocess.STDOUT, cwd=self.root,
                env={"PATH": os.environ.get("PATH", ""), "HOME": str(self.root),
                     "LC_ALL": "C.UTF-8"})

    def _start_haproxy(self) -> None:
        self.write_port, self.read_port = free_port(), free_port()
        values: dict[str, Any] = {"BIND_HOST": "127.0.0.1", "WRITE_PORT": self.write_port,
                                  "READ_PORT": self.read_port}
        for number, node in enumerate(self.nodes, 1):
            values.update({f"NODE{number}_NAME": node.name, f"NODE{number}_HOST": "127.0.0.1",
                           f"NODE{number}_PG_PORT": node.pg_port,
                           f"NODE{number}_REST_PORT": node.rest_port})
        config = self.root / "haproxy.cfg"
        config.write_text(render("haproxy.cfg", values))
        with (self.root / "haproxy.log").open("ab") as log:
            self.haproxy = subprocess.Popen([_binary("haproxy"), "-db", "-f", str(config)],
                                            stdout=log, stderr=subprocess.STDOUT)

    def _create_database(self) -> None:
        import psycopg2

        connection = psycopg2.connect(self.admin_url("postgres"), connect_timeout=3)
        connection.autocommit = True
        with connection.cursor() as cursor:
            cursor.execute(f"CREATE DATABASE {SCOPE}")
        connection.close()

    # --- addresses ----------------------------------------------------------------------
    def admin_url(self, database: str = SCOPE) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.write_port}/{database}"

    @property
    def url(self) -> str:
        """egis's DATABASE_URL: HAProxy's write address."""
        return self.admin_url(SCOPE)

    @property
    def read_url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.read_port}/{SCOPE}"

    # --- state --------------------------------------------------------------------------
    def members(self) -> list[dict[str, Any]]:
        """Patroni's view of the cluster (GET /cluster of any node that answers)."""
        for node in self.nodes:
            status, body = node.rest("/cluster")
            if status == 200 and "members" in body:
                return body["members"]
        return []

    def leader(self) -> Node | None:
        """The node whose Patroni says it is the primary (REST /primary answers 200)."""
        for node in self.nodes:
            if node.rest("/primary")[0] == 200:
                return node
        return None

    def node(self, name: str) -> Node:
        return next(node for node in self.nodes if node.name == name)

    def sync_standby(self) -> Node | None:
        for member in self.members():
            if member.get("role") == "sync_standby":
                return self.node(member["name"])
        return None

    def whole(self) -> bool:
        """A leader, a synchronous standby and every node streaming, HAProxy routing writes."""
        members = self.members()
        if len(members) != len(self.nodes):
            return False
        roles = sorted(member.get("role", "") for member in members)
        states = {member.get("state") for member in members}
        leader = self.leader()
        return (roles == ["leader", "replica", "sync_standby"]
                and states <= {"running", "streaming"}
                and leader is not None and self._routes_writes_to(leader))

    def _routes_writes_to(self, leader: Node) -> bool:
        import psycopg2

        try:
            connection = psycopg2.connect(self.admin_url("postgres"), connect_timeout=2)
        except psycopg2.Error:
            return False
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT NOT pg_is_in_recovery(), inet_server_port()")
                writable, port = cursor.fetchone()
            return bool(writable) and port == leader.pg_port
        except psycopg2.Error:
            return False
        finally:
            connection.close()

    def wait_whole(self, timeout: float = 60) -> None:
        wait_until(self.whole, timeout, "the cluster to be whole (leader, sync standby, "
                                        "replica, HAProxy on the leader)")

    # --- failures -----------------------------------------------------------------------
    def kill_node(self, node: Node) -> None:
        """The node's machine lost: its Patroni, its postmaster and every backend at once."""
        _kill([pid for pid in (node.patroni_pid(),) if pid] + node.postgres_pids())
        self._reap(node)

    def kill_postmaster(self, node: Node) -> None:
        """Only the postmaster (SIGKILL): its backends end once they notice; Patroni stays."""
        postmaster = node.postmaster_pid()
        assert postmaster is not None, f"{node.name} runs no postgres"
        _kill([postmaster])

    def kill_patroni(self, node: Node) -> None:
        """Only Patroni: its postgres keeps running, a zombie primary if it led."""
        pid = node.patroni_pid()
        assert pid is not None, f"{node.name} runs no Patroni"
        _kill([pid])
        self._reap(node)

    def stop_postgres(self, node: Node) -> None:
        """Whatever still runs of the node's postgres (a zombie), killed."""
        _kill(node.postgres_pids())
        wait_until(lambda: not any(_alive(pid) for pid in node.postgres_pids()), 10,
                   f"{node.name}'s postgres to end")

    def kill_etcd_quorum(self) -> list[EtcdMember]:
        """Two of the three etcd members killed: the survivor has no quorum."""
        lost = self.etcd[1:]
        for member in lost:
            if member.process is not None:
                member.process.kill()
                member.process.wait(timeout=10)
        return lost

    def _reap(self, node: Node) -> None:
        if node.process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                node.process.wait(timeout=10)

    # --- healing ------------------------------------------------------------------------
    def heal(self, timeout: float = 90) -> None:
        """Every etcd member and every Patroni running again, and the cluster whole."""
        for member in self.etcd:
            if member.process is None or member.process.poll() is not None:
                self.start_etcd_member(member)
        for node in self.nodes:
            if node.patroni_pid() is None:
                self.start_patroni(node)
        self.wait_whole(timeout)

    def destroy(self) -> None:
        """Everything stopped by its PID and the directory removed."""
        for node in self.nodes:
            pid = node.patroni_pid()
            if pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)  # Patroni stops its postgres
        deadline = time.monotonic() + 20
        for node in self.nodes:
            if node.process is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    node.process.wait(timeout=max(0.1, deadline - time.monotonic()))
        for node in self.nodes:
            if node.process is not None and node.process.poll() is None:
                _kill([pid for pid in (node.patroni_pid(),) if pid])
                node.process.kill()
            _kill(node.postgres_pids())
        processes = [self.haproxy, *(member.process for member in self.etcd)]
        for process in processes:
            if process is not None and process.poll() is None:
                process.kill()
                process.wait(timeout=10)
        shutil.rmtree(self.root, ignore_errors=True)

    def logs(self) -> str:
        """The tail of every log, for a failing test's message."""
        parts = []
        for path in sorted(self.root.glob("*.log")):
            text = path.read_text(errors="replace").splitlines()[-15:]
            parts.append(f"--- {path.name}\n" + "\n".join(text))
        return "\n".join(parts)
