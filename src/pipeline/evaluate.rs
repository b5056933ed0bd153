//! Stages 2 and 3: a part evaluated and committed. The engine streams its rows to a Parquet file
//! and keeps its frontier; both files are written under temporary names and committed by the run
//! directory ([`RunDir::commit_part`]), the part's record last. A part stopped by a signal, or
//! failing, leaves no file behind, so `--resume` simply evaluates it again.

use std::collections::BTreeMap;
use std::fs;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Instant, SystemTime};

use anyhow::{Context as _, Result};
use indicatif::ProgressBar;

use crate::columns::Record;
use crate::engine::{Job, Space};
use crate::error::{Interrupted, UserError};
use crate::output::manifest::{Manifest, rfc3339};
use crate::output::parquet::{INFEASIBLE_KEY, ParquetSink};
use crate::output::run_dir::{self, PartRecord, PartState, RunDir, Verified};
use crate::pareto::Frontier;
use crate::shard::Shard;
use crate::space::{SpaceFn, with_space};

use super::merge::{self, Clock};
use super::plan::Plan;

/// How parts are evaluated.
pub struct Options<'a> {
    /// Write only feasible rows (`--feasible-only`; counts and frontiers still cover all).
    pub feasible_only: bool,
    /// Worker threads of the pool the evaluation runs in (recorded in each part's record).
    pub threads: usize,
    /// Set (by a signal handler, to the signal's number) to stop after the chunk in flight.
    pub stop: &'a AtomicUsize,
    /// Advanced by every configuration evaluated or found committed.
    pub progress: &'a ProgressBar,
}

/// The pool of `threads` worker threads the evaluation runs in (0: rayon's default).
pub fn workers(threads: usize) -> Result<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .context("starting worker threads")
}

/// A whole run: every part of `plan` not committed yet, in turn, then the merge (frontier and
/// manifest). Stopped by a signal, it writes the manifest of the parts committed so far
/// (`"complete": false`) and fails with [`Interrupted`].
pub fn evaluate_all(plan: &Plan, opts: &Options, clock: Clock) -> Result<Manifest> {
    with_space(plan.sweep, EvaluateAll { plan, opts, clock })
}

/// One part (a shard) evaluated and committed, even if it was committed before. Stopped by a
/// signal, it fails with [`Interrupted`].
pub fn evaluate_part(plan: &Plan, s: Shard, opts: &Options) -> Result<PartRecord> {
    let written = with_space(plan.sweep, EvaluatePart { plan, s, opts })?;
    opts.progress.finish_and_clear();
    match written {
        Some(record) => Ok(record),
        None => Err(interrupted(opts.stop, &plan.dir).into()),
    }
}

struct EvaluateAll<'a> {
    plan: &'a Plan<'a>,
    opts: &'a Options<'a>,
    clock: Clock,
}

impl SpaceFn for EvaluateAll<'_> {
    type Output = Result<Manifest>;

    fn call<S: Space>(self, space: &S) -> Result<Manifest> {
        let EvaluateAll { plan, opts, clock } = self;
        let mut records = Vec::new();
        // The rows of every part's frontier, in part order: those of the parts evaluated here
        // as the engine kept them; those of parts committed before evaluated again from their
        // config_ids (the model is pure, and its caches only skip work: the same rows).
        let mut frontier_rows = Vec::new();
        let mut verified = Verified::default();
        for s in plan.shards() {
            if let Some(record) = committed(plan, s, &mut verified)? {
                same_flags(&plan.dir, &record, opts.feasible_only)?;
                opts.progress.inc(record.configurations());
                frontier_rows.extend(merge::frontier_rows(space, &record));
                records.push(record);
                continue;
            }
            match write_part(space, plan, s, opts)? {
                Some((record, frontier)) => {
                    frontier_rows.extend(frontier);
                    records.push(record);
                }
                None => {
                    opts.progress.finish_and_clear();
                    let m = merge::manifest(plan, &records, opts.feasible_only, false, clock);
                    run_dir::write_atomic(&plan.dir.manifest(), m.json()?.as_bytes())?;
                    return Err(interrupted(opts.stop, &plan.dir).into());
                }
            }
        }
        opts.progress.finish_and_clear();
        merge::finish(plan, &records, &frontier_rows, clock)
    }
}

struct EvaluatePart<'a> {
    plan: &'a Plan<'a>,
    s: Shard,
    opts: &'a Options<'a>,
}

impl SpaceFn for EvaluatePart<'_> {
    type Output = Result<Option<PartRecord>>;

    fn call<S: Space>(self, space: &S) -> Result<Option<PartRecord>> {
        let EvaluatePart { plan, s, opts } = self;
        Ok(write_part(space, plan, s, opts)?.map(|(record, _)| record))
    }
}

/// Evaluates part `s` and commits it: rows, then its frontier, then its record. Returns the
/// record and the frontier's rows, or `None` if a signal stopped it (its temporary files are
/// removed).
fn write_part<S: Space>(
    space: &S,
    plan: &Plan,
    s: Shard,
    opts: &Options,
) -> Result<Option<(PartRecord, Vec<S::Row>)>> {
    // Clearing the part's slot removes what is committed there, and the commit replaces it:
    // both only while this process is still its writer.
    plan.lock.check()?;
    plan.dir.remove_part(s)?;
    let written =
        write_files(space, plan, s, opts).and_then(|written| plan.lock.check().map(|()| written));
    match written {
        Ok(Some((record, rows))) => {
            plan.dir.commit_part(&record)?;
            Ok(Some((record, rows)))
        }
        // Stopped by a signal, failed (a full disk) or the lock lost: no temporary file of this
        // process is left behind, and nothing another process wrote is touched.
        stopped_or_failed => {
            plan.dir.remove_own_temporaries(s)?;
            stopped_or_failed
        }
    }
}

/// Part `s`'s two files under their temporary names, and the record that commits them; `None`
/// if a signal stopped it.
fn write_files<S: Space>(
    space: &S,
    plan: &Plan,
    s: Shard,
    opts: &Options,
) -> Result<Option<(PartRecord, Vec<S::Row>)>> {
    let Plan { sweep, dir, .. } = plan;
    let clock = Instant::now();
    let header = sweep.header();
    let labels = sweep.labels();
    let metadata = sweep.file_metadata();
    let range = s.range(space.len());
    let configs_tmp = run_dir::tmp_path(&dir.configs(s));
    let mut sink = ParquetSink::create(&configs_tmp, labels.clone(), metadata.clone())?;
    let job = Job {
        space,
        labels: &labels,
        feasible_only: opts.feasible_only,
        stop: opts.stop,
    };
    let frontier = Frontier::new(header.objectives.to_vec(), header.constraints.to_vec());
    let Some(tally) = job
        .run(range.clone(), frontier, &mut sink, opts.progress)
        .with_context(|| format!("writing {}", configs_tmp.display()))?
    else {
        return Ok(None);
    };
    let infeasible: BTreeMap<String, u64> = tally
        .infeasible
        .iter()
        .enumerate()
        .filter(|&(_, &n)| n > 0)
        .map(|(r, &n)| (S::Row::reason_name(r).to_string(), n))
        .collect();
    sink.append_metadata(INFEASIBLE_KEY, serde_json::to_string(&infeasible)?);
    let configs_sha256 = sink
        .finish()
        .with_context(|| format!("writing {}", configs_tmp.display()))?;
    let pareto_tmp = run_dir::tmp_path(&dir.part_pareto(s));
    let mut sink = ParquetSink::create(&pareto_tmp, labels, metadata)?;
    let pareto_sha256 = sink
        .write_rows(tally.frontier.rows())
        .and_then(|()| sink.finish())
        .with_context(|| format!("writing {}", pareto_tmp.display()))?;
    let record = PartRecord {
        racksweep_version: env!("CARGO_PKG_VERSION").into(),
        sweep_sha256: header.sha256.clone(),
        sweep_file: header.path.display().to_string(),
        part: s.index,
        parts: s.count,
        first_config_id: range.start,
        end_config_id: range.end,
        rows_written: tally.written,
        feasible: tally.feasible,
        infeasible,
        feasible_only: opts.feasible_only,
        frontier_config_ids: tally
            .frontier
            .rows()
            .iter()
            .map(|r| r.config_id())
            .collect(),
        configs_bytes: fs::metadata(&configs_tmp)
            .with_context(|| format!("reading {}", configs_tmp.display()))?
            .len(),
        configs_sha256,
        pareto_sha256,
        threads: opts.threads,
        wall_time_s: clock.elapsed().as_secs_f64(),
        finished_at: rfc3339(SystemTime::now()),
    };
    Ok(Some((record, tally.frontier.rows().to_vec())))
}

/// Part `s`'s record if it is committed; a part whose files do not match its record is an
/// error naming it (something else wrote or altered it: nothing is resumed on top of that).
/// `verified` saves hashing a file twice.
pub fn committed(plan: &Plan, s: Shard, verified: &mut Verified) -> Result<Option<PartRecord>> {
    let dir = &plan.dir;
    match dir.part(s, &plan.sweep.header().sha256, verified) {
        PartState::Committed(record) => Ok(Some(*record)),
        PartState::Absent => Ok(None),
        PartState::Corrupt(why) => Err(UserError::new(format!("part {s}: {why}"))
            .with_hint(format!(
                "remove {} to have --resume write the part again, or pass --force to start over",
                dir.record(s).display()
            ))
            .into()),
    }
}

/// Resuming keeps the flags that shape the rows: a committed part was written with or without
/// `--feasible-only` as this run is.
pub fn same_flags(dir: &RunDir, record: &PartRecord, feasible_only: bool) -> Result<()> {
    if record.feasible_only != feasible_only {
        let how = if record.feasible_only {
            "with"
        } else {
            "without"
        };
        return Err(UserError::new(format!(
            "{} was run {how} --feasible-only",
            dir.root.display()
        ))
        .with_hint(format!(
            "resume it {how} --feasible-only, or pass --force to start over"
        ))
        .into());
    }
    Ok(())
}

fn interrupted(stop: &AtomicUsize, dir: &RunDir) -> Interrupted {
    Interrupted {
        signal: stop.load(Ordering::Relaxed) as i32,
        run_dir: dir.root.clone(),
    }
}
