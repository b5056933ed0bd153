//! The training model: one training step of a parallel layout (tensor, pipeline, data, context
//! and expert parallelism, microbatches, interleaved stages, ZeRO stage, activation
//! recomputation, bf16 or fp8) on a cluster, and what a whole run of `train_tokens` then costs
//! in time, GPU-hours and failures. Split by concern: `flops` (model and hardware FLOPs),
//! `memory` (state and activations per GPU), `step` (step time), `reliability` (failures,
//! checkpoints, goodput). Formulas and sources: docs/model.md, "Training".

pub mod flops;
pub mod grid;
pub mod memory;
pub mod reliability;
pub mod step;

pub use crate::catalog::training::Factors;

use crate::catalog::{ComputeClass, Economics, Gpu, Model, Rack};
use crate::perf::cost;
use crate::perf::layout::Tier;
use crate::perf::power::PowerFacts;
use crate::vocab::{Ownership, Vocabulary};

use flops::ForwardFlops;
use memory::{Footprint, ShardParams};
use reliability::Reliability;
use step::{Rates, StepTime};

crate::names::names! {
    /// Activation recomputation (Korthikanti et al. 2022).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub enum Recompute {
        #[default]
        None => "none";
        /// Recompute the attention core and element-wise outputs.
        Selective => "selective";
        /// Keep each layer's input only and recompute the layer in the backward pass.
        Full => "full";
    }
}

impl Vocabulary for Recompute {
    const ALL: &'static [Recompute] = &Recompute::ALL;

    fn as_str(self) -> &'static str {
        Recompute::as_str(self)
    }
}

crate::names::names! {
    /// Number format of the linear layers.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub enum Precision {
        #[default]
        Bf16 => "bf16";
        /// FP8 GEMMs with bf16 master weights (Transformer Engine).
        Fp8 => "fp8";
    }
}

impl Vocabulary for Precision {
    const ALL: &'static [Precision] = &Precision::ALL;

    fn as_str(self) -> &'static str {
        Precision::as_str(self)
    }
}

/// A parallel layout. GPUs = tp x cp x dp x pp; expert parallelism is carved out of dp x cp
/// (Megatron-Core's convention), so `ep` divides `dp x cp`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Layout {
    pub tp: u32,
    pub pp: u32,
    pub dp: u32,
    pub cp: u32,
    pub ep: u32,
    /// Sequences per microbatch.
    pub microbatch: u32,
    /// Model chunks per pipeline stage (interleaved 1F1B); 1 = plain 1F1B.
    pub virtual_stages: u32,
    /// ZeRO stage 0 to 3.
    pub zero_stage: u8,
    pub recompute: Recompute,
    pub precision: Precision,
}

impl Layout {
    pub fn gpus(&self) -> u32 {
        self.tp * self.cp * self.dp * self.pp
    }
}

/// What is trained.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Job {
    pub seq_len: u32,
    /// Sequences per optimizer step.
    pub global_batch_seqs: u32,
    /// Tokens of the whole run.
    pub train_tokens: f64,
}

crate::names::names! {
    /// Why a layout cannot train. Written to `infeasible_reason`; docs/model.md ("Infeasible
    /// layouts") lists the rows in the order the checks run.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Infeasible {
        /// A degree of zero.
        ZeroDegree => "zero_degree";
        /// The cluster's GPUs are not a whole number of tp x pp x cp model replicas.
        GpusNotDivisibleByModelParallel => "gpus_not_divisible_by_tp_x_pp_x_cp";
        HeadsNotDivisibleByTp => "heads_not_divisible_by_tp";
        FewerLayersThanStages => "fewer_layers_than_pp_x_virtual_stages";
        /// Interleaving splits a pipeline stage's layers into chunks; with one stage there is no
        /// pipeline to interleave (Megatron-LM requires pipeline parallelism for it).
        VirtualStagesWithoutPipeline => "virtual_stages_without_pp";
        ExpertsNotDivisibleByEp => "experts_not_divisible_by_ep";
        EpNotDividingDpCp => "ep_not_dividing_dp_x_cp";
        /// Load-balanced ring attention splits each sequence into 2 x cp chunks.
        SeqLenNotDivisibleBy2Cp => "seq_len_not_divisible_by_2cp";
        BatchNotDivisibleByDpMicrobatch => "batch_not_divisible_by_dp_x_microbatch";
        /// Megatron's interleaved schedule runs whole rounds of pp microbatches.
        MicrobatchesNotDivisibleByPp => "microbatches_not_divisible_by_pp";
        /// Tensor parallelism beyond the scale-up domain.
        TpBeyondScaleup => "tp_beyond_scaleup";
        /// The GPU has no tensor cores for the precision.
        UnsupportedPrecision => "unsupported_precision";
        /// The catalog lacks a number the model needs (vocabulary).
        MissingData => "missing_data";
        /// The busiest GPU needs more memory than it has.
        DoesNotFit => "does_not_fit";
    }
}

/// The cluster: one GPU kind in racks of one kind.
#[derive(Debug, Clone, Copy)]
pub struct System<'a> {
    pub gpu: &'a Gpu,
    pub rack: &'a Rack,
    pub factors: Factors,
    /// Fraction of HBM bandwidth and tensor-core rate attention kernels reach (the global
    /// `attention_efficiency` of calibration.toml, shared with inference).
    pub attention_efficiency: f64,
    /// Grouped routed-expert GEMMs relative to dense ones (`moe_gemm_efficiency`, shared).
    pub moe_gemm_efficiency: f64,
    pub economics: &'a Economics,
    pub ownership: Ownership,
}

impl System<'_> {
    /// Rates of a layout whose groups use `domain_gpus` GPUs of each scale-up domain.
    fn rates(&self, precision: Precision, domain_gpus: u32) -> Option<Rates> {
        let g = self.gpu;
        let class = match precision {
            Precision::Bf16 => ComputeClass::Bf16,
            Precision::Fp8 => ComputeClass::Fp8,
        };
        let f = self.factors.gemm_efficiency;
        let link = g.efficiency.link;
        let r = self.rack;
        Some(Rates {
            linear_flops_per_s: g.achievable_flops(class)? * f,
            expert_gemm_efficiency: self.moe_gemm_efficiency,
            attention_flops_per_s: g.achievable_flops(ComputeClass::Bf16)?
                * f
                * self.attention_efficiency,
            hbm_bytes_per_s: g.hbm_bytes_per_s() * g.efficiency.hbm,
            scaleup: Tier::scaleup(r, link),
            scaleout: Tier::scaleout(r, link),
            domain_gpus,
            tp_comm_overlap: self.factors.tp_comm_overlap,
            gemm_half_width: self.factors.gemm_half_width,
        })
    }
}

/// How a layout's scale-up groups sit in the racks. Groups of consecutive GPUs (tp; tp x cp;
/// tp x cp x ep) that fit in a scale-up domain are placed so that none straddles two domains:
/// the largest of them tiles as much of each domain as it can, and the rest of the domain stays
/// idle (64 of an NVL72 rack's 72 GPUs for groups of 16 or 32, as GB200 training runs deploy).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packing {
    /// GPUs of each scale-up domain the job uses.
    pub domain_gpus: u32,
    /// GPUs of each rack the job uses.
    pub gpus_per_rack: u32,
}

impl Packing {
    pub fn new(tp: u32, cp: u32, ep: u32, rack: &Rack) -> Packing {
        let domain = rack.scaleup_domain_gpus.max(1);
        // Spans in u64: only those within a domain count, and the others may pass u32.
        let (tp, cp, ep) = (u64::from(tp), u64::from(cp), u64::from(ep));
        let largest = [tp, tp * cp, tp * cp * ep]
            .into_iter()
            .filter(|&span| span <= u64::from(domain))
            .max()
            .unwrap_or(1)
            .max(1) as u32;
        let used = domain / largest * largest;
        Packing {
            domain_gpus: used,
            gpus_per_rack: (u64::from(rack.gpus_per_rack()) * u64::from(used) / u64::from(domain))
                .max(1) as u32,
        }
    }

    /// Racks that hold `gpus` GPUs so placed.
    pub fn racks(&self, gpus: u32) -> u32 {
        gpus.div_ceil(self.gpus_per_rack)
    }
}

/// A training layout's step and run.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Estimate {
    pub gpus: u32,
    pub microbatches: u32,
    pub step: StepTime,
    pub memory: Footprint,
    pub hbm_used_gb_per_gpu: f64,
    pub training_tokens_per_s: f64,
    pub model_tflops_per_gpu: f64,
    pub hardware_tflops_per_gpu: f64,
    /// Model FLOP/s over the dense BF16 peak (PaLM's and Llama 3's convention).
    pub mfu_pct: f64,
    pub hfu_pct: f64,
    /// Days of training without failures.
    pub time_to_train_days: f64,
    pub gpu_hours: f64,
    pub reliability: Reliability,
    /// Days of training with failures, checkpoints and restarts.
    pub effective_time_to_train_days: f64,
    /// Facility power while training (IT power x PUE), kW.
    pub facility_power_kw: f64,
    /// Energy, carbon and cost of the whole run, failures included.
    pub mwh_per_run: f64,
    pub kg_co2e_per_run: f64,
    pub usd_per_run: f64,
}

pub fn evaluate(
    model: &Model,
    sys: &System,
    l: &Layout,
    job: &Job,
) -> Result<Estimate, Infeasible> {
    let mut e = Estimate::default();
    evaluate_into(model, sys, l, job, &mut e).map(|()| e)
}

/// [`evaluate`] into `out`. A layout that does not fit still has its memory filled in, so the
/// output can say by how much.
pub fn evaluate_into(
    model: &Model,
    sys: &System,
    l: &Layout,
    job: &Job,
    out: &mut Estimate,
) -> Result<(), Infeasible> {
    *out = Estimate {
        gpus: l.gpus(),
        ..Estimate::default()
    };
    if [l.tp, l.pp, l.dp, l.cp, l.ep, l.microbatch, l.virtual_stages].contains(&0) {
        return Err(Infeasible::ZeroDegree);
    }
    if !model.heads.is_multiple_of(l.tp) {
        return Err(Infeasible::HeadsNotDivisibleByTp);
    }
    if u64::from(model.layers) < u64::from(l.pp) * u64::from(l.virtual_stages) {
        return Err(Infeasible::FewerLayersThanStages);
    }
    if l.virtual_stages > 1 && l.pp == 1 {
        return Err(Infeasible::VirtualStagesWithoutPipeline);
    }
    if l.ep > 1 && (!model.is_moe() || !model.experts().is_multiple_of(l.ep)) {
        return Err(Infeasible::ExpertsNotDivisibleByEp);
    }
    if !(l.dp * l.cp).is_multiple_of(l.ep) {
        return Err(Infeasible::EpNotDividingDpCp);
    }
    // Load-balanced ring attention splits each sequence into 2 x cp chunks.
    if l.cp > 1 && !job.seq_len.is_multiple_of(2 * l.cp) {
        return Err(Infeasible::SeqLenNotDivisibleBy2Cp);
    }
    // In u64: dp x microbatch may pass the largest global batch.
    let per_step = u64::from(l.dp) * u64::from(l.microbatch);
    if !u64::from(job.global_batch_seqs).is_multiple_of(per_step) {
        return Err(Infeasible::BatchNotDivisibleByDpMicrobatch);
    }
    let microbatches = job.global_batch_seqs / (per_step as u32);
    // Megatron's interleaved schedule needs whole rounds of pp microbatches.
    if l.virtual_stages > 1 && !microbatches.is_multiple_of(l.pp) {
        return Err(Infeasible::MicrobatchesNotDivisibleByPp);
    }
    // A tp group wider than a scale-up domain must span whole domains; it then all-reduces
    // hierarchically (`step`). Megatron-LM runs keep tp inside one domain, but such a layout runs.
    let domain = sys.rack.scaleup_domain_gpus;
    if l.tp > domain && !l.tp.is_multiple_of(domain) {
        return Err(Infeasible::TpBeyondScaleup);
    }
    let packing = Packing::new(l.tp, l.cp, l.ep, sys.rack);
    let rates = sys
        .rates(l.precision, packing.domain_gpus)
        .ok_or(Infeasible::UnsupportedPrecision)?;
    let seq_len = f64::from(job.seq_len);
    let flops = ForwardFlops::new(model, seq_len).ok_or(Infeasible::MissingData)?;
    let shard = ShardParams::new(model, l).ok_or(Infeasible::MissingData)?;
    let m = f64::from(microbatches);
    let memory = memory::footprint(model, l, seq_len, m, &shard);
    out.microbatches = microbatches;
    out.memory = memory;
    out.hbm_used_gb_per_gpu = memory.total() / 1e9;
    if memory.total() > sys.gpu.hbm_bytes() * memory::MEMORY_UTILIZATION {
        return Err(Infeasible::DoesNotFit);
    }
    let step = step::step_time(model, l, seq_len, m, &flops, &shard, &rates);

    let gpus = f64::from(l.gpus());
    let step_tokens = f64::from(job.global_batch_seqs) * seq_len;
    let tokens_per_s = step_tokens / step.step_s;
    let model_flops_per_s_per_gpu = tokens_per_s * flops.model_per_token() / gpus;
    let hardware_flops_per_s_per_gpu = tokens_per_s * flops.hardware_per_token(l.recompute) / gpus;
    let peak = sys.gpu.bf16_tflops * 1e12;
    let seconds = job.train_tokens / tokens_per_s;
    let params = model.param_counts().ok_or(Infeasible::MissingData)?;
    let checkpoint_bytes = params.total(model.experts()) * memory::CHECKPOINT_BYTES;
    let reliability = reliability::reliability(
        gpus,
        checkpoint_bytes,
        sys.rack.storage_gbps_per_gpu * 1e9,
        sys.factors.restart_minutes * 60.0,
        sys.factors.failures_per_gpu_hour,
    );
    // Energy and cost over the effective time. Training holds GPUs at board power (an upper
    // bound, as for serving at full batch: docs/model.md, "Power"); whole racks are powered
    // and paid for.
    let hours = seconds / reliability.goodput / 3600.0;
    let racks = f64::from(packing.racks(l.gpus()));
    let power = PowerFacts::new(sys.gpu, sys.rack);
    let servers = racks * power.servers_per_rack;
    let it_kw = power.cluster_kw(servers, gpus, 1.0);
    let footprint = cost::Footprint {
        gpus,
        racks,
        storage_servers: 0.0,
        it_kw,
        // As in serving: the facility provides for full racks at full load.
        provisioned_it_kw: power.cluster_kw(servers, racks * power.gpus_per_rack, 1.0),
        // Training rents at the on-demand price, with no spot standby.
        servers_per_instance: 1.0,
    };
    let usd_per_hour = cost::usd_per_hour(
        sys.ownership.into(),
        &footprint,
        &cost::Prices::new(sys.gpu),
        sys.economics,
    )
    .total();
    let facility_kw = it_kw * sys.economics.pue;
    let mwh_per_run = facility_kw * hours / 1e3;
    *out = Estimate {
        gpus: l.gpus(),
        microbatches,
        step,
        memory,
        hbm_used_gb_per_gpu: memory.total() / 1e9,
        training_tokens_per_s: tokens_per_s,
        model_tflops_per_gpu: model_flops_per_s_per_gpu / 1e12,
        hardware_tflops_per_gpu: hardware_flops_per_s_per_gpu / 1e12,
        mfu_pct: 100.0 * model_flops_per_s_per_gpu / peak,
        hfu_pct: 100.0 * hardware_flops_per_s_per_gpu / peak,
        time_to_train_days: seconds / 86_400.0,
        gpu_hours: gpus * seconds / 3600.0,
        reliability,
        effective_time_to_train_days: hours / 24.0,
        facility_power_kw: facility_kw,
        mwh_per_run,
        kg_co2e_per_run: mwh_per_run * 1e3 * sys.economics.kg_co2e_per_kwh,
        usd_per_run: usd_per_hour * hours,
    };
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::catalog::Catalog;

    fn system<'a>(catalog: &'a Catalog, gpu: &str) -> System<'a> {
        let gpu = catalog.gpu(gpu).unwrap();
        System {
            gpu,
            rack: catalog.rack(&gpu.default_rack).unwrap(),
            factors: Factors::builtin(),
            attention_efficiency: catalog.calibration.attention_efficiency,
            moe_gemm_efficiency: catalog.calibration.moe_gemm_efficiency,
            economics: &catalog.economics,
            ownership: Ownership::Cloud,
        }
    }

    /// A bf16 layout of degrees tp, pp and dp, everything else at its simplest.
    pub(crate) fn layout(tp: u32, pp: u32, dp: u32) -> Layout {
        Layout {
            tp,
            pp,
            dp,
            cp: 1,
            ep: 1,
            microbatch: 1,
            virtual_stages: 1,
            zero_stage: 1,
            recompute: Recompute::None,
            precision: Precision::Bf16,
        }
    }

    /// GPT-3 175B as Narayanan et al. 2021 ran it (Table 1: 1,024 A100s, tp 8, pp 8, batch
    /// 1,536 of 2,048 tokens, activation recomputation): 153 TFLOP/s per GPU counted with
    /// recomputation (Eq. 3). The model lands within 10 %.
    #[test]
    fn megatron_175b_layout_matches_the_paper() {
        let catalog = Catalog::builtin().unwrap();
        let model = catalog.model("gpt3-175b").unwrap();
        let l = Layout {
            recompute: Recompute::Full,
            ..layout(8, 8, 16)
        };
        let job = Job {
            seq_len: 2048,
            global_batch_seqs: 1536,
            train_tokens: 300e9,
        };
        let e = evaluate(model, &system(&catalog, "a100-80gb"), &l, &job).unwrap();
        let err = e.hardware_tflops_per_gpu / 153.0 - 1.0;
        assert!(
            err.abs() < 0.10,
            "{} TFLOP/s ({:+.1} %)",
            e.hardware_tflops_per_gpu,
            100.0 * err
        );
        // 96 microbatches per pipeline, so 7 / 96 of the time is bubble.
        assert_eq!(e.microbatches, 96);
        let bubble = e.step.bubble_s / (96.0 * e.step.microbatch_s);
        assert!((bubble - 7.0 / 96.0).abs() < 1e-12);
        // Hardware FLOPs are 4/3 of model FLOPs with full recomputation of GPT layers (Eq. 3
        // less the logits, which are not recomputed).
        let ratio = e.hardware_tflops_per_gpu / e.model_tflops_per_gpu;
        assert!(ratio > 1.3 && ratio < 4.0 / 3.0, "{ratio}");
        // 300 B tokens: time and GPU-hours follow from the throughput.
        let days = 300e9 / e.training_tokens_per_s / 86_400.0;
        assert!((e.time_to_train_days - days).abs() < 1e-9);
        assert!((e.gpu_hours - 1024.0 * days * 24.0).abs() < 1e-6);
        // Rented, the run costs its GPU-hours (with failures) at the list price.
        let a100 = catalog.gpu("a100-80gb").unwrap();
        let hours = e.effective_time_to_train_days * 24.0;
        let usd = 1024.0 * hours * a100.usd_per_gpu_hour.unwrap();
        assert!((e.usd_per_run / usd - 1.0).abs() < 1e-12);
        assert!((e.mwh_per_run - e.facility_power_kw * hours / 1e3).abs() < 1e-9);
        assert!(e.effective_time_to_train_days > e.time_to_train_days);
    }

    /// The bubble of interleaved 1F1B: (p - 1) / v microbatch times (Narayanan et al. 2021,
    /// section 2.2.2).
    #[test]
    fn interleaving_divides_the_bubble() {
        let catalog = Catalog::builtin().unwrap();
        let model = catalog.model("llama-3.1-70b").unwrap();
        let job = Job {
            seq_len: 4096,
            global_batch_seqs: 64,
            train_tokens: 1e9,
        };
        let sys = system(&catalog, "h100-sxm");
        for v in [1, 2, 4, 5] {
            let l = Layout {
                virtual_stages: v,
                ..layout(8, 4, 2)
            };
            let e = evaluate(model, &sys, &l, &job).unwrap();
            assert_eq!(e.microbatches, 32);
            assert!((e.step.bubble_s - 3.0 / f64::from(v) * e.step.microbatch_s).abs() < 1e-12);
        }
    }

    /// State bytes per parameter by ZeRO stage (Megatron-LM's distributed-optimizer table with
    /// 16-bit gradients): 20; 4 + 16/d; 2 + 18/d; 20/d.
    #[test]
    fn zero_stages_shard_what_they_say() {
        let catalog = Catalog::builtin().unwrap();
        let model = catalog.model("llama-3.1-70b").unwrap();
        let base = layout(8, 4, 16);
        let shard = memory::ShardParams::new(model, &base).unwrap();
        assert_eq!(shard.expert, 0.0);
        // A quarter of the layers (20 of 80) over tp 8, plus the embedding.
        let p = model.param_counts().unwrap();
        let dense = p.non_expert_layers() / 4.0 / 8.0 + p.embedding / 8.0;
        assert!((shard.dense / dense - 1.0).abs() < 1e-12);
        let d = 16.0;
        for (stage, per_param) in [
            (0, 20.0),
            (1, 4.0 + 16.0 / d),
            (2, 2.0 + 18.0 / d),
            (3, 20.0 / d),
        ] {
            let l = Layout {
                zero_stage: stage,
                ..base
            };
            let bytes = memory::state_bytes(&shard, &l);
            assert!(
                (bytes / (shard.dense * per_param) - 1.0).abs() < 1e-12,
                "ZeRO-{stage}"
            );
        }
        // FP8 adds a 1-byte weight copy, sharded with the weights under ZeRO-3.
        for (stage, per_param) in [(1, 5.0 + 16.0 / d), (3, 21.0 / d)] {
            let l = Layout {
                zero_stage: stage,
                precision: Precision::Fp8,
                ..base
            };
            let bytes = memory::state_bytes(&shard, &l);
            assert!(
                (bytes / (shard.dense * per_param) - 1.0).abs() < 1e-12,
                "fp8 ZeRO-{stage}"
            );
        }
    }

    /// Groups never straddle two scale-up domains: tp 16 and ep 32 groups use 64 of an NVL72
    /// rack's 72 GPUs (4 and 2 groups); tp 8 uses all 72 (9 groups); a DGX H100 rack's four
    /// 8-GPU domains are used whole up to tp 8.
    #[test]
    fn groups_are_packed_into_scale_up_domains() {
        let catalog = Catalog::builtin().unwrap();
        let nvl72 = catalog.rack("dgx-gb200-nvl72").unwrap();
        let dgx = catalog.rack("dgx-h100").unwrap();
        let packing = |tp, cp, ep, rack| {
            let p = Packing::new(tp, cp, ep, rack);
            (p.domain_gpus, p.gpus_per_rack)
        };
        assert_eq!(packing(16, 1, 1, nvl72), (64, 64));
        assert_eq!(packing(1, 1, 32, nvl72), (64, 64));
        assert_eq!(packing(8, 1, 1, nvl72), (72, 72));
        assert_eq!(packing(4, 2, 4, nvl72), (64, 64));
        assert_eq!(packing(8, 1, 1, dgx), (8, 32));
        // ep 64 spans eight DGX domains: only tp x cp = 2 is packed.
        assert_eq!(packing(2, 1, 64, dgx), (8, 32));
        // 1,024 GPUs at tp 16 need 16 NVL72 racks, not ceil(1024 / 72) = 15.
        assert_eq!(Packing::new(16, 1, 1, nvl72).racks(1024), 16);
    }

    /// Splits that cannot run are reasons, not numbers.
    #[test]
    fn invalid_layouts_say_why() {
        let catalog = Catalog::builtin().unwrap();
        let model = catalog.model("llama-3.1-70b").unwrap();
        let sys = system(&catalog, "h100-sxm");
        let job = Job {
            seq_len: 4096,
            global_batch_seqs: 64,
            train_tokens: 1e9,
        };
        let reason = |l: Layout| evaluate(model, &sys, &l, &job).unwrap_err();
        assert_eq!(
            reason(layout(8, 1, 3)),
            Infeasible::BatchNotDivisibleByDpMicrobatch
        );
        // 128 heads at tp 128 on a 72-GPU NVL72 domain: neither inside one domain nor whole ones.
        let nvl72 = system(&catalog, "gb200-nvl72");
        let llama_405b = catalog.model("llama-3.1-405b").unwrap();
        assert_eq!(
            evaluate(llama_405b, &nvl72, &layout(128, 1, 1), &job).unwrap_err(),
            Infeasible::TpBeyondScaleup
        );
        assert_eq!(
            reason(Layout {
                ep: 2,
                ..layout(8, 1, 4)
            }),
            Infeasible::ExpertsNotDivisibleByEp
        );
        // 70B in bf16 with ZeRO-0 on one GPU per replica: 1.4 TB of state.
        assert_eq!(
            reason(Layout {
                zero_stage: 0,
                ..layout(1, 1, 64)
            }),
            Infeasible::DoesNotFit
        );
    }
}
