//! A whole cluster: places a configuration on its racks (or, with `racks = "auto"`, on the
//! fewest racks that meet the demand and the SLOs), serves each schedule phase's load, and adds
//! power and cost. `evaluate` is the engine's entry point; it is pure and allocation-free.
//! Formulas: docs/model.md, "Sizing and queueing", "Power", "Cost".

use crate::catalog::Rack;
use crate::grid::Point;

use super::cost::{self, Footprint, HOURS_PER_MONTH, HOURS_PER_YEAR, Ownership};
use super::serving::Speeds;
use super::sizing::{self, Served};
use super::unit::Unit;
use super::{Context, Estimate, Instance, Reason, instance_serving};

/// `racks` value that asks for automatic sizing.
pub const AUTO_RACKS: u32 = 0;

/// Racks beyond which automatic sizing gives up (100,000 racks of 72 GPUs is 7.2 million GPUs,
/// several gigawatts: no single deployment plans beyond it).
pub const MAX_AUTO_RACKS: u32 = 100_000;

/// The instances (one per schedule phase) of the last placement evaluated, and the last point's
/// estimate before pricing. Consecutive grid points mostly differ only in batch or ownership,
/// the fastest axes: batch does not change the placement, its bounding stages or its rates, and
/// ownership changes only the price. The engine keeps one of these per worker so that each
/// placement is resolved once and each point's performance, sizing and power once for all
/// ownership models.
#[derive(Debug, Default)]
pub struct Placements<'a> {
    /// The point with batch and ownership cleared.
    key: Option<Point>,
    phases: Vec<Result<Instance<'a>, Estimate>>,
    /// The last point with ownership cleared, its racks, and its unpriced estimate.
    unpriced: Option<(Point, u32, Result<Unpriced, Estimate>)>,
    /// Decode speeds per phase that automatic sizing timed, and the point (ownership cleared,
    /// at the rack count it chose) whose instances run at them.
    timed: Timed,
}

/// Decode speeds of each phase's instance, valid for one point.
#[derive(Debug, Default)]
struct Timed {
    point: Option<Point>,
    speeds: Vec<Speeds>,
}

impl Timed {
    /// The speeds of phase `i` if they were timed for `p`.
    fn for_point(&self, p: &Point, i: usize) -> Option<&Speeds> {
        let timed_for_p = self.point == Some(Point { ownership: 0, ..*p });
        self.speeds.get(i).filter(|_| timed_for_p)
    }
}

impl<'a> Placements<'a> {
    /// The instance of every phase for `p`'s placement, and beside them the speeds automatic
    /// sizing timed.
    #[inline]
    fn get(
        &mut self,
        ctx: &'a Context,
        p: &Point,
    ) -> (&[Result<Instance<'a>, Estimate>], &mut Timed) {
        let key = Point {
            batch: 0,
            ownership: 0,
            ..*p
        };
        if self.key != Some(key) {
            self.phases.clear();
            self.phases.extend(
                ctx.phases
                    .iter()
                    .map(|ph| instance_serving(ctx, p, ph.input_tokens, ph.output_tokens)),
            );
            self.key = Some(key);
        }
        (&self.phases, &mut self.timed)
    }
}

/// Predicts one configuration: performance, sizing, power and cost.
pub fn evaluate(ctx: &Context, p: &Point) -> Estimate {
    evaluate_with(ctx, p, &mut Placements::default())
}

/// [`evaluate`], reusing the placement of the previous point where it is the same.
pub fn evaluate_with<'a>(ctx: &'a Context, p: &Point, placements: &mut Placements<'a>) -> Estimate {
    let mut e = Estimate::EMPTY;
    evaluate_into(ctx, p, placements, &mut e);
    e
}

/// [`evaluate_with`] into `out`: the estimate is written once, where the caller keeps it
/// (returning it by value copied its 320 bytes several times on the way).
pub fn evaluate_into<'a>(
    ctx: &'a Context,
    p: &Point,
    placements: &mut Placements<'a>,
    out: &mut Estimate,
) {
    // With one ownership model there is nothing to reuse, and keeping a copy would cost.
    let reuse = ctx.plan.ownership.len() > 1;
    let key = Point { ownership: 0, ..*p };
    let (racks, unpriced) = match &placements.unpriced {
        Some((k, racks, unpriced)) if reuse && *k == key => (*racks, *unpriced),
        _ => {
            let sized = if p.racks == AUTO_RACKS {
                auto_racks(ctx, p, placements)
            } else {
                Ok(p.racks)
            };
            let (racks, unpriced) = match sized {
                Ok(racks) => (racks, at_racks(ctx, &Point { racks, ..*p }, placements)),
                Err(e) => (e.racks, Err(e)),
            };
            if reuse {
                placements.unpriced = Some((key, racks, unpriced));
            }
            (racks, unpriced)
        }
    };
    match unpriced {
        Ok(u) => {
            *out = u.estimate;
            u.price(ctx, p, out);
        }
        Err(e) => *out = e,
    }
    out.racks = racks;
}

/// Racks that hold `instances` instances of `stage_gpus x pp` GPUs, packed as
/// [`super::layout::place`] packs them: stages into scale-up domains, domains into racks.
pub fn racks_for(rack: &Rack, stage_gpus: u32, pp: u32, instances: u32) -> u64 {
    let domain = u64::from(rack.scaleup_domain_gpus);
    let domains_per_rack = u64::from(rack.gpus_per_rack()) / domain;
    let stages = u64::from(instances) * u64::from(pp);
    let stage = u64::from(stage_gpus);
    let domains = if stage <= domain {
        stages.div_ceil(domain / stage)
    } else {
        stages * (stage / domain)
    };
    domains.div_ceil(domains_per_rack).max(1)
}

/// The fewest racks whose instances meet every phase's demand and the SLOs (or, when no count
/// meets the SLOs, the demand alone: the row then says `meets_slo = false`).
fn auto_racks<'a>(
    ctx: &'a Context,
    p: &Point,
    placements: &mut Placements<'a>,
) -> Result<u32, Estimate> {
    let platform = &ctx.platforms[p.platform as usize];
    let rack = &platform.rack;
    let stage_gpus = p.tp.max(p.ep);
    let mut racks = u32::try_from(racks_for(rack, stage_gpus, p.pp, 1))
        .ok()
        .filter(|&r| r <= MAX_AUTO_RACKS)
        .ok_or(Estimate::infeasible(Reason::InstanceExceedsCluster, 0))?;
    // Per-instance speed can only fall as the cluster grows (more pipelines straddle scale-up
    // domains), so the count only rises; two rounds settle it in practice, four bound it.
    for _ in 0..4 {
        let q = Point { racks, ..*p };
        let mut needed = 0u64;
        let mut layout = None;
        let (phases, timed) = placements.get(ctx, &q);
        timed.point = None;
        timed.speeds.clear();
        for (phase, inst) in ctx.phases.iter().zip(phases) {
            let inst = inst.as_ref().map_err(|e| *e)?;
            let unit = Unit::new(inst, p.batch)?;
            let l = inst.layout;
            layout = Some(l);
            let max_instances = (u64::from(MAX_AUTO_RACKS) * u64::from(rack.gpus_per_rack())
                / u64::from(l.gpus_per_instance)) as u32;
            let s = &ctx.plan.settings;
            timed.speeds.push(sizing::speeds(&unit));
            let speeds = timed.speeds.last().expect("just pushed");
            let instances = sizing::min_instances(
                &unit,
                speeds,
                &phase.load,
                s,
                &platform.tiers,
                max_instances,
                s.slo.is_set(),
            )
            .or_else(|_| {
                let tiers = &platform.tiers;
                sizing::min_instances(&unit, speeds, &phase.load, s, tiers, max_instances, false)
            })
            .map_err(|_| Estimate::with_layout(Reason::DemandExceedsMaxRacks, &l))?;
            needed = needed.max(racks_for(rack, l.stage_gpus, l.pp, instances));
        }
        let needed = u32::try_from(needed)
            .ok()
            .filter(|&r| r <= MAX_AUTO_RACKS)
            .ok_or_else(|| Estimate::infeasible(Reason::DemandExceedsMaxRacks, 0))?;
        let same_speed = layout.is_some_and(|l| {
            super::layout::place(&ctx.model.layout_model, rack, needed, p.tp, p.pp, p.ep)
                .is_ok_and(|big| big.pp_hops_scaleout == l.pp_hops_scaleout)
        });
        if same_speed || needed == racks {
            // The instances at `needed` racks decode at the speeds just timed.
            timed.point = Some(Point {
                racks: needed,
                ownership: 0,
                ..*p
            });
            return Ok(needed);
        }
        racks = needed;
    }
    Ok(racks)
}

/// Running sums over the schedule's phases, weighted by their share of time.
#[derive(Default)]
struct Sums {
    ttft_ms: f64,
    tpot_ms: f64,
    tokens_per_s_per_user: f64,
    tokens_per_s_per_instance: f64,
    tokens_per_s_per_gpu: f64,
    output_tokens_per_s: f64,
    compute_bound: f64,
    hbm_bound: f64,
    comm_bound: f64,
    served_tokens_per_s: f64,
    it_kw: f64,
    ttft_p: [f64; 3],
    ttft_p99_mmc_ms: f64,
    tpot_p99_ms: f64,
    kv_host_gb: f64,
    kv_storage_gb: f64,
    kv_reload_ms: f64,
    demand_requests_per_s: f64,
    api_usd_per_hour: f64,
    active_ratio: f64,
}

/// A point's estimate before its ownership model prices it, and what the pricing needs.
#[derive(Debug, Clone, Copy)]
struct Unpriced {
    estimate: Estimate,
    footprint: Footprint,
    /// Tokens per second the cluster serves (the demand, or its capacity without one).
    served_tokens_per_s: f64,
    /// Share of time the demand is active, weighted over the phases.
    active_ratio: f64,
}

impl Unpriced {
    /// Sets `out`'s costs to those of `p`'s ownership model.
    fn price(&self, ctx: &Context, p: &Point, out: &mut Estimate) {
        let plan = &ctx.plan;
        let prices = &ctx.platforms[p.platform as usize].prices;
        let ownership = plan.ownership[p.ownership as usize];
        let econ = &plan.economics;
        let usd_per_hour = cost::usd_per_hour(ownership, &self.footprint, prices, econ);
        out.usd_per_hour = usd_per_hour;
        out.usd_per_month = usd_per_hour * HOURS_PER_MONTH;
        out.usd_per_mtok = cost::per_mtok(usd_per_hour, self.served_tokens_per_s);
        out.tco_usd = usd_per_hour * HOURS_PER_YEAR * econ.years;
        out.usd_per_month_autoscaling = if plan.demand && ownership == Ownership::Cloud {
            usd_per_hour * HOURS_PER_MONTH * self.active_ratio
        } else {
            f64::NAN
        };
    }
}

/// The cluster on `p.racks` racks, every phase served; everything but the price.
fn at_racks<'a>(
    ctx: &'a Context,
    p: &Point,
    placements: &mut Placements<'a>,
) -> Result<Unpriced, Estimate> {
    let platform = &ctx.platforms[p.platform as usize];
    let plan = &ctx.plan;
    let power = &platform.power;
    let mut sums = Sums::default();
    let mut first: Option<Estimate> = None;
    let (mut utilization, mut users_supported) = (0.0_f64, f64::INFINITY);
    let (mut demand_met, mut meets_slo) = (true, true);
    let mut storage_servers = 0.0_f64;
    let (phases, timed) = placements.get(ctx, p);
    for (i, (phase, inst)) in ctx.phases.iter().zip(phases).enumerate() {
        let inst = inst.as_ref().map_err(|e| *e)?;
        let l = inst.layout;
        if power.over_budget(1.0) {
            return Err(Estimate::with_layout(Reason::RackPowerOverBudget, &l));
        }
        let unit = Unit::new(inst, p.batch)?;
        let e = unit.estimate(l.instances, l.gpus);
        if !e.feasible() {
            return Err(e);
        }
        let pools = unit
            .pools(l.instances)
            .map_err(|r| Estimate::with_layout(r, &l))?;
        let w = phase.weight;
        let active_gpus = f64::from(l.instances * l.gpus_per_instance);
        let served: Option<Served> = plan.demand.then(|| {
            let fresh;
            let speeds = match timed.for_point(p, i) {
                Some(speeds) => speeds,
                None => {
                    fresh = sizing::speeds(&unit);
                    &fresh
                }
            };
            sizing::serve(
                &unit,
                speeds,
                pools,
                &phase.load,
                &plan.settings,
                &platform.tiers,
                false,
            )
        });
        let (activity, served_tokens_per_s) = match &served {
            Some(s) => (
                s.utilization.min(1.0),
                s.demand_requests_per_s.min(s.capacity_requests_per_s) * inst.output_tokens,
            ),
            None => (1.0, e.output_tokens_per_s),
        };
        let (ttft_p, ttft_p99_mmc_s, tpot_p99_s) = match &served {
            Some(s) => (s.ttft_s, s.ttft_p99_mmc_s, s.tpot_p99_s),
            // No demand, no queue: the idle first token and the full-batch step.
            None => ([unit.ttft_idle_s; 3], unit.ttft_idle_s, unit.decode.tpot_s),
        };
        if let Some(s) = &served {
            utilization = utilization.max(s.utilization);
            users_supported = users_supported.min(s.users_supported);
            demand_met &= s.demand_met;
            storage_servers = storage_servers.max(s.offload.storage_servers);
            sums.kv_host_gb += w * s.offload.host_bytes / 1e9;
            sums.kv_storage_gb += w * s.offload.storage_bytes / 1e9;
            sums.kv_reload_ms += w * s.offload.reload_mean_s() * 1e3;
            sums.demand_requests_per_s += w * s.demand_requests_per_s;
            let mean_rps = phase.load.mean_requests_per_s(
                inst.output_tokens * unit.decode.tpot_s + plan.settings.think_s,
            );
            if let Some((usd_in, usd_out)) = plan.api_usd_per_mtok {
                sums.api_usd_per_hour += w
                    * mean_rps
                    * 3600.0
                    * (inst.input_tokens * usd_in + inst.output_tokens * usd_out)
                    / 1e6;
            }
            sums.active_ratio += w * phase.load.active_ratio;
        }
        meets_slo &= plan.settings.slo.met(ttft_p[2], tpot_p99_s);
        sums.ttft_ms += w * e.ttft_ms;
        sums.tpot_ms += w * e.tpot_ms;
        sums.tokens_per_s_per_user += w * e.tokens_per_s_per_user;
        sums.tokens_per_s_per_instance += w * e.tokens_per_s_per_instance;
        sums.tokens_per_s_per_gpu += w * e.tokens_per_s_per_gpu;
        sums.output_tokens_per_s += w * e.output_tokens_per_s;
        sums.compute_bound += w * e.compute_bound_tokens_per_s_per_gpu;
        sums.hbm_bound += w * e.hbm_bound_tokens_per_s_per_gpu;
        sums.comm_bound += w * e.comm_bound_tokens_per_s_per_gpu;
        sums.served_tokens_per_s += w * served_tokens_per_s;
        sums.it_kw += w * power.cluster_kw(f64::from(p.racks), active_gpus, activity);
        for (sum, t) in sums.ttft_p.iter_mut().zip(ttft_p) {
            *sum += w * t * 1e3;
        }
        sums.ttft_p99_mmc_ms += w * ttft_p99_mmc_s * 1e3;
        sums.tpot_p99_ms += w * tpot_p99_s * 1e3;
        first = Some(match first {
            // Memory columns report the most demanding phase.
            Some(f) if f.hbm_used_gb_per_gpu >= e.hbm_used_gb_per_gpu => f,
            _ => e,
        });
    }
    let e = first.expect("a sweep has at least one phase");
    let racks = f64::from(p.racks);
    let storage_kw = storage_servers * plan.economics.storage_power_kw_per_server;
    let it_kw = sums.it_kw + storage_kw;
    let footprint = Footprint {
        gpus: f64::from(e.gpus),
        racks,
        storage_servers,
        it_kw,
        provisioned_it_kw: power.cluster_kw(racks, racks * power.gpus_per_rack, 1.0) + storage_kw,
    };
    let econ = &plan.economics;
    let tokens = sums.served_tokens_per_s;
    let facility_kw = it_kw * econ.pue;
    let demand = |v: f64| if plan.demand { v } else { f64::NAN };
    let estimate = Estimate {
        ttft_ms: sums.ttft_ms,
        tpot_ms: sums.tpot_ms,
        tokens_per_s_per_user: sums.tokens_per_s_per_user,
        tokens_per_s_per_instance: sums.tokens_per_s_per_instance,
        tokens_per_s_per_gpu: sums.tokens_per_s_per_gpu,
        output_tokens_per_s: sums.output_tokens_per_s,
        compute_bound_tokens_per_s_per_gpu: sums.compute_bound,
        hbm_bound_tokens_per_s_per_gpu: sums.hbm_bound,
        comm_bound_tokens_per_s_per_gpu: sums.comm_bound,
        demand_requests_per_s: demand(sums.demand_requests_per_s),
        utilization: demand(utilization),
        users_supported: demand(users_supported),
        demand_met: plan.demand.then_some(demand_met),
        meets_slo: plan.settings.slo.is_set().then_some(meets_slo),
        ttft_p50_ms: sums.ttft_p[0],
        ttft_p95_ms: sums.ttft_p[1],
        ttft_p99_ms: sums.ttft_p[2],
        ttft_p99_mmc_ms: sums.ttft_p99_mmc_ms,
        tpot_p99_ms: sums.tpot_p99_ms,
        kv_host_gb: demand(sums.kv_host_gb),
        kv_storage_gb: demand(sums.kv_storage_gb),
        kv_reload_ms: demand(sums.kv_reload_ms),
        storage_servers: demand(storage_servers),
        power_kw: it_kw,
        facility_power_kw: facility_kw,
        rack_power_kw: power.rack_kw(1.0),
        joules_per_token: it_kw * 1e3 / tokens,
        kg_co2e_per_mtok: cost::per_mtok(facility_kw * econ.kg_co2e_per_kwh, tokens),
        water_l_per_mtok: cost::per_mtok(it_kw * econ.water_l_per_kwh, tokens),
        usd_per_month_api: if plan.demand && plan.api_usd_per_mtok.is_some() {
            sums.api_usd_per_hour * HOURS_PER_MONTH
        } else {
            f64::NAN
        },
        ..e
    };
    Ok(Unpriced {
        estimate,
        footprint,
        served_tokens_per_s: tokens,
        active_ratio: sums.active_ratio,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::parse;
    use std::path::Path;

    /// A small sized sweep: llama-3.1-8b on H100 racks, one or two GPUs per instance.
    fn sweep(demand: &str, slo: &str) -> crate::spec::Spec {
        let text = format!(
            r#"
[sweep]
name = "t"
{slo}

[workload]
model = "llama-3.1-8b"
input_tokens = 1024
output_tokens = 256
think_s = 5

[workload.demand]
{demand}

[grid]
hardware = ["h100-sxm"]
racks = "auto"
tp = [1, 2, 8]
disagg_prefill_pct = [0, 25]
batch = [4, 32, 256]
ownership = ["cloud", "owned"]
"#
        );
        parse(Path::new("t.toml"), &text, 1_000_000)
            .expect("test sweep parses")
            .into_inference()
            .expect("an inference sweep")
    }

    /// The smallest rack count meeting the demand (and the SLOs, when any count does), by
    /// evaluating every count.
    fn brute_force(ctx: &Context, p: &Point, limit: u32) -> Option<u32> {
        let at = |r: u32| evaluate(ctx, &Point { racks: r, ..*p });
        let first = |slo: bool| {
            (1..=limit).find(|&r| {
                let e = at(r);
                e.feasible() && e.demand_met == Some(true) && (!slo || e.meets_slo != Some(false))
            })
        };
        first(true).or_else(|| first(false))
    }

    /// `racks = "auto"` equals the smallest feasible count found by brute force.
    #[test]
    fn auto_racks_equal_brute_force() {
        for (demand, slo) in [
            ("concurrent_users = 3000", ""),
            ("requests_per_s = 40", "ttft_p99_ms = 300"),
            (
                "tokens_per_day = 5e9\ntraffic = \"bursty\"",
                "tpot_p99_ms = 30",
            ),
            (
                "arrival_rate_per_s = 2\nsession_minutes = 20",
                "tokens_per_s_per_user = 60",
            ),
        ] {
            let spec = sweep(demand, slo);
            let ctx = spec.context();
            let mut sized = 0;
            for (_, p) in spec.grid.range(0, spec.grid.len()) {
                let e = evaluate(&ctx, &p);
                if !e.feasible() {
                    continue;
                }
                sized += 1;
                let expected = brute_force(&ctx, &p, e.racks + 3);
                assert_eq!(Some(e.racks), expected, "{demand} / {slo}: {p:?}");
            }
            assert!(sized > 0, "{demand}: nothing sized");
        }
    }

    /// Demands (and SLOs) under which the caches are checked: users with an SLO, and a request
    /// rate without one.
    const SIZED_CASES: [(&str, &str); 2] = [
        ("concurrent_users = 3000", "ttft_p99_ms = 300"),
        ("requests_per_s = 40", ""),
    ];

    /// Evaluating the grid in order with one worker's caches (a placement per batch run, the
    /// unpriced estimate per ownership run) gives every point exactly what a fresh evaluation
    /// gives: the caches only skip work.
    #[test]
    fn cached_evaluation_equals_fresh_evaluation() {
        for (demand, slo) in SIZED_CASES {
            let spec = sweep(demand, slo);
            let ctx = spec.context();
            let mut placements = Placements::default();
            let (mut feasible, mut cloud_usd_per_hour, mut repriced) = (0, f64::NAN, 0);
            for (_, p) in spec.grid.range(0, spec.grid.len()) {
                let cached = evaluate_with(&ctx, &p, &mut placements);
                let fresh = evaluate(&ctx, &p);
                // Debug output compares NaN columns as equal.
                assert_eq!(format!("{cached:?}"), format!("{fresh:?}"), "{p:?}");
                if !cached.feasible() {
                    continue;
                }
                feasible += 1;
                // Ownership is the fastest axis: "owned" follows "cloud" at the same point.
                if p.ownership == 0 {
                    cloud_usd_per_hour = cached.usd_per_hour;
                } else if cached.usd_per_hour != cloud_usd_per_hour {
                    repriced += 1;
                }
            }
            assert!(
                feasible > 0 && repriced * 2 == feasible,
                "{feasible} {repriced}"
            );
        }
    }

    /// The decode speeds automatic sizing timed serve the rack count it chose exactly as speeds
    /// timed afresh there would: with the hand-off withheld, every sized point is the same. The
    /// hand-off is taken for most points (the speeds would otherwise be timed twice).
    #[test]
    fn sized_speeds_handed_on_equal_speeds_timed_afresh() {
        for (demand, slo) in SIZED_CASES {
            let spec = sweep(demand, slo);
            let ctx = spec.context();
            let (mut compared, mut handed_on) = (0, 0);
            for (_, p) in spec.grid.range(0, spec.grid.len()) {
                let mut placements = Placements::default();
                let Ok(racks) = auto_racks(&ctx, &p, &mut placements) else {
                    continue;
                };
                let q = Point { racks, ..p };
                handed_on += usize::from(placements.timed.for_point(&q, 0).is_some());
                let with = at_racks(&ctx, &q, &mut placements).map(|u| u.estimate);
                placements.timed = Timed::default();
                let without = at_racks(&ctx, &q, &mut placements).map(|u| u.estimate);
                assert_eq!(format!("{with:?}"), format!("{without:?}"), "{p:?}");
                compared += 1;
            }
            assert!(
                compared > 0 && handed_on * 2 > compared,
                "{compared} {handed_on}"
            );
        }
    }

    /// More demand never needs fewer racks; a tighter SLO never costs less.
    #[test]
    fn sizing_is_monotone() {
        let spec = |users: u32, ttft_ms: u32| {
            sweep(
                &format!("concurrent_users = {users}"),
                &format!("ttft_p99_ms = {ttft_ms}"),
            )
        };
        let base = spec(2000, 400);
        let (more, tighter) = (spec(5000, 400), spec(2000, 150));
        let (cb, cm, ct) = (base.context(), more.context(), tighter.context());
        for (_, p) in base.grid.range(0, base.grid.len()) {
            let (b, m, t) = (evaluate(&cb, &p), evaluate(&cm, &p), evaluate(&ct, &p));
            if b.feasible() && m.feasible() {
                assert!(m.racks >= b.racks, "{p:?}: {} < {}", m.racks, b.racks);
            }
            if b.feasible() && t.feasible() {
                assert!(t.usd_per_hour >= b.usd_per_hour, "{p:?}");
            }
        }
    }

    /// A schedule sizes for its peak phase and averages its metrics over time: a day phase at
    /// full load and a night phase at a tenth need the day's racks, and the schedule's
    /// throughput is the time-weighted mean of the two phases' (here equal: same lengths).
    #[test]
    fn schedule_sizes_for_the_peak_phase() {
        let sized = |phases: &str| {
            let text = format!(
                r#"
[sweep]
name = "t"

[workload]
model = "llama-3.1-8b"
input_tokens = 1024
output_tokens = 256

[workload.demand]
requests_per_s = 200
{phases}

[grid]
hardware = ["h100-sxm"]
racks = "auto"
tp = [1]
batch = [64]
"#
            );
            let spec = parse(Path::new("t.toml"), &text, 1000)
                .unwrap()
                .into_inference()
                .unwrap();
            let ctx = spec.context();
            evaluate(&ctx, &spec.grid.point(0))
        };
        let flat = sized("");
        let day_night = sized(
            "[[workload.phase]]\nname = \"day\"\nduration_h = 16\n\n[[workload.phase]]\nname = \"night\"\nduration_h = 8\nload_scale = 0.1",
        );
        assert!(flat.feasible() && day_night.feasible());
        assert_eq!(day_night.racks, flat.racks);
        // Demand is averaged over time: 2/3 x 200 + 1/3 x 20 requests/s.
        assert!((day_night.demand_requests_per_s - (200.0 * 2.0 + 20.0) / 3.0).abs() < 1e-9);
        assert!((day_night.tokens_per_s_per_gpu - flat.tokens_per_s_per_gpu).abs() < 1e-9);
        // The quiet night lowers average power and raises the cost per token.
        assert!(day_night.power_kw < flat.power_kw);
        assert!(day_night.usd_per_mtok > flat.usd_per_mtok);
    }

    /// Long cached conversations with long think times overflow free HBM into host memory:
    /// the offload columns fill and the reload shows up in TTFT.
    #[test]
    fn cached_context_spills_to_host() {
        let text = r#"
[sweep]
name = "t"

[workload]
model = "llama-3.1-70b"
input_tokens = 512
output_tokens = 256
think_s = 600
cached_tokens = 32768

[workload.demand]
concurrent_users = 20000

[grid]
hardware = ["h100-sxm"]
racks = "auto"
tp = [8]
batch = [64]
"#;
        let spec = parse(Path::new("t.toml"), text, 1000)
            .unwrap()
            .into_inference()
            .unwrap();
        let ctx = spec.context();
        let e = evaluate(&ctx, &spec.grid.point(0));
        assert!(e.feasible(), "{e:?}");
        // 20,000 users cycling every 600 s + an answer: ~19,900 idle sessions of 32k tokens at
        // 320 KiB per token (bf16 GQA, 80 layers x 8 KV heads x 128 x 2 x 2 B) = ~214 TB of
        // context, far beyond the cluster's free HBM and host memory.
        let idle = e.demand_requests_per_s * 600.0;
        let total_gb = idle * 32768.0 * 327_680.0 / 1e9;
        assert!(e.kv_host_gb > 0.0 && e.kv_storage_gb > 0.0, "{e:?}");
        assert!(e.kv_host_gb + e.kv_storage_gb <= total_gb * (1.0 + 1e-9));
        assert!(e.storage_servers >= (e.kv_storage_gb / 73_700.0).ceil());
        assert!(e.kv_reload_ms > 0.0 && e.ttft_p99_ms > e.ttft_ms + e.kv_reload_ms * 0.99);
    }

    /// One queueing model: a sized row's latencies are the serving model's (the one `validate`
    /// uses) at the rate each decode instance takes, and a disaggregated row adds the prefill
    /// pool's wait and the KV transfer to the decode instance's slot wait.
    #[test]
    fn sized_latencies_are_the_serving_models() {
        use super::super::serving::{self, P99};
        let spec = sweep("concurrent_users = 3000", "");
        let ctx = spec.context();
        let s = &ctx.plan.settings;
        let (mut aggregated, mut disaggregated) = (0, 0);
        for (_, p) in spec.grid.range(0, spec.grid.len()) {
            let p = Point { racks: 1, ..p };
            let Ok(inst) = super::super::instance(&ctx, &p) else {
                continue;
            };
            let Ok(unit) = Unit::new(&inst, p.batch) else {
                continue;
            };
            let speeds = sizing::speeds(&unit);
            let load = &ctx.phases[0].load;
            let tiers = &ctx.platforms[0].tiers;
            let Ok(n) = sizing::min_instances(&unit, &speeds, load, s, tiers, 100_000, false)
            else {
                continue;
            };
            let pools = unit.pools(n).unwrap();
            let served = sizing::serve(&unit, &speeds, pools, load, s, tiers, false);
            assert!(served.demand_met, "{served:?}");
            let rate = served.demand_requests_per_s / f64::from(pools.decode);
            let occ = serving::occupancy(&speeds, rate).unwrap();
            if pools.prefill == 0 {
                let sv = serving::at_rate_with(&inst, &speeds, rate, s.spread()).unwrap();
                assert_eq!(served.ttft_s[P99], sv.ttft_p99_s);
                assert_eq!(served.ttft_s[0], sv.ttft_s(&inst, 0));
                assert_eq!(served.tpot_p99_s, sv.tpot_p99_s);
                aggregated += 1;
            } else {
                assert!(served.ttft_s[P99] >= unit.ttft_idle_s + occ.wait_quantile_s(0.99, 1.0));
                assert_eq!(served.tpot_p99_s, speeds.tpot_s(occ.running[P99]));
                disaggregated += 1;
            }
            assert!(served.ttft_s[0] <= served.ttft_s[1] && served.ttft_s[1] <= served.ttft_s[P99]);
        }
        assert!(
            aggregated > 0 && disaggregated > 0,
            "{aggregated} {disaggregated}"
        );
    }

    /// A sized row's arithmetic: utilization, power between idle and full, cost per token.
    #[test]
    fn sized_row_is_consistent() {
        let spec = sweep("concurrent_users = 3000", "ttft_p99_ms = 1000");
        let ctx = spec.context();
        let mut checked = 0;
        for (_, p) in spec.grid.range(0, spec.grid.len()) {
            let e = evaluate(&ctx, &p);
            if !e.feasible() || e.meets_slo != Some(true) {
                continue;
            }
            checked += 1;
            assert!(e.utilization <= 0.75 + 1e-9 && e.demand_met == Some(true));
            // Percentiles in order; the median prompt (exponential lengths: ln 2 of the mean) may
            // start faster than a mean prompt on an idle instance, the p99 prompt cannot.
            assert!(e.ttft_p99_ms >= e.ttft_p95_ms && e.ttft_p95_ms >= e.ttft_p50_ms);
            assert!(e.ttft_p50_ms > 0.0 && e.ttft_p99_ms >= e.ttft_ms);
            assert!(e.tpot_p99_ms <= e.tpot_ms + 1e-9);
            let served = e.demand_requests_per_s * 256.0;
            let usd_per_mtok = e.usd_per_hour / (served * 3600.0) * 1e6;
            assert!((e.usd_per_mtok - usd_per_mtok).abs() < 1e-9 * usd_per_mtok);
            assert!((e.usd_per_month - 730.0 * e.usd_per_hour).abs() < 1e-6);
            assert!((e.facility_power_kw - e.power_kw * ctx.plan.economics.pue).abs() < 1e-9);
            if ctx.plan.ownership[p.ownership as usize] == Ownership::Cloud {
                let gpu_hours = f64::from(e.gpus) * 2.99;
                assert!(e.usd_per_hour >= gpu_hours - 1e-9, "{e:?}");
            }
            // With a 5 s think time and 4k tokens cached... none here: no offload columns.
            assert_eq!(e.kv_storage_gb, 0.0);
        }
        assert!(checked > 0);
    }
}
