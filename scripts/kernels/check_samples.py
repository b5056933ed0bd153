#!/usr/bin/env python3
"""Re-evaluate every sample of every kernel-surface TOML from SPEC.md's formulas alone.

Independent of distill.py (standard library only, Python >= 3.11): it reads the parameters as
written in src/catalog/data/kernels/*.toml and recomputes each sample's `predicted_ms` from
scripts/kernels/samples/<same name>.toml (the n-th [[kind]] there belongs to the n-th [[kind]] of
the surface file and repeats the keys naming it). This is the reference a Rust implementation
should match. Exits 1 if any sample differs by more than --tol (relative), or if a surface has
no samples.
"""

import argparse
import glob
import math
import sys
import tomllib
from pathlib import Path

MLA_DQK, MLA_DV, MLA_R, MLA_DR = 192.0, 128.0, 512.0, 64.0


def pnorm(s, terms, ramp=None):
    """t = t0 + (sum (x_i/r_i)^p)^(1/p); with u_half, x_0 *= 1 + u_half/ramp."""
    p = s["p"]
    acc = 0.0
    for i, (name, x) in enumerate(terms):
        if i == 0 and "u_half" in s:
            x *= 1.0 + s["u_half"] / ramp
        acc += (x / s[name]) ** p
    return s["t0_s"] + acc ** (1.0 / p)


def two_line(s, x):
    return min(s["alpha1_s"] + x / s["beta1"], s["alpha2_s"] + x / s["beta2"])


def gemm(s, q):
    m, n, k = q["m"], q["n"], q["k"]
    a, w = s["act_bytes"], s["weight_bytes"]
    t = pnorm(s, [("flops_per_s", 2 * m * n * k), ("bytes_per_s", m * k * a + n * k * w + 2 * m * n), ("k_per_s", k)])
    return t * shape_factor(s.get("shape_factor"), m, n * k)


def knots_at(knots, x, y, nx, ny):
    """Bilinear between knots at integers 0..nx-1 by 0..ny-1, row-major in x; clamped."""
    if not knots:
        return 1.0
    x = min(max(x, 0.0), nx - 1.0)
    y = min(max(y, 0.0), ny - 1.0)
    i, j = min(int(x), nx - 2), min(int(y), ny - 2)
    u, v = x - i, y - j
    f = lambda a, b: knots[a * ny + b]
    return (f(i, j) * (1 - u) * (1 - v) + f(i + 1, j) * u * (1 - v)
            + f(i, j + 1) * (1 - u) * v + f(i + 1, j + 1) * u * v)


def shape_factor(knots, m, size, rows=16, sizes=7):
    """GEMM: knots in (log2 m, (log2 size - 20) / 2)."""
    return knots_at(knots, math.log2(max(m, 1.0)), (math.log2(max(size, 1.0)) - 20.0) / 2.0, rows, sizes)


def context_attention(s, q):
    """The MMAs and the softmax exponentials overlap under their own norm `q`, entering the
    p-norm as one term (SPEC.md 3.2); surfaces without `scores_per_s` have the MMAs alone."""
    b, sl, h, kv, d = q["batch_size"], q["isl"], q["num_heads"], q["num_key_value_heads"], q["head_dim"]
    mma = 2 * b * h * d * sl * sl / s["flops_per_s"]
    if "scores_per_s" in s:
        softmax = b * h * sl * sl / 2 / s["scores_per_s"]
        mma = (mma ** s["q"] + softmax ** s["q"]) ** (1 / s["q"])
    return pnorm({**s, "overlapped": 1.0}, [
        ("overlapped", mma),
        ("bytes_per_s", b * sl * d * (2 * h * s["q_bytes"] + 2 * kv * s["kv_bytes"])),
        ("serial_per_s", sl * d),
        ("rows_per_s", b * sl * h),
    ])


def generation_attention(s, q):
    b, c, h, kv, d = q["batch_size"], q["context"], q["num_heads"], q["num_key_value_heads"], q["head_dim"]
    t = pnorm(s, [
        ("bytes_per_s", b * c * kv * d * 2 * s["kv_bytes"] + 4 * b * h * d),
        ("flops_per_s", 4 * b * h * d * c),
        ("kvseq_per_s", b * kv),
    ], ramp=b * kv)
    # knots in (log2(h / kv), log2(b c) / 2), 6 x 15 (SPEC.md 3.3)
    return t * knots_at(s.get("shape_factor"), math.log2(max(h / kv, 1.0)), math.log2(max(b * c, 1.0)) / 2.0, 6, 15)


def context_mla(s, q):
    b, sl, h = q["batch_size"], q["isl"], q["num_heads"]
    return pnorm(s, [
        ("flops_per_s", b * h * sl * sl * (MLA_DQK + MLA_DV)),
        ("bytes_per_s", b * sl * h * (2 * MLA_DQK + 2 * MLA_DV) * 2),
        ("serial_per_s", sl),
        ("rows_per_s", b * sl * h),
    ])


def generation_mla(s, q):
    b, c, h = q["batch_size"], q["context"], q["num_heads"]
    return pnorm(s, [
        ("bytes_per_s", b * c * (MLA_R + MLA_DR) * s["kv_bytes"]),
        ("flops_per_s", 2 * b * h * c * (2 * MLA_R + MLA_DR)),
        ("serial_per_s", c),
    ])


def moe(s, q):
    T, H, I, k, E, tp, ep = (q[c] for c in ("num_tokens", "hidden_size", "inter_size", "topk", "num_experts",
                                            "moe_tp_size", "moe_ep_size"))
    M, a, w = s["matrices"], s["act_bytes"], s["weight_bytes"]
    i_loc = I / tp
    touched = (E / ep) * (1 - (1 - k / E) ** T)
    return pnorm(s, [
        ("flops_per_s", 2 * (T * k / ep) * M * H * i_loc),
        ("bytes_per_s", touched * M * H * i_loc * w + 2 * (T * k / ep) * H * a),
        ("token_per_s", (T * k / ep) * H),
        ("alltoken_per_s", T * H),
        ("expert_per_s", touched),
    ], ramp=T * k / E)


def eplb(s, q):
    """The skewed time times the balance factor; knots in (log2 ep - 1, log2(T k / E) + 5), 8 x 15
    (SPEC.md 3.6a)."""
    T, k, E, ep = (q[c] for c in ("num_tokens", "topk", "num_experts", "moe_ep_size"))
    x, y = math.log2(max(ep, 1.0)) - 1.0, math.log2(max(T * k / E, 1e-9)) + 5.0
    return q["skewed_ms"] * 1e-3 * knots_at(s["balance_factor"], x, y, 8, 15)


def bytes_two_line(s, q):
    return two_line(s, q["bytes"])


def elements_two_line(s, q):
    return two_line(s, q["num_tokens"] * q["topk"] * q["hidden_size"])


EVAL = {
    "gemm": gemm,
    "context_attention": context_attention,
    "generation_attention": generation_attention,
    "context_mla": context_mla,
    "generation_mla": generation_mla,
    "moe": moe,
    "eplb": eplb,
    "custom_allreduce": bytes_two_line,
    "nccl": bytes_two_line,
    "moe_a2a": elements_two_line,
}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--dir", default=str(Path(__file__).resolve().parents[2] / "src/catalog/data/kernels"))
    ap.add_argument("--samples", default=str(Path(__file__).resolve().parent / "samples"))
    ap.add_argument("--tol", type=float, default=1e-4)
    args = ap.parse_args()
    checked = worst = 0.0
    bad = 0
    for f in sorted(glob.glob(f"{args.dir}/*.toml")):
        doc = tomllib.load(open(f, "rb"))
        samples = tomllib.load(open(Path(args.samples) / Path(f).name, "rb"))
        for kind, fn in EVAL.items():
            entries = samples.get(kind, [])
            if len(entries) != len(doc.get(kind, [])):
                bad += 1
                print(f"{Path(f).name} {kind}: {len(doc.get(kind, []))} surfaces, {len(entries)} sample entries")
                continue
            for s, e in zip(doc.get(kind, []), entries):
                named = {k: v for k, v in e.items() if k != "samples"}
                if any(s.get(k) != v for k, v in named.items()) or not e["samples"]:
                    bad += 1
                    print(f"{Path(f).name} {kind}: sample entry {named} does not match its surface or is empty")
                    continue
                for q in e["samples"]:
                    t_ms = fn(s, q) * 1e3
                    rel = abs(t_ms / q["predicted_ms"] - 1)
                    worst = max(worst, rel)
                    checked += 1
                    if not math.isfinite(rel) or rel > args.tol:
                        bad += 1
                        print(f"{Path(f).name} {kind} {q}: {t_ms} vs {q['predicted_ms']}")
    print(f"{int(checked)} samples, worst relative difference {worst:.2e}, {bad} over {args.tol}")
    sys.exit(1 if bad or not checked else 0)


if __name__ == "__main__":
    main()
