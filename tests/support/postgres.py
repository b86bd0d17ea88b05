"""The test PostgreSQL server (scripts/ci_postgres.sh): its URL, or a skip (a failure under CI)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

PG_URL_ENV = "EXPLORER_TEST_DATABASE_URL"
PG_URL_FILE = Path(os.environ.get("EXPLORER_PG_DIR", "/tmp/specdec-explorer-pg")) / "url"


def _answers(url: str) -> bool:
    """Whether a server answers at the URL: a URL file left by a stopped server must skip."""
    import psycopg

    try:
        with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://"),
                             connect_timeout=3):
            return True
    except psycopg.Error:
        return False


def postgres_url(purpose: str = "these tests") -> str:
    url = os.environ.get(PG_URL_ENV, "").strip()
    why = (f"no PostgreSQL for {purpose}: {PG_URL_ENV} is unset "
           "(scripts/ci_postgres.sh starts a server and prints its URL)")
    if not url and PG_URL_FILE.is_file():
        url = PG_URL_FILE.read_text().strip()
        if url and not _answers(url):
            why = f"no PostgreSQL for {purpose}: {PG_URL_FILE} names a server that is not running"
            url = ""
    if url:
        return url
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(why)
    pytest.skip(why)
