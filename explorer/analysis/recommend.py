"""The mechanism recommendation: every mechanism × D ranked at the scenario's B and S."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict

from explorer.analysis.availability import availability
from explorer.analysis.candidate import candidate
from explorer.analysis.guidelines import Guideline, guidelines
from explorer.analysis.uncertainty import LOSES, MARGINAL, speedup_draws, verdict
from explorer.base.errors import ScenarioError
from explorer.model.acceptance_source import quantiles
from explorer.model.grid import scenario_model
from explorer.model.kernels import ATTENTION_TILE_ROWS
from explorer.presets import mechanism_presets
from explorer.specs.scenario import Scenario

FloatArray = npt.NDArray[np.float64]


class RankedOption(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    mechanism: str
    mechanism_name: str
    draft_len: int
    speedup: float
    acceptance_length: float
    t_draft_s: float
    draft_overhead_fraction: float  # T_draft / (T_verif(B(1+D)) + T_draft)
    training: str
    extra_memory_bytes: float
    extra_memory: str
    fits_in_memory: bool
    acceptance_source: str
    acceptance_model_extended: bool = False  # AL from an acceptance model past the evidence
    acceptance_evidence: str = ""  # measured, same model, same family, other family, none, user
    acceptance_temperature: str = ""  # greedy / sampled decoding of the evidence, where known
    # speedup = AL × verify_cost_factor × draft_cost_factor × prefill_factor:
    verify_cost_factor: float = 1.0  # T_verif(B) / T_verif(B(1+D)): what verifying 1+D costs
    draft_cost_factor: float = 1.0  # T_verif(B(1+D)) / (T_verif(B(1+D)) + T_draft)
    # whole requests (output tokens N): the prompt prefill each step carries, which speculation
    # does not shorten, (T_verif(B) + p)/T_verif(B) · step/(step + AL·p·f); 1 for decode steps
    prefill_factor: float = 1.0
    # the factor that costs most: "verify cost", "draft cost" or "prompt prefill"
    limiting_term: str = ""
    # 80 % interval of the speedup from the AL source's draws (seeded), and how often this
    # option is the fastest fitting one across the draws; `confidence` (the best only): how
    # often its mechanism wins at any D.
    speedup_low: float | None = None
    speedup_high: float | None = None
    win_share: float = 0.0
    confidence: float | None = None
    availability: str = ""  # published, to be trained, ships with the target, …
    availability_detail: str = ""  # the checkpoint and its source, or the training it needs


# A head that has to be trained first is months of work, and its AL is a prior carried over
# from other targets: the recommendation is the fastest option that can run now, and a faster
# to-be-trained one is named beside it as worth training.
NOT_READY = "to be trained"


class WorthTraining(BaseModel):
    """A head that would have to be trained, asked as a question apart from the headline: what
    its prior says, how far that evidence is from the target, and the AL it would need."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mechanism: str
    mechanism_name: str
    draft_len: int
    speedup: float  # on the prior, at the scenario's B and S
    speedup_low: float | None
    speedup_high: float | None
    acceptance_length: float  # the prior's AL at draft_len
    evidence: str  # same model / same family / other family: how far the evidence is
    evidence_how: str  # serving benchmarks, or own cards × the card discount
    beat: str  # what it would have to beat (the recommendation, or plain decoding)
    beat_speedup: float
    required_al: float | None  # the AL it needs at draft_len to beat that (`require`)
    required_feasible: bool
    chance_to_beat: float  # share of the prior's draws in which it beats that
    text: str


class Recommendation(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    best: RankedOption | None  # the fastest fitting option that runs now (else the fastest)
    best_if_trained: RankedOption | None = None  # a faster fitting option still to be trained
    ranking: list[RankedOption]
    guidelines: list[Guideline]
    explanation: str
    unavailable: dict[str, str]
    max_fitting_batch: int | None = None  # nothing fits: the largest B the fastest option fits
    fit_hints: list[str] = []  # nothing fits: what would (FP8 KV cache, FP8 weights, more TP)
    confidence: float | None = None  # share of draws the best mechanism wins (at any D)
    confidence_text: str = ""  # how sure, in words, with the options within the band
    # a faster head still to be trained, as a question (never in `explanation`, the headline)
    worth_training: WorthTraining | None = None


GUIDELINE_5_TITLE = "Choose the mechanism by measured speedup"


def recommend(scenario: Scenario, mechanisms: list[str] | None = None) -> Recommendation:
    """Rank every enabled mechanism × D at this B and S by predicted speedup."""
    ranking: list[RankedOption] = []
    unavailable: dict[str, str] = {}
    draws: dict[tuple[str, int], FloatArray] = {}  # (mechanism, D) → speedup draws
    for slug in mechanisms or list(mechanism_presets()):
        cand = candidate(scenario, slug)
        av = availability(cand, slug)
        if not av.available:
            unavailable[slug] = av.text
            continue
        try:
            m = scenario_model(cand)
            ds = np.arange(1, m.r.mechanism.max_draft_len + 1)
            g = m.grid(cand.batch, ds)
            al = m.acceptance(ds)
            extra_mem = float(np.ravel(m.draft_memory_bytes(cand.batch, cand.context,
                                                            m.r.group))[0])
        except ScenarioError as exc:
            unavailable[slug] = exc.message
            continue
        sd = speedup_draws(g, al, ds, cand.engine)  # (draws, D)
        lo, hi = quantiles(sd)
        ok = np.isfinite(g.speedup)
        if not ok.any():
            unavailable[slug] = f"no acceptance data for D in 1..{ds[-1]}"
            continue
        mech = m.r.mechanism
        for i in np.nonzero(ok)[0]:
            draws[(slug, int(ds[i]))] = sd[:, i]
            step = float(g.t_verif_spec_s[i] + g.t_draft_s[i])
            verify_f = float(g.t_verif_base_s[i] / g.t_verif_spec_s[i])
            draft_f = float(g.t_verif_spec_s[i]) / step
            prefill_f = float(g.speedup[i]) / (float(g.acceptance_length[i]) * verify_f
                                                * draft_f)
            costs = {"verify cost": verify_f, "draft cost": draft_f, "prompt prefill": prefill_f}
            ranking.append(RankedOption(
                mechanism=slug, mechanism_name=mech.name, draft_len=int(ds[i]),
                speedup=float(g.speedup[i]), acceptance_length=float(g.acceptance_length[i]),
                t_draft_s=float(g.t_draft_s[i]),
                draft_overhead_fraction=float(g.t_draft_s[i]) / step,
                training=mech.training,
                extra_memory_bytes=extra_mem,
                extra_memory=mech.extra_memory, fits_in_memory=bool(g.fits_in_memory[i]),
                acceptance_source=g.al_provenance,
                acceptance_model_extended=bool(g.al_extrapolated[i]),
                acceptance_evidence=al.evidence, acceptance_temperature=al.temperature,
                availability=av.status,
                verify_cost_factor=verify_f, draft_cost_factor=draft_f,
                prefill_factor=prefill_f, limiting_term=min(costs, key=lambda k: costs[k]),
                speedup_low=float(lo[i]), speedup_high=float(hi[i]),
                availability_detail=av.text,
            ))
    ranking.sort(key=lambda o: (not o.fits_in_memory, -o.speedup, o.draft_len))
    best, best_if_trained = pick_best(ranking)
    nothing_ready = best is not None and best.availability == NOT_READY
    if nothing_ready:  # only heads still to be trained fit: none of them is the headline
        best, best_if_trained = None, best
    ranking, confidence, sure = _how_sure(ranking, draws, best)
    if best is not None:
        best = next(o for o in ranking if (o.mechanism, o.draft_len) == (best.mechanism,
                                                                          best.draft_len))
    worth = None if best_if_trained is None else worth_training(
        scenario, best_if_trained, best, draws)
    guide = guidelines(scenario)
    max_batch: int | None = None
    hints: list[str] = []
    if nothing_ready:
        explanation = ("Nothing that runs today fits here (every fitting drafter would have to "
                       "be trained first): plain decoding, 1.00×.")
        g5 = Guideline(id=5, title=GUIDELINE_5_TITLE, value=1.0, applies=True,
                       text="nothing that runs today fits here: plain decoding.")
    elif best is None:
        # the fastest option that runs today (a head still to be trained is never the
        # headline, so its memory is not the one to fit): a drafter to train only where none runs
        runs_today = [o for o in ranking if o.availability != NOT_READY] or ranking
        max_batch, hints = fit_hints(scenario, runs_today[0].mechanism if runs_today else None)
        explanation = "No mechanism fits in memory at this operating point. " + " ".join(hints)
        g5 = Guideline(id=5, title=GUIDELINE_5_TITLE, value=None, applies=True,
                       text="no mechanism fits in memory here: see what would fit, above.")
    else:
        per_mech: dict[str, RankedOption] = {}
        for o in ranking:
            if (o.availability != NOT_READY) == (best.availability != NOT_READY):
                per_mech.setdefault(o.mechanism, o)
        runners = [o for k, o in per_mech.items() if k != best.mechanism][:2]
        runner_text = "; ".join(
            f"{o.mechanism_name} D={o.draft_len}: {o.speedup:.2f}× "
            f"[{o.speedup_low:.2f}–{o.speedup_high:.2f}]" for o in runners
        )
        said = verdict(best.speedup, best.speedup_low)
        says = {LOSES: "plain decoding is faster", MARGINAL: "speculation is marginal"}.get(
            said, "speculation pays")
        if scenario.output_tokens:  # what the speedup spans (decode steps only otherwise)
            says += (f" over whole requests ({scenario.context:,}-token prompts, "
                     f"{scenario.output_tokens:,} output tokens; their prefill ×"
                     f"{best.prefill_factor:.2f})")
        if said == MARGINAL:
            says += ": its 80 % interval spans 1×"
        extended = (", model-extended past the published/measured D"
                    if best.acceptance_model_extended else "")
        cliff = cliff_note(candidate(scenario, best.mechanism), best.draft_len)
        explanation = (
            f"{best.mechanism_name} at D={best.draft_len}: {best.speedup:.2f}× "
            f"[{best.speedup_low:.2f}–{best.speedup_high:.2f}] "
            f"(AL {best.acceptance_length:.2f}{extended}, evidence: {best.acceptance_evidence}; "
            f"draft {best.draft_overhead_fraction:.0%} of the step; {best.availability}) — "
            f"{says}.{cliff} Next: {runner_text or 'none'}. {sure}"
        )
        # The recommendation itself is shown once (the explanation); here only its pick.
        g5 = Guideline(id=5, title=GUIDELINE_5_TITLE, value=best.speedup, applies=True,
                       text=f"by predicted speedup here: {best.mechanism_name} at "
                            f"D={best.draft_len}, {best.speedup:.2f}× (the recommendation says "
                            "why and names the runner-ups).")
    return Recommendation(best=best,
                          best_if_trained=best_if_trained if best or nothing_ready else None,
                          ranking=ranking, guidelines=[*guide, g5],
                          explanation=explanation, unavailable=unavailable,
                          max_fitting_batch=max_batch, fit_hints=hints,
                          confidence=confidence if best is not None else None,
                          confidence_text=sure if best is not None else "",
                          worth_training=worth if best or nothing_ready else None)


def worth_training(scenario: Scenario, option: RankedOption, best: RankedOption | None,
                   draws: dict[tuple[str, int], FloatArray]) -> WorthTraining:
    """The question a faster to-be-trained head raises: its prior's speedup and interval (as
    wide as the distance of its evidence), how often its draws beat the recommendation, and the
    AL a head would need at its D to beat it (the `require` machinery)."""
    from explorer.analysis.inverse import required_al

    beat_name = best.mechanism_name if best is not None else "plain decoding"
    beat_speedup = best.speedup if best is not None else 1.0
    cand = candidate(scenario, option.mechanism)
    try:
        req = required_al(cand, max(beat_speedup, 1.0), option.draft_len,
                          beat=best.mechanism if best is not None else None)
        need: float | None = req.acceptance_length
        feasible = req.feasible
    except ScenarioError:
        need, feasible = None, False
    mine = draws.get((option.mechanism, option.draft_len))
    chance = float(np.mean(mine > beat_speedup)) if mine is not None else 0.0
    how = option.acceptance_source.split("level from ", 1)
    evidence_how = ("level from " + how[1].split(";", 1)[0]) if len(how) == 2 else \
        option.acceptance_evidence
    need_text = (f"a head would need AL ≥ {need:.2f} at D={option.draft_len} to beat "
                 f"{beat_name}'s {beat_speedup:.2f}× (the prior gives "
                 f"{option.acceptance_length:.2f})" if need is not None and feasible else
                 f"no AL at D={option.draft_len} beats {beat_name}'s {beat_speedup:.2f}×")
    text = (f"Worth training? {option.mechanism_name} at D={option.draft_len}: {need_text}; "
            f"its prior — evidence {option.acceptance_evidence}, {evidence_how} — says "
            f"{option.speedup:.2f}× [{option.speedup_low:.2f}–{option.speedup_high:.2f}], above "
            f"{beat_name} in {chance:.0%} of draws. {_sentence(option.availability_detail)}")
    return WorthTraining(
        mechanism=option.mechanism, mechanism_name=option.mechanism_name,
        draft_len=option.draft_len, speedup=option.speedup, speedup_low=option.speedup_low,
        speedup_high=option.speedup_high, acceptance_length=option.acceptance_length,
        evidence=option.acceptance_evidence, evidence_how=evidence_how, beat=beat_name,
        beat_speedup=beat_speedup, required_al=need, required_feasible=feasible,
        chance_to_beat=chance, text=text)


# A speedup that falls by more than this from D to D+1 is a cliff the "why" explains.
CLIFF_DROP = 0.10
CLIFF_COMPONENTS = {"gemm": "GEMM", "attention": "attention", "moe": "MoE experts",
                    "communication": "all-reduce", "overhead": "per-step overhead",
                    "lm_head": "lm_head"}


def _sentence(text: str) -> str:
    """A clause (availability details start lower-case: "to be trained for …") as a sentence."""
    return text[:1].upper() + text[1:] if text else text


def cliff_note(scenario: Scenario, draft_len: int) -> str:
    """Why not D+1, where the speedup falls off a step: the verify step's component that
    jumps, and the step it crosses — B·(1+D) tokens past a step of the GEMM/MoE times (the
    measured table's or the roofline's), G·(1+D) rows per GPU past an attention tile, the
    engine's CUDA-graph sizes for the per-step costs. Empty when D+1 is no cliff."""
    m = scenario_model(scenario)
    d_next = draft_len + 1
    if d_next > m.r.mechanism.max_draft_len:
        return ""
    ds = np.asarray([draft_len, d_next], dtype=np.float64)
    g = m.grid(scenario.batch, ds, with_breakdowns=True)
    sp = np.ravel(g.speedup)
    # the step is in the decode step; whole requests' prefill only dilutes how far it drops
    dec = sp if not scenario.output_tokens else np.ravel(scenario_model(
        scenario.model_copy(update={"output_tokens": None})).grid(scenario.batch, ds).speedup)
    if not np.isfinite(sp).all() or dec[1] >= dec[0] * (1.0 - CLIFF_DROP):
        return ""
    jumps = {c: np.ravel(v) for c, v in g.verify_spec.items()}
    comp = max(jumps, key=lambda c: float(jumps[c][1] - jumps[c][0]))
    before, after = (float(x) for x in jumps[comp])
    if after <= before:
        return ""
    b = scenario.batch
    n0, n1 = (float(x) for x in np.ravel(m.verify_width(ds)) * b)
    if comp == "attention":
        gg = m.group_per_gpu
        step = (f"G·(1+D) per GPU goes from {gg * (1 + draft_len):g} to {gg * (1 + d_next):g} "
                f"rows, past a {ATTENTION_TILE_ROWS}-row tile")
    elif comp in ("gemm", "lm_head", "moe"):
        kind = "moe" if comp == "moe" else "gemm"
        share = m.tables.tally.share(kind)
        dtype = scenario.expert_dtype if comp == "moe" else scenario.dtype
        source = (f"the measured {dtype.upper()} {'MoE' if comp == 'moe' else 'GEMM'} table "
                  f"({m.tables.label()})" if share else
                  f"the roofline's {'MoE' if comp == 'moe' else 'GEMM'} times")
        step = (f"B·(1+D) goes from {_tokens(n0)} to {_tokens(n1)} tokens, across a step of "
                f"{source}")
    else:
        step = f"B·(1+D) goes from {_tokens(n0)} to {_tokens(n1)} tokens"
    return (f" Not D={d_next}: {sp[1]:.2f}× — {step}; {CLIFF_COMPONENTS.get(comp, comp)} "
            f"time {before * 1e3:.1f} → {after * 1e3:.1f} ms (+{after / before - 1:.0%}).")


def _tokens(n: float) -> str:
    """A verify step's token count as read: whole, or "≈" the nearest whole where a drafter's
    verify width is an expectation (a lookup drafter proposes fewer tokens where it finds no
    match: 127.94 tokens reads ≈128)."""
    whole = round(n)
    return f"{whole:,}" if abs(n - whole) < 1e-6 else f"≈{whole:,}"


def pick_best(ranking: list[RankedOption]) -> tuple[RankedOption | None, RankedOption | None]:
    """From a ranking sorted fitting-first by speedup: the fastest fitting option that runs now
    (the fastest fitting one when none does), and the fastest fitting to-be-trained option when
    it is faster than that."""
    fitting = [o for o in ranking if o.fits_in_memory]
    ready = [o for o in fitting if o.availability != NOT_READY]
    best = ready[0] if ready else (fitting[0] if fitting else None)
    faster = fitting[0] if fitting and best is not None and fitting[0] is not best else None
    return best, faster


def _how_sure(ranking: list[RankedOption], draws: dict[tuple[str, int], FloatArray],
              best: RankedOption | None) -> tuple[list[RankedOption], float | None, str]:
    """Across the draws (independent per mechanism), how often each fitting option is the
    fastest, how often the best's mechanism wins, and which options lie within its band."""
    if best is None:
        return ranking, None, ""
    # the choice among what can run now (a head still to be trained is named apart)
    fitting = [o for o in ranking if o.fits_in_memory
               and (o.availability != NOT_READY) == (best.availability != NOT_READY)]
    n = max(len(v) for v in draws.values())
    matrix = np.stack([np.broadcast_to(draws[(o.mechanism, o.draft_len)], (n,))
                       for o in fitting], axis=1)  # (draws, options)
    winner = np.argmax(np.where(np.isfinite(matrix), matrix, -np.inf), axis=1)
    share = np.bincount(winner, minlength=len(fitting)) / n
    mech_of = np.asarray([o.mechanism for o in fitting])
    confidence = float(np.mean(mech_of[winner] == best.mechanism))
    shares = {(o.mechanism, o.draft_len): float(s) for o, s in zip(fitting, share, strict=True)}
    out = []
    for o in ranking:
        upd: dict[str, object] = {"win_share": shares.get((o.mechanism, o.draft_len), 0.0)}
        if o is best:
            upd["confidence"] = confidence
        out.append(o.model_copy(update=upd))
    per_mech: dict[str, RankedOption] = {}
    for o in fitting:
        per_mech.setdefault(o.mechanism, o)
    low = best.speedup_low if best.speedup_low is not None else best.speedup
    within = [o for k, o in per_mech.items() if k != best.mechanism
              and (o.speedup_high if o.speedup_high is not None else o.speedup) >= low]
    text = (f"How sure: {best.mechanism_name} wins in {confidence:.0%} of draws (D={best.draft_len}"
            f" itself in {shares[(best.mechanism, best.draft_len)]:.0%})")
    text += ("; within its band: " + ", ".join(f"{o.mechanism_name} D={o.draft_len}"
                                               for o in within) + "." if within
             else "; no other mechanism is within its band.")
    return out, confidence, text


# What else would make the point fit, in the order an architect would try them.
FIT_ALTERNATIVES: tuple[tuple[str, dict[str, object]], ...] = (
    ("an FP8 KV cache", {"kv_dtype": "fp8"}),
    ("FP8 weights", {"dtype": "fp8"}),
)


def _memory_with(scenario: Scenario, update: dict[str, object]) -> float | None:
    """Memory per GPU at the scenario's B and S with `update` applied; None if it is invalid."""
    try:
        alt = scenario_model(scenario.model_copy(update=update))
    except ScenarioError:
        return None
    return float(np.ravel(alt.memory_bytes(scenario.batch, scenario.context, alt.r.group))[0])


# One HGX/DGX board: TP within it runs over NVLink; past it a deployment spans nodes, which an
# architect tries only after the changes that keep it on one board.
GPUS_PER_NODE = 8


def _max_tp(tp: int, q_heads: int) -> int:
    while tp * 2 <= q_heads:
        tp *= 2
    return tp


def _what_would_fit(cand: Scenario, q_heads: int, hbm: float) -> list[str]:
    """What makes the point fit, in the order an architect tries it: one change on one node
    (an FP8 KV cache, FP8 weights, the smallest TP ≤ 8 that fits); then FP8 weights, an FP8 KV
    cache or both with the smallest TP on one node that fits (FP8 weights at TP=8 is how a
    large model is deployed); only then TP past one node. The first found tier is named."""
    tps = [cand.tp * 2**i for i in range(1, 8) if cand.tp * 2**i <= q_heads]
    node = [t for t in tps if t <= GPUS_PER_NODE]
    beyond = [t for t in tps if t > GPUS_PER_NODE]
    fp8 = [(label, upd) for label, upd in FIT_ALTERNATIVES
           if any(getattr(cand, k) != v for k, v in upd.items())]
    both: list[tuple[str, dict[str, object]]] = (
        [("FP8 weights and an FP8 KV cache", {k: v for _, u in fp8 for k, v in u.items()})]
        if len(fp8) == 2 else [])

    def first_tp(label: str, upd: dict[str, object], tp_list: list[int]) -> str | None:
        for t in tp_list:
            mem = _memory_with(cand, {**upd, "tp": t})
            if mem is None:
                return None
            if mem <= hbm:
                nodes = f", {t // GPUS_PER_NODE} nodes" if t > GPUS_PER_NODE else ""
                return f"{label}{' at ' if label else ''}TP={t} ({mem / 1e9:,.0f} GB{nodes})"
        return None

    for tp_list in (node, beyond):
        would: list[str] = []
        if tp_list is node:  # the dtype changes alone, at the scenario's own TP
            for label, upd in fp8:
                mem = _memory_with(cand, upd)
                if mem is not None and mem <= hbm:
                    would.append(f"{label} ({mem / 1e9:,.0f} GB)")
        hit = first_tp("", {}, tp_list)
        if hit is not None:
            would.append(hit)
        if would:
            return would
        combo_tps = [cand.tp, *tp_list] if tp_list is node else tp_list
        for label, upd in [*fp8[::-1], *both]:  # FP8 weights first: the standard deployment
            hit = first_tp(label, upd, combo_tps)
            if hit is not None:
                would.append(hit)
                break
        if would:
            return would
    return []


def fit_hints(scenario: Scenario, slug: str | None) -> tuple[int | None, list[str]]:
    """When nothing fits: the largest B at which the fastest option (`slug`) and plain decoding
    fit, and which of an FP8 KV cache, FP8 weights or more TP would fit at this B."""
    cand = candidate(scenario, slug or scenario.mechanism)
    try:
        m = scenario_model(cand)
    except ScenarioError:
        return None, []
    hbm = m.r.hardware.hbm_bytes
    need = float(m.memory_bytes(np.asarray([cand.batch]), cand.context, m.r.group)[0])
    max_batch, max_plain = m.largest_batches(cand.context, cand.batch)
    name = m.r.mechanism.name
    hints = [f"At B={cand.batch}, S={cand.context} {name} needs {need / 1e9:,.0f} GB per GPU of "
             f"{hbm / 1e9:,.0f}."]
    if max_batch is not None:
        hints.append(f"The largest batch that fits with {name} is B={max_batch}"
                     + (f" (plain decoding: B={max_plain})." if max_plain else "."))
    else:
        hints.append(f"No batch fits with {name} at this context"
                     + (f"; plain decoding fits up to B={max_plain}."
                        if max_plain else ", nor does plain decoding."))
    would = _what_would_fit(cand, m.r.model.q_heads, hbm)
    if would:
        hints.append(f"It would fit at B={cand.batch} with " + " or ".join(would) + ".")
    else:
        hints.append(f"Neither an FP8 KV cache, FP8 weights nor TP up to "
                     f"{_max_tp(cand.tp, m.r.model.q_heads)} makes B={cand.batch} fit: lower B "
                     "or S.")
    return max_batch, hints
