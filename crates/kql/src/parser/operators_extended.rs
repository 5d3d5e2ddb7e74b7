//! Parsing of the operators beyond filtering and projection, and of pipeline sources.

use super::{ParseResult, Parser};
use crate::ast::{
    As, Datatable, Evaluate, ExpandItem, Expr, ExprKind, Join, MvApply, MvExpand, NamedExpr, Operator, OperatorKind,
    Parse, ParseKv, ParsePart, Partition, Precedence, Range, Reduce, Render, SampleDistinct, Search, SpanRelation,
    TabularSchema, TopHitters, TraceFind, Union,
};
use crate::ast::{
    EdgeDirection, Facet, Find, FindProject, GraphEdge, GraphMatch, GraphPattern, GraphTablePart, GraphToTable, Ident,
    MakeGraph,
};
use crate::token::TokenKind;

/// Option names (besides `hint.*`) each operator takes.
const UNION_PARAMS: &[&str] = &["kind", "withsource", "isfuzzy"];
const JOIN_PARAMS: &[&str] = &["kind"];
const MV_EXPAND_PARAMS: &[&str] = &["bagexpansion", "with_itemindex", "kind"];
const PARSE_PARAMS: &[&str] = &["kind", "flags"];
const SEARCH_PARAMS: &[&str] = &["kind"];
const FIND_PARAMS: &[&str] = &["withsource"];

impl Parser<'_> {
    /// True when the next token ends the current operator.
    pub(super) fn at_operator_end(&self) -> bool {
        matches!(
            self.peek_kind(),
            TokenKind::Pipe | TokenKind::Semicolon | TokenKind::RParen | TokenKind::RBrace | TokenKind::Eof
        )
    }

    /// An operator that starts a pipeline (`print`, `range`, `datatable`, `union`,
    /// `evaluate`, `search`), if one is at the current position.
    pub(crate) fn try_parse_source_operator(&mut self) -> ParseResult<Option<Operator>> {
        let Some(word) = self.peek_word() else {
            return Ok(None);
        };
        let next = &self.peek_at(1).kind;
        let is_source = match word {
            "print" => !matches!(
                next,
                TokenKind::Assign | TokenKind::Dot | TokenKind::Pipe | TokenKind::Comma
            ),
            "union" | "search" | "find" => !matches!(
                next,
                TokenKind::Assign
                    | TokenKind::Dot
                    | TokenKind::Pipe
                    | TokenKind::Comma
                    | TokenKind::Eof
                    | TokenKind::Semicolon
            ),
            "datatable" => *next == TokenKind::LParen,
            "range" => *next == TokenKind::Ident && self.word_at(2) == Some("from"),
            "evaluate" => *next == TokenKind::Ident,
            _ => false,
        };
        if !is_source {
            return Ok(None);
        }
        let start = self.advance().span;
        let kind = match self.parse_more_operators(word)? {
            Some(kind) => kind,
            None => return Err(self.error_at(start, format!("'{word}' cannot start a query"))),
        };
        Ok(Some(Operator {
            kind,
            span: self.span_from(start),
        }))
    }

    /// Operators beyond the first milestone, the name already consumed; `None` if unknown.
    pub(crate) fn parse_more_operators(&mut self, name: &str) -> ParseResult<Option<OperatorKind>> {
        Ok(Some(match name {
            "print" => {
                if self.at_operator_end() {
                    OperatorKind::Print(Vec::new())
                } else {
                    OperatorKind::Print(self.comma_separated(Self::parse_named_expr)?)
                }
            }
            "datatable" => OperatorKind::Datatable(self.parse_datatable()?),
            "range" => {
                let column = self.parse_ident("a column name after 'range'")?;
                self.expect_word("from")
                    .map_err(|_| self.error_expected("'from' after the column of 'range'"))?;
                let from = self.parse_required_expr("from")?;
                self.expect_word("to")
                    .map_err(|_| self.error_expected("'to' in 'range'"))?;
                let to = self.parse_required_expr("to")?;
                self.expect_word("step")
                    .map_err(|_| self.error_expected("'step' in 'range'"))?;
                let step = self.parse_required_expr("step")?;
                OperatorKind::Range(Range { column, from, to, step })
            }
            "union" => {
                let params = self.parse_params(UNION_PARAMS)?;
                let tables = self.comma_separated(Self::parse_table_or_pattern)?;
                OperatorKind::Union(Union { params, tables })
            }
            "join" => OperatorKind::Join(self.parse_join("join")?),
            "lookup" => OperatorKind::Lookup(self.parse_join("lookup")?),
            "as" => {
                let params = self.parse_params(&[])?;
                OperatorKind::As(As {
                    params,
                    name: self.parse_ident("a name after 'as'")?,
                })
            }
            "mv-expand" => {
                let params = self.parse_params(MV_EXPAND_PARAMS)?;
                let items = self.comma_separated(Self::parse_expand_item)?;
                let limit = self.parse_optional_limit()?;
                OperatorKind::MvExpand(MvExpand { params, items, limit })
            }
            "mv-apply" => {
                let params = self.parse_params(MV_EXPAND_PARAMS)?;
                let items = self.comma_separated(Self::parse_expand_item)?;
                let limit = self.parse_optional_limit()?;
                self.expect_word("on")
                    .map_err(|_| self.error_expected("'on' and a subquery in 'mv-apply'"))?;
                let subquery = self.parse_parenthesized_operators("mv-apply")?;
                OperatorKind::MvApply(MvApply {
                    params,
                    items,
                    limit,
                    subquery,
                })
            }
            "parse" => OperatorKind::Parse(self.parse_parse()?),
            "parse-where" => OperatorKind::ParseWhere(self.parse_parse()?),
            "parse-kv" => OperatorKind::ParseKv(self.parse_parse_kv()?),
            "make-series" => OperatorKind::MakeSeries(self.parse_make_series()?),
            "render" => {
                let chart = self.parse_ident("a chart type after 'render'")?;
                let properties = self.parse_with_options()?;
                OperatorKind::Render(Render { chart, properties })
            }
            "getschema" => OperatorKind::GetSchema,
            "serialize" => {
                if self.at_operator_end() {
                    OperatorKind::Serialize(Vec::new())
                } else {
                    OperatorKind::Serialize(self.comma_separated(Self::parse_named_expr)?)
                }
            }
            "top-nested" => OperatorKind::TopNested(self.parse_top_nested()?),
            "evaluate" => {
                let params = self.parse_params(&[])?;
                let call = self.parse_required_call("evaluate")?;
                let output_schema = match self.eat(&TokenKind::Colon) {
                    Some(_) => {
                        self.expect(&TokenKind::LParen, "'(' and an output schema after ':'")?;
                        let (columns, open) = self.parse_schema_columns()?;
                        Some(TabularSchema { columns, open })
                    }
                    None => None,
                };
                OperatorKind::Evaluate(Evaluate {
                    params,
                    call,
                    output_schema,
                })
            }
            "invoke" => OperatorKind::Invoke(self.parse_required_call("invoke")?),
            "search" => {
                let params = self.parse_params(SEARCH_PARAMS)?;
                let mut tables = Vec::new();
                if self.at_word("in") && self.peek_at(1).kind == TokenKind::LParen {
                    self.advance();
                    self.advance();
                    tables = self.comma_separated(|parser| parser.parse_table_operand("search in"))?;
                    self.expect(&TokenKind::RParen, "')' after the tables of 'search'")?;
                }
                let outer = std::mem::replace(&mut self.in_search, true);
                let predicate = self.parse_required_expr("search");
                self.in_search = outer;
                let predicate = predicate?;
                OperatorKind::Search(Search {
                    params,
                    tables,
                    predicate,
                })
            }
            "find" => OperatorKind::Find(self.parse_find()?),
            "fork" => OperatorKind::Fork(self.parse_fork()?),
            "partition" => {
                let params = self.parse_params(&[])?;
                self.expect_word("by")
                    .map_err(|_| self.error_expected("'by' after 'partition'"))?;
                let column = self.parse_ident("a column name after 'by'")?;
                let by = Expr::new(ExprKind::Name(column.clone()), column.span);
                if self.eat(&TokenKind::LBrace).is_some() {
                    self.enter()?;
                    let source = self.parse_pipeline_expr();
                    self.leave();
                    let source = source?;
                    self.expect(&TokenKind::RBrace, "'}' after the subquery of 'partition'")?;
                    OperatorKind::Partition(Partition {
                        params,
                        by,
                        subquery: Vec::new(),
                        legacy: Some(Box::new(source)),
                    })
                } else {
                    let subquery = self.parse_parenthesized_operators("partition")?;
                    OperatorKind::Partition(Partition {
                        params,
                        by,
                        subquery,
                        legacy: None,
                    })
                }
            }
            "scan" => OperatorKind::Scan(self.parse_scan()?),
            "trace-find" => OperatorKind::TraceFind(self.parse_trace_find()?),
            "otel-log-stats" => OperatorKind::OtelLogStats,
            "facet" => {
                self.expect_word("by")
                    .map_err(|_| self.error_expected("'by' and columns after 'facet'"))?;
                let columns = self.comma_separated(|parser| parser.parse_ident("a column name"))?;
                let with = match self.eat_word("with") {
                    Some(_) => Some(self.parse_parenthesized_operators("facet")?),
                    None => None,
                };
                OperatorKind::Facet(Facet { columns, with })
            }
            "consume" => OperatorKind::Consume(self.parse_params(&["decodeblocks"])?),
            "make-graph" => OperatorKind::MakeGraph(self.parse_make_graph()?),
            "graph-match" => OperatorKind::GraphMatch(self.parse_graph_match(&["cycles"])?),
            "graph-to-table" => OperatorKind::GraphToTable(GraphToTable {
                parts: self.comma_separated(|parser| {
                    let what = parser.parse_ident("nodes or edges after 'graph-to-table'")?;
                    let mut alias = None;
                    let mut params = Vec::new();
                    loop {
                        if parser.eat_word("as").is_some() {
                            alias = Some(parser.parse_ident("a table name after 'as'")?);
                        } else {
                            let more = parser.parse_params(&["with_node_id", "with_source_id", "with_target_id"])?;
                            if more.is_empty() {
                                break;
                            }
                            params.extend(more);
                        }
                    }
                    Ok(GraphTablePart { what, alias, params })
                })?,
            }),
            "graph-shortest-paths" => OperatorKind::GraphShortestPaths(self.parse_graph_match(&["output"])?),
            "graph-mark-components" => {
                OperatorKind::GraphMarkComponents(self.parse_params(&["kind", "with_component_id"])?)
            }
            "annotate" => OperatorKind::Annotate(self.comma_separated(|parser| {
                let path = parser.parse_required_expr("annotate")?;
                parser.expect(&TokenKind::Colon, "':' and a type after an annotated path")?;
                Ok((path, parser.parse_scalar_type()?))
            })?),
            "fieldstats" => OperatorKind::FieldStats(if self.at_operator_end() {
                Vec::new()
            } else {
                self.comma_separated(|parser| parser.parse_required_expr("fieldstats"))?
            }),
            "project-by-names" => OperatorKind::ProjectByNames(
                self.comma_separated(|parser| parser.parse_required_expr("project-by-names"))?,
            ),
            "reduce" => {
                let params = self.parse_params(&["kind"])?;
                self.expect_word("by")
                    .map_err(|_| self.error_expected("'by' after 'reduce'"))?;
                let by = self.parse_required_expr("by")?;
                let options = self.parse_with_options_unparenthesized()?;
                OperatorKind::Reduce(Reduce { params, by, options })
            }
            "sample" => OperatorKind::Sample(self.parse_required_expr("sample")?),
            "sample-distinct" => {
                let count = self.parse_required_expr("sample-distinct")?;
                self.expect_word("of")
                    .map_err(|_| self.error_expected("'of' in 'sample-distinct'"))?;
                OperatorKind::SampleDistinct(SampleDistinct {
                    count,
                    of: self.parse_required_expr("of")?,
                })
            }
            "top-hitters" => {
                let count = self.parse_required_expr("top-hitters")?;
                self.expect_word("of")
                    .map_err(|_| self.error_expected("'of' in 'top-hitters'"))?;
                let of = self.parse_required_expr("of")?;
                let by = match self.eat_word("by") {
                    Some(_) => Some(self.parse_required_expr("by")?),
                    None => None,
                };
                OperatorKind::TopHitters(TopHitters { count, of, by })
            }
            _ => return Ok(None),
        }))
    }

    fn parse_datatable(&mut self) -> ParseResult<Datatable> {
        self.expect(&TokenKind::LParen, "'(' and a schema after 'datatable'")?;
        let columns = self.comma_separated(Self::parse_column_decl)?;
        self.expect(&TokenKind::RParen, "',' or ')' in the schema of 'datatable'")?;
        self.expect(&TokenKind::LBracket, "'[' and values after the schema of 'datatable'")?;
        let mut values = Vec::new();
        while self.eat(&TokenKind::RBracket).is_none() {
            values.push(self.parse_required_expr("'[' or ','")?);
            if self.eat(&TokenKind::Comma).is_none() {
                self.expect(&TokenKind::RBracket, "',' or ']' in the values of 'datatable'")?;
                break;
            }
        }
        Ok(Datatable { columns, values })
    }

    /// A table operand: a parenthesized pipeline, a name, or a call (`table("x")`).
    fn parse_table_operand(&mut self, after: &str) -> ParseResult<Expr> {
        if !self.can_start_expr() {
            return Err(self.error_expected(&format!("a table after '{after}'")));
        }
        self.parse_postfix()
    }

    fn parse_join(&mut self, name: &str) -> ParseResult<Join> {
        let params = self.parse_params(JOIN_PARAMS)?;
        let right = self.parse_table_operand(name)?;
        self.expect_word("on")
            .map_err(|_| self.error_expected(&format!("'on' after the right side of '{name}'")))?;
        let mut on = Vec::new();
        loop {
            on.push(self.parse_binary(Precedence::Equality)?);
            if self.eat(&TokenKind::Comma).is_none() && self.eat_word("and").is_none() {
                break;
            }
        }
        Ok(Join { params, right, on })
    }

    fn parse_expand_item(&mut self) -> ParseResult<ExpandItem> {
        let start = self.peek().span;
        let expr = self.parse_named_expr()?;
        let mut to_type = None;
        if self.at_word("to") && self.word_at(1) == Some("typeof") {
            self.advance();
            self.advance();
            self.expect(&TokenKind::LParen, "'(' after 'typeof'")?;
            to_type = Some(self.parse_scalar_type()?);
            self.expect(&TokenKind::RParen, "')' after the type")?;
        }
        Ok(ExpandItem {
            expr,
            to_type,
            span: self.span_from(start),
        })
    }

    fn parse_optional_limit(&mut self) -> ParseResult<Option<Expr>> {
        match self.eat_word("limit") {
            Some(_) => Ok(Some(self.parse_required_expr("limit")?)),
            None => Ok(None),
        }
    }

    /// `( operator | operator ... )`: a sub-pipeline without a source.
    pub(super) fn parse_parenthesized_operators(&mut self, owner: &str) -> ParseResult<Vec<Operator>> {
        self.expect(&TokenKind::LParen, &format!("'(' and a subquery in '{owner}'"))?;
        self.enter()?;
        let mut operators = vec![self.parse_operator()?];
        while self.eat(&TokenKind::Pipe).is_some() {
            operators.push(self.parse_operator()?);
        }
        self.leave();
        self.expect(&TokenKind::RParen, &format!("'|' or ')' in the subquery of '{owner}'"))?;
        Ok(operators)
    }

    fn parse_required_call(&mut self, after: &str) -> ParseResult<Expr> {
        let start = self.peek().span;
        let call = self.parse_table_operand(after)?;
        match call.kind {
            ExprKind::Call { .. } => Ok(call),
            _ => Err(self.error_at(start.to(call.span), format!("expected a function call after '{after}'"))),
        }
    }

    fn parse_parse(&mut self) -> ParseResult<Parse> {
        let params = self.parse_params(PARSE_PARAMS)?;
        let source = self.parse_required_expr("parse")?;
        self.expect_word("with")
            .map_err(|_| self.error_expected("'with' and a pattern in 'parse'"))?;
        let mut pattern = Vec::new();
        while !self.at_operator_end() {
            let token = self.peek().clone();
            let part = match token.kind {
                TokenKind::String(_) => {
                    let literal = self.parse_postfix()?;
                    match literal.kind {
                        ExprKind::Literal(crate::ast::Literal::String(text)) => ParsePart::Text {
                            text,
                            span: literal.span,
                        },
                        _ => return Err(self.error_at(literal.span, "expected a string in the 'parse' pattern")),
                    }
                }
                TokenKind::Star => {
                    self.advance();
                    ParsePart::Wildcard { span: token.span }
                }
                _ => {
                    let name = self.parse_ident("a string, '*' or a column name in the 'parse' pattern")?;
                    let ty = match self.eat(&TokenKind::Colon) {
                        Some(_) => Some(self.parse_scalar_type()?),
                        None => None,
                    };
                    ParsePart::Column {
                        name,
                        ty,
                        span: self.span_from(token.span),
                    }
                }
            };
            pattern.push(part);
        }
        if pattern.is_empty() {
            return Err(self.error_expected("a pattern after 'with'"));
        }
        Ok(Parse {
            params,
            source,
            pattern,
        })
    }

    fn parse_parse_kv(&mut self) -> ParseResult<ParseKv> {
        let source = self.parse_required_expr("parse-kv")?;
        self.expect_word("as")
            .map_err(|_| self.error_expected("'as' and a schema in 'parse-kv'"))?;
        self.expect(&TokenKind::LParen, "'(' and a schema after 'as'")?;
        let columns = self.comma_separated(Self::parse_column_decl)?;
        self.expect(&TokenKind::RParen, "',' or ')' in the schema of 'parse-kv'")?;
        let options = self.parse_with_options()?;
        Ok(ParseKv {
            source,
            columns,
            options,
        })
    }

    /// `with (name = value, ...)` if present.
    fn parse_with_options(&mut self) -> ParseResult<Vec<NamedExpr>> {
        if self.eat_word("with").is_none() {
            return Ok(Vec::new());
        }
        self.expect(&TokenKind::LParen, "'(' after 'with'")?;
        let options = self.comma_separated(Self::parse_named_expr)?;
        self.expect(&TokenKind::RParen, "',' or ')' in the 'with' options")?;
        Ok(options)
    }

    /// `with name = value, ...` (no parentheses, as in `reduce`) if present.
    fn parse_with_options_unparenthesized(&mut self) -> ParseResult<Vec<NamedExpr>> {
        if self.eat_word("with").is_none() {
            return Ok(Vec::new());
        }
        self.comma_separated(Self::parse_named_expr)
    }

    /// After `trace-find`: `{predicate} (relation {predicate})* [within timespan]`.
    fn parse_trace_find(&mut self) -> ParseResult<TraceFind> {
        let mut spansets = vec![self.parse_spanset()?];
        let mut relations = Vec::new();
        loop {
            let relation = match (self.peek_kind(), &self.peek_at(1).kind) {
                (TokenKind::Gt, TokenKind::Gt) => Some((SpanRelation::Descendant, 2)),
                (TokenKind::Gt, _) => Some((SpanRelation::Child, 1)),
                (TokenKind::Lt, TokenKind::Lt) => Some((SpanRelation::Ancestor, 2)),
                (TokenKind::Lt, _) => Some((SpanRelation::Parent, 1)),
                (TokenKind::Tilde, _) => Some((SpanRelation::Sibling, 1)),
                (TokenKind::Colon, TokenKind::Colon) => Some((SpanRelation::SameTrace, 2)),
                _ => None,
            };
            let Some((relation, tokens)) = relation else { break };
            for _ in 0..tokens {
                self.advance();
            }
            relations.push(relation);
            spansets.push(self.parse_spanset()?);
        }
        let within = match self.eat_word("within") {
            Some(_) => Some(self.parse_required_expr("within")?),
            None => None,
        };
        Ok(TraceFind {
            spansets,
            relations,
            within,
        })
    }

    /// `{ predicate }`.
    fn parse_spanset(&mut self) -> ParseResult<Expr> {
        self.expect(&TokenKind::LBrace, "'{' to start a span set")?;
        let predicate = self.parse_required_expr("'{'")?;
        self.expect(&TokenKind::RBrace, "'}' to end a span set")?;
        Ok(predicate)
    }

    /// After `make-graph`: `Source --> Target [with_node_id = Name] [with Nodes on Key, ...]`.
    fn parse_make_graph(&mut self) -> ParseResult<MakeGraph> {
        let source = self.parse_ident("the source column after 'make-graph'")?;
        let directed = match (self.peek_kind(), &self.peek_at(1).kind, &self.peek_at(2).kind) {
            (TokenKind::Minus, TokenKind::Minus, TokenKind::Gt) => true,
            (TokenKind::Minus, TokenKind::Minus, _) => false,
            _ => return Err(self.error_expected("'-->' or '--' between the source and target columns")),
        };
        for _ in 0..if directed { 3 } else { 2 } {
            self.advance();
        }
        let target = self.parse_ident("the target column of 'make-graph'")?;
        let mut node_id = None;
        let mut nodes = Vec::new();
        loop {
            if self.at_word("with_node_id") && self.peek_at(1).kind == TokenKind::Assign {
                self.advance();
                self.advance();
                node_id = Some(self.parse_ident("a property name after 'with_node_id='")?);
            } else if self.eat_word("with").is_some() {
                loop {
                    let table = self.parse_table_operand("with")?;
                    self.expect_word("on")
                        .map_err(|_| self.error_expected("'on' and the key column of a node table"))?;
                    let key = self.parse_ident("the key column of a node table")?;
                    nodes.push((table, key));
                    if self.eat(&TokenKind::Comma).is_none() {
                        break;
                    }
                }
            } else {
                break;
            }
        }
        Ok(MakeGraph {
            source,
            target,
            directed,
            nodes,
            node_id,
        })
    }

    /// After `graph-match`: `[cycles = ...] pattern, ... [where condition] [project items]`.
    fn parse_graph_match(&mut self, options: &[&str]) -> ParseResult<GraphMatch> {
        let params = self.parse_params(options)?;
        let patterns = self.comma_separated(Self::parse_graph_pattern)?;
        let condition = match self.eat_word("where") {
            Some(_) => Some(self.parse_required_expr("where")?),
            None => None,
        };
        let project = match self.eat_word("project") {
            Some(_) => self.comma_separated(Self::parse_named_expr)?,
            None => Vec::new(),
        };
        Ok(GraphMatch {
            params,
            patterns,
            condition,
            project,
        })
    }

    /// `(name)`, the name optional.
    fn parse_graph_node(&mut self) -> ParseResult<Option<Ident>> {
        self.expect(&TokenKind::LParen, "'(' to start a pattern node")?;
        let name = match self.peek_kind() {
            TokenKind::RParen => None,
            _ => Some(self.parse_ident("a node name")?),
        };
        self.expect(&TokenKind::RParen, "')' to end a pattern node")?;
        Ok(name)
    }

    /// `(a)-[e]->(b)<-[f*1..3]-(c)-[g]-(d)`.
    fn parse_graph_pattern(&mut self) -> ParseResult<GraphPattern> {
        let mut nodes = vec![self.parse_graph_node()?];
        let mut edges = Vec::new();
        while matches!(self.peek_kind(), TokenKind::Minus | TokenKind::Lt) {
            // Anonymous edges: `-->`, `<--`, `--`.
            let short = match (self.peek_kind(), &self.peek_at(1).kind, &self.peek_at(2).kind) {
                (TokenKind::Minus, TokenKind::Minus, TokenKind::Gt) => Some((EdgeDirection::Forward, 3)),
                (TokenKind::Lt, TokenKind::Minus, TokenKind::Minus) => Some((EdgeDirection::Backward, 3)),
                (TokenKind::Minus, TokenKind::Minus, _) => Some((EdgeDirection::Any, 2)),
                _ => None,
            };
            if let Some((direction, tokens)) = short {
                for _ in 0..tokens {
                    self.advance();
                }
                edges.push(GraphEdge {
                    name: None,
                    direction,
                    range: None,
                });
                nodes.push(self.parse_graph_node()?);
                continue;
            }
            let backward = self.eat(&TokenKind::Lt).is_some();
            self.expect(&TokenKind::Minus, "'-' in a pattern edge")?;
            let open = self.expect(&TokenKind::LBracket, "'[' to start a pattern edge")?;
            let name = match self.peek_kind() {
                TokenKind::Ident => Some(self.parse_ident("an edge name")?),
                _ => None,
            };
            let range = if *self.peek_kind() == TokenKind::Star {
                let star = self.advance().span;
                let rest = self.text.get(star.end as usize..).unwrap_or("");
                let Some(close) = rest.find(']') else {
                    return Err(self.error_expected("']' after the length range of a pattern edge"));
                };
                let text = rest[..close].trim();
                let parse = |t: &str| t.trim().parse::<u32>().ok();
                let range = match text.split_once("..") {
                    Some((low, high)) => parse(low).zip(parse(high)),
                    None => parse(text).map(|n| (n, n)),
                };
                let Some(range) = range.filter(|(low, high)| low <= high) else {
                    return Err(self.error_at(open, format!("expected a length range such as *1..5, found *{text}")));
                };
                while !matches!(self.peek_kind(), TokenKind::RBracket | TokenKind::Eof) {
                    self.advance();
                }
                Some(range)
            } else {
                None
            };
            self.expect(&TokenKind::RBracket, "']' to end a pattern edge")?;
            self.expect(&TokenKind::Minus, "'-' after a pattern edge")?;
            let forward = self.eat(&TokenKind::Gt).is_some();
            let direction = match (backward, forward) {
                (false, true) => EdgeDirection::Forward,
                (true, false) => EdgeDirection::Backward,
                (false, false) => EdgeDirection::Any,
                (true, true) => return Err(self.error_at(open, "a pattern edge points one way: <-[e]- or -[e]->")),
            };
            edges.push(GraphEdge { name, direction, range });
            nodes.push(self.parse_graph_node()?);
        }
        Ok(GraphPattern { nodes, edges })
    }
}

impl Parser<'_> {
    /// After `find`: `[withsource=Name] [in (tables)] [where] predicate [project-smart |
    /// project c[:type], ... [, pack_all()]]`.
    fn parse_find(&mut self) -> ParseResult<Find> {
        let params = self.parse_params(FIND_PARAMS)?;
        let mut tables = Vec::new();
        if self.at_word("in") && self.peek_at(1).kind == TokenKind::LParen {
            self.advance();
            self.advance();
            tables = self.comma_separated(Self::parse_table_or_pattern)?;
            self.expect(&TokenKind::RParen, "')' after the tables of 'find'")?;
        }
        if self.at_word("where") {
            self.advance();
        }
        let outer = std::mem::replace(&mut self.in_search, true);
        let predicate = self.parse_required_expr("find");
        self.in_search = outer;
        let predicate = predicate?;
        let mut project = None;
        if self.at_word("project") {
            let smart = self.peek_at(1).kind == TokenKind::Minus && self.word_at(2) == Some("smart");
            self.advance();
            if smart {
                self.advance();
                self.advance();
            } else {
                let mut columns = Vec::new();
                let mut pack_all = false;
                loop {
                    if self.at_word("pack_all") && self.peek_at(1).kind == TokenKind::LParen {
                        self.advance();
                        self.advance();
                        self.expect(&TokenKind::RParen, "')' after 'pack_all('")?;
                        pack_all = true;
                    } else {
                        let name = self.parse_ident("a column name or pack_all() in the project list of 'find'")?;
                        let ty = match self.eat(&TokenKind::Colon) {
                            Some(_) => Some(self.parse_scalar_type()?),
                            None => None,
                        };
                        columns.push((name, ty));
                    }
                    if self.eat(&TokenKind::Comma).is_none() {
                        break;
                    }
                }
                project = Some(FindProject { columns, pack_all });
            }
        }
        Ok(Find {
            params,
            tables,
            predicate,
            project,
        })
    }

    /// A table operand of `union`, `find in (...)` or `restrict access to (...)`, or a name pattern
    /// with `*` (`Events*`, `*`).
    pub(crate) fn parse_table_or_pattern(&mut self) -> ParseResult<Expr> {
        let at_pattern = match self.peek_kind() {
            TokenKind::Star => true,
            TokenKind::Ident => self.peek_at(1).kind == TokenKind::Star && self.adjacent(1),
            _ => false,
        };
        if !at_pattern {
            return self.parse_table_operand("a table, a name pattern or a query");
        }
        let start = self.peek().span;
        let mut pattern = String::new();
        // Words and stars written together: `Log*`, `*Events`, `A*B*`.
        loop {
            match self.peek_kind() {
                TokenKind::Star => pattern.push('*'),
                TokenKind::Ident => pattern.push_str(self.peek_word().unwrap_or_default()),
                _ => break,
            }
            self.advance();
            if !self.adjacent(1) && !matches!(self.peek_kind(), TokenKind::Star | TokenKind::Ident) {
                break;
            }
            if self.peek().span.start != self.last_end {
                break;
            }
        }
        let span = self.span_from(start);
        Ok(Expr::new(ExprKind::Name(Ident::new(pattern, span)), span))
    }
}
