"""Each decision has one home: the same function answers the pages, the CLI and the exports."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from explorer import Scenario, best_draft_len, recommend, sweep
from explorer.analysis.candidate import candidate
from explorer.model.grid import scenario_model
from explorer.specs.scenario import Acceptance
from tests.support.paths import ROOT


def test_candidate_keeps_the_scenario_for_its_own_mechanism():
    sc = Scenario(rho=0.5, acceptance=Acceptance(kind="iid", alpha=0.9))
    assert candidate(sc, sc.mechanism) is sc


def test_candidate_resets_acceptance_and_rho_for_another_mechanism():
    sc = Scenario(rho=0.5, acceptance=Acceptance(kind="iid", alpha=0.9), batch=4)
    other = candidate(sc, "mtp")
    assert other.mechanism == "mtp" and other.rho is None and other.acceptance == Acceptance()
    assert other.model_copy(update={"mechanism": sc.mechanism, "rho": 0.5,
                                    "acceptance": sc.acceptance}) == sc


def test_sweep_and_recommend_evaluate_another_mechanism_as_candidate_does():
    # A ρ override of 0.5 describes EAGLE-3 here; MTP must be swept at its own ρ (1/80 layers).
    sc = Scenario(rho=0.5, batch=4)
    df = sweep(sc, draft_len=[3], mechanism=["eagle3", "mtp"], with_breakdown=False)
    mtp = df[df.mechanism == "mtp"].iloc[0]
    g = scenario_model(candidate(sc, "mtp")).grid(4, 3)
    assert mtp.speedup == pytest.approx(float(g.speedup))
    overridden = scenario_model(sc.model_copy(update={"mechanism": "mtp",
                                                      "acceptance": Acceptance()})).grid(4, 3)
    assert float(overridden.speedup) < float(g.speedup)  # ρ = 0.5 would make MTP's draft dearer
    rec = recommend(sc, ["mtp"])
    at3 = next(o for o in rec.ranking if o.draft_len == 3)
    assert at3.speedup == pytest.approx(float(g.speedup))


def test_best_draft_len_by_speed_alone_and_among_fitting_points():
    sc = Scenario(context=32768)  # memory binds above B = 12
    bd = best_draft_len(sc, [1, 8, 12, 13, 64])
    assert bd.max_batch_in_memory == 12
    assert bd.best_draft_len[3:] == [0, 0] and bd.best_speedup[3:] == [1.0, 1.0]
    assert all(d > 0 for d in bd.speed_best_draft_len)
    assert bd.best_draft_len[:3] == bd.speed_best_draft_len[:3]
    m = scenario_model(sc)
    d = np.arange(0, m.r.mechanism.max_draft_len + 1)
    sp = m.grid(64, d).speedup
    assert bd.speed_best_draft_len[-1] == int(d[1:][np.argmax(sp[1:])])
    assert bd.speed_best_speedup[-1] == pytest.approx(float(np.nanmax(sp[1:])))


# --- behaviour as data: no core module branches on a preset's slug ---------------------------

CORE_FILES = sorted(p for p in (ROOT / "explorer").rglob("*.py") if "ui" not in p.parts)
SLUG_BRANCH = re.compile(
    r"""\b(slug|mech|mechanism|hardware)\b\s*(==|!=|(not\s+)?in\s*[(\[{])\s*["']"""
    r"""|\.startswith\(\s*["']mi""")
# explorer/measured/_common.py (the measured-data parsers, another owner) still infers a draft
# style from slugs; listed so that the day it reads data/mechanisms.csv this test says so.
NOT_YET = {"explorer/measured/_common.py"}


def _slug_branches(path: Path) -> list[str]:
    return [f"{path.relative_to(ROOT)}:{i}: {line.strip()}"
            for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
            if SLUG_BRANCH.search(line.split("#")[0])]


def test_the_pattern_catches_what_it_is_for():
    for line in ('extra_fc=mech.slug == "eagle3",', "if slug == 'ngram' and x:",
                 'return scenario.hardware.lower().startswith("mi")',
                 'if mech in ("dflash", "dspark"):', 'elif scenario.mechanism != "mtp":'):
        assert SLUG_BRANCH.search(line), line
    for line in ('if slug == scenario.mechanism:', 'if slug in VLLM_NOTES:',
                 'mechanism: str = Field(default="eagle3")', 'if mech.needs_draft_weights:'):
        assert not SLUG_BRANCH.search(line), line


def test_no_core_module_compares_a_mechanism_or_hardware_slug_to_a_literal():
    assert len(CORE_FILES) > 30
    found = [hit for p in CORE_FILES if str(p.relative_to(ROOT)) not in NOT_YET
             for hit in _slug_branches(p)]
    assert not found, "behaviour belongs in data/mechanisms.csv or hardware.csv:\n" + "\n".join(
        found)
    for rel in NOT_YET:
        assert _slug_branches(ROOT / rel), f"{rel} is clean now: drop it from NOT_YET"


# --- one source for every limit ---------------------------------------------------------------

DRAFT_LIMIT = re.compile(
    r"""(draft_len|d_max|max_d|d_top)\w*\s*(:\s*int\s*)?(==|<=|>=|<|>|=)\s*(32|64)\b"""
    r"""|range\([^)]*\b(33|65)\)""", re.IGNORECASE)


def test_draft_length_limits_are_declared_only_in_base_limits():
    limits = ROOT / "explorer" / "base" / "limits.py"
    assert DRAFT_LIMIT.search(limits.read_text(encoding="utf-8"))  # the pattern finds them there
    files = [*(ROOT / "explorer").rglob("*.py"), ROOT / "app.py"]
    found = [f"{p.relative_to(ROOT)}:{i}: {line.strip()}" for p in files if p != limits
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1)
             if DRAFT_LIMIT.search(line)]
    assert not found, "\n".join(found)


def test_the_fusion_fc_comes_from_the_mechanism_spec():
    """EAGLE-3's draft step charges its k·h → h FC (k = fused_target_layers = 3) per draft token;
    the same head with k = 0 costs exactly D roofline GEMMs of (B, h, 3h) less."""
    from explorer.model.draft import draft_time
    from explorer.model.kernels import gemm_time

    m = scenario_model(Scenario(model="llama-3.1-8b", tp=1, batch=8))
    eagle3 = m.r.mechanism
    assert eagle3.fused_target_layers == 3
    plain = eagle3.model_copy(update={"fused_target_layers": 0})
    d, h = 4.0, float(m.r.model.hidden)
    with_fc = draft_time(m.target, None, eagle3, 8.0, d, 8192.0, m.r.group)["gemm"]
    without = draft_time(m.target, None, plain, 8.0, d, 8192.0, m.r.group)["gemm"]
    fc = gemm_time(m.r.hardware, 8.0, h, 3.0 * h, "bf16").time_s
    assert float(with_fc - without) == pytest.approx(d * float(fc), rel=1e-12)
