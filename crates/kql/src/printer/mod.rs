//! The printer: `Display` for the AST, giving canonical KQL.
//!
//! Printing is stable: `parse(&query.to_string())` gives back the same tree (spans aside).
//! Parentheses are added where precedence needs them; pipelines go one operator per line.

mod expr;
mod literal;
mod operator;
mod operator_extended;

use std::fmt::{self, Display, Formatter};

use crate::ast::{FunctionDef, Ident, Let, LetValue, ParamType, Query, Statement, StatementKind};

pub(crate) use expr::ExprContext;

impl Display for Query {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        for (index, statement) in self.statements.iter().enumerate() {
            if index > 0 {
                f.write_str(";\n")?;
            }
            write!(f, "{statement}")?;
        }
        Ok(())
    }
}

impl Display for Statement {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match &self.kind {
            StatementKind::Let(let_statement) => write!(f, "{let_statement}"),
            StatementKind::Set(option) => {
                write!(f, "set {}", option.name)?;
                match &option.value {
                    Some(value) => write!(f, " = {}", ExprContext::scalar(value)),
                    None => Ok(()),
                }
            }
            StatementKind::Expr(expr) => write!(f, "{}", ExprContext::full(expr)),
            StatementKind::DeclareParameters(params) => {
                let declared = FunctionDef {
                    params: params.clone(),
                    body: Vec::new(),
                    span: self.span,
                };
                let text = declared.to_string();
                // The parameter list of the function's text, without its (empty) body.
                let list = text.split_once(" {").map_or(text.as_str(), |(list, _)| list);
                write!(f, "declare query_parameters{list}")
            }
            StatementKind::DeclarePattern(pattern) => write!(f, "{pattern}"),
            StatementKind::Restrict(entities) => {
                f.write_str("restrict access to (")?;
                for (i, entity) in entities.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    operator_extended::write_table_or_pattern(f, entity)?;
                }
                f.write_str(")")
            }
        }
    }
}

/// The text of a parameter list: `(a:string, b:long)`.
fn param_list(params: &[crate::ast::Param], span: crate::span::Span) -> String {
    let declared = FunctionDef {
        params: params.to_vec(),
        body: Vec::new(),
        span,
    };
    let text = declared.to_string();
    text.split_once(" {").map_or(text.clone(), |(list, _)| list.to_string())
}

impl Display for crate::ast::PatternDecl {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "declare pattern {}", self.name)?;
        if self.params.is_empty() && self.rules.is_empty() {
            return Ok(());
        }
        write!(f, " = {}", param_list(&self.params, self.name.span))?;
        if let Some(path) = &self.path {
            let list = param_list(std::slice::from_ref(path), self.name.span);
            write!(f, "[{}]", list.trim_start_matches('(').trim_end_matches(')'))?;
        }
        f.write_str(" {")?;
        for rule in &self.rules {
            f.write_str(" (")?;
            for (i, arg) in rule.args.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{}", ExprContext::scalar(arg))?;
            }
            f.write_str(")")?;
            if let Some(path) = &rule.path {
                write!(f, ".[{}]", ExprContext::scalar(path))?;
            }
            f.write_str(" = { ")?;
            for (i, statement) in rule.body.iter().enumerate() {
                if i > 0 {
                    f.write_str("; ")?;
                }
                write!(f, "{statement}")?;
            }
            f.write_str(" };")?;
        }
        f.write_str(" }")
    }
}

impl Display for Let {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "let {} = ", self.name)?;
        match &self.value {
            LetValue::Expr(expr) => write!(f, "{}", ExprContext::full(expr)),
            LetValue::Function(function) => write!(f, "{function}"),
        }
    }
}

impl Display for FunctionDef {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str("(")?;
        for (index, param) in self.params.iter().enumerate() {
            if index > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{}:", param.name)?;
            match &param.ty {
                ParamType::Scalar(ty) => f.write_str(ty.name())?,
                ParamType::Tabular { columns, open } => {
                    f.write_str("(")?;
                    let mut parts: Vec<String> = columns
                        .iter()
                        .map(|column| format!("{}:{}", column.name, column.ty.name()))
                        .collect();
                    if *open {
                        parts.push("*".to_string());
                    }
                    write!(f, "{})", parts.join(", "))?;
                }
            }
            if let Some(default) = &param.default {
                write!(f, " = {}", ExprContext::scalar(default))?;
            }
        }
        f.write_str(") {\n")?;
        for statement in &self.body {
            writeln!(f, "{statement};")?;
        }
        f.write_str("}")
    }
}

impl Display for Ident {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if self.bracketed || !is_plain_identifier(&self.name) {
            f.write_str("[")?;
            literal::write_string(f, &self.name)?;
            f.write_str("]")
        } else {
            f.write_str(&self.name)
        }
    }
}

/// True when `name` lexes as one identifier token.
fn is_plain_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    let first_ok = match chars.next() {
        Some('$') => chars.next().is_some_and(|c| c == '_' || c.is_alphabetic()),
        Some(c) => c == '_' || c.is_alphabetic(),
        None => false,
    };
    first_ok && chars.all(|c| c == '_' || c.is_alphanumeric())
}

/// Writes `items` separated by `, `.
pub(crate) fn write_list<T>(
    f: &mut Formatter<'_>,
    items: &[T],
    mut item: impl FnMut(&mut Formatter<'_>, &T) -> fmt::Result,
) -> fmt::Result {
    for (index, value) in items.iter().enumerate() {
        if index > 0 {
            f.write_str(", ")?;
        }
        item(f, value)?;
    }
    Ok(())
}
