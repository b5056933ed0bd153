//! A `trtllm-bench throughput` run is finite: it queues a fixed number of requests of fixed
//! lengths at once and divides every output token by the time from the first request to the
//! last answer (`token_throughput_ns = total_output_tokens / total_latency_ns`,
//! tensorrt_llm/bench/dataclasses/statistics.py). The batch ramps up from empty while prompts
//! are admitted, and after the last admission it drains, so the run averages fewer sequences
//! per iteration than the steady state the engine model describes. With fixed lengths the
//! requests move in lock-step waves: a wave's sequences finish in the order they were
//! admitted, and each frees its slot for the next request (docs/validation.md, "How a case is
//! predicted").
//!
//! The run's length in iterations is a count; its time follows from the step time, which is
//! affine in the sequences a step carries (a fixed part, weights and launches, and a part per
//! sequence, KV reads and per-token work): with `s(n) = alpha + beta n`, the run takes
//! `alpha T + beta N L` seconds, `T` iterations and `N L` sequence-iterations whatever the
//! schedule, against `alpha + beta B` per `B` tokens in the steady state.

use super::cases::{Case, Harness};

/// `$num_requests` of TensorRT-LLM's perf-overview tables, by (input, output) length: the
/// v1.0-era page (docs/source/performance/perf-overview.md at 00f37686, "Preparing a Dataset",
/// the first ten pairs) and its successor (docs/source/developer-guide/perf-overview.md at
/// 03e27c7d, the last five). The two list no pair in common; the successor's tables also hold
/// 1000/1000 rows, for which its own list gives no count, so those take the earlier page's
/// 3,000 (the same as its 1024/1024). A pair neither lists has no count, and its case runs at
/// the steady state.
const TRTLLM_BENCH_REQUESTS: [((u32, u32), u32); 15] = [
    ((128, 128), 30_000),
    ((128, 2048), 3000),
    ((128, 4096), 1500),
    ((500, 2000), 3000),
    ((1000, 1000), 3000),
    ((1000, 2000), 1500),
    ((2048, 128), 3000),
    ((2048, 2048), 1500),
    ((5000, 500), 1500),
    ((20_000, 2000), 1000),
    ((1024, 1024), 3000),
    ((1024, 8192), 1500),
    ((8192, 1024), 1500),
    ((1024, 32_768), 1000),
    ((32_768, 1024), 1000),
];

/// The requests of a case's finite run: TensorRT-LLM's max-throughput tables at lengths their
/// pages list. Other harnesses are timed at the steady state: InferenceX's client keeps its
/// concurrency, MLPerf's server runs are timed at a steady rate, and its offline runs (ten
/// minutes at least, of the dataset's spread lengths) drain in a way this lock-step count of
/// fixed lengths does not describe (docs/validation.md, "What the model still misses").
pub fn requests_of(case: &Case) -> Option<u32> {
    let s = &case.setup;
    if case.harness() != Harness::TensorRtLlm || s.scenario != "max-throughput" {
        return None;
    }
    trtllm_bench_requests(s.input_tokens?, s.output_tokens?)
}

/// The requests `trtllm-bench` ran at these mean lengths in TensorRT-LLM's tables, if listed.
fn trtllm_bench_requests(input_tokens: f64, output_tokens: f64) -> Option<u32> {
    TRTLLM_BENCH_REQUESTS
        .iter()
        .find(|((i, o), _)| f64::from(*i) == input_tokens && f64::from(*o) == output_tokens)
        .map(|&(_, n)| n)
}

/// Iterations a run of `requests` takes when at most `concurrency` sequences run at once, at
/// most `admitted_per_iteration` prompts join per iteration, and each sequence stays
/// `answer_tokens` iterations (its first token comes with its prompt). Request `k` joins at
/// `floor(k / W) L + floor((k mod W) / a)` with `W = min(concurrency, requests, a L)` the
/// sequences that run together (a batch that fills slower than sequences finish holds only
/// `a L`), and the run ends when the last request has run `L` iterations.
pub fn iterations(
    requests: u64,
    concurrency: u64,
    admitted_per_iteration: u64,
    answer_tokens: u64,
) -> u64 {
    let (n, a, l) = (
        requests,
        admitted_per_iteration.max(1),
        answer_tokens.max(1),
    );
    if n == 0 {
        return 0;
    }
    let w = running(n, concurrency, a, l);
    let last = n - 1;
    (last / w) * l + (last % w) / a + l
}

/// The sequences that run together: `min(concurrency, requests, a L)`, at least one.
pub fn running(requests: u64, concurrency: u64, admitted_per_iteration: u64, l: u64) -> u64 {
    concurrency
        .min(requests)
        .min(admitted_per_iteration.max(1).saturating_mul(l.max(1)))
        .max(1)
}

/// A finite run's output tokens per second, from the steady-state step times at `w` and at
/// about half of it (`(w, s_w)` and `(h, s_h)`, seconds per step): the chord between them
/// gives `alpha` and `beta`, each kept at zero or above, and the run takes
/// `alpha T + beta N L`.
pub fn tokens_per_s(requests: u64, answer_tokens: u64, iterations: u64, at: Chord) -> f64 {
    let Chord { w, s_w, h, s_h } = at;
    let beta = if w > h {
        ((s_w - s_h) / (w - h)).max(0.0)
    } else {
        0.0
    };
    let alpha = (s_w - beta * w).max(0.0);
    let tokens = requests as f64 * answer_tokens as f64;
    tokens / (alpha * iterations as f64 + beta * tokens)
}

/// Two steady-state points: `w` sequences take `s_w` seconds a step, `h` take `s_h`.
#[derive(Debug, Clone, Copy)]
pub struct Chord {
    pub w: f64,
    pub s_w: f64,
    pub h: f64,
    pub s_h: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hand-counted schedules. Three requests, one slot, answers of 4: they run one after the
    /// other, 12 iterations. Ten requests, four slots, two admitted per iteration, answers of
    /// 5: waves of four join at 0,0,1,1 / 5,5,6,6 / 10,10, so the last answers at 15.
    #[test]
    fn iterations_count_the_waves() {
        assert_eq!(iterations(3, 1, 1, 4), 12);
        assert_eq!(iterations(10, 4, 2, 5), 15);
        // All at once: one wave that joins in 1000 / 8 = 125 iterations.
        assert_eq!(iterations(1000, 4096, 8, 1000), 124 + 1000);
        // A batch that fills slower than it drains holds a L = 2 x 3 = 6: the schedule is one
        // request every half iteration, the last (k = 19) at 9, done at 12.
        assert_eq!(running(20, 100, 2, 3), 6);
        assert_eq!(iterations(20, 100, 2, 3), 12);
        assert_eq!(iterations(0, 4, 2, 5), 0);
    }

    /// Brute force: a step-by-step scheduler (admit up to `a` while below the cap, every running
    /// sequence gets a token, sequences leave after `L` tokens) counts the same iterations.
    #[test]
    fn iterations_agree_with_a_step_by_step_scheduler() {
        let simulate = |n: u64, cap: u64, a: u64, l: u64| {
            let (mut admitted, mut done, mut it) = (0u64, 0u64, 0u64);
            let mut left: Vec<u64> = Vec::new();
            while done < n {
                let k = a.min(cap - left.len() as u64).min(n - admitted);
                left.extend(std::iter::repeat_n(l, k as usize));
                admitted += k;
                for r in &mut left {
                    *r -= 1;
                }
                let before = left.len();
                left.retain(|&r| r > 0);
                done += (before - left.len()) as u64;
                it += 1;
            }
            it
        };
        for n in [1, 2, 7, 30, 101] {
            for cap in [1, 3, 8, 64] {
                for a in [1, 2, 5] {
                    for l in [1, 4, 9] {
                        assert_eq!(
                            iterations(n, cap, a, l),
                            simulate(n, cap, a, l),
                            "n {n} cap {cap} a {a} l {l}"
                        );
                    }
                }
            }
        }
    }

    /// A run in lock-step with no ramp (everyone admitted at once, one wave) is the steady
    /// state; a half-empty last wave costs its fixed step time again.
    #[test]
    fn throughput_is_steady_for_one_full_wave_and_less_with_a_partial_one() {
        // s(n) = 10 ms + 0.02 ms n: 1000 in flight, 30 ms a step, 33,333 tokens/s.
        let chord = Chord {
            w: 1000.0,
            s_w: 0.030,
            h: 500.0,
            s_h: 0.020,
        };
        let one_wave = tokens_per_s(1000, 100, iterations(1000, 1000, 1000, 100), chord);
        assert!((one_wave - 1000.0 / 0.030).abs() < 1e-6, "{one_wave}");
        // 1500 requests: 200 iterations, 150,000 sequence-iterations: 2 + 3 = 5 s, 30,000/s.
        let t = iterations(1500, 1000, 1000, 100);
        assert_eq!(t, 200);
        let partial = tokens_per_s(1500, 100, t, chord);
        assert!((partial - 30_000.0).abs() < 1e-6, "{partial}");
    }

    /// Only TensorRT-LLM's max-throughput tables run finite: the same row from MLPerf, or at a
    /// pair of lengths the pages do not list, is timed at the steady state.
    #[test]
    fn only_trtllm_bench_tables_run_finite() {
        let requests = |source: &str, isl: u32, scenario: &str| {
            let row = format!(
                "c,inference,{source},u,llama-3.1-70b,h200-sxm,1,1,1,1,,,fp8,fp8,,{isl},1000,{scenario},,,,,output_tokens_per_s,1000,tokens/s,"
            );
            let case = crate::validate::cases::tests::parse_text(&[&row])
                .unwrap()
                .remove(0);
            requests_of(&case)
        };
        let trt = "TensorRT-LLM docs developer-guide/perf-overview.md";
        assert_eq!(requests(trt, 1000, "max-throughput"), Some(3000));
        assert_eq!(requests(trt, 1024, "max-throughput"), None);
        assert_eq!(requests(trt, 1000, "min-latency"), None);
        assert_eq!(
            requests("MLPerf Inference v5.1 closed - NVIDIA", 1000, "offline"),
            None
        );
    }

    #[test]
    fn requests_come_from_the_tables() {
        assert_eq!(trtllm_bench_requests(128.0, 128.0), Some(30_000));
        assert_eq!(trtllm_bench_requests(1024.0, 32_768.0), Some(1000));
        assert_eq!(trtllm_bench_requests(1000.0, 1000.0), Some(3000));
        assert_eq!(trtllm_bench_requests(1000.0, 1001.0), None);
    }
}
