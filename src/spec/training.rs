//! Validates a training sweep (`[sweep] mode = "training"`): the job in `[workload]` (model,
//! sequence length, global batch, tokens to train) and the layout axes of `[grid]`.

use crate::catalog::Catalog;
use crate::columns::{Mode, Schema};
use crate::error::UserError;
use crate::limits::{self, CLUSTER_GPUS, COUNT, RACKS};
use crate::train;
use crate::train::grid::{ClusterSizes, Scale, TrainGrid};

use super::grid::load_grid;
use super::raw::{RawTrainingGrid, RawTrainingSpec};
use super::{Header, Loader};
use crate::format::thousands;

/// Objectives of a training sweep that names none: the fastest and the cheapest run.
pub const DEFAULT_TRAINING_OBJECTIVES: [&str; 2] =
    ["min effective_time_to_train_days", "min usd_per_run"];

crate::train::grid::training_axes!(load_grid! { fn training_axes(&RawTrainingGrid) -> TrainGrid; });

/// A validated training sweep.
#[derive(Debug, Clone)]
pub struct TrainingSpec {
    pub header: Header,
    pub job: train::Job,
    pub grid: TrainGrid,
    pub factors: train::Factors,
}

impl Loader<'_> {
    pub(super) fn training_spec(
        &self,
        raw: RawTrainingSpec,
        max_configs: u64,
    ) -> Result<TrainingSpec, UserError> {
        let RawTrainingSpec {
            sweep,
            workload,
            grid,
            gpu,
            rack,
            model,
            cost,
            calibration,
        } = raw;
        let mut catalog = self.catalog(calibration, gpu, rack, model)?;

        let name = self.sweep_name(&sweep.name)?;
        for (key, v) in [
            ("ttft_p99_ms", &sweep.ttft_p99_ms),
            ("tpot_p99_ms", &sweep.tpot_p99_ms),
            ("tokens_per_s_per_user", &sweep.tokens_per_s_per_user),
        ] {
            if let Some(v) = v {
                return Err(self
                    .at(v.span(), format!("sweep.{key}: a serving SLO, and this is a training sweep"))
                    .with_hint("remove it, or bound a training column with sweep.constraints (e.g. \"step_time_s <= 10\")"));
            }
        }
        let (objectives, constraints) = self.goals(
            sweep.objectives,
            &sweep.constraints,
            Schema::get(Mode::Training),
            &DEFAULT_TRAINING_OBJECTIVES,
        )?;

        let model = self.model(&catalog, &workload.model, "workload.model")?;
        let m = &catalog.models[model];
        let seq_len = self.in_bounds(&workload.seq_len, "workload.seq_len", COUNT)?;
        if seq_len > m.max_context {
            return Err(self
                .at(
                    workload.seq_len.span(),
                    format!(
                        "workload.seq_len: {seq_len} exceeds the context of {} ({})",
                        m.id, m.max_context
                    ),
                )
                .with_hint("train at or below the model's max_context"));
        }
        let global_batch_seqs = match (&workload.global_batch_tokens, &workload.global_batch_seqs) {
            (Some(tokens), None) => {
                let t = self.number(
                    tokens,
                    "workload.global_batch_tokens",
                    |x| x >= 1.0,
                    "must be at least one token",
                )?;
                let seqs = t / f64::from(seq_len);
                if seqs > f64::from(u32::MAX) {
                    return Err(self.at(
                        tokens.span(),
                        format!(
                            "workload.global_batch_tokens: {t} is more than {} sequences",
                            u32::MAX
                        ),
                    ));
                }
                if seqs.fract() != 0.0 {
                    return Err(self
                        .at(tokens.span(), format!("workload.global_batch_tokens: {t} is not a whole number of {seq_len}-token sequences"))
                        .with_hint(format!("use a multiple of seq_len, e.g. {}", (seqs.round().max(1.0)) * f64::from(seq_len))));
                }
                seqs as u32
            }
            (None, Some(seqs)) => self.in_bounds(seqs, "workload.global_batch_seqs", COUNT)?,
            (Some(v), Some(_)) => {
                return Err(self
                    .at(
                        v.span(),
                        "workload: global_batch_tokens and global_batch_seqs both set",
                    )
                    .with_hint("give the global batch once, in tokens or in sequences"));
            }
            (None, None) => {
                return Err(self
                    .at(
                        workload.model.span(),
                        "workload: the global batch is missing",
                    )
                    .with_hint(
                        "set global_batch_tokens (e.g. 16777216) or global_batch_seqs (e.g. 2048)",
                    ));
            }
        };
        let train_tokens = self.number(
            &workload.train_tokens,
            "workload.train_tokens",
            |x| x > 0.0,
            "must be a positive number of tokens",
        )?;
        let mut factors = catalog.training;
        if let Some(v) = &workload.restart_minutes {
            factors.restart_minutes = self.number(
                v,
                "workload.restart_minutes",
                |x| x >= 0.0 && x * 60.0 <= limits::MAX_SECONDS,
                "must be between 0 and a year (525600 minutes)",
            )?;
        }
        if let Some(v) = &workload.failures_per_gpu_hour {
            factors.failures_per_gpu_hour = self.number(
                v,
                "workload.failures_per_gpu_hour",
                |x| x > 0.0,
                "must be positive (Llama 3's cluster: 1.97e-5)",
            )?;
        }
        if let Some(cost) = &cost
            && let Some(v) = cost
                .usd_per_mtok_api_input
                .as_ref()
                .or(cost.usd_per_mtok_api_output.as_ref())
        {
            return Err(self
                .at(
                    v.span(),
                    "cost: API token prices compare serving costs, and this is a training sweep",
                )
                .with_hint("remove usd_per_mtok_api_input and usd_per_mtok_api_output"));
        }
        self.costs(&mut catalog, &cost)?;

        let grid = self.training_grid(&catalog, grid)?;
        self.within_cap(grid.checked_len(), max_configs)?;
        Ok(TrainingSpec {
            header: self.header(
                name,
                sweep.description,
                objectives,
                constraints,
                model,
                catalog,
            ),
            job: train::Job {
                seq_len,
                global_batch_seqs,
                train_tokens,
            },
            grid,
            factors,
        })
    }

    fn training_grid(&self, catalog: &Catalog, g: RawTrainingGrid) -> Result<TrainGrid, UserError> {
        let grid = self.training_axes(catalog, &g)?;
        if grid.scale.by == Scale::Dp
            && let Some(dp) = &g.dp
        {
            // The GPUs follow the layout: tp x pp x cp x dp of the largest values must be a
            // cluster (the others are smaller).
            let largest = |v: &[u32]| v.iter().copied().max().unwrap_or(1);
            let factors = [
                largest(&grid.tp),
                largest(&grid.pp),
                largest(&grid.cp),
                largest(&grid.scale.values),
            ];
            let gpus: u64 = factors.iter().map(|&f| u64::from(f)).product();
            if gpus > u64::from(limits::MAX_CLUSTER_GPUS) {
                let [t, p, c, d] = factors;
                return Err(self
                    .at(
                        dp.span(),
                        format!(
                            "grid.dp: tp x pp x cp x dp = {t} x {p} x {c} x {d} = {} GPUs, more than {}",
                            thousands(gpus),
                            thousands(u64::from(limits::MAX_CLUSTER_GPUS))
                        ),
                    )
                    .with_hint(format!(
                        "{}; narrow tp, pp, cp or dp",
                        limits::MAX_CLUSTER_GPUS_WHY
                    )));
            }
        }
        Ok(grid)
    }

    /// The scale axis: the one of `grid.racks`, `grid.gpus` or `grid.dp` given, or `default`
    /// racks.
    pub(super) fn sizes(
        &self,
        g: &RawTrainingGrid,
        default: &[u32],
    ) -> Result<ClusterSizes, UserError> {
        let scales = [
            (Scale::Racks, &g.racks),
            (Scale::Gpus, &g.gpus),
            (Scale::Dp, &g.dp),
        ];
        let given: Vec<_> = scales.iter().filter(|(_, a)| a.is_some()).collect();
        match given.as_slice() {
            [] => Ok(ClusterSizes {
                by: Scale::Racks,
                values: default.to_vec(),
            }),
            [(by, axis)] => {
                let bounds = match by {
                    Scale::Racks => RACKS,
                    Scale::Gpus | Scale::Dp => CLUSTER_GPUS,
                };
                let key = format!("grid.{}", by.key());
                Ok(ClusterSizes {
                    by: *by,
                    values: self.int_axis(axis, &key, default, bounds)?,
                })
            }
            [_, (by, axis), ..] => {
                let span = axis.as_ref().map_or(0..0, |a| a.span());
                Err(self
                    .at(
                        span,
                        format!("grid.{}: the cluster's size is given twice", by.key()),
                    )
                    .with_hint(
                        "give one of racks, gpus or dp; the others follow from tp x pp x cp",
                    ))
            }
        }
    }
}
