"""Shared helpers of the end-to-end tests: a `trawl serve` process and its query client."""

from __future__ import annotations

import json
import os
import signal
import re
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import grpc

# Every client here talks to 127.0.0.1: never through a proxy from the environment (urllib,
# requests and gRPC all honour no_proxy).
for _name in ("no_proxy", "NO_PROXY"):
    os.environ[_name] = ",".join(filter(None, [os.environ.get(_name, ""), "127.0.0.1", "localhost"]))

READY_TIMEOUT = 30.0
SHUTDOWN_TIMEOUT = 15.0
LOG_TAIL_LINES = 200

# Servers relevant to the running test (alive when it started, or created during it).
CURRENT: list["TrawlServer"] = []
# Every server of the session (the ones still running are killed at exit, just in case).
ALL: list["TrawlServer"] = []
# The directories of the clusters (`scripts/cluster.sh`) that are up: their processes' logs
# go into the report of a test that fails.
CLUSTER_DIRS: list[Path] = []

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def cluster_log_notes(directory: Path, lines: int = 25) -> list[tuple[str, str]]:
    """(process, its last warnings and errors, then its last lines) for each log of a cluster."""
    notes = []
    for log in sorted(directory.glob("*.log")):
        text = ANSI.sub("", log.read_text(errors="replace")).splitlines()
        flagged = [line for line in text if " WARN " in line or " ERROR " in line]
        body = "\n".join(
            [f"-- last warnings and errors ({len(flagged)} in all):", *flagged[-lines:], "-- last lines:", *text[-lines:]]
        )
        notes.append((log.stem, body))
    return notes


def free_ports(n: int) -> list[int]:
    """n distinct free TCP ports on 127.0.0.1 (all held open until all are chosen)."""
    sockets = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


class QueryError(Exception):
    def __init__(self, status: int, body: str, kql: str):
        super().__init__(f"query failed with HTTP {status}: {body}\nquery: {kql}")
        self.status = status
        self.body = body


def http_request(
    url: str,
    data: bytes | None = None,
    headers: dict[str, str] | None = None,
    method: str | None = None,
    timeout: float = 30.0,
) -> tuple[int, dict[str, str], bytes]:
    """(status, headers, body); HTTP error statuses are returned, not raised."""
    request = urllib.request.Request(url, data=data, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()
    except urllib.error.HTTPError as error:
        return error.code, {k.lower(): v for k, v in error.headers.items()}, error.read()


class TrawlServer:
    """One `trawl serve` process; start() may be called again after stop()/kill() (same data dir, new ports)."""

    def __init__(
        self,
        binary: Path,
        workdir: Path,
        name: str = "trawl",
        merge_interval_secs: int = 30,
        flush_interval_ms: int = 200,
        extra_args: list[str] | tuple[str, ...] = (),
        extra_env: dict[str, str] | None = None,
    ):
        self.binary = binary
        self.workdir = workdir
        self.name = name
        self.data_dir = workdir / "data"
        self.merge_interval_secs = merge_interval_secs
        self.flush_interval_ms = flush_interval_ms
        self.extra_args = list(extra_args)
        self.extra_env = dict(extra_env or {})
        self.process: subprocess.Popen | None = None
        self.starts = 0
        self.log_paths: list[Path] = []
        workdir.mkdir(parents=True, exist_ok=True)

    # --- lifecycle -------------------------------------------------------------------------
    def start(self) -> "TrawlServer":
        assert self.process is None or self.process.poll() is not None, "already running"
        gateway, query, operator, grpc, http, meta = free_ports(6)
        self.meta_endpoint = f"127.0.0.1:{meta}"
        self.gateway_url = f"http://127.0.0.1:{gateway}"
        self.gateway_endpoint = f"127.0.0.1:{gateway}"
        # The query service itself: it answers only requests the gateway signed.
        self.query_url = f"http://127.0.0.1:{query}"
        self.operator_url = f"http://127.0.0.1:{operator}"
        self.otlp_grpc_endpoint = f"127.0.0.1:{grpc}"
        self.otlp_grpc_url = f"http://127.0.0.1:{grpc}"
        self.otlp_http_url = f"http://127.0.0.1:{http}"
        self.starts += 1
        log_path = self.workdir / f"{self.name}-{self.starts}.log"
        self.log_paths.append(log_path)
        command = [
            str(self.binary), "serve",
            "--data-dir", str(self.data_dir),
            "--gateway-bind", f"127.0.0.1:{gateway}",
            "--meta-bind", f"127.0.0.1:{meta}",
            "--query-bind", f"127.0.0.1:{query}",
            "--operator-bind", f"127.0.0.1:{operator}",
            "--otlp-grpc-bind", f"127.0.0.1:{grpc}",
            "--otlp-http-bind", f"127.0.0.1:{http}",
            "--flush-interval-ms", str(self.flush_interval_ms),
            "--merge-interval-secs", str(self.merge_interval_secs),
            *self.extra_args,
        ]  # fmt: skip
        env = dict(os.environ, NO_COLOR="1", RUST_BACKTRACE="1", **self.extra_env)
        env.setdefault("RUST_LOG", "info")
        with open(log_path, "ab") as log:
            log.write(f"$ {' '.join(command)}\n".encode())
            log.flush()
            self.process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env
            )
        if self not in ALL:
            ALL.append(self)
        if self not in CURRENT:
            CURRENT.append(self)
        self.wait_ready()
        secrets = json.loads((self.data_dir / "bootstrap.json").read_text())
        self.admin_token = secrets["admin_token"]
        self.ingest_token = secrets["ingest_token"]
        return self

    @property
    def ingest_auth(self) -> dict[str, str]:
        """The header that lets a request ingest (the bootstrap ingest token)."""
        return {"Authorization": f"Bearer {self.ingest_token}"}

    @property
    def query_auth(self) -> dict[str, str]:
        """The header that lets a request query through the gateway (the bootstrap admin token)."""
        return {"Authorization": f"Bearer {self.admin_token}"}

    def wait_ready(self, timeout: float = READY_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        pending = [self.gateway_url, self.query_url, self.operator_url, self.otlp_http_url]
        while pending:
            if self.process.poll() is not None:
                raise AssertionError(
                    f"trawl exited with {self.process.returncode} before it was ready\n{self.log_tail()}"
                )
            try:
                status, _, _ = http_request(pending[0] + "/health/ready", timeout=2)
                if status == 200:
                    pending.pop(0)
                    continue
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"trawl not ready after {timeout:.0f} s ({pending[0]})\n{self.log_tail()}")
            time.sleep(0.05)

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL: a crash, no chance to flush."""
        if self.running:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self, timeout: float = SHUTDOWN_TIMEOUT) -> int | None:
        """SIGTERM and wait; the exit code, or None when it did not exit in time (then it is killed)."""
        if self.process is None:
            return 0
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                return None
        return self.process.returncode

    def stop_cleanly(self) -> None:
        code = self.stop()
        assert code == 0, (
            f"trawl did not shut down cleanly on SIGTERM (exit code {code}, None = still running after {SHUTDOWN_TIMEOUT:.0f} s)\n{self.log_tail()}"
        )

    # --- logs ------------------------------------------------------------------------------
    def log_text(self) -> str:
        parts = []
        for path in self.log_paths:
            try:
                parts.append(f"===== {path} =====\n" + path.read_text(errors="replace"))
            except OSError as error:
                parts.append(f"===== {path}: {error}")
        return "\n".join(parts)

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        text = self.log_text().splitlines()
        skipped = len(text) - lines
        head = (
            [f"... {skipped} earlier lines (full logs: {', '.join(map(str, self.log_paths))})"] if skipped > 0 else []
        )
        return "\n".join(head + text[-lines:])

    # --- queries ---------------------------------------------------------------------------
    def query_raw(
        self, kql: str, since: str | None = None, until: str | None = None, timeout: float = 60.0
    ) -> dict[str, Any]:
        """Runs `kql` through the gateway (`POST /v2/rest/query` with the admin token) and
        returns the result in the shape of the query service's `POST /query`:
        {Tables: [{name, columns: [{column_name, column_type}], rows}]}, with `@Warnings`."""
        options: dict[str, Any] = {}
        if since is not None:
            options["query_datetimescope_from"] = since
        if until is not None:
            options["query_datetimescope_to"] = until
        body = {"db": "default", "csl": kql, "properties": {"Options": options}}
        headers = {"Content-Type": "application/json", **self.query_auth}
        status, _, data = http_request(
            self.gateway_url + "/v2/rest/query", json.dumps(body).encode(), headers, "POST", timeout
        )
        if status != 200:
            raise QueryError(status, data.decode(errors="replace"), kql)
        return v2_as_tables(json.loads(data))

    def query(self, kql: str, **kwargs) -> tuple[list[str], list[list[Any]]]:
        """(column names, rows) of PrimaryResult."""
        table = self.primary(self.query_raw(kql, **kwargs))
        return [c["column_name"] for c in table["columns"]], table["rows"]

    def query_typed(self, kql: str, **kwargs) -> tuple[dict[str, str], list[list[Any]]]:
        """({column name: column type}, rows) of PrimaryResult."""
        table = self.primary(self.query_raw(kql, **kwargs))
        return {c["column_name"]: c["column_type"] for c in table["columns"]}, table["rows"]

    def query_dicts(self, kql: str, **kwargs) -> list[dict[str, Any]]:
        """Rows as {column: value}; columns that are null in a row are left out of its dict
        (the store is sparse: an omitted field reads as null)."""
        columns, rows = self.query(kql, **kwargs)
        return [{c: v for c, v in zip(columns, row) if v is not None} for row in rows]

    def count(self, kql: str = "default", **kwargs) -> int:
        _, rows = self.query(f"{kql} | count", **kwargs)
        return rows[0][0]

    @staticmethod
    def primary(result: dict[str, Any]) -> dict[str, Any]:
        for table in result["Tables"]:
            if table["name"] == "PrimaryResult":
                return table
        raise AssertionError(f"no PrimaryResult in {result}")

    def wait_for_count(self, kql: str, expected: int, timeout: float = 10.0) -> int:
        """Polls `kql | count` until it is at least `expected` (rows become visible after the flush)."""
        deadline = time.monotonic() + timeout
        while True:
            n = self.count(kql)
            if n >= expected or time.monotonic() > deadline:
                return n
            time.sleep(0.1)


def v2_as_tables(frames: list[dict[str, Any]]) -> dict[str, Any]:
    """v2 frames → {Tables: [...]} as `POST /query` answers."""
    tables = []
    warnings = []
    for frame in frames:
        if frame.get("FrameType") != "DataTable":
            continue
        if frame["TableKind"] == "PrimaryResult":
            tables.append(
                {
                    "name": frame["TableName"],
                    "columns": [{"column_name": c["ColumnName"], "column_type": c["ColumnType"]} for c in frame["Columns"]],
                    "rows": frame["Rows"],
                }
            )
        elif frame["TableKind"] == "QueryCompletionInformation":
            names = [c["ColumnName"] for c in frame["Columns"]]
            for row in frame["Rows"]:
                record = dict(zip(names, row))
                if record.get("LevelName") == "Warning":
                    text = json.loads(record["Payload"]).get("Text", "")
                    kind, _, message = text.partition(": ")
                    warnings.append([kind, message, None])
    tables.append(
        {
            "name": "@Warnings",
            "columns": [
                {"column_name": "kind", "column_type": "string"},
                {"column_name": "message", "column_type": "string"},
                {"column_name": "location", "column_type": "dynamic"},
            ],
            "rows": warnings,
        }
    )
    return {"Tables": tables}


class _Metadata(
    grpc.UnaryUnaryClientInterceptor,
    grpc.UnaryStreamClientInterceptor,
):
    """Adds fixed metadata (a token) to every call of a channel."""

    def __init__(self, metadata: list[tuple[str, str]]):
        self.metadata = metadata

    def _details(self, details):
        metadata = list(details.metadata or []) + self.metadata
        return details._replace(metadata=metadata)

    def intercept_unary_unary(self, continuation, details, request):
        return continuation(self._details(details), request)

    def intercept_unary_stream(self, continuation, details, request):
        return continuation(self._details(details), request)


def ingest_channel(server: "TrawlServer") -> grpc.Channel:
    """A channel to the server's OTLP/gRPC port whose calls carry its ingest token."""
    token = [("authorization", f"Bearer {server.ingest_token}")]
    return grpc.intercept_channel(grpc.insecure_channel(server.otlp_grpc_endpoint), _Metadata(token))


def operator_gauges(server: "TrawlServer", prefix: str) -> dict[str, float]:
    """The unlabelled samples of /metrics on the operator port whose names start with `prefix`."""
    status, _, body = http_request(server.operator_url + "/metrics", timeout=10)
    assert status == 200, status
    return {
        name: float(value)
        for name, value in (line.split(" ", 1) for line in body.decode().splitlines() if line.startswith(prefix))
    }


class S3Server:
    """A real S3-compatible server (s3s-fs: buckets are directories under `root`) on a free
    loopback port; stop() and start() again keep the port and the data."""

    ACCESS_KEY = "trawl-e2e-access"
    SECRET_KEY = "trawl-e2e-secret-key-0123456789"

    def __init__(self, root: Path, buckets: tuple[str, ...] = ("trawl-e2e",)):
        binary = os.environ.get("TRAWL_S3_SERVER_BIN", "")
        if not binary or not os.access(binary, os.X_OK):
            raise AssertionError("TRAWL_S3_SERVER_BIN is not set: run the tests through tests/e2e/run.sh, which installs s3s-fs")
        self.binary = binary
        self.root = root
        self.port = free_ports(1)[0]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None
        self.log_path = root.parent / f"s3-{self.port}.log"
        for bucket in buckets:
            (root / bucket).mkdir(parents=True, exist_ok=True)

    def env(self) -> dict[str, str]:
        """The environment a trawl process needs to use this server."""
        return {
            "AWS_ACCESS_KEY_ID": self.ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": self.SECRET_KEY,
            "AWS_REGION": "us-east-1",
        }

    def start(self) -> "S3Server":
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [self.binary, "--host", "127.0.0.1", "--port", str(self.port),
                 "--access-key", self.ACCESS_KEY, "--secret-key", self.SECRET_KEY, str(self.root)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
        deadline = time.monotonic() + 20
        while True:
            if self.process.poll() is not None:
                raise AssertionError(f"s3s-fs exited with {self.process.returncode}: {self.log_path.read_text()[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return self
            except OSError:
                if time.monotonic() > deadline:
                    raise AssertionError("s3s-fs did not listen within 20 s") from None
                time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)

    def objects(self, bucket: str = "trawl-e2e", prefix: str = "") -> list[Path]:
        """Files stored under `prefix` of `bucket` (s3s-fs keeps its own metadata beside them)."""
        base = self.root / bucket / prefix
        return [p for p in base.rglob("*") if p.is_file() and not p.name.startswith(".")] if base.exists() else []


class PostgresServer:
    """A throwaway PostgreSQL server (scripts/postgres.sh: a fresh cluster in a directory of
    its own under /tmp, which the server's user can reach, on a free loopback port); stop()
    and start() again keep the port and the data; remove() deletes it all."""

    SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "postgres.sh"

    def __init__(self):
        self.root = Path(tempfile.mkdtemp(prefix="trawl-pg-"))
        self.url = ""

    def start(self) -> "PostgresServer":
        done = subprocess.run(["bash", str(self.SCRIPT), "start", str(self.root)], capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise AssertionError(f"postgres.sh start failed: {done.stderr[-2000:]}")
        self.url = done.stdout.strip()
        return self

    def stop(self) -> None:
        subprocess.run(["bash", str(self.SCRIPT), "stop", str(self.root)], capture_output=True, timeout=120)

    def scalar(self, sql: str) -> int:
        """The integer one SQL statement answers, through `psql`."""
        done = subprocess.run(["psql", self.url, "-Atc", sql], capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, done.stderr
        return int(done.stdout.strip())

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


def stop_all(servers: list[TrawlServer]) -> None:
    failures = []
    for server in servers:
        code = server.stop()
        if code != 0:
            failures.append(
                f"{server.name}: exit code {code} (None = did not exit within {SHUTDOWN_TIMEOUT:.0f} s)\n{server.log_tail()}"
            )
    assert not failures, "trawl did not shut down cleanly on SIGTERM:\n" + "\n".join(failures)


MS = 1_000_000  # nanoseconds


def iso(ns: int) -> str:
    """A DateTime as the query API prints it: ISO 8601, 7 fractional digits (100 ns ticks), Z."""
    seconds, rest = divmod(ns, 1_000_000_000)
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S") + f".{rest // 100:07d}Z"


def cli(server: "TrawlServer", trawl_bin, *args: str, token: str | None = None, stdin: str | None = None):
    """Runs `trawl <args>` against the server's gateway; (exit code, stdout, stderr)."""
    command = [str(trawl_bin), *args, "--url", server.gateway_url, "--data-dir", str(server.data_dir)]
    if token is not None:
        command += ["--token", token]
    env = {k: v for k, v in os.environ.items() if k not in ("TRAWL_TOKEN", "TRAWL_URL", "TRAWL_DATA_DIR")}
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, env=env, input=stdin or "")
    return done.returncode, done.stdout, done.stderr


def post_otlp_json_logs(server: "TrawlServer", records: list[dict], service: str | None = None):
    """Posts log records as one OTLP/JSON request (with `service.name` when given); (status, body)."""
    resource_logs: dict[str, Any] = {"scopeLogs": [{"logRecords": records}]}
    if service is not None:
        resource_logs["resource"] = {"attributes": [{"key": "service.name", "value": {"stringValue": service}}]}
    status, _, answer = http_request(
        server.otlp_http_url + "/v1/logs",
        json.dumps({"resourceLogs": [resource_logs]}).encode(),
        {"Content-Type": "application/json", **server.ingest_auth},
        "POST",
    )
    return status, answer
