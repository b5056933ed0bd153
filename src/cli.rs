//! Command-line arguments (clap derive). Parsing only; the commands live in `commands/`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::shard::DEFAULT_PART_ROWS;
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
    /// Evaluate every configuration of a sweep (or one shard of it) into its run directory.
    ///
    /// Writes <OUT>/<sweep name>/: configs/part-K-of-N.parquet (one row per configuration; read
    /// them together as configs/*.parquet), pareto.parquet and pareto.md (the frontier),
    /// manifest.json (counts, timing; "complete": true only at the end), plus sweep.toml and the
    /// parts' commit records under parts/. Parts are committed one by one: after a crash or
    /// Ctrl-C, the same command with --resume evaluates only what is missing.
    Run(RunArgs),
    /// Merge the shards of a run (`run --shard K/N`) into its frontier and manifest.
    ///
    /// Checks that all N parts are present, committed and from the same sweep, then writes
    /// pareto.parquet, pareto.md and manifest.json, as a single-process run would have.
    Merge(MergeArgs),
    /// Print the best configurations of a finished run by one column.
    ///
    /// Reads the run's Parquet (no re-run). Only rows that run, meet the sweep's demand and
    /// SLOs where it set them, and satisfy every --where are ranked. Prints the columns that
    /// tell the rows apart, then the ranked and filtered ones (or --columns); the rows go to
    /// stdout in the --format asked, their count to stderr.
    Top(TopArgs),
    /// Recompute a Pareto frontier of a finished run under other objectives and constraints.
    ///
    /// Reads the run's Parquet (no re-run), admits rows as the sweep's frontier does (they run,
    /// meet the demand and SLOs where set, satisfy every --where), and prints the
    /// non-dominated ones, best first by the first objective. Rows equal on every objective (a
    /// tie group) print as one row, with what differs summarized ("1–10", "cloud, owned"), in
    /// the table and Markdown formats; CSV and JSON print every row with its tie_group.
    Pareto(ParetoArgs),
    /// Write a planning-review report of a finished run: report.html and report.md.
    ///
    /// Reads the run's Parquet (no re-run). The report has per-hardware frontier charts
    /// (tokens/s/GPU against tokens/s/user; cost against p99 TTFT and racks against users served
    /// when the run has them), the best configuration per hardware, the frontier, the top rows
    /// per objective, why configurations were turned away, how the best one moves with batch
    /// and number formats, and the sweep itself. report.html is self-contained (inline SVG, no
    /// network); report.md links the charts, written beside it as report-*.svg.
    Report(ReportArgs),
    /// Validate a sweep file and print its axes and grid size without evaluating.
    Check(CheckArgs),
    /// List the built-in presets with their key specs, or print one as TOML for a sweep.
    ///
    /// With an id (`racksweep catalog gpus h100-sxm`), prints that preset as a [[gpu]], [[rack]]
    /// or [[model]] table that a sweep file accepts as it is: a GPU as `extends` of itself (edit
    /// a number to replace it for the sweep), a rack or model as a copy under a new id.
    Catalog(CatalogArgs),
    /// Predict published hardware measurements and report the error per case and per metric.
    ///
    /// Reads the format of reference/measurements-calibration.csv (in the repository). Each
    /// inference case is rebuilt and predicted with the same grid and model as `run`, each
    /// training case with the training model; blank configuration columns are swept and the
    /// case's scenario picks the configuration (docs/validation.md). --fit fits the global
    /// factors to the file;
    /// --leave-one-out reports the error out of sample, each source family predicted with the
    /// factors fitted without it.
    Validate(ValidateArgs),
    /// Print a shell completion script to stdout.
    ///
    /// bash: `racksweep completions bash > ~/.local/share/bash-completion/completions/racksweep`;
    /// zsh: into a directory of your $fpath as `_racksweep`; fish: into
    /// ~/.config/fish/completions/racksweep.fish.
    Completions(CompletionsArgs),
    /// Print the manual page (roff) to stdout: `racksweep man | man -l -`, or
    /// `racksweep man > racksweep.1`.
    Man(ManArgs),
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// A subcommand's own page (`racksweep man run`) instead of racksweep's.
    pub command: Option<String>,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("refit").args(["fit", "leave_one_out"])))]
pub struct ValidateArgs {
    /// Measurements file (CSV).
    pub measurements: PathBuf,
    /// Write every prediction to this Parquet file.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print the summary and every prediction (case, source, family, metric, measured,
    /// predicted, error) as JSON to stdout.
    #[arg(long, conflicts_with = "markdown")]
    pub json: bool,
    /// Print the summary and every prediction as Markdown tables (docs/validation.md).
    #[arg(long)]
    pub markdown: bool,
    /// Global model factors to use instead of the built-in ones (TOML, keys of
    /// src/catalog/data/calibration.toml, with an optional [training] table of keys of
    /// training.toml; keys it omits keep their built-in values). A sweep's [calibration] table
    /// takes the same format.
    #[arg(long)]
    pub calibration: Option<PathBuf>,
    /// Worker threads [default: all cores].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub threads: Option<u32>,
    /// Fit the global factors (calibration.toml, training.toml) to every case: coordinate
    /// descent over each factor's candidate values from the committed ones; prints the
    /// committed and fitted factors and the objective (docs/validation.md, "Calibration").
    /// Writes no factor file (scripts/fit-calibration.py does).
    #[arg(long, conflicts_with_all = ["leave_one_out", "out"])]
    pub fit: bool,
    /// Report out-of-sample error: fit the global factors on all rows, then without each
    /// source family (src/validate/families.toml), and predict each family with the factors
    /// fitted without it; prints in- and out-of-sample median and p90 per metric, overall and
    /// per family, and the predictions each factor moves, by family (docs/validation.md).
    /// Writes no factor file.
    #[arg(long, conflicts_with = "out")]
    pub leave_one_out: bool,
    /// With --fit or --leave-one-out: every other candidate value of each factor (ends kept),
    /// a smoke run.
    #[arg(long, requires = "refit")]
    pub quick: bool,
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
    /// How to show progress on stderr: "auto" draws a bar on a terminal and prints lines
    /// otherwise (nohup, Slurm logs), "bar", "lines" (one every 10 s and one at the end: done,
    /// total, rate, ETA) or "none".
    #[arg(long, value_enum, default_value_t = Progress::Auto)]
    pub progress: Progress,
    /// Print nothing on success: no progress and no closing summary.
    #[arg(long)]
    pub quiet: bool,
    /// Replace an existing run directory of the same name (with --shard: write the shard again).
    #[arg(long)]
    pub force: bool,
    /// Write only feasible configurations to the part files (counts still cover all).
    #[arg(long)]
    pub feasible_only: bool,
    /// Largest grid accepted.
    #[arg(long, default_value_t = DEFAULT_MAX_CONFIGS, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_configs: u64,
    /// Evaluate only shard K of N (K = 0 .. N-1), a contiguous slice of the grid, into
    /// configs/part-K-of-N.parquet; `racksweep merge` completes the run. "auto": K is
    /// SLURM_ARRAY_TASK_ID (an array 0..N-1) or JOB_COMPLETION_INDEX, N is --shard-count or
    /// SLURM_ARRAY_TASK_COUNT.
    #[arg(long, value_name = "K/N|auto")]
    pub shard: Option<String>,
    /// Shard count for --shard auto (required with JOB_COMPLETION_INDEX, and when resubmitting
    /// part of a Slurm array).
    #[arg(long, value_name = "N", requires = "shard", value_parser = clap::value_parser!(u64).range(1..))]
    pub shard_count: Option<u64>,
    /// Continue an interrupted run: keep its committed parts and evaluate the rest. With
    /// --shard, a part already committed is kept (safe for requeued array tasks).
    #[arg(long, conflicts_with = "force")]
    pub resume: bool,
    /// Grid points per part file when one process runs the whole sweep (the unit of --resume).
    #[arg(long, default_value_t = DEFAULT_PART_ROWS, value_parser = clap::value_parser!(u64).range(1..))]
    pub part_rows: u64,
}

/// How `run` shows its progress on stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Progress {
    /// A bar when stderr is a terminal, lines otherwise.
    Auto,
    /// A bar (drawn only on a terminal).
    Bar,
    /// A line every 10 s and one at the end.
    Lines,
    None,
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Run directory: <OUT>/<sweep name>.
    pub run_dir: PathBuf,
    /// Hide the closing summary.
    #[arg(long)]
    pub quiet: bool,
}

/// What `top` and `pareto` ask of a run besides their ranking: which rows, which columns, in
/// what format.
#[derive(Debug, Args)]
pub struct QueryArgs {
    /// Filter: a numeric constraint, e.g. "ttft_ms <= 1000", or a label, e.g. "hardware == b200"
    /// or "weight_dtype != bf16"; combined with "and", "or" and parentheses, e.g. "(hardware ==
    /// b200 or hardware == h200-sxm) and ttft_ms <= 1000" ("and" binds first). Repeatable: every
    /// --where must hold.
    #[arg(long = "where", value_name = "FILTER")]
    pub wheres: Vec<String>,
    /// Columns to print, in this order, comma-separated [default: the configuration columns
    /// that tell the rows apart, then the ones the query names].
    #[arg(long, value_name = "A,B,..", value_delimiter = ',')]
    pub columns: Vec<String>,
    /// Output format: a table for the terminal, or CSV, JSON or Markdown on stdout (the row
    /// count goes to stderr in every format).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Read a run that is not complete (its committed parts only), saying so on stderr.
    #[arg(long)]
    pub allow_incomplete: bool,
}

#[derive(Debug, Args)]
pub struct TopArgs {
    /// Run directory: <OUT>/<sweep name>.
    pub run_dir: PathBuf,
    /// Column to rank by, highest first; "min COLUMN" ranks lowest first.
    #[arg(long, value_name = "COLUMN")]
    pub by: String,
    /// Rows to print.
    #[arg(short, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    pub n: u32,
    #[command(flatten)]
    pub query: QueryArgs,
}

#[derive(Debug, Args)]
pub struct ParetoArgs {
    /// Run directory: <OUT>/<sweep name>.
    pub run_dir: PathBuf,
    /// Objective, "max COLUMN" or "min COLUMN" (repeatable, 1 to 8).
    #[arg(long = "objective", value_name = "OBJECTIVE", required = true)]
    pub objectives: Vec<String>,
    #[command(flatten)]
    pub query: QueryArgs,
}

/// How `top` and `pareto` print their rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned columns for a terminal; `pareto` prints each tie group as one row.
    Table,
    /// RFC 4180 CSV with a header of column names, values in full, null as an empty field;
    /// `pareto` prints every row with its `tie_group`.
    Csv,
    /// An array of objects (numbers, booleans, strings, null); `pareto` prints every row with its
    /// `tie_group`.
    Json,
    /// A Markdown pipe table; `pareto` prints each tie group as one row.
    Markdown,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Run directory: <OUT>/<sweep name>.
    pub run_dir: PathBuf,
    /// Rows in each per-objective table.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub top: u32,
    /// Read a run that is not complete (its committed parts only), saying so on stderr.
    #[arg(long)]
    pub allow_incomplete: bool,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Sweep file (TOML; see docs/sweep-format.md).
    pub sweep: PathBuf,
    /// Worker threads the run time is estimated for [default: all cores].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub threads: Option<u32>,
    /// Largest grid accepted.
    #[arg(long, default_value_t = DEFAULT_MAX_CONFIGS, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_configs: u64,
}

#[derive(Debug, Args)]
pub struct CatalogArgs {
    /// Which presets to list [default: all].
    pub kind: Option<CatalogKind>,
    /// A preset's id: print it as a TOML table to paste into a sweep.
    #[arg(requires = "kind")]
    pub id: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CatalogKind {
    #[value(alias = "gpu")]
    Gpus,
    #[value(alias = "model")]
    Models,
    #[value(alias = "rack")]
    Racks,
    #[value(alias = "dtype")]
    Dtypes,
}
