"""Bad input: hostile links, files and messages get a clear message, nothing user-provided is
executed or rendered as markup, and memory stays bounded. Each test prints its figures.

- URL parameters: explorer/interfaces/view_state.py (decode never raises; warnings name the
  parameter), in
  AppTest and over the WebSocket a browser uses.
- Files: explorer.measured.parse_bytes (never raises; 50 MiB cap), in-process and through the
  app's uploader; the 50 MB upload limit of .streamlit/config.toml in the browser.
- Markup: HTML, script and Markdown in link values, dataset names and labels read from files show
  as text in a real browser: no dialog, no element, no link they could have made.
- Exports: a label that a spreadsheet would run as a formula leaves the CSV neutralised.
"""

from __future__ import annotations

import csv
import gc
import gzip
import io
import json
import random
import socket
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import Path
from urllib.parse import quote, urlsplit

import pytest
from streamlit.testing.v1 import AppTest

from explorer import Scenario, evaluate
from explorer.interfaces import view_state as us
from explorer.interfaces.store import ScenarioStore
from explorer.measured import parse_bytes
from explorer.measured._entry import MAX_FILE_BYTES
from explorer.measured._problems import MAX_PROBLEMS
from explorer.specs.measured import AcceptanceCurve
from explorer.specs.scenario import Acceptance
from tests.support import headline
from tests.support.paths import ROOT
from tests.support.server import free_port, log_problems, memory_mib, serve, wait_healthy
from tests.support.st_client import StSession, data_upload_input, headline_text, settle

APP = str(ROOT / "app.py")
MiB = 2**20
CANARY = "/tmp/specdec-explorer-pwned"  # an injected command would create this
INJECTIONS = [
    "' OR 1=1 --", "1; DROP TABLE scenarios; --", "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>', "{{7*7}}", "${7*7}", "#{7*7}",
    f"__import__('os').system('touch {CANARY}')", f"$(touch {CANARY})", f"`touch {CANARY}`",
    "../../../../etc/passwd", "javascript:alert(1)", "[Log in](https://evil.example/x)",
    "![p](https://evil.example/p.png)", "%00", "\x00", "\u202e\u0007", "😀" * 50, "nan",
    "-inf", "1e309", "0x10", " 7 ", "-0", "7.0", "[]", '{"a": 1}', "None", "True",
]


def default_speedup() -> str:
    ev = evaluate(Scenario())
    assert ev.speedup is not None
    return f"{ev.speedup:.2f}×"


# --- URL parameters --------------------------------------------------------------------------

@pytest.mark.parametrize("value", [*INJECTIONS, "9" * 5000, "x" * 1000000])
def test_url_decode_never_raises_and_names_every_bad_param(value: str):
    for p in us.PARAMS:
        view = us.decode({p.key: value, "v": "2"})
        got = view.values[p.key]
        named = [w for w in view.warnings if f"'{p.key}=" in w or f"'{p.key}'" in w]
        try:
            parsed = p.parse(value)
            valid = len(value) <= us.MAX_PARAM_CHARS and p.check(parsed) is None
        except ValueError:
            valid = False
        if valid:  # e.g. " 7 " or "-0" for D: a number after all
            assert got == parsed and not named, (p.key, value, view.warnings)
        else:
            assert got == p.default and named, (p.key, value, view.warnings)
            assert all(len(w) < 600 for w in named), "a warning quotes only a short prefix"
    assert not Path(CANARY).exists()


def test_thousands_of_url_fields_give_one_short_warning():
    params: dict[str, str | list[str]] = {f"k{i}": "x" * 50 for i in range(20_000)}
    params.update({p.key: ["7"] * 5000 for p in us.PARAMS})  # every known key repeated
    t0 = time.perf_counter()
    view = us.decode(params)
    dt = time.perf_counter() - t0
    unknown = [w for w in view.warnings if "unknown URL parameter" in w]
    print(f"\nURL with {len(params)} fields and 5000 repeats of each known key: decoded in "
          f"{dt * 1e3:.0f} ms, {len(view.warnings)} warnings, longest "
          f"{max(len(w) for w in view.warnings)} chars")
    assert len(unknown) == 1 and "20000" in unknown[0] and "…" in unknown[0]
    assert len(view.warnings) <= len(us.PARAMS) + 2
    assert view.values["d"] == 7 and view.values["b"] == us.PARAM_BY_KEY["b"].default
    assert dt < 2.0


def test_app_with_a_hostile_link_keeps_serving():
    at = AppTest.from_file(APP, default_timeout=120)
    for i in range(900):
        at.query_params[f"f{i}"] = "y" * 20
    at.query_params["d"] = "9" * 100_000
    at.query_params["hw"] = "<script>alert(1)</script>"
    at.query_params["m"] = "' OR 1=1 --"
    at.query_params["mech"] = f"__import__('os').system('touch {CANARY}')"
    at.query_params["b"] = "[Log in](https://evil.example/x)"
    at.query_params["v"] = "2"
    t0 = time.perf_counter()
    at.run()
    dt = time.perf_counter() - t0
    assert not at.exception, [e.value for e in at.exception]
    warnings = " ".join(w.value for w in at.warning)
    print(f"\nAppTest run with 900 unknown fields, a 100 kB value and injections: {dt:.1f} s, "
          f"{len(at.warning)} warnings")
    for needle in ("'d' (draft length D): too long", "'hw=", "'m=", "'mech=", "'b=",
                   "ignored 900 unknown URL parameter"):
        assert needle in warnings.replace("\\", ""), needle
    assert headline.value(at, "Speedup") == default_speedup()
    assert not Path(CANARY).exists()


def test_over_a_thousand_url_fields_are_dropped_by_streamlit_and_defaults_shown():
    """Streamlit ignores a query string of more than 1000 fields or 512 KiB as a whole (it
    logs a warning on the server); the script never sees it, so the page shows the defaults."""
    at = AppTest.from_file(APP, default_timeout=120)
    for i in range(3000):
        at.query_params[f"f{i}"] = "y" * 20
    at.query_params["d"] = "7"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.slider(key="d").value == us.PARAM_BY_KEY["d"].default
    assert headline.value(at, "Speedup") == default_speedup()


# --- files -----------------------------------------------------------------------------------

def _zip_bomb(expanded: int) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z, z.open("al.csv", "w") as f:
        chunk = b"0" * MiB
        for _ in range(expanded // MiB):
            f.write(chunk)
    return buf.getvalue()


def _hostile_files() -> list[tuple[str, bytes, str]]:
    """(file name, content, a phrase the message must contain)"""
    rng = random.Random(0)
    numbers = b",".join(b"0.5" for _ in range(500_000))
    dup = b"mechanism,dataset,D,AL\n" + b"eagle3,gsm8k,1,1.8\n" * 200_000
    return [
        ("oversized.csv", b"a" * (MAX_FILE_BYTES + 1), "the limit is 50 MiB"),
        ("random.csv", rng.randbytes(MiB) + b"\x00", "binary file"),
        ("zip_bomb_256MiB.csv", _zip_bomb(256 * MiB), "zip archive"),
        ("gzip_bomb_256MiB.csv", gzip.compress(b"0" * (256 * MiB), 9), "binary file"),
        ("nested.json", b'{"schema_version": 1, "x": ' + b"[" * 200_000 + b"]" * 200_000 + b"}",
         "MAX_JSON_DEPTH"),
        ("wide_40k.csv", b"D,AL," + b",".join(b"c%d" % i for i in range(40_000)) + b"\n1,1.5\n",
         "MAX_COLUMNS"),
        ("speed_bench_report_D3.csv", b"Model," + b",".join(b"cat%d" % i for i in range(50_000))
         + b",Overall\nm," + b",".join([b"2.5"] * 50_001) + b"\n", "MAX_COLUMNS"),
        ("one_long_line.csv", b"mechanism,D,AL\n" + b"x" * (47 * MiB) + b",1,1.5\n",
         "MAX_CELL_CHARS"),
        ("tiny_cells.csv", b"D,AL\n" + b"1,\n" * (16 * MiB), "MAX_ROWS"),
        ("numbers.json", b'{"schema_version": 1, "conditional_accept_rates": [' + numbers
         + b"]}", "speculation_profile.json"),
        ("duplicate_rows.csv", dup, "appears twice"),
        ("wide.csv", b",".join(b"c%d" % i for i in range(100_000)) + b"\n1\n",
         "could not recognise the format"),
        ("utf16.csv", b"\xff\xfe" + b"\x00\xd8" * 10, "UTF-16"),
        ("empty.csv", b" \n\t\n", "empty"),
        ("not_numbers.csv", b"mechanism,dataset,D,AL\neagle3,gsm8k,1,nan\neagle3,gsm8k,2,inf\n"
         b"eagle3,gsm8k,3,1e400\neagle3,gsm8k,=1+1,2\n", "row"),
    ]


def _peak_mib_of(fn):  # type: ignore[no-untyped-def]
    """Run fn; return (result, seconds, peak resident memory above the start in MiB)."""
    gc.collect()
    Path("/proc/self/clear_refs").write_text("5")  # reset the peak (VmHWM) to the current RSS
    rss0, _ = memory_mib_self()
    t0 = time.perf_counter()
    result = fn()
    dt = time.perf_counter() - t0
    _, peak = memory_mib_self()
    return result, dt, peak - rss0


def memory_mib_self() -> tuple[float, float]:
    import os

    return memory_mib(os.getpid())


def test_hostile_files_get_a_clear_message_in_bounded_time_and_memory():
    rows = []
    for name, data, phrase in _hostile_files():
        result, dt, peak = _peak_mib_of(lambda name=name, data=data: parse_bytes(name, data))
        errors = [p for p in result.problems if p.severity == "error"]
        text = " ".join(f"{p.message} (row {p.row}, field {p.field})" for p in errors)
        rows.append(f"  {name:24s} {len(data) / MiB:7.2f} MiB  {dt:5.2f} s  "
                    f"peak +{peak:6.1f} MiB  {len(errors):5d} error(s): {text[:90]}")
        assert not result.ok, name
        assert phrase in text, (name, text[:500])
        assert len(result.problems) <= MAX_PROBLEMS + 1, name
        assert dt < 30, (name, dt)
        assert peak < max(64.0, 40 * len(data) / MiB), (name, peak)
        del result, data
    print("\nhostile files through parse_bytes (time, resident-memory peak above the start):")
    print("\n".join(rows))
    assert not Path(CANARY).exists()


def _closed_by_server(url: str, payload: bytes) -> int | str:
    """Send one frame; return the close code the server answered with (or how it hung up)."""
    from websockets.exceptions import ConnectionClosed

    session = StSession(url)
    try:
        session.ws.send(payload)
        session.ws.recv(timeout=30)
    except ConnectionClosed as exc:
        return exc.rcvd.code if exc.rcvd is not None else "closed without a code"
    except ConnectionResetError:
        return "reset"  # the server closed while the frame was still being sent
    finally:
        session.close()
    return "still open"


def test_oversized_and_malformed_websocket_messages_close_only_that_connection(tmp_path: Path):
    port = free_port()
    log = tmp_path / "server.log"
    with serve(port, log) as url, StSession(url) as good:
        first = good.rerun("d=7&v=2")
        t0 = time.perf_counter()
        codes = [_closed_by_server(url, b"\x00" * (51 * MiB))]  # over maxMessageSize = 50
        oversize_s = time.perf_counter() - t0
        codes.append(_closed_by_server(url, b"\xff\xfe not a protobuf \x00" * 10))
        # Hundreds of fields in the query string of a rerun.
        many = "&".join(f"f{i}={'z' * 10}" for i in range(990)) + "&d=9&v=2"
        crowd = StSession(url)
        run = crowd.rerun(many)
        crowd.close()
        again = good.rerun("d=7&v=2")
        wait_healthy(url, 10)
    print(f"\nwebsocket: 51 MiB frame closed with {codes[0]} after {oversize_s:.1f} s; garbage "
          f"frame closed with {codes[1]}; a rerun with 990 query fields took "
          f"{run.elapsed_s:.2f} s")
    # 1009 (message too big), or the socket closed while the frame was still being sent
    assert codes[0] in (1009, "reset", "closed without a code"), codes
    assert codes[1] == 1002, codes  # 1002 = protocol error
    assert run.status == 0 and not run.exceptions
    assert any("ignored 990 unknown URL parameter" in a for a in run.alerts())
    assert run.headline("Speedup") == f"{evaluate(Scenario(draft_len=9)).speedup:.2f}×"
    assert again.headline("Speedup") == first.headline("Speedup")
    text = log.read_text()
    # Streamlit logs the garbage frame (with its traceback) as a warning; nothing else.
    assert text.count("Traceback") == text.count("Error deserializing back message") == 1, text


def test_a_huge_url_is_refused_over_http_and_the_server_keeps_serving(tmp_path: Path):
    port = free_port()
    with serve(port, tmp_path / "server.log") as url:
        codes = []
        for size in (8_000, 60_000, 1_000_000):
            try:
                with urllib.request.urlopen(f"{url}/?q={'a' * size}", timeout=30) as r:
                    codes.append(r.status)
            except urllib.error.HTTPError as exc:
                codes.append(exc.code)
            except (urllib.error.URLError, ConnectionError) as exc:
                codes.append(type(exc).__name__)
        # A request head that never ends.
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b"GET /?" + b"a" * 200_000)
        wait_healthy(url, 10)
    print(f"\nHTTP GET with an 8 kB, 60 kB and 1 MB query string: {codes}")
    assert codes[0] == 200
    assert all(c in (200, 400, 414, 431) or isinstance(c, str) for c in codes), codes


# --- exports ---------------------------------------------------------------------------------

FORMULAS = ["=HYPERLINK(\"https://evil.example\",\"x\")", "+1+1", "-2+3", "@SUM(A1)",
            "\t=1", "\r=1", "=cmd|' /C calc'!A0"]


def test_exported_csv_neutralises_formulas_in_every_text_cell():
    import pandas as pd

    from explorer.ui.export_panel import csv_bytes, default_sweep

    df = pd.DataFrame({"label": FORMULAS, "n": range(len(FORMULAS))})
    cells = list(csv.reader(io.StringIO(csv_bytes(df).decode())))
    for row in cells[1:]:
        assert row[0].startswith("'") and row[0][1:] in FORMULAS, row
    # A scenario whose uploaded curve carries formula-like labels: its sweep export.
    curve = AcceptanceCurve(label=FORMULAS[0], draft_lens=(1, 2, 3),
                            acceptance_lengths=(1.8, 2.4, 2.9), source=FORMULAS[-1])
    sc = Scenario(acceptance=Acceptance(kind="curve", curve=curve), draft_len=2)
    text = csv_bytes(default_sweep(sc)).decode()
    rows = list(csv.reader(io.StringIO(text)))
    triggers = ("=", "+", "@", "\t", "\r")
    bad = [c for r in rows for c in r if c.startswith(triggers)
           or (c.startswith("-") and not _is_number(c))]
    print(f"\nsweep CSV of a scenario with formula labels: {len(rows)} rows, "
          f"{sum(len(r) for r in rows)} cells, {len(bad)} formula-like")
    assert not bad, bad[:5]


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def test_scenario_json_export_keeps_hostile_labels_as_data():
    from explorer.ui.export_panel import scenario_json

    label = "<script>alert(1)</script> =1+1 [x](https://evil.example)"
    curve = AcceptanceCurve(label=label, draft_lens=(1, 2), acceptance_lengths=(1.8, 2.4),
                            source=label)
    sc = Scenario(acceptance=Acceptance(kind="curve", curve=curve))
    back = Scenario.model_validate_json(scenario_json(sc))
    assert back == sc and json.loads(scenario_json(sc))["acceptance"]["curve"]["label"] == label


# --- markup in a real browser ----------------------------------------------------------------

XSS_NAME = '<img src=x onerror=alert("name")>**b** [n](https://evil.example/n)'
XSS_SCENARIO_NAME = '<script>alert("saved")</script> **70B** [open](https://evil.example/o)'
XSS_CSV = (
    "mechanism,dataset,model,temperature,drafter,D,AL,source\n"
    'eagle3,"<img src=x onerror=alert(4)><b>ds</b>","<script>alert(5)</script>",0,'
    '"[d](https://evil.example/d)",{d},{al},"<a href=""https://evil.example/s"">s</a>"\n'
)


@pytest.mark.browser
def test_markup_in_links_names_and_labels_is_shown_as_text(chromium, tmp_path: Path):
    port = free_port()
    log = tmp_path / "server.log"
    csv_path = tmp_path / "labels.csv"
    csv_path.write_text("".join(XSS_CSV.splitlines(keepends=True)[:1])
                        + "".join(XSS_CSV.splitlines(keepends=True)[1].format(d=d, al=al)
                                  for d, al in ((1, 1.8), (2, 2.4), (3, 2.9))))
    other = tmp_path / "other.csv"
    other.write_text("mechanism,dataset,D,AL\nmtp,<i>plain</i>,1,1.7\nmtp,<i>plain</i>,2,2.2\n")
    big = tmp_path / "big.csv"
    with open(big, "wb") as f:
        f.truncate(51 * MiB)
    data = tmp_path / "data"
    store = ScenarioStore(f"sqlite:///{data / 'scenarios.sqlite3'}")
    saved = store.save(Scenario(draft_len=5), name=XSS_SCENARIO_NAME,
                       description=XSS_SCENARIO_NAME + "\n<iframe src=https://evil.example/f>")
    store.dispose()
    env = {"EXPLORER_DATA_DIR": str(data), "EXPLORER_DATABASE_URL": ""}
    with serve(port, log, env) as url:
        ctx = chromium.new_context(viewport={"width": 1400, "height": 2400})
        page = ctx.new_page()
        dialogs: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        external: list[str] = []
        page.on("request", lambda r: external.append(r.url)
                if (urlsplit(r.url).hostname or "").endswith("evil.example") else None)

        # 1. A link whose values are Markdown, HTML and script.
        q = {"hw": "[Log in](https://evil.example/x)", "m": "![p](https://evil.example/p.png)",
             "mech": "<img src=x onerror=alert(1)>", "dt": "$x^2$ :red[R] **b**",
             "s": "not-an-id [Log in](https://evil.example/s)"}
        page.goto(url + "/?" + "&".join(f"{k}={quote(v)}" for k, v in q.items()) + "&v=2")
        settle(page)
        body = page.locator("body").inner_text().replace("\u2060", "")  # word joiners
        for value in q.values():
            if value.startswith("not-an-id"):
                continue
            assert value[:40] in body, value
        assert "[Log in](https://evil.example/x)" in body
        main = page.locator("[data-testid='stMain']")
        assert main.locator("a[href*='evil.example']").count() == 0
        assert main.locator("img[src*='evil.example'], img[src='x']").count() == 0
        assert main.locator(".katex").count() == 0

        # 2. A saved scenario whose name and description are markup, opened by its link.
        page.goto(url + f"/?s={saved.id}")
        settle(page)
        body = page.locator("body").inner_text().replace("\u2060", "")  # word joiners
        assert XSS_SCENARIO_NAME in body, body[:3000]
        assert main.locator("a[href*='evil.example'], iframe, img[src='x']").count() == 0
        assert headline_text(page, "Speedup") == f"{evaluate(Scenario(draft_len=5)).speedup:.2f}×"

        # 3. Dataset names and labels inside a file.
        page.goto(url + "/data")
        settle(page)
        page.get_by_label("Dataset name (optional; defaults to the file name)").fill(XSS_NAME)
        page.keyboard.press("Enter")
        settle(page)
        upload = data_upload_input(page)
        upload.set_input_files(str(csv_path))
        settle(page)
        page.get_by_label("Dataset name (optional; defaults to the file name)").fill("")
        page.keyboard.press("Enter")
        settle(page)
        upload.set_input_files(str(other))
        settle(page)
        page.wait_for_selector("text=Loaded datasets", timeout=60_000)
        body = page.locator("body").inner_text().replace("\u2060", "")  # word joiners
        assert XSS_NAME[:80] in body, body[:3000]
        assert "<img src=x onerror=alert(4)><b>ds</b>" in body
        assert main.locator("a[href*='evil.example']").count() == 0
        assert main.locator("img[src='x']").count() == 0
        assert main.locator("strong:text-is('b')").count() == 0
        legend = " ".join(page.locator(".legendtext").all_text_contents())
        assert "<i>plain</i>" in legend and "<img" in legend, legend
        assert page.locator(".legend a, .legend b, .legend i").count() == 0

        # 4. A file over the 50 MB upload limit (.streamlit/config.toml).
        upload.set_input_files(str(big))
        page.wait_for_selector("text=File must be 50.0MB or smaller", timeout=60_000)
        settle(page)
        assert "Loaded datasets" in page.locator("body").inner_text()
        ctx.close()
    print(f"\nbrowser: hostile link, dataset name and file labels shown as text; dialogs "
          f"{len(dialogs)}, requests to evil.example {len(external)}; a 51 MB file refused "
          "by the upload limit")
    assert not dialogs and not external, (dialogs, external)
    assert not log_problems(log), log_problems(log)[:5]
