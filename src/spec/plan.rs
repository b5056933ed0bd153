//! Validates the sizing, schedule, SLO and cost parts of a sweep file: `[workload.demand]`,
//! `[[workload.phase]]`, the request-shape keys of `[workload]`, the SLO keys of `[sweep]` and
//! `[cost]`. Produces the performance model's [`Plan`] and schedule [`Phase`]s.

use toml::Spanned;

use crate::catalog::{Catalog, CostSet};
use crate::error::UserError;
use crate::limits;
use crate::perf::demand::{self, Demand, Sessions, Traffic};
use crate::perf::sizing::{Settings, Slo, variability};
use crate::perf::{Phase, Plan};

use super::Loader;
use super::raw::{RawCost, RawDemand, RawPhase, RawTraffic};

/// Coefficient of variation of prompt and output lengths when the sweep gives none: 1, the
/// exponential (memoryless) case, for which G/G/c reduces to M/M/c.
pub const DEFAULT_LENGTH_CV: f64 = 1.0;

/// Schedule phases a sweep may define (each multiplies the work per configuration).
pub const MAX_PHASES: usize = 16;

/// The `[workload]` keys this module reads.
pub struct WorkloadShape<'a> {
    pub input_tokens: f64,
    pub output_tokens: f64,
    pub max_context: f64,
    /// Multiplies the demand's load in every phase (`grid.demand_scale`; 1 without it).
    pub demand_scale: f64,
    pub cached_tokens: &'a Option<Spanned<f64>>,
    pub think_s: &'a Option<Spanned<f64>>,
    pub input_tokens_cv: &'a Option<Spanned<f64>>,
    pub output_tokens_cv: &'a Option<Spanned<f64>>,
    pub demand: &'a Option<Spanned<RawDemand>>,
    pub phases: &'a [Spanned<RawPhase>],
}

impl Loader<'_> {
    /// A number that must satisfy `ok`, else an error naming the key and stating `rule`.
    pub(super) fn number(
        &self,
        v: &Spanned<f64>,
        key: &str,
        ok: impl Fn(f64) -> bool,
        rule: &str,
    ) -> Result<f64, UserError> {
        let x = *v.get_ref();
        if x.is_finite() && ok(x) {
            Ok(x)
        } else {
            Err(self.at(v.span(), format!("{key}: {} {rule}", limits::number(x))))
        }
    }

    /// An optional positive number.
    fn positive(&self, v: &Option<Spanned<f64>>, key: &str) -> Result<Option<f64>, UserError> {
        v.as_ref()
            .map(|v| self.number(v, key, |x| x > 0.0, "must be positive"))
            .transpose()
    }

    fn optional(
        &self,
        v: &Option<Spanned<f64>>,
        key: &str,
        default: f64,
        ok: impl Fn(f64) -> bool,
        rule: &str,
    ) -> Result<f64, UserError> {
        match v {
            None => Ok(default),
            Some(v) => self.number(v, key, ok, rule),
        }
    }

    pub(super) fn slo(
        &self,
        ttft: &Option<Spanned<f64>>,
        tpot: &Option<Spanned<f64>>,
        user: &Option<Spanned<f64>>,
    ) -> Result<Slo, UserError> {
        let latency_s = |v: &Option<Spanned<f64>>, key: &str| {
            v.as_ref()
                .map(|v| {
                    self.number(
                        v,
                        key,
                        |ms| ms > 0.0 && ms / 1e3 <= limits::MAX_SECONDS,
                        "must be positive and at most a year (31536000000 ms)",
                    )
                })
                .transpose()
                .map(|ms| ms.map(|ms| ms / 1e3))
        };
        Ok(Slo {
            ttft_p99_s: latency_s(ttft, "sweep.ttft_p99_ms")?,
            tpot_p99_s: latency_s(tpot, "sweep.tpot_p99_ms")?,
            tokens_per_s_per_user: self.positive(user, "sweep.tokens_per_s_per_user")?,
        })
    }

    fn demand(&self, d: &Spanned<RawDemand>) -> Result<(Demand, f64), UserError> {
        let RawDemand {
            concurrent_users,
            arrival_rate_per_s,
            session_minutes,
            percentile,
            requests_per_s,
            tokens_per_day,
            traffic,
            target_utilization,
        } = d.get_ref();
        let sessions = match (arrival_rate_per_s, session_minutes) {
            (Some(rate), Some(minutes)) => Some(Sessions {
                arrival_rate_per_s: self.number(
                    rate,
                    "workload.demand.arrival_rate_per_s",
                    |x| x > 0.0,
                    "must be positive",
                )?,
                session_s: 60.0
                    * self.number(
                        minutes,
                        "workload.demand.session_minutes",
                        |x| x > 0.0 && x * 60.0 <= limits::MAX_SECONDS,
                        "must be positive and at most a year (525600 minutes)",
                    )?,
                percentile: self.optional(
                    percentile,
                    "workload.demand.percentile",
                    demand::DEFAULT_PERCENTILE,
                    |p| p > 0.0 && p < 1.0,
                    "must be in (0, 1), e.g. 0.95",
                )?,
            }),
            (Some(v), None) | (None, Some(v)) => {
                return Err(self
                    .at(v.span(), "workload.demand: arrival_rate_per_s and session_minutes go together")
                    .with_hint("sessions arrive at arrival_rate_per_s and last session_minutes on average; set both"));
            }
            (None, None) => {
                if let Some(p) = percentile {
                    return Err(self
                        .at(p.span(), "workload.demand.percentile: only applies to arrival_rate_per_s + session_minutes")
                        .with_hint("remove it, or set the session arrival rate and length"));
                }
                None
            }
        };
        let traffic_pattern = match traffic {
            None => Traffic::STEADY,
            Some(t) => {
                if tokens_per_day.is_none() {
                    return Err(self
                        .at(
                            t.span(),
                            "workload.demand.traffic: only applies to tokens_per_day",
                        )
                        .with_hint("set tokens_per_day, or remove traffic"));
                }
                match t.get_ref() {
                    RawTraffic::Named(name) => Traffic::named(name).ok_or_else(|| {
                        self.at(
                            t.span(),
                            format!(
                                "workload.demand.traffic: unknown pattern \"{}\"",
                                limits::quoted(name)
                            ),
                        )
                        .with_hint(format!(
                            "use one of {}, or {{ active_ratio = 0.5, burst_factor = 2.0 }}",
                            Traffic::NAMES.map(|n| format!("\"{n}\"")).join(", ")
                        ))
                    })?,
                    RawTraffic::Custom(c) => Traffic {
                        active_ratio: self.number(
                            &c.active_ratio,
                            "workload.demand.traffic.active_ratio",
                            |x| x > 0.0 && x <= 1.0,
                            "must be in (0, 1]",
                        )?,
                        burst_factor: self.number(
                            &c.burst_factor,
                            "workload.demand.traffic.burst_factor",
                            |x| x >= 1.0,
                            "must be at least 1",
                        )?,
                    },
                }
            }
        };
        let demand = Demand {
            concurrent_users: self
                .positive(concurrent_users, "workload.demand.concurrent_users")?,
            sessions,
            requests_per_s: self.positive(requests_per_s, "workload.demand.requests_per_s")?,
            tokens_per_day: self
                .positive(tokens_per_day, "workload.demand.tokens_per_day")?
                .map(|t| (t, traffic_pattern)),
        };
        if !demand.is_set() {
            return Err(self
                .at(d.span(), "workload.demand: no demand given")
                .with_hint("set concurrent_users, arrival_rate_per_s + session_minutes, requests_per_s or tokens_per_day"));
        }
        let target = self.optional(
            target_utilization,
            "workload.demand.target_utilization",
            demand::DEFAULT_TARGET_UTILIZATION,
            |x| x > 0.0 && x <= 1.0,
            "must be in (0, 1]",
        )?;
        Ok((demand, target))
    }

    /// The plan, the schedule and the demand as given (`None` when `[workload.demand]` is
    /// absent).
    pub(super) fn plan(
        &self,
        w: &WorkloadShape,
        slo: Slo,
        catalog: &mut Catalog,
        cost: &Option<RawCost>,
    ) -> Result<(Plan, Vec<Phase>, Option<Demand>), UserError> {
        let (demand, target_utilization) = match w.demand {
            Some(d) => {
                let (demand, target) = self.demand(d)?;
                (Some(demand), target)
            }
            None => (None, demand::DEFAULT_TARGET_UTILIZATION),
        };
        let non_negative = |x: f64| x >= 0.0;
        let think_s = self.optional(
            w.think_s,
            "workload.think_s",
            0.0,
            |x| (0.0..=limits::MAX_SECONDS).contains(&x),
            "must be between 0 and a year (31536000 s)",
        )?;
        let cached_tokens = self.optional(
            w.cached_tokens,
            "workload.cached_tokens",
            0.0,
            non_negative,
            "must be zero or positive",
        )?;
        if let Some(c) = w.cached_tokens
            && cached_tokens > 0.0
            && think_s == 0.0
        {
            return Err(self
                .at(c.span(), "workload.cached_tokens: set, but think_s is 0, so no session is ever idle between turns")
                .with_hint("set workload.think_s, the seconds a user reads between answers"));
        }
        if let Some(c) = w.cached_tokens
            && cached_tokens + w.input_tokens + w.output_tokens > w.max_context
        {
            return Err(self.at(
                c.span(),
                format!(
                    "workload.cached_tokens: {cached_tokens} cached + input + output exceeds the model's context ({})",
                    w.max_context
                ),
            ));
        }
        // Lengths lie between 0 and the model's context `C`, so their variance is at most
        // `mean x (C - mean)` (Bhatia and Davis 2000, "A Better Bound on the Variance", Amer.
        // Math. Monthly 107(4)): a larger cv describes no distribution of lengths.
        let cv = |v: &Option<Spanned<f64>>, key: &str, mean: f64| {
            let most = ((w.max_context - mean).max(0.0) / mean).sqrt();
            self.optional(
                v,
                key,
                DEFAULT_LENGTH_CV,
                |cv| non_negative(cv) && cv <= most,
                &format!(
                    "must be between 0 and {:.2}: lengths of mean {} within the model's {}-token context spread at most that much (Bhatia-Davis bound)",
                    (most * 100.0).floor() / 100.0,
                    limits::number(mean),
                    limits::number(w.max_context)
                ),
            )
        };
        let (input_cv, output_cv) = (
            cv(
                w.input_tokens_cv,
                "workload.input_tokens_cv",
                w.input_tokens,
            )?,
            cv(
                w.output_tokens_cv,
                "workload.output_tokens_cv",
                w.output_tokens,
            )?,
        );
        let settings = Settings {
            target_utilization,
            think_s,
            prefill_variability: variability(input_cv),
            decode_variability: variability(output_cv),
            cached_tokens,
            slo,
            prompt_quantiles: None,
            adp_balance: None,
            scheduler_steps: 1,
        };
        let demand_or_default = demand.unwrap_or_default();
        let phases = self.phases(w, &demand_or_default)?;
        let api_usd_per_mtok = self.costs(catalog, cost)?;
        let plan = Plan {
            demand: demand.is_some(),
            settings,
            economics: catalog.economics,
            ownership: Vec::new(),
            api_usd_per_mtok,
        };
        Ok((plan, phases, demand))
    }

    fn phases(&self, w: &WorkloadShape, demand: &Demand) -> Result<Vec<Phase>, UserError> {
        if w.phases.is_empty() {
            return Ok(vec![Phase {
                weight: 1.0,
                load: demand.load(w.demand_scale, w.input_tokens + w.output_tokens),
                input_tokens: w.input_tokens,
                output_tokens: w.output_tokens,
            }]);
        }
        if w.phases.len() > MAX_PHASES {
            return Err(self.at(
                w.phases[MAX_PHASES].span(),
                format!("workload.phase: more than {MAX_PHASES} phases"),
            ));
        }
        let mut phases = Vec::new();
        let mut by_hours = None;
        let mut names = std::collections::HashSet::new();
        for (i, ph) in w.phases.iter().enumerate() {
            let key = format!("workload.phase[{i}]");
            let RawPhase {
                name,
                weight,
                duration_h,
                load_scale,
                input_tokens,
                output_tokens,
            } = ph.get_ref();
            if !names.insert(name.get_ref().clone()) {
                return Err(self.at(
                    name.span(),
                    format!(
                        "{key}.name: \"{}\" appears twice",
                        limits::quoted(name.get_ref())
                    ),
                ));
            }
            let (share, hours) = match (weight, duration_h) {
                (Some(v), None) => (
                    self.number(
                        v,
                        &format!("{key}.weight"),
                        |x| x > 0.0 && x.is_normal(),
                        "must be positive (and not subnormal)",
                    )?,
                    false,
                ),
                (None, Some(v)) => (
                    self.number(
                        v,
                        &format!("{key}.duration_h"),
                        |x| x > 0.0 && x.is_normal() && x * 3600.0 <= limits::MAX_SECONDS,
                        "must be positive and at most a year (8760 hours)",
                    )?,
                    true,
                ),
                _ => {
                    return Err(self
                        .at(
                            ph.span(),
                            format!("{key}: needs exactly one of weight or duration_h"),
                        )
                        .with_hint("e.g. weight = 0.3, or duration_h = 8"));
                }
            };
            if *by_hours.get_or_insert(hours) != hours {
                return Err(self
                    .at(
                        ph.span(),
                        format!("{key}: phases mix weight and duration_h"),
                    )
                    .with_hint("give every phase a weight, or every phase a duration_h"));
            }
            let scale = self.optional(
                load_scale,
                &format!("{key}.load_scale"),
                1.0,
                |x| x > 0.0,
                "must be positive",
            )?;
            let isl = match input_tokens {
                Some(v) => self.tokens(v, &format!("{key}.input_tokens"))?,
                None => w.input_tokens,
            };
            let osl = match output_tokens {
                Some(v) => self.tokens(v, &format!("{key}.output_tokens"))?,
                None => w.output_tokens,
            };
            if isl + osl > w.max_context {
                return Err(self.at(
                    ph.span(),
                    format!(
                        "{key}: input_tokens + output_tokens = {} exceeds the model's context ({})",
                        isl + osl,
                        w.max_context
                    ),
                ));
            }
            phases.push(Phase {
                weight: share,
                load: demand.load(w.demand_scale * scale, isl + osl),
                input_tokens: isl,
                output_tokens: osl,
            });
        }
        // Scaled by the largest first, so that the sum of any finite shares is finite.
        let largest = phases.iter().map(|p| p.weight).fold(0.0, f64::max);
        let total: f64 = phases.iter().map(|p| p.weight / largest).sum();
        for p in &mut phases {
            p.weight = p.weight / largest / total;
        }
        Ok(phases)
    }

    /// Applies `[cost]` to the catalog; returns the API prices.
    pub(super) fn costs(
        &self,
        catalog: &mut Catalog,
        cost: &Option<RawCost>,
    ) -> Result<Option<(f64, f64)>, UserError> {
        let Some(cost) = cost else {
            return Ok(None);
        };
        // Every workload applies the same table; the first records what it replaced.
        let record = catalog.overrides.cost.is_empty();
        let mut sets = Vec::new();
        for (key, v) in cost.economics() {
            if let Some(v) = v {
                let field = catalog
                    .economics
                    .field_mut(key)
                    .expect("RawCost keys are Economics keys");
                sets.push(CostSet {
                    key: key.to_string(),
                    value: *v.get_ref(),
                    was: Some(*field),
                });
                *field = *v.get_ref();
                catalog
                    .economics
                    .check()
                    .map_err(|e| self.at(v.span(), format!("cost.{e}")))?;
            }
        }
        for (table, prices) in [
            ("usd_per_gpu_hour", &cost.usd_per_gpu_hour),
            ("capex_usd_per_gpu", &cost.capex_usd_per_gpu),
        ] {
            let Some(prices) = prices else { continue };
            for (id, v) in prices.get_ref() {
                let key = format!("cost.{table}.{}", limits::quoted(id));
                let Some(g) = catalog.gpu_index(id) else {
                    let ids = catalog.gpus.iter().map(|g| g.id.as_str());
                    let hint = match crate::suggest::closest(id, ids) {
                        Some(s) => format!("did you mean \"{s}\"? keys are GPU ids"),
                        None => "keys are GPU ids (racksweep catalog gpus)".to_string(),
                    };
                    return Err(self
                        .at(
                            v.span(),
                            format!("{key}: unknown GPU \"{}\"", limits::quoted(id)),
                        )
                        .with_hint(hint));
                };
                let x = self.number(v, &key, |x| x > 0.0, "must be positive")?;
                let gpu = &mut catalog.gpus[g];
                let field = match table {
                    "usd_per_gpu_hour" => &mut gpu.usd_per_gpu_hour,
                    _ => &mut gpu.capex_usd_per_gpu,
                };
                sets.push(CostSet {
                    key: format!("{table}.{id}"),
                    value: x,
                    was: *field,
                });
                *field = Some(x);
            }
        }
        let api = match (&cost.usd_per_mtok_api_input, &cost.usd_per_mtok_api_output) {
            (Some(i), Some(o)) => Some((
                self.number(
                    i,
                    "cost.usd_per_mtok_api_input",
                    |x| x >= 0.0,
                    "must be zero or positive",
                )?,
                self.number(
                    o,
                    "cost.usd_per_mtok_api_output",
                    |x| x >= 0.0,
                    "must be zero or positive",
                )?,
            )),
            (Some(v), None) | (None, Some(v)) => {
                return Err(self
                    .at(
                        v.span(),
                        "cost: usd_per_mtok_api_input and usd_per_mtok_api_output go together",
                    )
                    .with_hint("set both API prices (USD per million input and output tokens)"));
            }
            (None, None) => None,
        };
        if let Some((input, output)) = api {
            for (key, value) in [
                ("usd_per_mtok_api_input", input),
                ("usd_per_mtok_api_output", output),
            ] {
                sets.push(CostSet {
                    key: key.to_string(),
                    value,
                    was: None,
                });
            }
        }
        if record {
            catalog.overrides.cost = sets;
        }
        Ok(api)
    }
}
