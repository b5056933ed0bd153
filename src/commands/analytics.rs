//! `racksweep top` and `racksweep pareto`: questions asked of a finished run's Parquet
//! (through `analyze`), printed as a table on stdout.

use anyhow::Result;

use crate::analyze;
use crate::analyze::filter::Where;
use crate::cli::{ParetoArgs, TopArgs};
use crate::columns::Schema;
use crate::error::UserError;
use crate::output::run_dir::RunDir;
use crate::output::table::{Exporter as _, Table, Text};
use crate::pareto::Objective;

pub fn top(args: TopArgs) -> Result<String> {
    let run = RunDir::new(args.run_dir).open(args.allow_incomplete)?;
    let schema = analyze::schema(&run);
    let by = parse_by(&args.by, schema)?;
    let wheres = parse_wheres(&args.wheres, schema)?;
    let t = analyze::top(&run, by, args.n, &wheres)?;
    Ok(render(&t))
}

pub fn pareto(args: ParetoArgs) -> Result<String> {
    let run = RunDir::new(args.run_dir).open(args.allow_incomplete)?;
    let schema = analyze::schema(&run);
    let objectives =
        Objective::parse_all(&args.objectives, schema).map_err(|(at, e)| match at {
            Some(i) => flag_error("--objective", &args.objectives[i], e),
            None => flag_list_error("--objective", e),
        })?;
    let wheres = parse_wheres(&args.wheres, schema)?;
    let t = analyze::frontier(&run, &objectives, &wheres)?;
    Ok(render(&t))
}

/// `--by COLUMN` ranks highest first; `--by "min COLUMN"` or `"max COLUMN"` says which way.
fn parse_by(text: &str, schema: &Schema) -> Result<Objective, UserError> {
    let spec = if text.split_whitespace().count() == 1 {
        format!("max {text}")
    } else {
        text.to_string()
    };
    Objective::parse(&spec, schema).map_err(|e| flag_error("--by", text, e))
}

fn parse_wheres(texts: &[String], schema: &Schema) -> Result<Vec<Where>, UserError> {
    texts
        .iter()
        .map(|t| Where::parse(t, schema).map_err(|e| flag_error("--where", t, e)))
        .collect()
}

fn flag_error(flag: &str, value: &str, (message, hint): (String, Option<String>)) -> UserError {
    let value = crate::limits::quoted(value);
    hinted(
        UserError::new(format!("{flag} \"{value}\": {message}")),
        hint,
    )
}

/// An error about a repeated flag as a whole (how many times it was given).
fn flag_list_error(flag: &str, (message, hint): (String, Option<String>)) -> UserError {
    hinted(UserError::new(format!("{flag}: {message}")), hint)
}

fn hinted(e: UserError, hint: Option<String>) -> UserError {
    match hint {
        Some(h) => e.with_hint(h),
        None => e,
    }
}

fn render(t: &Table) -> String {
    let mut out = Text.table(t);
    out.push_str(&format!("{} rows\n", t.rows.len()));
    out
}
