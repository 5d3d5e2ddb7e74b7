"""Cold-start load time of the web UI: a fresh browser profile (empty cache) opens the
gateway's `/`, signs in, and waits for the KQL editor (Monaco and the Kusto language
service with the live schema). Prints the median of --runs cold loads, in milliseconds:
the sign-in page (DOMContentLoaded and load), and sign-in to a ready editor; and the bytes
the browser fetched.

    TRAWL_BIN=target/release/trawl tests/e2e/run.sh --version >/dev/null   # makes the venv
    ~/.cache/trawl-e2e-venv/bin/python bench/ui/load_time.py --trawl target/release/trawl

Needs Chromium on PATH (scripts/test.sh installs Debian's)."""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "e2e"))

from playwright.sync_api import expect, sync_playwright  # noqa: E402

from trawl_e2e import TrawlServer, cli  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trawl", required=True, type=Path, help="the trawl binary")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        print("no chromium on PATH", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as work:
        server = TrawlServer(args.trawl.resolve(), Path(work))
        server.start()
        try:
            code, _, err = cli(server, args.trawl.resolve(), "user", "create", "bench", "--role", "observer",
                               stdin="a long enough password\n")
            assert code == 0, err
            page_ms, loaded_ms, ready_ms, fetched = [], [], [], []
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
                for _ in range(args.runs):
                    context = browser.new_context(viewport={"width": 1400, "height": 900})
                    page = context.new_page()
                    sizes: list[int] = []
                    # Bytes on the wire (compressed bodies as sent).
                    context.on("requestfinished", lambda r: sizes.append(r.sizes()["responseBodySize"]))
                    page.goto(server.gateway_url + "/")
                    expect(page.get_by_label("Name")).to_be_visible()
                    timing = page.evaluate("() => performance.getEntriesByType('navigation')[0].toJSON()")
                    page_ms.append(timing["domContentLoadedEventEnd"])
                    loaded_ms.append(timing["loadEventEnd"])
                    page.get_by_label("Name").fill("bench")
                    page.get_by_label("Password").fill("a long enough password")
                    started = time.perf_counter()
                    page.get_by_role("button", name="Sign in").click()
                    expect(page.get_by_test_id("editor")).to_have_attribute("data-schema", "default", timeout=60_000)
                    ready_ms.append((time.perf_counter() - started) * 1000)
                    fetched.append(sum(sizes))
                    context.close()
                browser.close()
        finally:
            server.stop()
    print(f"cold loads: {args.runs}")
    print(f"sign-in page DOMContentLoaded: {statistics.median(page_ms):.0f} ms, load: {statistics.median(loaded_ms):.0f} ms")
    print(f"sign-in to a ready editor (schema loaded): {statistics.median(ready_ms):.0f} ms")
    print(f"bytes the page fetched, as sent (the workers' own fetches are not counted): {statistics.median(fetched) / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
