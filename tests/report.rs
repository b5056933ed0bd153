//! `racksweep report` as a planner uses it: the files it writes, what it refuses, and its
//! answers (`analyze::digest`) checked against brute force over the rows read back from Parquet.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use common::{
    assert_snapshot, best_ids, column_f64, column_flags, column_labels, column_u64, read_configs,
    root, run, stderr,
};
use racksweep::analyze::digest::{self, GroupValue, Ranking, Trade};
use racksweep::columns::{Mode, Schema};
use racksweep::format::number;
use racksweep::pareto::{Constraint, Objective};

fn run_sweep(sweep: &str, out: &Path) -> PathBuf {
    let o = run(&["run", sweep, "--quiet", "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let name = Path::new(sweep).file_stem().unwrap().to_str().unwrap();
    out.join(name)
}

/// Ids of the non-dominated points (both keys larger is better), by brute force.
fn brute_frontier(points: &[(u64, f64, f64)]) -> BTreeSet<u64> {
    points
        .iter()
        .filter(|&&(_, a, b)| {
            !points
                .iter()
                .any(|&(_, x, y)| x >= a && y >= b && (x > a || y > b))
        })
        .map(|p| p.0)
        .collect()
}

/// A trade's frontier points as drawn, by brute force: points with equal values are drawn once,
/// by their lowest config_id, with their count (`(id, ties)`, sorted).
fn brute_drawn(points: &[(u64, f64, f64)]) -> Vec<(u64, u64)> {
    let front = brute_frontier(points);
    let mut by_value: BTreeMap<(u64, u64), (u64, u64)> = BTreeMap::new();
    for &(id, x, y) in points.iter().filter(|p| front.contains(&p.0)) {
        let e = by_value
            .entry((x.to_bits(), y.to_bits()))
            .or_insert((id, 0));
        e.0 = e.0.min(id);
        e.1 += 1;
    }
    let mut v: Vec<(u64, u64)> = by_value.into_values().collect();
    v.sort();
    v
}

/// A digest's frontier points as `(id, ties)`, sorted.
fn drawn(front: &[digest::TradePoint]) -> Vec<(u64, u64)> {
    let mut v: Vec<(u64, u64)> = front.iter().map(|p| (p.id, p.ties)).collect();
    v.sort();
    v
}

#[test]
fn the_reports_answers_are_those_of_brute_force() {
    let tmp = tempfile::tempdir().unwrap();
    // The quickstart rented and owned: every point ties with its twin on throughput, so the
    // frontier has tied points to draw once.
    let text = std::fs::read_to_string(root().join("sweeps/quickstart.toml")).unwrap();
    let sweep = tmp.path().join("quickstart.toml");
    std::fs::write(
        &sweep,
        format!("{text}ownership = [\"cloud\", \"owned\"]\n"),
    )
    .unwrap();
    let dir = run_sweep(sweep.to_str().unwrap(), tmp.path());
    let schema = Schema::get(Mode::Inference);
    let objective = |t: &str| Objective::parse(t, schema).unwrap();
    // On the first token of an idle instance: a constraint that admits tied frontier points.
    let constraints = [
        Constraint::parse("ttft_idle_ms <= 2000", schema).unwrap(),
        Constraint::parse("tokens_per_s_per_user >= 10", schema).unwrap(),
    ];
    let hardware = schema.find("hardware").unwrap();
    let rankings = [
        Ranking {
            objective: objective("max tokens_per_s_per_gpu"),
            groups: vec![hardware],
            n: 1,
        },
        Ranking {
            objective: objective("min tpot_ms"),
            groups: Vec::new(),
            n: 7,
        },
    ];
    let trades = [Trade {
        x: objective("max tokens_per_s_per_user"),
        y: objective("max tokens_per_s_per_gpu"),
    }];
    let ask = digest::Ask {
        schema,
        constraints: &constraints,
        rankings: &rankings,
        trades: &trades,
        curves: &[],
        shown: &["config_id", "hardware"],
        extra_ids: &[],
    };
    let run = racksweep::output::run_dir::RunDir::new(dir.clone())
        .open(false)
        .unwrap();
    let d = digest::digest(&run, &ask).unwrap();

    let rows = read_configs(&dir);
    let ids = column_u64(&rows, "config_id");
    let (hw, ok) = (
        column_labels(&rows, "hardware"),
        column_flags(&rows, "feasible"),
    );
    let (ttft, user, gpu, tpot) = (
        column_f64(&rows, "ttft_idle_ms"),
        column_f64(&rows, "tokens_per_s_per_user"),
        column_f64(&rows, "tokens_per_s_per_gpu"),
        column_f64(&rows, "tpot_ms"),
    );
    let fails_ttft = |i: usize| !ttft[i].is_some_and(|t| t <= 2000.0);
    let fails_user = |i: usize| !user[i].is_some_and(|u| u >= 10.0);
    let admitted: Vec<usize> = (0..ids.len())
        .filter(|&i| ok[i] && !fails_ttft(i) && !fails_user(i))
        .collect();

    // Counts: rows, feasible, admitted and each constraint's failures among feasible rows.
    let a = &d.admission;
    assert_eq!(a.rows, ids.len() as u64);
    assert_eq!(a.feasible, ok.iter().filter(|&&f| f).count() as u64);
    assert_eq!(a.admitted, admitted.len() as u64);
    let failing = |f: &dyn Fn(usize) -> bool| (0..ids.len()).filter(|&i| ok[i] && f(i)).count();
    let mut expected = Vec::new();
    for (cause, n) in [
        ("fails ttft_idle_ms <= 2000", failing(&fails_ttft)),
        ("fails tokens_per_s_per_user >= 10", failing(&fails_user)),
    ] {
        if n > 0 {
            expected.push((cause.to_string(), n as u64));
        }
    }
    assert_eq!(a.turned_away, expected);
    assert!(!expected.is_empty(), "the test needs rows turned away");

    // Best per hardware: the highest tokens/s/GPU, lowest config_id among ties.
    let mut best: BTreeMap<&str, (f64, u64)> = BTreeMap::new();
    for &i in &admitted {
        let (v, id) = (gpu[i].unwrap(), ids[i]);
        let e = best.entry(hw[i].as_str()).or_insert((v, id));
        if v > e.0 || (v == e.0 && id < e.1) {
            *e = (v, id);
        }
    }
    let got: Vec<(String, (f64, u64))> = d.ranked[0]
        .iter()
        .map(|(g, list)| {
            let [GroupValue::Label(h)] = g.as_slice() else {
                panic!("hardware groups are labels")
            };
            assert_eq!(list.len(), 1);
            (h.clone(), (list[0].1, list[0].0))
        })
        .collect();
    let want: Vec<(String, (f64, u64))> =
        best.into_iter().map(|(h, b)| (h.to_string(), b)).collect();
    assert_eq!(got, want);
    assert_eq!(got.len(), 4, "every hardware of the quickstart runs");

    // Top 7 by lowest TPOT.
    let by_tpot: Vec<(f64, u64)> = admitted
        .iter()
        .map(|&i| (tpot[i].unwrap(), ids[i]))
        .collect();
    let tpot_of: BTreeMap<u64, f64> = by_tpot.iter().map(|&(v, id)| (id, v)).collect();
    let want: Vec<(u64, f64)> = best_ids(by_tpot, 7, false)
        .into_iter()
        .map(|id| (id, tpot_of[&id]))
        .collect();
    assert_eq!(d.ranked[1], vec![(Vec::new(), want)]);

    // Per-hardware frontiers and the global one.
    let points = |filter: &dyn Fn(usize) -> bool| -> Vec<(u64, f64, f64)> {
        admitted
            .iter()
            .filter(|&&i| filter(i))
            .map(|&i| (ids[i], user[i].unwrap(), gpu[i].unwrap()))
            .collect()
    };
    let t = &d.traded[0];
    assert_eq!(t.per_hardware.len(), 4);
    for (h, front) in &t.per_hardware {
        let on_hw = points(&|i| hw[i] == *h);
        assert_eq!(drawn(front), brute_drawn(&on_hw), "{h}");
        assert!(
            front
                .windows(2)
                .all(|w| w[0].x < w[1].x || (w[0].x == w[1].x && w[0].y < w[1].y))
        );
    }
    let all = points(&|_| true);
    assert_eq!(drawn(&t.global), brute_drawn(&all));
    assert!(
        t.global.iter().any(|p| p.ties > 1),
        "the quickstart has tied frontier points"
    );
    assert!(!t.sample.is_empty() && t.sample.len() <= admitted.len());

    // Every named row's cells were read.
    for id in t.global.iter().map(|p| p.id) {
        let cells = &d.rows[&id];
        assert_eq!(cells[0], id.to_string());
    }
}

/// The report's Markdown with the two timestamps (run and report) masked.
fn masked(md: &str) -> String {
    md.lines()
        .map(|l| {
            if l.starts_with("- **evaluated**") || l.starts_with("- **report**") {
                let key = l.split(": ").next().unwrap();
                format!("{key}: (masked)")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A page that loads nothing: a Content-Security-Policy that forbids every fetch, no sources,
/// no links but anchors, no address but the SVG namespace.
fn assert_self_contained(html: &str) {
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("Content-Security-Policy\" content=\"default-src 'none'"));
    assert!(!html.contains(" src="));
    assert!(html.matches("href=\"").count() == html.matches("href=\"#").count());
    assert_eq!(
        html.matches("http").count(),
        html.matches("http://www.w3.org/2000/svg").count() + html.matches("http-equiv").count()
    );
}

#[test]
fn report_writes_a_self_contained_page_and_markdown() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = run_sweep("sweeps/quickstart.toml", tmp.path());
    let o = run(&["report", dir.to_str().unwrap(), "--top", "5"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("(2 charts)"), "{}", stderr(&o));

    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert_self_contained(&html);
    assert_eq!(html.matches("<svg").count(), 2);
    for h in ["h100-sxm", "h200-sxm", "b200", "mi300x"] {
        assert!(html.contains(&format!(">{h}</text>")), "legend names {h}");
    }
    // Axes carry units.
    assert!(html.contains("tokens_per_s_per_user_at_load (tokens/s, higher is better)"));
    assert!(html.contains("usd_per_mtok (USD/Mtok, lower is better)"));
    // The charts beside report.md are the ones inlined.
    for name in [
        "report-throughput-against-interactivity.svg",
        "report-cost-against-time-to-first-token.svg",
    ] {
        let svg = std::fs::read_to_string(dir.join(name)).unwrap();
        assert!(html.contains(&svg), "{name} is inlined");
    }
    assert!(!dir.join("report-racks-against-users-served.svg").exists());

    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.contains("Not drawn: racks against users served"));
    assert!(md.contains("- **SLOs**: none"));
    assert_snapshot(
        &root().join("tests/snapshots/report-quickstart.md"),
        &masked(&md),
    );
}

/// The review's table of a report.md: its section's text and its rows, cells by header.
fn review_table(md: &str) -> (&str, Vec<BTreeMap<String, String>>) {
    let section = md
        .split("## Cheapest per hardware and ownership")
        .nth(1)
        .expect("the review's table")
        .split("\n## ")
        .next()
        .unwrap();
    let table: Vec<Vec<&str>> = section
        .lines()
        .filter(|l| l.starts_with('|'))
        .map(|l| l.trim_matches('|').split(" | ").map(str::trim).collect())
        .collect();
    let rows = table[2..]
        .iter()
        .map(|r| {
            table[0]
                .iter()
                .zip(r)
                .map(|(h, c)| (h.to_string(), c.to_string()))
                .collect()
        })
        .collect();
    (section, rows)
}

#[test]
fn a_sized_run_gets_the_racks_chart() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = run_sweep("sweeps/qwen3-235b-50k-users.toml", tmp.path());
    let o = run(&["report", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("(3 charts)"), "{}", stderr(&o));
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.contains("![Racks against users served](report-racks-against-users-served.svg)"));
    assert!(md.contains("### By batch size"));
    assert!(md.contains("- **SLOs**: ttft_p99_ms <= 2000, tokens_per_s_per_user >= 20"));
    assert!(md.contains("- **demand**: 50,000 concurrent users"));

    // The review's table: one row per hardware x ownership x pricing, its cheapest admitted
    // configuration by USD/Mtok, best first; by brute force over every row of the run.
    let b = read_configs(&dir);
    let ids = column_u64(&b, "config_id");
    let hw = column_labels(&b, "hardware");
    let own = column_labels(&b, "ownership");
    let pricing = column_labels(&b, "pricing");
    let usd = column_f64(&b, "usd_per_mtok");
    let ok = column_flags(&b, "feasible");
    let demand_met = column_flags(&b, "demand_met");
    let meets_slo = column_flags(&b, "meets_slo");
    let mut best: BTreeMap<(String, String, String), (f64, u64)> = BTreeMap::new();
    for i in 0..ids.len() {
        let (true, true, true, Some(v)) = (ok[i], demand_met[i], meets_slo[i], usd[i]) else {
            continue;
        };
        // pricing is null when owned.
        let p = if own[i] == "owned" {
            "-"
        } else {
            pricing[i].as_str()
        };
        let e = best
            .entry((hw[i].clone(), own[i].clone(), p.to_string()))
            .or_insert((v, ids[i]));
        if v < e.0 || (v == e.0 && ids[i] < e.1) {
            *e = (v, ids[i]);
        }
    }
    let mut want: Vec<(f64, u64, String, String, String)> = best
        .into_iter()
        .map(|((h, o, p), (v, id))| (v, id, h, o, p))
        .collect();
    want.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let (section, table) = review_table(&md);
    let got: Vec<(String, String, String, String, String)> = table
        .iter()
        .map(|cell| {
            (
                cell["USD/Mtok"].clone(),
                cell["config_id"].clone(),
                cell["hardware"].clone(),
                cell["ownership"].clone(),
                cell["pricing"].clone(),
            )
        })
        .collect();
    let want: Vec<(String, String, String, String, String)> = want
        .into_iter()
        .map(|(v, id, h, o, p)| (number(v), id.to_string(), h, o, p))
        .collect();
    assert_eq!(got, want);
    assert_eq!(got.len(), 5, "three GPUs owned, two with a cloud price");
    assert!(section.contains("No row: mi355x cloud"));
    assert_snapshot(
        &root().join("tests/snapshots/report-qwen3-235b-50k-users.md"),
        &masked(&md),
    );
}

#[test]
fn report_refuses_what_is_not_a_finished_run() {
    let tmp = tempfile::tempdir().unwrap();
    let o = run(&["report", tmp.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("is not a racksweep run directory"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("hint:"), "{}", stderr(&o));

    let dir = run_sweep("sweeps/quickstart.toml", tmp.path());
    let manifest = dir.join("manifest.json");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(
        &manifest,
        text.replace("\"complete\": true", "\"complete\": false"),
    )
    .unwrap();
    let o = run(&["report", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("is not complete"), "{}", stderr(&o));
    assert!(stderr(&o).contains("--resume"), "{}", stderr(&o));
    assert!(!dir.join("report.html").exists());
}

/// Constraints nothing meets: the report still writes, and says so instead of drawing.
#[test]
fn a_run_that_admits_nothing_still_reports() {
    let tmp = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(root().join("sweeps/quickstart.toml"))
        .unwrap()
        .replace("\"ttft_ms <= 2000\"", "\"ttft_ms <= 0.001\"");
    let sweep = tmp.path().join("quickstart.toml");
    std::fs::write(&sweep, text).unwrap();
    let dir = run_sweep(sweep.to_str().unwrap(), tmp.path());
    let o = run(&["report", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("(0 charts)"), "{}", stderr(&o));
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        md.contains("- **run**: 2,837 feasible; 0 admitted; 0 on the frontier"),
        "{md}"
    );
    assert!(md.contains("None: no configuration is admitted."));
    assert!(
        md.contains("| turned away | fails ttft_ms <= 0.001 | 2,837 |"),
        "{md}"
    );
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert_eq!(html.matches("<svg").count(), 0);
}

/// A small training sweep with a deadline and a power cap (effective_time_to_train_days <= 10,
/// facility_power_kw <= 4000), objectives min effective_time_to_train_days and min usd_per_run.
const TRAINING: &str = "tests/specs/training-small.toml";

/// Feasible rows of a training run failing each of the training sweep's constraints, by brute
/// force: the report's "turned away" counts.
fn training_turned_away(dir: &Path) -> [(String, u64); 2] {
    let rows = read_configs(dir);
    let ok = column_flags(&rows, "feasible");
    let (days, kw) = (
        column_f64(&rows, "effective_time_to_train_days"),
        column_f64(&rows, "facility_power_kw"),
    );
    let failing = |f: &dyn Fn(usize) -> bool| (0..ok.len()).filter(|&i| ok[i] && f(i)).count();
    [
        (
            "fails effective_time_to_train_days <= 10".to_string(),
            failing(&|i| !days[i].is_some_and(|d| d <= 10.0)) as u64,
        ),
        (
            "fails facility_power_kw <= 4000".to_string(),
            failing(&|i| !kw[i].is_some_and(|k| k <= 4000.0)) as u64,
        ),
    ]
}

/// The report's questions of a training run, answered by the digest and by brute force:
/// admission (constraints only: training rows have no demand or SLOs), the best layout per
/// hardware, the cheapest runs, the best MFU per precision, and two of the charts' frontiers.
#[test]
fn a_training_reports_answers_are_those_of_brute_force() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = run_sweep(TRAINING, tmp.path());
    let run = racksweep::output::run_dir::RunDir::new(dir.clone())
        .open(false)
        .unwrap();
    let schema = racksweep::analyze::schema(&run);
    assert_eq!(schema.mode, Mode::Training);
    let objective = |t: &str| Objective::parse(t, schema).unwrap();
    let column = |n: &str| schema.find(n).unwrap();
    let constraints = [
        Constraint::parse("effective_time_to_train_days <= 10", schema).unwrap(),
        Constraint::parse("facility_power_kw <= 4000", schema).unwrap(),
    ];
    let rankings = [
        Ranking {
            objective: objective("min effective_time_to_train_days"),
            groups: vec![column("hardware")],
            n: 1,
        },
        Ranking {
            objective: objective("min usd_per_run"),
            groups: Vec::new(),
            n: 6,
        },
        Ranking {
            objective: objective("max mfu_pct"),
            groups: vec![column("precision")],
            n: 2,
        },
    ];
    let trades = [
        Trade {
            x: objective("min usd_per_run"),
            y: objective("min effective_time_to_train_days"),
        },
        Trade {
            x: objective("min facility_power_kw"),
            y: objective("min effective_time_to_train_days"),
        },
    ];
    let ask = digest::Ask {
        schema,
        constraints: &constraints,
        rankings: &rankings,
        trades: &trades,
        curves: &[],
        shown: &["config_id", "hardware", "precision"],
        extra_ids: &[],
    };
    let run = racksweep::output::run_dir::RunDir::new(dir.clone())
        .open(false)
        .unwrap();
    let d = digest::digest(&run, &ask).unwrap();

    let rows = read_configs(&dir);
    let ids = column_u64(&rows, "config_id");
    let (hw, precision, ok) = (
        column_labels(&rows, "hardware"),
        column_labels(&rows, "precision"),
        column_flags(&rows, "feasible"),
    );
    let (days, usd, kw, mfu) = (
        column_f64(&rows, "effective_time_to_train_days"),
        column_f64(&rows, "usd_per_run"),
        column_f64(&rows, "facility_power_kw"),
        column_f64(&rows, "mfu_pct"),
    );
    let admitted: Vec<usize> = (0..ids.len())
        .filter(|&i| ok[i])
        .filter(|&i| days[i].is_some_and(|v| v <= 10.0) && kw[i].is_some_and(|v| v <= 4000.0))
        .collect();

    // Counts: every cause is a constraint; none is a demand or an SLO.
    let a = &d.admission;
    assert_eq!(a.rows, ids.len() as u64);
    assert_eq!(a.feasible, ok.iter().filter(|&&f| f).count() as u64);
    assert_eq!(a.admitted, admitted.len() as u64);
    assert_eq!(a.turned_away, training_turned_away(&dir).to_vec());
    assert!(
        a.turned_away.iter().all(|(_, n)| *n > 0),
        "both constraints bite"
    );
    assert!(0 < a.admitted && a.admitted < a.feasible);

    // Fastest layout per hardware, lowest config_id among ties.
    let mut best: BTreeMap<String, (f64, u64)> = BTreeMap::new();
    for &i in &admitted {
        let (v, id) = (days[i].unwrap(), ids[i]);
        let e = best.entry(hw[i].clone()).or_insert((v, id));
        if v < e.0 || (v == e.0 && id < e.1) {
            *e = (v, id);
        }
    }
    let want: digest::Ranked = best
        .into_iter()
        .map(|(h, (v, id))| (vec![GroupValue::Label(h)], vec![(id, v)]))
        .collect();
    assert_eq!(d.ranked[0], want);
    assert_eq!(want.len(), 3, "every hardware has an admitted layout");

    // The six cheapest runs.
    let cost: Vec<(f64, u64)> = admitted
        .iter()
        .map(|&i| (usd[i].unwrap(), ids[i]))
        .collect();
    let cost_of: BTreeMap<u64, f64> = cost.iter().map(|&(v, id)| (id, v)).collect();
    let want: Vec<(u64, f64)> = best_ids(cost, 6, false)
        .into_iter()
        .map(|id| (id, cost_of[&id]))
        .collect();
    assert_eq!(d.ranked[1], vec![(Vec::new(), want)]);

    // The two best MFUs per precision, precisions in alphabetical order.
    let mfu_of: BTreeMap<u64, f64> = admitted
        .iter()
        .map(|&i| (ids[i], mfu[i].unwrap()))
        .collect();
    let want: digest::Ranked = ["bf16", "fp8"]
        .into_iter()
        .map(|p| {
            let of_p: Vec<(f64, u64)> = admitted
                .iter()
                .filter(|&&i| precision[i] == p)
                .map(|&i| (mfu[i].unwrap(), ids[i]))
                .collect();
            let top = best_ids(of_p, 2, true);
            let list = top.into_iter().map(|id| (id, mfu_of[&id])).collect();
            (vec![GroupValue::Label(p.to_string())], list)
        })
        .collect();
    assert_eq!(d.ranked[2], want);

    // Both frontiers, per hardware and over all hardware; keys negated, as both are minimized.
    for (t, x) in d.traded.iter().zip([&usd, &kw]) {
        let points = |filter: &dyn Fn(usize) -> bool| -> Vec<(u64, f64, f64)> {
            admitted
                .iter()
                .filter(|&&i| filter(i))
                .map(|&i| (ids[i], -x[i].unwrap(), -days[i].unwrap()))
                .collect()
        };
        assert_eq!(t.per_hardware.len(), 3);
        for (h, front) in &t.per_hardware {
            assert_eq!(drawn(front), brute_drawn(&points(&|i| hw[i] == *h)), "{h}");
            // A frontier of two minimized objectives: each step costs more and trains faster.
            assert!(front.windows(2).all(|w| w[0].x < w[1].x && w[0].y > w[1].y));
        }
        assert_eq!(drawn(&t.global), brute_drawn(&points(&|_| true)));
        assert!(t.global.len() >= 2, "a trade, not a single winner");
    }
}

/// The training report as a planner reads it: three charts with units on their axes, the
/// workload in steps, constraints as the only reasons to turn a layout away, and nothing about
/// serving. The Markdown is compared to a snapshot (timestamps masked).
#[test]
fn a_training_report_draws_its_trades_and_speaks_of_training() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = run_sweep(TRAINING, tmp.path());
    let o = run(&["report", dir.to_str().unwrap(), "--top", "5"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("(3 charts)"), "{}", stderr(&o));

    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert_self_contained(&html);
    assert_eq!(html.matches("<svg").count(), 3);
    for h in ["h100-sxm", "b200", "gb200-nvl72"] {
        assert!(html.contains(&format!(">{h}</text>")), "legend names {h}");
    }
    for axis in [
        "usd_per_run (USD, lower is better)",
        "gpus (GPUs, lower is better)",
        "facility_power_kw (kW, lower is better)",
        "effective_time_to_train_days (days, lower is better)",
    ] {
        assert!(html.contains(axis), "an axis reads {axis}");
    }
    for name in [
        "report-time-against-cost.svg",
        "report-time-against-cluster-size.svg",
        "report-time-against-facility-power.svg",
    ] {
        let svg = std::fs::read_to_string(dir.join(name)).unwrap();
        assert!(html.contains(&svg), "{name} is inlined");
    }

    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    // 1e12 tokens in steps of 4,194,304 tokens (512 sequences of 8,192).
    assert!(
        md.contains(
            "- **workload**: 1,000,000,000,000 tokens to train: about 238,419 optimizer steps \
             of 512 sequences of 8,192 tokens"
        ),
        "{md}"
    );
    for (cause, n) in training_turned_away(&dir) {
        let line = format!("| turned away | {cause} | {} |", number(n as f64));
        assert!(md.contains(&line), "{line}\n{md}");
    }
    assert_eq!(md.matches("| turned away |").count(), 2);
    assert!(md.contains("then feasible ones the sweep's constraints turned away"));
    for serving in [
        "demand",
        "SLO",
        "per request",
        "users",
        "tokens_per_s_per_gpu",
    ] {
        assert!(
            !md.contains(serving),
            "a training report mentions {serving:?}"
        );
    }
    assert!(md.contains("### By ZeRO stage") && md.contains("### By precision"));

    // The review's table: per hardware x ownership, the cheapest admitted run, best first; by
    // brute force over every row.
    let b = read_configs(&dir);
    let ids = column_u64(&b, "config_id");
    let hw = column_labels(&b, "hardware");
    let own = column_labels(&b, "ownership");
    let usd = column_f64(&b, "usd_per_run");
    let ok = column_flags(&b, "feasible");
    let days = column_f64(&b, "effective_time_to_train_days");
    let kw = column_f64(&b, "facility_power_kw");
    let mut best: BTreeMap<(String, String), (f64, u64)> = BTreeMap::new();
    for i in 0..ids.len() {
        let admitted =
            ok[i] && days[i].is_some_and(|d| d <= 10.0) && kw[i].is_some_and(|k| k <= 4000.0);
        let (true, Some(v)) = (admitted, usd[i]) else {
            continue;
        };
        let e = best
            .entry((hw[i].clone(), own[i].clone()))
            .or_insert((v, ids[i]));
        if v < e.0 || (v == e.0 && ids[i] < e.1) {
            *e = (v, ids[i]);
        }
    }
    let mut want: Vec<(f64, u64, String, String)> = best
        .into_iter()
        .map(|((h, o), (v, id))| (v, id, h, o))
        .collect();
    want.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let want: Vec<[String; 4]> = want
        .into_iter()
        .map(|(v, id, h, o)| [number(v), id.to_string(), h, o])
        .collect();
    let (_, table) = review_table(&md);
    let got: Vec<[String; 4]> = table
        .iter()
        .map(|c| ["USD/run", "config_id", "hardware", "ownership"].map(|n| c[n].clone()))
        .collect();
    assert_eq!(got, want);
    assert_eq!(got.len(), 6, "three GPUs, cloud and owned");
    assert_snapshot(
        &root().join("tests/snapshots/report-training-small.md"),
        &masked(&md),
    );
}

/// Without constraints nothing feasible is turned away, and the report says so.
#[test]
fn a_training_run_without_constraints_admits_every_feasible_layout() {
    let tmp = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(root().join(TRAINING)).unwrap();
    let text: String = text
        .lines()
        .filter(|l| !l.starts_with("constraints"))
        .map(|l| format!("{l}\n"))
        .collect();
    let sweep = tmp.path().join("training-small.toml");
    std::fs::write(&sweep, text).unwrap();
    let dir = run_sweep(sweep.to_str().unwrap(), tmp.path());
    let o = run(&["report", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    let feasible = column_flags(&read_configs(&dir), "feasible")
        .into_iter()
        .filter(|&f| f)
        .count() as u64;
    assert!(
        md.contains(&format!(
            "| admitted | meets every requirement | {} |",
            number(feasible as f64)
        )),
        "{md}"
    );
    assert!(
        md.contains("every feasible configuration is admitted"),
        "{md}"
    );
    assert!(!md.contains("| turned away |"), "{md}");
    assert!(md.contains("- **constraints**: none"), "{md}");
}

/// The colour of each hardware's line in a report's charts, from its SVG.
fn series_colours(dir: &Path) -> BTreeMap<String, String> {
    let svg =
        std::fs::read_to_string(dir.join("report-cost-against-time-to-first-token.svg")).unwrap();
    svg.split(r#"<g class="series" data-name=""#)
        .skip(1)
        .map(|s| {
            let name = s.split('"').next().unwrap().to_string();
            let colour = s.split(r#"stroke=""#).nth(1).unwrap();
            (name, colour.split('"').next().unwrap().to_string())
        })
        .collect()
}

#[test]
fn a_hardware_keeps_its_colour_across_reports() {
    // Two runs with different hardware: b200 is in both, fourth in one legend and first in
    // the other.
    let tmp = tempfile::tempdir().unwrap();
    let mut colours = Vec::new();
    for sweep in ["sweeps/quickstart.toml", "sweeps/qwen3-235b-50k-users.toml"] {
        let dir = run_sweep(sweep, tmp.path());
        let o = run(&["report", dir.to_str().unwrap()]);
        assert!(o.status.success(), "{}", stderr(&o));
        colours.push(series_colours(&dir));
    }
    assert_eq!(colours[0].len(), 4);
    assert_eq!(colours[1].len(), 3);
    assert_eq!(colours[0]["b200"], colours[1]["b200"]);
    // The colour is the catalog position's: b200 is the catalog's fifth GPU.
    let catalog = racksweep::catalog::Catalog::builtin().unwrap();
    let b200 = catalog.gpus.iter().position(|g| g.id == "b200").unwrap();
    assert_eq!(colours[0]["b200"], racksweep::report::svg::PALETTE[b200]);
    // Different hardware, different colours, in each report.
    for c in &colours {
        let distinct: BTreeSet<&String> = c.values().collect();
        assert_eq!(distinct.len(), c.len());
    }
}
