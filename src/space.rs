//! The two design spaces the engine sweeps: serving configurations through the inference model
//! (`perf`) and training layouts through the training model (`train`). Each decodes grid
//! indices with its grid's mixed-radix counter and evaluates them in place, without allocating.
//!
//! [`with_space`] is the one place a loaded sweep's mode picks its space: everything that
//! evaluates a sweep's rows goes through it, compiled once per space.

use crate::catalog::{Catalog, Model};
use crate::columns::{LabelValues, Need, Row, TrainRow};
use crate::engine::Space;
use crate::grid::Grid;
use crate::perf::memo::Scope;
use crate::perf::{self, Context, PlacementCache};
use crate::spec::{Sweep, TrainingSpec};

/// Work on a sweep's design space, whatever its mode: a closure generic over the space (which
/// Rust closures cannot be). Its `call` is compiled once per space, so the per-point loop inside
/// calls the model directly.
pub trait SpaceFn {
    type Output;
    fn call<S: Space>(self, space: &S) -> Self::Output;
}

/// Builds the design space of `sweep` (an inference sweep's performance context is resolved
/// here, once) and hands it to `f`.
pub fn with_space<F: SpaceFn>(sweep: &Sweep, f: F) -> F::Output {
    match sweep {
        Sweep::Inference(spec) => {
            let contexts = spec.contexts();
            f.call(&Inference::new(&contexts, &spec.grid))
        }
        Sweep::Training(spec) => f.call(&Training::new(spec)),
    }
}
use crate::train::grid::{Scale, TrainGrid, TrainPoint};
use crate::train::{self, Infeasible, Layout, Packing, System};

/// Serving configurations of an inference sweep.
pub struct Inference<'a> {
    /// One context per entry of the grid's `workload` axis.
    pub contexts: &'a [Context],
    pub grid: &'a Grid,
    /// Names this space's points in the workers' tables of timed steps (`perf::memo`): the
    /// context cannot change while the space borrows it.
    scope: Scope,
}

impl<'a> Inference<'a> {
    /// The space of `grid` with `contexts[w]` for workload `w` (one per entry of its
    /// `workload` axis).
    pub fn new(contexts: &'a [Context], grid: &'a Grid) -> Inference<'a> {
        assert_eq!(
            contexts.len(),
            grid.workload.len(),
            "one context per workload"
        );
        Inference {
            contexts,
            grid,
            scope: Scope::new(),
        }
    }
}

impl<'a> Space for Inference<'a> {
    type Row = Row;
    type Scratch = PlacementCache<'a>;

    fn len(&self) -> u64 {
        self.grid.len()
    }

    fn holds(&self, need: Need, labels: &LabelValues) -> bool {
        let plans = || self.contexts.iter().map(|c| &c.plan);
        match need {
            Need::Always => true,
            Need::Demand => plans().any(|p| p.demand),
            Need::Slo => plans().any(|p| p.settings.slo.is_set()),
            Need::Disaggregation => self.grid.disagg_prefill_pct.iter().any(|&pct| pct > 0),
            Need::PriceQuotes => labels.provider_key.iter().any(Option::is_some),
            Need::ApiPrices => plans().any(|p| p.api_usd_per_mtok.is_some()),
        }
    }

    fn for_each(
        &self,
        start: u64,
        end: u64,
        placements: &mut PlacementCache<'a>,
        row: &mut Row,
        mut each: impl FnMut(&Row),
    ) {
        placements.in_scope(self.scope);
        for (config_id, point) in self.grid.range(start, end) {
            let ctx = &self.contexts[point.workload as usize];
            row.config_id = config_id;
            row.point = point;
            row.workload = ctx.workload;
            perf::evaluate_into(ctx, &point, placements, &mut row.estimate);
            each(row);
        }
    }

    fn evaluate(&self, config_id: u64) -> Row {
        let point = self.grid.point(config_id);
        let ctx = &self.contexts[point.workload as usize];
        Row {
            config_id,
            point,
            workload: ctx.workload,
            estimate: perf::evaluate(ctx, &point),
        }
    }
}

/// Training layouts of a training sweep.
pub struct Training<'a> {
    pub model: &'a Model,
    pub grid: &'a TrainGrid,
    pub job: train::Job,
    /// One system per platform and ownership, indexed `platform * ownerships + ownership`.
    systems: Vec<System<'a>>,
}

impl<'a> Training<'a> {
    pub fn new(spec: &'a TrainingSpec) -> Training<'a> {
        let c: &Catalog = &spec.header.catalog;
        let g = &spec.grid;
        let systems = g
            .platform
            .iter()
            .flat_map(|p| {
                g.ownership.iter().map(move |&ownership| System {
                    gpu: &c.gpus[p.gpu],
                    rack: &c.racks[p.rack],
                    factors: spec.factors,
                    attention_efficiency: c.calibration.attention_efficiency,
                    moe_gemm_efficiency: c.calibration.moe_gemm_efficiency,
                    economics: &c.economics,
                    ownership,
                })
            })
            .collect();
        Training {
            model: &c.models[spec.header.model],
            grid: g,
            job: spec.job,
            systems,
        }
    }

    fn evaluate_into(&self, config_id: u64, p: &TrainPoint, row: &mut TrainRow) {
        let g = self.grid;
        let sys = &self.systems[p.platform as usize * g.ownership.len() + p.ownership as usize];
        // The GPUs of a rack the layout can use without a group straddling two scale-up
        // domains (train::Packing).
        let packing = Packing::new(p.tp, p.cp, p.ep, sys.rack);
        let replica = p.tp * p.pp * p.cp;
        let (racks, gpus, dp) = match g.scale.by {
            Scale::Racks => {
                let gpus = p.scale * packing.gpus_per_rack;
                (p.scale, gpus, gpus / replica)
            }
            Scale::Gpus => (packing.racks(p.scale), p.scale, p.scale / replica),
            Scale::Dp => {
                let gpus = replica * p.scale;
                (packing.racks(gpus), gpus, p.scale)
            }
        };
        row.config_id = config_id;
        row.point = *p;
        row.racks = racks;
        row.recompute = g.recompute[p.recompute as usize];
        row.precision = g.precision[p.precision as usize];
        let layout = Layout {
            tp: p.tp,
            pp: p.pp,
            dp,
            cp: p.cp,
            ep: p.ep,
            microbatch: p.microbatch,
            virtual_stages: p.virtual_stages,
            zero_stage: p.zero_stage as u8,
            recompute: row.recompute,
            precision: row.precision,
        };
        if dp == 0 || dp * replica != gpus {
            row.dp = 0;
            row.estimate = train::Estimate {
                gpus,
                ..train::Estimate::default()
            };
            row.reason = Some(Infeasible::GpusNotDivisibleByModelParallel);
            return;
        }
        row.dp = dp;
        row.reason =
            train::evaluate_into(self.model, sys, &layout, &self.job, &mut row.estimate).err();
    }
}

impl Space for Training<'_> {
    type Row = TrainRow;
    type Scratch = ();

    fn len(&self) -> u64 {
        self.grid.len()
    }

    /// Every training column has values in some sweep.
    fn holds(&self, need: Need, _: &LabelValues) -> bool {
        need == Need::Always
    }

    fn for_each(
        &self,
        start: u64,
        end: u64,
        _: &mut (),
        row: &mut TrainRow,
        mut each: impl FnMut(&TrainRow),
    ) {
        for (config_id, p) in self.grid.range(start, end) {
            self.evaluate_into(config_id, &p, row);
            each(row);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{Sweep, parse};
    use std::collections::HashSet;
    use std::path::Path;

    fn training(grid: &str) -> TrainingSpec {
        training_with("", grid)
    }

    fn training_with(workload: &str, grid: &str) -> TrainingSpec {
        let text = format!(
            r#"
[sweep]
name = "t"
mode = "training"
[workload]
model = "llama-3.1-70b"
seq_len = 4096
global_batch_seqs = 96
train_tokens = 1e12
{workload}
[grid]
hardware = ["h100-sxm"]
{grid}
"#
        );
        match parse(Path::new("t.toml"), &text, 1000).unwrap() {
            Sweep::Training(s) => *s,
            Sweep::Inference(_) => unreachable!("a training sweep"),
        }
    }

    use crate::limits::{MAX_BATCH, MAX_CLUSTER_GPUS, MAX_DEGREE, MAX_RACKS};
    use proptest::prelude::*;

    /// Any value in 1..=max, the ends most often (where products overflowed).
    fn count(max: u32) -> impl Strategy<Value = u32> {
        prop_oneof![Just(1), Just(max), Just(max - 1), 1..=max]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 4096, ..ProptestConfig::default() })]

        /// Over the whole ranges a training spec accepts, on every built-in rack and model, a
        /// layout's counts are the exact products (computed here in u64), never wrapped: GPUs =
        /// racks x GPUs per rack used, dp x tp x pp x cp = GPUs where dp is whole, and a row
        /// either trains or says why.
        #[test]
        fn training_counts_never_wrap(
            tp in count(MAX_DEGREE), pp in count(MAX_DEGREE), cp in count(MAX_DEGREE),
            ep in count(MAX_DEGREE), microbatch in count(MAX_BATCH),
            virtual_stages in count(MAX_DEGREE), racks in count(MAX_RACKS),
            gpus in count(MAX_CLUSTER_GPUS), dp in count(MAX_CLUSTER_GPUS), scale in 0..3u8,
            rack in 0..Catalog::builtin().unwrap().racks.len(),
            model in 0..Catalog::builtin().unwrap().models.len(),
        ) {
            let c = Catalog::builtin().unwrap();
            let (rack, model) = (&c.racks[rack], &c.models[model]);
            // 4,096-token sequences, or the model's whole context where it is shorter.
            let seq_len = model.max_context.min(4096);
            let size = match scale {
                0 => format!("racks = [{racks}]"),
                1 => format!("gpus = [{gpus}]"),
                _ => format!("dp = [{dp}]"),
            };
            let text = format!(
                "[sweep]\nname = \"t\"\nmode = \"training\"\n[workload]\nmodel = \"{}\"\nseq_len = {seq_len}\nglobal_batch_seqs = 4294967295\ntrain_tokens = 1e12\n[grid]\nhardware = [\"{}\"]\nrack = [\"{}\"]\n{size}\ntp = [{tp}]\npp = [{pp}]\ncp = [{cp}]\nep = [{ep}]\nmicrobatch = [{microbatch}]\nvirtual_stages = [{virtual_stages}]\n",
                model.id, rack.gpu, rack.id
            );
            let replica = u64::from(tp) * u64::from(pp) * u64::from(cp);
            let spec = match parse(Path::new("t.toml"), &text, 1) {
                Ok(Sweep::Training(s)) => *s,
                Ok(Sweep::Inference(_)) => unreachable!("a training sweep"),
                Err(e) if model.vocab.is_none() => {
                    // A model without a vocabulary is refused.
                    prop_assert!(e.message.contains("has no vocabulary size"), "{}", e.message);
                    return Ok(());
                }
                Err(e) => {
                    // Only a dp axis can ask for more GPUs than a cluster has.
                    prop_assert_eq!(scale, 2, "{}", e.message);
                    prop_assert!(replica * u64::from(dp) > u64::from(MAX_CLUSTER_GPUS));
                    prop_assert!(e.message.contains("grid.dp: tp x pp x cp x dp"), "{}", e.message);
                    return Ok(());
                }
            };
            let row = Training::new(&spec).evaluate(0);
            let e = &row.estimate;
            let rack = &spec.header.catalog.racks[spec.grid.platform[0].rack];
            let per_rack = u64::from(Packing::new(tp, cp, ep, rack).gpus_per_rack);
            let expected_gpus = match scale {
                0 => u64::from(racks) * per_rack,
                1 => u64::from(gpus),
                _ => replica * u64::from(dp),
            };
            prop_assert_eq!(u64::from(e.gpus), expected_gpus);
            let expected_racks = match scale {
                0 => u64::from(racks),
                _ => expected_gpus.div_ceil(per_rack),
            };
            prop_assert_eq!(u64::from(row.racks), expected_racks);
            if row.dp > 0 {
                prop_assert_eq!(u64::from(row.dp) * replica, expected_gpus);
            } else {
                prop_assert!(!expected_gpus.is_multiple_of(replica) || expected_gpus < replica);
                prop_assert_eq!(row.reason, Some(Infeasible::GpusNotDivisibleByModelParallel));
            }
        }
    }

    /// Racks of 32 H100s are filled by data parallelism: 2 racks at tp 8, pp 2 is dp 4; pp 3
    /// does not divide 64 GPUs.
    #[test]
    fn whole_racks_are_filled_by_data_parallelism() {
        let spec = training("racks = [2]\ntp = [8]\npp = [2, 3]\nzero_stage = [3]");
        let space = Training::new(&spec);
        let row = space.evaluate(0);
        assert_eq!((row.racks, row.dp, row.estimate.gpus), (2, 4, 64));
        assert_eq!(row.reason, None);
        // 96 sequences over dp 4 at microbatch 1: 24 microbatches per pipeline.
        assert_eq!(row.estimate.microbatches, 24);
        let row = space.evaluate(1);
        assert_eq!((row.racks, row.dp, row.estimate.gpus), (2, 0, 64));
        assert_eq!(
            row.reason,
            Some(Infeasible::GpusNotDivisibleByModelParallel)
        );
    }

    /// A dp axis sizes the cluster: tp 8 x pp 2 x dp 3 is 48 GPUs, in 2 racks of 32; a gpus
    /// axis the same in GPUs.
    #[test]
    fn dp_and_gpus_axes_size_the_racks() {
        let spec = training("dp = [3]\ntp = [8]\npp = [2]\nzero_stage = [3]");
        let row = Training::new(&spec).evaluate(0);
        assert_eq!((row.racks, row.dp, row.estimate.gpus), (2, 3, 48));
        assert_eq!(row.reason, None);
        let spec = training("gpus = [48]\ntp = [8]\npp = [2]\nzero_stage = [3]");
        let by_gpus = Training::new(&spec).evaluate(0);
        assert_eq!((by_gpus.racks, by_gpus.dp), (2, 3));
        // The same layout on the same cluster: the same estimate.
        assert_eq!(by_gpus.estimate, row.estimate);
    }

    /// A layout that does not fit still reports the memory it would need.
    #[test]
    fn a_layout_that_does_not_fit_says_how_much_it_needs() {
        let spec = training("dp = [1]\ntp = [1]\nzero_stage = [0]");
        let row = Training::new(&spec).evaluate(0);
        assert_eq!(row.reason, Some(Infeasible::DoesNotFit));
        // 70.6 B parameters at 20 bytes each (ZeRO-0) is 1.4 TB.
        assert!(row.estimate.hbm_used_gb_per_gpu > 1400.0);
        assert_eq!(row.estimate.step.step_s, 0.0);
    }

    /// `[workload] failures_per_gpu_hour` and `restart_minutes` reach the rows: twice the
    /// failure rate halves the job's MTBF, and slower restarts cost goodput.
    #[test]
    fn reliability_settings_reach_the_rows() {
        let grid = "gpus = [1024]\ntp = [8]\npp = [4]";
        let base = Training::new(&training(grid)).evaluate(0).estimate;
        let rate = 2.0 * crate::train::reliability::FAILURES_PER_GPU_HOUR;
        let spec = training_with(
            &format!("failures_per_gpu_hour = {rate}\nrestart_minutes = 30"),
            grid,
        );
        let e = Training::new(&spec).evaluate(0).estimate;
        let r = e.reliability;
        assert!((r.job_mtbf_hours / base.reliability.job_mtbf_hours - 0.5).abs() < 1e-12);
        // Llama 3's rate on 1,024 GPUs: an interruption every 54 x 24 x 16,384 / (419 x 1,024)
        // = 49.5 hours; twice the rate, 24.7.
        assert!(
            (r.job_mtbf_hours - 24.74).abs() < 0.01,
            "{}",
            r.job_mtbf_hours
        );
        assert!(r.goodput < base.reliability.goodput);
        assert_eq!(e.time_to_train_days, base.time_to_train_days);
        assert!(e.effective_time_to_train_days > base.effective_time_to_train_days);
    }

    /// Every row of every example and benchmark sweep small enough to evaluate here is null in
    /// each column whose need the sweep lacks: what lets the writer keep no buffer for those
    /// columns (the engine itself checks one row in 16). Between them, the sweeps lack every
    /// need, and have every one.
    #[test]
    fn columns_are_null_where_the_sweep_lacks_their_need() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files: Vec<_> = ["sweeps", "scripts/bench", "tests/specs"]
            .iter()
            .flat_map(|d| std::fs::read_dir(root.join(d)).unwrap())
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "toml"))
            .collect();
        files.sort();
        let (mut lacked, mut held) = (HashSet::new(), HashSet::new());
        let mut checked = 0u64;
        for file in files {
            let sweep = crate::spec::load(&file, u64::MAX).unwrap();
            let Sweep::Inference(spec) = &sweep else {
                continue;
            };
            let contexts = spec.contexts();
            let space = Inference::new(&contexts, &spec.grid);
            if space.len() > 100_000 {
                continue;
            }
            let labels = sweep.labels();
            let (absent, present): (Vec<_>, Vec<_>) = crate::columns::COLUMNS
                .iter()
                .partition(|c| !space.holds(c.need, &labels));
            lacked.extend(absent.iter().map(|c| c.need));
            held.extend(present.iter().map(|c| c.need));
            let mut scratch = PlacementCache::default();
            let mut row = Row::default();
            space.for_each(0, space.len(), &mut scratch, &mut row, |row| {
                for c in &absent {
                    assert!(
                        !c.kind.has_value(row, &labels),
                        "{}: {} has a value in row {} without {:?}",
                        file.display(),
                        c.name,
                        row.config_id,
                        c.need
                    );
                }
                checked += 1;
            });
        }
        for need in Need::ALL.into_iter().filter(|&n| n != Need::Always) {
            assert!(lacked.contains(&need), "no sweep lacks {need:?}");
            assert!(held.contains(&need), "no sweep has {need:?}");
        }
        assert!(checked > 50_000, "{checked} rows");
    }
}
