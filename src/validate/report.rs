//! Validation results: one line per predicted metric, a summary per metric (cases, median and
//! 90th-percentile absolute percentage error, the five worst), the JSON summary and the Parquet
//! table of every prediction.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context as _, Result};
use arrow_array::{ArrayRef, BooleanArray, Float64Array, RecordBatch, StringArray, UInt32Array};
use arrow_schema::{Field, Schema};
use parquet::arrow::ArrowWriter;
use serde::Serialize;

use super::cases::Case;
use super::predict::Prediction;
use crate::output::table::{Column, Exporter as _, Markdown, Table};

/// Every case's outcome, in file order.
pub struct Results<'a> {
    pub outcomes: Vec<(&'a Case, Result<Prediction, String>)>,
}

/// `predicted / measured - 1`, in percent.
pub fn pct_error(predicted: f64, measured: f64) -> f64 {
    (predicted / measured - 1.0) * 100.0
}

/// The throughput metrics, pooled in the error breakdown by harness and by model family.
pub const THROUGHPUT_METRICS: [&str; 3] = [
    "output_tokens_per_s",
    "output_tokens_per_s_per_gpu",
    "total_tokens_per_s_per_gpu",
];

/// Targets per metric: (median, optional p90) absolute % error. Inference: the fidelity
/// issue; training: the training issue (MFU and TFLOP/s per GPU, median 10 %).
pub fn target(metric: &str) -> Option<(f64, Option<f64>)> {
    match metric {
        m if THROUGHPUT_METRICS.contains(&m) => Some((15.0, Some(40.0))),
        "ttft_p99_ms" | "tpot_p99_ms" | "tokens_per_s_per_user" => Some((25.0, None)),
        "model_tflops_per_gpu" | "hardware_tflops_per_gpu" | "mfu_pct" | "hfu_pct" => {
            Some((10.0, None))
        }
        _ => None,
    }
}

/// Linear-interpolated percentile of sorted values (numpy's default).
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = p * (sorted.len() - 1) as f64;
    let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo as f64)
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct MetricSummary {
    pub n: usize,
    pub median_abs_pct_err: f64,
    pub p90_abs_pct_err: f64,
    /// Mean of `|ln(predicted / measured)|`: symmetric in over- and under-prediction (the fit's
    /// objective).
    pub mean_abs_log_err: f64,
    /// `(case_id, signed % error)`, worst first.
    #[serde(skip)]
    pub worst: Vec<(String, f64)>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    pub case_id: String,
    pub reason: String,
}

/// One measured metric of one predicted case (`validate --json`).
#[derive(Debug, Clone, Serialize)]
pub struct PredictionRow {
    pub case_id: String,
    pub source: String,
    /// The case's source family (src/validate/families.toml), if one matches.
    pub family: Option<String>,
    pub metric: String,
    pub measured: f64,
    pub predicted: f64,
    /// `predicted / measured - 1`, in percent.
    pub pct_error: f64,
    /// An input of the case rather than a prediction (tokens/s/user at a stated interactivity).
    pub scored: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub cases: usize,
    pub predicted: usize,
    pub skipped: Vec<Skipped>,
    pub metrics: BTreeMap<String, MetricSummary>,
    /// Every prediction, in file order.
    pub predictions: Vec<PredictionRow>,
}

impl Results<'_> {
    pub fn summary(&self) -> Summary {
        let mut errors: BTreeMap<String, Vec<(String, f64)>> = BTreeMap::new();
        let mut skipped = Vec::new();
        let mut predicted = 0;
        let mut predictions = Vec::new();
        let families = super::loo::Families::builtin();
        for (case, outcome) in &self.outcomes {
            match outcome {
                Ok(p) => {
                    predicted += 1;
                    for (metric, measured, value, scored) in &p.values {
                        predictions.push(PredictionRow {
                            case_id: case.id.clone(),
                            source: case.source.clone(),
                            family: families.name_of(&case.source).map(str::to_string),
                            metric: metric.clone(),
                            measured: *measured,
                            predicted: *value,
                            pct_error: pct_error(*value, *measured),
                            scored: *scored,
                        });
                        if *scored {
                            errors
                                .entry(metric.clone())
                                .or_default()
                                .push((case.id.clone(), pct_error(*value, *measured)));
                        }
                    }
                }
                Err(reason) => skipped.push(Skipped {
                    case_id: case.id.clone(),
                    reason: reason.clone(),
                }),
            }
        }
        let metrics = errors
            .into_iter()
            .map(|(metric, mut errs)| {
                let mean_abs_log_err = errs
                    .iter()
                    .map(|(_, e)| (1.0 + e / 100.0).ln().abs())
                    .sum::<f64>()
                    / errs.len() as f64;
                let mut abs: Vec<f64> = errs.iter().map(|(_, e)| e.abs()).collect();
                abs.sort_by(f64::total_cmp);
                errs.sort_by(|a, b| b.1.abs().total_cmp(&a.1.abs()));
                errs.truncate(5);
                let summary = MetricSummary {
                    n: abs.len(),
                    median_abs_pct_err: percentile(&abs, 0.5),
                    p90_abs_pct_err: percentile(&abs, 0.9),
                    mean_abs_log_err,
                    worst: errs,
                };
                (metric, summary)
            })
            .collect();
        Summary {
            cases: self.outcomes.len(),
            predicted,
            skipped,
            metrics,
            predictions,
        }
    }

    /// One line per predicted metric and per skipped case, then the summary.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for (case, outcome) in &self.outcomes {
            match outcome {
                Ok(p) => {
                    let c = &p.chosen;
                    let config = format!(
                        "tp{} pp{} ep{} batch {} x{} {}/{}",
                        c.tp, c.pp, c.ep, c.batch, c.instances, c.weight_dtype, c.kv_dtype
                    );
                    for (metric, measured, predicted, scored) in &p.values {
                        let err = if *scored {
                            format!("{:+7.1}%", pct_error(*predicted, *measured))
                        } else {
                            "  input".into()
                        };
                        let _ = writeln!(
                            out,
                            "{:<72} {:<28} predicted {:>12.1} measured {:>12.1} {err}  [{config}]",
                            case.id, metric, predicted, measured
                        );
                    }
                }
                Err(reason) => {
                    let _ = writeln!(out, "{:<72} skipped: {reason}", case.id);
                }
            }
        }
        let s = self.summary();
        let _ = writeln!(
            out,
            "\n{} cases: {} predicted, {} skipped",
            s.cases,
            s.predicted,
            s.skipped.len()
        );
        let _ = writeln!(
            out,
            "{:<28} {:>4} {:>11} {:>11}  worst",
            "metric", "n", "median |%|", "p90 |%|"
        );
        for (metric, m) in &s.metrics {
            let worst: Vec<String> = m
                .worst
                .iter()
                .map(|(id, e)| format!("{id} {e:+.0}%"))
                .collect();
            let _ = writeln!(
                out,
                "{metric:<28} {:>4} {:>11.1} {:>11.1}  {}",
                m.n,
                m.median_abs_pct_err,
                m.p90_abs_pct_err,
                worst.join(", ")
            );
        }
        let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
        for sk in &s.skipped {
            *reasons.entry(sk.reason.as_str()).or_default() += 1;
        }
        for (reason, n) in reasons {
            let _ = writeln!(out, "skipped {n}: {reason}");
        }
        out
    }

    /// Absolute % errors of the scored throughput predictions, grouped by `key` of their case:
    /// `(group, n, median, p90)`, groups in order.
    pub fn throughput_by<K: Ord>(&self, key: impl Fn(&Case) -> K) -> Vec<(K, usize, f64, f64)> {
        let mut groups: BTreeMap<K, Vec<f64>> = BTreeMap::new();
        for (case, outcome) in &self.outcomes {
            let Ok(p) = outcome else { continue };
            for (metric, measured, predicted, scored) in &p.values {
                if *scored && THROUGHPUT_METRICS.contains(&metric.as_str()) {
                    groups
                        .entry(key(case))
                        .or_default()
                        .push(pct_error(*predicted, *measured).abs());
                }
            }
        }
        groups
            .into_iter()
            .map(|(k, mut abs)| {
                abs.sort_by(f64::total_cmp);
                let (median, p90) = (percentile(&abs, 0.5), percentile(&abs, 0.9));
                (k, abs.len(), median, p90)
            })
            .collect()
    }

    /// The summary against the targets, the worst cases, the skipped cases and every prediction,
    /// as Markdown (the generated part of docs/validation.md).
    pub fn markdown(&self) -> String {
        let s = self.summary();
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{} cases: {} predicted, {} skipped.\n",
            s.cases,
            s.predicted,
            s.skipped.len()
        );
        let mut rows = Vec::new();
        for (metric, m) in &s.metrics {
            let (target, met) = match target(metric) {
                Some((median, Some(p90))) => (
                    format!("median <= {median:.0}%, p90 <= {p90:.0}%"),
                    Some(m.median_abs_pct_err <= median && m.p90_abs_pct_err <= p90),
                ),
                Some((median, None)) => (
                    format!("median <= {median:.0}%"),
                    Some(m.median_abs_pct_err <= median),
                ),
                None => ("-".into(), None),
            };
            let met = match met {
                Some(true) => "yes",
                Some(false) => "**no**",
                None => "-",
            };
            rows.push(vec![
                format!("`{metric}`"),
                m.n.to_string(),
                format!("{:.1}%", m.median_abs_pct_err),
                format!("{:.1}%", m.p90_abs_pct_err),
                target,
                met.to_string(),
            ]);
        }
        out.push_str(&Markdown.table(&Table::new(
            vec![
                Column::left("metric"),
                Column::right("predictions"),
                Column::right("median abs error"),
                Column::right("p90 abs error"),
                Column::left("target"),
                Column::left("met"),
            ],
            rows,
        )));
        let _ = writeln!(out, "\n### Throughput by harness and by model family\n");
        let _ = writeln!(
            out,
            "The three throughput metrics ({}) pooled.\n",
            THROUGHPUT_METRICS.map(|m| format!("`{m}`")).join(", ")
        );
        let by_harness = self.throughput_by(|c| c.harness());
        let by_family = self.throughput_by(|c| c.model_family().to_string());
        let rows = by_harness
            .into_iter()
            .map(|(h, n, med, p90)| (format!("harness: {}", h.as_str()), n, med, p90))
            .chain(
                by_family
                    .into_iter()
                    .map(|(f, n, med, p90)| (format!("model: {f}"), n, med, p90)),
            )
            .map(|(group, n, median, p90)| {
                vec![
                    group,
                    n.to_string(),
                    format!("{median:.1}%"),
                    format!("{p90:.1}%"),
                ]
            })
            .collect();
        out.push_str(&Markdown.table(&Table::new(
            vec![
                Column::left("group"),
                Column::right("predictions"),
                Column::right("median abs error"),
                Column::right("p90 abs error"),
            ],
            rows,
        )));
        let rows = s
            .metrics
            .iter()
            .flat_map(|(metric, m)| {
                m.worst.iter().map(move |(id, e)| {
                    vec![format!("`{metric}`"), id.clone(), format!("{e:+.0}%")]
                })
            })
            .collect();
        out.push('\n');
        out.push_str(
            &Markdown.table(
                &Table::new(
                    vec![
                        Column::left("metric"),
                        Column::left("case"),
                        Column::right("error"),
                    ],
                    rows,
                )
                .titled("Worst cases"),
            ),
        );
        let rows = s
            .skipped
            .iter()
            .map(|sk| vec![sk.case_id.clone(), sk.reason.clone()])
            .collect();
        out.push('\n');
        out.push_str(
            &Markdown.table(
                &Table::new(vec![Column::left("case"), Column::left("reason")], rows)
                    .titled("Skipped cases"),
            ),
        );
        let mut rows = Vec::new();
        for (case, outcome) in &self.outcomes {
            let Ok(p) = outcome else { continue };
            let c = &p.chosen;
            for (metric, measured, predicted, scored) in &p.values {
                let err = if *scored {
                    format!("{:+.1}%", pct_error(*predicted, *measured))
                } else {
                    "input".into()
                };
                rows.push(vec![
                    case.id.clone(),
                    case.setup.scenario.clone(),
                    format!("`{metric}`"),
                    format!("{measured:.1}"),
                    format!("{predicted:.1}"),
                    err,
                    format!(
                        "{} / {} / {}, {}, x{}, {} / {}",
                        c.tp, c.pp, c.ep, c.batch, c.instances, c.weight_dtype, c.kv_dtype
                    ),
                ]);
            }
        }
        out.push('\n');
        out.push_str(
            &Markdown.table(
                &Table::new(
                    vec![
                        Column::left("case"),
                        Column::left("scenario"),
                        Column::left("metric"),
                        Column::right("measured"),
                        Column::right("predicted"),
                        Column::right("error"),
                        Column::left("chosen: tp / pp / ep, batch, instances, weights / KV"),
                    ],
                    rows,
                )
                .titled("Every prediction"),
            ),
        );
        out
    }

    /// Every prediction as a Parquet table.
    pub fn write_parquet(&self, path: &Path) -> Result<()> {
        let mut case_id = Vec::new();
        let mut source = Vec::new();
        let mut scenario = Vec::new();
        let mut model = Vec::new();
        let mut hardware = Vec::new();
        let mut metric = Vec::new();
        let mut measured = Vec::new();
        let mut predicted = Vec::new();
        let mut err = Vec::new();
        let mut scored = Vec::new();
        let (mut gpus, mut tp, mut pp, mut ep, mut batch, mut instances) =
            (vec![], vec![], vec![], vec![], vec![], vec![]);
        let (mut weight, mut kv, mut notes) = (vec![], vec![], vec![]);
        for (case, outcome) in &self.outcomes {
            let Ok(p) = outcome else { continue };
            for (m, meas, pred, sc) in &p.values {
                case_id.push(case.id.clone());
                source.push(case.source.clone());
                scenario.push(case.setup.scenario.clone());
                model.push(case.setup.model.clone());
                hardware.push(case.setup.hardware.clone());
                metric.push(m.clone());
                measured.push(*meas);
                predicted.push(*pred);
                err.push(pct_error(*pred, *meas));
                scored.push(*sc);
                let c = &p.chosen;
                gpus.push(c.gpus);
                tp.push(c.tp);
                pp.push(c.pp);
                ep.push(c.ep);
                batch.push(c.batch);
                instances.push(c.instances);
                weight.push(c.weight_dtype.clone());
                kv.push(c.kv_dtype.clone());
                notes.push(p.notes.join("; "));
            }
        }
        let text = |v: Vec<String>| Arc::new(StringArray::from(v)) as ArrayRef;
        let count = |v: Vec<u32>| Arc::new(UInt32Array::from(v)) as ArrayRef;
        let float = |v: Vec<f64>| Arc::new(Float64Array::from(v)) as ArrayRef;
        let columns: Vec<(&str, ArrayRef)> = vec![
            ("case_id", text(case_id)),
            ("source", text(source)),
            ("scenario", text(scenario)),
            ("model", text(model)),
            ("hardware", text(hardware)),
            ("metric", text(metric)),
            ("measured", float(measured)),
            ("predicted", float(predicted)),
            ("pct_error", float(err)),
            ("scored", Arc::new(BooleanArray::from(scored))),
            ("gpus", count(gpus)),
            ("tp", count(tp)),
            ("pp", count(pp)),
            ("ep", count(ep)),
            ("batch", count(batch)),
            ("instances", count(instances)),
            ("weight_dtype", text(weight)),
            ("kv_dtype", text(kv)),
            ("notes", text(notes)),
        ];
        let schema = Arc::new(Schema::new(
            columns
                .iter()
                .map(|(n, a)| Field::new(*n, a.data_type().clone(), false))
                .collect::<Vec<_>>(),
        ));
        let batch = RecordBatch::try_new(
            schema.clone(),
            columns.into_iter().map(|(_, a)| a).collect(),
        )?;
        let file = File::create(path).with_context(|| format!("creating {}", path.display()))?;
        let mut writer = ArrowWriter::try_new(file, schema, None)?;
        writer.write(&batch)?;
        writer.close()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_interpolate_like_numpy() {
        let v = [1.0, 2.0, 3.0, 4.0, 10.0];
        assert_eq!(percentile(&v, 0.5), 3.0);
        assert!((percentile(&v, 0.9) - 7.6).abs() < 1e-12);
        assert_eq!(percentile(&[5.0], 0.9), 5.0);
    }

    /// Throughput errors pool by harness: latency metrics and unscored inputs stay out, and each
    /// group's median and p90 are of its absolute errors.
    #[test]
    fn throughput_pools_by_harness() {
        use super::super::cases::{self, Harness};
        use super::super::predict::Chosen;
        let text = "case_id,kind,source,source_url,model,hardware,gpus,tp,pp,ep,dp,cp,weight_dtype,kv_dtype,batch,input_tokens,output_tokens,scenario,ttft_p99_limit_ms,tpot_p99_limit_ms,global_batch_seqs,seq_len,metric,value,unit,notes
a,inference,MLPerf Inference v5.1,u,llama-3.1-70b,h200-sxm,8,1,1,,,,fp8,fp8,8,100,100,server,2000,200,,,output_tokens_per_s,100,tokens/s,
b,inference,TensorRT-LLM docs,u,deepseek-v3,b200,8,1,1,8,,,fp8,fp8,8,100,100,offline,,,,,output_tokens_per_s_per_gpu,100,tokens/s/GPU,
c,inference,TensorRT-LLM docs,u,gpt-oss-120b,b200,1,1,1,1,,,fp8,fp8,8,100,100,offline,,,,,output_tokens_per_s_per_gpu,200,tokens/s/GPU,";
        let cs = cases::parse(Path::new("t.csv"), text).unwrap();
        let chosen = Chosen {
            gpus: 8,
            tp: 1,
            pp: 1,
            ep: 1,
            batch: 8,
            instances: 1,
            weight_dtype: "fp8".into(),
            kv_dtype: "fp8".into(),
        };
        let prediction = |values: Vec<(&str, f64, f64, bool)>| {
            Ok(Prediction {
                chosen: chosen.clone(),
                values: values
                    .into_iter()
                    .map(|(m, measured, predicted, scored)| {
                        (m.to_string(), measured, predicted, scored)
                    })
                    .collect(),
                notes: Vec::new(),
            })
        };
        let results = Results {
            outcomes: vec![
                (
                    &cs[0],
                    prediction(vec![
                        ("output_tokens_per_s", 100.0, 110.0, true),
                        ("ttft_p99_ms", 100.0, 300.0, true),
                    ]),
                ),
                (
                    &cs[1],
                    prediction(vec![("output_tokens_per_s_per_gpu", 100.0, 70.0, true)]),
                ),
                (
                    &cs[2],
                    prediction(vec![
                        ("output_tokens_per_s_per_gpu", 200.0, 250.0, true),
                        ("tokens_per_s_per_user", 10.0, 99.0, false),
                    ]),
                ),
            ],
        };
        let by = results.throughput_by(|c| c.harness());
        assert_eq!(by.len(), 2);
        let (h, n, median, p90) = by[0];
        assert_eq!((h, n), (Harness::MlPerf, 1));
        assert!((median - 10.0).abs() < 1e-9 && (p90 - 10.0).abs() < 1e-9);
        // |errors| 30 % and 25 %: median 27.5 %, p90 25 + 0.9 x 5 = 29.5 %.
        let (h, n, median, p90) = by[1];
        assert_eq!((h, n), (Harness::TensorRtLlm, 2));
        assert!(
            (median - 27.5).abs() < 1e-9 && (p90 - 29.5).abs() < 1e-9,
            "{median} {p90}"
        );
        let families: Vec<String> = results
            .throughput_by(|c| c.model_family().to_string())
            .into_iter()
            .map(|g| g.0)
            .collect();
        assert_eq!(families, ["deepseek-v3", "gpt-oss", "llama"]);
    }

    #[test]
    fn errors_are_relative_to_the_measurement() {
        assert_eq!(pct_error(110.0, 100.0), 10.000000000000009);
        assert_eq!(pct_error(50.0, 100.0), -50.0);
    }
}
