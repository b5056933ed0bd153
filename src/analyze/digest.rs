//! One pass over a finished run for `racksweep report`: the best rows per group under several
//! objectives, the per-hardware frontiers of a few objective pairs, a sample of the admitted
//! points for context, and why rows were not admitted. Slices of the run are reduced as they
//! are read (as `top` and `pareto` do), so memory does not grow with the run.

use std::collections::{BTreeMap, BTreeSet};

use crate::output::run_dir::Finished;
use anyhow::Result;
use polars::prelude::*;

use super::{admitted, for_each_slice, predicate, scan, select, table};
use crate::columns::{Schema, Type};
use crate::pareto::{Constraint, Objective, non_dominated_ids};

/// The best `n` admitted rows by `objective`, per combination of values of the `groups`
/// columns (none: overall).
#[derive(Debug, Clone)]
pub struct Ranking {
    pub objective: Objective,
    /// Indices into the run's [`Schema`] columns of the columns whose values split the rows.
    pub groups: Vec<usize>,
    pub n: usize,
}

/// A value of a group column: numbers sort numerically, labels alphabetically (or in their
/// vocabulary's order, when the label has a fixed one), a null label last. Rows with a null
/// number are left out of a numeric column's groups.
#[derive(Debug, Clone, PartialEq, PartialOrd)]
pub enum GroupValue {
    Number(f64),
    Label(String),
    /// A null label (an owned row's pricing).
    Null,
}

impl GroupValue {
    pub fn text(&self) -> String {
        match self {
            GroupValue::Number(v) => crate::format::number(*v),
            GroupValue::Label(s) => s.clone(),
            GroupValue::Null => "-".to_string(),
        }
    }
}

/// A ranking's answer: per combination of group values (in order), the config_ids best first
/// with their values.
pub type Ranked = Vec<(Vec<GroupValue>, Vec<(u64, f64)>)>;

/// Two objectives traded against each other, per hardware.
#[derive(Debug, Clone, Copy)]
pub struct Trade {
    pub x: Objective,
    pub y: Objective,
}

/// A point of a trade: its x and y values, the lowest config_id that has them, and how many
/// configurations have them (a frontier often holds many that differ only where the two
/// objectives do not look, e.g. in the number of racks).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TradePoint {
    pub id: u64,
    pub x: f64,
    pub y: f64,
    pub ties: u64,
}

/// A trade's answer: each hardware's frontier (ascending x), the frontier of all hardware
/// together, and a deterministic sample of the admitted points, for context.
#[derive(Debug, Clone, Default)]
pub struct Traded {
    pub per_hardware: Vec<(String, Vec<TradePoint>)>,
    pub global: Vec<TradePoint>,
    pub sample: Vec<(String, f64, f64)>,
}

/// The best `y` per value of column `x`, per hardware, per combination of the `groups`
/// columns: how the answer moves with the demand (x) for each workload (groups) and hardware.
#[derive(Debug, Clone)]
pub struct Curve {
    /// Index into the run's [`Schema`] columns of the numeric column along the curve.
    pub x: usize,
    pub y: Objective,
    /// Columns whose values split the curves (a workload's other axes).
    pub groups: Vec<usize>,
}

/// A curve's answer: per combination of the group columns (their values, in order), each
/// hardware's best point per x (ascending x; `ties` counts the rows at the best y).
pub type Curved = Vec<(Vec<String>, Vec<(String, Vec<TradePoint>)>)>;

/// Rows counted by why they were or were not admitted.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Admission {
    /// Rows in the part files (only the feasible ones in a `--feasible-only` run).
    pub rows: u64,
    pub feasible: u64,
    /// Feasible rows that meet the demand, the SLOs and every constraint.
    pub admitted: u64,
    /// Feasible rows turned away, per cause: "demand not met" and "SLOs missed" (inference
    /// runs only), then each constraint as written; a row can fail several.
    pub turned_away: Vec<(String, u64)>,
}

/// Everything `report` asks of a run, and the shown columns of every row its answers name.
pub struct Digest {
    pub admission: Admission,
    pub ranked: Vec<Ranked>,
    pub traded: Vec<Traded>,
    pub curved: Vec<Curved>,
    /// Column names of `rows`.
    pub header: Vec<String>,
    /// config_id -> formatted cells, for every row named above and every `extra_ids`.
    pub rows: BTreeMap<u64, Vec<String>>,
}

/// Rows read per slice: about one row group. The digest reads more columns than `top` or
/// `pareto` and keeps little per slice, so small slices cost no time and bound memory
/// (measured on a 10 M-row run, whole `racksweep report`: 3.2 s and 206 MiB peak, against 3.9 s
/// and 453 MB with slices of 2^20 rows).
const DIGEST_SLICE_ROWS: u32 = 1 << 17;

/// Admitted points kept per trade as a sample, at most (they draw the cloud behind a chart).
const SAMPLE_POINTS: u64 = 1500;

/// What `report` asks of a run: `rankings` and `trades` over the rows admitted under
/// `constraints`, and the `shown` columns (which must include config_id) of every row the
/// answers name and of `extra_ids`.
pub struct Ask<'a> {
    /// The run's columns.
    pub schema: &'static Schema,
    pub constraints: &'a [Constraint],
    pub rankings: &'a [Ranking],
    pub trades: &'a [Trade],
    pub curves: &'a [Curve],
    pub shown: &'a [&'static str],
    pub extra_ids: &'a [u64],
}

/// Answers `ask` in one pass over the run.
pub fn digest(run: &Finished, ask: &Ask) -> Result<Digest> {
    digest_sliced(run, ask, DIGEST_SLICE_ROWS)
}

/// The slice's column `c`: numbers as f64, labels as text.
enum Values {
    Number(Float64Chunked),
    Label(StringChunked),
}

impl Values {
    fn read(df: &DataFrame, schema: &Schema, column: usize) -> Result<Values> {
        let info = &schema.columns[column];
        let c = df.column(info.name)?;
        Ok(match info.ty {
            Type::Label(_) => Values::Label(c.str()?.clone()),
            _ => Values::Number(c.f64()?.clone()),
        })
    }

    fn number(&self, i: usize) -> Option<f64> {
        match self {
            Values::Number(v) => v.get(i).filter(|x| x.is_finite()),
            Values::Label(_) => None,
        }
    }

    fn group(&self, i: usize) -> Option<GroupValue> {
        match self {
            Values::Number(v) => v.get(i).filter(|x| x.is_finite()).map(GroupValue::Number),
            Values::Label(v) => Some(
                v.get(i)
                    .map_or(GroupValue::Null, |s| GroupValue::Label(s.to_string())),
            ),
        }
    }
}

/// Frontier candidates of one trade per hardware: config_id and the (x, y) values.
type Fronts = BTreeMap<String, Vec<(u64, [f64; 2])>>;

/// Running best-`n` lists of one ranking, per group value; keys are oriented (larger is better).
type Best = Vec<(Vec<GroupValue>, Vec<(f64, u64)>)>;

/// Keeps the `n` best of `list`, best first (ties: lower config_id first).
fn keep_best(list: &mut Vec<(f64, u64)>, n: usize) {
    let order = |a: &(f64, u64), b: &(f64, u64)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
    if list.len() > n && n > 0 {
        list.select_nth_unstable_by(n - 1, order);
    }
    list.truncate(n);
    list.sort_by(order);
}

fn digest_sliced(run: &Finished, ask: &Ask, slice_rows: u32) -> Result<Digest> {
    let Ask {
        schema,
        constraints,
        rankings,
        trades,
        curves,
        shown,
        extra_ids,
    } = *ask;
    let lf = scan(run)?;
    let hardware = schema.find("hardware").expect("hardware is a column");
    // The requirements a mode's rows carry besides the constraints (a flag column that is
    // false): the schema's, in file order.
    let built_in: Vec<(&str, &str)> = schema
        .requirements()
        .map(|(i, _, missed)| (schema.columns[i].name, missed))
        .collect();
    // Every column a question reads, once.
    let mut needed: BTreeSet<usize> = BTreeSet::from([hardware]);
    for r in rankings {
        needed.insert(r.objective.column);
        needed.extend(r.groups.iter().copied());
    }
    for t in trades {
        needed.extend([t.x.column, t.y.column]);
    }
    for c in curves {
        needed.extend([c.x, c.y.column]);
        needed.extend(c.groups.iter().copied());
    }
    let needed: Vec<usize> = needed.into_iter().collect();

    let total_rows = super::row_count(run)?;
    let sample_every = (total_rows / SAMPLE_POINTS).max(1);
    let mut admission = Admission::default();
    let mut turned_away = vec![0u64; built_in.len() + constraints.len()];
    let mut best: Vec<Best> = vec![Vec::new(); rankings.len()];
    let mut fronts: Vec<Fronts> = vec![BTreeMap::new(); trades.len()];
    let mut samples: Vec<Vec<(String, f64, f64)>> = vec![Vec::new(); trades.len()];
    // Per curve: (group values, hardware, x) -> (oriented best y, lowest config_id at it,
    // rows at it). Grows with the distinct points only.
    type CurveKey = (Vec<GroupKey>, String, u64);
    let mut best_at: Vec<BTreeMap<CurveKey, (f64, u64, u64)>> = vec![BTreeMap::new(); curves.len()];

    for_each_slice(run, &lf, slice_rows, |slice| {
        // Why rows were turned away: counted over the feasible rows of the slice.
        let feasible = col("feasible").eq(lit(true));
        let count = |e: Expr, name: String| e.sum().cast(DataType::UInt64).alias(name);
        let mut counts = vec![
            len().cast(DataType::UInt64).alias("rows"),
            count(feasible.clone(), "feasible".into()),
        ];
        let fails = built_in
            .iter()
            .map(|(flag, _)| col(*flag).eq(lit(false)))
            .chain(
                constraints
                    .iter()
                    .map(|c| predicate(c).fill_null(lit(false)).not()),
            );
        for (i, fails) in fails.enumerate() {
            counts.push(count(feasible.clone().and(fails), format!("t{i}")));
        }
        let counted = slice.clone().select(counts).collect()?;
        let read = |n: &str| -> Result<u64> { Ok(counted.column(n)?.u64()?.get(0).unwrap_or(0)) };
        admission.rows += read("rows")?;
        admission.feasible += read("feasible")?;
        for (i, t) in turned_away.iter_mut().enumerate() {
            *t += read(&format!("t{i}"))?;
        }

        let mut keys = vec![col("config_id")];
        keys.extend(needed.iter().map(|&c| {
            let info = &schema.columns[c];
            match info.ty {
                Type::Label(_) => col(info.name).cast(DataType::String),
                _ => col(info.name).cast(DataType::Float64),
            }
        }));
        let wheres: Vec<super::Where> = constraints
            .iter()
            .copied()
            .map(super::Where::Number)
            .collect();
        let df = admitted(slice, &wheres, schema).select(keys).collect()?;
        admission.admitted += df.height() as u64;
        let ids = df.column("config_id")?.u64()?.clone();
        let values: BTreeMap<usize, Values> = needed
            .iter()
            .map(|&c| Ok((c, Values::read(&df, schema, c)?)))
            .collect::<Result<_>>()?;
        let Values::Label(hw) = &values[&hardware] else {
            unreachable!("hardware is a label")
        };

        for (r, best) in rankings.iter().zip(&mut best) {
            let v = &values[&r.objective.column];
            let sign = if r.objective.maximize { 1.0 } else { -1.0 };
            'rows: for i in 0..df.height() {
                let (Some(id), Some(x)) = (ids.get(i), v.number(i)) else {
                    continue;
                };
                let mut g = Vec::with_capacity(r.groups.len());
                for c in &r.groups {
                    match values[c].group(i) {
                        Some(value) => g.push(value),
                        None => continue 'rows,
                    }
                }
                let list = match best.iter().position(|(k, _)| *k == g) {
                    Some(at) => &mut best[at].1,
                    None => {
                        best.push((g, Vec::new()));
                        &mut best.last_mut().expect("just pushed").1
                    }
                };
                list.push((sign * x, id));
                // Trim as the list grows, so a slice holds O(n) candidates per group.
                if list.len() >= (2 * r.n).max(4096) {
                    keep_best(list, r.n);
                }
            }
            for (_, list) in best.iter_mut() {
                keep_best(list, r.n);
            }
        }

        for (c, best) in curves.iter().zip(&mut best_at) {
            let (x, y) = (&values[&c.x], &values[&c.y.column]);
            let sign = if c.y.maximize { 1.0 } else { -1.0 };
            'rows: for i in 0..df.height() {
                let (Some(id), Some(h), Some(xv), Some(yv)) =
                    (ids.get(i), hw.get(i), x.number(i), y.number(i))
                else {
                    continue;
                };
                let mut g = Vec::with_capacity(c.groups.len());
                for col in &c.groups {
                    match values[col].group(i) {
                        Some(v) => g.push(GroupKey(v)),
                        None => continue 'rows,
                    }
                }
                let v = sign * yv;
                let e = best
                    .entry((g, h.to_string(), xv.to_bits()))
                    .or_insert((v, id, 0));
                match v.total_cmp(&e.0) {
                    std::cmp::Ordering::Greater => *e = (v, id, 1),
                    std::cmp::Ordering::Equal => {
                        e.1 = e.1.min(id);
                        e.2 += 1;
                    }
                    std::cmp::Ordering::Less => {}
                }
            }
        }

        for ((t, front), sample) in trades.iter().zip(&mut fronts).zip(&mut samples) {
            let (x, y) = (&values[&t.x.column], &values[&t.y.column]);
            let rule = [t.x, t.y];
            let mut slice_points: BTreeMap<&str, Vec<(u64, [f64; 2])>> = BTreeMap::new();
            for i in 0..df.height() {
                let (Some(id), Some(h), Some(xv), Some(yv)) =
                    (ids.get(i), hw.get(i), x.number(i), y.number(i))
                else {
                    continue;
                };
                if spread(id).is_multiple_of(sample_every) {
                    sample.push((h.to_string(), xv, yv));
                }
                slice_points.entry(h).or_default().push((id, [xv, yv]));
            }
            for (h, points) in slice_points {
                let kept = front.entry(h.to_string()).or_default();
                kept.extend(points);
                let on = non_dominated_ids(&rule, kept.iter().copied());
                kept.retain(|(id, _)| on.binary_search(id).is_ok());
            }
        }
        Ok(())
    })?;

    let causes = built_in
        .iter()
        .map(|(_, cause)| cause.to_string())
        .chain(constraints.iter().map(|c| format!("fails {c}")));
    admission.turned_away = causes.zip(turned_away).filter(|&(_, n)| n > 0).collect();

    let ranked: Vec<Ranked> = rankings
        .iter()
        .zip(best)
        .map(|(r, mut groups)| {
            let sign = if r.objective.maximize { 1.0 } else { -1.0 };
            // A label with a fixed vocabulary (recompute: none, selective, full) keeps its
            // order; other labels sort alphabetically, numbers numerically; column by column.
            let vocabularies: Vec<Vec<&str>> = r
                .groups
                .iter()
                .map(|&g| match schema.columns[g].ty {
                    Type::Label(l) => l.fixed_values().unwrap_or_default(),
                    _ => Vec::new(),
                })
                .collect();
            let order = |a: &[GroupValue], b: &[GroupValue]| {
                let rank = |k: usize, g: &GroupValue| match g {
                    GroupValue::Label(text) => vocabularies[k].iter().position(|v| v == text),
                    _ => None,
                };
                a.iter()
                    .zip(b)
                    .enumerate()
                    .map(|(k, (x, y))| {
                        rank(k, x)
                            .cmp(&rank(k, y))
                            .then(x.partial_cmp(y).unwrap_or(std::cmp::Ordering::Equal))
                    })
                    .find(|o| o.is_ne())
                    .unwrap_or(std::cmp::Ordering::Equal)
            };
            groups.sort_by(|a, b| order(&a.0, &b.0));
            groups
                .into_iter()
                .map(|(g, list)| (g, list.into_iter().map(|(k, id)| (id, sign * k)).collect()))
                .collect()
        })
        .collect();

    let traded: Vec<Traded> = trades
        .iter()
        .zip(fronts)
        .zip(samples)
        .map(|((t, front), sample)| {
            let all: Vec<(u64, [f64; 2])> = front.values().flatten().copied().collect();
            let on = non_dominated_ids(&[t.x, t.y], all.iter().copied());
            let points = |list: &[(u64, [f64; 2])]| -> Vec<TradePoint> {
                let mut sorted = list.to_vec();
                sorted.sort_by(|(a, u), (b, v)| {
                    u[0].total_cmp(&v[0])
                        .then(u[1].total_cmp(&v[1]))
                        .then(a.cmp(b))
                });
                let mut p: Vec<TradePoint> = Vec::new();
                for (id, [x, y]) in sorted {
                    match p.last_mut() {
                        Some(last) if last.x == x && last.y == y => last.ties += 1,
                        _ => p.push(TradePoint { id, x, y, ties: 1 }),
                    }
                }
                p
            };
            let global: Vec<(u64, [f64; 2])> = all
                .iter()
                .filter(|(id, _)| on.binary_search(id).is_ok())
                .copied()
                .collect();
            Traded {
                per_hardware: front
                    .iter()
                    .map(|(h, list)| (h.clone(), points(list)))
                    .collect(),
                global: points(&global),
                sample,
            }
        })
        .collect();

    let curved: Vec<Curved> = curves
        .iter()
        .zip(best_at)
        .map(|(c, best)| {
            let sign = if c.y.maximize { 1.0 } else { -1.0 };
            let mut out: Curved = Vec::new();
            // Keys come sorted by group values, hardware, then x's bits (x >= 0: ascending x).
            for ((g, h, x), (v, id, ties)) in best {
                let g: Vec<String> = g.iter().map(|k| k.0.text()).collect();
                if out.last().is_none_or(|(last, _)| *last != g) {
                    out.push((g, Vec::new()));
                }
                let lines = &mut out.last_mut().expect("just pushed").1;
                if lines.last().is_none_or(|(last, _)| *last != h) {
                    lines.push((h, Vec::new()));
                }
                let point = TradePoint {
                    id,
                    x: f64::from_bits(x),
                    y: sign * v,
                    ties,
                };
                lines.last_mut().expect("just pushed").1.push(point);
            }
            for (_, lines) in &mut out {
                for (_, points) in lines.iter_mut() {
                    points.sort_by(|a, b| a.x.total_cmp(&b.x));
                }
            }
            out
        })
        .collect();

    let mut ids: BTreeSet<u64> = extra_ids.iter().copied().collect();
    for c in &curved {
        ids.extend(
            c.iter()
                .flat_map(|(_, lines)| lines.iter().flat_map(|(_, p)| p.iter().map(|q| q.id))),
        );
    }
    for groups in &ranked {
        ids.extend(groups.iter().flat_map(|(_, list)| list.iter().map(|p| p.0)));
    }
    for t in &traded {
        ids.extend(
            t.per_hardware
                .iter()
                .flat_map(|(_, p)| p.iter().map(|q| q.id)),
        );
    }
    let ids = Series::new("ids".into(), ids.into_iter().collect::<Vec<u64>>());
    let df = select(
        lf.filter(col("config_id").is_in(lit(ids).implode(false), false))
            .sort(["config_id"], SortMultipleOptions::default()),
        shown,
        schema,
    )
    .collect()?;
    let t = table(&df)?;
    let id_column = df.column("config_id")?.u64()?;
    let rows = t
        .rows
        .into_iter()
        .enumerate()
        .filter_map(|(i, cells)| Some((id_column.get(i)?, cells)))
        .collect();
    Ok(Digest {
        admission,
        ranked,
        traded,
        curved,
        header: t.columns.into_iter().map(|c| c.header).collect(),
        rows,
    })
}

/// A group value as a map key: numbers in numeric order, then labels alphabetically.
#[derive(Debug, Clone, PartialEq)]
struct GroupKey(GroupValue);

impl Eq for GroupKey {}

impl PartialOrd for GroupKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for GroupKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        let kind = |g: &GroupValue| match g {
            GroupValue::Number(_) => 0,
            GroupValue::Label(_) => 1,
            GroupValue::Null => 2,
        };
        match (&self.0, &other.0) {
            (GroupValue::Number(a), GroupValue::Number(b)) => a.total_cmp(b),
            (GroupValue::Label(a), GroupValue::Label(b)) => a.cmp(b),
            (a, b) => kind(a).cmp(&kind(b)),
        }
    }
}

/// A config_id scrambled (splitmix64's finalizer), so that every `k`-th value is a sample
/// spread over the whole grid rather than one corner of it.
fn spread(id: u64) -> u64 {
    let mut z = id.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::columns::Mode;

    /// Slicing the run changes nothing: small slices give the answers of one slice.
    #[test]
    fn slices_do_not_change_the_digest() {
        let (_tmp, dir) = super::super::quickstart_run();
        let schema = Schema::get(Mode::Inference);
        let objective = |t: &str| Objective::parse(t, schema).unwrap();
        let column = |n: &str| schema.find(n).unwrap();
        let constraints = [Constraint::parse("ttft_ms <= 2000", schema).unwrap()];
        let rankings = [
            Ranking {
                objective: objective("max tokens_per_s_per_gpu"),
                groups: vec![column("batch")],
                n: 2,
            },
            Ranking {
                objective: objective("min usd_per_mtok"),
                groups: vec![column("weight_dtype")],
                n: 3,
            },
        ];
        let trades = [Trade {
            x: objective("min ttft_p99_ms"),
            y: objective("min usd_per_mtok"),
        }];
        let shown = ["config_id", "hardware", "batch"];
        let ask = Ask {
            schema,
            constraints: &constraints,
            rankings: &rankings,
            trades: &trades,
            curves: &[Curve {
                x: column("batch"),
                y: objective("min usd_per_mtok"),
                groups: vec![column("weight_dtype")],
            }],
            shown: &shown,
            extra_ids: &[],
        };
        let run = |slice_rows| digest_sliced(&dir, &ask, slice_rows).unwrap();
        let (whole, sliced) = (run(DIGEST_SLICE_ROWS), run(700));
        assert_eq!(whole.admission, sliced.admission);
        assert_eq!(whole.ranked, sliced.ranked);
        assert_eq!(whole.ranked[0].len(), 11, "one group per batch size");
        assert_eq!(whole.traded[0].per_hardware, sliced.traded[0].per_hardware);
        assert_eq!(whole.traded[0].global, sliced.traded[0].global);
        assert_eq!(whole.curved, sliced.curved);
        // One curve per weight format, each hardware's cheapest row per batch.
        assert!(!whole.curved[0].is_empty());
        for (g, lines) in &whole.curved[0] {
            assert_eq!(g.len(), 1);
            for (_, points) in lines {
                assert!(
                    points.windows(2).all(|w| w[0].x < w[1].x),
                    "ascending batch"
                );
            }
        }
        assert_eq!(whole.rows, sliced.rows);
    }
}
