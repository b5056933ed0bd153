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
//!
//! An MLPerf offline run is finite as well: loadgen issues one query of all its samples at once
//! and divides them by the time to the last answer (`result_samples_per_second`, `results.cc`
//! of mlcommons/inference). Its answers spread as the dataset's, so it does not move in waves:
//! the engine runs full until the last sample is admitted, and then drains, each of the `B`
//! running sequences finishing its remaining answer ([`Answers`]).

use super::cases::{Case, Harness};
use super::lengths::datasets;
use super::submissions;

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

/// A case's finite run, where its harness runs one and its length is known.
#[derive(Debug, Clone, PartialEq)]
pub enum Run {
    /// `trtllm-bench throughput`: `requests` of the stated lengths, in lock-step waves.
    LockStep { requests: u32 },
    /// An MLPerf offline query of `samples` answers that spread as its dataset's.
    Spread { samples: u64, answers: Answers },
}

/// The finite run of a case: TensorRT-LLM's max-throughput tables at lengths their pages list,
/// and MLPerf offline runs whose query size the submission's log states (`samples` in
/// `mlperf-submissions.toml`) over a dataset whose answer lengths are known
/// (`output_tokens_quantiles`). Other cases are timed at the steady state: InferenceX's client
/// keeps its concurrency, and MLPerf's server runs are timed at a steady rate.
pub fn of_case(case: &Case) -> Option<Run> {
    let s = &case.setup;
    match (case.harness(), s.scenario.as_str()) {
        (Harness::TensorRtLlm, "max-throughput") => {
            trtllm_bench_requests(s.input_tokens?, s.output_tokens?)
                .map(|requests| Run::LockStep { requests })
        }
        (Harness::MlPerf, "offline") => {
            let samples = submissions::of(&case.id)?.samples?;
            let d = datasets().iter().find(|d| d.model == s.model)?;
            let answers = Answers::new(&d.output_tokens_quantiles, s.output_tokens?)?;
            Some(Run::Spread { samples, answers })
        }
        _ => None,
    }
}

/// How long answers are, as a distribution: the dataset's answer lengths at the 0th to 100th
/// percentiles, scaled to the case's mean answer, read as piecewise uniform between them (each
/// of the 100 intervals holds a hundredth of the answers). What an offline run's drain needs is
/// the *residual* answer of a sequence running when the last sample is admitted: a slot that
/// runs answers back to back is met, at a random iteration, inside an answer of length `L` with
/// probability `L / E[L]` (length-biased), at a uniform point of it, so the residual `R`
/// survives `x` with probability `S_R(x) = E[(L - x)+] / E[L]`, and `E[R] = E[L^2] / (2 E[L])`
/// (renewal theory's residual life; Ross, "Introduction to Probability Models", 7.3). The
/// drain lasts until the longest of the `B` running residuals ends: `E[max] = integral of
/// 1 - (1 - S_R(x))^B dx` over `[0, L_max]`, from `S_R` on a grid.
#[derive(Debug, Clone, PartialEq)]
pub struct Answers {
    /// `E[L]` and `E[R]`, tokens.
    pub mean: f64,
    pub mean_residual: f64,
    /// `S_R` and the answers' own survival `S_L(x) = P(L > x)` at `x = k dx`,
    /// `k = 0 .. GRID`, and the grid step, tokens.
    residual: Vec<f64>,
    length: Vec<f64>,
    dx: f64,
}

/// Intervals of the survival grids: an integral over them errs by under `L_max / 2048`.
const GRID: usize = 2048;

impl Answers {
    /// From the answers at the 0th .. 100th percentiles (`quantiles`, 101 ascending values),
    /// scaled so their mean is `mean`; `None` for a table of another shape or a mean at or below
    /// zero.
    pub fn new(quantiles: &[f64], mean: f64) -> Option<Answers> {
        let ascending = quantiles.windows(2).all(|w| w[0] <= w[1]);
        if quantiles.len() != 101
            || !ascending
            || quantiles[0] < 0.0
            || mean.is_nan()
            || mean <= 0.0
        {
            return None;
        }
        // Each interval [a, b] holds 1/100 of the answers uniformly: E[L] = sum (a + b) / 200,
        // E[L^2] = sum (a^2 + ab + b^2) / 300.
        let (m1, m2) = quantiles.windows(2).fold((0.0, 0.0), |(m1, m2), w| {
            let (a, b) = (w[0], w[1]);
            (m1 + (a + b) / 200.0, m2 + (a * a + a * b + b * b) / 300.0)
        });
        if m1.is_nan() || m1 <= 0.0 {
            return None;
        }
        let k = mean / m1;
        let q: Vec<f64> = quantiles.iter().map(|v| v * k).collect();
        let longest = q[100];
        let dx = longest / GRID as f64;
        // A sum over the intervals [a, b], each of mass 1/100.
        let over_intervals = |f: &dyn Fn(f64, f64) -> f64| -> f64 {
            q.windows(2).map(|w| f(w[0], w[1]) / 100.0).sum()
        };
        // E[(L - x)+]: (b - x)^2 / (2 (b - a)) of an interval holding x, (a + b) / 2 - x of one
        // above it, nothing of one below it.
        let excess = |x: f64| {
            over_intervals(&|a, b| {
                if x >= b {
                    0.0
                } else if x <= a {
                    (a + b) / 2.0 - x
                } else {
                    (b - x) * (b - x) / (2.0 * (b - a))
                }
            })
        };
        // P(L > x): the intervals above x, and the part of the one holding it.
        let beyond = |x: f64| {
            over_intervals(&|a, b| {
                if x >= b {
                    0.0
                } else if x < a || b == a {
                    1.0
                } else {
                    (b - x) / (b - a)
                }
            })
        };
        let grid = |f: &dyn Fn(f64) -> f64| -> Vec<f64> {
            (0..=GRID)
                .map(|i| f(i as f64 * dx).clamp(0.0, 1.0))
                .collect()
        };
        Some(Answers {
            mean,
            mean_residual: m2 * k * k / (2.0 * mean),
            residual: grid(&|x| excess(x) / mean),
            length: grid(&beyond),
            dx,
        })
    }

    /// Expected longest residual answer of `running` sequences running independently, tokens.
    pub fn longest_residual(&self, running: f64) -> f64 {
        self.longest(&self.residual, running)
    }

    /// Expected longest of `n` answers started together, tokens.
    pub fn longest_answer(&self, n: f64) -> f64 {
        self.longest(&self.length, n)
    }

    /// `E[max]` of `n` independent draws with survival `survival` on the grid: the integral of
    /// `1 - (1 - S(x))^n` (trapezoid rule).
    fn longest(&self, survival: &[f64], n: f64) -> f64 {
        let any = |s: f64| 1.0 - (1.0 - s).powf(n);
        let inner: f64 = survival[1..GRID].iter().map(|&s| any(s)).sum();
        let ends = (any(survival[0]) + any(survival[GRID])) / 2.0;
        (inner + ends) * self.dx
    }
}

/// Iterations an offline run of `samples` answers spread as `answers` takes with at most
/// `concurrency` running and `admitted_per_iteration` prompts joining per iteration. With more
/// samples than slots, the run's `N E[L]` sequence-iterations take `N E[L] / B` iterations at
/// its `B` slots, plus what the slots stand partly empty: the fill, `B / a` iterations in which
/// they fill from none, half of it; and the drain, `E[max R] - E[R]` iterations, the longest
/// residual answer against the iterations the `B E[R]` residual tokens would take at a full
/// batch. A query the slots hold whole is one wave: the fill, half of it, and the longest of
/// its answers.
pub fn spread_iterations(
    samples: u64,
    concurrency: u64,
    admitted_per_iteration: u64,
    answers: &Answers,
) -> f64 {
    let b = concurrency.min(samples).max(1) as f64;
    let fill = b / admitted_per_iteration.max(1) as f64;
    if samples <= concurrency {
        return fill / 2.0 + answers.longest_answer(b);
    }
    let drain = answers.longest_residual(b) - answers.mean_residual;
    samples as f64 * answers.mean / b + fill / 2.0 + drain.max(0.0)
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

/// A finite run's output tokens per second, `tokens` answered in `iterations`, from the
/// steady-state step times at `w` and at about half of it (`(w, s_w)` and `(h, s_h)`, seconds
/// per step): the chord between them gives `alpha` and `beta`, each kept at zero or above, and
/// the run takes `alpha T + beta N L`.
pub fn tokens_per_s(tokens: f64, iterations: f64, at: Chord) -> f64 {
    let Chord { w, s_w, h, s_h } = at;
    let beta = if w > h {
        ((s_w - s_h) / (w - h)).max(0.0)
    } else {
        0.0
    };
    let alpha = (s_w - beta * w).max(0.0);
    tokens / (alpha * iterations + beta * tokens)
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
        let one_wave = tokens_per_s(
            1000.0 * 100.0,
            iterations(1000, 1000, 1000, 100) as f64,
            chord,
        );
        assert!((one_wave - 1000.0 / 0.030).abs() < 1e-6, "{one_wave}");
        // 1500 requests: 200 iterations, 150,000 sequence-iterations: 2 + 3 = 5 s, 30,000/s.
        let t = iterations(1500, 1000, 1000, 100);
        assert_eq!(t, 200);
        let partial = tokens_per_s(1500.0 * 100.0, t as f64, chord);
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
            match of_case(&case) {
                Some(Run::LockStep { requests }) => Some(requests),
                _ => None,
            }
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

    /// The answer table's moments and survival grids, by hand. Lengths uniform on [0, 100]
    /// (quantiles 0, 1, ..., 100): E[L] = 50, E[L^2] = 10,000 / 3, so E[R] = E[L^2] / (2 E[L])
    /// = 100 / 3. The longest of one draw is its mean (the survival integrates to it); the
    /// longest of `n` uniform answers is `100 n / (n + 1)`. Equal lengths L: the residual is
    /// uniform on [0, L], E[R] = L / 2, and the longest of `n` residuals `L n / (n + 1)`.
    #[test]
    fn answers_have_their_moments_and_extremes() {
        let uniform: Vec<f64> = (0..=100).map(f64::from).collect();
        let a = Answers::new(&uniform, 50.0).unwrap();
        assert!(
            (a.mean_residual - 100.0 / 3.0).abs() < 1e-9,
            "{}",
            a.mean_residual
        );
        assert!((a.longest_answer(1.0) - 50.0).abs() < 0.05);
        assert!((a.longest_residual(1.0) - 100.0 / 3.0).abs() < 0.05);
        assert!(
            (a.longest_answer(9.0) - 90.0).abs() < 0.1,
            "{}",
            a.longest_answer(9.0)
        );
        // Scaled to another mean, every length scales with it.
        let doubled = Answers::new(&uniform, 100.0).unwrap();
        assert!((doubled.mean_residual - 200.0 / 3.0).abs() < 1e-9);
        assert!((doubled.longest_answer(9.0) - 180.0).abs() < 0.2);
        let equal = Answers::new(&[1000.0; 101], 1000.0).unwrap();
        assert!((equal.mean_residual - 500.0).abs() < 1e-9);
        assert!((equal.longest_residual(3.0) - 750.0).abs() < 1.0);
        assert!((equal.longest_answer(3.0) - 1000.0).abs() < 1.0);
        // Tables that are no distribution.
        assert_eq!(Answers::new(&uniform[..100], 50.0), None);
        assert_eq!(Answers::new(&[0.0; 101], 50.0), None);
        let mut descending = uniform.clone();
        descending.reverse();
        assert_eq!(Answers::new(&descending, 50.0), None);
        assert_eq!(Answers::new(&uniform, 0.0), None);
    }

    /// Brute force: a step-by-step scheduler runs `N` samples with lengths drawn from the table
    /// (piecewise uniform, as `Answers` reads it) through `B` slots, admitting at most `a`
    /// prompts an iteration, every running sequence gaining a token an iteration; averaged over
    /// seeds, its iterations are `spread_iterations`' within 2 %. The drain is most of the
    /// difference from the steady count `N E[L] / B` here (a long tail: a tenth of the answers
    /// ten times the rest), which the formula must carry.
    #[test]
    fn spread_iterations_agree_with_a_step_by_step_scheduler() {
        // 90 % of answers on [10, 30], 10 % on [200, 400].
        let quantiles: Vec<f64> = (0..=100)
            .map(|i| match i {
                0..=90 => 10.0 + 20.0 * f64::from(i) / 90.0,
                _ => 200.0 + 200.0 * f64::from(i - 91) / 9.0,
            })
            .collect();
        let mean = quantiles
            .windows(2)
            .map(|w| (w[0] + w[1]) / 200.0)
            .sum::<f64>();
        let answers = Answers::new(&quantiles, mean).unwrap();
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut uniform = || {
            // xorshift64*
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            (state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
        };
        let (n, b, a) = (3000u64, 64u64, 8u64);
        let seeds = 40;
        let mut total = 0.0;
        for _ in 0..seeds {
            let mut lengths: Vec<u64> = (0..n)
                .map(|_| {
                    let u = uniform() * 100.0;
                    let i = (u as usize).min(99);
                    let (lo, hi) = (quantiles[i], quantiles[i + 1]);
                    (lo + (hi - lo) * (u - i as f64)).round().max(1.0) as u64
                })
                .collect();
            let (mut running, mut iterations) = (Vec::new(), 0u64);
            while !lengths.is_empty() || !running.is_empty() {
                let k = a.min(b - running.len() as u64) as usize;
                running.extend(lengths.drain(..k.min(lengths.len())));
                for r in &mut running {
                    *r -= 1;
                }
                running.retain(|&r| r > 0);
                iterations += 1;
            }
            total += iterations as f64;
        }
        let simulated = total / f64::from(seeds);
        let formula = spread_iterations(n, b, a, &answers);
        let steady = n as f64 * answers.mean / b as f64;
        assert!(
            (formula / simulated - 1.0).abs() < 0.02,
            "formula {formula:.0}, simulated {simulated:.0}, steady {steady:.0}"
        );
        assert!(
            simulated > 1.1 * steady,
            "the drain matters here: {simulated} {steady}"
        );
        // A query the slots hold whole is one wave: the fill and the longest answer.
        let one_wave = spread_iterations(8, 64, 8, &answers);
        assert!((one_wave - (0.5 + answers.longest_answer(8.0))).abs() < 1e-9);
    }

    /// An MLPerf offline case whose submission logs its query size runs finite, over its
    /// dataset's answers; one the table does not list runs at the steady state.
    #[test]
    fn mlperf_offline_runs_are_finite_where_their_query_is_logged() {
        let row = |id: &str| {
            format!(
                "{id},inference,MLPerf Inference v5.1 closed - NVIDIA B200,u,deepseek-v3,b200,8,1,1,8,8,,nvfp4,fp8,512,803.79,4043.45,offline,,,,,output_tokens_per_s,33379,tokens/s,"
            )
        };
        let run = |id: &str| {
            let case = crate::validate::cases::tests::parse_text(&[&row(id)])
                .unwrap()
                .remove(0);
            of_case(&case)
        };
        match run("mlperf-5p1-nvidia-b200-sxm-180gbx8-deepseek-r1-offline") {
            Some(Run::Spread { samples, answers }) => {
                assert_eq!(samples, 26_328);
                assert!((answers.mean - 4043.45).abs() < 1e-9);
                // DeepSeek-R1's answers spread widely (cv 1.25): a running one has more left
                // than a whole one's mean, and 3,840 of them hold one near the 32,768 cap.
                assert!(answers.mean_residual > answers.mean);
                let longest = answers.longest_residual(3840.0);
                assert!(longest > 30_000.0 && longest < 32_768.0 * 1.01, "{longest}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(run("mlperf-5p1-unlisted-offline"), None);
    }

    #[test]
    fn requests_come_from_the_tables() {
        assert_eq!(trtllm_bench_requests(128.0, 128.0), Some(30_000));
        assert_eq!(trtllm_bench_requests(1024.0, 32_768.0), Some(1000));
        assert_eq!(trtllm_bench_requests(1000.0, 1000.0), Some(3000));
        assert_eq!(trtllm_bench_requests(1000.0, 1001.0), None);
    }
}
