//! How the lengths a harness fed the engine spread around a case's mean lengths. The
//! measurements file states mean prompt and answer lengths only, and the spread matters twice:
//! a running sequence's context is length-biased (`perf::serving::length_biased_half`), and a
//! server run's p99 TTFT is set by its long prompts (docs/model.md §13). So the spread comes
//! from what the case's harness is known to feed (docs/validation.md, "How a case is
//! predicted"):
//!
//! - MLPerf: the dataset of the case's benchmark, as measured sample by sample
//!   (`datasets.toml`, written by `scripts/mlperf-length-spreads.py`): the spreads, and the
//!   prompts at the TTFT percentiles, which a gamma of the same spread misplaces where the
//!   dataset's lengths are capped (Llama-3.1-405B's 99th-percentile prompt is 18,958 tokens,
//!   the gamma's 21,371, above the dataset's longest, 19,988);
//! - TensorRT-LLM's tables and blogs: fixed lengths. `trtllm-bench` runs synthetic requests of
//!   exactly the stated lengths (`prepare_dataset.py ... token-norm-dist --input-stdev 0
//!   --output-stdev 0`, TensorRT-LLM docs, perf-overview.md "Preparing a Dataset");
//! - InferenceX: lengths uniform over `[r * L, L]` (`sample_uniform` in
//!   `utils/bench_serving/benchmark_serving.py` of SemiAnalysisAI/InferenceX) with
//!   `r = RANDOM_RANGE_RATIO = 0.8` (the "Benchmark Client Configuration" table of the
//!   InferenceMAX README), whose mean is `(1 + r) / 2 L = 0.9 L` (the `L` InferenceX names a
//!   run by, and the file states), spread `(1 - r) / (sqrt(3) (1 + r))` and `p`-quantile
//!   `(r + (1 - r) p) L`;
//! - anything else: nothing is known, so the sweeps' default, exponential lengths (cv 1).

use std::sync::LazyLock;

use serde::Deserialize;

use super::cases::{Case, Harness};
use crate::perf::serving::PROMPT_PERCENTILES;

const DATASETS_TOML: &str = include_str!("datasets.toml");

/// InferenceX's `RANDOM_RANGE_RATIO`: lengths are drawn uniformly from `[r * L, L]`.
const INFERENCEX_RANGE_RATIO: f64 = 0.8;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDatasets {
    dataset: Vec<Dataset>,
}

/// One MLPerf dataset's length statistics (`datasets.toml`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dataset {
    /// The catalog model a case of this benchmark names.
    pub model: String,
    pub benchmark: String,
    pub dataset: String,
    pub summary: String,
    pub samples: u32,
    pub input_tokens_mean: f64,
    pub input_tokens_cv: f64,
    pub input_tokens_p50: f64,
    pub input_tokens_p95: f64,
    pub input_tokens_p99: f64,
    pub input_tokens_p99_25: f64,
    pub input_tokens_p99_5: f64,
    pub output_tokens_mean: f64,
    pub output_tokens_cv: f64,
    /// The answers at the 0th, 1st, ..., 100th percentiles (nearest rank), tokens: how long an
    /// offline run's last answers keep it going (`finite::Answers`).
    pub output_tokens_quantiles: Vec<f64>,
}

impl Dataset {
    /// The prompts, in tokens, at `perf::serving::PROMPT_PERCENTILES`.
    pub fn prompt_tokens(&self) -> [f64; 5] {
        [
            self.input_tokens_p50,
            self.input_tokens_p95,
            self.input_tokens_p99,
            self.input_tokens_p99_25,
            self.input_tokens_p99_5,
        ]
    }
}

/// The built-in dataset table, parsed once: every MLPerf case of every model run reads it.
pub fn datasets() -> &'static [Dataset] {
    static PARSED: LazyLock<Vec<Dataset>> = LazyLock::new(|| {
        let raw: RawDatasets = toml::from_str(DATASETS_TOML).expect("built-in datasets are valid");
        raw.dataset
    });
    &PARSED
}

/// Coefficients of variation of a case's prompt and answer lengths, and where they come from.
#[derive(Debug, Clone, PartialEq)]
pub struct Spread {
    /// The harness's mean lengths over the ones the file states (InferenceX states the top of
    /// its range).
    pub mean_ratio: f64,
    pub input_cv: f64,
    pub output_cv: f64,
    /// The prompts at `perf::serving::PROMPT_PERCENTILES` over the mean prompt, where the
    /// harness's distribution is known; `None` leaves gamma lengths of `input_cv`.
    pub input_quantiles: Option<[f64; 5]>,
    pub note: String,
}

/// Coefficient of variation of a length drawn uniformly from `[r * L, L]`:
/// `((1 - r) L / sqrt(12)) / ((1 + r) L / 2)`.
fn uniform_cv(r: f64) -> f64 {
    (1.0 - r) / (3f64.sqrt() * (1.0 + r))
}

/// The spread of `case`'s lengths, from its harness; an MLPerf case whose benchmark has no
/// dataset entry is not predicted (the reason says so).
pub fn of_case(case: &Case) -> Result<Spread, String> {
    match case.harness() {
        Harness::MlPerf => {
            let model = &case.setup.model;
            let d = datasets()
                .iter()
                .find(|d| &d.model == model)
                .ok_or_else(|| {
                    format!(
                        "the length spread of MLPerf's {model} dataset is not in src/validate/datasets.toml"
                    )
                })?;
            Ok(Spread {
                mean_ratio: 1.0,
                input_cv: d.input_tokens_cv,
                output_cv: d.output_tokens_cv,
                input_quantiles: Some(d.prompt_tokens().map(|q| q / d.input_tokens_mean)),
                note: format!(
                    "lengths spread as MLPerf's {} dataset: cv {} (prompts), {} (answers); prompts of {}, {} and {} tokens at p50, p95 and p99",
                    d.benchmark,
                    d.input_tokens_cv,
                    d.output_tokens_cv,
                    d.input_tokens_p50,
                    d.input_tokens_p95,
                    d.input_tokens_p99
                ),
            })
        }
        Harness::TensorRtLlm => Ok(Spread {
            mean_ratio: 1.0,
            input_cv: 0.0,
            output_cv: 0.0,
            input_quantiles: None,
            note: "fixed lengths (trtllm-bench's synthetic requests)".into(),
        }),
        Harness::InferenceX => {
            let r = INFERENCEX_RANGE_RATIO;
            let cv = uniform_cv(r);
            let mean = (1.0 + r) / 2.0;
            Ok(Spread {
                mean_ratio: mean,
                input_cv: cv,
                output_cv: cv,
                input_quantiles: Some(PROMPT_PERCENTILES.map(|p| (r + (1.0 - r) * p) / mean)),
                note: format!(
                    "lengths uniform over {r}-1x the stated ones (InferenceX): mean {}x, cv {cv:.3}",
                    (1.0 + r) / 2.0
                ),
            })
        }
        Harness::Other => Ok(Spread {
            mean_ratio: 1.0,
            input_cv: 1.0,
            output_cv: 1.0,
            input_quantiles: None,
            note: "length spread unknown: exponential lengths (cv 1), the sweeps' default".into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table parses, names each benchmark once, and its spreads are those of real
    /// datasets (hand-checked against scripts/mlperf-length-spreads.py's output).
    #[test]
    fn datasets_parse_and_are_distinct() {
        let d = datasets();
        assert_eq!(d.len(), 5);
        let mut models: Vec<&str> = d.iter().map(|d| d.model.as_str()).collect();
        models.sort_unstable();
        models.dedup();
        assert_eq!(models.len(), d.len());
        // The table's prompt fields are named for the prompt percentiles.
        assert_eq!(PROMPT_PERCENTILES, [0.5, 0.95, 0.99, 0.9925, 0.995]);
        let r1 = d.iter().find(|d| d.benchmark == "deepseek-r1").unwrap();
        assert_eq!((r1.samples, r1.output_tokens_cv), (4388, 1.253));
        assert_eq!(
            (
                r1.input_tokens_p50,
                r1.input_tokens_p95,
                r1.input_tokens_p99
            ),
            (901.0, 1312.0, 1432.0)
        );
        assert!(d.iter().all(|d| d.input_tokens_cv > 0.0
            && d.output_tokens_cv > 0.0
            && d.prompt_tokens().windows(2).all(|w| w[0] <= w[1])));
    }

    /// Llama-3.1-405B's prompts are capped (the longest is 19,988 tokens): the measured 99th
    /// percentile, 18,958 tokens, is what a case's TTFT takes, not the gamma of the same cv
    /// (Wilson-Hilferty at cv 0.431: `9428.64 (1 - a + 2.32635 sqrt(a))^3`, `a = cv^2 / 9`,
    /// 21,371 tokens).
    #[test]
    fn mlperf_prompts_take_the_measured_percentiles() {
        let d = datasets()
            .iter()
            .find(|d| d.benchmark == "llama3.1-405b")
            .unwrap();
        let q = d.prompt_tokens().map(|q| q / d.input_tokens_mean);
        let spread = crate::perf::serving::Spread {
            prompt_cv2: d.input_tokens_cv * d.input_tokens_cv,
            slot_variability: 1.0,
            prompt_quantiles: Some(q),
        };
        let mean = d.input_tokens_mean;
        assert!((spread.prompt_percentile(mean, 2) - 18_958.0).abs() < 1e-9);
        // Beyond the 99th, between the measured 99.25th (19,187) and 99.5th (19,494): the
        // 99.2542th, where a run of 8,313 queries must meet its limits, reads 19,192 tokens
        // (`19,187 + 307 x 0.000042 / 0.0025`); past the last, the last.
        let at = spread.prompt_quantile(mean, 0.992_542);
        assert!((at - 19_192.16).abs() < 0.01, "{at}");
        assert!((spread.prompt_quantile(mean, 0.99) - 18_958.0).abs() < 1e-6);
        assert!((spread.prompt_quantile(mean, 0.999) - 19_494.0).abs() < 1e-6);
        let gamma = crate::perf::serving::Spread {
            prompt_quantiles: None,
            ..spread
        };
        assert!((gamma.prompt_percentile(mean, 2) - 21_371.0).abs() < 1.0);
    }

    /// Uniform over [0.8 L, L]: mean 0.9 L, standard deviation 0.2 L / sqrt(12) = 0.05774 L.
    #[test]
    fn uniform_spread_by_hand() {
        assert!((uniform_cv(0.8) - 0.057_735 / 0.9).abs() < 1e-6);
        assert_eq!(uniform_cv(1.0), 0.0);
    }
}
