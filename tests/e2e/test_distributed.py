"""Distributed query on a real cluster (scripts/cluster.sh: s3s-fs, PostgreSQL, 3 query nodes),
with every query spread over the query nodes (`--distribute-min-bytes 0`): the benchmark
questions, more KQL, the progressive ADX mode and the public corpus answer as one node alone
does (`query_fanout_nodes_percent: 1` keeps a query on the node that received it); every
query node reads a share of the segments (its `trawl_query_scanned_*` metrics); a query node
killed with -9 costs no failed query."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest

from test_cluster import SCRIPT, Cluster
from trawl_e2e import http_request

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench" / "queries"))
from questions import QUESTIONS  # noqa: E402

SERVICES = [f"svc-{i}" for i in range(7)]
HOSTS = [f"host-{i}" for i in range(12)]
ROUTES = ["/api/cart", "/api/pay", "/api/search", "/api/login", "/health"]
RARE = "zqwwlchrbnql"
NEEDLE = "0af7651916cd43dd8448eb211c80319c"
BATCHES = 16
LOGS_PER_BATCH = 300
SPANS_PER_BATCH = 120
SECOND = 1_000_000_000


class SpreadCluster(Cluster):
    def up(self) -> "SpreadCluster":
        self.script(
            "up", "--query-nodes", "3", "--merge-interval-secs", "3",
            "--query-arg=--distribute-min-bytes=0", "--query-arg=--distribute-min-segments=0",
            # Each query's tasks may hold 256 MiB on each node.
            "--query-arg=--query-memory-per-query-bytes=268435456",
        )  # fmt: skip
        self.up_done()
        self.query_operators = self.env["QUERY_OPERATOR_URLS"].split()
        return self

    def adx(self, kql: str, fanout: int | None = None, progressive: bool = False) -> list[dict]:
        """The tables of a v1 (or progressive v2) ADX query through the gateway."""
        options: dict = {}
        if fanout is not None:
            options["query_fanout_nodes_percent"] = fanout
        if progressive:
            options["results_progressive_enabled"] = True
        path = "/v2/rest/query" if progressive else "/v1/rest/query"
        body = json.dumps({"db": "default", "csl": kql, "properties": {"Options": options}}).encode()
        headers = {"Content-Type": "application/json", **self.query_auth}
        status, _, answer = http_request(self.gateway_url + path, body, headers, "POST", 120)
        assert status == 200, f"{kql}: {status} {answer[:500]!r}"
        return json.loads(answer)

    def scanned(self) -> list[tuple[int, int]]:
        """(rows, bytes) each query node read so far, in the order of QUERY_OPERATOR_URLS."""
        out = []
        for url in self.query_operators:
            text = http_request(url + "/metrics")[2].decode()
            values = {}
            for line in text.splitlines():
                name, _, value = line.partition(" ")
                if name in ("trawl_query_scanned_rows_total", "trawl_query_scanned_bytes_total"):
                    values[name] = int(float(value))
            out.append((values.get("trawl_query_scanned_rows_total", 0), values.get("trawl_query_scanned_bytes_total", 0)))
        return out


def attribute(key: str, value) -> dict:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": value}}


def resource(host: int) -> dict:
    service = SERVICES[host % len(SERVICES)]
    return {"attributes": [attribute("service.name", service), attribute("host.name", HOSTS[host])]}


def log_batch(batch: int, start: int, rng: random.Random) -> dict:
    by_host: dict[int, list] = {}
    for i in range(LOGS_PER_BATCH):
        n = batch * LOGS_PER_BATCH + i
        host = rng.randrange(len(HOSTS))
        severity = rng.choices(["INFO", "WARN", "ERROR", "DEBUG"], [72, 6, 2, 20])[0]
        status = 500 + rng.randrange(4) if severity == "ERROR" else rng.choice([200, 200, 201, 404])
        body = f"request {n} for user{rng.randrange(50)} took {rng.randrange(900)} ms"
        if n % 97 == 0:
            body += " after a deadlock on table orders"
        if n % 401 == 7:
            body += f" marker {RARE}"
        record = {
            "timeUnixNano": str(start + n * SECOND // 2),
            "severityText": severity,
            "body": {"stringValue": body},
            "attributes": [attribute("http.route", ROUTES[n % len(ROUTES)]), attribute("http.status_code", status)],
        }
        if n % 1000 == 500:
            record["traceId"] = NEEDLE
            record["spanId"] = f"{n:016x}"
        by_host.setdefault(host, []).append(record)
    return {
        "resourceLogs": [
            {"resource": resource(h), "scopeLogs": [{"logRecords": records}]} for h, records in sorted(by_host.items())
        ]
    }


def span_batch(batch: int, start: int, rng: random.Random) -> dict:
    by_host: dict[int, list] = {}
    for i in range(SPANS_PER_BATCH):
        n = batch * SPANS_PER_BATCH + i
        host = rng.randrange(len(HOSTS))
        begin = start + n * SECOND + rng.randrange(SECOND)
        duration = int(rng.lognormvariate(17.8, 1.0))
        trace = NEEDLE if n % 500 == 250 else f"{rng.getrandbits(128):032x}"
        span = {
            "traceId": trace,
            "spanId": f"{rng.getrandbits(64):016x}",
            "name": rng.choice(["GET /api/cart", "POST /api/pay", "SELECT orders", "publish events"]),
            "kind": 2,
            "startTimeUnixNano": str(begin),
            "endTimeUnixNano": str(begin + duration),
            "attributes": [attribute("http.route", ROUTES[n % len(ROUTES)]), attribute("http.status_code", 200 if n % 50 else 503)],
            "status": {"code": 2 if n % 100 == 0 else 1},
        }
        by_host.setdefault(host, []).append(span)
    return {
        "resourceSpans": [
            {"resource": resource(h), "scopeSpans": [{"spans": spans}]} for h, spans in sorted(by_host.items())
        ]
    }


@pytest.fixture(scope="module")
def spread(trawl_bin, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("spread")
    cluster = SpreadCluster(workdir, trawl_bin)
    try:
        cluster.up()
    except AssertionError:
        subprocess.run(["bash", str(SCRIPT), "down", "--dir", str(workdir / "cluster")], cwd=workdir, timeout=120)
        raise
    rng = random.Random(18)
    start = (time.time_ns() // SECOND - 4 * 3600) * SECOND
    headers = {"Content-Type": "application/json", **cluster.ingest_auth}
    for batch in range(BATCHES):
        url = cluster.otlp_http_urls[batch % 2]
        for path, body in (("/v1/logs", log_batch(batch, start, rng)), ("/v1/traces", span_batch(batch, start, rng))):
            status, _, answer = http_request(url + path, json.dumps(body).encode(), headers, "POST", 60)
            assert status == 200, answer
        # Separate flushes: the data lands in many segments.
        time.sleep(0.35)
    expected = BATCHES * (LOGS_PER_BATCH + SPANS_PER_BATCH)
    deadline = time.monotonic() + 60
    while cluster.count("default", timeout=60) < expected and time.monotonic() < deadline:
        time.sleep(0.5)
    assert cluster.count("default") == expected
    cluster.end = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime((start + BATCHES * LOGS_PER_BATCH * SECOND // 2) / SECOND))
    yield cluster
    cluster.down()


def rows_of(answer: list[dict] | dict) -> list[list]:
    """The rows of PrimaryResult: of a v1 answer, or of progressive v2 frames (the primary
    table's header, then fragments that replace or append rows)."""
    if isinstance(answer, dict):
        return answer["Tables"][0]["Rows"]
    header = next(f for f in answer if f["FrameType"] == "TableHeader" and f["TableName"] == "PrimaryResult")
    rows: list[list] = []
    for frame in answer:
        if frame["FrameType"] == "TableFragment" and frame["TableId"] == header["TableId"]:
            rows = frame["Rows"] if frame["TableFragmentType"] == "DataReplace" else rows + frame["Rows"]
    return rows


def normalized(rows: list[list], top_by: int | None) -> list:
    """Rows compared without their order: rows with equal sort keys may come in either
    order (two services with as many traces), and rows tied at the cut of a `top N` may
    differ, though not their counts."""
    if top_by is not None:
        return sorted(row[top_by] for row in rows)
    return sorted(json.dumps(row, sort_keys=True) for row in rows)


def fill(kql: str, cluster: SpreadCluster) -> str:
    end = cluster.end
    end_t = time.strptime(end, "%Y-%m-%dT%H:%M:%SZ")
    import calendar

    base = calendar.timegm(end_t)
    fmt = lambda t: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))  # noqa: E731
    return (
        kql.replace("{rare_token}", RARE)
        .replace("{needle}", NEEDLE)
        .replace("{end_1h}", fmt(base - 3600))
        .replace("{end_15m}", fmt(base - 900))
        .replace("{end}", end)
    )


def test_the_benchmark_questions_answer_the_same_spread_and_alone_and_the_work_splits(spread):
    before = spread.scanned()
    for question in QUESTIONS:
        kql = fill(question.kql, spread)
        alone = rows_of(spread.adx(kql, fanout=1))
        together = rows_of(spread.adx(kql))
        assert normalized(together, question.top_by) == normalized(alone, question.top_by), f"{question.id}: {kql}"
        assert together, f"{question.id} found nothing: {kql}"
    after = spread.scanned()
    read = [after[i][1] - before[i][1] for i in range(3)]
    # Every query node read segments (as coordinator of its own share, or as a worker).
    assert all(r > 0 for r in read), read


MORE_KQL = [
    "default | summarize count(), dcount(tostring(resource['host.name'])) by severity_text",
    "default | where isnotempty(span_name) | summarize percentiles(duration, 50, 90) by span_name",
    "default | where isnotempty(span_name) | summarize arg_max(duration, trace_id) by span_name",
    "default | where body has 'deadlock' | summarize make_set(tostring(resource['service.name']))",
    "default | where isnotempty(body) | summarize count() by bin(timestamp, 1h), severity_text",
    "default | where isnotempty(body) | make-series n = count() default = 0 on timestamp from startofday(ago(1d)) to startofday(now()) + 1d step 1h by severity_text",
    "default | where isnotempty(body) | extend took = toint(extract('took ([0-9]+) ms', 1, tostring(body))) "
    "| summarize avg(took), max(took) by tostring(attributes['http.route'])",
    "default | where isnotempty(body) | distinct tostring(resource['service.name'])",
    "default | where isnotempty(span_name) | summarize spans = count() by trace_id | summarize count() by spans",
    "default | where isnotempty(body) | summarize n = count() by s = tostring(resource['service.name']) "
    "| join kind=inner (default | where isnotempty(span_name) "
    "| summarize m = count() by s = tostring(resource['service.name'])) on s | project s, n, m",
    "default | where isnotempty(body) | fork (summarize count() by severity_text) (top 3 by timestamp desc "
    "| project timestamp)",
    "default | where isnotempty(body) | parse tostring(body) with 'request ' n:long ' for ' user ' took' * "
    "| summarize count() by user",
]


def set_sorted(cell):
    """A set's elements sorted (their order is not defined); v1 answers dynamic values as
    JSON text."""
    if isinstance(cell, str) and cell.startswith("["):
        try:
            cell = json.loads(cell)
        except ValueError:
            return cell
    if isinstance(cell, list):
        return sorted(json.dumps(item, sort_keys=True) for item in cell)
    return cell


@pytest.mark.parametrize("kql", MORE_KQL)
def test_more_kql_answers_the_same_spread_and_alone(spread, kql):
    alone = spread.adx(kql, fanout=1)
    together = spread.adx(kql)
    # Every result table (fork makes several; the table of contents, last, names them),
    # compared without order, the elements of sets sorted.
    def tables(answer):
        toc = answer["Tables"][-1]["Rows"]
        results = [row[0] for row in toc if row[1] == "QueryResult"]
        out = []
        for index in results:
            rows = [[set_sorted(c) for c in row] for row in answer["Tables"][index]["Rows"]]
            out.append(sorted(json.dumps(r, sort_keys=True) for r in rows))
        return out

    assert tables(together) == tables(alone), kql


def test_progressive_answers_the_same_spread_and_alone(spread):
    kql = "default | where isnotempty(body) | summarize count() by severity_text, bin(timestamp, 30m)"
    alone = rows_of(spread.adx(kql, fanout=1, progressive=True))
    together = rows_of(spread.adx(kql, progressive=True))
    assert alone and sorted(map(json.dumps, together)) == sorted(map(json.dumps, alone))


def test_the_public_corpus_passes_on_the_cluster(spread):
    floor = (REPO / "tests" / "conformance" / "floor.txt").read_text().strip()
    corpus = REPO / "tests" / "conformance" / "corpus"
    done = subprocess.run(
        [sys.executable, str(corpus / "run.py"), str(corpus / "public.jsonl"),
         "--url", spread.gateway_url + "/v1/rest/query", "--header", f"Authorization: Bearer {spread.admin_token}",
         "--core", "--min-pass", floor],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]


def test_the_scans_progress_service_answers_only_the_cluster(spread):
    # What a running query's scans read on a node, which its coordinator asks for while it
    # runs: only with the service token derived from the master key.
    key = spread.secrets()["BZRK_MASTER_KEY"]
    token = hmac.new(key.encode(), b"trawl-service-token-v1", hashlib.sha256).hexdigest()
    request = b"\x0a\x0bno-such-one"  # ReadScansRequest{query: "no-such-one"}
    for url in spread.env["QUERY_URLS"].split():
        with grpc.insecure_channel(url.removeprefix("http://")) as channel:
            read = channel.unary_unary(
                "/trawl.worker.v1.Scans/Read", request_serializer=lambda b: b, response_deserializer=lambda b: b
            )
            # A query whose scans never ran there: every total zero (an empty message).
            assert read(request, timeout=10, metadata=[("x-trawl-service-token", token)]) == b""
            with pytest.raises(grpc.RpcError) as error:
                read(request, timeout=10)
            assert error.value.code() == grpc.StatusCode.UNAUTHENTICATED
            with pytest.raises(grpc.RpcError) as error:
                read(request, timeout=10, metadata=[("x-trawl-service-token", "0" * 64)])
            assert error.value.code() == grpc.StatusCode.UNAUTHENTICATED


def test_a_query_over_its_memory_limit_fails_alone(spread):
    # Every log row 3,000 times over, kept in lists by minute: far more than the 256 MiB each
    # node allows a query. On a busy machine the time limit may come first (as on one node,
    # test_hostile_queries.py), or a worker's stream break off (503): either way the query
    # fails alone and every node goes on.
    kql = (
        "default | where isnotempty(body) | extend a = range(1, 3000) | mv-expand a "
        '| summarize make_list(strcat("abcdefghijklmnopqrstuvwxyz", tostring(a))) by bin(timestamp, 1m)'
    )
    options = {"servertimeout": "00:00:30"}
    body = json.dumps({"db": "default", "csl": kql, "properties": {"Options": options}}).encode()
    headers = {"Content-Type": "application/json", **spread.query_auth}
    status, _, answer = http_request(spread.gateway_url + "/v1/rest/query", body, headers, "POST", 120)
    assert status in (400, 503, 504), answer[:500]
    if status == 400:
        assert b"memory" in answer, answer[:500]
    for _ in range(3):
        assert spread.count("default") == BATCHES * (LOGS_PER_BATCH + SPANS_PER_BATCH)


def test_a_query_node_killed_mid_run_costs_no_query(spread):
    kql = "default | where isnotempty(body) | summarize count() by severity_text"
    expected = sorted(map(json.dumps, rows_of(spread.adx(kql, fanout=1))))
    spread.kill("query-3")
    try:
        # Meta still lists the dead node for a while: queries spread over it find it gone
        # and run again without it.
        for _ in range(6):
            assert sorted(map(json.dumps, rows_of(spread.adx(kql)))) == expected
    finally:
        spread.restart("query-3")
    deadline = time.monotonic() + 30
    while len([m for m in spread.members() if "query" in m["role"]]) < 3 and time.monotonic() < deadline:
        time.sleep(0.5)
    assert sorted(map(json.dumps, rows_of(spread.adx(kql)))) == expected
