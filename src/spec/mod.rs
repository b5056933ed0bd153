//! A validated sweep: the TOML file parsed (`raw`), then checked pass by pass into a [`Spec`]
//! whose every id resolves and whose grid is within bounds. Errors are [`UserError`]s naming the
//! file, line, column, key and value, with a hint. Nothing here evaluates configurations.

mod grid;
mod own;
mod plan;
mod raw;
mod training;
mod workloads;

use std::ops::Range;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use toml::Spanned;

use crate::catalog::{self, Catalog};
use crate::columns::{LabelValues, Mode, Schema};
use crate::error::UserError;
use crate::grid::Grid;
use crate::limits::{self, quoted};
use crate::pareto::{Constraint, Objective};
use crate::suggest;
use crate::vocab::{Ownership, Payment};
use raw::{Names, RawModeProbe, RawSpec, RawTrainingSpec};

pub use training::{DEFAULT_TRAINING_OBJECTIVES, TrainingSpec};
pub use workloads::Workload;

/// Grid size `check` and `run` accept without `--max-configs` (documented in docs/sweep-format.md).
pub const DEFAULT_MAX_CONFIGS: u64 = 1_000_000_000;

/// Values one integer axis may hold (a longer axis is almost always a typo in a range).
pub const MAX_AXIS_VALUES: u64 = 1_000_000;

/// Objectives used when the sweep names none.
pub const DEFAULT_OBJECTIVES: [&str; 2] = [
    "max tokens_per_s_per_gpu",
    "max tokens_per_s_per_user_at_load",
];

/// What a sweep of either mode has: its file, its name and goals, its model and its catalog.
/// Embedded in [`Spec`] and [`TrainingSpec`] as `header`.
#[derive(Debug, Clone)]
pub struct Header {
    /// The sweep file as given (used in messages and records).
    pub path: PathBuf,
    /// The sweep file's full text (stored in the Parquet metadata).
    pub text: String,
    /// SHA-256 (hex) of `text`: ties every file of a run to its sweep.
    pub sha256: String,
    /// `[sweep] name`: the run directory's name.
    pub name: String,
    pub description: String,
    pub objectives: Vec<Objective>,
    pub constraints: Vec<Constraint>,
    /// Index into `catalog.models`: the `[workload]` table's model (an inference sweep's
    /// `grid.model` axis may add others, `Spec::workloads`).
    pub model: usize,
    /// The built-in catalog with the sweep's inline presets and `[cost]` applied.
    pub catalog: Catalog,
}

impl Header {
    /// The model's preset id.
    pub fn model_id(&self) -> &str {
        &self.catalog.models[self.model].id
    }
}

/// A validated inference sweep.
#[derive(Debug, Clone)]
pub struct Spec {
    pub header: Header,
    /// Every combination of the workload axes, in the order of the grid's `workload` axis
    /// (one, the `[workload]` table, without them).
    pub workloads: Vec<Workload>,
    /// Probability that a draft token is accepted (where the grid proposes drafts,
    /// `Grid::speculates`).
    pub spec_acceptance: f64,
    /// Cost of one draft token, in layers of the target model.
    pub spec_draft_layers: f64,
    /// `[workload] kv_admission`; `None`: each engine's own
    /// (`perf::memory::KvAdmission::of_engine`).
    pub kv_admission: Option<crate::perf::memory::KvAdmission>,
    /// `[workload] eplb`: MoE models served with an expert-parallel load balancer
    /// (`perf::ModelFacts::eplb`).
    pub eplb: bool,
    /// `[workload] two_batch_overlap` (`perf::Workload::two_batch_overlap`).
    pub two_batch_overlap: bool,
    pub grid: Grid,
}

impl Spec {
    /// The `[workload]` serving switches that are on, as the manifest's workload numbers: one
    /// redundant expert per expert-parallel rank under EPLB (`perf::ModelFacts::expert_slots`),
    /// 1 for two-batch overlap.
    pub fn switches(&self) -> Vec<(&'static str, f64)> {
        [
            (crate::columns::EPLB_KEY, self.eplb),
            (
                crate::columns::TWO_BATCH_OVERLAP_KEY,
                self.two_batch_overlap,
            ),
        ]
        .into_iter()
        .filter(|&(_, on)| on)
        .map(|(key, _)| (key, 1.0))
        .collect()
    }

    /// The KV admission in words, as `check` and the manifest show it: the sweep's policy, or
    /// `engine default (trtllm: whole-request, vllm: on-demand)` over the serving engines the
    /// grid's GPUs run (all three when they run none of the grid's engines).
    pub fn kv_admission_words(&self) -> String {
        use crate::perf::memory::KvAdmission;
        use crate::vocab::ServingEngine;
        if let Some(a) = self.kv_admission {
            return a.as_str().to_string();
        }
        let gpus = &self.header.catalog.gpus;
        let runs = |e: ServingEngine| {
            self.grid.platform.iter().any(|p| {
                let on = &gpus[p.gpu].engines;
                self.grid.engine.iter().any(|w| w.on(on) == Some(e))
            })
        };
        let mut engines: Vec<ServingEngine> = ServingEngine::ALL
            .into_iter()
            .filter(|&e| runs(e))
            .collect();
        if engines.is_empty() {
            engines = ServingEngine::ALL.to_vec();
        }
        let each: Vec<String> = engines
            .iter()
            .map(|&e| format!("{}: {}", e.as_str(), KvAdmission::of_engine(e).as_str()))
            .collect();
        format!("engine default ({})", each.join(", "))
    }

    /// The performance model's precomputed context of workload `w` over this sweep's grid.
    pub fn context_of(&self, w: usize) -> crate::perf::Context {
        let h = &self.header;
        let one = &self.workloads[w];
        let model = &h.catalog.models[one.model];
        let workload = crate::perf::Workload {
            input_tokens: one.input_tokens,
            output_tokens: one.output_tokens,
            spec_acceptance: self.spec_acceptance,
            spec_draft_layers: self.spec_draft_layers,
            kv_admission: self.kv_admission,
            eplb: self.eplb,
            two_batch_overlap: self.two_batch_overlap,
        };
        let mut ctx = crate::perf::Context::new(&h.catalog, model, &self.grid, workload)
            .expect("spec validation guarantees the model has a vocabulary");
        ctx.phases = one.phases.clone();
        ctx.plan = crate::perf::Plan {
            ownership: self.grid.ownership.clone(),
            ..one.plan.clone()
        };
        ctx.workload = one.columns(w as u32, self.model_key(one.model));
        ctx
    }

    /// The contexts of every workload, in the grid's `workload` order.
    pub fn contexts(&self) -> Vec<crate::perf::Context> {
        (0..self.workloads.len())
            .map(|w| self.context_of(w))
            .collect()
    }

    /// The context of the first workload (the only one of a sweep without workload axes).
    pub fn context(&self) -> crate::perf::Context {
        self.context_of(0)
    }

    /// The sweep's models (catalog indices), each once, in catalog order: the `model` column's
    /// labels.
    pub fn models(&self) -> Vec<usize> {
        let mut models: Vec<usize> = self.workloads.iter().map(|w| w.model).collect();
        models.sort_unstable();
        models.dedup();
        models
    }

    /// The `model` column's label key of catalog model `model`.
    fn model_key(&self, model: usize) -> u16 {
        self.models().iter().position(|&m| m == model).unwrap_or(0) as u16
    }

    /// The workload columns whose values differ between the sweep's workloads (besides
    /// `workload_id`), in column order; none without workload axes.
    pub fn varying_workload_columns(&self) -> Vec<&'static str> {
        use crate::columns::{COLUMNS, Kind, Role, Row};
        let rows: Vec<Row> = self
            .workloads
            .iter()
            .enumerate()
            .map(|(i, w)| Row {
                workload: w.columns(i as u32, self.model_key(w.model)),
                ..Row::default()
            })
            .collect();
        COLUMNS
            .iter()
            .filter(|c| c.role == Role::Workload && c.name != "workload_id")
            .filter(|c| {
                let value = |r: &Row| match c.kind {
                    Kind::Label(_) => Some(f64::from(r.workload.model)),
                    _ => c.number(r),
                };
                rows.iter()
                    .any(|r| value(r).map(f64::to_bits) != value(&rows[0]).map(f64::to_bits))
            })
            .map(|c| c.name)
            .collect()
    }

    /// Whether `[workload.demand]` is set (for every workload alike).
    pub fn demand(&self) -> bool {
        self.workloads[0].plan.demand
    }
}

/// A validated sweep file of either mode.
#[derive(Debug, Clone)]
pub enum Sweep {
    Inference(Box<Spec>),
    Training(Box<TrainingSpec>),
}

impl Sweep {
    pub fn mode(&self) -> Mode {
        match self {
            Sweep::Inference(_) => Mode::Inference,
            Sweep::Training(_) => Mode::Training,
        }
    }

    /// The inference sweep, if this is one.
    pub fn into_inference(self) -> Option<Spec> {
        match self {
            Sweep::Inference(s) => Some(*s),
            Sweep::Training(_) => None,
        }
    }

    /// What both modes have: the file, its name and goals, the model and the catalog.
    pub fn header(&self) -> &Header {
        match self {
            Sweep::Inference(s) => &s.header,
            Sweep::Training(s) => &s.header,
        }
    }

    /// Configurations in the grid.
    pub fn len(&self) -> u64 {
        match self {
            Sweep::Inference(s) => s.grid.len(),
            Sweep::Training(s) => s.grid.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Axis names and their number of values, in grid order.
    pub fn axes(&self) -> Vec<(&'static str, u64)> {
        match self {
            Sweep::Inference(s) => s
                .grid
                .axis_names()
                .into_iter()
                .zip(s.grid.radices())
                .collect(),
            Sweep::Training(s) => s
                .grid
                .axis_names()
                .into_iter()
                .zip(s.grid.radices())
                .collect(),
        }
    }

    /// The values the grid gives a numeric axis, by the axis's name (`None` for a label axis
    /// or a name the mode's grid lacks).
    /// Whether the grid names a value of categorical `axis` other than its default: a prefill
    /// GPU of its own (`prefill_hardware`).
    pub fn names_other_than_default(&self, axis: &str) -> bool {
        match (self, axis) {
            (Sweep::Inference(s), "prefill_hardware") => {
                s.grid.prefill_hardware.iter().any(Option::is_some)
            }
            _ => false,
        }
    }

    pub fn count_values(&self, axis: &str) -> Option<&[u32]> {
        match self {
            Sweep::Inference(s) => {
                let g = &s.grid;
                Some(match axis {
                    "racks" => &g.racks,
                    "tp" => &g.tp,
                    "pp" => &g.pp,
                    "ep" => &g.ep,
                    "disagg_prefill_pct" => &g.disagg_prefill_pct,
                    "prefill_tp" => &g.prefill_tp,
                    "spec_tokens" => &g.spec_tokens,
                    "batch" => &g.batch,
                    _ => return None,
                })
            }
            Sweep::Training(s) => {
                let g = &s.grid;
                Some(match axis {
                    "tp" => &g.tp,
                    "pp" => &g.pp,
                    "cp" => &g.cp,
                    "ep" => &g.ep,
                    "microbatch" => &g.microbatch,
                    "virtual_stages" => &g.virtual_stages,
                    "zero_stage" => &g.zero_stage,
                    name if name == g.scale.by.key() => &g.scale.values,
                    _ => return None,
                })
            }
        }
    }

    /// The workload's numbers, by key, for the manifest and the reports.
    pub fn workload(&self) -> Vec<(&'static str, f64)> {
        match self {
            Sweep::Inference(s) => vec![
                ("input_tokens", s.workloads[0].input_tokens),
                ("output_tokens", s.workloads[0].output_tokens),
                ("spec_acceptance", s.spec_acceptance),
                ("spec_draft_layers", s.spec_draft_layers),
            ]
            .into_iter()
            .chain(s.switches())
            .collect(),
            Sweep::Training(s) => vec![
                ("seq_len", f64::from(s.job.seq_len)),
                ("global_batch_seqs", f64::from(s.job.global_batch_seqs)),
                (
                    "global_batch_tokens",
                    f64::from(s.job.global_batch_seqs) * f64::from(s.job.seq_len),
                ),
                ("train_tokens", s.job.train_tokens),
                ("restart_minutes", s.factors.restart_minutes),
                ("failures_per_gpu_hour", s.factors.failures_per_gpu_hour),
            ],
        }
    }

    /// The names of an inference sweep's workloads, by `workload_id` (empty for training).
    pub fn workload_labels(&self) -> Vec<String> {
        match self {
            Sweep::Inference(s) => s.workloads.iter().map(|w| w.label.clone()).collect(),
            Sweep::Training(_) => Vec::new(),
        }
    }

    /// The KV admission policy of an inference sweep in words ([`Spec::kv_admission_words`]).
    pub fn kv_admission(&self) -> Option<String> {
        match self {
            Sweep::Inference(s) => Some(s.kv_admission_words()),
            Sweep::Training(_) => None,
        }
    }

    /// Label dictionaries of the sweep: hardware, rack, model, format, ownership and provider
    /// ids, each once, in catalog order (ownership in its vocabulary's order), and the key of
    /// each grid entry. The order is the sweep's whatever order its axes list them in, and the
    /// same in every part of a run.
    pub fn labels(&self) -> LabelValues {
        let c = &self.header().catalog;
        let (platforms, payments): (_, Vec<Payment>) = match self {
            Sweep::Inference(s) => (&s.grid.platform, s.grid.ownership.clone()),
            Sweep::Training(s) => (
                &s.grid.platform,
                s.grid.ownership.iter().map(|&o| Payment::from(o)).collect(),
            ),
        };
        let gpus: Vec<usize> = platforms.iter().map(|p| p.gpu).collect();
        let racks: Vec<usize> = platforms.iter().map(|p| p.rack).collect();
        let (hardware, hardware_key) = catalog_ordered(&gpus, |g| c.gpus[g].id.clone());
        let (rack, rack_key) = catalog_ordered(&racks, |r| c.racks[r].id.clone());
        // The prefill pools' GPUs: the sweep's hardware (same keys), then the others.
        let mut prefill_hardware = hardware.clone();
        let prefill_hardware_key = match self {
            Sweep::Inference(s) => {
                let others: Vec<usize> = s
                    .grid
                    .prefill_hardware
                    .iter()
                    .flatten()
                    .map(|p| p.gpu)
                    .filter(|g| !gpus.contains(g))
                    .collect();
                let (others, _) = catalog_ordered(&others, |g| c.gpus[g].id.clone());
                prefill_hardware.extend(others);
                s.grid
                    .prefill_hardware
                    .iter()
                    .map(|p| {
                        let id = &c.gpus[p.as_ref()?.gpu].id;
                        Some(prefill_hardware.iter().position(|h| h == id)? as u16)
                    })
                    .collect()
            }
            Sweep::Training(_) => Vec::new(),
        };
        let dtypes = |axis: &[usize]| catalog_ordered(axis, |d| c.dtypes[d].id.clone());
        let ((weight_dtype, weight_dtype_key), (kv_dtype, kv_dtype_key)) = match self {
            Sweep::Inference(s) => (dtypes(&s.grid.weight_dtype), dtypes(&s.grid.kv_dtype)),
            Sweep::Training(_) => Default::default(),
        };
        let (engine_key, engines) = match self {
            Sweep::Inference(s) => (
                platforms
                    .iter()
                    .flat_map(|p| {
                        s.grid
                            .engine
                            .iter()
                            .map(|e| e.on(&c.gpus[p.gpu].engines).map(|e| e as u16))
                    })
                    .collect(),
                s.grid.engine.len(),
            ),
            Sweep::Training(_) => (Vec::new(), 0),
        };
        let owned: Vec<usize> = payments.iter().map(|p| p.ownership() as usize).collect();
        let (ownership, ownership_key) =
            catalog_ordered(&owned, |o| Ownership::ALL[o].as_str().to_string());
        let pricing_key = payments
            .iter()
            .map(|p| p.pricing().map(|p| p as u16))
            .collect();
        // The quote pricing each platform at each entry of the ownership axis, if any.
        let quotes: Vec<Option<usize>> = platforms
            .iter()
            .flat_map(|p| {
                payments.iter().map(|payment| {
                    let pricing = payment.pricing()?;
                    c.quotes
                        .iter()
                        .position(|q| q.gpu == p.gpu && q.pricing == pricing)
                })
            })
            .collect();
        // Providers in the order of their first quote in the catalog, each once (a provider
        // may quote several GPUs).
        let (quoted, _) =
            catalog_ordered(&quotes.iter().flatten().copied().collect::<Vec<_>>(), |q| {
                c.quotes[q].provider.clone()
            });
        let mut provider: Vec<String> = Vec::new();
        for name in quoted {
            if !provider.contains(&name) {
                provider.push(name);
            }
        }
        let provider_key = quotes
            .iter()
            .map(|q| {
                let name = &c.quotes[(*q)?].provider;
                Some(provider.iter().position(|p| p == name)? as u16)
            })
            .collect();
        LabelValues {
            hardware,
            hardware_key,
            prefill_hardware,
            prefill_hardware_key,
            rack,
            rack_key,
            models: match self {
                Sweep::Inference(s) => s.models().iter().map(|&m| c.models[m].id.clone()).collect(),
                Sweep::Training(_) => vec![self.header().model_id().to_string()],
            },
            weight_dtype,
            weight_dtype_key,
            kv_dtype,
            kv_dtype_key,
            ownership,
            ownership_key,
            pricing_key,
            provider,
            provider_key,
            engine_key,
            engines,
        }
    }

    /// Key/value metadata stored in every Parquet file of the run.
    pub fn file_metadata(&self) -> Vec<(String, String)> {
        let h = self.header();
        vec![
            ("racksweep.version".into(), env!("CARGO_PKG_VERSION").into()),
            ("racksweep.mode".into(), self.mode().as_str().into()),
            ("racksweep.sweep_toml".into(), h.text.to_string()),
            ("racksweep.sweep_sha256".into(), h.sha256.to_string()),
        ]
    }
}

/// The distinct catalog entries among `entries` (catalog indices, repeats allowed) in catalog
/// order as dictionary values (`id` of each), and the key of each entry.
fn catalog_ordered(entries: &[usize], id: impl Fn(usize) -> String) -> (Vec<String>, Vec<u16>) {
    let mut order = entries.to_vec();
    order.sort_unstable();
    order.dedup();
    let keys = entries
        .iter()
        .map(|e| order.partition_point(|o| o < e) as u16)
        .collect();
    (order.into_iter().map(id).collect(), keys)
}

/// Reads and validates a sweep file.
pub fn load(path: &Path, max_configs: u64) -> Result<Sweep, UserError> {
    let text = crate::limits::read_input(path).map_err(|e| {
        UserError::new(format!("cannot read sweep file {}: {e}", path.display()))
            .with_hint("pass the path of a .toml sweep file, e.g. sweeps/quickstart.toml")
    })?;
    parse(path, &text, max_configs)
}

/// Validates sweep text; `path` is used in messages only.
pub fn parse(path: &Path, text: &str, max_configs: u64) -> Result<Sweep, UserError> {
    let loader = Loader { path, text };
    let probe: RawModeProbe = loader.toml(Mode::Inference)?;
    let mode = match probe.sweep.and_then(|s| s.mode) {
        None => Mode::Inference,
        Some(m) => Mode::parse(m.get_ref()).ok_or_else(|| {
            loader
                .at(
                    m.span(),
                    format!("sweep.mode: unknown mode \"{}\"", quoted(m.get_ref())),
                )
                .with_hint("use \"inference\" (the default) or \"training\"")
        })?,
    };
    Ok(match mode {
        Mode::Inference => Sweep::Inference(Box::new(
            loader.spec(loader.toml(Mode::Inference)?, max_configs)?,
        )),
        Mode::Training => {
            let raw: RawTrainingSpec = loader.toml(Mode::Training)?;
            Sweep::Training(Box::new(loader.training_spec(raw, max_configs)?))
        }
    })
}

struct Loader<'a> {
    path: &'a Path,
    text: &'a str,
}

impl Loader<'_> {
    /// The sweep text parsed as `T`, unknown keys and type errors pointing into the file. A key
    /// unknown where it stands but known to another table of a `mode` sweep gets a hint naming
    /// that table (`concurrent_users` under `[workload]`: `[workload.demand]`).
    fn toml<T: serde::de::DeserializeOwned>(&self, mode: Mode) -> Result<T, UserError> {
        toml::from_str(self.text).map_err(|e| {
            let raw_message = e.message();
            let message = crate::limits::cut_quotes(&raw_message.trim_end().replace('\n', " "));
            let error = match e.span() {
                Some(span) => self.at(span, message),
                None => UserError::new(format!("{}: {message}", self.path.display())),
            };
            let elsewhere = raw_message
                .strip_prefix("unknown field `")
                .and_then(|rest| rest.split_once('`'))
                .map(|(key, _)| (key, raw::tables_with(mode, key)))
                .filter(|(_, tables)| !tables.is_empty());
            match elsewhere {
                Some((key, tables)) => error.with_hint(format!(
                    "{key} goes in {}; docs/sweep-format.md describes every key",
                    tables.join(" or in ")
                )),
                None => error.with_hint("docs/sweep-format.md describes every key"),
            }
        })
    }

    /// `file:line:col: message` for a byte span of the sweep text.
    fn at(&self, span: Range<usize>, message: impl AsRef<str>) -> UserError {
        let before = &self.text[..span.start.min(self.text.len())];
        let line = before.matches('\n').count() + 1;
        let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        UserError::new(format!(
            "{}:{line}:{col}: {}",
            self.path.display(),
            message.as_ref()
        ))
    }

    fn spec(&self, raw: RawSpec, max_configs: u64) -> Result<Spec, UserError> {
        let RawSpec {
            sweep,
            workload,
            grid,
            gpu,
            rack,
            model,
            cost,
            price,
            calibration,
        } = raw;

        // Pass 1: the catalog, with the sweep's calibration and inline presets.
        let mut catalog = self.catalog(calibration, gpu, rack, model)?;

        // Pass 2: the [sweep] table.
        let name = self.sweep_name(&sweep.name)?;
        let (objectives, constraints) = self.goals(
            sweep.objectives,
            &sweep.constraints,
            Schema::get(Mode::Inference),
            &DEFAULT_OBJECTIVES,
        )?;

        // Pass 3: the [workload] keys every workload shares.
        let spec_acceptance = match &workload.spec_acceptance {
            None => crate::perf::DEFAULT_SPEC_ACCEPTANCE,
            Some(v) if (0.0..1.0).contains(v.get_ref()) => *v.get_ref(),
            Some(v) => {
                return Err(self
                    .at(
                        v.span(),
                        format!(
                            "workload.spec_acceptance: {} must be in [0, 1)",
                            limits::number(*v.get_ref())
                        ),
                    )
                    .with_hint("the probability that one draft token is accepted, e.g. 0.85"));
            }
        };
        let spec_draft_layers = match &workload.spec_draft_layers {
            None => crate::perf::DEFAULT_SPEC_DRAFT_LAYERS,
            Some(v) if v.get_ref().is_finite() && *v.get_ref() >= 0.0 => *v.get_ref(),
            Some(v) => {
                return Err(self.at(
                    v.span(),
                    format!(
                        "workload.spec_draft_layers: {} must be zero or positive",
                        limits::number(*v.get_ref())
                    ),
                ));
            }
        };
        let kv_admission = match &workload.kv_admission {
            None => None,
            Some(v) => Some(
                crate::perf::memory::KvAdmission::named(v.get_ref()).ok_or_else(|| {
                    self.at(
                        v.span(),
                        format!(
                            "workload.kv_admission: unknown policy \"{}\"",
                            quoted(v.get_ref())
                        ),
                    )
                    .with_hint(
                        "use \"whole-request\" (KV reserved for prompt and answer at admission, \
                     TensorRT-LLM's default) or \"on-demand\" (allocated as tokens come, with \
                     preemption: vLLM, SGLang), or remove the key for each engine's own",
                    )
                })?,
            ),
        };

        // Pass 4: each workload (the combinations of the grid's workload axes): its model,
        // lengths, demand, schedule, SLOs and [cost].
        let slo = self.slo(
            &sweep.ttft_p99_ms,
            &sweep.tpot_p99_ms,
            &sweep.tokens_per_s_per_user,
        )?;
        let mut grid = grid;
        let axes = self.workload_axes(&mut grid)?;
        let workloads = self.workloads(&mut catalog, &workload, &axes, slo, &cost)?;
        let model = workloads[0].model;
        // Serving switches of MoE models: on a sweep of dense models they would change nothing.
        let moe_switch = |key: &Option<Spanned<bool>>, name: &str, what: &str| match key {
            Some(v) if *v.get_ref() => {
                if workloads.iter().any(|w| catalog.models[w.model].is_moe()) {
                    Ok(true)
                } else {
                    Err(self
                        .at(
                            v.span(),
                            format!(
                                "workload.{name}: {} has no routed experts {what}",
                                catalog.models[model].id
                            ),
                        )
                        .with_hint(format!("{name} applies to MoE models; remove the key")))
                }
            }
            _ => Ok(false),
        };
        let eplb = moe_switch(&workload.eplb, "eplb", "to balance")?;
        let two_batch_overlap = moe_switch(
            &workload.two_batch_overlap,
            "two_batch_overlap",
            "whose dispatch and combine to overlap",
        )?;
        self.quotes(&mut catalog, price, &cost)?;

        // Pass 5: the [grid] axes.
        let mut grid = self.grid(&catalog, grid, workloads[0].plan.demand)?;
        grid.workload = workloads.iter().map(|w| w.label.clone()).collect();
        self.within_cap(grid.checked_len(), max_configs)?;

        Ok(Spec {
            header: self.header(
                name,
                sweep.description,
                objectives,
                constraints,
                model,
                catalog,
            ),
            workloads,
            spec_acceptance,
            spec_draft_layers,
            kv_admission,
            eplb,
            two_batch_overlap,
            grid,
        })
    }

    /// The header of this sweep file: its path, text and digest, and what the passes found.
    fn header(
        &self,
        name: String,
        description: String,
        objectives: Vec<Objective>,
        constraints: Vec<Constraint>,
        model: usize,
        catalog: Catalog,
    ) -> Header {
        Header {
            path: self.path.to_path_buf(),
            text: self.text.to_string(),
            sha256: format!("{:x}", Sha256::digest(self.text.as_bytes())),
            name,
            description,
            objectives,
            constraints,
            model,
            catalog,
        }
    }

    /// The built-in catalog with the sweep's `[calibration]` and its inline presets.
    fn catalog(
        &self,
        calibration: Option<Spanned<toml::Table>>,
        gpus: Vec<Spanned<toml::Table>>,
        racks: Vec<Spanned<catalog::Rack>>,
        models: Vec<Spanned<catalog::Model>>,
    ) -> Result<Catalog, UserError> {
        let mut catalog =
            Catalog::builtin().map_err(|e| UserError::new(format!("internal: {e}")))?;
        self.calibration(&mut catalog, calibration)?;
        self.add_presets(&mut catalog, gpus, racks, models)?;
        Ok(catalog)
    }

    fn add_presets(
        &self,
        catalog: &mut Catalog,
        gpus: Vec<Spanned<toml::Table>>,
        racks: Vec<Spanned<catalog::Rack>>,
        models: Vec<Spanned<catalog::Model>>,
    ) -> Result<(), UserError> {
        let clash = |span: Range<usize>, kind: &str, i: usize, id: &str| {
            self.at(span, format!("{kind}[{i}]: id \"{}\" is already taken by another preset", quoted(id)))
                .with_hint(format!("inline presets add to the catalog; give this one a new id (see racksweep catalog {kind}s)"))
        };
        // GPUs and racks refer to each other, so add both before checking either.
        let mut gpu_spans = Vec::new();
        for (i, g) in gpus.into_iter().enumerate() {
            let span = g.span();
            let (g, extended) = self.gpu_table(catalog, i, g)?;
            match extended {
                // Extended in place: the preset under its own id, with the table's fields.
                Some(x) if x.id == x.extends => {
                    let at = catalog.gpu_index(&g.id).expect("extends names a known GPU");
                    catalog.gpus[at] = g;
                    catalog.overrides.gpus.push(x);
                    gpu_spans.push((i, span, at));
                    continue;
                }
                Some(x) => catalog.overrides.gpus.push(x),
                None => {}
            }
            if catalog.gpu(&g.id).is_some() {
                return Err(clash(span, "gpu", i, &g.id));
            }
            catalog.gpus.push(g);
            gpu_spans.push((i, span, catalog.gpus.len() - 1));
        }
        let mut rack_spans = Vec::new();
        for (i, r) in racks.into_iter().enumerate() {
            let span = r.span();
            let r = r.into_inner();
            if catalog.rack(&r.id).is_some() {
                return Err(clash(span, "rack", i, &r.id));
            }
            catalog.racks.push(r);
            rack_spans.push((i, span, catalog.racks.len() - 1));
        }
        for (i, span, at) in gpu_spans {
            let g = &catalog.gpus[at];
            catalog.check_gpu(g).map_err(|e| {
                let e = self.at(span.clone(), format!("gpu[{i}] \"{}\": {e}", quoted(&g.id)));
                let renamed = catalog.overrides.gpus.iter().any(|x| x.id == g.id && x.id != x.extends);
                match e {
                    e if renamed => e.with_hint("a GPU extended under a new id needs a [[rack]] that hosts it (its default_rack); keep the extended GPU's id to replace it in place"),
                    e => e,
                }
            })?;
        }
        for (i, span, at) in rack_spans {
            let r = &catalog.racks[at];
            catalog.check_rack(r).map_err(|e| {
                self.at(
                    span.clone(),
                    format!("rack[{i}] \"{}\": {e}", quoted(&r.id)),
                )
            })?;
        }
        for (i, m) in models.into_iter().enumerate() {
            let span = m.span();
            let m = m.into_inner();
            if catalog.model(&m.id).is_some() {
                return Err(clash(span, "model", i, &m.id));
            }
            catalog::check_model(&m)
                .and_then(|()| catalog.check_model_formats(&m))
                .map_err(|e| self.at(span, format!("model[{i}] \"{}\": {e}", quoted(&m.id))))?;
            catalog.models.push(m);
        }
        Ok(())
    }

    /// The grid's size (`None` past 2^64) against `--max-configs`.
    fn within_cap(&self, len: Option<u64>, max_configs: u64) -> Result<(), UserError> {
        let len = len.ok_or_else(|| {
            UserError::new(format!(
                "{}: the grid has more than 2^64 configurations",
                self.path.display()
            ))
            .with_hint("narrow one of the axes")
        })?;
        if len > max_configs {
            return Err(UserError::new(format!(
                "{}: the grid has {} configurations, more than the cap of {}",
                self.path.display(),
                crate::format::thousands(len),
                crate::format::thousands(max_configs)
            ))
            .with_hint("narrow an axis, or raise the cap with --max-configs if you mean it"));
        }
        Ok(())
    }

    fn sweep_name(&self, name: &Spanned<String>) -> Result<String, UserError> {
        let n = name.get_ref();
        let safe = !n.is_empty()
            && n.len() <= 64
            && !n.starts_with('.')
            && n.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
        if safe {
            Ok(n.clone())
        } else {
            Err(self
                .at(
                    name.span(),
                    format!("sweep.name: \"{}\" is not a safe folder name", quoted(n)),
                )
                .with_hint("use 1 to 64 letters, digits, '-', '_' or '.', not starting with '.'"))
        }
    }

    /// `workload.model`: a catalog model with a vocabulary (its embeddings must be sized).
    fn model(
        &self,
        catalog: &Catalog,
        name: &Spanned<String>,
        key: &str,
    ) -> Result<usize, UserError> {
        let model_id = name.get_ref();
        let model = catalog
            .models
            .iter()
            .position(|m| &m.id == model_id)
            .ok_or_else(|| {
                let ids = catalog.models.iter().map(|m| m.id.as_str());
                self.unknown(name, key, "model", ids, "racksweep catalog models")
            })?;
        if catalog.models[model].vocab.is_none() {
            return Err(self
                .at(name.span(), format!("{key}: \"{}\" has no vocabulary size in the catalog, so its embeddings cannot be sized", quoted(model_id)))
                .with_hint("define the model inline with a [[model]] table that sets vocab (and a new id)"));
        }
        Ok(model)
    }

    /// `sweep.objectives` (or `defaults`) and `sweep.constraints`, over the columns of `schema`.
    fn goals(
        &self,
        objectives: Option<Spanned<Vec<Spanned<String>>>>,
        constraints: &[Spanned<String>],
        schema: &Schema,
        defaults: &[&str],
    ) -> Result<(Vec<Objective>, Vec<Constraint>), UserError> {
        let parsed = match objectives {
            None => defaults
                .iter()
                .map(|s| Objective::parse(s, schema).expect("default objectives parse"))
                .collect(),
            Some(list) => {
                let texts: Vec<&str> = list
                    .get_ref()
                    .iter()
                    .map(|o| o.get_ref().as_str())
                    .collect();
                Objective::parse_all(&texts, schema).map_err(|(at, (m, h))| match at {
                    Some(i) => self.hinted(
                        list.get_ref()[i].span(),
                        format!("sweep.objectives[{i}]: {m}"),
                        h,
                    ),
                    None => self.hinted(list.span(), format!("sweep.objectives: {m}"), h),
                })?
            }
        };
        let mut cons = Vec::new();
        for (i, c) in constraints.iter().enumerate() {
            cons.push(Constraint::parse(c.get_ref(), schema).map_err(|(m, h)| {
                self.hinted(c.span(), format!("sweep.constraints[{i}]: {m}"), h)
            })?);
        }
        Ok((parsed, cons))
    }

    fn hinted(&self, span: Range<usize>, message: String, hint: Option<String>) -> UserError {
        let e = self.at(span, message);
        match hint {
            Some(h) => e.with_hint(h),
            None => e,
        }
    }

    /// A mean length in tokens: at least one (a fraction of a token has no time to first
    /// token).
    fn tokens(&self, v: &Spanned<f64>, key: &str) -> Result<f64, UserError> {
        let x = *v.get_ref();
        if !x.is_finite() {
            Err(self.at(
                v.span(),
                format!("{key}: {} is not a number of tokens", limits::number(x)),
            ))
        } else if x < 1.0 {
            Err(self
                .at(
                    v.span(),
                    format!("{key}: {} is less than one token", limits::number(x)),
                )
                .with_hint("a mean length in tokens, at least 1"))
        } else {
            Ok(x)
        }
    }

    fn unknown<'c>(
        &self,
        value: &Spanned<String>,
        key: &str,
        kind: &str,
        known: impl IntoIterator<Item = &'c str>,
        list_cmd: &str,
    ) -> UserError {
        let id = value.get_ref();
        let hint = match suggest::did_you_mean(id, known) {
            Some(s) => format!("{s} `{list_cmd}` lists them"),
            None => format!("`{list_cmd}` lists them, or define one inline"),
        };
        self.at(
            value.span(),
            format!("{key}: unknown {kind} \"{}\"", quoted(id)),
        )
        .with_hint(hint)
    }

    /// Each named id resolved through `find`, without repeats.
    fn names(
        &self,
        names: &Names,
        key: &str,
        kind: &str,
        find: impl Fn(&str) -> Option<usize>,
        known: &[&str],
        list_cmd: &str,
    ) -> Result<Vec<usize>, UserError> {
        if names.get_ref().is_empty() {
            return Err(self
                .at(names.span(), format!("{key}: empty"))
                .with_hint(format!("list at least one {kind}")));
        }
        let mut out = Vec::new();
        for (i, n) in names.get_ref().iter().enumerate() {
            let at = find(n.get_ref()).ok_or_else(|| {
                self.unknown(
                    n,
                    &format!("{key}[{i}]"),
                    kind,
                    known.iter().copied(),
                    list_cmd,
                )
            })?;
            if out.contains(&at) {
                return Err(self.at(
                    n.span(),
                    format!("{key}[{i}]: \"{}\" appears twice", quoted(n.get_ref())),
                ));
            }
            out.push(at);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"
[sweep]
name = "t"
[workload]
model = "llama-3.1-70b"
input_tokens = 1024
output_tokens = 256
[grid]
hardware = ["h100-sxm", "b200"]
"#;

    fn spec(text: &str) -> Result<Spec, UserError> {
        parse(Path::new("t.toml"), text, DEFAULT_MAX_CONFIGS)
            .map(|s| s.into_inference().expect("an inference sweep"))
    }

    /// Label dictionaries list catalog entries in catalog order, whatever order the axes list
    /// them in, and every axis entry keys its own value.
    #[test]
    fn label_dictionaries_are_in_catalog_order() {
        let text = MINIMAL.replace(
            r#"hardware = ["h100-sxm", "b200"]"#,
            r#"hardware = ["mi355x", "h100-sxm", "b200"]
weight_dtype = ["fp8", "bf16"]
ownership = ["owned", "cloud"]"#,
        );
        let sweep = parse(Path::new("t.toml"), &text, DEFAULT_MAX_CONFIGS).unwrap();
        let c = &sweep.header().catalog;
        let labels = sweep.labels();
        let position = |id: &str| c.gpus.iter().position(|g| g.id == id).unwrap();
        let mut by_catalog = vec!["mi355x", "h100-sxm", "b200"];
        by_catalog.sort_by_key(|id| position(id));
        assert_eq!(labels.hardware, by_catalog);
        let Sweep::Inference(s) = &sweep else {
            panic!("an inference sweep")
        };
        for (p, &key) in s.grid.platform.iter().zip(&labels.hardware_key) {
            assert_eq!(labels.hardware[usize::from(key)], c.gpus[p.gpu].id);
        }
        let dtype = |id: &str| c.dtypes.iter().position(|d| d.id == id).unwrap();
        assert!(dtype("bf16") < dtype("fp8"));
        assert_eq!(labels.weight_dtype, ["bf16", "fp8"]);
        assert_eq!(labels.weight_dtype_key, [1, 0]);
        assert_eq!(labels.ownership, ["cloud", "owned"]);
        assert_eq!(labels.ownership_key, [1, 0]);
        // A provider quoting two GPUs is one dictionary value; the quotes' order is the
        // catalog's, so "acme" (first quote) comes before "zeta".
        let priced = format!(
            "{text}
[[price]]
provider = \"acme\"
gpu = \"b200\"
usd_per_gpu_hour = 5.0
commitment = \"on-demand\"
[[price]]
provider = \"zeta\"
gpu = \"mi355x\"
usd_per_gpu_hour = 4.0
commitment = \"on-demand\"
[[price]]
provider = \"acme\"
gpu = \"h100-sxm\"
usd_per_gpu_hour = 2.0
commitment = \"on-demand\"
"
        );
        let sweep = parse(Path::new("t.toml"), &priced, DEFAULT_MAX_CONFIGS).unwrap();
        let labels = sweep.labels();
        assert_eq!(labels.provider, ["acme", "zeta"]);
        let Sweep::Inference(s) = &sweep else {
            panic!("an inference sweep")
        };
        let c = &sweep.header().catalog;
        let entries = s.grid.ownership.len();
        for (p, platform) in s.grid.platform.iter().enumerate() {
            let cloud = (0..entries)
                .find(|&e| labels.ownership[usize::from(labels.ownership_key[e])] == "cloud")
                .unwrap();
            let key = labels.provider_key[p * entries + cloud].unwrap();
            let want = if c.gpus[platform.gpu].id == "mi355x" {
                "zeta"
            } else {
                "acme"
            };
            assert_eq!(labels.provider[usize::from(key)], want);
        }
    }

    #[test]
    fn minimal_sweep_takes_documented_defaults() {
        let s = spec(MINIMAL).unwrap();
        assert_eq!(s.grid.platform.len(), 2);
        // docs/sweep-format.md §4.
        assert_eq!(s.grid.tp, [1, 2, 4, 8]);
        assert_eq!(s.grid.batch, [1, 2, 4, 8, 16, 32, 64, 128, 256]);
        assert_eq!(s.grid.len(), 2 * 4 * 9);
        assert_eq!(s.header.objectives.len(), 2);
        assert_eq!(s.header.sha256.len(), 64);
    }

    /// Without `kv_admission` each engine holds KV its own way (docs/model.md §5):
    /// llama-3.1-70b at tp 8 on H100, 1k in / 1k out, one KV head per GPU, 80 layers x 2 x 128
    /// x 2 B = 40,960 B per token, answers of one length (`output_tokens_cv = 0`). TensorRT-LLM
    /// reserves the whole request, 2,048 tokens: at batch 256, 21.47 GB per GPU; vLLM holds the
    /// mean context, 1,536 tokens: 16.11 GB. At
    /// batch 768 that is 64.42 GB against 48.32 GB, and about 54 GB is left beside the weights
    /// (72 GB usable less 17.6 GB): only vLLM's batch fits. A named policy applies to both
    /// engines.
    #[test]
    fn kv_admission_is_each_engines_own_unless_the_sweep_names_one() {
        use crate::perf::Reason;
        use crate::perf::memory::KvAdmission;
        const TWO_ENGINES: &str = r#"
[sweep]
name = "t"
[workload]
model = "llama-3.1-70b"
input_tokens = 1024
output_tokens = 1024
output_tokens_cv = 0.0
[grid]
hardware = ["h100-sxm"]
engine = ["trtllm", "vllm"]
tp = [8]
batch = [256, 768]
"#;
        let per_token = 80.0 * 2.0 * 128.0 * 2.0;
        let kv_gb = |tokens: f64| 256.0 * tokens * per_token / 1e9;
        // (engine, batch) -> (KV GB per GPU at batch 256, whether batch 768 fits).
        let run = |text: &str| {
            let s = spec(text).unwrap();
            let ctx = s.context();
            let mut out = Vec::new();
            for i in 0..s.grid.len() {
                let p = s.grid.point(i);
                let e = crate::perf::evaluate(&ctx, &p);
                out.push((s.grid.engine[p.engine as usize].as_str(), p.batch, e));
            }
            assert_eq!(out.len(), 4);
            (s, out)
        };
        let check = |rows: &[(&str, u32, crate::perf::Estimate)], engine, tokens: f64| {
            for (_, batch, e) in rows.iter().filter(|r| r.0 == engine) {
                if *batch == 256 {
                    assert!(e.feasible(), "{engine}: {e:?}");
                    assert!(
                        (e.hbm_kv_gb_per_gpu - kv_gb(tokens)).abs() < 1e-9,
                        "{engine}"
                    );
                } else if tokens == 2048.0 {
                    assert_eq!(e.reason, Some(Reason::DoesNotFit), "{engine}");
                } else {
                    assert!(e.feasible(), "{engine}: {e:?}");
                }
            }
        };

        let (s, rows) = run(TWO_ENGINES);
        assert_eq!(s.kv_admission, None);
        assert_eq!(s.context().kv_admission, None);
        assert_eq!(
            s.kv_admission_words(),
            "engine default (trtllm: whole-request, vllm: on-demand)"
        );
        check(&rows, "trtllm", 2048.0);
        check(&rows, "vllm", 1536.0);

        for (policy, tokens) in [("whole-request", 2048.0), ("on-demand", 1536.0)] {
            let text = TWO_ENGINES.replace(
                "output_tokens = 1024",
                &format!("output_tokens = 1024\nkv_admission = \"{policy}\""),
            );
            let (s, rows) = run(&text);
            assert_eq!(s.kv_admission, KvAdmission::named(policy));
            assert_eq!(s.context().kv_admission, KvAdmission::named(policy));
            assert_eq!(s.kv_admission_words(), policy);
            check(&rows, "trtllm", tokens);
            check(&rows, "vllm", tokens);
        }

        // AMD GPUs run vLLM by default (`engine = "auto"`); SGLang holds KV on demand too.
        let amd = MINIMAL.replace("[\"h100-sxm\", \"b200\"]", "[\"mi300x\", \"h100-sxm\"]");
        assert_eq!(
            spec(&amd).unwrap().kv_admission_words(),
            "engine default (trtllm: whole-request, vllm: on-demand)"
        );
        let sglang = MINIMAL.replace("[grid]", "[grid]\nengine = [\"sglang\"]");
        assert_eq!(
            spec(&sglang).unwrap().kv_admission_words(),
            "engine default (sglang: on-demand)"
        );
    }

    #[test]
    fn ranges_expand() {
        let text = MINIMAL.replace("[grid]", "[grid]\nbatch = { from = 1, to = 512, factor = 2 }\ntp = { from = 2, to = 8, step = 3 }");
        let s = spec(&text).unwrap();
        assert_eq!(s.grid.batch, [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]);
        assert_eq!(s.grid.tp, [2, 5, 8]);
    }

    #[test]
    fn errors_carry_line_and_column() {
        let text = MINIMAL.replace(r#"["h100-sxm", "b200"]"#, r#"["h100-sxm", "b20"]"#);
        let e = spec(&text).unwrap_err();
        assert_eq!(
            e.message,
            "t.toml:9:25: grid.hardware[1]: unknown GPU \"b20\""
        );
        assert!(e.hint.unwrap().starts_with("did you mean \"b200\"?"));
    }

    #[test]
    fn racks_pair_with_their_gpus() {
        let text = MINIMAL.replace("[grid]", "[grid]\nrack = [\"dgx-b200\"]");
        let s = spec(&text).unwrap();
        let racks: Vec<&str> = s
            .grid
            .platform
            .iter()
            .map(|p| s.header.catalog.racks[p.rack].id.as_str())
            .collect();
        assert_eq!(racks, ["dgx-h100", "dgx-b200"]);
        let text = MINIMAL.replace("[grid]", "[grid]\nrack = [\"dgx-gb200-nvl72\"]");
        assert!(
            spec(&text)
                .unwrap_err()
                .message
                .contains("hosts gb200-nvl72, which is not in grid.hardware")
        );
    }

    #[test]
    fn grid_cap_is_enforced() {
        let text = MINIMAL.replace(
            "[grid]",
            "[grid]\nbatch = { from = 1, to = 100000, step = 1 }",
        );
        let e = parse(Path::new("t.toml"), &text, 100_000).unwrap_err();
        assert!(
            e.message
                .contains("800,000 configurations, more than the cap of 100,000"),
            "{}",
            e.message
        );
    }
}
