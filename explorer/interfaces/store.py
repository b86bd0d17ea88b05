"""Saved scenarios: immutable records with unguessable ids, in SQLite or PostgreSQL.

A record holds the full `Scenario` (which embeds uploaded AL curves, calibrated hardware and
measured tables), the explorer's view values (the URL-state dict, SLO and price included; made and
read by explorer/interfaces/view_state.py), a name and a description. Saving never changes a
record: it creates a new one.

Where it is stored: `EXPLORER_DATABASE_URL` (PostgreSQL, e.g. `postgresql://user:pw@host/db`,
shared by every app replica) or else a SQLite file in `EXPLORER_DATA_DIR` (default
`./.explorer-data`), created on first use. The schema is migrated by Alembic on first use.

Every failure of the database is a `StoreError` with a one-line message: the explorer keeps
working without the store, and says why it cannot save.
"""

from __future__ import annotations

import json
import math
import os
import re
import secrets
import threading
import unicodedata
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

import sqlalchemy as sa
from pydantic import BaseModel, ConfigDict, ValidationError

from explorer.interfaces.store_schema import VERSION_TABLE, scenarios
from explorer.interfaces.view_state import MAX_PARAM_CHARS, view_of_scenario
from explorer.specs.scenario import Scenario

if TYPE_CHECKING:
    from alembic.config import Config

DATA_DIR_ENV = "EXPLORER_DATA_DIR"
DATABASE_URL_ENV = "EXPLORER_DATABASE_URL"
DEFAULT_DATA_DIR = ".explorer-data"
SQLITE_FILE = "scenarios.sqlite3"
MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"

ID_BYTES = 16  # secrets.token_urlsafe(16): 128 random bits, 22 URL-safe characters
ID_RE = re.compile(r"[A-Za-z0-9_-]{22,64}")
MAX_NAME_CHARS = 120
MAX_DESCRIPTION_CHARS = 2000
MAX_SCENARIO_JSON_BYTES = 64 * 2**20
MAX_VIEW_KEYS = 64
RECORD_SCHEMA_VERSION = 1  # the layout of view + scenario in a record
_SQLITE_READONLY_DBMOVED = 1032  # SQLite's extended code: the open file is gone from its path
_PG_MIGRATION_LOCK = 0x5EC0DEC  # pg_advisory_xact_lock key: one replica migrates at a time
_ALEMBIC_LOCK = threading.Lock()


APP_VERSION = "0.1.0"  # pyproject.toml's version (a test keeps them equal; images lack the file)


class StoreError(Exception):
    """A failure of the scenario store, as one line for a person."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class StoreUnavailable(StoreError):
    """The database cannot be reached, created or written."""

    def __init__(self, message: str, read_only: bool = False) -> None:
        super().__init__(message)
        self.read_only = read_only


class InvalidScenarioId(StoreError):
    """Not the shape of a scenario id."""


class ScenarioNotFound(StoreError):
    """A well-formed id that no saved scenario has."""


class InvalidRecord(StoreError):
    """A name, description, view or scenario that cannot be stored (too long, not JSON …), or a
    stored record this version cannot read."""


class ScenarioSummary(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    name: str
    description: str
    created_at: datetime


class StoredScenario(BaseModel):
    """One saved scenario, exactly as stored."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    name: str
    description: str
    created_at: datetime
    app_version: str
    schema_version: int
    view: dict[str, Any]
    scenario: Scenario

    @property
    def link(self) -> str:
        return share_link(self.id)


def share_link(scenario_id: str) -> str:
    """The relative link that opens a saved scenario in the explorer."""
    return f"?s={scenario_id}"


def parse_id(text: str) -> str:
    """A scenario id from an id, a `?s=<id>` link or a full URL; else InvalidScenarioId."""
    raw = (text or "").strip()
    candidate = raw
    if "s=" in raw:
        query = urlsplit(raw).query or raw.lstrip("?")
        found = parse_qs(query).get("s")
        candidate = found[0].strip() if found else ""
    if not ID_RE.fullmatch(candidate):
        shown = raw[:40] + ("…" if len(raw) > 40 else "")
        raise InvalidScenarioId(
            f"'{shown}' is not a scenario id (22–64 letters, digits, '-' or '_', as in ?s=<id>)")
    return candidate


def normalize_url(url: str) -> str:
    """PostgreSQL URLs use psycopg 3 whatever scheme they were written with."""
    for prefix in ("postgres://", "postgresql://", "postgresql+psycopg2://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    return url


def data_dir(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    return Path(env.get(DATA_DIR_ENV) or DEFAULT_DATA_DIR).expanduser().resolve()


def database_url(env: Mapping[str, str] | None = None) -> str:
    """EXPLORER_DATABASE_URL, else the SQLite file in the data directory."""
    env = os.environ if env is None else env
    url = (env.get(DATABASE_URL_ENV) or "").strip()
    if url:
        return normalize_url(url)
    return f"sqlite:///{data_dir(env) / SQLITE_FILE}"


def _clean(text: str, limit: int, field: str, multiline: bool) -> str:
    keep = "\n\t" if multiline else ""
    text = "".join(ch if ch in keep or unicodedata.category(ch)[0] != "C" else " "
                   for ch in unicodedata.normalize("NFC", text or "")).strip()
    if len(text) > limit:
        raise InvalidRecord(f"{field}: at most {limit} characters (got {len(text)})")
    return text


def _clean_view(view: Mapping[str, Any]) -> dict[str, Any]:
    if len(view) > MAX_VIEW_KEYS:
        raise InvalidRecord(f"view: at most {MAX_VIEW_KEYS} values (got {len(view)})")
    out: dict[str, Any] = {}
    for key, value in view.items():
        if not isinstance(key, str) or not 0 < len(key) <= 32:
            raise InvalidRecord(f"view: key {str(key)[:40]!r} is not a short string")
        if isinstance(value, float) and not math.isfinite(value):
            raise InvalidRecord(f"view: '{key}' is not a finite number")
        if value is not None and not isinstance(value, str | int | float | bool):
            raise InvalidRecord(f"view: '{key}' must be a string or a number")
        if isinstance(value, str) and len(value) > MAX_PARAM_CHARS:
            raise InvalidRecord(f"view: '{key}' is longer than {MAX_PARAM_CHARS} characters")
        out[key] = value
    return out


def _reason(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None) or exc
    lines = [x.strip() for x in str(orig).strip().splitlines() if x.strip()]
    return (lines[0] if lines else type(orig).__name__)[:300]


def _is_read_only(exc: BaseException) -> bool:
    orig = getattr(exc, "orig", None) or exc
    text = str(orig).lower()
    return ("readonly" in text or "read-only" in text or "read only" in text
            or getattr(orig, "sqlstate", None) == "25006")


class ScenarioStore:
    """Saved scenarios in one database (thread-safe; one per process and URL is enough)."""

    def __init__(self, url: str | None = None) -> None:
        self._url = normalize_url(url) if url else database_url()
        self._engine: sa.Engine | None = None
        self._lock = threading.Lock()
        self._migrated = False
        try:
            parsed = sa.make_url(self._url)
        except sa.exc.ArgumentError:
            self._display = "the configured database URL"
            self._dialect = "?"
        else:
            self._dialect = parsed.get_backend_name()
            self._display = (f"SQLite {parsed.database}" if self._dialect == "sqlite"
                             else parsed.render_as_string(hide_password=True))

    @property
    def url(self) -> str:
        """The database URL with any password hidden (safe to show)."""
        return self._display

    @property
    def dialect(self) -> str:
        return self._dialect

    def _unavailable(self, what: str, exc: BaseException) -> StoreUnavailable:
        orig = getattr(exc, "orig", None) or exc
        if getattr(orig, "sqlite_errorcode", None) == _SQLITE_READONLY_DBMOVED:
            return StoreUnavailable(f"the scenario store ({self._display}) was moved or deleted "
                                    f"while open, so {what} is not possible; it is opened "
                                    "afresh on the next try")
        if _is_read_only(exc):
            return StoreUnavailable(f"the scenario store ({self._display}) is read-only, so "
                                    f"{what} is not possible: {_reason(exc)}", read_only=True)
        return StoreUnavailable(f"the scenario store ({self._display}) is unavailable for "
                                f"{what}: {_reason(exc)}")

    @contextmanager
    def _guard(self, what: str) -> Iterator[None]:
        try:
            yield
        except StoreError:
            raise
        except sa.exc.IntegrityError:
            raise
        except (sa.exc.SQLAlchemyError, OSError) as exc:
            # Drop pooled connections: a SQLite file that vanished or was restored (a new
            # inode) stays unwritable through them until the process restarts; the next call
            # opens the database afresh (and re-checks its schema).
            engine = self._engine
            if engine is not None:
                engine.dispose()
            self._migrated = False
            raise self._unavailable(what, exc) from None

    def engine(self) -> sa.Engine:
        with self._lock:
            if self._engine is not None:
                return self._engine
            try:
                url = sa.make_url(self._url)
            except sa.exc.ArgumentError as exc:
                raise StoreUnavailable(f"{DATABASE_URL_ENV} is not a database URL: "
                                       f"{_reason(exc)}") from None
            kwargs: dict[str, Any] = {"pool_pre_ping": True}
            if url.get_backend_name() == "sqlite":
                db = url.database or ""
                if db and db != ":memory:" and not db.startswith("file:"):
                    try:
                        Path(db).parent.mkdir(parents=True, exist_ok=True)
                    except OSError as exc:
                        raise StoreUnavailable(
                            f"the scenario store's data directory {Path(db).parent} cannot be "
                            f"created ({exc.strerror or exc}); set {DATA_DIR_ENV} to a "
                            "writable folder") from None
                kwargs["connect_args"] = {"timeout": 30, "check_same_thread": False}
            elif url.get_backend_name() == "postgresql":
                kwargs["connect_args"] = {"connect_timeout": 5}
            try:
                self._engine = sa.create_engine(url, **kwargs)
            except (sa.exc.SQLAlchemyError, ImportError, ValueError) as exc:
                raise StoreUnavailable(f"the scenario store ({self._display}) cannot be "
                                       f"opened: {_reason(exc)}") from None
            return self._engine

    def _alembic_config(self, connection: sa.Connection | None = None) -> Config:
        from alembic.config import Config  # Alembic loads only when the store is used

        cfg = Config()
        cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
        cfg.attributes["connection"] = connection
        return cfg

    def head_revision(self) -> str:
        from alembic.script import ScriptDirectory

        head = ScriptDirectory.from_config(self._alembic_config()).get_current_head()
        assert head is not None
        return head

    def _current_revision(self, conn: sa.Connection) -> str | None:
        from alembic.runtime.migration import MigrationContext

        ctx = MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE})
        return ctx.get_current_revision()

    def migrate(self) -> None:
        """Bring the schema to the newest revision (first use; safe from many threads and
        replicas). A database already at the newest revision is only read."""
        if self._migrated:
            return
        engine = self.engine()
        head = self.head_revision()
        with self._lock:
            if self._migrated:
                return
            with self._guard("opening the store"):
                self._upgrade(engine, head)
            self._migrated = True

    def _upgrade(self, engine: sa.Engine, head: str) -> None:
        from alembic import command
        from alembic.script import ScriptDirectory

        with engine.connect() as conn:
            current = self._current_revision(conn)
        if current == head:
            return
        script = ScriptDirectory.from_config(self._alembic_config())
        if current is not None and current not in {r.revision for r in script.walk_revisions()}:
            raise StoreUnavailable(f"the scenario store ({self._display}) was migrated by a "
                                   f"newer version of the explorer (revision {current})")
        # One migrator at a time across processes and replicas: PostgreSQL's advisory lock, or
        # SQLite's write lock taken up front (its DDL would otherwise run outside a transaction).
        # The others wait, then find the schema at head. In one process, Alembic's module-level
        # context is not thread-safe: a process lock comes first (always in that order).
        with _ALEMBIC_LOCK, engine.connect() as conn:
            if conn.dialect.name == "postgresql":
                conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"),
                             {"k": _PG_MIGRATION_LOCK})
            elif conn.dialect.name == "sqlite":
                conn.exec_driver_sql("BEGIN IMMEDIATE")
            if self._current_revision(conn) != head:
                command.upgrade(self._alembic_config(conn), "head")
            conn.commit()

    def save(self, scenario: Scenario, view: Mapping[str, Any] | None = None, name: str = "",
             description: str = "") -> StoredScenario:
        """Store a new immutable record; its id is 128 random bits."""
        name = _clean(name, MAX_NAME_CHARS, "name", multiline=False)
        description = _clean(description, MAX_DESCRIPTION_CHARS, "description", multiline=True)
        view_values = _clean_view(view if view is not None else view_of_scenario(scenario))
        scenario_json = scenario.model_dump_json()
        if len(scenario_json.encode()) > MAX_SCENARIO_JSON_BYTES:
            raise InvalidRecord(f"scenario: {len(scenario_json.encode()) / 2**20:.0f} MiB of "
                                f"JSON; the limit is {MAX_SCENARIO_JSON_BYTES // 2**20} MiB")
        view_json = json.dumps(view_values, sort_keys=True, allow_nan=False)
        retried_read_only = False
        for _ in range(5):
            self.migrate()
            record_id = secrets.token_urlsafe(ID_BYTES)
            created = datetime.now(UTC)
            try:
                with self._guard("saving"), self.engine().begin() as conn:
                    conn.execute(scenarios.insert().values(
                        id=record_id, name=name, description=description, created_at=created,
                        app_version=APP_VERSION, schema_version=RECORD_SCHEMA_VERSION,
                        view_json=view_json, scenario_json=scenario_json))
            except sa.exc.IntegrityError:
                continue  # an id collision (2^-128): draw another
            except StoreUnavailable as exc:
                # A pooled SQLite connection opened while the file was read-only stays so; the
                # guard dropped the pool, so one fresh try tells whether it still is.
                if exc.read_only and not retried_read_only:
                    retried_read_only = True
                    continue
                raise
            return StoredScenario(
                id=record_id, name=name, description=description, created_at=created,
                app_version=APP_VERSION, schema_version=RECORD_SCHEMA_VERSION,
                view=view_values, scenario=scenario)
        raise StoreUnavailable(f"the scenario store ({self._display}) refused five new ids")

    def get(self, scenario_id: str) -> StoredScenario:
        sid = parse_id(scenario_id)
        self.migrate()
        with self._guard("reading"), self.engine().connect() as conn:
            row = conn.execute(sa.select(scenarios).where(scenarios.c.id == sid)).first()
        if row is None:
            raise ScenarioNotFound(f"no saved scenario has the id '{sid}'")
        if row.schema_version > RECORD_SCHEMA_VERSION:
            raise InvalidRecord(f"saved scenario '{sid}' was written by a newer version of the "
                                f"explorer (record format {row.schema_version}, app "
                                f"{row.app_version})")
        try:
            scenario = Scenario.model_validate_json(row.scenario_json)
            view = json.loads(row.view_json)
        except (ValidationError, ValueError) as exc:
            detail = exc.errors()[0] if isinstance(exc, ValidationError) else {"msg": str(exc)}
            where = ".".join(str(x) for x in detail.get("loc", ()))
            raise InvalidRecord(f"saved scenario '{sid}' cannot be read by this version: "
                                f"{where + ': ' if where else ''}{detail['msg']}") from None
        return StoredScenario(
            id=row.id, name=row.name, description=row.description,
            created_at=_utc(row.created_at), app_version=row.app_version,
            schema_version=row.schema_version, view=view if isinstance(view, dict) else {},
            scenario=scenario)

    def list(self, limit: int = 50, offset: int = 0) -> list[ScenarioSummary]:
        """The newest saved scenarios first (without their data)."""
        self.migrate()
        c = scenarios.c
        query = (sa.select(c.id, c.name, c.description, c.created_at)
                 .order_by(c.created_at.desc(), c.id).limit(max(0, limit)).offset(max(0, offset)))
        with self._guard("listing"), self.engine().connect() as conn:
            rows = conn.execute(query).all()
        return [ScenarioSummary(id=r.id, name=r.name, description=r.description,
                                created_at=_utc(r.created_at)) for r in rows]

    def count(self) -> int:
        self.migrate()
        with self._guard("counting"), self.engine().connect() as conn:
            return int(conn.execute(sa.select(sa.func.count()).select_from(scenarios))
                       .scalar_one())

    def dispose(self) -> None:
        with self._lock:
            if self._engine is not None:
                self._engine.dispose()
            self._engine = None
            self._migrated = False


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


_STORES: dict[str, ScenarioStore] = {}
_STORES_LOCK = threading.Lock()


def default_store() -> ScenarioStore:
    """The process's store for the configured database (read from the environment each call,
    so a changed EXPLORER_DATABASE_URL or EXPLORER_DATA_DIR takes effect)."""
    url = database_url()
    with _STORES_LOCK:
        store = _STORES.get(url)
        if store is None:
            store = _STORES[url] = ScenarioStore(url)
        return store


def reset_default_stores() -> None:
    with _STORES_LOCK:
        for store in _STORES.values():
            store.dispose()
        _STORES.clear()
