//! Objectives ("max tokens_per_s_per_gpu"), constraints ("ttft_ms <= 2000") and the exact Pareto
//! frontier over feasible rows that meet the constraints. The frontier is computed per chunk and
//! merged, so it works on a stream (and later across shards). Ties are kept; a row with a null or
//! NaN objective never enters. Rows of different groups ([`Record::group`]: the workloads of an
//! inference sweep) are compared only within their group: one frontier per group.

use std::cmp::Ordering;
use std::fmt;

use crate::columns::{Mode, Record, Schema, Type};
use crate::limits::quoted;
use crate::suggest;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Objective {
    /// Index into the run's [`Schema`] columns.
    pub column: usize,
    pub name: &'static str,
    pub maximize: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Le,
    Lt,
    Ge,
    Gt,
    Eq,
}

impl Op {
    fn as_str(self) -> &'static str {
        match self {
            Op::Le => "<=",
            Op::Lt => "<",
            Op::Ge => ">=",
            Op::Gt => ">",
            Op::Eq => "==",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Constraint {
    /// Index into the run's [`Schema`] columns.
    pub column: usize,
    pub name: &'static str,
    pub op: Op,
    pub value: f64,
}

/// A parse failure: the message, and a hint when there is one.
pub type ParseError = (String, Option<String>);

fn numeric_column(name: &str, schema: &Schema) -> Result<(usize, &'static str), ParseError> {
    match schema.find(name) {
        Some(i) if schema.columns[i].is_numeric() => Ok((i, schema.columns[i].name)),
        Some(_) => Err((
            format!("column \"{}\" is not numeric", quoted(name)),
            Some(numeric_hint(schema)),
        )),
        None => {
            // A column of the other mode's rows (ttft_ms asked of a training run) is no typo.
            let elsewhere = Mode::ALL
                .into_iter()
                .find(|&m| m != schema.mode && Schema::get(m).find(name).is_some())
                .map(|m| format!("\"{name}\" is a column of {} runs; ", m.as_str()));
            let typo = suggest::did_you_mean(name, schema.numeric_names()).map(|s| s + " ");
            let hint = format!(
                "{}{}{}",
                elsewhere.unwrap_or_default(),
                typo.unwrap_or_default(),
                numeric_hint(schema)
            );
            Err((
                format!(
                    "unknown {} column \"{}\"",
                    schema.mode.as_str(),
                    quoted(name)
                ),
                Some(hint),
            ))
        }
    }
}

fn numeric_hint(schema: &Schema) -> String {
    let names: Vec<_> = schema.numeric_names().collect();
    format!("numeric columns: {}", names.join(", "))
}

impl Objective {
    /// Parses `"max <column>"` or `"min <column>"`, a column of `schema`.
    pub fn parse(text: &str, schema: &Schema) -> Result<Objective, ParseError> {
        let mut words = text.split_whitespace();
        let (Some(direction), Some(name), None) = (words.next(), words.next(), words.next()) else {
            return Err((
                format!("\"{}\" is not an objective", quoted(text)),
                Some(
                    "write \"max <column>\" or \"min <column>\", e.g. \"max tokens_per_s_per_gpu\""
                        .into(),
                ),
            ));
        };
        let maximize = match direction {
            "max" => true,
            "min" => false,
            other => {
                return Err((
                    format!("\"{}\" is not a direction", quoted(other)),
                    Some("objectives start with \"max\" or \"min\"".into()),
                ));
            }
        };
        let (column, name) = numeric_column(name, schema)?;
        if schema.columns[column].ty == Type::Id {
            return Err((
                format!("{name} is an index into the grid, not an objective"),
                Some("rank by a metric, e.g. \"max tokens_per_s_per_gpu\"".into()),
            ));
        }
        Ok(Objective {
            column,
            name,
            maximize,
        })
    }

    /// Parses a list of objectives, as a sweep's `objectives` or repeated `--objective` flags
    /// give them: 1 to [`MAX_OBJECTIVES`], each as [`Objective::parse`] reads it, no column
    /// twice. An error says which objective is wrong (`None`: the list as a whole).
    pub fn parse_all<S: AsRef<str>>(
        texts: &[S],
        schema: &Schema,
    ) -> Result<Vec<Objective>, (Option<usize>, ParseError)> {
        if texts.is_empty() {
            return Err((
                None,
                (
                    "no objectives".into(),
                    Some("name at least one, e.g. \"max tokens_per_s_per_gpu\"".into()),
                ),
            ));
        }
        if texts.len() > MAX_OBJECTIVES {
            return Err((
                None,
                (
                    format!("{} objectives, more than {MAX_OBJECTIVES}", texts.len()),
                    Some(format!(
                        "a frontier supports 1 to {MAX_OBJECTIVES} objectives"
                    )),
                ),
            ));
        }
        let mut out: Vec<Objective> = Vec::with_capacity(texts.len());
        for (i, text) in texts.iter().enumerate() {
            let text = text.as_ref();
            let o = Objective::parse(text, schema).map_err(|e| (Some(i), e))?;
            if let Some((j, first)) = out.iter().enumerate().find(|(_, p)| p.column == o.column) {
                let message = if first.maximize == o.maximize {
                    format!("\"{}\" repeats objective {j} ({first})", quoted(text))
                } else {
                    format!(
                        "\"{}\" asks the opposite of objective {j} ({first}): a column cannot be both maximized and minimized",
                        quoted(text)
                    )
                };
                return Err((Some(i), (message, Some("name each column once".into()))));
            }
            out.push(o);
        }
        Ok(out)
    }

    /// The objective's value oriented so that larger is better; `None` if null or not finite.
    fn key<R: Record>(&self, row: &R) -> Option<f64> {
        let v = R::columns()[self.column].number(row)?;
        if !v.is_finite() {
            return None;
        }
        Some(if self.maximize { v } else { -v })
    }
}

impl fmt::Display for Objective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}",
            if self.maximize { "max" } else { "min" },
            self.name
        )
    }
}

impl Constraint {
    /// Parses `"<column> <op> <number>"` with op one of `<=`, `<`, `>=`, `>`, `==`, a column of
    /// `schema`.
    pub fn parse(text: &str, schema: &Schema) -> Result<Constraint, ParseError> {
        for (wrong, right) in [("=<", "<="), ("=>", ">=")] {
            if text.contains(wrong) {
                return Err((
                    format!("\"{}\": \"{wrong}\" is not an operator", quoted(text)),
                    Some(format!("write \"{right}\"")),
                ));
            }
        }
        let hint = || {
            Some("write \"<column> <op> <number>\", e.g. \"ttft_ms <= 2000\"; op is <=, <, >=, > or ==".into())
        };
        let ops = [
            ("<=", Op::Le),
            (">=", Op::Ge),
            ("==", Op::Eq),
            ("<", Op::Lt),
            (">", Op::Gt),
        ];
        let Some((at, symbol, op)) = ops
            .iter()
            .filter_map(|&(s, op)| text.find(s).map(|at| (at, s, op)))
            .min_by_key(|&(at, s, _)| (at, std::cmp::Reverse(s.len())))
        else {
            return Err((format!("\"{}\" is not a constraint", quoted(text)), hint()));
        };
        let name = text[..at].trim();
        let number = text[at + symbol.len()..].trim();
        if name.is_empty() || number.is_empty() {
            return Err((format!("\"{}\" is not a constraint", quoted(text)), hint()));
        }
        let (column, name) = numeric_column(name, schema)?;
        let value: f64 = match number.parse() {
            Ok(v) if f64::is_finite(v) => v,
            _ => {
                return Err((
                    format!("\"{}\" is not a finite number", quoted(number)),
                    hint(),
                ));
            }
        };
        Ok(Constraint {
            column,
            name,
            op,
            value,
        })
    }

    pub fn holds<R: Record>(&self, row: &R) -> bool {
        let Some(v) = R::columns()[self.column].number(row) else {
            return false;
        };
        match self.op {
            Op::Le => v <= self.value,
            Op::Lt => v < self.value,
            Op::Ge => v >= self.value,
            Op::Gt => v > self.value,
            Op::Eq => v == self.value,
        }
    }
}

impl fmt::Display for Constraint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.name, self.op.as_str(), self.value)
    }
}

/// Objectives as written in a sweep, comma-separated.
pub fn describe_objectives(objectives: &[Objective]) -> String {
    objectives
        .iter()
        .map(|o| o.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Constraints as written in a sweep, comma-separated, or "none".
pub fn describe_constraints(constraints: &[Constraint]) -> String {
    if constraints.is_empty() {
        return "none".to_string();
    }
    constraints
        .iter()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The non-dominated rows seen so far.
#[derive(Debug, Clone)]
pub struct Frontier<R> {
    objectives: Vec<Objective>,
    constraints: Vec<Constraint>,
    rows: Vec<R>,
    /// Candidates of the current merge, reused so that streaming allocates nothing per chunk.
    scratch: Vec<Keyed>,
}

/// A candidate: its oriented objective keys (larger is better) and where the row is: below
/// `incoming.len()` in the incoming slice, else in the current frontier.
#[derive(Debug, Clone, Copy)]
struct Keyed {
    /// The row's group: candidates of different groups never dominate one another.
    group: u32,
    keys: [f64; MAX_OBJECTIVES],
    index: usize,
}

/// Frontier candidates of one block of rows: their keys and config_ids (see
/// [`Frontier::offer`]). Reused from block to block.
#[derive(Debug, Default)]
pub struct Candidates(Vec<Keyed>);

/// Objectives a frontier supports at once.
pub const MAX_OBJECTIVES: usize = 8;

impl<R: Record> Frontier<R> {
    pub fn new(objectives: Vec<Objective>, constraints: Vec<Constraint>) -> Frontier<R> {
        assert!(!objectives.is_empty() && objectives.len() <= MAX_OBJECTIVES);
        Frontier {
            objectives,
            constraints,
            rows: Vec::new(),
            scratch: Vec::new(),
        }
    }

    /// The oriented objective keys of a row that may enter: feasible, the demand and the SLOs
    /// met where the sweep sets them, every constraint holds, every objective is a number.
    fn keys(&self, row: &R) -> Option<[f64; MAX_OBJECTIVES]> {
        if !row.admitted() || !self.constraints.iter().all(|c| c.holds(row)) {
            return None;
        }
        let mut keys = [0.0; MAX_OBJECTIVES];
        for (k, o) in keys.iter_mut().zip(&self.objectives) {
            *k = o.key(row)?;
        }
        Some(keys)
    }

    /// Adds a batch of rows, keeping only the non-dominated ones of frontier and batch together.
    pub fn extend(&mut self, incoming: &[R]) {
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        scratch.extend(incoming.iter().enumerate().filter_map(|(index, r)| {
            Some(Keyed {
                group: r.group(),
                keys: self.keys(r)?,
                index,
            })
        }));
        if !scratch.is_empty() {
            let n = incoming.len();
            scratch.extend(self.rows.iter().enumerate().filter_map(|(j, r)| {
                Some(Keyed {
                    group: r.group(),
                    keys: self.keys(r)?,
                    index: n + j,
                })
            }));
            let kept = non_dominated(&mut scratch, self.objectives.len());
            let mut rows: Vec<R> = scratch[..kept]
                .iter()
                .map(|k| {
                    if k.index < n {
                        incoming[k.index]
                    } else {
                        self.rows[k.index - n]
                    }
                })
                .collect();
            rows.sort_by(|a, b| self.order(a, b));
            self.rows = rows;
        }
        self.scratch = scratch;
    }

    /// Records `row` in `candidates` (its keys and config_id) if it may enter.
    #[inline]
    pub fn offer(&self, row: &R, candidates: &mut Candidates) {
        // Most rows of a large sweep cannot run: turn them away before the full check.
        if !row.feasible() {
            return;
        }
        if let Some(keys) = self.keys(row) {
            candidates.0.push(Keyed {
                group: row.group(),
                keys,
                index: row.config_id() as usize,
            });
        }
    }

    /// The config_ids of the non-dominated candidates, ascending; empties `candidates`. Lets
    /// every evaluation task shrink its block to its own frontier, keeping only keys and ids
    /// (not whole rows), before the sequential merge.
    pub fn survivors(&self, candidates: &mut Candidates) -> Vec<u64> {
        survivors(candidates, self.objectives.len())
    }

    /// Merges another frontier over the same objectives (shards, chunks).
    pub fn merge(&mut self, other: &Frontier<R>) {
        self.extend(&other.rows);
    }

    /// Rows by group, then by the first objective (best first), then the next ones, then
    /// config_id.
    pub fn rows(&self) -> &[R] {
        &self.rows
    }

    pub fn objectives(&self) -> &[Objective] {
        &self.objectives
    }

    /// The tie group of each row ([`tie_groups`]), in the order of [`Frontier::rows`].
    pub fn tie_groups(&self) -> Vec<u32> {
        let keys: Vec<(u32, Vec<f64>)> = self
            .rows
            .iter()
            .map(|r| {
                let values = self
                    .objectives
                    .iter()
                    .map(|o| o.key(r).unwrap_or(f64::NAN))
                    .collect();
                (r.group(), values)
            })
            .collect();
        tie_groups(keys.iter().map(|(g, v)| (*g, v.as_slice())))
    }

    pub fn constraints(&self) -> &[Constraint] {
        &self.constraints
    }

    fn order(&self, a: &R, b: &R) -> Ordering {
        if a.group() != b.group() {
            return a.group().cmp(&b.group());
        }
        for o in &self.objectives {
            let (ka, kb) = (
                o.key(a).unwrap_or(f64::NEG_INFINITY),
                o.key(b).unwrap_or(f64::NEG_INFINITY),
            );
            match kb.total_cmp(&ka) {
                Ordering::Equal => continue,
                other => return other,
            }
        }
        a.config_id().cmp(&b.config_id())
    }
}

/// The column of `pareto.parquet` (and of `pareto --format csv|json`) that numbers a frontier's
/// tie groups: rows of one workload whose every objective has the same value, which no
/// objective tells apart (e.g. the same cluster at 1 to 10 racks when no objective counts
/// racks). Groups are numbered from 0 in frontier order; `pareto.md` and `pareto` print each
/// group as one row.
pub const TIE_GROUP: (&str, &str) = (
    "tie_group",
    "the row's tie group (only in pareto.parquet): rows of one workload equal on every objective share it; numbered from 0 in frontier order",
);

/// The tie group of each of `points` (`(group, objective values)`, in frontier order): points
/// of one group with equal values share a number; numbers count up from 0 in order of first
/// appearance.
pub fn tie_groups<'a>(points: impl IntoIterator<Item = (u32, &'a [f64])>) -> Vec<u32> {
    let mut seen: std::collections::HashMap<(u32, Vec<u64>), u32> =
        std::collections::HashMap::new();
    points
        .into_iter()
        .map(|(group, values)| {
            // +0.0 makes -0.0 and 0.0 one value.
            let bits = values.iter().map(|v| (v + 0.0).to_bits()).collect();
            let next = u32::try_from(seen.len()).unwrap_or(u32::MAX);
            *seen.entry((group, bits)).or_insert(next)
        })
        .collect()
}

/// The ids of the non-dominated points among `(id, values)` under `objectives`, ascending;
/// `values` are raw column values in objective order. A point with a value that is not a finite
/// number never enters; ties are kept, as everywhere else.
pub fn non_dominated_ids<V: AsRef<[f64]>>(
    objectives: &[Objective],
    points: impl IntoIterator<Item = (u64, V)>,
) -> Vec<u64> {
    non_dominated_ids_by_group(objectives, points.into_iter().map(|(id, v)| (id, 0, v)))
}

/// [`non_dominated_ids`] of points `(id, group, values)`, one frontier per group (an inference
/// run's `workload_id`).
pub fn non_dominated_ids_by_group<V: AsRef<[f64]>>(
    objectives: &[Objective],
    points: impl IntoIterator<Item = (u64, u32, V)>,
) -> Vec<u64> {
    let mut candidates = Candidates::default();
    'points: for (id, group, values) in points {
        let mut keys = [0.0; MAX_OBJECTIVES];
        for ((k, o), &v) in keys.iter_mut().zip(objectives).zip(values.as_ref()) {
            if !v.is_finite() {
                continue 'points;
            }
            *k = if o.maximize { v } else { -v };
        }
        candidates.0.push(Keyed {
            group,
            keys,
            index: id as usize,
        });
    }
    survivors(&mut candidates, objectives.len())
}

/// The config_ids of the non-dominated candidates, ascending; empties `candidates`.
fn survivors(candidates: &mut Candidates, objectives: usize) -> Vec<u64> {
    let c = &mut candidates.0;
    let kept = if c.is_empty() {
        0
    } else {
        non_dominated(c, objectives)
    };
    let mut ids: Vec<u64> = c[..kept].iter().map(|k| k.index as u64).collect();
    ids.sort_unstable();
    c.clear();
    ids
}

/// `a` dominates `b`: at least as good in every key and better in one.
fn dominates(a: &[f64], b: &[f64]) -> bool {
    let mut better = false;
    for (x, y) in a.iter().zip(b) {
        if x < y {
            return false;
        }
        better |= x > y;
    }
    better
}

/// Moves the non-dominated candidates of each group to the front of `c` (group by group) and
/// returns how many there are. In place and allocation-free.
fn non_dominated(c: &mut [Keyed], n: usize) -> usize {
    if c.iter().all(|k| k.group == c[0].group) {
        return non_dominated_in_group(c, n);
    }
    c.sort_unstable_by_key(|k| k.group);
    let (mut kept, mut start) = (0, 0);
    while start < c.len() {
        let group = c[start].group;
        let end = start + c[start..].iter().take_while(|k| k.group == group).count();
        let k = non_dominated_in_group(&mut c[start..end], n);
        // kept <= start: moving the group's survivors forward overwrites only rows already
        // dropped or moved.
        for i in 0..k {
            c[kept + i] = c[start + i];
        }
        kept += k;
        start = end;
    }
    kept
}

/// [`non_dominated`] within one group. In place and allocation-free (unstable sort; ties
/// broken by position, so deterministic).
fn non_dominated_in_group(c: &mut [Keyed], n: usize) -> usize {
    // Best first by every key in turn: a row can only be dominated by rows before it.
    c.sort_unstable_by(|a, b| {
        for i in 0..n {
            match b.keys[i].total_cmp(&a.keys[i]) {
                Ordering::Equal => continue,
                other => return other,
            }
        }
        a.index.cmp(&b.index)
    });
    let mut kept = 0;
    match n {
        1 => {
            let best = c[0].keys[0];
            while kept < c.len() && c[kept].keys[0] == best {
                kept += 1;
            }
        }
        2 => {
            // Within a run of equal first keys only the best second key survives; it survives
            // overall if it beats every second key of a strictly better first key seen before.
            // Equal points (both keys equal) are all kept.
            let mut best_second = f64::NEG_INFINITY;
            let mut i = 0;
            while i < c.len() {
                let (first, group_best) = (c[i].keys[0], c[i].keys[1]);
                let mut j = i;
                while j < c.len() && c[j].keys[0] == first {
                    if group_best > best_second && c[j].keys[1] == group_best {
                        c[kept] = c[j];
                        kept += 1;
                    }
                    j += 1;
                }
                best_second = best_second.max(group_best);
                i = j;
            }
        }
        _ => {
            for i in 0..c.len() {
                if !c[..kept]
                    .iter()
                    .any(|f| dominates(&f.keys[..n], &c[i].keys[..n]))
                {
                    c[kept] = c[i];
                    kept += 1;
                }
            }
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::columns::{Mode, Row};
    use crate::grid::Point;
    use crate::perf::Estimate;
    use proptest::prelude::*;

    fn inference() -> &'static Schema {
        Schema::get(Mode::Inference)
    }

    fn row(id: u64, gpu: f64, user: f64) -> Row {
        let mut estimate = Estimate {
            reason: None,
            ..test_estimate()
        };
        estimate.tokens_per_s_per_gpu = gpu;
        estimate.tokens_per_s_per_user = user;
        estimate.ttft_ms = id as f64;
        Row {
            config_id: id,
            point: Point::default(),
            estimate,
            ..Row::default()
        }
    }

    fn test_estimate() -> Estimate {
        Estimate {
            reason: None,
            limit: None,
            gpus: 8,
            gpus_per_instance: 8,
            instances: 1,
            prefill_instances: 0,
            attention_dp: 1,
            hbm_used_gb_per_gpu: 1.0,
            hbm_weights_gb_per_gpu: 1.0,
            hbm_kv_gb_per_gpu: 0.0,
            ttft_ms: 1.0,
            tpot_ms: 1.0,
            tokens_per_s_per_user: 1.0,
            tokens_per_s_per_instance: 1.0,
            tokens_per_s_per_gpu: 1.0,
            output_tokens_per_s: 1.0,
            compute_bound_tokens_per_s_per_gpu: 1.0,
            hbm_bound_tokens_per_s_per_gpu: 1.0,
            comm_bound_tokens_per_s_per_gpu: f64::NAN,
            ..Estimate::EMPTY
        }
    }

    fn objectives(spec: &[&str]) -> Vec<Objective> {
        spec.iter()
            .map(|s| Objective::parse(s, inference()).unwrap())
            .collect()
    }

    #[test]
    fn parses_objectives_and_constraints() {
        let o = Objective::parse("max tokens_per_s_per_gpu", inference()).unwrap();
        assert!(o.maximize);
        assert_eq!(o.to_string(), "max tokens_per_s_per_gpu");
        let c = Constraint::parse("ttft_ms<=2000", inference()).unwrap();
        assert_eq!((c.op, c.value), (Op::Le, 2000.0));
        assert_eq!(
            Constraint::parse("tokens_per_s_per_user >= 20", inference())
                .unwrap()
                .op,
            Op::Ge
        );
        assert_eq!(Constraint::parse("tp < 8", inference()).unwrap().op, Op::Lt);
        let (msg, hint) = Objective::parse("max tokens_per_gpu", inference()).unwrap_err();
        assert_eq!(msg, "unknown inference column \"tokens_per_gpu\"");
        assert!(
            hint.unwrap()
                .starts_with("did you mean \"tokens_per_s_per_gpu\"?")
        );
        assert!(Objective::parse("maximize ttft_ms", inference()).is_err());
        assert!(
            Objective::parse("max hardware", inference())
                .unwrap_err()
                .0
                .contains("not numeric")
        );
        assert!(Constraint::parse("ttft_ms <= fast", inference()).is_err());
        assert!(Constraint::parse("ttft_ms <= inf", inference()).is_err());
        assert!(Constraint::parse("ttft_ms 2000", inference()).is_err());
        assert_eq!(
            Constraint::parse("ttft_ms =< 2000", inference())
                .unwrap_err()
                .1
                .unwrap(),
            "write \"<=\""
        );
    }

    /// A column of the other mode is named as such, before any typo suggestion.
    #[test]
    fn a_column_of_the_other_mode_says_so() {
        let training = Schema::get(Mode::Training);
        let (msg, hint) = Objective::parse("min usd_per_mtok", training).unwrap_err();
        assert_eq!(msg, "unknown training column \"usd_per_mtok\"");
        assert!(hint.unwrap().starts_with(
            "\"usd_per_mtok\" is a column of inference runs; did you mean \"usd_per_run\"? \
             numeric columns: config_id,"
        ));
        let (msg, hint) = Constraint::parse("mfu_pct >= 40", inference()).unwrap_err();
        assert_eq!(msg, "unknown inference column \"mfu_pct\"");
        assert!(
            hint.unwrap()
                .starts_with("\"mfu_pct\" is a column of training runs; numeric columns:")
        );
        // Neither mode's column: a typo suggestion alone.
        let (_, hint) = Objective::parse("max mfu_pc", training).unwrap_err();
        assert!(hint.unwrap().starts_with("did you mean \"mfu_pct\""));
    }

    #[test]
    fn two_objective_frontier_keeps_ties_and_drops_dominated() {
        let mut f = Frontier::<Row>::new(
            objectives(&["max tokens_per_s_per_gpu", "max tokens_per_s_per_user"]),
            vec![],
        );
        let rows = [
            row(0, 10.0, 1.0),
            row(1, 5.0, 5.0),
            row(2, 5.0, 5.0), // tie with 1: kept
            row(3, 5.0, 4.0), // dominated by 1
            row(4, 1.0, 10.0),
            row(5, 1.0, 5.0),  // dominated by 1
            row(6, 10.0, 0.5), // dominated by 0
        ];
        f.extend(&rows);
        let ids: Vec<u64> = f.rows().iter().map(|r| r.config_id).collect();
        assert_eq!(ids, [0, 1, 2, 4]);
    }

    #[test]
    fn infeasible_nan_and_constrained_rows_never_enter() {
        let c = vec![Constraint::parse("ttft_ms <= 2", inference()).unwrap()];
        let mut f = Frontier::<Row>::new(objectives(&["max tokens_per_s_per_gpu"]), c);
        let mut infeasible = row(0, 100.0, 1.0);
        infeasible.estimate.reason = Some(crate::perf::Reason::DoesNotFit);
        let nan = row(1, f64::NAN, 1.0);
        let slow = row(3, 50.0, 1.0); // ttft 3 ms breaks the constraint
        let ok = row(2, 10.0, 1.0);
        f.extend(&[infeasible, nan, slow, ok]);
        assert_eq!(f.rows().len(), 1);
        assert_eq!(f.rows()[0].config_id, 2);
    }

    proptest! {
        /// Streaming in chunks gives the brute-force frontier: nothing on it is dominated, and
        /// every admitted row off it is dominated by a row on it.
        #[test]
        fn frontier_matches_brute_force(
            points in proptest::collection::vec((0u8..6, 0u8..6, 0u8..6, 0u32..3), 1..60),
            chunk in 1usize..10,
            three in any::<bool>(),
        ) {
            let spec: &[&str] = if three {
                &["max tokens_per_s_per_gpu", "max tokens_per_s_per_user", "min ttft_ms"]
            } else {
                &["max tokens_per_s_per_gpu", "min tokens_per_s_per_user"]
            };
            // Rows of three workloads: each its own frontier.
            let rows: Vec<Row> = points.iter().enumerate().map(|(i, &(a, b, c, w))| {
                let mut r = row(i as u64, f64::from(a), f64::from(b));
                r.estimate.ttft_ms = f64::from(c);
                r.workload.id = w;
                r
            }).collect();
            let objs = objectives(spec);
            let mut f = Frontier::<Row>::new(objs.clone(), vec![]);
            // Half the chunks through a whole frontier, half through the engine's per-block
            // candidates (keys and ids only).
            let mut candidates = Candidates::default();
            for (k, c) in rows.chunks(chunk).enumerate() {
                let mut part = Frontier::<Row>::new(objs.clone(), vec![]);
                if k % 2 == 0 {
                    part.extend(c);
                } else {
                    c.iter().for_each(|r| part.offer(r, &mut candidates));
                    let ids = part.survivors(&mut candidates);
                    prop_assert!(ids.windows(2).all(|w| w[0] < w[1]), "ascending ids");
                    let survivors: Vec<Row> = ids.iter().map(|&id| rows[id as usize]).collect();
                    part.extend(&survivors);
                }
                f.merge(&part);
            }
            let keys = |r: &Row| -> Vec<f64> { objs.iter().map(|o| o.key(r).unwrap()).collect() };
            let on: std::collections::HashSet<u64> = f.rows().iter().map(|r| r.config_id).collect();
            for r in &rows {
                let dominated = rows
                    .iter()
                    .any(|q| q.workload.id == r.workload.id && dominates(&keys(q), &keys(r)));
                prop_assert_eq!(on.contains(&r.config_id), !dominated, "row {}", r.config_id);
            }
            let groups: Vec<u32> = f.rows().iter().map(|r| r.workload.id).collect();
            prop_assert!(groups.windows(2).all(|w| w[0] <= w[1]), "rows by workload");
        }
    }

    /// Points of one group with equal values share a tie group, numbered in order of first
    /// appearance; the same values in another group are another tie group; -0.0 is 0.0.
    #[test]
    fn tie_groups_number_equal_points() {
        let p: [(u32, [f64; 2]); 6] = [
            (0, [2.0, 1.0]),
            (0, [2.0, 1.0]),
            (0, [1.0, 3.0]),
            (1, [2.0, 1.0]),
            (0, [2.0, 1.0]),
            (1, [-0.0, 5.0]),
        ];
        let mut points: Vec<(u32, &[f64])> = p.iter().map(|(g, v)| (*g, &v[..])).collect();
        assert_eq!(tie_groups(points.clone()), [0, 0, 1, 2, 0, 3]);
        let zero = [0.0, 5.0];
        points.push((1, &zero));
        assert_eq!(tie_groups(points)[6], 3);
    }
}
