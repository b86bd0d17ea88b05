"""The scenario store on SQLite and on a real PostgreSQL server (scripts/ci_postgres.sh).

The PostgreSQL URL comes from EXPLORER_TEST_DATABASE_URL (`make test` exports it) or the file the
script writes. Without it the PostgreSQL cases skip locally and FAIL in CI (CI=true).
"""

from __future__ import annotations

import base64
import json
import secrets
import shutil
import subprocess
import sys
import threading
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from explorer.interfaces import view_state as us
from explorer.interfaces.store import (
    APP_VERSION,
    ID_BYTES,
    MAX_RECORD_JSON_DEPTH,
    InvalidRecord,
    InvalidScenarioId,
    ScenarioNotFound,
    ScenarioStore,
    ScenarioSummary,
    StoreDamaged,
    StoreUnavailable,
    UnreadableScenario,
    json_depth,
    parse_id,
)
from explorer.interfaces.store_schema import VERSION_TABLE, metadata
from explorer.interfaces.view_state import decode_view, view_of_scenario
from explorer.specs import settings
from explorer.specs.hardware import HardwareOverrides
from explorer.specs.measured import AcceptanceCurve, StepTimings
from explorer.specs.scenario import Acceptance, Scenario
from tests.support.paths import ROOT
from tests.support.postgres import postgres_url as shared_postgres_url
from tests.support.tamper import (
    DEEP,
    TAMPERS,
    Tamper,
    corrupt_sqlite,
    repair_sqlite,
    tamper,
)


def postgres_url() -> str:
    return shared_postgres_url("the store tests")


@pytest.fixture
def pg_database() -> Iterator[str]:
    """A fresh database on the test server for one test, dropped afterwards."""
    base = sa.make_url(postgres_url()).set(drivername="postgresql+psycopg")
    name = f"explorer_t_{secrets.token_hex(6)}"
    admin = sa.create_engine(base, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    except sa.exc.OperationalError as exc:
        admin.dispose()
        pytest.fail(f"the PostgreSQL test server at {base.host}:{base.port} is not usable: "
                    f"{str(exc.orig).splitlines()[0]}")
    try:
        yield base.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'data' / 'scenarios.sqlite3'}"
    return str(request.getfixturevalue("pg_database"))


@pytest.fixture
def store(db_url: str) -> Iterator[ScenarioStore]:
    s = ScenarioStore(db_url)
    yield s
    s.dispose()


CURVE = AcceptanceCurve(label="al_curve.csv: eagle3 on llama, gsm8k", draft_lens=(1, 2, 3, 5, 7),
                        acceptance_lengths=(1.8, 2.4, 2.9, 3.5, 3.9), source="file al_curve.csv")


def rich_scenario(batch: int = 8) -> Scenario:
    """Uploaded curve + calibrated hardware + measured step table: all must travel."""
    return Scenario(
        batch=batch, draft_len=5, tp=4, context=32768,
        acceptance=Acceptance(kind="curve", curve=CURVE),
        hardware_overrides=HardwareOverrides(gemm_compute_efficiency=0.61,
                                             launch_latency_s=3.1e-6, label="fitted to mine"),
        measured_steps=StepTimings(batch=(1, 8, 8), draft_len=(0, 0, 3),
                                   step_time_s=(0.011, 0.0125, 0.0161), source="bench.csv"),
    )


def test_round_trip_keeps_scenario_data_view_and_text(store: ScenarioStore):
    sc = rich_scenario()
    view = {**view_of_scenario(sc), "slo": 42.5, "usd": 2.123456789}
    name, desc = "70B on 4×H200 — <b>not bold</b>", "line one\nline two with 'quotes' & ünïcode"
    saved = store.save(sc, view, name=name, description=desc)
    assert len(saved.id) >= 22 and parse_id(saved.id) == saved.id
    assert saved.link == f"?s={saved.id}"
    got = store.get(saved.id)
    assert got == saved
    assert got.scenario.model_dump_json() == sc.model_dump_json()
    assert got.scenario.acceptance.curve == CURVE
    assert got.scenario.hardware_overrides == sc.hardware_overrides
    assert got.scenario.measured_steps == sc.measured_steps
    assert got.view["slo"] == 42.5 and got.view["usd"] == 2.123456789
    assert (got.name, got.description) == (name, desc)
    assert got.created_at.tzinfo is not None
    assert got.schema_version == 1 and got.app_version
    assert [s.id for s in store.list()] == [saved.id]


def test_saving_again_creates_a_new_record_and_never_changes_the_old(store: ScenarioStore):
    first = store.save(Scenario(batch=8), name="first")
    second = store.save(Scenario(batch=8), name="first")
    third = store.save(Scenario(batch=16), name="changed")
    assert len({first.id, second.id, third.id}) == 3
    assert store.get(first.id) == first and store.get(first.id).scenario.batch == 8
    assert store.count() == 3
    assert not hasattr(store, "update") and not hasattr(store, "delete")
    listed = store.list()
    assert {s.id for s in listed} == {first.id, second.id, third.id}
    assert listed[0].created_at >= listed[-1].created_at


def test_ids_are_128_random_bits(tmp_path: Path):
    s = ScenarioStore(f"sqlite:///{tmp_path / 'ids.sqlite3'}")
    ids = [s.save(Scenario()).id for _ in range(40)]
    assert len(set(ids)) == len(ids)
    assert not any(rid.startswith("-") for rid in ids)  # `scenario show ID` takes every id
    for rid in ids:
        raw = base64.urlsafe_b64decode(rid + "=" * (-len(rid) % 4))
        assert len(raw) == ID_BYTES >= 16
    s.dispose()


@pytest.mark.slow  # another Python: seconds, out of the quick loop
def test_restart_new_engine_and_new_process_read_the_same_record(db_url: str):
    a = ScenarioStore(db_url)
    saved = a.save(rich_scenario(), name="survives restarts")
    a.dispose()
    b = ScenarioStore(db_url)
    assert b.get(saved.id) == saved
    b.dispose()
    code = ("import sys; from explorer.interfaces.store import ScenarioStore; "
            "print(ScenarioStore(sys.argv[1]).get(sys.argv[2]).model_dump_json())")
    out = subprocess.run([sys.executable, "-c", code, db_url, saved.id], cwd=ROOT,
                         capture_output=True, text=True, check=True, timeout=120).stdout
    assert json.loads(out) == json.loads(saved.model_dump_json())


def test_concurrent_saves_from_many_threads_lose_and_mix_nothing(store: ScenarioStore):
    threads, per_thread = 12, 5
    results: list[tuple[str, int, str]] = []
    errors: list[BaseException] = []
    lock = threading.Lock()
    start = threading.Barrier(threads)

    def worker(t: int) -> None:
        try:
            start.wait()
            for j in range(per_thread):
                batch = settings.BATCH_OPTIONS[(t * per_thread + j) % len(settings.BATCH_OPTIONS)]
                name = f"thread {t} save {j}"
                rec = store.save(Scenario(batch=batch, draft_len=t % 8), name=name)
                with lock:
                    results.append((rec.id, batch, name))
        except BaseException as exc:
            with lock:
                errors.append(exc)

    pool = [threading.Thread(target=worker, args=(t,)) for t in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join(timeout=120)
    assert not errors, errors[:3]
    assert len(results) == threads * per_thread
    assert len({r[0] for r in results}) == len(results)
    assert store.count() == len(results)
    for rid, batch, name in results:
        got = store.get(rid)
        assert (got.scenario.batch, got.name) == (batch, name)
        assert got.scenario.draft_len == int(name.split()[1]) % 8


def test_unknown_id_is_named(store: ScenarioStore):
    store.save(Scenario())
    missing = "A" * 22
    with pytest.raises(ScenarioNotFound, match=f"no saved scenario has the id '{missing}'"):
        store.get(missing)


@pytest.mark.parametrize("bad", ["", "abc", "../../etc/passwd", "x" * 100, "<script>a</script>",
                                 "a b c d e f g h i j k l m n", "?s=", "' OR 1=1 --aaaaaaaaaaa"])
def test_malformed_ids_get_one_clear_line(store: ScenarioStore, bad: str):
    with pytest.raises(InvalidScenarioId) as info:
        store.get(bad)
    msg = str(info.value)
    assert "is not a scenario id" in msg and "\n" not in msg and len(msg) < 200


def test_links_and_urls_are_accepted_as_ids():
    sid = "Abc_def-0123456789ABCDEFG"
    for text in (sid, f"?s={sid}", f" https://x.example/explorer?v=2&s={sid} ", f"s={sid}"):
        assert parse_id(text) == sid


def test_read_only_database_reads_but_refuses_to_save(db_url: str):
    rw = ScenarioStore(db_url)
    saved = rw.save(Scenario(batch=4), name="before read-only")
    rw.dispose()
    url = sa.make_url(db_url)
    if url.get_backend_name() == "sqlite":
        ro_url = f"sqlite:///file:{url.database}?mode=ro&uri=true"
    else:
        ro_url = (url.update_query_dict({"options": "-c default_transaction_read_only=on"})
                  .render_as_string(hide_password=False))
    ro = ScenarioStore(ro_url)
    assert ro.get(saved.id) == saved
    with pytest.raises(StoreUnavailable, match="read-only, so saving is not possible"):
        ro.save(Scenario(), name="refused")
    ro.dispose()


def test_missing_database_is_unavailable_with_a_reason(tmp_path: Path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    s = ScenarioStore(f"sqlite:///{blocker / 'data' / 'scenarios.sqlite3'}")
    for call in (lambda: s.save(Scenario()), lambda: s.get("A" * 22), s.list):
        with pytest.raises(StoreUnavailable, match=r"data directory .* cannot be created"):
            call()
    gone = ScenarioStore("postgresql://someone:s3cret@127.0.0.1:1/nothing")
    with pytest.raises(StoreUnavailable) as info:
        gone.save(Scenario())
    assert "unavailable" in str(info.value) and "s3cret" not in str(info.value)
    assert "***" in gone.url


def test_sqlite_default_location_is_the_data_dir(tmp_path: Path, monkeypatch):
    from explorer.interfaces import store as store_mod

    monkeypatch.delenv(store_mod.DATABASE_URL_ENV, raising=False)
    monkeypatch.setenv(store_mod.DATA_DIR_ENV, str(tmp_path / "dd"))
    store_mod.reset_default_stores()
    s = store_mod.default_store()
    saved = s.save(Scenario())
    assert (tmp_path / "dd" / store_mod.SQLITE_FILE).is_file()
    assert s.get(saved.id) == saved
    monkeypatch.setenv(store_mod.DATABASE_URL_ENV, "postgres://u:p@127.0.0.1:1/x")
    assert store_mod.default_store().url.startswith("postgresql+psycopg://u:***@")
    store_mod.reset_default_stores()


def test_name_description_and_view_limits(store: ScenarioStore):
    with pytest.raises(InvalidRecord, match="name: at most 120"):
        store.save(Scenario(), name="n" * 121)
    with pytest.raises(InvalidRecord, match="description: at most 2000"):
        store.save(Scenario(), description="d" * 2001)
    with pytest.raises(InvalidRecord, match="view: 'b'"):
        store.save(Scenario(), view={"b": [1, 2]})
    rec = store.save(Scenario(), name="tab\there\x00\x1b[31m", description="a\nb\x07")
    assert rec.name == "tab here  [31m" and rec.description == "a\nb"
    assert store.get(rec.id).name == rec.name


def test_schema_is_alembic_head_and_matches_the_tables(store: ScenarioStore):
    store.migrate()
    with store.engine().connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE})
        assert ctx.get_current_revision() == store.head_revision()
        assert compare_metadata(ctx, metadata) == []
    store.migrate()  # idempotent
    assert store.count() == 0


def test_view_of_a_scenario_reproduces_it_through_the_url_state():
    for sc in (Scenario(batch=8, draft_len=7, tp=4, group=16, rho=0.1),
               Scenario(acceptance=Acceptance(kind="iid", alpha=0.55)),
               Scenario(mechanism="external", draft_model="llama-3.2-1b")):
        state = decode_view(view_of_scenario(sc, slo=50.0))
        assert state.warnings == ()
        assert us.scenario_from_view(state.values) == sc
        assert state.values["slo"] == 50.0
    odd = decode_view(view_of_scenario(Scenario(batch=5)))
    assert any("saved value 'b=5'" in w for w in odd.warnings)


def test_records_carry_the_projects_version():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert meta["project"]["version"] == APP_VERSION


def test_replicas_opening_a_new_database_at_once_all_work(db_url: str):
    """Several app processes' first use of one empty database: one migrates, none fails."""
    replicas = [ScenarioStore(db_url) for _ in range(6)]
    ids: list[str] = []
    errors: list[BaseException] = []
    start = threading.Barrier(len(replicas))

    def first_use(s: ScenarioStore) -> None:
        try:
            start.wait()
            ids.append(s.save(Scenario(), name="first").id)
        except BaseException as exc:
            errors.append(exc)

    pool = [threading.Thread(target=first_use, args=(s,)) for s in replicas]
    for th in pool:
        th.start()
    for th in pool:
        th.join(timeout=120)
    assert not errors, errors[:3]
    assert replicas[0].count() == len(replicas) == len(set(ids))
    for s in replicas:
        s.dispose()


# --- one record at a time: tampered rows, caps, a damaged database ---------------------------

@pytest.mark.parametrize("t", TAMPERS, ids=lambda t: t.name)
def test_a_tampered_record_is_unreadable_alone_and_the_others_list_and_open(
        db_url: str, store: ScenarioStore, t: Tamper):
    intact = store.save(Scenario(batch=4), name="intact")
    bad = store.save(Scenario(batch=8), name="to be tampered")
    if t.sqlite_only and store.dialect == "postgresql":
        with pytest.raises(sa.exc.DBAPIError):  # the column's type refuses it
            tamper(db_url, bad.id, t)
        return
    tamper(db_url, bad.id, t)

    listed = store.list()
    assert [r for r in listed if r.id == intact.id] == [ScenarioSummary(
        id=intact.id, name="intact", description="", created_at=intact.created_at)]
    (entry,) = [r for r in listed if r.id == bad.id]
    if t.listed:
        assert isinstance(entry, UnreadableScenario) and t.needle in entry.reason
    else:
        assert isinstance(entry, ScenarioSummary) and entry.name == "to be tampered"
    assert store.get(intact.id) == intact

    with pytest.raises(InvalidRecord) as info:
        store.get(bad.id)
    message = info.value.message
    assert message.startswith(f"saved scenario '{bad.id}' cannot be read: ")
    assert t.needle in message and "\n" not in message and len(message) < 400

    health = store.check()
    assert health.damage is None and health.records == 2 and not health.healthy
    assert [(u.id, t.needle in u.reason) for u in health.unreadable] == [(bad.id, True)]
    assert store.damage is None
    assert store.get(store.save(Scenario(batch=16)).id).scenario.batch == 16, "saving goes on"


def test_a_healthy_store_checks_healthy_and_old_records_keep_opening(db_url: str,
                                                                     store: ScenarioStore):
    saved = store.save(rich_scenario(), view_of_scenario(rich_scenario(), slo=40.0), name="a")
    health = store.check()
    assert health.healthy and health.records == 1 and health.unreadable == ()
    assert store.get(saved.id) == saved  # every field read back, as saved


def test_unreadable_ids_and_reasons_are_escaped_text(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 's.sqlite3'}"
    s = ScenarioStore(url)
    odd_id, odd_view = s.save(Scenario()), s.save(Scenario())
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE explorer_scenarios SET id = :new WHERE id = :id"),
                     {"new": "\x1b]0;owned\x07" + "A" * 22, "id": odd_id.id})
        conn.execute(sa.text("UPDATE explorer_scenarios SET view_json = :v WHERE id = :id"),
                     {"v": r'{"\u001b[31m": [1]}', "id": odd_view.id})
    engine.dispose()
    (entry,) = [r for r in s.list() if isinstance(r, UnreadableScenario)]
    assert "its id is not a scenario id" in entry.reason
    assert entry.id.startswith("'\\x1b]0;owned\\x07") and "\x1b" not in entry.id
    with pytest.raises(InvalidRecord) as info:
        s.get(odd_view.id)
    assert "\x1b" not in info.value.message and "\\x1b[31m" in info.value.message
    reasons = [u.reason for u in s.check().unreadable]
    assert len(reasons) == 2 and not any("\x1b" in r for r in reasons)
    s.dispose()


def test_json_depth_counts_nesting_not_brackets_in_strings():
    assert json_depth('{"a": [1, {"b": "[[[[{{{{"}], "c": "\\"]]]"}') == 3
    assert json_depth(DEEP) == 100_000
    assert json_depth('"plain"') == 0 and json_depth("") == 0
    assert json_depth(rich_scenario().model_dump_json()) <= MAX_RECORD_JSON_DEPTH // 4


def test_the_view_cap_holds_every_view_that_can_be_saved(store: ScenarioStore,
                                                         monkeypatch: pytest.MonkeyPatch):
    biggest = {f"key-{i:02}-" + "k" * 24: "\U0001F600" * 200 for i in range(64)}  # 12 B/char
    assert store.get(store.save(Scenario(), view=biggest).id).view == biggest
    from explorer.interfaces import store as store_mod

    monkeypatch.setattr(store_mod, "MAX_VIEW_JSON_BYTES", 1000)  # the one cap, both ways
    with pytest.raises(InvalidRecord, match=r"view: .* bytes of JSON; the limit is 1,000"):
        store.save(Scenario(), view=biggest)


def _many_records(s: ScenarioStore) -> list[str]:
    steps = StepTimings(batch=(8,) * 300, draft_len=(0,) * 300, step_time_s=(0.01,) * 300,
                        source="bench.csv")
    return [s.save(Scenario(measured_steps=steps) if i % 2 else Scenario(batch=8),
                   name=f"record {i}").id for i in range(40)]


def test_a_damaged_sqlite_file_is_said_so_saving_stops_and_recover_repairs_it(tmp_path: Path):
    path = tmp_path / "data" / "scenarios.sqlite3"
    url = f"sqlite:///{path}"
    first = ScenarioStore(url)
    ids = _many_records(first)
    first.dispose()
    backup = corrupt_sqlite(path)

    s = ScenarioStore(url)
    with pytest.raises(StoreDamaged) as info:
        s.list()
    msg = info.value.message
    assert "is damaged, so listing is not possible" in msg and "Saving is stopped" in msg
    assert "scenario check" in msg and "\n" not in msg
    assert s.damage == info.value.damage
    with pytest.raises(StoreDamaged, match="so saving is not possible"):
        s.save(Scenario(), name="into a damaged store")
    health = s.check()
    assert health.damage and not health.healthy

    fresh = ScenarioStore(url)  # another process: checked before its first save
    with pytest.raises(StoreDamaged, match="so saving is not possible"):
        fresh.save(Scenario(), name="into a damaged store")
    fresh.dispose()

    # The README's repair: recover what can be read into a new file, put it in its place.
    repair_sqlite(path, tmp_path / "repaired.sqlite3")
    shutil.move(tmp_path / "repaired.sqlite3", path)
    after = s.save(Scenario(batch=64), name="after the repair")
    assert s.damage is None and s.check().damage is None
    listed = {r.id for r in s.list(limit=100)}
    assert after.id in listed and len(listed & set(ids)) >= 30
    s.dispose()

    shutil.copy(backup, path)  # …or restore the backup
    again = ScenarioStore(url)
    assert again.check().healthy and {r.id for r in again.list(limit=100)} == set(ids)
    again.dispose()


def test_a_failed_read_of_a_sound_database_is_unavailable_not_damaged(tmp_path: Path):
    s = ScenarioStore(f"sqlite:///{tmp_path / 's.sqlite3'}")
    s.save(Scenario())
    engine = sa.create_engine(f"sqlite:///{tmp_path / 's.sqlite3'}")
    with engine.begin() as conn:
        conn.execute(sa.text("ALTER TABLE explorer_scenarios RENAME TO moved"))
    engine.dispose()
    with pytest.raises(StoreUnavailable) as info:
        s.list()
    assert not isinstance(info.value, StoreDamaged) and s.damage is None
    s.dispose()


class _DriverError(Exception):
    def __init__(self, sqlstate: str | None = None, sqlite_errorcode: int | None = None):
        super().__init__("driver error")
        self.sqlstate, self.sqlite_errorcode = sqlstate, sqlite_errorcode


@pytest.mark.parametrize(("orig", "damaged"), [
    (_DriverError(sqlite_errorcode=11), True), (_DriverError(sqlite_errorcode=779), True),
    (_DriverError(sqlite_errorcode=26), True), (_DriverError(sqlite_errorcode=5), False),
    (_DriverError(sqlstate="XX001"), True), (_DriverError(sqlstate="XX002"), True),
    (_DriverError(sqlstate="58030"), True), (_DriverError(sqlstate="42501"), False),
    (_DriverError(sqlstate="08006"), False)])
def test_which_driver_errors_say_the_database_is_damaged(orig: _DriverError, damaged: bool):
    """SQLite CORRUPT (and CORRUPT_INDEX), NOTADB; PostgreSQL data/index corrupted and I/O
    errors — not a busy file, a permission or a lost connection."""
    from explorer.interfaces.store import _says_damaged

    assert _says_damaged(sa.exc.DatabaseError("SELECT 1", {}, orig)) is damaged


def test_an_id_with_a_leading_dash_is_drawn_again(monkeypatch: pytest.MonkeyPatch):
    from explorer.interfaces import store as store_mod

    draws = iter(["-leading-dash-0123456789", "Fine_id-0123456789abcd"])
    monkeypatch.setattr(store_mod.secrets, "token_urlsafe", lambda n: next(draws))
    assert store_mod._new_id() == "Fine_id-0123456789abcd"


def test_scenario_check_finds_an_index_that_no_longer_matches_its_rows(tmp_path: Path):
    # The guard before a save runs SQLite's quick_check, which does not compare indexes with
    # their rows; the check a user asks for (`scenario check`) runs the full integrity_check.
    import sqlite3

    path = tmp_path / "scenarios.sqlite3"
    s = ScenarioStore(f"sqlite:///{path}")
    for i in range(3):
        s.save(Scenario(batch=8 + i), name=f"r{i}")
    s.dispose()
    con = sqlite3.connect(path)
    con.execute("PRAGMA writable_schema=ON")  # the index now claims to hold another column
    con.execute("UPDATE sqlite_master SET sql = replace(sql, '(created_at)', '(name)') "
                "WHERE name = 'ix_explorer_scenarios_created_at'")
    con.commit()
    con.close()
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA quick_check").fetchall() == [("ok",)]  # what the guard sees
    con.close()
    health = ScenarioStore(f"sqlite:///{path}").check()
    assert not health.healthy and health.damage and "missing from index" in health.damage
