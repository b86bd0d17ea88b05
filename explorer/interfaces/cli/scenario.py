"""`python -m explorer scenario save|show|list|check` and `evaluate --scenario-id`: the command
line's way into the same scenario store as the app (EXPLORER_DATABASE_URL or EXPLORER_DATA_DIR).

The store (SQLAlchemy, Alembic) is imported only by the commands that use it, so the other
commands start as fast as before."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from explorer.interfaces.cli.options import (
    VIEW_SETTINGS,
    Parser,
    UsageError,
    add_scenario_options,
    add_view_options,
    print_json,
    scenario_from_args,
)
from explorer.interfaces.view_state import PARAM_BY_KEY, view_of_scenario
from explorer.specs.settings import Setting

if TYPE_CHECKING:
    from explorer.interfaces.store import ScenarioStore, StoredScenario

MAX_LIST_LIMIT = 1_000_000  # `scenario list --limit`: more rows than a listing shows
EXIT_DAMAGED = 2  # `scenario check`: the store is damaged or holds unreadable records
REPAIR_HINT = ("repair: README \"Hosting\" (SQLite: sqlite3 FILE \".recover\" | sqlite3 "
               "repaired.sqlite3, then put the repaired file in its place; or restore a backup)")

FLAG_OF_RECORD_FIELD = {"name": "--name", "description": "--description",
                        "view": "/".join(str(s.flag) for s in VIEW_SETTINGS),
                        "scenario": "--scenario"}


def add_parser(sub: Any) -> None:
    """The `scenario` command and its subcommands (called by commands.build_parser)."""
    sc = sub.add_parser("scenario", help="saved scenarios (the app's `?s=<id>` links)")
    ssub = sc.add_subparsers(dest="scenario_command", required=True, parser_class=Parser)
    save = ssub.add_parser("save", help="save a scenario; prints its id")
    add_scenario_options(save, lists=False)
    save.add_argument("--name", default="", help="a short name (≤ 120 characters)")
    save.add_argument("--description", default="", help="what it is for (≤ 2000 characters)")
    add_view_options(save)
    show = ssub.add_parser("show", help="print a saved scenario as JSON")
    show.add_argument("id", metavar="ID", help="scenario id or ?s=<id> link")
    show.add_argument("--scenario-only", action="store_true",
                      help="print only the Scenario (usable as --scenario FILE)")
    ls = ssub.add_parser("list", help="list saved scenarios, newest first")
    ls.add_argument("--limit", type=int, default=20, help="how many (default 20)")
    ls.add_argument("--json", action="store_true", help="print JSON")
    ck = ssub.add_parser("check", help="read every saved scenario and check the database: "
                                       "exit 0 healthy, 2 damaged or with unreadable records")
    ck.add_argument("--json", action="store_true", help="print JSON")


def add_scenario_id_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scenario-id", metavar="ID",
                   help="a saved scenario (see `scenario list`); flags override it")


def stored_scenario_base(args: argparse.Namespace) -> dict[str, Any]:
    """The saved scenario named by --scenario-id, as the base that flags override."""
    from explorer.interfaces.store import StoreError, default_store

    if getattr(args, "scenario", None):
        raise UsageError("argument --scenario-id: not allowed with --scenario")
    try:
        record = default_store().get(args.scenario_id)
    except StoreError as exc:
        raise UsageError(f"argument --scenario-id: {exc.message}") from None
    return record.scenario.model_dump(mode="json")


def _record_json(record: StoredScenario) -> dict[str, Any]:
    return {"id": record.id, "link": record.link, "name": record.name,
            "description": record.description, "created_at": record.created_at.isoformat(),
            "app_version": record.app_version, "schema_version": record.schema_version,
            "view": record.view, "scenario": record.scenario.model_dump(mode="json")}


def _check_view_value(s: Setting, value: object) -> None:
    """A view-only flag's value, checked as a link's would be."""
    if value is None:
        return
    reason = PARAM_BY_KEY[s.key].check(value)
    if reason:
        shown = f"{value:g}" if isinstance(value, float) else str(value)
        raise UsageError(f"argument {s.flag}: {shown} {reason}")


def cmd_save(args: argparse.Namespace) -> int:
    from explorer.interfaces.store import InvalidRecord, StoreError, default_store

    view_only = {s.key: getattr(args, s.dest) for s in VIEW_SETTINGS}
    for s in VIEW_SETTINGS:
        _check_view_value(s, view_only[s.key])
    scenario = scenario_from_args(args)
    store = default_store()
    try:
        record = store.save(scenario, view_of_scenario(scenario, **view_only),
                            name=args.name, description=args.description)
    except InvalidRecord as exc:
        field, _, rest = exc.message.partition(": ")
        raise UsageError(f"argument {FLAG_OF_RECORD_FIELD.get(field, field)}: {rest}") from None
    except StoreError as exc:
        raise UsageError(f"scenario save: {exc.message}") from None
    if args.json:
        print_json({k: v for k, v in _record_json(record).items() if k != "scenario"})
    else:
        print(record.id)
    print(f"saved {record.link} in {store.url}", file=sys.stderr)
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from explorer.interfaces.store import StoreError, default_store

    try:
        record = default_store().get(args.id)
    except StoreError as exc:
        raise UsageError(f"argument ID: {exc.message}") from None
    print_json(record.scenario.model_dump(mode="json") if args.scenario_only
                else _record_json(record))
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    from explorer.interfaces.store import StoreError, UnreadableScenario, default_store

    if not 1 <= args.limit <= MAX_LIST_LIMIT:  # SQL integers are 64-bit: a huge one overflows
        raise UsageError(f"argument --limit: must be between 1 and {MAX_LIST_LIMIT:,}")
    store = default_store()
    try:
        rows = store.list(limit=args.limit)
    except StoreError as exc:
        raise UsageError(f"scenario list: {exc.message}") from None
    if args.json:
        print_json([{"id": r.id, "link": f"?s={r.id}", "name": "", "description": "",
                     "created_at": None, "unreadable": r.reason}
                    if isinstance(r, UnreadableScenario) else
                    {"id": r.id, "link": f"?s={r.id}", "name": r.name,
                     "description": r.description, "created_at": r.created_at.isoformat()}
                    for r in rows])
    else:
        for r in rows:
            if isinstance(r, UnreadableScenario):
                print(f"{r.id}  unreadable: {r.reason}")
                continue
            name = r.name.replace("\n", " ") or "(unnamed)"
            print(f"{r.id}  {r.created_at:%Y-%m-%d %H:%M:%S}Z  {name}")
    _note_problems(store, sum(isinstance(r, UnreadableScenario) for r in rows))
    return 0


def _note_problems(store: ScenarioStore, unreadable: int) -> None:
    """On stderr, below a listing: records it could not read, a damaged database."""
    if unreadable:
        print(f"note: {unreadable} saved scenario(s) cannot be read; `python -m explorer "
              "scenario check` lists them all", file=sys.stderr)
    if store.damage:
        print(f"note: the scenario store is damaged ({store.damage}); saving is stopped. "
              f"{REPAIR_HINT}", file=sys.stderr)


def cmd_check(args: argparse.Namespace) -> int:
    from explorer.interfaces.store import StoreError, default_store

    store = default_store()
    try:
        health = store.check()
    except StoreError as exc:
        raise UsageError(f"scenario check: {exc.message}") from None
    if args.json:
        print_json({"store": health.store, "healthy": health.healthy, "damage": health.damage,
                    "records": health.records,
                    "unreadable": [u.model_dump() for u in health.unreadable],
                    "broken": [u.model_dump() for u in health.broken]})
    else:
        state = "ok" if health.damage is None else f"DAMAGED: {health.damage}"
        print(f"{health.store}: {health.records} record(s) read, "
              f"{len(health.unreadable)} unreadable"
              + (f", {len(health.broken)} with a broken view" if health.broken else "")
              + f"; integrity {state}")
        for u in health.unreadable:
            print(f"{u.id}  unreadable: {u.reason}")
        for u in health.broken:
            print(f"{u.id}  broken view (opens with defaults): {u.reason}")
        if health.damage is not None:
            print(REPAIR_HINT)
    return 0 if health.healthy else EXIT_DAMAGED


def cmd_scenario(args: argparse.Namespace) -> int:
    commands = {"save": cmd_save, "show": cmd_show, "list": cmd_list, "check": cmd_check}
    return commands[args.scenario_command](args)
