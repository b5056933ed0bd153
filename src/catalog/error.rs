//! Why a preset, the economics defaults, the calibration or the training factors are rejected:
//! the catalog's one error type. Each variant renders as a lowercase fragment naming the key and
//! the value (`hbm_gb: 0 must be positive`); the caller prefixes the preset
//! (`gpu[0] "my-gpu": `) or, for the embedded data, [`Error::BuiltinPreset`] does.

use std::fmt;

use super::dtype::ComputeClass;
use crate::limits;

/// Why a catalog check failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// A TOML file of factors does not parse or has unknown keys (the parser's message, with
    /// line and column).
    #[error("{0}")]
    Toml(#[from] toml::de::Error),
    /// A calibration's `[training]` table is rejected.
    #[error("[training] {0}")]
    Training(Box<Error>),
    /// An embedded preset file does not parse: a bug, caught by the test suite.
    #[error("built-in catalog {file}: {error}")]
    BuiltinFile {
        file: &'static str,
        error: toml::de::Error,
    },
    /// An embedded factor file (`calibration.toml`, `economics.toml`) is rejected: a bug.
    #[error("built-in {file}: {error}")]
    BuiltinFactors {
        file: &'static str,
        error: Box<Error>,
    },
    /// An embedded preset fails its check: a bug.
    #[error("built-in {kind} {id}: {error}")]
    BuiltinPreset {
        kind: PresetKind,
        id: String,
        error: Box<Error>,
    },

    /// A number outside the range of its key.
    #[error("{key}: {} must be {bound}", limits::number(*value))]
    OutOfRange {
        key: &'static str,
        value: f64,
        bound: Bound,
    },
    /// The same, with the value in Rust's plain notation (`0.0000001`) where [`Error::OutOfRange`]
    /// shortens it (`1e-7`): the messages of `pue` and of the training factors have always
    /// printed it so.
    #[error("{key}: {value} must be {bound}")]
    OutOfRangePlain {
        key: &'static str,
        value: f64,
        bound: Bound,
    },
    /// A positive number too small to compute with.
    #[error(
        "{key}: {value:e} is subnormal, too small to compute with (the smallest normal number is 2.2e-308)"
    )]
    Subnormal { key: &'static str, value: f64 },
    /// A count that must be at least 1 is 0.
    #[error("{key}: must be at least 1")]
    Zero { key: &'static str },
    /// A preset id with characters other than lowercase letters, digits, '-', '_' and '.'.
    #[error(
        "id: \"{}\" must be lowercase letters, digits, '-', '_' or '.'",
        limits::quoted(id)
    )]
    InvalidId { id: String },
    /// A key that must be set because another is.
    #[error("{key}: required because {because} is set")]
    Required {
        key: &'static str,
        because: &'static str,
    },
    /// A rate times its efficiency below one unit per second: the model divides work (up to
    /// 1e24 FLOPs or bytes a step) by it, and below one a step time overflows.
    #[error(
        "{key} x {efficiency}: {achieved:.2e} {unit}/s achieved, below one per second, too slow to time a step"
    )]
    RateTooSmall {
        key: &'static str,
        efficiency: &'static str,
        achieved: f64,
        unit: &'static str,
    },
    /// A GEMM efficiency for a compute class whose peak the GPU does not state.
    #[error("{key}: set but {peak} is not")]
    WithoutPeak {
        key: &'static str,
        peak: &'static str,
    },

    // GPUs.
    #[error("idle_w: {idle_w} exceeds tdp_w ({tdp_w})")]
    IdleAboveTdp { idle_w: f64, tdp_w: f64 },
    /// An entry of `native_dtypes` or `kv_dtypes` that is no number format of the catalog.
    #[error(
        "{list}[{index}]: unknown number format \"{}\"",
        limits::quoted(format)
    )]
    UnknownListedFormat {
        list: &'static str,
        index: usize,
        format: String,
    },
    #[error(
        "weight_only_dtypes.{}: unknown number format \"{}\"",
        limits::quoted(format),
        limits::quoted(format)
    )]
    UnknownWeightOnlyFormat { format: String },
    #[error(
        "native_dtypes[{index}]: \"{format}\" computes on {} tensor cores but {}_tflops is not set",
        class.as_str(),
        class.as_str()
    )]
    NativeWithoutPeak {
        index: usize,
        format: String,
        class: ComputeClass,
    },
    #[error(
        "weight_only_dtypes.{format}: runs on {} tensor cores but {}_tflops is not set",
        class.as_str(),
        class.as_str()
    )]
    WeightOnlyWithoutPeak { format: String, class: ComputeClass },
    #[error("default_rack: unknown rack \"{}\"", limits::quoted(rack))]
    UnknownDefaultRack { rack: String },
    #[error("default_rack: rack \"{rack}\" hosts \"{hosts}\", not \"{gpu}\"")]
    DefaultRackHostsOtherGpu {
        rack: String,
        hosts: String,
        gpu: String,
    },

    // Racks.
    #[error("gpu: unknown GPU \"{}\"", limits::quoted(gpu))]
    UnknownGpu { gpu: String },
    #[error(
        "gpus_per_server x servers_per_rack: {gpus_per_server} x {servers_per_rack} = {} GPUs, more than {} ({})",
        u64::from(*gpus_per_server) * u64::from(*servers_per_rack),
        limits::MAX_RACK_GPUS,
        limits::MAX_RACK_GPUS_WHY
    )]
    TooManyRackGpus {
        gpus_per_server: u32,
        servers_per_rack: u32,
    },
    #[error("scaleup_domain_gpus: {domain_gpus} does not divide the {rack_gpus} GPUs of the rack")]
    DomainDoesNotDivideRack { domain_gpus: u32, rack_gpus: u32 },
    #[error(
        "scaleup_domain_gpus: {domain_gpus} and gpus_per_server {server_gpus} do not divide one another"
    )]
    DomainAndServerDoNotDivide { domain_gpus: u32, server_gpus: u32 },
    #[error(
        "{key}: {} µs is more than a year ({} µs)",
        limits::number(*value_us),
        limits::number(limits::MAX_SECONDS * 1e6)
    )]
    LatencyOverAYear { key: &'static str, value_us: f64 },

    // Models.
    #[error("kv_heads: {kv_heads} does not divide heads ({heads})")]
    KvHeadsDoNotDivideHeads { kv_heads: u32, heads: u32 },
    #[error("kv_heads: multi-head attention needs kv_heads = heads ({heads})")]
    MhaKvHeads { heads: u32 },
    #[error("attention = \"mla\" needs mla_kv_lora_rank and mla_rope_head_dim")]
    MlaIncomplete,
    #[error("mla_* fields apply only to attention = \"mla\"")]
    MlaFieldsWithoutMla,
    #[error("ffn_hidden: a dense model needs its MLP width")]
    DenseWithoutFfnHidden,
    /// Keys that only a model with experts can have.
    #[error("{keys} apply only to MoE models (set experts)")]
    MoeOnly { keys: &'static str },
    #[error("checkpoint_expert_dtype applies only to MoE models (set experts)")]
    CheckpointExpertDtypeWithoutExperts,
    #[error("{key}: unknown format \"{}\"", limits::quoted(format))]
    UnknownCheckpointFormat { key: &'static str, format: String },
    #[error(
        "checkpoint_dense_dtype applies only with checkpoint_expert_dtype (the layers a checkpoint of pre-quantized experts keeps in another format)"
    )]
    CheckpointDenseDtypeWithoutExperts,
    #[error("expert_routing applies only to MoE models (set experts)")]
    ExpertRoutingWithoutExperts,
    #[error("fp8_block_size: must be at least 1 (omit it for a per-tensor FP8 checkpoint)")]
    ZeroFp8BlockSize,
    /// Keys that are set together or not at all.
    #[error("{keys} must be set together")]
    SetTogether { keys: &'static str },
    #[error("experts: {experts} must be at least 2 (omit the MoE fields for a dense model)")]
    TooFewExperts { experts: u32 },
    #[error("experts_per_token: {per_token} must be between 1 and experts ({experts})")]
    ExpertsPerToken { per_token: u32, experts: u32 },
    #[error("ffn_hidden: dense_layers need the dense MLP width")]
    DenseLayersWithoutFfnHidden,
    #[error("dense_layers: must be fewer than layers")]
    TooManyDenseLayers,
    #[error("expert_groups: {groups} must be at least 2 and divide experts ({experts})")]
    ExpertGroups { groups: u32, experts: u32 },
    #[error(
        "expert_groups_per_token: {groups_per_token} must be between 1 and expert_groups ({groups})"
    )]
    ExpertGroupsPerToken { groups_per_token: u32, groups: u32 },
    /// A token's experts do not fit in the groups it may route to.
    #[error(
        "experts_per_token: {per_token} exceeds the {reachable} experts of expert_groups_per_token ({groups_per_token}) groups"
    )]
    ExpertsBeyondGroups {
        per_token: u32,
        reachable: u32,
        groups_per_token: u32,
    },
    #[error("sliding_window: must be at least 1 token")]
    ZeroSlidingWindow,
    #[error("sliding_window_layers: {window_layers} exceeds layers ({layers})")]
    SlidingWindowLayers { window_layers: u32, layers: u32 },
}

/// The kind of a preset, as its TOML table is named (`[[gpu]]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PresetKind {
    Gpu,
    Rack,
    Model,
}

impl fmt::Display for PresetKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PresetKind::Gpu => "gpu",
            PresetKind::Rack => "rack",
            PresetKind::Model => "model",
        })
    }
}

/// The range a number must lie in; renders as what follows "must be".
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bound {
    /// Finite and above zero.
    Positive,
    /// Finite and zero or above.
    NonNegative,
    /// In (0, 1].
    Fraction,
    /// Finite and at least this.
    AtLeast(f64),
    /// In [low, high].
    Between(f64, f64),
}

impl fmt::Display for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Bound::Positive => f.write_str("positive"),
            Bound::NonNegative => f.write_str("zero or positive"),
            Bound::Fraction => f.write_str("a fraction in (0, 1]"),
            Bound::AtLeast(low) => write!(f, "at least {low}"),
            Bound::Between(low, high) => write!(f, "between {low} and {high}"),
        }
    }
}
