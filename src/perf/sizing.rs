//! A pool of instances against a demand: utilization, queueing for a slot, first-token and
//! per-token latency percentiles at the operating load (the serving model of
//! [`super::serving`], the one `validate` uses), the SLO verdict, and the fewest instances that
//! meet the demand and the SLOs (a monotone search, not a scan). Formulas: docs/model.md,
//! "Sizing and queueing".

use super::demand::Load;
use super::kv_tiers::{Offload, TierFacts, offload};
use super::queue::Queue;
use super::serving::{self, P99, PERCENTILES, Speeds, Spread};
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

/// A pool serving a load.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Served {
    pub demand_requests_per_s: f64,
    pub capacity_requests_per_s: f64,
    /// Demand over capacity (the busier pool when disaggregated).
    pub utilization: f64,
    /// TTFT at [`PERCENTILES`] with the workload's length spreads, and the p99 with exponential
    /// lengths, seconds; infinite when a queue is unstable.
    pub ttft_s: [f64; 3],
    pub ttft_p99_mmc_s: f64,
    pub tpot_p99_s: f64,
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

/// Queueing latencies of the pools at `lambda` requests per second, before any KV reload.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Latencies {
    /// TTFT at [`PERCENTILES`], and the p99 with exponential lengths; only the first p99 when
    /// asked for the p99 alone.
    ttft_s: [f64; 3],
    ttft_p99_exponential_s: f64,
    tpot_p99_s: f64,
}

/// The pools' latencies at `lambda` (module docs of [`super::serving`]): each decode instance
/// takes `lambda / decode` requests per second. Aggregated, an instance's TTFT is the serving
/// model's (iteration boundary, prompt budget, slot, prompt under load). Disaggregated, a
/// request first queues for one of the prefill pool's attention ranks (G/G/c, held for the
/// rank's time per prompt at full throughput), is prefilled and its KV moved (the idle TTFT),
/// then waits for a decode slot. `None` when a queue cannot keep up.
fn latencies(
    unit: &Unit,
    speeds: &Speeds,
    pools: Pools,
    lambda: f64,
    spread: Spread,
    p99_only: bool,
) -> Option<Latencies> {
    let inst = unit.inst;
    let rate = lambda / f64::from(pools.decode);
    let first = if p99_only { P99 } else { 0 };
    let mut ttft_s = [f64::NAN; 3];
    if pools.prefill == 0 {
        let sv = serving::at_rate_with(inst, speeds, rate, spread)?;
        for (i, t) in ttft_s.iter_mut().enumerate().skip(first) {
            *t = if i == P99 {
                sv.ttft_p99_s
            } else {
                sv.ttft_s(inst, i)
            };
        }
        let ttft_p99_exponential_s = if p99_only {
            f64::NAN
        } else {
            sv.ttft_with(inst, P99, Spread::EXPONENTIAL)
        };
        return Some(Latencies {
            ttft_s,
            ttft_p99_exponential_s,
            tpot_p99_s: sv.tpot_p99_s,
        });
    }
    let occ = serving::occupancy(speeds, rate)?;
    let ranks = f64::from(pools.prefill) * f64::from(inst.layout.attention_dp);
    let service_s = f64::from(inst.layout.attention_dp) / unit.prefill_requests_per_s;
    let queue = |spread: Spread| {
        Queue::new(
            ranks,
            lambda * service_s,
            service_s,
            (1.0 + spread.prompt_cv2) / 2.0,
        )
    };
    let prefill = queue(spread);
    if !prefill.is_stable() {
        return None;
    }
    let ttft = |p: f64, q: &Queue, v: f64| {
        unit.ttft_idle_s + q.wait_quantile_s(p) + occ.wait_quantile_s(p, v)
    };
    for (i, t) in ttft_s.iter_mut().enumerate().skip(first) {
        *t = ttft(PERCENTILES[i], &prefill, spread.slot_variability);
    }
    let ttft_p99_exponential_s = if p99_only {
        f64::NAN
    } else {
        ttft(PERCENTILES[P99], &queue(Spread::EXPONENTIAL), 1.0)
    };
    Some(Latencies {
        ttft_s,
        ttft_p99_exponential_s,
        tpot_p99_s: speeds.tpot_s(occ.running[P99]),
    })
}

/// A user's cycle through an answer (`osl` tokens at the full batch's TPOT) and a think time,
/// from which the peak arrival rate into `unit`'s pools follows.
fn cycle_s(unit: &Unit, s: &Settings) -> f64 {
    unit.inst.output_tokens * unit.decode.tpot_s + s.think_s
}

/// What `unit` in `pools` does under `load`: utilization, the serving model's latencies at the
/// load (exact when at most one wait is non-zero; the parts' percentiles are added, conservative
/// in the tail otherwise), the KV tiers that hold cached context between turns, and the verdicts.
/// With `p99_only`, the p50 and p95 TTFT and the exponential-length p99 are NaN (what the sizing
/// search needs, at a third of the cost).
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
    let cycle_s = cycle_s(unit, s);
    let lambda = load.peak_requests_per_s(cycle_s);
    let capacity = unit.capacity_requests_per_s(pools);
    let utilization = lambda / capacity;

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

    let queued = latencies(unit, speeds, pools, lambda, s.spread(), p99_only);
    let reload = |i: usize| offload.reload_quantile_s(PERCENTILES[i]);
    let ttft_s = match &queued {
        Some(l) => [0, 1, 2].map(|i| l.ttft_s[i] + reload(i)),
        None => [f64::INFINITY; 3],
    };
    let ttft_p99_mmc_s = queued.map_or(f64::INFINITY, |l| l.ttft_p99_exponential_s + reload(P99));
    let tpot_p99_s = queued.map_or(speeds.tpot_s(unit.batch), |l| l.tpot_p99_s);
    Served {
        demand_requests_per_s: lambda,
        capacity_requests_per_s: capacity,
        utilization,
        ttft_s,
        ttft_p99_mmc_s,
        tpot_p99_s,
        offload,
        users_supported: (capacity * s.target_utilization * cycle_s).floor(),
        demand_met: queued.is_some() && utilization <= s.target_utilization * (1.0 + 1e-12),
        meets_slo: s.slo.met(ttft_s[P99], tpot_p99_s),
    }
}

/// The fewest instances (at most `max_instances`) whose pools meet the demand and, when `slo`
/// is true, the SLOs. Every criterion improves with more instances (more slots and servers, lower
/// utilization and occupancy, more free HBM for cached context). The utilization test is cheap,
/// so the search first finds the fewest instances that pass it, and times latencies only from
/// there up: at that count, usually, the latencies pass too, and the search ends after one
/// timing. The KV tiers (which change only the TTFT) are timed only when the SLOs are asked
/// for. `Err` when `max_instances` are not enough.
pub fn min_instances(
    unit: &Unit,
    speeds: &Speeds,
    load: &Load,
    s: &Settings,
    tiers: &TierFacts,
    max_instances: u32,
    slo: bool,
) -> Result<u32, TooMany> {
    let lambda = load.peak_requests_per_s(cycle_s(unit, s));
    let utilized = |n: u32| {
        unit.pools(n).is_ok_and(|pools| {
            lambda / unit.capacity_requests_per_s(pools) <= s.target_utilization * (1.0 + 1e-12)
        })
    };
    let served = |n: u32| {
        let Ok(pools) = unit.pools(n) else {
            return false;
        };
        if !slo {
            return latencies(unit, speeds, pools, lambda, s.spread(), true).is_some();
        }
        let served = serve(unit, speeds, pools, load, s, tiers, true);
        served.demand_met && served.meets_slo
    };
    let fewest = first_passing(1, max_instances, utilized).ok_or(TooMany)?;
    first_passing(fewest, max_instances, |n| utilized(n) && served(n)).ok_or(TooMany)
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

    #[test]
    fn first_passing_of_an_empty_range_is_none() {
        assert_eq!(first_passing(5, 4, |_| true), None);
        assert_eq!(first_passing(7, 7, |_| true), Some(7));
        assert_eq!(first_passing(7, 7, |_| false), None);
    }
}
