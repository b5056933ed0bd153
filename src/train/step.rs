//! Time of one training step on the busiest pipeline stage: compute at the achievable GEMM and
//! attention rates, the communication each parallel dimension adds where it is not hidden, the
//! pipeline bubble, the exposed data-parallel gradient traffic and the optimizer step.
//! Collectives use the alpha-beta costs of `perf::comm` on the tier each group spans.

use crate::catalog::Model;
use crate::perf::comm::{
    ExpertExchange, Routing, all_reduce_s, group_all_reduce_s, point_to_point_s, reduce_scatter_s,
};
use crate::perf::layout::Tier;

use super::flops::ForwardFlops;
use super::memory::ShardParams;
use super::{Layout, Recompute};

/// Bytes per activation element sent between GPUs (bf16).
const ACTIVATION_BYTES: f64 = 2.0;
/// Bytes per element of DeepSeek-V3's FP8 expert dispatch (report section 3.3.2: the inputs of
/// the MoE up-projections, and in the backward pass the gradients before the down-projections,
/// are quantized to FP8 before they are dispatched; both combines stay bf16). Its per-128-element
/// scales (4 bytes each, +3 %) are left out.
const FP8_DISPATCH_BYTES: f64 = 1.0;
/// Bytes per gradient element reduced across data-parallel replicas (bf16, Megatron-Core's
/// `grad_reduce_in_fp32 = False` default; see `memory::GRADIENT_BYTES`).
const GRADIENT_BYTES: f64 = super::memory::GRADIENT_BYTES;
/// Bytes per weight element gathered by sharded data parallelism (bf16).
const WEIGHT_BYTES: f64 = 2.0;
/// HBM bytes the Adam step moves per parameter of its shard: reads and writes fp32 master
/// weights, momentum and variance (24), reads the fp32 gradient (4), writes the bf16 weight (2).
const OPTIMIZER_BYTES_MOVED: f64 = 30.0;

/// Passes over its activations the memory-bound element-wise work of a layer makes: each
/// activation kept for the backward pass is written once and read once in the forward pass
/// (norms, rotary embedding, activation function, residual adds, MoE permutation), and read
/// again with its gradient written in the backward pass. FP8 adds Transformer Engine's casts of
/// every GEMM input and output gradient (read 2 bytes, write 1), about 1.5 passes more.
const ELEMENTWISE_PASSES: f64 = 4.0;
const FP8_CAST_PASSES: f64 = 1.5;

/// What one GPU achieves, and the networks it reaches.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rates {
    /// Linear layers in the training precision, FLOP/s.
    pub linear_flops_per_s: f64,
    /// Grouped routed-expert GEMMs relative to dense GEMMs (the global `moe_gemm_efficiency`
    /// of calibration.toml, shared with inference).
    pub expert_gemm_efficiency: f64,
    /// Attention (bf16 flash attention), FLOP/s.
    pub attention_flops_per_s: f64,
    /// Streaming HBM bandwidth, bytes/s.
    pub hbm_bytes_per_s: f64,
    pub scaleup: Tier,
    pub scaleout: Tier,
    /// GPUs in one scale-up domain.
    pub domain_gpus: u32,
    /// Fraction of tensor-parallel collective time hidden behind GEMMs.
    pub tp_comm_overlap: f64,
    /// Smaller weight dimension per GPU at which a GEMM reaches half its large-matrix rate.
    pub gemm_half_width: f64,
}

impl Rates {
    /// The tier of a group whose ranks sit in consecutive blocks of `span` GPUs: the scale-up
    /// domain when the block fits in the GPUs of a domain the job uses (`train::Packing` places
    /// tp, cp and ep groups so that none straddles two domains).
    fn tier(&self, span: u32) -> Tier {
        if span <= self.domain_gpus {
            self.scaleup
        } else {
            self.scaleout
        }
    }
}

/// Seconds of a step, by part.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct StepTime {
    /// One microbatch's forward and backward pass (with recomputation) on the busiest stage.
    pub microbatch_s: f64,
    /// Of which compute.
    pub compute_s: f64,
    /// Of which exposed tensor-, context-, expert- and pipeline-parallel communication.
    pub tp_comm_s: f64,
    pub cp_comm_s: f64,
    pub ep_comm_s: f64,
    pub pp_comm_s: f64,
    /// Pipeline fill and drain.
    pub bubble_s: f64,
    /// Data-parallel gradient and weight traffic not hidden behind compute.
    pub dp_exposed_s: f64,
    pub optimizer_s: f64,
    pub step_s: f64,
}

/// Rate of a GEMM whose smaller weight dimension on one GPU is `width`, as a fraction of a large
/// GEMM's: `width / (width + half)`. Narrow GEMMs fill fewer of the tensor-core tiles and waves
/// of a large one (NVIDIA, "Matrix Multiplication Background User's Guide", Deep Learning
/// Performance documentation: tile and wave quantization; throughput rises with N and K until
/// the GPU is full). `half` is fitted (`gemm_half_width`, training.toml).
pub fn width_efficiency(width: f64, half: f64) -> f64 {
    if width <= 0.0 {
        return 1.0;
    }
    width / (width + half)
}

/// The smaller of `hidden` and `other / tp`: the narrower side of a weight split over tp.
fn hidden_or_shard(hidden: u32, other: f64, tp: u32) -> f64 {
    f64::from(hidden).min(other / f64::from(tp))
}

/// Time of a token's layer matmuls over their time at the large-GEMM rate: each family
/// (attention projections, dense MLPs, shared experts, routed experts) at its width's
/// efficiency, routed experts also at the grouped-GEMM efficiency.
fn layer_slowdown(model: &Model, tp: u32, flops: &ForwardFlops, r: &Rates) -> f64 {
    let Some(p) = model.param_counts() else {
        return 1.0;
    };
    let half = r.gemm_half_width;
    let h = model.hidden;
    let layers = f64::from(p.dense_layers + p.moe_layers);
    let moe_ffn = model.moe_ffn_hidden.unwrap_or(0);
    // FLOPs (2 per parameter) of each family per token, and its width on one GPU.
    let families = [
        (
            p.attention_per_layer * layers,
            hidden_or_shard(h, f64::from(model.heads) * f64::from(model.head_dim), tp),
        ),
        (
            p.dense_mlp_per_layer * f64::from(p.dense_layers),
            hidden_or_shard(h, f64::from(model.ffn_hidden.unwrap_or(0)), tp),
        ),
        (
            p.moe_shared_per_layer * f64::from(p.moe_layers),
            hidden_or_shard(
                h,
                f64::from(moe_ffn) * f64::from(model.shared_experts.unwrap_or(0)),
                tp,
            ),
        ),
    ];
    let dense_s: f64 = families
        .iter()
        .map(|&(params, width)| 2.0 * params / width_efficiency(width, half))
        .sum();
    let expert_s = flops.expert_matmul
        / (width_efficiency(hidden_or_shard(h, f64::from(moe_ffn), tp), half)
            * r.expert_gemm_efficiency);
    (dense_s + expert_s) / flops.layer_matmul.max(f64::MIN_POSITIVE)
}

/// Seconds of one expert all-to-all (a dispatch or a combine) of `tokens` per GPU at
/// `bytes_per_element`, over an `ep` group whose ranks are `stride` (tp x cp) GPUs apart
/// ([`ExpertExchange`], as inference does).
fn expert_a2a_s(
    model: &Model,
    ep: u32,
    tokens: f64,
    bytes_per_element: f64,
    stride: u32,
    r: &Rates,
) -> f64 {
    let local = (r.domain_gpus / stride).max(1);
    ExpertExchange::new(&Routing::of(model), ep, local).time_s(
        tokens,
        f64::from(model.hidden) * bytes_per_element,
        [r.tier(stride * ep), r.scaleup, r.scaleout],
    )
}

pub fn step_time(
    model: &Model,
    l: &Layout,
    seq_len: f64,
    microbatches: f64,
    flops: &ForwardFlops,
    shard: &ShardParams,
    r: &Rates,
) -> StepTime {
    let (tp, pp, cp, ep, dp) = (l.tp, l.pp, l.cp, l.ep, l.dp);
    let tokens = f64::from(l.microbatch) * seq_len;
    let split = f64::from(tp * cp);
    let layers = super::memory::stage_layers(model, l);
    let stage = layers / f64::from(model.layers);

    // Compute of the last stage (its layers plus the logits), forward then backward.
    let recompute_linear = match l.recompute {
        Recompute::Full => flops.layer_matmul,
        _ => 0.0,
    };
    let recompute_attention = match l.recompute {
        Recompute::None => 0.0,
        _ => flops.attention,
    };
    // Each family of GEMMs runs at the rate its width allows (`width_efficiency`); routed
    // experts run as grouped GEMMs at a further fraction of the dense rate. The layer matmuls
    // cost `slowdown` times their FLOPs at the large-GEMM rate.
    let slowdown = layer_slowdown(model, tp, flops, r);
    let logits_slowdown = 1.0
        / width_efficiency(
            hidden_or_shard(model.hidden, f64::from(model.vocab.unwrap_or(0)), tp),
            r.gemm_half_width,
        );
    // The layer matmuls' FLOPs at the large-GEMM rate, and with the logits.
    let layers_linear =
        |passes: f64, extra: f64| (passes * flops.layer_matmul + extra) * stage * slowdown;
    let linear = |passes: f64, extra: f64| {
        tokens * (layers_linear(passes, extra) + passes * flops.logits * logits_slowdown) / split
    };
    let attention =
        |passes: f64, extra: f64| tokens * (passes * flops.attention + extra) * stage / split;
    let fwd_s =
        linear(1.0, 0.0) / r.linear_flops_per_s + attention(1.0, 0.0) / r.attention_flops_per_s;
    let bwd_s = linear(2.0, recompute_linear) / r.linear_flops_per_s
        + attention(2.0, recompute_attention) / r.attention_flops_per_s;
    let attention_s = attention(3.0, recompute_attention) / r.attention_flops_per_s;
    // Memory-bound element-wise kernels between the GEMMs, a third forward and two thirds
    // backward, as the passes above.
    let passes_over = ELEMENTWISE_PASSES
        + match l.precision {
            super::Precision::Fp8 => FP8_CAST_PASSES,
            super::Precision::Bf16 => 0.0,
        };
    let kept = Layout {
        recompute: Recompute::None,
        ..*l
    };
    let moe_share = model
        .param_counts()
        .map_or(0.0, |p| f64::from(p.moe_layers))
        / f64::from(model.layers);
    let layer_bytes = (1.0 - moe_share)
        * super::memory::layer_activation_bytes(model, &kept, seq_len, false)
        + moe_share * super::memory::layer_activation_bytes(model, &kept, seq_len, true);
    let elementwise_s = passes_over * layers * layer_bytes / r.hbm_bytes_per_s;
    let fwd_s = fwd_s + elementwise_s / 3.0;
    let bwd_s = bwd_s + 2.0 * elementwise_s / 3.0;
    let compute_s = fwd_s + bwd_s;

    // Tensor parallelism with sequence parallelism (Korthikanti et al. 2022, section 4.2.2):
    // per layer and pass, two all-gathers and two reduce-scatters of the layer's activations,
    // the cost of two all-reduces; forward, backward, and the recomputed forward. A tp group of
    // whole domains all-reduces hierarchically over both tiers, as serving's does.
    let hidden = f64::from(model.hidden);
    let activation = tokens / f64::from(cp) * hidden * ACTIVATION_BYTES;
    let passes = if l.recompute == Recompute::Full {
        3.0
    } else {
        2.0
    };
    // Transformer Engine's comm-GEMM overlap pipelines these collectives with the layer GEMMs
    // that produce or consume them (Megatron-LM `--tp-comm-overlap`; Wang et al. 2023,
    // "Overlap Communication with Dependent Computation via Decomposition", ASPLOS), so it can
    // hide them only behind that GEMM time: `tp_comm_overlap` of the smaller of the two.
    let tp_traffic_s = 2.0
        * passes
        * layers
        * group_all_reduce_s(tp, r.domain_gpus, activation, r.scaleup, r.scaleout, false);
    let layer_gemm_s = tokens * layers_linear(3.0, recompute_linear) / split / r.linear_flops_per_s;
    let tp_comm_s = tp_traffic_s - r.tp_comm_overlap * tp_traffic_s.min(layer_gemm_s);

    // Context parallelism, ring attention (Liu et al. 2023, arXiv:2310.01889; Megatron-Core
    // context parallelism): each layer passes K and V chunks cp - 1 times forward and K, V and
    // their gradients backward, overlapped with the attention of the chunk in hand.
    let kv_width = match model.attention {
        crate::catalog::Attention::Mla => {
            f64::from(model.mla_kv_lora_rank.unwrap_or(0) + model.mla_rope_head_dim.unwrap_or(0))
        }
        _ => f64::from(model.kv_heads * model.head_dim) / f64::from(tp.min(model.kv_heads.max(1))),
    };
    let cp_comm_s = if cp > 1 {
        let chunk = 2.0 * tokens / f64::from(cp) * kv_width * ACTIVATION_BYTES;
        let ring = 3.0 * layers * f64::from(cp - 1) * point_to_point_s(chunk, r.tier(tp * cp));
        (ring - attention_s).max(0.0)
    } else {
        0.0
    };

    // Expert parallelism: dispatch and combine all-to-alls of every MoE layer, forward and
    // backward (and the recomputed forward), each GPU sending its tokens' copies for their
    // experts_per_token routed experts (GShard, Lepikhin et al. 2020; DeepSeek-V3 section 3.2.2).
    let moe_layers = f64::from(model.param_counts().map_or(0, |p| p.moe_layers)) * stage;
    let ep_comm_s = if ep > 1 && moe_layers > 0.0 {
        let dispatch_bytes = match (model.routing_groups(), l.precision) {
            (Some(_), super::Precision::Fp8) => FP8_DISPATCH_BYTES,
            _ => ACTIVATION_BYTES,
        };
        let a2a = |bytes_per_element: f64| {
            expert_a2a_s(model, ep, tokens / split, bytes_per_element, tp * cp, r)
        };
        passes * moe_layers * (a2a(dispatch_bytes) + a2a(ACTIVATION_BYTES))
    } else {
        0.0
    };

    // Pipeline parallelism: each microbatch sends its activations forward and their gradients
    // back at every stage boundary, once per virtual stage, scattered over tp (Narayanan et al.
    // 2021, section 4.1, scatter/gather optimization).
    let pp_comm_s = if pp > 1 {
        let bytes = activation / f64::from(tp);
        2.0 * f64::from(l.virtual_stages) * point_to_point_s(bytes, r.tier(2 * tp * cp * dp))
    } else {
        0.0
    };

    let microbatch_s = compute_s + tp_comm_s + cp_comm_s + ep_comm_s + pp_comm_s;
    // 1F1B: (pp - 1) microbatch times of fill and drain; interleaving divides it by v
    // (Narayanan et al. 2021, section 2.2).
    let bubble_s = f64::from(pp - 1) / f64::from(l.virtual_stages) * microbatch_s;

    // Data parallelism over dp x cp replicas (experts: dp x cp / ep), on the tier the replica
    // group spans. Gradients reduce while the last microbatch's backward pass runs, weights
    // gather while the next step's first forward runs (Megatron's overlap_grad_reduce and
    // overlap_param_gather); ZeRO-3 gathers weights again in every forward and backward pass,
    // each prefetched under the previous layer's compute (PyTorch FSDP, Zhao et al. 2023).
    let replicas = dp * cp;
    let expert_replicas = (replicas / ep).max(1);
    let dp_tier = r.tier(tp * cp * dp);
    let reduce = |bytes_per_param: f64, all: bool| -> f64 {
        let f = |n: u32, params: f64| {
            if all {
                all_reduce_s(n, params * bytes_per_param, dp_tier, false)
            } else {
                reduce_scatter_s(n, params * bytes_per_param, dp_tier)
            }
        };
        f(replicas, shard.dense) + f(expert_replicas, shard.expert)
    };
    let hidden_under = |comm: f64, window: f64| (comm - window).max(0.0);
    let dp_exposed_s = match l.zero_stage {
        0 => hidden_under(reduce(GRADIENT_BYTES, true), bwd_s),
        1 | 2 => {
            hidden_under(reduce(GRADIENT_BYTES, false), bwd_s)
                + hidden_under(reduce(WEIGHT_BYTES, false), fwd_s)
        }
        _ => {
            let gather = reduce(WEIGHT_BYTES, false);
            microbatches * (hidden_under(gather, fwd_s) + hidden_under(gather, bwd_s))
                + hidden_under(reduce(GRADIENT_BYTES, false), bwd_s)
        }
    };

    // The Adam step streams its shard of the optimizer state through HBM.
    let optimizer_params = if l.zero_stage == 0 {
        shard.total()
    } else {
        shard.dense / f64::from(replicas) + shard.expert / f64::from(expert_replicas)
    };
    let optimizer_s = optimizer_params * OPTIMIZER_BYTES_MOVED / r.hbm_bytes_per_s;

    let step_s = microbatches * microbatch_s + bubble_s + dp_exposed_s + optimizer_s;
    StepTime {
        microbatch_s,
        compute_s,
        tp_comm_s,
        cp_comm_s,
        ep_comm_s,
        pp_comm_s,
        bubble_s,
        dp_exposed_s,
        optimizer_s,
        step_s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use crate::perf::comm::all_to_all_s;

    /// `w / (w + w_half)` by hand: a 1,536-wide GEMM at w_half 1,280 runs at 6/11 of a wide
    /// one's rate, and 0 turns the effect off.
    #[test]
    fn narrow_gemms_run_slower() {
        assert!((width_efficiency(1536.0, 1280.0) - 1536.0 / 2816.0).abs() < 1e-15);
        assert_eq!(width_efficiency(1536.0, 0.0), 1.0);
        assert!(width_efficiency(25_600.0, 1280.0) > 0.95);
    }

    /// GPT 3.6B (hidden 3,072, 32 heads of 96, MLP 12,288) at tp 2: attention projections
    /// are 1,536 wide on a GPU, the MLP 3,072 (hidden is the narrower side of its 6,144-wide
    /// shards); the layer matmuls take their FLOP-weighted harmonic slowdown.
    #[test]
    fn layer_slowdown_weighs_each_family_by_its_flops() {
        let catalog = Catalog::builtin().unwrap();
        let model = catalog.model("gpt-3.6b").unwrap();
        let flops = ForwardFlops::new(model, 2048.0).unwrap();
        let p = model.param_counts().unwrap();
        let half = 1280.0;
        let tier = Tier {
            bytes_per_s: 1.0,
            alpha_s: 0.0,
            launch_s: 0.0,
        };
        let rates = Rates {
            linear_flops_per_s: 1.0,
            expert_gemm_efficiency: 1.0,
            attention_flops_per_s: 1.0,
            hbm_bytes_per_s: 1.0,
            scaleup: tier,
            scaleout: tier,
            domain_gpus: 8,
            tp_comm_overlap: 0.0,
            gemm_half_width: half,
        };
        let attention = p.attention_per_layer * 30.0;
        let mlp = p.dense_mlp_per_layer * 30.0;
        let expected = (attention * (1536.0 + half) / 1536.0 + mlp * (3072.0 + half) / 3072.0)
            / (attention + mlp);
        let got = layer_slowdown(model, 2, &flops, &rates);
        assert!((got / expected - 1.0).abs() < 1e-12, "{got} vs {expected}");
        // A third of the FLOPs at 1536 / 2816 of the wide rate, two thirds at 3072 / 4352:
        // (1/3 x 1.833 + 2/3 x 1.417) = 1.556, the layer GEMMs at 64 % of the wide-GEMM rate.
        assert!((got - 1.556).abs() < 0.001, "{got}");
    }

    /// Rates with latency-free tiers of the given bandwidths: at 1 byte/s a collective's
    /// seconds are the bytes it moves on that tier, and an infinitely fast tier is free.
    fn byte_rates(scaleup_bytes_per_s: f64, scaleout_bytes_per_s: f64) -> Rates {
        let tier = |bytes_per_s| Tier {
            bytes_per_s,
            alpha_s: 0.0,
            launch_s: 0.0,
        };
        Rates {
            linear_flops_per_s: 1.0,
            expert_gemm_efficiency: 1.0,
            attention_flops_per_s: 1.0,
            hbm_bytes_per_s: 1.0,
            scaleup: tier(scaleup_bytes_per_s),
            scaleout: tier(scaleout_bytes_per_s),
            domain_gpus: 8,
            tp_comm_overlap: 0.0,
            gemm_half_width: 0.0,
        }
    }

    /// llama-3.1-70b (80 layers, hidden 8,192) at tp 16 over two 8-GPU domains, one 4k-token
    /// microbatch, no recomputation: per layer and pass the two all-reduces' worth of sequence
    /// parallelism moves, per GPU, 2 x 7/8 of the 64 MiB activation inside the domain and
    /// 2 x 1/2 of its eighth across the two domains (latency-free tiers at 1 byte/s, so the
    /// seconds are the bytes on the tier that is not free; no overlap).
    #[test]
    fn tensor_parallelism_across_domains_is_hierarchical() {
        let catalog = Catalog::builtin().unwrap();
        let (model, l, seq_len, flops, shard) = llama_70b_tp16(&catalog);
        let activation = 4096.0 * 8192.0 * 2.0;
        let per_layer_and_pass = 2.0 * 2.0 * 80.0;
        let t = |r: &Rates| step_time(model, &l, seq_len, 1.0, &flops, &shard, r).tp_comm_s;
        assert_eq!(
            t(&byte_rates(1.0, f64::INFINITY)),
            per_layer_and_pass * 1.75 * activation
        );
        assert_eq!(
            t(&byte_rates(f64::INFINITY, 1.0)),
            per_layer_and_pass * activation / 8.0
        );
    }

    /// The overlap hides traffic only behind the layer GEMMs: with GEMMs taking half the
    /// traffic's time, half stays exposed; with GEMMs longer than it, none.
    #[test]
    fn tensor_parallel_overlap_is_bounded_by_the_gemms() {
        let catalog = Catalog::builtin().unwrap();
        let (model, l, seq_len, flops, shard) = llama_70b_tp16(&catalog);
        let traffic = 2.0 * 2.0 * 80.0 * 4096.0 * 8192.0 * 2.0 / 8.0;
        // Layer GEMMs: forward and backward, 3 x the layer matmul FLOPs, over tp 16.
        let gemm_flops = 4096.0 * 3.0 * flops.layer_matmul / 16.0;
        let rates = |gemm_s: f64| Rates {
            linear_flops_per_s: gemm_flops / gemm_s,
            tp_comm_overlap: 1.0,
            ..byte_rates(f64::INFINITY, 1.0)
        };
        let t = |r: &Rates| step_time(model, &l, seq_len, 1.0, &flops, &shard, r).tp_comm_s;
        let half = t(&rates(traffic / 2.0));
        assert!((half / (traffic / 2.0) - 1.0).abs() < 1e-12, "{half}");
        assert_eq!(t(&rates(traffic * 2.0)), 0.0);
    }

    /// llama-3.1-70b at tp 16, one 4,096-token microbatch.
    fn llama_70b_tp16(catalog: &Catalog) -> (&Model, Layout, f64, ForwardFlops, ShardParams) {
        let model = catalog.model("llama-3.1-70b").unwrap();
        let l = crate::train::tests::layout(16, 1, 1);
        let seq_len = 4096.0;
        let flops = ForwardFlops::new(model, seq_len).unwrap();
        let shard = ShardParams::new(model, &l).unwrap();
        (model, l, seq_len, flops, shard)
    }

    /// DeepSeek-V3 with other expert counts and routing limits.
    fn moe(experts: u32, k: u32, groups: Option<(u32, u32)>) -> Model {
        let catalog = Catalog::builtin().unwrap();
        Model {
            experts: Some(experts),
            experts_per_token: Some(k),
            expert_groups: groups.map(|g| g.0),
            expert_groups_per_token: groups.map(|g| g.1),
            ..catalog.model("deepseek-v3").unwrap().clone()
        }
    }

    /// Expected remote domains by hand.
    #[test]
    fn expected_remote_domains_by_hand() {
        let close = |got: f64, want: f64| assert!((got - want).abs() < 1e-12, "{got} vs {want}");
        // 2 of 8 experts over 2 domains of 4: both in one domain in 2 x C(4,2) = 12 of the
        // C(8,2) = 28 pairs, so 12/28 x 1 + 16/28 x 2 = 44/28 domains, of which the other one
        // is hit with chance 1 - 6/28 = 11/14.
        close(
            Routing::of(&moe(8, 2, None)).expected_remote_domains(2.0),
            11.0 / 14.0,
        );
        close(
            Routing::of(&moe(8, 2, None)).expected_remote_domains(1.0),
            0.0,
        );
        // One expert per domain: every expert is its own domain, k distinct domains of 8, so
        // k x 7/8 remote ones, with or without groups (4 groups of 2 experts, 2 per token:
        // a reached group holds 1 or 2 of the token's 3 experts).
        close(
            Routing::of(&moe(8, 3, None)).expected_remote_domains(8.0),
            3.0 * 7.0 / 8.0,
        );
        close(
            Routing::of(&moe(8, 3, Some((4, 2)))).expected_remote_domains(8.0),
            3.0 * 7.0 / 8.0,
        );
        // DeepSeek-V3 (256 experts, 8 per token, at most 4 of 8 groups): one group per domain
        // at ep 64 over 8 domains, so the token reaches 4 domains: its own with chance 1/2,
        // 3.5 others.
        let dsv3 = moe(256, 8, Some((8, 4)));
        close(Routing::of(&dsv3).expected_remote_domains(8.0), 3.5);
        // Two groups per domain (4 domains): a domain is missed when all 4 groups come from
        // the other 6, C(6,4)/C(8,4) = 15/70; 3 x 55/70 others.
        close(
            Routing::of(&dsv3).expected_remote_domains(4.0),
            3.0 * 55.0 / 70.0,
        );
        // Two domains per group (16 domains of 16 experts): a group is reached with chance
        // 1/2 and then holds 2 of its 32 experts, both in the other half with chance
        // C(16,2)/C(32,2) = 15/62: 15 x 1/2 x 47/62.
        close(
            Routing::of(&dsv3).expected_remote_domains(16.0),
            15.0 * 0.5 * 47.0 / 62.0,
        );
        // Without the limit, 8 of 256 experts over 8 domains reach 1 - C(224,8)/C(256,8) of
        // each: about 4.6 others, and the limit is what brings it to 3.5.
        let free = Routing::of(&moe(256, 8, None)).expected_remote_domains(8.0);
        assert!((free - 4.63).abs() < 0.01, "{free}");
    }

    /// DeepSeek-V3 at ep 64 over eight 8-GPU domains: per token, a dispatch sends 3.5 copies
    /// of its 7,168-element hidden state over the scale-out network (25,088 bytes at fp8's 1
    /// byte, 50,176 at bf16 for the combine) instead of 56/64 of 8 bf16 copies (100,352), and
    /// forwards 7/8 of its 8 copies inside the destination domains (50,176 bytes at fp8).
    #[test]
    fn deepseek_v3_dispatch_crosses_the_network_once_per_domain() {
        let catalog = Catalog::builtin().unwrap();
        let dsv3 = catalog.model("deepseek-v3").unwrap();
        let out_bound = byte_rates(f64::INFINITY, 1.0);
        let a2a = |m: &Model, bytes: f64, r: &Rates| expert_a2a_s(m, 64, 1.0, bytes, 1, r);
        assert_eq!(a2a(dsv3, 1.0, &out_bound), 25_088.0);
        assert_eq!(a2a(dsv3, 2.0, &out_bound), 50_176.0);
        let up_bound = byte_rates(1.0, f64::INFINITY);
        assert_eq!(a2a(dsv3, 1.0, &up_bound), 50_176.0);
        let unlimited = Model {
            expert_groups: None,
            expert_groups_per_token: None,
            ..dsv3.clone()
        };
        assert_eq!(a2a(&unlimited, 2.0, &out_bound), 100_352.0);
        // Inside one domain (ep 8) nothing crosses the network.
        let r = byte_rates(1.0, 1.0);
        assert_eq!(
            expert_a2a_s(dsv3, 8, 1.0, 2.0, 1, &r),
            all_to_all_s(8, 8.0 * 7168.0 * 2.0, 8, r.scaleup, r.scaleout)
        );
    }

    /// A model without a routing limit keeps one bf16 copy per routed expert, dispatch and
    /// combine alike, in fp8 too: Qwen3-235B-A22B (8 of 128 experts) at tp 1, ep 16 over two
    /// 8-GPU domains costs `2 x passes x MoE layers x all_to_all_s` of its copies.
    #[test]
    fn models_without_a_routing_limit_are_unchanged() {
        let catalog = Catalog::builtin().unwrap();
        let model = catalog.model("qwen3-235b-a22b").unwrap();
        assert_eq!(model.routing_groups(), None);
        let l = Layout {
            tp: 1,
            pp: 4,
            dp: 16,
            cp: 1,
            ep: 16,
            microbatch: 1,
            virtual_stages: 1,
            zero_stage: 1,
            recompute: Recompute::None,
            precision: crate::train::Precision::Fp8,
        };
        let seq_len = 4096.0;
        let flops = ForwardFlops::new(model, seq_len).unwrap();
        let shard = ShardParams::new(model, &l).unwrap();
        let r = Rates {
            scaleout: Tier {
                bytes_per_s: 50e9,
                alpha_s: 5e-6,
                launch_s: 5e-6,
            },
            ..byte_rates(200e9, 50e9)
        };
        let t = step_time(model, &l, seq_len, 8.0, &flops, &shard, &r);
        let moe_layers = f64::from(model.param_counts().unwrap().moe_layers)
            * crate::train::memory::stage_layers(model, &l)
            / f64::from(model.layers);
        let bytes = seq_len * 8.0 * f64::from(model.hidden) * 2.0;
        let want = 2.0 * 2.0 * moe_layers * all_to_all_s(16, bytes, 8, r.scaleout, r.scaleout);
        assert!(
            (t.ep_comm_s / want - 1.0).abs() < 1e-12,
            "{} vs {want}",
            t.ep_comm_s
        );
    }
}
