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
