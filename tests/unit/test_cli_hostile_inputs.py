"""Hostile files and flag values on the command line (issue 25's reproducers,
../shared/repro/links-and-cli/cli_repros.sh): each exits 2 with one line naming the flag and the
cap, never a traceback or a hang, and nothing a file, link or flag supplies reaches the terminal
as a control sequence."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from explorer.base.limits import MAX_COLUMNS
from explorer.base.quoting import quote, shown
from explorer.base.reading import json_shape_problem, load_json, read_file
from explorer.interfaces.store import default_store
from explorer.interfaces.view_state import decode_view, view_of_scenario
from explorer.measured import parse_as
from explorer.specs.architecture import ModelSpec
from explorer.specs.compact import pack, unpack
from explorer.specs.deployment import (
    URL_MAX_CHARS,
    ConcurrencyHistogram,
    ContextBuckets,
    DeploymentProfile,
    profile_from_url,
)
from explorer.specs.scenario import Scenario
from tests.support.paths import ROOT
from tests.unit.test_cli import run

ESC = "\x1b]0;PWNED\x07\x1b[31mRED"
SMALL_MODEL = {"slug": "hf-x-00000000", "name": "tiny", "layers": 2, "hidden": 64, "q_heads": 4,
               "kv_heads": 2, "head_dim": 16, "ffn_intermediate": 128, "vocab": 1000}
SURROGATE_JSONL = (
    '{"batch_size": 2, "steps": 0, "topk": 0, "num_draft_tokens": 0, "acc_length": 1.0, '
    '"step_time": 0.03922, "speed": 25.497, "completion_tokens": 4096.0}\n'
    '{"batch_size": "\\ud800", "steps": 3, "topk": 1, "num_draft_tokens": 4, "acc_length": 2.18, '
    '"step_time": 0.0535, "speed": 40.748, "completion_tokens": 4096.0}\n')


def packraw(raw: bytes) -> str:
    """Any bytes packed as a link's `cm`/`cd` value (explorer/specs/compact.py's form)."""
    return base64.urlsafe_b64encode(zlib.compress(raw, 9)).decode().rstrip("=")


def no_control(text: str) -> bool:
    return not any((ord(c) < 32 and c not in "\n") or 0x7f <= ord(c) <= 0x9f
                   or 0xd800 <= ord(c) <= 0xdfff for c in text)


def refused(code: int, err: str, *words: str) -> None:
    assert code == 2, err
    assert "Traceback" not in err and err.startswith("error: "), err
    assert all(w in err for w in words), err
    assert no_control(err), repr(err)


# --- --scenario and --profile: the caps every JSON reader meets -------------------------------

@pytest.mark.parametrize(("text", "words"), [
    ("[" * 100_000, "(MAX_JSON_DEPTH)"),
    ('{"switch_penalty": ' + "9" * 5000 + "}", "(MAX_NUMBER_CHARS)"),
    ('{"batch": ' + "1" * 200 + "}", "(MAX_NUMBER_CHARS)"),
    ("{" * 33 + "}" * 33, "33 levels of nesting"),
])
@pytest.mark.parametrize("argv", [("deploy", "--profile"), ("evaluate", "--scenario"),
                                  ("recommend", "--scenario")])
def test_a_json_file_over_the_caps_is_refused(tmp_path: Path, argv: tuple[str, str],
                                              text: str, words: str):
    path = tmp_path / "f.json"
    path.write_text(text)
    refused(*run(*argv, str(path))[::2], f"argument {argv[1]}:", words)


def test_weights_that_sum_to_infinity_are_refused_as_a_whole(tmp_path: Path):
    path = tmp_path / "inf.json"
    path.write_text('{"concurrency": {"kind": "histogram", "batches": [1, 2], '
                    '"weights": [1e308, 1e308]}}')
    refused(*run("deploy", "--profile", str(path))[::2], "argument --profile:",
            "concurrency.weights: the weights sum to inf")


@pytest.mark.parametrize("kind", ["fifo", "dev_zero", "directory"])
@pytest.mark.parametrize("flag", ["--profile", "--scenario", "--model-config", "--al-file"])
def test_a_file_that_is_not_regular_is_refused_without_reading_it(tmp_path: Path, kind: str,
                                                                  flag: str):
    """In a subprocess with a timeout: a FIFO read would block forever, /dev/zero never ends."""
    if kind == "fifo":
        path = tmp_path / "fifo"
        os.mkfifo(path)
    else:
        path = Path("/dev/zero") if kind == "dev_zero" else tmp_path
    command = "deploy" if flag == "--profile" else "evaluate"
    proc = subprocess.run([sys.executable, "-m", "explorer", command, flag, str(path)],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    refused(proc.returncode, proc.stderr, f"argument {flag}:", "not a regular file")


def test_a_file_over_the_size_cap_is_refused_before_it_is_read(tmp_path: Path):
    path = tmp_path / "big.json"
    path.write_bytes(b" " * 2048)
    with pytest.raises(ValueError, match=r"the limit is 0 MiB|MiB; the limit"):
        read_file(path, max_bytes=1024)


# --- flags whose values Python accepts but a result cannot hold -------------------------------

def test_an_infinite_target_speedup_is_a_message():
    refused(*run("require", "--target-speedup", "inf", "--json")[::2],
            "argument --target-speedup: must be a finite number > 0")
    refused(*run("require", "--target-speedup", "nan")[::2], "argument --target-speedup")


@pytest.mark.usefixtures("data_dir")
def test_a_list_limit_beyond_a_64_bit_integer_is_a_message():
    refused(*run("scenario", "list", "--limit", "99999999999999999999")[::2],
            "argument --limit: must be between 1 and")


# --- nothing user-supplied reaches the terminal raw -------------------------------------------

def test_a_problem_message_quoting_a_lone_surrogate_prints(tmp_path: Path):
    path = tmp_path / "b.jsonl"
    path.write_text(SURROGATE_JSONL)
    code, out, err = run("validate", str(path))
    assert code == 2 and "Traceback" not in err
    assert "batch_size" in out and "\\ud800" in out and no_control(out)
    out.encode("utf-8")  # printable: no lone surrogate left


def test_a_path_and_a_flag_value_are_echoed_escaped(tmp_path: Path):
    path = tmp_path / f"x{ESC}.csv"
    path.write_text("D,AL\n1,1.5\n")
    code, _, err = run("evaluate", "--timings-file", str(path))
    refused(code, err, "argument --timings-file:", "\\x1b]0;PWNED\\x07")
    refused(*run("evaluate", "--model", ESC)[::2], "argument --model:", "\\x1b")


def test_a_model_name_with_terminal_escapes_is_printed_escaped(tmp_path: Path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"custom_model": {**SMALL_MODEL, "name": ESC},
                                "model": SMALL_MODEL["slug"], "tp": 1}))
    code, out, err = run("recommend", "--scenario", str(path))
    assert code == 0, err
    assert "\\x1b]0;PWNED\\x07" in out and no_control(out) and no_control(err)


def test_the_cli_in_a_subprocess_prints_no_escape_from_a_scenario_file(tmp_path: Path):
    """The real terminal path (stdout a pipe, not a StringIO)."""
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"custom_model": {**SMALL_MODEL, "name": ESC},
                                "model": SMALL_MODEL["slug"], "tp": 1}))
    proc = subprocess.run([sys.executable, "-m", "explorer", "evaluate", "--scenario",
                           str(path), "--model", ESC], capture_output=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 2 and b"\x1b" not in proc.stdout + proc.stderr


# --- the one quoting function and the one JSON reader -----------------------------------------

def test_shown_escapes_markdown_controls_and_lone_surrogates():
    text = shown("![x](https://evil.example/p.png)\x1b[2J\ud800")
    assert "![" not in text and "](" not in text and "\x1b" not in text
    text.encode("utf-8")
    assert shown("a/b.csv", markdown=False) == "a/b.csv"  # a terminal renders no Markdown
    assert quote("\ud800") == "'\\ud800'"


def test_load_json_refuses_before_json_loads_could_recurse():
    assert json_shape_problem('{"a": [1, 2, {"b": "[[[[["}]}') is None  # brackets in strings
    with pytest.raises(ValueError, match="MAX_JSON_DEPTH"):
        load_json("[" * 1_000_000)
    with pytest.raises(ValueError, match="MAX_NUMBER_CHARS"):
        load_json("-" + "1" * 101)
    assert load_json('{"x": 1e308, "y": ["1' + "2" * 500 + '"]}') == {
        "x": 1e308, "y": ["1" + "2" * 500]}  # a long string is no long number


# --- packed models, profiles and saved views ---------------------------------------------------

@pytest.mark.parametrize(("field", "value"), [("hidden", 10**20), ("hidden", 1e20),
                                              ("vocab", 10**9), ("q_heads", 10**6),
                                              ("total_params_b", 1e400)])
def test_a_packed_model_meets_a_config_files_bounds(field: str, value: float):
    spec = dict(SMALL_MODEL)
    packed = packraw(json.dumps({**spec, field: value}).encode())
    with pytest.raises(ValueError, match=field):
        unpack(packed, ModelSpec)
    assert unpack(pack(ModelSpec.model_validate(spec)), ModelSpec).hidden == 64


def test_a_profile_is_checked_as_a_whole():
    with pytest.raises(ValueError, match="sum to inf"):
        profile_from_url("h1-1e308_2-1e308~l2048-1-8~s")
    with pytest.raises(ValueError, match="sum to inf"):
        profile_from_url("d1_1_1_1_1_1_1_1_1_1_1_1_1_1_1_1_1_1_1_1_1_1_1_1~b1-1e308_2-1e308~s")
    with pytest.raises(ValueError, match="whole number of at most 12 digits"):
        profile_from_url("h" + "1" * 1000 + "-1~l2048-1-8~s")
    big = DeploymentProfile(
        concurrency=ConcurrencyHistogram(batches=tuple(range(65473, 65537)),
                                         weights=tuple(0.123456 + i for i in range(64))),
        context=ContextBuckets(contexts=tuple(1_999_936 + i for i in range(64)),
                               weights=tuple(0.654321 + i for i in range(64))))
    problem = big.link_problem()
    assert problem is not None and f"at most {URL_MAX_CHARS:,}" in problem
    assert DeploymentProfile().link_problem() is None


@pytest.mark.usefixtures("data_dir")
def test_scenario_check_reports_a_saved_view_that_a_link_would_refuse():
    deep = packraw(b"[" * 60000)
    sc = Scenario()
    bad = default_store().save(sc, {**view_of_scenario(sc), "cm": deep}, name="deep")
    slo = default_store().save(sc, {**view_of_scenario(sc), "slo": "abc"}, name="slo")
    default_store().save(sc, name="fine")
    assert decode_view(default_store().get(bad.id).view).fell_back == ("cm",)
    code, out, err = run("scenario", "check")
    assert code == 2 and "Traceback" not in err
    assert f"{bad.id}  broken view" in out and "(MAX_JSON_DEPTH)" in out
    assert f"{slo.id}  broken view" in out and "'slo=abc'" in out
    code, out, _ = run("scenario", "check", "--json")
    report = json.loads(out)
    assert code == 2 and report["healthy"] is False
    assert sorted(b["id"] for b in report["broken"]) == sorted([bad.id, slo.id])


# --- the ragged CSV: every row's cells are counted, not only the header's ---------------------

@pytest.mark.parametrize(("cells", "rows"), [(20_000, 2), (100_000, 5), (MAX_COLUMNS, 3)])
def test_a_ragged_csv_is_refused_by_its_widest_row(cells: int, rows: int):
    data = ("D,AL\n" + ("1,1.5" + ",9" * cells + "\n") * rows).encode()
    result = parse_as("ragged.csv", data)
    assert not result.ok
    first = result.problems[0].message
    assert f"line 2 has {cells + 2:,} cells" in first and "(MAX_COLUMNS)" in first


def test_commas_inside_quoted_cells_are_no_columns():
    cell = '"' + "a, " * 400 + '"'
    data = f"D,AL,source\n1,1.5,{cell}\n2,1.9,{cell}\n".encode()
    result = parse_as("quoted.csv", data)
    assert not any("MAX_COLUMNS" in p.message for p in result.problems), result.problems


def test_cli_validate_names_the_ragged_row(tmp_path: Path):
    path = tmp_path / "ragged.csv"
    path.write_text("D,AL\n" + ("1,1.5" + ",9" * 20_000 + "\n") * 2)
    code, out, _ = run("validate", str(path))
    assert code == 2 and "line 2 has 20,002 cells" in out and "(MAX_COLUMNS)" in out
