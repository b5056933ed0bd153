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
}
