"""bench-plan and bench-compare: the runs that check a prediction on the user's engine, the
result files of vllm bench serve / sglang.bench_serving / trtllm-bench / AIPerf read back, and the
step-cost terms backed out of them, applied and carried by a saved scenario's link."""

from __future__ import annotations

import csv
import json
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from explorer.export.bench_compare import applied, back_out, compare
from explorer.export.bench_plan import (
    PLAN_KEYS,
    batch_ladder,
    bench_plan,
    bench_script,
    io_lengths,
    predict,
)
from explorer.interfaces.cli import main
from explorer.interfaces.store import ScenarioStore, parse_id
from explorer.measured.bench_results import parse_bench_bytes, read_bench_path
from explorer.model.grid import scenario_model
from explorer.specs.scenario import Scenario
from tests.support.paths import ROOT

SAMPLES = ROOT / "data" / "samples"
FLAGS = ["--hardware", "h100", "--model", "llama-3.1-8b", "--tp", "1", "--batch", "16"]
SC = Scenario(hardware="h100", model="llama-3.1-8b", tp=1, batch=16)
BENCH_SAMPLES = sorted(SAMPLES.glob("bench_*"))


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    rc = main(args)
    out = capsys.readouterr()
    return rc, out.out, out.err


def speculative_config(cmd: str) -> dict[str, object]:
    args = shlex.split(cmd)
    return dict(json.loads(args[args.index("--speculative-config") + 1]))


# --- bench-plan -------------------------------------------------------------------------------

@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_bench_plan_json_has_complete_runs_with_d0_for_each_engine(engine: str, capsys):
    rc, out, err = run_cli(["bench-plan", *FLAGS, "--engine", engine, "--json"], capsys)
    assert rc == 0, err
    plan = json.loads(out)
    runs = plan["runs"]
    assert len(runs) >= 3
    assert all(list(r) == list(PLAN_KEYS) for r in runs)  # exactly the keys
    assert {r["engine"] for r in runs} == {engine}
    assert any(r["draft_len"] == 0 for r in runs) and any(r["draft_len"] > 0 for r in runs)
    assert 16 in {r["batch"] for r in runs} and len({r["batch"] for r in runs}) >= 3
    for r in runs:
        assert r["expected_low"] < r["expected_output_tokens_per_s"] < r["expected_high"]
        assert r["expected_tpot_s"] > 0
        assert (r["forced_acceptance_length"] is None) == (r["draft_len"] == 0)
    assert plan["engine_version"]["engine"]
    assert plan["draft_checkpoint"] == "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"  # the catalogue's


def test_each_engine_forces_the_acceptance_its_own_way():
    for engine, check in (
        ("vllm", lambda r: speculative_config(r.server_command)["synthetic_acceptance_length"]
         == r.forced_acceptance_length),
        ("sglang", lambda r: f"SGLANG_SIMULATE_ACC_LEN={r.forced_acceptance_length:.4g}"
         in r.server_command),
        # TensorRT-LLM counts accepted draft tokens: AL − 1
        ("trtllm", lambda r: "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS="
         f"{r.forced_acceptance_length - 1:.4g} " in r.server_command),
    ):
        plan = bench_plan(SC.model_copy(update={"engine": engine}))
        for r in plan.runs:
            if r.draft_len:
                assert check(r), (engine, r.server_command)
            else:
                assert "SIMULATE" not in r.server_command and "FORCE" not in r.server_command
                assert "speculative" not in r.server_command


def test_vllm_server_command_carries_num_speculative_tokens_and_synthetic_acceptance():
    plan = bench_plan(SC)
    spec = [r for r in plan.runs if r.draft_len > 0]
    for r in spec:
        cfg = speculative_config(r.server_command)
        assert cfg["num_speculative_tokens"] == r.draft_len == plan.draft_len
        assert cfg["rejection_sample_method"] == "synthetic"
        assert cfg["model"] == "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"
        assert f"--max-num-seqs {r.batch}" in r.server_command
        client = shlex.split(r.client_command)
        assert client[client.index("--max-concurrency") + 1] == str(r.batch)
        assert "--save-result" in client and "--result-filename" in client


def vllm_fields() -> dict[str, str]:
    with (ROOT / "data" / "vllm_speculative_config_fields.csv").open(encoding="utf-8") as f:
        return {row["field"]: row["values"] for row in csv.DictReader(f)}


def test_the_plans_vllm_speculative_config_keys_are_fields_of_vllm_speculative_config():
    fields = vllm_fields()
    assert "synthetic_acceptance_length" in fields and "rejection_sample_method" in fields
    methods = set()
    for slug in ("eagle3", "dflash", "external", "ngram"):
        plan = bench_plan(SC, slug)
        assert plan.mechanism == slug
        for r in plan.runs:
            if not r.draft_len:
                continue
            cfg = speculative_config(r.server_command)
            assert set(cfg) <= set(fields), set(cfg) - set(fields)
            assert cfg["rejection_sample_method"] in fields["rejection_sample_method"].split("|")
            assert cfg["method"] in fields["method"].split("|")
            methods.add(cfg["method"])
            al = cfg["synthetic_acceptance_length"]
            assert isinstance(al, float) and 1.0 <= al <= r.draft_len + 1
    assert methods == {"eagle3", "dflash", "draft_model", "ngram"}


def test_expected_figures_are_the_models_whole_request_steps_at_the_forced_acceptance():
    """Each run is priced over whole requests of the client command's own lengths: the decode
    step at the mean KV length input + output/2, plus the prefill the scenario path prices for
    prompts of `input` tokens and N = `output` (AL·p·f with speculation)."""
    plan = bench_plan(SC)
    mech = SC.model_copy(update={"mechanism": plan.mechanism})
    sm = scenario_model(mech)
    isl, osl = plan.input_len, plan.output_len
    # the scenario path: prompt = S = the run's input, N = its output
    sm_n = scenario_model(mech.model_copy(update={"context": isl, "output_tokens": osl}))
    for r in plan.runs:
        assert (r.input_len, r.output_len) == (isl, osl)
        client = shlex.split(r.client_command)  # the lengths the client asks for
        assert client[client.index("--random-input-len") + 1] == str(isl)
        assert client[client.index("--random-output-len") + 1] == str(osl)
        g = sm.grid(r.batch, r.draft_len, context=isl + osl / 2)
        p, f = sm_n.prefill_per_step(np.array([r.batch], float), np.array([float(isl)]),
                                     np.array([sm.r.group]))
        if r.draft_len:
            al = r.forced_acceptance_length
            assert al is not None
            step = float(g.t_verif_spec_s + g.t_draft_s) + al * float(p[0]) * f
        else:
            al = 1.0
            step = float(g.t_verif_base_s + p[0])
        assert r.expected_tpot_s == pytest.approx(step / al, rel=1e-12)
        assert r.expected_output_tokens_per_s == pytest.approx(r.batch * al / step, rel=1e-12)
        # the prefill is there and large: 8064-token prompts per 256 outputs
        decode_only = predict(mech, [r.batch], [r.draft_len], [al])
        assert r.expected_output_tokens_per_s < 0.8 * decode_only.output_tokens_per_s[0]
    # the plan says how much of a plain step the prefill is (8064 in / 256 out at B = 16)
    b16 = next(r for r in plan.runs if r.batch == 16 and r.draft_len == 0)
    share = 1.0 - float(predict(mech, [16], [0], [1.0]).tpot_s[0]) / b16.expected_tpot_s
    assert share > 0.3
    assert any(f"prefill is {share:.0%} of a plain step at B = 16" in n for n in plan.notes)
    short = bench_plan(SC.model_copy(update={"context": 512}))  # 384 in / 256 out
    assert not any("of a plain step" in n for n in short.notes)


def test_long_prompts_predict_fewer_tokens_per_second_than_decode_steps_alone():
    """Whole requests of long prompts: the prefill each step carries lowers the output tok/s
    and raises the TPOT; the fewer output tokens per prompt, the more."""
    b, d, al = [16, 16], [0, 5], [1.0, 2.58]
    decode = predict(SC, b, d, al)
    np.testing.assert_array_equal(decode.prefill_s, [0.0, 0.0])
    long_ = predict(SC, b, d, al, input_len=8064, output_len=256)
    longer = predict(SC, b, d, al, input_len=8064, output_len=64)
    short = predict(SC, b, d, al, input_len=64, output_len=256)
    for p in (long_, longer, short):
        assert (p.prefill_s > 0).all()
        np.testing.assert_allclose(p.tpot_s, p.step_s / np.asarray(al), rtol=1e-12)
        np.testing.assert_allclose(p.output_tokens_per_s,
                                   np.asarray(b) * np.asarray(al) / p.step_s, rtol=1e-12)
    assert (longer.output_tokens_per_s < long_.output_tokens_per_s).all()
    assert (long_.output_tokens_per_s < 0.8 * short.output_tokens_per_s).all()
    # the speculative step carries AL times the plain step's prefill, and more (the drafter)
    assert long_.prefill_s[1] / long_.prefill_s[0] >= 2.58
    # so speculation gains less over whole requests than over decode steps
    gain = long_.output_tokens_per_s[1] / long_.output_tokens_per_s[0]
    assert gain < 0.9 * decode.output_tokens_per_s[1] / decode.output_tokens_per_s[0]
    with pytest.raises(ValueError, match="input_len and output_len"):
        predict(SC, b, d, al, input_len=8064, output_len=0)


def test_ladder_and_lengths_follow_the_scenario():
    assert batch_ladder(16) == [8, 16, 32] and batch_ladder(1) == [1, 2, 4]
    isl, osl = io_lengths(8192)
    assert isl + osl / 2 == 8192 and osl == 256
    isl, osl = io_lengths(100)
    assert osl == 50 and isl + osl // 2 == 100


def test_the_script_runs_every_plan_run_and_parses_as_bash(tmp_path: Path):
    plan = bench_plan(SC.model_copy(update={"engine": "trtllm"}))
    script = bench_script(plan)
    for r in plan.runs:
        assert r.server_command in script and r.client_command in script
    path = tmp_path / "bench.sh"
    path.write_text(script, encoding="utf-8")
    assert subprocess.run(["bash", "-n", str(path)], capture_output=True).returncode == 0


# --- result files -----------------------------------------------------------------------------

EXPECTED = {  # file → (format, engine, B, D, forced AL, tok/s, TPOT s), from the files' keys
    "bench_vllm_b16_d5_al2.58.json": ("vllm_bench_serve", "vllm", 16, 5, 2.58, 740.444,
                                      21.1979e-3),
    "bench_vllm_b16_d0.json": ("vllm_bench_serve", "vllm", 16, 0, None, 540.442, 28.9563e-3),
    "bench_sglang_b16_d5_al2.58.jsonl": ("sglang_bench_serving", "sglang", 16, 5, 2.58, 738.402,
                                         21.2104e-3),
    "bench_trtllm_b16_d5_al2.58.json": ("aiperf_profile_export", "trtllm", 16, 5, 2.58, 782.039,
                                        20.1485e-3),
    "bench_trtllm_b16_d5_al2.58.report.json": ("trtllm_bench_report", "trtllm", 16, 5, 2.58,
                                               777.67, 20.2755e-3),
}


@pytest.mark.parametrize("path", BENCH_SAMPLES, ids=lambda p: p.name)
def test_every_shipped_sample_parses_into_a_run(path: Path):
    f = read_bench_path(path)
    assert f.ok, [str(p) for p in f.problems]
    assert len(f.runs) == 1
    r = f.runs[0]
    assert r.output_tokens_per_s > 0 and r.tpot_s > 0 and r.context == 8192
    if path.name in EXPECTED:
        fmt, engine, b, d, al, tps, tpot = EXPECTED[path.name]
        assert (f.format, r.engine, r.batch, r.draft_len) == (fmt, engine, b, d)
        assert r.forced_acceptance_length == al
        assert r.output_tokens_per_s == pytest.approx(tps)
        assert r.tpot_s == pytest.approx(tpot)


def test_the_vllm_file_says_d_and_al_itself_without_the_plans_name():
    data = (SAMPLES / "bench_vllm_b16_d5_al2.58.json").read_bytes()
    obj = json.loads(data)
    for k in ("batch", "draft_len", "forced_acceptance_length"):
        del obj[k]  # no --metadata: D from the spec-decode counters, B from max_concurrency
    f = parse_bench_bytes("result.json", json.dumps(obj).encode())
    assert f.ok
    r = f.runs[0]
    assert (r.batch, r.draft_len, r.forced_acceptance_length) == (16, 5, None)
    assert r.measured_acceptance_length == pytest.approx(2.58)


def test_each_format_gives_the_runs_mean_lengths_else_the_plans_are_used_and_said():
    for path in BENCH_SAMPLES:
        r = read_bench_path(path).runs[0]
        assert (r.input_len, r.output_len) == (8064.0, 256.0), path.name
        assert r.lengths_from
    # SGLang: the totals over the completed requests, else the requested random lengths
    line = json.loads((SAMPLES / "bench_sglang_b16_d0.jsonl").read_text().splitlines()[0])
    line |= {"total_input_tokens": 128 * 3000, "random_input_len": 4000}
    r = parse_bench_bytes("bench_sglang_b16_d0.jsonl", json.dumps(line).encode()).runs[0]
    assert r.input_len == 3000 and r.lengths_from.startswith("total_input_tokens")
    del line["total_input_tokens"]
    r = parse_bench_bytes("bench_sglang_b16_d0.jsonl", json.dumps(line).encode()).runs[0]
    assert (r.input_len, r.output_len) == (4000, 256)
    assert r.lengths_from == "random_input_len / random_output_len"
    # a vLLM file without the totals: priced at the plan's lengths, and the row says so
    obj = json.loads((SAMPLES / "bench_vllm_b16_d0.json").read_bytes())
    bare = {k: v for k, v in obj.items() if k not in ("total_input_tokens", "total_output_tokens")}
    f_bare = parse_bench_bytes("bench_vllm_b16_d0.json", json.dumps(bare).encode())
    assert f_bare.ok and f_bare.runs[0].input_len is None and f_bare.runs[0].context is None
    # a run of shorter prompts and longer outputs: its own lengths priced
    short = obj | {"total_input_tokens": 128 * 1000, "total_output_tokens": 128 * 512}
    f_short = parse_bench_bytes("short.json", json.dumps(short).encode())
    c = compare(SC, [f_bare, f_short])
    plan = bench_plan(SC)
    by_file = {x.file: x for x in c.rows}
    planned, own = by_file["bench_vllm_b16_d0.json"], by_file["short.json"]
    assert (planned.input_len, planned.output_len) == (plan.input_len, plan.output_len)
    assert planned.lengths_from.startswith("the plan") and planned.context == 8192
    assert (own.input_len, own.output_len, own.context) == (1000, 512, 1256)
    assert own.lengths_from.startswith("the file (total_input_tokens")
    assert any("bench_vllm_b16_d0.json" in n and "plan's" in n for n in c.notes)
    sc = SC.model_copy(update={"mechanism": c.mechanism})
    for row, (isl, osl) in ((planned, (8064, 256)), (own, (1000, 512))):
        want = predict(sc, [16], [0], [1.0], input_len=isl, output_len=osl)
        assert row.predicted.output_tokens_per_s == pytest.approx(
            float(want.output_tokens_per_s[0]), rel=1e-12)
    # a run of long prompts per output token predicts fewer tokens/s
    assert own.predicted.output_tokens_per_s > 1.5 * planned.predicted.output_tokens_per_s


@pytest.mark.parametrize("name, data, field", [
    ("x.json", b'{"output_throughput": "fast", "date": "1", "mean_tpot_ms": 5}',
     "output_throughput"),
    ("x.json", b'{"output_throughput": 100, "date": "1"}', "mean_tpot_ms"),
    ("x.json", b'{"foo": 1}', "output_throughput"),  # foreign JSON
    # AIPerf without the plan's name: D is nowhere
    ("profile_export_aiperf.json", (SAMPLES / "bench_trtllm_b16_d0.json").read_bytes(),
     "draft_len (file name)"),
    ("bench_sglang_b4_d3_al9.00.jsonl", (SAMPLES / "bench_sglang_b16_d0.jsonl").read_bytes(),
     "file name"),  # AL 9 > 1 + D
    ("x.jsonl", b'{"output_throughput": 1, "random_input_len": 2\n{broken\n', None),
])
def test_a_broken_or_foreign_file_names_the_field(name: str, data: bytes, field: str | None):
    f = parse_bench_bytes(name, data)
    assert not f.ok and not f.runs
    if field is not None:
        assert field in {p.field for p in f.errors}, [str(p) for p in f.errors]


def test_bench_compare_reads_each_sample_into_predicted_and_measured_rows(capsys):
    rc, out, err = run_cli(["bench-compare", *map(str, BENCH_SAMPLES), *FLAGS, "--json"],
                           capsys)
    assert rc == 0, err
    result = json.loads(out)
    rows = result["rows"]
    assert sorted(r["file"] for r in rows) == sorted(p.name for p in BENCH_SAMPLES)
    for r in rows:
        assert r["predicted"]["output_tokens_per_s"] > 0 and r["measured"]["tpot_s"] > 0
        assert r["error"]["output_tokens_per_s"] == pytest.approx(
            r["predicted"]["output_tokens_per_s"] / r["measured"]["output_tokens_per_s"] - 1)
        assert r["in_interval"] == (r["predicted"]["low"] <= r["measured"]["output_tokens_per_s"]
                                    <= r["predicted"]["high"])
    spec = next(r for r in rows if r["file"] == "bench_vllm_b16_d5_al2.58.json")
    assert spec["measured"]["speedup"] == pytest.approx(740.444 / 540.442)
    assert set(result["back_out"]) == {"vllm", "sglang", "trtllm"}


def test_a_broken_file_exits_2_without_a_traceback(tmp_path: Path):
    bad = tmp_path / "bench_vllm_b16_d0.json"
    bad.write_text('{"output_throughput": 1000, "date": "x", "mean_tpot_ms": ', encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "explorer", "bench-compare", str(bad), *FLAGS],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "not valid JSON" in proc.stderr
    assert proc.stderr.startswith("error: argument FILE:")


# --- back into the model ----------------------------------------------------------------------

def vllm_comparison():  # type: ignore[no-untyped-def]
    files = [read_bench_path(p) for p in sorted(SAMPLES.glob("bench_vllm_*"))]
    return compare(SC, files)


def test_backed_out_terms_reproduce_their_fit_and_change_the_step_costs():
    c = vllm_comparison()
    bo = back_out(SC, c)
    assert bo.mape_after < bo.mape_before
    sc = applied(SC.model_copy(update={"mechanism": c.mechanism}), bo)
    ov = sc.hardware_overrides
    assert ov is not None and ov.step_overhead_s == bo.step_overhead_s
    assert ov.draft_cost_scale == bo.draft_cost_scale
    before = SC.model_copy(update={"mechanism": c.mechanism})
    b, d, al = bo.batch, bo.draft_len, bo.acceptance_length
    isl = [x.input_len for x in c.rows]
    osl = [x.output_len for x in c.rows]
    assert isl == [8064.0] * 6 and osl == [256.0] * 6  # the files' totals / completed
    # the back-out's steps are the model's whole-request steps at the runs' own lengths
    p0 = predict(before, b, d, al, input_len=isl, output_len=osl)
    p1 = predict(sc, b, d, al, input_len=isl, output_len=osl)
    assert not np.allclose(p0.step_s, p1.step_s)
    np.testing.assert_allclose(p1.step_s, bo.predicted_after_s, rtol=1e-12)
    np.testing.assert_allclose(p0.step_s, bo.predicted_before_s, rtol=1e-12)
    np.testing.assert_allclose(p1.prefill_s, bo.prefill_after_s, rtol=1e-12)
    np.testing.assert_allclose(p0.prefill_s, bo.prefill_before_s, rtol=1e-12)


def test_fit_recovers_known_terms():
    """Runs made from the model with known terms: the back-out finds them again."""
    sm = scenario_model(SC)
    b = np.array([8.0, 16.0, 32.0, 8.0, 16.0, 32.0])
    d = np.array([0.0, 0.0, 0.0, 3.0, 3.0, 3.0])
    al = np.where(d > 0, 2.4, 1.0)
    from explorer.specs.hardware import HardwareOverrides
    truth = HardwareOverrides(step_overhead_s=2.5e-3, step_cost_per_token_s=20e-6,
                              verify_growth_scale=1.0, draft_cost_scale=1.7, label="truth")
    gt = scenario_model(SC.model_copy(update={"hardware_overrides": truth})).grid(b, d)
    step = np.where(d > 0, gt.t_verif_spec_s + gt.t_draft_s, gt.t_verif_base_s)
    from explorer.calibration.bench_backout import back_out_step_terms
    bo = back_out_step_terms(sm, b, d, al, step / al)
    assert bo.step_overhead_s == pytest.approx(2.5e-3, rel=1e-6)
    assert bo.step_cost_per_token_s == pytest.approx(20e-6, rel=1e-6)
    assert bo.draft_cost_scale == pytest.approx(1.7, rel=1e-3)
    assert bo.mape_after == pytest.approx(0.0, abs=1e-6)
    np.testing.assert_array_equal(bo.prefill_after_s, 0.0)  # decode steps only


WHOLE = {"b": np.array([4.0, 8.0, 16.0, 32.0, 4.0, 8.0, 16.0, 32.0]),
         "d": np.array([0.0, 0.0, 0.0, 0.0, 3.0, 3.0, 3.0, 3.0]),
         "isl": np.array([4000.0, 2000.0, 8000.0, 1000.0, 3000.0, 6000.0, 500.0, 2500.0]),
         "osl": np.array([256.0, 512.0, 128.0, 1024.0, 256.0, 128.0, 512.0, 200.0])}


def whole_request_runs(truth):  # type: ignore[no-untyped-def]
    """TPOTs of whole-request runs (their prompts' prefill in every step) made by the model
    with the terms `truth` applied, the same way bench-plan prices a run."""
    from explorer.specs.hardware import HardwareOverrides
    sc = SC.model_copy(update={"hardware_overrides": HardwareOverrides(**truth, label="t")})
    al = np.where(WHOLE["d"] > 0, 2.4, 1.0)
    p = predict(sc, WHOLE["b"], WHOLE["d"], al, input_len=WHOLE["isl"],
                output_len=WHOLE["osl"])
    return al, p


@pytest.mark.parametrize("truth", [
    {"step_overhead_s": 2.5e-3, "step_cost_per_token_s": 20e-6, "verify_growth_scale": 1.0,
     "draft_cost_scale": 1.7},
    {"step_overhead_s": 1.2e-3, "step_cost_per_token_s": 5e-6, "verify_growth_scale": 1.6,
     "draft_cost_scale": 0.6},
])
def test_fit_recovers_known_terms_from_whole_request_runs(truth):  # type: ignore[no-untyped-def]
    """Runs whose steps carry their prompts' prefill (as bench-plan prices them): given the
    runs' lengths, the back-out finds the terms again; told nothing of the prefill (decode steps
    only, as before), it reads the prefill as step overhead and draft cost."""
    from explorer.calibration.bench_backout import back_out_step_terms
    al, p = whole_request_runs(truth)
    assert (p.prefill_s / p.step_s > 0.05).all()  # the prefill is a real part of each step
    sm = scenario_model(SC)
    ctx = WHOLE["isl"] + WHOLE["osl"] / 2
    bo = back_out_step_terms(sm, WHOLE["b"], WHOLE["d"], al, p.tpot_s,
                             input_len=WHOLE["isl"], output_len=WHOLE["osl"])
    assert bo.step_overhead_s == pytest.approx(truth["step_overhead_s"], rel=1e-6)
    assert bo.step_cost_per_token_s == pytest.approx(truth["step_cost_per_token_s"], rel=1e-6)
    assert bo.verify_growth_scale == pytest.approx(truth["verify_growth_scale"], rel=1e-6)
    assert bo.draft_cost_scale == pytest.approx(truth["draft_cost_scale"], rel=1e-6)
    assert bo.mape_after == pytest.approx(0.0, abs=1e-6)
    np.testing.assert_allclose(bo.context, ctx)
    np.testing.assert_allclose(bo.prefill_after_s, p.prefill_s, rtol=1e-9)
    # the same runs read as decode steps only: the terms come out inflated by the prefill
    naive = back_out_step_terms(sm, WHOLE["b"], WHOLE["d"], al, p.tpot_s, context=ctx)
    assert naive.step_overhead_s > 2.0 * truth["step_overhead_s"]  # 2.9× and 4.6×
    assert naive.mape_after > 30.0


def test_whole_request_runs_at_one_batch_fall_back_to_the_alternating_fits():
    """One batch cannot tell the per-token cost from the overhead, nor g from s: the two fits
    alternate (the prefill ties them through g) and still find the terms that can be told."""
    from explorer.calibration.bench_backout import back_out_step_terms
    from explorer.specs.hardware import HardwareOverrides
    truth = HardwareOverrides(step_overhead_s=2.5e-3, step_cost_per_token_s=0.0,
                              verify_growth_scale=1.0, draft_cost_scale=1.7, label="t")
    b, d, al = np.array([16.0, 16.0]), np.array([0.0, 5.0]), np.array([1.0, 2.58])
    p = predict(SC.model_copy(update={"hardware_overrides": truth}), b, d, al,
                input_len=8064, output_len=256)
    bo = back_out_step_terms(scenario_model(SC), b, d, al, p.tpot_s, input_len=[8064, 8064],
                             output_len=[256, 256])
    assert bo.step_overhead_s == pytest.approx(2.5e-3, rel=1e-6)
    assert bo.draft_cost_scale == pytest.approx(1.7, rel=1e-6)
    assert (bo.step_cost_per_token_s, bo.verify_growth_scale) == (0.0, 1.0)
    assert any("one batch only" in n for n in bo.notes)
    assert not any("settled" in n for n in bo.notes)
    np.testing.assert_allclose(bo.predicted_after_s, p.step_s, rtol=1e-9)


def test_applied_terms_travel_with_the_saved_scenarios_link(tmp_path: Path):
    c = vllm_comparison()
    sc = applied(SC, back_out(SC, c))
    store = ScenarioStore(f"sqlite:///{tmp_path / 'scenarios.sqlite3'}")
    try:
        saved = store.save(sc, name="with bench terms")
        got = store.get(parse_id(saved.link))  # opened from its ?s=<id> link
    finally:
        store.dispose()
    assert got.scenario.hardware_overrides == sc.hardware_overrides
    p0 = predict(SC, [16], [3], [2.4])
    p1 = predict(got.scenario, [16], [3], [2.4])
    assert p1.step_s[0] == pytest.approx(float(predict(sc, [16], [3], [2.4]).step_s[0]))
    assert p1.step_s[0] != pytest.approx(float(p0.step_s[0]))


def test_a_step_overhead_alone_keeps_the_hypothetical_hardware_reading():
    """Old saved scenarios with a calibrated step overhead keep their numbers."""
    from explorer.specs.hardware import HardwareOverrides
    old = SC.model_copy(update={"hardware_overrides": HardwareOverrides(step_overhead_s=1e-3)})
    assert scenario_model(old).tables.no_tables is not None
    new = applied(SC, back_out(SC, vllm_comparison()))
    assert scenario_model(new).tables.no_tables is None  # fitted on the measured tables


# --- published tables: InferenceX golden AL, vLLM adaptive-verification profile cache --------

def test_an_inferencex_golden_al_yaml_becomes_al_curves():
    from explorer.measured.published_tables import parse_published
    name = "inferencex_golden_al_kimik2.5_eagle3.yaml"
    r = parse_published(name, (SAMPLES / name).read_bytes())
    assert r is not None and r.ok, [str(p) for p in r.problems] if r else None
    on, off = r.curves
    assert on.label == "kimi-k2.5-nvfp4 thinking_on" and on.mechanism == "eagle3"
    assert on.draft_lens == tuple(range(1, 9))
    assert on.acceptance_lengths == (1.83, 2.43, 2.88, 3.24, 3.46, 3.62, 3.71, 3.77)
    assert off.acceptance_lengths[-1] == 3.51
    assert "actions/runs/28122195822" in on.source_text and "coding" in on.source_text


@pytest.mark.parametrize("text, field", [
    ("m:\n  thinking_on:\n    1: 2.5\n", "m.thinking_on.1"),  # AL > 1 + D
    ("m:\n  thinking_on:\n    x: 1.5\n", "m.thinking_on.x"),
    ("m: [1, 2]\n", "m"),
    ("m:\n  a: {1: 1.5\n", None),  # broken YAML
])
def test_a_bad_golden_al_yaml_is_named(text: str, field: str | None):
    from explorer.measured.published_tables import parse_published
    r = parse_published("golden.yaml", text.encode())
    assert r is not None and not r.ok and not r.curves
    if field is not None:
        assert field in {p.field for p in r.errors}


def test_a_vllm_profile_cache_becomes_a_whole_round_step_table():
    from explorer.measured.published_tables import parse_published
    name = "vllm_adaptive_verification_profile.json"
    raw = (SAMPLES / name).read_bytes()
    r = parse_published(name, raw)
    assert r is not None and r.ok and r.step_timings is not None
    doc = json.loads(raw)
    k = doc["factors"]["profile"]["k"]
    t = r.step_timings
    assert t.includes_draft and set(t.draft_len) == {k}
    verify = {n: ms for n, ms in doc["verify_curve"]}
    draft = {n: ms for n, ms in doc["draft_curve"]}
    for b, n, s in zip(t.batch, t.verify_tokens or (), t.step_time_s, strict=True):
        assert n == b * (1 + k)
        assert s == pytest.approx((verify[n] + draft[b]) * 1e-3)
    # not a bench result: the result reader leaves it alone
    assert parse_published("bench_vllm_b16_d0.json",
                           (SAMPLES / "bench_vllm_b16_d0.json").read_bytes()) is None
    bad = json.dumps({**doc, "verify_curve": [[8, 6.1], [4, 6.0]]}).encode()
    r = parse_published(name, bad)
    assert r is not None and not r.ok and "verify_curve[1]" in {p.field for p in r.errors}


def test_a_mechanism_the_target_lacks_is_refused_by_name(capsys):
    rc, out, err = run_cli(["bench-plan", *FLAGS, "--mechanism", "mtp", "--json"], capsys)
    assert rc == 2 and not out
    assert err.startswith("error: argument --mechanism: 'mtp' is unavailable for llama-3.1-8b")


def test_bench_compare_writes_the_scenario_with_the_terms_applied(tmp_path: Path, capsys):
    out_path = tmp_path / "applied.json"
    vllm = [str(p) for p in sorted(SAMPLES.glob("bench_vllm_*"))]
    rc, out, err = run_cli(["bench-compare", *vllm, *FLAGS, "--applied-scenario",
                            str(out_path)], capsys)
    assert rc == 0, err
    sc = Scenario.model_validate_json(out_path.read_text(encoding="utf-8"))
    ov = sc.hardware_overrides
    assert ov is not None and ov.step_cost_per_token_s is not None
    assert "vllm benchmark runs" in ov.label
    # and it is a scenario the other commands take
    rc, out, err = run_cli(["evaluate", "--scenario", str(out_path), "--json"], capsys)
    assert rc == 0, err
    plain = run_cli(["evaluate", *FLAGS, "--mechanism", sc.mechanism, "--json"], capsys)[1]
    assert json.loads(out)["t_verif_base_s"] != json.loads(plain)["t_verif_base_s"]


def test_bench_plan_writes_its_script(tmp_path: Path, capsys):
    path = tmp_path / "bench.sh"
    rc, _out, err = run_cli(["bench-plan", *FLAGS, "--engine", "sglang", "--script", str(path)],
                           capsys)
    assert rc == 0, err
    text = path.read_text(encoding="utf-8")
    assert text.startswith("#!/usr/bin/env bash") and text.count("SGLANG_SIMULATE_ACC_LEN=") == 3


# --- what differs between engines and mechanisms is in their declarations (issue 20) ----------

@pytest.mark.parametrize("name, slug", [  # SemiAnalysisAI/InferenceX golden_al_distribution files
    ("kimik2.5_eagle3.yaml", "eagle3"), ("minimaxm3_eagle3_gqa.yaml", "eagle3"),
    ("dsv4_0813_dspark_probabilistic.yaml", "dspark"), ("qwen3.827b_bf16_mtp.yaml", "mtp"),
    ("llama_nextn.yaml", "mtp"), ("llama_draft_model.yaml", "external"), ("golden.yaml", None),
])
def test_a_golden_al_file_name_names_its_mechanism_by_the_declared_aliases(name: str,
                                                                           slug: str | None):
    from explorer.measured.published_tables import parse_published
    r = parse_published(name, b"m:\n  thinking_on:\n    1: 1.5\n    2: 1.9\n")
    assert r is not None and r.ok and r.curves[0].mechanism == slug


def test_each_engine_declares_the_result_format_its_client_writes():
    from explorer.measured.bench_results import BENCH_FORMATS, ENGINE_OF_FORMAT, NAME_PATTERN
    from explorer.specs.engine import ENGINE_KINDS, SGLANG, VLLM

    for slug, kind in ENGINE_KINDS.items():
        assert kind.bench.result_format in BENCH_FORMATS
        assert ENGINE_OF_FORMAT[kind.bench.result_format] == slug
        m = NAME_PATTERN.search(f"bench_{slug}_b8_d3_al2.10.json")
        assert m is not None and m.group("engine") == slug
    # a vLLM result named without the engine is read as vLLM's, named with one as that one's
    data = (SAMPLES / "bench_vllm_b16_d0.json").read_bytes()
    assert parse_bench_bytes("run.json", data).runs[0].engine == VLLM.slug
    assert parse_bench_bytes("bench_sglang_b16_d0.json", data).runs[0].engine == SGLANG.slug
