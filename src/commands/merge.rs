//! `racksweep merge`: checks that every part of a sharded run is committed and from the same
//! sweep, then writes the run's frontier (`pareto.parquet`, `pareto.md`) and its complete
//! `manifest.json`. A single-process `run` ends with the same [`finish`], so a merged run and a
//! single-process run of one sweep have the same rows and the same frontier.

use std::collections::BTreeMap;
use std::time::{Instant, SystemTime};

use anyhow::Result;

use crate::cli::MergeArgs;
use crate::engine::Space;
use crate::error::UserError;
use crate::output::manifest::{Manifest, rfc3339};
use crate::output::markdown::{self, Totals};
use crate::output::parquet::ParquetSink;
use crate::output::run_dir::{self, PartRecord, PartState, RunDir, Verified};
use crate::pareto::Frontier;
use crate::shard::Shard;
use crate::space;
use crate::spec::{self, Sweep, thousands};

pub fn run(args: MergeArgs) -> Result<Option<String>> {
    let started_at = SystemTime::now();
    let clock = Instant::now();
    let dir = RunDir::new(args.run_dir.clone());
    let _lock = dir.lock_existing()?;
    if !dir.sweep().is_file() {
        return Err(UserError::new(format!(
            "{} is not a racksweep run directory (it has no sweep.toml)",
            dir.root.display()
        ))
        .with_hint("pass the directory `racksweep run --shard` wrote: <out>/<sweep name>")
        .into());
    }
    let spec = spec::load(&dir.sweep(), u64::MAX)?;
    let parts = match dir.part_counts()?.as_slice() {
        [] => {
            return Err(
                UserError::new(format!("{} holds no parts", dir.root.display()))
                    .with_hint("run the shards first: racksweep run <SWEEP> --shard K/N")
                    .into(),
            );
        }
        [n] => *n,
        several => return Err(dir.mixed_part_counts(several).into()),
    };
    let mut records = Vec::new();
    let mut missing = Vec::new();
    let mut verified = Verified::default();
    for index in 0..parts {
        let s = Shard {
            index,
            count: parts,
        };
        match dir.part(s, &spec.header().sha256, &mut verified) {
            PartState::Committed(r) => {
                check_frontier_ids(&dir, &r)?;
                records.push(*r);
            }
            PartState::Absent => missing.push(index.to_string()),
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
        return Err(UserError::new(format!(
            "{}: part{} {} of {parts} missing or incomplete",
            dir.root.display(),
            if missing.len() == 1 { " is" } else { "s are" },
            missing.join(", "),
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
    let m = finish(&spec, &dir, &records, parts, started_at, clock)?;
    if args.quiet {
        return Ok(None);
    }
    Ok(Some(format!(
        "merged {} parts of {}: {} configurations ({} feasible), frontier of {}",
        m.parts,
        dir.root.display(),
        thousands(m.configurations),
        thousands(m.feasible),
        m.frontier_size
    )))
}

/// The frontier a part's record names is the one its frontier file holds (the file is checked
/// against the record's SHA-256 before this): an edited id list would change the run's frontier.
fn check_frontier_ids(dir: &RunDir, r: &PartRecord) -> Result<()> {
    let ids = crate::analyze::config_ids(&dir.part_pareto(r.shard()))?;
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

/// Writes the frontier of the committed `records` (every part of the run) and the complete
/// manifest, each file atomically and the manifest last.
pub fn finish(
    spec: &Sweep,
    dir: &RunDir,
    records: &[PartRecord],
    parts: u64,
    started_at: SystemTime,
    clock: Instant,
) -> Result<Manifest> {
    let (size, pareto_sha256) = match spec {
        Sweep::Inference(inference) => {
            let ctx = inference.context();
            let space = space::Inference {
                ctx: &ctx,
                grid: &inference.grid,
            };
            write_frontier(spec, &space, dir, records)?
        }
        Sweep::Training(training) => {
            write_frontier(spec, &space::Training::new(training), dir, records)?
        }
    };
    let feasible_only = records.first().is_some_and(|r| r.feasible_only);
    let mut m = manifest(spec, records, parts, feasible_only, true, started_at, clock);
    m.frontier_size = size;
    m.pareto_sha256 = pareto_sha256;
    run_dir::write_atomic(&dir.manifest(), json(&m)?.as_bytes())?;
    Ok(m)
}

/// Writes `pareto.parquet` and `pareto.md`; returns the frontier's size and the SHA-256 of
/// `pareto.parquet`.
fn write_frontier<S: Space>(
    spec: &Sweep,
    space: &S,
    dir: &RunDir,
    records: &[PartRecord],
) -> Result<(u64, String)> {
    let frontier = frontier(spec, space, records);
    let labels = spec.labels();
    let tmp = run_dir::tmp_path(&dir.pareto_parquet());
    let mut pareto = ParquetSink::create(&tmp, labels.clone(), spec.file_metadata())?;
    pareto.write_rows(frontier.rows())?;
    let sha256 = pareto.finish()?;
    run_dir::rename(&tmp, &dir.pareto_parquet())?;
    let totals = Totals {
        configurations: records.iter().map(PartRecord::configurations).sum(),
        feasible: records.iter().map(|r| r.feasible).sum(),
    };
    let md = markdown::render(spec, &frontier, &labels, &totals);
    run_dir::write_atomic(&dir.pareto_md(), md.as_bytes())?;
    Ok((frontier.rows().len() as u64, sha256))
}

/// The frontier of the parts' frontiers (the frontier of a union is the frontier of the union
/// of frontiers). Their rows are evaluated again from their config_ids: the model is pure.
fn frontier<S: Space>(spec: &Sweep, space: &S, records: &[PartRecord]) -> Frontier<S::Row> {
    let rows: Vec<S::Row> = records
        .iter()
        .flat_map(|r| &r.frontier_config_ids)
        .map(|&config_id| space.evaluate(config_id))
        .collect();
    let h = spec.header();
    let mut frontier = Frontier::new(h.objectives.to_vec(), h.constraints.to_vec());
    frontier.extend(&rows);
    frontier
}

/// The manifest of a run whose committed parts are `records` (of `parts`). `wall_time_s` is the
/// larger of the parts' evaluation times summed and this process's time since `clock`: the
/// process's time for a single uninterrupted run, the evaluation time of a sharded or resumed
/// one, so that `configs_per_s` is an evaluation rate either way.
pub fn manifest(
    spec: &Sweep,
    records: &[PartRecord],
    parts: u64,
    feasible_only: bool,
    complete: bool,
    started_at: SystemTime,
    clock: Instant,
) -> Manifest {
    let axes: BTreeMap<String, u64> = spec
        .axes()
        .into_iter()
        .map(|(a, n)| (a.to_string(), n))
        .collect();
    let h = spec.header();
    let mut infeasible: BTreeMap<String, u64> = BTreeMap::new();
    for (reason, n) in records.iter().flat_map(|r| &r.infeasible) {
        *infeasible.entry(reason.clone()).or_default() += n;
    }
    let configurations: u64 = records.iter().map(PartRecord::configurations).sum();
    let parts_s: f64 = records.iter().map(|r| r.wall_time_s).sum();
    let wall_time_s = parts_s.max(clock.elapsed().as_secs_f64());
    Manifest {
        racksweep_version: env!("CARGO_PKG_VERSION").into(),
        mode: spec.mode(),
        sweep_name: h.name.to_string(),
        sweep_file: records
            .first()
            .map_or_else(|| h.path.display().to_string(), |r| r.sweep_file.clone()),
        sweep_sha256: h.sha256.to_string(),
        model: h.model_id().to_string(),
        workload: spec
            .workload()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
        kv_admission: spec.kv_admission().map(str::to_string),
        configurations,
        axes,
        parts,
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
        started_at: rfc3339(started_at),
        finished_at: rfc3339(SystemTime::now()),
        wall_time_s,
        configs_per_s: configurations as f64 / wall_time_s.max(1e-9),
        complete,
    }
}

pub fn json(m: &Manifest) -> Result<String> {
    Ok(serde_json::to_string_pretty(m)? + "\n")
}
