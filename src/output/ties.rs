//! A frontier's tie groups as people read them: rows equal on every objective
//! ([`crate::pareto::tie_groups`]) printed as one row, each column that differs within the
//! group summarized (`1–10` for integers that run without a gap, `cloud, owned` for labels,
//! `0.120–0.250` for other numbers). Used by `pareto.md` and by `racksweep pareto` in its
//! table and Markdown formats; `pareto.parquet` and the CSV and JSON formats keep every row
//! with its `tie_group` instead.

use crate::output::table::{Table, Value};

/// Integer values listed one by one, at most, where they do not run without a gap; more are
/// written as a range with their count.
const LISTED: usize = 4;

/// `table` with each tie group (`groups[i]` is row `i`'s) as one row, at the place of its first
/// row. `table` must carry its values ([`Table::with_values`]); a table without them is
/// returned as it is.
pub fn collapse(table: &Table, groups: &[u32]) -> Table {
    if table.values.len() != table.rows.len() || groups.len() != table.rows.len() {
        return table.clone();
    }
    let mut order: Vec<u32> = Vec::new();
    for &g in groups {
        if !order.contains(&g) {
            order.push(g);
        }
    }
    let rows = order
        .iter()
        .map(|&g| {
            let members: Vec<usize> = (0..groups.len()).filter(|&i| groups[i] == g).collect();
            (0..table.columns.len())
                .map(|c| summary(table, &members, c))
                .collect()
        })
        .collect();
    Table {
        title: table.title.clone(),
        columns: table.columns.clone(),
        rows,
        values: Vec::new(),
    }
}

/// Column `c` of the rows `members`: their common cell, or a summary of how they differ.
fn summary(table: &Table, members: &[usize], c: usize) -> String {
    let first = members[0];
    let value = |i: usize| &table.values[i][c];
    // A null reads as "-" in a summary, even where the table leaves it blank.
    let text = |i: usize| match (&table.values[i][c], table.rows[i][c].as_str()) {
        (Value::Null, "") => "-".to_string(),
        (_, t) => t.to_string(),
    };
    if members.iter().all(|&i| value(i) == value(first)) {
        return table.rows[first][c].clone();
    }
    let numbers: Vec<(f64, usize)> = members
        .iter()
        .filter_map(|&i| match value(i) {
            Value::Id(n) | Value::UInt(n) => Some((*n as f64, i)),
            Value::Float(x) => Some((*x, i)),
            _ => None,
        })
        .collect();
    let nulls = members.iter().any(|&i| matches!(value(i), Value::Null));
    let has_text = members
        .iter()
        .any(|&i| matches!(value(i), Value::Text(_) | Value::Bool(_)));
    if numbers.is_empty() || has_text {
        // Labels and flags: each value once, in order of first appearance.
        let mut seen: Vec<String> = Vec::new();
        for &i in members {
            let t = text(i);
            if !seen.contains(&t) {
                seen.push(t);
            }
        }
        return seen.join(", ");
    }
    let integers = members
        .iter()
        .all(|&i| matches!(value(i), Value::Id(_) | Value::UInt(_) | Value::Null));
    let (lo, hi) = numbers
        .iter()
        .fold((numbers[0], numbers[0]), |(lo, hi), &p| {
            (
                if p.0 < lo.0 { p } else { lo },
                if p.0 > hi.0 { p } else { hi },
            )
        });
    let mut distinct: Vec<u64> = numbers.iter().map(|p| p.0.to_bits()).collect();
    distinct.sort_unstable();
    distinct.dedup();
    let mut out = if lo.0 == hi.0 {
        text(lo.1)
    } else if integers {
        let span = hi.0 - lo.0 + 1.0;
        if span == distinct.len() as f64 {
            format!("{}–{}", text(lo.1), text(hi.1))
        } else if distinct.len() <= LISTED {
            let mut listed: Vec<(f64, usize)> = Vec::new();
            for &p in &numbers {
                if !listed.iter().any(|q| q.0 == p.0) {
                    listed.push(p);
                }
            }
            listed.sort_by(|a, b| a.0.total_cmp(&b.0));
            let texts: Vec<String> = listed.iter().map(|&(_, i)| text(i)).collect();
            texts.join(", ")
        } else {
            format!("{}–{} ({} values)", text(lo.1), text(hi.1), distinct.len())
        }
    } else {
        let (a, b) = (text(lo.1), text(hi.1));
        if a == b { a } else { format!("{a}–{b}") }
    };
    if nulls {
        out.push_str(", -");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::table::Exporter as _;
    use crate::output::table::{Column, Markdown};

    /// Six rows: two tie groups of three. Group 0 differs in racks (1, 2, 3: a range), ownership
    /// (a list) and a float; group 1 in config_id (1, 4, 9: listed) and a null.
    #[test]
    fn groups_become_rows_with_what_differs_summarized() {
        let row = |id: u64, racks: u64, own: &str, x: f64| {
            vec![
                Value::UInt(id),
                Value::UInt(racks),
                Value::Text(own.into()),
                Value::float(x),
            ]
        };
        let mut values = vec![
            row(10, 1, "cloud", 0.5),
            row(11, 2, "owned", 0.25),
            row(12, 3, "cloud", 0.75),
            row(1, 4, "owned", 2.0),
            row(4, 4, "owned", 2.0),
            row(9, 4, "owned", 2.0),
        ];
        values[5][3] = Value::Null;
        let cells: Vec<Vec<String>> = values
            .iter()
            .map(|r| {
                r.iter()
                    .map(|v| match v {
                        Value::Null => String::new(),
                        v => v.data_text(),
                    })
                    .collect()
            })
            .collect();
        let columns = ["config_id", "racks", "ownership", "x"]
            .map(Column::right)
            .to_vec();
        let t = Table::new(columns, cells).with_values(values);
        let c = collapse(&t, &[0, 0, 0, 1, 1, 1]);
        assert_eq!(
            c.rows,
            [
                ["10–12", "1–3", "cloud, owned", "0.25–0.75"],
                ["1, 4, 9", "4", "owned", "2, -"],
            ]
        );
        assert_eq!(
            Markdown.table(&c),
            "| config_id | racks | ownership | x |\n|---:|---:|---:|---:|\n\
             | 10–12 | 1–3 | cloud, owned | 0.25–0.75 |\n| 1, 4, 9 | 4 | owned | 2, - |\n"
        );
        // Integers with gaps, more than LISTED of them: a range with their count.
        let ids = [1u64, 3, 5, 7, 9];
        let t = Table::new(
            vec![Column::right("config_id")],
            ids.iter().map(|i| vec![i.to_string()]).collect(),
        )
        .with_values(ids.iter().map(|&i| vec![Value::UInt(i)]).collect());
        assert_eq!(collapse(&t, &[7; 5]).rows, [["1–9 (5 values)"]]);
        // Rows in groups of one are left as they are.
        assert_eq!(collapse(&t, &[0, 1, 2, 3, 4]).rows, t.rows);
    }
}
