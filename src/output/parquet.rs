//! Writes rows to Parquet with arrow-rs: one row group per chunk, its columns encoded in parallel
//! (rayon over `ArrowColumnWriter`s), appended in order. Column types come from the schema table in
//! `columns`: dictionary-encoded labels, u64/u32 integers, nullable f64 metrics (dictionary
//! encoding off: high-entropy floats only lose by it), zstd level 1. The file is written under a
//! temporary name and renamed by the caller's run directory commit.

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context as _, Result};
use arrow_array::builder::{BooleanBuilder, Float64Builder, UInt32Builder};
use arrow_array::types::UInt16Type;
use arrow_array::{ArrayRef, DictionaryArray, StringArray, UInt16Array, UInt64Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_writer::{
    ArrowColumnChunk, ArrowRowGroupWriterFactory, ArrowWriterOptions, compute_leaves,
};
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::ColumnPath;
use rayon::prelude::*;

use crate::columns::{COLUMNS, Column, Kind, LabelValues, Labels, Row};

fn data_type(c: &Column) -> DataType {
    match c.kind {
        Kind::Id(_) => DataType::UInt64,
        Kind::Label(_) => {
            DataType::Dictionary(Box::new(DataType::UInt16), Box::new(DataType::Utf8))
        }
        Kind::Count(_) => DataType::UInt32,
        Kind::Metric(_) => DataType::Float64,
        Kind::Flag(_) => DataType::Boolean,
    }
}

fn nullable(c: &Column) -> bool {
    match c.kind {
        Kind::Id(_) => false,
        Kind::Label(l) => matches!(l, Labels::Reason | Labels::Limit | Labels::Risk),
        Kind::Count(_) | Kind::Metric(_) | Kind::Flag(_) => true,
    }
}

/// The Arrow schema of every racksweep output table.
pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(
        COLUMNS
            .iter()
            .map(|c| Field::new(c.name, data_type(c), nullable(c)))
            .collect::<Vec<_>>(),
    ))
}

/// Streams row groups into one Parquet file.
pub struct ParquetSink {
    writer: SerializedFileWriter<BufWriter<File>>,
    factory: ArrowRowGroupWriterFactory,
    schema: SchemaRef,
    labels: LabelValues,
    dictionaries: Vec<Option<ArrayRef>>,
    row_groups: usize,
}

impl ParquetSink {
    /// Creates `path` with the given file metadata (`racksweep.*` keys).
    pub fn create(
        path: &Path,
        labels: LabelValues,
        metadata: Vec<(String, String)>,
    ) -> Result<ParquetSink> {
        let schema = schema();
        let mut props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::try_new(1)?))
            .set_created_by(format!("racksweep {}", env!("CARGO_PKG_VERSION")))
            // Row-group (chunk) statistics let readers skip row groups; page-level statistics and
            // offset indexes would be held in memory for every page until the footer is written,
            // which grows with the grid.
            .set_statistics_enabled(EnabledStatistics::Chunk)
            .set_offset_index_disabled(true)
            .set_key_value_metadata(Some(
                metadata
                    .into_iter()
                    .map(|(k, v)| KeyValue::new(k, v))
                    .collect(),
            ));
        for c in COLUMNS.iter().filter(|c| matches!(c.kind, Kind::Metric(_))) {
            props = props.set_column_dictionary_enabled(ColumnPath::from(c.name), false);
        }
        let file = File::create(path).with_context(|| format!("creating {}", path.display()))?;
        let options = ArrowWriterOptions::new().with_properties(props.build());
        let writer = ArrowWriter::try_new_with_options(
            BufWriter::with_capacity(1 << 20, file),
            schema.clone(),
            options,
        )?;
        let (writer, factory) = writer.into_serialized_writer()?;
        let dictionaries = COLUMNS
            .iter()
            .map(|c| match c.kind {
                Kind::Label(l) => Some(Arc::new(StringArray::from(labels.values(l))) as ArrayRef),
                _ => None,
            })
            .collect();
        Ok(ParquetSink {
            writer,
            factory,
            schema,
            labels,
            dictionaries,
            row_groups: 0,
        })
    }

    /// Encodes `rows` as the next row group, every column on its own rayon task. Takes `&self`
    /// so it can run while the next chunk is being evaluated; [`ParquetSink::append`] writes it.
    pub fn encode(&self, rows: &[Row]) -> Result<Vec<ArrowColumnChunk>> {
        let writers = self.factory.create_column_writers(self.row_groups)?;
        COLUMNS
            .par_iter()
            .zip(writers.into_par_iter())
            .enumerate()
            .map(|(i, (column, mut writer))| {
                let array = self.array(i, column, rows);
                for leaf in compute_leaves(self.schema.field(i), &array)? {
                    writer.write(&leaf)?;
                }
                Ok(writer.close()?)
            })
            .collect()
    }

    /// Appends an encoded row group to the file.
    pub fn append(&mut self, chunks: Vec<ArrowColumnChunk>) -> Result<()> {
        let mut row_group = self.writer.next_row_group()?;
        for chunk in chunks {
            chunk.append_to_row_group(&mut row_group)?;
        }
        row_group.close()?;
        self.row_groups += 1;
        Ok(())
    }

    /// Encodes and appends in one call (small tables such as the frontier).
    pub fn write(&mut self, rows: &[Row]) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let chunks = self.encode(rows)?;
        self.append(chunks)
    }

    /// Writes the footer, flushes and syncs the file.
    pub fn finish(self) -> Result<()> {
        let buffered = self.writer.into_inner()?;
        let file = buffered.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        Ok(())
    }

    fn array(&self, i: usize, column: &Column, rows: &[Row]) -> ArrayRef {
        match column.kind {
            Kind::Id(f) => Arc::new(UInt64Array::from_iter_values(rows.iter().map(f))),
            Kind::Label(l) => {
                let keys: UInt16Array = rows.iter().map(|r| self.labels.key(l, r)).collect();
                let values = self.dictionaries[i]
                    .clone()
                    .expect("label columns have dictionaries");
                Arc::new(
                    DictionaryArray::<UInt16Type>::try_new(keys, values)
                        .expect("keys index their dictionary"),
                )
            }
            Kind::Count(f) => {
                let mut b = UInt32Builder::with_capacity(rows.len());
                rows.iter().for_each(|r| b.append_option(f(r)));
                Arc::new(b.finish())
            }
            Kind::Metric(f) => {
                let mut b = Float64Builder::with_capacity(rows.len());
                rows.iter().for_each(|r| b.append_option(f(r)));
                Arc::new(b.finish())
            }
            Kind::Flag(f) => {
                let mut b = BooleanBuilder::with_capacity(rows.len());
                rows.iter().for_each(|r| b.append_option(f(r)));
                Arc::new(b.finish())
            }
        }
    }
}
