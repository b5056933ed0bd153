//! Evaluates a contiguous slice of the grid in index order, in parallel, chunk by chunk, and
//! streams the rows to a Parquet sink while keeping counts and the running Pareto frontier.
//! Memory is bounded by two chunks of rows whatever the grid size. Evaluating chunk k+1 overlaps
//! with encoding chunk k (`rayon::join`), so both halves of the pipeline keep every core busy.

use std::ops::Range;

use anyhow::Result;
use indicatif::ProgressBar;
use rayon::prelude::*;

use crate::columns::Row;
use crate::grid::Grid;
use crate::output::parquet::ParquetSink;
use crate::pareto::Frontier;
use crate::perf::{self, Context, Reason};

/// Rows per chunk and per Parquet row group (about 128k, as the output format asks).
pub const CHUNK_ROWS: u64 = 131_072;

/// Rows one rayon task evaluates sequentially (amortizes the mixed-radix decode).
const BLOCK_ROWS: usize = 2048;

/// What a slice of the grid produced.
#[derive(Debug, Clone)]
pub struct Tally {
    pub evaluated: u64,
    pub written: u64,
    pub feasible: u64,
    /// Configurations per infeasible reason, indexed like [`Reason::ALL`].
    pub infeasible: [u64; Reason::ALL.len()],
    pub frontier: Frontier,
}

impl Tally {
    pub fn new(frontier: Frontier) -> Tally {
        Tally {
            evaluated: 0,
            written: 0,
            feasible: 0,
            infeasible: [0; Reason::ALL.len()],
            frontier,
        }
    }

    fn add(&mut self, rows: &[Row]) {
        self.evaluated += rows.len() as u64;
        for r in rows {
            match r.estimate.reason {
                None => self.feasible += 1,
                Some(reason) => self.infeasible[reason as usize] += 1,
            }
        }
        self.frontier.extend(rows);
    }
}

/// Evaluates grid indices `range` into `out` (resized to fit), in parallel blocks.
fn evaluate_into(ctx: &Context, grid: &Grid, range: Range<u64>, out: &mut Vec<Row>) {
    let n = (range.end - range.start) as usize;
    // Sized once per buffer; every slot is overwritten below.
    out.resize(n, Row::default());
    out.par_chunks_mut(BLOCK_ROWS)
        .enumerate()
        .for_each(|(b, block)| {
            let start = range.start + (b * BLOCK_ROWS) as u64;
            let points = grid.range(start, start + block.len() as u64);
            for (slot, (config_id, point)) in block.iter_mut().zip(points) {
                *slot = Row {
                    config_id,
                    point,
                    estimate: perf::evaluate(ctx, &point),
                };
            }
        });
}

/// Evaluates `range` of the grid and writes its rows (only feasible ones with `feasible_only`)
/// to `sink`, one row group per chunk, in index order.
pub fn run_range(
    ctx: &Context,
    grid: &Grid,
    range: Range<u64>,
    feasible_only: bool,
    frontier: Frontier,
    sink: &mut ParquetSink,
    progress: &ProgressBar,
) -> Result<Tally> {
    let mut tally = Tally::new(frontier);
    let mut current: Vec<Row> = Vec::new();
    let mut next: Vec<Row> = Vec::new();
    let mut kept: Vec<Row> = Vec::new();
    let chunk = |start: u64| start..(start + CHUNK_ROWS).min(range.end);

    if range.is_empty() {
        return Ok(tally);
    }
    evaluate_into(ctx, grid, chunk(range.start), &mut current);
    let mut start = range.start + current.len() as u64;
    loop {
        let more = start < range.end;
        let (_, encoded) = rayon::join(
            || {
                if more {
                    evaluate_into(ctx, grid, chunk(start), &mut next);
                }
            },
            || {
                tally.add(&current);
                let rows: &[Row] = if feasible_only {
                    kept.clear();
                    kept.extend(current.iter().filter(|r| r.estimate.feasible()));
                    &kept
                } else {
                    &current
                };
                tally.written += rows.len() as u64;
                if rows.is_empty() {
                    Ok(None)
                } else {
                    sink.encode(rows).map(Some)
                }
            },
        );
        if let Some(chunks) = encoded? {
            sink.append(chunks)?;
        }
        progress.inc(current.len() as u64);
        if !more {
            break;
        }
        std::mem::swap(&mut current, &mut next);
        start += current.len() as u64;
    }
    Ok(tally)
}
