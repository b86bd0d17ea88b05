"""Issue 26: a preset for every GPU the pinned aiconfigurator-core has a system file for and for
AMD's current parts; each evaluates with its kernel source named; which engines run on a GPU is
data, and an engine that does not run there is refused naming the flag and the GPU."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout

import pytest

from explorer import Scenario, evaluate
from explorer.analysis.hardware_catalogue import hardware_catalogue
from explorer.base.engines import DEFAULT_ENGINE
from explorer.base.errors import ScenarioError
from explorer.export.engine_configs import engine_configs
from explorer.interfaces import view_state as us
from explorer.interfaces.cli import main
from explorer.kernel_tables import SYSTEM_FOR_PRESET
from explorer.presets import hardware_presets

NEW_GPUS = ("gb300", "h100-pcie", "a100-pcie", "a30", "l4", "rtx-pro-6000", "arc-pro-b60",
            "mi325x", "mi350x", "mi355x")
# The package measured these (its data folders hold tables); the others are spec-sheet only.
MEASURED = {"gb300": "gb300", "rtx-pro-6000": "rtx_pro_6000_server", "arc-pro-b60": "b60"}


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_presets_lists_every_new_gpu_with_what_prices_it():
    code, out, _ = run("presets")
    assert code == 0
    listed = {line.split()[0] for line in out.split("models:")[0].splitlines()[1:]
              if line.startswith("  ") and not line.strip().startswith("[")}
    assert set(NEW_GPUS) <= listed
    for group in ("[NVIDIA datacenter]", "[NVIDIA workstation/inference]", "[AMD]", "[Intel]"):
        assert group in out
    code, out, _ = run("presets", "--json")
    data = json.loads(out)
    assert set(NEW_GPUS) <= set(data["hardware"])
    kernels = data["hardware_kernels"]
    for slug in NEW_GPUS:
        entry = kernels[slug]
        assert entry["measured"] == (slug in MEASURED)
        if slug in MEASURED:
            assert entry["kernels"].startswith("measured tables: aiconfigurator-core")
            assert MEASURED[slug] in entry["kernels"]
        else:
            assert entry["kernels"].startswith("no measured tables: roofline from spec sheet")
            assert "leave-one-GPU-out error" in entry["kernels"]
    assert kernels["mi355x"]["engines"] == ["vllm", "sglang"]
    assert kernels["arc-pro-b60"]["engines"] == ["vllm"]
    assert kernels["gb300"]["engines"] == ["vllm", "sglang", "trtllm"]
    # AMD's parts also say how the roofline did on another vendor's measured kernels.
    assert "Arc Pro B60" in kernels["mi355x"]["kernels"]


@pytest.mark.parametrize("slug", NEW_GPUS)
def test_evaluate_json_works_on_each_new_gpu_and_names_its_kernel_source(slug: str):
    # decode steps: their calls lie in every table's box (a prompt chunk of 8,192 tokens lies
    # outside some, which the source then counts: "GEMM 84% of calls measured")
    code, out, err = run("evaluate", "--hardware", slug, "--model", "llama-3.1-8b",
                         "--output-tokens", "0", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["speedup"] > 0 and data["t_verif_base_s"] > 0
    source = data["sources"]["kernel_times"]
    if slug in MEASURED:  # its own tables, named by the package's system folder
        assert f" {MEASURED[slug]}:" in source and "GEMM measured" in source, source
    else:
        assert "no measured tables: roofline from spec sheet" in source, source
        assert "leave-one-GPU-out error: GEMM bf16" in source, source


def test_tensorrt_llm_on_mi355x_is_refused_naming_the_flag_and_the_gpu():
    code, out, err = run("evaluate", "--hardware", "mi355x", "--model", "llama-3.1-8b",
                         "--engine", "trtllm", "--json")
    assert code == 2 and out == ""
    assert err.startswith("error: argument --engine: TensorRT-LLM does not run on MI355X")
    assert "vLLM, SGLang" in err and "Traceback" not in err
    # on an NVIDIA GPU the same flag runs
    assert run("evaluate", "--hardware", "gb300", "--model", "llama-3.1-8b", "--engine",
               "trtllm", "--json")[0] == 0
    code, _, err = run("kernel", "gemm", "--m", "8", "--n", "4096", "--k", "4096",
                       "--hardware", "mi355x", "--engine", "trtllm")
    assert code == 2 and err.startswith("error: argument --engine: TensorRT-LLM does not run")
    with pytest.raises(ScenarioError) as exc:
        evaluate(Scenario(hardware="arc-pro-b60", engine="sglang"))
    assert exc.value.field == "engine" and "Arc Pro B60" in exc.value.message


def test_every_gpu_runs_the_default_engine_the_app_falls_back_to():
    for hw in hardware_presets().values():
        assert DEFAULT_ENGINE in hw.engines, hw.slug
        assert hw.engine_problem(DEFAULT_ENGINE) is None


def test_the_link_offers_only_the_gpus_engines():
    eng = us.PARAM_BY_KEY["eng"].setting
    assert us.offered(eng, {"hw": "mi355x"}) == ["vllm", "sglang"]
    assert us.offered(eng, {"hw": "h200"}) == ["vllm", "sglang", "trtllm"]
    view = us.decode({"hw": "mi355x", "eng": "trtllm"})
    assert view.values["eng"] == DEFAULT_ENGINE and "eng" in view.fell_back
    assert any("eng=trtllm" in w and "MI355X" in w for w in view.warnings)
    assert us.decode({"hw": "mi355x", "eng": "sglang"}).values["eng"] == "sglang"


def test_engine_configs_read_the_engines_column():
    ec = engine_configs(Scenario(hardware="arc-pro-b60", mechanism="ngram"), "ngram")
    assert ec.sglang.flags == [] and any("not supported by SGLang" in n
                                         for n in ec.sglang.notes)
    assert ec.tensorrt_llm.config is None
    assert ec.vllm.speculative_config is not None


def test_the_catalogue_is_in_selector_group_order_and_maps_every_preset():
    entries = hardware_catalogue()
    assert {e.slug for e in entries} == set(hardware_presets()) <= set(SYSTEM_FOR_PRESET)
    groups = [e.group for e in entries]
    assert list(dict.fromkeys(groups)) == ["NVIDIA datacenter", "NVIDIA workstation/inference",
                                           "AMD", "Intel"]
