//! `report.md`: the same report as Markdown, for pasting into planning documents. Charts are
//! linked as the SVG files written next to it.

use std::fmt::Write as _;

use super::document::{Block, Document};

/// A table cell: pipes escaped so they cannot split the cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

pub fn render(doc: &Document) -> String {
    let mut s = format!("# {}\n", doc.title);
    for block in &doc.blocks {
        s.push('\n');
        match block {
            Block::Section { title, .. } => {
                let _ = writeln!(s, "## {title}");
            }
            Block::Subheading(t) => {
                let _ = writeln!(s, "### {t}");
            }
            Block::Paragraph(t) => {
                let _ = writeln!(s, "{t}");
            }
            Block::Facts(facts) => {
                for (k, v) in facts {
                    let _ = writeln!(s, "- **{k}**: {v}");
                }
            }
            Block::Table {
                header,
                rows,
                numeric,
            } => {
                let cells: Vec<String> = header.iter().map(|h| cell(h)).collect();
                let _ = writeln!(s, "| {} |", cells.join(" | "));
                let rule: Vec<&str> = numeric
                    .iter()
                    .map(|&n| if n { "---:" } else { "---" })
                    .collect();
                let _ = writeln!(s, "|{}|", rule.join("|"));
                for row in rows {
                    let cells: Vec<String> = row.iter().map(|c| cell(c)).collect();
                    let _ = writeln!(s, "| {} |", cells.join(" | "));
                }
            }
            Block::Figure {
                file,
                chart,
                caption,
            } => {
                let _ = writeln!(s, "![{}]({file})\n\n{caption}", chart.title);
            }
            Block::Code(text) => {
                let _ = writeln!(s, "```toml\n{}\n```", text.trim_end());
            }
        }
    }
    s
}
