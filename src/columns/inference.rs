//! The inference schema: every column of an inference run's rows, read from a [`Row`].

use super::{
    Column, Kind, LabelValues, Labels, Mode, Need, REASON_COLUMN, Record, Review, Role, Show, When,
    Workload, config_id_column, finite, hardware_column, nonzero, rack_column,
};
use crate::format::number;
use crate::grid::Point;
use crate::perf::{Estimate, Reason, WorkloadValues};

/// Utilization bands of the `risk` column (InferenceAtlas's latency risk bands): low up to 50 %,
/// medium up to 75 %, high above.
pub const RISK_BANDS: [(&str, f64); 3] = [("low", 0.5), ("medium", 0.75), ("high", f64::INFINITY)];

/// One evaluated configuration: its grid index, its axis values, its workload and the model's
/// estimate.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Row {
    pub config_id: u64,
    pub point: Point,
    pub workload: WorkloadValues,
    pub estimate: Estimate,
}

impl Record for Row {
    const MODE: Mode = Mode::Inference;
    const REASONS: usize = Reason::ALL.len();

    fn columns() -> &'static [Column<Row>] {
        COLUMNS
    }

    fn config_id(&self) -> u64 {
        self.config_id
    }

    fn label_key(&self, labels: Labels, values: &LabelValues) -> Option<u16> {
        let p = &self.point;
        let e = &self.estimate;
        match labels {
            Labels::Hardware => Some(values.hardware_key[p.platform as usize]),
            Labels::PrefillHardware => (p.disagg_prefill_pct > 0).then(|| {
                values.prefill_hardware_key[p.prefill_hardware as usize]
                    .unwrap_or(values.hardware_key[p.platform as usize])
            }),
            Labels::Rack => Some(values.rack_key[p.platform as usize]),
            Labels::Model => Some(self.workload.model),
            Labels::WeightDtype => Some(values.weight_dtype_key[p.weight_dtype as usize]),
            Labels::KvDtype => Some(values.kv_dtype_key[p.kv_dtype as usize]),
            Labels::Ownership => Some(values.ownership_key[p.ownership as usize]),
            Labels::Pricing => values.pricing_key[p.ownership as usize],
            Labels::Provider => {
                let entries = values.pricing_key.len();
                values.provider_key[p.platform as usize * entries + p.ownership as usize]
            }
            Labels::Engine => {
                values.engine_key[p.platform as usize * values.engines + p.engine as usize]
            }
            Labels::Reason => e.reason.map(|r| r as u16),
            Labels::Limit => e.limit.map(|l| l as u16),
            Labels::Risk => {
                let u = e.utilization;
                u.is_finite().then(|| {
                    RISK_BANDS
                        .iter()
                        .position(|&(_, max)| u <= max)
                        .unwrap_or(RISK_BANDS.len() - 1) as u16
                })
            }
            Labels::Precision | Labels::Recompute | Labels::TrainingReason => None,
        }
    }

    fn reason(&self) -> Option<usize> {
        self.estimate.reason.map(|r| r as usize)
    }

    fn reason_name(index: usize) -> &'static str {
        Reason::ALL[index].as_str()
    }

    fn group(&self) -> u32 {
        self.workload.id
    }

    fn admitted(&self) -> bool {
        let e = &self.estimate;
        e.feasible() && e.demand_met != Some(false) && e.meets_slo != Some(false)
    }
}

/// A metric read from the estimate's field of the same meaning, shown nowhere unless `show`
/// says; `Need =>` before its name says what the sweep needs for it to have values (always,
/// without).
macro_rules! metric {
    ($($need:ident =>)? $name:literal, $unit:literal, $doc:literal, $field:ident) => {
        metric!($($need =>)? $name, $unit, $doc, $field, Show::NONE)
    };
    ($name:literal, $unit:literal, $doc:literal, $field:ident, $show:expr) => {
        metric!(Always => $name, $unit, $doc, $field, $show)
    };
    ($need:ident => $name:literal, $unit:literal, $doc:literal, $field:ident, $show:expr) => {
        Column {
            name: $name,
            unit: $unit,
            doc: $doc,
            need: Need::$need,
            kind: Kind::Metric(|r| finite(r.estimate.$field)),
            role: Role::Metric,
            show: $show,
        }
    };
}

/// A workload column read from the row's [`WorkloadValues`] field of the same name; `Need =>`
/// before its name says what the sweep needs for it to have values (always, without).
macro_rules! workload {
    ($name:literal, $unit:literal, $doc:literal, $field:ident) => {
        workload!(Always => $name, $unit, $doc, $field)
    };
    ($need:ident => $name:literal, $unit:literal, $doc:literal, $field:ident) => {
        Column {
            name: $name,
            unit: $unit,
            doc: $doc,
            need: Need::$need,
            kind: Kind::Metric(|r| finite(r.workload.$field)),
            role: Role::Workload,
            show: Show::NONE,
        }
    };
}

/// Every output column, in file order.
pub static COLUMNS: &[Column<Row>] = &[
    config_id_column(),
    hardware_column(),
    rack_column(),
    Column {
        name: "model",
        unit: "",
        doc: "model preset id (grid.model, or [workload] model)",
        need: Need::Always,
        kind: Kind::Label(Labels::Model),
        role: Role::Workload,
        show: Show::NONE,
    },
    Column {
        name: "workload_id",
        unit: "",
        doc: "index of the row's combination of the workload axes (model, input_tokens, output_tokens, think_s, cached_tokens, the demand axis, demand_scale; 0 without them); pareto.parquet holds one frontier per workload_id",
        need: Need::Always,
        kind: Kind::Count(|r| Some(r.workload.id)),
        role: Role::Workload,
        show: Show::NONE,
    },
    workload!(
        "input_tokens",
        "tokens",
        "mean prompt length (grid.input_tokens, or [workload])",
        input_tokens
    ),
    workload!(
        "output_tokens",
        "tokens",
        "mean output length (grid.output_tokens, or [workload])",
        output_tokens
    ),
    workload!(
        "think_s",
        "s",
        "mean time a user reads between a response and the next request (grid.think_s, or [workload]; 0 without)",
        think_s
    ),
    workload!(
        "cached_tokens",
        "tokens",
        "prompt tokens of a session's earlier turns whose KV is kept between turns (grid.cached_tokens, or [workload]; 0 without)",
        cached_tokens
    ),
    workload!(
        Demand => "given_concurrent_users",
        "users",
        "concurrent users of the demand as given (grid.concurrent_users, or [workload.demand]), before demand_scale; null when the demand is given otherwise",
        given_concurrent_users
    ),
    workload!(
        Demand => "given_requests_per_s",
        "requests/s",
        "request rate of the demand as given (grid.requests_per_s, or [workload.demand]), before demand_scale; null when the demand is given otherwise",
        given_requests_per_s
    ),
    workload!(
        Demand => "given_tokens_per_day",
        "tokens",
        "input plus output tokens per day of the demand as given (grid.tokens_per_day, or [workload.demand]), before demand_scale; null when the demand is given otherwise",
        given_tokens_per_day
    ),
    workload!(
        "demand_scale",
        "ratio",
        "factor on the demand's load in every phase (grid.demand_scale; 1 without)",
        demand_scale
    ),
    Column {
        name: "racks",
        unit: "racks",
        doc: "racks in the cluster: the grid's, or with racks = \"auto\" ceil(servers / servers per rack) (null when they could not be sized)",
        need: Need::Always,
        kind: Kind::Count(|r| nonzero(r.estimate.racks)),
        role: Role::Layout,
        show: Show::NONE.brief().frontier(3).report(3),
    },
    Column {
        name: "servers",
        unit: "servers",
        doc: "GPU servers in the cluster: racks x servers per rack, or with racks = \"auto\" the fewest whole servers (whole scale-up domains: one 8-GPU server, a whole NVL72 rack) that meet the demand and the SLOs (null when they could not be sized)",
        need: Need::Always,
        kind: Kind::Count(|r| nonzero(r.estimate.servers)),
        role: Role::Layout,
        show: Show::NONE.frontier(4),
    },
    Column {
        name: "gpus",
        unit: "GPUs",
        doc: "GPUs in the cluster (servers x GPUs per server)",
        need: Need::Always,
        kind: Kind::Count(|r| Some(r.estimate.gpus)),
        role: Role::Layout,
        show: Show::NONE.header("GPUs").frontier(5).report(4),
    },
    Column {
        name: "tp",
        unit: "GPUs",
        doc: "tensor-parallel degree of attention and dense layers",
        need: Need::Always,
        kind: Kind::Count(|r| Some(r.point.tp)),
        role: Role::Layout,
        show: Show::NONE.brief().frontier(6),
    },
    Column {
        name: "pp",
        unit: "stages",
        doc: "pipeline-parallel stages per instance",
        need: Need::Always,
        kind: Kind::Count(|r| Some(r.point.pp)),
        role: Role::Layout,
        show: Show::NONE.brief().frontier(7),
    },
    Column {
        name: "ep",
        unit: "GPUs",
        doc: "expert-parallel degree (routed experts spread over ep GPUs)",
        need: Need::Always,
        kind: Kind::Count(|r| Some(r.point.ep)),
        role: Role::Layout,
        show: Show::NONE.brief().frontier(8),
    },
    Column {
        name: "attention_dp",
        unit: "ranks",
        doc: "attention data-parallel ranks per stage, max(tp, ep) / tp (null when the layout is invalid)",
        need: Need::Always,
        kind: Kind::Count(|r| nonzero(r.estimate.attention_dp)),
        role: Role::Layout,
        show: Show::NONE,
    },
    Column {
        name: "gpus_per_instance",
        unit: "GPUs",
        doc: "GPUs of one model instance, max(tp, ep) x pp (null when the layout is invalid)",
        need: Need::Always,
        kind: Kind::Count(|r| nonzero(r.estimate.gpus_per_instance)),
        role: Role::Detail,
        show: Show::NONE,
    },
    Column {
        name: "instances",
        unit: "instances",
        doc: "model instances the cluster holds (data-parallel replicas; null when the layout is invalid)",
        need: Need::Always,
        kind: Kind::Count(|r| nonzero(r.estimate.instances)),
        role: Role::Detail,
        show: Show::NONE,
    },
    Column {
        name: "disagg_prefill_pct",
        unit: "%",
        doc: "percent of instances in the prefill pool of disaggregated serving (0 = aggregated: every instance prefills and decodes)",
        need: Need::Always,
        kind: Kind::Count(|r| Some(r.point.disagg_prefill_pct)),
        role: Role::Layout,
        show: Show::NONE
            .header("prefill %")
            .frontier_when(11, When::Nonzero("disagg_prefill_pct")),
    },
    Column {
        name: "prefill_instances",
        unit: "instances",
        doc: "instances in the prefill pool (0 when aggregated; null when the layout is invalid)",
        need: Need::Always,
        kind: Kind::Count(|r| {
            (r.estimate.gpus_per_instance > 0).then_some(r.estimate.prefill_instances)
        }),
        role: Role::Detail,
        show: Show::NONE
            .header("prefill instances")
            .frontier_when(12, When::Nonzero("disagg_prefill_pct")),
    },
    Column {
        name: "prefill_tp",
        unit: "GPUs",
        doc: "tensor-parallel degree of the prefill pool's instances: the `prefill_tp` axis, or tp where it is 0 (null when aggregated)",
        need: Need::Disaggregation,
        kind: Kind::Count(|r| {
            let p = &r.point;
            (p.disagg_prefill_pct > 0).then_some(if p.prefill_tp == 0 {
                p.tp
            } else {
                p.prefill_tp
            })
        }),
        role: Role::Layout,
        show: Show::NONE
            .header("prefill tp")
            .frontier_when(13, When::Nonzero("prefill_tp")),
    },
    Column {
        name: "prefill_hardware",
        unit: "",
        doc: "GPU of the prefill pool's instances, on racks of its own default preset: the `prefill_hardware` axis, or `hardware` where it is \"same\" (null when aggregated)",
        need: Need::Disaggregation,
        kind: Kind::Label(Labels::PrefillHardware),
        role: Role::Layout,
        show: Show::NONE
            .header("prefill hardware")
            .frontier_when(14, When::Named("prefill_hardware")),
    },
    Column {
        name: "prefill_gpus",
        unit: "GPUs",
        doc: "GPUs of the prefill pool's instances, or with a GPU of its own (`prefill_hardware`) of its racks (0 when aggregated; null when the layout is invalid)",
        need: Need::Always,
        kind: Kind::Count(|r| {
            (r.estimate.gpus_per_instance > 0).then_some(r.estimate.prefill_gpus)
        }),
        role: Role::Detail,
        show: Show::NONE,
    },
    Column {
        name: "decode_gpus",
        unit: "GPUs",
        doc: "GPUs of the cluster outside the prefill pool: the decode instances' and any idle ones, gpus - prefill_gpus (null when the layout is invalid)",
        need: Need::Always,
        kind: Kind::Count(|r| {
            let e = &r.estimate;
            (e.gpus_per_instance > 0).then_some(e.gpus.saturating_sub(e.prefill_gpus))
        }),
        role: Role::Detail,
        show: Show::NONE,
    },
    Column {
        name: "spec_tokens",
        unit: "tokens",
        doc: "draft tokens proposed per decode step (speculative decoding / MTP; 0 = off)",
        need: Need::Always,
        kind: Kind::Count(|r| Some(r.point.spec_tokens)),
        role: Role::Layout,
        show: Show::NONE
            .header("drafts")
            .frontier_when(10, When::Nonzero("spec_tokens")),
    },
    Column {
        name: "batch",
        unit: "sequences",
        doc: "concurrent sequences per instance (engine max batch size)",
        need: Need::Always,
        kind: Kind::Count(|r| Some(r.point.batch)),
        role: Role::Layout,
        show: Show::NONE.brief().frontier(9).follow("batch size"),
    },
    Column {
        name: "engine",
        unit: "",
        doc: "serving engine whose measured kernels, CUDA graphs and scheduler the row runs (the `engine` axis; `auto` resolved to the GPU's first engine); null where the GPU does not run it",
        need: Need::Always,
        kind: Kind::Label(Labels::Engine),
        role: Role::Layout,
        show: Show::NONE.follow("engine"),
    },
    Column {
        name: "weight_dtype",
        unit: "",
        doc: "number format of the weights",
        need: Need::Always,
        kind: Kind::Label(Labels::WeightDtype),
        role: Role::Layout,
        show: Show::NONE
            .brief()
            .header("weights")
            .frontier(17)
            .follow("weight format"),
    },
    Column {
        name: "kv_dtype",
        unit: "",
        doc: "number format of the KV cache",
        need: Need::Always,
        kind: Kind::Label(Labels::KvDtype),
        role: Role::Layout,
        show: Show::NONE
            .brief()
            .header("KV")
            .frontier(18)
            .follow("KV-cache format"),
    },
    Column {
        name: "ownership",
        unit: "",
        doc: "how the hardware is paid for: cloud (GPU-hours at the row's pricing) or owned (capex amortized plus opex)",
        need: Need::Always,
        kind: Kind::Label(Labels::Ownership),
        role: Role::Layout,
        show: Show::NONE.frontier_when(15, When::Varies("ownership")),
    },
    Column {
        name: "scaleout_oversubscription",
        unit: "ratio",
        doc: "oversubscription r of the scale-out spine (r:1): the scaleout_oversubscription axis, or the rack's own; traffic between racks gets at most 1/r of the NICs' bandwidth (docs/model.md, \"Network load\")",
        need: Need::Always,
        kind: Kind::Count(|r| nonzero(r.estimate.scaleout_oversubscription)),
        role: Role::Layout,
        show: Show::NONE
            .header("spine r:1")
            .frontier_when(33, When::Varies("scaleout_oversubscription")),
    },
    Column {
        name: "pricing",
        unit: "",
        doc: "how cloud GPU-hours are bought: on-demand, reserved-1y, reserved-3y or spot (spot with standby servers for its interruptions; null when owned)",
        need: Need::Always,
        kind: Kind::Label(Labels::Pricing),
        role: Role::Layout,
        show: Show::NONE.frontier_when(16, When::Varies("ownership")),
    },
    Column {
        name: "provider",
        unit: "",
        doc: "provider of the sweep's [[price]] quote that prices the row (null at the catalog's list price, or when owned)",
        need: Need::PriceQuotes,
        kind: Kind::Label(Labels::Provider),
        role: Role::Layout,
        show: Show::NONE,
    },
    Column {
        name: "feasible",
        unit: "",
        doc: "whether the configuration can run",
        need: Need::Always,
        kind: Kind::Flag(|r| Some(r.estimate.feasible())),
        role: Role::Status,
        show: Show::NONE,
    },
    Column {
        name: REASON_COLUMN,
        unit: "",
        doc: "why it cannot run (null when feasible); see docs/model.md",
        need: Need::Always,
        kind: Kind::Label(Labels::Reason),
        role: Role::Status,
        show: Show::NONE,
    },
    Column {
        name: "bound_by",
        unit: "",
        doc: "resource that bounds decode: compute, hbm, comm, or memory when it does not fit",
        need: Need::Always,
        kind: Kind::Label(Labels::Limit),
        role: Role::Status,
        show: Show::NONE.frontier(25),
    },
    metric!(
        "ttft_ms",
        "ms",
        "mean time to first token of a mean-length prompt at the operating load (without demand: arriving at an instance that runs its full batch, as a benchmark at that concurrency measures); docs/model.md §13, §15",
        ttft_ms,
        Show::NONE.header("TTFT (ms)").frontier(21)
    ),
    metric!(
        "ttft_idle_ms",
        "ms",
        "time to first token of one request on an idle instance (no queueing, no batch; plus the KV transfer when disaggregated)",
        ttft_idle_ms
    ),
    metric!(
        Disaggregation => "kv_transfer_ms",
        "ms",
        "time to move one request's KV cache from its prefill instance to its decode instance over the scale-out network, part of ttft_idle_ms (null when aggregated); docs/model.md §12",
        kv_transfer_ms
    ),
    metric!(
        "tpot_ms",
        "ms",
        "time per output token with the full batch running, prefill interference included (the engine's capacity; at the operating load see tpot_at_load_ms)",
        tpot_ms
    ),
    metric!(
        "tokens_per_s_per_user",
        "tokens/s",
        "output tokens per second one sequence sees with the full batch running (1000 / tpot_ms)",
        tokens_per_s_per_user
    ),
    metric!(
        "tokens_per_s_per_instance",
        "tokens/s",
        "output tokens per second of one instance at full batch",
        tokens_per_s_per_instance
    ),
    metric!(
        "tokens_per_s_per_gpu",
        "tokens/s",
        "output tokens per second per GPU of the cluster at full batch (its capacity; idle GPUs included)",
        tokens_per_s_per_gpu,
        Show::NONE.header("tokens/s/GPU").frontier(19).report(11)
    ),
    metric!(
        "output_tokens_per_s",
        "tokens/s",
        "output tokens per second of the whole cluster at full batch (its capacity)",
        output_tokens_per_s,
        Show::NONE.header("cluster tokens/s").frontier(23)
    ),
    metric!(
        "hbm_used_gb_per_gpu",
        "GB",
        "HBM the configuration needs per GPU: weights + KV cache + activations (also when it does not fit)",
        hbm_used_gb_per_gpu,
        Show::NONE.header("HBM/GPU (GB)").frontier(24)
    ),
    metric!(
        "hbm_weights_gb_per_gpu",
        "GB",
        "weights per GPU (heaviest pipeline stage)",
        hbm_weights_gb_per_gpu
    ),
    metric!(
        "hbm_kv_gb_per_gpu",
        "GB",
        "KV cache per GPU: batch sequences at the context their admission holds (whole-request, input + output (1 + cv^2); on-demand, input + output (1 + cv^2) / 2; cv = output_tokens_cv, the running sequences being length-biased; under attention data parallelism, on the rank whose sequences hold the most context)",
        hbm_kv_gb_per_gpu
    ),
    metric!(
        "compute_bound_tokens_per_s_per_gpu",
        "tokens/s",
        "tokens/s per GPU if only tensor-core time counted",
        compute_bound_tokens_per_s_per_gpu
    ),
    metric!(
        "hbm_bound_tokens_per_s_per_gpu",
        "tokens/s",
        "tokens/s per GPU if only HBM traffic counted",
        hbm_bound_tokens_per_s_per_gpu
    ),
    metric!(
        "comm_bound_tokens_per_s_per_gpu",
        "tokens/s",
        "tokens/s per GPU if only communication counted (null without communication)",
        comm_bound_tokens_per_s_per_gpu
    ),
    metric!(
        Demand => "demand_requests_per_s",
        "requests/s",
        "requests per second the demand sets at its peak, time-weighted over schedule phases: the rate modes', or the rate a closed population of users settles at on this configuration (users / (response time + think time), solved with the response time it causes); null without demand",
        demand_requests_per_s
    ),
    metric!(
        Demand => "utilization",
        "fraction",
        "demand over capacity at the peak phase (null without demand)",
        utilization,
        Show::NONE
            .frontier_when(27, When::Answered("demand_met"))
            .report(8)
    ),
    Column {
        name: "headroom",
        unit: "fraction",
        doc: "1 - utilization (null without demand)",
        need: Need::Demand,
        kind: Kind::Metric(|r| finite(1.0 - r.estimate.utilization)),
        role: Role::Metric,
        show: Show::NONE,
    },
    Column {
        name: "risk",
        unit: "",
        doc: "latency risk band of the utilization: low <= 0.5, medium <= 0.75, high above (null without demand)",
        need: Need::Demand,
        kind: Kind::Label(Labels::Risk),
        role: Role::Status,
        show: Show::NONE,
    },
    metric!(
        Demand => "users_supported",
        "users",
        "concurrent users the cluster serves at the target utilization, by Little's law with the operating load's response time: target x capacity x (response + think time); the minimum over phases (null without demand)",
        users_supported,
        Show::NONE.header("users").report(9)
    ),
    Column {
        name: "demand_met",
        unit: "",
        doc: "whether every phase's demand is served at or below the target utilization with stable queues (null without demand)",
        need: Need::Demand,
        kind: Kind::Flag(|r| r.estimate.demand_met),
        role: Role::Requirement {
            set_by: "demand",
            missed: "demand not met",
        },
        show: Show::NONE,
    },
    Column {
        name: "meets_slo",
        unit: "",
        doc: "whether the p99 TTFT, p99 TPOT and tokens/s/user objectives of [sweep] hold (null when none is set)",
        need: Need::Slo,
        kind: Kind::Flag(|r| r.estimate.meets_slo),
        role: Role::Requirement {
            set_by: "SLOs",
            missed: "SLOs missed",
        },
        show: Show::NONE,
    },
    metric!(
        "ttft_p50_ms",
        "ms",
        "median time to first token at the operating load (without demand: at full batch) (docs/model.md §13, §15): iteration boundary + prompt-budget, slot and prefill-pool waits + prompt under load + KV reload",
        ttft_p50_ms
    ),
    metric!(
        "ttft_p95_ms",
        "ms",
        "95th-percentile time to first token at the operating load",
        ttft_p95_ms
    ),
    metric!(
        "ttft_p99_ms",
        "ms",
        "99th-percentile time to first token at the operating load",
        ttft_p99_ms,
        Show::NONE
            .header("TTFT p99 (ms)")
            .frontier_when(28, When::Answered("demand_met"))
            .report(5)
    ),
    metric!(
        "ttft_p99_mmc_ms",
        "ms",
        "99th-percentile time to first token had prompt and output lengths been exponential (both CVs 1)",
        ttft_p99_mmc_ms
    ),
    metric!(
        "tpot_p99_ms",
        "ms",
        "99th-percentile time per output token at the operating load (step at the p99 batch occupancy; without demand: at full batch)",
        tpot_p99_ms,
        Show::NONE
            .header("TPOT p99 (ms)")
            .frontier_when(29, When::Answered("demand_met"))
            .report(6)
    ),
    metric!(
        "occupancy_per_instance",
        "requests",
        "mean requests a decode instance holds at the operating load, running or waiting for a slot (without demand: the batch); with users and no think time, users / decode instances",
        occupancy_per_instance,
        Show::NONE
            .header("requests/instance")
            .frontier_when(26, When::Answered("demand_met"))
    ),
    metric!(
        "tpot_at_load_ms",
        "ms",
        "mean time per output token a sequence sees at the operating load (Little's law over the running sequences; the step at the mean occupancy; without demand: tpot_ms)",
        tpot_at_load_ms,
        Show::NONE.header("TPOT (ms)").frontier(22)
    ),
    metric!(
        "tokens_per_s_per_user_at_load",
        "tokens/s",
        "output tokens per second a user sees at the operating load (1000 / tpot_at_load_ms; without demand: tokens_per_s_per_user)",
        tokens_per_s_per_user_at_load,
        Show::NONE.header("tokens/s/user").frontier(20).report(7)
    ),
    metric!(
        "e2e_p50_ms",
        "ms",
        "median request latency at the operating load: first token, then the rest of a median-length answer at the median occupancy's TPOT",
        e2e_p50_ms
    ),
    metric!(
        "e2e_p99_ms",
        "ms",
        "99th-percentile request latency at the operating load: p99 first token, then the rest of a p99-length answer at the p99 occupancy's TPOT (percentiles added)",
        e2e_p99_ms
    ),
    metric!(
        "queue_wait_p99_ms",
        "ms",
        "99th-percentile wait before a prompt is processed at the operating load: prompt budget or prefill pool, and a decode slot",
        queue_wait_p99_ms
    ),
    metric!(
        "output_tokens_per_month",
        "tokens",
        "output tokens served in a month on average (730 h): the demand's mean rate, less what exceeds capacity, time-weighted over phases and active hours; the capacity without demand",
        output_tokens_per_month
    ),
    metric!(
        Demand => "kv_host_gb",
        "GB",
        "cached session context held in host memory, cluster total (null without demand)",
        kv_host_gb
    ),
    metric!(
        Demand => "kv_storage_gb",
        "GB",
        "cached session context held on networked storage, cluster total (null without demand)",
        kv_storage_gb
    ),
    metric!(
        Demand => "kv_reload_ms",
        "ms",
        "mean time to reload a resumed session's cached context before its first token (null without demand)",
        kv_reload_ms
    ),
    metric!(
        Demand => "storage_servers",
        "servers",
        "KV-offload storage servers needed for capacity and reload bandwidth (null without demand)",
        storage_servers
    ),
    metric!(
        "scaleup_gb_per_s_per_gpu",
        "GB/s",
        "bytes each GPU of the instances sends per second on the scale-up tier (NVLink, Infinity Fabric) at the operating load: tensor-parallel all-reduces, expert all-to-alls and pipeline hops inside the domain (without demand: at full batch)",
        scaleup_gb_per_s_per_gpu
    ),
    metric!(
        "scaleup_messages_per_s_per_gpu",
        "messages/s",
        "messages (one per peer per collective step) each GPU of the instances sends per second on the scale-up tier at the operating load",
        scaleup_messages_per_s_per_gpu
    ),
    metric!(
        "scaleup_util",
        "fraction",
        "scaleup_gb_per_s_per_gpu over the GPU's scale-up link peak per direction",
        scaleup_util
    ),
    metric!(
        "scaleout_gb_per_s_per_gpu",
        "GB/s",
        "bytes each GPU of the instances sends per second on the scale-out tier (NICs) at the operating load: collectives across scale-up domains, pipeline hops between domains and the KV transfers of disaggregated serving (without demand: at full batch)",
        scaleout_gb_per_s_per_gpu
    ),
    metric!(
        "scaleout_messages_per_s_per_gpu",
        "messages/s",
        "messages each GPU of the instances sends per second on the scale-out tier at the operating load",
        scaleout_messages_per_s_per_gpu
    ),
    metric!(
        "scaleout_util",
        "fraction",
        "scaleout_gb_per_s_per_gpu over the GPU's NIC peak per direction",
        scaleout_util
    ),
    metric!(
        "kv_transfer_gb_per_s_per_gpu",
        "GB/s",
        "KV cache shipped from the prefill to the decode pool per second, per GPU of the instances (part of scaleout_gb_per_s_per_gpu; 0 when aggregated)",
        kv_transfer_gb_per_s_per_gpu
    ),
    metric!(
        Demand => "kv_reload_gb_per_s_per_gpu",
        "GB/s",
        "cached session context reloaded per second from host memory and storage, per GPU of the instances (over the host and storage links, not the scale-out tier; null without demand)",
        kv_reload_gb_per_s_per_gpu
    ),
    metric!(
        "power_kw",
        "kW",
        "IT power at the operating load: GPUs, hosts, switches, storage",
        power_kw,
        Show::NONE
            .header("IT power (kW)")
            .frontier_when(30, When::Answered("demand_met"))
    ),
    metric!(
        "facility_power_kw",
        "kW",
        "facility power: IT power x PUE",
        facility_power_kw,
        Show::NONE.header("facility (kW)").report(10)
    ),
    metric!(
        "rack_power_kw",
        "kW",
        "power of one rack at full load (checked against the rack's budget)",
        rack_power_kw
    ),
    metric!(
        "joules_per_token",
        "J/token",
        "IT energy per output token served",
        joules_per_token
    ),
    metric!(
        "usd_per_hour",
        "USD/h",
        "cost of the cluster per hour (cloud: GPU-hours; owned: amortized capex, energy, hosting, maintenance); the sum of the usd_per_hour_* parts",
        usd_per_hour
    ),
    metric!(
        "usd_per_hour_gpus",
        "USD/h",
        "GPU servers: rent at the row's pricing, with spot's standby servers (cloud), or hardware amortized over the years of [cost] (owned)",
        usd_per_hour_gpus
    ),
    metric!(
        "usd_per_hour_energy",
        "USD/h",
        "electricity of servers and switches at the operating load x PUE (owned; 0 in the cloud)",
        usd_per_hour_energy
    ),
    metric!(
        "usd_per_hour_facility",
        "USD/h",
        "facility capex per provisioned kW, amortized, plus colocation rent (owned; 0 in the cloud)",
        usd_per_hour_facility
    ),
    metric!(
        "usd_per_hour_maintenance",
        "USD/h",
        "yearly maintenance as a share of server and network capex (owned; 0 in the cloud)",
        usd_per_hour_maintenance
    ),
    metric!(
        "usd_per_hour_network",
        "USD/h",
        "the servers' share of rack network capex, amortized (owned; 0 in the cloud)",
        usd_per_hour_network
    ),
    metric!(
        "usd_per_hour_storage",
        "USD/h",
        "KV-offload storage servers: amortization, maintenance and electricity (both ownerships)",
        usd_per_hour_storage
    ),
    metric!(
        "usd_per_month",
        "USD/month",
        "usd_per_hour x 730 h, paid around the clock (dedicated billing)",
        usd_per_month,
        Show::NONE
            .header("USD/month")
            .frontier_when(31, When::Answered("demand_met"))
            .report(1)
    ),
    metric!(
        "usd_per_mtok",
        "USD/Mtok",
        "cost per million output tokens served: usd_per_month / output_tokens_per_month x 1e6 (the demand's mean, or the capacity without demand)",
        usd_per_mtok,
        Show::NONE
            .header("USD/Mtok")
            .frontier_when(32, When::Answered("demand_met"))
            .report(2)
    ),
    metric!(
        "tco_usd",
        "USD",
        "total cost over the horizon (years of [cost])",
        tco_usd
    ),
    metric!(
        "kg_co2e_per_mtok",
        "kg CO2e/Mtok",
        "operational carbon per million output tokens (facility energy x grid intensity)",
        kg_co2e_per_mtok
    ),
    metric!(
        "water_l_per_mtok",
        "L/Mtok",
        "water per million output tokens (IT energy x WUE)",
        water_l_per_mtok
    ),
    metric!(
        Demand => "usd_per_month_autoscaling",
        "USD/month",
        "cloud billing when each schedule phase rents the fewest servers it needs, for its active hours only, plus the KV storage servers (null when owned or without demand)",
        usd_per_month_autoscaling
    ),
    metric!(
        ApiPrices => "usd_per_month_api",
        "USD/month",
        "the same demand's tokens at the per-token API prices of [cost] (null without them)",
        usd_per_month_api
    ),
];

/// What the review documents say of an inference run besides its columns.
pub static INFERENCE_REVIEW: Review = Review {
    workload_line: |w| {
        format!(
            "{} input / {} output tokens",
            number(w("input_tokens")),
            number(w("output_tokens"))
        )
    },
    workload_words,
    admitted: "run, meet the demand and SLOs where the sweep sets them",
    follows: "a batch or format axis",
    trades: &[
        (
            "Throughput against interactivity",
            "max tokens_per_s_per_user_at_load",
            "max tokens_per_s_per_gpu",
            "Up and to the right is better: what one GPU of each hardware serves at each speed a \
             user sees. At a given speed, the higher line serves more tokens per GPU; where a line \
             ends on the right is the fastest that hardware serves.",
        ),
        (
            "Cost against time to first token",
            "min ttft_p99_ms",
            "min usd_per_mtok",
            "Down and to the left is better: the lowest point left of a TTFT SLO line is the \
             cheapest configuration that meets it. Owned and cloud configurations of one hardware \
             differ in cost, rarely in latency.",
        ),
        (
            "Racks against users served",
            "max users_supported",
            "min racks",
            "Every configuration is sized to the demand, so each line starts at the users it \
             asks for: its lowest point is the fewest racks that serve the demand on that \
             hardware. Points further right serve more users than asked (servers and racks \
             come whole), and a steep line buys little headroom per rack.",
        ),
    ],
    // Per token, so that runs with and without a demand compare alike (for one demand, the
    // cheapest per token is the cheapest per month).
    compare: &["workload_id", "hardware", "ownership", "pricing"],
    cheapest: "min usd_per_mtok",
};

/// `kv_admission` is the manifest's: a policy's name, or each engine's own in words
/// (`Spec::kv_admission_words`).
fn workload_words(w: Workload, kv_admission: Option<&str>) -> String {
    let admission =
        kv_admission.map_or(
            String::new(),
            |words| match crate::perf::memory::KvAdmission::named(words) {
                Some(a) => format!("; {}", a.describe()),
                None => format!("; KV admission {words}"),
            },
        );
    let switches = super::switch_words(w);
    format!(
        "{} input tokens, {} output tokens per request{admission}{switches}",
        number(w("input_tokens")),
        number(w("output_tokens"))
    )
}
