//! Predicts a measured training case with `train::evaluate`: the case's layout where the source
//! gives it, the values the model allows where it does not (tensor and pipeline degrees,
//! microbatch, interleaving, ZeRO stage, recomputation), and the fastest layout that fits, as
//! the tuned runs the sources report are (docs/validation.md, "Training").

use crate::catalog::Catalog;
use crate::limits;
use crate::train::{self, Job, Layout, Precision, Recompute, System};

use super::cases::Case;
use super::predict::{Chosen, Prediction, powers_of_two, within_gpus};

/// Metrics a training case can be scored on.
pub const METRICS: [&str; 8] = [
    "model_tflops_per_gpu",
    "hardware_tflops_per_gpu",
    "mfu_pct",
    "hfu_pct",
    "training_tokens_per_s",
    "step_time_s",
    "time_to_train_min",
    "gpu_hours",
];

const MICROBATCHES: [u32; 3] = [1, 2, 4];
/// Model chunks per stage tried (NeMo's recipes use up to 20 for llama-2-70b on 4 stages).
const MAX_VIRTUAL_STAGES: u32 = 24;
const ZERO_STAGES: [u8; 2] = [1, 3];

pub fn predict(case: &Case, catalog: &Catalog) -> Result<Prediction, String> {
    let s = &case.setup;
    let model = super::predict::model(case, catalog)?;
    let gpu = catalog
        .gpu(&s.hardware)
        .ok_or_else(|| format!("unknown hardware id \"{}\"", s.hardware))?;
    let rack = catalog
        .rack(&gpu.default_rack)
        .expect("checked default rack");
    let gpus = s
        .gpus
        .ok_or("gpus is blank: a training case needs its GPU count")?;
    if gpus > limits::MAX_CLUSTER_GPUS {
        return Err(format!(
            "gpus {gpus} is more than {}: {}",
            limits::MAX_CLUSTER_GPUS,
            limits::MAX_CLUSTER_GPUS_WHY
        ));
    }
    for (name, given) in [
        ("tp", s.tp),
        ("pp", s.pp),
        ("ep", s.ep),
        ("cp", s.cp),
        ("dp", s.dp),
    ] {
        within_gpus(name, given, gpus)?;
    }
    let seq_len = s.seq_len.ok_or("seq_len is blank")?;
    let global_batch_seqs = s.global_batch_seqs.ok_or("global_batch_seqs is blank")?;
    let scored: Vec<_> = case
        .measurements
        .iter()
        .filter(|m| METRICS.contains(&m.metric.as_str()))
        .collect();
    let needs_tokens: Vec<&str> = scored
        .iter()
        .filter(|m| matches!(m.metric.as_str(), "time_to_train_min" | "gpu_hours"))
        .map(|m| m.metric.as_str())
        .collect();
    if scored.len() == needs_tokens.len() {
        return Err(match needs_tokens.first() {
            Some(metric) => format!(
                "{metric} needs the run's training tokens, which the measurements format has no column for"
            ),
            None => "no training metric the model predicts".into(),
        });
    }
    let mut notes = Vec::new();
    let precision = match s.weight_dtype.as_deref() {
        Some("fp8") => Precision::Fp8,
        Some("bf16") => Precision::Bf16,
        None => {
            notes.push("precision blank: bf16 (Megatron-LM's default)".to_string());
            Precision::Bf16
        }
        Some(other) => return Err(format!("training precision \"{other}\" is not modelled")),
    };

    let domain = rack.scaleup_domain_gpus;
    let mut note_swept = |name: &str| notes.push(format!("{name} blank: swept"));
    let tp = match s.tp {
        Some(v) => vec![v],
        None => {
            note_swept("tp");
            powers_of_two(domain.min(8).min(gpus))
        }
    };
    let pp = match s.pp {
        Some(v) => vec![v],
        None => {
            note_swept("pp");
            (1..=64.min(model.layers))
                .filter(|&p| gpus.is_multiple_of(p))
                .collect()
        }
    };
    let cp = s.cp.unwrap_or(1);
    let ep = match s.ep {
        Some(v) => vec![v],
        None if model.is_moe() => {
            note_swept("ep");
            powers_of_two(model.experts().min(gpus))
        }
        None => vec![1],
    };
    notes.push("microbatch, virtual stages, ZeRO stage (1 or 3) and recomputation swept".into());

    let system = System {
        gpu,
        rack,
        factors: catalog.training,
        attention_efficiency: catalog.calibration.attention_efficiency,
        moe_gemm_efficiency: catalog.calibration.moe_gemm_efficiency,
        economics: &catalog.economics,
        ownership: crate::vocab::Ownership::Cloud,
    };
    let job = Job {
        seq_len,
        global_batch_seqs,
        train_tokens: 0.0,
    };
    let mut best: Option<(Layout, train::Estimate)> = None;
    for &tp in &tp {
        for &pp in &pp {
            // Each at most the GPUs, their product in u64.
            let split = u64::from(tp) * u64::from(pp) * u64::from(cp);
            if !u64::from(gpus).is_multiple_of(split) {
                continue;
            }
            let dp = (u64::from(gpus) / split) as u32;
            if s.dp.is_some_and(|d| d != dp) {
                continue;
            }
            for &ep in &ep {
                for v in 1..=(model.layers / pp).min(MAX_VIRTUAL_STAGES) {
                    if pp == 1 && v > 1 {
                        continue;
                    }
                    for microbatch in MICROBATCHES {
                        for zero_stage in ZERO_STAGES {
                            for recompute in Recompute::ALL {
                                let l = Layout {
                                    tp,
                                    pp,
                                    dp,
                                    cp,
                                    ep,
                                    microbatch,
                                    virtual_stages: v,
                                    zero_stage,
                                    recompute,
                                    precision,
                                };
                                let Ok(e) = train::evaluate(model, &system, &l, &job) else {
                                    continue;
                                };
                                if best.as_ref().is_none_or(|(_, b)| {
                                    e.training_tokens_per_s > b.training_tokens_per_s
                                }) {
                                    best = Some((l, e));
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    let (l, e) = best.ok_or("no layout of the case's GPUs fits and divides the batch")?;
    notes.push(format!(
        "chosen: cp {}, dp {}, microbatch {}, virtual stages {}, ZeRO-{}, recompute {:?}",
        l.cp, l.dp, l.microbatch, l.virtual_stages, l.zero_stage, l.recompute
    ));
    let mut values = Vec::new();
    for m in &scored {
        let predicted = match m.metric.as_str() {
            "model_tflops_per_gpu" => e.model_tflops_per_gpu,
            "hardware_tflops_per_gpu" => e.hardware_tflops_per_gpu,
            "mfu_pct" => e.mfu_pct,
            "hfu_pct" => e.hfu_pct,
            "training_tokens_per_s" => e.training_tokens_per_s,
            "step_time_s" => e.step.step_s,
            _ => {
                notes.push(format!(
                    "{} not scored: it needs the run's training tokens",
                    m.metric
                ));
                continue;
            }
        };
        values.push((m.metric.clone(), m.value, predicted, true));
    }
    Ok(Prediction {
        chosen: Chosen {
            gpus,
            tp: l.tp,
            pp: l.pp,
            ep: l.ep,
            batch: l.microbatch,
            instances: l.dp,
            weight_dtype: match precision {
                Precision::Bf16 => "bf16".into(),
                Precision::Fp8 => "fp8".into(),
            },
            kv_dtype: "-".into(),
        },
        values,
        notes,
    })
}
