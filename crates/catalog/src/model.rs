use serde::{Deserialize, Serialize};
use trawl_common::KqlType;

/// Inclusive time range in nanoseconds since the epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeRange {
    pub min: i64,
    pub max: i64,
}

/// Lifecycle of a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SegmentState {
    Live,
    Tombstoned,
}

impl SegmentState {
    pub fn as_str(self) -> &'static str {
        match self {
            SegmentState::Live => "live",
            SegmentState::Tombstoned => "tombstoned",
        }
    }
}

/// A column name and its KQL type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ColumnInfo {
    pub name: String,
    #[serde(with = "kql_type_text")]
    pub kql_type: KqlType,
}

mod kql_type_text {
    use serde::{Deserialize, Deserializer, Serializer};
    use trawl_common::KqlType;

    pub fn serialize<S: Serializer>(value: &KqlType, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(value.as_str())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<KqlType, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// One piece of background work the janitor did (a merge pass, retention, deletions, an
/// orphan sweep), kept for a week and listed by `.show operations`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperationRecord {
    pub id: String,
    /// `MergeSegments`, `Retention`, `PurgeDeleted`, `DeleteSegments`, `SweepOrphans`.
    pub kind: String,
    /// The process that did it (the janitor's lease holder id).
    pub node: String,
    pub started_at: i64,
    pub finished_at: i64,
    /// `Completed` or `Failed`.
    pub state: String,
    /// What it did, or why it failed.
    pub status: String,
}

/// The catalog row of one segment.
#[derive(Debug, Clone, PartialEq)]
pub struct SegmentMeta {
    pub id: String,
    pub database: String,
    pub table: String,
    /// Object path of the Parquet file, relative to the object store root.
    pub path: String,
    pub min_time: i64,
    pub max_time: i64,
    pub rows: u64,
    pub bytes: u64,
    pub columns: Vec<ColumnInfo>,
    pub merge_level: u32,
    pub state: SegmentState,
    pub created_at: i64,
    pub tombstoned_at: Option<i64>,
    /// The signal whose rows the segment holds (a segment holds one signal's rows); `None`
    /// for segments registered before the catalog recorded it.
    pub signal: Option<trawl_common::Signal>,
}

/// A table and the union of its segments' columns.
#[derive(Debug, Clone, PartialEq)]
pub struct TableInfo {
    pub database: String,
    pub name: String,
    pub columns: Vec<ColumnInfo>,
}

impl TableInfo {
    /// The columns users see: all but the hidden columns of shredded keys.
    pub fn visible_columns(&self) -> impl Iterator<Item = &ColumnInfo> {
        self.columns
            .iter()
            .filter(|c| !trawl_common::shred::is_hidden_column(&c.name))
    }
}
