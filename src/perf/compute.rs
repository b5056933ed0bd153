//! Floating-point work of one engine step on one GPU, and which tensor cores run it.
//!
//! Linear layers cost 2 FLOPs per parameter per token (Kaplan et al. 2020, "Scaling Laws for
//! Neural Language Models", section 2.1; Pope et al. 2022, section 2). Routed experts run only
//! for the tokens routed to them. Attention adds `QK^T` and `AV` over the attended context:
//! `4 x heads x head_dim` FLOPs per token per context token per layer for MHA/GQA (Pope et al.
//! 2022, section 3.3); MLA decode uses the absorbed form over the latent (DeepSeek-V3 report,
//! section 2.1.1), MLA prefill the decompressed heads. Formulas: docs/model.md, "Compute".

use crate::catalog::{Calibration, ComputeClass, Dtype, Gpu};

use super::ModelFacts;
use super::memory::StageParams;

/// The tensor cores a weight format computes on for one GPU, and their FLOP/s inside a serving
/// engine, as engines serve it there: natively on the format's own class, or weight-only on the
/// class the GPU states, at `gemm_weight_only` of that class's rate (the weights dequantized
/// inside the GEMM); the faster where both apply. `None` when no engine serves the format on
/// this GPU.
pub fn compute_class(
    gpu: &Gpu,
    dtype: &Dtype,
    calibration: &Calibration,
) -> Option<(ComputeClass, f64)> {
    let rate = |c: ComputeClass| {
        gpu.achievable_flops(c)
            .map(|f| f * calibration.serving_gemm_efficiency)
    };
    let native = gpu
        .supports_natively(&dtype.id)
        .then(|| Some((dtype.compute, rate(dtype.compute)?)))
        .flatten();
    let weight_only = gpu
        .weight_only_class(&dtype.id)
        .and_then(|c| Some((c, rate(c)? * gpu.efficiency.gemm_weight_only?)));
    native
        .into_iter()
        .chain(weight_only)
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

/// Whether sweep format `weights` serves a checkpoint whose experts come pre-quantized in
/// `checkpoint` as published: no engine re-quantizes them to a wider format, so any format at
/// least as wide keeps them (and the rest of the checkpoint) as they are; a narrower one is a
/// re-quantization.
pub fn served_as_published(weights: &Dtype, checkpoint: &Dtype) -> bool {
    weights.bytes_per_param() >= checkpoint.bytes_per_param()
}

/// FLOP/s and bytes per parameter of the routed-expert GEMMs in weight format `weights`, for a
/// model whose published checkpoint stores its experts pre-quantized in `checkpoint` (gpt-oss:
/// MXFP4). Engines load such experts as published whenever the sweep's format is no narrower
/// (no engine re-quantizes MXFP4 experts up to FP8), and run them weight-only: the activations
/// stay wider. TensorRT-LLM's gpt-oss support matrix (examples/models/core/gpt_oss/README.md):
/// MXFP4 weights with MXFP8 activations on Blackwell, with bf16 activations on Hopper, where
/// FP8 activations would need dynamic per-tensor scales. So the GEMM runs at the FP8 rate on a
/// GPU that executes the block-scaled format natively (its MMA takes MXFP8 against MXFP4 at the
/// FP8 rate, not the FP4 one) and at the bf16 rate elsewhere, never faster than the sweep's own
/// format. Without a checkpoint format, or with a narrower sweep format (a re-quantization),
/// experts are like every other linear layer. Also returns the class the GEMM runs in, which
/// says how wide its input activations are.
pub fn expert_compute(
    gpu: &Gpu,
    weights: &Dtype,
    checkpoint: Option<&Dtype>,
    calibration: &Calibration,
) -> Option<(f64, f64, ComputeClass)> {
    let (class, weights_flops) = compute_class(gpu, weights, calibration)?;
    match checkpoint {
        Some(c) if served_as_published(weights, c) => {
            let activations = if gpu.supports_natively(&c.id) {
                ComputeClass::Fp8
            } else {
                ComputeClass::Bf16
            };
            let flops = gpu.achievable_flops(activations)? * calibration.serving_gemm_efficiency;
            Some((flops.min(weights_flops), c.bytes_per_param(), activations))
        }
        _ => Some((weights_flops, weights.bytes_per_param(), class)),
    }
}

/// Tokens of one step on one GPU's attention rank.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepTokens {
    /// Decode query tokens on this attention rank: one per running sequence, or `1 + d` with
    /// `d` draft tokens to verify (speculative decoding).
    pub decode: f64,
    /// Running sequences on this attention rank (each reads its KV cache once per step).
    pub sequences: f64,
    /// Mean context a decode token attends to.
    pub decode_context: f64,
    /// Prefill tokens on this attention rank (the mean over the stage's attention ranks).
    pub prefill: f64,
    /// Prefill tokens on the attention rank that sets the step's pace: with attention data
    /// parallelism prompts land on the ranks at random and every rank waits for the busiest one
    /// at the MoE all-to-all ([`super::serving::busiest_of_poisson`]); `prefill` without it.
    pub busiest_prefill: f64,
    /// Mean context a prefill token attends to (half the prompt: causal mask).
    pub prefill_context: f64,
    /// Tokens this step passes through each MoE layer, all attention ranks of the stage together.
    pub moe_tokens: f64,
    /// Rows of logits computed (decode tokens plus prompts that finish in this step).
    pub logit_rows: f64,
}

impl StepTokens {
    pub fn rank_tokens(&self) -> f64 {
        self.decode + self.prefill
    }

    /// One of two equal micro-batches of this step (two-batch overlap): half of every count,
    /// the same contexts.
    pub fn halved(&self) -> StepTokens {
        StepTokens {
            decode: self.decode / 2.0,
            sequences: self.sequences / 2.0,
            prefill: self.prefill / 2.0,
            busiest_prefill: self.busiest_prefill / 2.0,
            moe_tokens: self.moe_tokens / 2.0,
            logit_rows: self.logit_rows / 2.0,
            ..*self
        }
    }
}

/// FLOPs one GPU performs in one step of one stage, split by the kernels that run them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepFlops {
    /// Dense linear layers (attention projections, dense MLPs, shared experts, LM head) on the
    /// weight format's tensor cores, over `rank_tokens` rows.
    pub dense: f64,
    /// Routed-expert GEMMs, over `expert_rows` rows each.
    pub routed: f64,
    /// Attention score and value products: bf16 tensor cores.
    pub attention: f64,
    /// Mean rows (tokens) per routed expert GEMM among the experts the step touches.
    pub expert_rows: f64,
}

impl StepFlops {
    pub fn linear(&self) -> f64 {
        self.dense + self.routed
    }
}

pub fn step_flops(
    m: &ModelFacts,
    s: &StageParams,
    tp: u32,
    stage_gpus: u32,
    t: &StepTokens,
) -> StepFlops {
    let k = f64::from(m.experts_per_token);
    let routed = 2.0 * t.moe_tokens * k * m.expert_params / f64::from(stage_gpus) * s.moe_layers;
    let dense = 2.0 * t.rank_tokens() * s.replicated_params + 2.0 * t.logit_rows * s.head_params;
    let per_layer = t.decode
        * m.attended_tokens(t.decode_context)
        * m.decode_attention_flops_per_context
        + t.prefill * m.attended_tokens(t.prefill_context) * m.prefill_attention_flops_per_context;
    let touched_experts = f64::from(m.experts) * m.expert_fraction_touched(t.moe_tokens);
    let expert_rows = if touched_experts > 0.0 {
        t.moe_tokens * k / touched_experts
    } else {
        0.0
    };
    StepFlops {
        dense,
        routed,
        attention: s.layers * per_layer / f64::from(tp),
        expert_rows,
    }
}

/// Fraction of a GEMM's large-matrix efficiency reached with `rows` rows (tokens): tiles are
/// `half_rows`-sized, so a GEMM with few rows wastes most of each tile:
/// `rows / (rows + half_rows)` (a saturating ramp; docs/model.md, "Compute").
pub fn row_efficiency(rows: f64, half_rows: f64) -> f64 {
    if rows <= 0.0 {
        1.0
    } else {
        rows / (rows + half_rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use crate::perf::tests::{facts, layout};

    #[test]
    fn gemm_rows_ramp() {
        assert_eq!(row_efficiency(64.0, 64.0), 0.5);
        assert!(row_efficiency(8192.0, 64.0) > 0.99);
        assert_eq!(row_efficiency(0.0, 64.0), 1.0);
    }

    /// Formats as engines serve them: natively, weight-only on a stated class, or not at all.
    #[test]
    fn formats_as_engines_serve_them() {
        let c = Catalog::builtin().unwrap();
        let class = |g: &str, d: &str| {
            compute_class(c.gpu(g).unwrap(), c.dtype(d).unwrap(), &c.calibration)
                .map(|(class, _)| class)
        };
        assert_eq!(class("h100-sxm", "fp8"), Some(ComputeClass::Fp8));
        // vLLM's Marlin runs FP8 checkpoints on Ampere weight-only.
        assert_eq!(class("a100-80gb", "fp8"), Some(ComputeClass::Bf16));
        assert_eq!(class("b200", "nvfp4"), Some(ComputeClass::Fp4));
        // MI355X has FP4 tensor cores for MXFP4; NVFP4 only through emulation, which no one
        // serves with.
        assert_eq!(class("mi355x", "mxfp4"), Some(ComputeClass::Fp4));
        assert_eq!(class("mi355x", "nvfp4"), None);
        // NVFP4 on Hopper and MI300X: W4A16 only (Marlin, Petit), never FP8 activations.
        assert_eq!(class("h100-sxm", "nvfp4"), Some(ComputeClass::Bf16));
        assert_eq!(class("mi300x", "nvfp4"), Some(ComputeClass::Bf16));
        // W4A8 on Hopper only; Blackwell runs INT4 weights W4A16.
        assert_eq!(class("h100-sxm", "int4"), Some(ComputeClass::Fp8));
        assert_eq!(class("b200", "int4"), Some(ComputeClass::Bf16));
        // B300 cut INT8 to 153.5 TOP/s; INT8 weights run on bf16 tensor cores instead.
        assert_eq!(class("b300", "int8"), Some(ComputeClass::Bf16));
        // No engine serves per-tensor FP4.
        for g in &c.gpus {
            assert_eq!(class(&g.id, "fp4"), None, "{}", g.id);
        }
        // A weight-only GEMM on H100's FP8 tensor cores reaches 0.75 of the native FP8 rate.
        let h100 = c.gpu("h100-sxm").unwrap();
        let rate = |d: &str| {
            compute_class(h100, c.dtype(d).unwrap(), &c.calibration)
                .unwrap()
                .1
        };
        assert!((rate("int4") - 0.75 * rate("fp8")).abs() < 1e-6 * rate("fp8"));
    }

    /// gpt-oss publishes MXFP4 experts (4 + 8/32 = 4.25 bits): they stay MXFP4 under an FP8 or
    /// bf16 sweep format, and run weight-only, at the bf16 rate on Hopper and the FP8 rate on
    /// Blackwell (MXFP8 activations), never faster than the sweep format. INT4 (4.125 bits) is a
    /// narrower re-quantization and applies as asked.
    #[test]
    fn published_mxfp4_experts_by_hand() {
        let c = Catalog::builtin().unwrap();
        let cal = Calibration {
            serving_gemm_efficiency: 0.8,
            ..c.calibration
        };
        let mxfp4 = c.dtype("mxfp4").unwrap();
        let at = |g: &str, d: &str, ckpt: Option<&Dtype>| {
            let (flops, bytes, _) =
                expert_compute(c.gpu(g).unwrap(), c.dtype(d).unwrap(), ckpt, &cal).unwrap();
            (flops, bytes)
        };
        let close = |a: (f64, f64), b: (f64, f64)| {
            assert!(
                (a.0 - b.0).abs() < 1e-6 * b.0 && a.1 == b.1,
                "{a:?} vs {b:?}"
            )
        };
        // H100 bf16: 989 TFLOP/s x 0.78 (gemm_bf16) x 0.8 (serving).
        close(
            at("h100-sxm", "fp8", Some(mxfp4)),
            (989e12 * 0.78 * 0.8, 0.53125),
        );
        // B200: FP8 4500 x 0.75 x 0.8 = 2700 TFLOP/s, below its FP4 path 9000 x 0.7 x 0.8.
        close(
            at("b200", "mxfp4", Some(mxfp4)),
            (4500e12 * 0.75 * 0.8, 0.53125),
        );
        // A bf16 sweep caps the rate at bf16: 2250 x 0.75 x 0.8.
        close(
            at("b200", "bf16", Some(mxfp4)),
            (2250e12 * 0.75 * 0.8, 0.53125),
        );
        // Re-quantized to INT4 (W4A8 on FP8 tensor cores, weight-only at 0.75 of their rate on
        // Hopper): the format's own path and bytes.
        close(
            at("h100-sxm", "int4", Some(mxfp4)),
            (1979e12 * 0.75 * 0.8 * 0.75, 4.125 / 8.0),
        );
        // No published format: experts like every linear layer.
        close(at("h100-sxm", "fp8", None), (1979e12 * 0.75 * 0.8, 1.0));
    }

    /// One decode token of llama-3.1-70b at batch 1 costs about 2 x 70B FLOPs (minus the input
    /// embedding lookup) plus attention over its context.
    #[test]
    fn dense_decode_flops_by_hand() {
        let m = facts("llama-3.1-70b");
        let l = layout(1, 1, 1, 1);
        let [s, _] = StageParams::bounding_stages(&m, &l);
        let t = StepTokens {
            decode: 1.0,
            sequences: 1.0,
            decode_context: 1000.0,
            prefill: 0.0,
            busiest_prefill: 0.0,
            prefill_context: 0.0,
            moe_tokens: 1.0,
            logit_rows: 1.0,
        };
        let f = step_flops(&m, &s, 1, 1, &t);
        let non_embedding = 70.55e9 - 128_256.0 * 8192.0;
        assert!(
            (f.linear() - 2.0 * non_embedding).abs() / f.linear() < 1e-3,
            "{}",
            f.linear()
        );
        // 80 layers x 1000 context x 4 x 64 heads x 128 dims.
        assert_eq!(f.attention, 80.0 * 1000.0 * 4.0 * 64.0 * 128.0);
    }

    /// deepseek-v3 with 256 experts over 8 GPUs: each GPU computes the routed work of
    /// tokens x 8 experts / 8 GPUs.
    #[test]
    fn moe_flops_count_routed_experts_only() {
        let m = facts("deepseek-v3");
        let l = layout(1, 1, 8, 1);
        let [s, _] = StageParams::bounding_stages(&m, &l);
        let t = StepTokens {
            decode: 0.0,
            sequences: 0.0,
            decode_context: 0.0,
            prefill: 0.0,
            busiest_prefill: 0.0,
            prefill_context: 0.0,
            moe_tokens: 64.0,
            logit_rows: 0.0,
        };
        let f = step_flops(&m, &s, 1, 8, &t);
        let expert = 3.0 * 7168.0 * 2048.0;
        assert_eq!(f.routed, 2.0 * 64.0 * 8.0 * expert / 8.0 * 58.0);
        assert_eq!(f.dense, 0.0);
        // 64 tokens x 8 choices over the ~223 of 256 experts they touch: ~2.3 rows per expert.
        assert!((f.expert_rows - 512.0 / (256.0 * m.expert_fraction_touched(64.0))).abs() < 1e-9);
    }
}
