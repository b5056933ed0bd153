//! What `evaluate` answers for one configuration: the estimate's values, why a configuration
//! cannot run ([`Reason`]) and which resource bounds it ([`Limit`]).

use super::Memory;
use super::layout::Layout;

crate::names::names! {
    /// Why a configuration cannot run. Written to `infeasible_reason`. One row per reason: the
    /// variant, its name in the output, its description; in the order they are checked (the
    /// layout's validity rules of docs/model.md §4, then the cluster's sizing).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    #[repr(u8)]
    pub enum Reason {
        EpNeedsMoe => "ep_needs_moe",
            "ep > 1 on a dense model (expert parallelism needs experts)";
        TpDoesNotDivideHeads => "tp_does_not_divide_heads",
            "tp does not divide the attention heads";
        TpDoesNotDivideKvHeads => "tp_does_not_divide_kv_heads",
            "tp and kv_heads do not divide one another";
        EpDoesNotDivideExperts => "ep_does_not_divide_experts",
            "ep does not divide the routed experts";
        TpEpMismatch => "tp_ep_mismatch",
            "tp and ep do not divide one another";
        TpExceedsScaleupDomain => "tp_exceeds_scaleup_domain",
            "tp exceeds the scale-up (NVLink/xGMI) domain without spanning whole domains";
        StageDoesNotTileDomains => "stage_does_not_tile_domains",
            "a stage wider than the scale-up domain is not a whole number of domains, or its tp groups would straddle domains";
        PpExceedsLayers => "pp_exceeds_layers",
            "pp exceeds the number of layers";
        InstanceExceedsCluster => "instance_exceeds_cluster",
            "one instance needs more GPUs than the racks hold";
        DtypeUnsupported => "dtype_unsupported",
            "no serving engine runs the weight format (natively or weight-only) or keeps the KV cache in its format on this GPU (docs/model.md §3)";
        EngineUnsupported => "engine_unsupported",
            "the serving engine does not run on this GPU (TensorRT-LLM runs on NVIDIA GPUs only; catalog gpus.toml engines)";
        PrefillPoolNeedsDisagg => "prefill_pool_needs_disagg",
            "prefill_tp or prefill_hardware is set on an aggregated row (disagg_prefill_pct = 0: there is no prefill pool)";
        PrefillHardwareUnsupported => "prefill_hardware_unsupported",
            "the prefill pool's GPU (prefill_hardware) does not run the row's serving engine, weight format or KV format";
        PrefillDoesNotFit => "prefill_does_not_fit",
            "a prefill-pool instance at its own tp cannot hold its weights, one iteration's prompts' KV cache and activations in usable HBM";
        DoesNotFit => "does_not_fit",
            "weights, KV cache and activations exceed usable HBM";
        DisaggNeedsTwoPools => "disagg_needs_two_pools",
            "disaggregated serving needs at least one prefill and one decode instance";
        RackPowerOverBudget => "rack_power_over_budget",
            "a rack at full load draws more than its power budget";
        DemandExceedsMaxRacks => "demand_exceeds_max_racks",
            "racks = \"auto\" needs more than 100,000 racks to meet the demand";
    }
}

crate::names::names! {
    /// The resource that bounds a configuration. Written to `limit`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    #[repr(u8)]
    pub enum Limit {
        Compute => "compute";
        Hbm => "hbm";
        Comm => "comm";
        /// The configuration does not fit in HBM.
        Memory => "memory";
    }
}

/// What the model predicts for one configuration. Quantities that do not apply are NaN here and
/// null in the output (never an invented number).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// `None` when the configuration runs.
    pub reason: Option<Reason>,
    pub limit: Option<Limit>,
    /// Racks of the cluster: the grid's, or with `racks = "auto"` those holding the fewest
    /// servers that meet the demand and the SLOs (0 when they could not be sized).
    pub racks: u32,
    /// Servers of the cluster (whole scale-up domains); 0 when it could not be sized.
    pub servers: u32,
    pub gpus: u32,
    /// 0 when the layout is invalid (written as null).
    pub gpus_per_instance: u32,
    pub instances: u32,
    /// Instances in the prefill pool (disaggregated serving); 0 when aggregated.
    pub prefill_instances: u32,
    /// GPUs of the prefill pool: its instances' GPUs, or with a tp of its own the GPUs of its
    /// own servers; 0 when aggregated. The decode pool has the rest of `gpus`.
    pub prefill_gpus: u32,
    /// Time to move one request's KV cache from its prefill to its decode instance, ms (NaN
    /// when aggregated).
    pub kv_transfer_ms: f64,
    pub attention_dp: u32,
    pub hbm_used_gb_per_gpu: f64,
    pub hbm_weights_gb_per_gpu: f64,
    pub hbm_kv_gb_per_gpu: f64,
    /// Mean first-token latency at the operating load (a full instance without demand), and
    /// on an idle instance.
    pub ttft_ms: f64,
    pub ttft_idle_ms: f64,
    /// The full batch's step: TPOT and a user's tokens per second at `batch` sequences.
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
    /// At the operating load: mean requests a decode instance holds, the mean TPOT a sequence
    /// sees there and a user's tokens per second, request latency percentiles, and the 99th
    /// percentile of the wait before a prompt is processed.
    pub occupancy_per_instance: f64,
    pub tpot_at_load_ms: f64,
    pub tokens_per_s_per_user_at_load: f64,
    pub e2e_p50_ms: f64,
    pub e2e_p99_ms: f64,
    pub queue_wait_p99_ms: f64,
    /// Output tokens served in a month on average (the demand's, or the capacity's without
    /// demand), over 730 hours.
    pub output_tokens_per_month: f64,
    /// Cached session context held off the GPU (cluster totals) and its reload time.
    pub kv_host_gb: f64,
    pub kv_storage_gb: f64,
    pub kv_reload_ms: f64,
    pub storage_servers: f64,
    /// The scale-out spine's oversubscription `r` (`r:1`) the row runs at; 0 for no platform.
    pub scaleout_oversubscription: u32,
    /// Network load per GPU of the instances at the operating load (docs/model.md, "Network
    /// load"): bytes (GB) and messages per second each GPU sends on the scale-up and scale-out
    /// tiers, and the share of its link's peak bandwidth per direction they use; the KV
    /// transfers between disaggregated pools (part of the scale-out load) and the KV reloads
    /// from host memory and storage (on their own links), GB/s.
    pub scaleup_gb_per_s_per_gpu: f64,
    pub scaleup_messages_per_s_per_gpu: f64,
    pub scaleup_util: f64,
    pub scaleout_gb_per_s_per_gpu: f64,
    pub scaleout_messages_per_s_per_gpu: f64,
    pub scaleout_util: f64,
    pub kv_transfer_gb_per_s_per_gpu: f64,
    pub kv_reload_gb_per_s_per_gpu: f64,
    /// Power at the operating load: IT (GPUs, hosts, switches, storage), facility (x PUE), the
    /// busiest rack's, and IT energy per output token.
    pub power_kw: f64,
    pub facility_power_kw: f64,
    pub rack_power_kw: f64,
    pub joules_per_token: f64,
    pub usd_per_hour: f64,
    /// `usd_per_hour` by what is paid for; the parts sum to it.
    pub usd_per_hour_gpus: f64,
    pub usd_per_hour_energy: f64,
    pub usd_per_hour_facility: f64,
    pub usd_per_hour_maintenance: f64,
    pub usd_per_hour_network: f64,
    pub usd_per_hour_storage: f64,
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
        servers: 0,
        gpus: 0,
        gpus_per_instance: 0,
        instances: 0,
        prefill_instances: 0,
        prefill_gpus: 0,
        kv_transfer_ms: f64::NAN,
        attention_dp: 0,
        hbm_used_gb_per_gpu: f64::NAN,
        hbm_weights_gb_per_gpu: f64::NAN,
        hbm_kv_gb_per_gpu: f64::NAN,
        ttft_ms: f64::NAN,
        ttft_idle_ms: f64::NAN,
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
        occupancy_per_instance: f64::NAN,
        tpot_at_load_ms: f64::NAN,
        tokens_per_s_per_user_at_load: f64::NAN,
        e2e_p50_ms: f64::NAN,
        e2e_p99_ms: f64::NAN,
        queue_wait_p99_ms: f64::NAN,
        output_tokens_per_month: f64::NAN,
        kv_host_gb: f64::NAN,
        kv_storage_gb: f64::NAN,
        kv_reload_ms: f64::NAN,
        storage_servers: f64::NAN,
        scaleout_oversubscription: 0,
        scaleup_gb_per_s_per_gpu: f64::NAN,
        scaleup_messages_per_s_per_gpu: f64::NAN,
        scaleup_util: f64::NAN,
        scaleout_gb_per_s_per_gpu: f64::NAN,
        scaleout_messages_per_s_per_gpu: f64::NAN,
        scaleout_util: f64::NAN,
        kv_transfer_gb_per_s_per_gpu: f64::NAN,
        kv_reload_gb_per_s_per_gpu: f64::NAN,
        power_kw: f64::NAN,
        facility_power_kw: f64::NAN,
        rack_power_kw: f64::NAN,
        joules_per_token: f64::NAN,
        usd_per_hour: f64::NAN,
        usd_per_hour_gpus: f64::NAN,
        usd_per_hour_energy: f64::NAN,
        usd_per_hour_facility: f64::NAN,
        usd_per_hour_maintenance: f64::NAN,
        usd_per_hour_network: f64::NAN,
        usd_per_hour_storage: f64::NAN,
        usd_per_month: f64::NAN,
        usd_per_mtok: f64::NAN,
        tco_usd: f64::NAN,
        kg_co2e_per_mtok: f64::NAN,
        water_l_per_mtok: f64::NAN,
        usd_per_month_autoscaling: f64::NAN,
        usd_per_month_api: f64::NAN,
    };

    pub(super) fn with_layout(reason: Reason, l: &Layout) -> Estimate {
        Estimate {
            gpus_per_instance: l.gpus_per_instance,
            instances: l.instances,
            attention_dp: l.attention_dp,
            ..Estimate::infeasible(reason, l.gpus)
        }
    }

    /// An infeasible estimate that still reports its memory demand.
    pub(super) fn with_memory(reason: Reason, l: &Layout, m: &Memory) -> Estimate {
        Estimate {
            hbm_used_gb_per_gpu: m.used_bytes / 1e9,
            hbm_weights_gb_per_gpu: m.weights_bytes / 1e9,
            hbm_kv_gb_per_gpu: m.kv_bytes / 1e9,
            ..Estimate::with_layout(reason, l)
        }
    }

    pub(super) fn infeasible(reason: Reason, gpus: u32) -> Estimate {
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
