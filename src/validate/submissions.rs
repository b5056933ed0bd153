//! What each MLPerf submission ran that the measurements file has no column for, read from the
//! submission's own logs and configs by `scripts/mlperf-submissions.py`
//! (`mlperf-submissions.toml`): how many queries a server or interactive run issued (loadgen's
//! early stopping depends on it, `early_stopping`), and whether its TensorRT-LLM engine fused
//! each row-parallel GEMM with its tensor-parallel all-reduce (`gemm_allreduce_plugin`,
//! docs/model.md §7). A case the table does not list ran the rules' least and no fusion.

use std::sync::LazyLock;

use serde::Deserialize;

const SUBMISSIONS_TOML: &str = include_str!("mlperf-submissions.toml");

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSubmissions {
    submission: Vec<Submission>,
}

/// One case's submission facts (`mlperf-submissions.toml`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Submission {
    pub case_id: String,
    /// Queries the run issued (`result_query_count`), and the detail log that says so.
    pub queries: Option<u64>,
    pub log: Option<String>,
    /// Whether the engine was built with `gemm_allreduce_plugin`, and the config that says so.
    pub gemm_allreduce_fusion: Option<bool>,
    pub config: Option<String>,
}

/// The built-in table, parsed once.
pub fn submissions() -> &'static [Submission] {
    static PARSED: LazyLock<Vec<Submission>> = LazyLock::new(|| {
        let raw: RawSubmissions =
            toml::from_str(SUBMISSIONS_TOML).expect("built-in submission facts are valid");
        raw.submission
    });
    &PARSED
}

/// The facts of the submission behind `case_id`, where they were read.
pub fn of(case_id: &str) -> Option<&'static Submission> {
    submissions().iter().find(|s| s.case_id == case_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table parses, names each case once, pairs every fact with the file it was read from,
    /// and holds what the submissions say: the Nebius H200 Llama-3.1-405B server run issued
    /// all 8,313 samples once (0.452 queries/s for ten minutes would be 272) with the fused
    /// plugin in its build flags; NVIDIA's GB200 405B interactive config has no such flag.
    #[test]
    fn submissions_parse_and_cite_their_sources() {
        let s = submissions();
        assert!(s.len() >= 25, "{}", s.len());
        let mut ids: Vec<&str> = s.iter().map(|s| s.case_id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), s.len());
        assert!(s.iter().all(|s| {
            s.queries.is_some() == s.log.is_some()
                && s.gemm_allreduce_fusion.is_some() == s.config.is_some()
                && s.log
                    .as_ref()
                    .is_none_or(|l| l.ends_with("mlperf_log_detail.txt"))
                && s.queries.is_none_or(|q| q >= 459)
        }));
        let nebius = of("mlperf-5p1-nebius-h200-sxm-141gbx8-llama3p1-405b-server").unwrap();
        assert_eq!(
            (nebius.queries, nebius.gemm_allreduce_fusion),
            (Some(8313), Some(true))
        );
        let gb200 =
            of("mlperf-5p1-nvidia-gb200-nvl72-gb200-186gb-aarch64x72-llama3p1-405b-interactive")
                .unwrap();
        assert_eq!(gb200.gemm_allreduce_fusion, Some(false));
        assert_eq!(of("no-such-case"), None);
    }

    /// Every entry is an MLPerf case of the committed measurements file, and a query count
    /// belongs to a server or interactive run (offline runs have no latency limits to pass).
    #[test]
    fn submissions_are_cases_of_the_measurements() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("reference/measurements-calibration.csv");
        let cases = crate::validate::cases::read(&path).unwrap();
        for s in submissions() {
            let case = cases.iter().find(|c| c.id == s.case_id);
            let case = case.unwrap_or_else(|| panic!("{} is not a case", s.case_id));
            assert_eq!(case.harness(), crate::validate::cases::Harness::MlPerf);
            let latency_bound = matches!(case.setup.scenario.as_str(), "server" | "interactive");
            assert!(s.queries.is_none() || latency_bound, "{}", s.case_id);
        }
    }
}
