//! Queueing primitives, numerically stable for thousands of servers: Poisson quantiles (the
//! number of requests in service of an M/G/infinity system is Poisson with mean lambda * E[T];
//! Kleinrock 1975, "Queueing Systems", vol. 1, section 2.8) and the Erlang C probability of
//! waiting in an M/M/c queue, computed through the Erlang B recurrence
//! `B(k) = a B(k-1) / (k + a B(k-1))`, which never overflows (Jagerman 1974, "Some properties of
//! the Erlang loss function", Bell System Technical Journal 53(3)).

/// Smallest `k` with `P(N <= k) >= p` for `N ~ Poisson(mean)`.
pub fn poisson_quantile(mean: f64, p: f64) -> f64 {
    if mean <= 0.0 {
        return 0.0;
    }
    if mean > 500.0 {
        // Cornish-Fisher expansion of the Poisson quantile (skewness 1/sqrt(mean)); error well
        // under one count at this size.
        let z = standard_normal_quantile(p);
        return (mean + z * mean.sqrt() + (z * z - 1.0) / 6.0 - 0.5)
            .ceil()
            .max(0.0);
    }
    let mut pmf = (-mean).exp();
    let mut cdf = pmf;
    let mut k = 0.0;
    while cdf < p {
        k += 1.0;
        pmf *= mean / k;
        cdf += pmf;
        if pmf < 1e-300 && k > mean {
            break;
        }
    }
    k
}

/// Quantile of the standard normal distribution (Acklam's rational approximation, relative error
/// below 1.2e-9).
pub fn standard_normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969683028665376e1,
        2.209460984245205e2,
        -2.759285104469687e2,
        1.38357751867269e2,
        -3.066479806614716e1,
        2.506628277459239,
    ];
    const B: [f64; 5] = [
        -5.447609879822406e1,
        1.615858368580409e2,
        -1.556989798598866e2,
        6.680131188771972e1,
        -1.328068155288572e1,
    ];
    const C: [f64; 6] = [
        -7.784894002430293e-3,
        -3.223964580411365e-1,
        -2.400758277161838,
        -2.549732539343734,
        4.374664141464968,
        2.938163982698783,
    ];
    const D: [f64; 4] = [
        7.784695709041462e-3,
        3.224671290700398e-1,
        2.445134137142996,
        3.754408661907416,
    ];
    let p = p.clamp(1e-300, 1.0 - 1e-16);
    let low = 0.02425;
    if p < low {
        let q = (-2.0 * p.ln()).sqrt();
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    } else if p <= 1.0 - low {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    } else {
        -standard_normal_quantile(1.0 - p)
    }
}

/// Offered load (Erlangs) above which [`erlang_c`] takes the many-server limit instead of the
/// recurrence, whose `10 sqrt(a)` steps would be 10^4 here and grow without bound with the load.
const MANY_SERVERS_ERLANGS: f64 = 1e6;

/// Probability that an arrival waits in an M/M/c queue with offered load `a = lambda / mu`
/// (Erlang C); 1 when `a >= c`. Cost is bounded whatever `c` and `a`: when the Poisson bound
/// `B(c, a) <= 2 P(N = c)` (valid for `a <= c - 1`, where `P(N <= c) >= 1/2`) puts C below
/// 1e-16 it returns 0; up to [`MANY_SERVERS_ERLANGS`] the recurrence starts `10 sqrt(a)` below
/// `a` from the overload asymptote `B(k) ~ 1 - k / a`, an error the recurrence damps by about
/// `e^-50` before it reaches `c` (each step below `a` multiplies it by about `k / a`); above it
/// the many-server limit of Erlang B, `sqrt(a) B(c, a) -> phi(beta) / Phi(beta)` with
/// `beta = (c - a) / sqrt(a)` (Jagerman 1974, "Some properties of the Erlang loss function",
/// Bell Syst. Tech. J. 53(3); the Halfin-Whitt regime, Halfin and Whitt 1981, "Heavy-traffic
/// limits for queues with many exponential servers", Oper. Res. 29(3)), whose relative error
/// falls as `1 / sqrt(a)`: within 0.4 % of the recurrence at 1.5 million Erlangs where C is
/// above 1e-3 (test).
pub fn erlang_c(servers: f64, offered: f64) -> f64 {
    if offered >= servers {
        return 1.0;
    }
    if offered <= 0.0 {
        return 0.0;
    }
    let c = servers.floor().max(1.0);
    let rho = offered / servers;
    if offered <= c - 1.0 && c >= 50.0 {
        let ln_pmf = c * offered.ln() - offered - ln_factorial(c);
        let bound = 2.0 * ln_pmf.exp() / (1.0 - rho);
        if bound < 1e-16 {
            return 0.0;
        }
    }
    if offered > MANY_SERVERS_ERLANGS {
        let beta = (c - offered) / offered.sqrt();
        let b = (normal_pdf(beta) / (offered.sqrt() * normal_cdf(beta))).min(1.0);
        return b / (1.0 - rho + rho * b);
    }
    let k0 = (offered - 10.0 * offered.sqrt() - 10.0).floor().max(0.0);
    let mut b = if k0 > 0.0 { 1.0 - k0 / offered } else { 1.0 };
    let mut k = k0 + 1.0;
    while k <= c {
        b = offered * b / (k + offered * b);
        k += 1.0;
    }
    b / (1.0 - rho + rho * b)
}

/// The standard normal density.
fn normal_pdf(x: f64) -> f64 {
    (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt()
}

/// The standard normal distribution function, `erfc(-x / sqrt 2) / 2`, with `erfc` by the
/// Chebyshev fit `erfcc` of Press et al., "Numerical Recipes in C" (2nd ed., 1992, section
/// 6.2): relative error below 1.2e-7 everywhere.
fn normal_cdf(x: f64) -> f64 {
    let z = x.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.5 * z);
    const C: [f64; 10] = [
        -1.265_512_23,
        1.000_023_68,
        0.374_091_96,
        0.096_784_18,
        -0.186_288_06,
        0.278_868_07,
        -1.135_203_98,
        1.488_515_87,
        -0.822_152_23,
        0.170_872_77,
    ];
    let poly = C.iter().rev().fold(0.0, |acc, &c| acc * t + c);
    let upper = 0.5 * t * (-z * z + poly).exp();
    if x >= 0.0 { 1.0 - upper } else { upper }
}

/// `ln(n!)` by Stirling's series (error below 1e-13 for n >= 50; Abramowitz & Stegun 6.1.41),
/// exact summation below.
fn ln_factorial(n: f64) -> f64 {
    if n < 50.0 {
        return (2..=n as u64).map(|k| (k as f64).ln()).sum();
    }
    let inv = 1.0 / n;
    let inv2 = inv * inv;
    n * n.ln() - n
        + 0.5 * (2.0 * std::f64::consts::PI * n).ln()
        + inv * (1.0 / 12.0 - inv2 * (1.0 / 360.0 - inv2 / 1260.0))
}

/// A multi-server queue: `servers` in parallel, offered load `offered = lambda x service`
/// (Erlangs), mean service time `service_s`, and variability `(ca^2 + cs^2) / 2` from the squared
/// coefficients of variation of inter-arrival and service times (1 for M/M/c).
///
/// G/G/c waits follow the Allen-Cunneen approximation (Allen 1990, "Probability, Statistics and
/// Queueing Theory", 2nd ed., section 6.4): the probability of waiting is Erlang C, and the wait
/// of those who wait is exponential with its M/M/c mean scaled by the variability, so
/// `Wq(G/G/c) = Wq(M/M/c) (ca^2 + cs^2) / 2`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Queue {
    pub servers: f64,
    pub offered: f64,
    pub service_s: f64,
    pub variability: f64,
    /// Erlang C probability of waiting.
    pub wait_probability: f64,
}

impl Queue {
    pub fn new(servers: f64, offered: f64, service_s: f64, variability: f64) -> Queue {
        Queue {
            servers,
            offered,
            service_s,
            variability,
            wait_probability: erlang_c(servers, offered),
        }
    }

    pub fn is_stable(&self) -> bool {
        self.offered < self.servers
    }

    /// Mean wait of those who wait.
    fn conditional_mean_s(&self) -> f64 {
        self.variability * self.service_s / (self.servers - self.offered)
    }

    pub fn wait_mean_s(&self) -> f64 {
        if !self.is_stable() {
            return f64::INFINITY;
        }
        self.wait_probability * self.conditional_mean_s()
    }

    /// `p`-quantile of the wait: zero with probability `1 - C`, else exponential.
    pub fn wait_quantile_s(&self, p: f64) -> f64 {
        if !self.is_stable() {
            return f64::INFINITY;
        }
        if self.wait_probability <= 1.0 - p {
            return 0.0;
        }
        (self.wait_probability / (1.0 - p)).ln() * self.conditional_mean_s()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Poisson(10): P(N <= 17) = 0.9857, P(N <= 18) = 0.9928 (standard tables).
    #[test]
    fn poisson_quantiles_match_tables() {
        assert_eq!(poisson_quantile(10.0, 0.99), 18.0);
        assert_eq!(poisson_quantile(10.0, 0.5), 10.0);
        assert_eq!(poisson_quantile(1.0, 0.99), 4.0);
        // Large means: within one count of the normal approximation.
        let q = poisson_quantile(10_000.0, 0.99);
        assert!((q - (10_000.0 + 2.3263 * 100.0)).abs() <= 2.0, "{q}");
    }

    #[test]
    fn normal_quantiles() {
        assert!((standard_normal_quantile(0.99) - 2.326_347_874).abs() < 1e-8);
        assert!((standard_normal_quantile(0.5)).abs() < 1e-12);
        assert!((standard_normal_quantile(0.01) + 2.326_347_874).abs() < 1e-8);
    }

    /// Erlang C against published values: c = 2, a = 1 gives 1/3; c = 10, a = 8 gives 0.4092
    /// (e.g. the Erlang C tables in Gross & Harris, "Fundamentals of Queueing Theory").
    #[test]
    fn erlang_c_matches_tables() {
        assert!((erlang_c(2.0, 1.0) - 1.0 / 3.0).abs() < 1e-12);
        assert!((erlang_c(10.0, 8.0) - 0.409_2).abs() < 5e-4);
        assert_eq!(erlang_c(4.0, 4.0), 1.0);
        // Thousands of servers without overflow.
        let big = erlang_c(5000.0, 4900.0);
        assert!(big > 0.0 && big < 1.0, "{big}");
    }

    /// The bounded-cost paths agree with the full Erlang B recurrence run from zero.
    #[test]
    fn erlang_c_shortcuts_match_the_full_recurrence() {
        fn full(c: f64, a: f64) -> f64 {
            let mut b = 1.0;
            for k in 1..=c as u64 {
                b = a * b / (k as f64 + a * b);
            }
            let rho = a / c;
            b / (1.0 - rho + rho * b)
        }
        for (c, a) in [
            (60.0, 55.0),
            (500.0, 480.0),
            (5000.0, 4900.0),
            (20_000.0, 19_800.0),
            (20_000.0, 15_000.0),
            (200.0, 150.0),
        ] {
            let (fast, exact) = (erlang_c(c, a), full(c, a));
            assert!(
                (fast - exact).abs() <= 1e-12 + 1e-9 * exact,
                "c={c} a={a}: {fast} vs {exact}"
            );
        }
        // 20,000 servers at 75 % load: waiting is practically impossible.
        assert_eq!(erlang_c(20_000.0, 15_000.0), 0.0);
        // Beyond a million Erlangs, the many-server limit: within 0.4 % where waiting is
        // likelier than 1e-3, within 1e-8 absolute beyond.
        let a: f64 = 1.5e6;
        for beta in [0.01, 0.1, 0.5, 1.0, 2.0, 3.0, 5.0] {
            let c = (a + beta * a.sqrt()).floor();
            let (fast, exact) = (erlang_c(c, a), full(c, a));
            let ok = if exact > 1e-3 {
                (fast / exact - 1.0).abs() < 4e-3
            } else {
                (fast - exact).abs() < 1e-8
            };
            assert!(ok, "beta={beta}: {fast} vs {exact}");
        }
        // The normal distribution function at hand-checked points (Abramowitz & Stegun 26.2).
        for (x, p) in [
            (0.0, 0.5),
            (1.0, 0.841_344_746),
            (-2.0, 0.022_750_132),
            (3.0, 0.998_650_102),
        ] {
            assert!((normal_cdf(x) - p).abs() < 2e-8, "{x}");
        }
        // Stirling matches exact summation at the switch.
        let exact: f64 = (2..=60u64).map(|k| (k as f64).ln()).sum();
        assert!((ln_factorial(60.0) - exact).abs() < 1e-10);
    }

    /// Allen-Cunneen: with exponential arrivals and deterministic service (ca^2 = 1, cs^2 = 0)
    /// an M/D/1 queue waits half as long as M/M/1, which is exact for M/D/1 (Pollaczek-Khinchine).
    #[test]
    fn allen_cunneen_halves_md1() {
        let mm1 = Queue::new(1.0, 0.8, 1.0, 1.0);
        let md1 = Queue::new(1.0, 0.8, 1.0, 0.5);
        // M/M/1 at rho = 0.8: Wq = rho / (mu - lambda) = 4 s; M/D/1: 2 s.
        assert!((mm1.wait_mean_s() - 4.0).abs() < 1e-12);
        assert!((md1.wait_mean_s() - 2.0).abs() < 1e-12);
        assert!(md1.wait_quantile_s(0.99) < mm1.wait_quantile_s(0.99));
        assert!(
            Queue::new(2.0, 2.0, 1.0, 1.0)
                .wait_quantile_s(0.5)
                .is_infinite()
        );
    }

    #[test]
    fn waiting_quantiles() {
        let mmc = |servers: f64, offered: f64| Queue::new(servers, offered, 1.0, 1.0);
        // M/M/1 at rho = 0.5, service 1 s: P(W > t) = 0.5 e^{-0.5 t}; p99 = 2 ln(50) s.
        let t = mmc(1.0, 0.5).wait_quantile_s(0.99);
        assert!((t - 2.0 * 50f64.ln()).abs() < 1e-9, "{t}");
        assert_eq!(mmc(100.0, 10.0).wait_quantile_s(0.99), 0.0);
        // M/M/1 at rho = 0.5: mean wait = rho / (mu - lambda) = 1 s.
        assert!((mmc(1.0, 0.5).wait_mean_s() - 1.0).abs() < 1e-12);
    }
}
