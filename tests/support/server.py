"""A Streamlit server on 127.0.0.1 for the tests: a free port, start, health, stop, its log."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support.paths import ROOT


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def app_env(data_dir: Path) -> dict[str, str]:
    """The environment of a served app with its own SQLite store, never ./.explorer-data."""
    return {"EXPLORER_DATA_DIR": str(data_dir), "EXPLORER_DATABASE_URL": ""}


def wait_healthy(url: str, timeout_s: float = 60.0, proc: subprocess.Popen[bytes] | None = None
                 ) -> float:
    """Poll ``url``/_stcore/health until it answers ``ok``; return the seconds it took."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout_s:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.read() == b"ok":
                    return time.perf_counter() - t0
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not become healthy within {timeout_s:.0f} s")


def start_server(port: int, log: Path | None = None, env: dict[str, str] | None = None,
                 cwd: Path = ROOT, python: str = sys.executable) -> subprocess.Popen[bytes]:
    """``streamlit run app.py`` on 127.0.0.1, with stdout+stderr in ``log`` (or dropped)."""
    with open(log if log is not None else os.devnull, "ab") as out:
        proc = subprocess.Popen(
            [python, "-m", "streamlit", "run", "app.py",
             "--server.headless", "true", "--server.address", "127.0.0.1",
             "--server.port", str(port), "--browser.gatherUsageStats", "false",
             "--server.fileWatcherType", "none"],
            cwd=cwd, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})},
        )
    try:
        wait_healthy(f"http://127.0.0.1:{port}", 60, proc)
    except RuntimeError:
        proc.kill()
        proc.wait()
        raise
    return proc


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def serve(port: int, log: Path, env: dict[str, str] | None = None) -> Iterator[str]:
    proc = start_server(port, log, env)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_server(proc)


def memory_mib(pid: int) -> tuple[float, float]:
    """(resident, peak resident) memory of a process in MiB, from /proc."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return (int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024)


def log_problems(log: Path) -> list[str]:
    """Lines of a server log that show an unhandled error."""
    text = log.read_text(errors="replace") if log.exists() else ""
    return [line for line in text.splitlines()
            if "Traceback" in line or " ERROR " in line or "Uncaught app exception" in line]
