//! How one model instance maps onto the cluster: which (tp, pp, ep) splits are valid for the model
//! and the rack, how many instances fit, and which network tier each collective crosses.
//!
//! Convention (docs/model.md, "Layout"), matching how TensorRT-LLM, vLLM and SGLang deploy:
//! a pipeline stage spans `w = max(tp, ep)` GPUs. Attention and dense layers are tensor-parallel
//! over `tp` and data-parallel over `w / tp` attention ranks ("attention data parallelism", written
//! `tp=1, ep=N`); routed experts are spread over all `w` GPUs: `ep` expert groups, each expert
//! sliced over `w / ep` GPUs. An instance is `pp` stages, `w * pp` GPUs.

use crate::catalog::Rack;

use super::Reason;

/// Network tier a collective runs on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tier {
    /// Achievable bandwidth per GPU per direction, bytes/s (link peak x link efficiency).
    pub bytes_per_s: f64,
    /// Per-step latency, seconds.
    pub alpha_s: f64,
    /// Fixed cost of one collective call, seconds.
    pub launch_s: f64,
}

impl Tier {
    /// The rack's scale-up domain (NVLink, Infinity Fabric) at `link` of its peak.
    pub fn scaleup(rack: &Rack, link: f64) -> Tier {
        Tier {
            bytes_per_s: rack.scaleup_gbps_per_gpu * 1e9 * link,
            alpha_s: rack.scaleup_latency_us * 1e-6,
            launch_s: rack.collective_launch_us * 1e-6,
        }
    }

    /// The rack's scale-out network (NICs) at `link` of its peak.
    pub fn scaleout(rack: &Rack, link: f64) -> Tier {
        Tier {
            bytes_per_s: rack.scaleout_gbps_per_gpu * 1e9 * link,
            alpha_s: rack.scaleout_latency_us * 1e-6,
            launch_s: rack.collective_launch_us * 1e-6,
        }
    }
}

/// A valid placement of one (tp, pp, ep) split on a cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Layout {
    pub tp: u32,
    pub pp: u32,
    pub ep: u32,
    /// GPUs per pipeline stage, `max(tp, ep)`.
    pub stage_gpus: u32,
    /// Attention data-parallel ranks per stage, `stage_gpus / tp`.
    pub attention_dp: u32,
    pub gpus: u32,
    pub gpus_per_instance: u32,
    pub instances: u32,
    /// Pipeline hops (of `pp - 1`) that cross a scale-up domain boundary, in the worst-placed
    /// instance.
    pub pp_hops_scaleout: u32,
}

/// Model facts the layout rules need.
#[derive(Debug, Clone, Copy)]
pub struct LayoutModel {
    pub layers: u32,
    pub heads: u32,
    pub kv_heads: u32,
    /// MLA keeps one latent per token for all heads, so kv_heads do not constrain tp.
    pub mla: bool,
    /// Routed experts per MoE layer; 0 for dense models.
    pub experts: u32,
}

/// Places `tp x pp x ep` on a cluster of `gpus` GPUs (whole scale-up domains of `rack`), or
/// says why it cannot run.
pub fn place(
    m: &LayoutModel,
    rack: &Rack,
    gpus: u32,
    tp: u32,
    pp: u32,
    ep: u32,
) -> Result<Layout, Reason> {
    if ep > 1 && m.experts == 0 {
        return Err(Reason::EpNeedsMoe);
    }
    if !m.heads.is_multiple_of(tp) {
        return Err(Reason::TpDoesNotDivideHeads);
    }
    // GQA: each GPU holds kv_heads / tp heads, or one replicated head when tp > kv_heads
    // (vLLM / TensorRT-LLM replicate KV heads); either way the two must divide one another.
    if !m.mla && !m.kv_heads.is_multiple_of(tp) && !tp.is_multiple_of(m.kv_heads) {
        return Err(Reason::TpDoesNotDivideKvHeads);
    }
    if m.experts > 0 && !m.experts.is_multiple_of(ep) {
        return Err(Reason::EpDoesNotDivideExperts);
    }
    let stage_gpus = tp.max(ep);
    if !stage_gpus.is_multiple_of(tp) || !stage_gpus.is_multiple_of(ep) {
        return Err(Reason::TpEpMismatch);
    }
    let domain = rack.scaleup_domain_gpus;
    // Tensor parallelism all-reduces twice per layer on the critical path. A group wider than a
    // domain spans whole domains and all-reduces over the scale-out network as well (SGLang and
    // vLLM run tp 16 over two 8-GPU servers: SGLang docs/references/multi_node.md, Llama 3.1 405B;
    // benchmark/deepseek_v3/README.md, DeepSeek-V3 on two H100/H800 nodes).
    if tp > domain && !tp.is_multiple_of(domain) {
        return Err(Reason::TpExceedsScaleupDomain);
    }
    // A stage wider than a domain must span whole domains, and its tp groups must not straddle
    // a domain boundary: each lies inside one domain or spans whole ones.
    if stage_gpus > domain
        && (!stage_gpus.is_multiple_of(domain)
            || !(domain.is_multiple_of(tp) || tp.is_multiple_of(domain)))
    {
        return Err(Reason::StageDoesNotTileDomains);
    }
    if pp > m.layers {
        return Err(Reason::PpExceedsLayers);
    }
    let domains = gpus / domain;
    // Stages are packed into scale-up domains; a stage wider than a domain spans whole domains.
    let stage_groups = if stage_gpus <= domain {
        domains * (domain / stage_gpus)
    } else {
        domains / (stage_gpus / domain)
    };
    let instances = stage_groups / pp;
    if instances == 0 {
        return Err(Reason::InstanceExceedsCluster);
    }
    let pp_hops_scaleout = if stage_gpus <= domain {
        worst_domain_crossings(domain / stage_gpus, pp, instances)
    } else {
        pp - 1
    };
    Ok(Layout {
        tp,
        pp,
        ep,
        stage_gpus,
        attention_dp: stage_gpus / tp,
        gpus,
        gpus_per_instance: stage_gpus * pp,
        instances,
        pp_hops_scaleout,
    })
}

/// Instances take `pp` consecutive stage slots; every `per_domain` slots end a scale-up domain.
/// Returns the most domain boundaries any one instance's pipeline crosses. Placements repeat
/// with period `per_domain / gcd(per_domain, pp)`, so at most that many instances are examined.
fn worst_domain_crossings(per_domain: u32, pp: u32, instances: u32) -> u32 {
    let period = per_domain / gcd(per_domain, pp);
    (0..instances.min(period))
        .map(|j| (j * pp + pp - 1) / per_domain - (j * pp) / per_domain)
        .max()
        .unwrap_or(0)
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 { a } else { gcd(b, a % b) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rack(domain: u32, per_server: u32, servers: u32) -> Rack {
        Rack {
            id: "r".into(),
            gpu: "g".into(),
            description: String::new(),
            gpus_per_server: per_server,
            servers_per_rack: servers,
            scaleup_domain_gpus: domain,
            scaleup_gbps_per_gpu: 450.0,
            scaleup_latency_us: 1.0,
            collective_launch_us: 5.0,
            scaleout_gbps_per_gpu: 50.0,
            scaleout_latency_us: 5.0,
            scaleout_oversubscription: 1,
            server_power_kw: 10.0,
            rack_power_budget_kw: 40.0,
            host_memory_gb_per_gpu: 256.0,
            host_link_gbps_per_gpu: 64.0,
            storage_gbps_per_gpu: 12.5,
            switch_power_kw: 2.0,
            source: String::new(),
        }
    }

    const LLAMA_70B: LayoutModel = LayoutModel {
        layers: 80,
        heads: 64,
        kv_heads: 8,
        mla: false,
        experts: 0,
    };
    const DSV3: LayoutModel = LayoutModel {
        layers: 61,
        heads: 128,
        kv_heads: 128,
        mla: true,
        experts: 256,
    };

    #[test]
    fn hgx_rack_packs_instances_per_server() {
        let r = rack(8, 8, 4);
        let l = place(&LLAMA_70B, &r, r.gpus_per_rack(), 4, 1, 1).unwrap();
        assert_eq!((l.gpus, l.instances, l.gpus_per_instance), (32, 8, 4));
        let l = place(&LLAMA_70B, &r, r.gpus_per_rack(), 8, 2, 1).unwrap();
        assert_eq!((l.instances, l.pp_hops_scaleout), (2, 1));
        let l = place(&LLAMA_70B, &r, r.gpus_per_rack(), 8, 4, 1).unwrap();
        assert_eq!((l.instances, l.pp_hops_scaleout), (1, 3));
        assert_eq!(
            place(&LLAMA_70B, &r, r.gpus_per_rack(), 8, 8, 1),
            Err(Reason::InstanceExceedsCluster)
        );
    }

    #[test]
    fn nvl72_leaves_gpus_idle_when_stages_do_not_divide_the_domain() {
        let r = rack(72, 4, 18);
        // tp = 16: four instances per 72-GPU domain, 8 GPUs idle.
        let l = place(&LLAMA_70B, &r, r.gpus_per_rack(), 16, 1, 1).unwrap();
        assert_eq!((l.gpus, l.instances), (72, 4));
        let l = place(&LLAMA_70B, &r, 2 * r.gpus_per_rack(), 8, 2, 1).unwrap();
        // 9 stages of 8 per domain -> 18 stages over two racks -> 9 instances of 16 GPUs; the
        // fifth takes the last slot of rack 0 and the first of rack 1, so one hop crosses racks.
        assert_eq!((l.instances, l.pp_hops_scaleout), (9, 1));
        let l = place(&LLAMA_70B, &r, 2 * r.gpus_per_rack(), 8, 3, 1).unwrap();
        assert_eq!((l.instances, l.pp_hops_scaleout), (6, 0));
    }

    #[test]
    fn tp_groups_never_straddle_domains() {
        let r = rack(72, 4, 18);
        let wide = LayoutModel {
            experts: 288,
            ..DSV3
        };
        assert_eq!(
            place(&wide, &r, 2 * r.gpus_per_rack(), 16, 1, 144),
            Err(Reason::StageDoesNotTileDomains)
        );
        let l = place(&wide, &r, 2 * r.gpus_per_rack(), 8, 1, 144).unwrap();
        assert_eq!((l.stage_gpus, l.instances), (144, 1));
    }

    #[test]
    fn invalid_splits_have_reasons() {
        let r = rack(8, 8, 4);
        assert_eq!(
            place(&LLAMA_70B, &r, r.gpus_per_rack(), 3, 1, 1),
            Err(Reason::TpDoesNotDivideHeads)
        );
        assert_eq!(
            place(&LLAMA_70B, &r, r.gpus_per_rack(), 1, 1, 2),
            Err(Reason::EpNeedsMoe)
        );
        assert_eq!(
            place(&LLAMA_70B, &r, r.gpus_per_rack(), 1, 81, 1),
            Err(Reason::PpExceedsLayers)
        );
        assert_eq!(
            place(&DSV3, &r, r.gpus_per_rack(), 2, 1, 3),
            Err(Reason::EpDoesNotDivideExperts)
        );
        // 128 heads over tp 128 on a 72-GPU domain: neither inside one domain nor whole ones.
        assert_eq!(
            place(&DSV3, &rack(72, 4, 18), 2 * 72, 128, 1, 1),
            Err(Reason::TpExceedsScaleupDomain)
        );
    }

    /// tp 16 over two 8-GPU domains (SGLang's two-node DeepSeek-V3): a stage of two whole
    /// domains, two instances on four servers; with ep 32, one instance of four domains.
    #[test]
    fn tensor_parallelism_spans_whole_domains() {
        let r = rack(8, 8, 4);
        let l = place(&DSV3, &r, r.gpus_per_rack(), 16, 1, 1).unwrap();
        assert_eq!(
            (
                l.stage_gpus,
                l.attention_dp,
                l.instances,
                l.gpus_per_instance
            ),
            (16, 1, 2, 16)
        );
        let l = place(&DSV3, &r, r.gpus_per_rack(), 16, 1, 32).unwrap();
        assert_eq!((l.stage_gpus, l.attention_dp, l.instances), (32, 2, 1));
        // With pp 2 every hop of a stage wider than a domain crosses the scale-out network.
        let l = place(&DSV3, &r, r.gpus_per_rack(), 16, 2, 1).unwrap();
        assert_eq!((l.instances, l.pp_hops_scaleout), (1, 1));
    }

    #[test]
    fn attention_data_parallel_moe_spans_domains_over_scale_out() {
        let r = rack(8, 8, 4);
        let l = place(&DSV3, &r, r.gpus_per_rack(), 1, 1, 16).unwrap();
        assert_eq!(
            (
                l.stage_gpus,
                l.attention_dp,
                l.instances,
                l.pp_hops_scaleout
            ),
            (16, 16, 2, 0)
        );
        let l = place(&DSV3, &r, r.gpus_per_rack(), 8, 1, 8).unwrap();
        assert_eq!((l.attention_dp, l.instances), (1, 4));
    }
}
