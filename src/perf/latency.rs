//! Time of one engine step per pipeline stage, and from it time per output token, time to first
//! token and throughput. Formulas: docs/model.md, "Step time", "Decode", "Prefill".
//!
//! Decode runs continuous batching in steady state: each step advances every running sequence by
//! one token and, in the same step, prefills `input/output` prompt tokens per running sequence
//! (chunked prefill piggybacking on decode, Agrawal et al. 2024, Sarathi-Serve), so the weights
//! read once per step serve both. Each kernel class is its own roofline, the slower of its compute
//! and its memory traffic (Williams et al. 2009; Pope et al. 2022, section 2): the linear layers
//! (GEMMs against the weights) and attention (against the KV cache) run one after the other, so
//! their times add. Tensor-parallel all-reduces and expert all-to-alls sit on the critical path
//! between layers and are not overlapped (TensorRT-LLM and vLLM issue them synchronously in
//! decode). Each engine iteration also pays a fixed framework overhead (scheduling, sampling,
//! kernel launches outside CUDA graphs).

use super::ModelFacts;
use super::adp_balance::AdpBalance;
use super::comm::{ExpertExchange, group_all_reduce_s, point_to_point_s, reduce_scatter_s};
use super::compute::{StepTokens, row_efficiency, step_flops};
use super::iteration::{GpuIteration, IterationCost, launches};
use super::kernels::{GemmShape, Split, StepKernels};
use super::layout::{Layout, Tier};
use super::memory::{ACTIVATION_BYTES, LOGIT_BYTES, StageParams, kv_bytes_per_sequence};
use super::network::SpineTiers;
use super::serving::{Spread, blom_largest_normal, busiest_of_poisson, length_biased_half};
use crate::catalog::kernels::MoeParams;

/// Hardware rates a step runs at, for one GPU of one platform and weight format.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rates {
    /// Achievable FLOP/s of the weight format's tensor cores on large GEMMs.
    pub linear_flops_per_s: f64,
    /// Achievable bf16 FLOP/s (attention).
    pub attention_flops_per_s: f64,
    /// Achievable bf16 FLOP/s of linear layers in a serving engine: the LM head and the MoE
    /// router, which run in bf16 whatever the weight format, where no bf16 GEMM was measured.
    pub bf16_linear_flops_per_s: f64,
    /// Achievable HBM bytes/s of streaming kernels (GEMM weight reads, elementwise kernels).
    pub hbm_bytes_per_s: f64,
    /// HBM bytes/s attention kernels reach reading the KV cache.
    pub attention_bytes_per_s: f64,
    pub weight_bytes_per_param: f64,
    /// Achievable FLOP/s and bytes per parameter of the routed-expert GEMMs: the weight format's,
    /// or the published checkpoint's where experts come pre-quantized
    /// ([`super::compute::expert_compute`]).
    pub expert_flops_per_s: f64,
    pub expert_bytes_per_param: f64,
    /// Bytes per element of a token's hidden state in the expert dispatch (the combine is bf16).
    pub expert_dispatch_bytes: f64,
    pub kv_bytes_per_element: f64,
    pub scaleup: Tier,
    pub scaleout: Tier,
    /// The scale-out tier as each collective of the layout sees it through the spine.
    pub spine: SpineTiers,
    /// The layout's expert all-to-all over its ep group.
    pub expert_exchange: ExpertExchange,
    /// Whether the engine gathers an MoE layer's tokens on every GPU of the stage and
    /// reduce-scatters its outputs instead of an all-to-all
    /// ([`crate::vocab::ServingEngine::gathers_expert_tokens`]).
    pub gathers_expert_tokens: bool,
    /// Whether small all-reduces may use the one-shot algorithm (switched or full-mesh scale-up).
    pub one_shot_all_reduce: bool,
    /// Whether each row-parallel GEMM runs fused with its tensor-parallel all-reduce
    /// ([`fused_all_reduce_s`]).
    pub gemm_all_reduce_fusion: bool,
    /// Whether the engine may overlap two micro-batches' kernels with their MoE dispatch and
    /// combine ([`two_batch_overlap`]).
    pub two_batch_overlap: bool,
    /// GPUs per scale-up domain: a tensor-parallel group wider than one spans whole domains and
    /// all-reduces over both tiers.
    pub domain_gpus: u32,
    /// Rows at which a GEMM reaches half its large-matrix efficiency (calibration).
    pub gemm_half_rows: f64,
    /// Fixed cost of one engine iteration, seconds (calibration).
    pub step_overhead_s: f64,
    /// Grouped-expert GEMM efficiency relative to dense GEMMs (calibration).
    pub moe_gemm_efficiency: f64,
    /// Measured kernel surfaces of this GPU, engine and formats; `None` without tables (the
    /// roofline above times every kernel then).
    pub kernels: Option<StepKernels>,
    /// The engine's per-iteration cost from its parts where the kernels are measured (`None`:
    /// `step_overhead_s` per iteration instead).
    pub iteration: Option<IterationCost>,
}

/// Seconds one stage spends on a step, by resource.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct StageTime {
    /// Tensor-core time of all kernels.
    pub compute_s: f64,
    /// HBM time of all kernels.
    pub memory_s: f64,
    /// Linear-layer roofline plus attention roofline.
    pub kernels_s: f64,
    pub comm_s: f64,
}

impl StageTime {
    /// Kernel time plus the communication on the critical path.
    pub fn total_s(&self) -> f64 {
        self.kernels_s + self.comm_s
    }
}

/// Time one GPU of stage `s` takes for a step carrying `t`: the step as one batch, or, where
/// the engine overlaps two micro-batches and that is faster, as two ([`two_batch_overlap`]).
pub fn stage_time(
    m: &ModelFacts,
    l: &Layout,
    s: &StageParams,
    r: &Rates,
    t: &StepTokens,
) -> StageTime {
    let one = serial_stage_time(m, l, s, r, t);
    if !r.two_batch_overlap {
        return one.time;
    }
    let two = two_batch_overlap(s, &serial_stage_time(m, l, s, r, &t.halved()));
    if two.total_s() < one.time.total_s() {
        two
    } else {
        one.time
    }
}

/// A stage's step as one batch, with its MoE dispatch and combine apart from the rest of its
/// communication.
struct SerialStage {
    time: StageTime,
    /// Seconds of `time.comm_s` that are the expert dispatch and combine.
    exchange_s: f64,
}

/// Two-batch overlap (DeepSeek's decode micro-batching; SGLang `--enable-two-batch-overlap`,
/// vLLM `--enable-dbo`, "Dual Batch Overlap" in its design docs, for data-parallel attention
/// with expert parallelism): the step's tokens split into two micro-batches, and while one
/// runs its kernels the other's MoE dispatch or combine is in flight. With `c` the seconds of
/// one micro-batch's kernels and other communication per layer and `x` its dispatch and combine,
/// the two alternate, one layer taking `2 max(c, x)` once the pipeline is full, plus
/// `min(c, x)` to fill it (two jobs through two alternating resources; Johnson 1954, "Optimal
/// two- and three-stage production schedules with setup times included"): over the stage,
/// `2 max(C, X) + min(C, X) / layers` with `C`, `X` the half-batch's whole-stage times
/// (`half`, timed on the same surfaces at half the tokens, so each micro-batch reads the
/// weights again and runs its GEMMs at half the rows: why overlap loses at small batches,
/// DeepEP PR 390: "a positive throughput gain is only observed at larger batch sizes").
fn two_batch_overlap(s: &StageParams, half: &SerialStage) -> StageTime {
    let compute = half.time.kernels_s + half.time.comm_s - half.exchange_s;
    let exchange = half.exchange_s;
    let total = 2.0 * compute.max(exchange) + compute.min(exchange) / s.layers.max(1.0);
    let kernels_s = 2.0 * half.time.kernels_s;
    StageTime {
        compute_s: 2.0 * half.time.compute_s,
        memory_s: 2.0 * half.time.memory_s,
        kernels_s,
        comm_s: total - kernels_s,
    }
}

/// [`stage_time`] of the step as one batch.
fn serial_stage_time(
    m: &ModelFacts,
    l: &Layout,
    s: &StageParams,
    r: &Rates,
    t: &StepTokens,
) -> SerialStage {
    // Every part but the routed experts runs on each attention rank over its own tokens, and
    // the busiest rank sets the pace; the experts see all ranks' tokens (`moe_tokens`).
    let paced = StepTokens {
        prefill: t.busiest_prefill,
        ..*t
    };
    let t = &paced;
    let flops = step_flops(m, s, l.tp, l.stage_gpus, t);
    let imbalance = m.expert_imbalance(t.moe_tokens, l.ep);
    let gemm = |rows: f64| r.linear_flops_per_s * row_efficiency(rows, r.gemm_half_rows);
    let expert_gemm = r.expert_flops_per_s * row_efficiency(flops.expert_rows, r.gemm_half_rows);
    let dense_compute_s = flops.dense / gemm(t.rank_tokens());
    let routed_compute_s = flops.routed * imbalance / (expert_gemm * r.moe_gemm_efficiency);
    let attention_compute_s = flops.attention / r.attention_flops_per_s;

    let touched = m.expert_fraction_touched(t.moe_tokens);
    let dense_bytes =
        s.replicated_params * r.weight_bytes_per_param + s.head_params * ACTIVATION_BYTES;
    let expert_bytes =
        s.moe_layers * s.expert_params_per_layer * touched * r.expert_bytes_per_param;
    let kv_read = t.sequences
        * kv_bytes_per_sequence(m, l.tp, s.layers, r.kv_bytes_per_element, t.decode_context);
    let kv_written =
        t.prefill * kv_bytes_per_sequence(m, l.tp, s.layers, r.kv_bytes_per_element, 1.0);
    let dense_memory_s = dense_bytes / r.hbm_bytes_per_s;
    let expert_memory_s = expert_bytes / r.hbm_bytes_per_s;
    let attention_memory_s = (kv_read + kv_written) / r.attention_bytes_per_s;

    // Norms, residual adds, RoPE, gated activations, MoE permutes and the logits are separate,
    // memory-bound kernels between the GEMMs: their traffic adds time of its own.
    let tp = f64::from(l.tp);
    let per_token = s.layers * (m.norm_io_per_token_layer + m.attention_io_per_token_layer / tp)
        + s.dense_layers * m.dense_mlp_io_per_token / tp
        + s.moe_layers * m.shared_io_per_token / tp;
    let assignments =
        t.moe_tokens * f64::from(m.experts_per_token) / f64::from(l.stage_gpus) * imbalance;
    let activation_bytes = (t.rank_tokens() * per_token
        + s.moe_layers * assignments * m.expert_io_per_assignment)
        * ACTIVATION_BYTES
        + t.logit_rows * s.head_params / m.hidden * LOGIT_BYTES;
    let activation_s = activation_bytes / r.hbm_bytes_per_s;

    let kernels_s = match &r.kernels {
        None => {
            (dense_compute_s + routed_compute_s).max(dense_memory_s + expert_memory_s)
                + attention_compute_s.max(attention_memory_s)
                + activation_s
        }
        Some(k) => {
            let measured = measured_kernels_s(m, l, s, r, k, t, imbalance);
            measured
                .linear_s
                .unwrap_or_else(|| dense_compute_s.max(dense_memory_s))
                + measured
                    .experts_s
                    .unwrap_or_else(|| routed_compute_s.max(expert_memory_s))
                + measured
                    .attention_s
                    .unwrap_or_else(|| attention_compute_s.max(attention_memory_s))
                + elementwise_s(m, l, s, r, t)
        }
    };

    let comm = layer_comm_s(m, l, s, r, t.rank_tokens(), t.decode > 0.0);
    SerialStage {
        time: StageTime {
            compute_s: dense_compute_s + routed_compute_s + attention_compute_s,
            memory_s: dense_memory_s + expert_memory_s + attention_memory_s + activation_s,
            kernels_s,
            comm_s: comm.total_s(),
        },
        exchange_s: comm.exchange_s,
    }
}

/// Seconds of tensor-parallel all-reduce a stage hides inside its GEMMs when each row-parallel
/// GEMM (attention output, MLP down projection) runs fused with the all-reduce of its output:
/// TensorRT-LLM's `gemm_allreduce_plugin` routes every `RowLinear` through one CUTLASS kernel
/// whose epilogue reduces the tiles across the group through NVLink multicast memory as they
/// are produced (`RowLinear.multiply_collect`, tensorrt_llm/layers/linear.py; "The GEMM +
/// AllReduce kernel fusion plugin", `PluginConfig`). A fused pair takes the longer of its GEMM
/// and its all-reduce instead of their sum, the bound of communication overlapped with
/// computation inside one kernel (Chang et al. 2024, "FLUX: Fast Software-based Communication
/// Overlap on GPUs Through Kernel Fusion", arXiv:2406.06858, section 3), so each layer hides
/// `min(GEMM, all-reduce)` per pair, `all_reduce` the group's measured one ([`layer_comm_s`]
/// passes it only for a group inside one scale-up domain: multicast memory does not cross it).
/// Only where the fusion is on and the GEMMs are measured.
fn fused_all_reduce_s(
    m: &ModelFacts,
    l: &Layout,
    s: &StageParams,
    r: &Rates,
    rank_tokens: f64,
    all_reduce: f64,
) -> f64 {
    if !r.gemm_all_reduce_fusion || rank_tokens <= 0.0 {
        return 0.0;
    }
    let Some(w) = r.kernels.as_ref().and_then(|k| k.gemm) else {
        return 0.0;
    };
    let tp = f64::from(l.tp);
    let row_split = |shapes: &[GemmShape]| -> f64 {
        shapes
            .iter()
            .filter(|g| g.split == Split::Row)
            .map(|g| StepKernels::gemms_s(w, std::slice::from_ref(g), rank_tokens, tp))
            .sum()
    };
    let g = &m.gemms;
    s.layers * row_split(&g.attention).min(all_reduce)
        + s.dense_layers * row_split(&g.dense_mlp).min(all_reduce)
}

/// Seconds of bf16 GEMMs of `shapes` at `rows` rows on one GPU of a tensor-parallel group of
/// `tp` by the roofline: each the longer of its FLOPs at the bf16 linear rate (derated for few
/// rows, [`row_efficiency`]) and its bf16 weights at the streaming HBM rate.
fn roofline_gemms_s(shapes: &[GemmShape], rows: f64, tp: f64, r: &Rates) -> f64 {
    if rows <= 0.0 {
        return 0.0;
    }
    let flops_per_s = r.bf16_linear_flops_per_s * row_efficiency(rows, r.gemm_half_rows);
    shapes
        .iter()
        .filter(|s| s.n > 0.0)
        .map(|s| {
            let (n, k) = s.on(tp);
            (2.0 * rows * n * k / flops_per_s).max(n * k * ACTIVATION_BYTES / r.hbm_bytes_per_s)
        })
        .sum()
}

/// The memory-bound kernels between measured GEMMs and attention kernels, which read and write
/// their own operands: per layer, two fused residual-add-and-norm kernels (the hidden state in
/// and out, twice: `8 h` elements per token) and the activation of the dense MLP or the shared
/// experts (`2 f` in and `f` out when gated, `f` and `f` when not, split over tp); the routed experts' activation and permutes
/// are inside the grouped-GEMM surface. Plus the fp32 logits of the rows sampled. Each kernel
/// takes at least [`ELEMENTWISE_KERNEL_MIN_S`].
fn elementwise_s(m: &ModelFacts, l: &Layout, s: &StageParams, r: &Rates, t: &StepTokens) -> f64 {
    let tp = f64::from(l.tp);
    let per_token = s.layers * 8.0 * m.hidden
        + s.dense_layers * m.dense_mlp_io_per_token / 2.0 / tp
        + s.moe_layers * m.shared_io_per_token / 2.0 / tp;
    let bytes = t.rank_tokens() * per_token * ACTIVATION_BYTES
        + t.logit_rows * s.head_params / m.hidden * LOGIT_BYTES;
    bytes / r.hbm_bytes_per_s + s.layers * ELEMENTWISE_KERNELS_PER_LAYER * ELEMENTWISE_KERNEL_MIN_S
}

/// Memory-bound kernels per layer besides the GEMMs and attention: two fused residual-add and
/// norm kernels and the gated activation (AIConfigurator's op list for Llama,
/// `aiconfigurator_core/sdk/models/llama.py`: `add_norm_1`, `add_norm_2`, `act_gate`).
pub const ELEMENTWISE_KERNELS_PER_LAYER: f64 = 3.0;

/// Shortest duration of such a kernel, seconds: AIConfigurator's
/// `mem_empirical_constant_latency` of 3 us for every NVIDIA system it models
/// (`aiconfigurator_core/systems/<system>.yaml`; an observed constant, not a datasheet figure).
pub const ELEMENTWISE_KERNEL_MIN_S: f64 = 3e-6;

/// Seconds of a step's kernels as the measured surfaces time them, per part; `None` for a part
/// the surfaces do not cover (its roofline applies).
struct MeasuredKernels {
    linear_s: Option<f64>,
    experts_s: Option<f64>,
    attention_s: Option<f64>,
}

fn measured_kernels_s(
    m: &ModelFacts,
    l: &Layout,
    s: &StageParams,
    r: &Rates,
    k: &StepKernels,
    t: &StepTokens,
    imbalance: f64,
) -> MeasuredKernels {
    let tp = f64::from(l.tp);
    let rows = t.rank_tokens();
    let g = &m.gemms;
    // The bf16 GEMMs (head, router) on their own surface where one was measured, else on the
    // roofline: AMD's tables measure the weight formats' GEMMs only (AITER's tuned bf16 rows
    // are for other GPUs), and they still time the layers that carry the weights.
    let bf16_s = |shapes: &[GemmShape], rows: f64| match k.gemm_bf16 {
        Some(bf16) => StepKernels::gemms_s(bf16, shapes, rows, tp),
        None => roofline_gemms_s(shapes, rows, tp, r),
    };
    let linear_s = k.gemm.map(|w| {
        let per_layer = |shapes: &[GemmShape]| StepKernels::gemms_s(w, shapes, rows, tp);
        let head = if s.head_params > 0.0 {
            bf16_s(std::slice::from_ref(&g.head), t.logit_rows)
        } else {
            0.0
        };
        s.layers * per_layer(&g.attention)
            + s.dense_layers * per_layer(&g.dense_mlp)
            + s.moe_layers * (per_layer(&g.moe_shared[..2]) + bf16_s(&g.moe_shared[2..], rows))
            + head
    });
    let experts_s = if s.moe_layers == 0.0 {
        Some(0.0)
    } else {
        let ep = f64::from(l.ep);
        let time = |e: &MoeParams, skewed: bool| {
            let imbalance = if skewed { 1.0 } else { imbalance };
            s.moe_layers
                * imbalance
                * StepKernels::experts_s(
                    e,
                    t.moe_tokens,
                    m.hidden,
                    m.moe_ffn_hidden,
                    m.mlp_matrices,
                    f64::from(m.experts_per_token),
                    f64::from(m.experts),
                    f64::from(l.stage_gpus) / ep,
                    ep,
                )
        };
        let routed = k.experts.map(|e| time(&e, k.experts_skewed));
        // A load balancer places the experts so the ranks' loads even out; the routing stays
        // as skewed. Where its effect was measured at the model's routing, the skewed time
        // takes the measured balanced/skewed ratio (SPEC.md 3.6a). Elsewhere it is bounded:
        // the faster of the model's routing and uniform routing with the multinomial spread
        // that remains ([`ModelFacts::expert_imbalance`]), never slower than no balancer, whose
        // placement it could keep, and at most the uniform time where the busiest rank's load
        // decides (many tokens). At few tokens the skewed table is the faster one, its popular
        // experts touching fewer weights than uniform routing.
        if !m.balances_experts(l.ep) {
            routed
        } else if let Some(balance) = k.expert_balance {
            routed.map(|skewed| {
                skewed
                    * balance.factor(
                        t.moe_tokens,
                        f64::from(m.experts_per_token),
                        f64::from(m.experts),
                        f64::from(l.ep),
                    )
            })
        } else {
            match (routed, k.experts_balanced) {
                (Some(skewed), Some(b)) => Some(skewed.min(time(&b, false))),
                (routed, _) => routed,
            }
        }
    };
    let heads = m.heads / tp;
    let kv_heads = (f64::from(m.kv_heads) / tp).max(1.0);
    // Each kind of layer (full attention, sliding window) at its own context: the surfaces are
    // not linear in the context.
    let decode = if t.sequences <= 0.0 {
        Some(0.0)
    } else if m.mla {
        k.decode_mla
            .map(|a| m.mean_over_layers(t.decode_context, |c| a.time_s(t.sequences, c, heads)))
    } else {
        k.decode_attention.map(|a| {
            m.mean_over_layers(t.decode_context, |c| {
                a.time_s(t.sequences, c, heads, kv_heads, m.head_dim)
            })
        })
    };
    // Prefill tokens as whole prompts of `2 x prefill_context` tokens (a chunk attends to its
    // prompt's earlier tokens, so the work per prompt is the same). A sliding-window layer takes
    // the share of a full layer's time the table measured for its window (SPEC.md 3.2a), else
    // the share of the prompt it attends to.
    let prompt = 2.0 * t.prefill_context;
    // The surfaces time whole prompts run together. A step that folds a fraction of a prompt
    // (fewer prompt tokens than one prompt) carries that share of one prompt's time: the
    // kernel's launch and its serial pass along the prompt (`t0_s`, `serial_per_s`) belong to
    // the prompt, not to every step its tokens are spread over.
    let prefill = if t.prefill <= 0.0 || prompt <= 0.0 {
        Some(0.0)
    } else {
        let prompts = t.prefill / prompt;
        let batch = prompts.max(1.0);
        let share = prompts / batch;
        if m.mla {
            k.prefill_mla
                .map(|a| share * a.time_s(batch, prompt, heads))
        } else {
            k.prefill_attention.map(|a| {
                let layers = m.mean_of_kinds(1.0, || {
                    a.window_share(prompt, m.sliding_window)
                        .unwrap_or(t.prefill_context.min(m.sliding_window) / t.prefill_context)
                });
                share * a.time_s(batch, prompt, heads, kv_heads, m.head_dim) * layers
            })
        }
    };
    MeasuredKernels {
        linear_s,
        experts_s,
        attention_s: decode.zip(prefill).map(|(d, p)| s.layers * (d + p)),
    }
}

/// Communication of one step through the stage's layers: an all-reduce after attention and after
/// each dense MLP when tp > 1; for MoE layers, an all-reduce inside the tensor-parallel group when
/// tokens are replicated over it (attention_dp = 1, experts sharded within the group as
/// TensorRT-LLM does), else all-to-all dispatch and combine over the ep group plus the
/// tensor-parallel all-reduce of the shared path.
///
/// Where the engine's own all-reduce was measured at the group's size inside one scale-up
/// domain, its surface times the tensor-parallel all-reduce: as captured in CUDA graphs in steps
/// that decode, as launched eagerly in prefill-only steps. Likewise the engine's measured MoE
/// dispatch and combine time the all-to-all of an expert-parallel group inside the domain: the
/// low-latency kernels in steps that decode, the high-throughput ones in prefill-only steps. An
/// engine that fuses its row-parallel GEMMs with their all-reduce hides part of a measured one
/// ([`fused_all_reduce_s`]).
fn layer_comm_s(
    m: &ModelFacts,
    l: &Layout,
    s: &StageParams,
    r: &Rates,
    rank_tokens: f64,
    decoding: bool,
) -> StageComm {
    let message = rank_tokens * m.hidden * ACTIVATION_BYTES;
    let measured = r.kernels.as_ref().and_then(|k| {
        let table = if decoding {
            &k.all_reduce_graph
        } else {
            &k.all_reduce_eager
        };
        (l.tp > 1 && l.tp <= r.domain_gpus)
            .then(|| table.time_s(l.tp, message))
            .flatten()
    });
    let tp_all_reduce = measured.unwrap_or_else(|| {
        group_all_reduce_s(
            l.tp,
            r.domain_gpus,
            message,
            r.scaleup,
            r.spine.all_reduce,
            r.one_shot_all_reduce,
        )
    });
    let attention = s.layers * tp_all_reduce;
    let dense = s.dense_layers * tp_all_reduce;
    // Shared experts run tensor-parallel inside the attention rank and need their own
    // all-reduce; without them the combine all-to-all returns finished outputs.
    let shared = if m.has_shared_experts {
        tp_all_reduce
    } else {
        0.0
    };
    // The MoE layers' all-reduce (tokens replicated over the tensor-parallel group) or their
    // shared experts' all-reduce, and the expert dispatch and combine.
    let (moe_all_reduce, exchange) = if s.moe_layers == 0.0 {
        (0.0, 0.0)
    } else if l.attention_dp == 1 {
        (s.moe_layers * tp_all_reduce, 0.0)
    } else {
        (
            s.moe_layers * shared,
            s.moe_layers * expert_exchange_s(m, l, r, rank_tokens, decoding),
        )
    };
    // What GEMMs fused with their all-reduce hide of it (a measured group only).
    let fused = measured.map_or(0.0, |ar| fused_all_reduce_s(m, l, s, r, rank_tokens, ar));
    StageComm {
        all_reduce_s: attention + dense + moe_all_reduce - fused,
        exchange_s: exchange,
    }
}

/// Seconds of one MoE layer's exchange between the attention-DP ranks and the experts: the
/// engine's token gather where it gathers ([`token_gather_s`]); else its all-to-all, measured
/// inside the NVLink domain (TensorRT-LLM's own NVLink kernels where measured, SPEC.md 3.9a,
/// else the DeepEP-style dispatch and combine, SPEC.md 3.9), otherwise the α-β all-to-all of
/// `rank_tokens/tp` tokens each way (dispatch format out, bf16 back).
fn expert_exchange_s(
    m: &ModelFacts,
    l: &Layout,
    r: &Rates,
    rank_tokens: f64,
    decoding: bool,
) -> f64 {
    if r.gathers_expert_tokens {
        return token_gather_s(m, l, r, rank_tokens);
    }
    let tokens = rank_tokens / f64::from(l.tp);
    let copies = tokens * f64::from(m.experts_per_token);
    let measured = r
        .kernels
        .as_ref()
        .filter(|_| l.ep > 1 && l.ep <= r.domain_gpus)
        .and_then(|k| {
            k.nvlink_all_to_all
                .and_then(|x| x.time_s(l.ep, copies * m.hidden))
                .or_else(|| k.exchange.map(|x| x.time_s(decoding, copies, m.hidden)))
        });
    measured.unwrap_or_else(|| {
        let a2a = |bytes_per_element: f64| {
            r.expert_exchange.time_s(
                tokens,
                m.hidden * bytes_per_element,
                [r.scaleup, r.scaleup, r.spine.all_to_all],
            )
        };
        a2a(r.expert_dispatch_bytes) + a2a(ACTIVATION_BYTES)
    })
}

/// Bytes a token carries besides its hidden state when it is gathered for the experts: the ids
/// of its top-k experts (int32) and their routing weights (fp32), gathered with it
/// (`CutlassFusedMoE.forward_chunk`, `tensorrt_llm/_torch/modules/fused_moe/fused_moe_cutlass.py`).
pub const GATHERED_ROUTING_BYTES_PER_EXPERT: f64 = 8.0;

/// Seconds of one MoE layer's token gather on a stage whose engine runs no all-to-all
/// ([`Rates::gathers_expert_tokens`]): every GPU all-gathers the `rank_tokens * adp` tokens of
/// all attention ranks in the experts' activation format with their routing, and
/// reduce-scatters the bf16 outputs, on the GPU's measured NCCL collectives at the stage's size
/// (SPEC.md 3.8), else as ring collectives on the scale-up tier, an all-gather costing what a
/// reduce-scatter of the same buffer does (Thakur et al. 2005). Without measured tables the
/// tokens travel in the all-to-all's dispatch format.
fn token_gather_s(m: &ModelFacts, l: &Layout, r: &Rates, rank_tokens: f64) -> f64 {
    let n = l.stage_gpus;
    let tokens = rank_tokens * f64::from(l.attention_dp);
    let measured = r.kernels.as_ref().map(|k| k.gather);
    let per_element = measured.map_or(r.expert_dispatch_bytes, |g| g.bytes_per_element);
    let gathered = tokens
        * (m.hidden * per_element
            + f64::from(m.experts_per_token) * GATHERED_ROUTING_BYTES_PER_EXPERT);
    let scattered = tokens * m.hidden * ACTIVATION_BYTES;
    measured
        .and_then(|g| g.time_s(n, gathered, scattered))
        .unwrap_or_else(|| {
            reduce_scatter_s(n, gathered, r.scaleup) + reduce_scatter_s(n, scattered, r.scaleup)
        })
}

/// A stage step's communication on its critical path, by kind.
#[derive(Debug, Clone, Copy, PartialEq)]
struct StageComm {
    /// Tensor-parallel all-reduces (less what fused GEMMs hide).
    all_reduce_s: f64,
    /// MoE dispatch and combine between expert-parallel ranks.
    exchange_s: f64,
}

impl StageComm {
    fn total_s(&self) -> f64 {
        self.all_reduce_s + self.exchange_s
    }
}

/// Seconds of pipeline hops for `tokens` activations passing through all `pp - 1` boundaries.
pub fn pipeline_hops_s(m: &ModelFacts, l: &Layout, r: &Rates, tokens: f64) -> f64 {
    if l.pp <= 1 {
        return 0.0;
    }
    let bytes = tokens * m.hidden * ACTIVATION_BYTES;
    let out = f64::from(l.pp_hops_scaleout);
    let up = f64::from(l.pp - 1) - out;
    up * point_to_point_s(bytes, r.scaleup) + out * point_to_point_s(bytes, r.spine.pipeline)
}

/// Kernels a step of the heavier bounding stage launches.
fn stage_launches(l: &Layout, stages: &[StageParams; 2]) -> f64 {
    stages
        .iter()
        .map(|s| launches(s.layers, s.moe_layers, l.tp))
        .fold(0.0, f64::max)
}

/// The slower of the bounding stages for a step.
pub fn slowest_stage(
    m: &ModelFacts,
    l: &Layout,
    stages: &[StageParams; 2],
    r: &Rates,
    t: &StepTokens,
) -> StageTime {
    let a = stage_time(m, l, &stages[0], r, t);
    if stages[0] == stages[1] {
        return a;
    }
    let b = stage_time(m, l, &stages[1], r, t);
    if a.total_s() >= b.total_s() { a } else { b }
}

/// Speculative decoding: `tokens` draft tokens proposed per step, each accepted with
/// probability `acceptance`, each costing `draft_layers` layers of the target model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Speculation {
    pub tokens: u32,
    pub acceptance: f64,
    pub draft_layers: f64,
}

impl Speculation {
    pub const OFF: Speculation = Speculation {
        tokens: 0,
        acceptance: 0.0,
        draft_layers: 0.0,
    };

    /// Expected tokens a sequence gains per verification step: `(1 - a^(d+1)) / (1 - a)`
    /// (Leviathan et al. 2023, "Fast Inference from Transformers via Speculative Decoding",
    /// eq. 1, with i.i.d. acceptance `a` and draft length `d`).
    pub fn tokens_per_step(&self) -> f64 {
        let d = f64::from(self.tokens);
        if self.tokens == 0 {
            1.0
        } else if self.acceptance >= 1.0 {
            d + 1.0
        } else {
            (1.0 - self.acceptance.powf(d + 1.0)) / (1.0 - self.acceptance)
        }
    }
}

/// Steady-state decode of an instance running a given number of sequences.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Decode {
    /// Seconds between two output tokens of one sequence: one engine iteration (a pipeline cycle
    /// of `pp` stage steps plus the hops, the drafts and the framework overhead) divided by the
    /// tokens a sequence gains per iteration.
    pub tpot_s: f64,
    /// Seconds of one engine iteration.
    pub iteration_s: f64,
    /// The slowest stage's step, per resource.
    pub stage: StageTime,
    /// Pipeline hop time per cycle.
    pub hops_s: f64,
    /// Running sequences on the busiest attention rank.
    pub rank_sequences: f64,
    /// Tokens (decode and prefill) per attention rank per step, and logit rows, for activation
    /// sizing.
    pub rank_tokens: f64,
    pub logit_rows: f64,
}

/// How a decode step receives the prompts that keep its batch full.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Prompts {
    /// Not at all: a disaggregated decode pool.
    Elsewhere,
    /// Folded into every step (aggregated serving), each attention rank refilling its own
    /// finished sequences; under TensorRT-LLM's attention-DP balance
    /// ([`super::adp_balance`]) gathered over its release cycles.
    Folded(Option<AdpBalance>),
}

/// The tokens of one decode step, before any timing: what activation sizing needs, so that a
/// batch that cannot fit is rejected without timing its step (see [`decode`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DecodeShape {
    pub micro_batch: f64,
    pub tokens: StepTokens,
}

impl DecodeShape {
    /// Decode with `sequences` running sequences (fractional for a mean concurrency) split into
    /// `min(pp, ceil(sequences))` micro-batches that flow through the pipeline. Attention ranks
    /// hold `ceil(micro_batch / attention_dp)` sequences each (the busiest rank sets the pace:
    /// ranks meet at every MoE all-to-all). With `Prompts::Folded`, each step also prefills the
    /// prompt tokens that keep the batch full (aggregated serving); a disaggregated decode pool
    /// runs without them. Lengths spread as `spread` says: a running sequence's attention reads
    /// the length-biased mean context `input + output * (1 + cv^2) / 2`, and a folded prompt
    /// token sits on average `input * (1 + cv_p^2) / 2` into its prompt
    /// ([`super::serving::length_biased_half`]).
    pub fn new(
        l: &Layout,
        sequences: f64,
        input_tokens: f64,
        output_tokens: f64,
        spread: Spread,
        spec: &Speculation,
        prompts: Prompts,
    ) -> DecodeShape {
        let micro_batches = f64::from(l.pp).min(sequences.ceil()).max(1.0);
        let micro_batch = sequences / micro_batches;
        let rank_sequences = (micro_batch / f64::from(l.attention_dp)).ceil();
        let gained = spec.tokens_per_step();
        let queries = rank_sequences * (1.0 + f64::from(spec.tokens));
        // A sequence gains `gained` tokens per step, so it needs input/output x gained prompt
        // tokens per step to be replaced when it finishes.
        let (prefill, balance) = match prompts {
            Prompts::Folded(balance) => (
                rank_sequences * gained * input_tokens / output_tokens,
                balance,
            ),
            Prompts::Elsewhere => (0.0, None),
        };
        let busiest_prefill =
            busiest_rank_prefill(l, prefill, input_tokens, queries, spread, balance);
        DecodeShape {
            micro_batch,
            tokens: StepTokens {
                decode: queries,
                sequences: rank_sequences,
                decode_context: busiest_rank_context(
                    l,
                    rank_sequences,
                    input_tokens,
                    output_tokens,
                    spread,
                ),
                prefill,
                busiest_prefill,
                prefill_context: length_biased_half(input_tokens, spread.prompt_cv2),
                moe_tokens: (queries + prefill) * f64::from(l.attention_dp),
                logit_rows: queries + prefill / input_tokens,
            },
        }
    }
}

/// Prefill tokens on the busiest of `l.attention_dp` attention ranks that each fold `prefill`
/// prompt tokens per step on average, in prompts of `input_tokens` split into chunks of at most
/// the rank's prompt budget beside its `queries` decode tokens (`memory::prefill_budget`, at
/// least one prompt, the budget the serving model's prompt queue drains): the expected
/// largest of the ranks' Poisson chunk counts ([`busiest_of_poisson`]) times the chunk. Ranks
/// refill at random only when output lengths spread: with every answer the same length, each
/// rank's sequences finish in the pattern the engine admitted them in, evenly over the ranks
/// (TensorRT-LLM sorts and deals prompts round-robin, "ADP Balance Strategy"), and stay in
/// step. Without attention data parallelism the one rank carries the mean. With TensorRT-LLM's
/// attention-DP balance (`balance`) the ranks gather prompts over a release cycle of `E[C]`
/// iterations and prefill them together ([`super::adp_balance`]): the busiest of `E[C]` times
/// the chunks, once a cycle.
fn busiest_rank_prefill(
    l: &Layout,
    prefill: f64,
    input_tokens: f64,
    queries: f64,
    spread: Spread,
    balance: Option<AdpBalance>,
) -> f64 {
    if l.attention_dp <= 1 || prefill <= 0.0 || spread.answer_cv2() <= 0.0 {
        return prefill;
    }
    let budget = super::memory::prefill_budget(queries, input_tokens).max(prefill);
    let chunk = input_tokens.min(budget);
    let cycle = balance.map_or(1.0, |b| {
        b.mean_cycle(prefill / input_tokens, l.attention_dp)
    });
    let gathered = busiest_of_poisson(prefill / chunk * cycle, l.attention_dp, budget / chunk);
    (chunk * gathered / cycle).max(prefill)
}

/// Mean context of a running sequence on the attention rank with the most context to read,
/// of `l.attention_dp` ranks holding `rank_sequences` running sequences each. A running
/// sequence's context, its prompt plus its position in its answer, has mean `ISL + OSL (1 +
/// a) / 2` ([`length_biased_half`]) and variance `sigma^2`
/// ([`super::memory::running_context_variance`], gamma answers, the shape `Spread` takes for
/// prompts). A rank's total is the
/// sum of its sequences' contexts, near normal, and the step waits for the largest of the
/// ranks' totals: `n mean + z sqrt(n) sigma`, `z` Blom's expected largest of `attention_dp`
/// standard normals ([`blom_largest_normal`]), so the busiest rank's sequences hold
/// `mean + z sigma / sqrt(n)` each. Engines balance the ranks' request counts, not their
/// contexts (TensorRT-LLM assigns a new request to the rank with the fewest active ones, "ADP
/// Balance Strategy", tech blog 10). With every answer the same length the ranks stay in step
/// ([`busiest_rank_prefill`]) and hold the mean, as does a single attention rank. The busiest
/// rank in context is taken to be the busiest in prompts too: an upper bound on the step.
fn busiest_rank_context(
    l: &Layout,
    rank_sequences: f64,
    input_tokens: f64,
    output_tokens: f64,
    spread: Spread,
) -> f64 {
    let a = spread.answer_cv2();
    let mean = input_tokens + length_biased_half(output_tokens, a);
    if l.attention_dp <= 1 || a <= 0.0 || rank_sequences <= 0.0 {
        return mean;
    }
    let variance = super::memory::running_context_variance(input_tokens, output_tokens, spread);
    mean + blom_largest_normal(l.attention_dp) * (variance / rank_sequences).sqrt()
}

/// Times the decode step of `shape` ([`DecodeShape::new`]).
pub fn decode(
    m: &ModelFacts,
    l: &Layout,
    stages: &[StageParams; 2],
    r: &Rates,
    shape: &DecodeShape,
    spec: &Speculation,
) -> Decode {
    let stage = slowest_stage(m, l, stages, r, &shape.tokens);
    decode_with(m, l, stages, r, shape, spec, stage)
}

/// [`decode`] with its slowest stage's step already timed (`stage`, [`slowest_stage`] of the
/// shape's tokens).
pub fn decode_with(
    m: &ModelFacts,
    l: &Layout,
    stages: &[StageParams; 2],
    r: &Rates,
    shape: &DecodeShape,
    spec: &Speculation,
    stage: StageTime,
) -> Decode {
    let t = &shape.tokens;
    let pp = f64::from(l.pp);
    let hops_s = pipeline_hops_s(
        m,
        l,
        r,
        shape.micro_batch * (1.0 + f64::from(spec.tokens)) + t.prefill * f64::from(l.attention_dp),
    );
    // Each draft token costs `draft_layers` of the model's layers, charged at the verification
    // step's kernel time per layer (an upper bound: that step also carries the folded prefill).
    let draft_s =
        f64::from(spec.tokens) * spec.draft_layers / f64::from(m.layers) * pp * stage.kernels_s;
    let iteration_s = match &r.iteration {
        None => pp * stage.total_s() + hops_s + draft_s + r.step_overhead_s,
        Some(cost) => {
            let gpu = GpuIteration::new(
                pp,
                stage.total_s(),
                hops_s + draft_s,
                stage_launches(l, stages),
            );
            // Prompts start in a share `1 - exp(-prompts per step)` of iterations (Poisson
            // arrivals of finishing sequences' replacements); such an iteration carries the
            // decode tokens and a prompt, or the engine's token budget of it.
            let prompt = 2.0 * t.prefill_context;
            let prompts = if prompt > 0.0 {
                t.prefill / prompt
            } else {
                0.0
            };
            cost.decode_s(
                &gpu,
                t.decode,
                t.sequences,
                1.0 - (-prompts).exp(),
                t.decode + prompt.min(super::memory::MAX_NUM_TOKENS),
            )
        }
    };
    Decode {
        tpot_s: iteration_s / spec.tokens_per_step(),
        iteration_s,
        stage,
        hops_s,
        rank_sequences: t.sequences,
        rank_tokens: t.rank_tokens(),
        logit_rows: t.logit_rows,
    }
}

/// One engine iteration of a prefill-only instance (disaggregated serving): `tokens` prompt
/// tokens on every attention rank, each prompt `input_tokens` long; `stage_of` times the slowest
/// stage's step ([`slowest_stage`]).
pub fn prefill_step_s(
    m: &ModelFacts,
    l: &Layout,
    stages: &[StageParams; 2],
    r: &Rates,
    tokens: f64,
    input_tokens: f64,
    stage_of: impl FnOnce(&StepTokens) -> StageTime,
) -> f64 {
    prefill_iteration_s(
        m,
        l,
        stages,
        r,
        tokens,
        l.attention_dp,
        input_tokens,
        true,
        stage_of,
    )
}

/// Time to first token of one request alone on an idle instance (no queueing): the whole prompt
/// through every stage in turn on one attention rank, routed experts seeing all prompt tokens,
/// plus one engine iteration's overhead.
pub fn prefill_s(
    m: &ModelFacts,
    l: &Layout,
    stages: &[StageParams; 2],
    r: &Rates,
    input_tokens: f64,
) -> f64 {
    prefill_s_with(m, l, stages, r, input_tokens, |t| {
        slowest_stage(m, l, stages, r, t)
    })
}

/// [`prefill_s`] with the slowest stage's step timed by `stage_of` (as [`slowest_stage`]).
pub fn prefill_s_with(
    m: &ModelFacts,
    l: &Layout,
    stages: &[StageParams; 2],
    r: &Rates,
    input_tokens: f64,
    stage_of: impl FnOnce(&StepTokens) -> StageTime,
) -> f64 {
    prefill_iteration_s(
        m,
        l,
        stages,
        r,
        input_tokens,
        1,
        input_tokens,
        false,
        stage_of,
    )
}

/// An iteration that prefills `tokens` prompt tokens on each of `busy_ranks` attention ranks
/// (prompts `input_tokens` long) and decodes nothing: `pp` stage steps in turn, the hops and the
/// framework overhead. A prefill pool in steady state (`pool`) overlaps its scheduler's CPU work
/// with the GPU; a prompt alone on an idle instance waits for it. `stage_of` times the slowest
/// stage's step ([`slowest_stage`]).
#[expect(
    clippy::too_many_arguments,
    reason = "the model, layout, stage, rates and tokens of one step, as stage_time takes them"
)]
fn prefill_iteration_s(
    m: &ModelFacts,
    l: &Layout,
    stages: &[StageParams; 2],
    r: &Rates,
    tokens: f64,
    busy_ranks: u32,
    input_tokens: f64,
    pool: bool,
    stage_of: impl FnOnce(&StepTokens) -> StageTime,
) -> f64 {
    let t = StepTokens {
        decode: 0.0,
        sequences: 0.0,
        decode_context: 0.0,
        prefill: tokens,
        busiest_prefill: tokens,
        prefill_context: input_tokens / 2.0,
        moe_tokens: tokens * f64::from(busy_ranks),
        logit_rows: tokens / input_tokens,
    };
    let stage = stage_of(&t);
    let pp = f64::from(l.pp);
    let hops_s = pipeline_hops_s(m, l, r, tokens);
    match &r.iteration {
        None => pp * stage.total_s() + hops_s + r.step_overhead_s,
        Some(cost) => {
            let gpu = GpuIteration::new(pp, stage.total_s(), hops_s, stage_launches(l, stages));
            cost.prefill_s(&gpu, tokens, tokens / input_tokens, pool)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::tests::{layout, point_in, point_of};

    /// gpt-oss-120b on one H200 at `batch` sequences, `lengths` tokens in and out: its published
    /// MXFP4 experts under the FP8 weight format, a bf16 KV cache (TensorRT-LLM's `auto` on
    /// Hopper), tp 1.
    fn gpt_oss_on_h200(
        batch: u32,
        lengths: [f64; 2],
    ) -> (crate::perf::Context, crate::grid::Point) {
        let c = crate::catalog::Catalog::builtin().unwrap();
        point_of(
            &c,
            "gpt-oss-120b",
            "h200-sxm",
            1,
            batch,
            ["fp8", "bf16"],
            lengths,
        )
    }

    /// gpt-oss-120b alternates full-attention layers with 128-token sliding-window ones (18 of
    /// each). On one H200 (TensorRT-LLM, bf16 KV cache) a decode step of 520 sequences at 1,500
    /// cached tokens times each kind at its own context on the measured surface, 0.48714 ms a
    /// full layer and 0.14390 ms a window layer: `18 (F + S) = 11.3587 ms`. Timing all 36
    /// layers at their mean context, 814 tokens (0.30989 ms), read 11.1559 ms, 1.8 % less: a
    /// CTA's fixed cost per (sequence, KV head) does not shrink with the context, so the
    /// surface is convex in it and its value at the mean context is below the mean of its
    /// values (Jensen's inequality).
    #[test]
    fn sliding_window_layers_are_timed_at_their_own_context() {
        let (ctx, p) = gpt_oss_on_h200(520, [1000.0, 1000.0]);
        let inst = crate::perf::instance(&ctx, &p).unwrap();
        let k = inst.rates.kernels.as_ref().unwrap();
        let a = k.decode_attention.unwrap();
        let m = &ctx.model;
        assert_eq!((m.sliding_fraction, m.sliding_window), (0.5, 128.0));
        let t = StepTokens {
            decode: 520.0,
            sequences: 520.0,
            decode_context: 1500.0,
            prefill: 0.0,
            busiest_prefill: 0.0,
            prefill_context: 0.0,
            moe_tokens: 520.0,
            logit_rows: 520.0,
        };
        let s = &inst.stages[0];
        let measured = measured_kernels_s(m, &inst.layout, s, &inst.rates, k, &t, 1.0);
        let layer = |context: f64| a.time_s(520.0, context, 64.0, 8.0, 64.0);
        let by_hand = 18.0 * (layer(1500.0) + layer(128.0));
        let attention = measured.attention_s.unwrap();
        assert!(
            (attention / by_hand - 1.0).abs() < 1e-12,
            "{attention} vs {by_hand}"
        );
        assert!((attention - 11.3587e-3).abs() < 1e-7, "{attention}");
        let at_mean = 36.0 * layer(m.attended_tokens(1500.0));
        assert!((at_mean - 11.1559e-3).abs() < 1e-7, "{at_mean}");
    }

    /// The same model prefilling one 8,192-token prompt: a full layer takes the surface's time
    /// `T` for the prompt, a window layer the share of it its table measured for a 128-token
    /// window (0.257 at 8,192 tokens, `a_window_layer_prefills_at_its_measured_share`), not the
    /// share of the prompt it attends to (128 of the mean 4,096: 0.031): `18 T (1 + 0.257)`.
    #[test]
    fn sliding_window_layers_prefill_at_their_measured_share() {
        let (ctx, p) = gpt_oss_on_h200(1, [8192.0, 1.0]);
        let inst = crate::perf::instance(&ctx, &p).unwrap();
        let k = inst.rates.kernels.as_ref().unwrap();
        let a = k.prefill_attention.unwrap();
        let t = StepTokens {
            decode: 0.0,
            sequences: 0.0,
            decode_context: 0.0,
            prefill: 8192.0,
            busiest_prefill: 8192.0,
            prefill_context: 4096.0,
            moe_tokens: 8192.0,
            logit_rows: 1.0,
        };
        let m = &ctx.model;
        let measured =
            measured_kernels_s(m, &inst.layout, &inst.stages[0], &inst.rates, k, &t, 1.0);
        let full = a.time_s(1.0, 8192.0, 64.0, 8.0, 64.0);
        let window = a.window_share(8192.0, 128.0).unwrap();
        assert!((window - 0.2567).abs() < 0.01, "{window}");
        let by_hand = 18.0 * full * (1.0 + window);
        let attention = measured.attention_s.unwrap();
        assert!(
            (attention / by_hand - 1.0).abs() < 1e-12,
            "{attention} vs {by_hand}"
        );
        let attended_share = 18.0 * full * (1.0 + 128.0 / 4096.0);
        assert!(
            attention > 1.2 * attended_share,
            "{attention} vs {attended_share}"
        );
    }

    /// The step tokens of `sequences` running sequences of the MLPerf DeepSeek-R1 dataset's
    /// lengths (804 in, prompt cv 0.505, 4,043 out at answer cv `cv`) on layout `l`, prompts
    /// folded in when `fold`.
    fn dsr1_step(l: &Layout, sequences: f64, cv: f64, fold: bool) -> StepTokens {
        let spread = Spread {
            prompt_cv2: 0.505 * 0.505,
            slot_variability: (1.0 + cv * cv) / 2.0,
            prompt_quantiles: None,
        };
        DecodeShape::new(
            l,
            sequences,
            804.0,
            4043.0,
            spread,
            &Speculation::OFF,
            if fold {
                Prompts::Folded(None)
            } else {
                Prompts::Elsewhere
            },
        )
        .tokens
    }

    /// The MLPerf DeepSeek-R1 B200 offline case: attention DP 8 (tp 1, ep 8), 4,096 sequences,
    /// 804 in, 4,043 out, answer cv 1.253. Each rank folds `512 x 804 / 4043 = 101.8` prompt
    /// tokens per step on average; the busiest of the eight starts 0.69693 prompts
    /// ([`busiest_of_poisson`]), 560.3 tokens, and sets the step's pace. The experts still see
    /// every rank's mean tokens. Answers of one length keep the ranks in step; tensor
    /// parallelism (one attention rank) and a disaggregated decode pool have no imbalance.
    #[test]
    fn attention_dp_waits_for_the_busiest_rank() {
        let shape = |l: &Layout, cv: f64, fold: bool| dsr1_step(l, 4096.0, cv, fold);
        let adp = layout(1, 1, 8, 1);
        let t = shape(&adp, 1.253, true);
        let mean = 512.0 * 804.0 / 4043.0;
        assert!((t.prefill - mean).abs() < 1e-9, "{}", t.prefill);
        assert!(
            (t.busiest_prefill - 804.0 * 0.696_934).abs() < 1e-3,
            "{}",
            t.busiest_prefill
        );
        assert!((t.moe_tokens - 8.0 * (512.0 + mean)).abs() < 1e-9);
        let even = shape(&adp, 0.0, true);
        assert_eq!(even.busiest_prefill, even.prefill);
        let tp = shape(&layout(8, 1, 8, 1), 1.253, true);
        assert_eq!(tp.busiest_prefill, tp.prefill);
        let pool = shape(&adp, 1.253, false);
        assert_eq!((pool.prefill, pool.busiest_prefill), (0.0, 0.0));
    }

    /// The same case under the attention-DP balance of NVIDIA's submission (10 iterations'
    /// batching wait, timeout 500; [`super::super::adp_balance`]). Each rank receives `a =
    /// 0.126639` prompts per step; every rank holds one after `J` steps with `P(J <= j) = (1 -
    /// e^{-a j})^8`, so cycles last `J + 10` steps, 31.9615 on average (summed independently of
    /// the module). A release finds each rank with Poisson(4.0475) prompts; the busiest of the
    /// eight, capped at the 9.5522 whole prompts that fit beside 512 decode tokens in 8,192, has
    /// 7.03440, so the busiest rank's prefill per step is `804 x 7.03440 / 31.9615 = 176.95`
    /// tokens, against 560.3 unbalanced and the mean 101.8.
    #[test]
    fn the_balance_gathers_prompts_over_a_cycle() {
        let spread = Spread {
            prompt_cv2: 0.505 * 0.505,
            slot_variability: (1.0 + 1.253 * 1.253) / 2.0,
            prompt_quantiles: None,
        };
        let balance = AdpBalance {
            batching_wait_iters: 10.0,
            timeout_iters: 500.0,
        };
        let adp = layout(1, 1, 8, 1);
        let step =
            |b| DecodeShape::new(&adp, 4096.0, 804.0, 4043.0, spread, &Speculation::OFF, b).tokens;
        let t = step(Prompts::Folded(Some(balance)));
        let a = 512.0 / 4043.0;
        assert!((balance.mean_cycle(a, 8) - 31.961_516).abs() < 1e-5);
        assert!(
            (t.busiest_prefill - 176.952).abs() < 1e-2,
            "{}",
            t.busiest_prefill
        );
        let unbalanced = step(Prompts::Folded(None));
        assert!((t.prefill - unbalanced.prefill).abs() < 1e-12);
        assert!(t.busiest_prefill < unbalanced.busiest_prefill);
    }

    /// DeepSeek-V3 in FP8 on an HGX H200 at attention DP 8 and ep 8, one step of 4,096 tokens
    /// through the routed experts: 4,096 x 8 / 256 = 128 routed tokens per expert, a knot of the
    /// H200's expert-balance table (ep 8: 2 x 15, 2^7: + 12) at DeepSeek's power-law 1.01
    /// routing, where the wide-EP table measured the balanced experts at 0.76992 of the skewed
    /// ones (src/catalog/data/kernels/h200-sxm-trtllm.toml, `[[eplb]]`, knot 42). Under
    /// `[workload] eplb` the experts take that factor; at 6,144 tokens (2^7.585) the factor lies
    /// between knots 42 and 43 (0.71937), bilinear in the log: 0.76992 + 0.58496 x (0.71937 -
    /// 0.76992) = 0.74035.
    #[test]
    fn eplb_takes_the_measured_balance_factor() {
        use crate::vocab::Engine::Trtllm;
        let c = crate::catalog::Catalog::builtin().unwrap();
        let experts_s = |eplb: bool, tokens: f64| {
            let (ctx, p) =
                crate::perf::tests::dsv3_h200_fp8_point(&c, Trtllm, [1, 8, 512], |w| w.eplb = eplb);
            let inst = crate::perf::instance(&ctx, &p).unwrap();
            let mut t = inst.decode_shape(4096.0).tokens;
            t.moe_tokens = tokens;
            let k = inst.rates.kernels.expect("H200 has TensorRT-LLM tables");
            assert!(k.experts_skewed && k.expert_balance.is_some());
            let s = &inst.stages[0];
            measured_kernels_s(&inst.ctx.model, &inst.layout, s, &inst.rates, &k, &t, 1.0)
                .experts_s
                .unwrap()
        };
        let ratio = |tokens: f64| experts_s(true, tokens) / experts_s(false, tokens);
        assert!((ratio(4096.0) - 0.76992).abs() < 1e-9, "{}", ratio(4096.0));
        let between = 0.76992 + (1.5f64.log2()) * (0.71937 - 0.76992);
        assert!((between - 0.74035).abs() < 1e-5);
        assert!((ratio(6144.0) - between).abs() < 1e-9, "{}", ratio(6144.0));
    }

    /// Two-batch overlap by hand: a half-batch stage of 10 layers whose kernels take 10 ms and
    /// whose communication takes 6 ms, 4 of them dispatch and combine. The two micro-batches
    /// alternate compute (10 + 2 = 12 ms each) with their exchange (4 ms each), so the stage
    /// takes 2 x max(12, 4) plus min(12, 4) / 10, 24.4 ms, of which 20 ms are kernels, against
    /// 2 x 16 = 32 ms one after the other. With the exchange longer than the rest (12 ms
    /// against 4 + 2) it sets the pace: 2 x 12 plus 6 / 10, 24.6 ms.
    #[test]
    fn two_batch_overlap_by_hand() {
        let stage = StageParams::bounding_stages(
            &crate::perf::tests::facts("deepseek-v3"),
            &layout(1, 1, 8, 1),
        )[0];
        let stage = StageParams {
            layers: 10.0,
            ..stage
        };
        let half = |kernels_s: f64, comm_s: f64, exchange_s: f64| SerialStage {
            time: StageTime {
                compute_s: 0.0,
                memory_s: 0.0,
                kernels_s,
                comm_s,
            },
            exchange_s,
        };
        let t = two_batch_overlap(&stage, &half(10e-3, 6e-3, 4e-3));
        assert!((t.total_s() - 24.4e-3).abs() < 1e-12, "{t:?}");
        assert!((t.kernels_s - 20e-3).abs() < 1e-12);
        let t = two_batch_overlap(&stage, &half(4e-3, 14e-3, 12e-3));
        assert!((t.total_s() - 24.6e-3).abs() < 1e-12, "{t:?}");
    }

    /// The MLPerf DeepSeek-R1 case's contexts: a running sequence holds 804 + 4,043 x (1 +
    /// 1.253^2) / 2 = 5,999.27 tokens on average, with standard deviation sqrt(4043^2 x 2.570 x
    /// 8.850 / 12 + 804^2 x 0.505^2) = 5,580.92 (gamma answers). The busiest of 8 ranks (Blom:
    /// z = 1.43420) holds 5,999.27 + 1.43420 x 5,580.92 / sqrt(512), 6,353.01 a sequence, at
    /// 512 sequences a rank, and 6,636.05 at 158. One attention rank, or answers of one length,
    /// hold the mean.
    #[test]
    fn attention_dp_waits_for_the_rank_with_the_most_context() {
        let context =
            |l: &Layout, sequences: f64, cv: f64| dsr1_step(l, sequences, cv, true).decode_context;
        let adp = layout(1, 1, 8, 1);
        let close = |a: f64, b: f64| (a - b).abs() < 0.01;
        assert!(
            close(context(&adp, 4096.0, 1.253), 6353.01),
            "{}",
            context(&adp, 4096.0, 1.253)
        );
        assert!(close(context(&adp, 8.0 * 158.0, 1.253), 6636.05));
        let mean = 804.0 + 4043.0 * (1.0 + 1.253 * 1.253) / 2.0;
        assert!(close(context(&layout(8, 1, 8, 1), 4096.0, 1.253), mean));
        assert_eq!(context(&adp, 4096.0, 0.0), 804.0 + 4043.0 / 2.0);
        // More sequences a rank average the spread out.
        assert!(context(&adp, 64.0 * 8.0, 1.253) > context(&adp, 4096.0, 1.253));
    }

    /// The busiest rank's budget is the engine's (`memory::prefill_budget`): never less than one
    /// whole prompt. At 512 sequences a rank and 16,000-token prompts (answers of 4,000) a rank
    /// folds 2,048 prompt tokens a step, 0.128 prompts; its budget is one prompt, so the busiest
    /// of 8 ranks starts one whenever any does: 16,000 x (1 - exp(-8 x 0.128)) = 10,253.5
    /// tokens. (Budgeting `MAX_NUM_TOKENS` less the decode tokens, as this function once did,
    /// split the prompt into chunks of 7,680 and charged 6,771.)
    #[test]
    fn busiest_rank_prefills_whole_prompts() {
        let spread = Spread {
            prompt_cv2: 0.25,
            slot_variability: 1.0,
            prompt_quantiles: None,
        };
        let t = DecodeShape::new(
            &layout(1, 1, 8, 1),
            4096.0,
            16_000.0,
            4000.0,
            spread,
            &Speculation::OFF,
            Prompts::Folded(None),
        )
        .tokens;
        assert!((t.prefill - 2048.0).abs() < 1e-9, "{}", t.prefill);
        let expected = 16_000.0 * (1.0 - (-8.0f64 * 0.128).exp());
        assert!((expected - 10_253.5).abs() < 0.1, "{expected}");
        assert!(
            (t.busiest_prefill - expected).abs() < 1e-6,
            "{}",
            t.busiest_prefill
        );
    }

    /// AMD's tables measure the weight formats' GEMMs but no bf16 one, so on MI355X the linear
    /// layers of llama-3.1-70b in FP8 are timed by AITER's FP8 surface and the bf16 LM head by
    /// the roofline. The head at tp 8 (a column split: 128,256 / 8 = 16,032 outputs of 8,192)
    /// for 64 sampled rows: 16.81 GFLOP at 2,516 x 0.64 x 0.8 TFLOP/s halved by the row ramp
    /// (64 rows against `gemm_half_rows` 64), 26.1 us, against 262.7 MB of bf16 weights at
    /// 8 x 0.81 TB/s, 40.54 us: memory-bound, 40.54 us.
    #[test]
    fn amd_head_without_a_bf16_table_on_the_roofline() {
        let c = crate::catalog::Catalog::builtin().unwrap();
        let (ctx, p) = point_in(&c, "mi355x", 8, 64, ["fp8", "bf16"], [1024.0, 1024.0]);
        let inst = crate::perf::instance(&ctx, &p).unwrap();
        let k = inst.rates.kernels.expect("MI355X has vLLM tables");
        assert!(k.gemm.is_some() && k.gemm_bf16.is_none());
        let head = inst.ctx.model.gemms.head;
        let t = roofline_gemms_s(std::slice::from_ref(&head), 64.0, 8.0, &inst.rates);
        let flops_s: f64 = 2.0 * 64.0 * 16_032.0 * 8192.0 / (2516e12 * 0.64 * 0.8 * 0.5);
        let bytes_s: f64 = 16_032.0 * 8192.0 * 2.0 / (8e12 * 0.81);
        assert!((flops_s - 26.1e-6).abs() < 0.1e-6, "{flops_s}");
        assert!((bytes_s - 40.54e-6).abs() < 0.01e-6, "{bytes_s}");
        assert!((t - bytes_s).abs() < 1e-12, "{t}");
        // The step's linear layers are measured (before, without a bf16 table, they were not):
        // the FP8 surface's layers plus the head on the roofline.
        let shape = inst.decode_shape(64.0);
        let t = &shape.tokens;
        let m = &inst.ctx.model;
        let s = &inst.stages[0];
        let linear = measured_kernels_s(m, &inst.layout, s, &inst.rates, &k, t, 1.0).linear_s;
        let w = k.gemm.unwrap();
        let rows = t.rank_tokens();
        let by_hand = s.layers * StepKernels::gemms_s(w, &m.gemms.attention, rows, 8.0)
            + s.dense_layers * StepKernels::gemms_s(w, &m.gemms.dense_mlp, rows, 8.0)
            + roofline_gemms_s(std::slice::from_ref(&head), t.logit_rows, 8.0, &inst.rates);
        assert!(
            linear.is_some_and(|l| (l - by_hand).abs() < 1e-12 * by_hand),
            "{linear:?} vs {by_hand}"
        );
    }

    /// TensorRT-LLM's `gemm_allreduce_plugin` on llama-3.1-70b FP8 at tp 8 on H200: each layer's
    /// attention output projection (8,192 x 1,024 per GPU) and MLP down projection
    /// (8,192 x 3,584) run fused with the all-reduce of their output, so the stage hides
    /// `80 x (min(O, AR) + min(down, AR))` of its communication and nothing else changes. The
    /// GEMMs and the all-reduce are read off the same measured tables the step uses. At 64
    /// sequences (128 rows with the prompt tokens folded in: 16 and 23 us of GEMM against a
    /// 40 us all-reduce) and in a 4,096-token prefill (92 and 231 us against 299 us) the
    /// all-reduce outlasts both GEMMs, which then hide inside it. At tp 1 (no all-reduce) the
    /// stage is unchanged.
    #[test]
    fn fused_all_reduce_hides_the_shorter_of_each_pair() {
        let c = crate::catalog::Catalog::builtin().unwrap();
        let (ctx, p) = point_in(&c, "h200-sxm", 8, 64, ["fp8", "fp8"], [1024.0, 1024.0]);
        let inst = crate::perf::instance(&ctx, &p).unwrap();
        let (m, l, s) = (&inst.ctx.model, &inst.layout, &inst.stages[0]);
        let k = inst.rates.kernels.expect("H200 has TensorRT-LLM tables");
        let w = k.gemm.expect("an FP8 GEMM surface");
        let fused = Rates {
            gemm_all_reduce_fusion: true,
            ..inst.rates
        };
        assert!(!inst.rates.gemm_all_reduce_fusion);
        let decode = inst.decode_shape(64.0).tokens;
        let prefill = StepTokens {
            decode: 0.0,
            sequences: 0.0,
            decode_context: 0.0,
            prefill: 4096.0,
            busiest_prefill: 4096.0,
            prefill_context: 2048.0,
            moe_tokens: 4096.0,
            logit_rows: 1.0,
        };
        for (t, decoding) in [(decode, true), (prefill, false)] {
            let rows = t.rank_tokens();
            let table = if decoding {
                &k.all_reduce_graph
            } else {
                &k.all_reduce_eager
            };
            let ar = table.time_s(8, rows * 8192.0 * ACTIVATION_BYTES).unwrap();
            let o = StepKernels::gemms_s(w, &m.gemms.attention[1..2], rows, 8.0);
            let down = StepKernels::gemms_s(w, &m.gemms.dense_mlp[1..2], rows, 8.0);
            assert_eq!(
                (m.gemms.attention[1].split, m.gemms.dense_mlp[1].split),
                (Split::Row, Split::Row)
            );
            let hidden = 80.0 * (o.min(ar) + down.min(ar));
            let plain = stage_time(m, l, s, &inst.rates, &t);
            let with = stage_time(m, l, s, &fused, &t);
            assert_eq!(plain.kernels_s, with.kernels_s);
            assert!(
                ((plain.comm_s - with.comm_s) - hidden).abs() < 1e-12,
                "{} - {} vs {hidden}",
                plain.comm_s,
                with.comm_s
            );
            assert!(with.comm_s >= 0.0 && hidden > 0.0);
            // The all-reduce outlasts both GEMMs here: they hide inside it.
            assert!(o < ar && down < ar, "{o} {down} {ar}");
            assert!((hidden - 80.0 * (o + down)).abs() < 1e-15);
        }
        let (ctx1, p1) = point_in(&c, "h200-sxm", 1, 64, ["fp8", "fp8"], [1024.0, 1024.0]);
        let one = crate::perf::instance(&ctx1, &p1).unwrap();
        let fused_one = Rates {
            gemm_all_reduce_fusion: true,
            ..one.rates
        };
        let t = one.decode_shape(64.0).tokens;
        let (m1, l1, s1) = (&one.ctx.model, &one.layout, &one.stages[0]);
        assert_eq!(
            stage_time(m1, l1, s1, &one.rates, &t),
            stage_time(m1, l1, s1, &fused_one, &t)
        );
    }

    /// A step that folds a fraction of a prompt carries that share of the whole prompt's
    /// attention. llama-3.1-70b in FP8 on one H200, 8 sequences of 20,000-token prompts and
    /// 2,000-token answers (fixed lengths): each step folds `8 x 20,000 / 2,000 = 80` prompt
    /// tokens, 10,000 tokens into their prompt on average, so its attention is its decode
    /// attention plus 80 / 20,000 of the 80 layers' context-attention surface at one
    /// 20,000-token prompt (680.1 ms): 2.72 ms. The surface read at 0.004 prompts charged the
    /// prompt's launch and serial pass to every step, 14.25 ms. Two prompts run together read
    /// the surface at a batch of two.
    #[test]
    fn a_fraction_of_a_prompt_carries_its_share_of_the_prompt() {
        let c = crate::catalog::Catalog::builtin().unwrap();
        let (mut ctx, p) = point_in(&c, "h200-sxm", 1, 8, ["fp8", "fp8"], [20000.0, 2000.0]);
        ctx.plan.settings.prefill_variability = crate::perf::sizing::variability(0.0);
        let inst = crate::perf::instance(&ctx, &p).unwrap();
        let folded = inst.decode_shape(8.0).tokens;
        assert_eq!((folded.prefill, folded.prefill_context), (80.0, 10000.0));
        let k = inst.rates.kernels.expect("H200 has TensorRT-LLM tables");
        let (m, l, s) = (&inst.ctx.model, &inst.layout, &inst.stages[0]);
        let attention_s = |prefill: f64| {
            let t = StepTokens {
                prefill,
                busiest_prefill: prefill,
                ..folded
            };
            measured_kernels_s(m, l, s, &inst.rates, &k, &t, 1.0)
                .attention_s
                .unwrap()
        };
        let decode = attention_s(0.0);
        let surface = k.prefill_attention.expect("measured");
        let prompt_s = |prompts: f64| 80.0 * surface.time_s(prompts, 20000.0, 64.0, 8.0, 128.0);
        let share = attention_s(80.0) - decode;
        assert!((share - 0.004 * prompt_s(1.0)).abs() < 1e-12, "{share}");
        assert!((prompt_s(1.0) * 1e3 - 680.09).abs() < 0.01);
        assert!((share * 1e3 - 2.720).abs() < 1e-3, "{} ms", share * 1e3);
        assert!((prompt_s(0.004) * 1e3 - 14.25).abs() < 0.01);
        let two = attention_s(40000.0) - decode;
        assert!((two - prompt_s(2.0)).abs() < 1e-12 && two < 2.0 * prompt_s(1.0));
    }

    /// The decode step on the measured surfaces against AIConfigurator 0.12.0 on the same
    /// tables (`aiconfigurator cli estimate --model-path meta-llama/Meta-Llama-3.1-70B
    /// --system gb200 --backend trtllm --perf-db-version 1.3.0rc20 --isl 1000 --osl 1000
    /// --batch-size 256 --tp-size 1 --gemm-quant-mode nvfp4 --kvcache-quant-mode fp8
    /// --estimate-mode static_gen --detail time`): llama-3.1-70b NVFP4 on one GB200, 256
    /// sequences decoding at a 1,500-token mean context (1k in, 1k out, fixed lengths), no
    /// prompt folded in. AIC's TPOT is 28.03 ms: GEMMs 15.70 ms (qkv 1.909, proj 1.849,
    /// gate-up 6.093, down 5.387, logits 0.464), attention 10.61 ms, norms and activation
    /// 1.69 ms. racksweep's parts may differ from AIC's by the surfaces' fit error (GEMM and
    /// generation-attention medians 4-7 %, p90 15-24 %, scripts/kernels/FITS.md), the whole step
    /// by 2 %.
    #[test]
    fn gb200_decode_step_matches_aiconfigurator() {
        let c = crate::catalog::Catalog::builtin().unwrap();
        let (mut ctx, p) = point_in(
            &c,
            "gb200-nvl72",
            1,
            256,
            ["nvfp4", "fp8"],
            [1000.0, 1000.0],
        );
        ctx.plan.settings.decode_variability = crate::perf::sizing::variability(0.0);
        let inst = crate::perf::instance(&ctx, &p).unwrap();
        let mut shape = inst.decode_shape(256.0);
        let t = &mut shape.tokens;
        assert_eq!((t.sequences, t.decode_context), (256.0, 1500.0));
        (t.prefill, t.busiest_prefill, t.logit_rows) = (0.0, 0.0, t.decode);
        let t = shape.tokens;
        let k = inst.rates.kernels.expect("GB200 has TensorRT-LLM tables");
        let m = &inst.ctx.model;
        let s = &inst.stages[0];
        let parts = measured_kernels_s(m, &inst.layout, s, &inst.rates, &k, &t, 1.0);
        let near = |ours: f64, aic_ms: f64, tolerance: f64| {
            let ratio = ours * 1e3 / aic_ms;
            assert!(
                (ratio - 1.0).abs() < tolerance,
                "{} ms vs {aic_ms} ms",
                ours * 1e3
            );
        };
        near(parts.linear_s.unwrap(), 15.702, 0.08);
        near(parts.attention_s.unwrap(), 10.608, 0.10);
        near(
            elementwise_s(m, &inst.layout, s, &inst.rates, &t),
            1.692,
            0.05,
        );
        near(inst.decode_step(&shape).tpot_s, 28.030, 0.02);
    }

    /// DeepSeek-V3 in NVFP4 under TensorRT-LLM at attention DP, 256 sequences a rank. At ep 4,
    /// no wider than its top-8, the engine runs no all-to-all: each MoE layer gathers all four
    /// ranks' tokens on every GPU and reduce-scatters the outputs, on the GPU's NCCL tables, on
    /// a B200 and on a GB200 tray alike (58 MoE layers of
    /// [`crate::perf::kernels::TokenGather::time_s`]); at ep 8, past GB200's measured sizes, as
    /// ring collectives. At ep 16 across a GB200 NVL72's trays
    /// (wider than top-8, multi-node NVLink) it runs its own NVLink all-to-all, measured
    /// ([`crate::perf::kernels::NvlinkAllToAll::time_s`]).
    #[test]
    fn attention_dp_gathers_tokens_unless_the_engine_runs_its_all_to_all() {
        let c = crate::catalog::Catalog::builtin().unwrap();
        let exchange = |gpu: &str, ep: u32| {
            let (ctx, p) = crate::perf::tests::dsv3_point(
                &c,
                gpu,
                crate::vocab::Engine::Trtllm,
                ["nvfp4", "fp8"],
                [1, ep, 256 * ep],
                |_| {},
            );
            let inst = crate::perf::instance(&ctx, &p).unwrap();
            let t = inst.decode_shape(f64::from(256 * ep)).tokens;
            let (m, l, r, s) = (&inst.ctx.model, &inst.layout, &inst.rates, &inst.stages[0]);
            let k = r.kernels.unwrap();
            let comm = layer_comm_s(m, l, s, r, t.rank_tokens(), true);
            let tokens = t.rank_tokens() * f64::from(ep);
            let bytes = (tokens * (7168.0 * 0.5625 + 64.0), tokens * 7168.0 * 2.0);
            let gathered = k.gather.time_s(ep, bytes.0, bytes.1);
            let copies = t.rank_tokens() * 8.0;
            let all_to_all = k.nvlink_all_to_all.map(|x| x.time_s(ep, copies * 7168.0));
            let ring =
                reduce_scatter_s(ep, bytes.0, r.scaleup) + reduce_scatter_s(ep, bytes.1, r.scaleup);
            (comm.exchange_s, gathered, all_to_all, s.moe_layers, ring)
        };
        for gpu in ["b200", "gb200-nvl72"] {
            let (exchange_s, gathered, _, layers, _) = exchange(gpu, 4);
            assert_eq!(layers, 58.0);
            assert!(
                (exchange_s / (58.0 * gathered.unwrap()) - 1.0).abs() < 1e-12,
                "{gpu}"
            );
        }
        // At ep 8 on an NVL72 (no wider than top-8) the engine still gathers; GB200's NCCL
        // tables stop at 4 GPUs, so the gather runs as ring collectives on NVLink.
        let (exchange_s, gathered, _, _, ring) = exchange("gb200-nvl72", 8);
        assert!(gathered.is_none());
        assert!((exchange_s / (58.0 * ring) - 1.0).abs() < 1e-12);
        let (exchange_s, gathered, all_to_all, _, _) = exchange("gb200-nvl72", 16);
        assert!(gathered.is_none());
        let all_to_all = all_to_all.flatten().unwrap();
        assert!((exchange_s / (58.0 * all_to_all) - 1.0).abs() < 1e-12);
    }
}
