//! What failures cost a long training job: job mean time between failures from a per-GPU
//! failure rate, the checkpoint interval that minimizes lost time (Young 1974; Daly 2006), and
//! the resulting goodput.

pub use crate::catalog::training::FAILURES_PER_GPU_HOUR;

/// Reliability of one job.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Reliability {
    /// Mean time between failures of the whole job, hours.
    pub job_mtbf_hours: f64,
    /// Time to write one checkpoint, seconds.
    pub checkpoint_write_s: f64,
    /// Optimal time between checkpoints, seconds.
    pub checkpoint_interval_s: f64,
    /// Fraction of wall time that advances training.
    pub goodput: f64,
}

/// `gpus` GPUs failing at `failures_per_gpu_hour` each, a checkpoint of `checkpoint_bytes`
/// written by all of them in parallel at `storage_bytes_per_s_per_gpu` each, and `restart_s`
/// to detect a failure, replace the node and reload.
pub fn reliability(
    gpus: f64,
    checkpoint_bytes: f64,
    storage_bytes_per_s_per_gpu: f64,
    restart_s: f64,
    failures_per_gpu_hour: f64,
) -> Reliability {
    let mtbf_s = 3600.0 / (gpus * failures_per_gpu_hour);
    let delta = checkpoint_bytes / (gpus * storage_bytes_per_s_per_gpu);
    // Daly 2006 ("A higher order estimate of the optimum checkpoint interval for restart
    // dumps", FGCS 22(3)), first order: tau = sqrt(2 delta M) - delta, for delta < M / 2.
    let interval = if delta < mtbf_s / 2.0 {
        (2.0 * delta * mtbf_s).sqrt() - delta
    } else {
        mtbf_s
    };
    // Per interval of work: the checkpoint write; per failure (every M on average): the
    // restart and, on average, half an interval of lost work (Young 1974).
    let overhead = delta / interval + (restart_s + (interval + delta) / 2.0) / mtbf_s;
    Reliability {
        job_mtbf_hours: mtbf_s / 3600.0,
        checkpoint_write_s: delta,
        checkpoint_interval_s: interval,
        goodput: (1.0 / (1.0 + overhead)).clamp(0.0, 1.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Llama 3's cluster: an interruption about every 3.1 hours on 16,384 GPUs.
    #[test]
    fn llama3_interruption_rate() {
        let r = reliability(16_384.0, 0.0, 1.0, 0.0, FAILURES_PER_GPU_HOUR);
        assert!((r.job_mtbf_hours - 54.0 * 24.0 / 419.0).abs() < 1e-9);
        assert!((r.job_mtbf_hours - 3.093).abs() < 0.001);
    }

    /// Young/Daly by hand: 1,000 GPUs (MTBF 50.68 h), a 60 s checkpoint: tau = sqrt(2 x 60 x M)
    /// - 60 = 4,619 s.
    #[test]
    fn young_daly_interval_by_hand() {
        let m = 3600.0 / (1000.0 * FAILURES_PER_GPU_HOUR);
        let r = reliability(
            1000.0,
            60.0 * 1000.0 * 1e9,
            1e9,
            600.0,
            FAILURES_PER_GPU_HOUR,
        );
        assert!((r.checkpoint_write_s - 60.0).abs() < 1e-9);
        let tau = (2.0 * 60.0 * m).sqrt() - 60.0;
        assert!((r.checkpoint_interval_s - tau).abs() < 1e-6);
        assert!((tau - 4619.0).abs() < 1.0, "{tau}");
        let waste = 60.0 / tau + (600.0 + (tau + 60.0) / 2.0) / m;
        assert!((r.goodput - 1.0 / (1.0 + waste)).abs() < 1e-12);
        assert!(r.goodput > 0.95 && r.goodput < 0.98, "{}", r.goodput);
    }
}
