"""The README's one-screen start stays true: its screenshot exists, its example links open with
no warning about their parameters, and each says what the README promises."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl

import pytest

from tests.support import headline
from tests.support.apptest import run_app
from tests.support.paths import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
START = README[:README.index("## Commands in detail")]
LINKS = re.findall(r"`\?([^`]+)`", START)


def test_the_start_has_the_two_commands_a_screenshot_and_three_links():
    assert "make run" in START and "make test" in START
    image = re.search(r"!\[[^\]]*\]\(([^)]+)\)", START)
    assert image and (ROOT / image.group(1)).is_file()
    assert len(LINKS) == 3


@pytest.mark.parametrize("query", LINKS)
def test_each_example_link_opens_as_written(query: str):
    params = dict(parse_qsl(query))
    at = run_app(**params)
    warnings = " ".join(w.value for w in at.warning)
    assert "URL parameter" not in warnings, warnings
    assert "Speedup" in headline.numbers(at)
    success = " ".join(s.value for s in at.success).replace("\\", "")
    assert "Recommendation:" in success and "speculation pays" in success
