// "Send your first data": shown in place of results while the open database has no table.
// The endpoints, an ingest token (admins and maintainers make one here; its text shows
// once) and snippets for the OpenTelemetry SDK, a Collector, Promtail/Alloy and the
// Datadog Agent, ready to paste.

import { useState } from "react";
import { describe, meta } from "./meta";
import { Identity } from "./session";

function Snippet({ title, text }: { title: string; text: string }) {
  return (
    <div className="snippet">
      <div className="snippet-head">
        <strong>{title}</strong>
        <button className="small" onClick={() => navigator.clipboard?.writeText(text).catch(() => undefined)}>
          Copy
        </button>
      </div>
      <pre>{text}</pre>
    </div>
  );
}

export function Onboarding({ identity, database, onRefresh }: { identity: Identity; database: string; onRefresh: () => void }) {
  const [token, setToken] = useState<string>();
  const [table, setTable] = useState("logs");
  const [error, setError] = useState<string>();
  const host = window.location.hostname || "trawl-host";
  const key = token ?? "<ingest token>";
  const mayCreate = identity.role === "admin" || identity.role === "maintainer";
  const create = async () => {
    try {
      const answer = await meta.createIngestToken({
        name: `first-data-${database}-${new Date().toISOString().slice(0, 10)}`,
        database,
        table,
      });
      setToken(answer.token);
    } catch (e) {
      setError(describe(e));
    }
  };
  return (
    <div className="onboarding" data-testid="onboarding">
      <h3>Send your first data to “{database}”</h3>
      <p>
        This database has no table yet. Point a sender at Trawl with an ingest token; the token decides the database
        and table rows go to. Then <button className="link" onClick={onRefresh}>look again</button>.
      </p>
      <table className="plain endpoints">
        <tbody>
          <tr>
            <td>OTLP/gRPC</td>
            <td>
              <code>http://{host}:4317</code>
            </td>
          </tr>
          <tr>
            <td>OTLP/HTTP</td>
            <td>
              <code>http://{host}:4318</code> (<code>/v1/logs</code>, <code>/v1/traces</code>, <code>/v1/metrics</code>)
            </td>
          </tr>
          <tr>
            <td>Log push (Promtail, Alloy)</td>
            <td>
              <code>http://{host}:4318/lgx/api/v1/push</code>
            </td>
          </tr>
          <tr>
            <td>Datadog Agent (when enabled)</td>
            <td>
              <code>http://{host}:9552</code>
            </td>
          </tr>
        </tbody>
      </table>
      <div className="row">
        {token ? (
          <div className="shown-once" data-testid="onboarding-token">
            Your ingest token (shown once; the snippets below hold it): <code>{token}</code>
          </div>
        ) : mayCreate ? (
          <>
            <label>
              Table
              <input value={table} onChange={(e) => setTable(e.target.value)} aria-label="Table for the token" />
            </label>
            <button className="primary" onClick={create} data-testid="onboarding-create-token">
              Create an ingest token for {database}.{table}
            </button>
          </>
        ) : (
          <span className="muted">Ask an admin or maintainer for an ingest token for this database.</span>
        )}
      </div>
      {error && <div className="error">{error}</div>}
      <Snippet
        title="OpenTelemetry SDK (environment)"
        text={`OTEL_EXPORTER_OTLP_ENDPOINT=http://${host}:4318
OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf
OTEL_EXPORTER_OTLP_HEADERS="authorization=Bearer%20${key}"
OTEL_SERVICE_NAME=my-service`}
      />
      <Snippet
        title="OpenTelemetry Collector"
        text={`exporters:
  otlphttp/trawl:
    endpoint: http://${host}:4318
    headers: {authorization: "Bearer ${key}"}
service:
  pipelines:
    logs: {receivers: [otlp], exporters: [otlphttp/trawl]}
    traces: {receivers: [otlp], exporters: [otlphttp/trawl]}
    metrics: {receivers: [otlp], exporters: [otlphttp/trawl]}`}
      />
      <Snippet
        title="Promtail"
        text={`clients:
  - url: http://${host}:4318/lgx/api/v1/push
    bearer_token: ${key}`}
      />
      <Snippet
        title="Grafana Alloy"
        text={`loki.write "trawl" {
  endpoint {
    url          = "http://${host}:4318/lgx/api/v1/push"
    bearer_token = "${key}"
  }
}`}
      />
      <Snippet
        title="Datadog Agent (trawl serve --vendor-intake)"
        text={`DD_API_KEY=${key}
DD_DD_URL=http://${host}:9552
DD_LOGS_CONFIG_LOGS_DD_URL=${host}:9552
DD_LOGS_CONFIG_USE_HTTP=true
DD_LOGS_CONFIG_LOGS_NO_SSL=true
DD_APM_DD_URL=http://${host}:9552`}
      />
    </div>
  );
}
