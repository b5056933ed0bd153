//! A pool of instances against a demand: utilization, queueing for a slot, first-token and
//! per-token latency percentiles at the operating load (the serving model of
//! [`super::serving`], the one `validate` uses), the SLO verdict, and the fewest instances that
//! meet the demand and the SLOs (a monotone search, not a scan). Formulas: docs/model.md,
//! "Sizing and queueing".

use super::adp_balance::AdpBalance;
use super::batched::{BatchedInstance, Pools};
use super::demand::Load;
use super::kv_tiers::{Offload, TierFacts, offload};
use super::serving::{P99, PERCENTILES, Speeds, Spread};
use super::steady::{Arrivals, E2E, Steady, steady, unstable};

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
    /// Measured prompts at `serving::PROMPT_PERCENTILES` over their mean
    /// (`Spread::prompt_quantiles`): set by `validate` for datasets measured sample by sample;
    /// sweeps take gamma lengths.
    pub prompt_quantiles: Option<[f64; 5]>,
    /// TensorRT-LLM's attention-DP balance ([`super::adp_balance`]): set by `validate` for the
    /// submissions whose config enables it; sweeps run without it (TensorRT-LLM's default).
    pub adp_balance: Option<AdpBalance>,
    /// Decode iterations per scheduler call (vLLM V0's multi-step scheduling,
    /// `num_scheduler_steps`): a new prompt waits for the round in progress
    /// (`serving::Serving::ttft_with`). Set by `validate` for the submissions whose config runs
    /// it; sweeps schedule every iteration (1), as current engines do.
    pub scheduler_steps: u32,
}

impl Settings {
    /// The workload's spreads (`input_tokens_cv`, `output_tokens_cv`) as the serving model's
    /// queues take them.
    pub fn spread(&self) -> Spread {
        Spread {
            prompt_cv2: (2.0 * self.prefill_variability - 1.0).max(0.0),
            slot_variability: self.decode_variability,
            prompt_quantiles: self.prompt_quantiles,
        }
    }
}

/// Squared coefficient of variation to the Allen-Cunneen variability with Poisson arrivals.
pub fn variability(cv: f64) -> f64 {
    (1.0 + cv * cv) / 2.0
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

/// The decode speeds of `batched`'s instance for the serving model: its batch's step is the one
/// `batched` timed.
pub fn speeds(batched: &BatchedInstance) -> Speeds {
    Speeds::from_full(batched.inst, &batched.decode, batched.batch)
}

/// What a load asks of `pools`: the closed population of its users, or the open stream of its
/// rate modes, whichever is the heavier (when a sweep sets both, the strictest wins). The
/// steady state comes with it, `None` when a queue cannot keep up. Also says whether the users
/// set the load.
fn settle(
    batched: &BatchedInstance,
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
        let settled = steady(batched, speeds, pools, closed, spread, p99_only);
        match settled {
            Some(st) if st.requests_per_s >= load.requests_per_s => {
                return (st.requests_per_s, settled, true);
            }
            // The closed population cannot be served (its prompt budget overflows) and no rate
            // mode asks more: the users' demand is at least the pools' capacity.
            None if load.requests_per_s == 0.0 => {
                return (batched.capacity_requests_per_s(pools), None, true);
            }
            _ => {}
        }
    }
    let lambda = load.requests_per_s;
    let settled = steady(batched, speeds, pools, open, spread, p99_only);
    (lambda, settled.filter(|_| lambda > 0.0), false)
}

/// What `batched` in `pools` does under `load`: utilization, the steady state of the load (exact
/// when at most one wait is non-zero; the parts' percentiles are added, conservative in the tail
/// otherwise), the KV tiers that hold cached context between turns, and the verdicts. With
/// `p99_only`, the median and 95th-percentile latencies, the mean TTFT and the
/// exponential-length p99 are NaN (what the sizing search needs, at a third of the cost).
pub fn serve(
    batched: &BatchedInstance,
    speeds: &Speeds,
    pools: Pools,
    load: &Load,
    s: &Settings,
    tiers: &TierFacts,
    p99_only: bool,
) -> Served {
    let inst = &batched.inst;
    let (lambda, settled, closed) = settle(batched, speeds, pools, load, s, p99_only);
    let capacity = batched.capacity_requests_per_s(pools);
    let utilization = lambda / capacity;
    // Served on average: the demand's mean, less the share of its peak beyond capacity.
    let mean_requests_per_s = if closed {
        lambda
    } else {
        load.mean_requests_per_s
    };
    let served_requests_per_s = mean_requests_per_s * (capacity / lambda).min(1.0);

    let (decode_gpus, prefill_gpus) = batched.pool_gpus(pools);
    let gpus = f64::from(decode_gpus + prefill_gpus);
    let offload = if s.cached_tokens > 0.0 && s.think_s > 0.0 {
        let session_bytes = super::memory::kv_bytes_per_sequence(
            &inst.ctx.model,
            1,
            f64::from(inst.ctx.model.layers),
            inst.rates.kv_bytes_per_element,
            s.cached_tokens,
        );
        let hbm_free = gpus * (batched.memory.kv_capacity_bytes - batched.memory.kv_bytes).max(0.0);
        offload(
            lambda * s.think_s,
            session_bytes,
            hbm_free,
            gpus * tiers.host_bytes_per_gpu,
            lambda,
            f64::from(inst.layout.gpus_per_instance),
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
        None => unstable(lambda, speeds, batched),
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

/// A lower bound on the utilization of `pools` under `load`, from a division: the rate modes'
/// exactly, and for a closed population the fewest requests its users can issue. An instance of
/// `N` users, each request served within `max(1, N / B) osl TPOT(B)` (every running sequence
/// advances at least at the full batch's pace, and at most `N - B` wait ahead of it), completes
/// at least `N / (Z + max(1, N / B) osl TPOT(B))` requests per second. Without a bound on the
/// prefill pool's wait, a disaggregated pool's users give none.
fn utilization_floor(
    batched: &BatchedInstance,
    speeds: &Speeds,
    pools: Pools,
    load: &Load,
    s: &Settings,
) -> f64 {
    let capacity = batched.capacity_requests_per_s(pools);
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
#[expect(
    clippy::too_many_arguments,
    reason = "the search's inputs, resolved once per placement by `cluster`; a struct of them would only be built to be taken apart"
)]
pub fn min_instances(
    batched: &BatchedInstance,
    speeds: &Speeds,
    load: &Load,
    s: &Settings,
    tiers: &TierFacts,
    max_instances: u32,
    slo: bool,
    hint: Option<u32>,
) -> Result<u32, TooMany> {
    let target = target_utilization(s);
    let bounded = |n: u32| {
        batched
            .pools(n)
            .is_ok_and(|pools| utilization_floor(batched, speeds, pools, load, s) <= target)
    };
    let served = |n: u32| serves(batched, speeds, n, load, s, tiers, slo);
    let fewest = first_passing(1, max_instances, bounded).ok_or(TooMany)?;
    let hint = hint.or_else(|| fluid_guess(speeds, load, s));
    let found = first_passing_near(fewest, hint, max_instances, served).ok_or(TooMany)?;
    Ok(fewer_in_lower_prefill_levels(
        batched, load, fewest, found, served,
    ))
}

/// Whether `instances` instances of `batched` meet the demand and, when `slo` is true, the
/// SLOs: the test [`min_instances`] searches with.
pub fn serves(
    batched: &BatchedInstance,
    speeds: &Speeds,
    instances: u32,
    load: &Load,
    s: &Settings,
    tiers: &TierFacts,
    slo: bool,
) -> bool {
    let Ok(pools) = batched.pools(instances) else {
        return false;
    };
    if !slo {
        let (lambda, settled, _) = settle(batched, speeds, pools, load, s, true);
        let utilization = lambda / batched.capacity_requests_per_s(pools);
        return settled.is_some() && utilization <= target_utilization(s);
    }
    let served = serve(batched, speeds, pools, load, s, tiers, true);
    served.demand_met && served.meets_slo
}

/// The utilization a sized count may reach: the target, with a relative 1e-12 for rounding.
fn target_utilization(s: &Settings) -> f64 {
    s.target_utilization * (1.0 + 1e-12)
}

/// Prefill levels below a passing count that [`min_instances`] searches again.
const LOWER_PREFILL_LEVELS: u32 = 2;

/// A closed population on disaggregated pools breaks the rule that more instances never hurt:
/// a count that adds a decode instance and keeps the prefill pool (`Pools` splits the count by
/// the prefill share, so counts come in levels of one prefill count) lets the users cycle
/// faster, which raises their request rate against the same prefill capacity. The counts that
/// pass then form a run at the start of each level, and a level can fail above one that
/// passes: llama-3.1-70b on H200 with a quarter of the instances prefilling on B200, 3,000
/// users, passes at 138 and 139 instances (35 prefilling), fails at 140 and 141 (prefill
/// utilization 0.7501 against a 0.75 target), and passes again from 142 (36 prefilling). So
/// below `found`, the counts of the [`LOWER_PREFILL_LEVELS`] prefill levels under it (and not
/// below the utilization bound `fewest`) are tried too, and the smallest that passes is
/// returned. Within a level, more decode instances help the decode side and hurt the prefill
/// side, so a level's passing counts are one run; a level with fewer prefill instances has
/// the prefill side worse at every decode count, so once a level has no run, none below it
/// has: one level below suffices when those sides are the whole test, and the second is
/// margin for the slot and SLO terms that couple them. Open arrivals and aggregated pools
/// keep the rule, and skip this.
fn fewer_in_lower_prefill_levels(
    batched: &BatchedInstance,
    load: &Load,
    fewest: u32,
    found: u32,
    served: impl Fn(u32) -> bool,
) -> u32 {
    if !more_can_fail(batched, load) {
        return found;
    }
    let level = |n: u32| batched.pools(n).map_or(0, |p| p.prefill);
    let floor = level(found).saturating_sub(LOWER_PREFILL_LEVELS);
    let mut best = found;
    let mut n = found;
    while n > fewest && level(n - 1) >= floor.max(1) {
        n -= 1;
        if served(n) {
            best = n;
        }
    }
    best
}

/// Whether more instances of `batched` can fail a load that fewer serve: a closed population
/// on disaggregated pools ([`fewer_in_lower_prefill_levels`]). Open arrivals and aggregated
/// pools only gain from more.
pub fn more_can_fail(batched: &BatchedInstance, load: &Load) -> bool {
    load.users > 0.0 && batched.inst.disagg_prefill_pct != 0
}

/// A count past which more instances of `batched` only help a load that `instances` serve:
/// the prefill pool has grown by [`LOWER_PREFILL_LEVELS`] instances (a level spans
/// `ceil(100 / pct)` counts), and a level's failing counts lie at its top
/// ([`fewer_in_lower_prefill_levels`]).
pub fn past_failing_levels(batched: &BatchedInstance, instances: u32) -> u32 {
    let span = 100u32.div_ceil(batched.inst.disagg_prefill_pct.max(1));
    instances.saturating_add(LOWER_PREFILL_LEVELS * span)
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
