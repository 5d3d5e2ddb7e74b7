//! S2 cells (the quadtree of the cube projected on the sphere) by their hex tokens, through the
//! `s2` crate, and coverings of lines and polygons by the cells of one level.

use std::collections::{HashSet, VecDeque};

use datafusion::common::Result;
use s2::cell::Cell;
use s2::cellid::CellID;
use s2::latlng::LatLng;
use s2::point::Point;
use serde_json::Value;

use super::shape::{self, Shape, point_args};
use super::sphere::{EARTH_RADIUS, Region, V3, angle, closest_on_edge, edge_intersection, line_edges, vecs};
use crate::rowfn::{Out, Val, arg};

/// The deepest S2 level.
const DEEPEST: i64 = 30;

/// The most cells a covering returns; past it the result is null.
pub const MOST_COVERING_CELLS: usize = 65_536;

fn cell_id(v: Val) -> Option<CellID> {
    let token = v.str()?;
    if token.is_empty() || token.len() > 16 || !token.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let id = CellID::from_token(token);
    id.is_valid().then_some(id)
}

fn level(args: &[Val], i: usize) -> Option<u64> {
    match arg(args, i) {
        Val::Null if args.len() <= i => Some(11),
        v => v.long().filter(|l| (0..=DEEPEST).contains(l)).map(|l| l as u64),
    }
}

fn v3(p: &Point) -> V3 {
    [p.0.x, p.0.y, p.0.z]
}

fn ll(p: &Point) -> shape::Ll {
    let l = LatLng::from(p);
    (l.lng.deg(), l.lat.deg())
}

/// The cell of a coordinate at `level`.
pub fn cell_of((lng, lat): shape::Ll, level: u64) -> CellID {
    CellID::from(LatLng::from_degrees(lat, lng)).parent(level)
}

/// `geo_point_to_s2cell(lng, lat [, level = 11])`: empty for invalid input.
pub fn geo_point_to_s2cell(args: &[Val]) -> Result<Out> {
    Ok(Out::Str(
        match (point_args(arg(args, 0), arg(args, 1)), level(args, 2)) {
            (Some(p), Some(level)) => cell_of(p, level).to_token(),
            _ => String::new(),
        },
    ))
}

/// `geo_s2cell_to_central_point(s2cell)`.
pub fn geo_s2cell_to_central_point(args: &[Val]) -> Result<Out> {
    Ok(shape::out_opt(
        cell_id(arg(args, 0)).map(|id| Shape::Point(ll(&Cell::from(id).center()))),
    ))
}

/// The corners of a cell, counterclockwise.
fn corners(id: CellID) -> [V3; 4] {
    Cell::from(id).vertices().map(|p| v3(&p))
}

/// `geo_s2cell_to_polygon(s2cell)`.
pub fn geo_s2cell_to_polygon(args: &[Val]) -> Result<Out> {
    Ok(shape::out_opt(cell_id(arg(args, 0)).map(|id| {
        let cell = Cell::from(id);
        let mut ring: Vec<shape::Ll> = cell.vertices().iter().map(ll).collect();
        ring.push(ring[0]);
        Shape::Polygon(vec![ring])
    })))
}

fn tokens(ids: impl IntoIterator<Item = CellID>) -> Out {
    crate::json::out(Value::Array(
        ids.into_iter().map(|id| Value::from(id.to_token())).collect(),
    ))
}

/// `geo_s2cell_neighbors(s2cell)`: the cells of the same level sharing an edge or a corner.
pub fn geo_s2cell_neighbors(args: &[Val]) -> Result<Out> {
    let Some(id) = cell_id(arg(args, 0)) else {
        return Ok(Out::Null);
    };
    let mut seen = HashSet::new();
    let neighbors: Vec<CellID> = id
        .all_neighbors(id.level())
        .into_iter()
        .filter(|n| *n != id && seen.insert(n.0))
        .collect();
    Ok(tokens(neighbors))
}

/// A shape to cover: the edges and vertices it has, and the region it bounds when it is a
/// polygon.
struct Covered {
    edges: Vec<(V3, V3)>,
    vertices: Vec<V3>,
    region: Option<Region>,
    /// Cells within this many radians of the shape are in the covering too.
    radius: f64,
}

impl Covered {
    /// Whether the cell meets the shape (or comes within its radius).
    fn meets(&self, id: CellID) -> bool {
        let c = corners(id);
        let cell_edges = [(c[0], c[1]), (c[1], c[2]), (c[2], c[3]), (c[3], c[0])];
        let cell = Cell::from(id);
        let in_cell = |p: V3| {
            cell.contains_point(&Point(s2::r3::vector::Vector {
                x: p[0],
                y: p[1],
                z: p[2],
            }))
        };
        if self.vertices.iter().any(|p| in_cell(*p)) {
            return true;
        }
        if let Some(region) = &self.region
            && c.iter().any(|p| region.contains(*p))
        {
            return true;
        }
        if self.edges.iter().any(|(a, b)| {
            cell_edges
                .iter()
                .any(|(c, d)| edge_intersection(*a, *b, *c, *d).is_some())
        }) {
            return true;
        }
        if self.radius <= 0.0 {
            return false;
        }
        // Two edges that do not cross are closest at an end of one of them.
        let near = |p: V3, edges: &[(V3, V3)]| {
            edges
                .iter()
                .any(|(a, b)| angle(p, closest_on_edge(p, *a, *b)) <= self.radius)
        };
        c.iter().any(|p| near(*p, &self.edges)) || self.vertices.iter().any(|p| near(*p, &cell_edges))
    }

    /// The cells of `level` meeting the shape, found from the cells of its vertices outwards;
    /// `None` past [`MOST_COVERING_CELLS`].
    fn cover(&self, level: u64) -> Option<Vec<CellID>> {
        let mut found: Vec<CellID> = Vec::new();
        let mut seen: HashSet<u64> = HashSet::new();
        let mut queue: VecDeque<CellID> = VecDeque::new();
        for p in &self.vertices {
            let id = CellID::from(&Point(s2::r3::vector::Vector {
                x: p[0],
                y: p[1],
                z: p[2],
            }))
            .parent(level);
            if seen.insert(id.0) {
                queue.push_back(id);
                found.push(id);
            }
        }
        while let Some(id) = queue.pop_front() {
            for n in id.all_neighbors(level) {
                if seen.insert(n.0) && self.meets(n) {
                    found.push(n);
                    if found.len() > MOST_COVERING_CELLS {
                        return None;
                    }
                    queue.push_back(n);
                }
            }
        }
        found.sort_by_key(|id| id.0);
        Some(found)
    }
}

fn radius(args: &[Val], i: usize) -> Option<f64> {
    match arg(args, i) {
        Val::Null if args.len() <= i => Some(0.0),
        v => v
            .real()
            .filter(|r| *r >= 0.0 && r.is_finite())
            .map(|r| r / EARTH_RADIUS),
    }
}

/// `geo_polygon_to_s2cells(polygon [, level = 11 [, radius = 0]])`: the cells of `level` that
/// cover the polygon.
pub fn geo_polygon_to_s2cells(args: &[Val]) -> Result<Out> {
    let (Some(polygons), Some(level), Some(radius)) = (shape::polygons(arg(args, 0)), level(args, 1), radius(args, 2))
    else {
        return Ok(Out::Null);
    };
    let region = Region::new(&polygons);
    let covered = Covered {
        edges: region.edges().collect(),
        vertices: region.edges().map(|(a, _)| a).collect(),
        region: Some(region),
        radius,
    };
    Ok(covered.cover(level).map_or(Out::Null, tokens))
}

/// `geo_line_to_s2cells(line [, level = 11 [, radius = 0]])`: the cells of `level` that cover the
/// line.
pub fn geo_line_to_s2cells(args: &[Val]) -> Result<Out> {
    let (Some(lines), Some(level), Some(radius)) = (shape::lines(arg(args, 0)), level(args, 1), radius(args, 2)) else {
        return Ok(Out::Null);
    };
    let lines: Vec<Vec<V3>> = lines.iter().map(|l| vecs(l)).collect();
    let covered = Covered {
        edges: line_edges(&lines).collect(),
        vertices: lines.iter().flatten().copied().collect(),
        region: None,
        radius,
    };
    Ok(covered.cover(level).map_or(Out::Null, tokens))
}

#[cfg(test)]
mod tests {
    use crate::testing::{d, l, r, run, s};

    #[test]
    fn documented_cells() {
        assert_eq!(
            run("geo_point_to_s2cell", &[r(-80.195829), r(25.802215), l(8)]),
            "88d9b"
        );
        assert_eq!(run("geo_point_to_s2cell", &[r(10.1234), r(53.0), l(8)]), "47b1d");
        assert_eq!(run("geo_point_to_s2cell", &[r(300.0), r(1.0), l(8)]), "");
        assert_eq!(run("geo_s2cell_to_polygon", &[s("zz")]), "null");
        let polygon = run("geo_s2cell_to_polygon", &[s("89c259")]);
        assert!(
            polygon.starts_with(r#"{"type":"Polygon","coordinates":[[[-74.03001224983"#),
            "{polygon}"
        );
        let count = run(
            "geo_polygon_to_s2cells",
            &[
                d(r#"{"type":"Polygon","coordinates":[[[0,0],[0,50],[100,50],[0,0]]]}"#),
                l(5),
            ],
        );
        assert_eq!(count.matches(',').count() + 1, 286, "{count}");
    }

    #[test]
    fn neighbors_of_a_cell() {
        let n = run("geo_s2cell_neighbors", &[s("89c259")]);
        assert_eq!(n.matches(',').count() + 1, 8, "{n}");
    }
}
