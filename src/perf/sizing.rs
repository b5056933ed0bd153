//! A pool of instances against a demand: utilization, queueing for a slot, first-token and
//! per-token latency percentiles at the operating load, the SLO verdict, and the fewest instances
//! that meet the demand and the SLOs (a monotone search, not a scan). Formulas: docs/model.md,
//! "Sizing and queueing".

use super::demand::Load;
use super::kv_tiers::{Offload, TierFacts, offload};
use super::queue::{Queue, poisson_quantile};
use super::unit::{Pools, Unit};

/// Percentiles of the first-token latency columns.
pub const PERCENTILES: [f64; 3] = [0.5, 0.95, 0.99];

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
    /// TTFT at [`PERCENTILES`] with G/G/c queueing, and the p99 with M/M/c, seconds.
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

/// What `unit` in `pools` does under `load`.
///
/// Requests queue for a slot: aggregated, one of the `decode x batch` sequence slots, each held
/// for the request's decode lifetime `osl x TPOT` (prefill is folded into the decode steps);
/// disaggregated, first one of the prefill pool's attention ranks (held for the rank's time per
/// prompt at full throughput), then a decode slot. TTFT = idle prefill (plus the KV transfer) +
/// the waits + the KV reload of a resumed session. The parts' percentiles are added: exact when
/// at most one part is non-zero, conservative in the tail otherwise (not a bound at every
/// percentile: two rare waits can both have a zero median while their sum does not).
pub fn serve(unit: &Unit, pools: Pools, load: &Load, s: &Settings, tiers: &TierFacts) -> Served {
    let inst = &unit.inst;
    let osl = inst.output_tokens;
    let tpot_s = unit.decode.tpot_s;
    let cycle_s = osl * tpot_s + s.think_s;
    let lambda = load.peak_requests_per_s(cycle_s);
    let capacity = unit.capacity_requests_per_s(pools);
    let utilization = lambda / capacity;

    let lifetime_s = osl * tpot_s;
    let slots = f64::from(pools.decode) * unit.batch;
    let decode = Queue::new(slots, lambda * lifetime_s, lifetime_s, s.decode_variability);
    let prefill = (pools.prefill > 0).then(|| {
        let ranks = f64::from(pools.prefill) * f64::from(inst.layout.attention_dp);
        let service_s = f64::from(inst.layout.attention_dp) / unit.prefill_requests_per_s;
        Queue::new(ranks, lambda * service_s, service_s, s.prefill_variability)
    });
    let wait = |q: &Queue, p: f64, mmc: bool| {
        if mmc {
            Queue {
                variability: 1.0,
                ..*q
            }
            .wait_quantile_s(p)
        } else {
            q.wait_quantile_s(p)
        }
    };
    let waits =
        |p: f64, mmc: bool| wait(&decode, p, mmc) + prefill.map_or(0.0, |q| wait(&q, p, mmc));

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

    let ttft_s =
        PERCENTILES.map(|p| unit.ttft_idle_s + waits(p, false) + offload.reload_quantile_s(p));
    let ttft_p99_mmc_s = unit.ttft_idle_s + waits(0.99, true) + offload.reload_quantile_s(0.99);

    // Running sequences per decode instance fluctuate like Poisson around their mean
    // (M/G/infinity below the slot limit); the p99 TPOT is the step at the p99 occupancy.
    let mean_running = (lambda * lifetime_s / f64::from(pools.decode)).min(unit.batch);
    let running_p99 = poisson_quantile(mean_running, 0.99).clamp(1.0, unit.batch);
    let tpot_p99_s = inst.decode(running_p99).tpot_s;

    let stable = decode.is_stable() && prefill.is_none_or(|q| q.is_stable());
    Served {
        demand_requests_per_s: lambda,
        capacity_requests_per_s: capacity,
        utilization,
        ttft_s,
        ttft_p99_mmc_s,
        tpot_p99_s,
        offload,
        users_supported: (capacity * s.target_utilization * cycle_s).floor(),
        demand_met: stable && utilization <= s.target_utilization * (1.0 + 1e-12),
        meets_slo: s.slo.met(ttft_s[2], tpot_p99_s),
    }
}

/// The fewest instances (at most `max_instances`) whose pools meet the demand and, when `slo`
/// is true, the SLOs. Every criterion improves with more instances (more slots and servers, lower
/// utilization and occupancy, more free HBM for cached context), so the smallest count is found
/// by doubling and bisection. `Err` when `max_instances` are not enough.
pub fn min_instances(
    unit: &Unit,
    load: &Load,
    s: &Settings,
    tiers: &TierFacts,
    max_instances: u32,
    slo: bool,
) -> Result<u32, TooMany> {
    let ok = |n: u32| match unit.pools(n) {
        Ok(pools) => {
            let served = serve(unit, pools, load, s, tiers);
            served.demand_met && (!slo || served.meets_slo)
        }
        Err(_) => false,
    };
    let mut hi = 1u32;
    while !ok(hi) {
        if hi >= max_instances {
            return Err(TooMany);
        }
        hi = hi.saturating_mul(2).min(max_instances);
    }
    let mut lo = hi / 2; // fails (or is 0)
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if ok(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(hi)
}
