"""A real multi-process cluster (scripts/cluster.sh: s3s-fs, a throwaway PostgreSQL, 1 meta,
1 gateway, 2 ingest, 3 query, 2 janitor on loopback), driven as users and operators would:
telemetry to both ingest nodes, queries through the gateway with the real clients, and the
failures of docs/cluster.md — kill -9 of an ingest and a query node under load, object
storage down for 10 s and for 40 s, PostgreSQL restarted, the active janitor killed, meta
down while a gateway starts, a master-key rotation on the running cluster, a process of
another release."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import threading
import time
import uuid
from pathlib import Path

import grpc
import pytest
import requests
from azure.kusto.data import KustoClient, KustoConnectionStringBuilder

from trawl_e2e import CLUSTER_DIRS, PostgresServer, S3Server, TrawlServer, cli, free_ports, http_request, operator_gauges

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "cluster.sh"


class Cluster:
    """The cluster `cluster.sh up` started; its cluster.env as attributes."""

    # Queries go through the gateway with the admin token, as TrawlServer's do.
    query_raw = TrawlServer.query_raw
    query = TrawlServer.query
    count = TrawlServer.count
    primary = staticmethod(TrawlServer.primary)

    def __init__(self, workdir: Path, binary: Path):
        self.workdir = workdir
        self.dir = workdir / "cluster"
        self.binary = binary
        self.env: dict[str, str] = {}

    def script(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        done = subprocess.run(
            ["bash", str(SCRIPT), *args, "--dir", str(self.dir)],
            cwd=self.workdir, capture_output=True, text=True, timeout=timeout,
            env={**os.environ, "TRAWL_BIN": str(self.binary)},
        )  # fmt: skip
        assert done.returncode == 0, f"cluster.sh {' '.join(args)} failed:\n{done.stderr[-4000:]}"
        return done

    def up(self) -> "Cluster":
        self.script("up", "--query-nodes", "3", "--merge-interval-secs", "2")
        return self.up_done()

    def up_done(self) -> "Cluster":
        """Reads the cluster.env `up` wrote."""
        for line in (self.workdir / "cluster.env").read_text().splitlines():
            key, _, value = line.partition("=")
            self.env[key] = " ".join(shlex.split(value))
        self.gateway_url = self.env["GATEWAY_URL"]
        self.admin_token = self.env["ADMIN_TOKEN"]
        self.ingest_token = self.env["INGEST_TOKEN"]
        self.otlp_http_urls = self.env["INGEST_OTLP_HTTP_URLS"].split()
        self.otlp_grpc = self.env["INGEST_OTLP_GRPC_URLS"].split()
        self.vendor_urls = self.env["INGEST_VENDOR_URLS"].split()
        self.operators = dict(item.split("=", 1) for item in self.env["OPERATOR_URLS"].split())
        # The CLI reads the admin token from meta's bootstrap file.
        self.data_dir = self.dir / "meta"
        CLUSTER_DIRS.append(self.dir)
        return self

    def down(self) -> None:
        if self.dir in CLUSTER_DIRS:
            CLUSTER_DIRS.remove(self.dir)
        self.script("down", timeout=120)

    @property
    def query_auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.admin_token}"}

    @property
    def ingest_auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.ingest_token}"}

    def kill(self, name: str) -> None:
        self.script("kill", name)

    def restart(self, name: str) -> None:
        self.script("restart", name)

    def log(self, name: str) -> str:
        return (self.dir / f"{name}.log").read_text(errors="replace")

    def secrets(self) -> dict[str, str]:
        lines = (self.dir / "cluster.secrets").read_text().splitlines()
        return dict(line.split("=", 1) for line in lines if "=" in line)

    def set_secrets(self, **values: str | None) -> None:
        secrets = self.secrets()
        for key, value in values.items():
            if value is None:
                secrets.pop(key, None)
            else:
                secrets[key] = value
        (self.dir / "cluster.secrets").write_text("".join(f"{k}={v}\n" for k, v in secrets.items()))

    def members(self) -> list[dict]:
        """ListMembers through the gateway (JSON of the live members)."""
        with grpc.insecure_channel(self.gateway_url.removeprefix("http://")) as channel:
            call = channel.unary_unary(
                "/trawl.meta.v1.MetaService/ListMembers",
                request_serializer=lambda b: b,
                response_deserializer=lambda b: b,
            )
            raw = call(b"", timeout=10, metadata=[("authorization", f"Bearer {self.admin_token}")])
        return decode_members(raw)

    def mgmt(self, command: str, token: str | None = None) -> tuple[int, dict]:
        body = json.dumps({"db": "default", "csl": command}).encode()
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token or self.admin_token}"}
        status, _, answer = http_request(self.gateway_url + "/v1/rest/mgmt", body, headers, "POST")
        return status, json.loads(answer)

    def send_logs(
        self, url: str, marker: str, first: int, n: int, timeout: float = 60, token: str | None = None
    ) -> int:
        """One OTLP/JSON request of `n` records `marker <i>`; the HTTP status."""
        records = [
            {
                "timeUnixNano": str(time.time_ns()),
                "body": {"stringValue": f"{marker} {i}"},
                "attributes": [{"key": "seq", "value": {"intValue": str(i)}}],
            }
            for i in range(first, first + n)
        ]
        body = json.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": records}]}]}).encode()
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token or self.ingest_token}"}
        try:
            status, _, _ = http_request(url + "/v1/logs", body, headers, "POST", timeout)
        except OSError:
            return 0
        return status

    def distinct(self, marker: str) -> int:
        """Distinct sequence numbers stored with `marker` (a record stored twice counts once)."""
        _, rows = self.query(
            f"default | where body has '{marker}' and isnotnull(attributes.seq) "
            "| summarize by seq = tolong(attributes.seq) | count"
        )
        return rows[0][0]

    def wait_distinct(self, marker: str, expected: int, timeout: float = 30) -> int:
        deadline = time.monotonic() + timeout
        while True:
            n = self.distinct(marker)
            if n >= expected or time.monotonic() > deadline:
                return n
            time.sleep(0.3)


def decode_members(raw: bytes) -> list[dict]:
    """The members of a ListMembersResponse, decoded by hand (fields of Member: 1 id, 2 role,
    3 address, 4 version)."""

    def fields(data: bytes):
        i = 0
        while i < len(data):
            key, i = varint(data, i)
            number, wire = key >> 3, key & 7
            if wire == 2:
                length, i = varint(data, i)
                yield number, data[i : i + length]
                i += length
            elif wire == 0:
                value, i = varint(data, i)
                yield number, value
            else:
                raise AssertionError(f"unexpected wire type {wire}")

    def varint(data: bytes, i: int):
        shift = value = 0
        while True:
            byte = data[i]
            i += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value, i

    members = []
    for number, status in fields(raw):
        if number != 1:
            continue
        for inner, member in fields(status):
            if inner == 1:
                record = {n: v.decode() for n, v in fields(member) if isinstance(v, bytes)}
                members.append({"id": record.get(1), "role": record.get(2), "address": record.get(3), "version": record.get(4)})
    return members


@pytest.fixture(scope="module")
def cluster(trawl_bin, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("cluster")
    cluster = Cluster(workdir, trawl_bin)
    try:
        cluster.up()
    except AssertionError:
        subprocess.run(["bash", str(SCRIPT), "down", "--dir", str(workdir / "cluster")], cwd=workdir, timeout=120)
        raise
    yield cluster
    cluster.down()


def roles_of(members: list[dict]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for member in members:
        for role in member["role"].split(","):
            counts[role] = counts.get(role, 0) + 1
    return counts


def test_every_member_is_listed_with_its_role_and_answers_its_probes(cluster):
    assert roles_of(cluster.members()) == {"meta": 1, "gateway": 1, "ingest": 2, "query": 3, "janitor": 2}
    for name, operator in cluster.operators.items():
        status, _, body = http_request(operator + "/info")
        assert status == 200, name
        assert json.loads(body)["role"] == name.split("-")[0], (name, body)
        assert http_request(operator + "/health/ready")[0] == 200, name
    assert json.loads(http_request(cluster.gateway_url + "/info")[2])["role"] == "gateway"
    # Ingest runs without the master key: it registered with a key it made itself.
    assert "BZRK_MASTER_KEY" in (cluster.dir / "ingest-1.launch").read_text()
    # The gateway refuses membership changes from callers, even the admin.
    with grpc.insecure_channel(cluster.gateway_url.removeprefix("http://")) as channel:
        register = channel.unary_unary(
            "/trawl.meta.v1.MetaService/RegisterMember", request_serializer=lambda b: b, response_deserializer=lambda b: b
        )
        with pytest.raises(grpc.RpcError) as refused:
            register(b"", timeout=10, metadata=[("authorization", f"Bearer {cluster.admin_token}")])
        assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED


def test_telemetry_to_both_ingest_nodes_is_queried_through_the_gateway(cluster):
    marker = f"both-{uuid.uuid4().hex[:8]}"
    for n, url in enumerate(cluster.otlp_http_urls):
        assert cluster.send_logs(url, marker, n * 100, 100) == 200
    # Log push and the vendor intake, to both nodes as well.
    for n, url in enumerate(cluster.otlp_http_urls):
        stream = {"stream": {"job": "cluster-e2e"}, "values": [[str(time.time_ns()), f"{marker} push {n}"]]}
        status, _, _ = http_request(
            url + "/lgx/api/v1/push", json.dumps({"streams": [stream]}).encode(),
            {"Content-Type": "application/json", **cluster.ingest_auth}, "POST",
        )  # fmt: skip
        assert status == 204, status
    for n, url in enumerate(cluster.vendor_urls):
        logs = [{"message": f"{marker} vendor {n}", "service": "cluster-e2e"}]
        status, _, _ = http_request(
            url + "/api/v2/logs", json.dumps(logs).encode(),
            {"Content-Type": "application/json", "VX-API-KEY": cluster.ingest_token}, "POST",
        )  # fmt: skip
        assert status == 202, status
    assert cluster.wait_distinct(marker, 200) == 200
    deadline = time.monotonic() + 30
    while cluster.count(f"default | where body has '{marker}'") < 204 and time.monotonic() < deadline:
        time.sleep(0.3)
    assert cluster.count(f"default | where body has '{marker}'") == 204
    # The ADX client, through the gateway.
    kcsb = KustoConnectionStringBuilder.with_token_provider(f"{cluster.gateway_url}/default", lambda: cluster.admin_token)
    response = KustoClient(kcsb).execute("default", f"default | where body has '{marker}' | count")
    assert response.primary_results[0].rows[0][0] == 204
    # Queries spread over the query nodes: every node answered some.
    before = {name: query_count(cluster, name) for name in cluster.operators if name.startswith("query-")}
    for _ in range(9):
        cluster.count("default | take 1")
    after = {name: query_count(cluster, name) for name in before}
    assert all(after[name] > before[name] for name in before), (before, after)


def test_the_opentelemetry_sdk_over_grpc_reaches_both_ingest_nodes(cluster):
    from test_otlp_sdk import LOGS_PER_RUN, POINTS_PER_RUN, SPANS_PER_RUN, send_with_sdk

    transports = ("grpc", "grpc-gzip")
    for transport, endpoint in zip(transports, cluster.otlp_grpc):
        node = type("IngestNode", (), {"otlp_grpc_url": f"http://{endpoint}", "ingest_token": cluster.ingest_token})
        sent = send_with_sdk(node, transport)
        assert all(sent.export_results.values()), sent.export_results
    expected = {"span": SPANS_PER_RUN, "log": LOGS_PER_RUN, "metric": POINTS_PER_RUN}
    for transport in transports:
        kql = (
            f"default | where resource['e2e.transport'] == '{transport}' "
            "| extend kind = iff(isnotempty(span_name), 'span', iff(isnotempty(metric_name), 'metric', 'log')) "
            "| summarize n = count() by kind"
        )
        deadline = time.monotonic() + 30
        while dict(cluster.query(kql)[1]) != expected and time.monotonic() < deadline:
            time.sleep(0.3)
        assert dict(cluster.query(kql)[1]) == expected, transport


def test_a_retry_that_lands_on_the_other_ingest_node_is_stored_once(cluster):
    marker = f"retry-{uuid.uuid4().hex[:8]}"
    records = [{"timeUnixNano": str(time.time_ns()), "body": {"stringValue": f"{marker} {i}"}} for i in range(7)]
    body = json.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": records}]}]}).encode()
    headers = {"Content-Type": "application/json", **cluster.ingest_auth}
    for url in cluster.otlp_http_urls + cluster.otlp_http_urls:
        assert http_request(url + "/v1/logs", body, headers, "POST")[0] == 200
    deadline = time.monotonic() + 20
    while cluster.count(f"default | where body has '{marker}'") < 7 and time.monotonic() < deadline:
        time.sleep(0.3)
    time.sleep(2)
    assert cluster.count(f"default | where body has '{marker}'") == 7


def query_count(cluster: Cluster, name: str) -> float:
    _, _, body = http_request(cluster.operators[name] + "/metrics")
    total = 0.0
    for line in body.decode().splitlines():
        if line.startswith("trawl_queries_total"):
            total += float(line.rsplit(" ", 1)[1])
    return total


class Load:
    """Sends batches to the ingest nodes in turn and queries through the gateway, from two
    threads, recording what was acknowledged and which queries failed."""

    def __init__(self, cluster: Cluster, marker: str, batch: int = 50):
        self.cluster = cluster
        self.marker = marker
        self.batch = batch
        self.acked: set[int] = set()
        self.refused = 0
        self.queries_ok = 0
        self.query_failures: list[float] = []
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self.send), threading.Thread(target=self.ask)]

    def __enter__(self) -> "Load":
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *_) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=120)

    def send(self) -> None:
        n = 0
        while not self.stop.is_set():
            url = self.cluster.otlp_http_urls[(n // self.batch) % len(self.cluster.otlp_http_urls)]
            if self.cluster.send_logs(url, self.marker, n, self.batch) == 200:
                self.acked.update(range(n, n + self.batch))
            else:
                self.refused += 1
            n += self.batch
            time.sleep(0.02)

    def ask(self) -> None:
        while not self.stop.is_set():
            try:
                self.cluster.count("default | take 10")
                self.queries_ok += 1
            except Exception:  # noqa: BLE001 - any failure is recorded
                self.query_failures.append(time.monotonic())
            time.sleep(0.05)


def test_killing_an_ingest_and_a_query_node_under_load_loses_nothing_acknowledged(cluster):
    marker = f"kill-{uuid.uuid4().hex[:8]}"
    with Load(cluster, marker) as load:
        time.sleep(3)
        killed_at = time.monotonic()
        cluster.kill("ingest-1")
        cluster.kill("query-1")
        time.sleep(6)
        answered_after = load.queries_ok
        time.sleep(3)
        # Queries kept answering: the gateway passes over the dead node.
        assert load.queries_ok > answered_after
        late_failures = [t for t in load.query_failures if t > killed_at + 3]
        assert not late_failures, f"{len(late_failures)} queries failed more than 3 s after the kill"
    acked = len(load.acked)
    assert acked > 0 and load.refused > 0, (acked, load.refused)
    assert cluster.wait_distinct(marker, acked) == acked
    cluster.restart("ingest-1")
    cluster.restart("query-1")
    deadline = time.monotonic() + 20
    while roles_of(cluster.members()).get("query") != 3 and time.monotonic() < deadline:
        time.sleep(0.5)
    assert roles_of(cluster.members()) == {"meta": 1, "gateway": 1, "ingest": 2, "query": 3, "janitor": 2}


@pytest.mark.parametrize("outage", [10, 40])
def test_object_storage_down_holds_then_refuses_then_recovers(cluster, outage):
    marker = f"s3-{outage}-{uuid.uuid4().hex[:8]}"
    url = cluster.otlp_http_urls[1]
    assert cluster.send_logs(url, marker, 0, 20) == 200
    cluster.kill("s3")
    down_at = time.monotonic()
    result: dict[str, float | int] = {}

    def held() -> None:
        result["status"] = cluster.send_logs(url, marker, 1000, 20, timeout=90)
        result["after"] = time.monotonic() - down_at

    sender = threading.Thread(target=held)
    sender.start()
    time.sleep(outage)
    cluster.restart("s3")
    sender.join(timeout=90)
    if outage < 25:
        # Held while the store was retried, then stored: acknowledged after the recovery.
        assert result["status"] == 200 and result["after"] >= outage - 1, result
        expected = 40
    else:
        # Past the 25 s the request may be held: 503 with Retry-After, nothing stored twice.
        assert result["status"] == 503 and 20 <= result["after"] <= 40, result
        expected = 20
    assert cluster.send_logs(url, marker, 2000, 20) == 200
    assert cluster.wait_distinct(marker, expected + 20) == expected + 20


def test_postgres_restart_is_ridden_out(cluster):
    marker = f"pg-{uuid.uuid4().hex[:8]}"
    assert cluster.send_logs(cluster.otlp_http_urls[0], marker, 0, 10) == 200
    cluster.restart("postgres")
    deadline = time.monotonic() + 60
    sent = 0
    while sent < 3 and time.monotonic() < deadline:
        if cluster.send_logs(cluster.otlp_http_urls[sent % 2], marker, 100 * (sent + 1), 10) == 200:
            sent += 1
        else:
            time.sleep(0.5)
    assert sent == 3
    assert cluster.wait_distinct(marker, 40) == 40


def lease_holders(cluster: Cluster) -> list[str]:
    held = []
    for name in ("janitor-1", "janitor-2"):
        try:
            if operator_gauges_at(cluster.operators[name]).get("trawl_janitor_lease_held") == 1:
                held.append(name)
        except OSError:
            pass
    return held


def operator_gauges_at(url: str) -> dict[str, float]:
    class At:
        operator_url = url

    return operator_gauges(At, "trawl_janitor")


def test_the_other_janitor_takes_the_lease_when_the_holder_dies(cluster):
    deadline = time.monotonic() + 60
    while len(lease_holders(cluster)) != 1 and time.monotonic() < deadline:
        time.sleep(0.5)
    (holder,) = lease_holders(cluster)
    other = "janitor-2" if holder == "janitor-1" else "janitor-1"
    cluster.kill(holder)
    killed = time.monotonic()
    while lease_holders(cluster) != [other]:
        assert time.monotonic() - killed < 60, "the lease was not taken over within 60 s"
        time.sleep(0.5)
    took = time.monotonic() - killed
    cluster.restart(holder)
    assert took < 45, took
    print(f"janitor lease taken over after {took:.1f} s")


def test_a_gateway_is_ready_only_once_meta_lists_its_key(cluster):
    cluster.kill("meta")
    cluster.kill("gateway")
    # The gateway starts without meta: it does not report ready.
    cluster.script("start", "gateway")
    time.sleep(4)
    assert http_request(cluster.gateway_url + "/health/ready")[0] == 503
    cluster.restart("meta")
    deadline = time.monotonic() + 20
    while http_request(cluster.gateway_url + "/health/ready")[0] != 200:
        assert time.monotonic() < deadline, "the gateway did not become ready once meta was back"
        time.sleep(0.3)
    assert cluster.count("default | take 1") == 1


def test_the_master_key_rotates_on_the_running_cluster(cluster):
    assert cluster.send_logs(cluster.otlp_http_urls[0], "rotation", 0, 1) == 200
    deadline = time.monotonic() + 20
    while cluster.count("default | take 1") < 1 and time.monotonic() < deadline:
        time.sleep(0.3)
    old = cluster.secrets()["BZRK_MASTER_KEY"]
    new = uuid.uuid4().hex + uuid.uuid4().hex
    names = ["meta", "gateway", "query-1", "query-2", "query-3", "janitor-1", "janitor-2"]
    # Add the new key as the secondary everywhere, then switch, then drop the old one; the
    # cluster answers after every restart.
    for primary, secondary in ((old, new), (new, old), (new, None)):
        cluster.set_secrets(BZRK_MASTER_KEY=primary, SECONDARY_MASTER_KEY=secondary)
        for name in names:
            cluster.restart(name)
            answers = [cluster.count("default | take 1") for _ in range(3)]
            assert answers == [1, 1, 1], (name, answers, cluster.members())
    assert roles_of(cluster.members()) == {"meta": 1, "gateway": 1, "ingest": 2, "query": 3, "janitor": 2}


def test_a_dropped_table_comes_back_with_undo_and_the_janitor_shows_its_work(cluster, trawl_bin):
    table = f"drop_{uuid.uuid4().hex[:8]}"
    assert cli(cluster, trawl_bin, "table", "create", table)[0] == 0
    code, token, err = cli(cluster, trawl_bin, "token", "create", "--name", table, "--table", table)
    assert code == 0, err
    for batch in range(3):
        assert cluster.send_logs(cluster.otlp_http_urls[batch % 2], table, batch * 10, 10, token=token.strip()) == 200
    deadline = time.monotonic() + 20
    while cluster.count(table) < 30 and time.monotonic() < deadline:
        time.sleep(0.3)
    assert cluster.count(table) == 30
    # Dropping needs admin or maintainer.
    observer = f"obs{uuid.uuid4().hex[:6]}"
    assert cli(cluster, trawl_bin, "service-account", "create", observer, "--role", "observer")[0] == 0
    code, observer_token, err = cli(cluster, trawl_bin, "service-account", "token", "create", observer)
    assert code == 0, err
    status, answer = cluster.mgmt(f".drop table {table}", token=observer_token.strip())
    assert status == 403, answer
    status, answer = cluster.mgmt(f".drop table {table}")
    assert status == 200, answer
    assert table not in [row[0] for row in answer["Tables"][0]["Rows"]]
    with pytest.raises(Exception, match="400"):
        cluster.count(table)
    assert cluster.mgmt(f".drop table {table} ifexists")[0] == 200
    assert cluster.mgmt(f".drop table {table}")[0] == 400
    status, answer = cluster.mgmt(f".undo drop table {table}")
    assert status == 200, answer
    assert cluster.count(table) == 30
    # Small segments (one per ingest flush) that the janitor merges, in .show operations.
    for batch in range(6):
        assert cluster.send_logs(cluster.otlp_http_urls[batch % 2], f"{table}-merge", batch * 10, 10) == 200
        time.sleep(1.1)
    deadline = time.monotonic() + 60
    while True:
        status, answer = cluster.mgmt(".show operations")
        assert status == 200, answer
        columns = [c["ColumnName"] for c in answer["Tables"][0]["Columns"]]
        rows = [dict(zip(columns, row)) for row in answer["Tables"][0]["Rows"]]
        merges = [r for r in rows if r["Operation"] == "MergeSegments" and r["State"] == "Completed"]
        if merges or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert merges, rows
    assert merges[0]["NodeId"] and "merged" in merges[0]["Status"]


def test_a_process_of_another_release_is_refused(cluster):
    query, operator = free_ports(2)
    secrets = cluster.secrets()
    launch = (cluster.dir / "query-1.launch").read_text()
    store = launch.split("--object-store ")[1].split()[0]
    endpoint = launch.split("--s3-endpoint ")[1].split()[0]
    done = subprocess.run(
        [str(cluster.binary), "serve", "--role", "query", "--data-dir", str(cluster.workdir / "old-query"),
         "--catalog", secrets["TRAWL_CATALOG"], "--object-store", store, "--s3-endpoint", endpoint,
         "--meta", cluster.env["META_URL"], "--query-bind", f"127.0.0.1:{query}",
         "--operator-bind", f"127.0.0.1:{operator}"],
        env={**os.environ, **secrets, "TRAWL_PRETEND_VERSION": "0.0.1"},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode != 0
    assert "mixed versions" in done.stderr and "0.0.1" in done.stderr, done.stderr[-2000:]


@pytest.mark.parametrize(
    "args, says",
    [
        (["--role", "query", "--object-store", "s3://bucket/p", "--meta", "http://127.0.0.1:1"], "postgres://"),
        (["--role", "query", "--catalog", "postgres://x@127.0.0.1:1/x", "--meta", "http://127.0.0.1:1"], "s3://"),
        (["--role", "gateway", "--catalog", "postgres://x@127.0.0.1:1/x"], "--meta"),
    ],
)
def test_a_member_without_the_settings_it_needs_does_not_start(trawl_bin, tmp_path, args, says):
    env = {**os.environ, "BZRK_MASTER_KEY": "k" * 40}
    done = subprocess.run(
        [str(trawl_bin), "serve", "--data-dir", str(tmp_path), *args], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0 and says in done.stderr, done.stderr
    env.pop("BZRK_MASTER_KEY")
    done = subprocess.run(
        [str(trawl_bin), "serve", "--data-dir", str(tmp_path), *args], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0 and "BZRK_MASTER_KEY" in done.stderr, done.stderr


def test_up_runs_on_an_existing_bucket_and_catalog(trawl_bin, tmp_path):
    """`up --s3-endpoint --s3-bucket --catalog`: the cluster uses them, and `down` leaves them."""
    s3 = S3Server(tmp_path / "s3", buckets=("existing",)).start()
    postgres = PostgresServer().start()
    other = Cluster(tmp_path, trawl_bin)
    try:
        run_on_existing(other, s3, postgres)
    finally:
        s3.stop()
        postgres.remove()


def run_on_existing(other: Cluster, s3: S3Server, postgres: PostgresServer) -> None:
    try:
        os.environ.update(s3.env())
        try:
            other.script(
                "up", "--query-nodes", "1", "--s3-endpoint", s3.endpoint, "--s3-bucket", "existing",
                "--s3-prefix", "mine", "--catalog", postgres.url,
            )  # fmt: skip
        finally:
            for key in s3.env():
                os.environ.pop(key, None)
        other.up_done()
        assert other.env["S3_ENDPOINT"] == s3.endpoint and other.env["CATALOG_URL"] == postgres.url
        assert other.send_logs(other.otlp_http_urls[0], "existing-bucket", 0, 5) == 200
        assert other.wait_distinct("existing-bucket", 5) == 5
        assert s3.objects("existing", "mine"), "the segments are in the given bucket, under the prefix"
        assert postgres.scalar("SELECT count(*) FROM segments") >= 1
    finally:
        other.script("down", timeout=120)
    # Neither the bucket's server nor the catalog was stopped by `down`.
    assert postgres.scalar("SELECT count(*) FROM segments") >= 1
    assert s3.process is not None and s3.process.poll() is None
