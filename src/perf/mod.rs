//! The analytical inference performance model: `evaluate(context, point) -> Estimate`, a pure
//! function with no I/O and no allocation. Split by concern: `layout` (placement and validity),
//! `memory` (bytes per GPU), `compute` (FLOPs and tensor cores), `comm` (collectives),
//! `latency` (step time, TPOT, TTFT) and `unit` (one instance's rates); then the cluster:
//! `demand` (what must be served), `queue` and `sizing` (utilization, waits, SLOs, the fewest
//! instances), `kv_tiers` (cached context off the GPU), `power`, `cost`, and `cluster`, which
//! puts them together (and sizes racks). Every formula and its source: docs/model.md.

// An infeasible `Estimate` is the ordinary answer for most grid points, returned through
// `Result::Err`; boxing it would allocate in the hot loop.
#![allow(clippy::result_large_err)]

pub mod cluster;
pub use cluster::Placements;
pub mod comm;
pub mod compute;
pub mod cost;
pub mod demand;
pub mod kv_tiers;
pub mod latency;
pub mod layout;
pub mod memory;
pub mod power;
pub mod queue;
pub mod serving;
pub mod sizing;
pub mod unit;

use crate::catalog::{Attention, Calibration, Catalog, ComputeClass, Model, Rack};
use crate::grid::{Grid, Point};

use latency::{Rates, Speculation};
use layout::{Layout, LayoutModel, Tier};
use memory::StageParams;
use unit::Unit;

/// Why a configuration cannot run. Written to `infeasible_reason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Reason {
    EpNeedsMoe,
    TpDoesNotDivideHeads,
    TpDoesNotDivideKvHeads,
    EpDoesNotDivideExperts,
    TpEpMismatch,
    TpExceedsScaleupDomain,
    StageDoesNotTileDomains,
    PpExceedsLayers,
    InstanceExceedsCluster,
    DtypeUnsupported,
    DoesNotFit,
    DisaggNeedsTwoPools,
    RackPowerOverBudget,
    DemandExceedsMaxRacks,
}

impl Reason {
    pub const ALL: [Reason; 14] = [
        Reason::EpNeedsMoe,
        Reason::TpDoesNotDivideHeads,
        Reason::TpDoesNotDivideKvHeads,
        Reason::EpDoesNotDivideExperts,
        Reason::TpEpMismatch,
        Reason::TpExceedsScaleupDomain,
        Reason::StageDoesNotTileDomains,
        Reason::PpExceedsLayers,
        Reason::InstanceExceedsCluster,
        Reason::DtypeUnsupported,
        Reason::DoesNotFit,
        Reason::DisaggNeedsTwoPools,
        Reason::RackPowerOverBudget,
        Reason::DemandExceedsMaxRacks,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Reason::EpNeedsMoe => "ep_needs_moe",
            Reason::TpDoesNotDivideHeads => "tp_does_not_divide_heads",
            Reason::TpDoesNotDivideKvHeads => "tp_does_not_divide_kv_heads",
            Reason::EpDoesNotDivideExperts => "ep_does_not_divide_experts",
            Reason::TpEpMismatch => "tp_ep_mismatch",
            Reason::TpExceedsScaleupDomain => "tp_exceeds_scaleup_domain",
            Reason::StageDoesNotTileDomains => "stage_does_not_tile_domains",
            Reason::PpExceedsLayers => "pp_exceeds_layers",
            Reason::InstanceExceedsCluster => "instance_exceeds_cluster",
            Reason::DtypeUnsupported => "dtype_unsupported",
            Reason::DoesNotFit => "does_not_fit",
            Reason::DisaggNeedsTwoPools => "disagg_needs_two_pools",
            Reason::RackPowerOverBudget => "rack_power_over_budget",
            Reason::DemandExceedsMaxRacks => "demand_exceeds_max_racks",
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Reason::EpNeedsMoe => "ep > 1 on a dense model (expert parallelism needs experts)",
            Reason::TpDoesNotDivideHeads => "tp does not divide the attention heads",
            Reason::TpDoesNotDivideKvHeads => "tp and kv_heads do not divide one another",
            Reason::EpDoesNotDivideExperts => "ep does not divide the routed experts",
            Reason::TpEpMismatch => "tp and ep do not divide one another",
            Reason::TpExceedsScaleupDomain => "tp exceeds the scale-up (NVLink/xGMI) domain",
            Reason::StageDoesNotTileDomains => {
                "a stage wider than the scale-up domain is not a whole number of domains, or its tp groups would straddle domains"
            }
            Reason::PpExceedsLayers => "pp exceeds the number of layers",
            Reason::InstanceExceedsCluster => "one instance needs more GPUs than the racks hold",
            Reason::DtypeUnsupported => {
                "the GPU has no tensor cores for the weight format, or cannot keep the KV cache in its format"
            }
            Reason::DoesNotFit => "weights, KV cache and activations exceed usable HBM",
            Reason::DisaggNeedsTwoPools => {
                "disaggregated serving needs at least one prefill and one decode instance"
            }
            Reason::RackPowerOverBudget => "a rack at full load draws more than its power budget",
            Reason::DemandExceedsMaxRacks => {
                "racks = \"auto\" needs more than 100,000 racks to meet the demand"
            }
        }
    }
}

/// The resource that bounds a configuration. Written to `limit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Limit {
    Compute,
    Hbm,
    Comm,
    /// The configuration does not fit in HBM.
    Memory,
}

impl Limit {
    pub const ALL: [Limit; 4] = [Limit::Compute, Limit::Hbm, Limit::Comm, Limit::Memory];

    pub fn as_str(self) -> &'static str {
        match self {
            Limit::Compute => "compute",
            Limit::Hbm => "hbm",
            Limit::Comm => "comm",
            Limit::Memory => "memory",
        }
    }
}

/// What the model predicts for one configuration. Quantities that do not apply are NaN here and
/// null in the output (never an invented number).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// `None` when the configuration runs.
    pub reason: Option<Reason>,
    pub limit: Option<Limit>,
    /// Racks of the cluster: the grid's, or with `racks = "auto"` the fewest that meet the
    /// demand and the SLOs (0 when they could not be sized).
    pub racks: u32,
    pub gpus: u32,
    /// 0 when the layout is invalid (written as null).
    pub gpus_per_instance: u32,
    pub instances: u32,
    /// Instances in the prefill pool (disaggregated serving); 0 when aggregated.
    pub prefill_instances: u32,
    pub attention_dp: u32,
    pub hbm_used_gb_per_gpu: f64,
    pub hbm_weights_gb_per_gpu: f64,
    pub hbm_kv_gb_per_gpu: f64,
    pub ttft_ms: f64,
    pub tpot_ms: f64,
    pub tokens_per_s_per_user: f64,
    pub tokens_per_s_per_instance: f64,
    pub tokens_per_s_per_gpu: f64,
    pub output_tokens_per_s: f64,
    pub compute_bound_tokens_per_s_per_gpu: f64,
    pub hbm_bound_tokens_per_s_per_gpu: f64,
    pub comm_bound_tokens_per_s_per_gpu: f64,
    /// Sizing against `[workload.demand]` (NaN / `None` without demand).
    pub demand_requests_per_s: f64,
    pub utilization: f64,
    pub users_supported: f64,
    pub demand_met: Option<bool>,
    /// Whether the SLOs of `[sweep]` hold (`None` when the sweep sets none).
    pub meets_slo: Option<bool>,
    /// First-token latency percentiles at the operating load (the serving model, with the
    /// prefill pool's wait when disaggregated, and KV reloads); and the p99 had the lengths been
    /// exponential.
    pub ttft_p50_ms: f64,
    pub ttft_p95_ms: f64,
    pub ttft_p99_ms: f64,
    pub ttft_p99_mmc_ms: f64,
    pub tpot_p99_ms: f64,
    /// Cached session context held off the GPU (cluster totals) and its reload time.
    pub kv_host_gb: f64,
    pub kv_storage_gb: f64,
    pub kv_reload_ms: f64,
    pub storage_servers: f64,
    /// Power at the operating load: IT (GPUs, hosts, switches, storage), facility (x PUE), the
    /// busiest rack's, and IT energy per output token.
    pub power_kw: f64,
    pub facility_power_kw: f64,
    pub rack_power_kw: f64,
    pub joules_per_token: f64,
    pub usd_per_hour: f64,
    pub usd_per_month: f64,
    pub usd_per_mtok: f64,
    pub tco_usd: f64,
    pub kg_co2e_per_mtok: f64,
    pub water_l_per_mtok: f64,
    pub usd_per_month_autoscaling: f64,
    pub usd_per_month_api: f64,
}

impl Default for Estimate {
    fn default() -> Estimate {
        Estimate::EMPTY
    }
}

impl Estimate {
    /// No configuration, no numbers: every metric NaN.
    pub const EMPTY: Estimate = Estimate {
        reason: None,
        limit: None,
        racks: 0,
        gpus: 0,
        gpus_per_instance: 0,
        instances: 0,
        prefill_instances: 0,
        attention_dp: 0,
        hbm_used_gb_per_gpu: f64::NAN,
        hbm_weights_gb_per_gpu: f64::NAN,
        hbm_kv_gb_per_gpu: f64::NAN,
        ttft_ms: f64::NAN,
        tpot_ms: f64::NAN,
        tokens_per_s_per_user: f64::NAN,
        tokens_per_s_per_instance: f64::NAN,
        tokens_per_s_per_gpu: f64::NAN,
        output_tokens_per_s: f64::NAN,
        compute_bound_tokens_per_s_per_gpu: f64::NAN,
        hbm_bound_tokens_per_s_per_gpu: f64::NAN,
        comm_bound_tokens_per_s_per_gpu: f64::NAN,
        demand_requests_per_s: f64::NAN,
        utilization: f64::NAN,
        users_supported: f64::NAN,
        demand_met: None,
        meets_slo: None,
        ttft_p50_ms: f64::NAN,
        ttft_p95_ms: f64::NAN,
        ttft_p99_ms: f64::NAN,
        ttft_p99_mmc_ms: f64::NAN,
        tpot_p99_ms: f64::NAN,
        kv_host_gb: f64::NAN,
        kv_storage_gb: f64::NAN,
        kv_reload_ms: f64::NAN,
        storage_servers: f64::NAN,
        power_kw: f64::NAN,
        facility_power_kw: f64::NAN,
        rack_power_kw: f64::NAN,
        joules_per_token: f64::NAN,
        usd_per_hour: f64::NAN,
        usd_per_month: f64::NAN,
        usd_per_mtok: f64::NAN,
        tco_usd: f64::NAN,
        kg_co2e_per_mtok: f64::NAN,
        water_l_per_mtok: f64::NAN,
        usd_per_month_autoscaling: f64::NAN,
        usd_per_month_api: f64::NAN,
    };

    fn with_layout(reason: Reason, l: &Layout) -> Estimate {
        Estimate {
            gpus_per_instance: l.gpus_per_instance,
            instances: l.instances,
            attention_dp: l.attention_dp,
            ..Estimate::infeasible(reason, l.gpus)
        }
    }

    /// An infeasible estimate that still reports its memory demand.
    fn with_memory(reason: Reason, l: &Layout, m: &Memory) -> Estimate {
        Estimate {
            hbm_used_gb_per_gpu: m.used_bytes / 1e9,
            hbm_weights_gb_per_gpu: m.weights_bytes / 1e9,
            hbm_kv_gb_per_gpu: m.kv_bytes / 1e9,
            ..Estimate::with_layout(reason, l)
        }
    }

    fn infeasible(reason: Reason, gpus: u32) -> Estimate {
        Estimate {
            reason: Some(reason),
            gpus,
            ..Estimate::EMPTY
        }
    }

    pub fn feasible(&self) -> bool {
        self.reason.is_none()
    }
}

/// Model facts the performance model uses, derived once per sweep from the catalog entry.
#[derive(Debug, Clone)]
pub struct ModelFacts {
    pub layers: u32,
    /// Leading layers with a dense MLP (all layers for a dense model).
    pub dense_layers: u32,
    pub hidden: f64,
    pub vocab: f64,
    pub kv_heads: u32,
    pub head_dim: f64,
    pub mla: bool,
    /// MLA: compressed latent plus decoupled RoPE key per token per layer.
    pub mla_latent_dim: f64,
    pub attention_params_per_layer: f64,
    pub dense_mlp_params_per_layer: f64,
    pub moe_shared_params_per_layer: f64,
    pub expert_params: f64,
    pub experts: u32,
    pub experts_per_token: u32,
    pub embedding_params: f64,
    /// LM head parameters (the embedding matrix when tied).
    pub head_params: f64,
    pub tied_embeddings: bool,
    /// Whether MoE layers have always-on shared experts (DeepSeek-V3) besides the routed ones.
    pub has_shared_experts: bool,
    /// Node-limited routing, `(groups, groups_per_token)`, of models that declare it.
    pub routing_groups: Option<(u32, u32)>,
    /// Activation elements the non-GEMM kernels of one layer read and write per token, besides
    /// the MLP (docs/model.md, "Activation traffic"): two norms and two residual adds on the
    /// hidden state (`12 h`), and the attention inputs and outputs (`4 x heads x d_eff`, split
    /// over tp; `d_eff` is the head dim, or the latent plus RoPE width for absorbed MLA).
    pub norm_io_per_token_layer: f64,
    pub attention_io_per_token_layer: f64,
    /// Dense-MLP intermediates written and read per token (`2 m ffn`, split over tp).
    pub dense_mlp_io_per_token: f64,
    /// Shared-expert intermediates per token per MoE layer (split over tp).
    pub shared_io_per_token: f64,
    /// Per routed assignment: permute and unpermute of the hidden state (`4 h`) and the expert's
    /// intermediates (`2 m ffn_e`).
    pub expert_io_per_assignment: f64,
    /// Intermediate activations per token of the dense MLP (gate and up outputs).
    pub mlp_inner_per_token: f64,
    /// Intermediate activations per token per routed expert.
    pub moe_inner_per_token: f64,
    /// Attention FLOPs per token per attended context token per layer, all heads.
    pub decode_attention_flops_per_context: f64,
    pub prefill_attention_flops_per_context: f64,
    /// Fraction of layers with sliding-window attention and their window (tokens).
    pub sliding_fraction: f64,
    pub sliding_window: f64,
    /// `ln(1 - experts_per_token / experts)`, for the expected share of experts a step touches.
    ln_expert_miss: f64,
    layout_model: LayoutModel,
}

impl ModelFacts {
    /// The routing the expert all-to-all sees.
    pub fn routing(&self) -> comm::Routing {
        comm::Routing {
            experts: self.experts,
            experts_per_token: self.experts_per_token,
            groups: self.routing_groups,
        }
    }

    /// `None` when the catalog entry lacks what evaluation needs (its vocabulary).
    pub fn new(model: &Model) -> Option<ModelFacts> {
        let counts = model.param_counts()?;
        let hidden = f64::from(model.hidden);
        let heads = f64::from(model.heads);
        let head_dim = f64::from(model.head_dim);
        let mla = model.attention == Attention::Mla;
        let latent = f64::from(model.mla_kv_lora_rank.unwrap_or(0));
        let rope = f64::from(model.mla_rope_head_dim.unwrap_or(0));
        let (decode_attention, prefill_attention) = if mla {
            // Absorbed decode: scores over latent + rope dims, values over the latent.
            // Prefill: decompressed heads with (nope + rope) key dims and head_dim value dims.
            (
                2.0 * heads * (2.0 * latent + rope),
                2.0 * heads * (head_dim + rope + head_dim),
            )
        } else {
            (4.0 * heads * head_dim, 4.0 * heads * head_dim)
        };
        let inner_matrices = model.mlp.matrices() - 1.0;
        let experts = if model.is_moe() { model.experts() } else { 0 };
        let k = if model.is_moe() {
            model.experts_per_token()
        } else {
            0
        };
        let ln_expert_miss = if experts > 0 {
            (1.0 - f64::from(k) / f64::from(experts)).ln()
        } else {
            0.0
        };
        Some(ModelFacts {
            layers: model.layers,
            dense_layers: counts.dense_layers,
            hidden,
            vocab: f64::from(model.vocab?),
            kv_heads: model.kv_heads,
            head_dim,
            mla,
            mla_latent_dim: latent + rope,
            attention_params_per_layer: counts.attention_per_layer,
            dense_mlp_params_per_layer: counts.dense_mlp_per_layer,
            moe_shared_params_per_layer: counts.moe_shared_per_layer,
            expert_params: counts.expert,
            experts,
            experts_per_token: k,
            embedding_params: counts.embedding,
            head_params: counts.embedding,
            tied_embeddings: model.tied_embeddings,
            has_shared_experts: model.is_moe() && model.shared_experts.unwrap_or(0) > 0,
            routing_groups: model.routing_groups(),
            norm_io_per_token_layer: 12.0 * hidden,
            attention_io_per_token_layer: 4.0 * heads * if mla { latent + rope } else { head_dim },
            dense_mlp_io_per_token: 2.0
                * model.mlp.matrices()
                * f64::from(model.ffn_hidden.unwrap_or(0)),
            shared_io_per_token: f64::from(model.shared_experts.unwrap_or(0))
                * 2.0
                * model.mlp.matrices()
                * f64::from(model.moe_ffn_hidden.unwrap_or(0)),
            expert_io_per_assignment: 4.0 * hidden
                + 2.0 * model.mlp.matrices() * f64::from(model.moe_ffn_hidden.unwrap_or(0)),
            mlp_inner_per_token: inner_matrices * f64::from(model.ffn_hidden.unwrap_or(0)),
            moe_inner_per_token: inner_matrices * f64::from(model.moe_ffn_hidden.unwrap_or(0)),
            decode_attention_flops_per_context: decode_attention,
            prefill_attention_flops_per_context: prefill_attention,
            sliding_fraction: f64::from(model.sliding_window_layers.unwrap_or(0))
                / f64::from(model.layers),
            sliding_window: f64::from(model.sliding_window.unwrap_or(0)),
            ln_expert_miss,
            layout_model: LayoutModel {
                layers: model.layers,
                heads: model.heads,
                kv_heads: model.kv_heads,
                mla,
                experts,
            },
        })
    }

    /// Tokens a layer attends to (and caches) for a context, averaged over full-attention and
    /// sliding-window layers.
    pub fn attended_tokens(&self, context: f64) -> f64 {
        (1.0 - self.sliding_fraction) * context
            + self.sliding_fraction * context.min(self.sliding_window)
    }

    /// Load of the busiest of `ep` expert groups relative to the mean, for `tokens` tokens routed
    /// uniformly: each group receives Binomial(tokens x k, 1/ep) assignments, and the expected
    /// maximum of `ep` such counts is about `mu + sqrt(2 ln ep) sigma` (Gumbel approximation of
    /// the maximum of near-normal variables; David & Nagaraja 2003, "Order Statistics", 10.5).
    pub fn expert_imbalance(&self, tokens: f64, ep: u32) -> f64 {
        if ep <= 1 || self.experts == 0 || tokens <= 0.0 {
            return 1.0;
        }
        let ep = f64::from(ep);
        let mean = tokens * f64::from(self.experts_per_token) / ep;
        1.0 + (2.0 * ep.ln() * (1.0 - 1.0 / ep) / mean).sqrt()
    }

    /// Expected share of a GPU's routed experts that at least one of `tokens` tokens selects, with
    /// uniform top-k routing: `1 - (1 - k/E)^tokens` (each token picks k distinct experts of E).
    pub fn expert_fraction_touched(&self, tokens: f64) -> f64 {
        if self.experts == 0 {
            return 0.0;
        }
        1.0 - (tokens * self.ln_expert_miss).exp()
    }
}

/// Per-platform facts, resolved once per sweep.
#[derive(Debug, Clone)]
struct PlatformFacts {
    rack: Rack,
    usable_hbm_bytes: f64,
    /// Rates per weight-dtype axis entry and kv-dtype axis entry; `None` = unsupported.
    linear_flops_per_s: Vec<Option<f64>>,
    weight_bytes_per_param: Vec<f64>,
    /// Routed-expert FLOP/s and bytes per parameter per weight-dtype axis entry.
    expert_compute: Vec<Option<(f64, f64, ComputeClass)>>,
    kv_bytes_per_element: Vec<Option<f64>>,
    attention_flops_per_s: f64,
    hbm_bytes_per_s: f64,
    scaleup: Tier,
    scaleout: Tier,
    power: power::PowerFacts,
    prices: cost::Prices,
    tiers: kv_tiers::TierFacts,
}

/// What is served: mean prompt and output lengths, and the speculative-decoding parameters used
/// where the grid's `spec_tokens` is above 0.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Workload {
    pub input_tokens: f64,
    pub output_tokens: f64,
    pub spec_acceptance: f64,
    pub spec_draft_layers: f64,
    pub kv_admission: memory::KvAdmission,
}

/// Acceptance probability of a draft token when the sweep gives none: DeepSeek-V3's MTP module
/// predicts the second token with an 85-90 % acceptance rate (DeepSeek-V3 report,
/// arXiv:2412.19437, section 5.4.3); we take the low end.
pub const DEFAULT_SPEC_ACCEPTANCE: f64 = 0.85;

/// Draft cost when the sweep gives none: one MTP module is one transformer block (DeepSeek-V3
/// report, section 2.2), so one draft token costs about one layer of the target model.
pub const DEFAULT_SPEC_DRAFT_LAYERS: f64 = 1.0;

impl Workload {
    /// A workload with the default speculative-decoding parameters and KV admission.
    pub fn new(input_tokens: f64, output_tokens: f64) -> Workload {
        Workload {
            input_tokens,
            output_tokens,
            spec_acceptance: DEFAULT_SPEC_ACCEPTANCE,
            spec_draft_layers: DEFAULT_SPEC_DRAFT_LAYERS,
            kv_admission: memory::KvAdmission::default(),
        }
    }
}

/// Everything `evaluate` needs, precomputed from the sweep so the hot loop only does arithmetic.
#[derive(Debug, Clone)]
pub struct Context {
    pub model: ModelFacts,
    pub input_tokens: f64,
    pub output_tokens: f64,
    /// Probability that a draft token is accepted (speculative decoding).
    pub spec_acceptance: f64,
    /// Cost of proposing one draft token, in layers of the target model.
    pub spec_draft_layers: f64,
    pub kv_admission: memory::KvAdmission,
    pub calibration: Calibration,
    platforms: Vec<PlatformFacts>,
    /// Schedule phases (one when the sweep has no `[[workload.phase]]`), weights summing to 1.
    pub phases: Vec<Phase>,
    pub plan: Plan,
}

/// One phase of the schedule: its share of time, its load and its request lengths.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Phase {
    pub weight: f64,
    pub load: demand::Load,
    pub input_tokens: f64,
    pub output_tokens: f64,
}

/// Sizing, power and cost settings of a sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Whether `[workload.demand]` is set (sizing columns are null without it).
    pub demand: bool,
    pub settings: sizing::Settings,
    pub economics: crate::catalog::Economics,
    /// Values of the grid's `ownership` axis.
    pub ownership: Vec<cost::Ownership>,
    /// Per-token API prices (input, output), USD per million tokens.
    pub api_usd_per_mtok: Option<(f64, f64)>,
}

impl Plan {
    /// No demand, no SLOs, the catalog's economics, cloud prices.
    pub fn without_demand(economics: crate::catalog::Economics) -> Plan {
        Plan {
            demand: false,
            settings: sizing::Settings {
                target_utilization: demand::DEFAULT_TARGET_UTILIZATION,
                think_s: 0.0,
                prefill_variability: 1.0,
                decode_variability: 1.0,
                cached_tokens: 0.0,
                slo: sizing::Slo::default(),
            },
            economics,
            ownership: vec![cost::Ownership::Cloud],
            api_usd_per_mtok: None,
        }
    }
}

impl Context {
    /// Resolves the grid's categorical axes against the catalog. `None` when the model lacks a
    /// vocabulary (the spec layer reports that as a user error first).
    pub fn new(
        catalog: &Catalog,
        model: &Model,
        grid: &Grid,
        workload: Workload,
    ) -> Option<Context> {
        let checkpoint_experts = model
            .checkpoint_expert_dtype
            .as_deref()
            .and_then(|id| catalog.dtype(id));
        let model = ModelFacts::new(model)?;
        let platforms = grid
            .platforms
            .iter()
            .map(|p| {
                let gpu = &catalog.gpus[p.gpu];
                let rack = catalog.racks[p.rack].clone();
                let link = gpu.efficiency.link;
                let linear_flops_per_s = grid
                    .weight_dtypes
                    .iter()
                    .map(|&d| {
                        compute::compute_class(gpu, &catalog.dtypes[d], &catalog.calibration)
                            .map(|(_, flops)| flops)
                    })
                    .collect();
                let weight_bytes_per_param = grid
                    .weight_dtypes
                    .iter()
                    .map(|&d| catalog.dtypes[d].bytes_per_param())
                    .collect();
                let expert_compute = grid
                    .weight_dtypes
                    .iter()
                    .map(|&d| {
                        compute::expert_compute(
                            gpu,
                            &catalog.dtypes[d],
                            checkpoint_experts,
                            &catalog.calibration,
                        )
                    })
                    .collect();
                let kv_bytes_per_element = grid
                    .kv_dtypes
                    .iter()
                    .map(|&d| {
                        let dtype = &catalog.dtypes[d];
                        (dtype.kv_without_native || gpu.supports_natively(&dtype.id))
                            .then(|| dtype.bytes_per_param())
                    })
                    .collect();
                PlatformFacts {
                    usable_hbm_bytes: gpu.hbm_bytes() * memory::MEMORY_UTILIZATION,
                    linear_flops_per_s,
                    weight_bytes_per_param,
                    expert_compute,
                    kv_bytes_per_element,
                    attention_flops_per_s: gpu.bf16_tflops * 1e12 * gpu.efficiency.gemm_bf16,
                    hbm_bytes_per_s: gpu.hbm_bytes_per_s() * gpu.efficiency.hbm,
                    scaleup: Tier::scaleup(&rack, link),
                    scaleout: Tier::scaleout(&rack, link),
                    power: power::PowerFacts::new(gpu, &rack),
                    prices: cost::Prices::new(gpu),
                    tiers: kv_tiers::TierFacts {
                        host_bytes_per_gpu: rack.host_memory_gb_per_gpu * 1e9,
                        host_link_bytes_per_s_per_gpu: rack.host_link_gbps_per_gpu * 1e9,
                        storage_bytes_per_s_per_gpu: rack.storage_gbps_per_gpu * 1e9,
                        storage_bytes_per_server: catalog.economics.storage_tb_per_server * 1e12,
                        storage_bytes_per_s_per_server: catalog.economics.storage_gbps_per_server
                            * 1e9,
                    },
                    rack,
                }
            })
            .collect();
        Some(Context {
            model,
            input_tokens: workload.input_tokens,
            output_tokens: workload.output_tokens,
            spec_acceptance: workload.spec_acceptance,
            spec_draft_layers: workload.spec_draft_layers,
            kv_admission: workload.kv_admission,
            calibration: catalog.calibration,
            platforms,
            phases: vec![Phase {
                weight: 1.0,
                load: demand::Load::default(),
                input_tokens: workload.input_tokens,
                output_tokens: workload.output_tokens,
            }],
            plan: Plan::without_demand(catalog.economics),
        })
    }
}

/// One configuration placed and resolved: its layout, bounding stages and hardware rates. Cheap
/// to build (no allocation); the serving model evaluates it at many loads.
#[derive(Debug, Clone, Copy)]
pub struct Instance<'a> {
    pub ctx: &'a Context,
    pub layout: Layout,
    pub stages: [StageParams; 2],
    pub rates: Rates,
    pub speculation: Speculation,
    /// Percent of instances in the prefill pool; 0 = aggregated serving.
    pub disagg_prefill_pct: u32,
    /// Mean prompt and output lengths served (the workload's, or a schedule phase's).
    pub input_tokens: f64,
    pub output_tokens: f64,
    pub usable_hbm_bytes: f64,
    /// Time to first token of a request alone on the idle instance (with the KV transfer when
    /// disaggregated). Independent of the batch, so resolved once per placement.
    pub ttft_idle_s: f64,
    /// Requests per second one prefill-only instance completes (disaggregated; NaN otherwise).
    pub prefill_pool_requests_per_s: f64,
    /// Per bounding stage, per GPU: weight bytes, and KV-cache bytes of one sequence at the
    /// context the engine's KV admission holds for it. Batch-independent, so resolved once per
    /// placement.
    pub stage_bytes: [(f64, f64); 2],
    /// Activation workspace sizes of this layout.
    pub workspace: memory::Workspace,
}

/// Per-GPU memory of an instance holding a given number of sequences.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Memory {
    pub weights_bytes: f64,
    pub kv_bytes: f64,
    pub used_bytes: f64,
    pub fits: bool,
}

impl Instance<'_> {
    /// Decode at `sequences` concurrent sequences (fractional for a mean concurrency).
    pub fn decode(&self, sequences: f64) -> latency::Decode {
        self.decode_step(&self.decode_shape(sequences))
    }

    /// The tokens of a decode step with `sequences` sequences (no timing).
    pub fn decode_shape(&self, sequences: f64) -> latency::DecodeShape {
        latency::DecodeShape::new(
            &self.layout,
            sequences,
            self.input_tokens,
            self.output_tokens,
            &self.speculation,
            self.disagg_prefill_pct == 0,
        )
    }

    /// Times the decode step of `shape`.
    pub fn decode_step(&self, shape: &latency::DecodeShape) -> latency::Decode {
        latency::decode(
            &self.ctx.model,
            &self.layout,
            &self.stages,
            &self.rates,
            shape,
            &self.speculation,
        )
    }

    /// Time to first token of one request on an idle instance.
    pub fn prefill_s(&self) -> f64 {
        latency::prefill_s(
            &self.ctx.model,
            &self.layout,
            &self.stages,
            &self.rates,
            self.input_tokens,
        )
    }

    /// Requests per second one prefill-only instance completes: each iteration fills every
    /// attention rank's token budget (`MAX_NUM_TOKENS`, or one whole prompt if longer) with
    /// prompts.
    pub fn prefill_requests_per_s(&self) -> f64 {
        let c = self.ctx;
        let isl = self.input_tokens;
        let tokens = memory::MAX_NUM_TOKENS.max(isl);
        let step_s = latency::prefill_step_s(
            &c.model,
            &self.layout,
            &self.stages,
            &self.rates,
            tokens,
            isl,
        );
        f64::from(self.layout.attention_dp) * tokens / isl / step_s
    }

    /// Seconds to ship one request's KV cache from a prefill to a decode instance: each GPU sends
    /// its shard over its scale-out NIC (DistServe, Zhong et al. 2024; Splitwise, Patel et al.
    /// 2024), all GPUs in parallel.
    pub fn kv_transfer_s(&self) -> f64 {
        let (c, l) = (self.ctx, &self.layout);
        let layers = self.stages[0].layers.max(self.stages[1].layers);
        let bytes = memory::kv_bytes_per_sequence(
            &c.model,
            l.tp,
            layers,
            self.rates.kv_bytes_per_element,
            self.input_tokens,
        );
        comm::point_to_point_s(bytes, self.rates.scaleout)
    }

    /// Memory per GPU with `sequences` sequences: the heavier bounding stage's weights and KV
    /// cache plus the step's activations. Each sequence holds KV for the context its admission
    /// policy reserves ([`memory::KvAdmission`]).
    pub fn memory(&self, sequences: f64) -> Memory {
        self.memory_with(sequences, &self.decode_shape(sequences))
    }

    /// [`Instance::memory`] with the step of `sequences` already shaped.
    pub(crate) fn memory_with(&self, sequences: f64, step: &latency::DecodeShape) -> Memory {
        let l = &self.layout;
        let rank_sequences = (sequences / f64::from(l.attention_dp)).ceil();
        let (mut weights_bytes, mut kv_bytes) = (0.0_f64, 0.0_f64);
        for &(w, kv_per_sequence) in &self.stage_bytes {
            let kv = rank_sequences * kv_per_sequence;
            if w + kv > weights_bytes + kv_bytes {
                (weights_bytes, kv_bytes) = (w, kv);
            }
        }
        let used_bytes = weights_bytes
            + kv_bytes
            + self
                .workspace
                .bytes(step.tokens.rank_tokens(), step.tokens.logit_rows);
        Memory {
            weights_bytes,
            kv_bytes,
            used_bytes,
            fits: used_bytes <= self.usable_hbm_bytes,
        }
    }
}

/// Bytes per element of a token's hidden state in the expert dispatch. Models with node-limited
/// routing are served over DeepEP-style kernels, which dispatch the activations already
/// quantized for the expert GEMM (FP8, DeepEP's dispatch format; DeepSeek-V3 report section
/// 3.3.2) when it runs in 8 bits or fewer; the combine stays bf16. Other models dispatch bf16.
fn dispatch_bytes(m: &ModelFacts, expert_activations: ComputeClass) -> f64 {
    if m.routing_groups.is_some() && expert_activations != ComputeClass::Bf16 {
        1.0
    } else {
        memory::ACTIVATION_BYTES
    }
}

/// Places and resolves a configuration, or returns the estimate that says why it cannot run.
pub fn instance<'a>(ctx: &'a Context, p: &Point) -> Result<Instance<'a>, Estimate> {
    instance_serving(ctx, p, ctx.input_tokens, ctx.output_tokens)
}

/// [`instance`] serving prompts of `input_tokens` and answers of `output_tokens` (a phase).
pub fn instance_serving<'a>(
    ctx: &'a Context,
    p: &Point,
    input_tokens: f64,
    output_tokens: f64,
) -> Result<Instance<'a>, Estimate> {
    let platform = &ctx.platforms[p.platform as usize];
    let m = &ctx.model;
    let gpus = p.racks * platform.rack.gpus_per_rack();
    let l = layout::place(&m.layout_model, &platform.rack, p.racks, p.tp, p.pp, p.ep)
        .map_err(|reason| Estimate::infeasible(reason, gpus))?;
    let (
        Some(linear_flops_per_s),
        Some((expert_flops_per_s, expert_bytes_per_param, expert_activations)),
        Some(kv_bytes_per_element),
    ) = (
        platform.linear_flops_per_s[p.weight_dtype as usize],
        platform.expert_compute[p.weight_dtype as usize],
        platform.kv_bytes_per_element[p.kv_dtype as usize],
    )
    else {
        return Err(Estimate::with_layout(Reason::DtypeUnsupported, &l));
    };
    let cal = &ctx.calibration;
    let rates = Rates {
        linear_flops_per_s,
        attention_flops_per_s: platform.attention_flops_per_s * cal.attention_efficiency,
        hbm_bytes_per_s: platform.hbm_bytes_per_s,
        attention_bytes_per_s: platform.hbm_bytes_per_s * cal.attention_efficiency,
        weight_bytes_per_param: platform.weight_bytes_per_param[p.weight_dtype as usize],
        expert_flops_per_s,
        expert_bytes_per_param,
        expert_dispatch_bytes: dispatch_bytes(m, expert_activations),
        kv_bytes_per_element,
        scaleup: platform.scaleup,
        scaleout: platform.scaleout,
        expert_exchange: comm::ExpertExchange::new(
            &m.routing(),
            l.ep,
            platform.rack.scaleup_domain_gpus,
        ),
        one_shot_all_reduce: true,
        gemm_half_rows: cal.gemm_half_rows,
        step_overhead_s: cal.step_overhead_ms * 1e-3,
        moe_gemm_efficiency: cal.moe_gemm_efficiency,
    };
    let speculation = Speculation {
        tokens: p.spec_tokens,
        acceptance: ctx.spec_acceptance,
        draft_layers: ctx.spec_draft_layers,
    };
    let mut inst = Instance {
        ctx,
        layout: l,
        stages: StageParams::bounding_stages(m, &l),
        rates,
        speculation,
        disagg_prefill_pct: p.disagg_prefill_pct,
        input_tokens,
        output_tokens,
        usable_hbm_bytes: platform.usable_hbm_bytes,
        ttft_idle_s: f64::NAN,
        prefill_pool_requests_per_s: f64::NAN,
        stage_bytes: [(0.0, 0.0); 2],
        workspace: memory::Workspace::new(m, &l),
    };
    let context = ctx.kv_admission.held_context(input_tokens, output_tokens);
    for (bytes, s) in inst.stage_bytes.iter_mut().zip(&inst.stages) {
        *bytes = (
            s.weight_bytes(rates.weight_bytes_per_param, rates.expert_bytes_per_param),
            memory::kv_bytes_per_sequence(m, l.tp, s.layers, rates.kv_bytes_per_element, context),
        );
    }
    if inst.disagg_prefill_pct > 0 {
        inst.ttft_idle_s = inst.prefill_s() + inst.kv_transfer_s();
        inst.prefill_pool_requests_per_s = inst.prefill_requests_per_s();
    } else {
        inst.ttft_idle_s = inst.prefill_s();
    }
    Ok(inst)
}

/// Predicts one configuration: performance at full batch, sizing against the demand, power and
/// cost. Pure: no I/O, no allocation.
pub fn evaluate(ctx: &Context, p: &Point) -> Estimate {
    cluster::evaluate(ctx, p)
}

/// [`evaluate`], reusing the placement of the previous point where only batch or ownership
/// changed (the engine keeps one [`Placements`] per worker).
pub fn evaluate_with<'a>(ctx: &'a Context, p: &Point, placements: &mut Placements<'a>) -> Estimate {
    cluster::evaluate_with(ctx, p, placements)
}

/// [`evaluate_with`] into `out`, where the caller keeps the estimate (the engine's hot loop:
/// no copies of the 320-byte estimate on the way).
pub fn evaluate_into<'a>(
    ctx: &'a Context,
    p: &Point,
    placements: &mut Placements<'a>,
    out: &mut Estimate,
) {
    cluster::evaluate_into(ctx, p, placements, out);
}

/// Predicts a placed instance at full batch on its layout's cluster (`evaluate` once the
/// configuration is resolved), without power, cost or sizing.
pub fn estimate(inst: &Instance, batch: u32) -> Estimate {
    match Unit::new(inst, batch) {
        Ok(unit) => unit.estimate(inst.layout.instances, inst.layout.gpus),
        Err(estimate) => estimate,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use layout::Layout;

    pub fn facts(id: &str) -> ModelFacts {
        let c = Catalog::builtin().unwrap();
        ModelFacts::new(c.model(id).unwrap()).unwrap()
    }

    /// A layout built directly (placement rules are tested in `layout`).
    pub fn layout(tp: u32, pp: u32, ep: u32, instances: u32) -> Layout {
        let stage_gpus = tp.max(ep);
        Layout {
            tp,
            pp,
            ep,
            stage_gpus,
            attention_dp: stage_gpus / tp,
            gpus: stage_gpus * pp * instances,
            gpus_per_instance: stage_gpus * pp,
            instances,
            pp_hops_scaleout: 0,
        }
    }

    fn point_on(catalog: &Catalog, gpu: &str, tp: u32, batch: u32) -> (Context, Point) {
        let g = catalog.gpu_index(gpu).unwrap();
        let rack = catalog.rack_index(&catalog.gpus[g].default_rack).unwrap();
        let bf16 = catalog.dtype_index("bf16").unwrap();
        let grid = Grid {
            platforms: vec![crate::grid::Platform { gpu: g, rack }],
            weight_dtypes: vec![bf16],
            kv_dtypes: vec![bf16],
            racks: vec![1],
            tp: vec![tp],
            pp: vec![1],
            ep: vec![1],
            disagg_prefill_pct: vec![0],
            spec_tokens: vec![0],
            batch: vec![batch],
            ownership: vec![cost::Ownership::Cloud],
        };
        let model = catalog.model("llama-3.1-70b").unwrap();
        let ctx = Context::new(catalog, model, &grid, Workload::new(1024.0, 1024.0)).unwrap();
        (ctx, grid.point(0))
    }

    /// KV held per GPU by llama-3.1-70b at tp 8 (one KV head per GPU: 80 layers x 2 x 128 x 2 B
    /// = 40,960 B per token), 256 sequences of 1k in / 1k out, by hand: reserved for the whole
    /// request, 2,048 tokens each, 21.47 GB; on demand, the mean 1,536, 16.11 GB. Over budget,
    /// the whole-request batch no longer fits where the on-demand one does.
    #[test]
    fn kv_admission_sets_the_context_held_per_sequence() {
        let c = Catalog::builtin().unwrap();
        let (ctx, p) = point_on(&c, "h100-sxm", 8, 256);
        let per_token = 80.0 * 2.0 * 128.0 * 2.0;
        let mut on_demand = ctx.clone();
        on_demand.kv_admission = memory::KvAdmission::OnDemand;
        let whole = evaluate(&ctx, &p);
        let mean = evaluate(&on_demand, &p);
        assert!(whole.feasible() && mean.feasible(), "{whole:?} {mean:?}");
        assert!((whole.hbm_kv_gb_per_gpu - 256.0 * 2048.0 * per_token / 1e9).abs() < 1e-9);
        assert!((mean.hbm_kv_gb_per_gpu - 256.0 * 1536.0 * per_token / 1e9).abs() < 1e-9);
        // 72 GB usable less 17.6 GB of weights holds about 640 sequences at 2,048 tokens and
        // about 860 at 1,536: 768 sequences fit only on demand.
        let p = Point { batch: 768, ..p };
        assert_eq!(evaluate(&ctx, &p).reason, Some(Reason::DoesNotFit));
        assert!(evaluate(&on_demand, &p).feasible());
    }

    /// llama-3.1-70b, bf16, tp = 8 on a DGX H100 rack, batch 1, 1k in / 1k out, by hand.
    /// Decode is HBM-bound: each GPU reads its eighth of the weights and one sequence's KV cache,
    /// then pays two one-shot all-reduces per layer.
    #[test]
    fn llama_70b_tp8_batch1_decode_by_hand() {
        let c = Catalog::builtin().unwrap();
        let (ctx, p) = point_on(&c, "h100-sxm", 8, 1);
        let e = evaluate(&ctx, &p);
        assert!(e.feasible(), "{e:?}");
        assert_eq!((e.gpus, e.instances, e.gpus_per_instance), (32, 4, 8));

        let layers = 80.0;
        let per_layer =
            2.0 * 8192.0 * 8192.0 + 2.0 * 8192.0 * 1024.0 + 2.0 * 8192.0 + 3.0 * 8192.0 * 28672.0;
        let head = 128_256.0 * 8192.0;
        let weights_read = (layers * per_layer + head) / 8.0 * 2.0;
        // One KV head per GPU: 2 x 128 x 2 B per token per layer, mean context 1024 + 512,
        // plus the one prompt token prefilled alongside (input/output = 1 per sequence per step).
        let kv_read = layers * 1536.0 * 512.0;
        let kv_written = layers * 512.0;
        let hbm = 3.35e12 * 0.90;
        // Attention kernels reach the calibrated fraction of HBM bandwidth.
        let kv_s = (kv_read + kv_written) / (hbm * c.calibration.attention_efficiency);
        // Non-GEMM kernels per token per layer: norms and residuals 12 x 8192, attention inputs
        // and outputs 4 x 64 heads x 128 / 8, gated-MLP intermediates 2 x 3 x 28672 / 8; two
        // tokens, bf16; plus fp32 logits of 1 + 1/1024 rows over 128256 / 8 vocabulary entries.
        let per_token_layer = 12.0 * 8192.0 + 4.0 * 64.0 * 128.0 / 8.0 + 6.0 * 28672.0 / 8.0;
        let activations =
            2.0 * layers * per_token_layer * 2.0 + (1.0 + 1.0 / 1024.0) * 128_256.0 / 8.0 * 4.0;
        let memory_s = (weights_read + activations) / hbm + kv_s;
        // Two tokens in the step (decode + folded prefill): 2 x 8192 x 2 B per all-reduce,
        // one-shot: launch 6.6 us + alpha 0.6 us + 7/1 x bytes at 450 GB/s x 0.80.
        let all_reduce_s = 6.6e-6 + 0.6e-6 + 7.0 * 32_768.0 / (450e9 * 0.80);
        let comm_s = 2.0 * layers * all_reduce_s;
        // Both kernel classes are HBM-bound, so the per-kernel rooflines add up to the memory
        // time; one engine iteration's overhead comes on top.
        let tpot_ms = (memory_s + comm_s) * 1e3 + c.calibration.step_overhead_ms;
        assert!(
            (e.tpot_ms - tpot_ms).abs() / tpot_ms < 1e-9,
            "{} vs {tpot_ms}",
            e.tpot_ms
        );
        assert_eq!(e.limit, Some(Limit::Hbm));
        assert!((e.tokens_per_s_per_gpu - 4.0 / (tpot_ms / 1e3) / 32.0).abs() < 1e-9);
        // Weights per GPU: an eighth of 141.1 GB.
        assert!(
            (e.hbm_weights_gb_per_gpu - 141.1 / 8.0).abs() < 0.02,
            "{}",
            e.hbm_weights_gb_per_gpu
        );
    }

    /// Leviathan et al. eq. 1: three drafts at 85 % acceptance gain (1 - 0.85^4) / 0.15 = 3.186
    /// tokens per step; none gain one.
    #[test]
    fn speculative_tokens_per_step() {
        let s = Speculation {
            tokens: 3,
            acceptance: 0.85,
            draft_layers: 1.0,
        };
        assert!((s.tokens_per_step() - (1.0 - 0.85f64.powi(4)) / 0.15).abs() < 1e-12);
        assert_eq!(Speculation::OFF.tokens_per_step(), 1.0);
    }

    /// At batch 1 decode is memory-bound, so verifying three drafts costs almost nothing extra
    /// and TPOT falls by nearly the tokens gained per step.
    #[test]
    fn speculation_cuts_tpot_at_small_batch() {
        let c = Catalog::builtin().unwrap();
        let (ctx, p) = point_on(&c, "h100-sxm", 8, 1);
        let plain = evaluate(&ctx, &p);
        let spec = evaluate(
            &ctx,
            &Point {
                spec_tokens: 3,
                ..p
            },
        );
        let gained = (1.0 - 0.85f64.powi(4)) / 0.15;
        let ratio = plain.tpot_ms / spec.tpot_ms;
        assert!(
            ratio > 0.8 * gained && ratio < gained,
            "{ratio} vs {gained}"
        );
    }

    /// Disaggregated serving: half of 4 instances prefill, half decode; decode runs without
    /// folded prefill, TTFT gains the KV transfer, and throughput is the slower pool's.
    #[test]
    fn disaggregated_pools() {
        let c = Catalog::builtin().unwrap();
        let (ctx, p) = point_on(&c, "h100-sxm", 8, 64);
        let agg = evaluate(&ctx, &p);
        let dis = evaluate(
            &ctx,
            &Point {
                disagg_prefill_pct: 50,
                ..p
            },
        );
        assert_eq!((dis.instances, dis.prefill_instances), (4, 2));
        assert!(dis.tpot_ms < agg.tpot_ms, "pure decode steps are shorter");
        let inst = instance(
            &ctx,
            &Point {
                disagg_prefill_pct: 50,
                ..p
            },
        )
        .unwrap();
        assert!((dis.ttft_ms - (inst.prefill_s() + inst.kv_transfer_s()) * 1e3).abs() < 1e-9);
        let decode_rate = 2.0 * 64.0 / (dis.tpot_ms / 1e3 * 1024.0);
        let prefill_rate = 2.0 * inst.prefill_requests_per_s();
        assert!((dis.output_tokens_per_s - decode_rate.min(prefill_rate) * 1024.0).abs() < 1e-6);
        // 99 % of 4 instances rounds to 4: nothing is left to decode.
        let lone = evaluate(
            &ctx,
            &Point {
                disagg_prefill_pct: 99,
                ..p
            },
        );
        assert_eq!(lone.reason, Some(Reason::DisaggNeedsTwoPools));
    }

    /// gpt-oss-120b under an FP8 weight format on one H200 holds its published MXFP4 experts,
    /// not FP8 ones (docs/model.md, "Number formats"): 128 experts x 3 x 2880^2 x 36 layers at
    /// 4.25 bits = 60.91 GB, attention, norms and routers (26,916,480 per layer) at 1 byte =
    /// 0.97 GB, embedding and LM head (2 x 201,088 x 2880) in bf16 = 2.32 GB; 64.20 GB in all,
    /// against 117.95 GB if the experts were FP8.
    #[test]
    fn gpt_oss_keeps_its_published_mxfp4_experts() {
        let c = Catalog::builtin().unwrap();
        let g = c.gpu_index("h200-sxm").unwrap();
        let grid = Grid {
            platforms: vec![crate::grid::Platform {
                gpu: g,
                rack: c.rack_index(&c.gpus[g].default_rack).unwrap(),
            }],
            weight_dtypes: vec![c.dtype_index("fp8").unwrap()],
            kv_dtypes: vec![c.dtype_index("bf16").unwrap()],
            racks: vec![1],
            tp: vec![1],
            pp: vec![1],
            ep: vec![1],
            disagg_prefill_pct: vec![0],
            spec_tokens: vec![0],
            batch: vec![1],
            ownership: vec![cost::Ownership::Cloud],
        };
        let model = c.model("gpt-oss-120b").unwrap();
        let ctx = Context::new(&c, model, &grid, Workload::new(1024.0, 1024.0)).unwrap();
        let e = evaluate(&ctx, &grid.point(0));
        assert!(e.feasible(), "{e:?}");
        let by_hand = 60.914 + 0.969 + 2.3165;
        assert!(
            (e.hbm_weights_gb_per_gpu - by_hand).abs() < 0.01,
            "{}",
            e.hbm_weights_gb_per_gpu
        );
    }

    /// bf16 llama-3.1-70b (141 GB) does not fit one 80 GB H100; the row says so, with its demand.
    #[test]
    fn does_not_fit_is_a_row_with_a_reason() {
        let c = Catalog::builtin().unwrap();
        let (ctx, p) = point_on(&c, "h100-sxm", 1, 1);
        let e = evaluate(&ctx, &p);
        assert_eq!(
            (e.reason, e.limit),
            (Some(Reason::DoesNotFit), Some(Limit::Memory))
        );
        assert!(e.hbm_used_gb_per_gpu > 141.0);
        assert!(e.tpot_ms.is_nan() && e.tokens_per_s_per_gpu.is_nan());
    }

    proptest::proptest! {
        /// Any point of a broad grid evaluates without panicking; feasible rows have finite,
        /// positive metrics and fit in usable HBM; infeasible rows have a reason and no metrics.
        #[test]
        fn evaluation_is_total_and_consistent(
            gpu in 0usize..11, tp_log in 0u32..7, pp_log in 0u32..4, ep_log in 0u32..8,
            batch in 1u32..5000, racks in 1u32..4, model in 0usize..11, w in 0usize..8, kv in 0usize..8,
            pct in proptest::sample::select(vec![0u32, 25, 50]), spec in 0u32..4,
        ) {
            let c = Catalog::builtin().unwrap();
            let m = &c.models[model];
            let grid = Grid {
                platforms: vec![crate::grid::Platform { gpu, rack: c.rack_index(&c.gpus[gpu].default_rack).unwrap() }],
                weight_dtypes: vec![w],
                kv_dtypes: vec![kv],
                racks: vec![racks],
                tp: vec![1 << tp_log],
                pp: vec![1 << pp_log],
                ep: vec![1 << ep_log],
                disagg_prefill_pct: vec![pct],
                spec_tokens: vec![spec],
                batch: vec![batch],
                ownership: vec![cost::Ownership::Cloud],
            };
            let ctx = Context::new(&c, m, &grid, Workload::new(900.5, 300.0)).unwrap();
            let e = evaluate(&ctx, &grid.point(0));
            if e.feasible() {
                for v in [e.ttft_ms, e.tpot_ms, e.tokens_per_s_per_user, e.tokens_per_s_per_gpu, e.output_tokens_per_s, e.hbm_used_gb_per_gpu] {
                    proptest::prop_assert!(v.is_finite() && v > 0.0, "{e:?}");
                }
                proptest::prop_assert!(e.hbm_used_gb_per_gpu <= c.gpus[gpu].hbm_gb * memory::MEMORY_UTILIZATION + 1e-9);
                proptest::prop_assert!(e.tokens_per_s_per_gpu <= e.compute_bound_tokens_per_s_per_gpu.min(e.hbm_bound_tokens_per_s_per_gpu) * (1.0 + 1e-9));
            } else {
                proptest::prop_assert!(e.reason.is_some() && e.tpot_ms.is_nan());
            }
        }
    }

    /// DeepSeek-V3 is served over DeepEP-style kernels: FP8 dispatch when its experts take 8-bit
    /// inputs, bf16 otherwise and for models without node-limited routing; across four 8-GPU
    /// domains (ep 32) a token crosses the network for 3 x 55/70 remote domains (two groups
    /// per domain, 4 of 8 groups reached; §23), not for 24/32 of its 8 copies.
    #[test]
    fn deepseek_v3_serving_dispatch_is_node_limited() {
        let m = facts("deepseek-v3");
        assert_eq!(dispatch_bytes(&m, ComputeClass::Fp8), 1.0);
        assert_eq!(dispatch_bytes(&m, ComputeClass::Fp4), 1.0);
        assert_eq!(dispatch_bytes(&m, ComputeClass::Bf16), 2.0);
        let qwen = facts("qwen3-235b-a22b");
        assert_eq!(qwen.routing_groups, None);
        assert_eq!(dispatch_bytes(&qwen, ComputeClass::Fp8), 2.0);
        let out = Tier {
            bytes_per_s: 1.0,
            alpha_s: 0.0,
            launch_s: 0.0,
        };
        let up = Tier {
            bytes_per_s: f64::INFINITY,
            ..out
        };
        let bytes = |r: &comm::Routing| {
            comm::ExpertExchange::new(r, 32, 8).time_s(1.0, 7168.0, [up, up, out])
        };
        let limited = bytes(&m.routing());
        assert!(
            (limited - 3.0 * 55.0 / 70.0 * 7168.0).abs() < 1e-6,
            "{limited}"
        );
        let unlimited = comm::Routing {
            groups: None,
            ..m.routing()
        };
        assert!((bytes(&unlimited) - 8.0 * 7168.0 * 24.0 / 32.0).abs() < 1e-6);
    }

    #[test]
    fn expert_fraction_touched_grows_with_batch() {
        let m = facts("deepseek-v3");
        // One token touches exactly 8 of 256 experts.
        assert!((m.expert_fraction_touched(1.0) - 8.0 / 256.0).abs() < 1e-12);
        // 1024 tokens x 8 choices: essentially every expert.
        assert!(m.expert_fraction_touched(1024.0) > 0.9999);
        let dense = facts("llama-3.1-70b");
        assert_eq!(dense.expert_fraction_touched(100.0), 0.0);
    }
}
