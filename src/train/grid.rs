//! The design space of a training sweep, declared once in [`training_axes!`] like the inference
//! grid's (`crate::grid`, whose module doc has the recipe for adding an axis; here the model
//! code is `crate::space::Training` and `crate::train`, the column `src/columns/training.rs`,
//! the docs docs/sweep-format.md "Training sweeps"). Configuration `i` is decoded into one value
//! per axis, nothing is materialized.

use crate::axis::{Kind, Named, Numbers, Platforms};
use crate::catalog::Catalog;

/// The training grid's axes, slowest-varying first: one row per axis, handed to the generator
/// named in the call (`crate::axis::grid!` builds [`TrainPoint`] and [`TrainGrid`] here;
/// `spec::raw::raw_grid!` and `spec::grid::load_grid!` build the `[grid]` table's mirror and
/// checks). Row syntax: `crate::axis`; defaults: docs/sweep-format.md, "Training sweeps".
macro_rules! training_axes {
    ($($generator:ident)::+ ! { $($args:tt)* }) => {
        $($generator)::+! {
            $($args)*
            /// Index into `TrainGrid::platform`: a GPU preset in its rack.
            platform: Platforms;
            /// Racks, GPUs or dp, as `TrainGrid::scale.by` says.
            scale: Sizes = [1];
            tp: Numbers = [1, 2, 4, 8], DEGREE;
            pp: Numbers = [1], DEGREE;
            cp: Numbers = [1], DEGREE;
            ep: Numbers = [1], DEGREE;
            microbatch: Numbers = [1], BATCH;
            virtual_stages: Numbers = [1], DEGREE;
            zero_stage: Numbers = [1], ZERO_STAGES;
            /// Index into `TrainGrid::recompute`.
            recompute: Named<crate::train::Recompute> = Selective;
            /// Index into `TrainGrid::precision`.
            precision: Named<crate::train::Precision> = Bf16;
            /// Index into `TrainGrid::ownership`.
            ownership: Named<crate::vocab::Ownership> = Cloud;
        }
    };
}
pub(crate) use training_axes;

training_axes!(crate::axis::grid! {
    /// One training configuration.
    pub struct TrainPoint;
    /// The values of every axis of a training sweep.
    pub struct TrainGrid;
    /// Iterator over a contiguous slice of the grid, yielding `(index, point)`, updated in place.
    pub struct TrainPoints;
});

/// How the cluster's size is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// Whole racks; data parallelism fills them (dp = GPUs / (tp x pp x cp)).
    Racks,
    /// GPUs; data parallelism fills them, in the racks they need.
    Gpus,
    /// Data-parallel replicas; the racks are those the GPUs need, the last one maybe partly used.
    Dp,
}

impl Scale {
    /// The `[grid]` key that gives the scale, and the axis's name.
    pub fn key(self) -> &'static str {
        match self {
            Scale::Racks => "racks",
            Scale::Gpus => "gpus",
            Scale::Dp => "dp",
        }
    }
}

/// The scale axis's values: racks, GPUs or dp, as `by` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterSizes {
    pub by: Scale,
    pub values: Vec<u32>,
}

/// The cluster's size, given by one of the keys `racks`, `gpus` or `dp` (default one rack); the
/// point holds the value.
pub struct Sizes;

impl Kind for Sizes {
    type Values = ClusterSizes;
    /// Racks.
    type Default = [u32];

    fn len(sizes: &ClusterSizes) -> usize {
        sizes.values.len()
    }

    #[inline]
    fn held(sizes: &ClusterSizes, digit: u32) -> u32 {
        Numbers::held(&sizes.values, digit)
    }

    fn digit(sizes: &ClusterSizes, held: u32) -> Option<u32> {
        Numbers::digit(&sizes.values, held)
    }

    fn name(_: &'static str, sizes: &ClusterSizes) -> &'static str {
        sizes.by.key()
    }

    fn shown(sizes: &ClusterSizes, catalog: &Catalog) -> String {
        Numbers::shown(&sizes.values, catalog)
    }

    fn single(default: &[u32], catalog: &Catalog) -> ClusterSizes {
        ClusterSizes {
            by: Scale::Racks,
            values: Numbers::single(default, catalog),
        }
    }

    #[cfg(test)]
    fn sample(n: usize) -> ClusterSizes {
        ClusterSizes {
            by: Scale::Racks,
            values: Numbers::sample(n),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// point() is a bijection between 0..len and the product of the axes, and range()
        /// visits exactly the points point() decodes.
        #[test]
        fn point_is_a_bijection(sizes in proptest::array::uniform::<_, AXES>(1usize..3), a in 0u64..300, b in 0u64..300) {
            let g = TrainGrid::sample(sizes);
            let n = g.len();
            let mut seen = std::collections::HashSet::new();
            for i in 0..n {
                let p = g.point(i);
                prop_assert_eq!(g.index_of(&p), Some(i));
                prop_assert!(seen.insert(p));
            }
            prop_assert_eq!(seen.len() as u64, sizes.iter().product::<usize>() as u64);
            let (start, end) = (a.min(b).min(n), a.max(b).min(n));
            let visited: Vec<_> = g.range(start, end).collect();
            prop_assert_eq!(visited.len() as u64, end - start);
            for (i, p) in visited {
                prop_assert_eq!(p, g.point(i));
            }
        }
    }
}
