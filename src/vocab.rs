//! Words both grids, the spec and the models share: a platform (a GPU preset in a rack), how the
//! hardware is paid for (ownership, and the pricing of cloud GPU-hours), and what makes a set of words a [`Vocabulary`] a categorical grid axis
//! can take. The grids (`crate::grid`, `crate::train::grid`), the spec and the cost model
//! (`crate::perf::cost`) import these from here.

/// A GPU preset together with the rack it is deployed in (indices into the sweep's catalog).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Platform {
    pub gpu: usize,
    pub rack: usize,
}

crate::names::names! {
    /// How the hardware is paid for.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    #[repr(u8)]
    pub enum Ownership {
        Cloud => "cloud";
        Owned => "owned";
    }
}

impl Vocabulary for Ownership {
    const ALL: &'static [Ownership] = &Ownership::ALL;
    const NOUN: &'static str = "ownership mode";
    const EMPTY_HINT: Option<&'static str> =
        Some("list \"cloud\", \"owned\" or both, or remove the key for cloud");
    const UNKNOWN_HINT: Option<&'static str> =
        Some("use \"cloud\" (GPU-hours at list price) or \"owned\" (capex amortized plus opex)");

    fn as_str(self) -> &'static str {
        Ownership::as_str(self)
    }
}

crate::names::names! {
    /// How cloud GPU-hours are bought: which of the GPU's prices per GPU-hour applies (its
    /// catalog list price, or a sweep's `[[price]]` quote). Owned hardware has no pricing.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    #[repr(u8)]
    pub enum Pricing {
        /// Pay as you go, no commitment: the catalog's price before this axis existed.
        OnDemand => "on-demand";
        /// A one-year commitment (reserved instance, committed use, savings plan).
        Reserved1y => "reserved-1y";
        /// A three-year commitment.
        Reserved3y => "reserved-3y";
        /// Spare capacity the provider may reclaim; rows add standby servers for the
        /// interruptions (docs/model.md, "Cost").
        Spot => "spot";
    }
}

impl Vocabulary for Pricing {
    const ALL: &'static [Pricing] = &Pricing::ALL;
    const NOUN: &'static str = "pricing";
    const EMPTY_HINT: Option<&'static str> = Some(
        "list some of \"on-demand\", \"reserved-1y\", \"reserved-3y\", \"spot\", or remove the key for on-demand",
    );

    fn as_str(self) -> &'static str {
        Pricing::as_str(self)
    }
}

/// How one configuration pays for its hardware: owned, or rented in the cloud at a pricing. The
/// values of the inference grid's `ownership` axis (`[grid] ownership` x `[grid] pricing`, owned
/// once whatever the pricings: a price per GPU-hour does not apply to it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Payment {
    Cloud(Pricing),
    Owned,
}

impl Payment {
    /// Cloud GPU-hours at the on-demand price: the axis's default.
    pub const DEFAULT: Payment = Payment::Cloud(Pricing::OnDemand);

    pub fn ownership(self) -> Ownership {
        match self {
            Payment::Cloud(_) => Ownership::Cloud,
            Payment::Owned => Ownership::Owned,
        }
    }

    /// The pricing of rented hardware; `None` when owned.
    pub fn pricing(self) -> Option<Pricing> {
        match self {
            Payment::Cloud(p) => Some(p),
            Payment::Owned => None,
        }
    }
}

impl From<Ownership> for Payment {
    /// Cloud at the on-demand price, or owned.
    fn from(o: Ownership) -> Payment {
        match o {
            Ownership::Cloud => Payment::DEFAULT,
            Ownership::Owned => Payment::Owned,
        }
    }
}

crate::names::names! {
    /// A serving engine: whose measured kernels, CUDA graphs and scheduler a configuration runs
    /// (docs/model.md §8, "Measured kernel surfaces" and "Per-iteration cost").
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Deserialize, serde::Serialize)]
    #[serde(rename_all = "lowercase")]
    #[repr(u8)]
    pub enum ServingEngine {
        /// TensorRT-LLM (PyTorch backend, `trtllm-serve` / `trtllm-bench`), NVIDIA only.
        #[default]
        Trtllm => "trtllm";
        /// vLLM (V1 engine).
        Vllm => "vllm";
        /// SGLang.
        Sglang => "sglang";
    }
}

crate::names::names! {
    /// A value of the `engine` axis: a serving engine, or `auto`, each GPU's own first engine
    /// (its `engines` in the catalog: TensorRT-LLM on NVIDIA GPUs, vLLM on AMD ones).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    #[repr(u8)]
    pub enum Engine {
        Auto => "auto";
        Trtllm => "trtllm";
        Vllm => "vllm";
        Sglang => "sglang";
    }
}

impl ServingEngine {
    /// Whether the engine can overlap two micro-batches' compute with their MoE dispatch and
    /// combine under data-parallel attention and expert parallelism: SGLang
    /// (`--enable-two-batch-overlap`, PR 4068) and vLLM (`--enable-dbo`, "Dual Batch Overlap",
    /// docs.vllm.ai design docs: "currently only targets DP+EP deployments"). TensorRT-LLM's
    /// `trtllm-serve` options name no such mode.
    pub fn overlaps_two_batches(self) -> bool {
        matches!(self, ServingEngine::Vllm | ServingEngine::Sglang)
    }

    /// Whether the engine, as configured by default, exchanges an MoE layer's tokens under
    /// data-parallel attention by all-gather and reduce-scatter (every GPU of the stage gathers
    /// every rank's tokens) rather than by an all-to-all, for an expert-parallel group of `ep`
    /// GPUs, `top_k` experts per token, in a scale-up domain that does (`multi_node_nvlink`) or
    /// does not span servers. TensorRT-LLM turns its all-to-all on only for `ep > top_k` over
    /// multi-node NVLink (`enable_alltoall`: `moe_ep_size > experts_per_token` and
    /// `MnnvlMemory.supports_mnnvl()`, `tensorrt_llm/_torch/modules/fused_moe/
    /// fused_moe_cutlass.py`); vLLM's default `--all2all-backend` is `allgather_reducescatter`
    /// (docs.vllm.ai, "Expert Parallel Deployment"); SGLang's default `--moe-a2a-backend` is
    /// `none` (`server_args.py`), under which its data-parallel attention gathers the ranks'
    /// tokens for the MoE layers and scatters the outputs back. Two-batch overlap (vLLM,
    /// SGLang) overlaps the DeepEP all-to-all, so a deployment that runs it runs the all-to-all.
    pub fn gathers_expert_tokens(
        self,
        ep: u32,
        top_k: u32,
        multi_node_nvlink: bool,
        two_batch_overlap: bool,
    ) -> bool {
        match self {
            ServingEngine::Trtllm => ep <= top_k || !multi_node_nvlink,
            ServingEngine::Vllm | ServingEngine::Sglang => !two_batch_overlap,
        }
    }
}

impl Engine {
    /// The engine this word runs on a GPU that runs `engines` (its default first); `None` when
    /// the GPU does not run it.
    pub fn on(self, engines: &[ServingEngine]) -> Option<ServingEngine> {
        let named = match self {
            Engine::Auto => return engines.first().copied(),
            Engine::Trtllm => ServingEngine::Trtllm,
            Engine::Vllm => ServingEngine::Vllm,
            Engine::Sglang => ServingEngine::Sglang,
        };
        engines.contains(&named).then_some(named)
    }
}

impl Vocabulary for Engine {
    const ALL: &'static [Engine] = &Engine::ALL;
    const NOUN: &'static str = "serving engine";
    const UNKNOWN_HINT: Option<&'static str> =
        Some("use \"auto\" (each GPU's first engine), \"trtllm\", \"vllm\" or \"sglang\"");

    fn as_str(self) -> &'static str {
        Engine::as_str(self)
    }
}

/// A fixed set of words, the values of a categorical grid axis (`Named<T>` in an axis table):
/// its words, and how the spec's errors speak of them.
pub trait Vocabulary: Copy + PartialEq + std::fmt::Debug + 'static {
    /// Every word, in the order the hints list them.
    const ALL: &'static [Self];
    /// What one word is called in an "unknown ..." error.
    const NOUN: &'static str = "value";
    /// The hint of an empty list; `None`: "list some of ..., or remove the key for the default".
    const EMPTY_HINT: Option<&'static str> = None;
    /// The hint of an unknown word; `None`: "use" and the words.
    const UNKNOWN_HINT: Option<&'static str> = None;

    fn as_str(self) -> &'static str;

    /// The word spelled `text`.
    fn parse(text: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|w| w.as_str() == text)
    }
}

#[cfg(test)]
mod tests {
    use super::ServingEngine;

    /// TensorRT-LLM gathers at ep 4 and 8 for a top-8 model wherever it runs, and at ep 16 on
    /// HGX (no multi-node NVLink); it runs its all-to-all at ep 16 on an NVL72. vLLM and SGLang
    /// gather by default and run the all-to-all when two batches overlap it.
    #[test]
    fn which_engines_gather_the_experts_tokens() {
        let trtllm = |ep, mnnvl| ServingEngine::Trtllm.gathers_expert_tokens(ep, 8, mnnvl, false);
        assert!(trtllm(4, true) && trtllm(8, true) && trtllm(8, false) && trtllm(16, false));
        assert!(!trtllm(16, true));
        for engine in [ServingEngine::Vllm, ServingEngine::Sglang] {
            assert!(engine.gathers_expert_tokens(16, 8, true, false));
            assert!(!engine.gathers_expert_tokens(4, 8, false, true));
        }
    }
}
