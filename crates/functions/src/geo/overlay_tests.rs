//! Tests of the overlay: documented union and intersection outputs, abutting, nested and
//! holed polygons, many-polygon unions, line unions and intersections.

use super::*;

fn region(text: &str) -> Loops {
    let Some(Shape::Polygon(p)) = super::super::shape::parse_value(&serde_json::from_str(text).unwrap_or_default())
    else {
        panic!("a polygon: {text}")
    };
    region_of(&[p]).unwrap_or_default()
}

fn close(actual: &[Ll], expected: &[Ll]) -> bool {
    actual.len() == expected.len()
        && actual
            .iter()
            .zip(expected)
            .all(|(a, e)| (a.0 - e.0).abs() < 1e-9 && (a.1 - e.1).abs() < 1e-9)
}

fn ring(shape: &Shape) -> Vec<Ll> {
    match shape {
        Shape::Polygon(p) => p[0].clone(),
        other => panic!("not a polygon: {other:?}"),
    }
}

const P1: &str = r#"{"type":"Polygon","coordinates":[[[-73.9495,40.7969],[-73.95807,40.80068],[-73.98201,40.76825],[-73.97317,40.76455],[-73.9495,40.7969]]]}"#;
const P2: &str = r#"{"type":"Polygon","coordinates":[[[-73.94622,40.79249],[-73.96888,40.79282],[-73.9577,40.7789],[-73.94622,40.79249]]]}"#;
const P3: &str = r#"{"type":"Polygon","coordinates":[[[-73.97335,40.77274],[-73.9936,40.76630],[-73.97171,40.75655],[-73.97335,40.77274]]]}"#;

#[test]
fn union_of_two_follows_the_documented_vertex_order() {
    let u = union_all(vec![region(P1), region(P2)]).unwrap_or_default();
    let shape = u.to_shape();
    let expected = [
        (-73.9495, 40.7969),
        (-73.95807, 40.80068),
        (-73.9639277517478, 40.792748258673875),
        (-73.96888, 40.792819999999992),
        (-73.9662719791645, 40.7895734224338),
        (-73.98201, 40.76825),
        (-73.97317, 40.76455),
        (-73.960302383706178, 40.782140794645024),
        (-73.9577, 40.7789),
        (-73.94622, 40.79249),
        (-73.9526593223173, 40.792584227716468),
        (-73.9495, 40.7969),
    ];
    assert!(close(&ring(&shape), &expected), "{shape:?}");
}

#[test]
fn union_of_three_merges_the_smallest_first() {
    let u = union_all(vec![region(P1), region(P2), region(P3)]).unwrap_or_default();
    let shape = u.to_shape();
    let expected = [
        (-73.972599326729608, 40.765330371902991),
        (-73.960302383706178, 40.782140794645024),
        (-73.9577, 40.7789),
        (-73.94622, 40.79249),
        (-73.9526593223173, 40.792584227716468),
        (-73.9495, 40.7969),
        (-73.95807, 40.80068),
        (-73.9639277517478, 40.792748258673875),
        (-73.96888, 40.792819999999992),
        (-73.9662719791645, 40.7895734224338),
        (-73.9803360309571, 40.770518810606404),
        (-73.9936, 40.7663),
        (-73.97171, 40.756550000000004),
        (-73.972599326729608, 40.765330371902991),
    ];
    assert!(close(&ring(&shape), &expected), "{shape:?}");
}

#[test]
fn intersections_keep_area_points_and_nothing() {
    let a = region(
        r#"{"type":"Polygon","coordinates":[[[-73.9630937576294,40.77498840732385],[-73.963565826416,40.774383111780914],[-73.96205306053162,40.773745311181585],[-73.96160781383514,40.7743912365898],[-73.9630937576294,40.77498840732385]]]}"#,
    );
    let b = region(
        r#"{"type":"Polygon","coordinates":[[[-73.96213352680206,40.775045280447145],[-73.9631313085556,40.774578106920345],[-73.96207988262177,40.77416780398293],[-73.96213352680206,40.775045280447145]]]}"#,
    );
    let shape = combine(&a, &b, Op::Intersection).unwrap_or_default().to_shape();
    let expected = [
        (-73.962105776437156, 40.774591360999679),
        (-73.962642403166868, 40.774807020251778),
        (-73.9631313085556, 40.774578106920352),
        (-73.962079882621765, 40.774167803982927),
        (-73.962105776437156, 40.774591360999679),
    ];
    assert!(close(&ring(&shape), &expected), "{shape:?}");

    let t1 = region(r#"{"type":"Polygon","coordinates":[[[2,45],[0,45],[1,44],[2,45]]]}"#);
    let t2 = region(r#"{"type":"Polygon","coordinates":[[[3,44],[2,45],[2,43],[3,44]]]}"#);
    assert_eq!(
        combine(&t1, &t2, Op::Intersection).unwrap_or_default().to_shape(),
        Shape::Point((2.0, 45.0))
    );
    let t3 = region(r#"{"type":"Polygon","coordinates":[[[3,44],[3,45],[2,43],[3,44]]]}"#);
    assert_eq!(
        combine(&t1, &t3, Op::Intersection).unwrap_or_default().to_shape(),
        Shape::Collection(vec![])
    );
}

#[test]
fn abutting_squares_unite_into_one_and_intersect_in_their_shared_edge() {
    let a = region(r#"{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,1],[0,0]]]}"#);
    let b = region(r#"{"type":"Polygon","coordinates":[[[1,0],[2,0],[2,1],[1,1],[1,0]]]}"#);
    let u = combine(&a, &b, Op::Union).unwrap_or_default();
    assert_eq!(u.region.polygons.len(), 1);
    assert_eq!(u.region.polygons[0][0].len(), 6, "{:?}", u.region);
    let i = combine(&a, &b, Op::Intersection).unwrap_or_default().to_shape();
    assert_eq!(i, Shape::Line(vec![(1.0, 0.0), (1.0, 1.0)]));
}

#[test]
fn a_polygon_inside_another_leaves_the_outer_in_a_union_and_the_inner_in_an_intersection() {
    let outer = region(r#"{"type":"Polygon","coordinates":[[[0,0],[4,0],[4,4],[0,4],[0,0]]]}"#);
    let inner = region(r#"{"type":"Polygon","coordinates":[[[1,1],[2,1],[2,2],[1,1]]]}"#);
    assert_eq!(combine(&outer, &inner, Op::Union).unwrap_or_default().region, outer);
    assert_eq!(
        combine(&outer, &inner, Op::Intersection).unwrap_or_default().region,
        inner
    );
    // Disjoint polygons unite into a MultiPolygon.
    let far = region(r#"{"type":"Polygon","coordinates":[[[10,10],[11,10],[11,11],[10,10]]]}"#);
    assert_eq!(
        combine(&outer, &far, Op::Union)
            .unwrap_or_default()
            .region
            .polygons
            .len(),
        2
    );
}

#[test]
fn a_hole_survives_a_union_with_a_polygon_outside_it() {
    let holed =
        region(r#"{"type":"Polygon","coordinates":[[[0,0],[4,0],[4,4],[0,4],[0,0]],[[1,1],[1,2],[2,2],[2,1],[1,1]]]}"#);
    let side = region(r#"{"type":"Polygon","coordinates":[[[3,1],[6,1],[6,2],[3,2],[3,1]]]}"#);
    let u = combine(&holed, &side, Op::Union).unwrap_or_default().region;
    assert_eq!(u.polygons.len(), 1);
    assert_eq!(u.polygons[0].len(), 2, "shell and hole: {u:?}");
}

fn square(x: f64, y: f64, side: f64) -> Loops {
    let p = vec![vec![(x, y), (x + side, y), (x + side, y + side), (x, y + side), (x, y)]];
    region_of(&[p]).unwrap_or_default()
}

fn area(region: &Loops) -> f64 {
    crate::geo::sphere::Region::new(&region.to_polygons()).area()
}

#[test]
fn a_grid_of_abutting_squares_unites_into_one_square_and_overlapping_ones_into_their_cover() {
    let grid: Vec<Loops> = (0..20)
        .flat_map(|i| (0..20).map(move |j| square(i as f64 * 0.1, j as f64 * 0.1, 0.1)))
        .collect();
    let total: f64 = grid.iter().map(area).sum();
    let u = union_all(grid).unwrap_or_default();
    assert_eq!(u.polygons.len(), 1);
    assert_eq!(u.polygons[0].len(), 1, "no holes");
    // Every grid corner on the outline stays a vertex.
    assert_eq!(u.polygons[0][0].len(), 80);
    assert!((area(&u) - total).abs() / total < 1e-9);
    // Squares overlapping by half their side in both directions: the cover is one square.
    let shifted: Vec<Loops> = (0..9)
        .flat_map(|i| (0..9).map(move |j| square(i as f64 * 0.05, j as f64 * 0.05, 0.1)))
        .collect();
    let u = union_all(shifted).unwrap_or_default();
    assert_eq!(u.polygons.len(), 1, "{u:?}");
    assert!((area(&u) - area(&square(0.0, 0.0, 0.5))).abs() / area(&u) < 1e-4);
    // The intersection of the grid's union with a square across its corner is that corner.
    let corner = combine(&u, &square(0.4, 0.4, 1.0), Op::Intersection).unwrap_or_default();
    assert!((area(&corner.region) - area(&square(0.4, 0.4, 0.1))).abs() / area(&corner.region) < 1e-4);
}

#[test]
fn lines_meet_in_points_and_shared_stretches() {
    let a = vec![vec![(0.0, 0.0), (2.0, 0.0)]];
    let crossing = vec![vec![(1.0, -1.0), (1.0, 1.0)]];
    let met = intersect_lines(&a, &crossing).unwrap_or_default();
    assert_eq!(met.lines.len(), 0);
    assert_eq!(met.points.len(), 1);
    assert!((met.points[0].ll.0 - 1.0).abs() < 1e-9 && met.points[0].ll.1.abs() < 1e-9);
    // The same line, either way round: the line itself.
    let same = intersect_lines(&a, &[vec![(2.0, 0.0), (0.0, 0.0)]])
        .unwrap_or_default()
        .to_shape();
    assert_eq!(same, Shape::Line(vec![(0.0, 0.0), (2.0, 0.0)]));
    // Overlapping in part, and touching at an end elsewhere.
    let b = vec![vec![(1.0, 0.0), (3.0, 0.0)], vec![(0.0, 0.0), (0.0, 1.0)]];
    let shape = intersect_lines(&a, &b).unwrap_or_default().to_shape();
    assert_eq!(
        shape,
        Shape::Collection(vec![
            Shape::Point((0.0, 0.0)),
            Shape::Line(vec![(1.0, 0.0), (2.0, 0.0)])
        ])
    );
    assert_eq!(
        intersect_lines(&a, &[vec![(5.0, 5.0), (6.0, 6.0)]])
            .unwrap_or_default()
            .to_shape(),
        Shape::Collection(vec![])
    );
}

#[test]
fn lines_unite_along_their_shared_stretches() {
    let a = vec![(0.0, 0.0), (1.0, 1.0), (2.0, 1.0)];
    let b = vec![(1.0, 1.0), (2.0, 1.0), (3.0, 0.0)];
    let c = vec![(1.0, 1.0), (2.0, 1.0)];
    assert_eq!(
        union_lines(&[a, b, c]),
        Some(vec![vec![(0.0, 0.0), (1.0, 1.0), (2.0, 1.0), (3.0, 0.0)]])
    );
    // Crossing lines are split where they cross.
    let crossing = union_lines(&[vec![(0.0, -1.0), (0.0, 1.0)], vec![(-1.0, 0.0), (1.0, 0.0)]]).unwrap_or_default();
    assert_eq!(crossing.len(), 4, "{crossing:?}");
}
