//! Fitting the global model factors to measurements, in process: the factors and their candidate
//! grids (one table, [`FACTORS`]), the objective, and coordinate descent over the grids with
//! every factor vector's predictions memoized. `validate --leave-one-out` (`loo`) runs it once on
//! all rows and once per source family left out. It never writes the factor files.
//!
//! The objective is the statistics the accuracy targets are stated in (docs/validation.md,
//! "Calibration"): per metric, the median and the 90th percentile of the absolute percentage
//! error, each as `ln(1 + error)`, averaged and weighted by the metric's number of predictions;
//! a case the factors make unreachable ("no configuration ...") adds `ln 10` instead of dropping
//! out, so a fit cannot improve by losing cases.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};

use rayon::prelude::*;
use serde::Serialize;

use super::cases::Case;
use super::predict::Prediction;
use super::report::{pct_error, percentile};
use crate::catalog::Catalog;
use crate::output::table::{Column, Exporter, Table};

/// Which rows read a factor: a training row's prediction depends on the training factors and
/// the inference factors the training model shares; an inference row's on the inference
/// factors only (src/train reads `attention_efficiency` and `moe_gemm_efficiency` from the
/// calibration, nothing else of it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reads {
    Inference,
    Training,
    Both,
}

/// A global factor the fit moves: its name (training factors prefixed `training.`), the rows
/// that read it, its candidate values, and where it lives in the catalog.
pub struct Factor {
    pub name: &'static str,
    pub reads: Reads,
    /// Candidate values, ascending: the physical range of the factor (docs/validation.md,
    /// "Calibration"; docs/model.md lists each range).
    pub grid: &'static [f64],
    get: fn(&Catalog) -> f64,
    set: fn(&mut Catalog, f64),
}

/// The fitted factors, in the order the fit visits them.
pub const FACTORS: [Factor; 7] = [
    Factor {
        name: "serving_gemm_efficiency",
        reads: Reads::Inference,
        grid: &[
            0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0,
        ],
        get: |c| c.calibration.serving_gemm_efficiency,
        set: |c, v| c.calibration.serving_gemm_efficiency = v,
    },
    Factor {
        name: "moe_gemm_efficiency",
        reads: Reads::Both,
        grid: &[
            0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0,
        ],
        get: |c| c.calibration.moe_gemm_efficiency,
        set: |c, v| c.calibration.moe_gemm_efficiency = v,
    },
    Factor {
        name: "attention_efficiency",
        reads: Reads::Both,
        grid: &[0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0],
        get: |c| c.calibration.attention_efficiency,
        set: |c, v| c.calibration.attention_efficiency = v,
    },
    Factor {
        name: "gemm_half_rows",
        reads: Reads::Inference,
        grid: &[0.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0],
        get: |c| c.calibration.gemm_half_rows,
        set: |c, v| c.calibration.gemm_half_rows = v,
    },
    Factor {
        name: "training.gemm_efficiency",
        reads: Reads::Training,
        grid: &[
            0.6, 0.65, 0.7, 0.75, 0.8, 0.825, 0.85, 0.875, 0.9, 0.95, 1.0,
        ],
        get: |c| c.training.gemm_efficiency,
        set: |c, v| c.training.gemm_efficiency = v,
    },
    Factor {
        name: "training.tp_comm_overlap",
        reads: Reads::Training,
        grid: &[0.0, 0.25, 0.5, 0.75, 1.0],
        get: |c| c.training.tp_comm_overlap,
        set: |c, v| c.training.tp_comm_overlap = v,
    },
    // Narrow GEMMs: from no effect to half the rate at a 2,048-wide weight.
    Factor {
        name: "training.gemm_half_width",
        reads: Reads::Training,
        grid: &[0.0, 256.0, 512.0, 768.0, 1024.0, 1280.0, 1536.0, 2048.0],
        get: |c| c.training.gemm_half_width,
        set: |c, v| c.training.gemm_half_width = v,
    },
];

/// One value per factor of [`FACTORS`].
pub type Values = [f64; FACTORS.len()];

/// A reason a prediction fails that the factors can cause, counted against the fit (`ln 10`).
pub const UNREACHABLE: &str = "no configuration";

/// Candidate values per factor: the full grids, or every other value with both ends kept
/// (`--quick`, a smoke run).
#[derive(Debug, Clone, PartialEq)]
pub struct Grids(pub Vec<Vec<f64>>);

impl Grids {
    pub fn full() -> Grids {
        Grids(FACTORS.iter().map(|f| f.grid.to_vec()).collect())
    }

    /// The quick grid if `quick`, else the full one.
    pub fn choose(quick: bool) -> Grids {
        if quick { Grids::quick() } else { Grids::full() }
    }

    pub fn quick() -> Grids {
        Grids(
            FACTORS
                .iter()
                .map(|f| {
                    let mut v: Vec<f64> = f.grid.iter().copied().step_by(2).collect();
                    let last = f.grid[f.grid.len() - 1];
                    if v.last() != Some(&last) {
                        v.push(last);
                    }
                    v
                })
                .collect(),
        )
    }

    /// The catalog's factors, each moved to its nearest candidate (the first of two equally
    /// near), so a value outside the range never sticks.
    pub fn nearest(&self, catalog: &Catalog) -> Values {
        std::array::from_fn(|i| {
            let v = (FACTORS[i].get)(catalog);
            self.0[i]
                .iter()
                .copied()
                .fold(None, |best: Option<f64>, c| match best {
                    Some(b) if (b - v).abs() <= (c - v).abs() => Some(b),
                    _ => Some(c),
                })
                .unwrap_or(v)
        })
    }
}

/// The catalog with the factors set to `values`.
pub fn with_values(base: &Catalog, values: &Values) -> Catalog {
    let mut catalog = base.clone();
    for (f, v) in FACTORS.iter().zip(values) {
        (f.set)(&mut catalog, *v);
    }
    catalog
}

/// Which model predicts a case: the rows of each are run and memoized apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Group {
    Inference,
    Training,
    /// A kind no model predicts: skipped whatever the factors.
    Other,
}

impl Group {
    fn of(case: &Case) -> Group {
        match case.setup.kind.as_str() {
            "inference" => Group::Inference,
            "training" => Group::Training,
            _ => Group::Other,
        }
    }

    fn reads(self, reads: Reads) -> bool {
        matches!(
            (self, reads),
            (Group::Inference, Reads::Inference | Reads::Both)
                | (Group::Training, Reads::Training | Reads::Both)
        )
    }

    /// The part of `values` this group's predictions depend on, as a memo key.
    fn key(self, values: &Values) -> Vec<u64> {
        FACTORS
            .iter()
            .zip(values)
            .filter(|(f, _)| self.reads(f.reads))
            .map(|(_, v)| v.to_bits())
            .collect()
    }
}

/// Every case's outcome at one factor vector, in file order.
pub type Outcomes = Vec<Arc<Result<Prediction, String>>>;

/// One model's runs, by the factor values its cases read.
type Memo = HashMap<(Group, Vec<u64>), Arc<Outcomes>>;

/// Predictions of the cases at any factor vector, memoized per group and per the factors the
/// group reads: a candidate that moves a training factor reuses the inference rows' run.
pub struct Evaluator<'a> {
    base: Catalog,
    cases: &'a [Case],
    groups: Vec<(Group, Vec<usize>)>,
    memo: Mutex<Memo>,
    runs: Mutex<usize>,
}

impl<'a> Evaluator<'a> {
    pub fn new(cases: &'a [Case], base: &Catalog) -> Evaluator<'a> {
        let mut groups: Vec<(Group, Vec<usize>)> = Vec::new();
        for (i, case) in cases.iter().enumerate() {
            let g = Group::of(case);
            match groups.iter_mut().find(|(h, _)| *h == g) {
                Some((_, members)) => members.push(i),
                None => groups.push((g, vec![i])),
            }
        }
        Evaluator {
            base: base.clone(),
            cases,
            groups,
            memo: Mutex::new(HashMap::new()),
            runs: Mutex::new(0),
        }
    }

    pub fn cases(&self) -> &'a [Case] {
        self.cases
    }

    /// Group runs made so far (one group's cases predicted at one factor vector).
    pub fn runs(&self) -> usize {
        *self.runs.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn memo(&self) -> std::sync::MutexGuard<'_, Memo> {
        self.memo.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs every group run the candidates need and the memo lacks, each once, in parallel.
    pub fn prefetch(&self, candidates: &[Values]) {
        let mut todo: Vec<(Group, Vec<u64>, Values)> = Vec::new();
        {
            let memo = self.memo();
            let mut seen = HashSet::new();
            for values in candidates {
                for (g, _) in &self.groups {
                    let key = g.key(values);
                    if !memo.contains_key(&(*g, key.clone())) && seen.insert((*g, key.clone())) {
                        todo.push((*g, key, *values));
                    }
                }
            }
        }
        let done: Vec<_> = todo
            .into_par_iter()
            .map(|(g, key, values)| {
                let catalog = with_values(&self.base, &values);
                let members = &self
                    .groups
                    .iter()
                    .find(|(h, _)| *h == g)
                    .expect("a group")
                    .1;
                let outcomes: Outcomes = members
                    .par_iter()
                    .map(|&i| {
                        let mut outcome = super::predict_case(&self.cases[i], &catalog);
                        if let Ok(p) = &mut outcome {
                            p.notes.clear();
                        }
                        Arc::new(outcome)
                    })
                    .collect();
                ((g, key), Arc::new(outcomes))
            })
            .collect();
        *self.runs.lock().unwrap_or_else(|e| e.into_inner()) += done.len();
        self.memo().extend(done);
    }

    /// Every case's outcome at `values`, in file order.
    pub fn outcomes(&self, values: &Values) -> Outcomes {
        self.prefetch(std::slice::from_ref(values));
        let memo = self.memo();
        let mut out: Vec<Option<Arc<Result<Prediction, String>>>> = vec![None; self.cases.len()];
        for (g, members) in &self.groups {
            let run = &memo[&(*g, g.key(values))];
            for (&i, outcome) in members.iter().zip(run.iter()) {
                out[i] = Some(outcome.clone());
            }
        }
        out.into_iter()
            .map(|o| o.expect("every case is in a group"))
            .collect()
    }
}

/// Median and p90 absolute % error per metric of the scored predictions of the cases `keep`
/// admits, and the cases lost (unreachable): `(metric -> (n, median, p90), lost)`.
pub fn metric_stats(
    outcomes: &[Arc<Result<Prediction, String>>],
    keep: impl Fn(usize) -> bool,
) -> (BTreeMap<String, (usize, f64, f64)>, usize) {
    let mut errors: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut lost = 0;
    for (i, outcome) in outcomes.iter().enumerate() {
        if !keep(i) {
            continue;
        }
        match outcome.as_ref() {
            Ok(p) => {
                for (metric, measured, predicted, scored) in &p.values {
                    if *scored {
                        errors
                            .entry(metric.clone())
                            .or_default()
                            .push(pct_error(*predicted, *measured).abs());
                    }
                }
            }
            Err(reason) if reason.starts_with(UNREACHABLE) => lost += 1,
            Err(_) => {}
        }
    }
    let stats = errors
        .into_iter()
        .map(|(metric, mut abs)| {
            abs.sort_by(f64::total_cmp);
            let s = (abs.len(), percentile(&abs, 0.5), percentile(&abs, 0.9));
            (metric, s)
        })
        .collect();
    (stats, lost)
}

/// The fit's objective (module docs) over the cases `keep` admits.
pub fn objective(
    outcomes: &[Arc<Result<Prediction, String>>],
    keep: impl Fn(usize) -> bool,
) -> f64 {
    let (stats, lost) = metric_stats(outcomes, keep);
    let n = stats.values().map(|s| s.0).sum::<usize>() + lost;
    if n == 0 {
        return 0.0;
    }
    let robust: f64 = stats
        .values()
        .map(|&(k, median, p90)| {
            k as f64 * ((median / 100.0).ln_1p() + (p90 / 100.0).ln_1p()) / 2.0
        })
        .sum();
    (robust + lost as f64 * 10f64.ln()) / n as f64
}

/// A fit's result: the factors and the objective before and after.
#[derive(Debug, Clone, PartialEq)]
pub struct Fitted {
    pub values: Values,
    pub start_objective: f64,
    pub objective: f64,
}

/// Rounds of coordinate descent at most (each visits every factor once).
const MAX_ROUNDS: usize = 6;
/// A move must lower the objective by more than this.
const MIN_GAIN: f64 = 1e-6;

/// `at` with factor `k` moved to each of `candidates` in turn.
fn trials(at: &Values, k: usize, candidates: &[f64]) -> Vec<Values> {
    candidates
        .iter()
        .map(|&c| {
            let mut v = *at;
            v[k] = c;
            v
        })
        .collect()
}

/// Coordinate descent of the objective on the cases `keep` admits, from `start`, over `grids`:
/// each factor in turn takes its best candidate (the smaller value of two equally good ones) if
/// that beats the current value, until a round moves none or `MAX_ROUNDS` have run.
pub fn descend(
    eval: &Evaluator,
    keep: &(dyn Fn(usize) -> bool + Sync),
    start: &Values,
    grids: &Grids,
) -> Fitted {
    let score = |values: &Values| objective(&eval.outcomes(values), keep);
    let mut values = *start;
    let start_objective = score(&values);
    for _ in 0..MAX_ROUNDS {
        let mut moved = false;
        for (k, candidates) in grids.0.iter().enumerate() {
            let trials = trials(&values, k, candidates);
            eval.prefetch(&trials);
            let best = trials
                .iter()
                .map(|v| (score(v), v[k]))
                .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
            if let Some((best_score, best)) = best
                && best != values[k]
                && best_score < score(&values) - MIN_GAIN
            {
                values[k] = best;
                moved = true;
            }
        }
        if !moved {
            break;
        }
    }
    Fitted {
        values,
        start_objective,
        objective: score(&values),
    }
}

/// A case's scored predictions, `(metric, predicted bits)`, in the case's order; none if it
/// fails.
fn scored(outcome: &Result<Prediction, String>) -> Vec<(&str, u64)> {
    outcome.as_ref().map_or_else(
        |_| Vec::new(),
        |p| {
            p.values
                .iter()
                .filter(|v| v.3)
                .map(|v| (v.0.as_str(), v.2.to_bits()))
                .collect()
        },
    )
}

/// The scored predictions each factor moves at `at`, per factor of [`FACTORS`], as the case of
/// each: those whose prediction differs between any two of the factor's candidates with every
/// other factor held at `at` (a case one candidate makes unreachable counts its metrics). A
/// factor that moves few predictions, or those of one source family only, is fitted to them
/// alone, and a leave-one-out fold without them has nothing to fit it to. `descend`'s last round
/// evaluates every candidate at its result, so at a fitted vector this runs no model.
pub fn reach(eval: &Evaluator, at: &Values, grids: &Grids) -> Vec<Vec<usize>> {
    grids
        .0
        .iter()
        .enumerate()
        .map(|(k, candidates)| {
            let trials = trials(at, k, candidates);
            eval.prefetch(&trials);
            let runs: Vec<Outcomes> = trials.iter().map(|v| eval.outcomes(v)).collect();
            let mut moved = Vec::new();
            for i in 0..eval.cases().len() {
                let all: Vec<Vec<(&str, u64)>> = runs.iter().map(|r| scored(&r[i])).collect();
                let mut metrics: Vec<&str> = all.iter().flatten().map(|(m, _)| *m).collect();
                metrics.sort_unstable();
                metrics.dedup();
                let value = |r: &[(&str, u64)], m: &str| r.iter().find(|v| v.0 == m).map(|v| v.1);
                for m in metrics {
                    let first = value(&all[0], m);
                    if all.iter().any(|r| value(r, m) != first) {
                        moved.push(i);
                    }
                }
            }
            moved
        })
        .collect()
}

/// The named factors of a vector, for reports.
pub fn named(values: &Values) -> BTreeMap<&'static str, f64> {
    FACTORS
        .iter()
        .map(|f| f.name)
        .zip(values.iter().copied())
        .collect()
}

/// A fit on all rows (`validate --fit`): from the committed factors at their nearest
/// candidates to the fitted ones.
pub struct AllRows {
    pub quick: bool,
    pub committed: Values,
    pub fitted: Fitted,
    /// Model runs (one model's cases at one factor vector) and wall time.
    pub runs: usize,
    pub elapsed_s: f64,
}

#[derive(Serialize)]
struct AllRowsJson {
    grid: &'static str,
    runs: usize,
    elapsed_s: f64,
    committed_factors: BTreeMap<&'static str, f64>,
    committed_objective: f64,
    factors: BTreeMap<&'static str, f64>,
    objective: f64,
}

/// Fits the factors of `base` to every case.
pub fn all_rows(cases: &[Case], base: &Catalog, quick: bool) -> AllRows {
    let start = std::time::Instant::now();
    let grids = Grids::choose(quick);
    let eval = Evaluator::new(cases, base);
    let committed = grids.nearest(base);
    let fitted = descend(&eval, &|_| true, &committed, &grids);
    AllRows {
        quick,
        committed,
        fitted,
        runs: eval.runs(),
        elapsed_s: start.elapsed().as_secs_f64(),
    }
}

impl AllRows {
    pub fn render(&self, exporter: &dyn Exporter) -> String {
        let mut out = format!(
            "Fit on all rows, {} grid: objective {:.4} at the committed factors (nearest \
             candidates), {:.4} fitted; {} model runs, {:.0} s.\n\n",
            if self.quick {
                "reduced (--quick)"
            } else {
                "full"
            },
            self.fitted.start_objective,
            self.fitted.objective,
            self.runs,
            self.elapsed_s
        );
        let rows = FACTORS
            .iter()
            .zip(self.committed.iter().zip(&self.fitted.values))
            .map(|(f, (c, v))| vec![format!("`{}`", f.name), format!("{c}"), format!("{v}")])
            .collect();
        out.push_str(&exporter.table(&Table::new(
            vec![
                Column::left("factor"),
                Column::right("committed"),
                Column::right("fitted"),
            ],
            rows,
        )));
        out
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::to_value(AllRowsJson {
            grid: if self.quick { "quick" } else { "full" },
            runs: self.runs,
            elapsed_s: self.elapsed_s,
            committed_factors: named(&self.committed),
            committed_objective: self.fitted.start_objective,
            factors: named(&self.fitted.values),
            objective: self.fitted.objective,
        })
        .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The quick grid keeps every other candidate and both ends.
    #[test]
    fn quick_grid_keeps_the_ends() {
        let q = Grids::quick();
        let i = FACTORS
            .iter()
            .position(|f| f.name == "gemm_half_rows")
            .unwrap();
        assert_eq!(q.0[i], [0.0, 16.0, 64.0, 256.0]);
        let i = FACTORS
            .iter()
            .position(|f| f.name == "moe_gemm_efficiency")
            .unwrap();
        // 12 candidates: 0.2, 0.3, 0.4, 0.5, 0.7, 0.9 and the last, 1.0.
        assert_eq!(q.0[i], [0.2, 0.3, 0.4, 0.5, 0.7, 0.9, 1.0]);
    }

    /// Every factor reads back what it sets, and the committed factors lie on the full grid.
    #[test]
    fn factors_round_trip_through_the_catalog() {
        let base = Catalog::builtin().unwrap();
        let values: Values = std::array::from_fn(|i| FACTORS[i].grid[1]);
        let c = with_values(&base, &values);
        for (f, v) in FACTORS.iter().zip(values) {
            assert_eq!((f.get)(&c), v, "{}", f.name);
        }
        let start = Grids::full().nearest(&base);
        for (f, v) in FACTORS.iter().zip(start) {
            assert_eq!((f.get)(&base), v, "{} is off its grid", f.name);
        }
    }
}
