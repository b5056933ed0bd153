//! The output schema, defined once: every column of the part files (`configs/*.parquet`) with
//! its unit, meaning, type and how to read it from a [`Row`]. The Parquet writer, the Markdown
//! table, objectives and constraints all go through this table, so a column cannot exist in one
//! place and not another.

use crate::grid::Point;
use crate::perf::{Estimate, Limit, Reason};

/// Utilization bands of the `risk` column (InferenceAtlas's latency risk bands): low up to 50 %,
/// medium up to 75 %, high above.
pub const RISK_BANDS: [(&str, f64); 3] = [("low", 0.5), ("medium", 0.75), ("high", f64::INFINITY)];

/// One evaluated configuration: its grid index, its axis values and the model's estimate.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Row {
    pub config_id: u64,
    pub point: Point,
    pub estimate: Estimate,
}

/// Categorical columns, dictionary-encoded in Parquet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Labels {
    Hardware,
    Rack,
    Model,
    WeightDtype,
    KvDtype,
    Ownership,
    Reason,
    Limit,
    Risk,
}

/// How a column's values are read from a row. Numeric accessors return `None` (null) where the
/// quantity does not apply.
#[derive(Clone, Copy)]
pub enum Kind {
    Id(fn(&Row) -> u64),
    Label(Labels),
    Count(fn(&Row) -> Option<u32>),
    Metric(fn(&Row) -> Option<f64>),
    /// A yes/no answer, null where the question does not apply.
    Flag(fn(&Row) -> Option<bool>),
}

#[derive(Clone, Copy)]
pub struct Column {
    pub name: &'static str,
    /// Unit, or "" for identifiers and labels.
    pub unit: &'static str,
    pub doc: &'static str,
    pub kind: Kind,
}

impl Column {
    /// The value as a number, for objectives and constraints; `None` for labels and nulls.
    pub fn number(&self, row: &Row) -> Option<f64> {
        match self.kind {
            Kind::Id(f) => Some(f(row) as f64),
            Kind::Count(f) => f(row).map(f64::from),
            Kind::Metric(f) => f(row),
            Kind::Label(_) | Kind::Flag(_) => None,
        }
    }

    pub fn is_numeric(&self) -> bool {
        matches!(self.kind, Kind::Id(_) | Kind::Count(_) | Kind::Metric(_))
    }
}

fn finite(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}

fn nonzero(v: u32) -> Option<u32> {
    (v > 0).then_some(v)
}

impl Labels {
    /// Labels whose values do not depend on the sweep.
    pub fn fixed_values(self) -> Option<Vec<&'static str>> {
        match self {
            Labels::Reason => Some(Reason::ALL.iter().map(|r| r.as_str()).collect()),
            Labels::Limit => Some(Limit::ALL.iter().map(|l| l.as_str()).collect()),
            Labels::Risk => Some(RISK_BANDS.iter().map(|(name, _)| *name).collect()),
            _ => None,
        }
    }
}

/// Values of the sweep-dependent label columns, and the key each grid entry maps to.
#[derive(Debug, Clone)]
pub struct LabelValues {
    pub hardware: Vec<String>,
    /// Hardware key per grid platform.
    pub hardware_key: Vec<u16>,
    pub rack: Vec<String>,
    pub rack_key: Vec<u16>,
    pub model: String,
    pub weight_dtype: Vec<String>,
    pub kv_dtype: Vec<String>,
    pub ownership: Vec<String>,
}

impl LabelValues {
    /// Dictionary values of a label column.
    pub fn values(&self, labels: Labels) -> Vec<String> {
        match labels {
            Labels::Hardware => self.hardware.clone(),
            Labels::Rack => self.rack.clone(),
            Labels::Model => vec![self.model.clone()],
            Labels::WeightDtype => self.weight_dtype.clone(),
            Labels::KvDtype => self.kv_dtype.clone(),
            Labels::Ownership => self.ownership.clone(),
            Labels::Reason | Labels::Limit | Labels::Risk => labels
                .fixed_values()
                .unwrap_or_default()
                .into_iter()
                .map(String::from)
                .collect(),
        }
    }

    /// Dictionary key of a row's label, `None` when null.
    pub fn key(&self, labels: Labels, row: &Row) -> Option<u16> {
        let p = &row.point;
        match labels {
            Labels::Hardware => Some(self.hardware_key[p.platform as usize]),
            Labels::Rack => Some(self.rack_key[p.platform as usize]),
            Labels::Model => Some(0),
            Labels::WeightDtype => Some(p.weight_dtype as u16),
            Labels::KvDtype => Some(p.kv_dtype as u16),
            Labels::Ownership => Some(p.ownership as u16),
            Labels::Reason | Labels::Limit | Labels::Risk => fixed_label_key(labels, row),
        }
    }

    /// A row's label as text, "" when null.
    pub fn text(&self, labels: Labels, row: &Row) -> String {
        let Some(key) = self.key(labels, row) else {
            return String::new();
        };
        self.values(labels).swap_remove(key as usize)
    }
}

/// Key of a fixed-vocabulary label for a row, `None` when null.
pub fn fixed_label_key(labels: Labels, row: &Row) -> Option<u16> {
    match labels {
        Labels::Reason => row.estimate.reason.map(|r| r as u16),
        Labels::Limit => row.estimate.limit.map(|l| l as u16),
        Labels::Risk => {
            let u = row.estimate.utilization;
            u.is_finite().then(|| {
                RISK_BANDS
                    .iter()
                    .position(|&(_, max)| u <= max)
                    .unwrap_or(RISK_BANDS.len() - 1) as u16
            })
        }
        _ => None,
    }
}

macro_rules! metric {
    ($name:literal, $unit:literal, $doc:literal, $field:ident) => {
        Column {
            name: $name,
            unit: $unit,
            doc: $doc,
            kind: Kind::Metric(|r| finite(r.estimate.$field)),
        }
    };
}

/// Every output column, in file order.
pub static COLUMNS: &[Column] = &[
    Column {
        name: "config_id",
        unit: "",
        doc: "index of the configuration in the sweep's grid (0-based; stable for a given sweep file)",
        kind: Kind::Id(|r| r.config_id),
    },
    Column {
        name: "hardware",
        unit: "",
        doc: "GPU preset id",
        kind: Kind::Label(Labels::Hardware),
    },
    Column {
        name: "rack",
        unit: "",
        doc: "rack preset id",
        kind: Kind::Label(Labels::Rack),
    },
    Column {
        name: "model",
        unit: "",
        doc: "model preset id",
        kind: Kind::Label(Labels::Model),
    },
    Column {
        name: "racks",
        unit: "racks",
        doc: "racks in the cluster: the grid's, or with racks = \"auto\" the fewest that meet the demand and the SLOs (null when they could not be sized)",
        kind: Kind::Count(|r| nonzero(r.estimate.racks)),
    },
    Column {
        name: "gpus",
        unit: "GPUs",
        doc: "GPUs in the cluster (racks x GPUs per rack)",
        kind: Kind::Count(|r| Some(r.estimate.gpus)),
    },
    Column {
        name: "tp",
        unit: "GPUs",
        doc: "tensor-parallel degree of attention and dense layers",
        kind: Kind::Count(|r| Some(r.point.tp)),
    },
    Column {
        name: "pp",
        unit: "stages",
        doc: "pipeline-parallel stages per instance",
        kind: Kind::Count(|r| Some(r.point.pp)),
    },
    Column {
        name: "ep",
        unit: "GPUs",
        doc: "expert-parallel degree (routed experts spread over ep GPUs)",
        kind: Kind::Count(|r| Some(r.point.ep)),
    },
    Column {
        name: "attention_dp",
        unit: "ranks",
        doc: "attention data-parallel ranks per stage, max(tp, ep) / tp (null when the layout is invalid)",
        kind: Kind::Count(|r| nonzero(r.estimate.attention_dp)),
    },
    Column {
        name: "gpus_per_instance",
        unit: "GPUs",
        doc: "GPUs of one model instance, max(tp, ep) x pp (null when the layout is invalid)",
        kind: Kind::Count(|r| nonzero(r.estimate.gpus_per_instance)),
    },
    Column {
        name: "instances",
        unit: "instances",
        doc: "model instances the cluster holds (data-parallel replicas; null when the layout is invalid)",
        kind: Kind::Count(|r| nonzero(r.estimate.instances)),
    },
    Column {
        name: "disagg_prefill_pct",
        unit: "%",
        doc: "percent of instances in the prefill pool of disaggregated serving (0 = aggregated: every instance prefills and decodes)",
        kind: Kind::Count(|r| Some(r.point.disagg_prefill_pct)),
    },
    Column {
        name: "prefill_instances",
        unit: "instances",
        doc: "instances in the prefill pool (0 when aggregated; null when the layout is invalid)",
        kind: Kind::Count(|r| {
            (r.estimate.gpus_per_instance > 0).then_some(r.estimate.prefill_instances)
        }),
    },
    Column {
        name: "spec_tokens",
        unit: "tokens",
        doc: "draft tokens proposed per decode step (speculative decoding / MTP; 0 = off)",
        kind: Kind::Count(|r| Some(r.point.spec_tokens)),
    },
    Column {
        name: "batch",
        unit: "sequences",
        doc: "concurrent sequences per instance (engine max batch size)",
        kind: Kind::Count(|r| Some(r.point.batch)),
    },
    Column {
        name: "weight_dtype",
        unit: "",
        doc: "number format of the weights",
        kind: Kind::Label(Labels::WeightDtype),
    },
    Column {
        name: "kv_dtype",
        unit: "",
        doc: "number format of the KV cache",
        kind: Kind::Label(Labels::KvDtype),
    },
    Column {
        name: "ownership",
        unit: "",
        doc: "how the hardware is paid for: cloud (GPU-hours at list price) or owned (capex amortized plus opex)",
        kind: Kind::Label(Labels::Ownership),
    },
    Column {
        name: "feasible",
        unit: "",
        doc: "whether the configuration can run",
        kind: Kind::Flag(|r| Some(r.estimate.feasible())),
    },
    Column {
        name: "infeasible_reason",
        unit: "",
        doc: "why it cannot run (null when feasible); see docs/model.md",
        kind: Kind::Label(Labels::Reason),
    },
    Column {
        name: "limit",
        unit: "",
        doc: "resource that bounds decode: compute, hbm, comm, or memory when it does not fit",
        kind: Kind::Label(Labels::Limit),
    },
    metric!(
        "ttft_ms",
        "ms",
        "time to first token of one request on an idle instance (no queueing)",
        ttft_ms
    ),
    metric!(
        "tpot_ms",
        "ms",
        "time per output token at full batch, prefill interference included",
        tpot_ms
    ),
    metric!(
        "tokens_per_s_per_user",
        "tokens/s",
        "output tokens per second one sequence sees (1000 / tpot_ms)",
        tokens_per_s_per_user
    ),
    metric!(
        "tokens_per_s_per_instance",
        "tokens/s",
        "output tokens per second of one instance",
        tokens_per_s_per_instance
    ),
    metric!(
        "tokens_per_s_per_gpu",
        "tokens/s",
        "output tokens per second per GPU of the cluster (idle GPUs included)",
        tokens_per_s_per_gpu
    ),
    metric!(
        "output_tokens_per_s",
        "tokens/s",
        "output tokens per second of the whole cluster",
        output_tokens_per_s
    ),
    metric!(
        "hbm_used_gb_per_gpu",
        "GB",
        "HBM the configuration needs per GPU: weights + KV cache + activations (also when it does not fit)",
        hbm_used_gb_per_gpu
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
        "KV cache per GPU: batch sequences at their mean context (input + output / 2, paged KV)",
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
        "demand_requests_per_s",
        "requests/s",
        "requests per second the demand asks of this configuration at its peak (users / (answer time + think time), or the rate modes), time-weighted over schedule phases; null without demand",
        demand_requests_per_s
    ),
    metric!(
        "utilization",
        "fraction",
        "demand over capacity at the peak phase (null without demand)",
        utilization
    ),
    Column {
        name: "headroom",
        unit: "fraction",
        doc: "1 - utilization (null without demand)",
        kind: Kind::Metric(|r| finite(1.0 - r.estimate.utilization)),
    },
    Column {
        name: "risk",
        unit: "",
        doc: "latency risk band of the utilization: low <= 0.5, medium <= 0.75, high above (null without demand)",
        kind: Kind::Label(Labels::Risk),
    },
    metric!(
        "users_supported",
        "users",
        "concurrent users the cluster serves at the target utilization (null without demand)",
        users_supported
    ),
    Column {
        name: "demand_met",
        unit: "",
        doc: "whether every phase's demand is served at or below the target utilization with stable queues (null without demand)",
        kind: Kind::Flag(|r| r.estimate.demand_met),
    },
    Column {
        name: "meets_slo",
        unit: "",
        doc: "whether the p99 TTFT, p99 TPOT and tokens/s/user objectives of [sweep] hold (null when none is set)",
        kind: Kind::Flag(|r| r.estimate.meets_slo),
    },
    metric!(
        "ttft_p50_ms",
        "ms",
        "median time to first token at the operating load: idle prefill + queueing (G/G/c, Allen-Cunneen) + KV reload",
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
        ttft_p99_ms
    ),
    metric!(
        "ttft_p99_mmc_ms",
        "ms",
        "99th-percentile time to first token with M/M/c queueing (exponential lengths)",
        ttft_p99_mmc_ms
    ),
    metric!(
        "tpot_p99_ms",
        "ms",
        "99th-percentile time per output token at the operating load (step at the p99 batch occupancy)",
        tpot_p99_ms
    ),
    metric!(
        "kv_host_gb",
        "GB",
        "cached session context held in host memory, cluster total (null without demand)",
        kv_host_gb
    ),
    metric!(
        "kv_storage_gb",
        "GB",
        "cached session context held on networked storage, cluster total (null without demand)",
        kv_storage_gb
    ),
    metric!(
        "kv_reload_ms",
        "ms",
        "mean time to reload a resumed session's cached context before its first token (null without demand)",
        kv_reload_ms
    ),
    metric!(
        "storage_servers",
        "servers",
        "KV-offload storage servers needed for capacity and reload bandwidth (null without demand)",
        storage_servers
    ),
    metric!(
        "power_kw",
        "kW",
        "IT power at the operating load: GPUs, hosts, switches, storage",
        power_kw
    ),
    metric!(
        "facility_power_kw",
        "kW",
        "facility power: IT power x PUE",
        facility_power_kw
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
        "cost of the cluster per hour (cloud: GPU-hours; owned: amortized capex, energy, hosting, maintenance)",
        usd_per_hour
    ),
    metric!(
        "usd_per_month",
        "USD/month",
        "usd_per_hour x 730 h, paid around the clock (dedicated billing)",
        usd_per_month
    ),
    metric!(
        "usd_per_mtok",
        "USD/Mtok",
        "cost per million output tokens served (at the demand, or at capacity without demand)",
        usd_per_mtok
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
        "usd_per_month_autoscaling",
        "USD/month",
        "cloud billing for active hours only (dedicated x the traffic's active ratio; null when owned or without demand)",
        usd_per_month_autoscaling
    ),
    metric!(
        "usd_per_month_api",
        "USD/month",
        "the same demand's tokens at the per-token API prices of [cost] (null without them)",
        usd_per_month_api
    ),
];

/// The schema as a Markdown table (`| column | unit | meaning |`), for README.md and docs.
pub fn markdown_table() -> String {
    let mut out = String::from("| column | unit | meaning |\n|---|---|---|\n");
    for c in COLUMNS {
        let unit = if c.unit.is_empty() { "-" } else { c.unit };
        out.push_str(&format!("| `{}` | {unit} | {} |\n", c.name, c.doc));
    }
    out
}

/// Index of a column by name.
pub fn find(name: &str) -> Option<usize> {
    COLUMNS.iter().position(|c| c.name == name)
}

/// Names of the numeric columns (usable in objectives and constraints).
pub fn numeric_names() -> impl Iterator<Item = &'static str> {
    COLUMNS.iter().filter(|c| c.is_numeric()).map(|c| c.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_snake_case() {
        let mut seen = std::collections::HashSet::new();
        for c in COLUMNS {
            assert!(seen.insert(c.name), "duplicate column {}", c.name);
            assert!(
                c.name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
            );
        }
    }

    #[test]
    fn metric_columns_carry_their_unit_in_the_name() {
        for c in COLUMNS.iter().filter(|c| matches!(c.kind, Kind::Metric(_))) {
            let units = [
                "_ms",
                "tokens_per_s",
                "_gb",
                "_kw",
                "usd_",
                "_usd",
                "kg_",
                "_l_",
                "joules_",
                "_per_s",
                "utilization",
                "headroom",
                "users",
                "servers",
            ];
            let ok = units.iter().any(|u| c.name.contains(u));
            assert!(ok, "{} lacks a unit suffix", c.name);
        }
    }
}
