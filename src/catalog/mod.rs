//! The built-in presets (GPUs, racks, models, number formats), embedded from `data/*.toml`, plus
//! the checks every preset passes, built-in or inline in a sweep file. Owns lookups by id; does not
//! know about sweeps or the performance model.

pub mod dtype;
pub mod economics;
pub mod gpu;
pub mod kernels;
pub mod model;
pub mod rack;
pub mod training;

use serde::Deserialize;

use crate::limits;

pub use dtype::{ComputeClass, Dtype};
pub use economics::Economics;
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
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Calibration {
    /// Rows at which a GEMM reaches half its large-matrix efficiency.
    pub gemm_half_rows: f64,
    /// Fixed cost of one engine iteration, milliseconds, where the kernels are not measured
    /// (GPUs without kernel surfaces).
    pub step_overhead_ms: f64,
    /// Scheduler CPU work per engine iteration, milliseconds, and per running sequence,
    /// microseconds (`perf::iteration`; overlapped with the GPU by the engines' overlap
    /// schedulers).
    pub cpu_ms_per_iteration: f64,
    pub cpu_us_per_sequence: f64,
    /// Fraction of the microbenchmarked GEMM efficiency (gpus.toml `gemm_*`) that linear layers
    /// reach inside a serving engine, for bf16, fp8 and int8 tensor cores.
    pub serving_gemm_efficiency: f64,
    /// The same for block-scaled FP4 GEMMs (NVFP4, MXFP4), whose kernels reach a smaller share of
    /// their doubled peak.
    pub serving_gemm_efficiency_fp4: f64,
    /// Efficiency of grouped routed-expert GEMMs relative to dense GEMMs of the same rows.
    pub moe_gemm_efficiency: f64,
    /// Fraction of the HBM and tensor-core rates attention kernels reach.
    pub attention_efficiency: f64,
    /// Coefficient of variation of prompt lengths that `validate` assumes, since the
    /// measurements state only mean lengths (sweeps set `workload.input_tokens_cv` instead).
    pub prompt_length_cv: f64,
}

impl Calibration {
    /// Serving GEMM efficiency of a compute class.
    pub fn serving_gemm_efficiency(&self, class: ComputeClass) -> f64 {
        match class {
            ComputeClass::Fp4 => self.serving_gemm_efficiency_fp4,
            ComputeClass::Bf16 | ComputeClass::Fp8 | ComputeClass::Int8 => {
                self.serving_gemm_efficiency
            }
        }
    }

    pub fn builtin() -> Calibration {
        Calibration::parse(CALIBRATION_TOML).expect("built-in calibration is valid")
    }

    pub fn parse(text: &str) -> Result<Calibration, String> {
        let c: Calibration = toml::from_str(text).map_err(|e| e.to_string())?;
        non_negative("gemm_half_rows", c.gemm_half_rows)?;
        non_negative("step_overhead_ms", c.step_overhead_ms)?;
        non_negative("cpu_ms_per_iteration", c.cpu_ms_per_iteration)?;
        non_negative("cpu_us_per_sequence", c.cpu_us_per_sequence)?;
        non_negative("prompt_length_cv", c.prompt_length_cv)?;
        for (key, v) in [
            ("serving_gemm_efficiency", c.serving_gemm_efficiency),
            ("serving_gemm_efficiency_fp4", c.serving_gemm_efficiency_fp4),
            ("moe_gemm_efficiency", c.moe_gemm_efficiency),
            ("attention_efficiency", c.attention_efficiency),
        ] {
            fraction(key, v)?;
        }
        Ok(c)
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
    pub fn builtin() -> Result<Catalog, String> {
        fn parse<T: serde::de::DeserializeOwned>(name: &str, text: &str) -> Result<T, String> {
            toml::from_str(text).map_err(|e| format!("built-in catalog {name}: {e}"))
        }
        let catalog = Catalog {
            gpus: parse::<GpuFile>("gpus.toml", GPUS_TOML)?.gpu,
            racks: parse::<RackFile>("racks.toml", RACKS_TOML)?.rack,
            models: parse::<ModelFile>("models.toml", MODELS_TOML)?.model,
            dtypes: parse::<DtypeFile>("dtypes.toml", DTYPES_TOML)?.dtype,
            calibration: Calibration::parse(CALIBRATION_TOML)
                .map_err(|e| format!("built-in calibration.toml: {e}"))?,
            economics: Economics::parse(ECONOMICS_TOML)
                .map_err(|e| format!("built-in economics.toml: {e}"))?,
            training: training::Factors::builtin(),
        };
        for gpu in &catalog.gpus {
            catalog
                .check_gpu(gpu)
                .map_err(|e| format!("built-in gpu {}: {e}", gpu.id))?;
        }
        for rack in &catalog.racks {
            catalog
                .check_rack(rack)
                .map_err(|e| format!("built-in rack {}: {e}", rack.id))?;
        }
        for model in &catalog.models {
            check_model(model)
                .and_then(|()| catalog.check_model_formats(model))
                .map_err(|e| format!("built-in model {}: {e}", model.id))?;
        }
        Ok(catalog)
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
    pub fn check_gpu(&self, gpu: &Gpu) -> Result<(), String> {
        check_id("id", &gpu.id)?;
        positive("bf16_tflops", gpu.bf16_tflops)?;
        for (key, value) in [
            ("fp8_tflops", gpu.fp8_tflops),
            ("fp4_tflops", gpu.fp4_tflops),
            ("int8_tops", gpu.int8_tops),
            ("tdp_w", gpu.tdp_w),
            ("idle_w", gpu.idle_w),
            ("usd_per_gpu_hour", gpu.usd_per_gpu_hour),
            ("capex_usd_per_gpu", gpu.capex_usd_per_gpu),
        ] {
            if let Some(v) = value {
                positive(key, v)?;
            }
        }
        if let (Some(idle), Some(tdp)) = (gpu.idle_w, gpu.tdp_w)
            && idle > tdp
        {
            return Err(format!("idle_w: {idle} exceeds tdp_w ({tdp})"));
        }
        positive("hbm_gb", gpu.hbm_gb)?;
        positive("hbm_tbps", gpu.hbm_tbps)?;
        let e = &gpu.efficiency;
        for (key, value) in [
            ("efficiency.gemm_bf16", e.gemm_bf16),
            ("efficiency.hbm", e.hbm),
            ("efficiency.link", e.link),
        ] {
            fraction(key, value)?;
        }
        for (key, peak, has_peak, value) in [
            (
                "efficiency.gemm_fp8",
                "fp8_tflops",
                gpu.fp8_tflops.is_some(),
                e.gemm_fp8,
            ),
            (
                "efficiency.gemm_int8",
                "int8_tops",
                gpu.int8_tops.is_some(),
                e.gemm_int8,
            ),
            (
                "efficiency.gemm_fp4",
                "fp4_tflops",
                gpu.fp4_tflops.is_some(),
                e.gemm_fp4,
            ),
        ] {
            match (has_peak, value) {
                (true, Some(v)) => fraction(key, v)?,
                (true, None) => return Err(format!("{key}: required because {peak} is set")),
                (false, Some(_)) => return Err(format!("{key}: set but {peak} is not")),
                (false, None) => {}
            }
        }
        for (i, d) in gpu.native_dtypes.iter().enumerate() {
            let Some(dtype) = self.dtype(d) else {
                return Err(format!(
                    "native_dtypes[{i}]: unknown number format \"{}\"",
                    limits::quoted(d)
                ));
            };
            if gpu.peak_flops(dtype.compute).is_none() {
                return Err(format!(
                    "native_dtypes[{i}]: \"{d}\" computes on {} tensor cores but {}_tflops is not set",
                    dtype.compute.as_str(),
                    dtype.compute.as_str()
                ));
            }
        }
        for (d, class) in &gpu.weight_only_dtypes {
            if self.dtype(d).is_none() {
                return Err(format!(
                    "weight_only_dtypes.{0}: unknown number format \"{0}\"",
                    limits::quoted(d)
                ));
            }
            if gpu.peak_flops(*class).is_none() {
                return Err(format!(
                    "weight_only_dtypes.{d}: runs on {0} tensor cores but {0}_tflops is not set",
                    class.as_str()
                ));
            }
        }
        match (gpu.weight_only_dtypes.is_empty(), e.gemm_weight_only) {
            (false, None) => {
                return Err(
                    "efficiency.gemm_weight_only: required because weight_only_dtypes is set"
                        .into(),
                );
            }
            (_, Some(v)) => fraction("efficiency.gemm_weight_only", v)?,
            (true, None) => {}
        }
        for (i, d) in gpu.kv_dtypes.iter().enumerate() {
            if self.dtype(d).is_none() {
                return Err(format!(
                    "kv_dtypes[{i}]: unknown number format \"{}\"",
                    limits::quoted(d)
                ));
            }
        }
        match self.rack(&gpu.default_rack) {
            None => Err(format!(
                "default_rack: unknown rack \"{}\"",
                limits::quoted(&gpu.default_rack)
            )),
            Some(rack) if rack.gpu != gpu.id => Err(format!(
                "default_rack: rack \"{}\" hosts \"{}\", not \"{}\"",
                rack.id, rack.gpu, gpu.id
            )),
            Some(_) => Ok(()),
        }
    }

    /// A rack's fields are in range, its GPU exists and its scale-up domains tile the rack.
    /// The formats a model names are known ones.
    pub fn check_model_formats(&self, m: &Model) -> Result<(), String> {
        match &m.checkpoint_expert_dtype {
            Some(id) if self.dtype(id).is_none() => Err(format!(
                "checkpoint_expert_dtype: unknown format \"{}\"",
                limits::quoted(id)
            )),
            Some(_) if !m.is_moe() => {
                Err("checkpoint_expert_dtype applies only to MoE models (set experts)".into())
            }
            _ => Ok(()),
        }
    }

    pub fn check_rack(&self, rack: &Rack) -> Result<(), String> {
        check_id("id", &rack.id)?;
        if self.gpu(&rack.gpu).is_none() {
            return Err(format!(
                "gpu: unknown GPU \"{}\"",
                limits::quoted(&rack.gpu)
            ));
        }
        for (key, value) in [
            ("gpus_per_server", rack.gpus_per_server),
            ("servers_per_rack", rack.servers_per_rack),
            ("scaleup_domain_gpus", rack.scaleup_domain_gpus),
        ] {
            if value == 0 {
                return Err(format!("{key}: must be at least 1"));
            }
        }
        // Checked before anything multiplies them, so that the product cannot wrap.
        let gpus = u64::from(rack.gpus_per_server) * u64::from(rack.servers_per_rack);
        if gpus > u64::from(limits::MAX_RACK_GPUS) {
            return Err(format!(
                "gpus_per_server x servers_per_rack: {} x {} = {gpus} GPUs, more than {} ({})",
                rack.gpus_per_server,
                rack.servers_per_rack,
                limits::MAX_RACK_GPUS,
                limits::MAX_RACK_GPUS_WHY
            ));
        }
        let per_rack = rack.gpus_per_rack();
        if !per_rack.is_multiple_of(rack.scaleup_domain_gpus) {
            return Err(format!(
                "scaleup_domain_gpus: {} does not divide the {per_rack} GPUs of the rack",
                rack.scaleup_domain_gpus
            ));
        }
        // A deployment grows by whole servers and whole scale-up domains at once.
        let (server, domain) = (rack.gpus_per_server, rack.scaleup_domain_gpus);
        if !(server.is_multiple_of(domain) || domain.is_multiple_of(server)) {
            return Err(format!(
                "scaleup_domain_gpus: {domain} and gpus_per_server {server} do not divide one another"
            ));
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
                return Err(format!(
                    "{key}: {} µs is more than a year ({} µs)",
                    limits::number(value),
                    limits::number(limits::MAX_SECONDS * 1e6)
                ));
            }
        }
        Ok(())
    }
}

/// A model's shapes are consistent (heads group evenly, MoE and MLA fields complete).
pub fn check_model(m: &Model) -> Result<(), String> {
    check_id("id", &m.id)?;
    for (key, value) in [
        ("layers", m.layers),
        ("hidden", m.hidden),
        ("heads", m.heads),
        ("kv_heads", m.kv_heads),
        ("head_dim", m.head_dim),
        ("max_context", m.max_context),
    ] {
        if value == 0 {
            return Err(format!("{key}: must be at least 1"));
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
            return Err(format!("{key}: must be at least 1"));
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
        return Err(format!(
            "kv_heads: {} does not divide heads ({})",
            m.kv_heads, m.heads
        ));
    }
    if m.attention == Attention::Mha && m.kv_heads != m.heads {
        return Err(format!(
            "kv_heads: multi-head attention needs kv_heads = heads ({})",
            m.heads
        ));
    }
    if m.attention == Attention::Mla
        && (m.mla_kv_lora_rank.is_none() || m.mla_rope_head_dim.is_none())
    {
        return Err("attention = \"mla\" needs mla_kv_lora_rank and mla_rope_head_dim".into());
    }
    if m.attention != Attention::Mla
        && (m.mla_kv_lora_rank.is_some()
            || m.mla_q_lora_rank.is_some()
            || m.mla_rope_head_dim.is_some())
    {
        return Err("mla_* fields apply only to attention = \"mla\"".into());
    }
    match (m.experts, m.experts_per_token, m.moe_ffn_hidden) {
        (None, None, None) => {
            if m.ffn_hidden.is_none() {
                return Err("ffn_hidden: a dense model needs its MLP width".into());
            }
            if m.shared_experts.is_some() || m.dense_layers.is_some() {
                return Err(
                    "shared_experts and dense_layers apply only to MoE models (set experts)".into(),
                );
            }
        }
        (Some(e), Some(k), Some(_)) => {
            if e < 2 {
                return Err(format!(
                    "experts: {e} must be at least 2 (omit the MoE fields for a dense model)"
                ));
            }
            if k == 0 || k > e {
                return Err(format!(
                    "experts_per_token: {k} must be between 1 and experts ({e})"
                ));
            }
            if m.dense_layers.unwrap_or(0) > 0 && m.ffn_hidden.is_none() {
                return Err("ffn_hidden: dense_layers need the dense MLP width".into());
            }
            if m.dense_layers.unwrap_or(0) >= m.layers {
                return Err("dense_layers: must be fewer than layers".into());
            }
        }
        _ => {
            return Err(
                "experts, experts_per_token and moe_ffn_hidden must be set together".into(),
            );
        }
    }
    match (m.expert_groups, m.expert_groups_per_token) {
        (None, None) => {}
        (Some(g), Some(mg)) => {
            let Some((e, k)) = m.experts.zip(m.experts_per_token) else {
                return Err(
                    "expert_groups and expert_groups_per_token apply only to MoE models (set experts)"
                        .into(),
                );
            };
            if g < 2 || !e.is_multiple_of(g) {
                return Err(format!(
                    "expert_groups: {g} must be at least 2 and divide experts ({e})"
                ));
            }
            if mg == 0 || mg > g {
                return Err(format!(
                    "expert_groups_per_token: {mg} must be between 1 and expert_groups ({g})"
                ));
            }
            if k > mg * (e / g) {
                return Err(format!(
                    "experts_per_token: {k} exceeds the {} experts of expert_groups_per_token ({mg}) groups",
                    mg * (e / g)
                ));
            }
        }
        _ => {
            return Err("expert_groups and expert_groups_per_token must be set together".into());
        }
    }
    match (m.sliding_window, m.sliding_window_layers) {
        (None, None) => {}
        (Some(w), Some(n)) => {
            if w == 0 {
                return Err("sliding_window: must be at least 1 token".into());
            }
            if n > m.layers {
                return Err(format!(
                    "sliding_window_layers: {n} exceeds layers ({})",
                    m.layers
                ));
            }
        }
        _ => return Err("sliding_window and sliding_window_layers must be set together".into()),
    }
    Ok(())
}

fn check_id(key: &str, id: &str) -> Result<(), String> {
    let ok = !id.is_empty()
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-_.".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{key}: \"{}\" must be lowercase letters, digits, '-', '_' or '.'",
            limits::quoted(id)
        ))
    }
}

/// `Ok` when `value` is a positive normal number. A subnormal (below 2.2e-308) is no
/// hardware's peak or bandwidth, and dividing by it gives infinity.
pub(crate) fn positive(key: &str, value: f64) -> Result<(), String> {
    if !(value.is_finite() && value > 0.0) {
        Err(format!("{key}: {} must be positive", limits::number(value)))
    } else {
        normal(key, value)
    }
}

/// `Ok` when `value` is finite and zero or more, and not subnormal; the error names the key and
/// value.
pub(crate) fn non_negative(key: &str, value: f64) -> Result<(), String> {
    if !(value.is_finite() && value >= 0.0) {
        Err(format!(
            "{key}: {} must be zero or positive",
            limits::number(value)
        ))
    } else if value == 0.0 {
        Ok(())
    } else {
        normal(key, value)
    }
}

fn fraction(key: &str, value: f64) -> Result<(), String> {
    if value.is_finite() && value > 0.0 && value <= 1.0 {
        normal(key, value)
    } else {
        Err(format!(
            "{key}: {} must be a fraction in (0, 1]",
            limits::number(value)
        ))
    }
}

fn normal(key: &str, value: f64) -> Result<(), String> {
    if value.is_normal() {
        Ok(())
    } else {
        Err(format!(
            "{key}: {value:e} is subnormal, too small to compute with (the smallest normal number is 2.2e-308)"
        ))
    }
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
        assert!(
            with(Some(3), Some(1))
                .unwrap_err()
                .contains("divide experts (256)")
        );
        assert!(
            with(Some(8), Some(9))
                .unwrap_err()
                .contains("between 1 and")
        );
        assert!(with(Some(8), None).unwrap_err().contains("set together"));
        // One of 64 groups of 4 experts cannot hold a token's 8.
        assert!(
            with(Some(64), Some(1))
                .unwrap_err()
                .contains("exceeds the 4 experts")
        );
        let dense = c.model("llama-3.1-8b").unwrap();
        let grouped_dense = Model {
            expert_groups: Some(8),
            expert_groups_per_token: Some(4),
            ..dense.clone()
        };
        assert!(
            check_model(&grouped_dense)
                .unwrap_err()
                .contains("only to MoE")
        );
    }
}
