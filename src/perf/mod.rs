//! The analytical inference performance model: `evaluate(context, point) -> Estimate`, a pure
//! function with no I/O and no allocation. What it reads is resolved once per sweep (`context`:
//! workload, platforms, plan; `facts`: the model) and once per placement (`instance`); what it
//! answers is an `estimate`. Split by concern: `layout` (placement and validity), `memory` (bytes
//! per GPU), `compute` (FLOPs and tensor cores), `comm` (collectives), `latency` (step time, TPOT,
//! TTFT) and `batched` (one instance's rates at its batch); then the cluster: `demand` (what must
//! be served), `serving` and `closed` (an instance's occupancy under an open stream or a closed
//! population of users), `steady` (a pool's steady state and latencies at its load), `queue` and
//! `sizing` (utilization, SLOs, the fewest instances), `kv_tiers` (cached context off the GPU),
//! `power`, `cost`, and `cluster`, which puts them together (and sizes servers); `memo` keeps the
//! step times a worker has computed for the points at other rack counts. Every formula and its
//! source: docs/model.md.

#![expect(
    clippy::result_large_err,
    reason = "an infeasible `Estimate` is the ordinary answer for most grid points, returned through `Result::Err`; boxing it would allocate in the hot loop"
)]

pub mod adp_balance;
pub mod batched;
pub mod closed;
pub mod cluster;
pub use cluster::PlacementCache;
pub mod comm;
pub mod compute;
pub mod cost;
pub mod demand;
pub mod iteration;
pub mod kernels;
pub mod kv_tiers;
pub mod latency;
pub mod layout;
pub mod memo;
pub mod memory;
pub mod network;
pub mod power;
pub mod queue;
pub mod serving;
pub mod sizing;
pub mod steady;

mod context;
mod estimate;
mod facts;
mod instance;

pub use context::{
    Context, DEFAULT_SPEC_ACCEPTANCE, DEFAULT_SPEC_DRAFT_LAYERS, Phase, Plan, Workload,
    WorkloadValues,
};
pub use estimate::{Estimate, Limit, Reason};
pub use facts::ModelFacts;
pub use instance::{Instance, Memory, instance, instance_serving};

use crate::grid::Point;

use batched::BatchedInstance;

/// Predicts one configuration: performance at full batch, sizing against the demand, power and
/// cost. Pure: no I/O, no allocation.
pub fn evaluate(ctx: &Context, p: &Point) -> Estimate {
    cluster::evaluate(ctx, p)
}

/// [`evaluate`], reusing the placement of the previous point where only batch or ownership
/// changed (the engine keeps one [`PlacementCache`] per worker).
pub fn evaluate_with<'a>(
    ctx: &'a Context,
    p: &Point,
    placements: &mut PlacementCache<'a>,
) -> Estimate {
    cluster::evaluate_with(ctx, p, placements)
}

/// [`evaluate_with`] into `out`, where the caller keeps the estimate (the engine's hot loop:
/// no copies of the 320-byte estimate on the way).
pub fn evaluate_into<'a>(
    ctx: &'a Context,
    p: &Point,
    placements: &mut PlacementCache<'a>,
    out: &mut Estimate,
) {
    cluster::evaluate_into(ctx, p, placements, out);
}

/// Predicts a placed instance at full batch on its layout's cluster (`evaluate` once the
/// configuration is resolved), without power, cost or sizing.
pub fn estimate(inst: &Instance, batch: u32) -> Estimate {
    match BatchedInstance::new(inst, batch) {
        Ok(batched) => batched.estimate(inst.layout.instances, inst.layout.gpus),
        Err(estimate) => estimate,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::instance::dispatch_bytes;
    use super::*;
    use crate::catalog::{Catalog, ComputeClass};
    use crate::grid::Grid;
    use latency::Speculation;
    use layout::{Layout, Tier};

    pub fn facts(id: &str) -> ModelFacts {
        let c = Catalog::builtin().unwrap();
        ModelFacts::new(c.model(id).unwrap()).unwrap()
    }

    /// A layout built directly (placement rules are tested in `layout`).
    pub fn layout(tp: u32, pp: u32, ep: u32, instances: u32) -> Layout {
        let stage_gpus = tp.max(ep);
        Layout {
            tp,
            pp,
            ep,
            stage_gpus,
            attention_dp: stage_gpus / tp,
            gpus: stage_gpus * pp * instances,
            gpus_per_instance: stage_gpus * pp,
            instances,
            pp_hops_scaleout: 0,
        }
    }

    /// llama-3.1-70b at 1k in / 1k out on one rack of `gpu` at `tp` and `batch`, every other
    /// axis at its default (bf16 weights and KV cache).
    pub fn point_on(catalog: &Catalog, gpu: &str, tp: u32, batch: u32) -> (Context, Point) {
        point_in(catalog, gpu, tp, batch, ["bf16", "bf16"], [1024.0, 1024.0])
    }

    /// llama-3.1-70b on one rack of `gpu` at `tp` and `batch`, weights and KV cache in
    /// `formats`, `lengths` tokens in and out, every other axis at its default.
    pub fn point_in(
        catalog: &Catalog,
        gpu: &str,
        tp: u32,
        batch: u32,
        formats: [&str; 2],
        lengths: [f64; 2],
    ) -> (Context, Point) {
        point_of(catalog, "llama-3.1-70b", gpu, tp, batch, formats, lengths)
    }

    /// [`point_in`] of `model`.
    pub fn point_of(
        catalog: &Catalog,
        model: &str,
        gpu: &str,
        tp: u32,
        batch: u32,
        formats: [&str; 2],
        lengths: [f64; 2],
    ) -> (Context, Point) {
        let g = catalog.gpu_index(gpu).unwrap();
        let rack = catalog.rack_index(&catalog.gpus[g].default_rack).unwrap();
        let [weights, kv] = formats.map(|id| vec![catalog.dtype_index(id).unwrap()]);
        let grid = Grid {
            tp: vec![tp],
            batch: vec![batch],
            weight_dtype: weights,
            kv_dtype: kv,
            ..Grid::single(catalog, crate::vocab::Platform { gpu: g, rack })
        };
        let model = catalog.model(model).unwrap();
        let [isl, osl] = lengths;
        let ctx = Context::new(catalog, model, &grid, Workload::new(isl, osl)).unwrap();
        (ctx, grid.point(0))
    }

    /// KV held per GPU by llama-3.1-70b at tp 8 (one KV head per GPU: 80 layers x 2 x 128 x 2 B
    /// = 40,960 B per token), 256 sequences of 1k in / 1k out, by hand: reserved for the whole
    /// request, 2,048 tokens each, 21.47 GB; on demand with answers of one length, the mean
    /// 1,536, 16.11 GB. Over budget, the whole-request batch no longer fits where the on-demand
    /// one does. With exponential answers (cv 1, the default) a running sequence has produced
    /// `1024 * (1 + 1) / 2 = 1024` tokens on average (length-biased), so on demand holds 2,048,
    /// and a whole-request reservation holds each running sequence's whole answer, length-biased
    /// too: `1024 + 1024 * (1 + 1) = 3,072`.
    #[test]
    fn kv_admission_sets_the_context_held_per_sequence() {
        let c = Catalog::builtin().unwrap();
        let (mut ctx, p) = point_on(&c, "h100-sxm", 8, 256);
        ctx.plan.settings.decode_variability = sizing::variability(0.0);
        let per_token = 80.0 * 2.0 * 128.0 * 2.0;
        let mut on_demand = ctx.clone();
        on_demand.kv_admission = Some(memory::KvAdmission::OnDemand);
        let whole = evaluate(&ctx, &p);
        let mean = evaluate(&on_demand, &p);
        assert!(whole.feasible() && mean.feasible(), "{whole:?} {mean:?}");
        assert!((whole.hbm_kv_gb_per_gpu - 256.0 * 2048.0 * per_token / 1e9).abs() < 1e-9);
        assert!((mean.hbm_kv_gb_per_gpu - 256.0 * 1536.0 * per_token / 1e9).abs() < 1e-9);
        let mut exponential = on_demand.clone();
        exponential.plan.settings.decode_variability = sizing::variability(1.0);
        let biased = evaluate(&exponential, &p);
        assert!((biased.hbm_kv_gb_per_gpu - 256.0 * 2048.0 * per_token / 1e9).abs() < 1e-9);
        let mut reserved = exponential.clone();
        reserved.kv_admission = Some(memory::KvAdmission::WholeRequest);
        let whole_biased = evaluate(&reserved, &p);
        assert!((whole_biased.hbm_kv_gb_per_gpu - 256.0 * 3072.0 * per_token / 1e9).abs() < 1e-9);
        // 72 GB usable less 17.6 GB of weights holds about 640 sequences at 2,048 tokens and
        // about 860 at 1,536: 768 sequences fit only on demand, and only with even answers.
        let p = Point { batch: 768, ..p };
        assert_eq!(evaluate(&ctx, &p).reason, Some(Reason::DoesNotFit));
        assert!(evaluate(&on_demand, &p).feasible());
        assert_eq!(evaluate(&exponential, &p).reason, Some(Reason::DoesNotFit));
    }

    /// DeepSeek-V3 in FP8 (weights and KV cache) at 1k in / 1k out on an HGX H200 rack under
    /// `engine` at `tp`, `ep` and `batch`, with `[workload]` switches set by `switch`.
    fn dsv3_h200_fp8(
        engine: crate::vocab::Engine,
        shape: [u32; 3],
        switch: impl FnOnce(&mut Workload),
    ) -> Estimate {
        let c = Catalog::builtin().unwrap();
        let (ctx, p) = dsv3_h200_fp8_point(&c, engine, shape, switch);
        evaluate(&ctx, &p)
    }

    /// The context and point of [`dsv3_h200_fp8`].
    pub fn dsv3_h200_fp8_point(
        c: &Catalog,
        engine: crate::vocab::Engine,
        shape: [u32; 3],
        switch: impl FnOnce(&mut Workload),
    ) -> (Context, Point) {
        dsv3_point(c, "h200-sxm", engine, ["fp8", "fp8"], shape, switch)
    }

    /// DeepSeek-V3 at 1k in / 1k out on one rack of `gpu` under `engine`, weights and KV cache
    /// in `formats`, at `[tp, ep, batch]`, the workload changed by `switch`.
    pub fn dsv3_point(
        c: &Catalog,
        gpu: &str,
        engine: crate::vocab::Engine,
        formats: [&str; 2],
        [tp, ep, batch]: [u32; 3],
        switch: impl FnOnce(&mut Workload),
    ) -> (Context, Point) {
        let g = c.gpu_index(gpu).unwrap();
        let rack = c.rack_index(&c.gpus[g].default_rack).unwrap();
        let [weights, kv] = formats.map(|id| vec![c.dtype_index(id).unwrap()]);
        let grid = Grid {
            tp: vec![tp],
            ep: vec![ep],
            batch: vec![batch],
            engine: vec![engine],
            weight_dtype: weights,
            kv_dtype: kv,
            ..Grid::single(c, crate::vocab::Platform { gpu: g, rack })
        };
        let mut workload = Workload::new(1024.0, 1024.0);
        switch(&mut workload);
        let ctx = Context::new(c, c.model("deepseek-v3").unwrap(), &grid, workload).unwrap();
        (ctx, grid.point(0))
    }

    /// DeepSeek-V3 on an HGX H200 at attention DP 8 and ep 8 (batch 256 a rank), with and
    /// without `[workload] eplb`. The load balancer adds one redundant expert per rank in each
    /// of the 58 MoE layers: 58 x 3 x 7168 x 2048 parameters = 2.554 GB per GPU at one byte
    /// each (8 of 264 slots, where 256 experts held 32 a GPU). The experts take the H200's
    /// measured balance factor (docs/model.md §8), so the step is faster. At ep 1 (tp 8) there is nothing to balance:
    /// every column is identical (compared as Debug text, so that NaN columns compare alike).
    #[test]
    fn eplb_balances_the_experts_at_one_redundant_expert_a_rank() {
        use crate::vocab::Engine::Auto;
        let run = |shape: [u32; 3], eplb: bool| dsv3_h200_fp8(Auto, shape, |w| w.eplb = eplb);
        let (off, on) = (run([1, 8, 2048], false), run([1, 8, 2048], true));
        assert!(off.feasible() && on.feasible(), "{off:?} {on:?}");
        let redundant_gb = 58.0 * 3.0 * 7168.0 * 2048.0 / 1e9;
        let added = on.hbm_weights_gb_per_gpu - off.hbm_weights_gb_per_gpu;
        assert!(
            (added - redundant_gb).abs() < 1e-9,
            "{added} {redundant_gb}"
        );
        assert!(
            on.tokens_per_s_per_gpu > 1.05 * off.tokens_per_s_per_gpu,
            "{} {}",
            on.tokens_per_s_per_gpu,
            off.tokens_per_s_per_gpu
        );
        assert_eq!(
            format!("{:?}", run([8, 1, 256], false)),
            format!("{:?}", run([8, 1, 256], true))
        );
    }

    /// Each attention rank holds its own sequences' KV cache, and the rank holding the most
    /// must fit. DeepSeek-V3 (MLA latent in FP8: 61 x 576 = 35,136 bytes a token) at 1k in /
    /// 1k out, exponential lengths (cv 1), reserved whole by TensorRT-LLM: a sequence holds
    /// 1024 + 2 x 1024 = 3,072 tokens on average with standard deviation sqrt(1024^2 x 2 x 1 +
    /// 1024^2) = 1,773.6, so 256 sequences a rank hold 27.632 GB at the mean and, on the
    /// busiest of 8 ranks (Blom's z = 1.43420), 1 + 1.43420 x 1773.6 / 3072 / sqrt(256) =
    /// 1.05175 times that: 29.062 GB. One attention rank (tp 8) holds the mean.
    #[test]
    fn the_attention_rank_holding_the_most_context_must_fit() {
        use crate::vocab::Engine::Auto;
        let kv = |shape| dsv3_h200_fp8(Auto, shape, |_| ()).hbm_kv_gb_per_gpu;
        let mean = 256.0 * 3072.0 * 35_136.0 / 1e9;
        assert!((kv([8, 8, 256]) - mean).abs() < 1e-9, "{}", kv([8, 8, 256]));
        let z = crate::perf::serving::blom_largest_normal(8);
        let busiest = mean * (1.0 + z * (3.0f64).sqrt() * 1024.0 / 3072.0 / 16.0);
        assert!(
            (kv([1, 8, 2048]) - busiest).abs() < 1e-9,
            "{} {busiest}",
            kv([1, 8, 2048])
        );
        assert!((busiest - 29.062).abs() < 1e-3, "{busiest}");
    }

    /// `[workload] two_batch_overlap` on the same DeepSeek-V3 at attention DP 8 and ep 8:
    /// SGLang, which overlaps, runs 2,048 sequences faster, and never slower than one batch at
    /// a time (8 sequences: the two halves read the weights twice and the engine is taken to
    /// keep one batch, as vLLM's token threshold does); TensorRT-LLM, and a layout without
    /// attention data parallelism, are unchanged.
    #[test]
    fn two_batch_overlap_hides_the_exchange_where_the_engine_does() {
        use crate::vocab::Engine::{self, Sglang, Trtllm};
        let run = |engine: Engine, shape: [u32; 3], overlap: bool| {
            dsv3_h200_fp8(engine, shape, |w| w.two_batch_overlap = overlap)
        };
        let speed = |shape, overlap| run(Sglang, shape, overlap).tokens_per_s_per_gpu;
        let (off, on) = (speed([1, 8, 2048], false), speed([1, 8, 2048], true));
        assert!(on > 1.02 * off, "{on} {off}");
        assert!(speed([1, 8, 8], true) >= speed([1, 8, 8], false));
        for (engine, shape) in [(Trtllm, [1, 8, 2048]), (Sglang, [8, 8, 256])] {
            assert_eq!(
                format!("{:?}", run(engine, shape, false)),
                format!("{:?}", run(engine, shape, true))
            );
        }
    }

    /// llama-3.1-70b, bf16, tp = 8 on a DGX H100 rack, batch 1, 1k in / 1k out, by hand, on the
    /// roofline model (the one GPUs without measured kernel surfaces use; here the H100's
    /// surfaces are removed). Decode is HBM-bound: each GPU reads its eighth of the weights and
    /// one sequence's KV cache, then pays two one-shot all-reduces per layer.
    #[test]
    fn llama_70b_tp8_batch1_decode_by_hand() {
        let c = Catalog::builtin().unwrap();
        let (mut ctx, p) = point_on(&c, "h100-sxm", 8, 1);
        for platform in &mut ctx.platforms {
            platform.kernels.iter_mut().for_each(|k| *k = None);
        }
        let e = evaluate(&ctx, &p);
        assert!(e.feasible(), "{e:?}");
        assert_eq!((e.gpus, e.instances, e.gpus_per_instance), (32, 4, 8));

        let layers = 80.0;
        let per_layer =
            2.0 * 8192.0 * 8192.0 + 2.0 * 8192.0 * 1024.0 + 2.0 * 8192.0 + 3.0 * 8192.0 * 28672.0;
        let head = 128_256.0 * 8192.0;
        let weights_read = (layers * per_layer + head) / 8.0 * 2.0;
        // One KV head per GPU: 2 x 128 x 2 B per token per layer, at the mean context of a
        // running sequence with exponential answers (the default spread, cv 1: length-biased,
        // 1024 + 1024 * (1 + 1) / 2), plus the one prompt token prefilled alongside
        // (input/output = 1 per sequence per step).
        let kv_read = layers * 2048.0 * 512.0;
        let kv_written = layers * 512.0;
        let hbm = 3.35e12 * 0.90;
        // Attention kernels reach the calibrated fraction of HBM bandwidth.
        let kv_s = (kv_read + kv_written) / (hbm * c.calibration.attention_efficiency);
        // Non-GEMM kernels per token per layer: norms and residuals 12 x 8192, attention inputs
        // and outputs 4 x 64 heads x 128 / 8, gated-MLP intermediates 2 x 3 x 28672 / 8; two
        // tokens, bf16; plus fp32 logits of 1 + 1/1024 rows over 128256 / 8 vocabulary entries.
        let per_token_layer = 12.0 * 8192.0 + 4.0 * 64.0 * 128.0 / 8.0 + 6.0 * 28672.0 / 8.0;
        let activations =
            2.0 * layers * per_token_layer * 2.0 + (1.0 + 1.0 / 1024.0) * 128_256.0 / 8.0 * 4.0;
        let memory_s = (weights_read + activations) / hbm + kv_s;
        // Two tokens in the step (decode + folded prefill): 2 x 8192 x 2 B per all-reduce,
        // one-shot: launch 6.6 us + alpha 0.6 us + 7/1 x bytes at 450 GB/s x 0.80.
        let all_reduce_s = 6.6e-6 + 0.6e-6 + 7.0 * 32_768.0 / (450e9 * 0.80);
        let comm_s = 2.0 * layers * all_reduce_s;
        // Both kernel classes are HBM-bound, so the per-kernel rooflines add up to the memory
        // time; one engine iteration's overhead comes on top.
        let tpot_ms = (memory_s + comm_s) * 1e3 + c.calibration.step_overhead_ms;
        assert!(
            (e.tpot_ms - tpot_ms).abs() / tpot_ms < 1e-9,
            "{} vs {tpot_ms}",
            e.tpot_ms
        );
        assert_eq!(e.limit, Some(Limit::Hbm));
        assert!((e.tokens_per_s_per_gpu - 4.0 / (tpot_ms / 1e3) / 32.0).abs() < 1e-9);
        // Weights per GPU: an eighth of 141.1 GB.
        assert!(
            (e.hbm_weights_gb_per_gpu - 141.1 / 8.0).abs() < 0.02,
            "{}",
            e.hbm_weights_gb_per_gpu
        );
    }

    /// llama-3.1-70b at tp 16 over two DGX H100 servers, batch 1, 1k in / 1k out, by hand: each
    /// of the 160 all-reduces per step (two per layer) of 2 tokens x 8192 x 2 B = 32 KiB runs
    /// hierarchically: launch 6.6 us, reduce-scatter and all-gather inside the server (14 steps
    /// of 0.6 us, 2 x 7/8 x 32 KiB at 450 GB/s x 0.8), then each GPU's eighth across the two
    /// servers over its NIC (2 steps of 2.7 us, 2 x 1/2 x 4 KiB at 50 GB/s x 0.8).
    #[test]
    fn llama_70b_tp16_across_two_servers_by_hand() {
        let c = Catalog::builtin().unwrap();
        let (ctx, p) = point_on(&c, "h100-sxm", 16, 1);
        let e = evaluate(&ctx, &p);
        assert!(e.feasible(), "{e:?}");
        assert_eq!((e.gpus_per_instance, e.instances), (16, 2));
        let bytes = 2.0 * 8192.0 * 2.0;
        let all_reduce_s = 6.6e-6
            + 14.0 * 0.6e-6
            + 2.0 * 7.0 / 8.0 * bytes / (450e9 * 0.8)
            + 2.0 * 2.7e-6
            + bytes / 8.0 / (50e9 * 0.8);
        let comm_s = instance(&ctx, &p).unwrap().decode(1.0).stage.comm_s;
        assert!(
            (comm_s - 160.0 * all_reduce_s).abs() < 1e-12,
            "{comm_s} vs {}",
            160.0 * all_reduce_s
        );
    }

    /// Leviathan et al. eq. 1: three drafts at 85 % acceptance gain (1 - 0.85^4) / 0.15 = 3.186
    /// tokens per step; none gain one.
    #[test]
    fn speculative_tokens_per_step() {
        let s = Speculation {
            tokens: 3,
            acceptance: 0.85,
            draft_layers: 1.0,
        };
        assert!((s.tokens_per_step() - (1.0 - 0.85f64.powi(4)) / 0.15).abs() < 1e-12);
        assert_eq!(Speculation::OFF.tokens_per_step(), 1.0);
    }

    /// Disaggregated serving: half of 4 instances prefill, half decode; decode runs without
    /// folded prefill, TTFT gains the KV transfer, and throughput is the slower pool's.
    #[test]
    fn disaggregated_pools() {
        let c = Catalog::builtin().unwrap();
        let (ctx, p) = point_on(&c, "h100-sxm", 8, 64);
        let agg = evaluate(&ctx, &p);
        let dis = evaluate(
            &ctx,
            &Point {
                disagg_prefill_pct: 50,
                ..p
            },
        );
        assert_eq!((dis.instances, dis.prefill_instances), (4, 2));
        assert!(dis.tpot_ms < agg.tpot_ms, "pure decode steps are shorter");
        let inst = instance(
            &ctx,
            &Point {
                disagg_prefill_pct: 50,
                ..p
            },
        )
        .unwrap();
        assert!((dis.ttft_idle_ms - (inst.prefill_s() + inst.kv_transfer_s) * 1e3).abs() < 1e-9);
        let decode_rate = 2.0 * 64.0 / (dis.tpot_ms / 1e3 * 1024.0);
        let prefill_rate = 2.0 * inst.prefill_requests_per_s();
        assert!((dis.output_tokens_per_s - decode_rate.min(prefill_rate) * 1024.0).abs() < 1e-6);
        // 99 % of 4 instances rounds to 4: nothing is left to decode.
        let lone = evaluate(
            &ctx,
            &Point {
                disagg_prefill_pct: 99,
                ..p
            },
        );
        assert_eq!(lone.reason, Some(Reason::DisaggNeedsTwoPools));
    }

    /// gpt-oss-120b under an FP8 weight format on one H200 holds its published checkpoint, not
    /// an FP8 one (docs/model.md, "Number formats"): 128 experts x 3 x 2880^2 x 36 layers in
    /// MXFP4 at 4.25 bits = 60.91 GB, attention, norms and routers (26,916,480 per layer) in
    /// the checkpoint's bf16 = 1.94 GB, embedding and LM head (2 x 201,088 x 2880) in bf16 =
    /// 2.32 GB; 65.17 GB in all, against 117.95 GB if the experts were FP8.
    #[test]
    fn gpt_oss_keeps_its_published_mxfp4_experts() {
        let c = Catalog::builtin().unwrap();
        let g = c.gpu_index("h200-sxm").unwrap();
        let platform = crate::vocab::Platform {
            gpu: g,
            rack: c.rack_index(&c.gpus[g].default_rack).unwrap(),
        };
        let grid = Grid {
            weight_dtype: vec![c.dtype_index("fp8").unwrap()],
            ..Grid::single(&c, platform)
        };
        let model = c.model("gpt-oss-120b").unwrap();
        let ctx = Context::new(&c, model, &grid, Workload::new(1024.0, 1024.0)).unwrap();
        let e = evaluate(&ctx, &grid.point(0));
        assert!(e.feasible(), "{e:?}");
        let by_hand = 60.914 + 1.938 + 2.3165;
        assert!(
            (e.hbm_weights_gb_per_gpu - by_hand).abs() < 0.01,
            "{}",
            e.hbm_weights_gb_per_gpu
        );
    }

    /// bf16 llama-3.1-70b (141 GB) does not fit one 80 GB H100; the row says so, with its demand.
    #[test]
    fn does_not_fit_is_a_row_with_a_reason() {
        let c = Catalog::builtin().unwrap();
        let (ctx, p) = point_on(&c, "h100-sxm", 1, 1);
        let e = evaluate(&ctx, &p);
        assert_eq!(
            (e.reason, e.limit),
            (Some(Reason::DoesNotFit), Some(Limit::Memory))
        );
        assert!(e.hbm_used_gb_per_gpu > 141.0);
        assert!(e.tpot_ms.is_nan() && e.tokens_per_s_per_gpu.is_nan());
    }

    /// DeepSeek-V3 is served over DeepEP-style kernels: FP8 dispatch when its experts take 8-bit
    /// inputs, bf16 otherwise and for models without node-limited routing; across four 8-GPU
    /// domains (ep 32) a token crosses the network for 3 x 55/70 remote domains (two groups
    /// per domain, 4 of 8 groups reached; §23), not for 24/32 of its 8 copies.
    #[test]
    fn deepseek_v3_serving_dispatch_is_node_limited() {
        let m = facts("deepseek-v3");
        assert_eq!(dispatch_bytes(&m, ComputeClass::Fp8), 1.0);
        assert_eq!(dispatch_bytes(&m, ComputeClass::Fp4), 1.0);
        assert_eq!(dispatch_bytes(&m, ComputeClass::Bf16), 2.0);
        let qwen = facts("qwen3-235b-a22b");
        assert_eq!(qwen.routing_groups, None);
        assert_eq!(dispatch_bytes(&qwen, ComputeClass::Fp8), 2.0);
        let out = Tier {
            bytes_per_s: 1.0,
            alpha_s: 0.0,
            launch_s: 0.0,
        };
        let up = Tier {
            bytes_per_s: f64::INFINITY,
            ..out
        };
        let bytes = |r: &comm::Routing| {
            comm::ExpertExchange::new(r, 32, 8).time_s(1.0, 7168.0, [up, up, out])
        };
        let limited = bytes(&m.routing());
        assert!(
            (limited - 3.0 * 55.0 / 70.0 * 7168.0).abs() < 1e-6,
            "{limited}"
        );
        let unlimited = comm::Routing {
            groups: None,
            ..m.routing()
        };
        assert!((bytes(&unlimited) - 8.0 * 7168.0 * 24.0 / 32.0).abs() < 1e-6);
    }

    #[test]
    fn expert_fraction_touched_grows_with_batch() {
        let m = facts("deepseek-v3");
        // One token touches exactly 8 of 256 experts.
        assert!((m.expert_fraction_touched(1.0) - 8.0 / 256.0).abs() < 1e-12);
        // 1024 tokens x 8 choices: essentially every expert.
        assert!(m.expert_fraction_touched(1024.0) > 0.9999);
        let dense = facts("llama-3.1-70b");
        assert_eq!(dense.expert_fraction_touched(100.0), 0.0);
    }
}
