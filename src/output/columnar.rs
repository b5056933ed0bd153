//! One chunk of the output table in column-major form, filled block by block from evaluated rows
//! and handed to the Parquet writer without copying.
//!
//! Reading one field of every row of a chunk for each of 59 columns strides through the whole
//! chunk 59 times (every row is hundreds of bytes); at 10^7 rows that memory traffic cost more
//! than the model. Here each rayon task writes the rows of its block into every column while the
//! block is still in cache, and the encoder reads contiguous typed buffers. Nulls become Arrow
//! validity bitmaps at encoding time; until then they are stored as values no column can hold
//! (NaN for metrics, which are null unless finite; `u16::MAX` for dictionary keys; 2 for flags)
//! or, for counts, whose every `u32` is a value, in a validity buffer beside them.
//! The buffers are reused from chunk to chunk: the Arrow arrays borrow them for the encoding and
//! give them back.

use std::sync::Arc;

use arrow_array::types::UInt16Type;
use arrow_array::{
    ArrayRef, BooleanArray, DictionaryArray, Float64Array, UInt16Array, UInt32Array, UInt64Array,
};
use arrow_buffer::{ArrowNativeType, BooleanBuffer, Buffer, NullBuffer, ScalarBuffer};
use rayon::prelude::*;

use crate::columns::{Kind, LabelValues, Labels, Record};

const NULL_KEY: u16 = u16::MAX;
const NULL_FLAG: u8 = 2;

/// Storage of one column, indexed like the row type's columns.
#[derive(Debug)]
enum Buf {
    Id(Vec<u64>),
    Label(Vec<u16>),
    /// Values, and whether each is one (false: null).
    Count(Vec<u32>, Vec<bool>),
    Metric(Vec<f64>),
    Flag(Vec<u8>),
}

/// Column buffers for up to `capacity` rows; the first `len` rows are the table.
#[derive(Debug)]
pub struct Columns<R> {
    bufs: Vec<Buf>,
    len: usize,
    rows: std::marker::PhantomData<fn(&R)>,
}

/// Every column of one block of rows, written by one task: each column's slice with its
/// accessor, grouped by type so that writing a row is five tight loops.
#[expect(
    clippy::type_complexity,
    reason = "each field pairs a column's slice with its accessor; an alias per pair would hide which is which"
)]
pub struct Block<'a, R> {
    ids: Vec<(&'a mut [u64], fn(&R) -> u64)>,
    labels: Vec<(&'a mut [u16], Labels)>,
    counts: Vec<(&'a mut [u32], &'a mut [bool], fn(&R) -> Option<u32>)>,
    metrics: Vec<(&'a mut [f64], fn(&R) -> Option<f64>)>,
    flags: Vec<(&'a mut [u8], fn(&R) -> Option<bool>)>,
}

impl<R> Default for Block<'_, R> {
    fn default() -> Self {
        Block {
            ids: Vec::new(),
            labels: Vec::new(),
            counts: Vec::new(),
            metrics: Vec::new(),
            flags: Vec::new(),
        }
    }
}

impl<R: Record> Default for Columns<R> {
    fn default() -> Self {
        Columns::new()
    }
}

impl<R: Record> Columns<R> {
    pub fn new() -> Columns<R> {
        let bufs = R::columns()
            .iter()
            .map(|c| match c.kind {
                Kind::Id(_) => Buf::Id(Vec::new()),
                Kind::Label(_) => Buf::Label(Vec::new()),
                Kind::Count(_) => Buf::Count(Vec::new(), Vec::new()),
                Kind::Metric(_) => Buf::Metric(Vec::new()),
                Kind::Flag(_) => Buf::Flag(Vec::new()),
            })
            .collect();
        Columns {
            bufs,
            len: 0,
            rows: std::marker::PhantomData,
        }
    }

    /// The table of `rows`, in order.
    pub fn from_rows(rows: &[R], labels: &LabelValues) -> Columns<R> {
        let mut columns = Columns::new();
        columns.reserve(rows.len());
        if let Some(mut block) = columns.blocks(rows.len().max(1)).into_iter().next() {
            for (i, row) in rows.iter().enumerate() {
                block.set(i, row, labels);
            }
        }
        columns.len = rows.len();
        columns
    }

    /// Makes room for `rows` rows (buffers only grow) and empties the table.
    pub fn reserve(&mut self, rows: usize) {
        for buf in &mut self.bufs {
            match buf {
                Buf::Id(v) => grow(v, rows, 0),
                Buf::Label(v) => grow(v, rows, NULL_KEY),
                Buf::Count(v, valid) => {
                    grow(v, rows, 0);
                    grow(valid, rows, false);
                }
                Buf::Metric(v) => grow(v, rows, f64::NAN),
                Buf::Flag(v) => grow(v, rows, NULL_FLAG),
            }
        }
        self.len = 0;
    }

    /// Rows in the table.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Splits the buffers into consecutive blocks of `block_rows` rows, one writer each.
    pub fn blocks(&mut self, block_rows: usize) -> Vec<Block<'_, R>> {
        let capacity = self.capacity();
        let mut blocks: Vec<Block<R>> = (0..capacity.div_ceil(block_rows))
            .map(|_| Block::default())
            .collect();
        for (buf, column) in self.bufs.iter_mut().zip(R::columns()) {
            match (buf, column.kind) {
                (Buf::Id(v), Kind::Id(f)) => {
                    split(v, block_rows, &mut blocks, |b, s| b.ids.push((s, f)));
                }
                (Buf::Label(v), Kind::Label(l)) => {
                    split(v, block_rows, &mut blocks, |b, s| b.labels.push((s, l)));
                }
                (Buf::Count(v, valid), Kind::Count(f)) => {
                    for ((block, values), valid) in blocks
                        .iter_mut()
                        .zip(v.chunks_mut(block_rows))
                        .zip(valid.chunks_mut(block_rows))
                    {
                        block.counts.push((values, valid, f));
                    }
                }
                (Buf::Metric(v), Kind::Metric(f)) => {
                    split(v, block_rows, &mut blocks, |b, s| b.metrics.push((s, f)));
                }
                (Buf::Flag(v), Kind::Flag(f)) => {
                    split(v, block_rows, &mut blocks, |b, s| b.flags.push((s, f)));
                }
                _ => unreachable!("buffers are built from the columns"),
            }
        }
        blocks
    }

    /// Sets the table to the blocks' rows: block `b` (of `block_rows`) wrote `kept[b]` rows at
    /// its start. Moves them together, each column on its own task.
    pub fn gather(&mut self, block_rows: usize, kept: &[usize]) {
        self.bufs.par_iter_mut().for_each(|buf| match buf {
            Buf::Id(v) => close_gaps(v, block_rows, kept),
            Buf::Label(v) => close_gaps(v, block_rows, kept),
            Buf::Count(v, valid) => {
                close_gaps(v, block_rows, kept);
                close_gaps(valid, block_rows, kept);
            }
            Buf::Metric(v) => close_gaps(v, block_rows, kept),
            Buf::Flag(v) => close_gaps(v, block_rows, kept),
        });
        self.len = kept.iter().sum();
    }

    /// Rows every buffer can hold (they grow together, but a buffer the encoder kept is
    /// reallocated alone).
    fn capacity(&self) -> usize {
        self.bufs
            .iter()
            .map(|b| match b {
                Buf::Id(v) => v.len(),
                Buf::Label(v) => v.len(),
                Buf::Count(v, valid) => v.len().min(valid.len()),
                Buf::Metric(v) => v.len(),
                Buf::Flag(v) => v.len(),
            })
            .min()
            .unwrap_or(0)
    }

    /// Lends every column to `encode`, each on its own rayon task with its own `state` (one per
    /// column, in order), as an Arrow array of the table's rows; then takes the buffers back (a
    /// fresh one is allocated next time if the encoder kept an array).
    pub fn par_map<S: Send, T: Send>(
        &mut self,
        dictionaries: &[Option<ArrayRef>],
        states: Vec<S>,
        encode: impl Fn(usize, S, &ArrayRef) -> T + Sync,
    ) -> Vec<T> {
        let len = self.len;
        self.bufs
            .par_iter_mut()
            .zip(states)
            .enumerate()
            .map(|(i, (buf, state))| {
                with_array(buf, len, dictionaries[i].as_ref(), |a| encode(i, state, a))
            })
            .collect()
    }
}

impl<R: Record> Block<'_, R> {
    /// Writes `row` at position `at` of the block.
    pub fn set(&mut self, at: usize, row: &R, labels: &LabelValues) {
        for (s, f) in &mut self.ids {
            s[at] = f(row);
        }
        for (s, l) in &mut self.labels {
            s[at] = row.label_key(*l, labels).unwrap_or(NULL_KEY);
        }
        for (s, valid, f) in &mut self.counts {
            let v = f(row);
            s[at] = v.unwrap_or(0);
            valid[at] = v.is_some();
        }
        for (s, f) in &mut self.metrics {
            s[at] = f(row).unwrap_or(f64::NAN);
        }
        for (s, f) in &mut self.flags {
            s[at] = f(row).map_or(NULL_FLAG, u8::from);
        }
    }
}

fn grow<T: Copy>(v: &mut Vec<T>, rows: usize, fill: T) {
    if v.len() < rows {
        v.resize(rows, fill);
    }
}

/// Hands block `b` rows `b * block_rows ..` of `v` (every block gets every column: `v` holds at
/// least as many rows as there are blocks).
fn split<'a, T, R>(
    v: &'a mut [T],
    block_rows: usize,
    blocks: &mut [Block<'a, R>],
    push: impl Fn(&mut Block<'a, R>, &'a mut [T]),
) {
    for (block, part) in blocks.iter_mut().zip(v.chunks_mut(block_rows)) {
        push(block, part);
    }
}

fn close_gaps<T: Copy>(v: &mut [T], block_rows: usize, kept: &[usize]) {
    let mut to = 0;
    for (b, &n) in kept.iter().enumerate() {
        let from = b * block_rows;
        if from != to {
            v.copy_within(from..from + n, to);
        }
        to += n;
    }
}

fn with_array<T>(
    buf: &mut Buf,
    len: usize,
    dictionary: Option<&ArrayRef>,
    encode: impl FnOnce(&ArrayRef) -> T,
) -> T {
    match buf {
        Buf::Id(v) => lend(
            v,
            len,
            |values| Arc::new(UInt64Array::new(values, None)) as ArrayRef,
            encode,
        ),
        Buf::Count(v, valid) => {
            let nulls = validity(&valid[..len], |x| x);
            lend(
                v,
                len,
                |values| Arc::new(UInt32Array::new(values, nulls)) as ArrayRef,
                encode,
            )
        }
        Buf::Metric(v) => {
            let nulls = validity(&v[..len], |x| !x.is_nan());
            lend(
                v,
                len,
                |values| Arc::new(Float64Array::new(values, nulls)) as ArrayRef,
                encode,
            )
        }
        Buf::Label(v) => {
            let nulls = validity(&v[..len], |x| x != NULL_KEY);
            let dictionary = dictionary.expect("label columns have dictionaries");
            lend(
                v,
                len,
                |keys| {
                    let keys = UInt16Array::new(keys, nulls);
                    Arc::new(
                        DictionaryArray::<UInt16Type>::try_new(keys, dictionary.clone())
                            .expect("keys index their dictionary"),
                    ) as ArrayRef
                },
                encode,
            )
        }
        Buf::Flag(v) => {
            let values = &v[..len];
            let bits = BooleanBuffer::collect_bool(len, |i| values[i] == 1);
            let array: ArrayRef = Arc::new(BooleanArray::new(
                bits,
                validity(values, |x| x != NULL_FLAG),
            ));
            encode(&array)
        }
    }
}

/// Lends the first `len` values of `v` to an array built by `build` and passed to `encode`,
/// without copying, then takes the whole vector back. If something still holds the array, the
/// vector is left empty and reallocated by the next [`Columns::reserve`].
fn lend<V: ArrowNativeType, T>(
    v: &mut Vec<V>,
    len: usize,
    build: impl FnOnce(ScalarBuffer<V>) -> ArrayRef,
    encode: impl FnOnce(&ArrayRef) -> T,
) -> T {
    let whole = Buffer::from_vec(std::mem::take(v));
    let array = build(ScalarBuffer::new(whole.clone(), 0, len));
    let out = encode(&array);
    drop(array);
    *v = whole.into_vec::<V>().unwrap_or_default();
    out
}

/// Validity bitmap of `values`, `None` when every value is valid.
fn validity<T: Copy>(values: &[T], valid: impl Fn(T) -> bool) -> Option<NullBuffer> {
    let bits = BooleanBuffer::collect_bool(values.len(), |i| valid(values[i]));
    let nulls = NullBuffer::new(bits);
    (nulls.null_count() > 0).then_some(nulls)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::columns::{COLUMNS, Row};
    use arrow_array::Array;

    #[test]
    fn buffers_come_back_whole_after_encoding() {
        let mut columns = Columns::<Row>::new();
        columns.reserve(100);
        columns.len = 10;
        let dictionaries: Vec<Option<ArrayRef>> = COLUMNS
            .iter()
            .map(|c| match c.kind {
                Kind::Label(_) => {
                    Some(Arc::new(arrow_array::StringArray::from(vec!["x"])) as ArrayRef)
                }
                _ => None,
            })
            .collect();
        let states = vec![(); COLUMNS.len()];
        let lengths = columns.par_map(&dictionaries, states, |_, (), a| (a.len(), a.null_count()));
        // Every value but the ids is a null sentinel.
        for (c, n) in COLUMNS.iter().zip(lengths) {
            let nulls = if matches!(c.kind, Kind::Id(_)) { 0 } else { 10 };
            assert_eq!(n, (10, nulls), "{}", c.name);
        }
        // Every buffer came back whole: the smallest still holds all 100 rows.
        assert_eq!(columns.capacity(), 100);
    }

    /// A count is written as itself whatever its value: u32::MAX is a batch of 4,294,967,295
    /// sequences, not a null. Nulls are where the column says there is no value (racks of 0:
    /// not sized).
    #[test]
    fn every_u32_is_a_count_and_nulls_are_nulls() {
        let mut row = Row::default();
        row.point.batch = u32::MAX;
        row.point.tp = 8;
        row.estimate.racks = 0;
        let labels = LabelValues {
            hardware: vec!["h".into()],
            hardware_key: vec![0],
            prefill_hardware: vec!["h".into()],
            prefill_hardware_key: vec![None],
            rack: vec!["r".into()],
            rack_key: vec![0],
            models: vec!["m".into()],
            weight_dtype: vec!["bf16".into()],
            kv_dtype: vec!["bf16".into()],
            ownership: vec!["cloud".into()],
            ownership_key: vec![0],
            pricing_key: vec![Some(0)],
            provider: Vec::new(),
            provider_key: vec![None],
            engine_key: vec![Some(0)],
            engines: 1,
        };
        let mut columns = Columns::<Row>::from_rows(&[row, row], &labels);
        let dictionaries: Vec<Option<ArrayRef>> = COLUMNS
            .iter()
            .map(|c| match c.kind {
                Kind::Label(_) => {
                    Some(Arc::new(arrow_array::StringArray::from(vec!["x"])) as ArrayRef)
                }
                _ => None,
            })
            .collect();
        let states = vec![(); COLUMNS.len()];
        let arrays = columns.par_map(&dictionaries, states, |_, (), a| a.clone());
        let count = |name: &str| {
            let i = COLUMNS.iter().position(|c| c.name == name).unwrap();
            let a = arrays[i].as_any().downcast_ref::<UInt32Array>().unwrap();
            (0..a.len())
                .map(|r| a.is_valid(r).then(|| a.value(r)))
                .collect::<Vec<_>>()
        };
        assert_eq!(count("batch"), [Some(u32::MAX), Some(u32::MAX)]);
        assert_eq!(count("tp"), [Some(8), Some(8)]);
        assert_eq!(count("racks"), [None, None]);
    }
}
