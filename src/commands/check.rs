//! `racksweep check`: validate a sweep and show its grid without evaluating it.

use std::fmt::Write as _;

use anyhow::Result;

use crate::cli::CheckArgs;
use crate::output::table;
use crate::pareto::{describe_constraints, describe_objectives};
use crate::spec::{self, Spec, Sweep, TrainingSpec};

/// Each axis with its size and values, one line per axis, then `configurations: N`.
pub fn render(sweep: &Sweep) -> String {
    match sweep {
        Sweep::Inference(spec) => render_inference(spec),
        Sweep::Training(spec) => render_training(spec),
    }
}

fn render_inference(spec: &Spec) -> String {
    let h = &spec.header;
    let c = &h.catalog;
    let g = &spec.grid;
    let rows = axis_rows(&g.axis_names(), &g.radices(), g.shown_values(c));

    let mut out = String::new();
    let _ = writeln!(out, "sweep: {} ({})", h.name, h.path.display());
    if let [w] = spec.workloads.as_slice() {
        let _ = writeln!(
            out,
            "workload: {}, {} input / {} output tokens, KV admission {}",
            c.models[w.model].id,
            tokens(w.input_tokens),
            tokens(w.output_tokens),
            spec.kv_admission_words()
        );
    } else {
        // Every combination, by workload_id: each has its own frontier.
        let _ = writeln!(
            out,
            "workloads: {} combinations, one frontier each; KV admission {}",
            spec.workloads.len(),
            spec.kv_admission_words()
        );
        for (i, w) in spec.workloads.iter().enumerate() {
            let _ = writeln!(out, "  {i}: {}", w.label);
        }
    }
    let _ = writeln!(out, "objectives: {}", describe_objectives(&h.objectives));
    let _ = writeln!(out, "constraints: {}", describe_constraints(&h.constraints));
    for line in c.own_numbers() {
        let _ = writeln!(out, "{line}");
    }
    if g.speculates() {
        let _ = writeln!(
            out,
            "speculation: acceptance {}, draft cost {} layer(s) per draft token",
            spec.spec_acceptance, spec.spec_draft_layers
        );
    }
    out.push('\n');
    out.push_str(&table::render(&["axis", "size", "values"], &rows));
    let _ = writeln!(out, "\nconfigurations: {}", g.len());
    out
}

/// One table row per axis: its name, size and values.
fn axis_rows<const N: usize>(
    names: &[&str; N],
    radices: &[u64; N],
    values: [String; N],
) -> Vec<Vec<String>> {
    names
        .iter()
        .zip(radices)
        .zip(values)
        .map(|((name, size), values)| vec![name.to_string(), size.to_string(), values])
        .collect()
}

/// A token count exactly as the sweep gives it (mean lengths may be fractional).
fn tokens(v: f64) -> String {
    if v == v.trunc() {
        crate::format::thousands(v as u64)
    } else {
        v.to_string()
    }
}

fn render_training(spec: &TrainingSpec) -> String {
    let h = &spec.header;
    let c = &h.catalog;
    let g = &spec.grid;
    let rows = axis_rows(&g.axis_names(), &g.radices(), g.shown_values(c));
    let j = &spec.job;
    let mut out = String::new();
    let _ = writeln!(out, "sweep: {} ({}), training", h.name, h.path.display());
    let _ = writeln!(
        out,
        "workload: {}, {} tokens to train, global batch {} x {} tokens",
        c.models[h.model].id,
        tokens(j.train_tokens),
        tokens(f64::from(j.global_batch_seqs)),
        tokens(f64::from(j.seq_len))
    );
    let _ = writeln!(out, "objectives: {}", describe_objectives(&h.objectives));
    let _ = writeln!(out, "constraints: {}", describe_constraints(&h.constraints));
    for line in c.own_numbers() {
        let _ = writeln!(out, "{line}");
    }
    out.push('\n');
    out.push_str(&table::render(&["axis", "size", "values"], &rows));
    let _ = writeln!(out, "\nconfigurations: {}", g.len());
    out
}

pub fn run(args: CheckArgs) -> Result<String> {
    let spec = spec::load(&args.sweep, args.max_configs)?;
    Ok(render(&spec))
}
