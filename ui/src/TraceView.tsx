// The trace view: every span of one trace as a waterfall (children under their parent, bars
// placed on the trace's time line, errors in red), a span's attributes on click, and the
// trace's log lines beside the span that wrote them.

import { useEffect, useMemo, useState } from "react";
import { kqlString, runQuery } from "./api";
import { parseTime } from "./chart";

interface Span {
  id: string;
  parent: string;
  name: string;
  service: string;
  kind: string;
  status: string;
  description: string;
  start: number;
  end: number;
  attributes: unknown;
  resource: unknown;
  depth: number;
}

interface LogLine {
  at: number;
  span: string;
  severity: string;
  body: string;
}


/** Spans in tree order (each after its parent, siblings by start), with their depth. */
export function treeOrder(spans: Span[]): Span[] {
  const byParent = new Map<string, Span[]>();
  const ids = new Set(spans.map((s) => s.id));
  for (const span of spans) {
    const parent = span.parent && ids.has(span.parent) && span.parent !== span.id ? span.parent : "";
    byParent.set(parent, [...(byParent.get(parent) ?? []), span]);
  }
  const out: Span[] = [];
  const seen = new Set<string>();
  const visit = (parent: string, depth: number) => {
    const children = (byParent.get(parent) ?? []).sort((a, b) => a.start - b.start);
    for (const child of children) {
      if (seen.has(child.id)) continue;
      seen.add(child.id);
      out.push({ ...child, depth });
      visit(child.id, depth + 1);
    }
  };
  visit("", 0);
  // Spans in a cycle of parents (bad data) still show, at the top level.
  for (const span of spans) if (!seen.has(span.id)) out.push({ ...span, depth: 0 });
  return out;
}

function duration(ms: number): string {
  if (ms < 1) return `${(ms * 1000).toFixed(0)} µs`;
  if (ms < 1000) return `${ms.toFixed(ms < 10 ? 2 : 0)} ms`;
  return `${(ms / 1000).toFixed(2)} s`;
}

export function TraceView({ traceId, table, db, onClose }: { traceId: string; table: string; db: string; onClose: () => void }) {
  const [spans, setSpans] = useState<Span[]>();
  const [logs, setLogs] = useState<LogLine[]>([]);
  const [error, setError] = useState<string>();
  const [selected, setSelected] = useState<string>();

  useEffect(() => {
    const controller = new AbortController();
    runQuery({
      db,
      csl: `${table}\n| where trace_id == ${kqlString(traceId)}\n| take 20000`,
      signal: controller.signal,
    })
      .then((answer) => {
        const result = answer.tables[0];
        if (!result) return setSpans([]);
        const at = (name: string) => result.columns.findIndex((c) => c.name === name);
        const get = (row: unknown[], name: string) => (at(name) >= 0 ? row[at(name)] : undefined);
        const found: Span[] = [];
        const lines: LogLine[] = [];
        for (const row of result.rows) {
          const name = get(row, "span_name");
          if (typeof name === "string" && name !== "") {
            const start = parseTime(get(row, "start_time") ?? get(row, "timestamp"));
            const end = parseTime(get(row, "end_time") ?? get(row, "timestamp"));
            const resource = get(row, "resource") as Record<string, unknown> | undefined;
            found.push({
              id: String(get(row, "span_id") ?? ""),
              parent: String(get(row, "parent_span_id") ?? ""),
              name,
              service: String(resource?.["service.name"] ?? ""),
              kind: String(get(row, "span_kind") ?? ""),
              status: String(get(row, "status_code") ?? ""),
              description: String(get(row, "status_description") ?? ""),
              start,
              end: Number.isNaN(end) ? start : end,
              attributes: get(row, "attributes"),
              resource,
              depth: 0,
            });
          } else {
            lines.push({
              at: parseTime(get(row, "timestamp")),
              span: String(get(row, "span_id") ?? ""),
              severity: String(get(row, "severity_text") ?? ""),
              body: typeof get(row, "body") === "string" ? String(get(row, "body")) : JSON.stringify(get(row, "body")),
            });
          }
        }
        setSpans(treeOrder(found));
        setLogs(lines.sort((a, b) => a.at - b.at));
      })
      .catch((e) => {
        if (!controller.signal.aborted) setError(e.message ?? String(e));
      });
    return () => controller.abort();
  }, [traceId, table, db]);

  const bounds = useMemo(() => {
    if (!spans?.length) return undefined;
    const start = Math.min(...spans.map((s) => s.start));
    const end = Math.max(...spans.map((s) => s.end));
    return { start, total: Math.max(end - start, 0.001) };
  }, [spans]);
  const chosen = spans?.find((s) => s.id === selected);

  return (
    <section className="trace" data-testid="trace-view" aria-label={`Trace ${traceId}`}>
      <header>
        <strong>Trace {traceId}</strong>
        {spans && bounds && (
          <span className="muted">
            {spans.length} spans · {duration(bounds.total)}
            {logs.length ? ` · ${logs.length} log lines` : ""}
          </span>
        )}
        <span className="spacer" />
        <button onClick={onClose}>Close trace</button>
      </header>
      {error && <div className="error">{error}</div>}
      {!spans && !error && <div className="muted">Loading the trace…</div>}
      {spans && spans.length === 0 && <div className="muted">No spans with this trace id.</div>}
      <div className="trace-body">
        <div className="waterfall" role="list">
          {spans?.map((span) => {
            const left = bounds ? ((span.start - bounds.start) / bounds.total) * 100 : 0;
            const width = bounds ? Math.max(((span.end - span.start) / bounds.total) * 100, 0.3) : 100;
            const spanLogs = logs.filter((l) => l.span && l.span === span.id);
            return (
              <div key={span.id} role="listitem" data-testid="span" data-span-name={span.name}>
                <button
                  className={"span-row" + (span.status === "ERROR" ? " failed" : "") + (span.id === selected ? " selected" : "")}
                  onClick={() => setSelected(span.id === selected ? undefined : span.id)}
                >
                  <span className="span-label" style={{ paddingLeft: span.depth * 14 }}>
                    {span.service && <span className="service">{span.service}</span>} {span.name}
                  </span>
                  <span className="span-track">
                    <span className="span-bar" style={{ left: `${left}%`, width: `${width}%` }} />
                    <span className="span-time" style={{ left: `${Math.min(left + width, 92)}%` }}>
                      {duration(span.end - span.start)}
                    </span>
                  </span>
                </button>
                {spanLogs.map((line, i) => (
                  <div className="span-log" key={i} style={{ paddingLeft: span.depth * 14 + 20 }} data-testid="span-log">
                    <span className={`severity ${line.severity.toLowerCase()}`}>{line.severity}</span> {line.body}
                  </div>
                ))}
              </div>
            );
          })}
          {logs.some((l) => !l.span || !spans?.some((s) => s.id === l.span)) && (
            <div className="span-log orphan">
              {logs
                .filter((l) => !l.span || !spans?.some((s) => s.id === l.span))
                .map((line, i) => (
                  <div key={i}>
                    <span className={`severity ${line.severity.toLowerCase()}`}>{line.severity}</span> {line.body}
                  </div>
                ))}
            </div>
          )}
        </div>
        {chosen && (
          <aside className="span-detail" data-testid="span-detail">
            <h3>{chosen.name}</h3>
            <dl>
              <dt>Service</dt>
              <dd>{chosen.service || "–"}</dd>
              <dt>Kind</dt>
              <dd>{chosen.kind || "–"}</dd>
              <dt>Status</dt>
              <dd>
                {chosen.status || "–"}
                {chosen.description ? `: ${chosen.description}` : ""}
              </dd>
              <dt>Duration</dt>
              <dd>{duration(chosen.end - chosen.start)}</dd>
              <dt>Span id</dt>
              <dd>{chosen.id}</dd>
            </dl>
            <h4>Attributes</h4>
            <pre>{JSON.stringify(chosen.attributes ?? {}, null, 2)}</pre>
            <h4>Resource</h4>
            <pre>{JSON.stringify(chosen.resource ?? {}, null, 2)}</pre>
          </aside>
        )}
      </div>
    </section>
  );
}
