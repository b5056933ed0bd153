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

#[test]
fn the_reports_answers_are_those_of_brute_force() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = run_sweep("sweeps/quickstart.toml", tmp.path());
    let schema = Schema::get(Mode::Inference);
    let objective = |t: &str| Objective::parse(t, schema).unwrap();
    let constraints = [
        Constraint::parse("ttft_ms <= 2000", schema).unwrap(),
        Constraint::parse("tokens_per_s_per_user >= 10", schema).unwrap(),
    ];
    let hardware = schema.find("hardware").unwrap();
    let rankings = [
        Ranking {
            objective: objective("max tokens_per_s_per_gpu"),
            group: Some(hardware),
            n: 1,
        },
        Ranking {
            objective: objective("min tpot_ms"),
            group: None,
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
        shown: &["config_id", "hardware"],
        extra_ids: &[],
    };
    let d = digest::digest(&dir, &ask).unwrap();

    let rows = read_configs(&dir);
    let ids = column_u64(&rows, "config_id");
    let (hw, ok) = (
        column_labels(&rows, "hardware"),
        column_flags(&rows, "feasible"),
    );
    let (ttft, user, gpu, tpot) = (
        column_f64(&rows, "ttft_ms"),
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
        ("fails ttft_ms <= 2000", failing(&fails_ttft)),
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
            let Some(GroupValue::Label(h)) = g else {
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
    assert_eq!(d.ranked[1], vec![(None, want)]);

    // Per-hardware frontiers and the global one.
    let points = |filter: &dyn Fn(usize) -> bool| -> Vec<(u64, f64, f64)> {
        admitted
            .iter()
            .filter(|&&i| filter(i))
            .map(|&i| (ids[i], user[i].unwrap(), gpu[i].unwrap()))
            .collect()
    };
    // Points with equal values are drawn once, by their lowest config_id, with their count.
    let drawn = |front: &BTreeSet<u64>, points: &[(u64, f64, f64)]| -> Vec<(u64, u64)> {
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
    };
    let got = |front: &[digest::TradePoint]| -> Vec<(u64, u64)> {
        let mut v: Vec<(u64, u64)> = front.iter().map(|p| (p.id, p.ties)).collect();
        v.sort();
        v
    };
    let t = &d.traded[0];
    assert_eq!(t.per_hardware.len(), 4);
    for (h, front) in &t.per_hardware {
        let on_hw = points(&|i| hw[i] == *h);
        assert_eq!(got(front), drawn(&brute_frontier(&on_hw), &on_hw), "{h}");
        assert!(
            front
                .windows(2)
                .all(|w| w[0].x < w[1].x || (w[0].x == w[1].x && w[0].y < w[1].y))
        );
    }
    let all = points(&|_| true);
    assert_eq!(got(&t.global), drawn(&brute_frontier(&all), &all));
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

#[test]
fn report_writes_a_self_contained_page_and_markdown() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = run_sweep("sweeps/quickstart.toml", tmp.path());
    let o = run(&["report", dir.to_str().unwrap(), "--top", "5"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("(2 charts)"), "{}", stderr(&o));

    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("Content-Security-Policy\" content=\"default-src 'none'"));
    assert_eq!(html.matches("<svg").count(), 2);
    for h in ["h100-sxm", "h200-sxm", "b200", "mi300x"] {
        assert!(html.contains(&format!(">{h}</text>")), "legend names {h}");
    }
    // Nothing to fetch: no sources, no links but anchors, no address but the SVG namespace.
    assert!(!html.contains(" src="));
    assert!(html.matches("href=\"").count() == html.matches("href=\"#").count());
    assert_eq!(
        html.matches("http").count(),
        html.matches("http://www.w3.org/2000/svg").count() + html.matches("http-equiv").count()
    );
    // Axes carry units.
    assert!(html.contains("tokens_per_s_per_user (tokens/s, higher is better)"));
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
    assert_snapshot(
        &root().join("tests/snapshots/report-quickstart.md"),
        &masked(&md),
    );
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
}

#[test]
fn report_refuses_what_is_not_a_finished_run() {
    let tmp = tempfile::tempdir().unwrap();
    let o = run(&["report", tmp.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("manifest.json"), "{}", stderr(&o));
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
        md.contains("- **run**: 2,896 feasible; 0 admitted; 0 on the frontier"),
        "{md}"
    );
    assert!(md.contains("None: no configuration is admitted."));
    assert!(
        md.contains("| turned away | fails ttft_ms <= 0.001 | 2,896 |"),
        "{md}"
    );
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert_eq!(html.matches("<svg").count(), 0);
}
