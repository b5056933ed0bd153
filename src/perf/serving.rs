//! The steady state of one instance serving Poisson arrivals at a given rate: mean concurrency,
//! TPOT and TTFT means and 99th percentiles, and the highest rate that meets latency limits.
//! Formulas: docs/model.md, "Serving".
//!
//! - Concurrency solves Little's law `N = lambda * osl * TPOT(N)`, with at most `max_batch`
//!   sequences admitted (Little 1961).
//! - The number of sequences in service fluctuates like an M/G/infinity system: Poisson with
//!   mean N. A request keeps about the same company for its whole life, so its mean TPOT is
//!   `TPOT(N)` at the N it meets, and the 99th percentile of per-request TPOT is
//!   `TPOT(N_p99)` (MLPerf's TPOT is per request, excluding the first token).
//! - Admission beyond `max_batch` waits as in M/M/c with `c = max_batch` servers, each holding a
//!   request for its lifetime (Erlang C).
//! - TTFT with chunked prefill (Agrawal et al. 2024, Sarathi-Serve): a new prompt waits for the
//!   next engine iteration (half an iteration on average, nearly a whole one at the 99th
//!   percentile), queues for the iteration's prefill token budget (`MAX_NUM_TOKENS` minus the
//!   decode tokens; M/D/1 per attention rank, exponential tail), and then needs
//!   `ceil(isl / budget)` iterations. Each iteration lasts at least as long as that chunk's own
//!   prefill.

use super::Instance;
use super::memory::MAX_NUM_TOKENS;
use super::queue::{mmc_wait_mean_s, mmc_wait_quantile_s, poisson_quantile};

/// Percentile the serving latencies are reported at.
pub const PERCENTILE: f64 = 0.99;

/// One instance's steady state at an arrival rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Serving {
    /// Requests per second into the instance.
    pub rate_per_s: f64,
    /// Mean sequences in decode.
    pub concurrency: f64,
    pub tpot_s: f64,
    pub tpot_p99_s: f64,
    pub ttft_s: f64,
    pub ttft_p99_s: f64,
    /// Output tokens per second of the instance (`rate * osl`).
    pub output_tokens_per_s: f64,
}

/// Latency limits a rate must meet (99th percentiles); `None` = no limit.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Limits {
    pub ttft_p99_s: Option<f64>,
    pub tpot_p99_s: Option<f64>,
}

impl Limits {
    fn met_by(&self, s: &Serving) -> bool {
        self.ttft_p99_s.is_none_or(|l| s.ttft_p99_s <= l)
            && self.tpot_p99_s.is_none_or(|l| s.tpot_p99_s <= l)
    }
}

/// Requests per second the instance completes with `max_batch` sequences always running.
pub fn capacity_per_s(inst: &Instance, max_batch: f64) -> f64 {
    max_batch / (inst.output_tokens * inst.decode(max_batch).tpot_s)
}

/// The steady state at `rate_per_s`, or `None` if the instance cannot keep up.
pub fn at_rate(inst: &Instance, max_batch: f64, rate_per_s: f64) -> Option<Serving> {
    let (isl, osl) = (inst.input_tokens, inst.output_tokens);
    if rate_per_s <= 0.0 || rate_per_s >= capacity_per_s(inst, max_batch) {
        return None;
    }
    // Little's law fixed point: g(N) = rate * osl * TPOT(N) - N falls through zero once in
    // (0, max_batch) because TPOT grows slower than N.
    let (mut lo, mut hi) = (0.0, max_batch);
    for _ in 0..48 {
        let mid = 0.5 * (lo + hi);
        if rate_per_s * osl * inst.decode(mid).tpot_s > mid {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let concurrency = hi;
    let step = inst.decode(concurrency);
    let n_p99 = poisson_quantile(concurrency, PERCENTILE)
        .min(max_batch)
        .max(concurrency);
    let step_p99 = inst.decode(n_p99);

    // Admission: max_batch slots, each held for a request's decode lifetime.
    let lifetime_s = osl * step.tpot_s;
    let offered = rate_per_s * lifetime_s;
    let admission_mean_s = mmc_wait_mean_s(max_batch, offered, lifetime_s);
    let admission_p99_s = mmc_wait_quantile_s(max_batch, offered, lifetime_s, PERCENTILE);

    // Prefill: each attention rank has its own token budget per iteration, at least
    // MAX_NUM_TOKENS and never less than its decode tokens plus one prompt (engines size
    // max_num_tokens >= max_batch_size + input length); decode tokens come first.
    let ranks = f64::from(inst.layout.attention_dp);
    let budget = MAX_NUM_TOKENS.max(step.rank_sequences + isl) - step.rank_sequences;
    let chunks = (isl / budget).ceil().max(1.0);
    let prefill_alone_s = inst.prefill_s();
    let prefill_time = |iteration_s: f64| (chunks * iteration_s).max(prefill_alone_s);
    // Waits and prefill are counted in engine iterations (with speculation an iteration yields
    // more than one token per sequence, so it is longer than TPOT).
    let service_s = (isl / budget).min(1.0) * step.iteration_s;
    let rho = rate_per_s / ranks * service_s;
    if rho >= 1.0 {
        return None;
    }
    let wait_mean_s = rho * service_s / (2.0 * (1.0 - rho));
    let wait_p99_s = if rho > 1.0 - PERCENTILE {
        wait_mean_s / rho * (rho / (1.0 - PERCENTILE)).ln()
    } else {
        0.0
    };

    Some(Serving {
        rate_per_s,
        concurrency,
        tpot_s: step.tpot_s,
        tpot_p99_s: step_p99.tpot_s,
        ttft_s: 0.5 * step.iteration_s
            + admission_mean_s
            + wait_mean_s
            + prefill_time(step.iteration_s),
        ttft_p99_s: PERCENTILE * step_p99.iteration_s
            + wait_p99_s
            + admission_p99_s
            + prefill_time(step_p99.iteration_s),
        output_tokens_per_s: rate_per_s * osl,
    })
}

/// The highest arrival rate whose 99th-percentile latencies meet `limits` (bisection; latencies
/// grow with load), or `None` when even a trickle of requests misses them.
pub fn max_rate(inst: &Instance, max_batch: f64, limits: &Limits) -> Option<Serving> {
    let capacity = capacity_per_s(inst, max_batch);
    let (mut lo, mut hi) = (0.0, capacity);
    let mut best = None;
    for _ in 0..40 {
        let mid = 0.5 * (lo + hi);
        match at_rate(inst, max_batch, mid) {
            Some(s) if limits.met_by(&s) => {
                best = Some(s);
                lo = mid;
            }
            _ => hi = mid,
        }
    }
    best
}
