//! Geospatial functions: coordinates, GeoJSON lines and polygons measured on a sphere
//! (geodesic edges, distances in meters), and the geohash, S2 and H3 grids.
//!
//! Invalid coordinates or shapes give null (or an empty string for the functions that return
//! cell tokens), as the Kusto reference documents.

pub mod buffers;
pub mod geohash;
pub mod h3;
pub mod intersections;
pub mod lines;
pub mod overlay;
pub mod points;
pub mod polygons;
pub mod s2cells;
pub mod shape;
pub mod sphere;
pub mod spheroid;
pub mod unions;
pub mod wkt;

use crate::registry::{BOOL, DYNAMIC, KqlFunction, LONG, REAL, STRING, registry_entry as f};

/// The registered geospatial functions, sorted by name.
pub static FUNCTIONS: &[KqlFunction] = &[
    f!(
        "geo_angle",
        [Real, Real, Real, Real, Real, Real],
        6,
        false,
        REAL,
        points::geo_angle
    ),
    f!(
        "geo_azimuth",
        [Real, Real, Real, Real],
        4,
        false,
        REAL,
        points::geo_azimuth
    ),
    f!(
        "geo_closest_point_on_line",
        [Real, Real, Dynamic],
        3,
        false,
        DYNAMIC,
        lines::geo_closest_point_on_line
    ),
    f!(
        "geo_closest_point_on_polygon",
        [Real, Real, Dynamic],
        3,
        false,
        DYNAMIC,
        polygons::geo_closest_point_on_polygon
    ),
    f!(
        "geo_distance_2points",
        [Real, Real, Real, Real, Bool],
        4,
        false,
        REAL,
        points::geo_distance_2points
    ),
    f!(
        "geo_distance_point_to_line",
        [Real, Real, Dynamic],
        3,
        false,
        REAL,
        lines::geo_distance_point_to_line
    ),
    f!(
        "geo_distance_point_to_polygon",
        [Real, Real, Dynamic],
        3,
        false,
        REAL,
        polygons::geo_distance_point_to_polygon
    ),
    f!("geo_from_wkt", [String], 1, false, DYNAMIC, wkt::geo_from_wkt),
    f!(
        "geo_geohash_neighbors",
        [String],
        1,
        false,
        DYNAMIC,
        geohash::geo_geohash_neighbors
    ),
    f!(
        "geo_geohash_to_central_point",
        [String],
        1,
        false,
        DYNAMIC,
        geohash::geo_geohash_to_central_point
    ),
    f!(
        "geo_geohash_to_polygon",
        [String],
        1,
        false,
        DYNAMIC,
        geohash::geo_geohash_to_polygon
    ),
    f!(
        "geo_h3cell_children",
        [String, Long],
        1,
        false,
        DYNAMIC,
        h3::geo_h3cell_children
    ),
    f!("geo_h3cell_level", [String], 1, false, LONG, h3::geo_h3cell_level),
    f!(
        "geo_h3cell_neighbors",
        [String],
        1,
        false,
        DYNAMIC,
        h3::geo_h3cell_neighbors
    ),
    f!(
        "geo_h3cell_parent",
        [String, Long],
        1,
        false,
        STRING,
        h3::geo_h3cell_parent
    ),
    f!(
        "geo_h3cell_rings",
        [String, Long],
        2,
        false,
        DYNAMIC,
        h3::geo_h3cell_rings
    ),
    f!(
        "geo_h3cell_to_central_point",
        [String],
        1,
        false,
        DYNAMIC,
        h3::geo_h3cell_to_central_point
    ),
    f!(
        "geo_h3cell_to_polygon",
        [String],
        1,
        false,
        DYNAMIC,
        h3::geo_h3cell_to_polygon
    ),
    f!(
        "geo_intersection_2lines",
        [Dynamic, Dynamic],
        2,
        false,
        DYNAMIC,
        intersections::geo_intersection_2lines
    ),
    f!(
        "geo_intersection_2polygons",
        [Dynamic, Dynamic],
        2,
        false,
        DYNAMIC,
        unions::geo_intersection_2polygons
    ),
    f!(
        "geo_intersection_line_with_polygon",
        [Dynamic, Dynamic],
        2,
        false,
        DYNAMIC,
        intersections::geo_intersection_line_with_polygon
    ),
    f!(
        "geo_intersects_2lines",
        [Dynamic, Dynamic],
        2,
        false,
        BOOL,
        intersections::geo_intersects_2lines
    ),
    f!(
        "geo_intersects_2polygons",
        [Dynamic, Dynamic],
        2,
        false,
        BOOL,
        intersections::geo_intersects_2polygons
    ),
    f!(
        "geo_intersects_line_with_polygon",
        [Dynamic, Dynamic],
        2,
        false,
        BOOL,
        intersections::geo_intersects_line_with_polygon
    ),
    f!(
        "geo_line_buffer",
        [Dynamic, Real, Real],
        2,
        false,
        DYNAMIC,
        buffers::geo_line_buffer
    ),
    f!(
        "geo_line_centroid",
        [Dynamic],
        1,
        false,
        DYNAMIC,
        lines::geo_line_centroid
    ),
    f!(
        "geo_line_densify",
        [Dynamic, Real, Bool],
        1,
        false,
        DYNAMIC,
        lines::geo_line_densify
    ),
    f!(
        "geo_line_interpolate_point",
        [Dynamic, Real],
        2,
        false,
        DYNAMIC,
        lines::geo_line_interpolate_point
    ),
    f!("geo_line_length", [Dynamic], 1, false, REAL, lines::geo_line_length),
    f!(
        "geo_line_locate_point",
        [Dynamic, Real, Real, Bool],
        3,
        false,
        REAL,
        lines::geo_line_locate_point
    ),
    f!(
        "geo_line_simplify",
        [Dynamic, Real],
        1,
        false,
        DYNAMIC,
        lines::geo_line_simplify
    ),
    f!(
        "geo_line_to_s2cells",
        [Dynamic, Long, Real],
        1,
        false,
        DYNAMIC,
        s2cells::geo_line_to_s2cells
    ),
    f!(
        "geo_point_buffer",
        [Real, Real, Real, Real],
        3,
        false,
        DYNAMIC,
        points::geo_point_buffer
    ),
    f!(
        "geo_point_in_circle",
        [Real, Real, Real, Real, Real],
        5,
        false,
        BOOL,
        points::geo_point_in_circle
    ),
    f!(
        "geo_point_in_polygon",
        [Real, Real, Dynamic],
        3,
        false,
        BOOL,
        polygons::geo_point_in_polygon
    ),
    f!(
        "geo_point_to_geohash",
        [Real, Real, Long],
        2,
        false,
        STRING,
        geohash::geo_point_to_geohash
    ),
    f!(
        "geo_point_to_h3cell",
        [Real, Real, Long],
        2,
        false,
        STRING,
        h3::geo_point_to_h3cell
    ),
    f!(
        "geo_point_to_s2cell",
        [Real, Real, Long],
        2,
        false,
        STRING,
        s2cells::geo_point_to_s2cell
    ),
    f!(
        "geo_polygon_area",
        [Dynamic],
        1,
        false,
        REAL,
        polygons::geo_polygon_area
    ),
    f!(
        "geo_polygon_buffer",
        [Dynamic, Real, Real],
        2,
        false,
        DYNAMIC,
        buffers::geo_polygon_buffer
    ),
    f!(
        "geo_polygon_centroid",
        [Dynamic],
        1,
        false,
        DYNAMIC,
        polygons::geo_polygon_centroid
    ),
    f!(
        "geo_polygon_densify",
        [Dynamic, Real, Bool],
        1,
        false,
        DYNAMIC,
        polygons::geo_polygon_densify
    ),
    f!(
        "geo_polygon_perimeter",
        [Dynamic],
        1,
        false,
        REAL,
        polygons::geo_polygon_perimeter
    ),
    f!(
        "geo_polygon_simplify",
        [Dynamic, Real],
        1,
        false,
        DYNAMIC,
        polygons::geo_polygon_simplify
    ),
    f!(
        "geo_polygon_to_h3cells",
        [Dynamic, Long, Real],
        1,
        false,
        DYNAMIC,
        h3::geo_polygon_to_h3cells
    ),
    f!(
        "geo_polygon_to_s2cells",
        [Dynamic, Long, Real],
        1,
        false,
        DYNAMIC,
        s2cells::geo_polygon_to_s2cells
    ),
    f!(
        "geo_s2cell_neighbors",
        [String],
        1,
        false,
        DYNAMIC,
        s2cells::geo_s2cell_neighbors
    ),
    f!(
        "geo_s2cell_to_central_point",
        [String],
        1,
        false,
        DYNAMIC,
        s2cells::geo_s2cell_to_central_point
    ),
    f!(
        "geo_s2cell_to_polygon",
        [String],
        1,
        false,
        DYNAMIC,
        s2cells::geo_s2cell_to_polygon
    ),
    f!(
        "geo_simplify_polygons_array",
        [Dynamic, Real],
        1,
        false,
        DYNAMIC,
        unions::geo_simplify_polygons_array
    ),
    f!(
        "geo_union_lines_array",
        [Dynamic],
        1,
        false,
        DYNAMIC,
        unions::geo_union_lines_array
    ),
    f!(
        "geo_union_polygons_array",
        [Dynamic],
        1,
        false,
        DYNAMIC,
        unions::geo_union_polygons_array
    ),
];

#[cfg(test)]
mod tests {
    use super::FUNCTIONS;

    #[test]
    fn names_are_sorted_unique_registered_once_and_build() {
        let names: Vec<&str> = FUNCTIONS.iter().map(|f| f.name).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(names, sorted, "geo::FUNCTIONS is not sorted or has duplicates");
        for function in FUNCTIONS {
            assert_eq!(
                crate::registry::all().filter(|f| f.name == function.name).count(),
                1,
                "{}",
                function.name
            );
            assert!(!(function.udf)().name().is_empty());
            assert!(function.min_args <= function.params.len(), "{}", function.name);
        }
    }
}
