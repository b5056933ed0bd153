//! The run directory: where every file of a run lives, how a part is committed, and how the
//! committed parts are found again (by `run --resume` and by `merge`).
//!
//! ```text
//! <out>/.<sweep name>.lock             the run's lock (beside it, so that it outlives --force)
//! <out>/<sweep name>/
//!   sweep.toml                         the sweep, as run (its SHA-256 ties every file to it)
//!   configs/part-K-of-N.parquet        the rows of part K
//!   parts/part-K-of-N.json             part K's commit record: counts, frontier ids, sizes and
//!                                      SHA-256 of its two Parquet files
//!   parts/part-K-of-N.pareto.parquet   part K's own frontier
//!   parts/.part-K-of-N.lock            the lock of part K's writer (sharded runs)
//!   pareto.parquet, pareto.md          the frontier of the whole run (written by the merge)
//!   manifest.json                      "complete": true only once all of the above is written
//!   .verified.json                     the readers' record of part files already checksummed
//! ```
//!
//! **One writer.** A whole run, a merge and a report hold the run's lock exclusively; a shard
//! holds it shared with the other shards and its own part's lock exclusively. The locks are
//! `flock`s, so the operating system releases them when their process ends, `kill -9` included.
//! A second writer is refused at once, naming the process that holds the lock. A lock file
//! removed while held locks nothing (a second writer would lock a new file at its path), so a
//! writer checks its locks before each commit and stops without committing if one was lost.
//!
//! **Commits.** A part's files are written under temporary names unique to their process,
//! synced and renamed; its JSON record is renamed into place last and is the commit. A part
//! without a record (a crash mid-part) is simply evaluated again. A part whose files do not
//! match their record (size and SHA-256) is refused by every reader, by name: nothing is ever
//! read from an uncommitted or altered file.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use serde::{Deserialize, Serialize};

use crate::error::UserError;
use crate::limits::read_input;
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
    /// config_ids of the part's own frontier, in frontier order (a merge, and a resumed run for
    /// the parts committed before it, evaluates them again: the model is pure, so they give the
    /// same rows).
    pub frontier_config_ids: Vec<u64>,
    /// Size and SHA-256 (hex) of `configs/part-K-of-N.parquet`, and the SHA-256 of
    /// `parts/part-K-of-N.pareto.parquet`, checked by every reader.
    pub configs_bytes: u64,
    pub configs_sha256: String,
    pub pareto_sha256: String,
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
            // Shards of two sweeps of one name may start at the same instant: the sweep
            // written first stays, and the other shard's check against it refuses that shard.
            publish_new(&self.sweep(), sweep_text.as_bytes())?;
        }
        Ok(())
    }

    /// Whether the directory holds nothing a run wrote yet: no `sweep.toml`, only empty
    /// `configs/` and `parts/` folders and `sweep.toml`'s temporary files. That is what a run
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
                !is_temporary_of(&path, &self.sweep())
            };
            if started {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Whether the directory is a racksweep run that `--force` may remove: a run that never
    /// started, or one with its `sweep.toml` whose every entry is a file or folder a run writes.
    /// Anything else (someone's own files) is not removed.
    pub fn is_run(&self) -> Result<bool> {
        if !self.root.is_dir() {
            return Ok(false);
        }
        if self.never_started()? {
            return Ok(true);
        }
        if !self.sweep().is_file() {
            return Ok(false);
        }
        for entry in
            fs::read_dir(&self.root).with_context(|| format!("listing {}", self.root.display()))?
        {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let known = match name.as_str() {
                "configs" | "parts" => entry.file_type()?.is_dir(),
                "sweep.toml" | "manifest.json" | "pareto.parquet" | "pareto.md" | "report.html"
                | "report.md" | ".verified.json" => true,
                _ => {
                    (name.starts_with("report-") && name.ends_with(".svg"))
                        || (name.starts_with('.') && name.contains(".tmp"))
                }
            };
            if !known {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Part `s` as its commit record says it is, checked against its files: committed when
    /// the record parses, belongs to this sweep and part, and both Parquet files are regular
    /// files of the recorded contents (SHA-256; `cache` saves rehashing files already checked).
    /// No record means not written (its writer died before committing).
    pub fn part(&self, s: Shard, sweep_sha256: &str, cache: &mut Verified) -> PartState {
        let text = match read_input(&self.record(s)) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return PartState::Absent,
            Err(e) => {
                return PartState::Corrupt(format!("{}: {e}", self.record(s).display()));
            }
        };
        let record = match serde_json::from_str::<PartRecord>(&text) {
            Ok(record) => record,
            // Records are renamed into place whole: one that does not parse was altered, or
            // written by another racksweep version.
            Err(e) => {
                return PartState::Corrupt(format!(
                    "{} cannot be read ({e}): written by another racksweep version, or altered",
                    self.record(s).display()
                ));
            }
        };
        if record.sweep_sha256 != sweep_sha256 {
            return PartState::Corrupt(format!(
                "{} belongs to another sweep (sha256 {})",
                self.record(s).display(),
                record.sweep_sha256
            ));
        }
        if record.shard() != s {
            return PartState::Corrupt(format!(
                "{} records part {} of {}",
                self.record(s).display(),
                record.part,
                record.parts
            ));
        }
        for (path, sha, size) in [
            (
                self.configs(s),
                &record.configs_sha256,
                Some(record.configs_bytes),
            ),
            (self.part_pareto(s), &record.pareto_sha256, None),
        ] {
            if let Err(why) = cache.check(&path, sha, size) {
                return PartState::Corrupt(why);
            }
        }
        PartState::Committed(Box::new(record))
    }

    /// Commits the part `record` describes: its rows and its frontier, written and synced under
    /// their temporary names ([`tmp_path`]), are renamed into place, then the record itself,
    /// which is the commit.
    pub fn commit_part(&self, record: &PartRecord) -> Result<()> {
        let s = record.shard();
        for path in [self.configs(s), self.part_pareto(s)] {
            rename(&tmp_path(&path), &path)?;
        }
        let json = serde_json::to_string_pretty(record)? + "\n";
        write_atomic(&self.record(s), json.as_bytes())
    }

    /// The start of the name a removal moves the run aside to: `.<name>.removing-`, then the
    /// remover's pid and `-<n>` past the remains of earlier removals.
    fn remains_prefix(&self) -> String {
        let name = self
            .root
            .file_name()
            .map_or_else(|| "run".to_owned(), |n| n.to_string_lossy().into_owned());
        format!(".{name}.removing-")
    }

    /// Removes the whole run (`run --force`; the caller holds the run's lock and has checked
    /// `is_run`). The directory is first renamed aside, one atomic step, so its path never
    /// holds a half-removed run: a removal that fails part-way (a file that may not be
    /// deleted) or is killed leaves the remains under their own name,
    /// `.<name>.removing-<pid>[-<n>]` beside the run (and says so if it can); the run's path
    /// is free, so the next run starts afresh, and clears them ([`RunDir::remove_remains`]).
    pub fn remove(&self) -> Result<()> {
        let prefix = self.remains_prefix();
        // A name no earlier removal left behind (a failed one keeps its remains; a pid recurs).
        let pid = std::process::id();
        let free = |n: u32| {
            let suffix = if n == 0 {
                String::new()
            } else {
                format!("-{n}")
            };
            let path = self.root.with_file_name(format!("{prefix}{pid}{suffix}"));
            fs::symlink_metadata(&path).is_err().then_some(path)
        };
        let Some(aside) = (0..1000).find_map(free) else {
            return Err(UserError::new(format!(
                "cannot remove {}: a thousand earlier removals left their remains beside it",
                self.root.display()
            ))
            .with_hint(format!("remove the {prefix}* directories beside it"))
            .into());
        };
        fs::rename(&self.root, &aside).map_err(|e| {
            UserError::new(format!(
                "cannot remove {} (moving it aside failed, nothing was removed): {e}",
                self.root.display()
            ))
            .with_hint("check the permissions of the directory that holds it, or pass --out to write elsewhere")
        })?;
        fs::remove_dir_all(&aside).map_err(|e| {
            UserError::new(format!(
                "{} was moved to {} to be replaced, and part of it could not be removed: {e}",
                self.root.display(),
                aside.display()
            ))
            .with_hint(format!(
                "remove {} yourself (the next run into this --out tries again); {} no longer exists, so the run can be started again",
                aside.display(),
                self.root.display()
            ))
        })?;
        Ok(())
    }

    /// Removes the remains that earlier removals of this run left beside it (a removal killed
    /// part-way, or one that met a file it may not delete): every directory named
    /// `.<name>.removing-<pid>[-<n>]`. Only a holder of the run's lock to itself calls this, and only such
    /// a holder removes a run ([`RunDir::remove`]), so no removal of them is in progress. What
    /// cannot be removed stays, and is named in the returned warnings; the run itself does not
    /// depend on it.
    pub fn remove_remains(&self) -> Vec<String> {
        let prefix = self.remains_prefix();
        let Some(parent) = self.root.parent() else {
            return Vec::new();
        };
        let parent = if parent.as_os_str().is_empty() {
            Path::new(".")
        } else {
            parent
        };
        let Ok(entries) = fs::read_dir(parent) else {
            return Vec::new();
        };
        // `<pid>` or `<pid>-<n>` after the prefix, and nothing else: the remains of a run whose
        // own name starts as this one's does (`r.removing-5` beside `r`) are that run's, under
        // its own lock.
        let ours = |name: &str| {
            name.strip_prefix(&prefix).is_some_and(|rest| {
                let mut parts = rest.splitn(2, '-');
                let digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
                parts.next().is_some_and(digits) && parts.next().is_none_or(digits)
            })
        };
        let mut warnings = Vec::new();
        for entry in entries.flatten() {
            let is_remains = ours(&entry.file_name().to_string_lossy())
                && entry.file_type().is_ok_and(|t| t.is_dir());
            if !is_remains {
                continue;
            }
            let path = entry.path();
            if let Err(e) = fs::remove_dir_all(&path) {
                warnings.push(format!(
                    "{} holds the remains of an earlier --force, and part of it could not be removed: {e} (remove it yourself)",
                    path.display()
                ));
            }
        }
        warnings
    }

    /// Removes what a merge wrote, the manifest first so that no reader takes the run for
    /// complete: a part written again makes the run's frontier and its counts stale until the
    /// next merge.
    pub fn unmerge(&self) -> Result<()> {
        for path in [self.manifest(), self.pareto_parquet(), self.pareto_md()] {
            remove_if_present(&path)?;
        }
        Ok(())
    }

    /// Removes part `s`'s files and any temporary file a crashed writer of it left (the caller
    /// holds the part's lock, so no live process is writing them).
    pub fn remove_part(&self, s: Shard) -> Result<()> {
        for path in [self.record(s), self.configs(s), self.part_pareto(s)] {
            remove_if_present(&path)?;
            for tmp in temporaries(&path)? {
                remove_if_present(&tmp)?;
            }
        }
        Ok(())
    }

    /// Removes this process's temporaries of part `s` and nothing another process wrote: what
    /// a part that failed, was stopped, or lost its lock ([`Lock::check`]) leaves.
    pub fn remove_own_temporaries(&self, s: Shard) -> Result<()> {
        for path in [self.configs(s), self.part_pareto(s)] {
            remove_if_present(&tmp_path(&path))?;
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

/// A run opened for reading, checked: its manifest, and the part files its rows are in, each
/// committed and matching its record.
#[derive(Debug, Clone)]
pub struct Finished {
    pub root: PathBuf,
    pub manifest: crate::output::manifest::Manifest,
    /// `configs/part-K-of-N.parquet` of every committed part, in part order.
    pub configs: Vec<PathBuf>,
}

impl RunDir {
    /// Opens the run for reading (`top`, `pareto`, `report`): a complete run (or, with
    /// `allow_incomplete`, its committed parts, said on stderr) whose `sweep.toml` is the one
    /// its manifest names, whose `configs/` holds nothing but its parts, and whose every part
    /// file matches its commit record (checksums cached in `.verified.json` by size and time).
    pub fn open(&self, allow_incomplete: bool) -> Result<Finished> {
        self.open_with(allow_incomplete, Verified::load(self))
    }

    /// `e`, an error met reading the rows of this run after [`RunDir::open`] accepted it,
    /// explained where a file is to blame: `open` trusts a part whose size and modification
    /// time are those it was checksummed with, so a file damaged in place (bit rot, a copy that
    /// keeps times) passes it and fails only when read. Checksumming every file again turns that
    /// into the user error it is, naming the file. A file that matches its record and still
    /// does not decode had its record changed with it (a forged checksum): decoding every file
    /// names that one. `e` stands, racksweep's own failure, when every file matches its record
    /// and decodes (or when it was already the user's to fix).
    pub fn explain(&self, e: anyhow::Error, allow_incomplete: bool) -> anyhow::Error {
        if e.downcast_ref::<UserError>().is_some() {
            return e;
        }
        let run = match self.open_with(allow_incomplete, Verified::default()) {
            Err(found) => return found,
            Ok(run) => run,
        };
        let frontier = run.manifest.complete.then(|| self.pareto_parquet());
        for path in run.configs.iter().chain(&frontier) {
            if let Err(why) = decode_parquet(path) {
                return UserError::new(format!(
                    "{} matches its commit record but is not readable Parquet ({why}): the file and its record were changed after racksweep wrote them",
                    path.display()
                ))
                .with_hint(ALTERED_HINT)
                .into();
            }
        }
        e
    }

    #[expect(
        clippy::print_stderr,
        reason = "a warning to whoever reads an unfinished run, which the reading command does not otherwise report"
    )]
    fn open_with(&self, allow_incomplete: bool, mut cache: Verified) -> Result<Finished> {
        let not_a_run = |why: String| {
            UserError::new(format!(
                "{} is not a racksweep run directory ({why})",
                self.root.display()
            ))
            .with_hint("pass the directory `racksweep run` wrote: <out>/<sweep name>")
        };
        if !self.sweep().is_file() {
            return Err(not_a_run("it has no sweep.toml".into()).into());
        }
        let text = match read_input(&self.manifest()) {
            Ok(text) => text,
            // Parts without a manifest: shards not merged yet (or merged, then one written
            // again), or a run killed before it wrote one.
            Err(e)
                if e.kind() == std::io::ErrorKind::NotFound && !self.part_counts()?.is_empty() =>
            {
                return Err(UserError::new(format!(
                    "the run in {} is not finished: it holds parts but no manifest.json",
                    self.root.display()
                ))
                .with_hint("merge its shards (racksweep merge), or finish the run with racksweep run --resume")
                .into());
            }
            Err(e) => return Err(not_a_run(format!("cannot read manifest.json: {e}")).into()),
        };
        let manifest: crate::output::manifest::Manifest =
            serde_json::from_str(&text).map_err(|e| {
                UserError::new(format!(
                    "{} is not a racksweep manifest: {e}",
                    self.manifest().display()
                ))
                .with_hint("it may come from another racksweep version; run the sweep again")
            })?;
        let sweep_sha = sha256_file(&self.sweep())?;
        if sweep_sha != manifest.sweep_sha256 {
            return Err(UserError::new(format!(
                "{}: sweep.toml is not the sweep its manifest.json records (sha256 {sweep_sha}, recorded {})",
                self.root.display(),
                manifest.sweep_sha256
            ))
            .with_hint("the run directory was altered; run the sweep again")
            .into());
        }
        if !manifest.complete && !allow_incomplete {
            return Err(UserError::new(format!(
                "the run in {} is not complete ({} of {} parts committed)",
                self.root.display(),
                manifest.parts_committed,
                manifest.parts
            ))
            .with_hint("finish it with `racksweep run --resume` (or `racksweep merge` for shards), or pass --allow-incomplete to read the parts committed so far")
            .into());
        }
        let parts = manifest.parts;
        self.check_configs_listing(parts)?;
        if manifest.complete
            && let Err(why) = cache.check(&self.pareto_parquet(), &manifest.pareto_sha256, None)
        {
            return Err(UserError::new(format!("{}: {why}", self.root.display()))
                .with_hint("the run directory was altered; merge it again (racksweep merge)")
                .into());
        }
        let mut configs = Vec::new();
        let mut missing = Vec::new();
        for index in 0..parts {
            let s = Shard {
                index,
                count: parts,
            };
            match self.part(s, &manifest.sweep_sha256, &mut cache) {
                PartState::Committed(_) => configs.push(self.configs(s)),
                PartState::Absent => missing.push(index),
                PartState::Corrupt(why) => {
                    return Err(UserError::new(format!("part {s}: {why}"))
                        .with_hint(ALTERED_HINT)
                        .into());
                }
            }
        }
        cache.save(self);
        if !missing.is_empty() {
            let list: Vec<String> = missing.iter().map(u64::to_string).collect();
            if manifest.complete {
                return Err(UserError::new(format!(
                    "{}: the manifest says complete but part{} {} of {parts} {} not committed",
                    self.root.display(),
                    if missing.len() == 1 { "" } else { "s" },
                    list.join(", "),
                    if missing.len() == 1 { "is" } else { "are" },
                ))
                .with_hint("run the sweep again with --resume")
                .into());
            }
            eprintln!(
                "warning: reading an incomplete run: {} of {parts} parts committed (missing: {})",
                configs.len(),
                list.join(", ")
            );
        } else if !manifest.complete {
            eprintln!(
                "warning: reading a run whose every part is committed but whose merge is not done (racksweep merge finishes it)"
            );
        }
        if configs.is_empty() {
            return Err(UserError::new(format!(
                "{} has no committed part to read",
                self.root.display()
            ))
            .with_hint("run the sweep (or its shards) first")
            .into());
        }
        Ok(Finished {
            root: self.root.clone(),
            manifest,
            configs,
        })
    }

    /// `configs/` holds only this run's `parts` part files (regular files; hidden temporaries
    /// of writers are ignored): a copy or a stranger would be read as rows.
    pub fn check_configs_listing(&self, parts: u64) -> Result<()> {
        let dir = self.configs_dir();
        for entry in fs::read_dir(&dir).with_context(|| format!("listing {}", dir.display()))? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let ours = (0..parts).any(|index| {
                name == format!(
                    "{}.parquet",
                    part_name(Shard {
                        index,
                        count: parts
                    })
                )
            });
            let why = if !ours {
                "is not a part of this run"
            } else if !entry.file_type()?.is_file() {
                "is not a regular file"
            } else {
                continue;
            };
            return Err(UserError::new(format!(
                "{}: {} {why}",
                self.root.display(),
                dir.join(&name).display()
            ))
            .with_hint(format!(
                "configs/ holds the run's rows only (part-K-of-{parts}.parquet); move the file elsewhere"
            ))
            .into());
        }
        Ok(())
    }
}

/// What a part's commit record and files say.
#[derive(Debug, Clone, PartialEq)]
pub enum PartState {
    /// No (readable) record: the part was not written, or its writer died before committing.
    Absent,
    Committed(Box<PartRecord>),
    /// A record whose files do not match it, or that belongs elsewhere: why, naming the file.
    Corrupt(String),
}

/// Part files whose SHA-256 is known, by path, with the size and modification time they had
/// when hashed: a file unchanged since is not read again. Kept in `.verified.json` by readers.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verified {
    files: BTreeMap<String, FileSum>,
    #[serde(skip)]
    changed: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct FileSum {
    bytes: u64,
    modified_ns: u128,
    sha256: String,
}

impl Verified {
    /// The cache of `dir` (empty when absent or unreadable: it only saves work).
    pub fn load(dir: &RunDir) -> Verified {
        read_input(&dir.verified())
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default()
    }

    /// Writes the cache back if it learned anything (best effort: a read-only run directory
    /// is still readable, just checked in full every time).
    pub fn save(&self, dir: &RunDir) {
        if self.changed
            && let Ok(json) = serde_json::to_string_pretty(self)
        {
            let _ = write_atomic(&dir.verified(), json.as_bytes());
        }
    }

    /// Whether `path` is a regular file of `bytes` bytes (when given) whose SHA-256 is `sha`.
    fn check(&mut self, path: &Path, sha: &str, bytes: Option<u64>) -> Result<(), String> {
        let meta = fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
        if !meta.is_file() {
            return Err(format!("{} is not a regular file", path.display()));
        }
        if let Some(b) = bytes.filter(|&b| b != meta.len()) {
            return Err(format!(
                "{} has {} bytes, its commit record says {b}",
                path.display(),
                meta.len()
            ));
        }
        let modified_ns = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        let key = path.display().to_string();
        let known = self
            .files
            .get(&key)
            .is_some_and(|f| f.bytes == meta.len() && f.modified_ns == modified_ns);
        let actual = if known {
            self.files[&key].sha256.clone()
        } else {
            let sha = sha256_file(path).map_err(|e| format!("{}: {e:#}", path.display()))?;
            self.files.insert(
                key,
                FileSum {
                    bytes: meta.len(),
                    modified_ns,
                    sha256: sha.clone(),
                },
            );
            self.changed = true;
            sha
        };
        if actual != sha {
            return Err(format!(
                "{} does not match its commit record (sha256 {actual}, recorded {sha})",
                path.display()
            ));
        }
        Ok(())
    }
}

/// What to do about a part file that does not match its record, or does not decode.
const ALTERED_HINT: &str = "the run directory was altered or two processes wrote it; run the part again (racksweep run --resume after removing its record) or the sweep with --force";

/// Decodes every page of every column of the Parquet file `path` (an error that reading only
/// the footer, or only some columns, would miss).
fn decode_parquet(path: &Path) -> Result<(), String> {
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let file = fs::File::open(path).map_err(|e| e.to_string())?;
    let batches = ParquetRecordBatchReaderBuilder::try_new(file)
        .and_then(|b| b.build())
        .map_err(|e| e.to_string())?;
    for batch in batches {
        batch.map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// SHA-256 (hex) of a file's bytes.
pub fn sha256_file(path: &Path) -> Result<String> {
    use sha2::{Digest, Sha256};
    let mut file = fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher).with_context(|| format!("reading {}", path.display()))?;
    Ok(format!("{:x}", hasher.finalize()))
}

/// A lock on a run directory, or on one part of it, held until dropped. `flock`, so the
/// operating system releases it when the process ends, however it ends.
#[derive(Debug)]
pub struct Lock {
    files: Vec<Held>,
}

/// One lock file held: its path, what it locks (for messages), and the file this process locked.
#[derive(Debug)]
struct Held {
    path: PathBuf,
    what: PathBuf,
    file: fs::File,
}

impl Lock {
    /// Every lock file is still the one this process locked. A lock file removed or replaced
    /// while held locks nothing: a second process would create and lock a new file at its path,
    /// and two processes would write the run. Checked before a writer removes or commits
    /// anything (a part's slot cleared, its record, a merge's frontier and manifest, a report's
    /// files), so one that lost its lock stops first (exit 1); its own temporaries are its
    /// caller's to remove.
    pub fn check(&self) -> Result<()> {
        for Held { path, what, file } in &self.files {
            if !same_file(file, path) {
                return Err(UserError::new(format!(
                    "{}, this process's lock on {}, was removed or replaced while it ran: another process may be writing there now, so this one stops without committing",
                    path.display(),
                    what.display()
                ))
                .with_hint("never remove a running racksweep's lock file; once no other racksweep writes the run, continue with --resume (committed parts are kept)")
                .into());
            }
        }
        Ok(())
    }
}

/// Whether `path` names the file `file` is open on (the same device and inode).
#[cfg(unix)]
fn same_file(file: &fs::File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    match (file.metadata(), fs::metadata(path)) {
        (Ok(held), Ok(named)) => held.dev() == named.dev() && held.ino() == named.ino(),
        _ => false,
    }
}

/// Whether `path` names the file `file` is open on: where files have no inode to compare, that
/// the path still exists (a lock file can then be replaced unnoticed, not removed).
#[cfg(not(unix))]
fn same_file(_file: &fs::File, path: &Path) -> bool {
    path.is_file()
}

impl RunDir {
    /// The run's lock file: beside the run directory, so that it outlives the directory's
    /// removal by `--force`.
    pub fn lock_path(&self) -> PathBuf {
        let name = self.root.file_name().map_or_else(
            || std::ffi::OsString::from("run"),
            std::ffi::OsStr::to_os_string,
        );
        let mut file = std::ffi::OsString::from(".");
        file.push(name);
        file.push(".lock");
        self.root.with_file_name(file)
    }

    fn part_lock_path(&self, s: Shard) -> PathBuf {
        self.parts_dir().join(format!(".{}.lock", part_name(s)))
    }

    fn verified(&self) -> PathBuf {
        self.root.join(".verified.json")
    }

    /// The run to oneself: for a whole run (which creates the folder the run lives in first),
    /// a merge or a report (of a run that exists).
    pub fn lock(&self) -> Result<Lock> {
        if !self.root.exists() && !self.lock_path().parent().is_none_or(Path::exists) {
            return Err(
                UserError::new(format!("{} does not exist", self.root.display()))
                    .with_hint("pass the directory `racksweep run` wrote: <out>/<sweep name>")
                    .into(),
            );
        }
        Ok(Lock {
            files: vec![acquire(self.lock_path(), false, &self.root)?],
        })
    }

    /// [`RunDir::lock`] of an existing run, for a merge or a report: a directory that is no
    /// run is refused before anything is created beside it.
    pub fn lock_existing(&self) -> Result<Lock> {
        if !self.sweep().is_file() {
            return Err(UserError::new(format!(
                "{} is not a racksweep run directory (it has no sweep.toml)",
                self.root.display()
            ))
            .with_hint("pass the directory `racksweep run` wrote: <out>/<sweep name>")
            .into());
        }
        self.lock()
    }

    /// One part to oneself, the run shared with its other shards (which run at the same time).
    /// Creates the run's folders as needed.
    pub fn lock_part(&self, s: Shard) -> Result<Lock> {
        for dir in [self.parts_dir(), self.configs_dir()] {
            fs::create_dir_all(&dir).map_err(|e| {
                UserError::new(format!("cannot create {}: {e}", dir.display()))
                    .with_hint("pass --out with a writable directory")
            })?;
        }
        Ok(Lock {
            files: vec![
                acquire(self.lock_path(), true, &self.root)?,
                acquire(self.part_lock_path(s), false, &self.configs(s))?,
            ],
        })
    }
}

/// Locks `path` (shared or exclusive) without waiting; refuses with the holder's pid, which an
/// exclusive holder writes into the file.
fn acquire(path: PathBuf, shared: bool, what: &Path) -> Result<Held> {
    let mut file = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .with_context(|| format!("opening the lock {}", path.display()))?;
    let locked = if shared {
        file.try_lock_shared()
    } else {
        file.try_lock()
    };
    match locked {
        Ok(()) => {}
        Err(fs::TryLockError::WouldBlock) => {
            let holder = fs::read_to_string(&path)
                .ok()
                .and_then(|t| t.trim().parse::<u32>().ok())
                .map_or_else(
                    || "another racksweep process".to_string(),
                    |pid| format!("racksweep (pid {pid})"),
                );
            return Err(UserError::new(format!(
                "{} is in use by {holder}",
                what.display()
            ))
            .with_hint(
                "one process writes a run (or a part of it) at a time: wait for it to finish or stop it (a stopped process releases its lock)",
            )
            .into());
        }
        Err(fs::TryLockError::Error(e)) => {
            return Err(e).with_context(|| format!("locking {}", path.display()));
        }
    }
    if !shared {
        file.set_len(0)?;
        file.write_all(std::process::id().to_string().as_bytes())?;
        file.sync_all()?;
    }
    Ok(Held {
        path,
        what: what.to_path_buf(),
        file,
    })
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

/// The temporary name a file is written under before being renamed into place: hidden, and
/// unique to the writing process (`.<name>.tmp.<pid>`), so that two processes never share one.
pub fn tmp_path(path: &Path) -> PathBuf {
    let mut name = tmp_prefix(path);
    name.push(std::process::id().to_string());
    path.with_file_name(name)
}

/// `.<name>.tmp.`: what every temporary of `path` starts with.
fn tmp_prefix(path: &Path) -> std::ffi::OsString {
    let mut name = std::ffi::OsString::from(".");
    name.push(path.file_name().expect("files have names"));
    name.push(".tmp.");
    name
}

/// Whether `candidate` is a temporary of `path`, by any process.
fn is_temporary_of(candidate: &Path, path: &Path) -> bool {
    candidate.parent() == path.parent()
        && candidate.file_name().is_some_and(|n| {
            n.to_string_lossy()
                .starts_with(&*tmp_prefix(path).to_string_lossy())
        })
}

/// The temporaries of `path` present in its folder.
fn temporaries(path: &Path) -> Result<Vec<PathBuf>> {
    let Some(dir) = path.parent() else {
        return Ok(Vec::new());
    };
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("listing {}", dir.display())),
    };
    let mut found = Vec::new();
    for entry in entries {
        let candidate = entry?.path();
        if is_temporary_of(&candidate, path) {
            found.push(candidate);
        }
    }
    Ok(found)
}

fn remove_if_present(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("removing {}", path.display())),
    }
}

/// Writes `bytes` to `path` atomically: a synced temporary file renamed into place.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    rename(&write_tmp(path, bytes)?, path)
}

/// `bytes` written and synced under `path`'s temporary name ([`tmp_path`]), which it returns.
fn write_tmp(path: &Path, bytes: &[u8]) -> Result<PathBuf> {
    let tmp = tmp_path(path);
    let mut file = fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    file.write_all(bytes)?;
    file.sync_all()?;
    Ok(tmp)
}

/// Writes `bytes` to `path` atomically unless a file is there, also one another process put
/// there a moment ago: the synced temporary is hard-linked into place, which fails where the
/// name exists (a rename would replace the file). Where the file system has no hard links, it is
/// renamed into place, as [`write_atomic`] does.
fn publish_new(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = write_tmp(path, bytes)?;
    match fs::hard_link(&tmp, path) {
        Ok(()) => {
            remove_if_present(&tmp)?;
            sync_parent(path)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => remove_if_present(&tmp),
        Err(_) => rename(&tmp, path),
    }
}

/// Renames a finished (synced) temporary file into place, and syncs the directory so that the
/// rename itself survives a power loss.
pub fn rename(tmp: &Path, path: &Path) -> Result<()> {
    fs::rename(tmp, path).with_context(|| format!("moving {} into place", path.display()))?;
    sync_parent(path)
}

/// Syncs the directory holding `path`, so that a name just put there survives a power loss.
fn sync_parent(path: &Path) -> Result<()> {
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

    /// A sweep published where another process has just published one keeps the other, and
    /// leaves no temporary behind; where none is, it is written.
    #[test]
    fn publish_new_never_replaces() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("sweep.toml");
        publish_new(&path, b"first").unwrap();
        publish_new(&path, b"second").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"first");
        let names: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["sweep.toml"]);
    }

    /// A lock is held while its file is the one locked: removed, or replaced by a new file at
    /// its path (a second process's), it is lost, and `check` names the file and what it locked.
    #[test]
    fn a_lock_is_lost_with_its_file() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = RunDir::new(tmp.path().join("r"));
        let lock = dir.lock().unwrap();
        lock.check().unwrap();
        let lost = format!(
            "{}, this process's lock on {}, was removed",
            dir.lock_path().display(),
            dir.root.display()
        );
        std::fs::remove_file(dir.lock_path()).unwrap();
        let e = lock.check().unwrap_err();
        assert!(e.to_string().starts_with(&lost), "{e}");
        let second = dir.lock().unwrap();
        second.check().unwrap();
        assert!(lock.check().unwrap_err().to_string().starts_with(&lost));
    }

    /// A removal moves the run aside under a name no earlier removal left (the remains of a
    /// failed one, here under this very pid), removes it, and touches nothing else.
    #[test]
    fn remove_moves_aside_past_earlier_remains() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = RunDir::new(tmp.path().join("r"));
        dir.create("name = \"r\"\n").unwrap();
        std::fs::write(dir.configs_dir().join("part-0-of-1.parquet"), b"rows").unwrap();
        let pid = std::process::id();
        let earlier = tmp.path().join(format!(".r.removing-{pid}"));
        std::fs::create_dir(&earlier).unwrap();
        std::fs::write(earlier.join("kept"), b"").unwrap();
        dir.remove().unwrap();
        assert!(!dir.root.exists());
        assert!(earlier.join("kept").exists(), "earlier remains untouched");
        let mut left: Vec<String> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, [format!(".r.removing-{pid}")]);
    }

    /// The remains of earlier removals of this run (directories `.r.removing-<pid>[-<n>]`, as
    /// a killed `--force` leaves them) are removed, contents and all; a file of that name,
    /// other runs' remains (`rr`, `other`, and `r.removing-5`, whose name starts as `r`'s
    /// remains do), a name without a pid and the run itself are not touched.
    #[test]
    fn remove_remains_clears_this_runs_remains_only() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = RunDir::new(tmp.path().join("r"));
        dir.create("name = \"r\"\n").unwrap();
        for remains in [".r.removing-4242", ".r.removing-4242-1"] {
            let nested = tmp.path().join(remains).join("configs");
            std::fs::create_dir_all(&nested).unwrap();
            std::fs::write(nested.join("part-0-of-1.parquet"), b"rows").unwrap();
        }
        std::fs::write(tmp.path().join(".r.removing-7"), b"a file").unwrap();
        for other in [
            ".rr.removing-7",
            ".other.removing-7",
            ".r.removing-5.removing-7",
            ".r.removing-x",
        ] {
            std::fs::create_dir(tmp.path().join(other)).unwrap();
        }
        assert_eq!(dir.remove_remains(), Vec::<String>::new());
        let mut left: Vec<String> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                ".other.removing-7",
                ".r.removing-5.removing-7",
                ".r.removing-7",
                ".r.removing-x",
                ".rr.removing-7",
                "r"
            ]
        );
        assert!(dir.sweep().is_file());
    }

    #[test]
    fn names() {
        let dir = RunDir::new(PathBuf::from("r"));
        let s = Shard { index: 3, count: 8 };
        assert_eq!(dir.configs(s), Path::new("r/configs/part-3-of-8.parquet"));
        assert_eq!(dir.record(s), Path::new("r/parts/part-3-of-8.json"));
        assert_eq!(
            tmp_path(&dir.record(s)),
            PathBuf::from(format!(
                "r/parts/.part-3-of-8.json.tmp.{}",
                std::process::id()
            ))
        );
        assert!(is_temporary_of(
            Path::new("r/parts/.part-3-of-8.json.tmp.77"),
            &dir.record(s)
        ));
        assert!(!is_temporary_of(
            Path::new("r/parts/.part-3-of-8.json.tmpx"),
            &dir.record(s)
        ));
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
        fs::write(dir.parts_dir().join(".part-0-of-2.json.tmp.9"), "").unwrap();
        assert!(!dir.never_started().unwrap());
        fs::remove_file(dir.parts_dir().join(".part-0-of-2.json.tmp.9")).unwrap();
        // Another process's temporary of sweep.toml is still a start that never got further.
        fs::write(dir.root.join(".sweep.toml.tmp.12345"), "half").unwrap();
        assert!(dir.never_started().unwrap());
        fs::write(dir.root.join("notes.txt"), "").unwrap();
        assert!(!dir.never_started().unwrap());
        fs::remove_file(dir.root.join("notes.txt")).unwrap();
        dir.create("[sweep]\n").unwrap();
        assert!(!dir.never_started().unwrap());
    }
}
