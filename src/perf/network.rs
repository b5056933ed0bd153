//! Network load per tier (dc-simulator's "fabric load"): the bytes and messages per second each
//! GPU sends on the scale-up and scale-out tiers at a row's load, from the collectives the step
//! model times (tensor-parallel all-reduces, expert all-to-alls, pipeline hops), the prefill
//! pool's steps and the KV transfer of disaggregated serving, and the KV reloads from host
//! memory and storage; and the spine ([`Spine`]): how an oversubscribed scale-out spine slows
//! the collectives whose traffic leaves the rack. Does not time anything itself: the times are
//! `latency`'s and `comm`'s, and the traffic mirrors the same collectives ([`comm::Traffic`]).
//! Formulas: docs/model.md, "Network load".

use crate::catalog::Rack;

use super::Instance;
use super::comm::{self, Traffic};
use super::latency::{DecodeShape, Rates};
use super::layout::{Layout, Tier};
use super::memory::{self, ACTIVATION_BYTES};
use super::{ModelFacts, kv_tiers::Offload};

/// The scale-out spine a layout's collectives cross: `ratio:1` oversubscribed above leaves
/// that serve one rack each (the rack's NICs at full rate among themselves).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spine {
    pub ratio: u32,
    /// GPUs under one leaf: the rack's, or the scale-up domain's when a domain spans racks.
    leaf_gpus: u32,
    domain_gpus: u32,
}

/// The scale-out tier each kind of collective sees through the spine ([`comm::through_spine`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpineTiers {
    /// The inter-domain ring of a tensor-parallel all-reduce wider than a domain.
    pub all_reduce: Tier,
    /// The scale-out share of an expert all-to-all.
    pub all_to_all: Tier,
    /// Pipeline hops between scale-up domains.
    pub pipeline: Tier,
}

impl Spine {
    /// `rack`'s spine at `ratio:1`.
    pub fn new(rack: &Rack, ratio: u32) -> Spine {
        Spine {
            ratio,
            leaf_gpus: rack.gpus_per_rack().max(rack.scaleup_domain_gpus),
            domain_gpus: rack.scaleup_domain_gpus,
        }
    }

    /// The scale-out tier `out` for each collective of layout `l`, groups aligned to racks as
    /// [`super::layout::place`] packs them. The share of a GPU's scale-out bytes that leaves
    /// its rack, for a group of `n` GPUs, `d` per domain, `R` per rack (0 when `n <= R`):
    /// - all-to-all, traffic spread evenly over the group's other domains: `(n - R) / (n - d)`;
    /// - the hierarchical all-reduce's inter-domain rings: each of the `d` rings (one per local
    ///   rank) leaves the rack once, `d` flows on the rack's `R` uplink shares: `d / R`;
    /// - a pipeline hop: the stage's `w` GPUs send across one boundary on the rack's `R`
    ///   shares, `min(1, w / R)` (taken for every hop between domains: conservative where
    ///   domains share a rack).
    pub fn tiers(&self, out: Tier, l: &Layout) -> SpineTiers {
        let (d, leaf) = (f64::from(self.domain_gpus), f64::from(self.leaf_gpus));
        let ratio = f64::from(self.ratio);
        let spans = |n: u32| n > self.leaf_gpus;
        let all_to_all = if spans(l.ep) {
            let n = f64::from(l.ep);
            (n - leaf) / (n - d)
        } else {
            0.0
        };
        let ring = if spans(l.tp) { d / leaf } else { 0.0 };
        let pipeline = (f64::from(l.stage_gpus) / leaf).min(1.0);
        SpineTiers {
            all_reduce: comm::through_spine(out, ring, ratio),
            all_to_all: comm::through_spine(out, all_to_all, ratio),
            pipeline: comm::through_spine(out, pipeline, ratio),
        }
    }
}

/// What one GPU of a stage sends through `layers` layers (`dense` of them dense, `moe` MoE) of
/// one step with `rank_tokens` tokens on its attention rank: the collectives of
/// `latency::layer_comm_s`, one for one. Where the engine's measured all-reduce or
/// dispatch/combine times a collective, its bytes are those of the algorithm the cost model
/// takes.
fn layers_traffic(
    m: &ModelFacts,
    l: &Layout,
    r: &Rates,
    [layers, dense, moe]: [f64; 3],
    rank_tokens: f64,
) -> Traffic {
    let message = rank_tokens * m.hidden * ACTIVATION_BYTES;
    let all_reduce = comm::group_all_reduce_traffic(
        l.tp,
        r.domain_gpus,
        message,
        r.scaleup,
        r.one_shot_all_reduce,
    );
    let shared = if m.has_shared_experts {
        all_reduce
    } else {
        Traffic::default()
    };
    let experts = if moe == 0.0 {
        Traffic::default()
    } else if l.attention_dp == 1 {
        all_reduce.times(moe)
    } else {
        let tokens = rank_tokens / f64::from(l.tp);
        let dispatch = r
            .expert_exchange
            .traffic(tokens, m.hidden * r.expert_dispatch_bytes);
        let combine = r
            .expert_exchange
            .traffic(tokens, m.hidden * ACTIVATION_BYTES);
        (dispatch + combine + shared).times(moe)
    };
    all_reduce.times(layers + dense) + experts
}

/// The model's layers: all, dense, MoE.
fn all_layers(m: &ModelFacts) -> [f64; 3] {
    let dense = m.dense_layers.min(m.layers);
    [
        f64::from(m.layers),
        f64::from(dense),
        f64::from(m.layers - dense),
    ]
}

/// `hops` pipeline hops of `bytes` each, `out_share` of them between scale-up domains.
fn hops(bytes: f64, hops: f64, out_share: f64) -> Traffic {
    Traffic::scaleup((1.0 - out_share) * hops * bytes, (1.0 - out_share) * hops)
        + Traffic::scaleout(out_share * hops * bytes, out_share * hops)
}

/// Share of an instance's pipeline hops that cross a scale-up domain boundary.
fn out_share(l: &Layout) -> f64 {
    if l.pp <= 1 {
        0.0
    } else {
        f64::from(l.pp_hops_scaleout) / f64::from(l.pp - 1)
    }
}

/// What one instance sends in one decode iteration of `shape`, summed over its GPUs: each of
/// the `min(pp, sequences)` micro-batches passes every stage (each GPU's stage holds
/// `layers / pp` of the layers) and crosses the `pp - 1` boundaries, carrying the tokens
/// `latency::decode_with` hops.
pub fn decode_iteration(inst: &Instance, shape: &DecodeShape, sequences: f64) -> Traffic {
    let (m, l, r) = (&inst.ctx.model, &inst.layout, &inst.rates);
    let t = &shape.tokens;
    let pp = f64::from(l.pp);
    let micro_batches = pp.min(sequences.ceil()).max(1.0);
    let per_gpu = layers_traffic(m, l, r, all_layers(m), t.rank_tokens()).times(micro_batches / pp);
    let hop_tokens = shape.micro_batch * (1.0 + f64::from(inst.speculation.tokens))
        + t.prefill * f64::from(l.attention_dp);
    per_gpu.times(f64::from(l.gpus_per_instance))
        + hops(
            hop_tokens * m.hidden * ACTIVATION_BYTES,
            micro_batches * (pp - 1.0),
            out_share(l),
        )
}

/// What one prefill-only instance sends per request it prefills (disaggregated serving),
/// summed over its GPUs: an iteration of `max(MAX_NUM_TOKENS, prompt)` tokens on each
/// attention rank through every stage and across the `pp - 1` boundaries
/// (`latency::prefill_step_s`), divided by the prompts it completes.
pub fn prefill_request(inst: &Instance) -> Traffic {
    let (m, l, r) = (&inst.ctx.model, &inst.layout, &inst.rates);
    let tokens = memory::MAX_NUM_TOKENS.max(inst.input_tokens);
    let pp = f64::from(l.pp);
    let iteration = layers_traffic(m, l, r, all_layers(m), tokens)
        .times(f64::from(l.gpus_per_instance) / pp)
        + hops(tokens * m.hidden * ACTIVATION_BYTES, pp - 1.0, out_share(l));
    iteration.times(inst.input_tokens / (f64::from(l.attention_dp) * tokens))
}

/// Bytes of one request's KV cache shipped from a prefill to a decode instance, summed over the
/// GPUs that send it: the `tp` GPUs of its attention rank in every stage each send their shard
/// (`Instance::kv_transfer_s`).
pub fn kv_transfer_bytes(inst: &Instance) -> f64 {
    let (m, l) = (&inst.ctx.model, &inst.layout);
    f64::from(l.tp)
        * memory::kv_bytes_per_sequence(
            m,
            l.tp,
            f64::from(m.layers),
            inst.rates.kv_bytes_per_element,
            inst.input_tokens,
        )
}

/// A cluster's network load, per GPU of its instances.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Load {
    /// Bytes and messages per second on each tier (KV transfers included on the scale-out
    /// tier).
    pub per_s: Traffic,
    /// Bytes per second of KV cache shipped between the pools (disaggregated serving).
    pub kv_transfer_bytes_per_s: f64,
    /// Bytes per second of cached context reloaded from host memory and storage.
    pub kv_reload_bytes_per_s: f64,
}

impl Load {
    /// This load `k` times (a schedule phase's share of time).
    pub fn times(self, k: f64) -> Load {
        Load {
            per_s: self.per_s.times(k),
            kv_transfer_bytes_per_s: k * self.kv_transfer_bytes_per_s,
            kv_reload_bytes_per_s: k * self.kv_reload_bytes_per_s,
        }
    }

    /// The sum of two loads.
    pub fn plus(self, o: Load) -> Load {
        Load {
            per_s: self.per_s + o.per_s,
            kv_transfer_bytes_per_s: self.kv_transfer_bytes_per_s + o.kv_transfer_bytes_per_s,
            kv_reload_bytes_per_s: self.kv_reload_bytes_per_s + o.kv_reload_bytes_per_s,
        }
    }
}

/// The load of `instances` instances of `inst` (`prefill` of them prefill-only, at the prefill
/// pool's own layout and traffic, `Instance::prefill_traffic`) serving
/// `requests_per_s`, each answer `output_tokens` long: the decode pool runs the iterations of
/// `shape` (its full batch, `batch` sequences) the served tokens need, `requests_per_s x
/// output_tokens / (batch x tokens per iteration)` per second, so that bytes per second are
/// bytes per iteration times iterations per second; the prefill pool prefills every request
/// and ships its KV cache; each request reloads its cached context as `offload` keeps it.
/// Divided by the instances' GPUs.
pub fn load(
    inst: &Instance,
    shape: &DecodeShape,
    batch: f64,
    instances: u32,
    prefill: u32,
    requests_per_s: f64,
    offload: &Offload,
) -> Load {
    // Each pool's instances at their own layout (a prefill tp of its own, `prefill_tp`).
    let gpus = f64::from(instances - prefill) * f64::from(inst.layout.gpus_per_instance)
        + f64::from(prefill) * f64::from(inst.prefill_layout.gpus_per_instance);
    let tokens_per_iteration = batch * inst.speculation.tokens_per_step();
    let iterations_per_s = requests_per_s * inst.output_tokens / tokens_per_iteration;
    let mut per_s = decode_iteration(inst, shape, batch).times(iterations_per_s);
    let mut kv_transfer_bytes_per_s = 0.0;
    if prefill > 0 {
        let sender = &inst.prefill_layout;
        kv_transfer_bytes_per_s = requests_per_s * inst.kv_transfer_bytes;
        per_s = per_s
            + inst.prefill_traffic.times(requests_per_s)
            + Traffic::scaleout(
                kv_transfer_bytes_per_s,
                requests_per_s * f64::from(sender.tp * sender.pp),
            );
    }
    Load {
        per_s: per_s.times(1.0 / gpus),
        kv_transfer_bytes_per_s: kv_transfer_bytes_per_s / gpus,
        kv_reload_bytes_per_s: requests_per_s * offload.reload_bytes_mean() / gpus,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use crate::perf::{Estimate, evaluate, instance_serving};
    use crate::spec::{Spec, parse};
    use std::path::Path;

    fn spec(grid: &str) -> Spec {
        let text = format!(
            r#"
[sweep]
name = "t"

[workload]
model = "deepseek-v3"
input_tokens = 1024
output_tokens = 1024

[grid]
hardware = ["h100-sxm"]
weight_dtype = ["fp8"]
kv_dtype = ["fp8"]
{grid}
"#
        );
        parse(Path::new("t.toml"), &text, 1_000_000)
            .expect("test sweep parses")
            .into_inference()
            .expect("an inference sweep")
    }

    /// Every row of `spec`, evaluated.
    fn rows(spec: &Spec) -> Vec<(crate::grid::Point, Estimate)> {
        let ctx = spec.context();
        spec.grid
            .range(0, spec.grid.len())
            .map(|(_, p)| (p, evaluate(&ctx, &p)))
            .collect()
    }

    /// On a rack of four DGX H100 (8-GPU domains, 32 GPUs under a leaf, 50 GB/s NICs): a
    /// 2:1 spine leaves the NIC bandwidth of every collective inside a rack alone, and of an
    /// expert all-to-all over two racks (ep 64) the share `(64 - 32) / (64 - 8) = 4/7` leaves
    /// the rack, so its scale-out leg runs at `1 / max(1, 2 x 4/7) = 7/8` of the NIC, at 4:1
    /// `7/16`. The tp 64 rings leave the rack with `8 / 32` of the flows: no slower up to 4:1,
    /// half as fast at 8:1. A 1:1 spine changes nothing, bit for bit.
    #[test]
    fn spine_slows_only_what_leaves_the_rack() {
        let c = Catalog::builtin().unwrap();
        let rack = c.rack("dgx-h100").unwrap();
        let out = Tier::scaleout(rack, 0.8);
        let layout = |tp, ep| Layout {
            tp,
            ep,
            ..crate::perf::tests::layout(tp, 1, ep, 1)
        };
        let bw = |ratio, tp, ep| Spine::new(rack, ratio).tiers(out, &layout(tp, ep));
        let nic = out.bytes_per_s;
        assert_eq!(bw(2, 1, 64).all_to_all.bytes_per_s, nic * 7.0 / 8.0);
        assert!((bw(4, 1, 64).all_to_all.bytes_per_s - nic * 7.0 / 16.0).abs() < 1e-3);
        assert_eq!(bw(16, 1, 32).all_to_all.bytes_per_s, nic);
        assert_eq!(bw(4, 64, 64).all_reduce.bytes_per_s, nic);
        assert_eq!(bw(8, 64, 64).all_reduce.bytes_per_s, nic / 2.0);
        assert_eq!(bw(4, 8, 8).pipeline.bytes_per_s, nic);
        for (tp, ep) in [(1, 64), (64, 64), (8, 8), (16, 32)] {
            let t = bw(1, tp, ep);
            assert_eq!([t.all_reduce, t.all_to_all, t.pipeline], [out; 3]);
        }
    }

    /// The acceptance case of issue 22: DeepSeek-V3 (fp8) in wide expert parallelism across
    /// the four DGX H100 servers of one rack, tp 1, ep 32, batch 1,024, 1k in / 1k out, by
    /// hand (docs/model.md, "Network load"). Each attention rank runs 1,024 / 32 = 32
    /// sequences and folds 32 x 1,024 / 1,024 = 32 prompt tokens into each step: 64 tokens.
    /// tp 1 has no all-reduce; each of the 58 MoE layers dispatches (FP8, 1 B per element)
    /// and combines (bf16, 2 B) its 64 tokens of 7,168. Node-limited routing (4 of 8 groups,
    /// two groups per server) sends a token to 3 x (1 - C(6,4) / C(8,4)) = 3 x 55/70 = 33/14
    /// remote servers, each one message to the peer GPU of each of the 3 other servers:
    /// per step, 64 x 33/14 x 7,168 x 3 B x 58 = 188,153,856 B in 2 x 3 x 58 = 348 messages on
    /// InfiniBand. Inside the server, the 8 copies of each token reach their experts but for the
    /// one already on the GPU: 64 x 8 x 7/8 x 7,168 x 3 B x 58 = 558,759,936 B, in 2 x 7 x 58
    /// = 812 messages. One step per tpot_ms (no speculation), so scaleout_util =
    /// 188,153,856 B x 1000 / tpot_ms / 50 GB/s.
    #[test]
    fn wide_ep_deepseek_scaleout_util_by_hand() {
        let s = spec("racks = [1]\ntp = [1]\nep = [32]\nbatch = [1024]");
        let [(_, e)] = rows(&s)[..] else {
            panic!("one row")
        };
        assert!(e.feasible(), "{e:?}");
        assert_eq!((e.gpus, e.instances, e.attention_dp), (32, 1, 32));
        let steps_per_s = 1e3 / e.tpot_ms;
        let out_bytes: f64 = 64.0 * 33.0 / 14.0 * 7168.0 * 3.0 * 58.0;
        assert_eq!(out_bytes.round(), 188_153_856.0);
        let up_bytes = 64.0 * 8.0 * 7.0 / 8.0 * 7168.0 * 3.0 * 58.0;
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs();
        assert!(
            close(e.scaleout_gb_per_s_per_gpu, out_bytes * steps_per_s / 1e9),
            "{e:?}"
        );
        assert!(
            close(e.scaleout_util, out_bytes * steps_per_s / 50e9),
            "{e:?}"
        );
        assert!(close(
            e.scaleout_messages_per_s_per_gpu,
            348.0 * steps_per_s
        ));
        assert!(close(
            e.scaleup_gb_per_s_per_gpu,
            up_bytes * steps_per_s / 1e9
        ));
        assert!(close(e.scaleup_util, up_bytes * steps_per_s / 450e9));
        assert!(close(e.scaleup_messages_per_s_per_gpu, 812.0 * steps_per_s));
        // The step's throughput and its traffic are the same steps: 32 tokens per rank each.
        assert!(close(e.tokens_per_s_per_gpu, 32.0 * steps_per_s));
        assert_eq!(
            (e.kv_transfer_gb_per_s_per_gpu, e.scaleout_oversubscription),
            (0.0, 1)
        );
        assert!(e.kv_reload_gb_per_s_per_gpu.is_nan());
    }

    /// The same layout over two racks (ep 64) behind 1:1, 2:1 and 4:1 spines: the bytes per
    /// token do not change, the all-to-all's scale-out leg slows (7/8, then 7/16 of the NIC),
    /// so the step does and the load per GPU falls with it.
    #[test]
    fn an_oversubscribed_spine_slows_wide_ep_across_racks() {
        let s = spec(
            "racks = [2]\ntp = [1]\nep = [64]\nbatch = [1024]\nscaleout_oversubscription = [1, 2, 4]",
        );
        let r = rows(&s);
        let e: Vec<Estimate> = r.iter().map(|(_, e)| *e).collect();
        assert_eq!(
            e.iter()
                .map(|e| e.scaleout_oversubscription)
                .collect::<Vec<_>>(),
            [1, 2, 4]
        );
        let per_token = |e: &Estimate| e.scaleout_gb_per_s_per_gpu / e.tokens_per_s_per_gpu;
        for w in e.windows(2) {
            assert!(
                w[1].tpot_ms > w[0].tpot_ms,
                "{:?}",
                (w[0].tpot_ms, w[1].tpot_ms)
            );
            assert!(w[1].scaleout_util < w[0].scaleout_util);
            assert!((per_token(&w[1]) - per_token(&w[0])).abs() <= 1e-12 * per_token(&w[0]));
        }
    }

    /// Disaggregated serving ships each request's KV cache from the prefill to the decode pool
    /// over the NICs. DeepSeek-V3's MLA cache, fp8, is 512 + 64 = 576 B per token per layer on
    /// every tensor-parallel rank: a 1,024-token prompt is 576 x 61 x 1,024 = 35,979,264 B per
    /// GPU, sent by each of the tp 16 GPUs of its attention rank. Without demand the pools serve
    /// their capacity, `output_tokens_per_s / 1,024` requests per second, over 64 GPUs.
    #[test]
    fn kv_transfer_by_hand() {
        let s = spec("racks = [2]\ntp = [16]\ndisagg_prefill_pct = [50]\nbatch = [64]");
        let [(_, e)] = rows(&s)[..] else {
            panic!("one row")
        };
        assert!(e.feasible(), "{e:?}");
        assert_eq!((e.instances, e.prefill_instances, e.gpus), (4, 2, 64));
        let requests_per_s = e.output_tokens_per_s / 1024.0;
        let want = requests_per_s * 16.0 * 576.0 * 61.0 * 1024.0 / 64.0 / 1e9;
        let got = e.kv_transfer_gb_per_s_per_gpu;
        assert!((got - want).abs() <= 1e-9 * want, "{got} vs {want}");
        assert!(e.scaleout_gb_per_s_per_gpu >= got);
    }

    /// With a prefill pool of its own tp the prefill instance ships the cache (its tp 8 ranks,
    /// each its MLA shard) and the load is spread over both pools' instance GPUs (tp 16 per
    /// decode instance, tp 8 per prefill instance).
    #[test]
    fn kv_transfer_of_a_prefill_pool_of_its_own_tp() {
        let s = spec(
            "racks = [2]\ntp = [16]\nprefill_tp = [8]\ndisagg_prefill_pct = [50]\nbatch = [64]",
        );
        let [(_, e)] = rows(&s)[..] else {
            panic!("one row")
        };
        assert!(e.feasible(), "{e:?}");
        let gpus = 16.0 * f64::from(e.instances - e.prefill_instances)
            + 8.0 * f64::from(e.prefill_instances);
        assert_eq!(e.prefill_gpus, 8 * e.prefill_instances);
        let requests_per_s = e.output_tokens_per_s / 1024.0;
        let want = requests_per_s * 8.0 * 576.0 * 61.0 * 1024.0 / gpus / 1e9;
        let got = e.kv_transfer_gb_per_s_per_gpu;
        assert!(
            (got - want).abs() <= 1e-9 * want,
            "{got} vs {want}: {} instances, {} prefill, {} GPUs, {} prefill GPUs",
            e.instances,
            e.prefill_instances,
            e.gpus,
            e.prefill_gpus
        );
    }

    /// A sized row's load is at the demand it serves: over every aggregated row of a sized
    /// sweep (closed users with cached context, `racks = "auto"`), the bytes per served output
    /// token (`output_tokens_per_month` over 730 h) are the full-batch iteration's bytes over
    /// its tokens, and the KV reloads are the served requests' off-GPU share of their sessions
    /// (positive where context spills to host memory or storage, at most every session whole).
    #[test]
    fn sized_rows_load_the_network_at_the_demand() {
        let text = r#"
[sweep]
name = "t"

[workload]
model = "llama-3.1-8b"
input_tokens = 1024
output_tokens = 256
think_s = 30
cached_tokens = 8192

[workload.demand]
concurrent_users = 20000

[grid]
hardware = ["h100-sxm"]
racks = "auto"
tp = [1, 2, 8]
batch = [4, 32, 256]
"#;
        let s = parse(Path::new("t.toml"), text, 1_000_000)
            .unwrap()
            .into_inference()
            .unwrap();
        let ctx = s.context();
        let session_bytes = memory::kv_bytes_per_sequence(&ctx.model, 1, 32.0, 2.0, 8192.0);
        let (mut checked, mut spilled) = (0, 0);
        for (p, e) in rows(&s) {
            if !e.feasible() {
                continue;
            }
            let inst = instance_serving(&ctx, &p, e.gpus, 1024.0, 256.0).unwrap();
            let batch = f64::from(p.batch);
            let step = decode_iteration(&inst, &inst.decode_shape(batch), batch);
            let served_tokens_per_s = e.output_tokens_per_month / (730.0 * 3600.0);
            let gpus = f64::from(e.instances * e.gpus_per_instance);
            let per_token = e.scaleup_gb_per_s_per_gpu * 1e9 * gpus / served_tokens_per_s;
            let want = step.scaleup_bytes / batch;
            assert!(
                (per_token - want).abs() <= 1e-9 * want,
                "{p:?}: {per_token} vs {want}"
            );
            let reload = e.kv_reload_gb_per_s_per_gpu * 1e9 * gpus;
            let requests_per_s = served_tokens_per_s / 256.0;
            assert!(reload >= 0.0 && reload <= requests_per_s * session_bytes * (1.0 + 1e-12));
            if e.kv_host_gb + e.kv_storage_gb > 0.0 {
                assert!(reload > 0.0, "{p:?}");
                spilled += 1;
            }
            checked += 1;
        }
        assert!(checked > 3 && spilled > 0, "{checked} {spilled}");
    }

    /// bytes/s = bytes per iteration x iterations per second, where the iterations are the
    /// ones the row's tokens/s come from: for every full-batch row of a grid of tp, pp, ep and
    /// draft tokens, the instance's bytes per second on each tier are its decode iteration's
    /// bytes times `tokens_per_s_per_instance / (batch x tokens per iteration)`.
    #[test]
    fn load_is_bytes_per_iteration_times_iterations_per_second() {
        let s = spec(
            "racks = [2]\ntp = [1, 8, 16]\npp = [1, 2, 4]\nep = [1, 16, 64]\nspec_tokens = [0, 2]\nbatch = [8, 256]",
        );
        let ctx = s.context();
        let mut checked = 0;
        for (p, e) in rows(&s) {
            if !e.feasible() {
                continue;
            }
            let inst = instance_serving(&ctx, &p, e.gpus, 1024.0, 1024.0).unwrap();
            let batch = f64::from(p.batch);
            let step = decode_iteration(&inst, &inst.decode_shape(batch), batch);
            let per_s = e.tokens_per_s_per_instance / (batch * inst.speculation.tokens_per_step());
            let gpus = f64::from(e.gpus_per_instance);
            for (got, want) in [
                (e.scaleup_gb_per_s_per_gpu * 1e9, step.scaleup_bytes),
                (e.scaleout_gb_per_s_per_gpu * 1e9, step.scaleout_bytes),
                (e.scaleup_messages_per_s_per_gpu, step.scaleup_messages),
                (e.scaleout_messages_per_s_per_gpu, step.scaleout_messages),
            ] {
                let want = want * per_s / gpus;
                assert!(
                    (got - want).abs() <= 1e-9 * want.abs(),
                    "{p:?}: {got} vs {want}"
                );
            }
            checked += 1;
        }
        assert!(checked > 20, "{checked}");
    }
}
