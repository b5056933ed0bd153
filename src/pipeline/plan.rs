//! Stage 1: a loaded sweep, its run directory and its parts. A run directory holds one split of
//! the grid: a resumed run, a shard and a merge all take the split already there.

use anyhow::Result;

use crate::error::UserError;
use crate::output::run_dir::{Lock, RunDir};
use crate::shard::Shard;
use crate::spec::Sweep;

/// A sweep, the run directory its files go to, the lock that makes this process its writer,
/// and how many parts its grid is split into.
pub struct Plan<'a> {
    pub sweep: &'a Sweep,
    pub dir: RunDir,
    /// Held for the plan's life; checked before each commit ([`Lock::check`]).
    pub lock: Lock,
    /// Parts of the grid (`configs/part-K-of-N.parquet`, N = `parts`).
    pub parts: u64,
}

impl<'a> Plan<'a> {
    /// A whole run: the split of the parts already in `dir` (a resumed run), or parts of about
    /// `part_rows` grid points.
    pub fn whole(sweep: &'a Sweep, dir: RunDir, lock: Lock, part_rows: u64) -> Result<Plan<'a>> {
        let parts = match dir.part_counts()?.as_slice() {
            [] => Shard::count_for(sweep.len(), part_rows),
            [n] => *n,
            several => return Err(dir.mixed_part_counts(several).into()),
        };
        Ok(Plan {
            sweep,
            dir,
            lock,
            parts,
        })
    }

    /// One shard's run: its split, which must be the split of any part already in `dir`.
    pub fn shard(sweep: &'a Sweep, dir: RunDir, lock: Lock, s: Shard) -> Result<Plan<'a>> {
        if let Some(other) = dir.part_counts()?.into_iter().find(|&n| n != s.count) {
            return Err(dir.mixed_part_counts(&[other, s.count]).into());
        }
        Ok(Plan {
            sweep,
            dir,
            lock,
            parts: s.count,
        })
    }

    /// A merge: the split of the parts in `dir`, which must hold some.
    pub fn merge(sweep: &'a Sweep, dir: RunDir, lock: Lock) -> Result<Plan<'a>> {
        let parts = match dir.part_counts()?.as_slice() {
            [] => {
                return Err(
                    UserError::new(format!("{} holds no parts", dir.root.display()))
                        .with_hint("run the shards first: racksweep run <SWEEP> --shard K/N")
                        .into(),
                );
            }
            [n] => *n,
            several => return Err(dir.mixed_part_counts(several).into()),
        };
        Ok(Plan {
            sweep,
            dir,
            lock,
            parts,
        })
    }

    /// Every part, in order.
    pub fn shards(&self) -> impl Iterator<Item = Shard> + use<> {
        let count = self.parts;
        (0..count).map(move |index| Shard { index, count })
    }
}

/// The run directory's `sweep.toml` must be this sweep, byte for byte. `restart` is the hint
/// for a run of another sweep: how the caller's command can start over.
pub fn same_sweep(dir: &RunDir, sweep: &Sweep, restart: &str) -> Result<()> {
    let h = sweep.header();
    let text = crate::limits::read_input(&dir.sweep()).map_err(|e| {
        UserError::new(format!(
            "{} is not a racksweep run directory (cannot read sweep.toml: {e})",
            dir.root.display()
        ))
        .with_hint(restart)
    })?;
    if text != h.text {
        return Err(UserError::new(format!(
            "{} holds a run of a different sweep (its sweep.toml differs from {})",
            dir.root.display(),
            h.path.display()
        ))
        .with_hint(format!("run it with the same sweep file, or {restart}"))
        .into());
    }
    Ok(())
}
