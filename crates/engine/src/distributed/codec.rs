//! How Trawl's own plan nodes and functions travel to workers.
//!
//! [`TrawlCodec`] is registered on the planning node and on every worker, for physical plans
//! (our scan leaf, the summarize budget's context node) and for the logical filters the scan
//! carries. A function travels by name when the worker's registry holds the same instance
//! (`functions.rs`); any other function cannot be encoded, and a plan that holds one runs on
//! the node that planned it.

use std::sync::Arc;

use datafusion::arrow::datatypes::Schema;
use datafusion::common::TableReference;
use datafusion::datasource::TableProvider;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{AggregateUDF, Extension, LogicalPlan, ScalarUDF, WindowUDF};
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::logical_plan::LogicalExtensionCodec;
use datafusion_proto::logical_plan::from_proto::parse_exprs;
use datafusion_proto::logical_plan::to_proto::serialize_exprs;
use datafusion_proto::physical_plan::{PhysicalExtensionCodec, PhysicalProtoConverterExtension};
use datafusion_proto::protobuf;
use prost::Message;
use serde::{Deserialize, Serialize};
use trawl_catalog::{ColumnInfo, SegmentMeta, SegmentState};
use trawl_storage::{ScanSpec, SegmentScanExec};

use super::functions::SHELF;
use crate::budget::ContextExec;

/// The codec; see the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct TrawlCodec;

/// A function the workers do not know as the plan has it.
#[derive(Debug, thiserror::Error)]
#[error("the {kind} `{name}` is built for this query and cannot be sent to other nodes")]
pub(crate) struct NotTransportable {
    pub(crate) kind: &'static str,
    pub(crate) name: String,
}

fn not_transportable(kind: &'static str, name: &str) -> DataFusionError {
    DataFusionError::External(Box::new(NotTransportable {
        kind,
        name: name.to_string(),
    }))
}

/// The wire form of a node, tagged.
#[derive(Clone, PartialEq, Message)]
struct NodeProto {
    #[prost(oneof = "Node", tags = "1, 2")]
    node: Option<Node>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
enum Node {
    #[prost(message, tag = "1")]
    Scan(Box<ScanProto>),
    #[prost(message, tag = "2")]
    Context(ContextProto),
}

#[derive(Clone, PartialEq, Message)]
struct ScanProto {
    #[prost(string, tag = "1")]
    database: String,
    #[prost(string, tag = "2")]
    table: String,
    #[prost(message, optional, tag = "3")]
    schema: Option<protobuf::Schema>,
    #[prost(uint64, repeated, tag = "4")]
    projection: Vec<u64>,
    #[prost(message, repeated, tag = "5")]
    filters: Vec<protobuf::LogicalExprNode>,
    #[prost(uint64, optional, tag = "6")]
    limit: Option<u64>,
    /// The segments of each partition, as JSON (`WireSegment`s).
    #[prost(string, tag = "7")]
    partitions: String,
    #[prost(string, optional, tag = "8")]
    worker: Option<String>,
    /// The query's id, under which the scan counts what it reads as it reads.
    #[prost(string, optional, tag = "9")]
    query: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct ContextProto {
    /// The summarize budget's limit; absent: the query's own context.
    #[prost(uint64, optional, tag = "1")]
    budget: Option<u64>,
}

/// What a worker needs of a segment to read it.
#[derive(Debug, Serialize, Deserialize)]
struct WireSegment {
    id: String,
    database: String,
    table: String,
    path: String,
    min_time: i64,
    max_time: i64,
    rows: u64,
    bytes: u64,
    columns: Vec<ColumnInfo>,
}

impl From<&SegmentMeta> for WireSegment {
    fn from(s: &SegmentMeta) -> WireSegment {
        WireSegment {
            id: s.id.clone(),
            database: s.database.clone(),
            table: s.table.clone(),
            path: s.path.clone(),
            min_time: s.min_time,
            max_time: s.max_time,
            rows: s.rows,
            bytes: s.bytes,
            columns: s.columns.clone(),
        }
    }
}

impl From<WireSegment> for SegmentMeta {
    fn from(s: WireSegment) -> SegmentMeta {
        SegmentMeta {
            id: s.id,
            database: s.database,
            table: s.table,
            path: s.path,
            min_time: s.min_time,
            max_time: s.max_time,
            rows: s.rows,
            bytes: s.bytes,
            columns: s.columns,
            merge_level: 0,
            state: SegmentState::Live,
            created_at: 0,
            tombstoned_at: None,
            signal: None,
        }
    }
}

fn malformed(what: impl std::fmt::Display) -> DataFusionError {
    DataFusionError::Internal(format!("a plan node from another query node does not decode: {what}"))
}

impl TrawlCodec {
    fn encode_scan(&self, scan: &SegmentScanExec) -> Result<ScanProto> {
        let spec = scan.spec();
        let partitions: Vec<Vec<WireSegment>> = scan
            .partitions()
            .iter()
            .map(|part| part.iter().map(WireSegment::from).collect())
            .collect();
        Ok(ScanProto {
            database: spec.database.clone(),
            table: spec.table.clone(),
            schema: Some(protobuf::Schema::try_from(spec.schema.as_ref())?),
            projection: spec.projection.iter().map(|&i| i as u64).collect(),
            filters: serialize_exprs(&spec.filters, self)?,
            limit: spec.limit.map(|l| l as u64),
            partitions: serde_json::to_string(&partitions).map_err(|e| DataFusionError::External(Box::new(e)))?,
            worker: scan.worker().map(str::to_string),
            query: spec.query.clone(),
        })
    }

    fn decode_scan(&self, proto: ScanProto, ctx: &TaskContext) -> Result<SegmentScanExec> {
        let schema = proto
            .schema
            .as_ref()
            .ok_or_else(|| malformed("a scan without a schema"))?;
        let schema = Arc::new(Schema::try_from(schema)?);
        let projection = proto
            .projection
            .iter()
            .map(|&i| usize::try_from(i).ok().filter(|i| *i < schema.fields().len()))
            .collect::<Option<Vec<usize>>>()
            .ok_or_else(|| malformed("a scan projects a column its table lacks"))?;
        let filters = parse_exprs(&proto.filters, ctx, self)?;
        let partitions: Vec<Vec<WireSegment>> = serde_json::from_str(&proto.partitions).map_err(malformed)?;
        let spec = ScanSpec {
            database: proto.database,
            table: proto.table,
            schema,
            projection,
            filters,
            limit: proto.limit.and_then(|l| usize::try_from(l).ok()),
            query: proto.query,
        };
        let partitions = partitions
            .into_iter()
            .map(|part| part.into_iter().map(SegmentMeta::from).collect())
            .collect();
        SegmentScanExec::with_partitions(Arc::new(spec), partitions, proto.worker)
    }
}

impl PhysicalExtensionCodec for TrawlCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
        _proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let proto = NodeProto::decode(buf).map_err(malformed)?;
        match proto.node {
            Some(Node::Scan(scan)) => Ok(Arc::new(self.decode_scan(*scan, ctx)?)),
            Some(Node::Context(context)) => {
                let [input] = inputs else {
                    return Err(malformed("a context node needs one input"));
                };
                let budget = context.budget.map(|b| usize::try_from(b).unwrap_or(usize::MAX));
                Ok(ContextExec::decoded(Arc::clone(input), budget))
            }
            None => Err(malformed("an empty node")),
        }
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        _proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<()> {
        let node = if let Some(scan) = node.downcast_ref::<SegmentScanExec>() {
            Node::Scan(Box::new(self.encode_scan(scan)?))
        } else if let Some(context) = node.downcast_ref::<ContextExec>() {
            Node::Context(ContextProto {
                budget: context.budget_limit().map(|b| b as u64),
            })
        } else {
            return Err(DataFusionError::External(Box::new(NotTransportable {
                kind: "operator",
                name: node.name().to_string(),
            })));
        };
        NodeProto { node: Some(node) }
            .encode(buf)
            .map_err(|e| DataFusionError::Internal(e.to_string()))
    }

    fn try_decode_udf(&self, name: &str, _buf: &[u8]) -> Result<Arc<ScalarUDF>> {
        Err(malformed(format!("unknown function `{name}`")))
    }

    fn try_encode_udf(&self, node: &ScalarUDF, _buf: &mut Vec<u8>) -> Result<()> {
        match SHELF.knows_scalar(node) {
            true => Ok(()),
            false => Err(not_transportable("function", node.name())),
        }
    }

    fn try_decode_udaf(&self, name: &str, _buf: &[u8]) -> Result<Arc<AggregateUDF>> {
        Err(malformed(format!("unknown aggregate `{name}`")))
    }

    fn try_encode_udaf(&self, node: &AggregateUDF, _buf: &mut Vec<u8>) -> Result<()> {
        match SHELF.knows_aggregate(node) {
            true => Ok(()),
            false => Err(not_transportable("aggregate", node.name())),
        }
    }

    fn try_decode_udwf(&self, name: &str, _buf: &[u8]) -> Result<Arc<WindowUDF>> {
        Err(malformed(format!("unknown window function `{name}`")))
    }

    fn try_encode_udwf(&self, node: &WindowUDF, _buf: &mut Vec<u8>) -> Result<()> {
        match SHELF.knows_window(node) {
            true => Ok(()),
            false => Err(not_transportable("window function", node.name())),
        }
    }
}

/// The scan's filters are logical expressions: the same rules for their functions.
impl LogicalExtensionCodec for TrawlCodec {
    fn try_decode(&self, _buf: &[u8], _inputs: &[LogicalPlan], _ctx: &TaskContext) -> Result<Extension> {
        Err(malformed("a logical plan node"))
    }

    fn try_encode(&self, node: &Extension, _buf: &mut Vec<u8>) -> Result<()> {
        Err(not_transportable("plan node", node.node.name()))
    }

    fn try_decode_table_provider(
        &self,
        _buf: &[u8],
        _table_ref: &TableReference,
        _schema: datafusion::arrow::datatypes::SchemaRef,
        _ctx: &TaskContext,
    ) -> Result<Arc<dyn TableProvider>> {
        Err(malformed("a table"))
    }

    fn try_encode_table_provider(
        &self,
        table_ref: &TableReference,
        _node: Arc<dyn TableProvider>,
        _buf: &mut Vec<u8>,
    ) -> Result<()> {
        Err(not_transportable("table", &table_ref.to_string()))
    }

    fn try_decode_udf(&self, name: &str, buf: &[u8]) -> Result<Arc<ScalarUDF>> {
        PhysicalExtensionCodec::try_decode_udf(self, name, buf)
    }

    fn try_encode_udf(&self, node: &ScalarUDF, buf: &mut Vec<u8>) -> Result<()> {
        PhysicalExtensionCodec::try_encode_udf(self, node, buf)
    }

    fn try_decode_udaf(&self, name: &str, buf: &[u8]) -> Result<Arc<AggregateUDF>> {
        PhysicalExtensionCodec::try_decode_udaf(self, name, buf)
    }

    fn try_encode_udaf(&self, node: &AggregateUDF, buf: &mut Vec<u8>) -> Result<()> {
        PhysicalExtensionCodec::try_encode_udaf(self, node, buf)
    }

    fn try_decode_udwf(&self, name: &str, buf: &[u8]) -> Result<Arc<WindowUDF>> {
        PhysicalExtensionCodec::try_decode_udwf(self, name, buf)
    }

    fn try_encode_udwf(&self, node: &WindowUDF, buf: &mut Vec<u8>) -> Result<()> {
        PhysicalExtensionCodec::try_encode_udwf(self, node, buf)
    }
}

/// Why `plan` cannot be sent to other nodes, if it cannot: it is encoded as it would be.
pub(crate) fn cannot_travel(plan: &Arc<dyn ExecutionPlan>) -> Option<String> {
    match datafusion_proto::bytes::physical_plan_to_bytes_with_extension_codec(Arc::clone(plan), &TrawlCodec) {
        Ok(_) => None,
        Err(error) => Some(
            trawl_storage::find_cause::<NotTransportable>(&error)
                .map(|reason| reason.to_string())
                .unwrap_or_else(|| format!("its plan cannot be encoded: {error}")),
        ),
    }
}
