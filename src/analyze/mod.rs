//! Analytics over a finished run, read back from its Parquet with polars lazy scans (the only
//! module that uses polars): rank rows by a column, or recompute a Pareto frontier under other
//! objectives and constraints, without re-running the sweep. Only the columns a query needs
//! are read.

use std::path::Path;

use crate::output::run_dir::Finished;
use anyhow::{Context as _, Result};
use parquet::file::reader::{FileReader, SerializedFileReader};
use polars::prelude::*;

use crate::columns::{Schema, Type};
use crate::format::number;
use crate::output::table::Table;
use crate::pareto::{Constraint, Objective, Op, non_dominated_ids_by_group};
use filter::Where;

pub mod digest;
pub mod filter;

/// Every part file of a checked run, as one lazy table (its exact files, no glob: nothing else
/// in the folder is read).
fn scan(run: &Finished) -> Result<LazyFrame> {
    let paths = run
        .configs
        .iter()
        .map(|p| {
            p.to_str()
                .map(PlRefPath::new)
                .with_context(|| format!("{} is not valid UTF-8", p.display()))
        })
        .collect::<Result<Vec<_>>>()?;
    let args = ScanArgsParquet {
        glob: false,
        ..ScanArgsParquet::default()
    };
    Ok(LazyFrame::scan_parquet_files(
        paths.into_iter().collect(),
        args,
    )?)
}

/// The schema of a run's rows, from its manifest's mode.
pub fn schema(run: &Finished) -> &'static Schema {
    Schema::get(run.manifest.mode)
}

/// `c` as a polars predicate (numbers compared as f64, like the engine's constraints).
fn predicate(c: &Constraint) -> Expr {
    let v = col(c.name).cast(DataType::Float64);
    let x = lit(c.value);
    match c.op {
        Op::Le => v.lt_eq(x),
        Op::Lt => v.lt(x),
        Op::Ge => v.gt_eq(x),
        Op::Gt => v.gt(x),
        Op::Eq => v.eq(x),
    }
}

/// Rows a ranking may use: feasible, no requirement of the schema missed (`Role::Requirement`:
/// demand and SLOs, where the sweep set them), and every `wheres` filter holds (the engine's
/// rule for its frontier).
fn admitted(lf: LazyFrame, wheres: &[Where], schema: &Schema) -> LazyFrame {
    let mut rule = col("feasible").eq(lit(true));
    for (i, _, _) in schema.requirements() {
        rule = rule.and(col(schema.columns[i].name).fill_null(lit(true)));
    }
    let mut lf = lf.filter(rule);
    for w in wheres {
        lf = lf.filter(w.predicate());
    }
    lf
}

/// The columns every result table leads with (`Show::brief`, in file order; in a run of several
/// workloads `workload_id` after `config_id`, so rows of different workloads are told apart),
/// then `extra` (deduplicated).
fn shown(
    run: &Finished,
    schema: &Schema,
    extra: impl IntoIterator<Item = &'static str>,
) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = schema.names(|c| c.show.brief).collect();
    if !run.manifest.workloads.is_empty() {
        names.insert(1, WORKLOAD);
    }
    for c in extra {
        if !names.contains(&c) {
            names.push(c);
        }
    }
    names
}

/// The columns `names`, labels cast to text.
fn select(lf: LazyFrame, names: &[&'static str], schema: &Schema) -> LazyFrame {
    lf.select(
        names
            .iter()
            .map(|&n| match schema.find(n).map(|i| schema.columns[i].ty) {
                Some(Type::Label(_)) => col(n).cast(DataType::String),
                _ => col(n),
            })
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
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    Ok(Table::aligned_by_cells(&header, rows))
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

/// Rows read per slice of the run: a slice's key columns and frontier candidates are held in
/// memory at once, whatever the size of the run (measured on a 10 M-row run: `pareto` 1.3 s,
/// 195 MB peak; `top` 0.3 s, 93 MB).
const SLICE_ROWS: u32 = 1 << 20;

/// The config_ids of a Parquet file of rows (a frontier), in file order.
pub fn config_ids(path: &Path) -> Result<Vec<u64>> {
    let path_text = path
        .to_str()
        .with_context(|| format!("{} is not valid UTF-8", path.display()))?;
    let df = LazyFrame::scan_parquet(PlRefPath::new(path_text), ScanArgsParquet::default())?
        .select([col("config_id")])
        .collect();
    let df = anyhow::Context::with_context(df, || format!("reading {}", path.display()))?;
    Ok(df.column("config_id")?.u64()?.into_no_null_iter().collect())
}

/// Rows in the run's part files, from their footers.
fn row_count(run: &Finished) -> Result<u64> {
    let mut total = 0u64;
    for path in &run.configs {
        let file =
            std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
        let reader = SerializedFileReader::new(file)
            .with_context(|| format!("reading {}", path.display()))?;
        total += u64::try_from(reader.metadata().file_metadata().num_rows())?;
    }
    Ok(total)
}

/// Calls `f` with each slice of the run's rows in turn (the scan reads only that slice's row
/// groups). The row count comes from the part files' footers.
fn for_each_slice(
    run: &Finished,
    lf: &LazyFrame,
    slice_rows: u32,
    mut f: impl FnMut(LazyFrame) -> Result<()>,
) -> Result<()> {
    let total = row_count(run)?;
    let mut offset = 0u64;
    while offset < total {
        f(lf.clone().slice(i64::try_from(offset)?, slice_rows))?;
        offset += u64::from(slice_rows);
    }
    Ok(())
}

/// The shown columns of the rows `ids`, sorted by `by` (descending where `descending`), then
/// config_id.
fn fetch(
    lf: LazyFrame,
    ids: Vec<u64>,
    names: &[&'static str],
    schema: &Schema,
    mut by: Vec<&'static str>,
    mut descending: Vec<bool>,
) -> Result<Table> {
    by.push("config_id");
    descending.push(false);
    let ids = Series::new("ids".into(), ids);
    let df = select(
        lf.filter(col("config_id").is_in(lit(ids).implode(false), false))
            .sort(
                by,
                SortMultipleOptions::default().with_order_descending_multi(descending),
            ),
        names,
        schema,
    )
    .collect()?;
    table(&df)
}

/// The `n` best admitted rows by `by`. Each slice contributes its own best `n` (id and value
/// only); the shown columns are read for the winners alone.
pub fn top(run: &Finished, by: Objective, n: u32, wheres: &[Where]) -> Result<Table> {
    filter::check_labels(run, wheres)?;
    top_sliced(run, by, n, wheres, SLICE_ROWS)
}

fn top_sliced(
    run: &Finished,
    by: Objective,
    n: u32,
    wheres: &[Where],
    slice_rows: u32,
) -> Result<Table> {
    let lf = scan(run)?;
    let schema = schema(run);
    let column = by.name;
    let order = |best: &mut Vec<(f64, u64)>| {
        best.sort_by(|a, b| {
            let o = if by.maximize {
                b.0.total_cmp(&a.0)
            } else {
                a.0.total_cmp(&b.0)
            };
            o.then(a.1.cmp(&b.1))
        });
        best.truncate(n as usize);
    };
    let mut best: Vec<(f64, u64)> = Vec::new();
    for_each_slice(run, &lf, slice_rows, |slice| {
        let df = admitted(slice, wheres, schema)
            .filter(col(column).is_not_null())
            .select([col("config_id"), col(column).cast(DataType::Float64)])
            .collect()?;
        let (ids, values) = (df.column("config_id")?.u64()?, df.column(column)?.f64()?);
        best.extend((0..df.height()).filter_map(|i| Some((values.get(i)?, ids.get(i)?))));
        order(&mut best);
        Ok(())
    })?;
    let names = shown(
        run,
        schema,
        std::iter::once(by.name).chain(wheres.iter().map(Where::name)),
    );
    let ids = best.iter().map(|&(_, id)| id).collect();
    fetch(lf, ids, &names, schema, vec![column], vec![by.maximize])
}

/// The column whose values split an inference run into its workloads, each with its own
/// frontier.
const WORKLOAD: &str = "workload_id";

/// The Pareto frontier of the admitted rows under `objectives` (one per workload in an
/// inference run), by workload, then best first by the first objective. Each slice is reduced to its own frontier from config_id and the objective
/// columns alone (the frontier of a union is the frontier of the parts' frontiers); the shown
/// columns are read for the frontier's rows.
pub fn frontier(run: &Finished, objectives: &[Objective], wheres: &[Where]) -> Result<Table> {
    filter::check_labels(run, wheres)?;
    frontier_sliced(run, objectives, wheres, SLICE_ROWS)
}

fn frontier_sliced(
    run: &Finished,
    objectives: &[Objective],
    wheres: &[Where],
    slice_rows: u32,
) -> Result<Table> {
    let lf = scan(run)?;
    let schema = schema(run);
    // An inference run holds one frontier per workload.
    let group = schema.find(WORKLOAD).map(|_| WORKLOAD);
    let mut survivors: Vec<(u64, u32, Vec<f64>)> = Vec::new();
    for_each_slice(run, &lf, slice_rows, |slice| {
        let mut keys = vec![col("config_id")];
        keys.extend(group.map(|g| col(g).cast(DataType::UInt32)));
        keys.extend(
            objectives
                .iter()
                .map(|o| col(o.name).cast(DataType::Float64)),
        );
        let df = admitted(slice, wheres, schema).select(keys).collect()?;
        let ids = df.column("config_id")?.u64()?.clone();
        let values: Vec<Float64Chunked> = objectives
            .iter()
            .map(|o| Ok(df.column(o.name)?.f64()?.clone()))
            .collect::<Result<_>>()?;
        let groups = match group {
            Some(g) => Some(df.column(g)?.u32()?.clone()),
            None => None,
        };
        let points = (0..df.height()).filter_map(|i| {
            let v: Option<Vec<f64>> = values.iter().map(|c| c.get(i)).collect();
            let g = groups.as_ref().map_or(Some(0), |g| g.get(i));
            Some((ids.get(i)?, g?, v?))
        });
        let mut all: Vec<(u64, u32, Vec<f64>)> = std::mem::take(&mut survivors);
        all.extend(points);
        let on = non_dominated_ids_by_group(objectives, all.iter().cloned());
        survivors = all
            .into_iter()
            .filter(|(id, _, _)| on.binary_search(id).is_ok())
            .collect();
        Ok(())
    })?;
    let names = shown(
        run,
        schema,
        objectives
            .iter()
            .map(|o| o.name)
            .chain(wheres.iter().map(Where::name)),
    );
    let ids = survivors.into_iter().map(|(id, _, _)| id).collect();
    fetch(
        lf,
        ids,
        &names,
        schema,
        group
            .into_iter()
            .chain(objectives.iter().map(|o| o.name))
            .collect(),
        group
            .map(|_| false)
            .into_iter()
            .chain(objectives.iter().map(|o| o.maximize))
            .collect(),
    )
}

/// The quickstart sweep run into a temporary directory, in parts of 1,000 rows, for the
/// analytics tests: the directory guard and the run, opened.
#[cfg(test)]
pub(crate) fn quickstart_run() -> (tempfile::TempDir, Finished) {
    let tmp = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    crate::commands::run::run(crate::cli::RunArgs {
        sweep: root.join("sweeps/quickstart.toml"),
        out: tmp.path().to_path_buf(),
        threads: Some(1),
        progress: crate::cli::Progress::None,
        quiet: true,
        force: false,
        feasible_only: false,
        max_configs: 1 << 30,
        shard: None,
        shard_count: None,
        resume: false,
        part_rows: 1000,
    })
    .unwrap();
    let dir = crate::output::run_dir::RunDir::new(tmp.path().join("quickstart"));
    let run = dir.open(false).unwrap();
    (tmp, run)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::columns::Mode;

    /// Slicing the run changes nothing: small slices give the tables of one slice.
    #[test]
    fn slices_do_not_change_the_answer() {
        let (_tmp, dir) = quickstart_run();
        let inference = Schema::get(Mode::Inference);
        let objective = |t: &str| Objective::parse(t, inference).unwrap();
        let wheres = [
            Where::parse("ttft_ms <= 2000", inference).unwrap(),
            Where::parse("hardware != h100-sxm", inference).unwrap(),
        ];
        let objectives = [
            objective("max tokens_per_s_per_gpu"),
            objective("min tpot_ms"),
        ];
        let rows = |t: Table| t.rows;
        let whole = rows(frontier_sliced(&dir, &objectives, &wheres, SLICE_ROWS).unwrap());
        assert!(whole.len() > 3);
        assert_eq!(
            rows(frontier_sliced(&dir, &objectives, &wheres, 700).unwrap()),
            whole
        );
        let by = objective("min ttft_ms");
        let whole = rows(top_sliced(&dir, by, 25, &wheres, SLICE_ROWS).unwrap());
        assert_eq!(whole.len(), 25);
        assert_eq!(rows(top_sliced(&dir, by, 25, &wheres, 700).unwrap()), whole);
    }
}
