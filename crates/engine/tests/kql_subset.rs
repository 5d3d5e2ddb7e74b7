//! The first KQL subset, end to end over real segments.

use serde_json::json;
use trawl_common::ErrorCode;
use trawl_engine::QueryWindow;

use crate::fixture::{Fixture, MINUTE, T0, TestResult, log, span};

async fn sample() -> Result<Fixture, Box<dyn std::error::Error>> {
    let fixture = Fixture::new().await?;
    fixture
        .segment(vec![
            log(0, "INFO", "user login ok", "auth", Some("/login")),
            log(1, "ERROR", "Connection reset by peer", "checkout", Some("/api/x")),
            log(2, "ERROR", "deadlock detected in tx 42", "checkout", Some("/api/y")),
        ])
        .await?;
    fixture
        .segment(vec![
            log(3, "WARN", "slow query", "auth", None),
            span(4, "GET /api/x", "aaaa", 250, "checkout"),
            span(5, "SELECT", "aaaa", 10, "db"),
        ])
        .await?;
    Ok(fixture)
}

#[tokio::test]
async fn count_and_where() -> TestResult {
    let f = sample().await?;
    assert_eq!(f.rows("default | count").await?, vec![vec![json!(6)]]);
    assert_eq!(
        f.rows("default | where severity_text == 'ERROR' | count").await?,
        vec![vec![json!(2)]]
    );
    assert_eq!(
        f.rows("default | where isnotempty(body) | count").await?,
        vec![vec![json!(4)]]
    );
    assert_eq!(
        f.rows("default | where isempty(body) | count").await?,
        vec![vec![json!(2)]]
    );
    // Strings are never null: spans have no severity, which equals "" and differs from "ERROR".
    assert_eq!(
        f.rows("default | where severity_text != 'ERROR' | count").await?,
        vec![vec![json!(4)]]
    );
    assert_eq!(
        f.rows("default | where severity_text == '' | count").await?,
        vec![vec![json!(2)]]
    );
    assert_eq!(
        f.rows("default | where severity_text =~ 'error' | count").await?,
        vec![vec![json!(2)]]
    );
    assert_eq!(
        f.rows("default | where severity_text in ('WARN', 'INFO') | count")
            .await?,
        vec![vec![json!(2)]]
    );
    assert_eq!(
        f.rows("default | where not(severity_text in ('WARN', 'INFO')) and isnotempty(severity_text) | count")
            .await?,
        vec![vec![json!(2)]]
    );
    assert_eq!(
        f.rows("default | where severity_text == 'ERROR' or span_name == 'SELECT' | count")
            .await?,
        vec![vec![json!(3)]]
    );
    Ok(())
}

#[tokio::test]
async fn has_contains_and_dynamic_access() -> TestResult {
    let f = sample().await?;
    assert_eq!(
        f.rows("default | where body has 'reset' | count").await?,
        vec![vec![json!(1)]]
    );
    assert_eq!(
        f.rows("default | where body has 'RESET' | count").await?,
        vec![vec![json!(1)]]
    );
    assert_eq!(
        f.rows("default | where body has 'rese' | count").await?,
        vec![vec![json!(0)]]
    );
    assert_eq!(
        f.rows("default | where body contains 'rese' | count").await?,
        vec![vec![json!(1)]]
    );
    assert_eq!(
        f.rows("default | where body !contains 'e' | count").await?,
        vec![vec![json!(2)]]
    );
    assert_eq!(
        f.rows("default | where attributes['http.route'] == '/api/x' | count")
            .await?,
        vec![vec![json!(1)]]
    );
    assert_eq!(
        f.rows("default | where resource['service.name'] == 'checkout' | summarize count() by tostring(resource['service.name'])").await?,
        vec![vec![json!("checkout"), json!(3)]]
    );
    assert_eq!(
        f.rows("default | where toint(attributes['http.status_code']) >= 500 | count")
            .await?,
        vec![vec![json!(3)]]
    );
    assert_eq!(
        f.rows("default | where span_name == 'GET /api/x' | project attributes, r = resource")
            .await?,
        vec![vec![json!(null), json!({"service.name": "checkout"})]]
    );
    Ok(())
}

#[tokio::test]
async fn project_extend_sort_take() -> TestResult {
    let f = sample().await?;
    let (columns, rows) = f
        .run("default | where isnotempty(span_name) | extend ms = duration / 1ms | project span_name, duration, ms | sort by duration asc")
        .await?;
    assert_eq!(
        columns,
        vec![
            ("span_name".into(), "string".into()),
            ("duration".into(), "timespan".into()),
            ("ms".into(), "real".into())
        ]
    );
    assert_eq!(
        rows,
        vec![
            vec![json!("SELECT"), json!("00:00:00.0100000"), json!(10.0)],
            vec![json!("GET /api/x"), json!("00:00:00.2500000"), json!(250.0)]
        ]
    );
    // sort defaults to descending; take limits.
    let rows = f
        .rows("default | sort by timestamp | take 2 | project timestamp")
        .await?;
    assert_eq!(
        rows,
        vec![
            vec![json!("2023-11-14T22:18:20.0000000Z")],
            vec![json!("2023-11-14T22:17:20.0000000Z")]
        ]
    );
    let rows = f
        .rows("default | where isnotempty(severity_text) | top 1 by timestamp asc | project severity_text")
        .await?;
    assert_eq!(rows, vec![vec![json!("INFO")]]);
    Ok(())
}

#[tokio::test]
async fn summarize_count_dcount_and_bin() -> TestResult {
    let f = sample().await?;
    let rows = f.rows("default | where isnotempty(severity_text) | summarize count() by severity_text | sort by count_ desc, severity_text asc").await?;
    assert_eq!(
        rows,
        vec![
            vec![json!("ERROR"), json!(2)],
            vec![json!("INFO"), json!(1)],
            vec![json!("WARN"), json!(1)]
        ]
    );
    let rows = f
        .rows("default | summarize services = dcount(tostring(resource['service.name']))")
        .await?;
    assert_eq!(rows, vec![vec![json!(3)]]);
    // Stored rows know when they were ingested.
    let rows = f
        .rows("default | summarize min(ingestion_time()), max(ingestion_time())")
        .await?;
    assert_eq!(
        rows,
        vec![vec![
            json!("2023-11-14T22:13:20.0000000Z"),
            json!("2023-11-14T22:13:20.0000000Z")
        ]]
    );
    // Reals and bools are counted too (0 and -0 are one value).
    let rows = f
        .rows(
            "datatable(r:real, b:bool)[1.5, true, 1.5, false, 0.0, true, -0.0, true, 2.25, false] \
             | summarize dcount(r), dcount(b), dcountif(r, b)",
        )
        .await?;
    assert_eq!(rows, vec![vec![json!(3), json!(2), json!(2)]]);
    let (columns, rows) = f
        .run("default | summarize n = count() by bin(timestamp, 2m) | sort by timestamp asc")
        .await?;
    assert_eq!(columns[0], ("timestamp".into(), "datetime".into()));
    // Minutes 0..5 after 22:13:20 fall in the 2-minute bins starting 22:12, 22:14, 22:16, 22:18.
    let counts: Vec<_> = rows.iter().map(|r| (r[0].clone(), r[1].clone())).collect();
    assert_eq!(
        counts,
        vec![
            (json!("2023-11-14T22:12:00.0000000Z"), json!(1)),
            (json!("2023-11-14T22:14:00.0000000Z"), json!(2)),
            (json!("2023-11-14T22:16:00.0000000Z"), json!(2)),
            (json!("2023-11-14T22:18:00.0000000Z"), json!(1)),
        ]
    );
    Ok(())
}

#[tokio::test]
async fn random_values_differ_from_row_to_row() -> TestResult {
    let f = Fixture::new().await?;
    let rows = f
        .rows(
            "range x from 1 to 50 step 1 | extend r = rand(), n = rand(1000000), g = new_guid() \
             | summarize countif(r >= 0 and r < 1), countif(n >= 0 and n < 1000000 and n == floor(n, 1))",
        )
        .await?;
    assert_eq!(rows, vec![vec![json!(50), json!(50)]]);
    for column in ["rand()", "new_guid()"] {
        let query = format!("range x from 1 to 50 step 1 | extend v = {column} | distinct v | count");
        assert_eq!(f.rows(&query).await?, vec![vec![json!(50)]], "{column}");
    }
    Ok(())
}

#[tokio::test]
async fn percentiles_share_one_sketch_and_keep_their_types() -> TestResult {
    let f = Fixture::new().await?;
    // Each percentile of `percentiles` reads the sketch every one of them shares; it must be
    // what `percentilew(x, 1, p)` gives on its own digest, in the type of the values.
    let (columns, rows) = f
        .run(
            "range x from 1 to 5000 step 1 | extend r = x * 0.5, d = x * 1ms, i = toint(x) \
             | summarize percentiles(x, 50, 95, 99), w50 = percentilew(x, 1, 50), w95 = percentilew(x, 1, 95), \
             w99 = percentilew(x, 1, 99), pr = percentile(r, 90), wr = percentilew(r, 1, 90), \
             percentiles(d, 10, 50), wd = percentilew(d, 1, 50), pi = percentile(i, 75), c1 = count(), c2 = count()",
        )
        .await?;
    let names: Vec<&str> = columns.iter().map(|(name, _)| name.as_str()).collect();
    let types: Vec<&str> = columns.iter().map(|(_, kql_type)| kql_type.as_str()).collect();
    assert_eq!(
        names,
        [
            "percentile_x_50",
            "percentile_x_95",
            "percentile_x_99",
            "w50",
            "w95",
            "w99",
            "pr",
            "wr",
            "percentile_d_10",
            "percentile_d_50",
            "wd",
            "pi",
            "c1",
            "c2"
        ]
    );
    assert_eq!(
        types,
        [
            "long", "long", "long", "long", "long", "long", "real", "real", "timespan", "timespan", "timespan", "int",
            "long", "long"
        ]
    );
    let row = &rows[0];
    assert_eq!(row[0..3], row[3..6], "{row:?}");
    assert_eq!(row[6], row[7], "{row:?}");
    assert_eq!(row[9], row[10], "{row:?}");
    assert_eq!(row[12], json!(5000));
    assert_eq!(row[13], json!(5000));
    // On 5,000 distinct values the digest is within a percent of the exact rank.
    for (at, exact) in [(0, 2500.0), (1, 4750.0), (2, 4950.0), (11, 3750.0)] {
        let value = row[at].as_f64().ok_or("not a number")?;
        assert!((value - exact).abs() <= 50.0, "{at}: {value} vs {exact}");
    }
    let ten = row[8].as_str().ok_or("not a timespan")?;
    assert!(
        ten.starts_with("00:00:00.49") || ten.starts_with("00:00:00.50"),
        "{ten}"
    );
    // Few values: exact nearest rank, and the sketch of no values gives nulls.
    let rows = f
        .rows("range x from 1 to 10 step 1 | summarize percentiles(x, 0, 50, 100), p = percentile(x, 95)")
        .await?;
    assert_eq!(rows, vec![vec![json!(1), json!(5), json!(10), json!(10)]]);
    let rows = f
        .rows("range x from 1 to 10 step 1 | where x > 100 | summarize percentiles(x, 50, 90)")
        .await?;
    assert_eq!(rows, vec![vec![json!(null), json!(null)]]);
    Ok(())
}

#[tokio::test]
async fn term_prefixes_modulo_constant_counts_and_deprecated_names() -> TestResult {
    let f = Fixture::new().await?;
    let rows = f
        .rows(
            "datatable(s:string)['North Dakota', 'south-dakota', 'Dakar'] \
             | project s, p = s hasprefix 'dak', q = s hassuffix 'ota', r = s !hasprefix_cs 'Dak', \
               t = s hassuffix_cs 'Dakota'",
        )
        .await?;
    assert_eq!(
        rows,
        vec![
            vec![
                json!("North Dakota"),
                json!(true),
                json!(true),
                json!(false),
                json!(true)
            ],
            vec![
                json!("south-dakota"),
                json!(true),
                json!(true),
                json!(true),
                json!(false)
            ],
            vec![json!("Dakar"), json!(true), json!(false), json!(false), json!(false)],
        ]
    );
    let rows = f
        .rows("print a = 14 % 12, b = -14 % 12, c = 14 % -12, d = -14 % -12, e = -2.5 % 2.0")
        .await?;
    assert_eq!(rows, vec![vec![json!(2), json!(10), json!(2), json!(10), json!(1.5)]]);
    let rows = f
        .rows("let n = 2; range x from 1 to 10 step 1 | take n * 2 | count")
        .await?;
    assert_eq!(rows, vec![vec![json!(4)]]);
    let error = f
        .run("let n = -1; range x from 1 to 10 step 1 | take n")
        .await
        .err()
        .ok_or("expected an error")?;
    assert_eq!(error.code, ErrorCode::BadRequest);
    let rows = f.rows("print a = row_number(), b = prev(1)").await?;
    assert_eq!(rows, vec![vec![json!(1), json!(null)]]);
    let rows = f
        .rows(
            "datatable(x:long, k:string)[1, 'a', long(null), 'a', 3, 'b'] \
             | summarize l = make_list_with_nulls(x), m = makelist(x), t = take_anyif(k, x == 3), \
               u = anyif(k, x > 5)",
        )
        .await?;
    assert_eq!(
        rows,
        // No row passes `u`'s predicate: a string is never null, so it is empty.
        vec![vec![json!([1, null, 3]), json!([1, 3]), json!("b"), json!("")]]
    );
    let rows = f
        .rows("datatable(x:long, k:string)[1, 'a', 3, 'b'] | summarize argmax(x, k)")
        .await?;
    assert_eq!(rows, vec![vec![json!(3), json!("b")]]);
    let rows = f
        .rows("print parsejson('{\"a\":1}').a, notempty('x'), arraylength(dynamic([1,2]))")
        .await?;
    assert_eq!(rows, vec![vec![json!(1), json!(true), json!(2)]]);
    let rows = f.rows("let x = 5; print toscalar(2), toscalar(x * 2)").await?;
    assert_eq!(rows, vec![vec![json!(2), json!(10)]]);
    let rows = f
        .rows("datatable(Id:string, Value:string, Other:long)['A', 'val_a', 1] | project Packed = bag_pack_columns(Id, Value)")
        .await?;
    assert_eq!(rows, vec![vec![json!({"Id": "A", "Value": "val_a"})]]);
    let rows = f
        .rows(
            "print a = extract_json('$.a', '{\"a\": 7, \"b\": [1, 2]}', typeof(long)) + 1, \
             b = extractjson('$.b[1]', '{\"a\": 7, \"b\": [1, 2]}'), \
             c = extract_json('$.a', '{\"a\": 7}', typeof(real))",
        )
        .await?;
    assert_eq!(rows, vec![vec![json!(8), json!("2"), json!(7.0)]]);
    // Weighted percentiles as one array: 1 weighs 1, 10 weighs 9.
    let rows = f
        .rows("datatable(v:long, w:long)[1, 1, 10, 9] | summarize percentilesw_array(v, w, 5, 50, 100)")
        .await?;
    assert_eq!(rows, vec![vec![json!([1, 10, 10])]]);
    let rows = f.rows("print ingestion_time()").await?;
    assert_eq!(rows, vec![vec![json!(null)]]);
    let check = "let checkLength = (len:long, s:string) { assert(len > 0, 'Length must be greater than zero') and strlen(s) > len }; \
                 datatable(input:string)['123', '4567']";
    let rows = f
        .rows(&format!("{check} | where checkLength(len=long(3), input)"))
        .await?;
    assert_eq!(rows, vec![vec![json!("4567")]]);
    let error = f
        .run(&format!("{check} | where checkLength(len=long(-1), input)"))
        .await
        .err()
        .ok_or("expected an error")?;
    assert_eq!(error.code, ErrorCode::BadRequest);
    assert!(
        error
            .message
            .contains("assert() has failed with message: 'Length must be greater than zero'"),
        "{}",
        error.message
    );
    let error = f
        .run("datatable(x:long)[1] | where assert(x > 0, 'row-bound')")
        .await
        .err()
        .ok_or("expected an error")?;
    assert_eq!(error.code, ErrorCode::BadRequest);
    let rows = f.rows("print current_database()").await?;
    assert_eq!(rows, vec![vec![json!("default")]]);
    Ok(())
}

#[tokio::test]
async fn a_function_that_refuses_its_arguments_is_a_bad_request() -> TestResult {
    let f = Fixture::new().await?;
    for query in [
        "datatable(x:long)[1, 2] | summarize hll_merge(x)",
        "datatable(x:long)[1, 2] | summarize tdigest_merge(x)",
        "print repeat(1, 10000000000)",
    ] {
        let error = f.run(query).await.err().ok_or("expected an error")?;
        assert_eq!(error.code, ErrorCode::BadRequest, "{query}: {}", error.message);
    }
    Ok(())
}

#[tokio::test]
async fn time_window_prunes_segments() -> TestResult {
    let f = sample().await?;
    let window = QueryWindow {
        since: Some(T0 + 3 * MINUTE),
        until: Some(T0 + 5 * MINUTE),
    };
    let (_, rows) = f.run_window("default | count", window).await?;
    assert_eq!(rows, vec![vec![json!(2)]]);
    let window = QueryWindow {
        since: Some(T0 + 100 * MINUTE),
        until: None,
    };
    let (_, rows) = f.run_window("default | count", window).await?;
    assert_eq!(rows, vec![vec![json!(0)]]);
    Ok(())
}

#[tokio::test]
async fn declared_query_parameters_take_the_request_values_or_defaults() -> TestResult {
    let f = Fixture::new().await?;
    let run = |text: &str, given: &[(&str, &str)]| {
        let request = trawl_engine::QueryRequest {
            text: text.to_string(),
            database: "default".into(),
            window: trawl_engine::QueryWindow::default(),
            parameters: given.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        };
        let engine = f.engine.clone();
        async move {
            engine
                .execute(&request)
                .await
                .map(|output| output.tables[0].json_rows())
        }
    };
    let query = "declare query_parameters(n:long, s:string, d:datetime, t:timespan, q:string, k:long = 7); \
                 print n, s, d, t, q, k";
    let given = [
        ("n", "5"),
        ("s", "hello world"),
        ("d", "2024-01-02"),
        ("t", "1h"),
        ("q", "'quoted'"),
    ];
    let rows = run(query, &given).await?;
    assert_eq!(
        rows,
        vec![vec![
            json!(5),
            json!("hello world"),
            json!("2024-01-02T00:00:00.0000000Z"),
            json!("01:00:00"),
            json!("quoted"),
            json!(7)
        ]]
    );
    let rows = run(
        "declare query_parameters(n:long = 1); range x from 1 to 10 step 1 | where x > n | count",
        &[("n", "8")],
    )
    .await?;
    assert_eq!(rows, vec![vec![json!(2)]]);
    for (query, given) in [
        ("declare query_parameters(n:long); print n", &[][..]),
        ("declare query_parameters(n:long); print n", &[("n", "five")][..]),
        (
            "declare query_parameters(d:datetime); print d",
            &[("d", "yesterday-ish")][..],
        ),
    ] {
        let error = run(query, given).await.err().ok_or("expected an error")?;
        assert_eq!(error.code, ErrorCode::BadRequest, "{query}: {}", error.message);
    }
    Ok(())
}

#[tokio::test]
async fn unknown_names_suggest_the_closest_known_one() -> TestResult {
    let f = sample().await?;
    for (query, code, suggestion) in [
        (
            "default | where timestmp > ago(1h)",
            ErrorCode::UnknownColumn,
            Some("timestamp"),
        ),
        ("default | project Body", ErrorCode::UnknownColumn, Some("body")),
        ("let limit = 3; print x = limt", ErrorCode::UnknownColumn, Some("limit")),
        ("print strlenn('a')", ErrorCode::UnknownFunction, Some("strlen")),
        ("print tostrin(1)", ErrorCode::UnknownFunction, Some("tostring")),
        (
            "default | summarize countt()",
            ErrorCode::UnknownFunction,
            Some("count"),
        ),
        ("default | project nothinglikeit", ErrorCode::UnknownColumn, None),
    ] {
        let error = f.run(query).await.err().ok_or("expected an error")?;
        assert_eq!(error.code, code, "{query}");
        assert_eq!(error.suggestion.as_deref(), suggestion, "{query}: {}", error.message);
        if let Some(suggestion) = suggestion {
            assert!(
                error.message.ends_with(&format!("did you mean '{suggestion}'?")),
                "{}",
                error.message
            );
        }
    }
    Ok(())
}

#[tokio::test]
async fn errors_have_codes_and_locations() -> TestResult {
    let f = sample().await?;
    let error = f.run("nosuchtable | count").await.err().ok_or("expected an error")?;
    assert_eq!(error.code, ErrorCode::UnknownTable);
    assert_eq!(error.location.map(|l| (l.start_byte, l.end_byte)), Some((0, 11)));
    let error = f
        .run("default | where nosuchcolumn == 1")
        .await
        .err()
        .ok_or("expected an error")?;
    assert_eq!(error.code, ErrorCode::UnknownColumn);
    let error = f
        .run("default | where body has 5")
        .await
        .err()
        .ok_or("expected an error")?;
    assert_eq!(error.code, ErrorCode::TypeMismatch);
    let error = f
        .run("default | where severity_text ==")
        .await
        .err()
        .ok_or("expected an error")?;
    assert_eq!(error.code, ErrorCode::SyntaxError);
    assert!(error.location.is_some());
    let error = f
        .run("default | summarize nosuchagg(x)")
        .await
        .err()
        .ok_or("expected an error")?;
    assert_eq!(error.code, ErrorCode::UnknownFunction);
    Ok(())
}

#[tokio::test]
async fn dotted_path_reads_nested_objects_and_warns() -> TestResult {
    let f = sample().await?;
    let output = f
        .execute("default | where resource.service.name == 'checkout' | count")
        .await?;
    assert_eq!(output.tables[0].json_rows(), vec![vec![json!(0)]]);
    assert_eq!(output.warnings.len(), 1);
    assert!(output.warnings[0].message.contains("resource['service.name']"));
    Ok(())
}

#[tokio::test]
async fn bag_unpack_discovers_keys_from_stored_rows() -> TestResult {
    let f = sample().await?;
    let (columns, rows) = f
        .run("default | where isnotempty(attributes) | project timestamp, attributes | evaluate bag_unpack(attributes) | sort by timestamp asc | project-away timestamp")
        .await?;
    assert_eq!(
        columns,
        vec![
            ("http.route".into(), "string".into()),
            ("http.status_code".into(), "long".into())
        ]
    );
    assert_eq!(
        rows,
        vec![
            vec![json!("/login"), json!(500)],
            vec![json!("/api/x"), json!(500)],
            vec![json!("/api/y"), json!(500)],
        ]
    );
    Ok(())
}

#[tokio::test]
async fn fork_names_one_result_per_branch() -> TestResult {
    let f = sample().await?;
    let output = f
        .execute(
            "default | where isnotempty(severity_text) \
               | fork (summarize n = count()) errors = (where severity_text == 'ERROR' | project body) \
               (take 1 | as one)",
        )
        .await?;
    let names: Vec<&str> = output.tables.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["GenericResult_1", "errors", "one"]);
    assert_eq!(output.tables[0].json_rows(), vec![vec![json!(4)]]);
    assert_eq!(output.tables[1].json_rows().len(), 2);
    assert_eq!(output.tables[2].json_rows().len(), 1);
    // fork ends a statement.
    let misplaced = f.run("default | fork (count) (take 1) | count").await;
    assert_eq!(misplaced.err().map(|e| e.code), Some(ErrorCode::BadRequest));
    Ok(())
}

#[tokio::test]
async fn a_summarize_over_its_memory_budget_drops_whole_groups_and_warns() -> TestResult {
    let f = Fixture::with_config(trawl_engine::EngineConfig {
        summarize_memory_limit_bytes: 1 << 20,
        target_partitions: 2,
        ..trawl_engine::EngineConfig::default()
    })
    .await?;
    let output = f
        .execute(
            "range x from 1 to 300000 step 1 | extend k = strcat('key-', x) \
               | summarize n = count(), s = sum(x) by k",
        )
        .await?;
    let rows = output.tables[0].json_rows();
    assert!(!rows.is_empty() && rows.len() < 300_000, "{} groups", rows.len());
    // Whole groups: each kept key has its one row and its own value.
    for row in &rows {
        assert_eq!(row[1], json!(1), "{row:?}");
        let key = row[0].as_str().ok_or("a key")?;
        assert_eq!(format!("key-{}", row[2]), key);
    }
    let kinds: Vec<&str> = output.warnings.iter().map(|w| w.kind.as_str()).collect();
    assert_eq!(kinds, ["SummarizeMemoryLimit"], "{:?}", output.warnings);
    // Within the budget: every group, no warning.
    let small = f
        .run("range x from 1 to 1000 step 1 | summarize n = count() by x | count")
        .await?;
    assert_eq!(small.1, vec![vec![json!(1000)]]);
    Ok(())
}

#[tokio::test]
async fn a_materialized_value_is_computed_once_for_all_its_readers() -> TestResult {
    let f = Fixture::new().await?;
    // sample and rand() give one answer to both references.
    let one = f
        .rows("let m = materialize(range x from 1 to 1000 step 1 | sample 1); union m, m | distinct x | count")
        .await?;
    assert_eq!(one, vec![vec![json!(1)]]);
    let same = f
        .rows(
            "let m = materialize(range x from 1 to 100 step 1 | extend r = rand()); \
             m | join kind=inner (m) on x | where r != r1 | count",
        )
        .await?;
    assert_eq!(same, vec![vec![json!(0)]]);
    // Inside a function, each call's own value.
    let per_call = f
        .rows(
            "let f = (n:long) { materialize(range x from 1 to n step 1) }; \
             union f(2), f(3) | count",
        )
        .await?;
    assert_eq!(per_call, vec![vec![json!(5)]]);
    Ok(())
}

#[tokio::test]
async fn a_materialized_value_larger_than_the_query_memory_is_refused() -> TestResult {
    let f = Fixture::with_config(trawl_engine::EngineConfig {
        query_memory_limit_bytes: 1 << 20,
        ..trawl_engine::EngineConfig::default()
    })
    .await?;
    let error = f
        .run("let m = materialize(range x from 1 to 400000 step 1 | extend s = strcat('row ', x)); m | count")
        .await
        .err()
        .ok_or("refused")?;
    assert_eq!(error.code, ErrorCode::BadRequest);
    assert!(error.message.contains("materialize"), "{}", error.message);
    Ok(())
}
