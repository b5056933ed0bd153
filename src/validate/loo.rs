//! Leave one source family out (`racksweep validate --leave-one-out`): the global factors are
//! fitted on all rows (in sample), then once per source family on every row but that family's,
//! starting from the committed factors (a start fitted with the family's rows would carry them
//! into its fold), and the family's rows are predicted with the factors fitted without them
//! (out of sample). The families are data (`families.toml`, one ordered table of
//! source patterns); the fit is `fit`. Nothing here writes the factor files.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::cases::Case;
use super::fit::{self, Evaluator, FACTORS, Fitted, Grids, Outcomes, UNREACHABLE, Values, named};
use super::predict::Prediction;
use super::report::pct_error;
use crate::catalog::Catalog;
use crate::error::UserError;
use crate::output::table::{Column, Exporter, Table};

const FAMILIES_TOML: &str = include_str!("families.toml");

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFamilies {
    family: Vec<RawFamily>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFamily {
    name: String,
    prefix: String,
    contains: Option<String>,
}

/// One source family: a publication or a benchmark round, matched on the `source` column.
#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    pub name: String,
    prefix: String,
    contains: Option<String>,
}

/// The ordered family table: a source belongs to the first family that matches it.
#[derive(Debug, Clone, PartialEq)]
pub struct Families(pub Vec<Family>);

impl Families {
    pub fn builtin() -> Families {
        Families::parse(FAMILIES_TOML).expect("built-in families are valid")
    }

    pub fn parse(text: &str) -> Result<Families, String> {
        let raw: RawFamilies = toml::from_str(text).map_err(|e| e.to_string())?;
        Ok(Families(
            raw.family
                .into_iter()
                .map(|f| Family {
                    name: f.name,
                    prefix: f.prefix,
                    contains: f.contains,
                })
                .collect(),
        ))
    }

    /// Index of the family of `source`, if any matches.
    pub fn of(&self, source: &str) -> Option<usize> {
        self.0.iter().position(|f| {
            source.starts_with(&f.prefix)
                && f.contains
                    .as_ref()
                    .is_none_or(|c| source.contains(c.as_str()))
        })
    }

    pub fn name_of(&self, source: &str) -> Option<&str> {
        self.of(source).map(|i| self.0[i].name.as_str())
    }

    /// The family of each of `cases`, read from `file`; a case whose source matches none is an
    /// error naming its line.
    pub fn of_cases(&self, cases: &[Case], file: &str) -> Result<Vec<usize>, UserError> {
        cases
            .iter()
            .map(|case| {
                self.of(&case.source).ok_or_else(|| {
                    let line = case.measurements.first().map_or(0, |m| m.line);
                    UserError::new(format!(
                        "{file}:{line}: column source: \"{}\" (case \"{}\") belongs to no source family, so it cannot be left out as one",
                        crate::limits::quoted(&case.source),
                        crate::limits::quoted(&case.id)
                    ))
                    .with_hint("--leave-one-out leaves out one publication at a time, and docs/validation.md (\"Source families\") says how it groups the sources; give the row one of them, or validate the file without --leave-one-out")
                })
            })
            .collect()
    }
}

/// One family's fold.
#[derive(Debug, Clone)]
pub struct Fold {
    pub family: String,
    /// Measurement rows and cases of the family.
    pub rows: usize,
    pub cases: usize,
    /// The factors fitted without the family (the objective on the other families' rows before
    /// and after), or `None` when the family has no scored prediction or unreachable case to
    /// predict.
    pub refit: Option<Fitted>,
}

/// A leave-one-out run.
pub struct LeaveOneOut<'a> {
    pub cases: &'a [Case],
    /// Index into `folds` per case.
    pub case_fold: Vec<usize>,
    pub quick: bool,
    /// The factors as committed (on the grid), and the objective there on all rows.
    pub committed: Values,
    /// The fit on all rows, from the committed factors.
    pub all_rows: Fitted,
    /// Per factor of [`FACTORS`], the scored predictions it moves at the all-rows fit
    /// (`fit::reach`), as the case of each.
    pub reach: Vec<Vec<usize>>,
    pub in_sample: Outcomes,
    pub folds: Vec<Fold>,
    /// Every case predicted with the factors fitted without its family.
    pub out_of_sample: Outcomes,
    /// Group runs (a model's cases predicted at one factor vector) and wall time.
    pub runs: usize,
    pub elapsed_s: f64,
}

/// Runs the leave-one-out fit of `cases` (read from `file`) from the factors of `base`, logging
/// progress lines.
pub fn leave_one_out<'a>(
    cases: &'a [Case],
    file: &str,
    base: &Catalog,
    families: &Families,
    quick: bool,
    log: &dyn Fn(&str),
) -> Result<LeaveOneOut<'a>, UserError> {
    let start = Instant::now();
    let grids = if quick { Grids::quick() } else { Grids::full() };
    // Folds in the family table's order, only those with rows.
    let family_of_case = families.of_cases(cases, file)?;
    let mut present: Vec<usize> = family_of_case.clone();
    present.sort_unstable();
    present.dedup();
    let case_fold: Vec<usize> = family_of_case
        .iter()
        .map(|f| present.binary_search(f).unwrap_or_default())
        .collect();
    let mut folds: Vec<Fold> = present
        .iter()
        .map(|&f| Fold {
            family: families.0[f].name.clone(),
            rows: 0,
            cases: 0,
            refit: None,
        })
        .collect();
    for (case, &k) in cases.iter().zip(&case_fold) {
        folds[k].rows += case.measurements.len();
        folds[k].cases += 1;
    }

    let eval = Evaluator::new(cases, base);
    let progress = |label: &str, fitted: &Fitted| {
        log(&format!(
            "[{label}] objective {:.4} -> {:.4}  [{} runs, {:.0} s]",
            fitted.start_objective,
            fitted.objective,
            eval.runs(),
            start.elapsed().as_secs_f64()
        ));
    };
    let committed = grids.nearest(base);
    let all_rows = fit::descend(&eval, &|_| true, &committed, &grids);
    progress("all rows", &all_rows);
    let reach = fit::reach(&eval, &all_rows.values, &grids);
    let in_sample = eval.outcomes(&all_rows.values);
    let mut out_of_sample = in_sample.clone();
    for (k, fold) in folds.iter_mut().enumerate() {
        let mine = |i: usize| case_fold[i] == k;
        let (stats, lost) = fit::metric_stats(&in_sample, mine);
        if stats.is_empty() && lost == 0 {
            log(&format!(
                "[{}] no scored predictions: not refitted",
                fold.family
            ));
            continue;
        }
        // From the committed factors, not from the all-rows fit: a descent is local, and a start
        // fitted with the family's rows would carry them into the fold.
        let refit = fit::descend(&eval, &|i| case_fold[i] != k, &committed, &grids);
        progress(&format!("without {}", fold.family), &refit);
        let outcomes = eval.outcomes(&refit.values);
        for (i, o) in outcomes.into_iter().enumerate() {
            if mine(i) {
                out_of_sample[i] = o;
            }
        }
        fold.refit = Some(refit);
    }
    Ok(LeaveOneOut {
        cases,
        case_fold,
        quick,
        committed,
        all_rows,
        reach,
        in_sample,
        folds,
        out_of_sample,
        runs: eval.runs(),
        elapsed_s: start.elapsed().as_secs_f64(),
    })
}

/// Median and p90 absolute % error of one metric, `None` where there is no prediction.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Errors {
    pub n: usize,
    pub median_abs_pct_err: Option<f64>,
    pub p90_abs_pct_err: Option<f64>,
}

/// In- and out-of-sample errors of one metric.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricErrors {
    pub in_sample: Errors,
    pub out_of_sample: Errors,
}

/// One measured metric of one case, predicted in and out of sample.
#[derive(Debug, Clone, Serialize)]
pub struct PredictionRow {
    pub case_id: String,
    pub source: String,
    pub family: String,
    pub metric: String,
    pub measured: f64,
    /// `None` where the case could not be predicted with those factors.
    pub predicted_in_sample: Option<f64>,
    pub pct_error_in_sample: Option<f64>,
    pub predicted_out_of_sample: Option<f64>,
    pub pct_error_out_of_sample: Option<f64>,
    /// An input of the case, not a prediction (tokens/s/user at a stated interactivity).
    pub scored: bool,
}

#[derive(Debug, Clone, Serialize)]
struct FoldJson {
    family: String,
    rows: usize,
    cases: usize,
    /// The factors fitted without the family; `None` if it was not refitted.
    factors: Option<BTreeMap<&'static str, f64>>,
    /// The objective on the other families' rows at the committed factors (the refit's start)
    /// and at the refit.
    train_objective_start: Option<f64>,
    train_objective: Option<f64>,
    metrics: BTreeMap<String, MetricErrors>,
}

#[derive(Debug, Clone, Serialize)]
struct Json {
    grid: &'static str,
    runs: usize,
    elapsed_s: f64,
    committed_factors: BTreeMap<&'static str, f64>,
    committed_objective: f64,
    all_rows_factors: BTreeMap<&'static str, f64>,
    all_rows_objective: f64,
    /// Per factor, the scored predictions it moves at the all-rows fit, by family.
    factor_reach: BTreeMap<&'static str, BTreeMap<String, usize>>,
    metrics: BTreeMap<String, MetricErrors>,
    unreachable_in_sample: Vec<String>,
    unreachable_out_of_sample: Vec<String>,
    families: Vec<FoldJson>,
    predictions: Vec<PredictionRow>,
}

fn errors(stats: &BTreeMap<String, (usize, f64, f64)>, metric: &str) -> Errors {
    match stats.get(metric) {
        Some(&(n, median, p90)) => Errors {
            n,
            median_abs_pct_err: Some(median),
            p90_abs_pct_err: Some(p90),
        },
        None => Errors {
            n: 0,
            median_abs_pct_err: None,
            p90_abs_pct_err: None,
        },
    }
}

fn pct(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{v:.1}%"))
}

impl LeaveOneOut<'_> {
    /// Per metric, in and out of sample, over the cases `keep` admits.
    pub fn metrics(&self, keep: impl Fn(usize) -> bool + Copy) -> BTreeMap<String, MetricErrors> {
        let (ins, _) = fit::metric_stats(&self.in_sample, keep);
        let (outs, _) = fit::metric_stats(&self.out_of_sample, keep);
        ins.keys()
            .chain(outs.keys())
            .map(|m| {
                (
                    m.clone(),
                    MetricErrors {
                        in_sample: errors(&ins, m),
                        out_of_sample: errors(&outs, m),
                    },
                )
            })
            .collect()
    }

    /// Per factor of [`FACTORS`], the predictions it moves at the all-rows fit, counted by
    /// family.
    pub fn reach_by_family(&self) -> Vec<BTreeMap<String, usize>> {
        self.reach
            .iter()
            .map(|moved| {
                let mut by: BTreeMap<String, usize> = BTreeMap::new();
                for &i in moved {
                    *by.entry(self.folds[self.case_fold[i]].family.clone())
                        .or_default() += 1;
                }
                by
            })
            .collect()
    }

    fn unreachable(outcomes: &Outcomes, cases: &[Case]) -> Vec<String> {
        outcomes
            .iter()
            .zip(cases)
            .filter(|(o, _)| matches!(o.as_ref(), Err(r) if r.starts_with(UNREACHABLE)))
            .map(|(_, c)| c.id.clone())
            .collect()
    }

    /// Every measured metric of every case, in and out of sample.
    pub fn predictions(&self) -> Vec<PredictionRow> {
        let value = |o: &Arc<Result<Prediction, String>>, metric: &str| match o.as_ref() {
            Ok(p) => p.values.iter().find(|v| v.0 == metric).map(|v| (v.2, v.3)),
            Err(_) => None,
        };
        let mut rows = Vec::new();
        for (i, case) in self.cases.iter().enumerate() {
            for m in &case.measurements {
                let (ins, outs) = (
                    value(&self.in_sample[i], &m.metric),
                    value(&self.out_of_sample[i], &m.metric),
                );
                if ins.is_none() && outs.is_none() {
                    continue;
                }
                let scored = ins.or(outs).is_some_and(|v| v.1);
                rows.push(PredictionRow {
                    case_id: case.id.clone(),
                    source: case.source.clone(),
                    family: self.folds[self.case_fold[i]].family.clone(),
                    metric: m.metric.clone(),
                    measured: m.value,
                    predicted_in_sample: ins.map(|v| v.0),
                    pct_error_in_sample: ins.map(|v| pct_error(v.0, m.value)),
                    predicted_out_of_sample: outs.map(|v| v.0),
                    pct_error_out_of_sample: outs.map(|v| pct_error(v.0, m.value)),
                    scored,
                });
            }
        }
        rows
    }

    pub fn json(&self) -> serde_json::Value {
        let families = self
            .folds
            .iter()
            .enumerate()
            .map(|(k, f)| FoldJson {
                family: f.family.clone(),
                rows: f.rows,
                cases: f.cases,
                factors: f.refit.as_ref().map(|r| named(&r.values)),
                train_objective_start: f.refit.as_ref().map(|r| r.start_objective),
                train_objective: f.refit.as_ref().map(|r| r.objective),
                metrics: self.metrics(|i| self.case_fold[i] == k),
            })
            .collect();
        let json = Json {
            grid: if self.quick { "quick" } else { "full" },
            runs: self.runs,
            elapsed_s: self.elapsed_s,
            committed_factors: named(&self.committed),
            committed_objective: self.all_rows.start_objective,
            all_rows_factors: named(&self.all_rows.values),
            all_rows_objective: self.all_rows.objective,
            factor_reach: FACTORS
                .iter()
                .map(|f| f.name)
                .zip(self.reach_by_family())
                .collect(),
            metrics: self.metrics(|_| true),
            unreachable_in_sample: Self::unreachable(&self.in_sample, self.cases),
            unreachable_out_of_sample: Self::unreachable(&self.out_of_sample, self.cases),
            families,
            predictions: self.predictions(),
        };
        serde_json::to_value(json).unwrap_or_default()
    }

    /// The report as one document: a summary paragraph and its tables, for any exporter.
    pub fn render(&self, exporter: &dyn Exporter) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "Leave one source family out: {} families, {} grid; all-rows fit objective {:.4} \
             (from {:.4} at the committed factors); {} model runs, {:.0} s.\n",
            self.folds.len(),
            if self.quick {
                "reduced (--quick)"
            } else {
                "full"
            },
            self.all_rows.objective,
            self.all_rows.start_objective,
            self.runs,
            self.elapsed_s
        );
        let rows = self
            .folds
            .iter()
            .enumerate()
            .map(|(k, f)| {
                let (stats, _) = fit::metric_stats(&self.in_sample, |i| self.case_fold[i] == k);
                let n: usize = stats.values().map(|s| s.0).sum();
                vec![
                    f.family.clone(),
                    f.rows.to_string(),
                    f.cases.to_string(),
                    n.to_string(),
                ]
            })
            .collect();
        out.push_str(
            &exporter.table(
                &Table::new(
                    vec![
                        Column::left("family"),
                        Column::right("rows"),
                        Column::right("cases"),
                        Column::right("predictions (in sample)"),
                    ],
                    rows,
                )
                .titled("Source families"),
            ),
        );
        let err_cols = || {
            vec![
                Column::right("in-sample median"),
                Column::right("in-sample p90"),
                Column::right("out-of-sample median"),
                Column::right("out-of-sample p90"),
            ]
        };
        let err_cells = |e: &MetricErrors| {
            vec![
                pct(e.in_sample.median_abs_pct_err),
                pct(e.in_sample.p90_abs_pct_err),
                pct(e.out_of_sample.median_abs_pct_err),
                pct(e.out_of_sample.p90_abs_pct_err),
            ]
        };
        let count = |e: &MetricErrors| {
            if e.in_sample.n == e.out_of_sample.n {
                e.in_sample.n.to_string()
            } else {
                format!("{} / {}", e.in_sample.n, e.out_of_sample.n)
            }
        };
        let rows = self
            .metrics(|_| true)
            .iter()
            .map(|(m, e)| {
                let mut r = vec![format!("`{m}`"), count(e)];
                r.extend(err_cells(e));
                r
            })
            .collect();
        let mut cols = vec![Column::left("metric"), Column::right("predictions")];
        cols.extend(err_cols());
        out.push('\n');
        out.push_str(&exporter.table(
            &Table::new(cols, rows).titled("Error per metric, in sample and out of sample"),
        ));
        let (ins, outs) = (
            Self::unreachable(&self.in_sample, self.cases),
            Self::unreachable(&self.out_of_sample, self.cases),
        );
        let _ = writeln!(
            out,
            "\nIn sample: every case predicted with the factors fitted on all rows. Out of \
             sample: every case predicted with the factors fitted on all rows but its family's. \
             Unreachable cases (no configuration meets the scenario): {} in sample, {} out of \
             sample{}.\n",
            ins.len(),
            outs.len(),
            if outs.is_empty() {
                String::new()
            } else {
                format!(" ({})", outs.join(", "))
            }
        );
        let mut rows = Vec::new();
        for (k, f) in self.folds.iter().enumerate() {
            let metrics = self.metrics(|i| self.case_fold[i] == k);
            if metrics.is_empty() {
                rows.push(vec![
                    f.family.clone(),
                    "(no scored predictions)".into(),
                    "0".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                ]);
            }
            for (m, e) in &metrics {
                let mut r = vec![f.family.clone(), format!("`{m}`"), count(e)];
                r.extend(err_cells(e));
                rows.push(r);
            }
        }
        let mut cols = vec![
            Column::left("family"),
            Column::left("metric"),
            Column::right("predictions"),
        ];
        cols.extend(err_cols());
        out.push_str(&exporter.table(&Table::new(cols, rows).titled("Per family")));
        let mut rows = vec![
            std::iter::once("committed".to_string())
                .chain(self.committed.iter().map(|v| format!("{v}")))
                .collect::<Vec<_>>(),
            std::iter::once("all rows".to_string())
                .chain(self.all_rows.values.iter().map(|v| format!("{v}")))
                .collect(),
        ];
        for f in &self.folds {
            let Some(refit) = &f.refit else { continue };
            rows.push(
                std::iter::once(format!("without {}", f.family))
                    .chain(
                        refit
                            .values
                            .iter()
                            .zip(&self.all_rows.values)
                            .map(|(v, a)| {
                                if v == a {
                                    String::new()
                                } else {
                                    format!("{v}")
                                }
                            }),
                    )
                    .collect(),
            );
        }
        let cols = std::iter::once(Column::left("fit"))
            .chain(
                FACTORS
                    .iter()
                    .map(|f| Column::right(format!("`{}`", f.name))),
            )
            .collect();
        out.push('\n');
        out.push_str(&exporter.table(&Table::new(cols, rows).titled("Fitted factors")));
        let _ = writeln!(
            out,
            "\nThe committed factors (each at its nearest candidate), the fit on all rows from \
             them, and per family left out its refit, also from the committed factors, where \
             it differs from the all-rows fit (blank: the same)."
        );
        let rows = FACTORS
            .iter()
            .zip(&self.reach)
            .zip(self.reach_by_family())
            .map(|((f, moved), by)| {
                let families = by
                    .iter()
                    .map(|(family, n)| format!("{family} {n}"))
                    .collect::<Vec<_>>()
                    .join(", ");
                vec![
                    format!("`{}`", f.name),
                    moved.len().to_string(),
                    by.len().to_string(),
                    if families.is_empty() {
                        "-".into()
                    } else {
                        families
                    },
                ]
            })
            .collect();
        out.push('\n');
        out.push_str(
            &exporter.table(
                &Table::new(
                    vec![
                        Column::left("factor"),
                        Column::right("predictions it moves"),
                        Column::right("families"),
                        Column::left("by family"),
                    ],
                    rows,
                )
                .titled("What each factor reaches"),
            ),
        );
        let _ = writeln!(
            out,
            "\nThe scored predictions each factor moves at the all-rows fit: those that differ \
             between any two of its candidate values, the other factors held there. A family's \
             refit fits each factor to the predictions it moves outside that family; where \
             those are few, or one other family's, the refit follows them alone."
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every source of the calibration file has a family; both versions of TensorRT-LLM's
    /// perf-overview tables are one, the blog another; MLPerf Training matches anywhere in the
    /// source, MLPerf Inference by round.
    #[test]
    fn every_calibration_source_has_its_family() {
        let f = Families::builtin();
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("reference/measurements-calibration.csv");
        let cases = super::super::cases::read(&path).unwrap();
        for c in &cases {
            assert!(f.of(&c.source).is_some(), "{}", c.source);
        }
        let name = |s: &str| f.name_of(s).unwrap_or("none");
        assert_eq!(
            name("TensorRT-LLM docs developer-guide/perf-overview.md (trtllm-bench throughput"),
            "TensorRT-LLM perf-overview tables"
        );
        assert_eq!(
            name("TensorRT-LLM docs performance/perf-overview.md v1.0-era (trtllm-bench"),
            "TensorRT-LLM perf-overview tables"
        );
        assert_eq!(
            name("TensorRT-LLM blog: How to get best performance on DeepSeek-R1"),
            "TensorRT-LLM DeepSeek-R1 blog"
        );
        assert_eq!(
            name("EE Times via climateerinvest (June 2023): MLPerf Training v3.0 GPT-3"),
            "MLPerf Training v3.0 (EE Times)"
        );
        assert_eq!(
            name("MLPerf Inference v5.1 open - NVIDIA B200"),
            "MLPerf Inference v5.1"
        );
        assert_eq!(name("MLPerf Inference v5.10 closed"), "none");
        assert_eq!(name("TensorRT-LLM docs quick-start"), "none");
        let families: std::collections::BTreeSet<&str> =
            cases.iter().filter_map(|c| f.name_of(&c.source)).collect();
        assert_eq!(families.len(), 14);
    }
}
