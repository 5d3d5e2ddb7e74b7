//! Whether lines and polygons meet, and where lines meet lines and polygons.

use datafusion::common::Result;

use super::polygons::region;
use super::shape;
use super::sphere::{Region, V3, angle, edge_intersection, interpolate, line_edges, ll_of, vecs};
use crate::rowfn::{Out, Val, arg};

fn lines(v: Val) -> Option<Vec<Vec<V3>>> {
    Some(shape::lines(v)?.iter().map(|l| vecs(l)).collect())
}

fn crosses(first: impl Iterator<Item = (V3, V3)>, second: &[(V3, V3)]) -> bool {
    first
        .into_iter()
        .any(|(a, b)| second.iter().any(|(c, d)| edge_intersection(a, b, *c, *d).is_some()))
}

/// `geo_intersects_2lines(line1, line2)`.
pub fn geo_intersects_2lines(args: &[Val]) -> Result<Out> {
    let (Some(l1), Some(l2)) = (lines(arg(args, 0)), lines(arg(args, 1))) else {
        return Ok(Out::Null);
    };
    let edges: Vec<_> = line_edges(&l2).collect();
    Ok(Out::Bool(crosses(line_edges(&l1), &edges)))
}

/// `geo_intersection_2lines(line1, line2)`: the points where they cross or touch and the
/// stretches they share (a Point, MultiPoint, LineString, MultiLineString or a
/// GeometryCollection of both; an empty GeometryCollection when they do not meet).
pub fn geo_intersection_2lines(args: &[Val]) -> Result<Out> {
    let (Some(l1), Some(l2)) = (shape::lines(arg(args, 0)), shape::lines(arg(args, 1))) else {
        return Ok(Out::Null);
    };
    Ok(shape::out_opt(
        super::overlay::intersect_lines(&l1, &l2).map(|met| met.to_shape()),
    ))
}

/// `geo_intersects_line_with_polygon(line, polygon)`.
pub fn geo_intersects_line_with_polygon(args: &[Val]) -> Result<Out> {
    let (Some(l), Some(region)) = (lines(arg(args, 0)), region(arg(args, 1))) else {
        return Ok(Out::Null);
    };
    let edges: Vec<_> = region.edges().collect();
    let inside = l.iter().flatten().any(|p| region.contains(*p));
    Ok(Out::Bool(inside || crosses(line_edges(&l), &edges)))
}

/// `geo_intersects_2polygons(polygon1, polygon2)`.
pub fn geo_intersects_2polygons(args: &[Val]) -> Result<Out> {
    let (Some(r1), Some(r2)) = (region(arg(args, 0)), region(arg(args, 1))) else {
        return Ok(Out::Null);
    };
    let vertices = |r: &Region| -> Vec<V3> { r.edges().map(|(a, _)| a).collect() };
    let within = vertices(&r1).iter().any(|p| r2.contains(*p)) || vertices(&r2).iter().any(|p| r1.contains(*p));
    let edges: Vec<_> = r2.edges().collect();
    Ok(Out::Bool(within || crosses(r1.edges(), &edges)))
}

/// The parts of edge `a`–`b` inside `region`, each as its two ends.
fn clip_edge(a: V3, b: V3, region: &Region, boundary: &[(V3, V3)]) -> Vec<(V3, V3)> {
    let length = angle(a, b);
    let mut cuts: Vec<(f64, V3)> = vec![(0.0, a), (1.0, b)];
    for (c, d) in boundary {
        if let Some(x) = edge_intersection(a, b, *c, *d) {
            cuts.push((if length > 0.0 { angle(a, x) / length } else { 0.0 }, x));
        }
    }
    cuts.sort_by(|x, y| x.0.total_cmp(&y.0));
    cuts.dedup_by(|x, y| (x.0 - y.0).abs() < 1e-12);
    cuts.windows(2)
        .filter(|w| region.contains(interpolate(a, b, (w[0].0 + w[1].0) / 2.0)))
        .map(|w| (w[0].1, w[1].1))
        .collect()
}

/// `geo_intersection_line_with_polygon(line, polygon)`: the parts of the line inside the polygon.
pub fn geo_intersection_line_with_polygon(args: &[Val]) -> Result<Out> {
    let (Some(l), Some(region)) = (lines(arg(args, 0)), region(arg(args, 1))) else {
        return Ok(Out::Null);
    };
    let boundary: Vec<_> = region.edges().collect();
    let mut parts: Vec<Vec<V3>> = Vec::new();
    for line in &l {
        let mut current: Vec<V3> = Vec::new();
        for w in line.windows(2) {
            for (s, e) in clip_edge(w[0], w[1], &region, &boundary) {
                match current.last() {
                    Some(last) if angle(*last, s) < 1e-12 => current.push(e),
                    _ => {
                        if current.len() >= 2 {
                            parts.push(std::mem::take(&mut current));
                        }
                        current = vec![s, e];
                    }
                }
            }
        }
        if current.len() >= 2 {
            parts.push(current);
        }
    }
    if parts.is_empty() {
        return Ok(shape::out(shape::empty_collection()));
    }
    Ok(shape::out(shape::line_shape(
        parts.into_iter().map(|p| p.into_iter().map(ll_of).collect()).collect(),
    )))
}

#[cfg(test)]
mod tests {
    use crate::testing::{d, run};

    #[test]
    fn documented_intersections() {
        let l1 = r#"{"type":"LineString","coordinates":[[-73.978929,40.785155],[-73.980903,40.782621]]}"#;
        let l2 = r#"{"type":"LineString","coordinates":[[-73.985195,40.788275],[-73.974552,40.779761]]}"#;
        assert_eq!(run("geo_intersects_2lines", &[d(l1), d(l2)]), "true");
        let point = run("geo_intersection_2lines", &[d(l1), d(l2)]);
        assert!(
            point.starts_with(r#"{"type":"Point","coordinates":[-73.979837116"#),
            "{point}"
        );
        let far = r#"{"type":"LineString","coordinates":[[3,3],[4,4]]}"#;
        let near = r#"{"type":"LineString","coordinates":[[1,1],[2,2]]}"#;
        assert_eq!(
            run("geo_intersection_2lines", &[d(near), d(far)]),
            r#"{"type":"GeometryCollection","geometries":[]}"#
        );
        let polygon = r#"{"type":"Polygon","coordinates":[[[-90.263,36.738],[-102.041,45.274],[-109.335,36.527],[-90.263,36.738]],[[-100.393,41.705],[-103.139,38.925],[-97.558,39.113],[-100.393,41.705]]]}"#;
        let line = r#"{"type":"LineString","coordinates":[[-110.522, 39.198],[-91.428, 40.880]]}"#;
        let clipped = run("geo_intersection_line_with_polygon", &[d(line), d(polygon)]);
        assert!(
            clipped.starts_with(r#"{"type":"MultiLineString","coordinates":[[[-106.893536558"#),
            "{clipped}"
        );
    }
}
