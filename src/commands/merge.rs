//! `racksweep merge`: completes a sharded run. Checks that every part is committed and from the
//! same sweep, then writes the run's frontier (`pareto.parquet`, `pareto.md`) and its complete
//! `manifest.json` (`pipeline::merge`, which a single-process `run` ends with too, so a merged
//! run and a single-process run of one sweep have the same rows and the same frontier).

use anyhow::Result;

use crate::cli::MergeArgs;
use crate::error::UserError;
use crate::format::thousands;
use crate::output::run_dir::RunDir;
use crate::pipeline::{self, Clock, Plan};
use crate::spec;

pub fn run(args: MergeArgs) -> Result<Option<String>> {
    let clock = Clock::start();
    let dir = RunDir::new(args.run_dir.clone());
    let lock = dir.lock_existing()?;
    if !dir.sweep().is_file() {
        return Err(UserError::new(format!(
            "{} is not a racksweep run directory (it has no sweep.toml)",
            dir.root.display()
        ))
        .with_hint("pass the directory `racksweep run --shard` wrote: <out>/<sweep name>")
        .into());
    }
    let sweep = spec::load(&dir.sweep(), u64::MAX)?;
    let plan = Plan::merge(&sweep, dir, lock)?;
    let m = pipeline::merge(&plan, clock)?;
    if args.quiet {
        return Ok(None);
    }
    Ok(Some(format!(
        "merged {} parts of {}: {} configurations ({} feasible), frontier of {}",
        m.parts,
        plan.dir.root.display(),
        thousands(m.configurations),
        thousands(m.feasible),
        m.frontier_size
    )))
}
