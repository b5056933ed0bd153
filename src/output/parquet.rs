//! Writes rows to Parquet with arrow-rs: row groups fed chunk by chunk, their columns encoded in
//! parallel (rayon over `ArrowColumnWriter`s), appended in order. Column types come from the
//! schema table in `columns`: dictionary-encoded labels, delta-encoded ids, plain u32 counts and
//! nullable f64 metrics, zstd level 1. Every file says what its columns are: each field's unit
//! and meaning (Arrow field metadata, and the `racksweep.columns` key for readers that do not
//! show field metadata) and the pandas dtype of each column (`pandas` schema metadata). Callers
//! write under a temporary name and rename.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context as _, Result};
use arrow_array::{ArrayRef, StringArray, UInt32Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_writer::{
    ArrowColumnWriter, ArrowRowGroupWriterFactory, ArrowWriterOptions, compute_leaves,
};
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::ColumnPath;
use rayon::prelude::*;
use sha2::{Digest, Sha256};

use crate::columns::{LabelValues, Mode, Record, Schema as Table, Type};
use crate::output::columnar::Columns;

/// How a column type is stored and read: its Arrow type, its name in docs/schema.md, and the
/// dtype pandas gives it.
struct Storage {
    arrow: DataType,
    /// The type's name in docs/schema.md.
    doc: &'static str,
    /// The pandas metadata's `pandas_type` and `numpy_type`, the dtype pandas gives the column
    /// (pyarrow's `to_pandas` builds the nullable extension dtype a `numpy_type` names, such as
    /// "UInt32", whether or not the file holds a null: without it a count becomes float64
    /// where a file holds nulls and uint32 where it does not, and a flag `object` or `bool`).
    pandas_type: &'static str,
    numpy_type: &'static str,
}

fn storage(ty: Type) -> Storage {
    let (arrow, doc, pandas_type, numpy_type) = match ty {
        // Never null.
        Type::Id => (DataType::UInt64, "uint64", "uint64", "uint64"),
        // pyarrow reads a dictionary as a categorical whatever the metadata says.
        Type::Label(_) => (
            DataType::Dictionary(Box::new(DataType::UInt16), Box::new(DataType::Utf8)),
            "string (dictionary)",
            "categorical",
            "category",
        ),
        Type::Count => (DataType::UInt32, "uint32", "uint32", "UInt32"),
        // Null as NaN, the numpy convention pandas keeps for floats.
        Type::Metric => (DataType::Float64, "float64", "float64", "float64"),
        Type::Flag => (DataType::Boolean, "bool", "bool", "boolean"),
    };
    Storage {
        arrow,
        doc,
        pandas_type,
        numpy_type,
    }
}

/// Field metadata key of a column's unit ("" for identifiers, labels and flags).
pub const UNIT_KEY: &str = "unit";
/// Field metadata key of a column's meaning (docs/schema.md's "meaning").
pub const DESCRIPTION_KEY: &str = "description";

/// One column of a file as the writer describes it.
struct FieldSpec {
    name: &'static str,
    storage: Storage,
    nullable: bool,
    unit: &'static str,
    doc: &'static str,
}

/// The columns of a mode's tables, in file order.
fn mode_fields(mode: Mode) -> Vec<FieldSpec> {
    Table::get(mode)
        .columns
        .iter()
        .map(|c| FieldSpec {
            name: c.name,
            storage: storage(c.ty),
            nullable: c.nullable(),
            unit: c.unit,
            doc: c.doc,
        })
        .collect()
}

/// The Arrow schema of `fields`: every field carries its unit and meaning as field metadata
/// ([`UNIT_KEY`], [`DESCRIPTION_KEY`]), and the schema the pandas metadata that gives every
/// column one pandas dtype in every file.
fn build_schema(fields: &[FieldSpec]) -> SchemaRef {
    let arrow = fields.iter().map(|f| {
        Field::new(f.name, f.storage.arrow.clone(), f.nullable).with_metadata(HashMap::from([
            (UNIT_KEY.to_string(), f.unit.to_string()),
            (DESCRIPTION_KEY.to_string(), f.doc.to_string()),
        ]))
    });
    let metadata = HashMap::from([("pandas".to_string(), pandas_metadata(fields))]);
    Arc::new(Schema::new_with_metadata(
        arrow.collect::<Vec<_>>(),
        metadata,
    ))
}

/// The Arrow schema of a mode's output tables ([`build_schema`]).
pub fn schema(mode: Mode) -> SchemaRef {
    build_schema(&mode_fields(mode))
}

/// The schema of a run's `pareto.parquet`: the mode's columns, then
/// [`crate::pareto::TIE_GROUP`] (uint32, never null).
pub fn frontier_schema(mode: Mode) -> SchemaRef {
    let mut fields = mode_fields(mode);
    let (name, doc) = crate::pareto::TIE_GROUP;
    fields.push(FieldSpec {
        name,
        storage: Storage {
            arrow: DataType::UInt32,
            doc: "uint32",
            pandas_type: "uint32",
            numpy_type: "uint32",
        },
        nullable: false,
        unit: "",
        doc,
    });
    build_schema(&fields)
}

/// Key/value metadata key of every column's unit and meaning as one JSON object keyed by column
/// name (`{"racks": {"unit": "racks", "description": "..."}, ...}`), for the readers that do not
/// show Arrow field metadata (DuckDB's `parquet_kv_metadata`, polars' `read_parquet_metadata`).
pub const COLUMNS_KEY: &str = "racksweep.columns";

/// The value of [`COLUMNS_KEY`] for a file of `schema`: its field metadata, by name.
pub fn columns_metadata(schema: &Schema) -> String {
    let columns: serde_json::Map<String, serde_json::Value> = schema
        .fields()
        .iter()
        .map(|f| {
            let entries = f
                .metadata()
                .iter()
                .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())));
            (
                f.name().clone(),
                serde_json::Value::Object(entries.collect()),
            )
        })
        .collect();
    serde_json::Value::Object(columns).to_string()
}

/// The `pandas` schema metadata pyarrow writes for a DataFrame (its `columns` with their
/// `pandas_type` and `numpy_type`, no index), which pyarrow's `to_pandas` reads back.
fn pandas_metadata(fields: &[FieldSpec]) -> String {
    let columns: Vec<serde_json::Value> = fields
        .iter()
        .map(|f| {
            serde_json::json!({
                "name": f.name,
                "field_name": f.name,
                "pandas_type": f.storage.pandas_type,
                "numpy_type": f.storage.numpy_type,
                "metadata": null,
            })
        })
        .collect();
    serde_json::json!({
        "index_columns": [],
        "column_indexes": [],
        "columns": columns,
        "creator": {"library": "racksweep", "version": env!("CARGO_PKG_VERSION")},
    })
    .to_string()
}

/// A mode's schema as a Markdown table (docs/schema.md): name, Arrow type, nullability, unit
/// and meaning of every column, in file order.
pub fn schema_markdown(mode: Mode) -> String {
    let mut out = String::from(
        "| # | column | type | pandas | null when | unit | meaning |\n|---:|---|---|---|---|---|---|\n",
    );
    for (i, c) in Table::get(mode).columns.iter().enumerate() {
        let Storage {
            doc: ty,
            numpy_type: pandas,
            ..
        } = storage(c.ty);
        let null = if c.nullable() {
            "does not apply"
        } else {
            "never"
        };
        let unit = if c.unit.is_empty() { "-" } else { c.unit };
        out.push_str(&format!(
            "| {i} | `{}` | {ty} | {pandas} | {null} | {unit} | {} |\n",
            c.name, c.doc
        ));
    }
    out
}

/// One row group being encoded, possibly from several chunks of rows.
pub struct RowGroup {
    writers: Vec<ArrowColumnWriter>,
    rows: usize,
}

impl RowGroup {
    /// Rows encoded so far.
    pub fn rows(&self) -> usize {
        self.rows
    }
}

/// A file that hashes (SHA-256) every byte written to it, so that a part's checksum costs no
/// second read.
pub struct HashingFile {
    file: File,
    hasher: Sha256,
}

impl Write for HashingFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.file.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// Streams row groups of `R` rows into one Parquet file.
pub struct ParquetSink<R> {
    writer: SerializedFileWriter<BufWriter<HashingFile>>,
    factory: ArrowRowGroupWriterFactory,
    schema: SchemaRef,
    labels: LabelValues,
    dictionaries: Vec<Option<ArrayRef>>,
    row_groups: usize,
    rows: std::marker::PhantomData<fn(&R)>,
}

impl<R: Record> ParquetSink<R> {
    /// Creates `path` with the given file metadata (`racksweep.*` keys), to which it adds
    /// [`COLUMNS_KEY`].
    pub fn create(
        path: &Path,
        labels: LabelValues,
        metadata: Vec<(String, String)>,
    ) -> Result<ParquetSink<R>> {
        Self::create_with(path, labels, metadata, schema(R::MODE))
    }

    /// Creates `path` for a run's frontier ([`frontier_schema`]); write it with
    /// [`ParquetSink::write_frontier`].
    pub fn create_frontier(
        path: &Path,
        labels: LabelValues,
        metadata: Vec<(String, String)>,
    ) -> Result<ParquetSink<R>> {
        Self::create_with(path, labels, metadata, frontier_schema(R::MODE))
    }

    fn create_with(
        path: &Path,
        labels: LabelValues,
        mut metadata: Vec<(String, String)>,
        schema: SchemaRef,
    ) -> Result<ParquetSink<R>> {
        metadata.push((COLUMNS_KEY.to_string(), columns_metadata(&schema)));
        let mut props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::try_new(1)?))
            .set_created_by(format!("racksweep {}", env!("CARGO_PKG_VERSION")))
            // Row-group (chunk) statistics let readers skip row groups; page-level statistics and
            // offset indexes would be held in memory for every page until the footer is written,
            // which grows with the grid.
            .set_statistics_enabled(EnabledStatistics::Chunk)
            // Values handed to the encoders 8k at a time rather than 1k: fewer passes of the
            // writer's per-batch bookkeeping (measured 3 % faster, files slightly smaller).
            .set_write_batch_size(8192)
            .set_offset_index_disabled(true)
            .set_key_value_metadata(Some(
                metadata
                    .into_iter()
                    .map(|(k, v)| KeyValue::new(k, v))
                    .collect(),
            ));
        for c in &Table::get(R::MODE).columns {
            match c.ty {
                // Small integers repeat in long runs that zstd packs as well as a dictionary
                // would, without hashing every value (measured: 3 % faster, 3 % smaller).
                // Floats are high-entropy: a dictionary only loses. Labels keep theirs, which
                // readers use to filter and to decode without hashing strings.
                Type::Count | Type::Metric => {
                    props = props.set_column_dictionary_enabled(ColumnPath::from(c.name), false);
                }
                // Grid indices ascend by one within a chunk: delta encoding stores them in a few
                // bits each, where a dictionary would hash every (unique) value first.
                Type::Id => {
                    props = props
                        .set_column_dictionary_enabled(ColumnPath::from(c.name), false)
                        .set_column_encoding(
                            ColumnPath::from(c.name),
                            Encoding::DELTA_BINARY_PACKED,
                        );
                }
                _ => {}
            }
        }
        let file = File::create(path).with_context(|| format!("creating {}", path.display()))?;
        let file = HashingFile {
            file,
            hasher: Sha256::new(),
        };
        let options = ArrowWriterOptions::new().with_properties(props.build());
        let writer = ArrowWriter::try_new_with_options(
            BufWriter::with_capacity(1 << 20, file),
            schema.clone(),
            options,
        )?;
        let (writer, factory) = writer.into_serialized_writer()?;
        let dictionaries = Table::get(R::MODE)
            .columns
            .iter()
            .map(|c| match c.ty {
                Type::Label(l) => Some(Arc::new(StringArray::from(labels.values(l))) as ArrayRef),
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
            rows: std::marker::PhantomData,
        })
    }

    /// Column writers of the next row group; feed them with [`ParquetSink::encode`] and hand
    /// them to [`ParquetSink::append`].
    pub fn row_group(&self) -> Result<RowGroup> {
        Ok(RowGroup {
            writers: self.factory.create_column_writers(self.row_groups)?,
            rows: 0,
        })
    }

    /// Encodes the table in `columns` into `group`, every column on its own rayon task. Takes
    /// `&self` so it can run while the next chunk is being evaluated.
    pub fn encode(&self, group: &mut RowGroup, columns: &mut Columns<R>) -> Result<()> {
        let writers: Vec<&mut ArrowColumnWriter> = group.writers.iter_mut().collect();
        columns
            .par_map(&self.dictionaries, writers, |i, writer, array| {
                for leaf in compute_leaves(self.schema.field(i), array)? {
                    writer.write(&leaf)?;
                }
                Ok(())
            })
            .into_iter()
            .collect::<Result<()>>()?;
        group.rows += columns.len();
        Ok(())
    }

    /// Closes `group`'s column writers (in parallel) and appends the row group to the file.
    pub fn append(&mut self, group: RowGroup) -> Result<()> {
        let chunks = group
            .writers
            .into_par_iter()
            .map(|w| Ok(w.close()?))
            .collect::<Result<Vec<_>>>()?;
        let mut row_group = self.writer.next_row_group()?;
        for chunk in chunks {
            chunk.append_to_row_group(&mut row_group)?;
        }
        row_group.close()?;
        self.row_groups += 1;
        Ok(())
    }

    /// Encodes and appends rows in one call (small tables such as the frontier).
    pub fn write_rows(&mut self, rows: &[R]) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let mut columns = Columns::from_rows(rows, &self.labels);
        let mut group = self.row_group()?;
        self.encode(&mut group, &mut columns)?;
        self.append(group)
    }

    /// Writes a frontier's rows with each row's tie group, into a file made by
    /// [`ParquetSink::create_frontier`].
    pub fn write_frontier(&mut self, rows: &[R], tie_groups: &[u32]) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        anyhow::ensure!(
            tie_groups.len() == rows.len(),
            "{} rows with {} tie groups",
            rows.len(),
            tie_groups.len()
        );
        let mut columns = Columns::from_rows(rows, &self.labels);
        let mut group = self.row_group()?;
        let last = self.schema.fields().len() - 1;
        anyhow::ensure!(
            self.schema.field(last).name() == crate::pareto::TIE_GROUP.0,
            "the file has no {} column",
            crate::pareto::TIE_GROUP.0
        );
        let mut writer = group.writers.remove(last);
        self.encode(&mut group, &mut columns)?;
        let array: ArrayRef = Arc::new(UInt32Array::from(tie_groups.to_vec()));
        for leaf in compute_leaves(self.schema.field(last), &array)? {
            writer.write(&leaf)?;
        }
        group.writers.push(writer);
        self.append(group)
    }

    /// The label dictionaries rows are keyed against.
    pub fn labels(&self) -> &LabelValues {
        &self.labels
    }

    /// Writes the footer, flushes and syncs the file; returns the SHA-256 of its bytes (hex).
    pub fn finish(self) -> Result<String> {
        let buffered = self.writer.into_inner()?;
        let file = buffered.into_inner().map_err(|e| e.into_error())?;
        file.file.sync_all()?;
        Ok(format!("{:x}", file.hasher.finalize()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every field carries its column's unit and meaning; every number has a unit but the
    /// identifiers (`config_id`, `workload_id`).
    #[test]
    fn fields_carry_unit_and_description() {
        for mode in Mode::ALL {
            let schema = schema(mode);
            let table = Table::get(mode);
            assert_eq!(schema.fields().len(), table.columns.len());
            for (field, c) in schema.fields().iter().zip(&table.columns) {
                let meta = field.metadata();
                assert_eq!(
                    meta.get(UNIT_KEY).map(String::as_str),
                    Some(c.unit),
                    "{}",
                    c.name
                );
                assert_eq!(meta.get(DESCRIPTION_KEY).map(String::as_str), Some(c.doc));
                assert!(c.doc.len() > 10, "{}: {:?}", c.name, c.doc);
                if c.is_numeric() && !c.name.ends_with("_id") {
                    assert!(!c.unit.is_empty(), "{} has no unit", c.name);
                }
            }
        }
    }

    /// The `racksweep.columns` metadata is the field metadata, keyed by name.
    #[test]
    fn columns_metadata_is_the_field_metadata() {
        let parsed: serde_json::Value =
            serde_json::from_str(&columns_metadata(&schema(Mode::Inference))).unwrap();
        assert_eq!(parsed["racks"]["unit"], "racks");
        assert_eq!(parsed["tpot_ms"]["unit"], "ms");
        assert_eq!(parsed["hardware"]["unit"], "");
        let table = Table::get(Mode::Training);
        let parsed: serde_json::Value =
            serde_json::from_str(&columns_metadata(&schema(Mode::Training))).unwrap();
        assert_eq!(parsed.as_object().unwrap().len(), table.columns.len());
        for c in &table.columns {
            assert_eq!(parsed[c.name]["description"], c.doc, "{}", c.name);
        }
    }

    /// The pandas metadata names every column, in order, with the dtype of its type: nullable
    /// extension dtypes for counts and flags, so that a file without nulls reads as one with.
    #[test]
    fn pandas_metadata_gives_one_dtype_per_type() {
        for mode in Mode::ALL {
            let schema = schema(mode);
            let pandas: serde_json::Value =
                serde_json::from_str(&schema.metadata()["pandas"]).unwrap();
            let columns = pandas["columns"].as_array().unwrap();
            let table = Table::get(mode);
            assert_eq!(columns.len(), table.columns.len());
            for (p, c) in columns.iter().zip(&table.columns) {
                assert_eq!(p["name"], c.name);
                assert_eq!(p["field_name"], c.name);
                let want = match c.ty {
                    Type::Id => "uint64",
                    Type::Label(_) => "category",
                    Type::Count => "UInt32",
                    Type::Metric => "float64",
                    Type::Flag => "boolean",
                };
                assert_eq!(p["numpy_type"], want, "{}", c.name);
            }
            assert_eq!(pandas["index_columns"], serde_json::json!([]));
        }
    }

    /// `pareto.parquet` adds `tie_group` after the mode's columns, described like every other
    /// field: unit, meaning, pandas dtype, and in `racksweep.columns`.
    #[test]
    fn frontier_schema_describes_the_tie_group() {
        for mode in Mode::ALL {
            let (plain, frontier) = (schema(mode), frontier_schema(mode));
            assert_eq!(frontier.fields().len(), plain.fields().len() + 1);
            let last = frontier.fields().last().unwrap();
            assert_eq!(last.name(), crate::pareto::TIE_GROUP.0);
            assert_eq!(last.data_type(), &DataType::UInt32);
            assert!(!last.is_nullable());
            assert_eq!(
                last.metadata().get(DESCRIPTION_KEY).map(String::as_str),
                Some(crate::pareto::TIE_GROUP.1)
            );
            let pandas: serde_json::Value =
                serde_json::from_str(&frontier.metadata()["pandas"]).unwrap();
            let columns = pandas["columns"].as_array().unwrap();
            assert_eq!(columns.len(), frontier.fields().len());
            assert_eq!(columns.last().unwrap()["numpy_type"], "uint32");
            let described: serde_json::Value =
                serde_json::from_str(&columns_metadata(&frontier)).unwrap();
            assert_eq!(
                described[crate::pareto::TIE_GROUP.0]["description"],
                crate::pareto::TIE_GROUP.1
            );
        }
    }
}
