//! `racksweep report`: a finished run as a planning-review document. Asks the run's Parquet
//! its questions in one pass (`analyze::digest`), lays the answers out as blocks
//! (`document`), and writes them as `report.html` (inline SVG charts) and `report.md` (with
//! the charts as SVG files beside it).

mod asks;
pub mod document;
pub mod html;
pub mod markdown;
pub mod svg;

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use anyhow::{Context as _, Result};

use crate::analyze::digest::{self, Curve, Digest, Ranked, Ranking, Trade, TradePoint, Traded};
use crate::columns::{Info, Schema};
use crate::error::UserError;
use crate::format::number;
use crate::output::manifest::{Manifest, rfc3339};
use crate::output::run_dir::{RunDir, write_atomic};
use crate::output::table::{Align, Column, Table};
use crate::pareto::{Constraint, Objective, describe_constraints, describe_objectives};
use document::{Block, Document};
use svg::{Along, Chart, Limit, Point, Series, Shape, Style};

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
    let lock = dir.lock_existing()?;
    let run = dir.open(allow_incomplete)?;
    let manifest = &run.manifest;
    let sweep_text = crate::limits::read_input(&dir.sweep())
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
    // The sweep as run, parsed once: what it asks beyond its grid. A sweep this version no
    // longer accepts still gets a report, with the reason in its summary.
    let sweep = crate::spec::parse(&dir.sweep(), &sweep_text, u64::MAX);
    // How the answer moves with the workload: the workload columns the sweep varies.
    let varying_workload = match &sweep {
        Ok(crate::spec::Sweep::Inference(s)) => s.varying_workload_columns(),
        _ => Vec::new(),
    };
    let curves = workload_curves(&varying_workload, schema);
    let gpus: Vec<String> = match &sweep {
        Ok(s) => s
            .header()
            .catalog
            .gpus
            .iter()
            .map(|g| g.id.clone())
            .collect(),
        Err(_) => crate::catalog::Catalog::builtin()
            .map(|c| c.gpus.into_iter().map(|g| g.id).collect())
            .unwrap_or_default(),
    };
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
            sweep: sweep.as_ref().map_err(|e| e.to_string()),
            gpus: &gpus,
            objectives: &objectives,
            constraints: &constraints,
            curves: &curves,
        },
        &q,
        &digest,
        &frontier_ids,
    );

    lock.check()?;
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

/// What the report asks of the run. Rankings, in order: the cheapest per combination of the
/// review's `compare` columns (hardware x ownership ...), the top rows by each objective, then
/// the best per value of each column the report follows (`Show::follow`) by the first
/// objective.
struct Questions {
    rankings: Vec<Ranking>,
    trades: Vec<Trade>,
}

impl Questions {
    fn new(objectives: &[Objective], top: usize, schema: &Schema) -> Questions {
        let objective = |t: &str| Objective::parse(t, schema).expect("a valid objective");
        let primary = objectives[0];
        let mut rankings = vec![Ranking {
            objective: objective(schema.review.cheapest),
            groups: compared(schema),
            n: 1,
        }];
        rankings.extend(objectives.iter().map(|&o| Ranking {
            objective: o,
            groups: Vec::new(),
            n: top,
        }));
        rankings.extend(follows(schema).map(|(c, _)| Ranking {
            objective: primary,
            groups: vec![c],
            n: 1,
        }));
        let trades = schema
            .review
            .trades
            .iter()
            .map(|(_, x, y, _)| Trade {
                x: objective(x),
                y: objective(y),
            })
            .collect();
        Questions { rankings, trades }
    }
}

/// The review's `compare` columns (hardware, ownership, ...), as indices.
fn compared(schema: &Schema) -> Vec<usize> {
    schema
        .review
        .compare
        .iter()
        .map(|n| schema.find(n).expect("a review column"))
        .collect()
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

/// The columns a report table may show, in the order it shows them: the row's id, workload
/// and platform; the answer columns (`Show::report`, by rank); the objectives and constraints
/// not among them; then the layout, in file order. Those with one value in every row shown
/// are folded into a sentence instead.
fn shown_columns(
    objectives: &[Objective],
    constraints: &[Constraint],
    schema: &Schema,
) -> Vec<&'static str> {
    use crate::columns::Role;
    let lead = |c: &Info| matches!(c.role, Role::Id | Role::Workload | Role::Platform);
    let mut answers: Vec<(u8, &'static str)> = schema
        .columns
        .iter()
        .filter_map(|c| Some((c.show.report?, c.name)))
        .collect();
    answers.sort_unstable();
    let mut names: Vec<&'static str> = Vec::new();
    let ordered = schema
        .names(lead)
        .chain(answers.into_iter().map(|(_, n)| n))
        .chain(objectives.iter().map(|o| o.name))
        .chain(constraints.iter().map(|c| c.name))
        .chain(schema.names(Info::identifies));
    for n in ordered {
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
    /// The catalog's GPU ids, in catalog order: a hardware's colour in every chart.
    gpus: &'a [String],
    /// The sweep's SLOs and user demand as bounds on columns (`asks::bounds`).
    bounds: &'a [(&'static str, f64, String)],
}

impl Tables<'_> {
    fn table(&self, ids: impl IntoIterator<Item = u64>) -> Block {
        self.table_led(ids, &[])
    }

    /// A table of the rows `ids`, with the kept columns named in `lead` first (in that order).
    fn table_led(&self, ids: impl IntoIterator<Item = u64>, lead: &[&str]) -> Block {
        let header_of = |i: usize| self.digest.header[i].as_str();
        let mut order: Vec<usize> = lead
            .iter()
            .filter_map(|n| self.kept.iter().copied().find(|&i| header_of(i) == *n))
            .collect();
        order.extend(self.kept.iter().filter(|&&i| !lead.contains(&header_of(i))));
        let header: Vec<String> = order.iter().map(|&i| header_of(i).to_string()).collect();
        let rows: Vec<Vec<String>> = ids
            .into_iter()
            .filter_map(|id| self.digest.rows.get(&id))
            .map(|r| order.iter().map(|&i| r[i].clone()).collect())
            .collect();
        if rows.is_empty() {
            return Block::Paragraph("None: no configuration is admitted.".into());
        }
        let columns = header
            .into_iter()
            .map(
                |h| match self.schema.find(&h).map(|c| &self.schema.columns[c]) {
                    Some(c) => Column::new(c.header(), "", Align::numeric(c.is_numeric())),
                    None => Column::new(h, "", Align::Left),
                },
            )
            .collect();
        Block::Table(Table::new(columns, rows))
    }

    /// The `names` that are table columns (they vary among the rows shown), hardware always.
    fn varying<'a>(&self, names: &[&'a str]) -> Vec<&'a str> {
        names
            .iter()
            .copied()
            .filter(|n| *n == "hardware" || self.kept.iter().any(|&i| self.digest.header[i] == *n))
            .collect()
    }

    /// A hardware's style: by the GPU's place in the catalog, so that it is the same in every
    /// report (GPUs the catalog lacks come after its own, in the order met).
    fn style(&self, hardware: &str) -> Style {
        Style::nth(
            self.gpus
                .iter()
                .position(|g| g == hardware)
                .unwrap_or(self.gpus.len()),
        )
    }

    /// The marker of a point drawn for configuration `id` and `ties` - 1 others with the same
    /// values: a circle when owned, a triangle in the cloud, a diamond for several (owned and
    /// cloud alike often tie where cost is not on an axis).
    fn shape(&self, id: u64, ties: u64) -> Shape {
        if ties > 1 {
            return Shape::Diamond;
        }
        let ownership = self.digest.header.iter().position(|h| h == "ownership");
        match ownership.and_then(|i| Some(self.digest.rows.get(&id)?[i].as_str())) {
            Some("cloud") => Shape::Triangle,
            _ => Shape::Circle,
        }
    }

    /// The legend's shapes for `points` (id, ties): what each shape used means.
    fn shapes(&self, points: impl Iterator<Item = (u64, u64)>) -> Vec<(Shape, String)> {
        let mut used: Vec<Shape> = points.map(|(id, ties)| self.shape(id, ties)).collect();
        used.sort_by_key(|s| Shape::ALL.iter().position(|a| a == s));
        used.dedup();
        used.into_iter()
            .map(|s| {
                let meaning = match s {
                    Shape::Triangle => "cloud",
                    Shape::Diamond => "several alike",
                    _ => "owned",
                };
                (s, meaning.to_string())
            })
            .collect()
    }

    /// The SLO and demand lines of a chart of `x` against `y`.
    fn limits(&self, x: &str, y: &str) -> Vec<Limit> {
        self.bounds
            .iter()
            .filter_map(|(column, value, label)| {
                let along = if *column == x {
                    Along::X
                } else if *column == y {
                    Along::Y
                } else {
                    return None;
                };
                Some(Limit {
                    along,
                    value: *value,
                    label: label.clone(),
                })
            })
            .collect()
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
    /// The sweep parsed, or why this version does not accept it.
    sweep: Result<&'a crate::spec::Sweep, String>,
    /// The catalog's GPU ids in catalog order (the sweep's, else the built-in one).
    gpus: &'a [String],
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
        ..
    } = *c;
    let (kept, fixed) = varying(d);
    let bounds = c
        .sweep
        .as_ref()
        .map(|s| asks::bounds(s))
        .unwrap_or_default();
    let t = Tables {
        digest: d,
        kept,
        schema,
        gpus: c.gpus,
        bounds: &bounds,
    };
    let rule = admission_rule(schema, constraints);
    let mut blocks = Vec::new();

    let primary = objectives[0];
    let mut r = d.ranked.iter().zip(&q.rankings);
    let (compare, ranking) = r.next().expect("the review's ranking");
    blocks.extend(summary(c, d, rule, &fixed));
    blocks.extend(compare_blocks(c, compare, ranking, &t));
    blocks.extend(workload_blocks(curves, d, &t));
    blocks.extend(frontier_charts(c, d, &t));

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

/// The review's table, first in the report: per hardware x ownership (x pricing, x workload),
/// the cheapest admitted configuration, so every option is compared at the same demand and
/// SLOs; then the combinations the run has no such configuration for.
fn compare_blocks(c: &Context, ranked: &Ranked, ranking: &Ranking, t: &Tables) -> Vec<Block> {
    let schema = c.schema;
    let names = schema.review.compare;
    let mut blocks = vec![
        Block::Section {
            id: "compare",
            title: "Cheapest per hardware and ownership".into(),
        },
        Block::Paragraph(format!(
            "One row per {}: its cheapest admitted configuration by {}, so every option is \
             compared under the same requirements (the summary's {}). Best first.",
            t.varying(names).join(" x "),
            ranking.objective,
            requirements(schema),
        )),
    ];
    // Workload by workload (the rankings come in group order, workload columns first), best
    // first within each.
    let workload: Vec<usize> = ranking
        .groups
        .iter()
        .enumerate()
        .filter(|&(_, &c)| schema.columns[c].role == crate::columns::Role::Workload)
        .map(|(k, _)| k)
        .collect();
    let mut best: Vec<(usize, f64, u64)> = Vec::new();
    let mut last: Option<Vec<String>> = None;
    let mut w = 0;
    for (g, l) in ranked {
        let Some(&(id, v)) = l.first() else { continue };
        let key: Vec<String> = workload.iter().map(|&k| g[k].text()).collect();
        if last.as_ref().is_some_and(|k| *k != key) {
            w += 1;
        }
        last = Some(key);
        best.push((w, v, id));
    }
    let sign = if ranking.objective.maximize {
        -1.0
    } else {
        1.0
    };
    best.sort_by(|a, b| {
        a.0.cmp(&b.0)
            .then((sign * a.1).total_cmp(&(sign * b.1)))
            .then(a.2.cmp(&b.2))
    });
    blocks.push(t.table_led(best.iter().map(|p| p.2), names));
    // Hardware x ownership pairs of the grid without a row.
    if let Ok(sweep) = c.sweep {
        let labels = sweep.labels();
        let at = |n: &str| names.iter().position(|x| *x == n);
        let (Some(h), Some(o)) = (at("hardware"), at("ownership")) else {
            return blocks;
        };
        let mut missing = Vec::new();
        for hw in &labels.hardware {
            for own in &labels.ownership {
                let has = ranked
                    .iter()
                    .any(|(g, _)| g[h].text() == *hw && g[o].text() == *own);
                if !has {
                    missing.push(format!("{hw} {own}"));
                }
            }
        }
        if !missing.is_empty() {
            blocks.push(Block::Paragraph(format!(
                "No row: {} (no admitted configuration with a {}).",
                missing.join(", "),
                ranking.objective.name
            )));
        }
    }
    blocks
}

/// The summary: the sweep's description and the run's facts.
fn summary(c: &Context, d: &Digest, rule: String, fixed: &[(String, String)]) -> Vec<Block> {
    let m = c.m;
    let description = c
        .sweep
        .as_ref()
        .ok()
        .map(|s| s.header().description.clone())
        .filter(|d| !d.is_empty());
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
    ];
    match &c.sweep {
        Ok(sweep) => facts.extend(asks::facts(sweep)),
        Err(e) => facts.push((
            "sweep".into(),
            format!("this racksweep does not accept the sweep as run ({e}); its demand, SLOs and [cost] are not listed"),
        )),
    }
    facts.extend([
        ("objectives".into(), describe_objectives(c.objectives)),
        (
            match c.schema.mode {
                crate::columns::Mode::Inference => "constraints besides the demand and SLOs",
                crate::columns::Mode::Training => "constraints",
            }
            .into(),
            describe_constraints(c.constraints),
        ),
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
    ]);
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
    let mut omitted = Vec::new();
    for ((title, x, y, reading), traded) in schema.review.trades.iter().zip(&d.traded) {
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
        let chart = chart(title, [xo, yo], traded, t);
        let caption = format!(
            "{reading} Each line is one hardware's frontier: the configurations no other \
             configuration on that hardware beats on both {} ({}) and {} ({}). The grey band and \
             circled points are the frontier over all hardware. Faint dots are a sample of {} \
             admitted configurations. Hover a point for its configuration.",
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
                        style: t.style(h),
                        frontier: points
                            .iter()
                            .map(|p| Point {
                                shape: t.shape(p.id, p.ties),
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
                        shapes: t.shapes(
                            lines
                                .iter()
                                .flat_map(|(_, p)| p.iter().map(|q| (q.id, q.ties))),
                        ),
                        limits: Vec::new(),
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

fn chart(title: &str, [x, y]: [Objective; 2], traded: &Traded, t: &Tables) -> Chart {
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
            shape: t.shape(p.id, p.ties),
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
            style: t.style(h),
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
        shapes: t.shapes(
            traded
                .per_hardware
                .iter()
                .flat_map(|(_, p)| p.iter().map(|q| (q.id, q.ties))),
        ),
        limits: t.limits(x.name, y.name),
    }
}
