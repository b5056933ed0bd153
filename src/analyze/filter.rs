//! `--where` for the analytics commands: a numeric constraint as the engine has them
//! ("ttft_ms <= 1000"), or a label that must (`==`) or must not (`!=`) equal a value
//! ("hardware == b200"), combined with `and`, `or` and parentheses (`and` binds before `or`,
//! as in SQL). Label values are checked against the run, so a typo is an error with a
//! suggestion rather than an empty table.

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
    /// Every filter holds (`a and b`).
    All(Vec<Where>),
    /// At least one filter holds (`a or b`).
    Any(Vec<Where>),
}

/// A piece of a `--where` text.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    Open,
    Close,
    And,
    Or,
    /// A comparison: the words between the other tokens.
    Test(String),
}

impl Token {
    fn text(&self) -> &str {
        match self {
            Token::Open => "(",
            Token::Close => ")",
            Token::And => "and",
            Token::Or => "or",
            Token::Test(t) => t,
        }
    }
}

/// Splits `text` into parentheses, `and`, `or` (whole words, any case) and the comparisons
/// between them; quoted text ('…' or "…") is kept whole.
fn tokens(text: &str) -> Vec<Token> {
    let mut words: Vec<Token> = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let flush = |word: &mut String, words: &mut Vec<Token>| {
        if word.is_empty() {
            return;
        }
        let token = match word.to_ascii_lowercase().as_str() {
            "and" => Token::And,
            "or" => Token::Or,
            _ => Token::Test(word.clone()),
        };
        word.clear();
        // Adjacent words are one comparison ("ttft_ms <= 1000" is three words).
        match (words.last_mut(), token) {
            (Some(Token::Test(t)), Token::Test(w)) => {
                t.push(' ');
                t.push_str(&w);
            }
            (_, token) => words.push(token),
        }
    };
    for c in text.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => {
                quote = None;
                word.push(c);
            }
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                word.push(c);
            }
            (None, '(' | ')') => {
                flush(&mut word, &mut words);
                words.push(if c == '(' { Token::Open } else { Token::Close });
            }
            (None, c) if c.is_whitespace() => flush(&mut word, &mut words),
            (None, c) => word.push(c),
        }
    }
    flush(&mut word, &mut words);
    words
}

/// Parentheses a `--where` may nest: each level is a frame of the recursive-descent parser
/// (and of the filter it builds), so an unbounded depth would overflow the stack.
const MAX_NESTING: usize = 64;

/// A recursive-descent parser over the tokens of one `--where`:
/// `any := all ("or" all)*`, `all := one ("and" one)*`, `one := "(" any ")" | comparison`.
struct Parser<'a> {
    tokens: Vec<Token>,
    at: usize,
    /// Parentheses open at `at`.
    depth: usize,
    schema: &'a Schema,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn any(&mut self) -> Result<Where, ParseError> {
        let mut parts = vec![self.all()?];
        while self.peek() == Some(&Token::Or) {
            self.at += 1;
            parts.push(self.all()?);
        }
        Ok(joined(parts, Where::Any))
    }

    fn all(&mut self) -> Result<Where, ParseError> {
        let mut parts = vec![self.one()?];
        while self.peek() == Some(&Token::And) {
            self.at += 1;
            parts.push(self.one()?);
        }
        Ok(joined(parts, Where::All))
    }

    fn one(&mut self) -> Result<Where, ParseError> {
        let hint = || {
            Some(
                "write e.g. \"(hardware == b200 or hardware == h200-sxm) and ttft_ms <= 1000\""
                    .to_string(),
            )
        };
        let before = self.at.checked_sub(1).map(|i| self.tokens[i].clone());
        match self.tokens.get(self.at).cloned() {
            Some(Token::Test(text)) => {
                self.at += 1;
                Where::comparison(&text, self.schema)
            }
            Some(Token::Open) => {
                self.at += 1;
                if self.peek() == Some(&Token::Close) {
                    return Err(("\"()\" holds no filter".into(), hint()));
                }
                if self.depth == MAX_NESTING {
                    return Err((
                        format!("parentheses nest deeper than {MAX_NESTING} levels"),
                        Some("remove parentheses that hold a single filter".into()),
                    ));
                }
                self.depth += 1;
                let inner = self.any()?;
                self.depth -= 1;
                if self.peek() != Some(&Token::Close) {
                    return Err(("a \"(\" is not closed".into(), hint()));
                }
                self.at += 1;
                Ok(inner)
            }
            next => {
                let message = match (before, next) {
                    (Some(b @ (Token::And | Token::Or)), _) => {
                        format!("nothing after \"{}\"", b.text())
                    }
                    (_, Some(n @ (Token::And | Token::Or))) => {
                        format!("nothing before \"{}\"", n.text())
                    }
                    (_, Some(Token::Close)) => "a \")\" closes no \"(\"".into(),
                    _ => "no filter".into(),
                };
                Err((message, hint()))
            }
        }
    }
}

/// One filter, or all (or any) of several.
fn joined(mut parts: Vec<Where>, many: fn(Vec<Where>) -> Where) -> Where {
    if parts.len() == 1 {
        parts.remove(0)
    } else {
        many(parts)
    }
}

impl Where {
    /// Parses comparisons ([`Where::comparison`]) combined with `and`, `or` and parentheses;
    /// `and` binds before `or`.
    pub fn parse(text: &str, schema: &Schema) -> Result<Where, ParseError> {
        let mut p = Parser {
            tokens: tokens(text),
            at: 0,
            depth: 0,
            schema,
        };
        let w = p.any()?;
        match p.peek() {
            None => Ok(w),
            Some(Token::Close) => Err((
                "a \")\" closes no \"(\"".into(),
                Some("check the parentheses".into()),
            )),
            Some(t) => Err((
                format!(
                    "\"{}\" follows a filter without \"and\" or \"or\"",
                    t.text()
                ),
                Some("join filters with \"and\" or \"or\"".into()),
            )),
        }
    }

    /// Parses `"<label column> == <value>"`, `"<label column> != <value>"`, or a numeric
    /// constraint (`Constraint::parse`).
    pub fn comparison(text: &str, schema: &Schema) -> Result<Where, ParseError> {
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

    /// The comparisons of the filter, left to right.
    pub fn comparisons(&self) -> Vec<&Where> {
        match self {
            Where::All(parts) | Where::Any(parts) => {
                parts.iter().flat_map(Where::comparisons).collect()
            }
            w => vec![w],
        }
    }

    /// The names of the columns the filter reads, left to right (a column once).
    pub fn names(&self) -> Vec<&'static str> {
        let mut names = Vec::new();
        for w in self.comparisons() {
            let name = match w {
                Where::Number(c) => c.name,
                Where::Label { name, .. } => name,
                Where::All(_) | Where::Any(_) => continue,
            };
            if !names.contains(&name) {
                names.push(name);
            }
        }
        names
    }

    /// The filter as a polars predicate; a null label passes neither `==` nor `!=`, a null
    /// number no comparison (so a row passes `a or b` when either holds and the other is null).
    pub fn predicate(&self) -> Expr {
        match self {
            Where::Number(c) => predicate(c).fill_null(lit(false)),
            Where::Label {
                name, equal, value, ..
            } => {
                let v = col(*name).cast(DataType::String);
                let x = lit(value.as_str());
                let test = if *equal { v.eq(x) } else { v.neq(x) };
                test.fill_null(lit(false))
            }
            Where::All(parts) => parts
                .iter()
                .map(Where::predicate)
                .reduce(Expr::and)
                .unwrap_or(lit(true)),
            Where::Any(parts) => parts
                .iter()
                .map(Where::predicate)
                .reduce(Expr::or)
                .unwrap_or(lit(false)),
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
    for w in wheres.iter().flat_map(Where::comparisons) {
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

    /// `and` binds before `or`; parentheses group; words are matched whole and in any case.
    #[test]
    fn and_binds_before_or() {
        let s = Schema::get(Mode::Inference);
        let one = |t: &str| Where::comparison(t, s).unwrap();
        let (a, b, c) = (
            one("hardware == b200"),
            one("hardware == h200-sxm"),
            one("ttft_ms <= 100"),
        );
        assert_eq!(
            Where::parse(
                "hardware == b200 or hardware == h200-sxm and ttft_ms <= 100",
                s
            )
            .unwrap(),
            Where::Any(vec![a.clone(), Where::All(vec![b.clone(), c.clone()])])
        );
        assert_eq!(
            Where::parse(
                "(hardware == b200 OR hardware == h200-sxm) and ttft_ms<=100",
                s
            )
            .unwrap(),
            Where::All(vec![Where::Any(vec![a.clone(), b.clone()]), c.clone()])
        );
        assert_eq!(
            Where::parse("((hardware == b200))", s).unwrap(),
            a,
            "parentheses alone change nothing"
        );
        // A quoted value keeps its words; "and" inside quotes is no operator.
        assert_eq!(
            Where::parse("model == 'x and y' or ttft_ms <= 100", s).unwrap(),
            Where::Any(vec![one("model == 'x and y'"), c.clone()])
        );
        assert_eq!(
            Where::parse(
                "hardware == b200 and (ttft_ms <= 100 or hardware == h200-sxm)",
                s
            )
            .unwrap()
            .names(),
            ["hardware", "ttft_ms"]
        );
    }

    #[test]
    fn unbalanced_and_empty_filters_are_named() {
        let s = Schema::get(Mode::Inference);
        for (text, message) in [
            ("(hardware == b200", "a \"(\" is not closed"),
            ("hardware == b200)", "a \")\" closes no \"(\""),
            (")", "a \")\" closes no \"(\""),
            ("hardware == b200 and", "nothing after \"and\""),
            ("or ttft_ms <= 100", "nothing before \"or\""),
            ("ttft_ms <= 100 or and batch == 8", "nothing after \"or\""),
            ("()", "\"()\" holds no filter"),
            ("", "no filter"),
            (
                "ttft_ms <= 100 (batch == 8)",
                "\"(\" follows a filter without \"and\" or \"or\"",
            ),
        ] {
            let (got, hint) = Where::parse(text, s).unwrap_err();
            assert_eq!(got, message, "{text}");
            assert!(hint.is_some(), "{text}");
        }
        // A comparison's own error comes through.
        let (got, _) = Where::parse("ttft_ms <= 100 or hardwear == b200", s).unwrap_err();
        assert!(got.contains("unknown inference column"), "{got}");
    }

    /// Nesting is bounded before it can overflow the stack: 64 levels parse, 65 are an error,
    /// and so are 20,000 unclosed ones (which overflowed the stack before the bound).
    #[test]
    fn nesting_is_bounded() {
        let s = Schema::get(Mode::Inference);
        let nested = |n: usize| format!("{}ttft_ms <= 100{}", "(".repeat(n), ")".repeat(n));
        let deepest = Where::parse(&nested(MAX_NESTING), s).unwrap();
        assert_eq!(deepest, Where::parse("ttft_ms <= 100", s).unwrap());
        for text in [nested(MAX_NESTING + 1), "(".repeat(20_000)] {
            let (got, hint) = Where::parse(&text, s).unwrap_err();
            assert_eq!(got, "parentheses nest deeper than 64 levels");
            assert!(hint.is_some());
        }
    }
}
