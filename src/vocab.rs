//! Words both grids, the spec and the models share: a platform (a GPU preset in a rack) and how
//! the hardware is paid for. Owns nothing else; the grids (`crate::grid`, `crate::train::grid`)
//! and the cost model (`crate::perf::cost`) import these from here.

/// A GPU preset together with the rack it is deployed in (indices into the sweep's catalog).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Platform {
    pub gpu: usize,
    pub rack: usize,
}

/// How the hardware is paid for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Ownership {
    Cloud,
    Owned,
}

impl Ownership {
    pub const ALL: [Ownership; 2] = [Ownership::Cloud, Ownership::Owned];

    pub fn as_str(self) -> &'static str {
        match self {
            Ownership::Cloud => "cloud",
            Ownership::Owned => "owned",
        }
    }

    pub fn parse(s: &str) -> Option<Ownership> {
        Ownership::ALL.into_iter().find(|o| o.as_str() == s)
    }
}
