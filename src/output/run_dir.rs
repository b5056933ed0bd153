//! The run directory: where every file of a run lives, how a part is committed, and how the
//! committed parts are found again (by `run --resume` and by `merge`).
//!
//! ```text
//! <out>/<sweep name>/
//!   sweep.toml                         the sweep, as run (its SHA-256 ties every file to it)
//!   configs/part-K-of-N.parquet        the rows of part K
//!   parts/part-K-of-N.json             part K's commit record: counts, frontier ids, file size
//!   parts/part-K-of-N.pareto.parquet   part K's own frontier
//!   pareto.parquet, pareto.md          the frontier of the whole run (written by the merge)
//!   manifest.json                      "complete": true only once all of the above is written
//! ```
//!
//! A part's files are written under temporary names, synced and renamed; its JSON record is
//! renamed into place last and is the commit. A part without a record (a crash mid-part) is
//! simply evaluated again; nothing else is ever read from an uncommitted file.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use serde::{Deserialize, Serialize};

use crate::error::UserError;
use crate::shard::Shard;

/// Paths of one run directory.
#[derive(Debug, Clone)]
pub struct RunDir {
    pub root: PathBuf,
}

/// Part K's commit record (`parts/part-K-of-N.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartRecord {
    pub racksweep_version: String,
    pub sweep_sha256: String,
    /// The sweep file as given to `run`.
    pub sweep_file: String,
    pub part: u64,
    pub parts: u64,
    /// Grid indices `[first_config_id, end_config_id)`.
    pub first_config_id: u64,
    pub end_config_id: u64,
    pub rows_written: u64,
    pub feasible: u64,
    /// Infeasible reason -> configurations.
    pub infeasible: BTreeMap<String, u64>,
    pub feasible_only: bool,
    /// config_ids of the part's own frontier, in frontier order (the merge evaluates them again:
    /// the model is pure, so they give the same rows).
    pub frontier_config_ids: Vec<u64>,
    /// Size of `configs/part-K-of-N.parquet`, checked by the merge.
    pub configs_bytes: u64,
    pub threads: usize,
    pub wall_time_s: f64,
    pub finished_at: String,
}

impl PartRecord {
    pub fn shard(&self) -> Shard {
        Shard {
            index: self.part,
            count: self.parts,
        }
    }

    pub fn configurations(&self) -> u64 {
        self.end_config_id - self.first_config_id
    }
}

impl RunDir {
    pub fn new(root: PathBuf) -> RunDir {
        RunDir { root }
    }

    pub fn sweep(&self) -> PathBuf {
        self.root.join("sweep.toml")
    }

    pub fn manifest(&self) -> PathBuf {
        self.root.join("manifest.json")
    }

    pub fn pareto_parquet(&self) -> PathBuf {
        self.root.join("pareto.parquet")
    }

    pub fn pareto_md(&self) -> PathBuf {
        self.root.join("pareto.md")
    }

    fn configs_dir(&self) -> PathBuf {
        self.root.join("configs")
    }

    fn parts_dir(&self) -> PathBuf {
        self.root.join("parts")
    }

    pub fn configs(&self, s: Shard) -> PathBuf {
        self.configs_dir().join(format!("{}.parquet", part_name(s)))
    }

    pub fn record(&self, s: Shard) -> PathBuf {
        self.parts_dir().join(format!("{}.json", part_name(s)))
    }

    pub fn part_pareto(&self, s: Shard) -> PathBuf {
        self.parts_dir()
            .join(format!("{}.pareto.parquet", part_name(s)))
    }

    /// Creates the directory and its `configs/` and `parts/` folders (concurrent shards may race
    /// here; that is fine) and writes `sweep.toml` if it is not there yet.
    pub fn create(&self, sweep_text: &str) -> Result<()> {
        for dir in [self.configs_dir(), self.parts_dir()] {
            fs::create_dir_all(&dir).map_err(|e| {
                UserError::new(format!("cannot create {}: {e}", dir.display()))
                    .with_hint("pass --out with a writable directory")
            })?;
        }
        if !self.sweep().exists() {
            write_atomic(&self.sweep(), sweep_text.as_bytes())?;
        }
        Ok(())
    }

    /// Whether the directory holds nothing a run wrote yet: no `sweep.toml`, only empty
    /// `configs/` and `parts/` folders and `sweep.toml`'s temporary file. That is what a run
    /// killed while it was creating them leaves, and `--resume` starts it afresh.
    pub fn never_started(&self) -> Result<bool> {
        if self.sweep().exists() {
            return Ok(false);
        }
        let listing =
            |dir: &Path| fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()));
        for entry in listing(&self.root)? {
            let path = entry?.path();
            let skeleton = path == self.configs_dir() || path == self.parts_dir();
            let started = if skeleton {
                listing(&path)?.next().is_some()
            } else {
                path != tmp_path(&self.sweep())
            };
            if started {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The committed record of part `s`, if the part is complete: its record parses, belongs
    /// to this sweep and its rows file has the recorded size. Anything else is not committed.
    pub fn committed(&self, s: Shard, sweep_sha256: &str) -> Option<PartRecord> {
        let text = fs::read_to_string(self.record(s)).ok()?;
        let record: PartRecord = serde_json::from_str(&text).ok()?;
        let size = fs::metadata(self.configs(s)).ok()?.len();
        (record.sweep_sha256 == sweep_sha256
            && record.shard() == s
            && record.configs_bytes == size
            && self.part_pareto(s).exists())
        .then_some(record)
    }

    /// Removes part `s`'s files and any temporary file a crashed writer of it left.
    pub fn remove_part(&self, s: Shard) -> Result<()> {
        for path in [self.record(s), self.configs(s), self.part_pareto(s)] {
            for p in [tmp_path(&path), path] {
                match fs::remove_file(&p) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(e).with_context(|| format!("removing {}", p.display())),
                }
            }
        }
        Ok(())
    }

    /// Part counts of the part files present in `configs/` and `parts/` (a run directory
    /// should hold one).
    pub fn part_counts(&self) -> Result<Vec<u64>> {
        let mut counts = Vec::new();
        for dir in [self.configs_dir(), self.parts_dir()] {
            let entries = match fs::read_dir(&dir) {
                Ok(entries) => entries,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e).with_context(|| format!("listing {}", dir.display())),
            };
            for entry in entries {
                let name = entry?.file_name();
                if let Some(n) = parse_part_count(&name.to_string_lossy()) {
                    counts.push(n);
                }
            }
        }
        counts.sort_unstable();
        counts.dedup();
        Ok(counts)
    }

    /// The error for a run directory holding parts of several splits (`counts`).
    pub fn mixed_part_counts(&self, counts: &[u64]) -> UserError {
        let counts: Vec<String> = counts.iter().map(|n| format!("of-{n}")).collect();
        UserError::new(format!(
            "{} holds parts split different ways ({})",
            self.root.display(),
            counts.join(", ")
        ))
        .with_hint(
            "every shard of a run uses the same N: rerun them so, or pass --force to start over",
        )
    }
}

/// `part-K-of-N`.
fn part_name(s: Shard) -> String {
    format!("part-{}-of-{}", s.index, s.count)
}

/// N of a `part-K-of-N.*` file name.
fn parse_part_count(name: &str) -> Option<u64> {
    let rest = name.strip_prefix("part-")?;
    let (_, rest) = rest.split_once("-of-")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// The temporary name a file is written under before being renamed into place.
pub fn tmp_path(path: &Path) -> PathBuf {
    let mut name = std::ffi::OsString::from(".");
    name.push(path.file_name().expect("files have names"));
    name.push(".tmp");
    path.with_file_name(name)
}

/// Writes `bytes` to `path` atomically: a synced temporary file renamed into place.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = tmp_path(path);
    let mut file = fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    file.write_all(bytes)?;
    file.sync_all()?;
    rename(&tmp, path)
}

/// Renames a finished (synced) temporary file into place, and syncs the directory so that the
/// rename itself survives a power loss.
pub fn rename(tmp: &Path, path: &Path) -> Result<()> {
    fs::rename(tmp, path).with_context(|| format!("moving {} into place", path.display()))?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .with_context(|| format!("syncing {}", dir.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        let dir = RunDir::new(PathBuf::from("r"));
        let s = Shard { index: 3, count: 8 };
        assert_eq!(dir.configs(s), Path::new("r/configs/part-3-of-8.parquet"));
        assert_eq!(dir.record(s), Path::new("r/parts/part-3-of-8.json"));
        assert_eq!(
            tmp_path(&dir.record(s)),
            Path::new("r/parts/.part-3-of-8.json.tmp")
        );
        assert_eq!(parse_part_count("part-3-of-8.parquet"), Some(8));
        assert_eq!(parse_part_count("part-3-of-12.pareto.parquet"), Some(12));
        assert_eq!(parse_part_count(".part-3-of-8.json.tmp"), None);
        assert_eq!(parse_part_count("notes.txt"), None);
    }

    /// A run killed while it created its folders has not started; one with its sweep file, a
    /// part file or anything else in the directory has.
    #[test]
    fn a_run_killed_at_its_start_never_started() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = RunDir::new(tmp.path().join("run"));
        fs::create_dir_all(dir.configs_dir()).unwrap();
        assert!(dir.never_started().unwrap());
        fs::create_dir_all(dir.parts_dir()).unwrap();
        fs::write(tmp_path(&dir.sweep()), "half").unwrap();
        assert!(dir.never_started().unwrap());
        fs::write(dir.parts_dir().join(".part-0-of-2.json.tmp"), "").unwrap();
        assert!(!dir.never_started().unwrap());
        fs::remove_file(dir.parts_dir().join(".part-0-of-2.json.tmp")).unwrap();
        fs::write(dir.root.join("notes.txt"), "").unwrap();
        assert!(!dir.never_started().unwrap());
        fs::remove_file(dir.root.join("notes.txt")).unwrap();
        dir.create("[sweep]\n").unwrap();
        assert!(!dir.never_started().unwrap());
    }
}
