//! What a cluster costs: rented (`cloud`, per GPU-hour) or owned (capex amortized, energy,
//! hosting, maintenance), per hour, per month, per million output tokens and over the horizon;
//! carbon and water per million tokens. Formulas: docs/model.md, "Cost".

use crate::catalog::{Economics, Gpu};
use crate::vocab::{Payment, Pricing};

/// Hours in a month as the cost columns count them (8,760 / 12).
pub const HOURS_PER_MONTH: f64 = 730.0;
pub const HOURS_PER_YEAR: f64 = 8760.0;

/// Per-platform prices (NaN where neither the catalog nor the sweep gives one).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prices {
    /// USD per GPU-hour at each pricing, indexed by `Pricing as usize`.
    pub usd_per_gpu_hour: [f64; Pricing::ALL.len()],
    pub capex_usd_per_gpu: f64,
}

impl Prices {
    pub fn new(gpu: &Gpu) -> Prices {
        Prices {
            usd_per_gpu_hour: Pricing::ALL.map(|p| gpu.usd_per_gpu_hour_at(p).unwrap_or(f64::NAN)),
            capex_usd_per_gpu: gpu.capex_usd_per_gpu.unwrap_or(f64::NAN),
        }
    }
}

/// What is being paid for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Footprint {
    /// GPUs of the cluster's servers.
    pub gpus: f64,
    /// The racks' share the servers take (`servers / servers_per_rack`): rack network and
    /// switches are paid in proportion.
    pub racks: f64,
    pub storage_servers: f64,
    /// IT power at the operating load, kW.
    pub it_kw: f64,
    /// IT power at full load, the capacity the facility must provide, kW.
    pub provisioned_it_kw: f64,
    /// Servers one model instance spans (at least 1): a spot reclamation of any of them stops
    /// the instance.
    pub servers_per_instance: f64,
}

/// USD per hour by what is paid for; [`Breakdown::total`] is the footprint's cost.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Breakdown {
    /// GPU servers: rent (cloud) or the hardware's straight-line amortization (owned).
    pub gpus: f64,
    /// Electricity of the GPU servers and switches at the operating load, times PUE.
    pub energy: f64,
    /// Facility capex per provisioned kW, amortized, and colocation rent.
    pub facility: f64,
    /// Yearly maintenance as a share of the GPU servers' and network's capex.
    pub maintenance: f64,
    /// Rack network capex, amortized.
    pub network: f64,
    /// KV storage servers: amortization, maintenance and electricity.
    pub storage: f64,
}

impl Breakdown {
    pub fn total(&self) -> f64 {
        self.gpus + self.energy + self.facility + self.maintenance + self.network + self.storage
    }
}

/// Servers rented per server in service on spot capacity: `1 + k x recovery / lifetime`.
///
/// Each server of a model instance spanning `k` servers is reclaimed at rate `1 / lifetime`,
/// so the instance stops at rate `k / lifetime` and serves again `recovery` later. Over one
/// cycle (up `lifetime / k`, down `recovery`) it serves a fraction `1 / (1 + k x recovery /
/// lifetime)` of the time (an alternating renewal process), so serving with the sized
/// instances on average takes that many times as many rented: the rest are standby
/// replacements, rented as the sized ones are. A mean: the SLOs hold on average, not through a
/// burst of reclamations. docs/model.md, "Cost".
pub fn spot_standby(servers_per_instance: f64, e: &Economics) -> f64 {
    1.0 + servers_per_instance * (e.spot_recovery_minutes / 60.0) / e.spot_mean_lifetime_hours
}

/// USD per hour of the footprint, by part.
///
/// Owned: hardware capex (GPU servers, network per rack share, storage servers) straight-line
/// over `years`, facility capex per provisioned kW over `facility_years`, maintenance as a
/// yearly share of hardware capex, electricity for IT power x PUE, and colocation per
/// provisioned kW. Cloud: GPU-hours at the pricing's price (on spot, with the standby servers
/// of [`spot_standby`]); KV storage servers, which no GPU price includes, at their owned cost.
pub fn usd_per_hour(payment: Payment, f: &Footprint, p: &Prices, e: &Economics) -> Breakdown {
    let storage_capex = f.storage_servers * e.storage_capex_usd_per_server;
    let storage_kw = f.storage_servers * e.storage_power_kw_per_server;
    let storage = storage_capex / (e.years * HOURS_PER_YEAR)
        + storage_capex * e.maintenance_pct_per_year / 100.0 / HOURS_PER_YEAR
        + storage_kw * e.pue * e.usd_per_kwh;
    match payment {
        Payment::Cloud(pricing) => {
            let rented = match pricing {
                Pricing::Spot => spot_standby(f.servers_per_instance, e),
                Pricing::OnDemand | Pricing::Reserved1y | Pricing::Reserved3y => 1.0,
            };
            Breakdown {
                gpus: f.gpus * rented * p.usd_per_gpu_hour[pricing as usize],
                storage,
                ..Breakdown::default()
            }
        }
        Payment::Owned => {
            let gpu_capex = f.gpus * p.capex_usd_per_gpu;
            let network_capex = f.racks * e.network_capex_usd_per_rack;
            let facility_capex = e.facility_capex_usd_per_kw * f.provisioned_it_kw;
            Breakdown {
                gpus: gpu_capex / (e.years * HOURS_PER_YEAR),
                energy: (f.it_kw - storage_kw) * e.pue * e.usd_per_kwh,
                facility: facility_capex / (e.facility_years * HOURS_PER_YEAR)
                    + e.hosting_usd_per_kw_month * f.provisioned_it_kw / HOURS_PER_MONTH,
                maintenance: (gpu_capex + network_capex) * e.maintenance_pct_per_year
                    / 100.0
                    / HOURS_PER_YEAR,
                network: network_capex / (e.years * HOURS_PER_YEAR),
                storage,
            }
        }
    }
}

/// Per million output tokens served at `tokens_per_s`: a rate per hour over the tokens of an hour.
pub fn per_mtok(per_hour: f64, tokens_per_s: f64) -> f64 {
    per_hour / (tokens_per_s * 3600.0) * 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    fn economics() -> Economics {
        Economics {
            pue: 1.25,
            usd_per_kwh: 0.08,
            kg_co2e_per_kwh: 0.4,
            water_l_per_kwh: 1.8,
            facility_capex_usd_per_kw: 10_000.0,
            facility_years: 15.0,
            hosting_usd_per_kw_month: 0.0,
            maintenance_pct_per_year: 5.0,
            network_capex_usd_per_rack: 100_000.0,
            years: 5.0,
            storage_tb_per_server: 100.0,
            storage_gbps_per_server: 50.0,
            storage_power_kw_per_server: 1.0,
            storage_capex_usd_per_server: 50_000.0,
            spot_mean_lifetime_hours: 3.0,
            spot_recovery_minutes: 9.0,
        }
    }

    /// $3/GPU-h on demand; each pricing its own price.
    fn prices() -> Prices {
        Prices {
            usd_per_gpu_hour: [3.0, 2.0, 1.5, 1.2],
            capex_usd_per_gpu: 40_000.0,
        }
    }

    /// 32 GPUs in 1 rack, 40 kW provisioned, 30 kW drawn, instances of one server.
    fn rack_of_32() -> Footprint {
        Footprint {
            gpus: 32.0,
            racks: 1.0,
            storage_servers: 0.0,
            it_kw: 30.0,
            provisioned_it_kw: 40.0,
            servers_per_instance: 1.0,
        }
    }

    /// By hand: 32 GPUs in 1 rack, 40 kW provisioned, 30 kW drawn.
    #[test]
    fn owned_and_cloud_by_hand() {
        let e = economics();
        let p = prices();
        let f = rack_of_32();
        assert!((usd_per_hour(Payment::DEFAULT, &f, &p, &e).total() - 96.0).abs() < 1e-9);
        let hardware = 32.0 * 40_000.0 + 100_000.0;
        let expected = hardware / (5.0 * 8760.0)
            + 400_000.0 / (15.0 * 8760.0)
            + hardware * 0.05 / 8760.0
            + 30.0 * 1.25 * 0.08;
        let owned = usd_per_hour(Payment::Owned, &f, &p, &e);
        assert!(
            (owned.total() - expected).abs() < 1e-9,
            "{owned:?} vs {expected}"
        );
        // The parts by hand: GPUs 1.28 M / 43,800 h, network 100 k / 43,800 h, maintenance 5 %
        // of 1.38 M a year, facility 400 k / 131,400 h, energy 30 kW x 1.25 x 0.08.
        assert!((owned.gpus - 1_280_000.0 / 43_800.0).abs() < 1e-9);
        assert!((owned.network - 100_000.0 / 43_800.0).abs() < 1e-9);
        assert!((owned.maintenance - 1_380_000.0 * 0.05 / 8760.0).abs() < 1e-9);
        assert!((owned.facility - 400_000.0 / 131_400.0).abs() < 1e-9);
        assert!((owned.energy - 3.0).abs() < 1e-12);
        assert_eq!(owned.storage, 0.0);
        // $96/h over 1,000 tokens/s: 96 / 3.6e6 x 1e6 = $26.67 per million tokens.
        assert!((per_mtok(96.0, 1000.0) - 26.666_666_666_7).abs() < 1e-6);
    }

    /// By hand, 32 GPUs at each pricing: reserved ones at their price, spot with its standby
    /// servers. Instances of one server, reclaimed every 3 h on average and back after 9 min:
    /// 1 + 1 x 0.15 / 3 = 1.05 servers rented per server serving, 32 x 1.2 x 1.05 = $40.32/h.
    /// Instances of 4 servers stop four times as often: 1 + 4 x 0.05 = 1.2, $46.08/h.
    #[test]
    fn each_pricing_by_hand() {
        let e = economics();
        let p = prices();
        let f = rack_of_32();
        let at = |pricing, f: &Footprint| usd_per_hour(Payment::Cloud(pricing), f, &p, &e);
        for (pricing, usd) in [
            (Pricing::OnDemand, 96.0),
            (Pricing::Reserved1y, 64.0),
            (Pricing::Reserved3y, 48.0),
            (Pricing::Spot, 40.32),
        ] {
            let b = at(pricing, &f);
            assert!((b.total() - usd).abs() < 1e-9, "{pricing:?}: {b:?}");
            assert_eq!(b.total(), b.gpus, "{pricing:?}: GPU-hours only");
        }
        assert!((spot_standby(1.0, &e) - 1.05).abs() < 1e-12);
        let wide = Footprint {
            servers_per_instance: 4.0,
            ..f
        };
        assert!((at(Pricing::Spot, &wide).total() - 46.08).abs() < 1e-9);
        // Standby is for spot only: a wide instance costs the same at a reserved price.
        assert_eq!(at(Pricing::Reserved1y, &wide), at(Pricing::Reserved1y, &f));
        // A storage server is paid at its owned cost whatever the pricing: $50k over 5 years,
        // 5 % of it a year, and 1 kW x 1.25 x $0.08.
        let storage = 50_000.0 / 43_800.0 + 2_500.0 / 8760.0 + 0.1;
        for pricing in Pricing::ALL {
            let with = Footprint {
                storage_servers: 1.0,
                ..f
            };
            let b = at(pricing, &with);
            assert!((b.storage - storage).abs() < 1e-12, "{pricing:?}");
        }
    }
}
