"""The explorer's view state ↔ URL query parameters and saved views (short, versioned, validated).

Each setting declared in explorer/specs/settings.py is one URL key and one widget; this module is
their codec. Parsing never raises: a malformed or out-of-range parameter gives a warning that
names it, and its default is used instead. A value the Scenario rejects together with the others
(W below 1+D) falls back the same way, so a link or a saved view always opens.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from explorer.base.errors import ScenarioError
from explorer.presets import preset_table, sample_curves
from explorer.specs.scenario import Acceptance, MeasuredCurve, Scenario
from explorer.specs.settings import (
    SETTING_OF_FIELD,
    SETTINGS,
    Scalar,
    Setting,
    rejected_field,
)

URL_VERSION = "1"
VERSION_KEY = "v"
# `?s=<id>` opens a saved scenario (explorer/interfaces/store.py); context S is `ctx`.
SHARE_KEY = "s"
MAX_PARAM_CHARS = 200
VIEW_ONLY_KEYS: tuple[str, ...] = tuple(s.key for s in SETTINGS if s.field is None)


@dataclass(frozen=True)
class Param:
    key: str
    label: str
    default: Any
    parse: Callable[[str], Any]
    check: Callable[[Any], str | None]  # None when valid, else the reason
    setting: Setting


def _listed(options: Any, max_items: int = 12, max_chars: int = 160) -> str:
    """The first few choices, so that a warning stays one short line."""
    items = [str(o) for o in options]
    shown: list[str] = []
    for item in items[:max_items]:
        if shown and len(", ".join([*shown, item])) > max_chars:
            break
        shown.append(item)
    return ", ".join(shown) + (" …" if len(shown) < len(items) else "")


def _check(s: Setting) -> Callable[[Any], str | None]:
    """What a link may say for a setting: one of its options, a preset slug, or in its range."""
    if s.options:
        options = s.options

        def check_option(v: Any) -> str | None:
            return None if v in options else f"must be one of {_listed(options)}"
        return check_option
    if s.presets is not None:
        table = s.presets

        def check_slug(v: Any) -> str | None:
            known = preset_table(table)
            ok = v in known or (s.none_value is not None and v == s.none_value)
            return None if ok else f"unknown preset; known: {_listed(known)}"
        return check_slug
    if s.view_range is not None:
        lo, hi = s.view_range

        def check_range(v: Any) -> str | None:
            return None if lo <= v <= hi else f"must be within [{lo:g}, {hi:g}]"
        return check_range
    return lambda v: None


PARAMS: tuple[Param, ...] = tuple(
    Param(s.key, s.name, s.default, s.value_type, _check(s), s) for s in SETTINGS)
PARAM_BY_KEY = {p.key: p for p in PARAMS}


@dataclass(frozen=True)
class ViewState:
    values: dict[str, Any]
    warnings: tuple[str, ...]
    fell_back: tuple[str, ...] = ()  # keys whose given value was replaced by the default


def _first(raw: str | list[str]) -> str:
    return raw[0] if isinstance(raw, list) and raw else (raw if isinstance(raw, str) else "")


def _shown(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def decode(params: Mapping[str, str | list[str]]) -> ViewState:
    """Validate every known parameter; unknown ones and bad values are reported, not fatal."""
    values = {p.key: p.default for p in PARAMS}
    warnings: list[str] = []
    fell_back: list[str] = []
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
            fell_back.append(key)
            continue
        try:
            value = p.parse(text)
        except ValueError:
            warnings.append(f"URL parameter '{key}={text[:40]}' ({p.label}): not a "
                            f"{p.parse.__name__}; using the default {p.default!r}")
            fell_back.append(key)
            continue
        reason = p.check(value)
        if reason:
            warnings.append(f"URL parameter '{key}={text[:40]}' ({p.label}): {reason}; "
                            f"using the default {p.default!r}")
            fell_back.append(key)
            continue
        values[key] = value
    try:
        _, values, rejected = _settle(values)
    except ValidationError:
        rejected = []  # not a link's fault (no setting to fall back): the page explains it
    for s, value, reason in rejected:
        warnings.append(f"URL parameter '{s.key}={_shown(value)}' ({s.name}): {reason}; "
                        f"using the default {s.default!r}")
        fell_back.append(s.key)
    return ViewState(values, tuple(warnings), tuple(dict.fromkeys(fell_back)))


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
            out[p.key] = _shown(v)
    return out


# --- view ↔ scenario -------------------------------------------------------------------------

def acceptance_from_view(values: Mapping[str, Any], uploaded: MeasuredCurve | None = None
                         ) -> Acceptance:
    """The view's acceptance settings (acc, a, curve) as the Scenario's Acceptance."""
    kind = values.get("acc", PARAM_BY_KEY["acc"].default)
    curve_key = values.get("curve", "")
    if kind == "alpha":
        return Acceptance(kind="iid", alpha=values.get("a", PARAM_BY_KEY["a"].default))
    if kind == "sample" and curve_key:
        return Acceptance(kind="curve", curve=sample_curves()[curve_key])
    if kind == "upload" and uploaded is not None:
        return Acceptance(kind="curve", curve=uploaded)
    return Acceptance()


def view_of_acceptance(acc: Acceptance, mechanism: str) -> dict[str, Any]:
    """The Scenario's Acceptance as the view's acceptance settings (a curve that is a shipped
    sample for the mechanism shows as that sample, any other as an upload)."""
    if acc.kind == "iid" and acc.alpha is not None:
        return {"acc": "alpha", "a": acc.alpha}
    if acc.kind == "curve" and acc.curve is not None:
        for key, c in sample_curves().items():
            if (c.mechanism == mechanism and c.draft_lens == acc.curve.draft_lens
                    and c.acceptance_lengths == acc.curve.acceptance_lengths):
                return {"acc": "sample", "curve": key}
        return {"acc": "upload"}
    return {}


def scenario_from_view(values: Mapping[str, Any], uploaded: MeasuredCurve | None = None
                       ) -> Scenario:
    """The scenario a view describes (raises pydantic's ValidationError where it rejects it)."""
    fields = {s.field: s.to_field(values.get(s.key, s.default)) for s in SETTINGS if s.field}
    return Scenario.model_validate(
        {**fields, "acceptance": acceptance_from_view(values, uploaded)})


def _settle(values: Mapping[str, Any], uploaded: MeasuredCurve | None = None
            ) -> tuple[Scenario, dict[str, Any], list[tuple[Setting, Any, str]]]:
    """The scenario of a view whose settings the Scenario rejects together (W < 1+D): each
    rejected setting goes back to its default, and is returned with its value and the reason."""
    vals = dict(values)
    rejected: list[tuple[Setting, Any, str]] = []
    while True:  # ends: every pass sets one more setting to its default, or raises
        try:
            return scenario_from_view(vals, uploaded), vals, rejected
        except ValidationError as exc:
            path, message = rejected_field(exc)
            s = SETTING_OF_FIELD.get(str(path[0])) if path else None
            if s is None or vals.get(s.key, s.default) == s.default:
                raise
            rejected.append((s, vals[s.key], message))
            vals[s.key] = s.default


def view_scenario(values: Mapping[str, Any], uploaded: MeasuredCurve | None = None
                  ) -> tuple[Scenario, tuple[str, ...]]:
    """The scenario the explorer shows for the current widgets, and a note for each setting it
    had to put back to its default; a ScenarioError naming the field where none helps."""
    try:
        scenario, _, rejected = _settle(values, uploaded)
    except ValidationError as exc:
        path, message = rejected_field(exc)
        raise ScenarioError(".".join(str(x) for x in path) or "scenario", message) from None
    notes = tuple(
        f"{s.name} ({s.key}={_shown(value)}): {reason} — showing {s.key}={_shown(s.default)}"
        + (f" ({s.none_label})" if s.none_label and s.default == s.none_value else "")
        + " instead." for s, value, reason in rejected)
    return scenario, notes


def view_of_scenario(scenario: Scenario, **view_only: Scalar | None) -> dict[str, Any]:
    """The view values that show a scenario (records saved from the CLI); view-only settings
    (slo=…, usd=…) are given by key, None keeps the default."""
    view = {p.key: p.default for p in PARAMS}
    view.update({s.key: s.to_view(getattr(scenario, s.field)) for s in SETTINGS if s.field})
    view.update(view_of_acceptance(scenario.acceptance, scenario.mechanism))
    for key, value in view_only.items():
        if key not in VIEW_ONLY_KEYS:
            raise TypeError(f"view_of_scenario: '{key}' is not a view-only setting")
        if value is not None:
            view[key] = value
    return view


def decode_view(view: Mapping[str, Any]) -> ViewState:
    """A stored view through the URL-state validation: bad values are named and fall back.
    Settings added since it was saved take their defaults (old records keep opening)."""
    params = {k: (repr(v) if isinstance(v, float) else str(v)) for k, v in view.items()
              if k in PARAM_BY_KEY and v is not None}
    state = decode(params)
    warnings = tuple(w.replace("URL parameter", "saved value", 1) for w in state.warnings)
    return ViewState(state.values, warnings, state.fell_back)

