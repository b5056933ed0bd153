//! What a sweep asks beyond its grid, in words for the report's summary: the demand, the SLOs,
//! think time, cached tokens, the sizing's target utilization and the `[cost]` table. Read
//! from the sweep parsed once (`spec::Sweep`); renders nothing.

use crate::format::number;
use crate::perf::demand::Demand;
use crate::perf::sizing::Slo;
use crate::spec::Sweep;

/// The summary's lines for `sweep`: label, then value.
pub fn facts(sweep: &Sweep) -> Vec<(String, String)> {
    let mut facts = Vec::new();
    if let Sweep::Inference(spec) = sweep {
        let workloads = &spec.workloads;
        let demands: Vec<String> = workloads.iter().map(|w| demand(w.demand)).collect();
        facts.push(("demand".to_string(), distinct(demands)));
        let slos: Vec<String> = workloads
            .iter()
            .map(|w| slo(&w.plan.settings.slo))
            .collect();
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
    facts.push(("[cost]".into(), cost(&sweep.header().text)));
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

/// A workload's demand as given (before `demand_scale`).
fn demand(d: Option<Demand>) -> String {
    let Some(d) = d else {
        return "none: each configuration at its own capacity (racks as the grid gives them)"
            .to_string();
    };
    let mut parts = Vec::new();
    if let Some(u) = d.concurrent_users {
        parts.push(format!("{} concurrent users", number(u)));
    }
    if let Some(s) = d.sessions {
        parts.push(format!(
            "sessions arriving at {}/s for {} s each (sized at the {} percentile of concurrency)",
            number(s.arrival_rate_per_s),
            number(s.session_s),
            number(s.percentile)
        ));
    }
    if let Some(r) = d.requests_per_s {
        parts.push(format!("{} requests/s", number(r)));
    }
    if let Some((t, _)) = d.tokens_per_day {
        parts.push(format!("{} tokens/day", number(t)));
    }
    if parts.is_empty() {
        return "none".to_string();
    }
    parts.join(", ")
}

/// The SLOs a configuration must meet, as the sweep sets them.
fn slo(s: &Slo) -> String {
    let mut parts = Vec::new();
    if let Some(t) = s.ttft_p99_s {
        parts.push(format!("TTFT p99 <= {} ms", number(t * 1e3)));
    }
    if let Some(t) = s.tpot_p99_s {
        parts.push(format!("TPOT p99 <= {} ms", number(t * 1e3)));
    }
    if let Some(r) = s.tokens_per_s_per_user {
        parts.push(format!("at least {} tokens/s per user", number(r)));
    }
    if parts.is_empty() {
        return "none".to_string();
    }
    parts.join(", ")
}

/// The sweep's `[cost]` table as written (`key = value` in key order, nested tables
/// flattened with dots), or that the catalog's economics apply.
fn cost(sweep_text: &str) -> String {
    let table = toml::from_str::<toml::Table>(sweep_text)
        .ok()
        .and_then(|t| t.get("cost")?.as_table().cloned());
    let Some(table) = table else {
        return "none: the catalog's economics (data/economics.toml) and GPU prices".to_string();
    };
    let mut lines = Vec::new();
    flatten("", &table, &mut lines);
    lines.join(", ")
}

fn flatten(prefix: &str, table: &toml::Table, out: &mut Vec<String>) {
    for (k, v) in table {
        let key = format!("{prefix}{k}");
        match v {
            toml::Value::Table(t) => flatten(&format!("{key}."), t, out),
            value => out.push(format!("{key} = {value}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demand_slos_and_cost_read_as_written() {
        let d = Demand {
            concurrent_users: Some(50_000.0),
            ..Demand::default()
        };
        assert_eq!(demand(Some(d)), "50,000 concurrent users");
        assert!(demand(None).starts_with("none"));
        let s = Slo {
            ttft_p99_s: Some(2.0),
            tpot_p99_s: None,
            tokens_per_s_per_user: Some(20.0),
        };
        assert_eq!(
            slo(&s),
            "TTFT p99 <= 2,000 ms, at least 20 tokens/s per user"
        );
        assert_eq!(slo(&Slo::default()), "none");
        assert_eq!(
            cost("[cost]\nusd_per_kwh = 0.12\nusd_per_gpu_hour = { h100-sxm = 2 }\n"),
            "usd_per_gpu_hour.h100-sxm = 2, usd_per_kwh = 0.12"
        );
        assert!(cost("[sweep]\nname = \"x\"\n").starts_with("none"));
        assert_eq!(distinct(vec!["a".into(), "b".into(), "a".into()]), "a; b");
    }
}
