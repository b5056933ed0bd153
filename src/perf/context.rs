//! Everything `evaluate` needs, resolved once per sweep so the hot loop only does arithmetic:
//! the workload, each platform's rates per format, the schedule phases and the sizing, power
//! and cost plan.

use crate::catalog::{Calibration, Catalog, ComputeClass, Model, Rack};
use crate::grid::Grid;
use crate::vocab::ServingEngine;

use super::kernels::{Formats, StepKernels};
use super::layout::Tier;
use super::{ModelFacts, compute, cost, demand, kv_tiers, memory, power, sizing};

/// Per-platform facts, resolved once per sweep.
#[derive(Debug, Clone)]
pub(super) struct PlatformFacts {
    pub(super) rack: Rack,
    /// Device memory engines see (`Gpu::device_bytes`).
    pub(super) device_bytes: f64,
    /// The GPU's HBM, GB (engines size their CUDA graphs by it).
    pub(super) hbm_gb: f64,
    /// Rates per weight-dtype axis entry and kv-dtype axis entry; `None` = unsupported.
    pub(super) linear_flops_per_s: Vec<Option<f64>>,
    pub(super) weight_bytes_per_param: Vec<f64>,
    /// Routed-expert FLOP/s and bytes per parameter per weight-dtype axis entry.
    pub(super) expert_compute: Vec<Option<(f64, f64, ComputeClass)>>,
    pub(super) kv_bytes_per_element: Vec<Option<f64>>,
    /// The serving engine each engine-axis entry runs on this GPU; `None` where it does not run.
    pub(super) engines: Vec<Option<ServingEngine>>,
    /// Measured kernel surfaces per engine, weight-dtype and kv-dtype axis entry (index
    /// `(engine x weight_dtypes + weight) x kv_dtypes + kv`); `None` where the GPU has no
    /// tables for them.
    pub(super) kernels: Vec<Option<StepKernels>>,
    pub(super) attention_flops_per_s: f64,
    pub(super) hbm_bytes_per_s: f64,
    pub(super) scaleup: Tier,
    pub(super) scaleout: Tier,
    pub(super) power: power::PowerFacts,
    pub(super) prices: cost::Prices,
    pub(super) tiers: kv_tiers::TierFacts,
}

/// What is served: mean prompt and output lengths, and the speculative-decoding parameters used
/// where a point proposes draft tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Workload {
    pub input_tokens: f64,
    pub output_tokens: f64,
    pub spec_acceptance: f64,
    pub spec_draft_layers: f64,
    /// The sweep's KV admission; `None`: each engine's own ([`memory::KvAdmission::of_engine`]).
    pub kv_admission: Option<memory::KvAdmission>,
    /// Whether an MoE model is served with an expert-parallel load balancer (`[workload] eplb`,
    /// [`ModelFacts::eplb`]).
    pub eplb: bool,
    /// `[workload] two_batch_overlap`: engines that can ([`crate::vocab::ServingEngine::overlaps_two_batches`])
    /// overlap two micro-batches under data-parallel attention and expert parallelism.
    pub two_batch_overlap: bool,
}

/// What an inference row's workload columns show (`columns::Row::workload`): the values of the workload axes (or of `[workload]`)
/// for the row's entry of the grid's `workload` axis. A number that does not apply is NaN
/// (null in the files).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct WorkloadValues {
    /// The entry of the grid's `workload` axis (`Point::workload`).
    pub id: u32,
    /// Label key of the model (index into the sweep's models, `columns::LabelValues::models`).
    pub model: u16,
    pub input_tokens: f64,
    pub output_tokens: f64,
    pub think_s: f64,
    pub cached_tokens: f64,
    /// The demand as given (`[workload.demand]` or the grid's demand axis), before
    /// `demand_scale`; NaN where the demand is given otherwise.
    pub given_concurrent_users: f64,
    pub given_requests_per_s: f64,
    pub given_tokens_per_day: f64,
    pub demand_scale: f64,
}

impl WorkloadValues {
    /// A workload of these mean lengths, without think time, cached tokens or demand.
    pub fn lengths(input_tokens: f64, output_tokens: f64) -> WorkloadValues {
        WorkloadValues {
            id: 0,
            model: 0,
            input_tokens,
            output_tokens,
            think_s: 0.0,
            cached_tokens: 0.0,
            given_concurrent_users: f64::NAN,
            given_requests_per_s: f64::NAN,
            given_tokens_per_day: f64::NAN,
            demand_scale: 1.0,
        }
    }
}

/// Acceptance probability of a draft token when the sweep gives none: DeepSeek-V3's MTP module
/// predicts the second token with an 85-90 % acceptance rate (DeepSeek-V3 report,
/// arXiv:2412.19437, section 5.4.3); we take the low end.
pub const DEFAULT_SPEC_ACCEPTANCE: f64 = 0.85;

/// Draft cost when the sweep gives none: one MTP module is one transformer block (DeepSeek-V3
/// report, section 2.2), so one draft token costs about one layer of the target model.
pub const DEFAULT_SPEC_DRAFT_LAYERS: f64 = 1.0;

impl Workload {
    /// A workload with the default speculative-decoding parameters, each engine with its own KV
    /// admission.
    pub fn new(input_tokens: f64, output_tokens: f64) -> Workload {
        Workload {
            input_tokens,
            output_tokens,
            spec_acceptance: DEFAULT_SPEC_ACCEPTANCE,
            spec_draft_layers: DEFAULT_SPEC_DRAFT_LAYERS,
            kv_admission: None,
            eplb: false,
            two_batch_overlap: false,
        }
    }
}

/// Everything `evaluate` needs, precomputed from the sweep so the hot loop only does arithmetic.
#[derive(Debug, Clone)]
pub struct Context {
    pub model: ModelFacts,
    pub input_tokens: f64,
    pub output_tokens: f64,
    /// Probability that a draft token is accepted (speculative decoding).
    pub spec_acceptance: f64,
    /// Cost of proposing one draft token, in layers of the target model.
    pub spec_draft_layers: f64,
    /// The sweep's KV admission; `None`: each engine's own ([`memory::KvAdmission::of_engine`]).
    pub kv_admission: Option<memory::KvAdmission>,
    /// Whether the engine fuses each row-parallel GEMM with its tensor-parallel all-reduce
    /// (TensorRT-LLM's `gemm_allreduce_plugin`, a build option off by default; `validate` sets
    /// it for the submissions built with it; docs/model.md §7).
    pub gemm_all_reduce_fusion: bool,
    /// `[workload] two_batch_overlap` ([`Workload::two_batch_overlap`]).
    pub two_batch_overlap: bool,
    pub calibration: Calibration,
    /// Facts of the grid's platforms (indexed by `Point::platform`), then of the prefill pools'
    /// other platforms.
    pub(super) platforms: Vec<PlatformFacts>,
    /// Per entry of the grid's `prefill_hardware` axis: the index in `platforms` of the prefill
    /// pool's platform; `None` for `"same"`.
    pub(super) prefill_platform: Vec<Option<u32>>,
    /// Entries of the grid's kv-dtype axis (the stride of `PlatformFacts::kernels`).
    pub(super) kv_dtypes: usize,
    /// Schedule phases (one when the sweep has no `[[workload.phase]]`), weights summing to 1.
    pub phases: Vec<Phase>,
    pub plan: Plan,
    /// The workload's columns, copied into each of its rows (`spec::Spec::context_of` sets
    /// them; here: the lengths, no demand).
    pub workload: WorkloadValues,
}

/// One phase of the schedule: its share of time, its load and its request lengths.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Phase {
    pub weight: f64,
    pub load: demand::Load,
    pub input_tokens: f64,
    pub output_tokens: f64,
}

/// Sizing, power and cost settings of a sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Whether `[workload.demand]` is set (sizing columns are null without it).
    pub demand: bool,
    pub settings: sizing::Settings,
    pub economics: crate::catalog::Economics,
    /// Values of the grid's `ownership` axis: owned, or cloud at a pricing.
    pub ownership: Vec<crate::vocab::Payment>,
    /// Per-token API prices (input, output), USD per million tokens.
    pub api_usd_per_mtok: Option<(f64, f64)>,
}

impl Plan {
    /// No demand, no SLOs, the catalog's economics, cloud prices.
    pub fn without_demand(economics: crate::catalog::Economics) -> Plan {
        Plan {
            demand: false,
            settings: sizing::Settings {
                target_utilization: demand::DEFAULT_TARGET_UTILIZATION,
                think_s: 0.0,
                prefill_variability: 1.0,
                decode_variability: 1.0,
                cached_tokens: 0.0,
                slo: sizing::Slo::default(),
                prompt_quantiles: None,
                adp_balance: None,
                scheduler_steps: 1,
            },
            economics,
            ownership: vec![crate::vocab::Payment::DEFAULT],
            api_usd_per_mtok: None,
        }
    }
}

impl Context {
    /// Resolves the grid's categorical axes against the catalog. `None` when the model lacks a
    /// vocabulary (the spec layer reports that as a user error first).
    pub fn new(
        catalog: &Catalog,
        model: &Model,
        grid: &Grid,
        workload: Workload,
    ) -> Option<Context> {
        let fp8_block = model.fp8_block_size.is_some();
        let routing = model.expert_routing;
        let checkpoint_experts = model
            .checkpoint_expert_dtype
            .as_deref()
            .and_then(|id| catalog.dtype(id));
        let checkpoint_dense = model
            .checkpoint_dense_dtype
            .as_deref()
            .and_then(|id| catalog.dtype(id));
        // The format the linear layers other than the routed experts run in under sweep format
        // `d`: the published checkpoint's wherever its experts are served as published
        // (`compute::expert_compute`), else the sweep's.
        let dense = |d: usize| -> &crate::catalog::Dtype {
            let w = &catalog.dtypes[d];
            match (checkpoint_experts, checkpoint_dense) {
                (Some(c), Some(dense)) if compute::served_as_published(w, c) => dense,
                _ => w,
            }
        };
        let mut model = ModelFacts::new(model)?;
        model.eplb = workload.eplb && model.experts > 0;
        // The grid's platforms, then the prefill pools' GPUs (`prefill_hardware`), each once.
        let mut prefill_platform = Vec::with_capacity(grid.prefill_hardware.len());
        let mut facts_of = grid.platform.clone();
        for p in &grid.prefill_hardware {
            prefill_platform.push(p.map(|p| {
                let i = facts_of.iter().position(|&q| q == p).unwrap_or_else(|| {
                    facts_of.push(p);
                    facts_of.len() - 1
                });
                i as u32
            }));
        }
        let platforms = facts_of
            .iter()
            .map(|p| {
                let gpu = &catalog.gpus[p.gpu];
                let rack = catalog.racks[p.rack].clone();
                let link = gpu.efficiency.link;
                let linear_flops_per_s = grid
                    .weight_dtype
                    .iter()
                    .map(|&d| {
                        compute::compute_class(gpu, dense(d), &catalog.calibration)
                            .map(|(_, flops)| flops)
                    })
                    .collect();
                let weight_bytes_per_param = grid
                    .weight_dtype
                    .iter()
                    .map(|&d| dense(d).bytes_per_param())
                    .collect();
                let expert_compute: Vec<_> = grid
                    .weight_dtype
                    .iter()
                    .map(|&d| {
                        compute::expert_compute(
                            gpu,
                            &catalog.dtypes[d],
                            checkpoint_experts,
                            &catalog.calibration,
                        )
                    })
                    .collect();
                let engines: Vec<_> = grid.engine.iter().map(|e| e.on(&gpu.engines)).collect();
                let kernels = engines
                    .iter()
                    .flat_map(|&engine| {
                        grid.weight_dtype
                            .iter()
                            .zip(&expert_compute)
                            .map(move |w| (engine, w))
                    })
                    .flat_map(|(engine, (&w, experts))| {
                        let weights = &catalog.dtypes[w];
                        // Published pre-quantized experts stay as published (`expert_compute`).
                        let expert_format = match checkpoint_experts {
                            Some(c) if compute::served_as_published(weights, c) => c.id.as_str(),
                            _ => weights.id.as_str(),
                        };
                        grid.kv_dtype.iter().map(move |&kv| {
                            let (_, _, activations) = (*experts)?;
                            StepKernels::resolve(
                                &gpu.id,
                                engine?,
                                &Formats {
                                    weights: &dense(w).id,
                                    experts: (expert_format, activations),
                                    kv: &catalog.dtypes[kv].id,
                                    fp8_block,
                                    routing,
                                },
                            )
                        })
                    })
                    .collect();
                let kv_bytes_per_element = grid
                    .kv_dtype
                    .iter()
                    .map(|&d| {
                        let dtype = &catalog.dtypes[d];
                        gpu.serves_kv(&dtype.id).then(|| dtype.bytes_per_param())
                    })
                    .collect();
                PlatformFacts {
                    device_bytes: gpu.device_bytes(),
                    hbm_gb: gpu.hbm_bytes() / 1e9,
                    linear_flops_per_s,
                    weight_bytes_per_param,
                    expert_compute,
                    kv_bytes_per_element,
                    engines,
                    kernels,
                    attention_flops_per_s: gpu.bf16_tflops * 1e12 * gpu.efficiency.gemm_bf16,
                    hbm_bytes_per_s: gpu.hbm_bytes_per_s() * gpu.efficiency.hbm,
                    scaleup: Tier::scaleup(&rack, link),
                    scaleout: Tier::scaleout(&rack, link),
                    power: power::PowerFacts::new(gpu, &rack),
                    prices: cost::Prices::new(gpu),
                    tiers: kv_tiers::TierFacts {
                        host_bytes_per_gpu: rack.host_memory_gb_per_gpu * 1e9,
                        host_link_bytes_per_s_per_gpu: rack.host_link_gbps_per_gpu * 1e9,
                        storage_bytes_per_s_per_gpu: rack.storage_gbps_per_gpu * 1e9,
                        storage_bytes_per_server: catalog.economics.storage_tb_per_server * 1e12,
                        storage_bytes_per_s_per_server: catalog.economics.storage_gbps_per_server
                            * 1e9,
                    },
                    rack,
                }
            })
            .collect();
        Some(Context {
            model,
            input_tokens: workload.input_tokens,
            output_tokens: workload.output_tokens,
            spec_acceptance: workload.spec_acceptance,
            spec_draft_layers: workload.spec_draft_layers,
            kv_admission: workload.kv_admission,
            gemm_all_reduce_fusion: false,
            two_batch_overlap: workload.two_batch_overlap,
            calibration: catalog.calibration,
            platforms,
            prefill_platform,
            kv_dtypes: grid.kv_dtype.len(),
            phases: vec![Phase {
                weight: 1.0,
                load: demand::Load::default(),
                input_tokens: workload.input_tokens,
                output_tokens: workload.output_tokens,
            }],
            plan: Plan::without_demand(catalog.economics),
            workload: WorkloadValues::lengths(workload.input_tokens, workload.output_tokens),
        })
    }
}
