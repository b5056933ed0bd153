//! The training schema: every column of a training run's rows, read from a [`TrainRow`].

use super::{
    Column, Kind, LabelValues, Labels, Mode, Need, REASON_COLUMN, Record, Review, Role, Show, When,
    Workload, config_id_column, finite, hardware_column, nonzero, rack_column,
};
use crate::format::number;
use crate::train::grid::TrainPoint;
use crate::train::{Estimate, Infeasible, Precision, Recompute};

/// One evaluated training layout: its grid index, axis values, the cluster it fills and the
/// model's estimate (zeros past the point where an infeasible layout stopped).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct TrainRow {
    pub config_id: u64,
    pub point: TrainPoint,
    /// Racks in the cluster (given, or those the GPUs need).
    pub racks: u32,
    /// Data-parallel replicas (given, or filling the racks; 0 when they do not divide).
    pub dp: u32,
    pub recompute: Recompute,
    pub precision: Precision,
    pub estimate: Estimate,
    pub reason: Option<Infeasible>,
}

impl TrainRow {
    /// The value where the layout can train, null where it cannot.
    fn ok(&self, v: f64) -> Option<f64> {
        if self.reason.is_some() {
            return None;
        }
        finite(v)
    }
}

impl Record for TrainRow {
    const MODE: Mode = Mode::Training;
    const REASONS: usize = Infeasible::ALL.len();

    fn columns() -> &'static [Column<TrainRow>] {
        TRAINING_COLUMNS
    }

    fn config_id(&self) -> u64 {
        self.config_id
    }

    fn label_key(&self, labels: Labels, values: &LabelValues) -> Option<u16> {
        let p = &self.point;
        match labels {
            Labels::Hardware => Some(values.hardware_key[p.platform as usize]),
            Labels::Rack => Some(values.rack_key[p.platform as usize]),
            Labels::Model => Some(0),
            Labels::Ownership => Some(values.ownership_key[p.ownership as usize]),
            Labels::Precision => Some(self.precision as u16),
            Labels::Recompute => Some(self.recompute as u16),
            Labels::TrainingReason => self.reason.map(|r| r as u16),
            Labels::WeightDtype
            | Labels::KvDtype
            | Labels::Reason
            | Labels::Limit
            | Labels::Risk
            | Labels::Engine
            | Labels::Pricing
            | Labels::Provider
            | Labels::PrefillHardware => None,
        }
    }

    fn reason(&self) -> Option<usize> {
        self.reason.map(|r| r as usize)
    }

    fn reason_name(index: usize) -> &'static str {
        Infeasible::ALL[index].as_str()
    }

    fn admitted(&self) -> bool {
        self.reason.is_none()
    }
}

/// A metric of a layout that can train (null where it cannot), shown nowhere unless `show` says.
macro_rules! metric {
    ($name:literal, $unit:literal, $doc:literal, |$e:ident| $value:expr) => {
        metric!($name, $unit, $doc, |$e| $value, Show::NONE)
    };
    ($name:literal, $unit:literal, $doc:literal, |$e:ident| $value:expr, $show:expr) => {
        Column {
            name: $name,
            unit: $unit,
            doc: $doc,
            need: Need::Always,
            kind: Kind::Metric(|r| {
                let $e = &r.estimate;
                r.ok($value)
            }),
            role: Role::Metric,
            show: $show,
        }
    };
}

/// A count of the layout, never null.
macro_rules! count {
    ($name:literal, $unit:literal, $doc:literal, |$r:ident| $value:expr) => {
        count!($name, $unit, $doc, |$r| $value, Show::NONE)
    };
    ($name:literal, $unit:literal, $doc:literal, |$r:ident| $value:expr, $show:expr) => {
        Column {
            name: $name,
            unit: $unit,
            doc: $doc,
            need: Need::Always,
            kind: Kind::Count(|$r| Some($value)),
            role: Role::Layout,
            show: $show,
        }
    };
}

/// Every column of a training run, in file order.
pub static TRAINING_COLUMNS: &[Column<TrainRow>] = &[
    config_id_column(),
    hardware_column(),
    rack_column(),
    Column {
        name: "model",
        unit: "",
        doc: "model preset id",
        need: Need::Always,
        kind: Kind::Label(Labels::Model),
        role: Role::Workload,
        show: Show::NONE,
    },
    count!(
        "racks",
        "racks",
        "racks in the cluster: the grid's, or with a dp axis the fewest that hold tp x pp x cp x dp GPUs",
        |r| r.racks,
        Show::NONE.frontier(3).report(3)
    ),
    count!(
        "gpus",
        "GPUs",
        "GPUs the job trains on, tp x pp x cp x dp (with a racks axis: every GPU of the racks)",
        |r| r.estimate.gpus,
        Show::NONE
            .brief()
            .header("GPUs")
            .frontier(4)
            .report(4)
            .follow("cluster size")
    ),
    count!(
        "tp",
        "GPUs",
        "tensor-parallel degree (with sequence parallelism)",
        |r| r.point.tp,
        Show::NONE.brief().frontier(5).follow("tensor parallelism")
    ),
    count!(
        "pp",
        "stages",
        "pipeline-parallel stages",
        |r| r.point.pp,
        Show::NONE.brief().frontier(6).follow("pipeline stages")
    ),
    Column {
        name: "dp",
        unit: "replicas",
        doc: "data-parallel replicas: the grid's, or GPUs / (tp x pp x cp) with a racks axis (null when that is not whole)",
        need: Need::Always,
        kind: Kind::Count(|r| nonzero(r.dp)),
        role: Role::Layout,
        show: Show::NONE.brief().frontier(7),
    },
    count!(
        "cp",
        "GPUs",
        "context-parallel degree (ring attention over 2 x cp sequence chunks)",
        |r| r.point.cp,
        Show::NONE.brief().frontier(8)
    ),
    count!(
        "ep",
        "GPUs",
        "expert-parallel degree, carved out of dp x cp (Megatron-Core's convention)",
        |r| r.point.ep,
        Show::NONE.brief().frontier(9)
    ),
    count!(
        "microbatch",
        "sequences",
        "sequences per microbatch",
        |r| r.point.microbatch,
        Show::NONE.brief().frontier(10)
    ),
    count!(
        "virtual_stages",
        "chunks",
        "model chunks per pipeline stage (interleaved 1F1B); 1 = plain 1F1B",
        |r| r.point.virtual_stages,
        Show::NONE.brief().header("virtual stages").frontier(11)
    ),
    Column {
        name: "microbatches",
        unit: "microbatches",
        doc: "microbatches per pipeline per step, global batch / (dp x microbatch) (null when the split is invalid)",
        need: Need::Always,
        kind: Kind::Count(|r| nonzero(r.estimate.microbatches)),
        role: Role::Detail,
        show: Show::NONE,
    },
    count!(
        "zero_stage",
        "stage",
        "ZeRO stage: 0 none, 1 optimizer states, 2 + gradients, 3 + weights sharded over dp",
        |r| r.point.zero_stage,
        Show::NONE
            .brief()
            .header("ZeRO")
            .frontier(12)
            .follow("ZeRO stage")
    ),
    Column {
        name: "recompute",
        unit: "",
        doc: "activation recomputation: none, selective (attention core) or full (whole layers)",
        need: Need::Always,
        kind: Kind::Label(Labels::Recompute),
        role: Role::Layout,
        show: Show::NONE.brief().frontier(13).follow("recomputation"),
    },
    Column {
        name: "precision",
        unit: "",
        doc: "number format of the linear layers: bf16, or fp8 with bf16 master weights",
        need: Need::Always,
        kind: Kind::Label(Labels::Precision),
        role: Role::Layout,
        show: Show::NONE.brief().frontier(14).follow("precision"),
    },
    Column {
        name: "ownership",
        unit: "",
        doc: "how the hardware is paid for: cloud (rented per GPU-hour) or owned (capex and opex)",
        need: Need::Always,
        kind: Kind::Label(Labels::Ownership),
        role: Role::Layout,
        show: Show::NONE
            .brief()
            .frontier_when(15, When::Varies("ownership")),
    },
    Column {
        name: "feasible",
        unit: "",
        doc: "whether the layout can train: a valid split that fits in memory",
        need: Need::Always,
        kind: Kind::Flag(|r| Some(r.reason.is_none())),
        role: Role::Status,
        show: Show::NONE,
    },
    Column {
        name: REASON_COLUMN,
        unit: "",
        doc: "why the layout cannot train (null when it can)",
        need: Need::Always,
        kind: Kind::Label(Labels::TrainingReason),
        role: Role::Status,
        show: Show::NONE,
    },
    Column {
        name: "hbm_used_gb_per_gpu",
        unit: "GB",
        doc: "memory of the busiest GPU: weights, gradients, optimizer states, activations and logits (also when it does not fit; null when the split is invalid)",
        need: Need::Always,
        kind: Kind::Metric(|r| {
            let e = &r.estimate;
            (e.microbatches > 0).then_some(e.hbm_used_gb_per_gpu)
        }),
        role: Role::Metric,
        show: Show::NONE.header("HBM/GPU (GB)").frontier(18).report(8),
    },
    Column {
        name: "hbm_state_gb_per_gpu",
        unit: "GB",
        doc: "weights, gradients and optimizer states on the busiest GPU, per ZeRO stage",
        need: Need::Always,
        kind: Kind::Metric(|r| {
            let e = &r.estimate;
            (e.microbatches > 0).then_some(e.memory.state_bytes / 1e9)
        }),
        role: Role::Metric,
        show: Show::NONE,
    },
    Column {
        name: "hbm_activations_gb_per_gpu",
        unit: "GB",
        doc: "activations (and logits) of the microbatches in flight on the busiest GPU",
        need: Need::Always,
        kind: Kind::Metric(|r| {
            let e = &r.estimate;
            (e.microbatches > 0).then_some((e.memory.activation_bytes + e.memory.logit_bytes) / 1e9)
        }),
        role: Role::Metric,
        show: Show::NONE,
    },
    metric!(
        "step_time_s",
        "s",
        "one optimizer step: microbatches, pipeline bubble, exposed data-parallel traffic and the optimizer",
        |e| e.step.step_s,
        Show::NONE.header("step (s)").frontier(16).report(6)
    ),
    metric!(
        "microbatch_s",
        "s",
        "one microbatch's forward and backward pass on the busiest stage",
        |e| e.step.microbatch_s
    ),
    metric!(
        "bubble_pct",
        "%",
        "share of the step spent in pipeline fill and drain",
        |e| 100.0 * e.step.bubble_s / e.step.step_s
    ),
    metric!(
        "exposed_comm_pct",
        "%",
        "share of the step spent in communication not hidden behind compute (tp, cp, ep, pp and dp)",
        |e| 100.0
            * ((e.step.tp_comm_s + e.step.cp_comm_s + e.step.ep_comm_s + e.step.pp_comm_s)
                * f64::from(e.microbatches)
                + e.step.dp_exposed_s)
            / e.step.step_s
    ),
    metric!(
        "training_tokens_per_s",
        "tokens/s",
        "tokens trained per second by the whole job",
        |e| e.training_tokens_per_s
    ),
    metric!(
        "model_tflops_per_gpu",
        "TFLOP/s",
        "model FLOPs (6 x active parameters x tokens plus attention, Narayanan et al. 2021 Eq. 3) per second per GPU",
        |e| e.model_tflops_per_gpu
    ),
    metric!(
        "hardware_tflops_per_gpu",
        "TFLOP/s",
        "FLOPs executed, recomputation included, per second per GPU",
        |e| e.hardware_tflops_per_gpu
    ),
    metric!(
        "mfu_pct",
        "%",
        "model FLOPs utilization: model FLOP/s over the GPU's dense BF16 peak",
        |e| e.mfu_pct,
        Show::NONE.header("MFU (%)").frontier(17).report(5)
    ),
    metric!(
        "hfu_pct",
        "%",
        "hardware FLOPs utilization: executed FLOP/s over the dense BF16 peak",
        |e| e.hfu_pct
    ),
    metric!(
        "time_to_train_days",
        "days",
        "days to train workload.train_tokens without failures",
        |e| e.time_to_train_days
    ),
    metric!(
        "gpu_hours",
        "GPU-hours",
        "GPU-hours to train without failures",
        |e| e.gpu_hours
    ),
    metric!(
        "job_mtbf_hours",
        "hours",
        "mean time between failures of the whole job (Llama 3 interruption rate per GPU)",
        |e| e.reliability.job_mtbf_hours
    ),
    metric!(
        "checkpoint_interval_min",
        "minutes",
        "time between checkpoints that minimizes lost work (Young/Daly), from the checkpoint size over storage bandwidth",
        |e| e.reliability.checkpoint_interval_s / 60.0
    ),
    metric!(
        "goodput_pct",
        "%",
        "share of wall time that advances training (checkpoints, lost work and restarts excluded)",
        |e| 100.0 * e.reliability.goodput,
        Show::NONE.header("goodput (%)").report(7)
    ),
    metric!(
        "effective_time_to_train_days",
        "days",
        "days to train with failures, checkpoints and restarts",
        |e| e.effective_time_to_train_days,
        Show::NONE
            .header("days (with failures)")
            .frontier(19)
            .report(1)
    ),
    metric!(
        "facility_power_kw",
        "kW",
        "facility power while training (IT power x PUE)",
        |e| e.facility_power_kw,
        Show::NONE.header("facility (kW)").report(9)
    ),
    metric!(
        "mwh_per_run",
        "MWh",
        "facility energy of the whole run, failures included",
        |e| e.mwh_per_run,
        Show::NONE.header("MWh/run").frontier(21).report(10)
    ),
    metric!(
        "kg_co2e_per_run",
        "kg CO2e",
        "emissions of that energy at the sweep's grid intensity",
        |e| e.kg_co2e_per_run
    ),
    metric!(
        "usd_per_run",
        "USD",
        "cost of the whole run, failures included, for the ownership model",
        |e| e.usd_per_run,
        Show::NONE.header("USD/run").frontier(20).report(2)
    ),
];

/// What the review documents say of a training run besides its columns.
pub static TRAINING_REVIEW: Review = Review {
    workload_line: |w| {
        format!(
            "trained on {} tokens in steps of {} sequences of {} tokens",
            number(w("train_tokens")),
            number(w("global_batch_seqs")),
            number(w("seq_len"))
        )
    },
    workload_words,
    admitted: "can train (a valid split that fits in memory)",
    follows: "a size, layout or precision axis",
    // What finishing sooner takes: money, GPUs, or site power (the one budget that compares
    // hardware fairly: a GPU of one kind is not a GPU of another).
    trades: &[
        (
            "Time against cost",
            "min usd_per_run",
            "min effective_time_to_train_days",
            "Down and to the left is better: the leftmost point is the cheapest run, the lowest \
             the fastest; the slope between them is what each day saved costs.",
        ),
        (
            "Time against cluster size",
            "min gpus",
            "min effective_time_to_train_days",
            "How many GPUs each day saved takes: where a line flattens, more GPUs stop \
             shortening the run (communication and pipeline bubbles grow).",
        ),
        (
            "Time against facility power",
            "min facility_power_kw",
            "min effective_time_to_train_days",
            "The site power each finishing time needs: the budget that compares hardware \
             fairly, since a GPU of one kind is not a GPU of another.",
        ),
    ],
    compare: &["hardware", "ownership"],
    cheapest: "min usd_per_run",
};

fn workload_words(w: Workload, _kv_admission: Option<&str>) -> String {
    let steps = w("train_tokens") / w("global_batch_tokens");
    let about = if steps.fract() == 0.0 { "" } else { "about " };
    format!(
        "{} tokens to train: {about}{} optimizer steps of {} sequences of {} tokens",
        number(w("train_tokens")),
        number(steps),
        number(w("global_batch_seqs")),
        number(w("seq_len"))
    )
}
