//! Functions of coordinates: distance, azimuth, the angle of two lines, circles.

use datafusion::common::Result;

use super::shape::{self, Shape, point_args};
use super::sphere::{self, EARTH_RADIUS, angle, azimuth, vec_of};
use crate::rowfn::{Out, Val, arg};

fn point(args: &[Val], i: usize) -> Option<shape::Ll> {
    point_args(arg(args, i), arg(args, i + 1))
}

/// `geo_distance_2points(lng1, lat1, lng2, lat2 [, use_spheroid])`: meters between two points.
pub fn geo_distance_2points(args: &[Val]) -> Result<Out> {
    let (Some(a), Some(b)) = (point(args, 0), point(args, 2)) else {
        return Ok(Out::Null);
    };
    if arg(args, 4).bool() == Some(true) {
        return Ok(super::spheroid::distance(a, b).into());
    }
    Ok(Out::Real(sphere::distance(a, b)))
}

/// `geo_azimuth(lng1, lat1, lng2, lat2)`: radians clockwise from north of the line from the
/// first point to the second; null when they coincide.
pub fn geo_azimuth(args: &[Val]) -> Result<Out> {
    let (Some(a), Some(b)) = (point(args, 0), point(args, 2)) else {
        return Ok(Out::Null);
    };
    Ok(azimuth(a, b).into())
}

/// `geo_angle(p1, p2, p3)`: radians clockwise from line [p1, p2] to line [p2, p3], in [0, 2π).
pub fn geo_angle(args: &[Val]) -> Result<Out> {
    let (Some(p1), Some(p2), Some(p3)) = (point(args, 0), point(args, 2), point(args, 4)) else {
        return Ok(Out::Null);
    };
    let (Some(back), Some(forward)) = (azimuth(p2, p1), azimuth(p2, p3)) else {
        return Ok(Out::Null);
    };
    Ok(Out::Real((forward - back).rem_euclid(std::f64::consts::TAU)))
}

/// `geo_point_in_circle(lng, lat, center_lng, center_lat, radius)`: whether the point lies in
/// the spherical cap.
pub fn geo_point_in_circle(args: &[Val]) -> Result<Out> {
    let (Some(p), Some(c)) = (point(args, 0), point(args, 2)) else {
        return Ok(Out::Null);
    };
    match arg(args, 4).real() {
        Some(radius) if radius >= 0.0 && radius.is_finite() => Ok(Out::Bool(sphere::distance(p, c) <= radius)),
        _ => Ok(Out::Null),
    }
}

/// The vertices of a circle of `radius` meters around `center`, counterclockwise, so that the
/// polygon between them strays at most `tolerance` meters from the circle.
pub fn circle(center: shape::Ll, radius: f64, tolerance: f64) -> Option<shape::Ring> {
    let theta = radius / EARTH_RADIUS;
    if !(theta > 0.0 && theta < std::f64::consts::PI / 2.0) {
        return None;
    }
    let tolerance = tolerance.min(radius * 0.999_999);
    // A chord of half-angle π/n strays r(1 - cos(π/n)) from its arc.
    let step = (1.0 - tolerance / radius).clamp(-1.0, 1.0).acos();
    let n = ((std::f64::consts::PI / step).ceil() as usize).clamp(4, 100_000);
    let c = vec_of(center);
    let north = if center.1 > 89.999_999 {
        vec_of((0.0, 0.0))
    } else {
        vec_of((center.0, (center.1 + 90.0).min(90.0)))
    };
    let e1 = sphere::unit(sphere::cross(sphere::cross(c, north), c))?;
    let e2 = sphere::cross(c, e1);
    let mut ring: Vec<shape::Ll> = (0..n)
        .map(|i| {
            // Counterclockwise seen from outside: from north towards west.
            let a = std::f64::consts::TAU * i as f64 / n as f64;
            let dir = sphere::add(sphere::scale(e1, a.cos()), sphere::scale(e2, a.sin()));
            sphere::ll_of(sphere::add(
                sphere::scale(c, theta.cos()),
                sphere::scale(dir, theta.sin()),
            ))
        })
        .collect();
    ring.push(ring[0]);
    Some(ring)
}

/// `geo_point_buffer(lng, lat, radius [, tolerance])`: a polygon around the point.
pub fn geo_point_buffer(args: &[Val]) -> Result<Out> {
    let Some(p) = point(args, 0) else { return Ok(Out::Null) };
    let radius = arg(args, 2).real().filter(|r| *r > 0.0);
    let tolerance = match arg(args, 3) {
        Val::Null => Some(10.0),
        v => v.real().filter(|t| *t > 0.0),
    };
    let (Some(radius), Some(tolerance)) = (radius, tolerance) else {
        return Ok(Out::Null);
    };
    if tolerance < radius * 1e-6 {
        return Ok(Out::Null);
    }
    Ok(shape::out_opt(
        circle(p, radius, tolerance).map(|ring| Shape::Polygon(vec![ring])),
    ))
}

/// The angle in radians between two coordinates (for tests and lookups).
pub fn central_angle(a: shape::Ll, b: shape::Ll) -> f64 {
    angle(vec_of(a), vec_of(b))
}

#[cfg(test)]
mod tests {
    use crate::testing::{l, r, run_real};

    #[test]
    fn documented_values() {
        let d = run_real(
            "geo_distance_2points",
            &[r(-122.407628), r(47.578557), r(-118.275287), r(34.019056)],
        );
        assert!((d.unwrap_or(0.0) - 1_546_754.351_973_81).abs() < 1e-6);
        assert_eq!(
            run_real("geo_distance_2points", &[r(300.0), r(1.0), r(1.0), r(1.0)]),
            None
        );
        let a = run_real("geo_angle", &[l(0), l(10), l(0), l(5), l(3), l(-10)]);
        assert!((a.unwrap_or(0.0).to_degrees() - 168.732_543_198_009).abs() < 1e-9);
        assert_eq!(run_real("geo_azimuth", &[l(5), l(10), l(5), l(10)]), None);
    }
}
