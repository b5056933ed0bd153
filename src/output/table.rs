//! Tables as one block, and the exporters that render it (as hyperfine's exporters do): a
//! [`Table`] is columns (header, unit, alignment) and rows of formatted cells, and, where the
//! table is data (`top`, `pareto`), the typed [`Value`] behind each cell. [`Markdown`] writes it
//! as a pipe table (`pareto.md`, `validate --markdown`, `report.md`), [`Text`] as padded plain
//! text for a terminal (`top`, `pareto`, `catalog`, `check`); [`Csv`] and [`Json`] write the
//! values for other programs (`top`/`pareto --format csv|json`). This module formats no values
//! for people: the cells come formatted.

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

/// A cell's value as data: what [`Csv`] and [`Json`] write.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    /// An identifier (`config_id`): a number, never grouped by thousands.
    Id(u64),
    /// A count.
    UInt(u64),
    /// A finite number (a value that is not finite is [`Value::Null`]).
    Float(f64),
    Text(String),
}

impl Value {
    /// `v` as a number, null unless finite (JSON has no NaN or infinity).
    pub fn float(v: f64) -> Value {
        if v.is_finite() {
            Value::Float(v)
        } else {
            Value::Null
        }
    }

    /// The value as a reader reads it in a table (`top` and `pareto`, pareto.md, the report):
    /// numbers as [`crate::format::number`] writes them, booleans `yes`/`no`, null `-`.
    pub fn shown(&self) -> String {
        match self {
            Value::Null => "-".to_string(),
            Value::Bool(b) => if *b { "yes" } else { "no" }.to_string(),
            Value::Id(n) => n.to_string(),
            Value::UInt(n) => crate::format::thousands(*n),
            Value::Float(x) => crate::format::number(*x),
            Value::Text(s) => s.clone(),
        }
    }

    /// The value as data text: numbers in full (Rust's shortest round-trip form), booleans as
    /// `true`/`false`, null as "".
    pub fn data_text(&self) -> String {
        match self {
            Value::Null => String::new(),
            Value::Bool(b) => b.to_string(),
            Value::Id(n) | Value::UInt(n) => n.to_string(),
            Value::Float(x) => x.to_string(),
            Value::Text(s) => s.clone(),
        }
    }
}

/// A table: an optional title, its columns and rows of cells (one per column).
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// A heading above the table (level 3 in Markdown).
    pub title: Option<String>,
    pub columns: Vec<Column>,
    pub rows: Vec<Vec<String>>,
    /// The values the cells show, row by row, where the table is data; empty otherwise (then
    /// [`Csv`] and [`Json`] write the cells as text).
    pub values: Vec<Vec<Value>>,
}

impl Table {
    pub fn new(columns: Vec<Column>, rows: Vec<Vec<String>>) -> Table {
        Table {
            title: None,
            columns,
            rows,
            values: Vec::new(),
        }
    }

    /// The table of `values`, each cell as [`Value::shown`] writes it.
    pub fn of_values(columns: Vec<Column>, values: Vec<Vec<Value>>) -> Table {
        let cells = values
            .iter()
            .map(|row| row.iter().map(Value::shown).collect())
            .collect();
        Table::new(columns, cells).with_values(values)
    }

    /// The same table with the values its cells show (one row of values per row of cells).
    pub fn with_values(self, values: Vec<Vec<Value>>) -> Table {
        debug_assert_eq!(values.len(), self.rows.len());
        Table { values, ..self }
    }

    /// Row `i`'s values: the typed ones, or its cells as text.
    fn row_values(&self, i: usize) -> Vec<Value> {
        match self.values.get(i) {
            Some(v) => v.clone(),
            None => self.rows[i].iter().cloned().map(Value::Text).collect(),
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

/// CSV (RFC 4180 quoting: a field with a comma, quote or line break is quoted, quotes doubled;
/// lines end in `\n`): a header of column names, then each row's values, null as an empty
/// field. No title.
pub struct Csv;

/// JSON: an array of one object per row, keyed by column name in column order, with typed values
/// (numbers, booleans, strings, null), one row per line. No title.
pub struct Json;

impl Exporter for Csv {
    fn table(&self, t: &Table) -> String {
        let mut w = csv::WriterBuilder::new()
            .terminator(csv::Terminator::Any(b'\n'))
            .from_writer(Vec::new());
        let record = |w: &mut csv::Writer<Vec<u8>>, fields: Vec<String>| {
            w.write_record(fields)
                .expect("writing CSV to memory cannot fail");
        };
        record(&mut w, t.columns.iter().map(|c| c.header.clone()).collect());
        for i in 0..t.rows.len() {
            record(
                &mut w,
                t.row_values(i).iter().map(Value::data_text).collect(),
            );
        }
        let bytes = w.into_inner().expect("writing CSV to memory cannot fail");
        String::from_utf8(bytes).expect("CSV of UTF-8 text is UTF-8")
    }
}

impl Exporter for Json {
    fn table(&self, t: &Table) -> String {
        let quote = |s: &str| serde_json::Value::from(s).to_string();
        let keys: Vec<String> = t.columns.iter().map(|c| quote(&c.header)).collect();
        let rows: Vec<String> = (0..t.rows.len())
            .map(|i| {
                let fields: Vec<String> = keys
                    .iter()
                    .zip(t.row_values(i))
                    .map(|(k, v)| {
                        let v = match v {
                            Value::Null => "null".to_string(),
                            Value::Bool(b) => b.to_string(),
                            Value::Id(n) | Value::UInt(n) => n.to_string(),
                            Value::Float(x) => serde_json::Value::from(x).to_string(),
                            Value::Text(s) => quote(&s),
                        };
                        format!("{k}: {v}")
                    })
                    .collect();
                format!("  {{{}}}", fields.join(", "))
            })
            .collect();
        if rows.is_empty() {
            "[]\n".to_string()
        } else {
            format!("[\n{}\n]\n", rows.join(",\n"))
        }
    }
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

    fn data() -> Table {
        Table::new(
            vec![
                Column::left("name"),
                Column::right("n"),
                Column::right("x"),
                Column::left("ok"),
            ],
            vec![
                vec!["a, \"b\"".into(), "1".into(), "0.125".into(), "true".into()],
                vec!["line\nbreak".into(), "-".into(), "-".into(), "-".into()],
            ],
        )
        .with_values(vec![
            vec![
                Value::Text("a, \"b\"".into()),
                Value::UInt(1),
                Value::Float(0.125),
                Value::Bool(true),
            ],
            vec![
                Value::Text("line\nbreak".into()),
                Value::Null,
                Value::float(f64::NAN),
                Value::Null,
            ],
        ])
    }

    #[test]
    fn csv_quotes_what_it_must_and_leaves_nulls_empty() {
        assert_eq!(
            Csv.table(&data()),
            "name,n,x,ok\n\"a, \"\"b\"\"\",1,0.125,true\n\"line\nbreak\",,,\n"
        );
        // A table without values writes its cells.
        assert_eq!(Csv.table(&sample()), "id,n\na|b,1\nbbb,100\n");
    }

    #[test]
    fn json_keeps_types() {
        let text = Json.table(&data());
        assert_eq!(
            text,
            "[\n  {\"name\": \"a, \\\"b\\\"\", \"n\": 1, \"x\": 0.125, \"ok\": true},\n  \
             {\"name\": \"line\\nbreak\", \"n\": null, \"x\": null, \"ok\": null}\n]\n"
        );
        let parsed: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(parsed[0]["x"], serde_json::json!(0.125));
        assert_eq!(
            Json.table(&Table::new(vec![Column::left("a")], vec![])),
            "[]\n"
        );
    }
}
