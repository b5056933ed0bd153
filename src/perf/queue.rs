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

/// Probability that an arrival waits in an M/M/c queue with offered load `a = lambda / mu`
/// (Erlang C); 1 when `a >= c`.
pub fn erlang_c(servers: f64, offered: f64) -> f64 {
    if offered >= servers {
        return 1.0;
    }
    if offered <= 0.0 {
        return 0.0;
    }
    let c = servers.floor().max(1.0) as u64;
    let mut b = 1.0;
    for k in 1..=c {
        b = offered * b / (k as f64 + offered * b);
    }
    let rho = offered / servers;
    b / (1.0 - rho + rho * b)
}

/// Mean waiting time in M/M/c: `C(c, a) * service / (c - a)`.
pub fn mmc_wait_mean_s(servers: f64, offered: f64, service_s: f64) -> f64 {
    if offered >= servers {
        return f64::INFINITY;
    }
    erlang_c(servers, offered) * service_s / (servers - offered)
}

/// `p`-quantile of the waiting time in M/M/c with `servers`, offered load `offered` and mean
/// service time `service_s`: waiting is zero with probability `1 - C`, else exponential with rate
/// `(c - a) / service`.
pub fn mmc_wait_quantile_s(servers: f64, offered: f64, service_s: f64, p: f64) -> f64 {
    if offered >= servers {
        return f64::INFINITY;
    }
    let wait_probability = erlang_c(servers, offered);
    if wait_probability <= 1.0 - p {
        return 0.0;
    }
    (wait_probability / (1.0 - p)).ln() * service_s / (servers - offered)
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

    #[test]
    fn waiting_quantiles() {
        // M/M/1 at rho = 0.5, service 1 s: P(W > t) = 0.5 e^{-0.5 t}; p99 = 2 ln(50) s.
        let t = mmc_wait_quantile_s(1.0, 0.5, 1.0, 0.99);
        assert!((t - 2.0 * 50f64.ln()).abs() < 1e-9, "{t}");
        assert_eq!(mmc_wait_quantile_s(100.0, 10.0, 1.0, 0.99), 0.0);
        // M/M/1 at rho = 0.5: mean wait = rho / (mu - lambda) = 1 s.
        assert!((mmc_wait_mean_s(1.0, 0.5, 1.0) - 1.0).abs() < 1e-12);
    }
}
