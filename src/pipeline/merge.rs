//! Stages 4 to 6: the committed parts gathered and checked, the run's frontier (`pareto.parquet`,
//! `pareto.md`), and its complete `manifest.json`, each file atomically and the manifest last.
//! A whole run ends here as a merge of shards does, so both have the same rows and the same
//! frontier.

use std::collections::BTreeMap;
use std::time::{Instant, SystemTime};

use anyhow::Result;

use crate::columns::{REASON_COLUMN, Record};
use crate::engine::Space;
use crate::error::UserError;
use crate::output::manifest::{Manifest, rfc3339};
use crate::output::markdown::{self, Totals};
use crate::output::parquet::{INFEASIBLE_KEY, ParquetSink};
use crate::output::run_dir::{self, PartRecord, PartState, RunDir, Verified};
use crate::pareto::Frontier;
use crate::space::{SpaceFn, with_space};

use super::plan::Plan;

/// When a run or a merge started: the manifest's `started_at`, and the instant its
/// `wall_time_s` is counted from.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    pub started_at: SystemTime,
    pub started: Instant,
}

impl Clock {
    pub fn start() -> Clock {
        Clock {
            started_at: SystemTime::now(),
            started: Instant::now(),
        }
    }
}

/// A merge: checks that every part of the run is committed, from this sweep, by this version
/// and with the same flags, then writes the run's frontier and its complete manifest.
pub fn merge(plan: &Plan, clock: Clock) -> Result<Manifest> {
    let records = gather(plan)?;
    with_space(
        plan.sweep,
        Finish {
            plan,
            records: &records,
            clock,
        },
    )
}

/// Every part's record, checked.
fn gather(plan: &Plan) -> Result<Vec<PartRecord>> {
    let (dir, parts) = (&plan.dir, plan.parts);
    let mut records = Vec::new();
    let mut missing = Vec::new();
    let mut verified = Verified::default();
    dir.check_configs_listing(parts)?;
    for s in plan.shards() {
        match dir.part(s, &plan.sweep.header().sha256, &mut verified) {
            PartState::Committed(r) => {
                check_counts(dir, &r, s.range(plan.sweep.len()))?;
                check_frontier_ids(dir, &r)?;
                records.push(*r);
            }
            PartState::Absent => missing.push(s.index),
            PartState::Corrupt(why) => {
                return Err(UserError::new(format!("part {s}: {why}"))
                    .with_hint(format!(
                        "run it again: remove {} and run racksweep run <SWEEP> --shard {s} --resume",
                        dir.record(s).display()
                    ))
                    .into());
            }
        }
    }
    if !missing.is_empty() {
        const LISTED: usize = 20;
        let listed: Vec<String> = missing.iter().take(LISTED).map(u64::to_string).collect();
        let mut list = listed.join(", ");
        if missing.len() > LISTED {
            list.push_str(&format!(" and {} more", missing.len() - LISTED));
        }
        return Err(UserError::new(format!(
            "{}: part{} {list} of {parts} missing or incomplete",
            dir.root.display(),
            if missing.len() == 1 { " is" } else { "s are" },
        ))
        .with_hint(format!(
            "run them (racksweep run <SWEEP> --shard K/{parts} --resume), then merge again"
        ))
        .into());
    }
    let version = env!("CARGO_PKG_VERSION");
    if let Some(r) = records.iter().find(|r| r.racksweep_version != version) {
        return Err(UserError::new(format!(
            "part {} was written by racksweep {}, this is {version}",
            r.part, r.racksweep_version
        ))
        .with_hint("merge with the version that ran the shards, or run them again")
        .into());
    }
    if records
        .iter()
        .any(|r| r.feasible_only != records[0].feasible_only)
    {
        return Err(UserError::new(format!(
            "{}: some parts were run with --feasible-only and some without",
            dir.root.display()
        ))
        .with_hint("run every shard with the same flags")
        .into());
    }
    Ok(records)
}

/// A part's record covers its slice of the grid, `range`, and its counts add up: every
/// configuration of the slice is feasible or has one reason (`rows_written` of them, all
/// written or, with `--feasible-only`, the feasible ones), and its file holds them (its footer's
/// row count is `rows_written`, its reason column's null count `feasible`). The record is the
/// commit, written by `run`; one that says otherwise was edited or copied from another part, and
/// merging it would lose or repeat configurations. The file is bound to the record by its
/// SHA-256, the counts are not, so the footer checks them: its row count, its reason column's
/// nulls (the feasible rows), and the counts per reason it keeps ([`INFEASIBLE_KEY`]), which
/// catch counts moved between two reasons. A file written before that key has only the first
/// two checked.
fn check_counts(dir: &RunDir, r: &PartRecord, range: std::ops::Range<u64>) -> Result<()> {
    let configurations = range.end - range.start;
    let classified = r.feasible + r.infeasible.values().sum::<u64>();
    let written = if r.feasible_only {
        r.feasible
    } else {
        configurations
    };
    let why = if r.first_config_id != range.start || r.end_config_id != range.end {
        format!(
            "covers configurations {}..{}, where part {} of the grid is {}..{}",
            r.first_config_id,
            r.end_config_id,
            r.shard(),
            range.start,
            range.end
        )
    } else if classified != configurations {
        format!(
            "counts {} feasible and {} infeasible configurations, not its {configurations}",
            r.feasible,
            classified - r.feasible
        )
    } else if r.rows_written != written {
        format!("says {} rows written, not {written}", r.rows_written)
    } else {
        let path = dir.configs(r.shard());
        match footer_counts(&path)? {
            Ok(f)
                if f.rows == r.rows_written
                    && f.feasible == Some(r.feasible)
                    && f.infeasible.as_ref().is_none_or(|i| *i == r.infeasible) =>
            {
                return Ok(());
            }
            Ok(Footer {
                infeasible: Some(held),
                rows,
                feasible: Some(feasible),
            }) if rows == r.rows_written && feasible == r.feasible => {
                format!(
                    "counts {} configurations by infeasible reason, where {} holds {}",
                    reason_counts(&r.infeasible),
                    path.display(),
                    reason_counts(&held)
                )
            }
            Ok(Footer { rows, feasible, .. }) => {
                let feasible =
                    feasible.map_or_else(|| "an unknown number".to_owned(), |n| n.to_string());
                format!(
                    "says {} rows written and {} feasible, where {} holds {rows} rows, {feasible} of them feasible",
                    r.rows_written,
                    r.feasible,
                    path.display()
                )
            }
            Err(e) => unreadable(&path, e),
        }
    };
    Err(UserError::new(format!(
        "part {}: {} {why}",
        r.shard(),
        dir.record(r.shard()).display()
    ))
    .with_hint(format!(
        "the record was edited or copied from another part; remove it and run racksweep run <SWEEP> --shard {} --resume",
        r.shard()
    ))
    .into())
}

/// What a record says of `path`, a file that matches the checksum the record keeps and does not
/// decode: racksweep wrote both, so both were changed since.
fn unreadable(path: &std::path::Path, why: impl std::fmt::Display) -> String {
    format!(
        "binds {} by its checksum, a file that is not readable Parquet ({why})",
        path.display()
    )
}

/// "12 does_not_fit, 3 dtype_unsupported" (or "none").
fn reason_counts(counts: &BTreeMap<String, u64>) -> String {
    if counts.is_empty() {
        return "none".to_owned();
    }
    let parts: Vec<String> = counts.iter().map(|(k, n)| format!("{n} {k}")).collect();
    parts.join(", ")
}

/// What a part file's footer says of its rows.
struct Footer {
    rows: u64,
    /// Nulls of the reason column; `None` where a chunk's count is missing.
    feasible: Option<u64>,
    /// Configurations per infeasible reason ([`INFEASIBLE_KEY`]); `None` for a file written
    /// before the key. A value that does not parse is an empty map, which no committed record
    /// with infeasible configurations matches.
    infeasible: Option<BTreeMap<String, u64>>,
}

/// Rows of a Parquet file, nulls of its reason column and its counts per reason, from its
/// footer (the writer keeps column-chunk statistics and the counts). The inner error is a footer
/// that does not decode: racksweep wrote it, so the file was changed since.
fn footer_counts(path: &std::path::Path) -> Result<Result<Footer, parquet::errors::ParquetError>> {
    use anyhow::Context as _;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let reader = match SerializedFileReader::new(file) {
        Ok(reader) => reader,
        Err(e) => return Ok(Err(e)),
    };
    let meta = reader.metadata();
    let rows = u64::try_from(meta.file_metadata().num_rows())?;
    let reason = meta
        .file_metadata()
        .schema_descr()
        .columns()
        .iter()
        .position(|c| c.name() == REASON_COLUMN);
    let nulls = reason.and_then(|i| {
        meta.row_groups()
            .iter()
            .map(|g| g.column(i).statistics()?.null_count_opt())
            .sum::<Option<u64>>()
    });
    let infeasible = meta
        .file_metadata()
        .key_value_metadata()
        .and_then(|kv| kv.iter().find(|kv| kv.key == INFEASIBLE_KEY))
        .map(|kv| {
            kv.value
                .as_deref()
                .and_then(|v| serde_json::from_str(v).ok())
                .unwrap_or_default()
        });
    Ok(Ok(Footer {
        rows,
        feasible: nulls,
        infeasible,
    }))
}

/// The frontier a part's record names is the one its frontier file holds (the file is checked
/// against the record's SHA-256 before this): an edited id list would change the run's frontier.
fn check_frontier_ids(dir: &RunDir, r: &PartRecord) -> Result<()> {
    let path = dir.part_pareto(r.shard());
    // The file matches the record's checksum: one that does not decode was changed with it.
    let ids = crate::analyze::config_ids(&path).map_err(|e| {
        UserError::new(format!(
            "part {}: {} {}",
            r.shard(),
            dir.record(r.shard()).display(),
            unreadable(&path, format!("{e:#}"))
        ))
        .with_hint("the commit record was altered; run the part again")
    })?;
    if ids != r.frontier_config_ids {
        return Err(UserError::new(format!(
            "part {}: {} names other frontier rows than {} holds",
            r.shard(),
            dir.record(r.shard()).display(),
            dir.part_pareto(r.shard()).display()
        ))
        .with_hint("the commit record was altered; run the part again")
        .into());
    }
    Ok(())
}

struct Finish<'a> {
    plan: &'a Plan<'a>,
    records: &'a [PartRecord],
    clock: Clock,
}

impl SpaceFn for Finish<'_> {
    type Output = Result<Manifest>;

    fn call<S: Space>(self, space: &S) -> Result<Manifest> {
        let rows: Vec<S::Row> = self
            .records
            .iter()
            .flat_map(|r| frontier_rows(space, r))
            .collect();
        finish(self.plan, self.records, &rows, self.clock)
    }
}

/// The rows of a committed part's frontier, evaluated again from the config_ids its record
/// names: the model is pure, so they are the rows the part's frontier file holds.
pub(super) fn frontier_rows<'a, S: Space>(
    space: &'a S,
    record: &'a PartRecord,
) -> impl Iterator<Item = S::Row> + 'a {
    record
        .frontier_config_ids
        .iter()
        .map(|&config_id| space.evaluate(config_id))
}

/// Writes the frontier of the committed `records` (every part of the run), whose frontiers'
/// rows are `rows` in part order, and the complete manifest.
pub(super) fn finish<R: Record>(
    plan: &Plan,
    records: &[PartRecord],
    rows: &[R],
    clock: Clock,
) -> Result<Manifest> {
    plan.lock.check()?;
    let (size, pareto_sha256) = write_frontier(plan, records, rows)?;
    let feasible_only = records.first().is_some_and(|r| r.feasible_only);
    let mut m = manifest(plan, records, feasible_only, true, clock);
    m.frontier_size = size;
    m.pareto_sha256 = pareto_sha256;
    plan.lock.check()?;
    run_dir::write_atomic(&plan.dir.manifest(), m.json()?.as_bytes())?;
    Ok(m)
}

/// Writes `pareto.parquet` and `pareto.md`: the frontier of the union of the parts' frontiers
/// (which is the frontier of the union of their rows). Returns the frontier's size and the
/// SHA-256 of `pareto.parquet`.
fn write_frontier<R: Record>(
    plan: &Plan,
    records: &[PartRecord],
    rows: &[R],
) -> Result<(u64, String)> {
    let Plan { sweep, dir, .. } = plan;
    let h = sweep.header();
    let mut frontier = Frontier::new(h.objectives.to_vec(), h.constraints.to_vec());
    frontier.extend(rows);
    let labels = sweep.labels();
    let tmp = run_dir::tmp_path(&dir.pareto_parquet());
    let mut pareto = ParquetSink::create_frontier(&tmp, labels.clone(), sweep.file_metadata())?;
    pareto.write_frontier(frontier.rows(), &frontier.tie_groups())?;
    let sha256 = pareto.finish()?;
    run_dir::rename(&tmp, &dir.pareto_parquet())?;
    let totals = Totals {
        configurations: records.iter().map(PartRecord::configurations).sum(),
        feasible: records.iter().map(|r| r.feasible).sum(),
    };
    let md = markdown::render(sweep, &frontier, &labels, &totals);
    run_dir::write_atomic(&dir.pareto_md(), md.as_bytes())?;
    Ok((frontier.rows().len() as u64, sha256))
}

/// The manifest of a run whose committed parts are `records`. `wall_time_s` is the larger of
/// the parts' evaluation times summed and the time since `clock` started: the process's time
/// for a single uninterrupted run, the evaluation time of a sharded or resumed one, so that
/// `configs_per_s` is an evaluation rate either way. Without the frontier, which
/// [`finish`] adds.
pub(super) fn manifest(
    plan: &Plan,
    records: &[PartRecord],
    feasible_only: bool,
    complete: bool,
    clock: Clock,
) -> Manifest {
    let sweep = plan.sweep;
    let axes: BTreeMap<String, u64> = sweep
        .axes()
        .into_iter()
        .map(|(a, n)| (a.to_string(), n))
        .collect();
    let h = sweep.header();
    let mut infeasible: BTreeMap<String, u64> = BTreeMap::new();
    for (reason, n) in records.iter().flat_map(|r| &r.infeasible) {
        *infeasible.entry(reason.clone()).or_default() += n;
    }
    let configurations: u64 = records.iter().map(PartRecord::configurations).sum();
    let parts_s: f64 = records.iter().map(|r| r.wall_time_s).sum();
    let wall_time_s = parts_s.max(clock.started.elapsed().as_secs_f64());
    Manifest {
        racksweep_version: env!("CARGO_PKG_VERSION").into(),
        mode: sweep.mode(),
        sweep_name: h.name.clone(),
        sweep_file: records
            .first()
            .map_or_else(|| h.path.display().to_string(), |r| r.sweep_file.clone()),
        sweep_sha256: h.sha256.clone(),
        model: h.model_id().to_string(),
        workload: sweep
            .workload()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
        workloads: match sweep.workload_labels() {
            w if w.len() > 1 => w,
            _ => Vec::new(),
        },
        kv_admission: sweep.kv_admission(),
        own_numbers: h.catalog.own_numbers(),
        configurations,
        axes,
        parts: plan.parts,
        parts_committed: records.len() as u64,
        rows_written: records.iter().map(|r| r.rows_written).sum(),
        feasible: records.iter().map(|r| r.feasible).sum(),
        infeasible,
        frontier_size: 0,
        pareto_sha256: String::new(),
        objectives: h.objectives.iter().map(|o| o.to_string()).collect(),
        constraints: h.constraints.iter().map(|c| c.to_string()).collect(),
        feasible_only,
        threads: records.iter().map(|r| r.threads).max().unwrap_or(0),
        started_at: rfc3339(clock.started_at),
        finished_at: rfc3339(SystemTime::now()),
        wall_time_s,
        configs_per_s: configurations as f64 / wall_time_s.max(1e-9),
        complete,
    }
}
