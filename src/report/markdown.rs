//! `report.md`: the same report as Markdown, for pasting into planning documents. Charts are
//! linked as the SVG files written next to it; tables are written by the Markdown exporter.

use std::fmt::Write as _;

use super::document::{Block, Document};
use crate::output::table::{Exporter as _, Markdown};

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
            Block::Table(t) => s.push_str(&Markdown.table(t)),
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
