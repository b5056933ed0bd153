//! A closed population of users on one instance: each user alternates a think time and a request,
//! so the load an instance carries depends on how fast it answers. The stationary occupancy of
//! that finite-source queue, the throughput it settles at, and the wait for a slot. Formulas:
//! docs/model.md, "Demand" and "Sizing and queueing".
//!
//! - **The chain.** `N` users are pinned to the instance (a router spreads users evenly and keeps
//!   a conversation on its instance, as prefix-cache-aware routers do). A thinking user issues
//!   its next request after an exponential think time of mean `Z`; with `n` requests in the
//!   instance, `k = min(n, B)` decode and each completes at rate `1 / (osl TPOT(k))` (the
//!   batch's processor sharing of the open chain in [`super::serving`]), the rest wait first
//!   come, first served. The number of requests held is a birth-death chain with birth rate
//!   `(N - n) / Z` and death rate `mu(n) = k / (osl TPOT(k))`: the machine-repairman model with
//!   load-dependent service (Kleinrock 1975, "Queueing Systems", vol. 1, section 3.8, finite
//!   customer population; Lazowska et al. 1984, "Quantitative System Performance", chapters 6-8:
//!   a delay centre and one load-dependent centre, whose exact mean-value analysis this chain
//!   solves). Its throughput `X = E[N - n] / Z` is the fixed point `X = N / (R(X) + Z)`
//!   (Little's law over the cycle), solved exactly rather than iterated.
//! - **Fractional populations.** `U` users over `D` instances put `U / D` on each: a share `f`
//!   of instances holds `ceil(U / D)` users and the rest one fewer, with `f` chosen so the mean is
//!   `U / D`. Both chains come from one recurrence: the chain of `N - 1` users has the weights of
//!   the chain of `N` times `(N - n) / N` (the product of the birth rates telescopes).
//! - **No think time.** With `Z = 0` every user always holds a request: an instance holds exactly
//!   its users, `min(N, B)` of them decode and the rest wait. A think time below `f64::EPSILON` of
//!   the fastest service (`OSL x TPOT(1)`) is that case too: the share of time a user spends
//!   thinking, `Z / (R + Z)`, is below what a double resolves, and the chain's birth rates
//!   (`OSL / Z`) would overflow.
//! - **Arrivals** see the chain of one user fewer (the arrival theorem; Lavenberg and Reiser 1980,
//!   "Stationary state probabilities at arrival instants for closed queueing networks", J. Appl.
//!   Prob. 17): an arrival that finds `n >= B` others waits for `n - B + 1` departures at the full
//!   batch's rate `mu(B)`, an Erlang time; the wait of those who wait is summarized by its mean
//!   and squared coefficient of variation.
//! - **Bounded work.** The ratio of consecutive weights falls as `n` grows, so the chain has one
//!   mode, found by bisection; the sum starts where the weight, walking down from the mode,
//!   falls below 1e-16 of it, and stops where it does so above the mode. Beyond the batch the
//!   users outside the instance are Poisson with mean `Z mu(B)`, truncated at `N - B` (the
//!   ratio there is `(N - n + 1) / (Z mu(B))`), so a population far beyond the slots costs
//!   `O(sqrt(Z mu(B)))` terms whatever `N`. The percentiles resume the recurrence from
//!   checkpoints of the first pass.

use super::serving::{Occupancy, PERCENTILES, Ratios, Speeds};

/// A term this far below the peak, on either side of it, is not summed: the chain's terms fall
/// faster than geometrically away from the mode, so what is left out is a few such terms, and
/// with the sums' polynomial weights (each a ratio of moments of one distribution) it moves no
/// result by more than about 1e-12 relative.
const NEGLIGIBLE: f64 = 1e-16;

/// Users one instance is ever asked to hold at most: the states are counted in `f64`, exact
/// to 2^53; more users than people on Earth per instance is no steady state worth computing.
pub const MAX_USERS: f64 = 1e12;

/// The stationary occupancy of an instance holding `users` users (fractional: a mean over
/// instances) who think `think_s` on average between requests. `None` for no users, or more than
/// [`MAX_USERS`].
pub fn occupancy(speeds: &Speeds, users: f64, think_s: f64) -> Option<Occupancy> {
    if !(users > 0.0 && users <= MAX_USERS && think_s >= 0.0 && think_s.is_finite()) {
        return None;
    }
    if think_s <= f64::EPSILON * speeds.output_tokens * speeds.tpot_s(1.0) {
        return Some(without_think(speeds, users));
    }
    let chain = Chain::new(speeds, users, think_s);
    let mut sums = Sums::new();
    chain.sum(&mut sums);
    Some(chain.occupancy(&sums))
}

/// Requests per second a full batch completes, `mu(B)`.
fn full_rate(speeds: &Speeds) -> f64 {
    speeds.max_batch / (speeds.output_tokens * speeds.tpot_s(speeds.max_batch))
}

/// Requests per second completed with `n` requests in the instance, `mu(min(n, B))`.
fn rate_at(speeds: &Speeds, n: f64) -> f64 {
    let k = n.min(speeds.max_batch);
    if k > 0.0 {
        k / (speeds.output_tokens * speeds.tpot_s(k))
    } else {
        0.0
    }
}

/// The two populations a fractional mean splits into: `(users, share of instances)`, the larger
/// first (its share is `users - floor`, 1 for a whole number).
fn populations(users: f64) -> [(f64, f64); 2] {
    let high = users.ceil();
    let share = users - (high - 1.0);
    [(high, share), (high - 1.0, 1.0 - share)]
}

/// Every user always holds a request: an instance of `N` users runs `min(N, B)` and queues the
/// rest, deterministically.
fn without_think(speeds: &Speeds, users: f64) -> Occupancy {
    let b = speeds.max_batch;
    let mu_b = full_rate(speeds);
    let pops = populations(users);
    let rate: f64 = pops.iter().map(|&(n, w)| w * rate_at(speeds, n)).sum();
    let mean_running: f64 = pops.iter().map(|&(n, w)| w * n.min(b)).sum();
    // Running sequences: the smaller population's below its share, else the larger one's.
    let [(high, share), (low, _)] = pops;
    let running = PERCENTILES.map(|p| {
        let n = if p <= 1.0 - share { low } else { high };
        n.min(b).max(1.0)
    });
    // An arrival into an instance of `n` users finds `n - 1` others and waits for `n - B`
    // departures when `n > B`; arrivals come in proportion to each population's throughput.
    let (mut waiting, mut k1, mut k2) = (0.0, 0.0, 0.0);
    for &(n, w) in &pops {
        if n > b {
            let mass = w * rate_at(speeds, n);
            let k = n - b;
            waiting += mass;
            k1 += mass * k;
            k2 += mass * k * (k + 1.0);
        }
    }
    wait_summary(
        Occupancy {
            rate_per_s: rate,
            mean_held: users,
            mean_running,
            running,
            wait_probability: 0.0,
            wait_mean_s: 0.0,
            wait_cv2: 1.0,
        },
        rate,
        [waiting, k1, k2],
        mu_b,
    )
}

/// Sets the wait of `occ` from the arrival mass that waits, and its first two factorial-like
/// moments of departures waited for: `[mass, sum of mass k, sum of mass k (k + 1)]`. The wait of
/// one arrival is Erlang(`k`, `mu_b`): mean `k / mu_b`, second moment `k (k + 1) / mu_b^2`.
fn wait_summary(mut occ: Occupancy, rate: f64, [mass, k1, k2]: [f64; 3], mu_b: f64) -> Occupancy {
    if mass > 0.0 && rate > 0.0 {
        let mean_k = k1 / mass;
        occ.wait_probability = (mass / rate).min(1.0);
        occ.wait_mean_s = mean_k / mu_b;
        occ.wait_cv2 = (k2 / mass / (mean_k * mean_k) - 1.0).max(0.0);
    }
    occ
}

/// Checkpoints of the first pass on each side of the mode, from which the percentiles resume.
const CHECKPOINTS: usize = 64;

/// States between checkpoints.
const STRIDE: u32 = 8;

/// The chain of the larger population.
struct Chain<'a> {
    speeds: &'a Speeds,
    /// The larger population and the share of instances holding it.
    users: f64,
    share: f64,
    think_s: f64,
    batch: f64,
    /// `osl / Z`, and `1 / (Z mu(B))`: the ratio's factors below and beyond the batch.
    load: f64,
    beyond: f64,
}

/// A checkpoint: a state, its weight, and the sums of `w` and `w m` from the lowest state summed
/// up to and including it.
#[derive(Debug, Clone, Copy, Default)]
struct Mark {
    n: f64,
    w: f64,
    cw: f64,
    cwm: f64,
}

/// Sums over the chain's states of the weight `w(n)` (relative to the mode's, 1) times powers of
/// `n`, of `m = N - n` (the users outside) and of `k = n - B + 1` (departures an arrival finding
/// `n` waits for), and the first pass's checkpoints.
#[derive(Debug)]
struct Sums {
    /// Larger population: `w`, `w n`, `w min(n, B)`.
    w: f64,
    wn: f64,
    wr: f64,
    /// Smaller population (weights `w m`): `w m`, `w m n`, `w m min(n, B)`; its arrivals see
    /// `w m (m - 1)`.
    wm: f64,
    wmn: f64,
    wmr: f64,
    wmm: f64,
    /// Arrivals that wait, `n >= B`: of the larger population (weights `w m`) and of the smaller
    /// (`w m (m - 1)`), each times `1`, `k`, `k (k + 1)`.
    wait_high: [f64; 3],
    wait_low: [f64; 3],
    /// Checkpoints below the mode (in descending order, partial sums from the mode down) and
    /// from it up (ascending, partial sums from the mode up).
    down: [Mark; CHECKPOINTS],
    downs: usize,
    up: [Mark; CHECKPOINTS],
    ups: usize,
    /// Sums of `w` and `w m` over the states from the mode down.
    below_w: f64,
    below_wm: f64,
}

impl Sums {
    fn new() -> Sums {
        Sums {
            w: 0.0,
            wn: 0.0,
            wr: 0.0,
            wm: 0.0,
            wmn: 0.0,
            wmr: 0.0,
            wmm: 0.0,
            wait_high: [0.0; 3],
            wait_low: [0.0; 3],
            down: [Mark::default(); CHECKPOINTS],
            downs: 0,
            up: [Mark::default(); CHECKPOINTS],
            ups: 0,
            below_w: 0.0,
            below_wm: 0.0,
        }
    }

    /// Adds state `n` of weight `w` for a chain of `users` on `batch` slots.
    #[inline]
    fn add(&mut self, n: f64, w: f64, users: f64, batch: f64) {
        let m = users - n;
        let wm = w * m;
        let wmm = wm * (m - 1.0);
        let running = n.min(batch);
        self.w += w;
        self.wn += w * n;
        self.wr += w * running;
        self.wm += wm;
        self.wmn += wm * n;
        self.wmr += wm * running;
        self.wmm += wmm;
        if n >= batch {
            let k = n - batch + 1.0;
            let kk = k * (k + 1.0);
            self.wait_high[0] += wm;
            self.wait_high[1] += wm * k;
            self.wait_high[2] += wm * kk;
            self.wait_low[0] += wmm;
            self.wait_low[1] += wmm * k;
            self.wait_low[2] += wmm * kk;
        }
    }

    /// The checkpoints in ascending order of state, with partial sums from the lowest state
    /// summed, for a chain of `users`.
    fn marks(&self, users: f64) -> impl Iterator<Item = Mark> + '_ {
        let (bw, bwm) = (self.below_w, self.below_wm);
        // A checkpoint below the mode holds the sums from the mode down to it, itself included.
        let down = self.down[..self.downs].iter().rev().map(move |d| Mark {
            cw: bw - d.cw + d.w,
            cwm: bwm - d.cwm + d.w * (users - d.n),
            ..*d
        });
        down.chain(self.up[..self.ups].iter().map(move |u| Mark {
            cw: bw + u.cw,
            cwm: bwm + u.cwm,
            ..*u
        }))
    }
}

impl<'a> Chain<'a> {
    fn new(speeds: &'a Speeds, users: f64, think_s: f64) -> Chain<'a> {
        let [(high, share), _] = populations(users);
        Chain {
            speeds,
            users: high,
            share,
            think_s,
            batch: speeds.max_batch,
            load: speeds.output_tokens / think_s,
            beyond: 1.0 / (think_s * full_rate(speeds)),
        }
    }

    /// `w(n) / w(n - 1)`: the birth rate of `n - 1` over the death rate of `n`.
    fn ratio(&self, n: f64, ratios: &mut Ratios) -> f64 {
        let ahead = self.users - n + 1.0;
        if n < self.batch {
            ahead * ratios.at(n)
        } else {
            ahead * self.beyond
        }
    }

    /// The chain's mode: the last state whose weight is not below its predecessor's (the ratio
    /// falls as `n` grows), found by bisection.
    fn mode(&self, ratios: &mut Ratios) -> f64 {
        if self.ratio(1.0, ratios) < 1.0 {
            return 0.0;
        }
        let (mut lo, mut hi) = (1.0_f64, self.users); // ratio(lo) >= 1
        if self.ratio(hi, ratios) >= 1.0 {
            return hi;
        }
        while hi - lo > 1.0 {
            let mid = (0.5 * (lo + hi)).floor();
            if self.ratio(mid, ratios) >= 1.0 {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The first pass: every sum the occupancy needs, over the states whose weight is at least
    /// [`NEGLIGIBLE`] of the mode's, walked from the mode down and then up. Weights are relative
    /// to the mode's, so none exceeds 1: no rescaling. Below the batch every request decodes;
    /// from the batch on the rest wait and the batch completes at its full rate.
    fn sum(&self, s: &mut Sums) {
        let (users, batch) = (self.users, self.batch);
        let mut ratios = Ratios::new(self.speeds, self.load);
        let mode = self.mode(&mut ratios);
        // Down from the mode: w(n - 1) = w(n) / r(n).
        let (mut n, mut w) = (mode, 1.0_f64);
        let mut to_mark = 0;
        loop {
            s.add(n, w, users, batch);
            s.below_w += w;
            s.below_wm += w * (users - n);
            if to_mark == 0 && s.downs < CHECKPOINTS {
                s.down[s.downs] = Mark {
                    n,
                    w,
                    cw: s.below_w,
                    cwm: s.below_wm,
                };
                s.downs += 1;
                to_mark = STRIDE;
            }
            // Stays 0 once every checkpoint is taken.
            to_mark = to_mark.saturating_sub(1);
            if n <= 0.0 {
                break;
            }
            let below = w / self.ratio(n, &mut ratios);
            if below < NEGLIGIBLE {
                break;
            }
            (n, w) = (n - 1.0, below);
        }
        // The lowest state summed is always a checkpoint: the percentiles start there.
        let lowest = Mark {
            n,
            w,
            cw: s.below_w,
            cwm: s.below_wm,
        };
        if s.down[s.downs - 1].n != n {
            let at = s.downs.min(CHECKPOINTS - 1);
            s.down[at] = lowest;
            s.downs = at + 1;
        }
        // Up from the mode: w(n) = w(n - 1) r(n).
        let (mut n, mut w, mut peak) = (mode, 1.0_f64, 1.0_f64);
        let (mut cw, mut cwm) = (0.0_f64, 0.0_f64);
        let mut to_mark = STRIDE;
        while n < users {
            n += 1.0;
            let r = self.ratio(n, &mut ratios);
            w *= r;
            peak = peak.max(w);
            if r < 1.0 && w < NEGLIGIBLE * peak {
                break;
            }
            s.add(n, w, users, batch);
            cw += w;
            cwm += w * (users - n);
            // Stays 0 once every checkpoint is taken.
            to_mark = to_mark.saturating_sub(1);
            if to_mark == 0 && s.ups < CHECKPOINTS {
                s.up[s.ups] = Mark { n, w, cw, cwm };
                s.ups += 1;
                to_mark = STRIDE;
            }
        }
    }

    fn occupancy(&self, s: &Sums) -> Occupancy {
        let z = self.think_s;
        let (high, low) = (self.share, 1.0 - self.share);
        // Each population's mean of `x`, weighted by its share of instances.
        let mix = |of_high: f64, of_low: f64| {
            high * of_high / s.w + if low > 0.0 { low * of_low / s.wm } else { 0.0 }
        };
        let rate = mix(s.wm / z, s.wmm / z);
        let wait = |i: usize| mix(s.wait_high[i] / z, s.wait_low[i] / z);
        let occ = Occupancy {
            rate_per_s: rate,
            mean_held: mix(s.wn, s.wmn),
            mean_running: mix(s.wr, s.wmr),
            running: self.running_percentiles(s),
            wait_probability: 0.0,
            wait_mean_s: 0.0,
            wait_cv2: 1.0,
        };
        wait_summary(
            occ,
            rate,
            [wait(0), wait(1), wait(2)],
            full_rate(self.speeds),
        )
    }

    /// The running sequences at [`PERCENTILES`] over both populations: for each, the first
    /// state whose cumulative share reaches it, resuming the first pass's recurrence from the
    /// last checkpoint below it; the batch when no state below the batch reaches it.
    fn running_percentiles(&self, s: &Sums) -> [f64; 3] {
        let (users, batch) = (self.users, self.batch);
        let (high, low) = (self.share, 1.0 - self.share);
        let (a, b) = (high / s.w, if low > 0.0 { low / s.wm } else { 0.0 });
        let cdf = |m: &Mark| a * m.cw + b * m.cwm;
        PERCENTILES.map(|p| {
            // The last checkpoint below the percentile (checkpoints ascend).
            let mut from = None;
            for m in s.marks(users) {
                if cdf(&m) >= p {
                    if from.is_none() {
                        return m.n.min(batch).max(1.0);
                    }
                    break;
                }
                from = Some(m);
            }
            let Some(Mark {
                mut n,
                mut w,
                mut cw,
                mut cwm,
            }) = from
            else {
                return batch;
            };
            let mut ratios = Ratios::new(self.speeds, self.load);
            while n + 1.0 < batch && n < users {
                n += 1.0;
                w *= self.ratio(n, &mut ratios);
                cw += w;
                cwm += w * (users - n);
                if a * cw + b * cwm >= p {
                    return n.max(1.0);
                }
            }
            batch
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::serving::{self, P99};

    fn tabulate(max_batch: f64, output_tokens: f64, tpot: impl Fn(f64) -> f64) -> Speeds {
        Speeds::tabulate_for_tests(max_batch, output_tokens, |n| (tpot(n), tpot(n)))
    }

    /// The chain of `users` (a whole number) summed directly in the log domain over every state.
    fn brute_force_whole(speeds: &Speeds, users: u64, z: f64) -> Vec<f64> {
        let b = speeds.max_batch;
        let mut log_w = vec![0.0_f64];
        for n in 1..=users {
            let birth = (users - n + 1) as f64 / z;
            let death = rate_at(speeds, (n as f64).min(b));
            log_w.push(log_w[n as usize - 1] + (birth / death).ln());
        }
        let peak = log_w.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let w: Vec<f64> = log_w.iter().map(|l| (l - peak).exp()).collect();
        let total: f64 = w.iter().sum();
        w.iter().map(|x| x / total).collect()
    }

    /// The occupancy of a fractional population by brute force: the mixture of the two whole
    /// populations, arrivals weighted by throughput and seeing the chain's states.
    fn brute_force(speeds: &Speeds, users: f64, z: f64) -> Occupancy {
        let b = speeds.max_batch;
        let mu_b = full_rate(speeds);
        let pops = populations(users);
        let (mut rate, mut held, mut running) = (0.0, 0.0, 0.0);
        let mut cdf = vec![0.0; b as usize + 1];
        let (mut mass, mut k1, mut k2) = (0.0, 0.0, 0.0);
        for (n_users, share) in pops {
            if share == 0.0 {
                continue;
            }
            let p = brute_force_whole(speeds, n_users as u64, z);
            for (n, pn) in p.iter().enumerate() {
                let n = n as f64;
                let arrivals = share * pn * (n_users - n) / z;
                rate += arrivals;
                held += share * pn * n;
                running += share * pn * n.min(b);
                cdf[n.min(b) as usize] += share * pn;
                if n >= b {
                    let k = n - b + 1.0;
                    mass += arrivals;
                    k1 += arrivals * k;
                    k2 += arrivals * k * (k + 1.0);
                }
            }
        }
        let quantile = |p: f64| {
            let mut c = 0.0;
            for (n, x) in cdf.iter().enumerate() {
                c += x;
                if c >= p {
                    return (n as f64).max(1.0);
                }
            }
            b
        };
        wait_summary(
            Occupancy {
                rate_per_s: rate,
                mean_held: held,
                mean_running: running,
                running: PERCENTILES.map(quantile),
                wait_probability: 0.0,
                wait_mean_s: 0.0,
                wait_cv2: 1.0,
            },
            rate,
            [mass, k1, k2],
            mu_b,
        )
    }

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1e-12)
    }

    proptest::proptest! {
        /// Over populations from a fraction of a user to five times the batch, think times from
        /// a millisecond to minutes and steps from flat to steep, the chain matches the mixture
        /// of whole populations summed directly.
        #[test]
        fn occupancy_matches_the_directly_summed_chain(
            batch in 1u32..300,
            users in 0.3f64..1500.0,
            z in 0.001f64..120.0,
            t1 in 0.005f64..0.05,
            growth in 0.0f64..20.0,
        ) {
            let speeds = tabulate(f64::from(batch), 200.0, |n| t1 * (1.0 + growth * (n - 1.0) / 300.0));
            let got = occupancy(&speeds, users, z).unwrap();
            let want = brute_force(&speeds, users, z);
            proptest::prop_assert!(close(got.rate_per_s, want.rate_per_s, 1e-9), "{got:?} vs {want:?}");
            proptest::prop_assert!(close(got.mean_held, want.mean_held, 1e-9), "{got:?} vs {want:?}");
            proptest::prop_assert!(close(got.mean_running, want.mean_running, 1e-9), "{got:?} vs {want:?}");
            // Tail probabilities carry the cutoff's error absolutely (terms below 1e-16 of the
            // mode are left out).
            proptest::prop_assert!((got.wait_probability - want.wait_probability).abs() <= 1e-9 * want.wait_probability + 1e-14, "{got:?} vs {want:?}");
            if want.wait_probability > 1e-6 {
                proptest::prop_assert!(close(got.wait_mean_s, want.wait_mean_s, 1e-7), "{got:?} vs {want:?}");
                proptest::prop_assert!((got.wait_cv2 - want.wait_cv2).abs() < 1e-6, "{got:?} vs {want:?}");
            }
            proptest::prop_assert_eq!(got.running, want.running);
            // Conservation of users: those held plus those thinking (Little's law over the think
            // stage, X Z) are the population.
            proptest::prop_assert!(close(got.mean_held + got.rate_per_s * z, users, 1e-9), "{got:?}");
        }
    }

    /// With no think time an instance holds exactly its users: 312.5 users over instances are
    /// 312 on half of them and 313 on the other half; all run below a batch of 512, at the step
    /// of that occupancy.
    #[test]
    fn without_think_time_every_user_holds_a_request() {
        let speeds = tabulate(512.0, 500.0, |n| 0.02 + 1e-4 * n);
        let occ = occupancy(&speeds, 312.5, 0.0).unwrap();
        assert_eq!(occ.mean_held, 312.5);
        assert!((occ.mean_running - 312.5).abs() < 1e-12);
        assert_eq!(occ.wait_probability, 0.0);
        let rate = |n: f64| n / (500.0 * (0.02 + 1e-4 * n));
        assert!((occ.rate_per_s - 0.5 * (rate(312.0) + rate(313.0))).abs() < 1e-9);
        assert_eq!(occ.running, [312.0, 313.0, 313.0]);
        // Beyond the batch the rest wait: 600 users on 512 slots wait for 88 departures each.
        let full = occupancy(&speeds, 600.0, 0.0).unwrap();
        assert_eq!((full.mean_held, full.mean_running), (600.0, 512.0));
        assert_eq!(full.wait_probability, 1.0);
        assert!((full.wait_mean_s - 88.0 / rate(512.0)).abs() < 1e-9);
        // An Erlang(88) wait: squared coefficient of variation 1/88.
        assert!((full.wait_cv2 - 1.0 / 88.0).abs() < 1e-12);
    }

    /// A vanishing think time approaches the case without one, from the chain.
    #[test]
    fn short_think_times_approach_no_think_time() {
        let speeds = tabulate(64.0, 100.0, |n| 0.01 + 1e-4 * n);
        for users in [10.0, 40.5, 64.0, 200.0] {
            let none = occupancy(&speeds, users, 0.0).unwrap();
            let tiny = occupancy(&speeds, users, 1e-9).unwrap();
            assert!(
                close(tiny.mean_held, none.mean_held, 1e-6),
                "{users}: {tiny:?} {none:?}"
            );
            assert!(
                close(tiny.rate_per_s, none.rate_per_s, 1e-6),
                "{users}: {tiny:?} {none:?}"
            );
            assert_eq!(tiny.running, none.running, "{users}");
            // Think times a double cannot tell from none are none (the chain would overflow:
            // found by the sweep fuzzer with think_s = 1e-300).
            for z in [1e-300, f64::MIN_POSITIVE, 1e-17] {
                assert_eq!(occupancy(&speeds, users, z), Some(none), "{users} {z}");
            }
        }
    }

    /// A constant step and a batch above the population: every request decodes at once, so
    /// requests are independent (M/M/infinity with a finite source): each user is in the
    /// instance a share `S / (S + Z)` of the time, binomially. 100 users, S = 100 x 0.02 = 2 s,
    /// Z = 8 s: 20 held on average, throughput 100 / 10 s = 10 requests/s.
    #[test]
    fn independent_requests_are_binomial() {
        let speeds = tabulate(1000.0, 100.0, |_| 0.02);
        let occ = occupancy(&speeds, 100.0, 8.0).unwrap();
        assert!((occ.mean_held - 20.0).abs() < 1e-9, "{occ:?}");
        assert!((occ.rate_per_s - 10.0).abs() < 1e-9, "{occ:?}");
        // The p99 of Binomial(100, 0.2) is 30 (P(X <= 29) = 0.9888, P(X <= 30) = 0.9939).
        assert_eq!(occ.running[P99], 30.0);
    }

    /// Against a discrete-event simulation of users pinned to instances, thinking exponentially
    /// and decoding in a batch whose step grows with its size, waiting first come, first served
    /// beyond the batch: mean occupancy and throughput agree within the simulation's noise.
    #[test]
    fn agrees_with_a_simulation() {
        let (batch, osl) = (16.0, 50.0);
        let tpot = |k: f64| 0.01 + 0.002 * k;
        let speeds = tabulate(batch, osl, tpot);
        for (users, z) in [(12.0, 2.0), (30.0, 5.0), (40.0, 1.0)] {
            let occ = occupancy(&speeds, users, z).unwrap();
            let (held, rate) = simulate(users as usize, z, batch as usize, osl, tpot, 400_000);
            assert!(
                close(occ.mean_held, held, 0.03),
                "{users} {z}: {occ:?} vs {held}"
            );
            assert!(
                close(occ.rate_per_s, rate, 0.03),
                "{users} {z}: {occ:?} vs {rate}"
            );
        }
    }

    /// Event-driven simulation: returns the time-average number of requests held and the
    /// throughput. Exponential think times, and with `k` running each completes at rate
    /// `1 / (osl tpot(k))` (processor sharing, memoryless).
    fn simulate(
        users: usize,
        z: f64,
        batch: usize,
        osl: f64,
        tpot: impl Fn(f64) -> f64,
        events: usize,
    ) -> (f64, f64) {
        let mut seed = 0x9E37_79B9_7F4A_7C15_u64;
        let mut uniform = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            ((seed >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        };
        let (mut held, mut t, mut area, mut done) = (0usize, 0.0_f64, 0.0_f64, 0usize);
        for _ in 0..events {
            let k = held.min(batch) as f64;
            let births = (users - held) as f64 / z;
            let deaths = if k > 0.0 { k / (osl * tpot(k)) } else { 0.0 };
            let total = births + deaths;
            let dt = -uniform().ln() / total;
            area += held as f64 * dt;
            t += dt;
            if uniform() * total < births {
                held += 1;
            } else {
                held -= 1;
                done += 1;
            }
        }
        (area / t, done as f64 / t)
    }

    /// Throughput matches the open chain's rate when the open chain is asked for it: a
    /// population that is mostly thinking behaves like Poisson arrivals at its rate.
    #[test]
    fn large_think_times_look_like_poisson_arrivals() {
        let speeds = tabulate(128.0, 200.0, |n| 0.015 + 2e-4 * n);
        let occ = occupancy(&speeds, 20_000.0, 3_000.0).unwrap();
        let open = serving::occupancy(&speeds, occ.rate_per_s).unwrap();
        assert!(
            close(occ.mean_held, open.mean_held, 0.01),
            "{occ:?} {open:?}"
        );
        assert!((occ.running[P99] - open.running[P99]).abs() <= 1.0);
    }

    /// A population far beyond the slots is summed from near its peak: a billion users on one
    /// instance take a few hundred terms, and the instance runs its full batch.
    #[test]
    fn huge_populations_are_bounded_work() {
        let speeds = tabulate(256.0, 500.0, |n| 0.02 + 1e-4 * n);
        let occ = occupancy(&speeds, 1e9, 30.0).unwrap();
        let mu_b = full_rate(&speeds);
        assert!(close(occ.rate_per_s, mu_b, 1e-12), "{occ:?}");
        assert_eq!(occ.running, [256.0; 3]);
        // The users outside are Poisson with mean Z mu(B).
        assert!(close(occ.mean_held, 1e9 - 30.0 * mu_b, 1e-12), "{occ:?}");
        assert_eq!(occ.wait_probability, 1.0);
        assert!(occupancy(&speeds, 0.0, 30.0).is_none());
        assert!(occupancy(&speeds, f64::INFINITY, 30.0).is_none());
        assert!(occupancy(&speeds, 1e300, 30.0).is_none());
        assert!(occupancy(&speeds, MAX_USERS, 0.0).is_some());
    }
}
