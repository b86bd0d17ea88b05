"""The serving engines a scenario can run on: one vocabulary for the scenario, the kernel tables
and the engine profiles (data/engines.csv)."""

from __future__ import annotations

from typing import Literal, get_args

ServingEngine = Literal["vllm", "sglang", "trtllm"]
SERVING_ENGINES: tuple[ServingEngine, ...] = get_args(ServingEngine)
DEFAULT_ENGINE: ServingEngine = "vllm"
# Each engine's name as people write it ("TensorRT-LLM") is in its declaration
# (explorer/specs/engine.py: EngineKind.name, engine_name).
