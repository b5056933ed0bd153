//! Tables as one block, and the exporters that render it (as hyperfine's exporters do): a
//! [`Table`] is columns (header, unit, alignment) and rows of formatted cells; [`Markdown`]
//! writes it as a pipe table (`pareto.md`, `validate --markdown`, `report.md`), [`Text`] as
//! padded plain text for a terminal (`top`, `pareto`, `catalog`, `check`). This module formats
//! no values: the cells come formatted.

use std::fmt::Write as _;

/// How a column's cells line up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    /// Numbers.
    Right,
}

impl Align {
    /// Right for numbers, left for text.
    pub fn numeric(numeric: bool) -> Align {
        if numeric { Align::Right } else { Align::Left }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub header: String,
    /// Unit, shown after the header in parentheses; "" for none (or when the header says it).
    pub unit: &'static str,
    pub align: Align,
}

impl Column {
    pub fn new(header: impl Into<String>, unit: &'static str, align: Align) -> Column {
        Column {
            header: header.into(),
            unit,
            align,
        }
    }

    pub fn left(header: impl Into<String>) -> Column {
        Column::new(header, "", Align::Left)
    }

    pub fn right(header: impl Into<String>) -> Column {
        Column::new(header, "", Align::Right)
    }

    /// The header with its unit: `ttft_ms (ms)`.
    pub fn title(&self) -> String {
        if self.unit.is_empty() {
            self.header.clone()
        } else {
            format!("{} ({})", self.header, self.unit)
        }
    }
}

/// A table: an optional title, its columns and rows of cells (one per column).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// A heading above the table (level 3 in Markdown).
    pub title: Option<String>,
    pub columns: Vec<Column>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(columns: Vec<Column>, rows: Vec<Vec<String>>) -> Table {
        Table {
            title: None,
            columns,
            rows,
        }
    }

    pub fn titled(self, title: impl Into<String>) -> Table {
        Table {
            title: Some(title.into()),
            ..self
        }
    }

    /// A table whose columns are aligned by their cells: right where every cell reads as a
    /// number (thousands separators allowed) or is empty or "-", left otherwise.
    pub fn aligned_by_cells(header: &[&str], rows: Vec<Vec<String>>) -> Table {
        let columns = header
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let numeric = rows.iter().all(|r| {
                    let c = r[i].replace(',', "");
                    c.is_empty() || c == "-" || c.parse::<f64>().is_ok()
                });
                Column::new(*h, "", Align::numeric(numeric))
            })
            .collect();
        Table::new(columns, rows)
    }
}

/// A format a table is written in.
pub trait Exporter {
    fn table(&self, table: &Table) -> String;
}

/// A Markdown pipe table, `|---:|` over numbers; pipes in cells are escaped.
pub struct Markdown;

/// Plain text for a terminal: columns padded to their widest cell and two spaces apart,
/// numbers right-aligned, no trailing spaces.
pub struct Text;

impl Exporter for Markdown {
    fn table(&self, t: &Table) -> String {
        let cell = |text: &str| text.replace('|', "\\|");
        let mut s = String::new();
        if let Some(title) = &t.title {
            let _ = writeln!(s, "### {title}\n");
        }
        let header: Vec<String> = t.columns.iter().map(|c| cell(&c.title())).collect();
        let _ = writeln!(s, "| {} |", header.join(" | "));
        let rule: Vec<&str> = t
            .columns
            .iter()
            .map(|c| match c.align {
                Align::Left => "---",
                Align::Right => "---:",
            })
            .collect();
        let _ = writeln!(s, "|{}|", rule.join("|"));
        for row in &t.rows {
            let cells: Vec<String> = row.iter().map(|c| cell(c)).collect();
            let _ = writeln!(s, "| {} |", cells.join(" | "));
        }
        s
    }
}

impl Exporter for Text {
    fn table(&self, t: &Table) -> String {
        let header: Vec<String> = t.columns.iter().map(Column::title).collect();
        let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
        for row in &t.rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let line = |cells: &[String]| {
            let parts: Vec<String> = cells
                .iter()
                .zip(&widths)
                .zip(&t.columns)
                .map(|((c, &w), column)| match column.align {
                    Align::Left => format!("{c:<w$}"),
                    Align::Right => format!("{c:>w$}"),
                })
                .collect();
            parts.join("  ").trim_end().to_string()
        };
        let mut s = String::new();
        if let Some(title) = &t.title {
            let _ = writeln!(s, "{title}\n");
        }
        s.push_str(&line(&header));
        s.push('\n');
        for row in &t.rows {
            s.push_str(&line(row));
            s.push('\n');
        }
        s
    }
}

/// Rows under a header as plain text, aligned by their cells ([`Table::aligned_by_cells`]).
pub fn render(header: &[&str], rows: &[Vec<String>]) -> String {
    Text.table(&Table::aligned_by_cells(header, rows.to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Table {
        Table::new(
            vec![Column::left("id"), Column::new("n", "GPUs", Align::Right)],
            vec![
                vec!["a|b".into(), "1".into()],
                vec!["bbb".into(), "100".into()],
            ],
        )
    }

    #[test]
    fn text_aligns_text_left_and_numbers_right() {
        let t = render(
            &["id", "n"],
            &[
                vec!["a".into(), "1".into()],
                vec!["bbb".into(), "100".into()],
            ],
        );
        assert_eq!(t, "id     n\na      1\nbbb  100\n");
        assert_eq!(
            Text.table(&sample()),
            "id   n (GPUs)\na|b         1\nbbb       100\n"
        );
    }

    #[test]
    fn markdown_marks_numbers_and_escapes_pipes() {
        assert_eq!(
            Markdown.table(&sample().titled("Sizes")),
            "### Sizes\n\n| id | n (GPUs) |\n|---|---:|\n| a\\|b | 1 |\n| bbb | 100 |\n"
        );
    }
}
