//! racksweep as a library: the sweep engine behind the `racksweep` binary, exposed for the
//! integration tests and benchmarks.

pub mod analyze;
pub mod catalog;
pub mod cli;
pub mod columns;
pub mod commands;
pub mod engine;
pub mod error;
pub mod grid;
pub mod limits;
mod names;
pub mod output;
pub mod pareto;
pub mod perf;
pub mod report;
pub mod shard;
pub mod space;
pub mod spec;
pub mod suggest;
pub mod train;
pub mod validate;
