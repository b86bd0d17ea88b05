"""The explorer's view state ↔ URL query parameters and saved views (short, versioned, validated).

Each setting declared in explorer/specs/settings.py is one URL key and one widget; this module is
their codec. Parsing never raises: a malformed or out-of-range parameter gives a warning that
names it, and its default is used instead. A value the Scenario rejects together with the others
(W below 1+D) falls back the same way, so a link or a saved view always opens. A link's value is
one its widget offers (`offered`: a draft model must be a draft), numbers are ASCII digits, and a
repeated parameter is named and read from its first value; where a bound widget would read the
text otherwise (`L=07`, `rho=1e-2`, repeats) the decoded value is marked `respelled`, and the
sidebar rewrites the link as `spelled` before widgets read it — no value is dropped without a
word.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from explorer.base.errors import ScenarioError
from explorer.presets import preset_table, sample_curves
from explorer.specs.architecture import DrafterSpec, ModelSpec
from explorer.specs.compact import pack, unpack
from explorer.specs.scenario import Acceptance, MeasuredCurve, Scenario
from explorer.specs.settings import (
    SETTING_OF_FIELD,
    SETTINGS,
    Scalar,
    Setting,
    rejected_field,
)

URL_VERSION = "2"
VERSION_KEY = "v"
# What a link of an older version meant by leaving a setting out, where the default has moved
# since: an old link opens with the answer it was shared with. Version 1 priced decode steps
# only (no `out`); version 2 made whole requests of 1,024 output tokens the default.
LINK_DEFAULTS_OF: dict[str, dict[str, str]] = {"1": {"out": "0"}}
# `?s=<id>` opens a saved scenario (explorer/interfaces/store.py); context S is `ctx`.
SHARE_KEY = "s"
# `?vw=<view>` picks the Explorer page's view (which chart is computed, sent and drawn). It is
# navigation, not a scenario setting: saved scenarios do not store it, and a link without it
# opens the default view. A new key (never used before), so old links keep their meaning.
VIEW_KEY = "vw"
# Each view once: its key (the link's value, never renamed) and its title on the switcher; the
# charts drawn in each are rows of explorer/ui/explorer_charts.py CHART_TABLE.
VIEW_TITLES: dict[str, str] = {
    "surface": "Speedup surface", "tiles": "Tile steps", "gemm": "GEMM efficiency",
    "al": "AL vs D", "pareto": "Pareto & SLO", "time": "Where the time goes",
    "mechanisms": "Mechanisms", "sources": "Sources", "export": "Export",
}
VIEWS: tuple[str, ...] = tuple(VIEW_TITLES)
DEFAULT_VIEW = "surface"
MAX_PARAM_CHARS = 200
CUSTOM_MODEL_KEY, CUSTOM_DRAFTER_KEY = "cm", "cd"  # packed specs (explorer/specs/compact.py)
VIEW_ONLY_KEYS: tuple[str, ...] = tuple(s.key for s in SETTINGS if s.field is None)


@dataclass(frozen=True)
class Param:
    key: str
    label: str
    default: Any
    parse: Callable[[str], Any]  # raises ValueError on text that does not spell a value
    check: Callable[[Any], str | None]  # None when valid (with the other settings' defaults)
    setting: Setting


# Numbers as a link spells them: ASCII digits, an optional sign, and for floats a point and an
# exponent. Python's int()/float() also take '7_0', '٣' (other scripts' digits) and spaces,
# which a widget may read differently or not at all: those are named instead.
_INT_TEXT = re.compile(r"[+-]?[0-9]+", re.ASCII)
_FLOAT_TEXT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)


def _parser(s: Setting) -> Callable[[str], Any]:
    if s.value_type is str:
        return str
    pattern, kind = ((_INT_TEXT, "a whole number in digits 0-9") if s.value_type is int
                     else (_FLOAT_TEXT, "a number in digits 0-9"))

    def parse(text: str) -> Any:
        if not pattern.fullmatch(text):
            raise ValueError(f"not {kind}")
        return s.value_type(text)
    return parse


def _listed(options: Any, max_items: int = 12, max_chars: int = 160) -> str:
    """The first few choices, so that a warning stays one short line."""
    items = [str(o) for o in options]
    shown: list[str] = []
    for item in items[:max_items]:
        if shown and len(", ".join([*shown, item])) > max_chars:
            break
        shown.append(item)
    return ", ".join(shown) + (" …" if len(shown) < len(items) else "")


def offered(s: Setting, values: Mapping[str, Any]) -> list[Any]:
    """The choices a setting's widget offers given the other settings' values, and so what a
    link may say for it (its options, or the preset slugs that fit); empty for a range."""
    if s.presets is None:
        return [o for o in s.options if o in _allowed(s, values)]
    slugs = [k for k, p in preset_table(s.presets).items()
             if (not s.preset_roles or getattr(p, "role", None) in s.preset_roles)
             and (s.preset_of is None
                  or getattr(p, s.preset_of[0], None) == values.get(s.preset_of[1]))]
    return ([s.none_value] if s.none_value is not None else []) + slugs


def _allowed(s: Setting, values: Mapping[str, Any]) -> tuple[Any, ...]:
    """The options the preset picked by another setting allows (`options_of`: the engines
    of the chosen GPU); all of them where none is named or the preset is unknown."""
    if s.options_of is None:
        return s.options
    table, attr, other = s.options_of
    preset = preset_table(table).get(str(values.get(other)))
    return tuple(getattr(preset, attr)) if preset is not None else s.options


# Preset choices shown by their names (H200 SXM, Llama-3.1-70B) while the link keeps the slug
# (hw=h200, m=llama-3.1-70b): old links keep opening. A widget bound to the link writes the label
# it shows into the URL, so these widgets are linked by the sidebar itself (`linked_value`).
NAMED_PRESETS = frozenset({"hardware", "model", "mechanism"})


def shown_by_name(s: Setting) -> bool:
    """Whether the page links the setting itself (by value) instead of binding its widget to
    the link: a bound widget links the text it shows, so a preset shown by name, and a "none"
    choice shown by its label ("decode only") that a link must be able to give (it is not the
    default, which a link leaves out), would not round-trip."""
    return s.presets in NAMED_PRESETS or (s.none_value is not None and bool(s.none_label)
                                          and s.default != s.none_value)


def preset_labels(s: Setting, options: list[Any]) -> dict[Any, str]:
    """What each offered choice of a named-preset setting reads as: its preset's name, with the
    slug beside a name that two choices share; a choice that is no preset reads as itself."""
    table = preset_table(s.presets) if s.presets is not None else {}
    names = {o: str(getattr(table.get(o), "name", "") or o) for o in options}
    counts: dict[str, int] = {}
    for n in names.values():
        counts[n] = counts.get(n, 0) + 1
    return {o: n if counts[n] == 1 else f"{n} ({o})" for o, n in names.items()}


def linked_value(s: Setting, value: Any) -> str | None:
    """The link's text for a setting's value; None where the link leaves it out (the default),
    as a bound widget does."""
    return None if value == s.default else spelled(value)


def why_not(s: Setting, value: Any, values: Mapping[str, Any]) -> str | None:
    """Why a link may not give this value for the setting (None: it may)."""
    if s.validate is not None:
        return s.validate(str(value))
    if s.presets is not None:
        choices = offered(s, values)
        if value in choices:
            return None
        choices = [c for c in choices if c != s.none_value]  # named: the slugs
        preset = preset_table(s.presets).get(value)
        if preset is None:
            return f"unknown preset; known: {_listed(choices)}"
        if s.preset_roles and getattr(preset, "role", None) not in s.preset_roles:
            return (f"not offered as a {s.name} (it is a {getattr(preset, 'role', '?')} "
                    f"model); offered: {_listed(choices)}")
        if s.preset_of is not None:
            attr, other = s.preset_of
            return (f"it is for {attr} {getattr(preset, attr, '?')}, not for "
                    f"{other}={values.get(other)}; offered: {_listed(choices) or 'none'}")
        return f"not offered; offered: {_listed(choices)}"
    if s.options:
        if value not in s.options:
            return f"must be one of {_listed(s.options)}"
        allowed = _allowed(s, values)
        if value not in allowed and s.options_of is not None:
            table, attr, other = s.options_of
            name = getattr(preset_table(table).get(str(values.get(other))), "name", "?")
            return (f"{value} does not run on {other}={values.get(other)} ({name}), whose "
                    f"{attr} are {_listed(allowed)}")
        return None
    if s.view_range is not None:
        lo, hi = s.view_range
        return None if lo <= value <= hi else f"must be within [{lo:g}, {hi:g}]"
    return None


DEFAULT_VALUES: dict[str, Any] = {s.key: s.default for s in SETTINGS}


def _check(s: Setting) -> Callable[[Any], str | None]:
    return lambda value: why_not(s, value, DEFAULT_VALUES)


PARAMS: tuple[Param, ...] = tuple(
    Param(s.key, s.name, s.default, _parser(s), _check(s), s) for s in SETTINGS)
PARAM_BY_KEY = {p.key: p for p in PARAMS}


@dataclass(frozen=True)
class ViewState:
    values: dict[str, Any]
    warnings: tuple[str, ...]
    fell_back: tuple[str, ...] = ()  # keys whose given value was replaced by the default
    # Keys read from text that a bound widget would read otherwise or not at all (a repeated
    # parameter, `L=07`, `rho=1e-2`): the page rewrites the link in their plain spelling.
    respelled: tuple[str, ...] = ()
    upgraded: bool = False  # a link of an older version: the page rewrites it at today's


def _first(raw: str | list[str]) -> str:
    return raw[0] if isinstance(raw, list) and raw else (raw if isinstance(raw, str) else "")


def spelled(value: Any) -> str:
    """A view value as a link spells it."""
    return f"{value:g}" if isinstance(value, float) else str(value)




def _clip(text: str, limit: int = 40) -> str:
    return text[:limit] + ("…" if len(text) > limit else "")


def decode(params: Mapping[str, str | list[str]]) -> ViewState:
    """Validate every known parameter; unknown ones and bad values are reported, not fatal.

    Settings are read in declaration order, so a choice that depends on another setting (a
    sample curve on the mechanism) is checked against the value already read for it."""
    values = {p.key: p.default for p in PARAMS}
    warnings: list[str] = []
    fell_back: list[str] = []
    respelled: list[str] = []
    version = _first(params.get(VERSION_KEY, URL_VERSION))
    # an older link's meaning, spelled out; the page rewrites the link so (`respelled`), at
    # today's version, so that a later move of the setting back to today's default stays one
    upgraded = [k for k in LINK_DEFAULTS_OF.get(version, {}) if k not in params]
    if version in LINK_DEFAULTS_OF:
        params = {**LINK_DEFAULTS_OF[version], **params}
    elif version != URL_VERSION:
        warnings.append(
            f"URL parameter '{VERSION_KEY}={version[:20]}': unsupported link version; "
            f"read as version {URL_VERSION}"
        )
    unknown = [k for k in params
               if k not in PARAM_BY_KEY and k not in (VERSION_KEY, SHARE_KEY, VIEW_KEY)]
    view = _first(params.get(VIEW_KEY, DEFAULT_VIEW))
    if view not in VIEWS:
        warnings.append(f"URL parameter '{VIEW_KEY}={_clip(view)}' (view): must be one of "
                        f"{_listed(VIEWS)}; showing the default view '{DEFAULT_VIEW}'")
    if unknown:
        shown = ", ".join(repr(k[:30]) for k in unknown[:5]) + (" …" if len(unknown) > 5 else "")
        warnings.append(f"ignored {len(unknown)} unknown URL parameter(s): {shown}")
    for p in PARAMS:
        if p.key not in params:
            continue
        key, raw = p.key, params[p.key]
        text = _first(raw)
        # One warning per parameter: a repeated one is named with what its first value did.
        too_long = len(text) > max(MAX_PARAM_CHARS, p.setting.max_chars)
        name = f"URL parameter '{key if too_long else f'{key}={_clip(text)}'}' ({p.label})"
        if isinstance(raw, list) and len(raw) > 1:
            given = ", ".join(repr(_clip(x, 20)) for x in raw[:4]) + (" …" if len(raw) > 4
                                                                     else "")
            name = (f"URL parameter '{key}' ({p.label}) is given {len(raw)} times ({given}); "
                    "reading the first")
            respelled.append(key)
        if too_long:
            problem: str | None = "too long"
        else:
            try:
                value = p.parse(text)
                problem = why_not(p.setting, value, values)
            except ValueError as exc:
                problem = str(exc)
        if problem:
            warnings.append(f"{name}: {problem}; using the default {p.default!r}")
            fell_back.append(key)
            continue
        if key in respelled:
            warnings.append(name)
        values[key] = value
        if text != spelled(value):
            respelled.append(key)
    try:
        _, values, rejected = _settle(values)
    except ValidationError:
        rejected = []  # not a link's fault (no setting to fall back): the page explains it
    for s, value, reason in rejected:
        warnings.append(f"URL parameter '{s.key}={spelled(value)}' ({s.name}): {reason}; "
                        f"using the default {s.default!r}")
        fell_back.append(s.key)
    fell = tuple(dict.fromkeys(fell_back))
    return ViewState(values, tuple(warnings), fell,
                     tuple(k for k in dict.fromkeys(respelled + upgraded) if k not in fell),
                     upgraded=version in LINK_DEFAULTS_OF)


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
            out[p.key] = spelled(v)
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
        {**fields, **custom_from_view(values),
         "acceptance": acceptance_from_view(values, uploaded)})


def custom_from_view(values: Mapping[str, Any]) -> dict[str, Any]:
    """The view's packed custom model (`cm`: the target, its slug the model) and drafter
    (`cd`) as Scenario fields; decode() has checked them, so a bad one here raises."""
    out: dict[str, Any] = {}
    if values.get(CUSTOM_MODEL_KEY):
        model = unpack(str(values[CUSTOM_MODEL_KEY]), ModelSpec)
        out.update(custom_model=model, model=model.slug)
    if values.get(CUSTOM_DRAFTER_KEY):
        out["custom_drafter"] = unpack(str(values[CUSTOM_DRAFTER_KEY]), DrafterSpec)
    return out


def view_of_custom(scenario: Scenario) -> dict[str, str]:
    """A scenario's custom model and drafter as the view's packed values."""
    return {CUSTOM_MODEL_KEY: pack(scenario.custom_model) if scenario.custom_model else "",
            CUSTOM_DRAFTER_KEY: pack(scenario.custom_drafter) if scenario.custom_drafter
            else ""}


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
        f"{s.name} ({s.key}={spelled(value)}): {reason} — showing {s.key}={spelled(s.default)}"
        + (f" ({s.none_label})" if s.none_label and s.default == s.none_value else "")
        + " instead." for s, value, reason in rejected)
    return scenario, notes


def view_of_scenario(scenario: Scenario, **view_only: Scalar | None) -> dict[str, Any]:
    """The view values that show a scenario (records saved from the CLI); view-only settings
    (slo=…, usd=…) are given by key, None keeps the default."""
    view = {p.key: p.default for p in PARAMS}
    view.update({s.key: s.to_view(getattr(scenario, s.field)) for s in SETTINGS if s.field})
    view.update(view_of_acceptance(scenario.acceptance, scenario.mechanism))
    view.update(view_of_custom(scenario))
    if scenario.custom_model is not None:  # its slug is no preset: `cm` sets the model
        view["m"] = PARAM_BY_KEY["m"].default
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
    # a view without a version was saved before views were stamped (explorer/ui/share.py): of
    # link version 1 (every view saved since has every setting, `out` included)
    params[VERSION_KEY] = str(view.get(VERSION_KEY, "1"))
    state = decode(params)
    warnings = tuple(w.replace("URL parameter", "saved value", 1) for w in state.warnings)
    return ViewState(state.values, warnings, state.fell_back, state.respelled)

