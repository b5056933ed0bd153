//! What each MLPerf submission ran that the measurements file has no column for, read from the
//! submission's own logs and configs by `scripts/mlperf-submissions.py`
//! (`mlperf-submissions.toml`): how many queries a server or interactive run issued (loadgen's
//! early stopping depends on it, `early_stopping`), how many samples an offline run's query
//! carried (its drain depends on it, `finite`), and whether its TensorRT-LLM engine fused
//! each row-parallel GEMM with its tensor-parallel all-reduce (`gemm_allreduce_plugin`,
//! docs/model.md §7), and the configuration of a case whose row leaves it blank where the
//! submission's config states it (`scripts/mlperf-configs.toml`), and a server or interactive
//! run's logged mean TPOT and TTFT (noted beside the model's, not scored). A case the table does
//! not list ran the rules' least and no fusion, and its blank columns are swept.

use std::sync::LazyLock;

use crate::perf::adp_balance::AdpBalance;

use serde::Deserialize;

use super::cases::Setup;

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
    /// Queries a server or interactive run issued (`result_query_count`), the samples an
    /// offline run's one query carried (`generated_samples_per_query`, `finite::Run::Spread`),
    /// and the detail log that says so.
    pub queries: Option<u64>,
    pub samples: Option<u64>,
    pub log: Option<String>,
    /// Whether the engine was built with `gemm_allreduce_plugin`, and the config that says so.
    pub gemm_allreduce_fusion: Option<bool>,
    /// TensorRT-LLM's attention-DP balance where the config enables it: iterations prompts are
    /// held once every rank has one, and at most (`perf::adp_balance`).
    pub adp_balance_batching_wait_iters: Option<u32>,
    pub adp_balance_timeout_iters: Option<u32>,
    /// vLLM V0's multi-step scheduling where the config runs it (`num_scheduler_steps` above
    /// 1): decode iterations per scheduler call (`perf::sizing::Settings::scheduler_steps`).
    pub scheduler_steps: Option<u32>,
    pub config: Option<String>,
    /// The configuration the config states, for a row that leaves it blank; the config entry it
    /// was read from and what ties that entry to the run.
    pub tp: Option<u32>,
    pub pp: Option<u32>,
    pub weight_dtype: Option<String>,
    pub kv_dtype: Option<String>,
    pub batch: Option<u32>,
    pub config_entry: Option<String>,
    pub matched_by: Option<String>,
    /// A server or interactive run's logged mean TPOT and TTFT (loadgen's summary), ms.
    pub tpot_mean_ms: Option<f64>,
    pub ttft_mean_ms: Option<f64>,
}

impl Submission {
    /// The attention-DP balance the submission's config enables, if any.
    pub fn adp_balance(&self) -> Option<AdpBalance> {
        Some(AdpBalance {
            batching_wait_iters: f64::from(self.adp_balance_batching_wait_iters?),
            timeout_iters: f64::from(self.adp_balance_timeout_iters?),
        })
    }

    /// The model's mean TPOT and TTFT at its operating point beside the run's logged means,
    /// where the log gives them: a diagnostic, not scored (the measurements file states 99th
    /// percentiles, and a p99 can be right for the wrong reason, docs/validation.md).
    pub fn means_note(&self, tpot_s: f64, ttft_s: f64) -> Option<String> {
        let (tpot_ms, ttft_ms) = (self.tpot_mean_ms?, self.ttft_mean_ms?);
        Some(format!(
            "means at the operating point (not scored): TPOT {:.1} ms, TTFT {:.0} ms; the run's log: {tpot_ms:.1} ms, {ttft_ms:.0} ms",
            tpot_s * 1e3,
            ttft_s * 1e3
        ))
    }

    /// `setup` with its blank configuration columns taken from the submission's config, and a
    /// note naming what was filled; columns the file gives are kept.
    pub fn fill(&self, setup: &Setup) -> (Setup, Option<String>) {
        fn take<T: Clone + std::fmt::Display>(
            name: &str,
            given: &mut Option<T>,
            stated: &Option<T>,
            filled: &mut Vec<String>,
        ) {
            if let (None, Some(v)) = (&given, stated) {
                filled.push(format!("{name} {v}"));
                *given = Some(v.clone());
            }
        }
        let mut s = setup.clone();
        let mut filled = Vec::new();
        take("tp", &mut s.tp, &self.tp, &mut filled);
        take("pp", &mut s.pp, &self.pp, &mut filled);
        take(
            "weight_dtype",
            &mut s.weight_dtype,
            &self.weight_dtype,
            &mut filled,
        );
        take("kv_dtype", &mut s.kv_dtype, &self.kv_dtype, &mut filled);
        take("batch", &mut s.batch, &self.batch, &mut filled);
        let note = (!filled.is_empty()).then(|| {
            format!(
                "{} blank: from the submission's config ({}: {})",
                filled.join(", "),
                self.config_entry.as_deref().unwrap_or("its entry"),
                self.matched_by.as_deref().unwrap_or("")
            )
        });
        (s, note)
    }
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
            (s.queries.is_some() || s.samples.is_some()) == s.log.is_some()
                && !(s.queries.is_some() && s.samples.is_some())
                && (s.gemm_allreduce_fusion.is_some() || s.scheduler_steps.is_some())
                    == s.config.is_some()
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
        // NVIDIA's DeepSeek-R1 server config enables the attention-DP balance; Nebius's 405B
        // runs tensor parallel and states none.
        let dsr1 = of("mlperf-5p1-nvidia-b200-sxm-180gbx8-deepseek-r1-server").unwrap();
        assert_eq!(
            dsr1.adp_balance(),
            Some(crate::perf::adp_balance::AdpBalance {
                batching_wait_iters: 3.0,
                timeout_iters: 9.0
            })
        );
        assert_eq!(nebius.adp_balance(), None);
        // The DeepSeek-R1 offline run's one query carried six passes over the 4,388 samples.
        let offline = of("mlperf-5p1-nvidia-b200-sxm-180gbx8-deepseek-r1-offline").unwrap();
        assert_eq!((offline.samples, offline.queries), (Some(6 * 4388), None));
        // AMD's v5.1 vLLM harness runs multi-step scheduling on the V0 engine: 9 steps for
        // Llama-2 on MI300X, 10 for Mixtral on MI325X; its v4.1 harness predates it.
        let steps = |id: &str| of(id).and_then(|s| s.scheduler_steps);
        assert_eq!(
            steps("mlperf-5p1-amd-8xmi300x-2xepyc-9575f-llama2-70b-99-server"),
            Some(9)
        );
        assert_eq!(
            steps("mlperf-5p1-amd-8xmi325x-2xepyc-9575f-1-mixtral-8x7b-server"),
            Some(10)
        );
        assert_eq!(
            steps("mlperf-4p1-amd-1xmi300x-2xepyc-9374f-llama2-70b-99-server"),
            None
        );
        assert_eq!(of("no-such-case"), None);
    }

    /// Every entry is an MLPerf case of the committed measurements file, a query count belongs
    /// to a server or interactive run (offline runs have no latency limits to pass), and a
    /// query's sample count to an offline run.
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
            assert!(
                s.samples.is_none() || case.setup.scenario == "offline",
                "{}",
                s.case_id
            );
            // Logged means come from a server or interactive run's log, and a mean first-token
            // latency lies below the 99th percentile the file states for the same run.
            for mean in [s.tpot_mean_ms, s.ttft_mean_ms].into_iter().flatten() {
                assert!(
                    latency_bound && s.log.is_some() && mean > 0.0,
                    "{}",
                    s.case_id
                );
            }
            let p99 = case.measurements.iter().find(|m| m.metric == "ttft_p99_ms");
            if let (Some(mean), Some(p99)) = (s.ttft_mean_ms, p99) {
                assert!(
                    mean < p99.value,
                    "{}: {mean} against {}",
                    s.case_id,
                    p99.value
                );
            }
            // A stated configuration fills only columns the row leaves blank, and says where
            // it was read and what ties it to the run.
            let (filled, note) = s.fill(&case.setup);
            let stated = [s.tp.is_some(), s.pp.is_some(), s.batch.is_some()];
            if stated.contains(&true) || s.weight_dtype.is_some() || s.kv_dtype.is_some() {
                assert!(s.config.is_some() && s.config_entry.is_some() && s.matched_by.is_some());
                assert!(note.is_some(), "{}: fills nothing", s.case_id);
            }
            for (given, now) in [
                (case.setup.tp, filled.tp),
                (case.setup.pp, filled.pp),
                (case.setup.batch, filled.batch),
            ] {
                assert!(given.is_none() || given == now, "{}", s.case_id);
            }
        }
    }

    /// The configurations read by hand (`scripts/mlperf-configs.toml`) are in the built-in
    /// table as written: every key of every entry, for that case (the generator merges them;
    /// this catches an edit of one without regenerating the other).
    #[test]
    fn configurations_read_by_hand_are_in_the_table() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/mlperf-configs.toml");
        let by_hand: toml::Table = toml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let entries = by_hand["config"].as_array().unwrap();
        assert!(!entries.is_empty());
        let table: toml::Table = toml::from_str(SUBMISSIONS_TOML).unwrap();
        let rows = table["submission"].as_array().unwrap();
        for entry in entries {
            let entry = entry.as_table().unwrap();
            let id = entry["case_id"].as_str().unwrap();
            let sub = of(id).unwrap_or_else(|| panic!("{id} is not in the table"));
            let row = rows
                .iter()
                .find(|r| r["case_id"].as_str() == Some(id))
                .unwrap();
            assert_eq!(row.as_table().unwrap(), entry, "{id}");
            assert!(sub.config.is_some() && sub.matched_by.is_some(), "{id}");
        }
    }

    /// NVIDIA's v5.0 B200 Llama-3.1-405B server run, blank in the measurements file: its
    /// config entry (B200_SXM_180GB_TP2PP2x2, two instances of tp 2 x pp 2, FP4 weights, FP8
    /// KV cache, 128 sequences, no fused all-reduce) fills every configuration column, and a
    /// column the row gives is kept.
    #[test]
    fn a_stated_configuration_fills_blank_columns_only() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("reference/measurements-calibration.csv");
        let cases = crate::validate::cases::read(&path).unwrap();
        let id = "mlperf-5p0-nvidia-b200-sxm-180gbx8-llama3-1-405b-server";
        let case = cases.iter().find(|c| c.id == id).unwrap();
        let sub = of(id).unwrap();
        assert_eq!(sub.gemm_allreduce_fusion, Some(false));
        let (s, note) = sub.fill(&case.setup);
        assert_eq!((s.tp, s.pp, s.batch), (Some(2), Some(2), Some(128)));
        assert_eq!(
            (s.weight_dtype.as_deref(), s.kv_dtype.as_deref()),
            (Some("fp4"), Some("fp8"))
        );
        assert_eq!(
            note.as_deref(),
            Some(
                "tp 2, pp 2, weight_dtype fp4, kv_dtype fp8, batch 128 blank: from the \
                 submission's config (B200_SXM_180GB_TP2PP2x2: server_target_qps = 0.65 x 2; \
                 NVIDIA's run: target_qps : 1.3)"
            )
        );
        let given = Setup {
            tp: Some(4),
            weight_dtype: Some("fp8".into()),
            ..case.setup.clone()
        };
        let (s, _) = sub.fill(&given);
        assert_eq!(
            (s.tp, s.pp, s.weight_dtype.as_deref()),
            (Some(4), Some(2), Some("fp8"))
        );
    }
}
