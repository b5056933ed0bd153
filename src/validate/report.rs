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

/// Every case's outcome, in file order.
pub struct Results<'a> {
    pub outcomes: Vec<(&'a Case, Result<Prediction, String>)>,
}

/// `predicted / measured - 1`, in percent.
pub fn pct_error(predicted: f64, measured: f64) -> f64 {
    (predicted / measured - 1.0) * 100.0
}

/// Targets per metric: (median, optional p90) absolute % error. Inference: the fidelity
/// issue; training: the training issue (MFU and TFLOP/s per GPU, median 10 %).
pub fn target(metric: &str) -> Option<(f64, Option<f64>)> {
    match metric {
        "output_tokens_per_s" | "output_tokens_per_s_per_gpu" | "total_tokens_per_s_per_gpu" => {
            Some((15.0, Some(40.0)))
        }
        "ttft_p99_ms" | "tpot_p99_ms" | "tokens_per_s_per_user" => Some((25.0, None)),
        "model_tflops_per_gpu" | "hardware_tflops_per_gpu" | "mfu_pct" | "hfu_pct" => {
            Some((10.0, None))
        }
        _ => None,
    }
}

/// Linear-interpolated percentile of sorted values (numpy's default).
fn percentile(sorted: &[f64], p: f64) -> f64 {
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

#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub cases: usize,
    pub predicted: usize,
    pub skipped: Vec<Skipped>,
    pub metrics: BTreeMap<String, MetricSummary>,
}

impl Results<'_> {
    pub fn summary(&self) -> Summary {
        let mut errors: BTreeMap<String, Vec<(String, f64)>> = BTreeMap::new();
        let mut skipped = Vec::new();
        let mut predicted = 0;
        for (case, outcome) in &self.outcomes {
            match outcome {
                Ok(p) => {
                    predicted += 1;
                    for (metric, measured, value, scored) in &p.values {
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
        let _ = writeln!(
            out,
            "| metric | predictions | median abs error | p90 abs error | target | met |"
        );
        let _ = writeln!(out, "|---|---:|---:|---:|---|---|");
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
            let _ = writeln!(
                out,
                "| `{metric}` | {} | {:.1}% | {:.1}% | {target} | {} |",
                m.n,
                m.median_abs_pct_err,
                m.p90_abs_pct_err,
                match met {
                    Some(true) => "yes",
                    Some(false) => "**no**",
                    None => "-",
                }
            );
        }
        let _ = writeln!(out, "\n### Worst cases\n");
        let _ = writeln!(out, "| metric | case | error |");
        let _ = writeln!(out, "|---|---|---:|");
        for (metric, m) in &s.metrics {
            for (id, e) in &m.worst {
                let _ = writeln!(out, "| `{metric}` | {id} | {e:+.0}% |");
            }
        }
        let _ = writeln!(out, "\n### Skipped cases\n");
        let _ = writeln!(out, "| case | reason |");
        let _ = writeln!(out, "|---|---|");
        for sk in &s.skipped {
            let _ = writeln!(out, "| {} | {} |", sk.case_id, sk.reason);
        }
        let _ = writeln!(out, "\n### Every prediction\n");
        let _ = writeln!(
            out,
            "| case | scenario | metric | measured | predicted | error | chosen: tp / pp / ep, batch, instances, weights / KV |"
        );
        let _ = writeln!(out, "|---|---|---|---:|---:|---:|---|");
        for (case, outcome) in &self.outcomes {
            let Ok(p) = outcome else { continue };
            let c = &p.chosen;
            for (metric, measured, predicted, scored) in &p.values {
                let err = if *scored {
                    format!("{:+.1}%", pct_error(*predicted, *measured))
                } else {
                    "input".into()
                };
                let _ = writeln!(
                    out,
                    "| {} | {} | `{metric}` | {measured:.1} | {predicted:.1} | {err} | {} / {} / {}, {}, x{}, {} / {} |",
                    case.id,
                    case.setup.scenario,
                    c.tp,
                    c.pp,
                    c.ep,
                    c.batch,
                    c.instances,
                    c.weight_dtype,
                    c.kv_dtype
                );
            }
        }
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

    #[test]
    fn errors_are_relative_to_the_measurement() {
        assert_eq!(pct_error(110.0, 100.0), 10.000000000000009);
        assert_eq!(pct_error(50.0, 100.0), -50.0);
    }
}
