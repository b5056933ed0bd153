//! The steady state of a pool of instances under its arrivals: the rate the load settles at
//! (an open stream's, or a closed population's, solved with the latency it causes) and the
//! latencies at that load: TTFT percentiles, TPOT, request latency and queue waits. The
//! occupancy comes from [`super::serving`] (open) or [`super::closed`] (users); sizing
//! ([`super::sizing`]) asks for it at each instance count it tries. Formulas: docs/model.md,
//! "Demand" and "Sizing and queueing".

use super::batched::{BatchedInstance, Pools};
use super::closed;
use super::queue::Queue;
use super::serving::{self, Occupancy, P99, PERCENTILES, Speeds, Spread};
use super::sizing::Settings;

/// What sets a pool's load: an open stream of requests (Poisson, the rate modes), or a closed
/// population of users who each wait for their answer and think before asking again.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Arrivals {
    Open { requests_per_s: f64 },
    Closed { users: f64, think_s: f64 },
}

/// The steady state of the pools under their arrivals: the rate they settle at and its latencies.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Steady {
    /// Requests per second into the pools.
    pub requests_per_s: f64,
    /// TTFT at [`PERCENTILES`], of a mean-length prompt at the mean load, and the p99 with
    /// exponential lengths; NaN where the caller asked for the p99 alone.
    pub ttft_s: [f64; 3],
    pub ttft_mean_s: f64,
    pub ttft_p99_exponential_s: f64,
    /// Mean TPOT a sequence sees (Little's law over the running sequences), and its 99th
    /// percentile.
    pub tpot_mean_s: f64,
    pub tpot_p99_s: f64,
    /// Mean requests a decode instance holds, running or waiting for a slot.
    pub held_per_instance: f64,
    /// Mean time from request to last token, seconds (Little's law over the pools).
    pub response_s: f64,
    /// Request latency, first token plus the rest of the answer, at the median and the 99th
    /// percentile (NaN with the p99 alone: the median).
    pub e2e_s: [f64; 2],
    /// Wait before a request's prompt is processed (prompt budget or prefill pool, and a decode
    /// slot), at the 99th percentile.
    pub queue_wait_p99_s: f64,
}

impl Steady {
    /// This steady state of one aggregated instance, for a pool of `decode` of them, each
    /// taking its share of the load: the same latencies at `decode` times the requests.
    pub fn of_pool(self, decode: u32) -> Steady {
        Steady {
            requests_per_s: self.requests_per_s * f64::from(decode),
            ..self
        }
    }
}

/// Percentiles of the `e2e_s` columns (indices into [`PERCENTILES`]).
pub(super) const E2E: [usize; 2] = [0, P99];

/// The steady state of `batched`'s `pools` under `arrivals` (module docs of [`super::serving`] and
/// [`super::closed`]): each decode instance holds its share of a closed population, or takes its
/// share of an open stream. Aggregated, an instance's TTFT is the serving model's (iteration
/// boundary, prompt budget, slot, prompt under load). Disaggregated, a request first queues for
/// one of the prefill pool's attention ranks (G/G/c, held for the rank's time per prompt at full
/// throughput), is prefilled and its KV moved (the idle TTFT), then waits for a decode slot; a
/// closed population's users spend that time away from the decode instance, and the rate that
/// sets that wait is solved as a fixed point. `None` when a queue cannot keep up.
pub fn steady(
    batched: &BatchedInstance,
    speeds: &Speeds,
    pools: Pools,
    arrivals: Arrivals,
    spread: Spread,
    p99_only: bool,
) -> Option<Steady> {
    let decode = f64::from(pools.decode);
    if pools.prefill == 0 {
        let occ = match arrivals {
            Arrivals::Open { requests_per_s } => {
                serving::occupancy(speeds, requests_per_s / decode)?
            }
            Arrivals::Closed { users, think_s } => {
                closed::occupancy(speeds, users / decode, think_s)?
            }
        };
        return aggregated(batched, speeds, decode, occ, spread, p99_only);
    }
    let inst = batched.inst;
    let prefill_ranks = f64::from(inst.prefill_layout.attention_dp);
    let ranks = f64::from(pools.prefill) * prefill_ranks;
    let service_s = prefill_ranks / batched.prefill_requests_per_s;
    let queue = |lambda: f64, spread: Spread| {
        Queue::new(
            ranks,
            lambda * service_s,
            service_s,
            (1.0 + spread.prompt_cv2) / 2.0,
        )
    };
    let occ = match arrivals {
        Arrivals::Open { requests_per_s } => serving::occupancy(speeds, requests_per_s / decode)?,
        Arrivals::Closed { users, think_s } => {
            // A user is away from its decode instance while thinking and while its prompt
            // waits for and passes through the prefill pool; that wait grows with the rate.
            let at = |lambda: f64| {
                let away = think_s + batched.ttft_idle_s + queue(lambda, spread).wait_mean_s();
                closed::occupancy(speeds, users / decode, away)
            };
            let lambda = fixed_point(|lambda| at(lambda).map_or(0.0, |o| o.rate_per_s * decode))?;
            at(lambda)?
        }
    };
    let lambda = occ.rate_per_s * decode;
    let prefill = queue(lambda, spread);
    if !prefill.is_stable() {
        return None;
    }
    let first = if p99_only { P99 } else { 0 };
    let waits = |q: &Queue, p: f64, v: f64| serving::queue_waits(q, &occ, p, v);
    let mut ttft_s = [f64::NAN; 3];
    for (i, t) in ttft_s.iter_mut().enumerate().skip(first) {
        let p = PERCENTILES[i];
        *t = batched.ttft_idle_s
            + serving::tail_of_sum(&waits(&prefill, p, spread.slot_variability));
    }
    let (ttft_mean_s, ttft_p99_exponential_s) = if p99_only {
        (f64::NAN, f64::NAN)
    } else if spread == Spread::EXPONENTIAL {
        (
            batched.ttft_idle_s + prefill.wait_mean_s() + occ.wait_mean_all_s(1.0),
            ttft_s[P99],
        )
    } else {
        let p = PERCENTILES[P99];
        let exponential = queue(lambda, Spread::EXPONENTIAL);
        (
            batched.ttft_idle_s
                + prefill.wait_mean_s()
                + occ.wait_mean_all_s(spread.slot_variability),
            batched.ttft_idle_s + serving::tail_of_sum(&waits(&exponential, p, 1.0)),
        )
    };
    let osl = inst.output_tokens;
    let tpot_mean_s = occ.mean_running / (occ.rate_per_s * osl);
    let p = PERCENTILES[P99];
    Some(Steady {
        requests_per_s: lambda,
        ttft_s,
        ttft_mean_s,
        ttft_p99_exponential_s,
        tpot_mean_s,
        tpot_p99_s: speeds.tpot_quantile_s(occ.running[P99], tpot_mean_s),
        held_per_instance: occ.mean_held,
        response_s: batched.ttft_idle_s + prefill.wait_mean_s() + occ.mean_held / occ.rate_per_s,
        e2e_s: e2e(&ttft_s, &occ, speeds, osl, spread, first),
        queue_wait_p99_s: serving::tail_of_sum(&waits(&prefill, p, spread.slot_variability)),
    })
}

/// [`steady`] of an aggregated pool of `decode` instances whose occupancy is `occ`.
fn aggregated(
    batched: &BatchedInstance,
    speeds: &Speeds,
    decode: f64,
    occ: Occupancy,
    spread: Spread,
    p99_only: bool,
) -> Option<Steady> {
    let inst = batched.inst;
    let sv = serving::Serving::new(inst, speeds, occ, spread)?;
    let first = if p99_only { P99 } else { 0 };
    let mut ttft_s = [f64::NAN; 3];
    for (i, t) in ttft_s.iter_mut().enumerate().skip(first) {
        *t = if i == P99 {
            sv.ttft_p99_s
        } else {
            sv.ttft_s(inst, i)
        };
    }
    let (ttft_mean_s, ttft_p99_exponential_s) = if p99_only {
        (f64::NAN, f64::NAN)
    } else if spread == Spread::EXPONENTIAL {
        (sv.ttft_mean_s(inst), sv.ttft_p99_s)
    } else {
        (
            sv.ttft_mean_s(inst),
            sv.ttft_with(inst, P99, Spread::EXPONENTIAL),
        )
    };
    Some(Steady {
        requests_per_s: occ.rate_per_s * decode,
        ttft_s,
        ttft_mean_s,
        ttft_p99_exponential_s,
        tpot_mean_s: sv.tpot_s,
        tpot_p99_s: sv.tpot_p99_s,
        held_per_instance: occ.mean_held,
        response_s: occ.mean_held / occ.rate_per_s,
        e2e_s: e2e(&ttft_s, &occ, speeds, inst.output_tokens, spread, first),
        queue_wait_p99_s: serving::tail_of_sum(&sv.waits(P99, spread)),
    })
}

/// Request latency at the [`E2E`] percentiles: the first token at that percentile, then the
/// rest of an answer of that percentile's length (gamma-distributed with the output lengths'
/// spread) at the TPOT of that percentile's occupancy. The parts' percentiles are added.
fn e2e(
    ttft_s: &[f64; 3],
    occ: &Occupancy,
    speeds: &Speeds,
    osl: f64,
    spread: Spread,
    first: usize,
) -> [f64; 2] {
    let answer_cv2 = spread.answer_cv2();
    E2E.map(|i| {
        if i < first {
            return f64::NAN;
        }
        let tokens = serving::gamma_percentile(osl, answer_cv2, i);
        ttft_s[i] + (tokens - 1.0).max(0.0) * speeds.tpot_s(occ.running[i])
    })
}

/// The rate `x` with `x = g(x)`, for `g` non-increasing with `g(0) > 0` (a rate that lengthens
/// the waits that slow the users who set it): regula falsi with the Illinois modification
/// (Dowell and Jarratt 1971, BIT 11) on `g(x) - x` over `[0, g(0)]`, to a relative 1e-9.
/// `None` when `g(0)` is not a positive rate.
fn fixed_point(g: impl Fn(f64) -> f64) -> Option<f64> {
    let top = g(0.0);
    if !(top > 0.0 && top.is_finite()) {
        return None;
    }
    let h = |x: f64| g(x) - x;
    let (mut a, mut fa) = (0.0, top);
    let (mut b, mut fb) = (top, h(top));
    if fb >= 0.0 {
        return Some(top);
    }
    let mut side = 0;
    let mut c = top;
    for _ in 0..100 {
        c = (a * fb - b * fa) / (fb - fa);
        let fc = h(c);
        if fc == 0.0 || (b - a) <= 1e-9 * b {
            break;
        }
        if fc.signum() == fb.signum() {
            (b, fb) = (c, fc);
            if side == -1 {
                fa /= 2.0;
            }
            side = -1;
        } else {
            (a, fa) = (c, fc);
            if side == 1 {
                fb /= 2.0;
            }
            side = 1;
        }
    }
    Some(c)
}

/// The steady state of a full instance, what a benchmark at the batch's concurrency measures:
/// each decode instance holds `batch` users who ask again as soon as they are answered (a
/// closed population without think time). Latencies are infinite when a queue cannot keep up
/// even so.
pub fn full_instance(
    batched: &BatchedInstance,
    speeds: &Speeds,
    pools: Pools,
    s: &Settings,
) -> Steady {
    let users = Arrivals::Closed {
        users: batched.batch * f64::from(pools.decode),
        think_s: 0.0,
    };
    steady(batched, speeds, pools, users, s.spread(), false).unwrap_or_else(|| Steady {
        held_per_instance: batched.batch,
        ..unstable(batched.capacity_requests_per_s(pools), speeds, batched)
    })
}

/// The steady state of pools whose queues cannot keep up at `requests_per_s`.
pub(super) fn unstable(requests_per_s: f64, speeds: &Speeds, batched: &BatchedInstance) -> Steady {
    Steady {
        requests_per_s,
        ttft_s: [f64::INFINITY; 3],
        ttft_mean_s: f64::INFINITY,
        ttft_p99_exponential_s: f64::INFINITY,
        tpot_mean_s: speeds.tpot_s(batched.batch),
        tpot_p99_s: speeds.tpot_s(batched.batch),
        held_per_instance: f64::INFINITY,
        response_s: f64::INFINITY,
        e2e_s: [f64::INFINITY; 2],
        queue_wait_p99_s: f64::INFINITY,
    }
}
