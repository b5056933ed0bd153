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
