//! Facility, energy and finance defaults of the power and cost models (`data/economics.toml`,
//! every value with its source). A sweep's `[cost]` table overrides any of them.

use serde::Deserialize;

use super::{Bound, Error};

#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Economics {
    /// Power usage effectiveness: facility power over IT power.
    pub pue: f64,
    /// Electricity price, USD per kWh.
    pub usd_per_kwh: f64,
    /// Grid carbon intensity, kg CO2e per kWh.
    pub kg_co2e_per_kwh: f64,
    /// Water usage effectiveness, litres per kWh of IT energy.
    pub water_l_per_kwh: f64,
    /// Data-center construction cost per kW of IT capacity, USD (owned facility).
    pub facility_capex_usd_per_kw: f64,
    /// Amortization horizon of the facility capex, years.
    pub facility_years: f64,
    /// Colocation price per kW of IT capacity per month, USD (rented facility).
    pub hosting_usd_per_kw_month: f64,
    /// Hardware support and maintenance per year, percent of hardware capex.
    pub maintenance_pct_per_year: f64,
    /// Scale-out network (switches, optics, cables) per rack, USD.
    pub network_capex_usd_per_rack: f64,
    /// Amortization horizon of hardware and the TCO horizon, years.
    pub years: f64,
    /// Usable capacity of one KV-offload storage server, TB.
    pub storage_tb_per_server: f64,
    /// Its read bandwidth, GB/s.
    pub storage_gbps_per_server: f64,
    /// Its power, kW.
    pub storage_power_kw_per_server: f64,
    /// Its price, USD.
    pub storage_capex_usd_per_server: f64,
    /// Mean time a spot server runs before the provider reclaims it, hours.
    pub spot_mean_lifetime_hours: f64,
    /// Time from a spot server's reclamation to its replacement serving again, minutes.
    pub spot_recovery_minutes: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EconomicsFile {
    defaults: Economics,
}

impl Economics {
    pub fn parse(text: &str) -> Result<Economics, Error> {
        let e = toml::from_str::<EconomicsFile>(text)?.defaults;
        e.check()?;
        Ok(e)
    }

    /// Every field in range; `Err` names the key.
    pub fn check(&self) -> Result<(), Error> {
        if !(self.pue.is_finite() && self.pue >= 1.0) {
            return Err(Error::OutOfRangePlain {
                key: "pue",
                value: self.pue,
                bound: Bound::AtLeast(1.0),
            });
        }
        for (key, v) in self.positive_fields() {
            super::positive(key, v)?;
        }
        for (key, v) in self.non_negative_fields() {
            super::non_negative(key, v)?;
        }
        Ok(())
    }

    fn positive_fields(&self) -> [(&'static str, f64); 5] {
        [
            ("years", self.years),
            ("spot_mean_lifetime_hours", self.spot_mean_lifetime_hours),
            ("facility_years", self.facility_years),
            ("storage_tb_per_server", self.storage_tb_per_server),
            ("storage_gbps_per_server", self.storage_gbps_per_server),
        ]
    }

    fn non_negative_fields(&self) -> [(&'static str, f64); 10] {
        [
            ("spot_recovery_minutes", self.spot_recovery_minutes),
            ("usd_per_kwh", self.usd_per_kwh),
            ("kg_co2e_per_kwh", self.kg_co2e_per_kwh),
            ("water_l_per_kwh", self.water_l_per_kwh),
            ("facility_capex_usd_per_kw", self.facility_capex_usd_per_kw),
            ("hosting_usd_per_kw_month", self.hosting_usd_per_kw_month),
            ("maintenance_pct_per_year", self.maintenance_pct_per_year),
            (
                "network_capex_usd_per_rack",
                self.network_capex_usd_per_rack,
            ),
            (
                "storage_power_kw_per_server",
                self.storage_power_kw_per_server,
            ),
            (
                "storage_capex_usd_per_server",
                self.storage_capex_usd_per_server,
            ),
        ]
    }

    /// The field named `key`, for `[cost]` overrides.
    pub fn field_mut(&mut self, key: &str) -> Option<&mut f64> {
        Some(match key {
            "pue" => &mut self.pue,
            "usd_per_kwh" => &mut self.usd_per_kwh,
            "kg_co2e_per_kwh" => &mut self.kg_co2e_per_kwh,
            "water_l_per_kwh" => &mut self.water_l_per_kwh,
            "facility_capex_usd_per_kw" => &mut self.facility_capex_usd_per_kw,
            "facility_years" => &mut self.facility_years,
            "hosting_usd_per_kw_month" => &mut self.hosting_usd_per_kw_month,
            "maintenance_pct_per_year" => &mut self.maintenance_pct_per_year,
            "network_capex_usd_per_rack" => &mut self.network_capex_usd_per_rack,
            "years" => &mut self.years,
            "storage_tb_per_server" => &mut self.storage_tb_per_server,
            "storage_gbps_per_server" => &mut self.storage_gbps_per_server,
            "storage_power_kw_per_server" => &mut self.storage_power_kw_per_server,
            "storage_capex_usd_per_server" => &mut self.storage_capex_usd_per_server,
            "spot_mean_lifetime_hours" => &mut self.spot_mean_lifetime_hours,
            "spot_recovery_minutes" => &mut self.spot_recovery_minutes,
            _ => return None,
        })
    }
}
