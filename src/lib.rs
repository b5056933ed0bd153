//! racksweep as a library: the sweep engine behind the `racksweep` binary, exposed for the
//! integration tests and benchmarks.
//!
//! # Pipeline
//!
//! `racksweep run` loads a sweep file into a validated [`spec::Sweep`] and splits its grid into
//! parts ([`shard`]); the [`engine`] evaluates each part's configurations in parallel over the
//! sweep's [`space`] ([`grid`] decodes an index into a point, [`perf`] or [`train`] evaluates
//! it), streams the rows to Parquet ([`output`]) and keeps the part's frontier ([`pareto`]);
//! then the part is committed, the parts' frontiers merged and the manifest written. The
//! [`pipeline`] module holds those stages for `run`, `merge` and `validate`; [`report`] and the
//! analytics commands read the finished run directory ([`analyze`]).
//!
//! # Code map
//!
//! Modules by layer, lowest first. A module uses only modules of its own layer and of the layers
//! listed before it, and no command uses another command; `tests/architecture.rs` reads this
//! list and every file's `crate::` paths and checks both.
//!
//! 1. Vocabulary
//!    - [`error`]: errors a user can fix (exit 1), internal failures (exit 2), interrupted runs.
//!    - [`limits`]: the largest inputs racksweep accepts, each with its reason.
//!    - [`suggest`]: "did you mean" hints for misspelled names.
//!    - [`format`]: numbers as a reviewer reads them (thousands separators, three digits).
//!    - [`shard`]: parts and shards, contiguous slices of a grid's index space.
//!    - [`names`]: the `names!` macro, one declaration per named enum (variant, name, description).
//!    - [`vocab`]: words both grids, the spec and the models share (platform, ownership).
//! 2. Catalog
//!    - [`catalog`]: the presets (GPUs, racks, models, number formats) and the checks they pass.
//! 3. Models
//!    - [`axis`]: the kinds of grid axes and the generator the axis tables feed.
//!    - [`grid`]: the inference design space as a mixed-radix number space (index to point).
//!    - [`perf`]: the inference performance model, `evaluate(context, point) -> Estimate`, pure.
//!    - [`train`]: the training model and its grid: a layout's step, memory, time and cost.
//! 4. Columns
//!    - [`columns`]: the output schema of each mode: every column's unit, meaning and accessor.
//! 5. Objectives
//!    - [`pareto`]: objectives, constraints and the exact Pareto frontier, kept over a stream.
//! 6. Sweep files
//!    - [`spec`]: a sweep file parsed and validated into a `Spec` or a `TrainingSpec`.
//!    - [`estimate`]: a run's Parquet size and run time, scaled from measured benchmark sweeps.
//! 7. Output
//!    - [`output`]: one writer per format (Parquet, `pareto.md`, manifest, text) and run dirs.
//! 8. Engine
//!    - [`engine`]: evaluates a slice of a grid in parallel, streaming rows and the frontier.
//! 9. Spaces
//!    - [`space`]: the two design spaces, and the one place a sweep's mode picks its space.
//! 10. Analytics
//!     - [`analyze`]: queries over a run's Parquet (rank, frontier again); the only polars user.
//! 11. Pipeline
//!     - [`pipeline`]: plan, evaluate parts, commit, merge, frontier, manifest.
//! 12. Readers of runs and measurements
//!     - [`report`]: a finished run as a planning-review document (HTML and Markdown).
//!     - [`validate`]: predictions of published measurements, and their error.
//! 13. Commands
//!     - [`cli`]: the command line (clap derive), parsing only.
//!     - [`commands`]: one module per subcommand: flags to library calls, policy, summaries.
//! 14. Binary
//!     - `main` (`src/main.rs`): parse the command line, run one command, map it to an exit code.

pub mod analyze;
pub mod axis;
pub mod catalog;
pub mod cli;
pub mod columns;
pub mod commands;
pub mod engine;
pub mod error;
pub mod estimate;
pub mod format;
pub mod grid;
pub mod limits;
pub mod names;
pub mod output;
pub mod pareto;
pub mod perf;
pub mod pipeline;
pub mod report;
pub mod shard;
pub mod space;
pub mod spec;
pub mod suggest;
pub mod train;
pub mod validate;
pub mod vocab;
