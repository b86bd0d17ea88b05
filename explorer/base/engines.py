"""The serving engines a scenario can run on: one vocabulary for the scenario, the kernel tables
and the engine profiles (data/engines.csv)."""

from __future__ import annotations

from typing import Literal, get_args

ServingEngine = Literal["vllm", "sglang", "trtllm"]
SERVING_ENGINES: tuple[ServingEngine, ...] = get_args(ServingEngine)
DEFAULT_ENGINE: ServingEngine = "vllm"
# How messages name them.
ENGINE_NAMES: dict[str, str] = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}
