//! Evaluation throughput without I/O: `cargo bench --bench evaluate`. Decodes and evaluates every
//! point of scripts/bench/bench-10m.toml on one thread and on all threads (rayon), reusing
//! placements across consecutive points as the engine does, and prints configs/s. Whole-run
//! numbers, with Parquet writing, come from scripts/bench.sh.

use std::path::Path;
use std::time::Instant;

use racksweep::perf;
use racksweep::spec;
use rayon::prelude::*;

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
    let ctx = spec.context();
    let n = spec.grid.len();

    let clock = Instant::now();
    let feasible = spec
        .grid
        .range(0, n)
        .scan(perf::PlacementCache::default(), |placements, (_, p)| {
            Some(perf::evaluate_with(&ctx, &p, placements).feasible())
        })
        .filter(|&f| f)
        .count();
    let one = clock.elapsed().as_secs_f64();

    const BLOCK: u64 = 65_536;
    let clock = Instant::now();
    let feasible_par: usize = (0..n.div_ceil(BLOCK))
        .into_par_iter()
        .map(|b| {
            let mut placements = perf::PlacementCache::default();
            spec.grid
                .range(b * BLOCK, (b + 1) * BLOCK)
                .filter(|(_, p)| perf::evaluate_with(&ctx, p, &mut placements).feasible())
                .count()
        })
        .sum();
    let all = clock.elapsed().as_secs_f64();
    assert_eq!(feasible, feasible_par);
    println!("evaluate {n} configurations ({feasible} feasible)");
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
