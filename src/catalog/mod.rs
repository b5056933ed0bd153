//! The built-in presets (GPUs, racks, models, number formats), embedded from `data/*.toml`, plus
//! the checks every preset passes, built-in or inline in a sweep file; a failed check is an
//! [`Error`] naming the key and value. Owns lookups by id; does not know about sweeps or the
//! performance model.

pub mod dtype;
pub mod economics;
mod error;
pub mod gpu;
pub mod kernels;
pub mod model;
pub mod rack;
pub mod training;

use serde::Deserialize;

use crate::limits;

pub use dtype::{ComputeClass, Dtype};
pub use economics::Economics;
pub use error::{Bound, Error, PresetKind};
pub use gpu::Gpu;
pub use model::{Attention, Model};
pub use rack::Rack;

const GPUS_TOML: &str = include_str!("data/gpus.toml");
const RACKS_TOML: &str = include_str!("data/racks.toml");
const MODELS_TOML: &str = include_str!("data/models.toml");
const DTYPES_TOML: &str = include_str!("data/dtypes.toml");
const CALIBRATION_TOML: &str = include_str!("data/calibration.toml");
const ECONOMICS_TOML: &str = include_str!("data/economics.toml");

/// Global factors fitted against measurements (`data/calibration.toml`).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Calibration {
    /// Rows at which a GEMM reaches half its large-matrix efficiency.
    pub gemm_half_rows: f64,
    /// Fixed cost of one engine iteration, milliseconds, where the kernels are not measured
    /// (GPUs without kernel surfaces).
    pub step_overhead_ms: f64,
    /// Scheduler CPU work per engine iteration, milliseconds (`perf::iteration`; overlapped with
    /// the GPU by the engines' overlap schedulers). The part per running sequence is each
    /// engine's measured one (`perf::iteration::host_s_per_sequence`).
    pub cpu_ms_per_iteration: f64,
    /// Fraction of the microbenchmarked GEMM efficiency (gpus.toml `gemm_*`, per format) that
    /// linear layers reach inside a serving engine where no GEMM of theirs was measured.
    pub serving_gemm_efficiency: f64,
    /// Efficiency of grouped routed-expert GEMMs relative to dense GEMMs of the same rows.
    pub moe_gemm_efficiency: f64,
    /// Fraction of the HBM and tensor-core rates attention kernels reach.
    pub attention_efficiency: f64,
}

impl Calibration {
    pub fn builtin() -> Calibration {
        Calibration::parse(CALIBRATION_TOML).expect("built-in calibration is valid")
    }

    pub fn parse(text: &str) -> Result<Calibration, Error> {
        let c: Calibration = toml::from_str(text)?;
        c.check()?;
        Ok(c)
    }

    /// Every factor in range; `Err` names the key.
    pub fn check(&self) -> Result<(), Error> {
        let c = self;
        non_negative("gemm_half_rows", c.gemm_half_rows)?;
        non_negative("step_overhead_ms", c.step_overhead_ms)?;
        non_negative("cpu_ms_per_iteration", c.cpu_ms_per_iteration)?;
        for (key, v) in [
            ("serving_gemm_efficiency", c.serving_gemm_efficiency),
            ("moe_gemm_efficiency", c.moe_gemm_efficiency),
            ("attention_efficiency", c.attention_efficiency),
        ] {
            fraction(key, v)?;
        }
        Ok(())
    }
}

/// What a sweep changed of the built-in catalog's numbers, for `check` and the manifest.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Overrides {
    /// Global factors its `[calibration]` sets (training factors as `training.<key>`).
    pub calibration: Vec<Changed>,
    /// Built-in GPUs its `[[gpu]]` tables extend.
    pub gpus: Vec<Extended>,
    /// Keys its `[cost]` table sets, in the table's order.
    pub cost: Vec<CostSet>,
}

impl Overrides {
    pub fn is_empty(&self) -> bool {
        self.calibration.is_empty() && self.gpus.is_empty() && self.cost.is_empty()
    }
}

/// A `[cost]` key a sweep sets (`pue`, `usd_per_gpu_hour.h100-sxm`, `usd_per_mtok_api_input`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CostSet {
    pub key: String,
    pub value: f64,
    /// The catalog's value it replaces (none: a price the preset lacks, or the API prices).
    pub was: Option<f64>,
}

/// One global factor a calibration sets.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Changed {
    pub key: String,
    pub builtin: f64,
    pub value: f64,
}

/// A GPU preset made from a built-in one with some fields replaced (`[[gpu]]` with `extends`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Extended {
    pub id: String,
    pub extends: String,
    /// The keys the table sets (`efficiency.hbm` for a key of its `efficiency` table).
    pub keys: Vec<String>,
}

/// `base` with the keys of `table` replacing its own (one level deeper in its subtables, so
/// `efficiency = { hbm = 0.85 }` keeps the other efficiencies), checked as a whole by `T`'s
/// deserializer (unknown keys, types); also the dotted keys set.
fn overlay<T: serde::Serialize + serde::de::DeserializeOwned>(
    base: &T,
    table: toml::Table,
) -> Result<(T, Vec<String>), toml::de::Error> {
    let mut merged = table_of(base);
    let mut keys = Vec::new();
    for (key, value) in table {
        match (merged.get_mut(&key), value) {
            (Some(toml::Value::Table(old)), toml::Value::Table(new)) => {
                for (k, v) in new {
                    keys.push(format!("{key}.{k}"));
                    old.insert(k, v);
                }
            }
            (_, value) => {
                keys.push(key.clone());
                merged.insert(key, value);
            }
        }
    }
    Ok((merged.try_into()?, keys))
}

/// Catalog data as a TOML table.
fn table_of<T: serde::Serialize>(data: &T) -> toml::Table {
    toml::Table::try_from(data).expect("catalog data serializes to TOML")
}

/// A number of a serialized table, by key.
fn number_at(table: &toml::Table, key: &str) -> Option<f64> {
    match table.get(key)? {
        toml::Value::Float(x) => Some(*x),
        toml::Value::Integer(i) => Some(*i as f64),
        _ => None,
    }
}

/// Every preset known to one sweep: the built-in ones plus the sweep's inline tables.
#[derive(Debug, Clone)]
pub struct Catalog {
    pub gpus: Vec<Gpu>,
    pub racks: Vec<Rack>,
    pub models: Vec<Model>,
    pub dtypes: Vec<Dtype>,
    pub calibration: Calibration,
    pub economics: Economics,
    /// Global factors of the training model.
    pub training: training::Factors,
    /// The sweep's `[[price]]` quotes, in file order; each has set its GPU's price at its
    /// pricing.
    pub quotes: Vec<Quote>,
    /// The sweep's `[calibration]` and `[[gpu]] extends` changes to the built-in numbers.
    pub overrides: Overrides,
}

/// A provider's price for one GPU at one pricing (a sweep's `[[price]]` table).
#[derive(Debug, Clone, PartialEq)]
pub struct Quote {
    pub provider: String,
    /// Index into `Catalog::gpus`.
    pub gpu: usize,
    pub pricing: crate::vocab::Pricing,
    pub usd_per_gpu_hour: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GpuFile {
    gpu: Vec<Gpu>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RackFile {
    rack: Vec<Rack>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelFile {
    model: Vec<Model>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DtypeFile {
    dtype: Vec<Dtype>,
}

impl Catalog {
    /// The embedded presets. They are checked by the test suite, so a failure here is a bug.
    pub fn builtin() -> Result<Catalog, Error> {
        fn parse<T: serde::de::DeserializeOwned>(
            file: &'static str,
            text: &str,
        ) -> Result<T, Error> {
            toml::from_str(text).map_err(|error| Error::BuiltinFile { file, error })
        }
        let factors = |file, error| Error::BuiltinFactors {
            file,
            error: Box::new(error),
        };
        let preset = |kind, id: &str, error| Error::BuiltinPreset {
            kind,
            id: id.to_string(),
            error: Box::new(error),
        };
        let catalog = Catalog {
            gpus: parse::<GpuFile>("gpus.toml", GPUS_TOML)?.gpu,
            racks: parse::<RackFile>("racks.toml", RACKS_TOML)?.rack,
            models: parse::<ModelFile>("models.toml", MODELS_TOML)?.model,
            dtypes: parse::<DtypeFile>("dtypes.toml", DTYPES_TOML)?.dtype,
            calibration: Calibration::parse(CALIBRATION_TOML)
                .map_err(|e| factors("calibration.toml", e))?,
            economics: Economics::parse(ECONOMICS_TOML)
                .map_err(|e| factors("economics.toml", e))?,
            training: training::Factors::builtin(),
            quotes: Vec::new(),
            overrides: Overrides::default(),
        };
        for gpu in &catalog.gpus {
            catalog
                .check_gpu(gpu)
                .map_err(|e| preset(PresetKind::Gpu, &gpu.id, e))?;
        }
        for rack in &catalog.racks {
            catalog
                .check_rack(rack)
                .map_err(|e| preset(PresetKind::Rack, &rack.id, e))?;
        }
        for model in &catalog.models {
            check_model(model)
                .and_then(|()| catalog.check_model_formats(model))
                .map_err(|e| preset(PresetKind::Model, &model.id, e))?;
        }
        Ok(catalog)
    }

    /// Sets the global factors a calibration table gives (the format of `validate
    /// --calibration` and of a sweep's `[calibration]`: keys of `data/calibration.toml`, and a
    /// `[training]` table of keys of `data/training.toml`); the keys it omits keep their values.
    /// Returns what it changed.
    pub fn calibrate(&mut self, mut table: toml::Table) -> Result<Vec<Changed>, Error> {
        let mut changed = Vec::new();
        let mut record =
            |prefix: &str, before: &toml::Table, after: &toml::Table, keys: Vec<String>| {
                for key in keys {
                    if let (Some(builtin), Some(value)) =
                        (number_at(before, &key), number_at(after, &key))
                    {
                        changed.push(Changed {
                            key: format!("{prefix}{key}"),
                            builtin,
                            value,
                        });
                    }
                }
            };
        if let Some(training) = table.remove("training") {
            let in_training = |e: Error| Error::Training(Box::new(e));
            let training: toml::Table = training
                .try_into()
                .map_err(|e| in_training(Error::Toml(e)))?;
            let (factors, keys) =
                overlay(&self.training, training).map_err(|e| in_training(Error::Toml(e)))?;
            factors.check().map_err(in_training)?;
            record(
                "training.",
                &table_of(&self.training),
                &table_of(&factors),
                keys,
            );
            self.training = factors;
        }
        let (calibration, keys) = overlay(&self.calibration, table)?;
        calibration.check()?;
        record(
            "",
            &table_of(&self.calibration),
            &table_of(&calibration),
            keys,
        );
        self.calibration = calibration;
        Ok(changed)
    }

    /// The built-in GPU `extends` with the fields of `table` replacing its own (its
    /// `efficiency` and `weight_only_dtypes` key by key); the keys set. Not checked.
    pub fn extend_gpu(
        &self,
        extends: usize,
        table: toml::Table,
    ) -> Result<(Gpu, Vec<String>), Error> {
        Ok(overlay(&self.gpus[extends], table)?)
    }

    /// What the sweep's own numbers change, one line each, for `check` and the manifest:
    /// `[calibration]` factors, GPUs extended by `[[gpu]]` tables, `[[price]]` quotes.
    pub fn own_numbers(&self) -> Vec<String> {
        let mut out = Vec::new();
        let c = &self.overrides.calibration;
        if !c.is_empty() {
            let each: Vec<String> = c
                .iter()
                .map(|c| format!("{} = {} (built-in {})", c.key, c.value, c.builtin))
                .collect();
            out.push(format!("calibration: {}", each.join(", ")));
        }
        for x in &self.overrides.gpus {
            out.push(format!(
                "gpu {}: extends {}, sets {}",
                x.id,
                x.extends,
                if x.keys.is_empty() {
                    "nothing".to_string()
                } else {
                    x.keys.join(", ")
                }
            ));
        }
        for q in &self.quotes {
            out.push(format!(
                "price: {} {} at {} USD/GPU-h, quoted by {}",
                self.gpus[q.gpu].id,
                q.pricing.as_str(),
                q.usd_per_gpu_hour,
                q.provider
            ));
        }
        out
    }

    /// The sweep's `[cost]` keys in one line, each with the value it replaces (`pue = 1.2 (was
    /// 1.3), ...`); `None` without `[cost]`.
    pub fn cost_words(&self) -> Option<String> {
        let c = &self.overrides.cost;
        if c.is_empty() {
            return None;
        }
        let each: Vec<String> = c
            .iter()
            .map(|c| match c.was {
                Some(was) => format!("{} = {} (was {was})", c.key, c.value),
                None => format!("{} = {}", c.key, c.value),
            })
            .collect();
        Some(each.join(", "))
    }

    pub fn gpu(&self, id: &str) -> Option<&Gpu> {
        self.gpus.iter().find(|g| g.id == id)
    }

    pub fn rack(&self, id: &str) -> Option<&Rack> {
        self.racks.iter().find(|r| r.id == id)
    }

    pub fn model(&self, id: &str) -> Option<&Model> {
        self.models.iter().find(|m| m.id == id)
    }

    pub fn dtype(&self, id: &str) -> Option<&Dtype> {
        self.dtypes.iter().find(|d| d.id == id)
    }

    pub fn gpu_index(&self, id: &str) -> Option<usize> {
        self.gpus.iter().position(|g| g.id == id)
    }

    pub fn rack_index(&self, id: &str) -> Option<usize> {
        self.racks.iter().position(|r| r.id == id)
    }

    pub fn dtype_index(&self, id: &str) -> Option<usize> {
        self.dtypes.iter().position(|d| d.id == id)
    }

    /// A GPU's fields are in range and name known formats and a rack that hosts it.
    pub fn check_gpu(&self, gpu: &Gpu) -> Result<(), Error> {
        check_id(&gpu.id)?;
        positive("bf16_tflops", gpu.bf16_tflops)?;
        for (key, value) in [
            ("fp8_tflops", gpu.fp8_tflops),
            ("fp4_tflops", gpu.fp4_tflops),
            ("int8_tops", gpu.int8_tops),
            ("tdp_w", gpu.tdp_w),
            ("idle_w", gpu.idle_w),
            ("capex_usd_per_gpu", gpu.capex_usd_per_gpu),
        ] {
            if let Some(v) = value {
                positive(key, v)?;
            }
        }
        for p in crate::vocab::Pricing::ALL {
            if let Some(v) = gpu.usd_per_gpu_hour_at(p) {
                positive(Gpu::price_key(p), v)?;
            }
        }
        if let (Some(idle), Some(tdp)) = (gpu.idle_w, gpu.tdp_w)
            && idle > tdp
        {
            return Err(Error::IdleAboveTdp {
                idle_w: idle,
                tdp_w: tdp,
            });
        }
        positive("hbm_gb", gpu.hbm_gb)?;
        if let Some(mib) = gpu.hbm_device_mib {
            positive("hbm_device_mib", mib)?;
        }
        positive("hbm_tbps", gpu.hbm_tbps)?;
        let e = &gpu.efficiency;
        for (key, value) in [
            ("efficiency.gemm_bf16", e.gemm_bf16),
            ("efficiency.hbm", e.hbm),
            ("efficiency.link", e.link),
        ] {
            fraction(key, value)?;
        }
        for class in [ComputeClass::Fp8, ComputeClass::Int8, ComputeClass::Fp4] {
            let (key, peak) = (class.efficiency_key(), class.peak_key());
            match (gpu.peak_flops(class).is_some(), gpu.gemm_efficiency(class)) {
                (true, Some(v)) => fraction(key, v)?,
                (true, None) => return Err(Error::Required { key, because: peak }),
                (false, Some(_)) => return Err(Error::WithoutPeak { key, peak }),
                (false, None) => {}
            }
        }
        // What the model divides by: each achieved rate at least one per second (the inputs
        // are positive and normal by now, so a product is finite, infinite or zero, never NaN).
        for class in ComputeClass::ALL {
            if let Some(achieved) = gpu.achievable_flops(class)
                && achieved < 1.0
            {
                return Err(Error::RateTooSmall {
                    key: class.peak_key(),
                    efficiency: class.efficiency_key(),
                    achieved,
                    unit: if class == ComputeClass::Int8 {
                        "OP"
                    } else {
                        "FLOP"
                    },
                });
            }
        }
        let achieved = gpu.hbm_bytes_per_s() * e.hbm;
        if achieved < 1.0 {
            return Err(Error::RateTooSmall {
                key: "hbm_tbps",
                efficiency: "efficiency.hbm",
                achieved,
                unit: "bytes",
            });
        }
        for (i, d) in gpu.native_dtypes.iter().enumerate() {
            let Some(dtype) = self.dtype(d) else {
                return Err(Error::UnknownListedFormat {
                    list: "native_dtypes",
                    index: i,
                    format: d.clone(),
                });
            };
            if gpu.peak_flops(dtype.compute).is_none() {
                return Err(Error::NativeWithoutPeak {
                    index: i,
                    format: d.clone(),
                    class: dtype.compute,
                });
            }
        }
        for (d, class) in &gpu.weight_only_dtypes {
            if self.dtype(d).is_none() {
                return Err(Error::UnknownWeightOnlyFormat { format: d.clone() });
            }
            if gpu.peak_flops(*class).is_none() {
                return Err(Error::WeightOnlyWithoutPeak {
                    format: d.clone(),
                    class: *class,
                });
            }
        }
        match (gpu.weight_only_dtypes.is_empty(), e.gemm_weight_only) {
            (false, None) => {
                return Err(Error::Required {
                    key: "efficiency.gemm_weight_only",
                    because: "weight_only_dtypes",
                });
            }
            (_, Some(v)) => fraction("efficiency.gemm_weight_only", v)?,
            (true, None) => {}
        }
        for (i, d) in gpu.kv_dtypes.iter().enumerate() {
            if self.dtype(d).is_none() {
                return Err(Error::UnknownListedFormat {
                    list: "kv_dtypes",
                    index: i,
                    format: d.clone(),
                });
            }
        }
        match self.rack(&gpu.default_rack) {
            None => Err(Error::UnknownDefaultRack {
                rack: gpu.default_rack.clone(),
            }),
            Some(rack) if rack.gpu != gpu.id => Err(Error::DefaultRackHostsOtherGpu {
                rack: rack.id.clone(),
                hosts: rack.gpu.clone(),
                gpu: gpu.id.clone(),
            }),
            Some(_) => Ok(()),
        }
    }

    /// The formats a model names are known ones.
    pub fn check_model_formats(&self, m: &Model) -> Result<(), Error> {
        let unknown = [
            ("checkpoint_expert_dtype", &m.checkpoint_expert_dtype),
            ("checkpoint_dense_dtype", &m.checkpoint_dense_dtype),
        ]
        .into_iter()
        .find_map(|(key, id)| {
            id.as_ref()
                .filter(|id| self.dtype(id).is_none())
                .map(|id| (key, id.clone()))
        });
        if let Some((key, format)) = unknown {
            return Err(Error::UnknownCheckpointFormat { key, format });
        }
        match &m.checkpoint_expert_dtype {
            Some(_) if !m.is_moe() => Err(Error::CheckpointExpertDtypeWithoutExperts),
            None if m.checkpoint_dense_dtype.is_some() => {
                Err(Error::CheckpointDenseDtypeWithoutExperts)
            }
            _ if m.fp8_block_size == Some(0) => Err(Error::ZeroFp8BlockSize),
            _ if m.expert_routing != model::ExpertRouting::Balanced && !m.is_moe() => {
                Err(Error::ExpertRoutingWithoutExperts)
            }
            _ => Ok(()),
        }
    }

    /// A rack's fields are in range, its GPU exists and its scale-up domains tile the rack.
    pub fn check_rack(&self, rack: &Rack) -> Result<(), Error> {
        check_id(&rack.id)?;
        let Some(gpu) = self.gpu(&rack.gpu) else {
            return Err(Error::UnknownGpu {
                gpu: rack.gpu.clone(),
            });
        };
        for (key, value) in [
            ("gpus_per_server", rack.gpus_per_server),
            ("servers_per_rack", rack.servers_per_rack),
            ("scaleup_domain_gpus", rack.scaleup_domain_gpus),
        ] {
            if value == 0 {
                return Err(Error::Zero { key });
            }
        }
        // Checked before anything multiplies them, so that the product cannot wrap.
        let gpus = u64::from(rack.gpus_per_server) * u64::from(rack.servers_per_rack);
        if gpus > u64::from(limits::MAX_RACK_GPUS) {
            return Err(Error::TooManyRackGpus {
                gpus_per_server: rack.gpus_per_server,
                servers_per_rack: rack.servers_per_rack,
            });
        }
        let per_rack = rack.gpus_per_rack();
        if !per_rack.is_multiple_of(rack.scaleup_domain_gpus) {
            return Err(Error::DomainDoesNotDivideRack {
                domain_gpus: rack.scaleup_domain_gpus,
                rack_gpus: per_rack,
            });
        }
        // A deployment grows by whole servers and whole scale-up domains at once.
        let (server, domain) = (rack.gpus_per_server, rack.scaleup_domain_gpus);
        if !(server.is_multiple_of(domain) || domain.is_multiple_of(server)) {
            return Err(Error::DomainAndServerDoNotDivide {
                domain_gpus: domain,
                server_gpus: server,
            });
        }
        for (key, value) in [
            ("scaleup_gbps_per_gpu", rack.scaleup_gbps_per_gpu),
            ("scaleout_gbps_per_gpu", rack.scaleout_gbps_per_gpu),
            ("server_power_kw", rack.server_power_kw),
            ("rack_power_budget_kw", rack.rack_power_budget_kw),
            ("host_link_gbps_per_gpu", rack.host_link_gbps_per_gpu),
            ("storage_gbps_per_gpu", rack.storage_gbps_per_gpu),
        ] {
            positive(key, value)?;
        }
        // The links the collectives divide bytes by, at the GPU's link efficiency
        // (`perf::layout::Tier`).
        for (key, gbps) in [
            ("scaleup_gbps_per_gpu", rack.scaleup_gbps_per_gpu),
            ("scaleout_gbps_per_gpu", rack.scaleout_gbps_per_gpu),
        ] {
            let achieved = gbps * 1e9 * gpu.efficiency.link;
            if achieved < 1.0 {
                return Err(Error::RateTooSmall {
                    key,
                    efficiency: "efficiency.link",
                    achieved,
                    unit: "bytes",
                });
            }
        }
        let spine = limits::OVERSUBSCRIPTION;
        if !(spine.min..=spine.max).contains(&rack.scaleout_oversubscription) {
            return Err(Error::OutOfRange {
                key: "scaleout_oversubscription",
                value: f64::from(rack.scaleout_oversubscription),
                bound: Bound::Between(f64::from(spine.min), f64::from(spine.max)),
            });
        }
        for (key, value) in [
            ("host_memory_gb_per_gpu", rack.host_memory_gb_per_gpu),
            ("switch_power_kw", rack.switch_power_kw),
        ] {
            non_negative(key, value)?;
        }
        for (key, value) in [
            ("scaleup_latency_us", rack.scaleup_latency_us),
            ("scaleout_latency_us", rack.scaleout_latency_us),
            ("collective_launch_us", rack.collective_launch_us),
        ] {
            non_negative(key, value)?;
            // A latency beyond a year is no latency (and would overflow the step times).
            if value > limits::MAX_SECONDS * 1e6 {
                return Err(Error::LatencyOverAYear {
                    key,
                    value_us: value,
                });
            }
        }
        Ok(())
    }
}

/// A model's shapes are consistent (heads group evenly, MoE and MLA fields complete).
pub fn check_model(m: &Model) -> Result<(), Error> {
    check_id(&m.id)?;
    for (key, value) in [
        ("layers", m.layers),
        ("hidden", m.hidden),
        ("heads", m.heads),
        ("kv_heads", m.kv_heads),
        ("head_dim", m.head_dim),
        ("max_context", m.max_context),
    ] {
        if value == 0 {
            return Err(Error::Zero { key });
        }
    }
    // Sizes that exist must be sizes: a zero vocabulary or expert width has no parameters.
    for (key, value) in [
        ("vocab", m.vocab),
        ("ffn_hidden", m.ffn_hidden),
        ("moe_ffn_hidden", m.moe_ffn_hidden),
        ("mla_kv_lora_rank", m.mla_kv_lora_rank),
        ("mla_q_lora_rank", m.mla_q_lora_rank),
        ("mla_rope_head_dim", m.mla_rope_head_dim),
    ] {
        if value == Some(0) {
            return Err(Error::Zero { key });
        }
    }
    for (key, value) in [
        ("published_total_params_b", m.published_total_params_b),
        ("published_active_params_b", m.published_active_params_b),
    ] {
        if let Some(v) = value {
            non_negative(key, v)?;
        }
    }
    if !m.heads.is_multiple_of(m.kv_heads) {
        return Err(Error::KvHeadsDoNotDivideHeads {
            kv_heads: m.kv_heads,
            heads: m.heads,
        });
    }
    if m.attention == Attention::Mha && m.kv_heads != m.heads {
        return Err(Error::MhaKvHeads { heads: m.heads });
    }
    if m.attention == Attention::Mla
        && (m.mla_kv_lora_rank.is_none() || m.mla_rope_head_dim.is_none())
    {
        return Err(Error::MlaIncomplete);
    }
    if m.attention != Attention::Mla
        && (m.mla_kv_lora_rank.is_some()
            || m.mla_q_lora_rank.is_some()
            || m.mla_rope_head_dim.is_some())
    {
        return Err(Error::MlaFieldsWithoutMla);
    }
    match (m.experts, m.experts_per_token, m.moe_ffn_hidden) {
        (None, None, None) => {
            if m.ffn_hidden.is_none() {
                return Err(Error::DenseWithoutFfnHidden);
            }
            if m.shared_experts.is_some() || m.dense_layers.is_some() {
                return Err(Error::MoeOnly {
                    keys: "shared_experts and dense_layers",
                });
            }
        }
        (Some(e), Some(k), Some(_)) => {
            if e < 2 {
                return Err(Error::TooFewExperts { experts: e });
            }
            if k == 0 || k > e {
                return Err(Error::ExpertsPerToken {
                    per_token: k,
                    experts: e,
                });
            }
            if m.dense_layers.unwrap_or(0) > 0 && m.ffn_hidden.is_none() {
                return Err(Error::DenseLayersWithoutFfnHidden);
            }
            if m.dense_layers.unwrap_or(0) >= m.layers {
                return Err(Error::TooManyDenseLayers);
            }
        }
        _ => {
            return Err(Error::SetTogether {
                keys: "experts, experts_per_token and moe_ffn_hidden",
            });
        }
    }
    match (m.expert_groups, m.expert_groups_per_token) {
        (None, None) => {}
        (Some(g), Some(mg)) => {
            let Some((e, k)) = m.experts.zip(m.experts_per_token) else {
                return Err(Error::MoeOnly {
                    keys: "expert_groups and expert_groups_per_token",
                });
            };
            if g < 2 || !e.is_multiple_of(g) {
                return Err(Error::ExpertGroups {
                    groups: g,
                    experts: e,
                });
            }
            if mg == 0 || mg > g {
                return Err(Error::ExpertGroupsPerToken {
                    groups_per_token: mg,
                    groups: g,
                });
            }
            if k > mg * (e / g) {
                return Err(Error::ExpertsBeyondGroups {
                    per_token: k,
                    reachable: mg * (e / g),
                    groups_per_token: mg,
                });
            }
        }
        _ => {
            return Err(Error::SetTogether {
                keys: "expert_groups and expert_groups_per_token",
            });
        }
    }
    match (m.sliding_window, m.sliding_window_layers) {
        (None, None) => {}
        (Some(w), Some(n)) => {
            if w == 0 {
                return Err(Error::ZeroSlidingWindow);
            }
            if n > m.layers {
                return Err(Error::SlidingWindowLayers {
                    window_layers: n,
                    layers: m.layers,
                });
            }
        }
        _ => {
            return Err(Error::SetTogether {
                keys: "sliding_window and sliding_window_layers",
            });
        }
    }
    Ok(())
}

fn check_id(id: &str) -> Result<(), Error> {
    let ok = !id.is_empty()
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-_.".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidId { id: id.to_string() })
    }
}

/// `Ok` when `value` is a positive normal number. A subnormal (below 2.2e-308) is no
/// hardware's peak or bandwidth, and dividing by it gives infinity.
pub(crate) fn positive(key: &'static str, value: f64) -> Result<(), Error> {
    if !(value.is_finite() && value > 0.0) {
        Err(out_of_range(key, value, Bound::Positive))
    } else {
        normal(key, value)
    }
}

/// `Ok` when `value` is finite and zero or more, and not subnormal; the error names the key and
/// value.
pub(crate) fn non_negative(key: &'static str, value: f64) -> Result<(), Error> {
    if !(value.is_finite() && value >= 0.0) {
        Err(out_of_range(key, value, Bound::NonNegative))
    } else if value == 0.0 {
        Ok(())
    } else {
        normal(key, value)
    }
}

fn fraction(key: &'static str, value: f64) -> Result<(), Error> {
    if value.is_finite() && value > 0.0 && value <= 1.0 {
        normal(key, value)
    } else {
        Err(out_of_range(key, value, Bound::Fraction))
    }
}

fn normal(key: &'static str, value: f64) -> Result<(), Error> {
    if value.is_normal() {
        Ok(())
    } else {
        Err(Error::Subnormal { key, value })
    }
}

fn out_of_range(key: &'static str, value: f64, bound: Bound) -> Error {
    Error::OutOfRange { key, value, bound }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog() -> Catalog {
        Catalog::builtin().expect("built-in catalog is valid")
    }

    #[test]
    fn builtin_catalog_is_valid_and_has_every_reference_id() {
        let c = catalog();
        for id in [
            "a100-80gb",
            "h100-sxm",
            "h800-sxm",
            "h200-sxm",
            "b200",
            "b300",
            "gb200-nvl72",
            "gb300-nvl72",
            "mi300x",
            "mi325x",
            "mi355x",
        ] {
            assert!(c.gpu(id).is_some(), "gpu {id}");
        }
        assert_eq!(c.models.len(), 28);
        for id in [
            "bf16", "fp16", "fp8", "int8", "int4", "fp4", "nvfp4", "mxfp4",
        ] {
            assert!(c.dtype(id).is_some(), "dtype {id}");
        }
    }

    #[test]
    fn bytes_per_param_include_block_scales() {
        let c = catalog();
        let bytes = |id: &str| c.dtype(id).unwrap().bytes_per_param();
        assert_eq!(bytes("bf16"), 2.0);
        assert_eq!(bytes("fp8"), 1.0);
        assert_eq!(bytes("nvfp4"), 0.5 + 1.0 / 16.0);
        assert_eq!(bytes("mxfp4"), 0.5 + 1.0 / 32.0);
        assert_eq!(bytes("int4"), 0.5 + 2.0 / 128.0);
    }

    /// Parameter counts from the shapes agree with the published totals within 1.5 %, or within
    /// the rounding of the published figure: Narayanan et al. print one decimal (their own eq. 2
    /// gives 1.652B for the "1.7B" model) and count learned position embeddings and biases,
    /// which we leave out (< 0.3 % at that size).
    #[test]
    fn computed_parameters_match_published_counts() {
        let c = catalog();
        let mut checked = 0;
        for m in &c.models {
            let (Some(counts), Some(published)) = (m.param_counts(), m.published_total_params_b)
            else {
                continue;
            };
            let total_b = counts.total(m.experts()) / 1e9;
            let tolerance = (0.015 * published).max(0.06);
            assert!(
                (total_b - published).abs() <= tolerance,
                "{}: computed {total_b:.2}B vs published {published}B",
                m.id
            );
            checked += 1;
        }
        assert!(checked >= 25, "only {checked} models checked");
    }

    #[test]
    fn llama_3_1_70b_parameters_by_hand() {
        let c = catalog();
        let m = c.model("llama-3.1-70b").unwrap();
        let p = m.param_counts().unwrap();
        // q,o: 8192x8192 each; k,v: 8192x1024 each; two norms of 8192.
        assert_eq!(
            p.attention_per_layer,
            2.0 * 8192.0 * 8192.0 + 2.0 * 8192.0 * 1024.0 + 16384.0
        );
        assert_eq!(p.dense_mlp_per_layer, 3.0 * 8192.0 * 28672.0);
        assert_eq!(p.embedding, 128256.0 * 8192.0);
        let total = p.total(0);
        assert!((total / 1e9 - 70.55).abs() < 0.01, "{total}");
    }

    #[test]
    fn deepseek_v3_active_parameters() {
        let c = catalog();
        let m = c.model("deepseek-v3").unwrap();
        let p = m.param_counts().unwrap();
        assert_eq!(p.moe_layers, 58);
        assert_eq!(p.dense_layers, 3);
        let active_b = p.active(8) / 1e9;
        // Published 37B; the model card's count excludes the MTP module as we do.
        assert!((active_b - 37.6).abs() < 0.5, "{active_b}");
    }

    /// Every message a catalog check can give, one case per way to fail, as the user reads it
    /// after `gpu[0] "id": ` or `built-in gpu id: `.
    fn check_messages() -> Vec<String> {
        /// One way to spoil a valid preset.
        type Case<T> = Box<dyn Fn(&mut T)>;
        let c = catalog();
        let mut out = Vec::new();
        let h100 = c.gpu("h100-sxm").unwrap();
        let gpu_cases: Vec<Case<Gpu>> = vec![
            Box::new(|g| g.id = "H100".into()),
            Box::new(|g| g.bf16_tflops = 0.0),
            Box::new(|g| g.bf16_tflops = 1e-310),
            Box::new(|g| g.bf16_tflops = f64::INFINITY),
            Box::new(|g| g.fp8_tflops = Some(-1.0)),
            Box::new(|g| g.capex_usd_per_gpu = Some(f64::NAN)),
            Box::new(|g| g.idle_w = Some(800.0)),
            Box::new(|g| g.hbm_gb = 1e-320),
            Box::new(|g| g.hbm_tbps = -2.5e20),
            Box::new(|g| g.efficiency.hbm = 1.5),
            Box::new(|g| g.efficiency.link = 0.0),
            Box::new(|g| g.efficiency.gemm_bf16 = 1e-309),
            Box::new(|g| g.efficiency.gemm_fp8 = None),
            Box::new(|g| g.efficiency.gemm_int8 = Some(2.0)),
            Box::new(|g| g.efficiency.gemm_fp4 = Some(0.5)),
            Box::new(|g| g.bf16_tflops = 1e-300),
            Box::new(|g| g.hbm_tbps = 1e-12),
            Box::new(|g| g.native_dtypes.push("fp5".into())),
            Box::new(|g| g.native_dtypes.push("x".repeat(100))),
            Box::new(|g| g.native_dtypes.push("nvfp4".into())),
            Box::new(|g| {
                g.weight_only_dtypes
                    .insert("fp5".into(), ComputeClass::Bf16);
            }),
            Box::new(|g| {
                g.weight_only_dtypes.insert("fp4".into(), ComputeClass::Fp4);
            }),
            Box::new(|g| g.efficiency.gemm_weight_only = None),
            Box::new(|g| g.efficiency.gemm_weight_only = Some(-0.5)),
            Box::new(|g| {
                g.weight_only_dtypes.clear();
                g.efficiency.gemm_weight_only = Some(1.25);
            }),
            Box::new(|g| g.kv_dtypes.push("fp5".into())),
            Box::new(|g| g.default_rack = "dgx-h1000".into()),
            Box::new(|g| g.default_rack = "dgx-b200".into()),
        ];
        for case in &gpu_cases {
            let mut g = h100.clone();
            case(&mut g);
            out.push(c.check_gpu(&g).unwrap_err().to_string());
        }
        let dgx = c.rack("dgx-h100").unwrap();
        let rack_cases: Vec<Case<Rack>> = vec![
            Box::new(|r| r.id = "dgx h100".into()),
            Box::new(|r| r.id = String::new()),
            Box::new(|r| r.gpu = "h1000".into()),
            Box::new(|r| r.gpus_per_server = 0),
            Box::new(|r| r.servers_per_rack = 0),
            Box::new(|r| r.scaleup_domain_gpus = 0),
            Box::new(|r| r.servers_per_rack = 1000),
            Box::new(|r| r.scaleup_domain_gpus = 3),
            Box::new(|r| {
                r.servers_per_rack = 6;
                r.scaleup_domain_gpus = 12;
            }),
            Box::new(|r| r.scaleup_gbps_per_gpu = 0.0),
            Box::new(|r| r.storage_gbps_per_gpu = f64::NEG_INFINITY),
            Box::new(|r| r.scaleout_gbps_per_gpu = 1e-300),
            Box::new(|r| r.host_memory_gb_per_gpu = -1.0),
            Box::new(|r| r.switch_power_kw = 5e-324),
            Box::new(|r| r.scaleup_latency_us = -0.5),
            Box::new(|r| r.scaleout_latency_us = 4e13),
            Box::new(|r| r.collective_launch_us = f64::MAX),
            Box::new(|r| r.scaleout_oversubscription = 0),
            Box::new(|r| r.scaleout_oversubscription = 17),
        ];
        for case in &rack_cases {
            let mut r = dgx.clone();
            case(&mut r);
            out.push(c.check_rack(&r).unwrap_err().to_string());
        }
        let dense = c.model("llama-3.1-8b").unwrap();
        let moe = c.model("deepseek-v3").unwrap();
        let mha = c.model("llama-2-7b").unwrap();
        let windowed = c.model("gpt-oss-120b").unwrap();
        let model_cases: Vec<(&Model, Case<Model>)> = vec![
            (dense, Box::new(|m| m.id = "Llama".into())),
            (dense, Box::new(|m| m.layers = 0)),
            (dense, Box::new(|m| m.max_context = 0)),
            (dense, Box::new(|m| m.vocab = Some(0))),
            (moe, Box::new(|m| m.mla_rope_head_dim = Some(0))),
            (dense, Box::new(|m| m.published_total_params_b = Some(-8.0))),
            (
                dense,
                Box::new(|m| m.published_active_params_b = Some(1e-310)),
            ),
            (dense, Box::new(|m| m.kv_heads = 5)),
            (mha, Box::new(|m| m.kv_heads = 8)),
            (moe, Box::new(|m| m.mla_kv_lora_rank = None)),
            (dense, Box::new(|m| m.mla_q_lora_rank = Some(64))),
            (dense, Box::new(|m| m.ffn_hidden = None)),
            (dense, Box::new(|m| m.shared_experts = Some(1))),
            (moe, Box::new(|m| m.experts = Some(1))),
            (moe, Box::new(|m| m.experts_per_token = Some(0))),
            (moe, Box::new(|m| m.experts_per_token = Some(300))),
            (moe, Box::new(|m| m.ffn_hidden = None)),
            (moe, Box::new(|m| m.dense_layers = Some(61))),
            (moe, Box::new(|m| m.moe_ffn_hidden = None)),
            (
                dense,
                Box::new(|m| {
                    m.expert_groups = Some(8);
                    m.expert_groups_per_token = Some(4);
                }),
            ),
            (moe, Box::new(|m| m.expert_groups = Some(3))),
            (moe, Box::new(|m| m.expert_groups_per_token = Some(9))),
            (
                moe,
                Box::new(|m| {
                    m.expert_groups = Some(64);
                    m.expert_groups_per_token = Some(1);
                }),
            ),
            (moe, Box::new(|m| m.expert_groups_per_token = None)),
            (windowed, Box::new(|m| m.sliding_window = Some(0))),
            (windowed, Box::new(|m| m.sliding_window_layers = Some(99))),
            (windowed, Box::new(|m| m.sliding_window = None)),
            (
                moe,
                Box::new(|m| m.checkpoint_expert_dtype = Some("fp5".into())),
            ),
            (
                dense,
                Box::new(|m| m.checkpoint_expert_dtype = Some("mxfp4".into())),
            ),
            (
                moe,
                Box::new(|m| {
                    m.checkpoint_expert_dtype = Some("mxfp4".into());
                    m.checkpoint_dense_dtype = Some("bf17".into());
                }),
            ),
            (
                moe,
                Box::new(|m| m.checkpoint_dense_dtype = Some("bf16".into())),
            ),
            (dense, Box::new(|m| m.fp8_block_size = Some(0))),
            (
                dense,
                Box::new(|m| m.expert_routing = model::ExpertRouting::PowerLaw12),
            ),
        ];
        for (model, case) in &model_cases {
            let mut m = (*model).clone();
            case(&mut m);
            let e = check_model(&m).and_then(|()| c.check_model_formats(&m));
            out.push(e.unwrap_err().to_string());
        }
        let economics_cases: Vec<Case<Economics>> = vec![
            Box::new(|e| e.pue = 0.5),
            Box::new(|e| e.pue = f64::NAN),
            Box::new(|e| e.years = 0.0),
            Box::new(|e| e.storage_gbps_per_server = 1e-310),
            Box::new(|e| e.usd_per_kwh = -0.1),
            Box::new(|e| e.storage_capex_usd_per_server = f64::INFINITY),
        ];
        for case in &economics_cases {
            let mut e = c.economics;
            case(&mut e);
            out.push(e.check().unwrap_err().to_string());
        }
        let calibration = "gemm_half_rows = 64.0\nstep_overhead_ms = 4.0\n\
            serving_gemm_efficiency = 0.8\n\
            moe_gemm_efficiency = 0.5\nattention_efficiency = 0.7\n\
            cpu_ms_per_iteration = 0.5\n";
        assert!(Calibration::parse(calibration).is_ok());
        for (from, to) in [
            ("gemm_half_rows = 64.0", "gemm_half_rows = -64.0"),
            ("step_overhead_ms = 4.0", "step_overhead_ms = nan"),
            (
                "cpu_ms_per_iteration = 0.5",
                "cpu_ms_per_iteration = 1e-310",
            ),
            ("moe_gemm_efficiency = 0.5", "moe_gemm_efficiency = 1.5"),
            ("attention_efficiency = 0.7", "attention_efficiency = 0.0"),
            (
                "attention_efficiency = 0.7",
                "attention_efficiency = \"high\"",
            ),
            (
                "cpu_ms_per_iteration = 0.5",
                "cpu_ms_per_iteration = 0.5\nextra = 1",
            ),
        ] {
            let text = calibration.replace(from, to);
            out.push(Calibration::parse(&text).unwrap_err().to_string());
        }
        let factors = "gemm_efficiency = 0.875\ngemm_half_width = 1280.0\n\
            tp_comm_overlap = 1.0\nrestart_minutes = 10.0\n";
        assert!(training::Factors::parse(factors).is_ok());
        for (from, to) in [
            ("gemm_efficiency = 0.875", "gemm_efficiency = 1.5"),
            ("tp_comm_overlap = 1.0", "tp_comm_overlap = -0.0001"),
            ("tp_comm_overlap = 1.0", "tp_comm_overlap = nan"),
            ("gemm_half_width = 1280.0", "gemm_half_width = -1.0"),
            ("restart_minutes = 10.0", "restart_minutes = inf"),
            (
                "restart_minutes = 10.0",
                "restart_minutes = 10.0\nfailures_per_gpu_hour = 0.0",
            ),
            (
                "restart_minutes = 10.0",
                "restart_minutes = 10.0\nfailures_per_gpu_hour = -inf",
            ),
            ("restart_minutes = 10.0", "restart_minutes = [10.0]"),
        ] {
            let text = factors.replace(from, to);
            out.push(training::Factors::parse(&text).unwrap_err().to_string());
        }
        out
    }

    /// The messages of [`check_messages`], in order. They reach users verbatim (and the stderr
    /// snapshots of `tests/specs/invalid`), so a change here is a change of the interface.
    const CHECK_MESSAGES: [&str; 101] = [
        "id: \"H100\" must be lowercase letters, digits, '-', '_' or '.'",
        "bf16_tflops: 0 must be positive",
        "bf16_tflops: 1e-310 is subnormal, too small to compute with (the smallest normal number is 2.2e-308)",
        "bf16_tflops: inf must be positive",
        "fp8_tflops: -1 must be positive",
        "capex_usd_per_gpu: NaN must be positive",
        "idle_w: 800 exceeds tdp_w (700)",
        "hbm_gb: 1e-320 is subnormal, too small to compute with (the smallest normal number is 2.2e-308)",
        "hbm_tbps: -2.5e20 must be positive",
        "efficiency.hbm: 1.5 must be a fraction in (0, 1]",
        "efficiency.link: 0 must be a fraction in (0, 1]",
        "efficiency.gemm_bf16: 1e-309 is subnormal, too small to compute with (the smallest normal number is 2.2e-308)",
        "efficiency.gemm_fp8: required because fp8_tflops is set",
        "efficiency.gemm_int8: 2 must be a fraction in (0, 1]",
        "efficiency.gemm_fp4: set but fp4_tflops is not",
        "bf16_tflops x efficiency.gemm_bf16: 7.80e-289 FLOP/s achieved, below one per second, too slow to time a step",
        "hbm_tbps x efficiency.hbm: 9.00e-1 bytes/s achieved, below one per second, too slow to time a step",
        "native_dtypes[4]: unknown number format \"fp5\"",
        "native_dtypes[4]: unknown number format \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…\"",
        "native_dtypes[4]: \"nvfp4\" computes on fp4 tensor cores but fp4_tflops is not set",
        "weight_only_dtypes.fp5: unknown number format \"fp5\"",
        "weight_only_dtypes.fp4: runs on fp4 tensor cores but fp4_tflops is not set",
        "efficiency.gemm_weight_only: required because weight_only_dtypes is set",
        "efficiency.gemm_weight_only: -0.5 must be a fraction in (0, 1]",
        "efficiency.gemm_weight_only: 1.25 must be a fraction in (0, 1]",
        "kv_dtypes[4]: unknown number format \"fp5\"",
        "default_rack: unknown rack \"dgx-h1000\"",
        "default_rack: rack \"dgx-b200\" hosts \"b200\", not \"h100-sxm\"",
        "id: \"dgx h100\" must be lowercase letters, digits, '-', '_' or '.'",
        "id: \"\" must be lowercase letters, digits, '-', '_' or '.'",
        "gpu: unknown GPU \"h1000\"",
        "gpus_per_server: must be at least 1",
        "servers_per_rack: must be at least 1",
        "scaleup_domain_gpus: must be at least 1",
        "gpus_per_server x servers_per_rack: 8 x 1000 = 8000 GPUs, more than 4096 (NVIDIA's largest announced rack-scale system, NVL576, has 576 GPUs)",
        "scaleup_domain_gpus: 3 does not divide the 32 GPUs of the rack",
        "scaleup_domain_gpus: 12 and gpus_per_server 8 do not divide one another",
        "scaleup_gbps_per_gpu: 0 must be positive",
        "storage_gbps_per_gpu: -inf must be positive",
        "scaleout_gbps_per_gpu x efficiency.link: 8.00e-292 bytes/s achieved, below one per second, too slow to time a step",
        "host_memory_gb_per_gpu: -1 must be zero or positive",
        "switch_power_kw: 5e-324 is subnormal, too small to compute with (the smallest normal number is 2.2e-308)",
        "scaleup_latency_us: -0.5 must be zero or positive",
        "scaleout_latency_us: 40000000000000 µs is more than a year (31536000000000 µs)",
        "collective_launch_us: 1.7976931348623157e308 µs is more than a year (31536000000000 µs)",
        "scaleout_oversubscription: 0 must be between 1 and 16",
        "scaleout_oversubscription: 17 must be between 1 and 16",
        "id: \"Llama\" must be lowercase letters, digits, '-', '_' or '.'",
        "layers: must be at least 1",
        "max_context: must be at least 1",
        "vocab: must be at least 1",
        "mla_rope_head_dim: must be at least 1",
        "published_total_params_b: -8 must be zero or positive",
        "published_active_params_b: 1e-310 is subnormal, too small to compute with (the smallest normal number is 2.2e-308)",
        "kv_heads: 5 does not divide heads (32)",
        "kv_heads: multi-head attention needs kv_heads = heads (32)",
        "attention = \"mla\" needs mla_kv_lora_rank and mla_rope_head_dim",
        "mla_* fields apply only to attention = \"mla\"",
        "ffn_hidden: a dense model needs its MLP width",
        "shared_experts and dense_layers apply only to MoE models (set experts)",
        "experts: 1 must be at least 2 (omit the MoE fields for a dense model)",
        "experts_per_token: 0 must be between 1 and experts (256)",
        "experts_per_token: 300 must be between 1 and experts (256)",
        "ffn_hidden: dense_layers need the dense MLP width",
        "dense_layers: must be fewer than layers",
        "experts, experts_per_token and moe_ffn_hidden must be set together",
        "expert_groups and expert_groups_per_token apply only to MoE models (set experts)",
        "expert_groups: 3 must be at least 2 and divide experts (256)",
        "expert_groups_per_token: 9 must be between 1 and expert_groups (8)",
        "experts_per_token: 8 exceeds the 4 experts of expert_groups_per_token (1) groups",
        "expert_groups and expert_groups_per_token must be set together",
        "sliding_window: must be at least 1 token",
        "sliding_window_layers: 99 exceeds layers (36)",
        "sliding_window and sliding_window_layers must be set together",
        "checkpoint_expert_dtype: unknown format \"fp5\"",
        "checkpoint_expert_dtype applies only to MoE models (set experts)",
        "checkpoint_dense_dtype: unknown format \"bf17\"",
        "checkpoint_dense_dtype applies only with checkpoint_expert_dtype (the layers a checkpoint of pre-quantized experts keeps in another format)",
        "fp8_block_size: must be at least 1 (omit it for a per-tensor FP8 checkpoint)",
        "expert_routing applies only to MoE models (set experts)",
        "pue: 0.5 must be at least 1",
        "pue: NaN must be at least 1",
        "years: 0 must be positive",
        "storage_gbps_per_server: 1e-310 is subnormal, too small to compute with (the smallest normal number is 2.2e-308)",
        "usd_per_kwh: -0.1 must be zero or positive",
        "storage_capex_usd_per_server: inf must be zero or positive",
        "gemm_half_rows: -64 must be zero or positive",
        "step_overhead_ms: NaN must be zero or positive",
        "cpu_ms_per_iteration: 1e-310 is subnormal, too small to compute with (the smallest normal number is 2.2e-308)",
        "moe_gemm_efficiency: 1.5 must be a fraction in (0, 1]",
        "attention_efficiency: 0 must be a fraction in (0, 1]",
        "TOML parse error at line 5, column 24\n  |\n5 | attention_efficiency = \"high\"\n  |                        ^^^^^^\ninvalid type: string \"high\", expected f64\n",
        "TOML parse error at line 7, column 1\n  |\n7 | extra = 1\n  | ^^^^^\nunknown field `extra`, expected one of `gemm_half_rows`, `step_overhead_ms`, `cpu_ms_per_iteration`, `serving_gemm_efficiency`, `moe_gemm_efficiency`, `attention_efficiency`\n",
        "gemm_efficiency: 1.5 must be between 0 and 1",
        "tp_comm_overlap: -0.0001 must be between 0 and 1",
        "tp_comm_overlap: NaN must be between 0 and 1",
        "gemm_half_width: -1 must be zero or positive",
        "restart_minutes: inf must be zero or positive",
        "failures_per_gpu_hour: 0 must be positive",
        "failures_per_gpu_hour: -inf must be positive",
        "TOML parse error at line 4, column 19\n  |\n4 | restart_minutes = [10.0]\n  |                   ^^^^^^\ninvalid type: sequence, expected f64\n",
    ];

    #[test]
    fn check_messages_are_pinned() {
        let got = check_messages();
        assert_eq!(got.len(), CHECK_MESSAGES.len());
        for (got, expected) in got.iter().zip(CHECK_MESSAGES) {
            assert_eq!(got, expected);
        }
    }

    /// Group-limited routing (DeepSeek-V3: 8 groups of 32 experts, 4 per token) is checked for
    /// consistency with the experts it groups.
    #[test]
    fn routing_groups_must_fit_the_experts() {
        let c = catalog();
        let m = c.model("deepseek-v3").unwrap();
        assert_eq!(m.routing_groups(), Some((8, 4)));
        let with = |groups: Option<u32>, per_token: Option<u32>| {
            check_model(&Model {
                expert_groups: groups,
                expert_groups_per_token: per_token,
                ..m.clone()
            })
        };
        assert_eq!(with(None, None), Ok(()));
        assert_eq!(
            with(Some(3), Some(1)),
            Err(Error::ExpertGroups {
                groups: 3,
                experts: 256
            })
        );
        assert_eq!(
            with(Some(8), Some(9)),
            Err(Error::ExpertGroupsPerToken {
                groups_per_token: 9,
                groups: 8
            })
        );
        assert!(matches!(
            with(Some(8), None),
            Err(Error::SetTogether { .. })
        ));
        // One of 64 groups of 4 experts cannot hold a token's 8.
        assert_eq!(
            with(Some(64), Some(1)),
            Err(Error::ExpertsBeyondGroups {
                per_token: 8,
                reachable: 4,
                groups_per_token: 1
            })
        );
        let dense = c.model("llama-3.1-8b").unwrap();
        let grouped_dense = Model {
            expert_groups: Some(8),
            expert_groups_per_token: Some(4),
            ..dense.clone()
        };
        assert!(matches!(
            check_model(&grouped_dense),
            Err(Error::MoeOnly { .. })
        ));
    }
}
