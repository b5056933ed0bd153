//! Power of a cluster at its operating load: GPUs between idle and board power, the servers'
//! host share, network switches and KV storage servers; facility power with PUE. Formulas:
//! docs/model.md, "Power".

use crate::catalog::{Gpu, Rack};

/// Per-platform power facts (NaN where the catalog has no number).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PowerFacts {
    pub tdp_w: f64,
    pub idle_w: f64,
    pub gpus_per_rack: f64,
    pub gpus_per_server: f64,
    pub servers_per_rack: f64,
    /// Non-GPU power of one server (its maximum less its GPUs' board power), kW.
    pub host_kw_per_server: f64,
    /// Switch power attributable to one rack, kW (switches sit outside the rack's budget).
    pub switch_kw_per_rack: f64,
    pub rack_budget_kw: f64,
}

impl PowerFacts {
    pub fn new(gpu: &Gpu, rack: &Rack) -> PowerFacts {
        let tdp_w = gpu.tdp_w.unwrap_or(f64::NAN);
        PowerFacts {
            tdp_w,
            idle_w: gpu.idle_w.unwrap_or(f64::NAN),
            gpus_per_rack: f64::from(rack.gpus_per_rack()),
            gpus_per_server: f64::from(rack.gpus_per_server),
            servers_per_rack: f64::from(rack.servers_per_rack),
            host_kw_per_server: rack.host_power_kw_per_server(tdp_w),
            switch_kw_per_rack: rack.switch_power_kw,
            rack_budget_kw: rack.rack_power_budget_kw,
        }
    }

    /// Board power of a GPU busy a fraction `activity` of the time, W: linear between idle and
    /// board power (the idle + utilization form of Atlas Fabric's node model, with measured
    /// endpoints). Serving GPUs at full batch are held at board power, an upper bound: decode is
    /// memory-bound and draws less (Patel et al. 2024, "Characterizing Power Management
    /// Opportunities for LLMs in the Cloud").
    pub fn gpu_w(&self, activity: f64) -> f64 {
        self.idle_w + (self.tdp_w - self.idle_w) * activity.clamp(0.0, 1.0)
    }

    /// IT power of one fully populated rack at `activity`, kW (what its budget must hold).
    pub fn rack_kw(&self, activity: f64) -> f64 {
        self.servers_per_rack * self.host_kw_per_server
            + self.gpus_per_rack * self.gpu_w(activity) / 1e3
    }

    /// Whether a rack at `activity` exceeds its power budget (unknown power never does).
    pub fn over_budget(&self, activity: f64) -> bool {
        self.rack_kw(activity) > self.rack_budget_kw * (1.0 + 1e-9)
    }

    /// IT power of `servers` servers whose `active_gpus` serve at `activity` (the rest idle),
    /// with the racks' switches in proportion to the servers (`servers / servers_per_rack` of a
    /// rack's), kW.
    pub fn cluster_kw(&self, servers: f64, active_gpus: f64, activity: f64) -> f64 {
        let idle_gpus = (servers * self.gpus_per_server - active_gpus).max(0.0);
        servers * self.host_kw_per_server
            + servers / self.servers_per_rack * self.switch_kw_per_rack
            + active_gpus * self.gpu_w(activity) / 1e3
            + idle_gpus * self.idle_w / 1e3
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> PowerFacts {
        // DGX H100: 10.2 kW per server, 8 x 700 W GPUs, so 4.6 kW of host; 4 servers per rack.
        PowerFacts {
            tdp_w: 700.0,
            idle_w: 100.0,
            gpus_per_rack: 32.0,
            gpus_per_server: 8.0,
            servers_per_rack: 4.0,
            host_kw_per_server: 10.2 - 8.0 * 0.7,
            switch_kw_per_rack: 1.0,
            rack_budget_kw: 40.8,
        }
    }

    /// By hand: at full load a rack draws 4 x 10.2 = 40.8 kW, exactly its budget; at half load
    /// its GPUs draw 400 W each.
    #[test]
    fn rack_power_by_hand() {
        let p = facts();
        assert!((p.rack_kw(1.0) - 40.8).abs() < 1e-9);
        assert!(!p.over_budget(1.0));
        assert!((p.gpu_w(0.5) - 400.0).abs() < 1e-12);
        // Two racks (8 servers), 48 GPUs busy at 50 %, 16 idle: 2 x (18.4 + 1) + 48 x 0.4 +
        // 16 x 0.1.
        let kw = p.cluster_kw(8.0, 48.0, 0.5);
        assert!((kw - (2.0 * 19.4 + 19.2 + 1.6)).abs() < 1e-9, "{kw}");
        // One server, all 8 GPUs busy: its host, a quarter of the rack's switches, 8 GPUs.
        let kw = p.cluster_kw(1.0, 8.0, 1.0);
        assert!((kw - (4.6 + 0.25 + 5.6)).abs() < 1e-9, "{kw}");
        let tight = PowerFacts {
            rack_budget_kw: 40.0,
            ..p
        };
        assert!(tight.over_budget(1.0) && !tight.over_budget(0.5));
    }
}
