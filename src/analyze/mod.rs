//! Analytics over a finished run, read back from its Parquet with polars lazy scans (the only
//! module that uses polars): rank rows by a column, or recompute a Pareto frontier under other
//! objectives and constraints, without re-running the sweep. Only the columns a query needs
//! are read.

use std::path::Path;

use anyhow::{Context as _, Result};
use polars::prelude::*;

use crate::columns::{COLUMNS, Kind};
use crate::error::UserError;
use crate::output::markdown::number;
use crate::pareto::{Constraint, Frontier, Objective, Op};

/// Columns every result table shows, before the ones a query names.
const SHOWN: &[&str] = &[
    "config_id",
    "hardware",
    "racks",
    "tp",
    "pp",
    "ep",
    "batch",
    "weight_dtype",
    "kv_dtype",
];

/// A result: column names and formatted cells, ready for `commands::table::render`.
pub struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// Every part file of a run directory, as one lazy table.
fn scan(run_dir: &Path) -> Result<LazyFrame> {
    let configs = run_dir.join("configs");
    let has_parts = std::fs::read_dir(&configs).is_ok_and(|entries| {
        entries
            .filter_map(|e| e.ok())
            .any(|e| e.file_name().to_string_lossy().ends_with(".parquet"))
    });
    if !has_parts {
        return Err(UserError::new(format!(
            "{} is not a racksweep run directory (no configs/*.parquet)",
            run_dir.display()
        ))
        .with_hint("pass the directory `racksweep run` wrote: <out>/<sweep name>")
        .into());
    }
    let glob = configs.join("*.parquet");
    let glob = glob
        .to_str()
        .with_context(|| format!("{} is not valid UTF-8", glob.display()))?;
    Ok(LazyFrame::scan_parquet(
        PlRefPath::new(glob),
        ScanArgsParquet::default(),
    )?)
}

fn name(column: usize) -> &'static str {
    COLUMNS[column].name
}

/// `c` as a polars predicate (numbers compared as f64, like the engine's constraints).
fn predicate(c: &Constraint) -> Expr {
    let v = col(name(c.column)).cast(DataType::Float64);
    let x = lit(c.value);
    match c.op {
        Op::Le => v.lt_eq(x),
        Op::Lt => v.lt(x),
        Op::Ge => v.gt_eq(x),
        Op::Gt => v.gt(x),
        Op::Eq => v.eq(x),
    }
}

/// Rows a ranking may use: feasible, demand and SLOs not missed where the sweep set them, and
/// every `wheres` constraint holds (the engine's rule for its frontier).
fn admitted(lf: LazyFrame, wheres: &[Constraint]) -> LazyFrame {
    let mut lf = lf.filter(
        col("feasible")
            .eq(lit(true))
            .and(col("demand_met").fill_null(lit(true)))
            .and(col("meets_slo").fill_null(lit(true))),
    );
    for c in wheres {
        lf = lf.filter(predicate(c));
    }
    lf
}

/// The shown columns, then `extra` (deduplicated), labels cast to text.
fn shown(extra: impl IntoIterator<Item = usize>) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = SHOWN.to_vec();
    for c in extra {
        if !names.contains(&name(c)) {
            names.push(name(c));
        }
    }
    names
}

fn select(lf: LazyFrame, names: &[&'static str]) -> LazyFrame {
    lf.select(
        names
            .iter()
            .map(
                |&n| match crate::columns::find(n).map(|i| COLUMNS[i].kind) {
                    Some(Kind::Label(_)) => col(n).cast(DataType::String),
                    _ => col(n),
                },
            )
            .collect::<Vec<_>>(),
    )
}

fn table(df: &DataFrame) -> Result<Table> {
    let header: Vec<String> = df
        .get_column_names()
        .iter()
        .map(|n| n.to_string())
        .collect();
    let mut rows = vec![Vec::with_capacity(header.len()); df.height()];
    for column in df.columns() {
        let series = column.as_materialized_series();
        for (i, row) in rows.iter_mut().enumerate() {
            row.push(cell(&series.get(i)?));
        }
    }
    Ok(Table { header, rows })
}

fn cell(v: &AnyValue) -> String {
    match v {
        AnyValue::Null => "-".into(),
        AnyValue::Float64(x) => number(*x),
        AnyValue::Float32(x) => number(f64::from(*x)),
        AnyValue::String(s) => s.to_string(),
        AnyValue::StringOwned(s) => s.to_string(),
        other => other.to_string(),
    }
}

/// The `n` best admitted rows by `by`.
pub fn top(run_dir: &Path, by: Objective, n: u32, wheres: &[Constraint]) -> Result<Table> {
    let column = name(by.column);
    let lf = admitted(scan(run_dir)?, wheres).filter(col(column).is_not_null());
    let lf = lf.sort(
        [column, "config_id"],
        SortMultipleOptions::default().with_order_descending_multi([by.maximize, false]),
    );
    let names = shown(std::iter::once(by.column).chain(wheres.iter().map(|c| c.column)));
    let df = select(lf, &names).limit(n).collect()?;
    table(&df)
}

/// The Pareto frontier of the admitted rows under `objectives`, best first by the first
/// objective. Reads only config_id and the objective columns of every row, then the shown
/// columns of the frontier's rows.
pub fn frontier(run_dir: &Path, objectives: &[Objective], wheres: &[Constraint]) -> Result<Table> {
    let lf = admitted(scan(run_dir)?, wheres);
    let mut keys = vec![col("config_id")];
    keys.extend(
        objectives
            .iter()
            .map(|o| col(name(o.column)).cast(DataType::Float64)),
    );
    let df = lf.clone().select(keys).collect()?;
    let ids = df.column("config_id")?.u64()?.clone();
    let values: Vec<Float64Chunked> = objectives
        .iter()
        .map(|o| Ok(df.column(name(o.column))?.f64()?.clone()))
        .collect::<Result<_>>()?;
    let points = (0..df.height()).filter_map(|i| {
        let id = ids.get(i)?;
        let v: Option<Vec<f64>> = values.iter().map(|c| c.get(i)).collect();
        Some((id, v?))
    });
    let rule = Frontier::new(objectives.to_vec(), Vec::new());
    let on = rule.non_dominated(points);
    let on = Series::new("on".into(), on);
    let names = shown(
        objectives
            .iter()
            .map(|o| o.column)
            .chain(wheres.iter().map(|c| c.column)),
    );
    let mut by: Vec<&str> = objectives.iter().map(|o| name(o.column)).collect();
    by.push("config_id");
    let mut descending: Vec<bool> = objectives.iter().map(|o| o.maximize).collect();
    descending.push(false);
    let df = select(
        lf.filter(col("config_id").is_in(lit(on).implode(false), false))
            .sort(
                by,
                SortMultipleOptions::default().with_order_descending_multi(descending),
            ),
        &names,
    )
    .collect()?;
    table(&df)
}
