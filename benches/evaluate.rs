//! Evaluation throughput without I/O: `cargo bench --bench evaluate`. Evaluates every point of
//! scripts/bench/bench-10m.toml through the engine's design space (`space::Inference`, whose
//! per-task scratch reuses placements and timed steps across consecutive points, as a run
//! does), on one thread and on all threads (rayon, in the engine's blocks), and prints
//! configs/s. Whole-run numbers, with the rows written to Parquet, come from scripts/bench.sh.

use std::path::Path;
use std::time::Instant;

use racksweep::columns::{Record, Row};
use racksweep::engine::Space;
use racksweep::space;
use racksweep::spec;
use rayon::prelude::*;

/// Points one task evaluates in a row (the engine's block).
const BLOCK: u64 = 2048;

/// Feasible points among `start..end`, evaluated in order with one scratch.
fn feasible(space: &space::Inference, start: u64, end: u64) -> u64 {
    let mut scratch = Default::default();
    let mut row = Row::default();
    let mut n = 0;
    space.for_each(start, end, &mut scratch, &mut row, |r| {
        n += u64::from(r.feasible());
    });
    n
}

#[expect(
    clippy::print_stdout,
    reason = "a benchmark's result is its report on stdout"
)]
fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let spec = spec::load(
        &root.join("scripts/bench/bench-10m.toml"),
        spec::DEFAULT_MAX_CONFIGS,
    )
    .expect("bench sweep loads")
    .into_inference()
    .expect("an inference sweep");
    let contexts = spec.contexts();
    let space = space::Inference::new(&contexts, &spec.grid);
    let n = space.len();

    let clock = Instant::now();
    let one_thread = feasible(&space, 0, n);
    let one = clock.elapsed().as_secs_f64();

    let clock = Instant::now();
    let all_threads: u64 = (0..n.div_ceil(BLOCK))
        .into_par_iter()
        .map(|b| feasible(&space, b * BLOCK, ((b + 1) * BLOCK).min(n)))
        .sum();
    let all = clock.elapsed().as_secs_f64();
    assert_eq!(one_thread, all_threads);
    println!("evaluate {n} configurations ({one_thread} feasible)");
    println!(
        "  1 thread : {:>6.2} s  {:>12.0} configs/s",
        one,
        n as f64 / one
    );
    println!(
        "  {} threads: {:>6.2} s  {:>12.0} configs/s",
        rayon::current_num_threads(),
        all,
        n as f64 / all
    );
}
