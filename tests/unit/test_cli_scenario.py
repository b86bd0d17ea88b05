"""`python -m explorer scenario save|show|list|check` and `evaluate --scenario-id` on the
app's store."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from explorer.interfaces import store
from explorer.interfaces.cli import main
from tests.support.paths import ROOT
from tests.support.tamper import TAMPER_BY_NAME, corrupt_sqlite, tamper

SAMPLES = ROOT / "data" / "samples"


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


pytestmark = pytest.mark.usefixtures("data_dir")  # a private SQLite store (conftest.py)


def save(*argv: str) -> str:
    code, out, err = run("scenario", "save", *argv)
    assert code == 0, err
    sid = out.strip()
    assert store.parse_id(sid) == sid and f"?s={sid}" in err
    return sid


def one_line_error(code: int, err: str, *needles: str) -> None:
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    for n in needles:
        assert n in lines[0], (n, lines[0])


def test_save_show_evaluate_round_trip_with_uploaded_curve_and_timings(tmp_path: Path):
    flags = ["--model", "deepseek-v3", "--mechanism", "mtp", "--tp", "8", "--batch", "16",
             "--draft-len", "3", "--al-file", str(SAMPLES / "al_curve.csv"),
             "--timings-file", str(SAMPLES / "kernel_timings.csv")]
    sid = save(*flags, "--name", "R1 on 8×H200", "--description", "MTP, measured AL",
               "--slo", "40")
    code, out, _ = run("scenario", "show", sid)
    assert code == 0
    record = json.loads(out)
    assert record["id"] == sid and record["link"] == f"?s={sid}"
    assert (record["name"], record["description"]) == ("R1 on 8×H200", "MTP, measured AL")
    assert record["view"]["slo"] == 40 and record["view"]["b"] == 16
    sc = record["scenario"]
    assert sc["acceptance"]["kind"] == "curve" and len(sc["acceptance"]["curve"]["draft_lens"])
    assert sc["hardware_overrides"] is not None or sc["measured_kernels"] is not None

    direct = json.loads(run("evaluate", *flags, "--json")[1])
    by_id = json.loads(run("evaluate", "--scenario-id", sid, "--json")[1])
    assert by_id == direct
    code, only, _ = run("scenario", "show", f"?s={sid}", "--scenario-only")
    path = tmp_path / "sc.json"
    path.write_text(only)
    assert json.loads(run("evaluate", "--scenario", str(path), "--json")[1]) == direct
    override = json.loads(run("evaluate", "--scenario-id", sid, "--batch", "64", "--json")[1])
    assert override["tokens_per_s_per_gpu"] != direct["tokens_per_s_per_gpu"]


def test_save_from_a_scenario_file_and_list_newest_first(tmp_path: Path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"hardware": "b200", "batch": 4, "draft_len": 7}))
    first = save("--scenario", str(path), "--name", "from a file")
    second = save("--batch", "8", "--name", "from flags")
    code, out, _ = run("scenario", "show", first, "--scenario-only")
    assert code == 0 and json.loads(out)["hardware"] == "b200"
    code, out, _ = run("scenario", "list")
    lines = out.strip().splitlines()
    assert code == 0 and lines[0].startswith(second) and lines[1].startswith(first)
    assert "from flags" in lines[0]
    code, out, _ = run("scenario", "list", "--json", "--limit", "1")
    assert [r["id"] for r in json.loads(out)] == [second]


@pytest.mark.slow  # another Python: seconds, out of the quick loop
def test_the_app_and_another_process_see_what_the_cli_saved(data_dir: Path):
    env = {**os.environ, store.DATA_DIR_ENV: str(data_dir)}
    env.pop(store.DATABASE_URL_ENV, None)
    saved = subprocess.run([sys.executable, "-m", "explorer", "scenario", "save", "--batch",
                            "8", "--name", "cross-process"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=120)
    assert saved.returncode == 0, saved.stderr
    sid = saved.stdout.strip()
    record = store.default_store().get(sid)
    assert record.name == "cross-process" and record.scenario.batch == 8


@pytest.mark.parametrize(("argv", "needles"), [
    (("scenario", "show", "nope"), ("argument ID", "'nope' is not a scenario id")),
    (("scenario", "show", "A" * 22), ("argument ID", f"no saved scenario has the id '{'A' * 22}'")),
    (("evaluate", "--scenario-id", "B" * 22), ("argument --scenario-id", "B" * 22)),
    (("evaluate", "--scenario-id", "x/../y"), ("argument --scenario-id", "not a scenario id")),
    (("evaluate", "--scenario", "s.json", "--scenario-id", "C" * 22),
     ("argument --scenario-id", "not allowed with --scenario")),
    (("scenario", "save", "--name", "n" * 121), ("argument --name", "at most 120")),
    (("scenario", "save", "--description", "d" * 2001), ("argument --description",)),
    (("scenario", "save", "--slo", "-1"), ("argument --slo",)),
    (("scenario", "save", "--batch", "0"), ("argument --batch",)),
    (("scenario", "list", "--limit", "0"), ("argument --limit",)),
    (("scenario", "frobnicate"), ("invalid choice",)),
])
def test_errors_exit_2_with_one_line_naming_the_flag_or_id(argv, needles):
    code, _, err = run(*argv)
    one_line_error(code, err, *needles)


def test_an_unavailable_store_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv(store.DATA_DIR_ENV, str(blocker / "sub"))
    store.reset_default_stores()
    for argv in (("scenario", "save"), ("scenario", "list"), ("scenario", "show", "D" * 22),
                 ("evaluate", "--scenario-id", "D" * 22)):
        code, _, err = run(*argv)
        one_line_error(code, err, "cannot be created", store.DATA_DIR_ENV)
    monkeypatch.setenv(store.DATABASE_URL_ENV, "postgresql://me:hunter2@127.0.0.1:1/none")
    code, _, err = run("scenario", "save", "--name", "x")
    one_line_error(code, err, "scenario save", "unavailable")
    assert "hunter2" not in err


def _store_url(data_dir: Path) -> str:
    return f"sqlite:///{data_dir / store.SQLITE_FILE}"


@pytest.mark.parametrize("name", ["non-ISO created_at", "integer created_at",
                                  "non-integer schema_version", "deep view_json"])
def test_list_show_and_check_with_a_tampered_record(data_dir: Path, name: str):
    t = TAMPER_BY_NAME[name]
    intact = save("--batch", "8", "--name", "intact")
    bad = save("--name", "tampered")
    tamper(_store_url(data_dir), bad, t)

    code, out, err = run("scenario", "list")
    assert code == 0 and "Traceback" not in err
    lines = out.strip().splitlines()
    assert any(line.startswith(intact) and line.endswith("intact") for line in lines)
    if t.listed:
        assert f"{bad}  unreadable: {t.needle}" in out
        assert "1 saved scenario(s) cannot be read" in err and "scenario check" in err
    code, out, _ = run("scenario", "list", "--json")
    entries = {e["id"]: e for e in json.loads(out)}
    assert entries[intact]["name"] == "intact" and "unreadable" not in entries[intact]
    if t.listed:
        assert t.needle in entries[bad]["unreadable"] and entries[bad]["created_at"] is None

    # ?s=<id> and --flag=<id>: an id may begin with '-', which argparse takes for a flag
    code, _, err = run("scenario", "show", f"?s={bad}")
    one_line_error(code, err, "argument ID", f"saved scenario '{bad}' cannot be read", t.needle)
    code, _, err = run("scenario", "show", f"?s={intact}")
    assert code == 0, err
    code, _, err = run("evaluate", f"--scenario-id={bad}")
    one_line_error(code, err, "argument --scenario-id", t.needle)

    code, out, _ = run("scenario", "check")
    assert code == 2
    assert "2 record(s) read, 1 unreadable; integrity ok" in out
    assert f"{bad}  unreadable: {t.needle}" in out
    code, out, _ = run("scenario", "check", "--json")
    report = json.loads(out)
    assert code == 2 and report["healthy"] is False and report["damage"] is None
    assert report["records"] == 2 and [u["id"] for u in report["unreadable"]] == [bad]
    assert t.needle in report["unreadable"][0]["reason"]


def test_check_of_a_healthy_store_exits_0():
    save("--name", "fine")
    code, out, _ = run("scenario", "check")
    assert code == 0 and "1 record(s) read, 0 unreadable; integrity ok" in out
    code, out, _ = run("scenario", "check", "--json")
    assert code == 0 and json.loads(out) == {
        "store": store.default_store().url, "healthy": True, "damage": None, "records": 1,
        "unreadable": [], "broken": []}


@pytest.mark.slow  # three CLI runs in other Pythons: seconds, out of the quick loop
def test_a_damaged_store_is_named_by_check_list_and_save(data_dir: Path):
    for i in range(40):
        save("--timings-file", str(SAMPLES / "step_times.csv"), "--name", f"r{i}")
    store.reset_default_stores()
    # page headers too: where payload bytes alone are hit, which check sees it depends on the
    # layout the records' random ids give (quick_check misses an index that no longer matches)
    corrupt_sqlite(data_dir / store.SQLITE_FILE, offset=0)
    code, out, _ = run("scenario", "check")
    assert code == 2 and "integrity DAMAGED: " in out and ".recover" in out
    report = json.loads(run("scenario", "check", "--json")[1])
    assert report["healthy"] is False and report["damage"]
    store.reset_default_stores()  # a fresh process: list fails, and says why
    code, _, err = run("scenario", "list")
    one_line_error(code, err, "scenario list", "is damaged", "Saving is stopped")
    store.reset_default_stores()
    code, _, err = run("scenario", "save", "--name", "into a damaged store")
    one_line_error(code, err, "scenario save", "is damaged, so saving is not possible")


def test_the_readme_gives_the_repair_path_the_tests_take():
    hosting = (ROOT / "README.md").read_text(encoding="utf-8").split("## Hosting", 1)[1]
    for needle in ('sqlite3 scenarios.sqlite3 ".recover" | sqlite3 repaired.sqlite3',
                   "s/^ROLLBACK; -- due to errors$/COMMIT;/", "python -m explorer scenario check",
                   "restore the file from a backup"):
        assert needle in hosting, needle
