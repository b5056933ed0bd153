//! `racksweep top` and `racksweep pareto` on a finished run, checked against the run's own
//! frontier and against brute force over the rows read back from Parquet.

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use arrow_array::RecordBatch;
use common::{
    best_ids, column_f64, column_flags, column_labels, column_u32, column_u64, finished,
    read_configs, read_parquet, run, stderr, stdout,
};

/// A finished quickstart run in a temporary directory.
fn quickstart() -> (tempfile::TempDir, std::path::PathBuf) {
    finished("sweeps/quickstart.toml", "quickstart")
}

/// The config_ids of printed rows (first column of a table or of CSV), checked against the row
/// count on stderr.
fn printed_ids(o: &std::process::Output) -> Vec<u64> {
    let out = stdout(o);
    let mut lines = out.lines();
    assert!(lines.next().unwrap().starts_with("config_id"), "{out}");
    let ids: Vec<u64> = lines
        .map(|l| {
            let mut cells = l.split(|c: char| c == ',' || c.is_whitespace());
            cells.find(|c| !c.is_empty()).unwrap().parse().unwrap()
        })
        .collect();
    assert_eq!(stderr(o), format!("{} rows\n", ids.len()), "{out}");
    ids
}

struct Rows {
    ids: Vec<u64>,
    columns: Vec<RecordBatch>,
}

impl Rows {
    fn read(dir: &Path) -> Rows {
        let columns = read_configs(dir);
        let ids = column_u64(&columns, "config_id");
        Rows { ids, columns }
    }

    fn f64(&self, name: &str) -> Vec<Option<f64>> {
        column_f64(&self.columns, name)
    }

    fn u32(&self, name: &str) -> Vec<Option<u32>> {
        column_u32(&self.columns, name)
    }

    fn label(&self, name: &str) -> Vec<String> {
        column_labels(&self.columns, name)
    }

    fn feasible(&self) -> Vec<bool> {
        column_flags(&self.columns, "feasible")
    }
}

#[test]
fn pareto_with_the_sweeps_own_rules_is_the_runs_frontier() {
    let (_tmp, dir) = quickstart();
    let o = run(&[
        "pareto",
        dir.to_str().unwrap(),
        "--format",
        "csv",
        "--objective",
        "max tokens_per_s_per_gpu",
        "--objective",
        "max tokens_per_s_per_user",
        "--where",
        "ttft_ms <= 2000",
        "--where",
        "tokens_per_s_per_user >= 10",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let printed = printed_ids(&o);
    let (pareto, _) = read_parquet(&dir.join("pareto.parquet"));
    let expected = column_u64(&pareto, "config_id");
    assert_eq!(printed, expected, "same rows, same order");
}

/// A sized sweep: rows that miss the demand or the SLOs never enter, as in the engine.
#[test]
fn pareto_reproduces_a_sized_runs_frontier_from_its_manifest() {
    let (_tmp, dir) = finished("sweeps/qwen3-235b-50k-users.toml", "qwen3-235b-50k-users");
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    let mut args = vec!["pareto".to_string(), dir.to_str().unwrap().to_string()];
    args.extend(["--format".into(), "csv".into()]);
    for o in m["objectives"].as_array().unwrap() {
        args.extend(["--objective".into(), o.as_str().unwrap().to_string()]);
    }
    for c in m["constraints"].as_array().unwrap() {
        args.extend(["--where".into(), c.as_str().unwrap().to_string()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let (pareto, _) = read_parquet(&dir.join("pareto.parquet"));
    let expected = column_u64(&pareto, "config_id");
    assert!(!expected.is_empty());
    assert_eq!(printed_ids(&o), expected);
}

#[test]
fn pareto_under_other_objectives_matches_brute_force() {
    let (_tmp, dir) = quickstart();
    let o = run(&[
        "pareto",
        dir.to_str().unwrap(),
        "--format",
        "csv",
        "--objective",
        "min ttft_ms",
        "--objective",
        "max output_tokens_per_s",
        "--where",
        "tpot_ms <= 40",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let printed: BTreeSet<u64> = printed_ids(&o).into_iter().collect();

    let rows = Rows::read(&dir);
    let (ttft, out, tpot, ok) = (
        rows.f64("ttft_ms"),
        rows.f64("output_tokens_per_s"),
        rows.f64("tpot_ms"),
        rows.feasible(),
    );
    let admitted: Vec<(u64, f64, f64)> = (0..rows.ids.len())
        .filter(|&i| ok[i] && tpot[i].is_some_and(|t| t <= 40.0))
        .filter_map(|i| Some((rows.ids[i], -ttft[i]?, out[i]?)))
        .collect();
    let expected: BTreeSet<u64> = admitted
        .iter()
        .filter(|&&(_, a, b)| {
            !admitted
                .iter()
                .any(|&(_, x, y)| x >= a && y >= b && (x > a || y > b))
        })
        .map(|&(id, _, _)| id)
        .collect();
    assert!(!expected.is_empty());
    assert_eq!(printed, expected);
}

#[test]
fn top_ranks_admitted_rows() {
    let (_tmp, dir) = quickstart();
    let o = run(&[
        "top",
        dir.to_str().unwrap(),
        "--by",
        "tokens_per_s_per_gpu",
        "-n",
        "5",
        "--where",
        "ttft_ms <= 1000",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let printed = printed_ids(&o);

    let rows = Rows::read(&dir);
    let (gpu, ttft, ok) = (
        rows.f64("tokens_per_s_per_gpu"),
        rows.f64("ttft_ms"),
        rows.feasible(),
    );
    let admitted: Vec<(f64, u64)> = (0..rows.ids.len())
        .filter(|&i| ok[i] && ttft[i].is_some_and(|t| t <= 1000.0))
        .filter_map(|i| Some((gpu[i]?, rows.ids[i])))
        .collect();
    assert_eq!(printed, best_ids(admitted, 5, true));

    // "min" ranks lowest first.
    let o = run(&[
        "top",
        dir.to_str().unwrap(),
        "--by",
        "min ttft_ms",
        "-n",
        "3",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let printed = printed_ids(&o);
    let fastest: Vec<(f64, u64)> = (0..rows.ids.len())
        .filter(|&i| ok[i])
        .filter_map(|i| Some((ttft[i]?, rows.ids[i])))
        .collect();
    assert_eq!(printed, best_ids(fastest, 3, false));
}

#[test]
fn analytics_errors_name_the_flag_and_value() {
    let (tmp, dir) = quickstart();
    let d = dir.to_str().unwrap();
    for (args, needle) in [
        (
            vec!["top", d, "--by", "tokens_per_gpu"],
            "--by \"tokens_per_gpu\": unknown inference column",
        ),
        (vec!["top", d, "--by", "hardware"], "is not numeric"),
        (
            vec!["top", d, "--by", "ttft_ms", "--where", "ttft_ms =< 3"],
            "--where \"ttft_ms =< 3\"",
        ),
        (
            vec!["pareto", d, "--objective", "best ttft_ms"],
            "--objective \"best ttft_ms\"",
        ),
        (
            vec!["top", tmp.path().to_str().unwrap(), "--by", "ttft_ms"],
            "not a racksweep run directory",
        ),
        (
            vec!["top", d, "--by", "ttft_ms", "--where", "hardware == h100"],
            "no row of",
        ),
        (
            vec!["top", d, "--by", "ttft_ms", "--where", "hardware == h100"],
            "hardware in this run: b200, h100-sxm, h200-sxm, mi300x",
        ),
        (
            vec![
                "pareto",
                d,
                "--objective",
                "max batch",
                "--where",
                "tp != 2",
            ],
            "applies to label columns",
        ),
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
    }
}

/// Objectives the command line gives pass the sweep parser's checks: config_id is no
/// objective, and a column cannot be maximized and minimized at once; both are user errors
/// (exit 1), not a failed query.
#[test]
fn pareto_objectives_are_checked_as_a_sweeps_are() {
    let (_tmp, dir) = quickstart();
    let d = dir.to_str().unwrap();
    for (args, expected) in [
        (
            vec![
                "pareto",
                d,
                "--objective",
                "min config_id",
                "--objective",
                "max tokens_per_s_per_gpu",
            ],
            "error: --objective \"min config_id\": config_id is an index into the grid, not an objective\nhint: rank by a metric, e.g. \"max tokens_per_s_per_gpu\"\n",
        ),
        (
            vec![
                "pareto",
                d,
                "--objective",
                "max ttft_ms",
                "--objective",
                "min ttft_ms",
            ],
            "error: --objective \"min ttft_ms\": \"min ttft_ms\" asks the opposite of objective 0 (max ttft_ms): a column cannot be both maximized and minimized\nhint: name each column once\n",
        ),
        (
            vec![
                "pareto",
                d,
                "--objective",
                "max ttft_ms",
                "--objective",
                "max ttft_ms",
            ],
            "error: --objective \"max ttft_ms\": \"max ttft_ms\" repeats objective 0 (max ttft_ms)\nhint: name each column once\n",
        ),
        (
            vec!["top", d, "--by", "config_id"],
            "error: --by \"config_id\": config_id is an index into the grid, not an objective\nhint: rank by a metric, e.g. \"max tokens_per_s_per_gpu\"\n",
        ),
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert_eq!(stderr(&o), expected, "{args:?}");
    }
}

/// Label filters: `==` keeps one hardware (or format), `!=` drops it, with numeric ones alongside.
#[test]
fn top_filters_on_labels() {
    let (_tmp, dir) = quickstart();
    let o = run(&[
        "top",
        dir.to_str().unwrap(),
        "--by",
        "tokens_per_s_per_gpu",
        "-n",
        "4",
        "--where",
        "hardware == h100-sxm",
        "--where",
        "weight_dtype != fp8",
        "--where",
        "ttft_ms <= 1000",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let printed = printed_ids(&o);
    assert_eq!(printed.len(), 4);
    for line in out.lines().skip(1).take(4) {
        let cells: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(cells[1], "h100-sxm", "{line}");
        assert_ne!(cells[7], "fp8", "{line}");
    }

    let rows = Rows::read(&dir);
    let (gpu, ttft, ok) = (
        rows.f64("tokens_per_s_per_gpu"),
        rows.f64("ttft_ms"),
        rows.feasible(),
    );
    let (hw, weights) = (rows.label("hardware"), rows.label("weight_dtype"));
    let admitted: Vec<(f64, u64)> = (0..rows.ids.len())
        .filter(|&i| ok[i] && ttft[i].is_some_and(|t| t <= 1000.0))
        .filter(|&i| hw[i] == "h100-sxm" && weights[i] != "fp8")
        .filter_map(|i| Some((gpu[i]?, rows.ids[i])))
        .collect();
    assert_eq!(printed, best_ids(admitted, 4, true));
}

/// `and`, `or` and parentheses in one --where, against brute force: `and` binds first.
#[test]
fn top_filters_with_and_or_and_parentheses() {
    let (_tmp, dir) = quickstart();
    let d = dir.to_str().unwrap();
    let rows = Rows::read(&dir);
    let (gpu, ttft, ok, hw) = (
        rows.f64("tokens_per_s_per_gpu"),
        rows.f64("ttft_ms"),
        rows.feasible(),
        rows.label("hardware"),
    );
    let fast = |i: usize| ttft[i].is_some_and(|t| t <= 100.0);
    let mut answers = Vec::new();
    for (filter, keep) in [
        (
            "hardware == h100-sxm or hardware == mi300x and ttft_ms <= 100",
            &(|i: usize| hw[i] == "h100-sxm" || (hw[i] == "mi300x" && fast(i)))
                as &dyn Fn(usize) -> bool,
        ),
        (
            "(hardware == h100-sxm or hardware == mi300x) and ttft_ms <= 100",
            &|i: usize| (hw[i] == "h100-sxm" || hw[i] == "mi300x") && fast(i),
        ),
    ] {
        let o = run(&[
            "top",
            d,
            "--by",
            "tokens_per_s_per_gpu",
            "-n",
            "30",
            "--format",
            "csv",
            "--where",
            filter,
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let admitted: Vec<(f64, u64)> = (0..rows.ids.len())
            .filter(|&i| ok[i] && keep(i))
            .filter_map(|i| Some((gpu[i]?, rows.ids[i])))
            .collect();
        let want = best_ids(admitted, 30, true);
        assert_eq!(want.len(), 30, "{filter}");
        assert_eq!(printed_ids(&o), want, "{filter}");
        answers.push(want);
    }
    assert_ne!(answers[0], answers[1], "the parentheses change the answer");
}

/// A finished run of the small training sweep in a temporary directory.
fn training_small() -> (tempfile::TempDir, std::path::PathBuf) {
    finished("tests/specs/training-small.toml", "training-small")
}

/// The printed cells of column `name` of a printed table, row by row.
fn printed_column(out: &str, name: &str) -> Vec<String> {
    let mut lines = out.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    let at = header
        .iter()
        .position(|&h| h == name)
        .unwrap_or_else(|| panic!("no column {name} in {header:?}"));
    lines
        .take_while(|l| !l.ends_with(" rows"))
        .map(|l| l.split_whitespace().nth(at).unwrap().to_string())
        .collect()
}

/// `top` on a training run: the best MFU among fp8 layouts, and the shortest steps on at most
/// 1,024 GPUs, against brute force. Only feasibility and --where admit a row (the sweep's own
/// constraints do not apply, as for inference runs).
#[test]
fn top_ranks_a_training_runs_layouts() {
    let (_tmp, dir) = training_small();
    let d = dir.to_str().unwrap();
    let o = run(&[
        "top",
        d,
        "--by",
        "mfu_pct",
        "-n",
        "6",
        "--where",
        "precision == fp8",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let printed = printed_ids(&o);
    assert!(printed_column(&out, "precision").iter().all(|p| p == "fp8"));

    let rows = Rows::read(&dir);
    let (mfu, step, gpus, ok, precision) = (
        rows.f64("mfu_pct"),
        rows.f64("step_time_s"),
        rows.u32("gpus"),
        rows.feasible(),
        rows.label("precision"),
    );
    let fp8: Vec<(f64, u64)> = (0..rows.ids.len())
        .filter(|&i| ok[i] && precision[i] == "fp8")
        .filter_map(|i| Some((mfu[i]?, rows.ids[i])))
        .collect();
    let want = best_ids(fp8, 6, true);
    assert_eq!(printed, want);
    // The printed MFUs are the rows' own, best first.
    let mfu_of = |id: u64| mfu[rows.ids.iter().position(|&x| x == id).unwrap()].unwrap();
    let shown: Vec<String> = want
        .iter()
        .map(|&id| racksweep::format::number(mfu_of(id)))
        .collect();
    assert_eq!(printed_column(&out, "mfu_pct"), shown);

    // Without the filter bf16 layouts compete; a numeric --where on a training column.
    let o = run(&[
        "top",
        d,
        "--by",
        "min step_time_s",
        "-n",
        "4",
        "--where",
        "gpus <= 1024",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let fastest: Vec<(f64, u64)> = (0..rows.ids.len())
        .filter(|&i| ok[i] && gpus[i].is_some_and(|g| g <= 1024))
        .filter_map(|i| Some((step[i]?, rows.ids[i])))
        .collect();
    assert_eq!(printed_ids(&o), best_ids(fastest, 4, false));
}

/// A Pareto frontier of a training run under objectives other than the sweep's: nothing on it
/// is dominated, and every admitted layout off it is.
#[test]
fn pareto_on_a_training_run_matches_brute_force() {
    let (_tmp, dir) = training_small();
    let o = run(&[
        "pareto",
        dir.to_str().unwrap(),
        "--format",
        "csv",
        "--objective",
        "max mfu_pct",
        "--objective",
        "min usd_per_run",
        "--objective",
        "min hbm_used_gb_per_gpu",
        "--where",
        "precision == fp8",
        "--where",
        "facility_power_kw <= 4000",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let printed: BTreeSet<u64> = printed_ids(&o).into_iter().collect();

    let rows = Rows::read(&dir);
    let (mfu, usd, hbm, kw, ok, precision) = (
        rows.f64("mfu_pct"),
        rows.f64("usd_per_run"),
        rows.f64("hbm_used_gb_per_gpu"),
        rows.f64("facility_power_kw"),
        rows.feasible(),
        rows.label("precision"),
    );
    // Keys oriented so that larger is better.
    let admitted: Vec<(u64, [f64; 3])> = (0..rows.ids.len())
        .filter(|&i| ok[i] && precision[i] == "fp8" && kw[i].is_some_and(|k| k <= 4000.0))
        .filter_map(|i| Some((rows.ids[i], [mfu[i]?, -usd[i]?, -hbm[i]?])))
        .collect();
    let dominates = |a: &[f64; 3], b: &[f64; 3]| {
        a.iter().zip(b).all(|(x, y)| x >= y) && a.iter().zip(b).any(|(x, y)| x > y)
    };
    let dominated = |k: &[f64; 3]| admitted.iter().any(|(_, other)| dominates(other, k));
    assert!(printed.len() > 2, "{printed:?}");
    for (id, k) in &admitted {
        if printed.contains(id) {
            assert!(!dominated(k), "{id} is on the frontier and dominated");
        } else {
            assert!(dominated(k), "{id} is off the frontier and not dominated");
        }
    }
    let admitted_ids: BTreeSet<u64> = admitted.iter().map(|p| p.0).collect();
    assert!(printed.is_subset(&admitted_ids));
}

/// `pareto` with a training sweep's own objectives and constraints reproduces the frontier
/// the engine wrote.
#[test]
fn pareto_reproduces_a_training_runs_frontier() {
    let (_tmp, dir) = training_small();
    let o = run(&[
        "pareto",
        dir.to_str().unwrap(),
        "--format",
        "csv",
        "--objective",
        "min effective_time_to_train_days",
        "--objective",
        "min usd_per_run",
        "--where",
        "effective_time_to_train_days <= 10",
        "--where",
        "facility_power_kw <= 4000",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (pareto, _) = read_parquet(&dir.join("pareto.parquet"));
    let expected = column_u64(&pareto, "config_id");
    assert!(!expected.is_empty());
    assert_eq!(printed_ids(&o), expected);
}

/// Inference columns asked of a training run: an error naming the run's mode, with the nearest
/// training column when one is close.
#[test]
fn training_analytics_errors_name_the_mode_and_suggest() {
    let (_tmp, dir) = training_small();
    let d = dir.to_str().unwrap();
    for (args, needles) in [
        (
            vec!["top", d, "--by", "usd_per_mtok"],
            vec![
                "--by \"usd_per_mtok\": unknown training column \"usd_per_mtok\"",
                "hint: \"usd_per_mtok\" is a column of inference runs; did you mean \"usd_per_run\"?",
            ],
        ),
        (
            vec!["top", d, "--by", "mfu_pc"],
            vec![
                "unknown training column \"mfu_pc\"",
                "did you mean \"mfu_pct\"",
            ],
        ),
        (
            vec!["pareto", d, "--objective", "min ttft_ms"],
            vec![
                "--objective \"min ttft_ms\": unknown training column \"ttft_ms\"",
                "\"ttft_ms\" is a column of inference runs",
            ],
        ),
        (
            vec![
                "top",
                d,
                "--by",
                "mfu_pct",
                "--where",
                "weight_dtype == fp8",
            ],
            vec!["unknown training column \"weight_dtype\""],
        ),
        (
            vec!["top", d, "--by", "mfu_pct", "--where", "precision == fp4"],
            vec!["precision in this run: bf16, fp8"],
        ),
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(stdout(&o).is_empty(), "{args:?}");
        for needle in needles {
            assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
        }
    }
}
