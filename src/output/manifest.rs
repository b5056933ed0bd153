//! `manifest.json`: what ran, on what, how much, how fast, and whether it finished.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::columns::Mode;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    pub racksweep_version: String,
    /// What the sweep evaluates, and so the columns of its rows.
    pub mode: Mode,
    pub sweep_name: String,
    pub sweep_file: String,
    pub sweep_sha256: String,
    pub model: String,
    /// The workload's numbers: input and output tokens and the speculative-decoding
    /// parameters of an inference sweep; sequence length, global batch and tokens to train of
    /// a training sweep.
    pub workload: BTreeMap<String, f64>,
    /// The workloads of an inference sweep with workload axes, by `workload_id` (absent
    /// without them; `model` and `workload` are then the first one's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workloads: Vec<String>,
    /// How the engine admits requests against its KV cache (`[workload] kv_admission`) in an
    /// inference sweep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_admission: Option<String>,
    /// What the sweep's own numbers change of the built-in ones, one line each: its
    /// `[calibration]` factors, the GPUs its `[[gpu]]` tables extend, its `[[price]]` quotes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub own_numbers: Vec<String>,
    /// Configurations evaluated (the whole grid once complete).
    pub configurations: u64,
    /// Axis name -> number of values.
    pub axes: BTreeMap<String, u64>,
    /// Part files the rows are split into (`configs/part-K-of-N.parquet`, N = `parts`).
    pub parts: u64,
    /// Parts committed so far (equals `parts` once complete).
    pub parts_committed: u64,
    /// Rows in the part files (all configurations, or the feasible ones with --feasible-only).
    pub rows_written: u64,
    pub feasible: u64,
    /// Infeasible reason -> configurations.
    pub infeasible: BTreeMap<String, u64>,
    pub frontier_size: u64,
    /// SHA-256 (hex) of `pareto.parquet`, checked by every reader (empty until the merge).
    #[serde(default)]
    pub pareto_sha256: String,
    pub objectives: Vec<String>,
    pub constraints: Vec<String>,
    pub feasible_only: bool,
    pub threads: usize,
    pub started_at: String,
    pub finished_at: String,
    pub wall_time_s: f64,
    pub configs_per_s: f64,
    /// True only once every part is committed and the frontier and this manifest are written;
    /// an interrupted run says false (resume it with `racksweep run --resume`).
    pub complete: bool,
}

impl Manifest {
    /// The manifest as written to `manifest.json`.
    pub fn json(&self) -> serde_json::Result<String> {
        Ok(serde_json::to_string_pretty(self)? + "\n")
    }
}

/// `SystemTime` as an RFC 3339 UTC timestamp (seconds precision).
pub fn rfc3339(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (H. Hinnant's algorithm,
/// "chrono-Compatible Low-Level Date Algorithms").
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn timestamps() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        assert_eq!(
            rfc3339(UNIX_EPOCH + Duration::from_secs(951_782_400)),
            "2000-02-29T00:00:00Z"
        );
        assert_eq!(
            rfc3339(UNIX_EPOCH + Duration::from_secs(1_795_645_805)),
            "2026-11-25T22:30:05Z"
        );
    }
}
