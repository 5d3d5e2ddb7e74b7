//! `parse(print(parse(q))) == parse(q)`, spans aside, over a corpus of queries.

use crate::support::{assert_round_trip, corpus_queries};

/// Hand-written queries covering the first milestone.
pub const QUERIES: &[&str] = &[
    "T",
    "['table with space']",
    "T | reduce kind=source by msg with threshold=0.2, characters='-'",
    "T | reduce by msg",
    "T | fieldstats",
    "T | fieldstats attributes, resource",
    "T | annotate attributes.latency:real, attributes['http.status_code']:long",
    "T | trace-find { span_name == 'a' } >> { status_code == 'ERROR' } > { x > 1 } << { y } < { z } ~ { w } :: { v } within 5m",
    "T | otel-log-stats | take 3",
    "T | facet by a, b with (where x > 1 | take 5)",
    "T | facet by a",
    "T | consume",
    "E | make-graph a --> b with_node_id=name | graph-mark-components kind=strong with_component_id=family | graph-to-table nodes",
    "T | consume decodeblocks=true",
    "E | make-graph src --> dst with N on name, M on id | graph-match cycles=none (a)-[e]->(b)<-[f*1..3]-(c)-[]-() where a.x == 1 and all(f, y > 2) project a.name, n = array_length(f)",
    "E | make-graph src -- dst with_node_id=name | graph-match (a)-[e]->(b) project a.name",
    "E | make-graph src --> dst with_node_id=name | graph-match (a)-->(b)<--(c)--(d) project a.name",
    "E | make-graph src --> dst with N on name | graph-to-table nodes as X with_node_id=Id",
    "E | make-graph src --> dst | graph-to-table edges with_source_id=S with_target_id=T",
    "E | make-graph src --> dst with_node_id=name | graph-shortest-paths output=all (a)-[e*1..4]->(b) where a.name == 'x' project b.name",
    "T | partition hint.strategy=legacy by k { U | where v == k | take 1 }",
    "search body:'cart' or span_name:\"GET*\" and not(x:'y')",
    "T | where x > 1",
    "T | filter x > 1 and y < 2",
    "T | where a == 1 or b == 2 and c == 3",
    "T | where (a == 1 or b == 2) and c == 3",
    "T | where a + b * c - d / e % f > 0",
    "T | where (a + b) * c > 0",
    "T | where a - (b - c) == 0",
    "T | where -x < -1.5",
    "T | where not(isempty(x))",
    "T | where not(a and b) or c",
    "T | where x != 1 and y <> 2",
    "T | where name =~ 'Alice' and city !~ \"paris\"",
    "T | where message has 'error' and message !has 'debug'",
    "T | where m has_cs 'E' or m !has_cs 'e'",
    "T | where m contains 'x' and m !contains 'y' and m contains_cs 'z' and m !contains_cs 'w'",
    "T | where m startswith 'a' or m !startswith 'b' or m startswith_cs 'c' or m !startswith_cs 'd'",
    "T | where m endswith 'a' or m !endswith 'b' or m endswith_cs 'c' or m !endswith_cs 'd'",
    "T | where m hasprefix 'a' or m !hasprefix 'b' or m hassuffix_cs 'c' or m !hassuffix 'd'",
    "T | where m like 'a%' or m notlike 'b%'",
    "T | where m matches regex @'^\\d+$'",
    "T | where x in (1, 2, 3)",
    "T | where x !in ('a', 'b')",
    "T | where x in~ ('A') or y !in~ ('B', 'C')",
    "T | where tags has_any ('a', 'b') and tags has_all ('c')",
    "T | where x in (U | where y > 1 | project x)",
    "T | where x between (1 .. 10)",
    "T | where timestamp !between (ago(1d) .. now())",
    "T | where (a between (1 .. 2)) == true",
    "T | where timestamp > ago(1h) and timestamp <= now()",
    "T | where timestamp >= datetime(2024-01-01) and timestamp < datetime(2024-01-01T10:00:00Z)",
    "T | where d == datetime(null) or t == time(null) or i == int(null)",
    "T | extend a = 1d, b = 2h, c = 30m, d = 10s, e = 100ms, f = 5microsecond, g = 1tick, h = 1.5h",
    "T | extend a = time(1d), b = timespan(00:10:00), c = timespan(1.02:03:04.5), d = timespan(-2h)",
    "T | extend a = int(1), b = long(-5), c = real(1.5), d = bool(true), e = real(nan), f = real(-inf)",
    "T | extend g = guid(74be27de-1e4e-49d9-b579-fe0b331d3642), h = decimal(1.25)",
    "T | extend d = dynamic({\"a\": [1, 2.5, -3, \"x\", null, true], \"b\": {\"c\": {}}})",
    "T | extend d = dynamic([]), e = dynamic(null), f = dynamic(5), g = dynamic('s')",
    "T | extend t = typeof(long), u = typeof(dynamic)",
    "T | extend s = 'single', d = \"double\", v = @\"C:\\path\", m = ```multi\nline```, h = h'hidden'",
    "T | extend s = 'a' 'b' \"c\"",
    "T | extend esc = 'tab\\there\\nnew \\'quoted\\' \\\\'",
    "T | extend r = 1e3, r2 = 1.5e-7, big = 9223372036854775807",
    "T | extend svc = resource['service.name'], first = arr[0], deep = a.b.c, mixed = a.b['c'][0]",
    "T | extend x = tostring(attributes['http.route']), y = toint(x) + 1",
    "T | project a, b = c + 1, ['d e'] = f",
    "T | project-away a, b*, ['c d']",
    "T | project-keep a*, b",
    "T | project-rename new_name = old_name, ['x y'] = z",
    "T | project-reorder c, a* asc, b* desc, d granny-asc",
    "T | take 10",
    "T | limit 10",
    "T | count",
    "T | sort by a desc, b asc nulls first, c nulls last",
    "T | order by timestamp",
    "T | summarize count()",
    "T | summarize count() by bin(timestamp, 5m)",
    "T | summarize n = count(), d = dcount(user), avg(duration) by service = tostring(resource['service.name']), bin(timestamp, 1h)",
    "T | summarize by a, b",
    "T | summarize hint.strategy=shuffle arg_max(timestamp, *) by id",
    "T | summarize (lo, hi) = f(x) by g",
    "T | top 5 by duration desc",
    "T | top 3 by x asc nulls last",
    "T | distinct a, b",
    "T | distinct *",
    "T | where x > 1 | extend y = x * 2 | summarize sum(y) by z | sort by z | take 5",
    "(T | where x) | count",
    "let x = 5; T | where y > x",
    "let t = T | where x > 1; t | count",
    "let f = (a:long, b:string = \"x\") { T | where c == b | take a }; f(1)",
    "let g = (T:(*), n:int = int(3)) { T | take n }; g(U)",
    "let h = () { 42 }; print_value(h())",
    "let ['odd name'] = 1; T | where x == ['odd name']",
    "set querytrace; T | count",
    "T | where toscalar(U | summarize max(x)) > 1",
    "T | extend m = materialize(U | take 1)",
    "T | where f(x = 1, y = 'a')",
    "T | extend star = take_any(*)",
    "T | where a * -b > +c",
    "T | where - -x == 1",
    "T | where $left.a == $right.b",
];

#[test]
fn hand_written_queries_round_trip() {
    assert!(QUERIES.len() >= 60);
    for query in QUERIES {
        assert_round_trip(query);
    }
}

#[test]
fn corpus_queries_that_parse_round_trip() {
    let mut checked = 0;
    for (_, query) in corpus_queries() {
        if trawl_kql::parse(&query).is_ok() {
            assert_round_trip(&query);
            checked += 1;
        }
    }
    println!("{checked} corpus queries round-tripped");
}
