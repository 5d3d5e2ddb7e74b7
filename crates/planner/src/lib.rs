//! Binding and lowering: a KQL syntax tree → DataFusion `LogicalPlan`s, one per result table.
//!
//! The planner resolves names through [`TableLookup`] (no storage, no catalog backend),
//! tracks every column's KQL type ([`Tabular`]), checks KQL's typing rules (text operators
//! need a string right side; `TypeMismatch` otherwise), and turns KQL semantics into
//! DataFusion expressions: strings are never null, `has` matches whole terms, dynamic
//! values are JSON text read with `json_*` functions, datetimes are nanosecond timestamps.
//!
//! Main entry: [`plan_query`].

mod activity;
mod aggregates;
mod aliases;
mod apply;
pub mod budget;
mod context;
mod expand;
mod fieldstats;
mod find;
mod funnel;
mod geo_lookup;
mod graph;
mod ip_lookup;
mod joins;
mod layout;
pub mod limits;
mod log_stats;
mod materialize;
mod mining;
mod names;
mod operators;
mod parse;
mod parse_kv;
mod patterns;
mod planner_functions;
mod reduce;
mod rolling;
mod scalar;
mod scalar_functions;
mod scan;
mod search;
mod sequence_detect;
mod serial_windows;
mod series;
mod shredded;
mod sources;
mod subqueries;
mod suggest;
mod summarize;
mod summarize_hints;
#[cfg(test)]
mod testing;
mod text_operators;
mod top_nested;
mod trace_find;
mod unpack;
mod user_functions;
pub mod warning_operators;
mod windows;

use std::sync::Arc;

use datafusion::catalog::TableProvider;
use datafusion::logical_expr::LogicalPlan;
use trawl_common::error::Location;
use trawl_common::{ErrorCode, KqlType, TrawlError};

pub use context::Tabular;
pub use names::bracketed;
pub use warning_operators::{WarningOperator, WarningOperators};

/// The functions the planner builds itself with fixed settings (beside the registries of
/// `trawl_functions`): registered by name on every query node, so plans that call them can
/// run on other nodes.
pub fn shared_functions() -> Vec<datafusion::logical_expr::ScalarUDF> {
    use datafusion::logical_expr::ScalarUDF;
    use trawl_functions::lists::{DenseSeriesUdf, JsonItemsUdf, ListFinish, ListFinishUdf};
    vec![
        ScalarUDF::from(ListFinishUdf::new(ListFinish::Array)),
        ScalarUDF::from(ListFinishUdf::new(ListFinish::ArrayWithNulls)),
        ScalarUDF::from(ListFinishUdf::new(ListFinish::Set)),
        ScalarUDF::from(ListFinishUdf::new(ListFinish::MergeBags)),
        ScalarUDF::from(DenseSeriesUdf::new()),
        ScalarUDF::from(JsonItemsUdf::new()),
        ScalarUDF::from(trawl_functions::kv::ParseKvUdf::new()),
        ScalarUDF::from(trawl_functions::dynamic::DynamicToStringUdf::new()),
        ScalarUDF::from(trawl_functions::dynamic::ToJsonStringUdf::new()),
        ScalarUDF::from(trawl_functions::dynamic::FormatValueUdf::new()),
        ScalarUDF::from(trawl_functions::memo::DistinctValuesUdf::new(
            datafusion_functions_json::udfs::json_as_text_udf(),
        )),
        budget::GroupFractionUdf::udf(),
    ]
}

/// Looks up tables by name.
pub trait TableLookup {
    fn table(&self, name: &str) -> Option<Arc<dyn TableProvider>>;

    /// Every table's name (for a leading `search`).
    fn table_names(&self) -> Vec<String> {
        Vec::new()
    }

    /// The member tables of a view (a named union of tables), if `name` is one.
    fn view(&self, _name: &str) -> Option<Vec<String>> {
        None
    }
}

/// Request-level settings that shape the plan.
#[derive(Debug, Clone, Default)]
pub struct PlanOptions {
    /// Only rows with `timestamp >= since` (nanoseconds since the epoch).
    pub since: Option<i64>,
    /// Only rows with `timestamp < until`.
    pub until: Option<i64>,
    /// The query's `now()`, fixed for the whole query.
    pub now: i64,
    /// The database the query runs in (`current_database()`).
    pub database: String,
    /// Who runs the query (`current_principal()`): the caller's name as the gateway
    /// authenticated it, empty when unknown.
    pub principal: String,
    /// The request's values of declared query parameters, by name.
    pub parameters: std::sync::Arc<std::collections::HashMap<String, String>>,
    /// Columns found by running [`Discovery`] plans (for `bag_unpack`), by discovery key.
    pub discovered: std::sync::Arc<std::collections::HashMap<String, Vec<(String, KqlType)>>>,
    /// Rows of `materialize()` calls, by [`Materialization`] key.
    pub materialized: std::sync::Arc<std::collections::HashMap<String, std::sync::Arc<MaterializedTable>>>,
}

/// A plan to run before planning can finish: its single column holds dynamic values whose
/// keys become columns (`evaluate bag_unpack`). The engine runs it and plans again with the
/// keys and their types in [`PlanOptions::discovered`].
#[derive(Debug, Clone)]
pub struct Discovery {
    pub key: String,
    pub plan: LogicalPlan,
}

/// A `materialize()` to run once before planning can finish: the engine keeps its rows and
/// plans again with them in [`PlanOptions::materialized`].
#[derive(Debug, Clone)]
pub struct Materialization {
    pub key: String,
    pub plan: LogicalPlan,
}

/// The rows of a materialized value.
#[derive(Debug)]
pub struct MaterializedTable {
    pub schema: datafusion::arrow::datatypes::SchemaRef,
    pub batches: Vec<datafusion::arrow::record_batch::RecordBatch>,
}

/// A warning that travels with the result (`@Warnings`, gRPC QueryWarning).
#[derive(Debug, Clone, PartialEq)]
pub struct QueryWarning {
    pub kind: String,
    pub message: String,
    pub location: Option<Location>,
}

/// Visualization asked for by `render`: the chart type and its properties, as written.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Visualization {
    pub visualization_type: String,
    pub properties: Vec<(String, serde_json::Value)>,
}

/// One result table: its plan and its columns' KQL types.
#[derive(Debug, Clone)]
pub struct PlannedResult {
    pub plan: LogicalPlan,
    pub columns: Vec<(String, KqlType)>,
    /// The result table's name when the query names it (`fork` branches); otherwise the
    /// engine names it by position.
    pub name: Option<String>,
}

/// How a `summarize` bins its rows by a column as stored: `bin(c, span)` (or `floor`),
/// `bin_at(c, span, start)`, or `bin_auto(c)` (which is one of those). Bin `k` holds the rows
/// whose `c` is in `[origin + k * span, origin + (k + 1) * span)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binning {
    pub column: String,
    /// Whether `c` is a datetime or a timespan (then `span` and `origin` are nanoseconds)
    /// rather than a number.
    pub time: bool,
    /// Positive. A number's bins are reported only when their span and start are whole.
    pub span: i64,
    pub origin: i64,
}

/// A whole query: result tables in statement order, and warnings.
#[derive(Debug, Clone)]
pub struct PlannedQuery {
    pub results: Vec<PlannedResult>,
    pub warnings: Vec<QueryWarning>,
    pub visualization: Option<Visualization>,
    /// Plans to run before this plan is final; empty when it is.
    pub discoveries: Vec<Discovery>,
    /// `materialize()` calls to run before this plan is final (after the discoveries).
    pub materializations: Vec<Materialization>,
    /// How the first `summarize ... by bin(...)` over a stored column bins its rows (time or
    /// number), for progress reports by bin.
    pub time_bin: Option<Binning>,
    /// The key under which aggregates report warnings while the query runs
    /// (`trawl_functions::otel::take_warnings`), when any may.
    pub runtime_warning_key: Option<i64>,
    /// The summarizes that asked for a memory budget of their own (`hint.budget`).
    pub summarize_budgets: Vec<SummarizeBudget>,
}

/// A grouping `summarize` with `hint.budget`: the engine finds its aggregation by the names
/// of its group keys (two summarizes of one query with the same key names share the
/// smaller budget) and holds it to `bytes` when that is below the server's budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummarizeBudget {
    pub keys: Vec<String>,
    pub bytes: usize,
}

/// Parses and plans `text`.
pub fn plan_text(text: &str, tables: &dyn TableLookup, options: PlanOptions) -> Result<PlannedQuery, TrawlError> {
    // The syntax tree is dropped here, on the planner's grown stack when it is deep.
    stacker::maybe_grow(limits::STACK_RED_ZONE, limits::STACK_SEGMENT, || {
        let query = trawl_kql::parse(text)?;
        plan_query(&query, text, tables, options)
    })
}

/// Plans a parsed query. `text` is the query text the spans point into.
pub fn plan_query(
    query: &trawl_kql::ast::Query,
    text: &str,
    tables: &dyn TableLookup,
    options: PlanOptions,
) -> Result<PlannedQuery, TrawlError> {
    let mut planner = context::Planner::new(text, tables, options);
    let results = planner.plan_statements(&query.statements)?;
    for result in &results {
        limits::check_plan(&result.plan)?;
    }
    if results.is_empty() {
        return Err(TrawlError::new(
            ErrorCode::SyntaxError,
            "the query has no tabular expression to run",
        ));
    }
    let visualization = planner.visualization.take();
    let discoveries = std::mem::take(&mut planner.discoveries);
    let materializations = std::mem::take(&mut planner.materializations);
    let time_bin = planner.time_bin.take();
    let runtime_warning_key = planner.runtime_warning_key;
    let summarize_budgets = std::mem::take(&mut planner.summarize_budgets);
    Ok(PlannedQuery {
        summarize_budgets,
        runtime_warning_key,
        results,
        warnings: planner.into_warnings(),
        visualization,
        discoveries,
        materializations,
        time_bin,
    })
}
