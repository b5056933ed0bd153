//! Workload axes (issue 22): one sweep over 2 models x 2 prompt lengths x 4 user counts answers
//! what 16 single-workload sweeps answer, row for row and frontier for frontier, and a sized
//! cluster never shrinks as users grow.

use std::collections::BTreeMap;
use std::path::Path;

use racksweep::columns::Row;
use racksweep::engine::Space;
use racksweep::grid::Point;
use racksweep::pareto::Frontier;
use racksweep::space::Inference;
use racksweep::spec::{self, Spec};

mod common;

const MODELS: [&str; 2] = ["llama-3.1-8b", "llama-3.1-70b"];
const INPUTS: [u32; 2] = [1024, 4096];
const USERS: [u32; 4] = [5000, 10000, 20000, 40000];

/// The layouts every workload is sized on: two GPUs, tp and batch, both ownerships.
const GRID: &str = r#"hardware = ["h100-sxm", "h200-sxm"]
racks = "auto"
tp = [1, 2, 4, 8]
batch = [16, 64, 256]
ownership = ["cloud", "owned"]
"#;

const SWEEP: &str = r#"[sweep]
name = "w"
objectives = ["min usd_per_month", "max tokens_per_s_per_user_at_load"]
ttft_p99_ms = 2000
"#;

fn parse(text: &str) -> Spec {
    spec::parse(Path::new("w.toml"), text, spec::DEFAULT_MAX_CONFIGS)
        .unwrap_or_else(|e| panic!("{e}\n{text}"))
        .into_inference()
        .expect("an inference sweep")
}

/// The sweep with workload axes.
fn multi() -> Spec {
    parse(&format!(
        "{SWEEP}[workload]\nmodel = \"llama-3.1-8b\"\ninput_tokens = 2048\noutput_tokens = 256\n\
         think_s = 5\n[workload.demand]\nconcurrent_users = 1\n[grid]\n{GRID}\
         model = {MODELS:?}\ninput_tokens = {INPUTS:?}\nconcurrent_users = {USERS:?}\n"
    ))
}

/// The single-workload sweep of one combination.
fn single(model: &str, input: u32, users: u32) -> Spec {
    parse(&format!(
        "{SWEEP}[workload]\nmodel = \"{model}\"\ninput_tokens = {input}\noutput_tokens = 256\n\
         think_s = 5\n[workload.demand]\nconcurrent_users = {users}\n[grid]\n{GRID}"
    ))
}

/// Every row of a sweep, and its frontier.
fn evaluate(spec: &Spec) -> (Vec<Row>, Vec<Row>) {
    let contexts = spec.contexts();
    let space = Inference::new(&contexts, &spec.grid);
    let rows: Vec<Row> = (0..space.len()).map(|i| space.evaluate(i)).collect();
    let h = &spec.header;
    let mut frontier = Frontier::new(h.objectives.clone(), h.constraints.clone());
    frontier.extend(&rows);
    (rows, frontier.rows().to_vec())
}

/// A row as compared across sweeps: its layout (the point without its workload) and every
/// number of its estimate, bit for bit (`Debug` prints NaN alike).
fn same(a: &Row, b: &Row) -> bool {
    let layout = |p: &Point| Point { workload: 0, ..*p };
    layout(&a.point) == layout(&b.point)
        && format!("{:?}", a.estimate) == format!("{:?}", b.estimate)
}

#[test]
fn workload_axes_answer_what_single_sweeps_answer() {
    let m = multi();
    assert_eq!(m.workloads.len(), 16);
    let (rows, frontier) = evaluate(&m);
    let per_workload = rows.len() / 16;
    let mut k = 0;
    for model in MODELS {
        for input in INPUTS {
            for users in USERS {
                let s = single(model, input, users);
                assert_eq!(s.grid.len() as usize, per_workload);
                let (single_rows, single_frontier) = evaluate(&s);
                // Workload k's rows are the single sweep's, in order, config_ids offset by k
                // workloads, with the workload's columns.
                let mine = &rows[k * per_workload..(k + 1) * per_workload];
                for (a, b) in mine.iter().zip(&single_rows) {
                    assert_eq!(a.config_id, (k * per_workload) as u64 + b.config_id);
                    assert!(same(a, b), "workload {k} config {}", b.config_id);
                    assert_eq!(a.workload.id, k as u32);
                    assert_eq!(a.workload.input_tokens, f64::from(input));
                    assert_eq!(a.workload.given_concurrent_users, f64::from(users));
                    assert_eq!(a.workload.think_s, 5.0);
                }
                // Its frontier is the single sweep's, row for row.
                let mine: Vec<&Row> = frontier
                    .iter()
                    .filter(|r| r.workload.id == k as u32)
                    .collect();
                assert!(
                    !single_frontier.is_empty(),
                    "{model} {input} {users}: empty frontier"
                );
                assert_eq!(mine.len(), single_frontier.len(), "{model} {input} {users}");
                for (a, b) in mine.iter().zip(&single_frontier) {
                    assert!(
                        same(a, b),
                        "{model} {input} {users}: frontier row {}",
                        b.config_id
                    );
                }
                k += 1;
            }
        }
    }
}

/// For every layout, model and prompt length, the sized racks never decrease as users grow, and
/// a layout that serves more users also serves fewer.
#[test]
fn sized_racks_never_decrease_with_users() {
    let m = multi();
    let (rows, _) = evaluate(&m);
    /// Model, prompt length, and the layout: platform, tp, batch, ownership.
    type Layout = (u32, u32, [u32; 4]);
    let mut by_layout: BTreeMap<Layout, Vec<(f64, &Row)>> = BTreeMap::new();
    for r in &rows {
        let p = r.point;
        let key = (
            r.workload.model as u32,
            r.workload.input_tokens as u32,
            [p.platform, p.tp, p.batch, p.ownership],
        );
        by_layout
            .entry(key)
            .or_default()
            .push((r.workload.given_concurrent_users, r));
    }
    let mut sized = 0;
    for (key, mut series) in by_layout {
        assert_eq!(series.len(), USERS.len());
        series.sort_by(|a, b| a.0.total_cmp(&b.0));
        let racks: Vec<Option<u32>> = series
            .iter()
            .map(|(_, r)| {
                (r.estimate.racks > 0 && r.estimate.reason.is_none()).then_some(r.estimate.racks)
            })
            .collect();
        for w in racks.windows(2) {
            match (w[0], w[1]) {
                (Some(a), Some(b)) => {
                    assert!(a <= b, "{key:?}: racks {racks:?} over users {USERS:?}");
                    sized += 1;
                }
                (None, Some(_)) => panic!("{key:?}: sized at more users but not fewer: {racks:?}"),
                _ => {}
            }
        }
    }
    assert!(sized > 100, "only {sized} pairs sized");
}

/// The demand axis needs the demand given the same way, and a value once.
#[test]
fn workload_axis_errors_name_the_key() {
    let text = |grid: &str| {
        format!(
            "{SWEEP}[workload]\nmodel = \"llama-3.1-8b\"\ninput_tokens = 2048\noutput_tokens = 256\n\
             [workload.demand]\nrequests_per_s = 10\n[grid]\nhardware = [\"h100-sxm\"]\n{grid}"
        )
    };
    let err = |grid: &str| {
        spec::parse(Path::new("w.toml"), &text(grid), spec::DEFAULT_MAX_CONFIGS)
            .err()
            .unwrap_or_else(|| panic!("{grid}: accepted"))
    };
    let e = err("concurrent_users = [10, 20]");
    assert!(
        e.message
            .contains("workload.demand: sets requests_per_s, while grid.concurrent_users sweeps"),
        "{}",
        e.message
    );
    let e = err("input_tokens = [1024, 1024]");
    assert!(
        e.message
            .contains("grid.input_tokens: a value appears twice"),
        "{}",
        e.message
    );
    let e = err("model = [\"llama-3.1-8bb\"]");
    assert!(
        e.message
            .contains("grid.model: unknown model \"llama-3.1-8bb\""),
        "{}",
        e.message
    );
    let e = err("input_tokens = [0.5]");
    assert!(
        e.message
            .contains("grid.input_tokens: 0.5 is less than one token"),
        "{}",
        e.message
    );
    let e = err("input_tokens = [131000]");
    assert!(
        e.message.contains("exceeds the context of llama-3.1-8b"),
        "{}",
        e.message
    );
    assert!(
        e.message
            .contains("(in the workload combination llama-3.1-8b, 131000 in / 256 out)"),
        "{}",
        e.message
    );
    let e = err("demand_scale = [0]");
    assert!(
        e.message.contains("grid.demand_scale: 0 must be positive"),
        "{}",
        e.message
    );
    let e = err("requests_per_s = [1]\ntokens_per_day = [1e9]");
    assert!(
        e.message
            .contains("grid.tokens_per_day: the grid already sweeps grid.requests_per_s"),
        "{}",
        e.message
    );
}

/// demand_scale multiplies the load: at 1.2 the demanded request rate is 1.2 times that at 1.
#[test]
fn demand_scale_scales_the_load() {
    let s = parse(&format!(
        "{SWEEP}[workload]\nmodel = \"llama-3.1-8b\"\ninput_tokens = 1024\noutput_tokens = 256\n\
         [workload.demand]\nrequests_per_s = 50\n[grid]\nhardware = [\"h100-sxm\"]\nracks = [4]\n\
         tp = [1]\nbatch = [64]\ndemand_scale = [1.0, 1.2]\n"
    ));
    let (rows, _) = evaluate(&s);
    assert_eq!(rows.len(), 2);
    let (a, b) = (&rows[0].estimate, &rows[1].estimate);
    assert_eq!(a.demand_requests_per_s, 50.0);
    assert!(
        (b.demand_requests_per_s - 60.0).abs() < 1e-9,
        "{}",
        b.demand_requests_per_s
    );
    assert!((b.utilization / a.utilization - 1.2).abs() < 1e-9);
    assert_eq!(rows[1].workload.demand_scale, 1.2);
    assert_eq!(rows[1].workload.given_requests_per_s, 50.0);
}

/// Through `racksweep run`: pareto.parquet is the engine's per-workload frontier (the one
/// computed above from every row), pareto.md has one section per workload, and `racksweep
/// pareto` over the part files recomputes the same rows, workload by workload.
#[test]
fn a_run_writes_one_frontier_per_workload() {
    let tmp = tempfile::tempdir().unwrap();
    let sweep = tmp.path().join("w.toml");
    let m = multi();
    std::fs::write(&sweep, &m.header.text).unwrap();
    let (_runs, run) = common::finished(sweep.to_str().unwrap(), "w");
    let (batches, _) = common::read_parquet(&run.join("pareto.parquet"));
    let ids = common::column_u64(&batches, "config_id");
    let (_, frontier) = evaluate(&m);
    let expected: Vec<u64> = frontier.iter().map(|r| r.config_id).collect();
    assert_eq!(ids, expected);
    let workload = common::column_u32(&batches, "workload_id");
    assert!(workload.windows(2).all(|w| w[0] <= w[1]), "by workload");
    let md = std::fs::read_to_string(run.join("pareto.md")).unwrap();
    assert_eq!(md.matches("\n## Workload ").count(), 16);
    assert!(
        md.contains("## Workload 15: llama-3.1-70b, 4096 in / 256 out, concurrent_users 40000")
    );
    let o = common::run(&[
        "pareto",
        run.to_str().unwrap(),
        "--objective",
        "min usd_per_month",
        "--objective",
        "max tokens_per_s_per_user_at_load",
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let header = common::stdout(&o)
        .lines()
        .next()
        .unwrap_or_default()
        .to_string();
    assert!(header.starts_with("config_id  workload_id"), "{header}");
    // Every row, ties included, in CSV.
    let mut args = vec!["pareto", run.to_str().unwrap(), "--format", "csv"];
    args.extend([
        "--objective",
        "min usd_per_month",
        "--objective",
        "max tokens_per_s_per_user_at_load",
    ]);
    let o = common::run(&args);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let mut listed: Vec<u64> = common::stdout(&o)
        .lines()
        .skip(1)
        .filter_map(|l| l.split(',').next()?.parse().ok())
        .collect();
    listed.sort_unstable();
    let mut expected = expected;
    expected.sort_unstable();
    assert_eq!(listed, expected);
}
