//! The inference sweep's design space, declared once in [`inference_axes!`]: one table row per
//! axis, slowest-varying first. Configuration `i` is decoded into one value per axis in O(axes)
//! as a mixed-radix number, so a grid of billions of points is never materialized. Owns axis
//! order and indexing; knows nothing of the performance model. Rows of the output come grouped
//! by hardware (the first axis).
//!
//! From the table come, with nothing else to edit: the [`Point`] field, the [`Grid`] field, the
//! decoding (`point`, `index_of`, the iterator's incremental update) and the axis's name and
//! listing in `racksweep check` and the manifest (`crate::axis::grid!`); the `[grid]` key, its
//! default, its bounds and its errors (`spec::raw::raw_grid!`, `spec::grid::load_grid!`).
//! `Grid::single` gives every axis its default, so tests and `validate` need no edit either.
//!
//! # Adding an axis
//!
//! 1. Its line in [`inference_axes!`], where it should vary (the order is `config_id`'s): a doc
//!    comment, then `name: Kind = default, BOUNDS;`. A numeric axis:
//!    `input_tokens: Numbers = [1024], TOKENS;` (the default lists the values an omitted key
//!    gives; `BOUNDS` is a [`crate::limits::Bounds`], add one there if no existing one fits). A
//!    categorical axis over fixed words: `engine: Named<crate::vocab::Engine> = Trtllm;`, with
//!    the enum and its [`crate::vocab::Vocabulary`] impl (its words, and optionally the noun
//!    and hints of its errors) in `src/vocab.rs`. The default is the value that reproduces
//!    today's outputs, so that sweeps which do not name the key do not change.
//! 2. The model code that reads it: `p.name` in `src/perf` (a categorical axis holds an index:
//!    `grid.name[p.name as usize]`, resolved in `perf::Context` if it selects per-sweep facts).
//!    Where the model caches per point (`perf::cluster::Placements`), the keys are whole points,
//!    so a new axis is part of them already; a fast axis that the cached work does not depend on
//!    may be cleared in a key as `batch` and `ownership` are.
//! 3. Its column: a row in `src/columns/inference.rs` (the output schema), reading `p.name`.
//! 4. Docs: its key in docs/sweep-format.md §4 (table of keys, "Axis order and size"), its
//!    column in docs/schema.md and the README's column table (tests/docs.rs checks both against
//!    the schema; `RACKSWEEP_BLESS=1 cargo test --release --test docs` rewrites them, then write
//!    the column's meaning), its formula in docs/model.md.
//!
//! The `[grid]` key, its checks and `racksweep check`'s line follow from step 1; the snapshots
//! that list axes or keys (`tests/snapshots/check-*.txt`, the unknown-key error of
//! `tests/specs/invalid/unknown-grid-key.expected`) then gain the axis.
//!
//! What a sweep that does not name the key sees: the axis has one value, so its radix is 1 and
//! every `config_id` and row order stay as they were, wherever the line sits. The outputs gain
//! exactly the axis's size in the manifest's `axes` and its column in the Parquet files (and in
//! `pareto.md` if the column is a key column there); `scripts/same-outputs.sh` shows those and
//! nothing else. `grep -rl <axis> src/` then lists this file, the model code and
//! `src/columns/inference.rs`, plus the reports' key-column lists (`src/report/mod.rs`,
//! `src/output/markdown.rs`) where they show it, until they take their lists from the columns.

use crate::axis::{Dtypes, Kind, Named, Numbers, Payments, Platforms};
use crate::catalog::Catalog;
use crate::perf::cluster::AUTO_RACKS;
use crate::vocab::Platform;

/// The inference grid's axes, slowest-varying first: one row per axis, handed to the generator
/// named in the call (`crate::axis::grid!` builds [`Point`] and [`Grid`] here;
/// `spec::raw::raw_grid!` and `spec::grid::load_grid!` build the `[grid]` table's mirror and
/// checks). Row syntax: `crate::axis`; defaults: docs/sweep-format.md §4.
macro_rules! inference_axes {
    ($($generator:ident)::+ ! { $($args:tt)* }) => {
        $($generator)::+! {
            $($args)*
            /// Index into `Grid::workload` (and the sweep's `Spec::workloads`): one combination
            /// of the workload axes (`model`, `input_tokens`, ..., `demand_scale`).
            workload: Workloads = "[workload]";
            /// Index into `Grid::platform`: a GPU preset in its rack.
            platform: Platforms;
            /// Index into `Grid::engine`: the serving engine (`auto`: each GPU's first).
            engine: Named<crate::vocab::Engine> = Auto;
            /// Index into `Grid::weight_dtype` (catalog number formats).
            weight_dtype: Dtypes = "bf16";
            /// Index into `Grid::kv_dtype` (catalog number formats).
            kv_dtype: Dtypes = "bf16";
            /// Racks of the cluster; `AUTO_RACKS` (0) sizes it to the demand.
            racks: Racks = [1], RACKS;
            /// Oversubscription `r` of the scale-out spine (`r:1`); `RACK_SPINE` (0) takes the
            /// rack's own (`[[rack]] scaleout_oversubscription`).
            scaleout_oversubscription: Spine = [0], OVERSUBSCRIPTION;
            tp: Numbers = [1, 2, 4, 8], DEGREE;
            pp: Numbers = [1], DEGREE;
            ep: Numbers = [1], DEGREE;
            /// Percent of instances in the prefill pool of disaggregated serving; 0 = aggregated.
            disagg_prefill_pct: Numbers = [0], PERCENT;
            /// Tensor-parallel degree of the prefill pool's instances when disaggregated; 0 =
            /// the same as `tp`.
            prefill_tp: Numbers = [0], DEGREE_OR_SAME;
            /// Index into `Grid::prefill_hardware`: the prefill pool's GPU in its default rack
            /// when disaggregated; `None` (`"same"`) = the point's own platform.
            prefill_hardware: PrefillPlatforms = "same";
            /// Draft tokens proposed per decode step (speculative decoding / MTP); 0 = off.
            spec_tokens: Numbers = [0], DRAFT_TOKENS;
            /// Maximum concurrent sequences per model instance.
            batch: Numbers = [1, 2, 4, 8, 16, 32, 64, 128, 256], BATCH;
            /// Index into `Grid::ownership`: owned, or cloud at a pricing.
            ownership: Payments = { crate::vocab::Payment::DEFAULT };
        }
    };
}
pub(crate) use inference_axes;

inference_axes!(crate::axis::grid! {
    /// One configuration: axis indices for the categorical axes, values for the numeric ones.
    pub struct Point;
    /// The values of every axis of an inference sweep.
    pub struct Grid;
    /// Iterator over a contiguous slice of the grid, yielding `(index, point)`. The point is
    /// updated in place, one field per axis that moved (usually only the fastest one).
    pub struct Points;
});

/// Combinations of the workload axes, named as `racksweep check` lists them; the point holds
/// the index. Their values live in `spec::Workload` (one performance context each): this axis
/// only orders and names them. Without workload axes it has one entry.
pub struct Workloads;

impl Kind for Workloads {
    type Values = Vec<String>;
    /// The name of the single workload.
    type Default = str;

    fn len(values: &Vec<String>) -> usize {
        values.len()
    }

    #[inline]
    fn held(_: &Vec<String>, digit: u32) -> u32 {
        digit
    }

    fn digit(_: &Vec<String>, held: u32) -> Option<u32> {
        Some(held)
    }

    fn shown(values: &Vec<String>, _: &Catalog) -> String {
        match values.as_slice() {
            [one] => one.clone(),
            many => format!("{} combinations (workloads, above)", many.len()),
        }
    }

    fn single(default: &str, _: &Catalog) -> Vec<String> {
        vec![default.to_string()]
    }

    #[cfg(test)]
    fn sample(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("w{i}")).collect()
    }
}

/// An integer axis whose one value `sentinel` alone says "not a number the sweep chose" (shown
/// as `words`), held like [`Numbers`]: builds the kind `$kind`.
macro_rules! numbers_or_sentinel {
    ($(#[$doc:meta])* $kind:ident, $sentinel:expr, $words:literal) => {
        $(#[$doc])*
        pub struct $kind;

        impl Kind for $kind {
            type Values = Vec<u32>;
            type Default = [u32];

            fn len(values: &Vec<u32>) -> usize {
                Numbers::len(values)
            }

            #[inline]
            fn held(values: &Vec<u32>, digit: u32) -> u32 {
                Numbers::held(values, digit)
            }

            fn digit(values: &Vec<u32>, held: u32) -> Option<u32> {
                Numbers::digit(values, held)
            }

            fn shown(values: &Vec<u32>, catalog: &Catalog) -> String {
                if values == &[$sentinel] {
                    $words.to_string()
                } else {
                    Numbers::shown(values, catalog)
                }
            }

            fn single(default: &[u32], catalog: &Catalog) -> Vec<u32> {
                Numbers::single(default, catalog)
            }

            #[cfg(test)]
            fn sample(n: usize) -> Vec<u32> {
                Numbers::sample(n)
            }
        }
    };
}

numbers_or_sentinel!(
    /// Rack counts, or [`AUTO_RACKS`] alone for `racks = "auto"`; the point holds the value.
    Racks,
    AUTO_RACKS,
    "auto (fewest that meet the demand and the SLOs)"
);

/// `scaleout_oversubscription` value that takes each rack's own.
pub const RACK_SPINE: u32 = 0;

numbers_or_sentinel!(
    /// Spine oversubscription ratios, or [`RACK_SPINE`] alone when the sweep does not name
    /// them; the point holds the value.
    Spine,
    RACK_SPINE,
    "each rack's own (1:1 unless its [[rack]] says otherwise)"
);

/// The prefill pool's platform per entry: `None` for `"same"` (the point's own), else a GPU in
/// its default rack; the point holds the index.
pub struct PrefillPlatforms;

/// The word of [`PrefillPlatforms`]' default entry.
pub const SAME_HARDWARE: &str = "same";

impl Kind for PrefillPlatforms {
    type Values = Vec<Option<Platform>>;
    /// `"same"`.
    type Default = str;

    fn len(values: &Vec<Option<Platform>>) -> usize {
        values.len()
    }

    #[inline]
    fn held(_: &Vec<Option<Platform>>, digit: u32) -> u32 {
        digit
    }

    fn digit(_: &Vec<Option<Platform>>, held: u32) -> Option<u32> {
        Some(held)
    }

    fn shown(values: &Vec<Option<Platform>>, catalog: &Catalog) -> String {
        values
            .iter()
            .map(|p| match p {
                None => SAME_HARDWARE.to_string(),
                Some(p) => format!("{} in {}", catalog.gpus[p.gpu].id, catalog.racks[p.rack].id),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn single(_: &str, _: &Catalog) -> Vec<Option<Platform>> {
        vec![None]
    }

    #[cfg(test)]
    fn sample(n: usize) -> Vec<Option<Platform>> {
        (0..n)
            .map(|i| (i > 0).then_some(Platform { gpu: i, rack: i }))
            .collect()
    }
}

impl Grid {
    /// Whether some configuration proposes draft tokens (the workload's speculation settings
    /// then matter).
    pub fn speculates(&self) -> bool {
        self.spec_tokens.iter().any(|&d| d > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Batch varies fastest but for ownership, then the axes before it in table order.
    #[test]
    fn batch_varies_fastest() {
        let c = Catalog::builtin().unwrap();
        let g = Grid {
            platform: vec![Platform { gpu: 0, rack: 0 }, Platform { gpu: 1, rack: 1 }],
            tp: vec![1, 4],
            batch: vec![4, 7, 10],
            ..Grid::single(&c, Platform { gpu: 0, rack: 0 })
        };
        assert_eq!(g.len(), 12);
        assert_eq!((g.point(0).batch, g.point(1).batch), (4, 7));
        assert_eq!(g.point(3).tp, 4);
        assert_eq!(g.point(6).platform, 1);
    }

    /// An omitted axis takes its default's first value: the grid of one point.
    #[test]
    fn single_is_one_point_of_defaults() {
        let c = Catalog::builtin().unwrap();
        let g = Grid::single(&c, Platform { gpu: 2, rack: 3 });
        assert_eq!(g.len(), 1);
        let p = g.point(0);
        assert_eq!((p.racks, p.tp, p.pp, p.ep, p.batch), (1, 1, 1, 1, 1));
        assert_eq!((p.disagg_prefill_pct, p.spec_tokens), (0, 0));
        assert_eq!(c.dtypes[g.weight_dtype[0]].id, "bf16");
        assert_eq!(g.ownership, [crate::vocab::Payment::DEFAULT]);
        assert_eq!(g.platform, [Platform { gpu: 2, rack: 3 }]);
    }

    #[test]
    fn overflowing_grid_has_no_len() {
        let mut g = Grid::sample([1; AXES]);
        g.batch = vec![1; 1 << 16];
        g.tp = vec![1; 1 << 16];
        g.racks = vec![1; 1 << 16];
        g.ep = vec![1; 1 << 16];
        assert_eq!(g.checked_len(), None);
    }

    proptest! {
        /// point() is a bijection between 0..len and the product of the axes.
        #[test]
        fn point_is_a_bijection(sizes in proptest::array::uniform::<_, AXES>(1usize..3)) {
            let g = Grid::sample(sizes);
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
        fn range_matches_point(sizes in proptest::array::uniform::<_, AXES>(1usize..3), a in 0u64..500, b in 0u64..500) {
            let g = Grid::sample(sizes);
            let (start, end) = (a.min(b).min(g.len()), a.max(b).min(g.len()));
            let got: Vec<_> = g.range(start, end).collect();
            prop_assert_eq!(got.len() as u64, end - start);
            for (i, p) in got {
                prop_assert_eq!(p, g.point(i));
            }
        }
    }
}
