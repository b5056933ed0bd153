//! Kernel latency surfaces: measured kernel times of one GPU under one serving engine, distilled
//! into a few parameters per kernel and embedded from `data/kernels/`: NVIDIA GPUs by
//! `scripts/kernels/distill.py` from NVIDIA AIConfigurator's measured tables (aiconfigurator-core
//! 0.12.0, Apache-2.0); AMD GPUs (vLLM, SGLang and RCCL only) by `scripts/kernels/distill_amd.py`
//! from AMD AITER's tuned-kernel tables and cited published benchmarks (SPEC.md section 8).
//! Owns the surfaces' data, their lookup by GPU, engine and key, and their evaluation (the
//! formulas of `scripts/kernels/SPEC.md`, sections 2-3); does not know which kernels a model
//! step runs (that is `perf::kernels`).
//!
//! Two forms, both monotone in every input and a few flops to evaluate:
//! - p-norm roofline: `t = t0 + (sum_i (x_i / r_i)^p)^(1/p)`, `x_i` work quantities (FLOPs,
//!   bytes, counts), `r_i` fitted rates; `p = 1` adds the terms (no overlap), large `p` tends to
//!   the plain roofline's maximum. An efficiency ramp `u / (u + u_half)` may scale the first
//!   term's rate.
//! - two-line alpha-beta: `t = min(alpha1 + x / beta1, alpha2 + x / beta2)` (small-message and
//!   bandwidth regimes of a collective).

use std::sync::OnceLock;

use serde::Deserialize;

use crate::vocab::ServingEngine;

/// Quality of a surface's fit against its own source table, `|pred / meas - 1|` over all rows.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Fit {
    pub points: u64,
    pub err_median: f64,
    pub err_p90: f64,
    pub err_max: f64,
    /// Path of the source table inside the aiconfigurator-core wheel (AMD: inside the amd-aiter
    /// wheel, or the cited publication).
    pub source: String,
    pub table_version: String,
    /// Set where the surface was not fitted to this GPU's own measurements but scaled from
    /// another GPU's surface: the ratios applied and their sources (AMD files only).
    #[serde(default)]
    pub derived: Option<String>,
}

/// `t0 + (sum (x_i / r_i)^p)^(1/p)` over the non-negative `terms` (`x_i / r_i`, seconds).
/// Scaled by the largest term so that large `p` neither overflows nor underflows.
pub fn p_norm_s(t0_s: f64, p: f64, terms: &[f64]) -> f64 {
    let largest = terms.iter().fold(0.0f64, |a, &t| a.max(t));
    if largest <= 0.0 {
        return t0_s;
    }
    if p == 1.0 {
        return t0_s + terms.iter().sum::<f64>();
    }
    // `r^p = exp(p ln r)`: this sits in the sweep's hot loop (several GEMMs per step), where
    // libm's correctly rounded `pow` took 40 % of a sweep's time; the largest term is 1 and
    // terms of 0 contribute nothing.
    let sum: f64 = terms
        .iter()
        .map(|&t| {
            let r = t / largest;
            if r >= 1.0 {
                1.0
            } else if r > 0.0 {
                (p * r.ln()).exp()
            } else {
                0.0
            }
        })
        .sum();
    t0_s + largest * (sum.ln() / p).exp()
}

/// Dense GEMM `C[m,n] = A[m,k] W[k,n]` (SPEC.md 3.1).
#[derive(Debug, Clone, Deserialize)]
pub struct Gemm {
    /// racksweep's name of the format (`bf16`, `fp8`, `fp8_block`, `nvfp4`, `int8_sq`,
    /// `int8_wo`, `int4_wo`).
    pub dtype: String,
    pub kernel: String,
    /// The kernel with the most measured rows for this format: the one to use.
    pub default: bool,
    #[serde(flatten)]
    pub params: GemmParams,
    #[serde(flatten)]
    pub fit: Fit,
}

/// The numbers of a [`Gemm`] surface.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct GemmParams {
    /// Bytes per activation and weight element as read.
    pub act_bytes: f64,
    pub weight_bytes: f64,
    pub t0_s: f64,
    pub p: f64,
    pub flops_per_s: f64,
    pub bytes_per_s: f64,
    /// Serial reduction rate of one output tile's k-loop, elements of k per second.
    pub k_per_s: f64,
    /// Measured over predicted time at knots of `log2 m` (`m = 2^0 .. 2^15`, [`ROWS_KNOTS`])
    /// and of `log2(n k) / 2` (`n k = 2^20 .. 2^32`, [`SIZE_KNOTS`]), row-major in `m`
    /// (SPEC.md 3.1): where the tile pipeline changes regime, which the smooth p-norm misses.
    /// Empty in files from before the field: factor 1.
    #[serde(default)]
    pub shape_factor: Vec<f64>,
}

/// Knots of [`GemmParams::shape_factor`] in rows: `m = 1, 2, 4, …, 32768`.
pub const ROWS_KNOTS: usize = 16;
/// Knots in weight elements: `n k = 2^20, 2^22, …, 2^32`.
pub const SIZE_KNOTS: usize = 7;
const SIZE_LOG2_MIN: f64 = 20.0;

impl GemmParams {
    /// Seconds for `m` rows against an `n x k` weight.
    pub fn time_s(&self, m: f64, n: f64, k: f64) -> f64 {
        let flops = 2.0 * m * n * k;
        let bytes = m * k * self.act_bytes + n * k * self.weight_bytes + 2.0 * m * n;
        let t = p_norm_s(
            self.t0_s,
            self.p,
            &[
                flops / self.flops_per_s,
                bytes / self.bytes_per_s,
                k / self.k_per_s,
            ],
        );
        t * self.shape_factor_at(m, n * k)
    }

    /// [`Self::shape_factor`] at `m` rows and `size` weight elements.
    fn shape_factor_at(&self, m: f64, size: f64) -> f64 {
        knot_factor(
            &self.shape_factor,
            [ROWS_KNOTS, SIZE_KNOTS],
            m.max(1.0).log2(),
            (size.max(1.0).log2() - SIZE_LOG2_MIN) / 2.0,
        )
    }
}

/// A measured/predicted factor table at integer knots `0..nx` by `0..ny` (row-major in x),
/// interpolated bilinearly at `(x, y)` and clamped at the edges (SPEC.md 3.1); 1 when the table
/// does not have `nx * ny` knots (files from before the field).
fn knot_factor(f: &[f64], [nx, ny]: [usize; 2], x: f64, y: f64) -> f64 {
    if f.len() != nx * ny || nx < 2 || ny < 2 {
        return 1.0;
    }
    let x = x.clamp(0.0, (nx - 1) as f64);
    let y = y.clamp(0.0, (ny - 1) as f64);
    let (i, j) = ((x as usize).min(nx - 2), (y as usize).min(ny - 2));
    let (u, v) = (x - i as f64, y - j as f64);
    let at = |a: usize, b: usize| f[a * ny + b];
    at(i, j) * (1.0 - u) * (1.0 - v)
        + at(i + 1, j) * u * (1.0 - v)
        + at(i, j + 1) * (1.0 - u) * v
        + at(i + 1, j + 1) * u * v
}

/// Causal prefill attention, MHA/GQA (SPEC.md 3.2).
#[derive(Debug, Clone, Deserialize)]
pub struct ContextAttention {
    pub attn_dtype: String,
    pub kv_dtype: String,
    pub kernel: String,
    pub default: bool,
    #[serde(flatten)]
    pub params: ContextAttentionParams,
    #[serde(flatten)]
    pub fit: Fit,
}

/// The numbers of a [`ContextAttention`] surface.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ContextAttentionParams {
    pub q_bytes: f64,
    pub kv_bytes: f64,
    pub t0_s: f64,
    pub p: f64,
    pub flops_per_s: f64,
    pub bytes_per_s: f64,
    pub serial_per_s: f64,
    pub rows_per_s: f64,
    /// Softmax exponentials per second, one per score the causal mask keeps (SPEC.md 3.2);
    /// infinite in files fitted without the term (AMD's), whose MMAs stand alone.
    #[serde(default = "unbounded_rate")]
    pub scores_per_s: f64,
    /// Norm under which the kernel overlaps its MMAs with its exponentials, before the p-norm
    /// of the other terms.
    #[serde(default = "additive_norm")]
    pub q: f64,
    /// Sliding windows (tokens) whose layers the table also timed, and for each, in order,
    /// [`WINDOW_KNOTS`] ratios of such a layer's prefill time to a full-attention layer's on the
    /// same prompts, at prompts of `2^0 .. 2^15` tokens (SPEC.md 3.2a). Empty in files without
    /// window rows.
    #[serde(default)]
    pub window_tokens: Vec<f64>,
    #[serde(default)]
    pub window_ratio: Vec<f64>,
}

/// A rate no kernel reaches: the term it divides costs nothing.
fn unbounded_rate() -> f64 {
    f64::INFINITY
}

/// The norm that adds its terms; where the softmax term is absent (an unbounded rate) any norm
/// gives the MMA term alone.
fn additive_norm() -> f64 {
    1.0
}

/// Knots of [`ContextAttentionParams::window_ratio`] in prompt tokens: `1, 2, 4, …, 32768`.
pub const WINDOW_KNOTS: usize = 16;

impl ContextAttentionParams {
    /// A `window`-token sliding-window layer's prefill time over a full-attention layer's, for
    /// prompts of `s` tokens, where the table timed that window: linear in `log2 s` between
    /// the knots, clamped at the ends. `None` for a window it did not time.
    pub fn window_share(&self, s: f64, window: f64) -> Option<f64> {
        let i = self.window_tokens.iter().position(|&w| w == window)?;
        let knots = self
            .window_ratio
            .get(i * WINDOW_KNOTS..(i + 1) * WINDOW_KNOTS)?;
        let x = s.max(1.0).log2().clamp(0.0, (WINDOW_KNOTS - 1) as f64);
        let j = (x as usize).min(WINDOW_KNOTS - 2);
        let u = x - j as f64;
        Some(knots[j] * (1.0 - u) + knots[j + 1] * u)
    }

    /// Seconds for `b` prompts of `s` tokens with `h` query and `kv` key-value heads of `d`
    /// dimensions on this GPU. FlashAttention overlaps the softmax of one block with the MMAs
    /// of another (Shah et al. 2024, "FlashAttention-3", arXiv:2407.08608, section 3.1), so the
    /// two enter as one term, their `q`-norm: at `d = 64` (gpt-oss) the exponentials, not the
    /// tensor cores, set the pace of long prompts.
    pub fn time_s(&self, b: f64, s: f64, h: f64, kv: f64, d: f64) -> f64 {
        let mma = 2.0 * b * h * d * s * s / self.flops_per_s;
        let softmax = b * h * s * s / 2.0 / self.scores_per_s;
        p_norm_s(
            self.t0_s,
            self.p,
            &[
                p_norm_s(0.0, self.q, &[mma, softmax]),
                b * s * d * (2.0 * h * self.q_bytes + 2.0 * kv * self.kv_bytes) / self.bytes_per_s,
                s * d / self.serial_per_s,
                b * s * h / self.rows_per_s,
            ],
        )
    }
}

/// Decode attention, one query token per sequence (SPEC.md 3.3).
#[derive(Debug, Clone, Deserialize)]
pub struct GenerationAttention {
    pub attn_dtype: String,
    pub kv_dtype: String,
    pub kernel: String,
    pub default: bool,
    #[serde(flatten)]
    pub params: GenerationAttentionParams,
    #[serde(flatten)]
    pub fit: Fit,
}

/// The numbers of a [`GenerationAttention`] surface.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct GenerationAttentionParams {
    pub kv_bytes: f64,
    pub t0_s: f64,
    pub p: f64,
    pub bytes_per_s: f64,
    pub flops_per_s: f64,
    /// (sequence, KV head) work items per second: each has a fixed cost whatever the head
    /// width (SPEC.md 3.3).
    pub kvseq_per_s: f64,
    /// (sequence, KV head) work items at which bandwidth reaches half its rate.
    pub u_half: f64,
    /// Measured over predicted time at knots of `log2(h / kv)` (1 to 32 query heads per KV
    /// head, [`GROUP_KNOTS`]) and of `log2(b c) / 2` (`b c = 1 .. 2^28`, [`WORK_KNOTS`]),
    /// row-major in the first (SPEC.md 3.3). Empty in files from before the field: factor 1.
    #[serde(default)]
    pub shape_factor: Vec<f64>,
}

/// Knots of [`GenerationAttentionParams::shape_factor`] in query heads per KV head.
pub const GROUP_KNOTS: usize = 6;
/// Knots in cached tokens read per step, `b c = 2^0, 2^2, …, 2^28`.
pub const WORK_KNOTS: usize = 15;

impl GenerationAttentionParams {
    /// Seconds for `b` sequences attending to `c` tokens each.
    pub fn time_s(&self, b: f64, c: f64, h: f64, kv: f64, d: f64) -> f64 {
        let items = b * kv;
        let bytes = b * c * kv * d * 2.0 * self.kv_bytes + 4.0 * b * h * d;
        let t = p_norm_s(
            self.t0_s,
            self.p,
            &[
                bytes * (1.0 + self.u_half / items) / self.bytes_per_s,
                4.0 * b * h * d * c / self.flops_per_s,
                items / self.kvseq_per_s,
            ],
        );
        t * knot_factor(
            &self.shape_factor,
            [GROUP_KNOTS, WORK_KNOTS],
            (h / kv).max(1.0).log2(),
            (b * c).max(1.0).log2() / 2.0,
        )
    }
}

/// DeepSeek MLA dimensions the MLA tables were measured at (SPEC.md 3.4-3.5).
pub const MLA_QK_DIM: f64 = 192.0;
pub const MLA_V_DIM: f64 = 128.0;
pub const MLA_LATENT: f64 = 512.0;
pub const MLA_ROPE_DIM: f64 = 64.0;

/// MLA prefill attention (SPEC.md 3.4).
#[derive(Debug, Clone, Deserialize)]
pub struct ContextMla {
    pub mla_dtype: String,
    pub kv_dtype: String,
    pub kernel: String,
    #[serde(flatten)]
    pub params: ContextMlaParams,
    #[serde(flatten)]
    pub fit: Fit,
}

/// The numbers of a [`ContextMla`] surface.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
pub struct ContextMlaParams {
    pub t0_s: f64,
    pub p: f64,
    pub flops_per_s: f64,
    pub bytes_per_s: f64,
    pub serial_per_s: f64,
    pub rows_per_s: f64,
}

impl ContextMlaParams {
    /// Seconds for `b` prompts of `s` tokens with `h` heads on this GPU.
    pub fn time_s(&self, b: f64, s: f64, h: f64) -> f64 {
        p_norm_s(
            self.t0_s,
            self.p,
            &[
                b * h * s * s * (MLA_QK_DIM + MLA_V_DIM) / self.flops_per_s,
                b * s * h * (2.0 * MLA_QK_DIM + 2.0 * MLA_V_DIM) * 2.0 / self.bytes_per_s,
                s / self.serial_per_s,
                b * s * h / self.rows_per_s,
            ],
        )
    }
}

/// MLA decode attention over the latent (SPEC.md 3.5).
#[derive(Debug, Clone, Deserialize)]
pub struct GenerationMla {
    pub mla_dtype: String,
    pub kv_dtype: String,
    pub kernel: String,
    #[serde(flatten)]
    pub params: GenerationMlaParams,
    #[serde(flatten)]
    pub fit: Fit,
}

/// The numbers of a [`GenerationMla`] surface.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
pub struct GenerationMlaParams {
    pub kv_bytes: f64,
    pub t0_s: f64,
    pub p: f64,
    pub bytes_per_s: f64,
    pub flops_per_s: f64,
    pub serial_per_s: f64,
}

impl GenerationMlaParams {
    /// Seconds for `b` sequences attending to `c` tokens with `h` heads on this GPU.
    pub fn time_s(&self, b: f64, c: f64, h: f64) -> f64 {
        p_norm_s(
            self.t0_s,
            self.p,
            &[
                b * c * (MLA_LATENT + MLA_ROPE_DIM) * self.kv_bytes / self.bytes_per_s,
                2.0 * b * h * c * (2.0 * MLA_LATENT + MLA_ROPE_DIM) / self.flops_per_s,
                c / self.serial_per_s,
            ],
        )
    }
}

/// The routed-expert grouped GEMMs of one MoE layer on one GPU (SPEC.md 3.6).
#[derive(Debug, Clone, Deserialize)]
pub struct Moe {
    pub dtype: String,
    pub kernel: String,
    pub default: bool,
    /// Routing of the measured rows: `balanced` (uniform), `power_law_<alpha>` (skewed expert
    /// popularity; one surface per distribution a table measured), or the AMD tuner's random
    /// router (uniform in expectation).
    pub distribution: String,
    #[serde(flatten)]
    pub params: MoeParams,
    #[serde(flatten)]
    pub fit: Fit,
}

/// The numbers of a [`Moe`] surface.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
pub struct MoeParams {
    pub act_bytes: f64,
    pub weight_bytes: f64,
    /// Weight matrices per expert: 3 gated (up, gate, down), 2 non-gated.
    pub matrices: f64,
    pub t0_s: f64,
    pub p: f64,
    pub flops_per_s: f64,
    pub bytes_per_s: f64,
    pub token_per_s: f64,
    pub alltoken_per_s: f64,
    pub expert_per_s: f64,
    /// Mean tokens per expert at which the GEMMs reach half their FLOP rate.
    pub u_half: f64,
}

/// The shape of one MoE layer as a grouped GEMM sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MoeShape {
    /// Tokens entering the layer across the expert-parallel group.
    pub tokens: f64,
    pub hidden: f64,
    /// Full intermediate size of one expert.
    pub inter: f64,
    pub topk: f64,
    pub experts: f64,
    /// Tensor-parallel shards of each expert and expert-parallel groups.
    pub tp: f64,
    pub ep: f64,
}

impl MoeParams {
    /// Seconds of one layer's routed experts on one GPU, with uniform routing.
    pub fn time_s(&self, q: &MoeShape) -> f64 {
        let inter = q.inter / q.tp;
        let touched = q.experts / q.ep * (1.0 - (1.0 - q.topk / q.experts).powf(q.tokens));
        let routed = q.tokens * q.topk / q.ep;
        let per_expert = q.tokens * q.topk / q.experts;
        p_norm_s(
            self.t0_s,
            self.p,
            &[
                2.0 * routed * self.matrices * q.hidden * inter * (1.0 + self.u_half / per_expert)
                    / self.flops_per_s,
                (touched * self.matrices * q.hidden * inter * self.weight_bytes
                    + 2.0 * routed * q.hidden * self.act_bytes)
                    / self.bytes_per_s,
                routed * q.hidden / self.token_per_s,
                q.tokens * q.hidden / self.alltoken_per_s,
                touched / self.expert_per_s,
            ],
        )
    }
}

/// What an expert-parallel load balancer does to the routed experts of the busiest rank
/// (SPEC.md 3.6a): TensorRT-LLM's wide-EP table times one MoE layer on rank 0 at the same
/// power-law routing with the experts placed in order and placed by the balancer; the factor is
/// their measured ratio at knots of `log2 ep` and of the mean routed tokens per expert. It
/// multiplies a skewed [`Moe`] surface of the same routing.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ExpertBalance {
    /// The routing both were measured at, `power_law_<alpha>`.
    pub distribution: String,
    pub kernel: String,
    /// Format of the measured grouped GEMMs (the ratio is taken to carry to the others).
    pub measured_dtype: String,
    /// Balanced over skewed time at knots of `log2(ep) - 1` (`ep = 2 .. 256`,
    /// [`BALANCE_EP_KNOTS`]) and `log2(T k / E) + 5` (`1/32 .. 512` routed tokens per expert,
    /// [`BALANCE_LOAD_KNOTS`]), row-major in `ep`.
    pub balance_factor: Vec<f64>,
    #[serde(flatten)]
    pub fit: Fit,
}

/// Knots of [`ExpertBalance::balance_factor`] in expert-parallel ranks: `ep = 2, 4, …, 256`.
pub const BALANCE_EP_KNOTS: usize = 8;
/// Knots in mean routed tokens per expert: `2^-5, 2^-4, …, 2^9`.
pub const BALANCE_LOAD_KNOTS: usize = 15;

impl ExpertBalance {
    /// Balanced over skewed time of one layer's routed experts with `tokens` tokens over an
    /// expert-parallel group of `ep` ranks, `topk` of `experts` experts per token.
    pub fn factor(&self, tokens: f64, topk: f64, experts: f64, ep: f64) -> f64 {
        knot_factor(
            &self.balance_factor,
            [BALANCE_EP_KNOTS, BALANCE_LOAD_KNOTS],
            ep.max(1.0).log2() - 1.0,
            (tokens * topk / experts).max(1e-9).log2() + 5.0,
        )
    }
}

/// `min(alpha1 + x / beta1, alpha2 + x / beta2)`.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq)]
pub struct TwoLine {
    pub alpha1_s: f64,
    pub beta1: f64,
    pub alpha2_s: f64,
    pub beta2: f64,
}

impl TwoLine {
    pub fn time_s(&self, x: f64) -> f64 {
        (self.alpha1_s + x / self.beta1).min(self.alpha2_s + x / self.beta2)
    }

    /// Each parameter interpolated linearly in `log2 n` between `self` at `n_lo` GPUs and
    /// `hi` at `n_hi` (SPEC.md 3.7: group sizes between measured ones).
    pub fn interpolate(&self, n_lo: f64, hi: &TwoLine, n_hi: f64, n: f64) -> TwoLine {
        let w = (n.log2() - n_lo.log2()) / (n_hi.log2() - n_lo.log2());
        let at = |a: f64, b: f64| a + (b - a) * w;
        TwoLine {
            alpha1_s: at(self.alpha1_s, hi.alpha1_s),
            beta1: at(self.beta1, hi.beta1),
            alpha2_s: at(self.alpha2_s, hi.alpha2_s),
            beta2: at(self.beta2, hi.beta2),
        }
    }
}

/// The engine's own all-reduce inside one NVLink domain (SPEC.md 3.7); `x` is the message
/// bytes per GPU.
#[derive(Debug, Clone, Deserialize)]
pub struct CustomAllReduce {
    /// `TRTLLM`; vLLM `vLLM_custom_graph` / `_eager`; SGLang `SGLang_CustomAllReduce_graph` /
    /// `_eager` (graph: captured in a CUDA graph, as decode runs; eager: as prefill runs).
    pub kernel_source: String,
    pub num_gpus: u32,
    pub dtype: String,
    #[serde(flatten)]
    pub line: TwoLine,
    #[serde(flatten)]
    pub fit: Fit,
}

/// An NCCL collective measured by nccl-tests (SPEC.md 3.8); `x` is nccl-tests' size in bytes.
#[derive(Debug, Clone, Deserialize)]
pub struct Nccl {
    /// `all_reduce`, `all_gather`, `reduce_scatter`, `alltoall`.
    pub op_name: String,
    pub num_gpus: u32,
    pub dtype: String,
    #[serde(flatten)]
    pub line: TwoLine,
    #[serde(flatten)]
    pub fit: Fit,
}

/// MoE dispatch or combine (DeepEP-style, SPEC.md 3.9); `x` is routed elements per rank,
/// `tokens x topk x hidden`.
#[derive(Debug, Clone, Deserialize)]
pub struct MoeAllToAll {
    /// `*_ll` low-latency kernels (decode), `*_ht` / `deepep_normal` high-throughput (prefill).
    pub comm_backend: String,
    /// `dispatch` or `combine`.
    pub phase: String,
    pub comm_dtype: String,
    /// GPUs of the measured expert-parallel group.
    #[serde(alias = "ep_size_per_node")]
    pub ep_size: u32,
    #[serde(default)]
    pub node_num: Option<u32>,
    #[serde(flatten)]
    pub line: TwoLine,
    #[serde(flatten)]
    pub fit: Fit,
}

/// The surfaces of one GPU under one engine (`<gpu>-<engine>.toml`), or the engine-independent
/// NCCL collectives of one GPU (`<gpu>-nccl.toml`).
#[derive(Debug, Clone, Deserialize)]
pub struct KernelFile {
    pub schema: u32,
    pub gpu: String,
    /// `trtllm`, `vllm`, `sglang`, or `nccl`.
    pub engine: String,
    #[serde(default)]
    pub engine_version: Option<String>,
    #[serde(default)]
    pub nccl_version: Option<String>,
    pub aic_system: String,
    pub aic_package: String,
    pub aic_version_slot: String,
    /// Ops with no table, or no usable fit, for this GPU and engine.
    pub not_distilled: Vec<String>,
    #[serde(default)]
    pub gemm: Vec<Gemm>,
    #[serde(default)]
    pub context_attention: Vec<ContextAttention>,
    #[serde(default)]
    pub generation_attention: Vec<GenerationAttention>,
    #[serde(default)]
    pub context_mla: Vec<ContextMla>,
    #[serde(default)]
    pub generation_mla: Vec<GenerationMla>,
    #[serde(default)]
    pub moe: Vec<Moe>,
    /// TensorRT-LLM files only: the balancer's effect is taken from its wide-EP table and
    /// applies to every engine on the GPU.
    #[serde(default)]
    pub eplb: Vec<ExpertBalance>,
    #[serde(default)]
    pub custom_allreduce: Vec<CustomAllReduce>,
    #[serde(default)]
    pub moe_a2a: Vec<MoeAllToAll>,
    #[serde(default)]
    pub nccl: Vec<Nccl>,
}

macro_rules! kernel_files {
    (nvidia: [$($gpu:literal),* $(,)?], amd: [$($amd:literal),* $(,)?] $(,)?) => {
        /// `(gpu, engine, text)` of every embedded surface file. AMD GPUs have no TensorRT-LLM
        /// file (the engine does not run on them); their `nccl` file holds RCCL collectives.
        pub const FILES: &[(&str, &str, &str)] = &[
            $(
                ($gpu, "trtllm", include_str!(concat!("data/kernels/", $gpu, "-trtllm.toml"))),
                ($gpu, "vllm", include_str!(concat!("data/kernels/", $gpu, "-vllm.toml"))),
                ($gpu, "sglang", include_str!(concat!("data/kernels/", $gpu, "-sglang.toml"))),
                ($gpu, "nccl", include_str!(concat!("data/kernels/", $gpu, "-nccl.toml"))),
            )*
            $(
                ($amd, "vllm", include_str!(concat!("data/kernels/", $amd, "-vllm.toml"))),
                ($amd, "sglang", include_str!(concat!("data/kernels/", $amd, "-sglang.toml"))),
                ($amd, "nccl", include_str!(concat!("data/kernels/", $amd, "-nccl.toml"))),
            )*
        ];
    };
}

kernel_files!(
    nvidia: [
        "a100-80gb",
        "h100-sxm",
        "h200-sxm",
        "b200",
        "b300",
        "gb200-nvl72",
        "gb300-nvl72",
    ],
    amd: ["mi300x", "mi325x", "mi355x"],
);

/// The parsed file of `gpu` for `engine` (`"nccl"` for the collectives), parsed once per
/// process; `None` when no measured tables exist for that GPU.
pub fn file(gpu: &str, engine: &str) -> Option<&'static KernelFile> {
    static PARSED: OnceLock<Vec<OnceLock<KernelFile>>> = OnceLock::new();
    let parsed = PARSED.get_or_init(|| FILES.iter().map(|_| OnceLock::new()).collect());
    let i = FILES
        .iter()
        .position(|&(g, e, _)| g == gpu && e == engine)?;
    Some(parsed[i].get_or_init(|| {
        toml::from_str(FILES[i].2).unwrap_or_else(|e| {
            panic!("built-in kernel surfaces data/kernels/{gpu}-{engine}.toml are invalid: {e}")
        })
    }))
}

/// The surfaces of `gpu` under `engine` and its NCCL (AMD: RCCL) collectives; `None` without
/// measured tables (H800, inline GPUs, AMD GPUs under TensorRT-LLM).
pub fn surfaces(
    gpu: &str,
    engine: ServingEngine,
) -> Option<(&'static KernelFile, &'static KernelFile)> {
    Some((file(gpu, engine.as_str())?, file(gpu, "nccl")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One row of a surface's source table with the distiller's prediction: the inputs by name,
    /// `measured_ms` and `predicted_ms` (SPEC.md section 5).
    type Sample = std::collections::BTreeMap<String, f64>;

    /// The knot table is exact at its knots, linear between two, and clamped outside.
    #[test]
    fn knot_factor_is_bilinear_and_clamped() {
        // 2 x 3 knots, row-major in x: f(x, y) = 1 + x + 2 y at the knots.
        let f = [1.0, 3.0, 5.0, 2.0, 4.0, 6.0];
        assert_eq!(knot_factor(&f, [2, 3], 0.0, 0.0), 1.0);
        assert_eq!(knot_factor(&f, [2, 3], 1.0, 2.0), 6.0);
        assert_eq!(knot_factor(&f, [2, 3], 0.5, 0.5), 2.5);
        assert_eq!(knot_factor(&f, [2, 3], 0.25, 1.5), 1.0 + 0.25 + 3.0);
        assert_eq!(knot_factor(&f, [2, 3], -4.0, 9.0), 5.0);
        assert_eq!(
            knot_factor(&f, [3, 3], 0.5, 0.5),
            1.0,
            "wrong size: no factor"
        );
        assert_eq!(knot_factor(&[], [2, 3], 0.5, 0.5), 1.0);
    }

    fn get(s: &Sample, key: &str) -> f64 {
        *s.get(key)
            .unwrap_or_else(|| panic!("sample without {key}: {s:?}"))
    }

    /// The sample points of one surface file: test data in `scripts/kernels/samples/`, written
    /// by the distill scripts next to the surfaces and not embedded in the binary. The n-th
    /// `[[kind]]` there belongs to the n-th `[[kind]]` of the surface file, and repeats the keys
    /// that name it.
    struct Samples {
        name: String,
        surfaces: toml::Table,
        samples: toml::Table,
    }

    impl Samples {
        fn load(gpu: &str, engine: &str) -> Samples {
            let name = format!("{gpu}-{engine}.toml");
            let text = FILES
                .iter()
                .find(|&&(g, e, _)| g == gpu && e == engine)
                .unwrap()
                .2;
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("scripts/kernels/samples")
                .join(&name);
            let samples: toml::Table = toml::from_str(
                &std::fs::read_to_string(&path)
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display())),
            )
            .unwrap();
            assert_eq!(samples["gpu"].as_str(), Some(gpu), "{name}");
            assert_eq!(samples["engine"].as_str(), Some(engine), "{name}");
            let surfaces: toml::Table = toml::from_str(text).unwrap();
            // Every kind has as many entries in the samples file as surfaces.
            for (kind, v) in &surfaces {
                if let Some(list) = v
                    .as_array()
                    .filter(|l| !l.is_empty() && l.iter().all(|x| x.is_table()))
                {
                    let n = samples.get(kind).and_then(|s| s.as_array()).map(Vec::len);
                    assert_eq!(n, Some(list.len()), "{name} {kind}");
                }
            }
            Samples {
                name,
                surfaces,
                samples,
            }
        }

        /// The samples of the `i`-th `[[kind]]` surface, after checking that the entry names
        /// the same surface.
        fn of(&self, kind: &str, i: usize) -> Vec<Sample> {
            let entry = self.samples[kind][i].as_table().unwrap();
            let surface = self.surfaces[kind][i].as_table().unwrap();
            for (k, v) in entry.iter().filter(|(k, _)| *k != "samples") {
                assert_eq!(surface.get(k), Some(v), "{} {kind}[{i}].{k}", self.name);
            }
            let samples: Vec<Sample> = entry["samples"].clone().try_into().unwrap();
            assert!(!samples.is_empty(), "{} {kind}[{i}]", self.name);
            samples
        }
    }

    /// Every embedded surface reproduces the distiller's own predictions at its sample points
    /// (`scripts/kernels/samples/`)
    /// (SPEC.md section 5: the same formulas in double precision, parameters rounded to 6
    /// significant digits), and the predictions sit within the surface's stated maximum error
    /// of the measured times.
    #[test]
    fn every_surface_reproduces_its_samples() {
        let mut checked = 0;
        let mut check = |name: &str, fit: &Fit, s: &Sample, t_s: f64| {
            let predicted = get(s, "predicted_ms");
            let measured = get(s, "measured_ms");
            let rel = (t_s * 1e3 / predicted - 1.0).abs();
            assert!(rel < 1e-4, "{name} {s:?}: {} ms vs {predicted}", t_s * 1e3);
            assert!(
                (predicted / measured - 1.0).abs() <= fit.err_max * (1.0 + 1e-3) + 1e-9,
                "{name} {s:?}: beyond err_max {}",
                fit.err_max
            );
            checked += 1;
        };
        for &(gpu, engine, _) in FILES {
            let f = file(gpu, engine).unwrap();
            assert_eq!((f.gpu.as_str(), f.engine.as_str()), (gpu, engine));
            let name = format!("{gpu}-{engine}");
            let samples = Samples::load(gpu, engine);
            for (i, k) in f.gemm.iter().enumerate() {
                for s in &samples.of("gemm", i) {
                    check(
                        &name,
                        &k.fit,
                        s,
                        k.params.time_s(get(s, "m"), get(s, "n"), get(s, "k")),
                    );
                }
            }
            for (i, k) in f.context_attention.iter().enumerate() {
                for s in &samples.of("context_attention", i) {
                    let t = k.params.time_s(
                        get(s, "batch_size"),
                        get(s, "isl"),
                        get(s, "num_heads"),
                        get(s, "num_key_value_heads"),
                        get(s, "head_dim"),
                    );
                    check(&name, &k.fit, s, t);
                }
            }
            for (i, k) in f.generation_attention.iter().enumerate() {
                for s in &samples.of("generation_attention", i) {
                    let t = k.params.time_s(
                        get(s, "batch_size"),
                        get(s, "context"),
                        get(s, "num_heads"),
                        get(s, "num_key_value_heads"),
                        get(s, "head_dim"),
                    );
                    check(&name, &k.fit, s, t);
                }
            }
            for (i, k) in f.context_mla.iter().enumerate() {
                for s in &samples.of("context_mla", i) {
                    let t =
                        k.params
                            .time_s(get(s, "batch_size"), get(s, "isl"), get(s, "num_heads"));
                    check(&name, &k.fit, s, t);
                }
            }
            for (i, k) in f.generation_mla.iter().enumerate() {
                for s in &samples.of("generation_mla", i) {
                    let t = k.params.time_s(
                        get(s, "batch_size"),
                        get(s, "context"),
                        get(s, "num_heads"),
                    );
                    check(&name, &k.fit, s, t);
                }
            }
            for (i, k) in f.moe.iter().enumerate() {
                for s in &samples.of("moe", i) {
                    let q = MoeShape {
                        tokens: get(s, "num_tokens"),
                        hidden: get(s, "hidden_size"),
                        inter: get(s, "inter_size"),
                        topk: get(s, "topk"),
                        experts: get(s, "num_experts"),
                        tp: get(s, "moe_tp_size"),
                        ep: get(s, "moe_ep_size"),
                    };
                    check(&name, &k.fit, s, k.params.time_s(&q));
                }
            }
            for (i, k) in f.eplb.iter().enumerate() {
                for s in &samples.of("eplb", i) {
                    let factor = k.factor(
                        get(s, "num_tokens"),
                        get(s, "topk"),
                        get(s, "num_experts"),
                        get(s, "moe_ep_size"),
                    );
                    check(&name, &k.fit, s, get(s, "skewed_ms") * 1e-3 * factor);
                }
            }
            for (i, k) in f.custom_allreduce.iter().enumerate() {
                for s in &samples.of("custom_allreduce", i) {
                    check(&name, &k.fit, s, k.line.time_s(get(s, "bytes")));
                }
            }
            for (i, k) in f.nccl.iter().enumerate() {
                for s in &samples.of("nccl", i) {
                    check(&name, &k.fit, s, k.line.time_s(get(s, "bytes")));
                }
            }
            for (i, k) in f.moe_a2a.iter().enumerate() {
                for s in &samples.of("moe_a2a", i) {
                    let x = get(s, "num_tokens") * get(s, "topk") * get(s, "hidden_size");
                    check(&name, &k.fit, s, k.line.time_s(x));
                }
            }
        }
        assert!(checked > 3200, "{checked} samples");
    }

    /// The AMD files (SPEC.md section 8): vLLM, SGLang and RCCL for MI300X, MI325X and MI355X,
    /// no TensorRT-LLM; the two engines' files hold the same surfaces; MI325X is derived from
    /// MI300X throughout and says so, with the ratio's source; every derived sample keeps the
    /// measurement it was scaled from.
    #[test]
    fn amd_files() {
        for gpu in ["mi300x", "mi325x", "mi355x"] {
            assert!(file(gpu, "trtllm").is_none(), "{gpu}");
            assert!(surfaces(gpu, ServingEngine::Trtllm).is_none(), "{gpu}");
            let (v, rccl) = surfaces(gpu, ServingEngine::Vllm).unwrap();
            let (s, _) = surfaces(gpu, ServingEngine::Sglang).unwrap();
            assert_eq!(v.gemm.len(), s.gemm.len(), "{gpu}");
            for (a, b) in v.gemm.iter().zip(&s.gemm) {
                assert_eq!(a.params, b.params, "{gpu}");
            }
            assert!(
                !v.gemm.is_empty() && !v.context_attention.is_empty(),
                "{gpu}"
            );
            assert_eq!(v.moe_a2a.len(), 4, "{gpu}");
            assert!(
                v.generation_attention.is_empty() && v.generation_mla.is_empty(),
                "{gpu}: no AMD decode-attention measurement is distilled"
            );
            assert!(
                rccl.nccl
                    .iter()
                    .any(|c| c.op_name == "all_reduce" && c.num_gpus == 8),
                "{gpu}"
            );
            let (vs, rs) = (Samples::load(gpu, "vllm"), Samples::load(gpu, "nccl"));
            let fits = (v.gemm.iter().enumerate())
                .map(|(i, g)| (&g.fit, vs.of("gemm", i)))
                .chain(
                    (v.context_attention.iter().enumerate())
                        .map(|(i, a)| (&a.fit, vs.of("context_attention", i))),
                )
                .chain((v.moe.iter().enumerate()).map(|(i, m)| (&m.fit, vs.of("moe", i))))
                .chain((v.moe_a2a.iter().enumerate()).map(|(i, a)| (&a.fit, vs.of("moe_a2a", i))))
                .chain((rccl.nccl.iter().enumerate()).map(|(i, c)| (&c.fit, rs.of("nccl", i))));
            for (fit, samples) in fits {
                match &fit.derived {
                    Some(text) => {
                        assert!(
                            text.contains("GB/s") || text.contains("TFLOP/s"),
                            "{gpu}: the ratio and its source: {text}"
                        );
                        assert!(samples.iter().all(|s| s.contains_key("source_measured_ms")));
                    }
                    None => assert_ne!(gpu, "mi325x", "MI325X has no measurement of its own"),
                }
            }
        }
        // MI355X (CDNA4) has FP4: an MXFP4 GEMM surface; CDNA3 has none.
        let amd_dtypes = |gpu| {
            file(gpu, "vllm")
                .unwrap()
                .gemm
                .iter()
                .map(|g| g.dtype.as_str())
                .collect::<Vec<_>>()
        };
        assert!(amd_dtypes("mi355x").contains(&"mxfp4"));
        assert!(!amd_dtypes("mi300x").contains(&"mxfp4"));
    }

    /// SPEC.md section 5's worked example: bf16 GEMM on H200 under TensorRT-LLM, m = 17,
    /// n = k = 10240: FLOP term 4.561 us, byte term 53.78 us, k term 3.937 us, p-norm 54.1 us,
    /// plus t0 2.96 us = 57.09 us, times the shape factor 0.99202 = 56.63 us (measured 60.07 us).
    #[test]
    fn gemm_by_hand() {
        let f = file("h200-sxm", "trtllm").unwrap();
        let g = f
            .gemm
            .iter()
            .find(|g| g.dtype == "bf16" && g.default)
            .unwrap();
        let t = g.params.time_s(17.0, 10240.0, 10240.0);
        assert!((t - 56.63e-6).abs() < 0.02e-6, "{t}");
    }

    /// TensorRT-LLM's decode attention on B200 with an FP8 KV cache, 8 query heads per KV head
    /// and 8 cached tokens (`step` 7), from AIConfigurator 0.12's table
    /// (`b200_sxm/attention/trtllm/1.3.0rc20/generation_attention_perf.parquet`): a CTA per
    /// (sequence, KV head) costs about the same at head width 64 (gpt-oss) as at 128, so the
    /// surface times both within its stated p90 error. With a per-CTA term in `b kv d` it read
    /// 0.045 and 0.079 ms at d = 64, 1,024 and 2,048 sequences: 0.55x and 0.51x the table.
    #[test]
    fn decode_attention_costs_a_cta_whatever_its_head_width() {
        let f = file("b200", "trtllm").unwrap();
        let a = f
            .generation_attention
            .iter()
            .find(|a| a.kv_dtype == "fp8" && a.default)
            .unwrap();
        for (b, d, measured_ms) in [
            (1024.0, 64.0, 0.082448),
            (2048.0, 64.0, 0.15448),
            (1024.0, 128.0, 0.092667),
        ] {
            let ms = a.params.time_s(b, 8.0, 64.0, 8.0, d) * 1e3;
            let err = (ms / measured_ms - 1.0).abs();
            assert!(
                err <= a.fit.err_p90,
                "b {b} d {d}: {ms} ms vs {measured_ms} ms"
            );
        }
    }

    /// `gpu`'s default TensorRT-LLM prefill-attention surface with bf16 attention and KV cache.
    fn bf16_prefill(gpu: &str) -> &'static ContextAttention {
        file(gpu, "trtllm")
            .unwrap()
            .context_attention
            .iter()
            .find(|a| a.attn_dtype == "bf16" && a.kv_dtype == "bf16" && a.default)
            .unwrap()
    }

    /// TensorRT-LLM's prefill attention on B200 with a bf16 KV cache, one prompt, 64 query and 8
    /// KV heads, from AIConfigurator 0.12's table
    /// (`b200_sxm/attention/trtllm/1.3.0rc20/context_attention_perf.parquet`). At 16,384 tokens
    /// width 64 (gpt-oss) takes 2.9975 ms and width 128 3.8934 ms: halving the width saves 23 %,
    /// not half, because the softmax's exponentials (`b h s^2 / 2`, whatever the width) set the
    /// pace beside the MMAs. The surface reads both within its p90 error (3.17 and 4.00 ms), by
    /// hand from its terms; the same surface with the MMAs alone reads width 64 at 1.94 ms,
    /// 0.65x the table (surfaces fitted without the term, until 2026-11-29, read gpt-oss's
    /// prompts of 4,096 tokens and more at 0.73x on B200, median).
    #[test]
    fn prefill_attention_waits_for_its_exponentials_at_narrow_heads() {
        let a = bf16_prefill("b200");
        let c = &a.params;
        let (b, s, h, kv) = (1.0, 16384.0, 64.0, 8.0);
        for (d, measured_ms) in [(64.0, 2.9975), (128.0, 3.8934)] {
            let mma = 2.0 * b * h * d * s * s / c.flops_per_s;
            let softmax = b * h * s * s / 2.0 / c.scores_per_s;
            let overlapped = (mma.powf(c.q) + softmax.powf(c.q)).powf(1.0 / c.q);
            let others = [
                b * s * d * (2.0 * h * c.q_bytes + 2.0 * kv * c.kv_bytes) / c.bytes_per_s,
                s * d / c.serial_per_s,
                b * s * h / c.rows_per_s,
            ];
            let sum: f64 = others.iter().map(|x| x.powf(c.p)).sum::<f64>() + overlapped.powf(c.p);
            let by_hand = c.t0_s + sum.powf(1.0 / c.p);
            let t = c.time_s(b, s, h, kv, d);
            assert!((t / by_hand - 1.0).abs() < 1e-9, "{t} vs {by_hand}");
            let err = (t * 1e3 / measured_ms - 1.0).abs();
            assert!(
                err <= a.fit.err_p90,
                "d {d}: {} ms vs {measured_ms}",
                t * 1e3
            );
        }
        let mma_alone = ContextAttentionParams {
            scores_per_s: f64::INFINITY,
            ..c.clone()
        };
        let narrow = |c: &ContextAttentionParams| c.time_s(b, s, h, kv, 64.0);
        assert!((narrow(&mma_alone) * 1e3 / 2.9975 - 0.646).abs() < 0.005);
    }

    /// TensorRT-LLM's prefill attention on H200 with a bf16 KV cache at gpt-oss's shape (64
    /// query heads, 8 KV heads, width 64), from AIConfigurator 0.12's table
    /// (`h200_sxm/attention/trtllm/1.3.0rc20/context_attention_perf.parquet`): one prompt of
    /// 8,192 tokens takes 0.3445 ms in a 128-token window layer and 1.3509 ms in a full layer
    /// (0.255x), one of 1,024 tokens 0.0593 against 0.0662 ms (0.896x). The share of the prompt
    /// a window attends to (128 of the mean 4,096 and 512 tokens) would be 0.031x and 0.25x.
    /// The surface's ratio reads both within 5 %; between knots it is linear in `log2` of the
    /// prompt; a window the table did not time has none.
    #[test]
    fn a_window_layer_prefills_at_its_measured_share() {
        let a = &bf16_prefill("h200-sxm").params;
        for (prompt, measured) in [(8192.0, 0.3445 / 1.3509), (1024.0, 0.0593 / 0.0662)] {
            let share = a.window_share(prompt, 128.0).unwrap();
            assert!(
                (share / measured - 1.0).abs() < 0.05,
                "{prompt}: {share} vs {measured}"
            );
        }
        let i = a.window_tokens.iter().position(|&w| w == 128.0).unwrap();
        let knots = &a.window_ratio[i * WINDOW_KNOTS..(i + 1) * WINDOW_KNOTS];
        let between = a.window_share(1024.0 * 2f64.sqrt(), 128.0).unwrap();
        assert!((between - (knots[10] + knots[11]) / 2.0).abs() < 1e-12);
        assert_eq!(a.window_share(1e9, 128.0), Some(knots[15]));
        assert_eq!(a.window_share(4096.0, 4096.0), None);
    }

    #[test]
    fn p_norm_limits() {
        assert_eq!(p_norm_s(1.0, 1.0, &[2.0, 3.0]), 6.0);
        // p = 2: the Euclidean norm.
        assert!((p_norm_s(0.0, 2.0, &[3.0, 4.0]) - 5.0).abs() < 1e-12);
        // Large p: the maximum, without overflow.
        assert!((p_norm_s(0.0, 400.0, &[3.0, 4.0]) - 4.0).abs() < 1e-3);
        assert_eq!(p_norm_s(7.0, 2.0, &[0.0, 0.0]), 7.0);
    }

    #[test]
    fn two_line_takes_the_faster_regime() {
        let l = TwoLine {
            alpha1_s: 5e-6,
            beta1: 50e9,
            alpha2_s: 20e-6,
            beta2: 400e9,
        };
        // 64 KiB: one-shot 6.3 us beats the ring's 20.2 us; 64 MiB: ring 188 us beats 1.34 ms.
        assert!((l.time_s(65536.0) - (5e-6 + 65536.0 / 50e9)).abs() < 1e-15);
        let big = 64.0 * 1048576.0;
        assert!((l.time_s(big) - (20e-6 + big / 400e9)).abs() < 1e-15);
        let mid = l.interpolate(
            2.0,
            &TwoLine {
                alpha1_s: 9e-6,
                ..l
            },
            8.0,
            4.0,
        );
        assert!((mid.alpha1_s - 7e-6).abs() < 1e-15);
    }
}
