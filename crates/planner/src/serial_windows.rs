//! Row functions that walk the serialized rows in order with state a DataFusion built-in window
//! cannot keep: `row_cumsum(x, restart)`, `row_rank_dense(x[, restart])`,
//! `row_rank_min(x[, restart])` and `row_window_session(t, max_from_first, max_between[,
//! restart])`. Each is a window function over the whole input (no partition, no order: the
//! input's serialized order) whose evaluator sees every row at once.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Float64Array, Int64Array};
use datafusion::arrow::compute::kernels::cmp::distinct;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Float64Type, Int64Type, TimeUnit};
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::expr::{WindowFunction, WindowFunctionDefinition};
use datafusion::logical_expr::function::{PartitionEvaluatorArgs, WindowUDFFieldArgs};
use datafusion::logical_expr::{Expr, PartitionEvaluator, Signature, Volatility, WindowUDF, WindowUDFImpl};

/// Which serial function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Serial {
    /// `row_cumsum(x, restart)`.
    CumsumRestart,
    /// `row_rank_dense(x[, restart])`.
    RankDense,
    /// `row_rank_min(x[, restart])`.
    RankMin,
    /// `row_window_session(t, max_from_first, max_between[, restart])`.
    WindowSession,
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct SerialWindow {
    kind: Serial,
    signature: Signature,
}

impl SerialWindow {
    fn name(kind: Serial) -> &'static str {
        match kind {
            Serial::CumsumRestart => "row_cumsum",
            Serial::RankDense => "row_rank_dense",
            Serial::RankMin => "row_rank_min",
            Serial::WindowSession => "row_window_session",
        }
    }
}

impl WindowUDFImpl for SerialWindow {
    fn name(&self) -> &str {
        SerialWindow::name(self.kind)
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn partition_evaluator(&self, _args: PartitionEvaluatorArgs) -> Result<Box<dyn PartitionEvaluator>> {
        Ok(Box::new(SerialEvaluator { kind: self.kind }))
    }

    fn field(&self, field_args: WindowUDFFieldArgs) -> Result<FieldRef> {
        let input = field_args.input_fields().first().map(|f| f.data_type().clone());
        let data_type = match (self.kind, input) {
            (Serial::CumsumRestart, Some(DataType::Float64)) => DataType::Float64,
            (Serial::CumsumRestart | Serial::RankDense | Serial::RankMin, _) => DataType::Int64,
            (Serial::WindowSession, Some(data_type)) => data_type,
            (Serial::WindowSession, None) => DataType::Timestamp(TimeUnit::Nanosecond, None),
        };
        Ok(Arc::new(Field::new(field_args.name(), data_type, true)))
    }
}

/// The window expression for `kind` over `args` (already lowered and type-checked).
pub fn call(kind: Serial, args: Vec<Expr>) -> Expr {
    let udwf = WindowUDF::from(SerialWindow {
        kind,
        signature: Signature::variadic_any(Volatility::Immutable),
    });
    Expr::from(WindowFunction::new(
        WindowFunctionDefinition::WindowUDF(Arc::new(udwf)),
        args,
    ))
}

#[derive(Debug)]
struct SerialEvaluator {
    kind: Serial,
}

/// `restart[i]`: the optional boolean argument at `index` is true on row `i`.
fn restarts(values: &[ArrayRef], index: usize, rows: usize) -> Result<Vec<bool>> {
    let Some(array) = values.get(index) else {
        return Ok(vec![false; rows]);
    };
    let Some(flags) = array.as_any().downcast_ref::<BooleanArray>() else {
        return exec_err!("the restart argument must be a bool, found {}", array.data_type());
    };
    Ok((0..rows).map(|i| flags.is_valid(i) && flags.value(i)).collect())
}

/// `changed[i]`: row `i`'s value differs from row `i - 1`'s (nulls equal each other); row 0
/// counts as changed.
fn changes(values: &ArrayRef) -> Result<Vec<bool>> {
    let rows = values.len();
    let mut changed = vec![true; rows];
    if rows > 1 {
        let differs = distinct(&values.slice(1, rows - 1), &values.slice(0, rows - 1))?;
        for (i, flag) in changed.iter_mut().enumerate().skip(1) {
            *flag = differs.value(i - 1);
        }
    }
    Ok(changed)
}

impl PartitionEvaluator for SerialEvaluator {
    fn evaluate_all(&mut self, values: &[ArrayRef], num_rows: usize) -> Result<ArrayRef> {
        let Some(first) = values.first() else {
            return exec_err!("{} needs an argument", SerialWindow::name(self.kind));
        };
        match self.kind {
            Serial::CumsumRestart => {
                let restart = restarts(values, 1, num_rows)?;
                match first.data_type() {
                    DataType::Float64 => {
                        let input = first.as_primitive::<Float64Type>();
                        let mut total = 0.0;
                        let out: Float64Array = (0..num_rows)
                            .map(|i| {
                                if restart[i] {
                                    total = 0.0;
                                }
                                if input.is_valid(i) {
                                    total += input.value(i);
                                }
                                Some(total)
                            })
                            .collect();
                        Ok(Arc::new(out))
                    }
                    _ => {
                        let cast = datafusion::arrow::compute::cast(first, &DataType::Int64)?;
                        let input = cast.as_primitive::<Int64Type>();
                        let mut total = 0_i64;
                        let out: Int64Array = (0..num_rows)
                            .map(|i| {
                                if restart[i] {
                                    total = 0;
                                }
                                if input.is_valid(i) {
                                    total = total.wrapping_add(input.value(i));
                                }
                                Some(total)
                            })
                            .collect();
                        Ok(Arc::new(out))
                    }
                }
            }
            Serial::RankDense | Serial::RankMin => {
                let restart = restarts(values, 1, num_rows)?;
                let changed = changes(first)?;
                let (mut rank, mut position) = (0_i64, 0_i64);
                let out: Int64Array = (0..num_rows)
                    .map(|i| {
                        if i == 0 || restart[i] {
                            rank = 1;
                            position = 1;
                        } else {
                            position += 1;
                            if changed[i] {
                                rank = if self.kind == Serial::RankDense {
                                    rank + 1
                                } else {
                                    position
                                };
                            }
                        }
                        Some(rank)
                    })
                    .collect();
                Ok(Arc::new(out))
            }
            Serial::WindowSession => {
                let restart = restarts(values, 3, num_rows)?;
                let nanos = |array: &ArrayRef| -> Result<Vec<Option<i64>>> {
                    let cast = datafusion::arrow::compute::cast(array, &DataType::Int64)?;
                    let cast = cast.as_primitive::<Int64Type>();
                    Ok((0..cast.len())
                        .map(|i| cast.is_valid(i).then(|| cast.value(i)))
                        .collect())
                };
                let times = nanos(first)?;
                let limit = |index: usize| -> Result<Option<i64>> {
                    match values.get(index) {
                        Some(array) => Ok(nanos(array)?.into_iter().flatten().next()),
                        None => exec_err!("row_window_session needs 3 or 4 arguments"),
                    }
                };
                let (from_first, between) = (limit(1)?, limit(2)?);
                let mut start: Option<i64> = None;
                let mut previous: Option<i64> = None;
                let out: Int64Array = (0..num_rows)
                    .map(|i| {
                        let time = times[i]?;
                        let new_session = match (start, previous) {
                            (Some(s), Some(p)) => {
                                restart[i]
                                    || from_first.is_some_and(|max| time.saturating_sub(s) > max)
                                    || between.is_some_and(|max| time.saturating_sub(p) > max)
                            }
                            _ => true,
                        };
                        if new_session {
                            start = Some(time);
                        }
                        previous = Some(time);
                        start
                    })
                    .collect();
                let out: ArrayRef = Arc::new(out);
                Ok(datafusion::arrow::compute::cast(&out, first.data_type())?)
            }
        }
    }
}
