// The results grid: only the rows in view are in the page (fixed row height), so 100k rows
// scroll smoothly. Click a header to sort, drag its edge to resize; click a cell to see it
// whole (dynamic values as indented JSON) and copy it or its row.

import { useMemo, useRef, useState } from "react";
import type { Column } from "./api";

const ROW_HEIGHT = 26;
const OVERSCAN = 12;

export type TimeZone = "UTC" | "local";

export function formatCell(value: unknown, type: string, zone: TimeZone): string {
  if (value === null || value === undefined) return "";
  if (type === "datetime" && typeof value === "string") {
    if (zone === "UTC") return value.replace("T", " ").replace(/Z$/, "");
    const date = new Date(value);
    if (Number.isNaN(date.getTime())) return value;
    const pad = (n: number, w = 2) => String(n).padStart(w, "0");
    const fraction = /\.(\d+)/.exec(value)?.[1] ?? "";
    return (
      `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ` +
      `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}` +
      (fraction ? `.${fraction}` : "")
    );
  }
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

function compare(a: unknown, b: unknown): number {
  if (a === b) return 0;
  if (a === null || a === undefined) return -1;
  if (b === null || b === undefined) return 1;
  if (typeof a === "number" && typeof b === "number") return a - b;
  return String(typeof a === "object" ? JSON.stringify(a) : a).localeCompare(
    String(typeof b === "object" ? JSON.stringify(b) : b),
  );
}

interface Props {
  columns: Column[];
  rows: unknown[][];
  zone: TimeZone;
  /** Opens the trace view of a trace id cell. */
  onOpenTrace?: (traceId: string) => void;
  /** Shows the lines around a log row (given as column name → value). */
  onContext?: (row: Record<string, unknown>) => void;
}

export function ResultGrid({ columns, rows, zone, onOpenTrace, onContext }: Props) {
  const [sort, setSort] = useState<{ column: number; descending: boolean }>();
  const [widths, setWidths] = useState<number[]>(() => columns.map((c) => (c.type === "datetime" ? 220 : 160)));
  const [scrollTop, setScrollTop] = useState(0);
  const [height, setHeight] = useState(400);
  const [selected, setSelected] = useState<{ row: number; column: number }>();
  const body = useRef<HTMLDivElement>(null);

  const order = useMemo(() => {
    const indices = rows.map((_, i) => i);
    if (sort) {
      indices.sort((x, y) => {
        const c = compare(rows[x][sort.column], rows[y][sort.column]);
        return sort.descending ? -c : c;
      });
    }
    return indices;
  }, [rows, sort]);

  const first = Math.max(0, Math.floor(scrollTop / ROW_HEIGHT) - OVERSCAN);
  const last = Math.min(order.length, Math.ceil((scrollTop + height) / ROW_HEIGHT) + OVERSCAN);
  const template = widths.map((w) => `${w}px`).join(" ");

  const startResize = (index: number, event: React.MouseEvent) => {
    event.preventDefault();
    event.stopPropagation();
    const startX = event.clientX;
    const startWidth = widths[index];
    const move = (e: MouseEvent) => {
      setWidths((current) => current.map((w, i) => (i === index ? Math.max(48, startWidth + e.clientX - startX) : w)));
    };
    const up = () => {
      window.removeEventListener("mousemove", move);
      window.removeEventListener("mouseup", up);
    };
    window.addEventListener("mousemove", move);
    window.addEventListener("mouseup", up);
  };

  const selectedRow = selected ? rows[order[selected.row]] : undefined;
  const selectedValue = selectedRow && selected ? selectedRow[selected.column] : undefined;
  const copy = (text: string) => navigator.clipboard?.writeText(text).catch(() => undefined);

  return (
    <div className="grid-wrap">
      <div
        className="grid"
        role="grid"
        aria-rowcount={rows.length + 1}
        data-testid="result-grid"
        ref={body}
        onScroll={(e) => {
          setScrollTop(e.currentTarget.scrollTop);
          setHeight(e.currentTarget.clientHeight);
        }}
      >
        <div className="grid-header" role="row" style={{ gridTemplateColumns: template }}>
          {columns.map((column, i) => (
            <div
              key={column.name}
              role="columnheader"
              className="grid-cell header"
              title={`${column.name}: ${column.type}`}
              onClick={() =>
                setSort((s) => (s?.column === i ? { column: i, descending: !s.descending } : { column: i, descending: false }))
              }
            >
              {column.name}
              {sort?.column === i ? (sort.descending ? " ▼" : " ▲") : ""}
              <span className="resize" onMouseDown={(e) => startResize(i, e)} />
            </div>
          ))}
        </div>
        <div style={{ height: order.length * ROW_HEIGHT, position: "relative" }}>
          {order.slice(first, last).map((rowIndex, offset) => {
            const position = first + offset;
            const row = rows[rowIndex];
            return (
              <div
                key={rowIndex}
                role="row"
                aria-rowindex={position + 2}
                className={"grid-row" + (selected?.row === position ? " selected" : "")}
                style={{ gridTemplateColumns: template, top: position * ROW_HEIGHT }}
              >
                {columns.map((column, c) => (
                  <div
                    key={c}
                    role="gridcell"
                    className={"grid-cell" + (typeof row[c] === "number" ? " number" : "")}
                    onClick={() => setSelected({ row: position, column: c })}
                  >
                    {formatCell(row[c], column.type, zone)}
                  </div>
                ))}
              </div>
            );
          })}
        </div>
      </div>
      {selected && selectedRow && (
        <aside className="cell-detail" data-testid="cell-detail">
          <header>
            <strong>{columns[selected.column]?.name}</strong>
            <button onClick={() => copy(formatCell(selectedValue, columns[selected.column].type, zone))}>Copy cell</button>
            <button
              onClick={() => copy(JSON.stringify(Object.fromEntries(columns.map((c, i) => [c.name, selectedRow[i]]))))}
            >
              Copy row
            </button>
            {onOpenTrace && columns[selected.column]?.name === "trace_id" && typeof selectedValue === "string" && selectedValue && (
              <button onClick={() => onOpenTrace(selectedValue)} data-testid="open-trace">
                Open trace
              </button>
            )}
            {onContext && columns.some((c) => c.name === "timestamp") && columns.some((c) => c.name === "body") && (
              <button
                onClick={() => onContext(Object.fromEntries(columns.map((c, i) => [c.name, selectedRow[i]])))}
                data-testid="show-context"
              >
                Context
              </button>
            )}
            <button onClick={() => setSelected(undefined)} aria-label="Close">
              ×
            </button>
          </header>
          <pre>
            {typeof selectedValue === "object" && selectedValue !== null
              ? JSON.stringify(selectedValue, null, 2)
              : formatCell(selectedValue, columns[selected.column].type, zone)}
          </pre>
        </aside>
      )}
    </div>
  );
}
