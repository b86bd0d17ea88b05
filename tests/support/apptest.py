"""The app in Streamlit's AppTest: no server, no browser."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.support.paths import ROOT


def run_app(**params: str) -> AppTest:
    """Run app.py in AppTest with these URL parameters; the run must raise nothing."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def goto(at: AppTest, url_path: str) -> AppTest:
    """Switch to a function page of st.navigation (AppTest.switch_page wants a file)."""
    at._page_hash = next(h for h, info in at._registered_pages.items()
                         if info.get("url_pathname") == url_path)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def open_section(at: AppTest, key: str) -> AppTest:
    """Open an expander drawn only when opened (st.expander(key=…, on_change="rerun")), as a
    click on it does: its state in the session, then the run that draws its content."""
    at.session_state[key] = True
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at
