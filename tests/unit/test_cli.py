"""The CLI: JSON keys are an interface; bad input exits 2 with one line naming the flag."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pandas as pd
import pytest

from explorer.base.dtypes import WEIGHT_DTYPES
from explorer.interfaces.cli import main
from tests.support.kernel_tables import HARDWARE_FOR, MODEL, TP, kernel_timings_csv, spellings
from tests.support.paths import SAMPLES

EVALUATE_KEYS = {
    "speedup", "acceptance_length", "t_verif_base_s", "t_verif_spec_s", "t_draft_s",
    "speedup_launch_bound", "tokens_per_s_per_user", "tokens_per_s_per_gpu",
    "attention_fraction", "fits_in_memory", "breakdown",
}
COMPONENTS = {"gemm", "attention", "moe", "communication", "overhead", "lm_head"}


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_evaluate_json_has_the_documented_keys():
    code, out, _ = run("evaluate", "--hardware", "h200", "--model", "llama-3.1-70b",
                       "--batch", "8", "--draft-len", "3", "--tp", "2", "--json")
    assert code == 0
    data = json.loads(out)
    assert set(data) >= EVALUATE_KEYS
    assert set(data["breakdown"]) == {"verify_base", "verify_spec", "draft"}
    for part in data["breakdown"].values():
        assert set(part) == COMPONENTS
    spec = data["breakdown"]["verify_spec"]
    assert sum(spec.values()) == pytest.approx(data["t_verif_spec_s"])
    # by default over whole requests of 1,024 output tokens: the four factors of the split
    assert data["output_tokens"] == 1024 and data["t_prefill_s"] > 0
    assert data["speedup"] == pytest.approx(
        data["acceptance_length"] * data["verify_cost_factor"] * data["draft_cost_factor"]
        * data["prefill_factor"])
    assert data["prefill_factor"] < 1.0
    assert 1.0 <= data["acceptance_length"] <= 4.0
    # `--output-tokens 0`: decode steps only, the article's ratio
    code, out, _ = run("evaluate", "--hardware", "h200", "--model", "llama-3.1-70b",
                       "--batch", "8", "--draft-len", "3", "--tp", "2", "--output-tokens", "0",
                       "--json")
    decode = json.loads(out)
    assert code == 0 and decode["output_tokens"] is None and decode["t_prefill_s"] == 0.0
    assert decode["speedup"] == pytest.approx(
        decode["t_verif_base_s"] * decode["acceptance_length"]
        / (decode["t_verif_spec_s"] + decode["t_draft_s"]))
    assert decode["speedup"] > data["speedup"]


def test_fixed_al_and_alpha_are_used():
    _, out, _ = run("evaluate", "--draft-len", "4", "--al", "3.2", "--json")
    assert json.loads(out)["acceptance_length"] == pytest.approx(3.2)
    _, out, _ = run("evaluate", "--draft-len", "4", "--alpha", "0.5", "--json")
    assert json.loads(out)["acceptance_length"] == pytest.approx((1 - 0.5**5) / 0.5)


@pytest.mark.parametrize(("argv", "flag"), [
    (["evaluate", "--draft-len", "3", "--al", "4.5"], "--al"),
    (["evaluate", "--al", "0.5"], "--al"),
    (["evaluate", "--batch", "0"], "--batch"),
    (["evaluate", "--batch", "abc"], "--batch"),
    (["evaluate", "--hardware", "h900"], "--hardware"),
    (["evaluate", "--mechanism", "medusa"], "--mechanism"),
    (["evaluate", "--group", "3"], "--group"),
    (["evaluate", "--alpha", "1.5"], "--alpha"),
    (["sweep", "--draft-len", "0:x"], "--draft-len"),
    (["sweep", "--batch", "1,99999999"], "--batch"),
    (["kernel", "gemm", "--m", "0", "--n", "1", "--k", "1"], "--m"),
    (["evaluate", "--model", "gpt-oss-120b", "--mechanism", "external"], "--draft-model"),
])
def test_bad_input_exits_2_with_one_line_naming_the_flag(argv, flag):
    code, out, err = run(*argv)
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and flag in lines[0], err


def test_scenario_file_and_flags_override(tmp_path: Path):
    f = tmp_path / "s.json"
    f.write_text(json.dumps({"model": "llama-3.1-8b", "tp": 1, "batch": 4, "draft_len": 2}))
    _, a, _ = run("evaluate", "--scenario", str(f), "--json")
    _, b, _ = run("evaluate", "--scenario", str(f), "--batch", "64", "--json")
    assert json.loads(a)["tokens_per_s_per_gpu"] < json.loads(b)["tokens_per_s_per_gpu"]
    f.write_text("{not json")
    code, _, err = run("evaluate", "--scenario", str(f))
    assert code == 2 and "--scenario" in err


def test_recommend_json_shape():
    code, out, _ = run("recommend", "--model", "llama-3.1-8b", "--tp", "1", "--batch", "4",
                       "--json")
    assert code == 0
    data = json.loads(out)
    assert {"mechanism", "draft_len", "speedup"} <= set(data["best"])
    speeds = [o["speedup"] for o in data["ranking"] if o["fits_in_memory"]]
    assert speeds == sorted(speeds, reverse=True)
    ready = [o["speedup"] for o in data["ranking"]
             if o["fits_in_memory"] and o["availability"] != "to be trained"]
    assert data["best"]["speedup"] == ready[0]  # the fastest that runs now
    assert data["best_if_trained"]["speedup"] == speeds[0] > ready[0]
    assert [g["id"] for g in data["guidelines"]] == [1, 2, 3, 4, 5]
    assert all(g["text"] for g in data["guidelines"])


def test_sweep_csv_grid_and_parquet(tmp_path: Path):
    code, out, _ = run("sweep", "--batch", "1,8,64", "--draft-len", "0:4",
                       "--mechanism", "eagle3,mtp")
    assert code == 0
    df = pd.read_csv(io.StringIO(out))
    assert len(df) == 3 * 5 * 2
    assert {"batch", "draft_len", "mechanism", "speedup", "t_verif_spec_s"} <= set(df.columns)
    assert (df[df.draft_len == 0].speedup.round(9) == 1.0).all()
    target = tmp_path / "grid.parquet"
    assert run("sweep", "--batch", "1:64:x2", "--out", str(target))[0] == 0
    assert list(pd.read_parquet(target).batch) == [1, 2, 4, 8, 16, 32, 64]


def test_kernel_commands():
    code, out, _ = run("kernel", "gemm", "--m", "8", "--n", "6144", "--k", "6144", "--json")
    g = json.loads(out)
    assert code == 0 and g["bound"] == "memory" and g["time_s"] > 0
    _, out, _ = run("kernel", "gemm", "--m", "8192", "--n", "6144", "--k", "6144", "--json")
    assert json.loads(out)["bound"] == "compute"
    _, out, _ = run("kernel", "attention", "--batch", "64", "--context", "32768", "--q-heads", "64",
                    "--kv-heads", "8", "--head-dim", "128", "--q-len", "4", "--json")
    a = json.loads(out)
    assert a["bound"] == "memory" and a["achieved_bytes_per_s"] > 1e12


def test_presets_and_schema():
    code, out, _ = run("presets", "--json")
    data = json.loads(out)
    assert {"h100", "h200", "b200", "gb200", "mi300x"} <= set(data["hardware"])
    assert {"external", "mtp", "eagle3", "dflash", "dspark", "ngram"} == set(data["mechanisms"])
    assert {"llama-3.1-8b", "llama-3.1-70b", "qwen3-235b-a22b", "deepseek-v3"} <= set(
        data["models"])
    code, out, _ = run("schema")
    assert code == 0 and "draft_len" in json.loads(out)["properties"]


@pytest.mark.slow  # another Python: seconds, out of the quick loop
def test_module_entry_point():  # the core's imports: tests/unit/test_layers.py
    r = subprocess.run([sys.executable, "-m", "explorer", "evaluate", "--batch", "-1"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "--batch" in r.stderr


@pytest.mark.slow  # another Python: seconds, out of the quick loop
def test_a_reader_that_leaves_early_gets_no_traceback():
    # `sweep … | head -1`: the pipe closes after the header while the sweep still writes.
    proc = subprocess.Popen([sys.executable, "-m", "explorer", "sweep", "--batch", "1:4096:x2",
                             "--draft-len", "0:32"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().startswith("mechanism,batch,draft_len")
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 1
    assert "Traceback" not in err and "BrokenPipeError" not in err



def test_validate_recognises_each_sample_and_lists_every_problem(tmp_path: Path):
    code, out, _ = run("validate", str(SAMPLES / "vllm_metrics.txt"))
    assert code == 0 and "vllm_metrics" in out
    bad = tmp_path / "bad.csv"
    bad.write_text("mechanism,dataset,D,AL\neagle3,a,2,3.5\nmedusa,a,1,1.5\neagle3,b,3,-1\n")
    code, out, _ = run("validate", str(bad))
    assert code == 2
    assert "row 1" in out and "row 2" in out and "row 3" in out


def test_al_file_and_timings_file_feed_the_evaluation_and_name_their_source():
    code, out, _ = run("evaluate", "--mechanism", "mtp", "--draft-len", "3", "--al-file",
                       str(SAMPLES / "al_curve.csv"), "--timings-file",
                       str(SAMPLES / "kernel_timings.csv"), "--json")
    data = json.loads(out)
    assert code == 0 and data["acceptance_length"] == pytest.approx(2.82)
    assert "al_curve.csv" in data["sources"]["acceptance_length"]
    assert "kernel_timings.csv" in data["sources"]["efficiencies"]
    _, plain, _ = run("evaluate", "--mechanism", "mtp", "--draft-len", "3", "--json")
    assert json.loads(plain)["t_verif_base_s"] != data["t_verif_base_s"]


def test_al_file_errors_name_the_flag(tmp_path: Path):
    bad = tmp_path / "bad.csv"
    bad.write_text("mechanism,dataset,D,AL\neagle3,a,2,3.5\n")
    code, _, err = run("evaluate", "--al-file", str(bad))
    assert code == 2 and "--al-file" in err and len(err.strip().splitlines()) == 1
    code, _, err = run("evaluate", "--mechanism", "external", "--model", "llama-3.1-8b",
                       "--al-file", str(SAMPLES / "vllm_metrics.txt"))
    assert code == 0 or "--al-file" in err


def test_recommend_json_names_its_sources():
    code, out, _ = run("recommend", "--mechanism", "mtp", "--al-file",
                       str(SAMPLES / "al_curve.csv"), "--timings-file",
                       str(SAMPLES / "step_times.csv"), "--json")
    data = json.loads(out)
    assert code == 0
    assert "al_curve.csv" in data["sources"]["acceptance_length"]
    assert "step_times.csv" in data["sources"]["measured_timings"]


_T_VERIF: dict[tuple[str, str | None], tuple[float, float]] = {}


def t_verif_with_table(tmp_path: Path, dtype: str, spelling: str | None) -> tuple[float, float]:
    """(T_verif base, spec) from `evaluate --json`, with a kernel table spelled so (or none)."""
    key = (dtype, spelling)
    if key not in _T_VERIF:
        argv = ["evaluate", "--hardware", HARDWARE_FOR[dtype], "--model", MODEL, "--tp", str(TP),
                "--batch", "8", "--draft-len", "3", "--dtype", dtype, "--json"]
        if spelling is not None:
            f = tmp_path / f"kernels_{len(_T_VERIF)}.csv"
            f.write_bytes(kernel_timings_csv(spelling, dtype))
            argv += ["--timings-file", str(f)]
        code, out, err = run(*argv)
        assert code == 0, err
        data = json.loads(out)
        _T_VERIF[key] = (data["t_verif_base_s"], data["t_verif_spec_s"])
    return _T_VERIF[key]


@pytest.mark.parametrize(("dtype", "spelling"),
                         [(dt, s) for dt in WEIGHT_DTYPES for s in spellings(dt)])
def test_a_timings_file_in_any_dtype_spelling_gives_the_canonical_t_verif(
        tmp_path: Path, dtype: str, spelling: str):
    canonical = t_verif_with_table(tmp_path, dtype, dtype)
    assert canonical != t_verif_with_table(tmp_path, dtype, None), "the table changes T_verif"
    assert t_verif_with_table(tmp_path, dtype, spelling) == canonical
