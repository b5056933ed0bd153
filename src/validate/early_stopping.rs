//! The percentile at which an MLPerf server or interactive run's latency limits must hold.
//! MLPerf states its limits on the 99th percentile of TTFT and TPOT, but loadgen passes a run
//! only if it is 99 % confident that fewer than 1 % of all queries would exceed them ("early
//! stopping", `loadgen/early_stopping.cc` and `PerformanceSummary::EarlyStopping` in
//! `loadgen/results.cc` of mlcommons/inference): with `t` of its `n` queries over a limit, the
//! run passes if `P(Binomial(n, 0.01) <= t) < 0.01`. So a run may have at most
//! [`overlatency_allowed`]`(n)` queries over each limit, fewer than 1 %, and a submitter's load
//! is the highest whose latencies meet the limits at the [`pass_percentile`], above the 99th:
//! 99.25 % for Llama-3.1-405B's 8,313 queries, 99.05 % for Llama-2-70B's 196,608. The 99th
//! percentile that the run reports then sits below the limit (docs/validation.md, "How a case
//! is predicted").
//!
//! How many queries a run issued is loadgen's `result_query_count` in its detail log
//! (`submissions`); where the log was not read, the least a valid run issues
//! ([`least_queries`]).

use std::cell::Cell;

use super::cases::{Case, Harness};
use super::{lengths, submissions};

/// The percentile MLPerf's latency limits are stated at, and the confidence loadgen asks that
/// the true share of queries over a limit is below `1 - LIMIT_PERCENTILE`.
const LIMIT_PERCENTILE: f64 = 0.99;
const CONFIDENCE: f64 = 0.99;
/// MLPerf's least server run: `*.Server.min_duration = 600000` and loadgen's default
/// `min_query_count = 100` (mlperf.conf; the test runs until both are met, `test_settings.h`).
const MIN_DURATION_S: f64 = 600.0;
const MIN_QUERIES: u64 = 100;

/// How long an MLPerf server or interactive case's run was, in queries.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RunLength {
    /// As its detail log counts them.
    Logged(u64),
    /// Unread: the least a valid run issues over a dataset of `samples` ([`least_queries`]).
    Least { samples: u64 },
}

impl RunLength {
    /// The run of `case`, if it is an MLPerf server or interactive run of a known dataset.
    pub fn of_case(case: &Case) -> Option<RunLength> {
        if case.harness() != Harness::MlPerf
            || !matches!(case.setup.scenario.as_str(), "server" | "interactive")
        {
            return None;
        }
        if let Some(n) = submissions::of(&case.id).and_then(|s| s.queries) {
            return Some(RunLength::Logged(n));
        }
        let d = lengths::datasets()
            .iter()
            .find(|d| d.model == case.setup.model)?;
        Some(RunLength::Least {
            samples: u64::from(d.samples),
        })
    }

    /// Queries issued with the whole system serving `rate_per_s`.
    pub fn queries(&self, rate_per_s: f64) -> u64 {
        match *self {
            RunLength::Logged(n) => n,
            RunLength::Least { samples } => least_queries(samples, rate_per_s),
        }
    }

    /// What the limits were held to at `rate_per_s`, for a case's notes.
    pub fn note(&self, rate_per_s: f64) -> String {
        let n = self.queries(rate_per_s);
        let source = match self {
            RunLength::Logged(_) => "the run's, from its detail log",
            RunLength::Least { .. } => "the least a valid run at that load issues",
        };
        format!(
            "latency limits met at the {:.3}th percentile: loadgen's early stopping over {n} queries ({source})",
            100.0 * pass_percentile(n)
        )
    }
}

/// [`pass_percentile`] of a run at a rate, remembering the last run length it counted: a
/// bisection asks about the same length at every step, and each count sums the binomial.
pub struct PassPercentile {
    run: RunLength,
    last: Cell<(u64, f64)>,
}

impl PassPercentile {
    pub fn new(run: RunLength) -> PassPercentile {
        PassPercentile {
            run,
            last: Cell::new((0, pass_percentile(0))),
        }
    }

    /// The percentile the limits must hold at with the whole system serving `rate_per_s`.
    pub fn at(&self, rate_per_s: f64) -> f64 {
        let n = self.run.queries(rate_per_s);
        if self.last.get().0 != n {
            self.last.set((n, pass_percentile(n)));
        }
        self.last.get().1
    }
}

/// The least queries a valid run at `rate_per_s` issues over a dataset of `samples`: the more of
/// 100 and ten minutes' arrivals, rounded up to whole passes over the dataset (MLPerf's LLM
/// benchmarks run in equal-issue mode, `sample_concatenate_permutation = 1`, so every sample is
/// issued equally often: a 405B run at 0.45 queries/s issues all 8,313 samples, not 270).
pub fn least_queries(samples: u64, rate_per_s: f64) -> u64 {
    let samples = samples.max(1);
    let wanted = (rate_per_s.max(0.0) * MIN_DURATION_S).ceil();
    // A rate so high its count passes u64 runs at the cap (only a NaN or an absurd rate).
    let wanted = if wanted < 1e18 {
        wanted as u64
    } else {
        1 << 60
    };
    wanted.max(MIN_QUERIES).div_ceil(samples) * samples
}

/// Runs up to this many queries are counted exactly by [`overlatency_allowed`].
const EXACT_BELOW: u64 = 10_000_000;

/// The most of `queries` that may exceed a limit in a run that passes: the largest `t` with
/// `P(Binomial(queries, 0.01) <= t) < 0.01` (loadgen's `find_min_passing`: the fewest queries
/// under the limit, `h`, for which seeing `t` over it has odds below `1 - confidence` were 1 %
/// of queries over it; a run passes if `queries >= h + t`). `None` when even a run with none
/// over cannot pass (fewer than 459 queries: `0.99^458 > 0.01`).
pub fn overlatency_allowed(queries: u64) -> Option<u64> {
    let n = queries as f64;
    let q = 1.0 - LIMIT_PERCENTILE;
    // Past ten million queries the sum would take a term per allowed query; there the normal
    // approximation (de Moivre-Laplace, with the continuity correction) is within one query
    // of the exact count, and the exact count is not worth the time.
    if queries > EXACT_BELOW {
        let z = crate::perf::queue::standard_normal_quantile(CONFIDENCE);
        let t = n * q - z * (n * q * (1.0 - q)).sqrt() - 0.5;
        return Some(t.floor() as u64);
    }
    // The binomial's terms by their recurrence, in logs: the first, 0.99^n, underflows past
    // n = 70,000.
    let mut log_pmf = n * (1.0 - q).ln();
    let step = (q / (1.0 - q)).ln();
    let mut cdf = 0.0;
    let mut allowed = None;
    for t in 0..=queries {
        cdf += log_pmf.exp();
        if cdf >= 1.0 - CONFIDENCE {
            break;
        }
        allowed = Some(t);
        let k = t as f64;
        log_pmf += ((n - k) / (k + 1.0)).ln() + step;
    }
    allowed
}

/// The percentile of the latencies that must meet the limits in a run of `queries`:
/// `1 - overlatency_allowed / queries`, the 100th when none may exceed them.
pub fn pass_percentile(queries: u64) -> f64 {
    match overlatency_allowed(queries) {
        Some(t) if queries > 0 => 1.0 - t as f64 / queries as f64,
        _ => 1.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against scipy's `binom.cdf` (the largest `t` with `cdf(t, n, 0.01) < 0.01`): 459 queries
    /// is the shortest run that can pass (`ceil(ln 0.01 / ln 0.99)`, loadgen's first `h`), with
    /// none over; 4,388 (DeepSeek-R1's dataset) allow 28, 8,313 (Llama-3.1-405B's) 62, 196,608
    /// allow 1,863 and 1,523,712 allow 14,951.
    #[test]
    fn allowed_overlatency_matches_the_binomial() {
        assert_eq!(overlatency_allowed(458), None);
        assert_eq!(overlatency_allowed(459), Some(0));
        assert_eq!(overlatency_allowed(4388), Some(28));
        assert_eq!(overlatency_allowed(8313), Some(62));
        assert_eq!(overlatency_allowed(196_608), Some(1863));
        assert_eq!(overlatency_allowed(1_523_712), Some(14_951));
        assert_eq!(overlatency_allowed(0), None);
        assert!((pass_percentile(8313) - 0.992_541_8).abs() < 1e-6);
        assert!((pass_percentile(196_608) - 0.990_524_3).abs() < 1e-6);
        assert_eq!(pass_percentile(100), 1.0);
        // Remembered or not, the same percentile.
        let least = PassPercentile::new(RunLength::Least { samples: 24_576 });
        for rate in [75.0, 80.0, 0.0, 75.0] {
            assert_eq!(least.at(rate), pass_percentile(least_queries(24_576, rate)));
        }
        assert_eq!(
            PassPercentile::new(RunLength::Logged(8313)).at(1e9),
            pass_percentile(8313)
        );
        // Past ten million queries, the normal approximation: at the switch it agrees with
        // the exact count to within one query (scipy: 99,268 of 10,000,000; normal 99,267).
        let exact = overlatency_allowed(EXACT_BELOW).unwrap();
        let normal = overlatency_allowed(EXACT_BELOW + 1).unwrap();
        assert_eq!(exact, 99_268);
        assert!(exact.abs_diff(normal) <= 1, "{exact} {normal}");
        assert!(overlatency_allowed(u64::MAX).is_some_and(|t| t > 1 << 56));
        // Longer runs let the share over the limit approach 1 %, never reach it.
        let mut last = 1.0;
        for n in [4388, 8313, 73_728, 196_608, 1_523_712] {
            let p = pass_percentile(n);
            assert!(p < last && p > LIMIT_PERCENTILE, "{n}: {p}");
            last = p;
        }
    }

    /// Equal issue: the Nebius H200 405B run, 0.452 queries/s against 8,313 samples, issued
    /// 8,313 (its detail log); NVIDIA's v4.1 H100 Llama-2-70B run at 75 queries/s would issue
    /// 45,000 in ten minutes, so two passes over 24,576 samples.
    #[test]
    fn least_queries_are_whole_passes() {
        assert_eq!(least_queries(8313, 0.452), 8313);
        assert_eq!(least_queries(24_576, 75.0), 49_152);
        assert_eq!(least_queries(24_576, 0.0), 24_576);
        assert_eq!(least_queries(50, 0.0), 100);
        assert_eq!(least_queries(0, f64::NAN), 100);
        assert!(least_queries(24_576, f64::INFINITY) > 1 << 59);
    }
}
