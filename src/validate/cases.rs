//! Reads the measurements format of `reference/measurements-calibration.csv` into cases:
//! one case per `case_id`, its configuration columns (which every row of the case must repeat)
//! and one measured value per metric row. Blank cells are `None`; malformed cells are errors
//! naming the file, line, column and value.

use std::collections::HashMap;
use std::path::Path;

use serde::Deserialize;
use serde::de::IgnoredAny;

use crate::error::UserError;

/// One CSV row, as text. Columns validation does not use are required but ignored
/// (`source_url`, `notes`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRow {
    case_id: String,
    kind: String,
    source: String,
    #[serde(rename = "source_url")]
    _source_url: IgnoredAny,
    model: String,
    hardware: String,
    gpus: String,
    tp: String,
    pp: String,
    ep: String,
    dp: String,
    cp: String,
    weight_dtype: String,
    kv_dtype: String,
    batch: String,
    input_tokens: String,
    output_tokens: String,
    scenario: String,
    ttft_p99_limit_ms: String,
    tpot_p99_limit_ms: String,
    global_batch_seqs: String,
    seq_len: String,
    metric: String,
    value: String,
    unit: String,
    #[serde(rename = "notes")]
    _notes: IgnoredAny,
}

/// The configuration a case ran, with blanks where the source did not say.
#[derive(Debug, Clone, PartialEq)]
pub struct Setup {
    pub kind: String,
    pub model: String,
    pub hardware: String,
    pub gpus: Option<u32>,
    pub tp: Option<u32>,
    pub pp: Option<u32>,
    pub ep: Option<u32>,
    pub dp: Option<u32>,
    pub cp: Option<u32>,
    pub weight_dtype: Option<String>,
    pub kv_dtype: Option<String>,
    pub batch: Option<u32>,
    pub input_tokens: Option<f64>,
    pub output_tokens: Option<f64>,
    pub scenario: String,
    pub ttft_p99_limit_ms: Option<f64>,
    pub tpot_p99_limit_ms: Option<f64>,
    /// Training cases: sequences per optimizer step and tokens per sequence.
    pub global_batch_seqs: Option<u32>,
    pub seq_len: Option<u32>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Measurement {
    pub metric: String,
    pub value: f64,
    pub unit: String,
    /// Line of the CSV file it came from.
    pub line: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    pub id: String,
    pub source: String,
    pub setup: Setup,
    pub measurements: Vec<Measurement>,
}

/// The benchmark harness behind a case, as its `source` names it: what sets how the engine was
/// driven (its scheduler defaults, the lengths it fed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Harness {
    /// MLPerf Inference submissions (NVIDIA's TensorRT-LLM harness, vLLM for AMD).
    MlPerf,
    /// TensorRT-LLM's published `trtllm-bench` tables and blogs.
    TensorRtLlm,
    /// InferenceMAX / InferenceX points.
    InferenceX,
    /// Anything else (training papers and tables).
    Other,
}

impl Harness {
    pub fn as_str(self) -> &'static str {
        match self {
            Harness::MlPerf => "MLPerf",
            Harness::TensorRtLlm => "TensorRT-LLM",
            Harness::InferenceX => "InferenceMAX",
            Harness::Other => "other",
        }
    }
}

impl Case {
    /// The harness the case's source names.
    pub fn harness(&self) -> Harness {
        let s = self.source.as_str();
        if s.starts_with("MLPerf Inference") {
            Harness::MlPerf
        } else if s.starts_with("TensorRT-LLM") {
            Harness::TensorRtLlm
        } else if s.starts_with("InferenceX") || s.starts_with("InferenceMAX") {
            Harness::InferenceX
        } else {
            Harness::Other
        }
    }

    /// The model's family: its catalog id up to the first part that starts with a digit
    /// (`llama-3.1-70b` is `llama`, `gpt-oss-120b` is `gpt-oss`).
    pub fn model_family(&self) -> &str {
        let id = self.setup.model.as_str();
        id.match_indices('-')
            .find(|(i, _)| id[i + 1..].starts_with(|c: char| c.is_ascii_digit()))
            .map_or(id, |(i, _)| &id[..i])
    }

    pub fn measured(&self, metric: &str) -> Option<f64> {
        self.measurements
            .iter()
            .find(|m| m.metric == metric)
            .map(|m| m.value)
    }
}

/// Cases in file order.
pub fn read(path: &Path) -> Result<Vec<Case>, UserError> {
    let text = crate::limits::read_input(path).map_err(|e| {
        UserError::new(format!(
            "cannot read measurements file {}: {e}",
            path.display()
        ))
        .with_hint("pass the path of a measurements .csv file, e.g. reference/measurements-calibration.csv")
    })?;
    parse(path, &text)
}

pub fn parse(path: &Path, text: &str) -> Result<Vec<Case>, UserError> {
    let file = path.display();
    let mut reader = csv::ReaderBuilder::new().from_reader(text.as_bytes());
    let mut cases: Vec<Case> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let hint = "the header and columns are described in reference/README.md";
    let headers = reader
        .headers()
        .map_err(|e| UserError::new(format!("{file}:1: {}", csv_message(&e))).with_hint(hint))?
        .clone();
    for record in reader.records() {
        let record = record.map_err(|e| {
            let at = e
                .position()
                .map_or(String::new(), |p| format!(":{}", p.line()));
            UserError::new(format!("{file}{at}: {}", csv_message(&e))).with_hint(hint)
        })?;
        let line = record.position().map_or(0, |p| p.line());
        let row: RawRow = record.deserialize(Some(&headers)).map_err(|e| {
            UserError::new(format!("{file}:{line}: {}", csv_message(&e))).with_hint(hint)
        })?;
        let cell = Cell {
            file: &file.to_string(),
            line,
        };
        let setup = Setup {
            kind: cell.required("kind", &row.kind)?,
            model: cell.required("model", &row.model)?,
            hardware: cell.required("hardware", &row.hardware)?,
            gpus: cell.count("gpus", &row.gpus)?,
            tp: cell.count("tp", &row.tp)?,
            pp: cell.count("pp", &row.pp)?,
            ep: cell.count("ep", &row.ep)?,
            dp: cell.count("dp", &row.dp)?,
            cp: cell.count("cp", &row.cp)?,
            weight_dtype: cell.text(&row.weight_dtype),
            kv_dtype: cell.text(&row.kv_dtype),
            batch: cell.count("batch", &row.batch)?,
            input_tokens: cell.number("input_tokens", &row.input_tokens)?,
            output_tokens: cell.number("output_tokens", &row.output_tokens)?,
            scenario: cell.required("scenario", &row.scenario)?,
            ttft_p99_limit_ms: cell.number("ttft_p99_limit_ms", &row.ttft_p99_limit_ms)?,
            tpot_p99_limit_ms: cell.number("tpot_p99_limit_ms", &row.tpot_p99_limit_ms)?,
            global_batch_seqs: cell.count("global_batch_seqs", &row.global_batch_seqs)?,
            seq_len: cell.count("seq_len", &row.seq_len)?,
        };
        let measurement = Measurement {
            metric: cell.required("metric", &row.metric)?,
            value: cell
                .number("value", &row.value)?
                .ok_or_else(|| cell.error("value", "", "a measured value is required"))?,
            unit: row.unit.trim().to_string(),
            line,
        };
        let id = cell.required("case_id", &row.case_id)?;
        match index.get(&id) {
            Some(&i) => {
                if cases[i].setup != setup {
                    return Err(UserError::new(format!(
                        "{file}:{line}: case \"{}\" repeats with a different configuration than its first row (line {})",
                        crate::limits::quoted(&id),
                        cases[i].measurements[0].line
                    ))
                    .with_hint("every row of a case must repeat the same configuration columns"));
                }
                if cases[i].measured(&measurement.metric).is_some() {
                    return Err(UserError::new(format!(
                        "{file}:{line}: case \"{}\" measures {} twice",
                        crate::limits::quoted(&id),
                        crate::limits::quoted(&measurement.metric)
                    )));
                }
                cases[i].measurements.push(measurement);
            }
            None => {
                index.insert(id.clone(), cases.len());
                cases.push(Case {
                    id,
                    source: row.source.trim().to_string(),
                    setup,
                    measurements: vec![measurement],
                });
            }
        }
    }
    if cases.is_empty() {
        return Err(UserError::new(format!("{file}: no measurements"))
            .with_hint("the file needs a header and at least one row"));
    }
    Ok(cases)
}

fn csv_message(e: &csv::Error) -> String {
    match e.kind() {
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => {
            format!("the row has {len} fields, the header {expected_len}")
        }
        csv::ErrorKind::Deserialize { err, .. } => err.to_string(),
        _ => e.to_string(),
    }
}

struct Cell<'a> {
    file: &'a str,
    line: u64,
}

impl Cell<'_> {
    fn error(&self, column: &str, value: &str, what: &str) -> UserError {
        UserError::new(format!(
            "{}:{}: column {column}: \"{}\": {what}",
            self.file,
            self.line,
            crate::limits::quoted(value)
        ))
    }

    fn text(&self, value: &str) -> Option<String> {
        let v = value.trim();
        (!v.is_empty()).then(|| v.to_string())
    }

    fn required(&self, column: &str, value: &str) -> Result<String, UserError> {
        self.text(value)
            .ok_or_else(|| self.error(column, value, "must not be blank"))
    }

    fn number(&self, column: &str, value: &str) -> Result<Option<f64>, UserError> {
        let Some(v) = self.text(value) else {
            return Ok(None);
        };
        match v.parse::<f64>() {
            Ok(x) if x.is_finite() && x > 0.0 => Ok(Some(x)),
            _ => Err(self.error(column, &v, "not a positive number")),
        }
    }

    fn count(&self, column: &str, value: &str) -> Result<Option<u32>, UserError> {
        let Some(v) = self.text(value) else {
            return Ok(None);
        };
        match v.parse::<u32>() {
            Ok(x) if x > 0 => Ok(Some(x)),
            _ => Err(self.error(column, &v, "not a positive whole number")),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The measurements format's header, for tests that build cases from rows.
    pub(crate) const HEADER: &str = "case_id,kind,source,source_url,model,hardware,gpus,tp,pp,ep,dp,cp,weight_dtype,kv_dtype,batch,input_tokens,output_tokens,scenario,ttft_p99_limit_ms,tpot_p99_limit_ms,global_batch_seqs,seq_len,metric,value,unit,notes";

    /// The cases of `rows` under [`HEADER`].
    pub(crate) fn parse_text(rows: &[&str]) -> Result<Vec<Case>, UserError> {
        let text = format!("{HEADER}\n{}\n", rows.join("\n"));
        parse(Path::new("m.csv"), &text)
    }

    #[test]
    fn rows_group_into_cases() {
        let cases = parse_text(&[
            "a,inference,s,u,llama-2-70b,h100-sxm,8,2,1,,4,,fp8,,1024,222.33,294.45,server,2000,200,,,output_tokens_per_s,21605.79,tokens/s,\"x, y\"",
            "a,inference,s,u,llama-2-70b,h100-sxm,8,2,1,,4,,fp8,,1024,222.33,294.45,server,2000,200,,,ttft_p99_ms,461.3,ms,",
            "b,training,s,u,gpt3-175b,a100-80gb,1024,8,8,,16,,bf16,,,,,training,,,1536,2048,model_tflops_per_gpu,138,TFLOP/s,",
        ])
        .unwrap();
        assert_eq!(cases.len(), 2);
        assert_eq!(cases[0].measurements.len(), 2);
        assert_eq!(cases[0].setup.tp, Some(2));
        assert_eq!(cases[0].setup.ep, None);
        assert_eq!(cases[0].measured("ttft_p99_ms"), Some(461.3));
        assert_eq!(cases[1].setup.kind, "training");
    }

    #[test]
    fn malformed_cells_name_line_column_and_value() {
        let e = parse_text(&["a,inference,s,u,llama-2-70b,h100-sxm,eight,2,1,,4,,fp8,,1024,222,294,offline,,,,,output_tokens_per_s,1,tokens/s,"]).unwrap_err();
        assert_eq!(
            e.message,
            "m.csv:2: column gpus: \"eight\": not a positive whole number"
        );
        let e = parse_text(&["a,inference,s,u,llama-2-70b,h100-sxm,8,2,1,,4,,fp8,,1024,222,294,offline,,,,,output_tokens_per_s,,tokens/s,"]).unwrap_err();
        assert!(e.message.contains("column value"), "{}", e.message);
        let e = parse_text(&["a,inference,s,u,llama-2-70b"]).unwrap_err();
        assert!(
            e.message.contains("the row has 5 fields, the header 26"),
            "{}",
            e.message
        );
    }

    #[test]
    fn a_case_must_not_change_its_configuration() {
        let e = parse_text(&[
            "a,inference,s,u,llama-2-70b,h100-sxm,8,2,1,,4,,fp8,,1024,222,294,server,2000,200,,,output_tokens_per_s,1,tokens/s,",
            "a,inference,s,u,llama-2-70b,h100-sxm,8,4,1,,4,,fp8,,1024,222,294,server,2000,200,,,ttft_p99_ms,1,ms,",
        ])
        .unwrap_err();
        assert!(
            e.message
                .starts_with("m.csv:3: case \"a\" repeats with a different configuration"),
            "{}",
            e.message
        );
    }
}
