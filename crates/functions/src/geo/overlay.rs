//! Boolean operations on regions of the sphere whose edges are geodesics: the union and the
//! intersection of polygons, and the union of lines.
//!
//! The results come out in the shape and vertex order of the geometry library the anchor's
//! geospatial functions are built on (S2), so that documented outputs compare equal:
//! - a union of many polygons merges the two with the fewest vertices first (ties in input
//!   order) and puts the merged one back weighted by the sum of the two;
//! - the edges of both operands are split where they cross or touch; an edge piece is kept by
//!   where its midpoint lies relative to the other operand; a piece both operands have in the
//!   same direction is kept once, one they have in opposite directions (where they abut) is not
//!   area of either result;
//! - output loops are traced from the vertex first along the S2 cell curve, turning as far left
//!   as possible where loops touch, then rotated so that the piece of the highest-numbered input
//!   edge comes last, which keeps an operand's own vertex order;
//! - an intersection also keeps what the two regions share besides area: vertices where they
//!   only touch as points, edges they share in opposite directions as lines.

use std::collections::{HashMap, HashSet};

use s2::cellid::CellID;
use s2::point::Point;

use super::shape::{Ll, Polygon, Shape};
use super::sphere::{PreparedRing, V3, add, angle, closest_on_edge, cross, dot, ll_of, norm, scale, unit, vec_of};

/// Points closer than this (radians, about 6 µm on Earth) are one vertex.
const MERGE: f64 = 1e-12;
/// The side of the grid cells vertices are merged through; at least [`MERGE`].
const GRID: f64 = 2e-12;

/// Most vertices one operation takes, all operands together; past it the result is null.
pub const MOST_VERTICES: usize = 100_000;
/// Most pairs of edges one operation compares (their boxes overlap); past it the result is
/// null rather than a long wait.
const MOST_PAIRS: usize = 20_000_000;

/// A vertex: its unit vector and the coordinate it is written back as (the input's own
/// coordinate when it came from the input).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Vertex {
    pub v: V3,
    pub ll: Ll,
}

impl Vertex {
    pub fn of(ll: Ll) -> Vertex {
        Vertex { v: vec_of(ll), ll }
    }

    pub fn at(v: V3) -> Vertex {
        Vertex { v, ll: ll_of(v) }
    }
}

/// A loop of vertices, the closing edge implied.
pub type Loop = Vec<Vertex>;

/// A region as polygons, each a shell and its holes, every loop with the interior on its left
/// (shells counterclockwise, holes clockwise).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Loops {
    pub polygons: Vec<Vec<Loop>>,
}

impl Loops {
    pub fn vertices(&self) -> usize {
        self.polygons.iter().flatten().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.polygons.is_empty()
    }

    fn loops(&self) -> impl Iterator<Item = &Loop> {
        self.polygons.iter().flatten()
    }

    /// The region as GeoJSON: a Polygon or MultiPolygon, an empty GeometryCollection when empty.
    pub fn to_shape(&self) -> Shape {
        if self.is_empty() {
            super::shape::empty_collection()
        } else {
            super::shape::polygon_shape(self.to_polygons())
        }
    }

    /// The GeoJSON polygons: rings closed with their first vertex.
    pub fn to_polygons(&self) -> Vec<Polygon> {
        self.polygons
            .iter()
            .map(|p| p.iter().map(|l| ring_of(l)).collect())
            .collect()
    }
}

fn ring_of(vertices: &[Vertex]) -> Vec<Ll> {
    let mut ring: Vec<Ll> = vertices.iter().map(|v| v.ll).collect();
    if let Some(first) = ring.first().copied() {
        ring.push(first);
    }
    ring
}

/// One GeoJSON polygon as loops: the smaller region of each ring, shell counterclockwise and
/// holes clockwise (a ring given the other way round is reversed).
fn polygon_loops(polygon: &Polygon) -> Vec<Loop> {
    let mut loops = Vec::new();
    for (k, ring) in polygon.iter().enumerate() {
        let mut vertices: Loop = ring[..ring.len().saturating_sub(1)]
            .iter()
            .map(|p| Vertex::of(*p))
            .collect();
        vertices.dedup_by(|a, b| a.v == b.v);
        while vertices.len() > 1 && vertices.first().map(|v| v.v) == vertices.last().map(|v| v.v) {
            vertices.pop();
        }
        if vertices.len() < 3 {
            continue;
        }
        if PreparedRing::new(ring).smaller_region_left() != (k == 0) {
            vertices.reverse();
        }
        loops.push(vertices);
    }
    loops
}

/// The region of GeoJSON polygons: one polygon as it is, several as their union. `None` past
/// [`MOST_VERTICES`].
pub fn region_of(polygons: &[Polygon]) -> Option<Loops> {
    let count: usize = polygons.iter().flatten().map(Vec::len).sum();
    if count > MOST_VERTICES {
        return None;
    }
    let parts: Vec<Loops> = polygons
        .iter()
        .map(|p| Loops {
            polygons: vec![polygon_loops(p)].into_iter().filter(|l| !l.is_empty()).collect(),
        })
        .collect();
    union_all(parts)
}

/// The union of regions: the two with the fewest vertices merged first, again and again.
/// `None` when a merge is past the limits.
pub fn union_all(parts: Vec<Loops>) -> Option<Loops> {
    let mut queue: Vec<(usize, usize, Loops)> = parts
        .into_iter()
        .enumerate()
        .map(|(i, l)| (l.vertices(), i, l))
        .collect();
    let mut next = queue.len();
    while queue.len() > 1 {
        let (Some(a), Some(b)) = (pop_smallest(&mut queue), pop_smallest(&mut queue)) else {
            break;
        };
        let merged = combine(&a.2, &b.2, Op::Union)?.region;
        queue.push((a.0 + b.0, next, merged));
        next += 1;
    }
    Some(queue.pop().map(|q| q.2).unwrap_or_default())
}

fn pop_smallest(queue: &mut Vec<(usize, usize, Loops)>) -> Option<(usize, usize, Loops)> {
    let i = (0..queue.len()).min_by_key(|i| (queue[*i].0, queue[*i].1))?;
    Some(queue.swap_remove(i))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Union,
    Intersection,
}

/// What an operation gives: the area, and for an intersection the lines and points where the
/// operands only meet.
#[derive(Debug, Default)]
pub struct Combined {
    pub region: Loops,
    pub lines: Vec<Vec<Vertex>>,
    pub points: Vec<Vertex>,
}

impl Combined {
    /// The result as GeoJSON: points, lines and polygons, a GeometryCollection when it has
    /// more than one kind or nothing at all.
    pub fn to_shape(&self) -> Shape {
        let mut kinds: Vec<Shape> = Vec::new();
        match self.points.as_slice() {
            [] => {}
            [p] => kinds.push(Shape::Point(p.ll)),
            ps => kinds.push(Shape::MultiPoint(ps.iter().map(|p| p.ll).collect())),
        }
        if !self.lines.is_empty() {
            let lines = self.lines.iter().map(|l| l.iter().map(|v| v.ll).collect()).collect();
            kinds.push(super::shape::line_shape(lines));
        }
        if !self.region.is_empty() {
            kinds.push(self.region.to_shape());
        }
        if kinds.len() == 1 {
            kinds.remove(0)
        } else {
            Shape::Collection(kinds)
        }
    }
}

/// The vertices of an operation, near ones merged.
#[derive(Default)]
struct Sites {
    vertices: Vec<Vertex>,
    grid: HashMap<[i64; 3], Vec<usize>>,
}

impl Sites {
    fn key(v: V3) -> [i64; 3] {
        [
            (v[0] / GRID).floor() as i64,
            (v[1] / GRID).floor() as i64,
            (v[2] / GRID).floor() as i64,
        ]
    }

    fn site(&mut self, x: Vertex) -> usize {
        let k = Self::key(x.v);
        for dx in -1..=1 {
            for dy in -1..=1 {
                for dz in -1..=1 {
                    if let Some(found) = self.grid.get(&[k[0] + dx, k[1] + dy, k[2] + dz]) {
                        for &i in found {
                            let d = add(self.vertices[i].v, scale(x.v, -1.0));
                            if norm(d) < MERGE {
                                return i;
                            }
                        }
                    }
                }
            }
        }
        let i = self.vertices.len();
        self.vertices.push(x);
        self.grid.entry(k).or_default().push(i);
        i
    }

    fn v(&self, i: usize) -> V3 {
        self.vertices[i].v
    }
}

/// An input edge: which operand, its number in input order, its ends as sites.
#[derive(Clone, Copy, Debug)]
struct Edge {
    region: usize,
    id: usize,
    a: usize,
    b: usize,
}

/// Whether `p` lies on arc `a`–`b`.
fn on_arc(p: V3, a: V3, b: V3) -> bool {
    angle(p, closest_on_edge(p, a, b)) < MERGE
}

fn sign(x: f64) -> i8 {
    if x > 0.0 {
        1
    } else if x < 0.0 {
        -1
    } else {
        0
    }
}

/// Where arcs `a0`–`a1` and `b0`–`b1` cross at a point inside both.
fn crossing(a0: V3, a1: V3, b0: V3, b1: V3) -> Option<V3> {
    let det = |p: V3, q: V3, r: V3| sign(dot(p, cross(q, r)));
    let acb = det(a0, b0, a1);
    if acb == 0 || det(a1, b1, a0) != acb || det(b0, a1, b1) != acb || det(b1, a0, b0) != acb {
        return None;
    }
    let x = unit(cross(cross(a0, a1), cross(b0, b1)))?;
    Some(if dot(x, add(a0, a1)) < 0.0 { scale(x, -1.0) } else { x })
}

/// A box holding an edge: its ends' box grown by how far the arc bulges out of the chord.
fn bounds(a: V3, b: V3) -> ([f64; 3], [f64; 3]) {
    let bulge = 1.0 - (angle(a, b) / 2.0).cos() + 4.0 * MERGE;
    let mut lo = [0.0; 3];
    let mut hi = [0.0; 3];
    for k in 0..3 {
        lo[k] = a[k].min(b[k]) - bulge;
        hi[k] = a[k].max(b[k]) + bulge;
    }
    (lo, hi)
}

/// The sites where each edge is to be split: crossings and vertices of other edges lying on it.
/// Only edges of different operands are compared unless `all_pairs`.
fn split_points(sites: &mut Sites, edges: &[Edge], all_pairs: bool) -> Option<Vec<Vec<usize>>> {
    let mut splits: Vec<Vec<usize>> = vec![Vec::new(); edges.len()];
    let boxes: Vec<([f64; 3], [f64; 3])> = edges.iter().map(|e| bounds(sites.v(e.a), sites.v(e.b))).collect();
    let mut order: Vec<usize> = (0..edges.len()).collect();
    order.sort_by(|x, y| boxes[*x].0[0].total_cmp(&boxes[*y].0[0]));
    let mut active: Vec<usize> = Vec::new();
    let mut compared = 0usize;
    for &i in &order {
        active.retain(|j| boxes[*j].1[0] >= boxes[i].0[0]);
        compared += active.len();
        if compared > MOST_PAIRS {
            return None;
        }
        for &j in &active {
            let (e, f) = (edges[i], edges[j]);
            if !all_pairs && e.region == f.region {
                continue;
            }
            let overlap = (1..3).all(|k| boxes[i].0[k] <= boxes[j].1[k] && boxes[j].0[k] <= boxes[i].1[k]);
            if overlap {
                meet(sites, &mut splits, (i, e), (j, f));
            }
        }
        active.push(i);
    }
    Some(splits)
}

fn meet(sites: &mut Sites, splits: &mut [Vec<usize>], (i, e): (usize, Edge), (j, f): (usize, Edge)) {
    let (a0, a1, b0, b1) = (sites.v(e.a), sites.v(e.b), sites.v(f.a), sites.v(f.b));
    let mut touching = [e.a, e.b].iter().any(|s| *s == f.a || *s == f.b);
    for (p, s) in [(b0, f.a), (b1, f.b)] {
        if s != e.a && s != e.b && on_arc(p, a0, a1) {
            splits[i].push(s);
            touching = true;
        }
    }
    for (p, s) in [(a0, e.a), (a1, e.b)] {
        if s != f.a && s != f.b && on_arc(p, b0, b1) {
            splits[j].push(s);
            touching = true;
        }
    }
    if touching {
        return;
    }
    if let Some(x) = crossing(a0, a1, b0, b1) {
        let s = sites.site(Vertex::at(x));
        if s != e.a && s != e.b {
            splits[i].push(s);
        }
        if s != f.a && s != f.b {
            splits[j].push(s);
        }
    }
}

/// The edges cut at their split points, in input order, each piece keeping its edge's number.
fn pieces(sites: &Sites, edges: &[Edge], splits: Vec<Vec<usize>>) -> Vec<Edge> {
    let mut out = Vec::new();
    for (e, mut cuts) in edges.iter().zip(splits) {
        let start = sites.v(e.a);
        cuts.sort_by(|x, y| angle(start, sites.v(*x)).total_cmp(&angle(start, sites.v(*y))));
        cuts.dedup();
        let chain: Vec<usize> = std::iter::once(e.a).chain(cuts).chain(std::iter::once(e.b)).collect();
        for w in chain.windows(2) {
            if w[0] != w[1] {
                out.push(Edge { a: w[0], b: w[1], ..*e });
            }
        }
    }
    out
}

/// Even–odd containment in a region's loops; each loop's cap (the circle around its vertices'
/// mean holding them all) rules out points far from it first.
struct Containment {
    rings: Vec<(V3, f64, PreparedRing)>,
}

impl Containment {
    fn new(region: &Loops) -> Containment {
        let cap = |l: &Loop| {
            let center = unit(l.iter().fold([0.0; 3], |s, v| add(s, v.v))).unwrap_or([0.0, 0.0, 1.0]);
            let reach = l.iter().map(|v| dot(v.v, center)).fold(1.0, f64::min);
            (center, reach - 1e-9)
        };
        Containment {
            rings: region
                .loops()
                .map(|l| {
                    let (center, reach) = cap(l);
                    (center, reach, PreparedRing::new(&ring_of(l)))
                })
                .collect(),
        }
    }

    fn contains(&self, x: V3) -> bool {
        self.rings
            .iter()
            .filter(|(center, reach, ring)| (*reach <= 0.0 || dot(x, *center) >= *reach) && ring.contains(x))
            .count()
            % 2
            == 1
    }
}

/// The edges of both operands as input edges, `a`'s numbered first.
fn input_edges(sites: &mut Sites, operands: &[&Loops]) -> Vec<Edge> {
    let mut edges = Vec::new();
    let mut id = 0;
    for (region, loops) in operands.iter().enumerate() {
        for l in loops.loops() {
            let ends: Vec<usize> = l.iter().map(|v| sites.site(*v)).collect();
            for k in 0..ends.len() {
                let (a, b) = (ends[k], ends[(k + 1) % ends.len()]);
                if a != b {
                    edges.push(Edge { region, id, a, b });
                }
                id += 1;
            }
        }
    }
    edges
}

/// The union or intersection of two regions; `None` past the limits.
pub fn combine(a: &Loops, b: &Loops, op: Op) -> Option<Combined> {
    let mut sites = Sites::default();
    let edges = input_edges(&mut sites, &[a, b]);
    let splits = split_points(&mut sites, &edges, false)?;
    let pieces = pieces(&sites, &edges, splits);
    let inside = [Containment::new(b), Containment::new(a)];
    let mut ends: [HashSet<(usize, usize)>; 2] = [HashSet::new(), HashSet::new()];
    let mut on: [HashSet<usize>; 2] = [HashSet::new(), HashSet::new()];
    for p in &pieces {
        ends[p.region].insert((p.a, p.b));
        on[p.region].insert(p.a);
        on[p.region].insert(p.b);
    }
    let mut kept: Vec<Edge> = Vec::new();
    let mut abutting: Vec<Edge> = Vec::new();
    // Along a loop a piece lies on the same side of the other region as the piece before it,
    // unless they meet where the other region's boundary passes.
    let mut previous: Option<(Edge, bool)> = None;
    for p in &pieces {
        let other = 1 - p.region;
        if ends[other].contains(&(p.a, p.b)) {
            if p.region == 0 {
                kept.push(*p);
            }
            continue;
        }
        if ends[other].contains(&(p.b, p.a)) {
            if op == Op::Intersection && p.region == 0 {
                abutting.push(*p);
            }
            continue;
        }
        let inherited = previous
            .filter(|(q, _)| q.region == p.region && q.b == p.a && !on[other].contains(&p.a))
            .map(|(_, within)| within);
        let within = match inherited {
            Some(within) => within,
            None => match unit(add(sites.v(p.a), sites.v(p.b))) {
                Some(mid) => inside[p.region].contains(mid),
                None => continue,
            },
        };
        previous = Some((*p, within));
        if within == (op == Op::Intersection) {
            kept.push(*p);
        }
    }
    let mut combined = Combined {
        region: organize(trace_loops(&sites, &kept)),
        ..Combined::default()
    };
    if op == Op::Intersection {
        combined.lines = chains(&sites, &abutting);
        let used: HashSet<usize> = kept.iter().chain(&abutting).flat_map(|p| [p.a, p.b]).collect();
        let mut touching: Vec<usize> = on[0]
            .intersection(&on[1])
            .filter(|s| !used.contains(s))
            .copied()
            .collect();
        touching.sort_by_key(|s| (cell_of(sites.v(*s)), *s));
        combined.points = touching.into_iter().map(|s| sites.vertices[s]).collect();
    }
    Some(combined)
}

/// The leaf S2 cell of a point: the order output loops are traced in.
fn cell_of(v: V3) -> u64 {
    CellID::from(&Point(s2::r3::vector::Vector {
        x: v[0],
        y: v[1],
        z: v[2],
    }))
    .0
}

/// The angle clockwise around `v` from the direction towards `from` to the direction towards `to`,
/// in (0, 2π]; going straight back is the full turn.
fn clockwise(v: V3, from: V3, to: V3) -> f64 {
    let tangent = |w: V3| add(w, scale(v, -dot(v, w)));
    let (tf, tt) = (tangent(from), tangent(to));
    let ccw = dot(v, cross(tf, tt)).atan2(dot(tf, tt));
    let cw = (-ccw).rem_euclid(std::f64::consts::TAU);
    if cw <= 0.0 { std::f64::consts::TAU } else { cw }
}

/// The kept edges joined into loops: each traced from its edge first in (start, end) cell
/// order, at every vertex taking the edge turning farthest left, then rotated to the
/// canonical start; the loops ordered by the input edge of their first piece.
fn trace_loops(sites: &Sites, edges: &[Edge]) -> Vec<Loop> {
    let cells: HashMap<usize, u64> = edges
        .iter()
        .flat_map(|e| [e.a, e.b])
        .map(|s| (s, cell_of(sites.v(s))))
        .collect();
    let cell = |s: usize| cells.get(&s).copied().unwrap_or(0);
    let mut order: Vec<usize> = (0..edges.len()).collect();
    order.sort_by_key(|i| (cell(edges[*i].a), cell(edges[*i].b), edges[*i].a, edges[*i].b));
    let mut outgoing: HashMap<usize, Vec<usize>> = HashMap::new();
    for &i in &order {
        outgoing.entry(edges[i].a).or_default().push(i);
    }
    let mut used = vec![false; edges.len()];
    let mut loops = Vec::new();
    for &start in &order {
        if used[start] {
            continue;
        }
        used[start] = true;
        let mut chain = vec![start];
        let mut current = start;
        loop {
            let (from, at) = (sites.v(edges[current].a), edges[current].b);
            let next = outgoing.get(&at).and_then(|out| {
                out.iter().copied().filter(|e| !used[*e] || *e == start).min_by(|x, y| {
                    let turn = |e: usize| clockwise(sites.v(at), from, sites.v(edges[e].b));
                    turn(*x).total_cmp(&turn(*y))
                })
            });
            match next {
                Some(e) if e == start => {
                    loops.push(canonical(chain, edges));
                    break;
                }
                Some(e) => {
                    used[e] = true;
                    chain.push(e);
                    current = e;
                }
                None => break,
            }
        }
    }
    loops.sort_by_key(|chain: &Vec<usize>| chain.first().map(|e| edges[*e].id));
    loops
        .into_iter()
        .map(|chain| chain.iter().map(|e| sites.vertices[edges[*e].a]).collect())
        .collect()
}

/// A loop rotated so that the piece of its highest-numbered input edge comes last (the last of
/// a run of pieces of one edge, when its pieces are not together the first run).
fn canonical(mut chain: Vec<usize>, edges: &[Edge]) -> Vec<usize> {
    let id = |k: usize| edges[chain[k]].id;
    let mut pos = 0;
    let mut gap = false;
    for k in 1..chain.len() {
        match id(k).cmp(&id(pos)) {
            std::cmp::Ordering::Less => gap = true,
            std::cmp::Ordering::Greater => {
                pos = k;
                gap = false;
            }
            std::cmp::Ordering::Equal if !gap => pos = k,
            std::cmp::Ordering::Equal => {}
        }
    }
    let start = (pos + 1) % chain.len();
    chain.rotate_left(start);
    chain
}

/// Loops grouped into polygons: each hole (a loop running clockwise around its smaller side)
/// goes with the smallest shell holding it; shells keep their order.
fn organize(loops: Vec<Loop>) -> Loops {
    let prepared: Vec<PreparedRing> = loops.iter().map(|l| PreparedRing::new(&ring_of(l))).collect();
    let shells: Vec<usize> = (0..loops.len())
        .filter(|i| prepared[*i].smaller_region_left())
        .collect();
    let mut polygons: Vec<Vec<Loop>> = shells.iter().map(|s| vec![loops[*s].clone()]).collect();
    let mut orphans = Vec::new();
    for h in (0..loops.len()).filter(|i| !prepared[*i].smaller_region_left()) {
        let l = &loops[h];
        let probe = unit(add(l[0].v, l[1 % l.len()].v)).unwrap_or(l[0].v);
        let owner = (0..shells.len())
            .filter(|k| prepared[shells[*k]].contains(probe))
            .min_by(|x, y| prepared[shells[*x]].area.total_cmp(&prepared[shells[*y]].area));
        match owner {
            Some(k) => polygons[k].push(l.clone()),
            None => orphans.push(l.clone()),
        }
    }
    polygons.extend(orphans.into_iter().map(|l| vec![l]));
    Loops { polygons }
}

/// Pieces joined into polylines: each runs through vertices with one piece in and one out;
/// lines start in input order, closed chains after them.
fn chains(sites: &Sites, pieces: &[Edge]) -> Vec<Vec<Vertex>> {
    let mut into: HashMap<usize, usize> = HashMap::new();
    let mut outgoing: HashMap<usize, Vec<usize>> = HashMap::new();
    for (i, p) in pieces.iter().enumerate() {
        *into.entry(p.b).or_default() += 1;
        outgoing.entry(p.a).or_default().push(i);
    }
    let through = |s: usize| into.get(&s) == Some(&1) && outgoing.get(&s).map(Vec::len) == Some(1);
    let mut used = vec![false; pieces.len()];
    let mut lines = Vec::new();
    let mut walk = |first: usize, used: &mut Vec<bool>, closed: bool| {
        used[first] = true;
        let mut line = vec![pieces[first].a, pieces[first].b];
        let mut at = pieces[first].b;
        while (through(at) || closed) && at != pieces[first].a {
            let Some(next) = outgoing
                .get(&at)
                .and_then(|out| out.iter().copied().find(|e| !used[*e]))
            else {
                break;
            };
            used[next] = true;
            at = pieces[next].b;
            line.push(at);
        }
        lines.push(line.into_iter().map(|s| sites.vertices[s]).collect::<Vec<_>>());
    };
    for i in 0..pieces.len() {
        if !used[i] && !through(pieces[i].a) {
            walk(i, &mut used, false);
        }
    }
    for i in 0..pieces.len() {
        if !used[i] {
            walk(i, &mut used, true);
        }
    }
    lines
}

/// The union of lines: pieces split where lines cross or touch, each stretch once, joined into
/// polylines. `None` past [`MOST_VERTICES`].
pub fn union_lines(lines: &[Vec<Ll>]) -> Option<Vec<Vec<Ll>>> {
    if lines.iter().map(Vec::len).sum::<usize>() > MOST_VERTICES {
        return None;
    }
    let mut sites = Sites::default();
    let mut edges = Vec::new();
    let mut id = 0;
    for line in lines {
        let ends: Vec<usize> = line.iter().map(|p| sites.site(Vertex::of(*p))).collect();
        for w in ends.windows(2) {
            if w[0] != w[1] {
                edges.push(Edge {
                    region: 0,
                    id,
                    a: w[0],
                    b: w[1],
                });
            }
            id += 1;
        }
    }
    let splits = split_points(&mut sites, &edges, true)?;
    let mut seen: HashSet<(usize, usize)> = HashSet::new();
    let unique: Vec<Edge> = pieces(&sites, &edges, splits)
        .into_iter()
        .filter(|p| seen.insert((p.a.min(p.b), p.a.max(p.b))))
        .collect();
    Some(
        chains(&sites, &unique)
            .into_iter()
            .map(|l| l.iter().map(|v| v.ll).collect())
            .collect(),
    )
}

/// Where two sets of lines meet: the stretches they share (as lines, in the first set's
/// direction) and the points where they cross or touch elsewhere, in the first set's order.
/// `None` past [`MOST_VERTICES`].
pub fn intersect_lines(first: &[Vec<Ll>], second: &[Vec<Ll>]) -> Option<Combined> {
    let count: usize = first.iter().chain(second).map(Vec::len).sum();
    if count > MOST_VERTICES {
        return None;
    }
    let mut sites = Sites::default();
    let mut edges = Vec::new();
    let mut id = 0;
    for (region, lines) in [first, second].into_iter().enumerate() {
        for line in lines {
            let ends: Vec<usize> = line.iter().map(|p| sites.site(Vertex::of(*p))).collect();
            for w in ends.windows(2) {
                if w[0] != w[1] {
                    edges.push(Edge {
                        region,
                        id,
                        a: w[0],
                        b: w[1],
                    });
                }
                id += 1;
            }
        }
    }
    let splits = split_points(&mut sites, &edges, false)?;
    let pieces = pieces(&sites, &edges, splits);
    let mut second_ends: HashSet<(usize, usize)> = HashSet::new();
    let mut on_second: HashSet<usize> = HashSet::new();
    for p in pieces.iter().filter(|p| p.region == 1) {
        second_ends.insert((p.a, p.b));
        on_second.insert(p.a);
        on_second.insert(p.b);
    }
    let mut seen: HashSet<(usize, usize)> = HashSet::new();
    let shared: Vec<Edge> = pieces
        .iter()
        .filter(|p| p.region == 0)
        .filter(|p| second_ends.contains(&(p.a, p.b)) || second_ends.contains(&(p.b, p.a)))
        .filter(|p| seen.insert((p.a.min(p.b), p.a.max(p.b))))
        .copied()
        .collect();
    let used: HashSet<usize> = shared.iter().flat_map(|p| [p.a, p.b]).collect();
    let mut points: Vec<usize> = Vec::new();
    for p in pieces.iter().filter(|p| p.region == 0) {
        for s in [p.a, p.b] {
            if on_second.contains(&s) && !used.contains(&s) && !points.contains(&s) {
                points.push(s);
            }
        }
    }
    Some(Combined {
        region: Loops::default(),
        lines: chains(&sites, &shared),
        points: points.into_iter().map(|s| sites.vertices[s]).collect(),
    })
}

#[cfg(test)]
// The expected coordinates are the documented ones, digit for digit.
#[allow(clippy::excessive_precision)]
#[path = "overlay_tests.rs"]
mod tests;
