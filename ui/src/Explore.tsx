// The explore page: schema on the left, the KQL editor with its time range, Run and Cancel,
// progress while a query runs, then the result tables as tabs with the query's statistics.

import { lazy, Suspense, useCallback, useEffect, useRef, useState } from "react";
import { ApiError, exportUrl, mgmt, QueryAnswer, Progress, runQuery } from "./api";
import { Editor, EditorHandle } from "./Editor";
import { ResultGrid, TimeZone } from "./ResultGrid";
import { Identity } from "./session";
import { HistoryEntry, loadHistory, remember, TabState, titleOf } from "./tabs";
import { Schema, SchemaTree } from "./Schema";
import { Chart } from "./Chart";
import { Volume } from "./Volume";
import { TraceView } from "./TraceView";
import { Context } from "./Context";
// The meta service's client (gRPC-web) loads only when one of these opens.
const Onboarding = lazy(() => import("./Onboarding").then((m) => ({ default: m.Onboarding })));
const SaveDialog = lazy(() => import("./Library").then((m) => ({ default: m.SaveDialog })));
import { CHART_KINDS, ChartKind, guessKind, isChartKind, parseTime, Visualization } from "./chart";

const RANGES: [string, string][] = [
  ["15m", "Last 15 minutes"],
  ["1h", "Last hour"],
  ["4h", "Last 4 hours"],
  ["12h", "Last 12 hours"],
  ["24h", "Last 24 hours"],
  ["7d", "Last 7 days"],
  ["all", "All time"],
  ["absolute", "Between…"],
];

function resourceKey(row: Record<string, unknown>, key: string): string | undefined {
  const resource = row.resource as Record<string, unknown> | undefined;
  const value = resource && typeof resource === "object" ? resource[key] : undefined;
  return value === undefined || value === null ? undefined : String(value);
}
const serviceOf = (row: Record<string, unknown>) => resourceKey(row, "service.name");
const hostOf = (row: Record<string, unknown>) => resourceKey(row, "host.name");

/** The table a query reads: its first word when the schema has such a table, else `default`. */
function sourceTable(query: string, schema: Schema | undefined, database: string): string {
  const first = /^\s*([A-Za-z_][A-Za-z0-9_]*)/.exec(query)?.[1];
  const tables = Object.keys(schema?.Databases?.[database]?.Tables ?? {});
  return first && tables.includes(first) ? first : "default";
}

/** The first and last `timestamp` of a result's rows, in milliseconds. */
function extentOf(table: { columns: { name: string }[]; rows: unknown[][] }): [number, number] | undefined {
  const index = table.columns.findIndex((c) => c.name === "timestamp");
  if (index < 0) return undefined;
  let low = Infinity;
  let high = -Infinity;
  for (const row of table.rows) {
    const t = parseTime(row[index]);
    if (Number.isNaN(t)) continue;
    low = Math.min(low, t);
    high = Math.max(high, t);
  }
  return low <= high ? [low, high] : undefined;
}

function bytes(n?: number): string {
  if (n === undefined) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(unit === 0 ? 0 : 1)} ${units[unit]}`;
}

interface Props {
  identity: Identity;
  tab: TabState;
  /** Whether this tab is the one shown. */
  active: boolean;
  onChange: (change: Partial<TabState>) => void;
}

export function Explore({ identity, tab: saved, active, onChange }: Props) {
  const [database, setDatabase] = useState(saved.db);
  const [databases, setDatabases] = useState<string[]>([]);
  const [schema, setSchema] = useState<Schema>();
  const [range, setRange] = useState(saved.range);
  const [from, setFrom] = useState(saved.from ?? "");
  const [to, setTo] = useState(saved.to ?? "");
  const [history, setHistory] = useState<HistoryEntry[]>(() => loadHistory(identity.name));
  const [zone, setZone] = useState<TimeZone>("UTC");
  const [running, setRunning] = useState(false);
  const [started, setStarted] = useState(0);
  const [elapsed, setElapsed] = useState(0);
  const [progress, setProgress] = useState<Progress>();
  const [answer, setAnswer] = useState<QueryAnswer>();
  const [error, setError] = useState<string>();
  const [tab, setTab] = useState(0);
  const [answers, setAnswers] = useState(0);
  const [view, setView] = useState<"table" | "chart">("table");
  const [kind, setKind] = useState<ChartKind>("timechart");
  const [lastRun, setLastRun] = useState<{ csl: string; db: string; range: string; since?: string; until?: string }>();
  const [zoomed, setZoomed] = useState(0);
  const [trace, setTrace] = useState<string>();
  const [context, setContext] = useState<Record<string, unknown>>();
  const [saving, setSaving] = useState<{ query: string; db: string; range: string }>();
  const [notice, setNotice] = useState<string>();
  const [schemaVersion, setSchemaVersion] = useState(0);
  const editor = useRef<EditorHandle>(null);
  const abort = useRef<AbortController | undefined>(undefined);
  const text = useRef(saved.query);

  useEffect(() => {
    mgmt(database, ".show databases")
      .then((rows) => setDatabases(rows.map((r) => String(r.DatabaseName))))
      .catch(() => setDatabases([database]));
  }, []);

  useEffect(() => {
    setSchema(undefined);
    mgmt(database, ".show database schema as json")
      .then((rows) => setSchema(JSON.parse(String(rows[0]?.DatabaseSchema ?? "{}"))))
      .catch((e) => setError(`Cannot read the schema: ${e.message}`));
  }, [database, schemaVersion]);

  // Other tabs add to the history too.
  useEffect(() => {
    if (active) setHistory(loadHistory(identity.name));
  }, [active, identity.name]);

  useEffect(() => {
    onChange({ db: database, range, from: from || undefined, to: to || undefined });
  }, [database, range, from, to]);

  useEffect(() => {
    if (!running) return;
    const timer = window.setInterval(() => setElapsed(Date.now() - started), 100);
    return () => window.clearInterval(timer);
  }, [running, started]);

  const share = useCallback(() => {
    const params = new URLSearchParams({ q: editor.current?.value() ?? text.current, db: database, range });
    if (range === "absolute") {
      params.set("from", from);
      params.set("to", to);
    }
    return `${window.location.origin}/?${params}`;
  }, [database, range, from, to]);

  const run = useCallback(async () => {
    if (abort.current) return;
    const csl = editor.current?.value() ?? text.current;
    const controller = new AbortController();
    abort.current = controller;
    editor.current?.clearErrors();
    setError(undefined);
    setProgress(undefined);
    setRunning(true);
    const now = Date.now();
    setStarted(now);
    setElapsed(0);
    window.history.replaceState(null, "", share());
    onChange({ query: csl, title: titleOf(csl) });
    setHistory(remember(identity.name, { query: csl, db: database, range, at: now }));
    const window_ =
      range === "absolute"
        ? { since: from ? new Date(from).toISOString() : undefined, until: to ? new Date(to).toISOString() : undefined }
        : range === "all"
          ? {}
          : { since: range };
    setLastRun({ csl, db: database, range, ...window_ });
    try {
      const result = await runQuery({
        db: database,
        csl,
        ...window_,
        signal: controller.signal,
        onProgress: setProgress,
        keepRun: true,
      });
      setAnswer(result);
      setAnswers((n) => n + 1);
      setTab(0);
      // A query that renders opens as its chart; the others as a table, with a chart a
      // click away.
      const rendered = (result.visualization as Visualization | undefined)?.Visualization;
      if (isChartKind(rendered)) {
        setKind(rendered);
        setView("chart");
      } else {
        if (result.tables[0]) setKind(guessKind(result.tables[0]));
        setView("table");
      }
    } catch (e: any) {
      if (controller.signal.aborted) {
        setError("Cancelled.");
      } else {
        setError(e.message ?? String(e));
        if (e instanceof ApiError && e.message) editor.current?.showError(e.message, e.location);
      }
    } finally {
      abort.current = undefined;
      setRunning(false);
      setElapsed(Date.now() - now);
    }
  }, [database, range, from, to, share]);

  const cancel = () => abort.current?.abort();

  // A drag across the volume histogram narrows the time range and runs again.
  useEffect(() => {
    if (zoomed > 0) run();
  }, [zoomed]);
  const zoom = (start: Date, end: Date) => {
    const local = (d: Date) => new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 19);
    setRange("absolute");
    setFrom(local(start));
    setTo(local(end));
    setZoomed((n) => n + 1);
  };
  const isLogResult = (table?: { columns: { name: string; type: string }[] }) =>
    !!table &&
    table.columns.some((c) => c.name === "timestamp" && c.type === "datetime") &&
    table.columns.some((c) => c.name === "severity_text");

  const tables = answer?.tables ?? [];
  const current = tables[Math.min(tab, Math.max(tables.length - 1, 0))];

  return (
    <div className="main" hidden={!active}>
        <SchemaTree schema={schema} database={database} onInsert={(name) => editor.current?.insert(name)} />
        <section className="work">
          <div className="toolbar">
            <select value={database} onChange={(e) => setDatabase(e.target.value)} data-testid="database" aria-label="Database">
              {(databases.length ? databases : [database]).map((d) => (
                <option key={d}>{d}</option>
              ))}
            </select>
            <button className="primary" onClick={run} disabled={running} data-testid="run" title="Ctrl+Enter">
              Run
            </button>
            <button onClick={cancel} disabled={!running} data-testid="cancel">
              Cancel
            </button>
            <select value={range} onChange={(e) => setRange(e.target.value)} data-testid="time-range">
              {RANGES.map(([value, label]) => (
                <option key={value} value={value}>
                  {label}
                </option>
              ))}
            </select>
            {range === "absolute" && (
              <>
                <input type="datetime-local" value={from} onChange={(e) => setFrom(e.target.value)} aria-label="From" />
                <input type="datetime-local" value={to} onChange={(e) => setTo(e.target.value)} aria-label="To" />
              </>
            )}
            <select value={zone} onChange={(e) => setZone(e.target.value as TimeZone)} aria-label="Time zone">
              <option value="UTC">UTC</option>
              <option value="local">Local time</option>
            </select>
            <button onClick={() => navigator.clipboard?.writeText(share()).catch(() => undefined)}>Copy link</button>
            <button
              onClick={() => setSaving({ query: editor.current?.value() ?? text.current, db: database, range })}
              data-testid="save-query"
              title="Save to the query library"
            >
              Save
            </button>
            <select
              value=""
              aria-label="History"
              data-testid="history"
              onChange={(e) => {
                const entry = history[Number(e.target.value)];
                if (!entry) return;
                editor.current?.setValue(entry.query);
                text.current = entry.query;
                setDatabase(entry.db);
                setRange(entry.range);
              }}
            >
              <option value="">History ({history.length})</option>
              {history.map((entry, i) => (
                <option key={`${entry.at}-${i}`} value={i} title={entry.query}>
                  {new Date(entry.at).toLocaleString()} · {entry.db} · {entry.query.replace(/\s+/g, " ").slice(0, 80)}
                </option>
              ))}
            </select>
          </div>
          <Editor
            ref={editor}
            initial={text.current}
            database={database}
            schema={schema}
            onRun={run}
            onChange={(value) => (text.current = value)}
          />
          {running && (
            <div className="progress" data-testid="progress">
              <div className="bar" style={{ width: `${Math.min(progress?.percent ?? 0, 100)}%` }} />
              <span>
                {(elapsed / 1000).toFixed(1)} s
                {progress?.rowsScanned !== undefined && ` · ${progress.rowsScanned.toLocaleString()} rows`}
                {progress?.bytesScanned !== undefined && ` · ${bytes(progress.bytesScanned)}`}
                {progress && ` · ${progress.percent.toFixed(0)} %`}
              </span>
            </div>
          )}
          {error && (
            <div className="error" role="alert" data-testid="error">
              {error}
            </div>
          )}
          {notice && (
            <div className="notice" role="status" onClick={() => setNotice(undefined)}>
              {notice}
            </div>
          )}
          {saving && (
            <Suspense fallback={null}>
            <SaveDialog
              draft={saving}
              onClose={(saved) => {
                setSaving(undefined);
                if (saved) setNotice(`Saved “${saved.name}” to the library${saved.folder ? ` in ${saved.folder}` : ""}.`);
              }}
            />
            </Suspense>
          )}
          {!answer && !running && schema && Object.keys(schema.Databases?.[database]?.Tables ?? {}).length === 0 && (
            <Suspense fallback={null}>
              <Onboarding identity={identity} database={database} onRefresh={() => setSchemaVersion((n) => n + 1)} />
            </Suspense>
          )}
          {trace && (
            <TraceView
              key={trace}
              traceId={trace}
              db={lastRun?.db ?? database}
              table={sourceTable(lastRun?.csl ?? text.current, schema, database)}
              onClose={() => setTrace(undefined)}
            />
          )}
          {context && !trace && (
            <Context
              key={JSON.stringify(context)}
              table={sourceTable(lastRun?.csl ?? text.current, schema, database)}
              db={lastRun?.db ?? database}
              timestamp={String(context.timestamp)}
              service={serviceOf(context)}
              host={hostOf(context)}
              body={context.body}
              zone={zone}
              onClose={() => setContext(undefined)}
            />
          )}
          {answer && !running && !trace && !context && (
            <div className="results">
              <div className="tabs" role="tablist">
                {tables.map((table, i) => (
                  <button
                    key={table.id}
                    role="tab"
                    aria-selected={i === tab}
                    className={i === tab ? "active" : ""}
                    onClick={() => setTab(i)}
                  >
                    {table.name} ({table.rows.length.toLocaleString()})
                  </button>
                ))}
                <span className="spacer" />
                <span className="view-switch">
                  <button className={view === "table" ? "active" : ""} onClick={() => setView("table")}>
                    Table
                  </button>
                  <button
                    className={view === "chart" ? "active" : ""}
                    onClick={() => setView("chart")}
                    data-testid="show-chart"
                  >
                    Chart
                  </button>
                </span>
                {view === "chart" && (
                  <select value={kind} onChange={(e) => setKind(e.target.value as ChartKind)} aria-label="Chart kind">
                    {CHART_KINDS.map((k) => (
                      <option key={k}>{k}</option>
                    ))}
                  </select>
                )}
                {answer.runId && current && (
                  <span className="export" aria-label="Export">
                    <a
                      className="button"
                      href={exportUrl(answer.runId, "csv", tables.indexOf(current))}
                      download
                      data-testid="export-csv"
                    >
                      CSV
                    </a>
                    <a
                      className="button"
                      href={exportUrl(answer.runId, "json", tables.indexOf(current))}
                      download
                      data-testid="export-json"
                    >
                      JSON
                    </a>
                  </span>
                )}
                <span className="stats" data-testid="stats">
                  {(answer.statistics.executionSeconds ?? elapsed / 1000).toFixed(3)} s
                  {answer.statistics.rowsScanned !== undefined &&
                    ` · ${answer.statistics.rowsScanned.toLocaleString()} rows scanned`}
                  {answer.statistics.bytesScanned !== undefined && ` · ${bytes(answer.statistics.bytesScanned)}`}
                  {answer.statistics.chunksSkipped !== undefined &&
                    ` · ${answer.statistics.chunksSkipped}/${answer.statistics.chunksTotal} chunks pruned`}
                </span>
              </div>
              {answer.warnings.map((w) => (
                <div className="warning" key={w}>
                  {w}
                </div>
              ))}
              {lastRun && view === "table" && isLogResult(tables[0]) && (
                <Volume
                  key={answers}
                  query={lastRun.csl}
                  db={lastRun.db}
                  range={lastRun.range}
                  since={lastRun.since}
                  until={lastRun.until}
                  extent={extentOf(tables[0])}
                  onZoom={zoom}
                />
              )}
              {current && view === "chart" ? (
                <Chart
                  key={`${answers}-${current.id}-${kind}`}
                  table={current}
                  kind={kind}
                  visualization={(answer.visualization as Visualization | undefined) ?? {}}
                />
              ) : current ? (
                <ResultGrid
                  key={`${answers}-${current.id}`}
                  columns={current.columns}
                  rows={current.rows}
                  zone={zone}
                  onOpenTrace={setTrace}
                  onContext={setContext}
                />
              ) : (
                <div className="empty">No result table.</div>
              )}
            </div>
          )}
        </section>
    </div>
  );
}
