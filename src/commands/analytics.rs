//! `racksweep top` and `racksweep pareto`: questions asked of a finished run's Parquet
//! (through `analyze`), printed on stdout as a table, CSV, JSON or Markdown (`--format`); the
//! row count goes to stderr, so that stdout holds the data alone. `pareto` prints each tie group
//! as one row in the formats people read, and every row with its `tie_group` in the others.

use std::path::Path;

use anyhow::Result;

use crate::analyze;
use crate::analyze::Columns;
use crate::analyze::filter::Where;
use crate::cli::{Format, ParetoArgs, TopArgs};
use crate::columns::Schema;
use crate::error::UserError;
use crate::format::thousands;
use crate::output::run_dir::{Finished, RunDir};
use crate::output::table::{Align, Column, Csv, Exporter, Json, Markdown, Table, Text, Value};
use crate::output::ties;
use crate::pareto::{Objective, TIE_GROUP};

/// Returns what goes to stdout (the rows) and to stderr (their count).
pub fn top(args: TopArgs) -> Result<(String, String)> {
    answer(&args.run_dir, args.query.allow_incomplete, |run| {
        top_of(run, &args)
    })
}

/// Opens the run in `run_dir` and asks it `query`; an error met reading its rows is explained
/// by [`RunDir::explain`].
fn answer<T>(
    run_dir: &Path,
    allow_incomplete: bool,
    query: impl FnOnce(&Finished) -> Result<T>,
) -> Result<T> {
    let dir = RunDir::new(run_dir.to_path_buf());
    let run = dir.open(allow_incomplete)?;
    query(&run).map_err(|e| dir.explain(e, allow_incomplete))
}

fn top_of(run: &Finished, args: &TopArgs) -> Result<(String, String)> {
    let schema = analyze::schema(run);
    let by = parse_by(&args.by, schema)?;
    let wheres = parse_wheres(&args.query.wheres, schema)?;
    let chosen = parse_columns(&args.query.columns, schema)?;
    let t = analyze::top(run, by, args.n, &wheres, columns(&chosen))?;
    let footer = format!("{} rows", thousands(t.rows.len() as u64));
    Ok((exporter(args.query.format).table(&t), footer))
}

/// Returns what goes to stdout (the rows) and to stderr (their count).
pub fn pareto(args: ParetoArgs) -> Result<(String, String)> {
    answer(&args.run_dir, args.query.allow_incomplete, |run| {
        pareto_of(run, &args)
    })
}

fn pareto_of(run: &Finished, args: &ParetoArgs) -> Result<(String, String)> {
    let schema = analyze::schema(run);
    let objectives =
        Objective::parse_all(&args.objectives, schema).map_err(|(at, e)| match at {
            Some(i) => flag_error("--objective", &args.objectives[i], e),
            None => flag_list_error("--objective", e),
        })?;
    let wheres = parse_wheres(&args.query.wheres, schema)?;
    let chosen = parse_columns(&args.query.columns, schema)?;
    let f = analyze::frontier(run, &objectives, &wheres, columns(&chosen))?;
    let configurations = f.table.rows.len() as u64;
    let t = match args.query.format {
        Format::Table | Format::Markdown => ties::collapse(&f.table, &f.tie_groups),
        Format::Csv | Format::Json => with_tie_groups(f.table, &f.tie_groups),
    };
    let printed = t.rows.len() as u64;
    let footer = if printed == configurations {
        format!("{} rows", thousands(printed))
    } else {
        format!(
            "{} rows ({} configurations: rows equal on every objective are one row)",
            thousands(printed),
            thousands(configurations)
        )
    };
    Ok((exporter(args.query.format).table(&t), footer))
}

fn exporter(format: Format) -> &'static dyn Exporter {
    match format {
        Format::Table => &Text,
        Format::Csv => &Csv,
        Format::Json => &Json,
        Format::Markdown => &Markdown,
    }
}

/// `t` with a last column of each row's tie group.
fn with_tie_groups(mut t: Table, groups: &[u32]) -> Table {
    t.columns.push(Column::new(TIE_GROUP.0, "", Align::Right));
    for ((row, values), &g) in t.rows.iter_mut().zip(&mut t.values).zip(groups) {
        row.push(g.to_string());
        values.push(Value::UInt(u64::from(g)));
    }
    t
}

fn columns<'a>(chosen: &'a [&'static str]) -> Columns<'a> {
    if chosen.is_empty() {
        Columns::Telling
    } else {
        Columns::Chosen(chosen)
    }
}

/// `--columns a,b,c`: columns of the run, each once.
fn parse_columns(texts: &[String], schema: &Schema) -> Result<Vec<&'static str>, UserError> {
    let mut names: Vec<&'static str> = Vec::new();
    for text in texts {
        let name = text.trim();
        let Some(i) = schema.find(name) else {
            let all = || schema.columns.iter().map(|c| c.name);
            let hint = match crate::suggest::did_you_mean(name, all()) {
                Some(s) => format!("{s} (docs/schema.md lists the columns)"),
                None => "docs/schema.md lists the columns".to_string(),
            };
            return Err(UserError::new(format!(
                "--columns: unknown {} column \"{}\"",
                schema.mode.as_str(),
                crate::limits::quoted(name)
            ))
            .with_hint(hint));
        };
        let name = schema.columns[i].name;
        if names.contains(&name) {
            return Err(UserError::new(format!(
                "--columns: \"{name}\" is named twice"
            )));
        }
        names.push(name);
    }
    Ok(names)
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
