//! H3 cells (hexagons and the twelve pentagons of Uber's hierarchical grid) by their hex
//! tokens, through the `h3o` crate.

use datafusion::common::Result;
use h3o::{CellIndex, LatLng, Resolution};
use serde_json::Value;

use super::shape::{self, Shape, point_args};
use crate::rowfn::{Out, Val, arg};

/// The most children one call returns: a difference of five levels.
const MOST_LEVELS_DOWN: u8 = 5;

fn cell(v: Val) -> Option<CellIndex> {
    let token = v.str()?;
    if token.is_empty() || token.len() > 16 {
        return None;
    }
    token.parse().ok()
}

fn resolution(v: i64) -> Option<Resolution> {
    u8::try_from(v).ok().and_then(|r| Resolution::try_from(r).ok())
}

fn token(c: CellIndex) -> Value {
    Value::from(c.to_string())
}

fn tokens(cells: impl Iterator<Item = CellIndex>) -> Out {
    crate::json::out(Value::Array(cells.map(token).collect()))
}

fn ll(p: LatLng) -> shape::Ll {
    (p.lng(), p.lat())
}

/// `geo_point_to_h3cell(lng, lat [, resolution = 6])`: empty for invalid input.
pub fn geo_point_to_h3cell(args: &[Val]) -> Result<Out> {
    let res = match arg(args, 2) {
        Val::Null if args.len() <= 2 => Some(6),
        v => v.long(),
    };
    let cell = point_args(arg(args, 0), arg(args, 1))
        .zip(res.and_then(resolution))
        .and_then(|((lng, lat), res)| Some(LatLng::new(lat, lng).ok()?.to_cell(res)));
    Ok(Out::Str(cell.map(|c| c.to_string()).unwrap_or_default()))
}

/// `geo_h3cell_level(h3cell)`.
pub fn geo_h3cell_level(args: &[Val]) -> Result<Out> {
    Ok(cell(arg(args, 0)).map(|c| u8::from(c.resolution()) as i64).into())
}

/// `geo_h3cell_parent(h3cell [, resolution = level - 1])`: empty for invalid input.
pub fn geo_h3cell_parent(args: &[Val]) -> Result<Out> {
    let parent = cell(arg(args, 0)).and_then(|c| {
        let res = match arg(args, 1) {
            Val::Null if args.len() <= 1 => i64::from(u8::from(c.resolution())) - 1,
            v => v.long()?,
        };
        c.parent(resolution(res)?)
    });
    Ok(Out::Str(parent.map(|c| c.to_string()).unwrap_or_default()))
}

/// `geo_h3cell_children(h3cell [, resolution = level + 1])`: at most five levels down.
pub fn geo_h3cell_children(args: &[Val]) -> Result<Out> {
    let Some(c) = cell(arg(args, 0)) else {
        return Ok(Out::Null);
    };
    let level = u8::from(c.resolution());
    let res = match arg(args, 1) {
        Val::Null if args.len() <= 1 => Some(i64::from(level) + 1),
        v => v.long(),
    };
    let Some(res) = res.and_then(resolution) else {
        return Ok(Out::Null);
    };
    if u8::from(res) < level || u8::from(res) - level > MOST_LEVELS_DOWN {
        return Ok(Out::Null);
    }
    Ok(tokens(c.children(res)))
}

/// `geo_h3cell_neighbors(h3cell)`: the cells around it.
pub fn geo_h3cell_neighbors(args: &[Val]) -> Result<Out> {
    let Some(c) = cell(arg(args, 0)) else {
        return Ok(Out::Null);
    };
    Ok(tokens(c.grid_disk::<Vec<_>>(1).into_iter().filter(|n| *n != c)))
}

/// The most cells `geo_polygon_to_h3cells` returns.
const MOST_POLYGON_CELLS: usize = 61_680;
/// The most cells looked at while covering one polygon.
const MOST_VISITED_CELLS: usize = 8 * MOST_POLYGON_CELLS;

/// The cells of `res` whose centers lie inside `polygon`, its edges straight lines in
/// longitude and latitude; `None` past the limits.
fn polygon_cells(polygon: &shape::Polygon, res: Resolution, found: &mut std::collections::BTreeSet<u64>) -> Option<()> {
    let rings: Vec<Vec<(f64, f64)>> = polygon
        .iter()
        .map(|r| r[..r.len().saturating_sub(1)].to_vec())
        .collect();
    let shell = rings.first()?;
    // Far more cells than the limit (by area) are not searched for.
    let area_km2 = super::sphere::Region::new(std::slice::from_ref(polygon)).area()
        * (super::sphere::EARTH_RADIUS / 1000.0).powi(2);
    if area_km2 / res.area_km2() > 1.5 * MOST_POLYGON_CELLS as f64 {
        return None;
    }
    let (mut west, mut east, mut south, mut north) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for (lng, lat) in shell {
        (west, east, south, north) = (west.min(*lng), east.max(*lng), south.min(*lat), north.max(*lat));
    }
    // Cells whose centers lie within two edge lengths of the box: a connected set holding
    // every cell whose center is inside.
    let margin = 2.0 * res.edge_length_km() / 111.0;
    let widen = margin / south.abs().max(north.abs()).min(89.0).to_radians().cos();
    let near = |c: CellIndex| {
        let p = LatLng::from(c);
        (south - margin..=north + margin).contains(&p.lat()) && (west - widen..=east + widen).contains(&p.lng())
    };
    let inside = |c: CellIndex| {
        let p = LatLng::from(c);
        let at = (p.lng(), p.lat());
        let mut rings = rings.iter();
        rings.next().is_some_and(|s| super::sphere::planar_contains(s, at))
            && !rings.any(|h| super::sphere::planar_contains(h, at))
    };
    let start = LatLng::new(shell[0].1, shell[0].0).ok()?.to_cell(res);
    let mut seen = std::collections::HashSet::from([start]);
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(c) = queue.pop_front() {
        if inside(c) {
            found.insert(u64::from(c));
            if found.len() > MOST_POLYGON_CELLS {
                return None;
            }
        }
        for n in c.grid_disk::<Vec<_>>(1) {
            if near(n) && seen.insert(n) {
                if seen.len() > MOST_VISITED_CELLS {
                    return None;
                }
                queue.push_back(n);
            }
        }
    }
    Some(())
}

/// `geo_polygon_to_h3cells(polygon [, resolution = 6 [, radius = 0]])`: the cells whose centers
/// lie inside the polygon (grown by `radius` meters first), in cell order; null past 61,680
/// cells.
pub fn geo_polygon_to_h3cells(args: &[Val]) -> Result<Out> {
    let res = match arg(args, 1) {
        Val::Null if args.len() <= 1 => Some(6),
        v => v.long(),
    };
    let radius = match arg(args, 2) {
        Val::Null if args.len() <= 2 => Some(0.0),
        v => v
            .real()
            .filter(|r| *r >= 0.0 && *r / super::sphere::EARTH_RADIUS < std::f64::consts::FRAC_PI_2),
    };
    let (Some(polygons), Some(res), Some(radius)) = (shape::polygons(arg(args, 0)), res.and_then(resolution), radius)
    else {
        return Ok(Out::Null);
    };
    let polygons = if radius > 0.0 {
        let rho = radius / super::sphere::EARTH_RADIUS;
        match super::buffers::grow(
            &polygons,
            rho,
            (10.0f64).min(radius * 0.999_999) / super::sphere::EARTH_RADIUS,
        ) {
            Some(grown) => grown.to_polygons(),
            None => return Ok(Out::Null),
        }
    } else {
        polygons
    };
    let mut found = std::collections::BTreeSet::new();
    for polygon in &polygons {
        if polygon_cells(polygon, res, &mut found).is_none() {
            return Ok(Out::Null);
        }
    }
    Ok(tokens(found.into_iter().filter_map(|c| CellIndex::try_from(c).ok())))
}

/// `geo_h3cell_rings(h3cell, distance)`: the rings around the cell, the cell itself first.
pub fn geo_h3cell_rings(args: &[Val]) -> Result<Out> {
    let (Some(c), Some(distance)) = (cell(arg(args, 0)), arg(args, 1).long()) else {
        return Ok(Out::Null);
    };
    let Ok(distance) = u32::try_from(distance) else {
        return Ok(Out::Null);
    };
    if distance > 142 {
        return Ok(Out::Null);
    }
    let mut rings: Vec<Vec<Value>> = vec![Vec::new(); distance as usize + 1];
    for (n, d) in c.grid_disk_distances::<Vec<_>>(distance) {
        if let Some(ring) = rings.get_mut(d as usize) {
            ring.push(token(n));
        }
    }
    Ok(crate::json::out(Value::Array(
        rings.into_iter().map(Value::Array).collect(),
    )))
}

/// `geo_h3cell_to_central_point(h3cell)`.
pub fn geo_h3cell_to_central_point(args: &[Val]) -> Result<Out> {
    Ok(shape::out_opt(
        cell(arg(args, 0)).map(|c| Shape::Point(ll(LatLng::from(c)))),
    ))
}

/// `geo_h3cell_to_polygon(h3cell)`.
pub fn geo_h3cell_to_polygon(args: &[Val]) -> Result<Out> {
    Ok(shape::out_opt(cell(arg(args, 0)).map(|c| {
        let mut ring: Vec<shape::Ll> = c.boundary().iter().map(|p| ll(*p)).collect();
        if let Some(first) = ring.first().copied() {
            ring.push(first);
        }
        Shape::Polygon(vec![ring])
    })))
}

#[cfg(test)]
mod tests {
    use crate::testing::{d, l, r, run, s};

    #[test]
    fn a_polygon_is_the_cells_whose_centers_it_holds() {
        let polygon = d(
            r#"{"type":"Polygon","coordinates":[[[-3.659,40.553],[-3.913,40.409],[-3.729,40.273],[-3.524,40.440],[-3.659,40.553]]]}"#,
        );
        let shown = run("geo_polygon_to_h3cells", std::slice::from_ref(&polygon));
        let mut got: Vec<String> = serde_json::from_str(&shown).unwrap_or_default();
        got.sort();
        let mut documented = vec![
            "86390cb57ffffff",
            "86390cb0fffffff",
            "86390ca27ffffff",
            "86390cb87ffffff",
            "86390cb07ffffff",
            "86390ca2fffffff",
            "86390ca37ffffff",
            "86390cb17ffffff",
            "86390cb1fffffff",
            "86390cb8fffffff",
            "86390cba7ffffff",
            "86390ca07ffffff",
            "86390cbafffffff",
        ];
        documented.sort();
        assert_eq!(got, documented);
        // A radius grows the polygon: more cells, the unbuffered ones among them.
        let grown: Vec<String> =
            serde_json::from_str(&run("geo_polygon_to_h3cells", &[polygon.clone(), l(6), r(5000.0)]))
                .unwrap_or_default();
        assert!(
            grown.len() > got.len() && got.iter().all(|c| grown.contains(c)),
            "{grown:?}"
        );
        assert_eq!(
            run(
                "geo_polygon_to_h3cells",
                &[d(r#"{"type":"Polygon","coordinates":[[[0,0],[1,1]]]}"#)]
            ),
            "null"
        );
        assert_eq!(run("geo_polygon_to_h3cells", &[polygon.clone(), l(16)]), "null");
        // Past 61,680 cells the result is null.
        assert_eq!(run("geo_polygon_to_h3cells", &[polygon, l(12)]), "null");
    }

    #[test]
    fn documented_cells() {
        assert_eq!(
            run(
                "geo_point_to_h3cell",
                &[r(-74.04450446039874), r(40.689250859314974), l(6)]
            ),
            "862a1072fffffff"
        );
        assert_eq!(run("geo_point_to_h3cell", &[r(300.0), r(1.0), l(8)]), "");
        assert_eq!(run("geo_point_to_h3cell", &[r(1.0), r(1.0), l(16)]), "");
        assert_eq!(
            run("geo_h3cell_parent", &[s("862a1072fffffff"), l(1)]),
            "812a3ffffffffff"
        );
        assert_eq!(run("geo_h3cell_parent", &[s("862a1072fffffff"), l(15)]), "");
        assert_eq!(
            run("geo_h3cell_children", &[s("862a1072fffffff")]),
            r#"["872a10728ffffff","872a10729ffffff","872a1072affffff","872a1072bffffff","872a1072cffffff","872a1072dffffff","872a1072effffff"]"#
        );
        assert_eq!(run("geo_h3cell_children", &[s("abc")]), "null");
        assert_eq!(
            run("geo_h3cell_neighbors", &[s("862a1072fffffff")]),
            r#"["862a10727ffffff","862a10707ffffff","862a1070fffffff","862a10777ffffff","862a100dfffffff","862a100d7ffffff"]"#
        );
        assert_eq!(run("geo_h3cell_level", &[s("862a1072fffffff")]), "6");
        assert_eq!(run("geo_h3cell_to_polygon", &[s("@")]), "null");
        let center = run("geo_h3cell_to_central_point", &[s("862a1072fffffff")]);
        assert!(
            center.starts_with(r#"{"type":"Point","coordinates":[-74.01600847979"#),
            "{center}"
        );
        let polygon = run("geo_h3cell_to_polygon", &[s("862a1072fffffff")]);
        assert!(
            polygon.starts_with(r#"{"type":"Polygon","coordinates":[[[-74.00227446461"#),
            "{polygon}"
        );
    }
}
