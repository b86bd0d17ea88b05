"""Tampered and damaged scenario stores: rows changed with raw SQL (as a careless operator or an
attacker with database access would), and a SQLite file with broken pages."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

from explorer.interfaces.store import MAX_SCENARIO_JSON_BYTES, MAX_VIEW_JSON_BYTES


@dataclass(frozen=True)
class Tamper:
    name: str
    sql: str  # an UPDATE … WHERE id = :id, with :value bound where it says so
    value: object  # bound as :value (None: not used)
    needle: str  # in the reason the store gives
    listed: bool  # the listing itself cannot read it (else only opening it fails)
    sqlite_only: bool = False  # PostgreSQL's column types refuse it at write
    pg_sql: str = ""  # the same tamper in PostgreSQL's spelling, where it differs


DEEP = "[" * 100_000 + "]" * 100_000
UPDATE = "UPDATE explorer_scenarios SET "
TAMPERS: tuple[Tamper, ...] = (
    Tamper("non-ISO created_at", UPDATE + "created_at = 'last tuesday' WHERE id = :id", None,
           "created_at 'last tuesday' is not a date and time", listed=True, sqlite_only=True),
    Tamper("integer created_at", UPDATE + "created_at = 12345 WHERE id = :id", None,
           "created_at 12345 is not a date and time", listed=True, sqlite_only=True),
    Tamper("non-integer schema_version", UPDATE + "schema_version = 'x' WHERE id = :id", None,
           "schema_version 'x' is not a whole number", listed=True, sqlite_only=True),
    Tamper("future schema_version", UPDATE + "schema_version = 99 WHERE id = :id", None,
           "newer version of the explorer (record format 99", listed=True),
    Tamper("zero schema_version", UPDATE + "schema_version = 0 WHERE id = :id", None,
           "schema_version 0 is no record format", listed=True),
    Tamper("name not UTF-8", UPDATE + "name = CAST(X'FF' AS TEXT) WHERE id = :id", None,
           "name is not UTF-8 text", listed=True, sqlite_only=True,
           pg_sql=UPDATE + "name = convert_from(CAST('\\xff' AS bytea), 'UTF8') WHERE id = :id"),
    Tamper("name too long", UPDATE + "name = :value WHERE id = :id", "n" * 5000,
           "name: at most 120 characters", listed=True, sqlite_only=True),
    Tamper("deep view_json", UPDATE + "view_json = :value WHERE id = :id", DEEP,
           "view_json nests 100000 levels deep, over the cap of 32", listed=False),
    Tamper("huge view_json", UPDATE + "view_json = :value WHERE id = :id",
           '{"hw": "' + "x" * (MAX_VIEW_JSON_BYTES + 10) + '"}',
           f"characters, over the cap of {MAX_VIEW_JSON_BYTES:,} bytes", listed=False),
    Tamper("view_json not an object", UPDATE + "view_json = '[1, 2]' WHERE id = :id", None,
           "view_json is not an object (list)", listed=False),
    Tamper("view_json with a nested value", UPDATE + "view_json = :value WHERE id = :id",
           '{"b": {"x": [1]}}', "view: 'b' must be a string or a number", listed=False),
    Tamper("deep scenario_json", UPDATE + "scenario_json = :value WHERE id = :id", DEEP,
           "scenario_json nests 100000 levels deep, over the cap of 32", listed=False),
    Tamper("invalid scenario_json", UPDATE + "scenario_json = :value WHERE id = :id",
           '{"batch": "many"}', "scenario_json: batch: Input should be a valid integer",
           listed=False),
    Tamper("scenario_json over the size cap",
           UPDATE + "scenario_json = :value WHERE id = :id", "x" * (MAX_SCENARIO_JSON_BYTES + 1),
           f"characters, over the cap of {MAX_SCENARIO_JSON_BYTES:,} bytes", listed=False),
)
TAMPER_BY_NAME = {t.name: t for t in TAMPERS}


def tamper(url: str, record_id: str, t: Tamper) -> None:
    """Apply one tamper to one row, with raw SQL through SQLAlchemy (raises where the database's
    types refuse it)."""
    engine = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.begin() as conn:
            params = {"id": record_id} if t.value is None else {"id": record_id, "value": t.value}
            sql = t.pg_sql if t.pg_sql and conn.dialect.name == "postgresql" else t.sql
            assert conn.execute(sa.text(sql), params).rowcount == 1
    finally:
        engine.dispose()


def corrupt_sqlite(path: Path, every: int = 11, seed: int = 7, offset: int = 100) -> Path:
    """Overwrite part of every `every`-th page after the schema with random bytes (the way a
    torn write or a bad disk leaves a file), from `offset` bytes into the page (0: its b-tree
    header too, damage every check finds whatever the records' random ids put on that page);
    returns a backup copy of the intact file."""
    backup = path.with_suffix(".backup")
    shutil.copy(path, backup)
    rng = random.Random(seed)
    size = os.path.getsize(path)
    with path.open("r+b") as fh:
        for page in range(3, size // 4096, every):
            fh.seek(page * 4096 + offset)
            fh.write(rng.randbytes(1500))
    return backup


def repair_sqlite(path: Path, repaired: Path) -> str:
    """README "Hosting"'s repair: `.recover` into a new file, or — with a sqlite3 built without
    the dbpage table (Debian 12's), which cannot recover — `.dump` with its closing ROLLBACK
    turned into COMMIT. Returns which one ran."""
    recover = subprocess.run(["sqlite3", str(path), ".recover"], capture_output=True, timeout=60)
    if recover.returncode == 0:
        how, script = "recover", recover.stdout
    else:
        dump = subprocess.run(["sqlite3", str(path), ".dump"], capture_output=True, check=True,
                              timeout=60)
        how = "dump"
        script = dump.stdout.replace(b"\nROLLBACK; -- due to errors\n", b"\nCOMMIT;\n")
    subprocess.run(["sqlite3", str(repaired)], input=script, check=True, timeout=60)
    return how
