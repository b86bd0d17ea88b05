"""One object per mechanism and per serving engine (issue 20): a slug is written once, in its
declaration, and a new mechanism is one declaration plus its data row."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from explorer import presets
from explorer.base.engines import SERVING_ENGINES
from explorer.base.mechanisms import (
    BUILTIN_MECHANISMS,
    MECHANISM_KINDS,
    MechanismKind,
    SglangAlgorithm,
    TrtllmDecoding,
    VllmMethod,
    mechanism_colour,
    register_mechanism,
    unregister_mechanism,
)
from explorer.specs.engine import ENGINE_KINDS
from explorer.specs.scenario import Scenario
from tests.support.paths import ROOT

CODE_FILES = [*sorted((ROOT / "explorer").rglob("*.py")), ROOT / "app.py"]


def _files_writing(value: str) -> list[str]:
    """Code files with `value` as a whole string literal (docstrings and prose do not count)."""
    out = []
    for path in CODE_FILES:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(isinstance(n, ast.Constant) and n.value == value for n in ast.walk(tree)):
            out.append(str(path.relative_to(ROOT)))
    return out


def test_the_counter_sees_a_literal_and_ignores_prose(tmp_path: Path):
    tree = ast.parse('x = "eagle3"\n"""docs about eagle3"""\ny = f"{x} eagle3"\n')
    hits = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)]
    assert hits.count("eagle3") == 1


# A slug may be written in its declaration and in the loader of its data rows, nowhere else.
MECHANISM_HOMES = {"explorer/base/mechanisms.py", "explorer/presets.py"}
ENGINE_HOMES = {"explorer/base/engines.py", "explorer/specs/engine.py"}


@pytest.mark.parametrize("slug", BUILTIN_MECHANISMS)
def test_a_mechanism_slug_is_written_only_in_its_declaration(slug: str):
    files = _files_writing(slug)
    assert "explorer/base/mechanisms.py" in files and set(files) <= MECHANISM_HOMES, (slug, files)


@pytest.mark.parametrize("slug", SERVING_ENGINES)
def test_an_engine_slug_is_written_only_in_its_declarations(slug: str):
    files = _files_writing(slug)
    assert "explorer/specs/engine.py" in files and set(files) <= ENGINE_HOMES, (slug, files)


def test_every_engine_and_mechanism_is_declared_once():
    assert tuple(ENGINE_KINDS) == SERVING_ENGINES
    assert set(MECHANISM_KINDS) == set(presets.mechanism_presets())
    assert [e.name for e in ENGINE_KINDS.values()] == ["vLLM", "SGLang", "TensorRT-LLM"]


UI = ROOT / "explorer" / "ui"


def _ui_imports(path: Path) -> set[str]:
    """The explorer.ui modules a file imports, in either spelling."""
    out: set[str] = set()
    for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(n, ast.ImportFrom) and n.module == "explorer.ui":
            out.update(a.name for a in n.names)
        elif isinstance(n, ast.ImportFrom) and (n.module or "").startswith("explorer.ui."):
            out.add(str(n.module).split(".")[2])
        elif isinstance(n, ast.Import):
            out.update(a.name.split(".")[2] for a in n.names
                       if a.name.startswith("explorer.ui."))
    return out


def test_the_import_reader_sees_both_spellings(tmp_path: Path):
    f = tmp_path / "x.py"
    f.write_text("from explorer.ui import data_page, text\nfrom explorer.ui.share import y\n"
                 "import explorer.ui.compare_page\n")
    assert _ui_imports(f) == {"data_page", "text", "share", "compare_page"}


def test_no_ui_module_imports_a_page():
    """Pages sit on top (app.py navigates between them); what two pages share lives below them
    (explorer/ui/state.py owns the session's loaded data)."""
    pages = {p.stem for p in UI.glob("*_page.py")}
    assert len(pages) >= 5
    found = [f"{p.name} imports {m}" for p in sorted(UI.glob("*.py"))
             for m in sorted(_ui_imports(p) & pages) if m != p.stem]
    assert not found, found


# --- a toy mechanism through the registry alone ------------------------------------------------

TOY = MechanismKind(
    "toy-head", "#123456", aliases=("toyhead",), drafter_config="head", head_words=("toyhead",),
    vllm=VllmMethod("toy_method"),
    sglang=SglangAlgorithm("TOY", ("--speculative-num-draft-tokens", "{w}")),
    trtllm=TrtllmDecoding("Toy", dynamic_draft_len=False))


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The toy's declaration in the registry, and its data row: EAGLE-3's numbers."""
    rows = presets._rows

    def with_toy(name: str) -> list[dict[str, str]]:
        out = rows(name)
        if name == "mechanisms.csv":
            base = next(r for r in out if r["slug"] == BUILTIN_MECHANISMS[2])
            out.append({**base, "slug": TOY.slug, "name": "Toy head"})
        return out

    monkeypatch.setattr(presets, "_rows", with_toy)
    presets.mechanism_presets.cache_clear()
    register_mechanism(TOY)
    try:
        yield TOY.slug
    finally:
        unregister_mechanism(TOY.slug)
        monkeypatch.undo()
        presets.mechanism_presets.cache_clear()


def test_a_toy_mechanism_is_ranked_exported_and_drawn(toy: str):
    from explorer import recommend
    from explorer.analysis.views import al_curves
    from explorer.export.engine_configs import engine_configs
    from explorer.measured._mechanisms import normalize_mechanism
    from explorer.ui.figures import al_figure

    sc = Scenario(batch=8, mechanism=toy)
    rec = recommend(sc)
    assert toy in {o.mechanism for o in rec.ranking}
    ours = next(o for o in rec.ranking if o.mechanism == toy)
    # EAGLE-3's prior without EAGLE-3's published points for the target: ranked on its own
    assert ours.speedup > 1.0 and 1 <= ours.draft_len <= 32

    ec = engine_configs(sc, toy)
    assert ec.mechanism_name == "Toy head"
    assert ec.vllm.speculative_config is not None
    assert ec.vllm.speculative_config["method"] == "toy_method"
    d = ec.draft_len
    assert ec.sglang.flags[:2] == ["--speculative-algorithm", "TOY"]
    assert ec.sglang.flags[-2:] == ["--speculative-num-draft-tokens", str(d + 1)]
    assert ec.tensorrt_llm.config is not None
    assert ec.tensorrt_llm.config["speculative_config"]["decoding_type"] == "Toy"
    assert "draft_len_schedule" not in ec.tensorrt_llm.config["speculative_config"]

    fig = al_figure(al_curves(sc), toy)
    toy_lines = [t for t in fig.data if (t.name or "").startswith("Toy head") and t.line.color]
    assert toy_lines and toy_lines[0].line.color == mechanism_colour(toy) == "#123456"

    assert normalize_mechanism("ToyHead (v1)")[0] == toy  # a measured file may name it


def test_unregistered_mechanisms_are_refused_by_name():
    from pydantic import ValidationError

    from explorer.specs.measured import AcceptanceCurve

    with pytest.raises(ValidationError, match="unknown mechanism 'toy-head'"):
        AcceptanceCurve(mechanism=TOY.slug, draft_lens=(1,), acceptance_lengths=(1.5,))
    with pytest.raises(ValueError, match="built in"):
        unregister_mechanism(BUILTIN_MECHANISMS[0])


# --- one function applies a measured file to a scenario (CLI and Measured-data page) ----------

def test_the_cli_and_the_data_page_share_one_measured_file_decision():
    from explorer.calibration.measured_file import TIMING_USES, apply_measured_file
    from explorer.interfaces.cli.commands import build_parser
    from explorer.interfaces.cli.options import scenario_from_args
    from explorer.measured import validate_path

    samples = ROOT / "data" / "samples"
    for path in (samples / "kernel_timings.csv", samples / "step_times.csv"):
        args = build_parser().parse_args(["evaluate", "--timings-file", str(path)])
        from_cli = scenario_from_args(args)
        direct = apply_measured_file(Scenario(), validate_path(str(path)), str(path),
                                     TIMING_USES)
        assert from_cli == direct
        assert direct.hardware_overrides is not None
        assert str(path) in direct.hardware_overrides.label
        assert (direct.measured_kernels or direct.measured_steps) is not None
    for caller in ("explorer/interfaces/cli/options.py", "explorer/ui/data_page.py"):
        assert "apply_measured_file(" in (ROOT / caller).read_text(encoding="utf-8"), caller


def test_a_file_without_the_asked_part_is_refused_by_name():
    from explorer.calibration.measured_file import MeasuredFileError, apply_measured_file
    from explorer.measured import validate_path

    path = str(ROOT / "data" / "samples" / "al_curve.csv")
    result = validate_path(path)
    with pytest.raises(MeasuredFileError, match="holds no timings"):
        apply_measured_file(Scenario(), result, path)
    # the external draft model's mechanism has no curve in the sample
    with pytest.raises(MeasuredFileError, match="no curve for mechanism 'external'"):
        apply_measured_file(Scenario(mechanism=BUILTIN_MECHANISMS[0]), result, path, {"curve"})
    mtp = apply_measured_file(Scenario(mechanism=BUILTIN_MECHANISMS[1]), result, path, {"curve"})
    assert mtp.acceptance.curve is not None and mtp.acceptance.curve.mechanism == mtp.mechanism


# --- one chart table ---------------------------------------------------------------------------

def test_the_chart_table_feeds_the_switcher_the_link_and_the_caches():
    from explorer.interfaces import view_state as us
    from explorer.ui import explorer_charts as charts

    assert tuple(us.VIEW_TITLES) == us.VIEWS and us.VIEWS[0] == us.DEFAULT_VIEW
    # every existing `vw` value keeps opening its view
    assert set(us.VIEWS) >= {"surface", "tiles", "gemm", "al", "pareto", "time", "mechanisms",
                             "sources", "export"}
    assert {c.view for c in charts.CHART_TABLE} <= set(us.VIEWS)
    assert list(charts.CHARTS) == [c.name for c in charts.CHART_TABLE]
    assert charts.chart_options("pareto", {"slo": 20.0, "normalized": False}) == (("slo", 20.0),)
    assert charts.chart_options("al_vs_d", {"slo": 20.0}) == ()
    # the caches key on the frozen scenario: an equal scenario, however made, is one entry
    first = charts.chart(Scenario(batch=8), "gemm_efficiency")
    assert charts.chart(Scenario(batch=4).model_copy(update={"batch": 8}),
                        "gemm_efficiency") is first
    assert charts.evaluation(Scenario(batch=8)) is charts.evaluation(Scenario(batch=8))


def test_the_readme_recipe_names_what_exists():
    """The Layout section's recipe stays true: every name it tells you to edit exists."""
    import explorer.base.engines as engines
    import explorer.base.mechanisms as mechanisms
    import explorer.specs.engine as engine
    from explorer.interfaces import view_state
    from explorer.ui import explorer_charts

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    recipe = readme[readme.index("### Registries"):readme.index("## Where numbers come from")]
    for module, names in ((mechanisms, ("MechanismKind", "VllmMethod", "SglangAlgorithm",
                                        "TrtllmDecoding", "register_mechanism")),
                          (engines, ("ServingEngine",)), (engine, ("EngineKind", "ENGINE_KINDS")),
                          (explorer_charts, ("CHART_TABLE", "Chart")),
                          (view_state, ("VIEW_TITLES",))):
        for name in names:
            assert name in recipe and hasattr(module, name), name
    for field in ("aliases", "drafter_config", "head_words", "head_keys", "head_own_vocab"):
        assert field in recipe and field in MechanismKind.__dataclass_fields__, field
    sources = (ROOT / "data" / "SOURCES.md").read_text(encoding="utf-8")
    assert "explorer/base/mechanisms.py" in sources and "MechanismKind" in sources
