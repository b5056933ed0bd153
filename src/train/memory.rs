//! Bytes one GPU holds while training: its shard of the weights, gradients and optimizer state
//! (by ZeRO stage), and the activations its pipeline stage keeps for the backward pass. The
//! busiest GPU is the first pipeline stage: it holds the most microbatches in flight.

use crate::catalog::Model;

use super::{Layout, Precision, Recompute};

/// Bytes per parameter of mixed-precision training with Adam, as Megatron-Core keeps them with
/// 16-bit gradients (its `DistributedDataParallelConfig` default `grad_reduce_in_fp32 = False`):
/// bf16 weights and gradient buffer, and for the optimizer fp32 main gradients, master weights,
/// Adam momentum and variance. Megatron-LM `docs/source/api-guide/dist_optimizer.md`, "bytes
/// per parameter": 20 without and 4 + 16/d with the distributed optimizer (ZeRO-1); ZeRO,
/// Rajbhandari et al. 2020 (arXiv:1910.02054) section 3.1 counts 16 with the main gradients
/// left out.
pub const WEIGHT_BYTES: f64 = 2.0;
pub const GRADIENT_BYTES: f64 = 2.0;
pub const OPTIMIZER_BYTES: f64 = 16.0;
/// What a checkpoint saves per parameter: the bf16 weight, and of the optimizer state the fp32
/// master weight, Adam momentum and variance (2 + 4 + 4 + 4); the fp32 main-gradient buffer is
/// rebuilt by the next backward pass (Megatron-LM distributed checkpointing saves the model's
/// parameters and the optimizer's `param`, `exp_avg` and `exp_avg_sq`).
pub const CHECKPOINT_BYTES: f64 = WEIGHT_BYTES + 12.0;
/// FP8 training (Transformer Engine) keeps an fp8 copy of each weight beside the bf16 one.
pub const FP8_WEIGHT_COPY_BYTES: f64 = 1.0;

/// Bytes per activation element (bf16).
const ACTIVATION_BYTES: f64 = 2.0;
/// Bytes per logit kept for the loss: bf16 logits and their fp32 softmax (Megatron's fused
/// vocab-parallel cross-entropy).
const LOGIT_BYTES: f64 = 6.0;

/// Fraction of HBM training may use; the rest is the CUDA context, NCCL buffers and caching-
/// allocator fragmentation. PyTorch reserves memory in blocks it cannot always reuse; Megatron
/// and NeMo tuning guides keep peak allocated memory about 10 % under capacity. This is the same
/// fraction as the inference engine's `gpu_memory_utilization` (perf::memory).
pub const MEMORY_UTILIZATION: f64 = 0.90;

/// Parameters one GPU of the first pipeline stage holds: its layers' dense weights over tp,
/// their routed experts over ep x tp, and the embedding (vocab-parallel over tp). The last
/// stage holds the LM head instead, the same size unless tied.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShardParams {
    pub dense: f64,
    pub expert: f64,
}

impl ShardParams {
    pub fn new(model: &Model, l: &Layout) -> Option<ShardParams> {
        let p = model.param_counts()?;
        let (tp, ep) = (f64::from(l.tp), f64::from(l.ep));
        let share = stage_layers(model, l) / f64::from(model.layers);
        let embedding = p.embedding.max(p.lm_head);
        let mut dense = p.non_expert_layers() * share / tp + embedding / tp;
        if l.pp == 1 {
            dense += p.lm_head / tp;
        }
        let expert = p.routed_experts_total(model.experts()) * share / (ep * tp);
        Some(ShardParams { dense, expert })
    }

    pub fn total(&self) -> f64 {
        self.dense + self.expert
    }
}

/// Transformer layers of the busiest pipeline stage: `v` model chunks of `ceil(layers / (pp v))`
/// layers each. Megatron-Core places the remainder of an uneven split on the first and last
/// stages or leaves them short (`decoder_first_pipeline_num_layers`); the busiest stage holds
/// at most this many either way.
pub fn stage_layers(model: &Model, l: &Layout) -> f64 {
    let chunks = f64::from(l.pp * l.virtual_stages);
    f64::from(l.virtual_stages) * (f64::from(model.layers) / chunks).ceil()
}

/// Weight, gradient and optimizer bytes on one GPU. ZeRO stage 1 shards the optimizer state,
/// stage 2 also the gradients, stage 3 also the weights (ZeRO, section 5), each over the data-
/// parallel replicas of the parameter: dense weights over dp x cp (Megatron's distributed
/// optimizer shards over the data- and context-parallel group), routed experts over
/// dp x cp / ep (the expert-data-parallel group).
pub fn state_bytes(shard: &ShardParams, l: &Layout) -> f64 {
    let replicas_dense = f64::from(l.dp * l.cp);
    let replicas_expert = (replicas_dense / f64::from(l.ep)).max(1.0);
    let per_param = |replicas: f64| {
        let (w, g, o) = (WEIGHT_BYTES, GRADIENT_BYTES, OPTIMIZER_BYTES);
        let copy = match l.precision {
            Precision::Fp8 => FP8_WEIGHT_COPY_BYTES,
            Precision::Bf16 => 0.0,
        };
        match l.zero_stage {
            0 => w + copy + g + o,
            1 => w + copy + g + o / replicas,
            2 => w + copy + (g + o) / replicas,
            // ZeRO-3 shards the weights, and with them their fp8 copies.
            _ => (w + copy + g + o) / replicas,
        }
    };
    shard.dense * per_param(replicas_dense) + shard.expert * per_param(replicas_expert)
}

/// Activation bytes one transformer layer keeps per microbatch on one GPU, after tensor and
/// sequence parallelism (divide by tp) and context parallelism (divide the sequence by cp).
/// Korthikanti et al. 2022 (arXiv:2205.05198), section 4: per layer `s b h (34 + 5 a s / h)`
/// bytes for GPT with 16-bit activations. We count the same tensors for the model's own shapes,
/// with flash attention (Dao et al. 2022), which keeps the output and the softmax statistics
/// rather than the `a s^2` score matrices, and without dropout (modern LLM recipes set it to 0):
/// - attention: two norm inputs (counted here), the QKV input, Q, K and V, and the attention
///   output that feeds the output projection;
/// - MLP: its input, the up (and gate) projection outputs and the activation output; an MoE
///   layer keeps them for each of a token's routed experts and for its shared experts.
///
/// Selective recomputation recomputes the cheap element-wise outputs (norms, activation
/// function); full recomputation keeps only each layer's input.
pub fn layer_activation_bytes(model: &Model, l: &Layout, seq_len: f64, moe_layer: bool) -> f64 {
    let tokens = f64::from(l.microbatch) * seq_len / f64::from(l.cp);
    let h = f64::from(model.hidden);
    if l.recompute == Recompute::Full {
        return ACTIVATION_BYTES * tokens * h / f64::from(l.tp);
    }
    let q = f64::from(model.heads * model.head_dim);
    let kv = match model.attention {
        crate::catalog::Attention::Mla => q,
        _ => f64::from(model.kv_heads * model.head_dim),
    };
    let norms = 2.0 * h;
    let attention = h + q + 2.0 * kv + q;
    let gated = model.mlp.matrices() == 3.0;
    let mlp = |ffn: f64, copies: f64| -> f64 {
        let up = if gated { 2.0 * ffn } else { ffn };
        // Input, up (and gate) outputs, activation output.
        h + copies * (up + ffn)
    };
    let mlp_elems = if moe_layer {
        let ffn = f64::from(model.moe_ffn_hidden.unwrap_or(0));
        let shared = f64::from(model.shared_experts.unwrap_or(0));
        let routed = f64::from(model.experts_per_token());
        // The routed experts' inputs: each token permuted to its experts, k copies.
        mlp(ffn, routed + shared) + routed * h
    } else {
        mlp(f64::from(model.ffn_hidden.unwrap_or(0)), 1.0)
    };
    let mut elems = norms + attention + mlp_elems;
    if l.recompute == Recompute::Selective {
        // Norm outputs and the activation-function output are recomputed.
        let ffn = if moe_layer {
            f64::from(model.moe_ffn_hidden.unwrap_or(0))
                * (f64::from(model.experts_per_token())
                    + f64::from(model.shared_experts.unwrap_or(0)))
        } else {
            f64::from(model.ffn_hidden.unwrap_or(0))
        };
        elems -= norms + ffn;
    }
    ACTIVATION_BYTES * tokens * elems / f64::from(l.tp)
}

/// Microbatches whose activations the first pipeline stage holds at its peak: `pp` in the 1F1B
/// schedule (Narayanan et al. 2021, section 2.2.1), times `1 + (pp - 1) / (pp x v)` with `v`
/// interleaved virtual stages (Korthikanti et al. 2022, section 4.2.3); never more than the
/// step's microbatches.
pub fn microbatches_in_flight(l: &Layout, microbatches: f64) -> f64 {
    let (p, v) = (f64::from(l.pp), f64::from(l.virtual_stages));
    let interleave = if l.virtual_stages > 1 {
        1.0 + (p - 1.0) / (p * v)
    } else {
        1.0
    };
    (p * interleave).min(microbatches.max(1.0))
}

/// Peak bytes on the busiest GPU.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Footprint {
    pub state_bytes: f64,
    pub activation_bytes: f64,
    /// Logits of the microbatch whose loss the last stage computes.
    pub logit_bytes: f64,
}

impl Footprint {
    pub fn total(&self) -> f64 {
        self.state_bytes + self.activation_bytes + self.logit_bytes
    }
}

pub fn footprint(
    model: &Model,
    l: &Layout,
    seq_len: f64,
    microbatches: f64,
    shard: &ShardParams,
) -> Footprint {
    let p = model.param_counts().expect("checked by the caller");
    let layers = stage_layers(model, l);
    let moe_share = f64::from(p.moe_layers) / f64::from(model.layers);
    let per_layer = (1.0 - moe_share) * layer_activation_bytes(model, l, seq_len, false)
        + moe_share * layer_activation_bytes(model, l, seq_len, true);
    let mut working = 0.0;
    if l.recompute == Recompute::Full {
        // The layer being recomputed holds its whole working set once.
        let full = Layout {
            recompute: Recompute::None,
            ..*l
        };
        working = layer_activation_bytes(model, &full, seq_len, p.moe_layers > 0);
    }
    let tokens = f64::from(l.microbatch) * seq_len / f64::from(l.cp);
    let vocab = f64::from(model.vocab.unwrap_or(0));
    let logits = LOGIT_BYTES * tokens * vocab / f64::from(l.tp);
    // The first stage holds the most microbatches; the last one holds one microbatch in
    // flight at its peak, plus the logits. With one stage they are the same GPU.
    let first = layers * per_layer * microbatches_in_flight(l, microbatches) + working;
    let last = layers * per_layer + working;
    let (activation_bytes, logit_bytes) = if l.pp == 1 || first > last + logits {
        (first, if l.pp == 1 { logits } else { 0.0 })
    } else {
        (last, logits)
    };
    Footprint {
        state_bytes: state_bytes(shard, l),
        activation_bytes,
        logit_bytes,
    }
}
