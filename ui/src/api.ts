// Calls to the gateway. The browser session is an HttpOnly cookie the page never sees; every
// call carries the anti-forgery header the gateway requires of cookie-authenticated calls.

export const CSRF_HEADER = "x-trawl-csrf";

/** Where in the query text an error is (1-based lines and columns), as the engine says. */
export interface ErrorLocation {
  start_line: number;
  start_column: number;
  end_line: number;
  end_column: number;
}

export class ApiError extends Error {
  status: number;
  location?: ErrorLocation;
  constructor(status: number, message: string, location?: ErrorLocation) {
    super(message);
    this.status = status;
    this.location = location;
  }
}

function fromAdxError(status: number, error: any, fallback: string): ApiError {
  const message = error?.["@message"] ?? error?.message ?? fallback;
  return new ApiError(status, message, error?.["@context"]?.location);
}

/** The message of an error answer: ADX `{error: {message}}`, problem `{detail}` or text. */
async function errorOf(response: Response): Promise<ApiError> {
  const text = await response.text();
  const message = text || response.statusText;
  try {
    const body = JSON.parse(text);
    if (body?.error) return fromAdxError(response.status, body.error, message);
    return new ApiError(response.status, body?.detail ?? body?.message ?? message);
  } catch {
    return new ApiError(response.status, message);
  }
}

/** `text` as a KQL string literal. */
export function kqlString(text: string): string {
  return `'${text.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`;
}

export async function call(path: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  headers.set(CSRF_HEADER, "1");
  if (init.body && !headers.has("content-type")) headers.set("content-type", "application/json");
  const response = await fetch(path, { ...init, headers, credentials: "same-origin" });
  if (!response.ok) throw await errorOf(response);
  return response;
}

export async function callJson<T>(path: string, init: RequestInit = {}): Promise<T> {
  return (await call(path, init)).json() as Promise<T>;
}

/** A v1 management command's first table as objects. */
export async function mgmt(db: string, csl: string): Promise<Record<string, unknown>[]> {
  const answer = await callJson<{ Tables: { Columns: { ColumnName: string }[]; Rows: unknown[][] }[] }>(
    "/v1/rest/mgmt",
    { method: "POST", body: JSON.stringify({ db, csl }) },
  );
  const table = answer.Tables[0];
  if (!table) return [];
  return table.Rows.map((row) => Object.fromEntries(table.Columns.map((c, i) => [c.ColumnName, row[i]])));
}

export interface Column {
  name: string;
  type: string;
}

export interface ResultTable {
  id: number;
  name: string;
  kind: string;
  columns: Column[];
  rows: unknown[][];
}

export interface Progress {
  percent: number;
  rowsScanned?: number;
  bytesScanned?: number;
}

export interface Statistics {
  executionSeconds?: number;
  rowsScanned?: number;
  bytesScanned?: number;
  chunksTotal?: number;
  chunksSkipped?: number;
  resultRows?: number;
}

export interface QueryAnswer {
  /** The kept run, for export (`GET /api/runs/<id>`), when the query asked to keep it. */
  runId?: string;
  tables: ResultTable[];
  visualization?: Record<string, unknown>;
  statistics: Statistics;
  warnings: string[];
}

export interface QueryOptions {
  db: string;
  csl: string;
  since?: string;
  until?: string;
  signal?: AbortSignal;
  onProgress?: (progress: Progress) => void;
  /** Keep the result on the server for export. */
  keepRun?: boolean;
}

/** Where a kept run's table downloads as CSV or JSON. */
export function exportUrl(runId: string, format: "csv" | "json", table: number): string {
  return `/api/runs/${encodeURIComponent(runId)}?format=${format}&table=${table}`;
}

/** Runs a query in the progressive v2 mode: one frame per line, progress as it runs. */
export async function runQuery(options: QueryOptions): Promise<QueryAnswer> {
  const queryOptions: Record<string, unknown> = { results_progressive_enabled: true, servertimeout: "00:10:00" };
  // The time window: ISO 8601 or relative (`1h`), as the time-range picker sets it.
  if (options.since) queryOptions.query_datetimescope_from = options.since;
  if (options.until) queryOptions.query_datetimescope_to = options.until;
  if (options.keepRun) queryOptions.trawl_keep_run = true;
  const body = { db: options.db, csl: options.csl, properties: { Options: queryOptions } };
  const response = await call("/v2/rest/query", {
    method: "POST",
    body: JSON.stringify(body),
    signal: options.signal,
  });
  const reader = response.body?.getReader();
  if (!reader) throw new ApiError(0, "the answer has no body");
  const answer: QueryAnswer = {
    runId: response.headers.get("x-trawl-run-id") ?? undefined,
    tables: [],
    statistics: {},
    warnings: [],
  };
  const open = new Map<number, ResultTable>();
  const decoder = new TextDecoder();
  let buffered = "";
  let failure: ApiError | undefined;
  const onFrame = (frame: Record<string, any>) => {
    switch (frame.FrameType) {
      case "TableHeader":
        open.set(frame.TableId, {
          id: frame.TableId,
          name: frame.TableName,
          kind: frame.TableKind,
          columns: frame.Columns.map((c: any) => ({ name: c.ColumnName, type: c.ColumnType })),
          rows: [],
        });
        break;
      case "TableFragment": {
        const table = open.get(frame.TableId);
        if (!table) break;
        if (frame.TableFragmentType === "DataReplace") table.rows = frame.Rows;
        else table.rows.push(...frame.Rows);
        break;
      }
      case "TableProgress":
        options.onProgress?.({
          percent: frame.TableProgress ?? 0,
          rowsScanned: frame.RowsScanned,
          bytesScanned: frame.BytesScanned,
        });
        break;
      case "TableCompletion": {
        const table = open.get(frame.TableId);
        if (table) answer.tables.push(table);
        break;
      }
      case "DataTable":
        onDataTable(frame, answer);
        break;
      case "DataSetCompletion":
        if (frame.HasErrors) failure = fromAdxError(200, frame.OneApiErrors?.[0]?.error, "the query failed");
        break;
    }
  };
  for (;;) {
    const { done, value } = await reader.read();
    if (value) buffered += decoder.decode(value, { stream: true });
    let newline: number;
    while ((newline = buffered.indexOf("\n")) >= 0) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      const text = line.replace(/^[[,]/, "").replace(/[\],]\s*$/, "").trim();
      if (text) onFrame(JSON.parse(text));
    }
    if (done) break;
  }
  if (failure) throw failure;
  answer.tables.sort((a, b) => a.id - b.id);
  return answer;
}

function onDataTable(frame: Record<string, any>, answer: QueryAnswer) {
  const columns: string[] = frame.Columns.map((c: any) => c.ColumnName);
  const rows: Record<string, unknown>[] = frame.Rows.map((row: unknown[]) =>
    Object.fromEntries(columns.map((c, i) => [c, row[i]])),
  );
  if (frame.TableKind === "PrimaryResult") {
    answer.tables.push({
      id: frame.TableId,
      name: frame.TableName,
      kind: frame.TableKind,
      columns: frame.Columns.map((c: any) => ({ name: c.ColumnName, type: c.ColumnType })),
      rows: frame.Rows,
    });
  } else if (frame.TableKind === "QueryProperties") {
    for (const row of rows) {
      if (row.Key === "Visualization") {
        try {
          answer.visualization = JSON.parse(String(row.Value));
        } catch {
          // not a visualization
        }
      }
    }
  } else if (frame.TableKind === "QueryCompletionInformation") {
    for (const row of rows) {
      let payload: any;
      try {
        payload = JSON.parse(String(row.Payload));
      } catch {
        continue;
      }
      if (row.EventTypeName === "QueryResourceConsumption") {
        const input = payload.input_dataset_statistics ?? {};
        answer.statistics = {
          executionSeconds: payload.ExecutionTime,
          resultRows: payload.result_rows,
          rowsScanned: input.rows?.scanned,
          bytesScanned: input.bytes?.scanned,
          chunksTotal: input.chunks?.total,
          chunksSkipped: input.chunks?.skipped,
        };
      } else if (row.LevelName === "Warning" && payload.Text) {
        answer.warnings.push(payload.Text);
      }
    }
  }
}
