//! What a caller is told when a query fails while it runs: the DataFusion error, however
//! deeply wrapped, mapped to the error code and message the faces answer with; internal
//! details go to the log.

use datafusion::arrow::error::ArrowError;
use datafusion::error::DataFusionError;
use trawl_common::{ErrorCode, TrawlError};

use crate::{distributed, memory};

/// The part a failure says is unavailable (the segment store or the catalog), as an
/// `Unavailable` error that names it: the client may retry.
fn unavailable_part(error: &DataFusionError) -> Option<TrawlError> {
    let store = |e: &dyn std::fmt::Display| {
        TrawlError::unavailable(format!(
            "the segment store is unavailable, so the query cannot read its data: {e}"
        ))
    };
    if let Some(e) = trawl_storage::find_cause::<trawl_catalog::CatalogError>(error) {
        return Some(TrawlError::unavailable(format!(
            "the catalog is unavailable, so the query cannot find its segments: {e}"
        )));
    }
    if let Some(e) = trawl_storage::find_cause::<object_store::Error>(error) {
        return Some(store(e));
    }
    if let Some(e) = trawl_storage::find_cause::<trawl_storage::StorageError>(error) {
        return Some(store(e));
    }
    // DataFusion's Parquet reader turns a failed footer fetch into text (the object store's
    // error is formatted into it, not kept as a source).
    let text = error.to_string();
    text.contains("Object Store error").then(|| store(&text))
}

/// Whether `error` is Arrow's integer division by zero, however it was wrapped.
fn divides_by_zero(error: &DataFusionError) -> bool {
    let arrow = |e: &ArrowError| matches!(e, ArrowError::DivideByZero);
    error.iter().any(|cause| match cause {
        DataFusionError::ArrowError(inner, _) => arrow(inner),
        DataFusionError::Shared(inner) => divides_by_zero(inner),
        _ => false,
    }) || trawl_storage::find_cause::<ArrowError>(error).is_some_and(arrow)
}

/// A KQL function that refused its arguments while the query ran (`hll_merge()` of a value
/// that is not a sketch, an invalid regular expression): a `BadRequest` naming the function.
/// The functions mark their errors with an `in kql_<name>()` context.
fn function_refusal(error: &DataFusionError) -> Option<TrawlError> {
    let mut current = error;
    loop {
        match current {
            DataFusionError::Context(context, inner) => {
                if let Some(name) = context.strip_prefix("in kql_") {
                    let message = match inner.find_root() {
                        DataFusionError::Execution(message) => message.clone(),
                        other => other.to_string(),
                    };
                    return Some(TrawlError::new(ErrorCode::BadRequest, format!("{name}: {message}")));
                }
                current = inner;
            }
            DataFusionError::Shared(inner) => current = inner.as_ref(),
            _ => return None,
        }
    }
}

/// Maps an execution failure to a caller-facing error; internal details go to the log.
pub(crate) fn execution_error(error: DataFusionError) -> TrawlError {
    if let Some(unavailable) = unavailable_part(&error) {
        tracing::warn!(%error, "a query could not read its data");
        return unavailable;
    }
    if let Some(cause) = distributed::unreachable_node(&error) {
        tracing::warn!(%error, "a distributed query lost a query node");
        return TrawlError::unavailable(format!(
            "a query node this query was spread over cannot be reached ({cause}); retry the query"
        ));
    }
    // A segment found damaged while it was read (its footer was sound, so planning kept it).
    if let Some(damage) = trawl_storage::find_cause::<trawl_storage::SegmentDamage>(&error) {
        tracing::error!(%error, "a query met a damaged segment");
        return TrawlError::internal(damage.to_string());
    }
    // A memory limit reached deep inside an operator arrives wrapped in other errors.
    if let DataFusionError::ResourcesExhausted(message) = error.find_root() {
        if message.starts_with(trawl_common::memory::MemoryExceeded::SERVER_LIMIT) {
            return TrawlError::unavailable(message.clone());
        }
        let message = if message.starts_with(memory::QUERY_LIMIT_EXCEEDED) {
            message.clone()
        } else {
            format!("the query needs more memory than allowed: {message}")
        };
        return TrawlError::new(ErrorCode::BadRequest, message);
    }
    if let Some(refusal) = function_refusal(&error) {
        return refusal;
    }
    match error {
        DataFusionError::Plan(message) => {
            TrawlError::new(ErrorCode::BadRequest, format!("the query cannot run: {message}"))
        }
        DataFusionError::SchemaError(error, _) => {
            TrawlError::new(ErrorCode::BadRequest, format!("the query cannot run: {error}"))
        }
        other if divides_by_zero(&other) => {
            TrawlError::new(ErrorCode::BadRequest, "the query divides a whole number by zero")
        }
        other => {
            tracing::error!(error = %other, "query execution failed");
            TrawlError::internal("the query failed inside the engine; the server log has details")
        }
    }
}
