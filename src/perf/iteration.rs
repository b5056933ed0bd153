//! What one engine iteration costs besides its kernels, built from its parts (docs/model.md,
//! "Per-iteration cost"): kernel launches where an iteration is not replayed from a CUDA graph,
//! the scheduler's CPU work, and how much of that work the engine overlaps with the GPU.
//!
//! - **CUDA graphs.** Engines capture decode iterations in CUDA graphs up to a batch size and
//!   replay them with no per-kernel launch cost; the measured kernel surfaces time graph
//!   replays (AIConfigurator's collectors, SPEC.md section 7), so a graphed iteration costs its
//!   kernels. An iteration outside the graphs launches every kernel from the host: it takes at
//!   least `launches x LAUNCH_S`, since the GPU cannot run kernels faster than they are issued.
//! - **Scheduler CPU work** (scheduling, input preparation, sampling bookkeeping) grows with the
//!   running sequences. All three engines overlap it with the previous iteration's GPU work by
//!   default (TensorRT-LLM's overlap scheduler, `docs/source/features/overlap-scheduler.md`;
//!   SGLang's overlap schedule, on unless `--disable-overlap-schedule`; vLLM's async scheduling,
//!   default from v0.14.0, vllm-project/vllm PR #27614), so an iteration takes the longer of the
//!   two plus a short residual that does not overlap. The launches of an eager iteration are
//!   host work too: the thread that schedules also issues every kernel, so an eager
//!   iteration's host time is its scheduling plus `launches x LAUNCH_S`.

use crate::vocab::ServingEngine;

/// Host-side cost of launching one kernel outside a CUDA graph, seconds: 6.28 us per operator
/// through PyTorch's fast path on B200 (TensorRT-LLM PR #13149, measured; 4.72 us for a plain
/// launch, 11.67 us through `custom_op`).
pub const LAUNCH_S: f64 = 6.28e-6;

/// Kernels per transformer layer of a decode step: residual-add-norm, QKV, attention, output
/// projection, residual-add-norm, gate-up, activation, down (AIConfigurator's op list for Llama,
/// `aiconfigurator_core/sdk/models/llama.py`), plus two all-reduces under tensor parallelism.
pub const KERNELS_PER_LAYER: f64 = 8.0;
pub const TP_KERNELS_PER_LAYER: f64 = 2.0;

/// Extra kernels of an MoE layer over a dense MLP: router GEMM, top-k, permute (dispatch),
/// unpermute (combine) (TensorRT-LLM's fused MoE path as AIConfigurator lists it,
/// `sdk/models/moe.py`: `moe_gate`, `moe_pre_dispatch`, `moe_post_dispatch`, with the grouped
/// GEMMs in place of the MLP's).
pub const MOE_EXTRA_KERNELS_PER_LAYER: f64 = 4.0;

/// Part of an iteration's CPU work that does not overlap the GPU even with overlap scheduling,
/// seconds: 150-170 us between decode steps in vLLM's async-scheduling prototype with CUDA
/// graphs (vllm-project/vllm PR #11133, measured).
pub const RESIDUAL_S: f64 = 0.15e-3;

/// Scheduler CPU seconds per running sequence per iteration, by engine: request bookkeeping,
/// input preparation and sampler post-processing in the engine's Python executor, which grow
/// with the batch.
///
/// - TensorRT-LLM: 27.66 us. Its PyTorch executor took 45.11 ms of host time per iteration
///   (`host_step_time`, the executor loop's wall time on the host) serving gpt-oss-120b at
///   `max_batch_size` 1536 per attention-DP rank, 1k/1k at concurrency 3072, on GB200, where
///   "the host overhead is the bottleneck" (NVIDIA/TensorRT-LLM PR #10273, measured). That time
///   holds the fixed part (`cpu_ms_per_iteration`, 0.5 ms) and the launches of the iterations
///   that run eagerly: 1,536 sequences of 1,000 output tokens start 1.536 prompts per iteration,
///   so `1 - exp(-1.536) = 78.5 %` of iterations carry a prompt and, mixed, run outside the CUDA
///   graphs, each launching `launches(36, 36, 1) = 432` kernels at `LAUNCH_S`: 2.13 ms on
///   average. `(45.11 - 0.5 - 2.13) ms / 1536 = 27.66 us`.
/// - vLLM: 19.5 us. 5-6 ms between synchronous decode steps at batch 256 (vLLM V1,
///   vllm-project/vllm issue #10634, measured): `(5.5 - 0.5) ms / 256`.
/// - SGLang: ESTIMATE, vLLM's figure. No published per-sequence measurement was found; its
///   scheduler is likewise a Python loop over the running requests.
pub fn host_s_per_sequence(engine: ServingEngine) -> f64 {
    match engine {
        ServingEngine::Trtllm => 27.66e-6,
        ServingEngine::Vllm | ServingEngine::Sglang => 19.5e-6,
    }
}

/// Mixed iterations (decode plus prompt tokens) and prefill iterations: the token count up to
/// which an engine replays them from CUDA graphs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Graphs {
    /// Decode iterations are replayed up to this many query tokens per rank.
    pub decode_max_tokens: f64,
    /// Mixed iterations up to this many tokens (0: always launched eagerly).
    pub mixed_max_tokens: f64,
    /// Prefill-only iterations up to this many tokens.
    pub prefill_max_tokens: f64,
}

impl Graphs {
    /// An engine's CUDA-graph coverage on a GPU of `hbm_gb` GB under tensor parallelism `tp`.
    ///
    /// - TensorRT-LLM: `trtllm-bench`, which ran TensorRT-LLM's published tables, enables padding
    ///   and captures up to its maximum batch (`tensorrt_llm/bench/benchmark/utils/general.py`),
    ///   so every decode batch is graphed; context and mixed iterations run eagerly (piecewise
    ///   prefill graphs are opt-in, TensorRT-LLM docs "Torch Compile & Prefill CUDA Graph").
    /// - vLLM: `FULL_AND_PIECEWISE` graphs (PR #25444) up to `max_cudagraph_capture_size =
    ///   min(2 max_num_seqs, 512)` tokens (`vllm/config/vllm.py`, `_set_cudagraph_sizes`), for
    ///   decode and mixed batches alike.
    /// - SGLang: decode graphs up to `cuda_graph_max_bs`, 256 below 160 GB with tp < 4, else 512
    ///   (`server_args.py`, `_handle_gpu_memory_settings`); prefill runs as its own forward
    ///   (`--enable-mixed-chunk` off) in piecewise graphs up to `chunked_prefill_size`, 8192
    ///   below 160 GB and 16384 above (PR #16331).
    pub fn of(engine: ServingEngine, hbm_gb: f64, tp: u32) -> Graphs {
        match engine {
            ServingEngine::Trtllm => Graphs {
                decode_max_tokens: f64::INFINITY,
                mixed_max_tokens: 0.0,
                prefill_max_tokens: 0.0,
            },
            ServingEngine::Vllm => Graphs {
                decode_max_tokens: 512.0,
                mixed_max_tokens: 512.0,
                prefill_max_tokens: 512.0,
            },
            ServingEngine::Sglang => {
                let large = hbm_gb >= 160.0;
                Graphs {
                    decode_max_tokens: if large || tp >= 4 { 512.0 } else { 256.0 },
                    mixed_max_tokens: if large { 16384.0 } else { 8192.0 },
                    prefill_max_tokens: if large { 16384.0 } else { 8192.0 },
                }
            }
        }
    }
}

/// The per-iteration cost of one configuration's engine.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IterationCost {
    pub graphs: Graphs,
    /// Scheduler CPU seconds per iteration, and per running sequence on the rank (calibration).
    pub cpu_s: f64,
    pub cpu_per_sequence_s: f64,
}

/// The GPU side of an iteration: its graphed time and what launching it eagerly would take.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GpuIteration {
    /// Seconds of the iteration's kernels, communication and hops (as graph replays).
    pub kernels_s: f64,
    /// Seconds each stage step would take with every kernel launched from the host, summed over
    /// the pipeline's stage steps: `pp x max(stage_s, launches x LAUNCH_S)` minus the graphed
    /// stage time, i.e. the extra time of an eager iteration.
    pub eager_extra_s: f64,
    /// Host seconds to launch every kernel of an eager iteration, `pp x launches x LAUNCH_S`.
    pub launch_s: f64,
}

impl GpuIteration {
    /// An iteration of `pp` stage steps of `stage_s` each plus `other_s` (hops, drafts), each
    /// stage launching `launches` kernels.
    pub fn new(pp: f64, stage_s: f64, other_s: f64, launches: f64) -> GpuIteration {
        GpuIteration {
            kernels_s: pp * stage_s + other_s,
            eager_extra_s: pp * (launches * LAUNCH_S - stage_s).max(0.0),
            launch_s: pp * launches * LAUNCH_S,
        }
    }
}

/// Kernels one stage step launches.
pub fn launches(layers: f64, moe_layers: f64, tp: u32) -> f64 {
    let tp_kernels = if tp > 1 { TP_KERNELS_PER_LAYER } else { 0.0 };
    layers * (KERNELS_PER_LAYER + tp_kernels) + moe_layers * MOE_EXTRA_KERNELS_PER_LAYER
}

impl IterationCost {
    /// Seconds of a steady decode iteration with `queries` query tokens and `sequences` running
    /// sequences per rank, of which `mixed_share` of iterations also carry a prompt of
    /// `mixed_tokens` tokens in all (decode plus prompt chunk).
    pub fn decode_s(
        &self,
        gpu: &GpuIteration,
        queries: f64,
        sequences: f64,
        mixed_share: f64,
        mixed_tokens: f64,
    ) -> f64 {
        let eager_share = if queries > self.graphs.decode_max_tokens {
            1.0
        } else if mixed_tokens > self.graphs.mixed_max_tokens {
            mixed_share
        } else {
            0.0
        };
        let gpu_s = gpu.kernels_s + eager_share * gpu.eager_extra_s;
        let cpu_s = self.cpu_s + self.cpu_per_sequence_s * sequences + eager_share * gpu.launch_s;
        gpu_s.max(cpu_s) + RESIDUAL_S
    }

    /// Seconds of a prefill-only iteration of `tokens` prompt tokens per rank. A prompt alone on
    /// an idle engine (`overlapped = false`) waits for its iteration's CPU work; a prefill pool
    /// in steady state overlaps it.
    pub fn prefill_s(
        &self,
        gpu: &GpuIteration,
        tokens: f64,
        prompts: f64,
        overlapped: bool,
    ) -> f64 {
        let eager = tokens > self.graphs.prefill_max_tokens;
        let gpu_s = if eager {
            gpu.kernels_s + gpu.eager_extra_s
        } else {
            gpu.kernels_s
        };
        let cpu_s = self.cpu_s + self.cpu_per_sequence_s * prompts;
        if overlapped {
            // The host launches the next iteration's kernels while the GPU runs this one.
            let launch_s = if eager { gpu.launch_s } else { 0.0 };
            gpu_s.max(cpu_s + launch_s) + RESIDUAL_S
        } else {
            // Alone, the GPU runs each kernel as it is launched: the launches are inside
            // `gpu_s` (never shorter than them), after the iteration's scheduling.
            gpu_s + cpu_s + RESIDUAL_S
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cost(engine: ServingEngine) -> IterationCost {
        IterationCost {
            graphs: Graphs::of(engine, 80.0, 1),
            cpu_s: 0.5e-3,
            cpu_per_sequence_s: 15e-6,
        }
    }

    /// The per-sequence host cost reproduces its source: TensorRT-LLM's executor at 1,536
    /// sequences per rank, 78.5 % of its iterations mixed and eager, spends
    /// 0.5 ms + 1536 x 27.66 us + 0.785 x 432 x 6.28 us = 45.11 ms of host time per iteration,
    /// the 45.11 ms measured (PR #10273); vLLM at 256 sequences 5.49 ms (issue #10634: 5-6 ms).
    /// A GPU step shorter than that waits for the host.
    #[test]
    fn host_cost_per_sequence_reproduces_its_measurements() {
        let trt = IterationCost {
            cpu_per_sequence_s: host_s_per_sequence(ServingEngine::Trtllm),
            ..cost(ServingEngine::Trtllm)
        };
        let gpu = GpuIteration::new(1.0, 30e-3, 0.0, launches(36.0, 36.0, 1));
        let mixed = 1.0 - (-1.536f64).exp();
        let step = trt.decode_s(&gpu, 1536.0, 1536.0, mixed, 1536.0 + 1000.0) - RESIDUAL_S;
        let by_hand = 0.5e-3 + 1536.0 * 27.66e-6 + mixed * 432.0 * 6.28e-6;
        assert!((step - by_hand).abs() < 1e-12, "{step}");
        assert!((step / 45.11e-3 - 1.0).abs() < 0.001, "{step}");
        // Graphed throughout, the same executor needs only its scheduling.
        let graphed = trt.decode_s(&gpu, 1536.0, 1536.0, 0.0, 0.0) - RESIDUAL_S;
        assert!((graphed - (0.5e-3 + 1536.0 * 27.66e-6)).abs() < 1e-12);
        let vllm = host_s_per_sequence(ServingEngine::Vllm);
        let at_256 = 0.5e-3 + vllm * 256.0;
        assert!((5e-3..=6e-3).contains(&at_256), "{at_256}");
        assert_eq!(host_s_per_sequence(ServingEngine::Sglang), vllm);
    }

    /// A graphed decode iteration costs its kernels plus the residual when the GPU outlasts the
    /// CPU; when the CPU work is longer, the CPU sets the pace.
    #[test]
    fn overlap_takes_the_longer_side() {
        let c = cost(ServingEngine::Trtllm);
        // Llama-3.1-8B-like: 32 layers, 256 launches, a 10 ms GPU step.
        let gpu = GpuIteration::new(1.0, 10e-3, 0.0, launches(32.0, 0.0, 1));
        assert!((c.decode_s(&gpu, 256.0, 256.0, 0.0, 0.0) - (10e-3 + RESIDUAL_S)).abs() < 1e-12);
        // 1,000 sequences of CPU work (15.5 ms) outlast a 10 ms GPU step.
        let cpu = 0.5e-3 + 15e-6 * 1000.0;
        assert!((c.decode_s(&gpu, 1000.0, 1000.0, 0.0, 0.0) - (cpu + RESIDUAL_S)).abs() < 1e-12);
    }

    /// A small step launched eagerly is bound by its launches: 32 layers x 8 kernels x 6.28 us =
    /// 1.61 ms against 0.5 ms of kernels. TensorRT-LLM runs mixed iterations eagerly, vLLM
    /// graphs them up to 512 tokens.
    #[test]
    fn eager_iterations_are_launch_bound() {
        let gpu = GpuIteration::new(1.0, 0.5e-3, 0.0, launches(32.0, 0.0, 1));
        assert!((gpu.eager_extra_s - (256.0 * LAUNCH_S - 0.5e-3)).abs() < 1e-15);
        let trt = cost(ServingEngine::Trtllm);
        assert!((gpu.launch_s - 256.0 * LAUNCH_S).abs() < 1e-15);
        // Half the iterations eager: the GPU takes 0.5 + 0.5 x 1.1077 = 1.0538 ms, the host
        // schedules (0.5 ms + 8 x 15 us) and launches half of the time 1.6077 ms of kernels,
        // 1.4238 ms: the host sets the pace.
        let half_mixed = trt.decode_s(&gpu, 8.0, 8.0, 0.5, 8.0 + 128.0);
        let host = 0.5e-3 + 15e-6 * 8.0 + 0.5 * 256.0 * 6.28e-6;
        assert!(host > 0.5e-3 + 0.5 * gpu.eager_extra_s);
        assert!(
            (half_mixed - host - RESIDUAL_S).abs() < 1e-12,
            "{half_mixed}"
        );
        let vllm = cost(ServingEngine::Vllm);
        assert!(vllm.decode_s(&gpu, 8.0, 8.0, 0.5, 136.0) < half_mixed);
        // Above vLLM's 512-token capture size even pure decode runs eagerly.
        let big = GpuIteration::new(1.0, 0.5e-3, 0.0, launches(32.0, 0.0, 1));
        assert!(vllm.decode_s(&big, 1024.0, 1024.0, 0.0, 0.0) >= 256.0 * LAUNCH_S);
    }

    #[test]
    fn sglang_graph_sizes_follow_memory_and_tp() {
        assert_eq!(
            Graphs::of(ServingEngine::Sglang, 80.0, 1).decode_max_tokens,
            256.0
        );
        assert_eq!(
            Graphs::of(ServingEngine::Sglang, 80.0, 4).decode_max_tokens,
            512.0
        );
        assert_eq!(
            Graphs::of(ServingEngine::Sglang, 192.0, 1).decode_max_tokens,
            512.0
        );
    }
}
