//! Parquet's value encodings, as the format specification defines them
//! (<https://parquet.apache.org/docs/file-format/data-pages/encodings/>): the RLE / bit-packing
//! hybrid (definition levels and dictionary indices), DELTA_BINARY_PACKED (grid indices), and
//! PLAIN booleans (bit-packed). Pure functions appending to a byte buffer; the page and chunk
//! framing is `column_chunk`'s.

/// Appends `v` as an unsigned LEB128 varint (the spec's ULEB128).
pub fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Zigzag form of a signed integer (0, -1, 1, -2, ... as 0, 1, 2, 3, ...).
fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Bits needed to hold every value up to `max` (0 for 0).
pub fn bit_width(max: u64) -> u8 {
    (64 - max.leading_zeros()) as u8
}

/// Packs `values` of `width` bits each LSB first (the spec's bit-packing order), padded with
/// zero values to `padded_len`, which makes the output a whole number of bytes.
fn bit_pack(out: &mut Vec<u8>, width: u8, values: impl Iterator<Item = u64>, padded_len: usize) {
    let mut acc: u128 = 0;
    let mut bits = 0u32;
    let mut n = 0;
    for v in values.chain(std::iter::repeat(0)).take(padded_len) {
        acc |= u128::from(v) << bits;
        bits += u32::from(width);
        while bits >= 8 {
            out.push(acc as u8);
            acc >>= 8;
            bits -= 8;
        }
        n += 1;
    }
    debug_assert_eq!(n, padded_len);
    if bits > 0 {
        out.push(acc as u8);
    }
}

/// Runs at least this long are written as RLE runs, shorter ones bit-packed (8 values pack into
/// `width` bytes; an RLE run costs a header and one value).
const MIN_RUN: usize = 8;

/// Appends `n` values (value `i` is `at(i)`, each below 2^`width`, `width` ≤ 32) in the RLE /
/// bit-packing hybrid, without the length prefix that definition levels carry. Values are read
/// through `at` so that levels need not be materialized: runs of one value become RLE runs,
/// the rest bit-packed groups of 8 (only the last group is padded, as the spec allows).
pub fn rle_hybrid(out: &mut Vec<u8>, width: u8, n: usize, at: impl Fn(usize) -> u32) {
    debug_assert!(width <= 32);
    let value_bytes = usize::from(width).div_ceil(8);
    let literals = |out: &mut Vec<u8>, from: usize, to: usize| {
        let groups = (to - from).div_ceil(8);
        varint(out, ((groups as u64) << 1) | 1);
        if width <= 8 {
            // Eight values of at most 8 bits fill at most one u64: `width` bytes a group.
            let w = usize::from(width);
            for g in 0..groups {
                let first = from + 8 * g;
                let packed = (first..(first + 8).min(to))
                    .enumerate()
                    .fold(0u64, |acc, (j, i)| acc | (u64::from(at(i)) << (j * w)));
                out.extend_from_slice(&packed.to_le_bytes()[..w]);
            }
        } else {
            bit_pack(out, width, (from..to).map(|i| u64::from(at(i))), groups * 8);
        }
    };
    let mut literal_start = 0;
    let mut i = 0;
    while i < n {
        let v = at(i);
        let mut end = i + 1;
        while end < n && at(end) == v {
            end += 1;
        }
        if end - i >= MIN_RUN {
            // Literals before a run must fill whole groups of 8: the run lends them values.
            let lent = (8 - (i - literal_start) % 8) % 8;
            let run_start = i + lent;
            if run_start > literal_start {
                literals(out, literal_start, run_start);
            }
            varint(out, ((end - run_start) as u64) << 1);
            out.extend_from_slice(&v.to_le_bytes()[..value_bytes]);
            literal_start = end;
        }
        i = end;
    }
    if literal_start < n {
        literals(out, literal_start, n);
    }
}

/// One pass over a page of metrics `v` (NaN for null), which reads them from memory once: their
/// validity into `bits` (as [`bitmap`]), the values that are not NaN in PLAIN encoding into
/// `plain` (branch-free: every value is written and the end advances only past kept ones, as
/// nulls come and go with feasibility, which a branch would mispredict), and the least and
/// greatest of them (infinities when all are NaN; eight independent lanes, `x < lo` false for
/// NaN).
pub fn metric_page(v: &[f64], bits: &mut Vec<u8>, plain: &mut Vec<u8>) -> (f64, f64) {
    bits.clear();
    bits.reserve(v.len().div_ceil(8));
    plain.clear();
    plain.resize(v.len() * 8, 0);
    let mut end = 0;
    let mut lo = [f64::INFINITY; 8];
    let mut hi = [f64::NEG_INFINITY; 8];
    for c in v.chunks(8) {
        let mut byte = 0u8;
        for (j, &x) in c.iter().enumerate() {
            let valid = !x.is_nan();
            byte |= u8::from(valid) << j;
            plain[end..end + 8].copy_from_slice(&x.to_le_bytes());
            end += 8 * usize::from(valid);
            lo[j] = if x < lo[j] { x } else { lo[j] };
            hi[j] = if x > hi[j] { x } else { hi[j] };
        }
        bits.push(byte);
    }
    plain.truncate(end);
    (
        lo.iter().copied().fold(f64::INFINITY, f64::min),
        hi.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    )
}

/// Validity of `values` as a bitmap into `bits` (emptied first), eight to a byte, LSB first
/// (bits past the end zero).
pub fn bitmap<T: Copy>(bits: &mut Vec<u8>, values: &[T], valid: impl Fn(T) -> bool) {
    let byte = |c: &[T]| {
        c.iter()
            .enumerate()
            .fold(0u8, |b, (j, &x)| b | (u8::from(valid(x)) << j))
    };
    let chunks = values.chunks_exact(8);
    let rest = chunks.remainder();
    bits.clear();
    bits.reserve(values.len().div_ceil(8));
    bits.extend(chunks.map(|c| {
        let c: &[T; 8] = c.try_into().expect("chunks of 8");
        byte(c)
    }));
    if !rest.is_empty() {
        bits.push(byte(rest));
    }
}

/// Appends definition levels (bit width 1) of the `n` values whose validity is `bits`
/// ([`bitmap`]) in the RLE / bit-packing hybrid. A bit-packed group of eight levels is exactly
/// one bitmap byte, so literals are copied; runs of at least two all-valid or all-null bytes
/// become RLE runs.
pub fn levels(out: &mut Vec<u8>, n: usize, bits: &[u8]) {
    let full = n / 8;
    let literals = |out: &mut Vec<u8>, bytes: &[u8]| {
        if !bytes.is_empty() {
            varint(out, ((bytes.len() as u64) << 1) | 1);
            out.extend_from_slice(bytes);
        }
    };
    let (mut literal_start, mut i) = (0, 0);
    while i < full {
        let b = bits[i];
        let mut end = i + 1;
        if b == 0 || b == 0xFF {
            while end < full && bits[end] == b {
                end += 1;
            }
            if end - i >= 2 {
                literals(out, &bits[literal_start..i]);
                varint(out, (((end - i) * 8) as u64) << 1);
                out.push(b & 1);
                literal_start = end;
            }
        }
        i = end;
    }
    // The rest, the last byte padded: only the last group may be.
    literals(out, &bits[literal_start..n.div_ceil(8)]);
}

/// Appends booleans in PLAIN encoding: one bit each, LSB first, the last byte zero-padded.
pub fn plain_bools(out: &mut Vec<u8>, values: impl Iterator<Item = bool>) {
    let mut byte = 0u8;
    let mut bit = 0;
    for v in values {
        byte |= u8::from(v) << bit;
        bit += 1;
        if bit == 8 {
            out.push(byte);
            byte = 0;
            bit = 0;
        }
    }
    if bit > 0 {
        out.push(byte);
    }
}

/// DELTA_BINARY_PACKED's block: 128 values in 4 miniblocks of 32 (the sizes parquet-mr and
/// arrow write).
const DELTA_BLOCK: usize = 128;
const DELTA_MINIBLOCKS: usize = 4;
const DELTA_MINIBLOCK: usize = DELTA_BLOCK / DELTA_MINIBLOCKS;

/// Appends `values` (INT64, the bits of u64 grid indices) in DELTA_BINARY_PACKED: a header
/// (block size, miniblocks per block, count, first value), then per block of 128 deltas its
/// minimum delta and 4 miniblocks of 32, each bit-packed at its own width. Grid indices that
/// ascend by one pack into 0 bits a value.
pub fn delta_binary_packed(out: &mut Vec<u8>, values: &[u64]) {
    varint(out, DELTA_BLOCK as u64);
    varint(out, DELTA_MINIBLOCKS as u64);
    varint(out, values.len() as u64);
    varint(out, zigzag(values.first().copied().unwrap_or(0) as i64));
    let deltas: Vec<i64> = values
        .windows(2)
        .map(|w| w[1].wrapping_sub(w[0]) as i64)
        .collect();
    for block in deltas.chunks(DELTA_BLOCK) {
        let min = block.iter().copied().min().unwrap_or(0);
        varint(out, zigzag(min));
        let minis: Vec<&[i64]> = block.chunks(DELTA_MINIBLOCK).collect();
        let widths: Vec<u8> = (0..DELTA_MINIBLOCKS)
            .map(|m| {
                minis.get(m).map_or(0, |mini| {
                    let max = mini.iter().map(|&d| d.wrapping_sub(min) as u64).max();
                    bit_width(max.unwrap_or(0))
                })
            })
            .collect();
        out.extend_from_slice(&widths);
        // Miniblocks with no values store nothing; the last one with values is padded to 32.
        for (mini, &width) in minis.iter().zip(&widths) {
            let relative = mini.iter().map(|&d| d.wrapping_sub(min) as u64);
            bit_pack(out, width, relative, DELTA_MINIBLOCK);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The spec's own example: values 1..8 at width 3 bit-pack to 0x88 0xC6 0xFA.
    #[test]
    fn bit_packing_matches_the_spec_example() {
        let mut out = Vec::new();
        bit_pack(&mut out, 3, (0..8).map(|v| v as u64), 8);
        assert_eq!(out, [0b1000_1000, 0b1100_0110, 0b1111_1010]);
    }

    #[test]
    fn varints_and_zigzag() {
        let mut out = Vec::new();
        varint(&mut out, 300);
        assert_eq!(out, [0xAC, 0x02]);
        assert_eq!(
            [0, -1, 1, -2, 2].map(zigzag),
            [0, 1, 2, 3, 4],
            "zigzag order"
        );
        assert_eq!(zigzag(i64::MIN), u64::MAX);
        assert_eq!([0, 1, 2, 3, 255, 256].map(bit_width), [0, 1, 2, 2, 8, 9]);
    }

    /// Levels from a bitmap: 16 valid, a mixed byte, 24 null, then 3 valid in a padded byte.
    #[test]
    fn levels_copy_literal_bytes_and_run_whole_bytes() {
        let valid = |i: usize| i < 16 || (16..24).contains(&i) && i.is_multiple_of(2) || i >= 48;
        let mut bits = Vec::new();
        bitmap(&mut bits, &(0..51).collect::<Vec<_>>(), valid);
        assert_eq!(bits, [0xFF, 0xFF, 0x55, 0, 0, 0, 0b111]);
        let mut out = Vec::new();
        levels(&mut out, 51, &bits);
        // RLE 16 ones; literals [0x55]; RLE 24 zeros; the padded tail as one literal group.
        assert_eq!(out, [32, 1, 3, 0x55, 48, 0, 3, 0b111]);
    }

    /// Keys of width 3 in groups of 8 pack into 3 bytes, like the spec's example.
    #[test]
    fn narrow_literals_pack_like_the_spec() {
        let mut out = Vec::new();
        rle_hybrid(&mut out, 3, 8, |i| i as u32);
        assert_eq!(out, [3, 0b1000_1000, 0b1100_0110, 0b1111_1010]);
    }

    /// A run of 10 ones: one RLE run (header 10 << 1, then the value in one byte).
    #[test]
    fn a_long_run_is_one_rle_run() {
        let mut out = Vec::new();
        rle_hybrid(&mut out, 1, 10, |_| 1);
        assert_eq!(out, [20, 1]);
    }

    /// 3 literals then a run of 9: the run lends 5 values so the literals fill a group of 8,
    /// then 4 remain as a run.
    #[test]
    fn literals_before_a_run_fill_whole_groups() {
        let values = [0u32, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1];
        let mut out = Vec::new();
        rle_hybrid(&mut out, 1, values.len(), |i| values[i]);
        // Bit-packed: 1 group (header 1 << 1 | 1 = 3), bits LSB first 0,1,0,1,1,1,1,1 = 0xFA;
        // then an RLE run of 4 ones.
        assert_eq!(out, [3, 0b1111_1010, 8, 1]);
    }
}
