"""The package's layers: every import goes to the same or a lower layer, and nothing imports in
a circle. Read from the source (module-level and function-level imports alike), so a lazy import
inside a function cannot hide a cycle."""

from __future__ import annotations

import ast
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from tests.support.paths import ROOT

# Lowest first. A module may import its own layer or any lower one.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("base", ("explorer.base",)),
    ("specs", ("explorer.specs",)),
    ("presets", ("explorer.presets", "explorer.kernel_tables")),
    ("model", ("explorer.model",)),
    ("measured", ("explorer.measured",)),
    ("analysis", ("explorer.analysis", "explorer.calibration")),
    ("export", ("explorer.export",)),
    ("interfaces", ("explorer.interfaces",)),
    ("ui", ("explorer.ui",)),
    ("entry", ("explorer", "explorer.__main__", "app")),
)
UI_LIBRARIES = ("streamlit", "plotly", "kaleido")


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


@cache
def modules() -> dict[str, Path]:
    found = {module_name(p): p for p in (ROOT / "explorer").rglob("*.py")}
    found["app"] = ROOT / "app.py"
    return found


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """Every module this file imports, resolved to the known modules (or a third-party top)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:  # `from explorer.x import y` may name a submodule y
                sub = f"{base}.{alias.name}"
                out.add(sub if sub in known else base)
    return out


def layer_of(name: str) -> int | None:
    best: tuple[int, int] | None = None  # (prefix length, layer): the longest prefix wins
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (name == p or name.startswith(p + ".")) and (best is None or len(p) > best[0]):
                best = (len(p), i)
    return None if best is None else best[1]


@cache
def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    return {n: imports_of(n, p, known) for n, p in mods.items()}


def test_every_module_has_a_layer():
    assert [n for n in modules() if layer_of(n) is None] == []


def test_imports_go_down_the_layers():
    wrong = []
    for name, targets in graph().items():
        here = layer_of(name)
        assert here is not None
        for t in targets:
            there = layer_of(t)
            if there is not None and there > here:
                wrong.append(f"{name} ({LAYERS[here][0]}) imports {t} ({LAYERS[there][0]})")
    assert wrong == []


def test_the_core_imports_no_ui_library():
    ui = layer_of("explorer.ui")
    wrong = [f"{n} imports {t}" for n, ts in graph().items() for t in ts
             if (layer_of(n) or 0) < (ui or 0) and t.split(".")[0] in UI_LIBRARIES]
    assert wrong == []


@pytest.mark.slow  # imports the whole core in another Python: seconds, out of the quick loop
def test_loading_the_whole_core_loads_no_ui_library():
    """At run time too: a third-party dependency of the core could pull a UI library in."""
    ui = layer_of("explorer.ui")
    core = sorted(n for n in modules() if (layer_of(n) or 0) < (ui or 0)
                  and ".migrations." not in n)  # alembic runs those scripts itself
    code = (f"import importlib, sys\nfor m in {core!r}: importlib.import_module(m)\n"
            f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {UI_LIBRARIES!r})\n"
            "assert not bad, bad\n")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=120)


def test_no_module_imports_the_package_face():
    """`explorer/__init__.py` is for users; inside the package it would tie every layer to all."""
    wrong = [n for n, ts in graph().items() if "explorer" in ts and n not in ("app", "explorer")]
    assert wrong == []


def test_no_import_cycles():
    g = {n: {t for t in ts if t in modules()} for n, ts in graph().items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(g[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    assert cycles == []


def test_the_checker_sees_a_wrong_import(tmp_path: Path):
    """The rule can fail: a model module importing the UI is caught."""
    src = tmp_path / "x.py"
    src.write_text("from explorer.ui import figures\nimport streamlit\n", encoding="utf-8")
    found = imports_of("explorer.model.x", src, set(modules()))
    assert "explorer.ui.figures" in found and "streamlit" in found
    assert layer_of("explorer.ui.figures") > layer_of("explorer.model.x")  # type: ignore[operator]
