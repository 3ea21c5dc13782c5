"""What a Patroni cluster costs ingest, and what each failure costs: egis's ingest rate on a
3-node cluster (synchronous replication, through HAProxy's write address) as a ratio to a single
PostgreSQL in the same run; and the outage (the longest time without a 200) each failure of
the cluster's causes under a steady load that resends until a 200.

    python -m bench.maintenance.cluster [--runs 3] [--duration 10] [--clients 8] [--workers 2]
                                        [--outage-runs 3] [--deadline 5]
                                        [--zombie-runs 2] [--zombie-seconds 30]

The cluster is the cluster tests' (tests/fixtures/patroni.py, from deploy/cluster/: 3 etcd
members, Patroni with ttl 10, loop_wait 2, retry_timeout 4, synchronous_mode, HAProxy on
/primary); the single PostgreSQL is one initdb of the benchmark's own (synchronous_commit on,
no standby). Both on this machine's loopback with the same gunicorn (deploy/gunicorn.conf.py,
--workers workers, rate limits out of reach): --clients threads post 5-event batches on keep-
alive connections for --duration seconds, the two targets in an order rotated per run; the rate
is the events the database holds at the end over the time. Then, per --outage-runs, each
failure once: a single client posting 2-event batches (tests/fixtures/load.py), the failure
caused, the load stopped when ingest is back, the cluster healed. Then, per --zombie-runs,
the zombie without HAProxy: egis on libpq's multi-host URL (the leader listed first, as
`target_session_attrs=read-write` finds it) instead of HAProxy's address, the leader's Patroni
killed, its postgres left running --zombie-seconds after the new leader's promotion, then its
Patroni restarted (which demotes it): the answers meanwhile, the slowest, and how long after
the fencing ingest is back. Every process is the benchmark's own, stopped by PID.
"""
import argparse
import http.client
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from statistics import median

import orjson
import psycopg2

from bench.harness.database import stored_events
from tests.fixtures.cluster import Cluster, migrated_site
from tests.fixtures.load import Load
from tests.fixtures.patroni import PatroniCluster, wait_until
from tests.fixtures.servers import launch_server, stop_server
from tests.fixtures.tracking import batch

# Limits out of reach: one key posting as fast as the clients can would hit EGIS_RATE_LIMIT_KEY.
UNLIMITED = {"EGIS_RATE_LIMIT_KEY": "10000000/minute", "EGIS_RATE_LIMIT_IP": "10000000/minute"}


def post_for(port: int, headers: dict[str, str], seconds: float, clients: int) -> int:
    """--clients threads posting 5-event batches for `seconds`; the 200s answered."""
    stop_at = time.monotonic() + seconds
    answered = [0] * clients

    def client(index: int) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        while time.monotonic() < stop_at:
            try:
                connection.request("POST", "/api/events", body=orjson.dumps(batch(5)),
                                   headers={"Content-Type": "application/json", **headers})
                response = connection.getresponse()
                response.read()
                answered[index] += response.status == 200
            except OSError:
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        connection.close()

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(answered)


def ingest_rate(url: str, args: argparse.Namespace, scratch: Path) -> float:
    """Events stored per second through a server of its own on `url` (migrated, one site)."""
    site = migrated_site(url)
    server = launch_server(url, scratch, workers=args.workers, env=UNLIMITED,
                           deploy_config=True)
    try:
        port = int(server.url.rsplit(":", 1)[1])
        post_for(port, site.write_headers(), 1, args.clients)  # warm: connections, statements
        before, started = stored_events(url), time.monotonic()
        post_for(port, site.write_headers(), args.duration, args.clients)
        return (stored_events(url) - before) / (time.monotonic() - started)
    finally:
        stop_server(server)


def fresh_database(admin_url: str, name: str) -> None:
    connection = psycopg2.connect(admin_url, connect_timeout=5)
    connection.autocommit = True
    with connection.cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        cursor.execute(f"CREATE DATABASE {name}")
    connection.close()


def throughput(cluster: PatroniCluster, single: Cluster, args: argparse.Namespace,
               scratch: Path) -> None:
    ratios, rates = [], {"single": [], "cluster": []}
    for run in range(args.runs):
        order = ["single", "cluster"] if run % 2 == 0 else ["cluster", "single"]
        found = {}
        for target in order:
            name = f"bench_{run}"
            if target == "single":
                fresh_database(single.url, name)
                url = single.url_of(name)
            else:
                fresh_database(cluster.admin_url("postgres"), name)
                url = cluster.admin_url(name)
            found[target] = ingest_rate(url, args, scratch)
            rates[target].append(found[target])
        ratios.append(found["cluster"] / found["single"])
        print(f"run {run + 1}: single {found['single']:,.0f} events/s, cluster "
              f"{found['cluster']:,.0f} events/s, ratio {ratios[-1]:.2f}", flush=True)
    print(f"ingest, 5-event batches, {args.clients} clients: single "
          f"{min(rates['single']):,.0f}-{max(rates['single']):,.0f} events/s, cluster "
          f"{min(rates['cluster']):,.0f}-{max(rates['cluster']):,.0f}; ratio "
          f"{min(ratios):.2f}-{max(ratios):.2f} (median {median(ratios):.2f})")


def failures(cluster: PatroniCluster) -> dict[str, Callable[[], object]]:
    def leader():
        found = cluster.leader()
        assert found is not None
        return found

    return {
        "leader's node killed": lambda: cluster.kill_node(leader()),
        "leader's postmaster killed": lambda: cluster.kill_postmaster(leader()),
        "leader's Patroni killed (zombie)": lambda: cluster.kill_patroni(leader()),
        "sync standby's node killed": lambda: cluster.kill_node(cluster.sync_standby()),
        "etcd quorum lost (healed after 20 s)": lambda: _quorum_for(cluster, 20),
    }


def _quorum_for(cluster: PatroniCluster, seconds: float) -> None:
    cluster.kill_etcd_quorum()
    time.sleep(seconds)
    cluster.heal()


def outages(cluster: PatroniCluster, args: argparse.Namespace, scratch: Path) -> None:
    fresh_database(cluster.admin_url("postgres"), "bench_outage")
    url = cluster.admin_url("bench_outage")
    site = migrated_site(url)
    server = launch_server(url, scratch, workers=args.workers,
                           env={**UNLIMITED,
                                "EGIS_REQUEST_DEADLINE_SECONDS": str(args.deadline)},
                           deploy_config=True)
    found: dict[str, list[tuple[float, int, float]]] = {}
    try:
        for run in range(args.outage_runs):
            for name, fail in failures(cluster).items():
                cluster.heal()
                load = Load(server.url, site, f"o{run}-{len(found.get(name, []))}-"
                            f"{abs(hash(name)) % 10000}", args.deadline + 30).start()
                time.sleep(2)
                failed_at = time.monotonic()
                fail()
                wait_until(lambda fa=failed_at, ld=load: ld.ok_after(fa + 1), 120, "ingest back")
                time.sleep(2)
                load.stop()
                refused = sum(a.status != 200 for a in load.answers)
                slowest = max(a.seconds for a in load.answers)
                found.setdefault(name, []).append((load.longest_outage(), refused, slowest))
                print(f"run {run + 1}, {name}: no 200 for {load.longest_outage():.1f} s, "
                      f"{refused} answers not 200, slowest {slowest:.1f} s", flush=True)
        cluster.heal()
    finally:
        stop_server(server)
    print(f"outage per failure (EGIS_REQUEST_DEADLINE_SECONDS={args.deadline}):")
    for name, values in found.items():
        gaps = [gap for gap, _, _ in values]
        print(f"  {name}: {min(gaps):.1f}-{max(gaps):.1f} s without a 200; "
              f"slowest answer {max(s for _, _, s in values):.1f} s")


def multi_host_url(nodes: list, database: str) -> str:
    """libpq's multi-host URL (its query form) over `nodes`, in their order."""
    return (f"postgresql://postgres@/{database}?host={','.join('127.0.0.1' for _ in nodes)}"
            f"&port={','.join(str(node.pg_port) for node in nodes)}"
            "&target_session_attrs=read-write")


def promoted(node) -> bool:
    """Whether the node's postgres runs as a primary (Patroni names a leader before that)."""
    try:
        connection = psycopg2.connect(node.url, connect_timeout=2)
    except psycopg2.Error:
        return False
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT NOT pg_is_in_recovery()")
            return bool(cursor.fetchone()[0])
    finally:
        connection.close()


def zombie_run(cluster: PatroniCluster, args: argparse.Namespace, scratch: Path,
               prefix: str) -> str:
    """One zombie without HAProxy, under a load; what it cost, as one line."""
    cluster.heal()
    leader = cluster.leader()
    assert leader is not None
    fresh_database(cluster.admin_url("postgres"), prefix)
    url = multi_host_url([leader, *(n for n in cluster.nodes if n is not leader)], prefix)
    site = migrated_site(url)
    server = launch_server(url, scratch, workers=args.workers,
                           env={**UNLIMITED, "EGIS_REQUEST_DEADLINE_SECONDS": str(args.deadline)},
                           deploy_config=True)
    try:
        load = Load(server.url, site, prefix, args.deadline + 30).start()
        time.sleep(2)
        failed_at = time.monotonic()
        cluster.kill_patroni(leader)
        wait_until(lambda: any(promoted(node) for node in cluster.nodes if node is not leader),
                   60, "a new leader promoted")
        promoted_at = time.monotonic()
        time.sleep(args.zombie_seconds)
        fenced_at = time.monotonic()
        cluster.heal()
        wait_until(lambda: load.ok_after(fenced_at), 120, "ingest back")
        time.sleep(2)
        load.stop()
    finally:
        stop_server(server)
    acknowledged = {a.batch_id for a in load.answers if a.status == 200}
    lost = acknowledged - stored_batches(cluster.admin_url(prefix), prefix)
    lost_at = sorted(a.at for a in load.answers if a.status == 200 and a.batch_id in lost)
    while_zombie = [a for a in load.answers if promoted_at < a.at <= fenced_at]
    back = min(a.at for a in load.answers if a.status == 200 and a.at > fenced_at)
    return (f"no 200 for {load.longest_outage():.1f} s (the new leader promoted "
            f"{promoted_at - failed_at:.1f} s after the kill); while the zombie ran "
            f"{args.zombie_seconds:.0f} s: {len(while_zombie)} answers, "
            f"{sum(a.status == 200 for a in while_zombie)} of them 200, statuses "
            f"{sorted({a.status for a in load.answers})}, slowest "
            f"{max(a.seconds for a in load.answers):.1f} s; the first 200 "
            f"{back - fenced_at:.1f} s after its Patroni restarted; "
            f"{sum(a.duplicate for a in while_zombie)} answered duplicate; "
            f"{len(lost)} of {len(acknowledged)} acknowledged batches not stored (answered "
            f"{', '.join(f'{at - fenced_at:+.1f}' for at in lost_at) or '-'} s from the "
            "restart)")


def stored_batches(url: str, prefix: str) -> set[str]:
    connection = psycopg2.connect(url, connect_timeout=5)
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT batch_key FROM batch WHERE batch_key LIKE %s", (f"{prefix}-%",))
            return {row[0] for row in cursor.fetchall()}
    finally:
        connection.close()


def zombie_without_haproxy(cluster: PatroniCluster, args: argparse.Namespace,
                           scratch: Path) -> None:
    """What a zombie primary costs egis on a bare multi-host URL (no HAProxy to fence it)."""
    for run in range(args.zombie_runs):
        print(f"zombie without HAProxy, run {run + 1}: "
              f"{zombie_run(cluster, args, scratch, f'bench_zombie_{run}')}", flush=True)
    cluster.heal()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--duration", type=float, default=10)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--outage-runs", type=int, default=3)
    parser.add_argument("--deadline", type=float, default=5)
    parser.add_argument("--zombie-runs", type=int, default=2)
    parser.add_argument("--zombie-seconds", type=float, default=30)
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="egis-bench-cluster-"))
    cluster = PatroniCluster.build()
    single = Cluster()
    try:
        single.start()
        if args.runs:
            throughput(cluster, single, args, scratch)
        if args.outage_runs:
            outages(cluster, args, scratch)
        if args.zombie_runs:
            zombie_without_haproxy(cluster, args, scratch)
    finally:
        single.destroy()
        cluster.destroy()


if __name__ == "__main__":
    main()
