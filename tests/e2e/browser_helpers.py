"""Browser helpers of the UI tests: Debian's Chromium driven by Playwright, and signing in."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect, sync_playwright

ARTIFACTS = Path(os.environ.get("TRAWL_UI_ARTIFACTS", Path(__file__).parent / "artifacts" / "ui"))


def chromium_path() -> str:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("no Chromium on PATH (tests/e2e/run.sh installs Debian's chromium)")


@pytest.fixture(scope="module")
def browser():
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=["--no-sandbox"])
        yield browser
        browser.close()


@pytest.fixture
def page(browser) -> Page:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    yield page
    context.close()


def sign_in(page: Page, server, name: str, password: str) -> None:
    page.goto(server.gateway_url + "/")
    page.get_by_label("Name").fill(name)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_test_id("who")).to_contain_text(name)
    # The editor (Monaco with the Kusto language service) is up.
    expect(page.locator(".monaco-editor")).to_be_visible(timeout=30_000)
