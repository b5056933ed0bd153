#!/usr/bin/env python3
"""Distil NVIDIA AIConfigurator's measured kernel tables into compact per-GPU, per-engine surfaces.

Usage:
    python3 scripts/kernels/distill.py [--out src/catalog/data/kernels] [--systems h200_sxm,...]

The script creates (or reuses) a venv at ~/.cache/racksweep-kernels-venv (override with
RACKSWEEP_KERNELS_VENV), installs the pinned aiconfigurator-core from requirements.txt into it,
re-executes itself there, resolves which measured table AIConfigurator itself would load for each
(system, engine, "current" version) and op, fits one small surface per table slice and writes one
TOML file per (racksweep GPU id, engine). The formulas are in scripts/kernels/SPEC.md; every
surface evaluates as

    t = t0 + (sum_i (x_i / r_i)^p)^(1/p)          ("pnorm" surfaces: GEMM, attention, MLA, MoE)
    t = min_j (alpha_j + x / beta_j)              ("two-line" surfaces: collectives, MoE all-to-all)

with x_i physically defined work quantities (FLOPs, bytes, serial elements) and r_i fitted rates.
Fits minimise a robust (soft-L1) loss on log(pred / measured), so errors are relative.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import pinned_venv  # noqa: E402
REPO = HERE.parent.parent
VENV = Path(os.environ.get("RACKSWEEP_KERNELS_VENV", Path.home() / ".cache" / "racksweep-kernels-venv"))
AIC_PIN = "0.12.0"

# AIConfigurator system name -> racksweep GPU id (src/catalog/data/gpus.toml).
SYSTEM_MAP = {
    "a100_sxm": "a100-80gb",
    "h100_sxm": "h100-sxm",
    "h200_sxm": "h200-sxm",
    "b200_sxm": "b200",
    "b300_sxm": "b300",
    "gb200": "gb200-nvl72",
    "gb300": "gb300-nvl72",
}
ENGINES = ["trtllm", "vllm", "sglang"]
MAX_FIT_ROWS = 12000  # rows per fit (deterministic subsample); errors are reported on all rows


# --------------------------------------------------------------------------------------------
# venv bootstrap
# --------------------------------------------------------------------------------------------


def ensure_venv() -> None:
    """Re-exec inside the pinned venv unless aiconfigurator-core==AIC_PIN is installed here."""
    pinned_venv.ensure(VENV, HERE / "requirements.txt", {"aiconfigurator-core": AIC_PIN}, __file__)


# --------------------------------------------------------------------------------------------
# Locating AIConfigurator's tables
# --------------------------------------------------------------------------------------------

OP_FILES = [
    "gemm_perf.parquet",
    "context_attention_perf.parquet",
    "generation_attention_perf.parquet",
    "context_mla_perf.parquet",
    "generation_mla_perf.parquet",
    "moe_perf.parquet",
    "custom_allreduce_perf.parquet",
    "moe_a2a_perf.parquet",
    "trtllm_alltoall_perf.parquet",
    "wideep_deepep_normal_perf.parquet",
    "wideep_deepep_ll_perf.parquet",
    "wideep_moe_perf.parquet",
]


def systems_root() -> Path:
    import aiconfigurator_core

    return Path(aiconfigurator_core.__file__).parent / "systems"


def package_rel(path: str | Path) -> str:
    """Path inside the installed package, e.g. aiconfigurator_core/systems/data/..."""
    p = Path(path).resolve()
    base = systems_root().parent.parent
    return str(p.relative_to(base))


def resolve_tables(system: str, engine: str):
    """Which table AIConfigurator's own resolver serves for each op at the 'current' version.

    Uses aiconfigurator_core.sdk.perf_database (get_database + the engine's source resolver,
    perf_database/source_resolution.rs). Returns (engine_version, {op_file: record}) where record
    is the first admitted, existing source that is not a cross-backend donor: the primary table at
    the current version, else the newest older version of the same engine ('fallback' channel).
    Rows a lower-priority fallback would add for shapes missing in that table are not used."""
    import logging

    logging.disable(logging.WARNING)
    from aiconfigurator_core.sdk import perf_database as pdb

    db = pdb.get_database(system, engine, "current")
    if db is None:
        return None, {}
    db._materialize_source_reports()
    out = {}
    for op in OP_FILES:
        recs = [
            r
            for r in db.data_provenance.get(op, [])
            if r["exists"] and r["channel"] in ("primary", "fallback", "declared_reuse")
        ]
        if recs:
            out[op] = dict(recs[0], fallbacks=[r["version"] for r in recs[1:]])
    return db.version, out


def gpus_per_node(system: str) -> int:
    import yaml

    return int(yaml.safe_load(open(systems_root() / f"{system}.yaml"))["node"]["num_gpus_per_node"])


def nccl_table(system: str):
    """NCCL tables are per system, not per engine: systems/<system>.yaml misc.nccl_version."""
    import yaml

    spec = yaml.safe_load(open(systems_root() / f"{system}.yaml"))
    version = str((spec.get("misc") or {}).get("nccl_version"))
    p = systems_root() / spec["data_dir"] / "comm" / "nccl" / version / "nccl_perf.parquet"
    return (version, p) if p.exists() else (version, None)


# --------------------------------------------------------------------------------------------
# Generic fitting
# --------------------------------------------------------------------------------------------


def err_stats(pred, meas):
    import numpy as np

    e = np.abs(pred / meas - 1.0)
    return float(np.median(e)), float(np.percentile(e, 90)), float(e.max())


def subsample(n: int, seed: int = 0):
    import numpy as np

    if n <= MAX_FIT_ROWS:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, MAX_FIT_ROWS, replace=False))


# Terms a kernel overlaps with each other (SPEC.md 3.2): combined under their own norm `q`
# before the p-norm, where a surface has `q`.
OVERLAPPED = ("flops_per_s", "scores_per_s")


def pnorm_eval(params: dict, xs: list, ramp=None):
    """t = t0 + (sum_i (x_i / r_i)^p)^(1/p); with a ramp, x_0 is multiplied by (1 + u_half/u).
    With `q`, the OVERLAPPED terms enter as one, ((x_a / r_a)^q + (x_b / r_b)^q)^(1/q)."""
    p = params["p"]
    terms, overlapped = [], []
    for i, (name, x) in enumerate(xs):
        if i == 0 and ramp is not None:
            x = x * (1.0 + params["u_half"] / ramp)
        (overlapped if "q" in params and name in OVERLAPPED else terms).append(x / params[name])
    if overlapped:
        q = params["q"]
        terms.append(sum(o**q for o in overlapped) ** (1.0 / q))
    acc = sum(term**p for term in terms)
    return params["t0_s"] + acc ** (1.0 / p)


def fit_pnorm(xs: list, t, ramp=None, p_max: float = 8.0, overlap: bool = False):
    """Fit rates r_i (one per term), t0 and p (1 <= p <= p_max) to latencies t (seconds); with
    `overlap`, also the norm q (1 <= q <= p_max) of the OVERLAPPED terms (pnorm_eval).

    xs: list of (rate_name, x array). Returns the params dict."""
    import numpy as np
    from scipy.optimize import least_squares

    idx = subsample(len(t))
    xs_f = [(n, x[idx]) for n, x in xs]
    t_f = t[idx]
    ramp_f = None if ramp is None else ramp[idx]
    names = [n for n, _ in xs]

    def ex(x):
        return math.exp(min(max(x, -700.0), 700.0))

    def unpack(v):
        d = {n: ex(v[i]) for i, n in enumerate(names)}
        d["t0_s"] = ex(v[len(names)])
        d["p"] = 1.0 + (p_max - 1.0) / (1.0 + ex(-v[len(names) + 1]))
        if ramp is not None:
            d["u_half"] = ex(v[len(names) + 2])
        if overlap:
            d["q"] = 1.0 + (p_max - 1.0) / (1.0 + ex(-v[-1]))
        return d

    def resid(v):
        with np.errstate(over="ignore", invalid="ignore"):
            pr = pnorm_eval(unpack(v), xs_f, ramp_f)
        r = np.log(pr / t_f)
        return np.where(np.isfinite(r), r, 10.0)

    # initial rates: each term alone explains the slowest 10 % of points
    v0 = []
    for _, x in xs_f:
        v0.append(math.log(max(np.percentile(x / t_f, 95), 1e-30)))
    v0.append(math.log(max(float(np.min(t_f)) * 0.7, 1e-7)))
    v0.append(0.0)
    if ramp is not None:
        v0.append(math.log(16.0))
    if overlap:
        v0.append(2.0)
    best = None
    for start_p in (0.0, 2.0):
        v0[len(names) + 1] = start_p
        s = least_squares(resid, np.array(v0), loss="soft_l1", f_scale=0.05, max_nfev=3000)
        if best is None or s.cost < best.cost:
            best = s
    return unpack(best.x)


def two_line_eval(params: dict, x):
    import numpy as np

    a = params["alpha1_s"] + x / params["beta1"]
    b = params["alpha2_s"] + x / params["beta2"]
    return np.minimum(a, b)


def fit_two_line(x, t):
    """t = min(alpha1 + x/beta1, alpha2 + x/beta2): latency-bound small messages (one-shot,
    low-latency kernels) and bandwidth-bound large ones (ring / two-shot)."""
    import numpy as np
    from scipy.optimize import least_squares

    order = np.argsort(x)
    xs, ts = x[order], t[order]

    def unpack(v):
        return {
            "alpha1_s": math.exp(v[0]),
            "beta1": math.exp(v[1]),
            "alpha2_s": math.exp(v[2]),
            "beta2": math.exp(v[3]),
        }

    def resid(v):
        return np.log(two_line_eval(unpack(v), xs) / ts)

    big = xs > np.percentile(xs, 75)
    slope_big = max(np.polyfit(xs[big], ts[big], 1)[0], 1e-18) if big.sum() >= 2 else 1e-12
    mid = (xs > np.percentile(xs, 30)) & (xs <= np.percentile(xs, 75))
    slope_mid = max(np.polyfit(xs[mid], ts[mid], 1)[0], slope_big) if mid.sum() >= 2 else slope_big
    v0 = [
        math.log(ts.min()),
        math.log(1.0 / slope_mid),
        math.log(max(ts.min(), ts[-1] - xs[-1] * slope_big)),
        math.log(1.0 / slope_big),
    ]
    s = least_squares(resid, np.array(v0), loss="soft_l1", f_scale=0.05, max_nfev=4000)
    p = unpack(s.x)
    # a line that never attains the minimum over the table's range is redundant (the fit may
    # have pushed it to beta -> 0): replace it by the other line, so min() is unchanged
    grid = np.geomspace(max(xs.min(), 1e-12), xs.max(), 200)
    l1 = p["alpha1_s"] + grid / p["beta1"]
    l2 = p["alpha2_s"] + grid / p["beta2"]
    if not (l1 < l2).any():
        p["alpha1_s"], p["beta1"] = p["alpha2_s"], p["beta2"]
    elif not (l2 < l1).any():
        p["alpha2_s"], p["beta2"] = p["alpha1_s"], p["beta1"]
    # canonical order: line 1 is the one with the smaller alpha
    if p["alpha1_s"] > p["alpha2_s"]:
        p = {"alpha1_s": p["alpha2_s"], "beta1": p["beta2"], "alpha2_s": p["alpha1_s"], "beta2": p["beta1"]}
    return p


def pick_samples(df, pred, inputs: list[str], n: int = 4):
    """Rows at latency quantiles 10/40/70/95 % (deterministic) with measured and predicted ms."""
    import numpy as np

    t = df["latency_ms"].to_numpy()
    order = np.argsort(t, kind="stable")
    out = []
    seen = set()
    for q in (0.10, 0.40, 0.70, 0.95)[:n]:
        i = int(order[min(len(t) - 1, int(q * (len(t) - 1)))])
        if i in seen:
            continue
        seen.add(i)
        row = {c: _py(df[c].iloc[i]) for c in inputs}
        row["measured_ms"] = float(t[i])
        row["predicted_ms"] = float(pred[i] * 1e3)
        out.append(row)
    return out


def _py(v):
    if hasattr(v, "item"):
        v = v.item()
    return v


def ranges(df, cols):
    return {c: [_py(df[c].min()), _py(df[c].max())] for c in cols}


def surface_record(kind, key, params, df, pred_s, inputs, source, table_version, extra=None):
    med, p90, mx = err_stats(pred_s * 1e3, df["latency_ms"].to_numpy())
    rec = {"kind": kind, **key}
    if extra:
        rec.update(extra)
    rec["params"] = params
    rec["points"] = int(len(df))
    rec["err_median"] = med
    rec["err_p90"] = p90
    rec["err_max"] = mx
    rec["range"] = ranges(df, inputs)
    rec["source"] = source
    rec["table_version"] = table_version
    rec["samples"] = pick_samples(df, pred_s, inputs)
    return rec


# --------------------------------------------------------------------------------------------
# Element sizes (bytes per element) as the kernels read them
# --------------------------------------------------------------------------------------------

# (activation bytes, weight bytes) per AIC gemm/moe dtype label. nvfp4/mxfp4 carry one 8-bit
# scale per 16 (nvfp4) or 32 (mxfp4) elements: 0.5625 and 0.53125 bytes per element.
GEMM_BYTES = {
    "bfloat16": (2.0, 2.0),
    "float16": (2.0, 2.0),
    "fp8": (1.0, 1.0),
    "fp8_block": (1.0, 1.0),
    "nvfp4": (0.5625, 0.5625),
    "sq": (1.0, 1.0),  # SmoothQuant W8A8 int8
    "int8_wo": (2.0, 1.0),
    "int4_wo": (2.0, 0.5),
    "w4a16_mxfp4": (2.0, 0.53125),
    "w4a8_mxfp4_mxfp8": (1.03125, 0.53125),
}
KV_BYTES = {"bfloat16": 2.0, "float16": 2.0, "fp8": 1.0}
DTYPE_RACKSWEEP = {
    "bfloat16": "bf16",
    "float16": "fp16",
    "fp8": "fp8",
    "fp8_block": "fp8_block",
    "nvfp4": "nvfp4",
    "sq": "int8_sq",
    "int8_wo": "int8_wo",
    "int4_wo": "int4_wo",
    "w4a16_mxfp4": "mxfp4_w4a16",
    "w4a8_mxfp4_mxfp8": "mxfp4_w4a8",
}
MIN_ROWS = 200


def load(path):
    import pandas as pd

    df = pd.read_parquet(path)
    df["latency_ms"] = df["latency"].astype(float)
    for col, default in (("window_size", 0), ("beam_width", 1)):
        if col not in df:
            df[col] = default  # older table schemas (e.g. a100_sxm) have no such column
    return df[df["latency_ms"] > 0].reset_index(drop=True)


# --------------------------------------------------------------------------------------------
# Surfaces
# --------------------------------------------------------------------------------------------


ROWS_KNOTS = 16  # shape factor knots in log2(m): m = 2^0 .. 2^15 (the tables' m range is 1..32768)
SIZE_KNOTS = 7  # and in log2(n k) / 2: n k = 2^20, 2^22, .. 2^32 (1M to 4G weight elements)
SIZE_LOG2_MIN = 20.0


def knot_factor(x, y, nx, ny, pred, t, min_rows=5):
    """Median measured/predicted per knot of (x, y), knots at integers 0..nx-1 and 0..ny-1,
    row-major in x. Rows within half a knot step belong to a knot (at least `min_rows`); a knot
    without rows takes the nearest knot's factor (SPEC.md 3.1)."""
    import numpy as np

    r = np.log(t / pred)
    grid = np.full((nx, ny), np.nan)
    for i in range(nx):
        near_x = np.abs(x - i) <= 0.5
        for j in range(ny):
            sel = near_x & (np.abs(y - j) <= 0.5)
            if sel.sum() >= min_rows:
                grid[i, j] = np.median(r[sel])
    known = np.argwhere(~np.isnan(grid))
    if len(known) == 0:
        return [1.0] * (nx * ny)
    for i in range(nx):
        for j in range(ny):
            if np.isnan(grid[i, j]):
                d = np.abs(known[:, 0] - i) + np.abs(known[:, 1] - j)
                a, b = known[np.lexsort((known[:, 1], known[:, 0], d))[0]]
                grid[i, j] = grid[a, b]
    return [float(f"{v:.5g}") for v in np.exp(grid).ravel()]


def knot_eval(factor, x, y, nx, ny):
    """Bilinear interpolation of the knots, clamped at the edges (SPEC.md 3.1)."""
    import numpy as np

    f = np.asarray(factor, dtype=float).reshape(nx, ny)
    x = np.clip(x, 0.0, nx - 1.0)
    y = np.clip(y, 0.0, ny - 1.0)
    i = np.minimum(x.astype(int), nx - 2)
    j = np.minimum(y.astype(int), ny - 2)
    u, v = x - i, y - j
    return (f[i, j] * (1 - u) * (1 - v) + f[i + 1, j] * u * (1 - v)
            + f[i, j + 1] * (1 - u) * v + f[i + 1, j + 1] * u * v)


def gemm_knots(m, n, k):
    """GEMM knot coordinates: log2 m and log2(n k) / 2 from 2^20."""
    import numpy as np

    return np.log2(np.maximum(m, 1.0)), (np.log2(np.maximum(n * k, 1.0)) - SIZE_LOG2_MIN) / 2.0


def shape_factor(m, n, k, pred, t):
    """GEMM shape factor: median measured/predicted per knot of (log2 m, log2(n k) / 2).

    The p-norm's smooth maximum misses where the tile pipeline changes regime: between weight
    streaming and tensor-core bound (m ~ 64..512 rows) Hopper's FP8 GEMMs overlap the two almost
    perfectly on large weights (3.8 TB/s and 940 TFLOP/s at once on H200, m = 128, 65536 x 16384)
    while small weights pay wave quantization; one global p cannot follow both (SPEC.md 3.1)."""
    x, y = gemm_knots(m, n, k)
    return knot_factor(x, y, ROWS_KNOTS, SIZE_KNOTS, pred, t)


def shape_factor_eval(factor, m, n, k):
    x, y = gemm_knots(m, n, k)
    return knot_eval(factor, x, y, ROWS_KNOTS, SIZE_KNOTS)


GROUP_KNOTS = 6  # decode attention: log2(h / kv) = 0..5, 1 to 32 query heads per KV head
WORK_KNOTS = 15  # and log2(b c) / 2 = 0..14: b c = 1 .. 2^28 cached tokens read per step


def attention_knots(b, c, h, kv):
    """Decode-attention knot coordinates: log2 of the query heads per KV head, log2(b c) / 2."""
    import numpy as np

    return np.log2(np.maximum(h / kv, 1.0)), np.log2(np.maximum(b * c, 1.0)) / 2.0


def fit_gemm(rec):
    """GEMM C[m,n] = A[m,k] B[k,n]: x = (2mnk FLOP, m k a + n k w + 2 m n bytes, k serial)."""
    df = load(rec["path"])
    out = []
    counts = df.groupby(["gemm_dtype", "kernel_source"]).size()
    for (dt, ks), cnt in counts.items():
        if dt not in GEMM_BYTES or cnt < MIN_ROWS:
            continue
        g = df[(df.gemm_dtype == dt) & (df.kernel_source == ks)].reset_index(drop=True)
        m, n, k = (g[c].to_numpy(float) for c in ("m", "n", "k"))
        a, w = GEMM_BYTES[dt]
        xs = [
            ("flops_per_s", 2.0 * m * n * k),
            ("bytes_per_s", m * k * a + n * k * w + 2.0 * m * n),
            ("k_per_s", k),
        ]
        t = g["latency_ms"].to_numpy() * 1e-3
        p = fit_pnorm(xs, t)
        factor = shape_factor(m, n, k, pnorm_eval(p, xs), t)
        p["shape_factor"] = factor
        pred = pnorm_eval(p, xs) * shape_factor_eval(factor, m, n, k)
        default = bool(cnt == counts[dt].max())
        out.append(
            surface_record(
                "gemm",
                {"dtype": DTYPE_RACKSWEEP[dt], "aic_dtype": dt, "kernel": ks, "default": default},
                p,
                g,
                pred,
                ["m", "n", "k"],
                package_rel(rec["path"]),
                rec["version"],
                {"act_bytes": a, "weight_bytes": w},
            )
        )
    return out


WINDOW_KNOTS = 16  # prefill window ratio: log2(prompt tokens) = 0..15, 1 to 32,768 tokens


def window_ratio(rows):
    """A sliding-window layer's prefill time over a full-attention layer's on the same prompts
    (`rows`: one attention/KV dtype and kernel, every window size), median per knot of
    log2(prompt tokens), per window size measured (SPEC.md 3.2a). None without window rows."""

    keys = ["batch_size", "isl", "num_heads", "num_key_value_heads", "head_dim"]
    rows = rows[rows.beam_width == 1]
    tokens, ratios, errs = [], [], []
    for w in sorted(int(w) for w in rows.window_size.unique() if w > 0):
        pairs = rows[rows.window_size == 0].merge(rows[rows.window_size == w], on=keys, suffixes=("_full", "_win"))
        if len(pairs) >= MIN_ROWS:
            ratio, err = window_knots(pairs)
            tokens.append(float(w))
            ratios += ratio
            errs.append(err)
    if not tokens:
        return None
    return {"window_tokens": tokens, "window_ratio": ratios,
            "window_err_median": [e[0] for e in errs], "window_err_p90": [e[1] for e in errs]}


def window_knots(pairs):
    """The knots of one window's ratio, and their (median, p90) error against its rows."""
    import numpy as np

    x = np.log2(np.maximum(pairs["isl"].to_numpy(float), 1.0))
    r = np.log(pairs["latency_ms_win"].to_numpy() / pairs["latency_ms_full"].to_numpy())
    knots = np.full(WINDOW_KNOTS, np.nan)
    for i in range(WINDOW_KNOTS):
        sel = np.abs(x - i) <= 0.5
        if sel.sum() >= 3:
            knots[i] = np.median(r[sel])
    known = np.flatnonzero(~np.isnan(knots))
    for i in range(WINDOW_KNOTS):
        if np.isnan(knots[i]):
            knots[i] = knots[known[np.argmin(np.abs(known - i))]]
    ratio = [float(f"{v:.5g}") for v in np.exp(knots)]
    fitted = np.interp(np.clip(x, 0, WINDOW_KNOTS - 1), np.arange(WINDOW_KNOTS), ratio)
    med, p90, _ = err_stats(fitted, np.exp(r))
    return ratio, (med, p90)


def fit_context_attention(rec):
    """Causal prefill attention, b sequences of s tokens, h query heads, kv heads, head dim d."""
    import numpy as np

    every = load(rec["path"])
    df = every[(every.window_size == 0) & (every.beam_width == 1)]
    out = []
    counts = df.groupby(["attn_dtype", "kv_cache_dtype", "kernel_source"]).size()
    for (adt, kdt, ks), g in df.groupby(["attn_dtype", "kv_cache_dtype", "kernel_source"]):
        if len(g) < MIN_ROWS or kdt not in KV_BYTES:
            continue
        default = bool(len(g) == counts[adt][kdt].max())
        g = g.reset_index(drop=True)
        b, s, h, kv, d = (g[c].to_numpy(float) for c in ("batch_size", "isl", "num_heads", "num_key_value_heads", "head_dim"))
        qb = KV_BYTES.get(adt, 2.0)
        kb = KV_BYTES[kdt]
        xs = [
            ("flops_per_s", 2.0 * b * h * d * s * s),
            ("bytes_per_s", b * s * d * (2.0 * h * qb + 2.0 * kv * kb)),
            ("serial_per_s", s * d),
            ("rows_per_s", b * s * h),
        ]
        # The softmax's exponentials, one per score the causal mask keeps, whatever the head
        # width: told apart from the MMAs only where the slice spans several head widths.
        overlap = len(np.unique(d)) > 1
        if overlap:
            xs.append(("scores_per_s", b * h * s * s / 2.0))
        t = g["latency_ms"].to_numpy() * 1e-3
        p = fit_pnorm(xs, t, overlap=overlap)
        pred = pnorm_eval(p, xs)
        extra = {"q_bytes": qb, "kv_bytes": kb}
        window = window_ratio(every[(every.attn_dtype == adt) & (every.kv_cache_dtype == kdt) & (every.kernel_source == ks)])
        if window:
            extra.update(window)
        out.append(
            surface_record(
                "context_attention",
                {"attn_dtype": DTYPE_RACKSWEEP.get(adt, adt), "kv_dtype": DTYPE_RACKSWEEP.get(kdt, kdt),
                 "kernel": ks, "default": default},
                p, g, pred, ["batch_size", "isl", "num_heads", "num_key_value_heads", "head_dim"],
                package_rel(rec["path"]), rec["version"], extra,
            )
        )
    return out


def fit_generation_attention(rec):
    """Decode attention: b sequences, one query token each, attending c = step + 1 cached tokens."""
    df = load(rec["path"])
    df = df[(df.window_size == 0) & (df.beam_width == 1) & (df.isl == 1)]
    # more than 32 query heads per KV head (MQA with 48..128 heads) runs a different, much slower
    # kernel path in TRT-LLM (XQA's limit); excluded here and flagged in SPEC.md
    df = df[df.num_heads <= 32 * df.num_key_value_heads]
    out = []
    counts = df.groupby(["attn_dtype", "kv_cache_dtype", "kernel_source"]).size()
    for (adt, kdt, ks), g in df.groupby(["attn_dtype", "kv_cache_dtype", "kernel_source"]):
        if len(g) < MIN_ROWS or kdt not in KV_BYTES:
            continue
        default = bool(len(g) == counts[adt][kdt].max())
        g = g.reset_index(drop=True)
        g["context"] = g["step"] + 1
        b, c, h, kv, d = (g[x].to_numpy(float) for x in ("batch_size", "context", "num_heads", "num_key_value_heads", "head_dim"))
        kb = KV_BYTES[kdt]
        xs = [
            ("bytes_per_s", b * c * kv * d * 2.0 * kb + 4.0 * b * h * d),
            ("flops_per_s", 4.0 * b * h * d * c),
            ("kvseq_per_s", b * kv),
        ]
        t = g["latency_ms"].to_numpy() * 1e-3
        p = fit_pnorm(xs, t, ramp=b * kv)
        # The XQA kernels change regime with the query heads sharing a KV head (one CTA per KV
        # head and its query group) and with the work per step; one p-norm over every head
        # layout misses by -20 % (MHA) to +25 % (GQA 4-6) at H200 FP8 (SPEC.md 3.3).
        gx, gy = attention_knots(b, c, h, kv)
        base = pnorm_eval(p, xs, b * kv)
        p["shape_factor"] = knot_factor(gx, gy, GROUP_KNOTS, WORK_KNOTS, base, t)
        pred = base * knot_eval(p["shape_factor"], gx, gy, GROUP_KNOTS, WORK_KNOTS)
        out.append(
            surface_record(
                "generation_attention",
                {"attn_dtype": DTYPE_RACKSWEEP.get(adt, adt), "kv_dtype": DTYPE_RACKSWEEP.get(kdt, kdt),
                 "kernel": ks, "default": default},
                p, g, pred, ["batch_size", "context", "num_heads", "num_key_value_heads", "head_dim"],
                package_rel(rec["path"]), rec["version"], {"kv_bytes": kb},
            )
        )
    return out


# DeepSeek-V3 MLA dimensions (the only ones AIC's MLA tables are measured for):
# q/k head dim 128 (nope) + 64 (rope), v head dim 128, compressed KV 512 + 64 rope.
MLA_DQK, MLA_DV, MLA_LATENT, MLA_ROPE = 192.0, 128.0, 512.0, 64.0


def fit_context_mla(rec):
    df = load(rec["path"])
    out = []
    for (mdt, kdt), g in df.groupby(["mla_dtype", "kv_cache_dtype"]):
        if len(g) < MIN_ROWS or kdt not in KV_BYTES:
            continue
        g = g.reset_index(drop=True)
        b, s, h = (g[c].to_numpy(float) for c in ("batch_size", "isl", "num_heads"))
        xs = [
            ("flops_per_s", b * h * s * s * (MLA_DQK + MLA_DV)),
            ("bytes_per_s", b * s * h * (2 * MLA_DQK + 2 * MLA_DV) * 2.0),
            ("serial_per_s", s),
            ("rows_per_s", b * s * h),
        ]
        t = g["latency_ms"].to_numpy() * 1e-3
        p = fit_pnorm(xs, t)
        pred = pnorm_eval(p, xs)
        out.append(
            surface_record(
                "context_mla",
                {"mla_dtype": DTYPE_RACKSWEEP.get(mdt, mdt), "kv_dtype": DTYPE_RACKSWEEP.get(kdt, kdt),
                 "kernel": ",".join(sorted(g.kernel_source.unique()))},
                p, g, pred, ["batch_size", "isl", "num_heads"], package_rel(rec["path"]), rec["version"],
            )
        )
    return out


def fit_generation_mla(rec):
    df = load(rec["path"])
    df = df[df.isl == 1]
    out = []
    for (mdt, kdt), g in df.groupby(["mla_dtype", "kv_cache_dtype"]):
        if len(g) < MIN_ROWS or kdt not in KV_BYTES:
            continue
        g = g.reset_index(drop=True)
        g["context"] = g["step"] + 1
        b, c, h = (g[x].to_numpy(float) for x in ("batch_size", "context", "num_heads"))
        kb = KV_BYTES[kdt]
        xs = [
            ("bytes_per_s", b * c * (MLA_LATENT + MLA_ROPE) * kb),
            ("flops_per_s", 2.0 * b * h * c * (2 * MLA_LATENT + MLA_ROPE)),
            ("serial_per_s", c),
        ]
        t = g["latency_ms"].to_numpy() * 1e-3
        p = fit_pnorm(xs, t)
        pred = pnorm_eval(p, xs)
        out.append(
            surface_record(
                "generation_mla",
                {"mla_dtype": DTYPE_RACKSWEEP.get(mdt, mdt), "kv_dtype": DTYPE_RACKSWEEP.get(kdt, kdt),
                 "kernel": ",".join(sorted(g.kernel_source.unique()))},
                p, g, pred, ["batch_size", "context", "num_heads"], package_rel(rec["path"]), rec["version"],
                {"kv_bytes": kb},
            )
        )
    return out


def moe_terms(g, a, w, mats):
    import numpy as np

    T, hid, inter, k, E, tp, ep = (
        g[c].to_numpy(float)
        for c in ("num_tokens", "hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size", "moe_ep_size")
    )
    i_loc = inter / tp
    touched = (E / ep) * (1.0 - np.power(1.0 - k / E, T))
    tpe = T * k / E
    xs = [
        ("flops_per_s", 2.0 * T * k / ep * mats * hid * i_loc),
        ("bytes_per_s", touched * mats * hid * i_loc * w + T * k / ep * hid * a * 2.0),
        ("token_per_s", T * k / ep * hid),
        ("alltoken_per_s", T * hid),
        ("expert_per_s", touched),
    ]
    return xs, tpe


def fit_moe(rec):
    """Routed-expert grouped GEMMs of one MoE layer on one GPU, one surface per routing
    distribution measured: uniform ('balanced') and AIC's power-law expert popularity
    ('power_law_<alpha>', the skew its models assume: alpha 1.01 for DeepSeek-family models,
    1.2 for the others; aiconfigurator_core/sdk/models/deepseek.py and moe.py)."""
    df = load(rec["path"])
    out = []
    for dist in sorted(df.distribution.unique()):
        d = df[df.distribution == dist]
        counts = d.groupby(["moe_dtype", "kernel_source"]).size()
        for (dt, ks), cnt in counts.items():
            if dt not in GEMM_BYTES or cnt < MIN_ROWS:
                continue
            g = d[(d.moe_dtype == dt) & (d.kernel_source == ks)].reset_index(drop=True)
            a, w = GEMM_BYTES[dt]
            mats = 2.0 if "nongated" in ks else 3.0
            xs, tpe = moe_terms(g, a, w, mats)
            t = g["latency_ms"].to_numpy() * 1e-3
            p = fit_pnorm(xs, t, ramp=tpe)
            pred = pnorm_eval(p, xs, tpe)
            default = bool(cnt == counts[dt].max())
            out.append(
                surface_record(
                    "moe",
                    {"dtype": DTYPE_RACKSWEEP[dt], "aic_dtype": dt, "kernel": ks, "default": default},
                    p, g, pred,
                    ["num_tokens", "hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size", "moe_ep_size"],
                    package_rel(rec["path"]), rec["version"],
                    {"act_bytes": a, "weight_bytes": w, "matrices": mats, "distribution": dist},
                )
            )
    return out


BALANCE_EP_KNOTS = 8  # expert balance: log2(ep) - 1 = 0..7, ep 2 to 256
BALANCE_LOAD_KNOTS = 15  # and log2(T k / E) + 5 = 0..14: 1/32 to 512 routed tokens per expert


def balance_knots(T, k, E, ep):
    """Expert-balance knot coordinates: log2(ep) - 1 and log2 of the mean routed tokens per expert
    plus 5 (SPEC.md 3.6a)."""
    import numpy as np

    return np.log2(np.maximum(ep, 1.0)) - 1.0, np.log2(np.maximum(T * k / E, 1e-9)) + 5.0


def fit_eplb(rec):
    """What an expert-parallel load balancer does to the busiest rank's routed experts: TensorRT-LLM's
    wide-EP MoE table times one layer's grouped GEMMs on rank 0 at AIC's power-law routing with the
    experts placed in order ('power_law_<alpha>') and placed by the balancer ('<...>_eplb'), same
    shapes. The factor is the median eplb/skewed ratio per knot of (log2 ep, log2 tokens per
    expert) over the table's shapes (DeepSeek-V3/R1 7168 x 2048, 256 experts; 6144 x 2048 and
    3072 x 1536; 384 experts), from the rows that place the model's experts only (num_slots =
    num_experts: every ep measured); the rows with redundant slots (288 for 256 experts, ep <= 32)
    are left out (SPEC.md 3.6a)."""
    df = load(rec["path"])
    df = df.assign(alpha=df.distribution.str.replace("_eplb", "", regex=False))
    shape = ["alpha", "hidden_size", "inter_size", "topk", "num_experts", "moe_ep_size", "num_tokens"]
    skewed = df[df.op_name == "wideep_moe"][shape + ["latency_ms"]].rename(columns={"latency_ms": "skewed_ms"})
    balanced = df[(df.op_name == "wideep_moe_eplb") & (df.num_slots == df.num_experts)]
    pairs = balanced.merge(skewed, on=shape)
    out = []
    for alpha, g in pairs.groupby("alpha"):
        if len(g) < MIN_ROWS:
            continue
        g = g.reset_index(drop=True)
        T, k, E, ep = (g[c].to_numpy(float) for c in ("num_tokens", "topk", "num_experts", "moe_ep_size"))
        x, y = balance_knots(T, k, E, ep)
        base = g["skewed_ms"].to_numpy() * 1e-3
        t = g["latency_ms"].to_numpy() * 1e-3
        factor = knot_factor(x, y, BALANCE_EP_KNOTS, BALANCE_LOAD_KNOTS, base, t, min_rows=3)
        pred = base * knot_eval(factor, x, y, BALANCE_EP_KNOTS, BALANCE_LOAD_KNOTS)
        kernels = ",".join(sorted(g.kernel_source.unique()))
        dtypes = ",".join(sorted(g.moe_dtype.unique()))
        out.append(
            surface_record(
                "eplb",
                {"distribution": alpha, "kernel": kernels, "measured_dtype": dtypes},
                {"balance_factor": factor}, g, pred,
                ["num_tokens", "hidden_size", "inter_size", "topk", "num_experts", "moe_ep_size", "skewed_ms"],
                package_rel(rec["path"]), rec["version"],
            )
        )
    return out


def fit_comm_table(df, x, keycols, kind, source, version, extra_key=None, inputs=None):
    out = []
    df = df.assign(x=x)
    for key, g in df.groupby(keycols):
        key = key if isinstance(key, tuple) else (key,)
        g = g.reset_index(drop=True)
        if len(g) < 6:
            continue
        t = g["latency_ms"].to_numpy() * 1e-3
        xv = g["x"].to_numpy(float)
        p = fit_two_line(xv, t)
        pred = two_line_eval(p, xv)
        k = {c: _py(v) for c, v in zip(keycols, key)}
        if extra_key:
            k.update(extra_key)
        out.append(surface_record(kind, k, p, g, pred, inputs or ["x"], source, version))
    return out


def fit_custom_allreduce(rec):
    df = load(rec["path"])
    df = df[df.allreduce_dtype.isin(["bfloat16", "float16", "half"])]
    df = df.assign(bytes=df.message_size * 2)
    return fit_comm_table(
        df, df["bytes"], ["kernel_source", "num_gpus"], "custom_allreduce", package_rel(rec["path"]),
        rec["version"], {"dtype": "bf16"}, ["bytes"],
    )


def fit_nccl(path, version):
    df = load(path)
    df = df[df.nccl_dtype == "half"]
    df = df.assign(bytes=df.message_size * 2)
    return fit_comm_table(
        df, df["bytes"], ["op_name", "num_gpus"], "nccl", package_rel(path), version, {"dtype": "fp16"}, ["bytes"]
    )


def fit_moe_a2a(rec):
    """DeepEP-style dispatch/combine (trtllm, vllm tables); x = tokens*topk*hidden elements."""
    df = load(rec["path"])
    # moe_a2a tables store latency in microseconds (latency == transmit_us + notify_us)
    df["latency_ms"] = df["latency"].astype(float) * 1e-3
    df = df.assign(elements=df.num_tokens * df.topk * df.hidden_size)
    # several SM budgets per shape in some tables: keep the fastest (best-tuned) row per shape
    shape = ["comm_backend", "phase", "comm_dtype", "ep_size", "node_num", "hidden_size", "topk", "num_experts", "num_tokens"]
    df = df.sort_values("latency_ms").drop_duplicates(shape).reset_index(drop=True)
    return fit_comm_table(
        df, df["elements"], ["comm_backend", "phase", "comm_dtype", "ep_size", "node_num"], "moe_a2a",
        package_rel(rec["path"]), rec["version"], None, ["num_tokens", "topk", "hidden_size", "num_experts", "elements"],
    )


def fit_trtllm_alltoall(rec):
    """TensorRT-LLM's own all-to-all over multi-node NVLink (SPEC.md 3.9a): the two-sided MNNVL
    kernels its MoE backends run when ep > top-k (`MnnvlMoe`), prepare, dispatch and combine, per
    expert-parallel size; x = tokens*topk*hidden elements as for moe_a2a. Dispatch in each format
    the table measured; prepare (routing metadata) and combine (bf16 outputs) in its bf16 rows
    only, the format of a run not changing what they move. The one-sided kernels (NVFP4 only,
    ep <= 32) and the low-precision combine (off by default) are not distilled."""
    df = load(rec["path"])  # latency in milliseconds
    df = df[(df.kernel_source == "NVLinkTwoSided") & (
        (df.op_name == "alltoall_dispatch")
        | (df.op_name.isin(["alltoall_prepare", "alltoall_combine"]) & (df.moe_dtype == "bfloat16")))]
    df = df.assign(
        comm_backend="trtllm_nvlink_two_sided",
        phase=df.op_name.str.replace("alltoall_", "", regex=False),
        comm_dtype=df.moe_dtype,
        ep_size=df.moe_ep_size,
        elements=df.num_tokens * df.topk * df.hidden_size,
    )
    return fit_comm_table(
        df, df["elements"], ["comm_backend", "phase", "comm_dtype", "ep_size"], "moe_a2a",
        package_rel(rec["path"]), rec["version"], None, ["num_tokens", "topk", "hidden_size", "num_experts", "elements"],
    )


def fit_sglang_deepep(rec_normal, rec_ll, gpus_per_node):
    """SGLang DeepEP tables: normal (high-throughput) and low-latency kernels, dispatch and combine."""
    import pandas as pd

    out = []
    for rec, mode in ((rec_normal, "deepep_normal"), (rec_ll, "deepep_ll")):
        if rec is None:
            continue
        raw = pd.read_parquet(rec["path"])
        for phase in ("dispatch", "combine"):
            if mode == "deepep_normal":
                lat = (raw[f"{phase}_transmit_us"] + raw[f"{phase}_notify_us"]) * 1e-3
            else:
                lat = raw[f"{phase}_avg_t_us"] * 1e-3
            df = raw.assign(latency_ms=lat, phase=phase, comm_backend=mode)
            df = df[df.latency_ms > 0]
            df = df.assign(num_tokens=df.num_token, topk=df.num_topk)
            df = df.assign(elements=df.num_tokens * df.topk * df.hidden_size)
            shape = ["node_num", "hidden_size", "topk", "num_experts", "num_tokens"]
            df = df.sort_values("latency_ms").drop_duplicates(shape).reset_index(drop=True)
            out += fit_comm_table(
                df, df["elements"], ["comm_backend", "phase", "node_num"], "moe_a2a", package_rel(rec["path"]),
                rec["version"], {"comm_dtype": "bf16" if phase == "combine" else "default", "ep_size_per_node": gpus_per_node},
                ["num_tokens", "topk", "hidden_size", "num_experts", "elements"],
            )
    return out


# --------------------------------------------------------------------------------------------
# TOML output
# --------------------------------------------------------------------------------------------


def toml_key(k: str) -> str:
    """A bare TOML key where it may be one, else a quoted one."""
    return k if k and all(c.isalnum() or c in "_-" for c in k) and k.isascii() else toml_value(k)


def toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if v == 0.0:
            return "0.0"
        return f"{v:.6g}" if ("e" in f"{v:.6g}" or "." in f"{v:.6g}") else f"{v:.6g}.0"
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{toml_key(k)} = {toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(type(v))


PARAM_ORDER = ["t0_s", "p", "q", "u_half", "flops_per_s", "bytes_per_s", "k_per_s", "serial_per_s", "rows_per_s",
               "scores_per_s", "kvseq_per_s",
               "token_per_s", "alltoken_per_s", "expert_per_s",
               "alpha1_s", "beta1", "alpha2_s", "beta2"]


def write_toml(path: Path, header: dict, surfaces: list):
    path.write_text(surface_file([
        "# Kernel surfaces distilled from NVIDIA AIConfigurator's measured tables (Apache-2.0).",
        "# Generated by scripts/kernels/distill.py; formulas in scripts/kernels/SPEC.md. Do not edit by hand.",
        UNITS_COMMENT,
    ], header, surfaces))


UNITS_COMMENT = "# Units: seconds, FLOP/s, bytes/s, elements/s. err_* are |pred/meas - 1| over the source rows."


def surface_file(comments: list, header: dict, surfaces: list) -> str:
    """A surface file's text: `comments`, a blank line, the header's keys, then one `[[kind]]`
    table per surface (its keys, its parameters in PARAM_ORDER, its knots, its range)."""
    lines = comments + [""]
    for k, v in header.items():
        lines.append(f"{k} = {toml_value(v)}")
    for s in surfaces:
        lines.append("")
        lines.append(f"[[{s['kind']}]]")
        for k, v in s.items():
            if k in ("kind", "params", "samples", "range"):
                continue
            lines.append(f"{k} = {toml_value(v)}")
        for k in PARAM_ORDER:
            if k in s["params"]:
                lines.append(f"{k} = {toml_value(float(s['params'][k]))}")
        for knots in ("shape_factor", "balance_factor"):
            if knots in s["params"]:
                lines.append(f"{knots} = {toml_value([float(x) for x in s['params'][knots]])}")
        lines.append(f"range = {toml_value(s['range'])}")
    return "\n".join(lines) + "\n"


# The keys that name a surface in its samples file (the link itself is the position: the n-th
# `[[kind]]` of a samples file belongs to the n-th `[[kind]]` of the surface file).
SAMPLE_ID_KEYS = ["dtype", "attn_dtype", "mla_dtype", "kv_dtype", "kernel", "distribution", "kernel_source", "op_name",
                  "num_gpus", "comm_backend", "phase", "comm_dtype", "ep_size", "ep_size_per_node", "node_num"]


def samples_dir(out: Path) -> Path:
    """Where the samples of the surface files in `out` go: scripts/kernels/samples for the
    catalog, else `out`/samples."""
    default_out = (REPO / "src" / "catalog" / "data" / "kernels").resolve()
    return HERE / "samples" if out.resolve() == default_out else out / "samples"


def write_samples(path: Path, surface_file: str, header: dict, surfaces: list, generator: str):
    """The sample points of one surface file (SPEC.md section 5), kept out of the catalog so the
    binary embeds only the surfaces: test data for src/catalog/kernels.rs and check_samples.py."""
    lines = [
        f"# Sample points of src/catalog/data/kernels/{surface_file}: four rows of each surface's source table",
        "# with the distiller's prediction (SPEC.md section 5), for tests only (src/catalog/kernels.rs,",
        "# scripts/kernels/check_samples.py); the n-th [[kind]] here belongs to the n-th [[kind]] there.",
        f"# Generated by {generator}. Do not edit by hand.",
        "",
        f"gpu = {toml_value(header['gpu'])}",
        f"engine = {toml_value(header['engine'])}",
    ]
    for s in surfaces:
        lines.append("")
        lines.append(f"[[{s['kind']}]]")
        for k in SAMPLE_ID_KEYS:
            if k in s:
                lines.append(f"{k} = {toml_value(s[k])}")
        lines.append("samples = [")
        for smp in s["samples"]:
            lines.append(f"  {toml_value(smp)},")
        lines.append("]")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


# --------------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------------


def distill_one(system: str, engine: str):
    version, recs = resolve_tables(system, engine)
    if version is None:
        return None
    surfaces = []
    missing = []

    def run(op, fn):
        if op in recs:
            try:
                surfaces.extend(fn(recs[op]))
            except Exception as e:  # a broken table must not stop the others; it is reported
                missing.append(f"{op}: fit failed ({e})")
        else:
            missing.append(f"{op}: no table")

    run("gemm_perf.parquet", fit_gemm)
    run("context_attention_perf.parquet", fit_context_attention)
    run("generation_attention_perf.parquet", fit_generation_attention)
    run("context_mla_perf.parquet", fit_context_mla)
    run("generation_mla_perf.parquet", fit_generation_mla)
    run("moe_perf.parquet", fit_moe)
    if engine == "trtllm":
        run("wideep_moe_perf.parquet", fit_eplb)
    run("custom_allreduce_perf.parquet", fit_custom_allreduce)
    if engine == "sglang":
        n, l = recs.get("wideep_deepep_normal_perf.parquet"), recs.get("wideep_deepep_ll_perf.parquet")
        if n or l:
            surfaces.extend(fit_sglang_deepep(n, l, gpus_per_node(system)))
        else:
            missing.append("wideep_deepep_*_perf.parquet: no table")
    else:
        run("moe_a2a_perf.parquet", fit_moe_a2a)
    if engine == "trtllm" and "trtllm_alltoall_perf.parquet" in recs:
        run("trtllm_alltoall_perf.parquet", fit_trtllm_alltoall)
    return version, surfaces, missing


def main():
    ensure_venv()
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(REPO / "src" / "catalog" / "data" / "kernels"))
    ap.add_argument("--systems", default=",".join(SYSTEM_MAP))
    ap.add_argument("--engines", default=",".join(ENGINES))
    args = ap.parse_args()
    import importlib.metadata as md

    aic_version = md.version("aiconfigurator-core")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t_all = time.time()
    summary = []
    for system in args.systems.split(","):
        gpu = SYSTEM_MAP[system]
        # NCCL (nccl-tests) tables belong to the system, not to an engine: one file per GPU
        nv, npath = nccl_table(system)
        if npath is not None:
            nccl = fit_nccl(npath, nv)
            header = {
                "schema": 1,
                "gpu": gpu,
                "engine": "nccl",
                "nccl_version": nv,
                "aic_system": system,
                "aic_package": f"aiconfigurator-core=={aic_version}",
                "aic_version_slot": "misc.nccl_version of systems/<system>.yaml",
                "not_distilled": ["int8 rows (nccl_dtype = int8)"],
            }
            write_toml(out / f"{gpu}-nccl.toml", header, nccl)
            write_samples(samples_dir(out) / f"{gpu}-nccl.toml", f"{gpu}-nccl.toml", header, nccl, "scripts/kernels/distill.py")
            summary += [(gpu, "nccl", s) for s in nccl]
        else:
            print(f"{system}: no NCCL table for nccl {nv}", file=sys.stderr)
        for engine in args.engines.split(","):
            t1 = time.time()
            res = distill_one(system, engine)
            if res is None:
                print(f"{system} {engine}: AIConfigurator has no database", file=sys.stderr)
                continue
            version, surfaces, missing = res
            header = {
                "schema": 1,
                "gpu": gpu,
                "engine": engine,
                "engine_version": version,
                "aic_system": system,
                "aic_package": f"aiconfigurator-core=={aic_version}",
                "aic_version_slot": "current (systems/query_versions.yaml)",
                "not_distilled": missing,
            }
            path = out / f"{gpu}-{engine}.toml"
            write_toml(path, header, surfaces)
            write_samples(samples_dir(out) / path.name, path.name, header, surfaces, "scripts/kernels/distill.py")
            for s in surfaces:
                summary.append((gpu, engine, s))
            print(
                f"{system:9s} {engine:6s} {version:10s} {len(surfaces):3d} surfaces  {path.stat().st_size/1024:5.1f} KiB"
                f"  {time.time()-t1:5.1f}s",
                file=sys.stderr,
            )
    default_out = (REPO / "src" / "catalog" / "data" / "kernels").resolve()
    report = HERE / "FITS.md" if out.resolve() == default_out else out / "FITS.md"
    write_report(summary, report, aic_version)
    print(f"total {time.time()-t_all:.0f}s", file=sys.stderr)


def write_report(summary, path: Path, aic_version: str):
    """Markdown table of every surface's fit error (generated)."""
    import numpy as np

    lines = [
        "# Fit errors of every distilled surface (generated by distill.py; do not edit)",
        "",
        f"Source: aiconfigurator-core=={aic_version}. Error = |pred/meas - 1| over all rows of the surface's",
        "source table slice. `key` identifies the slice inside the (gpu, engine) file.",
        "",
        "## Per kind",
        "",
        "| kind | surfaces | rows | median of medians | worst median | median of p90 | worst p90 |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    kinds = {}
    for gpu, eng, s in summary:
        kinds.setdefault(s["kind"], []).append((gpu, eng, s))
    for kind, ss in kinds.items():
        med = [s["err_median"] for _, _, s in ss]
        p90 = [s["err_p90"] for _, _, s in ss]
        rows = sum(s["points"] for _, _, s in ss)
        lines.append(
            f"| {kind} | {len(ss)} | {rows} | {np.median(med):.3f} | {max(med):.3f} | {np.median(p90):.3f} | {max(p90):.3f} |"
        )
    lines += [
        "",
        "## Default surfaces only (most rows per dtype; what racksweep would use)",
        "",
        "| kind | surfaces | median of medians | p90 of medians | worst median | median of p90 | worst p90 |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for kind, ss in kinds.items():
        ds = [s for _, _, s in ss if s.get("default", True)]
        med = [s["err_median"] for s in ds]
        p90 = [s["err_p90"] for s in ds]
        lines.append(
            f"| {kind} | {len(ds)} | {np.median(med):.3f} | {np.percentile(med, 90):.3f} | {max(med):.3f} |"
            f" {np.median(p90):.3f} | {max(p90):.3f} |"
        )
    lines += ["", "## Every surface", "", "| gpu | engine | kind | key | rows | median | p90 | max |", "|---|---|---|---|---:|---:|---:|---:|"]
    skip = {"kind", "params", "samples", "range", "points", "err_median", "err_p90", "err_max", "source", "table_version",
            "act_bytes", "weight_bytes", "q_bytes", "kv_bytes", "matrices",
            "window_tokens", "window_ratio", "window_err_median", "window_err_p90"}
    keyed = [(gpu, eng, s, " ".join(f"{k}={v}" for k, v in s.items() if k not in skip)) for gpu, eng, s in summary]
    for gpu, eng, s, key in keyed:
        lines.append(
            f"| {gpu} | {eng} | {s['kind']} | {key} | {s['points']} | {s['err_median']:.3f} | {s['err_p90']:.3f} | {s['err_max']:.2f} |"
        )
    lines += [
        "",
        "## Sliding-window prefill ratios (SPEC.md 3.2a)",
        "",
        "A window layer's prefill time over a full layer's on the same prompts, knots of log2(prompt tokens);",
        "error = |knot interpolation / measured ratio - 1| over the paired rows.",
        "",
        "| gpu | engine | key | window | ratio at 1k / 4k / 16k prompts | median | p90 |",
        "|---|---|---|---:|---|---:|---:|",
    ]
    for gpu, eng, s, key in keyed:
        for i, w in enumerate(s.get("window_tokens", [])):
            r = s["window_ratio"][i * WINDOW_KNOTS:(i + 1) * WINDOW_KNOTS]
            lines.append(
                f"| {gpu} | {eng} | {key} | {w:.0f} | {r[10]:.3f} / {r[12]:.3f} / {r[14]:.3f} |"
                f" {s['window_err_median'][i]:.3f} | {s['window_err_p90'][i]:.3f} |"
            )
    # The AMD section is written by distill_amd.py (no AIConfigurator tables): keep it.
    if path.exists():
        old = path.read_text()
        if AMD_FITS_MARK in old:
            lines += ["", old[old.index(AMD_FITS_MARK):].rstrip("\n")]
    path.write_text("\n".join(lines) + "\n")


AMD_FITS_MARK = "<!-- AMD GPUs: generated by distill_amd.py; distill.py keeps this section -->"


if __name__ == "__main__":
    main()
