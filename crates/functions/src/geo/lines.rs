//! Functions of lines (LineString and MultiLineString): length, distance, closest point,
//! centroid, interpolation, simplification, densification.

use datafusion::common::Result;

use super::shape::{self, Ll, Shape, point_args};
use super::sphere::{
    EARTH_RADIUS, V3, angle, closest_on_edge, closest_on_edges, distance, interpolate, line_angle, line_edges,
    lines_centroid, ll_of, simplify, vec_of, vecs,
};
use crate::rowfn::{Out, Val, arg};

fn line_vecs(v: Val) -> Option<Vec<Vec<V3>>> {
    Some(shape::lines(v)?.iter().map(|l| vecs(l)).collect())
}

/// `geo_line_length(line)`: meters.
pub fn geo_line_length(args: &[Val]) -> Result<Out> {
    Ok(line_vecs(arg(args, 0))
        .map(|lines| lines.iter().map(|l| line_angle(l)).sum::<f64>() * EARTH_RADIUS)
        .into())
}

/// `geo_distance_point_to_line(lng, lat, line)`: meters to the closest point of the line.
pub fn geo_distance_point_to_line(args: &[Val]) -> Result<Out> {
    let (Some(p), Some(lines)) = (point_args(arg(args, 0), arg(args, 1)), line_vecs(arg(args, 2))) else {
        return Ok(Out::Null);
    };
    let x = vec_of(p);
    Ok(closest_on_edges(x, line_edges(&lines))
        .map(|c| angle(x, c) * EARTH_RADIUS)
        .into())
}

/// `geo_closest_point_on_line(lng, lat, line)`: the point of the line closest to the point.
pub fn geo_closest_point_on_line(args: &[Val]) -> Result<Out> {
    let (Some(p), Some(lines)) = (point_args(arg(args, 0), arg(args, 1)), line_vecs(arg(args, 2))) else {
        return Ok(Out::Null);
    };
    let original = shape::lines(arg(args, 2)).unwrap_or_default();
    Ok(shape::out_opt(
        closest_on_edges(vec_of(p), line_edges(&lines)).map(|c| Shape::Point(snap(c, original.iter().flatten()))),
    ))
}

/// The coordinate of `c`: a vertex's own coordinate when `c` is that vertex (no rounding
/// through the vector form), else the converted one.
pub fn snap<'a>(c: V3, vertices: impl IntoIterator<Item = &'a Ll>) -> Ll {
    vertices
        .into_iter()
        .find(|v| vec_of(**v) == c)
        .copied()
        .unwrap_or_else(|| ll_of(c))
}

/// `geo_line_centroid(line)`: the length-weighted center of the line's edges.
pub fn geo_line_centroid(args: &[Val]) -> Result<Out> {
    Ok(shape::out_opt(
        line_vecs(arg(args, 0))
            .and_then(|lines| lines_centroid(&lines))
            .map(|c| Shape::Point(ll_of(c))),
    ))
}

fn single_line(v: Val) -> Option<Vec<V3>> {
    match shape::parse(v)? {
        Shape::Line(points) => Some(vecs(&points)),
        _ => None,
    }
}

/// `geo_line_interpolate_point(line, fraction)`: the point at `fraction` of the line's length.
pub fn geo_line_interpolate_point(args: &[Val]) -> Result<Out> {
    let (Some(line), Some(fraction)) = (single_line(arg(args, 0)), arg(args, 1).real()) else {
        return Ok(Out::Null);
    };
    if !(0.0..=1.0).contains(&fraction) {
        return Ok(Out::Null);
    }
    let total = line_angle(&line);
    let mut left = fraction * total;
    for w in line.windows(2) {
        let edge = angle(w[0], w[1]);
        if left <= edge && edge > 0.0 {
            return Ok(shape::out(Shape::Point(ll_of(interpolate(w[0], w[1], left / edge)))));
        }
        left -= edge;
    }
    Ok(line.last().map_or(Out::Null, |p| shape::out(Shape::Point(ll_of(*p)))))
}

/// `geo_line_locate_point(line, lng, lat [, use_spheroid])`: the fraction of the line's length
/// at which its point closest to the given point lies.
pub fn geo_line_locate_point(args: &[Val]) -> Result<Out> {
    let (Some(line), Some(p)) = (single_line(arg(args, 0)), point_args(arg(args, 1), arg(args, 2))) else {
        return Ok(Out::Null);
    };
    let x = vec_of(p);
    let total = line_angle(&line);
    let (mut before, mut best) = (0.0, None::<(f64, f64)>);
    for w in line.windows(2) {
        let c = closest_on_edge(x, w[0], w[1]);
        let d = angle(x, c);
        if best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, before + angle(w[0], c)));
        }
        before += angle(w[0], w[1]);
    }
    Ok(match best {
        Some(_) if total == 0.0 => Out::Real(0.0),
        Some((_, along)) => Out::Real((along / total).clamp(0.0, 1.0)),
        None => Out::Null,
    })
}

/// The tolerance argument at `i` in meters: `default` when absent, `None` outside `range`.
pub fn tolerance(args: &[Val], i: usize, default: f64, range: std::ops::RangeInclusive<f64>) -> Option<f64> {
    match arg(args, i) {
        Val::Null if args.len() <= i => Some(default),
        v => v.real().filter(|t| range.contains(t)),
    }
}

/// `geo_line_simplify(line, tolerance = 10)`: the line with the vertices that lie within
/// `tolerance` meters of the simplified line dropped; a line that shrinks to ends within the
/// tolerance disappears, and with every line gone the result is null.
pub fn geo_line_simplify(args: &[Val]) -> Result<Out> {
    let (Some(lines), Some(tol)) = (shape::lines(arg(args, 0)), tolerance(args, 1, 10.0, 0.0..=7_800_000.0)) else {
        return Ok(Out::Null);
    };
    // A line whose ends come within the tolerance and that has nothing farther disappears.
    let simplified: Vec<Vec<Ll>> = lines
        .iter()
        .filter_map(|l| {
            let kept = simplify(&vecs(l), tol / EARTH_RADIUS);
            let collapsed = kept.len() < 2 || (kept.len() == 2 && distance(l[kept[0]], l[kept[1]]) <= tol);
            (!collapsed).then(|| kept.into_iter().map(|i| l[i]).collect())
        })
        .collect();
    if simplified.is_empty() {
        return Ok(Out::Null);
    }
    Ok(shape::out(shape::line_shape(simplified)))
}

/// The points between `a` and `b` (planar coordinates) that make the chain of geodesic edges
/// stray at most `tolerance` radians from the planar edge, `a` included and `b` not: the edge
/// is halved until every part fits.
pub fn densify_edge(a: Ll, b: Ll, tolerance: f64, out: &mut Vec<Ll>) -> bool {
    /// Deepest bisection: at most 2^20 parts per edge.
    const DEEPEST: u32 = 20;
    let at = |t: f64| (a.0 + (b.0 - a.0) * t, a.1 + (b.1 - a.1) * t);
    // Halves the planar part [t0, t1] until the geodesic between its ends strays at most
    // `tolerance` from its planar midpoint; emits the start of every part kept.
    fn split(at: &dyn Fn(f64) -> Ll, t0: f64, t1: f64, tolerance: f64, depth: u32, out: &mut Vec<Ll>) -> bool {
        let tm = (t0 + t1) / 2.0;
        let mid = vec_of(at(tm));
        if angle(mid, closest_on_edge(mid, vec_of(at(t0)), vec_of(at(t1)))) <= tolerance {
            out.push(at(t0));
            return true;
        }
        depth < DEEPEST && split(at, t0, tm, tolerance, depth + 1, out) && split(at, tm, t1, tolerance, depth + 1, out)
    }
    split(&at, 0.0, 1.0, tolerance, 0, out)
}

/// A ring or line densified: `None` past the limit of points.
pub fn densify(points: &[Ll], tolerance: f64) -> Option<Vec<Ll>> {
    let mut out = Vec::new();
    for w in points.windows(2) {
        if !densify_edge(w[0], w[1], tolerance, &mut out) || out.len() > 1_000_000 {
            return None;
        }
    }
    out.extend(points.last());
    Some(out)
}

/// `geo_line_densify(line, tolerance = 10 [, preserve_crossing])`: planar edges turned into
/// chains of geodesic edges within `tolerance` meters of them.
pub fn geo_line_densify(args: &[Val]) -> Result<Out> {
    let (Some(lines), Some(tol)) = (shape::lines(arg(args, 0)), tolerance(args, 1, 10.0, 0.1..=10_000.0)) else {
        return Ok(Out::Null);
    };
    let dense: Option<Vec<Vec<Ll>>> = lines.iter().map(|l| densify(l, tol / EARTH_RADIUS)).collect();
    Ok(shape::out_opt(dense.map(shape::line_shape)))
}

#[cfg(test)]
mod tests {
    use crate::testing::{d, r, run, run_real};

    const STRIP: &str = r#"{"type":"LineString","coordinates":[[-115.115385,36.229195],[-115.136995,36.200366],[-115.140252,36.192470],[-115.143558,36.188523],[-115.144076,36.181954],[-115.154662,36.174483],[-115.166431,36.176388],[-115.183289,36.175007],[-115.192612,36.176736],[-115.202485,36.173439],[-115.225355,36.174365]]}"#;

    #[test]
    fn documented_distances_and_points() {
        let dist = run_real("geo_distance_point_to_line", &[r(-115.199625), r(36.210419), d(STRIP)]);
        assert!((dist.unwrap_or(0.0) - 3_797.888_872_533_34).abs() < 1e-6);
        assert_eq!(
            run("geo_closest_point_on_line", &[r(-115.199625), r(36.210419), d(STRIP)]),
            r#"{"type":"Point","coordinates":[-115.192612,36.176736]}"#
        );
        assert_eq!(
            run_real(
                "geo_distance_point_to_line",
                &[r(1.0), r(1.0), d(r#"{"type":"LineString"}"#)]
            ),
            None
        );
        let line = r#"{"type":"LineString","coordinates":[[-73.95796, 40.80042], [-73.97317, 40.764486]]}"#;
        let f = run_real("geo_line_locate_point", &[d(line), r(-73.965), r(40.792)]);
        assert!((f.unwrap_or(0.0) - 0.255_601_351_003_075_5).abs() < 1e-9);
        assert_eq!(
            run_real(
                "geo_line_length",
                &[d(r#"{"type":"LineString","coordinates":[[1,1]]}"#)]
            ),
            None
        );
    }

    #[test]
    fn densify_splits_planar_edges() {
        assert_eq!(
            run(
                "geo_line_densify",
                &[d(r#"{"type":"LineString","coordinates":[[10,10],[11,10]]}"#)]
            ),
            r#"{"type":"LineString","coordinates":[[10,10],[10.25,10],[10.5,10],[10.75,10],[11,10]]}"#
        );
        assert_eq!(
            run(
                "geo_line_densify",
                &[d(r#"{"type":"LineString","coordinates":[[1,1],[2,2]]}"#), r(0.0)]
            ),
            "null"
        );
    }

    #[test]
    fn simplification_can_make_a_line_disappear() {
        let short = d(r#"{"type":"LineString","coordinates":[[1.1,1.1],[1.2,1.2]]}"#);
        assert_eq!(run("geo_line_simplify", &[short.clone(), r(100_000.0)]), "null");
        assert_eq!(
            run("geo_line_simplify", &[short, r(10.0)]),
            r#"{"type":"LineString","coordinates":[[1.1,1.1],[1.2,1.2]]}"#
        );
    }
}
