//! `racksweep check`: validate a sweep and show its grid without evaluating it.

use std::fmt::Write as _;

use anyhow::Result;

use crate::catalog::Catalog;
use crate::cli::CheckArgs;
use crate::grid::{AXES, AXIS_NAMES, Platform};
use crate::output::table;
use crate::pareto::{describe_constraints, describe_objectives};
use crate::spec::{self, Spec, Sweep, TrainingSpec};
use crate::train::grid::AXES as TRAINING_AXES;

/// Each axis with its size and values, one line per axis, then `configurations: N`.
pub fn render(sweep: &Sweep) -> String {
    match sweep {
        Sweep::Inference(spec) => render_inference(spec),
        Sweep::Training(spec) => render_training(spec),
    }
}

fn render_inference(spec: &Spec) -> String {
    let c = &spec.catalog;
    let g = &spec.grid;
    let join = |v: &[u32]| abbreviate(v.iter().map(u32::to_string).collect());
    let dtypes = |v: &[usize]| {
        v.iter()
            .map(|&d| c.dtypes[d].id.clone())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let platforms = platforms(c, &g.platforms);
    // One entry per axis, in axis order (the array length makes a missing axis a compile error).
    let values: [String; AXES] = [
        platforms,
        dtypes(&g.weight_dtypes),
        dtypes(&g.kv_dtypes),
        if g.racks == [crate::perf::cluster::AUTO_RACKS] {
            "auto (fewest that meet the demand and the SLOs)".to_string()
        } else {
            join(&g.racks)
        },
        join(&g.tp),
        join(&g.pp),
        join(&g.ep),
        join(&g.disagg_prefill_pct),
        join(&g.spec_tokens),
        join(&g.batch),
        g.ownership
            .iter()
            .map(|o| o.as_str())
            .collect::<Vec<_>>()
            .join(", "),
    ];
    let rows = axis_rows(&AXIS_NAMES, &g.radices(), values);

    let mut out = String::new();
    let _ = writeln!(out, "sweep: {} ({})", spec.name, spec.path.display());
    let _ = writeln!(
        out,
        "workload: {}, {} input / {} output tokens, KV admission {}",
        c.models[spec.model].id,
        tokens(spec.input_tokens),
        tokens(spec.output_tokens),
        spec.kv_admission.as_str()
    );
    let _ = writeln!(out, "objectives: {}", describe_objectives(&spec.objectives));
    let _ = writeln!(
        out,
        "constraints: {}",
        describe_constraints(&spec.constraints)
    );
    if g.spec_tokens.iter().any(|&d| d > 0) {
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

/// Each GPU with its rack, comma-separated.
fn platforms(c: &Catalog, platforms: &[Platform]) -> String {
    platforms
        .iter()
        .map(|p| format!("{} in {}", c.gpus[p.gpu].id, c.racks[p.rack].id))
        .collect::<Vec<_>>()
        .join(", ")
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

/// Values joined by commas; long axes show their first and last few values.
fn abbreviate(values: Vec<String>) -> String {
    const SHOWN: usize = 8;
    if values.len() <= 2 * SHOWN {
        return values.join(", ");
    }
    let n = values.len();
    format!(
        "{}, ..., {} ({n} values)",
        values[..SHOWN].join(", "),
        values[n - SHOWN..].join(", ")
    )
}

/// A token count exactly as the sweep gives it (mean lengths may be fractional).
fn tokens(v: f64) -> String {
    if v == v.trunc() {
        crate::spec::thousands(v as u64)
    } else {
        v.to_string()
    }
}

fn render_training(spec: &TrainingSpec) -> String {
    let c = &spec.catalog;
    let g = &spec.grid;
    let join = |v: &[u32]| abbreviate(v.iter().map(u32::to_string).collect());
    let names = |v: Vec<&str>| v.join(", ");
    let platforms = platforms(c, &g.platforms);
    let values: [String; TRAINING_AXES] = [
        platforms,
        join(&g.sizes),
        join(&g.tp),
        join(&g.pp),
        join(&g.cp),
        join(&g.ep),
        join(&g.microbatch),
        join(&g.virtual_stages),
        join(&g.zero_stage),
        names(g.recompute.iter().map(|r| r.as_str()).collect()),
        names(g.precision.iter().map(|p| p.as_str()).collect()),
        names(g.ownership.iter().map(|o| o.as_str()).collect()),
    ];
    let rows = axis_rows(&g.axis_names(), &g.radices(), values);
    let j = &spec.job;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "sweep: {} ({}), training",
        spec.name,
        spec.path.display()
    );
    let _ = writeln!(
        out,
        "workload: {}, {} tokens to train, global batch {} x {} tokens",
        c.models[spec.model].id,
        tokens(j.train_tokens),
        tokens(f64::from(j.global_batch_seqs)),
        tokens(f64::from(j.seq_len))
    );
    let _ = writeln!(out, "objectives: {}", describe_objectives(&spec.objectives));
    let _ = writeln!(
        out,
        "constraints: {}",
        describe_constraints(&spec.constraints)
    );
    out.push('\n');
    out.push_str(&table::render(&["axis", "size", "values"], &rows));
    let _ = writeln!(out, "\nconfigurations: {}", g.len());
    out
}

pub fn run(args: CheckArgs) -> Result<String> {
    let spec = spec::load(&args.sweep, args.max_configs)?;
    Ok(render(&spec))
}
