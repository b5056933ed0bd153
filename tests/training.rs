//! Training sweeps end to end: the rows read back from Parquet obey the layout arithmetic and
//! the run-level formulas, the frontier is the brute-force one, and a sharded run merges to the
//! single-process run.

mod common;

use std::collections::HashMap;

use common::{
    assert_snapshot, column_f64, column_flags, column_labels, column_u32, column_u64,
    configurations, read_configs, read_parquet, root, run, stderr, stdout,
};

const SWEEP: &str = "tests/specs/training.toml";

fn manifest(dir: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap()
}

#[test]
fn training_rows_obey_the_layout_and_run_arithmetic() {
    let n = configurations(SWEEP);
    assert_eq!(n, 2 * 2 * 4 * 3 * 2 * 2 * 3 * 2 * 2 * 2);
    let tmp = tempfile::tempdir().unwrap();
    let o = run(&[
        "run",
        SWEEP,
        "--quiet",
        "--out",
        tmp.path().to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let dir = tmp.path().join("training");
    let (batches, metadata) = read_parquet(&dir.join("configs/part-0-of-1.parquet"));
    let meta: HashMap<_, _> = metadata.into_iter().collect();
    assert_eq!(meta["racksweep.mode"], "training");
    // The file says what its columns are: every field's unit and meaning as field metadata,
    // the same by name in racksweep.columns, and a pandas dtype per column.
    let schema = batches[0].schema();
    let columns: serde_json::Value = serde_json::from_str(&meta["racksweep.columns"]).unwrap();
    for field in schema.fields() {
        let (unit, doc) = (&field.metadata()["unit"], &field.metadata()["description"]);
        assert!(!doc.is_empty(), "{}", field.name());
        assert_eq!(columns[field.name()]["unit"], unit.as_str());
        assert_eq!(columns[field.name()]["description"], doc.as_str());
    }
    assert_eq!(
        schema
            .field_with_name("time_to_train_days")
            .unwrap()
            .metadata()["unit"],
        "days"
    );
    assert_eq!(
        schema.field_with_name("mfu_pct").unwrap().metadata()["unit"],
        "%"
    );
    // Schema metadata, which record batches do not carry.
    let file = std::fs::File::open(dir.join("configs/part-0-of-1.parquet")).unwrap();
    let reader =
        parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file).unwrap();
    let pandas: serde_json::Value =
        serde_json::from_str(&reader.schema().metadata()["pandas"]).unwrap();
    let dtype = |name: &str| {
        let columns = pandas["columns"].as_array().unwrap();
        let c = columns.iter().find(|c| c["name"] == name).unwrap();
        c["numpy_type"].as_str().unwrap().to_string()
    };
    assert_eq!(dtype("racks"), "UInt32");
    assert_eq!(dtype("feasible"), "boolean");
    assert_eq!(dtype("hardware"), "category");
    let m = manifest(&dir);
    assert_eq!(m["mode"], "training");
    assert_eq!(m["workload"]["global_batch_tokens"], 256.0 * 4096.0);
    assert_eq!(m["axes"]["racks"], 2);

    let c = read_configs(&dir);
    let ids = column_u64(&c, "config_id");
    assert_eq!(ids.len() as u64, n);
    assert!(ids.iter().enumerate().all(|(i, &id)| id == i as u64));
    let count = |name: &str| column_u32(&c, name);
    let (racks, gpus, tp, pp, dp, cp) = (
        count("racks"),
        count("gpus"),
        count("tp"),
        count("pp"),
        count("dp"),
        count("cp"),
    );
    let feasible = column_flags(&c, "feasible");
    let reasons = column_labels(&c, "infeasible_reason");
    let metric = |name: &str| column_f64(&c, name);
    let (step, tokens_per_s, days, gpu_hours) = (
        metric("step_time_s"),
        metric("training_tokens_per_s"),
        metric("time_to_train_days"),
        metric("gpu_hours"),
    );
    let (model_tflops, mfu, hardware) = (
        metric("model_tflops_per_gpu"),
        metric("mfu_pct"),
        column_labels(&c, "hardware"),
    );
    let mut by_reason: HashMap<String, u64> = HashMap::new();
    for i in 0..ids.len() {
        // Whole racks of 32 GPUs (DGX H100 and DGX B200), filled by data parallelism.
        let g = gpus[i].unwrap();
        assert_eq!(g, racks[i].unwrap() * 32);
        let replica = tp[i].unwrap() * pp[i].unwrap() * cp[i].unwrap();
        if !g.is_multiple_of(replica) {
            assert!(!feasible[i]);
            assert_eq!(reasons[i], "gpus_not_divisible_by_tp_x_pp_x_cp");
            assert_eq!(dp[i], None);
        } else {
            assert_eq!(dp[i], Some(g / replica));
        }
        if !feasible[i] {
            *by_reason.entry(reasons[i].clone()).or_default() += 1;
            assert_eq!(step[i], None, "an infeasible row has no step time");
            continue;
        }
        // A step trains the global batch: 256 sequences of 4,096 tokens.
        let s = step[i].unwrap();
        let t = tokens_per_s[i].unwrap();
        assert!((t * s / (256.0 * 4096.0) - 1.0).abs() < 1e-12);
        // 1e11 tokens at that rate, and its GPU-hours.
        let d = days[i].unwrap();
        assert!((d * 86_400.0 * t / 1e11 - 1.0).abs() < 1e-12);
        assert!((gpu_hours[i].unwrap() / (f64::from(g) * d * 24.0) - 1.0).abs() < 1e-12);
        // MFU against the dense BF16 peak: 989 TFLOP/s (H100 SXM), 2,250 (B200).
        let peak = if hardware[i] == "h100-sxm" {
            989.0
        } else {
            2250.0
        };
        let expected = 100.0 * model_tflops[i].unwrap() / peak;
        assert!((mfu[i].unwrap() / expected - 1.0).abs() < 1e-3, "{i}");
    }
    // The manifest counts what the rows say.
    let feasible_n = feasible.iter().filter(|&&f| f).count() as u64;
    assert_eq!(m["feasible"], feasible_n);
    for (reason, k) in &by_reason {
        assert_eq!(m["infeasible"][reason], *k, "{reason}");
    }
    assert!(by_reason.contains_key("does_not_fit"));

    // The frontier is exactly the brute-force one over the feasible rows: nothing on it is
    // dominated, everything off it is.
    let usd = metric("usd_per_run");
    let time = metric("effective_time_to_train_days");
    let points: Vec<(u64, f64, f64)> = (0..ids.len())
        .filter(|&i| feasible[i])
        .map(|i| (ids[i], time[i].unwrap(), usd[i].unwrap()))
        .collect();
    let dominated = |&(_, a, b): &(u64, f64, f64)| {
        points
            .iter()
            .any(|&(_, x, y)| x <= a && y <= b && (x < a || y < b))
    };
    let mut expected: Vec<u64> = points
        .iter()
        .filter(|p| !dominated(p))
        .map(|p| p.0)
        .collect();
    expected.sort_unstable();
    let (pareto, _) = read_parquet(&dir.join("pareto.parquet"));
    let mut frontier = column_u64(&pareto, "config_id");
    frontier.sort_unstable();
    assert_eq!(frontier, expected);
    assert!(frontier.len() >= 2, "a trade between time and cost");
    let md = std::fs::read_to_string(dir.join("pareto.md")).unwrap();
    assert!(md.contains("| hardware | rack | racks | GPUs | tp | pp | dp | cp |"));
    assert!(md.contains("trained on 100,000,000,000 tokens in steps of 256 sequences"));
}

#[test]
fn a_sharded_training_run_merges_to_the_single_process_run() {
    let tmp = tempfile::tempdir().unwrap();
    let (one, two) = (tmp.path().join("one"), tmp.path().join("two"));
    let o = run(&["run", SWEEP, "--quiet", "--out", one.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    for k in ["0/2", "1/2"] {
        let o = run(&[
            "run",
            SWEEP,
            "--quiet",
            "--shard",
            k,
            "--out",
            two.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let o = run(&["merge", two.join("training").to_str().unwrap(), "--quiet"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (a, b) = (one.join("training"), two.join("training"));
    assert_eq!(
        std::fs::read(a.join("pareto.parquet")).unwrap(),
        std::fs::read(b.join("pareto.parquet")).unwrap()
    );
    assert_eq!(
        std::fs::read_to_string(a.join("pareto.md")).unwrap(),
        std::fs::read_to_string(b.join("pareto.md")).unwrap()
    );
    let (ma, mb) = (manifest(&a), manifest(&b));
    for key in ["configurations", "feasible", "infeasible", "frontier_size"] {
        assert_eq!(ma[key], mb[key], "{key}");
    }
    let rows = |d: &std::path::Path| column_u64(&read_configs(d), "config_id");
    assert_eq!(rows(&a), rows(&b));
}

#[test]
fn check_lists_the_layout_axes() {
    let o = run(&["check", SWEEP, "--threads", "2"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_snapshot(
        &root().join("tests/snapshots/check-training.txt"),
        &stdout(&o).replace(&root().display().to_string(), "<root>"),
    );
}
