//! A whole cluster: places a configuration on its racks (or, with `racks = "auto"`, on the
//! fewest servers that meet the demand and the SLOs), serves each schedule phase's load, and adds
//! power and cost. `evaluate` is the engine's entry point; it is pure and allocation-free.
//! Formulas: docs/model.md, "Sizing and queueing", "Power", "Cost".

use crate::catalog::Rack;
use crate::grid::Point;

use super::batched::{BatchedInstance, Pools};
use super::cost::{self, Breakdown, Footprint, HOURS_PER_MONTH, HOURS_PER_YEAR};
use super::instance::{instance_in, spine_ratio};
use super::memo::{self, Scope};
use super::network;
use super::serving::Speeds;
use super::sizing::{self, Served};
use super::steady::{self, Steady};
use super::{Context, Estimate, Instance, Reason, power};
use crate::vocab::Ownership;

/// `racks` value that asks for automatic sizing.
pub const AUTO_RACKS: u32 = 0;

/// Racks beyond which automatic sizing gives up: the most a cluster may have
/// ([`crate::limits::MAX_RACKS`]).
pub const MAX_AUTO_RACKS: u32 = crate::limits::MAX_RACKS;

/// The instances (one per schedule phase) of the last placement evaluated, and the last point's
/// estimate before pricing. Consecutive grid points mostly differ only in batch or ownership,
/// the fastest axes: batch does not change the placement, its bounding stages or its rates, and
/// ownership changes only the price. The engine keeps one of these per worker so that each
/// placement is resolved once and each point's performance, sizing and power once for all
/// ownership models.
///
/// Given the [`Scope`] of the sweep it serves ([`PlacementCache::in_scope`]), its instances also
/// keep their timed steps in the worker's table ([`super::memo`]), which the points at other
/// rack counts find there.
#[derive(Debug, Default)]
pub struct PlacementCache<'a> {
    scope: Option<Scope>,
    /// The point with batch and ownership cleared, and the cluster's GPUs.
    key: Option<(Point, u32)>,
    phases: Vec<Result<Instance<'a>, Estimate>>,
    /// The last point with ownership cleared, and its unpriced estimate.
    unpriced: Option<(Point, Result<Unpriced, Estimate>)>,
    /// What automatic sizing found for a point: each phase's decode speeds and fewest instances.
    timed: Timed,
    /// Each phase's fewest instances for the last point sized: where the next point's search
    /// starts (consecutive points differ mostly in batch, and need about as many instances).
    hints: Vec<Option<u32>>,
}

/// Decode speeds and fewest instances of each phase, valid for one point on one cluster.
#[derive(Debug, Default)]
struct Timed {
    /// The point (ownership cleared) and the cluster's GPUs.
    point: Option<(Point, u32)>,
    speeds: Vec<Speeds>,
    fewest: Vec<Option<u32>>,
}

impl Timed {
    /// The speeds and fewest instances of phase `i` if they were found for `p` on `gpus`.
    fn for_point(&self, p: &Point, gpus: u32, i: usize) -> Option<(&Speeds, Option<u32>)> {
        let timed_for_p = self.point == Some((Point { ownership: 0, ..*p }, gpus));
        self.speeds
            .get(i)
            .zip(self.fewest.get(i).copied())
            .filter(|_| timed_for_p)
    }
}

/// Each phase's instance, what automatic sizing found, and each phase's search hint.
type PhaseState<'s, 'a> = (
    &'s [Result<Instance<'a>, Estimate>],
    &'s mut Timed,
    &'s mut Vec<Option<u32>>,
);

impl<'a> PlacementCache<'a> {
    /// Evaluates the points of the sweep of `scope` from now on (the engine's workers): each
    /// instance's steps are timed once per worker thread, whatever the cluster's size.
    pub fn in_scope(&mut self, scope: Scope) {
        if self.scope != Some(scope) {
            *self = PlacementCache {
                scope: Some(scope),
                ..PlacementCache::default()
            };
        }
    }

    /// The instance of every phase for `p`'s placement on `gpus` GPUs, and beside them what
    /// automatic sizing found and where the next search starts.
    #[inline]
    fn get(&mut self, ctx: &'a Context, p: &Point, gpus: u32) -> PhaseState<'_, 'a> {
        let key = (
            Point {
                batch: 0,
                ownership: 0,
                ..*p
            },
            gpus,
        );
        if self.key != Some(key) {
            let scope = self.scope;
            self.phases.clear();
            self.phases.extend(
                ctx.phases
                    .iter()
                    .map(|ph| instance_in(ctx, p, gpus, ph.input_tokens, ph.output_tokens, scope)),
            );
            self.key = Some(key);
        }
        self.hints.resize(ctx.phases.len(), None);
        (&self.phases, &mut self.timed, &mut self.hints)
    }
}

/// Predicts one configuration: performance, sizing, power and cost.
pub fn evaluate(ctx: &Context, p: &Point) -> Estimate {
    evaluate_with(ctx, p, &mut PlacementCache::default())
}

/// [`evaluate`], reusing the placement of the previous point where it is the same.
pub fn evaluate_with<'a>(
    ctx: &'a Context,
    p: &Point,
    placements: &mut PlacementCache<'a>,
) -> Estimate {
    let mut e = Estimate::EMPTY;
    evaluate_into(ctx, p, placements, &mut e);
    e
}

/// [`evaluate_with`] into `out`: the estimate is written once, where the caller keeps it
/// (returning it by value copied its several hundred bytes several times on the way).
pub fn evaluate_into<'a>(
    ctx: &'a Context,
    p: &Point,
    placements: &mut PlacementCache<'a>,
    out: &mut Estimate,
) {
    // With one ownership model there is nothing to reuse, and keeping a copy would cost.
    let reuse = ctx.plan.ownership.len() > 1;
    let key = Point { ownership: 0, ..*p };
    let unpriced = match &placements.unpriced {
        Some((k, unpriced)) if reuse && *k == key => *unpriced,
        _ => {
            let rack = &ctx.platforms[p.platform as usize].rack;
            let unpriced = if p.racks == AUTO_RACKS {
                auto_gpus(ctx, p, placements).and_then(|gpus| at_cluster(ctx, p, gpus, placements))
            } else {
                let gpus = p.racks * rack.gpus_per_rack();
                at_cluster(ctx, p, gpus, placements).map_err(|e| Estimate {
                    racks: p.racks,
                    servers: p.racks * rack.servers_per_rack,
                    ..e
                })
            };
            if reuse {
                placements.unpriced = Some((key, unpriced));
            }
            unpriced
        }
    };
    match unpriced {
        Ok(u) => {
            *out = u.estimate;
            u.price(ctx, p, out);
        }
        Err(e) => *out = e,
    }
    out.scaleout_oversubscription = spine_ratio(&ctx.platforms[p.platform as usize].rack, p);
}

/// Sizing units (servers, or whole scale-up domains when a domain spans servers) that hold
/// `instances` instances of `stage_gpus x pp` GPUs, packed as [`super::layout::place`] packs
/// them: stages into scale-up domains, domains into units.
pub fn units_for(rack: &Rack, stage_gpus: u32, pp: u32, instances: u32) -> u64 {
    let domain = u64::from(rack.scaleup_domain_gpus);
    let stages = u64::from(instances) * u64::from(pp);
    let stage = u64::from(stage_gpus);
    let domains = if stage <= domain {
        stages.div_ceil(domain / stage)
    } else {
        stages * (stage / domain)
    };
    (domains * domain)
        .div_ceil(u64::from(rack.unit_gpus()))
        .max(1)
}

/// Sizing units that hold `instances` instances of `batched`'s configuration: packed together
/// ([`units_for`]) when both pools share a layout; with a prefill tp of its own, each pool on
/// units of its own, `round(instances x pct / 100)` (at least one) prefill instances and the
/// rest decode (docs/model.md §12).
pub fn units_of(rack: &Rack, batched: &BatchedInstance, instances: u32) -> u64 {
    let (d, f) = (&batched.inst.layout, &batched.inst.prefill_layout);
    match batched.pools(instances) {
        Ok(pools) if batched.inst.heterogeneous() => {
            units_for(rack, d.stage_gpus, d.pp, pools.decode)
                + units_for(rack, f.stage_gpus, f.pp, pools.prefill)
        }
        _ => units_for(rack, d.stage_gpus, d.pp, instances),
    }
}

/// The instances a cluster of `gpus` GPUs holds: the placement's when both pools share a
/// layout; with a prefill tp of its own, the most whose pools' units fit in the cluster
/// ([`instances_in_units`]).
fn instances_on(rack: &Rack, batched: &BatchedInstance, gpus: u32) -> u32 {
    if !batched.inst.heterogeneous() {
        return batched.inst.layout.instances;
    }
    instances_in_units(rack, batched, u64::from(gpus / rack.unit_gpus()))
}

/// The most instances whose pools fit in `units` sizing units ([`units_of`] rises with the
/// count, so a bisection finds it): for pools that share a layout, the count the placement
/// packs on those units.
fn instances_in_units(rack: &Rack, batched: &BatchedInstance, units: u64) -> u32 {
    let inst = batched.inst;
    let narrowest = inst
        .layout
        .gpus_per_instance
        .min(inst.prefill_layout.gpus_per_instance);
    let most = units * u64::from(rack.unit_gpus()) / u64::from(narrowest);
    most_that_fit(most, units, |n| units_of(rack, batched, n))
}

/// The most instances, at most `most` (and below `u32::MAX`), whose `size` is at most
/// `budget`, for a `size` that rises with the count: one fewer than the first that does not
/// fit ([`sizing::first_passing`]).
fn most_that_fit(most: u64, budget: u64, size: impl Fn(u32) -> u64) -> u32 {
    let most = u32::try_from(most).unwrap_or(u32::MAX - 1);
    sizing::first_passing(1, most, |n| size(n) > budget).map_or(most, |over| over - 1)
}

/// With the prefill pool on a GPU of its own (`prefill_hardware`): the servers of the decode
/// and of the prefill pool that hold `instances` instances, each pool packed ([`units_for`]) on
/// units of its own platform's rack preset (all decode when the count makes no two pools; the
/// pools' own check then says why).
fn pool_servers(ctx: &Context, batched: &BatchedInstance, instances: u32) -> (u64, u64) {
    let inst = batched.inst;
    let (d, f) = (&inst.layout, &inst.prefill_layout);
    let decode_rack = &ctx.platforms[inst.platform as usize].rack;
    let prefill_rack = &ctx.platforms[inst.prefill_platform as usize].rack;
    let servers = |rack: &Rack, l: &super::layout::Layout, n: u32| {
        units_for(rack, l.stage_gpus, l.pp, n) * u64::from(rack.unit_gpus())
            / u64::from(rack.gpus_per_server)
    };
    match batched.pools(instances) {
        Ok(pools) => (
            servers(decode_rack, d, pools.decode),
            servers(prefill_rack, f, pools.prefill),
        ),
        Err(_) => (servers(decode_rack, d, instances), 0),
    }
}

/// With the prefill pool on a GPU of its own: the prefill pool's racks of its preset, and the
/// racks both pools take (each pool on whole racks of its own preset; docs/model.md §12).
fn pool_racks(ctx: &Context, batched: &BatchedInstance, instances: u32) -> (u64, u64) {
    let inst = batched.inst;
    let per_rack =
        |platform: u32| u64::from(ctx.platforms[platform as usize].rack.servers_per_rack);
    let (decode, prefill) = pool_servers(ctx, batched, instances);
    let prefill_racks = prefill.div_ceil(per_rack(inst.prefill_platform));
    (
        prefill_racks,
        decode.div_ceil(per_rack(inst.platform)) + prefill_racks,
    )
}

/// With the prefill pool on a GPU of its own: the most instances whose pools' racks fit in
/// `racks` racks ([`pool_racks`] rises with the count, so a bisection finds it).
fn instances_in_racks(ctx: &Context, batched: &BatchedInstance, racks: u32) -> u32 {
    let inst = batched.inst;
    let gpus_per_rack = |platform: u32| ctx.platforms[platform as usize].rack.gpus_per_rack();
    let widest_rack = gpus_per_rack(inst.platform).max(gpus_per_rack(inst.prefill_platform));
    let narrowest = inst
        .layout
        .gpus_per_instance
        .min(inst.prefill_layout.gpus_per_instance);
    let most = u64::from(racks) * u64::from(widest_rack) / u64::from(narrowest);
    most_that_fit(most, u64::from(racks), |n| pool_racks(ctx, batched, n).1)
}

/// Racks that hold `gpus` GPUs, and their servers.
fn racks_of(rack: &Rack, gpus: u32) -> (u32, u32) {
    let servers = gpus / rack.gpus_per_server;
    (servers.div_ceil(rack.servers_per_rack), servers)
}

/// The GPUs of the fewest sizing units whose instances meet every phase's demand and the SLOs
/// (or, when no count meets the SLOs, the demand alone: the row then says `meets_slo = false`).
fn auto_gpus<'a>(
    ctx: &'a Context,
    p: &Point,
    placements: &mut PlacementCache<'a>,
) -> Result<u32, Estimate> {
    let platform = &ctx.platforms[p.platform as usize];
    let rack = &platform.rack;
    let unit_gpus = u64::from(rack.unit_gpus());
    let max_units = u64::from(MAX_AUTO_RACKS) * u64::from(rack.gpus_per_rack()) / unit_gpus;
    let gpus_of = |units: u64| {
        u32::try_from(units * unit_gpus)
            .ok()
            .filter(|_| units <= max_units)
    };
    let stage_gpus = p.tp.max(p.ep);
    let mut gpus = gpus_of(units_for(rack, stage_gpus, p.pp, 1))
        .ok_or(Estimate::infeasible(Reason::InstanceExceedsCluster, 0))?;
    // Per-instance speed can only fall as the cluster grows (more pipelines straddle scale-up
    // domains), so the count only rises; two rounds settle it in practice, four bound it.
    for _ in 0..4 {
        let mut needed = 0u64;
        let mut layout = None;
        let mut other_hardware = false;
        let (phases, timed, hints) = placements.get(ctx, p, gpus);
        timed.point = None;
        timed.speeds.clear();
        timed.fewest.clear();
        for ((phase, inst), hint) in ctx.phases.iter().zip(phases).zip(hints.iter_mut()) {
            let inst = inst.as_ref().map_err(|e| *e)?;
            let batched = BatchedInstance::new(inst, p.batch)?;
            let l = inst.layout;
            layout = Some((l, inst.prefill_layout));
            let narrowest = l
                .gpus_per_instance
                .min(inst.prefill_layout.gpus_per_instance);
            let widest = |platform: u32| ctx.platforms[platform as usize].rack.gpus_per_rack();
            let widest_rack = u64::from(widest(inst.platform).max(widest(inst.prefill_platform)));
            let max_instances = u32::try_from(
                max_units * unit_gpus * widest_rack
                    / u64::from(rack.gpus_per_rack())
                    / u64::from(narrowest),
            )
            .unwrap_or(u32::MAX);
            let s = &ctx.plan.settings;
            timed.speeds.push(sizing::speeds(&batched));
            let speeds = timed.speeds.last().expect("just pushed");
            let tiers = &platform.tiers;
            let guess = *hint;
            let fewest = |slo| {
                let load = &phase.load;
                sizing::min_instances(&batched, speeds, load, s, tiers, max_instances, slo, guess)
            };
            let slo = s.slo.is_set();
            let (instances, slo) = fewest(slo)
                .map(|n| (n, slo))
                .or_else(|_| fewest(false).map(|n| (n, false)))
                .map_err(|_| Estimate::with_layout(Reason::DemandExceedsMaxRacks, &l))?;
            *hint = Some(instances);
            timed.fewest.push(Some(instances));
            // The cluster runs every instance its units (or, on pools of two presets, its racks)
            // hold, often more than the fewest that serve, and where more can fail
            // ([`sizing::more_can_fail`]) the size is the smallest whose full count serves, at
            // most the one holding a count past the failing levels (elsewhere: the first).
            let past = sizing::more_can_fail(&batched, &phase.load)
                .then(|| sizing::past_failing_levels(&batched, instances));
            // The first size from `first` below `most` whose `held` instances serve, else the
            // larger of the two.
            let first_serving = |first: u64, most: u64, held: &dyn Fn(u64) -> u32| {
                (first..most)
                    .find(|&size| {
                        let n = held(size);
                        n == instances
                            || sizing::serves(&batched, speeds, n, &phase.load, s, tiers, slo)
                    })
                    .unwrap_or(first.max(most))
            };
            needed = needed.max(if inst.other_hardware() {
                // Whole racks of each pool, counted in units of the decode preset's racks.
                let racks = |n| pool_racks(ctx, &batched, n).1;
                let first = racks(instances);
                let most = past.map_or(first, |n| racks(n).min(u64::from(MAX_AUTO_RACKS)));
                let held = |r: u64| instances_in_racks(ctx, &batched, r as u32);
                first_serving(first, most, &held) * u64::from(rack.gpus_per_rack()) / unit_gpus
            } else {
                let first = units_of(rack, &batched, instances);
                let most = past.map_or(first, |n| units_of(rack, &batched, n).min(max_units));
                first_serving(first, most, &|u| instances_in_units(rack, &batched, u))
            });
            other_hardware |= inst.other_hardware();
        }
        let needed = gpus_of(needed)
            .ok_or_else(|| Estimate::infeasible(Reason::DemandExceedsMaxRacks, 0))?;
        let same_hops = |l: &super::layout::Layout| {
            super::layout::place(&ctx.model.layout_model, rack, needed, l.tp, l.pp, l.ep)
                .is_ok_and(|big| big.pp_hops_scaleout == l.pp_hops_scaleout)
        };
        // A prefill pool on racks of its own preset is placed again on the new size.
        let same_speed = !other_hardware
            && layout.is_some_and(|(l, f)| same_hops(&l) && (f == l || same_hops(&f)));
        if same_speed || needed == gpus {
            // The instances on `needed` GPUs decode at the speeds just timed.
            timed.point = Some((Point { ownership: 0, ..*p }, needed));
            return Ok(needed);
        }
        gpus = needed;
    }
    Ok(gpus)
}

/// Running sums over the schedule's phases, weighted by their share of time.
#[derive(Default)]
struct Sums {
    ttft_ms: f64,
    ttft_idle_ms: f64,
    kv_transfer_ms: f64,
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
    occupancy_per_instance: f64,
    tpot_at_load_ms: f64,
    tokens_per_s_per_user_at_load: f64,
    e2e_ms: [f64; 2],
    queue_wait_p99_ms: f64,
    kv_host_gb: f64,
    kv_storage_gb: f64,
    kv_reload_ms: f64,
    network: network::Load,
    demand_requests_per_s: f64,
    api_usd_per_hour: f64,
    /// GPUs each phase needs at fewest, times its share of time and of active hours (the
    /// decode pool's, with the prefill pool on a GPU of its own; then the prefill pool's).
    autoscaled_gpus: f64,
    autoscaled_prefill_gpus: f64,
    /// IT power of a prefill pool on a GPU of its own, kW (`it_kw` has the rest).
    prefill_it_kw: f64,
}

/// Servers and GPUs of one pool on racks of its own preset.
#[derive(Debug, Clone, Copy)]
struct Pool {
    servers: u32,
    gpus: u32,
}

impl Sums {
    /// Adds a phase of weight `w` whose full-batch estimate is `e` and whose load settles at
    /// `st`.
    fn add(&mut self, w: f64, e: &Estimate, st: &Steady) {
        self.ttft_ms += w * st.ttft_mean_s * 1e3;
        self.ttft_idle_ms += w * e.ttft_idle_ms;
        self.kv_transfer_ms += w * e.kv_transfer_ms;
        self.tpot_ms += w * e.tpot_ms;
        self.tokens_per_s_per_user += w * e.tokens_per_s_per_user;
        self.tokens_per_s_per_instance += w * e.tokens_per_s_per_instance;
        self.tokens_per_s_per_gpu += w * e.tokens_per_s_per_gpu;
        self.output_tokens_per_s += w * e.output_tokens_per_s;
        self.compute_bound += w * e.compute_bound_tokens_per_s_per_gpu;
        self.hbm_bound += w * e.hbm_bound_tokens_per_s_per_gpu;
        self.comm_bound += w * e.comm_bound_tokens_per_s_per_gpu;
        for (sum, t) in self.ttft_p.iter_mut().zip(st.ttft_s) {
            *sum += w * t * 1e3;
        }
        self.ttft_p99_mmc_ms += w * st.ttft_p99_exponential_s * 1e3;
        self.tpot_p99_ms += w * st.tpot_p99_s * 1e3;
        self.occupancy_per_instance += w * st.held_per_instance;
        self.tpot_at_load_ms += w * st.tpot_mean_s * 1e3;
        self.tokens_per_s_per_user_at_load += w / st.tpot_mean_s;
        for (sum, t) in self.e2e_ms.iter_mut().zip(st.e2e_s) {
            *sum += w * t * 1e3;
        }
        self.queue_wait_p99_ms += w * st.queue_wait_p99_s * 1e3;
    }
}

/// A point's estimate before its ownership model prices it, and what the pricing needs.
#[derive(Debug, Clone, Copy)]
struct Unpriced {
    estimate: Estimate,
    footprint: Footprint,
    /// A prefill pool on a GPU of its own: its platform and footprint, priced at its GPU's
    /// prices (`footprint` is then the decode pool's).
    prefill: Option<(u32, Footprint)>,
    /// Tokens per second the cluster serves on average (the demand's, or its capacity).
    served_tokens_per_s: f64,
    /// GPUs an autoscaled deployment rents on average (each phase its fewest, in its active
    /// hours), of the decode and of the prefill pool's footprint; NaN when a phase could not be
    /// sized or without demand.
    autoscaled_gpus: [f64; 2],
}

/// Servers one instance of `gpus_per_instance` GPUs spans in `rack`'s servers (at least one): a
/// spot interruption of any of them stops the instance (`cost::spot_standby`).
fn servers_per_instance(gpus_per_instance: u32, rack: &Rack) -> f64 {
    gpus_per_instance
        .div_ceil(rack.gpus_per_server)
        .max(1)
        .into()
}

impl Unpriced {
    /// Sets `out`'s costs to those of `p`'s ownership model.
    fn price(&self, ctx: &Context, p: &Point, out: &mut Estimate) {
        let plan = &ctx.plan;
        let prices = &ctx.platforms[p.platform as usize].prices;
        let payment = plan.ownership[p.ownership as usize];
        let econ = &plan.economics;
        let mut parts = cost::usd_per_hour(payment, &self.footprint, prices, econ);
        if let Some((platform, footprint)) = &self.prefill {
            let prefill_prices = &ctx.platforms[*platform as usize].prices;
            let more = cost::usd_per_hour(payment, footprint, prefill_prices, econ);
            parts = Breakdown {
                gpus: parts.gpus + more.gpus,
                energy: parts.energy + more.energy,
                facility: parts.facility + more.facility,
                maintenance: parts.maintenance + more.maintenance,
                network: parts.network + more.network,
                storage: parts.storage + more.storage,
            };
        }
        let Breakdown {
            gpus,
            energy,
            facility,
            maintenance,
            network,
            storage,
        } = parts;
        let usd_per_hour = parts.total();
        out.usd_per_hour = usd_per_hour;
        out.usd_per_hour_gpus = gpus;
        out.usd_per_hour_energy = energy;
        out.usd_per_hour_facility = facility;
        out.usd_per_hour_maintenance = maintenance;
        out.usd_per_hour_network = network;
        out.usd_per_hour_storage = storage;
        out.usd_per_month = usd_per_hour * HOURS_PER_MONTH;
        out.usd_per_mtok = cost::per_mtok(usd_per_hour, self.served_tokens_per_s);
        out.tco_usd = usd_per_hour * HOURS_PER_YEAR * econ.years;
        out.usd_per_month_autoscaling = if plan.demand && payment.ownership() == Ownership::Cloud {
            let rented = Footprint {
                gpus: self.autoscaled_gpus[0],
                ..self.footprint
            };
            let prefill = self.prefill.map_or(0.0, |(platform, footprint)| {
                let rented = Footprint {
                    gpus: self.autoscaled_gpus[1],
                    ..footprint
                };
                let prices = &ctx.platforms[platform as usize].prices;
                cost::usd_per_hour(payment, &rented, prices, econ).total()
            });
            (cost::usd_per_hour(payment, &rented, prices, econ).total() + prefill) * HOURS_PER_MONTH
        } else {
            f64::NAN
        };
    }
}

/// The cluster of `gpus` GPUs, every phase served; everything but the price.
fn at_cluster<'a>(
    ctx: &'a Context,
    p: &Point,
    gpus: u32,
    placements: &mut PlacementCache<'a>,
) -> Result<Unpriced, Estimate> {
    let platform = &ctx.platforms[p.platform as usize];
    let rack = &platform.rack;
    let plan = &ctx.plan;
    let power = &platform.power;
    let (racks, servers) = racks_of(rack, gpus);
    let sized = |e: Estimate| Estimate {
        racks,
        servers,
        ..e
    };
    let mut sums = Sums::default();
    let mut first: Option<Estimate> = None;
    let (mut utilization, mut users_supported) = (0.0_f64, f64::INFINITY);
    let (mut demand_met, mut meets_slo) = (true, true);
    let mut storage_servers = 0.0_f64;
    let autoscale = plan.demand
        && plan
            .ownership
            .iter()
            .any(|p| p.ownership() == Ownership::Cloud);
    // With the prefill pool on a GPU of its own: its platform, the decode and prefill pools.
    let mut split: Option<(u32, Pool, Pool)> = None;
    let mut prefill_gpus_per_instance = 0;
    let (phases, timed, hints) = placements.get(ctx, p, gpus);
    for (i, ((phase, inst), hint)) in ctx
        .phases
        .iter()
        .zip(phases)
        .zip(hints.iter_mut())
        .enumerate()
    {
        let inst = inst.as_ref().map_err(|e| sized(*e))?;
        let l = inst.layout;
        if power.over_budget(1.0) {
            return Err(sized(Estimate::with_layout(
                Reason::RackPowerOverBudget,
                &l,
            )));
        }
        let batched = BatchedInstance::new(inst, p.batch).map_err(sized)?;
        let instances = if inst.other_hardware() {
            instances_in_racks(ctx, &batched, racks)
        } else {
            instances_on(rack, &batched, gpus)
        };
        if instances == 0 {
            return Err(sized(Estimate::with_layout(
                Reason::InstanceExceedsCluster,
                &l,
            )));
        }
        if inst.other_hardware() {
            // The prefill pool's whole racks of its preset; the decode preset has the rest.
            let facts = &ctx.platforms[inst.prefill_platform as usize];
            if facts.power.over_budget(1.0) {
                return Err(sized(Estimate::with_layout(
                    Reason::RackPowerOverBudget,
                    &l,
                )));
            }
            let prefill_racks = pool_racks(ctx, &batched, instances).0 as u32;
            let pool = |rack: &Rack, racks: u32| Pool {
                servers: racks * rack.servers_per_rack,
                gpus: racks * rack.gpus_per_rack(),
            };
            let prefill = pool(&facts.rack, prefill_racks);
            let decode = pool(rack, racks - prefill_racks);
            split = Some((inst.prefill_platform, decode, prefill));
            prefill_gpus_per_instance = inst.prefill_layout.gpus_per_instance;
        }
        let cluster_gpus = match split {
            Some((_, decode, prefill)) => decode.gpus + prefill.gpus,
            None => l.gpus,
        };
        let mut e = batched.estimate(instances, cluster_gpus);
        if !e.feasible() {
            return Err(sized(e));
        }
        if let Some((_, _, prefill)) = split {
            e.prefill_gpus = prefill.gpus;
        }
        let pools = batched
            .pools(instances)
            .map_err(|r| sized(Estimate::with_layout(r, &l)))?;
        let w = phase.weight;
        let s = &plan.settings;
        let fresh;
        let sized_here = timed.for_point(p, gpus, i);
        // A full aggregated instance without demand always runs its batch: its step alone, and
        // its steady state is one instance's at every rack count (memo module docs).
        let full_batch_only = sized_here.is_none() && !plan.demand && pools.prefill == 0;
        let (speeds, fewest) = match sized_here {
            Some((speeds, fewest)) => (speeds, Some(fewest)),
            None => {
                fresh = if full_batch_only {
                    Speeds::full_batch_only(&batched.decode, batched.batch, inst.output_tokens)
                } else {
                    sizing::speeds(&batched)
                };
                (&fresh, None)
            }
        };
        let served: Option<Served> = plan.demand.then(|| {
            sizing::serve(
                &batched,
                speeds,
                pools,
                &phase.load,
                s,
                &platform.tiers,
                false,
            )
        });
        let steady = match &served {
            Some(sv) => sv.steady,
            None if full_batch_only => {
                let alone = || steady::full_instance(&batched, speeds, Pools::ONE, s);
                let (isl, osl) = (inst.input_tokens, inst.output_tokens);
                match inst.memo {
                    Some(id) => memo::full_steady(id, batched.batch, isl, osl, alone),
                    None => alone(),
                }
                .of_pool(pools.decode)
            }
            None => steady::full_instance(&batched, speeds, pools, s),
        };
        let (activity, served_tokens_per_s) = match &served {
            // GPU power is linear in activity, so the mean load gives the mean power.
            Some(sv) => (
                sv.served_requests_per_s / sv.capacity_requests_per_s,
                sv.served_requests_per_s * inst.output_tokens,
            ),
            None => (1.0, e.output_tokens_per_s),
        };
        if let Some(sv) = &served {
            utilization = utilization.max(sv.utilization);
            users_supported = users_supported.min(sv.users_supported);
            demand_met &= sv.demand_met;
            storage_servers = storage_servers.max(sv.offload.storage_servers);
            sums.kv_host_gb += w * sv.offload.host_bytes / 1e9;
            sums.kv_storage_gb += w * sv.offload.storage_bytes / 1e9;
            sums.kv_reload_ms += w * sv.offload.reload_mean_s() * 1e3;
            sums.demand_requests_per_s += w * sv.steady.requests_per_s;
            if let Some((usd_in, usd_out)) = plan.api_usd_per_mtok {
                sums.api_usd_per_hour += w
                    * sv.mean_requests_per_s
                    * 3600.0
                    * (inst.input_tokens * usd_in + inst.output_tokens * usd_out)
                    / 1e6;
            }
        }
        if autoscale {
            let fewest = fewest.unwrap_or_else(|| {
                let narrowest = l
                    .gpus_per_instance
                    .min(inst.prefill_layout.gpus_per_instance);
                let max_instances = u32::MAX / narrowest;
                let (tiers, guess) = (&platform.tiers, *hint);
                let at = |slo| {
                    let load = &phase.load;
                    sizing::min_instances(
                        &batched,
                        speeds,
                        load,
                        s,
                        tiers,
                        max_instances,
                        slo,
                        guess,
                    )
                };
                let fewest = at(s.slo.is_set()).or_else(|_| at(false)).ok();
                *hint = fewest.or(*hint);
                fewest
            });
            let (decode_gpus, prefill_gpus) = match fewest {
                // Each pool's servers on its own preset.
                Some(n) if inst.other_hardware() => {
                    let (decode, prefill) = pool_servers(ctx, &batched, n);
                    let per_server = |platform: u32| {
                        f64::from(ctx.platforms[platform as usize].rack.gpus_per_server)
                    };
                    (
                        decode as f64 * per_server(inst.platform),
                        prefill as f64 * per_server(inst.prefill_platform),
                    )
                }
                Some(n) => {
                    let units = units_of(rack, &batched, n);
                    ((units * u64::from(rack.unit_gpus())) as f64, 0.0)
                }
                None => (f64::NAN, f64::NAN),
            };
            let active = w * phase.load.active_ratio;
            sums.autoscaled_gpus += active * decode_gpus;
            sums.autoscaled_prefill_gpus += active * prefill_gpus;
        }
        let requests_per_s = match &served {
            Some(sv) => sv.served_requests_per_s,
            None => batched.capacity_requests_per_s(pools),
        };
        let load = network::load(
            inst,
            &inst.decode_shape(batched.batch),
            batched.batch,
            pools.decode + pools.prefill,
            pools.prefill,
            requests_per_s,
            &served.map(|sv| sv.offload).unwrap_or_default(),
        );
        sums.network = sums.network.plus(load.times(w));
        meets_slo &= s.slo.met(steady.ttft_s[2], steady.tpot_p99_s);
        sums.add(w, &e, &steady);
        sums.served_tokens_per_s += w * served_tokens_per_s;
        let (decode_gpus, prefill_gpus) = batched.pool_gpus(pools);
        match split {
            // Each pool's servers at its own preset's power.
            Some((platform, decode, prefill)) => {
                let prefill_power = &ctx.platforms[platform as usize].power;
                let kw = |power: &power::PowerFacts, pool: Pool, active: u32| {
                    power.cluster_kw(f64::from(pool.servers), f64::from(active), activity)
                };
                sums.it_kw += w * kw(power, decode, decode_gpus);
                sums.prefill_it_kw += w * kw(prefill_power, prefill, prefill_gpus);
            }
            None => {
                let active_gpus = f64::from(decode_gpus + prefill_gpus);
                sums.it_kw += w * power.cluster_kw(f64::from(servers), active_gpus, activity);
            }
        }
        first = Some(match first {
            // Memory columns report the most demanding phase.
            Some(f) if f.hbm_used_gb_per_gpu >= e.hbm_used_gb_per_gpu => f,
            _ => e,
        });
    }
    let e = first.expect("a sweep has at least one phase");
    let storage_kw = storage_servers * plan.economics.storage_power_kw_per_server;
    let it_kw = sums.it_kw + sums.prefill_it_kw + storage_kw;
    // The decode pool's (or the whole cluster's) footprint, with the storage servers.
    let (decode, servers) = match split {
        Some((_, decode, prefill)) => (decode, decode.servers + prefill.servers),
        None => (Pool { servers, gpus }, servers),
    };
    let servers_f = f64::from(decode.servers);
    let footprint = Footprint {
        gpus: f64::from(e.gpus - split.map_or(0, |(_, _, prefill)| prefill.gpus)),
        racks: servers_f / f64::from(rack.servers_per_rack),
        storage_servers,
        it_kw: sums.it_kw + storage_kw,
        provisioned_it_kw: power.cluster_kw(servers_f, f64::from(decode.gpus), 1.0) + storage_kw,
        servers_per_instance: servers_per_instance(e.gpus_per_instance, rack),
    };
    let prefill = split.map(|(platform, _, pool)| {
        let facts = &ctx.platforms[platform as usize];
        let servers = f64::from(pool.servers);
        let footprint = Footprint {
            gpus: f64::from(pool.gpus),
            racks: servers / f64::from(facts.rack.servers_per_rack),
            storage_servers: 0.0,
            it_kw: sums.prefill_it_kw,
            provisioned_it_kw: facts.power.cluster_kw(servers, f64::from(pool.gpus), 1.0),
            servers_per_instance: servers_per_instance(prefill_gpus_per_instance, &facts.rack),
        };
        (platform, footprint)
    });
    let econ = &plan.economics;
    let tokens = sums.served_tokens_per_s;
    let facility_kw = it_kw * econ.pue;
    let demand = |v: f64| if plan.demand { v } else { f64::NAN };
    let net = &sums.network;
    let estimate = Estimate {
        racks,
        servers,
        ttft_ms: sums.ttft_ms,
        ttft_idle_ms: sums.ttft_idle_ms,
        kv_transfer_ms: sums.kv_transfer_ms,
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
        occupancy_per_instance: sums.occupancy_per_instance,
        tpot_at_load_ms: sums.tpot_at_load_ms,
        tokens_per_s_per_user_at_load: sums.tokens_per_s_per_user_at_load,
        e2e_p50_ms: sums.e2e_ms[0],
        e2e_p99_ms: sums.e2e_ms[1],
        queue_wait_p99_ms: sums.queue_wait_p99_ms,
        output_tokens_per_month: tokens * HOURS_PER_MONTH * 3600.0,
        kv_host_gb: demand(sums.kv_host_gb),
        kv_storage_gb: demand(sums.kv_storage_gb),
        kv_reload_ms: demand(sums.kv_reload_ms),
        storage_servers: demand(storage_servers),
        scaleup_gb_per_s_per_gpu: net.per_s.scaleup_bytes / 1e9,
        scaleup_messages_per_s_per_gpu: net.per_s.scaleup_messages,
        scaleup_util: net.per_s.scaleup_bytes / (rack.scaleup_gbps_per_gpu * 1e9),
        scaleout_gb_per_s_per_gpu: net.per_s.scaleout_bytes / 1e9,
        scaleout_messages_per_s_per_gpu: net.per_s.scaleout_messages,
        scaleout_util: net.per_s.scaleout_bytes / (rack.scaleout_gbps_per_gpu * 1e9),
        kv_transfer_gb_per_s_per_gpu: net.kv_transfer_bytes_per_s / 1e9,
        kv_reload_gb_per_s_per_gpu: demand(net.kv_reload_bytes_per_s / 1e9),
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
        prefill,
        served_tokens_per_s: tokens,
        autoscaled_gpus: if autoscale {
            [sums.autoscaled_gpus, sums.autoscaled_prefill_gpus]
        } else {
            [f64::NAN; 2]
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::parse;
    use crate::vocab::Payment;
    use std::path::Path;

    /// The inference sweep of TOML `text`, of at most `max_configs` configurations.
    fn inference(text: &str, max_configs: u64) -> crate::spec::Spec {
        parse(Path::new("t.toml"), text, max_configs)
            .expect("test sweep parses")
            .into_inference()
            .expect("an inference sweep")
    }

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
        inference(&text, 1_000_000)
    }

    mod ranges {
        use super::*;
        use crate::catalog::Catalog;
        use crate::limits::{MAX_BATCH, MAX_DEGREE, MAX_RACKS};
        use proptest::prelude::*;

        /// Any value in 1..=max, the ends most often (where products overflowed).
        fn count(max: u32) -> impl Strategy<Value = u32> {
            prop_oneof![Just(1), Just(max), Just(max - 1), 1..=max]
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 4096, ..ProptestConfig::default() })]

            /// Over the whole ranges a serving spec accepts, on every built-in rack and model,
            /// the counts of a row are the exact products (in u64 here), never wrapped: GPUs
            /// and servers of the racks, and instances that fit them.
            #[test]
            fn serving_counts_never_wrap(
                racks in count(MAX_RACKS), tp in count(MAX_DEGREE), pp in count(MAX_DEGREE),
                ep in count(MAX_DEGREE), batch in count(MAX_BATCH),
                rack in 0..Catalog::builtin().unwrap().racks.len(),
                model in 0..Catalog::builtin().unwrap().models.len(),
            ) {
                let c = Catalog::builtin().unwrap();
                let (rack, model) = (&c.racks[rack], &c.models[model]);
                let text = format!(
                    "[sweep]\nname = \"t\"\n[workload]\nmodel = \"{}\"\ninput_tokens = 1024\noutput_tokens = 256\n[grid]\nhardware = [\"{}\"]\nrack = [\"{}\"]\nracks = [{racks}]\ntp = [{tp}]\npp = [{pp}]\nep = [{ep}]\nbatch = [{batch}]\n",
                    model.id, rack.gpu, rack.id
                );
                let spec = match parse(Path::new("t.toml"), &text, 1) {
                    Ok(spec) => spec.into_inference().unwrap(),
                    Err(e) => {
                        // Only a model without a vocabulary is refused.
                        prop_assert!(model.vocab.is_none(), "{}", e.message);
                        return Ok(());
                    }
                };
                let ctx = spec.context();
                let e = evaluate(&ctx, &spec.grid.point(0));
                let rack = &spec.header.catalog.racks[spec.grid.platform[0].rack];
                let gpus = u64::from(racks) * u64::from(rack.gpus_per_rack());
                prop_assert_eq!(u64::from(e.gpus), gpus);
                prop_assert_eq!(u64::from(e.racks), u64::from(racks));
                prop_assert_eq!(
                    u64::from(e.servers),
                    u64::from(racks) * u64::from(rack.servers_per_rack)
                );
                if e.gpus_per_instance > 0 {
                    prop_assert_eq!(
                        u64::from(e.gpus_per_instance),
                        u64::from(tp.max(ep)) * u64::from(pp)
                    );
                    prop_assert!(
                        u64::from(e.instances) * u64::from(e.gpus_per_instance) <= gpus
                    );
                }
            }
        }
    }

    /// The smallest cluster (in sizing units) meeting the demand (and the SLOs, when any count
    /// does), by evaluating every count; returns its GPUs.
    fn brute_force(ctx: &Context, p: &Point, limit: u32) -> Option<u32> {
        let unit = ctx.platforms[p.platform as usize].rack.unit_gpus();
        let at = |units: u32| at_cluster(ctx, p, units * unit, &mut PlacementCache::default());
        let first = |slo: bool| {
            (1..=limit).find(|&units| {
                at(units).is_ok_and(|u| {
                    let e = u.estimate;
                    e.demand_met == Some(true) && (!slo || e.meets_slo != Some(false))
                })
            })
        };
        first(true)
            .or_else(|| first(false))
            .map(|units| units * unit)
    }

    /// `racks = "auto"` equals the smallest feasible server count found by brute force, and its
    /// racks hold those servers.
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
                let expected = brute_force(&ctx, &p, e.servers + 3);
                assert_eq!(Some(e.gpus), expected, "{demand} / {slo}: {p:?}");
                assert_eq!(e.racks, e.servers.div_ceil(4), "{p:?}");
            }
            assert!(sized > 0, "{demand}: nothing sized");
        }
    }

    /// A closed population on disaggregated pools can fail with more instances than the fewest
    /// that serve it ([`sizing::more_can_fail`]), and a cluster runs every instance its servers
    /// hold: `racks = "auto"` meets the demand at every user count with the instances its
    /// servers hold (before `auto_gpus` checked that count, 8 of these 1,656 sized rows missed
    /// it, by up to 2.3 %, and 6 with the kernel surfaces of `f57af92`), and at the counts where
    /// rows missed it it equals brute force.
    #[test]
    fn auto_racks_serve_the_users_with_every_instance_they_hold() {
        let mut sized = 0;
        for users in (500..12_000).step_by(250) {
            let spec = sweep(&format!("concurrent_users = {users}"), "");
            let ctx = spec.context();
            for (_, p) in spec.grid.range(0, spec.grid.len()) {
                let e = evaluate(&ctx, &p);
                if !e.feasible() {
                    continue;
                }
                sized += 1;
                assert_eq!(e.demand_met, Some(true), "{users} users: {p:?} {e:?}");
                if matches!(users, 750 | 5500 | 8250 | 9500) {
                    let expected = brute_force(&ctx, &p, e.servers + 3);
                    assert_eq!(Some(e.gpus), expected, "{users} users: {p:?}");
                }
            }
        }
        assert!(sized > 1500, "{sized}");
    }

    /// Demands (and SLOs) under which the caches are checked: users with an SLO, and a request
    /// rate without one.
    const SIZED_CASES: [(&str, &str); 2] = [
        ("concurrent_users = 3000", "ttft_p99_ms = 300"),
        ("requests_per_s = 40", ""),
    ];

    /// Evaluating the grid in order with one worker's caches (a placement per batch run, the
    /// unpriced estimate per ownership run, the timed steps) gives every point exactly what a
    /// fresh evaluation gives: the caches only skip work.
    #[test]
    fn cached_evaluation_equals_fresh_evaluation() {
        for (demand, slo) in SIZED_CASES {
            let spec = sweep(demand, slo);
            let ctx = spec.context();
            let mut placements = PlacementCache::default();
            placements.in_scope(Scope::new());
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

    /// The worker's tables of timed steps and of full instances' steady states (`memo`) serve
    /// points at other rack counts, pipeline placements and batches exactly as fresh evaluations
    /// would: deepseek-v3 under measured kernel surfaces at 1 to 4 racks. Most steps and steady
    /// states are found there rather than computed.
    #[test]
    fn steps_timed_once_equal_steps_timed_afresh() {
        let text = r#"
[sweep]
name = "t"

[workload]
model = "deepseek-v3"
input_tokens = 2048
output_tokens = 512

[grid]
hardware = ["h200-sxm", "b200", "gb200-nvl72"]
racks = { from = 1, to = 4, step = 1 }
tp = [4, 8]
pp = [1, 2, 4]
ep = [1, 8]
batch = [1, 64, 2048]
weight_dtype = ["fp8"]
kv_dtype = ["bf16", "fp8"]
ownership = ["cloud", "owned"]
"#;
        let spec = inference(text, 1_000_000);
        let ctx = spec.context();
        let mut placements = PlacementCache::default();
        placements.in_scope(Scope::new());
        let (timed_before, found_before) = crate::perf::memo::counts();
        let (computed_before, reused_before) = crate::perf::memo::steady_counts();
        let mut feasible = 0;
        for (_, p) in spec.grid.range(0, spec.grid.len()) {
            let memoized = evaluate_with(&ctx, &p, &mut placements);
            let fresh = evaluate(&ctx, &p);
            assert_eq!(format!("{memoized:?}"), format!("{fresh:?}"), "{p:?}");
            feasible += usize::from(fresh.feasible());
        }
        let (timed, found) = crate::perf::memo::counts();
        let (timed, found) = (timed - timed_before, found - found_before);
        let (computed, reused) = crate::perf::memo::steady_counts();
        let (computed, reused) = (computed - computed_before, reused - reused_before);
        assert!(feasible > 20, "{feasible}");
        // Each full instance's steady state is computed at the first rack count that holds it
        // and found at the others (218 and 494), so the steps it times are asked for once; of
        // the rest about as many are found as timed (1,492-1,588 and 1,554-1,590, as the
        // instances' numbers fall in the index).
        assert!(reused > 2 * computed, "{computed} computed, {reused} found");
        assert!(2 * found > timed, "{timed} timed, {found} found");
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
                let mut placements = PlacementCache::default();
                let Ok(gpus) = auto_gpus(&ctx, &p, &mut placements) else {
                    continue;
                };
                handed_on += usize::from(placements.timed.for_point(&p, gpus, 0).is_some());
                let with = at_cluster(&ctx, &p, gpus, &mut placements).map(|u| u.estimate);
                placements.timed = Timed::default();
                let without = at_cluster(&ctx, &p, gpus, &mut placements).map(|u| u.estimate);
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
            let spec = inference(&text, 1000);
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
    ///
    /// Ignored since the measured kernel surfaces (issue 21): on this H100 row the p99 TTFT
    /// (234 ms) falls short of the mean TTFT without reload plus the mean reload (146 + 102 ms),
    /// so the p99's own base sits below the mean's. The mean and the p99 are built from
    /// different waits (serving.rs `ttft_mean_s` against the percentile path); to be reconciled.
    #[test]
    #[ignore = "p99 TTFT below mean TTFT + mean reload on the measured-kernel model; see doc"]
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
        let spec = inference(text, 1000);
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
        assert!(
            e.kv_reload_ms > 0.0 && e.ttft_p99_ms > e.ttft_ms + e.kv_reload_ms * 0.99,
            "{} {} {}",
            e.ttft_p99_ms,
            e.ttft_ms,
            e.kv_reload_ms
        );
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
            let Ok(batched) = BatchedInstance::new(&inst, p.batch) else {
                continue;
            };
            let speeds = sizing::speeds(&batched);
            let load = &ctx.phases[0].load;
            let tiers = &ctx.platforms[0].tiers;
            let Ok(n) =
                sizing::min_instances(&batched, &speeds, load, s, tiers, 100_000, false, None)
            else {
                continue;
            };
            let pools = batched.pools(n).unwrap();
            let served = sizing::serve(&batched, &speeds, pools, load, s, tiers, false);
            assert!(served.demand_met, "{served:?}");
            let decode = f64::from(pools.decode);
            let rate = served.steady.requests_per_s / decode;
            // 3,000 users thinking 5 s: a closed population, 3,000 / decode on each instance.
            let occ = super::super::closed::occupancy(&speeds, 3000.0 / decode, 5.0).unwrap();
            if pools.prefill == 0 {
                assert!(
                    (occ.rate_per_s - rate).abs() <= 1e-12 * rate,
                    "{occ:?} {rate}"
                );
                let sv = serving::Serving::new(&inst, &speeds, occ, s.spread()).unwrap();
                assert_eq!(served.steady.ttft_s[P99], sv.ttft_p99_s);
                assert_eq!(served.steady.ttft_s[0], sv.ttft_s(&inst, 0));
                assert_eq!(served.steady.tpot_p99_s, sv.tpot_p99_s);
                aggregated += 1;
            } else {
                // Users are away from their decode instance while prefilled: the rate is the
                // fixed point of the chain with that time added to the think time, the wait
                // for the prefill pool taken at that rate.
                let lambda = served.steady.requests_per_s;
                let ranks = f64::from(pools.prefill) * f64::from(inst.layout.attention_dp);
                let service_s =
                    f64::from(inst.layout.attention_dp) / batched.prefill_requests_per_s;
                let v = (1.0 + s.spread().prompt_cv2) / 2.0;
                let wait = crate::perf::queue::Queue::new(ranks, lambda * service_s, service_s, v)
                    .wait_mean_s();
                let away = 5.0 + batched.ttft_idle_s + wait;
                let occ = super::super::closed::occupancy(&speeds, 3000.0 / decode, away).unwrap();
                assert!(
                    (occ.rate_per_s * decode - lambda).abs() <= 1e-6 * lambda,
                    "{occ:?} {lambda}"
                );
                let held = served.steady.held_per_instance;
                assert!(
                    (held - occ.mean_held).abs() <= 1e-6 * held,
                    "{held} {occ:?}"
                );
                assert!(served.steady.ttft_s[P99] >= batched.ttft_idle_s);
                assert!(served.steady.held_per_instance < 3000.0 / decode);
                disaggregated += 1;
            }
            assert!(
                served.steady.ttft_s[0] <= served.steady.ttft_s[1]
                    && served.steady.ttft_s[1] <= served.steady.ttft_s[P99]
            );
        }
        assert!(
            aggregated > 0 && disaggregated > 0,
            "{aggregated} {disaggregated}"
        );
    }

    /// docs/model.md §12's heterogeneous row, by hand: llama-3.1-70b bf16, 1k in / 1k out, on
    /// one DGX H100 rack (4 servers of 8), decode at tp 8 and batch 64, a quarter of the
    /// instances prefilling at tp 4, no demand, cloud. Four instances fit: one prefill
    /// instance on a server of its own (4 of its 8 GPUs busy) and three decode servers; five
    /// would need a fifth server. Each prefill GPU holds 2 of the 8 KV heads: 80 layers x 1024
    /// tokens x 2 x 2 x 128 x 2 B = 83.9 MB per request over 50 GB/s x 0.80, plus 2.7 us and a
    /// 6.6 us launch: 2.1065 ms (a decode GPU receives half that). Rent is 32 GPUs x $2.99;
    /// power is 4 hosts x (10.2 - 8 x 0.7) kW, the rack's 2.4 kW of switches, 28 busy GPUs at
    /// 700 W and 4 idle at 85 W: 40.74 kW.
    #[test]
    fn heterogeneous_pools_by_hand() {
        let c = crate::catalog::Catalog::builtin().unwrap();
        let (ctx, p) = crate::perf::tests::point_on(&c, "h100-sxm", 8, 64);
        let het = Point {
            disagg_prefill_pct: 25,
            prefill_tp: 4,
            ..p
        };
        let e = evaluate(&ctx, &het);
        assert!(e.feasible(), "{e:?}");
        assert_eq!((e.racks, e.servers, e.gpus), (1, 4, 32));
        assert_eq!((e.instances, e.prefill_instances), (4, 1));
        assert_eq!((e.prefill_gpus, e.gpus - e.prefill_gpus), (4, 28));
        let shard_bytes = 80.0 * 1024.0 * 2.0 * 2.0 * 128.0 * 2.0;
        let kv_transfer_ms = (6.6e-6 + 2.7e-6 + shard_bytes / (50e9 * 0.80)) * 1e3;
        assert!((e.kv_transfer_ms - kv_transfer_ms).abs() < 1e-12, "{e:?}");
        assert!((kv_transfer_ms - 2.1065).abs() < 1e-4);
        // The prefill pool runs the tp-4 instance: its prompt alone, and its rate.
        let prefill = super::super::instance(&ctx, &Point { tp: 4, ..p }).unwrap();
        let ttft_idle_ms = prefill.prefill_s() * 1e3 + kv_transfer_ms;
        assert!((e.ttft_idle_ms - ttft_idle_ms).abs() < 1e-9, "{e:?}");
        // Tokens: the slower pool's requests, times the answer's 1024 tokens.
        let decode_rate = 3.0 * 64.0 / (e.tpot_ms / 1e3 * 1024.0);
        let prefill_rate = prefill.prefill_requests_per_s();
        let tokens = decode_rate.min(prefill_rate) * 1024.0;
        assert!(
            (e.output_tokens_per_s - tokens).abs() < 1e-9 * tokens,
            "{e:?}"
        );
        assert!(
            (e.output_tokens_per_month - tokens * 730.0 * 3600.0).abs() < 1e-6 * tokens,
            "{e:?}"
        );
        // Both pools are priced: every GPU of the four servers.
        assert!((e.usd_per_hour - 32.0 * 2.99).abs() < 1e-9, "{e:?}");
        assert_eq!(e.usd_per_hour, e.usd_per_hour_gpus + e.usd_per_hour_storage);
        let power_kw = 4.0 * (10.2 - 8.0 * 0.7) + 2.4 + 28.0 * 0.7 + 4.0 * 0.085;
        assert!(
            (e.power_kw - power_kw).abs() < 1e-9,
            "{} {power_kw}",
            e.power_kw
        );
        assert!((power_kw - 40.74).abs() < 1e-9);
    }

    /// docs/model.md §12's row with the prefill pool on a GPU of its own, by hand: llama-3.1-70b
    /// bf16, 1k in / 1k out, decode on DGX H200 racks at tp 4 and batch 64, a quarter of the
    /// instances prefilling on H100 (its default DGX H100 rack), tp 4, two racks, no demand.
    /// Eleven instances fit: 8 decode instances fill one H200 rack (4 servers) and 3 prefill
    /// instances take 2 servers of one H100 rack; twelve would make 9 decode instances, a
    /// second H200 rack. The KV moves from tp 4 to tp 4: 83.9 MB per GPU over 50 GB/s x 0.80
    /// either side, 2.1065 ms. Rent is 32 x $3.50 + 32 x $2.99 = $207.68 an hour; power is the
    /// H200 rack's 4 x (10.2 - 8 x 0.7) + 2.4 + 32 x 0.7 = 43.2 kW and the H100 rack's 4 x 4.6 +
    /// 2.4 + 12 x 0.7 + 20 x 0.085 = 30.9 kW.
    #[test]
    fn prefill_on_other_hardware_by_hand() {
        let spec = |prefill: &str, ownership: &str| {
            let text = format!(
                "[sweep]\nname = \"t\"\n[workload]\nmodel = \"llama-3.1-70b\"\ninput_tokens = 1024\noutput_tokens = 1024\n[grid]\nhardware = [\"h200-sxm\"]\nengine = [\"trtllm\"]\nracks = [2]\ntp = [4]\ndisagg_prefill_pct = [25]\nprefill_hardware = [\"{prefill}\"]\nbatch = [64]\nownership = [\"{ownership}\"]\n"
            );
            inference(&text, 1)
        };
        let s = spec("h100-sxm", "cloud");
        let ctx = s.context();
        let e = evaluate(&ctx, &s.grid.point(0));
        assert!(e.feasible(), "{e:?}");
        assert_eq!((e.racks, e.servers, e.gpus, e.prefill_gpus), (2, 8, 64, 32));
        assert_eq!((e.instances, e.prefill_instances), (11, 3));
        let shard_bytes = 80.0 * 1024.0 * 2.0 * 2.0 * 128.0 * 2.0;
        let kv_transfer_ms = (6.6e-6 + 2.7e-6 + shard_bytes / (50e9 * 0.80)) * 1e3;
        assert!((e.kv_transfer_ms - kv_transfer_ms).abs() < 1e-12, "{e:?}");
        // The prefill pool runs the H100's tp-4 instance: its prompt, and its rate.
        let c = crate::catalog::Catalog::builtin().unwrap();
        let (h100, p) = crate::perf::tests::point_on(&c, "h100-sxm", 4, 64);
        let prefill = super::super::instance(&h100, &p).unwrap();
        let ttft_idle_ms = prefill.prefill_s() * 1e3 + kv_transfer_ms;
        assert!((e.ttft_idle_ms - ttft_idle_ms).abs() < 1e-9, "{e:?}");
        let decode_rate = 8.0 * 64.0 / (e.tpot_ms / 1e3 * 1024.0);
        let tokens = decode_rate.min(3.0 * prefill.prefill_requests_per_s()) * 1024.0;
        assert!(
            (e.output_tokens_per_s - tokens).abs() < 1e-6 * tokens,
            "{e:?}"
        );
        assert!(
            (e.usd_per_hour - (32.0 * 3.50 + 32.0 * 2.99)).abs() < 1e-9,
            "{e:?}"
        );
        assert!((e.usd_per_hour - 207.68).abs() < 1e-9);
        let decode_kw = 4.0 * (10.2 - 8.0 * 0.7) + 2.4 + 32.0 * 0.7;
        let prefill_kw = 4.0 * (10.2 - 8.0 * 0.7) + 2.4 + 12.0 * 0.7 + 20.0 * 0.085;
        assert!(
            (e.power_kw - (decode_kw + prefill_kw)).abs() < 1e-9,
            "{e:?}"
        );
        assert!((decode_kw - 43.2).abs() < 1e-9 && (prefill_kw - 30.9).abs() < 1e-9);
        // Owned, each pool is priced as its own hardware: the sum of two one-rack clusters,
        // each the aggregated row of its GPU on one rack priced at its power.
        let owned = {
            let s = spec("h100-sxm", "owned");
            evaluate(&s.context(), &s.grid.point(0))
        };
        let econ = &ctx.plan.economics;
        let mut usd = 0.0;
        for (gpu, kw) in [("h200-sxm", decode_kw), ("h100-sxm", prefill_kw)] {
            let (ctx, p) = crate::perf::tests::point_on(&c, gpu, 4, 64);
            let rack = Footprint {
                gpus: 32.0,
                racks: 1.0,
                storage_servers: 0.0,
                it_kw: kw,
                // Both racks at full load: 700 W GPUs.
                provisioned_it_kw: decode_kw,
                servers_per_instance: 1.0,
            };
            let prices = &ctx.platforms[p.platform as usize].prices;
            usd += cost::usd_per_hour(Payment::Owned, &rack, prices, econ).total();
        }
        assert!(
            (owned.usd_per_hour - usd).abs() < 1e-9 * usd,
            "{owned:?} {usd}"
        );
        // Aggregated rows that name a prefill GPU say there is no pool; an engine the prefill
        // GPU does not run says so.
        let s = spec("b200", "cloud");
        let aggregated = Point {
            disagg_prefill_pct: 0,
            ..s.grid.point(0)
        };
        let e = evaluate(&s.context(), &aggregated);
        assert_eq!(e.reason, Some(Reason::PrefillPoolNeedsDisagg));
        let s = spec("mi300x", "cloud");
        let e = evaluate(&s.context(), &s.grid.point(0));
        assert_eq!(e.reason, Some(Reason::PrefillHardwareUnsupported));
    }

    /// On every row with the prefill pool on a GPU of its own: each pool on whole racks of its
    /// own preset (the prefill pool's racks the fewest that hold its instances, the decode
    /// preset the rest), power per pool at each preset's figures, cloud rent at each GPU's
    /// price, the cost parts summing to the cost.
    #[test]
    fn pools_on_two_presets_conserve_racks_power_and_cost() {
        let text = r#"
[sweep]
name = "t"

[workload]
model = "llama-3.1-70b"
input_tokens = 2048
output_tokens = 512

[grid]
hardware = ["h200-sxm"]
racks = [2, 3, 5]
tp = [2, 4, 8]
disagg_prefill_pct = [25, 50]
prefill_tp = [0, 8]
prefill_hardware = ["h100-sxm", "b200", "gb200-nvl72"]
batch = [32, 256]
ownership = ["cloud", "owned"]
"#;
        let spec = inference(text, 1_000_000);
        let ctx = spec.context();
        let decode = &ctx.platforms[0];
        let mut checked = 0;
        for (_, p) in spec.grid.range(0, spec.grid.len()) {
            let e = evaluate(&ctx, &p);
            if !e.feasible() {
                continue;
            }
            let prefill = &ctx.platforms[ctx.prefill_platform[p.prefill_hardware as usize]
                .expect("a GPU of its own") as usize];
            let prefill_tp = if p.prefill_tp == 0 {
                p.tp
            } else {
                p.prefill_tp
            };
            let prefill_racks = e.prefill_gpus / prefill.rack.gpus_per_rack();
            assert_eq!(e.prefill_gpus, prefill_racks * prefill.rack.gpus_per_rack());
            let decode_racks = p.racks - prefill_racks;
            assert_eq!(
                e.gpus - e.prefill_gpus,
                decode_racks * decode.rack.gpus_per_rack()
            );
            let prefill_servers = prefill_racks * prefill.rack.servers_per_rack;
            let decode_servers = decode_racks * decode.rack.servers_per_rack;
            assert_eq!(e.servers, decode_servers + prefill_servers, "{p:?} {e:?}");
            // The prefill pool's racks are the fewest that hold its instances.
            let prefill_gpus = e.prefill_instances * prefill_tp;
            assert!(prefill_gpus <= e.prefill_gpus, "{p:?} {e:?}");
            assert!(prefill_gpus > e.prefill_gpus - prefill.rack.gpus_per_rack());
            let decode_gpus = (e.instances - e.prefill_instances) * p.tp;
            let power_kw =
                decode
                    .power
                    .cluster_kw(f64::from(decode_servers), f64::from(decode_gpus), 1.0)
                    + prefill.power.cluster_kw(
                        f64::from(prefill_servers),
                        f64::from(prefill_gpus),
                        1.0,
                    );
            assert!(
                (e.power_kw - power_kw).abs() <= 1e-12 * power_kw,
                "{p:?} {e:?}"
            );
            let parts = e.usd_per_hour_gpus
                + e.usd_per_hour_energy
                + e.usd_per_hour_facility
                + e.usd_per_hour_maintenance
                + e.usd_per_hour_network
                + e.usd_per_hour_storage;
            assert!((parts - e.usd_per_hour).abs() <= 1e-12 * e.usd_per_hour);
            if let Payment::Cloud(pricing) = ctx.plan.ownership[p.ownership as usize] {
                let at = pricing as usize;
                let rent = f64::from(e.gpus - e.prefill_gpus) * decode.prices.usd_per_gpu_hour[at]
                    + f64::from(e.prefill_gpus) * prefill.prices.usd_per_gpu_hour[at];
                assert!((e.usd_per_hour - rent).abs() <= 1e-12 * rent, "{p:?} {e:?}");
            }
            checked += 1;
        }
        assert!(checked > 100, "{checked}");
    }

    /// `racks = "auto"` with the prefill pool on a GPU of its own takes the fewest racks: the
    /// row is the listed-racks row at its count, it meets the demand with every instance its
    /// racks hold (a closed population on such pools can fail with more instances than the
    /// fewest that serve it), and one rack fewer does not meet the demand.
    #[test]
    fn auto_racks_with_a_prefill_gpu_of_its_own_are_the_fewest() {
        let mut checked = 0;
        for users in (1000..12000).step_by(500) {
            checked += fewest_auto_racks_checked(users);
        }
        assert!(checked > 400, "{checked}");
    }

    fn fewest_auto_racks_checked(users: u32) -> usize {
        let text = r#"
[sweep]
name = "t"

[workload]
model = "llama-3.1-70b"
input_tokens = 2048
output_tokens = 512

[workload.demand]
concurrent_users = USERS

[grid]
hardware = ["h200-sxm"]
racks = "auto"
tp = [2, 4, 8]
disagg_prefill_pct = [25, 50]
prefill_hardware = ["h100-sxm", "b200", "gb200-nvl72"]
batch = [32, 128]
ownership = ["cloud", "owned"]
"#;
        let text = text.replace("USERS", &users.to_string());
        let spec = inference(&text, 1_000_000);
        let ctx = spec.context();
        let mut checked = 0;
        for (_, p) in spec.grid.range(0, spec.grid.len()) {
            let e = evaluate(&ctx, &p);
            if !e.feasible() {
                continue;
            }
            assert_eq!(e.demand_met, Some(true), "{p:?} {e:?}");
            let listed = evaluate(
                &ctx,
                &Point {
                    racks: e.racks,
                    ..p
                },
            );
            assert_eq!(
                (
                    listed.gpus,
                    listed.prefill_gpus,
                    listed.instances,
                    listed.servers
                ),
                (e.gpus, e.prefill_gpus, e.instances, e.servers),
                "{p:?}"
            );
            assert_eq!(listed.usd_per_hour, e.usd_per_hour, "{p:?}");
            let fewer = evaluate(
                &ctx,
                &Point {
                    racks: e.racks - 1,
                    ..p
                },
            );
            assert_ne!(fewer.demand_met, Some(true), "{p:?} {fewer:?}");
            checked += 1;
        }
        checked
    }

    /// On every row of a sized sweep with prefill pools of their own tp: the GPUs are the two
    /// pools' (the prefill instances' and the rest), the servers hold both pools' units, the
    /// demand's tokens are served, the cost parts sum to the cost, and aggregated rows that
    /// name a prefill tp say there is no pool.
    #[test]
    fn heterogeneous_rows_conserve_gpus_tokens_and_cost() {
        let text = r#"
[sweep]
name = "t"

[workload]
model = "llama-3.1-8b"
input_tokens = 4096
output_tokens = 256

[workload.demand]
requests_per_s = 40

[grid]
hardware = ["h100-sxm"]
racks = "auto"
tp = [1, 2, 8]
disagg_prefill_pct = [0, 25, 50]
prefill_tp = [0, 1, 2, 4]
batch = [32, 256]
ownership = ["cloud", "owned"]
"#;
        let spec = inference(text, 1_000_000);
        let ctx = spec.context();
        let rack = &ctx.platforms[0].rack;
        let (mut heterogeneous, mut refused) = (0, 0);
        for (_, p) in spec.grid.range(0, spec.grid.len()) {
            let e = evaluate(&ctx, &p);
            if p.disagg_prefill_pct == 0 && p.prefill_tp != 0 {
                assert_eq!(e.reason, Some(Reason::PrefillPoolNeedsDisagg));
                refused += 1;
                continue;
            }
            if !e.feasible() {
                continue;
            }
            let prefill_tp = if p.prefill_tp == 0 {
                p.tp
            } else {
                p.prefill_tp
            };
            let decode_instances = e.instances - e.prefill_instances;
            assert_eq!(e.prefill_gpus, e.prefill_instances * prefill_tp, "{p:?}");
            assert!(
                e.gpus - e.prefill_gpus >= decode_instances * p.tp,
                "{p:?} {e:?}"
            );
            if p.disagg_prefill_pct > 0 && prefill_tp != p.tp {
                heterogeneous += 1;
                let units = units_for(rack, p.tp, 1, decode_instances)
                    + units_for(rack, prefill_tp, 1, e.prefill_instances);
                assert_eq!(u64::from(e.servers), units, "{p:?} {e:?}");
                assert!(e.kv_transfer_ms > 0.0 && e.ttft_idle_ms > e.kv_transfer_ms);
            }
            let parts = e.usd_per_hour_gpus
                + e.usd_per_hour_energy
                + e.usd_per_hour_facility
                + e.usd_per_hour_maintenance
                + e.usd_per_hour_network
                + e.usd_per_hour_storage;
            assert!(
                (parts - e.usd_per_hour).abs() <= 1e-12 * e.usd_per_hour,
                "{e:?}"
            );
            if e.demand_met == Some(true) {
                let tokens = 40.0 * 256.0 * 730.0 * 3600.0;
                let served = e.output_tokens_per_month;
                assert!((served - tokens).abs() <= 1e-9 * tokens, "{p:?} {e:?}");
            }
        }
        assert!(
            heterogeneous > 20 && refused > 0,
            "{heterogeneous} {refused}"
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
            if ctx.plan.ownership[p.ownership as usize] == crate::vocab::Payment::DEFAULT {
                let gpu_hours = f64::from(e.gpus) * 2.99;
                assert!(e.usd_per_hour >= gpu_hours - 1e-9, "{e:?}");
            }
            // With a 5 s think time and 4k tokens cached... none here: no offload columns.
            assert_eq!(e.kv_storage_gb, 0.0);
        }
        assert!(checked > 0);
    }
}
