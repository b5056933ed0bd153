//! Words both grids, the spec and the models share: a platform (a GPU preset in a rack), how the
//! hardware is paid for, and what makes a set of words a [`Vocabulary`] a categorical grid axis
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
    /// A serving engine: whose measured kernels, CUDA graphs and scheduler a configuration runs
    /// (docs/model.md §8, "Measured kernel surfaces" and "Per-iteration cost").
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Deserialize)]
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
