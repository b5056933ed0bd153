//! `racksweep check`: validate a sweep and show what it asks (workloads, demand, SLOs, `[cost]`)
//! and its grid without evaluating it, with an estimate of the run's output size and time.

use std::fmt::Write as _;

use anyhow::Result;

use crate::cli::CheckArgs;
use crate::estimate::Estimate;
use crate::format::{bytes, clock, number};
use crate::output::table;
use crate::pareto::{describe_constraints, describe_objectives};
use crate::spec::{self, Spec, Sweep, TrainingSpec};

/// The sweep's workload, demand, SLOs, objectives and own numbers; each axis with its size and
/// values, one line per axis; `configurations: N` and the estimated output and run time on
/// `threads` worker threads.
pub fn render(sweep: &Sweep, threads: u32) -> String {
    let mut out = match sweep {
        Sweep::Inference(spec) => render_inference(spec),
        Sweep::Training(spec) => render_training(spec),
    };
    let e = Estimate::of(sweep, threads);
    let b = e.basis;
    let _ = writeln!(
        out,
        "estimated output: {} of Parquet with every row written ({} bytes/row, as {} wrote)",
        bytes(e.bytes),
        number(b.bytes_per_row),
        b.sweep
    );
    let _ = writeln!(
        out,
        "estimated run time: {} on {} thread{} ({} configs/s per thread, as {} ran on a 2-core VM; \
         an estimate for this machine class, docs/performance.md)",
        if e.seconds < 1.0 {
            "under a second".to_string()
        } else {
            clock(e.seconds)
        },
        threads,
        if threads == 1 { "" } else { "s" },
        number(b.configs_per_s_per_thread),
        b.sweep
    );
    out
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
            "workload: {}, {} input / {} output tokens, KV admission {}{}",
            c.models[w.model].id,
            tokens(w.input_tokens),
            tokens(w.output_tokens),
            spec.kv_admission_words(),
            switch_words(spec)
        );
    } else {
        // Every combination, by workload_id: each has its own frontier.
        let _ = writeln!(
            out,
            "workloads: {} combinations, one frontier each; KV admission {}{}",
            spec.workloads.len(),
            spec.kv_admission_words(),
            switch_words(spec)
        );
        for (i, w) in spec.workloads.iter().enumerate() {
            let _ = writeln!(out, "  {i}: {}", w.label);
        }
    }
    demand(&mut out, spec);
    let _ = writeln!(out, "SLOs: {}", spec.workloads[0].slo_words());
    let _ = writeln!(out, "objectives: {}", describe_objectives(&h.objectives));
    let _ = writeln!(out, "constraints: {}", describe_constraints(&h.constraints));
    own_numbers(&mut out, c);
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

/// The demand in one line, or one per workload when the workloads' demands differ (in the
/// demand alone, as a demand axis sweeps it: the workload list above shows it).
fn demand(out: &mut String, spec: &Spec) {
    let w = &spec.workloads;
    let modes: Vec<Option<String>> = w.iter().map(|w| w.demand_words()).collect();
    let settings: Vec<String> = w.iter().map(|w| w.demand_settings_words()).collect();
    if modes[0].is_none() && same(&modes) {
        let _ = writeln!(
            out,
            "demand: none (rows describe full instances; no sizing)"
        );
    } else if same(&modes) && same(&settings) {
        let m = modes[0].as_deref().unwrap_or("none");
        let _ = writeln!(out, "demand: {m}; {}", settings[0]);
    } else if same(&settings) {
        let _ = writeln!(out, "demand: each workload's, above; {}", settings[0]);
    } else {
        let _ = writeln!(out, "demand, per workload:");
        for (i, (m, s)) in modes.iter().zip(&settings).enumerate() {
            let _ = writeln!(out, "  {i}: {}; {s}", m.as_deref().unwrap_or("none"));
        }
    }
}

/// The sweep's own numbers: `[calibration]`, extended GPUs, `[[price]]` quotes, `[cost]`.
fn own_numbers(out: &mut String, c: &crate::catalog::Catalog) {
    let cost = c.cost_words().map(|words| format!("cost: {words}"));
    for line in c.own_numbers().into_iter().chain(cost) {
        let _ = writeln!(out, "{line}");
    }
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
    own_numbers(&mut out, c);
    out.push('\n');
    out.push_str(&table::render(&["axis", "size", "values"], &rows));
    let _ = writeln!(out, "\nconfigurations: {}", g.len());
    out
}

pub fn run(args: CheckArgs) -> Result<String> {
    let spec = spec::load(&args.sweep, args.max_configs)?;
    let threads = args
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get() as u32));
    Ok(render(&spec, threads))
}

/// Whether every value equals the first.
fn same<T: PartialEq>(v: &[T]) -> bool {
    v.iter().all(|x| *x == v[0])
}

/// The `[workload]` serving switches that are on, in words, after the KV admission.
fn switch_words(spec: &Spec) -> String {
    let on = spec.switches();
    crate::columns::switch_words(&|key| on.iter().find(|(k, _)| *k == key).map_or(0.0, |(_, v)| *v))
}
