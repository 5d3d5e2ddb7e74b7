//! `find [withsource=Name] [in (tables)] [where] predicate [project-smart | project c[:type], ...
//! [, pack_all()]]`, lowered to a `union` of one `search` per table:
//!
//! - the tables are those given (a name, a `prefix*` pattern or a parenthesized query), else
//!   every table; a table lacking a column the predicate names is left out;
//! - the source column (`source_`, or the `withsource` name) holds each row's table;
//! - `project-smart` (the default) keeps the columns the predicate names and those every
//!   searched table has, and packs each row's other columns into a bag `pack_`;
//! - `project c1, c2:type, ...` keeps those columns (null where a table lacks one, cast to the
//!   type given) and with `pack_all()` packs the other columns into `pack_`.

use std::collections::BTreeSet;

use trawl_common::{ErrorCode, KqlType, TrawlError};
use trawl_kql::ast::{ExprKind, Find};
use trawl_kql::span::Span;

use crate::context::{Planner, Tabular, internal};
use crate::names::{bracketed, matches_pattern, string_literal};

/// A searched table: its source name, the KQL text of its search, its columns.
type Searched = (String, String, Vec<(String, KqlType)>);

/// The bag of a row's other columns.
const PACK: &str = "pack_";

/// A typed null in KQL text.
fn null_of(kql_type: KqlType) -> String {
    match kql_type {
        KqlType::Dynamic => "dynamic(null)".to_string(),
        other => format!("to{}(dynamic(null))", other.as_str()),
    }
}

/// `bag_pack("a", a, "b", b)` of `columns`, `dynamic({})` for none.
fn bag_of(columns: &[&String]) -> String {
    if columns.is_empty() {
        return "dynamic({})".to_string();
    }
    let pairs: Vec<String> = columns
        .iter()
        .map(|c| format!("{}, {}", string_literal(c), bracketed(c)))
        .collect();
    format!("bag_pack({})", pairs.join(", "))
}

impl Planner<'_> {
    /// The operands of `find in (...)` (or every table) as (source name, KQL text).
    fn find_operands(&self, find: &Find, span: Span) -> Result<Vec<(String, String)>, TrawlError> {
        let all: Vec<String> = self
            .tables
            .table_names()
            .into_iter()
            .filter(|t| self.is_visible(t))
            .collect();
        if find.tables.is_empty() {
            if all.is_empty() {
                return Err(self.error(ErrorCode::UnknownTable, span, "there is no table to find rows in"));
            }
            return Ok(all.iter().map(|t| (t.clone(), bracketed(t))).collect());
        }
        let mut operands = Vec::new();
        for (i, table) in find.tables.iter().enumerate() {
            match &table.kind {
                ExprKind::Name(ident) if ident.name.contains('*') => {
                    operands.extend(
                        all.iter()
                            .filter(|t| matches_pattern(&ident.name, t))
                            .map(|t| (t.clone(), bracketed(t))),
                    );
                }
                ExprKind::Name(ident) => operands.push((ident.name.clone(), bracketed(&ident.name))),
                _ => operands.push((format!("union_arg{i}"), format!("({table})"))),
            }
        }
        Ok(operands)
    }

    /// Plans KQL text built here.
    fn planned_text(&mut self, what: &str, text: &str, span: Span) -> Result<Tabular, TrawlError> {
        let expr = self.parse_lowered(what, text, span)?;
        self.tabular(&expr)
    }

    pub fn find(&mut self, find: &Find, span: Span) -> Result<Tabular, TrawlError> {
        let source = find
            .params
            .iter()
            .find(|p| p.name.eq_ignore_ascii_case("withsource"))
            .map(|p| match &p.value.kind {
                ExprKind::Name(ident) => Ok(ident.name.clone()),
                _ => Err(self.error(ErrorCode::BadRequest, p.span, "withsource takes a column name")),
            })
            .transpose()?
            .unwrap_or_else(|| "source_".to_string());
        let predicate = find.predicate.to_string();
        // The predicate's words that name columns (strings and functions aside).
        let words: BTreeSet<String> = trawl_kql::lexer::tokenize(&predicate)
            .iter()
            .filter(|t| t.kind == trawl_kql::token::TokenKind::Ident)
            .filter_map(|t| predicate.get(t.span.range()).map(str::to_string))
            .collect();
        // The tables the predicate applies to, each with its columns.
        let mut searched: Vec<Searched> = Vec::new();
        for (name, operand) in self.find_operands(find, span)? {
            let text = format!("{operand} | search {predicate}");
            match self.planned_text("find", &text, span) {
                Ok(table) => searched.push((name, text, table.columns)),
                Err(e) if e.code == ErrorCode::UnknownColumn => {}
                Err(e) => return Err(e),
            }
        }
        if searched.is_empty() {
            return Err(self.error(
                ErrorCode::UnknownColumn,
                find.predicate.span,
                "no table has every column the predicate of 'find' names",
            ));
        }
        let mut legs = Vec::with_capacity(searched.len());
        let mut order: Vec<String> = vec![source.clone()];
        match &find.project {
            Some(project) => {
                for (column, ty) in &project.columns {
                    let known = ty.map(crate::scalar::kql_type_of_scalar).or_else(|| {
                        searched.iter().find_map(|(_, _, columns)| {
                            columns.iter().find(|(n, _)| *n == column.name).map(|(_, t)| *t)
                        })
                    });
                    if known.is_none() {
                        return Err(self.error(
                            ErrorCode::UnknownColumn,
                            column.span,
                            format!(
                                "no searched table has the column '{0}': give its type ({0}:string)",
                                column.name
                            ),
                        ));
                    }
                    order.push(column.name.clone());
                }
                for (table, text, columns) in &searched {
                    let mut items = Vec::new();
                    for (column, ty) in &project.columns {
                        let present = columns.iter().find(|(n, _)| *n == column.name).map(|(_, t)| *t);
                        let c = bracketed(&column.name);
                        items.push(match (present, ty) {
                            (Some(_), None) => c.clone(),
                            (Some(_), Some(ty)) => format!("{c} = to{}({c})", ty.name()),
                            (None, Some(ty)) => format!("{c} = {}", null_of(crate::scalar::kql_type_of_scalar(*ty))),
                            (None, None) => continue,
                        });
                    }
                    if project.pack_all {
                        let rest: Vec<&String> = columns
                            .iter()
                            .map(|(n, _)| n)
                            .filter(|n| !project.columns.iter().any(|(c, _)| c.name == **n))
                            .collect();
                        items.push(format!("{PACK} = {}", bag_of(&rest)));
                    }
                    legs.push(format!(
                        "({text} | project {} | as {})",
                        items.join(", "),
                        bracketed(table)
                    ));
                }
                if project.pack_all {
                    order.push(PACK.to_string());
                }
            }
            None => {
                let kept = |name: &str| {
                    words.contains(name)
                        || searched
                            .iter()
                            .all(|(_, _, columns)| columns.iter().any(|(n, _)| n == name))
                };
                for (table, text, columns) in &searched {
                    let keep: Vec<String> = columns
                        .iter()
                        .filter(|(n, _)| kept(n))
                        .map(|(n, _)| bracketed(n))
                        .collect();
                    let rest: Vec<&String> = columns.iter().map(|(n, _)| n).filter(|n| !kept(n)).collect();
                    let mut items = keep;
                    items.push(format!("{PACK} = {}", bag_of(&rest)));
                    legs.push(format!(
                        "({text} | project {} | as {})",
                        items.join(", "),
                        bracketed(table)
                    ));
                }
            }
        }
        let text = format!("union withsource={} {}", bracketed(&source), legs.join(", "));
        let united = self.planned_text("find", &text, span)?;
        // Output order: the source, the listed (or kept) columns, the bag last.
        let mut columns: Vec<(String, KqlType)> = Vec::with_capacity(united.columns.len());
        for name in &order {
            if let Some(found) = united.columns.iter().find(|(n, _)| n == name) {
                columns.push(found.clone());
            }
        }
        for column in &united.columns {
            if column.0 != PACK && !columns.iter().any(|(n, _)| *n == column.0) {
                columns.push(column.clone());
            }
        }
        if let Some(pack) = united.columns.iter().find(|(n, _)| n == PACK)
            && !columns.iter().any(|(n, _)| n == PACK)
        {
            columns.push(pack.clone());
        }
        let exprs: Vec<datafusion::prelude::Expr> = columns.iter().map(|(n, _)| crate::context::column(n)).collect();
        let plan = united
            .builder()
            .project(exprs)
            .and_then(|b| b.build())
            .map_err(|e| internal(&e))?;
        Ok(Tabular { plan, columns })
    }
}
