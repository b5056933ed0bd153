//! A report as a list of blocks, rendered to HTML (`html`) and Markdown (`markdown`) alike, so
//! the two files always say the same thing.

use super::svg::Chart;
use crate::output::table::Table;

#[derive(Debug, Clone)]
pub enum Block {
    /// A section heading (level 2) with the anchor it is linked by.
    Section {
        id: &'static str,
        title: String,
    },
    /// A smaller heading inside a section.
    Subheading(String),
    Paragraph(String),
    /// Label: value lines.
    Facts(Vec<(String, String)>),
    /// A table, the block every tabular output shares (`output::table`).
    Table(Table),
    /// A chart; `file` is the name of its SVG file next to report.md.
    Figure {
        file: String,
        chart: Chart,
        caption: String,
    },
    /// Preformatted text (the sweep file).
    Code(String),
}

#[derive(Debug, Clone)]
pub struct Document {
    pub title: String,
    pub blocks: Vec<Block>,
}
