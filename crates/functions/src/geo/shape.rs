//! GeoJSON shapes as the geospatial functions take and return them: parsing a dynamic value
//! into a checked [`Shape`] (coordinates in range, lines of two or more points, closed rings
//! of three or more distinct vertices) and writing points, lines and polygons back.

use serde_json::{Map, Value, json};

use crate::json::real;
use crate::rowfn::{Out, Val};

/// A coordinate: longitude, latitude in degrees.
pub type Ll = (f64, f64);

/// A ring: closed, first coordinate equal to the last.
pub type Ring = Vec<Ll>;

/// A polygon: its shell, then its holes.
pub type Polygon = Vec<Ring>;

#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    Point(Ll),
    MultiPoint(Vec<Ll>),
    Line(Vec<Ll>),
    MultiLine(Vec<Vec<Ll>>),
    Polygon(Polygon),
    MultiPolygon(Vec<Polygon>),
    Collection(Vec<Shape>),
}

/// Whether a longitude and latitude are valid coordinates.
pub fn valid(lng: f64, lat: f64) -> bool {
    lng.is_finite() && lat.is_finite() && (-180.0..=180.0).contains(&lng) && (-90.0..=90.0).contains(&lat)
}

/// A coordinate argument pair, `None` when either is null or out of range.
pub fn point_args(lng: Val, lat: Val) -> Option<Ll> {
    let (lng, lat) = (lng.real()?, lat.real()?);
    valid(lng, lat).then_some((lng, lat))
}

fn coord(value: &Value) -> Option<Ll> {
    let items = value.as_array()?;
    if items.len() < 2 {
        return None;
    }
    let (lng, lat) = (items[0].as_f64()?, items[1].as_f64()?);
    valid(lng, lat).then_some((lng, lat))
}

fn coords(value: &Value) -> Option<Vec<Ll>> {
    value.as_array()?.iter().map(coord).collect()
}

fn line(value: &Value) -> Option<Vec<Ll>> {
    let points = coords(value)?;
    (points.len() >= 2).then_some(points)
}

fn distinct(points: &[Ll]) -> usize {
    let mut seen: Vec<Ll> = Vec::new();
    for p in points {
        if !seen.contains(p) {
            seen.push(*p);
        }
    }
    seen.len()
}

fn ring(value: &Value) -> Option<Ring> {
    let points = coords(value)?;
    let closed = points.len() >= 4 && points.first() == points.last();
    (closed && distinct(&points) >= 3).then_some(points)
}

fn polygon(value: &Value) -> Option<Polygon> {
    let rings: Option<Polygon> = value.as_array()?.iter().map(ring).collect();
    rings.filter(|rings| !rings.is_empty())
}

fn nonempty<T>(items: Option<Vec<T>>) -> Option<Vec<T>> {
    items.filter(|items| !items.is_empty())
}

/// The checked shape of a GeoJSON value; `None` when it is not valid GeoJSON geometry.
pub fn parse_value(value: &Value) -> Option<Shape> {
    let object = value.as_object()?;
    let kind = object.get("type")?.as_str()?;
    if kind == "GeometryCollection" {
        let items = object.get("geometries")?.as_array()?;
        return items
            .iter()
            .map(parse_value)
            .collect::<Option<Vec<_>>>()
            .map(Shape::Collection);
    }
    let c = object.get("coordinates")?;
    Some(match kind {
        "Point" => Shape::Point(coord(c)?),
        "MultiPoint" => Shape::MultiPoint(nonempty(coords(c))?),
        "LineString" => Shape::Line(line(c)?),
        "MultiLineString" => Shape::MultiLine(nonempty(c.as_array()?.iter().map(line).collect())?),
        "Polygon" => Shape::Polygon(polygon(c)?),
        "MultiPolygon" => Shape::MultiPolygon(nonempty(c.as_array()?.iter().map(polygon).collect())?),
        _ => return None,
    })
}

/// The shape of a dynamic argument.
pub fn parse(v: Val) -> Option<Shape> {
    parse_value(&crate::json::parse(v)?)
}

/// The lines of a LineString or MultiLineString argument.
pub fn lines(v: Val) -> Option<Vec<Vec<Ll>>> {
    match parse(v)? {
        Shape::Line(points) => Some(vec![points]),
        Shape::MultiLine(lines) => Some(lines),
        _ => None,
    }
}

/// The polygons of a Polygon or MultiPolygon argument.
pub fn polygons(v: Val) -> Option<Vec<Polygon>> {
    match parse(v)? {
        Shape::Polygon(p) => Some(vec![p]),
        Shape::MultiPolygon(ps) => Some(ps),
        _ => None,
    }
}

/// A coordinate number: integral values as integers, as the input wrote them.
fn number(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        Value::from(v as i64)
    } else {
        real(v)
    }
}

fn coord_json(p: Ll) -> Value {
    Value::Array(vec![number(p.0), number(p.1)])
}

fn coords_json(points: &[Ll]) -> Value {
    Value::Array(points.iter().copied().map(coord_json).collect())
}

fn polygon_json(rings: &[Ring]) -> Value {
    Value::Array(rings.iter().map(|r| coords_json(r)).collect())
}

fn typed(kind: &str, coordinates: Value) -> Value {
    let mut object = Map::new();
    object.insert("type".into(), Value::from(kind));
    object.insert("coordinates".into(), coordinates);
    Value::Object(object)
}

/// The GeoJSON value of a shape.
pub fn to_json(shape: &Shape) -> Value {
    match shape {
        Shape::Point(p) => typed("Point", coord_json(*p)),
        Shape::MultiPoint(ps) => typed("MultiPoint", coords_json(ps)),
        Shape::Line(ps) => typed("LineString", coords_json(ps)),
        Shape::MultiLine(ls) => typed(
            "MultiLineString",
            Value::Array(ls.iter().map(|l| coords_json(l)).collect()),
        ),
        Shape::Polygon(rings) => typed("Polygon", polygon_json(rings)),
        Shape::MultiPolygon(ps) => typed(
            "MultiPolygon",
            Value::Array(ps.iter().map(|p| polygon_json(p)).collect()),
        ),
        Shape::Collection(items) => {
            json!({"type": "GeometryCollection", "geometries": items.iter().map(to_json).collect::<Vec<_>>()})
        }
    }
}

/// A dynamic result holding `shape`.
pub fn out(shape: Shape) -> Out {
    crate::json::out(to_json(&shape))
}

/// A dynamic result holding `shape`, null for `None`.
pub fn out_opt(shape: Option<Shape>) -> Out {
    shape.map_or(Out::Null, out)
}

/// An empty GeometryCollection, the result of an intersection that is empty.
pub fn empty_collection() -> Shape {
    Shape::Collection(Vec::new())
}

/// One line as a LineString, several as a MultiLineString.
pub fn line_shape(mut lines: Vec<Vec<Ll>>) -> Shape {
    if lines.len() == 1 {
        Shape::Line(lines.remove(0))
    } else {
        Shape::MultiLine(lines)
    }
}

/// One polygon as a Polygon, several as a MultiPolygon.
pub fn polygon_shape(mut polygons: Vec<Polygon>) -> Shape {
    if polygons.len() == 1 {
        Shape::Polygon(polygons.remove(0))
    } else {
        Shape::MultiPolygon(polygons)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(text: &str) -> Option<Shape> {
        parse_value(&serde_json::from_str(text).ok()?)
    }

    #[test]
    fn checks_what_geojson_requires() {
        assert_eq!(
            shape(r#"{"type":"Point","coordinates":[1,2]}"#),
            Some(Shape::Point((1.0, 2.0)))
        );
        assert_eq!(shape(r#"{"type":"Point","coordinates":[200,2]}"#), None);
        assert_eq!(shape(r#"{"type":"LineString","coordinates":[[1,1]]}"#), None);
        assert_eq!(shape(r#"{"type":"LineString"}"#), None);
        assert!(shape(r#"{"type":"LineString","coordinates":[[1,1],[2,2]]}"#).is_some());
        // A ring needs four entries, closed, three distinct vertices.
        assert_eq!(
            shape(r#"{"type":"Polygon","coordinates":[[[0,0],[10,10],[10,10],[0,0]]]}"#),
            None
        );
        assert_eq!(
            shape(r#"{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,1]]]}"#),
            None
        );
        assert_eq!(shape(r#"{"type":"Polygon","coordinates":[]}"#), None);
        assert!(shape(r#"{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,0]]]}"#).is_some());
        assert_eq!(shape(r#"{"type":"Circle","coordinates":[1,2]}"#), None);
    }

    #[test]
    fn writes_back_what_it_read() {
        let text = r#"{"type":"GeometryCollection","geometries":[{"type":"Point","coordinates":[1.5,2]},{"type":"MultiLineString","coordinates":[[[1,1],[2,2]]]}]}"#;
        let Some(parsed) = shape(text) else {
            panic!("valid collection")
        };
        assert_eq!(to_json(&parsed).to_string(), text);
    }
}
