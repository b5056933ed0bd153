//! Writes rows to Parquet: row groups fed chunk by chunk, their columns encoded in parallel by
//! `column_chunk` (one rayon task a column), spliced into the file in order by arrow-rs's file
//! writer, which also writes the footer with the Arrow schema. Column types come from the schema
//! table in `columns`: labels as dictionaries in the sweep's fixed order, delta-encoded ids,
//! plain u32 counts and nullable f64 metrics, zstd level 1, chunk statistics. Every file says
//! what its columns are: each field's unit and meaning (Arrow field metadata, and the
//! `racksweep.columns` key for readers that do not show field metadata) and the pandas dtype of
//! each column (`pandas` schema metadata). Callers write under a temporary name and rename.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context as _, Result};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_writer::ArrowWriterOptions;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use rayon::prelude::*;
use sha2::{Digest, Sha256};

use crate::columns::{LabelValues, Mode, Record, Schema as Table, Type};
use crate::output::column_chunk::{ColumnChunk, Dictionary};
use crate::output::columnar::{Columns, Values};

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

/// Key of a part file's count of configurations per infeasible reason, a JSON object of the
/// reasons that occur (`{"does_not_fit": 812, ...}`), the same counts as its record's
/// `infeasible`: the file is bound to the record by its SHA-256, so a record whose counts were
/// moved between reasons disagrees with it (docs/schema.md).
pub const INFEASIBLE_KEY: &str = "racksweep.infeasible";

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
        let null = match (c.nullable(), c.need.lacking()) {
            (false, _) => "never".to_string(),
            (true, None) => "does not apply".to_string(),
            (true, Some(lacking)) => format!("{lacking}, or where it does not apply"),
        };
        let unit = if c.unit.is_empty() { "-" } else { c.unit };
        out.push_str(&format!(
            "| {i} | `{}` | {ty} | {pandas} | {null} | {unit} | {} |\n",
            c.name, c.doc
        ));
    }
    out
}

/// The row group being encoded, possibly from several chunks of rows; one for the whole file
/// (appending it empties it for the next).
pub struct RowGroup {
    columns: Vec<ColumnChunk>,
    rows: usize,
}

impl RowGroup {
    /// Rows encoded since the last append.
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
    labels: LabelValues,
    /// Each column's dictionary (label columns), in file order.
    dictionaries: Vec<Option<Dictionary>>,
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
        // Pages are encoded by `column_chunk`; the file writer writes the footer: the Arrow
        // schema (which tells Arrow readers the dictionary and unsigned types and the field
        // metadata) and these keys. Page indexes are not written: they would be held in memory
        // for every page until the footer, which grows with the grid.
        let props = WriterProperties::builder()
            .set_created_by(format!("racksweep {}", env!("CARGO_PKG_VERSION")))
            .set_offset_index_disabled(true)
            .set_key_value_metadata(Some(
                metadata
                    .into_iter()
                    .map(|(k, v)| KeyValue::new(k, v))
                    .collect(),
            ));
        let file = File::create(path).with_context(|| format!("creating {}", path.display()))?;
        let file = HashingFile {
            file,
            hasher: Sha256::new(),
        };
        let options = ArrowWriterOptions::new().with_properties(props.build());
        let writer = ArrowWriter::try_new_with_options(
            BufWriter::with_capacity(1 << 20, file),
            schema,
            options,
        )?;
        let (writer, _) = writer.into_serialized_writer()?;
        let mut dictionaries: Vec<Option<Dictionary>> = Table::get(R::MODE)
            .columns
            .iter()
            .map(|c| match c.ty {
                Type::Label(l) => Dictionary::new(labels.values(l)).map(Some),
                _ => Ok(None),
            })
            .collect::<Result<_>>()?;
        // The frontier's tie group.
        dictionaries.resize(writer.schema_descr().num_columns(), None);
        Ok(ParquetSink {
            writer,
            labels,
            dictionaries,
            rows: std::marker::PhantomData,
        })
    }

    /// The file's row group: feed it with [`ParquetSink::encode`] and hand it to
    /// [`ParquetSink::append`] to write it out.
    pub fn row_group(&self) -> Result<RowGroup> {
        let schema = self.writer.schema_descr();
        let columns = (0..schema.num_columns())
            .map(|i| ColumnChunk::new(schema.column(i), self.dictionaries[i].clone()))
            .collect();
        Ok(RowGroup { columns, rows: 0 })
    }

    /// Encodes the table in `columns` into `group` as one page a column, every column on its
    /// own rayon task. Takes `&self` so it can run while the next chunk is being evaluated.
    pub fn encode(&self, group: &mut RowGroup, columns: &Columns<R>) -> Result<()> {
        let chunks: Vec<&mut ColumnChunk> = group.columns.iter_mut().collect();
        columns
            .par_columns(chunks, |chunk, values| chunk.write(values))
            .into_iter()
            .collect::<Result<()>>()?;
        group.rows += columns.len();
        Ok(())
    }

    /// Closes `group`'s column chunks (in parallel), appends them to the file as a row group,
    /// and empties `group` for the next one.
    pub fn append(&mut self, group: &mut RowGroup) -> Result<()> {
        let chunks = group
            .columns
            .par_iter_mut()
            .map(ColumnChunk::take)
            .collect::<Result<Vec<_>>>()?;
        let mut row_group = self.writer.next_row_group()?;
        for (bytes, chunk) in chunks {
            row_group.append_column(&bytes, chunk)?;
        }
        row_group.close()?;
        group.rows = 0;
        Ok(())
    }

    /// Encodes and appends rows in one call (small tables such as the frontier).
    pub fn write_rows(&mut self, rows: &[R]) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let columns = Columns::from_rows(rows, &self.labels);
        let mut group = self.row_group()?;
        self.encode(&mut group, &columns)?;
        self.append(&mut group)
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
        let schema = self.writer.schema_descr();
        let last = schema.num_columns() - 1;
        anyhow::ensure!(
            schema.column(last).name() == crate::pareto::TIE_GROUP.0,
            "the file has no {} column",
            crate::pareto::TIE_GROUP.0
        );
        let columns = Columns::from_rows(rows, &self.labels);
        let mut group = self.row_group()?;
        let mut tie_group = group.columns.remove(last);
        self.encode(&mut group, &columns)?;
        tie_group.write(Values::Count(tie_groups, &vec![true; rows.len()]))?;
        group.columns.push(tie_group);
        self.append(&mut group)
    }

    /// The label dictionaries rows are keyed against.
    pub fn labels(&self) -> &LabelValues {
        &self.labels
    }

    /// Adds a key/value pair to the footer's metadata, for a value known only once the rows are
    /// written.
    pub fn append_metadata(&mut self, key: &str, value: String) {
        self.writer
            .append_key_value_metadata(KeyValue::new(key.to_string(), value));
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
    use crate::columns::{COLUMNS, Labels, Row};
    use crate::perf::Reason;
    use arrow_array::types::UInt16Type;
    use arrow_array::{
        Array, BooleanArray, DictionaryArray, Float64Array, StringArray, UInt32Array, UInt64Array,
    };
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use parquet::file::reader::{FileReader, SerializedFileReader};

    /// Two GPUs whose dictionary order (a100 first) is not the order the rows below first show
    /// them in (h100 first).
    fn two_gpus() -> LabelValues {
        LabelValues::for_tests(&["a100-80gb", "h100-sxm"], vec![1, 0])
    }

    /// Rows with nulls of every kind, ids that jump, negative and zero metrics.
    fn odd_rows() -> Vec<Row> {
        (0..300u32)
            .map(|i| {
                let mut r = Row {
                    config_id: if i < 200 {
                        u64::from(i) * 3
                    } else {
                        10_000 + u64::from(i)
                    },
                    ..Row::default()
                };
                r.point.platform = u32::from(i % 4 == 1);
                r.estimate.racks = if i % 5 == 0 { 0 } else { i };
                r.estimate.tpot_ms = if i % 3 == 0 {
                    f64::NAN
                } else {
                    f64::from(i) * 0.5 - 20.0
                };
                r.estimate.demand_met = [None, Some(true), Some(false)][i as usize % 3];
                r.estimate.reason =
                    (i % 7 == 0).then(|| Reason::ALL[i as usize % Reason::ALL.len()]);
                r
            })
            .collect()
    }

    /// A dictionary of 300 values (keys of 9 bits, packed wider than a byte) in runs and
    /// literals reads back key for key.
    #[test]
    fn wide_dictionary_keys_round_trip() {
        let dir = std::env::temp_dir().join(format!("racksweep-wide-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("wide.parquet");
        let names: Vec<String> = (0..300).map(|i| format!("gpu-{i:03}")).collect();
        let ids: Vec<&str> = names.iter().map(String::as_str).collect();
        let labels = LabelValues::for_tests(&ids, (0..300).rev().collect());
        // Platforms in runs of 9 then one at a time: RLE runs and bit-packed groups.
        let platforms =
            (0..300u32).flat_map(|p| std::iter::repeat_n(p, if p % 2 == 0 { 9 } else { 1 }));
        let rows: Vec<Row> = platforms
            .enumerate()
            .map(|(i, p)| {
                let mut r = Row {
                    config_id: i as u64,
                    ..Row::default()
                };
                r.point.platform = p;
                r
            })
            .collect();
        let mut sink = ParquetSink::<Row>::create(&path, labels.clone(), Vec::new()).unwrap();
        sink.write_rows(&rows).unwrap();
        sink.finish().unwrap();
        let hardware = COLUMNS.iter().position(|c| c.name == "hardware").unwrap();
        let mut got = Vec::new();
        for b in ParquetRecordBatchReaderBuilder::try_new(File::open(&path).unwrap())
            .unwrap()
            .build()
            .unwrap()
        {
            let (texts, dictionary) = read_back(b.unwrap().column(hardware).as_ref());
            assert_eq!(dictionary.unwrap(), names);
            got.extend(texts);
        }
        let want: Vec<Option<String>> = rows
            .iter()
            .map(|r| Some(names[299 - r.point.platform as usize].clone()))
            .collect();
        assert_eq!(got, want);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Each value of a column as text (`None` for null), from the encoder's input.
    fn expected(
        values: Values,
        labels: &LabelValues,
        label: Option<Labels>,
    ) -> Vec<Option<String>> {
        match values {
            Values::Id(v) => v.iter().map(|x| Some(x.to_string())).collect(),
            Values::Label(v) => {
                let names = labels.values(label.expect("a label column"));
                v.iter()
                    .map(|&k| (k != u16::MAX).then(|| names[usize::from(k)].clone()))
                    .collect()
            }
            Values::Count(v, ok) => v
                .iter()
                .zip(ok)
                .map(|(x, &ok)| ok.then(|| x.to_string()))
                .collect(),
            Values::Metric(v) => v
                .iter()
                .map(|x| (!x.is_nan()).then(|| format!("{x:?}")))
                .collect(),
            Values::Flag(v) => v
                .iter()
                .map(|&x| (x != 2).then(|| (x == 1).to_string()))
                .collect(),
            Values::Null(rows) => vec![None; rows],
        }
    }

    /// Each value of an array read back as text, and a dictionary array's values.
    fn read_back(a: &dyn Array) -> (Vec<Option<String>>, Option<Vec<String>>) {
        let text = |i: usize, s: String| a.is_valid(i).then_some(s);
        let n = a.len();
        let any = a.as_any();
        if let Some(a) = any.downcast_ref::<UInt64Array>() {
            return (
                (0..n).map(|i| text(i, a.value(i).to_string())).collect(),
                None,
            );
        }
        if let Some(a) = any.downcast_ref::<UInt32Array>() {
            return (
                (0..n).map(|i| text(i, a.value(i).to_string())).collect(),
                None,
            );
        }
        if let Some(a) = any.downcast_ref::<Float64Array>() {
            return (
                (0..n)
                    .map(|i| text(i, format!("{:?}", a.value(i))))
                    .collect(),
                None,
            );
        }
        if let Some(a) = any.downcast_ref::<BooleanArray>() {
            return (
                (0..n).map(|i| text(i, a.value(i).to_string())).collect(),
                None,
            );
        }
        let d = any
            .downcast_ref::<DictionaryArray<UInt16Type>>()
            .expect("a dictionary");
        let values = d
            .values()
            .as_any()
            .downcast_ref::<StringArray>()
            .expect("strings");
        let names: Vec<String> = values
            .iter()
            .map(|v| v.unwrap_or_default().to_string())
            .collect();
        let keys = d.keys();
        let texts = (0..n)
            .map(|i| {
                keys.is_valid(i)
                    .then(|| names[usize::from(keys.value(i))].clone())
            })
            .collect();
        (texts, Some(names))
    }

    /// Rows written in three chunks (two in the first row group, one in the second) read back
    /// by arrow-rs value for value, with every label column's dictionary in the sweep's order
    /// in every row group, and each row group's statistics equal to a scan of its rows.
    #[test]
    fn pages_round_trip_with_fixed_dictionaries_and_true_statistics() {
        let dir = std::env::temp_dir().join(format!("racksweep-pages-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("rows.parquet");
        let labels = two_gpus();
        let rows = odd_rows();
        let mut sink = ParquetSink::<Row>::create(&path, labels.clone(), Vec::new()).unwrap();
        let mut group = sink.row_group().unwrap();
        for (range, append) in [(0..100, false), (100..250, true), (250..300, true)] {
            sink.encode(&mut group, &Columns::from_rows(&rows[range], &labels))
                .unwrap();
            if append {
                sink.append(&mut group).unwrap();
            }
        }
        sink.finish().unwrap();

        let all = Columns::from_rows(&rows, &labels);
        let want = all.par_columns(vec![(); COLUMNS.len()], |(), v| v.len());
        assert!(want.iter().all(|&n| n == 300));
        // Row group by row group: a batch that crosses row groups is re-encoded by the reader.
        let batches: Vec<_> = (0..2)
            .flat_map(|g| {
                ParquetRecordBatchReaderBuilder::try_new(File::open(&path).unwrap())
                    .unwrap()
                    .with_row_groups(vec![g])
                    .build()
                    .unwrap()
                    .map(|b| b.unwrap())
            })
            .collect();
        let table = &Table::get(Mode::Inference).columns;
        let label_of: Vec<Option<Labels>> = table
            .iter()
            .map(|c| match c.ty {
                Type::Label(l) => Some(l),
                _ => None,
            })
            .collect();
        let want = all.par_columns(label_of.clone(), |l, v| expected(v, &labels, l));
        for ((i, c), label) in table.iter().enumerate().zip(label_of) {
            let mut got = Vec::new();
            for b in &batches {
                let (texts, dictionary) = read_back(b.column(i).as_ref());
                // (arrow-rs reads a column of nulls with an empty dictionary as [""].)
                if let Some(l) = label.filter(|&l| !labels.values(l).is_empty()) {
                    assert_eq!(dictionary.unwrap(), labels.values(l), "{}", c.name);
                }
                got.extend(texts);
            }
            assert_eq!(got, want[i], "{}", c.name);
        }

        let file = SerializedFileReader::new(File::open(&path).unwrap()).unwrap();
        let groups = file.metadata().row_groups();
        assert_eq!(
            groups.iter().map(|g| g.num_rows()).collect::<Vec<_>>(),
            [250, 50]
        );
        let column = |name: &str| COLUMNS.iter().position(|c| c.name == name).unwrap();
        for (g, range) in groups.iter().zip([0..250usize, 250..300]) {
            let rows = &rows[range];
            let stats = |name: &str| g.column(column(name)).statistics().unwrap().clone();
            let ids = stats("config_id");
            assert_eq!(
                ids.min_bytes_opt().unwrap(),
                rows[0].config_id.to_le_bytes()
            );
            assert_eq!(
                ids.max_bytes_opt().unwrap(),
                rows[rows.len() - 1].config_id.to_le_bytes()
            );
            let racks: Vec<u32> = rows
                .iter()
                .map(|r| r.estimate.racks)
                .filter(|&r| r > 0)
                .collect();
            let st = stats("racks");
            assert_eq!(st.null_count_opt(), Some((rows.len() - racks.len()) as u64));
            assert_eq!(
                st.min_bytes_opt().unwrap(),
                racks.iter().min().unwrap().to_le_bytes()
            );
            assert_eq!(
                st.max_bytes_opt().unwrap(),
                racks.iter().max().unwrap().to_le_bytes()
            );
            let tpot: Vec<f64> = rows
                .iter()
                .map(|r| r.estimate.tpot_ms)
                .filter(|x| !x.is_nan())
                .collect();
            let st = stats("tpot_ms");
            assert_eq!(st.null_count_opt(), Some((rows.len() - tpot.len()) as u64));
            let lo = tpot.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = tpot.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            assert_eq!(st.min_bytes_opt().unwrap(), lo.to_le_bytes());
            assert_eq!(st.max_bytes_opt().unwrap(), hi.to_le_bytes());
            let st = stats("hardware");
            assert_eq!(st.null_count_opt(), Some(0));
            assert_eq!(st.min_bytes_opt().unwrap(), b"a100-80gb");
            assert_eq!(st.max_bytes_opt().unwrap(), b"h100-sxm");
            let st = stats("demand_met");
            assert_eq!(
                st.null_count_opt(),
                Some(
                    rows.iter()
                        .filter(|r| r.estimate.demand_met.is_none())
                        .count() as u64
                )
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

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
