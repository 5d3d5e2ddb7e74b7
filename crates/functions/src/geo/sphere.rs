//! Geometry on the sphere the geospatial functions measure on: points as unit vectors, edges as
//! the shorter great-circle arc between their ends, distances in meters on a sphere of radius
//! [`EARTH_RADIUS`], polygons as the smaller of the two regions each ring bounds.

use super::shape::{Ll, Polygon, Ring};

/// The radius of the sphere distances are measured on, in meters.
pub const EARTH_RADIUS: f64 = 6_371_010.0;

pub type V3 = [f64; 3];

/// Below this length a cross product is taken as zero (the vectors are parallel).
const TINY: f64 = 1e-15;

pub fn vec_of((lng, lat): Ll) -> V3 {
    let (lng, lat) = (lng.to_radians(), lat.to_radians());
    [lat.cos() * lng.cos(), lat.cos() * lng.sin(), lat.sin()]
}

pub fn ll_of(v: V3) -> Ll {
    let lng = if v[0] == 0.0 && v[1] == 0.0 {
        0.0
    } else {
        v[1].atan2(v[0]).to_degrees()
    };
    (lng, v[2].atan2(v[0].hypot(v[1])).to_degrees())
}

pub fn dot(a: V3, b: V3) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

pub fn cross(a: V3, b: V3) -> V3 {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

pub fn norm(a: V3) -> f64 {
    dot(a, a).sqrt()
}

pub fn add(a: V3, b: V3) -> V3 {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}

pub fn scale(a: V3, k: f64) -> V3 {
    [a[0] * k, a[1] * k, a[2] * k]
}

/// `a` scaled to unit length; `None` for a (near) zero vector.
pub fn unit(a: V3) -> Option<V3> {
    let n = norm(a);
    (n > TINY).then(|| scale(a, 1.0 / n))
}

/// The angle between two unit vectors, in radians.
pub fn angle(a: V3, b: V3) -> f64 {
    norm(cross(a, b)).atan2(dot(a, b))
}

/// The distance in meters between two coordinates.
pub fn distance(a: Ll, b: Ll) -> f64 {
    angle(vec_of(a), vec_of(b)) * EARTH_RADIUS
}

/// The point of edge `a`–`b` closest to `x`.
pub fn closest_on_edge(x: V3, a: V3, b: V3) -> V3 {
    let n = cross(a, b);
    if norm(n) > TINY && dot(cross(n, a), x) > 0.0 && dot(cross(b, n), x) > 0.0 {
        let nn = dot(n, n);
        if let Some(p) = unit(add(x, scale(n, -dot(x, n) / nn))) {
            return p;
        }
    }
    if angle(x, a) <= angle(x, b) { a } else { b }
}

/// The point at fraction `t` of the arc from `a` to `b`.
pub fn interpolate(a: V3, b: V3, t: f64) -> V3 {
    let theta = angle(a, b);
    if theta < 1e-12 {
        return a;
    }
    let s = theta.sin();
    let (wa, wb) = (((1.0 - t) * theta).sin() / s, (t * theta).sin() / s);
    unit(add(scale(a, wa), scale(b, wb))).unwrap_or(a)
}

/// The azimuth from `a` to `b`: radians clockwise from north in [0, 2π); `None` when the points
/// coincide.
pub fn azimuth(a: Ll, b: Ll) -> Option<f64> {
    if vec_of(a) == vec_of(b) || angle(vec_of(a), vec_of(b)) < 1e-15 {
        return None;
    }
    let (p1, p2) = (a.1.to_radians(), b.1.to_radians());
    let dl = (b.0 - a.0).to_radians();
    let y = dl.sin() * p2.cos();
    let x = p1.cos() * p2.sin() - p1.sin() * p2.cos() * dl.cos();
    Some(y.atan2(x).rem_euclid(std::f64::consts::TAU))
}

/// The length of a line in radians.
pub fn line_angle(points: &[V3]) -> f64 {
    points.windows(2).map(|w| angle(w[0], w[1])).sum()
}

pub fn vecs(points: &[Ll]) -> Vec<V3> {
    points.iter().copied().map(vec_of).collect()
}

/// Signed area (spherical excess) of the triangle `a`, `b`, `c`: positive when counterclockwise.
fn triangle_area(a: V3, b: V3, c: V3) -> f64 {
    let num = dot(a, cross(b, c));
    let den = 1.0 + dot(a, b) + dot(b, c) + dot(c, a);
    2.0 * num.atan2(den)
}

/// A ring made ready for area and containment: its vertices (without the closing one), the
/// center its gnomonic projection is taken at, and the projected vertices.
pub struct PreparedRing {
    pub vertices: Vec<V3>,
    center: V3,
    basis: (V3, V3),
    /// Projected vertices; `None` when the ring does not fit the hemisphere around its center.
    projected: Option<Vec<(f64, f64)>>,
    planar: Vec<Ll>,
    /// Area of the smaller region, in steradians.
    pub area: f64,
    /// +1 when the smaller region lies left of the vertex order, -1 when right.
    orientation: f64,
}

fn basis_of(c: V3) -> (V3, V3) {
    let helper = if c[0].abs() < 0.9 {
        [1.0, 0.0, 0.0]
    } else {
        [0.0, 1.0, 0.0]
    };
    let e1 = unit(cross(c, helper)).unwrap_or([0.0, 1.0, 0.0]);
    (e1, cross(c, e1))
}

fn project(p: V3, c: V3, (e1, e2): (V3, V3)) -> Option<(f64, f64)> {
    let d = dot(p, c);
    (d > 1e-9).then(|| (dot(p, e1) / d, dot(p, e2) / d))
}

/// Even–odd point-in-polygon test on the plane (a ring's vertices without the closing one).
pub fn planar_contains(points: &[(f64, f64)], (x, y): (f64, f64)) -> bool {
    let mut inside = false;
    let n = points.len();
    for i in 0..n {
        let (xi, yi) = points[i];
        let (xj, yj) = points[(i + n - 1) % n];
        if (yi > y) != (yj > y) && x < (xj - xi) * (y - yi) / (yj - yi) + xi {
            inside = !inside;
        }
    }
    inside
}

impl PreparedRing {
    pub fn new(ring: &Ring) -> PreparedRing {
        let open = &ring[..ring.len().saturating_sub(1)];
        let vertices = vecs(open);
        let sum = vertices.iter().fold([0.0; 3], |s, v| add(s, *v));
        let center = unit(sum).unwrap_or([0.0, 0.0, 1.0]);
        let basis = basis_of(center);
        let projected: Option<Vec<_>> = vertices.iter().map(|v| project(*v, center, basis)).collect();
        let n = vertices.len();
        let signed: f64 = (0..n)
            .map(|i| triangle_area(center, vertices[i], vertices[(i + 1) % n]))
            .sum();
        let left = signed.abs();
        let (area, orientation) = if left <= 2.0 * std::f64::consts::PI {
            (left, signed.signum())
        } else {
            (4.0 * std::f64::consts::PI - left, -signed.signum())
        };
        PreparedRing {
            vertices,
            center,
            basis,
            projected,
            planar: open.to_vec(),
            area,
            orientation,
        }
    }

    pub fn contains(&self, x: V3) -> bool {
        match &self.projected {
            Some(points) => match project(x, self.center, self.basis) {
                Some(p) => planar_contains(points, p),
                None => false,
            },
            None => {
                let points: Vec<(f64, f64)> = self.planar.clone();
                planar_contains(&points, ll_of(x))
            }
        }
    }

    /// Whether the smaller region the ring bounds lies left of its vertex order (the ring runs
    /// counterclockwise around it).
    pub fn smaller_region_left(&self) -> bool {
        self.orientation > 0.0
    }

    /// The edges, each as its two ends.
    pub fn edges(&self) -> impl Iterator<Item = (V3, V3)> + '_ {
        let n = self.vertices.len();
        (0..n).map(move |i| (self.vertices[i], self.vertices[(i + 1) % n]))
    }

    /// Sum over the triangles fanned from the center of area × direction of the triangle's
    /// centroid, signed so that the smaller region counts positive.
    fn centroid_moment(&self) -> V3 {
        let n = self.vertices.len();
        let mut m = [0.0; 3];
        for i in 0..n {
            let (a, b) = (self.vertices[i], self.vertices[(i + 1) % n]);
            let area = triangle_area(self.center, a, b) * self.orientation;
            if let Some(dir) = unit(add(add(self.center, a), b)) {
                m = add(m, scale(dir, area));
            }
        }
        m
    }
}

/// A polygon made ready: its shell and holes.
pub struct PreparedPolygon {
    pub rings: Vec<PreparedRing>,
}

impl PreparedPolygon {
    pub fn new(polygon: &Polygon) -> PreparedPolygon {
        PreparedPolygon {
            rings: polygon.iter().map(PreparedRing::new).collect(),
        }
    }

    pub fn contains(&self, x: V3) -> bool {
        match self.rings.split_first() {
            Some((shell, holes)) => shell.contains(x) && !holes.iter().any(|h| h.contains(x)),
            None => false,
        }
    }

    /// Area in steradians: the shell's less its holes'.
    pub fn area(&self) -> f64 {
        match self.rings.split_first() {
            Some((shell, holes)) => (shell.area - holes.iter().map(|h| h.area).sum::<f64>()).max(0.0),
            None => 0.0,
        }
    }

    pub fn edges(&self) -> impl Iterator<Item = (V3, V3)> + '_ {
        self.rings.iter().flat_map(|r| r.edges())
    }

    fn centroid_moment(&self) -> V3 {
        let mut rings = self.rings.iter();
        let mut m = rings.next().map_or([0.0; 3], |shell| shell.centroid_moment());
        for hole in rings {
            m = add(m, scale(hole.centroid_moment(), -1.0));
        }
        m
    }
}

/// Polygons made ready, tested together (a MultiPolygon).
pub struct Region {
    pub polygons: Vec<PreparedPolygon>,
}

impl Region {
    pub fn new(polygons: &[Polygon]) -> Region {
        Region {
            polygons: polygons.iter().map(PreparedPolygon::new).collect(),
        }
    }

    pub fn contains(&self, x: V3) -> bool {
        self.polygons.iter().any(|p| p.contains(x))
    }

    pub fn area(&self) -> f64 {
        self.polygons.iter().map(|p| p.area()).sum()
    }

    pub fn edges(&self) -> impl Iterator<Item = (V3, V3)> + '_ {
        self.polygons.iter().flat_map(|p| p.edges())
    }

    /// The closest point of the boundary to `x`.
    pub fn closest_on_boundary(&self, x: V3) -> Option<V3> {
        closest_on_edges(x, self.edges())
    }

    pub fn centroid(&self) -> Option<V3> {
        unit(self.polygons.iter().fold([0.0; 3], |m, p| add(m, p.centroid_moment())))
    }

    /// The perimeter in radians: every ring's length.
    pub fn perimeter(&self) -> f64 {
        self.edges().map(|(a, b)| angle(a, b)).sum()
    }
}

/// The point of any of `edges` closest to `x`.
pub fn closest_on_edges(x: V3, edges: impl Iterator<Item = (V3, V3)>) -> Option<V3> {
    let mut best: Option<(f64, V3)> = None;
    for (a, b) in edges {
        let p = closest_on_edge(x, a, b);
        let d = angle(x, p);
        if best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, p));
        }
    }
    best.map(|(_, p)| p)
}

/// The edges of lines.
pub fn line_edges(lines: &[Vec<V3>]) -> impl Iterator<Item = (V3, V3)> + '_ {
    lines.iter().flat_map(|l| l.windows(2).map(|w| (w[0], w[1])))
}

/// Whether `x` lies on arc `a`–`b` (within a tiny angle).
fn on_edge(x: V3, a: V3, b: V3) -> bool {
    angle(x, closest_on_edge(x, a, b)) < 1e-12
}

/// Where arcs `a`–`b` and `c`–`d` meet: their crossing, or an end of one lying on the other.
pub fn edge_intersection(a: V3, b: V3, c: V3, d: V3) -> Option<V3> {
    let (n1, n2) = (cross(a, b), cross(c, d));
    if let Some(x) = unit(cross(n1, n2)) {
        for x in [x, scale(x, -1.0)] {
            let within = |p: V3, q: V3, n: V3| dot(cross(p, x), n) > 0.0 && dot(cross(x, q), n) > 0.0;
            if within(a, b, n1) && within(c, d, n2) {
                return Some(x);
            }
        }
    }
    [(c, a, b), (d, a, b), (a, c, d), (b, c, d)]
        .into_iter()
        .find(|(p, s, e)| on_edge(*p, *s, *e))
        .map(|(p, _, _)| p)
}

/// The centroid of lines: each edge's midpoint weighted by its length.
pub fn lines_centroid(lines: &[Vec<V3>]) -> Option<V3> {
    let mut m = [0.0; 3];
    for (a, b) in line_edges(lines) {
        if let Some(mid) = unit(add(a, b)) {
            m = add(m, scale(mid, angle(a, b)));
        }
    }
    unit(m)
}

/// The indices of the points of `line` kept by Douglas–Peucker simplification: every dropped
/// point lies within `tolerance` radians of the kept line.
pub fn simplify(line: &[V3], tolerance: f64) -> Vec<usize> {
    if line.len() <= 2 {
        return (0..line.len()).collect();
    }
    let mut keep = vec![false; line.len()];
    keep[0] = true;
    keep[line.len() - 1] = true;
    let mut stack = vec![(0, line.len() - 1)];
    while let Some((first, last)) = stack.pop() {
        let mut worst = (0.0, 0);
        for (i, point) in line.iter().enumerate().take(last).skip(first + 1) {
            let d = angle(*point, closest_on_edge(*point, line[first], line[last]));
            if d > worst.0 {
                worst = (d, i);
            }
        }
        if worst.0 > tolerance {
            keep[worst.1] = true;
            stack.push((first, worst.1));
            stack.push((worst.1, last));
        }
    }
    keep.iter().enumerate().filter(|(_, k)| **k).map(|(i, _)| i).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs().max(1e-300)
    }

    #[test]
    fn distances_on_the_documented_sphere() {
        let d = distance((-122.407628, 47.578557), (-118.275287, 34.019056));
        assert!(close(d, 1_546_754.351_973_81, 1e-9), "{d}");
    }

    #[test]
    fn azimuth_is_clockwise_from_north() {
        let Some(a) = azimuth((5.0, 10.0), (10.0, -40.0)) else {
            panic!("distinct points")
        };
        assert!(close(a.to_degrees(), 175.015_653_606_568, 1e-9));
        assert_eq!(azimuth((5.0, 10.0), (5.0, 10.0)), None);
        let Some(east) = azimuth((0.0, 0.0), (1.0, 0.0)) else {
            panic!("distinct points")
        };
        assert!(close(east, std::f64::consts::FRAC_PI_2, 1e-12));
    }

    #[test]
    fn polygon_area_and_containment() {
        let park: Ring = vec![
            (-73.9495, 40.7969),
            (-73.95807266235352, 40.80068603561921),
            (-73.98201942443848, 40.76825672305777),
            (-73.97317886352539, 40.76455136505513),
            (-73.9495, 40.7969),
        ];
        let region = Region::new(&[vec![park.clone()]]);
        let area = region.area() * EARTH_RADIUS * EARTH_RADIUS;
        assert!(close(area, 3_475_207.283_466_06, 1e-8), "{area}");
        // Either orientation bounds the same, smaller region.
        let mut reversed = park.clone();
        reversed.reverse();
        let back = Region::new(&[vec![reversed]]);
        assert!(close(back.area(), region.area(), 1e-12));
        for r in [&region, &back] {
            assert!(r.contains(vec_of((-73.9657, 40.7823))));
            assert!(!r.contains(vec_of((-73.9839, 40.7705))));
            assert!(!r.contains(vec_of((106.0, -40.0))));
        }
    }

    #[test]
    fn crossing_arcs_meet_once() {
        let (a, b) = (vec_of((-1.0, 0.0)), vec_of((1.0, 0.0)));
        let (c, d) = (vec_of((0.0, -1.0)), vec_of((0.0, 1.0)));
        let Some(x) = edge_intersection(a, b, c, d) else {
            panic!("they cross")
        };
        let (lng, lat) = ll_of(x);
        assert!(lng.abs() < 1e-12 && lat.abs() < 1e-12);
        assert_eq!(edge_intersection(a, b, vec_of((0.0, 1.0)), vec_of((0.0, 2.0))), None);
    }

    #[test]
    fn simplification_keeps_the_far_points() {
        let line = vecs(&[(0.0, 0.0), (1.0, 0.0001), (2.0, 0.0), (3.0, 1.0)]);
        let kept = simplify(&line, 100.0 / EARTH_RADIUS);
        assert_eq!(kept, [0, 2, 3], "the bend at (2, 0) stays, the 11 m wiggle goes");
    }
}
