//! The embedded catalog's remembered reads (SQLite only: PostgreSQL is always asked).

use super::*;

/// The embedded catalog remembers what queries read between writes: every catalog of the
/// process on the file sees a write as soon as it ends, and a range picks from the
/// remembered segments as the database would.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn remembered_reads_see_every_write_of_the_process_at_once() -> TestResult {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("catalog.db");
    let reader = SqlCatalog::open_sqlite(&path).await?;
    let writer = SqlCatalog::open_sqlite(&path).await?;
    let columns = [("timestamp", KqlType::DateTime)];
    writer
        .commit_segments(&[segment("a", "t", 0, 10, &columns)], &[])
        .await?;
    assert_eq!(live_ids(&reader, "t").await?, ["a"]);
    assert_eq!(names(reader.tables("default").await?), ["t"]);
    // Asked again: the same answers, then a write through the other catalog changes them.
    assert_eq!(live_ids(&reader, "t").await?, ["a"]);
    writer
        .commit_segments(
            &[segment(
                "b",
                "t",
                20,
                30,
                &[("timestamp", KqlType::DateTime), ("x", KqlType::Long)],
            )],
            &["a".to_string()],
        )
        .await?;
    assert_eq!(live_ids(&reader, "t").await?, ["b"]);
    let columns_now: Vec<String> = reader.tables("default").await?[0]
        .columns
        .iter()
        .map(|c| c.name.clone())
        .collect();
    assert_eq!(columns_now, ["timestamp", "x"]);
    writer
        .commit_segments(&[segment("c", "t", 40, 50, &columns)], &[])
        .await?;
    let ranged = |min, max| reader.live_segments("default", "t", Some(TimeRange { min, max }));
    let ids = |segments: Vec<SegmentMeta>| segments.into_iter().map(|s| s.id).collect::<Vec<_>>();
    assert_eq!(ids(ranged(0, 25).await?), ["b"]);
    assert_eq!(ids(ranged(30, 40).await?), ["b", "c"]);
    assert!(ranged(31, 39).await?.is_empty());
    // Views, and deletes.
    assert_eq!(
        writer.create_view("default", "v", &["t".to_string()], 1).await?,
        Change::Done
    );
    assert_eq!(reader.views("default").await?.len(), 1);
    assert!(reader.writable("default", "t").await?);
    assert!(reader.writable("default", "t").await?, "remembered");
    writer.delete_object(ObjectKind::Table, "default", "t", true, 2).await?;
    assert!(reader.tables("default").await?.is_empty());
    assert!(reader.views("default").await?.is_empty());
    assert!(
        !reader.writable("default", "t").await?,
        "ingest into a deleted table stops at once"
    );
    assert_eq!(
        writer.restore_object(ObjectKind::Table, "default", "t", 0).await?,
        Change::Done
    );
    assert!(reader.writable("default", "t").await?);

    // Tokens and roles: a revocation or a new role is seen at once.
    let principal = Principal {
        id: "p".into(),
        name: "ann".into(),
        kind: PrincipalKind::User,
        role: Role::Observer,
        password_hash: None,
        sso_subject: None,
        created_at: 0,
    };
    assert!(writer.add_principal(&principal).await?);
    let token = AccessTokenRecord {
        id: "t1".into(),
        principal_id: "p".into(),
        secret_hash: "h".into(),
        expires_at: None,
        created_at: 0,
        revoked_at: None,
    };
    assert!(reader.access_token("t1").await?.is_none());
    writer.add_access_token(&token).await?;
    assert!(reader.access_token("t1").await?.is_some_and(|t| t.revoked_at.is_none()));
    assert_eq!(reader.principal("p").await?.map(|p| p.role), Some(Role::Observer));
    assert!(writer.revoke_access_token("t1", 5).await?);
    assert_eq!(reader.access_token("t1").await?.and_then(|t| t.revoked_at), Some(5));
    assert!(writer.set_role("p", Role::Admin).await?);
    assert_eq!(reader.principal("p").await?.map(|p| p.role), Some(Role::Admin));

    // Ingest tokens: a new one, a revocation and a restore are seen at once.
    let ingest = IngestTokenRecord {
        id: "i1".into(),
        secret_hash: "h".into(),
        name: "shipper".into(),
        database: "default".into(),
        table: "t".into(),
        allow_table_override: false,
        signal_tables: SignalTables::default(),
        created_at: 0,
        revoked_at: None,
    };
    assert!(reader.ingest_token("i1").await?.is_none());
    writer.add_ingest_token(&ingest).await?;
    assert_eq!(reader.ingest_token("i1").await?, Some(ingest.clone()));
    assert_eq!(reader.ingest_token("i1").await?, Some(ingest.clone()), "remembered");
    assert!(writer.revoke_ingest_token("i1", 5).await?);
    assert_eq!(reader.ingest_token("i1").await?.and_then(|t| t.revoked_at), Some(5));
    assert!(writer.restore_ingest_token("i1", 5).await?);
    assert_eq!(reader.ingest_token("i1").await?, Some(ingest));
    Ok(())
}
