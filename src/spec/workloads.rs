//! The workload axes of `[grid]` (`model`, `input_tokens`, `output_tokens`, `think_s`,
//! `cached_tokens`, a demand axis and `demand_scale`): each value checked under its `grid.` key,
//! then every combination checked as a whole `[workload]` table (the same passes a sweep without
//! workload axes goes through), into one [`Workload`] each, in axis order (model slowest,
//! `demand_scale` fastest). The grid's `workload` axis indexes them.

use toml::Spanned;

use crate::catalog::Catalog;
use crate::error::UserError;
use crate::limits;
use crate::perf::demand::Demand;
use crate::perf::sizing::Slo;
use crate::perf::{Phase, Plan, WorkloadValues};

use super::Loader;
use super::plan::WorkloadShape;
use super::raw::{Floats, Names, RawCost, RawDemand, RawGrid, RawWorkload};

/// One combination of the workload axes, checked: what its performance context and its rows'
/// workload columns are built from (`Spec::context_of`).
#[derive(Debug, Clone)]
pub struct Workload {
    /// Index into `catalog.models`.
    pub model: usize,
    pub input_tokens: f64,
    pub output_tokens: f64,
    /// Sizing, SLO and cost settings.
    pub plan: Plan,
    /// The schedule (one phase without `[[workload.phase]]`).
    pub phases: Vec<Phase>,
    /// The demand as given, before `demand_scale` (`None` without `[workload.demand]`).
    pub demand: Option<Demand>,
    pub demand_scale: f64,
    /// How `racksweep check` and the grid's `workload` axis name it.
    pub label: String,
}

impl Workload {
    /// The demand modes in words (`50,000 concurrent users`; the strictest wins when several
    /// are set), scaled by `demand_scale`; `None` without `[workload.demand]`.
    pub fn demand_words(&self) -> Option<String> {
        use crate::format::number;
        let d = self.demand?;
        let mut modes = Vec::new();
        if let Some(u) = d.concurrent_users {
            modes.push(format!("{} concurrent users", number(u)));
        }
        if let Some(s) = d.sessions {
            modes.push(format!(
                "sessions arriving at {}/s for {} min each, sized at their p{} ({} concurrent)",
                number(s.arrival_rate_per_s),
                number(s.session_s / 60.0),
                number(s.percentile * 100.0),
                number(s.concurrent())
            ));
        }
        if let Some(r) = d.requests_per_s {
            modes.push(format!("{} requests/s", number(r)));
        }
        if let Some((t, traffic)) = d.tokens_per_day {
            modes.push(format!(
                "{} tokens/day, active {} % of the time, peaks {}x the active mean",
                number(t),
                number(traffic.active_ratio * 100.0),
                number(traffic.burst_factor)
            ));
        }
        let mut words = modes.join(" or ");
        if modes.len() > 1 {
            words.push_str(" (the strictest)");
        }
        if self.demand_scale != 1.0 {
            words.push_str(&format!(" x {} (demand_scale)", self.demand_scale));
        }
        Some(words)
    }

    /// How the demand behaves, in words: think time, cached tokens, target utilization and the
    /// schedule (`think time 30 s, 4,096 cached tokens per session, target utilization 75 %`).
    pub fn demand_settings_words(&self) -> String {
        use crate::format::number;
        let s = &self.plan.settings;
        let mut words = format!(
            "think time {} s, {} cached tokens per session, target utilization {} %",
            number(s.think_s),
            number(s.cached_tokens),
            number(s.target_utilization * 100.0)
        );
        if self.phases.len() > 1 {
            words.push_str(&format!(", {} phases", self.phases.len()));
        }
        words
    }

    /// The SLOs of `[sweep]` by their keys (`ttft_p99_ms <= 2000, tokens_per_s_per_user >=
    /// 20`), or `none`.
    pub fn slo_words(&self) -> String {
        let slo = &self.plan.settings.slo;
        // As the sweep wrote them: milliseconds back from seconds, to a nanosecond.
        let ms = |s: f64| (s * 1e9).round() / 1e6;
        let mut each = Vec::new();
        if let Some(t) = slo.ttft_p99_s {
            each.push(format!("ttft_p99_ms <= {}", ms(t)));
        }
        if let Some(t) = slo.tpot_p99_s {
            each.push(format!("tpot_p99_ms <= {}", ms(t)));
        }
        if let Some(r) = slo.tokens_per_s_per_user {
            each.push(format!("tokens_per_s_per_user >= {r}"));
        }
        if each.is_empty() {
            "none".to_string()
        } else {
            each.join(", ")
        }
    }

    /// The rows' workload columns; `id` is its index, `model_key` its model's label key.
    pub fn columns(&self, id: u32, model_key: u16) -> WorkloadValues {
        let d = self.demand.unwrap_or_default();
        WorkloadValues {
            id,
            model: model_key,
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            think_s: self.plan.settings.think_s,
            cached_tokens: self.plan.settings.cached_tokens,
            given_concurrent_users: d.concurrent_users.unwrap_or(f64::NAN),
            given_requests_per_s: d.requests_per_s.unwrap_or(f64::NAN),
            given_tokens_per_day: d.tokens_per_day.map_or(f64::NAN, |(t, _)| t),
            demand_scale: self.demand_scale,
        }
    }
}

/// The demand keys a `[grid]` demand axis may sweep (the `[workload.demand]` keys of one value).
const DEMAND_AXES: [&str; 3] = ["concurrent_users", "requests_per_s", "tokens_per_day"];

/// The workload axes of a `[grid]` table, taken out of it.
pub(super) struct WorkloadAxes {
    model: Option<Names>,
    input_tokens: Option<Floats>,
    output_tokens: Option<Floats>,
    think_s: Option<Floats>,
    cached_tokens: Option<Floats>,
    /// The demand axis: its key (one of [`DEMAND_AXES`]) and values.
    demand: Option<(&'static str, Floats)>,
    demand_scale: Option<Floats>,
}

impl WorkloadAxes {
    /// Whether the grid sweeps any workload axis.
    fn any(&self) -> bool {
        self.model.is_some()
            || self.input_tokens.is_some()
            || self.output_tokens.is_some()
            || self.think_s.is_some()
            || self.cached_tokens.is_some()
            || self.demand.is_some()
            || self.demand_scale.is_some()
    }
}

impl Loader<'_> {
    /// Takes the workload axes out of `g`; at most one demand axis.
    pub(super) fn workload_axes(&self, g: &mut RawGrid) -> Result<WorkloadAxes, UserError> {
        let mut demand: Option<(&'static str, Floats)> = None;
        for (key, axis) in DEMAND_AXES.into_iter().zip([
            g.concurrent_users.take(),
            g.requests_per_s.take(),
            g.tokens_per_day.take(),
        ]) {
            let Some(axis) = axis else { continue };
            if let Some((other, _)) = &demand {
                return Err(self
                    .at(axis.span(), format!("grid.{key}: the grid already sweeps grid.{other}"))
                    .with_hint("a sweep has one demand: sweep one of concurrent_users, requests_per_s or tokens_per_day (and demand_scale)"));
            }
            demand = Some((key, axis));
        }
        Ok(WorkloadAxes {
            model: g.model.take(),
            input_tokens: g.input_tokens.take(),
            output_tokens: g.output_tokens.take(),
            think_s: g.think_s.take(),
            cached_tokens: g.cached_tokens.take(),
            demand,
            demand_scale: g.demand_scale.take(),
        })
    }

    /// Every combination of the workload axes over `raw`, checked. Without workload axes, the
    /// one `[workload]` table.
    pub(super) fn workloads(
        &self,
        catalog: &mut Catalog,
        raw: &RawWorkload,
        axes: &WorkloadAxes,
        slo: Slo,
        cost: &Option<RawCost>,
    ) -> Result<Vec<Workload>, UserError> {
        // Each value on its own, under its grid key.
        let positive = |x: f64| x > 0.0;
        let models = match &axes.model {
            None => vec![raw.model.clone()],
            Some(names) => {
                self.distinct(
                    names
                        .get_ref()
                        .iter()
                        .map(|n| (n.span(), n.get_ref().clone())),
                    "grid.model",
                )?;
                for n in names.get_ref() {
                    self.model(catalog, n, "grid.model")?;
                }
                self.non_empty(names.get_ref(), names.span(), "grid.model")?;
                names.get_ref().clone()
            }
        };
        let list = |axis: &Option<Floats>,
                    key: &str,
                    default: Option<Spanned<f64>>,
                    ok: &dyn Fn(f64) -> bool,
                    rule: &str|
         -> Result<Vec<Option<Spanned<f64>>>, UserError> {
            match axis {
                None => Ok(vec![default]),
                Some(values) => {
                    self.non_empty(values.get_ref(), values.span(), key)?;
                    for v in values.get_ref() {
                        self.number(v, key, ok, rule)?;
                    }
                    self.distinct(
                        values
                            .get_ref()
                            .iter()
                            .map(|v| (v.span(), v.get_ref().to_bits())),
                        key,
                    )?;
                    Ok(values.get_ref().iter().cloned().map(Some).collect())
                }
            }
        };
        let tokens = |axis: &Option<Floats>, key: &str, default: &Spanned<f64>| {
            if let Some(values) = axis {
                for v in values.get_ref() {
                    self.tokens(v, key)?;
                }
            }
            list(
                axis,
                key,
                Some(default.clone()),
                &|x| x >= 1.0,
                "is less than one token",
            )
        };
        let input = tokens(&axes.input_tokens, "grid.input_tokens", &raw.input_tokens)?;
        let output = tokens(
            &axes.output_tokens,
            "grid.output_tokens",
            &raw.output_tokens,
        )?;
        let think = list(
            &axes.think_s,
            "grid.think_s",
            raw.think_s.clone(),
            &|x| (0.0..=limits::MAX_SECONDS).contains(&x),
            "must be between 0 and a year (31536000 s)",
        )?;
        let cached = list(
            &axes.cached_tokens,
            "grid.cached_tokens",
            raw.cached_tokens.clone(),
            &|x| x >= 0.0,
            "must be zero or positive",
        )?;
        let demand = match &axes.demand {
            None => vec![None],
            Some((key, values)) => list(
                &Some(values.clone()),
                &format!("grid.{key}"),
                None,
                &positive,
                "must be positive",
            )?,
        };
        let scale = list(
            &axes.demand_scale,
            "grid.demand_scale",
            None,
            &|x| x > 0.0 && x.is_normal(),
            "must be positive",
        )?;
        if let Some(s) = &axes.demand_scale
            && raw.demand.is_none()
            && axes.demand.is_none()
        {
            return Err(self
                .at(s.span(), "grid.demand_scale: scales [workload.demand], which this sweep does not set")
                .with_hint("add a [workload.demand] table (e.g. concurrent_users = 1000), or a demand axis"));
        }

        let sweeps = axes.any();
        let mut out = Vec::new();
        for model in &models {
            for isl in &input {
                for osl in &output {
                    for think_s in &think {
                        for cached in &cached {
                            for d in &demand {
                                for s in &scale {
                                    let mut w = raw.clone();
                                    w.model = model.clone();
                                    w.input_tokens = isl.clone().expect("a default");
                                    w.output_tokens = osl.clone().expect("a default");
                                    w.think_s = think_s.clone();
                                    w.cached_tokens = cached.clone();
                                    if let (Some((key, _)), Some(v)) = (&axes.demand, d) {
                                        w.demand = Some(self.demand_with(&w.demand, key, v)?);
                                    }
                                    let scale = s.as_ref().map_or(1.0, |s| *s.get_ref());
                                    let name = label(&w, axes, scale);
                                    let one = self
                                        .workload(catalog, &w, scale, slo, cost, name)
                                        .map_err(|mut e| {
                                            if sweeps {
                                                e.message = format!(
                                                    "{} (in the workload combination {})",
                                                    e.message,
                                                    label(&w, axes, scale)
                                                );
                                            }
                                            e
                                        })?;
                                    out.push(one);
                                }
                            }
                        }
                    }
                }
            }
        }
        Ok(out)
    }

    /// `[workload.demand]` with the demand axis's `key` set to `v`: the table as written (which
    /// must give the demand by that key, or not at all), or a new one holding only `v`.
    fn demand_with(
        &self,
        demand: &Option<Spanned<RawDemand>>,
        key: &str,
        v: &Spanned<f64>,
    ) -> Result<Spanned<RawDemand>, UserError> {
        let mut d = match demand {
            Some(d) => d.clone(),
            None => Spanned::new(
                v.span(),
                RawDemand {
                    concurrent_users: None,
                    arrival_rate_per_s: None,
                    session_minutes: None,
                    percentile: None,
                    requests_per_s: None,
                    tokens_per_day: None,
                    traffic: None,
                    target_utilization: None,
                },
            ),
        };
        let span = d.span();
        let r = d.get_mut();
        let given = [
            ("concurrent_users", r.concurrent_users.is_some()),
            ("arrival_rate_per_s", r.arrival_rate_per_s.is_some()),
            ("requests_per_s", r.requests_per_s.is_some()),
            ("tokens_per_day", r.tokens_per_day.is_some()),
        ];
        if let Some((other, _)) = given.iter().find(|&&(k, set)| set && k != key) {
            return Err(self
                .at(
                    span,
                    format!(
                        "workload.demand: sets {other}, while grid.{key} sweeps the demand as {key}"
                    ),
                )
                .with_hint(format!(
                    "remove {other} from [workload.demand], or sweep grid.{other}"
                )));
        }
        let slot = match key {
            "concurrent_users" => &mut r.concurrent_users,
            "requests_per_s" => &mut r.requests_per_s,
            _ => &mut r.tokens_per_day,
        };
        *slot = Some(v.clone());
        Ok(d)
    }

    /// One `[workload]` table checked (passes 3 and 4 of `Loader::spec`).
    fn workload(
        &self,
        catalog: &mut Catalog,
        w: &RawWorkload,
        demand_scale: f64,
        slo: Slo,
        cost: &Option<RawCost>,
        label: String,
    ) -> Result<Workload, UserError> {
        let model = self.model(catalog, &w.model, "workload.model")?;
        let input_tokens = self.tokens(&w.input_tokens, "workload.input_tokens")?;
        let output_tokens = self.tokens(&w.output_tokens, "workload.output_tokens")?;
        let max_context = f64::from(catalog.models[model].max_context);
        if input_tokens + output_tokens > max_context {
            return Err(self
                .at(w.input_tokens.span(), format!("workload: input_tokens + output_tokens = {} exceeds the context of {} ({max_context})", input_tokens + output_tokens, catalog.models[model].id))
                .with_hint("shorten the workload or pick a model with a longer max_context"));
        }
        let shape = WorkloadShape {
            input_tokens,
            output_tokens,
            max_context,
            demand_scale,
            cached_tokens: &w.cached_tokens,
            think_s: &w.think_s,
            input_tokens_cv: &w.input_tokens_cv,
            output_tokens_cv: &w.output_tokens_cv,
            demand: &w.demand,
            phases: &w.phase,
        };
        let (plan, phases, demand) = self.plan(&shape, slo, catalog, cost)?;
        Ok(Workload {
            model,
            input_tokens,
            output_tokens,
            plan,
            phases,
            demand,
            demand_scale,
            label,
        })
    }

    fn non_empty<T>(
        &self,
        values: &[T],
        span: std::ops::Range<usize>,
        key: &str,
    ) -> Result<(), UserError> {
        if values.is_empty() {
            return Err(self
                .at(span, format!("{key}: the list is empty"))
                .with_hint("give at least one value, or remove the key for the [workload] value"));
        }
        Ok(())
    }

    /// No value twice (a repeated workload would repeat its rows and its frontier).
    fn distinct<T: PartialEq>(
        &self,
        values: impl Iterator<Item = (std::ops::Range<usize>, T)>,
        key: &str,
    ) -> Result<(), UserError> {
        let mut seen: Vec<T> = Vec::new();
        for (span, v) in values {
            if seen.contains(&v) {
                return Err(self.at(span, format!("{key}: a value appears twice")));
            }
            seen.push(v);
        }
        Ok(())
    }
}

/// A combination as `racksweep check` and `pareto.md` name it: its model and lengths, then the
/// values of the other axes the grid sweeps.
fn label(w: &RawWorkload, axes: &WorkloadAxes, scale: f64) -> String {
    let num = |v: &Option<Spanned<f64>>| v.as_ref().map_or(0.0, |v| *v.get_ref());
    let mut parts = vec![format!(
        "{}, {} in / {} out",
        w.model.get_ref(),
        limits::number(*w.input_tokens.get_ref()),
        limits::number(*w.output_tokens.get_ref())
    )];
    if axes.think_s.is_some() {
        parts.push(format!("think {} s", limits::number(num(&w.think_s))));
    }
    if axes.cached_tokens.is_some() {
        parts.push(format!("{} cached", limits::number(num(&w.cached_tokens))));
    }
    if let (Some((key, _)), Some(d)) = (&axes.demand, &w.demand) {
        let d = d.get_ref();
        let v = match *key {
            "concurrent_users" => num(&d.concurrent_users),
            "requests_per_s" => num(&d.requests_per_s),
            _ => num(&d.tokens_per_day),
        };
        parts.push(format!("{key} {}", limits::number(v)));
    }
    if axes.demand_scale.is_some() {
        parts.push(format!("demand x {}", limits::number(scale)));
    }
    parts.join(", ")
}
