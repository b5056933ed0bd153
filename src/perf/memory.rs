//! Bytes each GPU holds: weights of its pipeline stage (sharded over tp, experts over the stage),
//! the KV cache of the sequences it serves, and the activation workspace of one step.
//! Formulas and sources: docs/model.md, "Memory".

use super::ModelFacts;
use super::layout::Layout;
use super::serving::{Spread, length_biased_half};
use crate::vocab::ServingEngine;

/// Fraction of device memory vLLM lets weights, KV cache and activations use
/// (`gpu_memory_utilization`, default 0.90; docs.vllm.ai, engine arguments); the rest is the
/// CUDA/HIP context, communication buffers and allocator slack. SGLang's `mem_fraction_static`
/// is the same kind of fraction of the whole device (its default varies with the GPU and tp,
/// 0.8-0.9 across versions); we take vLLM's.
pub const MEMORY_UTILIZATION: f64 = 0.90;

/// Fraction of the memory left free after the weights and the activation profile that
/// TensorRT-LLM gives its KV cache (`KvCacheConfig.free_gpu_memory_fraction`, default 0.90;
/// TensorRT-LLM docs, "KV cache management" and llm_args.py).
pub const KV_FREE_FRACTION: f64 = 0.90;

/// How much device memory an engine gives its KV cache beside the weights and the step's
/// activations (docs/model.md §5, "Memory"): vLLM and SGLang cap everything at a fraction of
/// the device, TensorRT-LLM takes a fraction of what the weights and activations leave.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemoryBudget {
    /// Device memory the engine sees (`Gpu::device_bytes`).
    pub device_bytes: f64,
    /// `true`: TensorRT-LLM's rule (fraction of the free memory); `false`: a fraction of all.
    free_fraction: bool,
    /// `true`: a sliding-window layer holds as many KV blocks per sequence as a full-attention
    /// layer ([`MemoryBudget::held_kv_bytes_per_sequence`]).
    windows_hold_full_context: bool,
}

impl MemoryBudget {
    pub fn new(engine: ServingEngine, device_bytes: f64) -> MemoryBudget {
        let trtllm = engine == ServingEngine::Trtllm;
        MemoryBudget {
            device_bytes,
            free_fraction: trtllm,
            windows_hold_full_context: trtllm,
        }
    }

    /// KV-cache bytes one GPU holds for one running sequence of `context_tokens` in a stage of
    /// `layers` layers, as the engine's cache manager sizes it.
    ///
    /// TensorRT-LLM holds a sliding-window layer's blocks as a full-attention layer's. Its block
    /// manager splits the cache between window sizes as if every layer attended to the whole
    /// context (`BlockManager::calculateWindowSizeToShare`, which would weight each pool by its
    /// window, "is not used for BaseKVCacheManager::calculateMaxNumBlocks because we want to
    /// first achieve identical performance as assuming all layers as full attention",
    /// cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp), and `GUARANTEED_NO_EVICT` reserves
    /// a window layer `min(prompt + output, window + temporary window)` tokens, the temporary
    /// window being `min(max_num_tokens, max_seq_len - 1 - window)` for paged context FMHA
    /// (`getRemainingBlocksToCompletion`, `calculateTemporaryAttentionWindow`; the PyTorch
    /// backend passes `max_input_len = max_seq_len - 1`, `_set_temp_attention_window_inputs` in
    /// tensorrt_llm/_torch/pyexecutor/resource_manager.py), the whole request unless the output
    /// is long. Either way, with pools of equal blocks per layer the full-attention pool fills
    /// first. vLLM's hybrid KV cache manager frees a window layer's out-of-window blocks, and
    /// SGLang sizes a separate sliding-window pool, so they hold the window
    /// ([`kv_bytes_per_sequence`]).
    pub fn held_kv_bytes_per_sequence(
        &self,
        m: &ModelFacts,
        tp: u32,
        layers: f64,
        kv_bytes_per_element: f64,
        context_tokens: f64,
    ) -> f64 {
        let tokens_per_layer = if self.windows_hold_full_context {
            context_tokens
        } else {
            m.attended_tokens(context_tokens)
        };
        kv_bytes(m, tp, layers, kv_bytes_per_element, tokens_per_layer)
    }

    /// Bytes the KV cache may hold next to `weights_bytes` and `workspace_bytes`; negative
    /// when those alone do not fit.
    pub fn kv_capacity_bytes(&self, weights_bytes: f64, workspace_bytes: f64) -> f64 {
        if self.free_fraction {
            let free = self.device_bytes - weights_bytes - workspace_bytes;
            if free < 0.0 {
                free
            } else {
                KV_FREE_FRACTION * free
            }
        } else {
            MEMORY_UTILIZATION * self.device_bytes - weights_bytes - workspace_bytes
        }
    }
}

/// Tokens one engine step may carry (decode tokens plus prefill chunk); sizes the activation
/// workspace. TensorRT-LLM's default `max_num_tokens` is 8192 (TensorRT-LLM docs, "Tuning max
/// batch size and max num tokens").
pub const MAX_NUM_TOKENS: f64 = 8192.0;

/// Prompt tokens each attention rank may prefill per iteration next to its `decode_tokens` (one
/// per running sequence, plus its draft tokens under speculative decoding): the iteration holds
/// at least `MAX_NUM_TOKENS`, and never less than the decode tokens plus one prompt (engines
/// size max_num_tokens >= max_batch_size + input length: `trtllm-bench` raises it to the longest
/// prompt plus the batch when prompts are not chunked, `get_settings` in
/// tensorrt_llm/bench/benchmark/utils/general.py); decode tokens come first. The serving
/// model's prompt queue and the busiest attention rank's prompts both drain this budget.
#[inline]
pub fn prefill_budget(decode_tokens: f64, isl: f64) -> f64 {
    MAX_NUM_TOKENS.max(decode_tokens + isl) - decode_tokens
}

/// Bytes per element of activations, embeddings and the LM head (bf16). Engines quantize the
/// linear layers of the transformer blocks and keep embeddings and the LM head in 16 bits
/// (NVIDIA ModelOpt and vLLM quantization configs exclude `lm_head` by default).
pub const ACTIVATION_BYTES: f64 = 2.0;

/// Bytes per element of the logits buffer (fp32).
pub const LOGIT_BYTES: f64 = 4.0;

crate::names::names! {
    /// How an engine admits a request against its KV cache, which sets the context each running
    /// sequence counts for in the batch that fits (docs/model.md, "Memory"). The description is
    /// the policy in words, for reports. A sweep without `[workload] kv_admission` uses each
    /// engine's own ([`KvAdmission::of_engine`]); `Default` is the default engine's
    /// (TensorRT-LLM's).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub enum KvAdmission {
        /// Blocks for the prompt and the whole answer are reserved when a request starts, and a
        /// started request is never evicted: TensorRT-LLM's default capacity scheduler policy,
        /// `GUARANTEED_NO_EVICT` (TensorRT-LLM docs, "Useful Runtime Options: Capacity Scheduler
        /// Policy"). Each running sequence counts for its prompt and at least its whole answer,
        /// length-biased: `input + output * (1 + cv^2)` tokens (`input + output` when every
        /// answer has the same length).
        #[default]
        WholeRequest => "whole-request", "KV reserved for the whole request at admission";
        /// Blocks are allocated as tokens are produced, and sequences are preempted when they run
        /// out (vLLM's PagedAttention scheduler, Kwon et al. 2023; SGLang's token-level KV pool
        /// with retraction; TensorRT-LLM's `MAX_UTILIZATION`). In steady state each running
        /// sequence counts for the mean context of a running sequence,
        /// `input + output * (1 + cv^2) / 2` ([`super::serving::length_biased_half`]):
        /// `input + output / 2` when every answer has the same length.
        OnDemand => "on-demand", "KV allocated on demand (engines that preempt)";
    }
}

impl KvAdmission {
    pub fn named(name: &str) -> Option<KvAdmission> {
        KvAdmission::ALL.into_iter().find(|a| a.as_str() == name)
    }

    /// The admission `engine` runs with out of the box (docs/model.md §5, "KV cache"):
    /// - TensorRT-LLM: whole request. Its default capacity scheduler policy is
    ///   `GUARANTEED_NO_EVICT` (`CapacitySchedulerPolicy` default of `SchedulerConfig` in
    ///   `tensorrt_llm/llmapi/llm_args.py`, which `trtllm-serve` uses).
    /// - vLLM: on demand. The V1 scheduler allocates KV blocks as tokens are scheduled and
    ///   preempts (recomputes) the lowest-priority running request when none is free (vLLM docs,
    ///   "Optimization and Tuning: Preemption").
    /// - SGLang: on demand. Its KV pool is allocated token by token and running requests are
    ///   retracted when it runs out; admission only reserves an estimate, a new request's
    ///   `input + min(max_new_tokens, 4096)` and, per running request, `min(remaining, 4096)`
    ///   times `new_token_ratio`, which starts at 0.7 and decays over 600 steps to
    ///   0.7 x 0.14 = 0.098 (`python/sglang/srt/environ.py`, `managers/schedule_policy.py`).
    ///   At that floor a sequence counts for `input + output / 2 x 1.098` instead of
    ///   `input + output / 2` (at 1k in / 1k out, 3 % fewer sequences); the ratio is raised
    ///   again after every retraction, so the sources give no steady-state value to model it by,
    ///   and on demand is the closer of the two policies.
    pub fn of_engine(engine: ServingEngine) -> KvAdmission {
        match engine {
            ServingEngine::Trtllm => KvAdmission::WholeRequest,
            ServingEngine::Vllm | ServingEngine::Sglang => KvAdmission::OnDemand,
        }
    }

    /// Context tokens one running sequence holds KV-cache blocks for, with answers spread as
    /// `spread` says, averaged over the running sequences, which are length-biased (a long
    /// answer runs for more steps; [`length_biased_half`]). On demand, a sequence holds what it
    /// has produced: `input + output * (1 + cv^2) / 2`. Reserved whole, it holds its prompt and
    /// at least its own whole answer from the start, `E[L^2] / E[L] = output * (1 + cv^2)`
    /// averaged the same way: twice the on-demand answer part, as a reservation that holds
    /// all of what on demand grows into must. It is a lower bound: the engine reserves the
    /// request's `max_tokens`, which a sweep does not state.
    pub fn held_context(self, input_tokens: f64, output_tokens: f64, spread: Spread) -> f64 {
        let answer = length_biased_half(output_tokens, spread.answer_cv2());
        match self {
            KvAdmission::WholeRequest => input_tokens + 2.0 * answer,
            KvAdmission::OnDemand => input_tokens + answer,
        }
    }

    /// Variance of the context one running sequence holds ([`KvAdmission::held_context`]),
    /// answers gamma-distributed with squared coefficient of variation `a`, prompts
    /// independent of them (`ISL^2 cv_p^2`). On demand a sequence holds its prompt and its
    /// position in its answer ([`running_context_variance`]); reserved whole, its prompt and
    /// its whole length-biased answer, of variance `E[L^3] / E[L] - (E[L^2] / E[L])^2 =
    /// OSL^2 (1 + a) a` (`E[L^3] = OSL^3 (1 + a)(1 + 2a)` for a gamma).
    pub fn held_context_variance(
        self,
        input_tokens: f64,
        output_tokens: f64,
        spread: Spread,
    ) -> f64 {
        match self {
            KvAdmission::WholeRequest => {
                let a = spread.answer_cv2();
                output_tokens * output_tokens * (1.0 + a) * a
                    + input_tokens * input_tokens * spread.prompt_cv2
            }
            KvAdmission::OnDemand => running_context_variance(input_tokens, output_tokens, spread),
        }
    }
}

/// Variance of a running sequence's context, its prompt plus its position in its answer:
/// answers are length-biased and the position uniform within one, so with gamma answer
/// lengths of mean `OSL` and squared coefficient of variation `a` the position has variance
/// `E[L^3] / (3 E[L]) - (OSL (1 + a) / 2)^2 = OSL^2 (1 + a)(1 + 5a) / 12` (`E[L^3] = OSL^3
/// (1 + a)(1 + 2a)` for a gamma; `OSL^2 / 12` for answers of one length); prompts,
/// independent of answers, add `ISL^2 cv_p^2`.
pub fn running_context_variance(input_tokens: f64, output_tokens: f64, spread: Spread) -> f64 {
    let a = spread.answer_cv2();
    output_tokens * output_tokens * (1.0 + a) * (1.0 + 5.0 * a) / 12.0
        + input_tokens * input_tokens * spread.prompt_cv2
}

/// Parameters one GPU of a pipeline stage holds, by kind.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StageParams {
    /// Transformer layers in the stage.
    pub layers: f64,
    /// Of which use a dense MLP.
    pub dense_layers: f64,
    /// Of which use MoE.
    pub moe_layers: f64,
    /// Attention, dense MLP, shared experts and router weights on this GPU (already divided by tp).
    pub replicated_params: f64,
    /// Routed-expert parameters this GPU holds in one MoE layer (`slots x expert / stage_gpus`,
    /// [`ModelFacts::expert_slots`]).
    pub expert_params_per_layer: f64,
    /// Input-embedding parameters on this GPU (first stage only, vocab-parallel over tp).
    pub embedding_params: f64,
    /// LM-head parameters on this GPU (last stage only, vocab-parallel over tp).
    pub head_params: f64,
}

impl StageParams {
    /// Parameters of `layers` consecutive layers starting at `first_layer`, as one GPU holds them.
    pub fn new(
        m: &ModelFacts,
        l: &Layout,
        first_layer: u32,
        layers: u32,
        first: bool,
        last: bool,
    ) -> StageParams {
        let end = first_layer + layers;
        let dense = m.dense_layers.min(end).saturating_sub(first_layer);
        let moe = layers - dense;
        let tp = f64::from(l.tp);
        let replicated = (f64::from(layers) * m.attention_params_per_layer
            + f64::from(dense) * m.dense_mlp_params_per_layer
            + f64::from(moe) * m.moe_shared_params_per_layer)
            / tp;
        let expert_params_per_layer =
            m.expert_params * m.expert_slots(l.ep) / f64::from(l.stage_gpus);
        StageParams {
            layers: f64::from(layers),
            dense_layers: f64::from(dense),
            moe_layers: f64::from(moe),
            replicated_params: replicated,
            expert_params_per_layer,
            // A tied embedding doubles as the LM head; one copy suffices when one stage holds both.
            embedding_params: if first && !(m.tied_embeddings && last) {
                m.embedding_params / tp
            } else {
                0.0
            },
            head_params: if last { m.head_params / tp } else { 0.0 },
        }
    }

    /// The two stages that bound per-GPU load: the first (dense layers and embedding) and the last
    /// (LM head). Stages hold `ceil(layers / pp)` layers at most; middle stages are never heavier
    /// than the last one. With `pp = 1` both are the single stage.
    pub fn bounding_stages(m: &ModelFacts, l: &Layout) -> [StageParams; 2] {
        let per_stage = m.layers.div_ceil(l.pp);
        if l.pp == 1 {
            let only = StageParams::new(m, l, 0, m.layers, true, true);
            return [only, only];
        }
        let last_first_layer = m.layers - per_stage;
        [
            StageParams::new(m, l, 0, per_stage, true, false),
            StageParams::new(m, l, last_first_layer, per_stage, false, true),
        ]
    }

    /// Weight bytes held: transformer weights in the weight format (routed experts in theirs,
    /// which differs where the checkpoint publishes them pre-quantized), embedding and head in
    /// bf16.
    pub fn weight_bytes(&self, weight_bytes_per_param: f64, expert_bytes_per_param: f64) -> f64 {
        self.replicated_params * weight_bytes_per_param
            + self.moe_layers * self.expert_params_per_layer * expert_bytes_per_param
            + (self.embedding_params + self.head_params) * ACTIVATION_BYTES
    }
}

/// KV-cache elements one GPU stores per token per layer.
/// GQA/MHA: K and V for `kv_heads / tp` heads, at least one (heads are replicated when
/// tp > kv_heads). MLA: the compressed latent plus the decoupled RoPE key, the same on every
/// tensor-parallel rank (DeepSeek-V3 report, section 2.1.1; vLLM/SGLang replicate it under TP).
pub fn kv_elements_per_token_per_layer(m: &ModelFacts, tp: u32) -> f64 {
    if m.mla {
        m.mla_latent_dim
    } else {
        let heads_per_gpu = (f64::from(m.kv_heads) / f64::from(tp)).max(1.0);
        2.0 * heads_per_gpu * m.head_dim
    }
}

/// KV-cache bytes one GPU holds for one sequence of `context_tokens` in a stage of `layers`
/// layers; sliding-window layers keep at most `window` tokens.
pub fn kv_bytes_per_sequence(
    m: &ModelFacts,
    tp: u32,
    layers: f64,
    kv_bytes_per_element: f64,
    context_tokens: f64,
) -> f64 {
    kv_bytes(
        m,
        tp,
        layers,
        kv_bytes_per_element,
        m.attended_tokens(context_tokens),
    )
}

/// KV-cache bytes on one GPU of `tokens_per_layer` tokens in each of `layers` layers.
fn kv_bytes(
    m: &ModelFacts,
    tp: u32,
    layers: f64,
    kv_bytes_per_element: f64,
    tokens_per_layer: f64,
) -> f64 {
    layers * tokens_per_layer * kv_elements_per_token_per_layer(m, tp) * kv_bytes_per_element
}

/// Peak activation workspace of one step on one GPU: the residual stream and the widest MLP
/// intermediate for the step's tokens (the engine's token budget, or more when the step carries
/// more), plus fp32 logits of the rows sampled in the step. The per-token and per-row sizes
/// depend only on the model and the layout, so an instance computes them once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Workspace {
    per_token_bytes: f64,
    per_logit_row_bytes: f64,
}

impl Workspace {
    /// The workspace of one GPU of layout `l`.
    ///
    /// The routed experts' intermediate rows: under an all-to-all each GPU receives its own
    /// experts' copies of the stage's tokens, `k adp / stage` per rank token, each its gate and
    /// up outputs. An engine that gathers every attention rank's tokens instead
    /// ([`crate::vocab::ServingEngine::gathers_expert_tokens`]) runs its fused MoE over all of
    /// them (`holds_gathered_copies`), and TensorRT-LLM sizes that kernel's workspace for every
    /// one of their `k` copies, whichever GPU holds the expert: two overlapped buffers per
    /// copy, each the wider of the bf16 gate-and-up output and the bf16 output row
    /// (`num_moe_inputs = k * num_rows`, `overlapped_gemm1_gemm2_inputs` and `_outputs` in
    /// `CutlassMoeFCRunner::getWorkspaceDeviceBufferSizes`,
    /// `cpp/tensorrt_llm/kernels/cutlass_kernels/moe_gemm/moe_kernels.cu`), `k adp (h +
    /// max(inner, h))` elements per rank token. The engine sizes its cache after a profiling
    /// pass that runs every rank's token budget at once (`KvCacheCreator`'s dummy prompts of
    /// `max_num_tokens`, repeated for each attention-DP rank, and `available_kv_mem =
    /// (total - peak) * fraction`, `tensorrt_llm/_torch/pyexecutor/_util.py`).
    pub fn new(m: &ModelFacts, l: &Layout, holds_gathered_copies: bool) -> Workspace {
        let dense_inner = m.mlp_inner_per_token / f64::from(l.tp);
        let copies = f64::from(m.experts_per_token) * f64::from(l.attention_dp);
        let moe_inner = if holds_gathered_copies && l.attention_dp > 1 {
            copies * (m.hidden + m.moe_inner_per_token.max(m.hidden))
        } else {
            m.moe_inner_per_token * copies / f64::from(l.stage_gpus)
        };
        Workspace {
            per_token_bytes: (2.0 * m.hidden + dense_inner.max(moe_inner)) * ACTIVATION_BYTES,
            per_logit_row_bytes: m.vocab / f64::from(l.tp) * LOGIT_BYTES,
        }
    }

    /// Bytes of a step with `step_tokens_per_rank` tokens and `logit_rows` sampled rows.
    pub fn bytes(&self, step_tokens_per_rank: f64, logit_rows: f64) -> f64 {
        MAX_NUM_TOKENS.max(step_tokens_per_rank) * self.per_token_bytes
            + logit_rows * self.per_logit_row_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::tests::{facts, layout};

    /// The two engine rules by hand on an H200 (141 GiB = 151.4e9 bytes) holding 70.6e9 bytes
    /// of llama-3.1-70b FP8 weights and a 2e9-byte workspace: TensorRT-LLM gives its cache
    /// 0.9 x (151.4 - 70.6 - 2.0) = 70.9e9 bytes, vLLM 0.9 x 151.4 - 70.6 - 2.0 = 63.7e9;
    /// weights beyond the device leave a negative capacity (nothing fits).
    #[test]
    fn kv_capacity_per_engine() {
        use crate::vocab::ServingEngine;
        let device = 141.0 * 1024.0_f64.powi(3);
        let trt = MemoryBudget::new(ServingEngine::Trtllm, device);
        let vllm = MemoryBudget::new(ServingEngine::Vllm, device);
        let sglang = MemoryBudget::new(ServingEngine::Sglang, device);
        let (w, ws) = (70.6e9, 2.0e9);
        let close = |a: f64, b: f64| (a - b).abs() < 1e3;
        assert!(close(trt.kv_capacity_bytes(w, ws), 0.9 * (device - w - ws)));
        assert!(close(vllm.kv_capacity_bytes(w, ws), 0.9 * device - w - ws));
        assert_eq!(sglang, vllm);
        assert!((trt.kv_capacity_bytes(w, ws) / 1e9 - 70.92).abs() < 0.01);
        assert!((vllm.kv_capacity_bytes(w, ws) / 1e9 - 63.66).abs() < 0.01);
        assert!(trt.kv_capacity_bytes(device, ws) < 0.0);
        assert!(vllm.kv_capacity_bytes(0.9 * device, ws) < 0.0);
    }

    /// llama-3.1-70b KV cache at bf16: 2 x 80 layers x 8 kv_heads x 128 x 2 bytes = 327,680 B/token.
    #[test]
    fn llama_70b_kv_bytes_per_token() {
        let m = facts("llama-3.1-70b");
        assert_eq!(kv_bytes_per_sequence(&m, 1, 80.0, 2.0, 1.0), 327_680.0);
        // tp = 8 splits the 8 KV heads; tp = 16 would replicate (one head per GPU).
        assert_eq!(
            kv_bytes_per_sequence(&m, 8, 80.0, 2.0, 1.0),
            327_680.0 / 8.0
        );
        assert_eq!(
            kv_bytes_per_sequence(&m, 16, 80.0, 2.0, 1.0),
            327_680.0 / 8.0
        );
    }

    /// deepseek-v3 MLA: 61 layers x (512 latent + 64 rope) x 1 byte (fp8) = 35,136 B/token, on
    /// every tensor-parallel rank.
    #[test]
    fn deepseek_v3_mla_kv_bytes_per_token() {
        let m = facts("deepseek-v3");
        assert_eq!(kv_bytes_per_sequence(&m, 1, 61.0, 1.0, 1.0), 35_136.0);
        assert_eq!(kv_bytes_per_sequence(&m, 8, 61.0, 1.0, 1.0), 35_136.0);
    }

    /// gpt-oss-120b: 18 of 36 layers keep only the last 128 tokens.
    #[test]
    fn sliding_window_layers_cap_the_cache() {
        let m = facts("gpt-oss-120b");
        // 2 x 8 heads x 64 dims x 2 bytes = 2048 B per token per layer.
        let full = kv_bytes_per_sequence(&m, 1, 36.0, 2.0, 8192.0);
        assert_eq!(full, 2048.0 * (18.0 * 8192.0 + 18.0 * 128.0));
    }

    /// TensorRT-LLM's cache holds gpt-oss-120b's window layers as full-attention ones: at
    /// 1k/1k whole-request (2,048 tokens) a sequence takes 36 x 2,048 x 2,048 B = 151.0 MB
    /// there, against 18 x (2,048 + 128) x 2,048 B = 80.2 MB under vLLM and SGLang, whose
    /// managers keep the window. Models without windows hold the same under every engine.
    #[test]
    fn trtllm_holds_window_layers_whole() {
        use crate::vocab::ServingEngine;
        let m = facts("gpt-oss-120b");
        let held = |engine| {
            MemoryBudget::new(engine, 1e11).held_kv_bytes_per_sequence(&m, 1, 36.0, 2.0, 2048.0)
        };
        assert_eq!(held(ServingEngine::Trtllm), 36.0 * 2048.0 * 2048.0);
        assert_eq!(held(ServingEngine::Vllm), 18.0 * (2048.0 + 128.0) * 2048.0);
        assert_eq!(held(ServingEngine::Sglang), held(ServingEngine::Vllm));
        assert!((held(ServingEngine::Trtllm) / 1e6 - 151.0).abs() < 0.05);
        assert!((held(ServingEngine::Vllm) / 1e6 - 80.2).abs() < 0.05);
        let dense = facts("llama-3.1-70b");
        for engine in ServingEngine::ALL {
            let budget = MemoryBudget::new(engine, 1e11);
            assert_eq!(
                budget.held_kv_bytes_per_sequence(&dense, 8, 80.0, 1.0, 3000.0),
                kv_bytes_per_sequence(&dense, 8, 80.0, 1.0, 3000.0)
            );
        }
    }

    /// llama-3.1-70b weights at bf16 are about 141 GB; at fp8 the transformer layers halve while
    /// the embedding and LM head stay in bf16.
    #[test]
    fn llama_70b_weights() {
        let m = facts("llama-3.1-70b");
        let l = layout(1, 1, 1, 1);
        let [stage, _] = StageParams::bounding_stages(&m, &l);
        let bf16_gb = stage.weight_bytes(2.0, 2.0) / 1e9;
        assert!((bf16_gb - 141.1).abs() < 0.1, "{bf16_gb}");
        let fp8_gb = stage.weight_bytes(1.0, 1.0) / 1e9;
        let embed_gb = 2.0 * 128_256.0 * 8192.0 * 2.0 / 1e9;
        assert!((fp8_gb - (68.45 + embed_gb)).abs() < 0.05, "{fp8_gb}");
        // tp = 8: one eighth on each GPU.
        let l8 = layout(8, 1, 1, 1);
        let [s8, _] = StageParams::bounding_stages(&m, &l8);
        assert!((s8.weight_bytes(2.0, 2.0) * 8.0 / 1e9 - 141.1).abs() < 0.1);
    }

    /// With pp = 2 each stage holds 40 layers; the first keeps the embedding, the last the head.
    #[test]
    fn pipeline_stages_split_layers_and_embeddings() {
        let m = facts("llama-3.1-70b");
        let l = layout(1, 2, 1, 1);
        let [first, last] = StageParams::bounding_stages(&m, &l);
        assert_eq!((first.layers, last.layers), (40.0, 40.0));
        assert_eq!((first.head_params, last.embedding_params), (0.0, 0.0));
        assert_eq!(first.embedding_params, 128_256.0 * 8192.0);
    }

    /// deepseek-v3 at ep = 8: each GPU holds 32 of the 256 experts of every MoE layer.
    #[test]
    fn experts_spread_over_the_stage() {
        let m = facts("deepseek-v3");
        let l = layout(1, 1, 8, 1);
        let [s, _] = StageParams::bounding_stages(&m, &l);
        assert_eq!(s.moe_layers, 58.0);
        assert_eq!(s.expert_params_per_layer, 3.0 * 7168.0 * 2048.0 * 32.0);
    }

    /// Qwen3-235B (hidden 4096, expert width 1536, top-8) at attention DP 8 and ep 8. Where the
    /// engine gathers every rank's tokens, each GPU's fused MoE holds both of its overlapped
    /// buffers for all 8 x 8 expert copies of every gathered token, each the wider of the bf16
    /// gate-and-up output (2 x 1536) and the bf16 output row (4096): (2 x 4096 + 64 x (4096 +
    /// 4096)) x 2 = 1,064,960 bytes per token of the rank's budget, 8.72 GB at 8,192 tokens.
    /// Under an all-to-all each GPU holds its own experts' copies only, the gate-and-up output of
    /// 8 x 8 / 8 copies: (8,192 + 8 x 3,072) x 2 = 65,536 bytes per token, 0.54 GB.
    #[test]
    fn a_gathering_engine_holds_every_ranks_expert_rows() {
        let m = facts("qwen3-235b-a22b");
        let l = layout(1, 1, 8, 1);
        assert_eq!(l.attention_dp, 8);
        let gathered = Workspace::new(&m, &l, true);
        let exchanged = Workspace::new(&m, &l, false);
        assert_eq!(gathered.per_token_bytes, 1_064_960.0);
        assert_eq!(exchanged.per_token_bytes, 65_536.0);
        assert!((gathered.bytes(0.0, 0.0) / 1e9 - 8.724).abs() < 1e-3);
        // One attention rank (tensor parallelism) gathers nothing.
        let tp = layout(8, 1, 8, 1);
        assert_eq!(
            Workspace::new(&m, &tp, true),
            Workspace::new(&m, &tp, false)
        );
    }
}
