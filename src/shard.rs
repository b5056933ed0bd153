//! Shards and parts: deterministic contiguous slices of a grid's index space.
//!
//! Part `k` of `n` of a grid of `t` points is `[k t / n, (k + 1) t / n)`: every index belongs to
//! exactly one part, parts are in index order, and their sizes differ by at most one. A run
//! writes its rows as parts; `--shard K/N` evaluates one of them (one Slurm array task), a
//! single process evaluates all of them in turn.

use std::fmt;
use std::ops::Range;

use crate::error::UserError;

/// Grid points per part when a single process runs a whole sweep: the unit of `--resume`
/// (about 15 s of work at 2 million configurations/s).
pub const DEFAULT_PART_ROWS: u64 = 1 << 25;

/// Part `index` of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: u64,
    pub count: u64,
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Shard {
    pub fn new(index: u64, count: u64) -> Result<Shard, UserError> {
        if count == 0 || index >= count {
            return Err(
                UserError::new(format!("shard {index}/{count} does not exist"))
                    .with_hint("shards are K/N with 0 <= K < N, e.g. --shard 0/8"),
            );
        }
        Ok(Shard { index, count })
    }

    /// Parses `K/N`.
    pub fn parse(text: &str) -> Result<Shard, UserError> {
        let bad = || {
            UserError::new(format!("--shard \"{text}\" is not K/N or auto"))
                .with_hint("write --shard 3/8 (shard 3 of 8, counting from 0), or --shard auto inside a Slurm array or indexed job")
        };
        let (k, n) = text.split_once('/').ok_or_else(bad)?;
        let (k, n) = (
            k.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        Shard::new(k, n)
    }

    /// The shard of this task from its environment. In a Slurm array the task id is the shard
    /// index (`--array=0-(N-1)`); N is `count`, or `SLURM_ARRAY_TASK_COUNT` when the array is
    /// exactly `0..N-1` (a partial resubmission such as `--array=3,17` needs `count`). In a
    /// Kubernetes indexed job, `JOB_COMPLETION_INDEX` of `count`.
    pub fn from_env(
        var: impl Fn(&str) -> Option<String>,
        count: Option<u64>,
    ) -> Result<Shard, UserError> {
        let number =
            |name: &str| -> Result<Option<u64>, UserError> {
                match var(name) {
                    None => Ok(None),
                    Some(v) => v.trim().parse().map(Some).map_err(|_| {
                        UserError::new(format!("{name}=\"{v}\" is not a whole number"))
                    }),
                }
            };
        if let Some(id) = number("SLURM_ARRAY_TASK_ID")? {
            let n = match count {
                Some(n) => n,
                None => {
                    let (min, max, n) = (
                        number("SLURM_ARRAY_TASK_MIN")?,
                        number("SLURM_ARRAY_TASK_MAX")?,
                        number("SLURM_ARRAY_TASK_COUNT")?,
                    );
                    match (min, max, n) {
                        (Some(0), Some(max), Some(n)) if max + 1 == n => n,
                        _ => {
                            let show = |v: Option<u64>| v.map_or("unset".into(), |v| v.to_string());
                            return Err(UserError::new(format!(
                                "--shard auto: the array is not 0..N-1 (SLURM_ARRAY_TASK_MIN {}, MAX {}, COUNT {})",
                                show(min),
                                show(max),
                                show(n)
                            ))
                            .with_hint("pass --shard-count N; the task id is the shard index"));
                        }
                    }
                }
            };
            return Shard::new(id, n);
        }
        if let Some(index) = number("JOB_COMPLETION_INDEX")? {
            let n = count.ok_or_else(|| {
                UserError::new("--shard auto with JOB_COMPLETION_INDEX needs the shard count")
                    .with_hint("pass --shard-count N (the job's completions)")
            })?;
            return Shard::new(index, n);
        }
        Err(UserError::new(
            "--shard auto: neither SLURM_ARRAY_TASK_ID nor JOB_COMPLETION_INDEX is set",
        )
        .with_hint("run inside a Slurm array job (sbatch --array) or pass --shard K/N"))
    }

    /// The grid indices of this part of a grid of `total` points.
    pub fn range(&self, total: u64) -> Range<u64> {
        let at = |k: u64| (u128::from(k) * u128::from(total) / u128::from(self.count)) as u64;
        at(self.index)..at(self.index + 1)
    }

    /// Parts a single process splits a grid of `total` points into.
    pub fn count_for(total: u64, part_rows: u64) -> u64 {
        total.div_ceil(part_rows).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Parts cover the index space exactly once, in order, sizes within one of each other.
        #[test]
        fn parts_are_complete_disjoint_and_ordered(total in 0u64..u64::MAX / 2, count in 1u64..2_000) {
            let mut next = 0;
            let (mut smallest, mut largest) = (u64::MAX, 0);
            for k in 0..count {
                let r = Shard::new(k, count).unwrap().range(total);
                prop_assert_eq!(r.start, next);
                next = r.end;
                smallest = smallest.min(r.end - r.start);
                largest = largest.max(r.end - r.start);
            }
            prop_assert_eq!(next, total);
            prop_assert!(largest - smallest <= 1);
        }
    }

    #[test]
    fn parses_and_rejects() {
        assert_eq!(Shard::parse("3/8").unwrap(), Shard { index: 3, count: 8 });
        assert_eq!(
            Shard::parse(" 0 / 1 ").unwrap(),
            Shard { index: 0, count: 1 }
        );
        for bad in ["8/8", "1/0", "3", "a/8", "-1/8", "3/8/9"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn reads_slurm_and_indexed_jobs() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        let whole = env(&[
            ("SLURM_ARRAY_TASK_ID", "5"),
            ("SLURM_ARRAY_TASK_MIN", "0"),
            ("SLURM_ARRAY_TASK_MAX", "7"),
            ("SLURM_ARRAY_TASK_COUNT", "8"),
        ]);
        assert_eq!(
            Shard::from_env(whole, None).unwrap(),
            Shard { index: 5, count: 8 }
        );
        // A resubmission of some tasks (--array=3,5): the ids are the shards, the count is given.
        let some = env(&[
            ("SLURM_ARRAY_TASK_ID", "5"),
            ("SLURM_ARRAY_TASK_MIN", "3"),
            ("SLURM_ARRAY_TASK_MAX", "5"),
            ("SLURM_ARRAY_TASK_COUNT", "2"),
        ]);
        assert!(Shard::from_env(some, None).is_err());
        assert_eq!(
            Shard::from_env(some, Some(8)).unwrap(),
            Shard { index: 5, count: 8 }
        );
        // A 1-based array runs past the last shard.
        assert!(Shard::from_env(env(&[("SLURM_ARRAY_TASK_ID", "8")]), Some(8)).is_err());
        let k8s = env(&[("JOB_COMPLETION_INDEX", "2")]);
        assert_eq!(
            Shard::from_env(k8s, Some(4)).unwrap(),
            Shard { index: 2, count: 4 }
        );
        assert!(Shard::from_env(env(&[("JOB_COMPLETION_INDEX", "2")]), None).is_err());
        assert!(Shard::from_env(env(&[]), Some(4)).is_err());
        assert!(Shard::from_env(env(&[("SLURM_ARRAY_TASK_ID", "x")]), None).is_err());
    }

    #[test]
    fn single_process_part_counts() {
        assert_eq!(Shard::count_for(0, 10), 1);
        assert_eq!(Shard::count_for(10, 10), 1);
        assert_eq!(Shard::count_for(11, 10), 2);
    }
}
