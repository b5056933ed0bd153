//! One writer per output format: Parquet tables (`parquet`, whose pages `column_chunk` encodes
//! with `encoding`'s codecs), the Markdown frontier, the JSON manifest, and
//! the table block every tabular output is rendered from (`table`: Markdown, plain text, CSV,
//! JSON), and a frontier's tie groups collapsed for reading (`ties`).

pub mod column_chunk;
pub mod columnar;
pub mod encoding;
pub mod manifest;
pub mod markdown;
pub mod parquet;
pub mod run_dir;
pub mod table;
pub mod ties;
