"""The table of bench/run-all: reads the figures it gathered in one directory and prints
one Markdown report (machine, date, commit; ingest; questions; storage; token index). With
--write README, replaces the text between README's run-all markers with it."""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

BEGIN = "<!-- run-all: begin -->"
END = "<!-- run-all: end -->"


def load(directory: Path, name: str) -> dict:
    path = directory / name
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise SystemExit(f"report: cannot read {path}: {error}")


def thousands(value: float) -> str:
    return f"{value:,.0f}"


def ms(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:,.1f}" if value < 1000 else f"{value:,.0f}"


def ratio(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def mib(value: float) -> str:
    return f"{value / (1 << 20):,.0f} MiB"


def machine() -> str:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = ""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory = f", {int(line.split()[1]) / (1 << 20):.1f} GiB memory"
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores ({model}){memory}, {platform.system()} {platform.release()}"


def commit() -> str:
    try:
        here = Path(__file__).resolve().parent
        result = subprocess.run(
            ["git", "-C", str(here), "describe", "--always", "--dirty"], capture_output=True, text=True, check=True
        )
        return result.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def ingest_rows(directory: Path) -> list[str]:
    lines = [
        "| ingest (OTLP/HTTP protobuf, 1,000 records per request) | records/s | p50 ms | p99 ms | peak RSS | server cores | bytes on disk per record |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, title in (
        ("ingest-logs", "logs, 64 requests in flight"),
        ("ingest-traces", "spans, 64 requests in flight"),
        ("ingest-low", "logs, 4 requests in flight"),
    ):
        run = load(directory, f"{name}.json")
        on_disk = run.get("bytes_on_disk")
        per_record = f"{on_disk / max(run['records_total'], 1):.1f}" if on_disk else "–"
        rss = run.get("peak_rss_bytes")
        cores = run.get("server_cores")
        lines.append(
            f"| {title} | {thousands(run['records_per_second'])} | {run['p50_ms']:.0f} | {run['p99_ms']:.0f} "
            f"| {mib(rss) if rss else '–'} | {f'{cores:.2f}' if cores is not None else '–'} | {per_record} |"
        )
    return lines


def stage_rows(directory: Path) -> list[str]:
    runs = {name: load(directory, f"stages-{name}.json") for name in ("logs", "traces")}
    lines = [
        f"| ingest CPU per record, one thread (`ingest-stages`, fastest of {runs['logs'].get('runs', '?')}) "
        "| map µs | batch µs | encode µs | all µs | one core, records/s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, title in (("logs", "logs"), ("traces", "spans")):
        run = runs[name]
        title = f"{title}, {run['records']:,} in {run.get('per_segment', '?')}-request segments ({run.get('codec', 'zstd')})"
        total = run["total_us"]
        lines.append(
            f"| {title} | {run['map_us']:.2f} | {run['batch_us']:.2f} | {run['encode_us']:.2f} | {total:.2f} "
            f"| {thousands(1e6 / total) if total > 0 else '–'} |"
        )
    return lines


def query_rows(queries: dict) -> list[str]:
    lines = [
        "| id | question | Trawl ms | DuckDB ms | chdb ms | Trawl/DuckDB | Trawl/chdb | Trawl/best | same answers |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for result in queries["results"]:
        trawl = result.get("trawl", {})
        duck, ch = result.get("duckdb", {}), result.get("chdb", {})
        same = all(side.get("same_answer") for side in (duck, ch) if side)
        lines.append(
            f"| {result['id']} | {result['question']} | {ms(trawl.get('median_ms'))} | {ms(duck.get('median_ms'))} "
            f"| {ms(ch.get('median_ms'))} | {ratio(duck.get('ratio'))} | {ratio(ch.get('ratio'))} "
            f"| **{ratio(result.get('ratio_best'))}** | {'yes' if same else 'NO'} |"
        )
    return lines


def cold_rows(cold: dict) -> list[str]:
    pause = max((r.get("pause_secs", 0) for r in cold["results"]), default=0)
    paused = pause > 0
    starts = cold.get("starts", 1)
    title = "cold start (restarted server, page cache dropped)"
    if starts > 1:
        title += f", medians of {starts} starts"
    head = f"| {title} | first run ms | warm median ms | cold/warm |"
    rule = "|---|---:|---:|---:|"
    if paused:
        head = (f"| {title}, first run after {pause:g} s idle | first run ms | warm median ms | cold/warm "
                f"| warm median after {pause:g} s idle ms | cold/paused warm |")
        rule += "---:|---:|"
    lines = [head, rule]
    for result in cold["results"]:
        kept = "" if result.get("page_cache_dropped") else " (page cache kept)"
        runs = result.get("cold_runs_ms") or []
        spread = f" ({', '.join(ms(r) for r in runs)})" if len(runs) > 1 else ""
        row = f"| {result['id']}{kept} | {ms(result['cold_ms'])}{spread} | {ms(result['warm_ms'])} | {result['ratio']:.2f} |"
        if paused:
            row += f" {ms(result['paused_warm_ms'])} | {result['paused_ratio']:.2f} |"
        lines.append(row)
    return lines

def storage_rows(gen: dict, live: dict, tokens: dict) -> list[str]:
    logs, traces = gen["logs"], gen["traces"]
    json_bytes = (logs.get("json_bytes") or 0) + (traces.get("json_bytes") or 0)
    json_records = logs["records"] + traces["spans"]
    raw_per_record = json_bytes / max(json_records, 1)
    stored_per_record = live["bytes"] / max(live["rows"], 1)
    return [
        "| storage | value |",
        "|---|---:|",
        f"| raw OTLP/JSON, logs | {logs.get('json_bytes', 0) / max(logs['records'], 1):,.0f} bytes per record |",
        f"| raw OTLP/JSON, spans | {traces.get('json_bytes', 0) / max(traces['spans'], 1):,.0f} bytes per span |",
        f"| stored (the query data set's live segments, logs and spans) | {stored_per_record:,.1f} bytes per record "
        f"({live['rows']:,} rows in {live['segments']} segments) |",
        f"| stored / raw OTLP/JSON | {stored_per_record / max(raw_per_record, 1e-9):.3f} (target at most 0.1) |",
        f"| token index / segment bytes | {100 * tokens['index_share']:.2f} % ({tokens['index_bytes'] / max(live['rows'], 1):.2f} bytes per row) |",
        f"| token index false positives (absent terms, per block) | {100 * tokens['false_positive_rate']:.3f} % |",
    ]


def report(directory: Path) -> str:
    queries = load(directory, "queries.json")
    gen, live, tokens = load(directory, "gen.json"), load(directory, "live.json"), load(directory, "tokens.json")
    loaded = queries["data"]["manifest"].get("loaded", {})
    header = [
        f"Measured {datetime.date.today().isoformat()} at {commit()} on {machine()}; release build.",
        f"Questions: {loaded.get('logs', 0):,} logs + {loaded.get('spans', 0):,} spans (seed {loaded.get('seed')}), "
        f"median of {queries['runs']} runs after a warm-up; DuckDB {queries.get('duckdb_version')}, "
        f"chdb {queries.get('chdb_version')}. Ratios: Trawl's time over the peer's (lower is better).",
    ]
    cold = load(directory, "cold.json")
    sections = [header, ingest_rows(directory), stage_rows(directory), query_rows(queries), cold_rows(cold), storage_rows(gen, live, tokens)]
    return "\n\n".join("\n".join(section) for section in sections) + "\n"


def write(readme: Path, text: str) -> None:
    content = readme.read_text()
    begin, end = content.find(BEGIN), content.find(END)
    if begin < 0 or end < begin:
        raise SystemExit(f"report: {readme} has no {BEGIN} … {END} section")
    readme.write_text(content[: begin + len(BEGIN)] + "\n" + text + content[end:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", help="where bench/run-all left its figures")
    parser.add_argument("--write", metavar="README", help="replace the run-all section of this file")
    args = parser.parse_args()
    text = report(Path(args.directory))
    sys.stdout.write(text)
    if args.write:
        write(Path(args.write), text)


if __name__ == "__main__":
    main()
