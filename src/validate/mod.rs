//! `racksweep validate`: predict published measurements and report the error, per case and per
//! metric. Reads the measurements format (`cases`), predicts each case with the sweep engine's
//! own grid and performance model (`predict`), and summarizes (`report`).

pub mod cases;
pub mod early_stopping;
pub mod finite;
pub mod fit;
pub mod lengths;
pub mod loo;
pub mod predict;
pub mod report;
pub mod submissions;
pub mod train;

use std::path::Path;

use anyhow::Result;
use rayon::prelude::*;

use crate::catalog::Catalog;
use crate::error::UserError;
use report::Results;

/// Predicts every case of a measurements file; `calibration` replaces the built-in global factors.
pub fn validate(path: &Path, calibration: Option<&Path>) -> Result<(Vec<cases::Case>, Catalog)> {
    let cases = cases::read(path)?;
    let mut catalog = Catalog::builtin().map_err(anyhow::Error::msg)?;
    if let Some(file) = calibration {
        let text = crate::limits::read_input(file).map_err(|e| {
            UserError::new(format!(
                "cannot read calibration file {}: {e}",
                file.display()
            ))
        })?;
        // Keys it omits keep their values; the training model's may come as a [training] table.
        let bad = |e: String| {
            UserError::new(format!("{}: {e}", file.display())).with_hint(
                "see src/catalog/data/calibration.toml (and training.toml for a [training] table)",
            )
        };
        let table: toml::Table = toml::from_str(&text).map_err(|e| bad(e.to_string()))?;
        catalog.calibrate(table).map_err(|e| bad(e.to_string()))?;
    }
    Ok((cases, catalog))
}

/// Predicts the cases in parallel, in file order.
pub fn predict_all<'a>(cases: &'a [cases::Case], catalog: &Catalog) -> Results<'a> {
    Results {
        outcomes: cases
            .par_iter()
            .map(|c| (c, predict_case(c, catalog)))
            .collect(),
    }
}

/// Predicts one case with the model its kind names: inference (`predict`) or training
/// (`train`), or says why it cannot be modelled.
pub fn predict_case(case: &cases::Case, catalog: &Catalog) -> Result<predict::Prediction, String> {
    match case.setup.kind.as_str() {
        "inference" => predict::predict(case, catalog),
        "training" => train::predict(case, catalog),
        other => Err(format!("unknown kind \"{other}\"")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A case of a kind no model predicts is skipped with a reason naming the kind.
    #[test]
    fn unknown_kind_is_skipped_with_its_name() {
        let text = "case_id,kind,source,source_url,model,hardware,gpus,tp,pp,ep,dp,cp,weight_dtype,kv_dtype,batch,input_tokens,output_tokens,scenario,ttft_p99_limit_ms,tpot_p99_limit_ms,global_batch_seqs,seq_len,metric,value,unit,notes
c,finetuning,s,u,llama-3.1-70b,h100-sxm,8,8,1,,,,bf16,,,,,training,,,,,mfu_pct,40,%,";
        let case = cases::parse(Path::new("t.csv"), text).unwrap().remove(0);
        let catalog = Catalog::builtin().unwrap();
        assert_eq!(
            predict_case(&case, &catalog).unwrap_err(),
            "unknown kind \"finetuning\""
        );
    }
}
