//! The door of the write path: what every ingest face (OTLP over HTTP and gRPC, log push,
//! the vendor intake) does with a request once it has decoded it, in one place. The faces
//! only decode bodies and encode answers.
//!
//! 1. [`Door::admit`]: the sender's credentials and the request's signal decide where its
//!    rows go. Ingest needs a token by default (SPEC "Authentication"): `Authorization:
//!    Bearer <ingest token>` (or a basic-authentication password); the token names the
//!    database and table, and for the vendor intake a table per signal. No valid token:
//!    `Unauthenticated` (401, UNAUTHENTICATED). A deleted destination: `NotFound`. Anonymous
//!    ingest (to the default table) only when both settings allow it.
//! 2. [`Door::hold`]: the request's decoded bytes are held in the in-flight budget until its
//!    rows are durable (refused with `Unavailable` when it is spent).
//! 3. [`Admitted::accept`]: the rows go to their tables (a record may choose its own with
//!    the resource attribute `trawl.table` when the token allows), each table checked
//!    writable, stored with the signal they are; the answer comes once every part is
//!    durable, and the items the face's mapping refused are counted.

use std::sync::Arc;

use trawl_auth::token::{basic_password, bearer};
use trawl_auth::{AuthError, Authenticator};
use trawl_catalog::{Directory, Objects, SignalTables};
use trawl_common::metrics::{METRICS, label};
use trawl_common::{ErrorCode, Signal, TrawlError};

use datafusion::arrow::array::{AsArray, StringArray, UInt32Array};
use trawl_common::columns::Columns;
use trawl_storage::{RowsBatch, columns_to_batch};

use crate::budget::{ByteBudget, Reservation};
use crate::{Ingestor, RequestKey};

/// Where a request's rows go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IngestRoute {
    pub database: String,
    pub table: String,
    /// Whether records may choose their table with the resource attribute `trawl.table`.
    pub allow_table_override: bool,
    /// The vendor intake's per-signal tables (unset: `table`).
    pub signal_tables: SignalTables,
}

impl IngestRoute {
    /// This route with the table the token names for `signal`, if it names one.
    pub fn for_signal(mut self, signal: Signal) -> IngestRoute {
        let table = match signal {
            Signal::Logs => self.signal_tables.logs.take(),
            Signal::Metrics => self.signal_tables.metrics.take(),
            Signal::Traces => self.signal_tables.traces.take(),
        };
        if let Some(table) = table {
            self.table = table;
        }
        self
    }
}

/// The resource attribute a record chooses its table with, when its token allows it.
pub const TABLE_ATTRIBUTE: &str = "trawl.table";

/// Whether `name` can name a table.
fn table_name_ok(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// `rows` by destination table: the resource attribute `trawl.table` when the route allows
/// it and the name is valid, else the route's table.
pub fn rows_by_table(route: &IngestRoute, rows: Vec<trawl_common::Row>) -> Vec<(String, Vec<trawl_common::Row>)> {
    if !route.allow_table_override || !rows.iter().any(|row| chosen_table(row).is_some()) {
        return vec![(route.table.clone(), rows)];
    }
    let mut groups: Vec<(String, Vec<trawl_common::Row>)> = Vec::new();
    for row in rows {
        let table = chosen_table(&row).unwrap_or_else(|| route.table.clone());
        match groups.iter_mut().find(|(name, _)| *name == table) {
            Some((_, group)) => group.push(row),
            None => groups.push((table, vec![row])),
        }
    }
    groups
}

/// The valid table a row's resource names with `trawl.table`, if any.
fn chosen_table(row: &trawl_common::Row) -> Option<String> {
    let chosen = match row.get("resource") {
        Some(trawl_common::Value::Dynamic(serde_json::Value::Object(resource))) => resource
            .get(TABLE_ATTRIBUTE)
            .and_then(|v| v.as_str())
            .map(str::to_string),
        // The common case: resources as JSON text; parsed only when they name a table.
        Some(trawl_common::Value::JsonText(text)) => return table_in_text(text),
        _ => None,
    };
    chosen.filter(|name| table_name_ok(name))
}

/// The valid table the resource's JSON text names with `trawl.table`, if any.
fn table_in_text(text: &str) -> Option<String> {
    if !text.contains(TABLE_ATTRIBUTE) {
        return None;
    }
    serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(text)
        .ok()
        .and_then(|resource| resource.get(TABLE_ATTRIBUTE)?.as_str().map(str::to_string))
        .filter(|name| table_name_ok(name))
}

/// Whether any resource text in `resources` mentions the table attribute: one search over
/// the column's bytes, so a batch without it (the usual case) looks at no row. Rows are in
/// time order, so the resources of a request interleave and a per-row look repeats.
fn names_a_table(resources: &StringArray) -> bool {
    let offsets = resources.value_offsets();
    let (Some(&start), Some(&end)) = (offsets.first(), offsets.last()) else {
        return false;
    };
    let (Ok(start), Ok(end)) = (usize::try_from(start), usize::try_from(end)) else {
        return false;
    };
    resources
        .value_data()
        .get(start..end)
        .is_some_and(|bytes| memchr::memmem::find(bytes, TABLE_ATTRIBUTE.as_bytes()).is_some())
}

/// [`rows_by_table`] for rows in a batch (each part keeps the rows' order).
pub fn batch_by_table(route: &IngestRoute, batch: RowsBatch) -> Result<Vec<(String, RowsBatch)>, TrawlError> {
    let resources = batch
        .batch
        .column_by_name("resource")
        .and_then(|c| c.as_string_opt::<i32>());
    let chosen: Vec<Option<String>> = match resources {
        Some(resources) if route.allow_table_override && names_a_table(resources) => {
            // The rows of one resource repeat its text: look into each distinct run once.
            let mut last: Option<(&str, Option<String>)> = None;
            resources
                .iter()
                .map(|text| {
                    let text = text?;
                    match &last {
                        Some((previous, table)) if *previous == text => table.clone(),
                        _ => {
                            let table = table_in_text(text);
                            last = Some((text, table.clone()));
                            table
                        }
                    }
                })
                .collect()
        }
        _ => Vec::new(),
    };
    if chosen.iter().all(Option::is_none) {
        return Ok(vec![(route.table.clone(), batch)]);
    }
    let mut groups: Vec<(String, Vec<u32>)> = Vec::new();
    for (row, table) in chosen.into_iter().enumerate() {
        let table = table.unwrap_or_else(|| route.table.clone());
        let row = row as u32;
        match groups.iter_mut().find(|(name, _)| *name == table) {
            Some((_, rows)) => rows.push(row),
            None => groups.push((table, vec![row])),
        }
    }
    groups
        .into_iter()
        .map(|(table, rows)| {
            let part = batch
                .select(&UInt32Array::from(rows))
                .map_err(|e| TrawlError::internal(format!("could not split the rows by table: {e}")))?;
            Ok((table, part))
        })
        .collect()
}

/// Who may send, and where their rows go.
#[derive(Debug, Clone)]
pub struct IngestAuth {
    tokens: Authenticator,
    /// Whether the destination is writable (not deleted).
    objects: Arc<dyn Objects>,
    /// The route of requests without a token, when anonymous ingest is on.
    anonymous: Option<IngestRoute>,
}

impl IngestAuth {
    /// Tokens required.
    pub fn required(directory: Arc<dyn Directory>, objects: Arc<dyn Objects>) -> IngestAuth {
        IngestAuth {
            tokens: Authenticator::new(directory),
            objects,
            anonymous: None,
        }
    }

    /// Requests without a token go to `database.table`; tokens still route theirs.
    pub fn anonymous(
        directory: Arc<dyn Directory>,
        objects: Arc<dyn Objects>,
        database: &str,
        table: &str,
    ) -> IngestAuth {
        IngestAuth {
            tokens: Authenticator::new(directory),
            objects,
            anonymous: Some(IngestRoute {
                database: database.to_string(),
                table: table.to_string(),
                allow_table_override: false,
                signal_tables: SignalTables::default(),
            }),
        }
    }

    /// The route of a request with this `Authorization` header value, to a table that is
    /// not deleted.
    pub async fn route(&self, authorization: Option<&str>) -> Result<IngestRoute, TrawlError> {
        let route = self.token_route(authorization).await?;
        self.check_writable(&route.database, &route.table).await?;
        Ok(route)
    }

    /// Refuses a destination that is deleted (or whose database is).
    pub async fn check_writable(&self, database: &str, table: &str) -> Result<(), TrawlError> {
        let writable = self
            .objects
            .writable(database, table)
            .await
            .map_err(|e| TrawlError::unavailable(format!("cannot check the destination table: {e}")))?;
        if !writable {
            return Err(TrawlError::new(
                ErrorCode::NotFound,
                format!(
                    "table '{database}.{table}' (or its database) is deleted; restore it or route the token elsewhere"
                ),
            ));
        }
        Ok(())
    }

    async fn token_route(&self, authorization: Option<&str>) -> Result<IngestRoute, TrawlError> {
        let refused = |message: &str| TrawlError::new(ErrorCode::Unauthenticated, message);
        // A bearer token, or the password of basic authentication (what shippers that
        // speak only basic authentication can send).
        let basic = basic_password(authorization);
        let Some(text) = bearer(authorization).or(basic.as_deref()) else {
            return match (&self.anonymous, authorization) {
                (Some(route), None) => Ok(route.clone()),
                _ => Err(refused(
                    "ingest needs a token: send 'Authorization: Bearer <ingest token>'",
                )),
            };
        };
        let record = match self.tokens.ingest_token(text).await {
            Ok(record) => record,
            Err(AuthError::Unavailable(e)) => {
                return Err(TrawlError::unavailable(format!("cannot check the ingest token: {e}")));
            }
            Err(_) => return Err(refused("the ingest token is not valid")),
        };
        Ok(IngestRoute {
            database: record.database,
            table: record.table,
            allow_table_override: record.allow_table_override,
            signal_tables: record.signal_tables,
        })
    }
}

/// What a face knows of the sender: the `Authorization` value (HTTP header or gRPC
/// metadata; the vendor intake makes one of its API key).
#[derive(Debug, Clone, Copy, Default)]
pub struct Credentials<'a> {
    pub authorization: Option<&'a str>,
}

/// The answer to an accepted request: rows stored, and items the face's mapping refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ack {
    pub stored: usize,
    pub refused: i64,
}

/// The write path's entry: see the module's documentation.
#[derive(Debug, Clone)]
pub struct Door {
    ingestor: Ingestor,
    auth: Arc<IngestAuth>,
    budget: ByteBudget,
}

impl Door {
    pub fn new(ingestor: Ingestor, auth: IngestAuth, budget: ByteBudget) -> Door {
        Door {
            ingestor,
            auth: Arc::new(auth),
            budget,
        }
    }

    /// Where the rows of a `signal` request from this sender go; refused without a valid
    /// token or to a deleted table.
    pub async fn admit(&self, credentials: Credentials<'_>, signal: Signal) -> Result<Admitted, TrawlError> {
        let route = self.auth.route(credentials.authorization).await?;
        Ok(Admitted {
            door: self.clone(),
            route,
            signal,
        })
    }

    /// Holds a request's `decoded_bytes` in the in-flight budget until the reservation is
    /// dropped; refused (`Unavailable`, retry shortly) when the budget is spent.
    pub fn hold(&self, decoded_bytes: usize) -> Result<Reservation, TrawlError> {
        self.budget.reserve(decoded_bytes)
    }

    /// The same door with another in-flight budget.
    pub fn with_budget(mut self, budget: ByteBudget) -> Door {
        self.budget = budget;
        self
    }

    pub fn ingestor(&self) -> &Ingestor {
        &self.ingestor
    }
}

/// A request let in: where its rows go.
#[derive(Debug, Clone)]
pub struct Admitted {
    door: Door,
    route: IngestRoute,
    signal: Signal,
}

impl Admitted {
    pub fn route(&self) -> &IngestRoute {
        &self.route
    }

    /// The same request sent to the table its token names for its signal, when it names one
    /// (the vendor intake's per-signal tables), checked writable.
    pub async fn to_signal_table(mut self) -> Result<Admitted, TrawlError> {
        let token_table = self.route.table.clone();
        self.route = self.route.for_signal(self.signal);
        if self.route.table != token_table {
            self.door
                .auth
                .check_writable(&self.route.database, &self.route.table)
                .await?;
        }
        Ok(self)
    }

    /// Stores `rows` (see the module's documentation); `key` identifies the request body
    /// ([`RequestKey::of_body`]; each table's part is deduplicated on its own), `refused`
    /// counts the items the face's mapping refused. Answers once every part is durable.
    pub async fn accept(&self, rows: Vec<trawl_common::Row>, key: RequestKey, refused: i64) -> Result<Ack, TrawlError> {
        let groups = rows_by_table(&self.route, rows)
            .into_iter()
            .filter(|(_, rows)| !rows.is_empty())
            .map(|(table, rows)| {
                trawl_storage::rows_to_batch(rows)
                    .map(|batch| (table, batch))
                    .map_err(|e| TrawlError::internal(format!("could not lay out the rows: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.store(groups, key, refused).await
    }

    /// [`Admitted::accept`] for rows a mapping wrote into columns.
    pub async fn accept_columns(&self, columns: Columns, key: RequestKey, refused: i64) -> Result<Ack, TrawlError> {
        if columns.rows == 0 {
            return self.store(Vec::new(), key, refused).await;
        }
        let batch =
            columns_to_batch(columns).map_err(|e| TrawlError::internal(format!("could not lay out the rows: {e}")))?;
        let groups = batch_by_table(&self.route, batch)?;
        self.store(groups, key, refused).await
    }

    async fn store(&self, groups: Vec<(String, RowsBatch)>, key: RequestKey, refused: i64) -> Result<Ack, TrawlError> {
        let route = &self.route;
        let stored = groups.iter().map(|(_, batch)| batch.batch.num_rows()).sum();
        for (table, _) in &groups {
            if *table != route.table {
                self.door.auth.check_writable(&route.database, table).await?;
            }
        }
        // All groups wait for their flushes together; the request is acknowledged when
        // every one is durable.
        let submits = groups.into_iter().map(|(table, batch)| async move {
            let key = key.for_table(&route.database, &table);
            self.door
                .ingestor
                .submit_batch(&route.database, &table, self.signal, batch, Some(key))
                .await
        });
        futures::future::try_join_all(submits).await?;
        if refused > 0 {
            METRICS
                .ingest_rejections
                .get_or_create(&label("reason", "item"))
                .inc_by(refused.unsigned_abs());
        }
        Ok(Ack { stored, refused })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use trawl_common::{Row, Value};

    fn row(resource: serde_json::Value) -> Row {
        let mut row = Row::default();
        row.push("resource", Value::Dynamic(resource));
        row
    }

    fn text_row(resource: &str) -> Row {
        let mut row = Row::default();
        row.push("resource", Value::JsonText(resource.into()));
        row
    }

    #[test]
    fn records_choose_their_table_only_when_the_token_allows() {
        let rows = || {
            vec![
                row(serde_json::json!({"trawl.table": "audit"})),
                row(serde_json::json!({"service.name": "x"})),
                row(serde_json::json!({"trawl.table": "bad name!"})),
                text_row(r#"{"service.name":"y","trawl.table":"audit"}"#),
            ]
        };
        let mut route = IngestRoute {
            database: "d".into(),
            table: "logs".into(),
            allow_table_override: false,
            signal_tables: SignalTables::default(),
        };
        let sizes = |groups: Vec<(String, Vec<Row>)>| groups.into_iter().map(|(t, r)| (t, r.len())).collect::<Vec<_>>();
        assert_eq!(sizes(rows_by_table(&route, rows())), vec![("logs".to_string(), 4)]);
        route.allow_table_override = true;
        assert_eq!(
            sizes(rows_by_table(&route, rows())),
            vec![("audit".to_string(), 2), ("logs".to_string(), 2)]
        );
    }

    #[test]
    fn records_in_columns_choose_their_table_too() -> Result<(), Box<dyn std::error::Error>> {
        use trawl_common::KqlType;
        use trawl_common::columns::ColumnsBuilder;
        let batch = || {
            let mut builder = ColumnsBuilder::new();
            let time = builder.column("timestamp", KqlType::DateTime);
            let resource = builder.column("resource", KqlType::Dynamic);
            let resources = [
                r#"{"trawl.table":"audit"}"#,
                r#"{"service.name":"x"}"#,
                r#"{"trawl.table":"bad name!"}"#,
                r#"{"service.name":"y","trawl.table":"audit"}"#,
            ];
            for (i, text) in resources.iter().enumerate() {
                builder.set_integer(time, 10 * i as i64);
                builder.set_bag(resource, text, &[]);
                builder.end_row();
            }
            columns_to_batch(builder.finish())
        };
        let mut route = IngestRoute {
            database: "d".into(),
            table: "logs".into(),
            allow_table_override: false,
            signal_tables: SignalTables::default(),
        };
        let sizes = |groups: Vec<(String, RowsBatch)>| {
            groups
                .into_iter()
                .map(|(t, b)| (t, b.batch.num_rows(), b.min_time, b.max_time))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            sizes(batch_by_table(&route, batch()?)?),
            vec![("logs".to_string(), 4, 0, 30)]
        );
        route.allow_table_override = true;
        assert_eq!(
            sizes(batch_by_table(&route, batch()?)?),
            vec![("audit".to_string(), 2, 0, 30), ("logs".to_string(), 2, 10, 20)]
        );
        Ok(())
    }

    #[test]
    fn only_the_rows_in_a_slice_are_searched_for_the_table_attribute() {
        let resources = StringArray::from(vec![
            Some(r#"{"trawl.table":"audit"}"#),
            Some(r#"{"service.name":"x"}"#),
            None,
            Some(r#"{"service.name":"y","trawl.table":"audit"}"#),
        ]);
        assert!(names_a_table(&resources));
        assert!(names_a_table(&resources.slice(0, 1)));
        assert!(!names_a_table(&resources.slice(1, 2)));
        assert!(names_a_table(&resources.slice(2, 2)));
        assert!(!names_a_table(&resources.slice(1, 0)));
        assert!(!names_a_table(&StringArray::from(Vec::<Option<&str>>::new())));
    }
}
