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

Each record is read on its own: a record that cannot be read (a tampered or damaged row, JSON
over the caps below) is listed as an `UnreadableScenario` with its id and the reason, and opening
it raises `InvalidRecord`; the others still list and open. After a failed read the database's
integrity is checked (SQLite `PRAGMA quick_check`, the full `integrity_check` on `scenario check`;
elsewhere a plain read of every row); a damaged
store says so (`StoreDamaged`) and refuses to save until it is repaired (README "Hosting",
`python -m explorer scenario check`).
"""

from __future__ import annotations

import json
import math
import os
import re
import secrets
import threading
import time
import unicodedata
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

import numpy as np
import sqlalchemy as sa
from pydantic import BaseModel, ConfigDict, ValidationError

from explorer.base.reading import load_json
from explorer.interfaces.store_schema import VERSION_TABLE, scenarios
from explorer.interfaces.view_state import MAX_PARAM_CHARS, decode_view, view_of_scenario
from explorer.specs.scenario import Scenario
from explorer.specs.settings import SETTING_BY_KEY

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
MAX_VIEW_KEYS = 64
# What a stored record's JSON may be, on saving and on reading (a record over a cap is refused
# before it is parsed): the scenario embeds measured tables; a view is at most MAX_VIEW_KEYS
# short values (a 200-character value is at most 2,400 bytes escaped); a Scenario nests about
# five levels and a view one, so deeper JSON is not ours (and would exhaust the parser's stack).
MAX_SCENARIO_JSON_BYTES = 64 * 2**20
MAX_VIEW_JSON_BYTES = 256 * 2**10
MAX_RECORD_JSON_DEPTH = 32
INTEGRITY_RECHECK_S = 30.0  # after an unreadable record, check the database at most this often
RECORD_SCHEMA_VERSION = 1  # the layout of view + scenario in a record
_SQLITE_READONLY_DBMOVED = 1032  # SQLite's extended code: the open file is gone from its path
_SQLITE_DAMAGE_CODES = {11, 26}  # SQLITE_CORRUPT, SQLITE_NOTADB (primary codes)
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


class StoreDamaged(StoreError):
    """The database failed its integrity check: saving stops until it is repaired."""

    def __init__(self, message: str, damage: str) -> None:
        super().__init__(message)
        self.damage = damage


class ScenarioSummary(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    name: str
    description: str
    created_at: datetime


class UnreadableScenario(BaseModel):
    """A saved record that cannot be read: listed with its id and why, never opened."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str  # as stored, control characters escaped
    reason: str


class StoreHealth(BaseModel):
    """What `ScenarioStore.check` found: the database's integrity and every record read."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    store: str
    damage: str | None  # why the database is damaged; None when its integrity check passed
    records: int  # rows read
    unreadable: tuple[UnreadableScenario, ...]
    # Records that open, but whose view holds a value a link refuses (a packed model nesting
    # 60,000 deep, an unknown preset): `?s=` opens them with that value's default and a warning.
    broken: tuple[UnreadableScenario, ...] = ()

    @property
    def healthy(self) -> bool:
        return self.damage is None and not self.unreadable and not self.broken


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


def _new_id() -> str:
    """128 random bits, URL-safe. Never with a leading '-', which a command line reads as a
    flag (`scenario show -x…`); redrawing those costs 1/64 of one character's 6 bits."""
    while True:
        record_id = secrets.token_urlsafe(ID_BYTES)
        if not record_id.startswith("-"):
            return record_id


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
        limit = max(MAX_PARAM_CHARS, SETTING_BY_KEY[key].max_chars
                    if key in SETTING_BY_KEY else 0)  # a packed model is longer (settings)
        if isinstance(value, str) and len(value) > limit:
            raise InvalidRecord(f"view: '{key}' is longer than {limit} characters")
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


# --- reading one record ----------------------------------------------------------------------
# Rows are fetched without SQLAlchemy's type processing and every value is checked here, so that
# a value of the wrong type (SQLite keeps whatever was written) makes only its record unreadable.

class _Unreadable(Exception):
    """Why one stored record cannot be read (printable: it may quote tampered text)."""

    def __init__(self, reason: str) -> None:
        super().__init__(_printable(reason))


def _raw(column: sa.ColumnElement[Any], name: str | None = None) -> sa.ColumnElement[Any]:
    """A column as the driver returns it (a DateTime processor would raise on a bad value)."""
    return sa.type_coerce(column, sa.types.NullType()).label(name or column.key)


def _bounded(column: sa.ColumnElement[Any], max_bytes: int) -> list[sa.ColumnElement[Any]]:
    """A JSON column, fetched only when its length is within the cap, and its length."""
    length = sa.func.length(column)
    return [sa.case((length <= max_bytes, _raw(column)), else_=sa.null()).label(column.key),
            length.label(f"{column.key}_length")]


def _printable(text: str) -> str:
    """Text with control and other non-printing characters escaped (safe on a terminal)."""
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)


def _quoted(value: object) -> str:
    """A stored value, quoted briefly with control characters escaped."""
    text = repr(value)
    return text[:40] + ("…" if len(text) > 40 else "")


def _shown_id(value: object) -> str:
    return value if isinstance(value, str) and ID_RE.fullmatch(value) else _quoted(value)


def _not_text(value: object, field: str) -> _Unreadable:
    what = "UTF-8 text" if isinstance(value, bytes) else "text"
    return _Unreadable(f"{field} is not {what} ({_quoted(value)})")


def _read_text(value: object, field: str, limit: int, multiline: bool) -> str:
    if not isinstance(value, str):
        raise _not_text(value, field)
    try:
        return _clean(value, limit, field, multiline)
    except InvalidRecord as exc:
        raise _Unreadable(exc.message) from None


def _read_created(value: object) -> datetime:
    if isinstance(value, datetime):
        return _utc(value)
    if isinstance(value, str):
        try:
            return _utc(datetime.fromisoformat(value))
        except ValueError:
            pass
    raise _Unreadable(f"created_at {_quoted(value)} is not a date and time")


def _read_version(value: object, app_version: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Unreadable(f"schema_version {_quoted(value)} is not a whole number")
    if value > RECORD_SCHEMA_VERSION:
        raise _Unreadable(f"it was written by a newer version of the explorer (record format "
                          f"{value}, app {str(app_version)[:32]})")
    if value < 1:
        raise _Unreadable(f"schema_version {value} is no record format")
    return value


def json_depth(text: str) -> int:
    """How deep JSON text nests, without parsing it (linear; brackets in strings not counted)."""
    data = _JSON_STRING.sub(b'""', text.encode("utf-8", "surrogatepass"))
    steps = np.frombuffer(data.translate(None, _NOT_BRACKETS), dtype=np.uint8)
    if not steps.size:
        return 0
    depth = np.cumsum(np.where((steps == ord("[")) | (steps == ord("{")), 1, -1))
    return int(depth.max())


_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def _read_json_text(value: object, length: object, field: str, max_bytes: int) -> str:
    if isinstance(length, int) and length > max_bytes:  # never fetched
        raise _Unreadable(f"{field} has {length:,} characters, over the cap of "
                          f"{max_bytes:,} bytes")
    if not isinstance(value, str):
        raise _not_text(value, field)
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise _Unreadable(f"{field} is {size:,} bytes, over the cap of {max_bytes:,}")
    depth = json_depth(value)
    if depth > MAX_RECORD_JSON_DEPTH:
        raise _Unreadable(f"{field} nests {depth} levels deep, over the cap of "
                          f"{MAX_RECORD_JSON_DEPTH}")
    return value


def _read_view(value: object, length: object) -> dict[str, Any]:
    text = _read_json_text(value, length, "view_json", MAX_VIEW_JSON_BYTES)
    try:  # within the caps every JSON reader meets (nesting, values, number lengths)
        view = load_json(text)
    except ValueError as exc:
        raise _Unreadable(f"view_json is not JSON: {str(exc)[:120]}") from None
    if not isinstance(view, dict):
        raise _Unreadable(f"view_json is not an object ({type(view).__name__})")
    try:
        return _clean_view(view)
    except InvalidRecord as exc:
        raise _Unreadable(exc.message) from None


def stored_scenario(text: str) -> Scenario:
    """A record's scenario JSON as the Scenario it meant when saved. A record without
    `output_tokens` was saved before whole requests were the default (every record since dumps
    every field): it priced decode steps only, and keeps doing so (as its link of version 1)."""
    try:
        data = json.loads(text)
    except ValueError:
        return Scenario.model_validate_json(text)  # pydantic names what is wrong, as before
    if isinstance(data, dict) and "output_tokens" not in data:
        data["output_tokens"] = None
    return Scenario.model_validate(data)


def _read_scenario(value: object, length: object) -> Scenario:
    text = _read_json_text(value, length, "scenario_json", MAX_SCENARIO_JSON_BYTES)
    try:
        return stored_scenario(text)
    except ValidationError as exc:
        detail = exc.errors()[0]
        where = ".".join(str(x) for x in detail.get("loc", ()))
        raise _Unreadable(f"scenario_json: {where + ': ' if where else ''}"
                          f"{str(detail['msg'])[:200]}") from None


def _summary_of(row: sa.Row[Any]) -> ScenarioSummary:
    """The listed fields of a row (raises _Unreadable)."""
    if not isinstance(row.id, str) or not ID_RE.fullmatch(row.id):
        raise _Unreadable("its id is not a scenario id")
    _read_version(row.schema_version, row.app_version)
    return ScenarioSummary(
        id=row.id, name=_read_text(row.name, "name", MAX_NAME_CHARS, multiline=False),
        description=_read_text(row.description, "description", MAX_DESCRIPTION_CHARS,
                               multiline=True),
        created_at=_read_created(row.created_at))


def _record_of(row: sa.Row[Any]) -> StoredScenario:
    """A whole row as the record it stores (raises _Unreadable)."""
    summary = _summary_of(row)
    app_version = row.app_version
    if not isinstance(app_version, str) or len(app_version) > 32:
        raise _Unreadable(f"app_version {_quoted(app_version)} is not a version")
    return StoredScenario(
        **summary.model_dump(), app_version=app_version, schema_version=row.schema_version,
        view=_read_view(row.view_json, row.view_json_length),
        scenario=_read_scenario(row.scenario_json, row.scenario_json_length))


_c = scenarios.c
_SUMMARY_COLUMNS = [_raw(_c.id), _raw(_c.name), _raw(_c.description), _raw(_c.created_at),
                    _raw(_c.app_version), _raw(_c.schema_version)]
_RECORD_COLUMNS = [*_SUMMARY_COLUMNS, *_bounded(_c.view_json, MAX_VIEW_JSON_BYTES),
                   *_bounded(_c.scenario_json, MAX_SCENARIO_JSON_BYTES)]


def _sqlite_text(data: bytes) -> str | bytes:
    """SQLite text as str; bytes that are not UTF-8 stay bytes, so only their record is
    unreadable (the default decoder raises and takes the whole listing down)."""
    try:
        return data.decode()
    except UnicodeDecodeError:
        return data


def _says_damaged(exc: BaseException) -> bool:
    """Whether a database error reports damage: SQLite's CORRUPT or NOTADB; PostgreSQL's
    internal (data or index corrupted) and system (I/O) error classes."""
    orig = getattr(exc, "orig", None) or exc
    code = getattr(orig, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in _SQLITE_DAMAGE_CODES
    state = getattr(orig, "sqlstate", None)
    return isinstance(state, str) and state[:2] in ("XX", "58")


def _on_sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
    dbapi_connection.text_factory = _sqlite_text


class ScenarioStore:
    """Saved scenarios in one database (thread-safe; one per process and URL is enough)."""

    def __init__(self, url: str | None = None) -> None:
        self._url = normalize_url(url) if url else database_url()
        self._engine: sa.Engine | None = None
        self._lock = threading.RLock()  # re-entered by a failed migration's integrity check
        self._migrated = False
        self._check_lock = threading.Lock()  # one integrity check at a time (never under _lock)
        self._damage: str | None = None  # set by a failed integrity check; saving stops
        self._checked_at: float | None = None  # monotonic time of the last integrity check
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

    @property
    def damage(self) -> str | None:
        """Why the database is damaged, as its last integrity check found; None if not known."""
        return self._damage

    def _damaged(self, what: str) -> StoreDamaged:
        damage = self._damage or "its integrity check failed"
        return StoreDamaged(
            f"the scenario store ({self._display}) is damaged, so {what} is not possible: "
            f"{damage}. Saving is stopped until it is repaired (`python -m explorer scenario "
            "check`; README \"Hosting\")", damage)

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
            # Not reaching the database (or its locks, or a read-only mount) says nothing about
            # its contents; any other failure may be damage, which the integrity check tells.
            if ((not isinstance(exc, sa.exc.OperationalError) or _says_damaged(exc))
                    and self.integrity_check() is not None):
                raise self._damaged(what) from None
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
                engine = sa.create_engine(url, **kwargs)
            except (sa.exc.SQLAlchemyError, ImportError, ValueError) as exc:
                raise StoreUnavailable(f"the scenario store ({self._display}) cannot be "
                                       f"opened: {_reason(exc)}") from None
            if url.get_backend_name() == "sqlite":
                sa.event.listen(engine, "connect", _on_sqlite_connect)
            self._engine = engine
            return engine

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

    def integrity_check(self, full: bool = False) -> str | None:
        """Check the database and remember the answer (damage stops saving until a later check
        passes): SQLite's `PRAGMA quick_check` (`full`: `integrity_check`, which also finds
        index entries that no longer match their rows), elsewhere a plain read of every row.
        Returns why it is damaged, or None; a database this cannot reach keeps the last
        answer."""
        try:
            engine = self.engine()  # before the check lock: migrate() holds _lock, then checks
        except StoreUnavailable:
            return self._damage
        with self._check_lock:
            try:
                with engine.connect() as conn:
                    damage = _integrity_of(conn, full)
            except (sa.exc.SQLAlchemyError, OSError) as exc:
                if not _says_damaged(exc):
                    return self._damage
                damage = _reason(exc)
            self._damage = damage
            self._checked_at = time.monotonic()
            return damage

    def _after_unreadable(self) -> None:
        """A record could not be read: perhaps the database is damaged (checked now and then,
        as a listing with a tampered record may be read on every rerun)."""
        last = self._checked_at
        if last is None or time.monotonic() - last >= INTEGRITY_RECHECK_S:
            self.integrity_check()

    def _ready_to_save(self) -> None:
        """A damaged store is checked again before each save (a repaired or restored file is
        opened afresh); a SQLite file also before this process first saves into it, as another
        process may have found it damaged (PostgreSQL's plain read of every row is too costly
        for that: a failed read there starts the check)."""
        if self._damage is not None:
            with self._lock:
                if self._engine is not None:
                    self._engine.dispose()
                self._migrated = False
        first_sqlite_save = self._checked_at is None and self._dialect == "sqlite"
        if self._damage is not None or first_sqlite_save:
            self.integrity_check()
        if self._damage is not None:
            raise self._damaged("saving")

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
        if len(view_json.encode()) > MAX_VIEW_JSON_BYTES:
            raise InvalidRecord(f"view: {len(view_json.encode()):,} bytes of JSON; the limit "
                                f"is {MAX_VIEW_JSON_BYTES:,}")
        self.migrate()
        self._ready_to_save()
        retried_read_only = False
        for _ in range(5):
            self.migrate()
            record_id = _new_id()
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
        """One saved record; InvalidRecord (naming the field) where it cannot be read."""
        sid = parse_id(scenario_id)
        self.migrate()
        query = sa.select(*_RECORD_COLUMNS).where(scenarios.c.id == sid)
        with self._guard("reading"), self.engine().connect() as conn:
            row = conn.execute(query).first()
        if row is None:
            raise ScenarioNotFound(f"no saved scenario has the id '{sid}'")
        try:
            return _record_of(row)
        except _Unreadable as exc:
            self._after_unreadable()
            raise InvalidRecord(f"saved scenario '{sid}' cannot be read: {exc}") from None

    def list(self, limit: int = 50, offset: int = 0
             ) -> list[ScenarioSummary | UnreadableScenario]:
        """The newest saved scenarios first (without their data); a record whose listed fields
        cannot be read is an UnreadableScenario in its place."""
        self.migrate()
        c = scenarios.c
        query = (sa.select(*_SUMMARY_COLUMNS).order_by(c.created_at.desc(), c.id)
                 .limit(max(0, limit)).offset(max(0, offset)))
        with self._guard("listing"), self.engine().connect() as conn:
            rows = conn.execute(query).all()
        out: list[ScenarioSummary | UnreadableScenario] = []
        for row in rows:
            try:
                out.append(_summary_of(row))
            except _Unreadable as exc:
                out.append(UnreadableScenario(id=_shown_id(row.id), reason=str(exc)))
        if len(out) > sum(isinstance(r, ScenarioSummary) for r in out):
            self._after_unreadable()
        return out

    def check(self) -> StoreHealth:
        """Every record read as `get` reads it, then the database's integrity check."""
        unreadable: list[UnreadableScenario] = []
        broken: list[UnreadableScenario] = []
        records = 0
        try:
            self.migrate()
            with self._guard("checking"), self.engine().connect() as conn:
                rows = conn.execution_options(yield_per=64).execute(
                    sa.select(*_RECORD_COLUMNS))  # in storage order: no index is trusted
                for row in rows:
                    records += 1
                    try:
                        record = _record_of(row)
                    except _Unreadable as exc:
                        unreadable.append(UnreadableScenario(id=_shown_id(row.id),
                                                             reason=str(exc)))
                        continue
                    # The view as `?s=` reads it (explorer/interfaces/view_state.py).
                    state = decode_view(record.view)
                    if state.fell_back:
                        broken.append(UnreadableScenario(
                            id=record.id, reason="; ".join(state.warnings)[:500]))
        except StoreDamaged:
            pass  # the guard's integrity check has the reason; the records read are kept
        damage = self.integrity_check(full=True)  # asked for: the thorough check
        return StoreHealth(store=self._display, damage=damage, records=records,
                           unreadable=tuple(sorted(unreadable, key=lambda u: u.id)),
                           broken=tuple(sorted(broken, key=lambda u: u.id)))

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


def _integrity_of(conn: sa.Connection, full: bool = False) -> str | None:
    """Why the database is damaged, or None (raises the driver's error where it cannot tell).
    The guard before saving runs SQLite's quick check; `scenario check` runs the full one."""
    if conn.dialect.name == "sqlite":
        pragma = "integrity_check" if full else "quick_check"
        rows = [str(r[0]) for r in conn.exec_driver_sql(f"PRAGMA {pragma}(5)")]
        if rows == ["ok"]:
            return None
        lines = [x.strip() for r in rows for x in r.splitlines()
                 if x.strip() and not x.startswith("***")]  # "*** in database main ***"
        text = "; ".join(lines) or f"PRAGMA {pragma} failed"
        return text[:200] + ("…" if len(text) > 200 else "")
    if not sa.inspect(conn).has_table(scenarios.name):
        return None  # not created yet
    c = scenarios.c
    every_value = sa.func.sum(
        sa.func.length(c.id) + sa.func.length(c.name) + sa.func.length(c.description)
        + sa.func.length(c.app_version) + sa.func.length(c.view_json)
        + sa.func.length(c.scenario_json) + c.schema_version)
    conn.execute(sa.select(sa.func.count(c.created_at), every_value)).one()
    return None


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
