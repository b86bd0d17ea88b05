"""One declaration per scenario setting; everything that shows or reads a setting derives from it.

A `Setting` says what the setting is (its `Scenario` field, or none for view-only settings such as
the SLO and the GPU price), its type, unit, range and default, and how each interface spells it:
URL key, CLI flag, widget label, kind and choices, and which view value stands for "no override"
(URL `g=0` ↔ `Scenario.group = None`). From `SETTINGS` derive:

- the `Scenario` fields' defaults, bounds and descriptions (`setting_field`), hence its JSON schema;
- the URL codec and the stored view (explorer/interfaces/view_state.py: PARAMS, decode, encode,
  scenario_from_view, view_of_scenario, decode_view);
- the CLI's scenario options, its flag-of-field map, the override loop and the sweep's list
  options (explorer/interfaces/cli/options.py);
- the sidebar widgets (explorer/ui/controls.py loops over SETTINGS; format functions and captions,
  which are presentation only, stay there).

Acceptance is a composite: its view settings (`acc`, `a`, `curve`) are declared here without a
field, and view_state.py holds the one conversion each way (`acceptance_from_view`,
`view_of_acceptance`).

Recipe for the next setting (this is how verify width W, URL `w`, was added):
1. add its `Setting(...)` to SETTINGS below, where its widget should appear: a new URL key (short,
   never reused: links are versioned), a CLI flag, a label, a kind with its options or range, the
   default, and `none_value` if the view spells the field's None with a value (0, "");
   `preset_roles` / `preset_of` where only some preset slugs fit (a draft model; a curve of
   the chosen mechanism): the widget offers, and a link may give, only those;
2. declare the field in `Scenario` (explorer/specs/scenario.py) with its annotation and
   `= setting_field("<field>")` — tests/unit/test_settings.py checks that the two agree;
3. use the field in the model (explorer/model).
The schema, link, stored view, CLI flag and widget then exist and are tested for every setting.
A rule between settings (W ≥ 1+D) belongs in `Scenario`'s validator: a link or a saved view that
breaks it falls back to the setting's default with a message naming it (view_state.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, ValidationError

from explorer.base.dtypes import KV_DTYPES, WEIGHT_DTYPES, normalize_dtype
from explorer.base.engines import DEFAULT_ENGINE, SERVING_ENGINES
from explorer.base.limits import MAX_DRAFT_LEN, VIEW_MAX_DRAFT_LEN
from explorer.base.mechanisms import DEFAULT_MECHANISM, draft_model_mechanism
from explorer.specs.architecture import DrafterSpec, ModelSpec
from explorer.specs.compact import MAX_PACKED_CHARS, pack, packed_problem
from explorer.specs.deployment import DEFAULT_PROFILE_URL, URL_MAX_CHARS, url_problem

Scalar = int | float | str
WidgetKind = Literal["select", "select_slider", "slider", "radio", "number", "text"]
# Preset tables a setting can take its choices from (resolved by explorer.presets.preset_table).
PresetTable = Literal["hardware", "model", "mechanism", "sample_curve"]

BATCH_OPTIONS: tuple[int, ...] = (
    1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536,
    2048, 3072, 4096,
)
CONTEXT_OPTIONS: tuple[int, ...] = tuple(2**k for k in range(10, 21))  # 1K … 1M tokens
# 0 = decode steps only (the article's ratio); else tokens generated per request
OUTPUT_TOKEN_OPTIONS: tuple[int, ...] = (0, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768)
VERIFY_WIDTH_OPTIONS: tuple[int, ...] = (0, 4, 8, 16, 32, 48, 64, 96, 128, 256)  # 0 = chain
GROUP_OPTIONS: tuple[int, ...] = (0, 1, 2, 4, 8, 16, 32, 64, 128)  # 0 = the preset's G
LAYER_OPTIONS: tuple[int, ...] = (0, *range(1, 161))  # 0 = the preset's L_target
RHO_OPTIONS: tuple[float, ...] = (
    0.0, 0.005, 0.01, 0.0125, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1.0
)  # 0.0 = the mechanism's own ρ
TP_OPTIONS: tuple[int, ...] = (1, 2, 4, 8, 16)
DTYPE_OPTIONS: tuple[str, ...] = WEIGHT_DTYPES
MOE_DTYPE_OPTIONS: tuple[str, ...] = ("", *WEIGHT_DTYPES)  # "" = the weights dtype
KV_DTYPE_OPTIONS: tuple[str, ...] = KV_DTYPES
ACCEPTANCE_OPTIONS: tuple[str, ...] = ("prior", "alpha", "sample", "upload")


@dataclass(frozen=True)
class Setting:
    key: str  # URL parameter and widget key: part of versioned links and saved views
    name: str  # short name in messages ("batch B")
    label: str  # widget label
    value_type: type[int] | type[float] | type[str]
    default: Scalar  # the view's value (URL, widget, stored view)
    section: str  # the sidebar group the widget is in
    field: str | None = None  # Scenario field; None for a view-only setting
    description: str = ""  # the Scenario field's description (JSON schema), CLI help
    unit: str = ""
    help: str | None = None  # widget tooltip
    kind: WidgetKind = "select"
    options: tuple[Scalar, ...] = ()  # the discrete choices of the widget and of links
    presets: PresetTable | None = None  # choices are this preset table's slugs…
    preset_roles: tuple[str, ...] = ()  # …of models in these roles only (draft, target)…
    preset_of: tuple[str, str] | None = None  # …whose attribute is another setting's value
    # The options that the preset another setting picks lists in an attribute (table,
    # attribute, that setting's key): the engines of the chosen GPU.
    options_of: tuple[PresetTable, str, str] | None = None
    view_range: tuple[float, float] | None = None  # a continuous widget's and link's range
    step: float | None = None
    bounds: tuple[float | None, float | None] = (None, None)  # the Scenario's ge / le
    none_value: Scalar | None = None  # the view value that means Scenario None ("no override")
    none_label: str = ""  # what that value shows as
    overrides_preset: bool = False  # replaces a number of the model/mechanism preset
    symbol: str = ""  # short mention, e.g. in "Override of the preset: G"
    applies_when: tuple[str, Scalar] | None = None  # only meaningful when that setting has that
    moe_only: bool = False  # only meaningful for a target with routed experts (MoE)
    flag: str | None = None  # CLI flag (scenario options; view-only ones on `scenario save`)
    sweep: bool = False  # `sweep` takes a list or range for it
    # A "text" setting: its own check of a link's value (None: valid), its longest value, and
    # examples of valid values other than the default (tests and docs read them).
    validate: Callable[[str], str | None] | None = None
    max_chars: int = 200
    examples: tuple[Scalar, ...] = ()
    page: str | None = None  # edited on that page, not in the sidebar (kept in the session)
    # The CLI reads the flag's text through this before checking the options (dtype spellings:
    # `--dtype fp8-block` is fp8_block).
    parse: Callable[[str], Scalar] | None = None

    @property
    def scenario_default(self) -> Scalar | None:
        return None if self.none_value is not None and self.default == self.none_value \
            else self.default

    def to_field(self, value: Any) -> Any:
        """The view value as the Scenario field's value."""
        return None if self.none_value is not None and value == self.none_value else value

    def to_view(self, value: Any) -> Any:
        """The Scenario field's value as the view value."""
        return self.none_value if value is None else value

    @property
    def dest(self) -> str:
        """The argparse attribute of the flag."""
        return (self.flag or "").removeprefix("--").replace("-", "_")


# Examples of packed custom specs (the tests' round trips; any valid spec packs the same way).
_EXAMPLE_MODEL = ModelSpec(slug="hf-example-00000000", name="example", layers=2, hidden=64,
                           q_heads=4, kv_heads=2, head_dim=16, ffn_intermediate=128, vocab=1000)
_EXAMPLE_DRAFTER = DrafterSpec(kind=DEFAULT_MECHANISM, name="example head", draft_layers=1,
                               draft_vocab=32000)

SETTINGS: tuple[Setting, ...] = (
    Setting("hw", "hardware", "Hardware", str, "h200", "Scenario", field="hardware",
            description="hardware preset slug", presets="hardware", flag="--hardware"),
    Setting("m", "target model", "Target model", str, "llama-3.1-70b", "Scenario", field="model",
            description="target model preset slug", presets="model",
            preset_roles=("target", "both"), flag="--model"),
    Setting("mech", "mechanism", "Draft mechanism", str, DEFAULT_MECHANISM, "Scenario",
            field="mechanism", description="draft mechanism slug", presets="mechanism",
            flag="--mechanism", sweep=True),
    Setting("dm", "draft model", "Draft model", str, "", "Scenario", field="draft_model",
            description="draft model slug (external)", presets="model",
            preset_roles=("draft", "both"), none_value="",
            none_label="default for the target", applies_when=("mech", draft_model_mechanism()),
            flag="--draft-model"),
    Setting("b", "batch B", "Batch B (sequences, log scale)", int, 32, "The article's knobs",
            field="batch", description="B, concurrent sequences", unit="sequences",
            kind="select_slider", options=BATCH_OPTIONS, bounds=(1, 65536), symbol="B",
            flag="--batch", sweep=True),
    Setting("d", "draft length D", "Draft length D", int, 3, "The article's knobs",
            field="draft_len", description="D, tokens drafted", unit="tokens", kind="slider",
            view_range=(0, VIEW_MAX_DRAFT_LEN), step=1, bounds=(0, MAX_DRAFT_LEN), symbol="D",
            flag="--draft-len", sweep=True),
    Setting("w", "verify width W", "Verify width W (tokens per sequence, trees)", int, 0,
            "The article's knobs", field="verify_width",
            description="W, tokens verified per sequence (trees); ≥ 1+D", unit="tokens",
            help="Tokens the target verifies per sequence in one step: a chain draft verifies "
            "1+D, a tree draft more (W ≥ 1+D).",
            kind="select_slider", options=VERIFY_WIDTH_OPTIONS, bounds=(1, 1024), none_value=0,
            none_label="chain (1+D)", symbol="W", flag="--verify-width"),
    Setting("g", "group G", "Group G (query heads per KV head)", int, 0, "The article's knobs",
            field="group", description="G override (q per KV head)", kind="select_slider",
            options=GROUP_OPTIONS, bounds=(1, 256), none_value=0, none_label="preset",
            overrides_preset=True, symbol="G", flag="--group", sweep=True),
    Setting("L", "L_target", "L_target (layers)", int, 0, "The article's knobs", field="layers",
            description="L_target override", unit="layers", kind="select_slider",
            options=LAYER_OPTIONS, bounds=(1, 1000), none_value=0, none_label="preset",
            overrides_preset=True, symbol="L_target", flag="--layers"),
    Setting("rho", "ρ", "ρ = L_draft / L_target", float, 0.0, "The article's knobs", field="rho",
            description="ρ = L_draft/L_target override", kind="select_slider",
            options=RHO_OPTIONS, bounds=(0, 4), none_value=0.0, none_label="mechanism's own",
            overrides_preset=True, symbol="ρ", flag="--rho"),
    Setting("ctx", "context S", "Context S (KV tokens per sequence)", int, 8192, "Workload",
            field="context", description="S, KV tokens per sequence", unit="tokens",
            kind="select_slider", options=CONTEXT_OPTIONS, bounds=(1, 2_000_000), symbol="S",
            flag="--context", sweep=True),
    # Whole requests are the default answer: a serving run prefills every prompt on the GPUs that
    # decode (chunked prefill), and the published speed-ups are measured so. 1,024 output tokens:
    # InferenceX's standard 1K/1K and 8K/1K runs both generate 1K (SemiAnalysisAI/InferenceX
    # .github/workflows/8k1k-sweep.yml @2cd0295: isl 8192, osl 1024; 1k1k-sweep.yml).
    # 0 prices decode steps only (the article's ratio; prefill disaggregated). Links of version 1
    # and views saved before it have no `out` and keep decode steps (view_state.LINK_DEFAULTS_OF).
    Setting("out", "output tokens N", "Output tokens per request N (prompt = S)", int, 1024,
            "Workload", field="output_tokens",
            description="N, tokens each request generates; its prompt of S tokens is prefilled "
            "once, in the decode steps (chunked prefill), and speculation does not shorten it. "
            "0 = decode steps only (the article's ratio; prefill on other GPUs)", unit="tokens",
            help="A serving run prefills every request's prompt (S tokens) once; speculation "
            "shortens only the N decode tokens. Speedup and tokens/s are over whole requests in "
            "steady state: each step also carries the prefill of the requests that replace the "
            "finished ones (more of them with speculation). The default, 1,024, is what "
            "InferenceX's standard runs generate (1K/1K, 8K/1K). 'decode only' prices decode "
            "steps alone, as the article's formula does: right where prefill runs on other GPUs "
            "(disaggregated serving).",
            kind="select_slider", options=OUTPUT_TOKEN_OPTIONS, bounds=(1, 1_000_000),
            none_value=0, none_label="decode only", symbol="N", flag="--output-tokens",
            sweep=True),
    Setting("tp", "TP degree", "Tensor parallel (GPUs)", int, 2, "Workload", field="tp",
            description="tensor-parallel degree", unit="GPUs", options=TP_OPTIONS,
            bounds=(1, 64), flag="--tp"),
    Setting("dt", "dtype", "Weights dtype", str, "bf16", "Workload", field="dtype",
            description="weight/GEMM dtype", options=DTYPE_OPTIONS, flag="--dtype",
            parse=normalize_dtype),
    # Links and saved scenarios from before the setting have no `moe`: the weights dtype, as
    # the model priced experts then.
    Setting("moe", "MoE expert dtype", "MoE expert dtype", str, "", "Workload",
            field="moe_dtype", description="routed-expert weight/GEMM dtype (MoE models; "
            "default: the weights dtype)",
            help="Deployments often quantize the routed experts further than the rest (NVFP4 "
            "experts with BF16 attention): their GEMMs and weight bytes use this dtype "
            "(offered for MoE targets only).",
            options=MOE_DTYPE_OPTIONS, none_value="", none_label="same as weights",
            moe_only=True, flag="--moe-dtype", parse=normalize_dtype),
    Setting("kv", "KV dtype", "KV-cache dtype", str, "bf16", "Workload", field="kv_dtype",
            description="KV-cache dtype", options=KV_DTYPE_OPTIONS, flag="--kv-dtype"),
    Setting("eng", "serving engine", "Serving engine", str, DEFAULT_ENGINE, "Workload",
            field="engine", description="serving engine: its measured kernel tables and its "
            "profile (step and draft-forward overheads, CUDA-graph sizes)",
            help="The engine whose measured kernels (aiconfigurator-core) and fixed costs "
            "(data/engines.csv) price each step. Only the engines that run on the chosen "
            "GPU are offered (data/hardware.csv `engines`).",
            options=SERVING_ENGINES, options_of=("hardware", "engines", "hw"),
            flag="--engine"),
    # Acceptance: view settings of the composite Scenario.acceptance (see view_state.py).
    Setting("acc", "acceptance source", "AL source", str, "prior", "Acceptance",
            help="prior: the mechanism's prior fitted to published curves; alpha: i.i.d. α; "
            "sample: a shipped measured curve; upload: a curve you uploaded on the Data page. "
            "It sets the chosen draft mechanism's AL; the recommendation ranks the other "
            "mechanisms on their own priors",
            kind="radio", options=ACCEPTANCE_OPTIONS),
    Setting("a", "α", "α (i.i.d. acceptance rate)", float, 0.7, "Acceptance", kind="slider",
            view_range=(0.0, 0.99), step=0.01, applies_when=("acc", "alpha")),
    Setting("curve", "sample curve", "Sample curve (mechanism/model/dataset)", str, "",
            "Acceptance", presets="sample_curve", preset_of=("mechanism", "mech"),
            none_value="", none_label="— pick one —",
            applies_when=("acc", "sample")),
    # The deployment profile (explorer/specs/deployment.py), edited on the Deployment page.
    Setting("dp", "deployment profile", "Deployment profile", str, DEFAULT_PROFILE_URL,
            "Deployment", description="concurrency, context and workload distributions "
            "(compact form; JSON: `deploy --profile`)", kind="text", validate=url_problem,
            max_chars=URL_MAX_CHARS, page="deploy",
            examples=("h1-1_8-2_64-1~b2048-3_32768-1~s",
                      "d8_8_8_8_8_8_8_8_16_16_16_16_32_32_32_32_16_16_16_16_8_8_8_8~l4096-1.5-6~"
                      "eagle3/Llama-3.3-70B-Instruct/MT-bench*2|scenario*1~p0")),
    # A model or drafter read from a config.json (Measured data page), packed whole into the
    # link (explorer/specs/compact.py): the view's `cm` is the Scenario's custom_model (and
    # its slug the model), `cd` its custom_drafter. New keys: links without them keep the
    # presets.
    Setting("cm", "custom target model", "Target model from a config.json", str, "",
            "Scenario", description="a target model read from a config.json, packed (canonical "
            "JSON, zlib, base64url)", kind="text", validate=packed_problem(ModelSpec),
            max_chars=MAX_PACKED_CHARS, page="data", examples=(pack(_EXAMPLE_MODEL),)),
    Setting("cd", "custom drafter", "Drafter from a config.json", str, "", "Scenario",
            description="a drafter read from a config.json, packed (canonical JSON, zlib, "
            "base64url)", kind="text", validate=packed_problem(DrafterSpec),
            max_chars=MAX_PACKED_CHARS, page="data", examples=(pack(_EXAMPLE_DRAFTER),)),
    # View-only targets: they shape the Pareto and cost answers, not the scenario; edited in
    # the Explorer's Pareto view, beside the answer they shape.
    Setting("slo", "per-user SLO (tokens/s)", "Per-user speed target (tokens/s)", float, 30.0,
            "Targets", description="per-user speed target (tokens/s) for the view",
            unit="tokens/s", kind="number", view_range=(0.0, 100000.0), step=5.0, flag="--slo",
            page="explorer"),
    Setting("usd", "GPU price ($/h)", "GPU price ($ per GPU-hour, yours)", float, 0.0, "Targets",
            description="GPU price ($ per GPU-hour) for the view", unit="$/GPU-hour",
            kind="number", view_range=(0.0, 1000.0), step=0.5, flag="--usd", page="explorer"),
)
SETTING_BY_KEY: dict[str, Setting] = {s.key: s for s in SETTINGS}
SETTING_OF_FIELD: dict[str, Setting] = {s.field: s for s in SETTINGS if s.field}


def setting_field(field: str) -> Any:
    """The pydantic Field of a Scenario field, from its declaration (the annotation stays in the
    class, where type checkers read it)."""
    s = SETTING_OF_FIELD[field]
    lo, hi = s.bounds
    return Field(default=s.scenario_default, ge=lo, le=hi, description=s.description)


def rejected_field(exc: ValidationError) -> tuple[tuple[str | int, ...], str]:
    """Where in the Scenario a validation error is (field path) and its message without
    pydantic's prefix. Checks across fields (W ≥ 1+D) name their field as "field: message"."""
    err = exc.errors()[0]
    msg = str(err["msg"]).removeprefix("Value error, ")
    loc = tuple(err["loc"])
    if loc:
        return loc, msg
    field, sep, rest = msg.partition(": ")
    return ((field,), rest) if sep and field.isidentifier() else ((), msg)
