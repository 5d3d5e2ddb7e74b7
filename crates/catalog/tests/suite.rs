//! The catalog suite: every test runs on each backend the catalog has — SQLite (a file in a
//! temporary directory, as `trawl serve` keeps it) and PostgreSQL (a fresh schema on the
//! server `TRAWL_TEST_POSTGRES_URL` names; `scripts/test.sh` starts a throwaway one with
//! `scripts/postgres.sh`). Without that variable PostgreSQL is left out, except under
//! `CI=true`, where its absence fails the suite.

use std::sync::atomic::{AtomicU32, Ordering};

use trawl_catalog::{
    AccessTokenRecord, Catalog, Change, ColumnInfo, Dialect, Directory, GatewayKeyRecord, IngestTokenRecord,
    ObjectKind, Objects, Principal, PrincipalKind, SegmentMeta, SegmentState, SignalTables, SqlCatalog, TableInfo,
    TimeRange,
};
use trawl_common::KqlType;
use trawl_common::role::Role;

type TestResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

/// A catalog on one backend, and what keeps it alive.
struct Backend {
    catalog: SqlCatalog,
    _dir: Option<tempfile::TempDir>,
}

static SCHEMAS: AtomicU32 = AtomicU32::new(0);

async fn backends() -> Result<Vec<Backend>, Box<dyn std::error::Error + Send + Sync>> {
    let dir = tempfile::tempdir()?;
    let sqlite = SqlCatalog::open_sqlite(&dir.path().join("catalog.db")).await?;
    let mut backends = vec![Backend {
        catalog: sqlite,
        _dir: Some(dir),
    }];
    match std::env::var("TRAWL_TEST_POSTGRES_URL") {
        Ok(url) if !url.is_empty() => backends.push(Backend {
            catalog: postgres(&url).await?,
            _dir: None,
        }),
        _ if std::env::var("CI").is_ok_and(|v| v == "true") => {
            return Err(
                "the catalog suite needs PostgreSQL under CI: set TRAWL_TEST_POSTGRES_URL (scripts/test.sh does)"
                    .into(),
            );
        }
        _ => {}
    }
    Ok(backends)
}

/// A catalog in a schema of its own on the PostgreSQL server at `url`.
async fn postgres(url: &str) -> Result<SqlCatalog, Box<dyn std::error::Error + Send + Sync>> {
    let schema = format!(
        "suite_{}_{}_{}",
        std::process::id(),
        SCHEMAS.fetch_add(1, Ordering::Relaxed),
        trawl_common::time::now_nanos() % 1_000_000_007
    );
    let admin = sqlx::postgres::PgPool::connect(url).await?;
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}")))
        .execute(&admin)
        .await?;
    admin.close().await;
    let separator = if url.contains('?') { '&' } else { '?' };
    let url = format!("{url}{separator}options=-c%20search_path%3D{schema}");
    let catalog = SqlCatalog::connect_postgres(&url).await?;
    assert_eq!(catalog.dialect(), Dialect::Postgres);
    Ok(catalog)
}

/// Runs a test on every backend, naming the backend that failed.
macro_rules! on_every_backend {
    ($($name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $name() -> TestResult {
                for backend in backends().await? {
                    let dialect = backend.catalog.dialect();
                    if let Err(error) = tests::$name(backend.catalog.clone()).await {
                        return Err(format!("{dialect:?}: {error}").into());
                    }
                }
                Ok(())
            }
        )*
    };
}

on_every_backend!(
    registers_segments_and_widens_columns,
    merge_commit_is_atomic,
    ingest_commits_are_idempotent_and_remember_their_requests,
    tokens_principals_and_keys_round_trip,
    deletes_are_tombstones_that_restore_within_the_window,
    purge_and_retention_turn_segments_into_tombstones,
    concurrent_commits_lose_no_segment_and_no_column,
    concurrent_merges_of_the_same_segments_commit_once,
    a_lease_has_one_holder_until_it_runs_out_or_is_released,
    segment_paths_name_every_registered_object,
    operations_are_listed_newest_first_for_a_week,
);

fn segment(id: &str, table: &str, min: i64, max: i64, columns: &[(&str, KqlType)]) -> SegmentMeta {
    SegmentMeta {
        id: id.to_string(),
        database: "default".into(),
        table: table.into(),
        path: format!("default/{table}/{id}.parquet"),
        min_time: min,
        max_time: max,
        rows: 10,
        bytes: 100,
        columns: columns
            .iter()
            .map(|(name, kql_type)| ColumnInfo {
                name: name.to_string(),
                kql_type: *kql_type,
            })
            .collect(),
        merge_level: 0,
        state: SegmentState::Live,
        created_at: 1,
        tombstoned_at: None,
        signal: None,
    }
}

fn names(tables: Vec<TableInfo>) -> Vec<String> {
    tables.into_iter().map(|t| t.name).collect()
}

async fn live_ids(catalog: &SqlCatalog, table: &str) -> Result<Vec<String>, trawl_catalog::CatalogError> {
    Ok(catalog
        .live_segments("default", table, None)
        .await?
        .into_iter()
        .map(|s| s.id)
        .collect())
}

mod tests {
    use super::*;

    pub async fn registers_segments_and_widens_columns(catalog: SqlCatalog) -> TestResult {
        catalog
            .commit_segments(
                &[segment(
                    "a",
                    "default",
                    0,
                    10,
                    &[("timestamp", KqlType::DateTime), ("value", KqlType::Long)],
                )],
                &[],
            )
            .await?;
        catalog
            .commit_segments(
                &[segment(
                    "b",
                    "default",
                    20,
                    30,
                    &[("value", KqlType::Real), ("body", KqlType::Dynamic)],
                )],
                &[],
            )
            .await?;
        let table = catalog.table("default", "default").await?.ok_or("missing table")?;
        let columns: Vec<(&str, KqlType)> = table.columns.iter().map(|c| (c.name.as_str(), c.kql_type)).collect();
        assert_eq!(
            columns,
            vec![
                ("timestamp", KqlType::DateTime),
                ("value", KqlType::Real),
                ("body", KqlType::Dynamic)
            ]
        );
        let overlapping = catalog
            .live_segments("default", "default", Some(TimeRange { min: 5, max: 15 }))
            .await?;
        assert_eq!(overlapping.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(), vec!["a"]);
        // Values round-trip whole, nanosecond timestamps and the signal included.
        let big = SegmentMeta {
            signal: Some(trawl_common::Signal::Traces),
            ..segment(
                "c",
                "default",
                i64::MIN + 1,
                i64::MAX - 1,
                &[("timestamp", KqlType::DateTime)],
            )
        };
        catalog.commit_segments(std::slice::from_ref(&big), &[]).await?;
        let found = catalog.live_segments("default", "default", None).await?;
        assert_eq!(found.iter().find(|s| s.id == "c"), Some(&big));
        assert_eq!(catalog.databases().await?, vec!["default".to_string()]);

        // Every table with its columns in their order, a table without columns included.
        catalog
            .commit_segments(
                &[segment(
                    "d",
                    "spans",
                    0,
                    10,
                    &[("timestamp", KqlType::DateTime), ("name", KqlType::String)],
                )],
                &[],
            )
            .await?;
        assert_eq!(catalog.create_table("default", "bare", None, 1).await?, Change::Done);
        let tables: Vec<(String, Vec<(String, KqlType)>)> = catalog
            .tables("default")
            .await?
            .into_iter()
            .map(|t| (t.name, t.columns.into_iter().map(|c| (c.name, c.kql_type)).collect()))
            .collect();
        let typed = |columns: &[(&str, KqlType)]| columns.iter().map(|(n, t)| (n.to_string(), *t)).collect::<Vec<_>>();
        assert_eq!(
            tables,
            vec![
                ("bare".to_string(), Vec::new()),
                (
                    "default".to_string(),
                    typed(&[
                        ("timestamp", KqlType::DateTime),
                        ("value", KqlType::Real),
                        ("body", KqlType::Dynamic)
                    ])
                ),
                (
                    "spans".to_string(),
                    typed(&[("timestamp", KqlType::DateTime), ("name", KqlType::String)])
                ),
            ]
        );
        Ok(())
    }

    pub async fn merge_commit_is_atomic(catalog: SqlCatalog) -> TestResult {
        let cols = [("timestamp", KqlType::DateTime)];
        catalog
            .commit_segments(
                &[
                    segment("a", "default", 0, 10, &cols),
                    segment("b", "default", 11, 20, &cols),
                ],
                &[],
            )
            .await?;
        catalog
            .commit_segments(&[segment("m", "default", 0, 20, &cols)], &["a".into(), "b".into()])
            .await?;
        assert_eq!(live_ids(&catalog, "default").await?, vec!["m".to_string()]);
        // A second merge of an already tombstoned input fails and changes nothing.
        let failed = catalog
            .commit_segments(&[segment("m2", "default", 0, 20, &cols)], &["a".into()])
            .await;
        assert!(failed.is_err());
        assert_eq!(live_ids(&catalog, "default").await?, vec!["m".to_string()]);
        let dead = catalog.tombstoned_before(i64::MAX).await?;
        assert_eq!(dead.len(), 2);
        // ensure_table keeps what exists and adds what is missing.
        let extra = ColumnInfo {
            name: "extra".into(),
            kql_type: KqlType::Bool,
        };
        catalog.ensure_table("default", "default", &[extra]).await?;
        let table = catalog.table("default", "default").await?.ok_or("missing table")?;
        assert_eq!(table.columns.last().map(|c| c.name.as_str()), Some("extra"));
        assert_eq!(table.columns[0].name, "timestamp");
        catalog.forget_segments(&["a".into(), "b".into()]).await?;
        assert!(catalog.tombstoned_before(i64::MAX).await?.is_empty());
        Ok(())
    }

    pub async fn ingest_commits_are_idempotent_and_remember_their_requests(catalog: SqlCatalog) -> TestResult {
        let cols = [("timestamp", KqlType::DateTime)];
        let s = segment("i1", "default", 0, 1, &cols);
        let keys = vec!["0".repeat(32), "1".repeat(32)];
        catalog.commit_ingest(&s, &keys).await?;
        catalog.commit_ingest(&s, &keys).await?;
        assert_eq!(live_ids(&catalog, "default").await?, vec!["i1".to_string()]);
        assert!(catalog.request_committed(&keys[0]).await?);
        assert!(!catalog.request_committed(&"2".repeat(32)).await?);
        assert_eq!(catalog.requests_since(0).await?.len(), 2);
        assert_eq!(catalog.forget_requests_before(i64::MAX).await?, 2);
        assert!(!catalog.request_committed(&keys[1]).await?);
        Ok(())
    }

    pub async fn tokens_principals_and_keys_round_trip(directory: SqlCatalog) -> TestResult {
        let token = IngestTokenRecord {
            id: "0011223344556677".into(),
            secret_hash: "ab".repeat(32),
            name: "default".into(),
            database: "default".into(),
            table: "logs".into(),
            allow_table_override: true,
            signal_tables: SignalTables::default(),
            created_at: 1,
            revoked_at: None,
        };
        directory.add_ingest_token(&token).await?;
        assert_eq!(directory.ingest_token(&token.id).await?, Some(token.clone()));
        let routed = IngestTokenRecord {
            id: "8899aabbccddeeff".into(),
            signal_tables: SignalTables {
                logs: None,
                metrics: Some("metrics".into()),
                traces: Some("spans".into()),
            },
            ..token.clone()
        };
        directory.add_ingest_token(&routed).await?;
        assert_eq!(directory.ingest_token(&routed.id).await?, Some(routed));
        assert!(directory.revoke_ingest_token(&token.id, 5).await?);
        assert!(!directory.revoke_ingest_token(&token.id, 6).await?);
        assert!(
            !directory.restore_ingest_token(&token.id, 6).await?,
            "revoked before the window"
        );
        assert!(directory.restore_ingest_token(&token.id, 5).await?);
        assert_eq!(
            directory.ingest_token(&token.id).await?.and_then(|t| t.revoked_at),
            None
        );

        let ann = Principal {
            id: "p1".into(),
            name: "ann".into(),
            kind: PrincipalKind::User,
            role: Role::Observer,
            password_hash: None,
            sso_subject: None,
            created_at: 1,
        };
        assert!(directory.add_principal(&ann).await?);
        let twin = Principal {
            id: "p2".into(),
            ..ann.clone()
        };
        assert!(!directory.add_principal(&twin).await?, "names are unique");
        assert!(directory.set_role("p1", Role::Maintainer).await?);
        assert_eq!(
            directory.principal_by_name("ann").await?.map(|p| p.role),
            Some(Role::Maintainer)
        );
        // A password user switched to SSO keeps its role; its identity links once.
        assert!(directory.set_password_hash("p1", "$argon2id$x").await?);
        assert!(
            !directory.set_sso_subject("p1", "https://idp#1").await?,
            "a password user has no SSO identity"
        );
        assert!(directory.switch_to_sso("p1").await?);
        assert!(directory.set_sso_subject("p1", "https://idp#1").await?);
        let switched = directory.principal("p1").await?;
        assert_eq!(
            switched
                .as_ref()
                .map(|p| (p.sign_in(), p.role, p.sso_subject.as_deref())),
            Some(("sso", Role::Maintainer, Some("https://idp#1")))
        );
        // Settings: set, replaced, and added only once.
        assert_eq!(directory.setting("sso").await?, None);
        directory.set_setting("sso", "{}", 1).await?;
        directory.set_setting("sso", "{\"enabled\":true}", 2).await?;
        assert_eq!(directory.setting("sso").await?.as_deref(), Some("{\"enabled\":true}"));
        assert!(directory.add_setting("sso.imported", "1", 3).await?);
        assert!(!directory.add_setting("sso.imported", "2", 4).await?);
        assert_eq!(directory.setting("sso.imported").await?.as_deref(), Some("1"));
        let access = AccessTokenRecord {
            id: "8899aabbccddeeff".into(),
            principal_id: "p1".into(),
            secret_hash: "cd".repeat(32),
            expires_at: Some(10),
            created_at: 1,
            revoked_at: None,
        };
        directory.add_access_token(&access).await?;
        assert_eq!(directory.access_token(&access.id).await?, Some(access));

        let key = GatewayKeyRecord {
            key_id: "k".into(),
            public_key: "pk".into(),
            created_at: 1,
        };
        directory.register_gateway_key(&key).await?;
        directory.register_gateway_key(&key).await?;
        assert_eq!(directory.gateway_keys().await?, vec![key]);
        Ok(())
    }

    pub async fn deletes_are_tombstones_that_restore_within_the_window(catalog: SqlCatalog) -> TestResult {
        assert_eq!(catalog.create_database("shop", 1).await?, Change::Done);
        assert_eq!(
            catalog.create_database("shop", 2).await?,
            Change::Exists { deleted: false }
        );
        assert_eq!(
            catalog.create_table("shop", "orders", Some(100), 3).await?,
            Change::Done
        );
        assert_eq!(catalog.create_table("shop", "refunds", None, 3).await?, Change::Done);
        let both = vec!["orders".to_string(), "refunds".to_string()];
        assert_eq!(catalog.create_view("shop", "money", &both, 4).await?, Change::Done);
        let missing = vec!["nope".to_string()];
        assert!(matches!(
            catalog.create_view("shop", "bad", &missing, 4).await?,
            Change::Refused(_)
        ));
        assert_eq!(catalog.views("shop").await?, vec![("money".to_string(), both.clone())]);

        // A table a live view unites is not deleted alone.
        let refused = catalog
            .delete_object(ObjectKind::Table, "shop", "orders", false, 10)
            .await?;
        assert_eq!(refused, Change::HasChildren(vec!["money".into()]));
        assert_eq!(
            catalog
                .delete_object(ObjectKind::Table, "shop", "orders", true, 10)
                .await?,
            Change::Done
        );
        assert_eq!(names(catalog.tables("shop").await?), vec!["refunds"]);
        assert!(catalog.views("shop").await?.is_empty());
        assert!(!catalog.writable("shop", "orders").await?);
        assert_eq!(
            catalog.create_table("shop", "orders", None, 11).await?,
            Change::Exists { deleted: true }
        );
        // Restored with the view deleted alongside.
        assert_eq!(
            catalog.restore_object(ObjectKind::Table, "shop", "orders", 5).await?,
            Change::Done
        );
        assert_eq!(names(catalog.tables("shop").await?), vec!["orders", "refunds"]);
        assert_eq!(catalog.views("shop").await?.len(), 1);

        // A database with live children is deleted only with them, and comes back with them.
        let refused = catalog
            .delete_object(ObjectKind::Database, "shop", "", false, 20)
            .await?;
        assert!(matches!(refused, Change::HasChildren(children) if children.len() == 3));
        assert_eq!(
            catalog
                .delete_object(ObjectKind::Database, "shop", "", true, 20)
                .await?,
            Change::Done
        );
        assert!(catalog.tables("shop").await?.is_empty());
        assert!(!catalog.databases().await?.contains(&"shop".to_string()));
        assert!(matches!(
            catalog.create_table("shop", "x", None, 21).await?,
            Change::Refused(_)
        ));
        // Too late: the window began after the delete.
        let late = catalog.restore_object(ObjectKind::Database, "shop", "", 25).await?;
        assert!(matches!(late, Change::Refused(_)));
        assert_eq!(
            catalog.restore_object(ObjectKind::Database, "shop", "", 15).await?,
            Change::Done
        );
        assert_eq!(names(catalog.tables("shop").await?), vec!["orders", "refunds"]);
        assert_eq!(catalog.views("shop").await?.len(), 1);
        Ok(())
    }

    pub async fn purge_and_retention_turn_segments_into_tombstones(catalog: SqlCatalog) -> TestResult {
        let timestamp = [("timestamp", KqlType::DateTime)];
        let in_d = |id: &str, table: &str, max_time: i64| SegmentMeta {
            database: "d".into(),
            path: format!("d/{table}/{id}.parquet"),
            min_time: 0,
            created_at: 0,
            rows: 1,
            bytes: 1,
            ..segment(id, table, 0, max_time, &timestamp)
        };
        catalog.create_table("d", "kept", Some(1_000), 0).await?;
        catalog.create_table("d", "gone", None, 0).await?;
        catalog
            .commit_segments(
                &[
                    in_d("old", "kept", 100),
                    in_d("new", "kept", 5_000),
                    in_d("g", "gone", 1),
                ],
                &[],
            )
            .await?;
        assert_eq!(catalog.apply_retention(2_000).await?, 1);
        let live: Vec<String> = catalog
            .live_segments("d", "kept", None)
            .await?
            .into_iter()
            .map(|s| s.id)
            .collect();
        assert_eq!(live, vec!["new"]);
        catalog
            .delete_object(ObjectKind::Table, "d", "gone", false, 3_000)
            .await?;
        assert!(
            catalog.purge_deleted(3_000, 4_000).await?.is_empty(),
            "still in its window"
        );
        assert_eq!(catalog.purge_deleted(3_001, 4_000).await?, vec!["table d.gone"]);
        assert!(catalog.live_segments("d", "gone", None).await?.is_empty());
        assert_eq!(catalog.tombstoned_before(i64::MAX).await?.len(), 2);
        assert_eq!(
            catalog.restore_object(ObjectKind::Table, "d", "gone", 0).await?,
            Change::NotFound
        );
        Ok(())
    }

    /// Many writers (ingest processes) commit at once, each with columns of its own and with
    /// columns they all add at the same moment: every commit goes through, every segment is
    /// registered, and every column once.
    pub async fn concurrent_commits_lose_no_segment_and_no_column(catalog: SqlCatalog) -> TestResult {
        const WRITERS: usize = 8;
        const COMMITS: usize = 6;
        let mut tasks = tokio::task::JoinSet::new();
        for writer in 0..WRITERS {
            let catalog = catalog.clone();
            tasks.spawn(async move {
                for commit in 0..COMMITS {
                    // A column of its own, and one every writer adds at the same time.
                    let own = format!("own_{writer}_{commit}");
                    let shared = format!("shared_{commit}");
                    let id = format!("w{writer}_{commit}");
                    let columns = [
                        ("timestamp", KqlType::DateTime),
                        (own.as_str(), KqlType::Long),
                        (shared.as_str(), KqlType::String),
                    ];
                    let s = segment(&id, "busy", 0, 1, &columns);
                    if writer % 2 == 0 {
                        catalog.commit_segments(&[s], &[]).await?;
                    } else {
                        catalog
                            .commit_ingest(&s, &[format!("{writer:016x}{commit:016x}")])
                            .await?;
                    }
                }
                Ok::<(), trawl_catalog::CatalogError>(())
            });
        }
        while let Some(joined) = tasks.join_next().await {
            joined??;
        }
        assert_eq!(live_ids(&catalog, "busy").await?.len(), WRITERS * COMMITS);
        let table = catalog.table("default", "busy").await?.ok_or("missing table")?;
        let mut columns: Vec<String> = table.columns.iter().map(|c| c.name.clone()).collect();
        assert_eq!(columns.len(), 1 + WRITERS * COMMITS + COMMITS, "{columns:?}");
        columns.sort();
        columns.dedup();
        assert_eq!(columns.len(), 1 + WRITERS * COMMITS + COMMITS);
        Ok(())
    }

    /// Merges of the same segments racing (two janitors, or one retried): exactly one
    /// commits; the others fail and change nothing, so no row is counted twice.
    pub async fn concurrent_merges_of_the_same_segments_commit_once(catalog: SqlCatalog) -> TestResult {
        let cols = [("timestamp", KqlType::DateTime)];
        catalog
            .commit_segments(
                &[
                    segment("a", "merged", 0, 10, &cols),
                    segment("b", "merged", 11, 20, &cols),
                ],
                &[],
            )
            .await?;
        let mut tasks = tokio::task::JoinSet::new();
        for merger in 0..4 {
            let catalog = catalog.clone();
            tasks.spawn(async move {
                let merged = segment(&format!("m{merger}"), "merged", 0, 20, &cols);
                catalog
                    .commit_segments(&[merged], &["a".into(), "b".into()])
                    .await
                    .is_ok()
            });
        }
        let mut committed = 0;
        while let Some(joined) = tasks.join_next().await {
            committed += usize::from(joined?);
        }
        assert_eq!(committed, 1);
        let live = live_ids(&catalog, "merged").await?;
        assert_eq!(live.len(), 1, "{live:?}");
        assert!(live[0].starts_with('m'));
        Ok(())
    }

    pub async fn a_lease_has_one_holder_until_it_runs_out_or_is_released(catalog: SqlCatalog) -> TestResult {
        let ttl = 100;
        assert!(catalog.take_lease("janitor", "a", 1_000, ttl).await?);
        assert!(!catalog.take_lease("janitor", "b", 1_050, ttl).await?, "a holds it");
        assert!(catalog.take_lease("janitor", "a", 1_090, ttl).await?, "a renews");
        assert!(
            !catalog.take_lease("janitor", "b", 1_150, ttl).await?,
            "renewed until 1190"
        );
        assert!(
            catalog.take_lease("other", "b", 1_150, ttl).await?,
            "leases are independent"
        );
        assert!(
            catalog.take_lease("janitor", "b", 1_190, ttl).await?,
            "a's lease ran out"
        );
        assert!(!catalog.take_lease("janitor", "a", 1_200, ttl).await?, "b took it over");
        catalog.release_lease("janitor", "a").await?;
        assert!(
            !catalog.take_lease("janitor", "a", 1_200, ttl).await?,
            "a cannot release b's lease"
        );
        catalog.release_lease("janitor", "b").await?;
        assert!(
            catalog.take_lease("janitor", "a", 1_201, ttl).await?,
            "released: free at once"
        );

        // Many contenders at the same instant: exactly one wins.
        let mut tasks = tokio::task::JoinSet::new();
        for holder in 0..8 {
            let catalog = catalog.clone();
            tasks.spawn(async move { catalog.take_lease("race", &format!("h{holder}"), 5_000, ttl).await });
        }
        let mut winners = 0;
        while let Some(joined) = tasks.join_next().await {
            winners += usize::from(joined??);
        }
        assert_eq!(winners, 1);
        Ok(())
    }

    pub async fn segment_paths_name_every_registered_object(catalog: SqlCatalog) -> TestResult {
        let cols = [("timestamp", KqlType::DateTime)];
        catalog
            .commit_segments(
                &[segment("p1", "paths", 0, 1, &cols), segment("p2", "paths", 0, 1, &cols)],
                &[],
            )
            .await?;
        catalog
            .commit_segments(&[segment("p3", "paths", 0, 1, &cols)], &["p1".into()])
            .await?;
        let mut paths = catalog.segment_paths().await?;
        paths.sort();
        assert_eq!(
            paths,
            vec![
                "default/paths/p1.parquet".to_string(),
                "default/paths/p2.parquet".to_string(),
                "default/paths/p3.parquet".to_string()
            ]
        );
        Ok(())
    }

    pub async fn operations_are_listed_newest_first_for_a_week(catalog: SqlCatalog) -> TestResult {
        const DAY: i64 = 86_400 * 1_000_000_000;
        let operation = |id: &str, finished_at: i64| trawl_catalog::OperationRecord {
            id: id.into(),
            kind: "MergeSegments".into(),
            node: "n1".into(),
            started_at: finished_at - 5,
            finished_at,
            state: "Completed".into(),
            status: format!("merged {id}"),
        };
        let base = 100 * DAY;
        for (id, at) in [("old", base), ("a", base + 8 * DAY), ("b", base + 8 * DAY + 1)] {
            catalog.record_operation(&operation(id, at)).await?;
        }
        // Recording at day 108 dropped the one from day 100; the newest comes first.
        let listed = catalog.operations(0, 10).await?;
        let ids: Vec<&str> = listed.iter().map(|o| o.id.as_str()).collect();
        assert_eq!(ids, ["b", "a"]);
        assert_eq!(listed[0], operation("b", base + 8 * DAY + 1));
        assert_eq!(catalog.operations(base + 8 * DAY + 1, 10).await?.len(), 1);
        assert_eq!(catalog.operations(0, 1).await?.len(), 1);
        Ok(())
    }
}

#[path = "suite/remembered.rs"]
mod remembered;
