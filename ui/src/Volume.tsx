// The log-volume histogram above log results: rows per time bin, stacked by severity, for
// the same query without its final row limit. Drag across it to zoom the time range.

import { useEffect, useRef, useState } from "react";
import { runQuery } from "./api";
import { parseTime } from "./chart";
import { loadCharts } from "./Chart";

const SPANS: Record<string, [string, number]> = {
  "15m": ["10s", 10_000],
  "1h": ["1m", 60_000],
  "4h": ["5m", 300_000],
  "12h": ["10m", 600_000],
  "24h": ["30m", 1_800_000],
  "7d": ["3h", 10_800_000],
};

const NICE_SPANS: [string, number][] = [
  ["1s", 1_000],
  ["10s", 10_000],
  ["1m", 60_000],
  ["5m", 300_000],
  ["10m", 600_000],
  ["30m", 1_800_000],
  ["1h", 3_600_000],
  ["3h", 10_800_000],
  ["12h", 43_200_000],
  ["1d", 86_400_000],
  ["7d", 604_800_000],
];

/** A bin width giving at most about 120 bins over `ms`. */
export function spanFor(ms: number): string {
  return (NICE_SPANS.find(([, width]) => ms / width <= 120) ?? NICE_SPANS[NICE_SPANS.length - 1])[0];
}

/** The query without a final `take`/`limit` (the histogram counts every matching row). */
export function withoutRowLimit(query: string): string {
  return query.replace(/\|\s*(take|limit)\s+\d+\s*;?\s*$/i, "").trim();
}

const SEVERITY_COLORS: Record<string, string> = {
  ERROR: "#cf222e",
  FATAL: "#82071e",
  WARN: "#d4a72c",
  WARNING: "#d4a72c",
  INFO: "#2da44e",
  DEBUG: "#8c959f",
  TRACE: "#afb8c1",
};

interface Props {
  query: string;
  db: string;
  range: string;
  since?: string;
  until?: string;
  /** The first and last timestamp of the rows shown (milliseconds), for an unbounded range. */
  extent?: [number, number];
  /** Sets an absolute time range (ISO instants) when the user drags across bins. */
  onZoom: (from: Date, to: Date) => void;
}

export function Volume({ query, db, range, since, until, extent, onZoom }: Props) {
  const host = useRef<HTMLDivElement>(null);
  const [problem, setProblem] = useState<string>();
  useEffect(() => {
    const controller = new AbortController();
    let chart: any;
    const width =
      SPANS[range]?.[0] ??
      (since && until ? spanFor(Date.parse(until) - Date.parse(since)) : extent
          ? spanFor(Math.max(extent[1] - extent[0], 1000))
          : "1h");
    const csl = `${withoutRowLimit(query)}\n| summarize count() by bin(timestamp, ${width}), severity = tostring(severity_text)`;
    runQuery({ db, csl, since: range === "all" ? undefined : since ?? range, until, signal: controller.signal })
      .then(async (answer) => {
        const table = answer.tables[0];
        if (!table || !host.current) return;
        const bins = new Map<number, Map<string, number>>();
        const severities = new Set<string>();
        const column = (name: string) => table.columns.findIndex((c) => c.name === name);
        const [timeAt, severityAt, countAt] = [column("timestamp"), column("severity"), column("count_")];
        for (const row of table.rows) {
          const at = parseTime(row[timeAt]);
          const count = Number(row[countAt]) || 0;
          const level = String(row[severityAt] ?? "") || "(none)";
          severities.add(level);
          const bin = bins.get(at) ?? new Map<string, number>();
          bin.set(level, (bin.get(level) ?? 0) + count);
          bins.set(at, bin);
        }
        const times = [...bins.keys()].sort((a, b) => a - b);
        const echarts = await loadCharts();
        if (controller.signal.aborted || !host.current) return;
        chart = echarts.init(host.current);
        chart.setOption({
          animation: false,
          grid: { left: 48, right: 12, top: 8, bottom: 24 },
          tooltip: { trigger: "axis" },
          toolbox: { show: false },
          brush: { xAxisIndex: 0, brushType: "lineX", brushMode: "single", throttleType: "debounce" },
          xAxis: { type: "time" },
          yAxis: { type: "value", minInterval: 1, splitNumber: 2 },
          series: [...severities].map((level) => ({
            name: level,
            type: "bar",
            stack: "volume",
            barMaxWidth: 24,
            itemStyle: { color: SEVERITY_COLORS[level.toUpperCase()] },
            data: times.map((t) => [t, bins.get(t)?.get(level) ?? 0]),
          })),
        });
        // Dragging selects a time span without pressing a tool first.
        chart.dispatchAction({ type: "takeGlobalCursor", key: "brush", brushOption: { brushType: "lineX" } });
        chart.on("brushEnd", (event: any) => {
          const area = event.areas?.[0];
          if (!area?.coordRange) return;
          const [from, to] = area.coordRange as [number, number];
          if (to > from) onZoom(new Date(from), new Date(to));
        });
        host.current.dataset.bins = String(times.length);
      })
      .catch((e) => {
        if (!controller.signal.aborted) setProblem(e.message ?? String(e));
      });
    return () => {
      controller.abort();
      chart?.dispose();
    };
  }, [query, db, range, since, until]);
  if (problem) return <div className="muted" data-testid="volume-problem">No volume histogram: {problem}</div>;
  return <div className="volume" ref={host} data-testid="volume" title="Drag to zoom the time range" />;
}
