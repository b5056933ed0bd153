//! What a run will take before it runs, for `racksweep check`: the Parquet it writes and its
//! run time, from the grid's size and what a benchmark sweep of the same kind measured
//! (docs/performance.md, "Estimates in check"). Both scale with the grid, not with the sweep's
//! details: the model's cost per point and the rows' compressibility vary between sweeps of one
//! kind, so these are estimates for this machine class, good to about a factor of 2.

use crate::spec::Sweep;

/// What a benchmark sweep measured: Parquet bytes per row written, and configurations per
/// second per worker thread (configurations over the run's CPU time, so machine load does not
/// count).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measured {
    /// The benchmark sweep (`scripts/bench/<name>.toml`).
    pub sweep: &'static str,
    pub bytes_per_row: f64,
    pub configs_per_s_per_thread: f64,
}

/// An inference sweep without demand: bench-10m (10,002,432 rows, 73 % feasible; 237,077,844
/// bytes of Parquet, 9.73 s of CPU; docs/performance.md).
pub const INFERENCE: Measured = Measured {
    sweep: "bench-10m",
    bytes_per_row: 237_077_844.0 / 10_002_432.0,
    configs_per_s_per_thread: 10_002_432.0 / 9.73,
};

/// An inference sweep with a demand (sizing, SLOs, at-load latencies): bench-sized
/// (2,752,512 rows, `racks = "auto"`, 50k users; 286,694,664 bytes, 17.55 s of CPU).
pub const SIZED: Measured = Measured {
    sweep: "bench-sized",
    bytes_per_row: 286_694_664.0 / 2_752_512.0,
    configs_per_s_per_thread: 2_752_512.0 / 17.55,
};

/// A training sweep: bench-training (2,211,840 layouts, 29 % can train; 46,914,211 bytes,
/// 0.98 s of CPU).
pub const TRAINING: Measured = Measured {
    sweep: "bench-training",
    bytes_per_row: 46_914_211.0 / 2_211_840.0,
    configs_per_s_per_thread: 2_211_840.0 / 0.98,
};

/// The estimate for one run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// The benchmark it is scaled from.
    pub basis: Measured,
    /// Parquet bytes with every row written (`--feasible-only` writes fewer).
    pub bytes: f64,
    /// Wall time on `threads` worker threads, s.
    pub seconds: f64,
    pub threads: u32,
}

impl Estimate {
    /// The run of `sweep` on `threads` worker threads, every row written.
    pub fn of(sweep: &Sweep, threads: u32) -> Estimate {
        let basis = match sweep {
            Sweep::Inference(s) if s.demand() => SIZED,
            Sweep::Inference(_) => INFERENCE,
            Sweep::Training(_) => TRAINING,
        };
        let rows = sweep.len() as f64;
        Estimate {
            basis,
            bytes: rows * basis.bytes_per_row,
            seconds: rows / (basis.configs_per_s_per_thread * f64::from(threads.max(1))),
            threads,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Scaled from the benchmark itself, the estimate gives back what it measured: bench-10m's
    /// bytes, and its CPU time shared by two threads.
    #[test]
    fn a_benchmark_estimates_itself() {
        let sweep = crate::spec::load(
            std::path::Path::new("scripts/bench/bench-10m.toml"),
            crate::spec::DEFAULT_MAX_CONFIGS,
        )
        .unwrap();
        assert_eq!(sweep.len(), 10_002_432);
        let e = Estimate::of(&sweep, 2);
        assert_eq!(e.basis, INFERENCE);
        assert!((e.bytes - 237_077_844.0).abs() < 1.0);
        assert!((e.seconds - 4.865).abs() < 1e-9);
        let sized = crate::spec::load(
            std::path::Path::new("scripts/bench/bench-sized.toml"),
            crate::spec::DEFAULT_MAX_CONFIGS,
        )
        .unwrap();
        assert_eq!(Estimate::of(&sized, 1).basis, SIZED);
        assert!((Estimate::of(&sized, 1).seconds - 17.55).abs() < 1e-9);
    }
}
