//! The output schemas, defined once per sweep mode: every column of the part files
//! (`configs/*.parquet`) with its unit, meaning, type and how to read it from a row. The Parquet
//! writer, the Markdown tables, objectives, constraints and the analytics all go through these
//! tables, so a column cannot exist in one place and not another.
//!
//! Rows are typed per mode ([`Row`] for inference, [`TrainRow`] for training) and implement
//! [`Record`]; code that only reads a run (objectives, analytics, reports) sees the untyped
//! [`Schema`] of the run's [`Mode`].

mod inference;
mod training;

use std::sync::LazyLock;

use serde::{Deserialize, Serialize};

pub use inference::{COLUMNS, RISK_BANDS, Row};
pub use training::{TRAINING_COLUMNS, TrainRow};

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
    Rack,
    Model,
    WeightDtype,
    KvDtype,
    Ownership,
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
            Labels::Risk => Some(RISK_BANDS.iter().map(|(name, _)| *name).collect()),
            Labels::Precision => Some(Precision::ALL.iter().map(|p| p.as_str()).collect()),
            Labels::Recompute => Some(Recompute::ALL.iter().map(|r| r.as_str()).collect()),
            Labels::TrainingReason => Some(Infeasible::ALL.iter().map(|r| r.as_str()).collect()),
            _ => None,
        }
    }

    /// Whether the column may be null (only the answers to "why not", "what limits" and
    /// "how risky" are).
    pub fn nullable(self) -> bool {
        matches!(
            self,
            Labels::Reason | Labels::Limit | Labels::Risk | Labels::TrainingReason
        )
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

impl<R> Clone for Kind<R> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<R> Copy for Kind<R> {}

pub struct Column<R> {
    pub name: &'static str,
    /// Unit, or "" for identifiers and labels.
    pub unit: &'static str,
    pub doc: &'static str,
    pub kind: Kind<R>,
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
}

impl Info {
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

/// The columns of one mode's rows, untyped.
#[derive(Debug)]
pub struct Schema {
    pub mode: Mode,
    pub columns: Vec<Info>,
}

static SCHEMAS: LazyLock<[Schema; 2]> = LazyLock::new(|| {
    [
        Schema::of(Mode::Inference, COLUMNS),
        Schema::of(Mode::Training, TRAINING_COLUMNS),
    ]
});

impl Schema {
    fn of<R>(mode: Mode, columns: &[Column<R>]) -> Schema {
        Schema {
            mode,
            columns: columns.iter().map(Column::info).collect(),
        }
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

pub fn finite(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}

pub fn nonzero(v: u32) -> Option<u32> {
    (v > 0).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

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
