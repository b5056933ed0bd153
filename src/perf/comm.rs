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

use super::layout::Tier;

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

    #[test]
    fn all_to_all_inside_and_across_domains() {
        let t = all_to_all_s(8, 8e6, 8, NVLINK, IB);
        assert!((t - (6e-6 + 7e6 / 400e9)).abs() < 1e-12);
        // 16 GPUs over two domains of 8: half the data crosses InfiniBand.
        let t = all_to_all_s(16, 16e6, 8, NVLINK, IB);
        assert!((t - (10e-6 + 8e6 / 50e9)).abs() < 1e-12, "{t}");
    }
}
