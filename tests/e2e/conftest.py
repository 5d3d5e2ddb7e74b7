"""End-to-end fixtures: a real `trawl serve` process on free ports and a fresh data dir.

`trawl` (module scope) is one running server; `trawl_factory` (function scope) makes
servers on demand, for tests that kill and restart them. Every server is stopped with
SIGTERM at the end and must exit 0 within SHUTDOWN_TIMEOUT (the clean-shutdown check).
When a test fails, the log of every server it used is added to the report, and the warnings,
errors and last lines of every process of a cluster that is up.
"""

from __future__ import annotations

import atexit
import os
from pathlib import Path

import pytest

from trawl_e2e import ALL, CLUSTER_DIRS, CURRENT, PostgresServer, TrawlServer, cluster_log_notes, stop_all


def trawl_binary() -> Path:
    value = os.environ.get("TRAWL_BIN", "")
    if not value:
        pytest.exit("TRAWL_BIN is not set: point it at the trawl binary (cargo build -p trawl)", returncode=2)
    path = Path(value)
    if not path.is_file() or not os.access(path, os.X_OK):
        pytest.exit(f"TRAWL_BIN={value} is not an executable file", returncode=2)
    return path.resolve()


@pytest.fixture(scope="session")
def trawl_bin() -> Path:
    return trawl_binary()


@pytest.fixture(scope="module")
def trawl(trawl_bin, tmp_path_factory) -> TrawlServer:
    """One server for the whole module; stopped with SIGTERM at the end (must exit 0)."""
    server = TrawlServer(trawl_bin, tmp_path_factory.mktemp("trawl"), merge_interval_secs=30)
    server.start()
    yield server
    stop_all([server])


@pytest.fixture
def trawl_factory(trawl_bin, tmp_path):
    """make(**kwargs) -> a started TrawlServer on its own data dir; all stopped cleanly at the end."""
    servers: list[TrawlServer] = []

    def make(name: str = "trawl", start: bool = True, **kwargs) -> TrawlServer:
        server = TrawlServer(trawl_bin, tmp_path / name, name=name, **kwargs)
        servers.append(server)
        if start:
            server.start()
        return server

    yield make
    stop_all(servers)


# --- server logs in failure reports --------------------------------------------------------
@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    CURRENT[:] = [s for s in ALL if s.running]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        for server in CURRENT:
            report.sections.append((f"trawl server log: {server.name} ({server.workdir})", server.log_tail()))
        for directory in CLUSTER_DIRS:
            for process, notes in cluster_log_notes(directory):
                report.sections.append((f"cluster log: {process} ({directory})", notes))


@atexit.register
def _kill_leftovers() -> None:
    for server in ALL:
        if server.running:
            server.process.kill()


@pytest.fixture
def postgres():
    """A throwaway PostgreSQL server (scripts/postgres.sh), removed after the test."""
    server = PostgresServer().start()
    yield server
    server.remove()
