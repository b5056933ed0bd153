//! `pareto.md`: the frontier as a Markdown table ready to paste into a planning review, sorted by
//! the first objective, key columns first and units in the header.

use std::fmt::Write as _;

use crate::columns::{self, COLUMNS, Kind, LabelValues, Row};
use crate::pareto::{Frontier, describe_constraints, describe_objectives};
use crate::spec::{Spec, thousands};

/// Columns every frontier table shows, with their review-friendly headers.
const KEY_COLUMNS: &[(&str, &str)] = &[
    ("hardware", "hardware"),
    ("rack", "rack"),
    ("racks", "racks"),
    ("gpus", "GPUs"),
    ("tp", "tp"),
    ("pp", "pp"),
    ("ep", "ep"),
    ("batch", "batch"),
    ("weight_dtype", "weights"),
    ("kv_dtype", "KV"),
    ("tokens_per_s_per_gpu", "tokens/s/GPU"),
    ("tokens_per_s_per_user", "tokens/s/user"),
    ("ttft_ms", "TTFT (ms)"),
    ("tpot_ms", "TPOT (ms)"),
    ("output_tokens_per_s", "cluster tokens/s"),
    ("hbm_used_gb_per_gpu", "HBM/GPU (GB)"),
    ("limit", "limit"),
];

/// Counts the review needs besides the table.
pub struct Totals {
    pub configurations: u64,
    pub feasible: u64,
}

pub fn render(spec: &Spec, frontier: &Frontier, labels: &LabelValues, totals: &Totals) -> String {
    let model = &spec.catalog.models[spec.model];
    let mut out = String::new();
    let _ = writeln!(out, "# Pareto frontier: {}\n", spec.name);
    if !spec.description.trim().is_empty() {
        let _ = writeln!(out, "{}\n", spec.description.trim());
    }
    let _ = writeln!(
        out,
        "- model: {}, {} input / {} output tokens",
        model.id,
        number(spec.input_tokens),
        number(spec.output_tokens)
    );
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
    let _ = writeln!(
        out,
        "- {} configurations, {} feasible, {} on the frontier\n",
        thousands(totals.configurations),
        thousands(totals.feasible),
        thousands(frontier.rows().len() as u64)
    );
    if frontier.rows().is_empty() {
        let _ = writeln!(out, "No feasible configuration meets the constraints.");
        return out;
    }

    let mut shown: Vec<(usize, String)> = KEY_COLUMNS
        .iter()
        .map(|&(name, header)| {
            (
                columns::find(name).expect("key columns exist"),
                header.to_string(),
            )
        })
        .collect();
    // Serving-mode axes appear only when the sweep varies them, after the batch column.
    let after_batch = shown
        .iter()
        .position(|(_, h)| h == "batch")
        .map_or(shown.len(), |i| i + 1);
    let mut modes = Vec::new();
    if spec.grid.spec_tokens.iter().any(|&d| d > 0) {
        modes.push(("spec_tokens", "drafts"));
    }
    if spec.grid.disagg_prefill_pct.iter().any(|&p| p > 0) {
        modes.push(("disagg_prefill_pct", "prefill %"));
        modes.push(("prefill_instances", "prefill instances"));
    }
    if spec.grid.ownership.len() > 1 {
        modes.push(("ownership", "ownership"));
    }
    for (k, (name, header)) in modes.into_iter().enumerate() {
        let column = columns::find(name).expect("mode columns exist");
        shown.insert(after_batch + k, (column, header.to_string()));
    }
    // Sized runs: the load, the latency at that load and the bill.
    if spec.plan.demand {
        for (name, header) in [
            ("utilization", "utilization"),
            ("ttft_p99_ms", "TTFT p99 (ms)"),
            ("tpot_p99_ms", "TPOT p99 (ms)"),
            ("power_kw", "IT power (kW)"),
            ("usd_per_month", "USD/month"),
            ("usd_per_mtok", "USD/Mtok"),
        ] {
            shown.push((
                columns::find(name).expect("sizing columns exist"),
                header.to_string(),
            ));
        }
    }
    let extra = frontier
        .objectives()
        .iter()
        .map(|o| o.column)
        .chain(frontier.constraints().iter().map(|c| c.column));
    for c in extra {
        if !shown.iter().any(|(i, _)| *i == c) {
            let col = &COLUMNS[c];
            let header = if col.unit.is_empty() {
                col.name.to_string()
            } else {
                format!("{} ({})", col.name, col.unit)
            };
            shown.push((c, header));
        }
    }
    let headers: Vec<&str> = shown.iter().map(|(_, h)| h.as_str()).collect();
    let _ = writeln!(out, "| {} |", headers.join(" | "));
    let aligns: Vec<&str> = shown
        .iter()
        .map(|&(i, _)| {
            if COLUMNS[i].is_numeric() {
                "---:"
            } else {
                "---"
            }
        })
        .collect();
    let _ = writeln!(out, "|{}|", aligns.join("|"));
    for row in frontier.rows() {
        let cells: Vec<String> = shown.iter().map(|&(i, _)| cell(i, row, labels)).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    out
}

fn cell(i: usize, row: &Row, labels: &LabelValues) -> String {
    let c = &COLUMNS[i];
    match c.kind {
        Kind::Label(l) => labels.text(l, row),
        Kind::Flag(f) => match f(row) {
            Some(true) => "yes".to_string(),
            Some(false) => "no".to_string(),
            None => String::new(),
        },
        Kind::Id(_) | Kind::Count(_) | Kind::Metric(_) => {
            c.number(row).map_or_else(String::new, number)
        }
    }
}

/// A number as a reviewer reads it: thousands separators above 1000, about three significant
/// digits below.
pub fn number(v: f64) -> String {
    let a = v.abs();
    if a >= 1000.0 {
        let rounded = v.round();
        let s = thousands(rounded.abs() as u64);
        if rounded < 0.0 { format!("-{s}") } else { s }
    } else if a >= 100.0 || v == v.trunc() {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_well() {
        assert_eq!(number(1234567.8), "1,234,568");
        assert_eq!(number(512.0), "512");
        assert_eq!(number(8.0), "8");
        assert_eq!(number(123.456), "123");
        assert_eq!(number(45.678), "45.7");
        assert_eq!(number(3.456), "3.46");
        assert_eq!(number(0.01234), "0.012");
    }
}
