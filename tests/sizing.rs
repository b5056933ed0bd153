//! Sizing answers checked the way a planner would check them: identities that tie a row's columns
//! together (cost parts, cost per token over what is served, Little's law over a user's cycle),
//! on every row of every example sweep with a demand, and the closed-population cases by hand.

use std::path::Path;

use racksweep::columns::Row;
use racksweep::grid::Point;
use racksweep::perf::{self, Estimate};
use racksweep::spec::{self, Spec};

mod common;
use common::root;

fn load(rel: &str) -> Spec {
    spec::load(&root().join(rel), spec::DEFAULT_MAX_CONFIGS)
        .unwrap_or_else(|e| panic!("{rel}: {e}"))
        .into_inference()
        .expect("an inference sweep")
}

/// Every point of a sweep with its estimate.
fn rows(spec: &Spec) -> Vec<Row> {
    let contexts = spec.contexts();
    let mut placements = perf::PlacementCache::default();
    spec.grid
        .range(0, spec.grid.len())
        .map(|(config_id, point)| {
            let ctx = &contexts[point.workload as usize];
            Row {
                config_id,
                point,
                workload: ctx.workload,
                estimate: perf::evaluate_with(ctx, &point, &mut placements),
            }
        })
        .collect()
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs().max(1e-300)
}

/// Example sweeps whose workload sets a demand.
fn sized_sweeps() -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(root().join("sweeps"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| format!("sweeps/{}", p.file_name().unwrap().to_string_lossy()))
        .filter(|rel| load_any(rel).is_some_and(|s| s.demand()))
        .collect();
    out.sort();
    out
}

fn load_any(rel: &str) -> Option<Spec> {
    spec::load(&root().join(rel), spec::DEFAULT_MAX_CONFIGS)
        .ok()?
        .into_inference()
}

/// On every feasible row of every sized example sweep: the cost parts sum to the hourly cost, the
/// month is 730 hours of it, the cost per token is the month's cost over the month's tokens
/// served, the racks hold the servers, and a row that meets the SLOs meets them in its columns.
#[test]
fn identities_hold_on_every_sized_row() {
    let sweeps = sized_sweeps();
    assert!(sweeps.len() >= 4, "{sweeps:?}");
    for rel in sweeps {
        let spec = load(&rel);
        // The SLOs are the sweep's, the same for every workload.
        let slo = spec.workloads[0].plan.settings.slo;
        let mut checked = 0;
        for row in rows(&spec) {
            let e = row.estimate;
            if !e.feasible() {
                continue;
            }
            checked += 1;
            let parts = e.usd_per_hour_gpus
                + e.usd_per_hour_energy
                + e.usd_per_hour_facility
                + e.usd_per_hour_maintenance
                + e.usd_per_hour_network
                + e.usd_per_hour_storage;
            let at = format!("{rel} config {}", row.config_id);
            if e.usd_per_hour.is_finite() {
                assert!(close(parts, e.usd_per_hour, 1e-12), "{at}: {e:?}");
                assert!(
                    close(e.usd_per_month, 730.0 * e.usd_per_hour, 1e-12),
                    "{at}"
                );
                let per_mtok = e.usd_per_month / e.output_tokens_per_month * 1e6;
                assert!(close(e.usd_per_mtok, per_mtok, 1e-3), "{at}: {e:?}");
            }
            let rack =
                &spec.header.catalog.racks[spec.grid.platform[row.point.platform as usize].rack];
            assert_eq!(e.racks, e.servers.div_ceil(rack.servers_per_rack), "{at}");
            assert_eq!(e.gpus, e.servers * rack.gpus_per_server, "{at}");
            if e.meets_slo == Some(true) {
                if let Some(limit) = slo.tokens_per_s_per_user {
                    assert!(e.tokens_per_s_per_user_at_load >= limit, "{at}: {e:?}");
                    assert!(1e3 / e.tpot_p99_ms >= limit * (1.0 - 1e-12), "{at}");
                }
                if let Some(limit) = slo.ttft_p99_s {
                    assert!(e.ttft_p99_ms <= limit * 1e3 * (1.0 + 1e-12), "{at}");
                }
            }
            // Served tokens never exceed what the cluster can produce.
            let capacity_per_month = e.output_tokens_per_s * 730.0 * 3600.0;
            assert!(
                e.output_tokens_per_month <= capacity_per_month * (1.0 + 1e-9),
                "{at}"
            );
        }
        assert!(checked > 0, "{rel}: nothing feasible");
    }
}

/// A closed population: on every sized row of the example sweeps whose users think between
/// answers (one phase, aggregated), the users held by the decode instances and those thinking
/// (Little's law over the think time, `lambda Z`) are the population: `U = lambda (R + Z)`.
#[test]
fn users_are_conserved_on_every_closed_row() {
    let mut checked = 0;
    for rel in sized_sweeps() {
        let spec = load(&rel);
        for row in rows(&spec) {
            // Each workload its own population.
            let w = &spec.workloads[row.point.workload as usize];
            let users = w.phases[0].load.users;
            if users == 0.0 || w.phases.len() > 1 || w.phases[0].load.requests_per_s > 0.0 {
                continue;
            }
            let think_s = w.plan.settings.think_s;
            let e = row.estimate;
            if !e.feasible() || e.prefill_instances > 0 || !e.occupancy_per_instance.is_finite() {
                continue;
            }
            let decode = f64::from(e.instances - e.prefill_instances);
            let held = e.occupancy_per_instance * decode;
            let thinking = e.demand_requests_per_s * think_s;
            assert!(
                close(held + thinking, users, 1e-9),
                "{rel} config {}: {held} held + {thinking} thinking of {users}",
                row.config_id
            );
            // Users supported at the target utilization scale with it, by the same law.
            if e.demand_met == Some(true) {
                assert!(e.users_supported >= users - 1.0, "{rel} {e:?}");
            }
            checked += 1;
        }
    }
    assert!(checked > 100, "{checked}");
}

/// The case of docs/model.md, "Demand": 20,000 users of llama-3.1-70b on MI300X with no think
/// time. Every user always holds a sequence, so each decode instance runs 20,000 / instances of
/// them (below its batch on every sized row), at the TPOT the same layout has at that batch, and
/// a row meeting the SLO gives its users at least 25 tokens/s at that load.
#[test]
fn twenty_thousand_users_without_think_time() {
    let spec = load("sweeps/llama-70b-20k-users-mi300x.toml");
    let ctx = spec.context();
    let (mut sized, mut meeting) = (0, 0);
    for row in rows(&spec) {
        let e = row.estimate;
        if !e.feasible() {
            continue;
        }
        sized += 1;
        let decode = f64::from(e.instances - e.prefill_instances);
        assert!(
            close(e.occupancy_per_instance * decode, 20_000.0, 0.01),
            "{e:?}"
        );
        if e.meets_slo == Some(true) {
            meeting += 1;
            assert!(e.tokens_per_s_per_user_at_load >= 25.0, "{e:?}");
        }
        if e.occupancy_per_instance <= f64::from(row.point.batch) {
            // The same layout without demand, at the batches either side of that occupancy:
            // the TPOT at the load lies between theirs (within 5 % of the bracket).
            let tpot_at = |batch: u32| {
                let p = Point {
                    racks: e.racks,
                    batch,
                    ..row.point
                };
                let inst = perf::instance(&ctx, &p).expect("the layout places");
                let at_batch: Estimate = perf::estimate(&inst, batch);
                at_batch.tpot_ms
            };
            let occupancy = e.occupancy_per_instance;
            let (lo, hi) = (
                tpot_at((occupancy.floor() as u32).max(1)),
                tpot_at(occupancy.ceil() as u32),
            );
            assert!(
                e.tpot_at_load_ms >= lo.min(hi) * 0.95 && e.tpot_at_load_ms <= lo.max(hi) * 1.05,
                "occupancy {occupancy}: {} ms, batches either side {lo} and {hi} ms",
                e.tpot_at_load_ms
            );
        }
    }
    assert!(sized > 50 && meeting > 10, "{sized} {meeting}");
}

/// Cost per token is over the tokens served on average, not the peak: 2 billion tokens a day of
/// 1,500 in + 500 out are a million requests, 500 million output tokens a day, 15.21 billion in
/// a 730-hour month, in business hours or not.
#[test]
fn business_hours_cost_is_per_token_served() {
    let spec = load("sweeps/llama-70b-2b-tokens-per-day.toml");
    let served = 2e9 / 2000.0 * 500.0 * 730.0 / 24.0;
    let mut checked = 0;
    for row in rows(&spec) {
        let e = row.estimate;
        if e.demand_met != Some(true) {
            continue;
        }
        checked += 1;
        assert!(close(e.output_tokens_per_month, served, 1e-9), "{e:?}");
        // The busiest hour asks 4.2 times the day's mean of the cluster.
        assert!(e.utilization > 0.0);
    }
    assert!(checked > 0);
}

/// A small demand is a server, not a rack: llama-3.1-8b at a million tokens a day needs one
/// 8-GPU server on every hardware (and is far cheaper through an API).
#[test]
fn a_small_demand_sizes_one_server() {
    let spec = load("sweeps/llama-8b-1m-tokens-per-day.toml");
    let mut checked = 0;
    for row in rows(&spec) {
        let e = row.estimate;
        if e.demand_met != Some(true) || e.meets_slo != Some(true) {
            continue;
        }
        checked += 1;
        assert_eq!((e.servers, e.gpus, e.racks), (1, 8, 1), "{e:?}");
        assert!(e.usd_per_month_api < e.usd_per_month, "{e:?}");
    }
    assert!(checked > 10, "{checked}");
}

/// Autoscaling rents each phase's fewest servers for its active hours: a day at full load and a
/// night at a tenth cost less than the day's servers around the clock, and never more than the
/// dedicated cluster.
#[test]
fn autoscaling_rents_each_phase_its_servers() {
    let text = r#"
[sweep]
name = "t"

[workload]
model = "llama-3.1-8b"
input_tokens = 1024
output_tokens = 256

[workload.demand]
requests_per_s = 400

[[workload.phase]]
name = "day"
duration_h = 12

[[workload.phase]]
name = "night"
duration_h = 12
load_scale = 0.1

[grid]
hardware = ["h100-sxm"]
racks = "auto"
tp = [1]
batch = [64]
ownership = ["cloud"]
"#;
    let spec = spec::parse(Path::new("t.toml"), text, 1000)
        .unwrap()
        .into_inference()
        .unwrap();
    let e = perf::evaluate(&spec.context(), &spec.grid.point(0));
    assert!(e.feasible() && e.demand_met == Some(true), "{e:?}");
    // The night needs about a tenth of the day's servers: half the time at a tenth saves close
    // to 45 % of the dedicated bill (rounding up to whole servers costs a little).
    let saving = 1.0 - e.usd_per_month_autoscaling / e.usd_per_month;
    assert!(saving > 0.3 && saving < 0.5, "{saving}: {e:?}");
}
