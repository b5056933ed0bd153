//! What the cluster must serve: the demand modes of `[workload.demand]` reduced to the two
//! quantities sizing needs, concurrent users and a peak request rate, per schedule phase.
//! Formulas: docs/model.md, "Demand".

use super::queue::poisson_quantile;

/// Seconds in a day.
const DAY_S: f64 = 86_400.0;

/// How a day's tokens are spread over time (InferenceAtlas methodology, "Traffic Patterns").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Traffic {
    /// Share of the day with traffic.
    pub active_ratio: f64,
    /// Peak over the mean rate while active.
    pub burst_factor: f64,
}

impl Traffic {
    /// Uniform load around the clock.
    pub const STEADY: Traffic = Traffic {
        active_ratio: 1.0,
        burst_factor: 1.0,
    };
    /// 40 hours a week (40 / 168 = 0.238), no bursts.
    pub const BUSINESS_HOURS: Traffic = Traffic {
        active_ratio: 40.0 / 168.0,
        burst_factor: 1.0,
    };
    /// Traffic 40 % of the time, peaks three times the active mean.
    pub const BURSTY: Traffic = Traffic {
        active_ratio: 0.4,
        burst_factor: 3.0,
    };

    pub fn named(name: &str) -> Option<Traffic> {
        match name {
            "steady" => Some(Traffic::STEADY),
            "business-hours" => Some(Traffic::BUSINESS_HOURS),
            "bursty" => Some(Traffic::BURSTY),
            _ => None,
        }
    }

    pub const NAMES: [&'static str; 3] = ["steady", "business-hours", "bursty"];

    /// Peak over day-average rate: `burst_factor / active_ratio`.
    pub fn peak_over_mean(&self) -> f64 {
        self.burst_factor / self.active_ratio
    }
}

/// Sessions arriving as a Poisson process with exponentially distributed lengths: the number
/// active at once is Poisson with mean `rate x length` (M/M/infinity; Kleinrock 1975, vol. 1,
/// section 2.8), sized to a percentile.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sessions {
    pub arrival_rate_per_s: f64,
    pub session_s: f64,
    pub percentile: f64,
}

impl Sessions {
    pub fn concurrent(&self) -> f64 {
        poisson_quantile(self.arrival_rate_per_s * self.session_s, self.percentile)
    }
}

/// The demand modes a sweep sets; the strictest wins.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Demand {
    pub concurrent_users: Option<f64>,
    pub sessions: Option<Sessions>,
    pub requests_per_s: Option<f64>,
    /// Input plus output tokens per day, and their spread over the day.
    pub tokens_per_day: Option<(f64, Traffic)>,
}

/// Demand default percentile for session concurrency.
pub const DEFAULT_PERCENTILE: f64 = 0.95;

/// Target utilization when the sweep sets none: InferenceAtlas's 75 % rule, leaving 25 %
/// headroom for bursts.
pub const DEFAULT_TARGET_UTILIZATION: f64 = 0.75;

/// One phase's demand, reduced: concurrent users (streaming sessions) and a peak request rate.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Load {
    /// Concurrent users at the sizing percentile; 0 when no user-based mode is set.
    pub users: f64,
    /// Peak requests per second from the rate-based modes; 0 when none is set.
    pub requests_per_s: f64,
    /// Mean requests per second over the day, for per-token billing; 0 when rate-free.
    pub mean_requests_per_s: f64,
    /// Share of the day with traffic (autoscaling pays for these hours only).
    pub active_ratio: f64,
}

impl Demand {
    pub fn is_set(&self) -> bool {
        self.concurrent_users.is_some()
            || self.sessions.is_some()
            || self.requests_per_s.is_some()
            || self.tokens_per_day.is_some()
    }

    /// The demand scaled by `load_scale` for requests of `tokens_per_request` (input + output).
    pub fn load(&self, load_scale: f64, tokens_per_request: f64) -> Load {
        let users = self
            .concurrent_users
            .into_iter()
            .chain(self.sessions.map(|s| s.concurrent()))
            .fold(0.0_f64, f64::max);
        let mut peak = self.requests_per_s.unwrap_or(0.0);
        let mut mean = peak;
        let mut active_ratio = 1.0;
        if let Some((tokens, traffic)) = self.tokens_per_day {
            let day_mean = tokens / DAY_S / tokens_per_request;
            peak = peak.max(day_mean * traffic.peak_over_mean());
            mean = mean.max(day_mean);
            active_ratio = traffic.active_ratio;
        }
        Load {
            users: (users * load_scale).ceil(),
            requests_per_s: peak * load_scale,
            mean_requests_per_s: mean * load_scale,
            active_ratio,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// InferenceAtlas's worked example: 100 tokens/s on average, business hours, peaks at
    /// 100 / 0.238 = 420 tokens/s.
    #[test]
    fn business_hours_peak() {
        let d = Demand {
            tokens_per_day: Some((100.0 * DAY_S, Traffic::BUSINESS_HOURS)),
            ..Demand::default()
        };
        let l = d.load(1.0, 1.0);
        assert!((l.requests_per_s - 420.0).abs() < 1e-9);
        assert!((l.mean_requests_per_s - 100.0).abs() < 1e-9);
    }

    /// 2 sessions/s lasting 5 minutes: 600 active on average; the 95th percentile of
    /// Poisson(600) is 641 (600 + 1.645 sqrt(600) = 640.3, rounded up).
    #[test]
    fn session_percentile() {
        let s = Sessions {
            arrival_rate_per_s: 2.0,
            session_s: 300.0,
            percentile: 0.95,
        };
        assert_eq!(s.concurrent(), 641.0);
    }

    /// The strictest mode wins, and scaling applies to all.
    #[test]
    fn strictest_mode_wins() {
        let d = Demand {
            concurrent_users: Some(100.0),
            requests_per_s: Some(5.0),
            ..Demand::default()
        };
        let l = d.load(2.0, 1000.0);
        assert_eq!(l.users, 200.0);
        assert_eq!(l.requests_per_s, 10.0);
    }
}
