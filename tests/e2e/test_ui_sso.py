"""SSO sign-in in a real browser against a real OpenID Connect provider (`oidc-provider` from
npm, run by the test; scripts/oidc-provider.sh installs it): the settings imported once from
`--oidc-*` flags, an SSO account signing in (authorization code with PKCE, the account name
from the userinfo answer), a password account refused with 'this account signs in with a
password', a switch from password to SSO that keeps the role, and the admin page's settings."""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
import uuid
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from browser_helpers import ARTIFACTS, browser, page  # noqa: F401 (fixtures)
from browser_helpers import sign_in
from trawl_e2e import TrawlServer, cli, free_ports, http_request, stop_all

CLIENT_SECRET = "a client secret for the tests"
ADMIN, ADMIN_PASSWORD = "root", "the admin's long password"


def provider_dir() -> Path:
    found = os.environ.get("TRAWL_OIDC_PROVIDER_DIR")
    if not found:
        pytest.skip("no test OpenID provider (tests/e2e/run.sh installs it with npm)")
    return Path(found)


@pytest.fixture(scope="module")
def sso(trawl_bin, tmp_path_factory):
    """A server whose first start imports SSO settings from flags, and the provider."""
    directory = provider_dir()
    (port,) = free_ports(1)
    issuer = f"http://127.0.0.1:{port}"
    flags = ["--oidc-issuer", issuer, "--oidc-client-id", "trawl", "--oidc-client-secret", CLIENT_SECRET]
    server = TrawlServer(trawl_bin, tmp_path_factory.mktemp("sso"), extra_args=flags)
    server.start()
    log = open(server.workdir / "oidc-provider.log", "wb")
    provider = subprocess.Popen(
        ["node", "provider.mjs"],
        cwd=directory,
        env=dict(
            os.environ,
            PORT=str(port),
            REDIRECT_URI=server.gateway_url + "/api/ui/sso/callback",
            CLIENT_SECRET=CLIENT_SECRET,
        ),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(issuer + "/.well-known/openid-configuration", timeout=2) as answer:
                assert json.load(answer)["issuer"] == issuer
                break
        except OSError:
            if provider.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"the OpenID provider did not start: {server.workdir / 'oidc-provider.log'}")
            time.sleep(0.2)
    code, _, err = cli(server, trawl_bin, "user", "create", ADMIN, "--role", "admin", stdin=ADMIN_PASSWORD + "\n")
    assert code == 0, err
    server.issuer = issuer
    yield server
    provider.terminate()
    provider.wait(timeout=10)
    log.close()
    stop_all([server])


def sso_sign_in(page: Page, server, login: str) -> None:
    """From the sign-in page through the provider's login and consent pages, and back."""
    page.goto(server.gateway_url + "/")
    page.get_by_test_id("sso-sign-in").click()
    page.wait_for_url(server.issuer + "/**")
    page.locator("input[name=login]").fill(login)
    page.locator("input[name=password]").fill("any password")
    page.screenshot(path=str(ARTIFACTS / "sso-provider.png"))
    page.locator("button[type=submit]").click()
    # The provider asks once for consent to the client.
    if page.url.startswith(server.issuer):
        page.locator("button[type=submit]").click()
    page.wait_for_url(server.gateway_url + "/**")


def test_flags_are_imported_once_and_the_sign_in_page_offers_sso(sso, trawl_bin, tmp_path):
    status, _, answer = http_request(sso.gateway_url + "/api/ui/sso", None, {}, "GET")
    assert status == 200 and json.loads(answer) == {"enabled": True, "label": "Sign in with SSO"}
    # A later start with other flags keeps the imported settings.
    other = TrawlServer(trawl_bin, tmp_path / "again", extra_args=["--oidc-issuer", "https://first.example"])
    other.start()
    try:
        other.stop()
        other.extra_args = ["--oidc-issuer", "https://second.example", "--oidc-client-id", "x"]
        other.start()
        status, _, answer = http_request(other.gateway_url + "/api/ui/sso", None, {}, "GET")
        # Imported at the first start: an issuer without a client id is off.
        assert status == 200 and json.loads(answer) == {"enabled": False}
    finally:
        stop_all([other])


def test_an_sso_account_signs_in_through_the_provider(sso, trawl_bin, page):
    name = f"sara{uuid.uuid4().hex[:4]}"
    code, out, err = cli(sso, trawl_bin, "user", "create", name, "--role", "observer", "--sso")
    assert code == 0 and "sso" in out, err
    sso_sign_in(page, sso, name)
    expect(page.get_by_test_id("who")).to_contain_text(f"{name} · observer", timeout=30_000)
    page.screenshot(path=str(ARTIFACTS / "sso-signed-in.png"))
    # The session is a real one: queries run.
    page.get_by_test_id("run").click()
    expect(page.get_by_test_id("stats")).to_be_visible(timeout=30_000)
    # A password sign-in of the SSO account is refused.
    body = json.dumps({"name": name, "password": "any password"}).encode()
    status, _, answer = http_request(sso.gateway_url + "/api/sign-in", body, {"Content-Type": "application/json"}, "POST")
    assert status == 401 and b"signs in with SSO" in answer


def test_a_password_account_is_refused_by_sso(sso, trawl_bin, page):
    name = f"pat{uuid.uuid4().hex[:4]}"
    code, _, err = cli(sso, trawl_bin, "user", "create", name, "--role", "maintainer", stdin="a long enough password\n")
    assert code == 0, err
    sso_sign_in(page, sso, name)
    expect(page.get_by_role("alert")).to_have_text("this account signs in with a password", timeout=30_000)
    expect(page.get_by_test_id("who")).to_have_count(0)
    page.screenshot(path=str(ARTIFACTS / "sso-refused.png"))
    # An unknown name gets no account: new accounts are not made by default. (Signed out of
    # the provider first, which otherwise remembers the last login.)
    page.context.clear_cookies()
    sso_sign_in(page, sso, f"nobody{uuid.uuid4().hex[:4]}")
    expect(page.get_by_role("alert")).to_contain_text("there is no account named", timeout=30_000)


def test_an_admin_switches_a_password_account_to_sso(sso, trawl_bin, page):
    name = f"max{uuid.uuid4().hex[:4]}"
    password = "a long enough password"
    code, _, err = cli(sso, trawl_bin, "user", "create", name, "--role", "maintainer", stdin=password + "\n")
    assert code == 0, err
    sign_in(page, sso, ADMIN, ADMIN_PASSWORD)
    page.get_by_test_id("open-admin").click()
    row = page.get_by_test_id("account").filter(has_text=name)
    expect(row.get_by_test_id("sign-in-method")).to_have_text("password", timeout=30_000)
    page.once("dialog", lambda dialog: dialog.accept())
    row.get_by_role("button", name="Switch to SSO").click()
    expect(row.get_by_test_id("sign-in-method")).to_have_text("SSO")
    # The password no longer signs in; SSO does, with the role kept.
    body = json.dumps({"name": name, "password": password}).encode()
    status, _, _ = http_request(sso.gateway_url + "/api/sign-in", body, {"Content-Type": "application/json"}, "POST")
    assert status == 401
    page.context.clear_cookies()
    sso_sign_in(page, sso, name)
    expect(page.get_by_test_id("who")).to_contain_text(f"{name} · maintainer", timeout=30_000)


def test_the_admin_page_changes_the_sso_settings(sso, page):
    sign_in(page, sso, ADMIN, ADMIN_PASSWORD)
    page.get_by_test_id("open-admin").click()
    section = page.get_by_test_id("sso")
    expect(section.get_by_label("Issuer URL")).to_have_value(sso.issuer, timeout=30_000)
    # The secret is never shown, only that one is stored.
    expect(section.get_by_label("Client secret")).to_have_value("")
    expect(section.get_by_label("Client secret")).to_have_attribute("placeholder", "stored (leave empty to keep)")
    section.get_by_label("Button text").fill("Sign in with the test provider")
    section.get_by_test_id("save-sso").click()
    expect(section.get_by_role("status")).to_have_text("Saved.")
    page.screenshot(path=str(ARTIFACTS / "admin-sso.png"))
    page.context.clear_cookies()
    page.goto(sso.gateway_url + "/")
    expect(page.get_by_test_id("sso-sign-in")).to_have_text("Sign in with the test provider")
    page.screenshot(path=str(ARTIFACTS / "sign-in-sso.png"))
