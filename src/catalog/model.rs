//! LLM architecture presets and the parameter counts derived from their shapes. Data in
//! `data/models.toml`; the same fields form an inline `[[model]]` table in a sweep file.
//!
//! Parameter counts follow the layer shapes of the Hugging Face `config.json` of each model
//! (see docs/model.md, "Parameters"): attention projections, (gated) MLPs, routed and shared
//! experts, router, norms and embeddings. Biases are ignored (< 0.1 % for every catalog model).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Attention {
    /// Multi-head attention: one K/V head per query head.
    Mha,
    /// Grouped-query attention: `kv_heads` K/V heads shared by groups of query heads.
    Gqa,
    /// Multi-head latent attention (DeepSeek-V2/V3): a compressed KV latent per token.
    Mla,
}

crate::names::names! {
    /// How unevenly a model's router spreads tokens over its experts, as the measured MoE tables
    /// of AIConfigurator sample it: uniformly, or with expert popularity following a power law of
    /// exponent 1.01 or 1.2 (the skew AIC's own models assume: 1.01 for DeepSeek-family models,
    /// 1.2 for other MoE models; aiconfigurator_core/sdk/models/deepseek.py and moe.py). A
    /// skewed table times the busiest expert-parallel rank, so the skew across ranks is in it
    /// (docs/model.md, "Measured kernel surfaces").
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
    pub enum ExpertRouting {
        #[default]
        #[serde(rename = "balanced")]
        Balanced => "balanced";
        #[serde(rename = "power_law_1.01")]
        PowerLaw101 => "power_law_1.01";
        #[serde(rename = "power_law_1.2")]
        PowerLaw12 => "power_law_1.2";
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mlp {
    /// SwiGLU-style gate, up and down projections (3 matrices).
    Gated,
    /// GELU / squared-ReLU up and down projections (2 matrices).
    Plain,
}

impl Mlp {
    pub fn matrices(self) -> f64 {
        match self {
            Mlp::Gated => 3.0,
            Mlp::Plain => 2.0,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Model {
    pub id: String,
    pub source: String,
    #[serde(default)]
    pub notes: String,
    pub layers: u32,
    pub hidden: u32,
    pub heads: u32,
    pub kv_heads: u32,
    pub head_dim: u32,
    /// Width of the dense MLP; absent when every layer is MoE.
    pub ffn_hidden: Option<u32>,
    /// Vocabulary size; absent when no source states it (the model cannot be evaluated then).
    pub vocab: Option<u32>,
    pub max_context: u32,
    pub mlp: Mlp,
    pub tied_embeddings: bool,
    pub attention: Attention,
    pub experts: Option<u32>,
    pub experts_per_token: Option<u32>,
    pub shared_experts: Option<u32>,
    pub moe_ffn_hidden: Option<u32>,
    /// Leading layers that use the dense MLP instead of MoE.
    pub dense_layers: Option<u32>,
    /// Groups the routed experts are split into for group-limited routing (`n_group` of
    /// DeepSeek-V3's config.json); consecutive experts form a group.
    pub expert_groups: Option<u32>,
    /// Groups one token's routed experts may come from (`topk_group`; DeepSeek-V3 report
    /// section 2.1.2, node-limited routing: at most M = 4 nodes). Set with `expert_groups`;
    /// training then dispatches each token once per scale-up domain (`train::step`).
    pub expert_groups_per_token: Option<u32>,
    pub mla_kv_lora_rank: Option<u32>,
    pub mla_q_lora_rank: Option<u32>,
    pub mla_rope_head_dim: Option<u32>,
    /// Window of the sliding-window attention layers, tokens.
    pub sliding_window: Option<u32>,
    /// How many layers use sliding-window attention (the rest attend to the full context).
    pub sliding_window_layers: Option<u32>,
    /// Format the published checkpoint stores the routed-expert weights in when they come
    /// pre-quantized (gpt-oss: MXFP4; all its other weights bf16). Engines serve these weights as
    /// published, weight-only, in any wider format the sweep asks for (docs/model.md, "Number
    /// formats").
    #[serde(default)]
    pub checkpoint_expert_dtype: Option<String>,
    /// Format the same checkpoint stores every other linear weight in (attention, routers, shared
    /// or dense MLPs; gpt-oss: bf16). Served as published wherever the experts are, so those
    /// layers run in it rather than in the sweep's format (docs/model.md, "Number formats").
    #[serde(default)]
    pub checkpoint_dense_dtype: Option<String>,
    /// Side of the square weight blocks the published FP8 checkpoint scales by
    /// (`quantization_config.weight_block_size` of its config.json; DeepSeek-V3 and Qwen3: 128).
    /// Engines serve such a checkpoint with block-scaled FP8 GEMMs (DeepGEMM-style, one scale
    /// per 128 x 128 tile), which run slower than per-tensor FP8; absent: per-tensor FP8
    /// (docs/model.md, "Measured kernel surfaces").
    #[serde(default)]
    pub fp8_block_size: Option<u32>,
    /// The routing skew the MoE kernel tables are read at (MoE models; default balanced).
    #[serde(default)]
    pub expert_routing: ExpertRouting,
    /// Published parameter counts, billions (a cross-check; the engine uses its own count).
    pub published_total_params_b: Option<f64>,
    pub published_active_params_b: Option<f64>,
}

/// Parameter counts of one model, split the way sharding needs them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ParamCounts {
    /// Attention projections of one layer (q, k, v, o or the MLA equivalents) plus its norms.
    pub attention_per_layer: f64,
    /// Dense MLP of one dense layer.
    pub dense_mlp_per_layer: f64,
    /// One routed expert of one MoE layer.
    pub expert: f64,
    /// Shared experts plus router of one MoE layer (replicated like dense weights).
    pub moe_shared_per_layer: f64,
    /// Layers whose MLP is dense.
    pub dense_layers: u32,
    /// Layers whose MLP is a mixture of experts.
    pub moe_layers: u32,
    /// Input embedding table.
    pub embedding: f64,
    /// Output projection (0 when tied to the embedding).
    pub lm_head: f64,
}

impl ParamCounts {
    pub fn routed_experts_total(&self, experts: u32) -> f64 {
        self.expert * f64::from(experts) * f64::from(self.moe_layers)
    }

    /// All parameters.
    pub fn total(&self, experts: u32) -> f64 {
        self.non_expert_layers()
            + self.routed_experts_total(experts)
            + self.embedding
            + self.lm_head
    }

    /// Parameters one token touches: every non-expert weight plus `experts_per_token` experts.
    pub fn active(&self, experts_per_token: u32) -> f64 {
        self.non_expert_layers()
            + self.expert * f64::from(experts_per_token) * f64::from(self.moe_layers)
            + self.embedding
            + self.lm_head
    }

    /// Attention, dense MLPs, shared experts and routers of every layer.
    pub fn non_expert_layers(&self) -> f64 {
        let layers = f64::from(self.dense_layers + self.moe_layers);
        self.attention_per_layer * layers
            + self.dense_mlp_per_layer * f64::from(self.dense_layers)
            + self.moe_shared_per_layer * f64::from(self.moe_layers)
    }
}

impl Model {
    pub fn is_moe(&self) -> bool {
        self.experts.is_some_and(|e| e > 1)
    }

    pub fn experts(&self) -> u32 {
        self.experts.unwrap_or(0)
    }

    pub fn experts_per_token(&self) -> u32 {
        self.experts_per_token.unwrap_or(0)
    }

    /// `(expert_groups, expert_groups_per_token)` when the model limits each token's routed
    /// experts to a few groups.
    pub fn routing_groups(&self) -> Option<(u32, u32)> {
        self.expert_groups.zip(self.expert_groups_per_token)
    }

    /// Parameter counts from the layer shapes; `None` when the vocabulary is unknown.
    pub fn param_counts(&self) -> Option<ParamCounts> {
        let h = f64::from(self.hidden);
        let vocab = f64::from(self.vocab?);
        let attention = match self.attention {
            Attention::Mha | Attention::Gqa => {
                let q = f64::from(self.heads * self.head_dim);
                let kv = f64::from(self.kv_heads * self.head_dim);
                // q and o projections (h x q each), k and v projections (h x kv each).
                2.0 * h * q + 2.0 * h * kv
            }
            Attention::Mla => {
                // DeepSeek-V3 report (arXiv:2412.19437) section 2.1.1: low-rank q (q_a, q_b),
                // joint KV latent (kv_a incl. the decoupled RoPE key), kv_b up-projection to
                // per-head no-RoPE keys and values, and the output projection.
                let heads = f64::from(self.heads);
                let nope = f64::from(self.head_dim);
                let rope = f64::from(self.mla_rope_head_dim.unwrap_or(0));
                let kv_rank = f64::from(self.mla_kv_lora_rank.unwrap_or(0));
                let q_rank = f64::from(self.mla_q_lora_rank.unwrap_or(0));
                let v_dim = nope;
                let q = if q_rank > 0.0 {
                    h * q_rank + q_rank * heads * (nope + rope)
                } else {
                    h * heads * (nope + rope)
                };
                q + h * (kv_rank + rope) + kv_rank * heads * (nope + v_dim) + heads * v_dim * h
            }
        };
        // Two RMSNorm/LayerNorm weight vectors per layer.
        let attention_per_layer = attention + 2.0 * h;
        let matrices = self.mlp.matrices();
        let dense_mlp_per_layer = self.ffn_hidden.map_or(0.0, |f| matrices * h * f64::from(f));
        let (dense_layers, moe_layers, expert, moe_shared_per_layer) = if self.is_moe() {
            let moe_ffn = f64::from(self.moe_ffn_hidden.unwrap_or(0));
            let expert = matrices * h * moe_ffn;
            let dense = self.dense_layers.unwrap_or(0).min(self.layers);
            let shared = f64::from(self.shared_experts.unwrap_or(0)) * expert;
            let router = h * f64::from(self.experts());
            (dense, self.layers - dense, expert, shared + router)
        } else {
            (self.layers, 0, 0.0, 0.0)
        };
        let embedding = vocab * h;
        let lm_head = if self.tied_embeddings { 0.0 } else { vocab * h };
        Some(ParamCounts {
            attention_per_layer,
            dense_mlp_per_layer,
            expert,
            moe_shared_per_layer,
            dense_layers,
            moe_layers,
            embedding,
            lm_head,
        })
    }
}
