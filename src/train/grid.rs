//! The design space of a training sweep as a mixed-radix number space, like the inference grid
//! (`crate::grid`): configuration `i` is decoded into one value per axis, nothing is
//! materialized.
//!
//! Axis order, slowest-varying first: platform (hardware x rack), scale (racks, GPUs or dp), tp, pp,
//! cp, ep, microbatch, virtual_stages, zero_stage, recompute, precision, ownership.

use crate::grid::mixed_radix;
use crate::vocab::Ownership;
use crate::vocab::Platform;

use super::{Precision, Recompute};

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

/// One training configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct TrainPoint {
    /// Index into `TrainGrid::platforms`.
    pub platform: u32,
    /// Racks, GPUs or dp, as the grid's [`Scale`] says.
    pub scale: u32,
    pub tp: u32,
    pub pp: u32,
    pub cp: u32,
    pub ep: u32,
    pub microbatch: u32,
    pub virtual_stages: u32,
    pub zero_stage: u32,
    /// Index into `TrainGrid::recompute`.
    pub recompute: u32,
    /// Index into `TrainGrid::precision`.
    pub precision: u32,
    /// Index into `TrainGrid::ownership`.
    pub ownership: u32,
}

pub const AXES: usize = 12;

/// Axis names as `racksweep check` prints them (the scale axis is named by the grid).
const AXIS_NAMES: [&str; AXES] = [
    "hardware x rack",
    "",
    "tp",
    "pp",
    "cp",
    "ep",
    "microbatch",
    "virtual_stages",
    "zero_stage",
    "recompute",
    "precision",
    "ownership",
];

#[derive(Debug, Clone)]
pub struct TrainGrid {
    pub platforms: Vec<Platform>,
    pub scale: Scale,
    /// Values of the scale axis (racks, GPUs or dp).
    pub sizes: Vec<u32>,
    pub tp: Vec<u32>,
    pub pp: Vec<u32>,
    pub cp: Vec<u32>,
    pub ep: Vec<u32>,
    pub microbatch: Vec<u32>,
    pub virtual_stages: Vec<u32>,
    pub zero_stage: Vec<u32>,
    pub recompute: Vec<Recompute>,
    pub precision: Vec<Precision>,
    pub ownership: Vec<Ownership>,
}

impl TrainGrid {
    /// Axis lengths in axis order.
    pub fn radices(&self) -> [u64; AXES] {
        [
            self.platforms.len(),
            self.sizes.len(),
            self.tp.len(),
            self.pp.len(),
            self.cp.len(),
            self.ep.len(),
            self.microbatch.len(),
            self.virtual_stages.len(),
            self.zero_stage.len(),
            self.recompute.len(),
            self.precision.len(),
            self.ownership.len(),
        ]
        .map(|n| n as u64)
    }

    /// Axis names in axis order.
    pub fn axis_names(&self) -> [&'static str; AXES] {
        let mut names = AXIS_NAMES;
        names[1] = match self.scale {
            Scale::Racks => "racks",
            Scale::Gpus => "gpus",
            Scale::Dp => "dp",
        };
        names
    }

    /// Number of configurations, or `None` if it overflows u64.
    pub fn checked_len(&self) -> Option<u64> {
        mixed_radix::checked_len(&self.radices())
    }

    /// Number of configurations. Spec validation guarantees it fits in u64.
    pub fn len(&self) -> u64 {
        self.checked_len()
            .expect("grid size validated at spec load")
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn point_from_digits(&self, d: &[u32; AXES]) -> TrainPoint {
        let at = |axis: &[u32], i: u32| axis[i as usize];
        TrainPoint {
            platform: d[0],
            scale: at(&self.sizes, d[1]),
            tp: at(&self.tp, d[2]),
            pp: at(&self.pp, d[3]),
            cp: at(&self.cp, d[4]),
            ep: at(&self.ep, d[5]),
            microbatch: at(&self.microbatch, d[6]),
            virtual_stages: at(&self.virtual_stages, d[7]),
            zero_stage: at(&self.zero_stage, d[8]),
            recompute: d[9],
            precision: d[10],
            ownership: d[11],
        }
    }

    /// Configuration number `index` (0-based, `index < len()`).
    pub fn point(&self, index: u64) -> TrainPoint {
        debug_assert!(index < self.len());
        self.point_from_digits(&mixed_radix::digits(&self.radices(), index))
    }

    /// Index of a point produced by this grid (the inverse of [`TrainGrid::point`]).
    pub fn index_of(&self, p: &TrainPoint) -> Option<u64> {
        let pos = |axis: &[u32], v: u32| axis.iter().position(|&x| x == v).map(|i| i as u32);
        let digits = [
            p.platform,
            pos(&self.sizes, p.scale)?,
            pos(&self.tp, p.tp)?,
            pos(&self.pp, p.pp)?,
            pos(&self.cp, p.cp)?,
            pos(&self.ep, p.ep)?,
            pos(&self.microbatch, p.microbatch)?,
            pos(&self.virtual_stages, p.virtual_stages)?,
            pos(&self.zero_stage, p.zero_stage)?,
            p.recompute,
            p.precision,
            p.ownership,
        ];
        mixed_radix::index(&self.radices(), &digits)
    }

    /// Calls `each` with every point of `start..end` in index order (a mixed-radix counter: no
    /// division per point).
    pub fn for_each(&self, start: u64, end: u64, mut each: impl FnMut(u64, &TrainPoint)) {
        let end = end.min(self.len());
        if start >= end {
            return;
        }
        let radices = self.radices();
        let mut digits = mixed_radix::digits(&radices, start);
        for index in start..end {
            each(index, &self.point_from_digits(&digits));
            mixed_radix::increment(&radices, &mut digits);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn grid(sizes: [usize; AXES]) -> TrainGrid {
        let values = |n: usize, base: u32| (0..n as u32).map(|i| base + 2 * i).collect();
        TrainGrid {
            platforms: (0..sizes[0])
                .map(|i| Platform { gpu: i, rack: 0 })
                .collect(),
            scale: Scale::Racks,
            sizes: values(sizes[1], 1),
            tp: values(sizes[2], 1),
            pp: values(sizes[3], 1),
            cp: values(sizes[4], 1),
            ep: values(sizes[5], 1),
            microbatch: values(sizes[6], 1),
            virtual_stages: values(sizes[7], 1),
            zero_stage: values(sizes[8], 0),
            recompute: Recompute::ALL[..sizes[9]].to_vec(),
            precision: Precision::ALL[..sizes[10]].to_vec(),
            ownership: Ownership::ALL[..sizes[11]].to_vec(),
        }
    }

    proptest! {
        /// point() is a bijection between 0..len and the product of the axes, and for_each
        /// visits exactly the points point() decodes.
        #[test]
        fn point_is_a_bijection(sizes in proptest::array::uniform12(1usize..3), a in 0u64..300, b in 0u64..300) {
            let g = grid(sizes);
            let n = g.len();
            let mut seen = std::collections::HashSet::new();
            for i in 0..n {
                let p = g.point(i);
                prop_assert_eq!(g.index_of(&p), Some(i));
                prop_assert!(seen.insert(p));
            }
            prop_assert_eq!(seen.len() as u64, sizes.iter().product::<usize>() as u64);
            let (start, end) = (a.min(b).min(n), a.max(b).min(n));
            let mut visited = Vec::new();
            g.for_each(start, end, |i, p| visited.push((i, *p)));
            prop_assert_eq!(visited.len() as u64, end - start);
            for (i, p) in visited {
                prop_assert_eq!(p, g.point(i));
            }
        }
    }
}
