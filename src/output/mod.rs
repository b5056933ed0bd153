//! One writer per output format: Parquet tables, the Markdown frontier, the JSON manifest, plain-text
//! tables.

pub mod columnar;
pub mod manifest;
pub mod markdown;
pub mod parquet;
pub mod run_dir;
pub mod table;
