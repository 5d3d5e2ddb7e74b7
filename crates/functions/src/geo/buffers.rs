//! Buffers: `geo_line_buffer` and `geo_polygon_buffer`, the region within a radius of a shape,
//! as the union of a disk around every vertex, a band along every edge and, for polygons, the
//! polygon itself.

use std::f64::consts::TAU;

use datafusion::common::Result;

use super::overlay::{self, Loop, Loops, Vertex};
use super::shape::{self, Ll, Polygon};
use super::sphere::{EARTH_RADIUS, V3, add, angle, cross, interpolate, scale, unit};
use crate::rowfn::{Out, Val, arg};

/// The radius and tolerance arguments in radians: the radius positive (below a quarter of the
/// Earth's circumference), the tolerance (10 m by default) at least a millionth of the radius
/// and lowered to just below the radius.
fn radius_and_tolerance(args: &[Val]) -> Option<(f64, f64)> {
    let radius = arg(args, 1)
        .real()
        .filter(|r| *r > 0.0 && *r / EARTH_RADIUS < TAU / 4.0)?;
    let tolerance = match arg(args, 2) {
        Val::Null => 10.0,
        v => v.real().filter(|t| *t > 0.0)?,
    };
    if tolerance < radius * 1e-6 {
        return None;
    }
    Some((radius / EARTH_RADIUS, tolerance.min(radius * 0.999_999) / EARTH_RADIUS))
}

/// The point `rho` radians from `c` in direction `dir` (a unit tangent at `c`).
fn offset(c: V3, dir: V3, rho: f64) -> V3 {
    add(scale(c, rho.cos()), scale(dir, rho.sin()))
}

/// A polygon around `c` holding the disk of radius `rho`: its edges touch the circle, its
/// vertices stray at most `tol` beyond it; counterclockwise.
fn disk(c: V3, rho: f64, tol: f64) -> Option<Loop> {
    // Vertices at angle ρ' with cos(π/n)·tan ρ' = tan ρ stray ρ' - ρ from the circle.
    let step = (rho.tan() / (rho + tol).tan()).clamp(-1.0, 1.0).acos();
    let n = ((std::f64::consts::PI / step).ceil() as usize).clamp(3, 100_000);
    let outer = (rho.tan() / (std::f64::consts::PI / n as f64).cos()).atan();
    let helper = if c[2].abs() < 0.9 {
        [0.0, 0.0, 1.0]
    } else {
        [1.0, 0.0, 0.0]
    };
    let e1 = unit(cross(cross(c, helper), c))?;
    let e2 = cross(c, e1);
    Some(
        (0..n)
            .map(|i| {
                let a = TAU * i as f64 / n as f64;
                Vertex::at(offset(c, add(scale(e1, a.cos()), scale(e2, a.sin())), outer))
            })
            .collect(),
    )
}

/// The band within `rho` of edge `p`–`q` (without the round ends), its long sides cut into
/// arcs that dip at most `tol` below the ideal distance; counterclockwise.
fn band(p: V3, q: V3, rho: f64, tol: f64) -> Option<Loop> {
    let length = angle(p, q);
    let normal = unit(cross(p, q))?;
    // An arc between two points at distance ρ from the edge's great circle, s apart, dips about
    // ρ(1 - cos(s/2)) below it. Slightly narrower than the disks so their edges cross cleanly.
    let longest = 2.0 * (1.0 - (tol / rho).min(1.0)).acos();
    let pieces = ((length / longest).ceil() as usize).clamp(1, 100_000);
    let width = rho * (1.0 - 1e-9);
    let along: Vec<V3> = (0..=pieces)
        .map(|i| interpolate(p, q, i as f64 / pieces as f64))
        .collect();
    let right = along.iter().map(|c| Vertex::at(offset(*c, scale(normal, -1.0), width)));
    let left = along.iter().rev().map(|c| Vertex::at(offset(*c, normal, width)));
    Some(right.chain(left).collect())
}

/// The disks around `vertices` and the bands along consecutive pairs (and the closing pair for
/// rings); `None` past [`overlay::MOST_VERTICES`].
fn pieces(paths: &[(Vec<Ll>, bool)], rho: f64, tol: f64) -> Option<Vec<Loops>> {
    let mut parts: Vec<Loops> = Vec::new();
    let mut count = 0;
    let mut push = |l: Loop, parts: &mut Vec<Loops>| -> Option<()> {
        count += l.len();
        (count <= overlay::MOST_VERTICES).then_some(())?;
        parts.push(Loops {
            polygons: vec![vec![l]],
        });
        Some(())
    };
    for (path, closed) in paths {
        let vs: Vec<V3> = path.iter().map(|p| Vertex::of(*p).v).collect();
        let open = if *closed {
            &vs[..vs.len().saturating_sub(1)]
        } else {
            &vs[..]
        };
        for (i, v) in open.iter().enumerate() {
            push(disk(*v, rho, tol)?, &mut parts)?;
            let next = match open.get(i + 1) {
                Some(n) => Some(*n),
                None if *closed => open.first().copied(),
                None => None,
            };
            if let Some(n) = next
                && angle(*v, n) > 1e-12
            {
                push(band(*v, n, rho, tol)?, &mut parts)?;
            }
        }
    }
    Some(parts)
}

fn area_out(region: Loops) -> Out {
    shape::out(region.to_shape())
}

/// `geo_line_buffer(line, radius, tolerance = 10)`: the region within `radius` meters of the
/// line, round at its ends.
pub fn geo_line_buffer(args: &[Val]) -> Result<Out> {
    let (Some(lines), Some((rho, tol))) = (shape::lines(arg(args, 0)), radius_and_tolerance(args)) else {
        return Ok(Out::Null);
    };
    let paths: Vec<(Vec<Ll>, bool)> = lines.into_iter().map(|l| (l, false)).collect();
    Ok(pieces(&paths, rho, tol)
        .and_then(overlay::union_all)
        .map_or(Out::Null, area_out))
}

/// Polygons grown by `rho` radians, straying at most `tol` from the ideal outline.
pub fn grow(polygons: &[Polygon], rho: f64, tol: f64) -> Option<Loops> {
    let own = overlay::region_of(polygons)?;
    let paths: Vec<(Vec<Ll>, bool)> = polygons.iter().flatten().map(|r| (r.clone(), true)).collect();
    let mut parts = pieces(&paths, rho, tol)?;
    parts.insert(0, own);
    overlay::union_all(parts)
}

/// `geo_polygon_buffer(polygon, radius, tolerance = 10)`: the polygon grown by `radius` meters.
pub fn geo_polygon_buffer(args: &[Val]) -> Result<Out> {
    let (Some(polygons), Some((rho, tol))) = (shape::polygons(arg(args, 0)), radius_and_tolerance(args)) else {
        return Ok(Out::Null);
    };
    Ok(grow(&polygons, rho, tol).map_or(Out::Null, area_out))
}

#[cfg(test)]
mod tests {
    use crate::testing::{d, r, run, run_real};

    fn area(shape: &str) -> f64 {
        run_real("geo_polygon_area", &[d(shape)]).unwrap_or(f64::NAN)
    }

    #[test]
    fn a_line_buffer_is_a_capsule_of_the_expected_area() {
        // 1,000 m east along the equator, buffered by 100 m: a 200 m × 1,000 m band and a disk.
        let line = r#"{"type":"LineString","coordinates":[[0,0],[0.008993,0]]}"#;
        let shown = run("geo_line_buffer", &[d(line), r(100.0), r(0.1)]);
        assert!(shown.starts_with(r#"{"type":"Polygon""#), "{shown}");
        let expected = 200.0 * 1000.0 + std::f64::consts::PI * 100.0 * 100.0;
        let got = area(&shown);
        assert!((got - expected).abs() / expected < 0.002, "{got} vs {expected}");
        for point in [(0.004, 0.0008), (-0.0008, 0.0), (0.0098, 0.0)] {
            let inside = run("geo_point_in_polygon", &[r(point.0), r(point.1), d(&shown)]);
            assert_eq!(inside, "true", "{point:?}");
        }
        let outside = run("geo_point_in_polygon", &[r(0.004), r(0.001), d(&shown)]);
        assert_eq!(outside, "false");
    }

    #[test]
    fn a_bent_line_and_a_polygon_grow_by_the_radius() {
        let bent = r#"{"type":"LineString","coordinates":[[0,0],[0.01,0],[0.01,0.01],[0,0.0005]]}"#;
        let shown = run("geo_line_buffer", &[d(bent), r(50.0)]);
        assert!(shown.starts_with(r#"{"type":"Polygon""#), "{shown}");
        let square = r#"{"type":"Polygon","coordinates":[[[0,0],[0.01,0],[0.01,0.01],[0,0.01],[0,0]]]}"#;
        let grown = run("geo_polygon_buffer", &[d(square), r(100.0)]);
        let side = 0.01f64.to_radians() * 6_371_010.0;
        let expected = side * side + 4.0 * side * 100.0 + std::f64::consts::PI * 100.0 * 100.0;
        let got = area(&grown);
        assert!((got - expected).abs() / expected < 0.002, "{got} vs {expected}");
    }

    #[test]
    fn invalid_shapes_radii_and_tolerances_give_null() {
        assert_eq!(run("geo_line_buffer", &[d(r#"{"type":"LineString"}"#), r(5.0)]), "null");
        let line = r#"{"type":"LineString","coordinates":[[0,0],[1,1]]}"#;
        assert_eq!(run("geo_line_buffer", &[d(line), r(0.0)]), "null");
        assert_eq!(run("geo_line_buffer", &[d(line), r(100.0), r(0.00001)]), "null");
        let triangle = r#"{"type":"Polygon","coordinates":[[[10,10],[0,10],[0,0],[10,10]]]}"#;
        assert_eq!(run("geo_polygon_buffer", &[d(triangle), r(0.0)]), "null");
        assert_eq!(run("geo_polygon_buffer", &[d(r#"{"type":"p"}"#), r(1.0)]), "null");
    }
}
