"""Fixtures: one served app on 127.0.0.1, a headless system Chromium, the artifacts folder.

Each test folder is a kind, and its tests carry that kind's marker (unit, property, app,
browser, system); `slow` marks what takes more than a few seconds. The quick loop is
`pytest -m "not browser and not slow"`; it spreads over the machine's cores (pytest-xdist)
unless `-n` is given (`-n 0`: one process).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.paths import ARTIFACTS
from tests.support.quick_loop import is_quick_loop
from tests.support.server import app_env, free_port, start_server, stop_server

# pytest caches its assertion-rewritten test modules (and Python its bytecode) in __pycache__,
# but not when PYTHONDONTWRITEBYTECODE is set, as it is on our machines: then every run rewrites
# ~200 modules again, about half of collecting the suite. The caches are git-ignored.
sys.dont_write_bytecode = False

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
KINDS = ("unit", "property", "app", "browser", "system")
# the parser fuzz and contract suites feed hundreds of files per format: minutes, not seconds
SLOW_MODULES = ("test_measured_downstream.py", "test_measured_fuzz.py")


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """The quick loop runs in parallel: its ~1,000 in-process tests share nothing but the
    read-only data, and one process uses one core. The full run (browser and served-app tests,
    one server, load and fault tests) stays in one process."""
    if (hasattr(config, "workerinput") or not config.pluginmanager.hasplugin("xdist")
            or config.option.numprocesses is not None or config.option.collectonly):
        return
    cores = os.cpu_count() or 1
    if cores > 1 and is_quick_loop(config.option.markexpr or ""):
        config.option.numprocesses = cores
        config.option.dist = "load"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        kind = Path(str(item.fspath)).parent.name
        if kind in KINDS:
            item.add_marker(kind)
        if kind in ("browser", "system") or Path(str(item.fspath)).name in SLOW_MODULES:
            item.add_marker("slow")


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """This test's own SQLite scenario store (EXPLORER_DATA_DIR), never ./.explorer-data."""
    from explorer.interfaces import store

    monkeypatch.delenv(store.DATABASE_URL_ENV, raising=False)
    monkeypatch.setenv(store.DATA_DIR_ENV, str(tmp_path / "data"))
    store.reset_default_stores()
    yield tmp_path / "data"
    store.reset_default_stores()


@pytest.fixture(scope="session")
def app_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The served app's EXPLORER_DATA_DIR: a fresh SQLite scenario store."""
    return tmp_path_factory.mktemp("explorer-data")


@pytest.fixture(scope="session")
def app_url(app_data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The one app server the browser tests share (its log is kept beside the store)."""
    port = free_port()
    proc = start_server(port, tmp_path_factory.mktemp("app-log") / "server.log",
                        env=app_env(app_data_dir))
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_server(proc)


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
