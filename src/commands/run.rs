//! `racksweep run`: evaluate a sweep, or one shard of it, into its run directory.
//!
//! The rows are written as parts (`configs/part-K-of-N.parquet`, see `output::run_dir`). A single
//! process evaluates every part in turn and then merges; `--shard K/N` evaluates one part and
//! leaves the merge to `racksweep merge`. A part is committed atomically, so after a crash (or
//! SIGINT/SIGTERM, which stop after the chunk in flight) `--resume` evaluates only the parts that
//! were not committed and yields exactly the files of an uninterrupted run.

use std::fs;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::{Instant, SystemTime};

use anyhow::{Context as _, Result};
use indicatif::{ProgressBar, ProgressStyle};

use crate::cli::RunArgs;
use crate::columns::Record;
use crate::commands::merge;
use crate::engine::{Job, Space};
use crate::error::{Interrupted, UserError};
use crate::output::manifest::{Manifest, rfc3339};
use crate::output::parquet::ParquetSink;
use crate::output::run_dir::{self, PartRecord, PartState, RunDir, Verified};
use crate::pareto::Frontier;
use crate::shard::Shard;
use crate::space;
use crate::spec::{self, Sweep, thousands};

/// What a finished `run` reports.
pub enum Outcome {
    /// Every part written and merged.
    Run {
        run_dir: PathBuf,
        manifest: Manifest,
    },
    /// One shard written (or found already committed, with `--resume`).
    Shard {
        run_dir: PathBuf,
        record: PartRecord,
        reused: bool,
    },
}

pub fn run(args: RunArgs) -> Result<Option<String>> {
    let spec = spec::load(&args.sweep, args.max_configs)?;
    if args.shard_count.is_some() && args.shard.as_deref() != Some("auto") {
        return Err(UserError::new("--shard-count only goes with --shard auto")
            .with_hint("--shard K/N names the count itself")
            .into());
    }
    let shard = match args.shard.as_deref() {
        None => None,
        Some("auto") => Some(Shard::from_env(
            |k| std::env::var(k).ok(),
            args.shard_count,
        )?),
        Some(text) => Some(Shard::parse(text)?),
    };
    let threads = args.threads.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |t| t as usize,
    );
    let stop = stop_on_signals()?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .context("starting worker threads")?;
    let outcome = pool.install(|| match shard {
        Some(s) => execute_shard(&spec, &args, s, threads, &stop),
        None => execute(&spec, &args, threads, &stop),
    })?;
    if args.quiet {
        return Ok(None);
    }
    Ok(Some(match outcome {
        Outcome::Run {
            run_dir,
            manifest: m,
        } => format!(
            "wrote {}: {} configurations ({} feasible) in {} part{}, frontier of {}, {:.2} s ({} configs/s)",
            run_dir.display(),
            thousands(m.configurations),
            thousands(m.feasible),
            m.parts,
            if m.parts == 1 { "" } else { "s" },
            m.frontier_size,
            m.wall_time_s,
            thousands(m.configs_per_s.round() as u64)
        ),
        Outcome::Shard {
            run_dir,
            record: r,
            reused,
        } => format!(
            "{} part {} of {} in {}: {} configurations ({} feasible), frontier of {}{}",
            if reused { "kept committed" } else { "wrote" },
            r.part,
            r.parts,
            run_dir.display(),
            thousands(r.configurations()),
            thousands(r.feasible),
            r.frontier_config_ids.len(),
            if reused {
                String::new()
            } else {
                format!(", {:.2} s", r.wall_time_s)
            }
        ),
    }))
}

/// SIGINT and SIGTERM set the returned signal number; the engine stops after the chunk in
/// flight. A second signal ends the process at once (exit code 1).
fn stop_on_signals() -> Result<Arc<AtomicUsize>> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let stop = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(std::sync::atomic::AtomicBool::new(false));
    for signal in [SIGINT, SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(signal, 1, Arc::clone(&seen))
            .context("installing signal handlers")?;
        signal_hook::flag::register(signal, Arc::clone(&seen))
            .context("installing signal handlers")?;
        signal_hook::flag::register_usize(signal, Arc::clone(&stop), signal as usize)
            .context("installing signal handlers")?;
    }
    Ok(stop)
}

/// A single process: every part in turn, then the merge.
fn execute(spec: &Sweep, args: &RunArgs, threads: usize, stop: &AtomicUsize) -> Result<Outcome> {
    let dir = RunDir::new(args.out.join(&spec.header().name));
    let started_at = SystemTime::now();
    let clock = Instant::now();
    fs::create_dir_all(&args.out).map_err(|e| {
        UserError::new(format!("cannot create {}: {e}", args.out.display()))
            .with_hint("pass --out with a writable directory")
    })?;
    let _lock = dir.lock()?;
    if dir.root.exists() {
        if args.force {
            if !dir.is_run()? {
                return Err(UserError::new(format!(
                    "{} exists and is not a racksweep run directory; --force removes only runs",
                    dir.root.display()
                ))
                .with_hint("move it away, or pass --out to write elsewhere")
                .into());
            }
            fs::remove_dir_all(&dir.root)
                .with_context(|| format!("removing {}", dir.root.display()))?;
        } else if args.resume {
            if !dir.never_started()? {
                check_same_sweep(&dir, spec)?;
            }
        } else {
            return Err(
                UserError::new(format!("{} already exists", dir.root.display()))
                    .with_hint("pass --resume to continue it, --force to replace it, or --out to write elsewhere")
                    .into(),
            );
        }
    }
    dir.create(&spec.header().text)?;
    let total = spec.len();
    let parts = match dir.part_counts()?.as_slice() {
        [] => Shard::count_for(total, args.part_rows),
        [n] => *n,
        several => return Err(dir.mixed_part_counts(several).into()),
    };
    let progress = progress_bar(total, args.quiet);
    let mut records = Vec::new();
    let mut verified = Verified::default();
    for index in 0..parts {
        let s = Shard {
            index,
            count: parts,
        };
        if let Some(record) = committed(&dir, s, spec, &mut verified)? {
            check_same_flags(&dir, &record, args)?;
            progress.inc(record.configurations());
            records.push(record);
            continue;
        }
        match write_part(spec, args, &dir, s, threads, stop, &progress)? {
            Some(record) => records.push(record),
            None => {
                progress.finish_and_clear();
                let m = merge::manifest(
                    spec,
                    &records,
                    parts,
                    args.feasible_only,
                    false,
                    started_at,
                    clock,
                );
                run_dir::write_atomic(&dir.manifest(), merge::json(&m)?.as_bytes())?;
                return Err(interrupted(stop, &dir).into());
            }
        }
    }
    progress.finish_and_clear();
    let manifest = merge::finish(spec, &dir, &records, parts, started_at, clock)?;
    Ok(Outcome::Run {
        run_dir: dir.root,
        manifest,
    })
}

/// One shard of a run that `racksweep merge` completes.
fn execute_shard(
    spec: &Sweep,
    args: &RunArgs,
    s: Shard,
    threads: usize,
    stop: &AtomicUsize,
) -> Result<Outcome> {
    let dir = RunDir::new(args.out.join(&spec.header().name));
    // Shards start together: each holds the run shared and its part to itself, creates what is
    // missing, then checks it is its sweep.
    let _lock = dir.lock_part(s)?;
    dir.create(&spec.header().text)?;
    check_same_sweep(&dir, spec)?;
    if let Some(other) = dir.part_counts()?.into_iter().find(|&n| n != s.count) {
        return Err(dir.mixed_part_counts(&[other, s.count]).into());
    }
    if let Some(record) = committed(&dir, s, spec, &mut Verified::default())? {
        if args.resume {
            check_same_flags(&dir, &record, args)?;
            return Ok(Outcome::Shard {
                run_dir: dir.root,
                record,
                reused: true,
            });
        }
        if !args.force {
            return Err(UserError::new(format!(
                "part {s} of {} is already written",
                dir.root.display()
            ))
            .with_hint("pass --resume to keep it (safe for requeued array tasks), or --force to write it again")
            .into());
        }
    }
    let progress = progress_bar(s.range(spec.len()).count() as u64, args.quiet);
    let record = write_part(spec, args, &dir, s, threads, stop, &progress)?;
    progress.finish_and_clear();
    match record {
        Some(record) => Ok(Outcome::Shard {
            run_dir: dir.root,
            record,
            reused: false,
        }),
        None => Err(interrupted(stop, &dir).into()),
    }
}

/// Evaluates part `s` and commits it: rows, then its frontier, then its record. Returns `None`
/// if a signal stopped it (its temporary files are removed).
fn write_part(
    spec: &Sweep,
    args: &RunArgs,
    dir: &RunDir,
    s: Shard,
    threads: usize,
    stop: &AtomicUsize,
    progress: &ProgressBar,
) -> Result<Option<PartRecord>> {
    let part = Part {
        spec,
        args,
        dir,
        s,
        threads,
        stop,
        progress,
    };
    match spec {
        Sweep::Inference(inference) => {
            let ctx = inference.context();
            part.write(&space::Inference {
                ctx: &ctx,
                grid: &inference.grid,
            })
        }
        Sweep::Training(training) => part.write(&space::Training::new(training)),
    }
}

/// One part to write, and where.
struct Part<'a> {
    spec: &'a Sweep,
    args: &'a RunArgs,
    dir: &'a RunDir,
    s: Shard,
    threads: usize,
    stop: &'a AtomicUsize,
    progress: &'a ProgressBar,
}

impl Part<'_> {
    fn write<S: Space>(&self, space: &S) -> Result<Option<PartRecord>> {
        let Part {
            spec,
            args,
            dir,
            s,
            threads,
            stop,
            progress,
        } = *self;
        dir.remove_part(s)?;
        let clock = Instant::now();
        let header = spec.header();
        let labels = spec.labels();
        let metadata = spec.file_metadata();
        let range = s.range(space.len());
        let configs = dir.configs(s);
        let configs_tmp = run_dir::tmp_path(&configs);
        let mut sink = ParquetSink::create(&configs_tmp, labels.clone(), metadata.clone())?;
        let job = Job {
            space,
            labels: &labels,
            feasible_only: args.feasible_only,
            stop,
        };
        let frontier = Frontier::new(header.objectives.to_vec(), header.constraints.to_vec());
        // Stopped by a signal, or failed (a full disk): no temporary file is left behind.
        let tally = match job
            .run(range.clone(), frontier, &mut sink, progress)
            .with_context(|| format!("writing {}", configs_tmp.display()))
        {
            Ok(Some(tally)) => tally,
            stopped_or_failed => {
                drop(sink);
                dir.remove_part(s)?;
                return stopped_or_failed.map(|_| None);
            }
        };
        let configs_sha256 = match sink
            .finish()
            .with_context(|| format!("writing {}", configs_tmp.display()))
        {
            Ok(sha) => sha,
            Err(e) => {
                dir.remove_part(s)?;
                return Err(e);
            }
        };
        let pareto = dir.part_pareto(s);
        let pareto_tmp = run_dir::tmp_path(&pareto);
        let mut sink = ParquetSink::create(&pareto_tmp, labels, metadata)?;
        let pareto_sha256 = sink
            .write_rows(tally.frontier.rows())
            .and_then(|()| sink.finish())
            .with_context(|| format!("writing {}", pareto_tmp.display()));
        let pareto_sha256 = match pareto_sha256 {
            Ok(sha) => sha,
            Err(e) => {
                dir.remove_part(s)?;
                return Err(e);
            }
        };
        run_dir::rename(&configs_tmp, &configs)?;
        run_dir::rename(&pareto_tmp, &pareto)?;
        let record = PartRecord {
            racksweep_version: env!("CARGO_PKG_VERSION").into(),
            sweep_sha256: header.sha256.to_string(),
            sweep_file: header.path.display().to_string(),
            part: s.index,
            parts: s.count,
            first_config_id: range.start,
            end_config_id: range.end,
            rows_written: tally.written,
            feasible: tally.feasible,
            infeasible: tally
                .infeasible
                .iter()
                .enumerate()
                .filter(|&(_, &n)| n > 0)
                .map(|(r, &n)| (S::Row::reason_name(r).to_string(), n))
                .collect(),
            feasible_only: args.feasible_only,
            frontier_config_ids: tally
                .frontier
                .rows()
                .iter()
                .map(|r| r.config_id())
                .collect(),
            configs_bytes: fs::metadata(&configs)?.len(),
            configs_sha256,
            pareto_sha256,
            threads,
            wall_time_s: clock.elapsed().as_secs_f64(),
            finished_at: rfc3339(SystemTime::now()),
        };
        let json = serde_json::to_string_pretty(&record)? + "\n";
        run_dir::write_atomic(&dir.record(s), json.as_bytes())?;
        Ok(Some(record))
    }
}

/// Part `s`'s record if it is committed; a part whose files do not match its record is an
/// error naming it (something else wrote or altered it: nothing is resumed on top of that).
fn committed(
    dir: &RunDir,
    s: Shard,
    spec: &Sweep,
    verified: &mut Verified,
) -> Result<Option<PartRecord>> {
    match dir.part(s, &spec.header().sha256, verified) {
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

/// The run directory's `sweep.toml` must be this sweep, byte for byte.
fn check_same_sweep(dir: &RunDir, spec: &Sweep) -> Result<()> {
    let spec = spec.header();
    let text = fs::read_to_string(dir.sweep()).map_err(|e| {
        UserError::new(format!(
            "{} is not a racksweep run directory (cannot read sweep.toml: {e})",
            dir.root.display()
        ))
        .with_hint("pass --force to replace it, or --out to write elsewhere")
    })?;
    if text != spec.text {
        return Err(UserError::new(format!(
            "{} holds a run of a different sweep (its sweep.toml differs from {})",
            dir.root.display(),
            spec.path.display()
        ))
        .with_hint("resume with the same sweep file, or pass --force to start over")
        .into());
    }
    Ok(())
}

/// Resuming keeps the flags that shape the rows.
fn check_same_flags(dir: &RunDir, record: &PartRecord, args: &RunArgs) -> Result<()> {
    if record.feasible_only != args.feasible_only {
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
        signal: stop.load(std::sync::atomic::Ordering::Relaxed) as i32,
        run_dir: dir.root.clone(),
    }
}

fn progress_bar(total: u64, quiet: bool) -> ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total);
    let style = ProgressStyle::with_template(
        "{elapsed_precise} [{bar:40}] {human_pos}/{human_len} configs  {rate}  ETA {eta}",
    )
    .expect("valid template")
    .with_key(
        "rate",
        |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = write!(w, "{} configs/s", thousands(state.per_sec() as u64));
        },
    )
    .progress_chars("=> ");
    bar.set_style(style);
    bar
}
