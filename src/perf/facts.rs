//! Facts about the served model that the performance model uses, derived once per sweep from
//! its catalog entry (docs/model.md, "Model facts").

use crate::catalog::{Attention, Model};

use super::comm;
use super::kernels::LayerGemms;
use super::layout::LayoutModel;

/// Model facts the performance model uses, derived once per sweep from the catalog entry.
#[derive(Debug, Clone)]
pub struct ModelFacts {
    pub layers: u32,
    /// Leading layers with a dense MLP (all layers for a dense model).
    pub dense_layers: u32,
    pub hidden: f64,
    pub vocab: f64,
    pub kv_heads: u32,
    /// Query heads.
    pub heads: f64,
    pub head_dim: f64,
    pub mla: bool,
    /// MLA: compressed latent plus decoupled RoPE key per token per layer.
    pub mla_latent_dim: f64,
    pub attention_params_per_layer: f64,
    pub dense_mlp_params_per_layer: f64,
    pub moe_shared_params_per_layer: f64,
    pub expert_params: f64,
    /// Intermediate width of one routed expert, and weight matrices per MLP (3 gated, 2 plain).
    pub moe_ffn_hidden: f64,
    pub mlp_matrices: f64,
    /// The linear layers as GEMM shapes (the kernel surfaces time them one by one).
    pub gemms: LayerGemms,
    pub experts: u32,
    pub experts_per_token: u32,
    pub embedding_params: f64,
    /// LM head parameters (the embedding matrix when tied).
    pub head_params: f64,
    pub tied_embeddings: bool,
    /// Whether MoE layers have always-on shared experts (DeepSeek-V3) besides the routed ones.
    pub has_shared_experts: bool,
    /// Node-limited routing, `(groups, groups_per_token)`, of models that declare it.
    pub routing_groups: Option<(u32, u32)>,
    /// Activation elements the non-GEMM kernels of one layer read and write per token, besides
    /// the MLP (docs/model.md, "Activation traffic"): two norms and two residual adds on the
    /// hidden state (`12 h`), and the attention inputs and outputs (`4 x heads x d_eff`, split
    /// over tp; `d_eff` is the head dim, or the latent plus RoPE width for absorbed MLA).
    pub norm_io_per_token_layer: f64,
    pub attention_io_per_token_layer: f64,
    /// Dense-MLP intermediates written and read per token (`2 m ffn`, split over tp).
    pub dense_mlp_io_per_token: f64,
    /// Shared-expert intermediates per token per MoE layer (split over tp).
    pub shared_io_per_token: f64,
    /// Per routed assignment: permute and unpermute of the hidden state (`4 h`) and the expert's
    /// intermediates (`2 m ffn_e`).
    pub expert_io_per_assignment: f64,
    /// Intermediate activations per token of the dense MLP (gate and up outputs).
    pub mlp_inner_per_token: f64,
    /// Intermediate activations per token per routed expert.
    pub moe_inner_per_token: f64,
    /// Attention FLOPs per token per attended context token per layer, all heads.
    pub decode_attention_flops_per_context: f64,
    pub prefill_attention_flops_per_context: f64,
    /// Fraction of layers with sliding-window attention and their window (tokens).
    pub sliding_fraction: f64,
    pub sliding_window: f64,
    /// Served with an expert-parallel load balancer (`[workload] eplb`): one redundant expert
    /// replica per expert-parallel rank in every MoE layer, and expert loads balanced over the
    /// ranks (docs/model.md §8, "Routed experts").
    pub eplb: bool,
    /// `ln(1 - experts_per_token / experts)`, for the expected share of experts a step touches.
    ln_expert_miss: f64,
    pub(super) layout_model: LayoutModel,
}

impl ModelFacts {
    /// The routing the expert all-to-all sees.
    pub fn routing(&self) -> comm::Routing {
        comm::Routing {
            experts: self.experts,
            experts_per_token: self.experts_per_token,
            groups: self.routing_groups,
        }
    }

    /// `None` when the catalog entry lacks what evaluation needs (its vocabulary).
    pub fn new(model: &Model) -> Option<ModelFacts> {
        let counts = model.param_counts()?;
        let hidden = f64::from(model.hidden);
        let heads = f64::from(model.heads);
        let head_dim = f64::from(model.head_dim);
        let mla = model.attention == Attention::Mla;
        let latent = f64::from(model.mla_kv_lora_rank.unwrap_or(0));
        let rope = f64::from(model.mla_rope_head_dim.unwrap_or(0));
        let (decode_attention, prefill_attention) = if mla {
            // Absorbed decode: scores over latent + rope dims, values over the latent.
            // Prefill: decompressed heads with (nope + rope) key dims and head_dim value dims.
            (
                2.0 * heads * (2.0 * latent + rope),
                2.0 * heads * (head_dim + rope + head_dim),
            )
        } else {
            (4.0 * heads * head_dim, 4.0 * heads * head_dim)
        };
        let inner_matrices = model.mlp.matrices() - 1.0;
        let experts = if model.is_moe() { model.experts() } else { 0 };
        let k = if model.is_moe() {
            model.experts_per_token()
        } else {
            0
        };
        let ln_expert_miss = if experts > 0 {
            (1.0 - f64::from(k) / f64::from(experts)).ln()
        } else {
            0.0
        };
        Some(ModelFacts {
            layers: model.layers,
            dense_layers: counts.dense_layers,
            hidden,
            vocab: f64::from(model.vocab?),
            kv_heads: model.kv_heads,
            heads,
            head_dim,
            mla,
            mla_latent_dim: latent + rope,
            attention_params_per_layer: counts.attention_per_layer,
            dense_mlp_params_per_layer: counts.dense_mlp_per_layer,
            moe_shared_params_per_layer: counts.moe_shared_per_layer,
            expert_params: counts.expert,
            moe_ffn_hidden: f64::from(model.moe_ffn_hidden.unwrap_or(0)),
            mlp_matrices: model.mlp.matrices(),
            gemms: LayerGemms::of(model),
            experts,
            experts_per_token: k,
            embedding_params: counts.embedding,
            head_params: counts.embedding,
            tied_embeddings: model.tied_embeddings,
            eplb: false,
            has_shared_experts: model.is_moe() && model.shared_experts.unwrap_or(0) > 0,
            routing_groups: model.routing_groups(),
            norm_io_per_token_layer: 12.0 * hidden,
            attention_io_per_token_layer: 4.0 * heads * if mla { latent + rope } else { head_dim },
            dense_mlp_io_per_token: 2.0
                * model.mlp.matrices()
                * f64::from(model.ffn_hidden.unwrap_or(0)),
            shared_io_per_token: f64::from(model.shared_experts.unwrap_or(0))
                * 2.0
                * model.mlp.matrices()
                * f64::from(model.moe_ffn_hidden.unwrap_or(0)),
            expert_io_per_assignment: 4.0 * hidden
                + 2.0 * model.mlp.matrices() * f64::from(model.moe_ffn_hidden.unwrap_or(0)),
            mlp_inner_per_token: inner_matrices * f64::from(model.ffn_hidden.unwrap_or(0)),
            moe_inner_per_token: inner_matrices * f64::from(model.moe_ffn_hidden.unwrap_or(0)),
            decode_attention_flops_per_context: decode_attention,
            prefill_attention_flops_per_context: prefill_attention,
            sliding_fraction: f64::from(model.sliding_window_layers.unwrap_or(0))
                / f64::from(model.layers),
            sliding_window: f64::from(model.sliding_window.unwrap_or(0)),
            ln_expert_miss,
            layout_model: LayoutModel {
                layers: model.layers,
                heads: model.heads,
                kv_heads: model.kv_heads,
                mla,
                experts,
            },
        })
    }

    /// Tokens a layer attends to (and caches) for a context, averaged over full-attention and
    /// sliding-window layers.
    pub fn attended_tokens(&self, context: f64) -> f64 {
        self.mean_over_layers(context, |c| c)
    }

    /// `per_layer` of the context each layer attends to, averaged over the layers: full-attention
    /// layers attend to `context`, sliding-window layers to at most their window. Exact for any
    /// `per_layer`, where `per_layer(attended_tokens(context))` is exact only for a linear one (a
    /// measured kernel surface is not: its per-CTA cost and its shape factor do not scale with
    /// the context).
    pub fn mean_over_layers(&self, context: f64, per_layer: impl Fn(f64) -> f64) -> f64 {
        self.mean_of_kinds(per_layer(context), || {
            per_layer(context.min(self.sliding_window))
        })
    }

    /// The mean over the layers of a quantity worth `full` in a full-attention layer and
    /// `window()` in a sliding-window one (evaluated only where the model has such layers).
    pub fn mean_of_kinds(&self, full: f64, window: impl FnOnce() -> f64) -> f64 {
        if self.sliding_fraction == 0.0 {
            return full;
        }
        (1.0 - self.sliding_fraction) * full + self.sliding_fraction * window()
    }

    /// Load of the busiest of `ep` expert groups relative to the mean, for `tokens` tokens routed
    /// uniformly: each group receives Binomial(tokens x k, 1/ep) assignments, and the expected
    /// maximum of `ep` such counts is about `mu + sqrt(2 ln ep) sigma` (Gumbel approximation of
    /// the maximum of near-normal variables; David & Nagaraja 2003, "Order Statistics", 10.5).
    pub fn expert_imbalance(&self, tokens: f64, ep: u32) -> f64 {
        if ep <= 1 || self.experts == 0 || tokens <= 0.0 {
            return 1.0;
        }
        let ep = f64::from(ep);
        let mean = tokens * f64::from(self.experts_per_token) / ep;
        1.0 + (2.0 * ep.ln() * (1.0 - 1.0 / ep) / mean).sqrt()
    }

    /// Routed experts held per MoE layer over an expert-parallel group of `ep` ranks: the
    /// model's experts, plus one redundant replica per rank under EPLB (DeepSeek-V3 report,
    /// arXiv:2412.19437, section 3.4: each GPU of the 32-way prefill deployment hosts its 8
    /// experts and one redundant one, 288 slots for 256 experts, as TensorRT-LLM's wide-EP
    /// examples configure; SGLang and vLLM take the count as `--ep-num-redundant-experts`,
    /// `--num-redundant-experts`). Without expert parallelism there is nothing to balance.
    pub fn expert_slots(&self, ep: u32) -> f64 {
        let redundant = if self.balances_experts(ep) { ep } else { 0 };
        f64::from(self.experts + redundant)
    }

    /// Whether expert loads are balanced over `ep` expert-parallel ranks (EPLB served and
    /// `ep > 1`).
    pub fn balances_experts(&self, ep: u32) -> bool {
        self.eplb && ep > 1
    }

    /// Expected share of a GPU's routed experts that at least one of `tokens` tokens selects, with
    /// uniform top-k routing: `1 - (1 - k/E)^tokens` (each token picks k distinct experts of E).
    pub fn expert_fraction_touched(&self, tokens: f64) -> f64 {
        if self.experts == 0 {
            return 0.0;
        }
        1.0 - (tokens * self.ln_expert_miss).exp()
    }
}
