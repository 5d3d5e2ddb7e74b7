//! KQL types ↔ Arrow types. In query plans strings and dynamic values are Utf8View (dynamic
//! as JSON text); segments store them as Utf8. Field metadata `trawl.kql_type` tells dynamic
//! columns from string columns.

use std::collections::HashMap;

use datafusion::arrow::datatypes::{DataType, Field, TimeUnit};
use trawl_common::KqlType;

/// Field metadata key naming a column's KQL type.
pub const KQL_TYPE_METADATA: &str = "trawl.kql_type";

/// Time zone of every datetime column.
pub const UTC: &str = "UTC";

/// The Arrow type of a KQL type in query plans (strings as Utf8View).
pub fn arrow_type(kql_type: KqlType) -> DataType {
    match kql_type {
        KqlType::Bool => DataType::Boolean,
        KqlType::Int => DataType::Int32,
        KqlType::Long => DataType::Int64,
        KqlType::Real | KqlType::Decimal => DataType::Float64,
        KqlType::String | KqlType::Guid | KqlType::Dynamic => DataType::Utf8View,
        KqlType::DateTime => DataType::Timestamp(TimeUnit::Nanosecond, Some(UTC.into())),
        KqlType::Timespan => DataType::Duration(TimeUnit::Nanosecond),
    }
}

/// The Arrow type of a KQL type in written segments (strings as Utf8).
pub fn segment_arrow_type(kql_type: KqlType) -> DataType {
    match arrow_type(kql_type) {
        DataType::Utf8View => DataType::Utf8,
        other => other,
    }
}

/// The metadata that marks a field's KQL type.
pub fn kql_type_metadata(kql_type: KqlType) -> HashMap<String, String> {
    HashMap::from([(KQL_TYPE_METADATA.to_string(), kql_type.as_str().to_string())])
}

/// A nullable field with its KQL type recorded in metadata.
pub fn field(name: &str, kql_type: KqlType, data_type: DataType) -> Field {
    Field::new(name, data_type, true).with_metadata(kql_type_metadata(kql_type))
}

/// The KQL type of an Arrow field: from metadata when present, else from the Arrow type.
pub fn kql_type_of(field: &Field) -> KqlType {
    if let Some(kql_type) = field.metadata().get(KQL_TYPE_METADATA).and_then(|t| t.parse().ok()) {
        return kql_type;
    }
    kql_type_of_arrow(field.data_type())
}

/// The KQL type an Arrow type shows as when nothing else is known.
pub fn kql_type_of_arrow(data_type: &DataType) -> KqlType {
    match data_type {
        DataType::Boolean => KqlType::Bool,
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::UInt8 | DataType::UInt16 => KqlType::Int,
        DataType::Int64 | DataType::UInt32 | DataType::UInt64 => KqlType::Long,
        DataType::Float16 | DataType::Float32 | DataType::Float64 => KqlType::Real,
        DataType::Decimal128(..) | DataType::Decimal256(..) => KqlType::Decimal,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => KqlType::String,
        DataType::Timestamp(..) | DataType::Date32 | DataType::Date64 => KqlType::DateTime,
        DataType::Duration(_) | DataType::Interval(_) => KqlType::Timespan,
        _ => KqlType::Dynamic,
    }
}
