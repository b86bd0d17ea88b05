"""Every file in the shared reproductions folder, uploaded on the Measured data page (AppTest):
a refused one is named with its problem, a used one is listed; either way the page and the
Explorer keep running and what was loaded before stays, with its Remove control."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.support import headline
from tests.support.apptest import goto, run_app
from tests.support.paths import SAMPLES
from tests.unit.test_repro import EXPECTED, repro_files

GOOD = SAMPLES / "al_curve.csv"  # loaded first: a bad upload must not take it away
EXPLORER = ""


def upload(at: AppTest, path: Path) -> AppTest:
    at.file_uploader(key="upload").set_value((path.name, path.read_bytes(), "text/plain")).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def page_text(at: AppTest) -> str:
    parts = [*at.error, *at.warning, *at.info, *at.markdown, *at.caption]
    return "\n".join(str(x.value) for x in parts)


def remove_buttons(at: AppTest) -> set[str]:
    return {b.key for b in at.button if b.key and b.key.startswith("rm_")}


@pytest.mark.parametrize("path", repro_files(), ids=lambda p: p.name)
def test_the_app_refuses_cleanly_or_uses_every_reproduction(path: Path):
    at = goto(run_app(acc="upload", v="2"), "data")
    upload(at, GOOD)
    assert remove_buttons(at) == {f"rm_{GOOD.name}"}
    upload(at, path)
    used, phrase = EXPECTED[path.name]
    text = page_text(at)
    if used:
        assert not at.session_state["upload_errors"]
        assert remove_buttons(at) == {f"rm_{GOOD.name}", f"rm_{path.name}"}
    else:
        errors = [e.value for e in at.error]
        assert errors, text
        plain = errors[0].replace("\\", "")  # Markdown-escaped: shown as text
        assert path.name in plain and phrase.replace("\\", "") in plain, errors[0][:800]
        assert remove_buttons(at) == {f"rm_{GOOD.name}"}
    assert "\x1b" not in text and "\x07" not in text
    goto(at, EXPLORER)  # raises on an exception in the Explorer
    assert "Speedup" in headline.numbers(at)
    goto(at, "data")
    assert f"rm_{GOOD.name}" in remove_buttons(at)


def test_the_uploaded_curve_within_the_al_tolerance_drives_the_explorer():
    at = goto(run_app(acc="upload", d="1", v="2"), "data")
    upload(at, next(p for p in repro_files() if p.name == "al_bound_tol.csv"))
    goto(at, EXPLORER)
    assert headline.value(at, "Acceptance length").startswith("2.00")


def test_kernel_times_of_unknown_dtypes_say_calibration_and_use_match_nothing():
    at = goto(run_app(v="2"), "data")
    upload(at, next(p for p in repro_files() if p.name == "kernels_unknown_dtype.csv"))
    assert any("nothing to calibrate" in w.value and "int4" in w.value for w in at.warning)
    assert not [b for b in at.button if b.key == "apply_cal"]
    at.button(key="use_kernels").click().run()
    assert not at.exception
    assert any("None of these kernel times matches" in w.value for w in at.warning)
    goto(at, EXPLORER)
    assert "Speedup" in headline.numbers(at)
