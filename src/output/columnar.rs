//! One chunk of the output table in column-major form, filled block by block from evaluated rows
//! and handed to the Parquet encoder (`column_chunk`) as typed slices, without copying.
//!
//! Reading one field of every row of a chunk for each of its columns (103 for inference) strides
//! through the whole chunk once a column (every row is hundreds of bytes); at 10^7 rows that
//! memory traffic cost more than the model. Here each rayon task writes the rows of its block
//! into a block of its own while the row is in cache, copies that block into the chunk column by
//! column ([`Block::copy_from`]), and the encoder reads contiguous typed buffers. Nulls are stored as
//! values no column can hold ([`NULL_KEY`] for dictionary keys, NaN for metrics, which are null
//! unless finite, [`NULL_FLAG`] for flags) or, for counts, whose every `u32` is a value, in a
//! validity buffer beside them. The buffers are reused from chunk to chunk.
//!
//! A column whose [`Need`] the sweep lacks has no buffer: it is null in every row, so its
//! accessor is only called to check that (a value there is racksweep's bug, which
//! [`Block::stray`] reports), and the encoder writes its pages from the row count alone.

use rayon::prelude::*;

use crate::columns::{Kind, LabelValues, Labels, Need, Record};

/// A null dictionary key.
pub const NULL_KEY: u16 = u16::MAX;
/// A null flag (flags are 0 and 1).
pub const NULL_FLAG: u8 = 2;
/// Of the rows a block writes, those at multiples of this are checked to be null in every
/// column without a buffer.
const NULL_CHECK_EVERY: usize = 16;

/// Storage of one column, indexed like the row type's columns.
#[derive(Debug)]
enum Buf {
    Id(Vec<u64>),
    Label(Vec<u16>),
    /// Values, and whether each is one (false: null).
    Count(Vec<u32>, Vec<bool>),
    Metric(Vec<f64>),
    Flag(Vec<u8>),
    /// Null in every row (the sweep lacks the column's [`Need`]).
    Null,
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
    /// The columns without a buffer, by name, whose every row must be null.
    nulls: Vec<(&'static str, Kind<R>)>,
    /// The first of them found holding a value.
    stray: Option<&'static str>,
}

impl<R> Default for Block<'_, R> {
    fn default() -> Self {
        Block {
            ids: Vec::new(),
            labels: Vec::new(),
            counts: Vec::new(),
            metrics: Vec::new(),
            flags: Vec::new(),
            nulls: Vec::new(),
            stray: None,
        }
    }
}

impl<R: Record> Default for Columns<R> {
    fn default() -> Self {
        Columns::new()
    }
}

impl<R: Record> Columns<R> {
    /// Every column, each with its buffer.
    pub fn new() -> Columns<R> {
        Columns::holding(|_| true)
    }

    /// Buffers for the columns whose need `holds`; the others are null in every row.
    pub fn holding(holds: impl Fn(Need) -> bool) -> Columns<R> {
        let bufs = R::columns()
            .iter()
            .map(|c| match c.kind {
                _ if !holds(c.need) => Buf::Null,
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

    /// The table of `rows`, in order, every column with its buffer.
    pub fn from_rows(rows: &[R], labels: &LabelValues) -> Columns<R> {
        Columns::new().with_rows(rows, labels).0
    }

    /// This table set to `rows`, in order, and the first column without a buffer that one of
    /// them had a value in ([`Block::stray`]).
    pub fn with_rows(
        mut self,
        rows: &[R],
        labels: &LabelValues,
    ) -> (Columns<R>, Option<&'static str>) {
        self.reserve(rows.len());
        let mut stray = None;
        if let Some(mut block) = self.blocks(rows.len().max(1)).into_iter().next() {
            for (i, row) in rows.iter().enumerate() {
                block.set(i, row, labels);
            }
            stray = block.stray();
        }
        self.len = rows.len();
        (self, stray)
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
                Buf::Null => {}
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
                (Buf::Null, kind) => {
                    for block in &mut blocks {
                        block.nulls.push((column.name, kind));
                    }
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
            Buf::Null => {}
        });
        self.len = kept.iter().sum();
    }

    /// Rows every buffer can hold.
    fn capacity(&self) -> usize {
        self.bufs
            .iter()
            .filter_map(|b| match b {
                Buf::Id(v) => Some(v.len()),
                Buf::Label(v) => Some(v.len()),
                Buf::Count(v, valid) => Some(v.len().min(valid.len())),
                Buf::Metric(v) => Some(v.len()),
                Buf::Flag(v) => Some(v.len()),
                Buf::Null => None,
            })
            .min()
            .unwrap_or(0)
    }

    /// Hands every column's first `len` values to `encode`, each column on its own rayon task
    /// with its own `state` (one per column, in order).
    pub fn par_columns<S: Send, T: Send>(
        &self,
        states: Vec<S>,
        encode: impl Fn(S, Values<'_>) -> T + Sync,
    ) -> Vec<T> {
        let len = self.len;
        self.bufs
            .par_iter()
            .zip(states)
            .map(|(buf, state)| encode(state, buf.values(len)))
            .collect()
    }
}

/// The first rows of one column, nulls as the sentinels above (counts: beside their validity).
#[derive(Debug, Clone, Copy)]
pub enum Values<'a> {
    Id(&'a [u64]),
    Label(&'a [u16]),
    Count(&'a [u32], &'a [bool]),
    Metric(&'a [f64]),
    Flag(&'a [u8]),
    /// This many rows, every one null.
    Null(usize),
}

impl Values<'_> {
    /// Rows.
    pub fn len(&self) -> usize {
        match self {
            Values::Id(v) => v.len(),
            Values::Label(v) => v.len(),
            Values::Count(v, _) => v.len(),
            Values::Metric(v) => v.len(),
            Values::Flag(v) => v.len(),
            Values::Null(rows) => *rows,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Buf {
    fn values(&self, len: usize) -> Values<'_> {
        match self {
            Buf::Id(v) => Values::Id(&v[..len]),
            Buf::Label(v) => Values::Label(&v[..len]),
            Buf::Count(v, valid) => Values::Count(&v[..len], &valid[..len]),
            Buf::Metric(v) => Values::Metric(&v[..len]),
            Buf::Flag(v) => Values::Flag(&v[..len]),
            Buf::Null => Values::Null(len),
        }
    }
}

impl<R: Record> Block<'_, R> {
    /// Copies the first `n` rows of every column of `from` (a block of the same row type) to
    /// the start of this block's: one burst of sequential writes a column.
    pub fn copy_from(&mut self, from: &Block<'_, R>, n: usize) {
        fn copy<T: Copy, F>(to: &mut [(&mut [T], F)], from: &[(&mut [T], F)], n: usize) {
            for ((to, _), (from, _)) in to.iter_mut().zip(from) {
                to[..n].copy_from_slice(&from[..n]);
            }
        }
        copy(&mut self.ids, &from.ids, n);
        copy(&mut self.labels, &from.labels, n);
        copy(&mut self.metrics, &from.metrics, n);
        copy(&mut self.flags, &from.flags, n);
        for ((to, to_valid, _), (from, from_valid, _)) in self.counts.iter_mut().zip(&from.counts) {
            to[..n].copy_from_slice(&from[..n]);
            to_valid[..n].copy_from_slice(&from_valid[..n]);
        }
    }

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
        // One row in NULL_CHECK_EVERY is checked (every row cost 4 % of bench-10m's run;
        // tests check every row of every example sweep, `space::tests`).
        if at.is_multiple_of(NULL_CHECK_EVERY) {
            for &(name, kind) in &self.nulls {
                if kind.has_value(row, labels) {
                    self.stray.get_or_insert(name);
                }
            }
        }
    }

    /// The first column without a buffer that a row written to this block had a value in.
    pub fn stray(&self) -> Option<&'static str> {
        self.stray
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::columns::{COLUMNS, Row};

    /// One value per label column.
    fn labels() -> LabelValues {
        LabelValues::for_tests(&["h"], vec![0])
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
        let labels = labels();
        let columns = Columns::<Row>::from_rows(&[row, row], &labels);
        let counts = columns.par_columns(vec![(); COLUMNS.len()], |(), values| match values {
            Values::Count(v, valid) => v
                .iter()
                .zip(valid)
                .map(|(&v, &ok)| ok.then_some(v))
                .collect(),
            _ => Vec::new(),
        });
        let count = |name: &str| &counts[COLUMNS.iter().position(|c| c.name == name).unwrap()];
        assert_eq!(count("batch"), &[Some(u32::MAX), Some(u32::MAX)]);
        assert_eq!(count("tp"), &[Some(8), Some(8)]);
        assert_eq!(count("racks"), &[None, None]);
    }

    /// Without a demand the sizing columns have no buffer: their values are `Null` of the
    /// table's length, and a row holding one of them is reported, by the first such column.
    #[test]
    fn columns_the_sweep_cannot_fill_are_null_and_checked() {
        let labels = labels();
        let no_demand = |need: Need| need != Need::Demand;
        let row = Row {
            workload: crate::perf::WorkloadValues::lengths(1000.0, 100.0),
            ..Row::default()
        };
        let (columns, stray) = Columns::<Row>::holding(no_demand).with_rows(&[row; 3], &labels);
        assert_eq!(stray, None);
        let nulls = columns.par_columns(vec![(); COLUMNS.len()], |(), values| match values {
            Values::Null(rows) => Some(rows),
            _ => None,
        });
        for (c, nulls) in COLUMNS.iter().zip(nulls) {
            let want = (c.need == Need::Demand).then_some(3);
            assert_eq!(nulls, want, "{}", c.name);
        }
        let mut sized = row;
        sized.estimate.utilization = 0.5;
        let (_, stray) = Columns::<Row>::holding(no_demand).with_rows(&[sized, row], &labels);
        // utilization, and the headroom and risk band computed from it.
        assert_eq!(stray, Some("utilization"));
        assert_eq!(
            Columns::<Row>::new().with_rows(&[sized], &labels).1,
            None,
            "every column has its buffer"
        );
    }

    /// Gathering blocks keeps each block's first rows, in order, and the buffers whole.
    #[test]
    fn gather_closes_the_gaps_between_blocks() {
        let mut columns = Columns::<Row>::new();
        columns.reserve(8);
        {
            let mut blocks = columns.blocks(4);
            let labels = labels();
            for (b, block) in blocks.iter_mut().enumerate() {
                for at in 0..4 {
                    let row = Row {
                        config_id: (b * 4 + at) as u64,
                        ..Row::default()
                    };
                    block.set(at, &row, &labels);
                }
            }
        }
        columns.gather(4, &[1, 3]);
        assert_eq!(columns.len(), 4);
        let id = COLUMNS.iter().position(|c| c.name == "config_id").unwrap();
        let ids = columns.par_columns(vec![(); COLUMNS.len()], |(), values| match values {
            Values::Id(v) => v.to_vec(),
            _ => Vec::new(),
        });
        assert_eq!(ids[id], [0, 4, 5, 6]);
        assert_eq!(columns.capacity(), 8);
    }
}
