"""A short soak (one minute by default; TRAWL_SOAK_SECONDS for longer): steady ingest from
three senders and a query loop; every acknowledged record is stored once, nothing fails, and
resident memory stays bounded. The slope of RSS is reported; a minute is mostly warm-up, so
flatness is judged by the long run, `bench/soak.sh` (ten minutes or more)."""

from __future__ import annotations

import json
import os

from soak import soak

SECONDS = float(os.environ.get("TRAWL_SOAK_SECONDS", "60"))
# Far above what this load needs (about 300 MiB in a debug build), far below a runaway.
MAX_RSS_MIB = 1024.0


def test_steady_ingest_and_queries_keep_every_record_within_bounded_memory(trawl_factory):
    server = trawl_factory("soak", merge_interval_secs=10)
    report = soak(server, SECONDS)
    summary = report.summary()
    print("soak:", json.dumps(summary))
    assert report.ingest_failures == 0, summary
    assert report.query_failures == 0, summary
    assert report.queries > 0 and report.records_acknowledged > 0, summary
    stored = server.count("default | where isnotempty(severity_text)", since="1h")
    assert stored == report.records_acknowledged, (stored, summary)
    assert summary["rss_peak_mib"] < MAX_RSS_MIB, summary
    assert report.heap_mib, "the allocator's gauge was never read from /metrics"
    assert summary["heap_allocated_peak_mib"] < summary["rss_peak_mib"], summary
