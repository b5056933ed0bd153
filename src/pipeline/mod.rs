//! The run pipeline: what `racksweep run` and `racksweep merge` do between reading their flags
//! and printing their summary, stage by stage.
//!
//! 1. **Plan** ([`Plan`], `plan.rs`): a loaded sweep, its run directory, and its grid split
//!    into parts (`shard::Shard`), the split a run directory already holds kept.
//! 2. **Evaluate** (`evaluate.rs`): each part's grid indices evaluated in parallel by the engine,
//!    its rows streamed to Parquet and its own frontier kept.
//! 3. **Commit** (`evaluate.rs`, through [`RunDir::commit_part`]): the part's files renamed into
//!    place and its record (counts, frontier config_ids, SHA-256 of its files) written last.
//! 4. **Merge** (`merge.rs`): the committed parts gathered and checked.
//! 5. **Frontier**: the frontier of the parts' frontiers, written as `pareto.parquet` and
//!    `pareto.md`.
//! 6. **Manifest**: `manifest.json`, written last.
//!
//! The stages that handle rows run on the sweep's design space, which
//! [`crate::space::with_space`] picks once per call, so they are compiled once per mode. The
//! run directory's layout, locks and checks belong to [`crate::output::run_dir`]. Policy stays
//! with the commands: whether an existing run directory is replaced, resumed or refused, whether
//! a committed shard is kept or written again, what is printed and the exit code.
//!
//! [`RunDir::commit_part`]: crate::output::run_dir::RunDir::commit_part

mod evaluate;
mod merge;
mod plan;

pub use evaluate::{Options, committed, evaluate_all, evaluate_part, same_flags, workers};
pub use merge::{Clock, merge};
pub use plan::{Plan, same_sweep};
