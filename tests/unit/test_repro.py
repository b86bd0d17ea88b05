"""Every file in the shared reproductions folder (../shared/repro) is refused cleanly or used, in
the CLI: `validate F`, `evaluate --al-file F` and `evaluate --timings-file F` exit 0 with a result
or 2 naming the problem in one line — never a traceback, an internal error or a raw control
character. The app side is tests/app/test_app_repro.py."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from explorer.base.limits import MAX_PROBLEMS
from explorer.interfaces.cli import main
from explorer.measured import validate_path
from tests.support.measured_contract import CONTROL, check_result, use_everywhere
from tests.support.paths import REPRO, ROOT

# file → (used, a phrase the refusal names: the cap, or the row and field).
EXPECTED: dict[str, tuple[bool, str]] = {
    "al_257_points.csv": (False, "257 draft lengths; the limit is 256 (MAX_CURVE_POINTS"),
    "al_bound_tol.csv": (True, ""),
    "attn_denormal_time.csv": (False, "row 1, field time_us: kernel time '1e-320' us is 0 s"),
    "cli_terminal_escape.csv": (False, "unknown mechanism '\\x1b]0;PWNED-TITLE\\x07"),
    "dynamic_300_pos.json": (False, "300 draft lengths; the limit is 256 (MAX_CURVE_POINTS"),
    "dynamic_denormal_time.json": (False, "field batch_stats.1.0: latency 5e-324 ms is 0 s"),
    "kernel_denormal_time.csv": (False, "row 1, field time_ms: kernel time '4.9e-324' ms"),
    "kernels_unknown_dtype.csv": (True, ""),
    "metrics_300_pos.txt": (False, "300 draft lengths; the limit is 256 (MAX_CURVE_POINTS"),
    "step_denormal_time.csv": (False, "row 1, field step_time_ms: step time '4.9e-324' ms"),
    "step_times_truncated_mid_value.csv": (False, "row 20, field step_time_ms: the file ends in "
                                           "the middle of row 20"),
}
COMMANDS = (("validate",), ("evaluate", "--al-file"), ("evaluate", "--timings-file"))


def repro_files() -> list[Path]:
    assert REPRO.is_dir(), f"the shared reproductions are missing: {REPRO}"
    return sorted(p for p in REPRO.iterdir() if p.is_file() and p.name != "README.md")


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_every_reproduction_has_an_expected_outcome():
    assert sorted(EXPECTED) == [p.name for p in repro_files()]


@pytest.mark.parametrize("path", repro_files(), ids=lambda p: p.name)
@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_the_cli_refuses_cleanly_or_uses_every_reproduction(path: Path, command: tuple[str, ...]):
    code, out, err = run(*command, str(path))
    text = out + err
    assert code in (0, 2), (code, text[-2000:])
    assert "Traceback" not in text and "internal error" not in text, text[-2000:]
    assert CONTROL.search(text.replace("\n", "")) is None, repr(text[:500])
    if command[0] == "evaluate" and code == 2:
        assert err.startswith("error: argument --") and err.count("\n") == 1, err
        assert not out
    if command == ("validate",):
        assert len(out.splitlines()) <= MAX_PROBLEMS + 2  # the summary line and a page
    used, phrase = EXPECTED[path.name]
    if command == ("validate",):
        assert code == (0 if used else 2), text
        assert phrase in out, out


@pytest.mark.parametrize("path", repro_files(), ids=lambda p: p.name)
def test_every_reproduction_meets_the_parsers_contract(path: Path):
    result = validate_path(path)
    check_result(result)
    use_everywhere(result)
    assert result.ok == EXPECTED[path.name][0]


def test_al_within_the_float_tolerance_is_used_as_1_plus_d():
    code, out, _ = run("evaluate", "--draft-len", "1", "--al-file",
                       str(REPRO / "al_bound_tol.csv"), "--json")
    assert code == 0
    assert json.loads(out)["acceptance_length"] == 2.0


def test_a_kernel_table_of_unknown_dtypes_loads_but_calibration_says_why_not():
    code, out, _ = run("validate", str(REPRO / "kernels_unknown_dtype.csv"))
    assert code == 0 and "1 gemm and 0 attention rows" in out
    code, out, err = run("evaluate", "--timings-file", str(REPRO / "kernels_unknown_dtype.csv"))
    assert code == 2 and not out
    assert re.match(r"error: argument --timings-file: .*nothing to calibrate: no kernel timing "
                    r"the roofline can model \(skipped 1 GEMM rows with dtype int4_wo", err), err


@pytest.mark.slow  # another Python on a pseudo-terminal: seconds, out of the quick loop
def test_validate_never_writes_terminal_escapes_to_a_real_terminal_stream():
    """As a user runs it: the bytes on stdout hold the escapes spelled out, never ESC or BEL."""
    proc = subprocess.run(
        [sys.executable, "-m", "explorer", "validate", str(REPRO / "cli_terminal_escape.csv")],
        capture_output=True, cwd=ROOT, timeout=120, check=False)
    assert proc.returncode == 2
    assert b"\x1b" not in proc.stdout + proc.stderr and b"\x07" not in proc.stdout
    assert b"'\\x1b]0;PWNED-TITLE\\x07\\x1b[2J\\x1b[31mfake OK'" in proc.stdout


def test_validate_escapes_the_path_it_prints(tmp_path: Path):
    hostile = tmp_path / "a\x1b[31mb.csv"
    hostile.write_bytes(b"mechanism,D,AL\neagle3,1,1.5\n")
    code, out, _ = run("validate", str(hostile))
    assert code == 0 and "\x1b" not in out and "a\\x1b[31mb.csv" in out
