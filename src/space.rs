//! The two design spaces the engine sweeps: serving configurations through the inference model
//! (`perf`) and training layouts through the training model (`train`). Each decodes grid
//! indices with its grid's mixed-radix counter and evaluates them in place, without allocating.

use crate::catalog::{Catalog, Model};
use crate::columns::{Row, TrainRow};
use crate::engine::Space;
use crate::grid::Grid;
use crate::perf::{self, Context, Placements};
use crate::spec::TrainingSpec;
use crate::train::grid::{Scale, TrainGrid, TrainPoint};
use crate::train::{self, Infeasible, Layout, System};

/// Serving configurations of an inference sweep.
pub struct Inference<'a> {
    pub ctx: &'a Context,
    pub grid: &'a Grid,
}

impl<'a> Space for Inference<'a> {
    type Row = Row;
    type Scratch = Placements<'a>;

    fn len(&self) -> u64 {
        self.grid.len()
    }

    fn for_each(
        &self,
        start: u64,
        end: u64,
        placements: &mut Placements<'a>,
        row: &mut Row,
        mut each: impl FnMut(&Row),
    ) {
        for (config_id, point) in self.grid.range(start, end) {
            row.config_id = config_id;
            row.point = point;
            perf::evaluate_into(self.ctx, &point, placements, &mut row.estimate);
            each(row);
        }
    }

    fn evaluate(&self, config_id: u64) -> Row {
        let point = self.grid.point(config_id);
        Row {
            config_id,
            point,
            estimate: perf::evaluate(self.ctx, &point),
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
        let c: &Catalog = &spec.catalog;
        let g = &spec.grid;
        let systems = g
            .platforms
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
            model: &c.models[spec.model],
            grid: g,
            job: spec.job,
            systems,
        }
    }

    fn evaluate_into(&self, config_id: u64, p: &TrainPoint, row: &mut TrainRow) {
        let g = self.grid;
        let sys = &self.systems[p.platform as usize * g.ownership.len() + p.ownership as usize];
        let per_rack = sys.rack.gpus_per_rack();
        let replica = p.tp * p.pp * p.cp;
        let (racks, gpus, dp) = match g.scale {
            Scale::Racks => {
                let gpus = p.scale * per_rack;
                (p.scale, gpus, gpus / replica)
            }
            Scale::Gpus => (p.scale.div_ceil(per_rack), p.scale, p.scale / replica),
            Scale::Dp => {
                let gpus = replica * p.scale;
                (gpus.div_ceil(per_rack), gpus, p.scale)
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

    fn for_each(
        &self,
        start: u64,
        end: u64,
        _: &mut (),
        row: &mut TrainRow,
        mut each: impl FnMut(&TrainRow),
    ) {
        self.grid.for_each(start, end, |config_id, p| {
            self.evaluate_into(config_id, p, row);
            each(row);
        });
    }
}
