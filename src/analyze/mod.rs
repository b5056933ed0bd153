//! Analytics over a finished run, read back from its Parquet with polars lazy scans (the only
//! module that uses polars): rank rows by a column, or recompute a Pareto frontier under other
//! objectives and constraints, without re-running the sweep. Only the columns a query needs
//! are read.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::output::run_dir::Finished;
use anyhow::{Context as _, Result};
use parquet::file::reader::{FileReader, SerializedFileReader};
use polars::prelude::*;

use crate::columns::{Schema, Type};
use crate::output::table::{Table, Value};
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

/// Which columns an answer shows.
#[derive(Debug, Clone, Copy)]
pub enum Columns<'a> {
    /// The columns every answer leads with (`Show::brief`; in a run of several workloads
    /// `workload_id` after `config_id`, so rows of different workloads are told apart), and the
    /// other columns that say which configuration a row is (`Info::identifies`) where they
    /// differ among the rows printed, in file order; then the columns the query names.
    Telling,
    /// These columns, in this order.
    Chosen(&'a [&'static str]),
}

/// The columns an answer reads: those `columns` may show (for [`Columns::Telling`], every
/// brief or identifying column; only the varying ones are kept, by [`shown`]), then `extra`
/// (the query's; deduplicated).
fn candidates(
    run: &Finished,
    schema: &Schema,
    columns: Columns,
    extra: impl IntoIterator<Item = &'static str>,
) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = match columns {
        Columns::Telling => {
            // A column with one value in the whole run tells no rows apart: not read at all.
            let constant = constant_columns(run);
            schema
                .names(|c| c.show.brief || (c.identifies() && !constant.contains(c.name)))
                .collect()
        }
        Columns::Chosen(names) => return names.to_vec(),
    };
    if let Some(at) = names.iter().position(|&n| n == WORKLOAD)
        && several_workloads(run)
    {
        names.remove(at);
        names.insert(1, WORKLOAD);
    }
    for c in extra {
        if !names.contains(&c) {
            names.push(c);
        }
    }
    names
}

/// The candidate columns an answer shows: all of a chosen list; of the telling ones, the brief
/// columns, those the query names (`extra`) and the identifying ones whose values differ among
/// `df`'s rows.
fn shown(
    run: &Finished,
    df: &DataFrame,
    columns: Columns,
    names: &[&'static str],
    extra: &[&'static str],
) -> Result<Vec<&'static str>> {
    if let Columns::Chosen(chosen) = columns {
        return Ok(chosen.to_vec());
    }
    let schema = schema(run);
    let mut kept = Vec::new();
    for &n in names {
        let keep = extra.contains(&n)
            || (n == WORKLOAD && several_workloads(run))
            || schema.find(n).is_some_and(|i| schema.columns[i].show.brief)
            || df.column(n)?.n_unique()? > 1;
        if keep {
            kept.push(n);
        }
    }
    Ok(kept)
}

/// The columns that hold one value in every row of the run (or null in every row), by the
/// part files' row-group statistics (no data is read); a file without statistics names none.
fn constant_columns(run: &Finished) -> BTreeSet<String> {
    /// What the statistics say of a column so far: its one value (if any row has one) and
    /// whether a row is null; `None` once two rows differ.
    type Seen = Option<(Option<Vec<u8>>, bool)>;
    let mut seen: BTreeMap<String, Seen> = BTreeMap::new();
    for path in &run.configs {
        let Ok(reader) = std::fs::File::open(path).map(SerializedFileReader::new) else {
            return BTreeSet::new();
        };
        let Ok(reader) = reader else {
            return BTreeSet::new();
        };
        for group in reader.metadata().row_groups() {
            let rows = u64::try_from(group.num_rows()).unwrap_or(u64::MAX);
            for chunk in group.columns() {
                let name = chunk.column_descr().name().to_string();
                let this: Seen = chunk.statistics().and_then(|st| {
                    let nulls = st.null_count_opt()?;
                    if nulls == rows {
                        return Some((None, true));
                    }
                    let (min, max) = (st.min_bytes_opt()?, st.max_bytes_opt()?);
                    (min == max).then(|| (Some(min.to_vec()), nulls > 0))
                });
                let entry = seen.entry(name).or_insert_with(|| this.clone());
                *entry = match (entry.take(), this) {
                    (Some((a, an)), Some((b, bn))) => match (a, b) {
                        (Some(a), Some(b)) if a != b => None,
                        (a, b) => Some((a.or(b), an || bn)),
                    },
                    _ => None,
                };
            }
        }
    }
    seen.into_iter()
        .filter_map(|(name, s)| match s {
            // One value, or null throughout; a value and nulls differ.
            Some((Some(_), false)) | Some((None, _)) => Some(name),
            _ => None,
        })
        .collect()
}

/// Whether the run evaluates several workloads (each with its own frontier).
fn several_workloads(run: &Finished) -> bool {
    !run.manifest.workloads.is_empty()
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

/// `df` as a table: each cell formatted for a reader, with its value.
fn table(df: &DataFrame) -> Result<Table> {
    let header: Vec<String> = df
        .get_column_names()
        .iter()
        .map(|n| n.to_string())
        .collect();
    let mut rows = vec![Vec::with_capacity(header.len()); df.height()];
    let mut values = vec![Vec::with_capacity(header.len()); df.height()];
    for column in df.columns() {
        let series = column.as_materialized_series();
        for (i, (row, vals)) in rows.iter_mut().zip(&mut values).enumerate() {
            let v = value(&series.get(i)?);
            row.push(v.shown());
            vals.push(v);
        }
    }
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    Ok(Table::aligned_by_cells(&header, rows).with_values(values))
}

fn value(v: &AnyValue) -> Value {
    match v {
        AnyValue::Null => Value::Null,
        AnyValue::Boolean(b) => Value::Bool(*b),
        AnyValue::UInt8(n) => Value::UInt(u64::from(*n)),
        AnyValue::UInt16(n) => Value::UInt(u64::from(*n)),
        AnyValue::UInt32(n) => Value::UInt(u64::from(*n)),
        // Only identifiers are 64-bit (config_id); counts are 32-bit.
        AnyValue::UInt64(n) => Value::Id(*n),
        AnyValue::Float64(x) => Value::float(*x),
        AnyValue::Float32(x) => Value::float(f64::from(*x)),
        AnyValue::String(s) => Value::Text(s.to_string()),
        AnyValue::StringOwned(s) => Value::Text(s.to_string()),
        other => Value::Text(other.to_string()),
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

/// The rows `ids`, sorted by `by` (descending where `descending`), then config_id: the
/// `names` columns (and `by`), as a frame.
fn fetch(
    lf: LazyFrame,
    ids: Vec<u64>,
    names: &[&'static str],
    schema: &Schema,
    mut by: Vec<&'static str>,
    mut descending: Vec<bool>,
) -> Result<DataFrame> {
    by.push("config_id");
    descending.push(false);
    let mut read = names.to_vec();
    for n in &by {
        if !read.contains(n) {
            read.push(n);
        }
    }
    let ids = Series::new("ids".into(), ids);
    Ok(select(
        lf.filter(col("config_id").is_in(lit(ids).implode(false), false))
            .sort(
                by,
                SortMultipleOptions::default().with_order_descending_multi(descending),
            ),
        &read,
        schema,
    )
    .collect()?)
}

/// The shown columns of `df` as a table.
fn answer(df: &DataFrame, shown: &[&'static str]) -> Result<Table> {
    table(&df.select(shown.iter().copied())?)
}

/// The `n` best admitted rows by `by`. Each slice contributes its own best `n` (id and value
/// only); the shown columns are read for the winners alone.
pub fn top(
    run: &Finished,
    by: Objective,
    n: u32,
    wheres: &[Where],
    columns: Columns,
) -> Result<Table> {
    filter::check_labels(run, wheres)?;
    top_sliced(run, by, n, wheres, columns, SLICE_ROWS)
}

fn top_sliced(
    run: &Finished,
    by: Objective,
    n: u32,
    wheres: &[Where],
    columns: Columns,
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
    let extra: Vec<&'static str> = std::iter::once(by.name)
        .chain(wheres.iter().flat_map(Where::names))
        .collect();
    let names = candidates(run, schema, columns, extra.iter().copied());
    let ids = best.iter().map(|&(_, id)| id).collect();
    let df = fetch(lf, ids, &names, schema, vec![column], vec![by.maximize])?;
    answer(&df, &shown(run, &df, columns, &names, &extra)?)
}

/// A recomputed frontier: its rows (best first, as [`frontier`] orders them) and each row's tie
/// group ([`crate::pareto::tie_groups`]).
#[derive(Debug, Clone)]
pub struct Frontier {
    pub table: Table,
    pub tie_groups: Vec<u32>,
}

/// The column whose values split an inference run into its workloads, each with its own
/// frontier.
const WORKLOAD: &str = "workload_id";

/// The Pareto frontier of the admitted rows under `objectives` (one per workload in an
/// inference run), by workload, then best first by the first objective. Each slice is reduced
/// to its own frontier from config_id and the objective columns alone (the frontier of a union
/// is the frontier of the parts' frontiers); the shown columns are read for the frontier's
/// rows.
pub fn frontier(
    run: &Finished,
    objectives: &[Objective],
    wheres: &[Where],
    columns: Columns,
) -> Result<Frontier> {
    filter::check_labels(run, wheres)?;
    frontier_sliced(run, objectives, wheres, columns, SLICE_ROWS)
}

fn frontier_sliced(
    run: &Finished,
    objectives: &[Objective],
    wheres: &[Where],
    columns: Columns,
    slice_rows: u32,
) -> Result<Frontier> {
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
    let extra: Vec<&'static str> = objectives
        .iter()
        .map(|o| o.name)
        .chain(wheres.iter().flat_map(Where::names))
        .collect();
    let names = candidates(run, schema, columns, extra.iter().copied());
    // The frontier's points by config_id, for its tie groups.
    let mut points: Vec<(u64, u32, Vec<f64>)> = survivors;
    points.sort_unstable_by_key(|p| p.0);
    let ids = points.iter().map(|p| p.0).collect();
    let df = fetch(
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
    )?;
    let keys = df
        .column("config_id")?
        .u64()?
        .iter()
        .map(|id| {
            id.and_then(|id| points.binary_search_by_key(&id, |p| p.0).ok())
                .map(|at| (points[at].1, points[at].2.as_slice()))
                .context("a row read back is not one of the frontier's")
        })
        .collect::<Result<Vec<_>>>()?;
    let tie_groups = crate::pareto::tie_groups(keys);
    Ok(Frontier {
        table: answer(&df, &shown(run, &df, columns, &names, &extra)?)?,
        tie_groups,
    })
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
        let frontier = |slice_rows| {
            let f = frontier_sliced(&dir, &objectives, &wheres, Columns::Telling, slice_rows);
            let f = f.unwrap();
            (f.table.rows, f.tie_groups)
        };
        let whole = frontier(SLICE_ROWS);
        assert!(whole.0.len() > 3);
        assert_eq!(whole.0.len(), whole.1.len());
        assert_eq!(frontier(700), whole);
        let by = objective("min ttft_ms");
        let top = |slice_rows| {
            top_sliced(&dir, by, 25, &wheres, Columns::Telling, slice_rows)
                .unwrap()
                .rows
        };
        let whole = top(SLICE_ROWS);
        assert_eq!(whole.len(), 25);
        assert_eq!(top(700), whole);
    }

    /// Columns with one value (or null) in every row of the quickstart run, by the statistics:
    /// its one rack count, model, workload and ownership, and the prefill pool's GPU (null:
    /// no disaggregation); not what its grid varies.
    #[test]
    fn constant_columns_come_from_the_statistics() {
        let (_tmp, run) = quickstart_run();
        let constant = constant_columns(&run);
        for name in [
            "racks",
            "model",
            "input_tokens",
            "ownership",
            "prefill_hardware",
        ] {
            assert!(constant.contains(name), "{name}: {constant:?}");
        }
        for name in [
            "config_id",
            "hardware",
            "rack",
            "tp",
            "batch",
            "weight_dtype",
        ] {
            assert!(!constant.contains(name), "{name}");
        }
    }
}
