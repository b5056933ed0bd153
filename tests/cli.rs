//! The binary end to end: every example sweep runs, outputs read back as Parquet, the frontier is
//! a subset of the configs, runs are deterministic across thread counts, exit codes are right.

mod common;

use std::collections::HashMap;

use arrow_array::cast::AsArray;
use arrow_array::types::Float64Type;
use arrow_array::{Array, RecordBatch};
use common::{
    assert_snapshot, column_labels, column_u64, configurations, finished, part_files, read_configs,
    read_parquet, root, run, stderr, stdout,
};

fn column_f64(batches: &[RecordBatch], name: &str) -> Vec<Option<f64>> {
    batches
        .iter()
        .flat_map(|b| {
            let a = b
                .column_by_name(name)
                .unwrap()
                .as_primitive::<Float64Type>();
            (0..a.len()).map(move |i| a.is_valid(i).then(|| a.value(i)))
        })
        .collect()
}

fn column_bool(batches: &[RecordBatch], name: &str) -> Vec<bool> {
    batches
        .iter()
        .flat_map(|b| {
            b.column_by_name(name)
                .unwrap()
                .as_boolean()
                .iter()
                .map(|v| v.unwrap())
        })
        .collect()
}

/// The visible entries of a folder (hidden ones are locks and temporaries), sorted.
fn entries(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    names.sort();
    names
}

fn rows(batches: &[RecordBatch]) -> usize {
    batches.iter().map(|b| b.num_rows()).sum()
}

fn manifest(dir: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap()
}

#[test]
fn quickstart_end_to_end() {
    let n = configurations("sweeps/quickstart.toml");
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().to_str().unwrap();
    let o = run(&["run", "sweeps/quickstart.toml", "--out", out]);
    assert!(o.status.success(), "{}", stderr(&o));
    let dir = tmp.path().join("quickstart");
    for f in [
        "configs/part-0-of-1.parquet",
        "parts/part-0-of-1.json",
        "parts/part-0-of-1.pareto.parquet",
        "pareto.parquet",
        "pareto.md",
        "manifest.json",
        "sweep.toml",
    ] {
        assert!(dir.join(f).is_file(), "{f} missing");
    }
    // No partial directory is left behind; beside the run, only its lock.
    assert_eq!(entries(tmp.path()), ["quickstart"]);
    let holder = std::fs::read_to_string(tmp.path().join(".quickstart.lock")).unwrap();
    assert!(
        holder.parse::<u32>().is_ok(),
        "the last writer's pid: {holder}"
    );

    let (configs, metadata) = read_parquet(&dir.join("configs/part-0-of-1.parquet"));
    assert_eq!(rows(&configs) as u64, n);
    assert!(configs.iter().all(|b| b.num_rows() <= 131_072));
    let ids = column_u64(&configs, "config_id");
    assert!(
        ids.iter().enumerate().all(|(i, &id)| id == i as u64),
        "rows in grid order"
    );
    let meta: HashMap<_, _> = metadata.into_iter().collect();
    assert_eq!(
        meta["racksweep.sweep_toml"],
        std::fs::read_to_string(root().join("sweeps/quickstart.toml")).unwrap()
    );
    assert_eq!(meta["racksweep.version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(meta["racksweep.sweep_sha256"].len(), 64);

    let m = manifest(&dir);
    assert_eq!(m["configurations"], n);
    assert_eq!(m["rows_written"], n);
    assert_eq!(m["complete"], true);
    let feasible = column_bool(&configs, "feasible")
        .iter()
        .filter(|&&f| f)
        .count() as u64;
    assert_eq!(m["feasible"], feasible);
    let infeasible: u64 = m["infeasible"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(feasible + infeasible, n);
    // The part file's footer counts its rows per reason, as the rows and the manifest do.
    let mut by_reason = serde_json::Map::new();
    for (reason, ok) in column_labels(&configs, "infeasible_reason")
        .into_iter()
        .zip(column_bool(&configs, "feasible"))
    {
        if !ok {
            let n = by_reason.get(&reason).and_then(|v| v.as_u64()).unwrap_or(0);
            by_reason.insert(reason, (n + 1).into());
        }
    }
    let footer: serde_json::Value = serde_json::from_str(&meta["racksweep.infeasible"]).unwrap();
    assert_eq!(footer, serde_json::Value::Object(by_reason));
    assert_eq!(footer, m["infeasible"]);

    // The frontier is a subset of the configs, row for row.
    let (pareto, _) = read_parquet(&dir.join("pareto.parquet"));
    // The configs' columns, then the tie group.
    let (fields, configs_fields) = (
        pareto[0].schema().fields().clone(),
        configs[0].schema().fields().clone(),
    );
    assert_eq!(fields[..configs_fields.len()], configs_fields[..]);
    assert_eq!(fields.len(), configs_fields.len() + 1);
    assert_eq!(fields[configs_fields.len()].name(), "tie_group");
    let frontier_ids = column_u64(&pareto, "config_id");
    assert_eq!(m["frontier_size"], frontier_ids.len() as u64);
    assert!(!frontier_ids.is_empty());
    let gpu = column_f64(&configs, "tokens_per_s_per_gpu");
    let frontier_gpu = column_f64(&pareto, "tokens_per_s_per_gpu");
    for (id, v) in frontier_ids.iter().zip(&frontier_gpu) {
        assert_eq!(
            gpu[*id as usize], *v,
            "frontier row {id} matches its config row"
        );
    }
    // Sorted by the first objective (max tokens_per_s_per_gpu), best first.
    assert!(frontier_gpu.windows(2).all(|w| w[0] >= w[1]));
    // Constraints hold on the frontier.
    let ttft = column_f64(&pareto, "ttft_ms");
    assert!(ttft.iter().all(|t| t.unwrap() <= 2000.0));

    let md = std::fs::read_to_string(dir.join("pareto.md")).unwrap();
    assert!(md.starts_with("# Pareto frontier: quickstart"));
    assert_eq!(
        md.lines()
            .filter(|l| l.starts_with("| ") && !l.starts_with("| hardware"))
            .count(),
        frontier_ids.len()
    );
    // The objective tokens_per_s_per_user is not repeated beside "tokens/s/user"
    // (tokens_per_s_per_user_at_load, the same values without a demand), nor the constraint
    // ttft_ms beside its own column, "TTFT (ms)".
    let header = md.lines().find(|l| l.starts_with("| hardware")).unwrap();
    assert_eq!(header.matches("| tokens/s/user |").count(), 1, "{header}");
    assert!(!header.contains("tokens_per_s_per_user"), "{header}");
    assert_eq!(header.matches("TTFT (ms)").count(), 1, "{header}");
    assert!(!header.contains("ttft_ms"), "{header}");
}

#[test]
fn every_example_sweep_runs() {
    let mut sweeps: Vec<_> = std::fs::read_dir(root().join("sweeps"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    sweeps.sort();
    assert!(sweeps.len() >= 3);
    let tmp = tempfile::tempdir().unwrap();
    for sweep in sweeps {
        let rel = sweep
            .strip_prefix(root())
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        let n = configurations(&rel);
        let o = run(&[
            "run",
            &rel,
            "--quiet",
            "--out",
            tmp.path().to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{rel}: {}", stderr(&o));
        assert!(
            stderr(&o).is_empty(),
            "--quiet prints nothing: {}",
            stderr(&o)
        );
        let name = entries(tmp.path())
            .into_iter()
            .map(|e| tmp.path().join(e))
            .find(|p| manifest(p)["sweep_file"] == rel.as_str())
            .expect("run directory");
        let m = manifest(&name);
        assert_eq!(m["configurations"], n, "{rel}");
        assert!(
            m["frontier_size"].as_u64().unwrap() > 0,
            "{rel} has an empty frontier"
        );
        let configs = read_configs(&name);
        assert_eq!(rows(&configs) as u64, n, "{rel}");
        query_formats_parse(&name, &m);
    }
}

/// `top` and `pareto` (by the run's own objectives) print CSV that a CSV reader takes and JSON
/// that a JSON parser takes, the same rows in both, with the count on stderr (issue 23).
fn query_formats_parse(dir: &std::path::Path, m: &serde_json::Value) {
    let d = dir.to_str().unwrap();
    let objectives: Vec<String> = m["objectives"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o.as_str().unwrap().to_string())
        .collect();
    let mut queries = vec![vec![
        "top".to_string(),
        d.into(),
        "--by".into(),
        objectives[0].clone(),
    ]];
    let mut pareto = vec!["pareto".to_string(), d.into()];
    for o in &objectives {
        pareto.extend(["--objective".into(), o.clone()]);
    }
    queries.push(pareto);
    for query in queries {
        let output = |format: &str| {
            let mut args: Vec<&str> = query.iter().map(String::as_str).collect();
            args.extend(["--format", format]);
            let o = run(&args);
            assert!(o.status.success(), "{args:?}: {}", stderr(&o));
            (stdout(&o), stderr(&o))
        };
        let (csv_text, count) = output("csv");
        let mut reader = csv::Reader::from_reader(csv_text.as_bytes());
        let width = reader.headers().unwrap().len();
        let records: Vec<csv::StringRecord> = reader.records().map(|r| r.unwrap()).collect();
        assert!(records.iter().all(|r| r.len() == width), "{query:?}");
        assert_eq!(count, format!("{} rows\n", records.len()), "{query:?}");
        let (json_text, count_json) = output("json");
        assert_eq!(count_json, count);
        let json: serde_json::Value = serde_json::from_str(&json_text).unwrap();
        let rows = json.as_array().unwrap();
        assert_eq!(rows.len(), records.len(), "{query:?}");
        for (row, record) in rows.iter().zip(&records) {
            let row = row.as_object().unwrap();
            assert_eq!(row.len(), width);
            assert!(row["config_id"].is_u64(), "{query:?}");
            assert_eq!(row["config_id"].to_string(), record[0].to_string());
        }
    }
}

#[test]
fn output_is_identical_for_one_and_two_threads() {
    let tmp = tempfile::tempdir().unwrap();
    let one = tmp.path().join("one");
    let two = tmp.path().join("two");
    for (dir, threads) in [(&one, "1"), (&two, "2")] {
        let o = run(&[
            "run",
            "sweeps/deepseek-v3-b200-vs-mi355x.toml",
            "--quiet",
            "--threads",
            threads,
            "--part-rows",
            "7000",
            "--out",
            dir.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let (one, two) = (
        one.join("deepseek-v3-b200-vs-mi355x"),
        two.join("deepseek-v3-b200-vs-mi355x"),
    );
    let mut files = part_files(&one.join("configs"), ".parquet");
    files.extend(part_files(&one.join("parts"), ".pareto.parquet"));
    files.extend([one.join("pareto.parquet"), one.join("pareto.md")]);
    assert!(files.len() >= 4);
    for f in files {
        let b = two.join(f.strip_prefix(&one).unwrap());
        let (a, b) = (std::fs::read(&f).unwrap(), std::fs::read(b).unwrap());
        assert!(a == b, "{} differs between 1 and 2 threads", f.display());
    }
}

#[test]
fn feasible_only_writes_feasible_rows_and_counts_all() {
    let tmp = tempfile::tempdir().unwrap();
    let o = run(&[
        "run",
        "sweeps/quickstart.toml",
        "--quiet",
        "--feasible-only",
        "--out",
        tmp.path().to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let dir = tmp.path().join("quickstart");
    let m = manifest(&dir);
    let configs = read_configs(&dir);
    assert_eq!(m["rows_written"], rows(&configs) as u64);
    assert_eq!(m["feasible"], rows(&configs) as u64);
    assert_eq!(
        m["configurations"],
        configurations("sweeps/quickstart.toml")
    );
    assert!(column_bool(&configs, "feasible").iter().all(|&f| f));
}

#[test]
fn refuses_to_overwrite_without_force() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().to_str().unwrap();
    assert!(
        run(&["run", "sweeps/quickstart.toml", "--quiet", "--out", out])
            .status
            .success()
    );
    let o = run(&["run", "sweeps/quickstart.toml", "--quiet", "--out", out]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("quickstart already exists"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("hint: pass --resume to continue it, --force to replace it"));
    let o = run(&[
        "run",
        "sweeps/quickstart.toml",
        "--quiet",
        "--force",
        "--out",
        out,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        entries(tmp.path()),
        ["quickstart"],
        "no leftovers after --force"
    );
    let hidden: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert_eq!(hidden, [".quickstart.lock"], "nothing left aside");
}

/// A `--force` whose removal fails part-way (a file that may not be deleted) leaves no
/// half-removed run at the run's path: the old run was moved aside first, the error names
/// where its remains are, and the next run starts afresh.
#[test]
fn a_force_that_cannot_remove_everything_leaves_the_path_free() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().to_str().unwrap();
    let quickstart = ["run", "sweeps/quickstart.toml", "--quiet", "--out", out];
    assert!(run(&quickstart).status.success());
    // Pin the run's frontier: by mode bits for an ordinary user, by the immutable attribute
    // for root (whom mode bits do not stop).
    let parts = tmp.path().join("quickstart/parts");
    std::fs::set_permissions(&parts, std::fs::Permissions::from_mode(0o555)).unwrap();
    let probe = parts.join("probe");
    let pinned = if std::fs::write(&probe, b"").is_err() {
        None
    } else {
        std::fs::remove_file(&probe).unwrap();
        let file = tmp.path().join("quickstart/pareto.md");
        let chattr = std::process::Command::new("chattr")
            .arg("+i")
            .arg(&file)
            .output();
        if !chattr.is_ok_and(|o| o.status.success()) {
            // Nothing can pin a file here: the removal then succeeds, whole.
            std::fs::set_permissions(&parts, std::fs::Permissions::from_mode(0o755)).unwrap();
            let o = run(&[&quickstart[..], &["--force"]].concat());
            assert!(o.status.success(), "{}", stderr(&o));
            assert_eq!(entries(tmp.path()), ["quickstart"]);
            return;
        }
        Some(file)
    };
    let o = run(&[&quickstart[..], &["--force"]].concat());
    // Unpin before asserting, so that the temporary directory can always be removed.
    let moved: Vec<std::path::PathBuf> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(".quickstart.removing-")
        })
        .collect();
    for dir in &moved {
        if dir.join("parts").exists() {
            std::fs::set_permissions(dir.join("parts"), std::fs::Permissions::from_mode(0o755))
                .unwrap();
        }
        if pinned.is_some() {
            std::process::Command::new("chattr")
                .arg("-i")
                .arg(dir.join("pareto.md"))
                .status()
                .unwrap();
        }
    }
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(moved.len(), 1, "the old run moved aside once: {moved:?}");
    let e = stderr(&o);
    assert!(
        e.contains("was moved to") && e.contains(&*moved[0].to_string_lossy()),
        "{e}"
    );
    assert!(e.contains("could not be removed"), "{e}");
    assert!(
        !tmp.path().join("quickstart").exists(),
        "no half-removed run"
    );
    // The path is free: a plain run (no --force) starts afresh, completes, and clears the
    // remains (unpinned above).
    let o = run(&quickstart);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(manifest(&tmp.path().join("quickstart"))["complete"] == true);
    assert!(!moved[0].exists(), "remains cleared");
}

/// A `--force` killed while it deleted the old run leaves its remains beside the run (here
/// made by hand, as `kill -9` would leave them); the next run into that `--out` removes them.
#[test]
fn the_remains_of_a_killed_force_are_cleared_by_the_next_run() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().to_str().unwrap();
    let remains = tmp.path().join(".quickstart.removing-4242");
    std::fs::create_dir_all(remains.join("configs")).unwrap();
    std::fs::write(remains.join("configs/part-0-of-1.parquet"), b"rows").unwrap();
    let o = run(&["run", "sweeps/quickstart.toml", "--quiet", "--out", out]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!remains.exists(), "remains cleared");
    assert!(manifest(&tmp.path().join("quickstart"))["complete"] == true);
}

/// A run killed while it created its folders (before `sweep.toml`) resumes as a fresh run; a
/// directory that holds something else is still refused.
#[test]
fn resume_after_a_kill_at_the_very_start() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().to_str().unwrap();
    let root = tmp.path().join("quickstart");
    std::fs::create_dir_all(root.join("configs")).unwrap();
    std::fs::create_dir_all(root.join("parts")).unwrap();
    let resume = |out: &str| {
        run(&[
            "run",
            "sweeps/quickstart.toml",
            "--quiet",
            "--resume",
            "--out",
            out,
        ])
    };
    let o = resume(out);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(manifest(&root)["complete"], true);
    let other = tmp.path().join("other");
    std::fs::create_dir_all(other.join("quickstart")).unwrap();
    std::fs::write(other.join("quickstart/notes.txt"), "mine").unwrap();
    let o = resume(other.to_str().unwrap());
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("is not a racksweep run directory"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn check_output_snapshot() {
    let o = run(&["check", "sweeps/quickstart.toml", "--threads", "2"]);
    assert!(o.status.success());
    assert_snapshot(
        &root().join("tests/snapshots/check-quickstart.txt"),
        &stdout(&o),
    );
}

/// `check` prints what a sized sweep asks: the demand (a token budget with its traffic), the
/// SLOs, the `[cost]` keys it sets, and the estimated output and run time; with workload axes,
/// the demand of each workload.
#[test]
fn check_prints_the_demand_slos_cost_and_estimates() {
    for (sweep, snapshot) in [
        (
            "sweeps/llama-70b-2b-tokens-per-day.toml",
            "check-tokens-per-day.txt",
        ),
        ("sweeps/overnight-5k-40k-users.toml", "check-workloads.txt"),
    ] {
        let o = run(&["check", sweep, "--threads", "2"]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_snapshot(&root().join("tests/snapshots").join(snapshot), &stdout(&o));
    }
    // The estimate scales with the threads: 4 threads take half the time of 2 (bench-10m's
    // 10,002,432 rows at 1,027,999 configs/s per thread: 4.87 s on 2, 2.43 s on 4).
    let time = |threads: &str| {
        let o = run(&[
            "check",
            "scripts/bench/bench-10m.toml",
            "--threads",
            threads,
        ]);
        stdout(&o)
            .lines()
            .find(|l| l.starts_with("estimated run time: "))
            .map(|l| l.split(' ').nth(3).unwrap().to_string())
            .unwrap()
    };
    assert_eq!(time("2"), "0:00:05");
    assert_eq!(time("4"), "0:00:02");
    // Each [cost] key with the catalog value it replaces (pue 1.3 and H100's $2.99 on-demand in
    // src/catalog/data/), the API prices without one.
    let tmp = tempfile::tempdir().unwrap();
    let sweep = tmp.path().join("cost.toml");
    std::fs::write(
        &sweep,
        "[sweep]\nname = \"cost\"\n[workload]\nmodel = \"llama-3.1-8b\"\ninput_tokens = 128\n\
         output_tokens = 128\n[cost]\nusd_per_gpu_hour = { \"h100-sxm\" = 2.4 }\npue = 1.2\n\
         usd_per_mtok_api_input = 0.1\nusd_per_mtok_api_output = 0.3\n[grid]\nhardware = [\"h100-sxm\"]\n",
    )
    .unwrap();
    let o = run(&["check", sweep.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("\ncost: pue = 1.2 (was 1.3), usd_per_gpu_hour.h100-sxm = 2.4 (was 2.99), usd_per_mtok_api_input = 0.1, usd_per_mtok_api_output = 0.3\n"),
        "{}",
        stdout(&o)
    );
}

/// `[workload] eplb` (and `two_batch_overlap`): `check` says so, the manifest records the
/// redundant experts per rank,
/// and each GPU holds one more expert per MoE layer than the same grid without it: DeepSeek-V3
/// in FP8 at ep 8, 58 layers x 3 x 7168 x 2048 parameters = 2.554 GB, and its steps run on the
/// uniform-routing table, so no row is slower.
#[test]
fn eplb_is_shown_recorded_and_holds_a_redundant_expert_a_rank() {
    let tmp = tempfile::tempdir().unwrap();
    let sweep = |name: &str, eplb: &str| {
        let path = tmp.path().join(format!("{name}.toml"));
        std::fs::write(
            &path,
            format!(
                "[sweep]\nname = \"{name}\"\n[workload]\nmodel = \"deepseek-v3\"\n\
                 input_tokens = 1024\noutput_tokens = 1024\n{eplb}[grid]\nhardware = [\"h200-sxm\"]\n\
                 tp = [1]\nep = [8]\nweight_dtype = [\"fp8\"]\nkv_dtype = [\"fp8\"]\n\
                 batch = [64, 512, 2048]\n"
            ),
        )
        .unwrap();
        path
    };
    // Two-batch overlap too, which TensorRT-LLM (the H200's default engine) does not do.
    let on = sweep("eplb-on", "eplb = true\ntwo_batch_overlap = true\n");
    let off = sweep("eplb-off", "");
    let o = run(&["check", on.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains(
            "; experts balanced by EPLB (one redundant expert per expert-parallel rank); two micro-batches overlap the MoE dispatch and combine where the engine does (SGLang, vLLM)\n"
        ),
        "{}",
        stdout(&o)
    );
    let (_on_runs, on_dir) = finished(on.to_str().unwrap(), "eplb-on");
    let (_off_runs, off_dir) = finished(off.to_str().unwrap(), "eplb-off");
    let m = manifest(&on_dir);
    assert_eq!(m["workload"]["eplb_redundant_experts_per_rank"], 1.0);
    assert_eq!(m["workload"]["two_batch_overlap"], 1.0);
    assert!(
        manifest(&off_dir)["workload"]
            .get("eplb_redundant_experts_per_rank")
            .is_none()
    );
    let (with, without) = (read_configs(&on_dir), read_configs(&off_dir));
    let weights = |b: &[RecordBatch]| column_f64(b, "hbm_weights_gb_per_gpu");
    let speed = |b: &[RecordBatch]| column_f64(b, "tokens_per_s_per_gpu");
    let redundant_gb = 58.0 * 3.0 * 7168.0 * 2048.0 / 1e9;
    for (w, wo) in weights(&with).into_iter().zip(weights(&without)) {
        let added = w.unwrap() - wo.unwrap();
        assert!((added - redundant_gb).abs() < 1e-9, "{added}");
    }
    for (s, so) in speed(&with).into_iter().zip(speed(&without)) {
        if let (Some(s), Some(so)) = (s, so) {
            assert!(s >= so, "{s} < {so}");
        }
    }
}

/// Without a terminal (nohup, Slurm, this test's pipe) `run` prints progress lines to stderr,
/// the last one with the whole count; `--progress none` and `--quiet` print none.
#[test]
fn a_run_without_a_terminal_prints_progress_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().to_str().unwrap();
    let o = run(&["run", "sweeps/quickstart.toml", "--out", out]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    let last = err
        .lines()
        .rfind(|l| l.starts_with("progress: "))
        .unwrap_or_else(|| panic!("no progress line: {err}"));
    assert!(
        last.starts_with("progress: 3,168 / 3,168 configs (100.0 %) in "),
        "{last}"
    );
    assert!(err.lines().last().unwrap().starts_with("wrote "), "{err}");
    for flags in [&["--progress", "none"][..], &["--quiet"]] {
        let mut args = vec!["run", "sweeps/quickstart.toml", "--out", out, "--force"];
        args.extend(flags);
        let o = run(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(
            !stderr(&o).contains("progress"),
            "{flags:?}: {}",
            stderr(&o)
        );
    }
}

/// Completion scripts and the manual page come from the clap definition: each names every
/// subcommand.
#[test]
fn completions_and_man_page_name_every_subcommand() {
    use clap::CommandFactory;
    let cli = racksweep::cli::Cli::command();
    let names: Vec<&str> = cli.get_subcommands().map(|c| c.get_name()).collect();
    assert!(names.contains(&"completions") && names.contains(&"man"));
    for shell in ["bash", "zsh", "fish"] {
        let o = run(&["completions", shell]);
        assert!(o.status.success(), "{shell}: {}", stderr(&o));
        let script = stdout(&o);
        for name in &names {
            assert!(script.contains(name), "{shell} completes {name}");
        }
        // Flags too: run's --progress (fish: `-l progress`) with its values.
        assert!(
            script.contains("progress") && script.contains("lines"),
            "{shell}"
        );
    }
    let page = stdout(&run(&["man"]));
    assert!(
        page.starts_with(".ie") && page.contains(".TH racksweep 1"),
        "{page}"
    );
    for name in &names {
        assert!(
            page.contains(&format!("racksweep\\-{name}(1)")),
            "man lists {name}"
        );
        let sub = run(&["man", name]);
        assert!(sub.status.success());
        assert!(
            stdout(&sub).contains(&format!(".TH racksweep-{name} 1")),
            "{name}"
        );
    }
    let o = run(&["man", "rnn"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("did you mean \"run\"?"),
        "{}",
        stderr(&o)
    );
}

/// `catalog <kind> <id>` prints a preset as a table the sweep parser takes back: the same GPU
/// (replaced in place by itself), a copy of the rack or model with every number the same.
#[test]
fn a_preset_printed_as_toml_parses_back_as_the_same_preset() {
    use racksweep::catalog::Catalog;
    use racksweep::cli::CatalogKind;
    use racksweep::commands::catalog::preset_toml;
    let builtin = Catalog::builtin().unwrap();
    let sweep = |table: &str| {
        let text = format!(
            "[sweep]\nname = \"t\"\n[workload]\nmodel = \"llama-3.1-8b\"\ninput_tokens = 128\noutput_tokens = 128\n[grid]\nhardware = [\"h100-sxm\"]\n{table}"
        );
        match racksweep::spec::parse(std::path::Path::new("t.toml"), &text, 1_000_000) {
            Ok(s) => s.header().catalog.clone(),
            Err(e) => panic!("{e}\n{table}"),
        }
    };
    for g in &builtin.gpus {
        let c = sweep(&preset_toml(&builtin, CatalogKind::Gpus, &g.id).unwrap());
        assert_eq!(value(c.gpu(&g.id).unwrap()), value(g), "{}", g.id);
        assert_eq!(c.gpus.len(), builtin.gpus.len());
    }
    for r in &builtin.racks {
        let c = sweep(&preset_toml(&builtin, CatalogKind::Racks, &r.id).unwrap());
        let copy = c.rack(&format!("{}-custom", r.id)).unwrap();
        let mut v = value(copy);
        v.as_table_mut()
            .unwrap()
            .insert("id".into(), r.id.clone().into());
        assert_eq!(v, value(r), "{}", r.id);
    }
    for m in &builtin.models {
        let c = sweep(&preset_toml(&builtin, CatalogKind::Models, &m.id).unwrap());
        let copy = c.model(&format!("{}-custom", m.id)).unwrap();
        let mut v = value(copy);
        v.as_table_mut()
            .unwrap()
            .insert("id".into(), m.id.clone().into());
        assert_eq!(v, value(m), "{}", m.id);
    }
    // The binary prints the same text.
    let o = run(&["catalog", "gpu", "h100-sxm"]);
    assert!(o.status.success());
    assert_eq!(
        stdout(&o),
        preset_toml(&builtin, CatalogKind::Gpus, "h100-sxm").unwrap()
    );
}

/// A preset as a TOML value, to compare two presets field by field.
fn value<T: serde::Serialize>(preset: &T) -> toml::Value {
    toml::Value::try_from(preset).unwrap()
}

#[test]
fn catalog_lists_every_gpu_and_model() {
    let o = run(&["catalog", "gpus"]);
    assert!(o.status.success());
    let gpus = stdout(&o);
    // Every preset appears (the unit tests check the presets cover shared/reference).
    let catalog = racksweep::catalog::Catalog::builtin().unwrap();
    for gpu in &catalog.gpus {
        assert!(
            gpus.lines().any(|l| l.starts_with(&format!("{} ", gpu.id))),
            "{}",
            gpu.id
        );
    }
    let models = stdout(&run(&["catalog", "models"]));
    assert_eq!(models.lines().count(), 1 + 28);
    let all = stdout(&run(&["catalog"]));
    for section in ["# gpus", "# racks", "# models", "# dtypes"] {
        assert!(all.contains(section));
    }
}

#[test]
fn exit_codes() {
    assert_eq!(run(&["--help"]).status.code(), Some(0));
    for cmd in ["run", "check", "catalog", "validate"] {
        assert_eq!(run(&[cmd, "--help"]).status.code(), Some(0), "{cmd} --help");
    }
    assert_eq!(run(&["catalog", "tpus"]).status.code(), Some(1));
    assert_eq!(run(&["frobnicate"]).status.code(), Some(1));
    assert_eq!(
        run(&["run", "sweeps/quickstart.toml", "--threads", "0"])
            .status
            .code(),
        Some(1)
    );
    let o = run(&["check", "sweeps/does-not-exist.toml"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).starts_with("error: cannot read sweep file sweeps/does-not-exist.toml"));
    let o = run(&["check", "sweeps/quickstart.toml", "--max-configs", "100"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("3,168 configurations, more than the cap of 100"),
        "{}",
        stderr(&o)
    );
}
