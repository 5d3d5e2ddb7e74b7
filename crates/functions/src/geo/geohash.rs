//! Geohash: a coordinate as a base-32 string whose characters halve longitude and latitude
//! ranges in turn (longitude first), 1 to 18 characters.

use datafusion::common::Result;
use serde_json::Value;

use super::shape::{self, Shape, point_args};
use crate::rowfn::{Out, Val, arg, str_arg};

const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
const LONGEST: usize = 18;

/// The geohash of a coordinate with `length` characters.
pub fn encode((lng, lat): shape::Ll, length: usize) -> String {
    let (mut lng_range, mut lat_range) = ((-180.0f64, 180.0f64), (-90.0f64, 90.0f64));
    let mut out = String::with_capacity(length);
    let mut even = true;
    for _ in 0..length {
        let mut index = 0usize;
        for _ in 0..5 {
            let (range, value) = if even {
                (&mut lng_range, lng)
            } else {
                (&mut lat_range, lat)
            };
            let mid = (range.0 + range.1) / 2.0;
            index <<= 1;
            if value >= mid {
                index |= 1;
                range.0 = mid;
            } else {
                range.1 = mid;
            }
            even = !even;
        }
        out.push(ALPHABET[index] as char);
    }
    out
}

/// The box of a geohash: (west, south, east, north); `None` when it is not one.
pub fn decode(hash: &str) -> Option<(f64, f64, f64, f64)> {
    if hash.is_empty() || hash.len() > LONGEST {
        return None;
    }
    let (mut lng_range, mut lat_range) = ((-180.0f64, 180.0f64), (-90.0f64, 90.0f64));
    let mut even = true;
    for c in hash.bytes() {
        let index = ALPHABET.iter().position(|a| *a == c.to_ascii_lowercase())?;
        for bit in (0..5).rev() {
            let range = if even { &mut lng_range } else { &mut lat_range };
            let mid = (range.0 + range.1) / 2.0;
            if index >> bit & 1 == 1 {
                range.0 = mid;
            } else {
                range.1 = mid;
            }
            even = !even;
        }
    }
    Some((lng_range.0, lat_range.0, lng_range.1, lat_range.1))
}

/// `geo_point_to_geohash(lng, lat [, accuracy = 5])`: empty for invalid input.
pub fn geo_point_to_geohash(args: &[Val]) -> Result<Out> {
    let accuracy = match arg(args, 2) {
        Val::Null if args.len() <= 2 => Some(5),
        v => v.long().filter(|a| (1..=LONGEST as i64).contains(a)),
    };
    Ok(Out::Str(match (point_args(arg(args, 0), arg(args, 1)), accuracy) {
        (Some(p), Some(a)) => encode(p, a as usize),
        _ => String::new(),
    }))
}

/// `geo_geohash_to_central_point(geohash)`.
pub fn geo_geohash_to_central_point(args: &[Val]) -> Result<Out> {
    Ok(shape::out_opt(
        decode(str_arg(args, 0)).map(|(w, s, e, n)| Shape::Point(((w + e) / 2.0, (s + n) / 2.0))),
    ))
}

/// `geo_geohash_to_polygon(geohash)`: the box, counterclockwise from its south-west corner.
pub fn geo_geohash_to_polygon(args: &[Val]) -> Result<Out> {
    Ok(shape::out_opt(decode(str_arg(args, 0)).map(|(w, s, e, n)| {
        Shape::Polygon(vec![vec![(w, s), (e, s), (e, n), (w, n), (w, s)]])
    })))
}

/// `geo_geohash_neighbors(geohash)`: the up to eight geohashes of the same length around it
/// (none past the poles; longitude wraps).
pub fn geo_geohash_neighbors(args: &[Val]) -> Result<Out> {
    let hash = str_arg(args, 0);
    let Some((w, s, e, n)) = decode(hash) else {
        return Ok(Out::Null);
    };
    let (width, height) = (e - w, n - s);
    let (lng, lat) = ((w + e) / 2.0, (s + n) / 2.0);
    // South-west, north-west, south-east, north, west, north-east, east, south.
    let steps = [
        (-1.0, -1.0),
        (-1.0, 1.0),
        (1.0, -1.0),
        (0.0, 1.0),
        (-1.0, 0.0),
        (1.0, 1.0),
        (1.0, 0.0),
        (0.0, -1.0),
    ];
    let mut neighbors: Vec<Value> = Vec::new();
    for (dx, dy) in steps {
        let lat = lat + dy * height;
        if !(-90.0..=90.0).contains(&lat) {
            continue;
        }
        let lng = (lng + dx * width + 180.0).rem_euclid(360.0) - 180.0;
        let neighbor = encode((lng, lat), hash.len());
        if neighbor != hash && !neighbors.iter().any(|v| v.as_str() == Some(&neighbor)) {
            neighbors.push(Value::from(neighbor));
        }
    }
    Ok(crate::json::out(Value::Array(neighbors)))
}

#[cfg(test)]
mod tests {
    use crate::testing::{l, r, run, s};

    #[test]
    fn documented_geohashes() {
        assert_eq!(
            run("geo_point_to_geohash", &[r(-80.195829), r(25.802215), l(8)]),
            "dhwfz15h"
        );
        assert_eq!(run("geo_point_to_geohash", &[r(-122.303404), r(47.570482)]), "c23n8");
        assert_eq!(run("geo_point_to_geohash", &[r(300.0), r(1.0), l(8)]), "");
        assert_eq!(
            run("geo_geohash_to_polygon", &[s("dr5ru")]),
            r#"{"type":"Polygon","coordinates":[[[-74.00390625,40.7373046875],[-73.9599609375,40.7373046875],[-73.9599609375,40.78125],[-74.00390625,40.78125],[-74.00390625,40.7373046875]]]}"#
        );
        assert_eq!(
            run("geo_geohash_neighbors", &[s("sunny")]),
            r#"["sunnt","sunpj","sunnx","sunpn","sunnv","sunpp","sunnz","sunnw"]"#
        );
        assert_eq!(run("geo_geohash_neighbors", &[s("a")]), "null");
        assert_eq!(run("geo_geohash_to_central_point", &[s("a")]), "null");
    }
}
