"""Timing CSVs: per-kernel latencies and whole-step latencies.

Source checked: no single upstream tool; the kernel layout is this project's, with aliases so
that the shared reference data (shared/reference/gemm_measured.csv: M, N, K, dtype, latency_ms —
exported from ai-dynamo/aiconfigurator gemm_perf.parquet; shared/reference/attention_measured.csv:
batch, q_len, kv_len_step, num_q_heads, num_kv_heads, head_dim, kv_dtype, latency_ms — from
generation_attention_perf.parquet) load unchanged. Dtypes may be spelled as the files do
(bfloat16, torch.bfloat16, fp8_e4m3, …): the tables hold the canonical spelling
(explorer/base/dtypes.py).

Kernel timings: kind (gemm | attention; optional when the columns say which), gemm columns
m, n, k, dtype; attention columns batch, context (kv_len, seq_len), q_heads (num_q_heads),
kv_heads (num_kv_heads), head_dim, q_len (default 1 when absent), optional kv_dtype; one time
column named time_s / time_ms / time_us (or latency_*). Everything is validated column-wise
with numpy; 100k rows load in well under a second.

Step times: batch (batch_size, concurrency), draft_len (D, k, num_speculative_tokens) and/or
verify_tokens, step_time_s / _ms / _us (or step_time, itl_ms, latency_ms), optional
acceptance_length (AL).
"""

from __future__ import annotations

import numpy as np

from explorer.base.limits import MAX_MEASURED_ROWS
from explorer.base.quoting import quote
from explorer.measured._bounds import over_cap
from explorer.measured._csv import (
    BoolArray,
    Numbers,
    Table,
    find_column,
    normalize_name,
    parse_numbers,
    read_csv,
)
from explorer.measured._curve_groups import SOURCE_ALIASES
from explorer.measured._problems import Collector, finish
from explorer.measured._time_units import (
    TimeColumn,
    check_time_units,
    find_time_column,
    seconds_of,
)
from explorer.measured.al_csv import AL_ALIASES
from explorer.specs.measured import (
    AttentionTimings,
    GemmTimings,
    KernelTimings,
    ParseResult,
    Provenance,
    StepTimings,
    al_within_bounds,
)

KERNEL_FORMAT = "kernel_timings_csv"
STEP_FORMAT = "step_times_csv"

KIND_ALIASES = ("kind", "kernel", "op", "type")
# Kind values: 'gemm', 'attention', and engine names such as 'generation_attention (q_len=1)'.
GEMM_PATTERN = r"gemm|matmul|linear|^mm$"
ATTENTION_PATTERN = r"attention|attn|^mha$|^gqa$|^mla$"
KERNEL_TIME_BASES = ("time", "latency", "duration", "t")
M_ALIASES, N_ALIASES, K_ALIASES = ("m",), ("n",), ("k",)
DTYPE_ALIASES = ("dtype", "gemm_dtype", "precision")
BATCH_ALIASES = ("batch", "batch_size", "b", "concurrency", "bs")
CONTEXT_ALIASES = ("context", "context_len", "kv_len", "kv_len_step", "seq_len", "s")
QH_ALIASES = ("q_heads", "num_q_heads", "num_heads", "n_q_heads")
KVH_ALIASES = ("kv_heads", "num_kv_heads", "n_kv_heads")
HD_ALIASES = ("head_dim", "head_size")
QLEN_ALIASES = ("q_len", "query_len", "num_query_tokens")
KV_DTYPE_ALIASES = ("kv_dtype", "kv_cache_dtype")
STEP_TIME_BASES = ("step_time", "t_step", "itl", "median_itl", "latency", "time")
DRAFT_ALIASES = ("draft_len", "d", "k", "num_speculative_tokens", "draft_length", "steps")
VERIFY_ALIASES = ("verify_tokens", "num_verify_tokens", "verify_width", "w")


def looks_like_kernels(headers: list[str]) -> bool:
    norm = {normalize_name(h) for h in headers}
    has_time = find_time_column(headers, KERNEL_TIME_BASES) is not None
    gemm = {"m", "n", "k"} <= norm
    attention = bool(norm & set(CONTEXT_ALIASES)) and bool(norm & set(QH_ALIASES))
    return has_time and (gemm or attention or ("kind" in norm and "m" in norm))


def looks_like_steps(headers: list[str]) -> bool:
    norm = {normalize_name(h) for h in headers}
    st = find_time_column(headers, ("step_time", "t_step", "itl", "median_itl"))
    return st is not None and bool(norm & set(BATCH_ALIASES))


def _time(
    tab: Table, tc: TimeColumn, col: Collector, kind: str, mask: BoolArray | None = None
) -> Numbers:
    nums = parse_numbers(tab, tc.header, col, positive=True, what=f"{kind} time", mask=mask)
    return seconds_of(tab, tc, nums, col, f"{kind} time", mask)


def _ints(values: Numbers, mask: BoolArray) -> tuple[int, ...]:
    return tuple(values.values[mask].astype(np.int64).tolist())


def _too_many_rows(tab: Table, col: Collector) -> bool:
    """A scenario embeds the table, so it is capped (explorer/base/limits.py)."""
    if len(tab.df) > MAX_MEASURED_ROWS:
        over_cap(col, "the timing table", len(tab.df), MAX_MEASURED_ROWS, "data rows",
                 "MAX_MEASURED_ROWS")
        return True
    return False


def parse_kernels(name: str, text: str) -> ParseResult:
    col = Collector()
    tab = read_csv(text, col)
    if tab is None or _too_many_rows(tab, col):
        return finish(KERNEL_FORMAT, "", col)
    h = list(tab.headers)
    tc = find_time_column(h, KERNEL_TIME_BASES)
    if tc is None:
        col.error(
            "no time column: name it time_s, time_ms or time_us (latency_* also works)",
            field="time_s",
        )
        return finish(KERNEL_FORMAT, "", col)
    n = len(tab.df)
    kind_col = find_column(h, KIND_ALIASES)
    m_col, n_col, k_col = (
        find_column(h, M_ALIASES),
        find_column(h, N_ALIASES),
        find_column(h, K_ALIASES),
    )
    ctx_col = find_column(h, CONTEXT_ALIASES)
    if kind_col is not None:
        kinds = tab.df[kind_col].str.lower().str.replace(r"\(.*?\)", "", regex=True).str.strip()
        is_attn = kinds.str.contains(ATTENTION_PATTERN, regex=True).to_numpy(dtype=bool)
        is_gemm = ~is_attn & kinds.str.contains(GEMM_PATTERN, regex=True).to_numpy(dtype=bool)
        for i in np.flatnonzero(~is_gemm & ~is_attn):
            col.error(
                f"kind {quote(tab.df[kind_col].iloc[i])} is neither gemm nor attention",
                int(tab.rows[i]),
                kind_col,
            )
    elif m_col is not None and n_col is not None and k_col is not None:
        is_gemm, is_attn = np.ones(n, dtype=bool), np.zeros(n, dtype=bool)
    elif ctx_col is not None:
        is_gemm, is_attn = np.zeros(n, dtype=bool), np.ones(n, dtype=bool)
    else:
        col.error(
            "add a kind column (gemm | attention): the columns do not say which kernel",
            field="kind",
        )
        return finish(KERNEL_FORMAT, "", col)

    times = _time(tab, tc, col, "kernel")
    gemm: GemmTimings | None = None
    if is_gemm.any():
        cols = {"m": m_col, "n": n_col, "k": k_col, "dtype": find_column(h, DTYPE_ALIASES)}
        for key, c in cols.items():
            if c is None:
                col.error(f"gemm rows need a '{key}' column", field=key)
        if all(c is not None for c in cols.values()):
            dims = {
                key: parse_numbers(tab, c, col, integer=True, minimum=1, what=key, mask=is_gemm)
                for key, c in cols.items()
                if key != "dtype" and c is not None
            }
            dtype_col = cols["dtype"]
            assert dtype_col is not None
            dtypes = tab.df[dtype_col].to_numpy(dtype=object)
            for i in np.flatnonzero(is_gemm & (dtypes == "")):
                col.error("missing dtype", int(tab.rows[i]), dtype_col)
            ok = is_gemm & times.valid & (dtypes != "")
            for v in dims.values():
                ok &= v.valid
            if not col.has_errors and ok.any():
                seconds = times.values[is_gemm]
                check_time_units(seconds, tc, "kernel", col, "gemm times")
                gemm = GemmTimings(
                    m=_ints(dims["m"], ok),
                    n=_ints(dims["n"], ok),
                    k=_ints(dims["k"], ok),
                    dtype=tuple(str(x) for x in dtypes[ok]),
                    time_s=tuple(times.values[ok].tolist()),
                )
    attention: AttentionTimings | None = None
    if is_attn.any():
        cols2 = {
            "batch": find_column(h, BATCH_ALIASES),
            "context": ctx_col,
            "q_heads": find_column(h, QH_ALIASES),
            "kv_heads": find_column(h, KVH_ALIASES),
            "head_dim": find_column(h, HD_ALIASES),
        }
        for key, c in cols2.items():
            if c is None:
                col.error(f"attention rows need a '{key}' column", field=key)
        qlen_col = find_column(h, QLEN_ALIASES)
        if all(c is not None for c in cols2.values()):
            vals = {
                key: parse_numbers(tab, c, col, integer=True, minimum=1, what=key, mask=is_attn)
                for key, c in cols2.items()
                if c is not None
            }
            if qlen_col is not None:
                vals["q_len"] = parse_numbers(
                    tab, qlen_col, col, integer=True, minimum=1, what="q_len", mask=is_attn
                )
            else:
                col.warn("no q_len column: attention rows read as q_len = 1 (plain decode)")
                ones = np.ones(n, dtype=np.float64)
                vals["q_len"] = Numbers(ones, np.ones(n, dtype=bool), np.zeros(n, dtype=bool))
            ok = is_attn & times.valid
            for v in vals.values():
                ok &= v.valid
            kv_col = find_column(h, KV_DTYPE_ALIASES) or (
                find_column(h, DTYPE_ALIASES) if not is_gemm.any() else None
            )
            if not col.has_errors and ok.any():
                seconds = times.values[is_attn]
                check_time_units(seconds, tc, "kernel", col, "attention times")
                attention = AttentionTimings(
                    batch=_ints(vals["batch"], ok),
                    context=_ints(vals["context"], ok),
                    q_heads=_ints(vals["q_heads"], ok),
                    kv_heads=_ints(vals["kv_heads"], ok),
                    head_dim=_ints(vals["head_dim"], ok),
                    q_len=_ints(vals["q_len"], ok),
                    kv_dtype=(
                        tuple(str(x) for x in tab.df[kv_col].to_numpy(dtype=object)[ok])
                        if kv_col is not None
                        else None
                    ),
                    time_s=tuple(times.values[ok].tolist()),
                )
    if col.has_errors:
        return finish(KERNEL_FORMAT, "", col)
    sources = sorted(set(tab.text(find_column(h, SOURCE_ALIASES))) - {""})
    prov = Provenance(file=name, source="; ".join(sources[:3]) or None, format=KERNEL_FORMAT)
    if gemm is None and attention is None:
        col.error("no usable gemm or attention rows")
        return finish(KERNEL_FORMAT, "", col)
    table = KernelTimings(gemm=gemm, attention=attention, provenance=prov)
    summary = (
        f"kernel timings: {len(gemm or ())} gemm and {len(attention or ())} attention rows "
        f"from {name}"
    )
    return finish(KERNEL_FORMAT, summary, col, kernel_timings=table)


def parse_steps(name: str, text: str) -> ParseResult:
    col = Collector()
    tab = read_csv(text, col)
    if tab is None or _too_many_rows(tab, col):
        return finish(STEP_FORMAT, "", col)
    h = list(tab.headers)
    tc = find_time_column(h, STEP_TIME_BASES)
    b_col = find_column(h, BATCH_ALIASES)
    d_col = find_column(h, DRAFT_ALIASES)
    v_col = find_column(h, VERIFY_ALIASES)
    if tc is None:
        col.error(
            "no step time column: name it step_time_s, step_time_ms or step_time_us",
            field="step_time_s",
        )
    if b_col is None:
        col.error(f"no batch column: expected one of {', '.join(BATCH_ALIASES)}", field="batch")
    if d_col is None and v_col is None:
        col.error(
            "no draft_len or verify_tokens column (draft_len 0 = no speculation)",
            field="draft_len",
        )
    if tc is None or b_col is None or (d_col is None and v_col is None):
        return finish(STEP_FORMAT, "", col)
    batch = parse_numbers(tab, b_col, col, integer=True, minimum=1, what="batch")
    times = _time(tab, tc, col, "step")
    draft = (
        parse_numbers(tab, d_col, col, integer=True, minimum=0, what="draft length")
        if d_col is not None
        else None
    )
    verify = (
        parse_numbers(tab, v_col, col, integer=True, minimum=1, what="verify tokens")
        if v_col is not None
        else None
    )
    al_col = find_column(h, AL_ALIASES)
    al = (
        parse_numbers(tab, al_col, col, required=False, minimum=1.0, what="acceptance length")
        if al_col is not None
        else None
    )
    if draft is None and verify is not None:
        col.warn(
            "no draft_len column: draft_len read as verify_tokens - 1 (chain drafts)", field=v_col
        )
        draft = Numbers(verify.values - 1.0, verify.valid, verify.empty)
    assert draft is not None
    if al is not None and al_col is not None:
        over = al.valid & draft.valid & ~al_within_bounds(al.values, draft.values)
        for i in np.flatnonzero(over):
            col.error(
                f"acceptance length {al.values[i]:g} exceeds 1 + D = {1 + int(draft.values[i])}",
                int(tab.rows[i]),
                al_col,
            )
    if verify is not None and d_col is not None:
        with np.errstate(invalid="ignore"):
            short = verify.valid & draft.valid & (verify.values < draft.values + 1)
        for i in np.flatnonzero(short):
            col.error(
                f"verify_tokens {int(verify.values[i])} is less than 1 + draft_len = "
                f"{1 + int(draft.values[i])}",
                int(tab.rows[i]),
                v_col,
            )
    if col.has_errors:
        return finish(STEP_FORMAT, "", col)
    check_time_units(times.values, tc, "step", col, "step times")
    if col.has_errors:
        return finish(STEP_FORMAT, "", col)
    al_values: tuple[float | None, ...] | None = None
    if al is not None:
        capped = np.minimum(al.values, 1.0 + draft.values)  # within the tolerance: 1 + D
        al_values = tuple(
            float(a) if ok else None for a, ok in zip(capped, al.valid, strict=True)
        )
    sources = sorted(set(tab.text(find_column(h, SOURCE_ALIASES))) - {""})
    prov = Provenance(file=name, source="; ".join(sources[:3]) or None, format=STEP_FORMAT)
    table = StepTimings(
        batch=tuple(batch.values.astype(np.int64).tolist()),
        draft_len=tuple(draft.values.astype(np.int64).tolist()),
        verify_tokens=(
            tuple(verify.values.astype(np.int64).tolist()) if verify is not None else None
        ),
        step_time_s=tuple(times.values.tolist()),
        acceptance_length=al_values,
        includes_draft=False,  # this CSV holds the target's verify step (see the template)
        provenance=prov,
    )
    summary = (
        f"step times: {len(table.batch)} rows, batch {min(table.batch)}-{max(table.batch)}, "
        f"D {min(table.draft_len)}-{max(table.draft_len)} from {name}"
    )
    return finish(STEP_FORMAT, summary, col, step_timings=table)
