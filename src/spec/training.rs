//! Validates a training sweep (`[sweep] mode = "training"`): the job in `[workload]` (model,
//! sequence length, global batch, tokens to train) and the layout axes of `[grid]`.

use toml::Spanned;

use crate::catalog::Catalog;
use crate::columns::{Mode, Schema};
use crate::error::UserError;
use crate::limits;
use crate::train::grid::{Scale, TrainGrid};
use crate::train::{self, Precision, Recompute};

use super::grid::{BATCH, Bounds, CLUSTER_GPUS, COUNT, DEGREE, RACKS};
use super::raw::{IntAxis, Names, RawTrainingGrid, RawTrainingSpec};
use super::{Header, Loader, thousands};

/// Objectives of a training sweep that names none: the fastest and the cheapest run.
pub const DEFAULT_TRAINING_OBJECTIVES: [&str; 2] =
    ["min effective_time_to_train_days", "min usd_per_run"];

/// Layout axis defaults (docs/sweep-format.md, "Training sweeps").
const DEFAULT_TP: &[u32] = &[1, 2, 4, 8];
const DEFAULT_ONE: &[u32] = &[1];
const DEFAULT_ZERO_STAGE: &[u32] = &[1];
const ZERO_STAGES: Bounds = Bounds {
    min: 0,
    max: 3,
    why: None,
};

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
        } = raw;
        let mut catalog =
            Catalog::builtin().map_err(|e| UserError::new(format!("internal: {e}")))?;
        self.add_presets(&mut catalog, gpu, rack, model)?;

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

        let model = self.model(&catalog, &workload.model)?;
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
        let mut factors = train::Factors::builtin();
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
        let scales = [
            (Scale::Racks, "racks", &g.racks),
            (Scale::Gpus, "gpus", &g.gpus),
            (Scale::Dp, "dp", &g.dp),
        ];
        let given: Vec<_> = scales.iter().filter(|(_, _, a)| a.is_some()).collect();
        let (scale, sizes) = match given.as_slice() {
            [] => (Scale::Racks, DEFAULT_ONE.to_vec()),
            [(scale, key, axis)] => {
                let bounds = match scale {
                    Scale::Racks => RACKS,
                    Scale::Gpus | Scale::Dp => CLUSTER_GPUS,
                };
                (
                    *scale,
                    self.int_axis(axis, &format!("grid.{key}"), DEFAULT_ONE, bounds)?,
                )
            }
            [_, (_, key, axis), ..] => {
                let span = axis.as_ref().map_or(0..0, |a| a.span());
                return Err(self
                    .at(
                        span,
                        format!("grid.{key}: the cluster's size is given twice"),
                    )
                    .with_hint(
                        "give one of racks, gpus or dp; the others follow from tp x pp x cp",
                    ));
            }
        };
        // A categorical axis over a fixed vocabulary: indices into `all`, without repeats.
        let labels = |names: &Option<Names>,
                      key: &str,
                      all: &[&'static str],
                      default: usize|
         -> Result<Vec<usize>, UserError> {
            let Some(names) = names else {
                return Ok(vec![default]);
            };
            if names.get_ref().is_empty() {
                return Err(self
                    .at(names.span(), format!("{key}: empty"))
                    .with_hint(format!(
                        "list some of {}, or remove the key for the default",
                        all.join(", ")
                    )));
            }
            let mut out = Vec::new();
            for (i, n) in names.get_ref().iter().enumerate() {
                let Some(at) = all.iter().position(|a| a == n.get_ref()) else {
                    return Err(self
                        .at(
                            n.span(),
                            format!(
                                "{key}[{i}]: unknown value \"{}\"",
                                limits::quoted(n.get_ref())
                            ),
                        )
                        .with_hint(format!("use {}", all.join(", "))));
                };
                if out.contains(&at) {
                    return Err(self.at(
                        n.span(),
                        format!(
                            "{key}[{i}]: \"{}\" appears twice",
                            limits::quoted(n.get_ref())
                        ),
                    ));
                }
                out.push(at);
            }
            Ok(out)
        };
        let recompute_names = Recompute::ALL.map(Recompute::as_str);
        let precision_names = Precision::ALL.map(Precision::as_str);
        let degree = |axis: &Option<Spanned<IntAxis>>, key: &str, default: &[u32]| {
            self.int_axis(axis, key, default, DEGREE)
        };
        let (tp, pp, cp) = (
            degree(&g.tp, "grid.tp", DEFAULT_TP)?,
            degree(&g.pp, "grid.pp", DEFAULT_ONE)?,
            degree(&g.cp, "grid.cp", DEFAULT_ONE)?,
        );
        if scale == Scale::Dp
            && let Some(dp) = &g.dp
        {
            // The GPUs follow the layout: tp x pp x cp x dp of the largest values must be a
            // cluster (the others are smaller).
            let largest = |v: &[u32]| v.iter().copied().max().unwrap_or(1);
            let factors = [largest(&tp), largest(&pp), largest(&cp), largest(&sizes)];
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
        Ok(TrainGrid {
            platforms: self.platforms(catalog, &g.hardware, &g.rack)?,
            scale,
            sizes,
            tp,
            pp,
            cp,
            ep: degree(&g.ep, "grid.ep", DEFAULT_ONE)?,
            microbatch: self.int_axis(&g.microbatch, "grid.microbatch", DEFAULT_ONE, BATCH)?,
            virtual_stages: degree(&g.virtual_stages, "grid.virtual_stages", DEFAULT_ONE)?,
            zero_stage: self.int_axis(
                &g.zero_stage,
                "grid.zero_stage",
                DEFAULT_ZERO_STAGE,
                ZERO_STAGES,
            )?,
            recompute: labels(&g.recompute, "grid.recompute", &recompute_names, 1)?
                .into_iter()
                .map(|i| Recompute::ALL[i])
                .collect(),
            precision: labels(&g.precision, "grid.precision", &precision_names, 0)?
                .into_iter()
                .map(|i| Precision::ALL[i])
                .collect(),
            ownership: self.ownership(&g.ownership)?,
        })
    }
}
