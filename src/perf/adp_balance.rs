//! TensorRT-LLM's attention-DP balance (`attention_dp_config.enable_balance`; the MLPerf
//! harness's `adp_balancing_*` flags): with attention data parallelism, each rank's new prompts
//! are held back until every rank has one, then `batching_wait_iters` iterations more, or
//! until `timeout_iters` iterations have passed without every rank having one; then all ranks
//! prefill together ("ADP Balance Strategy", TensorRT-LLM tech blog 10; the rule as coded in
//! `PyExecutor._balance_adp_requests`, tensorrt_llm/_torch/pyexecutor/py_executor.py: the
//! waiting count rises on every iteration in which some rank has no prompt and releases at
//! `timeout_iters`; the batching count rises while every rank has one and releases past
//! `batching_wait_iters`).
//!
//! A release cycle starts after a release. With each rank's prompts arriving as a Poisson
//! stream of `a` per iteration, independently of the others, every rank holds one by iteration
//! `j` with probability `F(j) = (1 - e^{-a j})^R` (the largest of `R` exponential first
//! arrivals; David and Nagaraja, "Order Statistics", section 2.1). The cycle lasts `J + W`
//! iterations when every rank has a prompt at an iteration `J < T`, else `T`. A prompt arrives
//! at a random time: it lands in a cycle of length `c` with probability proportional to `c`
//! (the inspection paradox; Ross, "Introduction to Probability Models", renewal-reward) and
//! waits a uniform part of it, so `P(wait > x) = E[(C - x)^+] / E[C]`, with mean
//! `E[C^2] / (2 E[C])`. The prefill of a release is the prompts the ranks gathered over a
//! cycle, `a E[C]` each on average: the step waits for the rank that gathered the most
//! ([`super::serving::busiest_of_poisson`]), once a cycle instead of once an iteration.

/// The balance's two counts, in engine iterations.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdpBalance {
    /// Iterations prompts are held once every rank has one (`batching_wait_iters`).
    pub batching_wait_iters: f64,
    /// Iterations after which prompts are released though some rank has none
    /// (`timeout_iters`).
    pub timeout_iters: f64,
}

/// Iterations beyond which the terms of a cycle's distribution are not summed (a timeout that
/// long never binds: every rank has a prompt long before).
const MAX_TERMS: usize = 100_000;

impl AdpBalance {
    /// Calls `term(probability, length)` for each length a release cycle can take, in
    /// iterations, with `R = ranks` ranks each receiving `a = prompts_per_iteration` prompts
    /// per iteration (module docs). No allocation.
    fn cycles(&self, prompts_per_iteration: f64, ranks: u32, mut term: impl FnMut(f64, f64)) {
        let (w, t) = (
            self.batching_wait_iters.max(0.0),
            self.timeout_iters.max(1.0),
        );
        let a = prompts_per_iteration.max(0.0);
        let all_by = |j: f64| (1.0 - (-a * j).exp()).powi(ranks.max(1) as i32);
        let mut before = 0.0;
        let mut j = 1.0;
        while j < t && (j as usize) < MAX_TERMS {
            let now = all_by(j);
            term(now - before, j + w);
            before = now;
            if 1.0 - before < 1e-12 {
                return;
            }
            j += 1.0;
        }
        term(1.0 - before, t);
    }

    /// Mean length of a release cycle, iterations.
    pub fn mean_cycle(&self, prompts_per_iteration: f64, ranks: u32) -> f64 {
        let mut mean = 0.0;
        self.cycles(prompts_per_iteration, ranks, |p, c| mean += p * c);
        mean
    }

    /// Mean iterations a prompt is held, `E[C^2] / (2 E[C])`.
    pub fn wait_mean_iterations(&self, prompts_per_iteration: f64, ranks: u32) -> f64 {
        let (mut m1, mut m2) = (0.0, 0.0);
        self.cycles(prompts_per_iteration, ranks, |p, c| {
            m1 += p * c;
            m2 += p * c * c;
        });
        m2 / (2.0 * m1)
    }

    /// The `q`-quantile of the iterations a prompt is held: the `x` at which
    /// `E[(C - x)^+] / E[C] = 1 - q`, by bisection (the left side falls from 1 at `x = 0` to 0
    /// at the longest cycle the sum reaches).
    pub fn wait_quantile_iterations(&self, prompts_per_iteration: f64, ranks: u32, q: f64) -> f64 {
        let (a, r) = (prompts_per_iteration, ranks);
        let mean = self.mean_cycle(a, r);
        let above = |x: f64| {
            let mut s = 0.0;
            self.cycles(a, r, |p, c| s += p * (c - x).max(0.0));
            s / mean
        };
        let mut longest = 0.0_f64;
        self.cycles(a, r, |_, c| longest = longest.max(c));
        let (mut lo, mut hi) = (0.0, longest);
        let target = 1.0 - q.clamp(0.0, 1.0);
        for _ in 0..60 {
            let mid = 0.5 * (lo + hi);
            if above(mid) > target {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        0.5 * (lo + hi)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SERVER: AdpBalance = AdpBalance {
        batching_wait_iters: 3.0,
        timeout_iters: 9.0,
    };

    /// A trickle of prompts never finds every rank holding one, so prompts are released every
    /// `timeout_iters`: a uniform wait over 9 iterations, mean 4.5, 99th percentile 8.91.
    #[test]
    fn a_trickle_is_released_at_the_timeout() {
        let a = 1e-6;
        assert!((SERVER.mean_cycle(a, 8) - 9.0).abs() < 1e-9);
        assert!((SERVER.wait_mean_iterations(a, 8) - 4.5).abs() < 1e-9);
        let p99 = SERVER.wait_quantile_iterations(a, 8, 0.99);
        assert!((p99 - 8.91).abs() < 1e-6, "{p99}");
    }

    /// A flood finds every rank holding a prompt at the first iteration: cycles of `1 + W = 4`
    /// iterations, a uniform wait over them, mean and median 2.
    #[test]
    fn a_flood_is_released_after_the_batching_wait() {
        assert!((SERVER.mean_cycle(1e3, 8) - 4.0).abs() < 1e-9);
        assert!((SERVER.wait_mean_iterations(1e3, 8) - 2.0).abs() < 1e-9);
        let p50 = SERVER.wait_quantile_iterations(1e3, 8, 0.5);
        assert!((p50 - 2.0).abs() < 1e-6, "{p50}");
    }

    /// Between the two, by hand: two ranks, `a = ln 2` (each rank holds a prompt after one
    /// iteration with probability 1/2), `W = 1`, `T = 3`. `F(1) = 1/4`, `F(2) = (3/4)^2 =
    /// 9/16`: cycles of 2 with probability 1/4, of 3 with 5/16 and of 3 (the timeout) with
    /// 7/16. `E[C] = 1/2 + 3 * 3/4 = 2.75`, `E[C^2] = 1 + 9 * 3/4 = 7.75`, mean wait
    /// `7.75 / 5.5`. The wait exceeds 2 only in a cycle of 3: `(3/4) (3 - 2) / 2.75 = 3/11`.
    #[test]
    fn a_two_rank_cycle_by_hand() {
        let b = AdpBalance {
            batching_wait_iters: 1.0,
            timeout_iters: 3.0,
        };
        let a = std::f64::consts::LN_2;
        assert!((b.mean_cycle(a, 2) - 2.75).abs() < 1e-12);
        assert!((b.wait_mean_iterations(a, 2) - 7.75 / 5.5).abs() < 1e-12);
        let q = b.wait_quantile_iterations(a, 2, 1.0 - 3.0 / 11.0);
        assert!((q - 2.0).abs() < 1e-9, "{q}");
    }
}
