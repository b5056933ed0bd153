//! Stage step times shared between the grid points of one sweep that run the same instance.
//!
//! A step's time on the slower bounding stage ([`super::latency::slowest_stage`]) is a pure
//! function of the model, the layout, the stages, the hardware rates and the step's tokens. The
//! first four are fixed by the sweep's context, the point's platform, engine and formats, and
//! the layout; the layout depends on the cluster's size only through its GPU and instance counts
//! (which no step time reads) and the pipeline hops that cross domains. So points that differ
//! only in racks (an axis outside tp, pp, ep and batch) time the same steps: bench-10m runs each
//! placement's steps at 74 rack counts. Each worker thread keeps the steps it has timed, keyed
//! by the instance and the step's tokens bit for bit, and returns the stored time for a step
//! seen before: the same numbers, computed once.
//!
//! An instance is named by an [`InstanceId`]: its sweep's [`Scope`] (one per design space, which
//! holds its context immutably while it exists), its point without racks, batch and ownership,
//! and its layout without GPU and instance counts, interned per thread into a number no other
//! instance is given. The tables have a fixed size, allocated once per thread (about 5 MB); a
//! step pushed out is timed again if asked for.
//!
//! The same holds one level up for a full aggregated instance without demand (what a fixed-racks
//! sweep reports): its steady state ([`super::steady::full_instance`]) per instance is a pure
//! function of the instance, its batch and its phase's lengths, and the pool's size only scales
//! its request rate. So each worker keeps those too ([`full_steady`]), keyed by instance, batch
//! and lengths bit for bit: in bench-10m they were 59 % of the evaluation's time, computed 74
//! times over.

use std::cell::RefCell;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::grid::Point;

use super::compute::StepTokens;
use super::latency::StageTime;
use super::layout::Layout;
use super::steady::Steady;

/// One sweep's evaluation: a number no other scope in the process has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scope(u64);

impl Scope {
    pub fn new() -> Scope {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Scope(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

impl Default for Scope {
    fn default() -> Scope {
        Scope::new()
    }
}

/// An instance's name in the step tables: never 0, and never given to another instance in the
/// process (a table may see an instance interned on another thread, and finds no step of it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InstanceId(u64);

/// What fixes an instance's step times besides its tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct InstanceKey {
    scope: u64,
    point: Point,
    layout: Layout,
}

/// Sets of interned instances per thread: bench-10m visits a few hundred placements between
/// two rack counts.
const INSTANCE_SETS: usize = 1024;
/// Steps kept per thread, the newest (a ring): one rack count's points of bench-10m time about
/// 10,000 distinct steps.
const STEPS_KEPT: usize = 32768;
/// Slots of the index from a step's hash to its place in the ring.
const STEP_INDEX: usize = 65536;
/// Sets of full instances' steady states kept per thread ([`full_steady`]): bench-10m visits up
/// to 1,536 (placement, batch) pairs of a GPU and formats between two rack counts.
const STEADY_SETS: usize = 2048;
/// Entries of a set of [`Sets`].
const WAYS: usize = 4;
/// Steps before the cursor searched for a repeat inside the point being evaluated (several
/// prompt percentiles share a chunk's iteration), which leaves the cursor where it is.
const REPEAT_DISTANCE: usize = 8;

/// A table of `T` in sets of [`WAYS`] entries, the newest first, each set chosen by a key's
/// hash; an entry pushed out of a full set is computed again if asked for. Direct mapped (one
/// entry a slot), two keys that share a slot push each other out every time they alternate: at
/// bench-10m's size that was 17 % of the steady states and a few placements at every rack count.
struct Sets<T> {
    /// Sets in the table (a power of two).
    sets: usize,
    /// `sets x WAYS` entries, allocated at the first `put`.
    entries: Vec<Option<T>>,
}

impl<T: Copy> Sets<T> {
    const fn new(sets: usize) -> Sets<T> {
        Sets {
            sets,
            entries: Vec::new(),
        }
    }

    /// The entries of `hash`'s set.
    fn set_of(&self, hash: u64) -> std::ops::Range<usize> {
        let at = ((hash as usize) & (self.sets - 1)) * WAYS;
        at..at + WAYS
    }

    /// The first entry of `hash`'s set that `is` accepts.
    fn find(&self, hash: u64, is: impl Fn(&T) -> bool) -> Option<T> {
        self.entries
            .get(self.set_of(hash))?
            .iter()
            .flatten()
            .find(|&t| is(t))
            .copied()
    }

    /// Stores `entry` first in `hash`'s set; the oldest of a full set leaves.
    fn put(&mut self, hash: u64, entry: T) {
        if self.entries.is_empty() {
            self.entries = vec![None; self.sets * WAYS];
        }
        let set_of = self.set_of(hash);
        let set = &mut self.entries[set_of];
        set.rotate_right(1);
        set[0] = Some(entry);
    }
}

/// A timed step: the instance, the tokens' bits, and the stage time.
#[derive(Clone, Copy)]
struct Step {
    id: u64,
    tokens: [u64; 8],
    stage: StageTime,
}

const EMPTY: Step = Step {
    id: 0,
    tokens: [0; 8],
    stage: StageTime {
        compute_s: 0.0,
        memory_s: 0.0,
        kernels_s: 0.0,
        comm_s: 0.0,
    },
};

/// The steps a thread has timed, in the order it timed them. Points at the next rack count ask
/// for their steps in the same order as the points that timed them, so a lookup first tries the
/// step after the last one found (memory read in sequence), then the few before it (a repeat
/// inside one point), and only then the index.
struct Steps {
    ring: Vec<Step>,
    /// Ring position of each hash's newest step (`u32::MAX`: none).
    index: Vec<u32>,
    /// Steps ever stored, and the ring position of the last step found or stored.
    stored: usize,
    cursor: usize,
}

impl Steps {
    const fn new() -> Steps {
        Steps {
            ring: Vec::new(),
            index: Vec::new(),
            stored: 0,
            cursor: 0,
        }
    }

    fn find(&mut self, id: u64, tokens: &[u64; 8], hash: u64) -> Option<StageTime> {
        if self.ring.is_empty() {
            return None;
        }
        let next = (self.cursor + 1) & (STEPS_KEPT - 1);
        if self.ring[next].is(id, tokens) {
            self.cursor = next;
            return Some(self.ring[next].stage);
        }
        for back in 0..REPEAT_DISTANCE {
            let step = &self.ring[self.cursor.wrapping_sub(back) & (STEPS_KEPT - 1)];
            if step.is(id, tokens) {
                return Some(step.stage);
            }
        }
        let at = self.index[(hash as usize) & (STEP_INDEX - 1)] as usize;
        let step = self.ring.get(at).filter(|s| s.is(id, tokens))?;
        self.cursor = at;
        Some(step.stage)
    }

    fn store(&mut self, step: Step, hash: u64) {
        if self.ring.is_empty() {
            self.ring = vec![EMPTY; STEPS_KEPT];
            self.index = vec![u32::MAX; STEP_INDEX];
        }
        let at = self.stored & (STEPS_KEPT - 1);
        self.ring[at] = step;
        self.index[(hash as usize) & (STEP_INDEX - 1)] = at as u32;
        self.stored += 1;
        self.cursor = at;
    }
}

impl Step {
    fn is(&self, id: u64, tokens: &[u64; 8]) -> bool {
        // Word by word: an array comparison calls `memcmp`.
        self.id == id && (0..tokens.len()).all(|i| self.tokens[i] == tokens[i])
    }
}

thread_local! {
    static INSTANCES: RefCell<Sets<(InstanceKey, InstanceId)>> = const {
        RefCell::new(Sets::new(INSTANCE_SETS))
    };
    static STEPS: RefCell<Steps> = const { RefCell::new(Steps::new()) };
    static STEADIES: RefCell<Sets<(u64, [u64; 3], Steady)>> =
        const { RefCell::new(Sets::new(STEADY_SETS)) };
}

// Steps (0) and full instances' steady states (1) this thread has computed and found, for
// tests.
#[cfg(test)]
thread_local! {
    static COUNTS: std::cell::Cell<[(u64, u64); 2]> = const { std::cell::Cell::new([(0, 0); 2]) };
}

/// `(timed, found)`: steps this thread has timed for a table, and found in it.
#[cfg(test)]
pub(crate) fn counts() -> (u64, u64) {
    COUNTS.with(|c| c.get()[0])
}

/// `(computed, found)`: full instances' steady states this thread has computed for its table,
/// and found in it.
#[cfg(test)]
pub(crate) fn steady_counts() -> (u64, u64) {
    COUNTS.with(|c| c.get()[1])
}

#[cfg(test)]
fn count(table: usize, computed: u64, found: u64) {
    COUNTS.with(|c| {
        let mut all = c.get();
        all[table].0 += computed;
        all[table].1 += found;
        c.set(all);
    });
}

#[cfg(not(test))]
fn count(_: usize, _: u64, _: u64) {}

/// A multiply-rotate hasher in the style of rustc's FxHasher, mixed whole at the end: a few
/// cycles per word, enough to spread keys over the tables.
#[derive(Default)]
struct Mix(u64);

impl Hasher for Mix {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u32(&mut self, w: u32) {
        self.write_u64(u64::from(w));
    }

    fn write_u64(&mut self, w: u64) {
        const K: u64 = 0x517c_c1b7_2722_0a95;
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(K);
    }

    fn finish(&self) -> u64 {
        // A product carries its factors' bits only upwards, and the f64 keys have their
        // variety in their high bits (small whole numbers leave the low mantissa zero), so the
        // state is mixed whole before its low bits index the tables: SplitMix64's finalizer
        // (Steele, Lea and Flood 2014, "Fast splittable pseudorandom number generators").
        let mut x = self.0;
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        x ^ (x >> 31)
    }
}

/// The id of the instance of `p` (racks, batch and ownership ignored) placed as `l` (GPU and
/// instance counts ignored) in `scope`.
pub fn intern(scope: Scope, p: &Point, l: &Layout) -> InstanceId {
    let key = InstanceKey {
        scope: scope.0,
        point: Point {
            racks: 0,
            batch: 0,
            ownership: 0,
            ..*p
        },
        layout: Layout {
            gpus: 0,
            instances: 0,
            ..*l
        },
    };
    let mut h = Mix::default();
    key.hash(&mut h);
    let hash = h.finish();
    INSTANCES.with(|t| {
        let mut t = t.borrow_mut();
        match t.find(hash, |(k, _)| *k == key) {
            Some((_, id)) => id,
            None => {
                static NEXT: AtomicU64 = AtomicU64::new(1);
                let id = InstanceId(NEXT.fetch_add(1, Ordering::Relaxed));
                t.put(hash, (key, id));
                id
            }
        }
    })
}

fn token_bits(t: &StepTokens) -> [u64; 8] {
    [
        t.decode.to_bits(),
        t.sequences.to_bits(),
        t.decode_context.to_bits(),
        t.prefill.to_bits(),
        t.busiest_prefill.to_bits(),
        t.prefill_context.to_bits(),
        t.moe_tokens.to_bits(),
        t.logit_rows.to_bits(),
    ]
}

/// The stage time of instance `id` for a step carrying `t`: stored if this thread has timed it,
/// else `time()`, stored.
pub fn stage(id: InstanceId, t: &StepTokens, time: impl FnOnce() -> StageTime) -> StageTime {
    let tokens = token_bits(t);
    let mut h = Mix(id.0);
    for w in tokens {
        h.write_u64(w);
    }
    let hash = h.finish();
    if let Some(stage) = STEPS.with(|s| s.borrow_mut().find(id.0, &tokens, hash)) {
        count(0, 0, 1);
        return stage;
    }
    count(0, 1, 0);
    let stage = time();
    STEPS.with(|s| {
        s.borrow_mut().store(
            Step {
                id: id.0,
                tokens,
                stage,
            },
            hash,
        );
    });
    stage
}

/// The steady state of one full aggregated instance of `id` at `batch` sequences, serving
/// prompts of `input_tokens` and answers of `output_tokens`: stored if this thread has computed
/// it, else `compute()`, stored. `compute` must be the instance's own steady state (a pool of
/// one, [`super::steady::full_instance`]), which those four numbers fix.
pub fn full_steady(
    id: InstanceId,
    batch: f64,
    input_tokens: f64,
    output_tokens: f64,
    compute: impl FnOnce() -> Steady,
) -> Steady {
    let key = [batch, input_tokens, output_tokens].map(f64::to_bits);
    let mut h = Mix(id.0);
    for w in key {
        h.write_u64(w);
    }
    let hash = h.finish();
    let found = STEADIES.with(|t| {
        let is = |&(i, k, _): &(u64, [u64; 3], Steady)| i == id.0 && k == key;
        t.borrow().find(hash, is)
    });
    if let Some((_, _, steady)) = found {
        count(1, 0, 1);
        return steady;
    }
    count(1, 1, 0);
    let steady = compute();
    STEADIES.with(|t| t.borrow_mut().put(hash, (id.0, key, steady)));
    steady
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(decode: f64) -> StepTokens {
        StepTokens {
            decode,
            sequences: decode,
            decode_context: 1000.0,
            prefill: 10.0,
            busiest_prefill: 10.0,
            prefill_context: 500.0,
            moe_tokens: 4.0 * decode,
            logit_rows: decode,
        }
    }

    fn layout(gpus: u32, instances: u32, hops: u32) -> Layout {
        Layout {
            tp: 4,
            pp: 2,
            ep: 8,
            stage_gpus: 8,
            attention_dp: 2,
            gpus,
            gpus_per_instance: 16,
            instances,
            pp_hops_scaleout: hops,
        }
    }

    /// Racks, batch and ownership, and the layout's GPU and instance counts, do not name a
    /// different instance; any other axis, the pipeline hops and another scope do.
    #[test]
    fn instances_are_named_by_what_times_their_steps() {
        let scope = Scope::new();
        let p = Point {
            tp: 4,
            pp: 2,
            ep: 8,
            racks: 1,
            batch: 16,
            ..Point::default()
        };
        let id = intern(scope, &p, &layout(16, 1, 0));
        let same = Point {
            racks: 9,
            batch: 1024,
            ownership: 1,
            ..p
        };
        assert_eq!(intern(scope, &same, &layout(144, 9, 0)), id);
        assert_ne!(intern(scope, &p, &layout(144, 9, 1)), id);
        assert_ne!(
            intern(scope, &Point { kv_dtype: 1, ..p }, &layout(16, 1, 0)),
            id
        );
        assert_ne!(intern(Scope::new(), &p, &layout(16, 1, 0)), id);
    }

    /// Two instances of one sweep that differ in their pipeline hops.
    fn two_instances() -> (InstanceId, InstanceId) {
        let scope = Scope::new();
        let p = Point::default();
        (
            intern(scope, &p, &layout(16, 1, 0)),
            intern(scope, &p, &layout(16, 1, 1)),
        )
    }

    /// A step is timed once per instance and tokens; other tokens or another instance are timed
    /// afresh.
    #[test]
    fn steps_are_timed_once() {
        let (a, b) = two_instances();
        let calls = std::cell::Cell::new(0);
        let time = |x: f64| {
            calls.set(calls.get() + 1);
            StageTime {
                kernels_s: x,
                ..StageTime::default()
            }
        };
        assert_eq!(stage(a, &tokens(8.0), || time(1.0)).kernels_s, 1.0);
        assert_eq!(stage(a, &tokens(8.0), || time(2.0)).kernels_s, 1.0);
        assert_eq!(calls.get(), 1);
        assert_eq!(stage(a, &tokens(16.0), || time(3.0)).kernels_s, 3.0);
        assert_eq!(stage(b, &tokens(8.0), || time(4.0)).kernels_s, 4.0);
        assert_eq!(calls.get(), 3);
        // -0.0 and 0.0 are different tokens bit for bit.
        let mut zero = tokens(8.0);
        zero.prefill = 0.0;
        zero.busiest_prefill = 0.0;
        let mut negative = zero;
        negative.prefill = -0.0;
        negative.busiest_prefill = -0.0;
        assert_eq!(stage(a, &zero, || time(5.0)).kernels_s, 5.0);
        assert_eq!(stage(a, &negative, || time(6.0)).kernels_s, 6.0);
        // Every field of the tokens names the step: changing any one of them times it afresh.
        let base = tokens(32.0);
        let changes: [fn(&mut StepTokens); 8] = [
            |t| t.decode += 1.0,
            |t| t.sequences += 1.0,
            |t| t.decode_context += 1.0,
            |t| t.prefill += 1.0,
            |t| t.busiest_prefill += 1.0,
            |t| t.prefill_context += 1.0,
            |t| t.moe_tokens += 1.0,
            |t| t.logit_rows += 1.0,
        ];
        assert_eq!(stage(a, &base, || time(7.0)).kernels_s, 7.0);
        for (i, change) in changes.iter().enumerate() {
            let mut t = base;
            change(&mut t);
            let fresh = 10.0 + i as f64;
            assert_eq!(stage(a, &t, || time(fresh)).kernels_s, fresh, "field {i}");
        }
    }

    /// Keys that share a set all stay, up to [`WAYS`] of them (direct mapped, the second would
    /// push the first out); one more pushes the oldest out.
    #[test]
    fn keys_sharing_a_set_stay_up_to_its_ways() {
        let mut t: Sets<(u64, u64)> = Sets::new(16);
        // Hashes 3, 19, 35, ... all fall in set 3.
        let hash = |i: u64| 3 + 16 * i;
        for i in 0..WAYS as u64 {
            t.put(hash(i), (i, 10 * i));
        }
        for i in 0..WAYS as u64 {
            assert_eq!(t.find(hash(i), |&(k, _)| k == i), Some((i, 10 * i)));
        }
        t.put(hash(9), (9, 90));
        assert_eq!(t.find(hash(0), |&(k, _)| k == 0), None);
        assert_eq!(t.find(hash(1), |&(k, _)| k == 1), Some((1, 10)));
        assert_eq!(t.find(hash(9), |&(k, _)| k == 9), Some((9, 90)));
        // Another set is untouched.
        assert_eq!(t.find(4, |_| true), None);
    }

    /// A full instance's steady state is computed once per instance, batch and lengths; any of
    /// them changed, it is computed afresh.
    #[test]
    fn full_steadies_are_computed_once() {
        let (a, b) = two_instances();
        let calls = std::cell::Cell::new(0);
        let steady = |rate: f64| {
            calls.set(calls.get() + 1);
            Steady {
                requests_per_s: rate,
                ttft_s: [0.1, 0.2, 0.3],
                ttft_mean_s: 0.15,
                ttft_p99_exponential_s: 0.4,
                tpot_mean_s: 0.02,
                tpot_p99_s: 0.03,
                held_per_instance: 64.0,
                response_s: 10.0,
                e2e_s: [9.0, 12.0],
                queue_wait_p99_s: 0.05,
            }
        };
        let at = |id, batch, isl, osl, rate| {
            full_steady(id, batch, isl, osl, || steady(rate)).requests_per_s
        };
        assert_eq!(at(a, 64.0, 2048.0, 512.0, 1.0), 1.0);
        assert_eq!(at(a, 64.0, 2048.0, 512.0, 2.0), 1.0);
        assert_eq!(calls.get(), 1);
        assert_eq!(at(a, 128.0, 2048.0, 512.0, 3.0), 3.0);
        assert_eq!(at(a, 64.0, 1024.0, 512.0, 4.0), 4.0);
        assert_eq!(at(a, 64.0, 2048.0, 256.0, 5.0), 5.0);
        assert_eq!(at(b, 64.0, 2048.0, 512.0, 6.0), 6.0);
        assert_eq!(calls.get(), 5);
        assert_eq!(at(a, 128.0, 2048.0, 512.0, 7.0), 3.0);
    }
}
