//! `scan`: walks the serialized rows in order and matches them against a sequence of steps,
//! each with a condition and assignments that may read the state of the steps before it
//! (`s1.Ts`, `s2.total`). The matching follows the reference engine's two checks, evaluated
//! from the last step to the first for every row:
//!
//! 1. the state of the previous step is active and the row meets this step's condition: the
//!    previous step's state moves to this step, extended by the row (and its assignments);
//! 2. otherwise, this step is active (or is the first step) and the row meets the condition:
//!    the row replaces this step's own record; on the first step with no active sequence a new
//!    match begins (`with_match_id`).
//!
//! Rows matched by a step with `output=all` (the default) are emitted, `output=last` keeps only
//! the last of a run of repeated matches, `output=none` emits nothing. A row may be emitted
//! by several steps. Declared columns hold their default unless the matching step assigns them.
//!
//! The operator is lowered to a window function over the whole input (no partition, no order:
//! the serialized order) that returns, for every row, the list of its output records; the list
//! is then unnested and put back in order. Conditions and assignments are DataFusion expressions over a scope of the
//! row's columns, the declared columns and one `step.column` column per step and column.
//! Conditions that read only the row are evaluated once over the whole input; the rest row by
//! row.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use datafusion::arrow::array::{Array, ArrayRef, BooleanArray, ListArray, StructArray, new_null_array};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Fields, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::{Column, DFSchema, Result, ScalarValue, exec_err};
use datafusion::logical_expr::expr::{WindowFunction, WindowFunctionDefinition};
use datafusion::logical_expr::function::{PartitionEvaluatorArgs, WindowUDFFieldArgs};
use datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext;
use datafusion::logical_expr::{
    Expr, LogicalPlanBuilder, PartitionEvaluator, Signature, Volatility, WindowUDF, WindowUDFImpl, lit,
};
use datafusion::physical_expr::execution_props::ExecutionProps;
use datafusion::physical_expr::{PhysicalExpr, create_physical_expr};
use trawl_common::{ErrorCode, KqlType, TrawlError};
use trawl_kql::ast::{Expr as KExpr, ExprKind, Ident, Literal, ParamType, Scan};
use trawl_kql::span::Span;

use crate::context::{Planner, Tabular, column, internal};
use crate::scalar::kql_type_of_scalar;

/// What a step emits when it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Output {
    All,
    Last,
    None,
}

/// A step lowered to DataFusion expressions over the scan scope.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Step {
    condition: Expr,
    /// (index of the declared column, value).
    assignments: Vec<(usize, Expr)>,
    output: Output,
}

/// Everything the evaluator needs, fixed while planning.
#[derive(Debug)]
struct ScanSpec {
    /// Identifies this scan for equality and hashing (each scan is its own function).
    id: u64,
    steps: Vec<Step>,
    /// The scope: row columns, declared columns, then `step.column` for every step.
    scope: Arc<DFSchema>,
    /// Number of row (input) columns.
    row_columns: usize,
    /// Declared columns' defaults, typed.
    defaults: Vec<ScalarValue>,
    /// The output record: `__seq` (its position in the output: unnesting does not keep the
    /// order, so the records are sorted by it again), `__match`, then the declared columns.
    record: Fields,
}

impl PartialEq for ScanSpec {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl Eq for ScanSpec {}

impl std::hash::Hash for ScanSpec {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.id.hash(state);
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct ScanWindow {
    spec: Arc<ScanSpec>,
    signature: Signature,
}

impl WindowUDFImpl for ScanWindow {
    fn name(&self) -> &str {
        "scan"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn partition_evaluator(&self, _args: PartitionEvaluatorArgs) -> Result<Box<dyn PartitionEvaluator>> {
        let props = ExecutionProps::new();
        let context = PhysicalPlanningContext::default();
        let mut conditions = Vec::with_capacity(self.spec.steps.len());
        let mut assignments = Vec::with_capacity(self.spec.steps.len());
        for step in &self.spec.steps {
            let row_only = step.condition.column_refs().iter().all(|c| {
                self.spec
                    .scope
                    .index_of_column(c)
                    .is_ok_and(|i| i < self.spec.row_columns)
            });
            conditions.push((
                create_physical_expr(&step.condition, &self.spec.scope, &props, &context)?,
                row_only,
            ));
            let mut lowered = Vec::with_capacity(step.assignments.len());
            for (index, value) in &step.assignments {
                lowered.push((*index, create_physical_expr(value, &self.spec.scope, &props, &context)?));
            }
            assignments.push(lowered);
        }
        Ok(Box::new(ScanEvaluator {
            spec: self.spec.clone(),
            schema: Arc::new(self.spec.scope.as_arrow().clone()),
            conditions,
            assignments,
        }))
    }

    fn field(&self, field_args: WindowUDFFieldArgs) -> Result<FieldRef> {
        Ok(Arc::new(Field::new(
            field_args.name(),
            record_list_type(&self.spec.record),
            true,
        )))
    }
}

fn record_list_type(record: &Fields) -> DataType {
    DataType::List(Arc::new(Field::new("item", DataType::Struct(record.clone()), true)))
}

/// A step's record in a state: the input row and the declared values as assigned.
#[derive(Debug, Clone)]
struct Record {
    row: usize,
    declared: Vec<ScalarValue>,
}

/// The state of a step: the records of the steps up to it, and the match id.
#[derive(Debug, Clone)]
struct State {
    match_id: i64,
    records: Vec<Option<Record>>,
}

/// An output record of a row.
struct Emitted {
    match_id: i64,
    declared: Vec<ScalarValue>,
    dropped: bool,
}

type Physical = Arc<dyn PhysicalExpr>;

struct ScanEvaluator {
    spec: Arc<ScanSpec>,
    schema: SchemaRef,
    /// Per step: the condition, and whether it reads only the row's columns.
    conditions: Vec<(Physical, bool)>,
    assignments: Vec<Vec<(usize, Physical)>>,
}

impl std::fmt::Debug for ScanEvaluator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScanEvaluator")
            .field("steps", &self.spec.steps.len())
            .finish()
    }
}

fn is_true(array: &ArrayRef, index: usize) -> Result<bool> {
    match array.as_any().downcast_ref::<BooleanArray>() {
        Some(flags) => Ok(flags.is_valid(index) && flags.value(index)),
        None => exec_err!("a scan condition must be a bool, found {}", array.data_type()),
    }
}

impl ScanEvaluator {
    /// A one-row batch of the scope: row `row`, the declared values, and the records of `view`.
    fn scope_batch(
        &self,
        values: &[ArrayRef],
        row: usize,
        declared: &[ScalarValue],
        view: Option<&State>,
    ) -> Result<RecordBatch> {
        let fields = self.schema.fields();
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(fields.len());
        columns.extend(values.iter().map(|v| v.slice(row, 1)));
        for value in declared {
            columns.push(value.to_array()?);
        }
        for step in 0..self.spec.steps.len() {
            match view.and_then(|s| s.records.get(step)).and_then(Option::as_ref) {
                Some(record) => {
                    columns.extend(values.iter().map(|v| v.slice(record.row, 1)));
                    for value in &record.declared {
                        columns.push(value.to_array()?);
                    }
                }
                None => {
                    columns.extend(values.iter().map(|v| new_null_array(v.data_type(), 1)));
                    for value in &self.spec.defaults {
                        columns.push(value.to_array()?);
                    }
                }
            }
        }
        Ok(RecordBatch::try_new(self.schema.clone(), columns)?)
    }

    /// Whether row `row` meets step `step`'s condition, reading the state `view`.
    fn meets(
        &self,
        step: usize,
        values: &[ArrayRef],
        row: usize,
        view: Option<&State>,
        whole: &[Option<ArrayRef>],
    ) -> Result<bool> {
        if let Some(Some(flags)) = whole.get(step) {
            return is_true(flags, row);
        }
        let batch = self.scope_batch(values, row, &self.spec.defaults, view)?;
        let result = self.conditions[step].0.evaluate(&batch)?.into_array(1)?;
        is_true(&result, 0)
    }

    /// The declared values of row `row` matched by step `step`, reading the state `view`.
    fn assign(&self, step: usize, values: &[ArrayRef], row: usize, view: Option<&State>) -> Result<Vec<ScalarValue>> {
        let mut declared = self.spec.defaults.clone();
        for (index, expr) in &self.assignments[step] {
            let batch = self.scope_batch(values, row, &declared, view)?;
            let result = expr.evaluate(&batch)?.into_array(1)?;
            declared[*index] = ScalarValue::try_from_array(&result, 0)?;
        }
        Ok(declared)
    }

    /// Conditions that read only the row, evaluated over every row at once.
    fn whole_conditions(&self, values: &[ArrayRef], rows: usize) -> Result<Vec<Option<ArrayRef>>> {
        let mut out = Vec::with_capacity(self.conditions.len());
        let mut batch = None;
        for (condition, row_only) in &self.conditions {
            if !row_only {
                out.push(None);
                continue;
            }
            if batch.is_none() {
                let mut columns: Vec<ArrayRef> = values.to_vec();
                for field in self.schema.fields().iter().skip(values.len()) {
                    columns.push(new_null_array(field.data_type(), rows));
                }
                let options = datafusion::arrow::record_batch::RecordBatchOptions::new().with_row_count(Some(rows));
                batch = Some(RecordBatch::try_new_with_options(
                    self.schema.clone(),
                    columns,
                    &options,
                )?);
            }
            if let Some(batch) = &batch {
                out.push(Some(condition.evaluate(batch)?.into_array(rows)?));
            }
        }
        Ok(out)
    }
}

impl PartitionEvaluator for ScanEvaluator {
    fn evaluate_all(&mut self, values: &[ArrayRef], num_rows: usize) -> Result<ArrayRef> {
        if values.len() != self.spec.row_columns {
            return exec_err!("scan expects {} columns, found {}", self.spec.row_columns, values.len());
        }
        // The scan's expressions were built for the plan's types; the rows may arrive in
        // another encoding of them (a string view for a string).
        let mut cast_values = Vec::with_capacity(values.len());
        for (value, field) in values.iter().zip(self.schema.fields().iter()) {
            cast_values.push(if value.data_type() == field.data_type() {
                value.clone()
            } else {
                datafusion::arrow::compute::cast(value, field.data_type())?
            });
        }
        let values = cast_values.as_slice();
        let steps = self.spec.steps.len();
        let whole = self.whole_conditions(values, num_rows)?;
        let mut states: Vec<Option<State>> = vec![None; steps];
        let mut emitted: Vec<Vec<Emitted>> = Vec::with_capacity(num_rows);
        // Per step with `output=last`: where its latest emitted record is (row, position).
        let mut last_emitted: Vec<Option<(usize, usize)>> = vec![None; steps];
        let mut next_match = 0i64;
        for row in 0..num_rows {
            let mut out: Vec<Emitted> = Vec::new();
            for step in (0..steps).rev() {
                let output = self.spec.steps[step].output;
                // Check 1: the previous step's state moves here.
                if step > 0 && states[step - 1].is_some() {
                    let view = states[step - 1].as_ref();
                    if self.meets(step, values, row, view, &whole)? {
                        let declared = self.assign(step, values, row, view)?;
                        let Some(mut state) = states[step - 1].take() else {
                            continue;
                        };
                        state.records[step] = Some(Record {
                            row,
                            declared: declared.clone(),
                        });
                        if output != Output::None {
                            last_emitted[step] = Some((row, out.len()));
                            out.push(Emitted {
                                match_id: state.match_id,
                                declared,
                                dropped: false,
                            });
                        }
                        states[step] = Some(state);
                        continue;
                    }
                }
                // Check 2: the step's own active sequence (or the first step).
                if step == 0 || states[step].is_some() {
                    let view = states[step].as_ref();
                    if !self.meets(step, values, row, view, &whole)? {
                        continue;
                    }
                    let declared = self.assign(step, values, row, view)?;
                    let starts = states[step].is_none();
                    let state = states[step].get_or_insert_with(|| {
                        next_match += 1;
                        State {
                            match_id: next_match - 1,
                            records: vec![None; steps],
                        }
                    });
                    state.records[step] = Some(Record {
                        row,
                        declared: declared.clone(),
                    });
                    let match_id = state.match_id;
                    match output {
                        Output::None => {}
                        Output::All => out.push(Emitted {
                            match_id,
                            declared,
                            dropped: false,
                        }),
                        Output::Last => {
                            if !starts && let Some((at_row, at)) = last_emitted[step] {
                                if at_row == row {
                                    out[at].dropped = true;
                                } else if let Some(previous) = emitted.get_mut(at_row).and_then(|e| e.get_mut(at)) {
                                    previous.dropped = true;
                                }
                            }
                            last_emitted[step] = Some((row, out.len()));
                            out.push(Emitted {
                                match_id,
                                declared,
                                dropped: false,
                            });
                        }
                    }
                }
            }
            emitted.push(out);
        }
        self.records(emitted)
    }
}

impl ScanEvaluator {
    /// The list of output records of every row.
    fn records(&self, emitted: Vec<Vec<Emitted>>) -> Result<ArrayRef> {
        let mut offsets = Vec::with_capacity(emitted.len() + 1);
        offsets.push(0i32);
        let mut match_ids = Vec::new();
        let mut sequence = Vec::new();
        let mut declared: Vec<Vec<ScalarValue>> = vec![Vec::new(); self.spec.defaults.len()];
        let mut total = 0i32;
        for row in emitted {
            for record in row.into_iter().filter(|r| !r.dropped) {
                match_ids.push(record.match_id);
                sequence.push(i64::from(total));
                for (column, value) in declared.iter_mut().zip(record.declared) {
                    column.push(value);
                }
                total += 1;
            }
            offsets.push(total);
        }
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(self.spec.record.len());
        columns.push(Arc::new(datafusion::arrow::array::Int64Array::from(sequence)));
        columns.push(Arc::new(datafusion::arrow::array::Int64Array::from(match_ids)));
        for (values, field) in declared.into_iter().zip(self.spec.record.iter().skip(2)) {
            columns.push(if values.is_empty() {
                datafusion::arrow::array::new_empty_array(field.data_type())
            } else {
                ScalarValue::iter_to_array(values)?
            });
        }
        let records = StructArray::try_new(self.spec.record.clone(), columns, None)?;
        let item = Arc::new(Field::new("item", DataType::Struct(self.spec.record.clone()), true));
        Ok(Arc::new(ListArray::try_new(
            item,
            OffsetBuffer::new(offsets.into()),
            Arc::new(records),
            None,
        )?))
    }
}

/// Replaces `step.column` member accesses with a name of the scan scope (`step.column`).
/// The step names a scan's expressions may qualify columns with, and the input columns that
/// steps assign, read from a step's state under their carried name.
struct StepNames {
    names: Vec<String>,
    /// (input column, the declared column that carries its assigned value).
    carried: Vec<(String, String)>,
}

impl StepNames {
    fn contains(&self, name: &String) -> bool {
        self.names.contains(name)
    }

    fn member<'n>(&'n self, name: &'n str) -> &'n str {
        self.carried
            .iter()
            .find(|(c, _)| c == name)
            .map_or(name, |(_, hidden)| hidden.as_str())
    }
}

fn scope_names(expr: &KExpr, steps: &StepNames) -> KExpr {
    expr.rewritten(&mut |e| match &e.kind {
        ExprKind::Member { target, member } => match &target.kind {
            ExprKind::Name(step) if steps.contains(&step.name) => Some(KExpr::new(
                ExprKind::Name(Ident::new(
                    format!("{}.{}", step.name, steps.member(&member.name)),
                    e.span,
                )),
                e.span,
            )),
            _ => None,
        },
        _ => None,
    })
}

static NEXT_SCAN: AtomicU64 = AtomicU64::new(0);

/// `expr` with the casts the analyzer would add in a plan (the scan's expressions are evaluated
/// outside one).
fn coerce(expr: Expr, scope: &Arc<DFSchema>) -> Result<Expr, TrawlError> {
    use datafusion::common::tree_node::TreeNode;
    use datafusion::logical_expr::simplify::SimplifyContext;
    use datafusion::optimizer::analyzer::type_coercion::TypeCoercionRewriter;
    use datafusion::optimizer::simplify_expressions::ExprSimplifier;
    let coerced = expr
        .rewrite(&mut TypeCoercionRewriter::new(scope))
        .map(|t| t.data)
        .map_err(|e| internal(&e))?;
    ExprSimplifier::new(SimplifyContext::builder().with_schema(scope.clone()).build())
        .simplify(coerced)
        .map_err(|e| internal(&e))
}

impl Planner<'_> {
    pub fn scan_operator(&mut self, input: Tabular, scan: &Scan, span: Span) -> Result<Tabular, TrawlError> {
        if scan.steps.is_empty() {
            return Err(self.error(ErrorCode::BadRequest, span, "scan needs at least one step"));
        }
        let mut match_column = None;
        for param in &scan.params {
            if !param.name.eq_ignore_ascii_case("with_match_id") {
                return Err(self.error(
                    ErrorCode::BadRequest,
                    param.span,
                    format!("unknown scan parameter '{}'", param.name),
                ));
            }
            match &param.value.kind {
                ExprKind::Name(ident) => match_column = Some(ident.name.clone()),
                ExprKind::Literal(Literal::String(name)) => match_column = Some(name.clone()),
                _ => {
                    return Err(self.error(ErrorCode::BadRequest, param.span, "with_match_id takes a column name"));
                }
            }
        }
        let step_names: Vec<String> = scan.steps.iter().map(|s| s.name.name.clone()).collect();
        for (index, step) in scan.steps.iter().enumerate() {
            if step_names[..index].contains(&step.name.name) {
                return Err(self.error(
                    ErrorCode::BadRequest,
                    step.span,
                    format!("the scan step name '{}' is used twice", step.name.name),
                ));
            }
        }
        // Declared columns, with their typed defaults.
        let empty = self.empty_tabular()?;
        let mut declared: Vec<(String, KqlType)> = Vec::with_capacity(scan.declare.len());
        let mut defaults = Vec::with_capacity(scan.declare.len());
        for param in &scan.declare {
            let ParamType::Scalar(ty) = &param.ty else {
                return Err(self.error(ErrorCode::BadRequest, param.span, "scan declares scalar columns"));
            };
            let kql_type = kql_type_of_scalar(*ty);
            let name = param.name.name.clone();
            if input.column_type(&name).is_some() || declared.iter().any(|(n, _)| *n == name) {
                return Err(self.error(
                    ErrorCode::BadRequest,
                    param.span,
                    format!("the declared column '{name}' already exists"),
                ));
            }
            let data_type = trawl_functions::types::arrow_type(kql_type);
            let default = match &param.default {
                None => ScalarValue::try_from(&data_type).map_err(|e| internal(&e))?,
                Some(value) => {
                    let typed = self.scalar(value, &empty)?;
                    let converted = self.convert(typed, kql_type, value)?;
                    match crate::sources::constant_value(&converted) {
                        Some(constant) => constant.cast_to(&data_type).map_err(|e| internal(&e))?,
                        None => {
                            return Err(self.error(
                                ErrorCode::BadRequest,
                                value.span,
                                "a declared column's default must be a constant",
                            ));
                        }
                    }
                }
            };
            declared.push((name, kql_type));
            defaults.push(default);
        }
        // Input columns that steps assign: each is carried by a hidden declared column, which
        // steps that do not assign it set to the row's own value.
        let mut carried: Vec<(String, String)> = Vec::new();
        for step in &scan.steps {
            for assignment in &step.assignments {
                let Some(target) = assignment.name() else { continue };
                if declared.iter().any(|(n, _)| *n == target.name) || carried.iter().any(|(c, _)| *c == target.name) {
                    continue;
                }
                let Some(kql_type) = input.column_type(&target.name) else {
                    continue;
                };
                let hidden = format!("__trawl_scan_carried_{}", target.name);
                let data_type = trawl_functions::types::arrow_type(kql_type);
                defaults.push(ScalarValue::try_from(&data_type).map_err(|e| internal(&e))?);
                declared.push((hidden.clone(), kql_type));
                carried.push((target.name.clone(), hidden));
            }
        }
        let scoped = StepNames {
            names: step_names.clone(),
            carried: carried.clone(),
        };
        // The scope: the row, the declared columns, then every step's copy of both.
        let input_schema = input.plan.schema().clone();
        let mut row_fields: Vec<(String, KqlType, DataType)> = Vec::new();
        for (name, kql_type) in &input.columns {
            let data_type = input_schema
                .field_with_unqualified_name(name)
                .map(|f| f.data_type().clone())
                .map_err(|e| internal(&e))?;
            row_fields.push((name.clone(), *kql_type, data_type));
        }
        let mut current: Vec<(String, KqlType, DataType)> = row_fields.clone();
        for ((name, kql_type), default) in declared.iter().zip(&defaults) {
            current.push((name.clone(), *kql_type, default.data_type()));
        }
        let mut scope_columns = current.clone();
        for step in &step_names {
            for (name, kql_type, data_type) in &current {
                scope_columns.push((format!("{step}.{name}"), *kql_type, data_type.clone()));
            }
        }
        let scope_schema = Schema::new(
            scope_columns
                .iter()
                .map(|(n, _, t)| Field::new(n, t.clone(), true))
                .collect::<Vec<_>>(),
        );
        let scope_df = Arc::new(DFSchema::try_from(scope_schema).map_err(|e| internal(&e))?);
        let scope_plan = LogicalPlanBuilder::empty(false)
            .project(
                scope_columns
                    .iter()
                    .map(|(n, _, t)| datafusion::logical_expr::cast(lit(ScalarValue::Null), t.clone()).alias(n)),
            )
            .and_then(|b| b.build())
            .map_err(|e| internal(&e))?;
        let scope = Tabular {
            plan: scope_plan,
            columns: scope_columns.iter().map(|(n, k, _)| (n.clone(), *k)).collect(),
        };
        // The steps.
        let mut steps = Vec::with_capacity(scan.steps.len());
        for step in &scan.steps {
            let output = match step.output.as_ref().map(|o| o.name.to_ascii_lowercase()).as_deref() {
                None | Some("all") => Output::All,
                Some("last") => Output::Last,
                Some("none") => Output::None,
                Some(other) => {
                    return Err(self.error(
                        ErrorCode::BadRequest,
                        step.span,
                        format!("unknown step output '{other}': expected all, last or none"),
                    ));
                }
            };
            let condition = scope_names(&step.condition, &scoped);
            let typed = self.scalar(&condition, &scope)?;
            let condition = coerce(self.boolean(typed, &condition)?, &scope_df)?;
            let mut assignments = Vec::with_capacity(step.assignments.len());
            for assignment in &step.assignments {
                let Some(target) = assignment.name() else {
                    return Err(self.error(
                        ErrorCode::BadRequest,
                        assignment.expr.span,
                        "a scan assignment names a declared column: `column = value`",
                    ));
                };
                let target_name = scoped.member(&target.name);
                let Some(index) = declared.iter().position(|(n, _)| n == target_name) else {
                    return Err(self.error(
                        ErrorCode::BadRequest,
                        target.span,
                        format!(
                            "'{}' is neither a declared column of the scan nor a column of its input",
                            target.name
                        ),
                    ));
                };
                let value = scope_names(&assignment.expr, &scoped);
                let typed = self.scalar(&value, &scope)?;
                let converted = self.convert(typed, declared[index].1, &value)?;
                assignments.push((index, coerce(converted, &scope_df)?));
            }
            for (name, hidden) in &carried {
                if let Some(index) = declared.iter().position(|(n, _)| n == hidden)
                    && !assignments.iter().any(|(i, _)| *i == index)
                {
                    assignments.push((index, coerce(column(name), &scope_df)?));
                }
            }
            steps.push(Step {
                condition,
                assignments,
                output,
            });
        }
        let mut record = vec![
            Field::new("__seq", DataType::Int64, true),
            Field::new("__match", DataType::Int64, true),
        ];
        for ((name, _), default) in declared.iter().zip(&defaults) {
            record.push(Field::new(name, default.data_type(), true));
        }
        let spec = ScanSpec {
            id: NEXT_SCAN.fetch_add(1, Ordering::Relaxed),
            steps,
            scope: scope_df,
            row_columns: row_fields.len(),
            defaults,
            record: Fields::from(record),
        };
        let udwf = WindowUDF::from(ScanWindow {
            spec: Arc::new(spec),
            signature: Signature::variadic_any(Volatility::Immutable),
        });
        let args: Vec<Expr> = input.columns.iter().map(|(n, _)| column(n)).collect();
        let mut window = WindowFunction::new(WindowFunctionDefinition::WindowUDF(Arc::new(udwf)), args);
        if let Some(partition) = &self.partition_column {
            window.params.partition_by = vec![column(partition)];
        }
        let call = crate::windows::in_serial_order(Expr::from(window), &input);
        let records = "__trawl_scan";
        let plan = LogicalPlanBuilder::window_plan(input.plan.clone(), vec![call]).map_err(|e| internal(&e))?;
        let mut stage: Vec<Expr> = input.columns.iter().map(|(n, _)| column(n).alias(n)).collect();
        let window_output = Column::from(plan.schema().qualified_field(plan.schema().fields().len() - 1));
        stage.push(Expr::Column(window_output).alias(records));
        let unnested = LogicalPlanBuilder::from(plan)
            .project(stage)
            .and_then(|b| b.unnest_columns_with_options(vec![Column::new_unqualified(records)], Default::default()))
            .map_err(|e| internal(&e))?;
        let field = |name: &str| datafusion::functions::core::expr_fn::get_field(column(records), name);
        let mut exprs: Vec<Expr> = input
            .columns
            .iter()
            .map(|(n, _)| match carried.iter().find(|(c, _)| c == n) {
                Some((_, hidden)) => field(hidden).alias(n),
                None => column(n).alias(n),
            })
            .collect();
        let mut columns = input.columns.clone();
        for (name, kql_type) in &declared {
            if carried.iter().any(|(_, hidden)| hidden == name) {
                continue;
            }
            exprs.push(field(name).alias(name));
            columns.push((name.clone(), *kql_type));
        }
        if let Some(name) = match_column {
            exprs.retain(|e| e.schema_name().to_string() != name);
            columns.retain(|(n, _)| *n != name);
            exprs.push(field("__match").alias(&name));
            columns.push((name, KqlType::Long));
        }
        let plan = unnested
            .sort(vec![field("__seq").sort(true, false)])
            .and_then(|b| b.project(exprs))
            .and_then(|b| b.build())
            .map_err(|e| internal(&e))?;
        Ok(Tabular { plan, columns })
    }
}
