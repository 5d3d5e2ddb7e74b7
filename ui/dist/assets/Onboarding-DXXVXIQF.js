import{i as e,n as t}from"./index-BSRc86IL.js";import{n,t as r}from"./meta-C6yP25my.js";var i=e(),a=t();function o({title:e,text:t}){return(0,a.jsxs)(`div`,{className:`snippet`,children:[(0,a.jsxs)(`div`,{className:`snippet-head`,children:[(0,a.jsx)(`strong`,{children:e}),(0,a.jsx)(`button`,{className:`small`,onClick:()=>navigator.clipboard?.writeText(t).catch(()=>void 0),children:`Copy`})]}),(0,a.jsx)(`pre`,{children:t})]})}function s({identity:e,database:t,onRefresh:s}){let[c,l]=(0,i.useState)(),[u,d]=(0,i.useState)(`logs`),[f,p]=(0,i.useState)(),m=window.location.hostname||`trawl-host`,h=c??`<ingest token>`,g=e.role===`admin`||e.role===`maintainer`;return(0,a.jsxs)(`div`,{className:`onboarding`,"data-testid":`onboarding`,children:[(0,a.jsxs)(`h3`,{children:[`Send your first data to “`,t,`”`]}),(0,a.jsxs)(`p`,{children:[`This database has no table yet. Point a sender at Trawl with an ingest token; the token decides the database and table rows go to. Then `,(0,a.jsx)(`button`,{className:`link`,onClick:s,children:`look again`}),`.`]}),(0,a.jsx)(`table`,{className:`plain endpoints`,children:(0,a.jsxs)(`tbody`,{children:[(0,a.jsxs)(`tr`,{children:[(0,a.jsx)(`td`,{children:`OTLP/gRPC`}),(0,a.jsx)(`td`,{children:(0,a.jsxs)(`code`,{children:[`http://`,m,`:4317`]})})]}),(0,a.jsxs)(`tr`,{children:[(0,a.jsx)(`td`,{children:`OTLP/HTTP`}),(0,a.jsxs)(`td`,{children:[(0,a.jsxs)(`code`,{children:[`http://`,m,`:4318`]}),` (`,(0,a.jsx)(`code`,{children:`/v1/logs`}),`, `,(0,a.jsx)(`code`,{children:`/v1/traces`}),`, `,(0,a.jsx)(`code`,{children:`/v1/metrics`}),`)`]})]}),(0,a.jsxs)(`tr`,{children:[(0,a.jsx)(`td`,{children:`Log push (Promtail, Alloy)`}),(0,a.jsx)(`td`,{children:(0,a.jsxs)(`code`,{children:[`http://`,m,`:4318/lgx/api/v1/push`]})})]}),(0,a.jsxs)(`tr`,{children:[(0,a.jsx)(`td`,{children:`Datadog Agent (when enabled)`}),(0,a.jsx)(`td`,{children:(0,a.jsxs)(`code`,{children:[`http://`,m,`:9552`]})})]})]})}),(0,a.jsx)(`div`,{className:`row`,children:c?(0,a.jsxs)(`div`,{className:`shown-once`,"data-testid":`onboarding-token`,children:[`Your ingest token (shown once; the snippets below hold it): `,(0,a.jsx)(`code`,{children:c})]}):g?(0,a.jsxs)(a.Fragment,{children:[(0,a.jsxs)(`label`,{children:[`Table`,(0,a.jsx)(`input`,{value:u,onChange:e=>d(e.target.value),"aria-label":`Table for the token`})]}),(0,a.jsxs)(`button`,{className:`primary`,onClick:async()=>{try{let e=await n.createIngestToken({name:`first-data-${t}-${new Date().toISOString().slice(0,10)}`,database:t,table:u});l(e.token)}catch(e){p(r(e))}},"data-testid":`onboarding-create-token`,children:[`Create an ingest token for `,t,`.`,u]})]}):(0,a.jsx)(`span`,{className:`muted`,children:`Ask an admin or maintainer for an ingest token for this database.`})}),f&&(0,a.jsx)(`div`,{className:`error`,children:f}),(0,a.jsx)(o,{title:`OpenTelemetry SDK (environment)`,text:`OTEL_EXPORTER_OTLP_ENDPOINT=http://${m}:4318
OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf
OTEL_EXPORTER_OTLP_HEADERS="authorization=Bearer%20${h}"
OTEL_SERVICE_NAME=my-service`}),(0,a.jsx)(o,{title:`OpenTelemetry Collector`,text:`exporters:
  otlphttp/trawl:
    endpoint: http://${m}:4318
    headers: {authorization: "Bearer ${h}"}
service:
  pipelines:
    logs: {receivers: [otlp], exporters: [otlphttp/trawl]}
    traces: {receivers: [otlp], exporters: [otlphttp/trawl]}
    metrics: {receivers: [otlp], exporters: [otlphttp/trawl]}`}),(0,a.jsx)(o,{title:`Promtail`,text:`clients:
  - url: http://${m}:4318/lgx/api/v1/push
    bearer_token: ${h}`}),(0,a.jsx)(o,{title:`Grafana Alloy`,text:`loki.write "trawl" {
  endpoint {
    url          = "http://${m}:4318/lgx/api/v1/push"
    bearer_token = "${h}"
  }
}`}),(0,a.jsx)(o,{title:`Datadog Agent (trawl serve --vendor-intake)`,text:`DD_API_KEY=${h}
DD_DD_URL=http://${m}:9552
DD_LOGS_CONFIG_LOGS_DD_URL=${m}:9552
DD_LOGS_CONFIG_USE_HTTP=true
DD_LOGS_CONFIG_LOGS_NO_SSL=true
DD_APM_DD_URL=http://${m}:9552`})]})}export{s as Onboarding};