//! Numbers as a reviewer reads them, for every text output (tables, reports, summaries).

/// `1234567` as `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A number as a reviewer reads it: thousands separators above 1000, about three significant
/// digits below.
pub fn number(v: f64) -> String {
    let a = v.abs();
    if a >= 1000.0 {
        let rounded = v.round();
        let s = thousands(rounded.abs() as u64);
        if rounded < 0.0 { format!("-{s}") } else { s }
    } else if a >= 100.0 || v == v.trunc() {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// A size in bytes with an SI prefix and about three significant digits (`950 B`, `3.26 MB`,
/// `1.2 TB`).
pub fn bytes(b: f64) -> String {
    const PREFIXES: [&str; 6] = ["B", "kB", "MB", "GB", "TB", "PB"];
    let mut v = b.max(0.0);
    let mut i = 0;
    while v >= 1000.0 && i + 1 < PREFIXES.len() {
        v /= 1000.0;
        i += 1;
    }
    format!("{} {}", number(v), PREFIXES[i])
}

/// A duration in seconds as `h:mm:ss` (`0:00:07`, `27:46:40`); rounded to whole seconds.
pub fn clock(seconds: f64) -> String {
    let s = if seconds.is_finite() {
        seconds.max(0.0).round() as u64
    } else {
        0
    };
    format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1234567), "1,234,567");
    }

    #[test]
    fn numbers_read_well() {
        assert_eq!(number(1234567.8), "1,234,568");
        assert_eq!(number(512.0), "512");
        assert_eq!(number(8.0), "8");
        assert_eq!(number(123.456), "123");
        assert_eq!(number(45.678), "45.7");
        assert_eq!(number(3.456), "3.46");
        assert_eq!(number(0.01234), "0.012");
    }

    #[test]
    fn byte_sizes() {
        assert_eq!(bytes(950.0), "950 B");
        assert_eq!(bytes(97_800.0), "97.8 kB");
        assert_eq!(bytes(326_209_785.0), "326 MB");
        assert_eq!(bytes(1.2e12), "1.20 TB");
    }

    #[test]
    fn clocks() {
        assert_eq!(clock(0.0), "0:00:00");
        assert_eq!(clock(7.4), "0:00:07");
        assert_eq!(clock(3599.6), "1:00:00");
        assert_eq!(clock(100_000.0), "27:46:40");
        assert_eq!(clock(-1.0), "0:00:00");
    }
}
