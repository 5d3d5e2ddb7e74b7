//! The vendor-compatible intake router: keys (403), logs (202 `{}`), validate, discards, 404s.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use tower::ServiceExt;

use crate::TestResult;
use crate::support::ingest_setup;

#[tokio::test]
async fn keys_logs_validate_and_the_routes_not_served() -> TestResult {
    let setup = ingest_setup("vendor").await?;
    let key = setup.token.clone();
    let router = trawl_api::vendor::router(setup.state.clone());
    let call = |request: Request<Body>| {
        let router = router.clone();
        async move {
            let response = router.oneshot(request).await?;
            let status = response.status();
            let bytes = axum::body::to_bytes(response.into_body(), 1 << 20).await?;
            let body: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
            Ok::<_, Box<dyn std::error::Error>>((status, body))
        }
    };

    let (status, body) = call(
        Request::get("/api/v1/validate")
            .header("DD-API-KEY", &key)
            .body(Body::empty())?,
    )
    .await?;
    assert_eq!((status, body), (StatusCode::OK, serde_json::json!({"valid": true})));
    let by_query = format!("/api/v1/validate?api_key={key}");
    assert_eq!(
        call(Request::get(by_query.as_str()).body(Body::empty())?).await?.0,
        StatusCode::OK
    );
    let (status, body) = call(
        Request::get("/api/v1/validate")
            .header("VX-API-KEY", "wrong")
            .body(Body::empty())?,
    )
    .await?;
    assert_eq!(
        (status, body),
        (StatusCode::FORBIDDEN, serde_json::json!({"valid": false}))
    );

    let logs = serde_json::json!([{"message": "hello", "service": "agent", "ddtags": "env:test"}]).to_string();
    let compressed = zstd::encode_all(logs.as_bytes(), 1)?;
    let request = Request::post("/api/v2/logs")
        .header("VX-API-KEY", &key)
        .header("content-type", "application/json")
        .header("content-encoding", "zstd")
        .body(Body::from(compressed))?;
    let (status, body) = call(request).await?;
    assert_eq!((status, body), (StatusCode::ACCEPTED, serde_json::json!({})));
    let rows = setup.rows("vendor").await?;
    assert_eq!(rows, 1);

    let no_key = Request::post("/api/v2/logs").body(Body::from(logs.clone()))?;
    assert_eq!(call(no_key).await?.0, StatusCode::FORBIDDEN);
    let garbage = Request::post("/api/v2/logs")
        .header("DD-API-KEY", &key)
        .body(Body::from("{"))?;
    assert_eq!(call(garbage).await?.0, StatusCode::BAD_REQUEST);
    for path in ["/api/v1/check_run", "/intake/", "/api/v1/metadata", "/api/v0.2/stats"] {
        let request = Request::post(path).header("DD-API-KEY", &key).body(Body::from("{}"))?;
        assert_eq!(call(request).await?.0, StatusCode::ACCEPTED, "{path}");
    }
    for path in ["/api/v1/series", "/api/v1/distribution_points", "/nope"] {
        let request = Request::post(path).header("DD-API-KEY", &key).body(Body::from("{}"))?;
        assert_eq!(call(request).await?.0, StatusCode::NOT_FOUND, "{path}");
    }
    assert_eq!(
        call(Request::get("/_health").body(Body::empty())?).await?.0,
        StatusCode::OK
    );
    Ok(())
}

#[tokio::test]
async fn a_spent_budget_answers_503_with_retry_after() -> TestResult {
    let mut setup = ingest_setup("busy").await?;
    setup.state.door = setup.state.door.with_budget(trawl_ingest::ByteBudget::new(100));
    let _held = setup.state.door.hold(40)?;
    let logs = serde_json::json!([{"message": "x".repeat(100)}]).to_string();
    let vendor = trawl_api::vendor::router(setup.state.clone());
    let request = Request::post("/api/v2/logs")
        .header("DD-API-KEY", &setup.token)
        .body(Body::from(logs.clone()))?;
    let response = vendor.oneshot(request).await?;
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(response.headers().contains_key("retry-after"));
    let push = serde_json::json!({"streams": [{"stream": {}, "values": [["1", "x".repeat(100)]]}]}).to_string();
    let request = Request::post("/lgx/api/v1/push")
        .header("authorization", format!("Bearer {}", setup.token))
        .header("content-type", "application/json")
        .body(Body::from(push))?;
    let response = trawl_api::otlp_http::router(setup.state.clone())
        .oneshot(request)
        .await?;
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(response.headers().contains_key("retry-after"));
    assert_eq!(setup.rows("busy").await?, 0);
    Ok(())
}

/// Series v2, series v3, sketches and traces through the router, with a token that sends
/// metrics and traces to their own tables and logs to its table.
#[tokio::test]
async fn metrics_sketches_and_traces_go_to_their_signal_tables() -> TestResult {
    use prost::Message;
    use trawl_proto::vendor::agentpayload::metric_payload::{MetricPoint, MetricSeries};
    use trawl_proto::vendor::agentpayload::sketch_payload::{Sketch, sketch::Dogsketch};
    use trawl_proto::vendor::agentpayload::{MetricPayload, SketchPayload};
    use trawl_proto::vendor::metrics::v3;
    use trawl_proto::vendor::trace::{AgentPayload, Span, TraceChunk, TracerPayload};

    let tables = trawl_catalog::SignalTables {
        logs: None,
        metrics: Some("vx_metrics".into()),
        traces: Some("vx_spans".into()),
    };
    let setup = crate::support::ingest_setup_routed("vx_logs", tables).await?;
    let router = trawl_api::vendor::router(setup.state.clone());
    let post = |path: &'static str, body: Vec<u8>, encoding: Option<&'static str>| {
        let router = router.clone();
        let key = setup.token.clone();
        async move {
            let mut request = Request::post(path).header("DD-API-KEY", key);
            if let Some(encoding) = encoding {
                request = request.header("content-encoding", encoding);
            }
            let response = router.oneshot(request.body(Body::from(body))?).await?;
            let status = response.status();
            let bytes = axum::body::to_bytes(response.into_body(), 1 << 20).await?;
            Ok::<_, Box<dyn std::error::Error>>((status, String::from_utf8_lossy(&bytes).into_owned()))
        }
    };

    let series = MetricPayload {
        series: vec![MetricSeries {
            metric: "app.hits".into(),
            points: vec![
                MetricPoint {
                    value: 1.0,
                    timestamp: 1_700_000_000,
                },
                MetricPoint {
                    value: 2.0,
                    timestamp: 1_700_000_010,
                },
            ],
            r#type: 1,
            interval: 10,
            ..MetricSeries::default()
        }],
    };
    let mut deflated = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut deflated, &series.encode_to_vec())?;
    let (status, body) = post("/api/v2/series", deflated.finish()?, Some("deflate")).await?;
    assert_eq!((status, body.as_str()), (StatusCode::ACCEPTED, "{}"));

    let json_series = br#"{"series": [{"metric": "a", "points": [[1700000000, 1]]}]}"#.to_vec();
    let (status, body) = post("/api/v2/series", json_series, None).await?;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body.contains("JSON"), "{body}");

    let mut name_dict = vec![4];
    name_dict.extend_from_slice(b"v3.g");
    let v3_payload = v3::Payload {
        metadata: None,
        metric_data: Some(v3::MetricData {
            dict_name_str: name_dict,
            types: vec![0x33],
            name_refs: vec![1],
            tagset_refs: vec![0],
            resources_refs: vec![0],
            source_type_name_refs: vec![0],
            intervals: vec![0],
            num_points: vec![1],
            timestamps: vec![1_700_000_000],
            vals_float64: vec![0.5],
            ..v3::MetricData::default()
        }),
    };
    let compressed = zstd::encode_all(&v3_payload.encode_to_vec()[..], 1)?;
    let (status, _) = post("/api/intake/metrics/v3/series", compressed, Some("zstd")).await?;
    assert_eq!(status, StatusCode::ACCEPTED);
    let mut broken = v3_payload.clone();
    if let Some(data) = broken.metric_data.as_mut() {
        data.name_refs = vec![7];
    }
    let (status, body) = post("/api/intake/metrics/v3/series", broken.encode_to_vec(), None).await?;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body.contains("nameRefs"), "{body}");

    let sketches = SketchPayload {
        sketches: vec![Sketch {
            metric: "lat".into(),
            dogsketches: vec![Dogsketch {
                ts: 1_700_000_000,
                cnt: 1,
                min: 1.0,
                max: 1.0,
                sum: 1.0,
                avg: 1.0,
                k: vec![1338],
                n: vec![1],
            }],
            ..Sketch::default()
        }],
    };
    let (status, _) = post("/api/beta/sketches", sketches.encode_to_vec(), None).await?;
    assert_eq!(status, StatusCode::ACCEPTED);

    let traces = AgentPayload {
        tracer_payloads: vec![TracerPayload {
            chunks: vec![TraceChunk {
                spans: vec![Span {
                    service: "api".into(),
                    name: "op".into(),
                    trace_id: 5,
                    span_id: 6,
                    start: 1_700_000_000_000_000_000,
                    duration: 10,
                    ..Span::default()
                }],
                ..TraceChunk::default()
            }],
            ..TracerPayload::default()
        }],
        ..AgentPayload::default()
    };
    let mut gzipped = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gzipped, &traces.encode_to_vec())?;
    let (status, _) = post("/api/v0.2/traces", gzipped.finish()?, Some("gzip")).await?;
    assert_eq!(status, StatusCode::ACCEPTED);
    let mut all_bad = traces.clone();
    all_bad.tracer_payloads[0].chunks[0].spans[0].span_id = 0;
    let (status, body) = post("/api/v0.2/traces", all_bad.encode_to_vec(), None).await?;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body.contains("span id is zero"), "{body}");

    let logs = serde_json::json!([{"message": "to the token's table"}])
        .to_string()
        .into_bytes();
    let (status, _) = post("/api/v2/logs", logs, None).await?;
    assert_eq!(status, StatusCode::ACCEPTED);

    assert_eq!(setup.rows("vx_metrics").await?, 4, "2 v2 points, 1 v3 point, 1 sketch");
    assert_eq!(setup.rows("vx_spans").await?, 1);
    assert_eq!(setup.rows("vx_logs").await?, 1);
    Ok(())
}
