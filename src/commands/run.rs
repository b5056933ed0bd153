//! `racksweep run`: evaluate a sweep, or one shard of it, into its run directory.
//!
//! The rows are written as parts (`configs/part-K-of-N.parquet`, see `output::run_dir`). A single
//! process evaluates every part in turn and then merges; `--shard K/N` evaluates one part and
//! leaves the merge to `racksweep merge`. A part is committed atomically, so after a crash (or
//! SIGINT/SIGTERM, which stop after the chunk in flight) `--resume` evaluates only the parts that
//! were not committed and yields exactly the files of an uninterrupted run.
//!
//! The work is `crate::pipeline`'s. This command reads the flags, starts the worker threads and
//! the signal handlers, decides what an existing run directory or committed shard means
//! (`--force`, `--resume`, or an error) and what to print.

mod progress;

use std::fs;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use anyhow::{Context as _, Result};

use crate::cli::{self, RunArgs};
use crate::error::UserError;
use crate::format::thousands;
use crate::output::manifest::Manifest;
use crate::output::run_dir::{PartRecord, RunDir, Verified};
use crate::pipeline::{self, Clock, Options, Plan};
use crate::shard::Shard;
use crate::spec::{self, Sweep};
use progress::Progress;

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
    let sweep = spec::load(&args.sweep, args.max_configs)?;
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
    let outcome = pipeline::workers(threads)?.install(|| match shard {
        Some(s) => one_shard(&sweep, &args, s, threads, &stop),
        None => whole(&sweep, &args, threads, &stop),
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

/// What the run could not tidy and leaves to its user (it does not stop the run), on stderr
/// whether `--quiet` or not.
#[expect(
    clippy::print_stderr,
    reason = "warnings about files beside the run, which the run's outcome does not report"
)]
fn warn(warnings: &[String]) {
    for w in warnings {
        eprintln!("warning: {w}");
    }
}

/// A single process: every part not committed yet, in turn, then the merge.
fn whole(sweep: &Sweep, args: &RunArgs, threads: usize, stop: &AtomicUsize) -> Result<Outcome> {
    let dir = RunDir::new(args.out.join(&sweep.header().name));
    let clock = Clock::start();
    fs::create_dir_all(&args.out).map_err(|e| {
        UserError::new(format!("cannot create {}: {e}", args.out.display()))
            .with_hint("pass --out with a writable directory")
    })?;
    let lock = dir.lock()?;
    warn(&dir.remove_remains());
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
            dir.remove()?;
        } else if args.resume {
            if !dir.never_started()? {
                pipeline::same_sweep(&dir, sweep, "pass --force to start over")?;
            }
        } else {
            return Err(
                UserError::new(format!("{} already exists", dir.root.display()))
                    .with_hint("pass --resume to continue it, --force to replace it, or --out to write elsewhere")
                    .into(),
            );
        }
    }
    dir.create(&sweep.header().text)?;
    let plan = Plan::whole(sweep, dir, lock, args.part_rows)?;
    let progress = progress(args, sweep.len());
    let opts = Options {
        feasible_only: args.feasible_only,
        threads,
        stop,
        progress: progress.bar(),
    };
    let manifest = pipeline::evaluate_all(&plan, &opts, clock)?;
    Ok(Outcome::Run {
        run_dir: plan.dir.root,
        manifest,
    })
}

/// One shard of a run that `racksweep merge` completes.
fn one_shard(
    sweep: &Sweep,
    args: &RunArgs,
    s: Shard,
    threads: usize,
    stop: &AtomicUsize,
) -> Result<Outcome> {
    let dir = RunDir::new(args.out.join(&sweep.header().name));
    // Shards start together: each holds the run shared and its part to itself, creates what is
    // missing, then checks it is its sweep.
    let lock = dir.lock_part(s)?;
    dir.create(&sweep.header().text)?;
    // A shard never removes the run it joins (its --force rewrites only its own part).
    pipeline::same_sweep(
        &dir,
        sweep,
        "write this shard elsewhere with --out (a shard's --force rewrites only its own part)",
    )?;
    let plan = Plan::shard(sweep, dir, lock, s)?;
    if let Some(record) = pipeline::committed(&plan, s, &mut Verified::default())? {
        if args.resume {
            pipeline::same_flags(&plan.dir, &record, args.feasible_only)?;
            return Ok(Outcome::Shard {
                run_dir: plan.dir.root,
                record,
                reused: true,
            });
        }
        if !args.force {
            return Err(UserError::new(format!(
                "part {s} of {} is already written",
                plan.dir.root.display()
            ))
            .with_hint("pass --resume to keep it (safe for requeued array tasks), or --force to write it again")
            .into());
        }
    }
    // A part written again, in a run already merged, leaves its frontier and manifest stale.
    plan.dir.unmerge()?;
    let progress = progress(args, s.range(sweep.len()).count() as u64);
    let opts = Options {
        feasible_only: args.feasible_only,
        threads,
        stop,
        progress: progress.bar(),
    };
    let record = pipeline::evaluate_part(&plan, s, &opts)?;
    Ok(Outcome::Shard {
        run_dir: plan.dir.root,
        record,
        reused: false,
    })
}

/// Progress over `total` configurations as the flags ask (none with `--quiet`).
fn progress(args: &RunArgs, total: u64) -> Progress {
    let mode = if args.quiet {
        cli::Progress::None
    } else {
        args.progress
    };
    Progress::start(mode, total)
}
