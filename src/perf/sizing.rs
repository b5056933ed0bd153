//! A pool of instances against a demand: utilization, queueing for a slot, first-token and
//! per-token latency percentiles at the operating load (the serving model of
//! [`super::serving`], the one `validate` uses), the SLO verdict, and the fewest instances that
//! meet the demand and the SLOs (a monotone search, not a scan). Formulas: docs/model.md,
//! "Sizing and queueing".

use super::closed;
use super::demand::Load;
use super::kv_tiers::{Offload, TierFacts, offload};
use super::queue::Queue;
use super::serving::{self, Occupancy, P99, PERCENTILES, Speeds, Spread};
use super::unit::{Pools, Unit};

/// Latency objectives of `[sweep]` (99th percentiles); `None` = not set.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Slo {
    pub ttft_p99_s: Option<f64>,
    pub tpot_p99_s: Option<f64>,
    pub tokens_per_s_per_user: Option<f64>,
}

impl Slo {
    pub fn is_set(&self) -> bool {
        self.ttft_p99_s.is_some()
            || self.tpot_p99_s.is_some()
            || self.tokens_per_s_per_user.is_some()
    }

    /// Whether latencies meet every objective; a user's rate is `1 / TPOT` at the p99 TPOT.
    pub fn met(&self, ttft_p99_s: f64, tpot_p99_s: f64) -> bool {
        self.ttft_p99_s.is_none_or(|l| ttft_p99_s <= l)
            && self.tpot_p99_s.is_none_or(|l| tpot_p99_s <= l)
            && self
                .tokens_per_s_per_user
                .is_none_or(|l| 1.0 / tpot_p99_s >= l)
    }
}

/// How requests behave beyond their mean lengths.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// Utilization the sizing aims at (headroom for bursts).
    pub target_utilization: f64,
    /// Seconds a user reads between answers.
    pub think_s: f64,
    /// `(ca^2 + cs^2) / 2` for the prefill queue (service ~ prompt length) and the decode-slot
    /// queue (service ~ output length), with Poisson arrivals (`ca^2 = 1`).
    pub prefill_variability: f64,
    pub decode_variability: f64,
    /// Context cached per session between turns, tokens.
    pub cached_tokens: f64,
    pub slo: Slo,
}

impl Settings {
    /// The workload's spreads (`input_tokens_cv`, `output_tokens_cv`) as the serving model's
    /// queues take them.
    pub fn spread(&self) -> Spread {
        Spread {
            prompt_cv2: (2.0 * self.prefill_variability - 1.0).max(0.0),
            slot_variability: self.decode_variability,
        }
    }
}

/// Squared coefficient of variation to the Allen-Cunneen variability with Poisson arrivals.
pub fn variability(cv: f64) -> f64 {
    (1.0 + cv * cv) / 2.0
}

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

/// Percentiles of the `e2e_s` columns (indices into [`PERCENTILES`]).
const E2E: [usize; 2] = [0, P99];

/// The steady state of `unit`'s `pools` under `arrivals` (module docs of [`super::serving`] and
/// [`super::closed`]): each decode instance holds its share of a closed population, or takes its
/// share of an open stream. Aggregated, an instance's TTFT is the serving model's (iteration
/// boundary, prompt budget, slot, prompt under load). Disaggregated, a request first queues for
/// one of the prefill pool's attention ranks (G/G/c, held for the rank's time per prompt at full
/// throughput), is prefilled and its KV moved (the idle TTFT), then waits for a decode slot; a
/// closed population's users spend that time away from the decode instance, and the rate that
/// sets that wait is solved as a fixed point. `None` when a queue cannot keep up.
pub fn steady(
    unit: &Unit,
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
        return aggregated(unit, speeds, decode, occ, spread, p99_only);
    }
    let inst = unit.inst;
    let ranks = f64::from(pools.prefill) * f64::from(inst.layout.attention_dp);
    let service_s = f64::from(inst.layout.attention_dp) / unit.prefill_requests_per_s;
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
                let away = think_s + unit.ttft_idle_s + queue(lambda, spread).wait_mean_s();
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
    let slot = |p: f64, v: f64| occ.wait_quantile_s(p, v);
    let mut ttft_s = [f64::NAN; 3];
    for (i, t) in ttft_s.iter_mut().enumerate().skip(first) {
        let p = PERCENTILES[i];
        *t = unit.ttft_idle_s + prefill.wait_quantile_s(p) + slot(p, spread.slot_variability);
    }
    let (ttft_mean_s, ttft_p99_exponential_s) = if p99_only {
        (f64::NAN, f64::NAN)
    } else if spread == Spread::EXPONENTIAL {
        (
            unit.ttft_idle_s + prefill.wait_mean_s() + occ.wait_mean_all_s(1.0),
            ttft_s[P99],
        )
    } else {
        let p = PERCENTILES[P99];
        (
            unit.ttft_idle_s + prefill.wait_mean_s() + occ.wait_mean_all_s(spread.slot_variability),
            unit.ttft_idle_s + queue(lambda, Spread::EXPONENTIAL).wait_quantile_s(p) + slot(p, 1.0),
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
        tpot_p99_s: speeds.tpot_s(occ.running[P99]).max(tpot_mean_s),
        held_per_instance: occ.mean_held,
        response_s: unit.ttft_idle_s + prefill.wait_mean_s() + occ.mean_held / occ.rate_per_s,
        e2e_s: e2e(&ttft_s, &occ, speeds, osl, spread, first),
        queue_wait_p99_s: prefill.wait_quantile_s(p) + slot(p, spread.slot_variability),
    })
}

/// [`steady`] of an aggregated pool of `decode` instances whose occupancy is `occ`.
fn aggregated(
    unit: &Unit,
    speeds: &Speeds,
    decode: f64,
    occ: Occupancy,
    spread: Spread,
    p99_only: bool,
) -> Option<Steady> {
    let inst = unit.inst;
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
    let p = PERCENTILES[P99];
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
        queue_wait_p99_s: sv.prefill_wait_s(P99, spread)
            + occ.wait_quantile_s(p, spread.slot_variability),
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
    let answer_cv2 = (2.0 * spread.slot_variability - 1.0).max(0.0);
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

/// A pool serving a load.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Served {
    pub capacity_requests_per_s: f64,
    /// The demand's mean request rate (a day's average for a token budget; the users' settled
    /// rate for a closed population), and the part of it the pools serve.
    pub mean_requests_per_s: f64,
    pub served_requests_per_s: f64,
    /// Demand over capacity (the busier pool when disaggregated).
    pub utilization: f64,
    /// The load's steady state, with the KV reloads added to the first-token latencies;
    /// latencies infinite when a queue is unstable.
    pub steady: Steady,
    pub offload: Offload,
    pub users_supported: f64,
    pub demand_met: bool,
    pub meets_slo: bool,
}

/// Instances that are never worth searching beyond (the caller's rack cap).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooMany;

/// The decode speeds of `unit`'s instance for the serving model: its batch's step is the unit's.
pub fn speeds(unit: &Unit) -> Speeds {
    Speeds::from_full(unit.inst, &unit.decode, unit.batch)
}

/// What a load asks of `pools`: the closed population of its users, or the open stream of its
/// rate modes, whichever is the heavier (when a sweep sets both, the strictest wins). The
/// steady state comes with it, `None` when a queue cannot keep up. Also says whether the users
/// set the load.
fn settle(
    unit: &Unit,
    speeds: &Speeds,
    pools: Pools,
    load: &Load,
    s: &Settings,
    p99_only: bool,
) -> (f64, Option<Steady>, bool) {
    let spread = s.spread();
    let open = Arrivals::Open {
        requests_per_s: load.requests_per_s,
    };
    if load.users > 0.0 {
        let closed = Arrivals::Closed {
            users: load.users,
            think_s: s.think_s,
        };
        let settled = steady(unit, speeds, pools, closed, spread, p99_only);
        match settled {
            Some(st) if st.requests_per_s >= load.requests_per_s => {
                return (st.requests_per_s, settled, true);
            }
            // The closed population cannot be served (its prompt budget overflows) and no rate
            // mode asks more: the users' demand is at least the pools' capacity.
            None if load.requests_per_s == 0.0 => {
                return (unit.capacity_requests_per_s(pools), None, true);
            }
            _ => {}
        }
    }
    let lambda = load.requests_per_s;
    let settled = steady(unit, speeds, pools, open, spread, p99_only);
    (lambda, settled.filter(|_| lambda > 0.0), false)
}

/// What `unit` in `pools` does under `load`: utilization, the steady state of the load (exact
/// when at most one wait is non-zero; the parts' percentiles are added, conservative in the tail
/// otherwise), the KV tiers that hold cached context between turns, and the verdicts. With
/// `p99_only`, the median and 95th-percentile latencies, the mean TTFT and the
/// exponential-length p99 are NaN (what the sizing search needs, at a third of the cost).
pub fn serve(
    unit: &Unit,
    speeds: &Speeds,
    pools: Pools,
    load: &Load,
    s: &Settings,
    tiers: &TierFacts,
    p99_only: bool,
) -> Served {
    let inst = &unit.inst;
    let (lambda, settled, closed) = settle(unit, speeds, pools, load, s, p99_only);
    let capacity = unit.capacity_requests_per_s(pools);
    let utilization = lambda / capacity;
    // Served on average: the demand's mean, less the share of its peak beyond capacity.
    let mean_requests_per_s = if closed {
        lambda
    } else {
        load.mean_requests_per_s
    };
    let served_requests_per_s = mean_requests_per_s * (capacity / lambda).min(1.0);

    let instances = f64::from(pools.decode + pools.prefill);
    let gpi = f64::from(inst.layout.gpus_per_instance);
    let offload = if s.cached_tokens > 0.0 && s.think_s > 0.0 {
        let session_bytes = super::memory::kv_bytes_per_sequence(
            &inst.ctx.model,
            1,
            f64::from(inst.ctx.model.layers),
            inst.rates.kv_bytes_per_element,
            s.cached_tokens,
        );
        let hbm_free = instances * gpi * (inst.usable_hbm_bytes - unit.memory.used_bytes);
        offload(
            lambda * s.think_s,
            session_bytes,
            hbm_free,
            instances * gpi * tiers.host_bytes_per_gpu,
            lambda,
            gpi,
            tiers,
        )
    } else {
        Offload::default()
    };

    let reload = |i: usize| offload.reload_quantile_s(PERCENTILES[i]);
    let steady = match settled {
        Some(mut st) => {
            for (i, t) in st.ttft_s.iter_mut().enumerate() {
                *t += reload(i);
            }
            st.ttft_p99_exponential_s += reload(P99);
            st.ttft_mean_s += offload.reload_mean_s();
            for (t, i) in st.e2e_s.iter_mut().zip(E2E) {
                *t += reload(i);
            }
            st.response_s += offload.reload_mean_s();
            st
        }
        None => unstable(lambda, speeds, unit),
    };
    // Users the pools serve at the target utilization, by Little's law over the user's cycle
    // with the operating load's response time: `u* capacity (R + Z)`.
    let users_supported =
        (capacity * s.target_utilization * (steady.response_s + s.think_s)).floor();
    Served {
        capacity_requests_per_s: capacity,
        mean_requests_per_s,
        served_requests_per_s,
        utilization,
        steady,
        offload,
        users_supported,
        demand_met: settled.is_some() && utilization <= s.target_utilization * (1.0 + 1e-12),
        meets_slo: s.slo.met(steady.ttft_s[P99], steady.tpot_p99_s),
    }
}

/// The steady state of a full instance, what a benchmark at the batch's concurrency measures:
/// each decode instance holds `batch` users who ask again as soon as they are answered (a
/// closed population without think time). Latencies are infinite when a queue cannot keep up
/// even so.
pub fn full_instance(unit: &Unit, speeds: &Speeds, pools: Pools, s: &Settings) -> Steady {
    let users = Arrivals::Closed {
        users: unit.batch * f64::from(pools.decode),
        think_s: 0.0,
    };
    steady(unit, speeds, pools, users, s.spread(), false).unwrap_or_else(|| Steady {
        held_per_instance: unit.batch,
        ..unstable(unit.capacity_requests_per_s(pools), speeds, unit)
    })
}

/// The steady state of pools whose queues cannot keep up at `requests_per_s`.
fn unstable(requests_per_s: f64, speeds: &Speeds, unit: &Unit) -> Steady {
    Steady {
        requests_per_s,
        ttft_s: [f64::INFINITY; 3],
        ttft_mean_s: f64::INFINITY,
        ttft_p99_exponential_s: f64::INFINITY,
        tpot_mean_s: speeds.tpot_s(unit.batch),
        tpot_p99_s: speeds.tpot_s(unit.batch),
        held_per_instance: f64::INFINITY,
        response_s: f64::INFINITY,
        e2e_s: [f64::INFINITY; 2],
        queue_wait_p99_s: f64::INFINITY,
    }
}

/// A lower bound on the utilization of `pools` under `load`, from a division: the rate modes'
/// exactly, and for a closed population the fewest requests its users can issue. An instance of
/// `N` users, each request served within `max(1, N / B) osl TPOT(B)` (every running sequence
/// advances at least at the full batch's pace, and at most `N - B` wait ahead of it), completes
/// at least `N / (Z + max(1, N / B) osl TPOT(B))` requests per second. Without a bound on the
/// prefill pool's wait, a disaggregated pool's users give none.
fn utilization_floor(unit: &Unit, speeds: &Speeds, pools: Pools, load: &Load, s: &Settings) -> f64 {
    let capacity = unit.capacity_requests_per_s(pools);
    let mut lambda = load.requests_per_s;
    if load.users > 0.0 && pools.prefill == 0 {
        let decode = f64::from(pools.decode);
        let n = load.users / decode;
        let b = speeds.max_batch;
        let full_s = speeds.output_tokens * speeds.tpot_s(b);
        lambda = lambda.max(decode * n / (s.think_s + (n / b).max(1.0) * full_s));
    }
    lambda / capacity
}

/// The fewest instances (at most `max_instances`) whose pools meet the demand and, when `slo`
/// is true, the SLOs, searched from `hint` (the answer of a similar configuration, e.g. the
/// previous batch) when there is one: two evaluations when the hint is right. Every criterion improves with more instances (more slots and servers, fewer
/// users or requests per instance, lower utilization and occupancy, more free HBM for cached
/// context). A division bounds the utilization from below, so the search first finds the fewest
/// instances that pass that bound, and evaluates the steady state only from there up: at that
/// count, usually, or a few above, the whole test passes. The KV tiers (which change only the
/// TTFT) are timed only when the SLOs are asked for. `Err` when `max_instances` are not enough.
#[allow(clippy::too_many_arguments)]
pub fn min_instances(
    unit: &Unit,
    speeds: &Speeds,
    load: &Load,
    s: &Settings,
    tiers: &TierFacts,
    max_instances: u32,
    slo: bool,
    hint: Option<u32>,
) -> Result<u32, TooMany> {
    let target = s.target_utilization * (1.0 + 1e-12);
    let bounded = |n: u32| {
        unit.pools(n)
            .is_ok_and(|pools| utilization_floor(unit, speeds, pools, load, s) <= target)
    };
    let served = |n: u32| {
        let Ok(pools) = unit.pools(n) else {
            return false;
        };
        if !slo {
            let (lambda, settled, _) = settle(unit, speeds, pools, load, s, true);
            return settled.is_some() && lambda / unit.capacity_requests_per_s(pools) <= target;
        }
        let served = serve(unit, speeds, pools, load, s, tiers, true);
        served.demand_met && served.meets_slo
    };
    let fewest = first_passing(1, max_instances, bounded).ok_or(TooMany)?;
    let hint = hint.or_else(|| fluid_guess(speeds, load, s));
    first_passing_near(fewest, hint, max_instances, served).ok_or(TooMany)
}

/// Where to start the search for a closed population without a hint: the instances at which
/// each runs at the target utilization, its users held for about an answer at that occupancy
/// (`osl TPOT(u* B)`) and thinking `Z` (Little's law over the cycle, without queueing). Only a
/// starting point: the search is exact from any.
fn fluid_guess(speeds: &Speeds, load: &Load, s: &Settings) -> Option<u32> {
    if load.users <= 0.0 {
        return None;
    }
    let u = s.target_utilization;
    let answer_s = speeds.output_tokens * speeds.tpot_s((u * speeds.max_batch).max(1.0));
    let users_per_instance = u * speeds.capacity_per_s() * (answer_s + s.think_s);
    let guess = (load.users / users_per_instance).ceil();
    (guess.is_finite() && guess >= 1.0 && guess < f64::from(u32::MAX)).then_some(guess as u32)
}

/// [`first_passing`] from a guess `hint`: if it passes, steps doubling down from it (`hint - 1`,
/// `hint - 3`, ...) to a failing count and bisects; if it fails, gallops up from it. Exact for
/// any hint; a good one costs two probes.
pub fn first_passing_near(
    from: u32,
    hint: Option<u32>,
    max: u32,
    ok: impl Fn(u32) -> bool,
) -> Option<u32> {
    let Some(guess) = hint.filter(|&h| h > from && h <= max) else {
        return first_passing(from, max, ok);
    };
    if !ok(guess) {
        return first_passing(guess + 1, max, ok);
    }
    let (mut hi, mut step) = (guess, 1u32); // `hi` passes
    let mut lo = loop {
        let n = guess.saturating_sub(step).max(from);
        if !ok(n) {
            break n;
        }
        hi = n;
        if n == from {
            return Some(from);
        }
        step = step.saturating_mul(2).saturating_add(1);
    };
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if ok(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

/// The smallest `n` in `from..=max` for which `ok` holds, given that `ok` holds for every count
/// above one that passes: `from`, then steps doubling away from it (`from + 1`, `from + 3`,
/// `from + 7`, ...), then bisection of the last step.
pub fn first_passing(from: u32, max: u32, ok: impl Fn(u32) -> bool) -> Option<u32> {
    if from > max {
        return None;
    }
    if ok(from) {
        return Some(from);
    }
    let (mut lo, mut step) = (from, 1u32); // `lo` fails
    let mut hi = loop {
        let n = from.saturating_add(step).min(max);
        if ok(n) {
            break n;
        }
        if n == max {
            return None;
        }
        lo = n;
        step = step.saturating_mul(2).saturating_add(1);
    };
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if ok(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

#[cfg(test)]
mod tests {
    use super::first_passing;

    proptest::proptest! {
        /// For every predicate that holds from some threshold on, the search returns the
        /// smallest passing count in range, as a scan from `from` does.
        #[test]
        fn first_passing_finds_the_threshold(
            from in 1u32..60,
            span in 0u32..300,
            threshold in 1u32..400,
        ) {
            let max = from + span;
            let (calls, outside) = (std::cell::Cell::new(0u32), std::cell::Cell::new(false));
            let got = first_passing(from, max, |n| {
                outside.set(outside.get() || !(from..=max).contains(&n));
                calls.set(calls.get() + 1);
                n >= threshold
            });
            let want = (from..=max).find(|&n| n >= threshold);
            proptest::prop_assert_eq!(got, want);
            proptest::prop_assert!(!outside.get(), "probed outside {}..={}", from, max);
            // Galloping then bisecting: about 2 log2(span) probes, never a scan.
            proptest::prop_assert!(calls.get() <= 2 * (32 - span.leading_zeros()) + 2);
        }
    }

    proptest::proptest! {
        /// From any hint, the search returns what a scan returns, and a right hint costs two
        /// probes.
        #[test]
        fn first_passing_near_finds_the_threshold(
            from in 1u32..60,
            span in 0u32..300,
            threshold in 1u32..400,
            hint in 0u32..400,
        ) {
            let max = from + span;
            let (calls, outside) = (std::cell::Cell::new(0u32), std::cell::Cell::new(false));
            let got = super::first_passing_near(from, Some(hint), max, |n| {
                outside.set(outside.get() || !(from..=max).contains(&n));
                calls.set(calls.get() + 1);
                n >= threshold
            });
            let want = (from..=max).find(|&n| n >= threshold);
            proptest::prop_assert_eq!(got, want);
            proptest::prop_assert!(!outside.get(), "probed outside {}..={}", from, max);
            if hint == threshold && hint > from && hint <= max {
                proptest::prop_assert_eq!(calls.get(), 2);
            }
        }
    }

    #[test]
    fn first_passing_of_an_empty_range_is_none() {
        assert_eq!(first_passing(5, 4, |_| true), None);
        assert_eq!(first_passing(7, 7, |_| true), Some(7));
        assert_eq!(first_passing(7, 7, |_| false), None);
    }
}
