//! `evaluate geo_polygon_lookup(LookupTable, PolygonKey, Longitude, Latitude [, radius]
//! [, return_unmatched] [, lookup_area_radius] [, return_lookup_key])` (with `radius`, a
//! location within that many meters of a polygon matches it too) and `evaluate geo_line_lookup(LookupTable,
//! LineKey, Longitude, Latitude, Radius [, return_unmatched] [, lookup_area_radius]
//! [, return_lookup_key])`: a join of the input's locations with the polygons that hold them, or
//! the lines within `Radius` meters of them.
//!
//! The output is the input's columns, then the lookup table's (its key column only with
//! `return_lookup_key = true`; a name already taken gets a `1` suffix, as `join` does). One row
//! per match; with `return_unmatched = true` locations that match nothing are kept with nulls.
//! `lookup_area_radius` only tunes how Kusto indexes the lookup shapes; it is read and checked
//! here but changes nothing, since every location is tested against every shape.

use std::sync::Arc;

use datafusion::common::{Column, JoinType};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{Expr, LogicalPlanBuilder};
use trawl_common::{ErrorCode, KqlType, TrawlError};
use trawl_kql::ast::{Expr as KExpr, ExprKind, Literal};
use trawl_kql::span::Span;

use crate::context::{Planner, Tabular, column, internal};

pub(crate) const LEFT: &str = "__trawl_geo_left";
pub(crate) const RIGHT: &str = "__trawl_geo_right";
const LNG: &str = "__trawl_geo_lng";
const LAT: &str = "__trawl_geo_lat";
const RADIUS: &str = "__trawl_geo_radius";

/// Which shapes a lookup matches locations against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GeoLookup {
    Polygon,
    Line,
}

pub(crate) fn side(qualifier: &str, name: &str) -> Expr {
    Expr::Column(Column::new(Some(qualifier), name))
}

pub(crate) fn registered(name: &str, args: Vec<Expr>) -> Result<Expr, TrawlError> {
    let function = trawl_functions::registry::lookup(name)
        .ok_or_else(|| TrawlError::new(ErrorCode::Internal, format!("{name} is not registered")))?;
    Ok(Expr::ScalarFunction(ScalarFunction::new_udf(
        Arc::new((function.udf)()),
        args,
    )))
}

impl Planner<'_> {
    pub(crate) fn geo_lookup(
        &mut self,
        input: Tabular,
        args: &[KExpr],
        span: Span,
        kind: GeoLookup,
    ) -> Result<Tabular, TrawlError> {
        let plugin = match kind {
            GeoLookup::Polygon => "geo_polygon_lookup",
            GeoLookup::Line => "geo_line_lookup",
        };
        let required = match kind {
            GeoLookup::Polygon => 4,
            GeoLookup::Line => 5,
        };
        let optional: &[&str] = match kind {
            GeoLookup::Polygon => &["radius", "return_unmatched", "lookup_area_radius", "return_lookup_key"],
            GeoLookup::Line => &["return_unmatched", "lookup_area_radius", "return_lookup_key"],
        };
        let mut positional: Vec<&KExpr> = Vec::new();
        let mut named: Vec<(String, &KExpr)> = Vec::new();
        for arg in args {
            match &arg.kind {
                ExprKind::NamedArgument { name, value } => named.push((name.name.to_ascii_lowercase(), value)),
                _ if named.is_empty() => positional.push(arg),
                _ => {
                    return Err(self.error(
                        ErrorCode::BadRequest,
                        arg.span,
                        format!("{plugin}: positional arguments come before named ones"),
                    ));
                }
            }
        }
        if positional.len() < required || positional.len() > required + optional.len() {
            return Err(self.error(
                ErrorCode::BadRequest,
                span,
                format!(
                    "{plugin} takes {required} arguments (lookup table, key column, longitude, latitude{}) \
                     and optionally {}",
                    if kind == GeoLookup::Line { ", radius" } else { "" },
                    optional.join(", ")
                ),
            ));
        }
        for (i, value) in positional[required..].iter().enumerate() {
            named.push((optional[i].to_string(), value));
        }
        let mut flags = [false; 2];
        let mut polygon_radius: Option<&KExpr> = None;
        for (name, value) in &named {
            match name.as_str() {
                "radius" if kind == GeoLookup::Polygon => polygon_radius = Some(value),
                "return_unmatched" | "return_lookup_key" => {
                    let ExprKind::Literal(Literal::Bool(b)) = value.kind else {
                        return Err(self.error(
                            ErrorCode::BadRequest,
                            value.span,
                            format!("{name} must be true or false"),
                        ));
                    };
                    flags[usize::from(name == "return_lookup_key")] = b;
                }
                "lookup_area_radius" => {
                    let ok = match value.kind {
                        ExprKind::Literal(Literal::Long(n)) => n > 0,
                        ExprKind::Literal(Literal::Int(n)) => n > 0,
                        ExprKind::Literal(Literal::Real(r)) => r > 0.0,
                        _ => false,
                    };
                    if !ok {
                        return Err(self.error(
                            ErrorCode::BadRequest,
                            value.span,
                            "lookup_area_radius must be a positive number of meters",
                        ));
                    }
                }
                other => {
                    return Err(self.error(
                        ErrorCode::BadRequest,
                        value.span,
                        format!("{plugin} has no argument '{other}'"),
                    ));
                }
            }
        }
        let [return_unmatched, return_key] = flags;

        let lookup = self.tabular(positional[0])?;
        let ExprKind::Name(key) = &positional[1].kind else {
            return Err(self.error(
                ErrorCode::BadRequest,
                positional[1].span,
                format!("{plugin}: the key must be a column of the lookup table"),
            ));
        };
        if lookup.column_type(&key.name).is_none() {
            return Err(self.error(
                ErrorCode::UnknownColumn,
                key.span,
                format!("the lookup table has no column '{}'", key.name),
            ));
        }
        let lng = self.scalar(positional[2], &input)?;
        let lat = self.scalar(positional[3], &input)?;
        let mut located = vec![lng.expr.alias(LNG), lat.expr.alias(LAT)];
        let radius = match kind {
            GeoLookup::Line => Some(positional[4]),
            GeoLookup::Polygon => polygon_radius,
        };
        if let Some(radius) = radius {
            let radius = self.scalar(radius, &input)?;
            if !radius.kql_type.is_numeric() {
                return Err(self.error(
                    ErrorCode::TypeMismatch,
                    span,
                    format!("{plugin}: the radius is a number of meters, found {}", radius.kql_type),
                ));
            }
            located.push(radius.expr.alias(RADIUS));
        }
        let point = vec![side(LEFT, LNG), side(LEFT, LAT), side(RIGHT, &key.name)];
        let condition = match (kind, radius.is_some()) {
            (GeoLookup::Polygon, false) => registered("geo_point_in_polygon", point)?.is_true(),
            (GeoLookup::Polygon, true) => registered("geo_distance_point_to_polygon", point)?.lt_eq(side(LEFT, RADIUS)),
            (GeoLookup::Line, _) => registered("geo_distance_point_to_line", point)?.lt_eq(side(LEFT, RADIUS)),
        };
        let added = lookup
            .columns
            .iter()
            .filter(|(name, _)| return_key || *name != key.name);
        lookup_join(&input, located, &lookup, condition, return_unmatched, added)
    }
}

/// The lookup plugins' join: the input with the `computed` columns the condition reads (aliased
/// [`LEFT`]) joined with the lookup table (aliased [`RIGHT`]) where `condition` holds (rows of
/// the input that match nothing are kept with nulls when `return_unmatched`), projected to the
/// input's columns then the `added` lookup columns.
pub(crate) fn lookup_join<'c>(
    input: &Tabular,
    computed: Vec<Expr>,
    lookup: &Tabular,
    condition: Expr,
    return_unmatched: bool,
    added: impl Iterator<Item = &'c (String, KqlType)>,
) -> Result<Tabular, TrawlError> {
    let mut located: Vec<Expr> = input.columns.iter().map(|(n, _)| column(n).alias(n)).collect();
    located.extend(computed);
    let left = input
        .builder()
        .project(located)
        .and_then(|b| b.alias(LEFT))
        .and_then(|b| b.build())
        .map_err(|e| internal(&e))?;
    let right = lookup
        .builder()
        .alias(RIGHT)
        .and_then(|b| b.build())
        .map_err(|e| internal(&e))?;
    let join_type = if return_unmatched {
        JoinType::Left
    } else {
        JoinType::Inner
    };
    let joined = LogicalPlanBuilder::from(left)
        .join_on(right, join_type, vec![condition])
        .map_err(|e| internal(&e))?;
    let mut exprs = Vec::new();
    let mut columns: Vec<(String, KqlType)> = Vec::new();
    for (name, kql_type) in &input.columns {
        exprs.push(side(LEFT, name).alias(name));
        columns.push((name.clone(), *kql_type));
    }
    crate::joins::append_right(&mut exprs, &mut columns, added, RIGHT);
    let plan = joined
        .project(exprs)
        .and_then(|b| b.build())
        .map_err(|e| internal(&e))?;
    Ok(Tabular { plan, columns })
}

#[cfg(test)]
mod tests {
    use trawl_common::ErrorCode;

    const AREAS: &str = r#"let areas = datatable(name:string, shape:dynamic) [
        "a", dynamic({"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,0]]]})];
        let places = datatable(lng:real, lat:real) [0.5, 0.1];"#;

    fn plan(text: &str) -> Result<Vec<String>, trawl_common::TrawlError> {
        crate::testing::columns_of(&format!("{AREAS} {text}"))
    }

    fn code(text: &str) -> Option<ErrorCode> {
        crate::testing::error_code(&format!("{AREAS} {text}"))
    }

    #[test]
    fn output_columns_and_binding_errors() {
        assert_eq!(
            plan("places | evaluate geo_polygon_lookup(areas, shape, lng, lat)").ok(),
            Some(vec!["lng".to_string(), "lat".into(), "name".into()])
        );
        assert_eq!(
            plan("places | evaluate geo_polygon_lookup(areas, shape, lng, lat, return_lookup_key = true)").ok(),
            Some(vec!["lng".to_string(), "lat".into(), "name".into(), "shape".into()])
        );
        assert_eq!(
            code("places | evaluate geo_polygon_lookup(areas, nope, lng, lat)"),
            Some(ErrorCode::UnknownColumn)
        );
        assert_eq!(
            code("places | evaluate geo_polygon_lookup(areas, shape, lng, nope)"),
            Some(ErrorCode::UnknownColumn)
        );
        assert_eq!(
            code("places | evaluate geo_line_lookup(areas, shape, lng, lat)"),
            Some(ErrorCode::BadRequest)
        );
        assert_eq!(
            code("places | evaluate geo_polygon_lookup(areas, shape, lng, lat, return_unmatched = 1)"),
            Some(ErrorCode::BadRequest)
        );
        assert_eq!(
            code("places | evaluate geo_polygon_lookup(areas, shape, lng, lat, lookup_area_radius = -5)"),
            Some(ErrorCode::BadRequest)
        );
        assert_eq!(
            code("places | evaluate geo_polygon_lookup(areas, shape, lng, lat, colour = true)"),
            Some(ErrorCode::BadRequest)
        );
    }
}
