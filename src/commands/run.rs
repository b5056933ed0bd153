//! `racksweep run`: evaluate a sweep and write its run directory.
//!
//! Everything is written into a hidden `.<name>.partial-<pid>` directory next to the final one and
//! renamed into place only when every file is complete, so an interrupted run never looks like a
//! finished one.

use std::collections::BTreeMap;
use std::fs;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};

use anyhow::{Context as _, Result};
use indicatif::{ProgressBar, ProgressStyle};

use crate::cli::RunArgs;
use crate::columns::LabelValues;
use crate::engine::{self, Tally};
use crate::error::UserError;
use crate::grid::AXIS_NAMES;
use crate::output::manifest::{Manifest, rfc3339};
use crate::output::markdown::{self, Totals};
use crate::output::parquet::ParquetSink;
use crate::pareto::Frontier;
use crate::perf::Reason;
use crate::spec::{self, Spec, thousands};

/// What a finished run reports.
pub struct Outcome {
    pub run_dir: PathBuf,
    pub manifest: Manifest,
}

pub fn run(args: RunArgs) -> Result<Option<String>> {
    let spec = spec::load(&args.sweep, args.max_configs)?;
    let threads = args.threads.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |t| t as usize,
    );
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .context("starting worker threads")?;
    let outcome = pool.install(|| execute(&spec, &args, threads))?;
    if args.quiet {
        return Ok(None);
    }
    let m = &outcome.manifest;
    Ok(Some(format!(
        "wrote {}: {} configurations ({} feasible), frontier of {}, {:.2} s ({} configs/s)",
        outcome.run_dir.display(),
        thousands(m.configurations),
        thousands(m.feasible),
        m.frontier_size,
        m.wall_time_s,
        thousands(m.configs_per_s.round() as u64)
    )))
}

/// Label dictionaries of a sweep: hardware and rack ids (deduplicated), model and formats.
pub fn labels(spec: &Spec) -> LabelValues {
    let c = &spec.catalog;
    let mut hardware: Vec<String> = Vec::new();
    let mut rack: Vec<String> = Vec::new();
    let key = |values: &mut Vec<String>, id: &str| -> u16 {
        match values.iter().position(|v| v == id) {
            Some(i) => i as u16,
            None => {
                values.push(id.to_string());
                (values.len() - 1) as u16
            }
        }
    };
    let mut hardware_key = Vec::new();
    let mut rack_key = Vec::new();
    for p in &spec.grid.platforms {
        hardware_key.push(key(&mut hardware, &c.gpus[p.gpu].id));
        rack_key.push(key(&mut rack, &c.racks[p.rack].id));
    }
    let dtypes = |v: &[usize]| v.iter().map(|&d| c.dtypes[d].id.clone()).collect();
    LabelValues {
        hardware,
        hardware_key,
        rack,
        rack_key,
        model: c.models[spec.model].id.clone(),
        weight_dtype: dtypes(&spec.grid.weight_dtypes),
        kv_dtype: dtypes(&spec.grid.kv_dtypes),
        ownership: spec
            .grid
            .ownership
            .iter()
            .map(|o| o.as_str().to_string())
            .collect(),
    }
}

/// Key/value metadata stored in every Parquet file of the run.
pub fn file_metadata(spec: &Spec) -> Vec<(String, String)> {
    vec![
        ("racksweep.version".into(), env!("CARGO_PKG_VERSION").into()),
        ("racksweep.sweep_toml".into(), spec.text.clone()),
        ("racksweep.sweep_sha256".into(), spec.sha256.clone()),
    ]
}

fn execute(spec: &Spec, args: &RunArgs, threads: usize) -> Result<Outcome> {
    let run_dir = args.out.join(&spec.name);
    if run_dir.exists() && !args.force {
        return Err(
            UserError::new(format!("{} already exists", run_dir.display()))
                .with_hint("pass --force to replace it, or --out to write elsewhere")
                .into(),
        );
    }
    fs::create_dir_all(&args.out).map_err(|e| {
        UserError::new(format!(
            "cannot create output directory {}: {e}",
            args.out.display()
        ))
        .with_hint("pass --out with a writable directory")
    })?;
    let partial = args
        .out
        .join(format!(".{}.partial-{}", spec.name, std::process::id()));
    if partial.exists() {
        fs::remove_dir_all(&partial)
            .with_context(|| format!("removing stale {}", partial.display()))?;
    }
    fs::create_dir(&partial).with_context(|| format!("creating {}", partial.display()))?;
    let result = write_run(spec, args, threads, &partial).and_then(|manifest| {
        commit(&partial, &run_dir)?;
        Ok(Outcome { run_dir, manifest })
    });
    if result.is_err() {
        let _ = fs::remove_dir_all(&partial);
    }
    result
}

fn write_run(spec: &Spec, args: &RunArgs, threads: usize, dir: &Path) -> Result<Manifest> {
    let started_at = SystemTime::now();
    let clock = Instant::now();
    let ctx = spec.context();
    let labels = labels(spec);
    let metadata = file_metadata(spec);
    let total = spec.grid.len();

    let progress = progress_bar(total, args.quiet);
    let frontier = Frontier::new(spec.objectives.clone(), spec.constraints.clone());
    let mut configs = ParquetSink::create(
        &dir.join("configs.parquet"),
        labels.clone(),
        metadata.clone(),
    )?;
    let stop = std::sync::atomic::AtomicBool::new(false);
    let job = engine::Job {
        ctx: &ctx,
        grid: &spec.grid,
        labels: &labels,
        feasible_only: args.feasible_only,
        stop: &stop,
    };
    let tally = job
        .run(0..total, frontier, &mut configs, &progress)?
        .expect("not stopped");
    configs.finish()?;
    progress.finish_and_clear();

    let mut pareto = ParquetSink::create(&dir.join("pareto.parquet"), labels.clone(), metadata)?;
    pareto.write_rows(tally.frontier.rows())?;
    pareto.finish()?;
    let totals = Totals {
        configurations: tally.evaluated,
        feasible: tally.feasible,
    };
    fs::write(
        dir.join("pareto.md"),
        markdown::render(spec, &tally.frontier, &labels, &totals),
    )?;

    let wall_time_s = clock.elapsed().as_secs_f64();
    let manifest = manifest(
        spec,
        &tally,
        args.feasible_only,
        threads,
        started_at,
        wall_time_s,
    );
    let json = serde_json::to_string_pretty(&manifest)? + "\n";
    fs::write(dir.join("manifest.json"), json)?;
    Ok(manifest)
}

fn manifest(
    spec: &Spec,
    tally: &Tally,
    feasible_only: bool,
    threads: usize,
    started_at: SystemTime,
    wall_time_s: f64,
) -> Manifest {
    let axes: BTreeMap<String, u64> = AXIS_NAMES
        .iter()
        .map(|a| a.to_string())
        .zip(spec.grid.radices())
        .collect();
    let infeasible: BTreeMap<String, u64> = Reason::ALL
        .iter()
        .zip(tally.infeasible)
        .filter(|(_, n)| *n > 0)
        .map(|(r, n)| (r.as_str().to_string(), n))
        .collect();
    Manifest {
        racksweep_version: env!("CARGO_PKG_VERSION").into(),
        sweep_name: spec.name.clone(),
        sweep_file: spec.path.display().to_string(),
        sweep_sha256: spec.sha256.clone(),
        model: spec.catalog.models[spec.model].id.clone(),
        input_tokens: spec.input_tokens,
        output_tokens: spec.output_tokens,
        spec_acceptance: spec.spec_acceptance,
        spec_draft_layers: spec.spec_draft_layers,
        configurations: tally.evaluated,
        axes,
        rows_written: tally.written,
        feasible: tally.feasible,
        infeasible,
        frontier_size: tally.frontier.rows().len() as u64,
        objectives: spec.objectives.iter().map(|o| o.to_string()).collect(),
        constraints: spec.constraints.iter().map(|c| c.to_string()).collect(),
        feasible_only,
        threads,
        started_at: rfc3339(started_at),
        finished_at: rfc3339(SystemTime::now()),
        wall_time_s,
        configs_per_s: tally.evaluated as f64 / wall_time_s.max(1e-9),
        complete: true,
    }
}

/// Moves the finished directory into place; an old one (with --force) is moved aside first and
/// removed only after the new one is in place.
fn commit(partial: &Path, run_dir: &Path) -> Result<()> {
    let old = partial.with_extension("old");
    let replacing = run_dir.exists();
    if replacing {
        fs::rename(run_dir, &old).with_context(|| format!("moving aside {}", run_dir.display()))?;
    }
    fs::rename(partial, run_dir)
        .with_context(|| format!("moving {} into place", run_dir.display()))?;
    if replacing {
        fs::remove_dir_all(&old).with_context(|| format!("removing {}", old.display()))?;
    }
    Ok(())
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
