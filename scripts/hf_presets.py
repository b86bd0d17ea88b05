"""Writes data/hf_models.csv: model presets for current families, read from the Hugging Face
configs the pinned aiconfigurator-core==0.12.0 ships (its model_configs/), through the same
parser as an uploaded config.json (explorer/measured/hf_config.py). Each row's source names the
package and the file; its assumptions list how the cost model prices what it cannot price as
the config says. tests/unit/test_hf_presets.py checks that the file is what this script writes.

    PYTHONPATH=. .venv/bin/python scripts/hf_presets.py [--check]
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from pathlib import Path

from explorer.measured.hf_config import read_shipped, shipped_config_paths
from explorer.presets import DATA_DIR, HF_MODEL_COLUMNS, LAYER_GROUP_FIELDS

OUT = DATA_DIR / "hf_models.csv"
# slug → (the package's file stem, role). One checkpoint per family, the maker's own where the
# package ships it (its quantization says which dtype the checkpoint serves in).
PRESETS: dict[str, tuple[str, str]] = {
    "qwen3-8b": ("Qwen--Qwen3-8B", "both"),
    "qwen3.5-27b": ("Qwen--Qwen3.5-27B", "target"),
    "qwen3.5-397b-a17b": ("Qwen--Qwen3.5-397B-A17B", "target"),
    "deepseek-v3.2": ("deepseek-ai--DeepSeek-V3.2", "target"),
    "deepseek-v4-flash": ("deepseek-ai--DeepSeek-V4-Flash", "target"),
    "kimi-k2": ("moonshotai--Kimi-K2-Instruct", "target"),
    "glm-5": ("zai-org--GLM-5", "target"),
    "gpt-oss-20b": ("openai--gpt-oss-20b", "target"),
    "llama-4-maverick": ("meta-llama--Llama-4-Maverick-17B-128E-Instruct", "target"),
    "llama-4-scout": ("meta-llama--Llama-4-Scout-17B-16E-Instruct", "target"),
    "gemma-4-26b-a4b": ("google--gemma-4-26B-A4B", "target"),
    "mixtral-8x7b": ("mistralai--Mixtral-8x7B-v0.1", "target"),
    "minimax-m2.5": ("MiniMaxAI--MiniMax-M2.5", "target"),
    "mimo-v2-flash": ("XiaomiMiMo--MiMo-V2-Flash", "target"),
    "step-3.7-flash": ("stepfun-ai--Step-3.7-Flash", "target"),
    # Mamba-2 hybrids and a NAS model: layer groups (the `layer_groups` column)
    "nemotron-3-nano-30b-a3b": ("nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "target"),
    "nemotron-3-super-120b-a12b": ("nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-FP8", "target"),
    "nemotron-h-56b": ("nvidia--Nemotron-H-56B-Base-8K", "target"),
    "llama-3.3-nemotron-super-49b": ("nvidia--Llama-3_3-Nemotron-Super-49B-v1", "target"),
}


def rows() -> list[dict[str, str]]:
    paths = {p.name.removesuffix("_config.json"): p for p in shipped_config_paths()}
    if not paths:
        raise SystemExit("aiconfigurator-core is not installed")
    out = []
    for slug, (stem, role) in PRESETS.items():
        res = read_shipped(paths[stem])
        if res.model is None:
            raise SystemExit(f"{stem}: {[p.message for p in res.problems]}")
        m = res.model.model_dump()
        m.update(slug=slug, role=role, name=stem.replace("--", "/"))
        groups = res.model.model_dump(mode="json", include=set(LAYER_GROUP_FIELDS),
                                      exclude_defaults=True)
        m["layer_groups"] = json.dumps(groups, sort_keys=True, separators=(",", ":")) \
            if groups else None
        row = {}
        for col in HF_MODEL_COLUMNS:
            v = m.get(col)
            row[col] = ("true" if v else "false") if isinstance(v, bool) else (
                "" if v is None else str(v))
        row["assumptions"] = (f"checkpoint weights {res.weights_dtype}"
                              + (f", KV {res.kv_dtype}" if res.kv_dtype else "")
                              + (f"; {m['assumptions']}" if m["assumptions"] else "")
                              + "; total/active params computed from the shapes")
        out.append(row)
    return out


def render() -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(HF_MODEL_COLUMNS), lineterminator="\n")
    w.writeheader()
    w.writerows(rows())
    return buf.getvalue()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if the file is out of date")
    args = ap.parse_args()
    text = render()
    if args.check:
        return 0 if Path(OUT).read_text(encoding="utf-8") == text else 1
    Path(OUT).write_text(text, encoding="utf-8")
    print(f"wrote {OUT} ({len(PRESETS)} presets)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
