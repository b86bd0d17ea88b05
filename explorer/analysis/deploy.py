"""Draft-length policies compared over a deployment profile (explorer/specs/deployment.py).

A state is (B, S, workload) with weight p(B)·p(S)·p(w), a share of serving time. The model
prices every state at every D once, as one broadcast grid (B × S × D for the step time, workload
× D for AL): tokens/s per GPU in a state is B·AL_w(D) / step(B, S, D) / TP, with plain decoding
(D = 0, AL = 1) priced by the target's own step. Each policy is a choice of D per state:

- `off`: D = 0 everywhere (speedup 1);
- `static`: the one D (plain decoding where it does not fit) that maximises expected
  tokens/s per GPU over the whole profile;
- `batch_schedule`: D*(B), the best D for each B over the S and workload mix (vLLM's
  num_speculative_tokens_per_batch_size, TensorRT-LLM's draft_len_schedule);
- `batch_context_schedule`: D*(B, S), the best D for each (B, S) over the workload mix;
- `al_threshold`: the batch schedule, switched off in the states whose workload's AL at the
  scheduled D is below a threshold τ (what an engine that watches the observed acceptance can
  do); τ is the one that maximises expected tokens/s per GPU (τ = 1 never switches off);
- `oracle`: the best D in every state, workload included, and no switching cost — the bound.

Switching cost: a policy that changes D at run time pays `profile.switch_penalty` (a fraction of
step time) on its speculative steps. Why there is a cost: vLLM captures its FULL decode CUDA
graphs for the single verify width 1 + num_speculative_tokens (vllm/v1/worker/gpu/
cudagraph_utils.py @00383f8c, `uniform_decode_query_len`); a decode step at a smaller D is not
"uniform decode" there and runs the mixed-mode (piecewise) graphs instead, and the dynamic
schedule clamps each range's K to num_speculative_tokens (vllm/v1/spec_decode/dynamic/utils.py
@14b450c). How much: no engine publishes it, so the size is an assumption, shown as such. A dynamic
policy is kept only where it beats the simpler one after that cost, so, after costs as before,
oracle ≥ batch_context_schedule ≥ batch_schedule ≥ static ≥ … and al_threshold ≥
batch_schedule.

Per-user speed: in a state every user gets AL/step tokens/s; the share of user-time in a state
is its weight × B. `tokens_per_s_per_user_p50` / `_p90` are the speeds that 50 % / 90 % of
user-time gets at least, i.e. 1 / (the 50th / 90th percentile of time per output token over
user-time). Memory: where a D's weights and KV do not fit but plain decoding's do, that state
runs plain decoding under any policy that asks for the D; states where even plain decoding does
not fit are priced as if it did, counted in `not_fitting_share` and named in `memory_note`,
which the Deployment page shows with the answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict

from explorer.analysis.frontier import draft_len_range
from explorer.base.errors import ScenarioError
from explorer.model.acceptance_source import acceptance_length
from explorer.model.grid import scenario_model
from explorer.presets import sample_curves
from explorer.specs.deployment import SCENARIO_SOURCE, DeploymentProfile
from explorer.specs.measured import AcceptanceCurve
from explorer.specs.scenario import Acceptance, Scenario, tokens_label

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
POLICY_NAMES: tuple[str, ...] = (
    "off", "static", "batch_schedule", "batch_context_schedule", "al_threshold", "oracle")
SWITCH_COST_NOTE = (
    "Switching cost: vLLM captures its FULL decode CUDA graphs for one verify width, "
    "1 + num_speculative_tokens (vllm/v1/worker/gpu/cudagraph_utils.py @00383f8c: "
    "uniform_decode_query_len; a step of another width is not uniform decode and runs the "
    "mixed-mode, piecewise graphs), so a policy that changes D at run time runs its steps below "
    "the largest D piecewise. What that costs is an assumption (the profile's switch penalty, "
    "charged on all of such a policy's speculative steps: an upper bound); TensorRT-LLM's "
    "draft_len_schedule (llm_args.py @0004396) and SGLang publish no figure either. The oracle "
    "pays nothing: it is the bound.")
P90_NOTE = ("tokens/s per user p50 / p90: the speed that 50 % / 90 % of user-time gets at "
            "least (1 / the 50th / 90th percentile of time per output token, each state "
            "weighted by its share of time × B).")


@dataclass(frozen=True)
class StateGrid:
    """Every state of a profile priced at every D (axes: B, S, workload, D)."""

    batch: IntArray  # (nB,)
    batch_weight: FloatArray
    context: IntArray  # (nS,)
    context_weight: FloatArray
    workloads: tuple[str, ...]  # (nW,)
    workload_weight: FloatArray
    draft_len: IntArray  # (nD,), 0 first
    acceptance_length: FloatArray  # (nW, nD); NaN where a source says nothing
    step_s: FloatArray  # (nB, nS, nD): one step's time (verify + draft; plain at D = 0)
    # (nB, nS, nW, nD): AL known, and fits in memory where plain decoding does (D = 0 always)
    allowed: npt.NDArray[np.bool_]
    fits_plain: npt.NDArray[np.bool_]  # (nB, nS)
    tp: int
    # whole requests (Scenario.output_tokens): the prompt prefill a plain step carries (nB, nS)
    # and the factor a speculative step's prompt tokens cost more by (explorer/model/grid.py)
    prefill_s: FloatArray = field(default_factory=lambda: np.zeros((1, 1)))
    prefill_draft_factor: FloatArray = field(default_factory=lambda: np.ones(1))  # (nD,)

    @property
    def weight(self) -> FloatArray:
        """(nB, nS, nW): each state's share of time."""
        return np.asarray(self.batch_weight[:, None, None] * self.context_weight[None, :, None]
                          * self.workload_weight[None, None, :], dtype=np.float64)

    def _step(self, penalty: float) -> FloatArray:
        """(nB, nS, nW, nD) one step with its prompt prefill: AL·p·f on a speculative step (it
        finishes AL times as many requests), p on a plain one; speculative steps slowed by
        `penalty` (a fraction)."""
        step = self.step_s * np.where(self.draft_len > 0, 1.0 + penalty, 1.0)
        prefill = (np.asarray(self.prefill_s)[:, :, None, None]
                   * self.acceptance_length[None, None, :, :] * self.prefill_draft_factor)
        return np.asarray(step[:, :, None, :] + prefill, dtype=np.float64)

    def gpu_rate(self, penalty: float = 0.0) -> FloatArray:
        """(nB, nS, nW, nD) tokens/s per GPU of each state at each D; where a D is not allowed
        (no AL there, or it does not fit) the state runs plain decoding; speculative steps are
        slowed by `penalty` (a fraction)."""
        rate = (self.batch[:, None, None, None] * self.acceptance_length[None, None, :, :]
                / self._step(penalty) / self.tp)
        return np.where(self.allowed, rate, rate[..., :1])

    def effective(self, idx: IntArray) -> IntArray:
        """A policy's D index per state as it runs: 0 where its D is not allowed."""
        ok = np.take_along_axis(self.allowed, idx[..., None], axis=-1)[..., 0]
        return np.where(ok, idx, 0).astype(np.int64)

    def tpot_s(self, penalty: float = 0.0) -> FloatArray:
        """(nB, nS, nW, nD) time per output token of each user."""
        return np.asarray(self._step(penalty) / self.acceptance_length[None, None, :, :],
                          dtype=np.float64)


def workload_curves(profile: DeploymentProfile,
                    extra: dict[str, AcceptanceCurve] | None = None
                    ) -> dict[str, AcceptanceCurve | None]:
    """Each workload's AL curve (None: the scenario's own source); a ScenarioError names an
    unknown source."""
    known = {**sample_curves(), **(extra or {})}
    out: dict[str, AcceptanceCurve | None] = {}
    for i, w in enumerate(profile.workload):
        if w.source == SCENARIO_SOURCE:
            out[w.source] = None
        elif w.source in known:
            out[w.source] = known[w.source]
        else:
            raise ScenarioError(f"workload.{i}.source",
                                f"unknown AL source '{w.source[:60]}': 'scenario' or a sample "
                                "curve key (python -m explorer presets)")
    return out


def state_grid(scenario: Scenario, profile: DeploymentProfile,
               extra_curves: dict[str, AcceptanceCurve] | None = None,
               d_max: int | None = None) -> StateGrid:
    """Price the profile's states at every D of the mechanism: one grid call."""
    m = scenario_model(scenario)
    b, pb = profile.batch_buckets()
    s, ps = profile.context_buckets()
    names, pw = profile.workload_shares()
    d = draft_len_range(scenario, d_max)
    g = m.grid(b[:, None, None], d[None, None, :], context=s[None, :, None])
    step = np.where(d[None, None, :] > 0, g.t_verif_spec_s + g.t_draft_s, g.t_verif_base_s)
    curves = workload_curves(profile, extra_curves)
    rows = []
    for name in names:
        curve = curves[name]
        if curve is None:
            rows.append(m.acceptance(d).acceptance_length)
        else:
            rows.append(acceptance_length(Acceptance(kind="curve", curve=curve), m.r.mechanism,
                                          d, scenario.draft_len, m.r.model).acceptance_length)
    al = np.asarray(np.vstack([np.broadcast_to(r, d.shape) for r in rows]), dtype=np.float64)
    al[:, 0] = 1.0
    fits = np.asarray(np.broadcast_to(g.fits_in_memory, step.shape))
    fits_plain = fits[:, :, 0].copy()
    fits = fits | ~fits[:, :, :1]  # where even plain decoding does not fit, memory cannot choose
    allowed = np.isfinite(al)[None, None, :, :] & fits[:, :, None, :]
    allowed[..., 0] = True
    prefill = np.broadcast_to(np.asarray(g.t_prefill_s), step.shape)[:, :, 0]
    factor = np.broadcast_to(np.asarray(g.prefill_draft_factor), step.shape)[0, 0, :]
    return StateGrid(b, pb, s, ps, names, pw, d, np.where(np.isfinite(al), al, 1.0),
                     np.asarray(step, dtype=np.float64), allowed, fits_plain,
                     scenario.tp, np.asarray(prefill, dtype=np.float64),
                     np.asarray(factor, dtype=np.float64))


# --- policies: each a D index per state (nB, nS, nW) ------------------------------------------

def _weighted(weight: FloatArray, rate: FloatArray) -> FloatArray:
    """weight·rate, 0 where the weight is 0 (a D not allowed in a state nobody is in is free)."""
    return np.where(weight > 0, weight * np.where(weight > 0, rate, 0.0), 0.0)


def _expected(grid: StateGrid, rate: FloatArray, idx: IntArray) -> float:
    chosen = np.take_along_axis(rate, idx[..., None], axis=-1)[..., 0]
    return float(_weighted(grid.weight, chosen).sum())


def _argmax_over(rate: FloatArray, weight: FloatArray, axes: tuple[int, ...]) -> IntArray:
    """The D that maximises Σ weight·rate over `axes` (ties: smallest D), broadcast back."""
    summed = _weighted(weight[..., None], rate).sum(axis=axes, keepdims=True)
    best = np.argmax(summed, axis=-1)
    return np.broadcast_to(best, weight.shape).astype(np.int64)


def _is_dynamic(idx: IntArray) -> bool:
    return bool(np.unique(idx).size > 1)


def policy_off(grid: StateGrid) -> IntArray:
    return np.zeros(grid.weight.shape, dtype=np.int64)


def policy_static(grid: StateGrid) -> IntArray:
    """One D for the whole profile (plain decoding in the states where that D cannot run)."""
    return _argmax_over(grid.gpu_rate(), grid.weight, (0, 1, 2))


def _keep_if_better(grid: StateGrid, idx: IntArray, simpler: IntArray, penalty: float
                    ) -> IntArray:
    """A dynamic policy only where it beats `simpler` after its switching cost."""
    cost = _expected(grid, grid.gpu_rate(penalty if _is_dynamic(idx) else 0.0), idx)
    base = _expected(grid, grid.gpu_rate(penalty if _is_dynamic(simpler) else 0.0), simpler)
    return idx if cost > base else simpler


def policy_batch_schedule(grid: StateGrid, penalty: float) -> IntArray:
    """D*(B) over the S and workload mix."""
    idx = _argmax_over(grid.gpu_rate(penalty), grid.weight, (1, 2))
    return _keep_if_better(grid, idx, policy_static(grid), penalty)


def policy_batch_context_schedule(grid: StateGrid, penalty: float) -> IntArray:
    """D*(B, S) over the workload mix."""
    idx = _argmax_over(grid.gpu_rate(penalty), grid.weight, (2,))
    return _keep_if_better(grid, idx, policy_batch_schedule(grid, penalty), penalty)


def policy_al_threshold(grid: StateGrid, penalty: float) -> tuple[IntArray, float]:
    """The batch schedule, off where the workload's AL at the scheduled D is below τ; the τ
    (among the ALs that occur, and 1 = never off) that maximises tokens/s per GPU."""
    sched = policy_batch_schedule(grid, penalty)
    al = grid.acceptance_length[np.arange(len(grid.workloads))[None, None, :], sched]  # (B,S,W)
    taus = np.unique(np.concatenate([[1.0], al[sched > 0]]))
    on = al[None, ...] >= taus[:, None, None, None]  # (T, B, S, W)
    cands = np.where(on, sched[None, ...], 0)
    plain, charged = grid.gpu_rate(0.0), grid.gpu_rate(penalty)
    rates = [_expected(grid, charged if _is_dynamic(c) else plain, c)
             for c in cands]  # T ≤ distinct ALs: a short loop over thresholds, not states
    k = int(np.argmax(rates))  # ties: the smallest τ, the fewest switches
    return cands[k].astype(np.int64), float(taus[k])


def policy_oracle(grid: StateGrid) -> IntArray:
    return np.asarray(np.argmax(grid.gpu_rate(), axis=-1), dtype=np.int64)


# --- results --------------------------------------------------------------------------------

def weighted_quantile(values: FloatArray, weights: FloatArray, q: float) -> float:
    """The smallest value whose cumulative weight reaches q of the total."""
    v, w = np.ravel(values), np.ravel(weights)
    keep = w > 0
    v, w = v[keep], w[keep]
    order = np.argsort(v, kind="stable")
    cum = np.cumsum(w[order])
    i = int(np.searchsorted(cum, q * cum[-1] * (1 - 1e-12)))
    return float(v[order][min(i, len(v) - 1)])


class PolicyResult(BaseModel):
    """One policy over the profile. JSON keys are an interface (deploy --json)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    tokens_per_s_per_gpu: float
    tokens_per_s_per_user_p50: float
    tokens_per_s_per_user_p90: float
    gap_to_oracle: float  # 1 − tokens/s per GPU / the oracle's
    speedup: float  # tokens/s per GPU over `off`'s
    dynamic: bool  # changes D at run time (pays the switching cost)
    switch_penalty: float


class WorkloadSpread(BaseModel):
    """Per workload (category) under a policy: its share and its users' speed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    weight: float
    tokens_per_s_per_user_mean: float  # over this workload's user-time (tokens / time)
    tokens_per_s_per_user_p50: float
    tokens_per_s_per_user_p90: float


class Schedule(BaseModel):
    """The chosen D per state of each schedule policy."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    batch: list[int]
    context: list[int]
    workloads: list[str]
    static_draft_len: int
    batch_draft_len: list[int]  # D*(B)
    batch_context_draft_len: list[list[int]]  # D*(B, S): [B][S]
    oracle_draft_len: list[list[list[int]]]  # [B][S][workload]
    al_threshold: float  # τ (1.0: never switched off)
    al_threshold_off: list[list[bool]]  # [B][workload]: switched off by the threshold


class DeployResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    policies: list[PolicyResult]
    schedule: Schedule
    per_workload: list[WorkloadSpread]  # under batch_schedule
    per_request_tokens_per_s_p50: float  # over categories' user-time, batch_schedule
    per_request_tokens_per_s_p90: float
    not_fitting_share: float  # share of time in states where plain decoding does not fit
    notes: list[str]
    # Said where the answer is (not among the notes): the share of time priced past what fits,
    # and which states; "" when every state fits.
    memory_note: str = ""

    def policy(self, name: str) -> PolicyResult:
        return next(p for p in self.policies if p.name == name)


# A policy within this share of the fastest runnable one is preferred when it is simpler: a
# batch schedule needs an engine that takes one (vLLM's num_speculative_tokens_per_batch_size
# is on main only), and 2 % is inside the model's own timing error.
SIMPLER_WITHIN = 0.02
SIMPLER_NEEDS = {
    "off": "no speculative config at all",
    "static": "one fixed D, which every engine and release runs",
    "batch_schedule": "an engine that takes a batch → D schedule (vLLM's "
    "num_speculative_tokens_per_batch_size, on main only; TensorRT-LLM's draft_len_schedule)",
}


def simplest_within(result: DeployResult, names: tuple[str, ...],
                    within: float = SIMPLER_WITHIN) -> tuple[str, str]:
    """Among `names` (simplest first), the simplest policy whose tokens/s per GPU is within
    `within` of the fastest of them, and why, in words."""
    rates = {p.name: p.tokens_per_s_per_gpu for p in result.policies}
    fastest = max(names, key=lambda n: (rates[n], -names.index(n)))
    pick = next(n for n in names if rates[n] >= rates[fastest] * (1.0 - within))
    if pick == fastest:
        return pick, f"{pick} is the fastest policy an engine can run here."
    gap = 1.0 - rates[pick] / rates[fastest]
    return pick, (f"{pick} runs within {gap:.1%} of {fastest} ({rates[pick]:,.0f} vs "
                  f"{rates[fastest]:,.0f} tokens/s per GPU, under the {within:.0%} the model "
                  f"cannot tell apart) and needs {SIMPLER_NEEDS.get(pick, pick)}; {fastest} "
                  f"would need {SIMPLER_NEEDS.get(fastest, fastest)}.")


def _user_speeds(grid: StateGrid, idx: IntArray, penalty: float, mask: FloatArray | None = None
                 ) -> tuple[float, float, float]:
    tpot = np.take_along_axis(grid.tpot_s(penalty), idx[..., None], axis=-1)[..., 0]
    w = grid.weight * grid.batch[:, None, None]
    if mask is not None:
        w = w * mask
    mean = float(w.sum() / (w * tpot).sum())
    return (mean, 1.0 / weighted_quantile(tpot, w, 0.5), 1.0 / weighted_quantile(tpot, w, 0.9))


def evaluate_policies(grid: StateGrid, penalty: float) -> dict[str, tuple[IntArray, bool]]:
    """Each policy's D index per state and whether it pays the switching cost."""
    thr_idx, _ = policy_al_threshold(grid, penalty)
    idx = {
        "off": policy_off(grid),
        "static": policy_static(grid),
        "batch_schedule": policy_batch_schedule(grid, penalty),
        "batch_context_schedule": policy_batch_context_schedule(grid, penalty),
        "al_threshold": thr_idx,
        "oracle": policy_oracle(grid),
    }
    # Dynamic: the policy asks for more than one D (running plain where its D cannot run is
    # the model's reading of memory and validity, not a switch the engine makes).
    return {k: (grid.effective(v), k != "oracle" and _is_dynamic(v)) for k, v in idx.items()}


def deploy(scenario: Scenario, profile: DeploymentProfile,
           extra_curves: dict[str, AcceptanceCurve] | None = None,
           d_max: int | None = None) -> DeployResult:
    """Every policy over the profile, with the schedules behind them."""
    grid = state_grid(scenario, profile, extra_curves, d_max)
    penalty = profile.switch_penalty
    chosen = evaluate_policies(grid, penalty)
    rates = {k: _expected(grid, grid.gpu_rate(penalty if dyn else 0.0), idx)
             for k, (idx, dyn) in chosen.items()}
    oracle, off = rates["oracle"], rates["off"]
    results = []
    for name in POLICY_NAMES:
        idx, dyn = chosen[name]
        pen = penalty if dyn else 0.0
        _, p50, p90 = _user_speeds(grid, idx, pen)
        results.append(PolicyResult(
            name=name, tokens_per_s_per_gpu=rates[name], tokens_per_s_per_user_p50=p50,
            tokens_per_s_per_user_p90=p90, gap_to_oracle=1.0 - rates[name] / oracle,
            speedup=rates[name] / off, dynamic=dyn, switch_penalty=pen))
    thr_idx, tau = policy_al_threshold(grid, penalty)
    sched_idx, sched_dyn = chosen["batch_schedule"]
    d = grid.draft_len
    spread = []
    for k, name in enumerate(grid.workloads):
        mask = np.zeros(len(grid.workloads))
        mask[k] = 1.0
        mean, p50, p90 = _user_speeds(grid, sched_idx, penalty if sched_dyn else 0.0,
                                      mask[None, None, :])
        spread.append(WorkloadSpread(name=name, weight=float(grid.workload_weight[k]),
                                     tokens_per_s_per_user_mean=mean,
                                     tokens_per_s_per_user_p50=p50,
                                     tokens_per_s_per_user_p90=p90))
    # Per request: each (state, workload) cell is a request class; its TPOT spread.
    _, r50, r90 = _user_speeds(grid, sched_idx, penalty if sched_dyn else 0.0)
    off_thr = (thr_idx == 0) & (sched_idx > 0)
    schedule = Schedule(
        batch=[int(x) for x in grid.batch], context=[int(x) for x in grid.context],
        workloads=list(grid.workloads),
        static_draft_len=int(d[chosen["static"][0].flat[0]]),
        batch_draft_len=[int(d[i]) for i in sched_idx[:, 0, 0]],
        batch_context_draft_len=d[chosen["batch_context_schedule"][0][:, :, 0]].tolist(),
        oracle_draft_len=d[chosen["oracle"][0]].tolist(),
        al_threshold=tau,
        al_threshold_off=off_thr.any(axis=1).tolist(),
    )
    not_fit = float((grid.weight.sum(axis=2) * ~grid.fits_plain).sum())
    return DeployResult(policies=results, schedule=schedule, per_workload=spread,
                        per_request_tokens_per_s_p50=r50, per_request_tokens_per_s_p90=r90,
                        not_fitting_share=not_fit, notes=[SWITCH_COST_NOTE, P90_NOTE],
                        memory_note=memory_note(grid, not_fit))


def memory_note(grid: StateGrid, share: float) -> str:
    """The profile's states where even plain decoding does not fit in memory: their share of
    the time and where they start (the smallest such B at the shortest and the longest context
    that has any). They are priced as if they fit, so every policy's figures include states the
    deployment cannot serve."""
    if share <= 0:
        return ""
    starts = [(int(grid.context[j]), int(grid.batch[np.argmax(~grid.fits_plain[:, j])]))
              for j in range(len(grid.context)) if (~grid.fits_plain[:, j]).any()]
    (s0, b0), (s1, b1) = starts[0], starts[-1]
    where = f"B ≥ {b0} at S = {tokens_label(s0)}" + (
        "" if s1 == s0 else f" … B ≥ {b1} at S = {tokens_label(s1)}")
    return (f"{share:.0%} of the time is in states where even plain decoding does not fit in "
            f"memory ({where}): they are priced as if it did, so every policy's figures include "
            "states this deployment cannot serve. Fewer concurrent sequences per replica, a "
            "larger TP or an FP8 KV cache fits more of them.")
