//! `pareto.md`: the frontier as a Markdown table ready to paste into a planning review, sorted by
//! the first objective, key columns first and units in the header.

use std::fmt::Write as _;

use crate::columns::{Kind, LabelValues, Record, Schema};
use crate::pareto::{Frontier, describe_constraints, describe_objectives};
use crate::spec::{Sweep, thousands};

/// Columns every frontier table shows, with their review-friendly headers.
const KEY_COLUMNS: &[(&str, &str)] = &[
    ("hardware", "hardware"),
    ("rack", "rack"),
    ("racks", "racks"),
    ("servers", "servers"),
    ("gpus", "GPUs"),
    ("tp", "tp"),
    ("pp", "pp"),
    ("ep", "ep"),
    ("batch", "batch"),
    ("weight_dtype", "weights"),
    ("kv_dtype", "KV"),
    ("tokens_per_s_per_gpu", "tokens/s/GPU"),
    ("tokens_per_s_per_user_at_load", "tokens/s/user"),
    ("ttft_ms", "TTFT (ms)"),
    ("tpot_at_load_ms", "TPOT (ms)"),
    ("output_tokens_per_s", "cluster tokens/s"),
    ("hbm_used_gb_per_gpu", "HBM/GPU (GB)"),
    ("limit", "limit"),
];

/// The same for training runs.
const TRAINING_KEY_COLUMNS: &[(&str, &str)] = &[
    ("hardware", "hardware"),
    ("rack", "rack"),
    ("racks", "racks"),
    ("gpus", "GPUs"),
    ("tp", "tp"),
    ("pp", "pp"),
    ("dp", "dp"),
    ("cp", "cp"),
    ("ep", "ep"),
    ("microbatch", "microbatch"),
    ("virtual_stages", "virtual stages"),
    ("zero_stage", "ZeRO"),
    ("recompute", "recompute"),
    ("precision", "precision"),
    ("step_time_s", "step (s)"),
    ("mfu_pct", "MFU (%)"),
    ("hbm_used_gb_per_gpu", "HBM/GPU (GB)"),
    ("effective_time_to_train_days", "days (with failures)"),
    ("usd_per_run", "USD/run"),
    ("mwh_per_run", "MWh/run"),
];

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
    let _ = match spec {
        Sweep::Inference(s) => writeln!(
            out,
            "- model: {}, {} input / {} output tokens",
            h.model_id(),
            number(s.input_tokens),
            number(s.output_tokens)
        ),
        Sweep::Training(s) => writeln!(
            out,
            "- model: {}, trained on {} tokens in steps of {} sequences of {} tokens",
            h.model_id(),
            number(s.job.train_tokens),
            number(f64::from(s.job.global_batch_seqs)),
            number(f64::from(s.job.seq_len))
        ),
    };
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

    let schema = Schema::get(R::MODE);
    let mut shown: Vec<(usize, String)> = key_columns(spec)
        .into_iter()
        .map(|(name, header)| {
            (
                schema.find(name).expect("key columns exist"),
                header.to_string(),
            )
        })
        .collect();
    let extra = frontier
        .objectives()
        .iter()
        .map(|o| o.column)
        .chain(frontier.constraints().iter().map(|c| c.column));
    for c in extra {
        if !shown.iter().any(|(i, _)| *i == c) {
            let col = &schema.columns[c];
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
            if schema.columns[i].is_numeric() {
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

/// The columns the frontier table shows before the objectives and constraints, with their
/// review-friendly headers.
fn key_columns(spec: &Sweep) -> Vec<(&'static str, &'static str)> {
    match spec {
        Sweep::Inference(s) => {
            let mut shown = KEY_COLUMNS.to_vec();
            // Serving-mode axes appear only when the sweep varies them, after the batch
            // column.
            let after_batch = shown
                .iter()
                .position(|&(name, _)| name == "batch")
                .map_or(shown.len(), |i| i + 1);
            let mut modes = Vec::new();
            if s.grid.spec_tokens.iter().any(|&d| d > 0) {
                modes.push(("spec_tokens", "drafts"));
            }
            if s.grid.disagg_prefill_pct.iter().any(|&p| p > 0) {
                modes.push(("disagg_prefill_pct", "prefill %"));
                modes.push(("prefill_instances", "prefill instances"));
            }
            if s.grid.ownership.len() > 1 {
                modes.push(("ownership", "ownership"));
            }
            for (k, m) in modes.into_iter().enumerate() {
                shown.insert(after_batch + k, m);
            }
            // Sized runs: the load, the latency at that load and the bill.
            if s.plan.demand {
                shown.extend([
                    ("occupancy_per_instance", "requests/instance"),
                    ("utilization", "utilization"),
                    ("ttft_p99_ms", "TTFT p99 (ms)"),
                    ("tpot_p99_ms", "TPOT p99 (ms)"),
                    ("power_kw", "IT power (kW)"),
                    ("usd_per_month", "USD/month"),
                    ("usd_per_mtok", "USD/Mtok"),
                ]);
            }
            shown
        }
        Sweep::Training(s) => {
            let mut shown = TRAINING_KEY_COLUMNS.to_vec();
            if s.grid.ownership.len() > 1 {
                shown.insert(
                    shown
                        .iter()
                        .position(|&(name, _)| name == "precision")
                        .map_or(shown.len(), |i| i + 1),
                    ("ownership", "ownership"),
                );
            }
            shown
        }
    }
}

fn cell<R: Record>(i: usize, row: &R, labels: &LabelValues) -> String {
    let c = &R::columns()[i];
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
