//! `racksweep validate` end to end: a fixture whose known answer is the sweep engine's own
//! prediction for the same configuration (validate and run share one model), scenario rules,
//! skip reasons, the JSON and Parquet outputs, and the error paths.

mod common;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, UInt32Type};
use common::{read_configs, read_parquet, root, run, stderr, stdout};

const FIXTURE: &str = "tests/data/validate-fixture.csv";

#[test]
fn validate_reproduces_run_for_the_same_configuration() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("predictions.parquet");
    let o = run(&["validate", FIXTURE, "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (batches, _) = read_parquet(&out);
    let b = &batches[0];
    let case = b.column_by_name("case_id").unwrap().as_string::<i32>();
    let row = (0..b.num_rows())
        .find(|&i| case.value(i) == "fixed-8b-offline")
        .expect("predicted");
    let predicted = b
        .column_by_name("predicted")
        .unwrap()
        .as_primitive::<Float64Type>()
        .value(row);
    let batch = b
        .column_by_name("batch")
        .unwrap()
        .as_primitive::<UInt32Type>()
        .value(row);
    assert!(batch <= 256, "a given batch is a maximum");

    // The same configuration through `racksweep run`: one H100 rack, tp 1, fp8, that batch.
    let sweep = tmp.path().join("same.toml");
    std::fs::write(
        &sweep,
        format!(
            "[sweep]\nname = \"same\"\n[workload]\nmodel = \"llama-3.1-8b\"\ninput_tokens = 1024\noutput_tokens = 1024\n\
             [grid]\nhardware = [\"h100-sxm\"]\ntp = [1]\nbatch = [{batch}]\nweight_dtype = [\"fp8\"]\nkv_dtype = [\"fp8\"]\n"
        ),
    )
    .unwrap();
    let o = run(&[
        "run",
        sweep.to_str().unwrap(),
        "--quiet",
        "--out",
        tmp.path().to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let configs = read_configs(&tmp.path().join("same"));
    let per_gpu = configs[0]
        .column_by_name("tokens_per_s_per_gpu")
        .unwrap()
        .as_primitive::<Float64Type>()
        .value(0);
    assert!(
        (predicted - per_gpu).abs() / per_gpu < 1e-12,
        "validate {predicted} vs run {per_gpu}"
    );
}

fn m_n(summary: &serde_json::Value, metric: &str) -> u64 {
    summary["metrics"][metric]["n"].as_u64().unwrap_or(0)
}

#[test]
fn scenarios_skips_and_json_summary() {
    let o = run(&["validate", FIXTURE, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(s["cases"], 8);
    let skipped: Vec<(String, String)> = s["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["case_id"].as_str().unwrap().to_string(),
                k["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        skipped,
        [
            (
                "no-such-model".to_string(),
                "unknown model id \"llama-9-9000b\"".to_string()
            ),
            (
                "no-output-length".to_string(),
                "output_tokens is blank: the workload needs a mean output length".to_string()
            ),
            (
                "training-no-seq-len".to_string(),
                "seq_len is blank".to_string()
            ),
        ]
    );
    // Every prediction, with its source family where one matches (none for "fixture").
    let predictions = s["predictions"].as_array().unwrap();
    assert_eq!(predictions.len(), 8);
    let p = predictions
        .iter()
        .find(|p| p["case_id"] == "server-70b" && p["metric"] == "ttft_p99_ms")
        .unwrap();
    assert_eq!(p["measured"], 400.0);
    assert_eq!(p["source"], "fixture");
    assert!(p["family"].is_null());
    let predicted = p["predicted"].as_f64().unwrap();
    let error = p["pct_error"].as_f64().unwrap();
    assert!(
        (error - (predicted / 400.0 - 1.0) * 100.0).abs() < 1e-9,
        "{error}"
    );
    // The training case is predicted by the training model.
    assert_eq!(m_n(&s, "model_tflops_per_gpu"), 1);
    let m = &s["metrics"];
    // Server: throughput, TTFT p99 and TPOT p99 are all scored; at-interactivity's
    // tokens/s/user is an input, not a prediction.
    assert_eq!(m["ttft_p99_ms"]["n"], 1);
    assert_eq!(m["tpot_p99_ms"]["n"], 1);
    assert!(m.get("tokens_per_s_per_user").is_none());
    assert_eq!(m["output_tokens_per_s_per_gpu"]["n"], 2);
    for metric in m.as_object().unwrap().values() {
        assert!(metric["median_abs_pct_err"].as_f64().unwrap() >= 0.0);
        assert!(
            metric["p90_abs_pct_err"].as_f64().unwrap()
                >= metric["median_abs_pct_err"].as_f64().unwrap()
        );
    }
}

#[test]
fn text_report_lists_every_case_and_the_chosen_layout() {
    let o = run(&["validate", FIXTURE]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("8 cases: 5 predicted, 3 skipped"), "{text}");
    // Blank layout columns are swept; given ones are kept.
    let fixed = text
        .lines()
        .find(|l| l.starts_with("fixed-8b-offline"))
        .unwrap();
    assert!(fixed.contains("[tp1 pp1 ep1 "), "{fixed}");
    let at = text
        .lines()
        .find(|l| l.starts_with("interactivity-70b") && l.contains("tokens_per_s_per_user"))
        .unwrap();
    assert!(at.contains("  input"), "{at}");
}

#[test]
fn validate_error_paths() {
    let o = run(&["validate", "tests/data/does-not-exist.csv"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o)
            .starts_with("error: cannot read measurements file tests/data/does-not-exist.csv")
    );

    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("bad.csv");
    let header = std::fs::read_to_string(root().join(FIXTURE))
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_string();
    std::fs::write(&bad, format!("{header}\nx,inference,s,,llama-3.1-8b,h100-sxm,8,one,1,,8,,fp8,,,1,1,offline,,,,,output_tokens_per_s,1,tokens/s,\n")).unwrap();
    let o = run(&["validate", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("bad.csv:2: column tp: \"one\": not a positive whole number"),
        "{}",
        stderr(&o)
    );

    // A calibration file sets the factors it names and keeps the others (the format of a
    // sweep's [calibration]): the built-in values themselves predict what no file does.
    let cal = tmp.path().join("cal.toml");
    std::fs::write(&cal, "gemm_half_rows = 64.0\n").unwrap();
    let o = run(&["validate", FIXTURE, "--calibration", cal.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(o.stdout, run(&["validate", FIXTURE]).stdout);
    std::fs::write(&cal, "gemm_half_rows = 64.0\nattention_eff = 0.5\n").unwrap();
    let o = run(&["validate", FIXTURE, "--calibration", cal.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("unknown field `attention_eff`"),
        "{}",
        stderr(&o)
    );
}

/// A case's sweep is bounded by its hardware: a degree or batch beyond what the case's GPUs
/// can hold is a skipped case with its reason, at once (tp = 4294967295 used to build a list of
/// 4.3 billion batch sizes). A measurements file must be a regular file.
#[test]
fn validate_bounds_each_case_by_its_gpus() {
    let tmp = tempfile::tempdir().unwrap();
    let header = std::fs::read_to_string(root().join(FIXTURE))
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_string();
    let rows = [
        "big-tp,inference,s,,llama-3.1-8b,h100-sxm,8,4294967295,1,,,,fp8,fp8,8,1024,1024,offline,,,,,output_tokens_per_s,1000,tokens/s,",
        "big-batch,inference,s,,llama-3.1-8b,h100-sxm,8,,,,,,fp8,fp8,4294967295,1024,1024,offline,,,,,output_tokens_per_s,1000,tokens/s,",
        "big-system,inference,s,,llama-3.1-8b,h100-sxm,4294967295,,,,,,fp8,fp8,,1024,1024,offline,,,,,output_tokens_per_s,1000,tokens/s,",
        "big-layout,training,s,,llama-3.1-8b,h100-sxm,64,4294967295,4294967295,,,,bf16,,,,,pretrain,,,96,4096,mfu_pct,40,%,",
    ];
    let file = tmp.path().join("big.csv");
    std::fs::write(&file, format!("{header}\n{}\n", rows.join("\n"))).unwrap();
    let started = std::time::Instant::now();
    let o = run(&["validate", file.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(started.elapsed().as_secs() < 10, "{:?}", started.elapsed());
    let out = stdout(&o);
    for line in [
        "skipped: tp 4294967295 exceeds the case's 8 GPUs",
        "skipped: batch 4294967295 is more than 1048576 sequences",
        "skipped: gpus 4294967295 is more than a rack can hold (4096): a measured system is modelled as one rack",
        "skipped: tp 4294967295 exceeds the case's 64 GPUs",
        "4 cases: 0 predicted, 4 skipped",
    ] {
        assert!(out.contains(line), "{line}\n{out}");
    }

    let o = run(&["validate", "/dev/zero"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        "error: cannot read measurements file /dev/zero: not a regular file\nhint: pass the path of a measurements .csv file, e.g. reference/measurements-calibration.csv\n"
    );
}
