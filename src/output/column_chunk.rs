//! One column of a row group, encoded into Parquet pages by racksweep rather than by arrow-rs's
//! column writers: from the typed buffers of `columnar` straight to page bytes, with the
//! encodings of docs/schema.md and the chunk's statistics, then zstd. Two reasons:
//!
//! - **Stable dictionaries.** A label column's dictionary page is the sweep's label values in
//!   their fixed order ([`LabelValues`]), the same in every row group of every part, and the
//!   data pages hold racksweep's own keys. arrow-rs re-interns a dictionary column per column
//!   chunk, in the order values first appear, so one file's `hardware` codes differed from the
//!   next one's (issue 23).
//! - **Speed.** No Arrow arrays, validity bitmaps, level buffers or interning between the
//!   buffers and the pages (issue 24).
//!
//! Pages are format v1 data pages (definition levels, RLE with a 4-byte length, before the
//! values), one per chunk of rows, after the dictionary page for labels. The chunk's bytes are
//! spliced into the file by `SerializedRowGroupWriter::append_column`, which moves the page
//! offsets recorded here to their place in the file.
//!
//! [`LabelValues`]: crate::columns::LabelValues

use std::cell::RefCell;

use anyhow::{Result, bail};
use bytes::Bytes;
use parquet::basic::{Compression, Encoding, PageType, Type as PhysicalType, ZstdLevel};
use parquet::column::page::{CompressedPage, Page, PageWriter};
use parquet::column::writer::ColumnCloseResult;
use parquet::data_type::ByteArray;
use parquet::file::metadata::{ColumnChunkMetaData, PageEncodingStats};
use parquet::file::statistics::Statistics;
use parquet::file::writer::{SerializedPageWriter, TrackedWrite};
use parquet::schema::types::ColumnDescPtr;

use super::columnar::{NULL_FLAG, NULL_KEY, Values};
use super::encoding::{
    bit_width, bitmap, delta_binary_packed, levels, metric_page, plain_bools, rle_hybrid,
};

/// zstd level of every page: 1, the level the writer's yardstick (pyarrow's rewrite in
/// scripts/bench.sh) uses. Level 3 writes bench-10m 14 % smaller for 1.5 % more CPU
/// (docs/performance.md).
pub const ZSTD_LEVEL: i32 = 1;

/// An encoding thread's zstd context and page buffers, reused from page to page.
struct Scratch {
    zstd: zstd::bulk::Compressor<'static>,
    /// The page body being written.
    body: Vec<u8>,
    /// The page's validity bits, and a metric page's values in PLAIN encoding.
    bits: Vec<u8>,
    plain: Vec<u8>,
}

thread_local! {
    static SCRATCH: RefCell<Option<Scratch>> = const { RefCell::new(None) };
}

/// A label column's dictionary: its values in key order, and that dictionary page compressed
/// once for every chunk that writes it.
#[derive(Debug, Clone)]
pub struct Dictionary {
    values: Vec<String>,
    page: Bytes,
    page_len: usize,
}

impl Dictionary {
    /// The dictionary page of `values` (PLAIN byte arrays: 4-byte length, then the bytes).
    pub fn new(values: Vec<String>) -> Result<Dictionary> {
        let mut plain = Vec::new();
        for v in &values {
            plain.extend_from_slice(&(v.len() as u32).to_le_bytes());
            plain.extend_from_slice(v.as_bytes());
        }
        let page_len = plain.len();
        let page = with_scratch(|s| Ok(s.zstd.compress(&plain)?))?;
        Ok(Dictionary {
            values,
            page: Bytes::from(page),
            page_len,
        })
    }

    /// Bits of a key (at least 1: some readers refuse width 0).
    fn key_width(&self) -> u8 {
        bit_width(self.values.len().saturating_sub(1) as u64).max(1)
    }
}

/// The running minimum and maximum of a chunk's values.
#[derive(Debug, Clone, Copy)]
enum Bounds {
    None,
    Id(u64, u64),
    Count(u32, u32),
    Metric(f64, f64),
    Flag(bool, bool),
}

/// One column chunk being written: its pages so far, sizes, counts and statistics.
pub struct ColumnChunk {
    descr: ColumnDescPtr,
    dictionary: Option<Dictionary>,
    out: TrackedWrite<Vec<u8>>,
    dictionary_offset: Option<i64>,
    data_offset: Option<i64>,
    uncompressed: i64,
    compressed: i64,
    rows: i64,
    nulls: u64,
    data_pages: i32,
    bounds: Bounds,
    /// Label keys seen (statistics are the least and greatest of their values).
    keys_seen: Vec<bool>,
}

impl ColumnChunk {
    /// An empty chunk of the column `descr`; label columns take their dictionary.
    pub fn new(descr: ColumnDescPtr, dictionary: Option<Dictionary>) -> ColumnChunk {
        let keys = dictionary.as_ref().map_or(0, |d| d.values.len());
        ColumnChunk {
            descr,
            dictionary,
            out: TrackedWrite::new(Vec::new()),
            dictionary_offset: None,
            data_offset: None,
            uncompressed: 0,
            compressed: 0,
            rows: 0,
            nulls: 0,
            data_pages: 0,
            bounds: Bounds::None,
            keys_seen: vec![false; keys],
        }
    }

    /// Appends `values` as one data page (nothing for no rows).
    pub fn write(&mut self, values: Values) -> Result<()> {
        let rows = values.len();
        if rows == 0 {
            return Ok(());
        }
        if let (Some(d), None) = (&self.dictionary, self.dictionary_offset) {
            let page = Page::DictionaryPage {
                buf: d.page.clone(),
                num_values: d.values.len() as u32,
                encoding: Encoding::PLAIN,
                is_sorted: false,
            };
            let spec = SerializedPageWriter::new(&mut self.out)
                .write_page(CompressedPage::new(page, d.page_len))?;
            self.dictionary_offset = Some(spec.offset as i64);
            self.uncompressed += spec.uncompressed_size as i64;
            self.compressed += spec.compressed_size as i64;
        }
        let nullable = self.descr.max_def_level() > 0;
        let (encoding, compressed, uncompressed) = with_scratch(|s| {
            s.body.clear();
            let encoding = self.encode(s, values, nullable)?;
            Ok((encoding, s.zstd.compress(&s.body)?, s.body.len()))
        })?;
        let page = Page::DataPage {
            buf: Bytes::from(compressed),
            num_values: rows as u32,
            encoding,
            def_level_encoding: Encoding::RLE,
            rep_level_encoding: Encoding::RLE,
            statistics: None,
        };
        let spec = SerializedPageWriter::new(&mut self.out)
            .write_page(CompressedPage::new(page, uncompressed))?;
        self.data_offset.get_or_insert(spec.offset as i64);
        self.uncompressed += spec.uncompressed_size as i64;
        self.compressed += spec.compressed_size as i64;
        self.rows += rows as i64;
        self.data_pages += 1;
        Ok(())
    }

    /// Writes the page body of `values` into `body` (definition levels if the column is
    /// nullable, then the values), widens the statistics, and returns the values' encoding.
    fn encode(&mut self, s: &mut Scratch, values: Values, nullable: bool) -> Result<Encoding> {
        let descr = self.descr.clone();
        let name = || descr.name().to_string();
        let rows = values.len();
        let Scratch {
            body, bits, plain, ..
        } = s;
        // Definition levels of a nullable column: 1 for a value, 0 for a null, after their
        // length in 4 bytes. A metric page's values are compacted in the same pass.
        let mut metric_bounds = (f64::INFINITY, f64::NEG_INFINITY);
        let has_validity = match values {
            Values::Id(_) => false,
            Values::Label(v) => {
                bitmap(bits, v, |k| k != NULL_KEY);
                true
            }
            Values::Count(_, valid) => {
                bitmap(bits, valid, |ok| ok);
                true
            }
            Values::Metric(v) => {
                metric_bounds = metric_page(v, bits, plain);
                true
            }
            Values::Flag(v) => {
                bitmap(bits, v, |x| x != NULL_FLAG);
                true
            }
            Values::Null(_) => {
                bits.clear();
                bits.resize(rows.div_ceil(8), 0);
                true
            }
        };
        let valid = has_validity.then_some(&bits[..]);
        let present: usize = valid.map_or(rows, |bits| {
            bits.iter().map(|b| b.count_ones() as usize).sum()
        });
        let nulls = rows - present;
        if nullable {
            body.extend_from_slice(&[0; 4]);
            match valid {
                Some(bits) if nulls > 0 => levels(body, rows, bits),
                _ => rle_hybrid(body, 1, rows, |_| 1),
            }
            let len = (body.len() - 4) as u32;
            body[..4].copy_from_slice(&len.to_le_bytes());
        } else if nulls > 0 {
            bail!("{} has {nulls} nulls, and is never null", name());
        }
        self.nulls += nulls as u64;
        let (encoding, bounds) = match values {
            Values::Id(v) => {
                delta_binary_packed(body, v);
                let bounds = v.iter().fold(Bounds::None, |b, &x| match b {
                    Bounds::Id(lo, hi) => Bounds::Id(lo.min(x), hi.max(x)),
                    _ => Bounds::Id(x, x),
                });
                (Encoding::DELTA_BINARY_PACKED, bounds)
            }
            Values::Count(v, valid) => {
                plain_compact(body, v, |i| valid[i], u32::to_le_bytes);
                let bounds = (nulls < rows).then(|| {
                    let kept = v.iter().zip(valid).filter(|&(_, &ok)| ok).map(|(&x, _)| x);
                    kept.fold((u32::MAX, 0), |(lo, hi), x| (lo.min(x), hi.max(x)))
                });
                (
                    Encoding::PLAIN,
                    bounds.map_or(Bounds::None, |(lo, hi)| Bounds::Count(lo, hi)),
                )
            }
            Values::Metric(_) => {
                body.extend_from_slice(plain);
                let (lo, hi) = metric_bounds;
                let bounds = if nulls < rows {
                    Bounds::Metric(lo, hi)
                } else {
                    Bounds::None
                };
                (Encoding::PLAIN, bounds)
            }
            Values::Flag(v) => {
                let flags = v.iter().filter(|&&x| x != NULL_FLAG).map(|&x| x == 1);
                plain_bools(body, flags.clone());
                let bounds = flags.fold(Bounds::None, |b, x| match b {
                    Bounds::Flag(lo, hi) => Bounds::Flag(lo && x, hi || x),
                    _ => Bounds::Flag(x, x),
                });
                (Encoding::PLAIN, bounds)
            }
            Values::Label(v) => {
                let Some(d) = &self.dictionary else {
                    bail!("label column {} has no dictionary", name());
                };
                let width = d.key_width();
                for &k in v.iter().filter(|&&k| k != NULL_KEY) {
                    let Some(seen) = self.keys_seen.get_mut(usize::from(k)) else {
                        bail!(
                            "key {k} of {} is beyond its {} values",
                            name(),
                            d.values.len()
                        );
                    };
                    *seen = true;
                }
                body.push(width);
                if nulls > 0 {
                    let keys: Vec<u16> = v.iter().copied().filter(|&k| k != NULL_KEY).collect();
                    rle_hybrid(body, width, keys.len(), |i| u32::from(keys[i]));
                } else {
                    rle_hybrid(body, width, rows, |i| u32::from(v[i]));
                }
                (Encoding::RLE_DICTIONARY, Bounds::None)
            }
            // No values: a label page still says its keys' width.
            Values::Null(_) => match &self.dictionary {
                Some(d) => {
                    body.push(d.key_width());
                    (Encoding::RLE_DICTIONARY, Bounds::None)
                }
                None => (Encoding::PLAIN, Bounds::None),
            },
        };
        self.bounds = match (self.bounds, bounds) {
            (Bounds::None, b) | (b, Bounds::None) => b,
            (Bounds::Id(a, b), Bounds::Id(c, d)) => Bounds::Id(a.min(c), b.max(d)),
            (Bounds::Count(a, b), Bounds::Count(c, d)) => Bounds::Count(a.min(c), b.max(d)),
            (Bounds::Metric(a, b), Bounds::Metric(c, d)) => Bounds::Metric(a.min(c), b.max(d)),
            (Bounds::Flag(a, b), Bounds::Flag(c, d)) => Bounds::Flag(a && c, b || d),
            (a, b) => bail!("{}: bounds {a:?} and {b:?} of two types", name()),
        };
        Ok(encoding)
    }

    /// Closes the chunk: its bytes and what the row group needs to splice them in. The column
    /// is then empty, ready for the next row group.
    pub fn take(&mut self) -> Result<(Bytes, ColumnCloseResult)> {
        let Some(data_offset) = self.data_offset else {
            bail!("column {} has no rows", self.descr.name());
        };
        let nulls = Some(self.nulls);
        let statistics = match (self.bounds, &self.dictionary) {
            (_, Some(d)) => {
                let seen = || {
                    d.values
                        .iter()
                        .zip(&self.keys_seen)
                        .filter(|&(_, &s)| s)
                        .map(|(v, _)| v.as_bytes())
                };
                let text = |v: Option<&[u8]>| v.map(|v| ByteArray::from(v.to_vec()));
                Statistics::byte_array(text(seen().min()), text(seen().max()), None, nulls, false)
            }
            // Unsigned columns keep their bits in the signed physical type; readers compare
            // them unsigned, as the logical type says.
            (Bounds::Id(lo, hi), _) => {
                Statistics::int64(Some(lo as i64), Some(hi as i64), None, nulls, false)
            }
            (Bounds::Count(lo, hi), _) => {
                Statistics::int32(Some(lo as i32), Some(hi as i32), None, nulls, false)
            }
            // The spec: a zero minimum is written -0.0 and a zero maximum +0.0, so that
            // readers that do not order the zeros do not skip a row group holding either.
            (Bounds::Metric(lo, hi), _) => Statistics::double(
                Some(if lo == 0.0 { -0.0 } else { lo }),
                Some(if hi == 0.0 { 0.0 } else { hi }),
                None,
                nulls,
                false,
            ),
            (Bounds::Flag(lo, hi), _) => {
                Statistics::boolean(Some(lo), Some(hi), None, nulls, false)
            }
            (Bounds::None, None) => match self.descr.physical_type() {
                PhysicalType::INT64 => Statistics::int64(None, None, None, nulls, false),
                PhysicalType::INT32 => Statistics::int32(None, None, None, nulls, false),
                PhysicalType::BOOLEAN => Statistics::boolean(None, None, None, nulls, false),
                _ => Statistics::double(None, None, None, nulls, false),
            },
        };
        let value_encoding = match self.descr.physical_type() {
            _ if self.dictionary.is_some() => Encoding::RLE_DICTIONARY,
            PhysicalType::INT64 => Encoding::DELTA_BINARY_PACKED,
            _ => Encoding::PLAIN,
        };
        let mut encodings = vec![value_encoding];
        let mut page_stats = vec![PageEncodingStats {
            page_type: PageType::DATA_PAGE,
            encoding: value_encoding,
            count: self.data_pages,
        }];
        if self.descr.max_def_level() > 0 {
            encodings.push(Encoding::RLE);
        }
        if self.dictionary.is_some() {
            encodings.push(Encoding::PLAIN);
            page_stats.insert(
                0,
                PageEncodingStats {
                    page_type: PageType::DICTIONARY_PAGE,
                    encoding: Encoding::PLAIN,
                    count: 1,
                },
            );
        }
        let metadata = ColumnChunkMetaData::builder(self.descr.clone())
            .set_compression(Compression::ZSTD(ZstdLevel::try_new(ZSTD_LEVEL)?))
            .set_encodings(encodings)
            .set_page_encoding_stats(page_stats)
            .set_num_values(self.rows)
            .set_total_compressed_size(self.compressed)
            .set_total_uncompressed_size(self.uncompressed)
            .set_data_page_offset(data_offset)
            .set_dictionary_page_offset(self.dictionary_offset)
            .set_statistics(statistics)
            .build()?;
        let out = std::mem::replace(&mut self.out, TrackedWrite::new(Vec::new()));
        let bytes = Bytes::from(out.into_inner()?);
        let close = ColumnCloseResult {
            bytes_written: bytes.len() as u64,
            rows_written: self.rows as u64,
            metadata,
            bloom_filter: None,
            column_index: None,
            offset_index: None,
        };
        self.dictionary_offset = None;
        self.data_offset = None;
        self.uncompressed = 0;
        self.compressed = 0;
        self.rows = 0;
        self.nulls = 0;
        self.data_pages = 0;
        self.bounds = Bounds::None;
        self.keys_seen.fill(false);
        Ok((bytes, close))
    }
}

/// Appends the values `v[i]` for which `keep(i)` in PLAIN encoding (little-endian, `N` bytes
/// each). Branch-free: every value is written and the end advances only past kept ones (nulls
/// come and go with feasibility, which a branch would mispredict).
fn plain_compact<T: Copy, const N: usize>(
    body: &mut Vec<u8>,
    v: &[T],
    keep: impl Fn(usize) -> bool,
    bytes: fn(T) -> [u8; N],
) {
    let start = body.len();
    body.resize(start + v.len() * N, 0);
    let dst = &mut body[start..];
    let mut end = 0;
    for (i, &x) in v.iter().enumerate() {
        dst[end..end + N].copy_from_slice(&bytes(x));
        end += N * usize::from(keep(i));
    }
    body.truncate(start + end);
}

/// Runs `f` with this thread's zstd context and page buffers.
fn with_scratch<T>(f: impl FnOnce(&mut Scratch) -> Result<T>) -> Result<T> {
    SCRATCH.with_borrow_mut(|scratch| {
        let s = match scratch {
            Some(s) => s,
            None => scratch.insert(Scratch {
                zstd: zstd::bulk::Compressor::new(ZSTD_LEVEL)?,
                body: Vec::new(),
                bits: Vec::new(),
                plain: Vec::new(),
            }),
        };
        f(s)
    })
}
