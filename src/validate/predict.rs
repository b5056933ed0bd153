//! Predicts one measured case with the same grid and evaluation code as `run`: the case's system
//! becomes a rack of its `gpus` GPUs, every configuration column the source left blank becomes a
//! grid axis of the values the engine allows, and the scenario picks the configuration
//! (docs/validation.md, "How a case is predicted"):
//!
//! - `offline`, `max-throughput`: the highest output throughput at full batch;
//! - `server`, `interactive`: the highest throughput whose predicted p99 TTFT and TPOT meet the
//!   case's limits (serving model), latencies predicted at that operating point;
//! - `at-interactivity`: the highest tokens/s/GPU at or above the measured tokens/s/user;
//! - `min-latency`: the lowest time per output token.
//!
//! A batch cap the KV cache cannot hold runs at the most sequences it holds, and the KV
//! admission policy is the one of the harness the case's source names (`harness_admission`).

use crate::catalog::{Catalog, Rack};
use crate::grid::Grid;
use crate::limits;
use crate::perf::memory::KvAdmission;
use crate::perf::serving::{self, Limits, Serving};
use crate::perf::sizing::variability;
use crate::perf::{self, Context, Instance, Workload};
use crate::vocab::Platform;

use super::cases::{Case, Harness};
use super::early_stopping::{PassPercentile, RunLength};
use super::{finite, lengths, submissions};

/// Metrics `validate` predicts.
pub const METRICS: [&str; 6] = [
    "output_tokens_per_s",
    "output_tokens_per_s_per_gpu",
    "total_tokens_per_s_per_gpu",
    "tokens_per_s_per_user",
    "ttft_p99_ms",
    "tpot_p99_ms",
];

/// The configuration the scenario chose.
#[derive(Debug, Clone, PartialEq)]
pub struct Chosen {
    pub gpus: u32,
    pub tp: u32,
    pub pp: u32,
    pub ep: u32,
    pub batch: u32,
    pub instances: u32,
    pub weight_dtype: String,
    pub kv_dtype: String,
}

/// A predicted case: the chosen configuration and, per measured metric, the prediction.
#[derive(Debug, Clone, PartialEq)]
pub struct Prediction {
    pub chosen: Chosen,
    /// `(metric, measured, predicted, scored)`; a metric that is an input of the case (tokens/s
    /// per user in `at-interactivity`) is not scored.
    pub values: Vec<(String, f64, f64, bool)>,
    /// How blanks were filled and anything else a reader should know.
    pub notes: Vec<String>,
}

/// Formats the engine may run weights in, tried when the source leaves the format blank.
const WEIGHT_FORMATS: [&str; 4] = ["bf16", "fp8", "nvfp4", "mxfp4"];
/// What a source's "FP4" stands for: the vendor's block-scaled FP4, the first of these the GPU
/// runs natively (NVFP4 on NVIDIA Blackwell, whose FP4 checkpoints and MLPerf submissions are
/// NVFP4; MXFP4 on AMD CDNA4, which has no NVFP4 tensor-core path).
const BLOCK_SCALED_FP4: [&str; 2] = ["nvfp4", "mxfp4"];
/// KV-cache formats tried when the source leaves the format blank.
const KV_FORMATS: [&str; 2] = ["bf16", "fp8"];
/// Largest batch tried when the source gives none (TensorRT-LLM captures CUDA graphs up to 8192
/// sequences; vLLM's default max_num_seqs is far lower).
const MAX_BATCH: u32 = 8192;

pub(super) fn powers_of_two(max: u32) -> Vec<u32> {
    (0..32)
        .map(|i| 1u32 << i)
        .take_while(|&v| v <= max)
        .collect()
}

/// A degree the case gives (`tp`, `pp`, `ep`, `cp`, `dp`), if its system's `gpus` can hold
/// it: a larger one cannot run, and sweeping around it would build lists as long as it.
pub(super) fn within_gpus(
    name: &str,
    given: Option<u32>,
    gpus: u32,
) -> Result<Option<u32>, String> {
    match given {
        Some(v) if v > gpus => Err(format!("{name} {v} exceeds the case's {gpus} GPUs")),
        _ => Ok(given),
    }
}

/// The case's model, if the catalog has it with a vocabulary (which FLOPs and memory need).
pub fn model<'a>(case: &Case, catalog: &'a Catalog) -> Result<&'a crate::catalog::Model, String> {
    let id = &case.setup.model;
    let model = catalog
        .model(id)
        .ok_or_else(|| format!("unknown model id \"{id}\""))?;
    if model.vocab.is_none() {
        return Err(format!(
            "model \"{id}\" has no vocabulary size in the catalog"
        ));
    }
    Ok(model)
}

/// Predicts an inference case, or says why it cannot be modelled.
pub fn predict(case: &Case, catalog: &Catalog) -> Result<Prediction, String> {
    // What the submission's own logs and config say the file does not (`submissions`): first
    // the blank configuration columns its config states.
    let submission = submissions::of(&case.id);
    let (setup, from_config) = match submission {
        Some(sub) => sub.fill(&case.setup),
        None => (case.setup.clone(), None),
    };
    let s = &setup;
    let model = model(case, catalog)?;
    let gpu_index = catalog
        .gpu_index(&s.hardware)
        .ok_or_else(|| format!("unknown hardware id \"{}\"", s.hardware))?;
    let (isl, osl) = match (s.input_tokens, s.output_tokens) {
        (Some(i), Some(o)) => (i, o),
        (None, Some(_)) => {
            return Err("input_tokens is blank: the workload needs a mean prompt length".into());
        }
        (Some(_), None) => {
            return Err("output_tokens is blank: the workload needs a mean output length".into());
        }
        (None, None) => return Err("input_tokens and output_tokens are blank".into()),
    };
    if s.cp.is_some_and(|cp| cp > 1) {
        return Err("context parallelism (cp > 1) is not modelled for inference".into());
    }
    let mut notes: Vec<String> = from_config.into_iter().collect();

    // The measured system as one rack of exactly its GPUs.
    let gpu = &catalog.gpus[gpu_index];
    let base = catalog
        .rack(&gpu.default_rack)
        .expect("checked default rack");
    // Without a GPU count the system is 1, 2, 4 or 8 scale-up domains, scored per GPU: up to the
    // nine servers of InferenceX's largest multi-node recipes (one prefill and eight decode
    // workers of eight B200s, `dsr1-fp8-b200-dynamo-trt` in its .github/configs/nvidia-master.yaml).
    let (gpus, racks) = match s.gpus {
        Some(g) if g > limits::MAX_RACK_GPUS => {
            return Err(format!(
                "gpus {g} is more than a rack can hold ({}): a measured system is modelled as one rack",
                limits::MAX_RACK_GPUS
            ));
        }
        Some(g) => (g, vec![1]),
        None => {
            notes.push(format!(
                "gpus blank: 1, 2, 4 or 8 scale-up domains of {} GPUs swept",
                base.scaleup_domain_gpus
            ));
            (base.scaleup_domain_gpus, vec![1, 2, 4, 8])
        }
    };
    let rack = system_rack(base, gpus)?;
    let mut catalog = catalog.clone();
    catalog.racks.push(rack);
    let platform = Platform {
        gpu: gpu_index,
        rack: catalog.racks.len() - 1,
    };

    // Blank columns become axes.
    let axis =
        |given: Option<u32>, name: &str, values: Vec<u32>, notes: &mut Vec<String>| match given {
            Some(v) => vec![v],
            None => {
                notes.push(format!("{name} blank: swept"));
                values
            }
        };
    let most_gpus = gpus * racks.iter().max().copied().unwrap_or(1);
    let tp = within_gpus("tp", s.tp, most_gpus)?;
    let pp = within_gpus("pp", s.pp, most_gpus)?;
    let ep = within_gpus("ep", s.ep, most_gpus)?;
    let tp = axis(tp, "tp", powers_of_two(most_gpus), &mut notes);
    let pp = axis(pp, "pp", powers_of_two(most_gpus.min(16)), &mut notes);
    let ep = if model.is_moe() {
        axis(ep, "ep", powers_of_two(most_gpus), &mut notes)
    } else {
        vec![ep.unwrap_or(1)]
    };
    // `batch` is the engine's max_batch_size, which TensorRT-LLM and SGLang apply per attention
    // data-parallel rank; the achieved concurrency may be lower. In at-interactivity cases it is
    // the benchmark concurrency of the one deployment InferenceX measured (see `choose`).
    let batch_cap = match s.batch {
        Some(b) if b > limits::MAX_BATCH => {
            return Err(format!(
                "batch {b} is more than {} sequences: {}",
                limits::MAX_BATCH,
                limits::MAX_BATCH_WHY
            ));
        }
        Some(b) => {
            if s.scenario == "at-interactivity" {
                notes.push("batch is the deployment's concurrency: bounds one instance".into());
            }
            Some(b)
        }
        None => {
            notes.push("batch blank: swept".into());
            None
        }
    };
    let widest = tp.iter().chain(&ep).copied().max().unwrap_or(1);
    let batch: Vec<u32> = match batch_cap {
        Some(b) => {
            // Every multiple of the cap up to one per GPU of the widest stage: `widest` is at
            // most the case's GPUs (`within_gpus`), so the list is too.
            let mut v: Vec<u32> = powers_of_two(b.saturating_mul(widest))
                .into_iter()
                .filter(|&x| x != b)
                .collect();
            v.extend((1..=widest).map(|r| b.saturating_mul(r)));
            v.sort_unstable();
            v.dedup();
            v
        }
        None => powers_of_two(MAX_BATCH * widest.min(8)),
    };
    let formats = |given: &Option<String>,
                   name: &str,
                   options: &[&str],
                   notes: &mut Vec<String>|
     -> Result<Vec<usize>, String> {
        match given {
            // Published results say "FP4" for the block-scaled FP4 their engine ran (NVFP4 on
            // NVIDIA, MXFP4 on AMD); no engine serves per-tensor FP4.
            Some(id) if id == "fp4" => {
                let vendor = BLOCK_SCALED_FP4
                    .iter()
                    .find(|id| gpu.supports_natively(id))
                    .ok_or_else(|| format!("{name} fp4: the GPU runs no block-scaled FP4"))?;
                notes.push(format!(
                    "{name} fp4: {vendor}, the GPU's own block-scaled FP4"
                ));
                Ok(catalog.dtype_index(vendor).into_iter().collect())
            }
            Some(id) => catalog
                .dtype_index(id)
                .map(|d| vec![d])
                .ok_or_else(|| format!("unknown {name} \"{id}\"")),
            None => {
                notes.push(format!("{name} blank: swept"));
                Ok(options
                    .iter()
                    .filter(|id| id.starts_with("bf16") || gpu.supports_natively(id))
                    .filter_map(|id| catalog.dtype_index(id))
                    .collect())
            }
        }
    };
    let weight_dtype = formats(&s.weight_dtype, "weight_dtype", &WEIGHT_FORMATS, &mut notes)?;
    let kv_given = match (&s.kv_dtype, harness_kv_dtype(case, model)) {
        (None, Some(kv)) => {
            notes.push(format!(
                "kv_dtype blank: {kv}, the checkpoint's own (trtllm-bench's `auto`)"
            ));
            Some(kv.to_string())
        }
        (given, _) => given.clone(),
    };
    let kv_dtype = formats(&kv_given, "kv_dtype", &KV_FORMATS, &mut notes)?;
    // Axes the measurements format has no column for (disaggregation, speculative decoding,
    // ownership) keep their defaults: off, and cloud prices.
    let grid = Grid {
        weight_dtype,
        kv_dtype,
        racks,
        tp,
        pp,
        ep,
        batch,
        ..Grid::single(&catalog, platform)
    };
    let admission = harness_admission(case);
    if admission != KvAdmission::default() {
        notes.push(format!(
            "{} (the harness's scheduler)",
            admission.describe()
        ));
    }
    // The measurements give lengths only: they spread around their mean as the harness fed them.
    let spread = lengths::of_case(case)?;
    notes.push(spread.note);
    let workload = Workload {
        kv_admission: Some(admission),
        ..Workload::new(isl * spread.mean_ratio, osl * spread.mean_ratio)
    };
    let mut ctx = Context::new(&catalog, model, &grid, workload).expect("vocabulary checked");
    ctx.plan.settings.prefill_variability = variability(spread.input_cv);
    ctx.plan.settings.decode_variability = variability(spread.output_cv);
    ctx.plan.settings.prompt_quantiles = spread.input_quantiles;
    // Whether the submission's engine fused each row-parallel GEMM with its all-reduce.
    if let Some(fusion) = submission.and_then(|s| s.gemm_allreduce_fusion) {
        ctx.gemm_all_reduce_fusion = fusion;
        if fusion {
            notes.push(
                "row-parallel GEMMs fused with their all-reduce (gemm_allreduce_plugin in the submission's config)"
                    .into(),
            );
        }
    }

    // TensorRT-LLM's attention-DP balance, where the submission's config enables it.
    if let Some(balance) = submission.and_then(|s| s.adp_balance()) {
        ctx.plan.settings.adp_balance = Some(balance);
        notes.push(format!(
            "prompts held by TensorRT-LLM's attention-DP balance until every rank has one, then {} iterations, or at most {} (adp_balancing_* in the submission's config)",
            balance.batching_wait_iters, balance.timeout_iters
        ));
    }

    // vLLM V0's multi-step scheduling, where the submission's config runs it.
    if let Some(steps) = submission
        .and_then(|s| s.scheduler_steps)
        .filter(|&n| n > 1)
    {
        ctx.plan.settings.scheduler_steps = steps;
        notes.push(format!(
            "new prompts start only between rounds of {steps} decode steps (vLLM's multi-step scheduling, num_scheduler_steps in the submission's config)"
        ));
    }

    let finite_run = finite::of_case(case);
    match &finite_run {
        Some(finite::Run::LockStep { requests }) => notes.push(format!(
            "a finite run of {requests} requests, as trtllm-bench ran them: the batch ramps up and drains"
        )),
        Some(finite::Run::Spread { samples, answers }) => notes.push(format!(
            "one offline query of {samples} samples (the submission's generated_samples_per_query), answers spread as the dataset's: the batch fills, runs full, and drains the residual answers (mean {:.0} tokens) of the sequences running at the last admission",
            answers.mean_residual
        )),
        None => {}
    }
    let run = RunLength::of_case(case);
    let best = choose(case, &ctx, &grid, batch_cap, finite_run.as_ref(), run)?;
    if let (Some(run), Some(sv)) = (run, best.serving) {
        notes.push(run.note(sv.rate_per_s * f64::from(best.instance.layout.instances)));
    }
    if let (Some(sv), Some(log)) = (best.serving, submission)
        && let Some(note) = log.means_note(sv.tpot_s, sv.ttft_mean_s(&best.instance))
    {
        notes.push(note);
    }
    if let Some((tps_user, per_gpu)) = best.toward {
        notes.push(format!(
            "read on the frontier between the chosen configuration and the knot at {tps_user:.1} tokens/s/user ({per_gpu:.0} output tokens/s/GPU), as InferenceX interpolates"
        ));
    }
    if let Some(cap) = best.kv_limited_from {
        notes.push(format!(
            "a batch of {cap} does not fit the KV cache: the engine runs the {} sequences that do",
            best.point.batch
        ));
    }
    let inst = &best.instance;
    let l = inst.layout;
    // An at-interactivity point is one deployment: one instance and its GPUs (see `choose`).
    let (gpus, instances) = if s.scenario == "at-interactivity" {
        (l.gpus_per_instance, 1)
    } else {
        (l.gpus, l.instances)
    };
    let chosen = Chosen {
        gpus,
        tp: l.tp,
        pp: l.pp,
        ep: l.ep,
        batch: best.point.batch,
        instances,
        weight_dtype: catalog.dtypes[grid.weight_dtype[best.point.weight_dtype as usize]]
            .id
            .clone(),
        kv_dtype: catalog.dtypes[grid.kv_dtype[best.point.kv_dtype as usize]]
            .id
            .clone(),
    };

    // Predictions at the chosen configuration's operating point. In server and interactive
    // cases that is the highest load the model says meets the limits: MLPerf's server scenario
    // reports the latencies at the highest Poisson rate whose p99 TTFT and TPOT meet them
    // (docs/validation.md), so throughput and latencies come from the same predicted point.
    let output_tokens_per_s = best.output_tokens_per_s;
    let latency = best.serving;
    let mut values = Vec::new();
    for m in &case.measurements {
        let predicted = match m.metric.as_str() {
            "output_tokens_per_s" => output_tokens_per_s,
            "output_tokens_per_s_per_gpu" => output_tokens_per_s / f64::from(gpus),
            "total_tokens_per_s_per_gpu" => {
                output_tokens_per_s * (1.0 + isl / osl) / f64::from(gpus)
            }
            "tokens_per_s_per_user" => 1.0 / latency.map_or(best.tpot_s, |s| s.tpot_s),
            "ttft_p99_ms" => latency.map_or(best.ttft_s, |s| s.ttft_p99_s) * 1e3,
            "tpot_p99_ms" => latency.map_or(best.tpot_s, |s| s.tpot_p99_s) * 1e3,
            other => {
                return Err(format!(
                    "metric \"{other}\" is not an inference metric racksweep predicts"
                ));
            }
        };
        let scored =
            !(case.setup.scenario == "at-interactivity" && m.metric == "tokens_per_s_per_user");
        values.push((m.metric.clone(), m.value, predicted, scored));
    }
    Ok(Prediction {
        chosen,
        values,
        notes,
    })
}

/// How the harness that measured a case admits requests against the KV cache
/// (docs/validation.md). MLPerf submissions run NVIDIA's harness, whose TensorRT-LLM runtime
/// defaults to the `MAX_UTILIZATION` capacity scheduler (`batch_scheduler_policy = 'max_util'`
/// in `TrtllmHarnessConfig.DEFAULT_RUNTIME_FLAGS`, mlcommons/inference_results_v5.1
/// closed/NVIDIA/code/llmlib/config.py), which admits what fits now and pauses requests when
/// the cache runs out, or vLLM, which allocates KV blocks as tokens arrive and preempts (vLLM
/// docs, "Preemption"): both hold KV on demand. Other sources (TensorRT-LLM's `trtllm-bench`
/// tables at its default `GUARANTEED_NO_EVICT`; InferenceX, whose engines are not stated) keep
/// the sweep default, the whole request.
fn harness_admission(case: &Case) -> KvAdmission {
    if case.harness() == Harness::MlPerf {
        KvAdmission::OnDemand
    } else {
        KvAdmission::default()
    }
}

/// The KV-cache format a harness runs when the case leaves it blank, if the harness fixes one.
/// `trtllm-bench` passes `kv_cache_config.dtype: auto` unless its options name a format
/// (`get_settings`, tensorrt_llm/bench/benchmark/utils/general.py), and `auto` is the
/// checkpoint's own KV format. A model served from the checkpoint its authors published already
/// quantized (`checkpoint_expert_dtype` in models.toml: gpt-oss's MXFP4 experts, whose
/// config.json `quantization_config` has no KV scheme) runs a bf16 cache, as do bf16 weights.
/// Which checkpoint an FP8 or FP4 run used (NVIDIA's ModelOpt ones quantize the KV cache to FP8,
/// DeepSeek's own FP8 release does not) the measurements format does not say, so those formats
/// stay swept (`None`).
fn harness_kv_dtype(case: &Case, model: &crate::catalog::Model) -> Option<&'static str> {
    let weights = case.setup.weight_dtype.as_deref()?;
    (case.harness() == Harness::TensorRtLlm
        && (model.checkpoint_expert_dtype.is_some() || weights.starts_with("bf16")))
    .then_some("bf16")
}

/// A rack holding exactly `gpus` GPUs of the base rack's kind: whole servers, and a scale-up
/// domain no larger than the system.
fn system_rack(base: &Rack, gpus: u32) -> Result<Rack, String> {
    let per_server = base.gpus_per_server.min(gpus);
    if !gpus.is_multiple_of(per_server) {
        return Err(format!(
            "{gpus} GPUs are not a whole number of {}-GPU servers",
            base.gpus_per_server
        ));
    }
    let domain = base.scaleup_domain_gpus.min(gpus);
    if !gpus.is_multiple_of(domain) {
        return Err(format!(
            "{gpus} GPUs are not a whole number of {domain}-GPU scale-up domains"
        ));
    }
    Ok(Rack {
        id: format!("{}-system-of-{gpus}", base.id),
        servers_per_rack: gpus / per_server,
        gpus_per_server: per_server,
        scaleup_domain_gpus: domain,
        ..base.clone()
    })
}

struct Best<'a> {
    point: crate::grid::Point,
    instance: Instance<'a>,
    score: f64,
    output_tokens_per_s: f64,
    tpot_s: f64,
    ttft_s: f64,
    serving: Option<Serving>,
    /// At-interactivity: the knot below the target read toward, `(tokens/s/user, per GPU)`.
    toward: Option<(f64, f64)>,
    /// The batch cap the KV cache could not hold, where the batch is the most it holds.
    kv_limited_from: Option<u32>,
}

/// Evaluates every configuration of the case's grid and keeps the one the scenario prefers.
fn choose<'a>(
    case: &Case,
    ctx: &'a Context,
    grid: &Grid,
    batch_cap: Option<u32>,
    finite_run: Option<&finite::Run>,
    run: Option<RunLength>,
) -> Result<Best<'a>, String> {
    let s = &case.setup;
    let limits = Limits {
        ttft_p99_s: s.ttft_p99_limit_ms.map(|v| v / 1e3),
        tpot_p99_s: s.tpot_p99_limit_ms.map(|v| v / 1e3),
    };
    let target_tps_user = case.measured("tokens_per_s_per_user");
    let pass = run.map(PassPercentile::new);
    // InferenceX benchmarks one serving deployment per point, a client holding `conc` requests in
    // flight, and divides its total token throughput by that deployment's GPUs (`tp` on one node,
    // prefill plus decode GPUs when disaggregated: InferenceX `utils/process_result.py`). The
    // model's analogue is one instance: its batch is the concurrency and its GPUs the divisor.
    let at_interactivity = s.scenario == "at-interactivity";
    let mut best: Option<Best> = None;
    let mut evaluated = 0u64;
    // At-interactivity: the knots below the target, `(tokens/s/user, throughput per GPU)`, and
    // the interactivity of the best knot at or above it.
    let mut below: Vec<(f64, f64)> = Vec::new();
    let mut best_tps_user = 0.0;
    for (_, p) in grid.range(0, grid.len()) {
        let Ok(inst) = perf::instance(ctx, &p) else {
            continue;
        };
        // A batch cap applies per attention data-parallel rank, except a benchmark concurrency,
        // which counts the requests in flight on the whole deployment.
        let ranks = if at_interactivity {
            1
        } else {
            inst.layout.attention_dp
        };
        // The cap over all ranks, in u64: a cap of a million sequences on thousands of ranks
        // passes u32.
        let cap = batch_cap.map(|b| u64::from(b) * u64::from(ranks));
        if cap.is_some_and(|c| u64::from(p.batch) > c) {
            continue;
        }
        let mut p = p;
        let mut e = perf::estimate(&inst, p.batch);
        // An engine whose batch cap outruns its KV cache runs as many sequences as the cache
        // holds: every scheduler admits against free KV blocks (docs/validation.md).
        let mut kv_limited_from = None;
        // A blank batch leaves the engine at its own maximum, which it likewise fills only as
        // far as the cache holds (trtllm-bench sizes max_batch_size by a heuristic of its own).
        if !e.feasible()
            && (cap.is_none() || cap == Some(u64::from(p.batch)))
            && let Some(k) = largest_fitting_batch(&inst, p.batch)
        {
            kv_limited_from = Some(p.batch);
            p.batch = k;
            e = perf::estimate(&inst, k);
        }
        if !e.feasible() {
            continue;
        }
        evaluated += 1;
        let instances = f64::from(inst.layout.instances);
        // Throughput scenarios score per GPU, so systems of different sizes compare fairly.
        let gpus = f64::from(inst.layout.gpus);
        let (score, output_tokens_per_s, serving) = match s.scenario.as_str() {
            "offline" | "max-throughput" => match finite_run {
                Some(finite_run) => {
                    let Some(per_instance) = finite_run_tokens_per_s(&inst, p.batch, finite_run)
                    else {
                        continue;
                    };
                    let throughput = per_instance * instances;
                    (throughput / gpus, throughput, None)
                }
                None => (e.tokens_per_s_per_gpu, e.output_tokens_per_s, None),
            },
            "server" | "interactive" => {
                // The rate under limits never exceeds the full-batch capacity: a configuration
                // whose capacity cannot beat the best so far is not searched.
                if best
                    .as_ref()
                    .is_some_and(|b| e.tokens_per_s_per_gpu <= b.score)
                {
                    continue;
                }
                // MLPerf passes a run only if loadgen's early stopping does: the limits hold
                // beyond the 99th percentile, the further the shorter the run.
                let percentile = |rate_per_instance: f64| {
                    pass.as_ref()
                        .map_or(serving::PERCENTILES[serving::P99], |p| {
                            p.at(rate_per_instance * instances)
                        })
                };
                let Some(sv) = serving::max_rate(&inst, f64::from(p.batch), &limits, percentile)
                else {
                    continue;
                };
                let throughput = sv.output_tokens_per_s * instances;
                (throughput / gpus, throughput, Some(sv))
            }
            "at-interactivity" => {
                let Some(target) = target_tps_user else {
                    return Err("at-interactivity case without a tokens_per_s_per_user row".into());
                };
                // A closed-loop client: each of the `conc` requests spends its time to first
                // token before it decodes, so the deployment completes `conc` requests every
                // TTFT + OSL x TPOT, not every OSL x TPOT (vLLM `benchmark_serving`, which
                // InferenceX runs: throughput = tokens / benchmark duration).
                let decode_s = inst.output_tokens * e.tpot_ms;
                let per_instance = e.tokens_per_s_per_instance * decode_s / (e.ttft_ms + decode_s);
                let per_gpu = per_instance / f64::from(inst.layout.gpus_per_instance);
                if e.tokens_per_s_per_user < target {
                    below.push((e.tokens_per_s_per_user, per_gpu));
                    continue;
                }
                (per_gpu, per_instance, None)
            }
            // One request at a time: the system's throughput is one sequence's token rate.
            "min-latency" => (-e.tpot_ms, e.tokens_per_s_per_instance, None),
            other => return Err(format!("unknown scenario \"{other}\"")),
        };
        if best.as_ref().is_none_or(|b| score > b.score) {
            best_tps_user = e.tokens_per_s_per_user;
            best = Some(Best {
                point: p,
                instance: inst,
                score,
                output_tokens_per_s,
                tpot_s: e.tpot_ms / 1e3,
                ttft_s: e.ttft_ms / 1e3,
                serving,
                toward: None,
                kv_limited_from,
            });
        }
    }
    // InferenceX reads its point off the frontier between the knots that bracket the target.
    if let (Some(b), Some(target), true) = (best.as_mut(), target_tps_user, at_interactivity)
        && let Some(knot) = frontier_knot_below(b.score, &below)
    {
        let per_gpu = read_between((best_tps_user, b.score), knot, target);
        b.output_tokens_per_s *= per_gpu / b.score;
        b.score = per_gpu;
        b.toward = Some(knot);
    }
    best.ok_or_else(|| {
        if evaluated == 0 {
            "no configuration of the case fits the hardware".to_string()
        } else {
            "no configuration meets the case's scenario (latency limits or interactivity)"
                .to_string()
        }
    })
}

/// Output tokens per second of one instance over a finite run (`finite`): `trtllm-bench`'s
/// requests or an MLPerf offline query's samples, split evenly over the system's instances,
/// with at most `batch` sequences at once. An iteration admits, on each attention rank, the
/// prompts that fit its token budget beside half the sequences it fills up to (the mean over
/// the ramp), at least one (`perf::memory::prefill_budget`). `None` if the run's batch cannot
/// be timed.
fn finite_run_tokens_per_s(inst: &Instance, batch: u32, run: &finite::Run) -> Option<f64> {
    let instances = u64::from(inst.layout.instances.max(1));
    let ranks = inst.layout.attention_dp.max(1);
    let prompt = inst.input_tokens.max(1.0);
    // Prompts an iteration admits: each attention rank's token budget beside half its batch,
    // over the prompt, at least one.
    let admitted = |requests: u64| {
        let filled = f64::from(batch).min(requests as f64) / f64::from(ranks);
        let per_rank = (perf::memory::prefill_budget(filled / 2.0, prompt) / prompt)
            .floor()
            .max(1.0);
        per_rank as u64 * u64::from(ranks)
    };
    let step_s = |n: u64| {
        let e = perf::estimate(inst, u32::try_from(n).ok()?);
        e.feasible().then(|| n as f64 / e.tokens_per_s_per_instance)
    };
    let chord = |w: u64| {
        let h = (w / 2).max(1);
        Some(finite::Chord {
            w: w as f64,
            s_w: step_s(w)?,
            h: h as f64,
            s_h: step_s(h)?,
        })
    };
    match run {
        finite::Run::LockStep { requests } => {
            let requests = u64::from(*requests).div_ceil(instances);
            let answer = inst.output_tokens.round().max(1.0) as u64;
            let a = admitted(requests);
            let w = finite::running(requests, u64::from(batch), a, answer);
            let iterations = finite::iterations(requests, u64::from(batch), a, answer);
            let tokens = requests as f64 * answer as f64;
            Some(finite::tokens_per_s(tokens, iterations as f64, chord(w)?))
        }
        finite::Run::Spread { samples, answers } => {
            // Loadgen's one query is shared out among the instances.
            let samples = samples.div_ceil(instances);
            let w = u64::from(batch).min(samples).max(1);
            let iterations = finite::spread_iterations(samples, w, admitted(samples), answers);
            let tokens = samples as f64 * answers.mean;
            Some(finite::tokens_per_s(tokens, iterations, chord(w)?))
        }
    }
}

/// The largest batch up to `batch` that fits the instance's memory (weights, the KV cache its
/// admission policy holds, activations), if even one sequence does. Memory grows with the batch,
/// so the first batch that does not fit is found by galloping search.
fn largest_fitting_batch(inst: &Instance, batch: u32) -> Option<u32> {
    let too_many = |k: u32| !inst.memory(f64::from(k)).fits();
    match perf::sizing::first_passing(1, batch, too_many) {
        None => Some(batch),
        Some(1) => None,
        Some(k) => Some(k - 1),
    }
}

/// The knot of an upper-left (interactivity, throughput) frontier just below a target: among
/// the knots below it, the one with the highest interactivity that beats `above`, the best
/// throughput at or above the target (any knot between them would be dominated).
fn frontier_knot_below(above: f64, below: &[(f64, f64)]) -> Option<(f64, f64)> {
    below
        .iter()
        .copied()
        .filter(|k| k.1 > above)
        .max_by(|a, b| a.0.total_cmp(&b.0))
}

/// Throughput at interactivity `target` on the line from `above` to `below` (both
/// `(interactivity, throughput)`), as InferenceX interpolates between measured knots
/// (InferenceX-app `interpolation.ts`).
fn read_between(above: (f64, f64), below: (f64, f64), target: f64) -> f64 {
    let (x2, y2) = above;
    let (x1, y1) = below;
    if x2 <= x1 {
        return y2;
    }
    y1 + (y2 - y1) * (target - x1) / (x2 - x1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::cases;

    fn case(rows: &[&str]) -> Case {
        cases::tests::parse_text(rows).unwrap().remove(0)
    }

    /// The prediction of a case named `id` whose rows are `id`, `columns` (the measurements
    /// file's columns up to `metric`), then each `(metric, value)`.
    fn predict_named(id: &str, columns: &str, values: &[(&str, &str)]) -> Prediction {
        let rows: Vec<String> = values
            .iter()
            .map(|(metric, value)| format!("{id},{columns},{metric},{value},x,"))
            .collect();
        let c = case(&rows.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(c.id, id);
        predict(&c, &Catalog::builtin().unwrap()).unwrap()
    }

    /// The frontier read at a target: linear between the best knot at or above it and the
    /// fastest-interactivity knot below it that beats it; knots it dominates do not count.
    #[test]
    fn frontier_is_read_between_bracketing_knots() {
        let below = [(40.0, 200.0), (30.0, 300.0), (45.0, 90.0)];
        // (45, 90) is slower than the knot above (100 per GPU at 50 tokens/s/user).
        assert_eq!(frontier_knot_below(100.0, &below), Some((40.0, 200.0)));
        // At 48: 200 + (100 - 200) x (48 - 40) / (50 - 40) = 120.
        assert!((read_between((50.0, 100.0), (40.0, 200.0), 48.0) - 120.0).abs() < 1e-12);
        // At the knot itself, its own throughput; nothing faster below, nothing to read toward.
        assert_eq!(read_between((50.0, 100.0), (40.0, 200.0), 50.0), 100.0);
        assert_eq!(frontier_knot_below(300.0, &below), None);
    }

    /// MLPerf's harnesses hold KV on demand (NVIDIA's `max_util` scheduler, vLLM); other
    /// sources keep the sweep default, the whole request.
    #[test]
    fn admission_follows_the_harness() {
        let row = |source: &str| {
            format!(
                "c,inference,{source},u,llama-3.1-70b,h200-sxm,1,1,1,1,,,fp8,fp8,8,1024,1024,offline,,,,,output_tokens_per_s,1000,tokens/s,"
            )
        };
        let mlperf = case(&[&row(
            "MLPerf Inference v5.1 closed - NVIDIA H200-SXM-141GBx8_TRT",
        )]);
        assert_eq!(harness_admission(&mlperf), KvAdmission::OnDemand);
        let trtllm = case(&[&row("TensorRT-LLM docs performance/perf-overview.md")]);
        assert_eq!(harness_admission(&trtllm), KvAdmission::WholeRequest);
        let ix = case(&[&row("InferenceX compare: DeepSeek R1 — B200 vs MI300X")]);
        assert_eq!(ix.harness(), Harness::InferenceX);
        assert_eq!(harness_admission(&ix), KvAdmission::WholeRequest);
        // InferenceX names a run by the top of its uniform [0.8 L, L] range: mean 0.9 L, cv
        // 0.2 L / sqrt(12) / 0.9 L = 0.0642, median 0.9 L and 99th percentile 0.998 L (1.10889
        // of the mean); trtllm-bench feeds the stated lengths, gamma of cv 0 (the mean).
        let spread = lengths::of_case(&ix).unwrap();
        assert!((spread.mean_ratio - 0.9).abs() < 1e-12 && (spread.input_cv - 0.0642).abs() < 1e-4);
        let q = spread.input_quantiles.unwrap();
        assert!((q[0] - 1.0).abs() < 1e-12 && (q[2] - 0.998 / 0.9).abs() < 1e-12);
        let fixed = lengths::of_case(&trtllm).unwrap();
        assert_eq!((fixed.mean_ratio, fixed.input_quantiles), (1.0, None));
    }

    /// The Nebius H200 Llama-3.1-405B server run, as the file states it, and the same run under
    /// another name (no submission facts). Its detail log counts 8,313 queries, so loadgen's
    /// early stopping holds the limits at the 99.2542th percentile and the reported p99 TTFT
    /// sits below the 6 s limit; the unnamed run issues the least a valid run at its load
    /// issues, the same 8,313 (one pass over the dataset), so the same percentile. Its config
    /// builds the engine with `gemm_allreduce_plugin`: the fused engine serves more under the
    /// same limits than the unfused one.
    #[test]
    fn submission_facts_set_the_pass_percentile_and_the_fusion() {
        let (nebius, other) = with_and_without_facts(
            "mlperf-5p1-nebius-h200-sxm-141gbx8-llama3p1-405b-server",
            "inference,MLPerf Inference v5.1 closed - Nebius H200-SXM-141GBx8_TRT llama3.1-405b Server,u,llama-3.1-405b,h200-sxm,8,8,1,,1,,fp8,fp8,512,9428.64,684.68,server,6000,175,,",
            &[("output_tokens_per_s", "295.36"), ("ttft_p99_ms", "5642.7")],
        );
        assert!(has(
            &nebius,
            "99.254th percentile: loadgen's early stopping over 8313 queries (the run's"
        ));
        assert!(has(
            &other,
            "99.254th percentile: loadgen's early stopping over 8313 queries (the least"
        ));
        assert!(has(&nebius, "gemm_allreduce_plugin") && !has(&other, "gemm_allreduce_plugin"));
        // The run's logged means beside the model's (loadgen's summary: 56.2 ms, 1,826 ms).
        assert!(has(&nebius, "the run's log: 56.2 ms, 1826 ms") && !has(&other, "the run's log"));
        let throughput = |p: &Prediction| p.values[0].2;
        assert!(throughput(&nebius) > throughput(&other));
        assert_eq!(nebius.values[0].0, "output_tokens_per_s");
        // The limit holds at the 99.25th percentile: the p99 sits below it, by 5-8 % here.
        for p in [&nebius, &other] {
            let (metric, _, ttft_ms, _) = &p.values[1];
            assert_eq!(metric, "ttft_p99_ms");
            assert!(*ttft_ms > 5500.0 && *ttft_ms < 5900.0, "{ttft_ms}");
        }
    }

    /// A submission's case predicted under its own id, with the facts its submission states, and
    /// under an id no submission has.
    fn with_and_without_facts(
        id: &str,
        columns: &str,
        values: &[(&str, &str)],
    ) -> (Prediction, Prediction) {
        (
            predict_named(id, columns, values),
            predict_named("a-run-with-no-submission-facts", columns, values),
        )
    }

    fn has(p: &Prediction, text: &str) -> bool {
        p.notes.iter().any(|n| n.contains(text))
    }

    /// NVIDIA's B200 DeepSeek-R1 server run enables TensorRT-LLM's attention-DP balance (3
    /// iterations' batching wait, timeout 9): at its load a rank receives about 0.04 prompts an
    /// iteration, so every rank rarely holds one and prompts are released every 9 iterations,
    /// a wait uniform over them (`perf::adp_balance`). The same run under another name holds
    /// nothing. The hold adds 4.5 mean iterations to the mean TTFT and lifts the p99 from under
    /// 0.2 s to over 0.9 s (the run's log: 0.73 s and 1.70 s); the ranks prefill together, so
    /// the balanced step is no slower.
    #[test]
    fn the_attention_dp_balance_holds_prompts() {
        let (held, free) = with_and_without_facts(
            "mlperf-5p1-nvidia-b200-sxm-180gbx8-deepseek-r1-server",
            "inference,MLPerf Inference v5.1 closed - NVIDIA B200-SXM-180GBx8_TRT deepseek-r1 Server,u,deepseek-v3,b200,8,1,1,8,8,,nvfp4,fp8,512,803.79,4043.45,server,2000,80,,",
            &[
                ("output_tokens_per_s", "18592.24"),
                ("ttft_p99_ms", "1695.9"),
            ],
        );
        assert!(has(&held, "then 3 iterations, or at most 9") && !has(&free, "balance"));
        let ttft = |p: &Prediction| p.values[1].2;
        assert!(
            ttft(&free) < 200.0 && ttft(&held) > 900.0,
            "{} {}",
            ttft(&free),
            ttft(&held)
        );
        assert!(held.values[0].2 >= free.values[0].2);
    }

    /// AMD's v5.1 Llama-2 server run on MI300X schedules vLLM (V0) once per 9 decode steps
    /// (`num_scheduler_steps` in its config): a new prompt waits for the round in progress,
    /// uniform over 9 iterations of about 0.17 s. The p99 TTFT rises from under 0.8 s to over
    /// 1.6 s (the run's log: 1.91 s); the same run under another name schedules every
    /// iteration.
    #[test]
    fn multi_step_scheduling_delays_prompts() {
        let (stepped, single) = with_and_without_facts(
            "mlperf-5p1-amd-8xmi300x-2xepyc-9575f-llama2-70b-99-server",
            "inference,MLPerf Inference v5.1 closed - AMD 8xMI300X_2xEPYC_9575F llama2-70b-99 Server,u,llama-2-70b,mi300x,8,1,1,,8,,fp8,,,222.33,294.45,server,2000,200,,",
            &[
                ("output_tokens_per_s", "24593.77"),
                ("ttft_p99_ms", "1914.6"),
            ],
        );
        assert!(has(&stepped, "rounds of 9 decode steps") && !has(&single, "decode steps"));
        let ttft = |p: &Prediction| p.values[1].2;
        assert!(
            ttft(&single) < 800.0 && ttft(&stepped) > 1600.0,
            "{} {}",
            ttft(&single),
            ttft(&stepped)
        );
    }

    /// A source's "FP4" is the vendor's own block-scaled format: NVFP4 on Blackwell (which runs
    /// MXFP4 natively too), MXFP4 on MI355X (no NVFP4 tensor-core path); a GPU without FP4 tensor
    /// cores has none, and the case says so.
    #[test]
    fn fp4_is_the_vendors_block_scaled_format() {
        let catalog = Catalog::builtin().unwrap();
        let chosen = |gpu: &str| {
            let row = format!(
                "c,inference,MLPerf Inference v5.1 closed - X,u,llama-2-70b,{gpu},1,1,1,1,1,,fp4,fp8,64,1024,1024,offline,,,,,output_tokens_per_s,1000,tokens/s,"
            );
            predict(&case(&[&row]), &catalog).map(|p| p.chosen.weight_dtype)
        };
        assert_eq!(chosen("b200").unwrap(), "nvfp4");
        assert_eq!(chosen("mi355x").unwrap(), "mxfp4");
        let none = chosen("h100-sxm").unwrap_err();
        assert_eq!(none, "weight_dtype fp4: the GPU runs no block-scaled FP4");
    }

    /// TensorRT-LLM's tables leave the KV format to `auto`, the checkpoint's: a model served from
    /// its authors' quantized checkpoint (gpt-oss) and bf16 weights run a bf16 cache; FP8 weights
    /// may come from a checkpoint that quantizes the cache or from one that does not, so the
    /// format stays swept; other harnesses and a given format are left alone.
    #[test]
    fn kv_format_blank_in_trtllm_tables_is_the_checkpoints() {
        let catalog = Catalog::builtin().unwrap();
        let kv = |source: &str, id: &str, weights: &str, kv: &str| {
            let row = format!(
                "c,inference,{source},u,{id},h200-sxm,1,1,,,,,{weights},{kv},,1024,1024,max-throughput,,,,,output_tokens_per_s_per_gpu,1000,tokens/s/GPU,"
            );
            let c = case(&[&row]);
            let m = model(&c, &catalog).unwrap();
            let p = predict(&c, &catalog).unwrap();
            (harness_kv_dtype(&c, m), p.chosen.kv_dtype)
        };
        let trt = "TensorRT-LLM docs developer-guide/perf-overview.md";
        assert_eq!(
            kv(trt, "gpt-oss-120b", "fp8", ""),
            (Some("bf16"), "bf16".to_string())
        );
        assert_eq!(
            kv(trt, "llama-3.1-8b", "bf16", ""),
            (Some("bf16"), "bf16".to_string())
        );
        // Swept: fp8 holds twice the sequences, so it is chosen.
        assert_eq!(
            kv(trt, "llama-3.1-8b", "fp8", ""),
            (None, "fp8".to_string())
        );
        assert_eq!(
            kv(trt, "gpt-oss-120b", "fp8", "fp8"),
            (Some("bf16"), "fp8".to_string())
        );
        assert_eq!(
            kv("InferenceX (SemiAnalysis)", "gpt-oss-120b", "fp8", ""),
            (None, "fp8".to_string())
        );
    }

    /// A batch cap far beyond the KV cache runs at the most sequences the cache holds.
    /// llama-3.1-70b in fp8 on one H200 under TensorRT-LLM: the device's 141 GiB (151.4 GB)
    /// less 70.55 GB of weights (plus the bf16 embedding and head, 2.1 GB) and 0.8 GB of
    /// activations leaves 77.9-80.0 GB, of which the engine gives 0.9 to the KV cache:
    /// 70.1-72.0 GB (docs/model.md §5, "Fit"). A token's fp8 KV is 2 x 80 layers x 8 heads x
    /// 128 = 163,840 B; held for the whole request (2,048 tokens) a sequence takes 335.5 MB, so
    /// 209-214 fit. Held on demand, a sequence counts for its length-biased mean context: in
    /// MLPerf's llama2-70b set answers spread with cv 0.787, so 1,024 + 512 x (1 + 0.787^2) =
    /// 1,853.1 tokens against 2,048 reserved whole, and 2,048 / 1,853.1 = 1.105 times as many
    /// fit (llama-2-70b has llama-3.1-70b's layers and KV heads).
    #[test]
    fn batch_cap_beyond_the_kv_cache_runs_at_the_kv_limit() {
        let catalog = Catalog::builtin().unwrap();
        let row = |source: &str| {
            format!(
                "c,inference,{source},u,llama-3.1-70b,h200-sxm,1,1,1,1,,,fp8,fp8,100000,1024,1024,offline,,,,,output_tokens_per_s,1000,tokens/s,"
            )
        };
        let whole = predict(&case(&[&row("TensorRT-LLM docs")]), &catalog).unwrap();
        let k = whole.chosen.batch;
        assert!((200..=215).contains(&k), "{k}");
        assert!(
            whole
                .notes
                .iter()
                .any(|n| n.contains("does not fit the KV cache")),
            "{:?}",
            whole.notes
        );
        let llama2 = |source: &str| row(source).replace("llama-3.1-70b", "llama-2-70b");
        let whole2 = predict(&case(&[&llama2("TensorRT-LLM docs")]), &catalog).unwrap();
        let on_demand = predict(&case(&[&llama2("MLPerf Inference v5.1")]), &catalog).unwrap();
        let ratio = f64::from(on_demand.chosen.batch) / f64::from(whole2.chosen.batch);
        assert!((ratio - 2048.0 / 1853.1).abs() < 0.01, "{ratio}");
        // An MLPerf benchmark whose dataset spread is not known is not predicted.
        let unknown = predict(&case(&[&row("MLPerf Inference v5.1")]), &catalog).unwrap_err();
        assert!(unknown.contains("src/validate/datasets.toml"), "{unknown}");
        // At the boundary: a cap of k + 1 runs k, a cap of k runs k as given, k - 1 runs k - 1.
        let at_cap = |cap: u32| {
            let row = format!(
                "c,inference,TensorRT-LLM docs,u,llama-3.1-70b,h200-sxm,1,1,1,1,,,fp8,fp8,{cap},1024,1024,offline,,,,,output_tokens_per_s,1000,tokens/s,"
            );
            let p = predict(&case(&[&row]), &catalog).unwrap();
            let limited = p.notes.iter().any(|n| n.contains("does not fit"));
            (p.chosen.batch, limited)
        };
        assert_eq!(at_cap(k + 1), (k, true));
        assert_eq!(at_cap(k), (k, false));
        assert_eq!(at_cap(k - 1), (k - 1, false));
    }

    /// An InferenceX point measures one deployment holding `conc` requests: the chosen instance
    /// runs at most 16 sequences, and its throughput is divided by its own GPUs, not by the
    /// swept system's (InferenceX utils/process_result.py).
    #[test]
    fn at_interactivity_concurrency_bounds_one_deployment() {
        let c = case(&[
            "ix,inference,s,u,llama-3.1-70b,h200-sxm,,,,,,,fp8,fp8,16,1024,1024,at-interactivity,,,,,total_tokens_per_s_per_gpu,1000,tokens/s,",
            "ix,inference,s,u,llama-3.1-70b,h200-sxm,,,,,,,fp8,fp8,16,1024,1024,at-interactivity,,,,,tokens_per_s_per_user,40,tokens/s,",
        ]);
        let catalog = Catalog::builtin().unwrap();
        let p = predict(&c, &catalog).unwrap();
        let ch = &p.chosen;
        assert!(ch.batch <= 16, "{ch:?}");
        assert_eq!(ch.instances, 1);
        assert_eq!(ch.gpus, ch.tp.max(ch.ep) * ch.pp);
        let (_, _, total, scored) = &p.values[0];
        assert!(*scored);
        let (_, target, per_user, scored) = &p.values[1];
        assert!(!scored && per_user >= target, "{per_user}");
        // The total rate is the instance's output rate x (1 + ISL/OSL) over its GPUs. Decoding,
        // it emits batch / TPOT tokens/s: batch x tokens/s/user x 2 over the instance's GPUs;
        // each request's TTFT (well under a second for 1,024 prompt tokens) comes on top of its
        // 1,024 x TPOT (over 10 s at 40-100 tokens/s), which takes a few percent off. Read on
        // the frontier toward a faster knot below the target, it can only rise.
        let decoding = f64::from(ch.batch) * per_user * 2.0 / f64::from(ch.gpus);
        assert!(*total > 0.95 * decoding, "{total} vs {decoding}");
        let interpolated = p
            .notes
            .iter()
            .any(|n| n.contains("as InferenceX interpolates"));
        assert!(interpolated || *total < decoding, "{total} vs {decoding}");
    }
}
