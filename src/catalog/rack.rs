//! Rack presets: how GPUs are packaged (servers, racks), the scale-up domain (NVLink / Infinity
//! Fabric) and scale-out network they talk over, and the power envelope. Data in
//! `data/racks.toml`; the same fields form an inline `[[rack]]` table in a sweep file.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Rack {
    pub id: String,
    /// GPU preset id this rack hosts.
    pub gpu: String,
    pub description: String,
    pub gpus_per_server: u32,
    pub servers_per_rack: u32,
    /// GPUs in one scale-up (NVLink / Infinity Fabric) domain: 8 for HGX-class servers, 72 for NVL72.
    pub scaleup_domain_gpus: u32,
    /// Scale-up bandwidth per GPU per direction, GB/s.
    pub scaleup_gbps_per_gpu: f64,
    /// Per-hop latency (alpha) of a collective step inside the scale-up domain, microseconds.
    pub scaleup_latency_us: f64,
    /// Fixed cost of one collective call (kernel launch and synchronization), microseconds.
    pub collective_launch_us: f64,
    /// Scale-out (NIC) bandwidth per GPU per direction, GB/s.
    pub scaleout_gbps_per_gpu: f64,
    /// Per-hop latency (alpha) of a collective step over the scale-out network, microseconds.
    pub scaleout_latency_us: f64,
    /// Oversubscription of the scale-out network's spine, `r` for `r:1`: the leaf switches
    /// serving one rack have `1/r` of the rack's NIC bandwidth as uplinks to the spine, so
    /// traffic between racks gets at most `1/r` of it when every GPU sends at once (Al-Fares et
    /// al. 2008, section 2.2; docs/model.md, "Network load"). 1 (non-blocking) when omitted.
    /// Inference only: training step times do not read it yet.
    #[serde(default = "non_blocking")]
    pub scaleout_oversubscription: u32,
    /// Maximum power of one server (GPUs, CPUs, NICs, fans), kW.
    pub server_power_kw: f64,
    /// Power budget of the rack as deployed, kW.
    pub rack_power_budget_kw: f64,
    /// Host (CPU) memory per GPU, GB: the first tier KV cache spills to.
    pub host_memory_gb_per_gpu: f64,
    /// CPU-GPU link bandwidth per GPU per direction (PCIe, NVLink-C2C), GB/s.
    pub host_link_gbps_per_gpu: f64,
    /// Bandwidth per GPU to networked storage, GB/s.
    pub storage_gbps_per_gpu: f64,
    /// Network switch power attributable to one rack (housed outside its power budget), kW.
    pub switch_power_kw: f64,
    pub source: String,
}

/// A non-blocking (1:1) spine.
fn non_blocking() -> u32 {
    1
}

impl Rack {
    pub fn gpus_per_rack(&self) -> u32 {
        self.gpus_per_server * self.servers_per_rack
    }

    /// GPUs of the smallest unit a deployment can add: a server, or a whole scale-up domain
    /// when the domain spans several servers (a GB200 NVL72 rack is one 72-GPU domain).
    pub fn unit_gpus(&self) -> u32 {
        self.gpus_per_server.max(self.scaleup_domain_gpus)
    }

    /// Servers in one such unit.
    pub fn servers_per_unit(&self) -> u32 {
        self.unit_gpus() / self.gpus_per_server
    }

    /// Servers' non-GPU power (CPUs, memory, NICs, fans), kW: the server's maximum power less
    /// its GPUs at board power. Drawn whatever the load (conservative).
    pub fn host_power_kw_per_server(&self, tdp_w: f64) -> f64 {
        (self.server_power_kw - f64::from(self.gpus_per_server) * tdp_w / 1e3).max(0.0)
    }
}
