//! The KQL binder and planner: parse a query and plan it against two tables with the columns
//! telemetry tables have (times, strings, dynamic bags, numbers, spans). Planning must answer
//! a plan or an error for any text; it runs no query.
#![no_main]

use std::sync::{Arc, LazyLock};

use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::catalog::TableProvider;
use datafusion::datasource::empty::EmptyTable;
use libfuzzer_sys::fuzz_target;
use trawl_common::KqlType;
use trawl_functions::types::{arrow_type, field};
use trawl_planner::{PlanOptions, TableLookup};

const COLUMNS: &[(&str, KqlType)] = &[
    ("timestamp", KqlType::DateTime),
    ("ingest_time", KqlType::DateTime),
    ("body", KqlType::Dynamic),
    ("severity_text", KqlType::String),
    ("severity_number", KqlType::Int),
    ("attributes", KqlType::Dynamic),
    ("resource", KqlType::Dynamic),
    ("trace_id", KqlType::String),
    ("span_name", KqlType::String),
    ("duration", KqlType::Timespan),
    ("value", KqlType::Real),
    ("count", KqlType::Long),
    ("is_monotonic", KqlType::Bool),
];

fn schema() -> SchemaRef {
    let fields: Vec<_> = COLUMNS
        .iter()
        .map(|(name, kql_type)| field(name, *kql_type, arrow_type(*kql_type)))
        .collect();
    Arc::new(Schema::new(fields))
}

struct Tables {
    table: Arc<dyn TableProvider>,
}

impl TableLookup for Tables {
    fn table(&self, name: &str) -> Option<Arc<dyn TableProvider>> {
        matches!(name, "default" | "T" | "logs").then(|| self.table.clone())
    }

    fn table_names(&self) -> Vec<String> {
        vec!["T".into(), "default".into(), "logs".into()]
    }

    fn view(&self, name: &str) -> Option<Vec<String>> {
        (name == "all_logs").then(|| vec!["T".into(), "logs".into()])
    }
}

static TABLES: LazyLock<Tables> = LazyLock::new(|| Tables {
    table: Arc::new(EmptyTable::new(schema())),
});

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let options = PlanOptions {
        now: 1_700_000_000_000_000_000,
        ..PlanOptions::default()
    };
    let _ = trawl_planner::plan_text(text, &*TABLES, options);
});
