#!/usr/bin/env python3
"""Distil published AMD kernel measurements into racksweep kernel surfaces (MI300X, MI325X, MI355X).

Usage:
    python3 scripts/kernels/distill_amd.py [--out src/catalog/data/kernels]

NVIDIA AIConfigurator (distill.py's source) has no AMD GPU, so the AMD surfaces come from:

1. the tuned-kernel CSVs inside AMD's AITER wheel (PyPI `amd-aiter`, pinned in
   requirements-amd.txt, MIT licence): measured kernel times `us` (torch profiler, mean device
   time over rotated argument copies, i.e. cold caches: aiter/test_common.py `perftest`), one row
   per shape holding the fastest kernel that passed the accuracy check
   (aiter/utility/base_tuner.py `post_process`, topk = 1). Dense GEMMs (fp8 per-token, fp8
   block-scale, MXFP4) and fused MoE (bf16, fp8 per-token / per-tensor / block-scale);
2. published measurements cited row by row in the PUBLISHED tables below (ROCm blogs, the AITER
   MHA README, MORI's EP8 report, rccl-tests), for prefill attention, RCCL all-reduce and MoE
   dispatch/combine;
3. derivations for a GPU without a measurement of its own, from the closest measured GPU by
   cited ratios (AMD's max-achievable FLOPs, HBM bandwidth, xGMI link bandwidth); each derived
   surface says so in `derived`.

The formulas, the fit (soft-L1 least squares on log(pred/measured)) and the error statistics are
those of distill.py / SPEC.md sections 2-4: this script imports distill.py's fitting functions.
The script re-executes itself in a venv (~/.cache/racksweep-kernels-amd-venv, override with
RACKSWEEP_KERNELS_AMD_VENV) holding requirements-amd.txt. It only reads the wheel's CSV files
and never imports aiter (which needs PyTorch for ROCm).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import pinned_venv  # noqa: E402
REPO = HERE.parent.parent
VENV = Path(os.environ.get("RACKSWEEP_KERNELS_AMD_VENV", Path.home() / ".cache" / "racksweep-kernels-amd-venv"))
AITER_PIN = "0.1.7.post2.dev18"
PACKAGE = f"amd-aiter=={AITER_PIN}"
MIN_ROWS = 20  # smallest AITER slice fitted (distill.py uses 200; the AMD slices are 80-1000 rows)


def ensure_venv() -> None:
    """Re-exec inside the pinned venv unless amd-aiter==AITER_PIN and scipy are installed here."""
    pinned_venv.ensure(VENV, HERE / "requirements-amd.txt", {"amd-aiter": AITER_PIN}, __file__, ("scipy",))


# --------------------------------------------------------------------------------------------
# Ratios for derived surfaces (each with its citation)
# --------------------------------------------------------------------------------------------

MAF_BLOG = (
    "ROCm blog 'Measuring Max-Achievable FLOPs - Part 2' (ROCm/rocm-blogs "
    "blogs/software-tools-optimization/measuring-max-achievable-flops-part2/README.md @8e011952), Table 1"
)
# AMD-measured max-achievable FLOPs (hipBLASLt), TFLOP/s; same 304 CUs, so the ratio is the clock
# ratio (median clocks 1207 -> 1447 MHz bf16, 1230 -> 1464 MHz fp8).
MAF = {"mi300x": {"bf16": 708.0, "fp8": 1273.0}, "mi325x": {"bf16": 843.0, "fp8": 1519.0}}
HBM_SOURCE = "src/catalog/data/gpus.toml hbm_tbps (AMD data sheets): MI300X 5.3, MI325X 6.0 TB/s"
HBM_TBPS = {"mi300x": 5.3, "mi325x": 6.0, "mi355x": 8.0}
XGMI_SOURCE = (
    "per-link unidirectional xGMI: MI300X 64 GB/s (ROCm blog 'Understanding RCCL Bandwidth and xGMI "
    "Performance on AMD Instinct MI300X', ROCm/rocm-blogs blogs/software-tools-optimization/mi300x-rccl-xgmi/"
    "README.md @0e81c2ca); MI355X 76.8 GB/s (ROCm/mori docs/EP8.en.md @ac97b1d6: '7x 153.6 GB/s "
    "(bidirectional) = 76.8 GB/s/link unidirectional'); MI325X uses MI300X's links (see nccl check)"
)
XGMI_GBPS = {"mi300x": 64.0, "mi325x": 64.0, "mi355x": 76.8}

# --------------------------------------------------------------------------------------------
# Published measurements (transcribed; each table with its citation)
# --------------------------------------------------------------------------------------------

MHA_SOURCE = (
    "ROCm/aiter op_tests/cpp/mha/README.md @0403bcdfd0b507e0459012b82e00785a818f774a, 'More performance "
    "test results' table: aiter mha_fwd asm (fwd_v3) kernel, bf16, BSHD, batch mode, causal = 1, FWD TFLOPS"
)
# (batch, q_heads, kv_heads, seqlen_q = seqlen_kv, head_dim 128) -> FWD TFLOPS on MI300X, MI355X.
# Only the causal rows (the prefill case, SPEC 3.2). TFLOPS follow CK's benchmark convention,
# flop = 2 * b * h * area * (d_q + d_v) with area = s (s + 1) / 2 the unmasked causal area
# (ck_tile fmha mask_info::get_unmaskarea); converted back to time here. Consistency check:
# causal TFLOPS ~ non-causal TFLOPS at s = 16384 (541.6 vs 547.8 on MI300X), as expected when masked
# tiles are skipped and counted out.
MHA_CAUSAL = """
1 32 8 1024 130.62 233.12
1 32 8 2048 255.105 577.28
1 32 8 4096 467.805 949.325
1 32 8 8192 522.68 1247.73
1 32 8 10240 440.12 1200.645
4 32 8 1024 334.005 720.995
4 32 8 2048 419.435 809.835
4 32 8 4096 486.73 1130.115
4 32 8 8192 547.09 1318.92
4 32 8 10240 527.705 1342.995
8 32 8 1024 311.385 623.93
8 32 8 2048 412.99 894.45
8 32 8 4096 513.1 1166.875
8 32 8 8192 537.36 1316.805
8 32 8 10240 556.045 1334.865
1 64 8 1024 228.54 432.565
1 64 8 2048 392.425 936.435
1 64 8 4096 474.385 1046.085
1 64 8 8192 518.29 1300.105
1 64 8 10240 510.895 1338.005
4 64 8 1024 326.51 638.705
4 64 8 2048 425.735 899.845
4 64 8 4096 513.79 1174.92
4 64 8 8192 540.515 1319.225
4 64 8 10240 557.475 1337.965
8 64 8 1024 321.865 626.57
8 64 8 2048 452.03 963.165
8 64 8 4096 509.255 1190.295
8 64 8 8192 550.67 1311.955
8 64 8 10240 547.05 1313.695
1 64 4 1024 229.09 421.615
1 64 4 2048 407.525 949.635
1 64 4 4096 476.26 1058.9
1 64 4 8192 519.32 1318.15
1 64 4 10240 515.275 1348.155
4 64 4 1024 314.82 661.045
4 64 4 2048 426.77 896.095
4 64 4 4096 524.585 1182.87
4 64 4 8192 540.935 1324.275
4 64 4 10240 560.63 1346.46
8 64 4 1024 348.76 663.48
8 64 4 2048 461.89 983.355
8 64 4 4096 513.795 1196.675
8 64 4 8192 552.78 1318.92
8 64 4 10240 548.65 1313.945
1 64 8 16384 541.55 1392.485
1 64 4 16384 544.1 1398.14
"""

RCCL_SOURCE = (
    "ROCm blog 'Understanding RCCL Bandwidth and xGMI Performance on AMD Instinct MI300X' (ROCm/rocm-blogs "
    "blogs/software-tools-optimization/mi300x-rccl-xgmi/README.md @0e81c2ca45881844429731ad502be4a839ca96f0): "
    "rccl-tests all_reduce_perf -b 8 -e 16G -f 2 -g 1, 8 x MI300X, RCCL 2.22.3, ROCm 6.3, float sum, "
    "out-of-place time"
)
# bytes -> microseconds, 8 x MI300X. 'eager' is the default run (graph: 0), 'graph' the same run
# with -G 1 (kernel launches captured in a HIP graph).
RCCL_MI300X_ALLREDUCE_8 = {
    "eager": """
8 16.61
16 16.12
32 16.56
64 17.94
128 22.94
256 22.93
512 22.91
1024 13.11
2048 13.09
4096 13.27
8192 13.30
16384 13.54
32768 13.31
65536 13.77
131072 14.14
262144 16.87
524288 24.41
1048576 27.42
2097152 34.81
4194304 51.72
8388608 83.68
16777216 148.8
33554432 244.1
67108864 429.1
134217728 797.4
268435456 1537.1
536870912 3026.2
1073741824 5970.6
2147483648 11891
4294967296 23680
8589934592 47278
17179869184 94254
""",
    "graph": """
8 16.38
16 15.75
32 6.32
64 6.00
128 6.53
256 6.77
512 7.44
1024 7.47
2048 7.46
4096 7.61
8192 7.64
16384 8.71
32768 9.05
65536 9.14
131072 9.51
262144 10.26
524288 14.26
1048576 19.40
2097152 35.03
4194304 51.83
8388608 83.74
16777216 149.1
33554432 243.4
67108864 427.9
134217728 795.3
268435456 1534.4
536870912 3024.0
1073741824 5961.9
2147483648 11880
4294967296 23658
8589934592 47244
17179869184 94182
""",
}
RCCL_MI325X_SOURCE = (
    "hisohara/ai-scripts training/01_rccl-smoketest/README.md @0780bb3c957ba1dd4254b3147c2027a44304db34, "
    "'AAC11 MI325X', 1-node (8 GPUs) all_reduce_perf, RCCL from ROCm 6.4.1, float, out-of-place time"
)
RCCL_MI325X_ALLREDUCE_8 = {4294967296: 23719.0, 8589934592: 47217.0, 17179869184: 94222.0}

MORI_SOURCE = (
    "ROCm/mori docs/EP8.en.md @ac97b1d6de1b155dfd1982cde6fea7f813f709fb: MORI-EP IntraNode EP8 on "
    "8 x MI355X (gfx950, 256 CU), tools/bench_ep_performance.sh (DeepSeek-V3 shape: hidden 7168, "
    "top-8, 256 experts), best block/warp configuration per point, latency = min over rounds of "
    "avg per-rank duration"
)
MORI_HIDDEN, MORI_TOPK, MORI_EXPERTS = 7168, 8, 256
# tokens per rank -> latency us: dispatch fp8_e4m3, dispatch bf16, combine bf16 zero-copy,
# combine bf16 non-zero-copy
MORI_MI355X_EP8 = """
1 28.6 32.4 19.4 27.9
2 27.4 31.7 18.8 28.3
4 27.9 32.2 19.8 29.1
8 28.0 32.7 19.9 29.5
16 28.1 33.0 21.8 28.8
32 28.5 33.0 24.2 30.3
64 31.3 37.4 28.3 32.5
128 39.5 51.9 40.1 44.4
256 59.0 81.2 63.2 68.5
512 89.9 137.2 107.8 124.2
768 116.8 187.0 155.3 195.8
4096 469.0 863.0 741.1 865.5
8192 888.9 1681.7 1461.1 1716.0
16384 1722.5 3298.2 2895.5 3414.8
32768 3393.1 6543.7 5749.1 6832.3
65536 6681.5 12983.1 11462.6 13627.0
131072 13345.7 25971.6 22867.7 27281.2
262144 26566.9 51311.4 45713.9 54851.7
524288 52745.7 102501.6 91308.9 108780.4
"""
MORI_MI300X_SOURCE = (
    "ROCm/mori README.md @05bb5f4048f7417bc0d226a951fbb55e2287a7b3, 'Latency (128 tokens, 7168 hidden, top-8 "
    "experts, FP8 dispatch + BF16 combine)', EP8 on 8 x MI300X, 64 CUs"
)
MORI_MI300X_CHECK = {("dispatch", "fp8"): (128, 35.0), ("combine", "bf16"): (128, 47.0)}


def table(text: str):
    return [[float(v) for v in line.split()] for line in text.strip().splitlines()]


# --------------------------------------------------------------------------------------------
# AITER wheel
# --------------------------------------------------------------------------------------------

# AITER cu_num -> racksweep GPU. cu_num is the tuning GPU's compute-unit count: 304 = gfx942 with
# all CUs (MI300X or MI325X: the CSVs do not say which; taken as MI300X, AITER's main CDNA3 target,
# and MI325X is derived), 256 = gfx950 (MI355X or MI350X, same CU count, MI350X at lower clocks:
# taken as MI355X). cu_num 80 (gfx942 with 80 CUs, MI308X) has no racksweep GPU id: not used.
CU_GPU = {304: "mi300x", 256: "mi355x"}

# GEMM families: (racksweep dtype, AITER tuned-CSV base name, kernel family label). aiter merges
# configs/<name>.csv with model_configs/*<name>*.csv keeping the fastest row per key
# (aiter/jit/core.py get_config_file / update_config_files); the same is done here. Each family
# is its own surface (plain and pre-shuffled weights are different kernels).
GEMM_FAMILIES = [
    ("fp8", "a8w8_tuned_gemm", "ck a8w8 rowwise"),
    ("fp8", "a8w8_bpreshuffle_tuned_gemm", "ck a8w8 bpreshuffle"),
    ("fp8_block", "a8w8_blockscale_tuned_gemm", "ck a8w8 blockscale 1x128x128"),
    ("fp8_block", "a8w8_blockscale_bpreshuffle_tuned_gemm", "ck a8w8 blockscale bpreshuffle"),
    ("mxfp4", "a4w4_blockscale_tuned_gemm", "a4w4 per-1x32 MXFP4 (asm f4gemm / ck)"),
]
# bytes per element as read, (activation, weight), SPEC 3.1 conventions: fp8 per-token and block
# scales are negligible; a4w4 = MXFP4 activations and weights (e2m1 + one e8m0 scale per 32
# elements, aiter csrc/ck_gemm_a4w4_blockscale: mxfp4_to_f32 of x and w) = 0.53125 B.
GEMM_BYTES = {"fp8": (1.0, 1.0), "fp8_block": (1.0, 1.0), "mxfp4": (0.53125, 0.53125)}
GEMM_AITER_DTYPE = {"fp8": "a8w8 per-token (rowwise) fp8", "fp8_block": "a8w8 1x128 / 128x128 block-scale fp8",
                    "mxfp4": "a4w4 MXFP4 (per-1x32 e8m0 scales)"}

# tuned_fmoe.csv q_type -> (racksweep dtype, activation bytes, weight bytes, default)
MOE_TYPES = {
    "QuantType.No": ("bf16", 2.0, 2.0, True),
    "QuantType.per_Token": ("fp8", 1.0, 1.0, True),
    "QuantType.per_Tensor": ("fp8", 1.0, 1.0, False),
    "QuantType.per_1x128": ("fp8_block", 1.0, 1.0, True),
}


def wheel_file(rel: str) -> Path:
    import importlib.metadata as md

    return Path(md.distribution("amd-aiter").locate_file(rel))


def aiter_merged(name: str):
    """configs/<name>.csv plus model_configs/*<name>*.csv, fastest row per key (as aiter does)."""
    import pandas as pd

    base = wheel_file(f"aiter/configs/{name}.csv")
    files = [base] + sorted(p for p in base.parent.joinpath("model_configs").glob(f"*{name}*") if "untuned" not in p.name)
    frames = []
    for f in files:
        d = pd.read_csv(f)
        d["file"] = "aiter/configs/" + str(f.relative_to(base.parent))
        frames.append(d)
    df = pd.concat(frames, ignore_index=True)
    keys = [c for c in ("cu_num", "M", "N", "K", "q_dtype_w") if c in df]
    df = df[df["us"] > 0]
    return df.sort_values("us", kind="stable").drop_duplicates(keys).reset_index(drop=True)


def gemm_slices():
    """{(gpu, dtype, family label): DataFrame of the fastest row per (M, N, K)} from the AITER
    GEMM tables, one slice per kernel family (plain or pre-shuffled weights): the families differ
    by up to 2.5x on the same shape, so, as distill.py does per AIC kernel_source, each gets its
    own surface and the one with the most rows per (gpu, dtype) is the `default`."""
    out = {}
    for dtype, name, label in GEMM_FAMILIES:
        df = aiter_merged(name)
        for cu, gpu in CU_GPU.items():
            g = df[df.cu_num == cu].sort_values(["M", "N", "K"]).reset_index(drop=True)
            if len(g) >= MIN_ROWS:
                g = g.rename(columns={"M": "m", "N": "n", "K": "k"})
                g["latency_ms"] = g["us"].astype(float) * 1e-3
                out[(gpu, dtype, label)] = g
    return out


def moe_slices():
    """{(gpu, q_type): DataFrame} from tuned_fmoe.csv, fastest row per shape (act type and
    doweight_stage1 variants of one shape collapse to the fastest)."""
    import pandas as pd

    df = pd.read_csv(wheel_file("aiter/configs/tuned_fmoe.csv"))
    df = df[(df["us"] > 0) & (df["use_g1u1"] == 1) & (df["dtype"] == "torch.bfloat16")]
    shape = ["cu_num", "q_type", "q_dtype_a", "q_dtype_w", "token", "model_dim", "inter_dim", "expert", "topk"]
    df = df.sort_values("us", kind="stable").drop_duplicates(shape).reset_index(drop=True)
    out = {}
    for (cu, qt), g in df.groupby(["cu_num", "q_type"]):
        if cu not in CU_GPU or qt not in MOE_TYPES or len(g) < MIN_ROWS:
            continue
        g = g.sort_values(["model_dim", "inter_dim", "expert", "topk", "token"]).reset_index(drop=True)
        g = g.assign(
            num_tokens=g["token"], hidden_size=g["model_dim"], inter_size=g["inter_dim"], num_experts=g["expert"],
            moe_tp_size=1, moe_ep_size=1, latency_ms=g["us"].astype(float) * 1e-3,
        )
        out[(CU_GPU[cu], qt)] = g
    return out


# --------------------------------------------------------------------------------------------
# Surfaces
# --------------------------------------------------------------------------------------------

GEMM_IN = ["m", "n", "k"]
CTX_IN = ["batch_size", "isl", "num_heads", "num_key_value_heads", "head_dim"]
MOE_IN = ["num_tokens", "hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size", "moe_ep_size"]
A2A_IN = ["num_tokens", "topk", "hidden_size", "num_experts", "elements"]


def gemm_terms(g, a, w):
    m, n, k = (g[c].to_numpy(float) for c in GEMM_IN)
    return [("flops_per_s", 2.0 * m * n * k), ("bytes_per_s", m * k * a + n * k * w + 2.0 * m * n), ("k_per_s", k)]


def ctx_terms(g, qb=2.0, kb=2.0):
    b, s, h, kv, d = (g[c].to_numpy(float) for c in CTX_IN)
    return [
        ("flops_per_s", 2.0 * b * h * d * s * s),
        ("bytes_per_s", b * s * d * (2.0 * h * qb + 2.0 * kv * kb)),
        ("serial_per_s", s * d),
        ("rows_per_s", b * s * h),
    ]


def fit_gemm(gpu, dtype, label, g, default, D):
    a, w = GEMM_BYTES[dtype]
    xs = gemm_terms(g, a, w)
    t = g["latency_ms"].to_numpy() * 1e-3
    p = D.fit_pnorm(xs, t)
    pred = D.pnorm_eval(p, xs)
    files = sorted(set(g["file"]))
    return D.surface_record(
        "gemm",
        {"dtype": dtype, "aiter_dtype": GEMM_AITER_DTYPE[dtype], "kernel": "aiter " + label, "default": default},
        p, g, pred, GEMM_IN, f"{PACKAGE}: " + ", ".join(files), PACKAGE,
        {"act_bytes": a, "weight_bytes": w},
    )


def fit_moe(gpu, qt, g, D):
    dtype, a, w, default = MOE_TYPES[qt]
    xs, tpe = D.moe_terms(g, a, w, 3.0)
    t = g["latency_ms"].to_numpy() * 1e-3
    p = D.fit_pnorm(xs, t, ramp=tpe)
    pred = D.pnorm_eval(p, xs, tpe)
    qa = sorted(set(g["q_dtype_a"]))
    return D.surface_record(
        "moe",
        {"dtype": dtype, "aiter_dtype": f"{qt} {'/'.join(qa)}", "kernel": "aiter fused_moe g1u1 (ck/asm 2-stage or asm 1-stage, fastest per shape)",
         "default": default},
        p, g, pred, MOE_IN, f"{PACKAGE}: aiter/configs/tuned_fmoe.csv", PACKAGE,
        {"act_bytes": a, "weight_bytes": w, "matrices": 3.0,
         "distribution": "random (aiter tuner: randn router scores, top-k; uniform in expectation)"},
    )


def mha_frame(col: int):
    import pandas as pd

    rows = []
    for b, hq, hkv, s, *tf in table(MHA_CAUSAL):
        d = 128.0
        flop = 2.0 * b * hq * (s * (s + 1) / 2) * (d + d)  # CK convention: unmasked causal area
        rows.append({"batch_size": b, "isl": s, "num_heads": hq, "num_key_value_heads": hkv, "head_dim": d,
                     "tflops": tf[col], "latency_ms": flop / (tf[col] * 1e12) * 1e3})
    return pd.DataFrame(rows)


def fit_context_attention(gpu, D):
    g = mha_frame({"mi300x": 0, "mi355x": 1}[gpu])
    xs = ctx_terms(g)
    t = g["latency_ms"].to_numpy() * 1e-3
    p = D.fit_pnorm(xs, t)
    pred = D.pnorm_eval(p, xs)
    return D.surface_record(
        "context_attention",
        {"attn_dtype": "bf16", "kv_dtype": "bf16", "kernel": "aiter mha_fwd asm fwd_v3 (CK fmha), causal", "default": True},
        p, g, pred, CTX_IN, MHA_SOURCE, "aiter@0403bcdf", {"q_bytes": 2.0, "kv_bytes": 2.0},
    )


def monotone_head(x, t, slack=1.2):
    """Index of the first row from which on no row is slower than `slack` x the fastest larger
    message: leading rows that get faster with size (protocol switches) are not fitted."""
    import numpy as np

    suffix_min = np.minimum.accumulate(t[::-1])[::-1]
    for i in range(len(t)):
        if t[i] <= slack * suffix_min[i]:
            return i
    return len(t)


def fit_rccl_mi300x(D):
    import numpy as np
    import pandas as pd

    out = []
    for mode, op in (("eager", "all_reduce"), ("graph", "all_reduce_graph")):
        rows = table(RCCL_MI300X_ALLREDUCE_8[mode])
        x = np.array([r[0] for r in rows])
        t = np.array([r[1] for r in rows]) * 1e-6
        i0 = monotone_head(x, t)
        g = pd.DataFrame({"bytes": x[i0:], "latency_ms": t[i0:] * 1e3})
        xv, tv = g["bytes"].to_numpy(float), g["latency_ms"].to_numpy() * 1e-3
        p = D.fit_two_line(xv, tv)
        pred = D.two_line_eval(p, xv)
        note = (f"rccl-tests default launch (graph: 0)" if mode == "eager" else
                "rccl-tests -G 1: launches captured in a HIP graph (as decode under graphs)")
        rec = D.surface_record(
            "nccl", {"op_name": op, "num_gpus": 8, "dtype": "fp32"}, p, g, pred, ["bytes"], RCCL_SOURCE, "rocm-blogs@0e81c2ca",
            {"launch": note, "excluded": f"{i0} smallest sizes ({int(x[0])}-{int(x[i0 - 1])} B: slower than larger ones, a protocol switch)" if i0 else "none"},
        )
        out.append(rec)
    return out


def fit_mori_mi355x(D):
    import numpy as np
    import pandas as pd

    rows = table(MORI_MI355X_EP8)
    out = []
    for col, phase, dt, backend in ((1, "dispatch", "fp8", "mori_ep_intranode"), (2, "dispatch", "bf16", "mori_ep_intranode"),
                                    (3, "combine", "bf16", "mori_ep_intranode"), (4, "combine", "bf16", "mori_ep_intranode_nonzc")):
        g = pd.DataFrame({"num_tokens": [r[0] for r in rows], "latency_ms": [r[col] * 1e-3 for r in rows]})
        g = g.assign(topk=MORI_TOPK, hidden_size=MORI_HIDDEN, num_experts=MORI_EXPERTS)
        g = g.assign(elements=g.num_tokens * g.topk * g.hidden_size)
        xv, tv = g["elements"].to_numpy(float), g["latency_ms"].to_numpy() * 1e-3
        p = D.fit_two_line(xv, tv)
        pred = D.two_line_eval(p, xv)
        out.append(D.surface_record(
            "moe_a2a", {"comm_backend": backend, "phase": phase, "comm_dtype": dt, "ep_size": 8, "node_num": 1},
            p, g, pred, A2A_IN, MORI_SOURCE, "mori@ac97b1d6",
            {"combine": "zero-copy (MORI default)" if backend == "mori_ep_intranode" and phase == "combine" else
             ("non-zero-copy" if backend.endswith("nonzc") else "n/a")},
        ))
    return out


# --------------------------------------------------------------------------------------------
# Derivation: a surface of one GPU from another's by cited ratios
# --------------------------------------------------------------------------------------------

COMPUTE_RATES = ("flops_per_s", "k_per_s", "serial_per_s", "rows_per_s", "kvseq_per_s", "token_per_s",
                 "alltoken_per_s", "expert_per_s")


def derive(rec, frame, evaluate, scale: dict, text: str):
    """A copy of `rec` (fitted on `frame`) with parameters scaled by `scale` ({param: factor}).

    Errors and samples are against the source rows scaled by this derivation: row by row the
    measured time times (derived surface / source surface) at that row; the source's own
    measurement is kept in each sample as `source_measured_ms`. The error statistics therefore
    equal the source fit's: a derivation adds no information, only the stated ratios."""
    import copy

    params = {k: v * scale.get(k, 1.0) for k, v in rec["params"].items()}
    src_pred = evaluate(rec["params"], frame)
    new_pred = evaluate(params, frame)
    g = frame.copy()
    g["source_measured_ms"] = frame["latency_ms"]
    g["latency_ms"] = frame["latency_ms"] * new_pred / src_pred
    out = copy.deepcopy(rec)
    out["params"] = params
    inputs = list(rec["range"])
    import distill as D

    r = D.surface_record(rec["kind"], {}, params, g, new_pred, inputs + ["source_measured_ms"], rec["source"], rec["table_version"])
    out["samples"] = r["samples"]
    out["err_median"], out["err_p90"], out["err_max"] = r["err_median"], r["err_p90"], r["err_max"]
    out["derived"] = text
    return out


def main():
    ensure_venv()
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(REPO / "src" / "catalog" / "data" / "kernels"))
    args = ap.parse_args()
    sys.path.insert(0, str(HERE))
    import distill as D
    import numpy as np

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    def ev_pnorm(kind, rec):
        if kind == "gemm":
            return lambda p, f: D.pnorm_eval(p, gemm_terms(f, rec["act_bytes"], rec["weight_bytes"]))
        if kind == "context_attention":
            return lambda p, f: D.pnorm_eval(p, ctx_terms(f, rec["q_bytes"], rec["kv_bytes"]))
        raise KeyError(kind)

    def ev_line(col):
        return lambda p, f: D.two_line_eval(p, f[col].to_numpy(float))

    surf = {g: [] for g in ("mi300x", "mi325x", "mi355x")}  # engine kernels (vllm = sglang)
    coll = {g: [] for g in surf}  # RCCL collectives (the -nccl file)
    frames = {}

    # --- measured: AITER wheel -------------------------------------------------------------
    slices = gemm_slices()
    most = {}
    for (gpu, dtype, label), g in slices.items():
        if len(g) > most.get((gpu, dtype), ("", 0))[1]:
            most[(gpu, dtype)] = (label, len(g))
    for (gpu, dtype, label), g in slices.items():
        rec = fit_gemm(gpu, dtype, label, g, most[(gpu, dtype)][0] == label, D)
        surf[gpu].append(rec)
        frames[id(rec)] = g
    # --- measured: prefill attention (aiter MHA README) ------------------------------------
    for gpu in ("mi300x", "mi355x"):
        rec = fit_context_attention(gpu, D)
        surf[gpu].append(rec)
        frames[id(rec)] = mha_frame({"mi300x": 0, "mi355x": 1}[gpu])
    for (gpu, qt), g in moe_slices().items():
        surf[gpu].append(fit_moe(gpu, qt, g, D))
    # --- measured: RCCL on MI300X, MORI on MI355X ------------------------------------------
    rccl = fit_rccl_mi300x(D)
    coll["mi300x"] += rccl
    mori = fit_mori_mi355x(D)
    surf["mi355x"] += mori

    # --- derived ----------------------------------------------------------------------------
    f_bf16 = MAF["mi325x"]["bf16"] / MAF["mi300x"]["bf16"]
    f_fp8 = MAF["mi325x"]["fp8"] / MAF["mi300x"]["fp8"]
    b_hbm = HBM_TBPS["mi325x"] / HBM_TBPS["mi300x"]
    for rec in surf["mi300x"]:
        kind = rec["kind"]
        if kind not in ("gemm", "context_attention"):
            continue
        f = f_bf16 if kind == "context_attention" or rec.get("dtype") == "bf16" else f_fp8
        which = "bf16" if f == f_bf16 else "fp8"
        scale = {k: f for k in COMPUTE_RATES}
        scale["bytes_per_s"] = b_hbm
        text = (
            f"MI325X from the MI300X surface (AITER cu_num 304 rows / published MI300X data): compute-side rates "
            f"(FLOP/s and the per-CU serial rates) x {f:.4f} = MI325X/MI300X max-achievable {which.upper()} "
            f"{MAF['mi325x'][which]:.0f}/{MAF['mi300x'][which]:.0f} TFLOP/s ({MAF_BLOG}; same 304 CUs, so this is the "
            f"clock ratio); bytes_per_s x {b_hbm:.4f} = HBM {HBM_TBPS['mi325x']}/{HBM_TBPS['mi300x']} TB/s ({HBM_SOURCE}); "
            f"t0 and p unchanged. Errors: the MI300X fit's, against the MI300X rows scaled by this derivation."
        )
        surf["mi325x"].append(derive(rec, frames[id(rec)], ev_pnorm(kind, rec), scale, text))

    # RCCL: MI325X = MI300X (same xGMI), checked on three large MI325X rows; MI355X by link ratio
    import pandas as pd

    for rec in rccl:
        rows = table(RCCL_MI300X_ALLREDUCE_8["eager" if rec["op_name"] == "all_reduce" else "graph"])
        x = np.array([r[0] for r in rows])
        t = np.array([r[1] for r in rows])
        i0 = monotone_head(x, t * 1e-6)
        frame = pd.DataFrame({"bytes": x[i0:], "latency_ms": t[i0:] * 1e-3})
        check = ""
        if rec["op_name"] == "all_reduce":
            errs = [abs(D.two_line_eval(rec["params"], np.array([float(b)]))[0] * 1e6 / us - 1) for b, us in RCCL_MI325X_ALLREDUCE_8.items()]
            check = (f"check against MI325X all_reduce 8 GPUs at 4, 8, 16 GiB ({RCCL_MI325X_SOURCE}): "
                     f"|pred/meas - 1| = {', '.join(f'{e:.3f}' for e in errs)}")
        text = ("MI325X = the MI300X surface unchanged (ratio 1): both have 7 xGMI links of 64 GB/s per GPU "
                f"({XGMI_SOURCE}). Errors: the MI300X fit's, against the MI300X rows. " + check)
        d = derive(rec, frame, ev_line("bytes"), {}, text.strip())
        coll["mi325x"].append(d)
        r = XGMI_GBPS["mi355x"] / XGMI_GBPS["mi300x"]
        text = (f"MI355X from the MI300X surface (no published intra-node MI355X rccl-tests found): beta1, beta2 x {r:.4f} "
                f"= xGMI per-link {XGMI_GBPS['mi355x']}/{XGMI_GBPS['mi300x']} GB/s ({XGMI_SOURCE}); alpha1, alpha2 "
                "unchanged (latency assumed the same). Errors: the MI300X fit's, against the MI300X rows scaled by this derivation.")
        coll["mi355x"].append(derive(rec, frame, ev_line("bytes"), {"beta1": r, "beta2": r}, text))

    # MORI: MI300X and MI325X from MI355X by link ratio, checked against MORI's MI300X README points
    rows = table(MORI_MI355X_EP8)
    for rec in mori:
        col = {("mori_ep_intranode", "dispatch", "fp8"): 1, ("mori_ep_intranode", "dispatch", "bf16"): 2,
               ("mori_ep_intranode", "combine", "bf16"): 3, ("mori_ep_intranode_nonzc", "combine", "bf16"): 4}[
            (rec["comm_backend"], rec["phase"], rec["comm_dtype"])]
        frame = pd.DataFrame({"num_tokens": [r[0] for r in rows], "latency_ms": [r[col] * 1e-3 for r in rows]})
        frame = frame.assign(topk=MORI_TOPK, hidden_size=MORI_HIDDEN, num_experts=MORI_EXPERTS)
        frame = frame.assign(elements=frame.num_tokens * frame.topk * frame.hidden_size)
        for gpu in ("mi300x", "mi325x"):
            r = XGMI_GBPS[gpu] / XGMI_GBPS["mi355x"]
            check = ""
            key = (rec["phase"], rec["comm_dtype"])
            if key in MORI_MI300X_CHECK and rec["comm_backend"] == "mori_ep_intranode":
                tok, us = MORI_MI300X_CHECK[key]
                params = {k: v * (r if k.startswith("beta") else 1.0) for k, v in rec["params"].items()}
                pr = D.two_line_eval(params, np.array([tok * MORI_TOPK * MORI_HIDDEN], dtype=float))[0] * 1e6
                check = (f" Check against MI300X EP8 {rec['phase']} at {tok} tokens ({MORI_MI300X_SOURCE}): "
                         f"predicted {pr:.1f} us vs measured {us:.0f} us ({pr / us - 1:+.2f}; other MORI version and CU budget).")
            text = (f"{gpu.upper()} from the MI355X MORI surface (no MI300X/MI325X sweep published): beta1, beta2 x {r:.4f} = xGMI "
                    f"per-link {XGMI_GBPS[gpu]}/{XGMI_GBPS['mi355x']} GB/s ({XGMI_SOURCE}); alpha1, alpha2 unchanged. Errors: the "
                    f"MI355X fit's, against the MI355X rows scaled by this derivation.{check}")
            surf[gpu].append(derive(rec, frame, ev_line("elements"), {"beta1": r, "beta2": r}, text))

    write_all(out, surf, coll, D)


# --------------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------------

GPU_MEASURED_ON = {
    "mi300x": "AITER rows with cu_num = 304 (gfx942, all 304 CUs: MI300X or MI325X, not distinguished in the CSVs; "
              "taken as MI300X); published MI300X measurements as cited per surface",
    "mi325x": "nothing measured on MI325X is fitted: every surface is derived (see each surface's `derived`)",
    "mi355x": "AITER rows with cu_num = 256 (gfx950, 256 CUs: MI355X or MI350X, not distinguished in the CSVs; "
              "taken as MI355X); published MI355X measurements as cited per surface",
}
ORDER = ["gemm", "context_attention", "generation_attention", "context_mla", "generation_mla", "moe",
         "custom_allreduce", "moe_a2a", "nccl"]


def not_distilled(gpu: str, kinds: set, dtypes: set, moe_dtypes: set) -> list:
    out = []
    for dt in ("bf16", "fp8", "fp8_block", "mxfp4"):
        if dt not in dtypes and not (gpu != "mi355x" and dt == "mxfp4"):
            out.append(f"gemm {dt}: no AITER tuned rows for this GPU in {PACKAGE}" +
                       (" (bf16_tuned_gemm.csv holds 8 rows, all cu_num 80)" if dt == "bf16" else "") +
                       (" (bf16_tuned_batched_gemm.csv / a8w8_tuned_batched_gemm.csv hold 26 / 25 cu_num-304 rows "
                        "of batched B = 16 GEMMs at two (N, K) shapes, MLA's batched matmuls: not a dense-GEMM sweep)"
                        if gpu != "mi355x" and dt in ("bf16", "fp8") else ""))
    if gpu != "mi355x":
        out.append("gemm mxfp4: no FP4 hardware on CDNA3")
    for dt in ("bf16", "fp8", "fp8_block", "mxfp4"):
        if dt not in moe_dtypes:
            out.append(f"moe {dt}: no tuned_fmoe.csv rows for this GPU" +
                       (" (tuned_fmoe.csv has cu_num 80 and 256 only)" if gpu != "mi355x" else "") +
                       (" (no fp4 rows in tuned_fmoe.csv)" if dt == "mxfp4" else ""))
    out.append("context_attention fp8 KV / fp8 FMHA: no published data")
    out.append("generation_attention: no published decode-attention (paged attention) measurements with enough points found")
    out.append("context_mla, generation_mla: no published MLA kernel sweep found")
    out.append("custom_allreduce: vLLM/SGLang custom all-reduce and QuickReduce are published only as speedup plots "
               "(ROCm blogs 'QuickReduce' 1 and 2): no numbers; use the -nccl file's RCCL all_reduce (an upper bound)")
    return out


def write_all(out: Path, surf: dict, coll: dict, D):
    summary = []
    for gpu in surf:
        ss = sorted(surf[gpu], key=lambda s: ORDER.index(s["kind"]))
        kinds = {s["kind"] for s in ss}
        nd = not_distilled(gpu, kinds, {s["dtype"] for s in ss if s["kind"] == "gemm"},
                           {s["dtype"] for s in ss if s["kind"] == "moe"})
        for engine in ("vllm", "sglang"):
            header = base_header(gpu, engine)
            header["engine_note"] = (
                f"{'vLLM' if engine == 'vllm' else 'SGLang'} on ROCm runs AITER's GEMM, MoE and attention kernels when AITER "
                "is enabled (vLLM VLLM_ROCM_USE_AITER=1; SGLang's aiter attention backend on MI300/MI355), and MORI for "
                "expert-parallel dispatch/combine: the measured kernels are the same for both engines, so the "
                "vllm and sglang files hold the same surfaces (no source says they differ)"
            )
            header["not_distilled"] = nd
            write_toml(out / f"{gpu}-{engine}.toml", header, ss, D)
        summary += [(gpu, "vllm/sglang", s) for s in ss]
        header = base_header(gpu, "nccl")
        header["library"] = "rccl"
        header["not_distilled"] = [
            "all_gather, reduce_scatter, alltoall: no published intra-node rccl-tests sweep found",
            "all_reduce on 2 and 4 GPUs: no published sweep found (only 8 GPUs)",
        ]
        write_toml(out / f"{gpu}-nccl.toml", header, coll[gpu], D)
        summary += [(gpu, "nccl", s) for s in coll[gpu]]
    write_report(summary, HERE / "FITS.md" if out.resolve() == (REPO / "src/catalog/data/kernels").resolve()
                 else out / "FITS.md", D)


def base_header(gpu: str, engine: str) -> dict:
    h = {
        "schema": 1,
        "gpu": gpu,
        "engine": engine,
        "aic_system": "none (AIConfigurator has no AMD GPU; see source_package and each surface's source)",
        "aic_package": "none (see source_package)",
        "aic_version_slot": "none (see source_package)",
        "source_package": f"{PACKAGE} (PyPI wheel, MIT): aiter/configs tuned-kernel CSVs" if engine != "nccl"
        else "none: published rccl-tests results (see each surface's source)",
        "measured_on": GPU_MEASURED_ON[gpu],
        "generator": "scripts/kernels/distill_amd.py",
    }
    return h


HEADER_NCCL = "# RCCL collectives (AMD's NCCL port; key `nccl` and engine = \"nccl\" kept for the loader)."


def write_toml(path: Path, header: dict, surfaces: list, D):
    lines = [
        "# Kernel surfaces of an AMD GPU from published AMD measurements: AITER's tuned-kernel tables (PyPI",
        f"# {PACKAGE}, MIT) and cited ROCm blog / repository benchmark tables; surfaces with `derived` are",
        "# scaled from another GPU's by the cited ratios. Not from NVIDIA AIConfigurator (which has no AMD GPU).",
    ]
    if header["engine"] == "nccl":
        lines.append(HEADER_NCCL)
    lines += [
        "# Generated by scripts/kernels/distill_amd.py; formulas in scripts/kernels/SPEC.md (section 8: AMD). Do not edit.",
        D.UNITS_COMMENT,
    ]
    path.write_text(D.surface_file(lines, header, surfaces))
    D.write_samples(D.samples_dir(path.parent) / path.name, path.name, header, surfaces, "scripts/kernels/distill_amd.py")


def write_report(summary, path: Path, D):
    """The AMD section of FITS.md: everything from D.AMD_FITS_MARK on is replaced (distill.py
    writes the part above it and keeps this one)."""
    import numpy as np

    lines = [
        D.AMD_FITS_MARK,
        "",
        "## AMD GPUs (distill_amd.py)",
        "",
        f"Sources: {PACKAGE} tuned-kernel CSVs and the published tables cited in distill_amd.py.",
        "Error = |pred/meas - 1| over all rows of the surface's source slice. Derived surfaces (MI325X everything,",
        "MI355X RCCL, MI300X/MI325X MORI) repeat the error of the surface they are scaled from (against its rows",
        "scaled by the derivation): `derived` marks them. vLLM and SGLang files hold the same surfaces.",
        "",
        "### Per GPU and kind",
        "",
        "Statistics over the `default` surfaces (the kernel family with most rows per dtype; collectives: all),",
        "as in the NVIDIA summary; non-default kernels are in the list below.",
        "",
        "| gpu | kind | surfaces (default) | measured / derived | median of medians | worst median | median of p90 | worst p90 |",
        "|---|---|---:|---|---:|---:|---:|---:|",
    ]
    groups = {}
    for gpu, eng, s in summary:
        groups.setdefault((gpu, s["kind"]), []).append(s)
    for (gpu, kind), every in groups.items():
        ss = [s for s in every if s.get("default", True)]
        med = [s["err_median"] for s in ss]
        p90 = [s["err_p90"] for s in ss]
        nd = sum(1 for s in ss if "derived" in s)
        md = f"{len(ss) - nd} / {nd}"
        lines.append(f"| {gpu} | {kind} | {len(every)} ({len(ss)}) | {md} | {np.median(med):.3f} | {max(med):.3f} | {np.median(p90):.3f} | {max(p90):.3f} |")
    lines += ["", "### Every AMD surface", "", "| gpu | file | kind | key | rows | median | p90 | max | derived |",
              "|---|---|---|---|---:|---:|---:|---:|---|"]
    keep = ("dtype", "kernel", "attn_dtype", "kv_dtype", "op_name", "num_gpus", "comm_backend", "phase", "comm_dtype", "default")
    for gpu, eng, s in summary:
        key = " ".join(f"{k}={s[k]}" for k in keep if k in s)
        lines.append(f"| {gpu} | {eng} | {s['kind']} | {key} | {s['points']} | {s['err_median']:.3f} | {s['err_p90']:.3f} | "
                     f"{s['err_max']:.2f} | {'yes' if 'derived' in s else ''} |")
    head = path.read_text() if path.exists() else ""
    if D.AMD_FITS_MARK in head:
        head = head[: head.index(D.AMD_FITS_MARK)]
    head = head.rstrip("\n") + "\n\n" if head.strip() else ""
    path.write_text(head + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
