// From a result table and its `render` properties to an ECharts option, as Azure Data
// Explorer draws them: which column is x, which are y, which split the series, and how
// `kind` stacks them. `make-series` columns (arrays) unfold into one point per element.

import type { Column, ResultTable } from "./api";

export type ChartKind =
  | "timechart"
  | "linechart"
  | "areachart"
  | "columnchart"
  | "barchart"
  | "piechart"
  | "scatterchart"
  | "card";

export const CHART_KINDS: ChartKind[] = [
  "timechart",
  "linechart",
  "areachart",
  "columnchart",
  "barchart",
  "piechart",
  "scatterchart",
  "card",
];

export interface Visualization {
  Visualization?: string;
  Title?: string;
  XColumn?: string;
  YColumns?: string[] | string;
  Series?: string[] | string;
  Kind?: string;
  Legend?: string;
  XTitle?: string;
  YTitle?: string;
  Ymin?: number;
  Ymax?: number;
  YAxis?: string;
  Accumulate?: boolean;
}

const NUMERIC = new Set(["long", "int", "real", "decimal", "timespan"]);

function list(value: string[] | string | undefined): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  const items = Array.isArray(value) ? value : String(value).split(",");
  const names = items.map((s) => s.trim()).filter(Boolean);
  return names.length ? names : undefined;
}

/** A timespan cell (`[-][d.]hh:mm:ss[.fffffff]`) in milliseconds; numbers as they are. */
function numeric(value: unknown): number | null {
  if (value === null || value === undefined || value === "") return null;
  if (typeof value === "number") return value;
  const text = String(value);
  const span = /^(-)?(?:(\d+)\.)?(\d+):(\d+):(\d+)(?:\.(\d+))?$/.exec(text);
  if (span) {
    const [, sign, days, h, m, s, fraction] = span;
    const ms =
      ((Number(days ?? 0) * 24 + Number(h)) * 60 + Number(m)) * 60_000 +
      Number(s) * 1000 +
      (fraction ? Number(`0.${fraction}`) * 1000 : 0);
    return sign ? -ms : ms;
  }
  const number = Number(text);
  return Number.isFinite(number) ? number : null;
}

/** Milliseconds since the epoch of an ADX datetime (`…T…[.fffffff]Z`: at most 3 fraction
 * digits are kept, which `Date.parse` needs). */
export function parseTime(value: unknown): number {
  const text = String(value).replace(/(\.\d{3})\d+/, "$1");
  return Date.parse(text);
}

function isSeriesColumn(table: ResultTable, index: number): boolean {
  return table.columns[index].type === "dynamic" && table.rows.some((r) => Array.isArray(r[index]));
}

interface Layout {
  x: number;
  ys: number[];
  series: number[];
}

/** Which columns are x, y and series, from the properties or as ADX infers them. */
export function layout(table: ResultTable, kind: ChartKind, vis: Visualization): Layout | string {
  const index = (name: string) => table.columns.findIndex((c) => c.name === name);
  const columns = table.columns;
  if (columns.length === 0) return "the result has no columns";
  if (table.rows.length === 0) return "the result is empty";
  const timeLike = kind === "timechart";
  let x = vis.XColumn ? index(vis.XColumn) : -1;
  if (vis.XColumn && x < 0) return `xcolumn ${vis.XColumn} is not a column of the result`;
  if (x < 0) {
    // `make-series` output: its time array is x, whatever the kind.
    x = columns.findIndex((c, i) => c.type === "dynamic" && isSeriesColumn(table, i) && isTimeArray(table, i));
    if (x < 0 && timeLike) x = columns.findIndex((c) => c.type === "datetime");
    if (x < 0) x = 0;
  }
  const named = list(vis.YColumns);
  let ys: number[];
  if (named) {
    ys = named.map(index);
    const missing = named.filter((_, i) => ys[i] < 0);
    if (missing.length) return `ycolumns ${missing.join(", ")} not in the result`;
  } else {
    ys = columns
      .map((c, i) => i)
      .filter((i) => i !== x && (NUMERIC.has(columns[i].type) || (isSeriesColumn(table, i) && !isTimeArray(table, i))));
  }
  const seriesNames = list(vis.Series);
  let series: number[];
  if (seriesNames) {
    series = seriesNames.map(index).filter((i) => i >= 0);
  } else {
    series = columns
      .map((_, i) => i)
      .filter((i) => i !== x && !ys.includes(i) && (columns[i].type === "string" || columns[i].type === "bool"));
  }
  if (ys.length === 0 && kind !== "card") return "no numeric column to plot";
  return { x, ys, series };
}

function isTimeArray(table: ResultTable, index: number): boolean {
  const first = table.rows.find((r) => Array.isArray(r[index]))?.[index] as unknown[] | undefined;
  return !!first && typeof first[0] === "string" && !Number.isNaN(parseTime(first[0]));
}

interface Series {
  name: string;
  points: [unknown, number | null][];
}

/** The series to draw: one per y column and distinct series-column values. */
export function seriesOf(table: ResultTable, plan: Layout): Series[] {
  const out = new Map<string, Series>();
  const multipleYs = plan.ys.length > 1 || plan.series.length === 0;
  for (const row of table.rows) {
    const key = plan.series.map((i) => String(row[i] ?? "")).join(", ");
    for (const y of plan.ys) {
      const name = [key, multipleYs ? table.columns[y].name : ""].filter(Boolean).join(" · ") || table.columns[y].name;
      let entry = out.get(name);
      if (!entry) {
        entry = { name, points: [] };
        out.set(name, entry);
      }
      const xs = row[plan.x];
      const values = row[y];
      if (Array.isArray(xs) && Array.isArray(values)) {
        xs.forEach((xv, i) => entry!.points.push([xv, numeric(values[i])]));
      } else {
        entry.points.push([xs, numeric(values)]);
      }
    }
  }
  return [...out.values()];
}

function xType(table: ResultTable, plan: Layout, kind: ChartKind): "time" | "value" | "category" {
  const column: Column = table.columns[plan.x];
  if (kind === "columnchart" || kind === "barchart") return "category";
  if (column.type === "datetime" || isTimeArray(table, plan.x)) return "time";
  if (NUMERIC.has(column.type) || (column.type === "dynamic" && isSeriesColumn(table, plan.x))) return "value";
  return "category";
}

/** The ECharts option for `table` drawn as `kind`, or why it cannot be drawn. */
export function chartOption(table: ResultTable, kind: ChartKind, vis: Visualization): Record<string, unknown> | string {
  const plan = layout(table, kind, vis);
  if (typeof plan === "string") return plan;
  const title = vis.Title ? { text: vis.Title, left: "center", textStyle: { fontSize: 14 } } : undefined;
  const legend = vis.Legend === "hidden" ? undefined : { type: "scroll", bottom: 0 };
  const series = seriesOf(table, plan);
  if (kind === "piechart") {
    const label = plan.series[0] ?? plan.x;
    const value = plan.ys[0];
    const data = table.rows.map((row) => ({ name: String(row[label] ?? ""), value: numeric(row[value]) ?? 0 }));
    return {
      title,
      tooltip: { trigger: "item" },
      legend,
      series: [{ type: "pie", radius: ["35%", "70%"], data }],
    };
  }
  const stackKind = (vis.Kind ?? "").toLowerCase();
  const stacked = stackKind === "stacked" || stackKind === "stacked100" || (kind === "areachart" && stackKind !== "unstacked");
  const percent = stackKind === "stacked100";
  const axisType = xType(table, plan, kind);
  const categories =
    axisType === "category" ? [...new Set(series.flatMap((s) => s.points.map(([x]) => String(x))))] : undefined;
  let drawn = series.map((s) => {
    const data = categories
      ? categories.map((c) => s.points.find(([x]) => String(x) === c)?.[1] ?? null)
      : s.points
          .map(([x, y]) => [axisType === "time" ? parseTime(x) : numeric(x), y] as [number | null, number | null])
          .sort((a, b) => (a[0] ?? 0) - (b[0] ?? 0));
    const type = kind === "columnchart" || kind === "barchart" ? "bar" : kind === "scatterchart" ? "scatter" : "line";
    return {
      name: s.name,
      type,
      data,
      stack: stacked ? "total" : undefined,
      areaStyle: kind === "areachart" ? {} : undefined,
      showSymbol: type === "scatter" || (data as unknown[]).length < 50,
      symbolSize: type === "scatter" ? 6 : 4,
    };
  });
  if (percent && categories) {
    const totals = categories.map((_, i) => drawn.reduce((sum, s) => sum + (Number((s.data as unknown[])[i]) || 0), 0));
    drawn = drawn.map((s) => ({
      ...s,
      data: (s.data as (number | null)[]).map((v, i) => (v === null || !totals[i] ? v : (v * 100) / totals[i])),
    }));
  }
  const horizontal = kind === "barchart";
  const xAxis = {
    type: axisType,
    data: categories,
    name: vis.XTitle,
    nameLocation: "middle",
    nameGap: 28,
  };
  const yAxis = {
    type: vis.YAxis === "log" ? "log" : "value",
    name: vis.YTitle,
    min: vis.Ymin,
    max: percent ? 100 : vis.Ymax,
  };
  return {
    title,
    legend,
    animationDuration: 300,
    tooltip: { trigger: "axis" },
    grid: { left: 56, right: 24, top: title ? 40 : 16, bottom: legend ? 56 : 32, containLabel: true },
    xAxis: horizontal ? yAxis : xAxis,
    yAxis: horizontal ? xAxis : yAxis,
    dataZoom: axisType === "time" ? [{ type: "inside" }] : undefined,
    series: drawn,
  };
}

/** The value a `card` shows: the first numeric cell, else the first cell. */
export function cardValue(table: ResultTable, vis: Visualization): { label: string; value: string } | string {
  const row = table.rows[0];
  if (!row) return "the result is empty";
  const named = list(vis.YColumns)?.[0];
  let index = named ? table.columns.findIndex((c) => c.name === named) : table.columns.findIndex((c) => NUMERIC.has(c.type));
  if (index < 0) index = 0;
  const value = row[index];
  return { label: vis.Title ?? table.columns[index].name, value: typeof value === "number" ? value.toLocaleString() : String(value ?? "") };
}

/** The chart to offer when the query has no `render`: over time when there is a datetime. */
export function guessKind(table: ResultTable): ChartKind {
  if (table.columns.some((c) => c.type === "datetime")) return "timechart";
  if (table.columns.some((c, i) => isSeriesColumn(table, i) && isTimeArray(table, i))) return "timechart";
  return "columnchart";
}

export function isChartKind(value: string | undefined): value is ChartKind {
  return !!value && (CHART_KINDS as string[]).includes(value);
}
