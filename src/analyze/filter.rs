//! `--where` for the analytics commands: a numeric constraint as the engine has them
//! ("ttft_ms <= 1000"), or a label that must (`==`) or must not (`!=`) equal a value
//! ("hardware == b200"). Label values are checked against the run, so a typo is an error with
//! a suggestion rather than an empty table.

use crate::output::run_dir::Finished;
use anyhow::Result;
use polars::prelude::*;

use super::{predicate, scan};
use crate::columns::{Schema, Type};
use crate::error::UserError;
use crate::pareto::{Constraint, ParseError};
use crate::suggest;

#[derive(Debug, Clone, PartialEq)]
pub enum Where {
    Number(Constraint),
    Label {
        /// Index into the run's [`Schema`] columns.
        column: usize,
        name: &'static str,
        equal: bool,
        value: String,
    },
}

impl Where {
    /// Parses `"<label column> == <value>"`, `"<label column> != <value>"`, or a numeric
    /// constraint (`Constraint::parse`).
    pub fn parse(text: &str, schema: &Schema) -> Result<Where, ParseError> {
        for (symbol, equal) in [("==", true), ("!=", false)] {
            let Some((left, right)) = text.split_once(symbol) else {
                continue;
            };
            let column = left.trim();
            let value = right.trim().trim_matches(|c| c == '"' || c == '\'');
            match schema.find(column).map(|i| (i, schema.columns[i].ty)) {
                Some((i, Type::Label(_))) if !value.is_empty() => {
                    return Ok(Where::Label {
                        column: i,
                        name: schema.columns[i].name,
                        equal,
                        value: value.to_string(),
                    });
                }
                Some((_, Type::Label(_))) => {
                    return Err((
                        format!("\"{}\" has no value", crate::limits::quoted(text)),
                        Some(format!("write e.g. \"{column} {symbol} <value>\"")),
                    ));
                }
                _ if !equal => {
                    return Err((
                        format!(
                            "\"!=\" applies to label columns, and \"{}\" is not one",
                            crate::limits::quoted(column)
                        ),
                        Some(label_hint(schema)),
                    ));
                }
                _ => {}
            }
        }
        Constraint::parse(text, schema)
            .map(Where::Number)
            .map_err(|(message, hint)| {
                let hint = hint.map(|h| format!("{h}; or a label: \"hardware == b200\""));
                (message, hint)
            })
    }

    /// The column the filter reads.
    pub fn column(&self) -> usize {
        match self {
            Where::Number(c) => c.column,
            Where::Label { column, .. } => *column,
        }
    }

    /// The name of the column the filter reads.
    pub fn name(&self) -> &'static str {
        match self {
            Where::Number(c) => c.name,
            Where::Label { name, .. } => name,
        }
    }

    /// The filter as a polars predicate; a null label passes neither `==` nor `!=`.
    pub fn predicate(&self) -> Expr {
        match self {
            Where::Number(c) => predicate(c),
            Where::Label {
                name, equal, value, ..
            } => {
                let v = col(*name).cast(DataType::String);
                let x = lit(value.as_str());
                if *equal { v.eq(x) } else { v.neq(x) }
            }
        }
    }
}

fn label_hint(schema: &Schema) -> String {
    let labels: Vec<&str> = schema
        .columns
        .iter()
        .filter(|c| matches!(c.ty, Type::Label(_)))
        .map(|c| c.name)
        .collect();
    format!("label columns: {}", labels.join(", "))
}

/// Checks that every label value of `wheres` occurs in the run, naming the values it has.
pub fn check_labels(run: &Finished, wheres: &[Where]) -> Result<()> {
    for w in wheres {
        let Where::Label { name, value, .. } = w else {
            continue;
        };
        let df = scan(run)?
            .select([col(*name).unique().cast(DataType::String)])
            .collect()?;
        let strings = df.column(name)?.str()?;
        let mut values: Vec<String> = (0..strings.len())
            .filter_map(|i| strings.get(i).map(String::from))
            .collect();
        values.sort();
        if !values.iter().any(|v| v == value) {
            let mut hint = format!("{name} in this run: {}", values.join(", "));
            if let Some(s) = suggest::did_you_mean(value, values.iter().map(String::as_str)) {
                hint = format!("{s} {hint}");
            }
            return Err(UserError::new(format!(
                "no row of {} has {name} \"{}\"",
                run.root.display(),
                crate::limits::quoted(value),
            ))
            .with_hint(hint)
            .into());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::columns::Mode;

    #[test]
    fn labels_and_numbers_parse() {
        let inference = Schema::get(Mode::Inference);
        let hardware = inference.find("hardware").unwrap();
        assert_eq!(
            Where::parse("hardware == b200", inference).unwrap(),
            Where::Label {
                column: hardware,
                name: "hardware",
                equal: true,
                value: "b200".into()
            }
        );
        assert_eq!(
            Where::parse("hardware!='h100-sxm'", inference).unwrap(),
            Where::Label {
                column: hardware,
                name: "hardware",
                equal: false,
                value: "h100-sxm".into()
            }
        );
        assert_eq!(
            Where::parse("ttft_ms <= 1000", inference).unwrap(),
            Where::Number(Constraint::parse("ttft_ms <= 1000", inference).unwrap())
        );
        assert_eq!(
            Where::parse("batch == 64", inference).unwrap(),
            Where::Number(Constraint::parse("batch == 64", inference).unwrap())
        );
        let (message, hint) = Where::parse("batch != 64", inference).unwrap_err();
        assert!(message.contains("label columns"), "{message}");
        assert!(hint.unwrap().contains("hardware"));
        assert!(
            Where::parse("hardware ==", inference)
                .unwrap_err()
                .0
                .contains("no value")
        );
        let (message, hint) = Where::parse("hardwear == b200", inference).unwrap_err();
        assert!(message.contains("unknown inference column"), "{message}");
        assert!(hint.unwrap().contains("hardware == b200"));
    }
}
