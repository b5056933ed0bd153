//! Alpha-beta cost of the collectives a step issues: all-reduce (tensor parallelism),
//! reduce-scatter and all-gather (sharded data parallelism in training), all-to-all (expert
//! parallelism) and point-to-point (pipeline stages).
//!
//! Cost model of Thakur, Rabenseifner and Gropp 2005 ("Optimization of Collective Communication
//! Operations in MPICH"): a step costs `alpha + bytes / bandwidth`, plus a fixed launch cost per
//! call (NCCL's own tuning model, `src/graph/tuning.cc`: `baseLat + nsteps x hwLat`). Ring all-reduce moves
//! `2 (n-1)/n` of the message per GPU in `2 (n-1)` steps (NCCL tests, PERFORMANCE.md: bus
//! bandwidth). Small messages on NVSwitch/xGMI use a one-shot all-reduce in which every GPU reads
//! the other `n-1` buffers in a single step (TensorRT-LLM `customAllReduce` one-shot kernel); the
//! engine takes whichever is faster, and so do we.
//!
//! Beside each cost, the [`Traffic`] the same collective puts on each tier (bytes and messages
//! one GPU sends), for the network load of `super::network`; and the bandwidth a collective gets
//! through an oversubscribed spine ([`through_spine`]).

use crate::catalog::Model;

use super::layout::Tier;

/// What one GPU sends on each tier: bytes, and messages (one per peer per step of the
/// collective's algorithm: a ring step, a one-shot write to each peer, a send to each peer of an
/// all-to-all, a pipeline hop).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Traffic {
    pub scaleup_bytes: f64,
    pub scaleup_messages: f64,
    pub scaleout_bytes: f64,
    pub scaleout_messages: f64,
}

impl Traffic {
    /// `bytes` in `messages` on the scale-up tier.
    pub fn scaleup(bytes: f64, messages: f64) -> Traffic {
        Traffic {
            scaleup_bytes: bytes,
            scaleup_messages: messages,
            ..Traffic::default()
        }
    }

    /// `bytes` in `messages` on the scale-out tier.
    pub fn scaleout(bytes: f64, messages: f64) -> Traffic {
        Traffic {
            scaleout_bytes: bytes,
            scaleout_messages: messages,
            ..Traffic::default()
        }
    }

    /// This traffic `k` times.
    pub fn times(self, k: f64) -> Traffic {
        Traffic {
            scaleup_bytes: k * self.scaleup_bytes,
            scaleup_messages: k * self.scaleup_messages,
            scaleout_bytes: k * self.scaleout_bytes,
            scaleout_messages: k * self.scaleout_messages,
        }
    }
}

impl std::ops::Add for Traffic {
    type Output = Traffic;

    fn add(self, o: Traffic) -> Traffic {
        Traffic {
            scaleup_bytes: self.scaleup_bytes + o.scaleup_bytes,
            scaleup_messages: self.scaleup_messages + o.scaleup_messages,
            scaleout_bytes: self.scaleout_bytes + o.scaleout_bytes,
            scaleout_messages: self.scaleout_messages + o.scaleout_messages,
        }
    }
}

/// The scale-out tier `out` as a collective sees it when a `share` of the bytes each GPU sends
/// over it leaves its rack through a spine oversubscribed `ratio:1`. A leaf's uplinks carry
/// `1/ratio` of its servers' NIC bandwidth (VMware Validated Design 4.0, "Oversubscription in
/// the Leaf Layer": oversubscription = servers' bandwidth / uplink bandwidth), so when every
/// GPU sends at once the rack-leaving share gets at most `1/ratio` of each NIC (Al-Fares,
/// Loukissas and Vahdat 2008, "A Scalable, Commodity Data Center Network Architecture",
/// section 2.2: at `r:1` some patterns get only `1/r` of host bandwidth). The NIC sends both
/// shares, so the collective's scale-out leg takes `max(1, share x ratio)` times as long:
/// bandwidth `bytes_per_s / max(1, share x ratio)`. A non-blocking spine (`ratio` 1) leaves
/// the tier as it is, bit for bit.
pub fn through_spine(out: Tier, share: f64, ratio: f64) -> Tier {
    Tier {
        bytes_per_s: out.bytes_per_s / (share * ratio).max(1.0),
        ..out
    }
}

/// Whether [`all_reduce_s`] takes the one-shot algorithm for `bytes` over `n` GPUs on `tier`.
fn one_shot_wins(n: f64, bytes: f64, tier: Tier, one_shot: bool) -> bool {
    one_shot
        && tier.alpha_s + (n - 1.0) * bytes / tier.bytes_per_s
            < 2.0 * (n - 1.0) * tier.alpha_s + 2.0 * (n - 1.0) / n * bytes / tier.bytes_per_s
}

/// What [`group_all_reduce_s`] sends per GPU: inside one domain, the ring's `2 (n-1)/n` of the
/// message in `2 (n-1)` steps or the one-shot's `n - 1` copies to its peers, whichever the
/// cost model takes; across domains, the ring reduce-scatter and all-gather inside the domain
/// and the ring all-reduce of the `1/domain` slice across domains.
pub fn group_all_reduce_traffic(
    n: u32,
    domain: u32,
    bytes: f64,
    up: Tier,
    one_shot: bool,
) -> Traffic {
    if n <= 1 {
        return Traffic::default();
    }
    if n <= domain {
        let n = f64::from(n);
        return if one_shot_wins(n, bytes, up, one_shot) {
            Traffic::scaleup((n - 1.0) * bytes, n - 1.0)
        } else {
            Traffic::scaleup(2.0 * (n - 1.0) / n * bytes, 2.0 * (n - 1.0))
        };
    }
    let d = f64::from(domain);
    let domains = f64::from(n / domain);
    Traffic::scaleup(2.0 * (d - 1.0) / d * bytes, 2.0 * (d - 1.0))
        + Traffic::scaleout(
            2.0 * (domains - 1.0) / domains * bytes / d,
            2.0 * (domains - 1.0),
        )
}

/// Seconds to all-reduce `bytes` (the message each GPU holds) across `n` GPUs on `tier`.
pub fn all_reduce_s(n: u32, bytes: f64, tier: Tier, one_shot: bool) -> f64 {
    if n <= 1 {
        return 0.0;
    }
    let n = f64::from(n);
    let ring = tier.launch_s
        + 2.0 * (n - 1.0) * tier.alpha_s
        + 2.0 * (n - 1.0) / n * bytes / tier.bytes_per_s;
    if one_shot {
        let single = tier.launch_s + tier.alpha_s + (n - 1.0) * bytes / tier.bytes_per_s;
        ring.min(single)
    } else {
        ring
    }
}

/// Seconds to all-reduce `bytes` across a tensor-parallel group of `n` GPUs whose scale-up
/// domains hold `domain` GPUs each. Inside one domain, [`all_reduce_s`] on `up`. A group of whole
/// domains (`n` a multiple of `domain`, as [`super::layout::place`] requires) all-reduces
/// hierarchically: a ring reduce-scatter inside each domain, a ring all-reduce of each GPU's
/// `1/domain` slice across the `n / domain` domains over its own NIC, and a ring all-gather inside
/// the domain, under one launch (Jia et al. 2018, "Highly Scalable Deep Learning Training System
/// with Mixed-Precision", arXiv:1807.11205, section 3.3; each phase costed as in Thakur et al.
/// 2005).
pub fn group_all_reduce_s(
    n: u32,
    domain: u32,
    bytes: f64,
    up: Tier,
    out: Tier,
    one_shot: bool,
) -> f64 {
    if n <= domain {
        return all_reduce_s(n, bytes, up, one_shot);
    }
    let d = f64::from(domain);
    let domains = f64::from(n / domain);
    up.launch_s
        + 2.0 * (d - 1.0) * up.alpha_s
        + 2.0 * (d - 1.0) / d * bytes / up.bytes_per_s
        + 2.0 * (domains - 1.0) * out.alpha_s
        + 2.0 * (domains - 1.0) / domains * bytes / d / out.bytes_per_s
}

/// Seconds for a ring reduce-scatter of `bytes` (the whole buffer) across `n` GPUs on `tier`:
/// the first half of the ring all-reduce, `n - 1` steps moving `(n-1)/n` of the buffer. A ring
/// all-gather of the same buffer costs the same (Thakur et al. 2005).
pub fn reduce_scatter_s(n: u32, bytes: f64, tier: Tier) -> f64 {
    if n <= 1 {
        return 0.0;
    }
    let n = f64::from(n);
    tier.launch_s + (n - 1.0) * tier.alpha_s + (n - 1.0) / n * bytes / tier.bytes_per_s
}

/// Seconds for an all-to-all in which each GPU sends `bytes` spread evenly over all `n` GPUs of
/// the group (itself included), so `(n-1)/n` of it leaves the GPU. Transfers to all peers
/// proceed at once (one alpha). When the group spans several scale-up domains of `domain` GPUs,
/// the share bound for other domains crosses the scale-out tier concurrently with the share that
/// stays inside the domain; the slower of the two sets the time.
pub fn all_to_all_s(n: u32, bytes: f64, domain: u32, up: Tier, out: Tier) -> f64 {
    if n <= 1 {
        return 0.0;
    }
    let n_f = f64::from(n);
    if n <= domain {
        return up.launch_s + up.alpha_s + (n_f - 1.0) / n_f * bytes / up.bytes_per_s;
    }
    let local = f64::from(domain);
    let inside = (local - 1.0) / n_f * bytes / up.bytes_per_s;
    let outside = (n_f - local) / n_f * bytes / out.bytes_per_s;
    out.launch_s + out.alpha_s + inside.max(outside)
}

/// Seconds to send `bytes` from one GPU to the next stage.
pub fn point_to_point_s(bytes: f64, tier: Tier) -> f64 {
    tier.launch_s + tier.alpha_s + bytes / tier.bytes_per_s
}

/// An MoE model's routing, as its expert all-to-all sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Routing {
    pub experts: u32,
    pub experts_per_token: u32,
    /// `(groups, groups_per_token)` of node-limited routing (DeepSeek-V3: 4 of 8).
    pub groups: Option<(u32, u32)>,
}

impl Routing {
    /// A catalog model's routing.
    pub fn of(model: &Model) -> Routing {
        Routing {
            experts: model.experts(),
            experts_per_token: model.experts_per_token(),
            groups: model.routing_groups(),
        }
    }

    /// Expected number of scale-up domains, other than the token's own, that a token's
    /// `experts_per_token` routed experts land in, when an expert-parallel group spreads the model's
    /// experts evenly over `domains` domains (consecutive experts on consecutive domains) and the
    /// token's domain is independent of its routing. With `P` the chance that a given domain is hit,
    /// the expectation is `(domains - 1) x P` (docs/model.md sections 7 and 23):
    /// - no routing limit, or groups that do not map onto domains: `k` of `E` experts uniformly,
    ///   `P = 1 - C(E - E/D, k) / C(E, k)`;
    /// - `M` of `G` groups per token, `c = G/D` whole groups per domain: every selected group holds
    ///   some of the token's experts (a group is chosen by the sum of its top-2 affinities,
    ///   DeepSeek-V3 `inference/model.py`, `Gate.forward`), so a domain is hit
    ///   when one of its groups is among the `M' = min(M, k)` reached: `P = 1 - C(G - c, M') / C(G, M')`;
    /// - `s = D/G` domains per group: a group is reached with chance `M'/G` and then holds `q = k/M'`
    ///   or `q + 1` experts (`k mod M'` of the `M'` groups hold one more), drawn from its `E/G`:
    ///   `P = M'/G x (1 - C(E/G - E/D, q_i) / C(E/G, q_i))`, averaged over the two counts.
    pub fn expected_remote_domains(&self, domains: f64) -> f64 {
        if domains <= 1.0 {
            return 0.0;
        }
        let e = f64::from(self.experts);
        let k = self.experts_per_token;
        let per_domain = e / domains;
        let whole = (domains.fract() == 0.0).then_some(domains as u32);
        let hit = match (self.groups, whole) {
            (Some((g, m)), Some(d)) if g.is_multiple_of(d) || d.is_multiple_of(g) => {
                let reached = m.min(k);
                if g.is_multiple_of(d) {
                    let c = g / d;
                    1.0 - binomial(g - c, reached) / binomial(g, reached)
                } else {
                    let per_group = e / f64::from(g);
                    let (q, extra) = (k / reached, k % reached);
                    let more = f64::from(extra) / f64::from(reached);
                    let miss = (1.0 - more) * all_miss(per_group, per_domain, q)
                        + more * all_miss(per_group, per_domain, q + 1);
                    f64::from(reached) / f64::from(g) * (1.0 - miss)
                }
            }
            _ => 1.0 - all_miss(e, per_domain, k),
        };
        (domains - 1.0) * hit
    }
}

/// The shape of one layout's expert all-to-all (a dispatch or a combine): an `ep` group of which
/// `local` GPUs share a scale-up domain, and for a model with a routing limit the expected remote
/// domains a token reaches. Depends on the layout only, so it is resolved once per placement.
///
/// A model without a routing limit sends one copy per routed expert ([`all_to_all_s`]). A
/// model with one (`expert_groups`) is dispatched as DeepEP does: across domains a token
/// crosses the scale-out network once per remote domain its experts land in
/// ([`Routing::expected_remote_domains`]) and is forwarded to the experts there over the
/// scale-up domain; the combine reduces inside each domain and sends one sum back (DeepSeek-V3
/// report sections 2.1.2 and 3.2.2; DeepEP's internode kernels, github.com/deepseek-ai/DeepEP).
/// Both tiers run at once; the slower sets the time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExpertExchange {
    ep: u32,
    local: u32,
    experts_per_token: u32,
    /// Remote domains per token, when the model's routing is limited and the group spans
    /// domains (the DeepEP path).
    remote_domains: Option<f64>,
}

impl ExpertExchange {
    pub fn new(routing: &Routing, ep: u32, local: u32) -> ExpertExchange {
        let remote_domains = (routing.groups.is_some() && ep > local)
            .then(|| routing.expected_remote_domains(f64::from(ep) / f64::from(local)));
        ExpertExchange {
            ep,
            local,
            experts_per_token: routing.experts_per_token,
            remote_domains,
        }
    }

    /// Seconds in which each GPU sends `tokens` tokens of `token_bytes` each to their routed
    /// experts; `tiers` are the group's own tier when it fits one domain, the scale-up and the
    /// scale-out tiers.
    pub fn time_s(&self, tokens: f64, token_bytes: f64, tiers: [Tier; 3]) -> f64 {
        let [group, up, out] = tiers;
        let copies = tokens * f64::from(self.experts_per_token) * token_bytes;
        let Some(remote_domains) = self.remote_domains else {
            return all_to_all_s(self.ep, copies, self.local, group, out);
        };
        let local = f64::from(self.local);
        let outside = tokens * remote_domains * token_bytes / out.bytes_per_s;
        // Every copy reaches its expert's GPU over the scale-up domain, from the token's own GPU
        // or from the one that received it, except the share already on that GPU.
        let inside = copies * (local - 1.0) / local / up.bytes_per_s;
        out.launch_s + out.alpha_s + inside.max(outside)
    }
}

impl ExpertExchange {
    /// What one GPU sends in [`ExpertExchange::time_s`]: without a routing limit, the share of
    /// its copies bound for the other GPUs of its domain on the scale-up tier (one message per
    /// peer) and the rest on the scale-out tier (one per remote peer); with one, a copy per
    /// remote domain a token reaches on the scale-out tier (one message per remote domain's
    /// peer GPU) and the forwarding inside the domain on the scale-up tier.
    pub fn traffic(&self, tokens: f64, token_bytes: f64) -> Traffic {
        let n = f64::from(self.ep);
        let local = f64::from(self.local.min(self.ep));
        if self.ep <= 1 {
            return Traffic::default();
        }
        let copies = tokens * f64::from(self.experts_per_token) * token_bytes;
        let Some(remote_domains) = self.remote_domains else {
            return Traffic::scaleup((local - 1.0) / n * copies, local - 1.0)
                + Traffic::scaleout((n - local) / n * copies, n - local);
        };
        Traffic::scaleup(copies * (local - 1.0) / local, local - 1.0)
            + Traffic::scaleout(tokens * remote_domains * token_bytes, n / local - 1.0)
    }
}

/// `C(pool - hit, k) / C(pool, k)`: the chance that `k` experts drawn without replacement from
/// `pool` all miss a given `hit` of them (`pool` and `hit` may be fractional; 0 when fewer than
/// `k` remain outside).
fn all_miss(pool: f64, hit: f64, k: u32) -> f64 {
    (0..k)
        .map(|i| {
            let i = f64::from(i);
            ((pool - hit - i) / (pool - i)).max(0.0)
        })
        .product()
}

/// `C(n, r)` as a float (0 when `r > n`).
fn binomial(n: u32, r: u32) -> f64 {
    if r > n {
        return 0.0;
    }
    (0..r).fold(1.0, |acc, i| acc * f64::from(n - i) / f64::from(i + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NVLINK: Tier = Tier {
        bytes_per_s: 400e9,
        alpha_s: 1e-6,
        launch_s: 5e-6,
    };
    const IB: Tier = Tier {
        bytes_per_s: 50e9,
        alpha_s: 5e-6,
        launch_s: 5e-6,
    };

    /// 1 GB over 8 GPUs at 400 GB/s: ring moves 2 x 7/8 GB per GPU = 4.375 ms, plus 14 alphas.
    #[test]
    fn ring_all_reduce_by_hand() {
        let t = all_reduce_s(8, 1e9, NVLINK, false);
        assert!((t - (5e-6 + 14e-6 + 1.75e9 / 400e9)).abs() < 1e-12, "{t}");
        // One-shot would read 7 GB: the ring wins for big messages.
        assert_eq!(all_reduce_s(8, 1e9, NVLINK, true), t);
    }

    /// Reduce-scatter is the ring all-reduce's first half: 1 GB over 8 GPUs moves 7/8 GB.
    #[test]
    fn reduce_scatter_is_half_a_ring() {
        let t = reduce_scatter_s(8, 1e9, NVLINK);
        assert!((t - (5e-6 + 7e-6 + 0.875e9 / 400e9)).abs() < 1e-12, "{t}");
        assert_eq!(reduce_scatter_s(1, 1e9, NVLINK), 0.0);
    }

    /// A decode-sized message (8 tokens x 8192 x 2 B = 128 KiB) takes the one-shot path.
    #[test]
    fn small_all_reduce_is_one_shot() {
        let bytes = 8.0 * 8192.0 * 2.0;
        let t = all_reduce_s(8, bytes, NVLINK, true);
        assert!((t - (5e-6 + 1e-6 + 7.0 * bytes / 400e9)).abs() < 1e-12);
        assert!(t < all_reduce_s(8, bytes, NVLINK, false));
        assert_eq!(all_reduce_s(1, bytes, NVLINK, true), 0.0);
    }

    /// 1 MB over 16 GPUs in two domains of 8: reduce-scatter and all-gather inside the domain
    /// move 2 x 7/8 MB at 400 GB/s (4.375 us) in 14 alpha steps, the slices of 1/8 MB cross
    /// InfiniBand in a two-member ring, 2 x 1/2 x 125 kB at 50 GB/s (2.5 us) in 2 alpha steps;
    /// one launch. Inside one domain it is the plain all-reduce.
    #[test]
    fn all_reduce_across_domains_is_hierarchical() {
        let t = group_all_reduce_s(16, 8, 1e6, NVLINK, IB, true);
        let by_hand = 5e-6 + 14.0 * 1e-6 + 1.75e6 / 400e9 + 2.0 * 5e-6 + 1.25e5 / 50e9;
        assert!((t - by_hand).abs() < 1e-15, "{t} vs {by_hand}");
        assert_eq!(
            group_all_reduce_s(8, 8, 1e6, NVLINK, IB, true),
            all_reduce_s(8, 1e6, NVLINK, true)
        );
        // Four domains: 6 alpha steps and 2 x 3/4 of the slice on InfiniBand.
        let t4 = group_all_reduce_s(32, 8, 1e6, NVLINK, IB, true);
        let by_hand = 5e-6 + 14.0 * 1e-6 + 1.75e6 / 400e9 + 6.0 * 5e-6 + 1.5 * 1.25e5 / 50e9;
        assert!((t4 - by_hand).abs() < 1e-15, "{t4} vs {by_hand}");
    }

    #[test]
    fn all_to_all_inside_and_across_domains() {
        let t = all_to_all_s(8, 8e6, 8, NVLINK, IB);
        assert!((t - (6e-6 + 7e6 / 400e9)).abs() < 1e-12);
        // 16 GPUs over two domains of 8: half the data crosses InfiniBand.
        let t = all_to_all_s(16, 16e6, 8, NVLINK, IB);
        assert!((t - (10e-6 + 8e6 / 50e9)).abs() < 1e-12, "{t}");
    }
}
