//! `racksweep report`: a finished run as a planning-review document. Asks the run's Parquet
//! its questions in one pass (`analyze::digest`), lays the answers out as blocks
//! (`document`), and writes them as `report.html` (inline SVG charts) and `report.md` (with
//! the charts as SVG files beside it).

pub mod document;
pub mod html;
pub mod markdown;
pub mod svg;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use anyhow::{Context as _, Result};

use crate::analyze::digest::{self, Curve, Digest, Ranking, Trade, TradePoint, Traded};
use crate::columns::{Info, Schema};
use crate::error::UserError;
use crate::format::number;
use crate::output::manifest::{Manifest, rfc3339};
use crate::output::run_dir::{RunDir, write_atomic};
use crate::output::table::{Align, Column, Table};
use crate::pareto::{Constraint, Objective, describe_constraints, describe_objectives};
use document::{Block, Document};
use svg::{Chart, Point, Series, Style};

/// Frontier rows listed in the report at most (all of them are in pareto.md and
/// pareto.parquet).
const FRONTIER_ROWS: usize = 50;

/// The files a report wrote.
pub struct Written {
    pub html: PathBuf,
    pub markdown: PathBuf,
    pub charts: usize,
}

/// Writes the report of the finished run in `run_dir` (checked by the shared reader; an
/// incomplete one only with `allow_incomplete`), with the `top` best rows per objective.
pub fn write(run_dir: &Path, top: usize, allow_incomplete: bool) -> Result<Written> {
    let dir = RunDir::new(run_dir.to_path_buf());
    let _lock = dir.lock_existing()?;
    let run = dir.open(allow_incomplete)?;
    let manifest = &run.manifest;
    let sweep_text = std::fs::read_to_string(dir.sweep())
        .with_context(|| format!("reading {}", dir.sweep().display()))?;
    let schema = Schema::get(manifest.mode);
    let objectives = parse_all(&manifest.objectives, schema, Objective::parse)?;
    if objectives.is_empty() {
        return Err(
            UserError::new(format!("{} names no objectives", dir.manifest().display()))
                .with_hint(
                    "every run has at least one; run the sweep again to rewrite its manifest",
                )
                .into(),
        );
    }
    let constraints = parse_all(&manifest.constraints, schema, Constraint::parse)?;
    let frontier_ids = crate::analyze::config_ids(&dir.pareto_parquet())?;

    let q = Questions::new(&objectives, top, schema);
    // How the answer moves with the workload: the workload columns the sweep varies.
    let varying_workload = match crate::spec::parse(&dir.sweep(), &sweep_text, u64::MAX) {
        Ok(crate::spec::Sweep::Inference(s)) => s.varying_workload_columns(),
        _ => Vec::new(),
    };
    let curves = workload_curves(&varying_workload, schema);
    let shown = shown_columns(&objectives, &constraints, schema);
    let digest = digest::digest(
        &run,
        &digest::Ask {
            schema,
            constraints: &constraints,
            rankings: &q.rankings,
            trades: &q.trades,
            curves: &curves,
            shown: &shown,
            extra_ids: &frontier_ids,
        },
    )?;
    let doc = build(
        &Context {
            m: manifest,
            schema,
            sweep_text: &sweep_text,
            objectives: &objectives,
            constraints: &constraints,
            curves: &curves,
        },
        &q,
        &digest,
        &frontier_ids,
    );

    let mut charts = 0;
    for block in &doc.blocks {
        if let Block::Figure { file, chart, .. } = block {
            write_atomic(&run_dir.join(file), chart.render().as_bytes())?;
            charts += 1;
        }
    }
    let written = Written {
        html: run_dir.join("report.html"),
        markdown: run_dir.join("report.md"),
        charts,
    };
    write_atomic(&written.markdown, markdown::render(&doc).as_bytes())?;
    write_atomic(&written.html, html::render(&doc).as_bytes())?;
    Ok(written)
}

fn parse_all<T>(
    texts: &[String],
    schema: &Schema,
    parse: fn(&str, &Schema) -> Result<T, crate::pareto::ParseError>,
) -> Result<Vec<T>> {
    texts
        .iter()
        .map(|t| {
            parse(t, schema).map_err(|(message, _)| {
                UserError::new(format!("manifest.json: \"{t}\": {message}"))
                    .with_hint("the run may come from another racksweep version; run it again")
                    .into()
            })
        })
        .collect()
}

/// What the report asks of the run. Rankings, in order: the best per hardware by the first
/// objective, the top rows by each objective, then the best per value of each column the
/// report follows (`Show::follow`) by the first objective.
struct Questions {
    rankings: Vec<Ranking>,
    trades: Vec<Trade>,
}

impl Questions {
    fn new(objectives: &[Objective], top: usize, schema: &Schema) -> Questions {
        let objective = |t: &str| Objective::parse(t, schema).expect("a valid objective");
        let primary = objectives[0];
        let mut rankings = vec![Ranking {
            objective: primary,
            group: schema.find("hardware"),
            n: 1,
        }];
        rankings.extend(objectives.iter().map(|&o| Ranking {
            objective: o,
            group: None,
            n: top,
        }));
        rankings.extend(follows(schema).map(|(c, _)| Ranking {
            objective: primary,
            group: Some(c),
            n: 1,
        }));
        let trades = schema
            .review
            .trades
            .iter()
            .map(|(_, x, y)| Trade {
                x: objective(x),
                y: objective(y),
            })
            .collect();
        Questions { rankings, trades }
    }
}

/// The columns whose best value the report follows, in file order, with what they are
/// called.
fn follows(schema: &Schema) -> impl Iterator<Item = (usize, &'static str)> + '_ {
    schema
        .columns
        .iter()
        .enumerate()
        .filter_map(|(i, c)| Some((i, c.show.follow?)))
}

/// The columns a report table may show: those that say which configuration a row is (in file
/// order; those with one value in every row shown are folded into a sentence instead), the
/// objectives and constraints, then the metrics every report table shows (`Show::report`, by
/// rank).
fn shown_columns(
    objectives: &[Objective],
    constraints: &[Constraint],
    schema: &Schema,
) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = schema.names(Info::identifies).collect();
    let mut metrics: Vec<(u8, &'static str)> = schema
        .columns
        .iter()
        .filter_map(|c| Some((c.show.report?, c.name)))
        .collect();
    metrics.sort_unstable();
    let extra = objectives
        .iter()
        .map(|o| o.name)
        .chain(constraints.iter().map(|c| c.name))
        .chain(metrics.into_iter().map(|(_, n)| n));
    for n in extra {
        if !names.contains(&n) {
            names.push(n);
        }
    }
    names
}

/// The columns worth a table column: config_id and hardware always; others only where the
/// rows shown differ (or are all null, which drops them). Returns the kept indices and the
/// columns folded into a sentence with their one value.
fn varying(d: &Digest) -> (Vec<usize>, Vec<(String, String)>) {
    let mut kept = Vec::new();
    let mut fixed = Vec::new();
    for (i, name) in d.header.iter().enumerate() {
        let mut values = d.rows.values().map(|r| r[i].as_str());
        let first = values.next().unwrap_or("-");
        let same = values.all(|v| v == first);
        if name == "config_id" || name == "hardware" || !same {
            kept.push(i);
        } else if first != "-" {
            fixed.push((name.clone(), first.to_string()));
        }
    }
    (kept, fixed)
}

struct Tables<'a> {
    digest: &'a Digest,
    kept: Vec<usize>,
    schema: &'a Schema,
}

impl Tables<'_> {
    fn table(&self, ids: impl IntoIterator<Item = u64>) -> Block {
        let header: Vec<String> = self
            .kept
            .iter()
            .map(|&i| self.digest.header[i].clone())
            .collect();
        let rows: Vec<Vec<String>> = ids
            .into_iter()
            .filter_map(|id| self.digest.rows.get(&id))
            .map(|r| self.kept.iter().map(|&i| r[i].clone()).collect())
            .collect();
        if rows.is_empty() {
            return Block::Paragraph("None: no configuration is admitted.".into());
        }
        let columns = header
            .into_iter()
            .map(|h| {
                let numeric = self
                    .schema
                    .find(&h)
                    .is_some_and(|c| self.schema.columns[c].is_numeric());
                Column::new(h, "", Align::numeric(numeric))
            })
            .collect();
        Block::Table(Table::new(columns, rows))
    }

    /// A configuration in a few words, for chart tooltips.
    fn describe(&self, id: u64) -> String {
        let Some(row) = self.digest.rows.get(&id) else {
            return format!("config {id}");
        };
        let parts: Vec<String> = self
            .kept
            .iter()
            .filter(|&&i| {
                self.schema
                    .find(&self.digest.header[i])
                    .is_some_and(|c| self.schema.columns[c].identifies())
            })
            .map(|&i| format!("{} {}", self.digest.header[i], row[i]))
            .collect();
        parts.join(", ")
    }
}

fn count_share(n: u64, of: u64) -> Vec<String> {
    let pct = if of == 0 {
        0.0
    } else {
        100.0 * n as f64 / of as f64
    };
    vec![number(n as f64), format!("{pct:.1} %")]
}

/// What the report is about: the run, its columns, and what the sweep asked.
struct Context<'a> {
    m: &'a Manifest,
    schema: &'static Schema,
    sweep_text: &'a str,
    objectives: &'a [Objective],
    constraints: &'a [Constraint],
    /// The workload questions ([`workload_curves`]), answered in `Digest::curved`.
    curves: &'a [Curve],
}

/// What the report asks when the sweep varies workload columns (`varying`): the cheapest
/// USD/month and the fewest racks per hardware along the demand column (or the workload_id
/// when no demand varies), one curve per combination of the other varying columns.
fn workload_curves(varying: &[&str], schema: &Schema) -> Vec<Curve> {
    if varying.is_empty() {
        return Vec::new();
    }
    let column = |n: &str| schema.find(n).expect("a workload column");
    let x = varying
        .iter()
        .find(|n| n.starts_with("given_"))
        .copied()
        .unwrap_or("workload_id");
    let groups: Vec<usize> = varying
        .iter()
        .filter(|&&n| n != x)
        .map(|n| column(n))
        .collect();
    ["min usd_per_month", "min racks"]
        .into_iter()
        .map(|y| Curve {
            x: column(x),
            y: Objective::parse(y, schema).expect("a valid objective"),
            groups: groups.clone(),
        })
        .collect()
}

fn build(c: &Context, q: &Questions, d: &Digest, frontier_ids: &[u64]) -> Document {
    let Context {
        m,
        schema,
        sweep_text,
        objectives,
        constraints,
        curves,
    } = *c;
    let (kept, fixed) = varying(d);
    let t = Tables {
        digest: d,
        kept,
        schema,
    };
    let rule = admission_rule(schema, constraints);
    let mut blocks = Vec::new();

    blocks.extend(summary(c, d, rule, &fixed));
    blocks.extend(workload_blocks(curves, d, &t));
    blocks.extend(frontier_charts(c, d, &t));

    let primary = objectives[0];
    let mut r = d.ranked.iter().zip(&q.rankings);
    let (best_per_hw, _) = r.next().expect("the per-hardware ranking");
    blocks.push(Block::Section {
        id: "best",
        title: "Best configuration per hardware".into(),
    });
    blocks.push(Block::Paragraph(format!(
        "By {primary}, among the admitted configurations."
    )));
    blocks.push(
        t.table(
            best_per_hw
                .iter()
                .filter_map(|(_, l)| l.first().map(|p| p.0)),
        ),
    );

    blocks.push(Block::Section {
        id: "frontier",
        title: "Pareto frontier".into(),
    });
    blocks.push(Block::Paragraph(format!(
        "The admitted configurations no other beats on every objective ({}), \
         best first by {primary}.{}",
        describe_objectives(objectives),
        if frontier_ids.len() > FRONTIER_ROWS {
            format!(
                " The first {FRONTIER_ROWS} of {} are listed; pareto.md and pareto.parquet \
                 have them all.",
                number(frontier_ids.len() as f64)
            )
        } else {
            String::new()
        }
    )));
    blocks.push(t.table(frontier_ids.iter().copied().take(FRONTIER_ROWS)));

    blocks.push(Block::Section {
        id: "top",
        title: "Top configurations per objective".into(),
    });
    for (ranked, ranking) in r.by_ref().take(objectives.len()) {
        blocks.push(Block::Subheading(format!("{}", ranking.objective)));
        let ids: Vec<u64> = ranked
            .iter()
            .flat_map(|(_, l)| l.iter().map(|p| p.0))
            .collect();
        blocks.push(t.table(ids));
    }

    blocks.extend(turned_away(m, d, schema));

    blocks.push(Block::Section {
        id: "moves",
        title: "How the best configuration moves".into(),
    });
    blocks.push(Block::Paragraph(format!(
        "The best configuration by {primary} at each value of {}, among \
         the admitted ones.",
        schema.review.follows
    )));
    for ((ranked, _), (_, label)) in r.zip(follows(schema)) {
        if ranked.len() < 2 {
            continue;
        }
        blocks.push(Block::Subheading(format!("By {label}")));
        blocks.push(t.table(ranked.iter().filter_map(|(_, l)| l.first().map(|p| p.0))));
    }

    blocks.push(Block::Section {
        id: "sweep",
        title: "Sweep definition".into(),
    });
    blocks.push(Block::Paragraph(format!(
        "{} (sha256 {}), as run:",
        m.sweep_file, m.sweep_sha256
    )));
    blocks.push(Block::Code(sweep_text.to_string()));

    Document {
        title: format!("racksweep report: {}", m.sweep_name),
        blocks,
    }
}

/// The summary: the sweep's description and the run's facts.
fn summary(c: &Context, d: &Digest, rule: String, fixed: &[(String, String)]) -> Vec<Block> {
    let m = c.m;
    let description = toml::from_str::<toml::Table>(c.sweep_text)
        .ok()
        .and_then(|t| {
            t.get("sweep")?
                .get("description")?
                .as_str()
                .map(String::from)
        });
    let mut blocks = Vec::new();
    blocks.push(Block::Section {
        id: "summary",
        title: "Summary".into(),
    });
    if let Some(text) = description {
        blocks.push(Block::Paragraph(text));
    }
    let mut facts = vec![
        ("model".to_string(), m.model.clone()),
        ("workload".into(), workload(m, c.schema)),
        ("configurations".into(), number(m.configurations as f64)),
        (
            "run".into(),
            format!(
                "{} feasible; {} admitted; {} on the frontier",
                number(m.feasible as f64),
                number(d.admission.admitted as f64),
                number(m.frontier_size as f64)
            ),
        ),
        (
            "admitted".into(),
            format!("configurations that {rule}; every table and chart below considers only these"),
        ),
        ("objectives".into(), describe_objectives(c.objectives)),
        ("constraints".into(), describe_constraints(c.constraints)),
        (
            "evaluated".into(),
            format!(
                "{} by racksweep {} in {} s ({} configurations/s, {} threads)",
                m.finished_at,
                m.racksweep_version,
                number(m.wall_time_s),
                number(m.configs_per_s),
                m.threads
            ),
        ),
        (
            "report".into(),
            format!(
                "{} by racksweep {}",
                rfc3339(SystemTime::now()),
                env!("CARGO_PKG_VERSION")
            ),
        ),
    ];
    if !fixed.is_empty() {
        let same: Vec<String> = fixed.iter().map(|(k, v)| format!("{k} {v}")).collect();
        facts.push(("in every row shown".into(), same.join(", ")));
    }
    blocks.push(Block::Facts(facts));

    blocks
}

/// One chart per trade of the mode's profile, each hardware's frontier a line.
fn frontier_charts(c: &Context, d: &Digest, t: &Tables) -> Vec<Block> {
    let schema = c.schema;
    let mut blocks = Vec::new();
    blocks.push(Block::Section {
        id: "charts",
        title: "Frontiers".into(),
    });
    // One style per hardware for every chart: all hardware with an admitted configuration.
    let styles: BTreeMap<String, Style> = d.ranked[0]
        .iter()
        .filter_map(|(g, _)| g.as_ref().map(|g| g.text()))
        .chain(
            d.traded
                .iter()
                .flat_map(|t| t.per_hardware.iter().map(|(h, _)| h.clone())),
        )
        .collect::<std::collections::BTreeSet<String>>()
        .into_iter()
        .enumerate()
        .map(|(i, h)| (h, Style::nth(i)))
        .collect();
    let mut omitted = Vec::new();
    for ((title, x, y), traded) in schema.review.trades.iter().zip(&d.traded) {
        let (xo, yo) = (
            Objective::parse(x, schema).expect("valid"),
            Objective::parse(y, schema).expect("valid"),
        );
        if traded.per_hardware.iter().all(|(_, p)| p.is_empty()) {
            omitted.push(format!(
                "{} (no admitted configuration has both {} and {})",
                title.to_lowercase(),
                xo.name,
                yo.name
            ));
            continue;
        }
        let chart = chart(title, [xo, yo], traded, t, &styles);
        let caption = format!(
            "Each line is one hardware's frontier: the configurations no other configuration on \
             that hardware beats on both {} ({}) and {} ({}). The grey band and circled points are \
             the frontier over all hardware. Faint dots are a sample of {} admitted \
             configurations. Hover a point for its configuration.",
            xo.name,
            direction(xo),
            yo.name,
            direction(yo),
            number(traded.sample.len() as f64),
        );
        blocks.push(Block::Figure {
            file: format!("report-{}.svg", slug(title)),
            chart,
            caption,
        });
    }
    if !omitted.is_empty() {
        blocks.push(Block::Paragraph(format!(
            "Not drawn: {}.",
            omitted.join("; ")
        )));
    }

    blocks
}

/// One section per combination of the varying workload columns other than the demand: the
/// cheapest USD/month and the fewest racks per hardware against the demand (charts when the
/// demand takes several values), and the cheapest configuration per hardware at each demand.
fn workload_blocks(curves: &[Curve], d: &Digest, t: &Tables) -> Vec<Block> {
    let [cost, racks] = curves else {
        return Vec::new();
    };
    let schema = t.schema;
    let x = &schema.columns[cost.x];
    let names: Vec<&str> = cost
        .groups
        .iter()
        .map(|&g| schema.columns[g].name)
        .collect();
    let mut blocks = vec![
        Block::Section {
            id: "workloads",
            title: "By workload".into(),
        },
        Block::Paragraph(format!(
            "Each workload is answered on its own (its own frontier in pareto.md). Per hardware, \
             among the admitted configurations: the cheapest by usd_per_month and the fewest \
             racks at each value of {}.",
            x.name
        )),
    ];
    let styles: BTreeMap<String, Style> = d.curved[0]
        .iter()
        .flat_map(|(_, lines)| lines.iter().map(|(h, _)| h.clone()))
        .collect::<std::collections::BTreeSet<String>>()
        .into_iter()
        .enumerate()
        .map(|(i, h)| (h, Style::nth(i)))
        .collect();
    let racks_of = |g: &Vec<String>| {
        d.curved[1]
            .iter()
            .find(|(k, _)| k == g)
            .map(|(_, lines)| lines.clone())
            .unwrap_or_default()
    };
    for (g, lines) in &d.curved[0] {
        let title = if names.is_empty() {
            "All workloads".to_string()
        } else {
            names
                .iter()
                .zip(g)
                .map(|(n, v)| format!("{n} {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        blocks.push(Block::Subheading(title.clone()));
        let several = lines.iter().any(|(_, p)| p.len() > 1);
        if several && x.name != "workload_id" {
            for (y, lines, what) in [
                (cost.y, lines.clone(), "usd"),
                (racks.y, racks_of(g), "racks"),
            ] {
                let series = lines
                    .iter()
                    .map(|(h, points)| Series {
                        name: h.clone(),
                        style: styles.get(h).copied().unwrap_or(Style::nth(0)),
                        frontier: points
                            .iter()
                            .map(|p| Point {
                                x: p.x,
                                y: p.y,
                                tip: format!(
                                    "{}: {} = {}, {} = {}",
                                    t.describe(p.id),
                                    x.name,
                                    number(p.x),
                                    y.name,
                                    number(p.y)
                                ),
                            })
                            .collect(),
                        cloud: Vec::new(),
                    })
                    .collect();
                let chart_title = format!("{} against {}: {title}", y.name, x.name);
                blocks.push(Block::Figure {
                    file: format!("report-{}-{}.svg", what, slug(&title)),
                    chart: Chart {
                        title: chart_title,
                        x_label: format!("{} ({})", x.name, x.unit),
                        y_label: axis_label(y, schema),
                        series,
                        global: Vec::new(),
                    },
                    caption: format!(
                        "Each line is one hardware: its {} {} among the admitted \
             configurations at each {}.",
                        if y.maximize { "largest" } else { "smallest" },
                        y.name,
                        x.name
                    ),
                });
            }
        }
        blocks.push(t.table(lines.iter().flat_map(|(_, p)| p.iter().map(|q| q.id))));
    }
    blocks
}

/// Configurations turned away: infeasible ones by reason, then feasible ones by the requirement
/// they miss, then the admitted.
fn turned_away(m: &Manifest, d: &Digest, schema: &Schema) -> Vec<Block> {
    let mut blocks = Vec::new();
    blocks.push(Block::Section {
        id: "excluded",
        title: "Configurations turned away".into(),
    });
    blocks.push(Block::Paragraph(if d.admission.turned_away.is_empty() {
        "Infeasible configurations by reason (counted over the whole grid); every feasible \
         configuration is admitted."
            .to_string()
    } else {
        format!(
            "Infeasible configurations by reason (counted over the whole grid), then feasible \
             ones the sweep's {} turned away (a configuration can fail several).",
            requirements(schema)
        )
    }));
    let mut rows: Vec<Vec<String>> = Vec::new();
    let all = m.configurations;
    for (reason, n) in &m.infeasible {
        let mut row = vec!["infeasible".to_string(), reason.clone()];
        row.extend(count_share(*n, all));
        rows.push(row);
    }
    for (cause, n) in &d.admission.turned_away {
        let mut row = vec!["turned away".to_string(), cause.clone()];
        row.extend(count_share(*n, all));
        rows.push(row);
    }
    let mut row = vec![
        "admitted".to_string(),
        "meets every requirement".to_string(),
    ];
    row.extend(count_share(d.admission.admitted, all));
    rows.push(row);
    blocks.push(Block::Table(Table::new(
        vec![
            Column::left("status"),
            Column::left("reason"),
            Column::right("configurations"),
            Column::right("share of grid"),
        ],
        rows,
    )));
    if m.feasible_only {
        blocks.push(Block::Paragraph(
            "The run kept only feasible rows (--feasible-only); the infeasible counts come from \
             its manifest."
                .into(),
        ));
    }

    blocks
}

/// The workload in words.
fn workload(m: &Manifest, schema: &Schema) -> String {
    let get = |k: &str| m.workload.get(k).copied().unwrap_or(f64::NAN);
    (schema.review.workload_words)(&get, m.kv_admission.as_deref())
}

/// What can turn a feasible configuration away, to follow "the sweep's": the schema's
/// requirements, then the constraints ("demand, SLOs or constraints").
fn requirements(schema: &Schema) -> String {
    let mut what: Vec<&str> = schema.requirements().map(|(_, by, _)| by).collect();
    what.push("constraints");
    let last = what.pop().unwrap_or_default();
    if what.is_empty() {
        last.to_string()
    } else {
        format!("{} or {last}", what.join(", "))
    }
}

/// The admission rule in words, to follow "configurations that".
fn admission_rule(schema: &Schema, constraints: &[Constraint]) -> String {
    let mut s = schema.review.admitted.to_string();
    if !constraints.is_empty() {
        s.push_str(&format!(
            " and satisfy {}",
            describe_constraints(constraints)
        ));
    }
    s
}

fn direction(o: Objective) -> &'static str {
    if o.maximize {
        "higher is better"
    } else {
        "lower is better"
    }
}

fn slug(title: &str) -> String {
    title
        .to_lowercase()
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join("-")
}

fn axis_label(o: Objective, schema: &Schema) -> String {
    let c = &schema.columns[o.column];
    format!("{} ({}, {})", c.name, c.unit, direction(o))
}

fn chart(
    title: &str,
    [x, y]: [Objective; 2],
    traded: &Traded,
    t: &Tables,
    styles: &BTreeMap<String, Style>,
) -> Chart {
    let point = |p: &TradePoint| {
        let ties = if p.ties > 1 {
            format!(
                " (and {} more configurations with these values)",
                p.ties - 1
            )
        } else {
            String::new()
        };
        Point {
            x: p.x,
            y: p.y,
            tip: format!(
                "{}: {} = {}, {} = {}{ties}",
                t.describe(p.id),
                x.name,
                number(p.x),
                y.name,
                number(p.y)
            ),
        }
    };
    let series = traded
        .per_hardware
        .iter()
        .filter(|(_, points)| !points.is_empty())
        .map(|(h, points)| Series {
            name: h.clone(),
            style: styles.get(h).copied().unwrap_or(Style::nth(0)),
            frontier: points.iter().map(point).collect(),
            cloud: traded
                .sample
                .iter()
                .filter(|(sh, _, _)| sh == h)
                .map(|&(_, a, b)| (a, b))
                .collect(),
        })
        .collect();
    Chart {
        title: title.to_string(),
        x_label: axis_label(x, t.schema),
        y_label: axis_label(y, t.schema),
        series,
        global: traded.global.iter().map(point).collect(),
    }
}
