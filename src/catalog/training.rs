//! The training model's global factors (`data/training.toml`): fitted GEMM efficiency,
//! tensor-parallel overlap and narrow-GEMM width, and the cluster's restart time and failure
//! rate. Data and their checks only; the training model (`crate::train`) uses them.

use serde::{Deserialize, Serialize};

use super::{Bound, Error};

/// Unexpected interruptions per GPU-hour: 419 unexpected interruptions in a 54-day snapshot of
/// Llama 3 405B pre-training on up to 16,384 H100 GPUs (Dubey et al. 2024, "The Llama 3 Herd of
/// Models", arXiv:2407.21783, section 3.3.4 and Table 5), i.e. 419 / (54 x 24 x 16,384).
pub const FAILURES_PER_GPU_HOUR: f64 = 419.0 / (54.0 * 24.0 * 16_384.0);

const TRAINING_TOML: &str = include_str!("data/training.toml");

/// Global factors of the training model (`src/catalog/data/training.toml`).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Factors {
    /// Fraction of the microbenchmarked GEMM efficiency a training step reaches.
    pub gemm_efficiency: f64,
    /// Fraction of tensor-parallel collective time hidden behind GEMMs.
    pub tp_comm_overlap: f64,
    /// Smaller weight dimension per GPU at which a GEMM reaches half its large-matrix rate.
    pub gemm_half_width: f64,
    /// Minutes from a failure to training again.
    pub restart_minutes: f64,
    /// Unexpected interruptions per GPU-hour (default: Llama 3's, [`FAILURES_PER_GPU_HOUR`]).
    #[serde(default = "default_failures_per_gpu_hour")]
    pub failures_per_gpu_hour: f64,
}

fn default_failures_per_gpu_hour() -> f64 {
    FAILURES_PER_GPU_HOUR
}

impl Factors {
    pub fn builtin() -> Factors {
        Factors::parse(TRAINING_TOML).expect("built-in training factors are valid")
    }

    pub fn parse(text: &str) -> Result<Factors, Error> {
        let f: Factors = toml::from_str(text)?;
        f.check()?;
        Ok(f)
    }

    /// Every factor in range; `Err` names the key.
    pub fn check(&self) -> Result<(), Error> {
        let f = self;
        for (key, value) in [
            ("gemm_efficiency", f.gemm_efficiency),
            ("tp_comm_overlap", f.tp_comm_overlap),
        ] {
            if !(0.0..=1.0).contains(&value) {
                return Err(Error::OutOfRangePlain {
                    key,
                    value,
                    bound: Bound::Between(0.0, 1.0),
                });
            }
        }
        super::non_negative("gemm_half_width", f.gemm_half_width)?;
        if !(f.failures_per_gpu_hour.is_finite() && f.failures_per_gpu_hour > 0.0) {
            return Err(Error::OutOfRangePlain {
                key: "failures_per_gpu_hour",
                value: f.failures_per_gpu_hour,
                bound: Bound::Positive,
            });
        }
        super::non_negative("restart_minutes", f.restart_minutes)?;
        Ok(())
    }
}
