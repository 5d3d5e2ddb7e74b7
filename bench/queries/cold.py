"""Cold start: each question's first run on a freshly started server with the operating
system's page cache dropped (nothing of the segments in memory: footers, token indexes and
data are read from disk), against its warm median on the same server. Each question gets
`--starts` such starts; the cold figure is the median of their first runs, the warm one the
median of all their warm runs.

Run it through run.sh (`bash bench/queries/run.sh cold [--only Q1,Q2] [--runs N]`) after
the data set is loaded (`run.sh` without arguments loads it). Dropping the page cache needs
root (`/proc/sys/vm/drop_caches`); without it the report says the cache was kept.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from dataset import TrawlServer, ensure_loaded, log
from queries import TOKEN, selected, trawl_rows
from questions import fill, parameters

DEFAULT_QUESTIONS = "Q1,Q2,Q3,Q4"
# The target: a cold run within this factor of a warm one.
TARGET = 3.0
# Seconds between the server's readiness and the cold run, and before each paused warm run
# (`--pause`; none by default: the cold run follows readiness at once, as warm runs follow
# each other). On a virtual machine an idle process (client and server alike) takes
# milliseconds to wake: measured on the 2-core test machine, Python's own `http.server`
# answered in 1.5 ms back to back, 13 ms after 0.2 s idle and 32-39 ms after 1 s. A run that
# follows a pause pays that whatever the caches hold, so with a pause the cold run is also
# compared with warm runs after the same pause.
PAUSE_SECS = 0.0
# Cold starts per question; the figures are medians over them. One cold run lasts a few
# milliseconds for the small questions, and this machine's scheduling alone moves a single
# run by as much (Q1's cold run measured 6.3-9.9 ms over five starts of the same build), so
# one start says little.
STARTS = 3


def drop_page_cache() -> bool:
    """Writes dirty pages and drops the clean ones; False when not allowed."""
    os.sync()
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return True
    except OSError as error:
        log(f"page cache kept ({error}): the cold runs read from memory")
        return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="/tmp/trawl-bench-data", help="data set directory")
    parser.add_argument("--only", default=DEFAULT_QUESTIONS, help=f"question ids (default {DEFAULT_QUESTIONS})")
    parser.add_argument("--runs", type=int, default=5, help="warm runs per question")
    parser.add_argument("--json-out", help="where to write the figures (default DIR/cold.json)")
    parser.add_argument("--keep-page-cache", action="store_true", help="only restart the server (a smoke test)")
    parser.add_argument("--starts", type=int, default=STARTS, help=f"cold starts per question; medians are reported (default {STARTS})")
    parser.add_argument("--pause", type=float, default=PAUSE_SECS, help=f"seconds idle before the cold run and each paused warm run (default {PAUSE_SECS})")
    args = parser.parse_args()
    data = Path(args.data)
    if not (data / "loaded.json").exists():
        raise SystemExit(f"no data set in {data}: run `bash bench/queries/run.sh` once first")
    manifest = ensure_loaded(data, {"seed": None, "logs": None, "spans": None})
    params = parameters(manifest)
    results = []
    print("| id | question | cold ms | warm ms | cold/warm | cold runs ms | warm after a pause ms | cold/paused warm |")
    print("|---|---|---:|---:|---:|---|---:|---:|")
    starts = max(args.starts, 1)
    for question in selected(args.only):
        kql = fill(question.kql, params)
        colds, warms, pauseds = [], [], []
        dropped = True
        for _ in range(starts):
            dropped = not args.keep_page_cache and drop_page_cache() and dropped
            with TrawlServer(data / "trawl", data / "server.log", merge_interval_secs=0) as server:
                TOKEN["token"] = server.secret("admin_token")

                def run_once(pause: float) -> float:
                    time.sleep(pause)
                    began = time.perf_counter()
                    trawl_rows(server.gateway_url, kql)
                    return (time.perf_counter() - began) * 1000

                colds.append(run_once(args.pause))
                warms.extend(run_once(0) for _ in range(args.runs))
                if args.pause > 0:
                    pauseds.extend(run_once(args.pause) for _ in range(args.runs))
        cold = statistics.median(colds)
        warm = statistics.median(warms)
        paused = statistics.median(pauseds) if pauseds else None
        ratio = cold / warm if warm > 0 else float("inf")
        result = {"id": question.id, "cold_ms": round(cold, 2), "warm_ms": round(warm, 2), "ratio": round(ratio, 2),
                  "starts": starts, "cold_runs_ms": [round(c, 2) for c in colds],
                  "pause_secs": args.pause, "page_cache_dropped": dropped}
        paused_cells = "– | –"
        if paused is not None:
            paused_ratio = cold / paused if paused > 0 else float("inf")
            result.update({"paused_warm_ms": round(paused, 2), "paused_ratio": round(paused_ratio, 2)})
            paused_cells = f"{paused:,.1f} | {paused_ratio:.2f}"
        results.append(result)
        runs_cell = ", ".join(f"{c:,.1f}" for c in colds)
        print(f"| {question.id} | {question.title} | {cold:,.1f} | {warm:,.1f} | {ratio:.2f} | {runs_cell} | {paused_cells} |",
              flush=True)
    met = all(r["ratio"] <= TARGET for r in results)
    print(f"target: cold within {TARGET:.0f}x of warm: {'met' if met else 'NOT met'}")
    if args.pause > 0:
        met_paused = all(r["paused_ratio"] <= TARGET for r in results)
        print(f"against warm runs after the same {args.pause:g} s pause: {'met' if met_paused else 'NOT met'}")
    out = Path(args.json_out) if args.json_out else data / "cold.json"
    out.write_text(json.dumps({"runs": args.runs, "starts": starts, "results": results}, indent=2) + "\n")
    log(f"figures written to {out}")


if __name__ == "__main__":
    main()
