//! `evaluate ipv4_lookup(LookupTable, SourceKey, LookupKey [, ExtraKey, ...] [, return_unmatched])`
//! and `ipv6_lookup(...)`: a join of the input's addresses with the lookup table's networks
//! (IP-prefix notation, `10.1.0.0/16`) that hold them (`ipv4_is_in_range` /
//! `ipv6_is_in_range`), extra keys matching by equality as in `lookup`. The output is the
//! input's columns, then the lookup table's except the extra keys (a name already taken gets a
//! `1` suffix); one row per match, and with `return_unmatched` (a last `true`, or
//! `return_unmatched = true`) the addresses that match nothing are kept with nulls. Every
//! address is tested against every network (a nested-loop join): lookup tables of up to a few
//! hundred thousand networks are what it is for.

use trawl_common::{ErrorCode, KqlType, TrawlError};
use trawl_kql::ast::{Expr as KExpr, ExprKind, Literal};
use trawl_kql::span::Span;

use crate::context::{Planner, Tabular};
use crate::geo_lookup::{LEFT, RIGHT, lookup_join, registered, side};

/// The source address, as computed from the input.
const ADDRESS: &str = "__trawl_ip_address";

impl Planner<'_> {
    pub(crate) fn ip_lookup(
        &mut self,
        input: Tabular,
        args: &[KExpr],
        span: Span,
        v6: bool,
    ) -> Result<Tabular, TrawlError> {
        let plugin = if v6 { "ipv6_lookup" } else { "ipv4_lookup" };
        let mut positional: Vec<&KExpr> = Vec::new();
        let mut return_unmatched = false;
        for arg in args {
            match &arg.kind {
                ExprKind::NamedArgument { name, value } if name.name.eq_ignore_ascii_case("return_unmatched") => {
                    let ExprKind::Literal(Literal::Bool(b)) = value.kind else {
                        return Err(self.error(
                            ErrorCode::BadRequest,
                            value.span,
                            "return_unmatched must be true or false",
                        ));
                    };
                    return_unmatched = b;
                }
                ExprKind::NamedArgument { name, .. } => {
                    return Err(self.error(
                        ErrorCode::BadRequest,
                        arg.span,
                        format!("{plugin} has no argument '{}'", name.name),
                    ));
                }
                ExprKind::Literal(Literal::Bool(b)) if positional.len() >= 3 => return_unmatched = *b,
                _ => positional.push(arg),
            }
        }
        let [table, source_key, lookup_key, extra @ ..] = positional.as_slice() else {
            return Err(self.error(
                ErrorCode::BadRequest,
                span,
                format!(
                    "expected {plugin}(lookup_table, source_key, lookup_key[, extra_key, ...][, return_unmatched])"
                ),
            ));
        };
        let lookup = self.tabular(table)?;
        let ExprKind::Name(key) = &lookup_key.kind else {
            return Err(self.error(
                ErrorCode::BadRequest,
                lookup_key.span,
                format!("{plugin}: the lookup key must be a column of the lookup table"),
            ));
        };
        if lookup.column_type(&key.name) != Some(KqlType::String) {
            return Err(self.error(
                ErrorCode::UnknownColumn,
                key.span,
                format!("the lookup table has no string column '{}'", key.name),
            ));
        }
        let address = self.scalar(source_key, &input)?;
        if address.kql_type != KqlType::String {
            return Err(self.error(
                ErrorCode::TypeMismatch,
                source_key.span,
                format!(
                    "{plugin}: the source key is an address string, found {}",
                    address.kql_type
                ),
            ));
        }
        let mut extra_keys = Vec::with_capacity(extra.len());
        for key in extra.iter() {
            let ExprKind::Name(ident) = &key.kind else {
                return Err(self.error(
                    ErrorCode::BadRequest,
                    key.span,
                    format!("{plugin}: an extra key is a column of both tables"),
                ));
            };
            if input.column_type(&ident.name).is_none() || lookup.column_type(&ident.name).is_none() {
                return Err(self.error(
                    ErrorCode::UnknownColumn,
                    key.span,
                    format!(
                        "{plugin}: the extra key '{}' must be a column of both tables",
                        ident.name
                    ),
                ));
            }
            extra_keys.push(ident.name.clone());
        }
        let in_range = if v6 { "ipv6_is_in_range" } else { "ipv4_is_in_range" };
        let mut condition = registered(in_range, vec![side(LEFT, ADDRESS), side(RIGHT, &key.name)])?.is_true();
        for name in &extra_keys {
            condition = condition.and(side(LEFT, name).eq(side(RIGHT, name)));
        }
        let added = lookup.columns.iter().filter(|(name, _)| !extra_keys.contains(name));
        let located = vec![address.expr.alias(ADDRESS)];
        lookup_join(&input, located, &lookup, condition, return_unmatched, added)
    }
}

#[cfg(test)]
mod tests {
    use trawl_common::ErrorCode;

    const TABLES: &str = r#"let nets = datatable(network:string, country:string, zone:string) ["10.0.0.0/8", "x", "a"];
        let ips = datatable(ip:string, zone:string, n:long) ["10.1.2.3", "a", 1];"#;

    fn plan(text: &str) -> Result<Vec<String>, trawl_common::TrawlError> {
        crate::testing::columns_of(&format!("{TABLES} {text}"))
    }

    fn code(text: &str) -> Option<ErrorCode> {
        crate::testing::error_code(&format!("{TABLES} {text}"))
    }

    #[test]
    fn output_columns_and_binding_errors() {
        assert_eq!(
            plan("ips | evaluate ipv4_lookup(nets, ip, network)").ok(),
            Some(vec![
                "ip".to_string(),
                "zone".into(),
                "n".into(),
                "network".into(),
                "country".into(),
                "zone1".into()
            ])
        );
        assert_eq!(
            plan("ips | evaluate ipv4_lookup(nets, ip, network, zone, return_unmatched = true)").ok(),
            Some(vec![
                "ip".to_string(),
                "zone".into(),
                "n".into(),
                "network".into(),
                "country".into()
            ])
        );
        assert_eq!(
            code("ips | evaluate ipv4_lookup(nets, ip, nope)"),
            Some(ErrorCode::UnknownColumn)
        );
        assert_eq!(
            code("ips | evaluate ipv4_lookup(nets, n, network)"),
            Some(ErrorCode::TypeMismatch)
        );
        assert_eq!(
            code("ips | evaluate ipv4_lookup(nets, ip, network, country)"),
            Some(ErrorCode::UnknownColumn)
        );
        assert_eq!(
            code("ips | evaluate ipv4_lookup(nets, ip)"),
            Some(ErrorCode::BadRequest)
        );
        assert_eq!(
            code("ips | evaluate ipv6_lookup(nets, ip, network, flag = 1)"),
            Some(ErrorCode::BadRequest)
        );
    }
}
