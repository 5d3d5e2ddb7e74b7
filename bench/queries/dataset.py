"""The benchmark data set: generated and loaded into a Trawl data directory once, then exported
to flat Parquet files for DuckDB; and a `trawl serve` process to query it.

Layout of `--data DIR`:
- `DIR/trawl/`: Trawl's data directory (`catalog.db`, `segments/…/*.parquet`);
- `DIR/loaded.json`: the generator's manifest, written once loading and merging finished;
- `DIR/duckdb/logs.parquet`, `DIR/duckdb/spans.parquet`: the export;
- `DIR/server.log`: what the started servers printed.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from contextlib import closing
from pathlib import Path

import duckdb

RELEASE = Path(os.environ.get("TRAWL_RELEASE_DIR", Path.home() / ".cache/trawl-release/release"))
TRAWL_BIN = os.environ.get("TRAWL_BIN", str(RELEASE / "trawl"))
TRAWL_GEN = os.environ.get("TRAWL_GEN", str(RELEASE / "trawl-gen"))
INGEST_BENCH = os.environ.get("INGEST_BENCH", str(RELEASE / "ingest-bench"))

# The data set loaded when --seed, --logs, --spans are not given.
DEFAULTS = {"seed": 42, "logs": 10_000_000, "spans": 5_000_000}

# The data is loaded with merges off, then a server merging every MERGE_INTERVAL_SECS runs
# until it has been idle (no CPU used, live segment count unchanged) for SETTLE_SECS. It merges
# the small segments the load leaves whatever their sizes once no new one came for
# MERGE_IDLE_AFTER_SECS (a server's default waits 5 minutes), so the wait covers that too.
MERGE_INTERVAL_SECS = 5
MERGE_IDLE_AFTER_SECS = 10
SETTLE_SECS = MERGE_IDLE_AFTER_SECS + 3 * MERGE_INTERVAL_SECS
SETTLE_CPU_SECS = 0.2
SETTLE_TIMEOUT_SECS = int(os.environ.get("TRAWL_BENCH_SETTLE_TIMEOUT_SECS", "3600"))
# A merge pass in progress finishes before the server stops.
STOP_TIMEOUT_SECS = 900

# Columns of the SPEC's row layout, per kind of row (those present in the segments are exported).
LOG_COLUMNS = [
    "timestamp", "observed_time", "severity_number", "severity_text", "body", "trace_id",
    "span_id", "sampled", "flags", "attributes", "dropped_attributes_count", "resource",
    "scope_name", "scope_version", "scope",
]
SPAN_COLUMNS = [
    "timestamp", "start_time", "end_time", "duration", "trace_id", "span_id", "parent_span_id",
    "span_name", "span_kind", "trace_state", "status_code", "status_description", "sampled",
    "flags", "attributes", "events", "links", "dropped_attributes_count", "dropped_events_count",
    "dropped_links_count", "resource", "scope_name", "scope_version", "scope",
]


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# Clients here talk to loopback servers: never through a proxy from the environment.
LOCAL = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def free_ports(n: int) -> list[int]:
    """n distinct free loopback ports (all held open until all are chosen)."""
    probes = [socket.socket() for _ in range(n)]
    try:
        for probe in probes:
            probe.bind(("127.0.0.1", 0))
        return [probe.getsockname()[1] for probe in probes]
    finally:
        for probe in probes:
            probe.close()


class TrawlServer:
    """`trawl serve` on free loopback ports; a context manager that stops it on exit."""

    def __init__(
        self, data_dir: Path, log_path: Path, merge_interval_secs: int, merge_idle_after_secs: int | None = None
    ):
        ports = dict(zip(("otlp-grpc", "otlp-http", "query", "operator", "gateway", "meta"), free_ports(6)))
        command = [TRAWL_BIN, "serve", "--data-dir", str(data_dir)]
        for name, port in ports.items():
            command += [f"--{name}-bind", f"127.0.0.1:{port}"]
        command += ["--merge-interval-secs", str(merge_interval_secs)]
        if merge_idle_after_secs is not None:
            command += ["--merge-idle-after-secs", str(merge_idle_after_secs)]
        env = {"RUST_LOG": "warn", **os.environ}
        with open(log_path, "ab") as output:
            self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=output, stderr=output, env=env)
        self.otlp_url = f"http://127.0.0.1:{ports['otlp-http']}"
        self.query_url = f"http://127.0.0.1:{ports['query']}"
        # Queries go through the gateway (the query service answers only signed requests).
        self.gateway_url = f"http://127.0.0.1:{ports['gateway']}"
        self.data_dir = data_dir
        self.log_path = log_path

    def secret(self, name: str) -> str:
        """A day-one secret of the server (`admin_token`, `ingest_token`)."""
        return json.loads((self.data_dir / "bootstrap.json").read_text())[name]

    def __enter__(self) -> TrawlServer:
        self.wait_ready()
        return self

    def __exit__(self, *_) -> None:
        self.stop()

    def wait_ready(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"trawl serve exited ({self.process.returncode}); see {self.log_path}")
            try:
                with LOCAL.open(f"{self.gateway_url}/health/ready", timeout=2):
                    return
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"trawl serve was not ready after {timeout} s; see {self.log_path}")

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        """SIGTERM (buffers are flushed, a merge pass in progress finishes), SIGKILL on timeout."""
        if self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(STOP_TIMEOUT_SECS)
        except subprocess.TimeoutExpired:
            log(f"trawl serve did not stop within {STOP_TIMEOUT_SECS} s; killing it")
            self.process.kill()
            self.process.wait()


def generator_manifest(seed: int, logs: int, spans: int) -> dict:
    """The generator's manifest (rare token, needle trace, window, exact counts)."""
    command = [TRAWL_GEN, "--seed", str(seed), "--logs", str(logs), "--spans", str(spans)]
    return json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)


def live_segments(trawl_dir: Path) -> list[tuple[str, int]]:
    """(path, rows) of the live segments in Trawl's catalog, in time order."""
    uri = f"file:{trawl_dir / 'catalog.db'}?mode=ro"
    with closing(sqlite3.connect(uri, uri=True, timeout=30)) as catalog:
        rows = catalog.execute(
            "SELECT path, rows FROM segments WHERE state = 'live' ORDER BY min_time, id"
        ).fetchall()
    return [(str(trawl_dir / "segments" / path), count) for path, count in rows]


def load(data: Path, seed: int, logs: int, spans: int) -> dict:
    """Generates and loads the data set into DIR/trawl, merges it, writes the marker."""
    manifest = generator_manifest(seed, logs, spans)
    trawl_dir = data / "trawl"
    with TrawlServer(trawl_dir, data / "server.log", merge_interval_secs=0) as server:
        for signal_name, count in (("logs", logs), ("traces", spans)):
            log(f"loading {count:,} {signal_name} into {trawl_dir}")
            subprocess.run(
                [INGEST_BENCH, "--url", server.otlp_url, "--token", server.secret("ingest_token"),
                 "-c", "64", "--count", str(count),
                 "--warmup", "0", "--seed", str(seed), "--signal", signal_name],
                check=True, stdout=subprocess.DEVNULL,
                # ingest-bench reads TRAWL_BIN as its own --trawl-bin (it would start a server).
                env={k: v for k, v in os.environ.items() if k != "TRAWL_BIN"},
            )
    with TrawlServer(
        trawl_dir, data / "server.log", MERGE_INTERVAL_SECS, merge_idle_after_secs=MERGE_IDLE_AFTER_SECS
    ) as server:
        wait_for_merges(server, trawl_dir)
    expected = manifest["logs"]["records"] + manifest["traces"]["spans"]
    stored = sum(rows for _, rows in live_segments(trawl_dir))
    if stored != expected:
        raise RuntimeError(f"{stored:,} rows stored in live segments, {expected:,} generated")
    manifest["loaded"] = {"seed": seed, "logs": logs, "spans": spans}
    (data / "loaded.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def wait_for_merges(server: TrawlServer, trawl_dir: Path) -> None:
    """Waits until the server has been idle for SETTLE_SECS: no merge is running or due."""
    count = len(live_segments(trawl_dir))
    log(f"merging: {count} live segments")
    deadline = time.monotonic() + SETTLE_TIMEOUT_SECS
    quiet_since, cpu_at_quiet = time.monotonic(), server.cpu_seconds()
    while time.monotonic() < deadline:
        time.sleep(1)
        now_count, cpu = len(live_segments(trawl_dir)), server.cpu_seconds()
        if now_count != count or cpu - cpu_at_quiet > SETTLE_CPU_SECS:
            if now_count != count:
                log(f"  {now_count} live segments")
            count, quiet_since, cpu_at_quiet = now_count, time.monotonic(), cpu
        elif time.monotonic() - quiet_since >= SETTLE_SECS:
            log(f"merges settled: {count} live segments")
            return
    log(f"merges still running after {SETTLE_TIMEOUT_SECS} s; going on")


def ensure_loaded(data: Path, requested: dict) -> dict:
    """The manifest of the data set in DIR, loading it first if needed. `requested` holds
    `seed`, `logs` and `spans` as given (None: as loaded, or the default when loading)."""
    marker = data / "loaded.json"
    if marker.exists():
        manifest = json.loads(marker.read_text())
        check_same_data_set(manifest["loaded"], requested, data)
        return manifest
    if (data / "trawl").exists():
        raise SystemExit(f"{data / 'trawl'} exists without {marker} (an interrupted load?): remove it")
    data.mkdir(parents=True, exist_ok=True)
    values = {name: DEFAULTS[name] if value is None else value for name, value in requested.items()}
    return load(data, **values)


def check_same_data_set(loaded: dict, requested: dict, data: Path) -> None:
    if any(value is not None and value != loaded[name] for name, value in requested.items()):
        raise SystemExit(
            f"{data} holds seed {loaded['seed']}, {loaded['logs']:,} logs, {loaded['spans']:,} spans: "
            "pass the same --seed/--logs/--spans (or none), or another --data"
        )


def ensure_exported(data: Path, manifest: dict) -> tuple[Path, Path]:
    """DIR/duckdb/{logs,spans}.parquet, exported from the live segments if not there yet."""
    out = data / "duckdb"
    logs_file, spans_file = out / "logs.parquet", out / "spans.parquet"
    if not (logs_file.exists() and spans_file.exists()):
        out.mkdir(exist_ok=True)
        segments = [path for path, _ in live_segments(data / "trawl")]
        export(segments, "body IS NOT NULL", LOG_COLUMNS, logs_file, manifest["logs"]["records"])
        export(segments, "span_name IS NOT NULL", SPAN_COLUMNS, spans_file, manifest["traces"]["spans"])
    return logs_file, spans_file


def export(segments: list[str], where: str, wanted: list[str], target: Path, expected_rows: int) -> None:
    """COPY the rows of one kind from Trawl's segments to one zstd Parquet file, sorted by time;
    fails unless it holds exactly `expected_rows` rows."""
    log(f"exporting {target} from {len(segments)} segments")
    con = duckdb.connect(config={"temp_directory": str(target.parent / "spill")})
    source = f"read_parquet([{', '.join(map(sql_string, segments))}], union_by_name = true)"
    present = {row[0] for row in con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()}
    columns = [
        "json_extract_string(body, '$') AS body" if name == "body" else f'"{name}"'
        for name in wanted
        if name in present
    ]
    partial = target.with_suffix(".partial")
    con.execute(
        f"COPY (SELECT {', '.join(columns)} FROM {source} WHERE {where} ORDER BY timestamp) "
        f"TO {sql_string(partial)} (FORMAT parquet, COMPRESSION zstd)"
    )
    rows = con.execute(f"SELECT count(*) FROM read_parquet({sql_string(partial)})").fetchone()[0]
    if rows != expected_rows:
        raise RuntimeError(f"{target.name}: {rows:,} rows exported, {expected_rows:,} generated")
    partial.rename(target)


def sql_string(text: str | Path) -> str:
    return "'" + str(text).replace("'", "''") + "'"
