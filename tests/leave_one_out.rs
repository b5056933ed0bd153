//! `racksweep validate --leave-one-out` on a small fixture (tests/data/loo-fixture.csv: three
//! MLPerf Inference v4.0 cases, three NeMo 24.07 and two Narayanan et al. 2021 training cases,
//! copied from reference/measurements-calibration.csv) with the reduced grid (`--quick`).
//! Every number the report gives is checked against an independent path: plain `validate` with
//! the reported factors passed as a calibration file.

mod common;

use std::collections::BTreeMap;

use common::{root, run, stderr, stdout};
use serde_json::Value;

const FIXTURE: &str = "tests/data/loo-fixture.csv";
const NEMO: &str = "NeMo 24.07 performance summary";

fn json(args: &[&str]) -> Value {
    let o = run(args);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_str(&stdout(&o)).unwrap()
}

fn loo(file: &str) -> Value {
    json(&["validate", file, "--leave-one-out", "--quick", "--json"])
}

/// A calibration file (as `validate --calibration` reads it) holding `factors` (training
/// factors as `training.*`) over the committed values of every other key.
fn calibration_file(dir: &std::path::Path, name: &str, factors: &Value) -> String {
    let read = |f: &str| -> toml::Table {
        toml::from_str(&std::fs::read_to_string(root().join("src/catalog/data").join(f)).unwrap())
            .unwrap()
    };
    let (mut inference, mut training) = (read("calibration.toml"), read("training.toml"));
    for (k, v) in factors.as_object().unwrap() {
        let v = toml::Value::Float(v.as_f64().unwrap());
        match k.strip_prefix("training.") {
            Some(k) => training.insert(k.to_string(), v),
            None => inference.insert(k.clone(), v),
        };
    }
    inference.insert("training".into(), toml::Value::Table(training));
    let path = dir.join(name);
    std::fs::write(&path, toml::to_string(&inference).unwrap()).unwrap();
    path.to_str().unwrap().to_string()
}

/// `(case_id, metric) -> predicted` of plain `validate --json` with `factors`.
fn predictions_with(
    dir: &std::path::Path,
    name: &str,
    factors: &Value,
) -> BTreeMap<(String, String), f64> {
    let cal = calibration_file(dir, name, factors);
    let s = json(&["validate", FIXTURE, "--calibration", &cal, "--json"]);
    s["predictions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (key_of(p), p["predicted"].as_f64().unwrap()))
        .collect()
}

/// A prediction's `(case_id, metric)`.
fn key_of(p: &Value) -> (String, String) {
    (
        p["case_id"].as_str().unwrap().to_string(),
        p["metric"].as_str().unwrap().to_string(),
    )
}

/// numpy's linear-interpolated percentile.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = p * (sorted.len() - 1) as f64;
    let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo as f64)
}

/// The fit's objective (docs/validation.md, "Calibration") of `(metric, % error)` pairs: per
/// metric the mean of ln(1 + median) and ln(1 + p90) of the absolute errors, weighted by the
/// metric's predictions (no case of the fixture is unreachable).
fn objective(errors: &[(String, f64)]) -> f64 {
    let mut by_metric: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for (m, e) in errors {
        by_metric.entry(m).or_default().push(e.abs());
    }
    let mut sum = 0.0;
    for abs in by_metric.values_mut() {
        abs.sort_by(f64::total_cmp);
        let (median, p90) = (percentile(abs, 0.5), percentile(abs, 0.9));
        sum += abs.len() as f64 * ((median / 100.0).ln_1p() + (p90 / 100.0).ln_1p()) / 2.0;
    }
    sum / errors.len() as f64
}

/// Each family's out-of-sample predictions are plain `validate`'s with the factors refitted
/// without it, its in-sample ones plain `validate`'s with the all-rows fit; each fold's
/// reported training objective is the objective of the other families' errors under its
/// factors, and no higher than at the committed factors it starts from; the per-family statistics are
/// the median and p90 of those errors.
#[test]
fn out_of_sample_is_each_family_predicted_with_its_refit() {
    let tmp = tempfile::tempdir().unwrap();
    let r = loo(FIXTURE);
    assert_eq!(r["grid"], "quick");
    let families = r["families"].as_array().unwrap();
    let names: Vec<&str> = families
        .iter()
        .map(|f| f["family"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "MLPerf Inference v4.0",
            NEMO,
            "Narayanan et al. 2021 (Megatron-LM)"
        ]
    );
    let rows: Vec<u64> = families
        .iter()
        .map(|f| f["rows"].as_u64().unwrap())
        .collect();
    assert_eq!(rows, [5, 6, 4]);
    let preds = r["predictions"].as_array().unwrap();
    assert_eq!(preds.len(), 15);

    // The all-rows fit is `validate --fit`'s.
    let fit = json(&["validate", FIXTURE, "--fit", "--quick", "--json"]);
    assert_eq!(fit["factors"], r["all_rows_factors"]);
    assert_eq!(fit["objective"], r["all_rows_objective"]);
    assert_eq!(fit["committed_objective"], r["committed_objective"]);
    assert!(fit["objective"].as_f64().unwrap() <= fit["committed_objective"].as_f64().unwrap());
    let in_sample = predictions_with(tmp.path(), "all.toml", &r["all_rows_factors"]);
    for p in preds {
        let key = key_of(p);
        assert_eq!(
            p["predicted_in_sample"].as_f64().unwrap(),
            in_sample[&key],
            "{key:?}"
        );
    }
    let mut moved = 0;
    for (k, f) in families.iter().enumerate() {
        let name = f["family"].as_str().unwrap();
        let factors = &f["factors"];
        if factors != &r["all_rows_factors"] {
            moved += 1;
        }
        let out = predictions_with(tmp.path(), &format!("fold{k}.toml"), factors);
        let mut mine: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        let mut others = Vec::new();
        for p in preds {
            let key = key_of(p);
            let measured = p["measured"].as_f64().unwrap();
            let error = (out[&key] / measured - 1.0) * 100.0;
            if p["family"] == name {
                assert_eq!(
                    p["predicted_out_of_sample"].as_f64().unwrap(),
                    out[&key],
                    "{key:?}"
                );
                // serde_json parses floats to within an ulp, not always exactly.
                let reported = p["pct_error_out_of_sample"].as_f64().unwrap();
                assert!(
                    (reported - error).abs() < 1e-9,
                    "{key:?}: {reported} vs {error}"
                );
                mine.entry(key.1).or_default().push(error.abs());
            } else {
                others.push((key.1, error));
            }
        }
        let train = f["train_objective"].as_f64().unwrap();
        assert!(
            (train - objective(&others)).abs() < 1e-12,
            "{name}: {train} vs {}",
            objective(&others)
        );
        assert!(
            train <= f["train_objective_start"].as_f64().unwrap(),
            "{name}"
        );
        for (metric, mut abs) in mine {
            abs.sort_by(f64::total_cmp);
            let e = &f["metrics"][&metric]["out_of_sample"];
            assert_eq!(e["n"].as_u64().unwrap() as usize, abs.len());
            assert!(
                (e["median_abs_pct_err"].as_f64().unwrap() - percentile(&abs, 0.5)).abs() < 1e-12
            );
            assert!((e["p90_abs_pct_err"].as_f64().unwrap() - percentile(&abs, 0.9)).abs() < 1e-12);
        }
    }
    // Leaving NeMo out moves the shared and training factors: the test is not of a no-op.
    assert!(moved >= 1, "no fold moved a factor");
    let nemo = families.iter().find(|f| f["family"] == NEMO).unwrap();
    assert_ne!(nemo["factors"], r["all_rows_factors"]);
    let m = &nemo["metrics"]["model_tflops_per_gpu"];
    assert_ne!(
        m["in_sample"]["median_abs_pct_err"],
        m["out_of_sample"]["median_abs_pct_err"]
    );
}

/// A fold's factors do not depend on the rows it leaves out: doubling every NeMo measurement
/// changes the all-rows fit's errors on them but neither the factors fitted without them nor
/// their out-of-sample predictions; the other folds, which see the doubled rows, may move.
#[test]
fn a_fold_does_not_see_its_family() {
    let tmp = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(root().join(FIXTURE)).unwrap();
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let header = reader.headers().unwrap().clone();
    let value = header.iter().position(|h| h == "value").unwrap();
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.write_record(&header).unwrap();
    for record in reader.records() {
        let record = record.unwrap();
        let mut fields: Vec<String> = record.iter().map(str::to_string).collect();
        if fields[2].starts_with("NVIDIA NeMo Framework") {
            fields[value] = (fields[value].parse::<f64>().unwrap() * 2.0).to_string();
        }
        writer.write_record(&fields).unwrap();
    }
    let perturbed = tmp.path().join("perturbed.csv");
    std::fs::write(&perturbed, writer.into_inner().unwrap()).unwrap();

    let (a, b) = (loo(FIXTURE), loo(perturbed.to_str().unwrap()));
    let fold = |r: &Value| {
        r["families"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["family"] == NEMO)
            .unwrap()
            .clone()
    };
    assert_eq!(fold(&a)["factors"], fold(&b)["factors"]);
    assert_eq!(fold(&a)["train_objective"], fold(&b)["train_objective"]);
    let nemo_rows = |r: &Value| -> Vec<Value> {
        r["predictions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["family"] == NEMO)
            .cloned()
            .collect()
    };
    let (pa, pb) = (nemo_rows(&a), nemo_rows(&b));
    assert_eq!(pa.len(), 6);
    for (x, y) in pa.iter().zip(&pb) {
        assert_eq!(x["predicted_out_of_sample"], y["predicted_out_of_sample"]);
        assert_eq!(
            y["measured"].as_f64().unwrap(),
            2.0 * x["measured"].as_f64().unwrap()
        );
        assert_ne!(x["pct_error_out_of_sample"], y["pct_error_out_of_sample"]);
    }
}

/// The leave-one-out report's text and Markdown forms carry the same tables; --quick needs
/// --leave-one-out, and a source no family matches is an error naming it.
#[test]
fn leave_one_out_formats_and_errors() {
    let o = run(&[
        "validate",
        FIXTURE,
        "--leave-one-out",
        "--quick",
        "--markdown",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let md = stdout(&o);
    for heading in [
        "### Source families",
        "### Error per metric, in sample and out of sample",
        "### Per family",
        "### Fitted factors",
    ] {
        assert!(md.contains(heading), "{heading}\n{md}");
    }
    assert!(
        md.contains("| NeMo 24.07 performance summary | 6 | 3 | 6 |"),
        "{md}"
    );
    assert!(
        stderr(&o).contains("[without NeMo 24.07 performance summary] objective"),
        "{}",
        stderr(&o)
    );

    let o = run(&["validate", FIXTURE, "--quick"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("--leave-one-out"), "{}", stderr(&o));

    let o = run(&[
        "validate",
        "tests/data/validate-fixture.csv",
        "--leave-one-out",
        "--quick",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        "error: tests/data/validate-fixture.csv:2: column source: \"fixture\" (case \"fixed-8b-offline\") belongs to no source family, so it cannot be left out as one\nhint: --leave-one-out leaves out one publication at a time, and docs/validation.md (\"Source families\") says how it groups the sources; give the row one of them, or validate the file without --leave-one-out\n"
    );
}

/// What each factor reaches: the reported counts of `training.gemm_efficiency` are the
/// predictions plain `validate` gives different values for over that factor's quick-grid
/// candidates, the other factors at the all-rows fit, counted by family; the inference-only
/// factors reach nothing here, since the fixture's MLPerf cases run on GPUs whose kernels are
/// measured (the factors time only kernels without surfaces), and no training factor reaches
/// an inference case.
#[test]
fn factor_reach_is_what_moving_the_factor_moves() {
    let tmp = tempfile::tempdir().unwrap();
    let r = loo(FIXTURE);
    let reach = &r["factor_reach"];
    let count = |factor: &str| -> BTreeMap<String, u64> {
        reach[factor]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
            .collect()
    };
    let family: BTreeMap<(String, String), String> = r["predictions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (key_of(p), p["family"].as_str().unwrap().to_string()))
        .collect();
    // The quick grid of `training.gemm_efficiency`: every other value of the full grid, both
    // ends kept.
    let candidates = [0.6, 0.7, 0.8, 0.85, 0.9, 1.0];
    let mut seen: BTreeMap<(String, String), Vec<f64>> = BTreeMap::new();
    for (k, c) in candidates.iter().enumerate() {
        let mut factors = r["all_rows_factors"].clone();
        factors["training.gemm_efficiency"] = serde_json::json!(c);
        for (key, v) in predictions_with(tmp.path(), &format!("reach{k}.toml"), &factors) {
            seen.entry(key).or_default().push(v);
        }
    }
    let mut moved: BTreeMap<String, u64> = BTreeMap::new();
    for (key, v) in &seen {
        if v.iter().any(|x| x.to_bits() != v[0].to_bits()) {
            *moved.entry(family[key].clone()).or_default() += 1;
        }
    }
    assert_eq!(
        moved,
        BTreeMap::from([
            ("Narayanan et al. 2021 (Megatron-LM)".to_string(), 4),
            (NEMO.to_string(), 6),
        ])
    );
    assert_eq!(count("training.gemm_efficiency"), moved);
    for training in ["training.gemm_half_width", "training.tp_comm_overlap"] {
        assert!(
            count(training).keys().all(|f| f != "MLPerf Inference v4.0"),
            "{training}"
        );
    }
    for inference in ["serving_gemm_efficiency", "gemm_half_rows"] {
        assert!(count(inference).is_empty(), "{inference}");
    }
    let report = run(&[
        "validate",
        FIXTURE,
        "--leave-one-out",
        "--quick",
        "--markdown",
    ]);
    let text = stdout(&report);
    assert!(
        text.contains(&format!(
            "| `training.gemm_efficiency` | 10 | 2 | Narayanan et al. 2021 (Megatron-LM) 4, {NEMO} 6 |"
        )),
        "{text}"
    );
    assert!(
        text.contains("| `serving_gemm_efficiency` | 0 | 0 | - |"),
        "{text}"
    );
}
