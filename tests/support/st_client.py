"""A WebSocket client of a served app, for the load, fault and bad-input tests.

- ``StSession``: a minimal client of Streamlit's protobuf WebSocket (``/_stcore/stream``) that
  drives a session the way the browser does — a ``rerun_script`` BackMsg carrying the query
  string and the widget values — and collects the ForwardMsgs of that run. No rendering, so
  twenty of them fit beside the server on two cores.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.Element_pb2 import Element
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState
from websockets.sync.client import ClientConnection, connect
from websockets.typing import Origin, Subprotocol

from explorer.ui.first_paint import LOADING_NOTE
from tests.support import headline

IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"


@dataclass
class Run:
    """What one script run sent back."""

    elapsed_s: float
    status: int  # ForwardMsg.ScriptFinishedStatus; 0 = finished successfully
    elements: list[Element] = field(default_factory=list)
    paths: list[tuple[int, ...]] = field(default_factory=list)  # each element's delta path
    page_not_found: bool = False  # Streamlit ran the default page under its "Page not found"

    def of_type(self, kind: str) -> list[Any]:
        return [getattr(e, kind) for e in self.elements if e.WhichOneof("type") == kind]

    def headline(self, label: str) -> str:
        """A headline number's value as shown (explorer/ui/headline.py)."""
        return headline.parse((str(m.body), str(m.help))
                              for m in self.of_type("markdown"))[label].value

    @property
    def exceptions(self) -> list[str]:
        return [f"{x.type}: {x.message}" for x in self.of_type("exception")]

    def alerts(self) -> list[str]:
        return [str(a.body) for a in self.of_type("alert")]


class StSession:
    """One browser-less session of the app over its WebSocket."""

    def __init__(self, base_url: str, timeout_s: float = 120.0) -> None:
        host = base_url.split("://", 1)[1]
        self.timeout_s = timeout_s
        self.ws: ClientConnection = connect(
            f"ws://{host}/_stcore/stream", subprotocols=[Subprotocol("streamlit")],
            origin=Origin(base_url), max_size=2**26, open_timeout=timeout_s,
            close_timeout=5).__enter__()  # closed by close()
        self.session_id = ""
        self.widget_ids: dict[str, str] = {}  # user key → widget id
        self.widget_states: dict[str, WidgetState] = {}  # widget id → last value sent

    def close(self) -> None:
        self.ws.close()

    def __enter__(self) -> StSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def set_slider(self, key: str, value: float) -> None:
        state = WidgetState(id=self.widget_ids[key])
        state.double_array_value.data.append(value)
        self.widget_states[state.id] = state

    def rerun(self, query: str = "", page: str = "") -> Run:
        """Send a rerun with ``query`` and the widget values set so far, of the page at the URL
        path ``page`` ("": the root, the default page); wait for its end."""
        msg = BackMsg()
        msg.rerun_script.query_string = query
        msg.rerun_script.page_name = page
        msg.rerun_script.widget_states.widgets.extend(self.widget_states.values())
        t0 = time.perf_counter()
        self.ws.send(msg.SerializeToString())
        run = Run(0.0, -1)
        deadline = t0 + self.timeout_s
        while True:
            fm = ForwardMsg()
            fm.ParseFromString(self.ws.recv(timeout=max(0.1, deadline - time.perf_counter())))
            kind = fm.WhichOneof("type")
            if kind == "new_session":
                self.session_id = fm.new_session.initialize.session_id
            elif kind == "delta" and fm.delta.WhichOneof("type") == "new_element":
                el = fm.delta.new_element
                run.elements.append(el)
                run.paths.append(tuple(fm.metadata.delta_path))
                widget = getattr(el, str(el.WhichOneof("type")), None)
                wid = getattr(widget, "id", "")
                if isinstance(wid, str) and wid.startswith("$$ID-") and wid.count("-") >= 2:
                    self.widget_ids[wid.split("-", 2)[2]] = wid
            elif kind == "page_not_found":
                run.page_not_found = True
            elif kind == "script_finished":
                if fm.script_finished == ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                    run.elements.clear()  # a newer run follows
                    run.paths.clear()
                    continue
                run.status = int(fm.script_finished)
                run.elapsed_s = time.perf_counter() - t0
                return run


# A session's first run of a chart page in a browser draws the page without its controls, with a
# note where they go and a report that asks for them once the first chart is drawn
# (explorer/ui/first_paint.py): the page is whole when the note is gone, the controls are there
# (every page's sidebar has them; right after a page load the app reads idle before its first
# run has even started) and the run the report started has finished. (The note, not the
# report: that is loaded lazily, a skeleton until then.)
FIRST_PAINT = ("[data-testid='stSidebar'] [data-testid='stCaptionContainer']"
               f":has-text('{LOADING_NOTE}')")
CONTROLS = "[data-testid='stSidebar'] [data-testid='stSelectbox']"


def settle(page: Any, timeout_ms: int = 90_000) -> None:
    """Wait until the app in a Playwright page has finished its runs (a first paint's too)."""
    page.wait_for_timeout(400)
    page.wait_for_selector(IDLE, state="attached", timeout=timeout_ms)
    page.wait_for_selector(FIRST_PAINT, state="detached", timeout=timeout_ms)
    page.wait_for_selector(CONTROLS, state="attached", timeout=timeout_ms)
    page.wait_for_selector(IDLE, state="attached", timeout=timeout_ms)
    page.wait_for_timeout(300)


def data_upload_input(page: Any) -> Any:
    """The Measured data page's file input for measured data (the page also takes a config.json
    in a second uploader)."""
    return (page.get_by_test_id("stFileUploader").filter(has_text="Upload a file")
            .locator("input[type='file']"))


def headline_text(page: Any, label: str) -> str:
    """A headline number's value as the browser shows it."""
    return headline.value_in_browser(page, label)
