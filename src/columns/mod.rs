//! The output schemas, defined once per sweep mode: every column of the part files
//! (`configs/*.parquet`) with its unit, meaning, type and how to read it from a row. The Parquet
//! writer, the Markdown tables, objectives, constraints and the analytics all go through these
//! tables, so a column cannot exist in one place and not another.
//!
//! Rows are typed per mode ([`Row`] for inference, [`TrainRow`] for training) and implement
//! [`Record`]; code that only reads a run (objectives, analytics, reports) sees the untyped
//! [`Schema`] of the run's [`Mode`].
//!
//! Each column also says what it is ([`Role`]) and where the readers of a run show it
//! ([`Show`]: its short header, its place in `pareto.md`, in `top`/`pareto` answers and in the
//! report), so those tables are derived from the schema rather than kept as lists of names.
//! What a mode's documents say beyond its columns (workload sentences, the report's charts) is
//! its schema's [`Review`]. This module does not render anything.

/// The manifest's workload number that records `[workload] eplb`: redundant experts per
/// expert-parallel rank (`perf::ModelFacts::expert_slots`), present only when on.
pub const EPLB_KEY: &str = "eplb_redundant_experts_per_rank";
/// The manifest's workload number that records `[workload] two_batch_overlap` (1), present only
/// when on.
pub const TWO_BATCH_OVERLAP_KEY: &str = "two_batch_overlap";

/// The serving switches of `[workload]` the manifest records among its workload numbers, each
/// with its words, as `check` and reports show them after the KV admission.
const SWITCHES: [(&str, &str); 2] = [
    (
        EPLB_KEY,
        "experts balanced by EPLB (one redundant expert per expert-parallel rank)",
    ),
    (
        TWO_BATCH_OVERLAP_KEY,
        "two micro-batches overlap the MoE dispatch and combine where the engine does (SGLang, vLLM)",
    ),
];

/// The switches that are on among the workload numbers `value` gives, in words, each after
/// "; ".
pub fn switch_words(value: &dyn Fn(&str) -> f64) -> String {
    SWITCHES
        .iter()
        .filter(|(key, _)| value(key) > 0.0)
        .map(|(_, words)| format!("; {words}"))
        .collect()
}

mod inference;
mod training;

use std::sync::LazyLock;

use serde::{Deserialize, Serialize};

pub use inference::{COLUMNS, INFERENCE_REVIEW, RISK_BANDS, Row};
pub use training::{TRAINING_COLUMNS, TRAINING_REVIEW, TrainRow};

/// What a sweep evaluates, and so which schema its rows have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Serving configurations (`[sweep] mode = "inference"`, the default).
    #[default]
    Inference,
    /// Training layouts (`[sweep] mode = "training"`).
    Training,
}

impl Mode {
    pub const ALL: [Mode; 2] = [Mode::Inference, Mode::Training];

    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Inference => "inference",
            Mode::Training => "training",
        }
    }

    pub fn parse(text: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.as_str() == text)
    }
}

/// Categorical columns, dictionary-encoded in Parquet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Labels {
    Hardware,
    /// The prefill pool's GPU of a disaggregated inference configuration.
    PrefillHardware,
    Rack,
    Model,
    WeightDtype,
    KvDtype,
    Ownership,
    /// The pricing of cloud GPU-hours (null when owned).
    Pricing,
    /// Whose `[[price]]` quote prices the row (null at the catalog's list price, or owned).
    Provider,
    /// The serving engine an inference configuration runs (the `engine` axis resolved per GPU).
    Engine,
    /// Why an inference configuration cannot run.
    Reason,
    Limit,
    Risk,
    /// Number format of a training layout's linear layers.
    Precision,
    Recompute,
    /// Why a training layout cannot run.
    TrainingReason,
}

impl Labels {
    /// Labels whose values do not depend on the sweep.
    pub fn fixed_values(self) -> Option<Vec<&'static str>> {
        use crate::train::{Infeasible, Precision, Recompute};
        match self {
            Labels::Reason => Some(
                crate::perf::Reason::ALL
                    .iter()
                    .map(|r| r.as_str())
                    .collect(),
            ),
            Labels::Limit => Some(crate::perf::Limit::ALL.iter().map(|l| l.as_str()).collect()),
            Labels::Engine => Some(
                crate::vocab::ServingEngine::ALL
                    .iter()
                    .map(|e| e.as_str())
                    .collect(),
            ),
            Labels::Risk => Some(RISK_BANDS.iter().map(|(name, _)| *name).collect()),
            Labels::Pricing => Some(
                crate::vocab::Pricing::ALL
                    .iter()
                    .map(|p| p.as_str())
                    .collect(),
            ),
            Labels::Precision => Some(Precision::ALL.iter().map(|p| p.as_str()).collect()),
            Labels::Recompute => Some(Recompute::ALL.iter().map(|r| r.as_str()).collect()),
            Labels::TrainingReason => Some(Infeasible::ALL.iter().map(|r| r.as_str()).collect()),
            _ => None,
        }
    }

    /// Whether the column may be null (only the answers to "why not", "what limits" and
    /// "how risky" are, and the prefill pool's GPU of an aggregated row).
    pub fn nullable(self) -> bool {
        matches!(
            self,
            Labels::Reason
                | Labels::Limit
                | Labels::Risk
                | Labels::TrainingReason
                | Labels::Engine
                | Labels::Pricing
                | Labels::Provider
                | Labels::PrefillHardware
        )
    }
}

/// What a sweep must have for a column to hold a value in any of its rows. Where it lacks it,
/// every row is null and the writer stores no value of the column (issue 24): 21 of the 103
/// columns of a sweep without demand, SLOs, disaggregation or prices. The engine checks one
/// written row in 16 against this (a value where the need does not hold stops the run as an
/// internal error), and a test checks every row of every example sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Need {
    Always,
    /// A demand (`[workload.demand]` or a demand axis): the sizing answers.
    Demand,
    /// Any of the `[sweep]` latency or speed objectives.
    Slo,
    /// A `disagg_prefill_pct` above 0: the prefill pool's columns.
    Disaggregation,
    /// A `[[price]]` quote that prices some platform's GPU-hours.
    PriceQuotes,
    /// `[cost] usd_per_mtok_api_input` and `_output`: the per-token API bill.
    ApiPrices,
}

impl Need {
    pub const ALL: [Need; 6] = [
        Need::Always,
        Need::Demand,
        Need::Slo,
        Need::Disaggregation,
        Need::PriceQuotes,
        Need::ApiPrices,
    ];

    /// When a sweep lacks it, as docs/schema.md's "null when" says; `None` for `Always`.
    pub fn lacking(self) -> Option<&'static str> {
        match self {
            Need::Always => None,
            Need::Demand => Some("without a demand"),
            Need::Slo => Some("without SLOs"),
            Need::Disaggregation => Some("when aggregated"),
            Need::PriceQuotes => Some("without a [[price]] quote"),
            Need::ApiPrices => Some("without API prices"),
        }
    }
}

/// How a column's values are read from a row of type `R`. Numeric accessors return `None`
/// (null) where the quantity does not apply.
pub enum Kind<R> {
    Id(fn(&R) -> u64),
    Label(Labels),
    Count(fn(&R) -> Option<u32>),
    Metric(fn(&R) -> Option<f64>),
    /// A yes/no answer, null where the question does not apply.
    Flag(fn(&R) -> Option<bool>),
}

impl<R: Record> Kind<R> {
    /// Whether the column is not null in `row`.
    pub fn has_value(self, row: &R, labels: &LabelValues) -> bool {
        match self {
            Kind::Id(_) => true,
            Kind::Label(l) => row.label_key(l, labels).is_some(),
            Kind::Count(f) => f(row).is_some(),
            Kind::Metric(f) => f(row).is_some(),
            Kind::Flag(f) => f(row).is_some(),
        }
    }
}

impl<R> Clone for Kind<R> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<R> Copy for Kind<R> {}

/// What a column is, for the readers that choose columns by what they are rather than by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The row's index in the grid (`config_id`).
    Id,
    /// What the cluster is built of: the GPU and rack presets.
    Platform,
    /// What is served or trained: the model and, in inference, the workload axes' values (the
    /// same in every row of one workload).
    Workload,
    /// The configuration's layout and size: the grid's axes and the sizes they set. Report
    /// tables lead with these (and the id and platform), in file order.
    Layout,
    /// Counts that follow from the layout (instances, microbatches), shown only where a table
    /// asks for them.
    Detail,
    /// Whether and why a row can run, and what bounds it.
    Status,
    /// A yes/no requirement of the sweep, null where the sweep does not set it: a feasible row
    /// is admitted only where it is not false. `set_by` names what the sweep sets ("demand"),
    /// `missed` the failure ("demand not met").
    Requirement {
        set_by: &'static str,
        missed: &'static str,
    },
    /// A quantity the model predicts.
    Metric,
}

/// When the frontier table (`pareto.md`) shows a column it places.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    Always,
    /// When the sweep's grid gives the named axis more than one value.
    Varies(&'static str),
    /// When the sweep's grid gives the named axis a value other than 0 (a serving mode that is
    /// off at 0).
    Nonzero(&'static str),
    /// When the sweep's grid names a value of the named categorical axis other than its
    /// default (`prefill_hardware` other than `"same"`).
    Named(&'static str),
    /// When the frontier's rows answer the named yes/no column (it is not null: the sweep sets
    /// what the column asks).
    Answered(&'static str),
}

/// A column's place among the frontier table's leading columns: tables sort by `rank`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    pub rank: u8,
    pub when: When,
}

/// Where the readers of a run show a column besides the Parquet files, and its short header.
/// Built with its `const` methods from [`Show::NONE`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Show {
    /// Header in review tables (`pareto.md`); "" means the name.
    pub header: &'static str,
    /// `top` and `pareto` answers lead with it (in file order), before the columns a query
    /// names.
    pub brief: bool,
    /// Its place in `pareto.md`'s table, before the objectives and constraints.
    pub frontier: Option<Place>,
    /// Its rank among the answer columns every report table leads with, after the row's id,
    /// workload and platform and before its layout: what the run's mode makes the answer (cost,
    /// racks, days, the SLO columns). A layout column with a rank moves to the front.
    pub report: Option<u8>,
    /// The report follows the best configuration at each of the column's values, under this
    /// title ("batch size"), in file order.
    pub follow: Option<&'static str>,
}

impl Show {
    /// Shown nowhere but in the Parquet files (and where a query names it).
    pub const NONE: Show = Show {
        header: "",
        brief: false,
        frontier: None,
        report: None,
        follow: None,
    };

    pub const fn header(self, header: &'static str) -> Show {
        Show { header, ..self }
    }

    pub const fn brief(self) -> Show {
        Show {
            brief: true,
            ..self
        }
    }

    /// Always in the frontier table, at `rank`.
    pub const fn frontier(self, rank: u8) -> Show {
        self.frontier_when(rank, When::Always)
    }

    pub const fn frontier_when(self, rank: u8, when: When) -> Show {
        Show {
            frontier: Some(Place { rank, when }),
            ..self
        }
    }

    pub const fn report(self, rank: u8) -> Show {
        Show {
            report: Some(rank),
            ..self
        }
    }

    pub const fn follow(self, title: &'static str) -> Show {
        Show {
            follow: Some(title),
            ..self
        }
    }
}

pub struct Column<R> {
    pub name: &'static str,
    /// Unit, or "" for identifiers and labels.
    pub unit: &'static str,
    pub doc: &'static str,
    /// What a sweep must have for the column to hold any value.
    pub need: Need,
    pub kind: Kind<R>,
    pub role: Role,
    pub show: Show,
}

/// The column that says why a configuration cannot run, null when it can (both modes).
pub const REASON_COLUMN: &str = "infeasible_reason";

/// The columns every run begins with, inference and training alike: the configuration's index
/// in the grid, then the platform it runs on.
pub const fn config_id_column<R: Record>() -> Column<R> {
    Column {
        name: "config_id",
        unit: "",
        doc: "index of the configuration in the sweep's grid (0-based; stable for a given sweep file)",
        need: Need::Always,
        kind: Kind::Id(R::config_id),
        role: Role::Id,
        show: Show::NONE.brief(),
    }
}

/// See [`config_id_column`].
pub const fn hardware_column<R: Record>() -> Column<R> {
    Column {
        name: "hardware",
        unit: "",
        doc: "GPU preset id",
        need: Need::Always,
        kind: Kind::Label(Labels::Hardware),
        role: Role::Platform,
        show: Show::NONE.brief().frontier(1),
    }
}

/// See [`config_id_column`].
pub const fn rack_column<R: Record>() -> Column<R> {
    Column {
        name: "rack",
        unit: "",
        doc: "rack preset id",
        need: Need::Always,
        kind: Kind::Label(Labels::Rack),
        role: Role::Platform,
        show: Show::NONE.frontier(2),
    }
}

impl<R> Column<R> {
    /// The value as a number, for objectives and constraints; `None` for labels and nulls.
    pub fn number(&self, row: &R) -> Option<f64> {
        match self.kind {
            Kind::Id(f) => Some(f(row) as f64),
            Kind::Count(f) => f(row).map(f64::from),
            Kind::Metric(f) => f(row),
            Kind::Label(_) | Kind::Flag(_) => None,
        }
    }

    fn info(&self) -> Info {
        Info {
            name: self.name,
            unit: self.unit,
            doc: self.doc,
            ty: match self.kind {
                Kind::Id(_) => Type::Id,
                Kind::Label(l) => Type::Label(l),
                Kind::Count(_) => Type::Count,
                Kind::Metric(_) => Type::Metric,
                Kind::Flag(_) => Type::Flag,
            },
            role: self.role,
            show: self.show,
            need: self.need,
        }
    }
}

/// A row of one sweep mode: what the engine evaluates, the writer encodes and the frontier
/// keeps.
pub trait Record: Copy + Default + Send + Sync + 'static {
    const MODE: Mode;
    /// Infeasible reasons, in the order of [`Record::reason`]'s index.
    const REASONS: usize;

    /// Every output column, in file order.
    fn columns() -> &'static [Column<Self>];

    fn config_id(&self) -> u64;

    /// Dictionary key of the row's value of a label column, `None` when null.
    fn label_key(&self, labels: Labels, values: &LabelValues) -> Option<u16>;

    /// Index of the reason the row cannot run, `None` when it can.
    fn reason(&self) -> Option<usize>;

    fn reason_name(index: usize) -> &'static str;

    /// Whether the row may enter a frontier before constraints: feasible, and meeting the
    /// demand and SLOs where the sweep sets them.
    fn admitted(&self) -> bool;

    /// The frontier the row belongs to: rows of different groups (an inference sweep's
    /// workloads) never dominate one another.
    fn group(&self) -> u32 {
        0
    }

    fn feasible(&self) -> bool {
        self.reason().is_none()
    }
}

/// The type of a column, without its accessor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Type {
    Id,
    Label(Labels),
    Count,
    Metric,
    Flag,
}

/// A column as a reader of the Parquet sees it.
#[derive(Debug, Clone, Copy)]
pub struct Info {
    pub name: &'static str,
    pub unit: &'static str,
    pub doc: &'static str,
    pub ty: Type,
    pub role: Role,
    pub show: Show,
    pub need: Need,
}

impl Info {
    /// The column's short header in review tables.
    pub fn header(&self) -> &'static str {
        if self.show.header.is_empty() {
            self.name
        } else {
            self.show.header
        }
    }

    /// Whether the column says which configuration a row is: its id, workload, platform or
    /// layout.
    pub fn identifies(&self) -> bool {
        matches!(
            self.role,
            Role::Id | Role::Workload | Role::Platform | Role::Layout
        )
    }

    pub fn is_numeric(&self) -> bool {
        matches!(self.ty, Type::Id | Type::Count | Type::Metric)
    }

    pub fn nullable(&self) -> bool {
        match self.ty {
            Type::Id => false,
            Type::Label(l) => l.nullable(),
            Type::Count | Type::Metric | Type::Flag => true,
        }
    }
}

/// A run's workload numbers by key (`Sweep::workload`, the manifest's `workload`).
pub type Workload<'a> = &'a dyn Fn(&str) -> f64;

/// What a mode's review documents (`pareto.md`, the report) say about its rows besides what
/// the columns say.
#[derive(Debug)]
pub struct Review {
    /// The workload in `pareto.md`, after "model: <id>, ".
    pub workload_line: fn(Workload) -> String,
    /// The workload in words, in the report's summary; with the run's KV admission policy.
    pub workload_words: fn(Workload, Option<&str>) -> String,
    /// What every admitted row does, to follow "configurations that".
    pub admitted: &'static str,
    /// The columns the report follows ([`Show::follow`]), in words.
    pub follows: &'static str,
    /// The report's charts: a title, two objectives (x, then y) drawn per hardware, and what
    /// a reader should see in it (the caption's first sentences).
    pub trades: &'static [(&'static str, &'static str, &'static str, &'static str)],
    /// The report's first table: the best admitted configuration by `cheapest` (an objective)
    /// for every combination of the values of the `compare` columns, one row each.
    pub compare: &'static [&'static str],
    pub cheapest: &'static str,
}

/// The columns of one mode's rows, untyped, and what its documents say of them.
#[derive(Debug)]
pub struct Schema {
    pub mode: Mode,
    pub columns: Vec<Info>,
    pub review: &'static Review,
}

static SCHEMAS: LazyLock<[Schema; 2]> = LazyLock::new(|| {
    [
        Schema::of(Mode::Inference, COLUMNS, &INFERENCE_REVIEW),
        Schema::of(Mode::Training, TRAINING_COLUMNS, &TRAINING_REVIEW),
    ]
});

impl Schema {
    fn of<R>(mode: Mode, columns: &[Column<R>], review: &'static Review) -> Schema {
        Schema {
            mode,
            columns: columns.iter().map(Column::info).collect(),
            review,
        }
    }

    /// Names of the columns `keep` selects, in file order.
    pub fn names<'a>(
        &'a self,
        keep: impl Fn(&Info) -> bool + 'a,
    ) -> impl Iterator<Item = &'static str> + 'a {
        self.columns.iter().filter(move |c| keep(c)).map(|c| c.name)
    }

    /// The yes/no requirements a feasible row must not fail, in file order: each column's
    /// index, what sets it and what failing it is called.
    pub fn requirements(&self) -> impl Iterator<Item = (usize, &'static str, &'static str)> + '_ {
        self.columns
            .iter()
            .enumerate()
            .filter_map(|(i, c)| match c.role {
                Role::Requirement { set_by, missed } => Some((i, set_by, missed)),
                _ => None,
            })
    }

    pub fn get(mode: Mode) -> &'static Schema {
        &SCHEMAS[mode as usize]
    }

    /// Index of a column by name.
    pub fn find(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }

    /// Names of the numeric columns (usable in objectives and constraints).
    pub fn numeric_names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.columns
            .iter()
            .filter(|c| c.is_numeric())
            .map(|c| c.name)
    }

    /// The schema as a Markdown table (`| column | unit | meaning |`), for README.md and docs.
    pub fn markdown_table(&self) -> String {
        let mut out = String::from("| column | unit | meaning |\n|---|---|---|\n");
        for c in &self.columns {
            let unit = if c.unit.is_empty() { "-" } else { c.unit };
            out.push_str(&format!("| `{}` | {unit} | {} |\n", c.name, c.doc));
        }
        out
    }
}

/// Values of the sweep-dependent label columns, and the key each grid entry maps to.
#[derive(Debug, Clone, Default)]
pub struct LabelValues {
    pub hardware: Vec<String>,
    /// Hardware key per grid platform.
    pub hardware_key: Vec<u16>,
    /// The prefill pools' GPU ids: `hardware`, then the `prefill_hardware` axis's other GPUs.
    pub prefill_hardware: Vec<String>,
    /// Key into `prefill_hardware` per entry of the `prefill_hardware` axis; `None` for
    /// `"same"` (the row's own hardware key).
    pub prefill_hardware_key: Vec<Option<u16>>,
    pub rack: Vec<String>,
    pub rack_key: Vec<u16>,
    /// The sweep's model ids, each once (in catalog order).
    pub models: Vec<String>,
    pub weight_dtype: Vec<String>,
    /// Key per entry of the `weight_dtype` axis.
    pub weight_dtype_key: Vec<u16>,
    pub kv_dtype: Vec<String>,
    /// Key per entry of the `kv_dtype` axis.
    pub kv_dtype_key: Vec<u16>,
    pub ownership: Vec<String>,
    /// Ownership key per entry of the ownership axis.
    pub ownership_key: Vec<u16>,
    /// Pricing (index into `Pricing::ALL`) per entry of the ownership axis; `None` when owned.
    pub pricing_key: Vec<Option<u16>>,
    /// Providers of the sweep's `[[price]]` quotes, in file order.
    pub provider: Vec<String>,
    /// The provider whose quote prices each platform at each entry of the ownership axis, at
    /// `platform x pricing_key.len() + entry`; `None` at a catalog price or when owned.
    pub provider_key: Vec<Option<u16>>,
    /// The serving engine (index into `ServingEngine::ALL`) each platform runs for each entry of
    /// the engine axis, at `platform x engines + engine`; `None` where it does not run.
    pub engine_key: Vec<Option<u16>>,
    /// Entries of the engine axis.
    pub engines: usize,
}

impl LabelValues {
    /// Dictionary values of a label column.
    pub fn values(&self, labels: Labels) -> Vec<String> {
        match labels {
            Labels::Hardware => self.hardware.clone(),
            Labels::PrefillHardware => self.prefill_hardware.clone(),
            Labels::Rack => self.rack.clone(),
            Labels::Model => self.models.clone(),
            Labels::WeightDtype => self.weight_dtype.clone(),
            Labels::KvDtype => self.kv_dtype.clone(),
            Labels::Ownership => self.ownership.clone(),
            Labels::Provider => self.provider.clone(),
            _ => labels
                .fixed_values()
                .unwrap_or_default()
                .into_iter()
                .map(String::from)
                .collect(),
        }
    }

    /// A row's label as text, "" when null.
    pub fn text<R: Record>(&self, labels: Labels, row: &R) -> String {
        let Some(key) = row.label_key(labels, self) else {
            return String::new();
        };
        self.values(labels).swap_remove(key as usize)
    }
}

#[cfg(test)]
impl LabelValues {
    /// Labels for tests: `hardware`, platform `p` keyed `hardware_key[p]`, and one value of
    /// every other label (one entry of each axis: bf16, cloud on demand, the first engine).
    pub fn for_tests(hardware: &[&str], hardware_key: Vec<u16>) -> LabelValues {
        let platforms = hardware_key.len();
        let ids: Vec<String> = hardware.iter().map(|h| h.to_string()).collect();
        LabelValues {
            hardware: ids.clone(),
            hardware_key,
            prefill_hardware: ids,
            prefill_hardware_key: vec![None],
            rack: vec!["r".into()],
            rack_key: vec![0; platforms],
            models: vec!["m".into()],
            weight_dtype: vec!["bf16".into()],
            weight_dtype_key: vec![0],
            kv_dtype: vec!["bf16".into()],
            kv_dtype_key: vec![0],
            ownership: vec!["cloud".into()],
            ownership_key: vec![0],
            pricing_key: vec![Some(0)],
            provider: Vec::new(),
            provider_key: vec![None; platforms],
            engine_key: vec![Some(0); platforms],
            engines: 1,
        }
    }
}

pub fn finite(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}

pub fn nonzero(v: u32) -> Option<u32> {
    (v > 0).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A column a sweep can lack the need of is written as nulls in every row, so its type must
    /// allow a null.
    #[test]
    fn columns_with_a_need_are_nullable() {
        for mode in Mode::ALL {
            for c in &Schema::get(mode).columns {
                assert!(c.need == Need::Always || c.nullable(), "{}", c.name);
            }
        }
    }

    #[test]
    fn names_are_unique_snake_case() {
        for mode in Mode::ALL {
            let mut seen = std::collections::HashSet::new();
            for c in &Schema::get(mode).columns {
                assert!(seen.insert(c.name), "duplicate column {}", c.name);
                assert!(
                    c.name
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
                );
            }
        }
    }

    #[test]
    fn metric_columns_carry_their_unit_in_the_name() {
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
            "_per_month",
            "utilization",
            // A fraction of a link's bandwidth (scaleup_util, scaleout_util).
            "_util",
            "headroom",
            "users",
            "servers",
            // Requests held by an instance: a count.
            "occupancy",
            "_s",
            "_pct",
            "_days",
            "_hours",
            "_per_gpu",
            "mwh_",
            "_min",
            // Mean lengths in tokens, and a demand per day.
            "_tokens",
            "_per_day",
            // A dimensionless factor.
            "_scale",
        ];
        for mode in Mode::ALL {
            for c in Schema::get(mode)
                .columns
                .iter()
                .filter(|c| c.ty == Type::Metric)
            {
                let ok = units.iter().any(|u| c.name.contains(u));
                assert!(ok, "{} lacks a unit suffix", c.name);
            }
        }
    }

    /// The places a column takes in the review tables are distinct, and every column a
    /// [`When`] or a [`Role::Requirement`] relies on exists with the type it reads.
    #[test]
    fn places_are_distinct_and_conditions_name_columns() {
        for mode in Mode::ALL {
            let s = Schema::get(mode);
            let column = |name: &str| {
                let i = s
                    .find(name)
                    .unwrap_or_else(|| panic!("{mode:?} lacks {name}"));
                &s.columns[i]
            };
            let (mut frontier, mut report) = (Vec::new(), Vec::new());
            for c in &s.columns {
                if let Some(p) = c.show.frontier {
                    assert!(!frontier.contains(&p.rank), "{}: rank {}", c.name, p.rank);
                    frontier.push(p.rank);
                    match p.when {
                        When::Always => {}
                        When::Varies(axis) | When::Named(axis) => {
                            assert_eq!(column(axis).role, Role::Layout)
                        }
                        When::Nonzero(axis) => {
                            let a = column(axis);
                            assert!(a.role == Role::Layout && a.ty == Type::Count, "{axis}");
                        }
                        When::Answered(flag) => assert_eq!(column(flag).ty, Type::Flag),
                    }
                }
                if let Some(rank) = c.show.report {
                    assert!(!report.contains(&rank), "{}: rank {rank}", c.name);
                    report.push(rank);
                }
                if c.show.follow.is_some() {
                    assert_eq!(c.role, Role::Layout, "{}", c.name);
                }
                if let Role::Requirement { .. } = c.role {
                    assert_eq!(c.ty, Type::Flag, "{}", c.name);
                }
            }
        }
    }

    /// The axes a [`When`] names are axes of the sweeps of its mode, with numbers where it
    /// reads them.
    #[test]
    fn conditions_name_axes() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        for file in ["sweeps/quickstart.toml", "tests/specs/training-small.toml"] {
            let sweep = crate::spec::load(&root.join(file), u64::MAX).unwrap();
            let axes: Vec<&str> = sweep.axes().into_iter().map(|(name, _)| name).collect();
            for c in &Schema::get(sweep.mode()).columns {
                if let Some(Place {
                    when: When::Varies(axis) | When::Nonzero(axis) | When::Named(axis),
                    ..
                }) = c.show.frontier
                {
                    assert!(axes.contains(&axis), "{file}: {axis} is no axis");
                }
                if let Some(Place {
                    when: When::Nonzero(axis),
                    ..
                }) = c.show.frontier
                {
                    assert!(sweep.count_values(axis).is_some(), "{file}: {axis}");
                }
            }
        }
    }

    /// The report's charts are objectives of their schema.
    #[test]
    fn review_trades_are_objectives() {
        for mode in Mode::ALL {
            let s = Schema::get(mode);
            for (title, x, y, _) in s.review.trades {
                for o in [x, y] {
                    assert!(
                        crate::pareto::Objective::parse(o, s).is_ok(),
                        "{title}: {o}"
                    );
                }
            }
            assert!(crate::pareto::Objective::parse(s.review.cheapest, s).is_ok());
            for c in s.review.compare {
                let c = s.find(c).map(|i| s.columns[i].ty);
                assert!(
                    matches!(c, Some(Type::Label(_) | Type::Id | Type::Count)),
                    "{c:?}"
                );
            }
        }
    }

    /// Both schemas start with the columns every run has, so the analytics can rely on them.
    #[test]
    fn common_columns() {
        for mode in Mode::ALL {
            let s = Schema::get(mode);
            for name in [
                "config_id",
                "hardware",
                "rack",
                "model",
                "racks",
                "gpus",
                "feasible",
                "infeasible_reason",
            ] {
                assert!(s.find(name).is_some(), "{mode:?} lacks {name}");
            }
        }
    }
}
