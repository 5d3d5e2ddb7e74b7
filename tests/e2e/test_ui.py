"""The web UI in a real browser: Debian's Chromium, headless, driven by Playwright, against a
running `trawl serve` (the gateway serves the UI at `/`). Sign-in with a local account, the
editor's completion from the live schema and its error marks, a query's rows in the grid
as `/v1/rest/query` answers them, cancel, sign-out, and the session cookie's rules.
Screenshots go to $TRAWL_UI_ARTIFACTS (default: tests/e2e/artifacts/ui)."""

from __future__ import annotations

import csv
import io
import json
import re
import uuid
import time
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from browser_helpers import ARTIFACTS, browser, page  # noqa: F401 (fixtures)
from browser_helpers import sign_in as sign_in_as
from trawl_e2e import cli, http_request, post_otlp_json_logs

USER, PASSWORD = "ada", "a long enough password"
OBSERVER, OBSERVER_PASSWORD = "otto", "another long password"
ADMIN, ADMIN_PASSWORD = "ivy", "the admin's long password"
# When the module's data was sent (set by the fixture: the suite may collect this module long
# before it runs it, and queries look back from now).
NOW_NS = time.time_ns()


def sign_in(page: Page, server, name: str = USER, password: str = PASSWORD) -> None:
    sign_in_as(page, server, name, password)


@pytest.fixture(scope="module")
def served(trawl, trawl_bin):
    global NOW_NS
    NOW_NS = time.time_ns()
    accounts = ((USER, PASSWORD, "maintainer"), (OBSERVER, OBSERVER_PASSWORD, "observer"), (ADMIN, ADMIN_PASSWORD, "admin"))
    for name, password, role in accounts:
        code, _, err = cli(trawl, trawl_bin, "user", "create", name, "--role", role, stdin=password + "\n")
        assert code == 0, err
    records = [
        {
            "timeUnixNano": str(NOW_NS - (60 - i) * 1_000_000_000),
            "severityText": ["INFO", "WARN", "ERROR"][i % 3],
            "body": {"stringValue": f"checkout step {i} took {i * 7} ms"},
            "attributes": [{"key": "http.route", "value": {"stringValue": f"/api/{i % 4}"}}],
        }
        for i in range(60)
    ]
    status, body = post_otlp_json_logs(trawl, records, service="shop")
    assert status == 200, body
    trawl.wait_for_count("default", 60)
    return trawl


def set_query(page: Page, text: str) -> None:
    page.locator(".monaco-editor").click()
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.keyboard.insert_text(text)


def grid_rows(page: Page) -> list[list[str]]:
    rows = []
    for row in page.get_by_test_id("result-grid").locator("[role=row][aria-rowindex]").all():
        rows.append([cell.inner_text() for cell in row.locator("[role=gridcell]").all()])
    return rows


def v1_rows(server, kql: str) -> list[list]:
    body = json.dumps({"db": "default", "csl": kql}).encode()
    headers = {"Content-Type": "application/json", **server.query_auth}
    status, _, answer = http_request(server.gateway_url + "/v1/rest/query", body, headers, "POST", 60)
    assert status == 200, answer
    return json.loads(answer)["Tables"][0]["Rows"]


def test_a_wrong_password_is_refused_and_the_right_one_signs_in(served, page):
    page.goto(served.gateway_url + "/")
    page.get_by_label("Name").fill(USER)
    page.get_by_label("Password").fill("not the password")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_contain_text("the name or the password is wrong")
    page.screenshot(path=str(ARTIFACTS / "sign-in.png"))
    sign_in(page, served)
    expect(page.get_by_test_id("who")).to_contain_text("maintainer")


def test_a_query_shows_the_rows_the_api_answers(served, page):
    sign_in(page, served)
    kql = "default | summarize n = count() by severity_text | sort by severity_text asc"
    set_query(page, kql)
    page.get_by_test_id("time-range").select_option("all")
    page.get_by_test_id("run").click()
    expect(page.get_by_test_id("stats")).to_be_visible(timeout=30_000)
    expected = [[str(cell) for cell in row] for row in v1_rows(served, kql)]
    assert grid_rows(page) == expected
    expect(page.locator(".results [role=tab]")).to_have_count(1)
    page.screenshot(path=str(ARTIFACTS / "explore.png"))
    # Ctrl+Enter runs too; the address is a share link with the query.
    set_query(page, "default | take 7")
    page.keyboard.press("Control+Enter")
    expect(page.get_by_test_id("result-grid").locator("[role=row][aria-rowindex]")).to_have_count(7)
    assert "take+7" in page.url or "take%207" in page.url


def test_completion_offers_a_column_of_the_live_schema(served, page):
    sign_in(page, served)
    expect(page.get_by_test_id("schema")).to_contain_text("default")
    # The language service has the live schema.
    expect(page.get_by_test_id("editor")).to_have_attribute("data-schema", "default", timeout=30_000)
    set_query(page, "default\n| where severity")
    page.keyboard.press("Control+Space")
    suggestions = page.locator(".suggest-widget .monaco-list-row")
    expect(suggestions.first).to_be_visible(timeout=15_000)
    expect(page.locator(".suggest-widget")).to_contain_text("severity_text")
    page.screenshot(path=str(ARTIFACTS / "completion.png"))


def test_a_syntax_error_shows_where_the_engine_found_it(served, page):
    sign_in(page, served)
    set_query(page, "default\n| where severity_text ==")
    page.get_by_test_id("run").click()
    expect(page.get_by_test_id("error")).to_contain_text("expected")
    # The engine's mark is on line 2 of the editor.
    marker = page.locator(".monaco-editor .squiggly-error")
    expect(marker.first).to_be_visible()
    page.screenshot(path=str(ARTIFACTS / "syntax-error.png"))


@pytest.mark.parametrize(
    "kql, kind, series",
    [
        ("default | summarize count() by bin(timestamp, 10s), severity_text | render timechart", "timechart", 3),
        ("default | make-series n = count() default = 0 on timestamp from ago(1h) to now() step 1m by severity_text | render linechart",
         "linechart", 3),
        ("default | summarize count() by severity_text | render piechart with (title='By severity')", "piechart", 1),
        ("default | summarize c = count() by tostring(attributes['http.route']), severity_text "
         "| render columnchart with (kind=stacked)", "columnchart", 3),
        ("default | extend ms = toint(extract('took ([0-9]+)', 1, tostring(body))) "
         "| project timestamp, ms | render scatterchart", "scatterchart", 1),
    ],
)
def test_render_draws_its_chart(served, page, kql, kind, series):
    sign_in(page, served)
    page.get_by_test_id("time-range").select_option("all")
    set_query(page, kql)
    page.get_by_test_id("run").click()
    chart = page.get_by_test_id("chart")
    expect(chart).to_have_attribute("data-kind", kind, timeout=30_000)
    expect(chart.locator("canvas")).to_have_count(1)
    expect(chart).to_have_attribute("data-series", str(series))
    # The canvas is not blank: some pixels differ from the first one.
    blank = page.evaluate(
        """() => {
            const canvas = document.querySelector('[data-testid=chart] canvas');
            const data = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
            for (let i = 4; i < data.length; i += 4)
                if (data[i] !== data[0] || data[i + 1] !== data[1] || data[i + 2] !== data[2]) return false;
            return true;
        }"""
    )
    assert not blank, f"the {kind} is blank"
    page.screenshot(path=str(ARTIFACTS / f"chart-{kind}.png"))


def test_card_and_the_table_chart_switch(served, page):
    sign_in(page, served)
    page.get_by_test_id("time-range").select_option("all")
    set_query(page, "default | summarize total = count() | render card")
    page.get_by_test_id("run").click()
    expect(page.get_by_test_id("card")).to_contain_text("60")
    # Without render: a table first, a chart on request (over time when there is a datetime).
    set_query(page, "default | summarize count() by bin(timestamp, 10s)")
    page.get_by_test_id("run").click()
    expect(page.get_by_test_id("result-grid")).to_be_visible()
    page.get_by_test_id("show-chart").click()
    expect(page.get_by_test_id("chart")).to_have_attribute("data-kind", "timechart")


def running_queries(server) -> float:
    text = http_request(server.operator_url + "/metrics")[2].decode()
    for line in text.splitlines():
        if line.startswith("trawl_query_running "):
            return float(line.split()[1])
    return 0.0


def test_cancel_stops_the_query_on_the_server(served, page):
    sign_in(page, served)
    # Ten billion joined rows: it runs until cancelled.
    set_query(
        page,
        "range a from 1 to 100000 step 1 | extend k = 1 "
        "| join kind=inner (range b from 1 to 100000 step 1 | extend k = 1) on k | count",
    )
    page.get_by_test_id("run").click()
    expect(page.get_by_test_id("progress")).to_be_visible()
    deadline = time.monotonic() + 10
    while running_queries(served) < 1 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert running_queries(served) >= 1, "the query is not running on the server"
    page.get_by_test_id("cancel").click()
    expect(page.get_by_test_id("error")).to_contain_text("Cancelled")
    deadline = time.monotonic() + 15
    while running_queries(served) > 0 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert running_queries(served) == 0, "the server kept running the cancelled query"


def test_sign_out_ends_the_session(served, page):
    sign_in(page, served, OBSERVER, OBSERVER_PASSWORD)
    cookies = page.context.cookies()
    session = next(c for c in cookies if c["name"] == "trawl_session")
    assert session["httpOnly"] and session["sameSite"] == "Lax"
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()
    # The old cookie no longer works, even replayed.
    status, _, _ = http_request(
        served.gateway_url + "/api/ui/session", headers={"Cookie": f"trawl_session={session['value']}"}
    )
    assert status == 401


def test_the_session_cookie_needs_the_anti_forgery_header(served, page):
    sign_in(page, served)
    cookie = next(c for c in page.context.cookies() if c["name"] == "trawl_session")["value"]
    body = json.dumps({"db": "default", "csl": "default | count"}).encode()
    headers = {"Content-Type": "application/json", "Cookie": f"trawl_session={cookie}"}
    status, _, _ = http_request(served.gateway_url + "/v1/rest/query", body, headers, "POST", 30)
    assert status == 401, "a request with only the cookie (a forged one) was accepted"
    status, _, answer = http_request(
        served.gateway_url + "/v1/rest/query", body, {**headers, "x-trawl-csrf": "1"}, "POST", 30
    )
    assert status == 200, answer
    # Sign-in without the header is refused too (a forged sign-in).
    status, _, _ = http_request(
        served.gateway_url + "/api/ui/sign-in",
        json.dumps({"name": USER, "password": PASSWORD}).encode(),
        {"Content-Type": "application/json"},
        "POST",
    )
    assert status == 403


def test_tabs_history_and_share_links(served, page):
    sign_in(page, served)
    set_query(page, "default | take 3")
    page.get_by_test_id("run").click()
    expect(page.get_by_test_id("result-grid").locator("[role=row][aria-rowindex]")).to_have_count(3)
    shared = page.url
    # A second tab with its own query; the first keeps its own.
    page.get_by_test_id("new-tab").click()
    expect(page.get_by_test_id("query-tab")).to_have_count(2)
    editor = page.locator(".main:not([hidden]) .monaco-editor")
    expect(editor).to_be_visible(timeout=30_000)
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.keyboard.insert_text("default | take 5")
    page.keyboard.press("Control+Enter")
    visible_rows = page.locator(".main:not([hidden]) [data-testid=result-grid] [role=row][aria-rowindex]")
    expect(visible_rows).to_have_count(5)
    page.get_by_test_id("query-tab").first.click()
    expect(visible_rows).to_have_count(3)
    # History holds both queries, newest first; picking one puts it back in the editor.
    history = page.locator(".main:not([hidden]) [data-testid=history]")
    options = history.locator("option")
    expect(options).to_have_count(3)
    assert "take 5" in options.nth(1).inner_text()
    history.select_option(index=1)
    expect(page.locator(".main:not([hidden]) .view-lines")).to_contain_text("take 5")
    page.screenshot(path=str(ARTIFACTS / "tabs-history.png"))
    # The share link opens the query in a tab of another browser session of the same user.
    other = page.context.browser.new_context(viewport={"width": 1400, "height": 900})
    try:
        second = other.new_page()
        second.goto(shared)
        second.get_by_label("Name").fill(USER)
        second.get_by_label("Password").fill(PASSWORD)
        second.get_by_role("button", name="Sign in").click()
        expect(second.locator(".main:not([hidden]) .view-lines")).to_contain_text("take 3", timeout=30_000)
    finally:
        other.close()


def test_log_results_show_their_volume_and_a_drag_zooms(served, page):
    sign_in(page, served)
    page.get_by_test_id("time-range").select_option("all")
    set_query(page, "default | where body has 'checkout' | take 10")
    page.get_by_test_id("run").click()
    volume = page.get_by_test_id("volume")
    expect(volume).to_have_attribute("data-bins", re.compile(r"^[1-9]"), timeout=30_000)
    expect(volume.locator("canvas")).to_have_count(1)
    page.screenshot(path=str(ARTIFACTS / "volume.png"))
    # Drag across the middle of the histogram: the range becomes absolute and the query runs.
    box = volume.bounding_box()
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + box["width"] * 0.3, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.6, y, steps=8)
    page.mouse.up()
    expect(page.get_by_test_id("time-range")).to_have_value("absolute")
    expect(page.get_by_label("From")).not_to_have_value("")
    expect(page.get_by_test_id("stats")).to_be_visible()


def test_context_shows_the_lines_around_a_log_row(served, page):
    sign_in(page, served)
    page.get_by_test_id("time-range").select_option("all")
    set_query(page, "default | where body has 'checkout' | sort by timestamp asc | take 40")
    page.get_by_test_id("run").click()
    row = page.get_by_test_id("result-grid").locator('[role=row][aria-rowindex="22"]')
    expect(row).to_contain_text("checkout step 20 ")
    row.locator("[role=gridcell]").first.click()
    page.get_by_test_id("show-context").click()
    lines = page.get_by_test_id("context-line")
    expect(lines).to_have_count(21, timeout=30_000)
    texts = lines.all_inner_texts()
    assert "checkout step 10 " in texts[0] and "checkout step 30 " in texts[-1], texts
    expect(page.locator(".context li.this-line")).to_contain_text("checkout step 20 ")
    page.screenshot(path=str(ARTIFACTS / "context.png"))


TRACE = "5b8efff798038103d269b633813fc60c"


def post_trace(server) -> None:
    start = NOW_NS - 30_000_000_000
    ms = 1_000_000

    def span(span_id, parent, name, service, begin, end, error=False):
        body = {
            "traceId": TRACE, "spanId": span_id, "name": name, "kind": 2,
            "startTimeUnixNano": str(start + begin * ms), "endTimeUnixNano": str(start + end * ms),
            "attributes": [{"key": "step", "value": {"stringValue": name}}],
        }  # fmt: skip
        if parent:
            body["parentSpanId"] = parent
        if error:
            body["status"] = {"code": 2, "message": "card declined"}
        return {
            "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": service}}]},
            "scopeSpans": [{"spans": [body]}],
        }

    # Posted out of order: the view puts children under their parents.
    payload = {"resourceSpans": [
        span("cccccccccccccccc", "bbbbbbbbbbbbbbbb", "db query", "payments", 40, 90),
        span("aaaaaaaaaaaaaaaa", None, "GET /checkout", "web", 0, 200),
        span("bbbbbbbbbbbbbbbb", "aaaaaaaaaaaaaaaa", "charge card", "payments", 20, 150, error=True),
    ]}  # fmt: skip
    status, _, answer = http_request(
        server.otlp_http_url + "/v1/traces", json.dumps(payload).encode(),
        {"Content-Type": "application/json", **server.ingest_auth}, "POST",
    )  # fmt: skip
    assert status == 200, answer
    logs = [{
        "timeUnixNano": str(start + 60 * ms), "severityText": "ERROR", "traceId": TRACE,
        "spanId": "bbbbbbbbbbbbbbbb", "body": {"stringValue": "payment provider said no"},
    }]  # fmt: skip
    assert post_otlp_json_logs(server, logs, service="payments")[0] == 200


def test_the_trace_view_shows_the_spans_in_order_with_their_logs(served, page):
    post_trace(served)
    served.wait_for_count(f"default | where trace_id == '{TRACE}'", 4)
    sign_in(page, served)
    page.get_by_test_id("time-range").select_option("all")
    set_query(page, f"default | where trace_id == '{TRACE}' | project timestamp, trace_id, span_name")
    page.get_by_test_id("run").click()
    page.get_by_test_id("result-grid").locator("[role=gridcell]").nth(1).click()
    page.get_by_test_id("open-trace").click()
    spans = page.get_by_test_id("span")
    expect(spans).to_have_count(3, timeout=30_000)
    assert [s.get_attribute("data-span-name") for s in spans.all()] == ["GET /checkout", "charge card", "db query"]
    failed = spans.nth(1).locator(".span-row")
    expect(failed).to_have_class(re.compile("failed"))
    expect(spans.nth(1).get_by_test_id("span-log")).to_contain_text("payment provider said no")
    failed.click()
    detail = page.get_by_test_id("span-detail")
    expect(detail).to_contain_text("card declined")
    expect(detail).to_contain_text('"step": "charge card"')
    page.screenshot(path=str(ARTIFACTS / "trace.png"))


def bearer_of(server, name: str, password: str) -> dict[str, str]:
    body = json.dumps({"name": name, "password": password}).encode()
    status, _, answer = http_request(server.gateway_url + "/api/sign-in", body, {"Content-Type": "application/json"}, "POST")
    assert status == 200, answer
    return {"Authorization": f"Bearer {json.loads(answer)['token']}"}


def test_export_downloads_the_rows_the_api_answers(served, page):
    sign_in(page, served)
    kql = "default | summarize n = count(), last = max(timestamp) by severity_text | sort by severity_text asc"
    set_query(page, kql)
    page.get_by_test_id("time-range").select_option("all")
    page.get_by_test_id("run").click()
    expect(page.get_by_test_id("export-csv")).to_be_visible(timeout=30_000)
    with page.expect_download() as download:
        page.get_by_test_id("export-csv").click()
    text = Path(download.value.path()).read_text()
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == ["severity_text", "n", "last"]
    expected = [[str(cell) for cell in row] for row in v1_rows(served, kql)]
    assert rows[1:] == expected
    with page.expect_download() as download:
        page.get_by_test_id("export-json").click()
    objects = json.loads(Path(download.value.path()).read_text())
    assert [[o["severity_text"], o["n"], o["last"]] for o in objects] == v1_rows(served, kql)
    # The run is its user's: a bearer token of the same user reads it, another user's does
    # not find it, and no credentials at all is 401.
    href = page.get_by_test_id("export-csv").get_attribute("href")
    url = served.gateway_url + href
    status, headers, answer = http_request(url, None, bearer_of(served, USER, PASSWORD), "GET")
    assert status == 200 and answer.decode() == text
    assert "attachment" in headers.get("content-disposition", headers.get("Content-Disposition", ""))
    status, _, answer = http_request(url, None, bearer_of(served, OBSERVER, OBSERVER_PASSWORD), "GET")
    assert status == 404, answer
    status, _, _ = http_request(url, None, {}, "GET")
    assert status == 401


def test_an_observer_cannot_open_the_admin_page(served, page):
    sign_in(page, served, OBSERVER, OBSERVER_PASSWORD)
    expect(page.get_by_test_id("open-admin")).to_have_count(0)
    response = page.goto(served.gateway_url + "/admin")
    assert response is not None and response.status == 403
    expect(page.get_by_test_id("forbidden")).to_be_visible(timeout=30_000)
    page.screenshot(path=str(ARTIFACTS / "admin-forbidden.png"))
    # The meta service refuses the page's calls as well (gRPC-web: 403).
    status = page.evaluate(
        """async () => {
            const response = await fetch('/trawl.meta.v1.MetaService/ListPrincipals', {
                method: 'POST', credentials: 'same-origin',
                headers: {'content-type': 'application/grpc-web+proto', 'x-grpc-web': '1', 'x-trawl-csrf': '1'},
                body: new Uint8Array([0, 0, 0, 0, 0]),
            });
            return response.status;
        }"""
    )
    assert status == 403


def test_the_admin_page_makes_accounts_and_shows_new_tokens_once(served, page):
    sign_in(page, served, ADMIN, ADMIN_PASSWORD)
    page.get_by_test_id("open-admin").click()
    accounts = page.get_by_test_id("accounts")
    expect(accounts).to_contain_text(USER, timeout=30_000)
    robot = f"robot-{uuid.uuid4().hex[:6]}"
    form = page.get_by_role("form", name="New account")
    form.get_by_label("Name").fill(robot)
    form.get_by_label("Kind").select_option("service_account")
    form.get_by_label("Role").select_option("observer")
    form.get_by_role("button", name="Create").click()
    row = accounts.get_by_test_id("account").filter(has_text=robot)
    expect(row).to_contain_text("service account")
    row.get_by_role("button", name="Tokens").click()
    page.get_by_test_id("create-access-token").click()
    token = page.get_by_test_id("new-token").inner_text(timeout=15_000)
    page.screenshot(path=str(ARTIFACTS / "admin.png"))
    # The token works, with the role it was given.
    body = json.dumps({"db": "default", "csl": "default | count"}).encode()
    status, _, answer = http_request(
        served.gateway_url + "/v1/rest/query", body,
        {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}, "POST",
    )
    assert status == 200, answer
    # An ingest token made here routes data to its table.
    ingest = page.get_by_test_id("ingest-tokens")
    form = page.get_by_role("form", name="New ingest token")
    form.get_by_label("Token name").fill(f"ui-{robot}")
    form.get_by_label("Table").fill("from_admin_page")
    ingest.get_by_test_id("create-ingest-token").click()
    ingest_token = ingest.get_by_test_id("new-token").inner_text(timeout=15_000)
    assert ingest_token.startswith("trawl_it_")
    record = {"timeUnixNano": str(time.time_ns()), "body": {"stringValue": "from the admin page"}}
    status, _, answer = http_request(
        served.otlp_http_url + "/v1/logs",
        json.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": [record]}]}]}).encode(),
        {"Content-Type": "application/json", "Authorization": f"Bearer {ingest_token}"},
        "POST",
    )
    assert status == 200, answer
    assert served.wait_for_count("from_admin_page", 1) == 1
    # Changing a role shows at once.
    row.get_by_label(f"Role of {robot}").select_option("maintainer")
    expect(row.get_by_label(f"Role of {robot}")).to_have_value("maintainer")


def test_a_saved_query_reopens_from_the_library(served, page):
    sign_in(page, served)
    name = f"errors by route {uuid.uuid4().hex[:4]}"
    kql = "default | where severity_text == 'ERROR' | summarize n = count() by tostring(attributes['http.route'])"
    set_query(page, kql)
    page.get_by_test_id("time-range").select_option("all")
    page.get_by_test_id("save-query").click()
    page.get_by_test_id("save-name").fill(name)
    page.get_by_test_id("save-folder").fill("checkout / errors")
    page.screenshot(path=str(ARTIFACTS / "save-query.png"))
    page.get_by_test_id("save-confirm").click()
    expect(page.get_by_role("status")).to_contain_text("checkout/errors")
    # Another user finds it in the library and opens it in a new tab.
    page.context.clear_cookies()
    sign_in(page, served, OBSERVER, OBSERVER_PASSWORD)
    tabs_before = page.get_by_test_id("query-tab").count()
    page.get_by_test_id("open-library").click()
    library = page.get_by_test_id("library")
    library.get_by_label("Search the library").fill("route checkout")
    expect(library.get_by_test_id("saved-query")).to_have_count(1)
    expect(library).to_contain_text("checkout/errors")
    page.screenshot(path=str(ARTIFACTS / "library.png"))
    library.get_by_role("button", name=name).click()
    expect(page.get_by_test_id("query-tab")).to_have_count(tabs_before + 1)
    main = page.locator(".main:not([hidden])")
    main.get_by_test_id("run").click()
    grid = main.get_by_test_id("result-grid")
    expect(grid.locator("[role=row][aria-rowindex]")).to_have_count(len(v1_rows(served, kql)), timeout=30_000)
    # The saved range came along (all time).
    expect(main.get_by_test_id("time-range")).to_have_value("all")


def test_an_empty_database_shows_how_to_send_data(served, trawl_bin, page):
    database = f"fresh{uuid.uuid4().hex[:6]}"
    code, _, err = cli(served, trawl_bin, "database", "create", database)
    assert code == 0, err
    sign_in(page, served)
    page.goto(served.gateway_url + f"/?q={database}&db={database}&range=all")
    main = page.locator(".main:not([hidden])")
    onboarding = main.get_by_test_id("onboarding")
    expect(onboarding).to_be_visible(timeout=30_000)
    expect(onboarding).to_contain_text(":4317")
    onboarding.get_by_test_id("onboarding-create-token").click()
    token = onboarding.get_by_test_id("onboarding-token").locator("code").inner_text(timeout=15_000)
    assert token.startswith("trawl_it_")
    # The snippets carry the new token.
    expect(onboarding.locator("pre").first).to_contain_text(token)
    page.screenshot(path=str(ARTIFACTS / "onboarding.png"))
    record = {"timeUnixNano": str(time.time_ns()), "body": {"stringValue": "first data"}}
    status, _, answer = http_request(
        served.otlp_http_url + "/v1/logs",
        json.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": [record]}]}]}).encode(),
        {"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
        "POST",
    )
    assert status == 200, answer
    onboarding.get_by_role("button", name="look again").click()
    expect(main.get_by_test_id("schema")).to_contain_text("logs", timeout=30_000)
    expect(main.get_by_test_id("onboarding")).to_have_count(0)
