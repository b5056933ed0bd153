//! The sweep's design space as a mixed-radix number space: configuration `i` is decoded into one
//! value per axis in O(axes), so a grid of billions of points is never materialized. Owns axis
//! order and indexing; knows nothing of the performance model.
//!
//! Axis order, slowest-varying first: platform (hardware x rack), weight_dtype, kv_dtype, racks,
//! tp, pp, ep, disagg_prefill_pct, spec_tokens, batch, ownership. Rows of the output therefore
//! come grouped by hardware.

use crate::vocab::{Ownership, Platform};

/// One configuration: axis indices for the categorical axes, values for the numeric ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Point {
    /// Index into `Grid::platforms`.
    pub platform: u32,
    /// Index into `Grid::weight_dtypes`.
    pub weight_dtype: u32,
    /// Index into `Grid::kv_dtypes`.
    pub kv_dtype: u32,
    pub racks: u32,
    pub tp: u32,
    pub pp: u32,
    pub ep: u32,
    /// Percent of instances in the prefill pool of disaggregated serving; 0 = aggregated.
    pub disagg_prefill_pct: u32,
    /// Draft tokens proposed per decode step (speculative decoding / MTP); 0 = off.
    pub spec_tokens: u32,
    /// Maximum concurrent sequences per model instance.
    pub batch: u32,
    /// Index into `Grid::ownership`.
    pub ownership: u32,
}

pub const AXES: usize = 11;

/// Axis names as they appear in `racksweep check` and the sweep file.
pub const AXIS_NAMES: [&str; AXES] = [
    "hardware x rack",
    "weight_dtype",
    "kv_dtype",
    "racks",
    "tp",
    "pp",
    "ep",
    "disagg_prefill_pct",
    "spec_tokens",
    "batch",
    "ownership",
];

#[derive(Debug, Clone)]
pub struct Grid {
    pub platforms: Vec<Platform>,
    /// Catalog dtype indices.
    pub weight_dtypes: Vec<usize>,
    pub kv_dtypes: Vec<usize>,
    pub racks: Vec<u32>,
    pub tp: Vec<u32>,
    pub pp: Vec<u32>,
    pub ep: Vec<u32>,
    pub disagg_prefill_pct: Vec<u32>,
    pub spec_tokens: Vec<u32>,
    pub batch: Vec<u32>,
    pub ownership: Vec<Ownership>,
}

impl Grid {
    /// Axis lengths in axis order.
    pub fn radices(&self) -> [u64; AXES] {
        [
            self.platforms.len(),
            self.weight_dtypes.len(),
            self.kv_dtypes.len(),
            self.racks.len(),
            self.tp.len(),
            self.pp.len(),
            self.ep.len(),
            self.disagg_prefill_pct.len(),
            self.spec_tokens.len(),
            self.batch.len(),
            self.ownership.len(),
        ]
        .map(|n| n as u64)
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

    /// Axis digits of configuration `index` (least significant = batch).
    fn digits(&self, index: u64) -> [u32; AXES] {
        mixed_radix::digits(&self.radices(), index)
    }

    /// Sets the field of axis `axis` of `p` to the axis's value number `digit`.
    fn set_axis(&self, p: &mut Point, axis: usize, digit: u32) {
        let d = digit as usize;
        match axis {
            0 => p.platform = digit,
            1 => p.weight_dtype = digit,
            2 => p.kv_dtype = digit,
            3 => p.racks = self.racks[d],
            4 => p.tp = self.tp[d],
            5 => p.pp = self.pp[d],
            6 => p.ep = self.ep[d],
            7 => p.disagg_prefill_pct = self.disagg_prefill_pct[d],
            8 => p.spec_tokens = self.spec_tokens[d],
            9 => p.batch = self.batch[d],
            _ => p.ownership = digit,
        }
    }

    fn point_from_digits(&self, d: &[u32; AXES]) -> Point {
        Point {
            platform: d[0],
            weight_dtype: d[1],
            kv_dtype: d[2],
            racks: self.racks[d[3] as usize],
            tp: self.tp[d[4] as usize],
            pp: self.pp[d[5] as usize],
            ep: self.ep[d[6] as usize],
            disagg_prefill_pct: self.disagg_prefill_pct[d[7] as usize],
            spec_tokens: self.spec_tokens[d[8] as usize],
            batch: self.batch[d[9] as usize],
            ownership: d[10],
        }
    }

    /// Configuration number `index` (0-based, `index < len()`).
    pub fn point(&self, index: u64) -> Point {
        debug_assert!(index < self.len());
        self.point_from_digits(&self.digits(index))
    }

    /// Index of a point produced by this grid (the inverse of [`Grid::point`]). Numeric axes are
    /// looked up by value, so axes must not repeat a value (spec validation ensures it).
    pub fn index_of(&self, p: &Point) -> Option<u64> {
        let pos = |axis: &[u32], v: u32| axis.iter().position(|&x| x == v).map(|i| i as u32);
        let digits = [
            p.platform,
            p.weight_dtype,
            p.kv_dtype,
            pos(&self.racks, p.racks)?,
            pos(&self.tp, p.tp)?,
            pos(&self.pp, p.pp)?,
            pos(&self.ep, p.ep)?,
            pos(&self.disagg_prefill_pct, p.disagg_prefill_pct)?,
            pos(&self.spec_tokens, p.spec_tokens)?,
            pos(&self.batch, p.batch)?,
            p.ownership,
        ];
        mixed_radix::index(&self.radices(), &digits)
    }

    /// Points `start..end` in index order, by incrementing a mixed-radix counter (no division per
    /// point).
    pub fn range(&self, start: u64, end: u64) -> Points<'_> {
        let end = end.min(self.len());
        let next = start.min(end);
        let digits = self.digits(next);
        Points {
            grid: self,
            radices: self.radices(),
            digits,
            point: if next < end {
                self.point_from_digits(&digits)
            } else {
                Point::default()
            },
            next,
            end,
        }
    }
}

/// Iterator over a contiguous slice of the grid, yielding `(index, point)`. The point is updated
/// in place, one field per axis that moved (usually only the fastest one).
pub struct Points<'a> {
    grid: &'a Grid,
    radices: [u64; AXES],
    digits: [u32; AXES],
    point: Point,
    next: u64,
    end: u64,
}

impl Iterator for Points<'_> {
    type Item = (u64, Point);

    fn next(&mut self) -> Option<(u64, Point)> {
        if self.next >= self.end {
            return None;
        }
        let item = (self.next, self.point);
        self.next += 1;
        if self.next < self.end {
            for axis in (0..AXES).rev() {
                self.digits[axis] += 1;
                let wrapped = u64::from(self.digits[axis]) == self.radices[axis];
                if wrapped {
                    self.digits[axis] = 0;
                }
                self.grid.set_axis(&mut self.point, axis, self.digits[axis]);
                if !wrapped {
                    break;
                }
            }
        }
        Some(item)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = (self.end - self.next) as usize;
        (n, Some(n))
    }
}

impl ExactSizeIterator for Points<'_> {}

/// Mixed-radix arithmetic over axis digits (most significant first), shared by the inference
/// and training grids.
pub mod mixed_radix {
    /// The number of digit combinations, or `None` if it overflows u64.
    pub fn checked_len(radices: &[u64]) -> Option<u64> {
        radices.iter().try_fold(1u64, |acc, &r| acc.checked_mul(r))
    }

    /// Digits of `index`.
    pub fn digits<const N: usize>(radices: &[u64; N], mut index: u64) -> [u32; N] {
        let mut digits = [0u32; N];
        for axis in (0..N).rev() {
            digits[axis] = (index % radices[axis]) as u32;
            index /= radices[axis];
        }
        digits
    }

    /// The index of `digits`, `None` if a digit is out of its axis.
    pub fn index<const N: usize>(radices: &[u64; N], digits: &[u32; N]) -> Option<u64> {
        let mut index = 0u64;
        for axis in 0..N {
            let d = u64::from(digits[axis]);
            if d >= radices[axis] {
                return None;
            }
            index = index * radices[axis] + d;
        }
        Some(index)
    }

    /// Adds one to `digits`, wrapping (the last index wraps to zero).
    pub fn increment<const N: usize>(radices: &[u64; N], digits: &mut [u32; N]) {
        for axis in (0..N).rev() {
            digits[axis] += 1;
            if u64::from(digits[axis]) < radices[axis] {
                return;
            }
            digits[axis] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn distinct(n: usize, base: u32) -> Vec<u32> {
        (0..n as u32).map(|i| base + i * 3).collect()
    }

    fn grid(sizes: [usize; AXES]) -> Grid {
        Grid {
            platforms: (0..sizes[0])
                .map(|i| Platform { gpu: i, rack: i })
                .collect(),
            weight_dtypes: (0..sizes[1]).collect(),
            kv_dtypes: (0..sizes[2]).collect(),
            racks: distinct(sizes[3], 1),
            tp: distinct(sizes[4], 1),
            pp: distinct(sizes[5], 2),
            ep: distinct(sizes[6], 1),
            disagg_prefill_pct: distinct(sizes[7], 0),
            spec_tokens: distinct(sizes[8], 0),
            batch: distinct(sizes[9], 4),
            ownership: Ownership::ALL[..sizes[10].min(2)].to_vec(),
        }
    }

    #[test]
    fn batch_varies_fastest() {
        let g = grid([2, 1, 1, 1, 2, 1, 1, 1, 1, 3, 1]);
        assert_eq!(g.len(), 12);
        let p0 = g.point(0);
        let p1 = g.point(1);
        assert_eq!((p0.batch, p1.batch), (4, 7));
        assert_eq!(g.point(3).tp, 4);
        assert_eq!(g.point(6).platform, 1);
    }

    #[test]
    fn overflowing_grid_has_no_len() {
        let mut g = grid([1; AXES]);
        g.batch = vec![1; 1 << 16];
        g.tp = vec![1; 1 << 16];
        g.racks = vec![1; 1 << 16];
        g.ep = vec![1; 1 << 16];
        assert_eq!(g.checked_len(), None);
    }

    proptest! {
        /// point() is a bijection between 0..len and the product of the axes.
        #[test]
        fn point_is_a_bijection(sizes in proptest::array::uniform11(1usize..3)) {
            let g = grid(sizes);
            let n = g.len();
            let mut seen = std::collections::HashSet::new();
            for i in 0..n {
                let p = g.point(i);
                prop_assert_eq!(g.index_of(&p), Some(i));
                prop_assert!(seen.insert(p));
            }
            prop_assert_eq!(seen.len() as u64, sizes.iter().product::<usize>() as u64);
        }

        /// Iterating a range yields exactly the points point() decodes.
        #[test]
        fn range_matches_point(sizes in proptest::array::uniform11(1usize..3), a in 0u64..500, b in 0u64..500) {
            let g = grid(sizes);
            let (start, end) = (a.min(b).min(g.len()), a.max(b).min(g.len()));
            let got: Vec<_> = g.range(start, end).collect();
            prop_assert_eq!(got.len() as u64, end - start);
            for (i, p) in got {
                prop_assert_eq!(p, g.point(i));
            }
        }
    }
}
