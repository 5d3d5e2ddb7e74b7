//! `geo_from_wkt`: well-known text geometry as GeoJSON.

use datafusion::common::Result;

use super::shape::{self, Ll, Shape};
use crate::rowfn::{Out, Val, str_arg};

/// Deepest nesting of GEOMETRYCOLLECTIONs read.
const DEEPEST: usize = 32;

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Word(String),
    Number(f64),
    Open,
    Close,
    Comma,
}

fn tokenize(text: &str) -> Option<Vec<Token>> {
    let mut tokens = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some(&(start, c)) = chars.peek() {
        match c {
            c if c.is_whitespace() => {
                chars.next();
            }
            '(' => {
                chars.next();
                tokens.push(Token::Open);
            }
            ')' => {
                chars.next();
                tokens.push(Token::Close);
            }
            ',' => {
                chars.next();
                tokens.push(Token::Comma);
            }
            c if c.is_ascii_alphabetic() => {
                let mut end = start;
                while let Some(&(i, c)) = chars.peek() {
                    if !c.is_ascii_alphabetic() {
                        break;
                    }
                    end = i + c.len_utf8();
                    chars.next();
                }
                tokens.push(Token::Word(text[start..end].to_ascii_uppercase()));
            }
            c if c.is_ascii_digit() || matches!(c, '-' | '+' | '.') => {
                let mut end = start;
                while let Some(&(i, c)) = chars.peek() {
                    if !(c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | 'e' | 'E')) {
                        break;
                    }
                    end = i + c.len_utf8();
                    chars.next();
                }
                tokens.push(Token::Number(text[start..end].parse().ok()?));
            }
            _ => return None,
        }
    }
    Some(tokens)
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
}

impl Parser {
    fn next(&mut self) -> Option<Token> {
        let t = self.tokens.get(self.at).cloned();
        self.at += 1;
        t
    }

    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn expect(&mut self, token: Token) -> Option<()> {
        (self.next()? == token).then_some(())
    }

    /// `x y [z [m]]`.
    fn coord(&mut self) -> Option<Ll> {
        let (Token::Number(x), Token::Number(y)) = (self.next()?, self.next()?) else {
            return None;
        };
        while let Some(Token::Number(_)) = self.peek() {
            self.at += 1;
        }
        Some((x, y))
    }

    /// `( item, item, … )`.
    fn list<T>(&mut self, mut item: impl FnMut(&mut Parser) -> Option<T>) -> Option<Vec<T>> {
        self.expect(Token::Open)?;
        let mut items = vec![item(self)?];
        loop {
            match self.next()? {
                Token::Comma => items.push(item(self)?),
                Token::Close => return Some(items),
                _ => return None,
            }
        }
    }

    fn coords(&mut self) -> Option<Vec<Ll>> {
        self.list(Parser::coord)
    }

    /// A MULTIPOINT member: `x y` or `(x y)`.
    fn multipoint_member(&mut self) -> Option<Ll> {
        if self.peek() == Some(&Token::Open) {
            self.at += 1;
            let p = self.coord()?;
            self.expect(Token::Close)?;
            Some(p)
        } else {
            self.coord()
        }
    }

    fn geometry(&mut self, depth: usize) -> Option<Shape> {
        let Token::Word(kind) = self.next()? else { return None };
        if matches!(self.peek(), Some(Token::Word(w)) if matches!(w.as_str(), "Z" | "M" | "ZM")) {
            self.at += 1;
        }
        Some(match kind.as_str() {
            "POINT" => {
                self.expect(Token::Open)?;
                let p = self.coord()?;
                self.expect(Token::Close)?;
                Shape::Point(p)
            }
            "LINESTRING" => Shape::Line(self.coords()?),
            "POLYGON" => Shape::Polygon(self.list(Parser::coords)?),
            "MULTIPOINT" => Shape::MultiPoint(self.list(Parser::multipoint_member)?),
            "MULTILINESTRING" => Shape::MultiLine(self.list(Parser::coords)?),
            "MULTIPOLYGON" => Shape::MultiPolygon(self.list(|p| p.list(Parser::coords))?),
            "GEOMETRYCOLLECTION" if depth < DEEPEST => Shape::Collection(self.list(|p| p.geometry(depth + 1))?),
            _ => return None,
        })
    }
}

/// The shape of a WKT text, checked as GeoJSON is; `None` when invalid or unsupported.
pub fn parse(text: &str) -> Option<Shape> {
    let mut parser = Parser {
        tokens: tokenize(text)?,
        at: 0,
    };
    let shape = parser.geometry(0)?;
    if parser.at != parser.tokens.len() {
        return None;
    }
    // The same checks as GeoJSON input: coordinates in range, lines and rings long enough.
    shape::parse_value(&shape::to_json(&shape))
}

/// `geo_from_wkt(wkt)`.
pub fn geo_from_wkt(args: &[Val]) -> Result<Out> {
    Ok(shape::out_opt(parse(str_arg(args, 0))))
}

#[cfg(test)]
mod tests {
    use crate::testing::{run, s};

    #[test]
    fn documented_texts() {
        assert_eq!(
            run("geo_from_wkt", &[s("POINT (1 2)")]),
            r#"{"type":"Point","coordinates":[1,2]}"#
        );
        assert_eq!(
            run("geo_from_wkt", &[s("POLYGON ((0 0, 2 0, 2 2, 0 0))")]),
            r#"{"type":"Polygon","coordinates":[[[0,0],[2,0],[2,2],[0,0]]]}"#
        );
        assert_eq!(
            run(
                "geo_from_wkt",
                &[s(
                    "GEOMETRYCOLLECTION (POINT (1 1),LINESTRING (2 2, 3 3, 4 4),POLYGON ((10 10, 12 10, 12 12, 10 10)))"
                )]
            ),
            r#"{"type":"GeometryCollection","geometries":[{"type":"Point","coordinates":[1,1]},{"type":"LineString","coordinates":[[2,2],[3,3],[4,4]]},{"type":"Polygon","coordinates":[[[10,10],[12,10],[12,12],[10,10]]]}]}"#
        );
        assert_eq!(
            run("geo_from_wkt", &[s("MULTIPOINT ((1 1), (2 2))")]),
            r#"{"type":"MultiPoint","coordinates":[[1,1],[2,2]]}"#
        );
        assert_eq!(run("geo_from_wkt", &[s("LINESTRING")]), "null");
        assert_eq!(run("geo_from_wkt", &[s("POINT (200 1)")]), "null");
        let deep = format!("{}POINT (1 1){}", "GEOMETRYCOLLECTION (".repeat(100), ")".repeat(100));
        assert_eq!(run("geo_from_wkt", &[s(&deep)]), "null");
    }
}
