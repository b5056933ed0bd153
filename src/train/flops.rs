//! FLOPs of one training step. Model FLOPs count the forward pass and the backward pass (twice
//! the forward) of every matrix multiply a token goes through, plus attention scores and the
//! logits: Narayanan et al. 2021 ("Efficient Large-Scale Language Model Training on GPU Clusters
//! Using Megatron-LM", arXiv:2104.04473), Eq. 3 without its recomputation pass, generalized from
//! GPT to gated MLPs, grouped-query and latent attention and mixtures of experts (a token's
//! routed experts count, the others do not: DeepSeek-V3 report, arXiv:2412.19437, counts its
//! 37B active parameters the same way). Hardware FLOPs add what activation recomputation runs
//! again. Like Eq. 3 (and Megatron's and NeMo's "model TFLOP/s"), attention scores count the
//! whole `seq_len x seq_len` matrix, masked half included.

use crate::catalog::{Attention, Model};

use super::Recompute;

/// Forward FLOPs per token of one training sequence of `seq_len` tokens, split by where they
/// run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ForwardFlops {
    /// Matrix multiplies of the transformer layers (attention projections, MLPs, active experts,
    /// routers), all layers: 2 FLOPs per parameter.
    pub layer_matmul: f64,
    /// Of which routed experts.
    pub expert_matmul: f64,
    /// Attention scores and the weighted sum of values, all layers: `4 x seq_len x width`.
    pub attention: f64,
    /// Logits: `2 x hidden x vocab`.
    pub logits: f64,
}

impl ForwardFlops {
    pub fn new(model: &Model, seq_len: f64) -> Option<ForwardFlops> {
        let p = model.param_counts()?;
        let layers = f64::from(model.layers);
        let moe = f64::from(p.moe_layers);
        let active_experts = f64::from(model.experts_per_token());
        let layer_params = p.non_expert_layers() + p.expert * active_experts * moe;
        // QK^T multiplies (query width) and AV multiplies (value width) per key.
        let (qk_width, v_width) = match model.attention {
            Attention::Mha | Attention::Gqa => {
                let w = f64::from(model.heads * model.head_dim);
                (w, w)
            }
            Attention::Mla => {
                let heads = f64::from(model.heads);
                let rope = f64::from(model.mla_rope_head_dim.unwrap_or(0));
                let nope = f64::from(model.head_dim);
                (heads * (nope + rope), heads * nope)
            }
        };
        // Sliding-window layers attend to at most their window.
        let window_layers = f64::from(model.sliding_window_layers.unwrap_or(0));
        let window = model
            .sliding_window
            .map_or(seq_len, |w| seq_len.min(f64::from(w)));
        let keys = (layers - window_layers) * seq_len + window_layers * window;
        let vocab = f64::from(model.vocab?);
        Some(ForwardFlops {
            layer_matmul: 2.0 * layer_params,
            expert_matmul: 2.0 * p.expert * active_experts * moe,
            attention: 2.0 * keys * (qk_width + v_width),
            logits: 2.0 * f64::from(model.hidden) * vocab,
        })
    }

    /// Model FLOPs per token of a training step: forward plus backward (2x forward).
    pub fn model_per_token(&self) -> f64 {
        3.0 * (self.layer_matmul + self.attention + self.logits)
    }

    /// Forward FLOPs recomputation runs again per token (Korthikanti et al. 2022, "Reducing
    /// Activation Recomputation in Large Transformer Models", arXiv:2205.05198): the attention
    /// core for selective recomputation, every layer's forward for full recomputation.
    pub fn recomputed_per_token(&self, recompute: Recompute) -> f64 {
        match recompute {
            Recompute::None => 0.0,
            Recompute::Selective => self.attention,
            Recompute::Full => self.layer_matmul + self.attention,
        }
    }

    /// Hardware FLOPs per token: model FLOPs plus recomputation.
    pub fn hardware_per_token(&self, recompute: Recompute) -> f64 {
        self.model_per_token() + self.recomputed_per_token(recompute)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;

    /// GPT-3 175B (96 layers, h = 12288, vocab 51200 in Narayanan's Table 1 convention) at
    /// 2048 tokens: Eq. 3 with full recomputation is 96 B s l h^2 (1 + s/(6h) + V/(16 l h)).
    #[test]
    fn narayanan_eq_3_for_gpt_models() {
        let catalog = Catalog::builtin().unwrap();
        for id in ["gpt-145b", "gpt-1t", "gpt3-175b"] {
            let m = catalog.model(id).unwrap();
            let f = ForwardFlops::new(m, 2048.0).unwrap();
            let (l, h, s) = (f64::from(m.layers), f64::from(m.hidden), 2048.0);
            let v = f64::from(m.vocab.unwrap());
            let eq3 = 96.0 * s * l * h * h * (1.0 + s / (6.0 * h) + v / (16.0 * l * h)) / s;
            let ours = f.hardware_per_token(Recompute::Full);
            // Eq. 3 counts 24 l h^2 of layer weights per token per pass; ours counts the
            // layer norms' and biases' few extra parameters too.
            assert!((ours / eq3 - 1.0).abs() < 0.002, "{id}: {ours} vs {eq3}");
            // Without recomputation: 72 B s l h^2 (1 + s/(6h)) + 6 B s h V.
            let model = 72.0 * l * h * h * (1.0 + s / (6.0 * h)) + 6.0 * h * v;
            assert!((f.model_per_token() / model - 1.0).abs() < 0.002, "{id}");
        }
    }

    /// An MoE token pays for its routed experts only: DeepSeek-V3's 6 x 37B per token plus
    /// attention.
    #[test]
    fn moe_counts_active_experts() {
        let catalog = Catalog::builtin().unwrap();
        let m = catalog.model("deepseek-v3").unwrap();
        let f = ForwardFlops::new(m, 4096.0).unwrap();
        let active = m.param_counts().unwrap().active(m.experts_per_token());
        let embedding = m.param_counts().unwrap().embedding;
        // Active parameters less the embedding lookup, which multiplies nothing.
        let matmul = 3.0 * (f.layer_matmul + f.logits);
        assert!((matmul / (6.0 * (active - embedding)) - 1.0).abs() < 1e-9);
        assert!((matmul / 6.0 / 1e9 - 36.7).abs() < 1.0, "{}", matmul / 6e9);
        // MLA attention per token: 4096 keys x 128 heads x (192 + 128) x 2 x 61 layers.
        let attention = 2.0 * 4096.0 * 128.0 * (192.0 + 128.0) * 61.0;
        assert!((f.attention - attention).abs() < 1.0);
    }
}
