//! Plain-text tables with aligned columns, for `catalog`, `check`, `top` and `pareto` on stdout.

/// Renders rows under a header, columns padded to their widest cell; numbers right-aligned.
pub fn render(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let numeric: Vec<bool> = (0..header.len())
        .map(|i| {
            rows.iter().all(|r| {
                let c = r[i].replace(',', "");
                c.is_empty() || c == "-" || c.parse::<f64>().is_ok()
            })
        })
        .collect();
    let line = |cells: Vec<&str>| {
        let parts: Vec<String> = cells
            .iter()
            .zip(&widths)
            .zip(&numeric)
            .map(|((c, &w), &right)| {
                if right {
                    format!("{c:>w$}")
                } else {
                    format!("{c:<w$}")
                }
            })
            .collect();
        parts.join("  ").trim_end().to_string()
    };
    let mut out = line(header.to_vec());
    out.push('\n');
    for row in rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn aligns_text_left_and_numbers_right() {
        let t = super::render(
            &["id", "n"],
            &[
                vec!["a".into(), "1".into()],
                vec!["bbb".into(), "100".into()],
            ],
        );
        assert_eq!(t, "id     n\na      1\nbbb  100\n");
    }
}
