"""One declaration per setting (explorer/specs/settings.py): the Scenario, the URL codec, the CLI
and the stored view all agree with it, for every setting — including ones added later."""

from __future__ import annotations

import ast
import typing
from pathlib import Path
from typing import Any

import pytest
from annotated_types import Ge, Le

from explorer.base.errors import ScenarioError
from explorer.interfaces import view_state as us
from explorer.interfaces.cli.commands import build_parser
from explorer.interfaces.cli.options import FLAG_OF_FIELD, scenario_from_args
from explorer.interfaces.store import ScenarioStore
from explorer.presets import preset_table
from explorer.specs.scenario import Acceptance, MeasuredCurve, Scenario
from explorer.specs.settings import SETTING_OF_FIELD, SETTINGS, Setting
from tests.support.paths import ROOT

COMPOSITE_FIELDS = {"acceptance", "hardware_overrides", "measured_kernels", "measured_steps",
                    "custom_model", "custom_drafter"}


def with_context(s: Setting, value: Any) -> dict[str, Any]:
    """The default view with this value, and the other setting a preset of it belongs to set
    so that it is offered (a sample curve's mechanism)."""
    values = {p.key: p.default for p in us.PARAMS} | {s.key: value}
    if s.preset_of is not None and value != s.none_value:
        attr, other = s.preset_of
        values[other] = getattr(preset_table(s.presets or "model")[value], attr)
    return values


def choices(s: Setting) -> list[Any]:
    """Every value a link or widget may hold for the setting (a sample of a continuous range)."""
    if s.kind == "text":
        return [s.default, *s.examples]
    if s.options:
        return list(s.options)
    if s.presets is not None:  # every slug offered with some value of the others
        table = preset_table(s.presets)
        return [v for v in ([s.none_value] if s.none_value is not None else []) + list(table)
                if v in us.offered(s, with_context(s, v))]
    assert s.view_range is not None, s.key
    lo, hi = s.view_range
    return [s.value_type(lo), s.value_type(hi), s.value_type((lo + hi) / 2)]


def other_value(s: Setting) -> Any:
    """A valid value that is not the default."""
    return next(v for v in choices(s) if v != s.default and v != s.none_value)


# --- declarations ↔ Scenario ------------------------------------------------------------------

def test_every_scenario_field_has_one_declaration_and_they_agree():
    fields = Scenario.model_fields
    assert set(SETTING_OF_FIELD) == set(fields) - COMPOSITE_FIELDS
    assert len({s.key for s in SETTINGS}) == len(SETTINGS)
    assert len({s.field for s in SETTINGS if s.field}) == len(SETTING_OF_FIELD)
    flags = [s.flag for s in SETTINGS if s.flag]
    assert len(set(flags)) == len(flags)
    for name, s in SETTING_OF_FIELD.items():
        f = fields[name]
        assert f.default == s.scenario_default, name
        assert f.description == s.description and s.description, name
        ge = next((m.ge for m in f.metadata if isinstance(m, Ge)), None)
        le = next((m.le for m in f.metadata if isinstance(m, Le)), None)
        assert (ge, le) == s.bounds, name
        args = typing.get_args(f.annotation)
        optional = type(None) in args
        assert optional == (s.none_value is not None), f"{name}: None ↔ none_value"
        inner = [a for a in args if a is not type(None)] if optional else [f.annotation]
        if typing.get_origin(inner[0]) is typing.Literal:  # a str setting: options = domain
            domain = tuple(o for o in s.options if o != s.none_value)
            assert s.value_type is str and typing.get_args(inner[0]) == domain, name
        else:
            assert inner == [s.value_type], name
            assert not (s.value_type is str and s.options), name


def test_every_view_choice_is_a_valid_scenario_value():
    for s in SETTINGS:
        if s.presets is not None:
            preset_table(s.presets)  # the named table exists
        assert s.section and s.label and s.name, s.key
        assert isinstance(s.default, s.value_type), s.key
        assert s.default in choices(s) or s.kind in ("slider", "number"), s.key
        if s.field is None:
            continue
        lo, hi = s.bounds
        for v in choices(s):
            x = s.to_field(v)
            if x is not None and isinstance(x, int | float):
                assert (lo is None or x >= lo) and (hi is None or x <= hi), (s.key, v)
            assert s.to_view(x) == v, (s.key, v)


def _schema_bounds(prop: dict[str, Any]) -> tuple[Any, Any]:
    for part in [prop, *prop.get("anyOf", [])]:
        if "minimum" in part or "maximum" in part:
            return part.get("minimum"), part.get("maximum")
    return None, None


def test_json_schema_carries_each_declaration():
    props = Scenario.model_json_schema()["properties"]
    for name, s in SETTING_OF_FIELD.items():
        assert props[name]["description"] == s.description
        assert props[name].get("default") == s.scenario_default
        assert _schema_bounds(props[name]) == s.bounds, name


# --- URL codec --------------------------------------------------------------------------------

@pytest.mark.parametrize("s", SETTINGS, ids=lambda s: s.key)
def test_url_round_trip_of_every_value_of_every_setting(s: Setting):
    for value in choices(s):
        values = with_context(s, value)
        link = us.encode(values)
        assert link["v"] == us.URL_VERSION
        assert (s.key in link) == (value != s.default)
        state = us.decode(link)
        assert state.warnings == (), (s.key, value, state.warnings)
        assert state.values == values


# The links that were silently not honoured: each is read as the number it spells (and
# marked so that the page sets the widget to it) or named in a warning.
READ_AS = [  # (params, key, value read)
    ({"rho": "1e-2"}, "rho", 0.01), ({"L": "07"}, "L", 7), ({"L": "+7"}, "L", 7),
    ({"a": "7e-1", "acc": "alpha"}, "a", 0.7), ({"slo": "1E2"}, "slo", 100.0),
    ({"usd": ".5"}, "usd", 0.5), ({"d": "007"}, "d", 7),
]
NAMED = [  # (params, key, words in the warning)
    ({"L": "7_0"}, "L", "'L=7_0' (L_target): not a whole number in digits 0-9"),
    ({"b": "\u0663"}, "b", "'b=\u0663' (batch B): not a whole number in digits 0-9"),
    ({"d": " 7"}, "d", "'d= 7' (draft length D): not a whole number"),
    ({"slo": "1_0"}, "slo", "'slo=1_0' (per-user SLO (tokens/s)): not a number"),
    ({"rho": "nan"}, "rho", "'rho=nan' (ρ): not a number"),
    ({"dm": "llama-3.1-70b", "mech": "external"}, "dm",
     "'dm=llama-3.1-70b' (draft model): not offered as a draft model (it is a target model)"),
    ({"m": "llama-3.2-1b"}, "m", "not offered as a target model (it is a draft model)"),
    ({"curve": next(k for k, c in preset_table("sample_curve").items()
                    if c.mechanism == "dflash"), "mech": "eagle3", "acc": "sample"}, "curve",
     "it is for mechanism dflash, not for mech=eagle3"),
]


@pytest.mark.parametrize(("params", "key", "value"), READ_AS)
def test_a_number_spelled_otherwise_is_read_and_marked_for_the_widget(params, key, value):
    state = us.decode(params)
    assert state.values[key] == value and state.warnings == ()
    assert key in state.respelled and key not in state.fell_back
    assert us.decode(us.encode(state.values)).respelled == ()  # the canonical link is plain


@pytest.mark.parametrize(("params", "key", "needle"), NAMED)
def test_text_that_is_not_a_plain_value_or_not_offered_is_named(params, key, needle):
    state = us.decode(params)
    assert state.values[key] == us.PARAM_BY_KEY[key].default
    assert key in state.fell_back
    (warning,) = state.warnings
    assert needle in warning and "using the default" in warning


@pytest.mark.parametrize(("raw", "value", "fell_back"), [
    (["7", "abc"], 7, False), (["abc", "7"], 3, True), (["8", "16"], 8, False)])
def test_a_repeated_parameter_is_named_and_its_first_value_read(raw, value, fell_back):
    key = "d" if "7" in raw else "b"
    state = us.decode({key: raw})
    assert state.values[key] == value
    assert f"URL parameter '{key}' (" in state.warnings[0]
    assert f"is given 2 times ('{raw[0]}', '{raw[1]}'); reading the first" in state.warnings[0]
    assert (key in state.fell_back) == fell_back and (key in state.respelled) != fell_back
    (warning,) = state.warnings  # one per parameter, with what its first value did
    assert ("not a whole number in digits 0-9; using the default 3" in warning) == fell_back


def test_plain_links_are_not_respelled():
    state = us.decode({"v": "2", "b": "8", "d": "7", "rho": "0.01", "a": "0.55", "m": "qwen3-32b",
                       "slo": "45", "usd": "2.5"})
    assert state.warnings == () and state.respelled == () and state.fell_back == ()
    assert not state.upgraded
    # a version-1 link is rewritten at version 2 with what it meant: decode steps only
    old = us.decode({"v": "1", "b": "8"})
    assert old.warnings == () and old.respelled == ("out",) and old.upgraded
    assert old.values["out"] == 0


def test_old_links_keep_opening_with_the_same_values():
    """A v=1 link from before verify width W existed: every value as it was, W is the chain."""
    state = us.decode({"v": "1", "b": "8", "d": "7", "ctx": "32768", "g": "16", "rho": "0.1",
                       "acc": "alpha", "a": "0.55", "slo": "45", "usd": "2.5"})
    assert state.warnings == ()
    sc = us.scenario_from_view(state.values)
    # … and decode steps only, the default of version 1 (whole requests are version 2's)
    assert sc == Scenario(batch=8, draft_len=7, context=32768, group=16, rho=0.1,
                          acceptance=Acceptance(kind="iid", alpha=0.55), output_tokens=None)
    assert sc.verify_width is None and sc.width == 8
    assert (state.values["slo"], state.values["usd"]) == (45.0, 2.5)


def test_verify_width_below_1_plus_d_falls_back_with_a_message_naming_it():
    state = us.decode({"w": "4", "d": "7"})
    assert state.values["w"] == 0 and state.values["d"] == 7
    [w] = state.warnings
    assert "'w=4' (verify width W)" in w and "1+D = 8" in w and "using the default 0" in w
    assert us.scenario_from_view(state.values).width == 8
    ok = us.decode({"w": "16", "d": "7"})
    assert ok.warnings == () and us.scenario_from_view(ok.values).verify_width == 16

    # The widgets can reach it too (D moved past W): the scenario shown is the chain, named.
    values = {p.key: p.default for p in us.PARAMS} | {"w": 16, "d": 20}
    sc, notes = us.view_scenario(values)
    assert sc.verify_width is None and sc.draft_len == 20
    assert len(notes) == 1 and notes[0].startswith("verify width W (w=16): W=16 must be ≥ 1+D")
    assert us.view_scenario(values | {"w": 32}) == (sc.model_copy(update={"verify_width": 32}),
                                                    ())


def test_a_view_no_default_can_fix_is_a_scenario_error_naming_the_field():
    values = {p.key: p.default for p in us.PARAMS} | {"acc": "alpha", "a": 1.5}
    with pytest.raises(ScenarioError) as info:
        us.view_scenario(values)
    assert info.value.field.endswith("alpha") and "less than or equal to 1" in str(info.value)


# --- stored view ------------------------------------------------------------------------------

def every_setting_changed() -> Scenario:
    fields = {name: SETTING_OF_FIELD[name].to_field(other_value(s))
              for name, s in SETTING_OF_FIELD.items()}
    fields.update(mechanism="external", draft_model="llama-3.2-1b", draft_len=5,
                  verify_width=16)
    return Scenario(**fields, acceptance=Acceptance(kind="iid", alpha=0.5))


def test_stored_view_of_a_scenario_decodes_back_to_it(tmp_path: Path):
    sc = every_setting_changed()
    assert all(getattr(sc, f) != s.scenario_default for f, s in SETTING_OF_FIELD.items())
    store = ScenarioStore(f"sqlite:///{tmp_path / 'db.sqlite3'}")
    view = us.view_of_scenario(sc, slo=45.0, usd=2.5)
    record = store.get(store.save(sc, view).id)
    state = us.decode_view(record.view)
    assert state.warnings == ()
    assert us.scenario_from_view(state.values) == sc == record.scenario
    assert (state.values["slo"], state.values["usd"]) == (45.0, 2.5)
    with pytest.raises(TypeError):
        us.view_of_scenario(sc, b=8)  # a scenario setting comes from the scenario


def test_an_old_stored_view_keeps_opening(tmp_path: Path):
    """The view dict of a record saved before verify width W, the engine and the MoE dtype
    existed (record format 1): it opens with W = chain, the vLLM engine and experts at the
    weights dtype."""
    old = {"hw": "b200", "m": "llama-3.1-8b", "mech": "eagle3", "dm": "", "dt": "fp8",
           "kv": "bf16", "b": 16, "ctx": 32768, "tp": 1, "d": 5, "g": 0, "L": 0, "rho": 0.0,
           "acc": "alpha", "a": 0.6, "curve": "", "slo": 45.0, "usd": 2.5}
    store = ScenarioStore(f"sqlite:///{tmp_path / 'db.sqlite3'}")
    sc = Scenario(hardware="b200", model="llama-3.1-8b", dtype="fp8", batch=16, context=32768,
                  tp=1, draft_len=5, acceptance=Acceptance(kind="iid", alpha=0.6),
                  output_tokens=None)  # decode steps only, as then
    record = store.get(store.save(sc, old).id)
    assert record.view == old
    state = us.decode_view(record.view)
    assert state.warnings == ()
    assert state.values == old | {"w": 0, "eng": "vllm", "dp": us.DEFAULT_VALUES["dp"],
                                  "moe": "", "cm": "", "cd": "", "out": 0}
    assert us.scenario_from_view(state.values) == sc
    assert sc.engine == "vllm"


def test_a_sample_curve_and_an_upload_come_back_as_such():
    sample_key = next(k for k, c in preset_table("sample_curve").items()
                      if c.mechanism == "eagle3")
    values = {p.key: p.default for p in us.PARAMS} | {"acc": "sample", "curve": sample_key}
    sc = us.scenario_from_view(values)
    assert us.view_of_scenario(sc) == values
    mine = MeasuredCurve(draft_lens=(1, 2), acceptance_lengths=(1.5, 1.9))
    up = us.scenario_from_view(values | {"acc": "upload", "curve": ""}, mine)
    assert us.view_of_scenario(up)["acc"] == "upload"
    assert us.acceptance_from_view(us.view_of_scenario(up), mine) == up.acceptance


# --- CLI --------------------------------------------------------------------------------------

def _subparser(parser: Any, *path: str) -> Any:
    for name in path:
        action = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
        parser = action.choices[name]
    return parser


def _flags(parser: Any) -> set[str]:
    return {o for a in parser._actions for o in a.option_strings}


def test_cli_has_a_flag_for_every_declaration_that_names_one():
    parser = build_parser()
    commands = [("evaluate",), ("recommend",), ("sweep",), ("scenario", "save")]
    for s in SETTINGS:
        if s.flag is None:
            continue
        where = commands if s.field else [("scenario", "save")]
        for path in where:
            assert s.flag in _flags(_subparser(parser, *path)), (s.flag, path)
        if s.field:
            assert FLAG_OF_FIELD[s.field] == s.flag


@pytest.mark.parametrize("s", [s for s in SETTINGS if s.field and s.flag], ids=lambda s: s.key)
def test_each_flag_sets_its_field(s: Setting):
    value = s.to_field(other_value(s))
    argv = ["evaluate", str(s.flag), f"{value:g}" if isinstance(value, float) else str(value)]
    if s.field == "verify_width":
        argv += ["--draft-len", "3"]
    sc = scenario_from_args(build_parser().parse_args(argv))
    assert getattr(sc, str(s.field)) == value


def test_sweep_lists_exactly_the_declared_settings():
    sweep = _subparser(build_parser(), "sweep")
    listed = {s.flag for s in SETTINGS if s.sweep}
    assert listed == {"--batch", "--draft-len", "--group", "--context", "--mechanism",
                      "--output-tokens"}
    for a in sweep._actions:
        if a.option_strings and a.option_strings[0] in listed:
            assert a.type is None and a.choices is None, a.option_strings  # read as a list


def test_cli_modules_import_without_a_cycle():
    """options ← scenario ← commands ← __init__: each module uses only the ones before it."""
    pkg = "explorer.interfaces.cli"
    order = ["options", "scenario", "deploy", "bench", "commands", "__init__"]
    for i, name in enumerate(order):
        path = ROOT / "explorer" / "interfaces" / "cli" / f"{name}.py"
        uses: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == pkg:
                uses.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(pkg + "."):
                uses.add(str(node.module).rsplit(".", 1)[1])
            elif isinstance(node, ast.Import):
                uses.update(a.name.rsplit(".", 1)[1] for a in node.names
                            if a.name.startswith(pkg + "."))
        assert uses <= set(order[:i]), (name, uses - set(order[:i]))


def test_the_settings_module_is_the_specs_layer():
    tree = ast.parse((ROOT / "explorer" / "specs" / "settings.py").read_text(encoding="utf-8"))
    modules = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    own = {m for m in modules if m.startswith("explorer")}
    # …and leaves that import no explorer module (checked below): explorer.specs.deployment
    # gives the deployment-profile setting its default and its check; architecture and
    # compact give the custom model/drafter settings (`cm`, `cd`) theirs.
    leaves = {"explorer.specs.deployment", "explorer.specs.architecture",
              "explorer.specs.compact"}
    assert all(m.startswith("explorer.base.") or m in leaves for m in own), own
    for name in leaves:
        path = ROOT / (name.replace(".", "/") + ".py")
        leaf = ast.parse(path.read_text(encoding="utf-8"))
        # The base layer lies below every layer: the shared caps, the one quoting/reading and
        # the mechanism registry (explorer/base/mechanisms.py).
        assert not {n.module for n in ast.walk(leaf) if isinstance(n, ast.ImportFrom)
                    and (n.module or "").startswith("explorer")
                    and not (n.module or "").startswith("explorer.base.")}, name


# --- custom models in links (`cm`, `cd`: explorer/specs/compact.py) ---------------------------

def test_a_custom_model_and_drafter_round_trip_through_a_plain_link():
    from explorer.measured.hf_config import read_shipped, shipped_config_paths
    from explorer.specs.architecture import DrafterSpec
    from explorer.specs.compact import pack

    path = next(p for p in shipped_config_paths() if "Nemotron-3-Nano-30B-A3B-BF16" in p.name)
    model = read_shipped(path).model
    assert model is not None
    head = DrafterSpec(kind="eagle3", name="head", draft_layers=2, draft_vocab=32000)
    sc = Scenario(model=model.slug, custom_model=model, custom_drafter=head, tp=4)
    view = us.view_of_scenario(sc)
    link = us.encode(view)
    assert link["cm"] == pack(model) and link["cd"] == pack(head)
    assert len(link["cm"]) < 2000  # a whole model in a short link
    state = us.decode(link)
    assert state.warnings == ()
    back = us.scenario_from_view(state.values)
    assert back == sc
    assert back.custom_model == model and back.custom_drafter == head


def test_old_links_have_no_custom_model():
    state = us.decode({"m": "llama-3.1-8b", "b": "16"})
    assert state.values["cm"] == state.values["cd"] == ""
    assert us.scenario_from_view(state.values).custom_model is None


def _packed(raw: bytes) -> str:
    import base64
    import zlib

    return base64.urlsafe_b64encode(zlib.compress(raw)).decode().rstrip("=")


@pytest.mark.parametrize(("value", "words"), [
    ("A" * 5000, "URL parameter 'cm' (custom target model): too long"),
    ("not*base64", "not a packed spec (base64url"),
    (_packed(b"[1, 2]"), "not a packed spec (not an object)"),
    (_packed(b"{1: eval}"), "not a packed spec: not valid JSON"),
    (_packed(b"[" * 60000), "the limit is 32 (MAX_JSON_DEPTH)"),
    (_packed(b'{"hidden": ' + b"9" * 5000 + b"}"), "(MAX_NUMBER_CHARS)"),
    ("eNpLy0nMBQ", "not a packed spec (cut short)"),
    ("", None),
])
def test_a_tampered_or_oversized_custom_model_is_refused_naming_the_key(value, words):
    state = us.decode({"cm": value})
    if words is None:
        assert state.warnings == ()
        return
    assert state.values["cm"] == "" and "cm" in state.fell_back
    assert any(words in w and "'cm" in w for w in state.warnings), state.warnings


def test_a_zip_bomb_or_a_bad_spec_is_refused():
    from explorer.specs.compact import MAX_UNPACKED_BYTES

    state = us.decode({"cm": _packed(b" " * (MAX_UNPACKED_BYTES * 4))})
    assert any("does not unpack within" in w for w in state.warnings), state.warnings
    state = us.decode({"cm": _packed(b'{"slug": "x", "layers": "many"}')})
    assert any("not a valid ModelSpec" in w and "'cm" in w for w in state.warnings)


def test_the_acceptance_source_says_it_sets_the_chosen_mechanisms_al_only():
    """α = 0.5 on EAGLE-3 made the external draft model the answer with AL 3.05 at D = 4: the
    source sets the chosen mechanism's AL, the others keep their priors; the help says so."""
    from explorer.analysis.recommend import recommend
    from explorer.specs.scenario import Acceptance, Scenario
    from explorer.specs.settings import SETTINGS

    help_text = next(s.help for s in SETTINGS if s.key == "acc")
    assert "It sets the chosen draft mechanism's AL; the recommendation ranks the other " \
        "mechanisms on their own priors" in help_text
    iid = {(o.mechanism, o.draft_len): o.acceptance_length for o in recommend(
        Scenario(acceptance=Acceptance(kind="iid", alpha=0.5))).ranking}
    prior = {(o.mechanism, o.draft_len): o.acceptance_length
             for o in recommend(Scenario()).ranking}
    assert iid[("eagle3", 4)] == pytest.approx((1 - 0.5**5) / (1 - 0.5))  # i.i.d.: Σ α^k
    assert iid[("external", 4)] == pytest.approx(prior[("external", 4)])
