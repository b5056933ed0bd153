//! One configuration placed and resolved ([`Instance`]): its layout, bounding stages and
//! hardware rates, and from them its step shapes, memory per GPU and prefill times.

use crate::catalog::ComputeClass;
use crate::grid::Point;

use super::compute::StepTokens;
use super::iteration::{self, Graphs, IterationCost};
use super::latency::{self, Rates, Speculation};
use super::layout::{self, Layout};
use super::memory::{self, StageParams};
use super::{Context, Estimate, ModelFacts, Reason, comm, memo, network};

/// One configuration placed and resolved: its layout, bounding stages and hardware rates. Cheap
/// to build (no allocation); the serving model evaluates it at many loads.
#[derive(Debug, Clone, Copy)]
pub struct Instance<'a> {
    pub ctx: &'a Context,
    pub layout: Layout,
    pub stages: [StageParams; 2],
    pub rates: Rates,
    pub speculation: Speculation,
    /// Percent of instances in the prefill pool; 0 = aggregated serving.
    pub disagg_prefill_pct: u32,
    /// The prefill pool's layout when disaggregated: `layout` itself, or the layout of the
    /// pool's own tp (`prefill_tp`), placed on the same cluster. Equal to `layout` when
    /// aggregated.
    pub prefill_layout: Layout,
    /// What the prefill pool's instance sends per request it prefills, and the bytes of one
    /// request's KV cache it ships to the decode pool (`network::prefill_request`,
    /// `network::kv_transfer_bytes`; zero when aggregated).
    pub prefill_traffic: crate::perf::comm::Traffic,
    pub kv_transfer_bytes: f64,
    /// The prefill pool's platform (index into the context's platform facts): the point's own,
    /// or its `prefill_hardware`'s when disaggregated.
    pub prefill_platform: u32,
    /// The point's platform (its decode pool's when disaggregated).
    pub platform: u32,
    /// Seconds to ship one request's KV cache from its prefill to its decode instance
    /// (disaggregated; NaN otherwise).
    pub kv_transfer_s: f64,
    /// Mean prompt and output lengths served (the workload's, or a schedule phase's).
    pub input_tokens: f64,
    pub output_tokens: f64,
    /// How the engine sizes its KV cache in the GPU's memory.
    pub memory_budget: memory::MemoryBudget,
    /// Time to first token of a request alone on the idle instance (with the KV transfer when
    /// disaggregated). Independent of the batch, so resolved once per placement.
    pub ttft_idle_s: f64,
    /// Requests per second one prefill-only instance completes (disaggregated; NaN otherwise).
    pub prefill_pool_requests_per_s: f64,
    /// Per bounding stage, per GPU: weight bytes, and KV-cache bytes of one sequence at the
    /// context the engine's KV admission holds for it. Batch-independent, so resolved once per
    /// placement.
    pub stage_bytes: [(f64, f64); 2],
    /// How much more KV cache the attention rank holding the most context holds than the
    /// mean, times the square root of its sequences: `z sigma / mu` of the held context (the
    /// rank's `n` sequences hold `n mu (1 + excess / sqrt(n))`; [`Instance::memory`]); 0 with
    /// one attention rank or answers of one length.
    pub kv_rank_excess: f64,
    /// Activation workspace sizes of this layout.
    pub workspace: memory::Workspace,
    /// `(prompt tokens, seconds)`: the prefill of a prompt alone on an idle instance, for the
    /// prompt lengths the serving model asks about (the mean, and the percentiles of the
    /// sweep's spread and of exponential lengths). Batch-independent, so resolved once per
    /// placement.
    pub prompts_alone: [(f64, f64); PROMPTS],
    /// This instance's name in the worker's table of timed steps ([`memo`]), where the engine
    /// evaluates it; `None` times every step afresh.
    pub memo: Option<memo::InstanceId>,
}

/// Prompt lengths whose prefill alone an [`Instance`] keeps.
const PROMPTS: usize = 5;

/// Per-GPU memory of an instance holding a given number of sequences.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Memory {
    pub weights_bytes: f64,
    pub kv_bytes: f64,
    pub used_bytes: f64,
    /// What the engine's budget gives the KV cache beside these weights and activations.
    pub kv_capacity_bytes: f64,
}

impl Memory {
    /// The KV cache fits the engine's budget (negative when weights and activations alone do
    /// not fit, so that nothing does).
    pub fn fits(&self) -> bool {
        self.kv_bytes <= self.kv_capacity_bytes
    }
}

impl Instance<'_> {
    /// Decode at `sequences` concurrent sequences (fractional for a mean concurrency).
    pub fn decode(&self, sequences: f64) -> latency::Decode {
        self.decode_step(&self.decode_shape(sequences))
    }

    /// The tokens of a decode step with `sequences` sequences (no timing).
    pub fn decode_shape(&self, sequences: f64) -> latency::DecodeShape {
        latency::DecodeShape::new(
            &self.layout,
            sequences,
            self.input_tokens,
            self.output_tokens,
            self.ctx.plan.settings.spread(),
            &self.speculation,
            if self.disagg_prefill_pct == 0 {
                latency::Prompts::Folded(self.ctx.plan.settings.adp_balance)
            } else {
                latency::Prompts::Elsewhere
            },
        )
    }

    /// Times the decode step of `shape`.
    pub fn decode_step(&self, shape: &latency::DecodeShape) -> latency::Decode {
        latency::decode_with(
            &self.ctx.model,
            &self.layout,
            &self.stages,
            &self.rates,
            shape,
            &self.speculation,
            self.stage_time(&shape.tokens),
        )
    }

    /// The slower bounding stage's step carrying `t` ([`latency::slowest_stage`]), from the
    /// worker's table of timed steps where this instance has a name there.
    fn stage_time(&self, t: &StepTokens) -> latency::StageTime {
        let time =
            || latency::slowest_stage(&self.ctx.model, &self.layout, &self.stages, &self.rates, t);
        match self.memo {
            Some(id) => memo::stage(id, t, time),
            None => time(),
        }
    }

    /// Time to first token of one request on an idle instance.
    pub fn prefill_s(&self) -> f64 {
        self.prompt_alone_s(self.input_tokens)
    }

    /// Prefill of a prompt of `tokens` alone on an idle instance.
    pub fn prompt_alone_s(&self, tokens: f64) -> f64 {
        match self.prompts_alone.iter().find(|&&(t, _)| t == tokens) {
            Some(&(_, s)) => s,
            None => latency::prefill_s_with(
                &self.ctx.model,
                &self.layout,
                &self.stages,
                &self.rates,
                tokens,
                |t| self.stage_time(t),
            ),
        }
    }

    /// Requests per second one prefill-only instance completes: each iteration fills every
    /// attention rank's token budget (`MAX_NUM_TOKENS`, or one whole prompt if longer) with
    /// prompts.
    pub fn prefill_requests_per_s(&self) -> f64 {
        let c = self.ctx;
        let isl = self.input_tokens;
        let tokens = memory::MAX_NUM_TOKENS.max(isl);
        let step_s = latency::prefill_step_s(
            &c.model,
            &self.layout,
            &self.stages,
            &self.rates,
            tokens,
            isl,
            |t| self.stage_time(t),
        );
        f64::from(self.layout.attention_dp) * tokens / isl / step_s
    }

    /// Whether the prefill pool has a layout of its own (`prefill_tp` other than `tp`) or a GPU
    /// of its own (`prefill_hardware`): its instances then occupy servers of their own
    /// (docs/model.md §12).
    pub fn heterogeneous(&self) -> bool {
        self.prefill_layout != self.layout || self.other_hardware()
    }

    /// Whether the prefill pool runs on a platform of its own (`prefill_hardware`), on racks of
    /// its own preset (docs/model.md §12).
    pub fn other_hardware(&self) -> bool {
        self.prefill_platform != self.platform
    }

    /// Seconds for one GPU of this instance to send or receive its shard of one request's KV
    /// cache, at the full prompt context, over its scale-out NIC: the larger bounding stage's
    /// layers, the KV heads of this instance's tp.
    fn kv_shard_s(&self) -> f64 {
        let layers = self.stages[0].layers.max(self.stages[1].layers);
        let bytes = memory::kv_bytes_per_sequence(
            &self.ctx.model,
            self.layout.tp,
            layers,
            self.rates.kv_bytes_per_element,
            self.input_tokens,
        );
        comm::point_to_point_s(bytes, self.rates.scaleout)
    }

    /// The prefill pool's memory per GPU: the heavier bounding stage's weights, the KV cache
    /// of the prompts one iteration's token budget holds (`max(MAX_NUM_TOKENS, ISL)` per
    /// attention rank, whole prompts), and that iteration's activations.
    fn prefill_memory(&self) -> Memory {
        let (m, isl) = (&self.ctx.model, self.input_tokens);
        let tokens = memory::MAX_NUM_TOKENS.max(isl);
        let prompts = (tokens / isl).ceil();
        let (mut weights_bytes, mut kv_bytes) = (0.0_f64, 0.0_f64);
        for (&(w, _), s) in self.stage_bytes.iter().zip(&self.stages) {
            let kv = prompts
                * self.memory_budget.held_kv_bytes_per_sequence(
                    m,
                    self.layout.tp,
                    s.layers,
                    self.rates.kv_bytes_per_element,
                    isl,
                );
            if w + kv > weights_bytes + kv_bytes {
                (weights_bytes, kv_bytes) = (w, kv);
            }
        }
        let workspace_bytes = self.workspace.bytes(tokens, prompts);
        Memory {
            weights_bytes,
            kv_bytes,
            used_bytes: weights_bytes + kv_bytes + workspace_bytes,
            kv_capacity_bytes: self
                .memory_budget
                .kv_capacity_bytes(weights_bytes, workspace_bytes),
        }
    }

    /// Memory per GPU with `sequences` sequences: the heavier bounding stage's weights and KV
    /// cache plus the step's activations. Each sequence holds KV for the context its admission
    /// policy reserves ([`memory::KvAdmission`]: the sweep's, else the engine's own), on the
    /// attention rank that holds the most ([`Instance::kv_rank_excess`]).
    pub fn memory(&self, sequences: f64) -> Memory {
        self.memory_with(sequences, &self.decode_shape(sequences))
    }

    /// [`Instance::memory`] with the step of `sequences` already shaped.
    pub(crate) fn memory_with(&self, sequences: f64, step: &latency::DecodeShape) -> Memory {
        let l = &self.layout;
        let rank_sequences = (sequences / f64::from(l.attention_dp)).ceil();
        let busiest = if rank_sequences > 0.0 {
            1.0 + self.kv_rank_excess / rank_sequences.sqrt()
        } else {
            1.0
        };
        let (mut weights_bytes, mut kv_bytes) = (0.0_f64, 0.0_f64);
        for &(w, kv_per_sequence) in &self.stage_bytes {
            let kv = rank_sequences * kv_per_sequence * busiest;
            if w + kv > weights_bytes + kv_bytes {
                (weights_bytes, kv_bytes) = (w, kv);
            }
        }
        let workspace_bytes = self
            .workspace
            .bytes(step.tokens.rank_tokens(), step.tokens.logit_rows);
        let kv_capacity_bytes = self
            .memory_budget
            .kv_capacity_bytes(weights_bytes, workspace_bytes);
        Memory {
            weights_bytes,
            kv_bytes,
            used_bytes: weights_bytes + kv_bytes + workspace_bytes,
            kv_capacity_bytes,
        }
    }
}

/// Bytes per element of a token's hidden state in the expert dispatch. Models with node-limited
/// routing are served over DeepEP-style kernels, which dispatch the activations already
/// quantized for the expert GEMM (FP8, DeepEP's dispatch format; DeepSeek-V3 report section
/// 3.3.2) when it runs in 8 bits or fewer; the combine stays bf16. Other models dispatch bf16.
pub(super) fn dispatch_bytes(m: &ModelFacts, expert_activations: ComputeClass) -> f64 {
    if m.routing_groups.is_some() && expert_activations != ComputeClass::Bf16 {
        1.0
    } else {
        memory::ACTIVATION_BYTES
    }
}

/// The spine oversubscription `p` runs at: the grid's, or its rack's own.
pub fn spine_ratio(rack: &crate::catalog::Rack, p: &Point) -> u32 {
    if p.scaleout_oversubscription == crate::grid::RACK_SPINE {
        rack.scaleout_oversubscription
    } else {
        p.scaleout_oversubscription
    }
}

/// Places and resolves a configuration on its racks, or returns the estimate that says why it
/// cannot run.
pub fn instance<'a>(ctx: &'a Context, p: &Point) -> Result<Instance<'a>, Estimate> {
    let gpus = p.racks * ctx.platforms[p.platform as usize].rack.gpus_per_rack();
    instance_serving(ctx, p, gpus, ctx.input_tokens, ctx.output_tokens)
}

/// [`instance`] on a cluster of `gpus` GPUs (whole servers and scale-up domains), serving
/// prompts of `input_tokens` and answers of `output_tokens` (a phase).
pub fn instance_serving<'a>(
    ctx: &'a Context,
    p: &Point,
    gpus: u32,
    input_tokens: f64,
    output_tokens: f64,
) -> Result<Instance<'a>, Estimate> {
    instance_in(ctx, p, gpus, input_tokens, output_tokens, None)
}

/// [`instance_serving`], its steps kept in the worker's table of timed steps under `scope`
/// ([`memo`]) when given.
pub(super) fn instance_in<'a>(
    ctx: &'a Context,
    p: &Point,
    gpus: u32,
    input_tokens: f64,
    output_tokens: f64,
    scope: Option<memo::Scope>,
) -> Result<Instance<'a>, Estimate> {
    let platform = &ctx.platforms[p.platform as usize];
    let m = &ctx.model;
    let l = layout::place(&m.layout_model, &platform.rack, gpus, p.tp, p.pp, p.ep)
        .map_err(|reason| Estimate::infeasible(reason, gpus))?;
    let (
        Some(linear_flops_per_s),
        Some((expert_flops_per_s, expert_bytes_per_param, expert_activations)),
        Some(kv_bytes_per_element),
    ) = (
        platform.linear_flops_per_s[p.weight_dtype as usize],
        platform.expert_compute[p.weight_dtype as usize],
        platform.kv_bytes_per_element[p.kv_dtype as usize],
    )
    else {
        return Err(Estimate::with_layout(Reason::DtypeUnsupported, &l));
    };
    let Some(engine) = platform.engines[p.engine as usize] else {
        return Err(Estimate::with_layout(Reason::EngineUnsupported, &l));
    };
    let prefill_platform = ctx
        .prefill_platform
        .get(p.prefill_hardware as usize)
        .copied()
        .flatten();
    if p.disagg_prefill_pct == 0 && (p.prefill_tp != 0 || prefill_platform.is_some()) {
        return Err(Estimate::with_layout(Reason::PrefillPoolNeedsDisagg, &l));
    }
    let prefill_platform = prefill_platform.unwrap_or(p.platform);
    let cal = &ctx.calibration;
    let weight_dtypes = platform.linear_flops_per_s.len();
    let kernels = platform.kernels[(p.engine as usize * weight_dtypes + p.weight_dtype as usize)
        * ctx.kv_dtypes
        + p.kv_dtype as usize];
    let two_batch_overlap =
        ctx.two_batch_overlap && engine.overlaps_two_batches() && l.attention_dp > 1 && l.ep > 1;
    let rates = Rates {
        linear_flops_per_s,
        attention_flops_per_s: platform.attention_flops_per_s * cal.attention_efficiency,
        bf16_linear_flops_per_s: platform.attention_flops_per_s * cal.serving_gemm_efficiency,
        hbm_bytes_per_s: platform.hbm_bytes_per_s,
        attention_bytes_per_s: platform.hbm_bytes_per_s * cal.attention_efficiency,
        weight_bytes_per_param: platform.weight_bytes_per_param[p.weight_dtype as usize],
        expert_flops_per_s,
        expert_bytes_per_param,
        expert_dispatch_bytes: dispatch_bytes(m, expert_activations),
        kv_bytes_per_element,
        scaleup: platform.scaleup,
        scaleout: platform.scaleout,
        spine: network::Spine::new(&platform.rack, spine_ratio(&platform.rack, p))
            .tiers(platform.scaleout, &l),
        expert_exchange: comm::ExpertExchange::new(
            &m.routing(),
            l.ep,
            platform.rack.scaleup_domain_gpus,
        ),
        // Inside one scale-up domain; a wider expert-parallel group is a wide-EP deployment,
        // which runs an all-to-all (TensorRT-LLM's WIDEEP backend, DeepEP).
        gathers_expert_tokens: l.attention_dp > 1
            && l.ep > 1
            && l.stage_gpus <= platform.rack.scaleup_domain_gpus
            && engine.gathers_expert_tokens(
                l.ep,
                m.experts_per_token,
                platform.rack.scaleup_domain_gpus > platform.rack.gpus_per_server,
                two_batch_overlap,
            ),
        one_shot_all_reduce: true,
        gemm_all_reduce_fusion: ctx.gemm_all_reduce_fusion,
        two_batch_overlap,
        domain_gpus: platform.rack.scaleup_domain_gpus,
        gemm_half_rows: cal.gemm_half_rows,
        step_overhead_s: cal.step_overhead_ms * 1e-3,
        moe_gemm_efficiency: cal.moe_gemm_efficiency,
        kernels,
        iteration: kernels.map(|_| IterationCost {
            graphs: Graphs::of(engine, platform.hbm_gb, l.tp),
            cpu_s: cal.cpu_ms_per_iteration * 1e-3,
            cpu_per_sequence_s: iteration::host_s_per_sequence(engine),
        }),
    };
    let speculation = Speculation {
        tokens: p.spec_tokens,
        acceptance: ctx.spec_acceptance,
        draft_layers: ctx.spec_draft_layers,
    };
    let mut inst = Instance {
        ctx,
        layout: l,
        stages: StageParams::bounding_stages(m, &l),
        rates,
        speculation,
        disagg_prefill_pct: p.disagg_prefill_pct,
        prefill_layout: l,
        prefill_traffic: crate::perf::comm::Traffic::default(),
        kv_transfer_bytes: 0.0,
        prefill_platform: p.platform,
        platform: p.platform,
        kv_transfer_s: f64::NAN,
        input_tokens,
        output_tokens,
        memory_budget: memory::MemoryBudget::new(engine, platform.device_bytes),
        ttft_idle_s: f64::NAN,
        prefill_pool_requests_per_s: f64::NAN,
        stage_bytes: [(0.0, 0.0); 2],
        kv_rank_excess: 0.0,
        // TensorRT-LLM's workspace for gathered tokens is the one read (memory::Workspace::new);
        // vLLM chunks its fused MoE (`VLLM_FUSED_MOE_CHUNK_SIZE`) and keeps the per-GPU rows.
        workspace: memory::Workspace::new(
            m,
            &l,
            rates.gathers_expert_tokens && engine == crate::vocab::ServingEngine::Trtllm,
        ),
        prompts_alone: [(f64::NAN, f64::NAN); PROMPTS],
        memo: scope.map(|s| memo::intern(s, p, &l)),
    };
    // The prompts the serving model times (`serving::Serving`): the mean, and the percentiles
    // of the sweep's length spread and of exponential lengths.
    let spread = ctx.plan.settings.spread();
    let exponential = super::serving::Spread::EXPONENTIAL;
    let prompts = [
        input_tokens,
        spread.prompt_percentile(input_tokens, 0),
        spread.prompt_percentile(input_tokens, 1),
        spread.prompt_percentile(input_tokens, 2),
        exponential.prompt_percentile(input_tokens, 2),
    ];
    inst.prompts_alone = prompts.map(|tokens| (tokens, inst.prompt_alone_s(tokens)));
    let admission = ctx
        .kv_admission
        .unwrap_or(memory::KvAdmission::of_engine(engine));
    let context = admission.held_context(input_tokens, output_tokens, spread);
    // Each attention rank holds its own sequences' KV, and the rank whose sequences hold the
    // most context must fit, as the step waits for it (`latency::DecodeShape::new`).
    if l.attention_dp > 1 && spread.answer_cv2() > 0.0 {
        let sigma = admission
            .held_context_variance(input_tokens, output_tokens, spread)
            .sqrt();
        inst.kv_rank_excess = super::serving::blom_largest_normal(l.attention_dp) * sigma / context;
    }
    for (bytes, s) in inst.stage_bytes.iter_mut().zip(&inst.stages) {
        *bytes = (
            s.weight_bytes(rates.weight_bytes_per_param, rates.expert_bytes_per_param),
            inst.memory_budget.held_kv_bytes_per_sequence(
                m,
                l.tp,
                s.layers,
                rates.kv_bytes_per_element,
                context,
            ),
        );
    }
    let prefill_tp = match p.prefill_tp {
        0 => p.tp,
        tp => tp,
    };
    if inst.disagg_prefill_pct == 0 {
        inst.ttft_idle_s = inst.prefill_s();
    } else if prefill_tp == p.tp && prefill_platform == p.platform {
        // Both pools share the layout: each GPU sends its shard to its decode counterpart.
        inst.kv_transfer_s = inst.kv_shard_s();
        inst.ttft_idle_s = inst.prefill_s() + inst.kv_transfer_s;
        inst.prefill_pool_requests_per_s = inst.prefill_requests_per_s();
        inst.prefill_traffic = network::prefill_request(&inst);
        inst.kv_transfer_bytes = network::kv_transfer_bytes(&inst);
    } else {
        // The prefill pool's own instance: the point at the pool's tp on the pool's platform,
        // aggregated (so it resolves no pool of its own: no prefill tp, no `prefill_hardware`
        // entry), on as many racks of its preset as the cluster has, same workload.
        let prefill_point = Point {
            platform: prefill_platform,
            tp: prefill_tp,
            disagg_prefill_pct: 0,
            prefill_tp: 0,
            prefill_hardware: u32::MAX,
            ..*p
        };
        let prefill_gpus = if prefill_platform == p.platform {
            gpus
        } else {
            let racks = gpus.div_ceil(platform.rack.gpus_per_rack());
            racks.saturating_mul(
                ctx.platforms[prefill_platform as usize]
                    .rack
                    .gpus_per_rack(),
            )
        };
        let prefill = instance_in(
            ctx,
            &prefill_point,
            prefill_gpus,
            input_tokens,
            output_tokens,
            scope,
        )
        .map_err(|e| match e.reason {
            // The prefill GPU cannot run what the decode GPU runs.
            Some(Reason::DtypeUnsupported | Reason::EngineUnsupported) => {
                Estimate::with_layout(Reason::PrefillHardwareUnsupported, &l)
            }
            _ => e,
        })?;
        if !prefill.prefill_memory().fits() {
            return Err(Estimate::with_layout(Reason::PrefillDoesNotFit, &l));
        }
        inst.prefill_layout = prefill.layout;
        inst.prefill_platform = prefill_platform;
        // The prompt's KV leaves the prefill GPUs' memory and lands in the decode GPUs'
        // (NVIDIA Dynamo, "Disaggregated serving": NIXL, VRAM to VRAM, with a smaller prefill
        // tp than decode tp as its example), each side over its own NICs in parallel; the
        // side with the larger shard per GPU sets the time.
        inst.kv_transfer_s = prefill.kv_shard_s().max(inst.kv_shard_s());
        inst.ttft_idle_s = prefill.prefill_s() + inst.kv_transfer_s;
        inst.prefill_pool_requests_per_s = prefill.prefill_requests_per_s();
        inst.prefill_traffic = network::prefill_request(&prefill);
        inst.kv_transfer_bytes = network::kv_transfer_bytes(&prefill);
    }
    Ok(inst)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use crate::grid::Grid;
    use crate::perf::tests::point_on;
    use crate::perf::{Workload, evaluate};

    /// The built-in catalog: the property tests range over all of its presets.
    fn builtin() -> Catalog {
        Catalog::builtin().unwrap()
    }

    /// At batch 1 decode is memory-bound, so verifying three drafts costs almost nothing extra
    /// and TPOT falls by nearly the tokens gained per step.
    #[test]
    fn speculation_cuts_tpot_at_small_batch() {
        let c = Catalog::builtin().unwrap();
        let (ctx, p) = point_on(&c, "h100-sxm", 8, 1);
        let plain = evaluate(&ctx, &p);
        let spec = evaluate(
            &ctx,
            &Point {
                spec_tokens: 3,
                ..p
            },
        );
        let gained = (1.0 - 0.85f64.powi(4)) / 0.15;
        let ratio = plain.tpot_ms / spec.tpot_ms;
        assert!(
            ratio > 0.8 * gained && ratio < gained,
            "{ratio} vs {gained}"
        );
    }

    proptest::proptest! {
        /// Any point of a broad grid, on every built-in rack (so every GPU) and model and in
        /// every number format, evaluates without panicking; feasible rows have finite,
        /// positive metrics and fit in usable HBM; infeasible rows have a reason and no metrics.
        #[test]
        fn evaluation_is_total_and_consistent(
            rack in 0..builtin().racks.len(), tp_log in 0u32..7, pp_log in 0u32..4, ep_log in 0u32..8,
            batch in 1u32..5000, racks in 1u32..4, model in 0..builtin().models.len(),
            w in 0..builtin().dtypes.len(), kv in 0..builtin().dtypes.len(),
            pct in proptest::sample::select(vec![0u32, 25, 50]), spec in 0u32..4,
            prefill_tp in proptest::sample::select(vec![0u32, 1, 2, 8]),
        ) {
            let c = builtin();
            let m = &c.models[model];
            let gpu = c.gpu_index(&c.racks[rack].gpu).unwrap();
            let platform = crate::vocab::Platform { gpu, rack };
            let grid = Grid {
                weight_dtype: vec![w],
                kv_dtype: vec![kv],
                racks: vec![racks],
                tp: vec![1 << tp_log],
                pp: vec![1 << pp_log],
                ep: vec![1 << ep_log],
                disagg_prefill_pct: vec![pct],
                prefill_tp: vec![prefill_tp],
                spec_tokens: vec![spec],
                batch: vec![batch],
                ..Grid::single(&c, platform)
            };
            let Some(ctx) = Context::new(&c, m, &grid, Workload::new(900.5, 300.0)) else {
                // A model without a vocabulary has no context (and a sweep naming it is
                // rejected: `workload.model`).
                proptest::prop_assert!(m.vocab.is_none(), "{}", m.id);
                return Ok(());
            };
            let e = evaluate(&ctx, &grid.point(0));
            if e.feasible() {
                for v in [e.ttft_idle_ms, e.tpot_ms, e.tokens_per_s_per_user, e.tokens_per_s_per_gpu, e.output_tokens_per_s, e.hbm_used_gb_per_gpu, e.tpot_at_load_ms, e.occupancy_per_instance] {
                    proptest::prop_assert!(v.is_finite() && v > 0.0, "{e:?}");
                }
                // At full batch the first token waits for the prompt budget; where the budget
                // cannot supply the batch with prompts there is no steady state, and every
                // latency of the load says so.
                if e.ttft_ms.is_finite() {
                    proptest::prop_assert!(e.ttft_ms > 0.0 && e.ttft_p99_ms >= e.ttft_p50_ms && e.e2e_p99_ms > e.ttft_p99_ms, "{e:?}");
                } else {
                    proptest::prop_assert!(e.ttft_p99_ms.is_infinite() && e.queue_wait_p99_ms.is_infinite(), "{e:?}");
                }
                // A full aggregated instance holds its batch; its TPOT is the full batch's. A
                // disaggregated decode instance holds fewer: its users are being prefilled.
                if pct == 0 {
                    proptest::prop_assert_eq!(e.occupancy_per_instance, f64::from(batch));
                    proptest::prop_assert!((e.tpot_at_load_ms - e.tpot_ms).abs() <= 1e-9 * e.tpot_ms, "{e:?}");
                } else {
                    proptest::prop_assert!(e.occupancy_per_instance <= f64::from(batch) * (1.0 + 1e-12), "{e:?}");
                    // Its mean TPOT is that of the occupancies it runs at, so no slower than the
                    // slowest of them. Not always the full batch's: measured kernel tables are not
                    // monotone in rows (on MI355X, qwen3-235b at pp 2 and attention-DP 8 steps
                    // 0.03 % slower with 3 sequences per rank than with 4).
                    let inst = instance(&ctx, &grid.point(0)).expect("feasible");
                    let speeds = crate::perf::serving::Speeds::new(&inst, f64::from(batch));
                    let slowest_ms = (1..=batch).map(|n| speeds.tpot_s(f64::from(n))).fold(0.0, f64::max) * 1e3;
                    proptest::prop_assert!(e.tpot_at_load_ms <= slowest_ms * (1.0 + 1e-9), "{e:?}");
                }
                proptest::prop_assert!(e.hbm_used_gb_per_gpu <= c.gpus[gpu].device_bytes() / 1e9 + 1e-9);
                // The bounds are the roofline's (datasheet rates at the catalog efficiencies):
                // they bound the roofline model; measured kernels may run past the derated
                // rates, never past the bare peaks.
                let derate = if ctx.platforms[0].kernels.iter().any(Option::is_some) {
                    let g = &c.gpus[gpu];
                    (1.0 / g.efficiency.hbm).max(1.0 / (g.efficiency.gemm_bf16 * c.calibration.serving_gemm_efficiency))
                } else {
                    1.0
                };
                proptest::prop_assert!(e.tokens_per_s_per_gpu <= e.compute_bound_tokens_per_s_per_gpu.min(e.hbm_bound_tokens_per_s_per_gpu) * derate * (1.0 + 1e-9), "{e:?}");
            } else {
                proptest::prop_assert!(e.reason.is_some() && e.tpot_ms.is_nan());
            }
        }
    }
}
