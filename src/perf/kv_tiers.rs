//! Where cached session context lives between turns: the KV cache of idle sessions fills the HBM
//! the running batch leaves free, then host DRAM, then networked NVMe storage, and a resumed
//! session reloads it from its tier before its first token. Formulas: docs/model.md,
//! "KV cache tiers".

/// Per-platform tier capacities and bandwidths.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TierFacts {
    pub host_bytes_per_gpu: f64,
    pub host_link_bytes_per_s_per_gpu: f64,
    pub storage_bytes_per_s_per_gpu: f64,
    pub storage_bytes_per_server: f64,
    pub storage_bytes_per_s_per_server: f64,
}

/// The cluster's cached context by tier and what reloading it costs.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Offload {
    pub hbm_bytes: f64,
    pub host_bytes: f64,
    pub storage_bytes: f64,
    pub storage_servers: f64,
    /// Reload time of one session from host memory and from storage, seconds.
    pub host_reload_s: f64,
    pub storage_reload_s: f64,
    /// Bytes of one session's cached context.
    pub session_bytes: f64,
}

/// Spreads `sessions` idle sessions of `session_bytes` each over the tiers, largest-first into
/// HBM (`hbm_free_bytes` over the cluster), host memory (`host_bytes`), then storage. Storage
/// servers cover both the bytes and the reload traffic of `resumes_per_s` resumed sessions.
/// Each instance reloads a session over all its `gpus_per_instance` GPUs' links in parallel.
pub fn offload(
    sessions: f64,
    session_bytes: f64,
    hbm_free_bytes: f64,
    host_bytes: f64,
    resumes_per_s: f64,
    gpus_per_instance: f64,
    t: &TierFacts,
) -> Offload {
    let total = sessions * session_bytes;
    let hbm_bytes = total.min(hbm_free_bytes.max(0.0));
    let host = (total - hbm_bytes).min(host_bytes.max(0.0));
    let storage_bytes = total - hbm_bytes - host;
    let storage_servers = if storage_bytes > 0.0 {
        let share = storage_bytes / total;
        let by_capacity = storage_bytes / t.storage_bytes_per_server;
        let by_bandwidth = resumes_per_s * share * session_bytes / t.storage_bytes_per_s_per_server;
        by_capacity.max(by_bandwidth).ceil()
    } else {
        0.0
    };
    Offload {
        hbm_bytes,
        host_bytes: host,
        storage_bytes,
        storage_servers,
        host_reload_s: session_bytes / (gpus_per_instance * t.host_link_bytes_per_s_per_gpu),
        storage_reload_s: session_bytes / (gpus_per_instance * t.storage_bytes_per_s_per_gpu),
        session_bytes,
    }
}

impl Offload {
    fn total(&self) -> f64 {
        self.hbm_bytes + self.host_bytes + self.storage_bytes
    }

    /// Mean reload time of a resumed session: each tier's time weighted by its share.
    pub fn reload_mean_s(&self) -> f64 {
        let total = self.total();
        if total <= 0.0 {
            return 0.0;
        }
        (self.host_bytes * self.host_reload_s + self.storage_bytes * self.storage_reload_s) / total
    }

    /// Mean bytes a resumed session reloads: its context, from host memory or storage in the
    /// share of sessions kept there (none from HBM).
    pub fn reload_bytes_mean(&self) -> f64 {
        let total = self.total();
        if total <= 0.0 {
            return 0.0;
        }
        self.session_bytes * (self.host_bytes + self.storage_bytes) / total
    }

    /// `p`-quantile of the reload time: 0 for sessions in HBM, then host, then storage.
    pub fn reload_quantile_s(&self, p: f64) -> f64 {
        let total = self.total();
        if total <= 0.0 || self.hbm_bytes >= p * total {
            0.0
        } else if self.hbm_bytes + self.host_bytes >= p * total {
            self.host_reload_s
        } else {
            self.storage_reload_s
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// By hand: 1,000 sessions of 1 GB; 200 GB of free HBM, 500 GB of host memory, the rest
    /// (300 GB) on storage servers of 100 TB and 10 GB/s; 8-GPU instances with 64 GB/s host links
    /// and 5 GB/s storage links per GPU.
    #[test]
    fn tiers_by_hand() {
        let t = TierFacts {
            host_bytes_per_gpu: 0.0,
            host_link_bytes_per_s_per_gpu: 64e9,
            storage_bytes_per_s_per_gpu: 5e9,
            storage_bytes_per_server: 100e12,
            storage_bytes_per_s_per_server: 10e9,
        };
        let o = offload(1000.0, 1e9, 200e9, 500e9, 100.0, 8.0, &t);
        assert_eq!(
            (o.hbm_bytes, o.host_bytes, o.storage_bytes),
            (200e9, 500e9, 300e9)
        );
        // 100 resumes/s x 30 % from storage x 1 GB = 30 GB/s: three 10 GB/s servers.
        assert_eq!(o.storage_servers, 3.0);
        assert!((o.host_reload_s - 1.0 / 512.0).abs() < 1e-15);
        assert!((o.storage_reload_s - 1.0 / 40.0).abs() < 1e-15);
        assert!((o.reload_mean_s() - (0.5 / 512.0 + 0.3 / 40.0)).abs() < 1e-15);
        // 80 % of sessions come back from host memory or storage: 0.8 GB each on average.
        assert!((o.reload_bytes_mean() - 0.8e9).abs() < 1e-3);
        assert_eq!(o.reload_quantile_s(0.5), 1.0 / 512.0);
        assert_eq!(o.reload_quantile_s(0.99), 1.0 / 40.0);
        assert_eq!(o.reload_quantile_s(0.1), 0.0);
    }
}
