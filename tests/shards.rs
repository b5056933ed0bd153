//! Sharding, merging and resuming, as a cluster scheduler and a crash would exercise them: the
//! merged output of any split equals a single-process run, an interrupted run is never taken for
//! a complete one, and resuming after `kill -9` at any moment yields exactly the files of an
//! uninterrupted run.

mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{
    bin, column_u64, finished, part_files, read_configs, read_parquet, root, run, single_rows,
    stderr,
};
use proptest::prelude::*;

const SMALL: &str = "sweeps/quickstart.toml";
const BIG: &str = "tests/specs/resume.toml";

fn ok(args: &[&str]) {
    let o = run(args);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
}

/// Shard `k` of `n` of the small sweep, into `out`.
fn small_shard(out: &str, k: u64, n: u64) {
    ok(&[
        "run",
        SMALL,
        "--quiet",
        "--shard",
        &format!("{k}/{n}"),
        "--out",
        out,
    ]);
}

fn manifest(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap()
}

/// Every output file whose bytes must not depend on how the run was scheduled: the part files,
/// the parts' frontiers, the run's frontier.
fn deterministic_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = part_files(&dir.join("configs"), ".parquet");
    files.extend(part_files(&dir.join("parts"), ".pareto.parquet"));
    files.extend([dir.join("pareto.parquet"), dir.join("pareto.md")]);
    files
}

/// The parts' commit records without what depends on the clock.
fn records(dir: &Path) -> Vec<serde_json::Value> {
    part_files(&dir.join("parts"), ".json")
        .iter()
        .map(|p| {
            let mut v: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
            for key in ["wall_time_s", "finished_at", "threads"] {
                v.as_object_mut().unwrap().remove(key);
            }
            v
        })
        .collect()
}

fn assert_same_run(a: &Path, b: &Path) {
    let files = deterministic_files(a);
    assert_eq!(
        files.len(),
        deterministic_files(b).len(),
        "same number of parts"
    );
    for f in files {
        let g = b.join(f.strip_prefix(a).unwrap());
        assert!(
            std::fs::read(&f).unwrap() == std::fs::read(&g).unwrap(),
            "{} differs",
            f.display()
        );
    }
    assert_eq!(records(a), records(b));
    let (ma, mb) = (manifest(a), manifest(b));
    for key in [
        "configurations",
        "rows_written",
        "feasible",
        "infeasible",
        "frontier_size",
        "parts",
        "complete",
    ] {
        assert_eq!(ma[key], mb[key], "manifest {key}");
    }
}

fn single_run(out: &Path, sweep: &str, extra: &[&str]) -> PathBuf {
    let mut args = vec!["run", sweep, "--quiet", "--out", out.to_str().unwrap()];
    args.extend(extra);
    ok(&args);
    out.join(name_of(sweep))
}

/// BIG's parts: small enough that a run of it commits several.
const BIG_PARTS: [&str; 2] = ["--part-rows", "40000"];

/// An uninterrupted run of BIG in `tmp`, the run the others must equal byte for byte.
fn big_reference(tmp: &Path) -> PathBuf {
    single_run(&tmp.join("reference"), BIG, &BIG_PARTS)
}

/// The command of a whole run of BIG into `out`, resumed if there is one (stderr the caller's).
fn big_run(out: &Path) -> std::process::Command {
    let mut command = bin();
    command
        .args(["run", BIG, "--quiet", "--resume"])
        .args(BIG_PARTS)
        .args(["--out", out.to_str().unwrap()])
        .current_dir(root())
        .stdout(Stdio::null());
    command
}

fn name_of(sweep: &str) -> String {
    let text = std::fs::read_to_string(root().join(sweep)).unwrap();
    let v: toml::Table = text.parse().unwrap();
    v["sweep"]["name"].as_str().unwrap().to_string()
}

fn sharded_run(out: &Path, sweep: &str, n: u64, extra: &[&str]) -> PathBuf {
    // Shards in reverse order: completion order does not matter.
    for k in (0..n).rev() {
        let shard = format!("{k}/{n}");
        let mut args = vec![
            "run",
            sweep,
            "--quiet",
            "--shard",
            &shard,
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend(extra);
        ok(&args);
    }
    let dir = out.join(name_of(sweep));
    assert!(
        !dir.join("manifest.json").exists(),
        "shards leave the manifest to the merge"
    );
    ok(&["merge", dir.to_str().unwrap(), "--quiet"]);
    dir
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]

    /// Any split, merged, has the rows and the frontier of a single-process run.
    #[test]
    fn merged_shards_equal_a_single_run(n in 1u64..12, feasible_only in any::<bool>()) {
        let tmp = tempfile::tempdir().unwrap();
        let extra: &[&str] = if feasible_only { &["--feasible-only"] } else { &[] };
        let single = single_run(&tmp.path().join("single"), SMALL, extra);
        let merged = sharded_run(&tmp.path().join("sharded"), SMALL, n, extra);
        prop_assert_eq!(
            single_rows(&read_configs(&single)),
            single_rows(&read_configs(&merged))
        );
        for f in ["pareto.parquet", "pareto.md"] {
            prop_assert!(std::fs::read(single.join(f)).unwrap() == std::fs::read(merged.join(f)).unwrap(), "{}", f);
        }
        let (ms, mm) = (manifest(&single), manifest(&merged));
        for key in ["configurations", "rows_written", "feasible", "infeasible", "frontier_size", "complete"] {
            prop_assert_eq!(&ms[key], &mm[key], "{}", key);
        }
        prop_assert_eq!(&mm["parts"], n);
    }
}

#[test]
fn more_shards_than_points_and_shard_auto() {
    let tmp = tempfile::tempdir().unwrap();
    let sweep = tmp.path().join("tiny.toml");
    std::fs::write(
        &sweep,
        "[sweep]\nname = \"tiny\"\n[workload]\nmodel = \"llama-3.1-8b\"\ninput_tokens = 512\noutput_tokens = 128\n\
         [grid]\nhardware = [\"h100-sxm\"]\ntp = [1]\nbatch = [1, 8, 64]\n",
    )
    .unwrap();
    let out = tmp.path().join("out");
    // An array 0..4 (sbatch --array=0-4) is shards 0..4 of 5.
    let task = |id: u64, min: u64, max: u64, count: u64, extra: &[&str]| {
        bin()
            .args(["run", sweep.to_str().unwrap(), "--quiet", "--shard", "auto"])
            .args(["--out", out.to_str().unwrap()])
            .args(extra)
            .env("SLURM_ARRAY_TASK_ID", id.to_string())
            .env("SLURM_ARRAY_TASK_MIN", min.to_string())
            .env("SLURM_ARRAY_TASK_MAX", max.to_string())
            .env("SLURM_ARRAY_TASK_COUNT", count.to_string())
            .output()
            .unwrap()
    };
    for id in [0, 1, 4] {
        let o = task(id, 0, 4, 5, &[]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    // Resubmitting the missing tasks alone (--array=2-3) needs the count.
    let o = task(2, 2, 3, 2, &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("pass --shard-count N"),
        "{}",
        stderr(&o)
    );
    for id in [2, 3] {
        let o = task(id, 2, 3, 2, &["--shard-count", "5"]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let dir = out.join("tiny");
    assert_eq!(part_files(&dir.join("configs"), ".parquet").len(), 5);
    ok(&["merge", dir.to_str().unwrap(), "--quiet"]);
    let m = manifest(&dir);
    assert_eq!(m["configurations"], 3);
    assert_eq!(m["complete"], true);
    let ids = column_u64(&read_configs(&dir), "config_id");
    assert_eq!(ids, [0, 1, 2]);
    // Empty parts are valid Parquet files with the schema and no rows.
    let (empty, _) = read_parquet(&dir.join("configs/part-0-of-5.parquet"));
    assert!(empty.iter().all(|b| b.num_rows() == 0));
}

#[test]
fn merge_refuses_missing_mixed_and_foreign_parts() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().to_str().unwrap();
    for k in [0, 2] {
        small_shard(out, k, 3);
    }
    let dir = tmp.path().join("quickstart");
    let o = run(&["merge", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("part is 1 of 3 missing or incomplete"),
        "{}",
        stderr(&o)
    );
    assert!(
        stderr(&o).contains("--shard K/3 --resume"),
        "{}",
        stderr(&o)
    );
    assert!(!dir.join("manifest.json").exists());

    // A part written by another split cannot join this run.
    let o = run(&["run", SMALL, "--quiet", "--shard", "1/4", "--out", out]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("split different ways (of-3, of-4)"),
        "{}",
        stderr(&o)
    );

    // A committed part is kept with --resume, refused without, rewritten with --force.
    let o = run(&["run", SMALL, "--quiet", "--shard", "0/3", "--out", out]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("already written"), "{}", stderr(&o));
    ok(&[
        "run", SMALL, "--quiet", "--shard", "0/3", "--resume", "--out", out,
    ]);
    ok(&[
        "run", SMALL, "--quiet", "--shard", "0/3", "--force", "--out", out,
    ]);

    // A different sweep of the same name cannot write into the run, with --force or without
    // (a shard's --force rewrites only its own part): the hint says where to go instead.
    let other = tmp.path().join("other.toml");
    let text = std::fs::read_to_string(root().join(SMALL)).unwrap();
    std::fs::write(&other, text.replace("batch = ", "batch = [3]\n# ")).unwrap();
    let other = other.to_str().unwrap();
    for force in [&[][..], &["--force"]] {
        let args = [
            &["run", other, "--quiet", "--shard", "1/3", "--out", out],
            force,
        ]
        .concat();
        let o = run(&args);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {e}");
        assert!(e.contains("a different sweep"), "{e}");
        assert!(
            e.contains(
                "hint: run it with the same sweep file, or write this shard elsewhere with --out"
            ),
            "{e}"
        );
        assert!(!e.contains("pass --force"), "{e}");
    }

    // A part file that no longer matches its record (truncated, or 64 bytes overwritten in
    // place) is refused by name, by the merge and by --resume, until its record is removed.
    ok(&["run", SMALL, "--quiet", "--shard", "1/3", "--out", out]);
    let part = dir.join("configs/part-2-of-3.parquet");
    let good = std::fs::read(&part).unwrap();
    let mut flipped = good.clone();
    for b in &mut flipped[4000..4064] {
        *b ^= 0x5a;
    }
    for (bytes, says) in [
        (good[..good.len() / 2].to_vec(), "its commit record says"),
        (flipped, "does not match its commit record"),
    ] {
        std::fs::write(&part, bytes).unwrap();
        let o = run(&["merge", dir.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert!(
            stderr(&o).contains("part 2/3: ") && stderr(&o).contains(says),
            "{}",
            stderr(&o)
        );
        let o = run(&[
            "run", SMALL, "--quiet", "--shard", "2/3", "--resume", "--out", out,
        ]);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert!(stderr(&o).contains("part 2/3: "), "{}", stderr(&o));
    }
    std::fs::remove_file(dir.join("parts/part-2-of-3.json")).unwrap();
    ok(&[
        "run", SMALL, "--quiet", "--shard", "2/3", "--resume", "--out", out,
    ]);
    // An edited commit record names other frontier rows than its frontier file holds.
    let record = dir.join("parts/part-1-of-3.json");
    let text = std::fs::read_to_string(&record).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["frontier_config_ids"].as_array_mut().unwrap().pop();
    std::fs::write(&record, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    let o = run(&["merge", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("names other frontier rows"),
        "{}",
        stderr(&o)
    );
    std::fs::write(&record, text).unwrap();
    ok(&["merge", dir.to_str().unwrap(), "--quiet"]);

    let o = run(&["merge", tmp.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("not a racksweep run directory"),
        "{}",
        stderr(&o)
    );
}

/// A seed from the clock, printed so that a failure can be replayed.
#[expect(
    clippy::print_stderr,
    reason = "the seed is printed with the test's output so that a failure can be replayed"
)]
fn seed() -> u64 {
    let seed = std::env::var("RACKSWEEP_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    eprintln!("RACKSWEEP_TEST_SEED={seed}");
    seed
}

fn next(state: &mut u64) -> f64 {
    // xorshift64*
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    (state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
}

/// Starts a big run and kills it (SIGKILL, or SIGINT) `after` into it; returns its exit status.
fn interrupt(out: &Path, after: Duration, signal: &str) -> std::process::ExitStatus {
    let mut child = big_run(out).stderr(Stdio::null()).spawn().unwrap();
    std::thread::sleep(after);
    let killed = std::process::Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success() || child.try_wait().unwrap().is_some());
    child.wait().unwrap()
}

#[test]
fn kill_9_at_any_moment_then_resume_gives_the_uninterrupted_output() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = Instant::now();
    let reference = big_reference(tmp.path());
    let full = clock.elapsed();
    let mut state = seed() | 1;
    for attempt in 0..4 {
        let out = tmp.path().join(format!("killed-{attempt}"));
        // Kill once or twice at random moments of the run (a resumed run can die too).
        for _ in 0..=attempt % 2 {
            let after = full.mul_f64(next(&mut state));
            interrupt(&out, after, "-KILL");
            if let Ok(text) = std::fs::read_to_string(out.join("resume/manifest.json")) {
                let m: serde_json::Value = serde_json::from_str(&text).unwrap();
                assert!(
                    m["complete"] == true || m["parts_committed"].as_u64() < m["parts"].as_u64(),
                    "an interrupted run says it is incomplete"
                );
            }
        }
        let dir = single_run(&out, BIG, &[&BIG_PARTS[..], &["--resume"]].concat());
        assert_eq!(manifest(&dir)["complete"], true);
        assert_same_run(&reference, &dir);
        let leftovers: Vec<_> = walk(&dir)
            .into_iter()
            .filter(|p| p.file_name().unwrap().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }
}

#[test]
fn sigint_stops_cleanly_and_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let reference = big_reference(tmp.path());
    let out = tmp.path().join("stopped");
    let status = interrupt(&out, Duration::from_millis(300), "-INT");
    let dir = out.join("resume");
    if status.success() {
        // The run finished before the signal arrived (a very fast machine): nothing to check.
        assert_eq!(manifest(&dir)["complete"], true);
        return;
    }
    assert_eq!(status.code(), Some(130), "128 + SIGINT");
    let m = manifest(&dir);
    assert_eq!(m["complete"], false);
    assert!(m["parts_committed"].as_u64().unwrap() < 27);
    assert_eq!(
        part_files(&dir.join("configs"), ".parquet").len() as u64,
        m["parts_committed"].as_u64().unwrap(),
        "the part in flight is dropped"
    );
    // A plain rerun refuses to overwrite it; --resume completes it.
    let out_arg = ["--out", out.to_str().unwrap()];
    let o = run(&[&["run", BIG, "--quiet"][..], &BIG_PARTS, &out_arg].concat());
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("pass --resume to continue it"),
        "{}",
        stderr(&o)
    );
    single_run(&out, BIG, &[&BIG_PARTS[..], &["--resume"]].concat());
    assert_same_run(&reference, &dir);
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files.extend(walk(&p));
        } else {
            files.push(p);
        }
    }
    files
}

/// Holds `path`'s lock, as another racksweep process would, until dropped.
fn hold(path: &Path) -> std::fs::File {
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .unwrap();
    f.try_lock().expect("the lock is free");
    std::fs::write(path, "4242").unwrap();
    f
}

/// One writer per run directory. While another process holds the run (here the test holds its
/// lock), a whole run, a merge and a report are refused, naming that process; while another
/// holds a shard's part, a duplicate of the shard's task is refused and the other shards go on;
/// a committed shard requeued with --resume is a no-op.
#[test]
fn one_writer_per_run_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().to_str().unwrap();
    ok(&["run", SMALL, "--quiet", "--out", out]);
    let dir = tmp.path().join("quickstart");
    let refused = |args: &[&str]| {
        let o = run(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("is in use by racksweep (pid 4242)"),
            "{args:?}: {}",
            stderr(&o)
        );
    };
    {
        let _held = hold(&tmp.path().join(".quickstart.lock"));
        refused(&["run", SMALL, "--quiet", "--resume", "--out", out]);
        refused(&["run", SMALL, "--quiet", "--force", "--out", out]);
        refused(&["merge", dir.to_str().unwrap()]);
        refused(&["report", dir.to_str().unwrap()]);
        refused(&["run", SMALL, "--quiet", "--shard", "0/2", "--out", out]);
        // Readers read.
        ok(&["top", dir.to_str().unwrap(), "--by", "tokens_per_s_per_gpu"]);
    }
    ok(&["run", SMALL, "--quiet", "--force", "--out", out]);

    let shards = tmp.path().join("shards");
    let s = shards.to_str().unwrap();
    let parts = shards.join("quickstart/parts");
    std::fs::create_dir_all(&parts).unwrap();
    {
        let _held = hold(&parts.join(".part-0-of-2.lock"));
        refused(&["run", SMALL, "--quiet", "--shard", "0/2", "--out", s]);
        ok(&["run", SMALL, "--quiet", "--shard", "1/2", "--out", s]);
    }
    ok(&["run", SMALL, "--quiet", "--shard", "0/2", "--out", s]);
    let record = std::fs::read(parts.join("part-0-of-2.json")).unwrap();
    let o = run(&["run", SMALL, "--shard", "0/2", "--resume", "--out", s]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("kept committed"), "{}", stderr(&o));
    assert_eq!(
        std::fs::read(parts.join("part-0-of-2.json")).unwrap(),
        record
    );
    ok(&[
        "merge",
        shards.join("quickstart").to_str().unwrap(),
        "--quiet",
    ]);
    for f in ["pareto.parquet", "pareto.md"] {
        let read = |d: &Path| std::fs::read(d.join(f)).unwrap();
        assert!(read(&dir) == read(&shards.join("quickstart")), "{f}");
    }
}

/// A whole run of BIG into `out`, resumed if there is one, its stderr piped.
fn big_writer(out: &Path) -> std::process::Child {
    big_run(out).stderr(Stdio::piped()).spawn().unwrap()
}

/// Waits until `writer` holds the run in `out` (its pid in the lock file).
fn holds_the_run(out: &Path, writer: &std::process::Child) {
    let lock = out.join(".resume.lock");
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::fs::read_to_string(&lock).unwrap_or_default() != writer.id().to_string() {
        assert!(Instant::now() < deadline, "the writer never took its lock");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Two real writers on one directory, and one killed: the second is refused while the first
/// runs (or, if the first was done, finds the run complete), a killed writer releases the run
/// to `--resume`, and the final run is byte for byte a clean one; never a corrupt complete run.
#[test]
fn two_writers_and_a_kill_leave_a_clean_run() {
    let tmp = tempfile::tempdir().unwrap();
    let reference = big_reference(tmp.path());
    for kill in [false, true] {
        let out = tmp.path().join(if kill { "killed" } else { "raced" });
        let mut first = big_writer(&out);
        holds_the_run(&out, &first);
        if kill {
            first.kill().unwrap();
            first.wait().unwrap();
        }
        let second = big_writer(&out).wait_with_output().unwrap();
        let first_done = first.wait_with_output().unwrap();
        if kill {
            assert!(second.status.success(), "{}", stderr(&second));
        } else {
            assert!(first_done.status.success(), "{}", stderr(&first_done));
            match second.status.code() {
                Some(0) => {}
                Some(1) => assert!(
                    stderr(&second).contains("is in use by racksweep (pid"),
                    "{}",
                    stderr(&second)
                ),
                other => panic!("second writer exited {other:?}: {}", stderr(&second)),
            }
        }
        let dir = out.join("resume");
        assert_eq!(manifest(&dir)["complete"], true);
        assert_same_run(&reference, &dir);
        ok(&["merge", dir.to_str().unwrap(), "--quiet"]);
    }
}

/// Shards of two different sweeps of one name, started at the same instant into one `--out`:
/// both see no `sweep.toml`, both write theirs. The first written must stay and the other shard
/// be refused by it; a `sweep.toml` replaced after the first shard checked it let both run (8
/// of 40 attempts here before), leaving parts of two sweeps that only `merge` refused.
#[test]
fn shards_of_two_sweeps_started_together_are_never_both_accepted() {
    let tmp = tempfile::tempdir().unwrap();
    let a = root().join("tests/specs/ties.toml");
    let b = tmp.path().join("ties.toml");
    let text = std::fs::read_to_string(&a).unwrap();
    std::fs::write(
        &b,
        text.replace("input_tokens = 1024", "input_tokens = 2048"),
    )
    .unwrap();
    for attempt in 0..20 {
        let out = tmp.path().join(format!("out-{attempt}"));
        let shard = |sweep: &Path, k: &str| {
            bin()
                .args(["run", sweep.to_str().unwrap(), "--shard", k, "--quiet"])
                .args(["--out", out.to_str().unwrap()])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        };
        let (first, second) = (shard(&a, "0/2"), shard(&b, "1/2"));
        let outcomes = [
            first.wait_with_output().unwrap(),
            second.wait_with_output().unwrap(),
        ];
        let accepted = outcomes.iter().filter(|o| o.status.success()).count();
        assert_eq!(accepted, 1, "attempt {attempt}: both shards ran");
        let refused = outcomes.iter().find(|o| !o.status.success()).unwrap();
        assert_eq!(refused.status.code(), Some(1), "{}", stderr(refused));
        assert!(
            stderr(refused).contains("holds a run of a different sweep"),
            "{}",
            stderr(refused)
        );
    }
}

/// A writer whose lock file is removed while it runs lets a second writer in (the second locks
/// a new file at the path). The first notices before its next commit and stops without
/// committing (exit 1: the lock's message, or an I/O error where the second removed its
/// temporaries first); the second completes the run, byte for byte a clean one.
#[test]
fn a_writer_whose_lock_is_removed_stops_before_committing() {
    let tmp = tempfile::tempdir().unwrap();
    let reference = big_reference(tmp.path());
    let out = tmp.path().join("unlocked");
    let lock = out.join(".resume.lock");
    let first = big_writer(&out);
    holds_the_run(&out, &first);
    std::fs::remove_file(&lock).unwrap();
    let second = big_writer(&out).wait_with_output().unwrap();
    let first = first.wait_with_output().unwrap();
    assert!(second.status.success(), "{}", stderr(&second));
    assert_eq!(first.status.code(), Some(1), "{}", stderr(&first));
    let lost = format!(
        "error: {}, this process's lock on {}, was removed or replaced while it ran",
        lock.display(),
        out.join("resume").display()
    );
    assert!(
        stderr(&first).starts_with(&lost) || stderr(&first).contains("No such file"),
        "{}",
        stderr(&first)
    );
    let dir = out.join("resume");
    assert_eq!(manifest(&dir)["complete"], true);
    assert_same_run(&reference, &dir);
}

/// Runs racksweep with `args`, failing the test if it is still running after 20 s (a reader
/// blocked on a FIFO).
fn without_blocking(args: &[&str]) -> std::process::Output {
    let mut child = bin()
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("{args:?} waited on a FIFO");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

/// `top`, `pareto` and `report` read only what `merge` would accept: a complete run, no
/// stranger in `configs/`, every part matching its record (also a FIFO named like a part is
/// refused, not waited on); an incomplete run with --allow-incomplete, saying so.
#[test]
fn readers_refuse_what_merge_refuses() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().to_str().unwrap();
    ok(&["run", SMALL, "--quiet", "--part-rows", "1000", "--out", out]);
    let dir = tmp.path().join("quickstart");
    let d = dir.to_str().unwrap();
    let readers: [&[&str]; 3] = [
        &["top", d, "--by", "tokens_per_s_per_gpu"],
        &["pareto", d, "--objective", "max tokens_per_s_per_gpu"],
        &["report", d],
    ];
    let all_refuse = |says: &str| {
        for args in readers {
            let o = run(args);
            assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
            assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
        }
    };
    for args in readers {
        ok(args);
    }
    // A copy of a part would double its rows.
    let copy = dir.join("configs/part-0-of-4 (copy).parquet");
    std::fs::copy(dir.join("configs/part-0-of-4.parquet"), &copy).unwrap();
    all_refuse("is not a part of this run");
    std::fs::remove_file(&copy).unwrap();
    // 64 bytes overwritten in place: same size, other contents.
    let part = dir.join("configs/part-1-of-4.parquet");
    let good = std::fs::read(&part).unwrap();
    let mut bad = good.clone();
    for b in &mut bad[3000..3064] {
        *b ^= 0x33;
    }
    std::fs::write(&part, &bad).unwrap();
    all_refuse("part 1/4: ");
    std::fs::write(&part, &good).unwrap();
    // A complete manifest whose part is not committed.
    let record = dir.join("parts/part-3-of-4.json");
    let text = std::fs::read_to_string(&record).unwrap();
    std::fs::remove_file(&record).unwrap();
    all_refuse("part 3 of 4 is not committed");
    std::fs::write(&record, &text).unwrap();
    // An interrupted run: refused, or read with --allow-incomplete, saying so.
    let m = dir.join("manifest.json");
    let complete = std::fs::read_to_string(&m).unwrap();
    std::fs::write(
        &m,
        complete.replace("\"complete\": true", "\"complete\": false"),
    )
    .unwrap();
    all_refuse("is not complete");
    let o = run(&[
        "top",
        d,
        "--by",
        "tokens_per_s_per_gpu",
        "--allow-incomplete",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("warning: reading a run"),
        "{}",
        stderr(&o)
    );
    std::fs::write(&m, &complete).unwrap();
    // A FIFO named like a part: refused at once, never opened.
    let fifo = dir.join("configs/part-2-of-4.parquet");
    std::fs::remove_file(&fifo).unwrap();
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let o = without_blocking(&["top", d, "--by", "tokens_per_s_per_gpu"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("is not a regular file"),
        "{}",
        stderr(&o)
    );
}

/// A run whose `sweep.toml` became a device (`/dev/zero`, which never ends) is refused at once
/// by every command, never read: a resumed run, a resumed shard (each with the hint its own
/// `--force` or `--out` deserves), a merge and the readers (a resumed run used to read it until
/// memory ran out).
#[test]
fn a_sweep_that_is_a_device_is_refused_at_once() {
    let (tmp, dir) = finished("tests/specs/ties.toml", "ties");
    let sweep = dir.join("sweep.toml");
    std::fs::remove_file(&sweep).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &sweep).unwrap();
    let (out, d) = (tmp.path().to_str().unwrap(), dir.to_str().unwrap());
    let spec = root().join("tests/specs/ties.toml");
    let spec = spec.to_str().unwrap();
    let not_a_run = format!("error: {d} is not a racksweep run directory (");
    for (args, hint) in [
        (
            vec!["run", spec, "--out", out, "--resume"],
            "hint: pass --force to start over",
        ),
        (
            vec!["run", spec, "--out", out, "--shard", "0/1", "--resume"],
            "hint: write this shard elsewhere with --out",
        ),
        (vec!["merge", d], "hint: pass the directory"),
        (vec!["report", d], "hint: pass the directory"),
        (
            vec!["top", d, "--by", "tokens_per_s_per_gpu"],
            "hint: pass the directory",
        ),
    ] {
        let o = without_blocking(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).starts_with(&not_a_run),
            "{args:?}: {}",
            stderr(&o)
        );
        assert!(stderr(&o).contains(hint), "{args:?}: {}", stderr(&o));
    }
}

/// What a merge trusts in a part's commit record is checked against the grid: a record copied
/// from another part, or with edited counts, would lose or repeat configurations (merge accepted
/// both and wrote a complete manifest). A stray file in `configs/` would be read as rows; a FIFO
/// in place of a record would block the merge. A part written again in a merged run leaves it
/// unmerged (no manifest) until the next merge, instead of complete with other rows.
#[test]
fn merge_checks_what_records_say() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().to_str().unwrap();
    for k in 0..3 {
        small_shard(out, k, 3);
    }
    let dir = tmp.path().join("quickstart");
    let d = dir.to_str().unwrap();
    let refused = |says: &str| {
        let o = run(&["merge", d]);
        assert_eq!(o.status.code(), Some(1), "{says}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{says}: {}", stderr(&o));
    };
    let files = |k: u64| {
        [
            dir.join(format!("configs/part-{k}-of-3.parquet")),
            dir.join(format!("parts/part-{k}-of-3.pareto.parquet")),
            dir.join(format!("parts/part-{k}-of-3.json")),
        ]
    };
    let originals: Vec<Vec<u8>> = files(1).iter().map(|f| std::fs::read(f).unwrap()).collect();
    let restore = || {
        for (f, bytes) in files(1).iter().zip(&originals) {
            let _ = std::fs::remove_file(f);
            std::fs::write(f, bytes).unwrap();
        }
    };
    let record = |edit: &dyn Fn(&mut serde_json::Value)| {
        let mut v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&files(1)[2]).unwrap()).unwrap();
        edit(&mut v);
        std::fs::write(&files(1)[2], serde_json::to_string_pretty(&v).unwrap()).unwrap();
    };
    let range = |v: &serde_json::Value| {
        (
            v["first_config_id"].as_u64().unwrap(),
            v["end_config_id"].as_u64().unwrap(),
        )
    };
    let own: serde_json::Value = serde_json::from_slice(&originals[2]).unwrap();
    let (start, end) = range(&own);
    // Part 0's files and record under part 1's names, the record renumbered.
    for (from, to) in files(0).iter().zip(files(1)) {
        std::fs::copy(from, to).unwrap();
    }
    record(&|v| v["part"] = 1.into());
    refused(&format!(
        "covers configurations 0..{start}, where part 1/3 of the grid is {start}..{end}"
    ));
    restore();
    record(&|v| v["first_config_id"] = 0.into());
    refused("covers configurations 0..");
    restore();
    record(&|v| v["feasible"] = (v["feasible"].as_u64().unwrap() - 100).into());
    refused("infeasible configurations, not its");
    restore();
    record(&|v| v["rows_written"] = 1.into());
    refused("says 1 rows written");
    restore();
    // 100 configurations moved from feasible to a reason, the counts still adding up: the part
    // file's footer (rows, and the reason column's nulls) disagrees.
    let feasible = own["feasible"].as_u64().unwrap();
    record(&|v| {
        v["feasible"] = (feasible - 100).into();
        let moved = v["infeasible"]["does_not_fit"].as_u64().unwrap_or(0) + 100;
        v["infeasible"]["does_not_fit"] = moved.into();
    });
    refused(&format!(
        "{} says {} rows written and {} feasible, where {} holds {} rows, {feasible} of them feasible",
        files(1)[2].display(),
        own["rows_written"],
        feasible - 100,
        files(1)[0].display(),
        own["rows_written"]
    ));
    restore();
    // Configurations moved between two reasons, feasible and the total unchanged: the part file
    // keeps its counts per reason in its footer, bound to the record by its checksum.
    let reasons: std::collections::BTreeMap<String, u64> = own["infeasible"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, n)| (k.clone(), n.as_u64().unwrap()))
        .collect();
    let (from, count) = reasons
        .iter()
        .max_by_key(|(_, n)| **n)
        .map(|(k, n)| (k.clone(), *n))
        .expect("part 1 has infeasible configurations");
    let to = if from == "does_not_fit" {
        "dtype_unsupported"
    } else {
        "does_not_fit"
    };
    let mut moved = reasons.clone();
    moved.remove(&from);
    *moved.entry(to.to_string()).or_default() += count;
    record(&|v| {
        v["infeasible"] = serde_json::to_value(&moved).unwrap();
    });
    let listed = |m: &std::collections::BTreeMap<String, u64>| {
        m.iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    refused(&format!(
        "counts {} configurations by infeasible reason, where {} holds {}",
        listed(&moved),
        files(1)[0].display(),
        listed(&reasons)
    ));
    restore();
    // A stray copy of a part among the parts.
    let copy = dir.join("configs/copy.parquet");
    std::fs::copy(&files(0)[0], &copy).unwrap();
    refused("is not a part of this run");
    std::fs::remove_file(&copy).unwrap();
    // A FIFO in place of a record: refused at once, never opened.
    std::fs::remove_file(&files(1)[2]).unwrap();
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&files(1)[2])
            .status()
            .unwrap()
            .success()
    );
    let o = without_blocking(&["merge", d]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("not a regular file"), "{}", stderr(&o));
    restore();
    ok(&["merge", d, "--quiet"]);
    assert_eq!(manifest(&dir)["complete"], true);
    // Part 0 written again, now without its infeasible rows: the run is no longer merged.
    ok(&[
        "run",
        SMALL,
        "--quiet",
        "--shard",
        "0/3",
        "--force",
        "--feasible-only",
        "--out",
        out,
    ]);
    assert!(!dir.join("manifest.json").exists());
    assert!(!dir.join("pareto.parquet").exists());
    let o = run(&["top", d, "--by", "tokens_per_s_per_gpu"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("is not finished"), "{}", stderr(&o));
    refused("some parts were run with --feasible-only and some without");
}

/// `--force` replaces a run and nothing else: a directory of someone's files, or a file, named
/// like the sweep is refused and left as it was.
#[test]
fn force_removes_only_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().to_str().unwrap();
    let dir = tmp.path().join("quickstart");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("thesis.tex"), "years of work").unwrap();
    let o = run(&["run", SMALL, "--quiet", "--force", "--out", out]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("is not a racksweep run directory; --force removes only runs"),
        "{}",
        stderr(&o)
    );
    assert!(dir.join("thesis.tex").exists());
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::write(&dir, "a file").unwrap();
    let o = run(&["run", SMALL, "--quiet", "--force", "--out", out]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&dir).unwrap(), "a file");
}
