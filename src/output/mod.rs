//! One writer per output format: Parquet tables, the Markdown frontier, the JSON manifest, and
//! the table block every tabular text output is rendered from (`table`: Markdown and plain text).

pub mod columnar;
pub mod manifest;
pub mod markdown;
pub mod parquet;
pub mod run_dir;
pub mod table;
