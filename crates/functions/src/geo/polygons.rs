//! Functions of polygons (Polygon and MultiPolygon): containment, area, perimeter, centroid,
//! distance and closest point, densification, simplification.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use datafusion::common::Result;

use super::lines::{densify, snap, tolerance};
use super::shape::{self, Polygon, Shape, point_args};
use super::sphere::{EARTH_RADIUS, Region, angle, ll_of, simplify, vec_of, vecs};
use crate::rowfn::{Out, Val, arg};

thread_local! {
    /// Regions parsed lately, by their JSON text: a polygon literal or a lookup table's polygons
    /// repeat on every row.
    static REGIONS: RefCell<HashMap<String, Option<Rc<Region>>>> = RefCell::new(HashMap::new());
}

/// Most regions kept per thread, and the longest text kept.
const MOST_CACHED: usize = 64;
const LONGEST_CACHED: usize = 1 << 20;

/// The region of a Polygon or MultiPolygon argument.
pub fn region(v: Val) -> Option<Rc<Region>> {
    // A MultiPolygon is the union of its polygons: overlapping parts count once.
    let parse = |v: Val| {
        let polygons = shape::polygons(v)?;
        let polygons = if polygons.len() > 1 {
            super::overlay::region_of(&polygons)?.to_polygons()
        } else {
            polygons
        };
        Some(Rc::new(Region::new(&polygons)))
    };
    let Val::Str(text) = v else { return parse(v) };
    if text.len() > LONGEST_CACHED {
        return parse(v);
    }
    if let Some(found) = REGIONS.with(|cache| cache.borrow().get(text).cloned()) {
        return found;
    }
    let parsed = parse(v);
    REGIONS.with(|cache| {
        let mut cache = cache.borrow_mut();
        if cache.len() >= MOST_CACHED {
            cache.clear();
        }
        cache.insert(text.to_string(), parsed.clone());
    });
    parsed
}

/// `geo_point_in_polygon(lng, lat, polygon)`.
pub fn geo_point_in_polygon(args: &[Val]) -> Result<Out> {
    let (Some(p), Some(region)) = (point_args(arg(args, 0), arg(args, 1)), region(arg(args, 2))) else {
        return Ok(Out::Null);
    };
    Ok(Out::Bool(region.contains(vec_of(p))))
}

/// `geo_polygon_area(polygon)`: square meters.
pub fn geo_polygon_area(args: &[Val]) -> Result<Out> {
    Ok(region(arg(args, 0))
        .map(|r| r.area() * EARTH_RADIUS * EARTH_RADIUS)
        .into())
}

/// `geo_polygon_perimeter(polygon)`: meters around every ring.
pub fn geo_polygon_perimeter(args: &[Val]) -> Result<Out> {
    Ok(region(arg(args, 0)).map(|r| r.perimeter() * EARTH_RADIUS).into())
}

/// `geo_polygon_centroid(polygon)`: the area-weighted center.
pub fn geo_polygon_centroid(args: &[Val]) -> Result<Out> {
    Ok(shape::out_opt(
        region(arg(args, 0))
            .and_then(|r| r.centroid())
            .map(|c| Shape::Point(ll_of(c))),
    ))
}

/// `geo_distance_point_to_polygon(lng, lat, polygon)`: meters to the polygon, 0 inside it.
pub fn geo_distance_point_to_polygon(args: &[Val]) -> Result<Out> {
    let (Some(p), Some(region)) = (point_args(arg(args, 0), arg(args, 1)), region(arg(args, 2))) else {
        return Ok(Out::Null);
    };
    let x = vec_of(p);
    if region.contains(x) {
        return Ok(Out::Real(0.0));
    }
    Ok(region.closest_on_boundary(x).map(|c| angle(x, c) * EARTH_RADIUS).into())
}

/// `geo_closest_point_on_polygon(lng, lat, polygon)`: the point itself inside the polygon, else
/// the closest point of its boundary.
pub fn geo_closest_point_on_polygon(args: &[Val]) -> Result<Out> {
    let (Some(p), Some(region)) = (point_args(arg(args, 0), arg(args, 1)), region(arg(args, 2))) else {
        return Ok(Out::Null);
    };
    let x = vec_of(p);
    if region.contains(x) {
        return Ok(shape::out(Shape::Point(p)));
    }
    let original = shape::polygons(arg(args, 2)).unwrap_or_default();
    Ok(shape::out_opt(
        region
            .closest_on_boundary(x)
            .map(|c| Shape::Point(snap(c, original.iter().flatten().flatten()))),
    ))
}

/// `geo_polygon_densify(polygon, tolerance = 10 [, preserve_crossing])`.
pub fn geo_polygon_densify(args: &[Val]) -> Result<Out> {
    let (Some(polygons), Some(tol)) = (shape::polygons(arg(args, 0)), tolerance(args, 1, 10.0, 0.1..=10_000.0)) else {
        return Ok(Out::Null);
    };
    let dense: Option<Vec<Polygon>> = polygons
        .iter()
        .map(|p| p.iter().map(|ring| densify(ring, tol / EARTH_RADIUS)).collect())
        .collect();
    Ok(shape::out_opt(dense.map(shape::polygon_shape)))
}

/// `geo_polygon_simplify(polygon, tolerance = 10)`: rings with the vertices that lie within
/// `tolerance` meters of the simplified ring dropped; rings that collapse are left out (a shell
/// that collapses leaves its polygon out), and with every polygon gone the result is null.
pub fn geo_polygon_simplify(args: &[Val]) -> Result<Out> {
    let (Some(polygons), Some(tol)) = (
        shape::polygons(arg(args, 0)),
        tolerance(args, 1, 10.0, 0.0..=7_800_000.0),
    ) else {
        return Ok(Out::Null);
    };
    let simplified: Vec<Polygon> = polygons
        .iter()
        .filter_map(|p| {
            let rings: Vec<_> = p
                .iter()
                .map(|ring| {
                    simplify(&vecs(ring), tol / EARTH_RADIUS)
                        .into_iter()
                        .map(|i| ring[i])
                        .collect::<Vec<_>>()
                })
                .collect();
            let (shell, holes) = rings.split_first()?;
            (shell.len() >= 4).then(|| {
                std::iter::once(shell.clone())
                    .chain(holes.iter().filter(|h| h.len() >= 4).cloned())
                    .collect()
            })
        })
        .collect();
    if simplified.is_empty() {
        return Ok(Out::Null);
    }
    Ok(shape::out(shape::polygon_shape(simplified)))
}

#[cfg(test)]
mod tests {
    use crate::testing::{d, r, run, run_real};

    const PARK: &str = r#"{"type":"Polygon","coordinates":[[[-73.9495,40.7969],[-73.95807266235352,40.80068603561921],[-73.98201942443848,40.76825672305777],[-73.97317886352539,40.76455136505513],[-73.9495,40.7969]]]}"#;

    #[test]
    fn documented_measures() {
        let close = |got: Option<f64>, want: f64| (got.unwrap_or(f64::NAN) - want).abs() <= want.abs() * 1e-9;
        assert!(close(run_real("geo_polygon_area", &[d(PARK)]), 3_475_207.283_466_06));
        assert!(close(
            run_real("geo_polygon_perimeter", &[d(PARK)]),
            9_930.301_496_049_38
        ));
        assert!(close(
            run_real("geo_distance_point_to_polygon", &[r(-73.9839), r(40.7705), d(PARK)]),
            259.940_756_070_596
        ));
        assert_eq!(run("geo_point_in_polygon", &[r(200.0), r(1.0), d(PARK)]), "null");
        assert_eq!(run("geo_point_in_polygon", &[r(-73.9657), r(40.7823), d(PARK)]), "true");
        let bad = r#"{"type":"Polygon","coordinates":[[[0,0],[10,10],[10,10],[0,0]]]}"#;
        assert_eq!(run("geo_polygon_centroid", &[d(bad)]), "null");
    }

    #[test]
    fn simplification_can_make_a_polygon_disappear() {
        let polygon = d(r#"{"type":"Polygon","coordinates":[[[5,48],[0,50],[0,47],[4,47],[5,48]]]}"#);
        assert_eq!(run("geo_polygon_simplify", &[polygon.clone(), r(1_000_000.0)]), "null");
        assert!(run("geo_polygon_simplify", &[polygon, r(10.0)]).starts_with(r#"{"type":"Polygon""#));
    }

    #[test]
    fn densify_keeps_rings_closed() {
        assert_eq!(
            run(
                "geo_polygon_densify",
                &[d(
                    r#"{"type":"Polygon","coordinates":[[[10,10],[11,10],[11,11],[10,11],[10,10]]]}"#
                )]
            ),
            r#"{"type":"Polygon","coordinates":[[[10,10],[10.25,10],[10.5,10],[10.75,10],[11,10],[11,11],[10.75,11],[10.5,11],[10.25,11],[10,11],[10,10]]]}"#
        );
    }
}
