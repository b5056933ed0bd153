//! Command-line arguments (clap derive). Parsing only; the commands live in `commands/`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::spec::DEFAULT_MAX_CONFIGS;

/// Batch design-space sweeps for LLM cluster sizing: expand a TOML sweep into a grid of hardware,
/// racks, parallel layouts, batch sizes and number formats, evaluate every point with an
/// analytical performance model, and write all rows and the Pareto frontier to Parquet.
#[derive(Debug, Parser)]
#[command(name = "racksweep", version, about, max_term_width = 100)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Evaluate every configuration of a sweep and write the results directory.
    ///
    /// Writes <OUT>/<sweep name>/: configs.parquet (one row per configuration), pareto.parquet
    /// and pareto.md (the frontier), manifest.json (counts, timing). The directory appears only
    /// when complete.
    Run(RunArgs),
    /// Validate a sweep file and print its axes and grid size without evaluating.
    Check(CheckArgs),
    /// List the built-in presets with their key specs.
    Catalog(CatalogArgs),
    /// Predict published hardware measurements and report the error per case and per metric.
    ///
    /// Reads the format of shared/reference/measurements-calibration.csv. Each case is rebuilt
    /// and predicted with the same grid and model as `run`; blank configuration columns are
    /// swept and the case's scenario picks the configuration (docs/validation.md).
    Validate(ValidateArgs),
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Measurements file (CSV).
    pub measurements: PathBuf,
    /// Write every prediction to this Parquet file.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print only the summary, as JSON, to stdout.
    #[arg(long, conflicts_with = "markdown")]
    pub json: bool,
    /// Print the summary and every prediction as Markdown tables (docs/validation.md).
    #[arg(long)]
    pub markdown: bool,
    /// Global model factors to use instead of the built-in ones (TOML, as
    /// src/catalog/data/calibration.toml).
    #[arg(long)]
    pub calibration: Option<PathBuf>,
    /// Worker threads [default: all cores].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub threads: Option<u32>,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Sweep file (TOML; see docs/sweep-format.md).
    pub sweep: PathBuf,
    /// Directory that receives the run directory.
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
    /// Worker threads [default: all cores].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub threads: Option<u32>,
    /// Hide the progress bar and the closing summary.
    #[arg(long)]
    pub quiet: bool,
    /// Replace an existing run directory of the same name.
    #[arg(long)]
    pub force: bool,
    /// Write only feasible configurations to configs.parquet (counts still cover all).
    #[arg(long)]
    pub feasible_only: bool,
    /// Largest grid accepted.
    #[arg(long, default_value_t = DEFAULT_MAX_CONFIGS, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_configs: u64,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Sweep file (TOML; see docs/sweep-format.md).
    pub sweep: PathBuf,
    /// Largest grid accepted.
    #[arg(long, default_value_t = DEFAULT_MAX_CONFIGS, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_configs: u64,
}

#[derive(Debug, Args)]
pub struct CatalogArgs {
    /// Which presets to list [default: all].
    pub kind: Option<CatalogKind>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CatalogKind {
    Gpus,
    Models,
    Racks,
    Dtypes,
}
