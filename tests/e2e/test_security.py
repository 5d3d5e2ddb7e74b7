"""Secure by default, easy on day one: the bootstrap secrets, ingest tokens, the gateway as the
only door for queries, and the README tour with the bootstrap tokens."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import time
import uuid

import grpc
import pytest
import requests
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from trawl_e2e import QueryError, cli, free_ports, http_request

JSON = {"Content-Type": "application/json"}


def log_payload(marker: str) -> bytes:
    record = {"timeUnixNano": str(time.time_ns()), "body": {"stringValue": marker}}
    return json.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": [record]}]}]}).encode()


def test_bootstrap_file_is_private_and_its_path_is_printed_not_its_secrets(trawl):
    path = trawl.data_dir / "bootstrap.json"
    mode = stat.S_IMODE(os.stat(path).st_mode)
    assert mode == 0o600, oct(mode)
    secrets = json.loads(path.read_text())
    assert set(secrets) == {"master_key", "admin_token", "ingest_token"}
    log = trawl.log_text()
    assert str(path) in log
    for secret in secrets.values():
        assert secret not in log


def test_tokens_are_never_stored_in_clear_text(trawl):
    secrets = json.loads((trawl.data_dir / "bootstrap.json").read_text())
    # The catalog and its write-ahead log, byte for byte.
    stored = b"".join(p.read_bytes() for p in trawl.data_dir.glob("catalog.db*"))
    assert stored, "the catalog files exist"
    for name in ("admin_token", "ingest_token"):
        token = secrets[name]
        # trawl_<kind>_<id>_<secret>: the secret is base64url and may itself hold "_".
        secret = token.split("_", 3)[3]
        assert len(secret) >= 32, token
        assert token.encode() not in stored and secret.encode() not in stored, name


def test_ingest_needs_a_valid_token(trawl):
    marker = f"no-token-{uuid.uuid4().hex[:8]}"
    for headers in ({}, {"Authorization": "Bearer trawl_it_0000000000000000_" + "A" * 43}, trawl.query_auth):
        status, _, body = http_request(trawl.otlp_http_url + "/v1/logs", log_payload(marker), {**JSON, **headers}, "POST")
        assert status == 401, (headers, status, body)
    with grpc.insecure_channel(trawl.otlp_grpc_endpoint) as channel:
        with pytest.raises(grpc.RpcError) as error:
            logs_service_pb2_grpc.LogsServiceStub(channel).Export(logs_service_pb2.ExportLogsServiceRequest(), timeout=10)
    assert error.value.code() == grpc.StatusCode.UNAUTHENTICATED
    status, _, _ = http_request(trawl.otlp_http_url + "/v1/logs", log_payload(marker), {**JSON, **trawl.ingest_auth}, "POST")
    assert status == 200
    assert trawl.wait_for_count(f'default | where body == "{marker}"', 1) == 1


def test_queries_need_a_token_at_the_gateway(trawl):
    body = json.dumps({"db": "default", "csl": "default | count"}).encode()
    for headers in ({}, {"Authorization": "Bearer nonsense"}, trawl.ingest_auth):
        status, response_headers, answer = http_request(trawl.gateway_url + "/v2/rest/query", body, {**JSON, **headers}, "POST")
        assert status == 401, (headers, status, answer)
        assert json.loads(answer)["error"]["message"]
        assert response_headers.get("www-authenticate") == "Bearer"
    status, _, answer = http_request(trawl.gateway_url + "/v2/rest/query", body, {**JSON, **trawl.query_auth}, "POST")
    assert status == 200, answer


def test_gateway_publishes_its_signing_key(trawl):
    status, _, body = http_request(trawl.gateway_url + "/api/gateway-keys")
    assert status == 200
    keys = json.loads(body)["keys"]
    assert keys and all(k["kty"] == "OKP" and k["crv"] == "Ed25519" and k["x"] for k in keys)


@pytest.mark.parametrize(
    ("flags", "anonymous"),
    [
        (["--require-auth", "false"], False),
        (["--default-ingest-token-enabled", "true"], False),
        (["--require-auth", "false", "--default-ingest-token-enabled", "true"], True),
    ],
)
def test_anonymous_ingest_needs_both_settings(trawl_factory, flags, anonymous):
    server = trawl_factory(extra_args=flags)
    marker = f"anon-{uuid.uuid4().hex[:8]}"
    status, _, _ = http_request(server.otlp_http_url + "/v1/logs", log_payload(marker), JSON, "POST")
    assert status == (200 if anonymous else 401)


def test_readme_tour_with_the_bootstrap_tokens(trawl, trawl_bin):
    """README step 1 (an OpenTelemetry exporter with the ingest token) and step 2 (`trawl
    query` finding the admin token in the data directory, and raw HTTP at the gateway)."""
    secrets = json.loads((trawl.data_dir / "bootstrap.json").read_text())
    service = f"tour-{uuid.uuid4().hex[:8]}"
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    exporter = OTLPSpanExporter(
        endpoint=f"{trawl.otlp_http_url}/v1/traces",
        headers={"Authorization": f"Bearer {secrets['ingest_token']}"},
    )
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("tour")
    with tracer.start_as_current_span("GET /cart", attributes={"http.route": "/cart"}):
        with tracer.start_as_current_span("SELECT cart"):
            pass
    provider.shutdown()
    kql = f"default | where tostring(resource['service.name']) == '{service}'"
    assert trawl.wait_for_count(kql, 2) == 2

    command = [str(trawl_bin), "query", f"{kql} | summarize count() by span_name | order by span_name asc"]
    command += ["--url", trawl.gateway_url, "--data-dir", str(trawl.data_dir), "--format", "csv", "--since", "1h"]
    env = {k: v for k, v in os.environ.items() if k not in ("TRAWL_TOKEN", "TRAWL_URL", "TRAWL_DATA_DIR")}
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["span_name,count_", "GET /cart,1", "SELECT cart,1"], done.stdout

    # Without the data directory (and no token), the gateway refuses: exit code 2.
    refused = subprocess.run(
        [str(trawl_bin), "query", "default | count", "--url", trawl.gateway_url, "--data-dir", "/nonexistent"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert refused.returncode == 2, (refused.returncode, refused.stderr)
    assert "Unauthorized" in refused.stderr

    answer = requests.post(
        f"{trawl.gateway_url}/v2/rest/query",
        headers={"Authorization": f"Bearer {secrets['admin_token']}"},
        data=json.dumps({"csl": f"{kql} | count"}),
        timeout=30,
    )
    assert answer.status_code == 200
    primary = next(f for f in answer.json() if f.get("TableKind") == "PrimaryResult")
    assert primary["Rows"] == [[2]]


def test_accounts_roles_and_tokens_from_the_command_line(trawl, trawl_bin):
    name = f"robot-{uuid.uuid4().hex[:6]}"
    code, out, err = cli(trawl, trawl_bin, "service-account", "create", name, "--role", "observer")
    assert code == 0, err
    code, robot_token, err = cli(trawl, trawl_bin, "service-account", "token", "create", name, "--expires-in", "3s")
    assert code == 0, err
    robot_token = robot_token.strip()
    assert robot_token.startswith("trawl_at_") and "shown once" in err
    code, out, _ = cli(trawl, trawl_bin, "whoami", token=robot_token)
    assert (code, out.split()) == (0, [name, "service_account", "observer"])

    # An observer queries, but cannot make ingest tokens.
    body = json.dumps({"csl": "default | count"}).encode()
    status, _, _ = http_request(trawl.gateway_url + "/v2/rest/query", body, {"Authorization": f"Bearer {robot_token}"}, "POST")
    assert status == 200
    code, _, err = cli(trawl, trawl_bin, "token", "create", "--table", "x", token=robot_token)
    assert code == 2 and "PermissionDenied" in err, err

    # The token expires.
    time.sleep(3.5)
    status, _, answer = http_request(trawl.gateway_url + "/v2/rest/query", body, {"Authorization": f"Bearer {robot_token}"}, "POST")
    assert status == 401 and b"expired" in answer

    # The admin makes an ingest token routed to its own table, then revokes it.
    table = f"routed_{uuid.uuid4().hex[:6]}"
    code, ingest_token, err = cli(trawl, trawl_bin, "token", "create", "--name", "routed", "--table", table)
    assert code == 0, err
    ingest_token = ingest_token.strip()
    marker = f"routed-{uuid.uuid4().hex[:8]}"
    auth = {"Authorization": f"Bearer {ingest_token}"}
    status, _, _ = http_request(trawl.otlp_http_url + "/v1/logs", log_payload(marker), {**JSON, **auth}, "POST")
    assert status == 200
    assert trawl.wait_for_count(f'{table} | where body == "{marker}"', 1) == 1
    code, listing, _ = cli(trawl, trawl_bin, "token", "list")
    token_id = ingest_token.split("_")[2]
    assert code == 0 and token_id in listing and ingest_token not in listing
    code, _, err = cli(trawl, trawl_bin, "token", "revoke", token_id)
    assert code == 0, err
    status, _, _ = http_request(trawl.otlp_http_url + "/v1/logs", log_payload(marker), {**JSON, **auth}, "POST")
    assert status == 401
    code, _, err = cli(trawl, trawl_bin, "token", "restore", token_id)
    assert code == 0, err
    status, _, _ = http_request(trawl.otlp_http_url + "/v1/logs", log_payload(marker), {**JSON, **auth}, "POST")
    assert status == 200

    # Users sign in with a password (argon2id); the listing shows them, never secrets.
    user = f"ann-{uuid.uuid4().hex[:6]}"
    code, _, err = cli(trawl, trawl_bin, "user", "create", user, "--role", "maintainer", stdin="correct horse battery\n")
    assert code == 0, err
    code, listing, _ = cli(trawl, trawl_bin, "service-account", "list")
    assert code == 0 and user in listing and name in listing
    stored = b"".join(p.read_bytes() for p in trawl.data_dir.glob("catalog.db*"))
    assert b"correct horse battery" not in stored
    assert b"$argon2id$" in stored


def test_meta_refuses_callers_without_the_master_key_or_the_gateway(trawl):
    with grpc.insecure_channel(trawl.meta_endpoint) as channel:
        call = channel.unary_unary(
            "/trawl.meta.v1.MetaService/ListPrincipals",
            request_serializer=lambda b: b,
            response_deserializer=lambda b: b,
        )
        for metadata in ([], [("authorization", f"Bearer {trawl.admin_token}")], [("x-trawl-service-token", "0" * 64)]):
            with pytest.raises(grpc.RpcError) as error:
                call(b"", timeout=10, metadata=metadata)
            assert error.value.code() == grpc.StatusCode.UNAUTHENTICATED, metadata


def test_databases_tables_and_views_with_roles_tombstones_and_restore(trawl, trawl_bin):
    # An observer cannot create a table.
    observer = f"watcher-{uuid.uuid4().hex[:6]}"
    assert cli(trawl, trawl_bin, "service-account", "create", observer, "--role", "observer")[0] == 0
    code, observer_token, _ = cli(trawl, trawl_bin, "service-account", "token", "create", observer)
    code, _, err = cli(trawl, trawl_bin, "table", "create", "nope", token=observer_token.strip())
    assert code == 2 and "PermissionDenied" in err, err
    code, listing, _ = cli(trawl, trawl_bin, "table", "list", token=observer_token.strip())
    assert code == 0 and "default" in listing  # reading needs no role

    # An admin makes two tables in a new database, and a view of both.
    db = f"shop{uuid.uuid4().hex[:6]}"
    assert cli(trawl, trawl_bin, "database", "create", db)[0] == 0
    for table in ("orders", "refunds"):
        code, out, err = cli(trawl, trawl_bin, "table", "create", table, "--database", db, "--retention", "30d")
        assert code == 0, err
        assert "30d" in out
    code, _, err = cli(trawl, trawl_bin, "view", "create", "money", "--database", db, "--tables", "orders,refunds")
    assert code == 0, err
    # Data for each table through a token routed to it; the view unites them.
    for table, marker in (("orders", "o-1"), ("refunds", "r-1")):
        code, token, err = cli(trawl, trawl_bin, "token", "create", "--database", db, "--table", table)
        assert code == 0, err
        auth = {"Authorization": f"Bearer {token.strip()}"}
        status, _, body = http_request(trawl.otlp_http_url + "/v1/logs", log_payload(marker), {**JSON, **auth}, "POST")
        assert status == 200, body
        if table == "orders":
            orders_auth = auth

    def rows(csl: str):
        body = json.dumps({"db": db, "csl": csl}).encode()
        status, _, answer = http_request(trawl.gateway_url + "/v2/rest/query", body, {**JSON, **trawl.query_auth}, "POST")
        return status, answer

    deadline = time.monotonic() + 10
    while True:
        status, answer = rows("money | summarize n = count()")
        if status == 200 and json.loads(answer)[2]["Rows"] == [[2]] or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert status == 200 and json.loads(answer)[2]["Rows"] == [[2]], answer

    # Deleting a table a view unites needs cascade; then both are gone, and ingest is refused.
    code, _, err = cli(trawl, trawl_bin, "table", "delete", "orders", "--database", db)
    assert code == 2 and "cascade" in err, err
    assert cli(trawl, trawl_bin, "table", "delete", "orders", "--database", db, "--cascade")[0] == 0
    status, answer = rows("orders | count")
    assert status == 400 and b"UnknownTable" in answer
    status, answer = rows("money | count")
    assert status == 400
    status, _, body = http_request(trawl.otlp_http_url + "/v1/logs", log_payload("o-2"), {**JSON, **orders_auth}, "POST")
    assert status == 404, body
    code, listing, _ = cli(trawl, trawl_bin, "table", "list", "--database", db, "--all")
    assert "orders" in listing and "refunds" in listing

    # Restore brings back the table, its data, and the view deleted with it.
    code, _, err = cli(trawl, trawl_bin, "table", "restore", "orders", "--database", db)
    assert code == 0, err
    status, answer = rows("money | count")
    assert status == 200 and json.loads(answer)[2]["Rows"] == [[2]], answer

    # A database with live tables is deleted only with cascade, and restored with them.
    code, _, err = cli(trawl, trawl_bin, "database", "delete", db)
    assert code == 2 and "cascade" in err
    assert cli(trawl, trawl_bin, "database", "delete", db, "--cascade")[0] == 0
    code, listing, _ = cli(trawl, trawl_bin, "database", "list")
    assert db not in listing
    assert cli(trawl, trawl_bin, "database", "restore", db)[0] == 0
    status, answer = rows("money | count")
    assert status == 200 and json.loads(answer)[2]["Rows"] == [[2]], answer


def test_records_choose_their_table_when_the_token_allows(trawl, trawl_bin):
    table = f"audit_{uuid.uuid4().hex[:6]}"
    marker = f"chosen-{uuid.uuid4().hex[:8]}"

    def payload(resource_table: str | None) -> bytes:
        attributes = [{"key": "trawl.table", "value": {"stringValue": resource_table}}] if resource_table else []
        record = {"timeUnixNano": str(time.time_ns()), "body": {"stringValue": marker}}
        return json.dumps(
            {"resourceLogs": [{"resource": {"attributes": attributes}, "scopeLogs": [{"logRecords": [record]}]}]}
        ).encode()

    # The bootstrap ingest token allows it: the record lands in the table it names.
    status, _, _ = http_request(trawl.otlp_http_url + "/v1/logs", payload(table), {**JSON, **trawl.ingest_auth}, "POST")
    assert status == 200
    deadline = time.monotonic() + 10
    while True:  # the table appears with its first segment
        try:
            if trawl.count(f'{table} | where body == "{marker}"') == 1:
                break
        except QueryError:
            pass
        assert time.monotonic() < deadline, f"no row in {table}"
        time.sleep(0.1)
    # A token without the permission keeps records in its own table.
    code, token, err = cli(trawl, trawl_bin, "token", "create", "--table", "default")
    assert code == 0, err
    auth = {"Authorization": f"Bearer {token.strip()}"}
    status, _, _ = http_request(trawl.otlp_http_url + "/v1/logs", payload(table + "x"), {**JSON, **auth}, "POST")
    assert status == 200
    assert trawl.wait_for_count(f'default | where body == "{marker}"', 1) == 1


def test_users_sign_in_with_their_password_service_accounts_do_not(trawl, trawl_bin):
    user = f"sam-{uuid.uuid4().hex[:6]}"
    assert cli(trawl, trawl_bin, "user", "create", user, "--role", "observer", stdin="a good password")[0] == 0

    def sign_in(name: str, password: str):
        body = json.dumps({"name": name, "password": password}).encode()
        status, _, answer = http_request(trawl.gateway_url + "/api/sign-in", body, JSON, "POST")
        return status, json.loads(answer)

    status, answer = sign_in(user, "a good password")
    assert status == 200 and answer["role"] == "observer", answer
    code, out, _ = cli(trawl, trawl_bin, "whoami", token=answer["token"])
    assert (code, out.split()) == (0, [user, "user", "observer"])
    # Wrong password and unknown name get the same answer.
    wrong = sign_in(user, "a bad password")
    unknown = sign_in("nobody-" + user, "a good password")
    assert wrong[0] == unknown[0] == 401
    assert wrong[1]["error"]["message"] == unknown[1]["error"]["message"]
    status, answer = sign_in("admin", "anything at all")
    assert status == 401 and "tokens only" in answer["error"]["message"]
    # A new password replaces the old one.
    assert cli(trawl, trawl_bin, "user", "set-password", user, stdin="another good one")[0] == 0
    assert sign_in(user, "a good password")[0] == 401
    assert sign_in(user, "another good one")[0] == 200


def test_the_meta_role_needs_the_master_key(postgres, trawl_bin, tmp_path):
    import hashlib
    import hmac

    done = subprocess.run(
        [str(trawl_bin), "serve", "--role", "meta", "--data-dir", str(tmp_path / "m")],
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if k != "BZRK_MASTER_KEY"},
    )
    assert done.returncode != 0 and "BZRK_MASTER_KEY" in done.stderr, done.stderr

    key = "k" * 40
    (port,) = free_ports(1)
    env = {**os.environ, "BZRK_MASTER_KEY": key, "RUST_LOG": "info"}
    process = subprocess.Popen(
        [str(trawl_bin), "serve", "--role", "meta", "--data-dir", str(tmp_path / "m"), "--meta-bind", f"127.0.0.1:{port}",
         "--catalog", postgres.url],  # fmt: skip
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if http_request(f"http://127.0.0.1:{port}/health/ready", timeout=2)[0] == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline and process.poll() is None, "meta did not start"
            time.sleep(0.1)
        good = hmac.new(key.encode(), b"trawl-service-token-v1", hashlib.sha256).hexdigest()
        wrong = hmac.new(b"w" * 40, b"trawl-service-token-v1", hashlib.sha256).hexdigest()
        version = json.loads(http_request(f"http://127.0.0.1:{port}/info")[2])["version"].encode()
        # Member{id, role: "query", version}
        member = (
            bytes.fromhex("0a20") + b"0123456789abcdef0123456789abcdef" + bytes.fromhex("1205") + b"query"
            + bytes([0x22, len(version)]) + version
        )  # fmt: skip
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            register = channel.unary_unary(
                "/trawl.meta.v1.MetaService/RegisterMember", request_serializer=lambda b: b, response_deserializer=lambda b: b
            )
            register(member, timeout=10, metadata=[("x-trawl-service-token", good)])
            with pytest.raises(grpc.RpcError) as error:
                register(member, timeout=10, metadata=[("x-trawl-service-token", wrong)])
            assert error.value.code() == grpc.StatusCode.UNAUTHENTICATED
    finally:
        process.terminate()
        process.wait(timeout=15)


def test_guessing_a_password_or_a_token_secret_is_cut_off(trawl_factory, trawl_bin):
    # A server of its own: the address this test blocks is every test's address.
    trawl = trawl_factory("guessing")
    user = f"guess-{uuid.uuid4().hex[:6]}"
    other = f"other-{uuid.uuid4().hex[:6]}"
    for name in (user, other):
        assert cli(trawl, trawl_bin, "user", "create", name, "--role", "observer", stdin="the right one")[0] == 0

    def sign_in(name: str, password: str):
        body = json.dumps({"name": name, "password": password}).encode()
        status, headers, answer = http_request(trawl.gateway_url + "/api/sign-in", body, JSON, "POST")
        return status, headers, answer

    for attempt in range(10):
        assert sign_in(user, f"guess {attempt}")[0] == 401
    # Blocked now, even with the right password, and told when to come back.
    status, headers, answer = sign_in(user, "the right one")
    assert status == 429, answer
    assert 1 <= int(headers["retry-after"]) <= 300
    # Another account is not affected.
    assert sign_in(other, "the right one")[0] == 200

    # Guessed tokens: after ten wrong ones from this address, even a good token is held off.
    body = json.dumps({"csl": "print 1"}).encode()
    token = trawl.admin_token
    kind_and_id = "_".join(token.split("_", 3)[:3])
    for attempt in range(10):
        guess = f"{kind_and_id}_{'x' * 42}{'AEIMQUYcgk'[attempt]}"
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {guess}"}
        assert http_request(trawl.gateway_url + "/v2/rest/query", body, headers, "POST")[0] == 401
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
    status, answer_headers, _ = http_request(trawl.gateway_url + "/v2/rest/query", body, headers, "POST")
    assert status == 429 and "retry-after" in answer_headers


def test_secrets_never_reach_the_log(trawl_factory, trawl_bin):
    """With debug logging on, a day of operations (ingest, queries, a failed and a good sign-in,
    tokens made, used and refused, forged signatures) writes no token and no password to the
    server's log; it may name a token's public id."""
    os.environ["RUST_LOG"] = "debug"
    try:
        server = trawl_factory("secrets")
    finally:
        del os.environ["RUST_LOG"]
    secrets = [server.admin_token, server.ingest_token, server.ingest_token.rsplit("_", 1)[-1]]
    bootstrap = json.loads((server.data_dir / "bootstrap.json").read_text())
    secrets.append(bootstrap["master_key"])
    password = f"pw-{uuid.uuid4().hex}"
    user = f"logger-{uuid.uuid4().hex[:6]}"
    assert cli(server, trawl_bin, "user", "create", user, "--role", "observer", stdin=password)[0] == 0
    secrets.append(password)
    code, made, _ = cli(server, trawl_bin, "token", "create", "--name", "for-log-test")
    assert code == 0
    secrets.append(made.strip())

    # Ingest with each ingest token, and with a wrong one.
    for token in (server.ingest_token, made.strip(), "trawl_it_0123456789abcdef_wrongwrongwrongwrongwrongwrongwrongwrong"):
        http_request(server.otlp_http_url + "/v1/logs", log_payload("secret-test"), {**JSON, "Authorization": f"Bearer {token}"}, "POST")
    wrong_token = "trawl_at_0123456789abcdef_notarealsecretnotarealsecretnotarealsecr"
    secrets.append(wrong_token.rsplit("_", 1)[-1])
    # Queries: good, wrong token, and signed requests sent straight to the query port.
    body = json.dumps({"db": "default", "csl": "default | count"}).encode()
    for token in (server.admin_token, wrong_token):
        http_request(server.gateway_url + "/v2/rest/query", body, {**JSON, "Authorization": f"Bearer {token}"}, "POST")
    http_request(server.query_url + "/v2/rest/query", body, {**JSON, "x-svc-signature": "forged"}, "POST")
    # Sign-in: wrong password, then the right one (its answer carries a token).
    for attempt in ("not it", password):
        status, _, answer = http_request(
            server.gateway_url + "/api/sign-in", json.dumps({"name": user, "password": attempt}).encode(), JSON, "POST"
        )
        if status == 200:
            secrets.extend(v for v in json.loads(answer).values() if isinstance(v, str) and v.startswith("trawl_"))
    server.stop_cleanly()

    log = server.log_text()
    assert "DEBUG" in log, "debug logging was not on"
    leaked = [secret for secret in secrets if secret and secret in log]
    assert not leaked, f"{len(leaked)} secrets in the server log: {[s[:12] + '…' for s in leaked]}"


def test_a_query_knows_who_asks(trawl, trawl_bin):
    """`current_principal()` is the caller the gateway authenticated, whoever that is."""
    name = f"asker-{uuid.uuid4().hex[:6]}"
    code, _, err = cli(trawl, trawl_bin, "service-account", "create", name, "--role", "observer")
    assert code == 0, err
    code, token, err = cli(trawl, trawl_bin, "service-account", "token", "create", name, "--expires-in", "10m")
    assert code == 0, err
    query = "print p = current_principal(), d = current_principal_details().UserPrincipalName"
    body = json.dumps({"db": "default", "csl": query}).encode()
    for bearer, expected in ((token.strip(), name), (trawl.admin_token, "admin")):
        status, _, answer = http_request(
            trawl.gateway_url + "/v1/rest/query", body, {"Authorization": f"Bearer {bearer}"}, "POST"
        )
        assert status == 200, answer
        rows = json.loads(answer)["Tables"][0]["Rows"]
        assert rows == [[expected, expected]], rows
