"""Shared fixtures: a Streamlit server on 127.0.0.1 and a headless system Chromium."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "tests" / "artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


PG_URL_ENV = "EXPLORER_TEST_DATABASE_URL"
PG_URL_FILE = Path(os.environ.get("EXPLORER_PG_DIR", "/tmp/specdec-explorer-pg")) / "url"


def postgres_url(purpose: str = "these tests") -> str:
    """The test PostgreSQL server's URL (scripts/ci_postgres.sh); fails under CI without one."""
    url = os.environ.get(PG_URL_ENV, "").strip()
    if not url and PG_URL_FILE.is_file():
        url = PG_URL_FILE.read_text().strip()
    if url:
        return url
    why = (f"no PostgreSQL for {purpose}: {PG_URL_ENV} is unset "
           "(scripts/ci_postgres.sh starts a server and prints its URL)")
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(why)
    pytest.skip(why)


def run_app(**params: str) -> AppTest:
    """Run app.py in AppTest with these URL parameters; the run must raise nothing."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_app(port: int, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"),
         "--server.headless", "true", "--server.address", "127.0.0.1",
         "--server.port", str(port), "--browser.gatherUsageStats", "false",
         "--server.fileWatcherType", "none"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
    )
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
                if r.read() == b"ok":
                    return proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("the app did not become healthy within 60 s")


@pytest.fixture(scope="session")
def app_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The served app's EXPLORER_DATA_DIR: a fresh SQLite scenario store, never ./.explorer-data."""
    return tmp_path_factory.mktemp("explorer-data")


def app_env(data_dir: Path) -> dict[str, str]:
    return {"EXPLORER_DATA_DIR": str(data_dir), "EXPLORER_DATABASE_URL": ""}


@pytest.fixture(scope="session")
def app_url(app_data_dir: Path) -> Iterator[str]:
    port = free_port()
    proc = start_app(port, env=app_env(app_data_dir))
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=20)


@pytest.fixture(scope="session")
def chromium() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail("the system Chromium (/usr/bin/chromium) is missing: run `make chromium`")
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS
