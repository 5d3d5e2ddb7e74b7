"""The Azure Data Explorer REST faces (`/v2/rest/query`, `/v1/rest/query`, `/v1/rest/mgmt`)
driven by the real `azure-kusto-data` client, as a user would point it at Trawl: a
connection string with a token provider, the database as the URL's one path segment."""

from __future__ import annotations

import datetime
import json
import os
import subprocess
from urllib.parse import urljoin

import pytest
from azure.kusto.data import KustoClient, KustoConnectionStringBuilder
from azure.kusto.data.exceptions import KustoApiError

from trawl_e2e import http_request, post_otlp_json_logs

MARKER = "adx-client-e2e"


@pytest.fixture(scope="module")
def loaded(trawl):
    """Three log records of one service, one with an error, in table `default`."""
    records = [
        {
            "timeUnixNano": str(1_700_000_000_000_000_000 + i * 1_000_000_000),
            "severityText": "ERROR" if i == 2 else "INFO",
            "body": {"stringValue": f"{MARKER} {i}"},
            "attributes": [{"key": "n", "value": {"intValue": str(i)}}],
        }
        for i in range(3)
    ]
    status, answer = post_otlp_json_logs(trawl, records, service="checkout")
    assert status == 200, answer
    trawl.wait_for_count(f'default | where body has "{MARKER}"', 3)
    return trawl


def client(server, database: str = "default") -> KustoClient:
    # Through the gateway, signed in with the bootstrap admin token.
    kcsb = KustoConnectionStringBuilder.with_token_provider(f"{server.gateway_url}/{database}", lambda: server.admin_token)
    return KustoClient(kcsb)


QUERY = f'default | where body has "{MARKER}" | project timestamp, severity_text, body, attributes, d = 90s | order by timestamp asc'


def test_v2_query_converts_types(loaded):
    response = client(loaded).execute_query("default", QUERY)
    table = response.primary_results[0]
    assert [c.column_name for c in table.columns] == ["timestamp", "severity_text", "body", "attributes", "d"]
    assert [c.column_type for c in table.columns] == ["datetime", "string", "dynamic", "dynamic", "timespan"]
    rows = list(table)
    assert len(rows) == 3
    assert rows[0]["timestamp"] == datetime.datetime(2023, 11, 14, 22, 13, 20, tzinfo=datetime.timezone.utc)
    assert rows[2]["severity_text"] == "ERROR"
    assert rows[1]["body"] == f"{MARKER} 1"
    assert rows[1]["attributes"] == {"n": 1}
    assert rows[0]["d"] == datetime.timedelta(seconds=90)


def test_v2_summarize_and_render(loaded):
    response = client(loaded).execute_query(
        "default",
        f'default | where body has "{MARKER}" | summarize n = count() by severity_text | order by severity_text asc '
        "| render columnchart",
    )
    rows = [list(r) for r in response.primary_results[0]]
    assert rows == [["ERROR", 1], ["INFO", 2]]
    kinds = [t.table_kind.value for t in response.tables]
    assert kinds[0] == "QueryProperties" and kinds[-1] == "QueryCompletionInformation"
    properties = list(response.tables[0])
    assert properties[0]["Key"] == "Visualization"
    assert json.loads(properties[0]["Value"])["Visualization"] == "columnchart"
    assert response.errors_count == 0


def test_v2_streaming_query(loaded):
    response = client(loaded).execute_streaming_query("default", QUERY)
    rows = [list(r) for r in response.iter_primary_results().__next__()]
    assert len(rows) == 3


def test_v1_query(loaded):
    kusto = client(loaded)
    kusto._query_endpoint = urljoin(kusto._kusto_cluster, "v1/rest/query")
    response = kusto.execute_query("default", QUERY)
    table = response.primary_results[0]
    assert table.table_name == "PrimaryResult"
    rows = list(table)
    assert len(rows) == 3
    assert rows[0]["timestamp"] == datetime.datetime(2023, 11, 14, 22, 13, 20, tzinfo=datetime.timezone.utc)
    # v1 prints dynamic values as their JSON text, as ADX does.
    assert json.loads(rows[1]["attributes"]) == {"n": 1}


def test_mgmt_show_commands(loaded):
    kusto = client(loaded)
    tables = kusto.execute_mgmt("default", ".show tables").primary_results[0]
    assert [c.column_name for c in tables.columns] == ["TableName", "DatabaseName", "Folder", "DocString"]
    assert ["default", "default"] in [[r["TableName"], r["DatabaseName"]] for r in tables]
    databases = kusto.execute(None, ".show databases").primary_results[0]
    assert "default" in [r["DatabaseName"] for r in databases]
    schema = kusto.execute_mgmt("default", ".show table default schema as json").primary_results[0]
    columns = {c["Name"]: c["CslType"] for c in json.loads(list(schema)[0]["Schema"])["OrderedColumns"]}
    assert columns["timestamp"] == "datetime" and columns["attributes"] == "dynamic"
    assert not any(name.startswith("__trawl") for name in columns), "hidden columns must not show"


def test_mgmt_schema_functions_and_queries(loaded):
    kusto = client(loaded)
    document = json.loads(list(kusto.execute_mgmt("default", ".show schema as json").primary_results[0])[0]["DatabaseSchema"])
    assert "timestamp" in json.dumps(document["Databases"]["default"]["Tables"]["default"])
    functions = kusto.execute_mgmt("default", ".show functions").primary_results[0]
    assert [c.column_name for c in functions.columns] == ["Name", "Parameters", "Body", "Folder", "DocString"]
    assert len(list(functions)) == 0, "no stored functions exist"
    marker = f'default | where body has "{MARKER}" | count | extend tag = "show-queries"'
    assert list(kusto.execute("default", marker).primary_results[0])[0]["Count"] == 3
    failing = 'print tag = "show-queries-failing", x = 1 / 0'
    with pytest.raises(KustoApiError):
        kusto.execute("default", failing)
    queries = kusto.execute_mgmt("default", ".show queries").primary_results[0]
    names = [c.column_name for c in queries.columns]
    assert names[:7] == ["ClientActivityId", "Text", "Database", "StartedOn", "LastUpdatedOn", "Duration", "State"]
    rows = {r["Text"]: r for r in queries}
    assert rows[marker]["State"] == "Completed" and rows[marker]["Database"] == "default"
    assert rows[failing]["State"] == "Failed" and "zero" in rows[failing]["FailureReason"]
    assert rows[marker]["StartedOn"] <= rows[marker]["LastUpdatedOn"]


def test_geospatial_functions_and_lookup(loaded):
    """Locations joined to the polygon that holds them (`geo_polygon_lookup`), with distances,
    cells and areas, through the real client."""
    query = """
let areas = datatable(area:string, shape:dynamic) [
    "midtown", dynamic({"type":"Polygon","coordinates":[[[-73.97375470114766,40.74300078124614],[-73.98653921014294,40.75486501361894],[-73.99910622331991,40.74112695466084],[-73.97375470114766,40.74300078124614]]]}),
];
datatable(place:string, lng:real, lat:real) [
    "empire state", -73.98567337898565, 40.74842629977377,
    "liberty", -74.04462223203123, 40.689195627512674,
]
| evaluate geo_polygon_lookup(areas, shape, lng, lat, return_unmatched = true)
| extend km_to_liberty = geo_distance_2points(lng, lat, -74.04462223203123, 40.689195627512674) / 1000,
         h3 = geo_point_to_h3cell(lng, lat, 6),
         hash = geo_point_to_geohash(lng, lat, 6)
| order by place asc"""
    table = client(loaded).execute("default", query).primary_results[0]
    assert [c.column_name for c in table.columns] == ["place", "lng", "lat", "area", "km_to_liberty", "h3", "hash"]
    rows = list(table)
    assert [r["place"] for r in rows] == ["empire state", "liberty"]
    assert rows[0]["area"] == "midtown" and rows[1]["area"] == "", "unmatched locations are kept"
    assert 8.0 < rows[0]["km_to_liberty"] < 9.0 and rows[1]["km_to_liberty"] == 0.0
    assert rows[1]["h3"] == "862a1072fffffff" and rows[0]["hash"] == "dr5ru6"
    area = list(client(loaded).execute("default", "print a = geo_polygon_area(geo_geohash_to_polygon('dr5ru'))").primary_results[0])
    assert 17_000_000 < area[0]["a"] < 19_000_000
    invalid = list(client(loaded).execute("default", "print p = geo_point_in_polygon(200, 1, dynamic({})), c = geo_point_to_s2cell(300, 1)").primary_results[0])
    assert invalid[0]["p"] is None and invalid[0]["c"] == ""


def test_query_parameters_from_client_request_properties(loaded):
    from azure.kusto.data import ClientRequestProperties

    kusto = client(loaded)
    properties = ClientRequestProperties()
    properties.set_parameter("marker", MARKER)
    properties.set_parameter("level", "ERROR")
    query = (
        "declare query_parameters(marker:string, level:string, limit:long = 10); "
        "default | where body has marker and severity_text == level | take limit | count"
    )
    rows = list(kusto.execute("default", query, properties).primary_results[0])
    assert rows[0]["Count"] == 1
    with pytest.raises(KustoApiError):
        kusto.execute("default", "declare query_parameters(missing:long); print missing")


def test_cli_sends_management_commands(loaded, trawl_bin):
    env = {k: v for k, v in os.environ.items() if k not in ("TRAWL_TOKEN", "TRAWL_URL", "TRAWL_DATA_DIR")}
    done = subprocess.run(
        [str(trawl_bin), "query", ".show tables", "--url", loaded.gateway_url, "--data-dir", str(loaded.data_dir), "--format", "csv"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "TableName,DatabaseName,Folder,DocString", lines
    assert "default,default,," in lines, lines


def test_errors_are_kusto_api_errors(loaded):
    kusto = client(loaded)
    with pytest.raises(KustoApiError) as error:
        kusto.execute_query("default", "default | where nosuchcolumn == 1")
    assert "Semantic error" in str(error.value)
    with pytest.raises(KustoApiError) as error:
        kusto.execute_query("default", "default | where (")
    assert "Syntax error" in str(error.value)
    with pytest.raises(KustoApiError) as error:
        kusto.execute_mgmt("default", ".alter table default policy caching hot = 1d")
    assert "not supported" in str(error.value)
    with pytest.raises(KustoApiError) as error:
        kusto.execute_mgmt("default", ".drop table no_such_table")
    assert "does not exist" in str(error.value)


def progressive(server, csl: str) -> tuple[dict, list[dict]]:
    """POST /v2/rest/query in progressive mode; (headers, frames)."""
    body = {
        "db": "default",
        "csl": csl,
        "properties": json.dumps({"Options": {"results_progressive_enabled": True}}),
    }
    status, headers, answer = http_request(
        server.gateway_url + "/v2/rest/query",
        json.dumps(body).encode(),
        {"Content-Type": "application/json", **server.query_auth},
        "POST",
    )
    assert status == 200, answer
    return headers, json.loads(answer)


def test_v2_progressive_frames_stream_in_order(loaded):
    headers, frames = progressive(loaded, QUERY)
    assert headers.get("transfer-encoding") == "chunked"
    kinds = [f["FrameType"] for f in frames if f["FrameType"] != "TableProgress"]
    assert kinds == [
        "DataSetHeader",
        "DataTable",
        "TableHeader",
        "TableFragment",
        "TableCompletion",
        "DataTable",
        "DataSetCompletion",
    ]
    header = frames[0]
    assert header["IsProgressive"] is True and header["IsFragmented"] is True and header["Version"] == "v2.0"
    assert frames[1]["TableKind"] == "QueryProperties"
    table_header = next(f for f in frames if f["FrameType"] == "TableHeader")
    assert table_header["TableName"] == "PrimaryResult"
    assert [c["ColumnName"] for c in table_header["Columns"]][:2] == ["timestamp", "severity_text"]
    fragment = next(f for f in frames if f["FrameType"] == "TableFragment")
    assert fragment["TableFragmentType"] == "DataReplace" and fragment["TableId"] == table_header["TableId"]
    assert len(fragment["Rows"]) == 3
    completion = next(f for f in frames if f["FrameType"] == "TableCompletion")
    assert completion["RowCount"] == 3
    for progress in (f for f in frames if f["FrameType"] == "TableProgress"):
        assert 0 <= progress["TableProgress"] <= 100
    assert frames[-2]["TableKind"] == "QueryCompletionInformation"
    assert frames[-1] == {"FrameType": "DataSetCompletion", "HasErrors": False, "Cancelled": False}


def test_v2_progressive_newest_rows_come_as_refined_fragments(loaded):
    # Rows 2 s apart: the newest time slice holds one row, so a replacing fragment with it comes
    # before the final one with all three.
    _, frames = progressive(loaded, f'default | where body has "{MARKER}" | top 3 by timestamp desc | project body')
    fragments = [f for f in frames if f["FrameType"] == "TableFragment"]
    assert all(f["TableFragmentType"] == "DataReplace" for f in fragments)
    assert len(fragments) >= 2, fragments
    assert fragments[0]["Rows"] == [[f"{MARKER} 2"]]
    assert fragments[-1]["Rows"] == [[f"{MARKER} {i}"] for i in (2, 1, 0)]
    completion = next(f for f in frames if f["FrameType"] == "TableCompletion")
    assert completion["RowCount"] == 3


def progressive_failure(server, csl: str) -> tuple[int, dict]:
    """A progressive query expected to fail before any row went out: (status, error body)."""
    body = {"db": "default", "csl": csl, "properties": {"Options": {"results_progressive_enabled": True}}}
    status, _, answer = http_request(
        server.gateway_url + "/v2/rest/query",
        json.dumps(body).encode(),
        {"Content-Type": "application/json", **server.query_auth},
        "POST",
    )
    return status, json.loads(answer)


def test_v2_progressive_errors_before_rows_are_an_error_status(loaded):
    # Planning fails: an error status, as in non-progressive mode.
    status, answer = progressive_failure(loaded, "nope | take 1")
    assert status == 400, answer
    assert answer["error"]["code"] == "General_BadRequest"
    assert answer["error"]["@type"] == "Kusto.Data.Exceptions.SemanticException"
    # Running fails before the first row fragment: an error status too, never frames.
    status, answer = progressive_failure(
        loaded, f'default | where body has "{MARKER}" | extend x = 1 / (toint(attributes.n) - toint(attributes.n))'
    )
    assert status == 400, answer
    error = answer["error"]
    assert error["code"] == "General_BadRequest" and "divides" in error["message"]
    assert error["@type"] == "Kusto.Data.Exceptions.KustoBadRequestException"


def test_v2_progressive_failure_after_rows_ends_the_stream_with_the_error(loaded):
    # The newest time slice (the row with n = 2) goes out as a refined fragment; an older slice
    # divides by zero (n = 0): the 200 has gone, so the stream ends with the error.
    _, frames = progressive(
        loaded,
        f'default | where body has "{MARKER}" | extend x = 10 / toint(attributes.n) | top 3 by timestamp desc '
        "| project body, x",
    )
    kinds = [f["FrameType"] for f in frames if f["FrameType"] != "TableProgress"]
    assert kinds[-4:] == ["TableFragment", "TableCompletion", "DataTable", "DataSetCompletion"], kinds
    fragments = [f for f in frames if f["FrameType"] == "TableFragment"]
    assert fragments[0]["Rows"] == [[f"{MARKER} 2", 5]]
    completion = next(f for f in frames if f["FrameType"] == "TableCompletion")
    # Each DataReplace fragment replaces the earlier ones: the count is the last one's rows.
    assert completion["RowCount"] == len(fragments[-1]["Rows"])
    assert "divides" in completion["OneApiErrors"][0]["error"]["message"]
    status_rows = frames[-2]["Rows"]
    assert frames[-2]["TableKind"] == "QueryCompletionInformation"
    assert status_rows[0][6] == "Error" and "divides" in status_rows[0][-1]
    last = frames[-1]
    assert last["FrameType"] == "DataSetCompletion" and last["HasErrors"] is True and last["Cancelled"] is False
    assert "divides" in last["OneApiErrors"][0]["error"]["message"]
