"""One target (or draft-model) forward as a sum of kernels per layer (DESIGN.md §2.1).

Each GEMM and decode-attention call is priced, in this order, by the user's upload
(model/corrections.py), the package's measured table (model/measured_kernels.py) where it covers
the point, and the roofline (model/kernels.py).

Every function broadcasts over numpy arrays of batch B, verify width W, context S and group G,
and returns seconds per component: gemm, attention, moe, communication, overhead, lm_head.
`overhead` holds the kernel launches and the memory-bound elementwise ops between the GEMMs
(norms, RoPE, KV-cache write, SiLU·mul), which scale with the tokens of the forward.
"""

from __future__ import annotations

import hashlib

import numpy as np
import numpy.typing as npt

from explorer.base.dtypes import BYTES_PER_ELEMENT, LOGITS_DTYPE
from explorer.kernel_tables.moe import MoeShape
from explorer.model.corrections import KernelCorrections
from explorer.model.kernels import KernelTime, attention_time, gemm_roofline, gemm_time
from explorer.model.measured_kernels import KernelTally, MeasuredKernels
from explorer.specs.architecture import ModelSpec
from explorer.specs.hardware import HardwareSpec

FloatArray = npt.NDArray[np.float64]
Breakdown = dict[str, FloatArray]

COMPONENTS: tuple[str, ...] = ("gemm", "attention", "moe", "communication", "overhead", "lm_head")
# Kernels launched per transformer layer in a decode step (norms, QKV, RoPE, attention, O,
# residual, gate-up, activation, down): an assumption shown as such in the UI.
KERNELS_PER_LAYER = 9
# All-reduces per layer under tensor parallelism (after attention and after the MLP).
ALLREDUCES_PER_LAYER = 2
# GEMM prices remembered per layer model by their exact inputs: a grid asks the same (m, n, k)
# for the base and speculative verify and the draft forwards (an EAGLE head has the target's
# shapes), and again on every rerun. Bounded: cleared when full (a grid's entry is ~17 kB).
MAX_GEMM_MEMO = 96
# Activations between the GEMMs are bf16 (vLLM keeps the model dtype; fp8 GEMMs quantize their
# input inside the GEMM's bytes, model/kernels.py gemm_bytes).
ACTIVATION_BYTES = 2.0


def _f(x: npt.ArrayLike) -> FloatArray:
    return np.asarray(x, dtype=np.float64)


def _zeros(*arrays: FloatArray) -> FloatArray:
    return np.zeros(np.broadcast_shapes(*(a.shape for a in arrays)), dtype=np.float64)


def unique_experts(n_tokens: npt.ArrayLike, n_experts: int, top_k: int) -> FloatArray:
    """Experts touched by n tokens under uniform routing: E·(1 − (1 − k/E)^n), an upper bound."""
    n = _f(n_tokens)
    if n_experts <= 0:
        return np.zeros_like(n)
    return n_experts * (1.0 - (1.0 - top_k / n_experts) ** n)


def routed_experts_roofline(hw: HardwareSpec, shape: MoeShape, n: npt.ArrayLike,
                            dtype: str) -> KernelTime:
    """Grouped GEMM over the experts n tokens touch, at the MoE dtype, per TP rank: weight
    bytes scale with the touched experts; two kernels (gate-up, down) each pay the floor."""
    tokens = _f(n)
    b = BYTES_PER_ELEMENT[dtype]
    width = shape.inter / shape.tp
    h, mats = shape.hidden, shape.mlp_matrices
    touched = unique_experts(tokens, shape.num_experts, shape.topk)
    flops = 2.0 * tokens * shape.topk * mats * h * width
    nbytes = touched * mats * h * width * b + tokens * shape.topk * (
        2.0 * h + mats * width
    ) * b
    outputs = tokens * shape.topk * ((mats - 1.0) * width + h)  # gate-up and down outputs
    return gemm_roofline(hw, flops, nbytes, dtype, kernels=2, outputs=outputs)


# What one evaluation added to a kernel tally: (kind, measured, total, reason of a miss).
TallyDelta = tuple[tuple[str, int, int, str | None, int], ...]
_Counts = tuple[dict[str, int], dict[str, int], dict[str, int]]


def _snapshot(tally: KernelTally | None) -> _Counts | None:
    return None if tally is None else (dict(tally.measured), dict(tally.total),
                                       dict(tally.raised))


def _delta(tally: KernelTally | None, before: _Counts | None) -> TallyDelta:
    if tally is None or before is None:
        return ()
    measured0, total0, raised0 = before
    return tuple((kind, tally.measured.get(kind, 0) - measured0.get(kind, 0),
                  tally.total[kind] - total0.get(kind, 0), tally.why_not.get(kind),
                  tally.raised.get(kind, 0) - raised0.get(kind, 0))
                 for kind in tally.total if tally.total[kind] != total0.get(kind, 0))


def _replay(tally: KernelTally, delta: TallyDelta) -> None:
    for kind, measured, count, reason, raised in delta:
        tally.measured[kind] = tally.measured.get(kind, 0) + measured
        tally.total[kind] = tally.total.get(kind, 0) + count
        if measured < count and reason:
            tally.why_not[kind] = reason
        if raised:
            tally.raised[kind] = tally.raised.get(kind, 0) + raised


class LayerModel:
    """Per-layer kernel costs of one model on one hardware at a TP degree."""

    def __init__(
        self, hw: HardwareSpec, model: ModelSpec, tp: int, dtype: str, kv_dtype: str,
        measured: KernelCorrections | None = None, tables: MeasuredKernels | None = None,
        moe_dtype: str | None = None,
    ) -> None:
        self.hw, self.model, self.tp, self.dtype, self.kv_dtype = hw, model, tp, dtype, kv_dtype
        # Routed experts may run at their own dtype (NVFP4 experts beside BF16 attention).
        self.moe_dtype = moe_dtype or dtype
        self.measured = measured
        self.tables = tables
        # (m, n, k) digest → (time, what the evaluation added to the kernel tally)
        self._gemm_memo: dict[bytes, tuple[FloatArray, TallyDelta]] = {}

    def _upload_used(self, kind: str, t: FloatArray) -> None:
        if self.tables is not None:
            self.tables.tally.add(kind, True, int(t.size))

    def _gemm(self, m: npt.ArrayLike, n: npt.ArrayLike, k: npt.ArrayLike,
              logits: bool = False) -> FloatArray:
        """The priced GEMM (see `_gemm_priced`), remembered by its exact inputs; a remembered
        price adds to the kernel tally what its first evaluation added, so the provenance
        counts are the same as without the memo. The result is read-only (shared)."""
        mm, nn, kk = _f(m), _f(n), _f(k)
        h = hashlib.blake2b(digest_size=16)
        h.update(b"logits" if logits else b"weights")
        for a in (mm, nn, kk):
            h.update(repr(a.shape).encode())
            h.update(a.tobytes())
        key = h.digest()
        hit = self._gemm_memo.get(key)
        tally = self.tables.tally if self.tables is not None else None
        if hit is not None:
            if tally is not None:
                _replay(tally, hit[1])
            return hit[0]
        before = _snapshot(tally)
        out = np.asarray(self._gemm_priced(mm, nn, kk, logits), dtype=np.float64)
        out.flags.writeable = False
        if len(self._gemm_memo) >= MAX_GEMM_MEMO:
            self._gemm_memo.clear()
        self._gemm_memo[key] = (out, _delta(tally, before))
        return out

    def _gemm_priced(self, m: FloatArray, n: FloatArray, k: FloatArray,
                     logits: bool = False) -> FloatArray:
        """A user's measurement of the same (n, k, dtype) if given, else the package's table
        where it covers (m, n, k), else the roofline. The logits GEMM runs in LOGITS_DTYPE."""
        dtype = LOGITS_DTYPE if logits else self.dtype
        t = gemm_time(self.hw, m, n, k, dtype).time_s
        if self.measured is not None and self.measured.gemm is not None:
            f = self.measured.gemm.factor(m, n, k, dtype)
            if f is not None:
                out = np.asarray(t * f, dtype=np.float64)
                self._upload_used("upload_gemm", out)
                return out
        if self.tables is not None:
            return self.tables.gemm_time(
                _f(m), n, k, t,
                lambda mm, nn, kk: gemm_time(self.hw, mm, nn, kk, dtype).time_s, logits=logits)
        return t

    # -- shapes per TP rank ---------------------------------------------------------------
    def heads_per_rank(self, group: FloatArray) -> tuple[float, FloatArray, FloatArray]:
        """(query heads, KV heads, G) per rank; KV heads replicate when TP > n_kv."""
        m = self.model
        q_rank = m.q_heads / self.tp
        if m.attention_kind == "mla":
            kv_rank = np.ones_like(group)
        else:
            kv_rank = np.maximum(1.0, m.q_heads / group / self.tp)
        return q_rank, kv_rank, q_rank / kv_rank

    # -- components ---------------------------------------------------------------------
    def projection_gemms(self, n: FloatArray, group: FloatArray) -> FloatArray:
        """Attention projections of one layer for n tokens."""
        m = self.model
        q_rank, kv_rank, _ = self.heads_per_rank(group)
        if m.attention_kind == "mla":
            qk_dim = m.qk_nope_dim + m.qk_rope_dim
            q_proj = (self._gemm(n, m.q_lora_rank, m.hidden)
                      + self._gemm(n, q_rank * qk_dim, m.q_lora_rank)
                      if m.q_lora_rank else self._gemm(n, q_rank * qk_dim, m.hidden))
            return (
                q_proj
                + self._gemm(n, m.kv_lora_rank + m.qk_rope_dim, m.hidden)
                + self._gemm(n, q_rank * m.kv_lora_rank, m.qk_nope_dim)
                + self._gemm(n, q_rank * m.v_head_dim, m.kv_lora_rank)
                + self._gemm(n, m.hidden, q_rank * m.v_head_dim)
            )
        qkv = self._gemm(n, (q_rank + 2.0 * kv_rank) * m.head_dim, m.hidden)
        out = self._gemm(n, m.hidden, q_rank * m.head_dim)
        return qkv + out

    def dense_mlp(self, n: FloatArray, ffn: float) -> FloatArray:
        if ffn <= 0:
            return np.zeros_like(n)
        h = self.model.hidden
        # gate + up (SwiGLU) or up alone (relu²), then down
        up = self._gemm(n, (self.model.mlp_matrices - 1.0) * ffn / self.tp, h)
        down = self._gemm(n, h, ffn / self.tp)
        return up + down

    def routed_experts(self, n: FloatArray) -> FloatArray:
        """Routed experts of one layer for n tokens: the engine's measured MoE table where it
        covers (model/measured_kernels.py moe_time), else the roofline."""
        shape = self.moe_shape()
        if self.tables is None:
            return routed_experts_roofline(self.hw, shape, n, self.moe_dtype).time_s
        return self.tables.moe_time(
            n, shape, self.moe_dtype,
            lambda nn: routed_experts_roofline(self.hw, shape, nn, self.moe_dtype).time_s)

    def moe_shape(self) -> MoeShape:
        """The MoE layer as the tables key it; experts shard by TP (no expert parallelism)."""
        m = self.model
        return MoeShape(int(m.expert_hidden), int(m.moe_intermediate), int(m.experts_per_tok),
                        int(m.n_routed_experts), tp=self.tp, ep=1,
                        mlp_matrices=float(m.mlp_matrices))

    def attention(
        self, batch: FloatArray, width: FloatArray, context: FloatArray, group: FloatArray,
        layers_sliding: bool = False,
    ) -> FloatArray:
        m = self.model
        _, kv_rank, g_rank = self.heads_per_rank(group)
        ctx = np.minimum(context, m.sliding_window) if layers_sliding else context
        b_kv = BYTES_PER_ELEMENT[self.kv_dtype]
        if m.attention_kind == "mla":
            # Absorbed MLA: one latent KV "head" of kv_lora+rope dims read once by all q heads.
            t_mla = attention_time(
                self.hw, batch, ctx, kv_rank, g_rank, width,
                head_dim_qk=m.head_dim, head_dim_v=m.kv_lora_rank,
                kv_bytes_per_token_head=m.head_dim * b_kv,
            ).time_s
            if self.tables is not None:  # the engine's generation_mla table (q_len = 1)
                t1 = attention_time(
                    self.hw, batch, ctx, kv_rank, g_rank, 1.0,
                    head_dim_qk=m.head_dim, head_dim_v=m.kv_lora_rank,
                    kv_bytes_per_token_head=m.head_dim * b_kv,
                ).time_s
                return self.tables.mla_attention_time(
                    _f(batch), _f(ctx), m.q_heads / self.tp, int(m.kv_lora_rank),
                    int(m.qk_rope_dim), self.kv_dtype, t_mla, t1,
                    lambda bb, ss: attention_time(
                        self.hw, bb, ss, kv_rank, g_rank, 1.0, head_dim_qk=m.head_dim,
                        head_dim_v=m.kv_lora_rank,
                        kv_bytes_per_token_head=m.head_dim * b_kv).time_s)
            return t_mla
        t = attention_time(
            self.hw, batch, ctx, kv_rank, g_rank, width, head_dim_qk=m.head_dim,
            kv_dtype=self.kv_dtype,
        ).time_s
        if self.measured is not None and self.measured.attention is not None:
            f = self.measured.attention.factor(batch, ctx, kv_rank, g_rank, width, m.head_dim,
                                               self.kv_dtype)
            if f is not None:
                out = np.asarray(t * f, dtype=np.float64)
                self._upload_used("upload_attention", out)
                return out
        if self.tables is not None:
            # The table measures q_len = 1; W = 1+D adds the tile increment t(W)/t(1).
            t1 = attention_time(
                self.hw, batch, ctx, kv_rank, g_rank, 1.0, head_dim_qk=m.head_dim,
                kv_dtype=self.kv_dtype,
            ).time_s
            q_rank = m.q_heads / self.tp
            window = int(m.sliding_window) if layers_sliding and m.sliding_window else 0
            ctx_cap = m.sliding_window if layers_sliding else None
            return self.tables.attention_time(
                _f(batch), _f(context), q_rank, _f(kv_rank), m.head_dim, window, t, t1,
                lambda bb, ss: attention_time(
                    self.hw, bb, np.minimum(ss, ctx_cap) if ctx_cap else ss, kv_rank, g_rank,
                    1.0, head_dim_qk=m.head_dim, kv_dtype=self.kv_dtype).time_s)
        return t

    # -- per-layer groups (hybrid and NAS models: ModelSpec's layer-group fields) ----------
    def dense_mlp_groups(self, n: FloatArray, scale: float) -> FloatArray:
        """The dense MLP layers, one GEMM pair per width (a NAS model's per-layer widths)."""
        out = np.zeros_like(n)
        for count, width in self.model.dense_ffn_groups():
            out = out + count * scale * self.dense_mlp(n, width)
        return out

    def moe_latent_projections(self, n: FloatArray) -> FloatArray:
        """A latent MoE's hidden → latent and latent → hidden projections around the experts."""
        m = self.model
        if not m.moe_latent:
            return np.zeros_like(n)
        return self._gemm(n, m.moe_latent, m.hidden) + self._gemm(n, m.hidden, m.moe_latent)

    def linear_blocks(self, n: FloatArray) -> FloatArray:
        """A NAS block replaced by one hidden × hidden linear."""
        h = self.model.hidden
        return self._gemm(n, h / self.tp, h)

    def mamba_projections(self, n: FloatArray) -> FloatArray:
        """One Mamba-2 layer's in_proj (z, x, B, C, dt) and out_proj, heads split over TP."""
        m = self.model
        if m.mamba is None:
            return np.zeros_like(n)
        return (self._gemm(n, m.mamba.in_proj_width() / self.tp, m.hidden)
                + self._gemm(n, m.hidden, m.mamba.d_inner / self.tp))

    def mamba_scan(self, batch: FloatArray, width: FloatArray) -> FloatArray:
        """One Mamba-2 layer's conv + selective scan over W tokens of B sequences: memory-bound
        at decode — each sequence's state is read once and written once per verified token
        (the 1+D states kept so rejected draft tokens roll back: an assumption), the inputs
        read and outputs written per token; the context does not enter (no KV cache)."""
        m = self.model
        if m.mamba is None:
            return _zeros(batch, width)
        mb, hw = m.mamba, self.hw
        act_b = 2.0  # bf16 activations
        state = mb.state_bytes_per_seq(act_b) / self.tp
        per_token = (mb.in_proj_width() + mb.d_inner) * act_b / self.tp
        nbytes = batch * (state * (1.0 + width) + width * per_token)
        # dA·h + dB·x per state element, then C·h: ~6 FLOP per element per token
        flops = 6.0 * batch * width * mb.d_inner * mb.d_state / self.tp
        compute = flops / (hw.bf16_flops_per_s * hw.attention_compute_efficiency)
        memory = nbytes / (hw.hbm_bw_bytes_per_s * hw.attention_memory_efficiency)
        return np.asarray(np.maximum(np.maximum(compute, memory), 2.0 * hw.kernel_floor_s),
                          dtype=np.float64)

    def recurrent_state_copy(self, batch: FloatArray, copies: float) -> FloatArray:
        """One Mamba-2 / Gated DeltaNet layer copying `copies` recurrent states (SSM state and
        conv window) per sequence, each read once and written once: memory-bound."""
        m = self.model
        if m.mamba is None or copies <= 0:
            return np.zeros_like(batch)
        nbytes = 2.0 * copies * batch * m.mamba.state_bytes_per_seq() / self.tp
        return np.asarray(nbytes / (self.hw.hbm_bw_bytes_per_s
                                    * self.hw.attention_memory_efficiency), dtype=np.float64)

    def elementwise_bytes_per_token(self, ffn_per_rank: float) -> float:
        """HBM bytes one token moves per layer in the memory-bound ops between the GEMMs, as
        vLLM's Llama layer runs them (vllm/model_executor/models/llama.py @e06c9ba2a6ea923a84add
        30f5dafaea126429b81 LlamaDecoderLayer.forward; each op reads and writes whole tensors):
        two fused residual-add + RMSNorms (read x and the residual, write both: 4h each), RoPE
        in place on q and k (read + write), the KV-cache write (read k, v; write them at the KV
        dtype) and SiLU·mul (read the 2f gate-up output, write f). Per TP rank; the hidden
        state is replicated on every rank."""
        m, a = self.model, ACTIVATION_BYTES
        b_kv = BYTES_PER_ELEMENT[self.kv_dtype]
        q_rank = m.q_heads / self.tp
        if m.attention_kind == "mla":  # RoPE on the rope dims; one latent KV row per token
            rope = (q_rank + 1.0) * m.qk_rope_dim
            kv_row = float(m.kv_lora_rank + m.qk_rope_dim)
        else:
            kv_rank = max(1.0, m.q_heads / m.group_size / self.tp)
            rope = (q_rank + kv_rank) * m.head_dim
            kv_row = 2.0 * kv_rank * m.head_dim
        norms = 2.0 * 4.0 * m.hidden * a
        return norms + 2.0 * rope * a + kv_row * (a + b_kv) + 3.0 * ffn_per_rank * a

    def elementwise(self, n: FloatArray, layers: float, moe_layers: float = 0.0,
                    ffn: float | None = None) -> FloatArray:
        """Time of the per-token elementwise traffic of `layers` layers over n tokens,
        memory-bound at the GEMM memory efficiency (their launches are in layer_launches)."""
        m = self.model
        dense_ffn = (m.ffn_intermediate if ffn is None else ffn) / self.tp
        moe_ffn = m.moe_intermediate * (m.experts_per_tok + m.n_shared_experts) / self.tp
        per_token = ((layers - moe_layers) * self.elementwise_bytes_per_token(dense_ffn)
                     + moe_layers * self.elementwise_bytes_per_token(moe_ffn))
        return np.asarray(n * per_token / (self.hw.hbm_bw_bytes_per_s
                                           * self.hw.gemm_memory_efficiency), dtype=np.float64)

    def allreduce(self, n: FloatArray) -> FloatArray:
        if self.tp <= 1:
            return np.zeros_like(n)
        payload = n * self.model.hidden * 2.0  # activations in bf16
        ring = 2.0 * (self.tp - 1) / self.tp * payload / self.hw.link_bw_bytes_per_s
        return ALLREDUCES_PER_LAYER * (self.hw.allreduce_latency_s + ring)

    def lm_head(self, n: FloatArray, vocab: int | None = None) -> FloatArray:
        v = vocab if vocab is not None else self.model.vocab
        return self._gemm(n, v / self.tp, self.model.hidden, logits=True)

    def layer_launches(self, layers: float) -> float:
        return layers * KERNELS_PER_LAYER * self.hw.launch_latency_s

    # -- one forward -------------------------------------------------------------------
    def forward(
        self,
        batch: npt.ArrayLike,
        width: npt.ArrayLike,
        context: npt.ArrayLike,
        group: npt.ArrayLike | None = None,
        layers: float | None = None,
        include_step_overhead: bool = True,
        tokens: npt.ArrayLike | None = None,
    ) -> Breakdown:
        """One forward over B sequences × W new tokens each, per component (seconds).

        `tokens`: what the GEMMs, MoE and all-reduces run on when the engine pads the step to a
        captured CUDA-graph size (model/engine_costs.py); attention and the lm_head (logits are
        taken for the real tokens only) keep B·W.
        """
        m = self.model
        b, w, s = _f(batch), _f(width), _f(context)
        g = _f(group) if group is not None else _f(m.group_size)
        n = b * w if tokens is None else _f(tokens)
        n_layers = float(layers if layers is not None else m.layers)
        scale = n_layers / m.layers
        moe_layers = m.moe_layers * scale
        attn_layers = m.n_attention_layers * scale
        sliding = min(m.sliding_layers, m.n_attention_layers) * scale if m.sliding_window else 0.0
        full_attn_layers = attn_layers - sliding

        shape = _zeros(n, s, g)
        gemm = shape + attn_layers * self.projection_gemms(n, g) + self.dense_mlp_groups(n, scale)
        moe = shape.copy()
        if m.is_moe:
            shared = self.dense_mlp(n, m.n_shared_experts * m.moe_intermediate)
            moe = moe + moe_layers * (self.routed_experts(n) + shared
                                      + self.moe_latent_projections(n))
        attention = shape + full_attn_layers * self.attention(b, w, s, g)
        if sliding:
            attention = attention + sliding * self.attention(b, w, s, g, layers_sliding=True)
        if m.sparse_attention == "msa" and self.tables is not None:
            # The measured MSA module replaces the projections and attention of those layers
            # where it covers the point; each verified token is one decode query of the table.
            module = self.tables.msa_module_time(b * w, s, max(1, round(m.q_heads / self.tp)),
                                                 self.kv_dtype, self.dtype)
            ok = np.isfinite(module)
            if ok.any():
                proj = full_attn_layers * self.projection_gemms(n, g)
                gemm = np.where(ok, gemm - proj, gemm)
                attention = np.where(ok, full_attn_layers * np.where(ok, module, 0.0),
                                     attention)
        if m.linear_blocks:
            gemm = gemm + m.linear_blocks * scale * self.linear_blocks(n)
        if m.mamba_layers:  # the scan is the layer's sequence mixer: priced with attention
            mamba = m.mamba_layers * scale
            gemm = gemm + mamba * self.mamba_projections(n)
            attention = attention + mamba * self.mamba_scan(b, w)
        # A hybrid / NAS layer has fewer blocks than attention + MLP (the uniform transformer's
        # factor is exactly 1): all-reduces, launches and elementwise traffic follow the blocks
        # (a hybrid's elementwise traffic as that many transformer half-layers: an estimate).
        blocks = n_layers * m.blocks_per_layer
        comm = shape + blocks * self.allreduce(n)
        overhead = shape + self.layer_launches(blocks) + self.elementwise(
            n, blocks, min(moe_layers, blocks) if m.is_moe else 0.0)
        if include_step_overhead:
            overhead = overhead + self.hw.step_overhead_s
        lm = shape + self.lm_head(b * w)
        return {
            "gemm": gemm, "attention": attention, "moe": moe, "communication": comm,
            "overhead": overhead, "lm_head": lm,
        }

    def head_layers(
        self, batch: FloatArray, width: FloatArray, context: FloatArray, group: FloatArray,
        layers: float, vocab: int | None, fused_target_layers: int = 0,
        tokens: npt.ArrayLike | None = None, logit_rows: npt.ArrayLike | None = None,
        fused_input_hidden: float | None = None,
    ) -> Breakdown:
        """`layers` layers of the target's dims plus an lm_head: an MTP/EAGLE/DFlash drafter.

        `logit_rows`: the rows the lm_head runs on when not every token's logits are taken (an
        EAGLE round's first forward runs on B·(1+D) tokens but samples B); default B·W.
        `fused_input_hidden`: the width of each fused target feature (the target's hidden size,
        which a head with its own dims does not share); default the head's own.

        Draft heads are dense (an MTP head of an MoE target routes too, but its expert set is
        small: we charge the dense equivalent with the target's active FFN width).
        """
        m = self.model
        b_w = batch * width
        n = b_w if tokens is None else _f(tokens)  # padded to a captured graph size, as forward()
        ffn = m.ffn_intermediate if not m.is_moe else m.moe_intermediate * (
            m.experts_per_tok + m.n_shared_experts
        )
        shape = _zeros(b_w, context, group)
        gemm = shape + layers * (self.projection_gemms(n, group) + self.dense_mlp(n, ffn))
        if fused_target_layers:  # an FC fuses k target features: (k·h_target → h), EAGLE-3: k = 3
            h_in = m.hidden if fused_input_hidden is None else fused_input_hidden
            gemm = gemm + self._gemm(n, m.hidden, float(fused_target_layers) * h_in)
        return {
            "gemm": gemm,
            "attention": shape + layers * self.attention(batch, width, context, group),
            "moe": shape.copy(),
            "communication": shape + layers * self.allreduce(n),
            "overhead": shape + self.layer_launches(layers)
            + self.elementwise(n, layers, ffn=ffn),
            "lm_head": shape + self.lm_head(b_w if logit_rows is None else _f(logit_rows), vocab),
        }


def total(breakdown: Breakdown) -> FloatArray:
    return np.asarray(sum(breakdown[c] for c in COMPONENTS), dtype=np.float64)


def scale_breakdown(breakdown: Breakdown, factor: npt.ArrayLike) -> Breakdown:
    f = _f(factor)
    return {k: v * f for k, v in breakdown.items()}


def add_breakdowns(a: Breakdown, b: Breakdown) -> Breakdown:
    return {k: a[k] + b[k] for k in COMPONENTS}
