"""The vendor-compatible intake (port 9552, off by default) driven by the vendor's own API
client, `datadog-api-client`: key validation and logs, checked field by field with KQL."""

from __future__ import annotations

import uuid

import pytest
from datadog_api_client import ApiClient, Configuration
from datadog_api_client.exceptions import ForbiddenException
from datadog_api_client.v1.api.authentication_api import AuthenticationApi
from datadog_api_client.v2.api.logs_api import LogsApi
from datadog_api_client.v2.model.content_encoding import ContentEncoding
from datadog_api_client.v2.model.http_log import HTTPLog
from datadog_api_client.v2.model.http_log_item import HTTPLogItem

from trawl_e2e import free_ports, http_request


@pytest.fixture(scope="module")
def vendor(trawl_bin, tmp_path_factory):
    from trawl_e2e import TrawlServer, stop_all

    (port,) = free_ports(1)
    server = TrawlServer(
        trawl_bin,
        tmp_path_factory.mktemp("vendor"),
        name="vendor",
        extra_args=["--vendor-intake", "true", "--vendor-bind", f"127.0.0.1:{port}"],
    )
    server.start()
    server.vendor_url = f"http://127.0.0.1:{port}"
    yield server
    stop_all([server])


def client(server, key: str) -> ApiClient:
    configuration = Configuration(host=server.vendor_url)
    configuration.api_key["apiKeyAuth"] = key
    return ApiClient(configuration)


def test_validate_accepts_the_ingest_token_and_refuses_others(vendor):
    with client(vendor, vendor.ingest_token) as api:
        assert AuthenticationApi(api).validate().to_dict() == {"valid": True}
    with client(vendor, "not-a-key") as api:
        with pytest.raises(ForbiddenException):
            AuthenticationApi(api).validate()


@pytest.mark.parametrize("encoding", [ContentEncoding.GZIP, ContentEncoding.DEFLATE])
def test_logs_from_the_vendor_client_are_stored_field_by_field(vendor, encoding):
    marker = f"dd-{uuid.uuid4().hex[:8]}"
    item = HTTPLogItem(
        ddsource="python",
        ddtags="env:e2e,version:2.1,team:a,team:b",
        hostname="web-1",
        message=f"{marker} checkout failed",
        service="checkout",
        status="error",
    )
    with client(vendor, vendor.ingest_token) as api:
        answer = LogsApi(api).submit_log(body=HTTPLog([item]), content_encoding=encoding)
    assert answer == {}
    kql = f'default | where body == "{marker} checkout failed"'
    assert vendor.wait_for_count(kql, 1) == 1
    (row,) = vendor.query_dicts(f"{kql} | project severity_text, severity_number, resource, attributes")
    assert row["severity_text"] == "error" and row["severity_number"] == 17
    assert row["resource"] == {
        "host.name": "web-1",
        "service.name": "checkout",
        "deployment.environment.name": "e2e",
        "service.version": "2.1",
    }
    assert row["attributes"] == {"env": "e2e", "version": "2.1", "team": ["a", "b"], "vxsource": "python"}


def test_routes_the_intake_does_not_serve(vendor):
    headers = {"DD-API-KEY": vendor.ingest_token, "Content-Type": "application/json"}
    for path in ("/api/v1/series", "/api/v1/distribution_points"):
        status, _, _ = http_request(vendor.vendor_url + path, b"{}", headers, "POST")
        assert status == 404, path
    status, _, body = http_request(vendor.vendor_url + "/api/v1/check_run", b"[]", headers, "POST")
    assert (status, body) == (202, b"{}")
    status, _, _ = http_request(vendor.vendor_url + "/api/v2/logs", b"[]", {"Content-Type": "application/json"}, "POST")
    assert status == 403
