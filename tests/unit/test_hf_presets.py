"""Presets of current families read from the configs aiconfigurator-core ships
(data/hf_models.csv, written by scripts/hf_presets.py): each names its source, the file is what
the script writes from the package, and the hand-sourced presets keep their slugs and shapes."""

from __future__ import annotations

import csv
import importlib.util
from pathlib import Path

import pytest

from explorer.analysis.evaluate import evaluate
from explorer.measured.hf_config import PACKAGE, PACKAGE_CONFIG_DIR, shipped_config_paths
from explorer.presets import DATA_DIR, model_presets
from explorer.specs.scenario import Scenario
from tests.support.paths import ROOT


def _script():
    spec = importlib.util.spec_from_file_location("hf_presets", ROOT / "scripts" / "hf_presets.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _slugs(name: str) -> list[str]:
    with (DATA_DIR / name).open(encoding="utf-8", newline="") as fh:
        return [r["slug"] for r in csv.DictReader(fh)]


def test_the_file_is_what_the_script_writes_from_the_package():
    assert (DATA_DIR / "hf_models.csv").read_text(encoding="utf-8") == _script().render()


def test_every_hf_preset_names_the_package_and_a_shipped_file():
    shipped = {p.name for p in shipped_config_paths()}
    for slug in _slugs("hf_models.csv"):
        m = model_presets()[slug]
        prefix = f"{PACKAGE} {PACKAGE_CONFIG_DIR}/"
        assert m.source.startswith(prefix), slug
        assert m.source.removeprefix(prefix) in shipped, slug


def test_the_hand_sourced_presets_keep_their_slugs():
    hand = _slugs("models.csv")
    hf = _slugs("hf_models.csv")
    assert not set(hand) & set(hf)
    assert list(model_presets())[: len(hand)] == hand
    for slug in ("llama-3.1-8b", "llama-3.1-70b", "deepseek-v3", "qwen3-235b-a22b",
                 "gpt-oss-120b"):
        assert slug in hand
    # the default (hand-sourced) DeepSeek-V3 keeps the V3 config's MLA shapes
    m = model_presets()["deepseek-v3"]
    assert (m.q_lora_rank, m.qk_nope_dim, m.v_head_dim) == (1536, 128, 128)


@pytest.mark.parametrize("slug", _slugs("hf_models.csv"))
def test_every_hf_preset_evaluates(slug):
    ev = evaluate(Scenario(model=slug, tp=8, batch=16, draft_len=3, mechanism="eagle3"))
    assert ev.speedup > 0 and ev.t_verif_base_s > 0


def test_the_script_names_existing_files():
    stems = {Path(p).name.removesuffix("_config.json") for p in shipped_config_paths()}
    assert {stem for stem, _ in _script().PRESETS.values()} <= stems
