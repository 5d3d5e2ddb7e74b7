"""Queries that build far more than a query's memory budget, one per function and operator
that builds arrays, strings or rows: shared by the hostile-query tests and the test that
runs the whole server under a memory cap.

Each shape is driven to many times the budget of the tests that use it (64 MiB per query):
gigabytes at least, often far more. A shape gets 400 with a message that names the memory
limit and what was building when it was reached (`says`), or, where an operator streams its
rows, may run into the query's time limit instead (504). Shapes whose answer is a huge
result are cut (200 with a ResultTruncated warning) before it is built.

What each shape builds depends on its row (`range(x, x + n)`, `strcat(..., x)`), so none is
folded into one constant while the query is planned: the work happens row by row, as it does
over a table's columns.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Text in every answer to a query stopped by its memory limit.
QUERY_LIMIT = "the query needs more memory than its limit"
SERVER_LIMIT = "the server's memory for queries is spent"


def memory_refusal_problem(shape: "Shape", message: str) -> str | None:
    """Why a 400's message is not what `shape` should get (None: it is)."""
    if shape.refused and shape.refused in message:
        return None
    if QUERY_LIMIT not in message:
        return f"{shape.name!r}: not the memory limit: {message}"
    # What was building when the limit was reached: the shape's own builder, or one of the
    # functions that make its rows (which one checks first depends on the timing).
    makers = tuple(f"{name}()" for name in ("range", "strcat", "strrep") if f"{name}(" in shape.kql)
    accepted = shape.says + makers
    if not any(what in message for what in accepted):
        return f"{shape.name!r}: names none of {accepted}: {message}"
    return None

ALPHABET = '"abcdefghijklmnopqrstuvwxyz"'


@dataclass
class Shape:
    name: str
    kql: str
    # Acceptable HTTP statuses.
    statuses: set[int] = field(default_factory=lambda: {400})
    # For a 400: one of these must be in the message (what was building).
    says: tuple[str, ...] = ()
    # For a 400 that is not the memory limit: the bound the query is refused by up front.
    refused: str = ""


def memory_shapes() -> list[Shape]:
    rows = lambda n: f"range x from 1 to {n} step 1"  # noqa: E731
    return [
        # Functions that build arrays.
        Shape(
            "range() rows",
            "range i from 1 to 100000 step 1 | mv-expand j = range(i, i + 100000) | count",
            {400, 504},
            ("range()", "mv-expand"),
        ),
        Shape("range() column", f"{rows(20000)} | extend a = range(x, x + 1000000) | summarize max(array_length(a))", says=("range()",)),
        Shape(
            "pack_array()",
            f"{rows(5000)} | extend a = range(x, x + 20000) | extend p = pack_array(a, a, a, a) "
            "| summarize max(array_length(p))",
            says=("pack_array()", "range()"),
        ),
        Shape(
            "bag_pack()",
            f"{rows(5000)} | extend a = range(x, x + 20000) | extend b = bag_pack('a', a, 'b', a, 'c', a) "
            "| summarize max(array_length(b.a))",
            says=("bag_pack()", "range()"),
        ),
        Shape(
            "parse_json()",
            f"{rows(5000)} | extend t = tostring(range(x, x + 50000)) | extend j = parse_json(t) "
            "| summarize max(array_length(j))",
            says=("parse_json()", "tostring()", "range()"),
        ),
        # One row whose string fits the budget, and whose pieces (a JSON array) do not.
        Shape(
            "split()",
            f"{rows(1)} | extend s = strrep(strrep(strrep(iff(x > 0, ',', ';'), 1000), 1000), 20) "
            '| extend p = split(s, ",") | summarize max(array_length(p))',
            says=("split()",),
        ),
        Shape(
            "extract_all()",
            f"{rows(1)} | extend s = strrep(strrep(strrep(iff(x > 0, 'a', 'b'), 1000), 1000), 12) "
            '| extend p = extract_all(@"(a)", s) | summarize max(array_length(p))',
            {400, 504},
            ("extract_all()",),
        ),
        Shape(
            "series_add()",
            f"{rows(5000)} | extend a = range(x, x + 100000) | extend b = series_add(a, a) "
            "| summarize max(array_length(b))",
            says=("series_add()", "range()"),
        ),
        # Functions that build strings.
        Shape(
            "strrep()",
            f'{rows(5000)} | extend s = strrep(strcat({ALPHABET}, x), 1000000) | summarize max(strlen(s))',
            says=("strrep()",),
        ),
        Shape(
            "strcat() doubling",
            f"{rows(2)} | extend s = strcat({ALPHABET}, x) " + "| extend s = strcat(s, s) " * 34 + "| project n = strlen(s)",
            says=("strcat()",),
        ),
        # Aggregates that build arrays and bags.
        # (strrep() repeats at most 1,024 times, as in ADX: nested, it builds long strings.)
        Shape(
            "make_list()",
            f"{rows(3_000_000)} | summarize l = make_list(strcat(strrep({ALPHABET}, 8), x)) by g = x % 4 "
            "| project array_length(l)",
            says=("make_list()", "summarize", "strcat()"),
        ),
        Shape(
            "make_set()",
            f"{rows(3_000_000)} | summarize l = make_set(strcat(strrep({ALPHABET}, 8), x)) by g = x % 4 "
            "| project array_length(l)",
            says=("make_set()", "summarize", "strcat()"),
        ),
        Shape(
            "make_bag()",
            f"{rows(3_000_000)} | summarize b = make_bag(bag_pack(strcat('k', x), strrep({ALPHABET}, 8))) by g = x % 4 "
            "| project n = array_length(bag_keys(b))",
            says=("make_bag()", "summarize", "bag_pack()"),
        ),
        # Operators whose output outgrows their input.
        Shape(
            "mv-expand of wide rows",
            f"{rows(200)} | extend pad = strrep(strcat({ALPHABET}, x), 4000), a = range(x, x + 20000) "
            "| mv-expand a | summarize make_list(pad) by a % 3",
            {400, 504},
            ("mv-expand", "make_list()", "summarize"),
        ),
        Shape(
            "mv-expand then make_list",
            f"{rows(3000)} | extend a = range(x, x + 3000, 1) | mv-expand a "
            f"| summarize make_list(strcat({ALPHABET}, a)) by x % 7",
            {400, 504},
            ("mv-expand", "make_list()", "summarize"),
        ),
        Shape(
            "mv-apply",
            f"{rows(3000)} | extend a = range(x, x + 100000) "
            f"| mv-apply a to typeof(long) on (extend b = strcat({ALPHABET}, a) | summarize l = make_list(b)) "
            "| summarize max(array_length(l))",
            {400, 504},
            ("mv-apply", "mv-expand", "make_list()", "range()", "summarize"),
        ),
        Shape(
            "make-series of many groups",
            "range x from 1 to 200000 step 1 | extend t = datetime(2000-01-01) + x * 1s "
            "| make-series c = count() default = 0 on t from datetime(2000-01-01) to datetime(2000-01-02) step 1s by x "
            "| summarize max(array_length(c))",
            says=("make-series",),
        ),
        # Joins and sorts.
        Shape(
            "join past the memory limit",
            f"{rows(3_000_000)} | extend s = strcat({ALPHABET}, x) "
            f"| join kind=inner ({rows(3_000_000)} | extend t = strcat({ALPHABET}, x)) on x "
            "| summarize max(strlen(s)), max(strlen(t))",
            {400, 504},
            ("join", "strcat()"),
        ),
        Shape(
            "cross join shape on one key",
            f"{rows(30000)} | extend k = 1, s = strcat(strrep({ALPHABET}, 4), x) "
            f"| join kind=inner ({rows(30000)} | extend k = 1) on k "
            "| summarize make_list(s) by x1 % 2",
            {400, 504},
            ("join", "make_list()", "summarize"),
        ),
        Shape(
            "sort of wide rows",
            f"{rows(4_000_000)} | extend s = strcat(strrep({ALPHABET}, 4), x) | sort by s asc "
            "| summarize make_list(s)",
            {400, 504},
            ("sort", "make_list()", "summarize", "strcat()"),
        ),
        Shape(
            "fork branches",
            f"{rows(3000)} | extend a = range(x, x + 3000) "
            f"| fork (mv-expand a | summarize make_list(strcat({ALPHABET}, a))) (summarize count())",
            {400, 504},
            ("mv-expand", "make_list()", "summarize", "fork"),
        ),
    ]


def result_shapes() -> list[Shape]:
    """Queries whose answer would be enormous: cut before it is built (200, truncated)."""
    return [
        Shape("10^10 rows of a cross join", "range x from 1 to 100000 step 1 | extend k = 1 "
              "| join kind=inner (range y from 1 to 100000 step 1 | extend k = 1) on k", {200}),
        # 10 GB of strings: cut at the result's size, or stopped while strrep() builds them.
        Shape(
            "wide rows",
            f"range x from 1 to 1000000 step 1 | extend s = strrep(strcat({ALPHABET}, x), 400)",
            {200, 400},
            ("strrep()",),
        ),
    ]
