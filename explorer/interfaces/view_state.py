"""The explorer's view state ↔ URL query parameters (short, versioned, validated).

Each widget in the UI is bound to one short key here. Parsing never raises: a malformed or
out-of-range parameter gives a warning that names it, and its default is used instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from explorer.base.dtypes import KV_DTYPES, WEIGHT_DTYPES
from explorer.base.limits import VIEW_MAX_DRAFT_LEN
from explorer.presets import hardware_presets, mechanism_presets, model_presets, sample_curves
from explorer.specs.scenario import Acceptance, MeasuredCurve, Scenario

URL_VERSION = "1"
VERSION_KEY = "v"
# `?s=<id>` opens a saved scenario (explorer/interfaces/store.py); context S is `ctx`.
SHARE_KEY = "s"
MAX_PARAM_CHARS = 200

BATCH_OPTIONS: tuple[int, ...] = (
    1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536,
    2048, 3072, 4096,
)
CONTEXT_OPTIONS: tuple[int, ...] = tuple(2**k for k in range(10, 21))  # 1K … 1M tokens
GROUP_OPTIONS: tuple[int, ...] = (0, 1, 2, 4, 8, 16, 32, 64, 128)  # 0 = the preset's G
LAYER_OPTIONS: tuple[int, ...] = (0, *range(1, 161))  # 0 = the preset's L_target
RHO_OPTIONS: tuple[float, ...] = (
    0.0, 0.005, 0.01, 0.0125, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1.0
)  # 0.0 = the mechanism's own ρ
TP_OPTIONS: tuple[int, ...] = (1, 2, 4, 8, 16)
DTYPE_OPTIONS: tuple[str, ...] = WEIGHT_DTYPES
KV_DTYPE_OPTIONS: tuple[str, ...] = KV_DTYPES
ACCEPTANCE_OPTIONS: tuple[str, ...] = ("prior", "alpha", "sample", "upload")
DRAFT_LEN_MAX = VIEW_MAX_DRAFT_LEN


@dataclass(frozen=True)
class Param:
    key: str
    label: str
    default: Any
    parse: Callable[[str], Any]
    check: Callable[[Any], str | None]  # None when valid, else the reason


def _in(options: tuple[Any, ...]) -> Callable[[Any], str | None]:
    def check(v: Any) -> str | None:
        if v in options:
            return None
        shown = ", ".join(str(o) for o in options[:12]) + (" …" if len(options) > 12 else "")
        return f"must be one of {shown}"
    return check


def _slug_in(table: Callable[[], Mapping[str, Any]]) -> Callable[[Any], str | None]:
    def check(v: Any) -> str | None:
        return None if v in table() else f"unknown preset; known: {', '.join(table())}"
    return check


def _range(lo: float, hi: float) -> Callable[[Any], str | None]:
    def check(v: Any) -> str | None:
        return None if lo <= v <= hi else f"must be within [{lo:g}, {hi:g}]"
    return check


def _curve_key(v: Any) -> str | None:
    return None if v == "" or v in sample_curves() else "unknown sample curve"


PARAMS: tuple[Param, ...] = (
    Param("hw", "hardware", "h200", str, _slug_in(hardware_presets)),
    Param("m", "target model", "llama-3.1-70b", str, _slug_in(model_presets)),
    Param("mech", "mechanism", "eagle3", str, _slug_in(mechanism_presets)),
    Param("dm", "draft model", "", str,
          lambda v: None if v == "" or v in model_presets() else "unknown draft model preset"),
    Param("dt", "dtype", "bf16", str, _in(DTYPE_OPTIONS)),
    Param("kv", "KV dtype", "bf16", str, _in(KV_DTYPE_OPTIONS)),
    Param("b", "batch B", 32, int, _in(BATCH_OPTIONS)),
    Param("ctx", "context S", 8192, int, _in(CONTEXT_OPTIONS)),
    Param("tp", "TP degree", 2, int, _in(TP_OPTIONS)),
    Param("d", "draft length D", 3, int, _range(0, DRAFT_LEN_MAX)),
    Param("g", "group G", 0, int, _in(GROUP_OPTIONS)),
    Param("L", "L_target", 0, int, _in(LAYER_OPTIONS)),
    Param("rho", "ρ", 0.0, float, _in(RHO_OPTIONS)),
    Param("acc", "acceptance source", "prior", str, _in(ACCEPTANCE_OPTIONS)),
    Param("a", "α", 0.7, float, _range(0.0, 0.99)),
    Param("curve", "sample curve", "", str, _curve_key),
    Param("slo", "per-user SLO (tokens/s)", 30.0, float, _range(0.0, 100000.0)),
    Param("usd", "GPU price ($/h)", 0.0, float, _range(0.0, 1000.0)),
)
PARAM_BY_KEY = {p.key: p for p in PARAMS}


@dataclass(frozen=True)
class ViewState:
    values: dict[str, Any]
    warnings: tuple[str, ...]


def _first(raw: str | list[str]) -> str:
    return raw[0] if isinstance(raw, list) and raw else (raw if isinstance(raw, str) else "")


def decode(params: Mapping[str, str | list[str]]) -> ViewState:
    """Validate every known parameter; unknown ones and bad values are reported, not fatal."""
    values = {p.key: p.default for p in PARAMS}
    warnings: list[str] = []
    version = _first(params.get(VERSION_KEY, URL_VERSION))
    if version != URL_VERSION:
        warnings.append(
            f"URL parameter '{VERSION_KEY}={version[:20]}': unsupported link version; "
            f"read as version {URL_VERSION}"
        )
    unknown = [k for k in params if k not in PARAM_BY_KEY and k not in (VERSION_KEY, SHARE_KEY)]
    if unknown:
        shown = ", ".join(repr(k[:30]) for k in unknown[:5]) + (" …" if len(unknown) > 5 else "")
        warnings.append(f"ignored {len(unknown)} unknown URL parameter(s): {shown}")
    for key, raw in params.items():
        p = PARAM_BY_KEY.get(key)
        if p is None:
            continue
        text = _first(raw)
        if len(text) > MAX_PARAM_CHARS:
            warnings.append(f"URL parameter '{key}' ({p.label}): too long; using the default "
                            f"{p.default!r}")
            continue
        try:
            value = p.parse(text)
        except ValueError:
            warnings.append(f"URL parameter '{key}={text[:40]}' ({p.label}): not a "
                            f"{p.parse.__name__}; using the default {p.default!r}")
            continue
        reason = p.check(value)
        if reason:
            warnings.append(f"URL parameter '{key}={text[:40]}' ({p.label}): {reason}; "
                            f"using the default {p.default!r}")
            continue
        values[key] = value
    return ViewState(values, tuple(warnings))


def is_share_id(text: str) -> bool:
    """Whether an `s` value is there to be read as a saved scenario's id (checked by the store)."""
    return bool(text.strip())


def share_id(params: Mapping[str, str | list[str]]) -> str | None:
    """The saved scenario's id in `?s=<id>`, if the link has one."""
    text = _first(params.get(SHARE_KEY, ""))
    return text if is_share_id(text) else None


def encode(values: Mapping[str, Any]) -> dict[str, str]:
    """Only what differs from the defaults, plus the version: links stay short."""
    out = {VERSION_KEY: URL_VERSION}
    for p in PARAMS:
        v = values.get(p.key, p.default)
        if v != p.default:
            out[p.key] = f"{v:g}" if isinstance(v, float) else str(v)
    return out


def scenario_from_view(values: Mapping[str, Any], uploaded: MeasuredCurve | None = None
                       ) -> Scenario:
    """Build the scenario the explorer evaluates (may raise pydantic/Scenario errors)."""
    acc = Acceptance()
    kind = values["acc"]
    if kind == "alpha":
        acc = Acceptance(kind="iid", alpha=values["a"])
    elif kind == "sample" and values["curve"]:
        acc = Acceptance(kind="curve", curve=sample_curves()[values["curve"]])
    elif kind == "upload" and uploaded is not None:
        acc = Acceptance(kind="curve", curve=uploaded)
    return Scenario(
        hardware=values["hw"], model=values["m"], mechanism=values["mech"],
        draft_model=values["dm"] or None, dtype=values["dt"], kv_dtype=values["kv"],
        batch=values["b"], context=values["ctx"], tp=values["tp"], draft_len=values["d"],
        group=values["g"] or None, layers=values["L"] or None, rho=values["rho"] or None,
        acceptance=acc,
    )
