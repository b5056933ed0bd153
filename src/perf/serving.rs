//! The steady state of one instance serving Poisson arrivals at a given rate: the distribution of
//! the number of requests it holds, TPOT and TTFT means and 99th percentiles, and the highest
//! rate that meets latency limits. Formulas: docs/model.md, "Serving".
//!
//! - **Occupancy.** The requests an instance holds form a birth-death process with
//!   state-dependent rates (Kleinrock 1975, "Queueing Systems", vol. 1, section 3.1, eq. 3.11):
//!   arrivals at `lambda`; with `n` requests, `k = min(n, B)` of them decode and each completes
//!   at rate `1 / (osl * TPOT(k))`, so departures leave at `mu(n) = k / (osl * TPOT(k))`. Then
//!   `P(n) = P(0) * prod_{j=1..n} lambda / mu(j)`. Below the slot limit the batch is a
//!   processor-sharing server whose speed depends on its occupancy, whose stationary occupancy
//!   is insensitive to the distribution of output lengths (Kelly 1979, "Reversibility and
//!   Stochastic Networks", section 3.3, symmetric queues); beyond `B` the waiting requests are
//!   served first come, first served (exact for exponential lengths). Unlike independent slots
//!   (M/M/c), a batch whose step time grows with its size behaves like fewer, faster servers:
//!   near saturation it holds many more requests than the fluid estimate.
//! - **TPOT.** Mean by Little's law, `E[k] / (lambda * osl)`. A request keeps about the same
//!   company for its whole life, so the 99th percentile of per-request TPOT (MLPerf's TPOT is
//!   per request, excluding the first token) is `TPOT(k_99)`, `k_99` the 99th percentile of the
//!   running sequences.
//! - **Admission.** An arrival that finds `n >= B` waits for `n - B + 1` departures at rate
//!   `mu(B)`; with the geometric tail of `P(n)` beyond `B`, that wait is zero with probability
//!   `1 - P(n >= B)` and otherwise exponential with rate `mu(B) - lambda` (as in M/M/c, Erlang
//!   C; arrivals see the stationary distribution, PASTA, Wolff 1982).
//! - **TTFT** with chunked prefill (Agrawal et al. 2024, Sarathi-Serve): a new prompt waits for
//!   the iteration in progress (half an iteration on average, nearly a whole one at the 99th
//!   percentile), for admission, and for the prompts ahead of it in its rank's prefill token
//!   budget (M/G/1, Pollaczek-Khinchine, service proportional to prompt length), then rides in
//!   `ceil(len / budget)` iterations, each the decode step at the running occupancy plus its
//!   chunk. The p99 uses the p99 prompt (gamma lengths with the workload's coefficient of
//!   variation) at the p99 occupancy.

use super::Instance;
use super::latency;
use super::memory::MAX_NUM_TOKENS;
use super::queue::standard_normal_quantile;

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

/// Points at which the decode step is timed; in between, TPOT is interpolated linearly.
const ANCHORS: usize = 48;

/// An instance's decode speed against the number of running sequences, timed once at
/// [`ANCHORS`] geometrically spaced occupancies from 1 to `max_batch` (TPOT is smooth in the
/// occupancy: every term of the step is linear in it or constant, up to rounding to whole
/// sequences per rank). No allocation.
#[derive(Debug, Clone, Copy)]
pub struct Speeds {
    pub max_batch: f64,
    pub output_tokens: f64,
    occupancy: [f64; ANCHORS],
    tpot_s: [f64; ANCHORS],
    iteration_s: [f64; ANCHORS],
    count: usize,
}

impl Speeds {
    pub fn new(inst: &Instance, max_batch: f64) -> Speeds {
        Speeds::tabulate(max_batch, inst.output_tokens, |n| {
            let d = inst.decode(n);
            (d.tpot_s, d.iteration_s)
        })
    }

    /// Times `step(n) = (tpot_s, iteration_s)` at the anchors.
    fn tabulate(max_batch: f64, output_tokens: f64, step: impl Fn(f64) -> (f64, f64)) -> Speeds {
        let mut s = Speeds {
            max_batch,
            output_tokens,
            occupancy: [0.0; ANCHORS],
            tpot_s: [0.0; ANCHORS],
            iteration_s: [0.0; ANCHORS],
            count: 0,
        };
        let ratio = max_batch.powf(1.0 / (ANCHORS - 1) as f64);
        let mut k = 1.0_f64;
        for i in 0..ANCHORS {
            // Whole sequences, increasing, ending exactly at max_batch.
            let n = if i == ANCHORS - 1 {
                max_batch
            } else {
                k.round().min(max_batch)
            };
            k *= ratio;
            if s.count > 0 && n <= s.occupancy[s.count - 1] {
                continue;
            }
            (s.tpot_s[s.count], s.iteration_s[s.count]) = step(n);
            s.occupancy[s.count] = n;
            s.count += 1;
        }
        s
    }

    fn interpolate(&self, values: &[f64; ANCHORS], k: f64) -> f64 {
        let x = &self.occupancy[..self.count];
        if k <= x[0] || self.count == 1 {
            return values[0];
        }
        let i = x.partition_point(|&v| v < k).min(self.count - 1);
        let (x0, x1) = (x[i - 1], x[i]);
        values[i - 1] + (values[i] - values[i - 1]) * (k - x0) / (x1 - x0)
    }

    /// TPOT with `k` sequences running.
    pub fn tpot_s(&self, k: f64) -> f64 {
        self.interpolate(&self.tpot_s, k)
    }

    /// One engine iteration with `k` sequences running.
    pub fn iteration_s(&self, k: f64) -> f64 {
        self.interpolate(&self.iteration_s, k)
    }

    /// Requests per second the instance completes with `max_batch` sequences always running.
    pub fn capacity_per_s(&self) -> f64 {
        self.max_batch / (self.output_tokens * self.tpot_s(self.max_batch))
    }
}

/// The stationary occupancy of an instance at an arrival rate (birth-death chain, module docs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Occupancy {
    /// Mean running sequences `E[min(n, B)]`.
    pub mean_running: f64,
    /// 99th percentile of the running sequences.
    pub running_p99: f64,
    /// Probability that an arrival finds every slot taken, `P(n >= B)`.
    pub wait_probability: f64,
    /// Rate of the exponential wait of those who wait, `mu(B) - lambda`, per second.
    pub wait_rate_per_s: f64,
}

impl Occupancy {
    /// `p`-quantile of the admission wait, seconds.
    pub fn wait_quantile_s(&self, p: f64) -> f64 {
        if self.wait_probability <= 1.0 - p {
            0.0
        } else {
            (self.wait_probability / (1.0 - p)).ln() / self.wait_rate_per_s
        }
    }

    pub fn wait_mean_s(&self) -> f64 {
        self.wait_probability / self.wait_rate_per_s
    }
}

/// The occupancy at `rate_per_s`, or `None` at or beyond capacity. Sums the chain in the log
/// domain (its terms span hundreds of orders of magnitude at large batches) and stops once the
/// terms are past their peak and below 1e-22 of it.
pub fn occupancy(speeds: &Speeds, rate_per_s: f64) -> Option<Occupancy> {
    let b = speeds.max_batch;
    let osl = speeds.output_tokens;
    let mu_b = b / (osl * speeds.tpot_s(b));
    if rate_per_s <= 0.0 || rate_per_s >= mu_b {
        return None;
    }
    let negligible = -50.0;
    let batch = b.floor() as u64;
    let step = |k: f64| (rate_per_s * osl * speeds.tpot_s(k) / k).ln();
    // First pass: normalization and mean, relative to the running maximum `m` of ln P(n)/P(0).
    let (mut log_p, mut m, mut total, mut running) = (0.0_f64, 0.0_f64, 1.0_f64, 0.0_f64);
    let mut last = 0u64;
    let mut reached_batch = true;
    for n in 1..=batch {
        let k = n as f64;
        let inc = step(k);
        log_p += inc;
        if log_p > m {
            let scale = (m - log_p).exp();
            total *= scale;
            running *= scale;
            m = log_p;
        }
        let w = (log_p - m).exp();
        total += w;
        running += k * w;
        last = n;
        if inc < 0.0 && log_p - m < negligible {
            reached_batch = false;
            break;
        }
    }
    // Beyond B: a geometric tail with ratio lambda / mu(B).
    let mut at_b = 0.0;
    if reached_batch {
        let ratio = rate_per_s / mu_b;
        at_b = (log_p - m).exp() / (1.0 - ratio);
        let tail = at_b - (log_p - m).exp();
        total += tail;
        running += b * tail;
    }
    // Second pass: the 99th percentile of the running sequences.
    let target = PERCENTILE * total;
    let (mut log_q, mut cdf, mut running_p99) = (0.0_f64, (-m).exp(), b);
    if cdf < target {
        for n in 1..last.min(batch) {
            let k = n as f64;
            log_q += step(k);
            cdf += (log_q - m).exp();
            if cdf >= target {
                running_p99 = k;
                break;
            }
        }
    } else {
        running_p99 = 0.0;
    }
    Some(Occupancy {
        mean_running: running / total,
        running_p99: running_p99.max(1.0).min(b),
        wait_probability: at_b / total,
        wait_rate_per_s: mu_b - rate_per_s,
    })
}

/// The steady state at `rate_per_s`, or `None` if the instance cannot keep up.
pub fn at_rate(inst: &Instance, max_batch: f64, rate_per_s: f64) -> Option<Serving> {
    at_rate_with(inst, &Speeds::new(inst, max_batch), rate_per_s)
}

/// `p`-quantile of a gamma-distributed length with mean `mean` and squared coefficient of
/// variation `cv2` (shape `1 / cv2`), by the Wilson-Hilferty cube-root normal approximation
/// (Wilson & Hilferty 1931, "The distribution of chi-square", PNAS 17(12); within 1 % of the
/// exact exponential quantile at `cv2 = 1`, `p = 0.99`). `cv2 = 0` gives the mean.
pub fn gamma_quantile(mean: f64, cv2: f64, p: f64) -> f64 {
    if cv2 <= 0.0 {
        return mean;
    }
    let a = cv2 / 9.0;
    let z = standard_normal_quantile(p);
    mean * (1.0 - a + z * a.sqrt()).max(0.0).powi(3)
}

/// Prompt tokens each attention rank may prefill per iteration next to `rank_sequences` decode
/// tokens: at least `MAX_NUM_TOKENS`, and never less than its decode tokens plus one prompt
/// (engines size max_num_tokens >= max_batch_size + input length); decode tokens come first.
fn prefill_budget(rank_sequences: f64, isl: f64) -> f64 {
    MAX_NUM_TOKENS.max(rank_sequences + isl) - rank_sequences
}

/// Seconds to prefill one prompt of `prompt_tokens` while `running` sequences decode (chunked
/// prefill, Agrawal et al. 2024; vLLM and TensorRT-LLM schedule decode tokens first and fill
/// the rest of the iteration's token budget with prompt chunks): `ceil(prompt / budget)`
/// iterations, each carrying the ordinary decode step plus its chunk, so the prompt's own work
/// lengthens the iterations it rides in. Never shorter than the prompt alone on an idle
/// instance.
pub fn prefill_under_load_s(inst: &Instance, running: f64, prompt_tokens: f64) -> f64 {
    let k = running.max(1.0);
    let base = inst.decode_shape(k);
    let budget = prefill_budget(base.tokens.sequences, inst.input_tokens);
    let chunks = (prompt_tokens / budget).ceil().max(1.0);
    // A chunk rides in one micro-batch of the pipeline cycle; the shape times one micro-batch
    // per stage step, so the cycle's extra work is spread over its micro-batches.
    let micro_batches = f64::from(inst.layout.pp).min(k.ceil()).max(1.0);
    let iteration = |chunk: f64| {
        let mut shape = base;
        let t = &mut shape.tokens;
        let extra = chunk / micro_batches;
        t.prefill_context =
            (t.prefill * t.prefill_context + extra * prompt_tokens / 2.0) / (t.prefill + extra);
        t.prefill += extra;
        t.moe_tokens += extra;
        t.logit_rows += 1.0 / micro_batches;
        inst.decode_step(&shape).iteration_s
    };
    let last = prompt_tokens - (chunks - 1.0) * budget;
    let loaded = (chunks - 1.0) * iteration(budget) + iteration(last);
    let alone = latency::prefill_s(
        &inst.ctx.model,
        &inst.layout,
        &inst.stages,
        &inst.rates,
        prompt_tokens,
    );
    loaded.max(alone)
}

/// [`at_rate`] with the instance's speeds already timed.
pub fn at_rate_with(inst: &Instance, speeds: &Speeds, rate_per_s: f64) -> Option<Serving> {
    let (isl, osl) = (inst.input_tokens, inst.output_tokens);
    let occ = occupancy(speeds, rate_per_s)?;
    let concurrency = occ.mean_running;
    let tpot_s = concurrency / (rate_per_s * osl);
    let step = inst.decode(concurrency.max(1.0));
    let iteration_p99_s = speeds.iteration_s(occ.running_p99);

    // Prompt lengths: gamma with the workload's coefficient of variation (`input_tokens_cv`,
    // kept as the prefill queue's Allen-Cunneen variability `(1 + cv^2) / 2`).
    let cv2 = (2.0 * inst.ctx.plan.settings.prefill_variability - 1.0).max(0.0);
    let isl_p99 = gamma_quantile(isl, cv2, PERCENTILE);

    // Prefill queue: each attention rank's prompt budget per iteration is one server; a prompt
    // occupies `isl / budget` of an iteration. Service varies with the prompt length, so the
    // wait is M/G/1 (Pollaczek-Khinchine): `W = rho S (1 + cs^2) / (2 (1 - rho))`, `cs = cv`;
    // the tail is exponential with `P(wait > 0) = rho`.
    let ranks = f64::from(inst.layout.attention_dp);
    let budget = prefill_budget(step.rank_sequences, isl);
    let service_s = isl / budget * step.iteration_s;
    let rho = rate_per_s / ranks * service_s;
    if rho >= 1.0 {
        return None;
    }
    let wait_mean_s = rho * service_s * (1.0 + cv2) / (2.0 * (1.0 - rho));
    let wait_p99_s = if rho > 1.0 - PERCENTILE {
        wait_mean_s / rho * (rho / (1.0 - PERCENTILE)).ln()
    } else {
        0.0
    };

    Some(Serving {
        rate_per_s,
        concurrency,
        tpot_s,
        tpot_p99_s: speeds.tpot_s(occ.running_p99).max(tpot_s),
        ttft_s: 0.5 * step.iteration_s
            + occ.wait_mean_s()
            + wait_mean_s
            + prefill_under_load_s(inst, concurrency, isl),
        ttft_p99_s: PERCENTILE * iteration_p99_s
            + wait_p99_s
            + occ.wait_quantile_s(PERCENTILE)
            + prefill_under_load_s(inst, occ.running_p99, isl_p99),
        output_tokens_per_s: rate_per_s * osl,
    })
}

/// The highest arrival rate whose 99th-percentile latencies meet `limits` (bisection; latencies
/// grow with load), or `None` when even a trickle of requests misses them.
pub fn max_rate(inst: &Instance, max_batch: f64, limits: &Limits) -> Option<Serving> {
    let speeds = Speeds::new(inst, max_batch);
    let capacity = speeds.capacity_per_s();
    let (mut lo, mut hi) = (0.0, capacity);
    let mut best = None;
    for _ in 0..40 {
        let mid = 0.5 * (lo + hi);
        match at_rate_with(inst, &speeds, mid) {
            Some(s) if limits.met_by(&s) => {
                best = Some(s);
                lo = mid;
            }
            _ => hi = mid,
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::queue::poisson_quantile;

    /// A step time that does not depend on the batch (memory-bound, independent slots): each
    /// running sequence completes at rate `1 / (osl T)`, so below the slot limit the occupancy is
    /// that of M/M/infinity, Poisson with mean `lambda osl T` (Kleinrock 1975, section 3.4).
    #[test]
    fn constant_step_gives_poisson_occupancy() {
        let (osl, t) = (100.0, 0.02);
        let speeds = Speeds::tabulate(10_000.0, osl, |_| (t, t));
        // lambda osl T = 5 req/s * 100 * 0.02 s = 10 sequences.
        let occ = occupancy(&speeds, 5.0).unwrap();
        assert!((occ.mean_running - 10.0).abs() < 1e-9, "{occ:?}");
        assert_eq!(occ.running_p99, poisson_quantile(10.0, 0.99)); // 18
        assert_eq!(occ.running_p99, 18.0);
        assert!(occ.wait_probability < 1e-12);
        assert_eq!(occ.wait_quantile_s(0.99), 0.0);
    }

    /// A step time proportional to the batch (compute-bound): the batch completes
    /// `1 / (osl b)` requests per second whatever its size, a processor-sharing M/M/1 queue:
    /// `P(n) = (1 - rho) rho^n`, mean `rho / (1 - rho)`, `P(n >= B) = rho^B`.
    #[test]
    fn proportional_step_gives_mm1_occupancy() {
        let (osl, b) = (10.0, 0.01);
        let speeds = Speeds::tabulate(40.0, osl, |n| (b * n, b * n));
        // mu = 1 / (osl b) = 10 req/s; lambda = 5 req/s: rho = 0.5.
        let occ = occupancy(&speeds, 5.0).unwrap();
        let rho: f64 = 0.5;
        assert!(
            (occ.wait_probability - rho.powi(40)).abs() < 1e-15,
            "{occ:?}"
        );
        assert!(
            (occ.mean_running - rho / (1.0 - rho)).abs() < 1e-9,
            "{occ:?}"
        );
        // 1 - 0.5^(n+1) >= 0.99 first at n = 6.
        assert_eq!(occ.running_p99, 6.0);
        // Far beyond the fluid estimate N = lambda osl TPOT(N) = 0.5 N, whose only root is 0.
        assert!(occ.mean_running > 0.9);
        assert!(occupancy(&speeds, 10.0).is_none());
    }

    /// One slot and a constant step is M/M/1 with FCFS waiting: `P(wait) = rho` and the wait of
    /// those who wait is exponential with rate `mu - lambda`: p99 = ln(rho / 0.01) / (mu - lambda).
    #[test]
    fn one_slot_waits_like_mm1() {
        let t = 1.0;
        let speeds = Speeds::tabulate(1.0, 1.0, |_| (t, t));
        let occ = occupancy(&speeds, 0.5).unwrap();
        assert!((occ.wait_probability - 0.5).abs() < 1e-12, "{occ:?}");
        assert!((occ.wait_rate_per_s - 0.5).abs() < 1e-12);
        assert!((occ.wait_quantile_s(0.99) - 2.0 * 50f64.ln()).abs() < 1e-9);
        assert!((occ.wait_mean_s() - 1.0).abs() < 1e-12); // rho / (mu - lambda)
    }

    /// Interpolation between anchors is exact for a step linear in the batch.
    #[test]
    fn speeds_interpolate_linear_steps_exactly() {
        let speeds = Speeds::tabulate(8192.0, 1.0, |n| (0.01 + 1e-5 * n, 0.02 + 1e-5 * n));
        for k in [1.0, 3.5, 100.0, 777.0, 8192.0] {
            assert!((speeds.tpot_s(k) - (0.01 + 1e-5 * k)).abs() < 1e-12, "{k}");
            assert!(
                (speeds.iteration_s(k) - (0.02 + 1e-5 * k)).abs() < 1e-12,
                "{k}"
            );
        }
        // Capacity: 8192 / (1 token * 0.09192 s).
        assert!((speeds.capacity_per_s() - 8192.0 / 0.09192).abs() < 1e-6);
    }

    /// Exponential prompts (cv = 1): the exact p99 is ln(100) = 4.605 means; Wilson-Hilferty
    /// gives 4.61. Fixed lengths (cv = 0) give the mean. Gamma with cv = 0.5 (shape 4): the
    /// exact p99 is 2.511 means (chi-square tables: chi2_0.99(8) / 8 = 20.09 / 8).
    #[test]
    fn prompt_length_quantiles() {
        let e = gamma_quantile(1.0, 1.0, 0.99);
        assert!((e - 100f64.ln()).abs() / 100f64.ln() < 0.01, "{e}");
        assert_eq!(gamma_quantile(222.0, 0.0, 0.99), 222.0);
        let g = gamma_quantile(1.0, 0.25, 0.99);
        assert!((g - 20.090 / 8.0).abs() < 0.01, "{g}");
    }
}
