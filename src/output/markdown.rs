//! `pareto.md`: the frontier ready to paste into a planning review, as a Markdown table (a
//! `table::Table` written by the Markdown exporter) sorted by the first objective: the columns
//! the schema places in it first (`columns::Show`), then the objectives and constraints with
//! their units in the header (unless a leading column holds the same values). Rows equal on every objective are one row (`ties::collapse`);
//! `pareto.parquet` keeps each of them.

use std::fmt::Write as _;

use crate::columns::{Kind, LabelValues, Record, Schema, When};
use crate::format::thousands;
use crate::output::table::{Align, Column, Exporter as _, Markdown, Table, Value};
use crate::output::ties;
use crate::pareto::{Frontier, describe_constraints, describe_objectives};
use crate::spec::Sweep;

/// Counts the review needs besides the table.
pub struct Totals {
    pub configurations: u64,
    pub feasible: u64,
}

pub fn render<R: Record>(
    spec: &Sweep,
    frontier: &Frontier<R>,
    labels: &LabelValues,
    totals: &Totals,
) -> String {
    let h = spec.header();
    let mut out = String::new();
    let _ = writeln!(out, "# Pareto frontier: {}\n", h.name);
    if !h.description.trim().is_empty() {
        let _ = writeln!(out, "{}\n", h.description.trim());
    }
    let workload = spec.workload();
    let w = |key: &str| {
        workload
            .iter()
            .find(|(k, _)| *k == key)
            .map_or(f64::NAN, |&(_, v)| v)
    };
    let groups = spec.workload_labels();
    if groups.len() > 1 {
        let _ = writeln!(
            out,
            "- {} workloads, one frontier each (below, by workload_id)",
            groups.len()
        );
    } else {
        let _ = writeln!(
            out,
            "- model: {}, {}",
            h.model_id(),
            (Schema::get(R::MODE).review.workload_line)(&w)
        );
    }
    let _ = writeln!(
        out,
        "- objectives: {}",
        describe_objectives(frontier.objectives())
    );
    let _ = writeln!(
        out,
        "- constraints: {}",
        describe_constraints(frontier.constraints())
    );
    let tie_groups = frontier.tie_groups();
    let distinct = tie_groups.iter().max().map_or(0, |&g| u64::from(g) + 1);
    let _ = write!(
        out,
        "- {} configurations, {} feasible, {} on the frontier",
        thousands(totals.configurations),
        thousands(totals.feasible),
        thousands(frontier.rows().len() as u64)
    );
    if distinct < frontier.rows().len() as u64 {
        let _ = write!(
            out,
            "; {} rows below, rows equal on every objective shown as one (pareto.parquet \
             holds each, with its tie_group)",
            thousands(distinct)
        );
    }
    out.push_str("\n\n");
    if frontier.rows().is_empty() {
        let _ = writeln!(out, "No feasible configuration meets the constraints.");
        return out;
    }

    let schema = Schema::get(R::MODE);
    let mut shown: Vec<(usize, Column)> = leading_columns(spec, frontier)
        .into_iter()
        .map(|i| {
            let c = &schema.columns[i];
            (
                i,
                Column::new(c.header(), "", Align::numeric(c.is_numeric())),
            )
        })
        .collect();
    let extra = frontier
        .objectives()
        .iter()
        .map(|o| o.column)
        .chain(frontier.constraints().iter().map(|c| c.column));
    // An objective or constraint is not shown twice: not when it leads the table already, nor
    // when a leading column holds its values in every row (without a demand,
    // `tokens_per_s_per_user_at_load` is `tokens_per_s_per_user`).
    let same = |i: usize, j: usize| {
        let (a, b) = (&R::columns()[i], &R::columns()[j]);
        frontier.rows().iter().all(|r| a.number(r) == b.number(r))
    };
    for i in extra {
        if !shown.iter().any(|&(j, _)| j == i || same(i, j)) {
            let c = &schema.columns[i];
            shown.push((
                i,
                Column::new(c.name, c.unit, Align::numeric(c.is_numeric())),
            ));
        }
    }
    let table = |rows: &mut dyn Iterator<Item = (&R, u32)>| {
        let (mut values, mut ties) = (Vec::new(), Vec::new());
        for (row, tie) in rows {
            values.push(shown.iter().map(|&(i, _)| value(i, row, labels)).collect());
            ties.push(tie);
        }
        let columns = shown.iter().map(|(_, c)| c.clone()).collect();
        let t = Table::of_values(columns, values);
        Markdown.table(&ties::collapse(&t, &ties))
    };
    let rows = || frontier.rows().iter().zip(tie_groups.iter().copied());
    if groups.len() <= 1 {
        out.push_str(&table(&mut rows()));
        return out;
    }
    // One frontier per workload: rows of different workloads are not comparable.
    for (k, name) in groups.iter().enumerate() {
        let _ = writeln!(out, "## Workload {k}: {name}\n");
        let mut rows = rows().filter(|(r, _)| r.group() as usize == k).peekable();
        if rows.peek().is_none() {
            let _ = writeln!(out, "No feasible configuration meets the constraints.\n");
        } else {
            out.push_str(&table(&mut rows));
            out.push('\n');
        }
    }
    out
}

/// The columns the frontier table shows before the objectives and constraints: those the
/// schema places in it (`Show::frontier`) whose condition holds for this sweep and frontier,
/// by rank.
fn leading_columns<R: Record>(spec: &Sweep, frontier: &Frontier<R>) -> Vec<usize> {
    let axes = spec.axes();
    let columns = R::columns();
    let shows = |when: When| match when {
        When::Always => true,
        When::Varies(axis) => axes.iter().any(|&(name, len)| name == axis && len > 1),
        When::Named(axis) => spec.names_other_than_default(axis),
        When::Nonzero(axis) => spec
            .count_values(axis)
            .is_some_and(|v| v.iter().any(|&x| x > 0)),
        When::Answered(flag) => {
            columns
                .iter()
                .find(|c| c.name == flag)
                .is_some_and(|c| match c.kind {
                    Kind::Flag(f) => frontier.rows().iter().any(|r| f(r).is_some()),
                    _ => false,
                })
        }
    };
    let mut places: Vec<(u8, usize)> = Schema::get(R::MODE)
        .columns
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let place = c.show.frontier?;
            shows(place.when).then_some((place.rank, i))
        })
        .collect();
    places.sort_unstable();
    places.into_iter().map(|(_, i)| i).collect()
}

/// Column `i` of `row` as a table value.
fn value<R: Record>(i: usize, row: &R, labels: &LabelValues) -> Value {
    let c = &R::columns()[i];
    match c.kind {
        Kind::Label(l) => match labels.text(l, row) {
            t if t.is_empty() => Value::Null,
            t => Value::Text(t),
        },
        Kind::Flag(f) => f(row).map_or(Value::Null, Value::Bool),
        Kind::Id(f) => Value::Id(f(row)),
        Kind::Count(f) => f(row).map_or(Value::Null, |n| Value::UInt(u64::from(n))),
        Kind::Metric(_) => c.number(row).map_or(Value::Null, Value::float),
    }
}
