//! Unions and intersections of shapes: `geo_union_polygons_array`, `geo_intersection_2polygons`,
//! `geo_union_lines_array`, `geo_simplify_polygons_array`. The geometry is in [`super::overlay`].

use datafusion::common::Result;
use serde_json::Value;

use super::lines::tolerance;
use super::overlay::{self, Loops, Op};
use super::shape::{self, Ll, Polygon, Shape};
use super::sphere::{EARTH_RADIUS, simplify, vecs};
use crate::rowfn::{Out, Val, arg};

/// The elements of a dynamic array argument, each checked by `item`; `None` when the argument
/// is not an array or any element fails.
fn array_of<T>(v: Val, item: impl Fn(Shape) -> Option<T>) -> Option<Vec<T>> {
    let Value::Array(items) = crate::json::parse(v)? else {
        return None;
    };
    items.iter().map(|i| item(shape::parse_value(i)?)).collect()
}

fn polygons_of(shape: Shape) -> Option<Vec<Polygon>> {
    match shape {
        Shape::Polygon(p) => Some(vec![p]),
        Shape::MultiPolygon(ps) => Some(ps),
        _ => None,
    }
}

/// The union of an array of polygons and multipolygons; `None` when any is invalid or the
/// array is too large.
fn union_of_array(v: Val) -> Option<Loops> {
    let items = array_of(v, polygons_of)?;
    if items.iter().flatten().flatten().map(Vec::len).sum::<usize>() > overlay::MOST_VERTICES {
        return None;
    }
    let parts: Option<Vec<Loops>> = items.iter().map(|ps| overlay::region_of(ps)).collect();
    overlay::union_all(parts?)
}

/// `geo_union_polygons_array(polygons)`: a Polygon or MultiPolygon (an empty
/// GeometryCollection for an empty array).
pub fn geo_union_polygons_array(args: &[Val]) -> Result<Out> {
    Ok(shape::out_opt(union_of_array(arg(args, 0)).map(|u| u.to_shape())))
}

/// `geo_intersection_2polygons(polygon1, polygon2)`: the shared area, and the points and lines
/// where the polygons only touch; an empty GeometryCollection when they do not meet.
pub fn geo_intersection_2polygons(args: &[Val]) -> Result<Out> {
    let region = |i: usize| overlay::region_of(&shape::polygons(arg(args, i))?);
    let (Some(a), Some(b)) = (region(0), region(1)) else {
        return Ok(Out::Null);
    };
    Ok(shape::out_opt(
        overlay::combine(&a, &b, Op::Intersection).map(|c| c.to_shape()),
    ))
}

/// `geo_union_lines_array(lines)`: a LineString or MultiLineString.
pub fn geo_union_lines_array(args: &[Val]) -> Result<Out> {
    let lines = array_of(arg(args, 0), |s| match s {
        Shape::Line(l) => Some(vec![l]),
        Shape::MultiLine(ls) => Some(ls),
        _ => None,
    });
    let united = lines.and_then(|ls| overlay::union_lines(&ls.into_iter().flatten().collect::<Vec<_>>()));
    Ok(shape::out_opt(united.map(|ls| {
        if ls.is_empty() {
            shape::empty_collection()
        } else {
            shape::line_shape(ls)
        }
    })))
}

/// A ring with the vertices within `tol` radians of the simplified ring dropped; `None` when
/// fewer than three remain.
fn simplify_ring(ring: &[Ll], tol: f64) -> Option<Vec<Ll>> {
    let kept: Vec<Ll> = simplify(&vecs(ring), tol).into_iter().map(|i| ring[i]).collect();
    (kept.len() >= 4).then_some(kept)
}

/// `geo_simplify_polygons_array(polygons, tolerance = 10)`: the union of the polygons with the
/// vertices within `tolerance` meters of the simplified rings dropped; null when nothing is
/// left.
pub fn geo_simplify_polygons_array(args: &[Val]) -> Result<Out> {
    let (Some(united), Some(tol)) = (
        union_of_array(arg(args, 0)),
        tolerance(args, 1, 10.0, 0.0..=7_800_000.0),
    ) else {
        return Ok(Out::Null);
    };
    let simplified: Vec<Polygon> = united
        .to_polygons()
        .iter()
        .filter_map(|p| {
            let (shell, holes) = p.split_first()?;
            let shell = simplify_ring(shell, tol / EARTH_RADIUS)?;
            Some(
                std::iter::once(shell)
                    .chain(holes.iter().filter_map(|h| simplify_ring(h, tol / EARTH_RADIUS)))
                    .collect(),
            )
        })
        .collect();
    if simplified.is_empty() {
        return Ok(Out::Null);
    }
    Ok(shape::out(shape::polygon_shape(simplified)))
}

#[cfg(test)]
// The expected coordinates are the documented ones, digit for digit.
#[allow(clippy::excessive_precision)]
mod tests {
    use super::*;
    use crate::testing::{d, r, run};
    use datafusion::logical_expr::ColumnarValue;

    fn dynamic(name: &str, args: Vec<ColumnarValue>) -> Option<Value> {
        let shown = run(name, &args);
        (shown != "null").then(|| serde_json::from_str(&shown).unwrap_or(Value::Null))
    }

    const P1: &str = r#"{"type":"Polygon","coordinates":[[[-73.9495,40.7969],[-73.95807,40.80068],[-73.98201,40.76825],[-73.97317,40.76455],[-73.9495,40.7969]]]}"#;
    const P2: &str = r#"{"type":"Polygon","coordinates":[[[-73.94622,40.79249],[-73.96888,40.79282],[-73.9577,40.7789],[-73.94622,40.79249]]]}"#;
    const P3: &str = r#"{"type":"Polygon","coordinates":[[[-73.97335,40.77274],[-73.9936,40.76630],[-73.97171,40.75655],[-73.97335,40.77274]]]}"#;

    #[test]
    fn union_of_an_array_is_one_polygon_and_null_for_an_invalid_element() {
        let united = dynamic("geo_union_polygons_array", vec![d(&format!("[{P1},{P2},{P3}]"))]);
        let Some(united) = united else { panic!("a union") };
        assert_eq!(united["type"], "Polygon");
        assert_eq!(united["coordinates"][0].as_array().map(Vec::len), Some(14));
        let invalid = r#"{"type":"Polygon","coordinates":[[[-73.94622,40.79249]]]}"#;
        assert_eq!(
            dynamic("geo_union_polygons_array", vec![d(&format!("[{P1},{invalid}]"))]),
            None
        );
        assert_eq!(dynamic("geo_union_polygons_array", vec![d("{}")]), None);
        assert_eq!(
            dynamic("geo_union_polygons_array", vec![d("[]")]),
            Some(serde_json::json!({"type":"GeometryCollection","geometries":[]}))
        );
    }

    #[test]
    fn intersection_with_a_multipolygon_is_a_collection_of_a_point_and_a_polygon() {
        let m = r#"{"type":"MultiPolygon","coordinates":[[[[3,44],[2,45],[2,43],[3,44]]],[[[1.192,45.265],[1.005,44.943],[1.356,44.937],[1.192,45.265]]]]}"#;
        let t = r#"{"type":"Polygon","coordinates":[[[2,45],[0,45],[1,44],[2,45]]]}"#;
        let Some(v) = dynamic("geo_intersection_2polygons", vec![d(t), d(m)]) else {
            panic!("an intersection")
        };
        assert_eq!(v["type"], "GeometryCollection");
        assert_eq!(
            v["geometries"][0],
            serde_json::json!({"type":"Point","coordinates":[2,45]})
        );
        let ring = &v["geometries"][1]["coordinates"][0];
        let expected = [
            [1.3227075526410679, 45.003909145068739],
            [1.0404565374899824, 45.004356403066552],
            [1.005, 44.943],
            [1.356, 44.937],
            [1.3227075526410679, 45.003909145068739],
        ];
        for (k, e) in expected.iter().enumerate() {
            for c in 0..2 {
                let a = ring[k][c].as_f64().unwrap_or(f64::NAN);
                assert!((a - e[c]).abs() < 1e-9, "vertex {k}: {ring}");
            }
        }
        assert_eq!(
            dynamic("geo_intersection_2polygons", vec![d(r#"{"type":"Polygon"}"#), d(t)]),
            None
        );
    }

    #[test]
    fn lines_unite_and_an_invalid_line_gives_null() {
        let a = r#"{"type":"LineString","coordinates":[[0,0],[1,1],[2,1]]}"#;
        let b = r#"{"type":"LineString","coordinates":[[1,1],[2,1],[3,0]]}"#;
        assert_eq!(
            dynamic("geo_union_lines_array", vec![d(&format!("[{a},{b}]"))]),
            Some(serde_json::json!({"type":"LineString","coordinates":[[0,0],[1,1],[2,1],[3,0]]}))
        );
        let bad = r#"{"type":"LineString","coordinates":[[1,1]]}"#;
        assert_eq!(dynamic("geo_union_lines_array", vec![d(&format!("[{a},{bad}]"))]), None);
    }

    #[test]
    fn simplifying_drops_close_vertices_and_a_polygon_that_vanishes_is_null() {
        let Some(v) = dynamic("geo_simplify_polygons_array", vec![d(&format!("[{P1},{P2},{P3}]"))]) else {
            panic!("a simplified union")
        };
        assert_eq!(v["type"], "Polygon");
        let arr = d(&format!("[{P1},{P2},{P3}]"));
        assert_eq!(dynamic("geo_simplify_polygons_array", vec![arr, r(10_000.0)]), None);
        let arr = d(&format!("[{P1}]"));
        assert_eq!(dynamic("geo_simplify_polygons_array", vec![arr, r(-1.0)]), None);
    }
}
