"""The quick loop (`pytest -m "not browser and not slow"`) runs over every core; any run that
includes browser or slow tests stays in one process (one shared server, load tests)."""

from __future__ import annotations

import pytest

from tests.support.quick_loop import is_quick_loop


@pytest.mark.parametrize(("markexpr", "quick"), [
    ("not browser and not slow", True),
    ("not slow and not browser", True),
    ("(not browser) and (not slow) and unit", True),
    ("not browser", False),
    ("not slow", False),
    ("browser", False),
    ("", False),
])
def test_only_a_selection_without_browser_and_slow_tests_goes_parallel(markexpr: str,
                                                                       quick: bool) -> None:
    assert is_quick_loop(markexpr) is quick
