// The context of a log line: the lines just before and after it from the same service and
// host, the line itself highlighted.

import { useEffect, useState } from "react";
import { kqlString, runQuery } from "./api";
import { formatCell, TimeZone } from "./ResultGrid";

const LINES = 10;

/** The KQL of the context of the line at `timestamp` (ADX datetime text). */
export function contextQuery(table: string, timestamp: string, service?: string, host?: string): string {
  const at = `datetime(${timestamp})`;
  const same = [
    service !== undefined ? `tostring(resource['service.name']) == ${kqlString(service)}` : undefined,
    host !== undefined ? `tostring(resource['host.name']) == ${kqlString(host)}` : undefined,
  ].filter(Boolean);
  const filter = same.length ? `| where ${same.join(" and ")}\n` : "";
  return (
    `let around = ${table}\n| where timestamp between ((${at} - 1d) .. (${at} + 1d)) and isnotempty(body)\n${filter};\n` +
    `union (around | where timestamp < ${at} | top ${LINES} by timestamp desc),\n` +
    `      (around | where timestamp >= ${at} | top ${LINES + 1} by timestamp asc)\n` +
    `| sort by timestamp asc\n| project timestamp, severity_text, body`
  );
}

interface Props {
  table: string;
  db: string;
  timestamp: string;
  service?: string;
  host?: string;
  body?: unknown;
  zone: TimeZone;
  onClose: () => void;
}

export function Context({ table, db, timestamp, service, host, body, zone, onClose }: Props) {
  const [rows, setRows] = useState<unknown[][]>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    const controller = new AbortController();
    runQuery({ db, csl: contextQuery(table, timestamp, service, host), signal: controller.signal })
      .then((answer) => setRows(answer.tables[0]?.rows ?? []))
      .catch((e) => !controller.signal.aborted && setError(e.message ?? String(e)));
    return () => controller.abort();
  }, [table, db, timestamp, service, host]);
  const same = (row: unknown[]) => row[0] === timestamp && JSON.stringify(row[2]) === JSON.stringify(body);
  return (
    <section className="context" data-testid="context" aria-label="Log context">
      <header>
        <strong>Context</strong>
        <span className="muted">
          {[service && `service ${service}`, host && `host ${host}`].filter(Boolean).join(" · ") || "all services"}
        </span>
        <span className="spacer" />
        <button onClick={onClose}>Close context</button>
      </header>
      {error && <div className="error">{error}</div>}
      {!rows && !error && <div className="muted">Loading…</div>}
      <ol>
        {rows?.map((row, i) => (
          <li key={i} className={same(row) ? "this-line" : ""} data-testid="context-line">
            <span className="when">{formatCell(row[0], "datetime", zone)}</span>
            <span className={`severity ${String(row[1] ?? "").toLowerCase()}`}>{String(row[1] ?? "")}</span>
            <span className="text">{typeof row[2] === "string" ? row[2] : JSON.stringify(row[2])}</span>
          </li>
        ))}
      </ol>
    </section>
  );
}
