//! What a sweep asks beyond its grid, in words for the report's summary: the demand, the SLOs,
//! think time, cached tokens, the sizing's target utilization and the `[cost]` table. Read
//! from the sweep parsed once (`spec::Sweep`), in the words `racksweep check` uses
//! (`Workload::demand_words`, `Workload::slo_words`, `Catalog::cost_words`); renders nothing.

use crate::format::number;
use crate::spec::Sweep;

/// The summary's lines for `sweep`: label, then value.
pub fn facts(sweep: &Sweep) -> Vec<(String, String)> {
    let mut facts = Vec::new();
    if let Sweep::Inference(spec) = sweep {
        let workloads = &spec.workloads;
        let demands: Vec<String> = workloads
            .iter()
            .map(|w| {
                w.demand_words().unwrap_or_else(|| {
                    "none: each configuration at its own capacity (racks as the grid gives them)"
                        .to_string()
                })
            })
            .collect();
        facts.push(("demand".to_string(), distinct(demands)));
        let slos: Vec<String> = workloads.iter().map(|w| w.slo_words()).collect();
        facts.push(("SLOs".into(), distinct(slos)));
        if spec.demand() {
            let each = |f: fn(&crate::perf::sizing::Settings) -> String| {
                distinct(workloads.iter().map(|w| f(&w.plan.settings)).collect())
            };
            facts.push((
                "think time".into(),
                each(|s| {
                    format!(
                        "{} s between a user's answer and next request",
                        number(s.think_s)
                    )
                }),
            ));
            facts.push((
                "cached tokens".into(),
                each(|s| {
                    format!(
                        "{} per session, kept between turns",
                        number(s.cached_tokens)
                    )
                }),
            ));
            facts.push((
                "target utilization".into(),
                each(|s| {
                    format!(
                        "{} (the sizing's headroom for bursts)",
                        number(s.target_utilization)
                    )
                }),
            ));
        }
    }
    let cost = sweep.header().catalog.cost_words().unwrap_or_else(|| {
        "none: the catalog's economics (data/economics.toml) and GPU prices".to_string()
    });
    facts.push(("[cost]".into(), cost));
    facts
}

/// The sweep's SLOs and user demand as bounds on the columns the report draws: the column, the
/// bound in the column's unit, and a label. A user's rate at load
/// (`tokens_per_s_per_user_at_load`) is at least the rate at the p99 TPOT that the SLO bounds,
/// so the SLO bounds it too; a demand of concurrent users (times `demand_scale`) bounds the
/// users a sized cluster supports.
pub fn bounds(sweep: &Sweep) -> Vec<(&'static str, f64, String)> {
    let Sweep::Inference(spec) = sweep else {
        return Vec::new();
    };
    let mut bounds: Vec<(&'static str, f64, String)> = Vec::new();
    for w in &spec.workloads {
        let s = &w.plan.settings.slo;
        let each = [
            s.ttft_p99_s.map(|t| {
                (
                    "ttft_p99_ms",
                    t * 1e3,
                    format!("SLO: TTFT p99 <= {} ms", number(t * 1e3)),
                )
            }),
            s.tpot_p99_s.map(|t| {
                (
                    "tpot_p99_ms",
                    t * 1e3,
                    format!("SLO: TPOT p99 <= {} ms", number(t * 1e3)),
                )
            }),
            s.tokens_per_s_per_user.map(|r| {
                (
                    "tokens_per_s_per_user_at_load",
                    r,
                    format!("SLO: >= {} tokens/s per user", number(r)),
                )
            }),
            w.demand.and_then(|d| d.concurrent_users).map(|u| {
                let users = u * w.demand_scale;
                (
                    "users_supported",
                    users,
                    format!("demand: {} users", number(users)),
                )
            }),
        ];
        for b in each.into_iter().flatten() {
            if !bounds.contains(&b) {
                bounds.push(b);
            }
        }
    }
    bounds
}

/// The values, once each, in order of first appearance ("a; b" when workloads differ).
fn distinct(values: Vec<String>) -> String {
    let mut once: Vec<String> = Vec::new();
    for v in values {
        if !once.contains(&v) {
            once.push(v);
        }
    }
    once.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinct_keeps_first_appearances() {
        assert_eq!(distinct(vec!["a".into(), "b".into(), "a".into()]), "a; b");
    }
}
